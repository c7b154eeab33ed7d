/* full16_impl.h — what the forward (full16_fwd.c) and the backward (full16_bwd.c) of the full
 * dot-product softmax attention for heads of size 16 share: the tile sizes, the block transposes, the
 * few-query path's lane helpers, the AVX-512 score dots and the drivers' scratch layout (internal).
 *
 * The kernels: full dot-product softmax attention for heads of size 16 (D = Dv = 16, the
 * pixel-level `sa` shape), with the query index in the vector lanes.
 *
 * The generic streamed kernel (full.c) computes each tile as small GEMMs with K = 16: the
 * scores go out to a (128, 128) tile in L2, come back for the softmax and again for P·V. Here a
 * block of 16 queries is one set of registers: lane i of every vector belongs to query i, so
 *   - a score vector s_j = Σ_d K[j,d]·Qᵀ[d] is 16 broadcast-FMAs with Qᵀ held in 16 registers,
 *   - the row max and the softmax sums are lane-wise (no horizontal reductions),
 *   - P·V accumulates Oᵀ[e] += p_j·V[j,e] in 16 registers,
 * and only a (keys, 16) strip of scores lives in L1 between the two sweeps of a key tile.
 * The backward (one task per head, as the generic one-pass backward) makes five sweeps over a key
 * tile for every 16-query block, each with its own 16 resident registers: P = exp(S − lse) (Qᵀ),
 * dS = P∘(dO·Vᵀ − δ) (dOᵀ), dV += Pᵀ·dO (dO rows), dK += dSᵀ·Q (Q rows) and dQᵀ += dS·K.
 * Every sum has a fixed order that depends on N only, so results are the same bits on any number
 * of threads.
 *
 * A last block with only a few real queries (N = 196: 12 blocks and 4 queries) runs query by query
 * with the keys in the lanes instead (forward_few, backward_few_tile: Kᵀ and Vᵀ built once per
 * head), every chain in the lane kernels' order, so the bits do not depend on which path ran. The
 * block transposes (Qᵀ, dOᵀ in, Oᵀ and dQᵀ out) are 16 x 16 register transposes on AVX-512.
 *
 * AVX2 + FMA builds run the same maths with eight queries per vector (the forward takes two vectors
 * per key, sixteen queries; the backward blocks of eight). Every lane does
 * the AVX-512 lane's operations in the same order (each query's score chain, max, exp2, partial
 * sums and P·V chain; each key's dK/dV chain runs over the queries in index order, and the padding
 * rows add exact zeros), so an AVX2 host gives the AVX-512 kernels' bits — only the register
 * blocking differs, since sixteen ymm registers cannot hold a transposed block: Qᵀ, Oᵀ and dQᵀ
 * live in L1 and are swept eight vectors at a time. Without either ISA al__full16_ok is false and
 * the generic kernel runs.
 */
#ifndef ATTNLAB_FULL16_IMPL_H
#define ATTNLAB_FULL16_IMPL_H
#include "attention/attention_impl.h"
#include "core/exp_impl.h"
#include "core/simd_impl.h"
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>

#define F16_BK 128   /* keys per tile: a (128, 16) strip of scores is 8 KiB of L1 */
#define LOG2E_F 1.44269504088896341f
#define LN2_F 0.693147180559945309f
#if defined(__AVX512F__)
#define F16_QB 16   /* queries per block: one per lane */
#define F16_FQB 16  /* the same in the forward */
#else
#define F16_QB 8    /* backward queries per block: one per lane */
#define F16_FQB 16  /* forward: two vectors per key (see forward_block) */
#endif

/* ---------------- shared by both ISAs: layouts ---------------- */

#if defined(__AVX512F__)
/* out[d·os + k] = alpha · X[k·ld + d] for k < n, 0 for n ≤ k < 16 (d < 16): a 16 x 16 block
 * transposed in registers, each element the scalar product alpha · x (alpha = 1: a copy). */
