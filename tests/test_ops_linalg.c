/* test_ops_linalg.c — matmul (2-D, batched, transposed, broadcast), linear and spmm:
 * forward against naive loops, finite-difference gradient checks, shape errors. */
#include "testutil.h"
#include "attnlab/ops.h"
#include "attnlab/attention.h"
#include "attnlab/kernels.h"
#include "ops/ops_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gradient checks: these ops are bilinear, so central differences have no truncation error;
 * what remains is float rounding of the forward, ≈1e-7·|L|/eps ≈ 1e-5 relative with eps = 1e-2
 * for the sizes here. GTOL = 1e-3 is far above that and far below the O(1) error of a wrong
 * transpose or a missing batch term. */
#define GEPS 1e-2
#define GTOL 1e-3
/* Forward vs naive double loops: sums of ≤ 40 products of O(1) floats, error ≲ 1e-6 relative. */
#define FTOL 1e-5

/* C (Bt, M, N) = op(A_b) op(B_b) in double; sa/sb = 0 for a shared 2-D operand. */
static void naive_mm(const float *A, const float *B, float *C, int Bt, int M, int N, int K,
                     int ta, int tb, int64_t sa, int64_t sb)
{
    for (int b = 0; b < Bt; b++)
        for (int i = 0; i < M; i++)
            for (int j = 0; j < N; j++) {
                double s = 0;
                for (int k = 0; k < K; k++) {
                    float a = ta ? A[b * sa + (int64_t)k * M + i] : A[b * sa + (int64_t)i * K + k];
                    float v = tb ? B[b * sb + (int64_t)j * K + k] : B[b * sb + (int64_t)k * N + j];
                    s += (double)a * v;
                }
                C[((int64_t)b * M + i) * N + j] = (float)s;
            }
}

typedef struct { int ta, tb; } mm_ud;
static al_tensor *f_matmul(al_ctx *c, al_tensor **t, void *ud)
{
    mm_ud *u = ud;
    return al_matmul(c, t[0], t[1], u->ta, u->tb);
}

/* One matmul case: forward vs naive and a gradient check of both operands.
 * a3/b3: whether A/B carry the batch dimension. */
static void check_matmul(int Bt, int M, int N, int K, int ta, int tb, int a3, int b3, int gradcheck)
{
    int64_t na = (int64_t)(a3 ? Bt : 1) * M * K, nb = (int64_t)(b3 ? Bt : 1) * K * N;
    float *A = tu_alloc_rand(na, 100 + M, -1.f, 1.f), *B = tu_alloc_rand(nb, 200 + N, -1.f, 1.f);
    tu_input in[2];
    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    in[0] = a3 ? tu_in(A, 1, 3, Bt, ar, ac, 0) : tu_in(A, 1, 2, ar, ac, 0, 0);
    in[1] = b3 ? tu_in(B, 1, 3, Bt, br, bc, 0) : tu_in(B, 1, 2, br, bc, 0, 0);
    al_ctx *c = al_ctx_new(1);
    al_tensor *tA = al_wrap(c, A, in[0].ndim, in[0].shape), *tB = al_wrap(c, B, in[1].ndim, in[1].shape);
    al_tensor *y = al_matmul(c, tA, tB, ta, tb);
    if (!y) fail_msg("matmul failed: %s", al_ctx_error(c));
    int outB = (a3 || b3) ? Bt : 1;
    assert_int_equal(y->numel, (int64_t)outB * M * N);
    assert_int_equal(y->ndim, (a3 || b3) ? 3 : 2);
    float *ref = malloc((size_t)y->numel * sizeof(float));
    naive_mm(A, B, ref, outB, M, N, K, ta, tb, a3 ? (int64_t)M * K : 0, b3 ? (int64_t)K * N : 0);
    double e = tu_max_rel_err(y->data, ref, y->numel);
    if (e > FTOL) fail_msg("matmul Bt %d %dx%dx%d ta %d tb %d a3 %d b3 %d: rel err %g", Bt, M, N, K, ta, tb, a3, b3, e);
    al_ctx_free(c);
    if (gradcheck) {
        mm_ud u = {ta, tb};
        char what[96];
        snprintf(what, sizeof what, "matmul Bt %d %dx%dx%d ta %d tb %d a3 %d b3 %d", Bt, M, N, K, ta, tb, a3, b3);
        TU_GRADCHECK(what, f_matmul, &u, in, 2, GEPS, GTOL);
    }
    free(A); free(B); free(ref);
}

