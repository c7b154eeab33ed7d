/* conv_attn_ft.c — conv-attn-ft: the cnn with each 3×3 conv replaced by a trainable 9-head window
 * attention layer whose window may be wider than the conv (Cordonnier, Loukas & Jaggi, ICLR 2020:
 * "a self-attention layer can express any convolution"; here it starts as one and may learn to look
 * further): a receptive field that starts as a CNN and may grow.
 *
 * One layer, input x (B,C,H,W) as N = H·W tokens t (B,N,C):
 *   q_h = t W_q,h   k_h = t W_k,h          (8 dims per head; W_q starts at 0, W_k random)
 *   score_h(i, j) = q_h(i)·k_h(j) + rel_h[offset(j − i)]     over the win×win window around i
 *   a_h(i, j) = ReLU(score_h(i, j))       (as conv-attn's exact construction)
 *   z_h(i) = Σ_j a_h(i, j) t(j) / max(1, Σ_j a_h(i, j))   (every head's values are the tokens
 *                                          themselves; the mass bound keeps a wide window's summed
 *                                          weight at most 1 once training spreads it, and is exactly
 *                                          a division by 1 — nothing — at the start)
 *   y(i) = W_out [z_1(i) … z_9(i)] + b    (B,N,O) → (B,O,H,W); then ReLU and maxpool as the cnn.
 * Initialisation (random or from a trained cnn): rel_h is one-hot at head h's conv offset (dy, dx) =
 * (h / 3 − 1, h % 3 − 1) and W_q = 0, so every score is exactly 1 at that offset and 0 elsewhere: the
 * layer IS the zero-padded 3×3 conv with W_out[o][h·C + c] = w[o][c][h], al_conv_attn_build's weights
 * (an absent target key — the border — leaves the head at 0, as zero padding does). Built from a cnn,
 * the model gives the cnn's outputs to rounding and its predictions exactly. Training then moves rel (every offset of the
 * window, not only the 3×3 core: a positional receptive field) and W_q, W_k (content: once W_q leaves
 * 0, q·k is non-zero at every offset, so ReLU passes gradient to the offsets outside the core).
 * --window 3|5|7|…|full (cfg->window; 0 = full: 2·side − 1, every key of the layer's grid).
 */
#include "image_impl.h"
#include "attnlab/attention.h"
#include "attnlab/io.h"
#include "attnlab/ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADS 9   /* 3×3 */
#define DK 8      /* query/key dims per head */

/* The window side of layer l (0, 1) on its grid: cfg->window, or every key (0 = full). */
static int layer_grid(const al_model_config *cfg, int l, int *h, int *w)
{
    *h = l ? cfg->height / 2 : cfg->height;
    *w = l ? cfg->width / 2 : cfg->width;
    if (cfg->window > 0) return cfg->window;
    return 2 * (*h > *w ? *h : *w) - 1;
}

void al__conv_attn_ft_defaults(al_model_config *cfg) { cfg->window = 5; }

al_status al__conv_attn_ft_check(const al_model_config *cfg, al_error *err)
{
    if (al__cnn_check(cfg, err) != AL_OK) return AL_ERR;
    if (cfg->window != 0 && (cfg->window < 3 || cfg->window % 2 == 0))
        return al_seterr(err, "%s: --window must be odd and at least 3 (the conv's 3x3), or full; got %d", cfg->name, cfg->window);
    return AL_OK;
}

