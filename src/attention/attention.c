/* attention.c — the fast multi-head attention kernels (forward and backward side by side).
 *
 * Two kernel families:
 *   full      streamed flash-attention style: q-tiles × k-tiles, online softmax, only the per-row
 *             logsumexp is saved; backward recomputes the scores in two passes (q-tiles → dQ,
 *             k-tiles → dK/dV) so every thread owns its writes. Memory O(N·D) per head.
 *   sparse    window2d / window1d / graph: an explicit list of score slots per query (the pattern's
 *             layout) and its transpose per key; only allowed keys are visited, the normalised
 *             weights are saved per slot (O(slots) per head). Backward: a pass over queries (dQ,
 *             dS) then a pass over keys through the transposed list (dK, dV).
 * Full attention with a dot score, softmax, no dropout or bias and D = Dv = 16 runs the
 * query-in-lanes kernels of attention_full16.c instead (same maths, no GEMM tiles).
 * Parameter gradients (a_q, a_k, rel_bias, bias) are reduced in a fixed order after the passes,
 * so results are bitwise independent of the schedule and of the thread count.
 * The maths of the backward passes is written up in docs/attention.md.
 */
#include "attention/attention_impl.h"
#include "attnlab/kernels.h"
#include "core/omp_impl.h"
#include <math.h>
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define BQ 128  /* queries per tile (full) */
#define BK 128  /* keys per tile (full) */
#define PAR_MIN 32768   /* below this much work a loop runs on one thread (a fork costs more) */
#define FUSED_MIN_HEADS 4   /* full backward: one pass per head from this many (b, h) heads */

#ifdef __FMA__
#define FMA(a, b, c) fmaf(a, b, c)
#else
#define FMA(a, b, c) ((a) * (b) + (c))
#endif

/* e^x (Cephes expf: x = n·ln2 + r, |r| ≤ ln2/2, a degree-7 polynomial for e^r, then ·2^n).
 * Max rel. error about 2 ulp; exactly 0 for x < −87 (including −inf); x clamped at 88. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_C1 0.693359375f
#define EXP_C2 (-2.12194440e-4f)
#define EXP_P0 1.9875691500e-4f
#define EXP_P1 1.3981999507e-3f
#define EXP_P2 8.3334519073e-3f
#define EXP_P3 4.1665795894e-2f
#define EXP_P4 1.6666665459e-1f
#define EXP_P5 5.0000001201e-1f
static inline float fast_expf(float x)
{
    if (!(x >= -87.0f)) return 0.0f;
    float xc = x > 88.0f ? 88.0f : x;
    float n = floorf(FMA(xc, EXP_LOG2E, 0.5f));
    float r = FMA(-n, EXP_C1, xc);
    r = FMA(-n, EXP_C2, r);
    float p = EXP_P0;
    p = FMA(p, r, EXP_P1); p = FMA(p, r, EXP_P2); p = FMA(p, r, EXP_P3);
    p = FMA(p, r, EXP_P4); p = FMA(p, r, EXP_P5);
    p = FMA(p, r * r, r + 1.0f);
    return ldexpf(p, (int)n);
}

#if defined(__AVX512F__)
static inline __m512 exp16(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(-87.0f);
    __mmask16 ok = _mm512_cmp_ps_mask(x, lo, _CMP_GE_OQ);
    __m512 xc = _mm512_min_ps(x, _mm512_set1_ps(88.0f));
    __m512 n = _mm512_roundscale_ps(_mm512_fmadd_ps(xc, _mm512_set1_ps(EXP_LOG2E), _mm512_set1_ps(0.5f)),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_C1), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EXP_C2), r);
    __m512 p = _mm512_set1_ps(EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P1)); p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P3)); p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_maskz_mov_ps(ok, _mm512_scalef_ps(p, n));
}
#elif defined(__AVX2__) && defined(__FMA__)
static inline __m256 exp8(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.0f);
    __m256 ok = _mm256_cmp_ps(x, lo, _CMP_GE_OQ);
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(88.0f));
    __m256 n = _mm256_floor_ps(_mm256_fmadd_ps(xc, _mm256_set1_ps(EXP_LOG2E), _mm256_set1_ps(0.5f)));
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_C1), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EXP_C2), r);
    __m256 p = _mm256_set1_ps(EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P1)); p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P3)); p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(EXP_P5));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_and_ps(ok, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}
#endif

/* y[j] = e^(x[j] − m) for j < n (y may be x). SIMD when available, the same formula scalar. */
static void exp_shift(const float *x, float *y, int n, float m)
{
    int j = 0;
#if defined(__AVX512F__)
    __m512 mv = _mm512_set1_ps(m);
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv)));
    if (j < n) {
        __mmask16 msk = (__mmask16)((1u << (n - j)) - 1);
        _mm512_mask_storeu_ps(y + j, msk, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(msk, x + j), mv)));
        return;
    }
#elif defined(__AVX2__) && defined(__FMA__)
    __m256 mv = _mm256_set1_ps(m);
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), mv)));
#endif
    for (; j < n; j++) y[j] = fast_expf(x[j] - m);
}

/* Dropout mask, sixteen entries at a time: bit t = al_attn_keep(g, bh, slot0 + t), t < 16.
 * The same counter-based hash (splitmix64 of seed + index·golden), in 64-bit lanes: lane t
 * starts from x0 + t·golden, so only the two mixing multiplies are vector multiplies. */
