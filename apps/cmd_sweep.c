/* cmd_sweep.c — attnlab sweep: models × training-set sizes (or graph splits) × seeds, each run a child
 * `attnlab train` process, all results in one CSV that is only ever replaced atomically.
 *
 * Resumability. A run is identified by (task, dataset, model, split, seed), where split is
 * "size=N", "lpc=K", "frac=F" or "planetoid"; its run_id in the sweep CSV is al_run_id() of that
 * description (the child's own run_id is replaced when its rows are merged), so a run whose run_id
 * is in the CSV is complete. A child writes CSV.run-RUNID.PID.part (its stderr goes to .part.log,
 * shown only if the run fails). When it exits 0 the sweep writes CSV.tmp.PID = old CSV + the
 * child's rows, fsyncs and renames it over CSV (al_write_atomic). On start, *.part, *.part.log and
 * *.tmp.* files left by a killed sweep are deleted and their runs redone. Children get
 * PR_SET_PDEATHSIG(SIGKILL), so a sweep killed with SIGKILL leaves no orphan writing. A lock file
 * CSV.lock (flock) keeps two sweeps off one CSV. docs/experiments.md has the whole story.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attnlab/gnn.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/models.h"
#include "attnlab/results.h"
#include "cli.h"

#define MAXLIST 256
#define MAXJOBS 64
#define MAXRUNS 100000      /* runs in one sweep */
#define STEP_BUDGET 1000    /* image-tradeoff: optimisation steps per run (batch 64) */
#define EVALS 5             /* image runs longer than this many epochs are evaluated ~EVALS times */
/* Presets' epoch rules, stored in sweep_cfg.epochs (a positive value is a fixed count, 0 the trainer's
 * default): the image step budget, the demo's step budget, the graph trainer's defaults with gat-full capped. */
enum { EPOCHS_STEP_BUDGET = -1, EPOCHS_DEMO = -2, EPOCHS_GRAPH_CAPPED = -3 };
#define GAT_FULL_EPOCHS 100 /* graph-tradeoff: gat-full's epoch cap */
#define DEMO_STEPS 400      /* demo: optimisation steps per run */
#define DEMO_EVALS 4        /* demo: evaluations per run */
#define BATCH 64            /* the image trainer's default batch size */

enum { SPLIT_SIZE, SPLIT_LPC, SPLIT_FRAC, SPLIT_PLANETOID };
enum { RUN_TODO, RUN_SKIP, RUN_RUNNING, RUN_DONE, RUN_FAILED, RUN_STOPPED };

typedef struct split { int kind; long n; double frac; } split;

typedef struct plan_run {
    const char *model;
    split sp;
    long seed;
    int epochs;               /* 0: the trainer's default */
    char desc[96];            /* "cnn size=1000 seed=2" */
    char run_id[17];
    char *part;               /* per-run temporary CSV (malloc'd) */
    int state;
    pid_t pid;
    double t0;
} plan_run;

typedef struct sweep_cfg {
    const char *preset, *task, *data, *csv;
    char *models[MAXLIST]; int nmodels;
    split splits[MAXLIST]; int nsplits;
    long seeds[MAXLIST]; int nseeds;
    int epochs;               /* > 0 fixed; 0 trainer default; < 0 one of the presets' EPOCHS_* rules */
    int jobs, dry_run, post;  /* post: demo's summary table and plot */
    const char *plot_out;
    char *models_buf;         /* storage of models[] from --models */
} sweep_cfg;

/* ---------------- signals: forwarded to running children from the handler ---------------- */
static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_child[MAXJOBS];

static void on_signal(int sig)
{
    g_stop = sig;
    for (int i = 0; i < MAXJOBS; i++)
        if (g_child[i] > 0) kill((pid_t)g_child[i], sig);
}

