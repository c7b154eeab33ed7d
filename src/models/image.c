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
    if (!kind) return al_seterr(err, "unknown model '%s' (expected cnn, sa, local or conv-attn)", name);
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

/* ---------------- metadata ---------------- */

int al_model_config_to_kv(const al_model_config *g, const char **kv, int max, char *buf, size_t bufsize)
{
    int n = 0; size_t off = 0;
#define KV(key, ...) do { \
        if (n >= max) return -1; \
        int w_ = snprintf(buf + off, bufsize - off, __VA_ARGS__); \
        if (w_ < 0 || (size_t)w_ >= bufsize - off) return -1; \
        kv[2 * n] = key; kv[2 * n + 1] = buf + off; off += (size_t)w_ + 1; n++; \
    } while (0)
    KV("model", "%s", g->name);
    KV("channels", "%d", g->channels); KV("height", "%d", g->height); KV("width", "%d", g->width);
    KV("classes", "%d", g->classes);
    KV("dim", "%d", g->dim); KV("depth", "%d", g->depth); KV("heads", "%d", g->heads); KV("hidden", "%d", g->hidden);
    KV("patch", "%d", g->patch); KV("window", "%d", g->window);
    KV("pos", "%s", al_pos_name(g->pos));
    KV("score", "%s", g->score == AL_SCORE_ADDITIVE ? "additive" : "dot");
    KV("norm", "%s", g->norm == AL_NORM_RELU ? "relu" : "softmax");
#undef KV
    return n;
}



al_status al_model_config_from_meta(al_model_config *cfg, const char *meta, al_error *err)
{
    char *name = al_meta_get(meta, "model");
    if (!name) return al_seterr(err, "checkpoint metadata has no 'model' entry (not an attnlab image checkpoint?)");
    al_status st = al_model_config_default(cfg, name, 1, 1, 1, 2, err);
    free(name);
    if (st != AL_OK) return st;
    static const char *const ikeys[] = {"channels", "height", "width", "classes", "dim", "depth", "heads", "hidden", "patch", "window"};
    int *ivals[] = {&cfg->channels, &cfg->height, &cfg->width, &cfg->classes, &cfg->dim, &cfg->depth,
                    &cfg->heads, &cfg->hidden, &cfg->patch, &cfg->window};
    for (int i = 0; i < 10; i++) {
        char *v = al_meta_get(meta, ikeys[i]);
        if (!v) return al_seterr(err, "checkpoint metadata lacks '%s'", ikeys[i]);
        char *end; long x = strtol(v, &end, 10);
        int bad = end == v || *end || x < 0 || x > 1 << 20;
        free(v);
        if (bad) return al_seterr(err, "checkpoint metadata: bad value for '%s'", ikeys[i]);
        *ivals[i] = (int)x;
    }
    char *v = al_meta_get(meta, "pos");
    if (!v || al_pos_parse(v, &cfg->pos)) { free(v); return al_seterr(err, "checkpoint metadata: bad or missing 'pos'"); }
    free(v);
    v = al_meta_get(meta, "score");
    if (!v || (strcmp(v, "dot") && strcmp(v, "additive"))) { free(v); return al_seterr(err, "checkpoint metadata: bad or missing 'score'"); }
    cfg->score = !strcmp(v, "additive") ? AL_SCORE_ADDITIVE : AL_SCORE_DOT;
    free(v);
    v = al_meta_get(meta, "norm");
    if (!v || (strcmp(v, "softmax") && strcmp(v, "relu"))) { free(v); return al_seterr(err, "checkpoint metadata: bad or missing 'norm'"); }
    cfg->norm = !strcmp(v, "relu") ? AL_NORM_RELU : AL_NORM_SOFTMAX;
    free(v);
    return al_model_config_check(cfg, err);
}

al_status al_safetensors_read_meta(const char *path, char **meta, al_error *err)
{
    *meta = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return al_seterr(err, "%s: cannot open", path);
    unsigned char lb[8];
    if (fread(lb, 1, 8, f) != 8) { fclose(f); return al_seterr(err, "%s: too short for a safetensors file", path); }
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | lb[i];
    if (n < 2 || n > (100u << 20)) { fclose(f); return al_seterr(err, "%s: implausible safetensors header length %llu", path, (unsigned long long)n); }
    char *h = malloc(n + 1);
    if (!h) { fclose(f); return al_seterr(err, "%s: out of memory", path); }
    size_t got = fread(h, 1, n, f);
    fclose(f);
    if (got != n) { free(h); return al_seterr(err, "%s: truncated safetensors header (offset %zu of %llu)", path, 8 + got, (unsigned long long)(8 + n)); }
    h[n] = 0;
    /* find the top-level key "__metadata__", skipping string contents */
    const char *s = NULL;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        if (h[i] == '"') {
            size_t j = i + 1;
            while (j < n && h[j] != '"') j += h[j] == '\\' ? 2 : 1;
            if (depth == 1 && j - i - 1 == 12 && !memcmp(h + i + 1, "__metadata__", 12)) { s = h + j + 1; break; }
            i = j;
        } else if (h[i] == '{' || h[i] == '[') depth++;
        else if (h[i] == '}' || h[i] == ']') depth--;
    }
    if (!s) { free(h); return al_seterr(err, "%s: no __metadata__ in the safetensors header", path); }
    while (*s == ' ' || *s == ':' || *s == '\n' || *s == '\t' || *s == '\r') s++;
    if (*s != '{') { free(h); return al_seterr(err, "%s: __metadata__ is not an object", path); }
    const char *e = s; depth = 0;
    for (; *e; e++) {
        if (*e == '"') { e++; while (*e && *e != '"') e += (*e == '\\' && e[1]) ? 2 : 1; if (!*e) break; }
        else if (*e == '{') depth++;
        else if (*e == '}' && --depth == 0) break;
    }
    if (*e != '}') { free(h); return al_seterr(err, "%s: unterminated __metadata__ object", path); }
    size_t len = (size_t)(e - s + 1);
    *meta = malloc(len + 1);
    if (!*meta) { free(h); return al_seterr(err, "%s: out of memory", path); }
    memcpy(*meta, s, len); (*meta)[len] = 0;
    free(h);
    return AL_OK;
}

