/* dropout_impl.h — the counter-based dropout hash in vector lanes (internal header): al__keep_hash
 * (core/rng_impl.h) eight 64-bit lanes at a time, for the row masks of dropout.c and the per-slot
 * head masks of the GAT kernel (gat.c). The scalar fallbacks call al_attn_keep itself, so every
 * build draws the same mask. */
#ifndef ATTNLAB_ATTENTION_DROPOUT_IMPL_H
#define ATTNLAB_ATTENTION_DROPOUT_IMPL_H
#include "attention/attention_impl.h"
#include "core/rng_impl.h"
#if defined(__AVX512F__) && defined(__AVX512DQ__)
#include <immintrin.h>
#define AL_KEEP_LANES 1   /* the 64-bit lane hash below is compiled */

/* al__mix64 in eight 64-bit lanes. */
static inline __m512i mix64x8(__m512i x)
{
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
    x = _mm512_mullo_epi64(x, _mm512_set1_epi64((long long)AL__MIX_M1));
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
    x = _mm512_mullo_epi64(x, _mm512_set1_epi64((long long)AL__MIX_M2));
    return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}
#endif


/* Counter steps between the dropout hashes of consecutive heads of one slot (l·slots·golden). */
typedef struct gat_steps {
#if defined(AL_KEEP_LANES)
    __m512i lo, hi;   /* lanes l = 0..7 and 8..15 */
#else
    int unused;
#endif
} gat_steps;

static inline gat_steps gat_keep_steps(const al_attn_cfg *g)
{
    gat_steps st;
#if defined(AL_KEEP_LANES)
    const __m512i step = _mm512_set1_epi64((long long)((uint64_t)g->slots * AL__GOLDEN64));
    st.lo = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), step);
    st.hi = _mm512_add_epi64(st.lo, _mm512_slli_epi64(step, 3));
#else
    (void)g; st.unused = 0;
#endif
    return st;
}

/* Bit l = al_attn_keep(g, bh0 + l, s) for l < hc ≤ 16: the mask of hc heads of one slot. */
static inline uint32_t gat_keep_bits(const al_attn_cfg *g, const gat_steps *st, int64_t bh0, int64_t s, int hc)
{
#if defined(AL_KEEP_LANES)
    const __m512i x0 = _mm512_set1_epi64((long long)(g->seed + (uint64_t)(bh0 * g->slots + s) * AL__GOLDEN64));
    const __m512i th = _mm512_set1_epi64((long long)g->thresh);
    uint32_t m = _mm512_cmp_epu64_mask(_mm512_srli_epi64(mix64x8(_mm512_add_epi64(x0, st->lo)), 32), th, _MM_CMPINT_NLT);
    if (hc > 8)
        m |= (uint32_t)_mm512_cmp_epu64_mask(_mm512_srli_epi64(mix64x8(_mm512_add_epi64(x0, st->hi)), 32), th,
                                             _MM_CMPINT_NLT) << 8;
    return m & (uint32_t)((1u << hc) - 1);
#else
    (void)st;
    uint32_t m = 0;
    for (int l = 0; l < hc; l++) m |= (uint32_t)al_attn_keep(g, bh0 + l, s) << l;
    return m;
#endif
}

/* bits[t] = gat_keep_bits(g, st, bh0, s, hc) for t < n, s = slot[t] (slot given) or s0 + t. One head
 * (hc = 1) hashes eight slots per lane vector instead of one slot in one lane of eight. */
static inline void gat_keep_run(const al_attn_cfg *g, const gat_steps *st, int64_t bh0, int hc, const int64_t *slot,
                                int64_t s0, int64_t n, uint32_t *bits)
{
#if defined(AL_KEEP_LANES)
    if (hc == 1) {
        const __m512i th = _mm512_set1_epi64((long long)g->thresh), gold = _mm512_set1_epi64((long long)AL__GOLDEN64);
        const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
        const uint64_t base = g->seed + (uint64_t)(bh0 * g->slots) * AL__GOLDEN64;
        for (int64_t t = 0; t < n; t += 8) {
            const int k = n - t < 8 ? (int)(n - t) : 8;
            const __m512i idx = slot ? _mm512_maskz_loadu_epi64((__mmask8)((1u << k) - 1), slot + t)
                                     : _mm512_add_epi64(_mm512_set1_epi64((long long)(s0 + t)), lane);
            const __m512i x = _mm512_add_epi64(_mm512_set1_epi64((long long)base), _mm512_mullo_epi64(idx, gold));
            const uint32_t m = _mm512_cmp_epu64_mask(_mm512_srli_epi64(mix64x8(x), 32), th, _MM_CMPINT_NLT);
            for (int l = 0; l < k; l++) bits[t + l] = m >> l & 1u;
        }
        return;
    }
#endif
    for (int64_t t = 0; t < n; t++) bits[t] = gat_keep_bits(g, st, bh0, slot ? slot[t] : s0 + t, hc);
}
#endif
