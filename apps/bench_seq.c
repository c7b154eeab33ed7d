/* bench_seq.c — attnlab bench seq: training tokens/s of the sequence models (POS tagging), measured
 * through the real training loop (al_seq_train: gather, forward, cross-entropy, backward, AdamW), with
 * the protocol of the PyTorch peer (peers/torch_pos.py, scripts/torch_pos_buckets.py):
 *
 *   default     one shuffled epoch (--epochs) over the whole training split, batches of 32 sentences;
 *               tokens/s = training tokens / seconds of the training loop (no evaluation), as the
 *               peer's train_tokens_per_s.
 *   --buckets   per length bucket LO-HI (inclusive; "81-" has no upper end), batches of 32 sentences
 *               drawn from that bucket only: steps = max(10, ⌈--tokens / (32 · mean length)⌉) timed
 *               steps after --warmup untimed ones; tokens/s over the timed steps.
 *
 * One line per run on stdout:
 *   MODEL bucket B train_tokens_per_s X tokens N steps S seconds T cpu_seconds C mean_len L params P peak_rss_mb R */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cli.h"
#include "attnlab/train.h"
#include "attnlab/datadir.h"
#include "attnlab/kernels.h"
#include "attnlab/seq.h"

#define CMD "bench seq"
#define MAXBUCKETS 16

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab bench seq [OPTIONS]\n\n"
        "Training tokens/s of the sequence models (POS tagging) through the training loop: one shuffled\n"
        "epoch over the training split, batches of --batch sentences (the peer's protocol); with --buckets,\n"
        "per sentence-length bucket, batches drawn from one bucket only. Prints one line per run.\n\n"
        "  --models LIST   comma-separated (default fc,window-fc,rnn,sa,trunc)\n"
        "  --data NAME|DIR treebank (default ud-english-ewt)\n"
        "  --threads N     OpenMP threads (default 2)\n"
        "  --batch N       sentences per batch (default 32)\n"
        "  --epochs N      whole-split runs: epochs timed (default 1)\n"
        "  --buckets LIST  e.g. 1-10,11-20,21-40,41-80,81- : per-bucket runs instead of whole epochs\n"
        "  --tokens N      per bucket: timed steps = max(10, ceil(N / (batch * mean length))) (default 20000)\n"
        "  --warmup N      per bucket: untimed steps first (default 3)\n"
        "  --seed N        model initialisation and shuffling (default 1)\n");
}

typedef struct bsopts {
    const char *models, *data, *buckets;
    int threads, batch, epochs, tokens, warmup;
    long seed;
} bsopts;

static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Timing of one al_seq_train run: tokens and seconds at the end of step `mark` and at the last step. */
typedef struct btime { int mark; double t0, c0, tok0, t1, c1, tok1; int steps; } btime;

static int on_step(void *ud, const al_seq_progress *p)
{
    btime *b = ud;
    if (p->kind != 0) return 0;
    double now = al_time(), cpu = cpu_seconds(), tok = p->tok_per_s * p->epoch_seconds;
    int step = (p->epoch - 1) * p->steps_per_epoch + p->step;
    if (step == b->mark) { b->t0 = now; b->c0 = cpu; b->tok0 = tok; }
    b->t1 = now; b->c1 = cpu; b->tok1 = tok; b->steps = step;
    return 0;
}

/* n sentences drawn from those of d with lo <= length <= hi (hi < 0: no upper end), encoded by fz:
 * the bucket in a seeded order, cycled through (reshuffled each pass) until n are taken. */
static al_status bucket_data(const al_conllu *d, const al_featurizer *fz, int lo, int hi, int n, uint64_t seed,
                             al_seq_data *out, double *mean_len, al_error *err)
{
    memset(out, 0, sizeof *out);
    int *ids = malloc((size_t)(d->nsent > 0 ? d->nsent : 1) * sizeof(int)), *pick = malloc((size_t)n * sizeof(int));
    if (!ids || !pick) { free(ids); free(pick); return al_seterr(err, "out of memory"); }
    int nb = 0; int64_t tb = 0;
    for (int s = 0; s < d->nsent; s++) {
        int L = d->sent_start[s + 1] - d->sent_start[s];
        if (L >= lo && (hi < 0 || L <= hi)) { ids[nb++] = s; tb += L; }
    }
    al_status st = AL_OK;
    if (nb == 0) st = al_seterr(err, "no training sentence has %d..%d tokens", lo, hi);
    else {
        *mean_len = (double)tb / nb;
        al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
        for (int k = 0; k < n; k++) {
            if (k % nb == 0) al_rng_shuffle(&r, ids, nb);
            pick[k] = ids[k % nb];
        }
        al_conllu sub;
        st = al_conllu_subset(d, pick, n, &sub, err);
        if (st == AL_OK) { st = al_seq_data_encode(fz, &sub, out, err); al_conllu_free(&sub); }
    }
    free(ids); free(pick);
    return st;
}

