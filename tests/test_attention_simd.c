/* test_attention_simd.c — the vectorised paths of the sparse and streamed kernels against the dense
 * reference: rows of more than 16 slots (16-key dot products with a masked last group), feature
 * sizes that are not multiples of 16 (masked tails, two 16-wide chunks), the additive score's
 * gathered key terms, and the 16-lane dropout mask on every pattern (the reference draws it entry
 * by entry with al_attn_keep, so any difference in the mask shows up as a large error). */
#include "test_attention_util.h"
#include "attention/attention_impl.h"
#include "attention/dropout_impl.h"
#include "core/exp_impl.h"
#include <stdio.h>

#define FWD_TOL 1e-5
#define BWD_TOL 1e-4

static const char *in_names[IN_COUNT] = {"q", "k", "v", "a_q", "a_k", "rel_bias", "bias"};

static void check(const acase *a, const char *what)
{
    float *data[IN_COUNT];
    acase_inputs(a, data);
    aresult x = acase_run(a, data, 0), y = acase_run(a, data, 1);
    assert_int_equal(x.nout, y.nout);
    double e = tu_max_rel_err(x.out, y.out, x.nout);
    if (!(e <= FWD_TOL)) fail_msg("%s D=%d Dv=%d: output rel err %.3g", what, a->D, a->Dv, e);
    e = tu_max_rel_err(x.w, y.w, x.nw);
    if (!(e <= FWD_TOL)) fail_msg("%s D=%d Dv=%d: weights rel err %.3g", what, a->D, a->Dv, e);
    for (int i = 0; i < IN_COUNT; i++) {
        if (!x.g[i] && !y.g[i]) continue;
        if (!x.g[i] || !y.g[i]) fail_msg("%s: gradient of %s missing on one side", what, in_names[i]);
        e = tu_max_rel_err(x.g[i], y.g[i], x.n[i]);
        if (!(e <= BWD_TOL)) fail_msg("%s N=%d D=%d Dv=%d add=%d relu=%d drop=%g: grad %s rel err %.3g", what, a->N, a->D, a->Dv, a->additive, a->relu, (double)a->dropout, in_names[i], e);
    }
    aresult_free(&x); aresult_free(&y);
    acase_free_inputs(data);
}

/* window2d 7×7 (49 slots per query: three full 16-key groups and one of 1) and 5×5 (25: 16 + 9)
 * on a 9×11 grid, D and Dv off the vector width, dot and additive, with and without dropout. */
static void test_wide_windows(void **st)
{
    (void)st;
    const int Ds[] = {8, 20, 33}, wins[] = {5, 7};
    for (int wi = 0; wi < 2; wi++)
        for (int di = 0; di < 3; di++)
            for (int score = 0; score < 2; score++)
                for (int drop = 0; drop < 2; drop++) {
                    acase a = {0};
                    a.pat = al_pattern_window2d(9, 11, wins[wi], wins[wi]);
                    a.B = 2; a.H = 2; a.N = 99; a.D = Ds[di]; a.Dv = Ds[(di + 1) % 3];
                    a.additive = score; a.slope = 0.2f; a.use_rel = 1; a.use_bias = 1;
                    a.dropout = drop ? 0.4f : 0.f;
                    a.seed = 300 + (uint64_t)(wi * 100 + di * 10 + score * 2 + drop);
                    check(&a, "window2d");
                }
}

/* gat_keep_run (the GAT kernel's keep bits of a run of slots; one head hashes eight slots per lane
 * vector) against al_attn_keep slot by slot: contiguous runs and slot lists, 0 to 20 slots (partial
 * lane vectors), one head and three. */
