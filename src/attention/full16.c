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
#include "attention/attention_impl.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include <math.h>
#include <string.h>
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define F16_BK 128   /* keys per tile: a (128, 16) strip of scores is 8 KiB of L1 */
#define LOG2E_F 1.44269504088896341f
#define LN2_F 0.693147180559945309f

long al__full16_runs;

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
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
static void transpose_block(const float *X /* (qb, ld) */, int64_t ld, int n, int qb, float alpha, float *t /* (16, qb) */)
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

/* The backward's scratch for one head, in blocks of qb queries. */
typedef struct {
    int nqb, npad;
    float *qtb, *dotb, *dqtb;   /* (npad, 16): Qᵀ (scaled by scale·log2e), dOᵀ, dQᵀ block by block */
    float *lseb, *dlb;          /* (npad): lse·log2e, δ */
    float *pbuf, *dsbuf;        /* (F16_BK, qb): P and dS of a key tile against a block */
    float *kacc, *vacc;         /* (F16_BK, 16): the tile's dK, dV sums */
} f16_bwd;

/* Lays out ws and fills it: the blocks transposed (padding lanes: zero rows and lse = +inf, so
 * their weights are ≤ 3e−38 and meet only zero rows of Q and dO: they add exactly 0 to dK and dV),
 * lse in log2 units, δ, and dQᵀ zeroed when wanted. */
static f16_bwd bwd_begin(const float *Q /* (N, ldq) */, int64_t ldq, const float *dO /* (N, ldo) */, int64_t ldo, const float *lse /* (N) */,
                         const float *delta /* (N) */, int N, float scale, int qb, int want_dq, float *ws /* (al__full16_scratch(g, 1)) */)
{
    f16_bwd w;
    w.nqb = (N + qb - 1) / qb; w.npad = w.nqb * qb;
    w.qtb = ws; w.dotb = w.qtb + (size_t)w.npad * 16; w.dqtb = w.dotb + (size_t)w.npad * 16;
    w.lseb = w.dqtb + (size_t)w.npad * 16; w.dlb = w.lseb + w.npad;
    w.pbuf = w.dlb + w.npad; w.dsbuf = w.pbuf + (size_t)F16_BK * qb;
    w.kacc = w.dsbuf + (size_t)F16_BK * qb; w.vacc = w.kacc + (size_t)F16_BK * 16;
    for (int b = 0; b < w.nqb; b++) {
        int i0 = b * qb, nq = N - i0 < qb ? N - i0 : qb;
        transpose_block(Q + (int64_t)i0 * ldq, ldq, nq, qb, scale * LOG2E_F, w.qtb + (size_t)b * qb * 16);
        transpose_block(dO + (int64_t)i0 * ldo, ldo, nq, qb, 1.f, w.dotb + (size_t)b * qb * 16);
    }
    for (int i = 0; i < w.npad; i++) { w.lseb[i] = i < N ? lse[i] * LOG2E_F : INFINITY; w.dlb[i] = i < N ? delta[i] : 0.f; }
    if (want_dq) memset(w.dqtb, 0, (size_t)w.npad * 16 * sizeof(float));
    return w;
}

/* The forward's last step for queries i0 .. i0+nq−1 of a 16-query block: out rows = Oᵀ / l and
 * lse = (m + log2 l)·ln 2 (natural units), from the lanes' l, m and the block's Oᵀ (16, 16). */
static void fwd_finish(const float *lv /* (16) */, const float *mv /* (16) */, const float *ot /* (16, 16) */, int i0, int nq,
                       float *out /* (N, ldo) */, int64_t ldo, float *lse /* (N) */)
{
    float tr[256];   /* Oᵀ back to rows, then each row times its 1/l: the same products */
#if defined(__AVX512F__)
    tr16x16(ot, 16, 16, 1.f, tr, 16);
#else
    for (int g = 0; g < 16; g += 8) tr8x16(ot + g * 16, 16, 8, 1.f, tr + g, 16);
#endif
    for (int i = 0; i < nq; i++) {
        float inv = lv[i] > 0.f ? 1.0f / lv[i] : 0.f;
        float *o = out + (int64_t)(i0 + i) * ldo;
#if defined(__AVX512F__)
        _mm512_storeu_ps(o, _mm512_mul_ps(_mm512_loadu_ps(tr + i * 16), _mm512_set1_ps(inv)));
#else
        for (int h = 0; h < 2; h++) _mm256_storeu_ps(o + 8 * h, _mm256_mul_ps(_mm256_loadu_ps(tr + i * 16 + 8 * h), _mm256_set1_ps(inv)));
#endif
        lse[i0 + i] = lv[i] > 0.f ? (mv[i] + log2f(lv[i])) * LN2_F : INFINITY;
    }
}

/* After a key tile j0 .. j0+nk−1: its dK, dV sums added to the rows (NULL: not wanted); fresh: the rows
 * hold garbage and get 0 + sum, the bits of adding to a zeroed gradient (−0 lands as +0). */
static void bwd_tile_end(const f16_bwd *w, int j0, int nk, float *dk /* (N, ld) or NULL */, float *dv /* (N, ld) or NULL */, int64_t ld,
                         int fresh)
{
    for (int j = 0; j < nk; j++)
        for (int d = 0; d < 16; d++) {
            const int64_t at = (int64_t)(j0 + j) * ld + d;
            if (dk) dk[at] = (fresh ? 0.f : dk[at]) + w->kacc[j * 16 + d];
            if (dv) dv[at] = (fresh ? 0.f : dv[at]) + w->vacc[j * 16 + d];
        }
}

