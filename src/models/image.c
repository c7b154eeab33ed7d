/* image.c — the image model table (cnn, sa, local, conv-attn) and what every model shares: the
 * configuration defaults and checks, parameter registration and the forward's input check; see
 * models.h. Each model's parameters and forward live in their own file (cnn.c, transformer.c).
 *
 * Layer by layer the defaults are the PyTorch peer's models (peers/torch_bench.py): the same
 * parameter shapes, order, names (PyTorch state_dict keys) and initialisation (Kaiming-uniform
 * bound 1/sqrt(fan_in) for weights and biases, LayerNorm ones/zeros, positions N(0, 0.02),
 * relative bias zeros).
 */
#include "attnlab/models.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"
#include "attnlab/checkpoint.h"
#include "image_impl.h"
#include "models/table_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- the model table ---------------- */

static const al_model_arch kinds[] = {
    {"cnn", "conv3x3(C→32)·ReLU·maxpool2 → conv3x3(32→64)·ReLU·maxpool2 → linear", 0.0f, 1, 0, 0,
     NULL, al__cnn_check, al__cnn_init, al__cnn_forward, NULL, NULL, NULL},
    {"sa", "patch embedding, learned positions, pre-LN blocks of full self-attention and a GELU MLP", 0.01f, 1, 1, 0,
     NULL, al__sa_check, al__transformer_init, al__transformer_forward, NULL, NULL, NULL},
    {"local", "sa with attention in a window of the token grid and a learned relative bias", 0.01f, 1, 1, 1,
     al__local_defaults, al__local_check, al__transformer_init, al__transformer_forward, NULL, NULL, NULL},
    {"conv-attn", "the cnn with each conv computed by attention (built from a trained cnn, evaluated only)", 0.01f, 0, 0, 0,
     NULL, al__cnn_check, al__cnn_init, al__conv_attn_forward, NULL, NULL, NULL},
    {"mlp", "no prior: the flattened pixels through two ReLU layers of 256, then linear", 0.01f, 1, 0, 0,
     al__mlp_defaults, al__mlp_check, al__mlp_init, al__mlp_forward, NULL, NULL, NULL},
    {"hybrid", "the cnn's first conv stage (3x3 conv, ReLU, maxpool 2), then sa's blocks over its 14x14 map", 0.01f, 1, 1, 0,
     NULL, al__hybrid_check, al__hybrid_init, al__hybrid_forward, NULL, NULL, NULL},
    {"conv-attn-ft", "the cnn's convs as trainable 9-head window attention (--window 3|5|7|full), exactly the cnn at "
     "start; --init-from a trained cnn", 0.0f, 1, 0, 1,
     al__conv_attn_ft_defaults, al__conv_attn_ft_check, al__conv_attn_ft_init, al__conv_attn_ft_forward,
     al__conv_attn_ft_post_init, "cnn", al__conv_attn_ft_from},
    {"gpsa", "sa with gated positional self-attention (ConViT): 9 heads start as a soft 3x3 neighbourhood, a gate per head "
     "lets each learn content attention", 0.01f, 1, 1, 0,
     al__gpsa_defaults, al__gpsa_check, al__gpsa_init, al__transformer_forward, al__gpsa_post_init, NULL, NULL},
};

AL__MODEL_TABLE(al_model_arch, kinds, al_model_arch_find, al_model_arch_count, al_model_arch_at, al_model_arch_names)

/* ---------------- attention settings by name ---------------- */

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
const char *al_score_name(al_score_kind k) { return k == AL_SCORE_ADDITIVE ? "additive" : k == AL_SCORE_DOT ? "dot" : "?"; }
int al_score_parse(const char *s, al_score_kind *k)
{
    for (int i = AL_SCORE_DOT; i <= AL_SCORE_ADDITIVE; i++)
        if (s && !strcmp(s, al_score_name((al_score_kind)i))) { *k = (al_score_kind)i; return 0; }
    return -1;
}
const char *al_norm_name(al_norm_kind k) { return k == AL_NORM_RELU ? "relu" : k == AL_NORM_SOFTMAX ? "softmax" : "?"; }
int al_norm_parse(const char *s, al_norm_kind *k)
{
    for (int i = AL_NORM_SOFTMAX; i <= AL_NORM_RELU; i++)
        if (s && !strcmp(s, al_norm_name((al_norm_kind)i))) { *k = (al_norm_kind)i; return 0; }
    return -1;
}

/* ---------------- configuration ---------------- */

#define AL_MODEL_MAX_SIDE 16384          /* = AL_IMAGE_MAX_SIDE (images.h): the largest image a loader accepts */
#define AL_MODEL_MAX_WIDTH (1 << 20)     /* classes, dim, hidden, heads */

al_status al_model_config_default(al_model_config *cfg, const char *name, int channels, int height,
                                  int width, int classes, al_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const al_model_arch *kind = al_model_arch_find(name);
    if (!kind) return al_seterr(err, "unknown model '%s' (expected one of %s)", name, al_model_arch_names());
    snprintf(cfg->name, sizeof cfg->name, "%s", name);
    cfg->channels = channels; cfg->height = height; cfg->width = width; cfg->classes = classes;
    cfg->dim = 64; cfg->depth = 2; cfg->heads = 4; cfg->hidden = 128; cfg->patch = 2; cfg->window = 5;
    cfg->pos = AL_POS_LEARNED;
    cfg->score = AL_SCORE_DOT; cfg->norm = AL_NORM_SOFTMAX;
    if (kind->defaults) kind->defaults(cfg);
    return AL_OK;
}

