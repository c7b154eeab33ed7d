/* graph_import.c — read graphs in the formats they are distributed in (LINQS .content/.cites, OGB CSV)
 * into an al_graph: ids mapped, edges symmetrised and cleaned, the split given or drawn (graph_import.h).
 * Writing the directory is src/data/graph_write.c. */
#include "attnlab/graph_import.h"
#include "data/graph_impl.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int is_file(const char *p) { struct stat s; return stat(p, &s) == 0 && S_ISREG(s.st_mode); }
static int is_dir(const char *p) { struct stat s; return stat(p, &s) == 0 && S_ISDIR(s.st_mode); }
/* a "/" b into out; 0, or -1 if it does not fit. */
static int join(char *out, size_t n, const char *a, const char *b)
{
    int k = snprintf(out, n, "%s/%s", a, b);
    return k < 0 || (size_t)k >= n ? -1 : 0;
}
static int is_sep(char c) { return c == ' ' || c == '\t'; }
static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* ---------------- growable edge list (both directions) ---------------- */
typedef struct edges { int *src, *dst; int64_t n, cap; } edges;
static int edges_add(edges *e, int a, int b)
{
    if (e->n + 2 > e->cap) {
        int64_t cap = e->cap ? e->cap * 2 : 1024;
        int *s = realloc(e->src, (size_t)cap * sizeof *s);
        if (s) e->src = s;
        int *d = realloc(e->dst, (size_t)cap * sizeof *d);
        if (d) e->dst = d;
        if (!s || !d) return -1;
        e->cap = cap;
    }
    e->src[e->n] = a; e->dst[e->n] = b; e->n++;
    e->src[e->n] = b; e->dst[e->n] = a; e->n++;
    return 0;
}
static void edges_free(edges *e) { free(e->src); free(e->dst); memset(e, 0, sizeof *e); }

/* Lines of an opened file: nonzero, and within the budget for `per` entries per line. */
static al_status check_rows(const al_text *t, int64_t rows, int64_t per, const char *what, al_error *err)
{
    if (rows == 0) return al_seterr(err, "%s:1: empty file (expected %s)", t->path, what);
    if (rows >= INT_MAX || (per > 0 && rows > AL_IMPORT_MAX_ENTRIES / per))
        return al_seterr(err, "%s: %lld rows of %lld entries exceed the budget of %lld entries", t->path,
                         (long long)rows, (long long)per, (long long)AL_IMPORT_MAX_ENTRIES);
    return AL_OK;
}

/* Allocate g's label, rowptr and room for cap feature entries. */
static al_status alloc_nodes(al_graph *g, int n, int64_t cap, al_error *err)
{
    g->n = n;
    g->label = malloc((size_t)n * sizeof *g->label);
    g->feat.rowptr = calloc((size_t)n + 1, sizeof *g->feat.rowptr);
    g->feat.col = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *g->feat.col);
    g->feat.val = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *g->feat.val);
    if (!g->label || !g->feat.rowptr || !g->feat.col || !g->feat.val) return al_seterr(err, "import: out of memory");
    g->feat.rows = n;
    return AL_OK;
}

/* One feature value token [p, end): stored if non-zero. Returns 0, or -1 if not a finite number. */
static int put_value(al_graph *g, const char *p, const char *end, int col, int64_t cap)
{
    char *e;
    errno = 0;
    float v = strtof(p, &e);
    if (e != end || e == p || errno == ERANGE || !isfinite(v)) return -1;
    if (v != 0 && g->feat.nnz < cap) { g->feat.col[g->feat.nnz] = col; g->feat.val[g->feat.nnz++] = v; }
    return 0;
}

/* nclass from the labels; the edge list as the symmetric adjacency. */
static al_status finish_graph(al_graph *g, int nfeat, edges *e, al_import_stats *st, al_error *err)
{
    g->nfeat = g->feat.cols = nfeat;
    int64_t maxlab = -1;                 /* labels are below AL_GRAPH_MAX_CLASSES (ogb_labels; LINQS: < n) */
    for (int i = 0; i < g->n; i++) if (g->label[i] > maxlab) maxlab = g->label[i];
    g->nclass = (int)(maxlab + 1);
    if (al_graph_build_adj(g->n, e->src, e->dst, e->n, &g->adj, err)) return AL_ERR;
    g->nedges_file = st->edges_in;
    st->n = g->n; st->nfeat = nfeat; st->nclass = g->nclass; st->edges_out = g->adj.nnz;
    return AL_OK;
}

