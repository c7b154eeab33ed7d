/* gemm.c — SGEMM: OpenBLAS (CBLAS) when built with AL_USE_CBLAS, else a plain loop for now;
 * al_gemm_ref is the naive reference the tests compare against. */
#include "attnlab/kernels.h"
#include <stddef.h>
#ifdef AL_USE_CBLAS
#include <cblas.h>
#endif

void al_gemm_ref(int ta, int tb, int M, int N, int K, float alpha,
                 const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) {
                float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
                float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
                s += (double)a * b;
            }
            float *c = &C[(size_t)i * ldc + j];
            *c = (float)(alpha * s + (beta == 0.f ? 0.0 : (double)beta * *c));
        }
}

void al_gemm_serial(int ta, int tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    al_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void al_gemm(int ta, int tb, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
#ifdef AL_USE_CBLAS
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#else
    al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
#endif
}

const char *al_gemm_backend(void)
{
#ifdef AL_USE_CBLAS
    return "openblas";
#else
    return "reference";
#endif
}
