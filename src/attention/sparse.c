/* sparse.c — the sparse attention kernels (window2d / window1d / graph): an explicit list of score
 * slots per query (the pattern's layout, pattern.c) and its transpose per key; only allowed keys are
 * visited, the normalised weights are saved per slot (O(slots) per head). Backward: a pass over
 * queries (dQ, dS) then a pass over keys through the transposed list (dK, dV). Parameter gradients
 * (a_q, a_k, rel_bias, bias) are reduced in a fixed order after the passes, so results are bitwise
 * independent of the schedule and of the thread count. */
#include "attention/attention_impl.h"
#include "attention/rows_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include <math.h>
#include <string.h>

/* a · b over D elements (SIMD lanes, then a fixed-order horizontal sum). */
static inline float dot_lanes(const float *restrict a /* (D) */, const float *restrict b /* (D) */, int D)
{
    int d = 0;
    float r = 0.f;
#if defined(__AVX512F__)
    __m512 acc = _mm512_setzero_ps();
    for (; d + 16 <= D; d += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + d), _mm512_loadu_ps(b + d), acc);
    if (d < D) {
        __mmask16 m = (__mmask16)((1u << (D - d)) - 1);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + d), _mm512_maskz_loadu_ps(m, b + d), acc);
        d = D;
    }
    r = _mm512_reduce_add_ps(acc);
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 acc = _mm256_setzero_ps();
    for (; d + 8 <= D; d += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + d), _mm256_loadu_ps(b + d), acc);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
    r = _mm_cvtss_f32(h);
#endif
    for (; d < D; d++) r = AL_FMA(a[d], b[d], r);
    return r;
}

/* o (Dv) += alpha · Σ_t w[t] · Y[idx[t]] (rows of length Dv), the sum kept in vector registers
 * 16 (or 8) columns at a time while t runs inside. */
static inline void axpy_rows(const float *restrict w /* (n) */, const int *restrict idx /* (n) */, int n, const float *restrict Y /* (rows, Dv) */,
                             int Dv, float alpha, float *restrict o /* (Dv) */)
{
    int e0 = 0;
#if defined(__AVX512F__)
    for (; e0 < Dv; e0 += 16) {
        __mmask16 m = Dv - e0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (Dv - e0)) - 1);
        __m512 a = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();   /* two chains: FMA latency */
        int t = 0;
        for (; t + 2 <= n; t += 2) {
            a = _mm512_fmadd_ps(_mm512_set1_ps(w[t]), _mm512_maskz_loadu_ps(m, Y + (int64_t)idx[t] * Dv + e0), a);
            a1 = _mm512_fmadd_ps(_mm512_set1_ps(w[t + 1]), _mm512_maskz_loadu_ps(m, Y + (int64_t)idx[t + 1] * Dv + e0), a1);
        }
        if (t < n) a = _mm512_fmadd_ps(_mm512_set1_ps(w[t]), _mm512_maskz_loadu_ps(m, Y + (int64_t)idx[t] * Dv + e0), a);
        a = _mm512_add_ps(a, a1);
        __m512 ov = _mm512_maskz_loadu_ps(m, o + e0);
        _mm512_mask_storeu_ps(o + e0, m, _mm512_fmadd_ps(_mm512_set1_ps(alpha), a, ov));
    }
#elif defined(__AVX2__) && defined(__FMA__)
    for (; e0 + 8 <= Dv; e0 += 8) {
        __m256 a = _mm256_setzero_ps();
        for (int t = 0; t < n; t++)
            a = _mm256_fmadd_ps(_mm256_set1_ps(w[t]), _mm256_loadu_ps(Y + (int64_t)idx[t] * Dv + e0), a);
        _mm256_storeu_ps(o + e0, _mm256_fmadd_ps(_mm256_set1_ps(alpha), a, _mm256_loadu_ps(o + e0)));
    }
#endif
    for (; e0 < Dv; e0++) {
        float a = 0.f;
        for (int t = 0; t < n; t++) a = AL_FMA(w[t], Y[(int64_t)idx[t] * Dv + e0], a);
        o[e0] = AL_FMA(alpha, a, o[e0]);
    }
}

