/* win16.c — window2d / window1d dot-product softmax attention for heads of size 16 (D = Dv = 16,
 * the `local` model's shape), with the queries in the vector lanes.
 *
 * The slot-list kernels (sparse.c) take one query at a time: gather its ~25 key rows by index,
 * reduce each 16-float product across lanes, sweep the slots three times. In a window pattern the
 * keys of sixteen consecutive queries i0..i0+15 at one window offset are the sixteen consecutive
 * tokens i0+off..i0+off+15 (off = dy·W + dx, or o − r in 1-D). So with each head's Q, K, V held
 * transposed (16 rows of N tokens, margins of zeros), one offset is one unaligned load per
 * feature: lane i of every vector belongs to query i0+i, scores, the softmax and P·V are lane-wise,
 * and no index is loaded. The backward does the same by keys (dK, dV: the queries of keys
 * j0..j0+15 at one offset are j0−off..j0−off+15).
 *
 * Same bits as sparse.c, by construction: every sum is the one sparse.c computes, lane by lane —
 * a score is dots_rows' product tree ((p0+p2)+(p1+p3) per group of four, then the groups pairwise),
 * the softmax sum and δ are sixteen slot-lane accumulators reduced by the tree of
 * _mm512_reduce_add_ps (al__v16_reduce_tree), P·V and the gradients keep axpy_rows' two chains
 * (even and odd list positions; in the key pass a lane's position counts only its own present
 * slots). test_win16_same_bits checks it against the slot-list kernels, bit for bit.
 *
 * AVX2 builds run the same scheme with eight queries per vector (WL = 8), reproducing sparse.c's
 * AVX2 sums instead: dot_lanes' two FMAs per lane of eight and its 8-lane tree, row_sum's sixteen
 * slot lanes added in order, and one FMA chain (axpy_rows has one on AVX2) for δ, P·V and the
 * gradients. The AVX-512 block below is the reference shape; the AVX2 block mirrors it.
 *
 * P and dS are kept block-major, (B,H,Npad/WL,K,WL): a block of WL queries writes one
 * contiguous strip (one stream for the prefetcher, not K). The backward copies one head's P and dS
 * offset-major into scratch (row o: every query at offset o, with margins) for the key pass, whose
 * sixteen keys read their queries' weights at one offset as one unaligned vector. */
#include "attention/attention_impl.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

int al__win16_off;     /* tests: nonzero sends every case to the slot-list kernels */
long al__win16_runs;   /* tests: forward calls of the lane kernels (not atomic: single-threaded callers) */

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define WL 16   /* queries (keys) per vector */
#elif defined(__AVX2__) && defined(__FMA__)
#define WL 8
#endif

#if defined(WL)

const char *al__win16_path(void) { return WL == 16 ? "16 queries per vector (avx512)" : "8 queries per vector (avx2)"; }

int al__win16_ok(const al_attn_cfg *g, const al_pattern *p, const void *bias)
{
    return !al__win16_off && (p->kind == AL_PAT_WINDOW2D || p->kind == AL_PAT_WINDOW1D) && g->noff > 0 && !g->additive && !g->relu &&
           !g->drop && !bias && g->D == 16 && g->Dv == 16;
}

/* The window's geometry for the lane kernels: per offset its token distance, the offsets by
 * distance descending (the key pass's list order), and per block of WL queries (keys) the lanes
 * whose slot at offset o is present. Returns 0, or -1 after al_fail. */
int al__win16_setup(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const al_pattern *p = &nd->pat;
    const int N = g->N, K = g->noff, nblk = (N + WL - 1) / WL;
    int *off = al_arena_alloc(&c->arena, (size_t)K * sizeof(int)), *ord = al_arena_alloc(&c->arena, (size_t)K * sizeof(int));
    uint16_t *qm = al_arena_alloc(&c->arena, (size_t)nblk * K * sizeof(uint16_t));
    uint16_t *km = al_arena_alloc(&c->arena, (size_t)nblk * K * sizeof(uint16_t));
    if (!off || !ord || !qm || !km) { al_fail(c, "attention: out of memory"); return -1; }
    int margin = 0;
    for (int o = 0; o < K; o++) {
        off[o] = p->kind == AL_PAT_WINDOW2D ? (o / p->win_w - p->win_h / 2) * p->grid_w + (o % p->win_w - p->win_w / 2)
                                            : o - p->radius;
        if (abs(off[o]) > margin) margin = abs(off[o]);
        ord[o] = o;
    }
    for (int a = 1; a < K; a++)   /* insertion sort, distance descending, stable */
        for (int b = a; b > 0 && off[ord[b - 1]] < off[ord[b]]; b--) { int t = ord[b]; ord[b] = ord[b - 1]; ord[b - 1] = t; }
    const int *key = nd->key;
    for (int blk = 0; blk < nblk; blk++)
        for (int o = 0; o < K; o++) {
            unsigned mq = 0, mk = 0;
            for (int l = 0; l < WL; l++) {
                const int i = blk * WL + l;
                if (i >= N) break;
                if (key[(int64_t)i * K + o] >= 0) mq |= 1u << l;
                const int iq = i - off[o];   /* the query that would see key i at offset o */
                if (iq >= 0 && iq < N && key[(int64_t)iq * K + o] == i) mk |= 1u << l;
            }
            qm[(size_t)blk * K + o] = (uint16_t)mq;
            km[(size_t)blk * K + o] = (uint16_t)mk;
        }
    nd->w_off = off; nd->w_ord = ord; nd->w_qm = qm; nd->w_km = km;
    nd->w_npad = nblk * WL; nd->w_margin = margin;
    return 0;
}

