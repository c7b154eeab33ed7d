/* cmd_train_seq.c — attnlab train --task sequence: POS tagging on a CoNLL-U treebank (UPOS), the five
 * taggers of torch_pos.py on packed sentence batches; CSV rows per epoch, a checkpoint with the
 * vocabularies, a summary line on stdout. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "app_mpi.h"
#include "train_resume.h"
#include "train_report.h"
#include "train_flags.h"
#include "seq_opts.h"
#include "attnlab/train.h"
#include "attnlab/datadir.h"
#include "attnlab/io.h"
#include "attnlab/kernels.h"
#include "attnlab/seq.h"

#define CMD "train"


static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab train --task sequence --model %s [OPTIONS]\n\n"
        "Part-of-speech tagging (UPOS, 17 tags) on a CoNLL-U treebank, the models of torch_pos.py: word (64-d),\n"
        "suffix (16-d) embeddings and 4 shape bits → linear 64, then the model. Batches are whole sentences\n"
        "packed back to back (no padding); attention stays inside each sentence. AdamW, cross-entropy over the\n"
        "tokens; after every epoch the test split's token accuracy, accuracy on words unseen in train\n"
        "(unseen_acc) and on words that took two or more tags in this run's training sentences (ambig_acc:\n"
        "\"I saw a saw\").\n\n"
        "data:\n"
        "  --data NAME|DIR      treebank directory with train/test (.conllu or .conllu.gz, or UD release names)\n"
        "                       (default ud-english-ewt, found as datasets/NAME, $ATTNLAB_DATA/NAME, ...)\n"
        "  --data recall:LEN    generated, unlimited: associative recall over LEN tokens (4 key-value pairs among\n"
        "                       fillers, the keys asked again at the end; test_acc = answers right), or copy:LEN\n"
        "                       (selective copy); --train-size sequences (default 10000), 1000 test ones\n"
        "  --train-size N       random subset of N training sentences, seeded (default 0 = all)\n"
        "  --max-len N          longest sentence accepted (default 512)\n"
        "training:\n"
        "  --epochs N (10)  --batch N sentences (32)  --lr X (0.001)  --wd X (0.01)  --seed N (1)\n"
        "  --eval-batch N       sentences per evaluation forward pass (256): memory, not results\n"
        "  --threads N          OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
        CLI_MAX_MEMORY_HELP
        "model:\n"
        "  --window K           window-fc: context tokens each side (2); trunc: attention radius (3)\n"
        "  --rnn bi|uni         rnn: bidirectional (default) or forwards only\n"
        "  --pos none|learned|sinusoidal (sinusoidal)  --score dot|additive (dot)\n"
        "  --norm softmax|relu (softmax)\n"
        "  --heads N (4)  --depth N (2)       sa, trunc\n"
        APP_MPI_TRAIN_HELP
        "output:\n"
        "  --csv FILE           append one row per epoch (columns: " AL_CSV_HEADER ");\n"
        "                       task sequence, train_size = sentences, test_acc = token accuracy, val_acc empty,\n"
        "                       samples_per_second = training tokens/s, unseen_acc and ambig_acc as above\n"
        "  --save FILE          safetensors checkpoint: weights, configuration and vocabularies (for attnlab tag)\n"
        "  --quiet              no progress on stderr\n"
        "resuming (as for images: attnlab train --help):\n"
        "  --checkpoint-every N  --checkpoint FILE (default SAVE.train, else attnlab-RUNID.train)  --resume\n"
        "A loss over 1000x its running minimum or a non-finite weight stops training (exit 1; lower --lr).\n",
        al_seq_arch_names());
}

typedef struct sprog {
    train_run run;          /* the CSV's identity columns, where rows and progress go */
    double test_acc, unseen_acc, ambig_acc, loss, tok_s_sum; int epochs_done;   /* for the summary line */
} sprog;

