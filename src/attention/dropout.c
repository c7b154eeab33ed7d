/* dropout.c — attention dropout, vectorised: the keep mask sixteen slots at a time from the
 * counter-based hash (al_attn_keep / al__keep_hash of core/rng_impl.h), applied to rows of weights
 * (full kernel) or drawn once as bytes per slot (sparse kernels). Any pass can regenerate any entry in
 * any order, so no mask is stored for the full kernel. */
#include "attention/attention_impl.h"
#include "attention/dropout_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"

/* Dropout mask, sixteen entries at a time: bit t = al_attn_keep(g, bh, slot0 + t), t < 16.
 * The same counter-based hash (splitmix64 of seed + index·golden), in 64-bit lanes: lane t
 * starts from x0 + t·golden, so only the two mixing multiplies are vector multiplies. */
static inline uint32_t keep16(const al_attn_cfg *g, int64_t bh, int64_t slot0)
{
#if defined(AL_KEEP_LANES)
    uint64_t x0 = g->seed + (uint64_t)(bh * g->slots + slot0) * AL__GOLDEN64;
    const __m512i lane = _mm512_set_epi64((long long)(7 * AL__GOLDEN64), (long long)(6 * AL__GOLDEN64),
                                          (long long)(5 * AL__GOLDEN64), (long long)(4 * AL__GOLDEN64),
                                          (long long)(3 * AL__GOLDEN64), (long long)(2 * AL__GOLDEN64),
                                          (long long)AL__GOLDEN64, 0);
    __m512i a = _mm512_add_epi64(_mm512_set1_epi64((long long)x0), lane);
    __m512i b = _mm512_add_epi64(a, _mm512_set1_epi64((long long)(8 * AL__GOLDEN64)));
    const __m512i th = _mm512_set1_epi64((long long)g->thresh);
    __mmask8 ka = _mm512_cmp_epu64_mask(_mm512_srli_epi64(mix64x8(a), 32), th, _MM_CMPINT_NLT);
    __mmask8 kb = _mm512_cmp_epu64_mask(_mm512_srli_epi64(mix64x8(b), 32), th, _MM_CMPINT_NLT);
    return (uint32_t)ka | (uint32_t)kb << 8;
#else
    uint32_t m = 0;
    for (int t = 0; t < 16; t++) m |= (uint32_t)al_attn_keep(g, bh, slot0 + t) << t;
    return m;
#endif
}

/* y[t] = keep(slot0 + t) ? x[t] / (1 − p) : 0 for t < n (y may be x). */
void al__attn_drop_mul(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x /* (n) */,
                       float *y /* (n) */, int n)
{
    for (int t0 = 0; t0 < n; t0 += 16) {
        uint32_t bits = keep16(g, bh, slot0 + t0);
        const al_m16 len = al_v16_mask(n - t0);
        al_v16_store(len, y + t0, al_v16_keep(bits, al_v16_load(len, x + t0), g->inv_keep));
    }
}

/* drop_mul on two rows with the same mask (one hash per entry): y1 from x1 and y2 from x2. */
void al__attn_drop_mul2(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x1 /* (n) */,
                        float *y1 /* (n) */, const float *x2 /* (n) */, float *y2 /* (n) */, int n)
{
    for (int t0 = 0; t0 < n; t0 += 16) {
        uint32_t bits = keep16(g, bh, slot0 + t0);
        const al_m16 len = al_v16_mask(n - t0);
        const al_v16 v1 = al_v16_load(len, x1 + t0), v2 = al_v16_load(len, x2 + t0);
        al_v16_store(len, y1 + t0, al_v16_keep(bits, v1, g->inv_keep));
        al_v16_store(len, y2 + t0, al_v16_keep(bits, v2, g->inv_keep));
    }
}

/* keepb[bh·slots + s] = keep(bh, s) as bytes 0/1 for every (b, h) and slot: drawn once per
 * forward, read by the forward and both backward passes of the sparse kernels. */
void al__attn_keep_bytes(const al_attn_cfg *g, uint8_t *keepb /* (B,H,slots) */)
{
    const int64_t nbh = (int64_t)g->B * g->H, per = (g->slots + 15) / 16;
    AL_OMP("omp parallel for schedule(static) if (nbh * g->slots > 4 * AL_PAR_MIN)")
    for (int64_t c = 0; c < nbh * per; c++) {
        int64_t bh = c / per, s0 = (c % per) * 16;
        uint32_t bits = keep16(g, bh, s0);
        int m = g->slots - s0 < 16 ? (int)(g->slots - s0) : 16;
        uint8_t *o = keepb + bh * g->slots + s0;
        for (int t = 0; t < m; t++) o[t] = (uint8_t)(bits >> t & 1u);
    }
}
