/* attnlab/kernels.h — the raw, non-differentiable compute kernels under the ops.
 *
 * Every fast kernel has a naive reference (suffix _ref) that the tests compare it against.
 * Pointers are row-major float32; shape comments give the logical sizes.
 */
#ifndef ATTNLAB_KERNELS_H
#define ATTNLAB_KERNELS_H
#include "tensor.h"   /* the FLOP counter (al_flops_add) the kernels report to */
#include <stdint.h>

/* C (M,N) = alpha · op(A) · op(B) + beta · C, op = transpose when ta/tb.
 * A is (M,K) row-major with leading dimension lda (or (K,M) when ta), likewise B.
 * Parallel over OpenMP threads when called outside a parallel region; serial inside one. */
void al_gemm(int ta, int tb, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
void al_gemm_ref(int ta, int tb, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
/* C (M,N) = alpha · op(A) · op(B) + bias, bias (N) added to every row (a linear layer's forward): the same
 * bits as filling C's rows with bias and calling al_gemm with beta = 1, without writing and re-reading C
 * first (the micro-kernel adds bias where it would have loaded C). */
void al_gemm_bias(int ta, int tb, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, const float *bias, float *C, int ldc);
/* Same as al_gemm but never spawns threads (for use inside a parallel loop). */
void al_gemm_serial(int ta, int tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
const char *al_gemm_backend(void);   /* "openblas" or "attnlab" */
/* attnlab's own blocked kernel only (never OpenBLAS), threaded like al_gemm: for benchmarks and tests.
 * Bitwise identical to al_gemm_serial for any thread count. */
void al_gemm_attnlab(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc);
const char *al_gemm_isa(void);       /* micro-kernel in use: "avx512", "avx2" or "scalar" */

/* Softmax over rows: y (rows, n) = softmax(x (rows, n)); y may be x. Parallel over rows outside a parallel
 * region, on the calling thread inside one (the rows are independent: the same bits either way). */
void al_softmax_rows(const float *x, float *y, int64_t rows, int n);
void al_softmax_rows_ref(const float *x, float *y, int64_t rows, int n);
/* Log-softmax over rows: y (rows, n) = x − logΣexp(x) per row (stable). */
void al_log_softmax_rows(const float *x, float *y, int64_t rows, int n);
void al_log_softmax_rows_ref(const float *x, float *y, int64_t rows, int n);

/* LayerNorm over rows: y = (x - mean) * rstd * gamma + beta; mean/rstd (rows) are saved. */
void al_layernorm_rows(const float *x, const float *gamma, const float *beta, float *y,
                       float *mean, float *rstd, int64_t rows, int n, float eps);
void al_layernorm_rows_ref(const float *x, const float *gamma, const float *beta, float *y,
                           float *mean, float *rstd, int64_t rows, int n, float eps);
/* s = a + b and y = layernorm(s) in one pass over the rows; the same bits as the two calls. */
void al_add_layernorm_rows(const float *a, const float *b, float *s, const float *gamma, const float *beta, float *y,
                           float *mean, float *rstd, int64_t rows, int n, float eps);

/* conv2d forward: x (B,C,H,W), w (O,C,KH,KW), b (O) or NULL → y (B,O,Ho,Wo). */
void al_conv2d_fwd(const float *x, const float *w, const float *b, float *y,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad);
void al_conv2d_fwd_ref(const float *x, const float *w, const float *b, float *y,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad);
/* conv2d backward: accumulates dx (may be NULL), dw, db (may be NULL) from dy. */
void al_conv2d_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad);
/* The same, but with dx_fresh != 0 dx is overwritten (its old contents ignored), each image's
 * rows by the thread that computes them: no serial zeroing first. Same bits as zeroing + bwd. */
void al_conv2d_bwd_fresh(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                         int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad, int dx_fresh);
void al_conv2d_bwd_ref(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad);
/* Per-image hooks for fusing a following op (al_conv2d_maxpool2): the forward with post != NULL hands
 * each image's output yb (O,Ho,Wo) to post(ctx, bi, yb) from a per-thread buffer, in the thread that
 * computed it, and writes no y (it may be NULL); the backward with pre != NULL asks pre(ctx, bi, dyb)
 * for each image's dy (O,Ho,Wo) into a per-thread buffer (dy may be NULL). The same bits as the
 * calls above with the whole y / dy. Return 0, or -1 when out of memory (nothing usable written). */
int al_conv2d_fwd_each(const float *x, const float *w, const float *b, float *y,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad,
                       void (*post)(void *ctx, int bi, const float *yb), void *ctx);
int al_conv2d_bwd_each(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad, int dx_fresh,
                       void (*pre)(void *ctx, int bi, float *dyb), void *ctx);

/* Which algorithm a convolution takes, for benchmarks' headers: al_conv2d_maxpool2(_relu) of a 3×3,
 * stride-1, pad-1 convolution over even planes with ≥ 4 input channels runs Winograd's F(2×2, 3×3) (16
 * GEMMs over 4×4 transforms, 2.25× fewer multiply-adds; within ~1e-6 relative of the direct result, not
 * its bits); every other convolution im2col + GEMM. */
const char *al_conv_kernels(void);

#endif
