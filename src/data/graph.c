/* graph.c — graph datasets (located by al_data_locate, locate.c): the text format reader (features.libsvm, edges.txt, *.idx),
 * training splits, adjacency with self-loops, GCN normalisation, random graphs for benchmarks. */
#include "attnlab/graph.h"
#include "data/graph_impl.h"
#include "attnlab/io.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int is_dir(const char *p) { struct stat st; return stat(p, &st) == 0 && S_ISDIR(st.st_mode); }

/* ---------------- reading text files (graph_impl.h) ---------------- */
al_status al_text_open_path(al_text *t, const char *path, al_error *err)
{
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", path);
    /* gzip or plain, decompressed within the budget; never a FIFO or a device (io.h) */
    return al_input_read_gz(t->path, AL_IN_STREAM, NULL, &t->buf, &t->len, err);
}
al_status al_text_open(al_text *t, const char *dir, const char *file, al_error *err)
{
    char p[sizeof t->path];
    snprintf(p, sizeof p, "%s/%s", dir, file);
    return al_text_open_path(t, p, err);
}
int64_t al_text_count_lines(const al_text *t)
{
    int64_t n = 0;
    for (const char *p = t->buf, *e = t->buf + t->len; (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++) n++;
    return n + (t->len > 0 && t->buf[t->len - 1] != '\n');
}
char *al_text_line(al_text *t)
{
    if (t->pos >= t->len) return NULL;
    char *s = t->buf + t->pos, *e = memchr(s, '\n', t->len - t->pos);
    if (e) { *e = 0; t->pos = (size_t)(e - t->buf) + 1; }
    else { e = t->buf + t->len; t->pos = t->len; }
    if (e > s && e[-1] == '\r') e[-1] = 0;
    t->line++;
    return s;
}
void al_text_close(al_text *t) { free(t->buf); t->buf = NULL; }

char *al_text_skip_ws(char *p) { while (*p == ' ' || *p == '\t') p++; return p; }
int al_text_int(char **pp, long *out, int sep)
{
    char *p = *pp, *e;
    if (!(*p == '-' || *p == '+' || (*p >= '0' && *p <= '9'))) return 0;
    errno = 0;
    long v = strtol(p, &e, 10);
    if (e == p || errno == ERANGE || v > INT_MAX || v < INT_MIN) return 0;
    if (!(*e == 0 || *e == ' ' || *e == '\t' || (sep && *e == sep))) return 0;
    *out = v; *pp = e;
    return 1;
}
const char *al_text_tok(const char *p, char *buf, size_t n)
{
    size_t i = 0;
    while (p[i] && p[i] != ' ' && p[i] != '\t' && p[i] != ',' && i + 1 < n) { buf[i] = p[i]; i++; }
    buf[i] = 0;
    if (i == 0) snprintf(buf, n, "(end of line)");
    return buf;
}

/* ---------------- building the adjacency ---------------- */
static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }

/* CSR with row = dst, columns = sorted distinct sources, self-loops dropped (graph_impl.h). */
al_status al_graph_build_adj(int n, const int *src, const int *dst, int64_t m, al_csr *adj, al_error *err)
{
    memset(adj, 0, sizeof *adj);
    adj->rows = adj->cols = n;
    adj->rowptr = calloc((size_t)n + 1, sizeof *adj->rowptr);
    int64_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!adj->rowptr || !fill) { free(fill); al_csr_free(adj); return al_seterr(err, "graph: out of memory"); }
    int64_t kept = 0;
    for (int64_t e = 0; e < m; e++) if (src[e] != dst[e]) { adj->rowptr[dst[e] + 1]++; kept++; }
    for (int i = 0; i < n; i++) adj->rowptr[i + 1] += adj->rowptr[i];
    adj->col = malloc((size_t)(kept > 0 ? kept : 1) * sizeof *adj->col);
    if (!adj->col) { free(fill); al_csr_free(adj); return al_seterr(err, "graph: out of memory"); }
    memcpy(fill, adj->rowptr, (size_t)(n + 1) * sizeof *fill);
    for (int64_t e = 0; e < m; e++) if (src[e] != dst[e]) adj->col[fill[dst[e]]++] = src[e];
    free(fill);
    /* sort and drop duplicates row by row, compacting in place */
    int64_t w = 0;
    for (int i = 0; i < n; i++) {
        int64_t a = adj->rowptr[i], b = adj->rowptr[i + 1];
        qsort(adj->col + a, (size_t)(b - a), sizeof(int), cmp_int);
        adj->rowptr[i] = w;
        for (int64_t k = a; k < b; k++)
            if (k == a || adj->col[k] != adj->col[k - 1]) adj->col[w++] = adj->col[k];
    }
    adj->rowptr[n] = w;
    adj->nnz = w;
    return AL_OK;
}

