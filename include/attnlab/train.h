/* attnlab/train.h — the training floor: the training and evaluation loops of every model family
 * (images, graphs, sequences, speech, molecules), each reporting epochs through a callback and never
 * printing; training states and divergence (trainstate.h), optimisers (optim.h) and data-parallel
 * sums (dist.h) below them.
 *
 * Images (al_model_train) run AdamW over shuffled mini-batches, evaluate the whole test set after each
 * epoch and report each epoch through a callback.
 */
#ifndef ATTNLAB_TRAIN_H
#define ATTNLAB_TRAIN_H
#include <stdint.h>
#include "tensor.h"
#include "images.h"
#include "models.h"
#include "gnn.h"
#include "seq.h"
#include "molnet.h"
#include "speech.h"
#include "optim.h"
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

/* What the progress callback receives: after every step (kind 0), at the end of an epoch (kind 1) and,
 * with a validation set (al_model_train_val), once for the kept model after training (kind 2: its
 * epoch, its validation and test accuracy; loss, train_acc and the timings NaN). */
typedef struct al_train_progress {
    int kind;                       /* 0 step, 1 epoch end, 2 the kept model */
    int epoch, epochs;              /* 1-based */
    int step, steps_per_epoch;      /* 1-based within the epoch */
    double loss;                    /* step: this batch; epoch: mean over the epoch */
    double train_acc, test_acc;     /* epoch end only (train_acc: running, over the epoch's batches) */
    double epoch_seconds;           /* wall time of the epoch's training steps (not evaluation) */
    double img_per_s;               /* training images per second so far this epoch */
    double elapsed;                 /* seconds since training started */
    double val_acc;                 /* epoch end and kept model, with a validation set; else NaN */
    int best_epoch;                 /* with a validation set: the kept model's epoch so far (0: none yet) */
} al_train_progress;
/* Return nonzero to stop training (the call then returns AL_ERR with "stopped"). */
typedef int (*al_train_cb)(void *ud, const al_train_progress *p);

/* Train m on train, evaluating on test after every epoch. cb may be NULL. A loss that diverges (see
 * al_diverge_loss) or a non-finite weight after a step stops training with AL_ERR. With tc->resume,
 * states go to resume->save after epoch 0, every `every` epochs and the last, each after that epoch's
 * progress callback; with resume->from, training continues after from->epoch. */
al_status al_model_train(al_model *m, const al_images *train, const al_images *test,
                         const al_train_config *tc, al_train_cb cb, void *ud, al_error *err);
/* The same with a validation set held out of the training images: val is evaluated after every epoch;
 * the model of the best validation accuracy (the earliest on ties) is kept, and training stops after
 * `patience` epochs without a better one (0: never early; tc->epochs is the cap). The kept model is
 * back in m at the end, its test accuracy reported once more (progress kind 2). Training states carry
 * the kept weights, so --resume continues such a run too. */
al_status al_model_train_val(al_model *m, const al_images *train, const al_images *val, const al_images *test,
                             const al_train_config *tc, int patience, al_train_cb cb, void *ud, al_error *err);
/* Accuracy of m on d (grad and training off, batches of `batch`). pred (d->n) may be NULL. */
al_status al_model_evaluate(al_model *m, const al_images *d, const float mean[4], const float std[4],
                            int batch, double *acc, int *pred /* (d->n) or NULL */, al_error *err);
/* al_model_evaluate with more out: logits (d->n × classes, row-major) may be NULL; fn(ud, done, total)
 * after every batch (may be NULL). Same batches and results as al_model_evaluate (src/train/image_eval.c). */
typedef void (*al_eval_progress_fn)(void *ud, int done, int total);
al_status al_model_evaluate_ex(al_model *m, const al_images *d, const float mean[4], const float std[4], int batch,
                               double *acc, int *pred /* (d->n) or NULL */, float *logits /* (d->n, classes) or NULL */,
                               al_eval_progress_fn fn, void *ud, al_error *err);

