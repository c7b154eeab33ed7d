/* exp_impl.h — the one home of attnlab's exponentials (internal header).
 *
 * Four variants with different arithmetic, kept apart on purpose: each one's bits are part of some
 * output (results files, checkpoints, tests), and unifying the formulas would change them.
 *
 *   al__expf / al__expm1_neg   magic-number rounding (n from the bits of t + 1.5·2²³), no FMA at all,
 *                              so its bits are the same on every ISA. Softmax/layernorm kernels, GELU,
 *                              ELU and the fused graph activation (via core/fastmath_impl.h).
 *   al__exp_cephes (scalar)    Cephes expf: n = floor(x·log2e + ½) with FMA range reduction, a
 *   al__exp_cephes_v (al_vf)   degree-7 polynomial, ·2ⁿ. The attention kernels' softmax. The scalar
 *   al__exp_cephes_v16(al_v16) and vector twins give identical bits lane for lane (same FMAs, the same
 *                              exact ·2ⁿ: ldexpf = vscalefps = a multiply by an exact power of two);
 *                              the scalar twin uses AL_FMA, so without hardware FMA it rounds twice.
 *   al__exp2_v16 (AVX-512)     2ˣ, Cephes exp2f's degree-5 polynomial, round-to-nearest n, clamped
 *   al__exp2f (scalar twin)    at −125 (never exactly 0). The d = 16 attention kernel, whose scores
 *                              are in log2 units: log2(e) is folded into the query scale, which saves
 *                              the multiply per score and is why its rounding differs from Cephes'.
 *   al__exp2_v8 (AVX2 twin)    The same lane for lane, with 2ⁿ built in the exponent field (so x is
 *                              also clamped at 127; the kernel's arguments are ≤ 0).
 *   al__exp_libm               libm expf: the online-softmax rescale factor e^(m_old − m_new) of the
 *                              streamed full kernel (one per row per key tile, not hot); kept so its
 *                              lse and outputs keep their bits.
 */
#ifndef ATTNLAB_EXP_IMPL_H
#define ATTNLAB_EXP_IMPL_H
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/simd_impl.h"

/* ---------------- magic-number expf (no FMA, ISA-independent bits) ---------------- */

/* exp(x) for finite x, ≈1 ulp; 0 below -87 (true value < 1.7e-38), clamped above 88.
 * Range reduction x = n·ln2 + r with a two-constant (Cody–Waite) ln2, then a degree-5
 * polynomial for (e^r − 1 − r)/r² on |r| ≤ ln2/2. n is taken from the bits of
 * t + 1.5·2²³ so there is no float→int conversion (no UB for NaN, and it vectorises). */
static inline float al__expf(float x)
{
    float xc = x < -87.0f ? -87.0f : x;
    xc = xc > 88.0f ? 88.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f;    /* round(x/ln2) in the low bits */
    float n = t - 12582912.0f;
    uint32_t tb; memcpy(&tb, &t, 4);
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * (r * r) + r + 1.0f;
    uint32_t sb = (tb - 0x4B400000u + 127u) << 23;       /* 2^n */
    float s; memcpy(&s, &sb, 4);
    return x < -87.0f ? 0.0f : e * s;
}

/* eˣ − 1 for x ≤ 0 without libm (vectorises): a short Taylor series near 0, where eˣ − 1 would
 * cancel (error x⁵/120 < 1e-12 for |x| < 0.01), al__expf − 1 elsewhere (abs. error ~1e-7). */
static inline float al__expm1_neg(float x)
{
    float taylor = x * (1.0f + x * (0.5f + x * (1.0f / 6.0f + x * (1.0f / 24.0f))));
    return x > -0.01f ? taylor : al__expf(x) - 1.0f;
}

/* ---------------- Cephes expf: scalar and vector twins ---------------- */

/* e^x (Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, a degree-7 polynomial for e^r, then ·2^n).
 * Max rel. error about 2 ulp; exactly 0 for x < −87 (including −inf); x clamped at 88. */
#define AL__EXP_LOG2E 1.44269504088896341f
#define AL__EXP_C1 0.693359375f
#define AL__EXP_C2 (-2.12194440e-4f)
#define AL__EXP_P0 1.9875691500e-4f
#define AL__EXP_P1 1.3981999507e-3f
#define AL__EXP_P2 8.3334519073e-3f
#define AL__EXP_P3 4.1665795894e-2f
#define AL__EXP_P4 1.6666665459e-1f
#define AL__EXP_P5 5.0000001201e-1f
static inline float al__exp_cephes(float x)
{
    if (!(x >= -87.0f)) return 0.0f;
    float xc = x > 88.0f ? 88.0f : x;
    float n = floorf(AL_FMA(xc, AL__EXP_LOG2E, 0.5f));
    float r = AL_FMA(-n, AL__EXP_C1, xc);
    r = AL_FMA(-n, AL__EXP_C2, r);
    float p = AL__EXP_P0;
    p = AL_FMA(p, r, AL__EXP_P1); p = AL_FMA(p, r, AL__EXP_P2); p = AL_FMA(p, r, AL__EXP_P3);
    p = AL_FMA(p, r, AL__EXP_P4); p = AL_FMA(p, r, AL__EXP_P5);
    p = AL_FMA(p, r * r, r + 1.0f);
    return ldexpf(p, (int)n);
}

