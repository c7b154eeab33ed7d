/* simd_impl.h — the one lane layer of attnlab's hot kernels (internal header).
 *
 * Two families, each with an AVX-512, an AVX2+FMA and a scalar version chosen at compile time:
 *
 *   al_vf   the machine's natural vector: AL_VL = 16 (AVX-512), 8 (AVX2+FMA) or 1 (scalar, a plain
 *           float). load/store/set1/zero/add/sub/mul/max/fma, masked tails (al_vm = al_v_mask(n):
 *           the first n lanes; masked-off lanes load as 0 and are not stored), and fixed-order
 *           horizontal reductions. Used by the GEMM micro-kernels, the sparse attention rows and
 *           the convolution row copies.
 *   al_v16  exactly sixteen lanes whatever the machine (kernels whose lanes ARE sixteen things, e.g.
 *           the heads of the GAT kernel): an __m512 on AVX-512, two __m256 on AVX2+FMA, else a struct
 *           of 16 floats operated on lane by lane (al_m16 is then the count of live lanes). The lane-by-lane versions do
 *           the same IEEE operation per lane as the vector ones (AL_FMA when the scalar code has a
 *           hardware FMA), so every build gives the same bits for the same lane.
 *
 * AL_FMA(a, b, c) is the scalar multiply-add of the kernels: fmaf (one rounding) when the target has
 * FMA, else a·b + c. The width-1 al_v_fma is a·b + c on every target: it is only compiled where
 * there is neither AVX-512 nor AVX2+FMA, and the scalar GEMM kernel has always multiplied, then
 * added there.
 *
 * Raw intrinsics stay in a kernel only for what this layer does not express (transposes, gathers,
 * permutes, 64-bit integer lanes, vscalefps tricks); those kernels say so.
 */