/* ================ graphs: node classification (src/train/graph.c) ================ */
/* ---------------- training ---------------- */
typedef struct al_gnn_epoch {
    int epoch;              /* 1-based; for the final (restored) record, the best epoch */
    int final;              /* 1 for the record of the restored best model */
    double train_loss;      /* loss of the training step (with dropout); final record: without */
    double train_acc, val_loss, val_acc, test_acc;   /* evaluation without dropout */
    double seconds;         /* wall time of the training step (forward, backward, optimiser) */
} al_gnn_epoch;
/* Called after every epoch and once for the restored best model; a nonzero return stops training. */
typedef int (*al_gnn_epoch_fn)(const al_gnn_epoch *e, void *ud);

typedef struct al_gnn_result {
    int best_epoch, epochs_run;
    double train_acc, val_loss, val_acc, test_acc;   /* of the restored best model */
    double step_seconds;    /* mean wall time of a training step */
} al_gnn_result;

/* Full-batch training with Adam (cfg lr / weight decay), cross-entropy on the training nodes.
 * After each epoch the model is evaluated; as in the GAT paper the model is kept when validation
 * accuracy and loss are both at least as good as their best so far, and training stops after
 * cfg.patience epochs in which neither improved. The kept model is restored into m at the end.
 * Attention is not captured during training (capture_attn is ignored here). */
al_status al_gnn_train(al_gnn *m, const al_graph *g, uint64_t seed, al_gnn_epoch_fn fn, void *ud,
                       al_gnn_result *res, al_error *err);
/* al_gnn_train with training states (trainstate.h): handed to rs->save after epoch 0, every rs->every
 * epochs and the last one (early stopping included), each after that epoch's record; with rs->from,
 * training continues after from->epoch (a finished state only restores and reports the kept model).
 * A diverging loss or a non-finite weight stops training with AL_ERR (both functions). */
al_status al_gnn_train_resumable(al_gnn *m, const al_graph *g, uint64_t seed, const al_resume *rs,
                                 al_gnn_epoch_fn fn, void *ud, al_gnn_result *res, al_error *err);

/* One training step: forward with dropout, cross-entropy over g's training nodes, backward,
 * optimiser step. c is reset first. *loss receives the training loss. */
al_status al_gnn_step(al_gnn *m, const al_graph *g, al_ctx *c, al_optim *o, double *loss, al_error *err);

/* Evaluation without dropout, one forward pass over all nodes. */
typedef struct al_gnn_eval { double train_loss, train_acc, val_loss, val_acc, test_loss, test_acc; } al_gnn_eval;
al_status al_gnn_evaluate(al_gnn *m, const al_graph *g, al_ctx *c, al_gnn_eval *ev, al_error *err);

/* ================ sequences: tagging (src/train/seq.c) ================ */
typedef struct al_seq_train_config {
    int epochs, batch, eval_batch;  /* batch in sentences (32); eval_batch 256 */
    float lr, weight_decay;         /* AdamW 1e-3, 0.01 */
    uint64_t seed;                  /* shuffling: AL_RNG_SHUFFLE stream */
    int max_steps;                  /* > 0: stop after this many steps (tests) */
    const al_resume *resume;        /* NULL, or training states to hand out / continue from (trainstate.h) */
    const al_dist *dist;            /* NULL: one process; else this rank's share of a data-parallel run (dist.h) */
} al_seq_train_config;

typedef struct al_seq_progress {
    int kind;                       /* 0 step, 1 epoch end */
    int epoch, epochs, step, steps_per_epoch;
    double loss;                    /* step: this batch; epoch: token-weighted mean over the epoch */
    double train_acc;               /* epoch: running token accuracy over the epoch's batches */
    double test_acc, unseen_acc;    /* epoch end: token accuracy on test, on test words unseen in train */
    double ambig_acc;               /* epoch end: on test words that took >= 2 tags in train ("saw") */
    double epoch_seconds, tok_per_s, elapsed;
} al_seq_progress;
typedef int (*al_seq_cb)(void *ud, const al_seq_progress *p);   /* nonzero: stop */