#define KEEP_G 0x9e3779b97f4a7c15ULL
#if defined(__AVX512F__) && defined(__AVX512DQ__)
static inline __m512i mix64x8(__m512i x)
{
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 30));
    x = _mm512_mullo_epi64(x, _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ULL));
    x = _mm512_xor_si512(x, _mm512_srli_epi64(x, 27));
    x = _mm512_mullo_epi64(x, _mm512_set1_epi64((long long)0x94d049bb133111ebULL));
    return _mm512_xor_si512(x, _mm512_srli_epi64(x, 31));
}
#endif
static inline uint32_t keep16(const al_attn_cfg *g, int64_t bh, int64_t slot0)
{
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    uint64_t x0 = g->seed + (uint64_t)(bh * g->slots + slot0) * KEEP_G;
    const __m512i lane = _mm512_set_epi64((long long)(7 * KEEP_G), (long long)(6 * KEEP_G), (long long)(5 * KEEP_G),
                                          (long long)(4 * KEEP_G), (long long)(3 * KEEP_G), (long long)(2 * KEEP_G),
                                          (long long)KEEP_G, 0);
    __m512i a = _mm512_add_epi64(_mm512_set1_epi64((long long)x0), lane);
    __m512i b = _mm512_add_epi64(a, _mm512_set1_epi64((long long)(8 * KEEP_G)));
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
static void drop_mul(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x, float *y, int n)
{
    for (int t0 = 0; t0 < n; t0 += 16) {
        uint32_t bits = keep16(g, bh, slot0 + t0);
        int m = n - t0 < 16 ? n - t0 : 16;
#if defined(__AVX512F__)
        __mmask16 len = (__mmask16)(m == 16 ? 0xffffu : (1u << m) - 1);
        __m512 v = _mm512_maskz_loadu_ps(len, x + t0);
        _mm512_mask_storeu_ps(y + t0, len, _mm512_maskz_mul_ps((__mmask16)bits, v, _mm512_set1_ps(g->inv_keep)));
#else
        for (int t = 0; t < m; t++) y[t0 + t] = (bits >> t & 1u) ? x[t0 + t] * g->inv_keep : 0.f;
#endif
    }
}

/* drop_mul on two rows with the same mask (one hash per entry): y1 from x1 and y2 from x2. */
static void drop_mul2(const al_attn_cfg *g, int64_t bh, int64_t slot0, const float *x1, float *y1,
                      const float *x2, float *y2, int n)
{
    for (int t0 = 0; t0 < n; t0 += 16) {
        uint32_t bits = keep16(g, bh, slot0 + t0);
        int m = n - t0 < 16 ? n - t0 : 16;
#if defined(__AVX512F__)
        __mmask16 len = (__mmask16)(m == 16 ? 0xffffu : (1u << m) - 1);
        const __m512 ik = _mm512_set1_ps(g->inv_keep);
        __m512 v1 = _mm512_maskz_loadu_ps(len, x1 + t0), v2 = _mm512_maskz_loadu_ps(len, x2 + t0);
        _mm512_mask_storeu_ps(y1 + t0, len, _mm512_maskz_mul_ps((__mmask16)bits, v1, ik));
        _mm512_mask_storeu_ps(y2 + t0, len, _mm512_maskz_mul_ps((__mmask16)bits, v2, ik));
#else
        for (int t = 0; t < m; t++) {
            int kp = (int)(bits >> t & 1u);
            float a = x1[t0 + t], b = x2[t0 + t];
            y1[t0 + t] = kp ? a * g->inv_keep : 0.f;
            y2[t0 + t] = kp ? b * g->inv_keep : 0.f;
        }
#endif
    }
}

/* keepb[bh·slots + s] = keep(bh, s) as bytes 0/1 for every (b, h) and slot: drawn once per
 * forward, read by the forward and both backward passes of the sparse kernels. */
static void keep_bytes(const al_attn_cfg *g, uint8_t *keepb)
{
    const int64_t nbh = (int64_t)g->B * g->H, per = (g->slots + 15) / 16;
#pragma omp parallel for schedule(static) if (nbh * g->slots > 4 * PAR_MIN)
    for (int64_t c = 0; c < nbh * per; c++) {
        int64_t bh = c / per, s0 = (c % per) * 16;
        uint32_t bits = keep16(g, bh, s0);
        int m = g->slots - s0 < 16 ? (int)(g->slots - s0) : 16;
        uint8_t *o = keepb + bh * g->slots + s0;
        for (int t = 0; t < m; t++) o[t] = (uint8_t)(bits >> t & 1u);
    }
}

/* ------------------------------------------------------------------------------------------ */
/* Pattern helpers and argument checking                                                        */
/* ------------------------------------------------------------------------------------------ */

int64_t al_pattern_slots(const al_pattern *p, int n)
{
    switch (p->kind) {
    case AL_PAT_FULL: return (int64_t)n * n;
    case AL_PAT_WINDOW2D: return (int64_t)n * p->win_h * p->win_w;
    case AL_PAT_WINDOW1D: return (int64_t)n * (2 * p->radius + 1);
    case AL_PAT_GRAPH: return p->adj ? p->adj->nnz : 0;
    }
    return 0;
}

int al_pattern_offsets(const al_pattern *p)
{
    if (p->kind == AL_PAT_WINDOW2D) return p->win_h * p->win_w;
    if (p->kind == AL_PAT_WINDOW1D) return 2 * p->radius + 1;
    return 0;
}

int al_attn_setup(al_ctx *c, const char *op, const al_attn_desc *d, al_tensor *q, al_tensor *k,
                  al_tensor *v, al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias,
                  al_attn_cfg *g)
{
    char b1[64], b2[64], b3[64];
    if (!d) { al_fail(c, "%s: descriptor is NULL", op); return -1; }
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || !al_same_shape(q, k) ||
        v->shape[0] != q->shape[0] || v->shape[1] != q->shape[1] || v->shape[2] != q->shape[2]) {
        al_fail(c, "%s: expected q, k (B,H,N,D) and v (B,H,N,Dv), got q %s, k %s, v %s", op,
                al_shape_str(q, b1, sizeof b1), al_shape_str(k, b2, sizeof b2), al_shape_str(v, b3, sizeof b3));
        return -1;
    }
    memset(g, 0, sizeof *g);
    g->B = q->shape[0]; g->H = q->shape[1]; g->N = q->shape[2]; g->D = q->shape[3]; g->Dv = v->shape[3];
    const al_pattern *p = &d->pattern;
    switch (p->kind) {
    case AL_PAT_FULL: break;
    case AL_PAT_WINDOW2D:
        if (p->grid_h < 1 || p->grid_w < 1 || (int64_t)p->grid_h * p->grid_w != g->N) {
            al_fail(c, "%s: window2d grid %dx%d does not hold N = %d tokens", op, p->grid_h, p->grid_w, g->N);
            return -1;
        }
        if (p->win_h < 1 || p->win_w < 1 || !(p->win_h & 1) || !(p->win_w & 1)) {
            al_fail(c, "%s: window2d size %dx%d must be odd and positive", op, p->win_h, p->win_w);
            return -1;
        }
        break;
    case AL_PAT_WINDOW1D:
        if (p->radius < 0) { al_fail(c, "%s: window1d radius %d < 0", op, p->radius); return -1; }
        break;
    case AL_PAT_GRAPH: {
        const al_csr *a = p->adj;
        if (!a || !a->rowptr || (a->nnz > 0 && !a->col)) { al_fail(c, "%s: graph pattern without an adjacency", op); return -1; }
        if (a->rows != g->N || a->cols != g->N) {
            al_fail(c, "%s: adjacency is %dx%d but N = %d", op, a->rows, a->cols, g->N);
            return -1;
        }
        if (a->rowptr[0] != 0 || a->rowptr[a->rows] != a->nnz) {
            al_fail(c, "%s: adjacency rowptr does not span 0..nnz (%lld)", op, (long long)a->nnz);
            return -1;
        }
        for (int i = 0; i < a->rows; i++)
            if (a->rowptr[i + 1] < a->rowptr[i]) { al_fail(c, "%s: adjacency rowptr decreases at row %d", op, i); return -1; }
        for (int64_t e = 0; e < a->nnz; e++)
            if (a->col[e] < 0 || a->col[e] >= g->N) {
                al_fail(c, "%s: adjacency edge %lld has column %d outside [0, %d)", op, (long long)e, a->col[e], g->N);
                return -1;
            }
        break;
    }
    default: al_fail(c, "%s: unknown pattern kind %d", op, (int)p->kind); return -1;
    }
    g->slots = al_pattern_slots(p, g->N);
    g->noff = al_pattern_offsets(p);

    if (d->score == AL_SCORE_ADDITIVE) {
        g->additive = 1;
        if (!a_q || !a_k) { al_fail(c, "%s: additive score needs a_q and a_k (H,D)", op); return -1; }
        if (a_q->ndim != 2 || a_k->ndim != 2 || a_q->shape[0] != g->H || a_q->shape[1] != g->D || !al_same_shape(a_q, a_k)) {
            al_fail(c, "%s: a_q %s and a_k %s must be (H,D) = (%d, %d)", op, al_shape_str(a_q, b1, sizeof b1),
                    al_shape_str(a_k, b2, sizeof b2), g->H, g->D);
            return -1;
        }
    } else if (d->score == AL_SCORE_DOT) {
        if (a_q || a_k) { al_fail(c, "%s: a_q/a_k given for a dot-product score", op); return -1; }
    } else { al_fail(c, "%s: unknown score kind %d", op, (int)d->score); return -1; }
    if (d->norm != AL_NORM_SOFTMAX && d->norm != AL_NORM_RELU) { al_fail(c, "%s: unknown normaliser %d", op, (int)d->norm); return -1; }
    g->relu = d->norm == AL_NORM_RELU;
    g->scale = d->scale != 0.f ? d->scale : 1.0f / sqrtf((float)g->D);
    g->slope = d->slope;

    if (rel_bias) {
        if (!g->noff) { al_fail(c, "%s: rel_bias is only defined for window patterns", op); return -1; }
        if (rel_bias->ndim != 2 || rel_bias->shape[0] != g->H || rel_bias->shape[1] != g->noff) {
            al_fail(c, "%s: rel_bias %s must be (H, offsets) = (%d, %d)", op, al_shape_str(rel_bias, b1, sizeof b1), g->H, g->noff);
            return -1;
        }
    }
    if (bias && (bias->ndim != 2 || bias->shape[0] != g->H || bias->shape[1] != g->slots)) {
        al_fail(c, "%s: bias %s must be (H, slots) = (%d, %lld)", op, al_shape_str(bias, b1, sizeof b1), g->H, (long long)g->slots);
        return -1;
    }
    if (!(d->dropout >= 0.f && d->dropout < 1.f)) { al_fail(c, "%s: dropout %g outside [0, 1)", op, (double)d->dropout); return -1; }
    if (c->training && d->dropout > 0.f) {
        g->drop = 1;
        double t = (double)d->dropout * 4294967296.0;
        g->thresh = t >= 4294967295.0 ? 0xffffffffu : (uint32_t)t;
        g->inv_keep = 1.0f / (1.0f - d->dropout);
        g->seed = al_rng_u64(&c->dropout_rng);
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Shared pieces                                                                                */
/* ------------------------------------------------------------------------------------------ */

/* s (B,H,N) = a[h] · x[b,h,i] for the additive score. */
static void head_dot(const al_attn_cfg *g, const float *x, const float *a, float *s)
{
    int64_t rows = (int64_t)g->B * g->H * g->N;
    int D = g->D;
#pragma omp parallel for schedule(static) if (rows * D > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        int h = (int)((r / g->N) % g->H);
        const float *xr = x + r * D, *ah = a + (int64_t)h * D;
        float acc = 0.f;
        for (int d = 0; d < D; d++) acc = FMA(xr[d], ah[d], acc);
        s[r] = acc;
    }
}

/* da (H,D) += Σ_{b,i} ds[b,h,i] · x[b,h,i,:] in a fixed order (b, then i). */
static void head_dot_grad(const al_attn_cfg *g, const float *x, const float *ds, float *da)
{
    int D = g->D;
#pragma omp parallel for schedule(static) if (g->H > 1 && (int64_t)g->B * g->N * D > PAR_MIN)
    for (int h = 0; h < g->H; h++) {
        float *dah = da + (int64_t)h * D;
        for (int b = 0; b < g->B; b++) {
            int64_t base = ((int64_t)b * g->H + h) * g->N;
            for (int i = 0; i < g->N; i++) {
                float w = ds[base + i];
                const float *xr = x + (base + i) * D;
                for (int d = 0; d < D; d++) dah[d] = FMA(w, xr[d], dah[d]);
            }
        }
    }
}

static inline float leaky(float u, float slope) { return u > 0.f ? u : slope * u; }

/* The backward node shared by both kernel families. */
typedef struct attn_node {
    al_attn_cfg g;
    al_pattern pat;
    al_tensor *q, *k, *v, *aq, *ak, *rel, *bias, *out;
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
    /* gat (graph + additive + softmax, no bias): heads innermost, so P is (B,slots,H), sq and sk
     * are (B,N,H); vt, qt, kt are v, q, k as (B,N,Dv|D,H) (qt, kt may be vt when q, k are v);
     * aqt, akt are a_q, a_k as (D,H); keepm (B,slots,head chunks) the dropout bits of 16 heads. */
    int gat;
    float *vt, *qt, *kt, *aqt, *akt;
    float *scr;        /* gat forward: (threads, maxdeg, HV) */
    uint16_t *keepm;
} attn_node;

/* ------------------------------------------------------------------------------------------ */
/* Full attention: streamed tiles                                                               */
/* ------------------------------------------------------------------------------------------ */

/* Scratch floats per thread for the full kernels: three (BQ, BK) tiles and the accumulators. */
static size_t full_scratch(const al_attn_cfg *g)
{
    int dm = g->D > g->Dv ? g->D : g->Dv;
    return (size_t)3 * BQ * BK + (size_t)BQ * dm + (size_t)BK * (g->D + g->Dv) + 4 * BQ + 64;
}

/* Reductions over a row in 16 fixed lanes, so they vectorise and their order is fixed. */
static inline float row_max(const float *s, int n)
{
#if defined(__AVX512F__)
    __m512 mv = _mm512_set1_ps(-INFINITY);
    int j = 0;
    for (; j + 16 <= n; j += 16) mv = _mm512_max_ps(mv, _mm512_loadu_ps(s + j));
    if (j < n) mv = _mm512_mask_max_ps(mv, (__mmask16)((1u << (n - j)) - 1), mv, _mm512_maskz_loadu_ps((__mmask16)((1u << (n - j)) - 1), s + j));
    return _mm512_reduce_max_ps(mv);
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
static inline float row_sum(const float *s, int n)
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
static inline float exp_shift_sum(float *x, int n, float m)
{
#if defined(__AVX512F__)
    const __m512 mv = _mm512_set1_ps(m);
    __m512 acc = _mm512_setzero_ps();
    int j = 0;
    for (; j + 16 <= n; j += 16) {
        __m512 y = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), mv));
        _mm512_storeu_ps(x + j, y);
        acc = _mm512_add_ps(acc, y);
    }
    if (j < n) {
        __mmask16 msk = (__mmask16)((1u << (n - j)) - 1);
        __m512 y = _mm512_maskz_mov_ps(msk, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(msk, x + j), mv)));
        _mm512_mask_storeu_ps(x + j, msk, y);
        acc = _mm512_add_ps(acc, y);
    }
    return _mm512_reduce_add_ps(acc);   /* a fixed tree: deterministic, not row_sum's order */
