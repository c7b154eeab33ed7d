/* bench_speech.c — attnlab bench speech: the cost of the speech models against utterance length. For
 * every length (--seconds) and model (--models), a child process trains frame labelling (N-to-N, 11
 * classes) through the real loop (al_speech_train: gather, forward, cross-entropy, backward, AdamW) on
 * --utterances synthetic utterances of that length (39 random features per frame: the cost does not
 * depend on the values), --warmup untimed steps then --steps timed ones, and reports training frames/s
 * (wall and CPU) and its peak RSS — its own process, so the peak is that model's at that length, with
 * nothing else loaded. Repetitions (--reps) alternate the models; the summary gives medians.
 *
 * One line per run on stdout:
 *   speech MODEL seconds S frames_per_utt T rep R frames_per_s X cpu_frames_per_s Y peak_rss_mb M params P
 * then per (model, length) the medians, and trunc's speed-up over sa. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/train.h"
#include "attnlab/fbank.h"
#include "attnlab/speech.h"

#define CMD "bench speech"
#define MAXL 16
#define MAXM 8
#define MAXR 9

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab bench speech [OPTIONS]\n\n"
        "Training cost of the speech models against utterance length: per length and model, a child process\n"
        "trains frame labelling on synthetic utterances of that length (39 features per frame, 100 frames/s)\n"
        "and prints training frames/s (wall and CPU) and its peak RSS; repetitions alternate the models and\n"
        "the last lines give medians and trunc's speed-up over sa.\n\n"
        "  --models LIST    comma-separated (default sa,trunc,rnn)\n"
        "  --seconds LIST   utterance lengths in seconds (default 1,2,4,8,16)\n"
        "  --window K       trunc's radius in frames (default 8)\n"
        "  --utterances N   utterances per batch = per step (default 4)\n"
        "  --steps N        timed steps (default 4)   --warmup N  untimed steps first (default 1)\n"
        "  --reps N         repetitions, alternating the models (default 3)\n"
        "  --threads N      OpenMP threads (default 1)\n");
}

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Every epoch is one step (the whole set is one batch): the clock starts when step `warm` ends. */
typedef struct btime { int warm; double t0, c0, t1, c1; } btime;
static int on_step(void *ud, const al_speech_progress *p)
{
    btime *b = ud;
    if (p->kind != 0) return 0;
    if (p->epoch == b->warm) { b->t0 = al_time(); b->c0 = cpu_now(); }
    b->t1 = al_time(); b->c1 = cpu_now();
    return 0;
}

