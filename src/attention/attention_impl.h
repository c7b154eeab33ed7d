/* attention_impl.h — internals shared by the attention files (internal header):
 *   attention.c   the op al_attention and its tape node (attn_node), the additive head projections
 *   pattern.c     argument/pattern checking (al_attn_setup) and the sparse slot lists
 *   dropout.c     the vectorised counter-based dropout (dropout_impl.h: its inline hash lanes)
 *   full.c        streamed full attention (full16_fwd.c, full16_bwd.c: the D = Dv = 16 lane kernels)
 *   sparse.c      window2d / window1d / graph through slot lists
 *   gat.c         graph + additive + softmax with the heads in vector lanes
 *   ref.c         the dense masked reference, conv_attn.c convolution as attention
 * The fast kernels and the reference share the configuration and the dropout mask, so both see the
 * same arguments and draw exactly the same mask. */
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

/* Where the rows of one head live: row i of head (b, h) starts at b·sb + h·sh + i·sr floats. The
 * plain (B,H,N,D) layout is {H·N·D, N·D, D}; q, k, v read in place from a (B,N,3·H·D) projection are
 * {N·3·H·D, D, 3·H·D} (k and v at offsets H·D and 2·H·D), and an output written with its heads merged,
 * (B,N,H·D), is {N·H·D, D, H·D} (al_attention_qkv). */
typedef struct al_attn_lay { int64_t sb, sh, sr; } al_attn_lay;
static inline int64_t al__lay_head(const al_attn_lay *l, int64_t bh, int H) { return bh / H * l->sb + bh % H * l->sh; }
static inline al_attn_lay al__lay_plain(const al_attn_cfg *g, int d)
{
    al_attn_lay l = {(int64_t)g->H * g->N * d, (int64_t)g->N * d, d};
    return l;
}

/* Validate the arguments of al_attention / al_attention_ref (op names the caller in messages)
 * and fill cfg. Draws one number from c->dropout_rng when dropout is active.
 * Returns 0, or -1 after al_fail. */
int al_attn_setup(al_ctx *c, const char *op, const al_attn_desc *d, al_tensor *q /* (B,H,N,D) */,
                  al_tensor *k /* (B,H,N,D) */, al_tensor *v /* (B,H,N,Dv) */, al_tensor *a_q /* (H,D) or NULL */,
                  al_tensor *a_k /* (H,D) or NULL */, al_tensor *rel_bias /* (H,offsets) or NULL */,
                  al_tensor *bias /* (H,slots) or NULL */, al_attn_cfg *cfg);

/* Full dot-product softmax attention for D = Dv = 16 with the queries in vector lanes
 * (full16_fwd.c, full16_bwd.c, what they share: full16_impl.h). al__full16_ok says whether cfg is
 * that case on this build (no dropout, no ReLU, AVX-512 or AVX2 + FMA; the caller also requires no
 * bias); the kernels then replace the generic forward and per-head backward. Scratch:
 * al__full16_scratch(cfg, 0 forward / 1 backward) floats per thread. */
extern long al__full16_runs;   /* tests: forward calls of the lane kernels (single-threaded callers) */
extern int al__full16_few_max; /* a partial last block of at most this many queries runs query by query (tests: 0 = never) */
int al__full16_ok(const al_attn_cfg *cfg);
const char *al__full16_path(void);   /* what runs for D = 16 on this build, for bench */
size_t al__full16_scratch(const al_attn_cfg *cfg, int backward);
/* The kernels below take q, k, v (and dq, dk, dv) in layout li and out, dO in layout lo. */
void al__full16_forward(const al_attn_cfg *cfg, const float *q, const float *k, const float *v, float *out, float *lse /* (B,H,N) */,
                        const al_attn_lay *li, const al_attn_lay *lo, float *scratch /* (nthr, al__full16_scratch(cfg, 0)) */, int nthr);
void al__full16_backward(const al_attn_cfg *cfg, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse /* (B,H,N) */, const float *delta /* (B,H,N) */, float *dq /* or NULL */,
                         float *dk /* or NULL */, float *dv /* or NULL */, const al_attn_lay *li, const al_attn_lay *lo,
                         float *scratch /* (nthr, al__full16_scratch(cfg, 1)) */, int nthr,
                         int fresh /* dq, dk, dv hold garbage: every element is written (0 + its sum), not added to */);
/* delta (heads, N) = the row dot products dO_i · O_i (out and dO in layout lo, Dv = 16), with the bits of
 * the scalar FMA chain; 0 if this build has no vector path for it (neither AVX-512 nor AVX2 + FMA: the
 * caller then runs the chain). */
