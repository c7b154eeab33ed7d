/* sweep.h — the pieces of `attnlab sweep` shared by its two files: cmd_sweep.c (the command line,
 * presets, validation and the plan) and sweep_jobs.c (child processes, signals, merging finished
 * runs into the CSV, resuming). */
#ifndef ATTNLAB_SWEEP_H
#define ATTNLAB_SWEEP_H
#include <stddef.h>
#include <sys/types.h>

#define MAXLIST 256
#define MAXJOBS 64
#define MAXAXES 16          /* model flags swept as grid axes */
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
#define SEQ_TRADEOFF_SIZES 250, 1000, 4000, 12544   /* sequence-tradeoff: training sentences (12544: all of EWT) */
#define SEQ_TRADEOFF_EPOCHS 10

enum { SPLIT_SIZE, SPLIT_LPC, SPLIT_FRAC, SPLIT_PLANETOID };
enum { RUN_TODO, RUN_SKIP, RUN_RUNNING, RUN_DONE, RUN_FAILED, RUN_STOPPED };

typedef struct split { int kind; long n; double frac; } split;

typedef struct plan_run {
    const char *model;
    split sp;
    long seed;
    int epochs;               /* 0: the trainer's default */
    int val[MAXAXES];         /* each axis's value index, -1 where the axis does not apply to the model */
    char desc[256];           /* "sa size=1000 seed=2 patch=4" */
    char run_id[17];
    char *part;               /* per-run temporary CSV (malloc'd) */
    char *ckpt;               /* its training state (malloc'd): kept with the part file, the run resumes */
    int state;
    pid_t pid;
    double t0;
} plan_run;

/* A model flag of `train` swept by the sweep: every value is a grid point (a single value is fixed). */
typedef struct axis {
    const char *flag;         /* "patch", "lr", ... (without --) */
    char *vals[MAXLIST]; int nvals;
    char *buf;                /* storage of vals */
} axis;

typedef struct sweep_cfg {
    const char *preset, *task, *data, *csv;
    char *models[MAXLIST]; int nmodels;
    split splits[MAXLIST]; int nsplits;
    long seeds[MAXLIST]; int nseeds;
    int epochs;               /* > 0 fixed; 0 trainer default; < 0 one of the presets' EPOCHS_* rules */
    int jobs, dry_run, post;  /* post: demo's summary table and plot */
    const char *plot_out;
    const char *max_memory;   /* --max-memory, passed to every run; NULL: not given */
    char *models_buf;         /* storage of models[] from --models */
    axis axes[MAXAXES]; int naxes;
} sweep_cfg;

/* A growable text buffer (the sweep CSV in memory). */
typedef struct csvbuf { char *p; size_t n, cap; } csvbuf;
int  buf_put(csvbuf *b, const char *s, size_t n);

/* sweep_jobs.c */
void dir_and_base(const char *path, char *dir, size_t dn, const char **base);
int  mkdir_p(const char *dir);
/* What a killed sweep left in dir: BASE.run-ID.part files without their BASE.run-ID.train (and the
 * states without their part), .part.log files and temporary files are deleted; a part file with its
 * state stays, and its run resumes. Returns how many files were deleted. */
int  remove_leftovers(const char *dir, const char *base);
/* Delete run r's part file, its log and its training state (show_log: the log's tail first). */
void drop_run_files(const plan_run *r, int show_log);
/* The CSV text as read from disk, upgraded to the current header if it has the 14-column one of
 * attnlab < 0.4 (its runs were written whole: status "done") or the 16-column one of 0.4 (the 0.5
 * columns empty); 0 or -1 (out of memory). */
int  csv_upgrade(csvbuf *b);
/* Run every RUN_TODO run, c->jobs at a time, merging each finished run into the CSV.
 * Returns 0 (check *nfail), 1 when the CSV could not be written, 130 when interrupted. */
int  run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail);
/* The model flags of run r as argv pairs ("--patch", "4", ...) into av; returns how many entries. */
int  run_axis_args(const sweep_cfg *c, const plan_run *r, const char **av, char bufs[][64]);
#endif