#ifndef ATTNLAB_SIMD_IMPL_H
#define ATTNLAB_SIMD_IMPL_H
#include <math.h>
#include <stdint.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#ifdef __FMA__
#define AL_FMA(a, b, c) fmaf(a, b, c)
#else
#define AL_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* ---------------- al_vf: the natural vector ---------------- */
#if defined(__AVX512F__)
#define AL_SIMD_AVX512 1
#define AL_VL 16
#define AL_SIMD_ISA "avx512"
typedef __m512 al_vf;
typedef __mmask16 al_vm;
static inline al_vf al_v_load(const float *p) { return _mm512_loadu_ps(p); }
static inline void al_v_store(float *p, al_vf x) { _mm512_storeu_ps(p, x); }
static inline al_vf al_v_set1(float a) { return _mm512_set1_ps(a); }
static inline al_vf al_v_zero(void) { return _mm512_setzero_ps(); }
static inline al_vf al_v_add(al_vf a, al_vf b) { return _mm512_add_ps(a, b); }
static inline al_vf al_v_sub(al_vf a, al_vf b) { return _mm512_sub_ps(a, b); }
static inline al_vf al_v_mul(al_vf a, al_vf b) { return _mm512_mul_ps(a, b); }
static inline al_vf al_v_max(al_vf a, al_vf b) { return _mm512_max_ps(a, b); }
static inline al_vf al_v_fma(al_vf a, al_vf b, al_vf c) { return _mm512_fmadd_ps(a, b, c); }   /* a·b + c, one rounding */
static inline al_vm al_v_mask(int n) { return (al_vm)(n >= 16 ? 0xffffu : (1u << n) - 1); }   /* 0 ≤ n */
static inline al_vf al_v_loadm(al_vm m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
static inline void al_v_storem(al_vm m, float *p, al_vf x) { _mm512_mask_storeu_ps(p, m, x); }
static inline al_vf al_v_maskz(al_vm m, al_vf x) { return _mm512_maskz_mov_ps(m, x); }   /* dead lanes 0 */
static inline al_vf al_v_max_m(al_vm m, al_vf a, al_vf b) { return _mm512_mask_max_ps(a, m, a, b); }   /* dead: a */
static inline float al_v_reduce_add(al_vf x) { return _mm512_reduce_add_ps(x); }   /* a fixed tree */
static inline float al_v_reduce_max(al_vf x) { return _mm512_reduce_max_ps(x); }
#elif defined(__AVX2__) && defined(__FMA__)
#define AL_SIMD_AVX2 1
#define AL_VL 8
#define AL_SIMD_ISA "avx2"
typedef __m256 al_vf;
typedef __m256i al_vm;   /* lane l live iff its 32 bits are all ones */
static inline al_vf al_v_load(const float *p) { return _mm256_loadu_ps(p); }
static inline void al_v_store(float *p, al_vf x) { _mm256_storeu_ps(p, x); }
static inline al_vf al_v_set1(float a) { return _mm256_set1_ps(a); }
static inline al_vf al_v_zero(void) { return _mm256_setzero_ps(); }
static inline al_vf al_v_add(al_vf a, al_vf b) { return _mm256_add_ps(a, b); }
static inline al_vf al_v_sub(al_vf a, al_vf b) { return _mm256_sub_ps(a, b); }
static inline al_vf al_v_mul(al_vf a, al_vf b) { return _mm256_mul_ps(a, b); }
static inline al_vf al_v_max(al_vf a, al_vf b) { return _mm256_max_ps(a, b); }
static inline al_vf al_v_fma(al_vf a, al_vf b, al_vf c) { return _mm256_fmadd_ps(a, b, c); }
static inline al_vm al_v_mask(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline al_vm al_v_mask_bits(unsigned bits)   /* lane l live iff bit l of bits is set */
{
    const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    return _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), bit), bit);
}
static inline al_vf al_v_loadm(al_vm m, const float *p) { return _mm256_maskload_ps(p, m); }
static inline void al_v_storem(al_vm m, float *p, al_vf x) { _mm256_maskstore_ps(p, m, x); }
static inline al_vf al_v_maskz(al_vm m, al_vf x) { return _mm256_and_ps(_mm256_castsi256_ps(m), x); }
static inline al_vf al_v_max_m(al_vm m, al_vf a, al_vf b) { return _mm256_blendv_ps(a, _mm256_max_ps(a, b), _mm256_castsi256_ps(m)); }
/* (lanes 0..3 + 4..7), then pairs, then the last two: a fixed tree */
static inline float al_v_reduce_add(al_vf x)
{
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}
static inline float al_v_reduce_max(al_vf x)
{
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps(x, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
    return _mm_cvtss_f32(h);
}
#else
#define AL_SIMD_SCALAR 1
#define AL_VL 1
#define AL_SIMD_ISA "scalar"
typedef float al_vf;
typedef int al_vm;   /* 1: the one lane is live */
static inline al_vf al_v_load(const float *p) { return *p; }
static inline void al_v_store(float *p, al_vf x) { *p = x; }
static inline al_vf al_v_set1(float a) { return a; }
static inline al_vf al_v_zero(void) { return 0.0f; }
static inline al_vf al_v_add(al_vf a, al_vf b) { return a + b; }
static inline al_vf al_v_sub(al_vf a, al_vf b) { return a - b; }
static inline al_vf al_v_mul(al_vf a, al_vf b) { return a * b; }
static inline al_vf al_v_max(al_vf a, al_vf b) { return b > a ? b : a; }
static inline al_vf al_v_fma(al_vf a, al_vf b, al_vf c) { return a * b + c; }   /* see the header comment */
static inline al_vm al_v_mask(int n) { return n > 0; }
static inline al_vf al_v_loadm(al_vm m, const float *p) { return m ? *p : 0.0f; }
static inline void al_v_storem(al_vm m, float *p, al_vf x) { if (m) *p = x; }
static inline al_vf al_v_maskz(al_vm m, al_vf x) { return m ? x : 0.0f; }
static inline al_vf al_v_max_m(al_vm m, al_vf a, al_vf b) { return m ? al_v_max(a, b) : a; }
static inline float al_v_reduce_add(al_vf x) { return x; }
static inline float al_v_reduce_max(al_vf x) { return x; }
#endif

/* ---------------- al_v16: sixteen lanes ---------------- */
#if defined(__AVX512F__)
typedef __m512 al_v16;
typedef __mmask16 al_m16;
static inline al_m16 al_v16_mask(int n) { return n <= 0 ? 0 : al_v_mask(n); }   /* n < 0: no lane */
static inline al_v16 al_v16_zero(void) { return _mm512_setzero_ps(); }
static inline al_v16 al_v16_set1(float a) { return _mm512_set1_ps(a); }
static inline al_v16 al_v16_load(al_m16 m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
static inline void al_v16_store(al_m16 m, float *p, al_v16 x) { _mm512_mask_storeu_ps(p, m, x); }
static inline al_v16 al_v16_ldl(const float *p) { return _mm512_load_ps(p); }   /* a whole 64-byte line */
static inline void al_v16_stl(float *p, al_v16 x) { _mm512_store_ps(p, x); }
static inline al_v16 al_v16_add(al_v16 a, al_v16 b) { return _mm512_add_ps(a, b); }
static inline al_v16 al_v16_sub(al_v16 a, al_v16 b) { return _mm512_sub_ps(a, b); }
static inline al_v16 al_v16_mul(al_v16 a, al_v16 b) { return _mm512_mul_ps(a, b); }
static inline al_v16 al_v16_fma(al_v16 a, al_v16 b, al_v16 c) { return _mm512_fmadd_ps(a, b, c); }
/* b > a ? b : a, as the scalar version (vmaxps returns its second operand unless the first is greater) */
static inline al_v16 al_v16_max(al_v16 a, al_v16 b) { return _mm512_max_ps(b, a); }
/* u > 0 ? x : slope·x per lane (the LeakyReLU factor of u applied to x) */
static inline al_v16 al_v16_pos_or(al_v16 u, al_v16 x, float slope)
{
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_NGT_UQ), x, _mm512_set1_ps(slope));
}
/* 1/s where s > 0, else 0 */
static inline al_v16 al_v16_recip(al_v16 s)
{
    return _mm512_maskz_div_ps(_mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.f), s);
}
/* bit l of bits ? x·ik : 0 per lane */
static inline al_v16 al_v16_keep(uint32_t bits, al_v16 x, float ik)
{
    return _mm512_maskz_mul_ps((__mmask16)bits, x, _mm512_set1_ps(ik));
}
#elif defined(AL_SIMD_AVX2)
/* Two __m256 halves. al_m16 is the count of live lanes, as in the scalar version: a load or store
 * takes a plain 8-float move for a whole half and vmaskmov only for a partial one (whose store is
 * microcoded on AMD), and skips a dead half. Every operation is the scalar version's per lane (max
 * and the selects are written to return what its ternaries return), so the bits are the same. */