/* Floats of per-thread scratch: four transposed heads of length L = npad + 2·margin, P and dS of
 * one head offset-major (K rows of L), the offset strip. */
size_t al__win16_scratch(const attn_node *nd)
{
    const size_t L = (size_t)nd->w_npad + 2 * (size_t)nd->w_margin;
    return 4 * 16 * L + 2 * (size_t)nd->g.noff * L + (size_t)nd->g.noff * WL;
}

/* Per ISA block below: Xt[d·L + m + i] = X[i·16 + d] for i < n; zero for the other columns of the L. */
static void to_lanes(const float *X /* (n, ld) */, int64_t ld, int n, float *Xt /* (16, L) */, size_t L, int m);

/* The start of a head's backward: Q, K, V, dO transposed into ws, and (when the key pass runs) the
 * margins of the offset-major copies of P and dS zeroed (their middles are written by the query pass). */
static void bwd_setup(const attn_node *nd, const float *Q, const float *Kx, const float *V, int64_t ldi, const float *dO, int64_t ldo,
                      float *ws, int need_keys)
{
    const int N = nd->g.N, K = nd->g.noff, npad = nd->w_npad, m = nd->w_margin;
    const size_t L = (size_t)npad + 2 * (size_t)m;
    float *Pt = ws + 64 * L, *dSt = Pt + (size_t)K * L;
    to_lanes(Q, ldi, N, ws, L, m);
    to_lanes(Kx, ldi, N, ws + 16 * L, L, m);
    to_lanes(V, ldi, N, ws + 32 * L, L, m);
    to_lanes(dO, ldo, N, ws + 48 * L, L, m);
    if (need_keys)
        for (int o = 0; o < K; o++) {
            memset(Pt + (size_t)o * L, 0, (size_t)m * sizeof(float));
            memset(Pt + (size_t)o * L + m + npad, 0, (size_t)m * sizeof(float));
            memset(dSt + (size_t)o * L, 0, (size_t)m * sizeof(float));
            memset(dSt + (size_t)o * L + m + npad, 0, (size_t)m * sizeof(float));
        }
}

#if WL == 16
/* The sum of v[0..15], lane-wise, in the order of GCC's _mm512_reduce_add_ps applied to the
 * 16-lane vector (v[0], …, v[15]): halves (t + t+8), quarters (t + t+4), then (0+2) + (1+3). */
static inline __m512 reduce_tree16(const __m512 v[16])
{
    __m512 t3[8], t6[4];
    for (int t = 0; t < 8; t++) t3[t] = _mm512_add_ps(v[t + 8], v[t]);
    for (int t = 0; t < 4; t++) t6[t] = _mm512_add_ps(t3[t + 4], t3[t]);
    return _mm512_add_ps(_mm512_add_ps(t6[0], t6[2]), _mm512_add_ps(t6[1], t6[3]));
}

/* dots_rows' sum of the sixteen products p[0..15] (reduce16 of sparse.c), lane-wise. */
static inline __m512 dot_tree16(const __m512 p[16])
{
    __m512 s[4];
    for (int L = 0; L < 4; L++)
        s[L] = _mm512_add_ps(_mm512_add_ps(p[4 * L], p[4 * L + 2]), _mm512_add_ps(p[4 * L + 1], p[4 * L + 3]));
    return _mm512_add_ps(_mm512_add_ps(s[0], s[1]), _mm512_add_ps(s[2], s[3]));
}

/* x·Y lane-wise: the products fmadd(x[d], Y[d], 0) (as dots_rows), summed by dot_tree16.
 * Y: 16 rows of stride L, lane 0 at y. */
static inline __m512 dot_lanes16(const __m512 x[16], const float *y, size_t L)
{
    __m512 p[16];
    const __m512 z = _mm512_setzero_ps();
#pragma GCC unroll 16
    for (int d = 0; d < 16; d++) p[d] = _mm512_fmadd_ps(x[d], _mm512_loadu_ps(y + d * L), z);
    return dot_tree16(p);
}

/* r[c] = column c of the 16×16 block whose rows are r[0..15], in registers (unpack, then 128-bit
 * lane shuffles: moves only, no arithmetic). */
static inline void tr16(__m512 r[16])
{
    __m512 t[16], u[16];
    for (int i = 0; i < 8; i++) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; i++) {   /* u[4i + k], 128-bit lane L: column 4L + k of rows 4i..4i+3 */
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int k = 0; k < 4; k++) {
        const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88), v1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
        const __m512 w0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xDD), w1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xDD);
        r[k] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        r[8 + k] = _mm512_shuffle_f32x4(v0, v1, 0xDD);
        r[4 + k] = _mm512_shuffle_f32x4(w0, w1, 0x88);
        r[12 + k] = _mm512_shuffle_f32x4(w0, w1, 0xDD);
    }
}

