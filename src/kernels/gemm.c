/* gemm.c — SGEMM: attnlab's own blocked kernel, and al_gemm_ref, the naive reference the tests
 * compare against.
 *
 * Backend choice (measured, docs/performance.md): against Debian's OpenBLAS 0.3.21 (which runs its
 * Haswell kernels on this Zen 5) the own kernel was faster on every shape class the models use and
 * on the 1024³ square, at 1 and 2 threads (or level within noise). So al_gemm
 * never calls OpenBLAS; it stays linked (BLAS=openblas) only for `attnlab bench gemm` to compare
 * against, and no OpenBLAS thread pool competes with OpenMP's.
 *
 * Own kernel (BLIS-style, row-major):
 *   for jc over N in NC columns:            B panel (kc, nc) packed into NR-wide slivers  (L2)
 *     for pc over K in kc-deep blocks:
 *       for ir over M in MR rows:           A sliver: MR rows/columns of A, read in place  (L1)
 *         for jr over nc in NR columns:     micro-kernel: MR×NR accumulators in registers
 * (The scalar build packs A slivers; B is read in place when few A slivers reuse it; A·Bᵀ with a
 * long K and a tiny side takes a dot-product path instead.)
 * The micro-kernel keeps MR×NR sums in vector registers (B vectors × broadcast A scalars, FMA) and
 * folds them into C as  first block: C = alpha·acc + beta·C (beta == 0: C is not read),
 *                       later blocks: C = C + alpha·acc.
 * SIMD through the library's lane layer (core/simd_impl.h): AVX-512 (MR 12, NR 32), AVX2+FMA (MR 6, NR 16),
 * scalar (MR 4, NR 8).
 *
 * Threads: al_gemm splits C into one block of whole MR/NR tiles per thread (rows when M is the long
 * side, else columns) and runs the serial kernel on each. Every element of C is computed by the same
 * sequence of operations whatever the split, so results are bitwise identical for ANY thread count
 * (and equal to al_gemm_serial). For a small C with a long K (weight gradients: 64×64 over K=12544)
 * K is cut into a shape-determined number of chunks, each computed into its own partial buffer, and
 * the partials are added to C in a fixed order — again independent of the thread count.
 */
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"   /* al_threads */
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "gemm_impl.h"
#include "gemm_kernels_impl.h"   /* the register tiles (MR, NV, NR, MRX), the micro-kernels, tile_kernel */

/* SIMD through the library's lane layer (core/simd_impl.h) */
#define GEMM_ISA AL_SIMD_ISA

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

#if defined(__AVX512F__)
/* Raw intrinsics: an in-register transpose, which core/simd_impl.h does not express.
 * dst[c·lds + r] = src[r·ld + c] for a 16×16 block: 32-bit and 64-bit unpacks within 128-bit lanes,
 * then a 4×4 transpose of the lanes with two rounds of shuffle_f32x4. */