typedef struct { __m256 lo, hi; } al_v16;
typedef int al_m16;
static const int32_t al__m8tab[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
static inline __m256i al__m8(int k) { return _mm256_loadu_si256((const __m256i *)(al__m8tab + 8 - k)); }   /* first k lanes, 0 ≤ k ≤ 8 */
static inline al_m16 al_v16_mask(int n) { return n < 0 ? 0 : n < 16 ? n : 16; }
static inline al_v16 al_v16_zero(void) { return (al_v16){_mm256_setzero_ps(), _mm256_setzero_ps()}; }
static inline al_v16 al_v16_set1(float a) { return (al_v16){_mm256_set1_ps(a), _mm256_set1_ps(a)}; }
static inline __m256 al__ld8(int k, const float *p)
{
    return k >= 8 ? _mm256_loadu_ps(p) : k <= 0 ? _mm256_setzero_ps() : _mm256_maskload_ps(p, al__m8(k));
}
static inline void al__st8(int k, float *p, __m256 x)
{
    if (k >= 8) _mm256_storeu_ps(p, x);
    else if (k > 0) _mm256_maskstore_ps(p, al__m8(k), x);
}
static inline al_v16 al_v16_load(al_m16 m, const float *p) { return (al_v16){al__ld8(m, p), al__ld8(m - 8, p + 8)}; }
static inline void al_v16_store(al_m16 m, float *p, al_v16 x) { al__st8(m, p, x.lo); al__st8(m - 8, p + 8, x.hi); }
static inline al_v16 al_v16_ldl(const float *p) { return (al_v16){_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
static inline void al_v16_stl(float *p, al_v16 x) { _mm256_storeu_ps(p, x.lo); _mm256_storeu_ps(p + 8, x.hi); }
static inline al_v16 al_v16_add(al_v16 a, al_v16 b) { return (al_v16){_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
static inline al_v16 al_v16_sub(al_v16 a, al_v16 b) { return (al_v16){_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
static inline al_v16 al_v16_mul(al_v16 a, al_v16 b) { return (al_v16){_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
static inline al_v16 al_v16_fma(al_v16 a, al_v16 b, al_v16 c)
{
    return (al_v16){_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
/* b > a ? b : a (vmaxps returns its second operand unless the first is greater) */
static inline al_v16 al_v16_max(al_v16 a, al_v16 b) { return (al_v16){_mm256_max_ps(b.lo, a.lo), _mm256_max_ps(b.hi, a.hi)}; }
static inline __m256 al__pos_or8(__m256 u, __m256 x, __m256 s)
{
    return _mm256_blendv_ps(_mm256_mul_ps(s, x), x, _mm256_cmp_ps(u, _mm256_setzero_ps(), _CMP_GT_OQ));
}
static inline al_v16 al_v16_pos_or(al_v16 u, al_v16 x, float slope)
{
    const __m256 s = _mm256_set1_ps(slope);
    return (al_v16){al__pos_or8(u.lo, x.lo, s), al__pos_or8(u.hi, x.hi, s)};
}
static inline __m256 al__recip8(__m256 s)
{
    return _mm256_and_ps(_mm256_cmp_ps(s, _mm256_setzero_ps(), _CMP_GT_OQ), _mm256_div_ps(_mm256_set1_ps(1.f), s));
}
static inline al_v16 al_v16_recip(al_v16 s) { return (al_v16){al__recip8(s.lo), al__recip8(s.hi)}; }
static inline __m256 al__keep8(uint32_t bits, __m256 x, __m256 ik)
{
    const __m256i b = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i on = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)(bits & 0xffu)), b), b);
    return _mm256_and_ps(_mm256_castsi256_ps(on), _mm256_mul_ps(x, ik));
}
static inline al_v16 al_v16_keep(uint32_t bits, al_v16 x, float ik)
{
    const __m256 k = _mm256_set1_ps(ik);
    return (al_v16){al__keep8(bits, x.lo, k), al__keep8(bits >> 8, x.hi, k)};
}
#else
typedef struct { float v[16]; } al_v16;
typedef int al_m16;
static inline al_m16 al_v16_mask(int n) { return n < 0 ? 0 : n < 16 ? n : 16; }
static inline al_v16 al_v16_zero(void) { al_v16 r; for (int l = 0; l < 16; l++) r.v[l] = 0.f; return r; }
static inline al_v16 al_v16_set1(float a) { al_v16 r; for (int l = 0; l < 16; l++) r.v[l] = a; return r; }
static inline al_v16 al_v16_load(al_m16 m, const float *p)
{
    al_v16 r;
    for (int l = 0; l < 16; l++) r.v[l] = l < m ? p[l] : 0.f;
    return r;
}
static inline void al_v16_store(al_m16 m, float *p, al_v16 x) { for (int l = 0; l < m; l++) p[l] = x.v[l]; }
static inline al_v16 al_v16_ldl(const float *p) { al_v16 r; for (int l = 0; l < 16; l++) r.v[l] = p[l]; return r; }
static inline void al_v16_stl(float *p, al_v16 x) { for (int l = 0; l < 16; l++) p[l] = x.v[l]; }
static inline al_v16 al_v16_add(al_v16 a, al_v16 b) { for (int l = 0; l < 16; l++) a.v[l] += b.v[l]; return a; }
static inline al_v16 al_v16_sub(al_v16 a, al_v16 b) { for (int l = 0; l < 16; l++) a.v[l] -= b.v[l]; return a; }
static inline al_v16 al_v16_mul(al_v16 a, al_v16 b) { for (int l = 0; l < 16; l++) a.v[l] *= b.v[l]; return a; }
static inline al_v16 al_v16_fma(al_v16 a, al_v16 b, al_v16 c)
{
    for (int l = 0; l < 16; l++) c.v[l] = AL_FMA(a.v[l], b.v[l], c.v[l]);
    return c;
}
static inline al_v16 al_v16_max(al_v16 a, al_v16 b)
{
    for (int l = 0; l < 16; l++) a.v[l] = b.v[l] > a.v[l] ? b.v[l] : a.v[l];
    return a;
}
static inline al_v16 al_v16_pos_or(al_v16 u, al_v16 x, float slope)
{
    for (int l = 0; l < 16; l++) x.v[l] = u.v[l] > 0.f ? x.v[l] : slope * x.v[l];
    return x;
}
static inline al_v16 al_v16_recip(al_v16 s)
{
    for (int l = 0; l < 16; l++) s.v[l] = s.v[l] > 0.f ? 1.f / s.v[l] : 0.f;
    return s;
}
static inline al_v16 al_v16_keep(uint32_t bits, al_v16 x, float ik)
{
    for (int l = 0; l < 16; l++) x.v[l] = (bits >> l & 1u) ? x.v[l] * ik : 0.f;
    return x;
}
#endif
#endif
