/* test_ops_conv.c — the conv2d and maxpool2d ops: hand values, gradient checks, shape errors. */
#include "testutil.h"
#include "attnlab/ops.h"
#include "attnlab/kernels.h"
#include "kernels/winograd_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct conv_args { int stride, pad, bias; } conv_args;

static al_tensor *conv_fn(al_ctx *c, al_tensor **t, void *ud)
{
    conv_args *a = ud;
    return al_conv2d(c, t[0], t[1], a->bias ? t[2] : NULL, a->stride, a->pad);
}

/* Forward through the op on hand values: 1×2×3×3 input, two 2×2 filters, bias, pad 1, stride 2. */
static void test_conv2d_op_forward_hand(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[18], wd[16] = {0}, bd[2] = {10, -10};
    for (int i = 0; i < 18; i++) xd[i] = (float)i;         /* channel 0: 0..8, channel 1: 9..17 */
    wd[0] = 1;                     /* filter 0: top-left of channel 0 */
    wd[4 + 3] = 1;                 /* filter 0: bottom-right of channel 1 */
    wd[8 + 3] = 2; wd[12 + 0] = -1; /* filter 1: 2·ch0 bottom-right − ch1 top-left */
    al_tensor *x = al_wrap(c, xd, 4, (int[]){1, 2, 3, 3});
    al_tensor *w = al_wrap(c, wd, 4, (int[]){2, 2, 2, 2});
    al_tensor *b = al_wrap(c, bd, 1, (int[]){2});
    al_tensor *y = al_conv2d(c, x, w, b, 2, 1);
    assert_non_null(y);
    assert_int_equal(y->ndim, 4);
    assert_int_equal(y->shape[0], 1); assert_int_equal(y->shape[1], 2);
    assert_int_equal(y->shape[2], 2); assert_int_equal(y->shape[3], 2);
    /* out(oh,ow) window rows 2oh−1..2oh, cols 2ow−1..2ow; top-left (2oh−1, 2ow−1), bottom-right (2oh, 2ow) */
    /* filter 0 = ch0[tl] + ch1[br] + 10 */
    float want0[4] = {0 + 9 + 10, 0 + 11 + 10, 0 + 15 + 10, 4 + 17 + 10};
    /* filter 1 = 2·ch0[br] − ch1[tl] − 10 */
    float want1[4] = {0 - 0 - 10, 4 - 0 - 10, 12 - 0 - 10, 16 - 13 - 10};
    for (int i = 0; i < 4; i++) {
        assert_float_equal(y->data[i], want0[i], 0);
        assert_float_equal(y->data[4 + i], want1[i], 0);
    }
    /* no input requires a gradient: nothing recorded */
    assert_int_equal(c->ntape, 0);
    assert_int_equal(y->requires_grad, 0);
    al_ctx_free(c);
}

static void gradcheck_conv(int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad, int bias, uint64_t seed)
{
    float *x = tu_alloc_rand((int64_t)B * C * H * W, seed, -1, 1);
    float *w = tu_alloc_rand((int64_t)O * C * KH * KW, seed + 1, -1, 1);
    float *b = tu_alloc_rand(O, seed + 2, -1, 1);
    tu_input in[3] = {tu_in(x, 1, 4, B, C, H, W), tu_in(w, 1, 4, O, C, KH, KW), tu_in(b, 1, 1, O, 0, 0, 0)};
    conv_args a = {stride, pad, bias};
    char what[96];
    snprintf(what, sizeof what, "conv2d B%d C%d %dx%d O%d K%dx%d s%d p%d bias%d", B, C, H, W, O, KH, KW, stride, pad, bias);
    TU_GRADCHECK(what, conv_fn, &a, in, bias ? 3 : 2, 1e-2, 2e-3);
    free(x); free(w); free(b);
}

/* dL/dx, dL/dw, dL/db against central differences. */
static void test_conv2d_gradcheck(void **st)
{
    (void)st;
    gradcheck_conv(2, 3, 5, 6, 4, 3, 3, 1, 1, 1, 10);
    gradcheck_conv(1, 2, 7, 7, 3, 3, 2, 2, 0, 1, 20);
    gradcheck_conv(3, 1, 6, 5, 2, 1, 1, 1, 0, 1, 30);
    gradcheck_conv(2, 2, 5, 5, 3, 5, 5, 2, 2, 0, 40);   /* no bias */
}

/* Only the weights require a gradient (a frozen input), then only the input (frozen weights). */
static void test_conv2d_partial_grads(void **st)
{
    (void)st;
    float *x = tu_alloc_rand(2 * 3 * 6 * 6, 1, -1, 1), *w = tu_alloc_rand(4 * 3 * 9, 2, -1, 1), *b = tu_alloc_rand(4, 3, -1, 1);
    conv_args a = {1, 1, 1};
    tu_input in[3] = {tu_in(x, 0, 4, 2, 3, 6, 6), tu_in(w, 1, 4, 4, 3, 3, 3), tu_in(b, 0, 1, 4, 0, 0, 0)};
    TU_GRADCHECK("conv2d dw only", conv_fn, &a, in, 3, 1e-2, 2e-3);
    in[0].check = 1; in[1].check = 0;
    TU_GRADCHECK("conv2d dx only", conv_fn, &a, in, 3, 1e-2, 2e-3);
    /* with nothing requiring a gradient the op records nothing; with grad disabled likewise */
    al_ctx *c = al_ctx_new(1);
    al_tensor *tx = al_wrap(c, x, 4, (int[]){2, 3, 6, 6}), *tw = al_wrap(c, w, 4, (int[]){4, 3, 3, 3});
    tw->requires_grad = 1;
    c->grad_enabled = 0;
    assert_non_null(al_conv2d(c, tx, tw, NULL, 1, 1));
    assert_int_equal(c->ntape, 0);
    c->grad_enabled = 1;
    al_tensor *y = al_conv2d(c, tx, tw, NULL, 1, 1);
    assert_non_null(y);
    assert_int_equal(c->ntape, 1);
    assert_true(y->requires_grad);
    /* backward with the output never used (no grad on it) leaves w's grad untouched */
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_null(tw->grad);
    assert_null(tx->grad);
    al_ctx_free(c);
    free(x); free(w); free(b);
}

