/* attnlab/gnn.h — node classifiers on a graph (gat, gat-full, gatv2, gt, gt-full, gcn, mlp) and their full-batch
 * training loop. The data (al_graph: reader, splits, adjacency) is graph.h.
 *
 *   al_graph g; al_error err = {{0}};
 *   char dir[4096];
 *   if (al_graph_resolve("cora", argv0, dir, sizeof dir, &err) || al_graph_load(&g, dir, 1, &err)) ...;
 *   al_gnn_config cfg; al_gnn_config_default(&cfg, "gat", NULL);
 *   al_gnn m; al_gnn_init(&m, &cfg, &g, seed, &err);
 *   al_gnn_result r; al_gnn_train(&m, &g, seed, on_epoch, ud, &r, &err);   // r.test_acc
 *   al_gnn_free(&m); al_graph_free(&g);
 *
 * The layers around the attention are fused ops of ops.h (al_gnn_project, al_gnn_bias_act_dropout,
 * al_take_rows); the model code is src/models/gnn.c, the training loop src/train/graph.c.
 */
#ifndef ATTNLAB_GNN_H
#define ATTNLAB_GNN_H
#include <stdint.h>
#include "tensor.h"
#include "graph.h"
#include "models.h"

/* ---------------- models ---------------- */
/* Appended in this order: a kind's number never changes (checkpoints name the model, not the number). */
typedef enum { AL_GNN_GAT, AL_GNN_GAT_FULL, AL_GNN_GCN, AL_GNN_MLP, AL_GNN_GATV2, AL_GNN_GT, AL_GNN_GT_FULL } al_gnn_kind;

#define AL_GNN_MAXLAYERS 8      /* gt, gt-full: transformer blocks at most */
#define AL_GNN_GT_LAYERS 2      /* gt, gt-full: transformer blocks by default */
#define AL_GNN_GT_FULL_EPOCHS 200   /* gt-full's default epoch limit */
#define AL_GNN_GT_FULL_ATTN_DROPOUT 0.6f
#define AL_GNN_PE_DIM 8         /* gt-full: Laplacian eigenvectors */

/* Fraction of stored feature entries (nnz / (n · nfeat)) from which the first layer multiplies a
 * dense feature matrix (gemm) instead of the CSR (spmm). */
#define AL_GNN_DENSE_MIN 0.25

typedef struct al_gnn_config {
    al_gnn_kind kind;
    int hidden;             /* GAT, GATv2, GT: features per head (GT's width is heads × hidden);
                             * GCN / MLP: hidden width */
    int heads;              /* GAT, GATv2: heads of layer 1 (concatenated), layer 2 has one head; GT: heads */
    float dropout;          /* on the input of both layers */
    float attn_dropout;     /* GAT: on the normalised attention coefficients */
    float slope;            /* GAT, GATv2: LeakyReLU slope of the score */
    int layers;             /* GT: transformer blocks (0 for the other models) */
    int pe_dim;             /* gt-full: Laplacian eigenvectors k (0 for the other models) */
    float lr, weight_decay; /* Adam with L2 weight decay */
    int decay_all;          /* 1: decay every parameter; 0: only the first layer's weight (Kipf) */
    int epochs;             /* maximum number of epochs */
    int patience;           /* stop when neither val loss nor val acc improved for this many epochs; 0 = never */
} al_gnn_config;

/* Defaults (the papers' Cora settings):
 *   gat, gat-full  8 heads × 8, dropout 0.6, attention dropout 0.6, slope 0.2, lr 0.005,
 *                  wd 5e-4 on every parameter, 1000 epochs, patience 100
 *   gcn            16 hidden, dropout 0.5, lr 0.01, wd 5e-4 on the first layer's weight, 200 epochs
 *   mlp            64 hidden, dropout 0.5, lr 0.01, wd 5e-4 on the first layer's weight, 200 epochs
 *   gatv2          gat's (the same regularisation and schedule)
 *   gt, gt-full    AL_GNN_GT_LAYERS blocks of 8 heads × 8 (width 64, feed-forward 128), dropout 0.6 on the
 *                  input and before the classifier, attention dropout 0.6 (gt) / AL_GNN_GT_FULL_ATTN_DROPOUT
 *                  (gt-full), lr 0.005, wd 5e-4 on every parameter, patience 100, epochs 1000 (gt) /
 *                  AL_GNN_GT_FULL_EPOCHS (gt-full, whose epoch costs N² per head); gt-full: k = 8 eigenvectors */
/* The defaults of graph model `name` (a name of al_gnn_arch_names()); AL_ERR with err set if unknown. */
al_status   al_gnn_config_default(al_gnn_config *cfg, const char *name, al_error *err);
al_status   al_gnn_kind_parse(const char *name, al_gnn_kind *out, al_error *err);
const char *al_gnn_kind_name(al_gnn_kind kind);