static inline void transpose16(const float *src, int ld, float *dst, int lds)
{
    __m512 r[16], t[16];
    for (int i = 0; i < 16; i++) r[i] = _mm512_loadu_ps(src + (size_t)i * ld);
    for (int i = 0; i < 16; i += 2) {             /* lane l: r_i[4l], r_i+1[4l], r_i[4l+1], r_i+1[4l+1] | +2, +3 */
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int g = 0; g < 4; g++) {                 /* r[4g+e], lane l: rows 4g..4g+3 at column 4l+e */
        __m512d a = _mm512_castps_pd(t[4 * g]), b = _mm512_castps_pd(t[4 * g + 1]);
        __m512d c = _mm512_castps_pd(t[4 * g + 2]), d = _mm512_castps_pd(t[4 * g + 3]);
        r[4 * g + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
        r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
        r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
        r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
    }
    for (int e = 0; e < 4; e++) {                 /* column 4l+e = lane l of r[e], r[4+e], r[8+e], r[12+e] */
        __m512 x0 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x44), x1 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xEE);
        __m512 y0 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x44), y1 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xEE);
        _mm512_storeu_ps(dst + (size_t)(0 + e) * lds, _mm512_shuffle_f32x4(x0, y0, 0x88));
        _mm512_storeu_ps(dst + (size_t)(4 + e) * lds, _mm512_shuffle_f32x4(x0, y0, 0xDD));
        _mm512_storeu_ps(dst + (size_t)(8 + e) * lds, _mm512_shuffle_f32x4(x1, y1, 0x88));
        _mm512_storeu_ps(dst + (size_t)(12 + e) * lds, _mm512_shuffle_f32x4(x1, y1, 0xDD));
    }
}
#endif

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
                    for (int j = 0; j < nrk; j += AL_VL) al_v_store(d + j, al_v_load(src + j));
                } else {
                    int j = 0;
                    for (; j < nr; j++) d[j] = src[j];
                    for (; j < nrk; j++) d[j] = 0.f;
                }
            }
        } else {                                  /* B stored (N, K): read each column along k */
            int kdone = 0;
#if defined(__AVX512F__)
            if (nr == nrk) {                      /* 16×16 blocks transposed in registers */
                kdone = kc / 16 * 16;
                for (int h = 0; h < nrk; h += 16)
                    for (int k = 0; k < kdone; k += 16)
                        transpose16(B + (size_t)(j0 + h) * ldb + k, ldb, dst + (size_t)k * nrk + h, nrk);
            }
#endif
            for (int j = 0; j < nr; j++) {
                const float *src = B + (size_t)(j0 + j) * ldb;
                for (int k = kdone; k < kc; k++) dst[(size_t)k * nrk + j] = src[k];
            }
            for (int j = nr; j < nrk; j++)
                for (int k = 0; k < kc; k++) dst[(size_t)k * nrk + j] = 0.f;
        }
    }
}

/* n floats, 64-byte aligned; the size rounded up to the alignment, as C11's aligned_alloc requires. */
static float *ws_alloc(size_t n)
{
    size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    return aligned_alloc(64, bytes ? bytes : 64);
}

/* ---------------- dot-product path: C = A·Bᵀ with a long K ---------------- */
/* When both operands run along K in memory (A (M,K), B (N,K)) and K is long next to M and N (weight
 * gradients of convolutions: 32×9 over K = 50176), packing B would transpose it at a cost far above
 * the FMAs. Instead each c_ij is a dot product of two contiguous rows: DTM×DTN tiles of lane-wise
 * accumulators (lane l sums the k ≡ l mod AL_VL in increasing k), K in blocks that keep the rows in L2,
 * and a fixed-order sum of the AL_VL lanes at the end. A function of the shape only: deterministic. */
#if AL_VL > 1
#define HAVE_DOT 1
#if defined(AL_SIMD_AVX512)
#define DTM 4
#define DTN 4
#else
#define DTM 3
#define DTN 3
#endif
#define DOT_KB 512

static void dot_tile(int kb, const float *const *ar, const float *const *br, al_vf *t /* (DTM·DTN) */)
{
    al_vf s[DTM][DTN];
#pragma GCC unroll 4
    for (int i = 0; i < DTM; i++)
#pragma GCC unroll 4
        for (int j = 0; j < DTN; j++) s[i][j] = t[i * DTN + j];
    int k = 0;
    for (; k + AL_VL <= kb; k += AL_VL) {
        al_vf a[DTM], b[DTN];
#pragma GCC unroll 4
        for (int i = 0; i < DTM; i++) a[i] = al_v_load(ar[i] + k);
#pragma GCC unroll 4
        for (int j = 0; j < DTN; j++) {
            b[j] = al_v_load(br[j] + k);
            __asm__("" : "+v"(b[j]));            /* keep it in a register: GCC would reload it per FMA */
        }
#pragma GCC unroll 4
        for (int i = 0; i < DTM; i++)
#pragma GCC unroll 4
            for (int j = 0; j < DTN; j++) s[i][j] = al_v_fma(a[i], b[j], s[i][j]);
    }
    if (k < kb) {                                 /* tail: zero-filled lanes add exact zeros */
        al_vf a[DTM], b[DTN];
        for (int i = 0; i < DTM; i++) a[i] = al_v_loadm(al_v_mask(kb - k), ar[i] + k);
        for (int j = 0; j < DTN; j++) b[j] = al_v_loadm(al_v_mask(kb - k), br[j] + k);
#pragma GCC unroll 4
        for (int i = 0; i < DTM; i++)
#pragma GCC unroll 4
            for (int j = 0; j < DTN; j++) s[i][j] = al_v_fma(a[i], b[j], s[i][j]);
    }
#pragma GCC unroll 4
    for (int i = 0; i < DTM; i++)
#pragma GCC unroll 4
        for (int j = 0; j < DTN; j++) t[i * DTN + j] = s[i][j];
}

