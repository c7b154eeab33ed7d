/* testutil.c — see testutil.h. */
#include "testutil.h"
#include "attnlab/text.h"
#include "attnlab/models.h"
#include <dirent.h>
#include <pthread.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ftw.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

void tu_fill(float *x, int64_t n, uint64_t seed, float lo, float hi)
{
    al_rng r; al_rng_seed(&r, seed, 99);
    for (int64_t i = 0; i < n; i++) x[i] = lo + (hi - lo) * al_rng_uniform(&r);
}
float *tu_alloc_rand(int64_t n, uint64_t seed, float lo, float hi)
{
    float *x = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    assert_non_null(x);
    tu_fill(x, n, seed, lo, hi);
    return x;
}
double tu_max_rel_err(const float *a, const float *b, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > num || isnan(d)) num = isnan(d) ? INFINITY : d;
        if (fabs((double)b[i]) > den) den = fabs((double)b[i]);
    }
    return num / (den + 1e-12);
}
double tu_max_abs_err(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) { double d = fabs((double)a[i] - (double)b[i]); if (d > m || isnan(d)) m = isnan(d) ? INFINITY : d; }
    return m;
}

static double eval_loss(al_ctx *c, tu_fn fn, void *ud, tu_input *in, int n, al_tensor **t,
                        const al_rng *rng0, double **r, int64_t *rn, al_tensor **out_t)
{
    al_ctx_reset(c);
    c->dropout_rng = *rng0;
    for (int i = 0; i < n; i++) {
        t[i] = al_wrap(c, in[i].data, in[i].ndim, in[i].shape);
        assert_non_null(t[i]);
        t[i]->requires_grad = in[i].check;
    }
    al_tensor *o = fn(c, t, ud);
    if (!o) fail_msg("gradcheck: forward failed: %s", al_ctx_error(c));
    if (!*r) {
        *rn = o->numel;
        *r = malloc((size_t)o->numel * sizeof(double));
        al_rng g; al_rng_seed(&g, 1234, 7);
        for (int64_t i = 0; i < o->numel; i++) (*r)[i] = 2.0 * al_rng_uniform(&g) - 1.0;
    }
    assert_int_equal(*rn, o->numel);
    double L = 0;
    for (int64_t i = 0; i < o->numel; i++) L += (*r)[i] * (double)o->data[i];
    if (out_t) *out_t = o;
    return L;
}

double tu_gradcheck(tu_fn fn, void *ud, tu_input *in, int n, double eps)
{
    al_ctx *c = al_ctx_new(42);
    al_tensor *t[16];
    assert_true(n <= 16);
    al_rng rng0 = c->dropout_rng;
    double *r = NULL; int64_t rn = 0;
    /* analytic */
    al_tensor *o;
    eval_loss(c, fn, ud, in, n, t, &rng0, &r, &rn, &o);
    float *og = al_grad(c, o);
    for (int64_t i = 0; i < rn; i++) og[i] = (float)r[i];
    if (al_backward_run(c) != AL_OK) fail_msg("gradcheck: backward failed: %s", al_ctx_error(c));
    float *ana[16] = {0};
    for (int i = 0; i < n; i++) {
        if (!in[i].check) continue;
        ana[i] = calloc((size_t)t[i]->numel, sizeof(float));
        if (t[i]->grad) memcpy(ana[i], t[i]->grad, (size_t)t[i]->numel * sizeof(float));
    }
    c->grad_enabled = 0;
    double worst = 0;
    for (int i = 0; i < n; i++) {
        if (!in[i].check) continue;
        int64_t m = al_shape_numel(in[i].ndim, in[i].shape);
        float *num = calloc((size_t)m, sizeof(float));
        for (int64_t j = 0; j < m; j++) {
            float x0 = in[i].data[j];
            in[i].data[j] = (float)(x0 + eps);
            double lp = eval_loss(c, fn, ud, in, n, t, &rng0, &r, &rn, NULL);
            in[i].data[j] = (float)(x0 - eps);
            double lm = eval_loss(c, fn, ud, in, n, t, &rng0, &r, &rn, NULL);
            in[i].data[j] = x0;
            num[j] = (float)((lp - lm) / (2 * eps));
        }
        double e = tu_max_rel_err(ana[i], num, m);
        if (e > worst || isnan(e)) worst = isnan(e) ? INFINITY : e;
        if (e > 1e-3) {
            int64_t k = 0; double kd = -1;
            for (int64_t j = 0; j < m; j++) { double d = fabs((double)ana[i][j] - num[j]); if (d > kd) { kd = d; k = j; } }
            print_message("  input %d: rel err %.3g, worst at %lld: analytic %.6g numeric %.6g\n",
                          i, e, (long long)k, (double)ana[i][k], (double)num[k]);
        }
        free(num); free(ana[i]);
    }
    free(r);
    al_ctx_free(c);
    return worst;
}