/* ---------------- LINQS ---------------- */
/* Open-addressing map of paper ids (pointers into the .content buffer) to node numbers. */
typedef struct idmap { const char **key; int *val; size_t cap; } idmap;
static uint64_t hash_str(const char *s) { uint64_t h = 1469598103934665603ULL; while (*s) h = (h ^ (uint8_t)*s++) * 1099511628211ULL; return h; }
static int idmap_init(idmap *m, int n)
{
    m->cap = 16;
    while (m->cap < (size_t)n * 2) m->cap *= 2;
    m->key = calloc(m->cap, sizeof *m->key); m->val = malloc(m->cap * sizeof *m->val);
    return m->key && m->val ? 0 : -1;
}
/* The slot of key: m->key[slot] is NULL if absent. */
static size_t idmap_slot(const idmap *m, const char *key)
{
    size_t i = (size_t)hash_str(key) & (m->cap - 1);
    while (m->key[i] && strcmp(m->key[i], key)) i = (i + 1) & (m->cap - 1);
    return i;
}
static int idmap_get(const idmap *m, const char *key) { size_t i = idmap_slot(m, key); return m->key[i] ? m->val[i] : -1; }
static void idmap_free(idmap *m) { free(m->key); free(m->val); }

/* Split a line in place at spaces and tabs into at most max tokens; returns the count (max + 1 if more). */
static int split_ws(char *line, char **tok, int max)
{
    int k = 0;
    for (char *p = line; *p; ) {
        while (is_sep(*p)) p++;
        if (!*p) break;
        if (k == max) return max + 1;
        tok[k++] = p;
        while (*p && !is_sep(*p)) p++;
        if (*p) *p++ = 0;
    }
    return k;
}

/* NAME.content in dir: o->name, else the only *.content file. */
static al_status linqs_prefix(const al_import_opts *o, char *out, size_t n, al_error *err)
{
    if (o->name) {
        snprintf(out, n, "%s/%s", o->in, o->name);
        return AL_OK;
    }
    DIR *d = opendir(o->in);
    if (!d) return al_seterr(err, "%s: cannot open directory: %s", o->in, strerror(errno));
    int found = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t L = strlen(e->d_name);
        if (L <= 8 || strcmp(e->d_name + L - 8, ".content")) continue;
        if (found++) break;
        snprintf(out, n, "%s/%.*s", o->in, (int)(L - 8), e->d_name);
    }
    closedir(d);
    if (found == 1) return AL_OK;
    return al_seterr(err, found ? "%s: several *.content files: choose one with --name NAME"
                                : "%s: no NAME.content file (LINQS format: NAME.content and NAME.cites)", o->in);
}

/* The class strings (one per node) → sorted distinct names and g->label. */
static al_status linqs_classes(al_graph *g, const char **cls, char ***names, al_error *err)
{
    const char **s = malloc((size_t)g->n * sizeof *s);
    if (!s) return al_seterr(err, "import: out of memory");
    memcpy(s, cls, (size_t)g->n * sizeof *s);
    qsort(s, (size_t)g->n, sizeof *s, cmp_str);
    int k = 0;
    for (int i = 0; i < g->n; i++) if (i == 0 || strcmp(s[i], s[k - 1])) s[k++] = s[i];
    *names = calloc((size_t)k, sizeof **names);
    g->nclass = k;
    for (int i = 0; *names && i < k; i++) if (!((*names)[i] = strdup(s[i]))) { al_import_classes_free(*names, i); *names = NULL; }
    for (int i = 0; *names && i < g->n; i++) {
        const char **f = bsearch(&cls[i], s, (size_t)k, sizeof *s, cmp_str);
        g->label[i] = (int)(f - s);
    }
    free(s);
    return *names ? AL_OK : al_seterr(err, "import: out of memory");
}