static void test_gat_keep_run(void **st)
{
    (void)st;
    al_attn_cfg g = {0};
    g.B = 2; g.H = 3; g.slots = 1000; g.drop = 1; g.seed = 0x1234567887654321ULL;
    g.thresh = (uint32_t)(0.6 * 4294967296.0);
    const gat_steps sp = gat_keep_steps(&g);
    int64_t slot[20];
    uint32_t bits[20];
    for (int t = 0; t < 20; t++) slot[t] = (t * 389 + 17) % g.slots;
    for (int hc = 1; hc <= 3; hc += 2)
        for (int64_t bh0 = 0; bh0 < 4; bh0 += 3)
            for (int n = 0; n <= 20; n++)
                for (int list = 0; list < 2; list++) {
                    const int64_t s0 = 990 - n;
                    gat_keep_run(&g, &sp, bh0, hc, list ? slot : NULL, s0, n, bits);
                    for (int t = 0; t < n; t++) {
                        const int64_t s = list ? slot[t] : s0 + t;
                        uint32_t want = 0;
                        for (int l = 0; l < hc; l++) want |= (uint32_t)al_attn_keep(&g, bh0 + l, s) << l;
                        if (bits[t] != want) fail_msg("hc %d bh0 %d n %d list %d slot %d: bits %u, want %u", hc, (int)bh0, n, list, t, bits[t], want);
                    }
                }
}

/* Graph rows of every degree from 0 (an empty row) to 40, dropout 0.6 as in GAT. */
static void test_graph_degrees_dropout(void **st)
{
    (void)st;
    al_csr g = rand_graph(41, 0.5, 1, 3, 17);
    for (int score = 0; score < 2; score++)
        for (int norm = 0; norm < 2; norm++) {
            acase a = {0};
            a.pat = al_pattern_graph(&g);
            a.B = 1; a.H = 3; a.N = 41; a.D = 8; a.Dv = 7;
            a.additive = score; a.relu = norm; a.slope = 0.2f; a.use_bias = 1; a.dropout = 0.6f;
            a.seed = 900 + (uint64_t)(score * 2 + norm);
            check(&a, "graph");
        }
    al_csr_free(&g);
}

/* CSR on n nodes for the head-vectorised GAT kernel: row 0 attends to every node, row 1 to itself
 * only, row 2 to nothing, the other rows to themselves and each node with probability p. */
static al_csr gat_graph(int n, double p, uint64_t seed)
{
    al_csr m = rand_graph(n, p, 1, 2, seed);
    al_csr o = {0};
    o.rows = o.cols = n;
    o.rowptr = calloc((size_t)n + 1, sizeof(int64_t));
    o.col = malloc((size_t)(m.nnz + 2 * n) * sizeof(int));
    for (int i = 0; i < n; i++) {
        if (i == 0) for (int j = 0; j < n; j++) o.col[o.nnz++] = j;
        else if (i == 1) o.col[o.nnz++] = 1;
        else for (int64_t e = m.rowptr[i]; e < m.rowptr[i + 1]; e++) o.col[o.nnz++] = m.col[e];
        o.rowptr[i + 1] = o.nnz;
    }
    al_csr_free(&m);
    return o;
}

/* The graph kernel for the additive score with softmax (heads as vector lanes, no bias): one head
 * chunk (H = 1, 3, 8) and two (H = 17), D and Dv of 7, 8, 16 and 20 (two feature blocks), B = 2,
 * rows of degree 0, 1 and N, with and without dropout, against the reference. */
static void test_gat_heads(void **st)
{
    (void)st;
    al_csr g = gat_graph(37, 0.15, 31);
    const int Hs[] = {1, 3, 8, 17}, Ds[] = {7, 8, 16, 20};
    for (int hi = 0; hi < 4; hi++)
        for (int di = 0; di < 4; di++)
            for (int drop = 0; drop < 2; drop++) {
                acase a = {0};
                a.pat = al_pattern_graph(&g);
                a.B = 2; a.H = Hs[hi]; a.N = 37; a.D = Ds[di]; a.Dv = Ds[(di + hi) % 4];
                a.additive = 1; a.slope = 0.2f; a.dropout = drop ? 0.6f : 0.f;
                a.seed = 1100 + (uint64_t)(hi * 8 + di * 2 + drop);
                check(&a, "gat heads");
            }
    al_csr_free(&g);
}

/* GAT passes one tensor as q, k and v: its gradient collects the three (written together by the
 * graph kernel), checked against the reference with dropout, H = 8 and H = 1 (D = 8, 7). */
