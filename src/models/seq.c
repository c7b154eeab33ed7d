/* seq.c — the sequence-model table (fc, window-fc, rnn, sa, trunc; see seq.h) and what every model
 * shares: configuration defaults and checks, the token embedding (word ⊕ suffix ⊕ shape → linear),
 * parameter registration and the batch check. Layer by layer, names (state_dict keys), shapes, order
 * and init distributions are those of torch_pos.py's Tagger. Every model reads the packed batch:
 * position-wise layers on (N, ·) rows, sentence structure only where a layer needs it. */
#include "attnlab/seq.h"
#include "block_impl.h"
#include "budget_impl.h"
#include "attnlab/ops.h"
#include "attnlab/rnn.h"
#include "models/table_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADD(m, dst, name, nd, shp, ini) \
    do { if (!((dst) = al_params_add(&(m)->params, (name), (nd), (int[])shp, (ini)))) return AL_ERR; } while (0)
#define S1(a) {a}
#define S2(a, b) {a, b}

static const al_init ZEROS = {AL_INIT_ZEROS, 0}, ONES = {AL_INIT_ONES, 0};

/* ---------------- shared: embedding ---------------- */
/* Frames: front.proj (feat_dim → dim), then one strided convolution per factor 2 of subsample, each
 * (dim, 3·dim) over the frames t−1, t, t+1 (PyTorch's Conv1d(dim, dim, 3, stride=2, padding=1) with its
 * weight (dim, dim, 3) stored tap-major: column k·dim + i is input channel i at tap k). */
static al_status front_init(al_seq_model *m)
{
    const al_seq_config *g = &m->cfg;
    ADD(m, m->front_w, "front.proj.weight", 2, S2(g->dim, g->feat_dim), al_init_kaiming(g->feat_dim));
    ADD(m, m->front_b, "front.proj.bias", 1, S1(g->dim), al_init_kaiming(g->feat_dim));
    for (int k = 0, f = g->subsample; f > 1; k++, f /= 2) {
        char nw[32], nb[32];
        snprintf(nw, sizeof nw, "front.conv%d.weight", k); snprintf(nb, sizeof nb, "front.conv%d.bias", k);
        ADD(m, m->conv_w[k], nw, 2, S2(g->dim, 3 * g->dim), al_init_kaiming(3 * g->dim));
        ADD(m, m->conv_b[k], nb, 1, S1(g->dim), al_init_kaiming(3 * g->dim));
    }
    return AL_OK;
}

int al_seq_out_len(const al_seq_config *cfg, int len)
{
    for (int f = cfg->subsample; f > 1; f /= 2) len = (len + 1) / 2;
    return len;
}

/* (N, dim) frame vectors of b, and through *len_out the utterances' lengths after subsampling (arena). */
static al_tensor *front_forward(al_ctx *c, al_seq_model *m, const al_seq_batch *b, int **len_out)
{
    const al_seq_config *g = &m->cfg;
    al_tensor *feat = al_wrap(c, (float *)b->feat, 2, (int[]){b->ntok, g->feat_dim});   /* (N, F) constant */
    al_tensor *x = al_linear(c, feat, m->front_w, m->front_b);                          /* (N, D) */
    int *len = al_arena_alloc(&c->arena, (size_t)b->nseg * sizeof(int));
    int *ids = al_arena_alloc(&c->arena, (size_t)(b->ntok > 0 ? b->ntok : 1) * sizeof(int));
    if (!len || !ids) return al_fail(c, "%s: out of memory (arena)", g->name);
    memcpy(len, b->len, (size_t)b->nseg * sizeof(int));
    for (int k = 0, f = g->subsample; f > 1 && x; k++, f /= 2) {
        al_tensor *win = al_seg_window(c, x, len, b->nseg, 1);                          /* (N, 3D): t−1, t, t+1 */
        int n = 0, row = 0;
        for (int s = 0; s < b->nseg; s++) {                                             /* frames 0, 2, 4, ... */
            for (int t = 0; t < len[s]; t += 2) ids[n++] = row + t;
            row += len[s];
            len[s] = (len[s] + 1) / 2;
        }
        x = al_gelu(c, al_linear(c, al_embedding(c, win, ids, n), m->conv_w[k], m->conv_b[k]));   /* (N', D) */
    }
    *len_out = len;
    return x;
}

