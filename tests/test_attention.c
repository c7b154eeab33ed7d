/* test_attention.c — the fast attention kernels against the dense masked reference, for every
 * pattern × score × normaliser on odd sizes, plus equivalences between patterns, determinism,
 * dropout, weights layout, errors and the memory footprint of streamed full attention. */
#include "test_attention_util.h"
#include <math.h>
#include <stdio.h>

#define FWD_TOL 1e-5
#define BWD_TOL 1e-4

static const char *in_names[IN_COUNT] = {"q", "k", "v", "a_q", "a_k", "rel_bias", "bias"};
static const char *pat_names[] = {"full", "window2d", "window1d", "graph"};

static void describe(const acase *a, char *buf, size_t n)
{
    snprintf(buf, n, "%s %s %s B=%d H=%d N=%d D=%d Dv=%d rel=%d bias=%d drop=%g", pat_names[a->pat.kind],
             a->additive ? "additive" : "dot", a->relu ? "relu" : "softmax", a->B, a->H, a->N, a->D, a->Dv,
             a->use_rel, a->use_bias, (double)a->dropout);
}

/* Compare two results: output, weights and every gradient. */
static void compare(const acase *a, const aresult *x, const aresult *y, double ftol, double btol, const char *what)
{
    char d[256];
    describe(a, d, sizeof d);
    assert_int_equal(x->nout, y->nout);
    double e = tu_max_rel_err(x->out, y->out, x->nout);
    if (!(e <= ftol)) fail_msg("%s: %s: output rel err %.3g > %.3g", what, d, e, ftol);
    assert_int_equal(x->nw, y->nw);
    e = tu_max_rel_err(x->w, y->w, x->nw);
    if (!(e <= ftol)) fail_msg("%s: %s: weights rel err %.3g > %.3g", what, d, e, ftol);
    for (int i = 0; i < IN_COUNT; i++) {
        if (!x->g[i] && !y->g[i]) continue;
        if (!x->g[i] || !y->g[i]) fail_msg("%s: %s: gradient of %s missing on one side", what, d, in_names[i]);
        assert_int_equal(x->n[i], y->n[i]);
        e = tu_max_rel_err(x->g[i], y->g[i], x->n[i]);
        if (!(e <= btol)) fail_msg("%s: %s: grad %s rel err %.3g > %.3g", what, d, in_names[i], e, btol);
    }
}

static void fast_vs_ref(const acase *a)
{
    float *data[IN_COUNT];
    acase_inputs(a, data);
    aresult f = acase_run(a, data, 0), r = acase_run(a, data, 1);
    compare(a, &f, &r, FWD_TOL, BWD_TOL, "fast vs ref");
    aresult_free(&f); aresult_free(&r);
    acase_free_inputs(data);
}

/* The pattern of kind `kind` for n tokens (a grid that is not square, a window that is not). */
static al_pattern pattern_for(int kind, int n, al_csr *g)
{
    switch (kind) {
    case AL_PAT_FULL: return al_pattern_full();
    case AL_PAT_WINDOW2D:
        if (n == 65) return al_pattern_window2d(5, 13, 3, 5);
        if (n == 7) return al_pattern_window2d(7, 1, 5, 3);
        return al_pattern_window2d(1, n, 3, 3);
    case AL_PAT_WINDOW1D: return al_pattern_window1d(2);
    default: return al_pattern_graph(g);
    }
}

/* Every pattern × score × normaliser on N ∈ {1, 7, 65}, D ∈ {3, 16}, heads ∈ {1, 3}. */
static void test_all_patterns_match_reference(void **st)
{
    (void)st;
    const int Ns[] = {1, 7, 65}, Ds[] = {3, 16}, Hs[] = {1, 3};
    int count = 0;
    for (int ni = 0; ni < 3; ni++) {
        int n = Ns[ni];
        al_csr g = rand_graph(n, 0.3, 1, n > 2 ? 2 : -1, 5 + (uint64_t)n);   /* row 2 has no keys */
        for (int kind = 0; kind < 4; kind++)
            for (int score = 0; score < 2; score++)
                for (int norm = 0; norm < 2; norm++)
                    for (int di = 0; di < 2; di++)
                        for (int hi = 0; hi < 2; hi++) {
                            acase a = {0};
                            a.pat = pattern_for(kind, n, &g);
                            a.B = 2; a.H = Hs[hi]; a.N = n; a.D = Ds[di]; a.Dv = Ds[di] == 3 ? 5 : 16;
                            a.additive = score; a.relu = norm; a.slope = 0.2f;
                            a.use_rel = kind == AL_PAT_WINDOW2D || kind == AL_PAT_WINDOW1D;
                            a.use_bias = 1;
                            a.seed = (uint64_t)(1000 + count);
                            fast_vs_ref(&a);
                            count++;
                        }
        al_csr_free(&g);
    }
    assert_int_equal(count, 3 * 4 * 2 * 2 * 2 * 2);
}

