/* train/state_impl.h — the training loops' side of resumable training (trainstate.h): what of a
 * loop's own variables a state holds, restoring them, and handing a state out when it is due.
 * Internal to src/train (image.c, seq.c, graph.c; defined in trainstate.c). */
#ifndef AL_TRAIN_STATE_IMPL_H
#define AL_TRAIN_STATE_IMPL_H
#include "attnlab/trainstate.h"

/* Pointers to a loop's variables; shuffle and order are NULL (norder 0) for full-batch loops. */
typedef struct al__loop {
    al_optim *opt;
    al_rng *shuffle;
    al_ctx *c;                 /* its dropout stream */
    int *order; int norder;    /* (norder) the data order */
    int64_t *steps;
    al_diverge *div;
    int epochs;                /* the run's epochs */
    int64_t steps_per_epoch;   /* the most optimiser steps one epoch takes */
} al__loop;

/* Copy rs->from into the loop's variables once it is checked against the run (trainstate.h: optimiser,
 * order, epoch, step counts; messages name rs->from_path); *first_epoch receives from->epoch + 1. */
al_status al__loop_restore(const al__loop *L, const al_resume *rs, int *first_epoch, al_error *err);
/* The start of a loop: no steps, a fresh divergence detector, the identity order and the AL_RNG_SHUFFLE
 * stream of seed; then either rs->from restored (and rs->resumed told) or the state of epoch 0 offered. */
al_status al__loop_begin(const al_resume *rs, const al__loop *L, uint64_t seed, int *first_epoch, al_error *err);
/* Does rs want the state after `epoch` (0: before the first step) of a run that is over when last? */
int       al__resume_due(const al_resume *rs, int epoch, int last);
/* The loop's state after `epoch` (pointers borrowed from the loop; graph fields empty). */
void      al__loop_view(const al__loop *L, int epoch, int last, al_train_state *s);
/* When due: the view handed to rs->save; AL_ERR if it asks to stop. */
al_status al__loop_offer(const al_resume *rs, const al__loop *L, int epoch, int last, al_error *err);
#endif