void tu_model_init(al_model *m, const char *name, int C, int H, int W, int classes, uint64_t seed)
{
    al_model_config cfg;
    al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, name, C, H, W, classes, &e), AL_OK);
    if (al_model_init(m, &cfg, seed, &e) != AL_OK) fail_msg("init %s: %s", name, e.msg);
}

const char *tu_attnlab_bin(void)
{
    const char *b = getenv("ATTNLAB_BIN");
    if (b && access(b, X_OK) == 0) return b;
    if (access("bin/attnlab", X_OK) == 0) return "bin/attnlab";
    fail_msg("bin/attnlab not found (build it first, or set ATTNLAB_BIN)");
    return NULL;
}

char *tu_slurp_n(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, len = 0, r;
    char *b = malloc(cap);
    while (b && (r = fread(b + len, 1, cap - len - 1, f)) > 0) {
        len += r;
        if (len + 1 == cap) { char *nb = realloc(b, cap *= 2); if (!nb) { free(b); b = NULL; } else b = nb; }
    }
    fclose(f);
    if (!b) return NULL;
    b[len] = 0;
    if (n) *n = len;
    return b;
}

int tu_system(const char *cmd)
{
    int rc = system(cmd);
    return rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

int tu_run_cli(const char *dir, const char *args)
{
    size_t n = strlen(args) + 3 * strlen(dir) + 4096;
    char *cmd = malloc(n);
    assert_non_null(cmd);
    snprintf(cmd, n, "%s %s > %s/out.txt 2> %s/err.txt", tu_attnlab_bin(), args, dir, dir);
    int rc = tu_system(cmd);
    free(cmd);
    return rc;
}

int tu_run_cli_err(const char *dir, const char *args, char *err, size_t n)
{
    int rc = tu_run_cli(dir, args);
    char p[4200];
    snprintf(p, sizeof p, "%s/err.txt", dir);
    char *e = tu_slurp(p);
    snprintf(err, n, "%s", e ? e : "");
    free(e);
    return rc;
}

void tu_put(const char *dir, const char *name, const char *text)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    if (!f) fail_msg("cannot write %s", p);
    fputs(text, f);
    fclose(f);
}

void tu_put_molset(const char *dir, const char *molecules, const char *coords, const char *train, const char *val,
                   const char *test)
{
    tu_put(dir, "molecules.txt", molecules);
    if (coords) tu_put(dir, "coords.txt", coords);
    tu_put(dir, "train.idx", train); tu_put(dir, "val.idx", val); tu_put(dir, "test.idx", test);
}

int tu_rm_rf(const char *dir)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return tu_system(cmd) == 0 ? 0 : -1;
}

int tu_tmp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int k = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) k += strstr(e->d_name, ".tmp.") != NULL;
    if (d) closedir(d);
    return k;
}

void tu_script_passes(const char *script)
{
    char log[512], cmd[8192];
    const char *base = strrchr(script, '/');
    snprintf(log, sizeof log, "/tmp/attnlab-%s.%ld.log", base ? base + 1 : script, (long)getpid());
    snprintf(cmd, sizeof cmd, "%s %s > %s 2>&1", script, tu_attnlab_bin(), log);
    if (tu_system(cmd) != 0) {
        snprintf(cmd, sizeof cmd, "cat %s >&2", log);
        (void)!system(cmd);
        fail_msg("%s failed (its log above, also in %s)", script, log);
    }
    snprintf(cmd, sizeof cmd, "tail -1 %s >&2", log);
    (void)!system(cmd);
    unlink(log);
}

void tu_write_treebank(const char *path, int nsent, uint64_t seed, int rare_every)
{
    static const char *det[] = {"the", "a", "The", "A"}, *noun[] = {"cat", "dog", "bird", "man", "house", "saw"},
                      *verb[] = {"sees", "likes", "sat", "ran", "saw"}, *adp[] = {"on", "in", "near"}, *rare[] = {"zebra", "yak"};
    al_rng r; al_rng_seed(&r, seed, 1);
    FILE *f = fopen(path, "w"); assert_non_null(f);
    for (int s = 0; s < nsent; s++) {
        const char *forms[8]; int tags[8], n = 0;
        forms[n] = det[al_rng_below(&r, 4)]; tags[n++] = al_upos_index("DET");
        forms[n] = noun[al_rng_below(&r, 5)]; tags[n++] = al_upos_index("NOUN");
        if (rare_every > 0 && s % rare_every == 0) forms[n - 1] = rare[(s / rare_every) % 2];
        forms[n] = verb[al_rng_below(&r, 5)]; tags[n++] = al_upos_index("VERB");
        if (al_rng_below(&r, 2)) {
            forms[n] = adp[al_rng_below(&r, 3)]; tags[n++] = al_upos_index("ADP");
            forms[n] = det[al_rng_below(&r, 2)]; tags[n++] = al_upos_index("DET");
            forms[n] = noun[al_rng_below(&r, 6)]; tags[n++] = al_upos_index("NOUN");   /* "saw" too */
        }
        forms[n] = "."; tags[n++] = al_upos_index("PUNCT");
        char *t; size_t l; al_error e = {{0}};
        assert_int_equal(al_conllu_format(n, forms, tags, &t, &l, &e), AL_OK);
        fputs(t, f); free(t);
    }
    fclose(f);
}