/* Full attention with N spanning several key/query tiles (tile = 64), no bias, and a large score
 * range so the online softmax has to rescale. */
static void test_full_multi_tile(void **st)
{
    (void)st;
    const int Ns[] = {63, 129, 200};
    for (int i = 0; i < 3; i++)
        for (int score = 0; score < 2; score++)
            for (int norm = 0; norm < 2; norm++) {
                acase a = {0};
                a.pat = al_pattern_full();
                a.B = 1; a.H = 2; a.N = Ns[i]; a.D = 16; a.Dv = 7;
                a.additive = score; a.relu = norm; a.slope = 0.1f; a.use_bias = (i == 1);
                a.seed = 77 + (uint64_t)i;
                float *data[IN_COUNT];
                acase_inputs(&a, data);
                int64_t nq = (int64_t)a.B * a.H * a.N * a.D;
                for (int64_t x = 0; x < nq; x++) data[IN_Q][x] *= 4.f;   /* sharper softmax */
                aresult f = acase_run(&a, data, 0), r = acase_run(&a, data, 1);
                compare(&a, &f, &r, FWD_TOL, BWD_TOL, "multi-tile");
                aresult_free(&f); aresult_free(&r);
                acase_free_inputs(data);
            }
}

/* Dropout: the fast kernels regenerate exactly the reference's mask, forward and backward. */
static void test_dropout_matches_reference(void **st)
{
    (void)st;
    al_csr g = rand_graph(30, 0.3, 1, 4, 9);
    for (int kind = 0; kind < 4; kind++)
        for (int norm = 0; norm < 2; norm++) {
            acase a = {0};
            a.B = 2; a.H = 2; a.D = 4; a.Dv = 3; a.relu = norm; a.dropout = 0.3f; a.use_bias = 1;
            a.N = kind == AL_PAT_FULL ? 70 : 30; a.seed = 300 + (uint64_t)kind;
            a.pat = kind == AL_PAT_WINDOW2D ? al_pattern_window2d(5, 6, 3, 3) : pattern_for(kind, a.N, &g);
            a.use_rel = kind == AL_PAT_WINDOW2D || kind == AL_PAT_WINDOW1D;
            fast_vs_ref(&a);
        }
    al_csr_free(&g);
    /* the mask really drops: with p = 0.5 the output differs from the no-dropout output */
    acase a = {0};
    a.pat = al_pattern_full(); a.B = 1; a.H = 1; a.N = 20; a.D = 4; a.Dv = 4; a.seed = 5;
    float *data[IN_COUNT];
    acase_inputs(&a, data);
    aresult r0 = acase_run(&a, data, 0);
    a.dropout = 0.5f;
    aresult r1 = acase_run(&a, data, 0);
    assert_true(tu_max_abs_err(r0.out, r1.out, r0.nout) > 1e-3);
    aresult_free(&r0); aresult_free(&r1);
    acase_free_inputs(data);
}

/* Run `a` and `b` (different patterns of the same function) and compare out and q/k/v grads. */
static void same_function(acase *a, acase *b, float *data[IN_COUNT], const char *what)
{
    aresult x = acase_run(a, data, 0), y = acase_run(b, data, 0);
    double e = tu_max_rel_err(x.out, y.out, x.nout);
    if (!(e <= FWD_TOL)) fail_msg("%s: output rel err %.3g", what, e);
    for (int i = 0; i < IN_COUNT; i++) {
        if (!x.g[i] || !y.g[i] || i == IN_BIAS || i == IN_REL) continue;
        e = tu_max_rel_err(x.g[i], y.g[i], x.n[i]);
        if (!(e <= BWD_TOL)) fail_msg("%s: grad %s rel err %.3g", what, in_names[i], e);
    }
    aresult_free(&x); aresult_free(&y);
}