static al_status embed_init(al_seq_model *m)
{
    const al_seq_config *g = &m->cfg;
    if (g->feat_dim > 0) return front_init(m);
    int in = g->word_dim + g->suffix_dim + 4;
    ADD(m, m->wemb, "emb.w.weight", 2, S2(g->nwords, g->word_dim), ((al_init){AL_INIT_NORMAL, 1.0f}));
    ADD(m, m->semb, "emb.s.weight", 2, S2(g->nsuffixes, g->suffix_dim), ((al_init){AL_INIT_NORMAL, 1.0f}));
    ADD(m, m->proj_w, "emb.proj.weight", 2, S2(g->dim, in), al_init_kaiming(in));
    ADD(m, m->proj_b, "emb.proj.bias", 1, S1(g->dim), al_init_kaiming(in));
    return AL_OK;
}

/* (N, dim) token vectors: linear(word emb ⊕ suffix emb ⊕ 4 shape bits). */
static al_tensor *embed_forward(al_ctx *c, al_seq_model *m, const al_seq_batch *b)
{
    al_tensor *w = al_embedding(c, m->wemb, b->word, b->ntok);                 /* (N, 64) */
    al_tensor *s = al_embedding(c, m->semb, b->suffix, b->ntok);               /* (N, 16) */
    al_tensor *bits = al_wrap(c, (float *)b->shape, 2, (int[]){b->ntok, 4});   /* (N, 4) constant */
    al_tensor *cat = al_concat_last(c, 3, (al_tensor *[]){w, s, bits});        /* (N, 84) */
    return al_linear(c, cat, m->proj_w, m->proj_b);                            /* (N, 64) */
}

/* ---------------- fc and window-fc ---------------- */
static al_status mlp_init(al_seq_model *m, int in)
{
    const al_seq_config *g = &m->cfg;
    ADD(m, m->h1_w, "head.0.weight", 2, S2(g->hidden, in), al_init_kaiming(in));
    ADD(m, m->h1_b, "head.0.bias", 1, S1(g->hidden), al_init_kaiming(in));
    ADD(m, m->h2_w, "head.2.weight", 2, S2(g->tags, g->hidden), al_init_kaiming(g->hidden));
    ADD(m, m->h2_b, "head.2.bias", 1, S1(g->tags), al_init_kaiming(g->hidden));
    return AL_OK;
}
static al_status fc_init(al_seq_model *m) { return mlp_init(m, m->cfg.dim); }
static al_status wfc_init(al_seq_model *m) { return mlp_init(m, (2 * m->cfg.window + 1) * m->cfg.dim); }

static al_tensor *mlp_forward(al_ctx *c, al_seq_model *m, al_tensor *x /* (N, in) */)
{
    return al_linear(c, al_relu(c, al_linear(c, x, m->h1_w, m->h1_b)), m->h2_w, m->h2_b);   /* (N, tags) */
}
static al_tensor *fc_forward(al_ctx *c, al_seq_model *m, al_tensor *x, const al_seq_batch *b)
{
    (void)b;
    return mlp_forward(c, m, x);
}
static al_tensor *wfc_forward(al_ctx *c, al_seq_model *m, al_tensor *x, const al_seq_batch *b)
{
    return mlp_forward(c, m, al_seg_window(c, x, b->len, b->nseg, m->cfg.window));   /* (N, (2K+1)·64) → (N, tags) */
}
static void wfc_defaults(al_seq_config *g) { g->window = 2; }
static al_status wfc_check(const al_seq_config *g, al_error *err)
{
    if (g->window < 0 || g->window > 64) return al_seterr(err, "window-fc: --window (context each side) must be 0..64, got %d", g->window);
    return AL_OK;
}

