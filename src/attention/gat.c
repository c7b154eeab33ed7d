/* gat.c — graph attention with the additive score and softmax (GAT): every head of a node at once.
 *
 * The generic sparse kernels (sparse.c) run per (b, h, row): at a graph's degree of ~5 their 16-key vectors
 * are mostly masked and the per-row work (index loads, row max, three sweeps) is repeated for
 * every head. Here the vector lanes are the heads (up to HV per chunk): one walk of a node's
 * adjacency serves all of them, scores, softmax and keep bits are one vector op per slot, and with
 * v (and dO) stored heads-innermost the weighted sums and dP = dO·V are plain vector FMAs, no
 * horizontal sums. Graph keys are never absent, so there is no absent-slot handling either. */
#include "attention/attention_impl.h"
#include "attention/dropout_impl.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include <math.h>

#define HV 16   /* heads per vector: the lanes of al_v16 (core/simd_impl.h) */

/* Rows per chunk of the passes over nodes, handed out dynamically: ~16 chunks per thread, so that on
 * a shared machine a thread that gets less CPU time takes fewer chunks instead of holding the other
 * at the barrier. Rows are independent (and pass 2's partial sums go by fixed parts), so which
 * thread takes a chunk changes no value. */
static inline int64_t gat_chunk(int64_t rows, int nthr) { const int64_t c = rows / (16 * (int64_t)nthr); return c > 16 ? c : 16; }


/* Floats of per-thread scratch: a line per slot of the longest list, two more, then the keep bits of
 * one head's slots (gat_keep_bits) as uint32 (whole lines). */
static size_t gat_scratch(int maxdeg) { return ((size_t)maxdeg + 2) * HV + ((size_t)maxdeg + HV - 1) / HV * HV; }

/* The keep bits in a thread's scratch E. */
static inline uint32_t *gat_bits(float *E, int maxdeg) { return (uint32_t *)(E + ((size_t)maxdeg + 2) * HV); }


/* o (X,H) = row r = b·N + i of src (B,H,N,X) heads innermost: the X features of every head of node i. */
static inline void heads_inner(const float *restrict src /* (B,H,N,X) */, float *restrict o /* (X,H) */, int H, int N, int X, int64_t r)
{
    const int64_t b = r / N, i = r % N;
    for (int h = 0; h < H; h++) {
        const float *s = src + ((b * H + h) * N + i) * X;
        for (int x = 0; x < X; x++) o[(int64_t)x * H + h] = s[x];
    }
}

/* Rows (b, h0 + l, i) of o (B,H,N,X), l < hc: = (or += with add) Σ_t W[t·HV + l] · Y_l[idx[t], :]
 * + a1[h0 + l, :]·c1[l] + a2[h0 + l, :]·c2[l] (a1, a2 (H,X) optional), where head l's rows are
 * Y_l = Yb + l·hs, ys floats apart: (B,H,N,X) from Yb = Y[b, h0] (hs = N·X, ys = X), or one head's
 * node records (hs = 0, ys = rs). Rows with the weight broadcast: the features are the lanes, so
 * the result is stored as it is (no transpose) and one head (H = 1) takes one FMA per slot. */
static inline void gat_wsum(const float *W /* (n, HV) */, const int *idx /* (n) */, int64_t n, const float *Yb, int64_t hs, int64_t ys,
                            float *o /* (B,H,N,X) */, int add,
                            const float *a1 /* (H,X) or NULL */, const float *c1 /* (hc) */, const float *a2 /* (H,X) or NULL */, const float *c2 /* (hc) */,
                            int H, int N, int X, int64_t b, int64_t i, int h0, int hc)
{
    for (int l = 0; l < hc; l++) {
        const int64_t bh = b * H + h0 + l;
        const float *Yh = Yb + l * hs;
        float *oh = o + (bh * N + i) * X;
        for (int x0 = 0; x0 < X; x0 += HV) {
            const al_m16 fm = al_v16_mask(X - x0);
            al_v16 acc = al_v16_zero();
            for (int64_t t = 0; t < n; t++) acc = al_v16_fma(al_v16_set1(W[t * HV + l]), al_v16_load(fm, Yh + (int64_t)idx[t] * ys + x0), acc);
            if (a1) acc = al_v16_fma(al_v16_load(fm, a1 + (int64_t)(h0 + l) * X + x0), al_v16_set1(c1[l]), acc);
            if (a2) acc = al_v16_fma(al_v16_load(fm, a2 + (int64_t)(h0 + l) * X + x0), al_v16_set1(c2[l]), acc);
            if (add) acc = al_v16_add(al_v16_load(fm, oh + x0), acc);
            al_v16_store(fm, oh + x0, acc);
        }
    }
}