#else
    exp_shift(x, x, n, m);
    return row_sum(x, n);
#endif
}

/* S (nq, BK) = scores of queries i0.. against keys j0.. for head bh (h = head index):
 * dot: one small GEMM scale·Q_tile·K_tileᵀ; additive: LeakyReLU(sq_i + sk_j). Plus the bias.
 * Q, K (N,D) and sq, sk (N) point at head bh. */
static void full_scores(const al_attn_cfg *g, int h, int i0, int nq, int j0, int nk,
                        const float *Q, const float *K, const float *sq, const float *sk,
                        const float *bias, float *S)
{
    int D = g->D;
    if (!g->additive) {
        al_gemm_serial(0, 1, nq, nk, D, g->scale, Q + (int64_t)i0 * D, D, K + (int64_t)j0 * D, D, 0.f, S, BK);
    } else {
        const float slope = g->slope;
        for (int ii = 0; ii < nq; ii++) {
            float *restrict s = S + ii * BK;
            const float u0 = sq[i0 + ii], *restrict skj = sk + j0;
            for (int jj = 0; jj < nk; jj++) s[jj] = leaky(u0 + skj[jj], slope);
        }
    }
    if (bias) {
        for (int ii = 0; ii < nq; ii++) {
            const float *br = bias + (int64_t)h * g->slots + (int64_t)(i0 + ii) * g->N + j0;
            float *s = S + ii * BK;
            for (int jj = 0; jj < nk; jj++) s[jj] += br[jj];
        }
    }
}

static void full_forward(const al_attn_cfg *g, const float *q, const float *k, const float *v,
                         const float *sq, const float *sk, const float *bias, float *out, float *lse,
                         float *scratch, int nthr)
{
    const int N = g->N, D = g->D, Dv = g->Dv;
    const int nqt = (N + BQ - 1) / BQ, nkt = (N + BK - 1) / BK;
    const int64_t tasks = (int64_t)g->B * g->H * nqt;
    const size_t per = full_scratch(g);
    (void)nthr;   /* unused without OpenMP */
#pragma omp parallel num_threads(nthr) if (tasks > 1 && tasks * BQ * (int64_t)N * (D + Dv) > PAR_MIN)
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        float *S = ws, *acc = S + BQ * BK;
        float *m = acc + (size_t)BQ * (D > Dv ? D : Dv), *l = m + BQ;
#pragma omp for schedule(static)
        for (int64_t t = 0; t < tasks; t++) {
            int64_t bh = t / nqt;
            int h = (int)(bh % g->H), i0 = (int)(t % nqt) * BQ, nq = N - i0 < BQ ? N - i0 : BQ;
            const float *Q = q + bh * N * D, *K = k + bh * N * D, *V = v + bh * N * Dv;
            const float *sqh = sq ? sq + bh * N : NULL, *skh = sk ? sk + bh * N : NULL;
            for (int ii = 0; ii < nq; ii++) { m[ii] = -INFINITY; l[ii] = 0.f; }
            memset(acc, 0, (size_t)nq * Dv * sizeof(float));
            for (int kt = 0; kt < nkt; kt++) {
                int j0 = kt * BK, nk = N - j0 < BK ? N - j0 : BK;
                full_scores(g, h, i0, nq, j0, nk, Q, K, sqh, skh, bias, S);
                for (int ii = 0; ii < nq; ii++) {
                    float *s = S + ii * BK, *a = acc + (size_t)ii * Dv;
                    if (!g->relu) {      /* online softmax: rescale the running sums to the new max */
                        float mx = row_max(s, nk);
                        float mnew = mx > m[ii] ? mx : m[ii];
                        if (mnew == -INFINITY) { memset(s, 0, (size_t)nk * sizeof(float)); continue; }
                        float corr = m[ii] == -INFINITY ? 0.f : expf(m[ii] - mnew);
                        l[ii] = l[ii] * corr + exp_shift_sum(s, nk, mnew);
                        m[ii] = mnew;
                        if (corr != 1.f) for (int e = 0; e < Dv; e++) a[e] *= corr;
                    } else {
                        for (int jj = 0; jj < nk; jj++) s[jj] = s[jj] > 0.f ? s[jj] : 0.f;
                    }
                    if (g->drop) drop_mul(g, bh, (int64_t)(i0 + ii) * N + j0, s, s, nk);
                }
                /* acc (nq, Dv) += P' (nq, nk) · V_tile (nk, Dv) */
                al_gemm_serial(0, 0, nq, Dv, nk, 1.f, S, BK, V + (int64_t)j0 * Dv, Dv, 1.f, acc, Dv);
            }
            for (int ii = 0; ii < nq; ii++) {
                float *o = out + (bh * N + i0 + ii) * Dv, *a = acc + (size_t)ii * Dv;
                if (!g->relu) {
                    float inv = l[ii] > 0.f ? 1.0f / l[ii] : 0.f;
                    for (int e = 0; e < Dv; e++) o[e] = a[e] * inv;
                    lse[bh * N + i0 + ii] = l[ii] > 0.f ? m[ii] + logf(l[ii]) : INFINITY;
                } else {
                    memcpy(o, a, (size_t)Dv * sizeof(float));
                }
            }
        }
    }
}

/* The normalised weights (before dropout) of every head, (B,H,N,N), from the saved lse: a sweep
 * of recomputed score tiles after either forward kernel (only when the caller asks for them). */
static void full_weights(const al_attn_cfg *g, const float *q, const float *k, const float *sq, const float *sk,
                         const float *bias, const float *lse, float *wts, float *scratch, int nthr)
{
    const int N = g->N, D = g->D;
    const int nqt = (N + BQ - 1) / BQ, nkt = (N + BK - 1) / BK;
    const int64_t tasks = (int64_t)g->B * g->H * nqt;
    const size_t per = full_scratch(g);
    (void)nthr;   /* unused without OpenMP */
#pragma omp parallel num_threads(nthr) if (tasks > 1 && tasks * BQ * (int64_t)N * D > PAR_MIN)
    {
        float *S = scratch + (size_t)al__thread_id() * per;
#pragma omp for schedule(static)
        for (int64_t t = 0; t < tasks; t++) {
            int64_t bh = t / nqt;
            int h = (int)(bh % g->H), i0 = (int)(t % nqt) * BQ, nq = N - i0 < BQ ? N - i0 : BQ;
            const float *Q = q + bh * N * D, *K = k + bh * N * D;
            const float *sqh = sq ? sq + bh * N : NULL, *skh = sk ? sk + bh * N : NULL;
            for (int kt = 0; kt < nkt; kt++) {
                int j0 = kt * BK, nk = N - j0 < BK ? N - j0 : BK;
                full_scores(g, h, i0, nq, j0, nk, Q, K, sqh, skh, bias, S);
                for (int ii = 0; ii < nq; ii++) {
                    float *w = wts + (bh * N + i0 + ii) * (int64_t)N + j0, *s = S + ii * BK;
                    if (!g->relu) exp_shift(s, w, nk, lse[bh * N + i0 + ii]);
                    else for (int jj = 0; jj < nk; jj++) w[jj] = s[jj] > 0.f ? s[jj] : 0.f;
                }
            }
        }
    }
}

/* The d = 16 lane kernels apply (shapes and options only, never the thread count). */
static int use_full16(const al_attn_cfg *g, const float *bias) { return !bias && al__full16_ok(g); }

/* Scratch floats per thread for whichever full kernels run on this configuration, forward (with
 * the weights sweep) or backward. */
static size_t full_scratch_for(const al_attn_cfg *g, const float *bias, int backward)
{
    size_t a = full_scratch(g), b = use_full16(g, bias) ? al__full16_scratch(g, backward) : 0;
    return a > b ? a : b;
}

/* One backward tile: from the recomputed scores S and dP = dO·Vᵀ, overwrite dP with dS and, when
 * Pd != NULL, write the applied (dropped) weights P' into Pd. lse, delta point at head bh. */
static void full_ds_tile(const al_attn_cfg *g, int64_t bh, int i0, int nq, int j0, int nk,
                         const float *lse, const float *delta, float *S, float *dP, float *Pd)
{
    const int N = g->N;
    for (int ii = 0; ii < nq; ii++) {
        float *s = S + ii * BK, *dp = dP + ii * BK, *pd = Pd ? Pd + ii * BK : NULL;
        int64_t row = (int64_t)(i0 + ii) * N + j0;
        if (!g->relu) {
            float dl = delta[i0 + ii];
            exp_shift(s, s, nk, lse[i0 + ii]);
            if (g->drop) {
                if (pd) drop_mul2(g, bh, row, s, pd, dp, dp, nk);
                else drop_mul(g, bh, row, dp, dp, nk);
                for (int jj = 0; jj < nk; jj++) dp[jj] = s[jj] * (dp[jj] - dl);
            } else {
                if (pd) memcpy(pd, s, (size_t)nk * sizeof(float));
                for (int jj = 0; jj < nk; jj++) dp[jj] = s[jj] * (dp[jj] - dl);
            }
        } else {
            for (int jj = 0; jj < nk; jj++) {
                if (pd) pd[jj] = s[jj] > 0.f ? s[jj] : 0.f;
                dp[jj] = s[jj] > 0.f ? dp[jj] : 0.f;
            }
            if (g->drop) {
                if (pd) drop_mul2(g, bh, row, pd, pd, dp, dp, nk);
                else drop_mul(g, bh, row, dp, dp, nk);
            }
        }
    }
}

