/* full16.c — full dot-product softmax attention for heads of size 16 (D = Dv = 16, the
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
 * of threads. Without AVX-512 al__full16_ok is false and the generic kernel runs.
 */
#include "attention/attention_impl.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include <math.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define F16_BK 128   /* keys per tile: a (128, 16) strip of scores is 8 KiB of L1 */
#define LOG2E_F 1.44269504088896341f
#define LN2_F 0.693147180559945309f

#if defined(__AVX512F__)

const char *al__full16_path(void) { return "16 queries per vector (avx512)"; }

int al__full16_ok(const al_attn_cfg *g)
{
    return !g->additive && !g->relu && !g->drop && g->D == 16 && g->Dv == 16;
}

size_t al__full16_scratch(const al_attn_cfg *g, int backward)
{
    if (!backward) return (size_t)F16_BK * 16 + 16 * 16;   /* a score strip and a 16×16 transpose */
    size_t npad = (size_t)(g->N + 15) / 16 * 16;
    return 3 * npad * 16 + 2 * npad + 4 * (size_t)F16_BK * 16;
}

/* 2^x: al__exp2_v16 of core/exp_impl.h (the scores here are in log2 units: log2(e) is folded into
 * the query scale). */
/* t[d·16 + i] = alpha · X[i·16 + d] for rows i < n of X, 0 for i ≥ n (16 rows of 16 floats). */
static void transpose16(const float *X /* (16, 16) */, int n, float alpha, float *t /* (16, 16) */)
{
    for (int d = 0; d < 16; d++)
        for (int i = 0; i < 16; i++) t[d * 16 + i] = i < n ? alpha * X[i * 16 + d] : 0.f;
}

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

/* acc[j] += Σ_i W[j·16 + i] · R[i] for the n keys j of a tile: the key's 16 per-query weights
 * (lanes of W) against the block's 16 rows R, eight keys at a time. */
static void wt_rows_acc(const float *W /* (n, 16) */, const __m512 R[16], int n, float *acc /* (n, 16) */)
{
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m512 a[8];
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) a[k] = _mm512_loadu_ps(acc + (j + k) * 16);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++)
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) a[k] = _mm512_fmadd_ps(_mm512_set1_ps(W[(j + k) * 16 + i]), R[i], a[k]);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) _mm512_storeu_ps(acc + (j + k) * 16, a[k]);
    }
    for (; j < n; j++) {
        __m512 a = _mm512_loadu_ps(acc + j * 16);
#pragma GCC unroll 16
        for (int i = 0; i < 16; i++) a = _mm512_fmadd_ps(_mm512_set1_ps(W[j * 16 + i]), R[i], a);
        _mm512_storeu_ps(acc + j * 16, a);
    }
}