static int on_progress(void *ud, const al_seq_progress *p)
{
    sprog *g = ud;
    if (p->kind == 0) {
        train_report_step(&g->run, p->epoch, p->epochs, p->step, p->steps_per_epoch, p->loss, p->tok_per_s);
        return 0;
    }
    g->test_acc = p->test_acc; g->unseen_acc = p->unseen_acc; g->ambig_acc = p->ambig_acc; g->loss = p->loss;
    g->tok_s_sum += p->epoch_seconds; g->epochs_done++;
    app_resume_note(g->run.ar, "loss", p->loss); app_resume_note(g->run.ar, "test_acc", p->test_acc);
    app_resume_note(g->run.ar, "unseen_acc", p->unseen_acc);
    train_epoch e = train_epoch_none();
    e.epoch = p->epoch; e.epochs = p->epochs; e.final = p->epoch == p->epochs;
    e.loss = p->loss; e.train_acc = p->train_acc; e.test_acc = p->test_acc; e.seconds = p->epoch_seconds;
    e.per_second = p->tok_per_s; e.unseen_acc = p->unseen_acc; e.ambig_acc = p->ambig_acc;
    return train_report_epoch(&g->run, &e);
}

static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }

int seq_common_opt(sopts *o, const char *task, int f, const char *optarg)
{
    switch (f) {
    case TF_TASK:
        if (strcmp(optarg, task)) { fprintf(stderr, "attnlab train: this is the %s task, got --task %s\n", task, optarg); return 2; }
        return 0;
    case TF_MODEL: o->model = optarg; return 0;
    case TF_DATA: o->data = optarg; return 0;
    case TF_TRAIN_SIZE: return cli_int32(CMD, "--train-size", optarg, 0, CLI_NOMAX, &o->train_size);
    case TF_EPOCHS: return cli_int32(CMD, "--epochs", optarg, 1, 100000, &o->epochs);
    case TF_LR: return cli_num(CMD, "--lr", optarg, 1e-12, 1e3, &o->lr);
    case TF_WD: return cli_num(CMD, "--wd", optarg, 0, 1e3, &o->wd);
    case TF_BATCH: return cli_int32(CMD, "--batch", optarg, 1, 1000000, &o->batch);
    case TF_SEED: return cli_int(CMD, "--seed", optarg, 0, CLI_NOMAX, &o->seed);
    case TF_THREADS: return cli_threads(CMD, optarg, &o->threads);
    case TF_CSV: o->csv = optarg; return 0;
    case TF_SAVE: o->save = optarg; return 0;
    case TF_QUIET: o->quiet = 1; return 0;
    case TF_WINDOW: return cli_int32(CMD, "--window", optarg, 0, 1000000, &o->window);
    case TF_RNN:
        o->rnn = optarg;
        if (strcmp(optarg, "bi") && strcmp(optarg, "uni")) { fprintf(stderr, "attnlab train: --rnn must be bi or uni, got '%s'\n", optarg); return -1; }
        return 0;
    case TF_POS: o->pos = optarg; return 0;
    case TF_SCORE: o->score = optarg; return 0;
    case TF_NORM: o->norm = optarg; return 0;
    case TF_HEADS: return cli_int32(CMD, "--heads", optarg, 1, 1024, &o->heads);
    case TF_DEPTH: return cli_int32(CMD, "--depth", optarg, 1, AL_MODEL_MAXDEPTH, &o->depth);
    case TF_CHECKPOINT_EVERY: return cli_int32(CMD, "--checkpoint-every", optarg, 1, CLI_NOMAX, &o->checkpoint_every);
    case TF_CHECKPOINT: o->checkpoint = optarg; return 0;
    case TF_RESUME: o->resume = 1; return 0;
    case TF_EVAL_BATCH: return cli_int32(CMD, "--eval-batch", optarg, 1, 1000000, &o->eval_batch);
    case TF_MAX_MEMORY: return cli_max_memory(CMD, optarg);
    default: return 1;
    }
}

int seq_parse(int argc, char **argv, sopts *o, int (*own)(void *ud, int f, const char *arg), void *ud, void (*usage)(FILE *))
{
    const struct option *lo = train_flags_options(o->task);
    optind = 0; opterr = 0;
    int ch, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (ch == 'h' || ch == TF_BASE + TF_HELP) { usage(stdout); return -1; }
        if (ch < TF_BASE || ch >= TF_BASE + TF_NFLAGS) return cli_bad_option(CMD, argv);   /* not an option of this task */
        const int f = ch - TF_BASE;
        o->seen[f] = 1;
        if ((bad = seq_common_opt(o, al_task_at(o->task)->name, f, optarg)) == 2) return 2;
        if (bad == 1) bad = own(ud, f, optarg);
    }
    if (bad) return 2;
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    return 0;
}

