/* sweep.h — the pieces of `attnlab sweep` shared by its two files: cmd_sweep.c (the command line,
 * presets, validation and the plan) and sweep_jobs.c (child processes, signals, merging finished
 * runs into the CSV, resuming). */
#ifndef ATTNLAB_SWEEP_H
#define ATTNLAB_SWEEP_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
struct al_results;   /* attnlab/results.h */

#define MAXLIST 256
#define MAXJOBS 64
#define MAXAXES 16          /* model flags swept as grid axes */
#define MAXRUNS 100000      /* runs in one sweep */
#define MAXEPOCHS 100000    /* epochs of one run (--epochs, a preset's epochs = N, what a step budget gives) */
#define MAXSTEPS 1000000000L  /* a preset's step budget (epochs = steps N) */
#define MAXSTAGES 8         /* stages of a preset */
#define MAXOVER 8           /* epoch rules of one stage for some models or sizes */
#define EVALS 5             /* image runs longer than this many epochs are evaluated ~EVALS times */
#define BATCH 64            /* the image trainer's default batch size: the step-budget rule's batch */

enum { SPLIT_SIZE, SPLIT_LPC, SPLIT_FRAC, SPLIT_PLANETOID, SPLIT_ALL };
enum { RUN_TODO, RUN_SKIP, RUN_RUNNING, RUN_DONE, RUN_FAILED, RUN_STOPPED };

typedef struct split { int kind; long n; double frac; } split;

/* How many epochs a run gets: the trainer's default, a fixed count, or a step budget:
 * max(min, ceil(n / ceil(size / BATCH))) (image-tradeoff: n 1000, min 2). */
enum { ER_DEFAULT, ER_FIXED, ER_STEPS };
typedef struct epoch_rule { int kind; long n, min; } epoch_rule;
/* A rule for one model ("" any) and sizes from from_size on (0 any): the first that fits wins. */
typedef struct epoch_override { char model[32]; long from_size; epoch_rule rule; } epoch_override;

/* A model flag of `train` swept by the sweep: every value is a grid point (a single value is fixed). */
typedef struct axis {
    const char *flag;         /* "patch", "lr", ... (without --) */
    char *vals[MAXLIST]; int nvals;
    char *buf;                /* storage of vals */
    const char *only;         /* a preset's axis of one model (prior-mismatch: sa's --patch 2,1); NULL: every
                               * model the flag applies to */
} axis;

/* One block of the grid: models x model flags, with their epochs. A sweep has one; a preset may have
 * several ([stage NAME]), a stage starting each of its runs from the checkpoint of an earlier stage's run
 * of the same dataset, split and seed (--init-from). */
typedef struct stage {
    const char *name;         /* "" in a sweep of one stage; else in each run's description and id */
    int task;                 /* the sweep's TASK_* */
    unsigned char use[MAXLIST];   /* which of the sweep's splits it runs */
    char *models[MAXLIST]; int nmodels;
    char *models_buf;         /* storage of models[] */
    axis axes[MAXAXES]; int naxes;
    epoch_rule epochs;        /* --epochs E on the command line: fixed E for every run, overrides dropped */
    epoch_override over[MAXOVER]; int nover;
    int evals;                /* image runs are evaluated about this many times (--eval-every), and after the last */
    int from;                 /* the stage whose checkpoints this one's runs start from, or -1 */
    int saved;                /* a later stage starts from this one's checkpoints: its runs --save them */
} stage;

typedef struct sweep_cfg {
    const char *preset, *task, *data, *csv;   /* data: the --data text (or the preset's), a comma list */
    int taskid;                               /* TASK_* of train_flags.h */
    char *datas[MAXLIST]; int ndata;          /* its datasets: a grid axis outside the splits */
    char *data_buf;
    long full_size[MAXLIST];                  /* each dataset's training-set size when known (molecules), else 0 */
    split splits[MAXLIST]; int nsplits;
    long seeds[MAXLIST]; int nseeds;
    stage stages[MAXSTAGES]; int nstages;
    int jobs, dry_run;
    int summarize;            /* after the runs: the summary table (attnlab summarize) */
    char *plots[4]; int nplots; char *plots_buf;   /* after the runs: a plot of each metric (the first to plot_out) */
    int adopt;                /* rows the script this preset replaces wrote count as its runs (sweep_adopt.c) */
    const char *adopt_init;   /* the file name of those rows' --init-from ("cnn-{size}-s{seed}.safetensors"), or NULL */
    int threads;              /* --threads: OMP_NUM_THREADS of every run; 0: cores / (jobs x ranks on the node) */
    const char *plot_out;
    const char *max_memory;   /* --max-memory, passed to every run; NULL: not given */
} sweep_cfg;

