/* seq_checkpoint.c — sequence and speech checkpoints (seq.h): the model's configuration as metadata
 * pairs and back, the run's canonical description (its run id), the featurizer's vocabularies
 * (sequences) or the front end's options (speech) in metadata, every tensor through safetensors. */
#include "attnlab/seq.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- checkpoints ---------------- */
#define SEQ_FORMAT "attnlab-sequence"
#define MAXKV 48

/* The configuration as (key, value) pairs; values in buf. Returns the count or -1. */
static int seq_config_kv(const al_seq_config *g, const char **kv, int max, char *buf, size_t bufsize)
{
    al_kvb b = {kv, max, 0, buf, bufsize, 0};
    if (g->feat_dim > 0) { al__kv(&b, "feat_dim", "%d", g->feat_dim); al__kv(&b, "subsample", "%d", g->subsample > 1 ? g->subsample : 1); }
    al__kv(&b, "model", "%s", g->name);
    al__kv(&b, "nwords", "%d", g->nwords); al__kv(&b, "nsuffixes", "%d", g->nsuffixes); al__kv(&b, "tags", "%d", g->tags);
    al__kv(&b, "word_dim", "%d", g->word_dim); al__kv(&b, "suffix_dim", "%d", g->suffix_dim); al__kv(&b, "dim", "%d", g->dim);
    al__kv(&b, "hidden", "%d", g->hidden); al__kv(&b, "window", "%d", g->window); al__kv(&b, "depth", "%d", g->depth);
    al__kv(&b, "heads", "%d", g->heads); al__kv(&b, "bidirectional", "%d", g->bidirectional);
    al__kv(&b, "pos", "%s", al_pos_name(g->pos)); al__kv(&b, "score", "%s", al_score_name(g->score));
    al__kv(&b, "norm", "%s", al_norm_name(g->norm));
    al__kv(&b, "max_len", "%d", g->max_len);
    return b.n;
}

/* "HEAD;train_size=…;…;seed=…" then the model configuration's pairs: the canonical description of a
 * sequence or speech run (for al_run_id). */
static int run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *head, long train_size, int epochs,
                         float lr, float wd, int batch, long seed)
{
    const char *kv[2 * 32];
    char vb[1024];
    int k = seq_config_kv(cfg, kv, 32, vb, sizeof vb);
    int o = snprintf(buf, n, "%s;train_size=%ld;epochs=%d;lr=%.9g;wd=%.9g;batch=%d;optim=adamw;seed=%ld",
                     head, train_size, epochs, (double)lr, (double)wd, batch, seed);
    return al__canonical_append(buf, n, o, kv, k);
}

int al_seq_run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *dataset, long train_size,
                         int epochs, float lr, float wd, int batch, long seed)
{
    char head[8192];
    snprintf(head, sizeof head, "task=sequence;data=%s", dataset);
    return run_canonical(buf, n, cfg, head, train_size, epochs, lr, wd, batch, seed);
}

al_status al_seq_save(const char *path, const al_seq_model *m, const al_featurizer *fz,
                      const char *const *extra, int nextra, al_error *err)
{
    const char *kv[2 * MAXKV];
    char buf[2048];
    kv[0] = "format"; kv[1] = SEQ_FORMAT;
    int n = seq_config_kv(&m->cfg, kv + 2, MAXKV - 2, buf, sizeof buf);
    if (n < 0 || n + 2 + nextra > MAXKV) return al_seterr(err, "%s: too much checkpoint metadata", path);
    n++;
    char *vocab = NULL; size_t vlen;
    if (al_feat_save(fz, &vocab, &vlen, err) != AL_OK) return AL_ERR;
    kv[2 * n] = "vocab"; kv[2 * n + 1] = vocab; n++;
    for (int i = 0; i < nextra; i++, n++) { kv[2 * n] = extra[2 * i]; kv[2 * n + 1] = extra[2 * i + 1]; }
    al_status st = al_safetensors_save(path, &m->params, kv, n, err);
    free(vocab);
    return st;
}