static int seq_own_opt(void *ud, int f, const char *arg)
{
    sopts *o = ud;
    if (f == TF_MAX_LEN) return cli_int32(CMD, "--max-len", arg, 1, 1000000, &o->max_len);
    fprintf(stderr, "attnlab train: --%s is not handled by --task sequence\n", train_flags[f].name);
    return -1;
}

/* Options into *o; 0, -1 after --help (exit 0), or the exit status 2 after one line on stderr. */
static int parse_seq_args(int argc, char **argv, sopts *o)
{
    memset(o, 0, sizeof *o);
    o->data = al_task_at(AL_TASK_SEQUENCE)->default_data; o->epochs = 10; o->batch = 32; o->eval_batch = 256; o->seed = 1; o->lr = 1e-3; o->wd = 0.01;
    o->max_len = AL_CONLLU_MAX_LEN; o->window = -2; o->task = AL_TASK_SEQUENCE;
    int rc = seq_parse(argc, argv, o, seq_own_opt, o, usage);
    if (rc) return rc;
    if (!o->model) { fprintf(stderr, "attnlab train: --task sequence needs --model %s\n", al_seq_arch_names()); return 2; }
    if (cli_output(CMD, "--csv", o->csv, 1) || cli_output(CMD, "--save", o->save, 0)) return 2;   /* before the treebank is read */
    return 0;
}

int build_seq_config(const sopts *o, al_seq_config *cfg, al_error *err)
{
    if (al_seq_config_default(cfg, o->model, 2, 2, AL_UPOS_N, err) != AL_OK) { fprintf(stderr, "attnlab train: %s\n", err->msg); return 2; }
    cfg->max_len = o->max_len;
    if (train_flags_check_model(o->task, o->model, o->seen)) return 2;
    if (o->window != -2) cfg->window = o->window;
    if (o->rnn) cfg->bidirectional = !strcmp(o->rnn, "bi");
    if (o->pos && (al_pos_parse(o->pos, &cfg->pos) || cfg->pos == AL_POS_RELATIVE)) { fprintf(stderr, "attnlab train: --pos must be none, learned or sinusoidal\n"); return 2; }
    if (o->score && al_score_parse(o->score, &cfg->score)) { fprintf(stderr, "attnlab train: --score must be dot or additive\n"); return 2; }
    if (o->norm && al_norm_parse(o->norm, &cfg->norm)) { fprintf(stderr, "attnlab train: --norm must be softmax or relu\n"); return 2; }
    if (o->heads) cfg->heads = o->heads;
    if (o->depth) cfg->depth = o->depth;
    if (al_seq_config_check(cfg, err) != AL_OK) { fprintf(stderr, "attnlab train: %s\n", err->msg); return 2; }
    return 0;
}

/* Everything a run holds, freed by seq_run_free. */
typedef struct seq_run {
    al_conllu_set D;
    al_featurizer fz;
    al_seq_data tr, te;
    al_seq_model m; int have_model;
    char dname[64];
    app_resume ar;
    int gen_values, gen_len;        /* --data recall:LEN / copy:LEN: label classes and length (0: a treebank) */
} seq_run;

static void seq_run_free(seq_run *R)
{
    if (R->have_model) al_seq_free(&R->m);
    app_resume_free(&R->ar);
    al_seq_data_free(&R->tr); al_seq_data_free(&R->te);
    al_feat_free(&R->fz);
    al_conllu_set_free(&R->D);
}