/* At the end: dQ += dQᵀ transposed back (blocks of qb queries); fresh as bwd_tile_end. */
static void bwd_end(const f16_bwd *w, int N, int qb, float *dq /* (N, ld) */, int64_t ld, int fresh)
{
    for (int b = 0; b < w->nqb; b++) {
        int i0 = b * qb, nq = N - i0 < qb ? N - i0 : qb;
#if defined(__AVX512F__)
        if (qb == 16) {   /* dQᵀ back to rows in registers, then the same adds row by row */
            float tr[256];
            tr16x16(w->dqtb + (size_t)b * 256, 16, 16, 1.f, tr, 16);
            for (int i = 0; i < nq; i++) {
                float *p = dq + (int64_t)(i0 + i) * ld;
                _mm512_storeu_ps(p, _mm512_add_ps(fresh ? _mm512_setzero_ps() : _mm512_loadu_ps(p), _mm512_loadu_ps(tr + i * 16)));
            }
            continue;
        }
#else
        if (qb == 8) {   /* AVX2: dQᵀ (16, 8) back to rows in registers, then the same adds row by row */
            float tr[128];   /* tr[i·16 + d] = dQᵀ[d·8 + i]: two 8 × 8 blocks of features */
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
                for (int j = 0; j < 8; j++) r[j] = _mm256_loadu_ps(w->dqtb + (size_t)b * 128 + (size_t)(8 * h + j) * 8);
                al__tr8(r);
                for (int i = 0; i < 8; i++) _mm256_storeu_ps(tr + i * 16 + 8 * h, r[i]);
            }
            for (int i = 0; i < nq; i++) {
                float *p = dq + (int64_t)(i0 + i) * ld;
                for (int h = 0; h < 2; h++)
                    _mm256_storeu_ps(p + 8 * h, _mm256_add_ps(fresh ? _mm256_setzero_ps() : _mm256_loadu_ps(p + 8 * h),
                                                              _mm256_loadu_ps(tr + i * 16 + 8 * h)));
            }
            continue;
        }
#endif
        for (int i = 0; i < nq; i++)
            for (int d = 0; d < 16; d++) {
                float *p = dq + (int64_t)(i0 + i) * ld + d;
                *p = (fresh ? 0.f : *p) + w->dqtb[(size_t)b * qb * 16 + d * qb + i];
            }
    }
}

/* ---------------- shared by both ISAs: a few queries, keys in the lanes ----------------
 * A partial block of nq queries (N = 49: 16 + 16 + 16 + 1) costs the lane kernels as much as a
 * full one. With nq ≤ al__full16_few_max the queries run one at a time with the roles swapped:
 * the keys in the lanes for the scores (Kᵀ and Vᵀ of the head, once per head) and the feature
 * index in the lanes for P·V and the gradient rows. Each score, exp, sum and FMA chain is the lane
 * kernels' for that query, in the same order (test_full_d16_twin checks both paths against the
 * per-query maths bit for bit); the padding lanes the block would have carried add exact zeros
 * there, so skipping them changes nothing. */
int al__full16_few_max = 4;

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
static void few_transpose(const float *X /* (N,16) */, int N, int np, float *xt /* (16, np) */)
{
    for (int j0 = 0; j0 < np; j0 += 16) tr16x16(X + (size_t)j0 * 16, 16, N - j0, 1.f, xt + j0, np);
}
#else
static void few_transpose(const float *X /* (N,16) */, int N, int np, float *xt /* (16, np) */)
{
    for (int d = 0; d < 16; d++) {
        float *o = xt + (size_t)d * np;
        for (int j = 0; j < N; j++) o[j] = X[(size_t)j * 16 + d];
        for (int j = N; j < np; j++) o[j] = 0.f;
    }
}
#endif
static int few_np(int N) { return (N + 15) / 16 * 16; }

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

/* acc[t] (16 floats) = w_a[t] · r_a + acc[t] for a = 0 .. NQ−1 in query order, for the keys t < nk
 * of a tile: each key's next NQ steps of its chain over the queries (wt_rows_acc's steps). */
static inline __attribute__((always_inline)) void few_rows_acc(int NQ, const float *w /* (NQ, F16_BK) */, const float *const *r,
                                                              int nk, float *acc /* (nk, 16) */)
{
    al_vf rv[FEW_MAX][FEW_C];
    for (int a = 0; a < NQ; a++)
        for (int c = 0; c < FEW_C; c++) rv[a][c] = al_v_load(r[a] + c * AL_VL);
    for (int t = 0; t < nk; t++)
        for (int c = 0; c < FEW_C; c++) {
            al_vf x = al_v_load(acc + t * 16 + c * AL_VL);
            for (int a = 0; a < NQ; a++) x = al_v_fma(al_v_set1(w[a * F16_BK + t]), rv[a][c], x);
            al_v_store(acc + t * 16 + c * AL_VL, x);
        }
}

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

/* Queries i0 .. i0+NQ−1 of one head (V: (N,16) rows; kt: Kᵀ from few_transpose), as forward_block's
 * lanes for them: out rows and lse. sb: FEW_MAX·F16_BK floats. */