static void test_matmul_2d_transposes(void **st)
{
    (void)st;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_matmul(1, 5, 3, 7, ta, tb, 0, 0, 1);
            check_matmul(1, 1, 1, 1, ta, tb, 0, 0, 1);
            check_matmul(1, 33, 17, 9, ta, tb, 0, 0, 0);
        }
}

static void test_matmul_batched(void **st)
{
    (void)st;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) check_matmul(3, 4, 5, 6, ta, tb, 1, 1, 1);
    check_matmul(2, 1, 7, 1, 0, 1, 1, 1, 1);
}

static void test_matmul_broadcast(void **st)
{
    (void)st;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            check_matmul(3, 4, 5, 6, ta, tb, 1, 0, 1);   /* 3-D A · 2-D B: batch folds into M */
            check_matmul(3, 4, 5, 6, ta, tb, 0, 1, 1);   /* 2-D A shared over a batched B */
        }
}

/* Batched paths of ops_linalg.c: many small batches with ≥ 2^20 multiply-adds in total run one
 * batch per thread (64·32·32·16 = 2^20); few small ones run in a serial loop (37·13·11·9);
 * batches above 64³ run one after another, each gemm threaded (2·70·65·66). */
static void test_matmul_many_batches_deterministic(void **st)
{
    (void)st;
    check_matmul(64, 32, 32, 16, 1, 1, 1, 1, 0);
    check_matmul(64, 32, 32, 16, 0, 0, 1, 0, 0);
    check_matmul(37, 13, 11, 9, 0, 1, 1, 1, 0);
    check_matmul(2, 70, 65, 66, 1, 0, 1, 1, 0);
    const int Bt = 256, M = 16, N = 16, K = 16;   /* 2^20 multiply-adds: the parallel path */
    float *A = tu_alloc_rand((int64_t)Bt * M * K, 1, -1, 1), *B = tu_alloc_rand((int64_t)Bt * K * N, 2, -1, 1);
    float *g1 = malloc((size_t)Bt * M * K * sizeof(float));
    for (int rep = 0; rep < 2; rep++) {
        al_ctx *c = al_ctx_new(1);
        al_tensor *a = al_wrap(c, A, 3, (int[]){Bt, M, K}), *b = al_wrap(c, B, 3, (int[]){Bt, K, N});
        a->requires_grad = 1;
        al_tensor *y = al_matmul(c, a, b, 0, 0);
        float *g = al_grad(c, y);
        for (int64_t i = 0; i < y->numel; i++) g[i] = (float)(i % 7) - 3.f;
        assert_int_equal(al_backward_run(c), AL_OK);
        if (rep == 0) memcpy(g1, a->grad, (size_t)Bt * M * K * sizeof(float));
        else assert_memory_equal(g1, a->grad, (size_t)Bt * M * K * sizeof(float));
        al_ctx_free(c);
    }
    free(A); free(B); free(g1);
}

static void test_matmul_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *a = al_zeros(c, 2, (int[]){3, 4}), *b = al_zeros(c, 2, (int[]){5, 6});
    assert_null(al_matmul(c, a, b, 0, 0));
    assert_non_null(strstr(al_ctx_error(c), "matmul: inner dimensions differ"));
    assert_non_null(strstr(al_ctx_error(c), "(3, 4)"));
    al_ctx_clear_error(c);
    al_tensor *a3 = al_zeros(c, 3, (int[]){2, 3, 4}), *b3 = al_zeros(c, 3, (int[]){3, 4, 5});
    assert_null(al_matmul(c, a3, b3, 0, 0));
    assert_non_null(strstr(al_ctx_error(c), "batch sizes differ"));
    al_ctx_clear_error(c);
    al_tensor *v = al_zeros(c, 1, (int[]){4}), *d4 = al_zeros(c, 4, (int[]){1, 2, 3, 4});
    assert_null(al_matmul(c, v, b, 0, 0));
    al_ctx_clear_error(c);
    assert_null(al_matmul(c, d4, b, 0, 0));
    assert_non_null(strstr(al_ctx_error(c), "2-D or 3-D"));
    al_ctx_clear_error(c);
    /* transposing fixes a mismatch: (3,4)ᵀ·(3,4) is (4,4) */
    al_tensor *ok = al_matmul(c, a, a, 1, 0);
    assert_non_null(ok);
    assert_int_equal(ok->shape[0], 4); assert_int_equal(ok->shape[1], 4);
    al_ctx_free(c);
}