/* Returns 0, or -1 when out of memory (nothing written). */
static int gemm_dot(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                    float beta, float *C, int ldc)
{
    const int mt = ceil_div(M, DTM), nt = ceil_div(N, DTN);
    const size_t nacc = (size_t)mt * nt * DTM * DTN;
    al_vf *acc = (al_vf *)ws_alloc(nacc * AL_VL);   /* (mt, nt, DTM, DTN) lane vectors */
    if (!acc) return -1;
    for (size_t q = 0; q < nacc; q++) acc[q] = al_v_zero();
    for (int k0 = 0; k0 < K; k0 += DOT_KB) {
        const int kb = imin(DOT_KB, K - k0);
        for (int it = 0; it < mt; it++) {
            const float *ar[DTM], *br[DTN];
            for (int i = 0; i < DTM; i++) ar[i] = A + (size_t)imin(it * DTM + i, M - 1) * lda + k0;  /* edge: repeat */
            for (int jt = 0; jt < nt; jt++) {
                for (int j = 0; j < DTN; j++) br[j] = B + (size_t)imin(jt * DTN + j, N - 1) * ldb + k0;
                dot_tile(kb, ar, br, acc + ((size_t)it * nt + jt) * DTM * DTN);
            }
        }
    }
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float lane[AL_VL], sum = 0.f;
            al_v_store(lane, acc[((size_t)(i / DTM) * nt + j / DTN) * DTM * DTN + (i % DTM) * DTN + j % DTN]);
            for (int l = 0; l < AL_VL; l++) sum += lane[l];
            float *p = C + (size_t)i * ldc + j, t = alpha * sum;
            if (beta != 0.f) t = t + beta * *p;
            *p = t;
        }
    free(acc);
    return 0;
}
static int use_dot(int ta, int tb, int M, int N, int K)
{
    /* measured (docs/performance.md): a clear win only when one side of C is tiny */
    int lo = M < N ? M : N, hi = M > N ? M : N;
    return tb && !ta && lo <= 16 && hi <= 128 && K >= 256 && K >= 4 * hi;
}
#else
#define HAVE_DOT 0
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

/* C rows = the row vector bias (N). */
static void fill_rows(int M, int N, const float *bias, float *C, int ldc)
{
    for (int i = 0; i < M; i++) memcpy(C + (size_t)i * ldc, bias, (size_t)N * sizeof(float));
}

/* Requires M, N, K >= 1 and ws of ws_floats(N, K) floats (64-byte aligned). bias (N) or NULL: C's old
 * values are not read, every row is taken to hold bias (the same operations, so the same bits). */