static inline void tr16x16(const float *X, int64_t ld, int n, float alpha, float *out, int64_t os)
{
    __m512 r[16], t[16];
    const __m512 a = _mm512_set1_ps(alpha);
    for (int k = 0; k < 16; k++) {
        r[k] = k < n ? _mm512_loadu_ps(X + (int64_t)k * ld) : _mm512_setzero_ps();
        if (alpha != 1.f) r[k] = _mm512_mul_ps(a, r[k]);
    }
    for (int k = 0; k < 16; k += 2) {
        t[k] = _mm512_unpacklo_ps(r[k], r[k + 1]);
        t[k + 1] = _mm512_unpackhi_ps(r[k], r[k + 1]);
    }
    for (int k = 0; k < 16; k += 4) {
        r[k] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[k]), _mm512_castps_pd(t[k + 2])));
        r[k + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[k]), _mm512_castps_pd(t[k + 2])));
        r[k + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[k + 1]), _mm512_castps_pd(t[k + 3])));
        r[k + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[k + 1]), _mm512_castps_pd(t[k + 3])));
    }
    /* now r[4g + c], 128-bit lane L = feature 4L + c of rows 4g .. 4g+3: a 4 x 4 transpose of lanes */
    for (int k = 0; k < 4; k++) {
        t[k] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0x88);
        t[k + 4] = _mm512_shuffle_f32x4(r[k], r[k + 4], 0xdd);
        t[k + 8] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0x88);
        t[k + 12] = _mm512_shuffle_f32x4(r[k + 8], r[k + 12], 0xdd);
    }
    for (int k = 0; k < 4; k++) {
        r[k] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0x88);
        r[k + 8] = _mm512_shuffle_f32x4(t[k], t[k + 8], 0xdd);
        r[k + 4] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0x88);
        r[k + 12] = _mm512_shuffle_f32x4(t[k + 4], t[k + 12], 0xdd);
    }
    for (int d = 0; d < 16; d++) _mm512_storeu_ps(out + (int64_t)d * os, r[d]);
}
#endif

#if !defined(__AVX512F__)
/* AVX2: out[d·os + k] = alpha · X[k·ld + d] for k < n, 0 for n ≤ k < 8 (d < 16): eight rows of 16
 * transposed in registers (two 8 × 8 blocks), each element the scalar product alpha · x. */
static inline void tr8x16(const float *X, int64_t ld, int n, float alpha, float *out, int64_t os)
{
    __m256 r[2][8];
    const __m256 a = _mm256_set1_ps(alpha);
    for (int k = 0; k < 8; k++)
        for (int h = 0; h < 2; h++) {
            r[h][k] = k < n ? _mm256_loadu_ps(X + (int64_t)k * ld + 8 * h) : _mm256_setzero_ps();
            if (alpha != 1.f) r[h][k] = _mm256_mul_ps(a, r[h][k]);
        }
    for (int h = 0; h < 2; h++) {
        al__tr8(r[h]);
        for (int d = 0; d < 8; d++) _mm256_storeu_ps(out + (int64_t)(8 * h + d) * os, r[h][d]);
    }
}
#endif

/* t[d·qb + i] = alpha · X[i·ld + d] for rows i < n of X, 0 for i ≥ n (a block of qb rows of 16). */
static inline void transpose_block(const float *X /* (qb, ld) */, int64_t ld, int n, int qb, float alpha, float *t /* (16, qb) */)
{
#if defined(__AVX512F__)
    if (qb == 16) { tr16x16(X, ld, n, alpha, t, 16); return; }
#else
    if (qb % 8 == 0) {   /* eight rows at a time */
        for (int g = 0; g < qb; g += 8) tr8x16(X + (int64_t)g * ld, ld, n - g, alpha, t + g, qb);
        return;
    }
#endif
    for (int d = 0; d < 16; d++)
        for (int i = 0; i < qb; i++) t[d * qb + i] = i < n ? alpha * X[i * ld + d] : 0.f;
}