/* Adds a tile's accumulated gradients to rows r0 .. r0+n-1 of dX (n × D). Dot scores: acc holds the
 * rows' dX. Additive scores (a_h = the head's score vector a, D floats): sacc holds the rows' score
 * gradient, stored in ds_rows, and dX gets a_h · sacc. dX may be NULL (no gradient wanted). */
static inline void flush_tile_rows(int64_t r0, int n, int D, const float *acc, const float *sacc,
                                   const float *a_h, float *dX, float *ds_rows)
{
    for (int t = 0; t < n; t++) {
        int64_t r = r0 + t;
        if (a_h) {
            ds_rows[r] = sacc[t];
            if (dX) for (int d = 0; d < D; d++) dX[r * D + d] += a_h[d] * sacc[t];
        } else if (dX) {
            for (int d = 0; d < D; d++) dX[r * D + d] += acc[(size_t)t * D + d];
        }
    }
}

static void full_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, B = g->B;
    const float *q = nd->q->data, *k = nd->k->data, *v = nd->v->data, *o = nd->out->data, *dO = nd->out->grad;
    const float *bias = nd->bias ? nd->bias->data : NULL;
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;
    float *dbias = nd->bias && nd->bias->requires_grad ? al_grad(c, nd->bias) : NULL;
    int need_aq = g->additive && nd->aq->requires_grad, need_ak = g->additive && nd->ak->requires_grad;
    int64_t rows = (int64_t)B * H * N;
    float *delta = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
    float *dsq = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    float *dsk = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    const size_t per = full_scratch(g);
    float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * full_scratch_for(g, bias, 1) * sizeof(float));
    if (!delta || !scratch || (g->additive && (!dsq || !dsk))) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    /* delta_i = dO_i · O_i = Σ_j P_ij dP_ij (holds with dropout too) */
#pragma omp parallel for schedule(static) if (rows * Dv > PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        float s = 0.f;
        for (int e = 0; e < Dv; e++) s = FMA(dO[r * Dv + e], o[r * Dv + e], s);
        delta[r] = s;
    }
    if (use_full16(g, bias) && (int64_t)B * H >= FUSED_MIN_HEADS) {
        al__full16_backward(g, q, k, v, dO, nd->lse, delta, dq, dk, dv, scratch, nd->nthr);
        return;
    }
    const int nqt = (N + BQ - 1) / BQ, nkt = (N + BK - 1) / BK;
    const int nthr = nd->nthr;
    (void)nthr;   /* unused without OpenMP */
    const float *aq = g->additive ? nd->aq->data : NULL, *ak = g->additive ? nd->ak->data : NULL;
    if (!dbias && (int64_t)B * H >= FUSED_MIN_HEADS) {
        /* One pass per head: each (b, h) is one task that owns its rows of dQ, dK, dV, dsq and dsk,
         * so the scores, dP and the softmax are recomputed once instead of once per pass. Key tiles
         * outside, query tiles inside: dK, dV of a key tile stay in the tile accumulators while dQ
         * is accumulated in place (beta = 1), in the same order for any thread count. The choice of
         * this path depends on the shapes only, never on the number of threads. */
#pragma omp parallel num_threads(nthr) if (rows * N * (D + Dv) > PAR_MIN)
        {
            float *ws = scratch + (size_t)al__thread_id() * per;
            float *S = ws, *dP = S + BQ * BK, *Pd = dP + BQ * BK;
            float *kacc = Pd + BQ * BK, *vacc = kacc + (size_t)BK * D, *sacc = vacc + (size_t)BK * Dv;
#pragma omp for schedule(static)
            for (int64_t bh = 0; bh < (int64_t)B * H; bh++) {
                int h = (int)(bh % H);
                const float *Q = q + bh * N * D, *K = k + bh * N * D, *V = v + bh * N * Dv, *dOh = dO + bh * N * Dv;
                const float *sqh = g->additive ? nd->sq + bh * N : NULL, *skh = g->additive ? nd->sk + bh * N : NULL;
                float *dsqh = g->additive ? dsq + bh * N : NULL;
                for (int kt = 0; kt < nkt; kt++) {
                    int j0 = kt * BK, nk = N - j0 < BK ? N - j0 : BK;
                    if (dk) memset(kacc, 0, (size_t)nk * D * sizeof(float));
                    if (dv) memset(vacc, 0, (size_t)nk * Dv * sizeof(float));
                    memset(sacc, 0, (size_t)nk * sizeof(float));
                    for (int qt = 0; qt < nqt; qt++) {
                        int i0 = qt * BQ, nq = N - i0 < BQ ? N - i0 : BQ;
                        full_scores(g, h, i0, nq, j0, nk, Q, K, sqh, skh, NULL, S);
                        al_gemm_serial(0, 1, nq, nk, Dv, 1.f, dOh + (int64_t)i0 * Dv, Dv, V + (int64_t)j0 * Dv, Dv, 0.f, dP, BK);
                        full_ds_tile(g, bh, i0, nq, j0, nk, g->relu ? NULL : nd->lse + bh * N, delta + bh * N, S, dP,
                                     dv ? Pd : NULL);
                        /* vacc (nk, Dv) += P'ᵀ (nk, nq) · dO_tile (nq, Dv) */
                        if (dv) al_gemm_serial(1, 0, nk, Dv, nq, 1.f, Pd, BK, dOh + (int64_t)i0 * Dv, Dv, 1.f, vacc, Dv);
                        if (g->additive) {
                            const float slope = g->slope;
                            for (int ii = 0; ii < nq; ii++) {
                                float *restrict ds = dP + ii * BK, *restrict sa = sacc;
                                const float u0 = sqh[i0 + ii], *restrict skj = skh + j0;
                                for (int jj = 0; jj < nk; jj++) {
                                    float d = ds[jj] * (u0 + skj[jj] > 0.f ? 1.f : slope);
                                    ds[jj] = d;
                                    sa[jj] += d;
                                }
                                dsqh[i0 + ii] += row_sum(ds, nk);
                            }
                        } else {
                            /* dQ_tile (nq, D) += scale · dS (nq, nk) · K_tile (nk, D), in place */
                            if (dq) al_gemm_serial(0, 0, nq, D, nk, g->scale, dP, BK, K + (int64_t)j0 * D, D, 1.f,
                                                   dq + (bh * N + i0) * D, D);
                            /* kacc (nk, D) += scale · dSᵀ (nk, nq) · Q_tile (nq, D) */
                            if (dk) al_gemm_serial(1, 0, nk, D, nq, g->scale, dP, BK, Q + (int64_t)i0 * D, D, 1.f, kacc, D);
                        }
                    }
                    if (dv)
                        for (int jj = 0; jj < nk; jj++)
                            for (int e = 0; e < Dv; e++) dv[(bh * N + j0 + jj) * Dv + e] += vacc[(size_t)jj * Dv + e];
                    flush_tile_rows(bh * N + j0, nk, D, kacc, sacc, g->additive ? ak + (int64_t)h * D : NULL, dk, dsk);
                }
                if (g->additive && dq)
                    for (int i = 0; i < N; i++)
                        for (int d = 0; d < D; d++) dq[(bh * N + i) * D + d] += aq[(int64_t)h * D + d] * dsqh[i];
            }
        }
        if (need_aq) head_dot_grad(g, q, dsq, al_grad(c, nd->aq));
        if (need_ak) head_dot_grad(g, k, dsk, al_grad(c, nd->ak));
        return;
    }
    /* Pass 1: query tiles own dQ, dsq and their rows of dbias (batch innermost so dbias is owned). */
    if (dq || dbias || need_aq) {
#pragma omp parallel num_threads(nthr) if (H * nqt > 1 && rows * N * (D + Dv) > PAR_MIN)
        {
            float *ws = scratch + (size_t)al__thread_id() * per;
            float *S = ws, *dP = S + BQ * BK, *acc = dP + 2 * BQ * BK, *sacc = acc + (size_t)BQ * D;
#pragma omp for schedule(static)
            for (int64_t t = 0; t < (int64_t)H * nqt; t++) {
                int h = (int)(t / nqt), i0 = (int)(t % nqt) * BQ, nq = N - i0 < BQ ? N - i0 : BQ;
                for (int b = 0; b < B; b++) {
                    int64_t bh = (int64_t)b * H + h;
                    const float *Q = q + bh * N * D, *K = k + bh * N * D, *V = v + bh * N * Dv, *dOh = dO + bh * N * Dv;
                    const float *sqh = g->additive ? nd->sq + bh * N : NULL, *skh = g->additive ? nd->sk + bh * N : NULL;
                    memset(acc, 0, (size_t)nq * D * sizeof(float));
                    memset(sacc, 0, (size_t)nq * sizeof(float));
                    for (int kt = 0; kt < nkt; kt++) {
                        int j0 = kt * BK, nk = N - j0 < BK ? N - j0 : BK;
                        full_scores(g, h, i0, nq, j0, nk, Q, K, sqh, skh, bias, S);
                        al_gemm_serial(0, 1, nq, nk, Dv, 1.f, dOh + (int64_t)i0 * Dv, Dv, V + (int64_t)j0 * Dv, Dv, 0.f, dP, BK);
                        full_ds_tile(g, bh, i0, nq, j0, nk, g->relu ? NULL : nd->lse + bh * N, delta + bh * N, S, dP, NULL);
                        if (dbias)
                            for (int ii = 0; ii < nq; ii++) {
                                const float *ds = dP + ii * BK;
                                float *db = dbias + (int64_t)h * g->slots + (int64_t)(i0 + ii) * N + j0;
                                for (int jj = 0; jj < nk; jj++) db[jj] += ds[jj];
                            }
                        if (g->additive) {
                            const float slope = g->slope;
                            for (int ii = 0; ii < nq; ii++) {
                                float *restrict ds = dP + ii * BK;
                                const float u0 = sqh[i0 + ii], *restrict skj = skh + j0;
                                for (int jj = 0; jj < nk; jj++) ds[jj] *= u0 + skj[jj] > 0.f ? 1.f : slope;
                                sacc[ii] += row_sum(ds, nk);
                            }
                        } else {   /* acc (nq, D) += scale · dS (nq, nk) · K_tile (nk, D) */
                            al_gemm_serial(0, 0, nq, D, nk, g->scale, dP, BK, K + (int64_t)j0 * D, D, 1.f, acc, D);
                        }
                    }
                    flush_tile_rows(bh * N + i0, nq, D, acc, sacc, g->additive ? aq + (int64_t)h * D : NULL, dq, dsq);
                }
            }
        }
    }
    /* Pass 2: key tiles own dK, dV and dsk. */
    if (dk || dv || need_ak) {
#pragma omp parallel num_threads(nthr) if (H * nkt > 1 && rows * N * (D + Dv) > PAR_MIN)
        {
            float *ws = scratch + (size_t)al__thread_id() * per;
            float *S = ws, *dP = S + BQ * BK, *Pd = dP + BQ * BK;
            float *kacc = Pd + BQ * BK, *vacc = kacc + (size_t)BK * D, *sacc = vacc + (size_t)BK * Dv;
#pragma omp for schedule(static)
            for (int64_t t = 0; t < (int64_t)H * nkt; t++) {
                int h = (int)(t / nkt), j0 = (int)(t % nkt) * BK, nk = N - j0 < BK ? N - j0 : BK;
                for (int b = 0; b < B; b++) {
                    int64_t bh = (int64_t)b * H + h;
                    const float *Q = q + bh * N * D, *K = k + bh * N * D, *V = v + bh * N * Dv, *dOh = dO + bh * N * Dv;
                    const float *sqh = g->additive ? nd->sq + bh * N : NULL, *skh = g->additive ? nd->sk + bh * N : NULL;
                    memset(kacc, 0, (size_t)nk * D * sizeof(float));
                    memset(vacc, 0, (size_t)nk * Dv * sizeof(float));
                    memset(sacc, 0, (size_t)nk * sizeof(float));
                    for (int qt = 0; qt < nqt; qt++) {
                        int i0 = qt * BQ, nq = N - i0 < BQ ? N - i0 : BQ;
                        full_scores(g, h, i0, nq, j0, nk, Q, K, sqh, skh, bias, S);
                        al_gemm_serial(0, 1, nq, nk, Dv, 1.f, dOh + (int64_t)i0 * Dv, Dv, V + (int64_t)j0 * Dv, Dv, 0.f, dP, BK);
                        full_ds_tile(g, bh, i0, nq, j0, nk, g->relu ? NULL : nd->lse + bh * N, delta + bh * N, S, dP, Pd);
                        /* vacc (nk, Dv) += P'ᵀ (nk, nq) · dO_tile (nq, Dv) */
                        if (dv) al_gemm_serial(1, 0, nk, Dv, nq, 1.f, Pd, BK, dOh + (int64_t)i0 * Dv, Dv, 1.f, vacc, Dv);
                        if (g->additive) {
                            const float slope = g->slope;
                            for (int ii = 0; ii < nq; ii++) {
                                const float *restrict ds = dP + ii * BK, *restrict skj = skh + j0;
                                float *restrict sa = sacc;
                                const float u0 = sqh[i0 + ii];
                                for (int jj = 0; jj < nk; jj++) sa[jj] += (u0 + skj[jj] > 0.f ? 1.f : slope) * ds[jj];
                            }
                        } else if (dk) {   /* kacc (nk, D) += scale · dSᵀ (nk, nq) · Q_tile (nq, D) */
                            al_gemm_serial(1, 0, nk, D, nq, g->scale, dP, BK, Q + (int64_t)i0 * D, D, 1.f, kacc, D);
                        }
                    }
                    if (dv)
                        for (int jj = 0; jj < nk; jj++)
                            for (int e = 0; e < Dv; e++) dv[(bh * N + j0 + jj) * Dv + e] += vacc[(size_t)jj * Dv + e];
                    flush_tile_rows(bh * N + j0, nk, D, kacc, sacc, g->additive ? ak + (int64_t)h * D : NULL, dk, dsk);
                }
            }
        }
    }
    if (need_aq) head_dot_grad(g, q, dsq, al_grad(c, nd->aq));
    if (need_ak) head_dot_grad(g, k, dsk, al_grad(c, nd->ak));
}

