/* full16_fwd.c — the forward of full dot-product softmax attention for heads of size 16 (D = Dv = 16),
 * the query index in the vector lanes: a block of 16 queries against key tiles with an online softmax
 * (AVX-512: one vector per block; AVX2: two), the few-query path for a last, partial block, and the
 * driver over heads and blocks; also what this build runs (al__full16_ok, _path, _scratch). The
 * kernels' design and what full16_bwd.c shares with this file: full16_impl.h.
 */
#include "attention/full16_impl.h"
#include "core/omp_impl.h"
#include <math.h>

long al__full16_runs;

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
int al__full16_few_max = 4;   /* the few-query path: full16_impl.h */

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

#if defined(__AVX512F__)

const char *al__full16_path(void) { return "16 queries per vector (avx512)"; }

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

#else   /* AVX2 + FMA */

const char *al__full16_path(void) { return "8 queries per vector (avx2)"; }

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
#endif

/* ---------------- shared by both ISAs: the driver ---------------- */

int al__full16_ok(const al_attn_cfg *g)
{
    return !g->additive && !g->relu && !g->drop && g->D == 16 && g->Dv == 16;
}

size_t al__full16_scratch(const al_attn_cfg *g, int backward) { return f16_scratch(g, backward); }

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

#else   /* neither AVX-512 nor AVX2 + FMA: the generic kernel handles every shape */

int al__full16_few_max;
const char *al__full16_path(void) { return "generic tiles (" AL_SIMD_ISA ")"; }
int al__full16_ok(const al_attn_cfg *g) { (void)g; return 0; }
size_t al__full16_scratch(const al_attn_cfg *g, int backward) { (void)g; (void)backward; return 0; }
void al__full16_forward(const al_attn_cfg *g, const float *q, const float *k, const float *v, float *out, float *lse,
                        const al_attn_lay *li, const al_attn_lay *lo, float *scratch, int nthr)
{
    (void)g; (void)q; (void)k; (void)v; (void)out; (void)lse; (void)li; (void)lo; (void)scratch; (void)nthr;
}
#endif
