/* test_gemm.c — the blocked SGEMM (al_gemm, al_gemm_serial, al_gemm_attnlab) against al_gemm_ref:
 * odd shapes around the tile sizes, all four transposes, alpha/beta, padded leading dimensions,
 * beta = 0 over NaN garbage, calls from inside a parallel region, and bitwise determinism. */
#include "testutil.h"
#include "attnlab/kernels.h"
#include "kernels/gemm_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

typedef void (*gemm_fn)(int, int, int, int, int, float, const float *, int, const float *, int, float, float *, int);

/* One case: op(A) (M,K), op(B) (K,N), C (M,N) with leading dimensions padded by `pad`.
 * Checks fn against al_gemm_ref and that C's padding columns are untouched. Returns the rel. error. */
static double run_case(gemm_fn fn, int ta, int tb, int M, int N, int K, float alpha, float beta, int pad, int nan_c)
{
    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    int lda = ac + pad, ldb = bc + pad, ldc = N + pad;
    float *A = tu_alloc_rand((int64_t)ar * lda, 1000 + M, -1.f, 1.f);
    float *B = tu_alloc_rand((int64_t)br * ldb, 2000 + N, -1.f, 1.f);
    float *C = tu_alloc_rand((int64_t)M * ldc, 3000 + K, -1.f, 1.f);
    float *R = malloc((size_t)M * ldc * sizeof(float));
    assert_non_null(R);
    if (nan_c) for (int64_t i = 0; i < (int64_t)M * ldc; i++) C[i] = NAN;
    for (int i = 0; i < M; i++) for (int j = N; j < ldc; j++) C[(size_t)i * ldc + j] = 12345.f;  /* sentinel */
    memcpy(R, C, (size_t)M * ldc * sizeof(float));
    fn(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
    double num = 0, den = 1e-30;
    for (int i = 0; i < M; i++) {
        for (int j = 0; j < N; j++) {
            double c = C[(size_t)i * ldc + j], r = R[(size_t)i * ldc + j];
            if (isnan(c) || isinf(c)) fail_msg("ta=%d tb=%d %dx%dx%d: C[%d][%d] = %g", ta, tb, M, N, K, i, j, c);
            if (fabs(c - r) > num) num = fabs(c - r);
            if (fabs(r) > den) den = fabs(r);
        }
        for (int j = N; j < ldc; j++)
            if (C[(size_t)i * ldc + j] != 12345.f) fail_msg("ta=%d tb=%d %dx%dx%d: wrote past N in row %d", ta, tb, M, N, K, i);
    }
    free(A); free(B); free(C); free(R);
    return num / den;
}

static const int odd[][3] = {   /* M, N, K */
    {1, 1, 1}, {7, 7, 7}, {63, 63, 63}, {65, 65, 65}, {129, 129, 129}, {300, 300, 300},
    {1, 65, 7}, {7, 1, 129}, {63, 129, 1}, {129, 7, 65}, {65, 300, 63}, {300, 63, 129},
    {13, 33, 300}, {1, 300, 65}, {300, 1, 7}, {12, 32, 256}, {24, 64, 600},
    {5, 9, 1000}, {16, 3, 777}, {100, 7, 1031},   /* long K, tiny side: the dot-product path for A·Bᵀ */
    {40, 16, 50}, {33, 48, 40},                   /* whole 16-wide slivers of a transposed B: the in-register transpose */
};
#define NODD (int)(sizeof odd / sizeof odd[0])

/* All odd shapes (the 300³ one only when full: the reference is slow under ASan), all transposes. */
static void check_some(gemm_fn fn, float alpha, float beta, int pad, int nan_c, int full)
{
    for (int s = 0; s < NODD; s++)
        for (int t = 0; t < 4; t++) {
            if (!full && (double)odd[s][0] * odd[s][1] * odd[s][2] > 4e6) continue;
            int ta = t & 1, tb = t >> 1;
            double e = run_case(fn, ta, tb, odd[s][0], odd[s][1], odd[s][2], alpha, beta, pad, nan_c);
            if (!(e < 2e-6 * sqrt((double)odd[s][2]) + 1e-6))
                fail_msg("ta=%d tb=%d %dx%dx%d alpha=%g beta=%g pad=%d: rel err %.3g",
                         ta, tb, odd[s][0], odd[s][1], odd[s][2], alpha, beta, pad, e);
        }
}
static void check_all(gemm_fn fn, float alpha, float beta, int pad, int nan_c)
{
    check_some(fn, alpha, beta, pad, nan_c, 0);
}

static void test_odd_shapes_all_transposes(void **st)
{
    (void)st;
    check_some(al_gemm, 1.f, 0.f, 0, 0, 1);
    check_some(al_gemm_serial, 1.f, 0.f, 0, 0, 1);
    check_all(al_gemm_attnlab, 1.f, 0.f, 0, 0);
}

static void test_alpha_beta_and_leading_dims(void **st)
{
    (void)st;
    check_some(al_gemm, -0.5f, 0.25f, 0, 0, 1);
    check_all(al_gemm, 2.f, 1.f, 5, 0);        /* ld larger than the row length */
    check_all(al_gemm_serial, 0.75f, -1.f, 17, 0);
}

static void test_beta_zero_ignores_nan(void **st)
{
    (void)st;
    check_all(al_gemm, 1.f, 0.f, 3, 1);        /* run_case fails on any NaN left in C */
    check_all(al_gemm_serial, -2.f, 0.f, 0, 1);
    /* K = 0 and alpha = 0: C = beta·C, and beta = 0 clears NaN */
    float A[4] = {NAN, NAN, NAN, NAN}, B[4] = {NAN, NAN, NAN, NAN}, C[4] = {NAN, NAN, 2.f, 2.f};
    al_gemm(0, 0, 2, 2, 0, 1.f, A, 1, B, 2, 0.f, C, 2);
    for (int i = 0; i < 4; i++) assert_true(C[i] == 0.f);
    float D[4] = {1.f, 2.f, 3.f, 4.f}, E[4] = {1.f, 1.f, 1.f, 1.f};
    al_gemm(0, 0, 2, 2, 2, 0.f, E, 2, E, 2, 3.f, D, 2);
    assert_true(D[0] == 3.f && D[3] == 12.f);
}

static void test_hand_values(void **st)
{
    (void)st;
    /* [1 2; 3 4] · [5 6; 7 8] = [19 22; 43 50]; transposes of the same data */
    float A[4] = {1, 2, 3, 4}, B[4] = {5, 6, 7, 8}, C[4];
    al_gemm(0, 0, 2, 2, 2, 1.f, A, 2, B, 2, 0.f, C, 2);
    assert_true(C[0] == 19 && C[1] == 22 && C[2] == 43 && C[3] == 50);
    al_gemm(1, 0, 2, 2, 2, 1.f, A, 2, B, 2, 0.f, C, 2);      /* Aᵀ = [1 3; 2 4] → [26 30; 38 44] */
    assert_true(C[0] == 26 && C[1] == 30 && C[2] == 38 && C[3] == 44);
    al_gemm(0, 1, 2, 2, 2, 1.f, A, 2, B, 2, 0.f, C, 2);      /* Bᵀ = [5 7; 6 8] → [17 23; 39 53] */
    assert_true(C[0] == 17 && C[1] == 23 && C[2] == 39 && C[3] == 53);
    al_gemm(1, 1, 2, 2, 2, 2.f, A, 2, B, 2, 1.f, C, 2);      /* 2·AᵀBᵀ + C = 2·[23 31; 34 46] + C */
    assert_true(C[0] == 63 && C[1] == 85 && C[2] == 107 && C[3] == 145);
}

/* Long K, small C: the K-split path, against the reference and bitwise across thread counts. */
static void test_long_k_split(void **st)
{
    (void)st;
    for (int t = 0; t < 4; t++) {
        double e = run_case(al_gemm, t & 1, t >> 1, 20, 37, 4500, 0.5f, -1.f, 1, 0);
        if (!(e < 2e-4)) fail_msg("long K ta=%d tb=%d: rel err %.3g", t & 1, t >> 1, e);
    }
}

static int same_bytes_across_threads(int ta, int tb, int M, int N, int K)
{
    int lda = ta ? M : K, ldb = tb ? K : N;
    float *A = tu_alloc_rand((int64_t)M * K, 5, -1.f, 1.f), *B = tu_alloc_rand((int64_t)K * N, 6, -1.f, 1.f);
    float *C1 = calloc((size_t)M * N, sizeof(float)), *C2 = calloc((size_t)M * N, sizeof(float));
    float *C3 = calloc((size_t)M * N, sizeof(float)), *C4 = calloc((size_t)M * N, sizeof(float));
    assert_true(C1 && C2 && C3 && C4);
    int nt = al_threads();
    al_set_threads(1);
    al_gemm_attnlab(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, C1, N);
    al_set_threads(nt > 1 ? nt : 2);
    al_gemm_attnlab(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, C2, N);
    al_gemm(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, C3, N);
    al_gemm(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, C4, N);
    al_set_threads(nt);
    float *S = calloc((size_t)M * N, sizeof(float));
    al_gemm_serial(ta, tb, M, N, K, 1.f, A, lda, B, ldb, 0.f, S, N);
    size_t bytes = (size_t)M * N * sizeof(float);
    int ok = !memcmp(C1, C2, bytes) && !memcmp(C1, S, bytes) && !memcmp(C3, C4, bytes);
    free(A); free(B); free(C1); free(C2); free(C3); free(C4); free(S);
    return ok;
}

static void test_deterministic(void **st)
{
    (void)st;
    assert_true(same_bytes_across_threads(0, 0, 301, 70, 129));    /* rows split */
    assert_true(same_bytes_across_threads(1, 1, 40, 530, 77));     /* columns split, two NC panels */
    assert_true(same_bytes_across_threads(1, 0, 64, 64, 3000));    /* K split */
    assert_true(same_bytes_across_threads(0, 1, 1000, 64, 64));
    assert_true(same_bytes_across_threads(0, 0, 12, 48, 2000));    /* columns split: a narrow (N <= 16) part */
    assert_true(same_bytes_across_threads(0, 0, 196, 16, 196));    /* narrow kernel */
    assert_true(same_bytes_across_threads(0, 1, 32, 9, 5000));     /* K split, dot-product path */
}

/* Every c_ij is one FMA chain over k whatever tile computes it: an (M, N) product gives the bits of the
 * same rows and columns inside a larger product, where they sit in full tiles. Covers the edge tiles (the
 * last rows on 4- and 8-row tiles, the last 14-16 rows on two 8-row tiles, the last columns on one
 * vector: conv2's 64 × 196), all transposes,
 * one and two K blocks, and the serial and threaded calls. */
static void test_edge_tiles_same_bits(void **st)
{
    (void)st;
    static const int Ms[] = {1, 3, 4, 5, 8, 9, 11, 12, 13, 14, 15, 16, 28, 64}, Ns[] = {1, 4, 16, 17, 32, 33, 196}, Ks[] = {37, 300};
    for (int t = 0; t < 4; t++)
        for (int kq = 0; kq < 2; kq++)
            for (int mq = 0; mq < 14; mq++)
                for (int nq = 0; nq < 7; nq++) {
                    const int ta = t & 1, tb = t >> 1, M = Ms[mq], N = Ns[nq], K = Ks[kq];
                    const int M2 = M + 24, N2 = N + 40;
                    if (tb && !ta && (M <= 16 || N <= 16) && K >= 256) continue;   /* maybe the dot-product path: another order */
                    const int lda = ta ? M2 : K, ldb = tb ? K : N2;
                    float *A = tu_alloc_rand((int64_t)M2 * K, 11 + M, -1.f, 1.f);
                    float *B = tu_alloc_rand((int64_t)K * N2, 12 + N, -1.f, 1.f);
                    float *Cb = calloc((size_t)M2 * N2, sizeof(float)), *Cs = calloc((size_t)M2 * N2, sizeof(float));
                    assert_true(Cb && Cs);
                    for (int thr = 0; thr < 2; thr++) {
                        gemm_fn fn = thr ? al_gemm : al_gemm_serial;
                        fn(ta, tb, M2, N2, K, 0.5f, A, lda, B, ldb, 0.f, Cb, N2);
                        fn(ta, tb, M, N, K, 0.5f, A, lda, B, ldb, 0.f, Cs, N2);
                        for (int i = 0; i < M; i++)
                            if (memcmp(Cb + (size_t)i * N2, Cs + (size_t)i * N2, (size_t)N * sizeof(float)))
                                fail_msg("ta=%d tb=%d %dx%dx%d: row %d differs from the same row of %dx%d", ta, tb, M, N, K, i, M2, N2);
                    }
                    free(A); free(B); free(Cb); free(Cs);
                }
}

/* al_gemm called from every thread of a parallel region runs serially there and gives the same bytes. */
static void test_inside_parallel_region(void **st)
{
    (void)st;
    enum { T = 4, M = 129, N = 65, K = 63 };
    float *A = tu_alloc_rand(M * K, 7, -1.f, 1.f), *B = tu_alloc_rand(K * N, 8, -1.f, 1.f);
    float *C = calloc((size_t)T * M * N, sizeof(float)), *S = calloc((size_t)M * N, sizeof(float));
    float *R = calloc((size_t)M * N, sizeof(float));
    assert_true(C && S && R);
    int inside[T] = {0};
#ifdef _OPENMP
#pragma omp parallel for num_threads(2) schedule(static)
#endif
    for (int t = 0; t < T; t++) {
#ifdef _OPENMP
        inside[t] = omp_in_parallel();
#else
        inside[t] = 1;
#endif
        al_gemm(0, 1 & t, M, N, K, 1.f, A, K, B, (1 & t) ? K : N, 0.f, C + (size_t)t * M * N, N);
    }
    for (int t = 0; t < T; t++) assert_true(inside[t]);
    for (int tb = 0; tb < 2; tb++) {
        al_gemm_serial(0, tb, M, N, K, 1.f, A, K, B, tb ? K : N, 0.f, S, N);
        al_gemm_ref(0, tb, M, N, K, 1.f, A, K, B, tb ? K : N, 0.f, R, N);
        assert_true(tu_max_rel_err(S, R, M * N) < 1e-5);
        for (int t = tb; t < T; t += 2) assert_memory_equal(C + (size_t)t * M * N, S, (size_t)M * N * sizeof(float));
    }
    free(A); free(B); free(C); free(S); free(R);
}

/* Random operands of op(A) (M, K) and op(B) (K, N) with leading dimensions padded by pad (at least one row
 * each when K = 0), seeded by sa, sb. */
static void padded_ab(int ta, int tb, int M, int N, int K, int pad, uint64_t sa, uint64_t sb, float **A, int *lda, float **B, int *ldb)
{
    const int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    *lda = ac + pad; *ldb = bc + pad;
    *A = tu_alloc_rand((int64_t)(ar ? ar : 1) * *lda, sa, -1.f, 1.f);
    *B = tu_alloc_rand((int64_t)(br ? br : 1) * *ldb, sb, -1.f, 1.f);
}

/* al_gemm_bias against filling C's rows with the bias and al_gemm with beta 1 (what al_linear did before):
 * the same bits for every path the shape takes (full and edge tiles, narrow N, the transposes, the dot path
 * of a long K and a tiny side, the long-K partials, K = 0 and alpha = 0), on 1 and 2 threads; NaN in C
 * beforehand must not leak (C is not read); padding columns untouched. */
static void test_gemm_bias_same_bits(void **st)
{
    (void)st;
    static const int shapes[][3] = {{1, 1, 1}, {13, 33, 7}, {12, 32, 64}, {100, 64, 64}, {257, 192, 64}, {77, 16, 40},
                                    {9, 5, 3}, {8, 16, 2048}, {64, 64, 12544}, {30, 20, 0}, {700, 256, 64}};
    const int t0 = al_threads();
    for (int th = 1; th <= 2; th++) {
        al_set_threads(th);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int tr = 0; tr < 4; tr++)
                for (int za = 0; za < 2; za++) {
                    const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], ta = tr & 1, tb = tr >> 1, pad = 3;
                    const float alpha = za ? 0.f : 0.75f;
                    const int ldc = N + pad;
                    float *A, *B;
                    int lda, ldb;
                    padded_ab(ta, tb, M, N, K, pad, 7 + M, 8 + N, &A, &lda, &B, &ldb);
                    float *bias = tu_alloc_rand(N, 9 + K, -1.f, 1.f);
                    float *C = malloc((size_t)M * ldc * sizeof(float)), *R = malloc((size_t)M * ldc * sizeof(float));
                    assert_non_null(C); assert_non_null(R);
                    for (int64_t i = 0; i < (int64_t)M * ldc; i++) { C[i] = NAN; R[i] = 12345.f; }
                    for (int i = 0; i < M; i++) {
                        for (int j = N; j < ldc; j++) C[(size_t)i * ldc + j] = 12345.f;
                        memcpy(R + (size_t)i * ldc, bias, (size_t)N * sizeof(float));
                    }
                    al_gemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, C, ldc);
                    al_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, R, ldc);
                    if (memcmp(C, R, (size_t)M * ldc * sizeof(float)))
                        fail_msg("al_gemm_bias differs from bias rows + al_gemm: ta=%d tb=%d %dx%dx%d alpha %g, %d threads",
                                 ta, tb, M, N, K, (double)alpha, th);
                    free(A); free(B); free(bias); free(C); free(R);
                }
    }
    al_set_threads(t0);
}

