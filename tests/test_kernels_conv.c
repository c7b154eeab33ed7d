/* test_kernels_conv.c — the fast conv2d kernels against the naive references, hand values, determinism. */
#include "testutil.h"
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"
#include "kernels/conv_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int outsz(int in, int k, int s, int p) { return (in + 2 * p - k) / s + 1; }

/* Compare fast vs reference forward and backward on one shape; returns the worst relative error. */
static double check_shape(int B, int C, int H, int W, int O, int KH, int KW, int s, int p, uint64_t seed)
{
    int Ho = outsz(H, KH, s, p), Wo = outsz(W, KW, s, p);
    int64_t nx = (int64_t)B * C * H * W, nw = (int64_t)O * C * KH * KW, ny = (int64_t)B * O * Ho * Wo;
    float *x = tu_alloc_rand(nx, seed, -1, 1), *w = tu_alloc_rand(nw, seed + 1, -1, 1);
    float *b = tu_alloc_rand(O, seed + 2, -1, 1), *dy = tu_alloc_rand(ny, seed + 3, -1, 1);
    float *y1 = malloc((size_t)ny * sizeof(float)), *y2 = malloc((size_t)ny * sizeof(float));
    /* gradients start non-zero: the kernels must accumulate */
    float *dx1 = tu_alloc_rand(nx, seed + 4, -1, 1), *dx2 = tu_alloc_rand(nx, seed + 4, -1, 1);
    float *dw1 = tu_alloc_rand(nw, seed + 5, -1, 1), *dw2 = tu_alloc_rand(nw, seed + 5, -1, 1);
    float *db1 = tu_alloc_rand(O, seed + 6, -1, 1), *db2 = tu_alloc_rand(O, seed + 6, -1, 1);
    al_conv2d_fwd(x, w, b, y1, B, C, H, W, O, KH, KW, s, p);
    al_conv2d_fwd_ref(x, w, b, y2, B, C, H, W, O, KH, KW, s, p);
    al_conv2d_bwd(x, w, dy, dx1, dw1, db1, B, C, H, W, O, KH, KW, s, p);
    al_conv2d_bwd_ref(x, w, dy, dx2, dw2, db2, B, C, H, W, O, KH, KW, s, p);
    double e[4] = {tu_max_rel_err(y1, y2, ny), tu_max_rel_err(dx1, dx2, nx),
                   tu_max_rel_err(dw1, dw2, nw), tu_max_rel_err(db1, db2, O)};
    double worst = 0;
    for (int i = 0; i < 4; i++) if (!(e[i] <= worst)) worst = e[i];
    if (!(worst <= 1e-5))
        print_message("B%d C%d H%d W%d O%d K%dx%d s%d p%d: y %.2g dx %.2g dw %.2g db %.2g\n",
                      B, C, H, W, O, KH, KW, s, p, e[0], e[1], e[2], e[3]);
    free(x); free(w); free(b); free(dy); free(y1); free(y2);
    free(dx1); free(dx2); free(dw1); free(dw2); free(db1); free(db2);
    return worst;
}

/* The grid of odd shapes from the brief: B 1/3, C 1/3/5, H,W 7/9/28, K 1/3/5, stride 1/2, pad 0/1/2. */
static void test_conv_fast_matches_ref_grid(void **st)
{
    (void)st;
    static const int Bs[] = {1, 3}, Cs[] = {1, 3, 5}, Ks[] = {1, 3, 5}, Ss[] = {1, 2}, Ps[] = {0, 1, 2};
    static const int HW[][2] = {{7, 7}, {9, 7}, {7, 28}, {28, 9}};
    int n = 0, bad = 0;
    for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) for (int h = 0; h < 4; h++)
    for (int k = 0; k < 3; k++) for (int s = 0; s < 2; s++) for (int p = 0; p < 3; p++) {
        int B = Bs[i], C = Cs[j], H = HW[h][0], W = HW[h][1], K = Ks[k];
        int O = 1 + (n % 5) * 2;   /* 1, 3, 5, 7, 9 */
        /* non-square kernels too: every third case uses K×(K-2|K) */
        int KW = (n % 3 == 0 && K > 1) ? K - 2 : K;
        if (H + 2 * Ps[p] < K || W + 2 * Ps[p] < KW) continue;
        double e = check_shape(B, C, H, W, O, K, KW, Ss[s], Ps[p], 100 + (uint64_t)n);
        if (!(e <= 1e-5)) bad++;
        n++;
    }
    print_message("conv grid: %d shapes, %d bad\n", n, bad);
    assert_true(n > 300);
    assert_int_equal(bad, 0);
}