#define GAT_AHEAD 32   /* slots ahead (in the slot list's order, across rows) whose reads at random are prefetched */

/* Prefetch len floats at p: the data a slot GAT_AHEAD slots on reads at random, so that its cache
 * misses overlap the work of the slots before (a hint: no value changes). One slot's prefetch per
 * slot, not a row's at the start of each row: the misses then stay spread evenly in flight (a
 * microbenchmark of rows of 11 reads of 5 lines at random: 20-30 % faster than prefetching the
 * row 4 rows ahead at once). */
static inline void gat_prefetch(const float *p, int len)
{
    for (int o = 0; o < len * (int)sizeof(float); o += 64) __builtin_prefetch((const char *)p + o);
}

/* Whether a sum Σ w·v of HV heads' chunk with hc heads is better with the heads in the lanes
 * (gat_wsum_lanes: X FMAs per slot over one contiguous row of vt) than with the features in them
 * (gat_wsum: hc·⌈X/HV⌉ FMAs per slot, but over hc rows of as many head planes, read at random). */
static inline int gat_lanes(int X, int hc) { return X <= 2 * hc * ((X + HV - 1) / HV); }

/* gat_wsum from the heads-innermost copy Yt (B,N,X,H) of Y (rows ys floats apart), with a1t, a2t (X,H) for a1, a2 and
 * c1, c2 as lines: the same FMAs and adds per head and feature in the same order (t ascending from
 * zero, then a1, a2, then o), so the same bits, with the heads in the lanes. X features at a time
 * in registers (8 at most), each exchanged with o through a line. */
static inline void gat_wsum_lanes(const float *W /* (n, HV) */, const int *idx /* (n) */, int64_t n, const float *Yt /* (B,N,X,H) */,
                                  int64_t ys, float *o /* (B,H,N,X) */, int add, const float *a1t /* (X,H) or NULL */, const float *c1 /* (HV) */,
                                  const float *a2t /* (X,H) or NULL */, const float *c2 /* (HV) */, int H, int N, int X, int64_t b,
                                  int64_t i, int h0, int hc)
{
    const al_m16 m = al_v16_mask(hc);
    const float *Yb = Yt + b * N * ys + h0;
    float *ob = o + (b * H + h0) * N * X + i * X;   /* head h0 + l, feature x at ob[l·N·X + x] */
    _Alignas(64) float line[HV];
    for (int x0 = 0; x0 < X; x0 += 8) {
        const int nx = X - x0 < 8 ? X - x0 : 8;
        al_v16 acc[8];
        for (int u = 0; u < 8; u++) acc[u] = al_v16_zero();
        for (int64_t t = 0; t < n; t++) {
            const al_v16 w = al_v16_ldl(W + t * HV);
            const float *y = Yb + (int64_t)idx[t] * ys + (int64_t)x0 * H;
#pragma GCC unroll 8
            for (int u = 0; u < 8; u++)
                if (u < nx) acc[u] = al_v16_fma(w, al_v16_load(m, y + (int64_t)u * H), acc[u]);
        }
        for (int u = 0; u < nx; u++) {
            const int64_t x = x0 + u;
            al_v16 a = acc[u];
            if (a1t) a = al_v16_fma(al_v16_load(m, a1t + x * H + h0), al_v16_ldl(c1), a);
            if (a2t) a = al_v16_fma(al_v16_load(m, a2t + x * H + h0), al_v16_ldl(c2), a);
            if (add) {
                for (int l = 0; l < hc; l++) line[l] = ob[l * (int64_t)N * X + x];
                a = al_v16_add(al_v16_load(m, line), a);
            }
            al_v16_stl(line, a);
            for (int l = 0; l < hc; l++) ob[l * (int64_t)N * X + x] = line[l];
        }
    }
}

/* Forward: transposes (vt, qt, kt), sq = a_q·q and sk = a_k·k per node, then per query node the
 * scores of all heads, softmax, dropout and o = Σ w·v, in one parallel region. */