/* The treebank, the seeded --train-size subset (kept in file order), features; 0, 1 or 2. */
static int load_seq_data(const sopts *o, seq_run *R, al_error *err)
{
    al_gen_seq_cfg gen;
    const int g = al_gen_seq_parse(o->data, &gen, err);
    if (g < 0) return 2;
    if (g == 0) {   /* a generated task: --train-size sequences (default 10 000) from the seed, 1 000 test ones from another */
        snprintf(R->dname, sizeof R->dname, "%s", o->data);
        const int ntr = o->train_size > 0 ? o->train_size : 10000;
        if (al_gen_seq(&gen, ntr, (uint64_t)o->seed, &R->D.train, err) != AL_OK ||
            al_gen_seq(&gen, 1000, (uint64_t)o->seed ^ 0x7e57da7a5eedULL, &R->D.test, err) != AL_OK) return 1;
        R->gen_values = gen.values; R->gen_len = gen.len;
        if (al_feat_build(&R->D.train, &R->fz, err) != AL_OK) return 1;
        if (al_seq_data_encode(&R->fz, &R->D.train, &R->tr, err) != AL_OK) return 1;
        return al_seq_data_encode(&R->fz, &R->D.test, &R->te, err) != AL_OK;
    }
    char dir[4096];
    if (al_data_resolve(o->data, dir, sizeof dir, err) != AL_OK) return 1;
    cli_dataset_name(o->data, R->dname, sizeof R->dname);
    al_conllu_opts copts = {o->max_len, 0};
    if (al_conllu_load_dir(dir, &copts, &R->D, err) != AL_OK) return 1;
    if (o->train_size > R->D.train.nsent) {
        al_seterr(err, "--train-size %d is larger than the training split (%d sentences)", o->train_size, R->D.train.nsent);
        return 2;
    }
    if (o->train_size > 0 && o->train_size < R->D.train.nsent) {
        int *idx = malloc((size_t)R->D.train.nsent * sizeof(int));
        if (!idx) { al_seterr(err, "out of memory"); return 1; }
        for (int i = 0; i < R->D.train.nsent; i++) idx[i] = i;
        al_rng r; al_rng_seed(&r, (uint64_t)o->seed, AL_RNG_DATA);
        al_rng_shuffle(&r, idx, R->D.train.nsent);
        qsort(idx, (size_t)o->train_size, sizeof(int), cmp_int);
        al_conllu sub;
        al_status st = al_conllu_subset(&R->D.train, idx, o->train_size, &sub, err);
        free(idx);
        if (st != AL_OK) return 1;
        al_conllu_free(&R->D.train);
        R->D.train = sub;
    }
    if (al_feat_build(&R->D.train, &R->fz, err) != AL_OK) return 1;
    if (al_seq_data_encode(&R->fz, &R->D.train, &R->tr, err) != AL_OK) return 1;
    return al_seq_data_encode(&R->fz, &R->D.test, &R->te, err) != AL_OK;
}

/* The checkpoint: weights, configuration, vocabularies and the run's hyperparameters and results. */
static al_status save_seq(const sopts *o, seq_run *R, const char *run_id, const sprog *pg, al_error *err)
{
    char vb[6][48], acc[32], uacc[32], aacc[32];
    snprintf(vb[0], 48, "%d", R->tr.nsent); snprintf(vb[1], 48, "%d", o->epochs); snprintf(vb[2], 48, "%.9g", o->lr);
    snprintf(vb[3], 48, "%.9g", o->wd); snprintf(vb[4], 48, "%d", o->batch); snprintf(vb[5], 48, "%ld", o->seed);
    snprintf(acc, sizeof acc, "%.6f", pg->test_acc); snprintf(uacc, sizeof uacc, "%.6f", pg->unseen_acc);
    snprintf(aacc, sizeof aacc, "%.6f", pg->ambig_acc);
    const char *kv[] = {"task", "sequence", "data", R->dname, "train_size", vb[0], "epochs", vb[1], "lr", vb[2], "wd", vb[3],
                        "batch", vb[4], "seed", vb[5], "optim", "adamw", "run_id", run_id, "test_acc", acc, "unseen_acc", uacc,
                        "ambig_acc", aacc};
    return al_seq_save(o->save, &R->m, &R->fz, kv, (int)(sizeof kv / sizeof *kv / 2), err);
}

