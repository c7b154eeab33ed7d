/* train_report.c — the epoch reporter of `attnlab train` (train_report.h): per task, which CSV
 * columns it fills and how its progress line reads. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "attnlab/io.h"
#include "attnlab/tensor.h"
#include "train_flags.h"
#include "train_report.h"

enum {
    RC_VAL = 1,             /* val_acc column (graph, molecule; image with --val-size) */
    RC_WORDS = 2,           /* unseen_acc, ambig_acc (sequence) */
    RC_REGRESSION = 4,      /* test_rmse, test_mae when the target is not a class (molecule) */
    RC_EPOCH_LINE = 8,      /* one line per epoch, "epoch E/N  loss ..." (else a redrawn "seed S epoch E" line) */
    RC_SER = 16,            /* string_err in the epoch line when the task has one (speech) */
    RC_ELAPSED = 32,        /* test_acc "-" when not evaluated, elapsed time at the end (image) */
};
typedef struct task_report { unsigned cols; const char *unit; } task_report;
static const task_report reports[AL_TASK_COUNT] = {
    [AL_TASK_IMAGE] = {RC_VAL | RC_EPOCH_LINE | RC_ELAPSED, "img"},
    [AL_TASK_GRAPH] = {RC_VAL, NULL},
    [AL_TASK_SEQUENCE] = {RC_WORDS | RC_EPOCH_LINE, "tok"},
    [AL_TASK_SPEECH] = {RC_EPOCH_LINE | RC_SER, "frames"},
    [AL_TASK_MOLECULE] = {RC_VAL | RC_REGRESSION, NULL},
};

train_epoch train_epoch_none(void)
{
    train_epoch e;
    memset(&e, 0, sizeof e);
    e.loss = e.train_acc = e.val_acc = e.val_loss = e.test_acc = e.seconds = e.per_second = NAN;
    e.unseen_acc = e.ambig_acc = e.ser = e.val_rmse = e.test_rmse = e.test_mae = e.elapsed = NAN;
    return e;
}

void train_report_time(char *b, size_t n, double s)
{
    if (!(s >= 0) || s > 1e7) { snprintf(b, n, "--:--"); return; }
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(b, n, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
    else snprintf(b, n, "%d:%02d", t / 60, t % 60);
}

int train_report_row(const train_run *r, const train_epoch *e)
{
    const unsigned cols = reports[r->task].cols;
    al_csv_row row;
    memset(&row, 0, sizeof row);
    row.run_id = r->run_id; row.task = al_task_at(r->task)->name; row.dataset = r->dataset; row.model = r->model;
    row.train_size = r->train_size; row.seed = r->seed; row.epoch = e->epoch;
    row.train_loss = e->loss; row.train_acc = e->train_acc; row.val_acc = cols & RC_VAL ? e->val_acc : NAN;
    row.test_acc = e->test_acc; row.epoch_seconds = e->seconds; row.samples_per_second = e->per_second;
    row.params = r->params; row.config = r->config;
    row.status = e->final ? "done" : NULL;   /* the run is complete only with its last row */
    if (cols & RC_WORDS) { row.word_scores = 1; row.unseen_acc = e->unseen_acc; row.ambig_acc = e->ambig_acc; }
    if (cols & RC_REGRESSION) { row.regression = !e->classes; row.test_rmse = e->test_rmse; row.test_mae = e->test_mae; }
    al_status st;
    #pragma omp critical(train_csv)   /* the name cmd_train_graph.c takes to start a run on the same CSV */
    st = al_csv_append(r->csv, &row, r->err);
    return st != AL_OK;
}

/* "epoch 3/10  loss ...  12.0 s  840 img/s": one line per epoch (image, sequence, speech). */
static void epoch_line(const train_run *r, const train_epoch *e, unsigned cols, const char *unit)
{
    char ta[16];
    if ((cols & RC_ELAPSED) && isnan(e->test_acc)) snprintf(ta, sizeof ta, "-"); else snprintf(ta, sizeof ta, "%.4f", e->test_acc);
    if (e->kept) {   /* the kept model, after the epochs */
        fprintf(stderr, "%skept epoch %d  val_acc %.4f  test_acc %s\n", r->tty ? "\r\033[K" : "", e->epoch, e->val_acc, ta);
        return;
    }
    fprintf(stderr, "%sepoch %d/%d  loss %.4f  train_acc %.4f", r->tty ? "\r\033[K" : "", e->epoch, e->epochs, e->loss,
            e->train_acc);
    if ((cols & RC_VAL) && !isnan(e->val_acc)) fprintf(stderr, "  val_acc %.4f", e->val_acc);
    fprintf(stderr, "  test_acc %s", ta);
    if (cols & RC_WORDS) fprintf(stderr, "  unseen_acc %.4f  ambig_acc %.4f", e->unseen_acc, e->ambig_acc);
    if ((cols & RC_SER) && !isnan(e->ser)) fprintf(stderr, "  string_err %.4f", e->ser);
    fprintf(stderr, "  %.1f s  %.0f %s/s", e->seconds, e->per_second, unit);
    if (cols & RC_ELAPSED) {
        char el[32];
        train_report_time(el, sizeof el, e->elapsed);
        fprintf(stderr, "  elapsed %s", el);
    }
    fprintf(stderr, "\n");
}

/* "seed 1 epoch 40  loss ...": redrawn on a terminal while a run of several seeds stops early (graph, molecule);
 * off a terminal (a log, CI, a notebook) a line of its own. */
static void seed_line(const train_run *r, const train_epoch *e)
{
    fputs(r->tty ? "\r\033[K" : "", stderr);
    if (r->task == AL_TASK_GRAPH)
        fprintf(stderr, "seed %ld epoch %d  loss %.4f  train %.3f  val %.3f (loss %.4f)  test %.3f  %.1f ms", r->seed,
                e->epoch, e->loss, e->train_acc, e->val_acc, e->val_loss, e->test_acc, 1e3 * e->seconds);
    else
        fprintf(stderr, "seed %ld epoch %d  loss %.4f  val %.3f  test %.3f (%s)  %.1f s", r->seed, e->epoch, e->loss,
                e->classes ? e->val_acc : e->val_rmse, e->classes ? e->test_acc : e->test_rmse,
                e->classes ? "accuracy" : "RMSE", e->seconds);
    fputs(r->tty ? "" : "\n", stderr);
}

int train_report_epoch(train_run *r, const train_epoch *e)
{
    const task_report *t = &reports[r->task];
    if (r->csv) {
        if (train_report_row(r, e)) return 1;
        if (r->ar) app_resume_row(r->ar);
    }
    if (r->quiet) return 0;
    if (t->cols & RC_EPOCH_LINE) epoch_line(r, e, t->cols, t->unit);
    else if (!e->final) {
        /* off a terminal: a seed's first epoch, then at most a line a second (a graph epoch takes milliseconds) */
        double now = al_time();
        if (r->tty || e->epoch <= 1 || now - r->last_draw >= 1.0) { r->last_draw = now; seed_line(r, e); }
    }
    return 0;
}

void train_report_step(train_run *r, int epoch, int epochs, int step, int steps, double loss, double per_second)
{
    if (r->quiet || !r->tty) return;
    double now = al_time();
    if (now - r->last_draw < 0.1 && step != steps) return;
    r->last_draw = now;
    fprintf(stderr, "\r\033[Kepoch %d/%d %d/%d loss %.4f %.0f %s/s", epoch, epochs, step, steps, loss, per_second,
            reports[r->task].unit);
    fflush(stderr);
}
