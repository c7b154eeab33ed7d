/* test_kernels_norm.c — row softmax, log-softmax and layernorm kernels against their
 * double-precision references on odd shapes, edge values and thread counts. */
#include "testutil.h"
#include "attnlab/kernels.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const int SHAPES[][2] = {{1, 1}, {7, 63}, {65, 129}, {3, 1000}, {2, 16}, {5, 17}};
#define NSHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

/* Tolerance 2e-6 (scale-aware, see tu_max_rel_err): the fast kernels are float with a ~1-ulp
 * polynomial exp and 16-lane sums; the refs are double. Row sums of up to 1000 terms lose a
 * few ulps (1 ulp = 6e-8), so 2e-6 leaves ~30x margin yet catches any real formula error. */
#define KTOL 2e-6

static void test_softmax_rows_matches_ref(void **st)
{
    (void)st;
    for (int s = 0; s < NSHAPES; s++) {
        int rows = SHAPES[s][0], n = SHAPES[s][1];
        int64_t m = (int64_t)rows * n;
        for (int scale = 0; scale < 2; scale++) {
            float lim = scale ? 40.f : 3.f;          /* large logits exercise the max shift */
            float *x = tu_alloc_rand(m, 11 + s, -lim, lim);
            float *y = malloc(m * sizeof(float)), *r = malloc(m * sizeof(float));
            al_softmax_rows(x, y, rows, n);
            al_softmax_rows_ref(x, r, rows, n);
            for (int i = 0; i < rows; i++) {
                double e = tu_max_rel_err(y + (int64_t)i * n, r + (int64_t)i * n, n);
                if (e > KTOL) fail_msg("softmax %dx%d lim %g row %d: rel err %g", rows, n, lim, i, e);
                double sum = 0;
                for (int j = 0; j < n; j++) sum += y[(int64_t)i * n + j];
                assert_true(fabs(sum - 1.0) < 1e-5);
            }
            free(x); free(y); free(r);
        }
    }
}

static void test_log_softmax_rows_matches_ref(void **st)
{
    (void)st;
    for (int s = 0; s < NSHAPES; s++) {
        int rows = SHAPES[s][0], n = SHAPES[s][1];
        int64_t m = (int64_t)rows * n;
        float *x = tu_alloc_rand(m, 21 + s, -20.f, 20.f);
        float *y = malloc(m * sizeof(float)), *r = malloc(m * sizeof(float));
        al_log_softmax_rows(x, y, rows, n);
        al_log_softmax_rows_ref(x, r, rows, n);
        /* absolute: log-probs range over ~[-50, 0]; float x − lse rounds at ~4e-6 there */
        double e = tu_max_abs_err(y, r, m);
        if (e > 2e-5) fail_msg("log_softmax %dx%d: abs err %g", rows, n, e);
        free(x); free(y); free(r);
    }
}

static void test_softmax_extremes(void **st)
{
    (void)st;
    float x[6] = {0.f, -100.f, 100.f, 1e4f, -1e4f, 1e4f}, y[6];
    al_softmax_rows(x, y, 2, 3);
    /* row 0: e^-100 relative to e^100 underflows to 0; no NaN, sums to 1 */
    assert_true(y[0] >= 0.f && y[0] < 1e-30f);
    assert_true(y[1] == 0.f);
    assert_true(fabsf(y[2] - 1.f) < 1e-6f);
    /* row 1: two equal maxima share the mass */
    assert_true(fabsf(y[3] - 0.5f) < 1e-6f && y[4] == 0.f && fabsf(y[5] - 0.5f) < 1e-6f);
    float one = 7.f, o;
    al_softmax_rows(&one, &o, 1, 1);
    assert_true(o == 1.0f);
    float lp[3];
    al_log_softmax_rows(x, lp, 1, 3);
    assert_true(isfinite(lp[1]) && fabsf(lp[1] + 200.f) < 1e-3f);   /* log-softmax stays finite */
}

