/* train_report.h — one epoch reporter for every task of `attnlab train`: the results CSV row
 * (al_csv_row, appended) and the progress line on stderr. A run states its identity once (train_run);
 * each epoch the task's callback fills a train_epoch with its figures and calls train_report_epoch. Which
 * columns a task fills and how its progress line reads is a row of the table in train_report.c. */
#ifndef ATTNLAB_APPS_TRAIN_REPORT_H
#define ATTNLAB_APPS_TRAIN_REPORT_H
#include "attnlab/tensor.h"
#include "train_resume.h"

/* The run: the CSV's fixed columns and where its output goes. */
typedef struct train_run {
    int task;                   /* TASK_* (train_flags.h) */
    const char *run_id, *dataset, *model, *config;
    long train_size, seed, params;
    const char *csv;            /* --csv, or NULL: no rows */
    int tty, quiet;             /* stderr is a terminal; --quiet */
    app_resume *ar;             /* counts the run's CSV rows (NULL: none) */
    al_error *err;              /* a failed append's message */
    double last_draw;           /* when the step line, or off a terminal a seed's epoch line, was last drawn */
} train_run;

/* One epoch's figures; a task leaves NaN in those it does not have. */
typedef struct train_epoch {
    int epoch, epochs;          /* epochs: the run's count (graph, molecule: 0, they stop early) */
    int final;                  /* the run's last row (status "done") */
    int kept;                   /* that row is the kept model's, after the epochs (image with --val-size) */
    double loss, train_acc, val_acc, val_loss, test_acc;
    double seconds, per_second; /* the epoch's seconds; samples (images, tokens, frames, nodes, molecules) per second */
    double unseen_acc, ambig_acc;   /* sequence */
    double ser;                 /* speech: string error rate (NaN: not a string task) */
    int classes;                /* molecule: 1 classification (accuracy), 0 regression (RMSE, MAE) */
    double val_rmse, test_rmse, test_mae;   /* molecule regression */
    double elapsed;             /* image: seconds since the start */
} train_epoch;

/* A train_epoch with every figure NaN. */
train_epoch train_epoch_none(void);
/* The CSV row of the epoch (if r->csv), then the progress line (unless quiet). 0, or 1 when the row
 * could not be written (message in r->err). Safe from concurrent runs (graph seeds). */
int train_report_epoch(train_run *r, const train_epoch *e);
/* Only the CSV row (a run with no epochs: conv-attn). 0 or 1 as above. */
int train_report_row(const train_run *r, const train_epoch *e);
/* s seconds as M:SS or H:MM:SS ("--:--" when unknown). */
void train_report_time(char *b, size_t n, double s);
/* The redrawn step line on a terminal (sequence, speech): at most every 0.1 s and at an epoch's end. */
void train_report_step(train_run *r, int epoch, int epochs, int step, int steps, double loss, double per_second);
#endif
