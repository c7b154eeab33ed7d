/* models_image.c — image classifiers (cnn, sa, local, conv-attn) built by name; see models.h.
 *
 * Layer by layer the defaults are the PyTorch peer's models (peers/torch_bench.py): the same
 * parameter shapes, order, names (PyTorch state_dict keys) and initialisation (Kaiming-uniform
 * bound 1/sqrt(fan_in) for weights and biases, LayerNorm ones/zeros, positions N(0, 0.02),
 * relative bias zeros).
 */
#include "attnlab/models.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const model_names[] = {"cnn", "sa", "local", "conv-attn"};

const char *al_pos_name(al_pos_kind k)
{
    switch (k) {
    case AL_POS_NONE: return "none";
    case AL_POS_LEARNED: return "learned";
    case AL_POS_SINUSOIDAL: return "sinusoidal";
    case AL_POS_RELATIVE: return "relative";
    }
    return "?";
}
int al_pos_parse(const char *s, al_pos_kind *k)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(s, al_pos_name((al_pos_kind)i))) { *k = (al_pos_kind)i; return 0; }
    return -1;
}
static int is_attn_model(const al_model_config *g) { return !strcmp(g->name, "sa") || !strcmp(g->name, "local"); }
static int is_cnn_model(const al_model_config *g) { return !strcmp(g->name, "cnn") || !strcmp(g->name, "conv-attn"); }

al_status al_model_config_default(al_model_config *cfg, const char *name, int channels, int height,
                                  int width, int classes, al_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    int known = 0;
    for (size_t i = 0; i < sizeof model_names / sizeof *model_names; i++) known |= !strcmp(name, model_names[i]);
    if (!known) return al_seterr(err, "unknown model '%s' (expected cnn, sa, local or conv-attn)", name);
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    cfg->channels = channels; cfg->height = height; cfg->width = width; cfg->classes = classes;
    cfg->dim = 64; cfg->depth = 2; cfg->heads = 4; cfg->hidden = 128; cfg->patch = 2; cfg->window = 5;
    cfg->pos = !strcmp(name, "local") ? AL_POS_RELATIVE : AL_POS_LEARNED;
    cfg->score = AL_SCORE_DOT; cfg->norm = AL_NORM_SOFTMAX;
    return AL_OK;
}

al_status al_model_config_check(const al_model_config *g, al_error *err)
{
    if (!is_attn_model(g) && !is_cnn_model(g)) return al_seterr(err, "unknown model '%s'", g->name);
    if (g->channels < 1 || g->channels > 4) return al_seterr(err, "%s: channels must be 1..4, got %d", g->name, g->channels);
    if (g->height < 1 || g->width < 1) return al_seterr(err, "%s: bad image size %dx%d", g->name, g->height, g->width);
    if (g->classes < 2) return al_seterr(err, "%s: need at least 2 classes, got %d", g->name, g->classes);
    if (is_cnn_model(g)) {
        if (g->height < 4 || g->width < 4) return al_seterr(err, "%s: images must be at least 4x4, got %dx%d", g->name, g->height, g->width);
        return AL_OK;
    }
    if (g->dim < 1 || g->heads < 1 || g->dim % g->heads)
        return al_seterr(err, "%s: --dim %d must be a positive multiple of --heads %d", g->name, g->dim, g->heads);
    if (g->depth < 1 || g->depth > AL_MODEL_MAXDEPTH) return al_seterr(err, "%s: --depth must be 1..%d, got %d", g->name, AL_MODEL_MAXDEPTH, g->depth);
    if (g->hidden < 1) return al_seterr(err, "%s: MLP hidden size must be positive", g->name);
    if (g->patch < 1 || g->height % g->patch || g->width % g->patch)
        return al_seterr(err, "%s: --patch %d must divide the image size %dx%d", g->name, g->patch, g->height, g->width);
    if (!strcmp(g->name, "local") && (g->window < 1 || g->window % 2 == 0))
        return al_seterr(err, "local: --window must be odd and positive, got %d", g->window);
    if (g->pos == AL_POS_SINUSOIDAL && g->dim % 4)
        return al_seterr(err, "%s: sinusoidal positions need --dim divisible by 4, got %d", g->name, g->dim);
    if ((int)g->score < 0 || g->score > AL_SCORE_ADDITIVE || (int)g->norm < 0 || g->norm > AL_NORM_RELU || (int)g->pos < 0 || g->pos > AL_POS_RELATIVE)
        return al_seterr(err, "%s: bad score/norm/pos setting", g->name);
    return AL_OK;
}