/* Queries i0 .. i0+nq−1 (nq ≤ 16) of one head: out rows and lse. sbuf: F16_BK·16 floats, tb: 256. */
static void forward_block(const float *Q /* (N,16) */, const float *K /* (N,16) */, const float *V /* (N,16) */, int N, int i0, int nq, float scale,
                          float *out /* (N,16) */, float *lse /* (N) */, float *sbuf /* (F16_BK, 16) */, float *tb /* (16, 16) */)
{
    __m512 qt[16], ot[16];
    transpose16(Q + (int64_t)i0 * 16, nq, scale * LOG2E_F, tb);
#pragma GCC unroll 16
    for (int d = 0; d < 16; d++) { qt[d] = _mm512_loadu_ps(tb + d * 16); ot[d] = _mm512_setzero_ps(); }
    __m512 m = _mm512_set1_ps(-INFINITY), l = _mm512_setzero_ps();
    for (int j0 = 0; j0 < N; j0 += F16_BK) {
        const int nk = N - j0 < F16_BK ? N - j0 : F16_BK;
        const float *Kt = K + (int64_t)j0 * 16, *Vt = V + (int64_t)j0 * 16;
        __m512 mx = _mm512_set1_ps(-INFINITY);
        dots_t(Kt, qt, nk, sbuf, &mx);
        int j;
        /* online softmax: rescale the running sums to the new max (≈0 on the first tile, m = −inf) */
        __m512 mn = _mm512_max_ps(m, mx), corr = al__exp2_v16(_mm512_sub_ps(m, mn));
        l = _mm512_mul_ps(l, corr);
#pragma GCC unroll 16
        for (int e = 0; e < 16; e++) ot[e] = _mm512_mul_ps(ot[e], corr);
        m = mn;
        /* the weights in one sweep of independent exps, then P·V (two partial sums of l for latency) */
        __m512 l1 = _mm512_setzero_ps();
        for (j = 0; j + 2 <= nk; j += 2) {
            __m512 p0 = al__exp2_v16(_mm512_sub_ps(_mm512_loadu_ps(sbuf + j * 16), m));
            __m512 p1 = al__exp2_v16(_mm512_sub_ps(_mm512_loadu_ps(sbuf + j * 16 + 16), m));
            _mm512_storeu_ps(sbuf + j * 16, p0);
            _mm512_storeu_ps(sbuf + j * 16 + 16, p1);
            l = _mm512_add_ps(l, p0);
            l1 = _mm512_add_ps(l1, p1);
        }
        if (j < nk) {
            __m512 p0 = al__exp2_v16(_mm512_sub_ps(_mm512_loadu_ps(sbuf + j * 16), m));
            _mm512_storeu_ps(sbuf + j * 16, p0);
            l = _mm512_add_ps(l, p0);
        }
        l = _mm512_add_ps(l, l1);
        for (j = 0; j < nk; j++) {
            __m512 p = _mm512_loadu_ps(sbuf + j * 16);
#pragma GCC unroll 16
            for (int e = 0; e < 16; e++) ot[e] = _mm512_fmadd_ps(p, _mm512_set1_ps(Vt[j * 16 + e]), ot[e]);
        }
    }
#pragma GCC unroll 16
    for (int e = 0; e < 16; e++) _mm512_storeu_ps(tb + e * 16, ot[e]);
    float lv[16], mv[16];
    _mm512_storeu_ps(lv, l);
    _mm512_storeu_ps(mv, m);
    for (int i = 0; i < nq; i++) {
        float inv = lv[i] > 0.f ? 1.0f / lv[i] : 0.f;
        float *o = out + (int64_t)(i0 + i) * 16;
        for (int e = 0; e < 16; e++) o[e] = tb[e * 16 + i] * inv;
        lse[i0 + i] = lv[i] > 0.f ? (mv[i] + log2f(lv[i])) * LN2_F : INFINITY;   /* natural units */
    }
}

void al__full16_forward(const al_attn_cfg *g, const float *q /* (B,H,N,16) */, const float *k /* (B,H,N,16) */, const float *v /* (B,H,N,16) */, float *out /* (B,H,N,16) */,
                        float *lse /* (B,H,N) */, float *scratch /* (nthr, al__full16_scratch) */, int nthr)
{
    const int N = g->N, nqb = (N + 15) / 16;
    const int64_t tasks = (int64_t)g->B * g->H * nqb;
    const size_t per = al__full16_scratch(g, 0);
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel num_threads(nthr) if (tasks > 1 && tasks * 16 * (int64_t)N > AL_PAR_MIN / 8)")
    {
        float *sbuf = scratch + (size_t)al__thread_id() * per, *tb = sbuf + F16_BK * 16;
        AL_OMP("omp for schedule(static)")
        for (int64_t t = 0; t < tasks; t++) {
            int64_t bh = t / nqb;
            int i0 = (int)(t % nqb) * 16, nq = N - i0 < 16 ? N - i0 : 16;
            const int64_t o = bh * N * 16;
            forward_block(q + o, k + o, v + o, N, i0, nq, g->scale, out + o, lse + bh * N, sbuf, tb);
        }
    }
}

