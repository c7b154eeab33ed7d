/* image_impl.h — the per-model functions the image model table (image.c) points at (internal). */
#ifndef ATTNLAB_MODELS_IMAGE_IMPL_H
#define ATTNLAB_MODELS_IMAGE_IMPL_H
#include "attnlab/models.h"

/* cnn.c: cnn and conv-attn share the checks and the parameters */
al_status  al__cnn_check(const al_model_config *cfg, al_error *err);
al_status  al__cnn_init(al_model *m);
al_tensor *al__cnn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);
al_tensor *al__conv_attn_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);

/* transformer.c: sa (full attention) and local (windowed attention) */
void       al__local_defaults(al_model_config *cfg);
al_status  al__sa_check(const al_model_config *cfg, al_error *err);
al_status  al__local_check(const al_model_config *cfg, al_error *err);
al_status  al__transformer_init(al_model *m);
al_tensor *al__transformer_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);
al_status  al__hybrid_check(const al_model_config *cfg, al_error *err);
al_status  al__hybrid_init(al_model *m);
al_tensor *al__hybrid_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);

/* transformer.c: gpsa (sa with gated positional self-attention) */
void       al__gpsa_defaults(al_model_config *cfg);
al_status  al__gpsa_check(const al_model_config *cfg, al_error *err);
al_status  al__gpsa_init(al_model *m);
void       al__gpsa_post_init(al_model *m);

/* mlp.c: no prior at all, pixels → hidden → hidden → classes */
void       al__mlp_defaults(al_model_config *cfg);
al_status  al__mlp_check(const al_model_config *cfg, al_error *err);
al_status  al__mlp_init(al_model *m);
al_tensor *al__mlp_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);

void       al__conv_attn_ft_defaults(al_model_config *cfg);
al_status  al__conv_attn_ft_check(const al_model_config *cfg, al_error *err);
al_status  al__conv_attn_ft_init(al_model *m);
void       al__conv_attn_ft_post_init(al_model *m);
al_status  al__conv_attn_ft_from(al_model *m, const al_model *src, al_error *err);
al_tensor *al__conv_attn_ft_forward(al_ctx *c, al_model *m, al_tensor *x /* (B,C,H,W) */);

/* Register a parameter of m: `shape` (ndim) in a compound literal; jumps to the caller's `oom`. */
#define AL__ADD(m, dst, name, nd, shp, ini) \
    do { if (!((dst) = al_params_add(&(m)->params, (name), (nd), (int[])shp, (ini)))) goto oom; } while (0)
#define AL__S1(a) {a}
#define AL__S2(a, b) {a, b}
#define AL__S4(a, b, c2, d) {a, b, c2, d}
#endif
