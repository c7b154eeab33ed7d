/* test_gpsa.c — gated positional self-attention: the op al_gpsa against a dense reference in double, its
 * gradients for q, k, v, the gate and the positional vectors by central differences, the same bits for 1
 * and 2 threads. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/attention.h"
#include "attnlab/ops.h"

/* ---------------- the op ---------------- */

typedef struct op_case { int B, H, gh, gw, D, Dv; float scale; uint64_t seed; } op_case;
enum { IN_Q, IN_K, IN_V, IN_GATE, IN_POS, NIN };
static const char *const in_names[NIN] = {"q", "k", "v", "gate", "pos"};

static int64_t in_numel(const op_case *a, int i)
{
    const int64_t N = (int64_t)a->gh * a->gw;
    switch (i) {
    case IN_Q: case IN_K: return (int64_t)a->B * a->H * N * a->D;
    case IN_V: return (int64_t)a->B * a->H * N * a->Dv;
    case IN_GATE: return a->H;
    default: return 3 * a->H;
    }
}
static tu_input in_shape(const op_case *a, int i, float *data, int check)
{
    const int N = a->gh * a->gw;
    switch (i) {
    case IN_Q: case IN_K: return tu_in(data, check, 4, a->B, a->H, N, a->D);
    case IN_V: return tu_in(data, check, 4, a->B, a->H, N, a->Dv);
    case IN_GATE: return tu_in(data, check, 1, a->H, 0, 0, 0);
    default: return tu_in(data, check, 2, a->H, 3, 0, 0);
    }
}
/* Random inputs in general position: gates around 0 (σ' far from 0), positional vectors of either sign. */
static void make_inputs(const op_case *a, float *x[NIN])
{
    for (int i = 0; i < NIN; i++) x[i] = tu_alloc_rand(in_numel(a, i), a->seed + (uint64_t)i, -1.0f, 1.0f);
    for (int h = 0; h < a->H; h++) x[IN_GATE][h] *= 1.5f;
    for (int64_t j = 0; j < 3 * a->H; j++) x[IN_POS][j] *= 0.6f;
}
static al_attn_desc op_desc(const op_case *a, al_tensor **weights)
{
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_pattern_full();
    d.pattern.grid_h = a->gh; d.pattern.grid_w = a->gw;
    d.scale = a->scale;
    d.weights = weights;
    return d;
}

/* The definition, densely, in double: out (B,H,N,Dv) and A (B,H,N,N). */
static void gpsa_ref(const op_case *a, float *const x[NIN], double *out, double *A)
{
    const int N = a->gh * a->gw, D = a->D, Dv = a->Dv;
    const double c = a->scale != 0.f ? a->scale : 1.0 / sqrt((double)D);
    double *sc = malloc((size_t)N * sizeof *sc), *sp = malloc((size_t)N * sizeof *sp);
    assert_true(sc && sp);
    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->H; h++) {
            const int64_t bh = (int64_t)b * a->H + h;
            const float *q = x[IN_Q] + bh * N * D, *k = x[IN_K] + bh * N * D, *v = x[IN_V] + bh * N * Dv, *p = x[IN_POS] + 3 * h;
            const double g = 1.0 / (1.0 + exp(-(double)x[IN_GATE][h]));
            for (int i = 0; i < N; i++) {
                double mc = -INFINITY, mp = -INFINITY, zc = 0, zp = 0;
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++) s += (double)q[i * D + d] * k[j * D + d];
                    const double dx = j % a->gw - i % a->gw, dy = j / a->gw - i / a->gw;
                    sc[j] = c * s;
                    sp[j] = p[0] * dx + p[1] * dy + p[2] * (dx * dx + dy * dy);
                    mc = fmax(mc, sc[j]); mp = fmax(mp, sp[j]);
                }
                for (int j = 0; j < N; j++) { zc += exp(sc[j] - mc); zp += exp(sp[j] - mp); }
                double *Ai = A + (bh * N + i) * N, *oi = out + (bh * N + i) * Dv;
                for (int e = 0; e < Dv; e++) oi[e] = 0;
                for (int j = 0; j < N; j++) {
                    Ai[j] = (1 - g) * exp(sc[j] - mc) / zc + g * exp(sp[j] - mp) / zp;
                    for (int e = 0; e < Dv; e++) oi[e] += Ai[j] * v[j * Dv + e];
                }
            }
        }
    free(sc); free(sp);
}

static double rel_err_d(const float *got, const double *want, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - want[i]);
        num = d > num || isnan(d) ? (isnan(d) ? INFINITY : d) : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num / (den + 1e-12);
}

static void check_forward(const op_case *a)
{
    float *x[NIN];
    make_inputs(a, x);
    const int N = a->gh * a->gw;
    const int64_t no = (int64_t)a->B * a->H * N * a->Dv, na = (int64_t)a->B * a->H * N * N;
    double *out = malloc((size_t)no * sizeof *out), *A = malloc((size_t)na * sizeof *A);
    assert_true(out && A);
    gpsa_ref(a, x, out, A);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN], *w = NULL;
    for (int i = 0; i < NIN; i++) { tu_input s = in_shape(a, i, x[i], 0); t[i] = al_wrap(c, x[i], s.ndim, s.shape); }
    al_attn_desc d = op_desc(a, &w);
    al_tensor *y = al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
    if (!y) fail_msg("gpsa: %s", al_ctx_error(c));
    assert_int_equal(y->numel, no);
    assert_non_null(w);
    assert_int_equal(w->numel, na);
    const double eo = rel_err_d(y->data, out, no), ea = rel_err_d(w->data, A, na);
    print_message("gpsa %dx%d grid, B %d, H %d, D %d, Dv %d: output rel err %.2g, weights %.2g\n", a->gh, a->gw, a->B, a->H,
                  a->D, a->Dv, eo, ea);
    assert_true(eo < 1e-5 && ea < 1e-5);
    for (int64_t r = 0; r < na / N; r++) {   /* every row of A sums to 1: two softmaxes mixed convexly */
        double s = 0;
        for (int j = 0; j < N; j++) s += w->data[r * N + j];
        assert_true(fabs(s - 1) < 1e-5);
    }
    al_ctx_free(c);
    for (int i = 0; i < NIN; i++) free(x[i]);
    free(out); free(A);
}

