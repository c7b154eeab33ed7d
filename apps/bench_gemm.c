/* bench_gemm.c — attnlab bench gemm: SGEMM time and GFLOP/s of attnlab's own kernel and OpenBLAS
 * on a big square and on the models' shapes, per thread count. Each result is first checked against
 * al_gemm_ref on a sample of entries (a mismatch is an error exit), then timed; the median is reported.
 * OpenBLAS is not linked: this bench alone opens libopenblas.so.0 at run time when it is installed,
 * so nothing else in attnlab depends on it. */
#include <dlfcn.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"
#include "cli.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* The CBLAS entry points this bench needs, resolved from libopenblas.so.0 (the CBLAS enum values
 * are fixed by the standard: RowMajor 101, NoTrans 111, Trans 112). */
enum { CBLAS_ROW_MAJOR = 101, CBLAS_NO_TRANS = 111, CBLAS_TRANS = 112 };
typedef void (*sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                         const float *B, int ldb, float beta, float *C, int ldc);
static struct { void *lib; sgemm_fn sgemm; void (*set_threads)(int); char *(*corename)(void); } blas;

/* 1 if OpenBLAS could be opened (once), else 0. */
static int blas_open(void)
{
    static int tried;
    if (tried) return blas.lib != NULL;
    tried = 1;
    blas.lib = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!blas.lib) return 0;
    *(void **)&blas.sgemm = dlsym(blas.lib, "cblas_sgemm");
    *(void **)&blas.set_threads = dlsym(blas.lib, "openblas_set_num_threads");
    *(void **)&blas.corename = dlsym(blas.lib, "openblas_get_corename");
    if (!blas.sgemm || !blas.set_threads || !blas.corename) { dlclose(blas.lib); blas.lib = NULL; }
    return blas.lib != NULL;
}

