/* rows_impl.h — the softmax row pieces shared by the full (full.c) and sparse (sparse.c) kernels:
 * e^(x − m) over a row, and the row max / sum in sixteen fixed lanes (internal header). */
#ifndef ATTNLAB_ATTENTION_ROWS_IMPL_H
#define ATTNLAB_ATTENTION_ROWS_IMPL_H
#include "core/exp_impl.h"
#include "core/simd_impl.h"
#include <math.h>

/* y[j] = e^(x[j] − m) for j < n (y may be x). SIMD when available, the same formula scalar.
 * x, y: (n) */
static inline void exp_shift(const float *x /* (n) */, float *y /* (n) */, int n, float m)
{
    int j = 0;
#if !defined(AL_SIMD_SCALAR)
    const al_vf mv = al_v_set1(m);
    for (; j + AL_VL <= n; j += AL_VL) al_v_store(y + j, al__exp_cephes_v(al_v_sub(al_v_load(x + j), mv)));
#if defined(AL_SIMD_AVX512)
    if (j < n) {
        const al_vm msk = al_v_mask(n - j);
        al_v_storem(msk, y + j, al__exp_cephes_v(al_v_sub(al_v_loadm(msk, x + j), mv)));
        return;
    }
#endif
#endif
    for (; j < n; j++) y[j] = al__exp_cephes(x[j] - m);
}

/* Reductions over a row in 16 fixed lanes, so they vectorise and their order is fixed. */
static inline float row_max(const float *s /* (n) */, int n)
{
#if defined(AL_SIMD_AVX512)
    al_vf mv = al_v_set1(-INFINITY);
    int j = 0;
    for (; j + 16 <= n; j += 16) mv = al_v_max(mv, al_v_load(s + j));
    if (j < n) mv = al_v_max_m(al_v_mask(n - j), mv, al_v_loadm(al_v_mask(n - j), s + j));
    return al_v_reduce_max(mv);
#else
    float m[16];
    for (int t = 0; t < 16; t++) m[t] = -INFINITY;
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int t = 0; t < 16; t++) m[t] = s[j + t] > m[t] ? s[j + t] : m[t];
    for (int t = 0; j < n; j++, t++) m[t] = s[j] > m[t] ? s[j] : m[t];
    float r = m[0];
    for (int t = 1; t < 16; t++) r = m[t] > r ? m[t] : r;
    return r;
#endif
}
static inline float row_sum(const float *s /* (n) */, int n)
{
    float m[16] = {0};
    int j = 0;
    for (; j + 16 <= n; j += 16)
        for (int t = 0; t < 16; t++) m[t] += s[j + t];
    for (int t = 0; j < n; j++, t++) m[t] += s[j];
    float r = 0.f;
    for (int t = 0; t < 16; t++) r += m[t];
    return r;
}

/* exp_shift(x, x, n, m) followed by the row sum, in one sweep (AVX-512: the sum in 16 lanes,
 * then a fixed reduction tree, so not bitwise row_sum's sequential lane order). */
static inline float exp_shift_sum(float *x /* (n) */, int n, float m)
{
#if defined(AL_SIMD_AVX512)
    const al_vf mv = al_v_set1(m);
    al_vf acc = al_v_zero();
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        al_vf y = al__exp_cephes_v(al_v_sub(al_v_load(x + j), mv));
        al_v_store(x + j, y);
        acc = al_v_add(acc, y);
    }
    if (j < n) {
        const al_vm msk = al_v_mask(n - j);
        al_vf y = al_v_maskz(msk, al__exp_cephes_v(al_v_sub(al_v_loadm(msk, x + j), mv)));
        al_v_storem(msk, x + j, y);
        acc = al_v_add(acc, y);
    }
    return al_v_reduce_add(acc);   /* a fixed tree: deterministic, not row_sum's order */
#else
    exp_shift(x, x, n, m);
    return row_sum(x, n);
#endif
}

static inline float leaky(float u, float slope) { return u > 0.f ? u : slope * u; }
#endif