/* One .content line: id, F values, class. */
static al_status linqs_node(al_graph *g, al_text *t, char *line, int F, int64_t cap, idmap *m, const char **cls,
                            long *first, al_error *err)
{
    char **tk = malloc(((size_t)F + 3) * sizeof *tk), b[64];
    if (!tk) return al_seterr(err, "import: out of memory");
    int i = (int)(t->line - 1), k = split_ws(line, tk, F + 2);
    al_status st = AL_ERR;
    if (k == 0) { al_seterr(err, "%s:%ld: empty line (expected PAPER_ID w1 .. wF CLASS)", t->path, t->line); goto out; }
    if (k != F + 2) {
        al_seterr(err, "%s:%ld: %s%d word columns between the paper id and the class, expected %d (as on line 1)", t->path,
                  t->line, k > F + 2 ? "more than " : "", k > F + 2 ? F : k - 2, F);
        goto out;
    }
    size_t slot = idmap_slot(m, tk[0]);
    if (m->key[slot]) { al_seterr(err, "%s:%ld: paper id '%s' already on line %ld", t->path, t->line, tk[0], first[m->val[slot]]); goto out; }
    m->key[slot] = tk[0]; m->val[slot] = i; first[i] = t->line;
    for (int j = 0; j < F; j++)
        if (put_value(g, tk[j + 1], tk[j + 1] + strlen(tk[j + 1]), j, cap)) {
            al_seterr(err, "%s:%ld: word %d '%s' is not a number", t->path, t->line, j + 1, al_text_tok(tk[j + 1], b, sizeof b));
            goto out;
        }
    g->feat.rowptr[i + 1] = g->feat.nnz;
    cls[i] = tk[F + 1];
    st = AL_OK;
out:
    free(tk);
    return st;
}

static al_status linqs_content(al_graph *g, al_text *t, idmap *m, const char ***cls, al_import_stats *st, al_error *err)
{
    int64_t rows = al_text_count_lines(t);
    char *nl = memchr(t->buf, '\n', t->len), *end = nl ? nl : t->buf + t->len;
    int64_t F = -2;
    for (char *p = t->buf; p < end; ) { while (p < end && is_sep(*p)) p++; if (p < end) F++; while (p < end && !is_sep(*p)) p++; }
    if (rows > 0 && F < 1) return al_seterr(err, "%s:1: expected PAPER_ID w1 .. wF CLASS (at least one word column)", t->path);
    if (check_rows(t, rows, F, "PAPER_ID w1 .. wF CLASS lines", err)) return AL_ERR;
    int64_t cap = rows * F < (int64_t)t->len / 2 + 1 ? rows * F : (int64_t)t->len / 2 + 1;
    long *first = malloc((size_t)rows * sizeof *first);
    *cls = malloc((size_t)rows * sizeof **cls);
    if (!first || !*cls || idmap_init(m, (int)rows) || alloc_nodes(g, (int)rows, cap, err)) {
        free(first); return al_seterr(err, "import: out of memory");
    }
    char *line;
    al_status s = AL_OK;
    while (s == AL_OK && (line = al_text_line(t)) != NULL) s = linqs_node(g, t, line, (int)F, cap, m, *cls, first, err);
    free(first);
    st->nfeat = (int)F;
    return s;
}

static al_status linqs_cites(const idmap *m, al_text *t, edges *e, al_import_stats *st, al_error *err)
{
    if (check_rows(t, al_text_count_lines(t), 2, "CITED_ID CITING_ID lines", err)) return AL_ERR;
    char *line, *tk[2];
    while ((line = al_text_line(t)) != NULL) {
        int k = split_ws(line, tk, 2);
        if (k != 2)
            return al_seterr(err, "%s:%ld: %s (expected CITED_ID CITING_ID)", t->path, t->line,
                             k == 0 ? "empty line" : k == 1 ? "one field" : "more than two fields");
        st->edges_in++;
        int a = idmap_get(m, tk[0]), b = idmap_get(m, tk[1]);
        if (a < 0 || b < 0) { st->edges_missing++; continue; }
        if (a == b) { st->self_loops++; continue; }
        if (edges_add(e, a, b)) return al_seterr(err, "import: out of memory");
        if (e->n > AL_IMPORT_MAX_ENTRIES) return al_seterr(err, "%s:%ld: more than %lld edges", t->path, t->line, (long long)AL_IMPORT_MAX_ENTRIES);
    }
    return AL_OK;
}