/* ---------------- linear ---------------- */
static al_tensor *f_linear(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_linear(c, t[0], t[1], t[2]); }
static al_tensor *f_linear_nobias(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_linear(c, t[0], t[1], NULL); }

static void test_linear_forward(void **st)
{
    (void)st;
    const int B = 2, N = 3, in = 5, out = 4;
    float *x = tu_alloc_rand(B * N * in, 1, -1, 1), *w = tu_alloc_rand(out * in, 2, -1, 1), *b = tu_alloc_rand(out, 3, -1, 1);
    al_ctx *c = al_ctx_new(1);
    al_tensor *tx = al_wrap(c, x, 3, (int[]){B, N, in}), *tw = al_wrap(c, w, 2, (int[]){out, in});
    al_tensor *tb = al_wrap(c, b, 1, (int[]){out});
    al_tensor *y = al_linear(c, tx, tw, tb), *y0 = al_linear(c, tx, tw, NULL);
    assert_non_null(y); assert_non_null(y0);
    assert_int_equal(y->ndim, 3); assert_int_equal(y->shape[0], B); assert_int_equal(y->shape[1], N); assert_int_equal(y->shape[2], out);
    for (int r = 0; r < B * N; r++)
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int i = 0; i < in; i++) s += (double)x[r * in + i] * w[o * in + i];
            assert_true(fabs(y0->data[r * out + o] - s) < 1e-6);
            assert_true(fabs(y->data[r * out + o] - (s + b[o])) < 1e-6);
        }
    /* 1-D x: a single vector */
    al_tensor *v = al_linear(c, al_wrap(c, x, 1, (int[]){in}), tw, tb);
    assert_non_null(v);
    assert_int_equal(v->ndim, 1); assert_int_equal(v->shape[0], out);
    assert_true(fabs(v->data[1] - y->data[1]) < 1e-6);
    al_ctx_free(c);
    free(x); free(w); free(b);
}

static void test_linear_grad(void **st)
{
    (void)st;
    const int B = 3, N = 5, in = 7, out = 6;
    float *x = tu_alloc_rand(B * N * in, 4, -1, 1), *w = tu_alloc_rand(out * in, 5, -1, 1), *b = tu_alloc_rand(out, 6, -1, 1);
    tu_input ins[3] = {tu_in(x, 1, 3, B, N, in, 0), tu_in(w, 1, 2, out, in, 0, 0), tu_in(b, 1, 1, out, 0, 0, 0)};
    TU_GRADCHECK("linear", f_linear, NULL, ins, 3, GEPS, GTOL);
    TU_GRADCHECK("linear (no bias)", f_linear_nobias, NULL, ins, 2, GEPS, GTOL);
    ins[0].check = 0;   /* x constant (e.g. the input images) */
    TU_GRADCHECK("linear (params only)", f_linear, NULL, ins, 3, GEPS, GTOL);
    free(x); free(w); free(b);
}

/* A parameter's gradient accumulates over two uses (+=, not =). */
static void test_linear_grad_accumulates(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {1, 0, -1, 2, 1, 0}, bv[2] = {0.5f, -0.5f};
    float gw[6] = {0}, gb[2] = {0};
    al_tensor *w = al_wrap(c, wv, 2, (int[]){2, 3}), *b = al_wrap(c, bv, 1, (int[]){2});
    w->requires_grad = b->requires_grad = 1; w->grad = gw; b->grad = gb;
    al_tensor *x = al_wrap(c, xv, 2, (int[]){2, 3});
    al_tensor *y = al_add(c, al_linear(c, x, w, b), al_linear(c, x, w, b));
    float *g = al_grad(c, y);
    for (int i = 0; i < 4; i++) g[i] = 1.f;
    assert_int_equal(al_backward_run(c), AL_OK);
    /* dW[o, i] = 2 Σ_r x[r, i] = 2·(5, 7, 9); db = 2·2 */
    for (int o = 0; o < 2; o++) {
        assert_true(gw[o * 3 + 0] == 10.f && gw[o * 3 + 1] == 14.f && gw[o * 3 + 2] == 18.f);
        assert_true(gb[o] == 4.f);
    }
    al_ctx_free(c);
}