static inline __attribute__((always_inline)) void few_forward_n(int NQ, const float *Q /* (N, ldq) */, int64_t ldq, const float *V,
                                                               const float *kt, int N, int i0, float scale, float *out /* (N, ldo) */,
                                                               int64_t ldo, float *lse /* (N) */, float *sb)
{
    const int np = few_np(N);
    float q[FEW_MAX][16], o[FEW_MAX * 16], m[FEW_MAX], l[FEW_MAX];
    for (int a = 0; a < NQ; a++) {
        for (int d = 0; d < 16; d++) q[a][d] = scale * LOG2E_F * Q[(int64_t)(i0 + a) * ldq + d];
        for (int e = 0; e < 16; e++) o[a * 16 + e] = 0.f;
        m[a] = -INFINITY; l[a] = 0.f;
    }
    for (int j0 = 0; j0 < N; j0 += F16_BK) {
        const int nk = N - j0 < F16_BK ? N - j0 : F16_BK;
        for (int a = 0; a < NQ; a++) few_dots(kt, np, j0, nk, q[a], sb + a * F16_BK);
        __m128 mxv[FEW_MAX];   /* vmaxss(mx, s) = vmaxps's lane: s unless mx is larger (NaN: s) */
        for (int a = 0; a < NQ; a++) mxv[a] = _mm_set_ss(-INFINITY);
        for (int t = 0; t < nk; t++)
            for (int a = 0; a < NQ; a++) mxv[a] = _mm_max_ss(mxv[a], _mm_load_ss(sb + a * F16_BK + t));
        float l1[FEW_MAX];
        for (int a = 0; a < NQ; a++) {
            const float mx = _mm_cvtss_f32(mxv[a]), mn = m[a] > mx ? m[a] : mx, corr = few_exp2_1(m[a] - mn);
            l[a] = l[a] * corr;
            for (int e = 0; e < 16; e++) o[a * 16 + e] = o[a * 16 + e] * corr;
            m[a] = mn;
            const al_vf mv = al_v_set1(mn);
            float *s = sb + a * F16_BK;
            for (int t = 0; t < nk; t += AL_VL) al_v_store(s + t, few_exp2(al_v_sub(al_v_load(s + t), mv)));
            l1[a] = 0.f;
        }
        int t = 0;
        for (; t + 2 <= nk; t += 2)
            for (int a = 0; a < NQ; a++) { l[a] = l[a] + sb[a * F16_BK + t]; l1[a] = l1[a] + sb[a * F16_BK + t + 1]; }
        for (int a = 0; a < NQ; a++) {
            if (t < nk) l[a] = l[a] + sb[a * F16_BK + t];
            l[a] = l[a] + l1[a];
        }
        few_chain(NQ, sb, V + (int64_t)j0 * 16, nk, o);
    }
    for (int a = 0; a < NQ; a++) {
        float *orow = out + (int64_t)(i0 + a) * ldo;
        const float inv = l[a] > 0.f ? 1.0f / l[a] : 0.f;
        for (int e = 0; e < 16; e++) orow[e] = o[a * 16 + e] * inv;
        lse[i0 + a] = l[a] > 0.f ? (m[a] + log2f(l[a])) * LN2_F : INFINITY;
    }
}

static void forward_few(const float *Q, int64_t ldq, const float *V, const float *kt, int N, int i0, int nq, float scale,
                        float *out, int64_t ldo, float *lse, float *sb)
{
    for (int a = 0; a < nq; a += FEW_MAX) {
        const int n = nq - a < FEW_MAX ? nq - a : FEW_MAX;
        switch (n) {
        case 1: few_forward_n(1, Q, ldq, V, kt, N, i0 + a, scale, out, ldo, lse, sb); break;
        case 2: few_forward_n(2, Q, ldq, V, kt, N, i0 + a, scale, out, ldo, lse, sb); break;
        case 3: few_forward_n(3, Q, ldq, V, kt, N, i0 + a, scale, out, ldo, lse, sb); break;
        default: few_forward_n(4, Q, ldq, V, kt, N, i0 + a, scale, out, ldo, lse, sb); break;
        }
    }
}

/* One key tile j0 .. j0+nk−1 of the backward for queries i0 .. i0+NQ−1 of the last block (qb lanes
 * wide in w's layout), after the full blocks: the queries' P and dS for the tile, their steps of
 * every key's dV and dK chain (in query order, as the block's lanes), and their dQ chains over the
 * tile's keys, kept in w's dQᵀ block. kt, vt: Kᵀ and Vᵀ (few_transpose). p, ds: FEW_MAX·F16_BK. */
static inline __attribute__((always_inline)) void few_backward_n(int NQ, const f16_bwd *w, int qb, int i0, int ib, const float *Q,
                                                                int64_t ldq, const float *dO, int64_t ldo, const float *kt,
                                                                const float *vt, int np, const float *Kt /* tile rows */, int j0,
                                                                int nk, float scale, int want_dq, int want_dk, int want_dv)
{
    float *p = w->pbuf, *ds = w->dsbuf;
    const int b = ib / qb;
    const float *qr[FEW_MAX], *gr[FEW_MAX];
    for (int a = 0; a < NQ; a++) {
        const int i = i0 + a;
        float q[16];
        qr[a] = Q + (int64_t)i * ldq; gr[a] = dO + (int64_t)i * ldo;
        for (int d = 0; d < 16; d++) q[d] = w->qtb[(size_t)b * qb * 16 + d * qb + (i - ib)];
        few_dots(kt, np, j0, nk, q, p + a * F16_BK);
        few_dots(vt, np, j0, nk, gr[a], ds + a * F16_BK);
        const al_vf L = al_v_set1(w->lseb[i]), Dl = al_v_set1(w->dlb[i]), sc = al_v_set1(scale);
        for (int t = 0; t < nk; t += AL_VL) {
            const al_vf pv = few_exp2(al_v_sub(al_v_load(p + a * F16_BK + t), L));
            al_v_store(p + a * F16_BK + t, pv);
            al_v_store(ds + a * F16_BK + t, al_v_mul(al_v_mul(pv, sc), al_v_sub(al_v_load(ds + a * F16_BK + t), Dl)));
        }
    }
    if (want_dv) few_rows_acc(NQ, p, gr, nk, w->vacc);
    if (want_dk) few_rows_acc(NQ, ds, qr, nk, w->kacc);
    if (want_dq) {
        float acc[FEW_MAX * 16];
        for (int a = 0; a < NQ; a++)
            for (int d = 0; d < 16; d++) acc[a * 16 + d] = w->dqtb[(size_t)b * qb * 16 + d * qb + (i0 + a - ib)];
        few_chain(NQ, ds, Kt, nk, acc);
        for (int a = 0; a < NQ; a++)
            for (int d = 0; d < 16; d++) w->dqtb[(size_t)b * qb * 16 + d * qb + (i0 + a - ib)] = acc[a * 16 + d];
    }
}

static void backward_few_tile(const f16_bwd *w, int qb, int i0, int nq, const float *Q, int64_t ldq, const float *dO, int64_t ldo,
                              const float *kt, const float *vt, int np, const float *Kt, int j0, int nk, float scale,
                              int want_dq, int want_dk, int want_dv)
{
    for (int a = 0; a < nq; a += FEW_MAX) {
        const int n = nq - a < FEW_MAX ? nq - a : FEW_MAX;
#define FEW_B(NQ) few_backward_n(NQ, w, qb, i0 + a, i0, Q, ldq, dO, ldo, kt, vt, np, Kt, j0, nk, scale, want_dq, want_dk, want_dv)
        switch (n) {
        case 1: FEW_B(1); break;
        case 2: FEW_B(2); break;
        case 3: FEW_B(3); break;
        default: FEW_B(4); break;
        }
#undef FEW_B
    }
}
#endif

