/* attnlab/seq.h — the sequence models (POS tagging over words, speech over frames): packed batches of
 * sentences, the sequence-model table, forward, checkpoints. The packed-layout ops are in ops.h
 * (al_seg_window, al_seg_unpack, al_seg_pack), the block-diagonal patterns in attention.h
 * (al_csr_segments), training and evaluation in train.h (al_seq_train, al_speech_train).
 *
 * A batch of S sentences is PACKED: its Σ len tokens lie back to back in one (N, C) tensor, sentence
 * s owning rows [start[s], start[s] + len[s]). Position-wise layers (embeddings, linear, LN, MLP) run
 * on the packed rows with no padding at all. What needs the sentence structure gets it explicitly:
 *
 *   attention   the GRAPH pattern with a block-diagonal CSR (al_csr_segments): a token attends to
 *               the tokens of its own sentence (radius −1) or to those within distance r of it (trunc);
 *   window-fc   al_seg_window: tokens i−K … i+K of the same sentence, zeros outside it;
 *   rnn         al_gru_packed (rnn.h) reads the packed rows and the lengths directly, both directions
 *               in one op (al_seg_unpack / al_seg_pack convert to and from a padded (S, Tmax, C) layout).
 *
 *   al_seq_config cfg; al_seq_config_default(&cfg, "sa", nwords, nsuffixes, AL_UPOS_N, &err);
 *   al_seq_model m; al_seq_init(&m, &cfg, seed, &err);
 *   al_seq_batch b = { .nseg = S, .ntok = N, .len = len, .word = w, .suffix = s, .shape = bits };
 *   al_tensor *logits = al_seq_forward(c, &m, &b);      // (N, tags), on c's tape
 *
 * The models are exactly those of the PyTorch reference torch_pos.py (class Tagger):
 * the same layers, parameter names (its state_dict keys), shapes, order and initialisation
 * distributions (PyTorch defaults: Linear/GRU uniform ±1/√fan_in, Embedding N(0, 1) with row 0
 * (padding_idx) zero, LayerNorm ones/zeros). Row 0 of the embeddings stays zero: id 0 is never an
 * input (unknown words are id 1), so its gradient is zero and AdamW's decay keeps 0 at 0.
 */
#ifndef ATTNLAB_SEQ_H
#define ATTNLAB_SEQ_H
#include <stdint.h>
#include "tensor.h"
#include "attention.h"
#include "models.h"   /* al_pos_kind, AL_MODEL_MAXDEPTH, al_block_params */
#include "text.h"
#include "speech.h"   /* al_speech_opts, al_speech_data: speech checkpoints */

/* ---------------- the sequence models ---------------- */
typedef struct al_seq_config {
    char name[16];                 /* "fc", "window-fc", "rnn", "sa", "trunc" */
    int nwords, nsuffixes, tags;   /* embedding rows (al_feat_nwords / _nsuffixes), tags (17) */
    int word_dim, suffix_dim, dim; /* 64, 16, 64 (token vector = linear(word ⊕ suffix ⊕ 4 shape bits)) */
    int hidden;                    /* fc / window-fc hidden layer, sa / trunc MLP (128) */
    int window;                    /* window-fc: context K each side (2); trunc: attention radius (3) */
    int depth, heads;              /* sa / trunc: 2 blocks, 4 heads */
    int bidirectional;             /* rnn: 1 (default) both directions, 0 forwards only */
    al_pos_kind pos;               /* sa / trunc: sinusoidal (default), learned, none */
    al_score_kind score;           /* dot (default) or additive */
    al_norm_kind norm;             /* softmax (default) or relu */
    int max_len;                   /* longest sentence (positions table), default 512 */
    /* Frames instead of words (speech, speech.h): feat_dim > 0 replaces the word/suffix/shape embedding
     * by linear(feat_dim → dim) ("front.proj") on the batch's feat rows; subsample 2 or 4 then applies
     * one or two strided 1-D convolutions over each utterance's frames (kernel 3, stride 2, zero padding
     * 1 inside the utterance, GELU; "front.conv{0,1}"), so an utterance of L frames leaves
     * al_seq_out_len(cfg, L) = ceil(L / subsample) rows. 0 / 1: words / no subsampling. */
    int feat_dim, subsample;
} al_seq_config;

