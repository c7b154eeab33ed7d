/* test_ops_norm.c — layernorm, softmax, log-softmax, cross-entropy: forward against hand values
 * or naive loops, finite-difference gradient checks, and error handling. */
#include "testutil.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Gradient-check settings. Forward passes are float32, the loss is accumulated in double.
 * With eps = 1e-2 the central difference has truncation error O(eps²·f''') ≈ 1e-4 relative for
 * these smooth ops and float rounding noise ≈ 1e-7·|L|/eps ≈ 1e-5 (measured worst: 7e-5, cross-
 * entropy); 1e-3 leaves >10x margin for both, yet a wrong term in a backward (e.g. a missing mean(g·x̂)) gives errors of order 1e-1 or more. */
#define GEPS 1e-2
#define GTOL 1e-3

/* ---------------- layernorm ---------------- */
static al_tensor *f_layernorm(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_layernorm(c, t[0], t[1], t[2], 1e-5f);
}
static al_tensor *f_layernorm_plain(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_layernorm(c, t[0], NULL, NULL, 1e-5f);
}

static void test_layernorm_forward(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    /* hand values: x = (1, 2, 3, 6): mean 3, var (4+1+0+9)/4 = 3.5 */
    float xv[4] = {1, 2, 3, 6}, g[4] = {1, 2, 1, 1}, b[4] = {0, 0, 1, 0};
    al_tensor *x = al_wrap(c, xv, 1, (int[]){4});
    al_tensor *gt = al_wrap(c, g, 1, (int[]){4}), *bt = al_wrap(c, b, 1, (int[]){4});
    al_tensor *y = al_layernorm(c, x, gt, bt, 0.f);
    assert_non_null(y);
    double rs = 1.0 / sqrt(3.5);
    double want[4] = {-2 * rs, 2 * -1 * rs, 0 * rs + 1, 3 * rs};
    for (int i = 0; i < 4; i++) assert_true(fabs(y->data[i] - want[i]) < 1e-6);
    /* (2, 3, 7) with a naive loop: each row has mean 0 and variance 1 before the affine map */
    float *xd = tu_alloc_rand(42, 3, -3.f, 4.f);
    al_tensor *x3 = al_wrap(c, xd, 3, (int[]){2, 3, 7});
    al_tensor *y3 = al_layernorm(c, x3, NULL, NULL, 1e-5f);
    assert_non_null(y3);
    assert_int_equal(y3->ndim, 3);
    for (int r = 0; r < 6; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < 7; i++) m += y3->data[r * 7 + i];
        for (int i = 0; i < 7; i++) v += y3->data[r * 7 + i] * (double)y3->data[r * 7 + i];
        assert_true(fabs(m / 7) < 1e-6);
        assert_true(fabs(v / 7 - 1) < 1e-4);   /* eps = 1e-5 shrinks the variance by ~eps/var */
    }
    free(xd);
    al_ctx_free(c);
}

static void test_layernorm_grad(void **st)
{
    (void)st;
    /* odd sizes: 3×5 rows of 7, and 70 rows (> 64 chunks) of 8 to cover the chunked reduction; rows of
     * 32 and 16 take the fused 16-lane path on AVX-512 builds */
    int shapes[4][3] = {{3, 5, 7}, {70, 1, 8}, {3, 2, 32}, {66, 1, 16}};
    for (int s = 0; s < 4; s++) {
        int R = shapes[s][0] * shapes[s][1], C = shapes[s][2];
        float *x = tu_alloc_rand((int64_t)R * C, 10 + s, -2.f, 2.f);
        float *g = tu_alloc_rand(C, 20 + s, 0.5f, 1.5f), *b = tu_alloc_rand(C, 30 + s, -1.f, 1.f);
        tu_input in[3] = {tu_in(x, 1, 3, shapes[s][0], shapes[s][1], C, 0), tu_in(g, 1, 1, C, 0, 0, 0),
                          tu_in(b, 1, 1, C, 0, 0, 0)};
        TU_GRADCHECK("layernorm", f_layernorm, NULL, in, 3, GEPS, GTOL);
        TU_GRADCHECK("layernorm (no affine)", f_layernorm_plain, NULL, in, 1, GEPS, GTOL);
        free(x); free(g); free(b);
    }
}

static void test_layernorm_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 2, (int[]){4, 6});
    al_tensor *g = al_zeros(c, 1, (int[]){5});
    assert_null(al_layernorm(c, x, g, NULL, 1e-5f));
    assert_non_null(strstr(al_ctx_error(c), "layernorm"));
    assert_non_null(strstr(al_ctx_error(c), "(5)"));
    /* a context in error makes every op return NULL; NULL input returns NULL */
    assert_null(al_softmax(c, x));
    al_ctx_clear_error(c);
    assert_null(al_layernorm(c, NULL, NULL, NULL, 1e-5f));
    assert_null(al_softmax(c, NULL));
    assert_null(al_cross_entropy(c, NULL, (int[]){0}, NULL));
    al_ctx_free(c);
}

/* ---------------- softmax / log-softmax ---------------- */
static al_tensor *f_softmax(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_softmax(c, t[0]); }
static al_tensor *f_log_softmax(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_log_softmax(c, t[0]); }

static void test_softmax_forward(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[6] = {1, 2, 3, -1, -1, -1};
    al_tensor *x = al_wrap(c, xv, 2, (int[]){2, 3});
    al_tensor *y = al_softmax(c, x), *l = al_log_softmax(c, x);
    assert_non_null(y); assert_non_null(l);
    double z = exp(1) + exp(2) + exp(3);
    double want[6] = {exp(1) / z, exp(2) / z, exp(3) / z, 1 / 3.0, 1 / 3.0, 1 / 3.0};
    for (int i = 0; i < 6; i++) {
        assert_true(fabs(y->data[i] - want[i]) < 1e-6);
        assert_true(fabs(l->data[i] - log(want[i])) < 1e-6);
    }
    /* 4-D input: softmax over the last dim only */
    float *x4 = tu_alloc_rand(2 * 3 * 2 * 5, 9, -4.f, 4.f);
    al_tensor *t4 = al_wrap(c, x4, 4, (int[]){2, 3, 2, 5});
    al_tensor *y4 = al_softmax(c, t4);
    assert_int_equal(y4->ndim, 4);
    for (int r = 0; r < 12; r++) {
        double s = 0, m = -1e30;
        for (int i = 0; i < 5; i++) if (x4[r * 5 + i] > m) m = x4[r * 5 + i];
        for (int i = 0; i < 5; i++) s += exp(x4[r * 5 + i] - m);
        for (int i = 0; i < 5; i++) assert_true(fabs(y4->data[r * 5 + i] - exp(x4[r * 5 + i] - m) / s) < 1e-6);
    }
    free(x4);
    al_ctx_free(c);
}

static void test_softmax_grad(void **st)
{
    (void)st;
    float *x = tu_alloc_rand(3 * 4 * 9, 5, -3.f, 3.f);
    tu_input in[1] = {tu_in(x, 1, 3, 3, 4, 9, 0)};
    TU_GRADCHECK("softmax", f_softmax, NULL, in, 1, GEPS, GTOL);
    tu_input in1[1] = {tu_in(x, 1, 2, 1, 1, 0, 0)};   /* a single element: softmax ≡ 1, gradient 0 */
    TU_GRADCHECK("softmax 1x1", f_softmax, NULL, in1, 1, GEPS, GTOL);
    free(x);
}

static void test_log_softmax_grad(void **st)
{
    (void)st;
    float *x = tu_alloc_rand(5 * 17, 6, -4.f, 4.f);
    tu_input in[1] = {tu_in(x, 1, 2, 5, 17, 0, 0)};
    TU_GRADCHECK("log_softmax", f_log_softmax, NULL, in, 1, GEPS, GTOL);
    free(x);
}

/* ---------------- cross-entropy ---------------- */
typedef struct { const int *labels; const uint8_t *mask; } ce_ud;
static al_tensor *f_ce(al_ctx *c, al_tensor **t, void *ud)
{
    ce_ud *u = ud;
    return al_cross_entropy(c, t[0], u->labels, u->mask);
}

static void test_cross_entropy_forward(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[9] = {1, 2, 3, 0, 0, 0, 5, -5, 0};
    int lab[3] = {2, 1, 0};
    al_tensor *x = al_wrap(c, xv, 2, (int[]){3, 3});
    al_tensor *l = al_cross_entropy(c, x, lab, NULL);
    assert_non_null(l);
    assert_int_equal(l->numel, 1);
    double l0 = log(exp(1) + exp(2) + exp(3)) - 3, l1 = log(3.0), l2 = log(exp(5) + exp(-5) + 1) - 5;
    assert_true(fabs(l->data[0] - (l0 + l1 + l2) / 3) < 1e-6);
    /* mask: only rows 0 and 2 count; row 1's label is never read (-1 is fine there) */
    int lab2[3] = {2, -1, 0};
    uint8_t mask[3] = {1, 0, 1};
    al_tensor *lm = al_cross_entropy(c, x, lab2, mask);
    assert_non_null(lm);
    assert_true(fabs(lm->data[0] - (l0 + l2) / 2) < 1e-6);
    al_ctx_free(c);
}

static void test_cross_entropy_grad_masked(void **st)
{
    (void)st;
    enum { B = 7, C = 5 };
    float *x = tu_alloc_rand(B * C, 8, -3.f, 3.f);
    int lab[B] = {0, 4, 2, 3, 1, 1, 4};
    uint8_t mask[B] = {1, 0, 1, 1, 0, 1, 1};
    ce_ud u = {lab, NULL};
    tu_input in[1] = {tu_in(x, 1, 2, B, C, 0, 0)};
    TU_GRADCHECK("cross_entropy", f_ce, &u, in, 1, GEPS, GTOL);
    u.mask = mask;
    TU_GRADCHECK("cross_entropy masked", f_ce, &u, in, 1, GEPS, GTOL);
    /* analytic gradient = (softmax − onehot)/count on counted rows, 0 on the others */
    al_ctx *c = al_ctx_new(1);
    al_tensor *t = al_wrap(c, x, 2, (int[]){B, C});
    t->requires_grad = 1;
    al_tensor *l = al_cross_entropy(c, t, lab, mask);
    assert_int_equal(al_backward(c, l), AL_OK);
    for (int r = 0; r < B; r++) {
        double m = -1e30, s = 0;
        for (int i = 0; i < C; i++) if (x[r * C + i] > m) m = x[r * C + i];
        for (int i = 0; i < C; i++) s += exp(x[r * C + i] - m);
        for (int i = 0; i < C; i++) {
            double want = mask[r] ? (exp(x[r * C + i] - m) / s - (i == lab[r])) / 5.0 : 0.0;
            assert_true(fabs(t->grad[r * C + i] - want) < 1e-6);
        }
    }
    al_ctx_free(c);
    free(x);
}

static void test_cross_entropy_edge_cases(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[6] = {1, 2, 3, 4, 5, 6};
    al_tensor *x = al_wrap(c, xv, 2, (int[]){2, 3});
    x->requires_grad = 1;
    /* label out of range on a counted row → error naming the row, not a crash */
    assert_null(al_cross_entropy(c, x, (int[]){0, 3}, NULL));
    assert_non_null(strstr(al_ctx_error(c), "label 3 of row 1"));
    al_ctx_clear_error(c);
    assert_null(al_cross_entropy(c, x, (int[]){-1, 0}, NULL));
    al_ctx_clear_error(c);
    /* zero counted rows: loss 0 and zero gradients, not NaN */
    uint8_t none[2] = {0, 0};
    al_tensor *l = al_cross_entropy(c, x, (int[]){7, 7}, none);
    assert_non_null(l);
    assert_true(l->data[0] == 0.f);
    assert_int_equal(al_backward(c, l), AL_OK);
    for (int i = 0; i < 6; i++) assert_true(x->grad == NULL || x->grad[i] == 0.f);
    /* logits must be 2-D */
    al_tensor *x3 = al_zeros(c, 3, (int[]){1, 2, 3});
    assert_null(al_cross_entropy(c, x3, (int[]){0, 0}, NULL));
    assert_non_null(strstr(al_ctx_error(c), "cross_entropy"));
    al_ctx_free(c);
}

/* The labels array may be reused by the caller between forward and backward. */
static void test_cross_entropy_copies_labels(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[4] = {0, 1, 2, 3};
    al_tensor *x = al_wrap(c, xv, 2, (int[]){2, 2});
    x->requires_grad = 1;
    int lab[2] = {0, 1};
    al_tensor *l = al_cross_entropy(c, x, lab, NULL);
    lab[0] = 1; lab[1] = 0;
    assert_int_equal(al_backward(c, l), AL_OK);
    assert_true(x->grad[0] < 0 && x->grad[3] < 0);   /* the true classes (0 and 1) get pushed up */
    al_ctx_free(c);
}

/* ---------------- add + layernorm (fused) ---------------- */
/* y + 0.3·s, so that both outputs of the fused op carry a gradient */
static al_tensor *f_add_layernorm(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    al_tensor *s, *y = al_add_layernorm(c, t[0], t[1], t[2], t[3], 1e-5f, &s);
    return y ? al_add(c, y, al_scale(c, s, 0.3f)) : NULL;
}

static void test_add_layernorm_grad(void **st)
{
    (void)st;
    enum { R = 6, C = 9 };
    float *a = tu_alloc_rand(R * C, 50, -2.f, 2.f), *b = tu_alloc_rand(R * C, 51, -2.f, 2.f);
    float *g = tu_alloc_rand(C, 52, 0.5f, 1.5f), *be = tu_alloc_rand(C, 53, -1.f, 1.f);
    tu_input in[4] = {tu_in(a, 1, 2, R, C, 0, 0), tu_in(b, 1, 2, R, C, 0, 0), tu_in(g, 1, 1, C, 0, 0, 0), tu_in(be, 1, 1, C, 0, 0, 0)};
    TU_GRADCHECK("add_layernorm", f_add_layernorm, NULL, in, 4, GEPS, GTOL);
    free(a); free(b); free(g); free(be);
}

/* The fused op against al_add then al_layernorm: the sum, the output and every gradient bit for bit,
 * above the rows' parallel threshold, on 1 and 2 threads, and with a and b the same tensor (x + x). */
static void test_add_layernorm_same_bits(void **st)
{
    (void)st;
    enum { R = 700, C = 64 };
    float *a = tu_alloc_rand(R * C, 60, -2.f, 2.f), *b = tu_alloc_rand(R * C, 61, -2.f, 2.f);
    float *g = tu_alloc_rand(C, 62, 0.5f, 1.5f), *be = tu_alloc_rand(C, 63, -1.f, 1.f), *dy = tu_alloc_rand(R * C, 64, -1.f, 1.f);
    const int t0 = al_threads();
    for (int th = 1; th <= 2; th++)
        for (int same = 0; same < 2; same++) {
            al_set_threads(th);
            float *res[2][6];
            for (int fused = 0; fused < 2; fused++) {
                al_ctx *c = al_ctx_new(1);
                al_tensor *ta = al_wrap(c, a, 2, (int[]){R, C}), *tb = same ? ta : al_wrap(c, b, 2, (int[]){R, C});
                al_tensor *tg = al_wrap(c, g, 1, (int[]){C}), *tbe = al_wrap(c, be, 1, (int[]){C});
                ta->requires_grad = tb->requires_grad = tg->requires_grad = tbe->requires_grad = 1;
                al_tensor *s, *y;
                if (fused) y = al_add_layernorm(c, ta, tb, tg, tbe, 1e-5f, &s);
                else { s = al_add(c, ta, tb); y = al_layernorm(c, s, tg, tbe, 1e-5f); }
                assert_non_null(y);
                al_tensor *l = al_add(c, y, al_scale(c, s, 0.5f));   /* the sum is also used, as the residual is */
                memcpy(al_grad(c, l), dy, sizeof(float) * R * C);
                assert_int_equal(al_backward_run(c), AL_OK);
                const float *outs[6] = {s->data, y->data, ta->grad, tb->grad, tg->grad, tbe->grad};
                const size_t ns[6] = {R * C, R * C, R * C, R * C, C, C};
                for (int k = 0; k < 6; k++) {
                    res[fused][k] = malloc(ns[k] * sizeof(float));
                    memcpy(res[fused][k], outs[k], ns[k] * sizeof(float));
                }
                al_ctx_free(c);
            }
            const size_t ns[6] = {R * C, R * C, R * C, R * C, C, C};
            for (int k = 0; k < 6; k++) {
                assert_memory_equal(res[0][k], res[1][k], ns[k] * sizeof(float));
                free(res[0][k]); free(res[1][k]);
            }
        }
    al_set_threads(t0);
    al_ctx *c = al_ctx_new(1);
    al_tensor *s, *x = al_zeros(c, 2, (int[]){4, 6}), *z = al_zeros(c, 2, (int[]){4, 5});
    assert_null(al_add_layernorm(c, x, z, NULL, NULL, 1e-5f, &s));
    assert_null(s);
    assert_non_null(strstr(al_ctx_error(c), "add_layernorm: shapes differ"));
    al_ctx_free(c);
    free(a); free(b); free(g); free(be); free(dy);
}

/* Backward results do not depend on the thread count: layernorm's dγ/dβ are reduced over
 * fixed row chunks, softmax and cross-entropy rows are owned by one thread. Bitwise check. */
static void test_norm_backward_thread_invariant(void **st)
{
    (void)st;
    enum { R = 300, C = 96 };
    float *x = tu_alloc_rand(R * C, 1, -2.f, 2.f), *g = tu_alloc_rand(C, 2, 0.5f, 1.5f), *b = tu_alloc_rand(C, 3, -1.f, 1.f);
    float *dy = tu_alloc_rand(R * C, 4, -1.f, 1.f);
    int *lab = malloc(R * sizeof(int));
    for (int i = 0; i < R; i++) lab[i] = (i * 7) % C;
    float *keep[2][4];
    int t0 = al_threads();
    for (int th = 0; th < 2; th++) {
        al_set_threads(th + 1);
        al_ctx *c = al_ctx_new(1);
        al_tensor *tx = al_wrap(c, x, 2, (int[]){R, C}), *tg = al_wrap(c, g, 1, (int[]){C}), *tb = al_wrap(c, b, 1, (int[]){C});
        tx->requires_grad = tg->requires_grad = tb->requires_grad = 1;
        al_tensor *y = al_layernorm(c, tx, tg, tb, 1e-5f);
        al_tensor *s = al_log_softmax(c, y);
        al_tensor *t = al_softmax(c, s);
        memcpy(al_grad(c, t), dy, sizeof(float) * R * C);
        al_tensor *l = al_cross_entropy(c, y, lab, NULL);
        al_grad(c, l)[0] = 1.f;
        assert_int_equal(al_backward_run(c), AL_OK);
        float *outs[4] = {tx->grad, tg->grad, tb->grad, t->data};
        int64_t ns[4] = {R * C, C, C, R * C};
        for (int k = 0; k < 4; k++) {
            keep[th][k] = malloc((size_t)ns[k] * sizeof(float));
            memcpy(keep[th][k], outs[k], (size_t)ns[k] * sizeof(float));
        }
        if (th == 1)
            for (int k = 0; k < 4; k++) {
                assert_memory_equal(keep[0][k], keep[1][k], (size_t)ns[k] * sizeof(float));
                free(keep[0][k]); free(keep[1][k]);
            }
        al_ctx_free(c);
    }
    al_set_threads(t0);
    free(x); free(g); free(b); free(dy); free(lab);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm_forward),
        cmocka_unit_test(test_layernorm_grad),
        cmocka_unit_test(test_layernorm_errors),
        cmocka_unit_test(test_add_layernorm_grad),
        cmocka_unit_test(test_add_layernorm_same_bits),
        cmocka_unit_test(test_softmax_forward),
        cmocka_unit_test(test_softmax_grad),
        cmocka_unit_test(test_log_softmax_grad),
        cmocka_unit_test(test_cross_entropy_forward),
        cmocka_unit_test(test_cross_entropy_grad_masked),
        cmocka_unit_test(test_cross_entropy_edge_cases),
        cmocka_unit_test(test_cross_entropy_copies_labels),
        cmocka_unit_test(test_norm_backward_thread_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