#if defined(__AVX512F__)

#define F16_QB 16   /* queries per block: one per lane */
#define F16_FQB 16  /* the same in the forward */
const char *al__full16_path(void) { return "16 queries per vector (avx512)"; }

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
static void forward_block(const float *Q /* (N, ldq) */, int64_t ldq, const float *K /* (N,16) */, const float *V /* (N,16) */, int N, int i0, int nq,
                          float scale, float *out /* (N, ldo) */, int64_t ldo, float *lse /* (N) */, float *sbuf /* (F16_BK, 16) */, float *tb /* (16, 16) */)
{
    __m512 qt[16], ot[16];
    transpose_block(Q + (int64_t)i0 * ldq, ldq, nq, 16, scale * LOG2E_F, tb);
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
    fwd_finish(lv, mv, tb, i0, nq, out, ldo, lse);
}

/* One head's dQ, dK, dV (each NULL when not wanted; added to what is there). ws: al__full16_scratch(g, 1). */
static void backward_head(const float *Q /* (N, ldq) */, int64_t ldq, const float *K /* (N,16) */, const float *V /* (N,16) */, const float *dO /* (N, ldo) */,
                          int64_t ldo, const float *lse /* (N) */, const float *delta /* (N) */, int N, float scale, float *dq /* (N, ldq) or NULL */,
                          float *dk /* (N, ldq) or NULL */, float *dv /* (N, ldq) or NULL */, float *ws /* (al__full16_scratch(g, 1)) */,
                          int fresh, float *kt /* (2, 16, few_np(N)) */)
{
    const f16_bwd w = bwd_begin(Q, ldq, dO, ldo, lse, delta, N, scale, 16, dq != NULL, ws);
    const int nfew = N % 16 && N % 16 <= al__full16_few_max ? N % 16 : 0, nqb = w.nqb - (nfew > 0), np = few_np(N);
    if (nfew) { few_transpose(K, N, np, kt); few_transpose(V, N, np, kt + (size_t)16 * np); }
    float *qtb = w.qtb, *dotb = w.dotb, *dqtb = w.dqtb, *lseb = w.lseb, *dlb = w.dlb;
    float *pbuf = w.pbuf, *dsbuf = w.dsbuf, *kacc = w.kacc, *vacc = w.vacc;
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
                    R[i] = i < nq ? _mm512_loadu_ps(dO + (int64_t)(i0 + i) * ldo) : _mm512_setzero_ps();
                wt_rows_acc(pbuf, R, nk, vacc);
            }
            if (dk) {   /* dK_j += Σ_i dS_ij · Q_i with the block's Q rows resident */
#pragma GCC unroll 16
                for (int i = 0; i < 16; i++)
                    R[i] = i < nq ? _mm512_loadu_ps(Q + (int64_t)(i0 + i) * ldq) : _mm512_setzero_ps();
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
        if (nfew)
            backward_few_tile(&w, 16, nqb * 16, nfew, Q, ldq, dO, ldo, kt, kt + (size_t)16 * np, np, Kt, j0, nk, scale,
                              dq != NULL, dk != NULL, dv != NULL);
        bwd_tile_end(&w, j0, nk, dk, dv, ldq, fresh);
    }
    if (dq) bwd_end(&w, N, 16, dq, ldq, fresh);
}

#elif defined(__AVX2__) && defined(__FMA__)

#define F16_QB 8    /* backward queries per block: one per lane */
#define F16_FQB 16  /* forward: two vectors per key (see forward_block) */
const char *al__full16_path(void) { return "8 queries per vector (avx2)"; }

/* out[j] = Σ_d X[j·16 + d] · T[d] for the n key rows of a tile (8 lanes of scores per key), each
 * key one chain d = 0..15 as rows8_dot_t; T (16 vectors) is read from L1, one load per d for
 * eight keys. With mx, also *mx = the lane-wise max of *mx and the scores. */
static inline void dots_t8(const float *X /* (n, 16) */, const float *T /* (16, 8) */, int n, float *out /* (n, 8) */, __m256 *mx /* or NULL */)
{
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        __m256 s[8], t = _mm256_loadu_ps(T);
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) s[k] = _mm256_mul_ps(_mm256_set1_ps(X[(j + k) * 16]), t);
#pragma GCC unroll 15
        for (int d = 1; d < 16; d++) {
            t = _mm256_loadu_ps(T + d * 8);
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) s[k] = _mm256_fmadd_ps(_mm256_set1_ps(X[(j + k) * 16 + d]), t, s[k]);
        }
#pragma GCC unroll 8
        for (int k = 0; k < 8; k++) {
            _mm256_storeu_ps(out + (j + k) * 8, s[k]);
            if (mx) *mx = _mm256_max_ps(*mx, s[k]);
        }
    }
    for (; j < n; j++) {
        __m256 s = _mm256_mul_ps(_mm256_set1_ps(X[j * 16]), _mm256_loadu_ps(T));
#pragma GCC unroll 15
        for (int d = 1; d < 16; d++) s = _mm256_fmadd_ps(_mm256_set1_ps(X[j * 16 + d]), _mm256_loadu_ps(T + d * 8), s);
        _mm256_storeu_ps(out + j * 8, s);
        if (mx) *mx = _mm256_max_ps(*mx, s);
    }
}

/* acc[j] (16 floats) += Σ_i W[j·8 + i] · R_i for the n keys j of a tile: the key's 8 per-query
 * weights against the block's 8 rows (R[i]: 16 floats, a zero row for padding), one chain over i
 * per element, four keys at a time. */