/* ------------------------------------------------------------------------------------------ */
/* Sparse patterns: window2d, window1d, graph                                                   */
/* ------------------------------------------------------------------------------------------ */

/* a · b over D elements (SIMD lanes, then a fixed-order horizontal sum). */
static inline float dot_lanes(const float *restrict a, const float *restrict b, int D)
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
    for (; d < D; d++) r = FMA(a[d], b[d], r);
    return r;
}

/* o (Dv) += alpha · Σ_t w[t] · Y[idx[t]] (rows of length Dv), the sum kept in vector registers
 * 16 (or 8) columns at a time while t runs inside. */
static inline void axpy_rows(const float *restrict w, const int *restrict idx, int n, const float *restrict Y,
                             int Dv, float alpha, float *restrict o)
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
        for (int t = 0; t < n; t++) a = FMA(w[t], Y[(int64_t)idx[t] * Dv + e0], a);
        o[e0] = FMA(alpha, a, o[e0]);
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
static void dots_rows(const float *restrict x, const float *restrict Y, int D, const int *restrict idx, int n,
                      float *restrict out)
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
static void additive_row(float u, const float *restrict sk, const int *restrict idx, int n, float slope,
                         float *restrict out)
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

/* Build qptr/key (window patterns; graphs borrow the CSR) and the transposed slot lists. */
static int sparse_build(al_ctx *c, const al_pattern *p, const al_attn_cfg *g, attn_node *nd)
{
    const int N = g->N;
    const int64_t slots = g->slots;
    if (p->kind == AL_PAT_GRAPH) {
        nd->qptr = p->adj->rowptr; nd->key = nd->keyc = p->adj->col;
    } else {
        int64_t *qptr = al_arena_alloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
        int *key = al_arena_alloc(&c->arena, (size_t)(slots > 0 ? slots : 1) * sizeof(int));
        int *keyc = al_arena_alloc(&c->arena, (size_t)(slots > 0 ? slots : 1) * sizeof(int));
        if (!qptr || !key || !keyc) { al_fail(c, "attention: out of memory"); return -1; }
        int K = g->noff;
        for (int i = 0; i <= N; i++) qptr[i] = (int64_t)i * K;
        if (p->kind == AL_PAT_WINDOW2D) {
            int rh = p->win_h / 2, rw = p->win_w / 2, W = p->grid_w, Hg = p->grid_h;
            for (int i = 0; i < N; i++) {
                int y = i / W, x = i % W;
                for (int dy = -rh; dy <= rh; dy++)
                    for (int dx = -rw; dx <= rw; dx++) {
                        int yy = y + dy, xx = x + dx;
                        key[(int64_t)i * K + (dy + rh) * p->win_w + dx + rw] =
                            (yy >= 0 && yy < Hg && xx >= 0 && xx < W) ? yy * W + xx : -1;
                    }
            }
        } else {
            int r = p->radius;
            for (int i = 0; i < N; i++)
                for (int o = 0; o < K; o++) { int j = i + o - r; key[(int64_t)i * K + o] = (j >= 0 && j < N) ? j : -1; }
        }
        for (int i = 0; i < N; i++)
            for (int64_t s = qptr[i]; s < qptr[i + 1]; s++) keyc[s] = key[s] >= 0 ? key[s] : i;
        nd->qptr = qptr; nd->key = key; nd->keyc = keyc;
    }
    /* transpose: counting sort of present slots by key, slots ascending within a key */
    int64_t *kptr = al_arena_calloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
    if (!kptr) { al_fail(c, "attention: out of memory"); return -1; }
    for (int64_t s = 0; s < slots; s++) if (nd->key[s] >= 0) kptr[nd->key[s] + 1]++;
    for (int j = 0; j < N; j++) kptr[j + 1] += kptr[j];
    int64_t present = kptr[N];
    int64_t *kslot = al_arena_alloc(&c->arena, (size_t)(present > 0 ? present : 1) * sizeof(int64_t));
    int *kq = al_arena_alloc(&c->arena, (size_t)(present > 0 ? present : 1) * sizeof(int));
    int64_t *fill = al_arena_alloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
    if (!kslot || !kq || !fill) { al_fail(c, "attention: out of memory"); return -1; }
    memcpy(fill, kptr, (size_t)(N + 1) * sizeof(int64_t));
    for (int i = 0; i < N; i++)
        for (int64_t s = nd->qptr[i]; s < nd->qptr[i + 1]; s++) {
            int j = nd->key[s];
            if (j < 0) continue;
            kslot[fill[j]] = s; kq[fill[j]] = i; fill[j]++;
        }
    nd->kptr = kptr; nd->kslot = kslot; nd->kq = kq;
    int64_t md = 1;
    for (int i = 0; i < N; i++) {
        if (nd->qptr[i + 1] - nd->qptr[i] > md) md = nd->qptr[i + 1] - nd->qptr[i];
        if (kptr[i + 1] - kptr[i] > md) md = kptr[i + 1] - kptr[i];
    }
    if (md > INT32_MAX / 2) { al_fail(c, "attention: a node with %lld edges is too many", (long long)md); return -1; }
    nd->maxdeg = (int)md;
    return 0;
}

static void sparse_forward(const attn_node *nd, const float *q, const float *k, const float *v,
                           const float *rel, const float *bias, float *out, float *scratch)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H;
    const int64_t rows = (int64_t)g->B * H * N, slots = g->slots;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