/* Xt[d·L + m + i] = X[i·16 + d] for i < n; zero for the other columns of the L. */
static void to_lanes(const float *X /* (n, ld) */, int64_t ld, int n, float *Xt /* (16, L) */, size_t L, int m)
{
    const int npad = (n + 15) / 16 * 16;
    for (int d = 0; d < 16; d++) {
        memset(Xt + d * L, 0, (size_t)m * sizeof(float));
        memset(Xt + d * L + m + npad, 0, (L - (size_t)m - (size_t)npad) * sizeof(float));
    }
    for (int i0 = 0; i0 < n; i0 += 16) {
        __m512 r[16];
        for (int i = 0; i < 16; i++) r[i] = i0 + i < n ? _mm512_loadu_ps(X + (int64_t)(i0 + i) * ld) : _mm512_setzero_ps();
        tr16(r);
        for (int d = 0; d < 16; d++) _mm512_storeu_ps(Xt + d * L + m + i0, r[d]);
    }
}

/* o[i·16 + e] = alpha·sum[e] + o[i·16 + e] (or + 0 with fresh) for the lanes i < n: the end of
 * axpy_rows for sixteen rows held transposed (sum = the two chains added). */
static void chains_out(const __m512 sum[16], float alpha, int fresh, float *o /* (n, ld) */, int64_t ld, int n)
{
    const __m512 al = _mm512_set1_ps(alpha);
    __m512 r[16];
    for (int i = 0; i < 16; i++) r[i] = !fresh && i < n ? _mm512_loadu_ps(o + (int64_t)i * ld) : _mm512_setzero_ps();
    if (!fresh) tr16(r);
    for (int e = 0; e < 16; e++) r[e] = _mm512_fmadd_ps(al, sum[e], r[e]);
    tr16(r);
    for (int i = 0; i < n; i++) _mm512_storeu_ps(o + (int64_t)i * ld, r[i]);
}

/* sum[h + e] (e < 8) = Σ_o W[o]·Y[e·L + off[o]] in axpy_rows' two chains (even o, odd o), added:
 * eight features of P·V (or dS·K) for one block of queries, W the (K,16) strip, Y the
 * transposed rows at the block's first query. */
static inline void pv8(const float *W /* (K,16) */, const float *Y, size_t L, const int *off, int K, __m512 *sum /* (8) */)
{
    __m512 a[8], a1[8];
#pragma GCC unroll 8
    for (int e = 0; e < 8; e++) a[e] = a1[e] = _mm512_setzero_ps();
    int o = 0;
    for (; o + 2 <= K; o += 2) {
        const __m512 w0 = _mm512_loadu_ps(W + o * 16), w1 = _mm512_loadu_ps(W + (o + 1) * 16);
        const float *y0 = Y + off[o], *y1 = Y + off[o + 1];
#pragma GCC unroll 8
        for (int e = 0; e < 8; e++) {
            a[e] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(y0 + e * L), a[e]);
            a1[e] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(y1 + e * L), a1[e]);
        }
    }
    if (o < K) {
        const __m512 w0 = _mm512_loadu_ps(W + o * 16);
        const float *y0 = Y + off[o];
#pragma GCC unroll 8
        for (int e = 0; e < 8; e++) a[e] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(y0 + e * L), a[e]);
    }
#pragma GCC unroll 8
    for (int e = 0; e < 8; e++) sum[e] = _mm512_add_ps(a[e], a1[e]);
}

/* Σ_o X[o] (lane-wise) in sixteen slot lanes (o mod 16, in order), then reduce_tree16: the order
 * of exp_shift_sum and of sparse.c's δ. With P non-NULL the terms are P[o·ps]·X[o] (fmadd). */
static inline __m512 lane_sum(const float *X /* (K,16) */, const float *P /* (K, ps) or NULL */, size_t ps, int K)
{
    __m512 acc[16];
#pragma GCC unroll 16
    for (int t = 0; t < 16; t++) acc[t] = _mm512_setzero_ps();
    for (int o0 = 0; o0 < K; o0 += 16) {
#pragma GCC unroll 16
        for (int t = 0; t < 16; t++) {
            if (o0 + t >= K) break;
            const __m512 x = _mm512_loadu_ps(X + (o0 + t) * 16);
            acc[t] = P ? _mm512_fmadd_ps(_mm512_loadu_ps(P + (size_t)(o0 + t) * ps), x, acc[t]) : _mm512_add_ps(acc[t], x);
        }
    }
    return reduce_tree16(acc);
}