typedef struct shape { const char *what; int ta, tb, M, N, K, batch; } shape;
static const shape shapes[] = {
    {"square", 0, 0, 64, 64, 64, 1},
    {"square", 0, 0, 256, 256, 256, 1},
    {"square", 0, 0, 1024, 1024, 1024, 1},
    {"linear fwd C=64", 0, 0, 12544, 64, 64, 1},
    {"linear fwd qkv", 0, 0, 12544, 192, 64, 1},
    {"linear fwd C=128", 0, 0, 12544, 128, 64, 1},
    {"linear fwd x.Wt", 0, 1, 12544, 64, 64, 1},
    {"linear bwd dW", 1, 0, 64, 64, 12544, 1},
    {"attn Q.Kt /head", 0, 1, 196, 196, 16, 64},
    {"attn P.V /head", 0, 0, 196, 16, 196, 64},
    {"conv1 fwd", 0, 0, 32, 50176, 9, 1},          /* cnn: im2col GEMMs of a batch of 64 */
    {"conv1 dW", 0, 1, 32, 9, 50176, 1},
    {"conv2 fwd", 0, 0, 64, 12544, 288, 1},
    {"conv2 dW", 0, 1, 64, 288, 12544, 1},
    {"conv2 dcols", 1, 0, 288, 12544, 64, 1},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

enum { BK_ATTNLAB = 1, BK_OPENBLAS = 2 };

static void usage(FILE *f)
{
    cli_usage(f,
            "usage: attnlab bench gemm [--threads LIST] [--reps N] [--backend attnlab|openblas|both]\n"
            "                          [--clock wall|cpu]\n\n"
            "SGEMM median time and GFLOP/s on 64^3, 256^3 and 1024^3 squares and the models' shapes (tall-skinny linear\n"
            "layers of 12544 tokens, their weight gradient, per-head attention products batched 64x,\n"
            "the cnn's im2col convolution GEMMs).\n"
            "Every result is checked against al_gemm_ref on sampled entries before it is timed.\n"
            "Columns: median and minimum time over the reps (the minimum is the least disturbed run on a\n"
            "shared machine) and the GFLOP/s of each.\n\n"
            "  --threads LIST   comma-separated thread counts (default 1,2)\n"
            "  --reps N         timed repetitions, the median is reported (default 5)\n"
            "  --backend B      attnlab, openblas or both (default: both when libopenblas.so.0 is\n"
            "                   installed, else attnlab; OpenBLAS is opened at run time, not linked)\n"
            "  --clock C        wall (default) or cpu: CPU time, not inflated by other processes on a\n"
            "                   shared machine; with 1 thread the calling thread's, with T threads the\n"
            "                   process's divided by T (run with OMP_WAIT_POLICY=passive so waiting\n"
            "                   threads do not count; OpenBLAS's spinning workers still do)\n"
            "  -h, --help       this text\n");
}

static void set_threads(int t)
{
    al_set_threads(t);
    if (blas.lib) blas.set_threads(t);
}

/* One run of shape s on backend bk; batched shapes run one serial GEMM per item, items in parallel. */
static void run(const shape *s, int bk, int threads, const float *A, const float *B, float *C)
{
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N, ldc = s->N;
    size_t sa = (size_t)s->M * s->K, sb = (size_t)s->K * s->N, sc = (size_t)s->M * s->N;
    if (s->batch == 1) {
        if (bk == BK_ATTNLAB) {
            al_gemm_attnlab(s->ta, s->tb, s->M, s->N, s->K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
        } else {
            blas.set_threads(threads);
            blas.sgemm(CBLAS_ROW_MAJOR, s->ta ? CBLAS_TRANS : CBLAS_NO_TRANS, s->tb ? CBLAS_TRANS : CBLAS_NO_TRANS,
                       s->M, s->N, s->K, 1.f, A, lda, B, ldb, 0.f, C, ldc);
        }
        return;
    }
    if (bk == BK_OPENBLAS) blas.set_threads(1);   /* one BLAS thread per OpenMP thread */
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int b = 0; b < s->batch; b++) {
        const float *a = A + (size_t)b * sa, *bb = B + (size_t)b * sb;
        float *c = C + (size_t)b * sc;
        if (bk == BK_ATTNLAB) {
            al_gemm_serial(s->ta, s->tb, s->M, s->N, s->K, 1.f, a, lda, bb, ldb, 0.f, c, ldc);
        } else {
            blas.sgemm(CBLAS_ROW_MAJOR, s->ta ? CBLAS_TRANS : CBLAS_NO_TRANS, s->tb ? CBLAS_TRANS : CBLAS_NO_TRANS,
                       s->M, s->N, s->K, 1.f, a, lda, bb, ldb, 0.f, c, ldc);
        }
    }
}

/* Compare 97 sampled entries (and the last one of each item) with a double-precision reference. */
static int check(const shape *s, const float *A, const float *B, const float *C, char *msg, size_t n)
{
    int lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    al_rng r; al_rng_seed(&r, 11, 0);
    for (int b = 0; b < s->batch; b++) {
        const float *a = A + (size_t)b * s->M * s->K, *bb = B + (size_t)b * s->K * s->N;
        const float *c = C + (size_t)b * s->M * s->N;
        for (int q = 0; q < 98; q++) {
            int i = q == 97 ? s->M - 1 : (int)al_rng_below(&r, (uint32_t)s->M);
            int j = q == 97 ? s->N - 1 : (int)al_rng_below(&r, (uint32_t)s->N);
            float rf = 0.f;                           /* C[i][j] by the reference, as a 1×1 product */
            al_gemm_ref(s->ta, s->tb, 1, 1, s->K, 1.f, s->ta ? a + i : a + (size_t)i * lda, lda,
                        s->tb ? bb + (size_t)j * ldb : bb + j, ldb, 0.f, &rf, 1);
            double ref = rf, mag = 0;                 /* tolerance scales with Σ|a·b| */
            for (int k = 0; k < s->K; k++) {
                double x = s->ta ? a[(size_t)k * lda + i] : a[(size_t)i * lda + k];
                double y = s->tb ? bb[(size_t)j * ldb + k] : bb[(size_t)k * ldb + j];
                mag += fabs(x * y);
            }
            double got = c[(size_t)i * s->N + j];
            if (!(fabs(got - ref) <= 1e-5 * mag + 1e-6)) {
                snprintf(msg, n, "item %d C[%d][%d] = %.7g, reference %.7g", b, i, j, got, ref);
                return 0;
            }
        }
    }
    return 1;
}

/* Seconds of this thread's CPU time: with one thread, the time it computed, whatever else the
 * machine was doing (a shared machine's wall-clock times can be several times too long). */
static double thread_cpu_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* With several threads: the process's CPU time divided by the thread count, an estimate of the
 * wall time on otherwise idle cores. Only meaningful when waiting threads sleep instead of spinning
 * (OMP_WAIT_POLICY=passive; OpenBLAS's workers spin regardless, which inflates its figure). */
static double process_cpu_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --threads LIST: up to 16 counts, each in [1, cli_max_threads()]; 0 or -1 (message printed). */
static int parse_thread_list(const char *arg, int *threads, int *nthreads)
{
    *nthreads = 0;
    const char *s = arg;
    char *end;
    while (*s) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > cli_max_threads() || *nthreads == 16 || (*end && *end != ',')) {
            fprintf(stderr, "attnlab bench gemm: bad --threads '%s' (want e.g. 1,2; each in [1, %d])\n", arg, cli_max_threads());
            return -1;
        }
        threads[(*nthreads)++] = (int)v;
        s = *end ? end + 1 : end;
    }
    if (!*nthreads) { fprintf(stderr, "attnlab bench gemm: empty --threads\n"); return -1; }
    return 0;
}