static char tmpdir_[256];
int tu_tmpdir_make(const char *tag)
{
    snprintf(tmpdir_, sizeof tmpdir_, "/tmp/attnlab_%s_XXXXXX", tag);
    return mkdtemp(tmpdir_) ? 0 : -1;
}
const char *tu_tmpdir(void) { return tmpdir_; }
const char *tu_tpath(const char *fmt, ...)
{
    static char b[8][512]; static int k; k = (k + 1) % 8;
    int o = snprintf(b[k], sizeof b[k], "%s/", tmpdir_);
    va_list ap; va_start(ap, fmt); vsnprintf(b[k] + o, sizeof b[k] - (size_t)o, fmt, ap); va_end(ap);
    return b[k];
}
static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }
int tu_tmpdir_remove(void) { return tmpdir_[0] ? nftw(tmpdir_, rm_cb, 16, FTW_DEPTH | FTW_PHYS) : 0; }
void tu_mkdirs(const char *p)
{
    char b[512]; snprintf(b, sizeof b, "%s", p);
    for (char *s = b + 1; *s; s++) if (*s == '/') { *s = 0; mkdir(b, 0755); *s = '/'; }
    mkdir(b, 0755);
}
void tu_spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb"); assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n); fclose(f);
}

/* ---------------- ranks as threads (tu_ranks) ---------------- */
enum { TU_MAXRANKS = 8 };
typedef struct tu_world { int n; pthread_barrier_t bar; int64_t *bufs[TU_MAXRANKS]; int64_t *out; int64_t cap; int oom; } tu_world;
typedef struct tu_rank { tu_world *w; al_dist d; tu_rank_fn fn; void *arg; } tu_rank;

static int tu_allreduce(void *ud, int64_t *buf, int64_t n, int op)
{
    tu_rank *r = ud;
    tu_world *w = r->w;
    w->bufs[r->d.rank] = buf;
    pthread_barrier_wait(&w->bar);
    if (r->d.rank == 0) {                      /* rank 0 adds up, in rank order (any order gives the same) */
        if (n > w->cap) { free(w->out); w->out = malloc((size_t)n * sizeof(int64_t)); w->cap = w->out ? n : 0; }
        w->oom = !w->out;
        for (int64_t i = 0; i < n && w->out; i++) {
            int64_t v = w->bufs[0][i];
            for (int k = 1; k < w->n; k++) v = op == AL_DIST_SUM ? v + w->bufs[k][i] : (w->bufs[k][i] > v ? w->bufs[k][i] : v);
            w->out[i] = v;
        }
    }
    pthread_barrier_wait(&w->bar);
    int oom = w->oom;
    if (!oom) memcpy(buf, w->out, (size_t)n * sizeof(int64_t));
    pthread_barrier_wait(&w->bar);             /* nobody reuses out before every rank has its copy */
    return oom ? -1 : 0;
}

static void *tu_rank_main(void *p)
{
    tu_rank *r = p;
    r->fn(&r->d, r->arg);
    return NULL;
}

void tu_ranks(int n, tu_rank_fn fn, void *const *args)
{
    assert_true(n >= 1 && n <= TU_MAXRANKS);
    tu_world w;
    memset(&w, 0, sizeof w);
    w.n = n;
    pthread_barrier_init(&w.bar, NULL, (unsigned)n);
    tu_rank r[TU_MAXRANKS];
    pthread_t th[TU_MAXRANKS];
    for (int k = 0; k < n; k++) {
        r[k] = (tu_rank){&w, {k, n, tu_allreduce, &r[k]}, fn, args[k]};
        assert_int_equal(pthread_create(&th[k], NULL, tu_rank_main, &r[k]), 0);
    }
    for (int k = 0; k < n; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&w.bar);
    free(w.out);
}
