/* full16_bwd.c — the backward of full dot-product softmax attention for heads of size 16 (D = Dv = 16),
 * the query index in the vector lanes: one task per head, five sweeps over a key tile for every block
 * of queries (AVX-512: 16 per block, AVX2: 8), the few-query path for a last, partial block, and
 * the row dot products δ = dO·O (al__full16_delta). The kernels' design and what full16_fwd.c shares
 * with this file: full16_impl.h.
 */
#include "attention/full16_impl.h"
#include "core/omp_impl.h"
#include <math.h>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
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

#if defined(__AVX512F__)

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

#else   /* AVX2 + FMA */

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

/* ---------------- shared by both ISAs: the driver ---------------- */

void al__full16_backward(const al_attn_cfg *g, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse /* (B,H,N) */, const float *delta /* (B,H,N) */, float *dq, float *dk, float *dv,
                         const al_attn_lay *li, const al_attn_lay *lo, float *scratch /* (nthr, al__full16_scratch) */, int nthr,
                         int fresh)
{
    const int N = g->N;
    const int64_t heads = (int64_t)g->B * g->H;
    const size_t per = f16_scratch(g, 1);
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

void al__full16_backward(const al_attn_cfg *g, const float *q, const float *k, const float *v, const float *dO,
                         const float *lse, const float *delta, float *dq, float *dk, float *dv,
                         const al_attn_lay *li, const al_attn_lay *lo, float *scratch, int nthr, int fresh)
{
    (void)g; (void)q; (void)k; (void)v; (void)dO; (void)lse; (void)delta; (void)dq; (void)dk; (void)dv;
    (void)li; (void)lo; (void)scratch; (void)nthr; (void)fresh;
}
#endif