static void expect_error(al_ctx *c, al_tensor *r, const char *needle)
{
    assert_null(r);
    assert_false(al_ok(c));
    if (!strstr(al_ctx_error(c), needle)) fail_msg("error '%s' does not contain '%s'", al_ctx_error(c), needle);
    al_ctx_clear_error(c);
}

static void test_conv2d_shape_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 4, (int[]){2, 3, 5, 5});
    al_tensor *w = al_zeros(c, 4, (int[]){4, 3, 3, 3});
    al_tensor *w2 = al_zeros(c, 4, (int[]){4, 2, 3, 3});
    al_tensor *wbig = al_zeros(c, 4, (int[]){4, 3, 8, 3});
    al_tensor *b = al_zeros(c, 1, (int[]){4}), *b5 = al_zeros(c, 1, (int[]){5});
    al_tensor *x3 = al_zeros(c, 3, (int[]){3, 5, 5});
    expect_error(c, al_conv2d(c, x, w2, b, 1, 1), "expects 2");
    expect_error(c, al_conv2d(c, x, w2, b, 1, 1), "(2, 3, 5, 5)");
    expect_error(c, al_conv2d(c, x, wbig, b, 1, 1), "does not fit");
    expect_error(c, al_conv2d(c, x, w, b, 0, 1), "stride 0");
    expect_error(c, al_conv2d(c, x, w, b, 1, -1), "pad -1");
    expect_error(c, al_conv2d(c, x, w, b5, 1, 1), "bias (5)");
    expect_error(c, al_conv2d(c, x3, w, b, 1, 1), "(B, C, H, W)");
    /* the 8-row kernel fits once padded by 2: 5 + 2·2 = 9 rows → two output rows */
    al_tensor *y = al_conv2d(c, x, wbig, NULL, 1, 2);
    assert_non_null(y);
    assert_int_equal(y->shape[2], 2); assert_int_equal(y->shape[3], 7);
    /* NULL inputs and a context already in error give NULL without touching the message */
    assert_null(al_conv2d(c, NULL, w, b, 1, 1));
    assert_true(al_ok(c));
    al_fail(c, "earlier failure");
    assert_null(al_conv2d(c, x, w, b, 1, 1));
    assert_string_equal(al_ctx_error(c), "earlier failure");
    al_ctx_free(c);
}

/* ---------------- maxpool ---------------- */
typedef struct pool_args { int k, stride; } pool_args;
static al_tensor *pool_fn(al_ctx *c, al_tensor **t, void *ud)
{
    pool_args *a = ud;
    return al_maxpool2d(c, t[0], a->k, a->stride);
}

static void test_maxpool_forward_and_ties(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    /* 4×5 plane, k 2 stride 2 → 2×2 (last column dropped) */
    float xd[20] = { 1, 5, 2, 2, 9,
                     3, 4, 2, 0, 9,
                    -1,-2, 7, 8, 9,
                    -3,-4, 8, 6, 9 };
    al_tensor *x = al_wrap(c, xd, 4, (int[]){1, 1, 4, 5});
    x->requires_grad = 1;
    al_tensor *y = al_maxpool2d(c, x, 2, 2);
    assert_non_null(y);
    assert_int_equal(y->shape[2], 2); assert_int_equal(y->shape[3], 2);
    float want[4] = {5, 2, -1, 8};
    for (int i = 0; i < 4; i++) assert_float_equal(y->data[i], want[i], 0);
    /* backward: every output's gradient goes to one input; the 3-way tie of 2s and the
     * (8, 8) tie go to the first in row-major order */
    float *g = al_grad(c, y);
    for (int i = 0; i < 4; i++) g[i] = (float)(i + 1);
    assert_int_equal(al_backward_run(c), AL_OK);
    float dwant[20] = {0};
    dwant[1] = 1;           /* 5 */
    dwant[2] = 2;           /* first 2 of the window {2, 2, 2, 0} */
    dwant[10] = 3;          /* −1 */
    dwant[13] = 4;          /* first 8 (row 2, col 3) over row 3's 8 at col 2 */
    for (int i = 0; i < 20; i++) assert_float_equal(x->grad[i], dwant[i], 0);

    /* overlapping windows (k 3, stride 1): the centre max is hit by several outputs and accumulates */
    al_ctx_reset(c);
    float z[16] = {0};
    z[5] = 1;               /* (1, 1) */
    al_tensor *xz = al_wrap(c, z, 4, (int[]){1, 1, 4, 4});
    xz->requires_grad = 1;
    al_tensor *yz = al_maxpool2d(c, xz, 3, 1);
    assert_non_null(yz);
    assert_int_equal(yz->shape[2], 2);
    for (int i = 0; i < 4; i++) assert_float_equal(yz->data[i], 1, 0);
    float *gz = al_grad(c, yz);
    for (int i = 0; i < 4; i++) gz[i] = 1;
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_float_equal(xz->grad[5], 4, 0);
    al_ctx_free(c);
}

/* One input under two poolings: the first backward to reach x gets a fresh gradient (zeroed plane
 * by plane as it scatters), the second adds to it. Exact values, twice in one context (the second
 * time the gradient buffers are reused, so a missing zeroing shows up as stale values). */