/* One head's forward: scores, softmax, P (K, npad) offset-major, O (N,16). */
static void fwd_head(const attn_node *nd, const float *Q, const float *Kx, const float *V, const float *rel /* (K) or NULL */,
                     float *P, float *O, float *ws)
{
    const int N = nd->g.N, K = nd->g.noff, npad = nd->w_npad, m = nd->w_margin;
    const size_t L = (size_t)npad + 2 * (size_t)m;
    const int *off = nd->w_off;
    float *qt = ws, *kt = qt + 16 * L, *vt = kt + 16 * L, *S = vt + 16 * L;
    to_lanes(Q, nd->li.sr, N, qt, L, m);
    to_lanes(Kx, nd->li.sr, N, kt, L, m);
    to_lanes(V, nd->li.sr, N, vt, L, m);
    const __m512 sc = _mm512_set1_ps(nd->g.scale), ninf = _mm512_set1_ps(-INFINITY), zero = _mm512_setzero_ps();
    for (int blk = 0; blk < npad / 16; blk++) {
        const int i0 = blk * 16, n = N - i0 < 16 ? N - i0 : 16;
        const uint16_t *qm = nd->w_qm + (size_t)blk * K;
        __m512 q[16];
#pragma GCC unroll 16
        for (int d = 0; d < 16; d++) q[d] = _mm512_loadu_ps(qt + d * L + m + i0);
        __m512 mx = ninf;
        for (int o = 0; o < K; o++) {   /* scores: scale, relative bias, absent → −inf, the max */
            __m512 s = _mm512_mul_ps(dot_lanes16(q, kt + m + i0 + off[o], L), sc);
            if (rel) s = _mm512_add_ps(s, _mm512_set1_ps(rel[o]));
            s = _mm512_mask_mov_ps(ninf, (__mmask16)qm[o], s);
            _mm512_storeu_ps(S + o * 16, s);
            mx = _mm512_max_ps(mx, s);
        }
        mx = _mm512_mask_mov_ps(mx, _mm512_cmp_ps_mask(mx, ninf, _CMP_EQ_OQ), zero);
        for (int o = 0; o < K; o++)   /* e^(s − max); exp_shift_sum's sixteen slot lanes */
            _mm512_storeu_ps(S + o * 16, al__exp_cephes_v(_mm512_sub_ps(_mm512_loadu_ps(S + o * 16), mx)));
        const __m512 sum = lane_sum(S, NULL, 0, K);
        const __m512 inv = _mm512_maskz_div_ps(_mm512_cmp_ps_mask(sum, zero, _CMP_GT_OQ), _mm512_set1_ps(1.0f), sum);
        for (int o = 0; o < K; o++) {
            __m512 pv = _mm512_mul_ps(_mm512_loadu_ps(S + o * 16), inv);
            _mm512_storeu_ps(S + o * 16, pv);
            _mm512_storeu_ps(P + ((size_t)blk * K + o) * 16, pv);
        }
        __m512 res[16];   /* O = P·V, eight features at a time */
        pv8(S, vt + m + i0, L, off, K, res);
        pv8(S, vt + 8 * L + m + i0, L, off, K, res + 8);
        chains_out(res, 1.f, 1, O + (int64_t)i0 * nd->lo.sr, nd->lo.sr, n);
    }
}

static void bwd_head(const attn_node *nd, const float *Q, const float *Kx, const float *V, const float *dO, const float *P,
                     float *dS, float *dq, float *dk, float *dv, float *ws, int fresh)
{
    const int N = nd->g.N, K = nd->g.noff, npad = nd->w_npad, m = nd->w_margin;
    const size_t L = (size_t)npad + 2 * (size_t)m;
    const int *off = nd->w_off, *ord = nd->w_ord;
    float *qt = ws, *kt = qt + 16 * L, *vt = kt + 16 * L, *dot = vt + 16 * L, *Pt = dot + 16 * L, *dSt = Pt + (size_t)K * L;
    float *X = dSt + (size_t)K * L;
    const int need_keys = dk || dv;
    bwd_setup(nd, Q, Kx, V, nd->li.sr, dO, nd->lo.sr, ws, need_keys);
    for (int blk = 0; blk < npad / 16; blk++) {   /* queries: dS = P∘(dO·Vᵀ − δ), dQ += scale·dS·K */
        const int i0 = blk * 16, n = N - i0 < 16 ? N - i0 : 16;
        const uint16_t *qm = nd->w_qm + (size_t)blk * K;
        const float *Pb = P + (size_t)blk * K * 16;
        float *dSb = dS + (size_t)blk * K * 16;
        __m512 x16[16];
#pragma GCC unroll 16
        for (int d = 0; d < 16; d++) x16[d] = _mm512_loadu_ps(dot + d * L + m + i0);
        for (int o = 0; o < K; o++)
            _mm512_storeu_ps(X + o * 16, _mm512_maskz_mov_ps((__mmask16)qm[o], dot_lanes16(x16, vt + m + i0 + off[o], L)));
        const __m512 delta = lane_sum(X, Pb, 16, K);
        for (int o = 0; o < K; o++) {
            const __m512 pv = _mm512_loadu_ps(Pb + o * 16);
            __m512 d = _mm512_mul_ps(pv, _mm512_sub_ps(_mm512_loadu_ps(X + o * 16), delta));
            d = _mm512_maskz_mov_ps((__mmask16)qm[o], d);
            _mm512_storeu_ps(X + o * 16, d);
            _mm512_storeu_ps(dSb + o * 16, d);
            if (need_keys) {
                _mm512_storeu_ps(Pt + (size_t)o * L + m + i0, pv);
                _mm512_storeu_ps(dSt + (size_t)o * L + m + i0, d);
            }
        }
        if (!dq) continue;
        __m512 res[16];
        pv8(X, kt + m + i0, L, off, K, res);
        pv8(X, kt + 8 * L + m + i0, L, off, K, res + 8);
        chains_out(res, nd->g.scale, fresh, dq + (int64_t)i0 * nd->li.sr, nd->li.sr, n);
    }
    if (!dk && !dv) return;
    for (int blk = 0; blk < npad / 16; blk++) {   /* keys: dV += Pᵀ·dO, dK += scale·dSᵀ·Q, in list order */
        const int j0 = blk * 16, n = N - j0 < 16 ? N - j0 : 16;
        const uint16_t *km = nd->w_km + (size_t)blk * K;
        for (int pass = 0; pass < 2; pass++) {
            float *dst = pass ? dk : dv;
            if (!dst) continue;
            const float *W = pass ? dSt : Pt, *Y = pass ? qt : dot;
            __m512 res[16];
            for (int h = 0; h < 16; h += 8) {
                __m512 a[8], a1[8];
#pragma GCC unroll 8
                for (int e = 0; e < 8; e++) a[e] = a1[e] = _mm512_setzero_ps();
                __mmask16 par = 0;   /* per lane: an odd number of its present slots seen so far */
                for (int t = 0; t < K; t++) {
                    const int o = ord[t];
                    const __mmask16 kv = (__mmask16)km[o];
                    if (!kv) continue;
                    const int base = j0 - off[o];   /* the query of lane 0 */
                    const __mmask16 me = kv & (__mmask16)~par, mo = kv & par;
                    par ^= kv;
                    const __m512 w = _mm512_loadu_ps(W + (size_t)o * L + m + base);
                    const float *yp = Y + (size_t)h * L + m + base;
                    if (!mo) {   /* every lane at an even position (inside the grid: always one chain) */
#pragma GCC unroll 8
                        for (int e = 0; e < 8; e++) a[e] = _mm512_mask3_fmadd_ps(w, _mm512_loadu_ps(yp + e * L), a[e], me);
                    } else if (!me) {
#pragma GCC unroll 8
                        for (int e = 0; e < 8; e++) a1[e] = _mm512_mask3_fmadd_ps(w, _mm512_loadu_ps(yp + e * L), a1[e], mo);
                    } else {
#pragma GCC unroll 8
                        for (int e = 0; e < 8; e++) {
                            const __m512 y = _mm512_loadu_ps(yp + e * L);
                            a[e] = _mm512_mask3_fmadd_ps(w, y, a[e], me);
                            a1[e] = _mm512_mask3_fmadd_ps(w, y, a1[e], mo);
                        }
                    }
                }
#pragma GCC unroll 8
                for (int e = 0; e < 8; e++) res[h + e] = _mm512_add_ps(a[e], a1[e]);
            }
            chains_out(res, pass ? nd->g.scale : 1.f, fresh, dst + (int64_t)j0 * nd->li.sr, nd->li.sr, n);
        }
    }
}

