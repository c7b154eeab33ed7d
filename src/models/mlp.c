/* mlp.c — the image model with no prior at all: the pixels, flattened, through two hidden layers of
 * `hidden` units (default 256) with ReLU, then a linear layer to the classes. It sees every
 * position with its own weights, so a fixed permutation of the pixels costs it nothing: the
 * reference against which the CNN's and the window's locality priors are measured. The worked
 * example of docs/architecture.md ("adding an image model"): this file and one table entry. */
#include "image_impl.h"
#include "attnlab/ops.h"

void al__mlp_defaults(al_model_config *cfg) { cfg->hidden = 256; }

al_status al__mlp_check(const al_model_config *cfg, al_error *err)
{
    if (cfg->hidden < 1) return al_seterr(err, "%s: hidden size must be positive, got %d", cfg->name, cfg->hidden);
    return AL_OK;
}

al_status al__mlp_init(al_model *m)
{
    const al_model_config *cfg = &m->cfg;
    int in = cfg->channels * cfg->height * cfg->width, h = cfg->hidden;
    AL__ADD(m, m->t[0], "fc1.weight", 2, AL__S2(h, in), al_init_kaiming(in));
    AL__ADD(m, m->t[1], "fc1.bias", 1, AL__S1(h), al_init_kaiming(in));
    AL__ADD(m, m->t[2], "fc2.weight", 2, AL__S2(h, h), al_init_kaiming(h));
    AL__ADD(m, m->t[3], "fc2.bias", 1, AL__S1(h), al_init_kaiming(h));
    AL__ADD(m, m->t[4], "fc3.weight", 2, AL__S2(cfg->classes, h), al_init_kaiming(h));
    AL__ADD(m, m->t[5], "fc3.bias", 1, AL__S1(cfg->classes), al_init_kaiming(h));
    return AL_OK;
oom:
    return AL_ERR;
}

al_tensor *al__mlp_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */)
{
    if (!x) return NULL;
    al_tensor *h = al_reshape(c, x, 2, (int[]){x->shape[0], x->shape[1] * x->shape[2] * x->shape[3]});  /* (B,C·H·W) */
    h = al_relu(c, al_linear(c, h, m->t[0], m->t[1]));                                                   /* (B,hidden) */
    h = al_relu(c, al_linear(c, h, m->t[2], m->t[3]));                                                   /* (B,hidden) */
    return al_linear(c, h, m->t[4], m->t[5]);                                                            /* (B,classes) */
}