static void test_maxpool_fresh_then_accumulate(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[2 * 16];
    for (int i = 0; i < 32; i++) xd[i] = (float)((i * 7) % 32) - 10.f;   /* distinct values */
    for (int rep = 0; rep < 2; rep++) {
        al_ctx_reset(c);
        al_tensor *x = al_wrap(c, xd, 4, (int[]){1, 2, 4, 4});
        x->requires_grad = 1;
        al_tensor *y = al_add(c, al_maxpool2d(c, x, 2, 2), al_maxpool2d(c, x, 3, 1));   /* both (1, 2, 2, 2) */
        assert_non_null(y);
        float *g = al_grad(c, y), gy[8];
        for (int i = 0; i < 8; i++) g[i] = gy[i] = (float)(i + 1) + 0.5f * (float)rep;
        assert_int_equal(al_backward_run(c), AL_OK);
        float want[32] = {0};
        for (int ch = 0; ch < 2; ch++)
            for (int oh = 0; oh < 2; oh++)
                for (int ow = 0; ow < 2; ow++) {
                    const float gv = gy[ch * 4 + oh * 2 + ow];
                    for (int k = 2; k <= 3; k++) {   /* k 2 stride 2, then k 3 stride 1 */
                        const int s = k == 2 ? 2 : 1;
                        int best = -1;
                        for (int dh = 0; dh < k; dh++)
                            for (int dw = 0; dw < k; dw++) {
                                int at = ch * 16 + (oh * s + dh) * 4 + ow * s + dw;
                                if (best < 0 || xd[at] > xd[best]) best = at;
                            }
                        want[best] += gv;
                    }
                }
        for (int i = 0; i < 32; i++) assert_float_equal(x->grad[i], want[i], 0);
    }
    al_ctx_free(c);
}

/* The 2x2 stride-2 gradient into a fresh dx, on planes wider than 32 columns and odd on both sides
 * (columns and a row no window covers), with ties and a gradient of -0: the bits of the plain scatter
 * d = 0, then d[argmax] += g (ties: the first max in row-major window order). */
static void test_maxpool_grad_wide(void **st)
{
    (void)st;
    enum { B = 2, C = 3, H = 29, W = 67, Ho = 14, Wo = 33 };
    al_ctx *c = al_ctx_new(1);
    float *x = tu_alloc_rand(B * C * H * W, 21, -1, 1);
    for (int i = 0; i < B * C * H * W; i += 7) x[i] = 0.25f;   /* ties */
    al_tensor *xt = al_wrap(c, x, 4, (int[]){B, C, H, W});
    xt->requires_grad = 1;
    al_tensor *y = al_maxpool2d(c, xt, 2, 2);
    assert_non_null(y);
    float *g = al_grad(c, y);
    tu_fill(g, y->numel, 22, -1, 1);
    g[5] = -0.f; g[40] = -0.f;
    float *gy = malloc((size_t)y->numel * sizeof *gy);   /* backward may reuse y's gradient buffer */
    memcpy(gy, g, (size_t)y->numel * sizeof *gy);
    assert_int_equal(al_backward_run(c), AL_OK);
    float *want = calloc((size_t)B * C * H * W, sizeof *want);
    for (int p = 0; p < B * C; p++)
        for (int oh = 0; oh < Ho; oh++)
            for (int ow = 0; ow < Wo; ow++) {
                int best = -1;
                for (int dh = 0; dh < 2; dh++)
                    for (int dw = 0; dw < 2; dw++) {
                        const int at = p * H * W + (2 * oh + dh) * W + 2 * ow + dw;
                        if (best < 0 || x[at] > x[best]) best = at;
                    }
                want[best] += gy[(p * Ho + oh) * Wo + ow];
            }
    for (int i = 0; i < B * C * H * W; i++)
        if (memcmp(&xt->grad[i], &want[i], sizeof(float)))
            fail_msg("element %d: dx %a, the scatter gives %a", i, (double)xt->grad[i], (double)want[i]);
    free(want); free(x); free(gy);
    al_ctx_free(c);
}

/* Distinct values spaced 0.05 apart, eps 1e-3: no argmax changes under the perturbation. */
static void gradcheck_pool(int B, int C, int H, int W, int k, int s, uint64_t seed)
{
    int n = B * C * H * W;
    float *x = malloc((size_t)n * sizeof(float));
    int *perm = malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) perm[i] = i;
    al_rng r; al_rng_seed(&r, seed, 1);
    al_rng_shuffle(&r, perm, n);
    for (int i = 0; i < n; i++) x[i] = 0.05f * (float)(perm[i] - n / 2);
    tu_input in[1] = {tu_in(x, 1, 4, B, C, H, W)};
    pool_args a = {k, s};
    TU_GRADCHECK("maxpool2d", pool_fn, &a, in, 1, 1e-3, 1e-2);
    free(x); free(perm);
}

static void test_maxpool_gradcheck(void **st)
{
    (void)st;
    gradcheck_pool(2, 3, 6, 7, 2, 2, 1);
    gradcheck_pool(1, 2, 7, 5, 3, 2, 2);
    gradcheck_pool(2, 1, 5, 5, 2, 1, 3);   /* overlapping windows */
}

/* maxpool against a plain reference on random data (ties are measure-zero here). */
static void test_maxpool_matches_naive(void **st)
{
    (void)st;
    enum { B = 3, C = 5, H = 28, W = 27 };
    static const int ks[][2] = {{2, 2}, {3, 2}, {3, 1}, {1, 1}, {4, 3}};
    al_ctx *c = al_ctx_new(1);
    float *x = tu_alloc_rand(B * C * H * W, 9, -1, 1);
    for (int t = 0; t < 5; t++) {
        int k = ks[t][0], s = ks[t][1], Ho = (H - k) / s + 1, Wo = (W - k) / s + 1;
        al_ctx_reset(c);
        al_tensor *y = al_maxpool2d(c, al_wrap(c, x, 4, (int[]){B, C, H, W}), k, s);
        assert_non_null(y);
        assert_int_equal(y->shape[2], Ho); assert_int_equal(y->shape[3], Wo);
        for (int p = 0; p < B * C; p++)
            for (int oh = 0; oh < Ho; oh++)
                for (int ow = 0; ow < Wo; ow++) {
                    float m = -1e30f;
                    for (int i = 0; i < k; i++) for (int j = 0; j < k; j++) {
                        float v = x[(size_t)p * H * W + (size_t)(oh * s + i) * W + ow * s + j];
                        if (v > m) m = v;
                    }
                    assert_float_equal(y->data[((size_t)p * Ho + oh) * Wo + ow], m, 0);
                }
    }
    free(x);
    al_ctx_free(c);
}