/* The graph-model table: one entry per al_gnn_kind, in enum order. */
typedef struct al_gnn_arch {
    al_gnn_kind kind;
    const char *name;       /* "gat", "gat-full", "gcn", "mlp" */
    const char *summary;    /* one line for help texts */
    int attention;          /* 1: attention layers (gat, gat-full, gatv2, gt, gt-full): --heads, --attn-dropout */
    int graph;              /* 1: the layers read the graph's edges (gat, gatv2, gt: A + I, gcn: Â); 0: gat-full,
                             * gt-full, mlp */
    int capture;            /* 1: the attention weights can be captured (gat, gat-full: capture_attn below) */
} al_gnn_arch;
const al_gnn_arch *al_gnn_arch_find(const char *name);   /* NULL if unknown */
int                 al_gnn_arch_count(void);
const al_gnn_arch *al_gnn_arch_at(int i);                 /* 0 <= i < count, else NULL */
const char         *al_gnn_arch_names(void);                     /* "gat|gat-full|gcn|mlp|gatv2|gt|gt-full" */

typedef struct al_gnn {
    al_gnn_config cfg;
    int n, nfeat, nclass;
    const al_csr *feat;     /* borrowed from the graph: (n, nfeat) */
    const float *xdense;    /* (n, nfeat) the features as a dense matrix when they are dense enough
                             * (see AL_GNN_DENSE_MIN), else NULL: feat->val itself when the CSR stores
                             * every entry in row-major order, otherwise xdense_own */
    float *xdense_own;      /* owned dense copy, or NULL */
    al_csr adj;             /* gat, gatv2, gt: A + I; gcn: Â; gat-full, gt-full, mlp: unused; owned */
    struct al_graph_plan *plan;   /* gat, gt: adj's transposed slot lists, built once (al_graph_plan_new); owned */
    al_params params;       /* w1, b1, [a1_q, a1_k,] w2, b2, [a2_q, a2_k]; gt: w1, b1, [wpe,] blocks, w2, b2 */
    al_tensor *w1, *b1, *a1q, *a1k, *w2, *b2, *a2q, *a2k;
    /* gatv2: w1 (F, 2·H·D) and w2 (H·D, 2·C) hold the target then the source projection; a1q, a2q the
     * score vectors. gt: w1 (F, width) the input embedding, w2 (width, C) the classifier, and: */
    al_block_params blocks[AL_GNN_MAXLAYERS];
    al_tensor *wpe;         /* gt-full: (k, width) projection of the positional encodings */
    al_tensor *ln0_w, *ln0_b;   /* gt: layer norm of the input embedding (width) */
    float *pe;              /* gt-full: (n, k) Laplacian eigenvectors (al_graph_lap_pe); owned */
    /* If capture_attn is set, a GAT forward stores each layer's attention weights (1, H, slots)
     * in attn[0..1] (arena memory of the context, valid until al_ctx_reset). */
    int capture_attn;
    al_tensor *attn[2];
} al_gnn;

/* Build the model for graph g (which must outlive it); parameters from the AL_RNG_INIT stream of
 * seed, Glorot-uniform weights, zero biases. Caller frees with al_gnn_free. */
al_status  al_gnn_init(al_gnn *m, const al_gnn_config *cfg, const al_graph *g, uint64_t seed, al_error *err);
void       al_gnn_free(al_gnn *m);
/* Logits (n, nclass) for every node; dropout (and gt-full's random sign flip of each eigenvector,
 * one draw per vector and pass from c->dropout_rng) when c->training, on the tape when c->grad_enabled. */
al_tensor *al_gnn_forward(al_ctx *c, al_gnn *m);

/* ---------------- checkpoints ---------------- */
/* Write m (trained on graph g, with g's training split) to path as safetensors. __metadata__: task,
 * dataset, model, split, train_size, seed, best_epoch, test_acc, nodes, features, classes, heads,
 * run_id, in that order; split, seed, best_epoch, test_acc and run_id are the run's, given as pairs
 * kv_extra[0..2·n_extra) (any other pairs of kv_extra follow them). Written atomically. */
al_status al_gnn_save(const char *path, const al_gnn *m, const al_graph *g, const char *const *kv_extra, int n_extra,
                      al_error *err);
/* Rebuild the model saved by `attnlab train --task graph --save` for graph g: model and heads from the
 * checkpoint's __metadata__ (whose features and classes must match g), hidden width from the tensor
 * shapes, then the weights. *meta (if meta is non-NULL) receives the metadata JSON (caller frees).
 * Caller frees m with al_gnn_free (src/models/graph_checkpoint.c). */
al_status al_gnn_load(const char *path, const al_graph *g, al_gnn *m, char **meta, al_error *err);
/* ---- names of 0.5, kept as deprecated aliases through 0.6.x, removed with soname libattnlab.so.1 (CHANGELOG.md) ---- */
typedef al_gnn_arch al_gnn_model AL_DEPRECATED("al_gnn_arch");
typedef al_gnn_config al_gnn_cfg AL_DEPRECATED("al_gnn_config");
AL_DEPRECATED("al_gnn_arch_find") const al_gnn_arch *al_gnn_model_find(const char *name);
AL_DEPRECATED("al_gnn_arch_count") int al_gnn_model_count(void);
AL_DEPRECATED("al_gnn_arch_at") const al_gnn_arch *al_gnn_model_at(int i);
AL_DEPRECATED("al_gnn_arch_names") const char *al_gnn_names(void);
AL_DEPRECATED("al_gnn_config_default") void al_gnn_defaults(al_gnn_config *cfg, al_gnn_kind kind);

#endif