static int meta_int(const char *meta, const char *key, int *out)
{
    char *v = al_meta_get(meta, key);
    if (!v) return -1;
    char *end; long x = strtol(v, &end, 10);
    int bad = end == v || *end || x < -1000000000L || x > 1000000000L;
    free(v);
    if (bad) return -1;
    *out = (int)x;
    return 0;
}

/* The model configuration in a checkpoint's metadata (both formats) into *g; AL_ERR naming path. */
static al_status seq_config_from_meta(const char *meta, const char *path, al_seq_config *g, al_error *err)
{
    char *name = al_meta_get(meta, "model");
    char *pos = al_meta_get(meta, "pos"), *score = al_meta_get(meta, "score"), *norm = al_meta_get(meta, "norm");
    char *fd = al_meta_get(meta, "feat_dim");
    al_status st = AL_ERR;
    if (al_seq_config_default(g, name, 2, 2, AL_UPOS_N, err) != AL_OK) goto out;
    if (meta_int(meta, "nwords", &g->nwords) || meta_int(meta, "nsuffixes", &g->nsuffixes) || meta_int(meta, "tags", &g->tags) ||
        meta_int(meta, "word_dim", &g->word_dim) || meta_int(meta, "suffix_dim", &g->suffix_dim) || meta_int(meta, "dim", &g->dim) ||
        meta_int(meta, "hidden", &g->hidden) || meta_int(meta, "window", &g->window) || meta_int(meta, "depth", &g->depth) ||
        meta_int(meta, "heads", &g->heads) || meta_int(meta, "bidirectional", &g->bidirectional) || meta_int(meta, "max_len", &g->max_len) ||
        (fd && (meta_int(meta, "feat_dim", &g->feat_dim) || meta_int(meta, "subsample", &g->subsample))) ||
        !pos || al_pos_parse(pos, &g->pos) || !score || al_score_parse(score, &g->score) || !norm || al_norm_parse(norm, &g->norm)) {
        al_seterr(err, "%s: missing or bad model configuration in the metadata", path);
        goto out;
    }
    st = AL_OK;
out:
    free(name); free(pos); free(score); free(norm); free(fd);
    return st;
}

al_status al_seq_load(const char *path, al_seq_model *m, al_featurizer *fz, char **meta_out, al_error *err)
{
    memset(m, 0, sizeof *m);
    memset(fz, 0, sizeof *fz);
    if (meta_out) *meta_out = NULL;
    char *meta = NULL;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return AL_ERR;
    char *fmt = al_meta_get(meta, "format");
    char *vocab = al_meta_get(meta, "vocab");
    al_seq_config g;
    al_status st = AL_ERR;
    if (!fmt || strcmp(fmt, SEQ_FORMAT)) { al_seterr(err, "%s: not an attnlab sequence-model checkpoint (metadata format is not " SEQ_FORMAT ")", path); goto out; }
    if (seq_config_from_meta(meta, path, &g, err) != AL_OK) goto out;
    if (g.feat_dim > 0) { al_seterr(err, "%s: a model of frames, not words", path); goto out; }
    if (!vocab) { al_seterr(err, "%s: no vocabularies (\"vocab\") in the metadata", path); goto out; }
    if (al_feat_load(vocab, strlen(vocab), fz, err) != AL_OK) goto out;
    if (al_feat_nwords(fz) != g.nwords || al_feat_nsuffixes(fz) != g.nsuffixes) {
        al_seterr(err, "%s: vocabularies (%d words, %d suffixes) do not match the model (%d, %d)", path,
                  al_feat_nwords(fz), al_feat_nsuffixes(fz), g.nwords, g.nsuffixes);
        goto out;
    }
    if (al_seq_init(m, &g, 0, err) != AL_OK) goto out;
    if (al_safetensors_load(path, &m->params, NULL, err) != AL_OK) { al_seq_free(m); goto out; }
    st = AL_OK;
out:
    if (st != AL_OK) al_feat_free(fz);
    free(fmt); free(vocab);
    if (st == AL_OK && meta_out) *meta_out = meta; else free(meta);
    return st;
}

