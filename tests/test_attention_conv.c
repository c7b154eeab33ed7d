/* test_attention_conv.c — a K×K conv2d reproduced exactly by the K²-head window attention
 * construction (al_conv_attn_*), compared with a naive conv loop written here. */
#include "testutil.h"
#include "attnlab/attention.h"
#include "attnlab/kernels.h"
#include <stdlib.h>
#include <string.h>

/* y (B,O,H,W) = conv2d(x (B,C,H,W), w (O,C,K,K), b (O)), stride 1, zero padding K/2, in double. */
static void naive_conv(const float *x, const float *w, const float *b, float *y, int B, int C, int H, int W, int O, int K)
{
    int r = K / 2;
    for (int n = 0; n < B; n++)
        for (int o = 0; o < O; o++)
            for (int i = 0; i < H; i++)
                for (int j = 0; j < W; j++) {
                    double s = b ? b[o] : 0;
                    for (int c = 0; c < C; c++)
                        for (int ky = 0; ky < K; ky++)
                            for (int kx = 0; kx < K; kx++) {
                                int yy = i + ky - r, xx = j + kx - r;
                                if (yy < 0 || yy >= H || xx < 0 || xx >= W) continue;
                                s += (double)w[((o * C + c) * K + ky) * K + kx] * x[((n * C + c) * H + yy) * W + xx];
                            }
                    y[((n * O + o) * H + i) * W + j] = (float)s;
                }
}

static void check_conv(int K, int C, int O, int H, int W, int B, int with_bias)
{
    float *x = tu_alloc_rand((int64_t)B * C * H * W, 1 + K, -1, 1);
    float *w = tu_alloc_rand((int64_t)O * C * K * K, 2 + K, -0.5f, 0.5f);
    float *b = tu_alloc_rand(O, 3 + K, -0.5f, 0.5f);
    float *ref = malloc((size_t)B * O * H * W * sizeof(float));
    naive_conv(x, w, with_bias ? b : NULL, ref, B, C, H, W, O, K);
    al_conv_attn ca;
    al_error err = {{0}};
    assert_int_equal(al_conv_attn_build(&ca, w, with_bias ? b : NULL, O, C, K, &err), AL_OK);
    assert_int_equal(ca.heads, K * K);
    al_ctx *c = al_ctx_new(1);
    al_tensor *xt = al_wrap(c, x, 4, (int[]){B, C, H, W});
    al_tensor *y = al_conv_attn_forward(c, &ca, xt);
    if (!y) fail_msg("conv_attn_forward: %s", al_ctx_error(c));
    assert_int_equal(y->shape[0], B); assert_int_equal(y->shape[1], O);
    assert_int_equal(y->shape[2], H); assert_int_equal(y->shape[3], W);
    double e = tu_max_abs_err(y->data, ref, y->numel);
    print_message("conv %dx%d C=%d O=%d %dx%d B=%d: max abs err %.3g\n", K, K, C, O, H, W, B, e);
    assert_true(e <= 1e-4);
    /* and the library's own conv reference agrees with the loop above */
    float *ref2 = malloc((size_t)B * O * H * W * sizeof(float));
    al_conv2d_fwd_ref(x, w, with_bias ? b : NULL, ref2, B, C, H, W, O, K, K, 1, K / 2);
    assert_true(tu_max_abs_err(y->data, ref2, y->numel) <= 1e-4);
    free(ref2);
    assert_int_equal(c->ntape, 0);   /* forward only */
    al_ctx_free(c);
    al_conv_attn_free(&ca);
    free(x); free(w); free(b); free(ref);
}

static void test_conv3_as_attention(void **st) { (void)st; check_conv(3, 4, 8, 9, 9, 2, 1); }
static void test_conv5_as_attention(void **st) { (void)st; check_conv(5, 4, 8, 9, 9, 2, 1); }
/* Non-square image smaller than the kernel in one direction, no bias, K = 7. */
static void test_conv_odd_shapes(void **st) { (void)st; check_conv(7, 3, 5, 4, 11, 1, 0); check_conv(1, 2, 3, 5, 5, 2, 1); }

static void test_conv_attn_errors(void **st)
{
    (void)st;
    al_conv_attn ca;
    al_error err = {{0}};
    float w[16] = {0};
    assert_int_equal(al_conv_attn_build(&ca, w, NULL, 1, 1, 4, &err), AL_ERR);   /* even K */
    assert_non_null(strstr(err.msg, "odd"));
    assert_int_equal(al_conv_attn_build(&ca, w, NULL, 1, 1, 3, &err), AL_OK);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 4, (int[]){1, 2, 4, 4});                        /* C = 2, not 1 */
    assert_null(al_conv_attn_forward(c, &ca, x));
    assert_non_null(strstr(al_ctx_error(c), "conv_attn"));
    al_ctx_free(c);
    al_conv_attn_free(&ca);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv3_as_attention),
        cmocka_unit_test(test_conv5_as_attention),
        cmocka_unit_test(test_conv_odd_shapes),
        cmocka_unit_test(test_conv_attn_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