static al_status read_linqs(const al_import_opts *o, al_graph *g, char ***classes, al_import_stats *st, al_error *err)
{
    char prefix[4096], path[4200];
    if (linqs_prefix(o, prefix, sizeof prefix, err)) return AL_ERR;
    al_text tc, te;
    memset(&te, 0, sizeof te);
    idmap m = {0};
    edges e = {0};
    const char **cls = NULL;
    snprintf(path, sizeof path, "%s.content", prefix);
    if (al_text_open_path(&tc, path, err)) return AL_ERR;
    snprintf(st->features_file, sizeof st->features_file, "%s", tc.path);
    snprintf(path, sizeof path, "%s.cites", prefix);
    al_status s = AL_ERR;
    if (linqs_content(g, &tc, &m, &cls, st, err) || linqs_classes(g, cls, classes, err)) goto out;
    if (al_text_open_path(&te, path, err) || linqs_cites(&m, &te, &e, st, err)) goto out;
    s = finish_graph(g, st->nfeat, &e, st, err);
out:
    free(cls); idmap_free(&m); edges_free(&e);
    al_text_close(&tc); al_text_close(&te);
    return s;
}

/* ---------------- OGB ---------------- */
/* dir/file, dir/file.gz, dir/raw/file, dir/raw/file.gz: the first that exists (else dir/file). */
static void ogb_find(const char *dir, const char *file, char *out, size_t n)
{
    static const char *fmt[] = {"%s/%s", "%s/%s.gz", "%s/raw/%s", "%s/raw/%s.gz"};
    for (int i = 0; i < 4; i++) {
        snprintf(out, n, fmt[i], dir, file);
        if (is_file(out)) return;
    }
    snprintf(out, n, "%s/%s", dir, file);
}

/* One comma-separated row of F floats. */
static al_status ogb_feat_row(al_graph *g, al_text *t, char *line, int F, int64_t cap, al_error *err)
{
    char b[64];
    int j = 0;
    for (char *p = line;; j++) {
        char *c = strchr(p, ',');
        char *end = c ? c : p + strlen(p);
        if (j >= F) return al_seterr(err, "%s:%ld: more than %d fields (line 1 has %d)", t->path, t->line, F, F);
        if (put_value(g, p, end, j, cap))
            return al_seterr(err, "%s:%ld: field %d '%s' is not a finite number", t->path, t->line, j + 1, al_text_tok(p, b, sizeof b));
        if (!c) break;
        p = c + 1;
    }
    if (j + 1 != F) return al_seterr(err, "%s:%ld: %d fields, expected %d (as on line 1)", t->path, t->line, j + 1, F);
    g->feat.rowptr[t->line] = g->feat.nnz;
    return AL_OK;
}

static al_status ogb_features(const char *dir, al_graph *g, al_import_stats *st, al_error *err)
{
    al_text t;
    char path[4200];
    ogb_find(dir, "node-feat.csv", path, sizeof path);
    if (al_text_open_path(&t, path, err)) return AL_ERR;
    snprintf(st->features_file, sizeof st->features_file, "%s", t.path);
    int64_t rows = al_text_count_lines(&t), F = 1;
    for (size_t i = 0; i < t.len && t.buf[i] != '\n'; i++) F += t.buf[i] == ',';
    al_status s = check_rows(&t, rows, F, "one row of comma-separated floats per node", err);
    int64_t cap = rows * F < (int64_t)t.len / 2 + 1 ? rows * F : (int64_t)t.len / 2 + 1;
    if (s == AL_OK) s = alloc_nodes(g, (int)rows, cap, err);
    char *line;
    while (s == AL_OK && (line = al_text_line(&t)) != NULL) s = ogb_feat_row(g, &t, line, (int)F, cap, err);
    st->nfeat = (int)F;
    al_text_close(&t);
    return s;
}

