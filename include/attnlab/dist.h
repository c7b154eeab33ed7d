/* attnlab/dist.h — data-parallel training over several processes, without the library knowing how
 * they talk: the caller (bin/attnlab built with `make MPI=1`, apps/mpi_dist.c) hands the training
 * loops an al_dist whose allreduce is MPI_Allreduce; the library stays free of MPI.
 *
 * What the loops do with it (docs/scale-out.md): every global batch is cut into S micro-shards, S
 * fixed by the batch alone (al_dist_shards), never by the number of ranks; rank r of N takes the
 * contiguous micro-shards [S·r/N, S·(r+1)/N) and runs each one's forward and backward alone. The
 * gradient is summed as exact int64 fixed point (one scale per step, 2^k from the largest |g| of any
 * micro-shard), so the sum has no order and 1, 2 or 3 ranks give the same bits. Losses travel as the
 * bits of one double per micro-shard (every other rank adds 0), counts as int64. Every rank then takes
 * the same optimiser step on the same weights. Evaluation batches go round-robin, their counts are summed.
 */
#ifndef ATTNLAB_DIST_H
#define ATTNLAB_DIST_H
#include <stdint.h>
#include "tensor.h"

enum { AL_DIST_SUM, AL_DIST_MAX };

typedef struct al_dist {
    int rank, size;                 /* 0 <= rank < size */
    /* buf (n) := the element-wise sum (AL_DIST_SUM) or maximum (AL_DIST_MAX) of every rank's buf, in
     * place, on every rank; 0 or -1. */
    int (*allreduce)(void *ud, int64_t *buf /* (n) */, int64_t n, int op);
    void *ud;
} al_dist;

#define AL_DIST_SHARD_ITEMS 8       /* micro-shards hold about this many items (images, sentences) ... */
#define AL_DIST_MIN_SHARDS 8        /* ... but a batch has at least this many (fewer only when it is smaller) */
#define AL_DIST_MAX_SHARDS 64       /* and at most this many: a sum of 2^6 terms, the fixed point's headroom */

/* The micro-shards of a batch of n items: S = min(n, max(8, ceil(n / 8))), at most 64 (batch 64: 8 of
 * 8 images; 32 sentences: 8 of 4; 512: 64 of 8). Shard j holds items [n·j/S, n·(j+1)/S). Ranks beyond
 * S have nothing to do. This rank's shards are [*j0, *j1). */
int  al_dist_shards(int n);
void al_dist_my_shards(const al_dist *d, int S, int *j0, int *j1);

/* One step's gradient sum. begin; after each of this rank's micro-shards add(params->grad); then
 * reduce writes the global sum into grad on every rank. Scratch grows on first use; free at the end. */
typedef struct al_gradsum {
    int64_t P;                      /* floats per gradient */
    float *buf; int cap, n;         /* (cap, P) the micro-shards' gradients of this step */
    int64_t *acc;                   /* (P) fixed point */
    double maxabs;
} al_gradsum;
void      al_gradsum_begin(al_gradsum *g, int64_t P);
al_status al_gradsum_add(al_gradsum *g, const float *grad /* (P) */, al_error *err);
al_status al_gradsum_reduce(al_gradsum *g, const al_dist *d, float *grad /* (P) */, al_error *err);
void      al_gradsum_free(al_gradsum *g);

/* Per-micro-shard scalars: slot j (0 <= j < S) of v holds shard j's value on the rank that ran it and
 * 0 elsewhere; after the sum every rank adds the S values in shard order. */
al_status al_dist_sum_slots(const al_dist *d, double *v /* (S) */, int S, double *total, al_error *err);
/* Integer counts summed over the ranks, in place. */
al_status al_dist_sum_counts(const al_dist *d, int64_t *v /* (n) */, int n, al_error *err);
#endif
