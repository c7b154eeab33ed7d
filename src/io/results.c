/* results.c — parse a results CSV, group rows into runs, summarise final test accuracy. */
#include "attnlab/results.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NFIELDS1 14   /* the header of attnlab < 0.4 */
#define NFIELDS2 16   /* + config, status (0.4) */
#define NFIELDS 20    /* + unseen_acc, ambig_acc, test_rmse, test_mae (0.5) */

void al_results_free(al_results *r)
{
    free(r->row); free(r->run); free(r->next);
    memset(r, 0, sizeof *r);
}

void al_summary_free(al_summary *s)
{
    free(s->grp); free(s->incomplete);
    memset(s, 0, sizeof *s);
}

/* ---------------- field parsing ---------------- */
static int copy_field(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap) return -1;
    memcpy(dst, s, n); dst[n] = 0;
    return 0;
}

static int parse_long(const char *s, size_t n, long *out)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n); buf[n] = 0;
    char *end; errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, size_t n, double *out)
{
    char buf[64];
    if (n == 0) { *out = NAN; return 0; }
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n); buf[n] = 0;
    char *end; errno = 0;
    double v = strtod(buf, &end);
    if (*end || (errno == ERANGE && fabs(v) > 1.0)) return -1;
    *out = v;
    return 0;
}

static const char *field_name[NFIELDS] = {
    "run_id", "task", "dataset", "model", "train_size", "seed", "epoch", "train_loss", "train_acc",
    "val_acc", "test_acc", "epoch_seconds", "samples_per_second", "params", "config", "status",
    "unseen_acc", "ambig_acc", "test_rmse", "test_mae"};

/* A quoted CSV field ("...", inner quotes doubled) unquoted into dst; -1 if it does not fit or is malformed. */
static int copy_quoted(char *dst, size_t cap, const char *s, size_t n)
{
    if (n < 2 || s[0] != '"' || s[n - 1] != '"') return copy_field(dst, cap, s, n);
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++) {
        if (s[i] == '"' && (i + 2 >= n || s[++i] != '"')) return -1;
        if (o + 1 >= cap) return -1;
        dst[o++] = s[i];
    }
    dst[o] = 0;
    return 0;
}

/* Parse one data line s[0..n) into *w; returns the index of the bad field, NFIELDS for a wrong
 * field count, or -1 when all is well. */
static int parse_row(const char *s, size_t n, int nfields, al_result_row *w)
{
    const char *f[NFIELDS]; size_t fl[NFIELDS];
    int k = 0;
    const char *p = s, *e = s + n;
    for (;;) {
        const char *c = p;                       /* the field's end: the next comma outside quotes */
        int quoted = c < e && *c == '"';
        if (quoted) for (c++; c < e && !(*c == '"' && (c + 1 == e || c[1] != '"')); c += *c == '"' ? 2 : 1) {}
        c = memchr(c, ',', (size_t)(e - c));
        const char *end = c ? c : e;
        if (k == nfields) return NFIELDS;
        f[k] = p; fl[k] = (size_t)(end - p); k++;
        if (!c) break;
        p = c + 1;
    }
    if (k != nfields) return NFIELDS;
    long epoch = 0;
    if (fl[0] == 0 || copy_field(w->run_id, sizeof w->run_id, f[0], fl[0])) return 0;
    if (fl[1] == 0 || copy_field(w->task, sizeof w->task, f[1], fl[1])) return 1;
    if (copy_field(w->dataset, sizeof w->dataset, f[2], fl[2])) return 2;
    if (fl[3] == 0 || copy_field(w->model, sizeof w->model, f[3], fl[3])) return 3;
    if (parse_long(f[4], fl[4], &w->train_size)) return 4;
    if (parse_long(f[5], fl[5], &w->seed)) return 5;
    if (parse_long(f[6], fl[6], &epoch) || epoch < 0 || epoch > 1000000000L) return 6;
    w->epoch = (int)epoch;
    double *d[6] = {&w->train_loss, &w->train_acc, &w->val_acc, &w->test_acc, &w->epoch_seconds, &w->samples_per_second};
    for (int i = 0; i < 6; i++)
        if (parse_double(f[7 + i], fl[7 + i], d[i])) return 7 + i;
    if (fl[13] == 0) w->params = 0;
    else if (parse_long(f[13], fl[13], &w->params)) return 13;
    if (nfields == NFIELDS1) { strcpy(w->status, "done"); w->unseen_acc = w->ambig_acc = w->test_rmse = w->test_mae = NAN; return -1; }   /* older files hold whole runs */
    if (copy_quoted(w->config, sizeof w->config, f[14], fl[14])) return 14;
    if (copy_quoted(w->status, sizeof w->status, f[15], fl[15])) return 15;
    double *x[4] = {&w->unseen_acc, &w->ambig_acc, &w->test_rmse, &w->test_mae};
    for (int i = 0; i < 4; i++) *x[i] = NAN;
    if (nfields == NFIELDS2) return -1;
    for (int i = 0; i < 4; i++)
        if (parse_double(f[16 + i], fl[16 + i], x[i])) return 16 + i;
    return -1;
}