/* Ties and NaNs on rows long enough for the vectorised 2×2 path (Wo = 21: one full block of 16 and a
 * tail) and for the general path (k 3, stride 2), against a plain loop with the documented rule:
 * a later value wins only if strictly greater (ties keep the first in row-major window order),
 * and a NaN wins once. */
static void test_maxpool_ties_nan_long_rows(void **st)
{
    (void)st;
    enum { H = 6, W = 43 };
    float xd[2 * H * W];
    al_rng r; al_rng_seed(&r, 3, 1);
    for (int i = 0; i < 2 * H * W; i++) xd[i] = (float)al_rng_below(&r, 3);   /* many ties */
    xd[5] = xd[W + 30] = xd[H * W + 2 * W + 7] = 0.0f / 0.0f;
    static const int ks[2][2] = {{2, 2}, {3, 2}};
    for (int t = 0; t < 2; t++) {
        int k = ks[t][0], s = ks[t][1], Ho = (H - k) / s + 1, Wo = (W - k) / s + 1;
        al_ctx *c = al_ctx_new(1);
        al_tensor *x = al_wrap(c, xd, 4, (int[]){1, 2, H, W});
        x->requires_grad = 1;
        al_tensor *y = al_maxpool2d(c, x, k, s);
        assert_non_null(y);
        float *g = al_grad(c, y);
        for (int i = 0; i < y->numel; i++) g[i] = (float)(i + 1);
        assert_int_equal(al_backward_run(c), AL_OK);
        float want_dx[2 * H * W] = {0};
        for (int p = 0; p < 2; p++) for (int oh = 0; oh < Ho; oh++) for (int ow = 0; ow < Wo; ow++) {
            const float *xp = xd + p * H * W;
            int bi = oh * s * W + ow * s;
            float m = xp[bi];
            for (int i = 0; i < k; i++) for (int j = 0; j < k; j++) {
                int q = (oh * s + i) * W + ow * s + j;
                if (xp[q] > m || (xp[q] != xp[q] && m == m)) { m = xp[q]; bi = q; }
            }
            int o = (p * Ho + oh) * Wo + ow;
            float yv = y->data[o];
            if (m != m) assert_true(yv != yv); else assert_float_equal(yv, m, 0);
            want_dx[p * H * W + bi] += (float)(o + 1);
        }
        for (int i = 0; i < 2 * H * W; i++)
            if (want_dx[i] != x->grad[i]) fail_msg("k%d s%d: dx[%d] = %g, want %g", k, s, i, (double)x->grad[i], (double)want_dx[i]);
        al_ctx_free(c);
    }
}

static void test_maxpool_shape_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 4, (int[]){1, 2, 3, 4});
    expect_error(c, al_maxpool2d(c, x, 4, 1), "larger than input (1, 2, 3, 4)");
    expect_error(c, al_maxpool2d(c, x, 0, 1), "window 0");
    expect_error(c, al_maxpool2d(c, x, 2, 0), "stride 0");
    expect_error(c, al_maxpool2d(c, al_zeros(c, 2, (int[]){3, 4}), 2, 2), "(3, 4) must be (B, C, H, W)");
    assert_null(al_maxpool2d(c, NULL, 2, 2));
    assert_true(al_ok(c));
    al_ctx_free(c);
}

/* conv → maxpool → conv chained on the tape, checked end to end against central differences. */
typedef struct chain_args { int dummy; } chain_args;
static al_tensor *chain_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    al_tensor *h = al_conv2d(c, t[0], t[1], t[2], 1, 1);
    h = al_maxpool2d(c, h, 2, 2);
    return al_conv2d(c, h, t[3], NULL, 1, 0);
}
/* Smallest gap between the largest and second-largest value of any 2×2 pooling window of h. */
static float min_pool_gap(const al_tensor *h)
{
    const int P = h->shape[0] * h->shape[1], H = h->shape[2], W = h->shape[3];
    float g = 1e30f;
    for (int p = 0; p < P; p++)
        for (int i = 0; i + 1 < H; i += 2)
            for (int j = 0; j + 1 < W; j += 2) {
                const float *q = h->data + (size_t)p * H * W + (size_t)i * W + j;
                float v[4] = {q[0], q[1], q[W], q[W + 1]}, m1 = -1e30f, m2 = -1e30f;
                for (int k = 0; k < 4; k++) { if (v[k] > m1) { m2 = m1; m1 = v[k]; } else if (v[k] > m2) m2 = v[k]; }
                if (m1 - m2 < g) g = m1 - m2;
            }
    return g;
}

/* x (B,C,H,W), w (O,C,3,3), b (O) (and w2 (O2,O,2,2) when O2 > 0) drawn from the first seed whose 3×3,
 * pad 1 conv activations have every pooling window's top two values at least 0.03 apart: a 1e-3 step
 * of any one input (all |values| < 1) moves them by at most 1e-3, so no argmax flips (no kink inside
 * the difference). */