/* ---------------- checkpoints and run ids ---------------- */

static void fmt_floats(char *b, size_t n, const float *v, int k)
{
    size_t o = 0;
    b[0] = 0;
    for (int i = 0; i < k && o < n; i++) o += (size_t)snprintf(b + o, n - o, i ? ",%.9g" : "%.9g", (double)v[i]);
}
static int parse_floats(const char *s, float *v, int k)
{
    for (int i = 0; i < k; i++) {
        char *end; double x = strtod(s, &end);
        if (end == s || !isfinite(x)) return -1;
        v[i] = (float)x; s = end;
        if (i + 1 < k) { if (*s != ',') return -1; s++; }
    }
    return *s ? -1 : 0;
}

al_status al_model_save(const char *path, const al_model *m, const float mean[4], const float std[4],
                        const char *const *extra, int nextra, al_error *err)
{
    enum { MAXKV = 64 };
    const char *kv[2 * MAXKV];
    char buf[1024], ms[160], ss[160];
    int n = al_model_config_to_kv(&m->cfg, kv + 2, MAXKV - 3, buf, sizeof buf);
    if (n < 0 || n + 3 + nextra > MAXKV) return al_seterr(err, "%s: too much checkpoint metadata", path);
    kv[0] = "format"; kv[1] = "attnlab-image";
    n++;
    fmt_floats(ms, sizeof ms, mean, m->cfg.channels);
    fmt_floats(ss, sizeof ss, std, m->cfg.channels);
    kv[2 * n] = "mean"; kv[2 * n + 1] = ms; n++;
    kv[2 * n] = "std"; kv[2 * n + 1] = ss; n++;
    for (int i = 0; i < nextra; i++, n++) { kv[2 * n] = extra[2 * i]; kv[2 * n + 1] = extra[2 * i + 1]; }
    return al_safetensors_save(path, &m->params, kv, n, err);
}

al_status al_model_load(const char *path, al_model *m, float mean[4], float std[4], char **meta_out, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (meta_out) *meta_out = NULL;
    char *meta = NULL;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return AL_ERR;
    al_model_config cfg;
    char *fmt = al_meta_get(meta, "format");
    int ok = fmt && !strcmp(fmt, "attnlab-image");
    free(fmt);
    if (!ok) { free(meta); return al_seterr(err, "%s: not an attnlab image-model checkpoint (metadata format is not attnlab-image)", path); }
    if (al_model_config_from_meta(&cfg, meta, err) != AL_OK) { free(meta); return AL_ERR; }
    char *ms = al_meta_get(meta, "mean"), *ss = al_meta_get(meta, "std");
    for (int i = 0; i < 4; i++) { mean[i] = 0.f; std[i] = 1.f; }
    ok = ms && ss && !parse_floats(ms, mean, cfg.channels) && !parse_floats(ss, std, cfg.channels);
    free(ms); free(ss);
    if (!ok) { free(meta); return al_seterr(err, "%s: bad or missing normalisation (mean/std) in the metadata", path); }
    if (al_model_init(m, &cfg, 0, err) != AL_OK) { free(meta); return AL_ERR; }
    if (al_safetensors_load(path, &m->params, NULL, err) != AL_OK) { al_model_free(m); free(meta); return AL_ERR; }
    al_model_refresh(m);
    if (meta_out) *meta_out = meta; else free(meta);
    return AL_OK;
}

int al_image_run_canonical(char *buf, size_t n, const al_model_config *g, const char *dataset, long train_size,
                           int epochs, float lr, float wd, int batch, long seed)
{
    const char *kv[64];
    char vb[1024];
    int k = al_model_config_to_kv(g, kv, 32, vb, sizeof vb);
    int o = snprintf(buf, n, "task=image;data=%s;split=stratified;train_size=%ld;epochs=%d;lr=%.9g;wd=%.9g;batch=%d;optim=adamw;seed=%ld",
                     dataset, train_size, epochs, (double)lr, (double)wd, batch, seed);
    for (int i = 0; i < k && o >= 0 && (size_t)o < n; i++) o += snprintf(buf + o, n - (size_t)o, ";%s=%s", kv[2 * i], kv[2 * i + 1]);
    return o;
}