/* The CNN baseline's second layer at a small batch, and a batch large enough to need chunking. */
static void test_conv_fast_matches_ref_cnn_shapes(void **st)
{
    (void)st;
    assert_true(check_shape(4, 32, 14, 14, 64, 3, 3, 1, 1, 7) <= 1e-5);
    assert_true(check_shape(5, 1, 28, 28, 32, 3, 3, 1, 1, 8) <= 1e-5);
    /* dw groups: B=20 → 16 groups of 1 or 2 images; O·K = 512·576 → the 4M-float cap allows 14 groups */
    assert_true(check_shape(20, 3, 9, 9, 5, 3, 3, 1, 1, 9) <= 1e-5);
    assert_true(check_shape(20, 64, 3, 3, 512, 3, 3, 1, 1, 12) <= 1e-5);
    /* 1×1 stride 1 unpadded: x is used as the im2col matrix directly */
    assert_true(check_shape(5, 7, 6, 9, 4, 1, 1, 1, 0, 13) <= 1e-5);
    assert_true(check_shape(1, 7, 6, 9, 4, 1, 1, 1, 0, 14) <= 1e-5);
    /* a kernel exactly the padded size (one output), and stride larger than the kernel */
    assert_true(check_shape(3, 2, 5, 6, 4, 7, 8, 1, 1, 10) <= 1e-5);
    assert_true(check_shape(2, 3, 11, 13, 4, 2, 2, 3, 1, 11) <= 1e-5);
}

/* NULL dx / dw / db / bias are all allowed and leave the other outputs unchanged; db has the same bits
 * whichever other outputs are asked for. */
static void test_conv_bwd_optional_outputs(void **st)
{
    (void)st;
    enum { B = 3, C = 2, H = 7, W = 9, O = 4, K = 3 };
    const int Ho = 7, Wo = 9;
    float *x = tu_alloc_rand(B * C * H * W, 1, -1, 1), *w = tu_alloc_rand(O * C * K * K, 2, -1, 1);
    float *dy = tu_alloc_rand(B * O * Ho * Wo, 3, -1, 1);
    float y1[B * O * Ho * Wo], y2[B * O * Ho * Wo];
    al_conv2d_fwd(x, w, NULL, y1, B, C, H, W, O, K, K, 1, 1);
    al_conv2d_fwd_ref(x, w, NULL, y2, B, C, H, W, O, K, K, 1, 1);
    assert_true(tu_max_rel_err(y1, y2, B * O * Ho * Wo) <= 1e-5);

    float dx1[B * C * H * W] = {0}, dx2[B * C * H * W] = {0}, dw1[O * C * K * K] = {0}, dw2[O * C * K * K] = {0};
    float db1[O] = {0}, db2[O] = {0};
    al_conv2d_bwd(x, w, dy, NULL, dw1, NULL, B, C, H, W, O, K, K, 1, 1);     /* weights only */
    al_conv2d_bwd_ref(x, w, dy, NULL, dw2, NULL, B, C, H, W, O, K, K, 1, 1);
    assert_true(tu_max_rel_err(dw1, dw2, O * C * K * K) <= 1e-5);
    al_conv2d_bwd(x, w, dy, dx1, NULL, NULL, B, C, H, W, O, K, K, 1, 1);     /* input only */
    al_conv2d_bwd_ref(x, w, dy, dx2, NULL, NULL, B, C, H, W, O, K, K, 1, 1);
    assert_true(tu_max_rel_err(dx1, dx2, B * C * H * W) <= 1e-5);
    al_conv2d_bwd(x, w, dy, NULL, NULL, db1, B, C, H, W, O, K, K, 1, 1);     /* bias only */
    al_conv2d_bwd_ref(x, w, dy, NULL, NULL, db2, B, C, H, W, O, K, K, 1, 1);
    assert_true(tu_max_rel_err(db1, db2, O) <= 1e-6);
    /* db taken inside the image loop (with dx, with dw) has the bits of its own pass */
    float db3[O] = {0}, db4[O] = {0};
    al_conv2d_bwd(x, w, dy, dx1, NULL, db3, B, C, H, W, O, K, K, 1, 1);
    al_conv2d_bwd(x, w, dy, NULL, dw1, db4, B, C, H, W, O, K, K, 1, 1);
    assert_memory_equal(db3, db1, sizeof db1);
    assert_memory_equal(db4, db1, sizeof db1);
    free(x); free(w); free(dy);
}