static al_status ogb_labels(const char *dir, al_graph *g, al_error *err)
{
    al_text t;
    char path[4200], b[64], *line;
    ogb_find(dir, "node-label.csv", path, sizeof path);
    if (al_text_open_path(&t, path, err)) return AL_ERR;
    al_status s = AL_OK;
    while (s == AL_OK && (line = al_text_line(&t)) != NULL) {
        char *p = al_text_skip_ws(line);
        long v = -1;
        if (t.line > g->n) s = al_seterr(err, "%s:%ld: more rows than the %d nodes of node-feat.csv", t.path, t.line, g->n);
        else if (*p && strcmp(p, "nan") && strcmp(p, "NaN") && (!al_text_int(&p, &v, 0) || *al_text_skip_ws(p) || v < -1))
            s = al_seterr(err, "%s:%ld: label '%s' is not a class >= 0 (or -1, nan, empty: unlabelled)", t.path, t.line,
                          al_text_tok(al_text_skip_ws(line), b, sizeof b));
        else if (v >= AL_GRAPH_MAX_CLASSES)   /* the class count, label + 1, sizes the split's per-class tables */
            s = al_seterr(err, "%s:%ld: label %ld is absurd (limit %d classes)", t.path, t.line, v, AL_GRAPH_MAX_CLASSES);
        else g->label[t.line - 1] = (int)v;
    }
    if (s == AL_OK && t.line < g->n)
        s = al_seterr(err, "%s:%ld: %ld rows but node-feat.csv has %d nodes", t.path, t.line + 1, t.line, g->n);
    al_text_close(&t);
    return s;
}

/* "A,B" with both in [0, n); 0 or -1 with err set. */
static int ogb_pair(const al_text *t, char *line, int n, long *a, long *b, al_error *err)
{
    char *p = al_text_skip_ws(line), buf[64];
    if (!al_text_int(&p, a, ',') || *p != ',') {
        al_seterr(err, "%s:%ld: '%s' is not SRC,DST", t->path, t->line, al_text_tok(al_text_skip_ws(line), buf, sizeof buf));
        return -1;
    }
    p = al_text_skip_ws(p + 1);
    if (!al_text_int(&p, b, 0) || *al_text_skip_ws(p)) {
        al_seterr(err, "%s:%ld: destination '%s' is not an integer", t->path, t->line, al_text_tok(p, buf, sizeof buf));
        return -1;
    }
    long bad = *a < 0 || *a >= n ? *a : *b;
    if (bad < 0 || bad >= n) { al_seterr(err, "%s:%ld: node id %ld out of range [0, %d)", t->path, t->line, bad, n); return -1; }
    return 0;
}

static al_status ogb_edges(const char *dir, int n, edges *e, al_import_stats *st, al_error *err)
{
    al_text t;
    char path[4200], *line;
    ogb_find(dir, "edge.csv", path, sizeof path);
    if (al_text_open_path(&t, path, err)) return AL_ERR;
    al_status s = check_rows(&t, al_text_count_lines(&t), 2, "SRC,DST rows", err);
    while (s == AL_OK && (line = al_text_line(&t)) != NULL) {
        long a, b;
        if (ogb_pair(&t, line, n, &a, &b, err)) { s = AL_ERR; break; }
        st->edges_in++;
        if (a == b) { st->self_loops++; continue; }
        if (edges_add(e, (int)a, (int)b)) s = al_seterr(err, "import: out of memory");
        else if (e->n > AL_IMPORT_MAX_ENTRIES) s = al_seterr(err, "%s:%ld: more than %lld edges", t.path, t.line, (long long)AL_IMPORT_MAX_ENTRIES);
    }
    al_text_close(&t);
    return s;
}

