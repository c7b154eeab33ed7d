/* attnlab/trainstate.h — resumable training and divergence detection, shared by the three training
 * loops (images: train.h, sequences: seq.h, graphs: gnn.h, molecules: molnet.h).
 *
 * A training state is everything a loop needs to continue exactly where it stopped: the epoch
 * reached, the optimiser (kind, hyperparameters, step count, moments), every RNG stream that moves
 * during training (the shuffle stream and the context's dropout stream), the data order, the
 * divergence detector and, for graphs and molecules, the record of the kept model with its weights. The weights
 * themselves are the model's parameters. A loop given an al_resume with every > 0 hands its state to
 * resume->save before its first step (epoch 0), after every `every`-th epoch and after its last one;
 * given resume->from it continues from such a state, and the rest of the run is bit for bit the run
 * that was never interrupted (the loops are deterministic for any thread count).
 *
 *   al_resume rs = {1, my_save, &ud, NULL, NULL, NULL};     // state after every epoch
 *   tc.resume = &rs; al_model_train(&m, &tr, &te, &tc, cb, ud, &err);
 *   ...
 *   al_train_state s; al_train_state_load("run.train", &m.params, &s, NULL, &err);
 *   rs.from = &s; al_model_train(&m, &tr, &te, &tc, cb, ud, &err);   // continues after s.epoch
 *   al_train_state_free(&s);
 *
 * The file is safetensors: the parameters under their names, "optim.m", "optim.v" (F32), "data.order"
 * (I32), "graph.best" (F32), and the scalars in __metadata__ (floats in C99 hex, exact).
 */
#ifndef ATTNLAB_TRAINSTATE_H
#define ATTNLAB_TRAINSTATE_H
#include <stdint.h>
#include "tensor.h"
#include "optim.h"

/* ---------------- divergence ---------------- */
/* A loss above AL_DIVERGE_RATIO × its running minimum stops training; the minimum counts as at least
 * AL_DIVERGE_FLOOR, so a loss that has reached almost zero does not turn ordinary noise into
 * "divergence" (a cross-entropy of 10 is still far beyond any run that learns). */
#define AL_DIVERGE_RATIO 1e3
#define AL_DIVERGE_FLOOR 1e-2
typedef struct al_diverge { double min; } al_diverge;   /* the lowest loss so far (+inf before the first) */
void      al_diverge_init(al_diverge *d);
/* Before the optimiser step: AL_ERR with "training diverged at epoch E step S: ..." (the loss, the
 * minimum, "try a lower --lr") when loss is not finite or too large; else the minimum is updated. */
al_status al_diverge_loss(al_diverge *d, double loss, int epoch, int step, al_error *err);
/* After the optimiser step: AL_ERR naming the first parameter with a non-finite value. */
al_status al_diverge_weights(const al_diverge *d, const al_params *p, double loss, int epoch, int step, al_error *err);
/* The same after optimiser o's step on p, at no cost when the step left every weight finite (o->nonfinite
 * is 0): the scan, for the message naming the weight, runs only when it did not. */
struct al_optim;
al_status al_diverge_step(const al_diverge *d, const struct al_optim *o, const al_params *p, double loss, int epoch, int step,
                          al_error *err);

/* ---------------- the state ---------------- */
typedef struct al_train_state {
    int epoch;                  /* epochs completed (0: before the first step) */
    int finished;               /* 1: training is over (last epoch, or graph early stopping) */
    int64_t steps;              /* optimisation steps taken */
    al_rng shuffle, dropout;    /* the AL_RNG_SHUFFLE stream (image, sequence) and the context's dropout stream */
    int *order; int norder;     /* (norder) the data order after `epoch` shuffles; NULL, 0 for graphs */
    al_optim opt;               /* kind, hyperparameters, step; m, v (opt.n each; v NULL for SGD) */
    al_diverge div;
    /* graphs, image runs with a validation set: early stopping; molecules: the best-validation model (best
     * NULL otherwise) */
    float *best;                /* (opt.n) the kept weights */
    int best_epoch, bad;
    double acc_max, loss_min, step_seconds;
} al_train_state;

/* Hands a state to the caller (who writes it, e.g. with al_train_state_save); nonzero stops training. */
typedef int (*al_train_state_fn)(void *ud, const al_train_state *s);
typedef struct al_resume {
    int every;                  /* > 0: save at epoch 0, every `every` epochs and after the last */
    al_train_state_fn save;
    void *ud;
    const al_train_state *from; /* non-NULL: continue from this state; the model already holds its weights */
    const char *from_path;      /* the file `from` was read from, named by the messages below (NULL: "resume") */
    /* NULL, or called with `from` once it is checked against the run (below) and restored, before the
     * first step: where a caller drops what it wrote after that state; nonzero stops training. */
    al_train_state_fn resumed;
} al_resume;
/* A loop given `from` first checks it against the run, before its first step: the same optimiser over
 * the same parameters, the same number of examples in data.order, epoch <= the run's epochs, and steps
 * and optim.step at most epoch × the run's steps per epoch; each failure is one message naming the file
 * and the field ("run.train: epoch 1000000000 is beyond the 2 epochs of this run"). */

/* s and the weights p (the model's parameters) as a safetensors file, with the extra metadata pairs
 * kv[0..2·nkv) (keys other than the state's own); atomic. */
al_status al_train_state_save(const char *path, const al_params *p, const al_train_state *s,
                              const char *const *kv, int nkv, al_error *err);
/* Read such a file: the weights into p (registered, same names and sizes), the rest into s, whose
 * arrays are allocated here (free with al_train_state_free). *meta (if non-NULL) receives the
 * metadata text (caller frees). On error p may be partly overwritten and s is left empty.
 * Every value is checked for what a state can hold, each failure one message naming the file and the
 * field: data.order a permutation of 0..order-1; steps and optim.step at most epoch × INT_MAX (the run's
 * own bound is checked when training resumes, above); finished only after epoch 0; RNG states not all
 * zero; the optimiser's hyperparameters in range, its moments finite (optim.v >= 0); diverge.min not
 * NaN; graph.best finite, graph.best_epoch and graph.bad at most epoch, graph.step_seconds >= 0. */
al_status al_train_state_load(const char *path, al_params *p, al_train_state *s, char **meta, al_error *err);
void      al_train_state_free(al_train_state *s);
#endif