static void test_gat_shared_qkv(void **st)
{
    (void)st;
    al_csr g = gat_graph(29, 0.2, 5);
    const int Hs[] = {8, 1}, Ds[] = {8, 7};
    for (int ci = 0; ci < 2; ci++) {
        const int H = Hs[ci], D = Ds[ci], N = 29;
        float *x = tu_alloc_rand((int64_t)2 * H * N * D, 61 + (uint64_t)ci, -1.f, 1.f);
        float *aq = tu_alloc_rand((int64_t)H * D, 62, -0.5f, 0.5f), *ak = tu_alloc_rand((int64_t)H * D, 63, -0.5f, 0.5f);
        float *res[2][4];
        int64_t n[4];
        for (int ref = 0; ref < 2; ref++) {
            al_ctx *c = al_ctx_new(77);
            al_tensor *h = al_wrap(c, x, 4, (int[]){2, H, N, D});
            al_tensor *tq = al_wrap(c, aq, 2, (int[]){H, D}), *tk = al_wrap(c, ak, 2, (int[]){H, D});
            h->requires_grad = tq->requires_grad = tk->requires_grad = 1;
            acase a = {0};
            a.pat = al_pattern_graph(&g); a.additive = 1; a.slope = 0.2f; a.dropout = 0.6f;
            al_attn_desc d = acase_desc(&a, NULL);
            al_tensor *o = (ref ? al_attention_ref : al_attention)(c, &d, h, h, h, tq, tk, NULL, NULL);
            if (!o) fail_msg("attention failed: %s", al_ctx_error(c));
            tu_fill(al_grad(c, o), o->numel, 4242, -1.f, 1.f);
            if (al_backward_run(c) != AL_OK) fail_msg("backward failed: %s", al_ctx_error(c));
            al_tensor *t[4] = {o, h, tq, tk};
            for (int i = 0; i < 4; i++) {
                const float *src = i ? t[i]->grad : o->data;
                n[i] = t[i]->numel;
                res[ref][i] = malloc((size_t)n[i] * sizeof(float));
                memcpy(res[ref][i], src, (size_t)n[i] * sizeof(float));
            }
            al_ctx_free(c);
        }
        const char *what[4] = {"output", "grad of q=k=v", "grad of a_q", "grad of a_k"};
        for (int i = 0; i < 4; i++) {
            double e = tu_max_rel_err(res[0][i], res[1][i], n[i]);
            if (!(e <= (i ? BWD_TOL : FWD_TOL))) fail_msg("shared qkv H=%d: %s rel err %.3g", H, what[i], e);
            free(res[0][i]); free(res[1][i]);
        }
        free(x); free(aq); free(ak);
    }
    al_csr_free(&g);
}

/* Full attention with dropout across tiles (N = 150: a row crosses the 128-key tile edge and its
 * 16-entry mask groups straddle it), additive and dot, softmax and ReLU. */
static void test_full_dropout_tiles(void **st)
{
    (void)st;
    for (int score = 0; score < 2; score++)
        for (int norm = 0; norm < 2; norm++) {
            acase a = {0};
            a.pat = al_pattern_full();
            a.B = 1; a.H = 2; a.N = 150; a.D = 8; a.Dv = 5;
            a.additive = score; a.relu = norm; a.slope = 0.2f; a.dropout = 0.6f;
            a.seed = 70 + (uint64_t)(score * 2 + norm);
            check(&a, "full dropout");
        }
}

/* Full attention backward in one pass per head (no bias gradient and B·H >= 4): every score,
 * normaliser and dropout setting on N = 3, 65 and 200 (two query and key tiles), against the
 * reference. */
static void test_full_one_pass_backward(void **st)
{
    (void)st;
    const int Ns[] = {3, 65, 200};   /* N = 1: dQ, dK are exactly 0 in theory, rounding noise in practice */
    for (int ni = 0; ni < 3; ni++)
        for (int score = 0; score < 2; score++)
            for (int norm = 0; norm < 2; norm++)
                for (int drop = 0; drop < 2; drop++) {
                    acase a = {0};
                    a.pat = al_pattern_full();
                    a.B = 2; a.H = 3; a.N = Ns[ni]; a.D = 16; a.Dv = 7;
                    a.additive = score; a.relu = norm; a.slope = 0.2f; a.dropout = drop ? 0.3f : 0.f;
                    a.seed = 500 + (uint64_t)(ni * 8 + score * 4 + norm * 2 + drop);
                    check(&a, "full one-pass backward");
                }
}