/* ---------------- usage ---------------- */
static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab sweep --preset image-tradeoff|graph-tradeoff|demo [--csv FILE] [--seeds LIST] [--jobs N]\n"
        "       attnlab sweep --task image --models a,b,... --train-sizes n1,n2,... --seeds LIST --csv FILE\n"
        "       attnlab sweep --task graph --models a,b,... [--labels-per-class k1,k2,...] [--train-frac F,...]\n"
        "                     [--planetoid] --seeds LIST --csv FILE\n"
        "  Runs every combination model x size (or graph split) x seed as a child `attnlab train` process and\n"
        "  appends each finished run's rows to FILE in one atomic step. Runs already in FILE are skipped, so a\n"
        "  sweep that was interrupted (Ctrl-C, kill -9, power loss) resumes with the same command.\n"
        "options:\n"
        "  --task image|graph       image: models cnn, sa, local; graph: gat, gat-full, gcn, mlp\n"
        "  --data NAME              dataset passed to train (default fashion-mnist / cora)\n"
        "  --models LIST            comma-separated models\n"
        "  --train-sizes LIST       image: training-set sizes (at most the training set, 60000 for Fashion-MNIST)\n"
        "  --labels-per-class LIST  graph: labelled training nodes per class\n"
        "  --train-frac LIST        graph: fraction of the non-val/test labelled nodes used for training\n"
        "  --planetoid              graph: also run the standard Planetoid split\n"
        "  --seeds LIST             seeds: 1,2,3 or 1-10 or 1-3,7\n"
        "  --epochs E               epochs per run (default: the trainer's default; presets: see below)\n"
        "  --csv FILE               results CSV (presets: results/PRESET.csv)\n"
        "  --jobs N                 N runs side by side (default 1); each gets OMP_NUM_THREADS = cores / N\n"
        "                           unless OMP_NUM_THREADS is set\n"
        "  --plot FILE.png          demo: where the plot goes (default results/demo.png)\n"
        "  --dry-run                print the runs (todo / done) and exit\n"
        "presets:\n"
        "  image-tradeoff  cnn,sa,local on Fashion-MNIST, sizes 500,1000,2000,5000,10000,30000,60000, seeds 1-3,\n"
        "                  the same optimisation budget per run: epochs = max(2, ceil(%d / ceil(size / %d)))\n"
        "                  i.e. at least %d steps of batch %d (500: 125 epochs, 1000: 63, 2000: 32, 5000: 13,\n"
        "                  10000: 7, 30000: 3, 60000: 2); runs over 5 epochs are evaluated every ceil(epochs/5)\n"
        "                  epochs and after the last\n"
        "  graph-tradeoff  gat,gat-full,gcn,mlp on cora, labels per class 2,5,10,20,50,100 and train-frac 0.6,\n"
        "                  seeds 1-10, the trainer's defaults except gat-full: at most %d epochs (its epoch costs\n"
        "                  ~20x gat's and its validation accuracy does not move: see docs/experiments.md)\n"
        "  demo            cnn,sa,local on 1000 and 10000 Fashion-MNIST images, seed 1, about 400 steps per run\n"
        "                  (1000: 25 epochs, 10000: 3; evaluated 4 times); writes results/demo.csv, prints the\n"
        "                  summary table, plots results/demo.png\n"
        "exit status: 0 all runs complete, 1 a run failed or an I/O error, 2 bad arguments, 130 interrupted\n",
        STEP_BUDGET, BATCH, STEP_BUDGET, BATCH, GAT_FULL_EPOCHS);
}