/* ---------------- rnn ---------------- */
static al_status rnn_init(al_seq_model *m)
{
    const al_seq_config *g = &m->cfg;
    const int D = g->dim, H = g->dim, dirs = g->bidirectional ? 2 : 1;
    char nm[64];
    for (int d = 0; d < dirs; d++) {
        const char *sfx = d ? "_reverse" : "";
#define NAME(s) (snprintf(nm, sizeof nm, "rnn.%s_l0%s", s, sfx), nm)
        ADD(m, m->rnn_wih[d], NAME("weight_ih"), 2, S2(3 * H, D), al_init_kaiming(H));
        ADD(m, m->rnn_whh[d], NAME("weight_hh"), 2, S2(3 * H, H), al_init_kaiming(H));
        ADD(m, m->rnn_bih[d], NAME("bias_ih"), 1, S1(3 * H), al_init_kaiming(H));
        ADD(m, m->rnn_bhh[d], NAME("bias_hh"), 1, S1(3 * H), al_init_kaiming(H));
#undef NAME
    }
    ADD(m, m->head_w, "head.weight", 2, S2(g->tags, dirs * H), al_init_kaiming(dirs * H));
    ADD(m, m->head_b, "head.bias", 1, S1(g->tags), al_init_kaiming(dirs * H));
    return AL_OK;
}
static al_tensor *rnn_forward(al_ctx *c, al_seq_model *m, al_tensor *x, const al_seq_batch *b)
{
    const al_gru_dir dir[2] = {{m->rnn_wih[0], m->rnn_whh[0], m->rnn_bih[0], m->rnn_bhh[0]},
                               {m->rnn_wih[1], m->rnn_whh[1], m->rnn_bih[1], m->rnn_bhh[1]}};
    al_tensor *h = al_gru_packed(c, x, b->len, b->nseg, m->cfg.bidirectional ? 2 : 1, dir);   /* (N, dirs·H) */
    return al_linear(c, h, m->head_w, m->head_b);                                            /* (N, tags) */
}

/* ---------------- sa and trunc ---------------- */
static void sa_defaults(al_seq_config *g) { g->window = -1; }
static void trunc_defaults(al_seq_config *g) { g->window = 3; }
static al_status attn_check(const al_seq_config *g, al_error *err)
{
    if (g->heads < 1 || g->dim % g->heads) return al_seterr(err, "%s: dim %d must be a multiple of --heads %d", g->name, g->dim, g->heads);
    if (g->depth < 1 || g->depth > AL_MODEL_MAXDEPTH) return al_seterr(err, "%s: depth must be 1..%d, got %d", g->name, AL_MODEL_MAXDEPTH, g->depth);
    if (g->pos != AL_POS_NONE && g->pos != AL_POS_LEARNED && g->pos != AL_POS_SINUSOIDAL)
        return al_seterr(err, "%s: --pos must be none, learned or sinusoidal", g->name);
    if ((int)g->score < 0 || g->score > AL_SCORE_ADDITIVE || (int)g->norm < 0 || g->norm > AL_NORM_RELU)
        return al_seterr(err, "%s: bad score/norm setting", g->name);
    return AL_OK;
}
static al_status trunc_check(const al_seq_config *g, al_error *err)
{
    if (g->window < 0 || g->window > g->max_len) return al_seterr(err, "trunc: --window (attention radius) must be 0..%d, got %d", g->max_len, g->window);
    return attn_check(g, err);
}