void al__attn_gat_forward(attn_node *nd, const float *q /* (B,H,N,D) */, const float *k /* (B,H,N,D) */,
                          const float *v /* (B,H,N,Dv) */, float *out /* (B,H,N,Dv) */)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H, nch = (H + HV - 1) / HV;
    const int64_t rows = (int64_t)g->B * N, slots = g->slots;
    const int64_t *qptr = nd->qptr; const int *key = nd->key;
    float *vt = nd->vt, *qt = nd->qt, *kt = nd->kt, *P = nd->P, *sq = nd->sq, *sk = nd->sk, *ms = nd->ms;
    const int64_t rs = nd->rs, qs = nd->qs, ks = nd->ks;
    const gat_steps st = gat_keep_steps(g);
    const int64_t chunk = gat_chunk(rows, nd->nthr);
    (void)chunk;   /* no OpenMP: unused */
    AL_OMP("omp parallel num_threads(nd->nthr) if ((rows + g->B * slots) * H * (D + Dv) > AL_PAR_MIN)")
    {
        AL_OMP("omp for schedule(static) nowait")
        for (int64_t r = 0; r < rows; r++) {
            heads_inner(v, vt + r * rs, H, N, Dv, r);
            if (qt != vt) heads_inner(q, qt + r * qs, H, N, D, r);
            if (kt != vt && kt != qt) heads_inner(k, kt + r * ks, H, N, D, r);
        }
        /* sq, sk: a separate sweep, so that the masked loads find the copies' scalar stores
         * drained; static schedules of the same count give each thread the rows it copied. */
        AL_OMP("omp for schedule(static)")
        for (int64_t r = 0; r < rows; r++)
            for (int h0 = 0; h0 < H; h0 += HV) {
                const al_m16 m = al_v16_mask(H - h0);
                al_v16 a = al_v16_zero(), b = al_v16_zero();
                for (int d = 0; d < D; d++) {
                    a = al_v16_fma(al_v16_load(m, nd->aqt + d * H + h0), al_v16_load(m, qt + r * qs + d * H + h0), a);
                    b = al_v16_fma(al_v16_load(m, nd->akt + d * H + h0), al_v16_load(m, kt + r * ks + d * H + h0), b);
                }
                al_v16_store(m, sq + r * rs + h0, a);
                al_v16_store(m, sk + r * rs + h0, b);
            }
        /* E: this row's scores of HV heads, one 64-byte line per slot. Kept apart from P, whose
         * slots overlap at a stride of H < HV: a masked load right after a masked store to the
         * same line waits for the store (no forwarding), which serialised the exp chain. */
        float *E = nd->scr + (size_t)al__thread_id() * gat_scratch(nd->maxdeg);
        uint32_t *kb = gat_bits(E, nd->maxdeg);
        AL_OMP("omp for schedule(dynamic, chunk) nowait")
        for (int64_t r = 0; r < rows; r++) {
            const int64_t b = r / N, i = r % N, s0 = qptr[i], s1 = qptr[i + 1];
            float *Pb = P + b * slots * H;                  /* slot s of head h at Pb[s·H + h] */
            const float *skb = sk + b * N * rs;
            for (int c = 0; c < nch; c++) {
                const int h0 = c * HV, hc = H - h0 < HV ? H - h0 : HV;
                const al_m16 m = al_v16_mask(hc);
                const al_v16 sqi = al_v16_load(m, sq + r * rs + h0);
                al_v16 mx = al_v16_set1(-INFINITY), sum = al_v16_zero();
                for (int64_t s = s0; s < s1; s++) {   /* LeakyReLU(sq_i + sk_j) */
                    if (c == 0 && s + GAT_AHEAD < slots) gat_prefetch(vt + b * N * rs + (int64_t)key[s + GAT_AHEAD] * rs, (Dv + 1) * H);
                    al_v16 e = al_v16_add(sqi, al_v16_load(m, skb + (int64_t)key[s] * rs + h0));
                    e = al_v16_pos_or(e, e, g->slope);
                    al_v16_stl(E + (s - s0) * HV, e);
                    mx = al_v16_max(mx, e);
                }
                for (int64_t s = s0; s < s1; s++) {
                    al_v16 p = al__exp_cephes_v16(al_v16_sub(al_v16_ldl(E + (s - s0) * HV), mx));
                    al_v16_stl(E + (s - s0) * HV, p);
                    sum = al_v16_add(sum, p);
                }
                const al_v16 inv = al_v16_recip(sum);
                al_v16_store(m, ms + r * rs + h0, mx);       /* for the backward's gat_weight */
                al_v16_store(m, ms + r * rs + H + h0, inv);
                if (g->drop && hc == 1) gat_keep_run(g, &st, b * H + h0, 1, NULL, s0, s1 - s0, kb);
                for (int64_t s = s0; s < s1; s++) {   /* normalise, keep bits; E: the applied weights */
                    const al_v16 p = al_v16_mul(al_v16_ldl(E + (s - s0) * HV), inv);
                    al_v16_store(m, Pb + s * H + h0, p);
                    al_v16 w = p;
                    if (g->drop) w = al_v16_keep(hc == 1 ? kb[s - s0] : gat_keep_bits(g, &st, b * H + h0, s, hc), p, g->inv_keep);
                    al_v16_stl(E + (s - s0) * HV, w);
                }
                if (gat_lanes(Dv, hc)) gat_wsum_lanes(E, key + s0, s1 - s0, vt, rs, out, 0, NULL, NULL, NULL, NULL, H, N, Dv, b, i, h0, hc);
                else if (H == 1) gat_wsum(E, key + s0, s1 - s0, vt + b * N * rs, 0, rs, out, 0, NULL, NULL, NULL, NULL, H, N, Dv, b, i, h0, hc);
                else gat_wsum(E, key + s0, s1 - s0, v + (b * H + h0) * N * Dv, (int64_t)N * Dv, Dv, out, 0, NULL, NULL, NULL, NULL, H, N, Dv, b, i, h0, hc);
            }
        }
    }
}

