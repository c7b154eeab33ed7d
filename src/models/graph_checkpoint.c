/* graph_checkpoint.c — a graph model's checkpoint: al_gnn_save writes it (the weights, and in
 * __metadata__ what rebuilds the model), al_gnn_load rebuilds the model from it: the model and heads from __metadata__, the hidden width from the shape
 * of layer1.bias (heads x hidden), then every tensor by name and shape. */
#include "attnlab/gnn.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Number of values of tensor `name` in the safetensors header of path, or -1 (with a message). */
static int64_t tensor_numel(const char *path, const char *name, al_error *err)
{
    al_input in;
    if (al_input_open(&in, path, 0, "checkpoint", err) != AL_OK) return -1;
    int fd = in.fd;
    unsigned char lb[8];
    uint64_t hl = 0;
    char *text = NULL;
    int64_t n = -1;
    if (al_pread_all(fd, lb, 8, 0) == 0) for (int k = 7; k >= 0; k--) hl = hl << 8 | lb[k];
    if (hl >= 2 && hl <= (1u << 26) && (text = malloc(hl + 1)) && al_pread_all(fd, text, hl, 8) == 0) {
        char jerr[200];
        al_jval *root = al_json_parse(text, hl, jerr, sizeof jerr);
        const al_jval *t = root ? al_json_get(root, name) : NULL, *sh = t ? al_json_get(t, "shape") : NULL;
        if (sh && sh->t == AL_J_ARR) {
            n = 1;   /* a forged shape ([2^40, 2^40]) must not overflow the product */
            for (int k = 0; k < sh->n && n > 0; k++) {
                const al_jval *d = sh->kids[k];
                n = d->t == AL_J_NUM && d->is_int && d->i >= 0 && d->i <= INT32_MAX && n <= INT32_MAX / (d->i > 0 ? d->i : 1) ? n * d->i : -1;
            }
        }
        al_json_free(root);
    }
    free(text);
    close(fd);
    if (n < 1) al_seterr(err, "%s: no tensor '%s' with a valid shape (not a graph checkpoint?)", path, name);
    return n;
}

static int meta_int(const char *meta, const char *key, int dflt)
{
    char *v = al_meta_get(meta, key);
    int x = v ? atoi(v) : dflt;
    free(v);
    return x;
}

al_status al_gnn_save(const char *path, const al_gnn *m, const al_graph *g, const char *const *kv_extra, int n_extra,
                      al_error *err)
{
    char v[5][32];
    snprintf(v[0], 32, "%d", g->ntrain); snprintf(v[1], 32, "%d", g->n); snprintf(v[2], 32, "%d", g->nfeat);
    snprintf(v[3], 32, "%d", g->nclass); snprintf(v[4], 32, "%d", m->cfg.heads);
    /* NULL: the caller's (kv_extra) */
    const char *kv[] = {"format", "attnlab-graph", "task", "graph", "dataset", g->name, "model", al_gnn_kind_name(m->cfg.kind),
                        "split", NULL,
                        "train_size", v[0], "seed", NULL, "best_epoch", NULL, "test_acc", NULL,
                        "nodes", v[1], "features", v[2], "classes", v[3], "heads", v[4], "run_id", NULL};
    return al__safetensors_save_merged(path, &m->params, kv, (int)(sizeof kv / sizeof *kv / 2), kv_extra, n_extra, err);
}

al_status al_gnn_load(const char *path, const al_graph *g, al_gnn *m, char **meta_out, al_error *err)
{
    memset(m, 0, sizeof *m);
    char *meta = NULL, *task = NULL, *model = NULL;
    al_status st = al_safetensors_read_meta(path, &meta, err);
    if (st == AL_OK) {
        task = al_meta_get(meta, "task"); model = al_meta_get(meta, "model");
        if (!task || strcmp(task, "graph") || !model) st = al_seterr(err, "%s: not a graph checkpoint (its metadata has task %s)", path, task ? task : "none");
    }
    al_gnn_kind kind;
    al_gnn_config cfg;
    if (st == AL_OK) st = al_gnn_kind_parse(model, &kind, err);
    if (st == AL_OK) {
        al_gnn_config_default(&cfg, al_gnn_kind_name(kind), NULL);
        cfg.heads = meta_int(meta, "heads", cfg.heads);
        int F = meta_int(meta, "features", g->nfeat), C = meta_int(meta, "classes", g->nclass);
        if (F != g->nfeat || C != g->nclass)
            st = al_seterr(err, "%s: the model takes %d features and %d classes, but %s has %d and %d", path, F, C,
                           g->name, g->nfeat, g->nclass);
    }
    if (st == AL_OK) {
        int64_t hb = tensor_numel(path, "layer1.bias", err);
        if (hb < 1 || cfg.heads < 1 || hb % cfg.heads) st = hb < 1 ? AL_ERR : al_seterr(err, "%s: layer1.bias has %lld values, not a multiple of %d heads", path, (long long)hb, cfg.heads);
        else cfg.hidden = (int)(hb / cfg.heads);
    }
    if (st == AL_OK && (st = al_gnn_init(m, &cfg, g, 0, err)) == AL_OK && (st = al_safetensors_load(path, &m->params, NULL, err)) != AL_OK)
        al_gnn_free(m);
    free(task); free(model);
    if (st == AL_OK && meta_out) *meta_out = meta;
    else free(meta);
    return st;
}