/* Full dot-product softmax attention with D = Dv = 16 (the query-in-lanes kernels of
 * full16_fwd.c, full16_bwd.c: AVX-512 and AVX2 + FMA): N from 1 to 300 covers partial 16-query
 * blocks, key tiles that are not a multiple of 8 keys and several 128-key tiles; B·H = 2 takes the
 * generic two-pass backward after the d = 16 forward, B·H = 6 the d = 16 backward. */
static void test_full_d16(void **st)
{
    (void)st;
    const int Ns[] = {1, 5, 16, 17, 130, 300};
    for (int ni = 0; ni < 6; ni++)
        for (int heads = 0; heads < 2; heads++) {
            acase a = {0};
            a.pat = al_pattern_full();
            a.B = heads ? 2 : 1; a.H = heads ? 3 : 2; a.N = Ns[ni]; a.D = 16; a.Dv = 16;
            a.seed = 800 + (uint64_t)(ni * 2 + heads);
            const long runs = al__full16_runs;
            check(&a, "full d16");
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
            if (al__full16_runs == runs) fail_msg("N = %d: the lane kernels did not run", a.N);
#else
            (void)runs;   /* no lane kernels on this build: the generic tiles ran */
#endif
        }
}

/* ---- the d = 16 lane kernels' maths, one query at a time (full16_fwd.c's and full16_bwd.c's per-lane order) ---- */
#define F16_TILE 128
static float vmax_like(float a, float b) { return a > b ? a : b; }   /* vmaxps: a unless b is larger (NaN: b) */

/* One head: out (N,16), lse (N), as full16_fwd.c's forward_block on every lane. */
static void f16_forward_twin(int N, float scale, const float *Q, const float *K, const float *V, float *out, float *lse)
{
    float s[F16_TILE];
    for (int i = 0; i < N; i++) {
        float q[16], o[16] = {0}, m = -INFINITY, l = 0.f;
        for (int d = 0; d < 16; d++) q[d] = scale * 1.44269504088896341f * Q[i * 16 + d];
        for (int j0 = 0; j0 < N; j0 += F16_TILE) {
            int nk = N - j0 < F16_TILE ? N - j0 : F16_TILE;
            float mx = -INFINITY;
            for (int t = 0; t < nk; t++) {
                const float *kr = K + (j0 + t) * 16;
                float x = kr[0] * q[0];
                for (int d = 1; d < 16; d++) x = fmaf(kr[d], q[d], x);
                s[t] = x;
                mx = vmax_like(mx, x);
            }
            float mn = vmax_like(m, mx), corr = al__exp2f(m - mn);
            l = l * corr;
            for (int e = 0; e < 16; e++) o[e] = o[e] * corr;
            m = mn;
            float l1 = 0.f;
            int t = 0;
            for (; t + 2 <= nk; t += 2) {
                s[t] = al__exp2f(s[t] - m); s[t + 1] = al__exp2f(s[t + 1] - m);
                l = l + s[t]; l1 = l1 + s[t + 1];
            }
            if (t < nk) { s[t] = al__exp2f(s[t] - m); l = l + s[t]; }
            l = l + l1;
            for (t = 0; t < nk; t++)
                for (int e = 0; e < 16; e++) o[e] = fmaf(s[t], V[(j0 + t) * 16 + e], o[e]);
        }
        float inv = l > 0.f ? 1.0f / l : 0.f;
        for (int e = 0; e < 16; e++) out[i * 16 + e] = o[e] * inv;
        lse[i] = l > 0.f ? (m + log2f(l)) * 0.693147180559945309f : INFINITY;
    }
}

/* One head's gradients added to dq, dk, dv, as full16_bwd.c's backward_head on every lane: each key's
 * dK/dV sums run over the queries in index order, each query's dQ sum over the keys in order. */