#define GAT_PARTS 64   /* backward: fixed node chunks whose a_q, a_k gradient partials are added in order */

/* The weights of HV heads from h0 in slot (query row ri, key row rj): the forward's normalised P,
 * recomputed with its operations from sq, sk and the row's max and 1/sum (ms), so the same bits. */
static inline al_v16 gat_weight(const attn_node *nd, al_m16 m, int64_t ri, int64_t rj, int h0)
{
    const int H = nd->g.H;
    const float *mi = nd->ms + ri * nd->rs + h0;
    al_v16 e = al_v16_add(al_v16_load(m, nd->sq + ri * nd->rs + h0), al_v16_load(m, nd->sk + rj * nd->rs + h0));
    e = al_v16_pos_or(e, e, nd->g.slope);
    return al_v16_mul(al__exp_cephes_v16(al_v16_sub(e, al_v16_load(m, mi))), al_v16_load(m, mi + H));
}

/* Pass 1 of the backward for query row r = b·N + i: dP = dO_i·v_j (dropped as the forward), delta,
 * dS (written over P) and dsq, chunk by chunk of HV heads; dP kept in E (one line per slot, as in the
 * forward) between the two sweeps, the slots' P in Pl, so that the sweep which overwrites P with dS
 * never loads from a line it has just stored to (no forwarding). dot: (Dv,H) scratch for dO_i. Inlined
 * always: it is the body of the parallel loop over queries. */
