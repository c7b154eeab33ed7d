/* attnlab/train.h — the image training and evaluation loop.
 *
 * Training (al_train_image) runs AdamW over shuffled mini-batches, evaluates the whole test set
 * after each epoch and reports each epoch through a callback; it never prints.
 */
#ifndef ATTNLAB_TRAIN_H
#define ATTNLAB_TRAIN_H
#include <stdint.h>
#include "tensor.h"
#include "images.h"
#include "models.h"
#include "trainstate.h"
#include "dist.h"

/* On-the-fly augmentation of training images (never of test images), an effective-data multiplier:
 * each (seed, epoch, image) draws its own stream (AL_RNG_AUGMENT), so a run repeats bit for bit on any
 * thread count and across a resume, and every epoch sees every image differently.
 *   shift   translate by dx, dy uniform in [-shift, shift] pixels, black (pixel 0) coming in (as
 *           torchvision's RandomCrop(size, padding=shift))
 *   flip    mirror left-right with probability 1/2 (RandomHorizontalFlip)
 *   erase   with this probability, one rectangle of 2-33 % of the image, aspect 0.3-3.3, set to 0 after
 *           normalisation, i.e. the channel mean (RandomErasing(p=erase), value 0)
 * All zero: none. */
typedef struct al_augment { int shift, flip; float erase; } al_augment;
/* "shift:2,flip,erase:0.25" (any subset, any order, parts joined by ',' or '+' — a sweep's axis value
 * cannot hold a comma; "none") into *a; AL_ERR naming the bad part. */
al_status al_augment_parse(const char *s, al_augment *a, al_error *err);
int       al_augment_str(const al_augment *a, char *buf, size_t n);   /* canonical text, "none" if off */
/* Augment x (b, c, h, w), normalised, in place: image i is training image idx[i] at this epoch. fill
 * (c) is the normalised value of a black pixel. */
al_status al_augment_batch(const al_augment *a, float *x, int b, int c, int h, int w, const int *idx, uint64_t seed, int epoch,
                           const float *fill, al_error *err);

typedef struct al_train_config {
    int epochs, batch, eval_batch;  /* eval_batch default 64 (images per evaluation pass; memory only) */
    float lr, weight_decay;
    uint64_t seed;                  /* shuffling uses the AL_RNG_SHUFFLE stream of seed */
    float mean[4], std[4];          /* per-channel normalisation: x = (pix/255 − mean)/std (al_images_stats) */
    int max_steps;                  /* 0 = whole epochs; > 0 stops after this many steps (tests) */
    int eval_every;                 /* evaluate the test set every this many epochs and after the last
                                     * (0 or 1 = every epoch); skipped epochs report test_acc NaN */
    const al_resume *resume;        /* NULL, or training states to hand out / to continue from (trainstate.h) */
    al_augment augment;             /* training images only; all zero = none */
    const al_dist *dist;            /* NULL: one process; else this rank's share of a data-parallel run (dist.h) */
} al_train_config;

/* What the progress callback receives: after every step (kind 0) and at the end of an epoch (kind 1). */
typedef struct al_train_progress {
    int kind;                       /* 0 step, 1 epoch end */
    int epoch, epochs;              /* 1-based */
    int step, steps_per_epoch;      /* 1-based within the epoch */
    double loss;                    /* step: this batch; epoch: mean over the epoch */
    double train_acc, test_acc;     /* epoch end only (train_acc: running, over the epoch's batches) */
    double epoch_seconds;           /* wall time of the epoch's training steps (not evaluation) */
    double img_per_s;               /* training images per second so far this epoch */
    double elapsed;                 /* seconds since training started */
} al_train_progress;
/* Return nonzero to stop training (the call then returns AL_ERR with "stopped"). */
typedef int (*al_train_cb)(void *ud, const al_train_progress *p);

/* Train m on train, evaluating on test after every epoch. cb may be NULL. A loss that diverges (see
 * al_diverge_loss) or a non-finite weight after a step stops training with AL_ERR. With tc->resume,
 * states go to resume->save after epoch 0, every `every` epochs and the last, each after that epoch's
 * progress callback; with resume->from, training continues after from->epoch. */
al_status al_train_image(al_model *m, const al_images *train, const al_images *test,
                         const al_train_config *tc, al_train_cb cb, void *ud, al_error *err);
/* Accuracy of m on d (grad and training off, batches of `batch`). pred (d->n) may be NULL. */
al_status al_eval_image(al_model *m, const al_images *d, const float mean[4], const float std[4],
                        int batch, double *acc, int *pred /* (d->n) or NULL */, al_error *err);
/* al_eval_image with more out: logits (d->n × classes, row-major) may be NULL; fn(ud, done, total)
 * after every batch (may be NULL). Same batches and results as al_eval_image (src/train/image_eval.c). */
typedef void (*al_eval_progress_fn)(void *ud, int done, int total);
al_status al_eval_image_ex(al_model *m, const al_images *d, const float mean[4], const float std[4], int batch,
                           double *acc, int *pred /* (d->n) or NULL */, float *logits /* (d->n, classes) or NULL */,
                           al_eval_progress_fn fn, void *ud, al_error *err);
#endif