/* One line on stderr; returns the usage-error exit status 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    fprintf(stderr, "attnlab sweep: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    return 2;
}

/* ---------------- list parsing ---------------- */
/* Split a comma list into items (pointers into a strdup'd copy kept in *keep). Returns the count or -1. */
static int split_list(const char *opt, const char *s, char **items, int max, char **keep)
{
    if (!s || !*s) { bad("%s: empty list", opt); return -1; }
    char *c = strdup(s);
    if (!c) return -1;
    *keep = c;
    int n = 0;
    for (char *p = c;;) {
        char *q = strchr(p, ',');
        if (q) *q = 0;
        if (!*p) { bad("%s: empty item in list '%s'", opt, s); return -1; }
        if (n == max) { bad("%s: too many items in '%s'", opt, s); return -1; }
        items[n++] = p;
        if (!q) break;
        p = q + 1;
    }
    return n;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *e; errno = 0;
    long v = strtol(s, &e, 10);
    if (errno || e == s || *e || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_seeds(const char *s, sweep_cfg *c)
{
    char *items[MAXLIST], *keep = NULL;
    int n = split_list("--seeds", s, items, MAXLIST, &keep);
    c->nseeds = 0;
    for (int i = 0; i < n; i++) {
        long a, b;
        char *dash = strchr(items[i] + 1, '-');   /* + 1: a leading '-' is a negative number, refused below */
        if (dash) {
            *dash = 0;
            if (parse_int(items[i], 0, INT_MAX, &a) || parse_int(dash + 1, 0, INT_MAX, &b) || b < a) {
                *dash = '-';
                bad("--seeds: bad range '%s' in '%s' (want A-B with 0 <= A <= B)", items[i], s);
                n = -1; break;
            }
        } else if (parse_int(items[i], 0, INT_MAX, &a)) {
            bad("--seeds: bad seed '%s' in '%s' (want a non-negative integer or A-B)", items[i], s);
            n = -1; break;
        } else b = a;
        if (b - a + 1 > MAXLIST - c->nseeds) { bad("--seeds: more than %d seeds in '%s'", MAXLIST, s); n = -1; break; }
        for (long v = a; v <= b; v++) {
            for (int j = 0; j < c->nseeds; j++)
                if (c->seeds[j] == v) { bad("--seeds: seed %ld appears twice in '%s'", v, s); free(keep); return -1; }
            c->seeds[c->nseeds++] = v;
        }
    }
    free(keep);
    return n < 0 ? -1 : 0;
}

static int add_splits(const char *opt, const char *s, int kind, sweep_cfg *c)
{
    char *items[MAXLIST], *keep = NULL;
    int n = split_list(opt, s, items, MAXLIST, &keep);
    for (int i = 0; i < n; i++) {
        split sp = {kind, 0, 0};
        if (kind == SPLIT_FRAC) {
            char *e; errno = 0;
            sp.frac = strtod(items[i], &e);
            if (errno || *e || !(sp.frac > 0 && sp.frac <= 1)) { bad("%s: '%s' is not a fraction in (0, 1]", opt, items[i]); n = -1; break; }
        } else if (parse_int(items[i], 1, INT_MAX, &sp.n)) {
            bad("%s: '%s' is not a positive integer", opt, items[i]); n = -1; break;
        }
        for (int j = 0; j < c->nsplits; j++)
            if (c->splits[j].kind == kind && c->splits[j].n == sp.n && c->splits[j].frac == sp.frac) {
                bad("%s: '%s' appears twice", opt, items[i]); free(keep); return -1;
            }
        if (c->nsplits == MAXLIST) { bad("%s: too many items", opt); n = -1; break; }
        c->splits[c->nsplits++] = sp;
    }
    free(keep);
    return n < 0 ? -1 : 0;
}

/* ---------------- validation tables ---------------- */
/* The models a sweep can run, from the library's tables: the trainable image models (cnn, sa,
 * local) or every graph model. Writes up to max names into out; returns how many. */
static int task_models(int image, const char **out, int max)
{
    int n = 0;
    if (image) {
        for (int i = 0; i < al_model_kind_count() && n < max; i++)
            if (al_model_kind_at(i)->trainable) out[n++] = al_model_kind_at(i)->name;
    } else {
        for (int i = 0; i < al_gnn_model_count() && n < max; i++) out[n++] = al_gnn_model_at(i)->name;
    }
    return n;
}
static int known_model(int image, const char *name)
{
    if (image) { const al_model_kind *k = al_model_kind_find(name); return k && k->trainable; }
    return al_gnn_model_find(name) != NULL;
}
/* "a, b or c" of the task's models */
static const char *task_model_list(int image, char *buf, size_t n)
{
    const char *names[MAXLIST];
    int k = task_models(image, names, MAXLIST);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < k && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i == 0 ? "" : i == k - 1 ? " or " : ", ", names[i]);
    return buf;
}

/* Training images of Fashion-MNIST: the count in the IDX header (or 60000 if unreadable), found
 * where `attnlab train` finds it (al_data_locate); -1 for a dataset we cannot size (an image folder:
 * the trainer checks). */
static long image_train_count(const char *data)
{
    if (strcmp(data, "fashion-mnist")) return -1;
    int64_t n = 0;
    al_error e = {{0}};
    return al_fashion_mnist_count(NULL, &n, NULL, &e) == AL_OK ? (long)n : 60000;
}

/* Graph training candidates (labelled nodes outside val and test) and classes of known graphs. */
static const struct { const char *name; int candidates, classes; } graph_table[] = {{"cora", 1208, 7}};

/* ---------------- the plan ---------------- */
static void split_str(const split *sp, char *buf, size_t n)
{
    switch (sp->kind) {
    case SPLIT_SIZE: snprintf(buf, n, "size=%ld", sp->n); break;
    case SPLIT_LPC:  snprintf(buf, n, "lpc=%ld", sp->n); break;
    case SPLIT_FRAC: snprintf(buf, n, "frac=%g", sp->frac); break;
    default:         snprintf(buf, n, "planetoid"); break;
    }
}

static int epochs_for(const sweep_cfg *c, const char *model, const split *sp)
{
    if (c->epochs == EPOCHS_GRAPH_CAPPED) {   /* gat-full: the attention model over every node */
        const al_gnn_model *gm = al_gnn_model_find(model);
        return gm && gm->attention && !gm->graph ? GAT_FULL_EPOCHS : 0;
    }
    if (c->epochs >= 0) return c->epochs;
    long steps = (sp->n + BATCH - 1) / BATCH;
    if (c->epochs == EPOCHS_DEMO) {                                     /* demo: ~DEMO_STEPS steps */
        long d = (DEMO_STEPS + steps - 1) / steps;
        return (int)(d < 1 ? 1 : d);
    }
    long e = (STEP_BUDGET + steps - 1) / steps;                         /* step budget */
    return (int)(e < 2 ? 2 : e);
}

/* ---------------- the CSV and its companions ---------------- */
typedef struct csvbuf { char *p; size_t n, cap; } csvbuf;

static int buf_put(csvbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p = q; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n; b->p[b->n] = 0;
    return 0;
}

static void dir_and_base(const char *path, char *dir, size_t dn, const char **base)
{
    const char *sl = strrchr(path, '/');
    if (!sl) { snprintf(dir, dn, "."); *base = path; }
    else if (sl == path) { snprintf(dir, dn, "/"); *base = sl + 1; }
    else { snprintf(dir, dn, "%.*s", (int)(sl - path), path); *base = sl + 1; }
}

static int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') { *p = 0; if (mkdir(tmp, 0755) && errno != EEXIST) return -1; *p = '/'; }
    if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
    return 0;
}

static int all_digits(const char *s) { if (!*s) return 0; for (; *s; s++) if (*s < '0' || *s > '9') return 0; return 1; }