/* al_conv2d_bwd_fresh overwrites dx (filled with NaN first) and gives the bits of al_conv2d_bwd on a
 * zeroed dx: 1×1 (the direct GEMM) and 3×3 'same' (im2col/col2im), with and without dw, on a batch
 * large enough for the images to run in parallel and on one image. */
static void test_conv_bwd_fresh(void **st)
{
    (void)st;
    const int cases[][6] = {   /* B, C, H, W, O, K */
        {64, 16, 14, 14, 32, 3}, {64, 16, 14, 14, 32, 1}, {1, 3, 9, 7, 5, 3}, {2, 4, 6, 6, 3, 1},
    };
    for (int ci = 0; ci < 4; ci++) {
        const int B = cases[ci][0], C = cases[ci][1], H = cases[ci][2], W = cases[ci][3], O = cases[ci][4], K = cases[ci][5];
        const int pad = K / 2, nx = B * C * H * W, nw = O * C * K * K, ny = B * O * H * W;
        float *x = tu_alloc_rand(nx, 11, -1, 1), *w = tu_alloc_rand(nw, 12, -1, 1), *dy = tu_alloc_rand(ny, 13, -1, 1);
        float *dx1 = malloc((size_t)nx * sizeof(float)), *dx2 = calloc((size_t)nx, sizeof(float));
        float *dw1 = calloc((size_t)nw, sizeof(float)), *dw2 = calloc((size_t)nw, sizeof(float));
        assert_non_null(dx1); assert_non_null(dx2); assert_non_null(dw1); assert_non_null(dw2);
        for (int with_dw = 0; with_dw < 2; with_dw++) {
            for (int i = 0; i < nx; i++) { dx1[i] = NAN; dx2[i] = 0.f; }
            al_conv2d_bwd_fresh(x, w, dy, dx1, with_dw ? dw1 : NULL, NULL, B, C, H, W, O, K, K, 1, pad, 1);
            al_conv2d_bwd(x, w, dy, dx2, with_dw ? dw2 : NULL, NULL, B, C, H, W, O, K, K, 1, pad);
            if (memcmp(dx1, dx2, (size_t)nx * sizeof(float))) fail_msg("case %d (dw %d): dx bits differ", ci, with_dw);
        }
        assert_memory_equal(dw1, dw2, (size_t)nw * sizeof(float));
        free(x); free(w); free(dy); free(dx1); free(dx2); free(dw1); free(dw2);
    }
}

/* Hand values: x = 1..16 as 4×4, w = [[1,0],[0,-1]] → x[i][j] − x[i+1][j+1] = −5 everywhere (valid);
 * with pad 1, stride 2 the corners see only part of the kernel. */