typedef struct al_seq_model {
    al_seq_config cfg;
    const struct al_seq_arch *kind;
    al_params params;              /* flat; every tensor decays (torch.optim.AdamW(model.parameters())) */
    al_tensor *wemb, *semb, *proj_w, *proj_b;          /* emb.w.weight, emb.s.weight, emb.proj.* */
    al_tensor *h1_w, *h1_b, *h2_w, *h2_b;              /* fc / window-fc: head.0.*, head.2.* */
    al_tensor *rnn_wih[2], *rnn_whh[2], *rnn_bih[2], *rnn_bhh[2];   /* rnn.*_l0 and *_l0_reverse */
    al_tensor *head_w, *head_b;                        /* rnn / sa / trunc: head.* */
    al_tensor *ln_w, *ln_b, *pos;                      /* sa / trunc: ln.*, learned positions "pos" */
    al_tensor *front_w, *front_b, *conv_w[2], *conv_b[2]; /* frames: front.proj.*, front.conv{0,1}.* */
    al_block_params blocks[AL_MODEL_MAXDEPTH];         /* blocks.b.{ln1,qkv,proj,ln2,fc1,fc2}.* */
    float *sincos;                                     /* (max_len, dim) or NULL; owned */
    /* If capture_attn is set, an sa/trunc forward stores each block's attention weights (1, heads, nnz),
     * in the slot order of attn_adj (the batch's (N, N) block-diagonal adjacency), in attn_weights[block];
     * both are arena memory of the context, valid until al_ctx_reset. al_seq_attnmap (attnmap.h) reads them. */
    int capture_attn;
    al_tensor *attn_weights[AL_MODEL_MAXDEPTH];
    const al_csr *attn_adj;
} al_seq_model;

/* One packed batch: nseg sentences, ntok = Σ len tokens, features as al_feat_encode gives them. */
typedef struct al_seq_batch {
    int nseg, ntok;
    const int *len;                /* (nseg), each >= 1 */
    const int *word, *suffix;      /* (ntok) ids */
    const float *shape;            /* (ntok, 4) */
    const float *feat;             /* frames (cfg.feat_dim > 0): (ntok, feat_dim); word, suffix, shape unused */
    int uniform;                   /* 1: every sequence of the data set the batch is drawn from has one length
                                    * (generated tasks), so sa and trunc run dense over (nseg, len): the keys of
                                    * the block-diagonal pattern, on the lane kernels, in every batching of that
                                    * data alike. 0: lengths may differ: the pattern's CSR (any batch) */
} al_seq_batch;

/* The table: one entry per model (src/models/seq.c). */
typedef struct al_seq_arch {
    const char *name;
    const char *summary;
    int attention;                 /* 1: --pos/--score/--norm/--heads/--depth apply */
    int windowed;                  /* 1: --window (context each side) applies */
    int recurrent;                 /* 1: --rnn bi|uni applies */
    void (*defaults)(al_seq_config *cfg);                         /* after the common defaults, or NULL */
    al_status (*check)(const al_seq_config *cfg, al_error *err);  /* after the common checks, or NULL */
    al_status (*init)(al_seq_model *m);                           /* register parameters; AL_ERR = out of memory */
    al_tensor *(*forward)(al_ctx *c, al_seq_model *m, al_tensor *x /* (N, dim) */, const al_seq_batch *b); /* → (N, tags) */
} al_seq_arch;