#else

/* AVX2: eight queries per vector. sparse.c's sums on this build are simpler than on AVX-512: a
 * score is dot_lanes' two FMAs per lane of eight then ((t0+t4)+(t2+t6)) + ((t1+t5)+(t3+t7)); the
 * softmax sum is row_sum's sixteen slot lanes added in order; δ and every P·V-like sum are one
 * FMA chain in list order (axpy_rows has one chain here). Absent slots are skipped by masks. */

/* lane l of the result is all ones where bit l of bits is set */
static inline __m256 lanes8(unsigned bits) { return _mm256_castsi256_ps(al_v_mask_bits(bits)); }

/* Xt[d·L + m + i] = X[i·16 + d] for i < n; zero for the other columns of the L. */
static void to_lanes(const float *X /* (n, ld) */, int64_t ld, int n, float *Xt /* (16, L) */, size_t L, int m)
{
    const int npad = (n + 7) / 8 * 8;
    for (int d = 0; d < 16; d++) {
        memset(Xt + d * L, 0, (size_t)m * sizeof(float));
        memset(Xt + d * L + m + npad, 0, (L - (size_t)m - (size_t)npad) * sizeof(float));
    }
    for (int i0 = 0; i0 < n; i0 += 8)
        for (int h = 0; h < 16; h += 8) {
            __m256 r[8];
            for (int i = 0; i < 8; i++) r[i] = i0 + i < n ? _mm256_loadu_ps(X + (int64_t)(i0 + i) * ld + h) : _mm256_setzero_ps();
            al__tr8(r);
            for (int d = 0; d < 8; d++) _mm256_storeu_ps(Xt + (h + d) * L + m + i0, r[d]);
        }
}

/* x·y lane-wise for eight queries, dot_lanes' order on AVX2. x, y: 16 rows of stride L. */
static inline __m256 dot8(const float *x, const float *y, size_t L)
{
    const __m256 z = _mm256_setzero_ps();
    __m256 t[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; j++)
        t[j] = _mm256_fmadd_ps(_mm256_loadu_ps(x + (j + 8) * L), _mm256_loadu_ps(y + (j + 8) * L),
                               _mm256_fmadd_ps(_mm256_loadu_ps(x + j * L), _mm256_loadu_ps(y + j * L), z));
    return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[0], t[4]), _mm256_add_ps(t[2], t[6])),
                         _mm256_add_ps(_mm256_add_ps(t[1], t[5]), _mm256_add_ps(t[3], t[7])));
}