static void f16_backward_twin(int N, float scale, const float *Q, const float *K, const float *V, const float *dO, const float *lse,
                              const float *delta, float *dq, float *dk, float *dv)
{
    float *P = malloc((size_t)F16_TILE * sizeof *P), *dS = malloc((size_t)F16_TILE * sizeof *dS);
    float *kacc = malloc((size_t)F16_TILE * 16 * sizeof *kacc), *vacc = malloc((size_t)F16_TILE * 16 * sizeof *vacc);
    float *dqt = calloc((size_t)N * 16, sizeof *dqt);
    assert_non_null(P); assert_non_null(dS); assert_non_null(kacc); assert_non_null(vacc); assert_non_null(dqt);
    for (int j0 = 0; j0 < N; j0 += F16_TILE) {
        int nk = N - j0 < F16_TILE ? N - j0 : F16_TILE;
        memset(kacc, 0, (size_t)nk * 16 * sizeof(float));
        memset(vacc, 0, (size_t)nk * 16 * sizeof(float));
        for (int i = 0; i < N; i++) {
            float q[16];
            for (int d = 0; d < 16; d++) q[d] = scale * 1.44269504088896341f * Q[i * 16 + d];
            const float L = lse[i] * 1.44269504088896341f;
            for (int t = 0; t < nk; t++) {
                const float *kr = K + (j0 + t) * 16, *vr = V + (j0 + t) * 16, *g = dO + i * 16;
                float x = kr[0] * q[0], y = vr[0] * g[0];
                for (int d = 1; d < 16; d++) { x = fmaf(kr[d], q[d], x); y = fmaf(vr[d], g[d], y); }
                P[t] = al__exp2f(x - L);
                dS[t] = (P[t] * scale) * (y - delta[i]);
            }
            for (int t = 0; t < nk; t++)
                for (int d = 0; d < 16; d++) {
                    vacc[t * 16 + d] = fmaf(P[t], dO[i * 16 + d], vacc[t * 16 + d]);
                    kacc[t * 16 + d] = fmaf(dS[t], Q[i * 16 + d], kacc[t * 16 + d]);
                    dqt[i * 16 + d] = fmaf(dS[t], K[(j0 + t) * 16 + d], dqt[i * 16 + d]);
                }
        }
        for (int x = 0; x < nk * 16; x++) { dk[j0 * 16 + x] += kacc[x]; dv[j0 * 16 + x] += vacc[x]; }
    }
    for (int x = 0; x < N * 16; x++) dq[x] += dqt[x];
    free(P); free(dS); free(kacc); free(vacc); free(dqt);
}

/* The d = 16 lane kernels (AVX-512: 16 queries per vector; AVX2: 8, L1-resident blocks) give,
 * bit for bit, the per-query maths above: output, lse and the three gradients (added to what is
 * there, or written over garbage with the bits of adding to zeros). So an AVX2 host and an AVX-512 host compute the same attention bits. N covers partial
 * blocks of 8 and 16 queries, odd key tails and several 128-key tiles. */