static void test_forward_matches_dense_reference(void **st)
{
    (void)st;
    const op_case cases[] = {{2, 3, 3, 4, 5, 2, 0.f, 1},      /* N = 12 < one lane block */
                             {1, 2, 5, 7, 3, 4, 0.7f, 2},     /* N = 35: lane blocks and a tail, a given scale */
                             {2, 1, 1, 1, 2, 3, 0.f, 3}};     /* one token */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_forward(&cases[i]);
}

static al_tensor *op_fn(al_ctx *c, al_tensor **t, void *ud)
{
    al_attn_desc d = op_desc(ud, NULL);
    return al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
}

static void test_gradcheck_every_input(void **st)
{
    (void)st;
    const op_case cases[] = {{2, 2, 2, 3, 3, 2, 0.f, 11}, {1, 3, 3, 7, 2, 2, 0.f, 12}};   /* N = 6; N = 21 (a lane tail) */
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const op_case *a = &cases[ci];
        float *x[NIN];
        make_inputs(a, x);
        for (int only = 0; only < NIN; only++) {   /* one input at a time, so that each is named and held to the bound */
            tu_input in[NIN];
            for (int i = 0; i < NIN; i++) in[i] = in_shape(a, i, x[i], i == only);
            char what[64];
            snprintf(what, sizeof what, "gpsa case %zu, d/d%s", ci, in_names[only]);
            TU_GRADCHECK(what, op_fn, (void *)a, in, NIN, 1e-2, 1e-2);
        }
        for (int i = 0; i < NIN; i++) free(x[i]);
    }
}

/* Output and every input's gradient (for the loss Σ r ⊙ out) with `threads` threads, into res. */
static void op_run(const op_case *a, float *const x[NIN], int threads, float *res[NIN + 1])
{
    al_set_threads(threads);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN];
    for (int i = 0; i < NIN; i++) {
        tu_input s = in_shape(a, i, x[i], 1);
        t[i] = al_wrap(c, x[i], s.ndim, s.shape);
        t[i]->requires_grad = 1;
    }
    al_attn_desc d = op_desc(a, NULL);
    al_tensor *y = al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
    if (!y) fail_msg("gpsa: %s", al_ctx_error(c));
    tu_fill(al_grad(c, y), y->numel, 77, -1, 1);
    res[0] = malloc((size_t)y->numel * sizeof(float));
    memcpy(res[0], y->data, (size_t)y->numel * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < NIN; i++) {
        res[i + 1] = malloc((size_t)t[i]->numel * sizeof(float));
        memcpy(res[i + 1], al_grad(c, t[i]), (size_t)t[i]->numel * sizeof(float));
    }
    al_ctx_free(c);
}

static void test_op_threads_bitwise(void **st)
{
    (void)st;
    const int threads = al_threads();
    const op_case a = {3, 4, 8, 8, 5, 3, 0.f, 21};   /* 12 heads of 64 tokens: enough work for the parallel loops */
    float *x[NIN], *r1[NIN + 1], *r2[NIN + 1];
    make_inputs(&a, x);
    op_run(&a, x, 1, r1);
    op_run(&a, x, 2, r2);
    const int N = a.gh * a.gw;
    const int64_t n[NIN + 1] = {(int64_t)a.B * a.H * N * a.Dv, in_numel(&a, 0), in_numel(&a, 1), in_numel(&a, 2),
                                in_numel(&a, 3), in_numel(&a, 4)};
    for (int i = 0; i <= NIN; i++) {
        if (memcmp(r1[i], r2[i], (size_t)n[i] * sizeof(float)))
            fail_msg("gpsa: %s differs between 1 and 2 threads", i ? in_names[i - 1] : "the output");
        free(r1[i]); free(r2[i]);
    }
    for (int i = 0; i < NIN; i++) free(x[i]);
    al_set_threads(threads);
}

static void test_op_rejects_bad_arguments(void **st)
{
    (void)st;
    const op_case a = {1, 2, 2, 3, 3, 2, 0.f, 5};
    float *x[NIN];
    make_inputs(&a, x);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN];
    for (int i = 0; i < NIN; i++) { tu_input s = in_shape(&a, i, x[i], 0); t[i] = al_wrap(c, x[i], s.ndim, s.shape); }
    al_attn_desc d = op_desc(&a, NULL);
    d.pattern.grid_w = 2;   /* 2x2 is not 6 tokens */
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]));
    assert_non_null(strstr(al_ctx_error(c), "not a 2x2 grid"));
    al_ctx_clear_error(c);
    d = op_desc(&a, NULL);
    d.norm = AL_NORM_RELU;
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]));
    al_ctx_clear_error(c);
    d = op_desc(&a, NULL);
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_POS], t[IN_POS]));   /* a gate of (H, 3) */
    assert_non_null(strstr(al_ctx_error(c), "gate"));
    al_ctx_free(c);
    for (int i = 0; i < NIN; i++) free(x[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_matches_dense_reference),
        cmocka_unit_test(test_gradcheck_every_input),
        cmocka_unit_test(test_op_threads_bitwise),
        cmocka_unit_test(test_op_rejects_bad_arguments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