static void gemm_blocked(int ta, int tb, int M, int N, int K, float alpha,
                         const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                         const float *bias, float *ws, const al_gemm_epi *epi, int i_off, int j_off)
{
#if HAVE_DOT
    if (use_dot(ta, tb, M, N, K)) {
        if (bias) { fill_rows(M, N, bias, C, ldc); bias = NULL; }
        if (gemm_dot(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) == 0) {
            if (epi) epi->fn(epi->ctx, i_off, j_off, M, N, C, ldc);
            return;
        }
    }
#endif
    const int kcb = kc_of(K);
    const int narrow = HAVE_NARROW && N <= AL_VL, nrk = narrow ? AL_VL : NR;
    float *ap = ws;                               /* (kcb, MRX) */
    float *bp = ws + (size_t)kcb * MRX;           /* (ceil(NC/nrk), kcb, nrk) */
    /* In place, not packed: A always (a sliver is only MR rows or MR columns of A, which stay in L1;
     * measured faster than packing for every shape, squares included — the packing copy is a
     * transpose), B when few A slivers reuse it (short C; a B sliver strided by a leading dimension
     * that is a multiple of 4 KiB would fall into a handful of cache sets). Not in the scalar build,
     * where it kept gcc from vectorising. */
    const int adirect = AL_VL > 1;
    const int bdirect = AL_VL > 1 && !tb && ceil_div(M, MR) <= 6 && (ldb % 1024) != 0;
    const int amode = adirect ? (ta ? A_TRANS : A_ROWS) : A_PACKED;
    const int mrk = tile_rows(narrow, amode), mrp = tile_rows(narrow, A_PACKED);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = imin(NC, N - jc), nfull = nc / nrk * nrk;
        for (int pc = 0; pc < K; pc += kcb) {
            const int kc = imin(kcb, K - pc), first = pc == 0;
            const float *b0 = tb ? B + (size_t)jc * ldb + pc : B + (size_t)pc * ldb + jc;
            if (!bdirect) pack_b(tb, nrk, kc, nc, b0, ldb, bp);
            else if (nfull < nc) pack_b(tb, nrk, kc, nc - nfull, b0 + nfull, ldb, bp);   /* edge sliver only */
            for (int ir = 0, mr; ir < M; ir += mr) {
                mr = imin(mrk, M - ir);
                const float *a = ta ? A + (size_t)pc * lda + ir : A + (size_t)ir * lda + pc;
                int am = amode, ec = 0;           /* ec: the edge class of a wide call's last rows */
#if GEMM_EDGE
                /* last rows that two 8-row tiles hold, where MR would leave a tile of 2-4 rows whose few
                 * accumulators cannot hide the FMA latency (MR 12: the cnn's conv2, 64 = 4·12 + 8 + 8) */
                if (!narrow && MR > 8 && M - ir >= MR + 2 && M - ir <= MR + 4 && M - ir <= 16) mr = 8;
                if (!narrow && mr < mrk) ec = edge_class(mr);
#endif
                const int tr = ec ? edge_rows[ec] : mrk;   /* the register tile's rows */
                if (mr < tr || amode == A_PACKED) {   /* edge rows (zero-padded) or packing chosen */
                    pack_a(ta, ec ? tr : mrp, mr, kc, a, lda, ap);
                    a = ap; am = A_PACKED;
                }
                for (int jr = 0; jr < nc; jr += nrk) {
                    const int nr = imin(nrk, nc - jr), bd = bdirect && jr < nfull;
                    const float *b = bd ? b0 + jr : bdirect ? bp : bp + (size_t)(jr / nrk) * kc * nrk;
                    /* a wide call's last sliver of one vector or fewer: its first vector, read as rows of nrk */
                    const int one = GEMM_EDGE && !narrow && nr <= AL_VL;
                    tile_kernel(narrow, ec, one, am, one ? B_ROWS : bd)(kc, a, lda, b, one ? nrk : ldb, C + (size_t)ir * ldc + jc + jr, ldc,
                                                                     mr, nr, alpha, beta, first, bias ? bias + jc + jr : NULL);
                }
                if (epi && pc + kc >= K)   /* the sliver's values are final, and in L1 */
                    epi->fn(epi->ctx, i_off + ir, j_off + jc, mr, nc, C + (size_t)ir * ldc + jc, ldc);
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


/* The packing workspace of the calling thread, grown on demand and kept for the next call: the
 * attention kernels call al_gemm_serial thousands of times per step on small tiles, where a
 * malloc/free pair per call cost as much as the product. One buffer per thread (thread-local), so
 * concurrent calls never share it; gemm_blocked never re-enters the gemm, so one is enough. It lives
 * until the thread exits: a thread-specific key frees it then (a caller's own threads — the
 * data-parallel tests run ranks as threads — would otherwise leak one buffer each). */
static _Thread_local float *tl_ws;
static _Thread_local size_t tl_ws_cap;
static pthread_key_t ws_key;
static pthread_once_t ws_once = PTHREAD_ONCE_INIT;
static int ws_key_ok;
static void ws_key_make(void) { ws_key_ok = pthread_key_create(&ws_key, free) == 0; }
static float *ws_thread(size_t n)
{
    if (n <= tl_ws_cap && tl_ws) return tl_ws;
    size_t want = n < 4096 ? 4096 : n;
    float *w = ws_alloc(want);
    if (!w) return NULL;
    free(tl_ws);
    tl_ws = w; tl_ws_cap = want;
    pthread_once(&ws_once, ws_key_make);
    if (ws_key_ok) pthread_setspecific(ws_key, w);   /* freed at the thread's exit */
    return w;
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

/* attnlab's kernel on nthreads threads (1: no threads spawned). bias: see gemm_blocked; the paths that
 * do not take it (no product, the long-K partials, out of memory) fill C's rows with it first. */
static void gemm_own(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc,
                     const float *bias, int nthreads, const al_gemm_epi *epi)
{
    if (M <= 0 || N <= 0) return;
    if (bias && (K <= 0 || alpha == 0.f || ksplit_chunks(M, N, K))) { fill_rows(M, N, bias, C, ldc); bias = NULL; }
    if (K <= 0 || alpha == 0.f) {
        scale_c(M, N, beta, C, ldc);
        if (epi) epi->fn(epi->ctx, 0, 0, M, N, C, ldc);
        return;
    }
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
    if (!ks && np == 1) {   /* one part (every al_gemm_serial call): the loop below with no OpenMP region,
                               whose set-up costs as much as a small product even when inactive */
        float *ws = ws_thread(wsn);
        if (ws) gemm_blocked(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, bias, ws, epi, 0, 0);
        else {
            if (bias) fill_rows(M, N, bias, C, ldc);
            al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
            if (epi) epi->fn(epi->ctx, 0, 0, M, N, C, ldc);
        }
        return;
    }
    int failed = 0;
    AL_OMP("omp parallel for schedule(static) num_threads(nthreads) if (nthreads > 1 && np > 1) reduction(|:failed)")
    for (int t = 0; t < np; t++) {
        part q = p[t];
        float *ws = ws_thread(wsn);
        if (!ws) { failed = 1; continue; }
        const float *a = ta ? A + (size_t)q.k0 * lda + q.i0 : A + (size_t)q.i0 * lda + q.k0;
        const float *b = tb ? B + (size_t)q.j0 * ldb + q.k0 : B + (size_t)q.k0 * ldb + q.j0;
        if (ks)
            gemm_blocked(ta, tb, M, N, q.k1 - q.k0, alpha, a, lda, b, ldb, 0.f, part_c + (size_t)t * M * N, N, NULL, ws,
                         NULL, 0, 0);
        else
            gemm_blocked(ta, tb, q.i1 - q.i0, q.j1 - q.j0, K, alpha, a, lda, b, ldb, beta,
                         C + (size_t)q.i0 * ldc + q.j0, ldc, bias ? bias + q.j0 : NULL, ws, epi, q.i0, q.j0);
    }
    if (failed) {                                /* out of memory: C may be half-written; recompute */
        free(part_c);
        if (bias) fill_rows(M, N, bias, C, ldc);
        al_gemm_ref(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        if (epi) epi->fn(epi->ctx, 0, 0, M, N, C, ldc);
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
        if (epi) epi->fn(epi->ctx, 0, 0, M, N, C, ldc);
    }
}


/* ---------------- public entry points ---------------- */
void al_gemm_attnlab(int ta, int tb, int M, int N, int K, float alpha,
                     const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, al__in_parallel() ? 1 : al_threads(), NULL);
}

void al_gemm_serial(int ta, int tb, int M, int N, int K, float alpha,
                    const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, 1, NULL);
}

void al_gemm(int ta, int tb, int M, int N, int K, float alpha,
             const float *A, int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, NULL, al__in_parallel() ? 1 : al_threads(), NULL);
}

void al_gemm_bias(int ta, int tb, int M, int N, int K, float alpha,
                  const float *A, int lda, const float *B, int ldb, const float *bias, float *C, int ldc)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, 1.0f, C, ldc, bias, al__in_parallel() ? 1 : al_threads(), NULL);
}

void al__gemm_epi(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                  float beta, const float *bias, float *C, int ldc, const al_gemm_epi *epi)
{
    gemm_own(ta, tb, M, N, K, alpha, A, lda, B, ldb, bias ? 1.0f : beta, C, ldc, bias, al__in_parallel() ? 1 : al_threads(), epi);
}

const char *al_gemm_backend(void)
{
    return "attnlab";
}

const char *al_gemm_isa(void) { return GEMM_ISA; }