static void test_pattern_equivalences(void **st)
{
    (void)st;
    for (int score = 0; score < 2; score++)
        for (int norm = 0; norm < 2; norm++) {
            /* window2d covering the whole image == full */
            acase f = {0};
            f.B = 2; f.H = 3; f.N = 35; f.D = 5; f.Dv = 4; f.additive = score; f.relu = norm; f.slope = 0.2f; f.seed = 9;
            f.pat = al_pattern_full();
            acase w = f;
            w.pat = al_pattern_window2d(5, 7, 9, 13);
            float *data[IN_COUNT];
            acase_inputs(&f, data);
            same_function(&w, &f, data, "window2d(whole image) vs full");
            /* graph on the complete graph == full, including the bias (same layout) */
            al_csr g = rand_graph(f.N, 1.0, 1, -1, 1);
            assert_int_equal(g.nnz, f.N * f.N);
            acase gr = f;
            gr.pat = al_pattern_graph(&g);
            f.use_bias = gr.use_bias = 1;
            acase_free_inputs(data);
            acase_inputs(&f, data);
            aresult x = acase_run(&gr, data, 0), y = acase_run(&f, data, 0);
            compare(&gr, &x, &y, FWD_TOL, BWD_TOL, "complete graph vs full");
            aresult_free(&x); aresult_free(&y);
            acase_free_inputs(data);
            al_csr_free(&g);
            /* window1d == window2d on a 1×N grid, including rel_bias and bias (same layouts) */
            acase w1 = f;
            w1.pat = al_pattern_window1d(3); w1.use_rel = 1; w1.use_bias = 1;
            acase w2 = w1;
            w2.pat = al_pattern_window2d(1, f.N, 1, 7);
            acase_inputs(&w1, data);
            x = acase_run(&w1, data, 0); y = acase_run(&w2, data, 0);
            compare(&w1, &x, &y, FWD_TOL, BWD_TOL, "window1d vs window2d(1xN)");
            aresult_free(&x); aresult_free(&y);
            acase_free_inputs(data);
        }
}

/* Same inputs, 1 thread vs 2 threads: bitwise identical outputs and gradients. */
static void test_deterministic_across_threads(void **st)
{
    (void)st;
    al_csr g = rand_graph(150, 0.05, 1, 3, 2);
    int saved = al_threads();
    for (int kind = 0; kind < 4; kind++) {
        acase a = {0};
        a.B = 2; a.H = 3; a.N = 150; a.D = 8; a.Dv = 8; a.additive = kind == AL_PAT_GRAPH; a.slope = 0.2f;
        a.use_bias = 1; a.dropout = 0.1f; a.seed = 50;
        a.pat = kind == AL_PAT_WINDOW2D ? al_pattern_window2d(10, 15, 5, 5) : pattern_for(kind, a.N, &g);
        a.use_rel = kind == AL_PAT_WINDOW2D || kind == AL_PAT_WINDOW1D;
        acase_assert_same_across_threads(&a);
    }
    al_set_threads(saved);
    al_csr_free(&g);
}

/* Softmax weights sum to one over present keys; window weights are 0 for absent keys. */
static void test_weights_layout(void **st)
{
    (void)st;
    acase a = {0};
    a.B = 1; a.H = 2; a.N = 12; a.D = 4; a.Dv = 4; a.seed = 3;
    a.pat = al_pattern_window2d(3, 4, 3, 3);
    float *data[IN_COUNT];
    acase_inputs(&a, data);
    aresult r = acase_run(&a, data, 0);
    assert_int_equal(r.nw, 2 * 12 * 9);
    /* token 0 is the top-left corner: offsets with dy = -1 or dx = -1 are absent */
    for (int o = 0; o < 9; o++) {
        int dy = o / 3 - 1, dx = o % 3 - 1;
        if (dy < 0 || dx < 0) assert_true(r.w[o] == 0.f);
        else assert_true(r.w[o] > 0.f);
    }
    for (int i = 0; i < 2 * 12; i++) {
        double s = 0;
        for (int o = 0; o < 9; o++) s += r.w[i * 9 + o];
        assert_true(fabs(s - 1.0) < 1e-5);
    }
    aresult_free(&r);
    acase_free_inputs(data);
}

