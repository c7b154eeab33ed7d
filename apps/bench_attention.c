/* bench_attention.c — attnlab bench attention: forward and forward+backward time, GFLOP/s and peak
 * memory of the attention kernels (full at N = 196, 784, 3136; window 5×5 and 7×7 on 28×28;
 * graph attention on a random graph of 100 000 nodes and 1 000 000 edges).
 *
 * FLOPs are the useful multiply-adds, recomputation not counted: full forward 4·B·H·N²·D
 * (Q·Kᵀ and P·V), backward 8·B·H·N²·D (dV, dP, dQ, dK); sparse patterns per present key slot
 * 2·(D+Dv) forward and 4·(D+Dv) backward. Peak memory: the context arena's high-water mark
 * (activations, saved tensors, gradients; the inputs themselves are malloc'd and listed apart)
 * and the process's peak RSS so far (monotone: configurations run smallest first). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "attnlab/attention.h"
#include "attnlab/kernels.h"

typedef struct bcase {
    const char *name;
    al_pattern pat;
    int B, H, N, D, additive, rel;   /* rel: a learned relative-position bias (H, offsets) */
} bcase;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_double); return v[n / 2]; }
static double cpu_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(FILE *f)
{
    cli_usage(f,
            "usage: attnlab bench attention [--reps N] [--only full|window|graph] [--threads N]\n\n"
            "Times the attention kernels, forward and forward+backward (median of --reps runs),\n"
            "and reports GFLOP/s and peak memory (arena high-water mark and process peak RSS).\n"
            "  full attention  N = 196, 784, 3136 (28x28 = 784), batch 8, 4 heads, d = 16 (d_model 64)\n"
            "  window2d        5x5 and 7x7 on a 28x28 grid, batch 8, 4 heads, d = 16; and the local\n"
            "                  model's layer: 5x5 on 14x14, batch 64, 4 heads, d = 16, relative bias\n"
            "  graph           additive (GAT) score, 100000 nodes, 1000000 edges, 4 heads, d = 16\n\n"
            "options:\n"
            "  --reps N      repetitions per measurement, median reported (default 3)\n"
            "  --only WHAT   run only full, window or graph cases\n"
            "  --threads N   OpenMP threads (default: all)\n"
            "  -h, --help    this text\n");
}

/* Random graph: every node gets a self-loop and deg−1 random neighbours (sorted); rows·deg edges. */
static int make_graph(al_csr *g, int n, int deg, uint64_t seed)
{
    memset(g, 0, sizeof *g);
    g->rows = g->cols = n; g->nnz = (int64_t)n * deg;
    g->rowptr = malloc((size_t)(n + 1) * sizeof(int64_t));
    g->col = malloc((size_t)g->nnz * sizeof(int));
    if (!g->rowptr || !g->col) return -1;
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    for (int i = 0; i < n; i++) {
        int *c = g->col + (int64_t)i * deg;
        c[0] = i;
        for (int k = 1; k < deg; k++) c[k] = (int)al_rng_below(&r, (uint32_t)n);
        for (int a = 1; a < deg; a++) for (int b = a; b > 0 && c[b] < c[b - 1]; b--) { int t = c[b]; c[b] = c[b - 1]; c[b - 1] = t; }
        g->rowptr[i] = (int64_t)i * deg;
    }
    g->rowptr[n] = g->nnz;
    return 0;
}