static void test_full_d16_twin(void **st)
{
    (void)st;
    /* N % 16 and N % 8 from 1 to 15 (the partial last block), with and without the few-query path
     * (al__full16_few_max: 0 = the lane kernels for every block, 15 = query by query for every
     * partial block); 49 is sa's 7x7 tokens, 130 and 300 take several key tiles */
    const int Ns[] = {1, 5, 8, 9, 17, 35, 49, 50, 63, 130, 300};
    const int keep = al__full16_few_max;
    for (int pass = 0; pass < 3; pass++)
    for (int ni = 0; ni < 11; ni++) {
        al__full16_few_max = pass == 0 ? 0 : pass == 1 ? 15 : keep;
        al_attn_cfg g = {0};
        g.B = 1; g.H = 3; g.N = Ns[ni]; g.D = 16; g.Dv = 16; g.scale = 0.25f;
        if (!al__full16_ok(&g)) { al__full16_few_max = keep; skip(); return; }   /* a build without AVX-512 or AVX2 + FMA */
        const int N = g.N, heads = g.B * g.H;
        const size_t n = (size_t)heads * N * 16;
        al_rng r; al_rng_seed(&r, 4242 + (uint64_t)ni, 3);
        float *in[9];
        for (int a = 0; a < 9; a++) { in[a] = malloc(n * sizeof(float)); assert_non_null(in[a]); }
        for (size_t x = 0; x < n; x++)
            for (int a = 0; a < 9; a++) in[a][x] = (a < 3 ? 4.f : 1.f) * (al_rng_uniform(&r) * 2.f - 1.f);
        float *q = in[0], *k = in[1], *v = in[2], *dO = in[3], *dq = in[4], *dk = in[5], *dv = in[6], *out = in[7], *out2 = in[8];
        float *lse = malloc((size_t)heads * N * sizeof(float)), *lse2 = malloc((size_t)heads * N * sizeof(float));
        float *delta = malloc((size_t)heads * N * sizeof(float));
        float *gq = malloc(n * sizeof(float)), *gk = malloc(n * sizeof(float)), *gv = malloc(n * sizeof(float));
        float *ws = malloc(al__full16_scratch(&g, 1) * sizeof(float) + al__full16_scratch(&g, 0) * sizeof(float));
        assert_non_null(lse); assert_non_null(lse2); assert_non_null(delta); assert_non_null(gq); assert_non_null(gk); assert_non_null(gv); assert_non_null(ws);
        for (int x = 0; x < heads * N; x++) delta[x] = al_rng_uniform(&r) - 0.5f;
        memcpy(gq, dq, n * sizeof(float)); memcpy(gk, dk, n * sizeof(float)); memcpy(gv, dv, n * sizeof(float));
        const long runs = al__full16_runs;
        const al_attn_lay plain = al__lay_plain(&g, 16);
        al__full16_forward(&g, q, k, v, out, lse, &plain, &plain, ws, 1);
        assert_true(al__full16_runs == runs + 1);
        al__full16_backward(&g, q, k, v, dO, lse, delta, dq, dk, dv, &plain, &plain, ws, 1, 0);
        for (int h = 0; h < heads; h++) {
            size_t o = (size_t)h * N * 16;
            f16_forward_twin(N, g.scale, q + o, k + o, v + o, out2 + o, lse2 + (size_t)h * N);
            f16_backward_twin(N, g.scale, q + o, k + o, v + o, dO + o, lse + (size_t)h * N, delta + (size_t)h * N, gq + o, gk + o, gv + o);
        }
        const int fm = al__full16_few_max;
        if (memcmp(out, out2, n * sizeof(float))) fail_msg("N = %d, few %d: output bits differ from the per-query twin", N, fm);
        if (memcmp(lse, lse2, (size_t)heads * N * sizeof(float))) fail_msg("N = %d, few %d: lse bits differ from the per-query twin", N, fm);
        if (memcmp(dq, gq, n * sizeof(float))) fail_msg("N = %d, few %d: dq bits differ from the per-query twin", N, fm);
        if (memcmp(dk, gk, n * sizeof(float))) fail_msg("N = %d, few %d: dk bits differ from the per-query twin", N, fm);
        if (memcmp(dv, gv, n * sizeof(float))) fail_msg("N = %d, few %d: dv bits differ from the per-query twin", N, fm);
        /* fresh: gradients of garbage (NaN) are overwritten with the bits they get added to zeros */
        for (size_t x = 0; x < n; x++) { dq[x] = dk[x] = dv[x] = NAN; gq[x] = gk[x] = gv[x] = 0.f; }
        al__full16_backward(&g, q, k, v, dO, lse, delta, dq, dk, dv, &plain, &plain, ws, 1, 1);
        al__full16_backward(&g, q, k, v, dO, lse, delta, gq, gk, gv, &plain, &plain, ws, 1, 0);
        if (memcmp(dq, gq, n * sizeof(float)) || memcmp(dk, gk, n * sizeof(float)) || memcmp(dv, gv, n * sizeof(float)))
            fail_msg("N = %d, few %d: fresh gradients differ from gradients added to zeros", N, fm);
        for (int a = 0; a < 9; a++) free(in[a]);
        free(lse); free(lse2); free(delta); free(gq); free(gk); free(gv); free(ws);
    }
    al__full16_few_max = keep;
}

