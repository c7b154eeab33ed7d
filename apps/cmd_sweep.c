/* cmd_sweep.c — attnlab sweep: models × training-set sizes (or graph splits) × seeds, each run a child
 * `attnlab train` process, all results in one CSV that is only ever replaced atomically.
 *
 * Resumability. A run is identified by (task, dataset, model, split, seed), where split is
 * "size=N", "lpc=K", "frac=F" or "planetoid"; its run_id in the sweep CSV is al_run_id() of that
 * description (the child's own run_id is replaced when its rows are merged), so a run whose run_id
 * is in the CSV is complete. A child writes CSV.run-RUNID.part (its stderr goes to .part.log,
 * shown only if the run fails) and its training state to CSV.run-RUNID.train after every epoch
 * (--checkpoint-every 1 --resume). When it exits 0 the sweep writes CSV.tmp.PID = old CSV + the
 * child's rows, fsyncs and renames it over CSV (al_write_atomic). On start, a part file with its
 * state is kept and its run continues from the state (the child cuts the rows written after it);
 * other *.part, *.part.log and *.tmp.* files left by a killed sweep are deleted and their runs redone. Children get
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
#include "attnlab/datadir.h"
#include "attnlab/seq.h"
#include "attnlab/text.h"
#include "cli.h"
#include "sweep.h"
#include "image_common.h"
#include "app_mpi.h"

/* ---------------- usage ---------------- */
static void usage(FILE *f)
{
    char seq_models[128], seq_sizes[64];
    snprintf(seq_models, sizeof seq_models, "%s", al_seq_names());
    for (char *p = seq_models; *p; p++) if (*p == '|') *p = ',';
    static const long sizes[] = {SEQ_TRADEOFF_SIZES};
    size_t o = 0;
    seq_sizes[0] = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        o += (size_t)snprintf(seq_sizes + o, sizeof seq_sizes - o, "%s%ld", i ? "," : "", sizes[i]);
    fprintf(f,
        "usage: attnlab sweep --preset NAME [--csv FILE] [--seeds LIST] [--jobs N]   (NAME: image-tradeoff,\n"
        "                     prior-mismatch, augment, long-range, graph-tradeoff, graph-fair, sequence-tradeoff,\n"
        "                     distance, demo)\n"
        "       attnlab sweep --task image|sequence --models a,b,... --train-sizes n1,n2,... --seeds LIST --csv FILE\n"
        "       attnlab sweep --task graph --models a,b,... [--labels-per-class k1,k2,...] [--train-frac F,...]\n"
        "                     [--planetoid] --seeds LIST --csv FILE\n"
        "  Runs every combination model x size (or graph split) x seed as a child `attnlab train` process and\n"
        "  appends each finished run's rows to FILE in one atomic step. Runs already in FILE are skipped, so a\n"
        "  sweep that was interrupted (Ctrl-C, kill -9, power loss) resumes with the same command; a run that\n"
        "  was in flight continues from its training state (FILE.run-RUNID.train, written after every epoch).\n"
        "options:\n"
        "  --task image|graph|sequence  image: models cnn, sa, local; graph: gat, gat-full, gatv2, gt, gt-full,\n"
        "                           gcn, mlp;\n"
        "                           sequence: %s\n"
        "  --data NAME[,NAME...]    dataset passed to train (default fashion-mnist / cora / ud-english-ewt); a list\n"
        "                           is a grid axis (e.g. --task sequence --data recall:16,recall:256)\n"
        "  --models LIST            comma-separated models\n"
        "  --train-sizes LIST       image: training-set sizes (at most the training set, 60000 for Fashion-MNIST);\n"
        "                           sequence: training sentences (at most the treebank's, 12544 for EWT)\n"
        "  --labels-per-class LIST  graph: labelled training nodes per class\n"
        "  --train-frac LIST        graph: fraction of the non-val/test labelled nodes used for training\n"
        "  --planetoid              graph: also run the standard Planetoid split\n"
        "  --seeds LIST             seeds: 1,2,3 or 1-10 or 1-3,7\n"
        "model flags (a value, or a comma list that becomes a grid axis; each applies to the models that\n"
        "take it, e.g. --patch 2,4 doubles the sa and local runs and leaves cnn alone):\n"
        "  image: --patch --pos --score --norm --depth --dim --heads (attention models), --window (local),\n"
        "         --lr --wd --batch --test-size (every model; --test-size N evaluates a stratified subset\n"
        "         of N test images: quick checks only), --permute-pixels none,S and --augment none,SPEC (every\n"
        "         model; inside a list join an augmentation's parts with '+': shift:2+flip)\n"
        "  graph: --heads --attn-dropout (gat, gat-full, gatv2, gt, gt-full), --hidden --dropout --lr --wd\n"
        "         --patience (every model)\n"
        "  sequence: --pos --score --norm --depth --heads (sa, trunc), --window (window-fc, trunc: context each\n"
        "         side), --rnn (rnn), --lr --wd --batch (every model)\n"
        "  Each run's variant is its CSV row's config column; summarize and plot keep variants apart.\n"
        "  --epochs E               epochs per run (default: the trainer's default; presets: see below)\n"
        "  --csv FILE               results CSV (presets: results/PRESET.csv)\n"
        "  --jobs N                 N runs side by side (default 1); each gets OMP_NUM_THREADS = cores / N\n"
        "                           unless OMP_NUM_THREADS is set\n"
        "  --plot FILE.png          demo, sequence-tradeoff: where the plot goes (default results/PRESET.png;\n"
        "                           sequence-tradeoff also writes FILE-unseen_acc.png and FILE-ambig_acc.png)\n"
        "  --threads N              OpenMP threads of each run (default: cores / N of --jobs, and under mpirun\n"
        "                           cores / (jobs x ranks on the node); OMP_NUM_THREADS if set and jobs = 1)\n"
        "  --max-memory SIZE        memory budget of each run (passed to train), e.g. 512M or 4G\n"
        "  --dry-run                print the runs (todo / done) and exit\n"
        "presets:\n"
        "  image-tradeoff  cnn,sa,local on Fashion-MNIST, sizes 500,1000,2000,5000,10000,30000,60000, seeds 1-3,\n"
        "                  the same optimisation budget per run: epochs = max(2, ceil(%d / ceil(size / %d)))\n"
        "                  i.e. at least %d steps of batch %d (500: 125 epochs, 1000: 63, 2000: 32, 5000: 13,\n"
        "                  10000: 7, 30000: 3, 60000: 2); runs over 5 epochs are evaluated every ceil(epochs/5)\n"
        "                  epochs and after the last\n"
        "  prior-mismatch  cnn, local, sa at patch 2 and patch 1 (pixel-level), mlp on Fashion-MNIST, each with the\n"
        "                  pixels as they are and permuted (--permute-pixels 1: locality gone), sizes 1000,10000,\n"
        "                  60000, seeds 1-3, image-tradeoff's step budget\n"
        "  augment         cnn, sa, hybrid at 60000 images, %d epochs, --augment none and shift:2+flip+erase:0.25,\n"
        "                  seeds 1-3\n"
        "  long-range      cnn, sa (patch 4: 196 tokens), hybrid on fashion-pairs (two Fashion-MNIST items on a 56x56\n"
        "                  canvas: same class or not), 1000, 10000, 100000, 1000000 generated examples, seeds 1-3,\n"
        "                  image-tradeoff's step budget\n"
        "  graph-tradeoff  gat,gat-full,gcn,mlp on cora, labels per class 2,5,10,20,50,100 and train-frac 0.6,\n"
        "                  seeds 1-10, the trainer's defaults except gat-full: at most %d epochs (its epoch costs\n"
        "                  ~20x gat's and its validation accuracy does not move: see docs/experiments.md)\n"
        "  graph-fair      gat,gatv2,gcn,mlp,gt,gt-full,gat-full on cora, graph-tradeoff's splits, seeds and\n"
        "                  epoch rule (gt-full, the other model over every node, is capped at %d epochs too);\n"
        "                  --labels-per-class / --train-frac restrict a graph preset to some of its splits\n"
        "                  (the same runs: the full preset later resumes the rest)\n"
        "  sequence-tradeoff  %s on UD English EWT, %s training sentences,\n"
        "                  seeds 1-3, %d epochs; then the summary table and plots of test token accuracy,\n"
        "                  unseen-word and ambiguous-word accuracy vs size (results/sequence-tradeoff*.png)\n"
        "  distance        rnn, window-fc, trunc, sa on associative recall (--data recall:LEN) at LEN 16, 64, 256,\n"
        "                  1024, %d training sequences, %d epochs, sa and trunc at depth %s, seeds 1-3: where does\n"
        "                  each stop working?\n"
        "  demo            cnn,sa,local on 1000 and 10000 Fashion-MNIST images, seed 1, about 400 steps per run\n"
        "                  (1000: 25 epochs, 10000: 3; evaluated 4 times); writes results/demo.csv, prints the\n"
        "                  summary table, plots results/demo.png\n"
        "MPI (a build with make MPI=1): mpirun -np N attnlab sweep ... plans on rank 0, which hands the runs out\n"
        "  to the ranks as they free up (--jobs runs each, rank 0 included) and alone writes FILE; rerunning resumes\n"
        "  (docs/scale-out.md)\n"
        "exit status: 0 all runs complete, 1 a run failed or an I/O error, 2 bad arguments, 130 interrupted\n",
        seq_models, STEP_BUDGET, BATCH, STEP_BUDGET, BATCH, AUGMENT_EPOCHS, GAT_FULL_EPOCHS, GAT_FULL_EPOCHS, seq_models,
        seq_sizes, SEQ_TRADEOFF_EPOCHS, DISTANCE_SIZE, DISTANCE_EPOCHS, DISTANCE_DEPTH);
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
/* The tasks a sweep runs; T_NONE for another name. */
enum { T_IMAGE, T_GRAPH, T_SEQUENCE, NTASKS, T_NONE = -1 };
static const char *const task_names[NTASKS] = {"image", "graph", "sequence"};
static int task_of(const char *task)
{
    for (int t = 0; task && t < NTASKS; t++) if (!strcmp(task, task_names[t])) return t;
    return T_NONE;
}

/* The models a sweep can run, from the library's tables: the trainable image models (cnn, sa,
 * local), every graph model, or every sequence model (fc, window-fc, rnn, sa, trunc). Writes up to
 * max names into out; returns how many. */
static int task_models(int task, const char **out, int max)
{
    int n = 0;
    if (task == T_IMAGE) {
        for (int i = 0; i < al_model_kind_count() && n < max; i++)
            if (al_model_kind_at(i)->trainable) out[n++] = al_model_kind_at(i)->name;
    } else if (task == T_GRAPH) {
        for (int i = 0; i < al_gnn_model_count() && n < max; i++) out[n++] = al_gnn_model_at(i)->name;
    } else {
        for (int i = 0; i < al_seq_kind_count() && n < max; i++) out[n++] = al_seq_kind_at(i)->name;
    }
    return n;
}
static int known_model(int task, const char *name)
{
    if (task == T_IMAGE) { const al_model_kind *k = al_model_kind_find(name); return k && k->trainable; }
    if (task == T_GRAPH) return al_gnn_model_find(name) != NULL;
    return al_seq_kind_find(name) != NULL;
}
/* "a, b or c" of the task's models */
static const char *task_model_list(int task, char *buf, size_t n)
{
    const char *names[MAXLIST];
    int k = task_models(task, names, MAXLIST);
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

/* Training sentences of a treebank, found as `attnlab train --task sequence` finds it (a NAME, or a
 * path when it holds a '/'); -1 with e set when it cannot be read. */
static long seq_train_count(const char *data, al_error *e)
{
    char dir[PATH_MAX], path[PATH_MAX];
    const char *explicit_dir = strchr(data, '/') ? data : NULL;
    if (al_data_locate(explicit_dir ? "ud-english-ewt" : data, explicit_dir, dir, sizeof dir, e) != AL_OK ||
        al_conllu_find(dir, "train", path, sizeof path, e) != AL_OK)
        return -1;
    al_conllu d;
    if (al_conllu_read(path, NULL, &d, e) != AL_OK) return -1;
    long n = d.nsent;
    al_conllu_free(&d);
    return n;
}

/* Graph training candidates (labelled nodes outside val and test) and classes of known graphs. */
static const struct { const char *name; int candidates, classes; } graph_table[] = {{"cora", 1208, 7}};

/* ---------------- model flags as grid axes ---------------- */
/* Which models of each task (image, graph, sequence) a swept flag applies to: none (not a flag of
 * that task), every model, only the attention models (image: sa, local; graph: gat, gat-full, gatv2,
 * gt, gt-full; sequence: sa, trunc), only the windowed ones (local; window-fc, trunc) or the recurrent
 * one (rnn), as the model tables say. */
enum { AX_NONE, AX_ALL, AX_ATTENTION, AX_WINDOWED, AX_RECURRENT };
typedef struct axis_flag { const char *flag; int applies[NTASKS]; } axis_flag;
static const axis_flag axis_flags[] = {
    {"patch", {AX_ATTENTION, 0, 0}}, {"pos", {AX_ATTENTION, 0, AX_ATTENTION}},
    {"score", {AX_ATTENTION, 0, AX_ATTENTION}}, {"norm", {AX_ATTENTION, 0, AX_ATTENTION}},
    {"depth", {AX_ATTENTION, 0, AX_ATTENTION}}, {"dim", {AX_ATTENTION, 0, 0}},
    {"window", {AX_WINDOWED, 0, AX_WINDOWED}}, {"batch", {AX_ALL, 0, AX_ALL}}, {"test-size", {AX_ALL, 0, 0}},
    {"heads", {AX_ATTENTION, AX_ATTENTION, AX_ATTENTION}}, {"lr", {AX_ALL, AX_ALL, AX_ALL}},
    {"wd", {AX_ALL, AX_ALL, AX_ALL}}, {"hidden", {0, AX_ALL, 0}}, {"dropout", {0, AX_ALL, 0}},
    {"attn-dropout", {0, AX_ATTENTION, 0}}, {"patience", {0, AX_ALL, 0}}, {"rnn", {0, 0, AX_RECURRENT}},
    {"permute-pixels", {AX_ALL, 0, 0}}, {"augment", {AX_ALL, 0, 0}},
};
#define NAXISFLAGS (int)(sizeof axis_flags / sizeof axis_flags[0])

static const axis_flag *axis_flag_find(const char *flag)
{
    for (int i = 0; i < NAXISFLAGS; i++) if (!strcmp(axis_flags[i].flag, flag)) return &axis_flags[i];
    return NULL;
}
/* Does axis a of the sweep apply to model? */
static int axis_applies(const sweep_cfg *c, const axis *a, const char *model)
{
    const int task = task_of(c->task), rule = axis_flag_find(a->flag)->applies[task];
    if (a->only && strcmp(a->only, model)) return 0;
    if (rule == AX_ALL) return 1;
    if (task == T_IMAGE) {
        const al_model_kind *k = al_model_kind_find(model);
        return k && (rule == AX_ATTENTION ? k->attention : rule == AX_WINDOWED && k->windowed);
    }
    if (task == T_SEQUENCE) {
        const al_seq_kind *k = al_seq_kind_find(model);
        return k && (rule == AX_ATTENTION ? k->attention : rule == AX_WINDOWED ? k->windowed : rule == AX_RECURRENT && k->recurrent);
    }
    const al_gnn_model *g = al_gnn_model_find(model);
    return g && rule == AX_ATTENTION && g->attention;
}
static int cmp_axis(const void *x, const void *y) { return strcmp(((const axis *)x)->flag, ((const axis *)y)->flag); }

/* The axes fit the task and each applies to some model; sorted by flag so the run ids do not depend
 * on the order of the command line. 0 or the exit status 2. */
static int check_axes(sweep_cfg *c)
{
    static const char *const kind_words[] = {"", "", "attention", "windowed", "recurrent"};
    const int task = task_of(c->task);
    for (int i = 0; i < c->naxes; i++) {
        const axis *a = &c->axes[i];
        const int rule = axis_flag_find(a->flag)->applies[task];
        if (rule == AX_NONE)
            return bad("--%s is not a model flag of --task %s (see attnlab train%s%s --help)", a->flag, c->task,
                       task == T_IMAGE ? "" : " --task ", task == T_IMAGE ? "" : c->task);
        int used = 0;
        for (int m = 0; m < c->nmodels; m++) used |= axis_applies(c, a, c->models[m]);
        if (!used) return bad("--%s applies to none of the models of this sweep (%s models only)", a->flag, kind_words[rule]);
        for (int j = 0; j < i; j++) if (!strcmp(c->axes[j].flag, a->flag)) return bad("--%s given twice", a->flag);
    }
    qsort(c->axes, (size_t)c->naxes, sizeof *c->axes, cmp_axis);
    return 0;
}

/* Number of grid points of model m: the product of the sizes of the axes that apply to it. */
static long model_points(const sweep_cfg *c, const char *model)
{
    long n = 1;
    for (int i = 0; i < c->naxes; i++) if (axis_applies(c, &c->axes[i], model)) n *= c->axes[i].nvals;
    return n;
}
/* Point p (0 <= p < model_points) of model as value indices per axis (-1: the axis does not apply);
 * appends " flag=value" of each applying axis to desc. */
static void model_point(const sweep_cfg *c, const char *model, long p, int *val, char *desc, size_t dn)
{
    for (int i = c->naxes - 1; i >= 0; i--) {
        const axis *a = &c->axes[i];
        if (!axis_applies(c, a, model)) { val[i] = -1; continue; }
        val[i] = (int)(p % a->nvals); p /= a->nvals;
    }
    for (int i = 0; i < c->naxes; i++)
        if (val[i] >= 0) {
            size_t o = strlen(desc);
            snprintf(desc + o, dn - o, " %s=%s", c->axes[i].flag, c->axes[i].vals[val[i]]);
        }
}

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

/* ---------------- argument parsing ---------------- */
/* A preset's swept flag (vals a comma list; only: the one model it applies to, or NULL); 0 or -1. */
static int preset_axis(sweep_cfg *c, const char *flag, const char *vals, const char *only)
{
    axis *a = &c->axes[c->naxes++];
    a->flag = flag; a->only = only;
    a->nvals = split_list(flag, vals, a->vals, MAXLIST, &a->buf);
    return a->nvals < 0 ? -1 : 0;
}

/* A preset's seeds 1..n. */
static void preset_seeds(sweep_cfg *c, int n)
{
    c->nseeds = n;
    for (int i = 0; i < n; i++) c->seeds[i] = i + 1;
}

static int set_preset(sweep_cfg *c, const char *name)
{
    c->preset = name;
    if (!strcmp(name, "image-tradeoff") || !strcmp(name, "demo")) {
        int demo = !strcmp(name, "demo");
        static const long sizes[] = {500, 1000, 2000, 5000, 10000, 30000, 60000}, dsizes[] = {1000, 10000};
        c->task = "image";
        static char *const trio[] = {"cnn", "sa", "local"};   /* the presets' models, named: a new model
                                                              * in the table must not change them */
        c->nmodels = 3;
        for (int i = 0; i < 3; i++) c->models[i] = trio[i];
        const long *s = demo ? dsizes : sizes;
        c->nsplits = demo ? 2 : 7;
        for (int i = 0; i < c->nsplits; i++) c->splits[i] = (split){SPLIT_SIZE, s[i], 0};
        preset_seeds(c, demo ? 1 : 3);
        c->epochs = demo ? EPOCHS_DEMO : EPOCHS_STEP_BUDGET;
        c->post = demo;
    } else if (!strcmp(name, "graph-tradeoff") || !strcmp(name, "graph-fair")) {
        /* the same splits, seeds and epoch rule; graph-fair adds the baselines of issue 17 (the models
         * named, so that a model added to the table changes neither preset) */
        static const long lpc[] = {2, 5, 10, 20, 50, 100};
        static char *const tradeoff[] = {"gat", "gat-full", "gcn", "mlp"};
        static char *const fair[] = {"gat", "gatv2", "gcn", "mlp", "gt", "gt-full", "gat-full"};
        const int isfair = !strcmp(name, "graph-fair");
        c->task = "graph";
        c->nmodels = isfair ? 7 : 4;
        for (int i = 0; i < c->nmodels; i++) c->models[i] = isfair ? fair[i] : tradeoff[i];
        c->nsplits = 0;
        for (int i = 0; i < 6; i++) c->splits[c->nsplits++] = (split){SPLIT_LPC, lpc[i], 0};
        c->splits[c->nsplits++] = (split){SPLIT_FRAC, 0, 0.6};
        preset_seeds(c, 10);
        c->epochs = EPOCHS_GRAPH_CAPPED;
    } else if (!strcmp(name, "sequence-tradeoff")) {
        static const long sizes[] = {SEQ_TRADEOFF_SIZES};
        c->task = "sequence";
        c->nmodels = task_models(T_SEQUENCE, (const char **)c->models, MAXLIST);   /* the whole table */
        c->nsplits = (int)(sizeof sizes / sizeof *sizes);
        for (int i = 0; i < c->nsplits; i++) c->splits[i] = (split){SPLIT_SIZE, sizes[i], 0};
        preset_seeds(c, 3);
        c->epochs = SEQ_TRADEOFF_EPOCHS;
        c->post = 1;
    } else if (!strcmp(name, "prior-mismatch") || !strcmp(name, "augment")) {
        /* prior-mismatch: the image models with and without one fixed permutation of the pixels (seed 1),
         * sa at patch 2 and at patch 1 (pixel-level: learned positions, no locality to lose), the image
         * step budget; augment: 60 000 images, 30 epochs, with and without shift:2, flip, erase:0.25 */
        const int pm = !strcmp(name, "prior-mismatch");
        static const long sizes[] = {1000, 10000, 60000};
        static char *const pm_models[] = {"cnn", "local", "sa", "mlp"}, *const aug_models[] = {"cnn", "sa", "hybrid"};
        c->task = "image";
        c->nmodels = pm ? 4 : 3;
        for (int i = 0; i < c->nmodels; i++) c->models[i] = pm ? pm_models[i] : aug_models[i];
        c->nsplits = pm ? 3 : 1;
        for (int i = 0; i < c->nsplits; i++) c->splits[i] = (split){SPLIT_SIZE, pm ? sizes[i] : 60000, 0};
        preset_seeds(c, 3);
        c->epochs = pm ? EPOCHS_STEP_BUDGET : AUGMENT_EPOCHS;
        if (pm ? preset_axis(c, "patch", "2,1", "sa") || preset_axis(c, "permute-pixels", "none,1", NULL)
               : preset_axis(c, "augment", "none,shift:2+flip+erase:0.25", NULL)) return -1;
    } else if (!strcmp(name, "long-range")) {
        /* fashion-pairs (same class or not, two items up to a 56x56 canvas apart) at 10^3 .. 10^6 generated
         * examples; sa at patch 4 (196 tokens, as on Fashion-MNIST at patch 2); the image step budget */
        static const long sizes[] = {1000, 10000, 100000, 1000000};
        static char *const models[] = {"cnn", "sa", "hybrid"};
        c->task = "image";
        c->data = "fashion-pairs";
        c->nmodels = 3;
        for (int i = 0; i < 3; i++) c->models[i] = models[i];
        c->nsplits = 4;
        for (int i = 0; i < 4; i++) c->splits[i] = (split){SPLIT_SIZE, sizes[i], 0};
        preset_seeds(c, 3);
        c->epochs = EPOCHS_STEP_BUDGET;
        if (preset_axis(c, "patch", "4", "sa")) return -1;
    } else if (!strcmp(name, "distance")) {
        /* the sequence models on associative recall at growing length: where does each stop working? */
        static char *const models[] = {"rnn", "window-fc", "trunc", "sa"};
        c->task = "sequence";
        c->data = DISTANCE_LENS;                     /* a list: each length is a grid point */
        c->nmodels = 4;
        for (int i = 0; i < 4; i++) c->models[i] = models[i];
        c->splits[0] = (split){SPLIT_SIZE, DISTANCE_SIZE, 0};
        c->nsplits = 1;
        preset_seeds(c, 3);
        c->epochs = DISTANCE_EPOCHS;
        if (preset_axis(c, "depth", DISTANCE_DEPTH, NULL)) return -1;   /* the attention models' (sa, trunc) */
    } else return bad("unknown preset '%s' (expected image-tradeoff, prior-mismatch, augment, long-range, graph-tradeoff, "
                      "graph-fair, sequence-tradeoff, distance or demo)", name);
    return 0;
}

/* A graph preset restricted to some of its splits (--labels-per-class / --train-frac with --preset):
 * the same runs, the same run ids, fewer of them; 0 or 2. */
static int preset_subset(sweep_cfg *c, const char *lpc, const char *frac)
{
    if (task_of(c->task) != T_GRAPH) return bad("--labels-per-class and --train-frac restrict the graph presets only");
    split all[MAXLIST];
    const int nall = c->nsplits;
    memcpy(all, c->splits, (size_t)nall * sizeof *all);
    c->nsplits = 0;
    if ((lpc && add_splits("--labels-per-class", lpc, SPLIT_LPC, c)) || (frac && add_splits("--train-frac", frac, SPLIT_FRAC, c)))
        return 2;
    for (int i = 0; i < c->nsplits; i++) {
        int found = 0;
        for (int j = 0; j < nall; j++)
            found |= all[j].kind == c->splits[i].kind && all[j].n == c->splits[i].n && all[j].frac == c->splits[i].frac;
        if (!found) {
            char sp[48];
            split_str(&c->splits[i], sp, sizeof sp);
            return bad("--preset %s has no split %s (a preset's splits can be restricted, not extended)", c->preset, sp);
        }
    }
    return 0;
}

/* Options into *c (presets filled in); 0, or the exit status 2 after one line on stderr. */
static int parse_args(int argc, char **argv, sweep_cfg *c)
{
    enum { O_PRESET = 256, O_TASK, O_DATA, O_MODELS, O_SIZES, O_LPC, O_FRAC, O_PLANETOID, O_SEEDS, O_EPOCHS,
           O_CSV, O_JOBS, O_PLOT, O_DRY, O_AXIS, O_MAXMEM, O_THREADS };
    static const struct option opts[] = {
        {"preset", required_argument, 0, O_PRESET}, {"task", required_argument, 0, O_TASK},
        {"data", required_argument, 0, O_DATA}, {"models", required_argument, 0, O_MODELS},
        {"train-sizes", required_argument, 0, O_SIZES}, {"labels-per-class", required_argument, 0, O_LPC},
        {"train-frac", required_argument, 0, O_FRAC}, {"planetoid", no_argument, 0, O_PLANETOID},
        {"seeds", required_argument, 0, O_SEEDS}, {"epochs", required_argument, 0, O_EPOCHS},
        {"csv", required_argument, 0, O_CSV}, {"jobs", required_argument, 0, O_JOBS},
        {"plot", required_argument, 0, O_PLOT}, {"dry-run", no_argument, 0, O_DRY},
        {"max-memory", required_argument, 0, O_MAXMEM}, {"threads", required_argument, 0, O_THREADS},
        {"patch", required_argument, 0, O_AXIS}, {"pos", required_argument, 0, O_AXIS},
        {"score", required_argument, 0, O_AXIS}, {"norm", required_argument, 0, O_AXIS},
        {"depth", required_argument, 0, O_AXIS}, {"dim", required_argument, 0, O_AXIS},
        {"window", required_argument, 0, O_AXIS}, {"batch", required_argument, 0, O_AXIS},
        {"heads", required_argument, 0, O_AXIS}, {"lr", required_argument, 0, O_AXIS},
        {"wd", required_argument, 0, O_AXIS}, {"hidden", required_argument, 0, O_AXIS},
        {"dropout", required_argument, 0, O_AXIS}, {"attn-dropout", required_argument, 0, O_AXIS},
        {"patience", required_argument, 0, O_AXIS}, {"test-size", required_argument, 0, O_AXIS},
        {"rnn", required_argument, 0, O_AXIS}, {"permute-pixels", required_argument, 0, O_AXIS},
        {"augment", required_argument, 0, O_AXIS},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    static char csv_default[PATH_MAX];
    const char *preset = NULL, *models = NULL, *sizes = NULL, *lpc = NULL, *frac = NULL, *seeds = NULL;
    int planetoid = 0, epochs = 0, freeform = 0, ch;
    long v;
    c->jobs = 1;
    optind = 0; opterr = 0;
    int li;
    while ((ch = getopt_long(argc, argv, "h", opts, &li)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return -1;
        case O_AXIS: {
            if (c->naxes == MAXAXES) return bad("too many swept flags (at most %d)", MAXAXES);
            axis *a = &c->axes[c->naxes++];
            a->flag = opts[li].name;
            char what[48]; snprintf(what, sizeof what, "--%s", a->flag);
            a->nvals = split_list(what, optarg, a->vals, MAXLIST, &a->buf);
            if (a->nvals < 0) return 2;
            break;
        }
        case O_PRESET: preset = optarg; break;
        case O_TASK: c->task = optarg; freeform = 1; break;
        case O_DATA: c->data = optarg; break;
        case O_MODELS: models = optarg; freeform = 1; break;
        case O_SIZES: sizes = optarg; freeform = 1; break;
        case O_LPC: lpc = optarg; break;
        case O_FRAC: frac = optarg; break;
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
        case O_MAXMEM: if (cli_max_memory("sweep", optarg)) return 2; c->max_memory = optarg; break;
        case O_THREADS: if (cli_threads("sweep", optarg, &c->threads)) return 2; break;
        case O_DRY: c->dry_run = 1; break;
        default: return bad("unknown or incomplete option '%s' (see attnlab sweep --help)", argv[optind - 1]);
        }
    }
    if (optind < argc) return bad("unexpected argument '%s' (see attnlab sweep --help)", argv[optind]);
    if (preset) {
        if (freeform) return bad("--preset %s sets task, models and sizes; use --csv, --seeds, --epochs, --jobs, --threads only (graph presets: also --labels-per-class / --train-frac to restrict their splits)", preset);
        const char *user_data = c->data;
        if (set_preset(c, preset)) return 2;
        if (user_data && c->data != user_data) return bad("--preset %s sets its datasets; --data is not for it", preset);
        if ((lpc || frac) && preset_subset(c, lpc, frac)) return 2;
        if (!c->csv) { snprintf(csv_default, sizeof csv_default, "results/%s.csv", preset); c->csv = csv_default; }
        if (c->post && !c->plot_out) c->plot_out = !strcmp(preset, "demo") ? "results/demo.png" : "results/sequence-tradeoff.png";
    } else {
        if (!c->task) return bad("give --preset NAME or --task image|graph|sequence (see attnlab sweep --help)");
        freeform |= lpc || frac;
        const int task = task_of(c->task);
        if (task == T_NONE) return bad("--task: unknown task '%s' (expected image, graph or sequence)", c->task);
        if (!models) return bad("--models is required");
        c->nmodels = split_list("--models", models, c->models, MAXLIST, &c->models_buf);
        if (c->nmodels < 0) return 2;
        for (int i = 0; i < c->nmodels; i++) {
            char list[256];
            if (!known_model(task, c->models[i]))
                return bad("--models: unknown %s model '%s' (expected %s)", c->task, c->models[i],
                           task_model_list(task, list, sizeof list));
            for (int j = 0; j < i; j++)
                if (!strcmp(c->models[i], c->models[j])) return bad("--models: '%s' appears twice", c->models[i]);
        }
        if (task != T_GRAPH) {
            if (lpc || frac || planetoid) return bad("--labels-per-class, --train-frac and --planetoid are for --task graph");
            if (!sizes) return bad("--task %s needs --train-sizes LIST", c->task);
            if (add_splits("--train-sizes", sizes, SPLIT_SIZE, c)) return 2;
        } else {
            if (sizes) return bad("--train-sizes is for --task image and sequence; graphs take --labels-per-class / --train-frac");
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
    if (check_axes(c)) return 2;
    if (!c->data) {
        static const char *const default_data[NTASKS] = {"fashion-mnist", "cora", "ud-english-ewt"};
        c->data = default_data[task_of(c->task)];
    }
    c->ndata = split_list("--data", c->data, c->datas, MAXLIST, &c->data_buf);   /* a list: each dataset a grid point */
    if (c->ndata < 0) return 2;
    for (int i = 0; i < c->ndata; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(c->datas[i], c->datas[j])) return bad("--data: '%s' appears twice", c->datas[i]);
    if (!*c->csv) return bad("--csv: empty file name");
    long points = 0;
    for (int m = 0; m < c->nmodels && points <= MAXRUNS; m++) points += model_points(c, c->models[m]);
    long total = (long)c->nseeds * c->ndata * c->nsplits * points;
    if (total > MAXRUNS) return bad("%ld runs are too many for one sweep (at most %d)", total, MAXRUNS);
    return 0;
}

/* The dataset exists and every size fits its training set; 0 or 2. */
static int check_one_data(const sweep_cfg *c, const char *data)
{
    if (task_of(c->task) == T_SEQUENCE) {
        al_error e = {{0}};
        al_gen_seq_cfg g;
        const int gen = al_gen_seq_parse(data, &g, &e);
        if (gen < 0) return bad("--data: %s", e.msg);
        if (gen == 0) return 0;                      /* generated: as many sequences as asked for */
        long have = seq_train_count(data, &e);
        if (have < 0) return bad("--data: %s", e.msg);
        for (int i = 0; i < c->nsplits; i++)
            if (c->splits[i].n > have)
                return bad("--train-sizes: %ld is larger than the %s training set (%ld sentences)", c->splits[i].n, data, have);
        return 0;
    }
    if (!strcmp(c->task, "image")) {
        struct stat sb;
        if (!app_image_data_named(data) && (stat(data, &sb) || !S_ISDIR(sb.st_mode)))
            return bad("--data: '%s' is neither fashion-mnist, fashion-pairs nor an image folder", data);
        long have = image_train_count(data);
        for (int i = 0; i < c->nsplits && have > 0; i++)
            if (c->splits[i].n > have)
                return bad("--train-sizes: %ld is larger than the %s training set (%ld images)", c->splits[i].n, data, have);
        return 0;
    }
    char gdir[PATH_MAX]; al_error ge = {{0}};
    if (al_graph_resolve(data, NULL, gdir, sizeof gdir, &ge) != AL_OK) return bad("--data: %s", ge.msg);
    for (size_t t = 0; t < sizeof graph_table / sizeof graph_table[0]; t++) {
        if (strcmp(graph_table[t].name, data)) continue;
        for (int i = 0; i < c->nsplits; i++)
            if (c->splits[i].kind == SPLIT_LPC && c->splits[i].n * graph_table[t].classes > graph_table[t].candidates)
                return bad("--labels-per-class: %ld x %d classes is more than the %d labelled training candidates of %s",
                           c->splits[i].n, graph_table[t].classes, graph_table[t].candidates, data);
    }
    return 0;
}
static int check_data(const sweep_cfg *c)
{
    for (int i = 0; i < c->ndata; i++) if (check_one_data(c, c->datas[i])) return 2;
    return 0;
}

/* The runs, ordered seed, then split, then model: a half-done sweep has every model at the first seeds. */
static plan_run *make_plan(const sweep_cfg *c, const char *dir, const char *base, int *np)
{
    long points = 0;
    for (int m = 0; m < c->nmodels; m++) points += model_points(c, c->models[m]);
    long n = (long)c->nseeds * c->ndata * c->nsplits * points, k = 0;
    plan_run *plan = calloc((size_t)(n > 0 ? n : 1), sizeof *plan);
    if (!plan) return NULL;
    for (int s = 0; s < c->nseeds; s++)
        for (int d = 0; d < c->ndata; d++)
        for (int j = 0; j < c->nsplits; j++)
            for (int m = 0; m < c->nmodels; m++)
                for (long p = 0; p < model_points(c, c->models[m]); p++) {
                    plan_run *r = &plan[k++];
                    char sp[48], canon[512];
                    r->model = c->models[m]; r->data = c->datas[d]; r->sp = c->splits[j]; r->seed = c->seeds[s];
                    r->epochs = epochs_for(c, r->model, &c->splits[j]);
                    split_str(&r->sp, sp, sizeof sp);
                    if (c->ndata > 1) snprintf(r->desc, sizeof r->desc, "%s %s %s seed=%ld", r->model, r->data, sp, r->seed);
                    else snprintf(r->desc, sizeof r->desc, "%s %s seed=%ld", r->model, sp, r->seed);
                    size_t d0 = strlen(r->desc);
                    model_point(c, r->model, p, r->val, r->desc, sizeof r->desc);
                    /* without swept flags the canonical text (and so the run id) is what it always was,
                     * so sweeps of earlier versions resume */
                    snprintf(canon, sizeof canon, "sweep task=%s dataset=%s model=%s %s seed=%ld%s", c->task, r->data,
                             r->model, sp, r->seed, r->desc + d0);
                    al_run_id(r->run_id, canon);
                    if (asprintf(&r->part, "%s/%s.run-%s.part", dir, base, r->run_id) < 0) r->part = NULL;
                    if (r->part && asprintf(&r->ckpt, "%s/%s.run-%s.train", dir, base, r->run_id) < 0) { free(r->part); r->part = NULL; }
                    if (!r->part) { *np = (int)k; return plan; }   /* the caller sees the NULL */
                }
    *np = (int)k;
    return plan;
}

static void free_plan(plan_run *plan, int np)
{
    for (int i = 0; i < np; i++) { free(plan[i].part); free(plan[i].ckpt); }
    free(plan);
}

/* A sweep CSV cut short (power loss during the write of the last run): the torn last line and the
 * rows of the run it belonged to (runs are merged whole, so they are the file's tail) are dropped,
 * with a note; that run is redone. Returns the length of the text to keep. */
static size_t cut_unfinished_tail(const char *path, char *text, size_t len)
{
    if (len == 0 || text[len - 1] == '\n') return len;
    size_t keep = len;
    while (keep > 0 && text[keep - 1] != '\n') keep--;          /* the torn line */
    if (keep == 0) return len;                                   /* a torn header: the parser says so */
    /* the rows before it that share its run id (the first field) */
    const char *torn = text + keep;
    const char *comma = memchr(torn, ',', len - keep);
    size_t idl = comma ? (size_t)(comma - torn) : 0;
    int dropped = 1;
    while (idl && keep > 0) {
        size_t b = keep - 1;                                     /* the '\n' ending the previous line */
        while (b > 0 && text[b - 1] != '\n') b--;
        if (b == 0 || keep - b <= idl || memcmp(text + b, torn, idl) || text[b + idl] != ',') break;
        keep = b; dropped++;
    }
    fprintf(stderr, "sweep: %s: dropped %d line%s of a run whose writing was cut short (a torn last line); "
            "the run will be redone\n", path, dropped, dropped == 1 ? "" : "s");
    text[keep] = 0;
    return keep;
}

/* The presets' summary table and plots: demo one (test accuracy), sequence-tradeoff one per metric
 * (test_acc to --plot FILE.png, unseen_acc and ambig_acc to FILE-unseen_acc.png, FILE-ambig_acc.png).
 * Returns 0 or 1. */
static int post_process(const sweep_cfg *c)
{
    int rc = 0;
    char *sargv[] = {"summarize", (char *)c->csv, NULL};
    if (cmd_summarize(2, sargv)) rc = 1;
    const int nplots = task_of(c->task) == T_SEQUENCE ? AL_NMETRICS : 1;
    for (int m = 0; m < nplots; m++) {
        char out[PATH_MAX];
        const char *dot = strrchr(c->plot_out, '.');
        size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - c->plot_out) : strlen(c->plot_out);
        if (m == 0) snprintf(out, sizeof out, "%s", c->plot_out);
        else snprintf(out, sizeof out, "%.*s-%s%s", (int)stem, c->plot_out, al_metric_name((al_metric)m), c->plot_out + stem);
        char *pargv[] = {"plot", (char *)c->csv, "--out", out, "--metric", (char *)al_metric_name((al_metric)m), NULL};
        if (cmd_plot(6, pargv)) rc = 1;
        else fprintf(stderr, "sweep: plot written to %s\n", out);
    }
    return rc;
}

static void free_cfg(sweep_cfg *c)
{
    free(c->models_buf);
    free(c->data_buf);
    for (int i = 0; i < c->naxes; i++) free(c->axes[i].buf);
}

/* This binary's path (or ATTNLAB_SWEEP_TRAINER, a stand-in for `attnlab train` in tests); 0 or 1. */
static int own_exe(char *exe, size_t n)
{
    const char *trainer = getenv("ATTNLAB_SWEEP_TRAINER");
    if (trainer && *trainer) { snprintf(exe, n, "%s", trainer); return 0; }
    ssize_t k = readlink("/proc/self/exe", exe, n - 1);
    if (k <= 0) { fprintf(stderr, "attnlab sweep: cannot find my own binary: %s\n", strerror(errno)); return 1; }
    exe[k] = 0;
    return 0;
}

/* A rank other than 0 under mpirun (mpi_sweep.c): the same plan with its part files in a private
 * temporary directory, run as rank 0 hands it out. */
static int sweep_worker(sweep_cfg *c)
{
    char tmpl[PATH_MAX], exe[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/attnlab-sweep-rank%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", app_mpi_rank());
    int bad_setup = own_exe(exe, sizeof exe) || !mkdtemp(tmpl);
    int np = 0;
    plan_run *plan = bad_setup ? NULL : make_plan(c, tmpl, "sweep", &np);
    int go = mpi_sweep_go(0), rc = 0;                       /* rank 0's checks passed? */
    if (!go && (!plan || (np > 0 && !plan[np - 1].part))) { fprintf(stderr, "attnlab sweep: rank %d: cannot set up in %s\n", app_mpi_rank(), tmpl); rc = 1; }
    else if (!go) rc = mpi_sweep_worker(c, plan, np, exe);
    else app_mpi_settled();
    if (plan) free_plan(plan, np);
    if (!bad_setup) rmdir(tmpl);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    static sweep_cfg c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(argc, argv, &c);
    if (!rc) rc = check_data(&c);
    rc = app_mpi_agree(rc);                                  /* every rank goes on, or none */
    if (rc) { free_cfg(&c); return rc < 0 ? 0 : rc; }
    if (app_mpi_rank() > 0) {
        rc = c.dry_run ? 0 : sweep_worker(&c);
        free_cfg(&c);
        return rc;
    }
    int sent_go = app_mpi_size() == 1 || c.dry_run;          /* the workers wait for rank 0's word */

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
        /* the outputs can be written, before the first run rather than after it */
        if (cli_output("sweep", "--csv", c.csv, 0) || cli_output("sweep", "--plot", c.post ? c.plot_out : NULL, 0)) { rc = 2; goto done; }
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
        if (al_read_file(c.csv, &main_csv.p, &len, &e) != AL_OK) {
            fprintf(stderr, "attnlab sweep: %s\n", e.msg);
            rc = 1; goto done;
        }
        len = cut_unfinished_tail(c.csv, main_csv.p, len);
        if (al_results_parse(main_csv.p, len, c.csv, &have, &e) != AL_OK) {
            fprintf(stderr, "attnlab sweep: %s (not touching it; fix or move the file)\n", e.msg);
            rc = 1; goto done;
        }
        main_csv.n = len; main_csv.cap = len + 1;
        if (csv_upgrade(&main_csv)) { fprintf(stderr, "attnlab sweep: out of memory\n"); rc = 1; goto done; }
    }
    int ntodo = 0;
    for (int i = 0; i < np; i++) {
        int k = al_results_find_run(&have, plan[i].run_id);
        plan[i].state = k >= 0 && have.run[k].complete ? RUN_SKIP : RUN_TODO;
        ntodo += plan[i].state == RUN_TODO;
        if (plan[i].state == RUN_SKIP && !c.dry_run) drop_run_files(&plan[i], 0);   /* merged just before a kill */
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
    if (app_mpi_size() > 1)
        fprintf(stderr, "sweep: %d runs, %d already complete in %s, %d to run (%d MPI ranks x %d at a time)\n", np,
                np - ntodo, c.csv, ntodo, app_mpi_size(), c.jobs);
    else
        fprintf(stderr, "sweep: %d runs, %d already complete in %s, %d to run (%d at a time)\n", np, np - ntodo, c.csv,
                ntodo, c.jobs);

    char exe[PATH_MAX];
    if (own_exe(exe, sizeof exe)) { rc = 1; goto done; }
    int ndone, nfail;
    if (!sent_go) {
        sent_go = 1;
        mpi_sweep_go(0);
        rc = mpi_run_plan(&c, plan, np, exe, &main_csv, &ndone, &nfail);
    } else rc = run_plan(&c, plan, np, exe, &main_csv, &ndone, &nfail);
    if (rc == 130) {
        fprintf(stderr, "sweep: interrupted; %d runs finished this time, %s keeps every complete run — run the "
                "same command to resume\n", ndone, c.csv);
        goto done;
    }
    if (rc) { fprintf(stderr, "sweep: cannot update %s; stopping\n", c.csv); goto done; }
    fprintf(stderr, "sweep: %d runs done now, %d were already complete, %d failed; results in %s\n", ndone,
            np - ntodo, nfail, c.csv);
    rc = nfail ? 1 : 0;
    if (c.post && ndone + (np - ntodo) > 0 && post_process(&c)) rc = 1;
done:
    if (!sent_go) { mpi_sweep_go(rc ? rc : 1); app_mpi_settled(); }   /* rank 0 stopped before the runs: so do the others */
    if (lockfd >= 0) close(lockfd);
    al_results_free(&have);
    free(main_csv.p);
    if (plan) free_plan(plan, np);
    free_cfg(&c);
    return rc;
}