static void test_linear_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 2, (int[]){4, 5}), *w = al_zeros(c, 2, (int[]){3, 6}), *w2 = al_zeros(c, 2, (int[]){3, 5});
    al_tensor *b = al_zeros(c, 1, (int[]){4});
    assert_null(al_linear(c, x, w, NULL));
    assert_non_null(strstr(al_ctx_error(c), "linear: weight (3, 6)"));
    al_ctx_clear_error(c);
    assert_null(al_linear(c, x, w2, b));
    assert_non_null(strstr(al_ctx_error(c), "bias (4)"));
    al_ctx_free(c);
}

/* ---------------- a block's MLP (al__mlp_gelu) ---------------- */
/* fc2(gelu(fc1(x))) fused against the ops it fuses (al_linear, al_gelu, al_linear): the same output and the
 * same gradients of x, w1, b1, w2, b2, bit for bit, with a tape and without one,
 * on 1 and 2 threads, for shapes that take the GEMM's row split, column panels and edge tiles. */
static void mlp_pair(int rows, int in, int hid, int out, int with_b, int x_grad, int grad, int th)
{
    const int t0 = al_threads();
    al_set_threads(th);
    float *x = tu_alloc_rand((int64_t)rows * in, 31 + rows, -2, 2), *w1 = tu_alloc_rand((int64_t)hid * in, 32, -0.5f, 0.5f);
    float *b1 = tu_alloc_rand(hid, 33, -1, 1), *w2 = tu_alloc_rand((int64_t)out * hid, 34, -0.5f, 0.5f);
    float *b2 = tu_alloc_rand(out, 35, -1, 1), *r = tu_alloc_rand((int64_t)rows * out, 36, -1, 1);
    al_tensor *g[2][5], *y[2];
    al_ctx *c[2];
    for (int k = 0; k < 2; k++) {
        c[k] = al_ctx_new(1);
        c[k]->grad_enabled = grad;
        al_tensor *t[5] = {al_wrap(c[k], x, 2, (int[]){rows, in}), al_wrap(c[k], w1, 2, (int[]){hid, in}),
                           with_b ? al_wrap(c[k], b1, 1, (int[]){hid}) : NULL, al_wrap(c[k], w2, 2, (int[]){out, hid}),
                           with_b ? al_wrap(c[k], b2, 1, (int[]){out}) : NULL};
        for (int i = 0; i < 5; i++) if (t[i]) t[i]->requires_grad = i ? 1 : x_grad;
        if (k == 0) {
            al_tensor *h = al_linear(c[k], t[0], t[1], t[2]);
            h = al_gelu(c[k], h);
            y[k] = al_linear(c[k], h, t[3], t[4]);
        } else {
            y[k] = al__mlp_gelu(c[k], t[0], t[1], t[2], t[3], t[4], NULL);
        }
        assert_non_null(y[k]);
        if (grad) {
            memcpy(al_grad(c[k], y[k]), r, (size_t)rows * out * sizeof(float));
            assert_int_equal(al_backward_run(c[k]), AL_OK);
        }
        for (int i = 0; i < 5; i++) g[k][i] = t[i];
    }
    if (memcmp(y[0]->data, y[1]->data, (size_t)rows * out * sizeof(float)))
        fail_msg("mlp %dx%d->%d->%d (bias %d, tape %d, %d threads): output bits differ", rows, in, hid, out, with_b, grad, th);
    static const char *nm[5] = {"x", "w1", "b1", "w2", "b2"};
    for (int i = 0; grad && i < 5; i++) {
        if (!g[0][i] || (i == 0 && !x_grad)) continue;
        assert_non_null(g[0][i]->grad); assert_non_null(g[1][i]->grad);
        if (memcmp(g[0][i]->grad, g[1][i]->grad, (size_t)g[0][i]->numel * sizeof(float)))
            fail_msg("mlp %dx%d->%d->%d (bias %d, %d threads): d%s bits differ", rows, in, hid, out, with_b, th, nm[i]);
    }
    if (grad && !x_grad && g[1][0]->grad) fail_msg("mlp: a gradient for an x that wants none");
    al_ctx_free(c[0]); al_ctx_free(c[1]);
    free(x); free(w1); free(b1); free(w2); free(b2); free(r);
    al_set_threads(t0);
}