typedef struct plan_run {
    const char *model, *data; /* data: one of the sweep's datasets (--data LIST) */
    int d;                    /* its index in the sweep's datasets */
    const stage *st;          /* the stage it belongs to */
    split sp;
    int sized;                /* the split is passed to train (not to a model built from a checkpoint) */
    long seed;
    int epochs;               /* 0: the trainer's default */
    int val[MAXAXES];         /* each axis's value index, -1 where the axis does not apply to the model */
    char desc[256];           /* "sa size=1000 seed=2 patch=4" */
    char run_id[17];
    char *part;               /* per-run temporary CSV (malloc'd) */
    char *ckpt;               /* its training state (malloc'd): kept with the part file, the run resumes */
    char *save;               /* its checkpoint for a later stage (malloc'd), or NULL */
    int dep;                  /* the run whose checkpoint it starts from, or -1 */
    const char *init_from;    /* that run's save: --init-from */
    int state;
    pid_t pid;
    double t0;
} plan_run;

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
int  run_axis_args(const plan_run *r, const char **av, char bufs[][64]);
/* The first RUN_TODO run from *first on whose stage's predecessor run is done, or -1 (none can start now);
 * a run whose predecessor failed, or whose predecessor's checkpoint is missing, is marked failed (counted
 * in *nfail, one line on stderr). */
int  next_startable(plan_run *plan, int np, int *first, int *nfail);

/* sweep_args.c: the command line and the presets into a sweep_cfg; 0, -1 after --help, or 2 after one line */
int  parse_args(int argc, char **argv, sweep_cfg *c);
void free_cfg(sweep_cfg *c);
void split_str(const split *sp, char *buf, size_t n);
/* The value of the printf-style message on stderr ("attnlab sweep: ..."); returns 2. */
int  bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int  split_list(const char *opt, const char *s, char **items, int max, char **keep);
int  parse_int(const char *s, long lo, long hi, long *out);             /* 0, or -1 outside [lo, hi] */
int  parse_seeds(const char *opt, const char *s, sweep_cfg *c);         /* "1-3,7" into c->seeds; 0 or -1 */
int  same_split(const split *a, const split *b);
int  find_split(const sweep_cfg *c, const split *sp);                   /* its index in c->splits, or -1 */
/* A list's splits into c->splits (each once) and, with use, marked in use[]; 0 or -1 */
int  add_splits(const char *opt, const char *s, int kind, sweep_cfg *c, unsigned char *use);
/* A swept flag (vals a comma list; only: the one model it applies to, or NULL; what: its name in messages,
 * NULL for --FLAG) appended to stage s; 0 or 2. */
int  add_axis(stage *s, const char *flag, const char *vals, const char *only, const char *what);
int  parse_epochs(const char *s, epoch_rule *r);                        /* default, N, steps N [min M]; 0 or -1 */
uint64_t model_points(const stage *s, const char *model);          /* saturating product of its axes' sizes */
uint64_t sweep_runs(const sweep_cfg *c);                              /* the plan's runs (at most MAXRUNS after parse_args) */
void model_point(const stage *s, const char *model, long p, int *val, char *desc, size_t dn);
long epochs_for(const sweep_cfg *c, const stage *s, const char *model, const split *sp);   /* 0: the trainer's default */
int  known_model(int task, const char *name);
/* A model of the task that sweep trains (known, and not only built from another's checkpoint: image conv-attn). */
int  trained_model(int task, const char *name);

/* sweep_presets.c: preset files (key = value lines, [stage NAME] sections; docs/experiments.md) */
typedef struct preset_line { char *key, *sel, *val; int line; } preset_line;
typedef struct preset_file {
    char path[4200], name[128];
    preset_line *lines; int nlines;
    int stage_at[MAXSTAGES + 1]; char *stage_names[MAXSTAGES]; int nstages;   /* lines[stage_at[i]..] of stage i */
    char *text;
} preset_file;
/* Find (a name: $ATTNLAB_PRESETS, the repository's results/presets, the installed share dir; or a path)
 * and read preset `arg`; 0, or 2 after one line "FILE:LINE: what" (or "unknown preset") on stderr. */
int  preset_load(const char *arg, preset_file *pf);
void preset_free(preset_file *pf);
/* Preset `name` (a name or a path) into c: its task, datasets, splits, seeds, stages, post-processing; 0 or 2. */
int  preset_apply(sweep_cfg *c, const char *name);
/* The graph preset in c restricted to the splits of --labels-per-class / --train-frac; 0 or 2. */
int  preset_subset(sweep_cfg *c, const char *lpc, const char *frac);
void preset_release(void);               /* what preset_apply kept */
/* The presets found, one "  NAME  description" line each (the first comment line), to f. */
void preset_list(FILE *f);

/* sweep_adopt.c: rows the script a preset replaced wrote, under the trainer's own run ids */
/* Marks the plan's RUN_TODO runs that such a row answers (same task, model, seed, size, and every flag
 * the run sets equal in the row's config) RUN_SKIP; returns how many. */
int  adopt_rows(const sweep_cfg *c, plan_run *plan, int np, const struct al_results *have);
#endif