#if defined(__AVX512F__)
/* r[t] = Σ lanes of v[t], t < 16: a fixed tree of in-register transposes and adds. */
static inline __m512 reduce16(const __m512 v[16])
{
    __m512 w[8], x[4];
    for (int k = 0; k < 8; k++)     /* per 128-bit lane: a0+a2, b0+b2, a1+a3, b1+b3 */
        w[k] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * k], v[2 * k + 1]), _mm512_unpackhi_ps(v[2 * k], v[2 * k + 1]));
    for (int k = 0; k < 4; k++)     /* per 128-bit lane L: the lane-L sums of v[4k..4k+3] */
        x[k] = _mm512_add_ps(_mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(w[2 * k], w[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    __m512 z01 = _mm512_add_ps(_mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1)));
    __m512 z23 = _mm512_add_ps(_mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(2, 0, 2, 0)),
                               _mm512_shuffle_f32x4(x[2], x[3], _MM_SHUFFLE(3, 1, 3, 1)));
    return _mm512_add_ps(_mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(z01, z23, _MM_SHUFFLE(3, 1, 3, 1)));
}
#endif

/* out[t] = x · Y[idx[t]] (rows of length D) for t < n. AVX-512: sixteen rows at a time, one FMA
 * chain per row over D (16 floats per vector, masked tail), then one transposing reduction. */
static void dots_rows(const float *restrict x /* (D) */, const float *restrict Y /* (rows, D) */, int D, const int *restrict idx /* (n) */, int n,
                      float *restrict out /* (n) */)
{
#if defined(__AVX512F__)
    const int nfull = D / 16, rem = D % 16;
    const __mmask16 tm = (__mmask16)((1u << rem) - 1);
    for (int t0 = 0; t0 < n; t0 += 16) {
        int m = n - t0 < 16 ? n - t0 : 16;
        __m512 v[16];
#pragma GCC unroll 16
        for (int t = 0; t < 16; t++) {
            __m512 a = _mm512_setzero_ps();
            if (t < m) {
                const float *y = Y + (int64_t)idx[t0 + t] * D;
                int c = 0;
                for (; c < nfull; c++) a = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16 * c), _mm512_loadu_ps(y + 16 * c), a);
                if (rem) a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(tm, x + 16 * c), _mm512_maskz_loadu_ps(tm, y + 16 * c), a);
            }
            v[t] = a;
        }
        _mm512_mask_storeu_ps(out + t0, (__mmask16)(m == 16 ? 0xffffu : (1u << m) - 1), reduce16(v));
    }
#else
    for (int t = 0; t < n; t++) out[t] = dot_lanes(x, Y + (int64_t)idx[t] * D, D);
#endif
}

/* out[t] = LeakyReLU(u + sk[idx[t]]) for t < n (additive scores of one query row). */
static void additive_row(float u, const float *restrict sk /* (N) */, const int *restrict idx /* (n) */, int n, float slope,
                         float *restrict out /* (n) */)
{
    int t = 0;
#if defined(__AVX512F__)
    const __m512 uv = _mm512_set1_ps(u), sl = _mm512_set1_ps(slope);
    for (; t < n; t += 16) {
        __mmask16 len = (__mmask16)(n - t >= 16 ? 0xffffu : (1u << (n - t)) - 1);
        __m512i ix = _mm512_maskz_loadu_epi32(len, idx + t);
        __m512 a = _mm512_add_ps(uv, _mm512_mask_i32gather_ps(_mm512_setzero_ps(), len, ix, sk, 4));
        a = _mm512_mask_mul_ps(a, _mm512_cmp_ps_mask(a, _mm512_setzero_ps(), _CMP_GT_OQ) ^ 0xffff, a, sl);
        _mm512_mask_storeu_ps(out + t, len, a);
    }
#endif
    for (; t < n; t++) out[t] = leaky(u + sk[idx[t]], slope);
}