/* The directory of train.csv / valid.csv / test.csv. */
static al_status ogb_split_dir(const al_import_opts *o, char *out, size_t n, al_error *err)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/train.csv", o->in);
    if (!o->name && (is_file(p) || (snprintf(p, sizeof p, "%s/train.csv.gz", o->in), is_file(p)))) { snprintf(out, n, "%s", o->in); return AL_OK; }
    snprintf(p, sizeof p, "%s/split", o->in);
    if (o->name) return !join(out, n, p, o->name) && is_dir(out) ? AL_OK : al_seterr(err, "%s/%s: no such split directory", p, o->name);
    DIR *d = opendir(p);
    if (!d) return al_seterr(err, "%s: no train.csv, and no split/ directory (or use --split random)", o->in);
    int found = 0;
    struct dirent *e;
    char sub[4200];
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || join(sub, sizeof sub, p, e->d_name) || !is_dir(sub)) continue;
        if (!found++ && join(out, n, p, e->d_name)) found = 2;
    }
    closedir(d);
    if (found != 1) return al_seterr(err, "%s: %s", p, found ? "several split directories: choose one with --name" : "no split directory");
    return AL_OK;
}

/* One split file; mark[v] = which split (1..3) already holds v, line[v] its line. */
static al_status ogb_split_file(const char *dir, const char *file, int which, al_graph *g, uint8_t *mark, long *mline,
                                int **ids, int *count, al_error *err)
{
    static const char *names[] = {"", "train.csv", "valid.csv", "test.csv"};
    al_text t;
    char path[4200], b[64], *line;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (!is_file(path)) snprintf(path, sizeof path, "%s/%s.gz", dir, file);
    if (al_text_open_path(&t, path, err)) return AL_ERR;
    int64_t rows = al_text_count_lines(&t);
    al_status s = check_rows(&t, rows, 1, "one node id per row", err);
    if (s == AL_OK && !(*ids = malloc((size_t)rows * sizeof **ids))) s = al_seterr(err, "import: out of memory");
    while (s == AL_OK && (line = al_text_line(&t)) != NULL) {
        char *p = al_text_skip_ws(line);
        long v;
        if (!al_text_int(&p, &v, 0) || *al_text_skip_ws(p)) s = al_seterr(err, "%s:%ld: node id '%s' is not an integer", t.path, t.line, al_text_tok(al_text_skip_ws(line), b, sizeof b));
        else if (v < 0 || v >= g->n) s = al_seterr(err, "%s:%ld: node id %ld out of range [0, %d)", t.path, t.line, v, g->n);
        else if (g->label[v] < 0) s = al_seterr(err, "%s:%ld: node %ld has no label", t.path, t.line, v);
        else if (mark[v]) s = al_seterr(err, "%s:%ld: node %ld already in %s (line %ld)", t.path, t.line, v, names[mark[v]], mline[v]);
        else { mark[v] = (uint8_t)which; mline[v] = t.line; (*ids)[(*count)++] = (int)v; }
    }
    al_text_close(&t);
    return s;
}

static al_status ogb_splits(const al_import_opts *o, al_graph *g, al_error *err)
{
    char dir[4096];
    if (ogb_split_dir(o, dir, sizeof dir, err)) return AL_ERR;
    uint8_t *mark = calloc((size_t)g->n, 1);
    long *mline = calloc((size_t)g->n, sizeof *mline);
    al_status s = mark && mline ? AL_OK : al_seterr(err, "import: out of memory");
    if (s == AL_OK && (ogb_split_file(dir, "train.csv", 1, g, mark, mline, &g->train, &g->ntrain, err) ||
                       ogb_split_file(dir, "valid.csv", 2, g, mark, mline, &g->val, &g->nval, err) ||
                       ogb_split_file(dir, "test.csv", 3, g, mark, mline, &g->test, &g->ntest, err)))
        s = AL_ERR;
    free(mark); free(mline);
    return s;
}

static al_status read_ogb(const al_import_opts *o, al_graph *g, al_import_stats *st, al_error *err)
{
    edges e = {0};
    al_status s = AL_ERR;
    if (ogb_features(o->in, g, st, err) || ogb_labels(o->in, g, err) || ogb_edges(o->in, g->n, &e, st, err)) goto out;
    if (finish_graph(g, st->nfeat, &e, st, err)) goto out;
    if (o->split == AL_SPLIT_GIVEN && ogb_splits(o, g, err)) goto out;
    s = AL_OK;
out:
    edges_free(&e);
    return s;
}