/* Delete BASE.run-*.part[.log] and BASE.tmp.DIGITS in dir: what a killed sweep leaves behind. */
static int remove_leftovers(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t bl = strlen(base);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, bl)) continue;
        const char *rest = nm + bl;
        size_t rl = strlen(rest);
        int part = !strncmp(rest, ".run-", 5) && rl > 10
                   && (!strcmp(rest + rl - 5, ".part") || (rl > 14 && !strcmp(rest + rl - 9, ".part.log")));
        int tmp = !strncmp(rest, ".tmp.", 5) && all_digits(rest + 5);
        if (!part && !tmp) continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, nm) >= (int)sizeof p) continue;
        if (unlink(p) == 0) { fprintf(stderr, "sweep: removed %s left by an interrupted sweep\n", p); removed++; }
    }
    closedir(d);
    return removed;
}

/* Remove a run's part file and its stderr log; first show the log's tail if asked (a failed run). */
static void drop_run_files(const plan_run *r, int show_log)
{
    char log[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s.log", r->part);
    if (show_log) {
        FILE *f = fopen(log, "rb");
        if (f) {
            char buf[4096];
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            if (n > (long)sizeof buf - 1) fseek(f, n - (long)sizeof buf + 1, SEEK_SET); else fseek(f, 0, SEEK_SET);
            size_t k = fread(buf, 1, sizeof buf - 1, f);
            buf[k] = 0;
            fclose(f);
            if (k) fprintf(stderr, "  --- stderr of the run ---\n%s%s", buf, buf[k - 1] == '\n' ? "" : "\n");
        }
    }
    unlink(r->part);
    unlink(log);
}

static void setmsg(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setmsg(char *msg, size_t n, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
}

/* Merge a finished child's rows into the CSV (one atomic replace). Returns 0, or -1 with msg set;
 * *fatal is set when the main CSV could not be written. */
static int merge_run(const sweep_cfg *c, plan_run *r, csvbuf *main_csv, double *acc, char *msg, size_t mn, int *fatal)
{
    char *text; size_t len;
    al_error e = {{0}};
    al_results res;
    *fatal = 0;
    if (al_read_file(r->part, &text, &len, &e) != AL_OK) { setmsg(msg, mn, "%s", e.msg); return -1; }
    if (al_results_parse(text, len, r->part, &res, &e) != AL_OK) { setmsg(msg, mn, "%s", e.msg); free(text); return -1; }
    int ok = 0;
    if (res.n == 0) setmsg(msg, mn, "%s: the trainer wrote no rows", r->part);
    else if (res.nrun != 1) setmsg(msg, mn, "%s: the trainer wrote %d runs, expected 1", r->part, res.nrun);
    else {
        const al_result_row *last = &res.row[res.n - 1];
        if (strcmp(last->task, c->task) || strcmp(last->model, r->model) || last->seed != r->seed
            || (r->sp.kind == SPLIT_SIZE && last->train_size != r->sp.n))
            setmsg(msg, mn, "%s: rows are for %s %s size=%ld seed=%ld, expected %s", r->part, last->task,
                     last->model, last->train_size, last->seed, r->desc);
        else { ok = 1; *acc = last->test_acc; }
    }
    al_results_free(&res);
    if (!ok) { free(text); return -1; }
    size_t old = main_csv->n;
    int oom = 0;
    if (old == 0) oom |= buf_put(main_csv, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1);
    const char *p = strchr(text, '\n') + 1;              /* skip the header (parse checked it) */
    while (*p) {
        const char *nl = strchr(p, '\n'), *comma = strchr(p, ',');
        oom |= buf_put(main_csv, r->run_id, strlen(r->run_id));
        oom |= buf_put(main_csv, comma, (size_t)(nl + 1 - comma));
        p = nl + 1;
    }
    free(text);
    if (oom || al_write_atomic(c->csv, main_csv->p, main_csv->n, &e) != AL_OK) {
        main_csv->n = old;
        setmsg(msg, mn, "%s", oom ? "out of memory" : e.msg);
        *fatal = 1;
        return -1;
    }
    drop_run_files(r, 0);
    return 0;
}

/* Fork/exec `EXE train ...` for run r; returns the pid or -1. */
static pid_t start_child(const sweep_cfg *c, plan_run *r, const char *exe, const char *threads)
{
    char sz[32], sd[32], ep[32];
    const char *av[32]; int n = 0;
    av[n++] = exe; av[n++] = "train"; av[n++] = "--task"; av[n++] = c->task;
    av[n++] = "--data"; av[n++] = c->data; av[n++] = "--model"; av[n++] = r->model;
    switch (r->sp.kind) {
    case SPLIT_SIZE: snprintf(sz, sizeof sz, "%ld", r->sp.n); av[n++] = "--train-size"; av[n++] = sz; break;
    case SPLIT_LPC:  snprintf(sz, sizeof sz, "%ld", r->sp.n); av[n++] = "--labels-per-class"; av[n++] = sz; break;
    case SPLIT_FRAC: snprintf(sz, sizeof sz, "%g", r->sp.frac); av[n++] = "--train-frac"; av[n++] = sz; break;
    default:         av[n++] = "--split"; av[n++] = "planetoid"; break;
    }
    if (r->epochs > 0) { snprintf(ep, sizeof ep, "%d", r->epochs); av[n++] = "--epochs"; av[n++] = ep; }
    /* Long image runs (small splits under the step budget) are evaluated about EVALS times, and after
     * the last epoch, instead of after each of hundreds of epochs: evaluation would dominate. */
    char ev[32];
    int evals = c->epochs == EPOCHS_DEMO ? DEMO_EVALS : EVALS;
    if (!strcmp(c->task, "image") && r->epochs > evals) {
        snprintf(ev, sizeof ev, "%d", (r->epochs + evals - 1) / evals);
        av[n++] = "--eval-every"; av[n++] = ev;
    }
    snprintf(sd, sizeof sd, "%ld", r->seed);
    av[n++] = "--seed"; av[n++] = sd; av[n++] = "--csv"; av[n++] = r->part; av[n++] = "--quiet";
    av[n] = NULL;
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = SIG_DFL;
        sigaction(SIGINT, &sa, NULL); sigaction(SIGTERM, &sa, NULL);
        sigset_t none; sigemptyset(&none); sigprocmask(SIG_SETMASK, &none, NULL);
        setpgid(0, 0);                                /* Ctrl-C reaches the sweep only; it forwards */
        prctl(PR_SET_PDEATHSIG, SIGKILL);             /* no orphan outlives a killed sweep */
        if (getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) { dup2(devnull, 1); close(devnull); }   /* the trainer's summary; rows go to the CSV */
        char log[PATH_MAX + 8];
        snprintf(log, sizeof log, "%s.log", r->part);
        int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);   /* shown if the run fails */
        if (lfd >= 0) { dup2(lfd, 2); close(lfd); }
        if (threads) setenv("OMP_NUM_THREADS", threads, 1);
        execv(exe, (char *const *)av);
        fprintf(stderr, "attnlab sweep: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    if (pid > 0) setpgid(pid, pid);
    return pid;
}

/* ---------------- argument parsing ---------------- */
static int set_preset(sweep_cfg *c, const char *name)
{
    c->preset = name;
    if (!strcmp(name, "image-tradeoff") || !strcmp(name, "demo")) {
        int demo = !strcmp(name, "demo");
        static const long sizes[] = {500, 1000, 2000, 5000, 10000, 30000, 60000}, dsizes[] = {1000, 10000};
        c->task = "image";
        c->nmodels = task_models(1, (const char **)c->models, MAXLIST);
        const long *s = demo ? dsizes : sizes;
        c->nsplits = demo ? 2 : 7;
        for (int i = 0; i < c->nsplits; i++) c->splits[i] = (split){SPLIT_SIZE, s[i], 0};
        c->nseeds = demo ? 1 : 3;
        for (int i = 0; i < c->nseeds; i++) c->seeds[i] = i + 1;
        c->epochs = demo ? EPOCHS_DEMO : EPOCHS_STEP_BUDGET;
        c->post = demo;
    } else if (!strcmp(name, "graph-tradeoff")) {
        static const long lpc[] = {2, 5, 10, 20, 50, 100};
        c->task = "graph";
        c->nmodels = task_models(0, (const char **)c->models, MAXLIST);
        c->nsplits = 0;
        for (int i = 0; i < 6; i++) c->splits[c->nsplits++] = (split){SPLIT_LPC, lpc[i], 0};
        c->splits[c->nsplits++] = (split){SPLIT_FRAC, 0, 0.6};
        c->nseeds = 10;
        for (int i = 0; i < 10; i++) c->seeds[i] = i + 1;
        c->epochs = EPOCHS_GRAPH_CAPPED;
    } else return bad("unknown preset '%s' (expected image-tradeoff, graph-tradeoff or demo)", name);
    return 0;
}

/* Options into *c (presets filled in); 0, or the exit status 2 after one line on stderr. */
static int parse_args(int argc, char **argv, sweep_cfg *c)
{
    enum { O_PRESET = 256, O_TASK, O_DATA, O_MODELS, O_SIZES, O_LPC, O_FRAC, O_PLANETOID, O_SEEDS, O_EPOCHS,
           O_CSV, O_JOBS, O_PLOT, O_DRY };
    static const struct option opts[] = {
        {"preset", required_argument, 0, O_PRESET}, {"task", required_argument, 0, O_TASK},
        {"data", required_argument, 0, O_DATA}, {"models", required_argument, 0, O_MODELS},
        {"train-sizes", required_argument, 0, O_SIZES}, {"labels-per-class", required_argument, 0, O_LPC},
        {"train-frac", required_argument, 0, O_FRAC}, {"planetoid", no_argument, 0, O_PLANETOID},
        {"seeds", required_argument, 0, O_SEEDS}, {"epochs", required_argument, 0, O_EPOCHS},
        {"csv", required_argument, 0, O_CSV}, {"jobs", required_argument, 0, O_JOBS},
        {"plot", required_argument, 0, O_PLOT}, {"dry-run", no_argument, 0, O_DRY},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    static char csv_default[PATH_MAX];
    const char *preset = NULL, *models = NULL, *sizes = NULL, *lpc = NULL, *frac = NULL, *seeds = NULL;
    int planetoid = 0, epochs = 0, freeform = 0, ch;
    long v;
    c->jobs = 1;
    optind = 0; opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return -1;
        case O_PRESET: preset = optarg; break;
        case O_TASK: c->task = optarg; freeform = 1; break;
        case O_DATA: c->data = optarg; break;
        case O_MODELS: models = optarg; freeform = 1; break;
        case O_SIZES: sizes = optarg; freeform = 1; break;
        case O_LPC: lpc = optarg; freeform = 1; break;
        case O_FRAC: frac = optarg; freeform = 1; break;
        case O_PLANETOID: planetoid = 1; freeform = 1; break;
        case O_SEEDS: seeds = optarg; break;
        case O_EPOCHS:
            if (parse_int(optarg, 1, 100000, &v)) return bad("--epochs: '%s' is not an integer in 1..100000", optarg);
            epochs = (int)v; break;
        case O_CSV: c->csv = optarg; break;
        case O_JOBS:
            if (parse_int(optarg, 1, MAXJOBS, &v)) return bad("--jobs: '%s' is not an integer in 1..%d", optarg, MAXJOBS);
            c->jobs = (int)v; break;
        case O_PLOT: c->plot_out = optarg; break;
        case O_DRY: c->dry_run = 1; break;
        default: return bad("unknown or incomplete option '%s' (see attnlab sweep --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad("unexpected argument '%s' (see attnlab sweep --help)", argv[optind]);
    if (preset) {
        if (freeform) return bad("--preset %s sets task, models and sizes; use --csv, --seeds, --epochs, --jobs only", preset);
        if (set_preset(c, preset)) return 2;
        if (!c->csv) { snprintf(csv_default, sizeof csv_default, "results/%s.csv", preset); c->csv = csv_default; }
        if (c->post && !c->plot_out) c->plot_out = "results/demo.png";
    } else {
        if (!c->task) return bad("give --preset NAME or --task image|graph (see attnlab sweep --help)");
        int image = !strcmp(c->task, "image");
        if (!image && strcmp(c->task, "graph")) return bad("--task: unknown task '%s' (expected image or graph)", c->task);
        if (!models) return bad("--models is required");
        c->nmodels = split_list("--models", models, c->models, MAXLIST, &c->models_buf);
        if (c->nmodels < 0) return 2;
        for (int i = 0; i < c->nmodels; i++) {
            char list[256];
            if (!known_model(image, c->models[i]))
                return bad("--models: unknown %s model '%s' (expected %s)", c->task, c->models[i],
                           task_model_list(image, list, sizeof list));
            for (int j = 0; j < i; j++)
                if (!strcmp(c->models[i], c->models[j])) return bad("--models: '%s' appears twice", c->models[i]);
        }
        if (image) {
            if (lpc || frac || planetoid) return bad("--labels-per-class, --train-frac and --planetoid are for --task graph");
            if (!sizes) return bad("--task image needs --train-sizes LIST");
            if (add_splits("--train-sizes", sizes, SPLIT_SIZE, c)) return 2;
        } else {
            if (sizes) return bad("--train-sizes is for --task image; graphs take --labels-per-class / --train-frac");
            if (!lpc && !frac && !planetoid) return bad("--task graph needs --labels-per-class LIST, --train-frac LIST or --planetoid");
            if (lpc && add_splits("--labels-per-class", lpc, SPLIT_LPC, c)) return 2;
            if (frac && add_splits("--train-frac", frac, SPLIT_FRAC, c)) return 2;
            if (planetoid) c->splits[c->nsplits++] = (split){SPLIT_PLANETOID, 0, 0};
        }
        if (!seeds) return bad("--seeds is required (e.g. --seeds 1-3)");
        if (!c->csv) return bad("--csv FILE is required");
    }
    if (epochs) c->epochs = epochs;
    if (seeds && parse_seeds(seeds, c)) return 2;
    if (!c->data) c->data = strcmp(c->task, "image") ? "cora" : "fashion-mnist";
    if (!*c->csv) return bad("--csv: empty file name");
    long total = (long)c->nseeds * c->nsplits * c->nmodels;
    if (total > MAXRUNS) return bad("%ld runs are too many for one sweep (at most %d)", total, MAXRUNS);
    return 0;
}

/* The dataset exists and every size fits its training set; 0 or 2. */
static int check_data(const sweep_cfg *c)
{
    if (!strcmp(c->task, "image")) {
        struct stat sb;
        if (strcmp(c->data, "fashion-mnist") && (stat(c->data, &sb) || !S_ISDIR(sb.st_mode)))
            return bad("--data: '%s' is neither fashion-mnist nor an image folder", c->data);
        long have = image_train_count(c->data);
        for (int i = 0; i < c->nsplits && have > 0; i++)
            if (c->splits[i].n > have)
                return bad("--train-sizes: %ld is larger than the %s training set (%ld images)", c->splits[i].n, c->data, have);
        return 0;
    }
    char gdir[PATH_MAX]; al_error ge = {{0}};
    if (al_graph_resolve(c->data, NULL, gdir, sizeof gdir, &ge) != AL_OK) return bad("--data: %s", ge.msg);
    for (size_t t = 0; t < sizeof graph_table / sizeof graph_table[0]; t++) {
        if (strcmp(graph_table[t].name, c->data)) continue;
        for (int i = 0; i < c->nsplits; i++)
            if (c->splits[i].kind == SPLIT_LPC && c->splits[i].n * graph_table[t].classes > graph_table[t].candidates)
                return bad("--labels-per-class: %ld x %d classes is more than the %d labelled training candidates of %s",
                           c->splits[i].n, graph_table[t].classes, graph_table[t].candidates, c->data);
    }
    return 0;
}

/* The runs, ordered seed, then split, then model: a half-done sweep has every model at the first seeds. */
static plan_run *make_plan(const sweep_cfg *c, const char *dir, const char *base, int *np)
{
    int n = c->nseeds * c->nsplits * c->nmodels, k = 0;
    plan_run *plan = calloc((size_t)(n > 0 ? n : 1), sizeof *plan);
    if (!plan) return NULL;
    for (int s = 0; s < c->nseeds; s++)
        for (int j = 0; j < c->nsplits; j++)
            for (int m = 0; m < c->nmodels; m++) {
                plan_run *r = &plan[k++];
                char sp[48], canon[256];
                r->model = c->models[m]; r->sp = c->splits[j]; r->seed = c->seeds[s];
                r->epochs = epochs_for(c, r->model, &c->splits[j]);
                split_str(&r->sp, sp, sizeof sp);
                snprintf(r->desc, sizeof r->desc, "%s %s seed=%ld", r->model, sp, r->seed);
                snprintf(canon, sizeof canon, "sweep task=%s dataset=%s model=%s %s seed=%ld", c->task, c->data,
                         r->model, sp, r->seed);
                al_run_id(r->run_id, canon);
                if (asprintf(&r->part, "%s/%s.run-%s.%ld.part", dir, base, r->run_id, (long)getpid()) < 0) {
                    r->part = NULL; *np = k; return plan;   /* the caller sees the NULL */
                }
            }
    *np = k;
    return plan;
}

static void free_plan(plan_run *plan, int np)
{
    for (int i = 0; i < np; i++) free(plan[i].part);
    free(plan);
}

/* Run every RUN_TODO run, c->jobs at a time, merging each finished run into the CSV.
 * Returns 0 (check *nfail), 1 when the CSV could not be written, 130 when interrupted. */
static int run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail)
{
    char threads_buf[32]; const char *threads = NULL;
    if (c->jobs > 1 && !getenv("OMP_NUM_THREADS")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        snprintf(threads_buf, sizeof threads_buf, "%ld", cores / c->jobs > 1 ? cores / c->jobs : 1);
        threads = threads_buf;
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa); sa.sa_handler = on_signal; sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int); sigaction(SIGTERM, &sa, &old_term);
    sigset_t block, prev;
    sigemptyset(&block); sigaddset(&block, SIGINT); sigaddset(&block, SIGTERM);
    g_stop = 0;
    int next = 0, running = 0, fatal = 0, slot_of[MAXJOBS];
    *ndone = *nfail = 0;
    for (;;) {
        while (!g_stop && !fatal && running < c->jobs && next < np) {
            plan_run *r = &plan[next++];
            if (r->state != RUN_TODO) continue;
            int slot = 0;
            while (g_child[slot] > 0) slot++;
            drop_run_files(r, 0);
            if (c->jobs == 1) fprintf(stderr, "[%d/%d] %s ... ", (int)(r - plan) + 1, np, r->desc);
            else fprintf(stderr, "[%d/%d] %s started\n", (int)(r - plan) + 1, np, r->desc);
            sigprocmask(SIG_BLOCK, &block, &prev);     /* the handler must see the pid once it exists */
            r->pid = start_child(c, r, exe, threads);
            if (r->pid > 0) { g_child[slot] = r->pid; slot_of[slot] = (int)(r - plan); }
            sigprocmask(SIG_SETMASK, &prev, NULL);
            if (r->pid < 0) {
                fprintf(stderr, "%sFAILED: fork: %s\n", c->jobs == 1 ? "" : "sweep: ", strerror(errno));
                r->state = RUN_FAILED; (*nfail)++; continue;
            }
            r->state = RUN_RUNNING; r->t0 = al_time(); running++;
        }
        if (running == 0) break;
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) { if (errno == EINTR) continue; break; }
        int slot = 0;
        while (slot < MAXJOBS && g_child[slot] != pid) slot++;
        if (slot == MAXJOBS) continue;
        plan_run *r = &plan[slot_of[slot]];
        g_child[slot] = 0; running--;
        char head[160] = "";
        if (c->jobs > 1) snprintf(head, sizeof head, "[%d/%d] %s ", slot_of[slot] + 1, np, r->desc);
        double secs = al_time() - r->t0;
        if (g_stop) {                                   /* a partial run, whatever its exit status */
            r->state = RUN_STOPPED; drop_run_files(r, 0);
            fprintf(stderr, "%sinterrupted\n", head);
            continue;
        }
        double acc = NAN; char msg[AL_ERRLEN + 64] = "";
        int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
        if (!ok && WIFEXITED(st)) snprintf(msg, sizeof msg, "train exited with status %d", WEXITSTATUS(st));
        else if (!ok) snprintf(msg, sizeof msg, "train killed by signal %d", WTERMSIG(st));
        else ok = merge_run(c, r, main_csv, &acc, msg, sizeof msg, &fatal) == 0;
        if (ok) { r->state = RUN_DONE; (*ndone)++; fprintf(stderr, "%sdone %.4f (%.1f s)\n", head, acc, secs); }
        else {
            r->state = RUN_FAILED; (*nfail)++;
            fprintf(stderr, "%sFAILED: %s\n", head, msg);
            drop_run_files(r, 1);
        }
    }
    sigaction(SIGINT, &old_int, NULL); sigaction(SIGTERM, &old_term, NULL);
    return g_stop ? 130 : fatal ? 1 : 0;
}

int cmd_sweep(int argc, char **argv)
{
    static sweep_cfg c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(argc, argv, &c);
    if (!rc) rc = check_data(&c);
    if (rc) { free(c.models_buf); return rc < 0 ? 0 : rc; }

    char dir[PATH_MAX]; const char *base;
    dir_and_base(c.csv, dir, sizeof dir, &base);
    int np = 0, lockfd = -1;
    plan_run *plan = make_plan(&c, dir, base, &np);
    csvbuf main_csv = {0};
    al_results have; memset(&have, 0, sizeof have);
    al_error e = {{0}};
    if (!plan || (np > 0 && !plan[np - 1].part)) { fprintf(stderr, "attnlab sweep: out of memory\n"); rc = 1; goto done; }

    /* lock, clean up after a killed sweep, read what is already done */
    if (!c.dry_run) {
        char lockp[PATH_MAX + 8];
        if (mkdir_p(dir)) { fprintf(stderr, "attnlab sweep: cannot create directory %s: %s\n", dir, strerror(errno)); rc = 1; goto done; }
        snprintf(lockp, sizeof lockp, "%s.lock", c.csv);
        lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lockfd < 0) { fprintf(stderr, "attnlab sweep: cannot open %s: %s\n", lockp, strerror(errno)); rc = 1; goto done; }
        if (flock(lockfd, LOCK_EX | LOCK_NB)) {
            fprintf(stderr, "attnlab sweep: another sweep is writing %s (lock %s held)\n", c.csv, lockp);
            rc = 1; goto done;
        }
        remove_leftovers(dir, base);
    }
    if (access(c.csv, F_OK) == 0) {
        size_t len;
        if (al_read_file(c.csv, &main_csv.p, &len, &e) != AL_OK
            || al_results_parse(main_csv.p, len, c.csv, &have, &e) != AL_OK) {
            fprintf(stderr, "attnlab sweep: %s (not touching it; fix or move the file)\n", e.msg);
            rc = 1; goto done;
        }
        main_csv.n = main_csv.cap = len;
    }
    int ntodo = 0;
    for (int i = 0; i < np; i++) {
        plan[i].state = al_results_find_run(&have, plan[i].run_id) >= 0 ? RUN_SKIP : RUN_TODO;
        ntodo += plan[i].state == RUN_TODO;
    }
    if (c.dry_run) {
        for (int i = 0; i < np; i++) {
            char ep[24] = "default";
            if (plan[i].epochs > 0) snprintf(ep, sizeof ep, "%d", plan[i].epochs);
            printf("[%d/%d] %s %s epochs=%s run_id=%s\n", i + 1, np, plan[i].state == RUN_SKIP ? "done" : "todo",
                   plan[i].desc, ep, plan[i].run_id);
        }
        goto done;
    }
    fprintf(stderr, "sweep: %d runs, %d already complete in %s, %d to run (%d at a time)\n", np, np - ntodo, c.csv,
            ntodo, c.jobs);

    char exe[PATH_MAX];
    const char *trainer = getenv("ATTNLAB_SWEEP_TRAINER");   /* tests: a stand-in for `attnlab train` */
    if (trainer && *trainer) snprintf(exe, sizeof exe, "%s", trainer);
    else {
        ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (k <= 0) { fprintf(stderr, "attnlab sweep: cannot find my own binary: %s\n", strerror(errno)); rc = 1; goto done; }
        exe[k] = 0;
    }
    int ndone, nfail;
    rc = run_plan(&c, plan, np, exe, &main_csv, &ndone, &nfail);
    if (rc == 130) {
        fprintf(stderr, "sweep: interrupted; %d runs finished this time, %s keeps every complete run — run the "
                "same command to resume\n", ndone, c.csv);
        goto done;
    }
    if (rc) { fprintf(stderr, "sweep: cannot update %s; stopping\n", c.csv); goto done; }
    fprintf(stderr, "sweep: %d runs done now, %d were already complete, %d failed; results in %s\n", ndone,
            np - ntodo, nfail, c.csv);
    rc = nfail ? 1 : 0;
    if (c.post && ndone + (np - ntodo) > 0) {
        char *sargv[] = {"summarize", (char *)c.csv, NULL};
        if (cmd_summarize(2, sargv)) rc = 1;
        char *pargv[] = {"plot", (char *)c.csv, "--out", (char *)c.plot_out, NULL};
        if (cmd_plot(4, pargv)) rc = 1;
        else fprintf(stderr, "sweep: plot written to %s\n", c.plot_out);
    }
done:
    if (lockfd >= 0) close(lockfd);
    al_results_free(&have);
    free(main_csv.p);
    if (plan) free_plan(plan, np);
    free(c.models_buf);
    return rc;
}