#pragma omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > PAR_MIN)
    {
        float *w = scratch + (size_t)al__thread_id() * nd->maxdeg;
#pragma omp for schedule(static)
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

static void sparse_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, B = g->B;
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
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    const float *aq = g->additive ? nd->aq->data : NULL, *ak = g->additive ? nd->ak->data : NULL;
    /* Pass 1 over queries: dS per slot, dQ, dsq. */
#pragma omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > PAR_MIN)
    {
#pragma omp for schedule(static)
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
                delta = FMA(Pr[t], dsr[t], delta);
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
    /* Pass 2 over keys through the transposed lists: dK, dV, dsk. */
    if (dk || dv || need_ak) {
#pragma omp parallel num_threads(nd->nthr) if (rows * nd->maxdeg * (D + Dv) > PAR_MIN)
        {
            float *wp = scratch + (size_t)al__thread_id() * 2 * nd->maxdeg, *wd = wp + nd->maxdeg;
#pragma omp for schedule(static)
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
    /* Parameter gradients, reduced over the batch in a fixed order. */
    if (dbias) {
#pragma omp parallel for schedule(static) if ((int64_t)H * slots * B > PAR_MIN)
        for (int64_t hs = 0; hs < (int64_t)H * slots; hs++) {
            int64_t h = hs / slots, s = hs % slots;
            float acc = dbias[hs];
            for (int b = 0; b < B; b++) acc += dS[((int64_t)b * H + h) * slots + s];
            dbias[hs] = acc;
        }
    }
    if (drel) {
        int K = g->noff;
#pragma omp parallel for schedule(static) if (H > 1 && (int64_t)B * slots > PAR_MIN)
        for (int h = 0; h < H; h++)
            for (int b = 0; b < B; b++) {
                const float *ds = dS + ((int64_t)b * H + h) * slots;
                float *dr = drel + (int64_t)h * K;
                for (int64_t s0 = 0; s0 < slots; s0 += K)
                    for (int o = 0; o < K; o++) dr[o] += ds[s0 + o];
            }
    }
    if (need_aq) head_dot_grad(g, q, dsq, al_grad(c, nd->aq));
    if (need_ak) head_dot_grad(g, k, dsk, al_grad(c, nd->ak));
}

/* ------------------------------------------------------------------------------------------ */
/* Graph attention with the additive score and softmax (GAT): every head of a node at once      */
/* ------------------------------------------------------------------------------------------ */
/* The generic sparse kernels run per (b, h, row): at a graph's degree of ~5 their 16-key vectors
 * are mostly masked and the per-row work (index loads, row max, three sweeps) is repeated for
 * every head. Here the vector lanes are the heads (up to HV per chunk): one walk of a node's
 * adjacency serves all of them, scores, softmax and keep bits are one vector op per slot, and with
 * v (and dO) stored heads-innermost the weighted sums and dP = dO·V are plain vector FMAs, no
 * horizontal sums. Graph keys are never absent, so there is no absent-slot handling either. */
#define HV 16   /* heads per vector */

#if defined(__AVX512F__)
typedef __m512 hv;
typedef __mmask16 hvm;
static inline hvm hv_mask(int n) { return (hvm)(n >= 16 ? 0xffffu : (1u << n) - 1); }
static inline hv hv_zero(void) { return _mm512_setzero_ps(); }
static inline hv hv_set1(float a) { return _mm512_set1_ps(a); }
static inline hv hv_load(hvm m, const float *p) { return _mm512_maskz_loadu_ps(m, p); }
static inline void hv_store(hvm m, float *p, hv x) { _mm512_mask_storeu_ps(p, m, x); }
static inline hv hv_ldl(const float *p) { return _mm512_load_ps(p); }   /* a whole 64-byte scratch line */
static inline void hv_stl(float *p, hv x) { _mm512_store_ps(p, x); }
static inline hv hv_add(hv a, hv b) { return _mm512_add_ps(a, b); }
static inline hv hv_sub(hv a, hv b) { return _mm512_sub_ps(a, b); }
static inline hv hv_mul(hv a, hv b) { return _mm512_mul_ps(a, b); }
static inline hv hv_fma(hv a, hv b, hv c) { return _mm512_fmadd_ps(a, b, c); }
static inline hv hv_max(hv a, hv b) { return _mm512_max_ps(a, b); }
static inline hv hv_exp(hv x) { return exp16(x); }
/* u > 0 ? x : slope·x per lane */
static inline hv hv_pos_or(hv u, hv x, float slope)
{
    return _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(u, _mm512_setzero_ps(), _CMP_NGT_UQ), x, _mm512_set1_ps(slope));
}
/* 1/s where s > 0, else 0 */
static inline hv hv_recip(hv s)
{
    return _mm512_maskz_div_ps(_mm512_cmp_ps_mask(s, _mm512_setzero_ps(), _CMP_GT_OQ), _mm512_set1_ps(1.f), s);
}
/* bit l of bits ? x·ik : 0 per lane */
static inline hv hv_keep(uint32_t bits, hv x, float ik) { return _mm512_maskz_mul_ps((__mmask16)bits, x, _mm512_set1_ps(ik)); }
#else
/* The same operations lane by lane (portable builds): hvm is the count of live lanes. */
typedef struct { float v[HV]; } hv;
typedef int hvm;
static inline hvm hv_mask(int n) { return n < HV ? n : HV; }
static inline hv hv_zero(void) { hv r; for (int l = 0; l < HV; l++) r.v[l] = 0.f; return r; }
static inline hv hv_set1(float a) { hv r; for (int l = 0; l < HV; l++) r.v[l] = a; return r; }
static inline hv hv_load(hvm m, const float *p) { hv r; for (int l = 0; l < HV; l++) r.v[l] = l < m ? p[l] : 0.f; return r; }
static inline void hv_store(hvm m, float *p, hv x) { for (int l = 0; l < m; l++) p[l] = x.v[l]; }
static inline hv hv_ldl(const float *p) { hv r; for (int l = 0; l < HV; l++) r.v[l] = p[l]; return r; }
static inline void hv_stl(float *p, hv x) { for (int l = 0; l < HV; l++) p[l] = x.v[l]; }
static inline hv hv_add(hv a, hv b) { for (int l = 0; l < HV; l++) a.v[l] += b.v[l]; return a; }
static inline hv hv_sub(hv a, hv b) { for (int l = 0; l < HV; l++) a.v[l] -= b.v[l]; return a; }
static inline hv hv_mul(hv a, hv b) { for (int l = 0; l < HV; l++) a.v[l] *= b.v[l]; return a; }
static inline hv hv_fma(hv a, hv b, hv c) { for (int l = 0; l < HV; l++) c.v[l] = FMA(a.v[l], b.v[l], c.v[l]); return c; }
static inline hv hv_max(hv a, hv b) { for (int l = 0; l < HV; l++) a.v[l] = b.v[l] > a.v[l] ? b.v[l] : a.v[l]; return a; }
static inline hv hv_exp(hv x) { for (int l = 0; l < HV; l++) x.v[l] = fast_expf(x.v[l]); return x; }
static inline hv hv_pos_or(hv u, hv x, float slope)
{
    for (int l = 0; l < HV; l++) x.v[l] = u.v[l] > 0.f ? x.v[l] : slope * x.v[l];
    return x;
}
static inline hv hv_recip(hv s) { for (int l = 0; l < HV; l++) s.v[l] = s.v[l] > 0.f ? 1.f / s.v[l] : 0.f; return s; }
static inline hv hv_keep(uint32_t bits, hv x, float ik)
{
    for (int l = 0; l < HV; l++) x.v[l] = (bits >> l & 1u) ? x.v[l] * ik : 0.f;
    return x;
}
#endif

/* Floats of per-thread scratch: a line per slot of the longest list, and two more. */
static size_t gat_scratch(int maxdeg) { return ((size_t)maxdeg + 2) * HV; }

/* Counter steps between the dropout hashes of consecutive heads of one slot (l·slots·golden). */
typedef struct gat_steps {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    __m512i lo, hi;   /* lanes l = 0..7 and 8..15 */
#else
    int unused;
#endif
} gat_steps;

static gat_steps gat_keep_steps(const al_attn_cfg *g)
{
    gat_steps st;
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    const __m512i step = _mm512_set1_epi64((long long)((uint64_t)g->slots * KEEP_G));
    st.lo = _mm512_mullo_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), step);
    st.hi = _mm512_add_epi64(st.lo, _mm512_slli_epi64(step, 3));
#else
    (void)g; st.unused = 0;
#endif
    return st;
}