static void wt_rows_acc8(const float *W /* (n, 8) */, const float *const R[8], int n, float *acc /* (n, 16) */)
{
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        __m256 a[4][2];
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) { a[k][0] = _mm256_loadu_ps(acc + (j + k) * 16); a[k][1] = _mm256_loadu_ps(acc + (j + k) * 16 + 8); }
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const __m256 r0 = _mm256_loadu_ps(R[i]), r1 = _mm256_loadu_ps(R[i] + 8);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                const __m256 w = _mm256_set1_ps(W[(j + k) * 8 + i]);
                a[k][0] = _mm256_fmadd_ps(w, r0, a[k][0]);
                a[k][1] = _mm256_fmadd_ps(w, r1, a[k][1]);
            }
        }
#pragma GCC unroll 4
        for (int k = 0; k < 4; k++) { _mm256_storeu_ps(acc + (j + k) * 16, a[k][0]); _mm256_storeu_ps(acc + (j + k) * 16 + 8, a[k][1]); }
    }
    for (; j < n; j++) {
        __m256 a0 = _mm256_loadu_ps(acc + j * 16), a1 = _mm256_loadu_ps(acc + j * 16 + 8);
#pragma GCC unroll 8
        for (int i = 0; i < 8; i++) {
            const __m256 w = _mm256_set1_ps(W[j * 8 + i]);
            a0 = _mm256_fmadd_ps(w, _mm256_loadu_ps(R[i]), a0);
            a1 = _mm256_fmadd_ps(w, _mm256_loadu_ps(R[i] + 8), a1);
        }
        _mm256_storeu_ps(acc + j * 16, a0); _mm256_storeu_ps(acc + j * 16 + 8, a1);
    }
}

/* dQᵀ[d] (d < 16: eight lanes each) += Σ_j dS[j] · K[j, d] over the n keys: one chain per (d,
 * lane) in key order, as the AVX-512 dQᵀ sweep, in two sweeps of eight resident accumulators. */
static void dq_acc(float *A /* (16, 8) */, const float *dS /* (n, 8) */, const float *K /* (n, 16) */, int n)
{
    for (int c0 = 0; c0 < 16; c0 += 8) {
        __m256 o[8];
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) o[c] = _mm256_loadu_ps(A + (c0 + c) * 8);
        for (int j = 0; j < n; j++) {
            const __m256 p = _mm256_loadu_ps(dS + j * 8);
#pragma GCC unroll 8
            for (int c = 0; c < 8; c++) o[c] = _mm256_fmadd_ps(p, _mm256_set1_ps(K[j * 16 + c0 + c]), o[c]);
        }
#pragma GCC unroll 8
        for (int c = 0; c < 8; c++) _mm256_storeu_ps(A + (c0 + c) * 8, o[c]);
    }
}

/* The forward takes sixteen queries per block, as AVX-512 does, in two vectors: each broadcast
 * key element then feeds two FMAs, which halves the loads per FMA of an eight-query block. */
/* out[j] = Σ_d X[j·16 + d] · T[d] for the n key rows of a tile, sixteen query lanes per key (two
 * vectors), each key one chain d = 0..15; six keys at a time (twelve chains: enough to hide the
 * FMA latency). mx[2]: the lane-wise running max. */
static inline void dots_t16(const float *X /* (n, 16) */, const float *T /* (16, 16) */, int n, float *out /* (n, 16) */, __m256 mx[2])
{
    int j = 0;
    for (; j + 6 <= n; j += 6) {
        __m256 s[6][2], t0 = _mm256_loadu_ps(T), t1 = _mm256_loadu_ps(T + 8);
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++) {
            const __m256 x = _mm256_set1_ps(X[(j + k) * 16]);
            s[k][0] = _mm256_mul_ps(x, t0); s[k][1] = _mm256_mul_ps(x, t1);
        }
#pragma GCC unroll 15
        for (int d = 1; d < 16; d++) {
            t0 = _mm256_loadu_ps(T + d * 16); t1 = _mm256_loadu_ps(T + d * 16 + 8);
#pragma GCC unroll 6
            for (int k = 0; k < 6; k++) {
                const __m256 x = _mm256_set1_ps(X[(j + k) * 16 + d]);
                s[k][0] = _mm256_fmadd_ps(x, t0, s[k][0]); s[k][1] = _mm256_fmadd_ps(x, t1, s[k][1]);
            }
        }
#pragma GCC unroll 6
        for (int k = 0; k < 6; k++) {
            _mm256_storeu_ps(out + (j + k) * 16, s[k][0]); _mm256_storeu_ps(out + (j + k) * 16 + 8, s[k][1]);
            mx[0] = _mm256_max_ps(mx[0], s[k][0]); mx[1] = _mm256_max_ps(mx[1], s[k][1]);
        }
    }
    for (; j < n; j++) {
        __m256 x = _mm256_set1_ps(X[j * 16]), s0 = _mm256_mul_ps(x, _mm256_loadu_ps(T)), s1 = _mm256_mul_ps(x, _mm256_loadu_ps(T + 8));
#pragma GCC unroll 15
        for (int d = 1; d < 16; d++) {
            x = _mm256_set1_ps(X[j * 16 + d]);
            s0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(T + d * 16), s0); s1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(T + d * 16 + 8), s1);
        }
        _mm256_storeu_ps(out + j * 16, s0); _mm256_storeu_ps(out + j * 16 + 8, s1);
        mx[0] = _mm256_max_ps(mx[0], s0); mx[1] = _mm256_max_ps(mx[1], s1);
    }
}

/* Oᵀ[c] (c0 ≤ c < c0+C, sixteen lanes) = Oᵀ[c]·corr + Σ_j P[j] · V[j, c] over the n keys, one chain
 * per lane in key order (the AVX-512 P·V); C ≤ 6 columns at a time keep 2C accumulators resident. */