int bench_gemm_main(int argc, char **argv)
{
    int threads[16], nthreads = 2, reps = 5;
    threads[0] = 1; threads[1] = 2;
    int backends = blas_open() ? BK_ATTNLAB | BK_OPENBLAS : BK_ATTNLAB;
    static const struct option opts[] = {
        {"threads", required_argument, 0, 't'}, {"reps", required_argument, 0, 'r'},
        {"backend", required_argument, 0, 'b'}, {"clock", required_argument, 0, 'c'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int cpu_clock = 0;
    opterr = 0; optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return 0;
        case 't': if (parse_thread_list(optarg, threads, &nthreads)) return 2; break;
        case 'r': {
            char *end; long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > 10000) { fprintf(stderr, "attnlab bench gemm: bad --reps '%s'\n", optarg); return 2; }
            reps = (int)v;
            break;
        }
        case 'b':
            if (!strcmp(optarg, "attnlab")) backends = BK_ATTNLAB;
            else if (!strcmp(optarg, "openblas")) backends = BK_OPENBLAS;
            else if (!strcmp(optarg, "both")) backends = BK_ATTNLAB | BK_OPENBLAS;
            else { fprintf(stderr, "attnlab bench gemm: bad --backend '%s' (attnlab|openblas|both)\n", optarg); return 2; }
            if ((backends & BK_OPENBLAS) && !blas_open()) {
                fprintf(stderr, "attnlab bench gemm: --backend %s: libopenblas.so.0 is not installed (%s)\n", optarg,
                        dlerror());
                return 2;
            }
            break;
        case 'c':
            if (!strcmp(optarg, "wall")) cpu_clock = 0;
            else if (!strcmp(optarg, "cpu")) cpu_clock = 1;
            else { fprintf(stderr, "attnlab bench gemm: bad --clock '%s' (wall|cpu)\n", optarg); return 2; }
            break;
        case ':':
            fprintf(stderr, "attnlab bench gemm: option '%s' needs a value (see --help)\n", argv[optind - 1]);
            return 2;
        default:
            fprintf(stderr, "attnlab bench gemm: unknown option '%s' (see --help)\n", argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab bench gemm: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (cli_check_env_threads("bench gemm")) return 2;
    for (int i = 0; i < nthreads && cpu_clock; i++)
        if (threads[i] != 1 && !(getenv("OMP_WAIT_POLICY") && !strcmp(getenv("OMP_WAIT_POLICY"), "passive"))) {
            fprintf(stderr, "attnlab bench gemm: note: --clock cpu with %d threads counts spinning waits; "
                    "set OMP_WAIT_POLICY=passive\n", threads[i]);
            break;
        }

    size_t maxa = 0, maxb = 0, maxc = 0;
    for (int i = 0; i < NSHAPES; i++) {
        const shape *s = &shapes[i];
        size_t a = (size_t)s->batch * s->M * s->K, b = (size_t)s->batch * s->K * s->N, c = (size_t)s->batch * s->M * s->N;
        if (a > maxa) maxa = a;
        if (b > maxb) maxb = b;
        if (c > maxc) maxc = c;
    }
    float *A = malloc(maxa * sizeof(float)), *B = malloc(maxb * sizeof(float)), *C = malloc(maxc * sizeof(float));
    double *t = malloc((size_t)reps * sizeof(double));
    if (!A || !B || !C || !t) { fprintf(stderr, "attnlab bench gemm: out of memory\n"); free(A); free(B); free(C); free(t); return 1; }
    al_rng r; al_rng_seed(&r, 1, AL_RNG_DATA);
    for (size_t i = 0; i < maxa; i++) A[i] = 2.f * al_rng_uniform(&r) - 1.f;
    for (size_t i = 0; i < maxb; i++) B[i] = 2.f * al_rng_uniform(&r) - 1.f;

    printf("# attnlab bench gemm: kernel %s, default backend %s", al_gemm_isa(), al_gemm_backend());
    if (backends & BK_OPENBLAS) printf(", OpenBLAS core %s", blas.corename());
    printf(", reps %d, %s clock\n", reps, cpu_clock ? "CPU (1 thread: its own; T threads: process / T)" : "wall");
    printf("%-18s %-16s %5s %4s %-9s %10s %9s %10s %9s\n", "shape", "MxNxK", "trans", "thr", "backend", "median_ms",
           "GFLOP/s", "min_ms", "best_GF/s");
    int rc = 0;
    for (int ti = 0; ti < nthreads && !rc; ti++) {
        set_threads(threads[ti]);
        /* One backend at a time: OpenBLAS's pthread workers keep spinning for a while after a call,
         * which would slow down an attnlab run that follows it directly. */
        for (int bk = BK_ATTNLAB; bk <= BK_OPENBLAS && !rc; bk <<= 1) {
            if (!(backends & bk)) continue;
            for (int si = 0; si < NSHAPES && !rc; si++) {
                const shape *s = &shapes[si];
                memset(C, 0xff, (size_t)s->batch * s->M * s->N * sizeof(float));   /* NaN garbage: beta = 0 */
                run(s, bk, threads[ti], A, B, C);
                char msg[160];
                if (!check(s, A, B, C, msg, sizeof msg)) {
                    fprintf(stderr, "attnlab bench gemm: %s %s mismatch: %s\n", s->what,
                            bk == BK_ATTNLAB ? "attnlab" : "openblas", msg);
                    rc = 1;
                    break;
                }
                for (int k = 0; k < reps; k++) {
                    int tt = threads[ti];
                    double t0 = !cpu_clock ? al_time() : tt == 1 ? thread_cpu_time() : process_cpu_time();
                    run(s, bk, tt, A, B, C);
                    double t1 = !cpu_clock ? al_time() : tt == 1 ? thread_cpu_time() : process_cpu_time();
                    t[k] = cpu_clock && tt > 1 ? (t1 - t0) / tt : t1 - t0;
                }
                qsort(t, (size_t)reps, sizeof *t, cmp_double);
                double med = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
                double flop = 2.0 * s->M * s->N * s->K * s->batch;
                char dims[40], tr[8];
                snprintf(dims, sizeof dims, "%dx%dx%d", s->M, s->N, s->K);
                snprintf(tr, sizeof tr, "%c%c", s->ta ? 'T' : 'N', s->tb ? 'T' : 'N');
                if (s->batch > 1) snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "*%d", s->batch);
                printf("%-18s %-16s %5s %4d %-9s %10.3f %9.1f %10.3f %9.1f\n", s->what, dims, tr, threads[ti],
                       bk == BK_ATTNLAB ? "attnlab" : "openblas", med * 1e3, flop / med * 1e-9, t[0] * 1e3, flop / t[0] * 1e-9);
                fflush(stdout);
            }
        }
    }
    free(A); free(B); free(C); free(t);
    return rc;
}
