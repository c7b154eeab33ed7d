/* ops_impl.h — what the op files share (internal header): the tape helpers (core/tape_impl.h), the
 * fused linear and MLP arithmetic, column sums. */
#ifndef ATTNLAB_OPS_IMPL_H
#define ATTNLAB_OPS_IMPL_H
#include "attnlab/tensor.h"
#include "core/omp_impl.h"
#include "core/tape_impl.h"

/* The tape entry of y = a + b (elementwise.c), for the fused ops that compute the sum themselves; 1 when
 * recorded or not needed, 0 on failure. */
int al__add_record(al_ctx *c, al_tensor *a, al_tensor *b, al_tensor *y);
/* GELU of n elements on the calling thread, the same bits as al_gelu (elementwise.c): y = x·Φ(x), y may be x;
 * the saved form also leaves Φ(x) + x·φ(x) in x's place: act_backward's GELU derivative, so the backward is
 * one multiply instead of Φ and φ again. */
void al__gelu_seg(const float *x, float *y, int64_t n);
void al__gelu_saved_seg(float *x, float *y, int64_t n);
/* A transformer block's MLP, fc2(gelu(fc1(x))) with fc1 = (w1, b1), fc2 = (w2, b2) (linalg.c): the same bits
 * as al_linear, al_gelu and al_linear, forward and backward, with
 * the GELU computed inside fc1's GEMM and its derivative applied inside the GEMM that makes fc1's output
 * gradient (al__gemm_epi), and the hidden layer's gradient never materialised. */
al_tensor *al__mlp_gelu(al_ctx *c, al_tensor *x, al_tensor *w1, al_tensor *b1, al_tensor *w2, al_tensor *b2, al_tensor *res);
/* With res (not NULL): res + the MLP, the same bits as al_add(res, ·); without a tape the sum is made in fc2's
 * GEMM epilogue, one pass over the output less. al__linear_add: res + al_linear(x, w, b) likewise. */
al_tensor *al__linear_add(al_ctx *c, al_tensor *res, al_tensor *x, al_tensor *w, al_tensor *b);

/* al_linear's arithmetic on raw arrays, shared with the fused al_linear_qkv (shape.c) so both give the same
 * bits (linalg.c; each counts its FLOPs as "linear"):
 * forward  y (rows, out) = x (rows, in) · Wᵀ + b through al_gemm_bias (the bias where the GEMM would load y);
 * backward dx = dy · W (written when fresh, else added), dW += dyᵀ · x, db += Σ_rows dy; NULL: not wanted. */
void al__linear_fwd(const float *x, const float *w, const float *b, float *y, int rows, int in, int out);
void al__linear_bwd(const float *dy, const float *x, const float *w, float *dx, int fresh, float *dw, float *db,
                    int rows, int in, int out);

/* db[j] += Σ_r d[r, j] (bias gradients): threads own blocks of columns (multiples of 16, at most
 * AL__COLSUM_COLS, at least as many blocks as threads when the columns allow) and every column sums its
 * rows in row order, so the result does not depend on the thread count or on the block width. */
#define AL__COLSUM_COLS 256
static inline void al__colsum_acc(const float *d /* (rows, n) */, float *db /* (n) */, int64_t rows, int64_t n)
{
    const int64_t nt = al_threads() > 0 ? al_threads() : 1;
    int64_t w = (n + nt - 1) / nt;
    w = (w + 15) / 16 * 16;
    if (w > AL__COLSUM_COLS) w = AL__COLSUM_COLS;
    const int64_t nblk = (n + w - 1) / w;
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN && nblk > 1)")
    for (int64_t bk = 0; bk < nblk; bk++) {
        const int64_t j0 = bk * w, j1 = j0 + w < n ? j0 + w : n;
        float acc[AL__COLSUM_COLS];
        for (int64_t j = j0; j < j1; j++) acc[j - j0] = 0.f;
        for (int64_t r = 0; r < rows; r++) {
            const float *dr = d + r * n;
            for (int64_t j = j0; j < j1; j++) acc[j - j0] += dr[j];
        }
        for (int64_t j = j0; j < j1; j++) db[j] += acc[j - j0];
    }
}
#endif