/* ---------------- the random split ---------------- */
/* Labelled nodes shuffled (AL_RNG_DATA stream of seed); per class min(20, count/2, at least 1) for
 * training, then 500 / 1000 of the rest for val / test, or a third / two thirds of it if fewer than 1500. */
static al_status random_split(al_graph *g, uint64_t seed, al_import_stats *st, al_error *err)
{
    int *c = malloc((size_t)g->n * sizeof *c), *cnt = calloc((size_t)g->nclass + 1, sizeof *cnt), *taken = calloc((size_t)g->nclass + 1, sizeof *taken);
    uint8_t *used = calloc((size_t)g->n, 1);
    g->train = malloc((size_t)g->n * sizeof(int)); g->val = malloc((size_t)g->n * sizeof(int)); g->test = malloc((size_t)g->n * sizeof(int));
    al_status s = AL_ERR;
    if (!c || !cnt || !taken || !used || !g->train || !g->val || !g->test) { al_seterr(err, "import: out of memory"); goto out; }
    int k = 0;
    for (int i = 0; i < g->n; i++) if (g->label[i] >= 0) { c[k++] = i; cnt[g->label[i]]++; }
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    al_rng_shuffle(&r, c, k);
    for (int i = 0; i < k; i++) {
        int y = g->label[c[i]], want = cnt[y] / 2 < AL_IMPORT_PER_CLASS ? (cnt[y] / 2 > 0 ? cnt[y] / 2 : 1) : AL_IMPORT_PER_CLASS;
        if (want < AL_IMPORT_PER_CLASS) st->clamped = 1;
        if (taken[y] < want) { taken[y]++; used[c[i]] = 1; g->train[g->ntrain++] = c[i]; }
    }
    int rest = k - g->ntrain, nval = AL_IMPORT_VAL, ntest = AL_IMPORT_TEST;
    if (rest < 2) { al_seterr(err, "import: %d labelled nodes: too few for a train / val / test split", k); goto out; }
    if (rest < nval + ntest) { nval = rest / 3 > 0 ? rest / 3 : 1; ntest = rest - nval; st->clamped = 1; }
    for (int i = 0; i < k; i++) {
        if (used[c[i]]) continue;
        if (g->nval < nval) g->val[g->nval++] = c[i];
        else if (g->ntest < ntest) g->test[g->ntest++] = c[i];
    }
    qsort(g->train, (size_t)g->ntrain, sizeof(int), cmp_int);
    qsort(g->val, (size_t)g->nval, sizeof(int), cmp_int);
    qsort(g->test, (size_t)g->ntest, sizeof(int), cmp_int);
    s = AL_OK;
out:
    free(c); free(cnt); free(taken); free(used);
    return s;
}

al_status al_graph_import_read(const al_import_opts *o, al_graph *g, char ***classes, al_import_stats *st, al_error *err)
{
    memset(g, 0, sizeof *g);
    memset(st, 0, sizeof *st);
    *classes = NULL;
    if (!is_dir(o->in)) return al_seterr(err, "import: %s: no such directory", o->in);
    if (o->format == AL_IMPORT_LINQS && o->split != AL_SPLIT_RANDOM)
        return al_seterr(err, "import: LINQS files carry no split: use the random split");
    al_status s = o->format == AL_IMPORT_LINQS ? read_linqs(o, g, classes, st, err) : read_ogb(o, g, st, err);
    if (s == AL_OK && g->nclass < 1) s = al_seterr(err, "%s: no node has a label", st->features_file);
    if (s == AL_OK && o->split == AL_SPLIT_RANDOM) s = random_split(g, o->seed, st, err);
    if (s == AL_OK) { st->ntrain = g->ntrain; st->nval = g->nval; st->ntest = g->ntest; }
    return s;
}

void al_import_classes_free(char **classes, int nclass)
{
    if (!classes) return;
    for (int i = 0; i < nclass; i++) free(classes[i]);
    free(classes);
}