static void gap_seed(int B, int C, int H, int W, int O, int O2, float **x, float **w, float **b, float **w2)
{
    int found = 0;
    *x = *w = *b = NULL;
    if (w2) *w2 = NULL;
    for (uint64_t seed = 1; seed < 200 && !found; seed++) {
        free(*x); free(*w); free(*b);
        *x = tu_alloc_rand(B * C * H * W, seed, -1, 1); *w = tu_alloc_rand(O * C * 9, seed + 1000, -1, 1);
        *b = tu_alloc_rand(O, seed + 2000, -1, 1);
        if (w2) { free(*w2); *w2 = tu_alloc_rand(O2 * O * 4, seed + 3000, -1, 1); }
        al_ctx *c = al_ctx_new(1);
        al_tensor *h = al_conv2d(c, al_wrap(c, *x, 4, (int[]){B, C, H, W}), al_wrap(c, *w, 4, (int[]){O, C, 3, 3}),
                                 al_wrap(c, *b, 1, (int[]){O}), 1, 1);
        assert_non_null(h);
        found = min_pool_gap(h) >= 0.03f;
        al_ctx_free(c);
    }
    assert_true(found);
}

static void test_conv_pool_chain_gradcheck(void **st)
{
    (void)st;
    float *x, *w1, *b1, *w2;
    gap_seed(2, 1, 8, 8, 3, 2, &x, &w1, &b1, &w2);
    tu_input in[4] = {tu_in(x, 1, 4, 2, 1, 8, 8), tu_in(w1, 1, 4, 3, 1, 3, 3), tu_in(b1, 1, 1, 3, 0, 0, 0),
                      tu_in(w2, 1, 4, 2, 3, 2, 2)};
    chain_args a = {0};
    TU_GRADCHECK("conv-pool-conv", chain_fn, &a, in, 4, 1e-3, 2e-3);
    free(x); free(w1); free(b1); free(w2);
}

/* al_conv2d_maxpool2 against al_maxpool2d(al_conv2d(..), 2, 2), and al_conv2d_maxpool2_relu against
 * al_relu of that: output and every gradient bit for bit (ties, a −0 upstream gradient, odd planes whose
 * last conv row/column no window reads, a 1×1 direct convolution, the cnn's two shapes), on 1 and 2
 * threads, with and without a tape. */
static void test_conv_maxpool2_fused(void **st)
{
    (void)st;
    static const int cs[][8] = {   /* B, C, H, W, O, K, pad, bias */
        {3, 2, 9, 11, 5, 3, 1, 1}, {2, 3, 8, 8, 4, 1, 0, 0}, {2, 1, 28, 28, 32, 3, 1, 1}, {4, 32, 14, 14, 64, 3, 1, 1},
        {2, 2, 7, 6, 3, 2, 0, 1},
    };
    const int nt0 = al_threads();
    al__wino_off = 1;   /* the direct path's fusion (the Winograd path's own tests are below) */
    for (int relu = 0; relu < 2; relu++)
    for (int ci = 0; ci < 5; ci++)
        for (int thr = 1; thr <= 2; thr++)
            for (int grad = 0; grad < 2; grad++) {
                const int B = cs[ci][0], C = cs[ci][1], H = cs[ci][2], W = cs[ci][3], O = cs[ci][4], K = cs[ci][5], pad = cs[ci][6];
                al_set_threads(thr);
                float *x = tu_alloc_rand(B * C * H * W, 31 + ci, -1, 1), *w = tu_alloc_rand(O * C * K * K, 32 + ci, -1, 1);
                float *b = tu_alloc_rand(O, 33 + ci, -1, 1);
                for (int i = 0; i < B * C * H * W; i += 7) x[i] = 0.25f;   /* ties */
                al_tensor *y[2], *xt[2], *wt[2], *bt[2];
                al_ctx *c[2];
                for (int f = 0; f < 2; f++) {
                    c[f] = al_ctx_new(1);
                    xt[f] = al_wrap(c[f], x, 4, (int[]){B, C, H, W});
                    wt[f] = al_wrap(c[f], w, 4, (int[]){O, C, K, K});
                    bt[f] = cs[ci][7] ? al_wrap(c[f], b, 1, (int[]){O}) : NULL;
                    xt[f]->requires_grad = wt[f]->requires_grad = grad;
                    if (bt[f]) bt[f]->requires_grad = grad;
                    if (relu)
                        y[f] = f ? al_conv2d_maxpool2_relu(c[f], xt[f], wt[f], bt[f], pad)
                                 : al_relu(c[f], al_maxpool2d(c[f], al_conv2d(c[f], xt[f], wt[f], bt[f], 1, pad), 2, 2));
                    else
                        y[f] = f ? al_conv2d_maxpool2(c[f], xt[f], wt[f], bt[f], pad)
                                 : al_maxpool2d(c[f], al_conv2d(c[f], xt[f], wt[f], bt[f], 1, pad), 2, 2);
                    assert_non_null(y[f]);
                    assert_int_equal(y[f]->requires_grad, grad);
                }
                assert_int_equal(y[0]->numel, y[1]->numel);
                if (memcmp(y[0]->data, y[1]->data, (size_t)y[0]->numel * sizeof(float)))
                    fail_msg("case %d, %d threads, relu %d: the fused output differs from conv2d + maxpool2d", ci, thr, relu);
                if (grad) {
                    for (int f = 0; f < 2; f++) {
                        float *g = al_grad(c[f], y[f]);
                        tu_fill(g, y[f]->numel, 34 + ci, -1, 1);
                        g[1] = -0.f;
                        assert_int_equal(al_backward_run(c[f]), AL_OK);
                    }
                    if (memcmp(xt[0]->grad, xt[1]->grad, (size_t)B * C * H * W * sizeof(float)) ||
                        memcmp(wt[0]->grad, wt[1]->grad, (size_t)O * C * K * K * sizeof(float)) ||
                        (bt[0] && memcmp(bt[0]->grad, bt[1]->grad, (size_t)O * sizeof(float))))
                        fail_msg("case %d, %d threads, relu %d: fused gradients differ from conv2d + maxpool2d", ci, thr, relu);
                }
                for (int f = 0; f < 2; f++) al_ctx_free(c[f]);
                free(x); free(w); free(b);
            }
    al_set_threads(nt0);
    al__wino_off = 0;
    /* a convolution output smaller than the window */
    al_ctx *c = al_ctx_new(1);
    float xd[9] = {0}, wd[9] = {0};
    expect_error(c, al_conv2d_maxpool2(c, al_wrap(c, xd, 4, (int[]){1, 1, 3, 3}), al_wrap(c, wd, 4, (int[]){1, 1, 3, 3}), NULL, 0),
                 "smaller than the 2x2 pooling window");
    expect_error(c, al_conv2d_maxpool2(c, al_wrap(c, xd, 4, (int[]){1, 1, 3, 3}), al_wrap(c, wd, 4, (int[]){1, 2, 3, 1}), NULL, 0),
                 "conv2d_maxpool2: x (1, 1, 3, 3) has 1 channels");
    al_ctx_free(c);
}

