/* winograd_impl.h — the Winograd F(2×2, 3×3) convolution fused with 2×2 max pooling (kernels/winograd.c),
 * behind ops/conv.c's al_conv2d_maxpool2(_relu). */
#ifndef ATTNLAB_WINOGRAD_IMPL_H
#define ATTNLAB_WINOGRAD_IMPL_H
#include <stdint.h>

extern int al__wino_off;   /* nonzero: every convolution takes the direct (im2col) path */
/* The shapes this path takes: 3×3, stride 1, pad 1, even H and W, at least 4 input channels. */
int al__wino_ok(int C, int H, int W, int O, int KH, int KW, int stride, int pad);
/* out (B, O, H/2, W/2) = maxpool2(conv3x3(x, w) + b) (ReLU'd when relu), arg (or NULL) the index of each
 * window's max in its (H, W) plane, as al_maxpool2d's. 0, or -1 when out of memory (nothing written). */
int al__wino_conv_pool_fwd(const float *x, const float *w, const float *b, float *out, int32_t *arg, int relu,
                           int B, int C, int H, int W, int O);
/* The backward from g (B, O, H/2, W/2), the gradient of out: dx (NULL: not wanted) written when dx_fresh
 * else added to; dw (O, C, 3, 3) and db (O) added to (NULL: not wanted). 0, or -1 when out of memory. */
int al__wino_conv_pool_bwd(const float *x, const float *w, const float *g, const float *out, const int32_t *arg, int relu,
                           float *dx, int dx_fresh, float *dw, float *db, int B, int C, int H, int W, int O);
#endif