/* Runs one case; fills times (s) and the arena peak. Returns 0 or -1 (message printed). */
static int run_case(const bcase *bc, int reps, double *t_fwd, double *t_all, double *c_all, double *c_min,
                    size_t *peak, double *flops_f, double *flops_b)
{
    int64_t nq = (int64_t)bc->B * bc->H * bc->N * bc->D;
    int noff = bc->rel ? al_pattern_offsets(&bc->pat) : 0;
    float *buf = malloc((size_t)(3 * nq + 2 * bc->H * bc->D + bc->H * noff) * sizeof(float));
    double *tf = malloc((size_t)(reps + 1) * sizeof(double)), *ta = malloc((size_t)(reps + 1) * sizeof(double));
    double *ca = malloc((size_t)(reps + 1) * sizeof(double));
    al_ctx *c = al_ctx_new(1);
    if (!buf || !tf || !ta || !ca || !c) { free(ca); fprintf(stderr, "attnlab bench attention: out of memory\n"); free(buf); free(tf); free(ta); al_ctx_free(c); return -1; }
    al_rng r; al_rng_seed(&r, 7, AL_RNG_DATA);
    for (int64_t i = 0; i < 3 * nq + 2 * bc->H * bc->D + bc->H * noff; i++) buf[i] = 2.f * al_rng_uniform(&r) - 1.f;
    int sh[4] = {bc->B, bc->H, bc->N, bc->D}, ash[2] = {bc->H, bc->D}, rsh[2] = {bc->H, noff};
    al_attn_desc d = {.pattern = bc->pat, .score = bc->additive ? AL_SCORE_ADDITIVE : AL_SCORE_DOT, .slope = 0.2f};
    int rc = 0;
    for (int mode = 0; mode < 2 && !rc; mode++)
        for (int rep = -1; rep < reps; rep++) {   /* rep −1: warm-up (arena sized, pages touched) */
            al_ctx_reset(c);
            al_tensor *q = al_wrap(c, buf, 4, sh), *k = al_wrap(c, buf + nq, 4, sh), *v = al_wrap(c, buf + 2 * nq, 4, sh);
            al_tensor *aq = bc->additive ? al_wrap(c, buf + 3 * nq, 2, ash) : NULL;
            al_tensor *ak = bc->additive ? al_wrap(c, buf + 3 * nq + bc->H * bc->D, 2, ash) : NULL;
            al_tensor *rel = noff ? al_wrap(c, buf + 3 * nq + 2 * bc->H * bc->D, 2, rsh) : NULL;
            if (!q || !k || !v || (noff && !rel)) { rc = -1; break; }
            q->requires_grad = k->requires_grad = v->requires_grad = mode;
            if (rel) rel->requires_grad = mode;
            if (aq) aq->requires_grad = ak->requires_grad = mode;
            double t0 = al_time(), c0 = cpu_time();
            al_tensor *o = al_attention(c, &d, q, k, v, aq, ak, rel, NULL);
            if (!o) { rc = -1; break; }
            if (mode) {
                float *g = al_grad(c, o);
                if (!g) { rc = -1; break; }
                for (int64_t i = 0; i < o->numel; i++) g[i] = 1e-3f;
                if (al_backward_run(c) != AL_OK) { rc = -1; break; }
            }
            if (rep < 0) continue;
            (mode ? ta : tf)[rep] = al_time() - t0;
            if (mode) ca[rep] = cpu_time() - c0;
        }
    if (rc) fprintf(stderr, "attnlab bench attention: %s: %s\n", bc->name, al_ctx_error(c));
    else {
        *t_fwd = median(tf, reps); *t_all = median(ta, reps); *c_all = median(ca, reps); *peak = c->arena.peak;
        *c_min = ca[0];   /* sorted by median() */
        double bh = (double)bc->B * bc->H;
        if (bc->pat.kind == AL_PAT_FULL) {
            *flops_f = 4.0 * bh * bc->N * (double)bc->N * bc->D;
            *flops_b = 8.0 * bh * bc->N * (double)bc->N * bc->D;
        } else {
            double present = 0;
            if (bc->pat.kind == AL_PAT_GRAPH) present = (double)bc->pat.adj->nnz;
            else {
                int W = bc->pat.grid_w, Hg = bc->pat.grid_h, rh = bc->pat.win_h / 2, rw = bc->pat.win_w / 2;
                for (int i = 0; i < bc->N; i++) {
                    int y = i / W, x = i % W;
                    int ny = (y + rh < Hg ? y + rh : Hg - 1) - (y - rh > 0 ? y - rh : 0) + 1;
                    int nx = (x + rw < W ? x + rw : W - 1) - (x - rw > 0 ? x - rw : 0) + 1;
                    present += (double)ny * nx;
                }
            }
            *flops_f = 2.0 * bh * present * (2 * bc->D);
            *flops_b = 4.0 * bh * present * (2 * bc->D);
        }
    }
    free(buf); free(tf); free(ta); free(ca); al_ctx_free(c);
    return rc;
}