/* One run in this (child) process; prints its line. 0 or 1. */
static int one_run(const char *model, double seconds, int window, int nutt, int steps, int warm, int rep)
{
    al_fbank_cfg fc = al_fbank_defaults();
    const int T = (int)al_fbank_frames(&fc, (int64_t)llround(seconds * 16000));
    al_speech_data d;
    memset(&d, 0, sizeof d);
    d.n = nutt; d.dim = AL_MFCC_DIM; d.classes = 11; d.framewise = 1; d.max_frames = T;
    d.foff = malloc((size_t)(nutt + 1) * sizeof(int64_t));
    d.x = malloc((size_t)nutt * T * AL_MFCC_DIM * sizeof(float));
    d.flab = malloc((size_t)nutt * T);
    d.speaker = calloc((size_t)nutt, sizeof(int));
    if (!d.foff || !d.x || !d.flab || !d.speaker) { fprintf(stderr, "attnlab bench speech: out of memory\n"); return 1; }
    al_rng g; al_rng_seed(&g, 1, AL_RNG_DATA);
    for (int i = 0; i <= nutt; i++) d.foff[i] = (int64_t)i * T;
    for (int64_t k = 0; k < (int64_t)nutt * T * AL_MFCC_DIM; k++) d.x[k] = al_rng_uniform(&g) * 2 - 1;
    for (int64_t k = 0; k < (int64_t)nutt * T; k++) d.flab[k] = (uint8_t)al_rng_below(&g, 11);
    al_error err = {{0}};
    al_seq_config cfg;
    al_seq_model m;
    if (al_speech_config(&cfg, model, &d, 1, &err) != AL_OK) { fprintf(stderr, "attnlab bench speech: %s\n", err.msg); return 1; }
    if (!strcmp(model, "trunc")) cfg.window = window < cfg.max_len ? window : cfg.max_len;
    if (al_seq_init(&m, &cfg, 1, &err) != AL_OK) { fprintf(stderr, "attnlab bench speech: %s\n", err.msg); return 1; }
    al_speech_train_config tc = {.epochs = steps + warm, .batch = nutt, .lr = 1e-4f, .weight_decay = 0.01f, .seed = 1};
    btime bt = {0};
    bt.warm = warm;
    bt.t0 = al_time(); bt.c0 = cpu_now();
    if (al_speech_train(&m, &d, NULL, &tc, on_step, &bt, &err) != AL_OK) { fprintf(stderr, "attnlab bench speech: %s\n", err.msg); return 1; }
    const double secs = bt.t1 - bt.t0, cpu = bt.c1 - bt.c0, frames = (double)steps * nutt * T;
    printf("speech %s seconds %g frames_per_utt %d rep %d frames_per_s %.0f cpu_frames_per_s %.0f peak_rss_mb %.1f params %lld\n",
           model, seconds, T, rep, frames / secs, frames / cpu, al_peak_rss_bytes() / 1048576.0, (long long)m.params.total);
    fflush(stdout);
    al_seq_free(&m);
    al_speech_data_free(&d);
    return 0;
}

static int cmp_d(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double median(double *v, int n) { qsort(v, (size_t)n, sizeof *v, cmp_d); return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]); }