/* One head's dQ, dK, dV (each NULL when not wanted; added to what is there). ws: al__full16_scratch(g, 1). */
static void backward_head(const float *Q /* (N,16) */, const float *K /* (N,16) */, const float *V /* (N,16) */, const float *dO /* (N,16) */, const float *lse /* (N) */,
                          const float *delta /* (N) */, int N, float scale, float *dq /* (N,16) or NULL */, float *dk /* (N,16) or NULL */, float *dv /* (N,16) or NULL */, float *ws /* (al__full16_scratch(g, 1)) */)
{
    const int nqb = (N + 15) / 16, npad = nqb * 16;
    float *qtb = ws, *dotb = qtb + (size_t)npad * 16, *dqtb = dotb + (size_t)npad * 16;
    float *lseb = dqtb + (size_t)npad * 16, *dlb = lseb + npad;
    float *pbuf = dlb + npad, *dsbuf = pbuf + F16_BK * 16, *kacc = dsbuf + F16_BK * 16, *vacc = kacc + F16_BK * 16;
    /* The blocks transposed (padding lanes: zero rows and lse = +inf, so their weights are ≤ 3e−38
     * and meet only zero rows of Q and dO: they add exactly 0 to dK and dV). */
    for (int b = 0; b < nqb; b++) {
        int i0 = b * 16, nq = N - i0 < 16 ? N - i0 : 16;
        transpose16(Q + (int64_t)i0 * 16, nq, scale * LOG2E_F, qtb + (size_t)b * 256);
        transpose16(dO + (int64_t)i0 * 16, nq, 1.f, dotb + (size_t)b * 256);
    }
    for (int i = 0; i < npad; i++) { lseb[i] = i < N ? lse[i] * LOG2E_F : INFINITY; dlb[i] = i < N ? delta[i] : 0.f; }
    if (dq) memset(dqtb, 0, (size_t)npad * 16 * sizeof(float));
    const __m512 sc = _mm512_set1_ps(scale);
    for (int j0 = 0; j0 < N; j0 += F16_BK) {
        const int nk = N - j0 < F16_BK ? N - j0 : F16_BK;
        const float *Kt = K + (int64_t)j0 * 16, *Vt = V + (int64_t)j0 * 16;
        if (dk) memset(kacc, 0, (size_t)nk * 16 * sizeof(float));
        if (dv) memset(vacc, 0, (size_t)nk * 16 * sizeof(float));
        for (int b = 0; b < nqb; b++) {
            const int i0 = b * 16, nq = N - i0 < 16 ? N - i0 : 16;
            __m512 R[16];
            {   /* P = e^(S − lse) = 2^(S·log2e − lse·log2e) with Qᵀ (scaled by scale·log2e) resident */
#pragma GCC unroll 16
                for (int d = 0; d < 16; d++) R[d] = _mm512_loadu_ps(qtb + (size_t)b * 256 + d * 16);
                const __m512 L = _mm512_loadu_ps(lseb + i0);
                dots_t(Kt, R, nk, pbuf, NULL);
                for (int j = 0; j < nk; j++)
                    _mm512_storeu_ps(pbuf + j * 16, al__exp2_v16(_mm512_sub_ps(_mm512_loadu_ps(pbuf + j * 16), L)));
            }
            {   /* dS = scale · P∘(dO·Vᵀ − δ) with dOᵀ resident */
#pragma GCC unroll 16
                for (int e = 0; e < 16; e++) R[e] = _mm512_loadu_ps(dotb + (size_t)b * 256 + e * 16);
                const __m512 Dl = _mm512_loadu_ps(dlb + i0);
                dots_t(Vt, R, nk, dsbuf, NULL);
                for (int j = 0; j < nk; j++) {
                    __m512 p = _mm512_mul_ps(_mm512_loadu_ps(pbuf + j * 16), sc);
                    _mm512_storeu_ps(dsbuf + j * 16, _mm512_mul_ps(p, _mm512_sub_ps(_mm512_loadu_ps(dsbuf + j * 16), Dl)));
                }
            }
            if (dv) {   /* dV_j += Σ_i P_ij · dO_i with the block's dO rows resident */
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++)
                    R[i] = i < nq ? _mm512_loadu_ps(dO + (int64_t)(i0 + i) * 16) : _mm512_setzero_ps();
                wt_rows_acc(pbuf, R, nk, vacc);
            }
            if (dk) {   /* dK_j += Σ_i dS_ij · Q_i with the block's Q rows resident */
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++)
                    R[i] = i < nq ? _mm512_loadu_ps(Q + (int64_t)(i0 + i) * 16) : _mm512_setzero_ps();
                wt_rows_acc(dsbuf, R, nk, kacc);
            }
            if (dq) {   /* dQᵀ[d] += Σ_j dS_j · K[j,d] with dQᵀ resident */
                float *acc = dqtb + (size_t)b * 256;
#pragma GCC unroll 16
                for (int d = 0; d < 16; d++) R[d] = _mm512_loadu_ps(acc + d * 16);
                for (int j = 0; j < nk; j++) {
                    __m512 x = _mm512_loadu_ps(dsbuf + j * 16);
#pragma GCC unroll 16
                    for (int d = 0; d < 16; d++) R[d] = _mm512_fmadd_ps(x, _mm512_set1_ps(Kt[j * 16 + d]), R[d]);
                }
#pragma GCC unroll 16
                for (int d = 0; d < 16; d++) _mm512_storeu_ps(acc + d * 16, R[d]);
            }
        }
        for (int64_t x = 0; x < (int64_t)nk * 16; x++) {
            if (dk) dk[(int64_t)j0 * 16 + x] += kacc[x];
            if (dv) dv[(int64_t)j0 * 16 + x] += vacc[x];
        }
    }
    if (dq)
        for (int b = 0; b < nqb; b++) {
            int i0 = b * 16, nq = N - i0 < 16 ? N - i0 : 16;
            for (int i = 0; i < nq; i++)
                for (int d = 0; d < 16; d++) dq[(int64_t)(i0 + i) * 16 + d] += dqtb[(size_t)b * 256 + d * 16 + i];
        }
}

