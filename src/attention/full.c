/* full.c — full attention, streamed flash-attention style: q-tiles × k-tiles, online softmax, only
 * the per-row logsumexp is saved; backward recomputes the scores. Memory O(N·D) per head.
 * Backward, three strategies chosen by shape only (never by the thread count):
 *   fused     one pass per head (B·H ≥ AL_FULL_FUSED_MIN_HEADS, no bias gradient): each (b, h) task owns
 *             its rows of dQ, dK, dV;
 *   queries   pass 1 over query tiles (dQ, dsq, dbias), batch innermost;
 *   keys      pass 2 over key tiles (dK, dV, dsk), batch innermost;
 * so every thread owns its writes. Dot score, softmax, no dropout or bias and D = Dv = 16 runs the
 * query-in-lanes kernels of full16_fwd.c and full16_bwd.c instead (same maths, no GEMM tiles). The
 * maths of the backward passes is written up in docs/attention.md. */
#include "attention/attention_impl.h"
#include "attention/rows_impl.h"
#include "attnlab/kernels.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include <math.h>
#include <string.h>

#define BQ 128  /* queries per tile (full) */
#define BK 128  /* keys per tile (full) */

/* Scratch floats per thread for the full kernels: three (BQ, BK) tiles and the accumulators. */
static size_t full_scratch(const al_attn_cfg *g)
{
    int dm = g->D > g->Dv ? g->D : g->Dv;
    return (size_t)3 * BQ * BK + (size_t)BQ * dm + (size_t)BK * (g->D + g->Dv) + 4 * BQ + 64;
}



/* S (nq, BK) = scores of queries i0.. against keys j0.. for head bh (h = head index):
 * dot: one small GEMM scale·Q_tile·K_tileᵀ; additive: LeakyReLU(sq_i + sk_j). Plus the bias.
 * Q, K (N,D) and sq, sk (N) point at head bh. */
static void full_scores(const al_attn_cfg *g, int h, int i0, int nq, int j0, int nk,
                        const float *Q /* (N,D) of head bh */, const float *K /* (N,D) of head bh */, const float *sq /* (N) or NULL */, const float *sk /* (N) or NULL */,
                        const float *bias /* (H,N·N) or NULL */, float *S /* (nq, BK) */)
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