/* ---------------- shared by both ISAs: a few queries, keys in the lanes ----------------
 * A partial block of nq queries (N = 49: 16 + 16 + 16 + 1) costs the lane kernels as much as a
 * full one. With nq ≤ al__full16_few_max the queries run one at a time with the roles swapped:
 * the keys in the lanes for the scores (Kᵀ and Vᵀ of the head, once per head) and the feature
 * index in the lanes for P·V and the gradient rows. Each score, exp, sum and FMA chain is the lane
 * kernels' for that query, in the same order (test_full_d16_twin checks both paths against the
 * per-query maths bit for bit); the padding lanes the block would have carried add exact zeros
 * there, so skipping them changes nothing. */

#if defined(__AVX512F__)
static inline al_vf few_exp2(al_vf x) { return al__exp2_v16(x); }
#else
static inline al_vf few_exp2(al_vf x) { return al__exp2_v8(x); }
#endif
static inline float few_exp2_1(float x)   /* one lane of the vector 2^x (the same bits) */
{
    float t[AL_VL];
    al_v_store(t, few_exp2(al_v_set1(x)));
    return t[0];
}

/* xt[d·np + j] = X[j·16 + d] for j < N, 0 for N ≤ j < np (np: N rounded up to 16). */
#if defined(__AVX512F__)
static inline void few_transpose(const float *X /* (N,16) */, int N, int np, float *xt /* (16, np) */)
{
    for (int j0 = 0; j0 < np; j0 += 16) tr16x16(X + (size_t)j0 * 16, 16, N - j0, 1.f, xt + j0, np);
}
#else
static inline void few_transpose(const float *X /* (N,16) */, int N, int np, float *xt /* (16, np) */)
{
    for (int d = 0; d < 16; d++) {
        float *o = xt + (size_t)d * np;
        for (int j = 0; j < N; j++) o[j] = X[(size_t)j * 16 + d];
        for (int j = N; j < np; j++) o[j] = 0.f;
    }
}
#endif
static inline int few_np(int N) { return (N + 15) / 16 * 16; }

/* s[t] = Σ_d xt[d·np + j0 + t] · c[d] for the keys of a tile (t < nk rounded up to a vector), one
 * chain d = 0..15 per key, as dots_t: the product first, then FMAs. */
static inline void few_dots(const float *xt, int np, int j0, int nk, const float *c /* (16) */, float *s)
{
    for (int t = 0; t < nk; t += AL_VL) {
        al_vf a = al_v_mul(al_v_load(xt + j0 + t), al_v_set1(c[0]));
        for (int d = 1; d < 16; d++) a = al_v_fma(al_v_load(xt + (size_t)d * np + j0 + t), al_v_set1(c[d]), a);
        al_v_store(s + t, a);
    }
}

/* The few-query path runs its NQ ≤ FEW_MAX queries side by side: their chains are independent, so
 * they overlap instead of waiting on one FMA's latency each (a query's P·V and dQ chains are as
 * long as the tile). NQ is a constant in each instance (few_forward_n / few_backward_n). */
#define FEW_MAX 4
#define FEW_C (16 / AL_VL)   /* vectors per 16-float row */

/* o_a (16 floats) = Σ_t w_a[t] · X[t·16 ..] + o_a in key order, a < NQ: each query's P·V or dQ chain
 * over a tile, the NQ chains interleaved. */
static inline __attribute__((always_inline)) void few_chain(int NQ, const float *w /* (NQ, F16_BK) */, const float *X /* (nk, 16) */,
                                                           int nk, float *o /* (NQ, 16) */)
{
    al_vf acc[FEW_MAX][FEW_C];
    for (int a = 0; a < NQ; a++)
        for (int c = 0; c < FEW_C; c++) acc[a][c] = al_v_load(o + a * 16 + c * AL_VL);
    for (int t = 0; t < nk; t++)
        for (int c = 0; c < FEW_C; c++) {
            const al_vf x = al_v_load(X + t * 16 + c * AL_VL);
            for (int a = 0; a < NQ; a++) acc[a][c] = al_v_fma(al_v_set1(w[a * F16_BK + t]), x, acc[a][c]);
        }
    for (int a = 0; a < NQ; a++)
        for (int c = 0; c < FEW_C; c++) al_v_store(o + a * 16 + c * AL_VL, acc[a][c]);
}