/* ---------------- run index: open addressing on run_id ---------------- */
static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 0x100000001b3ULL; }
    return h;
}

static al_status build_runs(al_results *r, al_error *err)
{
    r->run = malloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *r->run);
    r->next = malloc((size_t)(r->n > 0 ? r->n : 1) * sizeof *r->next);
    size_t cap = 16;
    while (cap < 2 * (size_t)r->n) cap *= 2;
    int *slot = malloc(cap * sizeof *slot);   /* run index or -1 */
    if (!r->run || !r->next || !slot) { free(slot); return al_seterr(err, "results: out of memory"); }
    for (size_t i = 0; i < cap; i++) slot[i] = -1;
    r->nrun = 0;
    for (int i = 0; i < r->n; i++) {
        r->next[i] = -1;
        size_t h = (size_t)hash_str(r->row[i].run_id) & (cap - 1);
        while (slot[h] >= 0 && strcmp(r->row[r->run[slot[h]].first].run_id, r->row[i].run_id))
            h = (h + 1) & (cap - 1);
        if (slot[h] < 0) {
            slot[h] = r->nrun;
            r->run[r->nrun++] = (al_run){i, i, 1, 0};
        } else {
            al_run *u = &r->run[slot[h]];
            r->next[u->last] = i;
            u->last = i; u->nrows++;
        }
    }
    free(slot);
    for (int k = 0; k < r->nrun; k++) r->run[k].complete = !strcmp(r->row[r->run[k].last].status, "done");
    return AL_OK;
}

int al_results_find_run(const al_results *r, const char *run_id)
{
    for (int k = 0; k < r->nrun; k++)
        if (!strcmp(r->row[r->run[k].first].run_id, run_id)) return k;
    return -1;
}

al_status al_results_parse(const char *text, size_t len, const char *name, al_results *r, al_error *err)
{
    return al_results_parse_ex(text, len, name, 0, r, NULL, err);
}

al_status al_results_parse_ex(const char *text, size_t len, const char *name, int flags, al_results *r,
                              char note[AL_ERRLEN], al_error *err)
{
    memset(r, 0, sizeof *r);
    if (note) note[0] = 0;
    if (len > 0 && text[len - 1] != '\n' && (flags & AL_RESULTS_DROP_TORN)) {
        /* A final line without its newline is a row cut short (kill -9, a full disk): drop it and say so. */
        size_t keep = len;
        while (keep > 0 && text[keep - 1] != '\n') keep--;
        int line = 1;
        for (size_t i = 0; i < keep; i++) line += text[i] == '\n';
        if (note) {
            char nb[160];
            snprintf(note, AL_ERRLEN, "%s:%d: incomplete last line (%zu bytes, no newline: a torn write) dropped",
                     al_path_abbrev(name, nb, sizeof nb), line, len - keep);
        }
        len = keep;
    }
    if (len == 0) return build_runs(r, err);
    int cap = 0, line = 0;
    const char *p = text, *end = text + len;
    while (p < end) {
        line++;
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            al_results_free(r);
            return al_seterr(err, "%s:%d: incomplete last line (%zu bytes, no newline; a torn write? al_results_read_ex with "
                             "AL_RESULTS_DROP_TORN skips it)", al_path_short(name), line, (size_t)(end - p));
        }
        size_t n = (size_t)(nl - p);
        if (n > 0 && p[n - 1] == '\r') n--;
        if (line == 1) {
            if (n == strlen(AL_CSV_HEADER) && !memcmp(p, AL_CSV_HEADER, n)) r->version = 3;
            else if (n == strlen(AL_CSV_HEADER_V2) && !memcmp(p, AL_CSV_HEADER_V2, n)) r->version = 2;
            else if (n == strlen(AL_CSV_HEADER_V1) && !memcmp(p, AL_CSV_HEADER_V1, n)) r->version = 1;
            else {
                al_results_free(r);
                return al_seterr(err, "%s:1: header is not the attnlab results header \"%s\"", al_path_short(name), AL_CSV_HEADER);
            }
        } else {
            if (r->n == cap) {
                cap = cap ? 2 * cap : 256;
                al_result_row *nr = realloc(r->row, (size_t)cap * sizeof *nr);
                if (!nr) { al_results_free(r); return al_seterr(err, "%s: out of memory", al_path_short(name)); }
                r->row = nr;
            }
            al_result_row *w = &r->row[r->n];
            memset(w, 0, sizeof *w);
            int nf = r->version == 1 ? NFIELDS1 : r->version == 2 ? NFIELDS2 : NFIELDS;
            int bad = n == 0 ? NFIELDS : parse_row(p, n, nf, w);
            if (bad >= 0) {
                al_results_free(r);
                if (bad == NFIELDS)
                    return al_seterr(err, "%s:%d: expected %d comma-separated fields", al_path_short(name), line, nf);
                return al_seterr(err, "%s:%d: bad value in column %d (%s)", al_path_short(name), line, bad + 1, field_name[bad]);
            }
            w->line = line;
            r->n++;
        }
        p = nl + 1;
    }
    if (build_runs(r, err) != AL_OK) { al_results_free(r); return AL_ERR; }
    return AL_OK;
}

