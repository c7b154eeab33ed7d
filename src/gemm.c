/* gemm.c — SGEMM: attnlab's own blocked kernel, OpenBLAS (CBLAS) for the shapes where it measured
 * faster (built with AL_USE_CBLAS), and al_gemm_ref, the naive reference the tests compare against.
 *
 * Own kernel (BLIS-style, row-major):
 *   for jc over N in NC columns:            B panel (kc, nc) packed into NR-wide slivers  (L2)
 *     for pc over K in kc-deep blocks:
 *       for ir over M in MR rows:           A sliver (kc, MR) packed                       (L1)
 *         for jr over nc in NR columns:     micro-kernel: MR×NR accumulators in registers
 * The micro-kernel keeps MR×NR sums in vector registers (B vectors × broadcast A scalars, FMA) and
 * folds them into C as  first block: C = alpha·acc + beta·C (beta == 0: C is not read),
 *                       later blocks: C = C + alpha·acc.
 * SIMD sits behind a tiny macro layer: AVX-512 (MR 12, NR 32), AVX2+FMA (MR 6, NR 16), scalar (MR 4, NR 8).
 *
 * Threads: al_gemm splits C into one block of whole MR/NR tiles per thread (rows when M is the long
 * side, else columns) and runs the serial kernel on each. Every element of C is computed by the same
 * sequence of operations whatever the split, so results are bitwise identical for ANY thread count
 * (and equal to al_gemm_serial). For a small C with a long K (weight gradients: 64×64 over K=12544)
 * K is cut into a shape-determined number of chunks, each computed into its own partial buffer, and
 * the partials are added to C in a fixed order — again independent of the thread count.
 */
#include "attnlab/kernels.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef AL_USE_CBLAS
#include <cblas.h>
#endif
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

/* ---------------- SIMD macro layer ---------------- */
#if defined(__AVX512F__)
typedef __m512 vf;
#define VL 16
#define NV 2
#define MR 12
#define v_load(p) _mm512_loadu_ps(p)
#define v_store(p, x) _mm512_storeu_ps(p, x)
#define v_set1(x) _mm512_set1_ps(x)
#define v_zero() _mm512_setzero_ps()
#define v_fma(a, b, c) _mm512_fmadd_ps(a, b, c)       /* a·b + c, one rounding */
#define v_mul(a, b) _mm512_mul_ps(a, b)
#define v_add(a, b) _mm512_add_ps(a, b)
#define GEMM_ISA "avx512"
#elif defined(__AVX2__) && defined(__FMA__)
typedef __m256 vf;
#define VL 8
#define NV 2
#define MR 6
#define v_load(p) _mm256_loadu_ps(p)
#define v_store(p, x) _mm256_storeu_ps(p, x)
#define v_set1(x) _mm256_set1_ps(x)
#define v_zero() _mm256_setzero_ps()
#define v_fma(a, b, c) _mm256_fmadd_ps(a, b, c)
#define v_mul(a, b) _mm256_mul_ps(a, b)
#define v_add(a, b) _mm256_add_ps(a, b)
#define GEMM_ISA "avx2"
#else
typedef float vf;
#define VL 1
#define NV 8
#define MR 4
#define v_load(p) (*(p))
#define v_store(p, x) (*(p) = (x))
#define v_set1(x) (x)
#define v_zero() 0.0f
#define v_fma(a, b, c) ((a) * (b) + (c))   /* no hardware FMA assumed: multiply, then add */
#define v_mul(a, b) ((a) * (b))
#define v_add(a, b) ((a) + (b))
#define GEMM_ISA "scalar"
#endif
#define NR (NV * VL)

/* Cache blocking: the A sliver (KC·MR floats) stays in L1, the B panel (KC·NC) in L2. */
#ifndef KC
#define KC 256
#endif
#ifndef NC
#define NC 512
#endif

static inline int imin(int a, int b) { return a < b ? a : b; }
static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