/* GFLOP/s per core (CPU time) of al_gemm on a 512³ square product and on the Q·Kᵀ shape of full
 * attention (N×N×16): the yardstick for the attention kernels' per-core rate. The Q·Kᵀ rate is
 * the best of max(reps, 5) runs (the least disturbed by other processes on a shared machine). */
static void gemm_baseline(int reps, double *square, double *qk)
{
    int n = 512, N = 784, D = 16;
    size_t sz = (size_t)(n * n > N * N ? n * n : N * N);
    float *a = calloc(sz, sizeof(float)), *b = calloc(sz, sizeof(float)), *cc = calloc(sz, sizeof(float));
    double *t = malloc((size_t)reps * sizeof(double));
    *square = *qk = 0;
    if (!a || !b || !cc || !t) { free(a); free(b); free(cc); free(t); return; }
    for (int r = 0; r < reps; r++) { double t0 = cpu_time(); al_gemm_serial(0, 0, n, n, n, 1.f, a, n, b, n, 0.f, cc, n); t[r] = cpu_time() - t0; }
    *square = 2.0 * n * n * n / median(t, reps) * 1e-9;
    double best = 1e30;
    for (int r = 0; r < (reps > 5 ? reps : 5); r++) {
        double t0 = cpu_time();
        for (int rep = 0; rep < 8; rep++) al_gemm_serial(0, 1, N, N, D, 1.f, a, D, b, D, 0.f, cc, N);
        double dt = cpu_time() - t0;
        best = dt < best ? dt : best;
    }
    *qk = 8 * 2.0 * N * N * D / best * 1e-9;
    free(a); free(b); free(cc); free(t);
}