int al_speech_run_canonical(char *buf, size_t n, const al_seq_config *cfg, const char *what, long train_size,
                            int epochs, float lr, float wd, int batch, long seed)
{
    char head[8192];
    snprintf(head, sizeof head, "task=speech;%s", what);
    return run_canonical(buf, n, cfg, head, train_size, epochs, lr, wd, batch, seed);
}

/* ---------------- checkpoints ---------------- */
#define SPEECH_FORMAT "attnlab-speech"

al_status al_speech_save(const char *path, const al_seq_model *m, const al_speech_opts *o, const al_speech_data *d,
                         const char *const *extra, int nextra, al_error *err)
{
    const char *kv[2 * MAXKV];
    char buf[2048];
    kv[0] = "format"; kv[1] = SPEECH_FORMAT;
    int n = seq_config_kv(&m->cfg, kv + 2, MAXKV - 6, buf, sizeof buf);
    if (n < 0 || n + 5 + nextra > MAXKV) return al_seterr(err, "%s: too much checkpoint metadata", path);
    n++;
    size_t nb = 1;
    for (int i = 0; i < d->classes; i++) nb += strlen(d->class_names[i]) + 1;
    char *names = malloc(nb);
    if (!names) return al_seterr(err, "%s: out of memory", path);
    size_t p = 0;
    for (int i = 0; i < d->classes; i++) p += (size_t)sprintf(names + p, i ? "\n%s" : "%s", d->class_names[i]);
    names[p] = 0;
    kv[2 * n] = "features"; kv[2 * n + 1] = al_speech_features_name(o->features); n++;
    kv[2 * n] = "cmvn"; kv[2 * n + 1] = o->cmvn ? "1" : "0"; n++;
    kv[2 * n] = "framewise"; kv[2 * n + 1] = d->framewise ? "1" : "0"; n++;
    kv[2 * n] = "class_names"; kv[2 * n + 1] = names; n++;
    for (int i = 0; i < nextra; i++, n++) { kv[2 * n] = extra[2 * i]; kv[2 * n + 1] = extra[2 * i + 1]; }
    al_status st = al_safetensors_save(path, &m->params, kv, n, err);
    free(names);
    return st;
}

al_status al_speech_load(const char *path, al_seq_model *m, al_speech_opts *o, char **meta_out, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (meta_out) *meta_out = NULL;
    char *meta = NULL;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return AL_ERR;
    char *fmt = al_meta_get(meta, "format"), *feat = al_meta_get(meta, "features"), *cmvn = al_meta_get(meta, "cmvn");
    al_seq_config g;
    al_status st = AL_ERR;
    if (!fmt || strcmp(fmt, SPEECH_FORMAT)) { al_seterr(err, "%s: not an attnlab speech checkpoint (metadata format is not " SPEECH_FORMAT ")", path); goto out; }
    if (seq_config_from_meta(meta, path, &g, err) != AL_OK) goto out;
    if (!feat || al_speech_features_parse(feat, &o->features, err) != AL_OK || !cmvn || (strcmp(cmvn, "0") && strcmp(cmvn, "1"))) {
        al_seterr(err, "%s: missing or bad front end (features, cmvn) in the metadata", path);
        goto out;
    }
    o->cmvn = cmvn[0] == '1';
    if (g.feat_dim != (o->features == AL_SPEECH_FBANK ? 80 : 39)) { al_seterr(err, "%s: feat_dim %d does not fit features %s", path, g.feat_dim, feat); goto out; }
    if (al_seq_init(m, &g, 0, err) != AL_OK) goto out;
    if (al_safetensors_load(path, &m->params, NULL, err) != AL_OK) { al_seq_free(m); goto out; }
    st = AL_OK;
out:
    free(fmt); free(feat); free(cmvn);
    if (st == AL_OK && meta_out) *meta_out = meta; else free(meta);
    return st;
}