static void test_mlp_gelu_same_bits(void **st)
{
    (void)st;
    static const int shapes[][4] = {{1, 3, 5, 2}, {37, 20, 70, 9}, {600, 64, 256, 64}, {130, 17, 600, 33}};
    for (int th = 1; th <= 2; th++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int v = 0; v < 4; v++)   /* bias; no bias; x constant; no tape */
                mlp_pair(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3], v != 1, v != 2, v != 3, th);
}

static al_tensor *f_mlp(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al__mlp_gelu(c, t[0], t[1], t[2], t[3], t[4], NULL); }

/* GELU is not bilinear: central differences carry a truncation error of order eps² times the third
 * derivative, so a smaller eps than the bilinear ops' */
static void test_mlp_gelu_grad(void **st)
{
    (void)st;
    const int B = 2, N = 5, in = 6, hid = 11, out = 4;
    float *x = tu_alloc_rand(B * N * in, 41, -1.5f, 1.5f), *w1 = tu_alloc_rand(hid * in, 42, -1, 1);
    float *b1 = tu_alloc_rand(hid, 43, -1, 1), *w2 = tu_alloc_rand(out * hid, 44, -1, 1), *b2 = tu_alloc_rand(out, 45, -1, 1);
    tu_input ins[5] = {tu_in(x, 1, 3, B, N, in, 0), tu_in(w1, 1, 2, hid, in, 0, 0), tu_in(b1, 1, 1, hid, 0, 0, 0),
                       tu_in(w2, 1, 2, out, hid, 0, 0), tu_in(b2, 1, 1, out, 0, 0, 0)};
    TU_GRADCHECK("mlp (fc2 . gelu . fc1)", f_mlp, NULL, ins, 5, 3e-3, 1e-3);
    al_ctx *c = al_ctx_new(1);
    al_tensor *tx = al_wrap(c, x, 3, (int[]){B, N, in});
    assert_null(al__mlp_gelu(c, tx, al_wrap(c, w1, 2, (int[]){in, hid}), NULL, al_wrap(c, w2, 2, (int[]){out, hid}), NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "mlp: weights"));
    al_ctx_clear_error(c);
    assert_null(al__mlp_gelu(c, tx, al_wrap(c, w1, 2, (int[]){hid, in}), al_wrap(c, b1, 1, (int[]){hid - 1}),
                             al_wrap(c, w2, 2, (int[]){out, hid}), NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "mlp: biases"));
    al_ctx_free(c);
    free(x); free(w1); free(b1); free(w2); free(b2);
}

/* The residual sums in the GEMM's epilogue (no tape): al__linear_add and al__mlp_gelu with res give al_add's
 * bits after the products, on 1 and 2 threads; with a tape they are those ops, and a residual of another
 * shape is an error. */