int bench_attention_main(int argc, char **argv)
{
    int reps = 3, threads = 0;
    const char *only = NULL;
    static const struct option opts[] = {
        {"reps", required_argument, 0, 'r'}, {"only", required_argument, 0, 'o'},
        {"threads", required_argument, 0, 't'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    opterr = 0; optind = 1;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (ch) {
        case 'r': reps = (int)strtol(optarg, &end, 10);
            if (!end || *end || reps < 1) { fprintf(stderr, "attnlab bench attention: --reps needs a positive integer, got '%s'\n", optarg); return 2; }
            break;
        case 't': if (cli_threads("bench attention", optarg, &threads)) return 2;
            break;
        case 'o': only = optarg;
            if (strcmp(only, "full") && strcmp(only, "window") && strcmp(only, "graph")) {
                fprintf(stderr, "attnlab bench attention: --only takes full, window or graph, got '%s'\n", only); return 2;
            }
            break;
        case 'h': usage(stdout); return 0;
        case ':': fprintf(stderr, "attnlab bench attention: option '%s' needs a value (see --help)\n", argv[optind - 1]); return 2;
        default: fprintf(stderr, "attnlab bench attention: unknown option '%s' (see --help)\n", argv[optind - 1]); return 2;
        }
    }
    if (optind < argc) { fprintf(stderr, "attnlab bench attention: unexpected argument '%s' (see --help)\n", argv[optind]); return 2; }
    if (cli_check_env_threads("bench attention")) return 2;
    if (threads) al_set_threads(threads);

    al_csr g;
    int want_graph = !only || !strcmp(only, "graph");
    if (want_graph && make_graph(&g, 100000, 10, 3) != 0) { fprintf(stderr, "attnlab bench attention: out of memory\n"); return 1; }
    bcase cases[] = {
        {"full", al_pattern_full(), 8, 4, 196, 16, 0, 0},
        {"full", al_pattern_full(), 8, 4, 784, 16, 0, 0},
        {"full", al_pattern_full(), 8, 4, 3136, 16, 0, 0},
        {"window2d 5x5", al_pattern_window2d(28, 28, 5, 5), 8, 4, 784, 16, 0, 0},
        {"window2d 7x7", al_pattern_window2d(28, 28, 7, 7), 8, 4, 784, 16, 0, 0},
        {"local 5x5 rel", al_pattern_window2d(14, 14, 5, 5), 64, 4, 196, 16, 0, 1},   /* the `local` model's layer */
        {"graph (GAT)", want_graph ? al_pattern_graph(&g) : al_pattern_full(), 1, 4, 100000, 16, 1, 0},
    };
    int ncase = (int)(sizeof cases / sizeof cases[0]);
    printf("# attnlab bench attention: %d thread(s), gemm backend %s, median of %d\n", al_threads(), al_gemm_backend(), reps);
    double gsq, gqk;
    gemm_baseline(reps, &gsq, &gqk);
    printf("# al_gemm_serial, one core (CPU time): %.1f GFLOP/s (512^3), %.1f GFLOP/s (784x784x16, the Q.K^T shape)\n", gsq, gqk);
    printf("# times are wall-clock medians; fb_cpu_ms is the process CPU time of fwd+bwd (all threads) and\n"
           "# core_GF/s = fwd+bwd FLOPs / fb_cpu_ms, the per-core rate to compare with al_gemm above;\n"
           "# vs_gemm = fwd+bwd FLOPs / the least fb CPU time of the reps, over the Q.K^T GEMM rate above\n"
           "# (best of its runs): both per core, CPU time, this process, least disturbed runs\n");
    printf("%-14s %7s %5s %3s %3s %10s %10s %10s %9s %9s %9s %7s %10s %9s %9s\n", "pattern", "N", "B", "H", "d",
           "fwd_ms", "fwdbwd_ms", "fb_cpu_ms", "fwd_GF/s", "all_GF/s", "core_GF/s", "vs_gemm", "arena_MB", "input_MB", "rss_MB");
    double ratio784 = -1;
    size_t peak_full[3] = {0, 0, 0};
    int rc = 0;
    for (int i = 0; i < ncase; i++) {
        const bcase *bc = &cases[i];
        int kind = bc->pat.kind == AL_PAT_FULL && i < 3 ? 0 : (i < 6 ? 1 : 2);
        if (only && strcmp(only, kind == 0 ? "full" : kind == 1 ? "window" : "graph")) continue;
        double tf = 0, ta = 0, ca = 0, cm = 0, ff = 0, fb = 0;
        size_t peak = 0;
        if (run_case(bc, reps, &tf, &ta, &ca, &cm, &peak, &ff, &fb) != 0) { rc = 1; continue; }
        if (i < 3) peak_full[i] = peak;
        double in_mb = (3.0 * bc->B * bc->H * bc->N * bc->D * sizeof(float)) / 1048576.0;
        double core = (ff + fb) / ca * 1e-9, vs = gqk > 0 ? (ff + fb) / cm * 1e-9 / gqk : 0;
        if (i == 1) ratio784 = vs;
        printf("%-14s %7d %5d %3d %3d %10.2f %10.2f %10.2f %9.1f %9.1f %9.1f %6.0f%% %10.1f %9.1f %9.1f\n", bc->name, bc->N, bc->B,
               bc->H, bc->D, tf * 1e3, ta * 1e3, ca * 1e3, ff / tf * 1e-9, (ff + fb) / ta * 1e-9, core, 100 * vs,
               peak / 1048576.0, in_mb,
               al_peak_rss_bytes() / 1048576.0);
        fflush(stdout);
    }
    if (ratio784 >= 0)
        printf("# full N=784 (pixel tokens, d=16) fwd+bwd per core at %.0f%% of the 784x784x16 GEMM rate (target: >= 50%%)\n",
               100 * ratio784);
    if (peak_full[1] && peak_full[2])
        printf("# full attention fwd+bwd arena peak N=3136 / N=784: %.2f (linear in N would be 4; limit 6)\n",
               (double)peak_full[2] / (double)peak_full[1]);
    if (want_graph) al_csr_free(&g);
    return rc;
}