static void normalize_rows(al_csr *f)
{
    for (int i = 0; i < f->rows; i++) {
        double s = 0;
        for (int64_t k = f->rowptr[i]; k < f->rowptr[i + 1]; k++) s += f->val[k];
        if (s != 0)
            for (int64_t k = f->rowptr[i]; k < f->rowptr[i + 1]; k++) f->val[k] = (float)(f->val[k] / s);
    }
}

/* ---------------- the reader ---------------- */
uint64_t al__graph_feat_bytes(int64_t nodes, int64_t entries)
{
    return al_size_add(al_size_mul((uint64_t)nodes, sizeof(int) + sizeof(int64_t)), al_size_mul((uint64_t)entries, sizeof(int) + sizeof(float)));
}
uint64_t al__graph_layer_bytes(int64_t nfeat) { return al_size_mul((uint64_t)nfeat, 16 * 4 * sizeof(float)); }

static al_status read_features(al_graph *g, const char *dir, al_error *err)
{
    al_text t;
    if (al_text_open(&t, dir, "features.libsvm", err)) return AL_ERR;
    /* first pass: count lines and entries */
    int64_t lines = 0, entries = 0;
    for (size_t i = 0; i < t.len; i++) {
        if (t.buf[i] == '\n') lines++;
        if (t.buf[i] == ':') entries++;
    }
    if (t.len > 0 && t.buf[t.len - 1] != '\n') lines++;
    if (lines == 0) { al_seterr(err, "%s: empty file (no nodes)", al_path_short(t.path)); al_text_close(&t); return AL_ERR; }
    if (lines > INT_MAX) { al_seterr(err, "%s: too many lines", al_path_short(t.path)); al_text_close(&t); return AL_ERR; }
    /* Feature indices far beyond what the file stores would silently make every model's first layer
     * huge (and 2147483647 overflowed int sizes downstream): refuse them. */
    const int64_t feat_limit = entries * 64 > AL_GRAPH_FEAT_FLOOR ? entries * 64 : AL_GRAPH_FEAT_FLOOR;
    if (al_mem_check(al__graph_feat_bytes(lines, entries), err, "%s: %lld nodes with %lld feature entries", t.path, (long long)lines, (long long)entries)) {
        al_text_close(&t); return AL_ERR;
    }
    g->n = (int)lines;
    g->label = malloc((size_t)lines * sizeof *g->label);
    g->feat.rowptr = calloc((size_t)lines + 1, sizeof *g->feat.rowptr);
    g->feat.col = malloc((size_t)(entries > 0 ? entries : 1) * sizeof *g->feat.col);
    g->feat.val = malloc((size_t)(entries > 0 ? entries : 1) * sizeof *g->feat.val);
    if (!g->label || !g->feat.rowptr || !g->feat.col || !g->feat.val) {
        al_text_close(&t); return al_seterr(err, "%s: out of memory", al_path_short(t.path));
    }
    int64_t nnz = 0; long maxlab = -1, maxidx = 0;
    char *line, b[64];
    for (int i = 0; (line = al_text_line(&t)) != NULL; i++) {
        char *p = al_text_skip_ws(line);
        long lab;
        if (!*p) { al_seterr(err, "%s:%ld: empty line (expected LABEL IDX:VAL ...)", al_path_short(t.path), t.line); goto fail; }
        if (!al_text_int(&p, &lab, 0)) { al_seterr(err, "%s:%ld: label '%s' is not an integer", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        if (lab >= AL_GRAPH_MAX_CLASSES) { al_seterr(err, "%s:%ld: label %ld is absurd (limit %d classes)", al_path_short(t.path), t.line, lab, AL_GRAPH_MAX_CLASSES); goto fail; }
        if (lab < -1) { al_seterr(err, "%s:%ld: label %ld out of range (a class >= 0, or -1 for unlabelled)", al_path_short(t.path), t.line, lab); goto fail; }
        if (lab > maxlab) maxlab = lab;
        g->label[i] = (int)lab;
        long prev = 0;
        for (p = al_text_skip_ws(p); *p; p = al_text_skip_ws(p)) {
            char *q = p; long idx;
            if (!al_text_int(&q, &idx, ':') || *q != ':') {
                al_seterr(err, "%s:%ld: '%s' is not IDX:VAL", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail;
            }
            if (idx < 1) { al_seterr(err, "%s:%ld: feature index %ld out of range (indices start at 1)", al_path_short(t.path), t.line, idx); goto fail; }
            if (idx > feat_limit) {
                char a[32];
                al_seterr(err, "%s:%ld: feature index %ld is absurd for a file of %lld IDX:VAL entries (limit %lld, 64 per entry or %d): "
                          "every model's first layer would hold %ld x hidden weights (%s at 16 hidden units)", al_path_short(t.path), t.line, idx, (long long)entries, (long long)feat_limit, AL_GRAPH_FEAT_FLOOR, idx,
                          al_bytes_str(al_size_mul((uint64_t)idx, 16 * sizeof(float)), a));
                goto fail;
            }
            if (al_mem_check(al__graph_layer_bytes(idx), err,
                             "%s:%ld: feature index %ld (a first layer of %ld x 16 weights with gradients and AdamW moments)",
                             t.path, t.line, idx, idx))
                goto fail;
            if (idx <= prev) { al_seterr(err, "%s:%ld: feature index %ld not greater than the previous %ld (indices must increase)", al_path_short(t.path), t.line, idx, prev); goto fail; }
            char *v = q + 1, *e;
            errno = 0;
            float val = strtof(v, &e);
            if (e == v || (*e && *e != ' ' && *e != '\t') || errno == ERANGE || !isfinite(val)) {
                al_seterr(err, "%s:%ld: feature value '%s' is not a finite number", al_path_short(t.path), t.line, al_text_tok(v, b, sizeof b)); goto fail;
            }
            if (nnz >= entries) { al_seterr(err, "%s:%ld: internal count mismatch", al_path_short(t.path), t.line); goto fail; }
            g->feat.col[nnz] = (int)(idx - 1); g->feat.val[nnz] = val; nnz++;
            prev = idx; if (idx > maxidx) maxidx = idx;
            p = e;
        }
        g->feat.rowptr[i + 1] = nnz;
    }
    if (maxlab < 0) { al_seterr(err, "%s: no node has a label", al_path_short(t.path)); goto fail; }
    if (maxidx < 1) { al_seterr(err, "%s: no node has a feature", al_path_short(t.path)); goto fail; }
    g->nclass = (int)maxlab + 1;
    g->nfeat = (int)maxidx;
    g->feat.rows = g->n; g->feat.cols = g->nfeat; g->feat.nnz = nnz;
    al_text_close(&t);
    return AL_OK;
fail:
    al_text_close(&t);
    return AL_ERR;
}

static al_status read_edges(al_graph *g, const char *dir, al_error *err)
{
    al_text t;
    if (al_text_open(&t, dir, "edges.txt", err)) return AL_ERR;
    int64_t cap = 1;
    cap += al_text_count_lines(&t);
    int *src = malloc((size_t)cap * sizeof *src), *dst = malloc((size_t)cap * sizeof *dst);
    if (!src || !dst) { free(src); free(dst); al_text_close(&t); return al_seterr(err, "%s: out of memory", al_path_short(t.path)); }
    int64_t m = 0; char *line, b[64];
    while ((line = al_text_line(&t)) != NULL) {
        char *p = al_text_skip_ws(line);
        long s, d;
        if (!*p) { al_seterr(err, "%s:%ld: empty line (expected SRC DST)", al_path_short(t.path), t.line); goto fail; }
        if (!al_text_int(&p, &s, 0)) { al_seterr(err, "%s:%ld: source id '%s' is not an integer", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        p = al_text_skip_ws(p);
        if (!al_text_int(&p, &d, 0)) { al_seterr(err, "%s:%ld: destination id '%s' is not an integer", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        p = al_text_skip_ws(p);
        if (*p) { al_seterr(err, "%s:%ld: unexpected '%s' after SRC DST", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        if (s < 0 || s >= g->n) { al_seterr(err, "%s:%ld: node id %ld out of range [0, %d)", al_path_short(t.path), t.line, s, g->n); goto fail; }
        if (d < 0 || d >= g->n) { al_seterr(err, "%s:%ld: node id %ld out of range [0, %d)", al_path_short(t.path), t.line, d, g->n); goto fail; }
        src[m] = (int)s; dst[m] = (int)d; m++;
    }
    g->nedges_file = m;
    al_status st = al_graph_build_adj(g->n, src, dst, m, &g->adj, err);
    free(src); free(dst); al_text_close(&t);
    return st;
fail:
    free(src); free(dst); al_text_close(&t);
    return AL_ERR;
}

/* A split file; mark[node] receives which (1-based) split holds it, for overlap checks. */
static al_status read_split(al_graph *g, const char *dir, const char *file, int which, uint8_t *mark,
                            long *mark_line, int **out, int *count, al_error *err)
{
    static const char *names[] = {"", "train.idx", "val.idx", "test.idx"};
    al_text t;
    if (al_text_open(&t, dir, file, err)) return AL_ERR;
    int64_t cap = 1;
    cap += al_text_count_lines(&t);
    int *ids = malloc((size_t)cap * sizeof *ids);
    if (!ids) { al_text_close(&t); return al_seterr(err, "%s: out of memory", al_path_short(t.path)); }
    int k = 0; char *line, b[64];
    while ((line = al_text_line(&t)) != NULL) {
        char *p = al_text_skip_ws(line);
        long v;
        if (!*p) { al_seterr(err, "%s:%ld: empty line (expected a node id)", al_path_short(t.path), t.line); goto fail; }
        if (!al_text_int(&p, &v, 0)) { al_seterr(err, "%s:%ld: node id '%s' is not an integer", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        p = al_text_skip_ws(p);
        if (*p) { al_seterr(err, "%s:%ld: unexpected '%s' after the node id", al_path_short(t.path), t.line, al_text_tok(p, b, sizeof b)); goto fail; }
        if (v < 0 || v >= g->n) { al_seterr(err, "%s:%ld: node id %ld out of range [0, %d)", al_path_short(t.path), t.line, v, g->n); goto fail; }
        if (g->label[v] < 0) { al_seterr(err, "%s:%ld: node %ld has no label (-1 in features.libsvm)", al_path_short(t.path), t.line, v); goto fail; }
        if (mark[v] == which) { al_seterr(err, "%s:%ld: node %ld listed twice (first on line %ld)", al_path_short(t.path), t.line, v, mark_line[v]); goto fail; }
        if (mark[v]) { al_seterr(err, "%s:%ld: node %ld is also in %s (line %ld)", al_path_short(t.path), t.line, v, names[mark[v]], mark_line[v]); goto fail; }
        mark[v] = (uint8_t)which; mark_line[v] = t.line;
        ids[k++] = (int)v;
    }
    *out = ids; *count = k;
    al_text_close(&t);
    return AL_OK;
fail:
    free(ids); al_text_close(&t);
    return AL_ERR;
}

al_status al_graph_load(al_graph *g, const char *dir, int normalize, al_error *err)
{
    memset(g, 0, sizeof *g);
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    snprintf(g->name, sizeof g->name, "%s", base);
    /* a trailing slash: take the component before it */
    size_t L = strlen(dir);
    if (L > 1 && dir[L - 1] == '/') {
        char tmp[4200]; snprintf(tmp, sizeof tmp, "%s", dir);
        tmp[strlen(tmp) - 1] = 0;
        const char *b2 = strrchr(tmp, '/');
        snprintf(g->name, sizeof g->name, "%s", b2 ? b2 + 1 : tmp);
    }
    if (!is_dir(dir)) return al_seterr(err, "graph: %s: no such directory", dir);
    if (read_features(g, dir, err) || read_edges(g, dir, err)) { al_graph_free(g); return AL_ERR; }
    uint8_t *mark = calloc((size_t)g->n, 1);
    long *mline = calloc((size_t)g->n, sizeof *mline);
    if (!mark || !mline) { free(mark); free(mline); al_graph_free(g); return al_seterr(err, "graph: out of memory"); }
    al_status st = AL_OK;
    if (read_split(g, dir, "train.idx", 1, mark, mline, &g->train, &g->ntrain, err) ||
        read_split(g, dir, "val.idx", 2, mark, mline, &g->val, &g->nval, err) ||
        read_split(g, dir, "test.idx", 3, mark, mline, &g->test, &g->ntest, err)) st = AL_ERR;
    free(mark); free(mline);
    if (st == AL_OK && (g->ntrain == 0 || g->nval == 0 || g->ntest == 0))
        st = al_seterr(err, "%s: %s is empty", dir, g->ntrain == 0 ? "train.idx" : g->nval == 0 ? "val.idx" : "test.idx");
    if (st) { al_graph_free(g); return AL_ERR; }
    if (normalize) normalize_rows(&g->feat);
    return AL_OK;
}

void al_graph_free(al_graph *g)
{
    al_csr_free(&g->feat); al_csr_free(&g->adj);
    free(g->label); free(g->train); free(g->val); free(g->test);
    g->label = g->train = g->val = g->test = NULL;
    g->ntrain = g->nval = g->ntest = 0;
}

/* ---------------- splits ---------------- */
/* Labelled nodes outside val and test, shuffled. */
static int *candidates(const al_graph *g, uint64_t seed, int *count, al_error *err)
{
    uint8_t *held = calloc((size_t)g->n, 1);
    int *c = malloc((size_t)g->n * sizeof *c);
    if (!held || !c) { free(held); free(c); al_seterr(err, "graph: out of memory"); return NULL; }
    for (int i = 0; i < g->nval; i++) held[g->val[i]] = 1;
    for (int i = 0; i < g->ntest; i++) held[g->test[i]] = 1;
    int k = 0;
    for (int i = 0; i < g->n; i++) if (g->label[i] >= 0 && !held[i]) c[k++] = i;
    free(held);
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    al_rng_shuffle(&r, c, k);
    *count = k;
    return c;
}

al_status al_graph_split_per_class(al_graph *g, int per_class, uint64_t seed, al_error *err)
{
    if (per_class < 1) return al_seterr(err, "graph: labels per class must be >= 1, got %d", per_class);
    int k;
    int *c = candidates(g, seed, &k, err);
    if (!c) return AL_ERR;
    int *taken = calloc((size_t)g->nclass, sizeof *taken), *tr = malloc((size_t)(k > 0 ? k : 1) * sizeof *tr);
    if (!taken || !tr) { free(c); free(taken); free(tr); return al_seterr(err, "graph: out of memory"); }
    int nt = 0;
    for (int i = 0; i < k; i++) { int y = g->label[c[i]]; if (taken[y] < per_class) { taken[y]++; tr[nt++] = c[i]; } }
    free(c); free(taken);
    if (nt == 0) { free(tr); return al_seterr(err, "graph: no labelled node outside val and test"); }
    qsort(tr, (size_t)nt, sizeof *tr, cmp_int);
    free(g->train); g->train = tr; g->ntrain = nt;
    return AL_OK;
}

al_status al_graph_split_frac(al_graph *g, double frac, uint64_t seed, al_error *err)
{
    if (!(frac > 0 && frac <= 1)) return al_seterr(err, "graph: train fraction must be in (0, 1], got %g", frac);
    int k;
    int *c = candidates(g, seed, &k, err);
    if (!c) return AL_ERR;
    if (k == 0) { free(c); return al_seterr(err, "graph: no labelled node outside val and test"); }
    int nt = (int)lround(frac * k);
    if (nt < 1) nt = 1;
    qsort(c, (size_t)nt, sizeof *c, cmp_int);
    free(g->train); g->train = c; g->ntrain = nt;
    return AL_OK;
}

/* ---------------- derived matrices ---------------- */
al_status al_graph_adj_self_loops(const al_graph *g, al_csr *out, al_error *err)
{
    const al_csr *a = &g->adj;
    memset(out, 0, sizeof *out);
    out->rows = out->cols = g->n; out->nnz = a->nnz + g->n;
    out->rowptr = malloc(((size_t)g->n + 1) * sizeof *out->rowptr);
    out->col = malloc((size_t)out->nnz * sizeof *out->col);
    if (!out->rowptr || !out->col) { al_csr_free(out); return al_seterr(err, "graph: out of memory for the adjacency"); }
    int64_t w = 0;
    for (int i = 0; i < g->n; i++) {
        out->rowptr[i] = w;
        int self = 0;
        for (int64_t k = a->rowptr[i]; k < a->rowptr[i + 1]; k++) {
            if (!self && a->col[k] > i) { out->col[w++] = i; self = 1; }
            out->col[w++] = a->col[k];
        }
        if (!self) out->col[w++] = i;
    }
    out->rowptr[g->n] = w;
    return AL_OK;
}

al_status al_graph_gcn_norm(const al_graph *g, al_csr *out, al_error *err)
{
    if (al_graph_adj_self_loops(g, out, err)) return AL_ERR;
    out->val = malloc((size_t)out->nnz * sizeof *out->val);
    double *dinv = malloc((size_t)g->n * sizeof *dinv);
    if (!out->val || !dinv) { free(dinv); al_csr_free(out); return al_seterr(err, "graph: out of memory for the GCN matrix"); }
    for (int i = 0; i < g->n; i++) dinv[i] = 1.0 / sqrt((double)(out->rowptr[i + 1] - out->rowptr[i]));
    for (int i = 0; i < g->n; i++)
        for (int64_t k = out->rowptr[i]; k < out->rowptr[i + 1]; k++)
            out->val[k] = (float)(dinv[i] * dinv[out->col[k]]);
    free(dinv);
    return AL_OK;
}

/* ---------------- random graphs ---------------- */
al_status al_graph_random(al_graph *g, int n, int64_t m, int nfeat, int nclass, uint64_t seed, al_error *err)
{
    memset(g, 0, sizeof *g);
    if (n < 10 || m < 0 || nfeat < 1 || nclass < 2)
        return al_seterr(err, "graph: random graph needs n >= 10, m >= 0, nfeat >= 1, nclass >= 2");
    snprintf(g->name, sizeof g->name, "random-%d-%lld", n, (long long)m);
    g->n = n; g->nfeat = nfeat; g->nclass = nclass;
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    /* edges: draw, then top up until m distinct non-loop edges exist */
    int64_t want = m;
    int *src = malloc((size_t)(want > 0 ? want : 1) * sizeof *src), *dst = malloc((size_t)(want > 0 ? want : 1) * sizeof *dst);
    if (!src || !dst) { free(src); free(dst); return al_seterr(err, "graph: out of memory"); }
    int64_t have = 0;
    for (int round = 0; round < 20 && have < want; round++) {
        int64_t k = have;
        al_csr_free(&g->adj);
        /* keep the distinct edges found so far, add fresh ones */
        for (int64_t e = k; e < want; e++) { src[e] = (int)al_rng_below(&r, (uint32_t)n); dst[e] = (int)al_rng_below(&r, (uint32_t)n); }
        if (al_graph_build_adj(n, src, dst, want, &g->adj, err)) { free(src); free(dst); return AL_ERR; }
        have = 0;
        for (int i = 0; i < n; i++)
            for (int64_t q = g->adj.rowptr[i]; q < g->adj.rowptr[i + 1]; q++) { src[have] = g->adj.col[q]; dst[have] = i; have++; }
    }
    free(src); free(dst);
    g->nedges_file = g->adj.nnz;
    /* features: all nfeat columns per row, uniform in [0, 1), row-normalised */
    g->feat.rows = n; g->feat.cols = nfeat; g->feat.nnz = (int64_t)n * nfeat;
    g->feat.rowptr = malloc(((size_t)n + 1) * sizeof *g->feat.rowptr);
    g->feat.col = malloc((size_t)g->feat.nnz * sizeof *g->feat.col);
    g->feat.val = malloc((size_t)g->feat.nnz * sizeof *g->feat.val);
    g->label = malloc((size_t)n * sizeof *g->label);
    int *perm = malloc((size_t)n * sizeof *perm);
    if (!g->feat.rowptr || !g->feat.col || !g->feat.val || !g->label || !perm) {
        free(perm); al_graph_free(g); return al_seterr(err, "graph: out of memory");
    }
    for (int i = 0; i <= n; i++) g->feat.rowptr[i] = (int64_t)i * nfeat;
    for (int64_t k = 0; k < g->feat.nnz; k++) { g->feat.col[k] = (int)(k % nfeat); g->feat.val[k] = al_rng_uniform(&r); }
    normalize_rows(&g->feat);
    for (int i = 0; i < n; i++) { g->label[i] = (int)al_rng_below(&r, (uint32_t)nclass); perm[i] = i; }
    al_rng_shuffle(&r, perm, n);
    int part = n / 10;
    g->train = malloc((size_t)part * sizeof(int)); g->val = malloc((size_t)part * sizeof(int)); g->test = malloc((size_t)part * sizeof(int));
    if (!g->train || !g->val || !g->test) { free(perm); al_graph_free(g); return al_seterr(err, "graph: out of memory"); }
    memcpy(g->train, perm, (size_t)part * sizeof(int));
    memcpy(g->val, perm + part, (size_t)part * sizeof(int));
    memcpy(g->test, perm + 2 * part, (size_t)part * sizeof(int));
    g->ntrain = g->nval = g->ntest = part;
    free(perm);
    return AL_OK;
}