/* ---------------- reference ---------------- */
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

/* ---------------- packing ---------------- */
/* A sliver: rows [0, mr) of op(A), k in [0, kc) → ap (kc, mrk), rows >= mr zero. */
static void pack_a(int ta, int mrk, int mr, int kc, const float *A, int lda, float *restrict ap /* (kc, mrk) */)
{
    if (ta) {                                     /* A stored (K, M): a row of mrk is contiguous */
        for (int k = 0; k < kc; k++) {
            const float *src = A + (size_t)k * lda;
            float *dst = ap + (size_t)k * mrk;
            int i = 0;
            for (; i < mr; i++) dst[i] = src[i];
            for (; i < mrk; i++) dst[i] = 0.f;
        }
    } else {                                      /* A stored (M, K): read each row along k */
        for (int i = 0; i < mr; i++) {
            const float *src = A + (size_t)i * lda;
            for (int k = 0; k < kc; k++) ap[(size_t)k * mrk + i] = src[k];
        }
        for (int i = mr; i < mrk; i++)
            for (int k = 0; k < kc; k++) ap[(size_t)k * mrk + i] = 0.f;
    }
}

/* B panel: op(B) rows k in [0, kc), columns [0, nc) → bp, ceil(nc/nrk) slivers of (kc, nrk), zero-padded. */
static void pack_b(int tb, int nrk, int kc, int nc, const float *B, int ldb, float *restrict bp /* (ns, kc, nrk) */)
{
    for (int j0 = 0; j0 < nc; j0 += nrk) {
        int nr = imin(nrk, nc - j0);
        float *dst = bp + (size_t)(j0 / nrk) * kc * nrk;
        if (!tb) {                                /* B stored (K, N): nrk contiguous per k */
            for (int k = 0; k < kc; k++) {
                const float *src = B + (size_t)k * ldb + j0;
                float *d = dst + (size_t)k * nrk;
                if (nr == nrk) {
                    for (int j = 0; j < nrk; j += VL) v_store(d + j, v_load(src + j));
                } else {
                    int j = 0;
                    for (; j < nr; j++) d[j] = src[j];
                    for (; j < nrk; j++) d[j] = 0.f;
                }
            }
        } else {                                  /* B stored (N, K): read each column along k */
            for (int j = 0; j < nr; j++) {
                const float *src = B + (size_t)(j0 + j) * ldb;
                for (int k = 0; k < kc; k++) dst[(size_t)k * nrk + j] = src[k];
            }
            for (int j = nr; j < nrk; j++)
                for (int k = 0; k < kc; k++) dst[(size_t)k * nrk + j] = 0.f;
        }
    }
}

/* ---------------- micro-kernels ---------------- */
/* Variants, all computing every c_ij by the same chain of FMAs over k (so all give the same bits):
 *   wide   MR × NV vectors, A packed (kc, MR) or read directly from the rows of a non-transposed A;
 *   narrow 2·MR × 1 vector (A packed) or MR × 1 vector (A direct), for N <= one vector (per-head
 *          products with head size 16). Reading A in place saves the transposing copy, which costs
 *          about as much as the FMAs when N is small. */
#define MRX (2 * MR)
#if VL > 1
#define HAVE_NARROW 1
#else
#define HAVE_NARROW 0
#endif