static inline __attribute__((always_inline)) void pv_cols(float *ot /* (16, 16) */, const __m256 corr[2], const float *P /* (n, 16) */, const float *V /* (n, 16) */,
                                                         int n, int c0, int C)
{
    __m256 o[6][2];
#pragma GCC unroll 6
    for (int c = 0; c < C; c++) {
        o[c][0] = _mm256_mul_ps(_mm256_loadu_ps(ot + (c0 + c) * 16), corr[0]);
        o[c][1] = _mm256_mul_ps(_mm256_loadu_ps(ot + (c0 + c) * 16 + 8), corr[1]);
    }
    for (int j = 0; j < n; j++) {
        const __m256 p0 = _mm256_loadu_ps(P + j * 16), p1 = _mm256_loadu_ps(P + j * 16 + 8);
#pragma GCC unroll 6
        for (int c = 0; c < C; c++) {
            const __m256 v = _mm256_set1_ps(V[j * 16 + c0 + c]);
            o[c][0] = _mm256_fmadd_ps(p0, v, o[c][0]); o[c][1] = _mm256_fmadd_ps(p1, v, o[c][1]);
        }
    }
#pragma GCC unroll 6
    for (int c = 0; c < C; c++) { _mm256_storeu_ps(ot + (c0 + c) * 16, o[c][0]); _mm256_storeu_ps(ot + (c0 + c) * 16 + 8, o[c][1]); }
}

/* Queries i0 .. i0+nq−1 (nq ≤ 16) of one head: out rows and lse. sbuf: F16_BK·16 floats, tb: 512
 * (Qᵀ, then Oᵀ). */
static void forward_block(const float *Q /* (N, ldq) */, int64_t ldq, const float *K /* (N,16) */, const float *V /* (N,16) */, int N, int i0, int nq,
                          float scale, float *out /* (N, ldo) */, int64_t ldo, float *lse /* (N) */, float *sbuf /* (F16_BK, 16) */, float *tb /* (2, 16, 16) */)
{
    float *qt = tb, *ot = tb + 256;
    transpose_block(Q + (int64_t)i0 * ldq, ldq, nq, 16, scale * LOG2E_F, qt);
    memset(ot, 0, 256 * sizeof(float));
    __m256 m[2], l[2];
    for (int h = 0; h < 2; h++) { m[h] = _mm256_set1_ps(-INFINITY); l[h] = _mm256_setzero_ps(); }
    for (int j0 = 0; j0 < N; j0 += F16_BK) {
        const int nk = N - j0 < F16_BK ? N - j0 : F16_BK;
        const float *Kt = K + (int64_t)j0 * 16, *Vt = V + (int64_t)j0 * 16;
        __m256 mx[2] = {_mm256_set1_ps(-INFINITY), _mm256_set1_ps(-INFINITY)}, corr[2], l1[2];
        dots_t16(Kt, qt, nk, sbuf, mx);
        for (int h = 0; h < 2; h++) {
            __m256 mn = _mm256_max_ps(m[h], mx[h]);
            corr[h] = al__exp2_v8(_mm256_sub_ps(m[h], mn));
            l[h] = _mm256_mul_ps(l[h], corr[h]);
            m[h] = mn;
            l1[h] = _mm256_setzero_ps();
        }
        int j;
        for (j = 0; j + 2 <= nk; j += 2)
#pragma GCC unroll 2
            for (int h = 0; h < 2; h++) {
                __m256 p0 = al__exp2_v8(_mm256_sub_ps(_mm256_loadu_ps(sbuf + j * 16 + h * 8), m[h]));
                __m256 p1 = al__exp2_v8(_mm256_sub_ps(_mm256_loadu_ps(sbuf + j * 16 + 16 + h * 8), m[h]));
                _mm256_storeu_ps(sbuf + j * 16 + h * 8, p0);
                _mm256_storeu_ps(sbuf + j * 16 + 16 + h * 8, p1);
                l[h] = _mm256_add_ps(l[h], p0);
                l1[h] = _mm256_add_ps(l1[h], p1);
            }
        for (int h = 0; h < 2; h++) {
            if (j < nk) {
                __m256 p0 = al__exp2_v8(_mm256_sub_ps(_mm256_loadu_ps(sbuf + j * 16 + h * 8), m[h]));
                _mm256_storeu_ps(sbuf + j * 16 + h * 8, p0);
                l[h] = _mm256_add_ps(l[h], p0);
            }
            l[h] = _mm256_add_ps(l[h], l1[h]);
        }
        pv_cols(ot, corr, sbuf, Vt, nk, 0, 6);   /* Oᵀ = Oᵀ·corr + P·V */
        pv_cols(ot, corr, sbuf, Vt, nk, 6, 6);
        pv_cols(ot, corr, sbuf, Vt, nk, 12, 4);
    }
    float lv[16], mv[16];
    for (int h = 0; h < 2; h++) { _mm256_storeu_ps(lv + h * 8, l[h]); _mm256_storeu_ps(mv + h * 8, m[h]); }
    fwd_finish(lv, mv, ot, i0, nq, out, ldo, lse);
}

