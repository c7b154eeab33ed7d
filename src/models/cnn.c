/* cnn.c — the cnn image model and conv-attn (the same parameters, the convs computed as attention);
 * entries of the model table in image.c. Layers, names and initialisation are the PyTorch peer's. */
#include "image_impl.h"
#include "attnlab/ops.h"
#include <string.h>

al_status al__cnn_check(const al_model_config *cfg, al_error *err)
{
    if (cfg->height < 4 || cfg->width < 4)
        return al_seterr(err, "%s: images must be at least 4x4, got %dx%d", cfg->name, cfg->height, cfg->width);
    return AL_OK;
}

al_status al__cnn_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    int C = cfg->channels, h2 = cfg->height / 2 / 2, w2 = cfg->width / 2 / 2, F = 64 * h2 * w2;
    AL__ADD(m, m->c1_w, "c1.weight", 4, AL__S4(32, C, 3, 3), al_init_kaiming(C * 9));
    AL__ADD(m, m->c1_b, "c1.bias", 1, AL__S1(32), al_init_kaiming(C * 9));
    AL__ADD(m, m->c2_w, "c2.weight", 4, AL__S4(64, 32, 3, 3), al_init_kaiming(32 * 9));
    AL__ADD(m, m->c2_b, "c2.bias", 1, AL__S1(64), al_init_kaiming(32 * 9));
    AL__ADD(m, m->fc_w, "fc.weight", 2, AL__S2(cfg->classes, F), al_init_kaiming(F));
    AL__ADD(m, m->fc_b, "fc.bias", 1, AL__S1(cfg->classes), al_init_kaiming(F));
    return AL_OK;
oom:
    return AL_ERR;
}

al_tensor *al__cnn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    /* relu·maxpool = maxpool·relu (relu is monotone), forward and gradient, bitwise: the relu runs on
     * the 4× smaller pooled map; conv + pool + relu are one op (al_conv2d_maxpool2_relu), with no
     * full-size conv output and no pass of its own for the relu. conv1 (one input channel) is im2col +
     * GEMM, the same bits as al_relu(al_maxpool2d(al_conv2d(..), 2, 2)); conv2 (32 channels) runs
     * Winograd's F(2×2, 3×3), its 2×2 output blocks the pooling windows (kernels/winograd.c). */
    al_tensor *h = al_conv2d_maxpool2_relu(c, x, m->c1_w, m->c1_b, 1);   /* (B,32,H/2,W/2) */
    h = al_conv2d_maxpool2_relu(c, h, m->c2_w, m->c2_b, 1);             /* (B,64,H/4,W/4) */
    if (!h) return NULL;
    h = al_reshape(c, h, 2, (int[]){h->shape[0], h->shape[1] * h->shape[2] * h->shape[3]});
    return al_linear(c, h, m->fc_w, m->fc_b);                                                    /* (B,classes) */
}

/* The cnn with both convs computed by the exact conv-as-attention construction (attention.h). */
al_tensor *al__conv_attn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    if (!m->ca_ready) {
        al_error e = {{0}};
        memset(m->ca, 0, sizeof m->ca);
        if (al_conv_attn_build(&m->ca[0], m->c1_w->data, m->c1_b->data, 32, m->cfg.channels, 3, &e) != AL_OK ||
            al_conv_attn_build(&m->ca[1], m->c2_w->data, m->c2_b->data, 64, 32, 3, &e) != AL_OK) {
            al_conv_attn_free(&m->ca[0]); al_conv_attn_free(&m->ca[1]);
            return al_fail(c, "conv-attn: %s", e.msg);
        }
        m->ca_ready = 1;
    }
    al_tensor *h = al_maxpool2d(c, al_relu(c, al_conv_attn_forward(c, &m->ca[0], x)), 2, 2);  /* (B,32,H/2,W/2) */
    h = al_maxpool2d(c, al_relu(c, al_conv_attn_forward(c, &m->ca[1], h)), 2, 2);            /* (B,64,H/4,W/4) */
    if (!h) return NULL;
    h = al_reshape(c, h, 2, (int[]){h->shape[0], h->shape[1] * h->shape[2] * h->shape[3]});
    return al_linear(c, h, m->fc_w, m->fc_b);                                                    /* (B,classes) */
}