/* o[i·16 + e] = fmadd(alpha, sum[e], o[i·16 + e] or 0 with fresh) for the lanes i < n. */
static void chains_out(const __m256 sum[16], float alpha, int fresh, float *o /* (n, ld) */, int64_t ld, int n)
{
    const __m256 al = _mm256_set1_ps(alpha), z = _mm256_setzero_ps();
    __m256 lo[8], hi[8];
    for (int e = 0; e < 8; e++) { lo[e] = sum[e]; hi[e] = sum[8 + e]; }
    al__tr8(lo);
    al__tr8(hi);
    for (int i = 0; i < n; i++) {
        float *r = o + (int64_t)i * ld;
        _mm256_storeu_ps(r, _mm256_fmadd_ps(al, lo[i], fresh ? z : _mm256_loadu_ps(r)));
        _mm256_storeu_ps(r + 8, _mm256_fmadd_ps(al, hi[i], fresh ? z : _mm256_loadu_ps(r + 8)));
    }
}

/* sum[e] (e < 8) = Σ_o W[o]·Y[e·L + off[o]], one FMA chain in offset order (axpy_rows on AVX2). */
static inline void chain8(const float *W /* (K,8) */, const float *Y, size_t L, const int *off, int K, __m256 *sum /* (8) */)
{
    __m256 a[8];
#pragma GCC unroll 8
    for (int e = 0; e < 8; e++) a[e] = _mm256_setzero_ps();
    for (int o = 0; o < K; o++) {
        const __m256 w = _mm256_loadu_ps(W + o * 8);
        const float *y = Y + off[o];
#pragma GCC unroll 8
        for (int e = 0; e < 8; e++) a[e] = _mm256_fmadd_ps(w, _mm256_loadu_ps(y + e * L), a[e]);
    }
#pragma GCC unroll 8
    for (int e = 0; e < 8; e++) sum[e] = a[e];
}

/* One head's forward: scores, softmax, P block-major, O (N,16). */
static void fwd_head(const attn_node *nd, const float *Q, const float *Kx, const float *V, const float *rel /* (K) or NULL */,
                     float *P, float *O, float *ws)
{
    const int N = nd->g.N, K = nd->g.noff, npad = nd->w_npad, m = nd->w_margin;
    const size_t L = (size_t)npad + 2 * (size_t)m;
    const int *off = nd->w_off;
    float *qt = ws, *kt = qt + 16 * L, *vt = kt + 16 * L, *S = vt + 16 * L;
    to_lanes(Q, nd->li.sr, N, qt, L, m);
    to_lanes(Kx, nd->li.sr, N, kt, L, m);
    to_lanes(V, nd->li.sr, N, vt, L, m);
    const __m256 sc = _mm256_set1_ps(nd->g.scale), ninf = _mm256_set1_ps(-INFINITY), zero = _mm256_setzero_ps();
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int blk = 0; blk < npad / 8; blk++) {
        const int i0 = blk * 8, n = N - i0 < 8 ? N - i0 : 8;
        const uint16_t *qm = nd->w_qm + (size_t)blk * K;
        __m256 mx = ninf;
        for (int o = 0; o < K; o++) {   /* scores: scale, relative bias, absent → −inf, the max */
            __m256 s = _mm256_mul_ps(dot8(qt + m + i0, kt + m + i0 + off[o], L), sc);
            if (rel) s = _mm256_add_ps(s, _mm256_set1_ps(rel[o]));
            s = _mm256_blendv_ps(ninf, s, lanes8(qm[o]));
            _mm256_storeu_ps(S + o * 8, s);
            mx = _mm256_max_ps(mx, s);
        }
        mx = _mm256_blendv_ps(mx, zero, _mm256_cmp_ps(mx, ninf, _CMP_EQ_OQ));
        for (int o = 0; o < K; o++)
            _mm256_storeu_ps(S + o * 8, al__exp_cephes_v(_mm256_sub_ps(_mm256_loadu_ps(S + o * 8), mx)));
        __m256 sum = zero;   /* row_sum: sixteen slot lanes, each in order, then added in order */
        for (int t = 0; t < 16; t++) {
            __m256 a = zero;
            for (int o = t; o < K; o += 16) a = _mm256_add_ps(a, _mm256_loadu_ps(S + o * 8));
            sum = _mm256_add_ps(sum, a);
        }
        const __m256 inv = _mm256_and_ps(_mm256_cmp_ps(sum, zero, _CMP_GT_OQ), _mm256_div_ps(one, sum));
        for (int o = 0; o < K; o++) {
            const __m256 pv = _mm256_mul_ps(_mm256_loadu_ps(S + o * 8), inv);
            _mm256_storeu_ps(S + o * 8, pv);
            _mm256_storeu_ps(P + ((size_t)blk * K + o) * 8, pv);
        }
        __m256 res[16];   /* O = P·V, eight features at a time */
        chain8(S, vt + m + i0, L, off, K, res);
        chain8(S, vt + 8 * L + m + i0, L, off, K, res + 8);
        chains_out(res, 1.f, 1, O + (int64_t)i0 * nd->lo.sr, nd->lo.sr, n);
    }
}