static void test_conv_hand_values(void **st)
{
    (void)st;
    float x[16], w[4] = {1, 0, 0, -1}, b[1] = {0.5f}, y[9], yr[9];
    for (int i = 0; i < 16; i++) x[i] = (float)(i + 1);
    al_conv2d_fwd(x, w, b, y, 1, 1, 4, 4, 1, 2, 2, 1, 0);
    for (int i = 0; i < 9; i++) assert_float_equal(y[i], -4.5f, 0);
    /* pad 1 stride 2: Ho = Wo = 3; out(oh,ow) = x[2oh−1][2ow−1] − x[2oh][2ow] (zero outside) */
    float want[9];
    for (int oh = 0; oh < 3; oh++) for (int ow = 0; ow < 3; ow++) {
        int a = 2 * oh - 1, c = 2 * ow - 1;
        float v1 = (a >= 0 && c >= 0) ? x[a * 4 + c] : 0.f;
        float v2 = (2 * oh < 4 && 2 * ow < 4) ? x[2 * oh * 4 + 2 * ow] : 0.f;
        want[oh * 3 + ow] = v1 - v2 + 0.5f;
    }
    /* a few written out: (0,0) = 0 − 1 = −1; (1,1) = x[1][1] − x[2][2] = 6 − 11 = −5; (2,2) = x[3][3] − 0 = 16 */
    assert_float_equal(want[0], -0.5f, 0); assert_float_equal(want[4], -4.5f, 0); assert_float_equal(want[8], 16.5f, 0);
    al_conv2d_fwd(x, w, b, y, 1, 1, 4, 4, 1, 2, 2, 2, 1);
    al_conv2d_fwd_ref(x, w, b, yr, 1, 1, 4, 4, 1, 2, 2, 2, 1);
    for (int i = 0; i < 9; i++) { assert_float_equal(y[i], want[i], 0); assert_float_equal(yr[i], want[i], 0); }
    /* backward with dy = 1 for the valid conv: db = 9, dw[0] = Σ x[0..2][0..2] = 54, dw[3] = Σ x[1..3][1..3] = 99,
     * dx[0] = w[0] = 1 (only one window covers it), dx[15] = w[3] = −1, dx[5] = w0+w3 = 0 */
    float dy[9], dx[16] = {0}, dw[4] = {0}, db[1] = {0};
    for (int i = 0; i < 9; i++) dy[i] = 1;
    al_conv2d_bwd(x, w, dy, dx, dw, db, 1, 1, 4, 4, 1, 2, 2, 1, 0);
    assert_float_equal(db[0], 9, 0);
    assert_float_equal(dw[0], 54, 0); assert_float_equal(dw[3], 99, 0);
    assert_float_equal(dw[1], 63, 0); assert_float_equal(dw[2], 90, 0);
    assert_float_equal(dx[0], 1, 0); assert_float_equal(dx[15], -1, 0); assert_float_equal(dx[5], 0, 0);
    assert_float_equal(dx[3], 0, 0); assert_float_equal(dx[12], 0, 0);
}