static void test_layernorm_rows_matches_ref(void **st)
{
    (void)st;
    for (int s = 0; s < NSHAPES; s++) {
        int rows = SHAPES[s][0], n = SHAPES[s][1];
        int64_t m = (int64_t)rows * n;
        float *x = tu_alloc_rand(m, 31 + s, -2.f, 5.f);   /* non-zero mean */
        float *g = tu_alloc_rand(n, 41 + s, 0.5f, 1.5f), *b = tu_alloc_rand(n, 51 + s, -1.f, 1.f);
        float *y = malloc(m * sizeof(float)), *r = malloc(m * sizeof(float));
        float mean[65], rstd[65], rmean[65], rrstd[65];
        for (int aff = 0; aff < 2; aff++) {
            al_layernorm_rows(x, aff ? g : NULL, aff ? b : NULL, y, mean, rstd, rows, n, 1e-5f);
            al_layernorm_rows_ref(x, aff ? g : NULL, aff ? b : NULL, r, rmean, rrstd, rows, n, 1e-5f);
            /* outputs are O(1); float two-pass mean/variance agrees with double to ~1e-6 */
            double e = tu_max_abs_err(y, r, m);
            if (e > 1e-5) fail_msg("layernorm %dx%d affine %d: abs err %g", rows, n, aff, e);
            assert_true(tu_max_rel_err(mean, rmean, rows) < 1e-6);
            assert_true(tu_max_rel_err(rstd, rrstd, rows) < 1e-5);
        }
        free(x); free(g); free(b); free(y); free(r);
    }
    /* a constant row: variance 0 → y = beta, rstd = 1/sqrt(eps), no NaN */
    float c4[4] = {3, 3, 3, 3}, y4[4], be[4] = {1, 2, 3, 4}, mu, rs;
    al_layernorm_rows(c4, NULL, be, y4, &mu, &rs, 1, 4, 1e-5f);
    assert_true(mu == 3.f && fabsf(rs - 1.f / sqrtf(1e-5f)) < 1e-2f);
    for (int i = 0; i < 4; i++) assert_true(y4[i] == be[i]);
}

/* norm.c's ln_row in plain scalar C: 16 lane sums, the halving tree, two-pass variance, then
 * ((x − m)·rstd)·γ + β. The kernel (sixteen rows at a time on AVX-512) must give these bits. */
static float lanes_tree(const float *x, float m, int sq, int n)
{
    float acc[16] = {0};
    int i = 0;
    for (; i + 16 <= n; i += 16)
        for (int j = 0; j < 16; j++) { float d = x[i + j] - m; acc[j] += sq ? d * d : x[i + j]; }
    for (int j = 0; i < n; i++, j++) { float d = x[i] - m; acc[j] += sq ? d * d : x[i]; }
    for (int w = 8; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}
static void ln_rows_scalar(const float *x, const float *g, const float *b, float *y, float *mean, float *rstd, int rows, int n)
{
    const float inv_n = 1.0f / (float)n;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * n;
        float m = lanes_tree(xr, 0.f, 0, n) * inv_n;
        float rs = 1.0f / sqrtf(lanes_tree(xr, m, 1, n) * inv_n + 1e-5f);
        mean[r] = m; rstd[r] = rs;
        for (int i = 0; i < n; i++) y[(size_t)r * n + i] = (xr[i] - m) * rs * g[i] + b[i];
    }
}

/* The same bits as the scalar row maths for every row count around the groups of 16 and row
 * lengths that are and are not multiples of 16, alone and after the residual add. */