/* The fused op checked against central differences (a seed with no argmax within reach of the step). */
static al_tensor *fused_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_conv2d_maxpool2(c, t[0], t[1], t[2], 1);
}
static void test_conv_maxpool2_gradcheck(void **st)
{
    (void)st;
    float *x, *w, *b;
    gap_seed(2, 2, 6, 7, 3, 0, &x, &w, &b, NULL);
    tu_input in[3] = {tu_in(x, 1, 4, 2, 2, 6, 7), tu_in(w, 1, 4, 3, 2, 3, 3), tu_in(b, 1, 1, 3, 0, 0, 0)};
    TU_GRADCHECK("conv2d_maxpool2", fused_fn, NULL, in, 3, 1e-3, 2e-3);
    free(x); free(w); free(b);
}

/* The fused conv + pool + ReLU against central differences: a seed whose windows have a gap at the max
 * and whose pooled values keep away from the ReLU's kink at 0 (some of them negative: a zero gradient). */
static al_tensor *fused_relu_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_conv2d_maxpool2_relu(c, t[0], t[1], t[2], 1);
}
static void test_conv_maxpool2_relu_gradcheck(void **st)
{
    (void)st;
    float *x = NULL, *w = NULL, *b = NULL;
    int found = 0, neg = 0;
    for (uint64_t seed = 1; seed < 400 && !found; seed++) {
        free(x); free(w); free(b);
        x = tu_alloc_rand(2 * 2 * 6 * 7, seed, -1, 1); w = tu_alloc_rand(3 * 2 * 9, seed + 1000, -1, 1);
        b = tu_alloc_rand(3, seed + 2000, -1, 1);
        al_ctx *c = al_ctx_new(1);
        al_tensor *h = al_conv2d(c, al_wrap(c, x, 4, (int[]){2, 2, 6, 7}), al_wrap(c, w, 4, (int[]){3, 2, 3, 3}),
                                 al_wrap(c, b, 1, (int[]){3}), 1, 1);
        assert_non_null(h);
        al_tensor *p = al_maxpool2d(c, h, 2, 2);
        assert_non_null(p);
        float kink = INFINITY;
        neg = 0;
        for (int64_t i = 0; i < p->numel; i++) {
            if (fabsf(p->data[i]) < kink) kink = fabsf(p->data[i]);
            neg += p->data[i] < 0.f;
        }
        found = min_pool_gap(h) >= 0.03f && kink >= 0.03f && neg > 0 && neg < p->numel;
        al_ctx_free(c);
    }
    assert_true(found);
    tu_input in[3] = {tu_in(x, 1, 4, 2, 2, 6, 7), tu_in(w, 1, 4, 3, 2, 3, 3), tu_in(b, 1, 1, 3, 0, 0, 0)};
    TU_GRADCHECK("conv2d_maxpool2_relu", fused_relu_fn, NULL, in, 3, 1e-3, 2e-3);
    free(x); free(w); free(b);
}

/* ---------------- the Winograd path (kernels/winograd.c) ---------------- */
/* The reference for a fused conv + pool (+ ReLU) backward: the pooled gradient scattered to each window's
 * max (through the ReLU), then the naive convolution backward. */
static void convpool_bwd_ref(const float *x, const float *w, const float *g, const float *out, const int32_t *arg, int relu,
                             float *dx, float *dw, float *db, int B, int C, int H, int W, int O)
{
    const int64_t P = (int64_t)(H / 2) * (W / 2), HW = (int64_t)H * W;
    float *dy = calloc((size_t)B * O * HW, sizeof(float));
    assert_non_null(dy);
    for (int64_t q = 0; q < (int64_t)B * O; q++)
        for (int64_t p = 0; p < P; p++)
            dy[q * HW + arg[q * P + p]] += relu && !(out[q * P + p] > 0.f) ? 0.f : g[q * P + p];
    al_conv2d_bwd_ref(x, w, dy, dx, dw, db, B, C, H, W, O, 3, 3, 1, 1);
    free(dy);
}