static void test_residual_epilogue_same_bits(void **st)
{
    (void)st;
    static const int shapes[][4] = {{1, 3, 5, 2}, {37, 20, 70, 9}, {600, 64, 256, 64}};
    const int t0 = al_threads();
    for (int th = 1; th <= 2; th++)
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            al_set_threads(th);
            const int rows = shapes[si][0], in = shapes[si][1], hid = shapes[si][2], out = shapes[si][3];
            float *x = tu_alloc_rand((int64_t)rows * in, 71, -2, 2), *w1 = tu_alloc_rand((int64_t)hid * in, 72, -0.5f, 0.5f);
            float *b1 = tu_alloc_rand(hid, 73, -1, 1), *w2 = tu_alloc_rand((int64_t)out * hid, 74, -0.5f, 0.5f);
            float *b2 = tu_alloc_rand(out, 75, -1, 1), *r1 = tu_alloc_rand((int64_t)rows * hid, 76, -3, 3);
            float *r2 = tu_alloc_rand((int64_t)rows * out, 77, -3, 3);
            al_ctx *c = al_ctx_new(1);
            c->grad_enabled = 0;
            al_tensor *tx = al_wrap(c, x, 2, (int[]){rows, in}), *tw1 = al_wrap(c, w1, 2, (int[]){hid, in});
            al_tensor *tb1 = al_wrap(c, b1, 1, (int[]){hid}), *tw2 = al_wrap(c, w2, 2, (int[]){out, hid});
            al_tensor *tb2 = al_wrap(c, b2, 1, (int[]){out});
            al_tensor *tr1 = al_wrap(c, r1, 2, (int[]){rows, hid}), *tr2 = al_wrap(c, r2, 2, (int[]){rows, out});
            al_tensor *f1 = al__linear_add(c, tr1, tx, tw1, tb1), *u1 = al_add(c, tr1, al_linear(c, tx, tw1, tb1));
            al_tensor *f2 = al__mlp_gelu(c, tx, tw1, tb1, tw2, tb2, tr2), *u2 = al_add(c, tr2, al__mlp_gelu(c, tx, tw1, tb1, tw2, tb2, NULL));
            assert_non_null(f1); assert_non_null(u1); assert_non_null(f2); assert_non_null(u2);
            if (memcmp(f1->data, u1->data, (size_t)rows * hid * sizeof(float)))
                fail_msg("linear_add %dx%d->%d, %d threads: bits differ from al_add(al_linear)", rows, in, hid, th);
            if (memcmp(f2->data, u2->data, (size_t)rows * out * sizeof(float)))
                fail_msg("mlp + residual %dx%d->%d->%d, %d threads: bits differ from al_add(mlp)", rows, in, hid, out, th);
            assert_null(al__linear_add(c, tr2, tx, tw1, tb1));
            assert_non_null(strstr(al_ctx_error(c), "residual's shape"));
            al_ctx_free(c);
            free(x); free(w1); free(b1); free(w2); free(b2); free(r1); free(r2);
        }
    al_set_threads(t0);
    /* with a tape: the unfused ops, gradients reaching the residual */
    al_ctx *c = al_ctx_new(1);
    float xd[6] = {1, 2, 3, 4, 5, 6}, wd[6] = {1, 0, -1, 2, 1, 0}, rd[4] = {0.5f, -0.5f, 1, 2};
    al_tensor *r = al_wrap(c, rd, 2, (int[]){2, 2});
    r->requires_grad = 1;
    al_tensor *y = al__linear_add(c, r, al_wrap(c, xd, 2, (int[]){2, 3}), al_wrap(c, wd, 2, (int[]){2, 3}), NULL);
    assert_non_null(y);
    assert_true(y->data[0] == 0.5f + (1 - 3) && y->data[3] == 2 + (8 + 5));
    for (int i = 0; i < 4; i++) al_grad(c, y)[i] = (float)(i + 1);
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < 4; i++) assert_true(r->grad[i] == (float)(i + 1));
    al_ctx_free(c);
}

/* ---------------- spmm ---------------- */
static al_tensor *f_spmm(al_ctx *c, al_tensor **t, void *ud) { return al_spmm(c, (const al_csr *)ud, t[0]); }

/* A random sparse (rows, cols) matrix with an empty row, duplicate-free columns, optional values. */
static void make_csr(al_csr *s, float *dense, int rows, int cols, int with_val, uint64_t seed)
{
    al_rng r; al_rng_seed(&r, seed, 5);
    s->rows = rows; s->cols = cols;
    s->rowptr = calloc((size_t)rows + 1, sizeof(int64_t));
    s->col = malloc((size_t)rows * cols * sizeof(int));
    s->val = with_val ? malloc((size_t)rows * cols * sizeof(float)) : NULL;
    memset(dense, 0, (size_t)rows * cols * sizeof(float));
    int64_t k = 0;
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < cols; j++)
            if (i != 1 && al_rng_uniform(&r) < 0.3f) {   /* row 1 stays empty */
                float v = with_val ? 2.f * al_rng_uniform(&r) - 1.f : 1.f;
                s->col[k] = j;
                if (with_val) s->val[k] = v;
                dense[(int64_t)i * cols + j] = v;
                k++;
            }
        s->rowptr[i + 1] = k;
    }
    s->nnz = k;
}