/* 2-D sinusoidal positions: the first dim/2 channels encode the row, the rest the column,
 * each as sin/cos pairs with frequencies 10000^(-2i/(dim/2)). */
static void fill_sincos(float *pe /* (gh·gw, D) */, int gh, int gw, int D)
{
    int half = D / 2;
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++) {
            float *r = pe + ((size_t)y * gw + x) * D;
            for (int i = 0; i < half / 2; i++) {
                double f = pow(10000.0, -2.0 * i / half);
                r[2 * i] = (float)sin(y * f); r[2 * i + 1] = (float)cos(y * f);
                r[half + 2 * i] = (float)sin(x * f); r[half + 2 * i + 1] = (float)cos(x * f);
            }
        }
}

al_status al_model_init(al_model *m, const al_model_config *cfg, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (al_model_config_check(cfg, err) != AL_OK) return AL_ERR;
    m->cfg = *cfg;
    const al_model_config *g = &m->cfg;
    al_params *P = &m->params;
    al_params_init(P);
    al_init zeros = {AL_INIT_ZEROS, 0}, ones = {AL_INIT_ONES, 0};
    char nm[64];
#define ADD(dst, name, nd, shp, ini) do { if (!((dst) = al_params_add(P, (name), (nd), (int[])shp, (ini)))) goto oom; } while (0)
#define S1(a) {a}
#define S2(a, b) {a, b}
#define S4(a, b, c2, d) {a, b, c2, d}
    if (is_cnn_model(g)) {
        int C = g->channels, h2 = g->height / 2 / 2, w2 = g->width / 2 / 2, F = 64 * h2 * w2;
        ADD(m->c1_w, "c1.weight", 4, S4(32, C, 3, 3), al_init_kaiming(C * 9));
        ADD(m->c1_b, "c1.bias", 1, S1(32), al_init_kaiming(C * 9));
        ADD(m->c2_w, "c2.weight", 4, S4(64, 32, 3, 3), al_init_kaiming(32 * 9));
        ADD(m->c2_b, "c2.bias", 1, S1(64), al_init_kaiming(32 * 9));
        ADD(m->fc_w, "fc.weight", 2, S2(g->classes, F), al_init_kaiming(F));
        ADD(m->fc_b, "fc.bias", 1, S1(g->classes), al_init_kaiming(F));
    } else {
        int D = g->dim, Hh = g->heads, Dh = D / Hh, pin = g->channels * g->patch * g->patch;
        m->grid_h = g->height / g->patch; m->grid_w = g->width / g->patch;
        int N = m->grid_h * m->grid_w;
        int offs = 0;
        if (g->pos == AL_POS_RELATIVE) {
            int wh = !strcmp(g->name, "local") ? g->window : 2 * m->grid_h - 1;
            int ww = !strcmp(g->name, "local") ? g->window : 2 * m->grid_w - 1;
            offs = wh * ww;
        }
        ADD(m->embed_w, "embed.weight", 2, S2(D, pin), al_init_kaiming(pin));
        ADD(m->embed_b, "embed.bias", 1, S1(D), al_init_kaiming(pin));
        if (g->pos == AL_POS_LEARNED) ADD(m->pos, "pos", 2, S2(N, D), ((al_init){AL_INIT_NORMAL, 0.02f}));
        for (int b = 0; b < g->depth; b++) {
            al_block_params *p = &m->blocks[b];
#define NAME(s) (snprintf(nm, sizeof nm, "blocks.%d.%s", b, s), nm)
            ADD(p->ln1_w, NAME("ln1.weight"), 1, S1(D), ones);
            ADD(p->ln1_b, NAME("ln1.bias"), 1, S1(D), zeros);
            ADD(p->qkv_w, NAME("attn.qkv.weight"), 2, S2(3 * D, D), al_init_kaiming(D));
            ADD(p->qkv_b, NAME("attn.qkv.bias"), 1, S1(3 * D), al_init_kaiming(D));
            ADD(p->proj_w, NAME("attn.proj.weight"), 2, S2(D, D), al_init_kaiming(D));
            ADD(p->proj_b, NAME("attn.proj.bias"), 1, S1(D), al_init_kaiming(D));
            if (offs) ADD(p->rel, NAME("attn.rel"), 2, S2(Hh, offs), zeros);
            if (g->score == AL_SCORE_ADDITIVE) {
                ADD(p->a_q, NAME("attn.a_q"), 2, S2(Hh, Dh), al_init_kaiming(Dh));
                ADD(p->a_k, NAME("attn.a_k"), 2, S2(Hh, Dh), al_init_kaiming(Dh));
            }
            ADD(p->ln2_w, NAME("ln2.weight"), 1, S1(D), ones);
            ADD(p->ln2_b, NAME("ln2.bias"), 1, S1(D), zeros);
            ADD(p->fc1_w, NAME("fc1.weight"), 2, S2(g->hidden, D), al_init_kaiming(D));
            ADD(p->fc1_b, NAME("fc1.bias"), 1, S1(g->hidden), al_init_kaiming(D));
            ADD(p->fc2_w, NAME("fc2.weight"), 2, S2(D, g->hidden), al_init_kaiming(g->hidden));
            ADD(p->fc2_b, NAME("fc2.bias"), 1, S1(D), al_init_kaiming(g->hidden));
#undef NAME
        }
        ADD(m->ln_w, "ln.weight", 1, S1(D), ones);
        ADD(m->ln_b, "ln.bias", 1, S1(D), zeros);
        ADD(m->head_w, "head.weight", 2, S2(g->classes, D), al_init_kaiming(D));
        ADD(m->head_b, "head.bias", 1, S1(g->classes), al_init_kaiming(D));
        if (g->pos == AL_POS_SINUSOIDAL) {
            m->sincos = malloc((size_t)N * D * sizeof(float));
            if (!m->sincos) goto oom;
            fill_sincos(m->sincos, m->grid_h, m->grid_w, D);
        }
    }
#undef ADD
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_INIT);
    if (al_params_finalize(P, &rng, err) != AL_OK) { al_model_free(m); return AL_ERR; }
    for (int i = 0; i < P->n; i++) P->decay[i] = 1;   /* torch.optim.AdamW(model.parameters()) */
    return AL_OK;