al_status al__conv_attn_ft_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    const int C = cfg->channels, h2 = cfg->height / 2 / 2, w2 = cfg->width / 2 / 2, F = 64 * h2 * w2;
    const int cin[2] = {C, 32}, cout[2] = {32, 64};
    const al_init zeros = {AL_INIT_ZEROS, 0.f};
    for (int l = 0; l < 2; l++) {
        int gh, gw, win = layer_grid(cfg, l, &gh, &gw);
        char nm[4][32];
        snprintf(nm[0], 32, "l%d.rel_bias", l + 1); snprintf(nm[1], 32, "l%d.q.weight", l + 1);
        snprintf(nm[2], 32, "l%d.k.weight", l + 1); snprintf(nm[3], 32, "l%d.out.weight", l + 1);
        AL__ADD(m, m->t[5 * l + 0], nm[0], 2, AL__S2(HEADS, win * win), zeros);           /* one-hot: post_init */
        AL__ADD(m, m->t[5 * l + 1], nm[1], 2, AL__S2(HEADS * DK, cin[l]), zeros);
        AL__ADD(m, m->t[5 * l + 2], nm[2], 2, AL__S2(HEADS * DK, cin[l]), al_init_kaiming(cin[l]));
        AL__ADD(m, m->t[5 * l + 3], nm[3], 2, AL__S2(cout[l], HEADS * cin[l]), al_init_kaiming(cin[l] * 9));
        snprintf(nm[0], 32, "l%d.out.bias", l + 1);
        AL__ADD(m, m->t[5 * l + 4], nm[0], 1, AL__S1(cout[l]), al_init_kaiming(cin[l] * 9));
    }
    AL__ADD(m, m->t[10], "fc.weight", 2, AL__S2(cfg->classes, F), al_init_kaiming(F));
    AL__ADD(m, m->t[11], "fc.bias", 1, AL__S1(cfg->classes), al_init_kaiming(F));
    return AL_OK;
oom:
    return AL_ERR;
}

/* rel_bias of both layers: 1 at each head's 3×3 offset, 0 elsewhere (whatever it held). */
void al__conv_attn_ft_post_init(al_model *m)
{
    for (int l = 0; l < 2; l++) {
        int gh, gw, win = layer_grid(&m->cfg, l, &gh, &gw), r = win / 2;
        float *rel = m->t[5 * l]->data;
        memset(rel, 0, (size_t)HEADS * win * win * sizeof(float));
        for (int h = 0; h < HEADS; h++) {
            int dy = h / 3 - 1, dx = h % 3 - 1;
            rel[(size_t)h * win * win + (size_t)(dy + r) * win + (dx + r)] = 1.0f;
        }
    }
}

/* From a trained cnn of the same images and classes: the conv weights into W_out (the exact
 * construction), the biases and the final linear layer as they are; rel and W_q as post_init. */
al_status al__conv_attn_ft_from(al_model *m, const al_model *cnn, al_error *err)
{
    const al_model_config *a = &m->cfg, *b = &cnn->cfg;
    if (strcmp(b->name, "cnn") || a->channels != b->channels || a->height != b->height || a->width != b->width ||
        a->classes != b->classes)
        return al_seterr(err, "%s is built from a cnn of %dx%dx%d images and %d classes, not a %s of %dx%dx%d and %d",
                         a->name, a->channels, a->height, a->width, a->classes, b->name, b->channels, b->height, b->width,
                         b->classes);
    const al_tensor *cw[2] = {cnn->c1_w, cnn->c2_w}, *cb[2] = {cnn->c1_b, cnn->c2_b};
    for (int l = 0; l < 2; l++) {   /* W_out and b are conv-attn's exact construction (attention.h) */
        const int O = cw[l]->shape[0], C = cw[l]->shape[1];
        al_conv_attn ca;
        if (al_conv_attn_build(&ca, cw[l]->data, cb[l]->data, O, C, 3, err) != AL_OK) return AL_ERR;
        memcpy(m->t[5 * l + 3]->data, ca.w_out, (size_t)O * HEADS * C * sizeof(float));
        memcpy(m->t[5 * l + 4]->data, ca.b_out, (size_t)O * sizeof(float));
        al_conv_attn_free(&ca);
        memset(m->t[5 * l + 1]->data, 0, (size_t)m->t[5 * l + 1]->numel * sizeof(float));
    }
    memcpy(m->t[10]->data, cnn->fc_w->data, (size_t)cnn->fc_w->numel * sizeof(float));
    memcpy(m->t[11]->data, cnn->fc_b->data, (size_t)cnn->fc_b->numel * sizeof(float));
    al__conv_attn_ft_post_init(m);
    return AL_OK;
}

