/* test_attention_simd.c — the vectorised paths of the sparse and streamed kernels against the dense
 * reference: rows of more than 16 slots (16-key dot products with a masked last group), feature
 * sizes that are not multiples of 16 (masked tails, two 16-wide chunks), the additive score's
 * gathered key terms, and the 16-lane dropout mask on every pattern (the reference draws it entry
 * by entry with al_attn_keep, so any difference in the mask shows up as a large error). */
#include "test_attention_util.h"
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
 * attention_full16.c on AVX-512): N from 1 to 300 covers partial 16-query blocks, key tiles that
 * are not a multiple of 8 keys and several 128-key tiles; B·H = 2 takes the generic two-pass
 * backward after the d = 16 forward, B·H = 6 the d = 16 backward. */
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
            check(&a, "full d16");
        }
}

/* Same bits on 1 and 2 threads for the per-head backward, the sparse kernels and the dropout
 * mask (tasks are large enough to fork). */
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
    acase a = {0};   /* the d = 16 lane kernels (no dropout) */
    a.pat = al_pattern_full();
    a.B = 2; a.H = 4; a.N = 200; a.D = 16; a.Dv = 16; a.seed = 1240;
    acase_assert_same_across_threads(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_windows),
        cmocka_unit_test(test_graph_degrees_dropout),
        cmocka_unit_test(test_full_dropout_tiles),
        cmocka_unit_test(test_full_one_pass_backward),
        cmocka_unit_test(test_full_d16),
        cmocka_unit_test(test_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