static inline __attribute__((always_inline)) void
kernel_body(const int mrk, const int nvk, const int direct, int kc,
            const float *restrict ap /* packed (kc, mrk), or direct: rows of A with stride lda */, int lda,
            const float *restrict bp /* (kc, nvk·VL) */, float *restrict c /* (mr, nr), ldc */, int ldc,
            int mr, int nr, float alpha, float beta, int first)
{
    const int nrk = nvk * VL;
    vf acc[MRX][NV];
    const float *row[MRX];
#pragma GCC unroll 32
    for (int i = 0; i < mrk; i++) {
        row[i] = ap + (size_t)i * lda;
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) acc[i][v] = v_zero();
    }
    for (int k = 0; k < kc; k++) {
        vf b[NV];
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) b[v] = v_load(bp + v * VL);
#pragma GCC unroll 32
        for (int i = 0; i < mrk; i++) {
            vf a = v_set1(direct ? row[i][k] : ap[i]);
#pragma GCC unroll 8
            for (int v = 0; v < nvk; v++) acc[i][v] = v_fma(a, b[v], acc[i][v]);
        }
        if (!direct) ap += mrk;
        bp += nrk;
    }
    vf va = v_set1(alpha);
    if (mr == mrk && nr == nrk) {
        vf vb = v_set1(beta);
#pragma GCC unroll 32
        for (int i = 0; i < mrk; i++)
#pragma GCC unroll 8
            for (int v = 0; v < nvk; v++) {
                float *p = c + (size_t)i * ldc + v * VL;
                vf t = v_mul(va, acc[i][v]);
                if (!first) t = v_add(v_load(p), t);
                else if (beta != 0.f) t = v_add(t, v_mul(vb, v_load(p)));
                v_store(p, t);
            }
        return;
    }
    /* Edge tile: the same operations, element by element (IEEE mul/add: identical bits). */
    float tmp[MRX * NR];
#pragma GCC unroll 32
    for (int i = 0; i < mrk; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) v_store(tmp + i * nrk + v * VL, v_mul(va, acc[i][v]));
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float *p = c + (size_t)i * ldc + j, t = tmp[i * nrk + j];
            if (!first) t = *p + t;
            else if (beta != 0.f) t = t + beta * *p;
            *p = t;
        }
}

typedef void (*kern_fn)(int kc, const float *ap, int lda, const float *bp, float *c, int ldc,
                        int mr, int nr, float alpha, float beta, int first);
#define KERNEL(NAME, MRK, NVK, DIRECT) \
    static void NAME(int kc, const float *ap, int lda, const float *bp, float *c, int ldc, \
                     int mr, int nr, float alpha, float beta, int first) \
    { kernel_body(MRK, NVK, DIRECT, kc, ap, lda, bp, c, ldc, mr, nr, alpha, beta, first); }
KERNEL(kern_wide, MR, NV, 0)
KERNEL(kern_wide_direct, MR, NV, 1)
#if HAVE_NARROW
KERNEL(kern_narrow, MRX, 1, 0)
KERNEL(kern_narrow_direct, MR, 1, 1)
#endif

/* ---------------- serial blocked driver ---------------- */
/* K blocks: ceil(K/KC) blocks of (nearly) equal depth, a function of K only. */
static int kc_of(int K) { int nb = ceil_div(K, KC); return ceil_div(K, nb); }

/* Workspace floats for a serial call on (M, N, K). */
static size_t ws_floats(int N, int K)
{
    int kc = kc_of(K), nc = imin(N, NC);
    return (size_t)kc * MRX + (size_t)kc * ceil_div(nc, NR) * NR;
}