/* One layer: x (B,C,H,W) → (B,O,H,W). */
static al_tensor *attn_conv(al_ctx *c, al_model *m, int l, al_tensor *x)
{
    if (!x) return NULL;
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], N = H * W;
    int gh, gw, win = layer_grid(&m->cfg, l, &gh, &gw);
    /* the window's weights on the tape and their gradient: 2 floats per (image, head, query, offset),
     * 11 GB for a batch of 64 at window full on 28x28 (measured: ~1 image/s); refused with the sizes
     * rather than swapped or killed */
    al_error me = {{0}};
    if (al_mem_check(al_size_mul(al_size_mul((uint64_t)B * HEADS, (uint64_t)N), al_size_mul((uint64_t)win * win, 2 * sizeof(float))),
                     &me, "conv-attn-ft layer %d: window %dx%d over %dx%d tokens for a batch of %d", l + 1, win, win, H, W, B))
        return al_fail(c, "%s", me.msg);
    al_tensor *t = al_reshape(c, al_permute(c, x, (int[]){0, 2, 3, 1}), 3, (int[]){B, N, C});   /* (B,N,C) */
    /* every head's values are the tokens and a 1 (whose weighted sum is the head's mass): a linear map
     * with the fixed weight [I; 0; I; 0; …] (9(C+1), C) and bias [0…0 1; …], so the gradient of the nine
     * copies sums back into t */
    const int V = C + 1;
    float *rep = al_arena_alloc(&c->arena, (size_t)HEADS * V * (C + 1) * sizeof(float));
    if (!rep) return al_ok(c) ? al_fail(c, "conv-attn-ft: out of memory") : NULL;
    float *one = rep + (size_t)HEADS * V * C;
    memset(rep, 0, (size_t)HEADS * V * (C + 1) * sizeof(float));
    for (int h = 0; h < HEADS; h++) {
        for (int i = 0; i < C; i++) rep[((size_t)h * V + i) * C + i] = 1.0f;
        one[(size_t)h * V + C] = 1.0f;
    }
    al_tensor *id = al_wrap(c, rep, 2, (int[]){HEADS * V, C}), *idb = al_wrap(c, one, 1, (int[]){HEADS * V});
    al_tensor *q = al_split_heads(c, al_linear(c, t, m->t[5 * l + 1], NULL), HEADS);          /* (B,9,N,8) */
    al_tensor *k = al_split_heads(c, al_linear(c, t, m->t[5 * l + 2], NULL), HEADS);
    al_tensor *v = al_split_heads(c, al_linear(c, t, id, idb), HEADS);                       /* (B,9,N,C+1) */
    al_attn_desc d = {.pattern = al_pattern_window2d(H, W, win, win), .score = AL_SCORE_DOT, .norm = AL_NORM_RELU,
                      .scale = 1.0f};
    al_tensor *a = al_mass_normalize(c, al_attention(c, &d, q, k, v, NULL, NULL, m->t[5 * l], NULL));   /* (B,9,N,C) */
    al_tensor *y = al_linear(c, al_merge_heads(c, a), m->t[5 * l + 3], m->t[5 * l + 4]);      /* (B,N,O) */
    if (!y) return NULL;
    return al_reshape(c, al_permute(c, y, (int[]){0, 2, 1}), 4, (int[]){B, y->shape[2], H, W});
}

al_tensor *al__conv_attn_ft_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    /* the cnn's order: relu(maxpool(conv)) */
    al_tensor *h = al_relu(c, al_maxpool2d(c, attn_conv(c, m, 0, x), 2, 2));   /* (B,32,H/2,W/2) */
    h = al_relu(c, al_maxpool2d(c, attn_conv(c, m, 1, h), 2, 2));              /* (B,64,H/4,W/4) */
    if (!h) return NULL;
    h = al_reshape(c, h, 2, (int[]){h->shape[0], h->shape[1] * h->shape[2] * h->shape[3]});
    return al_linear(c, h, m->t[10], m->t[11]);
}