int al__full16_delta(const float *o, const float *dO, const al_attn_lay *lo, int64_t heads, int H, int N,
                     float *delta, int nthr);

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
/* r[c] = column c of the 8×8 block whose rows are r[0..7] (moves only; win16.c, full16_impl.h, full16_bwd.c). */
static inline void al__tr8(__m256 r[8])
{
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(u0, u4, 0x20); r[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
    r[1] = _mm256_permute2f128_ps(u1, u5, 0x20); r[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
    r[2] = _mm256_permute2f128_ps(u2, u6, 0x20); r[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
    r[3] = _mm256_permute2f128_ps(u3, u7, 0x20); r[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
}
#endif

/* Window attention for D = Dv = 16 with the queries in vector lanes (win16.c): the slot-list
 * kernels' results, bit for bit, without index loads. al__win16_ok says whether cfg and pattern are
 * that case on this build; al__win16_setup (after al__attn_slot_lists) fills the node's w_ fields. */
struct attn_node;
extern int al__win16_off;     /* tests: nonzero turns the lane kernels off */
extern long al__win16_runs;   /* tests: how many times the lane forward ran */
int al__win16_ok(const al_attn_cfg *cfg, const al_pattern *p, const void *bias);
const char *al__win16_path(void);    /* what runs for D = 16 windows on this build, for bench */
int al__win16_setup(al_ctx *c, struct attn_node *nd);
size_t al__win16_scratch(const struct attn_node *nd);
void al__win16_forward(const struct attn_node *nd, const float *q, const float *k, const float *v, const float *rel /* (H,K) or NULL */,
                       float *P /* (B,H,npad/WL,K,WL) */, float *out /* (B,H,N,16) */, float *scratch /* (nthr, al__win16_scratch) */);
/* The node's backward (dQ, dK, dV, the relative bias's gradient) and its weights in the pattern's
 * layout (B,H,N,K) for desc->weights. */
void al__win16_backward(al_ctx *c, struct attn_node *nd);
void al__win16_weights(const struct attn_node *nd, float *w);

/* The backward node shared by every kernel family (built by al_attention). */
typedef struct attn_node {
    al_attn_cfg g;
    al_pattern pat;
    al_tensor *q, *k, *v, *aq, *ak, *rel, *bias, *out;
    al_tensor *qkv;     /* al_attention_qkv: q, k, v are its column blocks (q, k, v NULL) */
    al_attn_lay li, lo; /* where q, k, v (and their gradients) and out (and dO) keep each head's rows */
    float *lse;        /* full, softmax: (B,H,N) */
    float *P;          /* sparse: (B,H,slots) normalised weights before dropout */
    float *sq, *sk;    /* additive: (B,H,N) a_q·q and a_k·k */
    /* sparse pattern: slots of query i are qptr[i]..qptr[i+1], key[s] (−1 = absent);
     * the present slots of key j are kslot[kptr[j]..kptr[j+1]] with their queries kq[..]. */
    const int64_t *qptr; const int *key;
    const int *keyc;   /* key with absent entries replaced by the query itself (safe to load) */
    int maxdeg;        /* longest slot list of a query or a key (per-thread scratch size) */
    int64_t *kptr, *kslot; int *kq;
    uint8_t *keepb;    /* sparse with dropout: (B,H,slots) keep bytes, drawn once in forward */
    int nthr;
    /* gat (graph + additive + softmax, no bias): heads innermost, so P is (B,slots,H). Each node
     * has one record of rs floats in vt (B,N,rs): v as (Dv,H), then sk, sq (H each) and ms (2,H),
     * the softmax max and 1/sum of its row, so that a slot's reads at random of one node's data
     * are one place in memory (a random access costs per place far more than per 64-byte line);
     * sq, sk, ms point into the first record and step by rs. qt, kt are q, k as (B,N,D,H) rows of
     * qs, ks floats (they are vt, rows of rs, when q, k are v); aqt, akt are a_q, a_k as (D,H);
     * the dropout bits are drawn again where needed (gat_keep_bits). The backward overwrites P with
     * dS and recomputes the weights it still needs from sq, sk, ms (the forward's operations, same
     * bits). */
    int gat;
    int64_t rs, qs, ks;
    float *vt, *qt, *kt, *aqt, *akt, *ms;
    /* win16 (window2d/window1d, dot, softmax, D = Dv = 16, no bias or dropout; AVX-512 with WL = 16
     * queries per vector, AVX2 with WL = 8): P is block-major (B,H,npad/WL,K,WL); per offset its token
     * distance w_off, the offsets by distance descending w_ord, and per block of WL queries (keys)
     * the lanes with that slot present. */
    int win16, w_npad, w_margin;
    int *w_off, *w_ord;
    uint16_t *w_qm, *w_km;
    float *scr;        /* gat forward: (threads, maxdeg, HV) */
} attn_node;

/* attention.c: the node's q, k, v and their gradients (allocated zeroed where wanted, else NULL), from
 * the three tensors or from al_attention_qkv's packed one. fresh (NULL: not offered): the caller writes
 * every element of all three gradients; al_attention_qkv's packed gradient is then allocated without
 * zeroing when it is new (*fresh = 1), else *fresh = 0. */
void al__attn_ptrs(al_ctx *c, attn_node *nd, const float **q, const float **k, const float **v, float **dq, float **dk,
                   float **dv, int *fresh);
#define AL_FULL_FUSED_MIN_HEADS 4   /* full backward: one pass per head (the d = 16 lane kernels) from this many heads */

/* attention.c: s (B,H,N) = a[h] · x[b,h,i]; da (H,D) += Σ_{b,i} ds[b,h,i] · x[b,h,i,:] in a fixed order. */
void al__attn_head_dot(const al_attn_cfg *g, const float *x /* (B,H,N,D) */, const float *a /* (H,D) */,
                       float *s /* (B,H,N) */);
void al__attn_head_dot_grad(const al_attn_cfg *g, const float *x /* (B,H,N,D) */, const float *ds /* (B,H,N) */,
                            float *da /* (H,D) */);

/* pattern.c: qptr/key/keyc of the pattern (window patterns built, graphs borrow the CSR), the
 * transposed lists kptr/kslot/kq and maxdeg, in nd (arena). Returns 0, or -1 after al_fail. */
int al__attn_slot_lists(al_ctx *c, const al_pattern *p, const al_attn_cfg *g, attn_node *nd);

/* dropout.c: y[t] = keep(bh, slot0 + t) ? x[t] / (1 − p) : 0 for t < n (y may be x); drop_mul2 does
 * two rows with one mask; keep_bytes draws keepb[bh·slots + s] ∈ {0, 1} for every head and slot. */
void al__attn_drop_mul(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x /* (n) */,
                       float *y /* (n) */, int n);
void al__attn_drop_mul2(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x1 /* (n) */,
                        float *y1 /* (n) */, const float *x2 /* (n) */, float *y2 /* (n) */, int n);
void al__attn_keep_bytes(const al_attn_cfg *g, uint8_t *keepb /* (B,H,slots) */);

/* full.c: the streamed full kernels. Scratch: al__attn_full_scratch_for(g, bias, backward) floats
 * per thread (either full kernel family). */
int al__attn_use_full16(const al_attn_cfg *g, const float *bias /* (H,N·N) or NULL */);
size_t al__attn_full_scratch_for(const al_attn_cfg *g, const float *bias /* (H,N·N) or NULL */, int backward);
void al__attn_full_forward(const al_attn_cfg *g, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                           const float *v /* (B,H,N,Dv) */, const float *sq /* (B,H,N) or NULL */,
                           const float *sk /* (B,H,N) or NULL */, const float *bias /* (H,N·N) or NULL */,
                           float *out /* (B,H,N,Dv) */, float *lse /* (B,H,N) */,
                           float *scratch /* (nthr, scratch_for) */, int nthr);
void al__attn_full_weights(const al_attn_cfg *g, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                           const float *sq /* (B,H,N) or NULL */, const float *sk /* (B,H,N) or NULL */,
                           const float *bias /* (H,N·N) or NULL */, const float *lse /* (B,H,N) */,
                           float *wts /* (B,H,N,N) */, float *scratch /* (nthr, scratch_for) */, int nthr);
void al__attn_full_backward(al_ctx *c, attn_node *nd);

/* sparse.c: the slot-list kernels (window2d, window1d, graph). */
void al__attn_sparse_forward(const attn_node *nd, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                             const float *v /* (B,H,N,Dv) */, const float *rel /* (H,noff) or NULL */,
                             const float *bias /* (H,slots) or NULL */, float *out /* (B,H,N,Dv) */,
                             float *scratch /* (nthr, maxdeg) */);
void al__attn_sparse_backward(al_ctx *c, attn_node *nd);

/* gat.c: graph + additive + softmax, heads in lanes. gat_setup allocates its arena scratch. */
int al__attn_gat_setup(al_ctx *c, attn_node *nd);
void al__attn_gat_forward(attn_node *nd, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                          const float *v /* (B,H,N,Dv) */, float *out /* (B,H,N,Dv) */);
void al__attn_gat_backward(al_ctx *c, attn_node *nd);

/* Counter-based dropout mask: the weight in slot `slot` of head (b,h) (bh = b·H + h) is kept
 * iff this returns 1. Full attention uses slot = i·N + j. Any pass can regenerate any entry
 * in any order, so backward needs no stored mask. */
static inline int al_attn_keep(const al_attn_cfg *g, int64_t bh, int64_t slot)
{
    return al__keep_hash(g->seed, (uint64_t)(bh * g->slots + slot), g->thresh);
}
/* al_attention_qkv's in-place path (attention.c): where the d = 16 lane kernels run (al_attention_qkv_inplace),
 * attends on qkv (B,N,3·H·D) in place and returns (B,N,H·D); elsewhere returns NULL with *split = 1 and the
 * caller (src/ops/attention_qkv.c) splits, attends and merges. NULL with *split = 0: an error in c. */
al_tensor *al__attention_qkv_lanes(al_ctx *c, const al_attn_desc *d, al_tensor *qkv, int heads, al_tensor *a_q,
                                   al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias, int *split);
#endif