al_status al_results_read(const char *path, al_results *r, al_error *err)
{
    return al_results_read_ex(path, 0, r, NULL, err);
}

al_status al_results_read_ex(const char *path, int flags, al_results *r, char note[AL_ERRLEN], al_error *err)
{
    char *text; size_t len;
    memset(r, 0, sizeof *r);
    if (note) note[0] = 0;
    const size_t pl = strlen(path);
    /* a ".gz" name (as committed results too large for plain text are) is decompressed whole */
    if (pl > 3 && !strcmp(path + pl - 3, ".gz")) { if (al_input_read_gz(path, AL_IN_STREAM, NULL, &text, &len, err) != AL_OK) return AL_ERR; }
    else if (al_read_file(path, &text, &len, err) != AL_OK) return AL_ERR;
    al_status st = al_results_parse_ex(text, len, path, flags, r, note, err);
    free(text);
    return st;
}

/* ---------------- metrics ---------------- */
static const char *const metric_names[AL_NMETRICS] = {"test_acc", "unseen_acc", "ambig_acc"};

const char *al_metric_name(al_metric m) { return (unsigned)m < AL_NMETRICS ? metric_names[m] : "?"; }

int al_metric_find(const char *name)
{
    for (int m = 0; name && m < AL_NMETRICS; m++) if (!strcmp(name, metric_names[m])) return m;
    return -1;
}

double al_result_metric(const al_result_row *w, al_metric m)
{
    switch (m) {
    case AL_METRIC_TEST_ACC: return w->test_acc;
    case AL_METRIC_UNSEEN_ACC: return w->unseen_acc;
    case AL_METRIC_AMBIG_ACC: return w->ambig_acc;
    default: return NAN;
    }
}

int al_summary_has_metric(const al_summary *s, al_metric m)
{
    for (int i = 0; i < s->n; i++) if (s->grp[i].metric_runs[m] > 0) return 1;
    return 0;
}

/* ---------------- summary ---------------- */
void al_mean_std(const double *x, int n, double *mean, double *std)
{
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m = n > 0 ? m / n : NAN;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *std = n > 1 ? sqrt(v / (n - 1)) : 0.0;
}

/* Does the comma list `by` name this config key (klen bytes)? */
static int by_has(const char *by, const char *key, size_t klen)
{
    for (const char *p = by; *p;) {
        const char *c = strchr(p, ',');
        size_t n = c ? (size_t)(c - p) : strlen(p);
        if (n == klen && !memcmp(p, key, n)) return 1;
        p += n + (c != NULL);
    }
    return 0;
}
/* config restricted to the keys of `by` (NULL = all) into out. */
void al_config_filter(const char *config, const char *by, char *out, size_t n)
{
    size_t o = 0;
    al_pair q;
    out[0] = 0;
    for (const char *pos = config; al__next_pair(&pos, &q);)
        if (!by || by_has(by, q.p, q.klen)) al__put_pair(out, n, &o, q.p, q.len, ';');
}

typedef struct final_ref { const al_result_row *fin; int run; char cfg[512]; } final_ref;

static int cmp_group(const final_ref *a, const final_ref *b)
{
    int c;
    if ((c = strcmp(a->fin->task, b->fin->task))) return c;
    if ((c = strcmp(a->fin->dataset, b->fin->dataset))) return c;
    if ((c = strcmp(a->fin->model, b->fin->model))) return c;
    if ((c = strcmp(a->cfg, b->cfg))) return c;
    return (a->fin->train_size > b->fin->train_size) - (a->fin->train_size < b->fin->train_size);
}
static int cmp_final(const void *x, const void *y)
{
    const final_ref *a = x, *b = y;
    int c = cmp_group(a, b);
    return c ? c : (a->run > b->run) - (a->run < b->run);   /* ties in file order */
}

