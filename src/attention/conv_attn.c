/* conv_attn.c — a K×K convolution as an exact K²-head window attention layer
 * (Cordonnier, Loukas & Jaggi, ICLR 2020). See attention.h for the construction.
 *
 * Why ReLU and q = k = 0: the score of head h at offset o is rel_bias[h][o] = [o == h], so the
 * ReLU normaliser gives weight exactly 1 to the target offset and exactly 0 to the others. A
 * softmax could only approximate the one-hot (a finite bias leaks e^−Δ), and at the image border,
 * where the target key is absent, it would put all the weight on the present keys; with ReLU
 * an absent target leaves the head's output at 0, which is the zero-padded conv.
 */
#include "attnlab/attention.h"
#include "attnlab/kernels.h"
#include <stdlib.h>
#include <string.h>

al_status al_conv_attn_build(al_conv_attn *ca, const float *w, const float *b, int O, int C, int K, al_error *err)
{
    memset(ca, 0, sizeof *ca);
    if (!w || O < 1 || C < 1 || K < 1 || !(K & 1))
        return al_seterr(err, "conv_attn: need weights (O,C,K,K) with O, C >= 1 and odd K, got O=%d C=%d K=%d", O, C, K);
    int K2 = K * K;
    ca->C = C; ca->O = O; ca->K = K; ca->heads = K2;
    ca->rel_bias = calloc((size_t)K2 * K2, sizeof(float));
    ca->w_out = malloc((size_t)O * K2 * C * sizeof(float));
    ca->b_out = calloc((size_t)O, sizeof(float));
    if (!ca->rel_bias || !ca->w_out || !ca->b_out) { al_conv_attn_free(ca); return al_seterr(err, "conv_attn: out of memory"); }
    for (int h = 0; h < K2; h++) ca->rel_bias[(size_t)h * K2 + h] = 1.0f;
    for (int o = 0; o < O; o++) {
        for (int h = 0; h < K2; h++)          /* h = ky·K + kx = (dy+r)·K + (dx+r) */
            for (int c = 0; c < C; c++)
                ca->w_out[((size_t)o * K2 + h) * C + c] = w[((size_t)o * C + c) * K2 + h];
        if (b) ca->b_out[o] = b[o];
    }
    return AL_OK;
}

void al_conv_attn_free(al_conv_attn *ca)
{
    free(ca->rel_bias); free(ca->w_out); free(ca->b_out);
    ca->rel_bias = ca->w_out = ca->b_out = NULL;
}

al_tensor *al_conv_attn_forward(al_ctx *c, const al_conv_attn *ca, al_tensor *x)
{
    if (!al_ok(c) || !x || !ca) return NULL;
    char b1[64];
    if (x->ndim != 4 || x->shape[1] != ca->C)
        return al_fail(c, "conv_attn: x %s must be (B, %d, H, W)", al_shape_str(x, b1, sizeof b1), ca->C);
    const int B = x->shape[0], C = ca->C, Hh = x->shape[2], W = x->shape[3], N = Hh * W, K2 = ca->heads, O = ca->O;
    int saved = c->grad_enabled;
    c->grad_enabled = 0;
    al_tensor *q = al_zeros(c, 4, (int[]){B, K2, N, 1}), *k = al_zeros(c, 4, (int[]){B, K2, N, 1});
    al_tensor *v = al_new(c, 4, (int[]){B, K2, N, C});
    al_tensor *rel = al_wrap(c, ca->rel_bias, 2, (int[]){K2, K2});
    al_tensor *y = al_new(c, 4, (int[]){B, O, Hh, W});
    float *z = al_arena_alloc(&c->arena, (size_t)N * K2 * C * sizeof(float));
    if (!q || !k || !v || !rel || !y || !z) { c->grad_enabled = saved; return al_ok(c) ? al_fail(c, "conv_attn: out of memory") : NULL; }
    /* every head's values are the input tokens: v[b][h][n][c] = x[b][c][n] */
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++)
            for (int cc = 0; cc < C; cc++) v->data[((size_t)b * K2 * N + n) * C + cc] = x->data[((size_t)b * C + cc) * N + n];
    for (int b = 0; b < B; b++)
        for (int h = 1; h < K2; h++)
            memcpy(v->data + ((size_t)b * K2 + h) * N * C, v->data + (size_t)b * K2 * N * C, (size_t)N * C * sizeof(float));
    al_attn_desc d = {.pattern = al_pattern_window2d(Hh, W, ca->K, ca->K), .score = AL_SCORE_DOT,
                      .norm = AL_NORM_RELU, .scale = 1.0f};
    al_tensor *att = al_attention(c, &d, q, k, v, NULL, NULL, rel, NULL);   /* (B, K², N, C) */
    c->grad_enabled = saved;
    if (!att) return NULL;
    for (int b = 0; b < B; b++) {
        /* z (N, K²·C): the heads concatenated per token; y_b (O, N) = w_out · zᵀ + b_out */
        for (int h = 0; h < K2; h++)
            for (int n = 0; n < N; n++)
                memcpy(z + ((size_t)n * K2 + h) * C, att->data + (((size_t)b * K2 + h) * N + n) * C, (size_t)C * sizeof(float));
        float *yb = y->data + (size_t)b * O * N;
        for (int o = 0; o < O; o++) for (int n = 0; n < N; n++) yb[(size_t)o * N + n] = ca->b_out[o];
        al_gemm(0, 1, O, N, K2 * C, 1.0f, ca->w_out, K2 * C, z, K2 * C, 1.0f, yb, N);
    }
    return y;
}
