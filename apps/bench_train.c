/* bench_train.c — attnlab bench train: image-model training and inference throughput, peak memory.
 * Same protocol as the PyTorch peer (peers/torch_bench.py): random N(0,1) input of (batch, 1, 28, 28),
 * random labels, AdamW lr 1e-3; warm-up steps, then timed steps; inference with grad off. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/kernels.h"
#include "attnlab/models.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab bench train --model cnn|sa|local [OPTIONS]\n\n"
        "Training img/s (forward, cross-entropy, backward, AdamW) and inference img/s on random\n"
        "1x28x28 input with 10 classes, after warm-up steps, and the peak RSS. The first step is counted\n"
        "in FLOPs (matmul-class: linear, conv2d, attention products; kernels.h al_flops_*): MFLOP per image,\n"
        "achieved GFLOP/s and their share of this run's 1024^3 al_gemm rate (gemm_gflops), by op below.\n\n"
        "  --model M      cnn, sa or local (default cnn); a comma list runs several\n"
        "  --batch N      (default 64)\n"
        "  --threads N    OpenMP threads (default 2)\n"
        "  --steps N      timed steps (default 30)\n"
        "  --warmup N     untimed steps first (default 5)\n"
        "  --patch P      sa/local patch side (default 2)\n"
        "  --max-memory SIZE  memory budget of the model, e.g. 512M or 4G\n"
        "  --train-only   skip the inference loop and the GEMM reference (their figures 0): the training step alone\n"
        "  --infer-only   skip the training loop and the GEMM reference (their figures 0): inference alone (for a profile)\n"
        "                 (scripts/profile.sh)\n");
}

/* The machine's reference rate: al_gemm on 1024x1024x1024 with this run's threads, median of 11 after
 * 0.3 s of warm-up, in GFLOP/s (2 FLOPs per multiply-add). */
static double gemm_rate(void)
{
    enum { S = 1024, R = 11 };
    float *a = malloc((size_t)S * S * sizeof(float)), *b = malloc((size_t)S * S * sizeof(float)), *c = malloc((size_t)S * S * sizeof(float));
    double t[R];
    if (!a || !b || !c) { free(a); free(b); free(c); return 0; }
    al_rng r; al_rng_seed(&r, 7, AL_RNG_DATA);
    for (int i = 0; i < S * S; i++) { a[i] = al_rng_uniform(&r) - 0.5f; b[i] = al_rng_uniform(&r) - 0.5f; }
    /* warm-up for at least 0.3 s: a single call (13 ms) measured half the sustained rate on a
     * cold shared host (threads parked, clocks down) and made every share look too good */
    for (double t0 = al_time(); al_time() - t0 < 0.3;) al_gemm(0, 0, S, S, S, 1.0f, a, S, b, S, 0.0f, c, S);
    for (int k = 0; k < R; k++) {
        double t0 = al_time();
        al_gemm(0, 0, S, S, S, 1.0f, a, S, b, S, 0.0f, c, S);
        t[k] = al_time() - t0;
    }
    for (int i = 1; i < R; i++) for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { double x = t[j]; t[j] = t[j - 1]; t[j - 1] = x; }
    free(a); free(b); free(c);
    return 2.0 * S * S * S / t[R / 2] / 1e9;
}

static double g_gemm;   /* this run's gemm_rate() */
static int g_train_only;   /* --train-only: no inference loop */
static int g_infer_only;   /* --infer-only: no training loop */

