/* attnlab/results.h — read a results CSV (AL_CSV_HEADER columns), group its rows into runs,
 * and reduce runs to mean ± std of the final test accuracy (and of the sequence runs' unseen_acc and
 * ambig_acc) per (task, dataset, model, size).
 *
 *   al_results r; al_error e = {{0}};
 *   if (al_results_read("results/demo.csv", &r, &e) != AL_OK) { puts(e.msg); ... }  // "FILE:LINE: ..."
 *   al_summary s; al_results_summarize(&r, &s, &e);
 *   for (int i = 0; i < s.n; i++) printf("%s %ld %.3f\n", s.grp[i].model, s.grp[i].train_size, s.grp[i].mean);
 *   al_summary_free(&s); al_results_free(&r);
 *
 * A run is the set of rows sharing a run_id (one row per epoch, in file order); its last row in
 * file order is its result, and the run is complete when that row's status is "done" (a run cut
 * short by kill -9 or a full disk is not: summaries list it and never average it). Files with the
 * 14-column header of attnlab < 0.4 read too: their runs have an empty config and count as
 * complete (they were written whole); those and the 16-column files of 0.4 have no unseen_acc and
 * ambig_acc (NaN). Rows are read strictly: exactly as many fields as the
 * header, numbers fully parsed, empty numeric fields read as NaN. Nothing here prints or exits.
 */
#ifndef ATTNLAB_RESULTS_H
#define ATTNLAB_RESULTS_H
#include <stddef.h>
#include "tensor.h"
#include "io.h"   /* al_read_file, AL_CSV_HEADER */

/* One parsed row. Strings are NUL-terminated copies; `line` is its 1-based line in the file. */
typedef struct al_result_row {
    char run_id[40], task[16], dataset[64], model[32];
    long train_size, seed;
    int epoch;
    double train_loss, train_acc, val_acc, test_acc, epoch_seconds, samples_per_second;
    long params;
    char config[512];              /* al_run_config of the run ("" in 14-column files) */
    char status[16];               /* "done" on a finished run's final row */
    double unseen_acc, ambig_acc, test_rmse, test_mae;   /* 0.5 columns; NaN when empty or absent */
    int line;
} al_result_row;

/* The accuracies a row can carry, by CSV column: what summaries average and plots draw. */
typedef enum { AL_METRIC_TEST_ACC, AL_METRIC_UNSEEN_ACC, AL_METRIC_AMBIG_ACC, AL_NMETRICS } al_metric;
const char *al_metric_name(al_metric m);            /* the column: "test_acc", "unseen_acc", "ambig_acc" */
int         al_metric_find(const char *name);       /* the metric of a column name, or -1 */
double      al_result_metric(const al_result_row *w, al_metric m);   /* the row's value (NaN if none) */

/* One run: rows row[first], …, in file order; row[last] is the final (result) row. */
typedef struct al_run { int first, last, nrows, complete; } al_run;

typedef struct al_results {
    int version;                   /* 3: current header; 2: the 16 columns of 0.4; 1: the 14 of < 0.4 */
    al_result_row *row; int n;     /* rows in file order */
    al_run *run; int nrun;         /* runs in order of first appearance */
    int *next;                     /* (n) index of the next row of the same run, -1 at its end */
} al_results;

/* Parse CSV text (header line AL_CSV_HEADER, then rows; an empty text is an empty result set).
 * `name` is used in error messages ("name:LINE: ..."). On error *r is left empty. */
al_status al_results_parse(const char *text, size_t len, const char *name, al_results *r, al_error *err);
/* Read and parse a file; a file that does not exist is an error. */
al_status al_results_read(const char *path, al_results *r, al_error *err);
/* Tolerant reading for files a killed or disk-full writer may have left: with flags
 * AL_RESULTS_DROP_TORN an incomplete final line (no newline) is dropped instead of being an error, and
 * note (if non-NULL) receives "FILE:LINE: incomplete last line (N bytes, ...) dropped" (note[0] == 0
 * when nothing was dropped). Every other malformed line is still an error. flags 0: al_results_read. */
#define AL_RESULTS_DROP_TORN 1
al_status al_results_parse_ex(const char *text, size_t len, const char *name, int flags, al_results *r,
                              char note[AL_ERRLEN], al_error *err);
al_status al_results_read_ex(const char *path, int flags, al_results *r, char note[AL_ERRLEN], al_error *err);
void      al_results_free(al_results *r);
/* Index of the run with this run_id, or -1. */
int       al_results_find_run(const al_results *r, const char *run_id);

/* Reduction of complete runs to one line per (task, dataset, model, config, train_size). */
typedef struct al_summary_group {
    char task[16], dataset[64], model[32];
    char config[512];          /* the part of the runs' config the grouping keeps (see `by`) */
    long train_size;
    int nruns;
    double mean, std;          /* final test accuracy over runs; std is the sample std (0 for one run) */
    /* each metric (al_metric) over the runs whose final row has it (not NaN): mean, sample std and
     * how many runs; metric_runs 0 and a NaN mean when none has it (image and graph runs: unseen_acc) */
    double metric_mean[AL_NMETRICS], metric_std[AL_NMETRICS];
    int metric_runs[AL_NMETRICS];
    double mean_epochs;        /* mean final epoch number */
    double mean_seconds;       /* mean total training seconds per run (sum of epoch_seconds) */
    long params;               /* parameter count of the last run seen */
} al_summary_group;
typedef struct al_summary {
    al_summary_group *grp; int n;
    int *incomplete; int nincomplete;   /* runs (indices into r->run) left out: no final "done" row */
} al_summary;

/* Groups sorted by task, dataset, model, config, then train_size. Caller frees with al_summary_free.
 * Same as al_results_summarize_by(r, NULL, s, err): the whole config tells variants apart. */
al_status al_results_summarize(const al_results *r, al_summary *s, al_error *err);
/* by: NULL = group by model and the whole config; otherwise a comma list of config keys to keep
 * (e.g. "patch,pos"; "" or "model" = the model alone, every variant merged). */
al_status al_results_summarize_by(const al_results *r, const char *by, al_summary *s, al_error *err);
/* config ("k=v;k=v") restricted to the keys named in the comma list `by` (NULL = all) into out. */
void al_config_filter(const char *config, const char *by, char *out, size_t n);
/* What tells group g apart from the other groups of its model (for legends and tables): the
 * "key=value" pairs of its config whose values differ between the model's groups, space-separated,
 * into out (n bytes); "" when the model has one variant. */
void al_summary_label(const al_summary *s, int g, char *out, size_t n);
void      al_summary_free(al_summary *s);
/* 1 when some group of s has metric m (metric_runs > 0). */
int       al_summary_has_metric(const al_summary *s, al_metric m);

/* Mean and sample standard deviation of x[0..n) (std 0 when n < 2). */
void al_mean_std(const double *x /* (n) */, int n, double *mean, double *std);
#endif