static al_status sa_init(al_seq_model *m)
{
    const al_seq_config *g = &m->cfg;
    const int D = g->dim;
    if (g->pos == AL_POS_LEARNED) ADD(m, m->pos, "pos", 2, S2(g->max_len, D), ((al_init){AL_INIT_NORMAL, 0.02f}));
    for (int b = 0; b < g->depth; b++)
        if (al__block_params_add(&m->params, &m->blocks[b], b, "", D, g->heads, g->hidden, 0, g->score) != AL_OK) return AL_ERR;
    ADD(m, m->ln_w, "ln.weight", 1, S1(D), ONES);
    ADD(m, m->ln_b, "ln.bias", 1, S1(D), ZEROS);
    ADD(m, m->head_w, "head.weight", 2, S2(g->tags, D), al_init_kaiming(D));
    ADD(m, m->head_b, "head.bias", 1, S1(g->tags), al_init_kaiming(D));
    if (g->pos == AL_POS_SINUSOIDAL) {
        m->sincos = malloc((size_t)g->max_len * D * sizeof(float));
        if (!m->sincos) return AL_ERR;
        al_sinusoid(m->sincos, g->max_len, D);
    }
    return AL_OK;
}

/* One pre-LN block on (1, N, D): x + proj(attn(LN x)), then x + fc2(GELU(fc1(LN x))). */
static al_tensor *block_forward(al_ctx *c, const al_seq_config *g, al_block_params *p, al_pattern pat, al_tensor *x,
                                al_tensor **weights /* (1, H, nnz) out, or NULL */)
{
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = pat;
    d.score = g->score; d.norm = g->norm; d.slope = 0.2f; d.weights = weights;
    return al__block_forward(c, p, &d, g->heads, x);                           /* (1,N,D) */
}

static al_tensor *sa_forward(al_ctx *c, al_seq_model *m, al_tensor *x /* (N, D) */, const al_seq_batch *b)
{
    const al_seq_config *g = &m->cfg;
    const int N = b->ntok, D = g->dim;
    if (g->pos != AL_POS_NONE) {
        int *pos = al_arena_alloc(&c->arena, (size_t)N * sizeof(int));
        if (!pos) return al_fail(c, "sa: out of memory (arena)");
        al_seg_positions(b->len, b->nseg, pos);
        if (m->pos) x = al_add(c, x, al_embedding(c, m->pos, pos, N));
        else {
            al_tensor *pe = al_new(c, 2, (int[]){N, D});                            /* (N, D) constant */
            if (!pe) return NULL;
            for (int i = 0; i < N; i++) memcpy(pe->data + (int64_t)i * D, m->sincos + (int64_t)pos[i] * D, (size_t)D * sizeof(float));
            x = al_add(c, x, pe);
        }
    }
    /* Data whose sequences all have one length L (generated tasks; b->uniform) runs as a (B, L, D) tensor:
     * full attention (sa) or a 1-D window of the same radius (trunc) over each sequence keeps exactly the
     * keys of the block-diagonal pattern, on the dense lane kernels instead of the slot lists (3.4x at
     * L = 256). The choice follows the data set, not the batch, so that any batching of the same data
     * (--eval-batch, the two threads' shards) takes the same kernels. Other data, and captured weights
     * (laid out over the pattern's slots), take the CSR. */
    int same = b->uniform && b->nseg > 0 && !m->capture_attn;
    for (int s = 1; same && s < b->nseg; s++) same = b->len[s] == b->len[0];
    al_pattern pat;
    if (same) {
        const int L = b->len[0];
        pat = g->window < 0 || g->window >= L ? al_pattern_full() : al_pattern_window1d(g->window);
        x = al_reshape(c, x, 3, (int[]){b->nseg, L, D});
        m->attn_adj = NULL;
    } else {
        const al_csr *adj = al_csr_segments_arena(c, b->len, b->nseg, g->window);     /* block-diagonal */
        if (!adj) return NULL;
        pat = al_pattern_graph(adj);
        x = al_reshape(c, x, 3, (int[]){1, N, D});
        m->attn_adj = m->capture_attn ? adj : NULL;
    }
    for (int i = 0; i < g->depth; i++) {
        m->attn_weights[i] = NULL;
        x = block_forward(c, g, &m->blocks[i], pat, x, m->capture_attn ? &m->attn_weights[i] : NULL);
    }
    x = al_linear(c, al_layernorm(c, x, m->ln_w, m->ln_b, 1e-5f), m->head_w, m->head_b);   /* (1, N, tags) */
    return al_reshape(c, x, 2, (int[]){N, g->tags});
}