/* Divergence (al_diverge_loss, a non-finite weight) stops training with AL_ERR; tc->resume works as in
 * al_model_train (train.h). */
al_status al_seq_train(al_seq_model *m, const al_seq_data *train, const al_seq_data *test,
                       const al_seq_train_config *tc, al_seq_cb cb, void *ud, al_error *err);
/* Token accuracy of m on d (tags >= 0 count), accuracy on tokens with unseen set (NaN if none);
 * pred (d->ntok) receives the argmax tags, may be NULL; acc/unseen_acc may be NULL (tagging). */
al_status al_seq_evaluate(al_seq_model *m, const al_seq_data *d, int batch, double *acc, double *unseen_acc,
                          int *pred, al_error *err);
/* Every score at once: token accuracy, and accuracy on the tokens flagged unseen and ambiguous (NaN
 * where no token is), with the counts of tagged tokens behind each. */
typedef struct al_seq_scores {
    double acc, unseen_acc, ambig_acc;
    int64_t ntok, nunseen, nambig;
} al_seq_scores;
al_status al_seq_evaluate_scores(al_seq_model *m, const al_seq_data *d, int batch, al_seq_scores *sc, int *pred,
                                 al_error *err);

/* ================ speech: the sequence models over frames (src/train/speech.c) ================ */
/* Defaults of sequence model `name` reading d's frames: feat_dim = d->dim, tags = d->classes,
 * max_len = the longest utterance of d after subsampling (at least 1). */
al_status al_speech_config(al_seq_config *cfg, const char *name, const al_speech_data *d, int subsample, al_error *err);

typedef struct al_speech_scores {
    double acc;                    /* N-to-1: utterance accuracy; N-to-N: frame accuracy (100 frames/s) */
    double ser;                    /* N-to-N: digit-string error rate (runs merged, silence dropped); else NaN */
    int64_t n;                     /* utterances (N-to-1) or frames (N-to-N) counted */
} al_speech_scores;

typedef struct al_speech_train_config {
    int epochs, batch, eval_batch; /* batch in utterances (16); eval_batch 64 */
    float lr, weight_decay;        /* AdamW 1e-3, 0.01 */
    uint64_t seed;
    int max_steps;                 /* > 0: stop after this many steps (tests) */
    const al_resume *resume;       /* as in al_seq_train */
} al_speech_train_config;

typedef struct al_speech_progress {
    int kind, epoch, epochs, step, steps_per_epoch;   /* kind 0 step, 1 epoch end */
    double loss, train_acc;        /* the step's; at the epoch end the epoch's (frame- or utterance-weighted) */
    al_speech_scores test;         /* at the epoch end */
    double epoch_seconds, frames_per_s, elapsed;
} al_speech_progress;
typedef int (*al_speech_cb)(void *ud, const al_speech_progress *p);

/* AdamW on mean cross-entropy (over the batch's frames, or its utterances); divergence stops with AL_ERR. */
al_status al_speech_train(al_seq_model *m, const al_speech_data *train, const al_speech_data *test,
                          const al_speech_train_config *tc, al_speech_cb cb, void *ud, al_error *err);
/* Scores of m on d; pred (may be NULL) receives per utterance (N-to-1) or per input frame (N-to-N) the argmax. */
al_status al_speech_evaluate(al_seq_model *m, const al_speech_data *d, int batch, al_speech_scores *sc, int *pred, al_error *err);
/* ================ molecules: one output per graph (src/train/molecule.c) ================ */
/* ---------------- training ---------------- */
/* One evaluation without dropout: regression RMSE and MAE in the file's units, or classification
 * accuracy and mean cross-entropy; the other pair NaN. */