/* One model on one data set: prints its line; 0 or 1. */
static int run_one(const char *model, const char *bucket, const al_featurizer *fz, const al_seq_data *tr,
                   const bsopts *o, int epochs, int mark, double mean_len)
{
    al_error err = {{0}};
    al_seq_config cfg;
    al_seq_model m;
    if (al_seq_config_default(&cfg, model, al_feat_nwords(fz), al_feat_nsuffixes(fz), AL_UPOS_N, &err) != AL_OK ||
        al_seq_init(&m, &cfg, (uint64_t)o->seed, &err) != AL_OK) {
        fprintf(stderr, "attnlab " CMD ": %s\n", err.msg);
        return 1;
    }
    al_seq_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = epochs; tc.batch = o->batch; tc.eval_batch = 256; tc.lr = 1e-3f; tc.weight_decay = 0.01f;
    tc.seed = (uint64_t)o->seed;
    btime bt;
    memset(&bt, 0, sizeof bt);
    bt.mark = mark;
    double t0 = al_time(), c0 = cpu_seconds();
    int rc = al_seq_train(&m, tr, NULL, &tc, on_step, &bt, &err) != AL_OK;
    if (rc) fprintf(stderr, "attnlab " CMD ": %s: %s\n", model, err.msg);
    else {
        if (mark == 0) { bt.t0 = t0; bt.c0 = c0; bt.tok0 = 0; bt.tok1 = (double)tr->ntok * epochs; }
        double secs = bt.t1 - bt.t0, tok = bt.tok1 - bt.tok0;
        printf("%-10s bucket %-6s train_tokens_per_s %9.0f tokens %8.0f steps %5d seconds %7.3f cpu_seconds %7.3f "
               "mean_len %5.1f params %lld peak_rss_mb %.1f\n", model, bucket, tok / (secs > 1e-9 ? secs : 1e-9), tok,
               bt.steps - mark, secs, bt.c1 - bt.c0, mean_len, (long long)m.params.total, al_peak_rss_bytes() / 1048576.0);
        fflush(stdout);
    }
    al_seq_free(&m);
    return rc;
}

/* "LO-HI" or "LO-" (no upper end) or "N"; 0 or -1. */
static int parse_bucket(const char *s, int *lo, int *hi)
{
    char *end;
    long a = strtol(s, &end, 10), b;
    if (end == s || a < 1 || a > 1000000) return -1;
    if (!*end) { *lo = *hi = (int)a; return 0; }
    if (*end != '-') return -1;
    s = end + 1;
    if (!*s) { *lo = (int)a; *hi = -1; return 0; }
    b = strtol(s, &end, 10);
    if (end == s || *end || b < a || b > 1000000) return -1;
    *lo = (int)a; *hi = (int)b;
    return 0;
}

static int run_all(const bsopts *o, const al_conllu *train, const al_featurizer *fz, const al_seq_data *tr)
{
    char list[256], blist[256];
    int rc = 0;
    snprintf(blist, sizeof blist, "%s", o->buckets ? o->buckets : "all");
    for (char *sb, *bk = strtok_r(blist, ",", &sb); bk; bk = strtok_r(NULL, ",", &sb)) {
        al_seq_data bd, *data = (al_seq_data *)tr;
        int lo = 0, hi = 0, epochs = o->epochs, mark = 0;
        double mean_len = (double)tr->ntok / tr->nsent;
        if (o->buckets) {
            al_error err = {{0}};
            if (parse_bucket(bk, &lo, &hi)) { fprintf(stderr, "attnlab " CMD ": bad bucket '%s' (LO-HI or LO-)\n", bk); return 2; }
            double ml;
            if (bucket_data(train, fz, lo, hi, o->batch, (uint64_t)o->seed, &bd, &ml, &err) != AL_OK) {   /* mean length only */
                fprintf(stderr, "attnlab " CMD ": bucket %s: %s\n", bk, err.msg); rc = 1; continue;
            }
            al_seq_data_free(&bd);
            int steps = (int)ceil(o->tokens / (o->batch * ml));
            if (steps < 10) steps = 10;
            if (bucket_data(train, fz, lo, hi, (steps + o->warmup) * o->batch, (uint64_t)o->seed, &bd, &mean_len, &err) != AL_OK) {
                fprintf(stderr, "attnlab " CMD ": bucket %s: %s\n", bk, err.msg); rc = 1; continue;
            }
            data = &bd; epochs = 1; mark = o->warmup;
        }
        snprintf(list, sizeof list, "%s", o->models);
        for (char *sv, *tok = strtok_r(list, ",", &sv); tok; tok = strtok_r(NULL, ",", &sv))
            if (run_one(tok, bk, fz, data, o, epochs, mark, mean_len)) rc = 1;
        if (o->buckets) al_seq_data_free(&bd);
    }
    return rc;
}