oom:
    al_model_free(m);
    return al_seterr(err, "%s: out of memory registering parameters", cfg->name);
}

void al_model_refresh(al_model *m)
{
    if (m->ca_ready) { al_conv_attn_free(&m->ca[0]); al_conv_attn_free(&m->ca[1]); }
    m->ca_ready = 0;
}

void al_model_free(al_model *m)
{
    al_model_refresh(m);
    al_params_free(&m->params);
    free(m->sincos);
    m->sincos = NULL;
}

/* ---------------- forward ---------------- */

static al_tensor *cnn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    /* relu·maxpool = maxpool·relu (relu is monotone), forward and gradient, bitwise: the relu runs on
     * the 4× smaller pooled map */
    al_tensor *h = al_relu(c, al_maxpool2d(c, al_conv2d(c, x, m->c1_w, m->c1_b, 1, 1), 2, 2));  /* (B,32,H/2,W/2) */
    h = al_relu(c, al_maxpool2d(c, al_conv2d(c, h, m->c2_w, m->c2_b, 1, 1), 2, 2));            /* (B,64,H/4,W/4) */
    if (!h) return NULL;
    h = al_reshape(c, h, 2, (int[]){h->shape[0], h->shape[1] * h->shape[2] * h->shape[3]});
    return al_linear(c, h, m->fc_w, m->fc_b);                                                    /* (B,classes) */
}

/* The cnn with both convs computed by the exact conv-as-attention construction (attention.h). */
static al_tensor *conv_attn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    if (!m->ca_ready) {
        al_error e = {{0}};
        memset(m->ca, 0, sizeof m->ca);
        if (al_conv_attn_build(&m->ca[0], m->c1_w->data, m->c1_b->data, 32, m->cfg.channels, 3, &e) != AL_OK ||
            al_conv_attn_build(&m->ca[1], m->c2_w->data, m->c2_b->data, 64, 32, 3, &e) != AL_OK) {
            al_conv_attn_free(&m->ca[0]); al_conv_attn_free(&m->ca[1]);
            return al_fail(c, "conv-attn: %s", e.msg);
        }
        m->ca_ready = 1;
    }
    al_tensor *h = al_maxpool2d(c, al_relu(c, al_conv_attn_forward(c, &m->ca[0], x)), 2, 2);  /* (B,32,H/2,W/2) */
    h = al_maxpool2d(c, al_relu(c, al_conv_attn_forward(c, &m->ca[1], h)), 2, 2);            /* (B,64,H/4,W/4) */
    if (!h) return NULL;
    h = al_reshape(c, h, 2, (int[]){h->shape[0], h->shape[1] * h->shape[2] * h->shape[3]});
    return al_linear(c, h, m->fc_w, m->fc_b);                                                    /* (B,classes) */
}