/* Requires M, N, K >= 1 and ws of ws_floats(N, K) floats (64-byte aligned). */
static void gemm_blocked(int ta, int tb, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                         float *ws)
{
    int kcb = kc_of(K);
    int narrow = HAVE_NARROW && N <= VL;
    int mrk = narrow ? MRX : MR, nrk = narrow ? VL : NR;
    float *ap = ws;                               /* (kcb, mrk) */
    float *bp = ws + (size_t)kcb * MRX;           /* (ceil(NC/nrk), kcb, nrk) */
    for (int jc = 0; jc < N; jc += NC) {
        int nc = imin(NC, N - jc);
        for (int pc = 0; pc < K; pc += kcb) {
            int kc = imin(kcb, K - pc);
            pack_b(tb, nrk, kc, nc, tb ? B + (size_t)jc * ldb + pc : B + (size_t)pc * ldb + jc, ldb, bp);
            /* Read A in place when a packed sliver would serve only a few micro-kernel calls; not when
             * rows 4 KiB apart would all fall into the same L1 sets. */
            int direct = !ta && nc <= 8 * NR && (lda % 1024) != 0;
            for (int ir = 0; ir < M; ir += mrk) {
                int mr = imin(mrk, M - ir);
                const float *a = ta ? A + (size_t)pc * lda + ir : A + (size_t)ir * lda + pc;
                kern_fn fn;
                const float *asrc = ap;
                if (direct && !narrow && mr == MR) {      /* rows of A used in place */
                    fn = kern_wide_direct; asrc = a;
#if HAVE_NARROW
                } else if (direct && narrow && mr >= MR) { /* narrow, in place: two MR-row tiles */
                    for (int h = 0; h < mr; h += MR) {
                        int mh = imin(MR, mr - h);
                        if (mh == MR) {
                            kern_narrow_direct(kc, a + (size_t)h * lda, lda, bp, C + (size_t)(ir + h) * ldc + jc, ldc,
                                               MR, nc, alpha, beta, pc == 0);
                        } else {
                            pack_a(ta, MRX, mh, kc, a + (size_t)h * lda, lda, ap);
                            kern_narrow(kc, ap, lda, bp, C + (size_t)(ir + h) * ldc + jc, ldc, mh, nc, alpha, beta, pc == 0);
                        }
                    }
                    continue;
#endif
                } else {
                    pack_a(ta, mrk, mr, kc, a, lda, ap);
#if HAVE_NARROW
                    fn = narrow ? kern_narrow : kern_wide;
#else
                    fn = kern_wide;
#endif
                }
                for (int jr = 0; jr < nc; jr += nrk)
                    fn(kc, asrc, lda, bp + (size_t)(jr / nrk) * kc * nrk, C + (size_t)ir * ldc + jc + jr, ldc,
                       mr, imin(nrk, nc - jr), alpha, beta, pc == 0);
            }
        }
    }
}

/* C = beta·C (beta == 0: zero, whatever C held). */
static void scale_c(int M, int N, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * ldc;
        if (beta == 0.f) memset(c, 0, (size_t)N * sizeof(float));
        else if (beta != 1.f) for (int j = 0; j < N; j++) c[j] *= beta;
    }
}

static float *ws_alloc(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* Number of K chunks for the long-K path (0 = not this path); depends on the shape only. */
static int ksplit_chunks(int M, int N, int K)
{
    if ((int64_t)M * N > 128 * 128 || K < 8 * KC) return 0;
    int s = K / (4 * KC);                        /* chunks of at least 4 K blocks */
    return s > 4 ? 4 : s;
}

/* One sub-problem of a threaded call: rows [i0, i1), columns [j0, j1), K [k0, k1). */
typedef struct part { int i0, i1, j0, j1, k0, k1; } part;

static int plan_parts(int M, int N, int K, int nthreads, part *p, int maxp, int *ksplit)
{
    *ksplit = ksplit_chunks(M, N, K);
    if (*ksplit) {
        int s = *ksplit, nkb = ceil_div(K, kc_of(K));
        for (int t = 0; t < s; t++) {
            int b0 = (int)((int64_t)nkb * t / s), b1 = (int)((int64_t)nkb * (t + 1) / s);
            p[t] = (part){0, M, 0, N, imin(K, b0 * kc_of(K)), imin(K, b1 * kc_of(K))};
        }
        return s;
    }
    int n = nthreads < maxp ? nthreads : maxp;
    int ms = ceil_div(M, MR), ns = ceil_div(N, NR);
    if (ms >= ns) {                              /* split rows, in whole MR slivers */
        if (n > ms) n = ms;
        for (int t = 0; t < n; t++)
            p[t] = (part){imin(M, (int)((int64_t)ms * t / n) * MR), imin(M, (int)((int64_t)ms * (t + 1) / n) * MR),
                          0, N, 0, K};
    } else {                                     /* split columns, in whole NR slivers */
        if (n > ns) n = ns;
        for (int t = 0; t < n; t++)
            p[t] = (part){0, M, imin(N, (int)((int64_t)ns * t / n) * NR), imin(N, (int)((int64_t)ns * (t + 1) / n) * NR),
                          0, K};
    }
    return n;
}

/* attnlab's kernel on nthreads threads (1: no threads spawned). */
static void gemm_own(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc, int nthreads)
{
    if (M <= 0 || N <= 0) return;
    if (K <= 0 || alpha == 0.f) { scale_c(M, N, beta, C, ldc); return; }
    if ((double)M * N * K < 1048576.0) nthreads = 1;   /* < 2 MFLOP (~10 us): not worth a fork-join */
    enum { MAXP = 64 };
    part p[MAXP];
    int ks, np = plan_parts(M, N, K, nthreads, p, MAXP, &ks);
    size_t wsn = ws_floats(N, K);
    float *part_c = NULL;                        /* (ks, M, N) partial products of the long-K path */
    if (ks) {
        part_c = ws_alloc((size_t)ks * M * N);
        if (!part_c) { al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc); return; }
    }
    int failed = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) num_threads(nthreads) if (nthreads > 1 && np > 1) reduction(|:failed)