static void test_spmm_matches_dense(void **st)
{
    (void)st;
    const int rows = 9, cols = 11, F = 5;
    for (int wv = 0; wv < 2; wv++) {
        al_csr s; float dense[9 * 11];
        make_csr(&s, dense, rows, cols, wv, 40 + wv);
        float *x = tu_alloc_rand(cols * F, 7, -1, 1);
        al_ctx *c = al_ctx_new(1);
        al_tensor *y = al_spmm(c, &s, al_wrap(c, x, 2, (int[]){cols, F}));
        assert_non_null(y);
        assert_int_equal(y->shape[0], rows); assert_int_equal(y->shape[1], F);
        float ref[9 * 5];
        naive_mm(dense, x, ref, 1, rows, F, cols, 0, 0, 0, 0);
        assert_true(tu_max_rel_err(y->data, ref, rows * F) < FTOL);
        for (int f = 0; f < F; f++) assert_true(y->data[1 * F + f] == 0.f);   /* the empty row */
        al_ctx_free(c);
        tu_input in[1] = {tu_in(x, 1, 2, cols, F, 0, 0)};
        TU_GRADCHECK(wv ? "spmm (values)" : "spmm (pattern)", f_spmm, &s, in, 1, GEPS, GTOL);
        free(x);
        al_csr_free(&s);
    }
}

/* A larger graph: the backward (a scatter, each thread owning a range of dX rows) equals Sᵀ·dY
 * from a dense reference, and is bitwise the same with 1 and 2 threads. */
static void test_spmm_backward_large(void **st)
{
    (void)st;
    const int rows = 300, cols = 250, F = 16;
    al_csr s; float *dense = malloc((size_t)rows * cols * sizeof(float));
    make_csr(&s, dense, rows, cols, 1, 77);
    float *x = tu_alloc_rand((int64_t)cols * F, 8, -1, 1), *dy = tu_alloc_rand((int64_t)rows * F, 9, -1, 1);
    float *ref = malloc((size_t)cols * F * sizeof(float)), *g1 = malloc((size_t)cols * F * sizeof(float));
    naive_mm(dense, dy, ref, 1, cols, F, rows, 1, 0, 0, 0);   /* Sᵀ (cols, rows) · dY (rows, F) */
    int t0 = al_threads();
    for (int th = 1; th <= 2; th++) {
        al_set_threads(th);
        al_ctx *c = al_ctx_new(1);
        al_tensor *tx = al_wrap(c, x, 2, (int[]){cols, F});
        tx->requires_grad = 1;
        al_tensor *y = al_spmm(c, &s, tx);
        memcpy(al_grad(c, y), dy, (size_t)rows * F * sizeof(float));
        assert_int_equal(al_backward_run(c), AL_OK);
        assert_true(tu_max_rel_err(tx->grad, ref, (int64_t)cols * F) < FTOL);
        if (th == 1) memcpy(g1, tx->grad, (size_t)cols * F * sizeof(float));
        else assert_memory_equal(g1, tx->grad, (size_t)cols * F * sizeof(float));
        al_ctx_free(c);
    }
    al_set_threads(t0);
    free(dense); free(x); free(dy); free(ref); free(g1);
    al_csr_free(&s);
}

static void test_spmm_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    int64_t rp[3] = {0, 1, 2};
    int col[2] = {0, 3};
    al_csr s = {2, 3, 2, rp, col, NULL};
    al_tensor *x = al_zeros(c, 2, (int[]){3, 4});
    assert_null(al_spmm(c, &s, x));   /* column 3 of a 3-column matrix */
    assert_non_null(strstr(al_ctx_error(c), "column index 3"));
    al_ctx_clear_error(c);
    col[1] = 2;
    al_tensor *x2 = al_zeros(c, 2, (int[]){4, 4});
    assert_null(al_spmm(c, &s, x2));
    assert_non_null(strstr(al_ctx_error(c), "spmm: X (4, 4) must be (3, F)"));
    al_ctx_clear_error(c);
    rp[2] = 5;
    assert_null(al_spmm(c, &s, x));
    al_ctx_clear_error(c);
    rp[2] = 2;
    assert_non_null(al_spmm(c, &s, x));
    al_ctx_free(c);
}

