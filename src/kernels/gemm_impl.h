/* gemm_impl.h — the GEMM with an epilogue, for ops that fuse an elementwise step into a product
 * (internal; kernels/gemm.c). */
#ifndef ATTNLAB_GEMM_IMPL_H
#define ATTNLAB_GEMM_IMPL_H

/* fn(ctx, i0, j0, m, n, c, ldc) is called once for every element of C, on blocks of C (rows i0..i0+m,
 * columns j0..j0+n of the whole C, c pointing at element (i0, j0)) whose values are final: right after
 * the micro-kernels wrote a row sliver's last K block, while it is in L1 — one pass over C less than an
 * elementwise op after the product. It may rewrite the block (and write elsewhere, at the same
 * coordinates); blocks never overlap, and each thread calls it on its own part of C. Which blocks it is
 * called on depends on the shape and thread count, so fn must treat every element alone. */
typedef struct al_gemm_epi {
    void (*fn)(void *ctx, int i0, int j0, int m, int n, float *c, int ldc);
    void *ctx;
} al_gemm_epi;

/* al_gemm_bias (bias != NULL; beta is then 1) or al_gemm (bias NULL), then epi on every element of C:
 * the same bits as the product followed by the elementwise step. Threaded like al_gemm. */
void al__gemm_epi(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, const float *bias, float *C, int ldc, const al_gemm_epi *epi);

#endif
