/* attnlab/molnet.h — graph-level models on molecules (N-to-1: a graph in, one number out) and their
 * minibatch training loop. The data (reader, batches, fingerprints) is molecule.h.
 *
 *   al_molnet_config cfg; al_molnet_config_default(&cfg, "gt", NULL);
 *   al_molnet m; al_molnet_init(&m, &cfg, &ms, seed, &err);
 *   al_mol_result r; al_molnet_train(&m, &ms, seed, on_epoch, ud, &r, &err);   // r.test_rmse
 *   al_molnet_free(&m);
 *
 * Every model maps the atoms of a packed batch (al_mol_batch) to one value per molecule:
 *   gat, gatv2  3 graph-attention layers over bonds + self (additive score; gatv2 applies the
 *               LeakyReLU before the score vector, Brody et al. 2022), residual, ELU
 *   gt          3 pre-LN transformer blocks (the image/sequence models' block) whose attention is
 *               masked by bonds + self, with the bond type (self, single, double, triple, aromatic)
 *               as a learned per-head score bias
 *   gt-full     the same blocks, every atom attending to every atom of its own molecule, with the
 *               shortest-path distance (0 … 7, ≥ 8, not connected) as a learned per-head score bias
 *   gcn         3 GCN layers, D^-1/2 (A+I) D^-1/2 per molecule, ReLU
 *   mlp         no graph: the summed atom features through an MLP
 *   fingerprint no learned graph layer: Morgan-style bits (radius 2, 2 048) through an MLP
 * then a readout (sum, mean or attention pooling with a learned query) and an MLP head d → d → 1
 * (regression: targets standardised with the training set's mean and std, predictions in the file's
 * units) or d → d → 2 (classification, chosen when the target column holds only 0 and 1: logits of
 * the two classes, cross-entropy).
 */
#ifndef ATTNLAB_MOLNET_H
#define ATTNLAB_MOLNET_H
#include <stdint.h>
#include "tensor.h"
#include "molecule.h"
#include "models.h"   /* al_block_params */

#define AL_MOLNET_MAXDEPTH 8
typedef enum { AL_MOL_READ_SUM, AL_MOL_READ_MEAN, AL_MOL_READ_ATTN } al_mol_readout;

struct al_molnet;
struct al_mol_batch;
/* The model table (src/models/molnet.c): properties read by the apps and the flag checks. */
typedef struct al_molnet_arch {
    const char *name, *summary;
    int attention;          /* 1: attention over atoms (--heads applies) */
    int full;               /* 1: needs the full-within-molecule pattern */
    int fp;                 /* 1: needs fingerprints */
    int layers;             /* 1: has graph layers (--depth applies) */
    float dropout;          /* default dropout */
    int (*init)(struct al_molnet *m);   /* register the parameters (0, or -1 out of memory) */
    al_tensor *(*forward)(al_ctx *c, struct al_molnet *m, const al_mol_batch *b);   /* → (S, dim) or (S, 1) */
} al_molnet_arch;
const al_molnet_arch *al_molnet_arch_find(const char *name);   /* NULL if unknown */
int                 al_molnet_arch_count(void);
const al_molnet_arch *al_molnet_arch_at(int i);
const char         *al_molnet_arch_names(void);             /* "gat|gatv2|gt|gt-full|gcn|mlp|fingerprint" */
al_status           al_mol_readout_parse(const char *s, al_mol_readout *out, al_error *err);
const char         *al_mol_readout_name(al_mol_readout r);

typedef struct al_molnet_config {
    char model[16];
    int dim, heads, depth;  /* 64, 4, 3 */
    int hidden;             /* head / MLP width (64; fingerprint 256) */
    al_mol_readout readout; /* sum (default, as the PyTorch peer) */
    float dropout;          /* on the head's hidden layer (and the MLPs' inputs); 0 except fingerprint 0.2 */
    float lr, weight_decay; /* AdamW 1e-3, 0.01 on every parameter (torch.optim.AdamW(model.parameters())) */
    int epochs, batch;      /* 150, 32 */
    int target;             /* which target column (0) */
} al_molnet_config;
/* The defaults of molecule model `name` (a name of al_molnet_arch_names()); an error if unknown. */
al_status al_molnet_config_default(al_molnet_config *cfg, const char *name, al_error *err);