static void test_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *q = al_zeros(c, 4, (int[]){1, 2, 6, 4}), *k = al_zeros(c, 4, (int[]){1, 2, 6, 4});
    al_tensor *v = al_zeros(c, 4, (int[]){1, 2, 5, 4});
    al_attn_desc d = {.pattern = al_pattern_full()};
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "(1, 2, 5, 4)"));
    al_ctx_clear_error(c);
    v = al_zeros(c, 4, (int[]){1, 2, 6, 3});
    d.pattern = al_pattern_window2d(2, 2, 3, 3);     /* 4 ≠ 6 tokens */
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "grid"));
    al_ctx_clear_error(c);
    d.pattern = al_pattern_window2d(2, 3, 2, 3);     /* even window */
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    al_ctx_clear_error(c);
    d.pattern = al_pattern_full(); d.score = AL_SCORE_ADDITIVE;   /* additive without a_q/a_k */
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "a_q"));
    al_ctx_clear_error(c);
    d.score = AL_SCORE_DOT;
    al_tensor *rel = al_zeros(c, 2, (int[]){2, 9});
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, rel, NULL));     /* rel_bias with full */
    al_ctx_clear_error(c);
    d.pattern = al_pattern_window2d(2, 3, 3, 3);
    al_tensor *bias = al_zeros(c, 2, (int[]){2, 53});
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, rel, bias));     /* bias slots 54 */
    assert_non_null(strstr(al_ctx_error(c), "bias"));
    al_ctx_clear_error(c);
    al_csr g = rand_graph(6, 0.5, 1, -1, 1);
    g.col[0] = 9;                                                         /* out of range */
    d.pattern = al_pattern_graph(&g);
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "column"));
    al_ctx_clear_error(c);
    d.pattern = al_pattern_full(); d.dropout = 1.0f;
    assert_null(al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL));
    al_ctx_clear_error(c);
    assert_null(al_attention(c, &d, NULL, k, v, NULL, NULL, NULL, NULL));
    al_csr_free(&g);
    al_ctx_free(c);
}

/* A graph plan (the transposed lists built once, al_graph_plan_new) gives the bits of the lists built
 * in the step: GAT's kernel (additive, softmax) and the sparse kernels (dot; relu; bias), with and
 * without dropout, on a graph with an isolated node and a row with no self-loop; a plan made for
 * another adjacency, or from a bad one, is refused with a message. */
static void test_graph_plan(void **st)
{
    (void)st;
    al_csr g = rand_graph(90, 0.06, 1, 7, 5);
    al_error err = {{0}};
    al_graph_plan *plan = al_graph_plan_new(&g, &err);
    assert_non_null(plan);
    for (int kind = 0; kind < 4; kind++) {
        acase a = {0};
        a.B = 2; a.H = 3; a.N = 90; a.D = 6; a.Dv = 5; a.slope = 0.2f; a.seed = 17 + (uint64_t)kind;
        a.additive = kind < 2; a.relu = kind == 3; a.use_bias = kind == 2; a.dropout = kind % 2 ? 0.25f : 0.f;
        a.pat = al_pattern_graph(&g);
        acase b = a;
        b.pat = al_pattern_graph_plan(&g, plan);
        float *data[IN_COUNT];
        acase_inputs(&a, data);
        aresult x = acase_run(&a, data, 0), y = acase_run(&b, data, 0);
        if (memcmp(x.out, y.out, (size_t)x.nout * sizeof(float))) fail_msg("graph plan, case %d: outputs differ", kind);
        for (int i = 0; i < IN_COUNT; i++)
            if (x.g[i] && memcmp(x.g[i], y.g[i], (size_t)x.n[i] * sizeof(float)))
                fail_msg("graph plan, case %d: gradient of %s differs", kind, in_names[i]);
        aresult_free(&x); aresult_free(&y);
        acase_free_inputs(data);
    }
    /* another adjacency with the plan of g: refused */
    al_csr h = rand_graph(90, 0.06, 1, 7, 6);
    al_ctx *c = al_ctx_new(1);
    al_tensor *q = al_zeros(c, 4, (int[]){1, 1, 90, 4});
    al_attn_desc d = {.pattern = al_pattern_graph_plan(&h, plan)};
    assert_null(al_attention(c, &d, q, q, q, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "plan"));
    al_ctx_clear_error(c);
    d.pattern = al_pattern_graph_plan(&g, plan);
    assert_non_null(al_attention(c, &d, q, q, q, NULL, NULL, NULL, NULL));
    al_ctx_free(c);
    h.col[3] = 90;   /* a column outside the nodes */
    assert_null(al_graph_plan_new(&h, &err));
    assert_non_null(strstr(err.msg, "column"));
    al_csr_free(&h);
    al_graph_plan_free(plan);
    al_csr_free(&g);
}

