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
#define AUGMENT_EPOCHS 30   /* augment: epochs at 60 000 images */
#define DISTANCE_LENS "recall:16,recall:64,recall:256,recall:1024"   /* distance: the generated task, a --data list */
#define DISTANCE_SIZE 20000 /* distance: training sequences (1 000 test ones) */
#define DISTANCE_EPOCHS 40  /* 25 000 steps: sa leaves the recall plateau after ~6 000 (results/recall-probe) */
#define DISTANCE_DEPTH "3"  /* distance: sa and trunc blocks; at 2 sa stays on the plateau */

enum { SPLIT_SIZE, SPLIT_LPC, SPLIT_FRAC, SPLIT_PLANETOID };
enum { RUN_TODO, RUN_SKIP, RUN_RUNNING, RUN_DONE, RUN_FAILED, RUN_STOPPED };

typedef struct split { int kind; long n; double frac; } split;

typedef struct plan_run {
    const char *model, *data; /* data: one of the sweep's datasets (--data LIST) */
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
    const char *only;         /* a preset's axis of one model (prior-mismatch: sa's --patch 2,1); NULL: every
                               * model the flag applies to */
} axis;

typedef struct sweep_cfg {
    const char *preset, *task, *data, *csv;   /* data: the --data text (or the preset's), a comma list */
    char *datas[MAXLIST]; int ndata;          /* its datasets: a grid axis outside the splits */
    char *data_buf;
    char *models[MAXLIST]; int nmodels;
    split splits[MAXLIST]; int nsplits;
    long seeds[MAXLIST]; int nseeds;
    int epochs;               /* > 0 fixed; 0 trainer default; < 0 one of the presets' EPOCHS_* rules */
    int jobs, dry_run, post;  /* post: demo's summary table and plot */
    int threads;              /* --threads: OMP_NUM_THREADS of every run; 0: cores / (jobs x ranks on the node) */
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
/* The last n - 1 bytes of run r's .part.log (its trainer's stderr) into buf, NUL-terminated; their count. */
size_t run_log_tail(const plan_run *r, char *buf, size_t n);
/* Delete run r's part file, its log and its training state (show_log: the log's tail first). */
void drop_run_files(const plan_run *r, int show_log);
/* The CSV text as read from disk, upgraded to the current header if it has the 14-column one of
 * attnlab < 0.4 (its runs were written whole: status "done") or the 16-column one of 0.4 (the 0.5
 * columns empty); 0 or -1 (out of memory). */
int  csv_upgrade(csvbuf *b);
/* Run every RUN_TODO run, c->jobs at a time, merging each finished run into the CSV.
 * Returns 0 (check *nfail), 1 when the CSV could not be written, 130 when interrupted. */
int  run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail);
/* The pieces run_plan is made of, for the MPI scheduler (mpi_sweep.c) too. */
/* Rows of a finished run (text, len: its part file's bytes, freed here; label names them in messages)
 * appended to the CSV in one atomic replace; 0, or -1 with msg set (*fatal: the CSV was not written). */
int   merge_rows(const sweep_cfg *c, plan_run *r, char *text, size_t len, const char *label, csvbuf *main_csv,
                 double *acc, char *msg, size_t mn, int *fatal);
/* The end of run r: st is its trainer's wait status; rows (len; freed here, may be NULL: read r's part
 * file) its CSV rows when it exited 0, labelled label in messages; log (may be NULL: r's .part.log) its
 * stderr's tail. Merged, or marked failed with the log shown; one line on stderr after head. 1 done, 0 failed. */
int   sweep_finish(const sweep_cfg *c, plan_run *r, int st, char *rows, size_t len, const char *label, const char *log,
                   const char *head, csvbuf *main_csv, int *fatal);
pid_t start_child(const sweep_cfg *c, plan_run *r, const char *exe, const char *threads);   /* the run's trainer; pid or -1 */
int   keep_partial(const plan_run *r);   /* a stopped run keeps its part file with its state (1), or loses both (0) */
void  sweep_signals(int on);             /* 1: SIGINT/SIGTERM stop the sweep and reach the tracked children; 0: as before */
int   sweep_stopped(void);               /* a signal came */
int   sweep_track(pid_t pid);            /* a child the signals reach; its slot or -1 */
int   sweep_untrack(pid_t pid);          /* its slot, or -1 if it was not tracked */
/* OMP_NUM_THREADS for each run (buf), or NULL to leave the environment's: --threads, else cores / (jobs x
 * ranks_here) when that shares the node */
const char *sweep_threads(const sweep_cfg *c, int ranks_here, char *buf, size_t n);
/* mpi_sweep.c (make MPI=1): rank 0 runs the plan with every rank; the others run what it hands them.
 * Both return an exit status as run_plan does (rank 0) or 0/1 (the others). */
#ifdef AL_MPI
int   mpi_run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail);
int   mpi_sweep_worker(const sweep_cfg *c, plan_run *plan, int np, const char *exe);
/* rank 0's go (0) or no-go (an exit status) after its checks, received by the others; returns it */
int   mpi_sweep_go(int rc);
#else                                    /* one process: never called (app_mpi_size() is 1) */
static inline int mpi_run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone,
                               int *nfail) { return run_plan(c, plan, np, exe, main_csv, ndone, nfail); }
static inline int mpi_sweep_worker(const sweep_cfg *c, plan_run *plan, int np, const char *exe)
{ (void)c; (void)plan; (void)np; (void)exe; return 1; }
static inline int mpi_sweep_go(int rc) { return rc; }
#endif
/* The model flags of run r as argv pairs ("--patch", "4", ...) into av; returns how many entries. */
int  run_axis_args(const sweep_cfg *c, const plan_run *r, const char **av, char bufs[][64]);
#endif
