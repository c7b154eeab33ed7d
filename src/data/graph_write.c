/* graph_write.c — write an al_graph as an attnlab graph directory (every file atomic), and the
 * import command's library half: read (graph_import.c), write, read back (graph.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "attnlab/io.h"
#include "attnlab/graph_import.h"
#include "data/graph_impl.h"
#include "io/io_impl.h"

/* dir/name ← the buffer, atomically; frees the buffer. */
static al_status put(const char *dir, const char *name, al_sbuf *b, al_error *err)
{
    char path[4200];
    int k = snprintf(path, sizeof path, "%s/%s", dir, name);
    al_status st = k < 0 || (size_t)k >= sizeof path ? al_seterr(err, "%s/%s: path too long", dir, name)
                 : b->oom ? al_seterr(err, "%s: out of memory", path)
                 : al_write_atomic(path, b->p ? b->p : "", b->n, err);
    free(b->p);
    memset(b, 0, sizeof *b);
    return st;
}

static al_status put_ids(const char *dir, const char *name, const int *ids, int n, al_error *err)
{
    al_sbuf b = {0};
    for (int i = 0; i < n; i++) al_sb_printf(&b, "%d\n", ids[i]);
    return put(dir, name, &b, err);
}

al_status al_graph_write(const al_graph *g, const char *dir, const char *const *classes, al_error *err)
{
    al_sbuf b = {0};
    for (int i = 0; i < g->n; i++) {
        al_sb_printf(&b, "%d", g->label[i]);
        for (int64_t k = g->feat.rowptr[i]; k < g->feat.rowptr[i + 1]; k++)
            if (g->feat.val[k] != 0) al_sb_printf(&b, " %d:%.9g", g->feat.col[k] + 1, (double)g->feat.val[k]);
        al_sb_put(&b, "\n", 1);
    }
    if (put(dir, "features.libsvm", &b, err)) return AL_ERR;
    /* adj row i = the sources of i; the graph is symmetric, so they are also i's destinations */
    for (int i = 0; i < g->n; i++)
        for (int64_t k = g->adj.rowptr[i]; k < g->adj.rowptr[i + 1]; k++) al_sb_printf(&b, "%d %d\n", i, g->adj.col[k]);
    if (put(dir, "edges.txt", &b, err)) return AL_ERR;
    if (put_ids(dir, "train.idx", g->train, g->ntrain, err) || put_ids(dir, "val.idx", g->val, g->nval, err) ||
        put_ids(dir, "test.idx", g->test, g->ntest, err))
        return AL_ERR;
    if (!classes) return AL_OK;
    for (int c = 0; c < g->nclass; c++) al_sb_printf(&b, "%s\n", classes[c]);
    return put(dir, "classes.txt", &b, err);
}

/* mkdir -p */
static al_status make_dirs(const char *dir, al_error *err)
{
    char p[4096];
    if (snprintf(p, sizeof p, "%s", dir) >= (int)sizeof p) return al_seterr(err, "%s: path too long", dir);
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        struct stat st;
        if (mkdir(p, 0777) && errno != EEXIST) return al_seterr(err, "%s: cannot create: %s", p, strerror(errno));
        if (stat(p, &st) || !S_ISDIR(st.st_mode)) return al_seterr(err, "%s: not a directory", p);
        if (!(*s = c)) break;
    }
    return AL_OK;
}

/* Before anything is written: the files of g, and reading them back, fit the memory budget. The
 * texts are bounded from above (a label or id of 11 characters, a feature " IDX:VALUE" of 28). */
static al_status import_fits(const al_graph *g, const char *out, al_error *err)
{
    const uint64_t feat_text = al_size_add(al_size_mul((uint64_t)g->n, 12), al_size_mul((uint64_t)g->feat.nnz, 28));
    const uint64_t edge_text = al_size_mul((uint64_t)g->adj.nnz, 22);
    if (al_mem_check(al_size_add(feat_text, al__graph_feat_bytes(g->n, g->feat.nnz)), err,
                     "%s: features.libsvm of %d nodes with %lld feature entries", out, g->n, (long long)g->feat.nnz))
        return AL_ERR;
    int64_t nfeat = 0;   /* as the reader counts them: the largest index of a stored (non-zero) value */
    for (int64_t k = 0; k < g->feat.nnz; k++) if (g->feat.val[k] != 0 && g->feat.col[k] + 1 > nfeat) nfeat = g->feat.col[k] + 1;
    if (al_mem_check(al__graph_layer_bytes(nfeat), err, "%s: %lld features (a first layer of %lld x 16 weights with gradients and AdamW moments)",
                     out, (long long)nfeat, (long long)nfeat))
        return AL_ERR;
    return al_mem_check(al_size_add(edge_text, al_size_mul((uint64_t)g->adj.nnz, 2 * sizeof(int))), err,
                        "%s: edges.txt of %lld edges", out, (long long)g->adj.nnz);
}

al_status al_graph_import(const al_import_opts *o, al_import_stats *st, al_error *err)
{
    al_graph g;
    char **classes = NULL;
    al_status s = al_graph_import_read(o, &g, &classes, st, err);
    if (s == AL_OK) s = import_fits(&g, o->out, err);
    if (s == AL_OK) s = make_dirs(o->out, err);
    if (s == AL_OK) s = al_graph_write(&g, o->out, (const char *const *)classes, err);
    al_import_classes_free(classes, g.nclass);
    al_graph_free(&g);
    if (s != AL_OK) return s;
    if (al_graph_load(&g, o->out, 0, err)) return AL_ERR;   /* what train will read */
    al_graph_free(&g);
    return AL_OK;
}