#endif
    for (int t = 0; t < np; t++) {
        part q = p[t];
        float *ws = ws_alloc(wsn);
        if (!ws) { failed = 1; continue; }
        const float *a = ta ? A + (size_t)q.k0 * lda + q.i0 : A + (size_t)q.i0 * lda + q.k0;
        const float *b = tb ? B + (size_t)q.j0 * ldb + q.k0 : B + (size_t)q.k0 * ldb + q.j0;
        if (ks)
            gemm_blocked(ta, tb, M, N, q.k1 - q.k0, alpha, a, lda, b, ldb, 0.f, part_c + (size_t)t * M * N, N, ws);
        else
            gemm_blocked(ta, tb, q.i1 - q.i0, q.j1 - q.j0, K, alpha, a, lda, b, ldb, beta,
                         C + (size_t)q.i0 * ldc + q.j0, ldc, ws);
        free(ws);
    }
    if (failed) {                                /* out of memory: C may be half-written; recompute */
        free(part_c);
        al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    if (ks) {                                    /* C = beta·C + P0, then C += P1, P2, ... in order */
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc;
            const float *p0 = part_c + (size_t)i * N;
            for (int j = 0; j < N; j++) c[j] = beta == 0.f ? p0[j] : p0[j] + beta * c[j];
            for (int s = 1; s < ks; s++) {
                const float *ps = part_c + (size_t)s * M * N + (size_t)i * N;
                for (int j = 0; j < N; j++) c[j] = c[j] + ps[j];
            }
        }
        free(part_c);
    }
}

static int in_parallel(void)
{
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return 0;
#endif
}
static int max_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

/* ---------------- public entry points ---------------- */
void al_gemm_attnlab(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, in_parallel() ? 1 : max_threads());
}

void al_gemm_serial(int ta, int tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, 1);
}

#ifdef AL_USE_CBLAS
/* Shape classes where OpenBLAS measured faster than the own kernel (docs/performance.md). */
static int prefer_openblas(int ta, int tb, int M, int N, int K)
{
    (void)ta; (void)tb; (void)M; (void)N; (void)K;
    return 0;
}
#endif

void al_gemm(int ta, int tb, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    int par = in_parallel();
#ifdef AL_USE_CBLAS
    if (!par && K > 0 && prefer_openblas(ta, tb, M, N, K)) {
        openblas_set_num_threads(max_threads());
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
#endif
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, par ? 1 : max_threads());
}

const char *al_gemm_backend(void)
{
    return "attnlab";
}

const char *al_gemm_isa(void) { return GEMM_ISA; }