/* One head's dQ, dK, dV as the AVX-512 backward_head, eight queries per block. */
static void backward_head(const float *Q /* (N, ldq) */, int64_t ldq, const float *K /* (N,16) */, const float *V /* (N,16) */, const float *dO /* (N, ldo) */,
                          int64_t ldo, const float *lse /* (N) */, const float *delta /* (N) */, int N, float scale, float *dq /* (N, ldq) or NULL */,
                          float *dk /* (N, ldq) or NULL */, float *dv /* (N, ldq) or NULL */, float *ws /* (al__full16_scratch(g, 1)) */,
                          int fresh, float *kt /* (2, 16, few_np(N)) */)
{
    static const float zero_row[16];
    const f16_bwd w = bwd_begin(Q, ldq, dO, ldo, lse, delta, N, scale, 8, dq != NULL, ws);
    const int nfew = N % 8 && N % 8 <= al__full16_few_max ? N % 8 : 0, nqb = w.nqb - (nfew > 0), np = few_np(N);
    if (nfew) { few_transpose(K, N, np, kt); few_transpose(V, N, np, kt + (size_t)16 * np); }
    float *qtb = w.qtb, *dotb = w.dotb, *dqtb = w.dqtb, *lseb = w.lseb, *dlb = w.dlb;
    float *pbuf = w.pbuf, *dsbuf = w.dsbuf, *kacc = w.kacc, *vacc = w.vacc;
    const __m256 sc = _mm256_set1_ps(scale);
    for (int j0 = 0; j0 < N; j0 += F16_BK) {
        const int nk = N - j0 < F16_BK ? N - j0 : F16_BK;
        const float *Kt = K + (int64_t)j0 * 16, *Vt = V + (int64_t)j0 * 16;
        if (dk) memset(kacc, 0, (size_t)nk * 16 * sizeof(float));
        if (dv) memset(vacc, 0, (size_t)nk * 16 * sizeof(float));
        for (int b = 0; b < nqb; b++) {
            const int i0 = b * 8, nq = N - i0 < 8 ? N - i0 : 8;
            {   /* P = 2^(S·log2e − lse·log2e) */
                const __m256 L = _mm256_loadu_ps(lseb + i0);
                dots_t8(Kt, qtb + (size_t)b * 128, nk, pbuf, NULL);
                for (int j = 0; j < nk; j++)
                    _mm256_storeu_ps(pbuf + j * 8, al__exp2_v8(_mm256_sub_ps(_mm256_loadu_ps(pbuf + j * 8), L)));
            }
            {   /* dS = scale · P∘(dO·Vᵀ − δ) */
                const __m256 Dl = _mm256_loadu_ps(dlb + i0);
                dots_t8(Vt, dotb + (size_t)b * 128, nk, dsbuf, NULL);
                for (int j = 0; j < nk; j++) {
                    __m256 p = _mm256_mul_ps(_mm256_loadu_ps(pbuf + j * 8), sc);
                    _mm256_storeu_ps(dsbuf + j * 8, _mm256_mul_ps(p, _mm256_sub_ps(_mm256_loadu_ps(dsbuf + j * 8), Dl)));
                }
            }
            const float *R[8];
            if (dv) {   /* dV_j += Σ_i P_ij · dO_i */
                for (int i = 0; i < 8; i++) R[i] = i < nq ? dO + (int64_t)(i0 + i) * ldo : zero_row;
                wt_rows_acc8(pbuf, R, nk, vacc);
            }
            if (dk) {   /* dK_j += Σ_i dS_ij · Q_i */
                for (int i = 0; i < 8; i++) R[i] = i < nq ? Q + (int64_t)(i0 + i) * ldq : zero_row;
                wt_rows_acc8(dsbuf, R, nk, kacc);
            }
            if (dq) dq_acc(dqtb + (size_t)b * 128, dsbuf, Kt, nk);   /* dQᵀ[d] += Σ_j dS_j · K[j,d] */
        }
        if (nfew)
            backward_few_tile(&w, 8, nqb * 8, nfew, Q, ldq, dO, ldo, kt, kt + (size_t)16 * np, np, Kt, j0, nk, scale,
                              dq != NULL, dk != NULL, dv != NULL);
        bwd_tile_end(&w, j0, nk, dk, dv, ldq, fresh);
    }
    if (dq) bwd_end(&w, N, 8, dq, ldq, fresh);
}
#endif

#if defined(F16_QB)
/* ---------------- shared by both ISAs: the drivers ---------------- */

int al__full16_ok(const al_attn_cfg *g)
{
    return !g->additive && !g->relu && !g->drop && g->D == 16 && g->Dv == 16;
}

size_t al__full16_scratch(const al_attn_cfg *g, int backward)
{
    const size_t kv = 2 * (size_t)g->N * 16;   /* K and V of one head gathered from strided rows */
    const size_t few = 2 * 16 * (size_t)few_np(g->N) + FEW_MAX * F16_BK;   /* Kᵀ, Vᵀ and score strips of the few-query path */
    if (!backward) return (size_t)F16_BK * F16_FQB + 2 * 16 * F16_FQB + kv + few;   /* a score strip, two transposed blocks */
    size_t npad = (size_t)(g->N + F16_QB - 1) / F16_QB * F16_QB;
    return 3 * npad * 16 + 2 * npad + 2 * (size_t)F16_BK * F16_QB + 2 * (size_t)F16_BK * 16 + kv + few;
}

/* K and V of head bh as (N,16) rows: in place when the layout's rows are 16 floats apart, else
 * copied into kv (2·N·16) once per head, so the key loops stream contiguous rows either way. */
static void head_kv(const float *k, const float *v, const al_attn_lay *li, int64_t at, int N, float *kv,
                    const float **K, const float **V)
{
    if (li->sr == 16) { *K = k + at; *V = v + at; return; }
    for (int i = 0; i < N; i++) {
        memcpy(kv + (size_t)i * 16, k + at + (int64_t)i * li->sr, 16 * sizeof(float));
        memcpy(kv + (size_t)(N + i) * 16, v + at + (int64_t)i * li->sr, 16 * sizeof(float));
    }
    *K = kv; *V = kv + (size_t)N * 16;
}

void al__full16_forward(const al_attn_cfg *g, const float *q, const float *k, const float *v, float *out, float *lse /* (B,H,N) */,
                        const al_attn_lay *li, const al_attn_lay *lo, float *scratch /* (nthr, al__full16_scratch) */, int nthr)
{
    const int N = g->N, nqb = (N + F16_FQB - 1) / F16_FQB;
    /* a task is one block of queries, or a whole head when its K and V are gathered first */
    const int whole = li->sr != 16;
    const int64_t heads = (int64_t)g->B * g->H, per_head = whole ? 1 : nqb, tasks = heads * per_head;
    const size_t per = al__full16_scratch(g, 0);
    (void)nthr;   /* unused without OpenMP */
    al__full16_runs++;
    AL_OMP("omp parallel num_threads(nthr) if (tasks > 1 && heads * nqb * F16_FQB * (int64_t)N > AL_PAR_MIN / 8)")
    {
        float *sbuf = scratch + (size_t)al__thread_id() * per, *tb = sbuf + F16_BK * F16_FQB, *kv = tb + 2 * 16 * F16_FQB;
        float *kt = kv + 2 * (size_t)N * 16, *sb = kt + 2 * 16 * (size_t)few_np(N);
        AL_OMP("omp for schedule(static)")
        for (int64_t t = 0; t < tasks; t++) {
            const int64_t bh = t / per_head, at = al__lay_head(li, bh, g->H), ao = al__lay_head(lo, bh, g->H);
            const int b0 = whole ? 0 : (int)(t % per_head), b1 = whole ? nqb : b0 + 1;
            const float *K, *V;
            head_kv(k, v, li, at, N, kv, &K, &V);
            for (int b = b0; b < b1; b++) {
                const int i0 = b * F16_FQB, nq = N - i0 < F16_FQB ? N - i0 : F16_FQB;
                if (nq < F16_FQB && nq <= al__full16_few_max) {   /* the last, partial block: query by query */
                    few_transpose(K, N, few_np(N), kt);
                    forward_few(q + at, li->sr, V, kt, N, i0, nq, g->scale, out + ao, lo->sr, lse + bh * N, sb);
                } else
                    forward_block(q + at, li->sr, K, V, N, i0, nq, g->scale, out + ao, lo->sr, lse + bh * N, sbuf, tb);
            }
        }
    }
}