static int parse_args(int argc, char **argv, bsopts *o)
{
    memset(o, 0, sizeof *o);
    o->models = "fc,window-fc,rnn,sa,trunc"; o->data = "ud-english-ewt";
    o->threads = 2; o->batch = 32; o->epochs = 1; o->tokens = 20000; o->warmup = 3; o->seed = 1;
    enum { O_MODELS = 256, O_DATA, O_THREADS, O_BATCH, O_EPOCHS, O_BUCKETS, O_TOKENS, O_WARMUP, O_SEED, O_HELP };
    static const struct option lo[] = {
        {"models", 1, 0, O_MODELS}, {"model", 1, 0, O_MODELS}, {"data", 1, 0, O_DATA}, {"threads", 1, 0, O_THREADS},
        {"batch", 1, 0, O_BATCH}, {"epochs", 1, 0, O_EPOCHS}, {"buckets", 1, 0, O_BUCKETS}, {"tokens", 1, 0, O_TOKENS},
        {"warmup", 1, 0, O_WARMUP}, {"seed", 1, 0, O_SEED}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case O_MODELS: o->models = optarg; break;
        case O_DATA: o->data = optarg; break;
        case O_THREADS: bad = cli_threads(CMD, optarg, &o->threads); break;
        case O_BATCH: bad = cli_int32(CMD, "--batch", optarg, 1, 100000, &o->batch); break;
        case O_EPOCHS: bad = cli_int32(CMD, "--epochs", optarg, 1, 1000, &o->epochs); break;
        case O_BUCKETS: o->buckets = optarg; break;
        case O_TOKENS: bad = cli_int32(CMD, "--tokens", optarg, 1, 100000000, &o->tokens); break;
        case O_WARMUP: bad = cli_int32(CMD, "--warmup", optarg, 0, 100000, &o->warmup); break;
        case O_SEED: bad = cli_int(CMD, "--seed", optarg, 0, CLI_NOMAX, &o->seed); break;
        case 'h': case O_HELP: usage(stdout); return -1;
        default: return cli_bad_option(CMD, argv);
        }
    }
    if (bad) return 2;
    if (optind < argc) { fprintf(stderr, "attnlab " CMD ": unexpected argument '%s'\n", argv[optind]); return 2; }
    return 0;
}

int bench_seq_main(int argc, char **argv)
{
    bsopts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    if (cli_check_env_threads(CMD)) return 2;
    al_set_threads(o.threads);
    al_error err = {{0}};
    char dir[4096];
    al_conllu_set D;
    memset(&D, 0, sizeof D);
    al_featurizer fz;
    memset(&fz, 0, sizeof fz);
    al_seq_data tr;
    memset(&tr, 0, sizeof tr);
    al_conllu_opts copts = {AL_CONLLU_MAX_LEN, 0};
    rc = 1;
    if (al_data_resolve(o.data, dir, sizeof dir, &err) != AL_OK ||
        al_conllu_load_dir(dir, &copts, &D, &err) != AL_OK || al_feat_build(&D.train, &fz, &err) != AL_OK ||
        al_seq_data_encode(&fz, &D.train, &tr, &err) != AL_OK) {
        fprintf(stderr, "attnlab " CMD ": %s\n", err.msg);
        goto out;
    }
    fprintf(stderr, "attnlab " CMD ": %d threads, gemm %s, %d training sentences (%d tokens), batch %d\n", al_threads(),
            al_gemm_backend(), tr.nsent, tr.ntok, o.batch);
    rc = run_all(&o, &D.train, &fz, &tr);
out:
    al_seq_data_free(&tr);
    al_feat_free(&fz);
    al_conllu_set_free(&D);
    return rc;
}