int bench_speech_main(int argc, char **argv)
{
    const char *models = "sa,trunc,rnn", *seconds = "1,2,4,8,16";
    int window = 8, nutt = 4, steps = 4, warm = 1, reps = 3, threads = 1;
    static const struct option lo[] = {{"models", 1, 0, 'm'}, {"seconds", 1, 0, 's'}, {"window", 1, 0, 'w'}, {"utterances", 1, 0, 'u'},
                                       {"steps", 1, 0, 'n'}, {"warmup", 1, 0, 'W'}, {"reps", 1, 0, 'r'}, {"threads", 1, 0, 't'},
                                       {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case 'm': models = optarg; break;
        case 's': seconds = optarg; break;
        case 'w': bad = cli_int32(CMD, "--window", optarg, 0, 100000, &window); break;
        case 'u': bad = cli_int32(CMD, "--utterances", optarg, 1, 4096, &nutt); break;
        case 'n': bad = cli_int32(CMD, "--steps", optarg, 1, 100000, &steps); break;
        case 'W': bad = cli_int32(CMD, "--warmup", optarg, 0, 100000, &warm); break;
        case 'r': bad = cli_int32(CMD, "--reps", optarg, 1, MAXR, &reps); break;
        case 't': bad = cli_threads(CMD, optarg, &threads); break;
        case 'h': usage(stdout); return 0;
        default: return cli_bad_option(CMD, argv);
        }
    }
    if (bad) return 2;
    if (optind < argc) { fprintf(stderr, "attnlab bench speech: unexpected argument '%s'\n", argv[optind]); return 2; }
    char mbuf[256], *mname[MAXM];
    int nm = 0;
    snprintf(mbuf, sizeof mbuf, "%s", models);
    for (char *t = strtok(mbuf, ","); t; t = strtok(NULL, ",")) {
        const al_seq_arch *k = al_seq_arch_find(t);
        if (!k || !strcmp(t, "fc")) { fprintf(stderr, "attnlab bench speech: --models: '%s' is not a speech model (window-fc, rnn, sa, trunc)\n", t); return 2; }
        if (nm == MAXM) { fprintf(stderr, "attnlab bench speech: --models: at most %d\n", MAXM); return 2; }
        mname[nm++] = t;
    }
    double secs[MAXL];
    int nl = 0;
    char sbuf[256];
    snprintf(sbuf, sizeof sbuf, "%s", seconds);
    for (char *t = strtok(sbuf, ","); t; t = strtok(NULL, ",")) {
        char *end; double v = strtod(t, &end);
        if (*end || !(v >= 0.05 && v <= 120)) { fprintf(stderr, "attnlab bench speech: --seconds: '%s' is not a length in 0.05..120\n", t); return 2; }
        if (nl == MAXL) { fprintf(stderr, "attnlab bench speech: --seconds: at most %d lengths\n", MAXL); return 2; }
        secs[nl++] = v;
    }
    if (nm == 0 || nl == 0) { fprintf(stderr, "attnlab bench speech: nothing to run\n"); return 2; }
    al_set_threads(threads);
    static double fps[MAXL][MAXM][MAXR], cps[MAXL][MAXM][MAXR], rss[MAXL][MAXM][MAXR];
    printf("# bench speech: %d threads, %d utterances per step, %d timed steps after %d, trunc window %d, %d reps\n",
           threads, nutt, steps, warm, window, reps);
    fflush(stdout);
    for (int li = 0; li < nl; li++)
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < nm; k++) {
                const int mi = r % 2 ? nm - 1 - k : k;                    /* alternate the order */
                int fds[2];
                if (pipe(fds)) { perror("attnlab bench speech: pipe"); return 1; }
                pid_t pid = fork();
                if (pid < 0) { perror("attnlab bench speech: fork"); return 1; }
                if (pid == 0) {
                    close(fds[0]);
                    if (dup2(fds[1], 1) < 0) _exit(1);
                    _exit(one_run(mname[mi], secs[li], window, nutt, steps, warm, r + 1));
                }
                close(fds[1]);
                char line[512] = {0};
                FILE *in = fdopen(fds[0], "r");
                if (!in || !fgets(line, sizeof line, in)) line[0] = 0;
                if (in) fclose(in);
                int status = 0;
                waitpid(pid, &status, 0);
                double f = NAN, cf = NAN, mb = NAN;
                char *p = strstr(line, " frames_per_s ");
                if (p) f = atof(p + 14);
                p = strstr(line, "cpu_frames_per_s ");
                if (p) cf = atof(p + 17);
                p = strstr(line, "peak_rss_mb ");
                if (p) mb = atof(p + 12);
                if (!WIFEXITED(status) || WEXITSTATUS(status) || isnan(f)) {
                    fprintf(stderr, "attnlab bench speech: %s at %g s failed\n", mname[mi], secs[li]);
                    return 1;
                }
                fputs(line, stdout);
                fflush(stdout);
                fps[li][mi][r] = f; cps[li][mi][r] = cf; rss[li][mi][r] = mb;
            }
    printf("# medians over the repetitions (frames_per_s by the wall clock, cpu_frames_per_s by the process's CPU time)\n");
    int sa = -1, tr = -1;
    for (int k = 0; k < nm; k++) { if (!strcmp(mname[k], "sa")) sa = k; if (!strcmp(mname[k], "trunc")) tr = k; }
    for (int li = 0; li < nl; li++) {
        double mf[MAXM], mc[MAXM];
        for (int k = 0; k < nm; k++) {
            mf[k] = median(fps[li][k], reps); mc[k] = median(cps[li][k], reps);
            printf("median %s seconds %g frames_per_s %.0f cpu_frames_per_s %.0f peak_rss_mb %.1f\n", mname[k], secs[li], mf[k], mc[k],
                   median(rss[li][k], reps));
        }
        if (sa >= 0 && tr >= 0)
            printf("median trunc_over_sa seconds %g speedup %.2f cpu_speedup %.2f\n", secs[li], mf[tr] / mf[sa], mc[tr] / mc[sa]);
    }
    return 0;
}