/* Window attention with D = Dv = 16, dot, softmax, no bias or dropout: the query-in-lanes kernels of
 * win16.c (AVX-512: sixteen queries per vector; AVX2: eight). Against the dense reference, and bit for bit against the slot-list kernels
 * of sparse.c (which it replaces, and whose sums it promises to keep): output, weights and every
 * gradient. Cases: grids with partial 16-query blocks, windows wider than the grid (the full
 * relative-position window of `sa --pos relative`), 1-D windows, with and without the relative
 * bias, one query. */
static void test_window_d16(void **st)
{
    (void)st;
    struct { al_pattern p; int N, rel; } cs[] = {
        {al_pattern_window2d(14, 14, 5, 5), 196, 1}, {al_pattern_window2d(9, 11, 7, 7), 99, 1},
        {al_pattern_window2d(9, 11, 3, 5), 99, 0}, {al_pattern_window2d(5, 6, 9, 11), 30, 1},
        {al_pattern_window2d(1, 1, 3, 3), 1, 1}, {al_pattern_window1d(3), 37, 1}, {al_pattern_window1d(8), 5, 0},
        {al_pattern_window1d(2), 300, 1},
    };
    for (int ci = 0; ci < (int)(sizeof cs / sizeof cs[0]); ci++) {
        acase a = {0};
        a.pat = cs[ci].p;
        a.B = 2; a.H = 3; a.N = cs[ci].N; a.D = 16; a.Dv = 16; a.use_rel = cs[ci].rel;
        a.seed = 900 + (uint64_t)ci;
        const long runs = al__win16_runs;
        check(&a, "window d16");
#if (defined(__AVX512F__) && defined(__AVX512BW__)) || (defined(__AVX2__) && defined(__FMA__))
        if (al__win16_runs == runs) fail_msg("case %d: the lane kernels did not run", ci);
#else
        (void)runs;   /* no lane kernels on this build: the comparison below is slot lists against slot lists */
#endif
        float *data[IN_COUNT];
        acase_inputs(&a, data);
        aresult x = acase_run(&a, data, 0);
        al__win16_off = 1;
        aresult y = acase_run(&a, data, 0);
        al__win16_off = 0;
        assert_int_equal(x.nout, y.nout);
        assert_int_equal(x.nw, y.nw);
        if (memcmp(x.out, y.out, (size_t)x.nout * sizeof(float))) fail_msg("case %d: output bits differ from sparse.c", ci);
        if (memcmp(x.w, y.w, (size_t)x.nw * sizeof(float))) fail_msg("case %d: weight bits differ from sparse.c", ci);
        for (int i = 0; i < IN_COUNT; i++) {
            if (!x.g[i] && !y.g[i]) continue;
            if (!x.g[i] || !y.g[i]) fail_msg("case %d: gradient of %s missing on one side", ci, in_names[i]);
            if (memcmp(x.g[i], y.g[i], (size_t)x.n[i] * sizeof(float)))
                fail_msg("case %d: gradient of %s: bits differ from sparse.c", ci, in_names[i]);
        }
        aresult_free(&x); aresult_free(&y);
        acase_free_inputs(data);
    }
}

/* Same bits on 1 and 2 threads for the per-head backward, the sparse kernels (window, and the
 * graph kernel for GAT) and the dropout mask (tasks are large enough to fork). */