typedef struct al_molnet {
    al_molnet_config cfg;
    const al_molnet_arch *kind;
    int nfeat;
    int nout;               /* 1: regression; 2: classification (the target column is 0/1) */
    float y_mean, y_std;    /* regression: target standardisation (training set); 0, 1 otherwise */
    al_params params;
    al_tensor *emb_w, *emb_b;                               /* atom features → dim */
    al_block_params blocks[AL_MOLNET_MAXDEPTH];             /* gt, gt-full */
    al_tensor *bias[AL_MOLNET_MAXDEPTH];                    /* (kinds, heads) score bias per layer */
    al_tensor *lw[AL_MOLNET_MAXDEPTH], *lb[AL_MOLNET_MAXDEPTH];   /* gat / gatv2 / gcn layers */
    al_tensor *lq[AL_MOLNET_MAXDEPTH], *lk[AL_MOLNET_MAXDEPTH];   /* gat: a_q, a_k; gatv2: a, W_r (lw: W_l) */
    al_tensor *pool_w;                                      /* attention readout: (heads, dim) */
    al_tensor *h1_w, *h1_b, *h2_w, *h2_b, *h3_w, *h3_b;     /* head MLP */
    int capture;            /* store the readout's attention weights (N, heads) in pool_weights */
    al_tensor *pool_weights;
} al_molnet;

/* Build the model for molecules ms (features, target statistics of its training split); parameters
 * from the AL_RNG_INIT stream of seed. Caller frees with al_molnet_free. */
al_status  al_molnet_init(al_molnet *m, const al_molnet_config *cfg, const al_molset *ms, uint64_t seed, al_error *err);
/* The same model for nfeat atom features and nout outputs (1 or 2) without a data set: y_mean 0,
 * y_std 1 (a checkpoint sets them; al_molnet_load). */
al_status  al_molnet_build(al_molnet *m, const al_molnet_config *cfg, int nfeat, int nout, uint64_t seed, al_error *err);
void       al_molnet_free(al_molnet *m);
/* Outputs (S, nout) for the batch: standardised predictions or the two classes' logits; dropout when
 * c->training, tape when c->grad_enabled. */
al_tensor *al_molnet_forward(al_ctx *c, al_molnet *m, const al_mol_batch *b);

/* Write m (trained on ms) to path as safetensors. __metadata__: task, dataset, model, target, seed,
 * best_epoch, test_acc or test_rmse, y_mean, y_std, dim, heads, depth, hidden, features, readout,
 * elements (ms's element vocabulary), run_id, in that order; seed, best_epoch, the test figure and
 * run_id are the run's, given as pairs kv_extra[0..2·n_extra) (any other pairs follow them). Written
 * atomically. */
al_status  al_molnet_save(const char *path, const al_molnet *m, const al_molset *ms, const char *const *kv_extra,
                          int n_extra, al_error *err);
/* Rebuild the model that `attnlab train --task molecule --save` wrote to path, for the molecules ms:
 * its element vocabulary (when the checkpoint records one) renumbers ms's atoms (al_molset_use_elements),
 * cfg.target is the index of its target among ms's (-1 if ms lacks it), y_mean and y_std are the
 * checkpoint's. *meta (if non-NULL) receives the metadata text (caller frees). Free m with
 * al_molnet_free. */
al_status  al_molnet_load(const char *path, al_molset *ms, al_molnet *m, char **meta, al_error *err);

/* ---- names of 0.5, kept as deprecated aliases through 0.6.x, removed with soname libattnlab.so.1 (CHANGELOG.md) ---- */
typedef al_molnet_arch al_mol_model AL_DEPRECATED("al_molnet_arch");
typedef al_molnet_config al_molnet_cfg AL_DEPRECATED("al_molnet_config");
AL_DEPRECATED("al_molnet_arch_find") const al_molnet_arch *al_mol_model_find(const char *name);
AL_DEPRECATED("al_molnet_arch_count") int al_mol_model_count(void);
AL_DEPRECATED("al_molnet_arch_at") const al_molnet_arch *al_mol_model_at(int i);
AL_DEPRECATED("al_molnet_arch_names") const char *al_mol_model_names(void);
AL_DEPRECATED("al_molnet_config_default") void al_molnet_defaults(al_molnet_config *cfg, const al_molnet_arch *kind);

#endif
