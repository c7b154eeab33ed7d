/* train/seq_impl.h — the data-parallel training step of the sequence models (internal to src/train).
 *
 * A step's batch is tiny (32 sentences, ~500 tokens): split op by op across threads, each op's work
 * is a few microseconds, and a step forks some sixty parallel regions — on a shared machine, where a
 * waiting thread may not get its CPU back for milliseconds, each of those costs more than the op.
 * So the batch is cut into AL_SEQ_SHARDS shards of whole sentences (about equal token counts); each
 * shard runs forward, loss and backward on its own context, into its own gradient array (shard 0
 * into the model's, shard 1 into a replica's that shares the model's weights), one shard per thread
 * and every op inside a shard serial; then the gradients are summed into the model's. One parallel
 * region per step (the optimiser's is a second).
 *
 * The shard count is fixed, not the thread count, so the same batch is always cut the same way and
 * every sum has the same order: the results do not depend on the number of threads. The gradient
 * is the whole batch's (each shard's loss is weighted by its share of the tokens), i.e. the same
 * mathematics as one pass over the batch, summed in another order. */
#ifndef AL_TRAIN_SEQ_IMPL_H
#define AL_TRAIN_SEQ_IMPL_H
#include "attnlab/train.h"

#define AL_SEQ_SHARDS 2

typedef struct al__seq_stepper {
    al_seq_model rep;              /* shard 1's handle on the model's weights, with its own gradients */
    int have_rep;
    al_ctx *c[AL_SEQ_SHARDS];      /* one context (arena, tape) per shard */
    int *mark;                     /* (nwords + nsuffixes) step stamp per embedding row: listed already */
    int *rows;                     /* (nwords + nsuffixes) the embedding rows shard 1 touched, flat offsets */
    int stamp;
} al__seq_stepper;

/* Contexts and the replica of m. Free with al__seq_stepper_free (also after a failure). */
al_status al__seq_stepper_init(al__seq_stepper *s, const al_seq_model *m, uint64_t seed, al_error *err);
void      al__seq_stepper_free(al__seq_stepper *s);
/* Forward, mean cross-entropy over the batch's tokens and backward: m's gradient array is SET to the
 * batch's gradient (no zeroing needed before). *loss = the batch's mean loss, *correct = tokens whose
 * argmax is tags[i]. The weights are not touched. */
al_status al__seq_step(al__seq_stepper *s, al_seq_model *m, const al_seq_batch *b, const int *tags /* (ntok) */,
                       double *loss, int64_t *correct, al_error *err);
/* Tokens of tags[0..n) with a label (>= 0). */
int       al__seq_tagged(const int *tags, int n);
/* The data-parallel step (dist.h): this rank's micro-shards of b (contiguous sentences, al_dist_shards of
 * the sentence count), each on s->c[0] alone, then m's gradient SET to the sum over every rank. *loss,
 * *correct: the whole batch's, the same on every rank. step_no seeds each shard's dropout stream. */
al_status al__seq_step_dist(al__seq_stepper *s, al_seq_model *m, const al_seq_batch *b, const int *tags /* (ntok) */,
                            const al_dist *d, uint64_t seed, int64_t step_no, al_gradsum *gs,
                            double *loss, int64_t *correct, al_error *err);
#endif