/* Bit l = al_attn_keep(g, bh0 + l, s) for l < hc ≤ HV: the mask of hc heads of one slot. */
static inline uint32_t gat_keep_bits(const al_attn_cfg *g, const gat_steps *st, int64_t bh0, int64_t s, int hc)
{
#if defined(__AVX512F__) && defined(__AVX512DQ__)
    const __m512i x0 = _mm512_set1_epi64((long long)(g->seed + (uint64_t)(bh0 * g->slots + s) * KEEP_G));
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

/* dst (B,N,X,H) row r = b·N + i from src (B,H,N,X): the X features of every head of node i. */
static inline void heads_inner(const float *restrict src, float *restrict dst, int H, int N, int X, int64_t r)
{
    const int64_t b = r / N, i = r % N;
    float *o = dst + r * X * H;
    for (int h = 0; h < H; h++) {
        const float *s = src + ((b * H + h) * N + i) * X;
        for (int x = 0; x < X; x++) o[(int64_t)x * H + h] = s[x];
    }
}

/* Rows (b, h0 + l, i) of o (B,H,N,X), l < hc: = (or += with add) Σ_t W[t·HV + l] · Y[b, h0 + l,
 * idx[t], :] + a1[h0 + l, :]·c1[l] + a2[h0 + l, :]·c2[l] (a1, a2 (H,X) optional). Head-major rows
 * with the weight broadcast: the features are the lanes, so the result is stored as it is (no
 * transpose) and one head (H = 1) takes one FMA per slot. */
static inline void gat_wsum(const float *W, const int *idx, int64_t n, const float *Y, float *o, int add,
                            const float *a1, const float *c1, const float *a2, const float *c2,
                            int H, int N, int X, int64_t b, int64_t i, int h0, int hc)
{
    for (int l = 0; l < hc; l++) {
        const int64_t bh = b * H + h0 + l;
        const float *Yh = Y + bh * N * X;
        float *oh = o + (bh * N + i) * X;
        for (int x0 = 0; x0 < X; x0 += HV) {
            const hvm fm = hv_mask(X - x0);
            hv acc = hv_zero();
            for (int64_t t = 0; t < n; t++) acc = hv_fma(hv_set1(W[t * HV + l]), hv_load(fm, Yh + (int64_t)idx[t] * X + x0), acc);
            if (a1) acc = hv_fma(hv_load(fm, a1 + (int64_t)(h0 + l) * X + x0), hv_set1(c1[l]), acc);
            if (a2) acc = hv_fma(hv_load(fm, a2 + (int64_t)(h0 + l) * X + x0), hv_set1(c2[l]), acc);
            if (add) acc = hv_add(hv_load(fm, oh + x0), acc);
            hv_store(fm, oh + x0, acc);
        }
    }
}

/* Forward: transposes (vt, qt, kt), sq = a_q·q and sk = a_k·k per node, then per query node the
 * scores of all heads, softmax, dropout and o = Σ w·v, in one parallel region. */
static void gat_forward(attn_node *nd, const float *q, const float *k, const float *v, float *out)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, nch = (H + HV - 1) / HV;
    const int64_t rows = (int64_t)g->B * N, slots = g->slots;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    float *vt = nd->vt, *qt = nd->qt, *kt = nd->kt, *P = nd->P, *sq = nd->sq, *sk = nd->sk;
    const gat_steps st = gat_keep_steps(g);
#pragma omp parallel num_threads(nd->nthr) if ((rows + g->B * slots) * H * (D + Dv) > PAR_MIN)
    {
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < rows; r++) {
            heads_inner(v, vt, H, N, Dv, r);
            if (qt != vt) heads_inner(q, qt, H, N, D, r);
            if (kt != vt && kt != qt) heads_inner(k, kt, H, N, D, r);
        }
        /* sq, sk: a separate sweep, so that the masked loads find the copies' scalar stores
         * drained; static schedules of the same count give each thread the rows it copied. */
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++)
            for (int h0 = 0; h0 < H; h0 += HV) {
                const hvm m = hv_mask(H - h0);
                hv a = hv_zero(), b = hv_zero();
                for (int d = 0; d < D; d++) {
                    a = hv_fma(hv_load(m, nd->aqt + d * H + h0), hv_load(m, qt + (r * D + d) * H + h0), a);
                    b = hv_fma(hv_load(m, nd->akt + d * H + h0), hv_load(m, kt + (r * D + d) * H + h0), b);
                }
                hv_store(m, sq + r * H + h0, a);
                hv_store(m, sk + r * H + h0, b);
            }
        /* E: this row's scores of HV heads, one 64-byte line per slot. Kept apart from P, whose
         * slots overlap at a stride of H < HV: a masked load right after a masked store to the
         * same line waits for the store (no forwarding), which serialised the exp chain. */
        float *E = nd->scr + (size_t)al__thread_id() * gat_scratch(nd->maxdeg);
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < rows; r++) {
            const int64_t b = r / N, i = r % N, s0 = qptr[i], s1 = qptr[i + 1];
            float *Pb = P + b * slots * H;                  /* slot s of head h at Pb[s·H + h] */
            const float *skb = sk + b * N * H;
            for (int c = 0; c < nch; c++) {
                const int h0 = c * HV, hc = H - h0 < HV ? H - h0 : HV;
                const hvm m = hv_mask(hc);
                const hv sqi = hv_load(m, sq + r * H + h0);
                hv mx = hv_set1(-INFINITY), sum = hv_zero();
                for (int64_t s = s0; s < s1; s++) {   /* LeakyReLU(sq_i + sk_j) */
                    hv e = hv_add(sqi, hv_load(m, skb + (int64_t)key[s] * H + h0));
                    e = hv_pos_or(e, e, g->slope);
                    hv_stl(E + (s - s0) * HV, e);
                    mx = hv_max(mx, e);
                }
                for (int64_t s = s0; s < s1; s++) {
                    hv p = hv_exp(hv_sub(hv_ldl(E + (s - s0) * HV), mx));
                    hv_stl(E + (s - s0) * HV, p);
                    sum = hv_add(sum, p);
                }
                const hv inv = hv_recip(sum);
                for (int64_t s = s0; s < s1; s++) {   /* normalise, keep bits; E: the applied weights */
                    const hv p = hv_mul(hv_ldl(E + (s - s0) * HV), inv);
                    hv_store(m, Pb + s * H + h0, p);
                    hv w = p;
                    if (g->drop) {
                        const uint32_t kb = gat_keep_bits(g, &st, b * H + h0, s, hc);
                        nd->keepm[(b * slots + s) * nch + c] = (uint16_t)kb;
                        w = hv_keep(kb, p, g->inv_keep);
                    }
                    hv_stl(E + (s - s0) * HV, w);
                }
                gat_wsum(E, key + s0, s1 - s0, v, out, 0, NULL, NULL, NULL, NULL, H, N, Dv, b, i, h0, hc);
            }
        }
    }
}

#define GAT_PARTS 64   /* backward: fixed node chunks whose a_q, a_k gradient partials are added in order */

/* Backward: dO transposed, a pass over queries (dS per slot and head, dsq), then a pass over keys
 * through the transposed lists (dV, dK, dQ of node j, and the a_q/a_k partials of its chunk). */
static void gat_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, nch = (H + HV - 1) / HV;
    const int64_t rows = (int64_t)g->B * N, slots = g->slots;
    const float *dO = nd->out->grad;
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;
    const int need_a = nd->aq->requires_grad || nd->ak->requires_grad;
    const int nparts = rows < GAT_PARTS ? (int)(rows > 0 ? rows : 1) : GAT_PARTS;
    float *dot = al_arena_alloc(&c->arena, (size_t)(rows * Dv * H > 0 ? rows * Dv * H : 1) * sizeof(float));   /* (B,N,Dv,H) */
    float *dS = al_arena_alloc(&c->arena, (size_t)(g->B * slots * H > 0 ? g->B * slots * H : 1) * sizeof(float));   /* (B,slots,H) */
    float *dsq = al_arena_alloc(&c->arena, (size_t)(rows * H > 0 ? rows * H : 1) * sizeof(float));   /* (B,N,H) */
    /* (parts,2,D,chunks,HV): one line per feature, for the same reason as E */
    float *part = need_a ? al_arena_calloc(&c->arena, (size_t)nparts * 2 * D * nch * HV * sizeof(float)) : NULL;
    float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * gat_scratch(nd->maxdeg) * sizeof(float));
    if (!dot || !dS || !dsq || !scr || (need_a && !part)) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    const float *P = nd->P, *sq = nd->sq, *sk = nd->sk, *vt = nd->vt;
#pragma omp parallel num_threads(nd->nthr) if ((rows + g->B * slots) * H * (D + Dv) > PAR_MIN)
    {
        /* nowait: pass 1 reads the dO rows of its own queries only, which the same static
         * schedule gave this thread here; pass 2 reads other rows after pass 1's barrier. */
#pragma omp for schedule(static) nowait
        for (int64_t r = 0; r < rows; r++) heads_inner(dO, dot, H, N, Dv, r);
        /* Pass 1 over queries: dP = dO_i·v_j (dropped as the forward), delta, dS and dsq; dP kept
         * in E (one line per slot, as in the forward) between the two sweeps; pass 2 keeps the
         * weights of a key's slots there. */
        float *E = scr + (size_t)al__thread_id() * gat_scratch(nd->maxdeg), *lanes = E + (size_t)nd->maxdeg * HV;   /* 2 lines */
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; r++) {
            const int64_t b = r / N, i = r % N, s0 = qptr[i], s1 = qptr[i + 1];
            const float *Pb = P + b * slots * H, *skb = sk + b * N * H, *vtb = vt + b * N * Dv * H;
            float *dSb = dS + b * slots * H;
            for (int c0 = 0; c0 < nch; c0++) {
                const int h0 = c0 * HV;
                const hvm m = hv_mask(H - h0);
                const float *doi = dot + r * Dv * H + h0;
                hv delta = hv_zero();
                for (int64_t s = s0; s < s1; s++) {
                    const float *vj = vtb + (int64_t)key[s] * Dv * H + h0;
                    hv x = hv_zero();
                    for (int d = 0; d < Dv; d++) x = hv_fma(hv_load(m, doi + (int64_t)d * H), hv_load(m, vj + (int64_t)d * H), x);
                    if (g->drop) x = hv_keep(nd->keepm[(b * slots + s) * nch + c0], x, g->inv_keep);
                    hv_stl(E + (s - s0) * HV, x);
                    delta = hv_fma(hv_load(m, Pb + s * H + h0), x, delta);
                }
                const hv sqi = hv_load(m, sq + r * H + h0);
                hv su = hv_zero();
                for (int64_t s = s0; s < s1; s++) {
                    const hv p = hv_load(m, Pb + s * H + h0), u = hv_add(sqi, hv_load(m, skb + (int64_t)key[s] * H + h0));
                    const hv x = hv_pos_or(u, hv_mul(p, hv_sub(hv_ldl(E + (s - s0) * HV), delta)), g->slope);
                    hv_store(m, dSb + s * H + h0, x);
                    su = hv_add(su, x);
                }
                hv_store(m, dsq + r * H + h0, su);
            }
        }
        /* Pass 2 over keys, in fixed chunks of nodes: each node's gradient rows are written once. */