/* One head's backward: the query pass (dS, dQ), then the key pass (dK, dV) in list order. */
static void bwd_head(const attn_node *nd, const float *Q, const float *Kx, const float *V, const float *dO, const float *P,
                     float *dS, float *dq, float *dk, float *dv, float *ws, int fresh)
{
    const int N = nd->g.N, K = nd->g.noff, npad = nd->w_npad, m = nd->w_margin;
    const size_t L = (size_t)npad + 2 * (size_t)m;
    const int *off = nd->w_off, *ord = nd->w_ord;
    float *qt = ws, *kt = qt + 16 * L, *vt = kt + 16 * L, *dot = vt + 16 * L, *Pt = dot + 16 * L, *dSt = Pt + (size_t)K * L;
    float *X = dSt + (size_t)K * L;
    const int need_keys = dk || dv;
    bwd_setup(nd, Q, Kx, V, nd->li.sr, dO, nd->lo.sr, ws, need_keys);
    for (int blk = 0; blk < npad / 8; blk++) {   /* queries: dS = P∘(dO·Vᵀ − δ), dQ += scale·dS·K */
        const int i0 = blk * 8, n = N - i0 < 8 ? N - i0 : 8;
        const uint16_t *qm = nd->w_qm + (size_t)blk * K;
        const float *Pb = P + (size_t)blk * K * 8;
        float *dSb = dS + (size_t)blk * K * 8;
        __m256 delta = _mm256_setzero_ps();
        for (int o = 0; o < K; o++) {   /* δ: one chain over the present slots */
            const __m256 x = dot8(dot + m + i0, vt + m + i0 + off[o], L);
            _mm256_storeu_ps(X + o * 8, x);
            delta = _mm256_blendv_ps(delta, _mm256_fmadd_ps(_mm256_loadu_ps(Pb + o * 8), x, delta), lanes8(qm[o]));
        }
        for (int o = 0; o < K; o++) {
            const __m256 pv = _mm256_loadu_ps(Pb + o * 8);
            const __m256 d = _mm256_and_ps(lanes8(qm[o]), _mm256_mul_ps(pv, _mm256_sub_ps(_mm256_loadu_ps(X + o * 8), delta)));
            _mm256_storeu_ps(X + o * 8, d);
            _mm256_storeu_ps(dSb + o * 8, d);
            if (need_keys) {
                _mm256_storeu_ps(Pt + (size_t)o * L + m + i0, pv);
                _mm256_storeu_ps(dSt + (size_t)o * L + m + i0, d);
            }
        }
        if (!dq) continue;
        __m256 res[16];
        chain8(X, kt + m + i0, L, off, K, res);
        chain8(X, kt + 8 * L + m + i0, L, off, K, res + 8);
        chains_out(res, nd->g.scale, fresh, dq + (int64_t)i0 * nd->li.sr, nd->li.sr, n);
    }
    if (!need_keys) return;
    for (int blk = 0; blk < npad / 8; blk++) {   /* keys: dV += Pᵀ·dO, dK += scale·dSᵀ·Q, in list order */
        const int j0 = blk * 8, n = N - j0 < 8 ? N - j0 : 8;
        const uint16_t *km = nd->w_km + (size_t)blk * K;
        for (int pass = 0; pass < 2; pass++) {
            float *dst = pass ? dk : dv;
            if (!dst) continue;
            const float *W = pass ? dSt : Pt, *Y = pass ? qt : dot;
            __m256 res[16];
            for (int h = 0; h < 16; h += 8) {
                __m256 a[8];
#pragma GCC unroll 8
                for (int e = 0; e < 8; e++) a[e] = _mm256_setzero_ps();
                for (int t = 0; t < K; t++) {
                    const int o = ord[t];
                    const unsigned kv = km[o];
                    if (!kv) continue;
                    const int base = j0 - off[o];   /* the query of lane 0 */
                    const __m256 w = _mm256_loadu_ps(W + (size_t)o * L + m + base);
                    const float *yp = Y + (size_t)h * L + m + base;
                    if (kv == 0xff) {
#pragma GCC unroll 8
                        for (int e = 0; e < 8; e++) a[e] = _mm256_fmadd_ps(w, _mm256_loadu_ps(yp + e * L), a[e]);
                    } else {
                        const __m256 mk = lanes8(kv);
#pragma GCC unroll 8
                        for (int e = 0; e < 8; e++)
                            a[e] = _mm256_blendv_ps(a[e], _mm256_fmadd_ps(w, _mm256_loadu_ps(yp + e * L), a[e]), mk);
                    }
                }
#pragma GCC unroll 8
                for (int e = 0; e < 8; e++) res[h + e] = a[e];
            }
            chains_out(res, pass ? nd->g.scale : 1.f, fresh, dst + (int64_t)j0 * nd->li.sr, nd->li.sr, n);
        }
    }
}

#endif

void al__win16_forward(const attn_node *nd, const float *q, const float *k, const float *v, const float *rel /* (H,K) or NULL */,
                       float *P /* (B,H,npad/WL,K,WL) */, float *out, float *scratch)
{
    const al_attn_cfg *g = &nd->g;
    const int64_t heads = (int64_t)g->B * g->H, ps = (int64_t)g->noff * nd->w_npad;
    const size_t per = al__win16_scratch(nd);
    al__win16_runs++;
    AL_OMP("omp parallel num_threads(nd->nthr) if (heads > 1 && heads * ps * 32 > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        AL_OMP("omp for schedule(static)")
        for (int64_t bh = 0; bh < heads; bh++) {
            const int64_t at = al__lay_head(&nd->li, bh, g->H);
            fwd_head(nd, q + at, k + at, v + at, rel ? rel + (bh % g->H) * g->noff : NULL, P + bh * ps,
                     out + al__lay_head(&nd->lo, bh, g->H), ws);
        }
    }
}