/* Same inputs → bitwise-identical outputs, calls in any order (the scratch buffers are reused). */
static void test_conv_deterministic(void **st)
{
    (void)st;
    enum { B = 6, C = 8, H = 14, W = 14, O = 16, K = 3 };
    float *x = tu_alloc_rand(B * C * H * W, 1, -1, 1), *w = tu_alloc_rand(O * C * K * K, 2, -1, 1);
    float *b = tu_alloc_rand(O, 3, -1, 1), *dy = tu_alloc_rand(B * O * H * W, 4, -1, 1);
    float *y[2], *dx[2], *dw[2], *db[2];
    for (int r = 0; r < 2; r++) {
        y[r] = malloc(B * O * H * W * sizeof(float));
        dx[r] = calloc(B * C * H * W, sizeof(float)); dw[r] = calloc(O * C * K * K, sizeof(float)); db[r] = calloc(O, sizeof(float));
        if (r == 1) {   /* a different-sized call in between must not disturb anything */
            float *t = malloc(2 * 3 * 5 * 5 * sizeof(float));
            float *tx = tu_alloc_rand(2 * 2 * 9 * 9, 5, -1, 1), *tw = tu_alloc_rand(3 * 2 * 25, 6, -1, 1);
            al_conv2d_fwd(tx, tw, NULL, t, 2, 2, 9, 9, 3, 5, 5, 1, 0);
            free(t); free(tx); free(tw);
        }
        al_conv2d_fwd(x, w, b, y[r], B, C, H, W, O, K, K, 1, 1);
        al_conv2d_bwd(x, w, dy, dx[r], dw[r], db[r], B, C, H, W, O, K, K, 1, 1);
    }
    assert_memory_equal(y[0], y[1], B * O * H * W * sizeof(float));
    assert_memory_equal(dx[0], dx[1], B * C * H * W * sizeof(float));
    assert_memory_equal(dw[0], dw[1], O * C * K * K * sizeof(float));
    assert_memory_equal(db[0], db[1], O * sizeof(float));
    for (int r = 0; r < 2; r++) { free(y[r]); free(dx[r]); free(dw[r]); free(db[r]); }
    free(x); free(w); free(b); free(dy);
}

/* One thread against the default thread count on a layer big enough for the parallel paths
 * (images in parallel, dw in groups). The kernels' own reductions do not depend on the thread count;
 * the GEMM's split may in principle, so the check is to 1e-6 (it is bitwise with al_gemm today). */
static void test_conv_threads(void **st)
{
    (void)st;
    enum { B = 16, C = 8, H = 14, W = 14, O = 16, K = 3 };
    float *x = tu_alloc_rand(B * C * H * W, 1, -1, 1), *w = tu_alloc_rand(O * C * K * K, 2, -1, 1);
    float *b = tu_alloc_rand(O, 3, -1, 1), *dy = tu_alloc_rand(B * O * H * W, 4, -1, 1);
    float *y[2], *dx[2], *dw[2], *db[2];
    int nt = al_threads();
    for (int r = 0; r < 2; r++) {
        al_set_threads(r == 0 ? 1 : nt);
        y[r] = malloc(B * O * H * W * sizeof(float));
        dx[r] = calloc(B * C * H * W, sizeof(float)); dw[r] = calloc(O * C * K * K, sizeof(float)); db[r] = calloc(O, sizeof(float));
        al_conv2d_fwd(x, w, b, y[r], B, C, H, W, O, K, K, 1, 1);
        al_conv2d_bwd(x, w, dy, dx[r], dw[r], db[r], B, C, H, W, O, K, K, 1, 1);
    }
    al_set_threads(nt);
    assert_true(tu_max_rel_err(y[1], y[0], B * O * H * W) <= 1e-6);
    assert_true(tu_max_rel_err(dx[1], dx[0], B * C * H * W) <= 1e-6);
    assert_true(tu_max_rel_err(dw[1], dw[0], O * C * K * K) <= 1e-6);
    assert_true(tu_max_rel_err(db[1], db[0], O) <= 1e-6);
    print_message("1 vs %d threads bitwise equal: %s\n", nt,
                  !memcmp(y[0], y[1], B * O * H * W * sizeof(float)) && !memcmp(dw[0], dw[1], O * C * K * K * sizeof(float)) &&
                  !memcmp(dx[0], dx[1], B * C * H * W * sizeof(float)) ? "yes" : "no");
    for (int r = 0; r < 2; r++) { free(y[r]); free(dx[r]); free(dw[r]); free(db[r]); }
    free(x); free(w); free(b); free(dy);
}

/* The flat 'same' im2col and col2im (masked loads of the shifted plane) against the row-wise forms: the
 * forward output and every gradient bit for bit, on 'same' shapes with P a multiple of 16 and not, one
 * image (im2col threaded over rows) and a batch (images in parallel), on one thread and the default. */