static inline __attribute__((always_inline)) void
gat_bwd_query(const al_attn_cfg *g, const gat_steps *st, int64_t r, int N, int H, int Dv, int nch, int64_t rs, int64_t slots,
              const int64_t *qptr, const int *key, float *P /* (B,slots,H) */, const float *sq, const float *sk, const float *vt,
              const float *dO, float *dsq /* (B,N,H) */, float *E, float *Pl, float *dot, uint32_t *kb)
{
    const int64_t b = r / N, i = r % N, s0 = qptr[i], s1 = qptr[i + 1];
    const float *skb = sk + b * N * rs, *vtb = vt + b * N * rs;
    float *Pb = P + b * slots * H;
    heads_inner(dO, dot, H, N, Dv, r);   /* the only dO row this query reads */
    for (int c0 = 0; c0 < nch; c0++) {
        const int h0 = c0 * HV, hc = H - h0 < HV ? H - h0 : HV;
        const al_m16 m = al_v16_mask(hc);
        const float *doi = dot + h0;
        al_v16 delta = al_v16_zero();
        if (g->drop && hc == 1) gat_keep_run(g, st, b * H + h0, 1, NULL, s0, s1 - s0, kb);
        for (int64_t s = s0; s < s1; s++) {
            if (c0 == 0 && s + GAT_AHEAD < slots) gat_prefetch(vtb + (int64_t)key[s + GAT_AHEAD] * rs, (Dv + 1) * H);
            const float *vj = vtb + (int64_t)key[s] * rs + h0;
            al_v16 x = al_v16_zero();
            for (int d = 0; d < Dv; d++) x = al_v16_fma(al_v16_load(m, doi + (int64_t)d * H), al_v16_load(m, vj + (int64_t)d * H), x);
            if (g->drop) x = al_v16_keep(hc == 1 ? kb[s - s0] : gat_keep_bits(g, st, b * H + h0, s, hc), x, g->inv_keep);
            al_v16_stl(E + (s - s0) * HV, x);
            const al_v16 p = al_v16_load(m, Pb + s * H + h0);
            al_v16_stl(Pl + (s - s0) * HV, p);
            delta = al_v16_fma(p, x, delta);
        }
        const al_v16 sqi = al_v16_load(m, sq + r * rs + h0);
        al_v16 su = al_v16_zero();
        for (int64_t s = s0; s < s1; s++) {
            const al_v16 p = al_v16_ldl(Pl + (s - s0) * HV), u = al_v16_add(sqi, al_v16_load(m, skb + (int64_t)key[s] * rs + h0));
            const al_v16 x = al_v16_pos_or(u, al_v16_mul(p, al_v16_sub(al_v16_ldl(E + (s - s0) * HV), delta)), g->slope);
            al_v16_store(m, Pb + s * H + h0, x);   /* dS */
            su = al_v16_add(su, x);
        }
        al_v16_store(m, dsq + r * H + h0, su);
    }
}

/* The a_q, a_k gradients: the chunk partials part (parts,2,D,chunks,HV) of pass 2 added in chunk order
 * (independent of the threads). */