/* ---------------- the table ---------------- */
static const al_seq_arch kinds[] = {
    {"fc", "per token: linear 64→128, ReLU, →17 (no context)", 0, 0, 0, NULL, NULL, fc_init, fc_forward},
    {"window-fc", "tokens i−K…i+K of the sentence concatenated (K = --window, 2) →128 ReLU →17", 0, 1, 0,
     wfc_defaults, wfc_check, wfc_init, wfc_forward},
    {"rnn", "bidirectional GRU 64 per direction → linear →17 (--rnn uni: forwards only)", 0, 0, 1, NULL, NULL,
     rnn_init, rnn_forward},
    {"sa", "2 pre-LN blocks of 4-head self-attention over the sentence, sinusoidal positions", 1, 0, 0,
     sa_defaults, attn_check, sa_init, sa_forward},
    {"trunc", "sa with each token attending within distance --window (3) in its sentence", 1, 1, 0,
     trunc_defaults, trunc_check, sa_init, sa_forward},
};

AL__MODEL_TABLE(al_seq_arch, kinds, al_seq_arch_find, al_seq_arch_count, al_seq_arch_at, al_seq_arch_names)

al_status al_seq_config_default(al_seq_config *cfg, const char *name, int nwords, int nsuffixes, int tags, al_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const al_seq_arch *k = al_seq_arch_find(name);
    if (!k) return al_seterr(err, "unknown sequence model '%s' (expected %s)", name ? name : "(null)", al_seq_arch_names());
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    cfg->nwords = nwords; cfg->nsuffixes = nsuffixes; cfg->tags = tags;
    cfg->word_dim = 64; cfg->suffix_dim = 16; cfg->dim = 64; cfg->hidden = 128;
    cfg->window = 0; cfg->depth = 2; cfg->heads = 4; cfg->bidirectional = 1;
    cfg->pos = AL_POS_SINUSOIDAL; cfg->score = AL_SCORE_DOT; cfg->norm = AL_NORM_SOFTMAX;
    cfg->max_len = AL_CONLLU_MAX_LEN;
    if (k->defaults) k->defaults(cfg);
    return AL_OK;
}

al_status al_seq_config_check(const al_seq_config *cfg, al_error *err)
{
    const al_seq_arch *k = al_seq_arch_find(cfg->name);
    if (!k) return al_seterr(err, "unknown sequence model '%s' (expected %s)", cfg->name, al_seq_arch_names());
    if (cfg->feat_dim < 0 || cfg->feat_dim > 4096) return al_seterr(err, "%s: feat_dim must be 0..4096, got %d", cfg->name, cfg->feat_dim);
    if (cfg->subsample != 0 && cfg->subsample != 1 && cfg->subsample != 2 && cfg->subsample != 4)
        return al_seterr(err, "%s: --subsample must be 1, 2 or 4, got %d", cfg->name, cfg->subsample);
    if (cfg->subsample > 1 && cfg->feat_dim == 0) return al_seterr(err, "%s: --subsample applies to frames (speech), not words", cfg->name);
    if (cfg->feat_dim == 0 && (cfg->nwords < 2 || cfg->nsuffixes < 2)) return al_seterr(err, "%s: vocabularies need >= 2 rows (padding, <unk>)", cfg->name);
    if (cfg->tags < 2) return al_seterr(err, "%s: need >= 2 tags, got %d", cfg->name, cfg->tags);
    if (cfg->word_dim < 1 || cfg->suffix_dim < 1 || cfg->dim < 2 || cfg->dim % 2 || cfg->hidden < 1)
        return al_seterr(err, "%s: bad layer sizes (dim must be even and >= 2)", cfg->name);
    if (cfg->max_len < 1 || cfg->max_len > 1000000) return al_seterr(err, "%s: --max-len must be 1..1000000, got %d", cfg->name, cfg->max_len);
    return k->check ? k->check(cfg, err) : AL_OK;
}

