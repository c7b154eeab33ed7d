/* test_ops_elementwise.c — add, mul, scale, broadcast add, mass normalisation, activations and dropout:
 * forward against hand values or naive loops, finite-difference gradient checks, errors. */
#include "testutil.h"
#include "attnlab/ops.h"
#include "core/exp_impl.h"
#include "ops/ops_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Gradient checks: float32 forward, double loss. For the linear ops (add, mul, scale,
 * add_bcast, dropout, relu/leaky away from 0) central differences are exact up to rounding
 * (≈1e-7·|L|/eps ≈ 1e-5 with eps = 1e-2), so GTOL = 1e-3 is generous but still catches any
 * wrong factor. ELU and GELU are smooth; with eps = 1e-2 the truncation error is ~eps²/6·f'''
 * ≈ 2e-5, again well inside 1e-3. */
#define GEPS 1e-2
#define GTOL 1e-3

/* Inputs with |x| ≥ 0.1 > GEPS, random sign: finite differences never straddle a kink at 0. */
static float *away_from_zero(int64_t n, uint64_t seed)
{
    float *x = tu_alloc_rand(n, seed, 0.1f, 2.f);
    float *s = tu_alloc_rand(n, seed + 1000, 0.f, 1.f);
    for (int64_t i = 0; i < n; i++) if (s[i] < 0.5f) x[i] = -x[i];
    free(s);
    return x;
}

/* ---------------- add / mul / scale ---------------- */
static al_tensor *f_add(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_add(c, t[0], t[1]); }
/* add's backward hands dy's buffer to its first input: x + x, and (x + y) + x where x already has one */
static al_tensor *f_add_twice(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_add(c, t[0], t[0]); }
static al_tensor *f_add_chain(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_mul(c, al_add(c, al_add(c, t[0], t[1]), t[0]), t[1]);
}
static al_tensor *f_mul(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_mul(c, t[0], t[1]); }
static al_tensor *f_square(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_mul(c, t[0], t[0]); }
static al_tensor *f_scale(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_scale(c, t[0], -2.5f); }

static void test_add_mul_scale_forward(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {-1, 0.5f, 2, 0, -3, 1};
    al_tensor *ta = al_wrap(c, a, 2, (int[]){2, 3}), *tb = al_wrap(c, b, 2, (int[]){2, 3});
    al_tensor *s = al_add(c, ta, tb), *p = al_mul(c, ta, tb), *k = al_scale(c, ta, 0.5f);
    assert_non_null(s); assert_non_null(p); assert_non_null(k);
    float ws[6] = {0, 2.5f, 5, 4, 2, 7}, wp[6] = {-1, 1, 6, 0, -15, 6}, wk[6] = {0.5f, 1, 1.5f, 2, 2.5f, 3};
    assert_memory_equal(s->data, ws, sizeof ws);
    assert_memory_equal(p->data, wp, sizeof wp);
    assert_memory_equal(k->data, wk, sizeof wk);
    assert_int_equal(s->ndim, 2); assert_int_equal(s->shape[1], 3);
    /* nothing requires a gradient: nothing on the tape */
    assert_int_equal(c->ntape, 0);
    al_ctx_free(c);
}

static void test_add_mul_scale_grad(void **st)
{
    (void)st;
    float *a = tu_alloc_rand(3 * 5 * 7, 1, -2.f, 2.f), *b = tu_alloc_rand(3 * 5 * 7, 2, -2.f, 2.f);
    tu_input in[2] = {tu_in(a, 1, 3, 3, 5, 7, 0), tu_in(b, 1, 3, 3, 5, 7, 0)};
    TU_GRADCHECK("add", f_add, NULL, in, 2, GEPS, GTOL);
    TU_GRADCHECK("add x + x", f_add_twice, NULL, in, 1, GEPS, GTOL);
    TU_GRADCHECK("add ((a + b) + a) * b", f_add_chain, NULL, in, 2, GEPS, GTOL);
    TU_GRADCHECK("mul", f_mul, NULL, in, 2, GEPS, GTOL);
    TU_GRADCHECK("mul a*a (same tensor twice)", f_square, NULL, in, 1, GEPS, GTOL);
    TU_GRADCHECK("scale", f_scale, NULL, in, 1, GEPS, GTOL);
    in[0].check = 0;   /* only b requires a gradient */
    TU_GRADCHECK("mul (b only)", f_mul, NULL, in, 2, GEPS, GTOL);
    free(a); free(b);
}

static void test_shape_mismatch_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *a = al_zeros(c, 2, (int[]){2, 3}), *b = al_zeros(c, 2, (int[]){3, 2});
    assert_null(al_add(c, a, b));
    assert_non_null(strstr(al_ctx_error(c), "add: shapes differ: (2, 3) vs (3, 2)"));
    al_ctx_clear_error(c);
    assert_null(al_mul(c, a, b));
    assert_non_null(strstr(al_ctx_error(c), "mul"));
    al_ctx_clear_error(c);
    al_tensor *y = al_zeros(c, 1, (int[]){2});
    assert_null(al_add_bcast(c, a, y));   /* (2) is not the trailing dims of (2, 3) */
    assert_non_null(strstr(al_ctx_error(c), "add_bcast"));
    al_ctx_clear_error(c);
    assert_null(al_add_bcast(c, y, a));   /* more dims than x */
    al_ctx_clear_error(c);
    /* NULL inputs propagate as NULL without setting an error */
    assert_null(al_relu(c, NULL)); assert_null(al_add(c, a, NULL)); assert_null(al_dropout(c, NULL, 0.5f));
    assert_true(al_ok(c));
    al_ctx_free(c);
}

/* ---------------- broadcast add ---------------- */
static al_tensor *f_bcast(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_add_bcast(c, t[0], t[1]); }

static void check_bcast(int xnd, const int *xs, int ynd)
{
    int64_t nx = al_shape_numel(xnd, xs);
    const int *ys = xs + (xnd - ynd);
    int64_t ny = al_shape_numel(ynd, ys);
    float *x = tu_alloc_rand(nx, 3, -1.f, 1.f), *y = tu_alloc_rand(ny, 4, -1.f, 1.f);
    al_ctx *c = al_ctx_new(1);
    al_tensor *tx = al_wrap(c, x, xnd, xs), *ty = al_wrap(c, y, ynd, ys);
    al_tensor *o = al_add_bcast(c, tx, ty);
    assert_non_null(o);
    for (int64_t i = 0; i < nx; i++) assert_true(o->data[i] == x[i] + y[i % ny]);
    al_ctx_free(c);
    tu_input in[2] = {{xnd, {0}, x, 1}, {ynd, {0}, y, 1}};
    memcpy(in[0].shape, xs, (size_t)xnd * sizeof(int));
    memcpy(in[1].shape, ys, (size_t)ynd * sizeof(int));
    TU_GRADCHECK("add_bcast", f_bcast, NULL, in, 2, GEPS, GTOL);
    free(x); free(y);
}

static void test_add_bcast(void **st)
{
    (void)st;
    check_bcast(2, (int[]){5, 7}, 1);          /* bias over rows */
    check_bcast(3, (int[]){3, 4, 5}, 2);       /* positional embedding (N, C) over a batch */
    check_bcast(4, (int[]){2, 3, 4, 5}, 1);
    check_bcast(4, (int[]){2, 3, 4, 5}, 3);
    check_bcast(2, (int[]){3, 4}, 2);          /* same shape: R = 1 */
    check_bcast(2, (int[]){4, 300}, 1);        /* T > one 256-column block of the reduction */
}

/* A big broadcast reduction (many rows, parallel over column blocks) is deterministic. */
/* The bias-gradient reduction: each column sums its rows in row order, so it equals the serial float
 * sum bit for bit whatever the threads and the column blocks (600 columns: 256-wide blocks; 64: two
 * blocks of 32 on 2 threads, one on 1), and its double-precision value within rounding. */
static void test_add_bcast_reduction_matches_naive(void **st)
{
    (void)st;
    const int R = 4096, Ts[2] = {600, 64};
    const int t0 = al_threads();
    for (int ti = 0; ti < 2; ti++) {
        const int T = Ts[ti];
        float *x = tu_alloc_rand((int64_t)R * T, 5, -1.f, 1.f), *y = tu_alloc_rand(T, 6, -1.f, 1.f);
        float *dy = tu_alloc_rand((int64_t)R * T, 7, -1.f, 1.f);
        for (int th = 1; th <= 2; th++) {
            al_set_threads(th);
            al_ctx *c = al_ctx_new(1);
            al_tensor *tx = al_wrap(c, x, 2, (int[]){R, T}), *ty = al_wrap(c, y, 1, (int[]){T});
            ty->requires_grad = 1;
            al_tensor *o = al_add_bcast(c, tx, ty);
            memcpy(al_grad(c, o), dy, (size_t)R * T * sizeof(float));
            assert_int_equal(al_backward_run(c), AL_OK);
            for (int j = 0; j < T; j++) {
                double s = 0;
                float sf = 0.f;
                for (int r = 0; r < R; r++) { s += dy[(int64_t)r * T + j]; sf += dy[(int64_t)r * T + j]; }
                assert_true(fabs(ty->grad[j] - s) < 1e-3);   /* float sum of 4096 terms in [-1, 1] */
                assert_true(ty->grad[j] == sf);
            }
            al_ctx_free(c);
        }
        free(x); free(y); free(dy);
    }
    al_set_threads(t0);
}

/* ---------------- activations ---------------- */
static al_tensor *f_relu(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_relu(c, t[0]); }
static al_tensor *f_leaky(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_leaky_relu(c, t[0], 0.2f); }
static al_tensor *f_elu(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_elu(c, t[0], 1.3f); }
static al_tensor *f_gelu(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_gelu(c, t[0]); }

static void test_activations_forward(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xv[5] = {-2, -0.5f, 0, 1, 3};
    al_tensor *x = al_wrap(c, xv, 1, (int[]){5});
    /* ELU near 0 keeps relative precision (no eˣ − 1 cancellation); deep tail saturates at −α */
    float ev[6] = {-1e-6f, -3e-3f, -0.0099f, -0.0101f, -20.f, -100.f};
    al_tensor *e6 = al_elu(c, al_wrap(c, ev, 1, (int[]){6}), 1.5f);
    for (int i = 0; i < 6; i++) {
        double want = 1.5 * expm1((double)ev[i]);
        if (fabs(e6->data[i] - want) > 2e-6 * fabs(want) + 1e-7)
            fail_msg("elu(%g) = %.9g, want %.9g", (double)ev[i], (double)e6->data[i], want);
    }
    al_tensor *r = al_relu(c, x), *l = al_leaky_relu(c, x, 0.1f), *e = al_elu(c, x, 1.0f), *g = al_gelu(c, x);
    float wr[5] = {0, 0, 0, 1, 3}, wl[5] = {-0.2f, -0.05f, 0, 1, 3};
    for (int i = 0; i < 5; i++) {
        assert_true(r->data[i] == wr[i]);
        assert_true(fabsf(l->data[i] - wl[i]) < 1e-7f);
        double we = xv[i] > 0 ? xv[i] : expm1(xv[i]);
        assert_true(fabs(e->data[i] - we) < 1e-6);
    }
    /* exact GELU x·Φ(x) (torch.nn.GELU() default), not the tanh approximation */
    double wg[5] = {-0.04550026389635842, -0.15426876936299344, 0, 0.8413447460685429, 2.99595030590511};
    for (int i = 0; i < 5; i++) assert_true(fabs(g->data[i] - wg[i]) < 1e-6);
    al_ctx_free(c);
}

/* GELU over [-9, 9] against double erfc (1 + erf would cancel in the negative tail):
 * the vectorised Φ has relative error ~1e-7 and the exp ~1 ulp, so absolute error stays below
 * 1e-6 for |y| ≤ 9 (float ulp at 8 is 1e-6) and relative error below 2e-5 even where
 * y ≈ -1e-18 (x ≈ -9: rounding of z² in float moves exp(-z²) by ~z²·6e-8). The derivative
 * Φ(x) + xφ(x) is checked to 1e-6 absolute. Thresholds sit ~3x above the measured maxima. */
static void test_gelu_accuracy(void **st)
{
    (void)st;
    const int n = 20001;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_new(c, 1, (int[]){n});
    for (int i = 0; i < n; i++) x->data[i] = -9.f + 18.f * (float)i / (float)(n - 1);
    x->requires_grad = 1;
    al_tensor *y = al_gelu(c, x);
    float *g = al_grad(c, y);
    for (int i = 0; i < n; i++) g[i] = 1.f;
    assert_int_equal(al_backward_run(c), AL_OK);
    double worst_rel = 0, worst_abs = 0, worst_d = 0;
    for (int i = 0; i < n; i++) {
        double xi = x->data[i], cdf = 0.5 * erfc(-xi / sqrt(2.0));
        double ref = xi * cdf, dref = cdf + xi * exp(-0.5 * xi * xi) / sqrt(2 * M_PI);
        double e = fabs(y->data[i] - ref);
        if (e > worst_abs) worst_abs = e;
        if (ref != 0 && e / fabs(ref) > worst_rel) worst_rel = e / fabs(ref);
        if (fabs(x->grad[i] - dref) > worst_d) worst_d = fabs(x->grad[i] - dref);
    }
    if (worst_abs > 1e-6 || worst_rel > 2e-5 || worst_d > 1e-6)
        fail_msg("gelu: abs %g rel %g, derivative abs %g", worst_abs, worst_rel, worst_d);
    al_ctx_free(c);
}

/* The one-element GELU formula (Numerical Recipes' erfcc for Φ, the magic-number expf), written as
 * the op documents it: the op computes it stage by stage over blocks of elements and must give
 * exactly these bits, forward and backward, on every block length and tail. */
static float gelu_cdf_twin(float x)
{
    float z = fabsf(x) * 0.70710678118654752f;
    float t = 1.0f / (1.0f + 0.5f * z);
    float p = 0.17087277f;
    p = p * t - 0.82215223f; p = p * t + 1.48851587f; p = p * t - 1.13520398f;
    p = p * t + 0.27886807f; p = p * t - 0.18628806f; p = p * t + 0.09678418f;
    p = p * t + 0.37409196f; p = p * t + 1.00002368f; p = p * t - 1.26551223f;
    float half_erfc = 0.5f * t * al__expf(p - z * z);
    return x < 0.f ? half_erfc : 1.0f - half_erfc;
}

static void test_gelu_blocks_bitwise(void **st)
{
    (void)st;
    const int ns[] = {1, 7, 128, 129, 300, 70001};   /* 70001: several threads' blocks and a tail */
    for (int k = 0; k < 6; k++) {
        const int n = ns[k];
        al_ctx *c = al_ctx_new(0);
        al_tensor *x = al_new(c, 1, (int[]){n});
        al_rng r; al_rng_seed(&r, 77 + (uint64_t)k, 1);
        for (int i = 0; i < n; i++) x->data[i] = 24.f * (al_rng_uniform(&r) - 0.5f);
        if (n > 6) { x->data[0] = 0.f; x->data[1] = -0.f; x->data[2] = 1e-30f; x->data[3] = -95.f; x->data[4] = 95.f; }
        x->requires_grad = 1;
        al_tensor *y = al_gelu(c, x);
        float *g = al_grad(c, y);
        float *gy = malloc((size_t)n * sizeof(float));
        assert_non_null(gy);
        for (int i = 0; i < n; i++) g[i] = gy[i] = al_rng_uniform(&r) - 0.5f;
        assert_int_equal(al_backward_run(c), AL_OK);
        for (int i = 0; i < n; i++) {
            const float xi = x->data[i], phi = gelu_cdf_twin(xi);
            const float want = xi * phi;
            const float dwant = gy[i] * (phi + xi * (0.39894228040143268f * al__expf(-0.5f * xi * xi)));
            if (memcmp(&y->data[i], &want, sizeof want)) fail_msg("n %d, x[%d] = %g: gelu %a, the formula %a", n, i, xi, y->data[i], want);
            if (memcmp(&x->grad[i], &dwant, sizeof dwant)) fail_msg("n %d, x[%d] = %g: gelu' %a, the formula %a", n, i, xi, x->grad[i], dwant);
        }
        /* the segment forms the block's MLP runs in its GEMM epilogues (al__mlp_gelu): the GELU with its
         * derivative left in x's place, whose product with dy is act_backward's gradient, and the GELU written
         * over x (the evaluation path): the same output and gradient bits */
        {
            float *xs = malloc((size_t)n * sizeof(float)), *ys = malloc((size_t)n * sizeof(float));
            assert_non_null(xs); assert_non_null(ys);
            memcpy(xs, x->data, (size_t)n * sizeof(float));
            al__gelu_saved_seg(xs, ys, n);
            if (memcmp(ys, y->data, (size_t)n * sizeof(float))) fail_msg("n %d: saved-derivative gelu output bits differ", n);
            for (int i = 0; i < n; i++) {
                const float gi = gy[i] * xs[i];
                if (memcmp(&gi, &x->grad[i], sizeof gi)) fail_msg("n %d: dy * saved gelu' at %d differs from gelu's gradient", n, i);
            }
            memcpy(xs, x->data, (size_t)n * sizeof(float));
            al__gelu_seg(xs, xs, n);
            if (memcmp(xs, y->data, (size_t)n * sizeof(float))) fail_msg("n %d: in-place gelu bits differ", n);
            free(xs); free(ys);
        }
        free(gy);
        al_ctx_free(c);
    }
}

/* ---------------- mass normalisation ---------------- */
static al_tensor *f_mass(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_mass_normalize(c, t[0]); }

/* Rows (values, mass): divided by the mass above 1, copied at or below; the gradient with masses on both
 * sides of 1 (kept more than GEPS away from it); a last dimension of 1 is refused. */
static void test_mass_normalize(void **st)
{
    (void)st;
    enum { R = 3 * 7, D = 5 };
    float *x = tu_alloc_rand(R * (D + 1), 31, -2.f, 2.f);
    for (int r = 0; r < R; r++) x[r * (D + 1) + D] = r % 3 == 0 ? 0.4f + 0.02f * r : 1.2f + 0.3f * r;
    al_ctx *c = al_ctx_new(1);
    al_tensor *t = al_wrap(c, x, 3, (int[]){3, 7, D + 1});
    al_tensor *y = al_mass_normalize(c, t);
    assert_non_null(y);
    assert_int_equal(y->ndim, 3); assert_int_equal(y->shape[2], D); assert_int_equal(y->shape[1], 7);
    for (int r = 0; r < R; r++) {
        const float m = x[r * (D + 1) + D], s = m > 1 ? m : 1;
        for (int d = 0; d < D; d++) assert_true(fabsf(y->data[r * D + d] - x[r * (D + 1) + d] / s) <= 1e-6f * fabsf(x[r * (D + 1) + d]) + 1e-7f);
        if (m <= 1) assert_memory_equal(y->data + r * D, x + r * (D + 1), D * sizeof(float));   /* exactly */
    }
    assert_null(al_mass_normalize(c, al_new(c, 2, (int[]){4, 1})));
    assert_non_null(strstr(al_ctx_error(c), "last dimension"));
    al_ctx_free(c);
    tu_input in[1] = {tu_in(x, 1, 3, 3, 7, D + 1, 0)};
    TU_GRADCHECK("mass_normalize", f_mass, NULL, in, 1, GEPS, GTOL);
    free(x);
}

static void test_relu_leaky_grad(void **st)
{
    (void)st;
    float *x = away_from_zero(4 * 33, 10);
    tu_input in[1] = {tu_in(x, 1, 2, 4, 33, 0, 0)};
    TU_GRADCHECK("relu", f_relu, NULL, in, 1, GEPS, GTOL);
    TU_GRADCHECK("leaky_relu", f_leaky, NULL, in, 1, GEPS, GTOL);
    free(x);
}

static void test_elu_gelu_grad(void **st)
{
    (void)st;
    float *x = away_from_zero(3 * 41, 11);   /* ELU's second derivative jumps at 0 */
    tu_input in[1] = {tu_in(x, 1, 2, 3, 41, 0, 0)};
    TU_GRADCHECK("elu", f_elu, NULL, in, 1, GEPS, GTOL);
    float *g = tu_alloc_rand(3 * 41, 12, -4.f, 4.f);   /* GELU is smooth everywhere */
    in[0].data = g;
    TU_GRADCHECK("gelu", f_gelu, NULL, in, 1, GEPS, GTOL);
    free(x); free(g);
}

/* ---------------- dropout ---------------- */
static al_tensor *f_dropout(al_ctx *c, al_tensor **t, void *ud) { return al_dropout(c, t[0], *(float *)ud); }

static void test_dropout_rate_and_scale(void **st)
{
    (void)st;
    const int n = 200000;
    const float p = 0.3f;
    float *x = tu_alloc_rand(n, 13, 0.5f, 1.5f);
    al_ctx *c = al_ctx_new(5);
    al_tensor *tx = al_wrap(c, x, 2, (int[]){400, 500});
    al_tensor *y = al_dropout(c, tx, p);
    assert_non_null(y);
    int dropped = 0, dropped_odd = 0, both = 0;
    for (int i = 0; i < n; i++) {
        if (y->data[i] == 0.f) { dropped++; dropped_odd += i & 1; both += (i & 1) && y->data[i - 1] == 0.f; }
        else assert_true(fabsf(y->data[i] - x[i] / (1 - p)) <= 1e-6f * fabsf(y->data[i]));
    }
    /* Binomial(200000, 0.3): sd = sqrt(n p (1-p)) ≈ 205, so ±1500 is > 7 sd */
    assert_true(abs(dropped - (int)(p * n)) < 1500);
    /* the two halves of each 64-bit draw: odd indices alone have the rate (sd ≈ 145), and a
     * pair is dropped together at rate p² (independent halves; sd ≈ 136) */
    assert_true(abs(dropped_odd - (int)(p * n / 2)) < 1000);
    assert_true(abs(both - (int)(p * p * n / 2)) < 1000);
    /* same seed → same mask; the RNG advanced so the next call draws a different mask */
    al_ctx *c2 = al_ctx_new(5);
    al_tensor *y2 = al_dropout(c2, al_wrap(c2, x, 2, (int[]){400, 500}), p);
    assert_memory_equal(y->data, y2->data, (size_t)n * sizeof(float));
    al_tensor *y3 = al_dropout(c2, al_wrap(c2, x, 2, (int[]){400, 500}), p);
    assert_true(memcmp(y2->data, y3->data, (size_t)n * sizeof(float)) != 0);
    /* identity when not training or p == 0: the input itself, no tape entry */
    c->training = 0;
    assert_ptr_equal(al_dropout(c, tx, p), tx);
    c->training = 1;
    assert_ptr_equal(al_dropout(c, tx, 0.f), tx);
    /* p outside [0, 1) is an error */
    assert_null(al_dropout(c, tx, 1.0f));
    assert_non_null(strstr(al_ctx_error(c), "dropout"));
    al_ctx_free(c); al_ctx_free(c2);
    free(x);
}

static void test_dropout_grad(void **st)
{
    (void)st;
    float *x = tu_alloc_rand(6 * 19, 14, -2.f, 2.f);
    float p = 0.4f;
    tu_input in[1] = {tu_in(x, 1, 2, 6, 19, 0, 0)};
    TU_GRADCHECK("dropout", f_dropout, &p, in, 1, GEPS, GTOL);
    /* the backward uses the forward's mask: dx = keep·dy/(1-p) */
    al_ctx *c = al_ctx_new(3);
    al_tensor *t = al_wrap(c, x, 2, (int[]){6, 19});
    t->requires_grad = 1;
    al_tensor *y = al_dropout(c, t, p);
    float *g = al_grad(c, y);
    for (int i = 0; i < 6 * 19; i++) g[i] = 1.f;
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < 6 * 19; i++)
        assert_true(t->grad[i] == (y->data[i] != 0.f ? 1.f / (1.f - p) : 0.f));
    al_ctx_free(c);
    free(x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_mul_scale_forward),
        cmocka_unit_test(test_add_mul_scale_grad),
        cmocka_unit_test(test_shape_mismatch_errors),
        cmocka_unit_test(test_add_bcast),
        cmocka_unit_test(test_add_bcast_reduction_matches_naive),
        cmocka_unit_test(test_activations_forward),
        cmocka_unit_test(test_gelu_accuracy),
        cmocka_unit_test(test_gelu_blocks_bitwise),
        cmocka_unit_test(test_relu_leaky_grad),
        cmocka_unit_test(test_elu_gelu_grad),
        cmocka_unit_test(test_dropout_rate_and_scale),
        cmocka_unit_test(test_dropout_grad),
        cmocka_unit_test(test_mass_normalize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