/* The epilogue (al__gemm_epi): called exactly once on every element of C, with final values and the right
 * coordinates — C equals the plain product followed by the elementwise step, bit for bit — on every path
 * (row and column splits, two NC panels, the long-K partials, the dot-product path, K = 0, alpha = 0), with
 * and without a bias, on 1 and 2 threads. The step depends on the value and the coordinates. */
typedef struct { int M, N, ldc; int *seen; } epi_probe;
static float epi_f(float v, int i, int j) { return v * v - 0.5f * v + (float)(i * 7 + j) * 1e-3f; }
static void epi_probe_fn(void *ctx, int i0, int j0, int m, int n, float *c, int ldc)
{
    epi_probe *e = ctx;
    for (int r = 0; r < m; r++)
        for (int j = 0; j < n; j++) {
            const int gi = i0 + r, gj = j0 + j;
            if (gi < 0 || gi >= e->M || gj < 0 || gj >= e->N) { e->seen[0] = -1000000; continue; }
            int *s = &e->seen[1 + gi * e->N + gj];
            __atomic_fetch_add(s, 1, __ATOMIC_RELAXED);
            c[(size_t)r * ldc + j] = epi_f(c[(size_t)r * ldc + j], gi, gj);
        }
}

static void test_gemm_epilogue_same_bits(void **st)
{
    (void)st;
    static const int shapes[][3] = {{1, 1, 1}, {13, 33, 7}, {301, 70, 129}, {40, 530, 77}, {64, 64, 3000},
                                    {32, 9, 5000}, {196, 16, 196}, {700, 256, 64}, {30, 20, 0}, {12, 48, 2000}};
    const int t0 = al_threads();
    for (int th = 1; th <= 2; th++) {
        al_set_threads(th);
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++)
            for (int tr = 0; tr < 4; tr++)
                for (int v = 0; v < 3; v++) {   /* 0: beta 0; 1: bias; 2: alpha 0, beta 0.5 */
                    const int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], ta = tr & 1, tb = tr >> 1, pad = 2;
                    const float alpha = v == 2 ? 0.f : 0.75f, beta = v == 2 ? 0.5f : 0.f;
                    const int ldc = N + pad;
                    float *A, *B;
                    int lda, ldb;
                    padded_ab(ta, tb, M, N, K, pad, 17 + M, 18 + N, &A, &lda, &B, &ldb);
                    float *bias = v == 1 ? tu_alloc_rand(N, 19 + K, -1.f, 1.f) : NULL;
                    float *C = tu_alloc_rand((int64_t)M * ldc, 20, -1.f, 1.f), *R = malloc((size_t)M * ldc * sizeof(float));
                    int *seen = calloc((size_t)M * N + 1, sizeof(int));
                    assert_non_null(R); assert_non_null(seen);
                    memcpy(R, C, (size_t)M * ldc * sizeof(float));
                    if (bias) al_gemm_bias(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias, R, ldc);
                    else al_gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, R, ldc);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) R[(size_t)i * ldc + j] = epi_f(R[(size_t)i * ldc + j], i, j);
                    epi_probe pr = {M, N, ldc, seen};
                    const al_gemm_epi epi = {epi_probe_fn, &pr};
                    al__gemm_epi(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, bias, C, ldc, &epi);
                    if (seen[0]) fail_msg("epilogue called outside C: ta=%d tb=%d %dx%dx%d", ta, tb, M, N, K);
                    for (int64_t q = 0; q < (int64_t)M * N; q++)
                        if (seen[1 + q] != 1)
                            fail_msg("epilogue saw C[%lld][%lld] %d times: ta=%d tb=%d %dx%dx%d variant %d, %d threads",
                                     (long long)(q / N), (long long)(q % N), seen[1 + q], ta, tb, M, N, K, v, th);
                    if (memcmp(C, R, (size_t)M * ldc * sizeof(float)))
                        fail_msg("al__gemm_epi differs from the product + the step: ta=%d tb=%d %dx%dx%d variant %d, %d threads",
                                 ta, tb, M, N, K, v, th);
                    free(A); free(B); free(bias); free(C); free(R); free(seen);
                }
    }
    al_set_threads(t0);
}

static void test_backend_names(void **st)
{
    (void)st;
    const char *b = al_gemm_backend(), *i = al_gemm_isa();
    assert_true(!strcmp(b, "attnlab") || !strcmp(b, "openblas"));
    assert_true(!strcmp(i, "avx512") || !strcmp(i, "avx2") || !strcmp(i, "scalar"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hand_values),
        cmocka_unit_test(test_odd_shapes_all_transposes),
        cmocka_unit_test(test_alpha_beta_and_leading_dims),
        cmocka_unit_test(test_beta_zero_ignores_nan),
        cmocka_unit_test(test_long_k_split),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_edge_tiles_same_bits),
        cmocka_unit_test(test_inside_parallel_region),
        cmocka_unit_test(test_gemm_bias_same_bits),
        cmocka_unit_test(test_gemm_epilogue_same_bits),
        cmocka_unit_test(test_backend_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