void al__full16_backward(const al_attn_cfg *g, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse /* (B,H,N) */, const float *delta /* (B,H,N) */, float *dq, float *dk, float *dv,
                         const al_attn_lay *li, const al_attn_lay *lo, float *scratch /* (nthr, al__full16_scratch) */, int nthr,
                         int fresh)
{
    const int N = g->N;
    const int64_t heads = (int64_t)g->B * g->H;
    const size_t per = al__full16_scratch(g, 1);
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel num_threads(nthr) if (heads > 1 && heads * (int64_t)N * N > AL_PAR_MIN / 8)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per, *kv = ws + per - 2 * (size_t)N * 16;
        float *kt = kv - (2 * 16 * (size_t)few_np(N) + FEW_MAX * F16_BK);
        AL_OMP("omp for schedule(static)")
        for (int64_t bh = 0; bh < heads; bh++) {
            const int64_t at = al__lay_head(li, bh, g->H), ao = al__lay_head(lo, bh, g->H);
            const float *K, *V;
            head_kv(k, v, li, at, N, kv, &K, &V);
            backward_head(q + at, li->sr, K, V, dO + ao, lo->sr, lse + bh * N, delta + bh * N, N, g->scale,
                          dq ? dq + at : NULL, dk ? dk + at : NULL, dv ? dv + at : NULL, ws, fresh, kt);
        }
    }
}

/* delta[bh·N + i] = dO_i · O_i for every head: a vector of rows at a time (16 on AVX-512, 8 on AVX2),
 * both blocks transposed so that the rows are in the lanes, then each lane's sixteen FMAs in feature
 * order — the scalar loop's chain (s = 0, s = fma(dO_e, O_e, s)), lane by lane: the same bits. That
 * loop ran one dependent chain per row (2.1 % of sa's training step on Zen 5). */
int al__full16_delta(const float *o, const float *dO, const al_attn_lay *lo, int64_t heads, int H, int N,
                     float *delta /* (heads, N) */, int nthr)
{
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel for schedule(static) num_threads(nthr) if (heads > 1 && heads * (int64_t)N * 16 > AL_PAR_MIN)")
    for (int64_t bh = 0; bh < heads; bh++) {
        const int64_t ao = al__lay_head(lo, bh, H);
        for (int i0 = 0; i0 < N; i0 += AL_VL) {
            const int n = N - i0 < AL_VL ? N - i0 : AL_VL;
            float a[16 * AL_VL], b[16 * AL_VL];   /* (16 features, AL_VL rows) */
#if defined(__AVX512F__)
            tr16x16(dO + ao + (int64_t)i0 * lo->sr, lo->sr, n, 1.f, a, AL_VL);
            tr16x16(o + ao + (int64_t)i0 * lo->sr, lo->sr, n, 1.f, b, AL_VL);
#else
            tr8x16(dO + ao + (int64_t)i0 * lo->sr, lo->sr, n, 1.f, a, AL_VL);
            tr8x16(o + ao + (int64_t)i0 * lo->sr, lo->sr, n, 1.f, b, AL_VL);
#endif
            al_vf acc = al_v_zero();
            for (int e = 0; e < 16; e++) acc = al_v_fma(al_v_load(a + AL_VL * e), al_v_load(b + AL_VL * e), acc);
            al_v_storem(al_v_mask(n), delta + bh * N + i0, acc);
        }
    }
    return 1;
}

#else   /* neither AVX-512 nor AVX2 + FMA: the generic kernel handles every shape */

int al__full16_delta(const float *o, const float *dO, const al_attn_lay *lo, int64_t heads, int H, int N, float *delta, int nthr)
{
    (void)o; (void)dO; (void)lo; (void)heads; (void)H; (void)N; (void)delta; (void)nthr;
    return 0;
}

int al__full16_few_max;
const char *al__full16_path(void) { return "generic tiles (" AL_SIMD_ISA ")"; }
int al__full16_ok(const al_attn_cfg *g) { (void)g; return 0; }
size_t al__full16_scratch(const al_attn_cfg *g, int backward) { (void)g; (void)backward; return 0; }
void al__full16_forward(const al_attn_cfg *g, const float *q, const float *k, const float *v, float *out, float *lse,
                        const al_attn_lay *li, const al_attn_lay *lo, float *scratch, int nthr)
{
    (void)g; (void)q; (void)k; (void)v; (void)out; (void)lse; (void)li; (void)lo; (void)scratch; (void)nthr;
}
void al__full16_backward(const al_attn_cfg *g, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse, const float *delta, float *dq, float *dk, float *dv,
                         const al_attn_lay *li, const al_attn_lay *lo, float *scratch, int nthr, int fresh)
{
    (void)g; (void)q; (void)k; (void)v; (void)dO; (void)lse; (void)delta; (void)dq; (void)dk; (void)dv;
    (void)li; (void)lo; (void)scratch; (void)nthr; (void)fresh;
}
#endif