void al__full16_backward(const al_attn_cfg *g, const float *q /* (B,H,N,16) */, const float *k /* (B,H,N,16) */, const float *v /* (B,H,N,16) */, const float *dO /* (B,H,N,16) */,
                         const float *lse /* (B,H,N) */, const float *delta /* (B,H,N) */, float *dq /* (B,H,N,16) or NULL */, float *dk /* (B,H,N,16) or NULL */, float *dv /* (B,H,N,16) or NULL */, float *scratch /* (nthr, al__full16_scratch) */,
                         int nthr)
{
    const int N = g->N;
    const int64_t heads = (int64_t)g->B * g->H;
    const size_t per = al__full16_scratch(g, 1);
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel num_threads(nthr) if (heads > 1 && heads * (int64_t)N * N > AL_PAR_MIN / 8)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        AL_OMP("omp for schedule(static)")
        for (int64_t bh = 0; bh < heads; bh++) {
            const int64_t o = bh * N * 16;
            backward_head(q + o, k + o, v + o, dO + o, lse + bh * N, delta + bh * N, N, g->scale,
                          dq ? dq + o : NULL, dk ? dk + o : NULL, dv ? dv + o : NULL, ws);
        }
    }
}

#else   /* no AVX-512: the generic kernel handles every shape */

const char *al__full16_path(void) { return "generic tiles (" AL_SIMD_ISA ")"; }
int al__full16_ok(const al_attn_cfg *g) { (void)g; return 0; }
size_t al__full16_scratch(const al_attn_cfg *g, int backward) { (void)g; (void)backward; return 0; }
void al__full16_forward(const al_attn_cfg *g, const float *q /* (B,H,N,16) */, const float *k /* (B,H,N,16) */, const float *v /* (B,H,N,16) */, float *out /* (B,H,N,16) */,
                        float *lse /* (B,H,N) */, float *scratch /* (nthr, al__full16_scratch) */, int nthr)
{
    (void)g; (void)q; (void)k; (void)v; (void)out; (void)lse; (void)scratch; (void)nthr;
}
void al__full16_backward(const al_attn_cfg *g, const float *q /* (B,H,N,16) */, const float *k /* (B,H,N,16) */, const float *v /* (B,H,N,16) */, const float *dO /* (B,H,N,16) */,
                         const float *lse /* (B,H,N) */, const float *delta /* (B,H,N) */, float *dq /* (B,H,N,16) or NULL */, float *dk /* (B,H,N,16) or NULL */, float *dv /* (B,H,N,16) or NULL */, float *scratch /* (nthr, al__full16_scratch) */,
                         int nthr)
{
    (void)g; (void)q; (void)k; (void)v; (void)dO; (void)lse; (void)delta; (void)dq; (void)dk; (void)dv;
    (void)scratch; (void)nthr;
}
#endif