static void gat_bwd_avec(al_ctx *c, attn_node *nd, const float *part, int nparts, int need_a, int H, int D, int nch)
{
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

/* Backward: a pass over queries (dS per slot and head, written over P, and dsq), then a pass over
 * keys through the transposed lists (dV, dK, dQ of node j, and the a_q/a_k partials of its chunk),
 * which recomputes the weights P held and, where the heads in the lanes suit (gat_lanes), reads dO
 * heads innermost from vt's storage, which pass 1 was the last to read. */
void al__attn_gat_backward(al_ctx *c, attn_node *nd)
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
    float *dsq = al_arena_alloc(&c->arena, (size_t)(rows * H > 0 ? rows * H : 1) * sizeof(float));   /* (B,N,H) */
    /* (parts,2,D,chunks,HV): one line per feature, for the same reason as E */
    float *part = need_a ? al_arena_calloc(&c->arena, (size_t)nparts * 2 * D * nch * HV * sizeof(float)) : NULL;
    /* per thread: the lines of E, then query i's dO as (Dv,H), then rows of q and k as (D,H) (whole
     * lines), then a line per slot of P's values (pass 1) */
    const size_t ldo = ((size_t)Dv * H + HV - 1) / HV * HV, lqk = ((size_t)D * H + HV - 1) / HV * HV;
    const size_t per = gat_scratch(nd->maxdeg) + ldo + 2 * lqk + (size_t)nd->maxdeg * HV;
    const int lanes2 = gat_lanes(Dv, H < HV ? H : HV);
    const int tr = dv && (lanes2 || H == 1);   /* dO into the records' v for pass 2 */
    const int64_t rs = nd->rs;
    float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * per * sizeof(float));
    if (!dsq || !scr || (need_a && !part)) { al_fail(c, "attention backward: out of memory"); return; }
    if (!al_ok(c)) return;
    const int64_t *qptr = nd->qptr, present = nd->kptr[N]; const int *key = nd->key;
    float *P = nd->P;   /* pass 1 replaces P by dS (B,slots,H), slot by slot, once it has read it */
    const float *sq = nd->sq, *sk = nd->sk, *vt = nd->vt;
    /* the keep bits are drawn again (gat_keep_bits: a hash per slot) rather than stored: cheaper
     * than pass 2's reads of them at random, and no (B,slots,chunks) array */
    const gat_steps st = gat_keep_steps(g);
    const int64_t chunk = gat_chunk(rows, nd->nthr);
    (void)chunk;   /* no OpenMP: unused */
    AL_OMP("omp parallel num_threads(nd->nthr) if ((rows + g->B * slots) * H * (D + Dv) > AL_PAR_MIN)")
    {
        /* E: pass 1's dP of a query's slots, pass 2's weights of a key's slots; Pl: pass 1's P */
        float *E = scr + (size_t)al__thread_id() * per, *lanes = E + (size_t)nd->maxdeg * HV;   /* 2 lines */
        float *dot = E + gat_scratch(nd->maxdeg), *qrow = dot + ldo, *krow = qrow + lqk;   /* (Dv,H), (D,H), (D,H) */
        float *Pl = krow + lqk;
        uint32_t *kb = gat_bits(E, nd->maxdeg);
        /* Pass 1 over queries: dS over P, and dsq */
        AL_OMP("omp for schedule(dynamic, chunk)")
        for (int64_t r = 0; r < rows; r++)
            gat_bwd_query(g, &st, r, N, H, Dv, nch, rs, slots, qptr, key, P, sq, sk, vt, dO, dsq, E, Pl, dot, kb);
        /* dO heads innermost (B,N,Dv,H) for pass 2's sums, whose slots read it at random: one
         * contiguous row per slot, not H rows in as many head planes */
        if (tr) {
            AL_OMP("omp for schedule(static)")
            for (int64_t r = 0; r < rows; r++) heads_inner(dO, nd->vt + r * rs, H, N, Dv, r);
        }
        /* Pass 2 over keys, in fixed chunks of nodes: each node's gradient rows are written once. */
        AL_OMP("omp for schedule(dynamic, 1) nowait")
        for (int pt = 0; pt < nparts; pt++) {
            float *pq = part ? part + (size_t)pt * 2 * D * nch * HV : NULL, *pk = pq ? pq + (size_t)D * nch * HV : NULL;
            for (int64_t r = rows * pt / nparts; r < rows * (pt + 1) / nparts; r++) {
                const int64_t b = r / N, j = r % N, t0 = nd->kptr[j], t1 = nd->kptr[j + 1];
                const float *dSb = P + b * slots * H;
                const float *qr = nd->qt + r * nd->qs, *kr = nd->kt + r * nd->ks;   /* rows r of q, k heads innermost */
                if (tr && pq && nd->qt == nd->vt) { heads_inner(nd->q->data, qrow, H, N, D, r); qr = qrow; }   /* vt holds dO now */
                if (tr && pq && nd->kt == nd->vt) {
                    if (nd->kt == nd->qt) kr = qr;
                    else { heads_inner(nd->k->data, krow, H, N, D, r); kr = krow; }
                }
                for (int c0 = 0; c0 < nch; c0++) {
                    const int h0 = c0 * HV, hc = H - h0 < HV ? H - h0 : HV;
                    const al_m16 m = al_v16_mask(hc);
                    al_v16 dsk = al_v16_zero();
                    if (g->drop && hc == 1) gat_keep_run(g, &st, b * H + h0, 1, nd->kslot + t0, 0, t1 - t0, kb);
                    for (int64_t t = t0; t < t1; t++) {   /* E: the applied weights of the key's slots */
                        if (c0 == 0 && t + GAT_AHEAD < present) {   /* dS and the query record (dO, sq, ms) of a slot ahead */
                            const int64_t ta = t + GAT_AHEAD;
                            __builtin_prefetch(dSb + nd->kslot[ta] * H);
                            if (tr) gat_prefetch(nd->vt + b * N * rs + (int64_t)nd->kq[ta] * rs, (int)rs);
                            else gat_prefetch(sq + b * N * rs + (int64_t)nd->kq[ta] * rs, 3 * H);
                        }
                        const int64_t s = nd->kslot[t];
                        al_v16 w = gat_weight(nd, m, b * N + nd->kq[t], r, h0);
                        if (g->drop) w = al_v16_keep(hc == 1 ? kb[t - t0] : gat_keep_bits(g, &st, b * H + h0, s, hc), w, g->inv_keep);
                        al_v16_stl(E + (t - t0) * HV, w);
                        dsk = al_v16_add(dsk, al_v16_load(m, dSb + s * H + h0));
                    }
                    const al_v16 dsqj = al_v16_load(m, dsq + r * H + h0);   /* (B,N,H) */
                    float *lk = lanes, *lq = lanes + HV;   /* dsk, dsq of each head */
                    al_v16_stl(lk, dsk); al_v16_stl(lq, dsqj);
                    const int kin = dk && dk == dv && D == Dv, qin = dq && dq == dv && D == Dv;   /* q, k are v (GAT) */
                    if (dv && tr && lanes2)   /* dV = Σ w·dO over the key's slots, with a_k·dsk and a_q·dsq when they share the row */
                        gat_wsum_lanes(E, nd->kq + t0, t1 - t0, nd->vt, rs, dv, 1, kin ? nd->akt : NULL, lk, qin ? nd->aqt : NULL,
                                       lq, H, N, Dv, b, j, h0, hc);
                    else if (dv && tr)   /* one head: its dO rows in the records */
                        gat_wsum(E, nd->kq + t0, t1 - t0, nd->vt + b * N * rs, 0, rs, dv, 1, kin ? nd->ak->data : NULL, lk,
                                 qin ? nd->aq->data : NULL, lq, H, N, Dv, b, j, h0, hc);
                    else if (dv)
                        gat_wsum(E, nd->kq + t0, t1 - t0, dO + (b * H + h0) * N * Dv, (int64_t)N * Dv, Dv, dv, 1, kin ? nd->ak->data : NULL, lk,
                                 qin ? nd->aq->data : NULL, lq, H, N, Dv, b, j, h0, hc);
                    if (dk && !kin) gat_wsum(E, NULL, 0, NULL, 0, 0, dk, 1, nd->ak->data, lk, NULL, NULL, H, N, D, b, j, h0, hc);
                    if (dq && !qin) gat_wsum(E, NULL, 0, NULL, 0, 0, dq, 1, nd->aq->data, lq, NULL, NULL, H, N, D, b, j, h0, hc);
                    if (pq)
                        for (int d = 0; d < D; d++) {
                            float *a = pq + ((int64_t)d * nch + c0) * HV, *e = pk + ((int64_t)d * nch + c0) * HV;
                            al_v16_stl(a, al_v16_fma(dsqj, al_v16_load(m, qr + (int64_t)d * H + h0), al_v16_ldl(a)));
                            al_v16_stl(e, al_v16_fma(dsk, al_v16_load(m, kr + (int64_t)d * H + h0), al_v16_ldl(e)));
                        }
                }
            }
        }
    }
    gat_bwd_avec(c, nd, part, nparts, need_a, H, D, nch);
}