const al_seq_arch *al_seq_arch_find(const char *name);   /* NULL if unknown */
int                al_seq_arch_count(void);              /* entries of the table, in its order */
const al_seq_arch *al_seq_arch_at(int i);                /* entry i, NULL outside [0, count) */
const char        *al_seq_arch_names(void);                   /* "fc|window-fc|rnn|sa|trunc" */

/* Defaults of model `name` (AL_ERR for an unknown name); check sizes and settings. */
al_status al_seq_config_default(al_seq_config *cfg, const char *name, int nwords, int nsuffixes, int tags, al_error *err);
al_status al_seq_config_check(const al_seq_config *cfg, al_error *err);
/* Register and initialise the parameters (AL_RNG_INIT stream of seed). Free with al_seq_free. */
al_status al_seq_init(al_seq_model *m, const al_seq_config *cfg, uint64_t seed, al_error *err);
void      al_seq_free(al_seq_model *m);
/* A second handle r on m's weights (the same data arrays, read-only for r's users) with its own
 * gradient array: for a data-parallel shard of a batch. Free r with al_seq_free before m. */
al_status al_seq_replica(const al_seq_model *m, al_seq_model *r, al_error *err);
/* The batch's tokens → logits (ntok, tags); with subsampling (ntok', tags), utterance s owning
 * al_seq_out_len(&m->cfg, len[s]) rows. Honours c->grad_enabled. Errors are recorded in c. */
al_tensor *al_seq_forward(al_ctx *c, al_seq_model *m, const al_seq_batch *b);
/* Rows left of a sequence of len tokens after the frame subsampling (len itself without it). */
int al_seq_out_len(const al_seq_config *cfg, int len);

/* ---------------- checkpoints ---------------- */
/* safetensors with __metadata__: format "attnlab-sequence", the configuration, "vocab" (al_feat_save's
 * text) and the extra pairs kv[0..2·nkv). */
al_status al_seq_save(const char *path, const al_seq_model *m, const al_featurizer *fz,
                      const char *const *kv, int nkv, al_error *err);
/* Rebuild model and vocabularies from al_seq_save's file; on error both are left freed. *meta (if
 * non-NULL) receives a malloc'd copy of the metadata JSON. */
al_status al_seq_load(const char *path, al_seq_model *m, al_featurizer *fz, char **meta, al_error *err);
/* Canonical description of a sequence run (for al_run_id). */
int al_seq_run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *dataset, long train_size,
                         int epochs, float lr, float wd, int batch, long seed);
/* Speech checkpoints: the same models reading frames (speech.h). */
/* Canonical description of a speech run (for al_run_id): "task=speech;" + what (the data's key=value
 * pairs) + the training settings + the model configuration. */
int al_speech_run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *what, long train_size,
                            int epochs, float lr, float wd, int batch, long seed);

/* safetensors, metadata format "attnlab-speech": the model configuration plus features, cmvn, framewise,
 * class names (joined by '\n') and the extra pairs. */
al_status al_speech_save(const char *path, const al_seq_model *m, const al_speech_opts *o, const al_speech_data *d,
                         const char *const *kv, int nkv, al_error *err);
/* Rebuilds the model; *o the front end it was trained on; *meta (may be NULL) a malloc'd copy of the metadata. */
al_status al_speech_load(const char *path, al_seq_model *m, al_speech_opts *o, char **meta, al_error *err);
/* ---- names of 0.5, kept as deprecated aliases through 0.6.x, removed with soname libattnlab.so.1 (CHANGELOG.md) ---- */
typedef al_seq_arch al_seq_kind AL_DEPRECATED("al_seq_arch");
AL_DEPRECATED("al_seq_arch_find") const al_seq_arch *al_seq_kind_find(const char *name);
AL_DEPRECATED("al_seq_arch_count") int al_seq_kind_count(void);
AL_DEPRECATED("al_seq_arch_at") const al_seq_arch *al_seq_kind_at(int i);
AL_DEPRECATED("al_seq_arch_names") const char *al_seq_names(void);

#endif