void al__attn_sparse_forward(const attn_node *nd, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                             const float *v /* (B,H,N,Dv) */, const float *rel /* (H,noff) or NULL */,
                             const float *bias /* (H,slots) or NULL */, float *out /* (B,H,N,Dv) */,
                             float *scratch /* (nthr, maxdeg) */)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H;
    const int64_t rows = (int64_t)g->B * H * N, slots = g->slots;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    AL_OMP("omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > AL_PAR_MIN)")
    {
        float *w = scratch + (size_t)al__thread_id() * nd->maxdeg;
        AL_OMP("omp for schedule(static)")
        for (int64_t r = 0; r < rows; r++) {
            int64_t bh = r / N;
            int i = (int)(r % N), h = (int)(bh % H);
            const float *qi = q + r * D, *K = k + bh * N * D, *V = v + bh * N * Dv;
            float *P = nd->P + bh * slots, *o = out + r * Dv;
            int64_t s0 = qptr[i], s1 = qptr[i + 1];
            int n = (int)(s1 - s0);
            const int *kc = nd->keyc + s0, *ky = key + s0;
            float *Pr = P + s0;
            const float *rh = rel ? rel + (int64_t)h * g->noff : NULL, *bh_ = bias ? bias + (int64_t)h * slots + s0 : NULL;
            if (g->additive) additive_row(nd->sq[r], nd->sk + bh * N, kc, n, g->slope, Pr);
            else dots_rows(qi, K, D, kc, n, Pr);
            float mx;
#if defined(__AVX512F__)
            {   /* scale, biases, absent keys → −inf and the row max in one masked sweep */
                const __m512 sc = _mm512_set1_ps(g->additive ? 1.f : g->scale), ninf = _mm512_set1_ps(-INFINITY);
                __m512 mv = ninf;
                for (int t = 0; t < n; t += 16) {
                    __mmask16 len = (__mmask16)(n - t >= 16 ? 0xffffu : (1u << (n - t)) - 1);
                    __m512 x = _mm512_maskz_loadu_ps(len, Pr + t);
                    if (!g->additive) x = _mm512_mul_ps(x, sc);
                    if (rh) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(len, rh + t));
                    if (bh_) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(len, bh_ + t));
                    __mmask16 absent = _mm512_mask_cmplt_epi32_mask(len, _mm512_maskz_loadu_epi32(len, ky + t),
                                                                     _mm512_setzero_si512());
                    x = _mm512_mask_mov_ps(x, absent, ninf);
                    _mm512_mask_storeu_ps(Pr + t, len, x);
                    mv = _mm512_mask_max_ps(mv, len, mv, x);
                }
                mx = _mm512_reduce_max_ps(mv);
            }
#else
            if (!g->additive) for (int t = 0; t < n; t++) Pr[t] *= g->scale;
            if (rh) for (int t = 0; t < n; t++) Pr[t] += rh[t];
            if (bh_) for (int t = 0; t < n; t++) Pr[t] += bh_[t];
            for (int t = 0; t < n; t++) Pr[t] = ky[t] < 0 ? -INFINITY : Pr[t];   /* absent: weight 0 below */
            mx = row_max(Pr, n);
#endif
            if (!g->relu) {
                if (mx == -INFINITY) mx = 0.f;   /* no present key with a finite score: all weights 0 */
                float sum = exp_shift_sum(Pr, n, mx), inv = sum > 0.f ? 1.0f / sum : 0.f;
                for (int t = 0; t < n; t++) Pr[t] *= inv;
            } else {
                for (int t = 0; t < n; t++) Pr[t] = Pr[t] > 0.f ? Pr[t] : 0.f;
            }
            const float *wa = Pr;   /* applied weights; absent slots hold 0 */
            if (g->drop) {
                const uint8_t *kb = nd->keepb + bh * slots + s0;
                for (int t = 0; t < n; t++) w[t] = kb[t] ? Pr[t] * g->inv_keep : 0.f;
                wa = w;
            }
            for (int e = 0; e < Dv; e++) o[e] = 0.f;
            axpy_rows(wa, kc, n, V, Dv, 1.f, o);
        }
    }
}