al_status al_results_summarize(const al_results *r, al_summary *s, al_error *err)
{
    return al_results_summarize_by(r, NULL, s, err);
}

al_status al_results_summarize_by(const al_results *r, const char *by, al_summary *s, al_error *err)
{
    memset(s, 0, sizeof *s);
    if (r->nrun == 0) return AL_OK;
    final_ref *ord = malloc((size_t)r->nrun * sizeof *ord);
    double *acc = malloc((size_t)r->nrun * sizeof *acc), *val = malloc((size_t)r->nrun * sizeof *val);
    s->grp = calloc((size_t)r->nrun, sizeof *s->grp);
    s->incomplete = malloc((size_t)r->nrun * sizeof *s->incomplete);
    if (!ord || !acc || !val || !s->grp || !s->incomplete) {
        free(ord); free(acc); free(val); al_summary_free(s);
        return al_seterr(err, "summarize: out of memory");
    }
    int nc = 0;
    for (int k = 0; k < r->nrun; k++) {
        if (!r->run[k].complete) { s->incomplete[s->nincomplete++] = k; continue; }
        ord[nc].fin = &r->row[r->run[k].last]; ord[nc].run = k;
        al_config_filter(ord[nc].fin->config, by, ord[nc].cfg, sizeof ord[nc].cfg);
        nc++;
    }
    qsort(ord, (size_t)nc, sizeof *ord, cmp_final);
    for (int a = 0; a < nc;) {
        const al_result_row *key = ord[a].fin;
        int b = a;
        al_summary_group *grp = &s->grp[s->n++];
        memcpy(grp->task, key->task, sizeof grp->task);
        memcpy(grp->dataset, key->dataset, sizeof grp->dataset);
        memcpy(grp->model, key->model, sizeof grp->model);
        memcpy(grp->config, ord[a].cfg, sizeof grp->config);
        grp->train_size = key->train_size;
        double ep = 0, sec = 0;
        for (; b < nc && !cmp_group(&ord[b], &ord[a]); b++) {
            const al_run *u = &r->run[ord[b].run];
            const al_result_row *fin = ord[b].fin;
            acc[b - a] = fin->test_acc;
            ep += fin->epoch;
            double t = 0;
            for (int i = u->first; i >= 0; i = r->next[i])
                if (!isnan(r->row[i].epoch_seconds)) t += r->row[i].epoch_seconds;
            sec += t;
            grp->params = fin->params;
        }
        grp->nruns = b - a;
        al_mean_std(acc, grp->nruns, &grp->mean, &grp->std);
        for (int m = 0; m < AL_NMETRICS; m++) {   /* each metric over the runs that have it */
            int k = 0;
            for (int i = a; i < b; i++) {
                double v = al_result_metric(ord[i].fin, (al_metric)m);
                if (!isnan(v)) val[k++] = v;
            }
            grp->metric_runs[m] = k;
            al_mean_std(val, k, &grp->metric_mean[m], &grp->metric_std[m]);
        }
        grp->mean_epochs = ep / grp->nruns;
        grp->mean_seconds = sec / grp->nruns;
        a = b;
    }
    free(ord); free(acc); free(val);
    return AL_OK;
}

/* The value of key (klen bytes) in config, as a pointer and length; NULL when absent. */
static const char *config_value(const char *config, const char *key, size_t klen, size_t *vlen)
{
    al_pair q;
    for (const char *pos = config; al__next_pair(&pos, &q);)
        if (q.klen == klen && q.klen < q.len && !memcmp(q.p, key, klen)) {
            *vlen = q.vlen;
            return q.val;
        }
    return NULL;
}

void al_summary_label(const al_summary *s, int g, char *out, size_t n)
{
    const char *model = s->grp[g].model;
    size_t o = 0;
    al_pair q;
    out[0] = 0;
    for (const char *pos = s->grp[g].config; al__next_pair(&pos, &q);) {
        int differs = 0;
        for (int i = 0; i < s->n && !differs; i++) {
            if (strcmp(s->grp[i].model, model) || strcmp(s->grp[i].task, s->grp[g].task)) continue;
            size_t vlen;
            const char *v = config_value(s->grp[i].config, q.p, q.klen, &vlen);
            differs = !v || vlen != q.vlen || memcmp(v, q.val, vlen);
        }
        if (differs) al__put_pair(out, n, &o, q.p, q.len, ' ');
    }
}
