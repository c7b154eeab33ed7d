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
#include "image_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- the model table ---------------- */

static const al_model_kind kinds[] = {
    {"cnn", "conv3x3(C→32)·ReLU·maxpool2 → conv3x3(32→64)·ReLU·maxpool2 → linear", 0.0f, 1, 0, 0,
     NULL, al__cnn_check, al__cnn_init, al__cnn_forward},
    {"sa", "patch embedding, learned positions, pre-LN blocks of full self-attention and a GELU MLP", 0.01f, 1, 1, 0,
     NULL, al__sa_check, al__transformer_init, al__transformer_forward},
    {"local", "sa with attention in a window of the token grid and a learned relative bias", 0.01f, 1, 1, 1,
     al__local_defaults, al__local_check, al__transformer_init, al__transformer_forward},
    {"conv-attn", "the cnn with each conv computed by attention (built from a trained cnn, evaluated only)", 0.01f, 0, 0, 0,
     NULL, al__cnn_check, al__cnn_init, al__conv_attn_forward},
    {"mlp", "no prior: the flattened pixels through two ReLU layers of 256, then linear", 0.01f, 1, 0, 0,
     al__mlp_defaults, al__mlp_check, al__mlp_init, al__mlp_forward},
};
enum { NKINDS = (int)(sizeof kinds / sizeof *kinds) };

const al_model_kind *al_model_kind_find(const char *name)
{
    for (int i = 0; name && i < NKINDS; i++)
        if (!strcmp(name, kinds[i].name)) return &kinds[i];
    return NULL;
}
int al_model_kind_count(void) { return NKINDS; }
const al_model_kind *al_model_kind_at(int i) { return i >= 0 && i < NKINDS ? &kinds[i] : NULL; }

const char *al_model_names(void)
{
    static char names[128];
    if (!names[0]) {
        size_t o = 0;
        for (int i = 0; i < NKINDS; i++) o += (size_t)snprintf(names + o, sizeof names - o, i ? "|%s" : "%s", kinds[i].name);
    }
    return names;
}

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

al_status al_model_config_default(al_model_config *cfg, const char *name, int channels, int height,
                                  int width, int classes, al_error *err)
{
    memset(cfg, 0, sizeof *cfg);
    const al_model_kind *kind = al_model_kind_find(name);
    if (!kind) return al_seterr(err, "unknown model '%s' (expected one of %s)", name, al_model_names());
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
    const al_model_kind *kind = al_model_kind_find(cfg->name);
    if (!kind) return al_seterr(err, "unknown model '%s'", cfg->name);
    if (cfg->channels < 1 || cfg->channels > 4) return al_seterr(err, "%s: channels must be 1..4, got %d", cfg->name, cfg->channels);
    if (cfg->height < 1 || cfg->width < 1) return al_seterr(err, "%s: bad image size %dx%d", cfg->name, cfg->height, cfg->width);
    if (cfg->classes < 2) return al_seterr(err, "%s: need at least 2 classes, got %d", cfg->name, cfg->classes);
    return kind->check(cfg, err);
}

/* ---------------- init, free, forward ---------------- */

al_status al_model_init(al_model *m, const al_model_config *cfg, uint64_t seed, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (al_model_config_check(cfg, err) != AL_OK) return AL_ERR;
    m->cfg = *cfg;
    m->kind = al_model_kind_find(cfg->name);
    al_params *P = &m->params;
    al_params_init(P);
    if (m->kind->init(m) != AL_OK) {
        al_model_free(m);
        return al_seterr(err, "%s: out of memory registering parameters", cfg->name);
    }
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_INIT);
    if (al_params_finalize(P, &rng, err) != AL_OK) { al_model_free(m); return AL_ERR; }
    for (int i = 0; i < P->n; i++) P->decay[i] = 1;   /* torch.optim.AdamW(model.parameters()) */
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

