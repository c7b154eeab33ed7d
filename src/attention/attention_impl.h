/* attention_impl.h — internals shared by the fast attention kernels (attention.c) and the dense
 * masked reference (attention_ref.c): argument checking and the dropout mask, so that both
 * implementations see the same configuration and draw exactly the same mask. */
#ifndef ATTNLAB_ATTENTION_IMPL_H
#define ATTNLAB_ATTENTION_IMPL_H
#include "attnlab/attention.h"
#include <stddef.h>
#include <stdint.h>
#include "core/rng_impl.h"

/* Everything the kernels need to know besides the data pointers. */
typedef struct al_attn_cfg {
    int B, H, N, D, Dv;
    int additive, relu;        /* score = additive (else dot); norm = relu (else softmax) */
    float scale, slope;
    int64_t slots;             /* score slots per (b, h) in the pattern's layout */
    int noff;                  /* window offsets (0 for full / graph) */
    int drop;                  /* dropout active */
    uint32_t thresh;           /* drop when hash < thresh */
    float inv_keep;            /* 1 / (1 - p) */
    uint64_t seed;             /* dropout seed drawn from c->dropout_rng */
} al_attn_cfg;

/* Validate the arguments of al_attention / al_attention_ref (op names the caller in messages)
 * and fill cfg. Draws one number from c->dropout_rng when dropout is active.
 * Returns 0, or -1 after al_fail. */
int al_attn_setup(al_ctx *c, const char *op, const al_attn_desc *d, al_tensor *q, al_tensor *k,
                  al_tensor *v, al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias,
                  al_attn_cfg *cfg);

/* Full dot-product softmax attention for D = Dv = 16 with the queries in vector lanes
 * (attention_full16.c). al__full16_ok says whether cfg is that case on this build (no dropout,
 * no ReLU, AVX-512; the caller also requires no bias); the kernels then replace the generic
 * forward and per-head backward. Scratch: al__full16_scratch(cfg, 0 forward / 1 backward) floats
 * per thread. */
int al__full16_ok(const al_attn_cfg *cfg);
size_t al__full16_scratch(const al_attn_cfg *cfg, int backward);
void al__full16_forward(const al_attn_cfg *cfg, const float *q, const float *k, const float *v, float *out,
                        float *lse, float *scratch, int nthr);
void al__full16_backward(const al_attn_cfg *cfg, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse, const float *delta, float *dq, float *dk, float *dv, float *scratch,
                         int nthr);

/* Counter-based dropout mask: the weight in slot `slot` of head (b,h) (bh = b·H + h) is kept
 * iff this returns 1. Full attention uses slot = i·N + j. Any pass can regenerate any entry
 * in any order, so backward needs no stored mask. */
static inline int al_attn_keep(const al_attn_cfg *g, int64_t bh, int64_t slot)
{
    return al__keep_hash(g->seed, (uint64_t)(bh * g->slots + slot), g->thresh);
}
#endif