#pragma omp for schedule(static) nowait
        for (int pt = 0; pt < nparts; pt++) {
            float *pq = part ? part + (size_t)pt * 2 * D * nch * HV : NULL, *pk = pq ? pq + (size_t)D * nch * HV : NULL;
            for (int64_t r = rows * pt / nparts; r < rows * (pt + 1) / nparts; r++) {
                const int64_t b = r / N, j = r % N, t0 = nd->kptr[j], t1 = nd->kptr[j + 1];
                const float *Pb = P + b * slots * H, *dSb = dS + b * slots * H;
                for (int c0 = 0; c0 < nch; c0++) {
                    const int h0 = c0 * HV, hc = H - h0 < HV ? H - h0 : HV;
                    const hvm m = hv_mask(hc);
                    hv dsk = hv_zero();
                    for (int64_t t = t0; t < t1; t++) {   /* E: the applied weights of the key's slots */
                        const int64_t s = nd->kslot[t];
                        hv w = hv_load(m, Pb + s * H + h0);
                        if (g->drop) w = hv_keep(nd->keepm[(b * slots + s) * nch + c0], w, g->inv_keep);
                        hv_stl(E + (t - t0) * HV, w);
                        dsk = hv_add(dsk, hv_load(m, dSb + s * H + h0));
                    }
                    const hv dsqj = hv_load(m, dsq + r * H + h0);
                    float *lk = lanes, *lq = lanes + HV;   /* dsk, dsq of each head */
                    hv_stl(lk, dsk); hv_stl(lq, dsqj);
                    const int kin = dk && dk == dv && D == Dv, qin = dq && dq == dv && D == Dv;   /* q, k are v (GAT) */
                    if (dv)   /* dV = Σ w·dO over the key's slots, with a_k·dsk and a_q·dsq when they share the row */
                        gat_wsum(E, nd->kq + t0, t1 - t0, dO, dv, 1, kin ? nd->ak->data : NULL, lk, qin ? nd->aq->data : NULL,
                                 lq, H, N, Dv, b, j, h0, hc);
                    if (dk && !kin) gat_wsum(E, NULL, 0, NULL, dk, 1, nd->ak->data, lk, NULL, NULL, H, N, D, b, j, h0, hc);
                    if (dq && !qin) gat_wsum(E, NULL, 0, NULL, dq, 1, nd->aq->data, lq, NULL, NULL, H, N, D, b, j, h0, hc);
                    if (pq)
                        for (int d = 0; d < D; d++) {
                            float *a = pq + ((int64_t)d * nch + c0) * HV, *e = pk + ((int64_t)d * nch + c0) * HV;
                            hv_stl(a, hv_fma(dsqj, hv_load(m, nd->qt + (r * D + d) * H + h0), hv_ldl(a)));
                            hv_stl(e, hv_fma(dsk, hv_load(m, nd->kt + (r * D + d) * H + h0), hv_ldl(e)));
                        }
                }
            }
        }
    }
    /* a_q, a_k gradients: the chunk partials added in chunk order (independent of the threads) */
    for (int w = 0; w < 2 && need_a; w++) {
        al_tensor *a = w ? nd->ak : nd->aq;
        if (!a->requires_grad) continue;
        float *da = al_grad(c, a);
        if (!da) return;
        for (int h = 0; h < H; h++)
            for (int d = 0; d < D; d++) {
                float acc = da[h * D + d];
                for (int pt = 0; pt < nparts; pt++) acc += part[(((size_t)pt * 2 + w) * D + d) * nch * HV + h];
                da[h * D + d] = acc;
            }
    }
}

/* Scratch of the gat path (arena): transposed inputs, sq/sk, P, the keep bits, a_q/a_k as (D,H). */
static int gat_setup(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int H = g->H, D = g->D, nch = (H + HV - 1) / HV;
    const int64_t rows = (int64_t)g->B * g->N, nslot = g->B * g->slots > 0 ? g->B * g->slots : 1;
    al_arena *a = &c->arena;
    nd->vt = al_arena_alloc(a, (size_t)(rows * g->Dv * H) * sizeof(float));
    nd->qt = nd->q->data == nd->v->data && D == g->Dv ? nd->vt : al_arena_alloc(a, (size_t)(rows * D * H) * sizeof(float));
    nd->kt = nd->k->data == nd->v->data && D == g->Dv ? nd->vt
           : nd->k->data == nd->q->data ? nd->qt : al_arena_alloc(a, (size_t)(rows * D * H) * sizeof(float));
    nd->sq = al_arena_alloc(a, (size_t)rows * H * sizeof(float));
    nd->sk = al_arena_alloc(a, (size_t)rows * H * sizeof(float));
    nd->aqt = al_arena_alloc(a, (size_t)D * H * sizeof(float));
    nd->akt = al_arena_alloc(a, (size_t)D * H * sizeof(float));
    nd->P = al_arena_alloc(a, (size_t)nslot * H * sizeof(float));
    nd->keepm = g->drop ? al_arena_alloc(a, (size_t)nslot * nch * sizeof(uint16_t)) : NULL;
    nd->scr = al_arena_alloc(a, (size_t)nd->nthr * gat_scratch(nd->maxdeg) * sizeof(float));
    if (!nd->scr || !nd->vt || !nd->qt || !nd->kt || !nd->sq || !nd->sk || !nd->aqt || !nd->akt || !nd->P || (g->drop && !nd->keepm)) {
        al_fail(c, "attention: out of memory");
        return -1;
    }
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++) {
            nd->aqt[d * H + h] = nd->aq->data[h * D + d];
            nd->akt[d * H + h] = nd->ak->data[h * D + d];
        }
    return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The op                                                                                       */
/* ------------------------------------------------------------------------------------------ */

static void attention_backward(al_ctx *c, void *p)
{
    attn_node *nd = p;
    if (!nd->out->grad) return;
    if (nd->pat.kind == AL_PAT_FULL) full_backward(c, nd);
    else if (nd->gat) gat_backward(c, nd);
    else sparse_backward(c, nd);
}

static int wants_grad(al_tensor *t) { return t && t->requires_grad; }

al_tensor *al_attention(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v,
                        al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias)
{
    if (!al_ok(c) || !q || !k || !v) return NULL;
    al_attn_cfg g;
    if (al_attn_setup(c, "attention", d, q, k, v, a_q, a_k, rel_bias, bias, &g) != 0) return NULL;
    const int N = g.N;
    const int64_t rows = (int64_t)g.B * g.H * N;
    al_tensor *out = al_new(c, 4, (int[]){g.B, g.H, N, g.Dv});
    attn_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    if (!out || !nd) return al_ok(c) ? al_fail(c, "attention: out of memory") : NULL;
    nd->g = g; nd->pat = d->pattern;
    nd->q = q; nd->k = k; nd->v = v; nd->aq = a_q; nd->ak = a_k; nd->rel = rel_bias; nd->bias = bias; nd->out = out;
    nd->nthr = al_threads();
    nd->gat = d->pattern.kind == AL_PAT_GRAPH && g.additive && !g.relu && !bias;
    if (g.additive && !nd->gat) {
        nd->sq = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
        nd->sk = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
        if (!nd->sq || !nd->sk) return al_fail(c, "attention: out of memory");
        head_dot(&g, q->data, a_q->data, nd->sq);
        head_dot(&g, k->data, a_k->data, nd->sk);
    }
    al_tensor *w = NULL;
    if (d->pattern.kind == AL_PAT_FULL) {
        if (d->weights) { w = al_new(c, 4, (int[]){g.B, g.H, N, N}); if (!w) return NULL; }
        nd->lse = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
        const float *bd = bias ? bias->data : NULL;
        float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * full_scratch_for(&g, bd, 0) * sizeof(float));
        if (!nd->lse || !scratch) return al_fail(c, "attention: out of memory");
        if (use_full16(&g, bd)) al__full16_forward(&g, q->data, k->data, v->data, out->data, nd->lse, scratch, nd->nthr);
        else full_forward(&g, q->data, k->data, v->data, nd->sq, nd->sk, bd, out->data, nd->lse, scratch, nd->nthr);
        if (w) full_weights(&g, q->data, k->data, nd->sq, nd->sk, bd, nd->lse, w->data, scratch, nd->nthr);
    } else if (nd->gat) {
        if (sparse_build(c, &d->pattern, &g, nd) != 0 || gat_setup(c, nd) != 0) return NULL;
        gat_forward(nd, q->data, k->data, v->data, out->data);
        if (d->weights) {   /* P is (B,slots,H): the weights are (B,H,slots) */
            w = al_new(c, 3, (int[]){g.B, g.H, g.slots > 0 ? (int)g.slots : 1});
            if (!w) return NULL;
            if (g.slots == 0) w->data[0] = 0.f;
            for (int64_t bh = 0; bh < (int64_t)g.B * g.H; bh++)
                for (int64_t s = 0; s < g.slots; s++)
                    w->data[bh * g.slots + s] = nd->P[((bh / g.H) * g.slots + s) * g.H + bh % g.H];
        }
    } else {
        if (sparse_build(c, &d->pattern, &g, nd) != 0) return NULL;
        if (g.drop) {
            nd->keepb = al_arena_alloc(&c->arena, (size_t)(rows / N * g.slots > 0 ? rows / N * g.slots : 1));
            if (!nd->keepb) return al_fail(c, "attention: out of memory");
            keep_bytes(&g, nd->keepb);
        }
        nd->P = al_arena_alloc(&c->arena, (size_t)(rows / N * g.slots > 0 ? rows / N * g.slots : 1) * sizeof(float));
        if (!nd->P) return al_fail(c, "attention: out of memory");
        float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * nd->maxdeg * sizeof(float));
        if (!scratch) return al_fail(c, "attention: out of memory");
        sparse_forward(nd, q->data, k->data, v->data, rel_bias ? rel_bias->data : NULL, bias ? bias->data : NULL,
                       out->data, scratch);
        if (d->weights) {
            if (g.noff) w = al_new(c, 4, (int[]){g.B, g.H, N, g.noff});
            else w = al_new(c, 3, (int[]){g.B, g.H, g.slots > 0 ? (int)g.slots : 1});
            if (!w) return NULL;
            if (g.slots > 0) memcpy(w->data, nd->P, (size_t)(rows / N * g.slots) * sizeof(float));
            else w->data[0] = 0.f;   /* an empty graph: no slots; (B,H,1) of zeros stands in */
        }
    }
    if (d->weights) *d->weights = w;
    if (c->grad_enabled && (wants_grad(q) || wants_grad(k) || wants_grad(v) || wants_grad(a_q) ||
                            wants_grad(a_k) || wants_grad(rel_bias) || wants_grad(bias))) {
        out->requires_grad = 1;
        al_tape_push(c, attention_backward, nd);
    }
    return al_ok(c) ? out : NULL;
}