typedef struct al_mol_eval { double rmse, mae, acc, loss; } al_mol_eval;
typedef struct al_mol_epoch {
    int epoch, final;       /* final: the record of the restored best model (epoch = its epoch) */
    double train_loss;      /* mean training loss of the epoch's batches (MSE in standardised units, or
                             * cross-entropy; final: NaN) */
    al_mol_eval train, val, test;   /* train: the final record only, else NaN */
    double seconds;         /* wall time of the epoch's training steps */
} al_mol_epoch;
typedef int (*al_mol_epoch_fn)(const al_mol_epoch *e, void *ud);   /* nonzero: stop */
typedef struct al_mol_result {
    int best_epoch, epochs_run;
    al_mol_eval train, val, test;   /* of the kept model */
    double step_seconds;    /* mean wall time of an epoch's training */
} al_mol_result;
/* AdamW on minibatches (cfg.batch molecules, reshuffled every epoch with the AL_RNG_SHUFFLE stream of
 * seed), MSE on standardised targets or cross-entropy; after every epoch validation and test figures;
 * the model with the lowest validation RMSE (classification: highest accuracy, then lowest loss) is
 * kept and restored at the end (as the PyTorch peer does), and its figures on every split reported
 * (res, and a last record with final = 1). Molecules without a target are skipped. A loss over
 * AL_DIVERGE_RATIO x its running minimum, a non-finite loss or weight stops training with AL_ERR
 * ("training diverged at epoch E step S: ..."). */
al_status al_molnet_train(al_molnet *m, const al_molset *ms, uint64_t seed, al_mol_epoch_fn fn, void *ud,
                          al_mol_result *res, al_error *err);
/* al_molnet_train with training states (trainstate.h): handed to rs->save after epoch 0, every
 * rs->every epochs and the last one, each after that epoch's record; the kept weights in best, its
 * epoch in best_epoch, its validation accuracy in acc_max and its validation RMSE (classification:
 * loss) in loss_min. With rs->from, training continues after from->epoch (a finished state only
 * restores and reports the kept model). */
al_status al_molnet_train_resumable(al_molnet *m, const al_molset *ms, uint64_t seed, const al_resume *rs,
                                    al_mol_epoch_fn fn, void *ud, al_mol_result *res, al_error *err);
/* The model over molecules ids[0..n), no dropout, in batches: *ev, and pred[i] (if non-NULL) the
 * prediction in the file's units or the probability of class 1. */
al_status al_molnet_evaluate(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, al_mol_eval *ev,
                             float *pred /* (n) or NULL */, al_error *err);
/* ---- names of 0.5, kept as deprecated aliases through 0.6.x, removed with soname libattnlab.so.1 (CHANGELOG.md) ---- */
AL_DEPRECATED("al_model_train") al_status al_train_image(al_model *m, const al_images *train, const al_images *test,
    const al_train_config *tc, al_train_cb cb, void *ud, al_error *err);
AL_DEPRECATED("al_model_evaluate") al_status al_eval_image(al_model *m, const al_images *d, const float mean[4],
    const float std[4], int batch, double *acc, int *pred, al_error *err);
AL_DEPRECATED("al_model_evaluate_ex") al_status al_eval_image_ex(al_model *m, const al_images *d, const float mean[4],
    const float std[4], int batch, double *acc, int *pred, float *logits, al_eval_progress_fn fn, void *ud, al_error *err);
AL_DEPRECATED("al_seq_evaluate") al_status al_seq_eval(al_seq_model *m, const al_seq_data *d, int batch, double *acc,
    double *unseen_acc, int *pred, al_error *err);
AL_DEPRECATED("al_seq_evaluate_scores") al_status al_seq_eval_scores(al_seq_model *m, const al_seq_data *d, int batch,
    al_seq_scores *sc, int *pred, al_error *err);
AL_DEPRECATED("al_speech_evaluate") al_status al_speech_eval(al_seq_model *m, const al_speech_data *d, int batch,
    al_speech_scores *sc, int *pred, al_error *err);

#endif