static void test_threads_bitwise(void **st)
{
    (void)st;
    for (int kind = 0; kind < 2; kind++) {
        acase a = {0};
        a.pat = kind ? al_pattern_window2d(16, 16, 5, 5) : al_pattern_full();
        a.B = 2; a.H = 4; a.N = 256; a.D = 16; a.Dv = 16; a.use_rel = kind; a.dropout = 0.2f;
        a.seed = 1234 + (uint64_t)kind;
        acase_assert_same_across_threads(&a);
    }
    {   /* the window lane kernels (win16.c: d = 16, no dropout) */
        acase a = {0};
        a.pat = al_pattern_window2d(14, 14, 5, 5);
        a.B = 4; a.H = 4; a.N = 196; a.D = 16; a.Dv = 16; a.use_rel = 1; a.seed = 1241;
        acase_assert_same_across_threads(&a);
    }
    acase a = {0};   /* the d = 16 lane kernels (no dropout) */
    a.pat = al_pattern_full();
    a.B = 2; a.H = 4; a.N = 200; a.D = 16; a.Dv = 16; a.seed = 1240;
    acase_assert_same_across_threads(&a);
    al_csr g = gat_graph(300, 0.05, 3);   /* the head-vectorised graph kernel, with dropout */
    const int Hs[] = {8, 1};
    for (int hi = 0; hi < 2; hi++) {
        acase a = {0};
        a.pat = al_pattern_graph(&g);
        a.B = 1; a.H = Hs[hi]; a.N = 300; a.D = 8; a.Dv = 8 - hi; a.additive = 1; a.slope = 0.2f; a.dropout = 0.6f;
        a.seed = 77 + (uint64_t)hi;
        acase_assert_same_across_threads(&a);
    }
    al_csr_free(&g);
}

/* al__full16_delta (sixteen rows in the lanes) against the scalar chain the backward runs otherwise
 * (s = 0, s = fma(dO_e, O_e, s) over the sixteen features), bit for bit: partial blocks of rows, the plain
 * layout and heads merged (B, N, H·16), one thread and the default. */
static void test_full_d16_delta_bits(void **st)
{
    (void)st;
    const int Ns[] = {1, 5, 16, 17, 49, 196};
    int ran = 0;
    for (int ni = 0; ni < 6; ni++)
        for (int merged = 0; merged < 2; merged++)
            for (int nthr = 1; nthr <= 2; nthr++) {
                const int B = 3, H = 4, N = Ns[ni];
                const int64_t heads = (int64_t)B * H, n = heads * N * 16;
                const al_attn_lay lo = merged ? (al_attn_lay){(int64_t)N * H * 16, 16, (int64_t)H * 16}
                                              : (al_attn_lay){(int64_t)H * N * 16, (int64_t)N * 16, 16};
                al_rng r; al_rng_seed(&r, 77 + (uint64_t)ni, 5);
                float *o = malloc((size_t)n * sizeof(float)), *dO = malloc((size_t)n * sizeof(float));
                float *d1 = malloc((size_t)heads * N * sizeof(float)), *d2 = malloc((size_t)heads * N * sizeof(float));
                assert_true(o && dO && d1 && d2);
                for (int64_t x = 0; x < n; x++) { o[x] = al_rng_uniform(&r) * 2.f - 1.f; dO[x] = al_rng_uniform(&r) * 2.f - 1.f; }
                o[3] = -0.f; dO[3] = 0.5f;   /* a −0 product first in its chain */
                for (int64_t bh = 0; bh < heads; bh++)
                    for (int i = 0; i < N; i++) {
                        const int64_t at = al__lay_head(&lo, bh, H) + (int64_t)i * lo.sr;
                        float s = 0.f;
                        for (int e = 0; e < 16; e++) s = AL_FMA(dO[at + e], o[at + e], s);
                        d1[bh * N + i] = s;
                    }
                if (al__full16_delta(o, dO, &lo, heads, H, N, d2, nthr)) {
                    ran++;
                    if (memcmp(d1, d2, (size_t)heads * N * sizeof(float)))
                        fail_msg("N %d, merged %d, %d threads: delta bits differ from the scalar chain", N, merged, nthr);
                }
                free(o); free(dO); free(d1); free(d2);
            }
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
    assert_int_equal(ran, 24);   /* AVX-512 and AVX2 builds have a vector path */
#else
    if (!ran) skip();
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_windows),
        cmocka_unit_test(test_graph_degrees_dropout),
        cmocka_unit_test(test_gat_keep_run),
        cmocka_unit_test(test_gat_heads),
        cmocka_unit_test(test_gat_shared_qkv),
        cmocka_unit_test(test_full_dropout_tiles),
        cmocka_unit_test(test_full_one_pass_backward),
        cmocka_unit_test(test_full_d16),
        cmocka_unit_test(test_full_d16_twin),
        cmocka_unit_test(test_full_d16_delta_bits),
        cmocka_unit_test(test_window_d16),
        cmocka_unit_test(test_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
