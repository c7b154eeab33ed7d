/* train/fit_impl.h — the one training skeleton of every task (internal to src/train; fit.c).
 *
 * al__fit runs epochs of steps: the data order reshuffled every epoch from the AL_RNG_SHUFFLE stream
 * (minibatch tasks) or one full-batch step an epoch, the divergence checks around each optimiser step,
 * the running training loss and accuracy, an evaluation after every epoch, keeping the best model by
 * a task's rule with early stopping (graphs, molecules), training states handed out and resumed
 * (trainstate.h), and progress reported per step and per epoch. A task supplies only what differs: its
 * step (forward, loss and backward into the parameters' gradients), its evaluation, its rule for the
 * kept model, and how it reports — the al__fit_task below. Each family's public training function
 * (al_model_train, al_gnn_train_resumable, al_seq_train, al_speech_train, al_molnet_train_resumable)
 * is such a task around al__fit, with the same arithmetic in the same order as before, so the same
 * results bit for bit. */
#ifndef AL_TRAIN_FIT_IMPL_H
#define AL_TRAIN_FIT_IMPL_H
#include "attnlab/train.h"
#include "train/state_impl.h"

/* What one step did: the loss, its weight in the epoch's mean (examples, tagged tokens, frames, or 1 a
 * batch), argmax hits of count scored rows (count 0: the task scores none), units processed (images,
 * tokens, frames: throughput); skip 1 when the batch held nothing to learn from (no optimiser step). */
typedef struct al__fit_step { double loss, weight; int64_t hits, count, units; int skip; } al__fit_step;

/* Early stopping's and the kept model's record, as training states hold it (trainstate.h): the best
 * validation accuracy and loss (a task may store another figure in them, as molecules do), epochs
 * without improvement, the kept model's epoch (0: none yet), the time spent in training steps. */
typedef struct al__fit_track { double acc_max, loss_min; int bad, best_epoch; double step_seconds; } al__fit_track;

/* A report to the task: a step (kind 0), an epoch's end (1). loss: the step's, or the epoch's weighted
 * mean; train_acc: running hits / count of the epoch (NaN when the task counts none); seconds: the
 * epoch's steps so far; units: what they processed; elapsed: since training began. */
typedef struct al__fit_progress {
    int kind, epoch, epochs, step, steps_per_epoch;
    double loss, train_acc, seconds, units, elapsed;
} al__fit_progress;

enum { AL__FIT_CONTINUE = 0, AL__FIT_STOP = 1, AL__FIT_ABORT = -1 };

typedef struct al__fit_task {
    /* forward, loss and backward of items order[0..n) into the parameters'
     * gradients (items NULL and n = 0 for a full-batch task); `step` is the step's number in its epoch, step_no the run's count of steps before it.
     * On failure the task writes the whole message into err. */
    al_status (*step)(void *self, al_ctx *c, const int *items, int n, int epoch, int step, int64_t step_no,
                      al__fit_step *out, al_error *err);
    /* after an epoch's steps (last: the run ends after it): the task's evaluation, kept by the task */
    al_status (*evaluate)(void *self, al_ctx *c, int epoch, int last, al_error *err);
    /* keep-best tasks: compare the evaluation just made with the record; set *keep when the current model
     * becomes the kept one; return 1 when early stopping ends training. NULL: no kept model. */
    int (*track)(void *self, al__fit_track *t, int epoch, int *keep);
    /* the report of a step or an epoch (after evaluate and track): AL__FIT_CONTINUE, AL__FIT_STOP (end
     * training after this epoch, as early stopping does) or AL__FIT_ABORT (the run fails with "stopped") */
    int (*report)(void *self, const al__fit_progress *p);
    /* keep-best tasks, after the kept model is back in the parameters: its evaluation and final report */
    al_status (*finish)(void *self, al_ctx *c, const al__fit_track *t, int epochs_run, al_error *err);
} al__fit_task;

typedef struct al__fit_config {
    al_params *params;
    al_optim_kind optim; float lr, weight_decay;
    uint64_t seed;                 /* the context's streams, the shuffle stream */
    int epochs;
    int n, batch;                  /* training items to order and batch (n may be 0: no steps) */
    int full_batch;                /* instead: one step an epoch over everything (n and batch unused) */
    int max_steps;                 /* > 0: stop after this many steps (tests) */
    int step_reports;              /* report every step (kind 0) too */
    const al_resume *resume;       /* NULL, or states to hand out / continue from */
    const char *what;              /* "graph", "molecule": the task in a resume message */
    al__fit_track track0;          /* the record before the first epoch */
} al__fit_config;

/* Rows a batch of `batch` items out of n can hold: at most n (at least 1), so that the scratch of a
 * batch size near INT_MAX is the data's size, not gigabytes it can never fill. */
static inline int al__batch_rows(int batch, int n) { return batch < n ? batch : n > 0 ? n : 1; }
static inline int al__max_int(int a, int b) { return a > b ? a : b; }

/* The run: the context (its arena reused by every step and evaluation), then epochs as above. On return
 * *epochs_run (may be NULL) holds the epochs trained, counting a stopping epoch. */
al_status al__fit(const al__fit_task *t, void *self, const al__fit_config *fc, int *epochs_run, al_error *err);
#endif