static int bench_one(const char *model, int batch, int steps, int warmup, int patch)
{
    al_error err = {{0}};
    al_model_config cfg;
    al_model m;
    if (al_model_config_default(&cfg, model, 1, 28, 28, 10, &err) != AL_OK) { fprintf(stderr, "attnlab bench train: %s\n", err.msg); return 2; }
    if (patch > 0) cfg.patch = patch;
    if (al_model_init(&m, &cfg, 0, &err) != AL_OK) { fprintf(stderr, "attnlab bench train: %s\n", err.msg); return 2; }
    al_optim opt;
    if (al_optim_init(&opt, AL_ADAMW, m.params.total, 1e-3f, &err) != AL_OK) { fprintf(stderr, "attnlab bench train: %s\n", err.msg); al_model_free(&m); return 1; }
    opt.weight_decay = al_model_arch_find(model)->weight_decay;
    float *xin = malloc((size_t)batch * 784 * sizeof(float));
    int *y = malloc((size_t)batch * sizeof(int));
    al_ctx *c = al_ctx_new(0);
    int rc = 1;
    if (!xin || !y || !c) { fprintf(stderr, "attnlab bench train: out of memory\n"); goto out; }
    al_rng r; al_rng_seed(&r, 0, AL_RNG_DATA);
    for (int i = 0; i < batch * 784; i++) xin[i] = al_rng_normal(&r);
    for (int i = 0; i < batch; i++) y[i] = (int)al_rng_below(&r, 10);
    double t = 0;
    for (int i = 0; i < (g_infer_only ? 0 : warmup + steps); i++) {
        if (i == warmup) t = al_time();
        if (i == 0) { al_flops_reset(); al_flops_enable(1); }   /* the first (untimed when warm-up > 0) step is counted */
        if (i == 1) al_flops_enable(0);
        al_ctx_reset(c);
        al_tensor *x = al_wrap(c, xin, 4, (int[]){batch, 1, 28, 28});
        al_tensor *loss = al_cross_entropy(c, al_model_forward(c, &m, x), y, NULL);
        al_params_zero_grad(&m.params);
        if (!loss || al_backward(c, loss) != AL_OK) { fprintf(stderr, "attnlab bench train: %s\n", al_ctx_error(c)); goto out; }
        al_optim_step(&opt, &m.params);
    }
    double train = g_infer_only ? 0 : steps * (double)batch / (al_time() - t);
    al_flops_enable(0);
    double fwd = 0, bwd = 0;
    char byop[512] = "";
    for (int i = 0, o = 0; i < al_flops_count(); i++) {
        const char *op; double f, b;
        al_flops_get(i, &op, &f, &b);
        fwd += f; bwd += b;
        if (o < (int)sizeof byop)
            o += snprintf(byop + o, sizeof byop - (size_t)o, " %s %.2f/%.2f", op, f / batch / 1e6, b / batch / 1e6);
    }
    fwd /= batch; bwd /= batch;
    c->grad_enabled = 0; c->training = 0;
    double infer = 0;   /* --train-only: no inference loop */
    if (!g_train_only) {
        for (int i = 0; i < warmup + steps; i++) {
            if (i == warmup) t = al_time();
            al_ctx_reset(c);
            al_tensor *x = al_wrap(c, xin, 4, (int[]){batch, 1, 28, 28});
            if (!al_model_forward(c, &m, x)) { fprintf(stderr, "attnlab bench train: %s\n", al_ctx_error(c)); goto out; }
        }
        infer = steps * (double)batch / (al_time() - t);
    }
    const double tr_gf = (fwd + bwd) * train / 1e9, in_gf = fwd * infer / 1e9;
    printf("%-13s train_img_per_s %9.1f  infer_img_per_s %9.1f  params %lld  peak_rss_mb %.1f  arena_mb %.1f"
           "  mflop_per_img %.2f  train_gflops %.1f  train_share %.3f  infer_gflops %.1f  infer_share %.3f  gemm_gflops %.1f\n",
           model, train, infer, (long long)m.params.total, al_peak_rss_bytes() / 1048576.0, al_arena_capacity(&c->arena) / 1048576.0,
           (fwd + bwd) / 1e6, tr_gf, g_gemm > 0 ? tr_gf / g_gemm : 0, in_gf, g_gemm > 0 ? in_gf / g_gemm : 0, g_gemm);
    printf("  by-op %s MFLOP per image (forward/backward):%s\n", model, byop);
    fflush(stdout);
    rc = 0;
out:
    al_ctx_free(c); free(xin); free(y);
    al_optim_free(&opt); al_model_free(&m);
    return rc;
}

int bench_train_main(int argc, char **argv)
{
    const char *models = "cnn";
    int batch = 64, threads = 2, steps = 30, warmup = 5, patch = 0;
    enum { O_MODEL = 256, O_BATCH, O_THREADS, O_STEPS, O_WARMUP, O_PATCH, O_HELP, O_MAXMEM, O_TRAINONLY, O_INFERONLY };
    static const struct option lo[] = {
        {"model", 1, 0, O_MODEL}, {"models", 1, 0, O_MODEL}, {"batch", 1, 0, O_BATCH}, {"threads", 1, 0, O_THREADS},
        {"steps", 1, 0, O_STEPS}, {"warmup", 1, 0, O_WARMUP}, {"patch", 1, 0, O_PATCH}, {"max-memory", 1, 0, O_MAXMEM},
        {"train-only", 0, 0, O_TRAINONLY},
        {"infer-only", 0, 0, O_INFERONLY},
        {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (ch == O_MODEL) { models = optarg; continue; }
        if (ch == O_TRAINONLY) { g_train_only = 1; continue; }
        if (ch == O_INFERONLY) { g_infer_only = 1; continue; }
        if (ch == O_MAXMEM) { if (cli_max_memory("bench train", optarg)) return 2; continue; }
        if (ch == 'h' || ch == O_HELP) { usage(stdout); return 0; }
        if (ch < O_BATCH || ch > O_PATCH) { fprintf(stderr, "(attnlab bench train --help lists the options)\n"); return 2; }
        if (ch == O_THREADS) { if (cli_threads("bench train", optarg, &threads)) return 2; continue; }
        char *end; long v = strtol(optarg, &end, 10);
        if (end == optarg || *end || v < (ch == O_WARMUP ? 0 : 1) || v > 1 << 20) { fprintf(stderr, "attnlab bench train: bad number '%s'\n", optarg); return 2; }
        if (ch == O_BATCH) batch = (int)v; else if (ch == O_THREADS) threads = (int)v;
        else if (ch == O_STEPS) steps = (int)v; else if (ch == O_WARMUP) warmup = (int)v; else patch = (int)v;
    }
    if (optind < argc) { fprintf(stderr, "attnlab bench train: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (g_train_only && g_infer_only) { fprintf(stderr, "attnlab bench train: --train-only and --infer-only exclude each other\n"); return 2; }
    if (cli_check_env_threads("bench train")) return 2;
    al_set_threads(threads);
    fprintf(stderr, "attnlab bench train: %d threads, gemm %s (%s kernels), batch %d, %d steps after %d warm-up\n", al_threads(),
            al_gemm_backend(), al_gemm_isa(), batch, steps, warmup);
    fprintf(stderr, "attnlab bench train: attention kernels: %s\n", al_attn_kernels());
    fprintf(stderr, "attnlab bench train: convolutions: %s\n", al_conv_kernels());
    g_gemm = g_train_only || g_infer_only ? 0 : gemm_rate();   /* not in a profile of the training step */
    char list[256]; snprintf(list, sizeof list, "%s", models);
    int rc = 0;
    for (char *sv, *tok = strtok_r(list, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv)) {
        int r = bench_one(tok, batch, steps, warmup, patch);
        if (r) rc = r;
    }
    return rc;
}