/* Scratch of the gat path (arena): the node records (v transposed, sk, sq, the softmax max and 1/sum),
 * q and k transposed unless they are v, P, a_q/a_k as (D,H). */
int al__attn_gat_setup(al_ctx *c, attn_node *nd)
{
    const al_attn_cfg *g = &nd->g;
    const int H = g->H, D = g->D;
    const int64_t rows = (int64_t)g->B * g->N, nslot = g->B * g->slots > 0 ? g->B * g->slots : 1;
    al_arena *a = &c->arena;
    nd->rs = ((int64_t)(g->Dv + 4) * H + 3) / 4 * 4;   /* v (Dv,H), sk, sq, max, 1/sum; 16-byte steps */
    nd->vt = al_arena_alloc(a, (size_t)(rows * nd->rs) * sizeof(float));
    const int qv = nd->q->data == nd->v->data && D == g->Dv, kv = nd->k->data == nd->v->data && D == g->Dv;
    nd->qt = qv ? nd->vt : al_arena_alloc(a, (size_t)(rows * D * H) * sizeof(float));
    nd->qs = qv ? nd->rs : (int64_t)D * H;
    nd->kt = kv ? nd->vt : nd->k->data == nd->q->data ? nd->qt : al_arena_alloc(a, (size_t)(rows * D * H) * sizeof(float));
    nd->ks = kv ? nd->rs : nd->k->data == nd->q->data ? nd->qs : (int64_t)D * H;
    nd->sk = nd->vt ? nd->vt + (int64_t)g->Dv * H : NULL;
    nd->sq = nd->vt ? nd->sk + H : NULL;
    nd->ms = nd->vt ? nd->sq + H : NULL;
    nd->aqt = al_arena_alloc(a, (size_t)D * H * sizeof(float));
    nd->akt = al_arena_alloc(a, (size_t)D * H * sizeof(float));
    nd->P = al_arena_alloc(a, (size_t)nslot * H * sizeof(float));
    nd->scr = al_arena_alloc(a, (size_t)nd->nthr * gat_scratch(nd->maxdeg) * sizeof(float));
    if (!nd->scr || !nd->vt || !nd->qt || !nd->kt || !nd->sq || !nd->sk || !nd->aqt || !nd->akt || !nd->P || !nd->ms) {
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