static void test_conv_im2col_flat_bits(void **st)
{
    (void)st;
    const int cases[][6] = {   /* B, C, H, W, O, K (pad K/2) */
        {64, 1, 28, 28, 8, 3}, {6, 32, 14, 14, 64, 3}, {1, 32, 14, 14, 16, 3}, {3, 5, 9, 7, 4, 5},
        {2, 3, 16, 16, 5, 3}, {2, 2, 4, 4, 3, 7}, {1, 4, 1, 30, 3, 3}, {2, 3, 33, 5, 2, 9}, {1, 2, 120, 90, 2, 3},
    };
    const int nt = al_threads(), keep = al__im2col_flat;
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        const int B = cases[ci][0], C = cases[ci][1], H = cases[ci][2], W = cases[ci][3], O = cases[ci][4], K = cases[ci][5];
        const int pad = K / 2, nx = B * C * H * W, nw = O * C * K * K, ny = B * O * H * W;
        float *x = tu_alloc_rand(nx, 21 + ci, -1, 1), *w = tu_alloc_rand(nw, 22, -1, 1), *b = tu_alloc_rand(O, 23, -1, 1);
        float *dy = tu_alloc_rand(ny, 24, -1, 1);
        float *y[2], *dx[2], *dw[2], *db[2];
        for (int t = 0; t < 2; t++) {
            al_set_threads(t == 0 ? 1 : nt);
            for (int r = 0; r < 2; r++) {
                al__im2col_flat = r;
                y[r] = malloc((size_t)ny * sizeof(float));
                dx[r] = calloc((size_t)nx, sizeof(float)); dw[r] = calloc((size_t)nw, sizeof(float)); db[r] = calloc((size_t)O, sizeof(float));
                al_conv2d_fwd(x, w, b, y[r], B, C, H, W, O, K, K, 1, pad);
                al_conv2d_bwd(x, w, dy, dx[r], dw[r], db[r], B, C, H, W, O, K, K, 1, pad);
            }
            float *fr[2];   /* dx overwritten (fresh): filled with NaN first */
            for (int r = 0; r < 2; r++) {
                al__im2col_flat = r;
                fr[r] = malloc((size_t)nx * sizeof(float));
                for (int i = 0; i < nx; i++) fr[r][i] = NAN;
                al_conv2d_bwd_fresh(x, w, dy, fr[r], NULL, NULL, B, C, H, W, O, K, K, 1, pad, 1);
            }
            if (memcmp(fr[0], fr[1], (size_t)nx * sizeof(float)))
                fail_msg("case %zu (%d threads): flat col2im (fresh) bits differ", ci, t == 0 ? 1 : nt);
            free(fr[0]); free(fr[1]);
            if (memcmp(y[0], y[1], (size_t)ny * sizeof(float)) || memcmp(dx[0], dx[1], (size_t)nx * sizeof(float)) ||
                memcmp(dw[0], dw[1], (size_t)nw * sizeof(float)) || memcmp(db[0], db[1], (size_t)O * sizeof(float)))
                fail_msg("case %zu (%d threads): flat im2col bits differ", ci, t == 0 ? 1 : nt);
            assert_true(tu_max_rel_err(y[1], y[0], ny) <= 0);
            for (int r = 0; r < 2; r++) { free(y[r]); free(dx[r]); free(dw[r]); free(db[r]); }
        }
        free(x); free(w); free(b); free(dy);
    }
    al__im2col_flat = keep;
    al_set_threads(nt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv_hand_values),
        cmocka_unit_test(test_conv_fast_matches_ref_grid),
        cmocka_unit_test(test_conv_fast_matches_ref_cnn_shapes),
        cmocka_unit_test(test_conv_bwd_optional_outputs),
        cmocka_unit_test(test_conv_bwd_fresh),
        cmocka_unit_test(test_conv_deterministic),
        cmocka_unit_test(test_conv_threads),
        cmocka_unit_test(test_conv_im2col_flat_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