static al_pattern model_pattern(const al_model *m)
{
    const al_model_config *g = &m->cfg;
    if (!strcmp(g->name, "local")) return al_pattern_window2d(m->grid_h, m->grid_w, g->window, g->window);
    if (g->pos == AL_POS_RELATIVE) /* full attention written as a window that covers the whole grid */
        return al_pattern_window2d(m->grid_h, m->grid_w, 2 * m->grid_h - 1, 2 * m->grid_w - 1);
    return al_pattern_full();
}

static al_tensor *block_forward(al_ctx *c, al_model *m, int bi, al_tensor *x /* (B,N,D) */)
{
    const al_model_config *g = &m->cfg;
    al_block_params *p = &m->blocks[bi];
    al_tensor *h = al_layernorm(c, x, p->ln1_w, p->ln1_b, 1e-5f);
    al_tensor *qkv = al_linear(c, h, p->qkv_w, p->qkv_b);                       /* (B,N,3D) */
    al_tensor *q, *k, *v;                                                       /* (B,H,N,Dh) each */
    if (al_split_qkv(c, qkv, g->heads, &q, &k, &v) != AL_OK) return NULL;       /* one pass, not 3 slices + 3 splits */
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = model_pattern(m);
    d.score = g->score; d.norm = g->norm; d.slope = 0.2f;
    m->attn_weights[bi] = NULL;
    d.weights = m->capture_attn ? &m->attn_weights[bi] : NULL;
    al_tensor *o = al_attention(c, &d, q, k, v, p->a_q, p->a_k, p->rel, NULL);  /* (B,H,N,Dh) */
    o = al_linear(c, al_merge_heads(c, o), p->proj_w, p->proj_b);               /* (B,N,D) */
    x = al_add(c, x, o);
    h = al_gelu(c, al_linear(c, al_layernorm(c, x, p->ln2_w, p->ln2_b, 1e-5f), p->fc1_w, p->fc1_b)); /* (B,N,hidden) */
    return al_add(c, x, al_linear(c, h, p->fc2_w, p->fc2_b));                  /* (B,N,D) */
}

static al_tensor *attn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    const al_model_config *g = &m->cfg;
    al_tensor *h = al_linear(c, al_patchify(c, x, g->patch), m->embed_w, m->embed_b);  /* (B,N,D) */
    if (m->pos) h = al_add_bcast(c, h, m->pos);
    if (m->sincos && h) {
        al_tensor *pe = al_wrap(c, m->sincos, 2, (int[]){m->grid_h * m->grid_w, g->dim});
        h = al_add_bcast(c, h, pe);
    }
    for (int b = 0; b < g->depth; b++) h = block_forward(c, m, b, h);
    h = al_mean_tokens(c, al_layernorm(c, h, m->ln_w, m->ln_b, 1e-5f));   /* (B,D) */
    return al_linear(c, h, m->head_w, m->head_b);                         /* (B,classes) */
}

al_tensor *al_model_forward(al_ctx *c, al_model *m, al_tensor *x)
{
    if (!x || !al_ok(c)) return NULL;
    const al_model_config *g = &m->cfg;
    if (x->ndim != 4 || x->shape[1] != g->channels || x->shape[2] != g->height || x->shape[3] != g->width) {
        char b[64];
        return al_fail(c, "%s: input %s does not match the model's (B, %d, %d, %d)", g->name,
                       al_shape_str(x, b, sizeof b), g->channels, g->height, g->width);
    }
    if (!strcmp(g->name, "cnn")) return cnn_forward(c, m, x);
    if (!strcmp(g->name, "conv-attn")) return conv_attn_forward(c, m, x);
    return attn_forward(c, m, x);
}