#if defined(__AVX512F__)
/* 2^x: al__exp2_v16 of core/exp_impl.h (the scores here are in log2 units: log2(e) is folded into
 * the query scale). */
/* s[k] = Σ_d X[(j+k)·16 + d] · T[d] for k < 8: eight keys (rows of X) against a block held
 * transposed in T, one FMA chain per key. */
static inline void rows8_dot_t(const float *X /* (8, 16) */, const __m512 T[16], __m512 s[8])
{
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++) s[k] = _mm512_mul_ps(_mm512_set1_ps(X[k * 16]), T[0]);
#pragma GCC unroll 15
    for (int d = 1; d < 16; d++)
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) s[k] = _mm512_fmadd_ps(_mm512_set1_ps(X[k * 16 + d]), T[d], s[k]);
}

/* One key row against T (the remainder of a tile that is not a multiple of 8 keys). */
static inline __m512 row_dot_t(const float *x /* (16) */, const __m512 T[16])
{
    __m512 s = _mm512_mul_ps(_mm512_set1_ps(x[0]), T[0]);
#pragma GCC unroll 15
    for (int d = 1; d < 16; d++) s = _mm512_fmadd_ps(_mm512_set1_ps(x[d]), T[d], s);
    return s;
}

/* out[j] = Σ_d X[j·16 + d] · T[d] for the n key rows of a tile: 16 lanes of scores per key.
 * With mx (inlined away when NULL), also *mx = the lane-wise max of *mx and the scores. */
static inline void dots_t(const float *X /* (n, 16) */, const __m512 T[16], int n, float *out /* (n, 16) */, __m512 *mx /* (16) or NULL */)
{
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m512 s[8];
        rows8_dot_t(X + j * 16, T, s);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            _mm512_storeu_ps(out + (j + k) * 16, s[k]);
            if (mx) *mx = _mm512_max_ps(*mx, s[k]);
        }
    }
    for (; j < n; j++) {
        __m512 s = row_dot_t(X + j * 16, T);
        _mm512_storeu_ps(out + j * 16, s);
        if (mx) *mx = _mm512_max_ps(*mx, s);
    }
}
#endif

/* al__full16_scratch: floats of scratch per thread. */
static inline size_t f16_scratch(const al_attn_cfg *g, int backward)
{
    const size_t kv = 2 * (size_t)g->N * 16;   /* K and V of one head gathered from strided rows */
    const size_t few = 2 * 16 * (size_t)few_np(g->N) + FEW_MAX * F16_BK;   /* Kᵀ, Vᵀ and score strips of the few-query path */
    if (!backward) return (size_t)F16_BK * F16_FQB + 2 * 16 * F16_FQB + kv + few;   /* a score strip, two transposed blocks */
    size_t npad = (size_t)(g->N + F16_QB - 1) / F16_QB * F16_QB;
    return 3 * npad * 16 + 2 * npad + 2 * (size_t)F16_BK * F16_QB + 2 * (size_t)F16_BK * 16 + kv + few;
}

/* K and V of head bh as (N,16) rows: in place when the layout's rows are 16 floats apart, else
 * copied into kv (2·N·16) once per head, so the key loops stream contiguous rows either way. */
static inline void head_kv(const float *k, const float *v, const al_attn_lay *li, int64_t at, int N, float *kv,
                           const float **K, const float **V)
{
    if (li->sr == 16) { *K = k + at; *V = v + at; return; }
    for (int i = 0; i < N; i++) {
        memcpy(kv + (size_t)i * 16, k + at + (int64_t)i * li->sr, 16 * sizeof(float));
        memcpy(kv + (size_t)(N + i) * 16, v + at + (int64_t)i * li->sr, 16 * sizeof(float));
    }
    *K = kv; *V = kv + (size_t)N * 16;
}
#endif
#endif