/* Backward pass 1 over queries: dS per slot, dQ, dsq. */
static void sparse_bwd_queries(const attn_node *nd, const float *k /* (B,H,N,D) */, const float *v /* (B,H,N,Dv) */,
                               const float *dO /* (B,H,N,Dv) */, float *dS /* (B,H,slots) */,
                               float *dq /* (B,H,N,D) or NULL */, float *dsq /* (B,H,N), additive */)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H;
    const int64_t rows = (int64_t)g->B * H * N, slots = g->slots;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    const float *aq = g->additive ? nd->aq->data : NULL;
    AL_OMP("omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > AL_PAR_MIN)")
    {
        AL_OMP("omp for schedule(static)")
        for (int64_t r = 0; r < rows; r++) {
            int64_t bh = r / N;
            int i = (int)(r % N), h = (int)(bh % H);
            const float *K = k + bh * N * D, *V = v + bh * N * Dv, *doi = dO + r * Dv, *P = nd->P + bh * slots;
            float *ds = dS + bh * slots;
            int64_t s0 = qptr[i], s1 = qptr[i + 1];
            int n = (int)(s1 - s0);
            const int *kc = nd->keyc + s0, *ky = key + s0;
            float *dsr = ds + s0;
            const float *Pr = P + s0;
            dots_rows(doi, V, Dv, kc, n, dsr);
            const uint8_t *kb = g->drop ? nd->keepb + bh * slots + s0 : NULL;
#if defined(__AVX512F__) && defined(__AVX512BW__)
            if (!g->additive) {   /* dropout, delta and dS in two masked sweeps */
                const __m512 ik = _mm512_set1_ps(g->inv_keep), zero = _mm512_setzero_ps();
                __m512 dv = zero;
                for (int t = 0; t < n; t += 16) {
                    __mmask16 len = (__mmask16)(n - t >= 16 ? 0xffffu : (1u << (n - t)) - 1);
                    __mmask16 on = _mm512_mask_cmpge_epi32_mask(len, _mm512_maskz_loadu_epi32(len, ky + t), _mm512_setzero_si512());
                    __m512 x = _mm512_maskz_loadu_ps(on, dsr + t);
                    if (kb) x = _mm512_maskz_mul_ps(_mm_mask_test_epi8_mask(len, _mm_maskz_loadu_epi8(len, kb + t),
                                                                            _mm_set1_epi8(1)), x, ik);
                    _mm512_mask_storeu_ps(dsr + t, len, x);
                    dv = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(len, Pr + t), x, dv);
                }
                const __m512 delta = _mm512_set1_ps(_mm512_reduce_add_ps(dv));
                for (int t = 0; t < n; t += 16) {
                    __mmask16 len = (__mmask16)(n - t >= 16 ? 0xffffu : (1u << (n - t)) - 1);
                    __mmask16 on = _mm512_mask_cmpge_epi32_mask(len, _mm512_maskz_loadu_epi32(len, ky + t), _mm512_setzero_si512());
                    __m512 x = _mm512_maskz_loadu_ps(len, dsr + t), pv = _mm512_maskz_loadu_ps(len, Pr + t);
                    __m512 d = g->relu ? _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(pv, zero, _CMP_GT_OQ), x)
                                       : _mm512_mul_ps(pv, _mm512_sub_ps(x, delta));
                    _mm512_mask_storeu_ps(dsr + t, len, _mm512_maskz_mov_ps(on, d));
                }
                if (dq) axpy_rows(dsr, kc, n, K, D, g->scale, dq + r * D);
                continue;
            }
#endif
            if (kb) for (int t = 0; t < n; t++) dsr[t] = kb[t] ? dsr[t] * g->inv_keep : 0.f;
            float delta = 0.f;
            for (int t = 0; t < n; t++) {
                if (ky[t] < 0) { dsr[t] = 0.f; continue; }
                delta = AL_FMA(Pr[t], dsr[t], delta);
            }
            float su = 0.f;
            for (int64_t s = s0; s < s1; s++) {
                int j = key[s];
                if (j < 0) continue;
                float d = g->relu ? (P[s] > 0.f ? ds[s] : 0.f) : P[s] * (ds[s] - delta);
                ds[s] = d;
                if (g->additive) su += (nd->sq[r] + nd->sk[bh * N + j] > 0.f ? 1.f : g->slope) * d;
            }
            if (g->additive) {
                dsq[r] = su;
                if (dq) for (int dd = 0; dd < D; dd++) dq[r * D + dd] += aq[(int64_t)h * D + dd] * su;
            } else if (dq) {
                axpy_rows(ds + s0, nd->keyc + s0, (int)(s1 - s0), K, D, g->scale, dq + r * D);
            }
        }
    }
}