/* Train (CSV rows through on_progress), save, print the summary line. 0, 1, or 2 (--resume refused). */
static int run_seq(const sopts *o, seq_run *R, al_seq_config *cfg, al_error *err)
{
    cfg->nwords = al_feat_nwords(&R->fz); cfg->nsuffixes = al_feat_nsuffixes(&R->fz);
    if (R->gen_values) {   /* generated: the labels are value ids, and the sequences may be longer than --max-len */
        cfg->tags = R->gen_values;
        if (cfg->max_len < R->gen_len) cfg->max_len = R->gen_len;
        if (!strcmp(cfg->name, "trunc") && cfg->window > cfg->max_len) cfg->window = cfg->max_len;
    }
    if (al_seq_init(&R->m, cfg, (uint64_t)o->seed, err) != AL_OK) return 1;
    R->have_model = 1;
    char canon[2048], run_id[17], config[1024];
    al_seq_run_canonical(canon, sizeof canon, cfg, R->dname, R->tr.nsent, o->epochs, (float)o->lr, (float)o->wd, o->batch, o->seed);
    al_run_id(run_id, canon);
    al_run_config(config, sizeof config, canon);
    sprog pg;
    memset(&pg, 0, sizeof pg);
    pg.run = (train_run){.task = AL_TASK_SEQUENCE, .run_id = run_id, .dataset = R->dname, .model = o->model, .config = config,
                         .train_size = R->tr.nsent, .seed = o->seed, .params = (long)R->m.params.total, .csv = o->csv,
                         .tty = isatty(2), .quiet = o->quiet, .ar = &R->ar, .err = err};
    pg.test_acc = pg.unseen_acc = pg.ambig_acc = pg.loss = NAN;
    app_resume_init(&R->ar, o->checkpoint_every, o->resume, o->checkpoint, o->save);
    int rc = app_resume_start(&R->ar, o->csv, run_id, canon, &R->m.params, err);
    if (rc) return rc;
    if (R->ar.have_state) {   /* what the summary shows of the state's epoch */
        pg.loss = app_resume_noted(&R->ar, "loss"); pg.test_acc = app_resume_noted(&R->ar, "test_acc");
        pg.unseen_acc = app_resume_noted(&R->ar, "unseen_acc");
        pg.ambig_acc = app_resume_noted(&R->ar, "ambig_acc");
    }
    if (!o->quiet)
        fprintf(stderr, "attnlab train: %s (%lld params) on %s: %d train sentences (%d tokens), %d test sentences (%d tokens), "
                "%d words, %d suffixes, run %s\n", o->model, (long long)R->m.params.total, R->dname, R->tr.nsent, R->tr.ntok,
                R->te.nsent, R->te.ntok, cfg->nwords, cfg->nsuffixes, run_id);
    al_seq_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = o->epochs; tc.batch = o->batch; tc.eval_batch = o->eval_batch; tc.lr = (float)o->lr; tc.weight_decay = (float)o->wd;
    tc.seed = (uint64_t)o->seed; tc.resume = app_resume_loop(&R->ar); tc.dist = o->dist;
    double t0 = al_time();
    if (al_seq_train(&R->m, &R->tr, &R->te, &tc, on_progress, &pg, err) != AL_OK) { app_resume_fail_note(&R->ar, err); return 1; }
    double secs = al_time() - t0;
    double tok_s = pg.tok_s_sum > 0 ? (double)R->tr.ntok * pg.epochs_done / pg.tok_s_sum : NAN;
    if (o->save && save_seq(o, R, run_id, &pg, err) != AL_OK) return 1;
    printf("run %s task sequence data %s model %s train_size %d seed %ld epochs %d params %lld train_loss %.4f test_acc %.4f "
           "unseen_acc %.4f ambig_acc %.4f train_tokens_per_s %.0f seconds %.1f%s%s\n", run_id, R->dname, o->model, R->tr.nsent,
           o->seed, o->epochs, (long long)R->m.params.total, pg.loss, pg.test_acc, pg.unseen_acc, pg.ambig_acc, tok_s, secs,
           o->save ? " saved " : "",
           o->save ? o->save : "");
    fflush(stdout);
    return 0;
}

int train_seq_main(int argc, char **argv)
{
    sopts o;
    int rc = parse_seq_args(argc, argv, &o);
    if (rc) return rc < 0 ? 0 : rc;
    al_error err = {{0}};
    al_seq_config cfg;
    if ((rc = build_seq_config(&o, &cfg, &err))) return rc;
    if (cli_check_env_threads(CMD)) return 2;
    if (app_train_dist(o.checkpoint || o.checkpoint_every || o.resume, &o.csv, &o.save, &o.quiet, &o.threads, &o.dist)) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.quiet) fprintf(stderr, "attnlab train: %d threads, gemm %s\n", al_threads(), al_gemm_backend());
    seq_run R;
    memset(&R, 0, sizeof R);
    rc = load_seq_data(&o, &R, &err);
    if (!rc) rc = run_seq(&o, &R, &cfg, &err);
    if (rc) fprintf(stderr, "%sattnlab train: %s\n", isatty(2) && !o.quiet ? "\r\033[K" : "", err.msg[0] ? err.msg : "failed");
    seq_run_free(&R);
    return rc;
}
