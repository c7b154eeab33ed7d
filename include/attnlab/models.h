/* attnlab/models.h — image classifiers built by name (training: train.h; checkpoints: checkpoint.h).
 *
 * Models take (B, C, H, W) float images and return (B, classes) logits. Their default
 * architectures are exactly those of the PyTorch reference models (torch_bench.py),
 * including initialisation and parameter order (names follow PyTorch's state_dict):
 *
 *   cnn        conv3x3(C→32,p1)·ReLU·maxpool2 → conv3x3(32→64,p1)·ReLU·maxpool2 → linear   50 186 params
 *   sa         2×2 patch embedding + learned absolute positions; `depth` pre-LN blocks of
 *              full multi-head self-attention and a GELU MLP; final LN, mean over tokens, linear
 *                                                                                          80 586 params
 *   local      sa with attention restricted to a window×window window on the token grid, a learned
 *              relative bias per block and head, no absolute positions                      68 242 params
 *   conv-attn  the cnn with each conv computed by attention (see attention.h), if available
 *   gpsa       sa with gated positional self-attention (al_gpsa, ConViT) in every block: 9 heads of 7
 *              (dim 63), each starting as a soft look at its own offset of the 3×3 neighbourhood, its
 *              gate free to turn it into content attention                                 78 899 params
 *   (counts for 1×28×28 inputs and 10 classes)
 *
 *   al_model_config cfg; al_model_config_default(&cfg, "local", 1, 28, 28, 10);
 *   al_model m; if (al_model_init(&m, &cfg, seed, &err) != AL_OK) ...;
 *   al_tensor *logits = al_model_forward(c, &m, x);          // (B, 10), on c's tape
 *   ... al_model_free(&m);
 */
#ifndef ATTNLAB_MODELS_H
#define ATTNLAB_MODELS_H
#include <stdint.h>
#include "tensor.h"
#include "attention.h"

#define AL_MODEL_MAXDEPTH 16

typedef enum { AL_POS_NONE, AL_POS_LEARNED, AL_POS_SINUSOIDAL, AL_POS_RELATIVE } al_pos_kind;

typedef struct al_model_config {
    char name[16];                  /* "cnn", "sa", "local", "conv-attn" */
    int channels, height, width;    /* input (C, H, W) */
    int classes;
    /* attention models (sa, local, hybrid, gpsa) */
    int dim, depth, heads, hidden;  /* width, blocks, heads, MLP hidden (default 64, 2, 4, 128) */
    int patch;                      /* patch side (default 2; 1 = one token per pixel) */
    int window;                     /* local: odd window side on the token grid (default 5) */
    al_pos_kind pos;                /* sa: learned, local: relative (relative bias per block and head) */
    al_score_kind score;            /* dot (default) or additive */
    al_norm_kind norm;              /* softmax (default) or relu */
} al_model_config;

/* Parameters of one transformer block (NULL where the configuration has none). gpsa_gate (H) and gpsa_pos
 * (H, 3): the block attends by al_gpsa (gated positional self-attention) instead of al_attention. */
typedef struct al_block_params {
    al_tensor *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *rel, *a_q, *a_k;
    al_tensor *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
    al_tensor *gpsa_gate, *gpsa_pos;
} al_block_params;

struct al_model_arch;

typedef struct al_model {
    al_model_config cfg;
    const struct al_model_arch *kind;   /* the table entry of cfg.name (set by al_model_init) */
    al_params params;               /* all parameters, flat; every tensor has decay = 1 (as PyTorch's AdamW) */
    /* cnn / conv-attn */
    al_tensor *c1_w, *c1_b, *c2_w, *c2_b, *fc_w, *fc_b;
    /* any other model: its parameters in registration order, as its own init put them (a new model
     * needs no field here: docs/architecture.md, "adding an image model") */
    al_tensor *t[16];
    /* sa / local */
    al_tensor *embed_w, *embed_b, *pos, *ln_w, *ln_b, *head_w, *head_b;
    al_block_params blocks[AL_MODEL_MAXDEPTH];
    float *sincos;                  /* (N, dim) fixed sinusoidal positions, or NULL; owned */
    int grid_h, grid_w;             /* token grid */
    /* If capture_attn is set, the forward pass stores each block's attention weights (B,H,slots)
     * in attn_weights[block] (arena memory of the context, valid until al_ctx_reset). */
    int capture_attn;
    al_tensor *attn_weights[AL_MODEL_MAXDEPTH];
    al_pattern attn_pattern[AL_MODEL_MAXDEPTH];   /* the pattern of each captured block: its weights' layout */
    /* conv-attn: the convs as attention layers, built from c1/c2 on the first forward after
     * al_model_init or al_model_refresh (forward only: conv-attn is evaluated, not trained) */
    al_conv_attn ca[2];
    int ca_ready;
} al_model;