/* Backward pass 2 over keys through the transposed lists: dK, dV, dsk. */
static void sparse_bwd_keys(const attn_node *nd, const float *q /* (B,H,N,D) */, const float *dO /* (B,H,N,Dv) */,
                            const float *dS /* (B,H,slots) */, float *scratch /* (nthr, 2, maxdeg) */,
                            float *dk /* (B,H,N,D) or NULL */, float *dv /* (B,H,N,Dv) or NULL */,
                            float *dsk /* (B,H,N), additive */)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H;
    const int64_t rows = (int64_t)g->B * H * N, slots = g->slots;
    const float *ak = g->additive ? nd->ak->data : NULL;
    AL_OMP("omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > AL_PAR_MIN)")
    {
        float *wp = scratch + (size_t)al__thread_id() * 2 * nd->maxdeg, *wd = wp + nd->maxdeg;
        AL_OMP("omp for schedule(static)")
        for (int64_t r = 0; r < rows; r++) {
            int64_t bh = r / N;
            int j = (int)(r % N), h = (int)(bh % H);
            const float *Q = q + bh * N * D, *dOh = dO + bh * N * Dv, *P = nd->P + bh * slots, *ds = dS + bh * slots;
            int64_t t0 = nd->kptr[j];
            int n = (int)(nd->kptr[j + 1] - t0);
            const int64_t *ks = nd->kslot + t0;
            const int *kq = nd->kq + t0;
            const uint8_t *kb = g->drop ? nd->keepb + bh * slots : NULL;
            const float keepf[2] = {0.f, g->inv_keep};   /* no branch on a random bit */
            float su = 0.f;
            for (int t = 0; t < n; t++) {
                int64_t s = ks[t];
                float p = P[s];
                wp[t] = g->drop ? p * keepf[kb[s]] : p;   /* p >= 0: p·0 is +0, as the reference's 0 */
                wd[t] = ds[s];
                if (g->additive) su += (nd->sq[bh * N + kq[t]] + nd->sk[r] > 0.f ? 1.f : g->slope) * ds[s];
            }
            if (dv) axpy_rows(wp, kq, n, dOh, Dv, 1.f, dv + r * Dv);
            if (g->additive) {
                dsk[r] = su;
                if (dk) for (int dd = 0; dd < D; dd++) dk[r * D + dd] += ak[(int64_t)h * D + dd] * su;
            } else if (dk) {
                axpy_rows(wd, kq, n, Q, D, g->scale, dk + r * D);
            }
        }
    }
}

void al__attn_sparse_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, H = g->H, B = g->B;
    const int64_t rows = (int64_t)B * H * N, slots = g->slots;
    const float *q = nd->q->data, *k = nd->k->data, *v = nd->v->data, *dO = nd->out->grad;
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;
    float *dbias = nd->bias && nd->bias->requires_grad ? al_grad(c, nd->bias) : NULL;
    float *drel = nd->rel && nd->rel->requires_grad ? al_grad(c, nd->rel) : NULL;
    int need_aq = g->additive && nd->aq->requires_grad, need_ak = g->additive && nd->ak->requires_grad;
    float *dS = al_arena_alloc(&c->arena, (size_t)(B * H * slots > 0 ? B * H * slots : 1) * sizeof(float));
    float *dsq = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    float *dsk = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * 2 * nd->maxdeg * sizeof(float));
    if (!dS || !scratch || (g->additive && (!dsq || !dsk))) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    sparse_bwd_queries(nd, k, v, dO, dS, dq, dsq);
    if (dk || dv || need_ak) sparse_bwd_keys(nd, q, dO, dS, scratch, dk, dv, dsk);
    /* Parameter gradients, reduced over the batch in a fixed order. */
    if (dbias) {
        AL_OMP("omp parallel for schedule(static) if ((int64_t)H * slots * B > AL_PAR_MIN)")
        for (int64_t hs = 0; hs < (int64_t)H * slots; hs++) {
            int64_t h = hs / slots, s = hs % slots;
            float acc = dbias[hs];
            for (int b = 0; b < B; b++) acc += dS[((int64_t)b * H + h) * slots + s];
            dbias[hs] = acc;
        }
    }
    if (drel) {
        int K = g->noff;
        AL_OMP("omp parallel for schedule(static) if (H > 1 && (int64_t)B * slots > AL_PAR_MIN)")
        for (int h = 0; h < H; h++)
            for (int b = 0; b < B; b++) {
                const float *ds = dS + ((int64_t)b * H + h) * slots;
                float *dr = drel + (int64_t)h * K;
                for (int64_t s0 = 0; s0 < slots; s0 += K)
                    for (int o = 0; o < K; o++) dr[o] += ds[s0 + o];
            }
    }
    if (need_aq) al__attn_head_dot_grad(g, q, dsq, al_grad(c, nd->aq));
    if (need_ak) al__attn_head_dot_grad(g, k, dsk, al_grad(c, nd->ak));
}