al_status al_seq_init(al_seq_model *m, const al_seq_config *cfg, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (al_seq_config_check(cfg, err) != AL_OK) return AL_ERR;
    m->cfg = *cfg;
    m->kind = al_seq_arch_find(cfg->name);
    al_params_init(&m->params);
    if (embed_init(m) != AL_OK || m->kind->init(m) != AL_OK) {
        al_seq_free(m);
        return al_seterr(err, "%s: out of memory registering parameters", cfg->name);
    }
    /* --max-len (up to 10^6) x dim learned positions, --heads, --depth: all the weights, before allocating */
    if (al__params_budget(&m->params, "sequence model", cfg->name, err)) { al_seq_free(m); return AL_ERR; }
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_INIT);
    if (al_params_finalize(&m->params, &rng, err) != AL_OK) { al_seq_free(m); return AL_ERR; }
    for (int i = 0; i < m->params.n; i++) m->params.decay[i] = 1;   /* torch.optim.AdamW(model.parameters()) */
    if (m->wemb) {   /* nn.Embedding(padding_idx=0): row 0 is zero */
        memset(m->wemb->data, 0, (size_t)cfg->word_dim * sizeof(float));
        memset(m->semb->data, 0, (size_t)cfg->suffix_dim * sizeof(float));
    }
    return AL_OK;
}

al_status al_seq_replica(const al_seq_model *m, al_seq_model *r, al_error *err)
{
    if (al_seq_init(r, &m->cfg, 0, err) != AL_OK) return AL_ERR;
    for (int i = 0; i < r->params.n; i++) r->params.t[i]->data = m->params.t[i]->data;   /* r's own data unused */
    return AL_OK;
}

void al_seq_free(al_seq_model *m)
{
    al_params_free(&m->params);
    free(m->sincos);
    memset(m, 0, sizeof *m);
}

al_tensor *al_seq_forward(al_ctx *c, al_seq_model *m, const al_seq_batch *b)
{
    if (!al_ok(c)) return NULL;
    const al_seq_config *g = &m->cfg;
    const int frames = g->feat_dim > 0;
    if (b->nseg < 1 || !b->len || (frames ? !b->feat : !b->word || !b->suffix || !b->shape))
        return al_fail(c, "%s: empty or incomplete batch", g->name);
    int64_t n = 0;
    for (int s = 0; s < b->nseg; s++) {
        if (b->len[s] < 1) return al_fail(c, "%s: sentence %d of the batch is empty", g->name, s);
        if (al_seq_out_len(g, b->len[s]) > g->max_len)
            return al_fail(c, "%s: sequence %d has %d tokens, more than the model's max_len %d", g->name, s, al_seq_out_len(g, b->len[s]), g->max_len);
        n += b->len[s];
    }
    if (n != b->ntok) return al_fail(c, "%s: sentence lengths sum to %lld, not ntok %d", g->name, (long long)n, b->ntok);
    if (frames) {
        int *len = NULL;
        al_tensor *x = front_forward(c, m, b, &len);        /* (N', dim) */
        if (!x) return NULL;
        al_seq_batch b2 = *b;
        b2.len = len; b2.ntok = x->shape[0];
        return m->kind->forward(c, m, x, &b2);             /* (N', tags) */
    }
    for (int i = 0; i < b->ntok; i++)
        if (b->word[i] < 0 || b->word[i] >= g->nwords || b->suffix[i] < 0 || b->suffix[i] >= g->nsuffixes)
            return al_fail(c, "%s: token %d has a word id %d / suffix id %d outside the vocabularies (%d / %d)", g->name, i,
                           b->word[i], b->suffix[i], g->nwords, g->nsuffixes);
    al_tensor *x = embed_forward(c, m, b);                  /* (N, dim) */
    if (!x) return NULL;
    return m->kind->forward(c, m, x, b);                    /* (N, tags) */
}