/* ---------------- the model table ----------------
 * One entry per image model: adding a model is one entry (image.c) plus its parameters and
 * forward (a file of src/models/). The entry, never the name, decides what a model does. */
typedef struct al_model_arch {
    const char *name;       /* "cnn", "sa", "local", "conv-attn": al_model_config.name, checkpoint "model" */
    const char *summary;    /* one line for help texts */
    float weight_decay;     /* default AdamW weight decay of the training command (0 cnn, 0.01 otherwise) */
    int trainable;          /* 0: built from another model's weights, evaluated only (conv-attn) */
    int attention;          /* 1: a transformer over patch tokens (--dim, --heads, --pos, --score, --norm
                             * apply; the forward can capture attention weights) */
    int windowed;           /* 1: attention restricted to a cfg.window-side window of the token grid */
    void (*defaults)(al_model_config *cfg);                             /* after the common defaults, or NULL */
    al_status (*check)(const al_model_config *cfg, al_error *err);      /* after the common checks */
    al_status (*init)(al_model *m);     /* register m's parameters in m->params; AL_ERR = out of memory */
    al_tensor *(*forward)(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);   /* → (B,classes) */
    void (*post_init)(al_model *m);     /* after the parameters' random initialisation, or NULL */
    const char *built_from;             /* a model whose checkpoint --init-from turns into this one (from), or NULL */
    al_status (*from)(al_model *m, const al_model *src, al_error *err);
} al_model_arch;

/* The entry named `name`, or NULL. */
const al_model_arch *al_model_arch_find(const char *name);
int                  al_model_arch_count(void);
const al_model_arch *al_model_arch_at(int i);      /* 0 <= i < al_model_arch_count(), else NULL */
/* Every model name, "cnn|sa|local|conv-attn" (table order). */
const char          *al_model_arch_names(void);

/* Fill cfg with the defaults of model `name` for (C, H, W) inputs and `classes` classes.
 * Returns AL_ERR (with a message) for an unknown name. */
al_status al_model_config_default(al_model_config *cfg, const char *name, int channels, int height,
                                  int width, int classes, al_error *err);
/* Check a configuration (sizes, divisibility, odd window, ...). */
al_status al_model_config_check(const al_model_config *cfg, al_error *err);
/* Register and initialise the parameters (AL_RNG_INIT stream of seed). Caller frees with al_model_free. */
al_status al_model_init(al_model *m, const al_model_config *cfg, uint64_t seed, al_error *err);
void      al_model_free(al_model *m);
/* Call after changing parameter values behind the model's back (e.g. loading a checkpoint into
 * m->params): derived structures (conv-attn's attention layers) are rebuilt on the next forward. */
void      al_model_refresh(al_model *m);
/* x (B, C, H, W) → logits (B, classes). Honours c->grad_enabled. */
al_tensor *al_model_forward(al_ctx *c, al_model *m, al_tensor *x);

const char *al_pos_name(al_pos_kind k);
int         al_pos_parse(const char *s, al_pos_kind *k);   /* 0 ok, -1 unknown */
const char *al_score_name(al_score_kind k);                /* "dot", "additive" */
int         al_score_parse(const char *s, al_score_kind *k); /* 0 ok, -1 unknown */
const char *al_norm_name(al_norm_kind k);                  /* "softmax", "relu" */
int         al_norm_parse(const char *s, al_norm_kind *k);   /* 0 ok, -1 unknown */

/* ---- names of 0.5, kept as deprecated aliases through 0.6.x, removed with soname libattnlab.so.1 (CHANGELOG.md) ---- */
typedef al_model_arch al_model_kind AL_DEPRECATED("al_model_arch");
AL_DEPRECATED("al_model_arch_find") const al_model_arch *al_model_kind_find(const char *name);
AL_DEPRECATED("al_model_arch_count") int al_model_kind_count(void);
AL_DEPRECATED("al_model_arch_at") const al_model_arch *al_model_kind_at(int i);
AL_DEPRECATED("al_model_arch_names") const char *al_model_names(void);

#endif