al_status al_model_config_check(const al_model_config *cfg, al_error *err)
{
    const al_model_arch *kind = al_model_arch_find(cfg->name);
    if (!kind) return al_seterr(err, "unknown model '%s'", cfg->name);
    if (cfg->channels < 1 || cfg->channels > 4) return al_seterr(err, "%s: channels must be 1..4, got %d", cfg->name, cfg->channels);
    if (cfg->height < 1 || cfg->width < 1) return al_seterr(err, "%s: bad image size %dx%d", cfg->name, cfg->height, cfg->width);
    if (cfg->classes < 2) return al_seterr(err, "%s: need at least 2 classes, got %d", cfg->name, cfg->classes);
    /* Size limits first, so that no product the models' init forms in int (64·h/4·w/4, the token grid,
     * window², C·patch²) can overflow, whatever a checkpoint's metadata says. */
    if (cfg->height > AL_MODEL_MAX_SIDE || cfg->width > AL_MODEL_MAX_SIDE)
        return al_seterr(err, "%s: image size %dx%d exceeds the limit of %d per side", cfg->name, cfg->height, cfg->width, AL_MODEL_MAX_SIDE);
    if (cfg->classes > AL_MODEL_MAX_WIDTH || cfg->dim > AL_MODEL_MAX_WIDTH || cfg->hidden > AL_MODEL_MAX_WIDTH ||
        cfg->heads > AL_MODEL_MAX_WIDTH || cfg->patch > AL_MODEL_MAX_SIDE || cfg->window > 2 * AL_MODEL_MAX_SIDE)
        return al_seterr(err, "%s: classes %d, dim %d, hidden %d, heads %d, patch %d or window %d is absurdly large", cfg->name,
                         cfg->classes, cfg->dim, cfg->hidden, cfg->heads, cfg->patch, cfg->window);
    return kind->check(cfg, err);
}

/* Registers cfg's parameters in m (no data allocated); the sinusoidal table init allocates is budgeted first. */
static al_status register_params(al_model *m, const al_model_config *cfg, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (al_model_config_check(cfg, err) != AL_OK) return AL_ERR;
    m->cfg = *cfg;
    m->kind = al_model_arch_find(cfg->name);
    if (cfg->pos == AL_POS_SINUSOIDAL && cfg->patch > 0) {
        uint64_t tokens = al_size_mul((uint64_t)(cfg->height / cfg->patch), (uint64_t)(cfg->width / cfg->patch));
        if (al_mem_check(al_size_mul(al_size_mul(tokens, (uint64_t)cfg->dim), sizeof(float)), err,
                         "%s: sinusoidal positions for %llu tokens of dim %d", cfg->name, (unsigned long long)tokens, cfg->dim))
            return AL_ERR;
    }
    al_params_init(&m->params);
    if (m->kind->init(m) != AL_OK) {
        al_model_free(m);
        return al_seterr(err, "%s: out of memory registering parameters (or a parameter of more than 2^40 values)", cfg->name);
    }
    /* values and gradients (al_params_finalize), then the optimizer's two moments */
    if (al_mem_check(al_size_mul((uint64_t)m->params.total, 4 * sizeof(float)), err,
                     "%s: a model of %lld parameters (values, gradients, AdamW moments)", cfg->name, (long long)m->params.total)) {
        al_model_free(m);
        return AL_ERR;
    }
    return AL_OK;
}

al_status al_model_config_params(const al_model_config *cfg, int64_t *nparam, al_error *err)
{
    al_model m;
    *nparam = 0;
    if (register_params(&m, cfg, err) != AL_OK) return AL_ERR;
    *nparam = m.params.total;
    al_model_free(&m);
    return AL_OK;
}

/* ---------------- init, free, forward ---------------- */

al_status al_model_init(al_model *m, const al_model_config *cfg, uint64_t seed, al_error *err)
{
    if (register_params(m, cfg, err) != AL_OK) return AL_ERR;
    al_params *P = &m->params;
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_INIT);
    if (al_params_finalize(P, &rng, err) != AL_OK) { al_model_free(m); return AL_ERR; }
    for (int i = 0; i < P->n; i++) P->decay[i] = 1;   /* torch.optim.AdamW(model.parameters()) */
    if (m->kind->post_init) m->kind->post_init(m);
    return AL_OK;
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

al_tensor *al_model_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    if (!x || !al_ok(c)) return NULL;
    const al_model_config *cfg = &m->cfg;
    if (x->ndim != 4 || x->shape[1] != cfg->channels || x->shape[2] != cfg->height || x->shape[3] != cfg->width) {
        char b[64];
        return al_fail(c, "%s: input %s does not match the model's (B, %d, %d, %d)", cfg->name,
                       al_shape_str(x, b, sizeof b), cfg->channels, cfg->height, cfg->width);
    }
    return m->kind->forward(c, m, x);   /* (B,classes) */
}