/* Peak arena memory of full-attention fwd+bwd: linear in N, never an N×N matrix. */
static size_t full_peak(int n)
{
    al_ctx *c = al_ctx_new(1);
    int sh[4] = {1, 2, n, 16};
    al_tensor *q = al_new(c, 4, sh), *k = al_new(c, 4, sh), *v = al_new(c, 4, sh);
    tu_fill(q->data, q->numel, 1, -1, 1); tu_fill(k->data, k->numel, 2, -1, 1); tu_fill(v->data, v->numel, 3, -1, 1);
    q->requires_grad = k->requires_grad = v->requires_grad = 1;
    al_attn_desc d = {.pattern = al_pattern_full()};
    al_tensor *o = al_attention(c, &d, q, k, v, NULL, NULL, NULL, NULL);
    assert_non_null(o);
    float *og = al_grad(c, o);
    for (int64_t i = 0; i < o->numel; i++) og[i] = 1.f;
    assert_int_equal(al_backward_run(c), AL_OK);
    size_t peak = c->arena.peak;
    al_ctx_free(c);
    return peak;
}

static void test_full_memory_linear(void **st)
{
    (void)st;
    size_t p1 = full_peak(512), p2 = full_peak(2048);
    double ratio = (double)p2 / (double)p1;
    print_message("full attention fwd+bwd arena peak: N=512 %zu B, N=2048 %zu B, ratio %.2f\n", p1, p2, ratio);
    assert_true(ratio <= 6.0);
    assert_true(p2 < (size_t)2048 * 2048 * sizeof(float) / 2);   /* far below one N×N matrix */
}

/* q = k = v as one tensor (the GAT layer does this): gradients from all three roles add up. */
static void shared_qkv_grad(const al_pattern *pat, int additive, float *grad_out, float *x, float *a, int ref)
{
    al_ctx *c = al_ctx_new(3);
    al_tensor *t = al_wrap(c, x, 4, (int[]){2, 3, 20, 8});
    al_tensor *aq = al_wrap(c, a, 2, (int[]){3, 8}), *ak = al_wrap(c, a + 24, 2, (int[]){3, 8});
    t->requires_grad = aq->requires_grad = ak->requires_grad = 1;
    al_attn_desc d = {.pattern = *pat, .score = additive ? AL_SCORE_ADDITIVE : AL_SCORE_DOT, .slope = 0.2f};
    al_tensor *o = (ref ? al_attention_ref : al_attention)(c, &d, t, t, t, additive ? aq : NULL, additive ? ak : NULL, NULL, NULL);
    assert_non_null(o);
    tu_fill(al_grad(c, o), o->numel, 5, -1, 1);
    assert_int_equal(al_backward_run(c), AL_OK);
    memcpy(grad_out, t->grad, (size_t)t->numel * sizeof(float));
    al_ctx_free(c);
}

static void test_shared_qkv(void **st)
{
    (void)st;
    al_csr g = rand_graph(20, 0.3, 1, -1, 8);
    al_pattern pats[3] = {al_pattern_full(), al_pattern_window2d(4, 5, 3, 3), al_pattern_graph(&g)};
    float *x = tu_alloc_rand(2 * 3 * 20 * 8, 1, -1, 1), *a = tu_alloc_rand(48, 2, -0.5f, 0.5f);
    float *gf = malloc(2 * 3 * 20 * 8 * sizeof(float)), *gr = malloc(2 * 3 * 20 * 8 * sizeof(float));
    for (int p = 0; p < 3; p++)
        for (int additive = 0; additive < 2; additive++) {
            shared_qkv_grad(&pats[p], additive, gf, x, a, 0);
            shared_qkv_grad(&pats[p], additive, gr, x, a, 1);
            double e = tu_max_rel_err(gf, gr, 2 * 3 * 20 * 8);
            if (!(e <= BWD_TOL)) fail_msg("shared q=k=v, pattern %d additive %d: grad rel err %.3g", p, additive, e);
        }
    free(x); free(a); free(gf); free(gr);
    al_csr_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_patterns_match_reference),
        cmocka_unit_test(test_full_multi_tile),
        cmocka_unit_test(test_dropout_matches_reference),
        cmocka_unit_test(test_pattern_equivalences),
        cmocka_unit_test(test_deterministic_across_threads),
        cmocka_unit_test(test_weights_layout),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_graph_plan),
        cmocka_unit_test(test_full_memory_linear),
        cmocka_unit_test(test_shared_qkv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
