/* checkpoint.c — image-model checkpoints: the model configuration as safetensors metadata and back,
 * save and load (metadata read through the one safetensors header reader of io.c), and the canonical
 * run description that run ids hash. */
#include "attnlab/checkpoint.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- configuration <-> metadata ---------------- */

int al_model_config_to_kv(const al_model_config *cfg, const char **kv, int max, char *buf, size_t bufsize)
{
    al_kvb b = {kv, max, 0, buf, bufsize, 0};
    al__kv(&b, "model", "%s", cfg->name);
    al__kv(&b, "channels", "%d", cfg->channels); al__kv(&b, "height", "%d", cfg->height); al__kv(&b, "width", "%d", cfg->width);
    al__kv(&b, "classes", "%d", cfg->classes);
    al__kv(&b, "dim", "%d", cfg->dim); al__kv(&b, "depth", "%d", cfg->depth); al__kv(&b, "heads", "%d", cfg->heads);
    al__kv(&b, "hidden", "%d", cfg->hidden);
    al__kv(&b, "patch", "%d", cfg->patch); al__kv(&b, "window", "%d", cfg->window);
    al__kv(&b, "pos", "%s", al_pos_name(cfg->pos));
    al__kv(&b, "score", "%s", al_score_name(cfg->score));
    al__kv(&b, "norm", "%s", al_norm_name(cfg->norm));
    return b.n;
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

/* Metadata value `key` as k comma-separated finite floats into v (positive ones if positive: a std of
 * 0 would divide every pixel by zero). */
static al_status meta_floats(const char *path, const char *meta, const char *key, int k, int positive, float *v, al_error *err)
{
    char *s = al_meta_get(meta, key);
    if (!s) return al_seterr(err, "%s: metadata lacks '%s' (the normalisation)", al_path_short(path), key);
    int bad = parse_floats(s, v, k);
    for (int i = 0; !bad && positive && i < k; i++) bad = !(v[i] > 0);
    if (bad) al_seterr(err, "%s: metadata '%s' is \"%.40s\": expected %d %sfinite number%s (one per channel)", al_path_short(path),
                       key, s, k, positive ? "positive " : "", k > 1 ? "s" : "");
    free(s);
    return bad ? AL_ERR : AL_OK;
}

al_status al_model_save(const char *path, const al_model *m, const float mean[4], const float std[4],
                        const char *const *extra, int nextra, al_error *err)
{
    enum { MAXKV = 64 };
    const char *kv[2 * MAXKV];
    char buf[1024], ms[160], ss[160];
    int n = al_model_config_to_kv(&m->cfg, kv + 2, MAXKV - 3, buf, sizeof buf);
    if (n < 0 || n + 3 + nextra > MAXKV) return al_seterr(err, "%s: too much checkpoint metadata", al_path_short(path));
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
    uint64_t file_bytes = 0;
    int ntensors = 0;
    if (al_safetensors_read_info(path, &meta, &file_bytes, &ntensors, err) != AL_OK) return AL_ERR;
    al_model_config cfg;
    char *fmt = al_meta_get(meta, "format");
    int ok = fmt && !strcmp(fmt, "attnlab-image");
    free(fmt);
    if (!ok) { free(meta); return al_seterr(err, "%s: not an attnlab image-model checkpoint (metadata format is not attnlab-image)", al_path_short(path)); }
    if (al_model_config_from_meta(&cfg, meta, err) != AL_OK) { free(meta); return AL_ERR; }
    for (int i = 0; i < 4; i++) { mean[i] = 0.f; std[i] = 1.f; }
    if (meta_floats(path, meta, "mean", cfg.channels, 0, mean, err) != AL_OK ||
        meta_floats(path, meta, "std", cfg.channels, 1, std, err) != AL_OK) { free(meta); return AL_ERR; }
    /* The model the metadata describes must be the one the file's tensors hold: compare sizes BEFORE
     * allocating and initialising it (a few-KB file must not make us build a multi-GB model). */
    int64_t nparam = 0;
    if (al_model_config_params(&cfg, &nparam, err) != AL_OK) { free(meta); return AL_ERR; }
    if ((uint64_t)nparam * 4 != file_bytes) {
        char a[32], b[32], exact[64] = "";
        free(meta);
        al_bytes_str((uint64_t)nparam * 4, a); al_bytes_str(file_bytes, b);
        if (!strcmp(a, b)) snprintf(exact, sizeof exact, " (%llu bytes, not %llu)", (unsigned long long)file_bytes, (unsigned long long)nparam * 4);
        return al_seterr(err, "%s: checkpoint metadata describes a %s of %lld parameters (%s as F32) but the file's %d tensors hold %s%s",
                         al_path_short(path), cfg.name, (long long)nparam, a, ntensors, b, exact);
    }
    if (al_model_init(m, &cfg, 0, err) != AL_OK) { free(meta); return AL_ERR; }
    if (al_safetensors_load(path, &m->params, NULL, err) != AL_OK) { al_model_free(m); free(meta); return AL_ERR; }
    al_model_refresh(m);
    if (meta_out) *meta_out = meta; else free(meta);
    return AL_OK;
}

int al_image_run_canonical(char *buf, size_t n, const al_model_config *cfg, const char *dataset, long train_size,
                           int epochs, float lr, float wd, int batch, long seed)
{
    const char *kv[64];
    char vb[1024];
    int k = al_model_config_to_kv(cfg, kv, 32, vb, sizeof vb);
    int o = snprintf(buf, n, "task=image;data=%s;split=stratified;train_size=%ld;epochs=%d;lr=%.9g;wd=%.9g;batch=%d;optim=adamw;seed=%ld",
                     dataset, train_size, epochs, (double)lr, (double)wd, batch, seed);
    return al__canonical_append(buf, n, o, kv, k);
}