/* The FLOP counter: linear 2·rows·in·out forward and once more per gradient it computes; conv2d
 * 2·B·Ho·Wo·|w|; attention 2·pairs·(D + Dv) forward over the pattern's in-grid pairs (a 3x3 window on a
 * 3x3 grid: 7·7 = 49 pairs, not 81 slots). Nothing is counted while the counter is off. */
static double flops_of(const char *op, int phase)
{
    for (int i = 0; i < al_flops_count(); i++) {
        const char *o; double f, b;
        al_flops_get(i, &o, &f, &b);
        if (!strcmp(o, op)) return phase ? b : f;
    }
    return 0;
}
static void test_flop_counter(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_params P; al_params_init(&P);
    al_tensor *w = al_params_add(&P, "w", 2, (int[]){3, 7}, (al_init){AL_INIT_NORMAL, 0.1f});
    al_tensor *cw = al_params_add(&P, "cw", 4, (int[]){4, 2, 3, 3}, (al_init){AL_INIT_NORMAL, 0.1f});
    assert_non_null(w); assert_non_null(cw);
    al_rng r; al_rng_seed(&r, 1, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(&P, &r, &e), AL_OK);
    al_flops_reset();
    al_tensor *x = al_zeros(c, 2, (int[]){5, 7});
    al_linear(c, x, w, NULL);
    assert_int_equal(al_flops_count(), 0);                 /* off */
    al_flops_enable(1);
    x->requires_grad = 1;
    al_tensor *y = al_linear(c, x, w, NULL);
    al_tensor *img = al_zeros(c, 4, (int[]){2, 2, 6, 6});
    al_tensor *z = al_conv2d(c, img, cw, NULL, 1, 1);     /* (2, 4, 6, 6) */
    al_tensor *q = al_zeros(c, 4, (int[]){2, 1, 9, 4});
    q->requires_grad = 1;
    al_attn_desc d; memset(&d, 0, sizeof d);
    d.pattern = al_pattern_window2d(3, 3, 3, 3);
    al_tensor *o = al_attention(c, &d, q, q, q, NULL, NULL, NULL, NULL);
    assert_non_null(y); assert_non_null(z); assert_non_null(o);
    assert_true(flops_of("linear", 0) == 2.0 * 5 * 7 * 3);
    assert_true(flops_of("conv2d", 0) == 2.0 * 2 * 36 * 4 * 2 * 9);
    assert_true(flops_of("attention", 0) == 2 * 49 * 2.0 * (4 + 4));
    al_tensor *outs[3] = {y, z, o};
    for (int i = 0; i < 3; i++) { float *g = al_grad(c, outs[i]); for (int64_t j = 0; j < outs[i]->numel; j++) g[j] = 1.0f; }
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_true(flops_of("linear", 1) == 2 * 2.0 * 5 * 7 * 3);    /* dx and dW */
    assert_true(flops_of("conv2d", 1) == 2.0 * 2 * 36 * 4 * 2 * 9); /* dW only: the image needs none */
    assert_true(flops_of("attention", 1) == 2 * 49 * 4 * 2.0 * 4);  /* dP, dV, dQ, dK; the weights were kept */
    al_flops_enable(0);
    al_flops_reset();
    al_ctx_free(c); al_params_free(&P);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matmul_2d_transposes),
        cmocka_unit_test(test_matmul_batched),
        cmocka_unit_test(test_matmul_broadcast),
        cmocka_unit_test(test_matmul_many_batches_deterministic),
        cmocka_unit_test(test_matmul_errors),
        cmocka_unit_test(test_linear_forward),
        cmocka_unit_test(test_linear_grad),
        cmocka_unit_test(test_linear_grad_accumulates),
        cmocka_unit_test(test_linear_errors),
        cmocka_unit_test(test_mlp_gelu_same_bits),
        cmocka_unit_test(test_mlp_gelu_grad),
        cmocka_unit_test(test_residual_epilogue_same_bits),
        cmocka_unit_test(test_spmm_matches_dense),
        cmocka_unit_test(test_spmm_backward_large),
        cmocka_unit_test(test_spmm_errors),
        cmocka_unit_test(test_flop_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