void al__attn_full_forward(const al_attn_cfg *g, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */, const float *v /* (B,H,N,Dv) */,
                         const float *sq /* (B,H,N) or NULL */, const float *sk /* (B,H,N) or NULL */, const float *bias /* (H,N·N) or NULL */, float *out /* (B,H,N,Dv) */, float *lse /* (B,H,N) */,
                         float *scratch /* (nthr, full_scratch) */, int nthr)
{
    const int N = g->N, D = g->D, Dv = g->Dv;
    const int nqt = (N + BQ - 1) / BQ, nkt = (N + BK - 1) / BK;
    const int64_t tasks = (int64_t)g->B * g->H * nqt;
    const size_t per = full_scratch(g);
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel num_threads(nthr) if (tasks > 1 && tasks * BQ * (int64_t)N * (D + Dv) > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        float *S = ws, *acc = S + BQ * BK;
        float *m = acc + (size_t)BQ * (D > Dv ? D : Dv), *l = m + BQ;
        AL_OMP("omp for schedule(static)")
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
                        float corr = m[ii] == -INFINITY ? 0.f : al__exp_libm(m[ii] - mnew);
                        l[ii] = l[ii] * corr + exp_shift_sum(s, nk, mnew);
                        m[ii] = mnew;
                        if (corr != 1.f) for (int e = 0; e < Dv; e++) a[e] *= corr;
                    } else {
                        for (int jj = 0; jj < nk; jj++) s[jj] = s[jj] > 0.f ? s[jj] : 0.f;
                    }
                    if (g->drop) al__attn_drop_mul(g, bh, (int64_t)(i0 + ii) * N + j0, s, s, nk);
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
void al__attn_full_weights(const al_attn_cfg *g, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */, const float *sq /* (B,H,N) or NULL */, const float *sk /* (B,H,N) or NULL */,
                         const float *bias /* (H,N·N) or NULL */, const float *lse /* (B,H,N) */, float *wts /* (B,H,N,N) */, float *scratch /* (nthr, full_scratch) */, int nthr)
{
    const int N = g->N, D = g->D;
    const int nqt = (N + BQ - 1) / BQ, nkt = (N + BK - 1) / BK;
    const int64_t tasks = (int64_t)g->B * g->H * nqt;
    const size_t per = full_scratch(g);
    (void)nthr;   /* unused without OpenMP */
    AL_OMP("omp parallel num_threads(nthr) if (tasks > 1 && tasks * BQ * (int64_t)N * D > AL_PAR_MIN)")
    {
        float *S = scratch + (size_t)al__thread_id() * per;
        AL_OMP("omp for schedule(static)")
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
int al__attn_use_full16(const al_attn_cfg *g, const float *bias /* (H,N·N) or NULL */) { return !bias && al__full16_ok(g); }

/* Scratch floats per thread for whichever full kernels run on this configuration, forward (with
 * the weights sweep) or backward. */
size_t al__attn_full_scratch_for(const al_attn_cfg *g, const float *bias /* (H,N·N) or NULL */, int backward)
{
    size_t a = full_scratch(g), b = al__attn_use_full16(g, bias) ? al__full16_scratch(g, backward) : 0;
    return a > b ? a : b;
}

/* One backward tile: from the recomputed scores S and dP = dO·Vᵀ, overwrite dP with dS and, when
 * Pd != NULL, write the applied (dropped) weights P' into Pd. lse, delta point at head bh. */
static void full_ds_tile(const al_attn_cfg *g, int64_t bh, int i0, int nq, int j0, int nk,
                         const float *lse /* (N) of head bh, NULL for ReLU */, const float *delta /* (N) of head bh */, float *S /* (nq, BK) */, float *dP /* (nq, BK) */, float *Pd /* (nq, BK) or NULL */)
{
    const int N = g->N;
    for (int ii = 0; ii < nq; ii++) {
        float *s = S + ii * BK, *dp = dP + ii * BK, *pd = Pd ? Pd + ii * BK : NULL;
        int64_t row = (int64_t)(i0 + ii) * N + j0;
        if (!g->relu) {
            float dl = delta[i0 + ii];
            exp_shift(s, s, nk, lse[i0 + ii]);
            if (g->drop) {
                if (pd) al__attn_drop_mul2(g, bh, row, s, pd, dp, dp, nk);
                else al__attn_drop_mul(g, bh, row, dp, dp, nk);
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
                if (pd) al__attn_drop_mul2(g, bh, row, pd, pd, dp, dp, nk);
                else al__attn_drop_mul(g, bh, row, dp, dp, nk);
            }
        }
    }
}

/* Adds a tile's accumulated gradients to rows r0 .. r0+n-1 of dX (n × D). Dot scores: acc holds the
 * rows' dX. Additive scores (a_h = the head's score vector a, D floats): sacc holds the rows' score
 * gradient, stored in ds_rows, and dX gets a_h · sacc. dX may be NULL (no gradient wanted). */
static inline void flush_tile_rows(int64_t r0, int n, int D, const float *acc /* (n, D) */, const float *sacc /* (n) */,
                                   const float *a_h /* (D) or NULL */, float *dX /* (rows, D) or NULL */, float *ds_rows /* (rows) */)
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


/* What the three backward strategies share: inputs, gradients (NULL: not wanted), the row
 * statistics and the per-thread scratch. */
typedef struct full_bwd {
    const al_attn_cfg *g;
    const attn_node *nd;
    const float *q, *k, *v, *dO, *bias, *delta, *aq, *ak;
    float *dq, *dk, *dv, *dbias, *dsq, *dsk, *scratch;
    size_t per;   /* scratch floats per thread */
    int nqt, nkt, need_aq, need_ak;
} full_bwd;

static void full_bwd_fused(const full_bwd *w)
{
    const al_attn_cfg *g = w->g;
    const attn_node *nd = w->nd;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, B = g->B, nqt = w->nqt, nkt = w->nkt, nthr = nd->nthr;
    const int64_t rows = (int64_t)B * H * N;
    const size_t per = w->per;
    const float *q = w->q, *k = w->k, *v = w->v, *dO = w->dO, *delta = w->delta;
    float *scratch = w->scratch;
    (void)nthr; (void)rows;   /* unused without OpenMP */
    const float *aq = w->aq, *ak = w->ak;
    float *dq = w->dq, *dk = w->dk, *dv = w->dv, *dsq = w->dsq, *dsk = w->dsk;
    /* One pass per head: each (b, h) is one task that owns its rows of dQ, dK, dV, dsq and dsk,
     * so the scores, dP and the softmax are recomputed once instead of once per pass. Key tiles
     * outside, query tiles inside: dK, dV of a key tile stay in the tile accumulators while dQ
     * is accumulated in place (beta = 1), in the same order for any thread count. The choice of
     * this path depends on the shapes only, never on the number of threads. */
    AL_OMP("omp parallel num_threads(nthr) if (rows * N * (D + Dv) > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        float *S = ws, *dP = S + BQ * BK, *Pd = dP + BQ * BK;
        float *kacc = Pd + BQ * BK, *vacc = kacc + (size_t)BK * D, *sacc = vacc + (size_t)BK * Dv;
        AL_OMP("omp for schedule(static)")
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
}

/* Pass 1: query tiles own dQ, dsq and their rows of dbias (batch innermost so dbias is owned). */
static void full_bwd_queries(const full_bwd *w)
{
    const al_attn_cfg *g = w->g;
    const attn_node *nd = w->nd;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, B = g->B, nqt = w->nqt, nkt = w->nkt, nthr = nd->nthr;
    const int64_t rows = (int64_t)B * H * N;
    const size_t per = w->per;
    const float *q = w->q, *k = w->k, *v = w->v, *dO = w->dO, *delta = w->delta;
    float *scratch = w->scratch;
    (void)nthr; (void)rows;   /* unused without OpenMP */
    const float *bias = w->bias, *aq = w->aq;
    float *dq = w->dq, *dbias = w->dbias, *dsq = w->dsq;
    AL_OMP("omp parallel num_threads(nthr) if (H * nqt > 1 && rows * N * (D + Dv) > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        float *S = ws, *dP = S + BQ * BK, *acc = dP + 2 * BQ * BK, *sacc = acc + (size_t)BQ * D;
        AL_OMP("omp for schedule(static)")
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
static void full_bwd_keys(const full_bwd *w)
{
    const al_attn_cfg *g = w->g;
    const attn_node *nd = w->nd;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, B = g->B, nqt = w->nqt, nkt = w->nkt, nthr = nd->nthr;
    const int64_t rows = (int64_t)B * H * N;
    const size_t per = w->per;
    const float *q = w->q, *k = w->k, *v = w->v, *dO = w->dO, *delta = w->delta;
    float *scratch = w->scratch;
    (void)nthr; (void)rows;   /* unused without OpenMP */
    const float *bias = w->bias, *ak = w->ak;
    float *dk = w->dk, *dv = w->dv, *dsk = w->dsk;
    AL_OMP("omp parallel num_threads(nthr) if (H * nkt > 1 && rows * N * (D + Dv) > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        float *S = ws, *dP = S + BQ * BK, *Pd = dP + BQ * BK;
        float *kacc = Pd + BQ * BK, *vacc = kacc + (size_t)BK * D, *sacc = vacc + (size_t)BK * Dv;
        AL_OMP("omp for schedule(static)")
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

void al__attn_full_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, Dv = g->Dv, H = g->H, B = g->B;
    const float *o = nd->out->data, *dO = nd->out->grad, *q, *k, *v;
    const float *bias = nd->bias ? nd->bias->data : NULL;
    float *dq, *dk, *dv;
    /* the per-head lane kernels write every element of al_attention_qkv's gradient: no zeroing first */
    const int lanes = al__attn_use_full16(g, bias) && (int64_t)B * H >= AL_FULL_FUSED_MIN_HEADS;
    int fresh = 0;
    al__attn_ptrs(c, nd, &q, &k, &v, &dq, &dk, &dv, lanes ? &fresh : NULL);
    float *dbias = nd->bias && nd->bias->requires_grad ? al_grad(c, nd->bias) : NULL;
    int need_aq = g->additive && nd->aq->requires_grad, need_ak = g->additive && nd->ak->requires_grad;
    int64_t rows = (int64_t)B * H * N;
    float *delta = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
    float *dsq = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    float *dsk = g->additive ? al_arena_calloc(&c->arena, (size_t)rows * sizeof(float)) : NULL;
    const size_t per = full_scratch(g);
    float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * al__attn_full_scratch_for(g, bias, 1) * sizeof(float));
    if (!delta || !scratch || (g->additive && (!dsq || !dsk))) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    /* delta_i = dO_i · O_i = Σ_j P_ij dP_ij (holds with dropout too); for Dv = 16, sixteen rows at a time */
    if (!(Dv == 16 && al__full16_delta(o, dO, &nd->lo, rows / N, H, N, delta, nd->nthr))) {
        AL_OMP("omp parallel for schedule(static) if (rows / N > 1 && rows * Dv > AL_PAR_MIN)")
        for (int64_t bh = 0; bh < rows / N; bh++)
            for (int i = 0; i < N; i++) {
                const int64_t at = al__lay_head(&nd->lo, bh, H) + (int64_t)i * nd->lo.sr;   /* O_i's row */
                float s = 0.f;
                for (int e = 0; e < Dv; e++) s = AL_FMA(dO[at + e], o[at + e], s);
                delta[bh * N + i] = s;
            }
    }
    if (lanes) {   /* (al_attention_qkv: always) */
        al__full16_backward(g, q, k, v, dO, nd->lse, delta, dq, dk, dv, &nd->li, &nd->lo, scratch, nd->nthr, fresh);
        return;
    }
    const full_bwd w = {
        .g = g, .nd = nd, .q = q, .k = k, .v = v, .dO = dO, .bias = bias, .delta = delta,
        .aq = g->additive ? nd->aq->data : NULL, .ak = g->additive ? nd->ak->data : NULL,
        .dq = dq, .dk = dk, .dv = dv, .dbias = dbias, .dsq = dsq, .dsk = dsk, .scratch = scratch, .per = per,
        .nqt = (N + BQ - 1) / BQ, .nkt = (N + BK - 1) / BK, .need_aq = need_aq, .need_ak = need_ak,
    };
    if (!dbias && (int64_t)B * H >= AL_FULL_FUSED_MIN_HEADS) {
        full_bwd_fused(&w);
    } else {
        if (dq || dbias || need_aq) full_bwd_queries(&w);
        if (dk || dv || need_ak) full_bwd_keys(&w);
    }
    if (need_aq) al__attn_head_dot_grad(g, q, dsq, al_grad(c, nd->aq));
    if (need_ak) al__attn_head_dot_grad(g, k, dsk, al_grad(c, nd->ak));
}