static void test_layernorm_rows_bits(void **st)
{
    (void)st;
    const int R[] = {1, 15, 16, 17, 40, 100}, Ns[] = {16, 64, 80, 50};
    for (int ri = 0; ri < 6; ri++)
        for (int ni = 0; ni < 4; ni++) {
            const int rows = R[ri], n = Ns[ni];
            const int64_t m = (int64_t)rows * n;
            float *x = tu_alloc_rand(m, 300 + ri * 4 + ni, -3.f, 7.f), *x2 = tu_alloc_rand(m, 400 + ri * 4 + ni, -1.f, 1.f);
            float *g = tu_alloc_rand(n, 500 + ni, 0.5f, 1.5f), *b = tu_alloc_rand(n, 600 + ni, -1.f, 1.f);
            float *y = malloc(m * sizeof(float)), *yr = malloc(m * sizeof(float)), *sum = malloc(m * sizeof(float)), *sr = malloc(m * sizeof(float));
            float *mu = malloc(rows * sizeof(float)), *rs = malloc(rows * sizeof(float));
            float *mur = malloc(rows * sizeof(float)), *rsr = malloc(rows * sizeof(float));
            assert_non_null(y); assert_non_null(yr); assert_non_null(sum); assert_non_null(sr);
            assert_non_null(mu); assert_non_null(rs); assert_non_null(mur); assert_non_null(rsr);
            x[0] = -0.f;   /* a negative zero in the first lane sum */
            al_layernorm_rows(x, g, b, y, mu, rs, rows, n, 1e-5f);
            ln_rows_scalar(x, g, b, yr, mur, rsr, rows, n);
            if (memcmp(y, yr, m * sizeof(float)) || memcmp(mu, mur, rows * sizeof(float)) || memcmp(rs, rsr, rows * sizeof(float)))
                fail_msg("layernorm %dx%d: bits differ from the scalar row maths", rows, n);
            al_add_layernorm_rows(x, x2, sum, g, b, y, mu, rs, rows, n, 1e-5f);
            for (int64_t i = 0; i < m; i++) sr[i] = x[i] + x2[i];
            ln_rows_scalar(sr, g, b, yr, mur, rsr, rows, n);
            if (memcmp(sum, sr, m * sizeof(float)) || memcmp(y, yr, m * sizeof(float)) || memcmp(mu, mur, rows * sizeof(float)) ||
                memcmp(rs, rsr, rows * sizeof(float)))
                fail_msg("add + layernorm %dx%d: bits differ from the scalar row maths", rows, n);
            free(x); free(x2); free(g); free(b); free(y); free(yr); free(sum); free(sr); free(mu); free(rs); free(mur); free(rsr);
        }
}

/* Bitwise identical for 1 and 2 threads: rows are independent and the lane order is fixed. */
static void test_kernels_thread_invariant(void **st)
{
    (void)st;
    const int rows = 257, n = 129;
    const int64_t m = (int64_t)rows * n;
    float *x = tu_alloc_rand(m, 77, -5.f, 5.f);
    float *y1 = malloc(m * sizeof(float)), *y2 = malloc(m * sizeof(float));
    float *mu1 = malloc(rows * sizeof(float)), *mu2 = malloc(rows * sizeof(float));
    int t0 = al_threads();
    al_set_threads(1);
    al_softmax_rows(x, y1, rows, n);
    al_set_threads(2);
    al_softmax_rows(x, y2, rows, n);
    assert_memory_equal(y1, y2, m * sizeof(float));
    al_set_threads(1);
    al_layernorm_rows(x, NULL, NULL, y1, mu1, NULL, rows, n, 1e-5f);
    al_set_threads(2);
    al_layernorm_rows(x, NULL, NULL, y2, mu2, NULL, rows, n, 1e-5f);
    assert_memory_equal(y1, y2, m * sizeof(float));
    assert_memory_equal(mu1, mu2, rows * sizeof(float));
    al_set_threads(t0);
    free(x); free(y1); free(y2); free(mu1); free(mu2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_rows_matches_ref),
        cmocka_unit_test(test_log_softmax_rows_matches_ref),
        cmocka_unit_test(test_softmax_extremes),
        cmocka_unit_test(test_layernorm_rows_matches_ref),
        cmocka_unit_test(test_layernorm_rows_bits),
        cmocka_unit_test(test_kernels_thread_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