/* One head's backward: the query pass (dS offset-major, dQ), then the key pass (dK, dV). */
static void win16_run_backward(const attn_node *nd, const float *q, const float *k, const float *v, const float *dO,
                               float *dS /* (B,H,npad/WL,K,WL) */, float *dq, float *dk, float *dv, float *scratch, int fresh)
{
    const al_attn_cfg *g = &nd->g;
    const int64_t heads = (int64_t)g->B * g->H, ps = (int64_t)g->noff * nd->w_npad;
    const size_t per = al__win16_scratch(nd);
    AL_OMP("omp parallel num_threads(nd->nthr) if (heads > 1 && heads * ps * 96 > AL_PAR_MIN)")
    {
        float *ws = scratch + (size_t)al__thread_id() * per;
        AL_OMP("omp for schedule(static)")
        for (int64_t bh = 0; bh < heads; bh++) {
            const int64_t at = al__lay_head(&nd->li, bh, g->H);
            bwd_head(nd, q + at, k + at, v + at, dO + al__lay_head(&nd->lo, bh, g->H), nd->P + bh * ps, dS + bh * ps,
                     dq ? dq + at : NULL, dk ? dk + at : NULL, dv ? dv + at : NULL, ws, fresh);
        }
    }
}

/* drel[h, o] += Σ dS over (b, query), in sparse.c's order: per head, b, then the queries in order, each
 * offset its own sum (a block's (K,WL) strip transposed so the offsets are innermost). */
static void rel_grad(const attn_node *nd, const float *dS /* (B,H,npad/WL,K,WL) */, float *drel /* (H,K) */)
{
    const int B = nd->g.B, H = nd->g.H, N = nd->g.N, K = nd->g.noff, nb = nd->w_npad / WL;
    AL_OMP("omp parallel for schedule(static) if (H > 1 && (int64_t)B * N * K > AL_PAR_MIN)")
    for (int h = 0; h < H; h++) {
        float *dr = drel + (int64_t)h * K, t[WL * 64];
        for (int b = 0; b < B; b++)
            for (int blk = 0; blk < nb; blk++) {
                const float *ds = dS + (((int64_t)b * H + h) * nb + blk) * K * WL;   /* (K,WL) */
                const int n = N - blk * WL < WL ? N - blk * WL : WL;
                for (int o0 = 0; o0 < K; o0 += 64) {
                    const int ko = K - o0 < 64 ? K - o0 : 64;
                    for (int o = 0; o < ko; o++)
                        for (int l = 0; l < WL; l++) t[l * 64 + o] = ds[(o0 + o) * WL + l];
                    for (int l = 0; l < n; l++)
                        for (int o = 0; o < ko; o++) dr[o0 + o] += t[l * 64 + o];
                }
            }
    }
}

void al__win16_backward(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const float *q, *k, *v;
    float *dq, *dk, *dv;
    int fresh = 0;   /* every row of every head's dq, dk, dv is written once (chains_out): no zeroing first */
    al__attn_ptrs(c, nd, &q, &k, &v, &dq, &dk, &dv, &fresh);
    float *drel = nd->rel && nd->rel->requires_grad ? al_grad(c, nd->rel) : NULL;
    float *dS = al_arena_alloc(&c->arena, (size_t)g->B * g->H * g->noff * nd->w_npad * sizeof(float));
    float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * al__win16_scratch(nd) * sizeof(float));
    if (!dS || !scr) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    win16_run_backward(nd, q, k, v, nd->out->grad, dS, dq, dk, dv, scr, fresh);
    if (drel) rel_grad(nd, dS, drel);
}

void al__win16_weights(const attn_node *nd, float *w /* (B,H,N,K) */)
{
    const int N = nd->g.N, K = nd->g.noff, np = nd->w_npad;
    for (int64_t bh = 0; bh < (int64_t)nd->g.B * nd->g.H; bh++)
        for (int i = 0; i < N; i++)
            for (int o = 0; o < K; o++)
                w[(bh * N + i) * K + o] = nd->P[(bh * np + (int64_t)(i / WL) * WL) * K + o * WL + i % WL];
}

#else   /* neither AVX-512 nor AVX2 + FMA: the slot-list kernels run */

const char *al__win16_path(void) { return "slot lists"; }
int al__win16_ok(const al_attn_cfg *g, const al_pattern *p, const void *bias) { (void)g; (void)p; (void)bias; return 0; }
int al__win16_setup(al_ctx *c, attn_node *nd) { (void)c; (void)nd; return -1; }
size_t al__win16_scratch(const attn_node *nd) { (void)nd; return 0; }
void al__win16_forward(const attn_node *nd, const float *q, const float *k, const float *v, const float *rel, float *P, float *out, float *scratch)
{ (void)nd; (void)q; (void)k; (void)v; (void)rel; (void)P; (void)out; (void)scratch; }
void al__win16_backward(al_ctx *c, attn_node *nd) { (void)c; (void)nd; }
void al__win16_weights(const attn_node *nd, float *w) { (void)nd; (void)w; }

#endif