#if defined(AL_SIMD_AVX512)
static inline al_vf al__exp_cephes_v(al_vf x)
{
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 ok = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    __m512 xc = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(AL__EXP_LOG2E), _mm512_set1_ps(0.5f)),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AL__EXP_C1), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(AL__EXP_C2), r);
    __m512 p = _mm512_set1_ps(AL__EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP_P1)); p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP_P3)); p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(ok, _mm512_scalef_ps(p, n));
}
#elif defined(AL_SIMD_AVX2)
static inline al_vf al__exp_cephes_v(al_vf x)
{
    const __m256 lo = _mm256_set1_ps(-87.0f);
    __m256 ok = _mm256_cmp_ps(x, lo, _CMP_GE_OQ);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(AL__EXP_LOG2E), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AL__EXP_C1), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(AL__EXP_C2), r);
    __m256 p = _mm256_set1_ps(AL__EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP_P1)); p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP_P3)); p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(ok, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}
#else
static inline al_vf al__exp_cephes_v(al_vf x) { return al__exp_cephes(x); }
#endif

/* The sixteen-lane twin (al_v16). */
#if defined(__AVX512F__)
static inline al_v16 al__exp_cephes_v16(al_v16 x) { return al__exp_cephes_v(x); }
#elif defined(AL_SIMD_AVX2)
static inline al_v16 al__exp_cephes_v16(al_v16 x) { return (al_v16){al__exp_cephes_v(x.lo), al__exp_cephes_v(x.hi)}; }
#else
static inline al_v16 al__exp_cephes_v16(al_v16 x)
{
    for (int l = 0; l < 16; l++) x.v[l] = al__exp_cephes(x.v[l]);
    return x;
}
#endif

/* ---------------- exp2 of the d = 16 kernel (log2 e folded into the query scale) ---------------- */

/* 2^x: x = n + r, |r| ≤ 1/2, 2^r = 1 + r·P(r) with Cephes exp2f's degree-5 P (≈1e-7 relative), ·2^n.
 * x is clamped at −125, so very negative x and −inf give at most 2^−124.5 ≈ 3e−38 instead of 0:
 * nothing next to a softmax sum ≥ 1, and it stays a normal number. */
#define AL__EXP2_P0 1.535336188319500e-4f
#define AL__EXP2_P1 1.339887440266574e-3f
#define AL__EXP2_P2 9.618437357674640e-3f
#define AL__EXP2_P3 5.550332471162809e-2f
#define AL__EXP2_P4 2.402264791363012e-1f
#define AL__EXP2_P5 6.931472028550421e-1f
static inline float al__exp2f(float x)
{
    x = x > -125.f ? x : -125.f;
    float n = nearbyintf(x);   /* round to nearest even, as _MM_FROUND_TO_NEAREST_INT */
    float r = x - n;
    float p = AL_FMA(AL__EXP2_P0, r, AL__EXP2_P1);
    p = AL_FMA(p, r, AL__EXP2_P2); p = AL_FMA(p, r, AL__EXP2_P3);
    p = AL_FMA(p, r, AL__EXP2_P4); p = AL_FMA(p, r, AL__EXP2_P5);
    return ldexpf(AL_FMA(p, r, 1.f), (int)n);
}
#if defined(__AVX512F__)
static inline __m512 al__exp2_v16(__m512 x)
{
    x = _mm512_max_ps(x, _mm512_set1_ps(-125.f));
    __m512 n = _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(x, n);
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(AL__EXP2_P0), r, _mm512_set1_ps(AL__EXP2_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP2_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP2_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP2_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(AL__EXP2_P5));
    return _mm512_scalef_ps(_mm512_fmadd_ps(p, r, _mm512_set1_ps(1.f)), n);
}
#endif
#if defined(__AVX2__) && defined(__FMA__)
/* 2ˣ lane for lane as al__exp2_v16 (same clamp at −125 — NaN goes to it, as vmaxps — the same
 * rounding of n, the same FMAs); ·2ⁿ is a multiply by 2ⁿ built in the exponent field, which is
 * exact, as vscalefps is. x is also clamped at 127 so that 2ⁿ is a float: the arguments here are
 * a score minus its row max or its logsumexp (≤ 0 up to rounding), where the two agree bit for
 * bit. */
static inline __m256 al__exp2_v8(__m256 x)
{
    x = _mm256_max_ps(x, _mm256_set1_ps(-125.f));
    x = _mm256_min_ps(x, _mm256_set1_ps(127.f));
    __m256 n = _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(x, n);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(AL__EXP2_P0), r, _mm256_set1_ps(AL__EXP2_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP2_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP2_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP2_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(AL__EXP2_P5));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(_mm256_fmadd_ps(p, r, _mm256_set1_ps(1.f)), _mm256_castsi256_ps(e));
}
#endif

/* ---------------- libm ---------------- */

/* libm's expf, named so that its one deliberate use (see the header comment) is visible. */
static inline float al__exp_libm(float x) { return expf(x); }
#endif