static double max_abs(const float *a, int64_t n) { double m = 0; for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(a[i])); return m; }
static double max_diff(const float *a, const float *b, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

/* Forward against the direct path (al__wino_off) and backward against convpool_bwd_ref: outputs, the
 * argmax wherever the window's top two values are apart, dx (fresh and accumulated), dw and db, for
 * shapes at the chunk edges (1, 8, 9, 19 images), the smallest plane (2×2), non-square planes, with and
 * without bias and ReLU. Tolerances: sums of ≤ 9·C products of O(1) values through the transforms'
 * halves and differences, relative 2e-5 of the largest magnitude. */
static void test_wino_matches_direct(void **st)
{
    (void)st;
    static const int cs[][7] = {   /* B, C, H, W, O, relu, bias */
        {1, 4, 2, 2, 1, 0, 1}, {9, 5, 6, 8, 3, 1, 1}, {19, 32, 14, 14, 64, 1, 1}, {8, 4, 4, 10, 2, 0, 0}, {3, 7, 10, 4, 5, 1, 0},
    };
    for (int ci = 0; ci < 5; ci++) {
        const int B = cs[ci][0], C = cs[ci][1], H = cs[ci][2], W = cs[ci][3], O = cs[ci][4], relu = cs[ci][5];
        assert_true(al__wino_ok(C, H, W, O, 3, 3, 1, 1));
        const int64_t nx = (int64_t)B * C * H * W, nw = (int64_t)O * C * 9, ny = (int64_t)B * O * (H / 2) * (W / 2);
        float *x = tu_alloc_rand(nx, 51 + ci, -1, 1), *w = tu_alloc_rand(nw, 52 + ci, -1, 1), *b = tu_alloc_rand(O, 53 + ci, -1, 1);
        float *g = tu_alloc_rand(ny, 54 + ci, -1, 1);
        const float *bias = cs[ci][6] ? b : NULL;
        float *yw = malloc(ny * sizeof(float)), *yd = malloc(ny * sizeof(float));
        int32_t *aw = malloc(ny * sizeof(int32_t)), *ad = malloc(ny * sizeof(int32_t));
        assert_true(yw && yd && aw && ad);
        assert_int_equal(al__wino_conv_pool_fwd(x, w, bias, yw, aw, relu, B, C, H, W, O), 0);
        /* the direct path, and the convolution itself for the windows' gaps */
        al_ctx *c = al_ctx_new(1);
        al_tensor *xt = al_wrap(c, x, 4, (int[]){B, C, H, W}), *wt = al_wrap(c, w, 4, (int[]){O, C, 3, 3});
        al_tensor *bt = bias ? al_wrap(c, b, 1, (int[]){O}) : NULL;
        al__wino_off = 1;
        al_tensor *yt = relu ? al_conv2d_maxpool2_relu(c, xt, wt, bt, 1) : al_conv2d_maxpool2(c, xt, wt, bt, 1);
        al__wino_off = 0;
        al_tensor *h = al_conv2d(c, xt, wt, bt, 1, 1);
        assert_non_null(yt); assert_non_null(h);
        memcpy(yd, yt->data, ny * sizeof(float));
        const double scale = max_abs(h->data, h->numel);
        if (!(max_diff(yw, yd, ny) <= 2e-5 * scale))
            fail_msg("case %d: forward differs from the direct path by %g (scale %g)", ci, max_diff(yw, yd, ny), scale);
        int checked = 0;
        for (int64_t q = 0; q < ny; q++) {   /* the direct conv's argmax, where the window's top two are apart */
            const int64_t plane = q / ((H / 2) * (W / 2)), p = q % ((H / 2) * (W / 2));
            const int ty = (int)(p / (W / 2)), tx = (int)(p % (W / 2));
            const float *hp = h->data + plane * H * W;
            const int idx[4] = {2 * ty * W + 2 * tx, 2 * ty * W + 2 * tx + 1, (2 * ty + 1) * W + 2 * tx, (2 * ty + 1) * W + 2 * tx + 1};
            int best = 0;
            for (int k = 1; k < 4; k++) if (hp[idx[k]] > hp[idx[best]]) best = k;
            float gap = 1e30f;
            for (int k = 0; k < 4; k++) if (k != best) gap = fminf(gap, hp[idx[best]] - hp[idx[k]]);
            ad[q] = idx[best];
            if (gap > 1e-4f * (float)scale) {
                checked++;
                if (aw[q] != idx[best]) fail_msg("case %d: window %lld's max at %d, the direct conv's at %d", ci, (long long)q, aw[q], idx[best]);
            }
        }
        assert_true(checked > ny * 9 / 10);
        /* backward with the direct path's argmax and output, against the reference */
        float *dxw = malloc(nx * sizeof(float)), *dxr = calloc(nx, sizeof(float)), *dww = calloc(nw, sizeof(float));
        float *dwr = calloc(nw, sizeof(float)), *dbw = calloc(O, sizeof(float)), *dbr = calloc(O, sizeof(float));
        assert_true(dxw && dxr && dww && dwr && dbw && dbr);
        for (int64_t i = 0; i < nx; i++) dxw[i] = NAN;   /* fresh: never read */
        assert_int_equal(al__wino_conv_pool_bwd(x, w, g, yd, ad, relu, dxw, 1, dww, dbw, B, C, H, W, O), 0);
        convpool_bwd_ref(x, w, g, yd, ad, relu, dxr, dwr, dbr, B, C, H, W, O);
        const double sx = max_abs(dxr, nx), sw = max_abs(dwr, nw), sb = max_abs(dbr, O);
        if (!(max_diff(dxw, dxr, nx) <= 2e-5 * sx + 1e-30)) fail_msg("case %d: dx differs by %g (scale %g)", ci, max_diff(dxw, dxr, nx), sx);
        if (!(max_diff(dww, dwr, nw) <= 2e-5 * sw + 1e-30)) fail_msg("case %d: dw differs by %g (scale %g)", ci, max_diff(dww, dwr, nw), sw);
        if (!(max_diff(dbw, dbr, O) <= 2e-5 * sb + 1e-30)) fail_msg("case %d: db differs by %g (scale %g)", ci, max_diff(dbw, dbr, O), sb);
        /* accumulated: old + the fresh result, bit for bit; dw and db added to, not overwritten */
        float *dxa = malloc(nx * sizeof(float)), *dwa = malloc(nw * sizeof(float));
        assert_true(dxa && dwa);
        for (int64_t i = 0; i < nx; i++) dxa[i] = 0.5f;
        for (int64_t i = 0; i < nw; i++) dwa[i] = 0.f;
        assert_int_equal(al__wino_conv_pool_bwd(x, w, g, yd, ad, relu, dxa, 0, dwa, NULL, B, C, H, W, O), 0);
        for (int64_t i = 0; i < nx; i++)
            if (dxa[i] != 0.5f + dxw[i]) fail_msg("case %d: accumulated dx[%lld] %g, want 0.5 + %g", ci, (long long)i, dxa[i], dxw[i]);
        if (memcmp(dwa, dww, nw * sizeof(float))) fail_msg("case %d: dw from zero differs between calls", ci);
        al_ctx_free(c);
        free(x); free(w); free(b); free(g); free(yw); free(yd); free(aw); free(ad);
        free(dxw); free(dxr); free(dww); free(dwr); free(dbw); free(dbr); free(dxa); free(dwa);
    }
    /* the shapes it leaves to the direct path */
    assert_false(al__wino_ok(1, 28, 28, 32, 3, 3, 1, 1));   /* one input channel */
    assert_false(al__wino_ok(8, 7, 8, 4, 3, 3, 1, 1));      /* odd height */
    assert_false(al__wino_ok(8, 8, 8, 4, 3, 3, 2, 1));      /* stride 2 */
    assert_false(al__wino_ok(8, 8, 8, 4, 5, 5, 1, 2));      /* 5×5 */
    assert_false(al__wino_ok(8, 8, 8, 4, 3, 3, 1, 0));      /* pad 0 */
}

/* The same bits on 1 and 2 threads (chunks of images, summed in chunk order), through the op with a tape */
static void test_wino_thread_bits(void **st)
{
    (void)st;
    const int B = 19, C = 8, H = 6, W = 6, O = 5;
    float *x = tu_alloc_rand(B * C * H * W, 61, -1, 1), *w = tu_alloc_rand(O * C * 9, 62, -1, 1), *b = tu_alloc_rand(O, 63, -1, 1);
    float *r = tu_alloc_rand(B * O * 9, 64, -1, 1);
    const int nt0 = al_threads();
    float *out[2], *dx[2], *dw[2], *db[2];
    for (int t = 0; t < 2; t++) {
        al_set_threads(t + 1);
        al_ctx *c = al_ctx_new(1);
        al_tensor *xt = al_wrap(c, x, 4, (int[]){B, C, H, W}), *wt = al_wrap(c, w, 4, (int[]){O, C, 3, 3}), *bt = al_wrap(c, b, 1, (int[]){O});
        xt->requires_grad = wt->requires_grad = bt->requires_grad = 1;
        al_tensor *y = al_conv2d_maxpool2_relu(c, xt, wt, bt, 1);
        assert_non_null(y);
        memcpy(al_grad(c, y), r, (size_t)y->numel * sizeof(float));
        assert_int_equal(al_backward_run(c), AL_OK);
        out[t] = malloc((size_t)y->numel * sizeof(float)); memcpy(out[t], y->data, (size_t)y->numel * sizeof(float));
        dx[t] = malloc((size_t)xt->numel * sizeof(float)); memcpy(dx[t], xt->grad, (size_t)xt->numel * sizeof(float));
        dw[t] = malloc((size_t)wt->numel * sizeof(float)); memcpy(dw[t], wt->grad, (size_t)wt->numel * sizeof(float));
        db[t] = malloc(O * sizeof(float)); memcpy(db[t], bt->grad, O * sizeof(float));
        al_ctx_free(c);
    }
    al_set_threads(nt0);
    assert_memory_equal(out[0], out[1], (size_t)B * O * 9 * sizeof(float));
    assert_memory_equal(dx[0], dx[1], (size_t)B * C * H * W * sizeof(float));
    assert_memory_equal(dw[0], dw[1], (size_t)O * C * 9 * sizeof(float));
    assert_memory_equal(db[0], db[1], O * sizeof(float));
    for (int t = 0; t < 2; t++) { free(out[t]); free(dx[t]); free(dw[t]); free(db[t]); }
    free(x); free(w); free(b); free(r);
}

/* The op on the Winograd path against central differences (4 channels: the path's smallest) */
static void test_wino_gradcheck(void **st)
{
    (void)st;
    float *x, *w, *b;
    gap_seed(2, 4, 4, 6, 3, 0, &x, &w, &b, NULL);
    assert_true(al__wino_ok(4, 4, 6, 3, 3, 3, 1, 1));
    tu_input in[3] = {tu_in(x, 1, 4, 2, 4, 4, 6), tu_in(w, 1, 4, 3, 4, 3, 3), tu_in(b, 1, 1, 3, 0, 0, 0)};
    TU_GRADCHECK("conv2d_maxpool2 (winograd)", fused_fn, NULL, in, 3, 1e-3, 2e-3);
    free(x); free(w); free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv2d_op_forward_hand),
        cmocka_unit_test(test_conv2d_gradcheck),
        cmocka_unit_test(test_conv2d_partial_grads),
        cmocka_unit_test(test_conv2d_shape_errors),
        cmocka_unit_test(test_maxpool_forward_and_ties),
        cmocka_unit_test(test_maxpool_gradcheck),
        cmocka_unit_test(test_maxpool_grad_wide),
        cmocka_unit_test(test_maxpool_fresh_then_accumulate),
        cmocka_unit_test(test_maxpool_matches_naive),
        cmocka_unit_test(test_maxpool_ties_nan_long_rows),
        cmocka_unit_test(test_maxpool_shape_errors),
        cmocka_unit_test(test_conv_pool_chain_gradcheck),
        cmocka_unit_test(test_conv_maxpool2_fused),
        cmocka_unit_test(test_conv_maxpool2_gradcheck),
        cmocka_unit_test(test_conv_maxpool2_relu_gradcheck),
        cmocka_unit_test(test_wino_matches_direct),
        cmocka_unit_test(test_wino_thread_bits),
        cmocka_unit_test(test_wino_gradcheck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
