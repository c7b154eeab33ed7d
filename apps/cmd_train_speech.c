/* cmd_train_speech.c — attnlab train --task speech: the sequence models over audio frames (speech.h).
 * N-to-1 (which digit, which speaker) on an audio folder, N-to-N (a label per frame) on a speech-digits
 * corpus; CSV rows per epoch, a checkpoint, a summary line on stdout. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "train_resume.h"
#include "train_report.h"
#include "train_flags.h"
#include "seq_opts.h"
#include "attnlab/train.h"
#include "attnlab/io.h"
#include "attnlab/kernels.h"
#include "attnlab/speech.h"

#define CMD "train"

typedef enum { T_DIGIT, T_SPEAKER, T_FRAMES } target_kind;
static const char *const target_name[] = {"digit", "speaker", "frames"};

typedef struct spopts {
    sopts s;
    target_kind target;
    al_speech_opts fe;
    double max_seconds;    /* < 0: the target's default (1 s for digit/speaker, own length for frames) */
    int train_speakers, subsample;
} spopts;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab train --task speech --data DIR --model %s [OPTIONS]\n\n"
        "The sequence models over audio frames (docs/speech.md): 25-ms Hamming windows every 10 ms, 39 MFCC\n"
        "(13 + deltas + delta-deltas) or 80 log-mel filter banks per frame (FFTW), mean/variance normalised\n"
        "per utterance; then linear → dim 64, optional strided convolutions, and the model. A frame is a token:\n"
        "sa attends over the whole utterance, trunc within --window frames each side (default 8).\n\n"
        "data:\n"
        "  --data DIR           a corpus of `attnlab data speech-digits` (digits/, sequences/, manifest.tsv),\n"
        "                       or for --target digit any audio folder DIR/CLASS/FILE (train/ + test/ or split\n"
        "                       here by speaker / 20 %% per class)\n"
        "  --target digit|speaker|frames\n"
        "                       digit: N-to-1, the class of each clip (DIR/digits, or DIR itself);\n"
        "                       speaker: N-to-1, which training speaker said it (20 %% of each one's clips held out);\n"
        "                       frames: N-to-N, the digit or silence at every frame (DIR/sequences via\n"
        "                       manifest.tsv); test_acc = frame accuracy, and the digit-string error rate is printed\n"
        "  --features mfcc|fbank  (mfcc)   --cmvn 1|0 per-utterance normalisation (1)\n"
        "  --max-seconds S      pad or cut every clip to S seconds (digit/speaker: 1; frames: 0 = own length,\n"
        "                       else padded with silence frames or cut)\n"
        "  --train-speakers N   keep the clips of N training speakers (seeded; default all)\n"
        "  --train-size N       random subset of N training clips, seeded (default all)\n"
        "training:\n"
        "  --epochs N (20)  --batch N clips (16)  --lr X (0.001)  --wd X (0.01)  --seed N (1)\n"
        "  --eval-batch N       clips per evaluation forward pass (64): memory, not results\n"
        "  --threads N          OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
        CLI_MAX_MEMORY_HELP
        "model:\n"
        "  --subsample 1|2|4    strided convolutions (kernel 3, stride 2) before the model: 100 → 50 or 25 frames/s\n"
        "  --window K           trunc: attention radius in frames (8); window-fc: context each side (2)\n"
        "  --rnn bi|uni  --pos none|learned|sinusoidal  --score dot|additive  --norm softmax|relu  --heads N  --depth N\n"
        "output:\n"
        "  --csv FILE           one row per epoch (task speech, dataset NAME:TARGET, train_size = training clips,\n"
        "                       test_acc = clip or frame accuracy, samples_per_second = training frames/s)\n"
        "  --save FILE          safetensors checkpoint (attnlab attnmap --speech reads it)\n"
        "  --quiet              no progress on stderr\n"
        "resuming: --checkpoint-every N  --checkpoint FILE  --resume (as for images)\n"
        "A loss over 1000x its running minimum or a non-finite weight stops training (exit 1; lower --lr).\n",
        al_seq_arch_names());
}

/* One speech option (f: TF_*) into *O; 0, or -1 after one line on stderr. */
static int speech_opt(void *ud, int f, const char *arg)
{
    spopts *O = ud;
    al_error e = {{0}};
    int v = 1, bad = 0;
    switch (f) {
    case TF_TARGET:
        if (!strcmp(arg, "digit")) O->target = T_DIGIT;
        else if (!strcmp(arg, "speaker")) O->target = T_SPEAKER;
        else if (!strcmp(arg, "frames")) O->target = T_FRAMES;
        else { fprintf(stderr, "attnlab train: --target must be digit, speaker or frames, got '%s'\n", arg); return -1; }
        return 0;
    case TF_FEATURES:
        if (al_speech_features_parse(arg, &O->fe.features, &e) == AL_OK) return 0;
        fprintf(stderr, "attnlab train: %s\n", e.msg);
        return -1;
    case TF_CMVN: return cli_int32(CMD, "--cmvn", arg, 0, 1, &O->fe.cmvn);
    case TF_MAX_SECONDS: return cli_num(CMD, "--max-seconds", arg, 0, AL_AUDIO_MAX_SECONDS, &O->max_seconds);
    case TF_TRAIN_SPEAKERS: return cli_int32(CMD, "--train-speakers", arg, 1, CLI_NOMAX, &O->train_speakers);
    case TF_SUBSAMPLE:
        bad = cli_int32(CMD, "--subsample", arg, 1, 4, &v);
        if (!bad && v == 3) { fprintf(stderr, "attnlab train: --subsample must be 1, 2 or 4, got 3\n"); bad = -1; }
        O->subsample = v;
        return bad;
    default:
        fprintf(stderr, "attnlab train: --%s is not handled by --task speech\n", train_flags[f].name);
        return -1;
    }
}

/* Options into *o; 0, -1 after --help, or the exit status 2 after one line on stderr. */
static int parse_args(int argc, char **argv, spopts *O)
{
    memset(O, 0, sizeof *O);
    sopts *o = &O->s;
    o->data = NULL; o->epochs = 20; o->batch = 16; o->eval_batch = 64; o->seed = 1; o->lr = 1e-3; o->wd = 0.01; o->max_len = 1000000; o->window = -2;
    o->task = AL_TASK_SPEECH;
    O->fe.cmvn = 1; O->max_seconds = -1; O->subsample = 1;
    int rc = seq_parse(argc, argv, o, speech_opt, O, usage);
    if (rc) return rc;
    if (!o->model) { fprintf(stderr, "attnlab train: --task speech needs --model %s\n", al_seq_arch_names()); return 2; }
    if (!o->data) { fprintf(stderr, "attnlab train: --task speech needs --data DIR (make one: attnlab data speech-digits --out DIR)\n"); return 2; }
    if (!strcmp(o->model, "fc")) { fprintf(stderr, "attnlab train: --model fc sees one frame alone; speech takes window-fc, rnn, sa or trunc\n"); return 2; }
    if (O->target == T_SPEAKER && O->train_speakers) { fprintf(stderr, "attnlab train: --train-speakers does not apply to --target speaker (the speakers are the classes)\n"); return 2; }
    if (O->max_seconds == 0 && O->target != T_FRAMES) { fprintf(stderr, "attnlab train: --max-seconds 0 (own lengths) applies to --target frames only; clips are padded for N-to-1\n"); return 2; }
    if (cli_output(CMD, "--csv", o->csv, 1) || cli_output(CMD, "--save", o->save, 0)) return 2;
    return 0;
}

/* The run's data and model, freed by run_free. */
typedef struct srun {
    al_speech_data tr, te;
    al_seq_model m; int have_model;
    char dname[64], dataset[80];
    app_resume ar;
} srun;

static void run_free(srun *R)
{
    if (R->have_model) al_seq_free(&R->m);
    app_resume_free(&R->ar);
    al_speech_data_free(&R->tr); al_speech_data_free(&R->te);
}

static void warn_skip(void *ud, const char *msg) { (void)ud; fprintf(stderr, "attnlab: warning: %s\n", msg); }

/* Keep the utterances of d whose flag keep[i] is set. */
static int keep_only(al_speech_data *d, const unsigned char *keep, al_error *err)
{
    int *idx = malloc((size_t)(d->n > 0 ? d->n : 1) * sizeof(int)), k = 0;
    if (!idx) { al_seterr(err, "out of memory"); return 1; }
    for (int i = 0; i < d->n; i++) if (keep[i]) idx[k++] = i;
    al_speech_data sub;
    al_status st = al_speech_subset(d, idx, k, &sub, err);
    free(idx);
    if (st != AL_OK) return 1;
    al_speech_data_free(d);
    *d = sub;
    return 0;
}

/* --train-speakers N: the clips of N of the training speakers (seeded pick, AL_RNG_DATA); --train-size N. */
static int subset_train(const spopts *O, al_speech_data *d, al_error *err)
{
    unsigned char *keep = malloc((size_t)(d->n > 0 ? d->n : 1));
    if (!keep) { al_seterr(err, "out of memory"); return 1; }
    int rc = 0;
    if (O->train_speakers) {
        int ns = 0;
        for (int i = 0; i < d->n; i++) if (d->speaker[i] + 1 > ns) ns = d->speaker[i] + 1;
        int *has = calloc((size_t)(ns > 0 ? ns : 1), sizeof(int)), *list = malloc((size_t)(ns > 0 ? ns : 1) * sizeof(int)), nl = 0;
        if (!has || !list) { free(has); free(list); free(keep); al_seterr(err, "out of memory"); return 1; }
        for (int i = 0; i < d->n; i++) if (d->speaker[i] >= 0) has[d->speaker[i]] = 1;
        for (int s = 0; s < ns; s++) if (has[s]) list[nl++] = s;
        if (O->train_speakers > nl) { al_seterr(err, "--train-speakers %d: the training split has %d speakers", O->train_speakers, nl); rc = 2; }
        else {
            al_rng r; al_rng_seed(&r, (uint64_t)O->s.seed, AL_RNG_DATA);
            al_rng_shuffle(&r, list, nl);
            memset(has, 0, (size_t)ns * sizeof(int));
            for (int j = 0; j < O->train_speakers; j++) has[list[j]] = 1;
            for (int i = 0; i < d->n; i++) keep[i] = d->speaker[i] >= 0 && has[d->speaker[i]];
            rc = keep_only(d, keep, err);
        }
        free(has); free(list);
    }
    if (!rc && O->s.train_size) {
        if (O->s.train_size > d->n) { al_seterr(err, "--train-size %d is larger than the training split (%d clips)", O->s.train_size, d->n); rc = 2; }
        else {
            int *idx = malloc((size_t)d->n * sizeof(int));
            if (!idx) { al_seterr(err, "out of memory"); rc = 1; }
            else {
                for (int i = 0; i < d->n; i++) idx[i] = i;
                al_rng r; al_rng_seed(&r, (uint64_t)O->s.seed ^ 0x5eedULL, AL_RNG_DATA);
                al_rng_shuffle(&r, idx, d->n);
                memset(keep, 0, (size_t)d->n);
                for (int j = 0; j < O->s.train_size; j++) keep[idx[j]] = 1;
                free(idx);
                rc = keep_only(d, keep, err);
            }
        }
    }
    free(keep);
    return rc;
}

/* Speaker identification: the training split's clips, 20 % of each speaker's held out (seeded),
 * classes = the training speakers in name order. */
static int speaker_split(const spopts *O, srun *R, al_error *err)
{
    al_speech_data *all = &R->tr;
    int ns = all->classes;
    int *map = malloc((size_t)ns * sizeof(int)), *cnt = calloc((size_t)ns, sizeof(int));
    unsigned char *is_test = calloc((size_t)all->n, 1), *is_train = malloc((size_t)all->n);
    if (!map || !cnt || !is_test || !is_train) { free(map); free(cnt); free(is_test); free(is_train); al_seterr(err, "out of memory"); return 1; }
    for (int i = 0; i < all->n; i++) cnt[all->label[i]]++;
    int k = 0;
    for (int s = 0; s < ns; s++) map[s] = cnt[s] ? k++ : -1;
    al_rng r; al_rng_seed(&r, (uint64_t)O->s.seed, AL_RNG_DATA);
    for (int s = 0; s < ns; s++) {                       /* round(0.2 · clips) of speaker s, at least one kept */
        int c = cnt[s], h = (int)llround(0.2 * c), *ids = malloc((size_t)(c > 0 ? c : 1) * sizeof(int)), m = 0;
        if (!ids) { al_seterr(err, "out of memory"); k = -1; break; }
        for (int i = 0; i < all->n; i++) if (all->label[i] == s) ids[m++] = i;
        al_rng_shuffle(&r, ids, m);
        if (h >= c) h = c - 1;
        for (int j = 0; j < h; j++) is_test[ids[j]] = 1;
        free(ids);
    }
    int rc = k < 0;
    if (!rc) {
        for (int i = 0; i < all->n; i++) { all->label[i] = map[all->label[i]]; is_train[i] = !is_test[i]; }
        char **names = malloc((size_t)k * sizeof(char *));
        if (!names) { al_seterr(err, "out of memory"); rc = 1; }
        else {
            for (int s = 0, j = 0; s < ns; s++) { if (map[s] >= 0) names[j++] = all->class_names[s]; else free(all->class_names[s]); }
            free(all->class_names); all->class_names = names; all->classes = k;
            al_speech_data_free(&R->te);
            int *idx = malloc((size_t)all->n * sizeof(int)), n = 0;
            if (!idx) { al_seterr(err, "out of memory"); rc = 1; }
            else {
                for (int i = 0; i < all->n; i++) if (is_test[i]) idx[n++] = i;
                rc = al_speech_subset(all, idx, n, &R->te, err) != AL_OK;
                free(idx);
            }
            if (!rc) rc = keep_only(all, is_train, err);
            if (!rc && R->te.n == 0) { al_seterr(err, "--target speaker: no clip held out (every speaker has fewer than 3 clips)"); rc = 2; }
        }
    }
    free(map); free(cnt); free(is_test); free(is_train);
    return rc;
}

/* Load the clips of the target, make features, split and subset. 0, 1, or 2. */
static int load_data(const spopts *O, srun *R, al_error *err)
{
    const char *dir = O->s.data;
    cli_dataset_name(dir, R->dname, sizeof R->dname);
    snprintf(R->dataset, sizeof R->dataset, "%s:%s", R->dname, target_name[O->target]);
    if (O->target == T_FRAMES) {
        al_frame_set fs[2];
        memset(fs, 0, sizeof fs);
        const char *split[2] = {"train", "test"};
        al_speech_data *out[2] = {&R->tr, &R->te};
        for (int k = 0; k < 2; k++) {
            al_status st = al_frame_set_load(dir, split[k], &fs[k], err);
            if (st == AL_OK && O->max_seconds > 0) st = al_frame_set_fit(&fs[k], O->max_seconds, err);
            if (st == AL_OK) st = al_speech_from_frames(&fs[k], &O->fe, out[k], err);
            al_frame_set_free(&fs[k]);
            if (st != AL_OK) return 1;
        }
    } else {
        char sub[4096];
        al_audio_opts ao = {0};
        ao.max_seconds = O->max_seconds > 0 ? O->max_seconds : 1.0;
        ao.split_seed = (uint64_t)O->s.seed; ao.warn = warn_skip;
        al_audio_split sp;
        if (al_audio_folder_load(al_speech_clip_dir(dir, sub, sizeof sub), &ao, &sp, err) != AL_OK) return 1;
        al_status st = al_speech_from_audio(&sp.train, &O->fe, O->target == T_SPEAKER ? AL_SPEECH_BY_SPEAKER : AL_SPEECH_BY_CLASS, &R->tr, err);
        if (st == AL_OK && O->target == T_DIGIT) st = al_speech_from_audio(&sp.test, &O->fe, AL_SPEECH_BY_CLASS, &R->te, err);
        al_audio_split_free(&sp);
        if (st != AL_OK) return 1;
        if (O->target == T_SPEAKER && speaker_split(O, R, err)) return 1;
    }
    return subset_train(O, &R->tr, err);
}

typedef struct sprog {
    train_run run;          /* the CSV's identity columns, where rows and progress go */
    double test_acc, ser, loss, secs_sum, frames_sum; int epochs_done;   /* for the summary line */
} sprog;

static int on_progress(void *ud, const al_speech_progress *p)
{
    sprog *g = ud;
    if (p->kind == 0) {
        train_report_step(&g->run, p->epoch, p->epochs, p->step, p->steps_per_epoch, p->loss, p->frames_per_s);
        return 0;
    }
    g->test_acc = p->test.acc; g->ser = p->test.ser; g->loss = p->loss;
    g->secs_sum += p->epoch_seconds; g->frames_sum += p->frames_per_s * p->epoch_seconds; g->epochs_done++;
    app_resume_note(g->run.ar, "loss", p->loss); app_resume_note(g->run.ar, "test_acc", p->test.acc);
    app_resume_note(g->run.ar, "ser", p->test.ser);
    train_epoch e = train_epoch_none();
    e.epoch = p->epoch; e.epochs = p->epochs; e.final = p->epoch == p->epochs;
    e.loss = p->loss; e.train_acc = p->train_acc; e.test_acc = p->test.acc; e.seconds = p->epoch_seconds;
    e.per_second = p->frames_per_s; e.ser = p->test.ser;
    return train_report_epoch(&g->run, &e);
}

static int run(const spopts *O, srun *R, al_seq_config *cfg, al_error *err)
{
    const sopts *o = &O->s;
    al_seq_config g;
    if (al_speech_config(&g, o->model, &R->tr, O->subsample, err) != AL_OK) return 1;
    int ml = al_seq_out_len(&g, R->te.max_frames);
    if (ml > g.max_len) g.max_len = ml;
    /* the flags' settings on the frame model */
    g.window = cfg->window; g.bidirectional = cfg->bidirectional; g.pos = cfg->pos; g.score = cfg->score; g.norm = cfg->norm;
    g.heads = cfg->heads; g.depth = cfg->depth;
    if (!strcmp(o->model, "trunc") && o->window == -2) g.window = 8;
    if (al_seq_init(&R->m, &g, (uint64_t)o->seed, err) != AL_OK) return 2;
    R->have_model = 1;
    char canon[2048], run_id[17], config[1024], what[256];
    snprintf(what, sizeof what, "data=%s;target=%s;features=%s;cmvn=%d;max_seconds=%g;train_speakers=%d", R->dname,
             target_name[O->target], al_speech_features_name(O->fe.features), O->fe.cmvn, O->max_seconds, O->train_speakers);
    al_speech_run_canonical(canon, sizeof canon, &g, what, R->tr.n, o->epochs, (float)o->lr, (float)o->wd, o->batch, o->seed);
    al_run_id(run_id, canon);
    al_run_config(config, sizeof config, canon);
    sprog pg;
    memset(&pg, 0, sizeof pg);
    pg.run = (train_run){.task = AL_TASK_SPEECH, .run_id = run_id, .dataset = R->dataset, .model = o->model, .config = config,
                         .train_size = R->tr.n, .seed = o->seed, .params = (long)R->m.params.total, .csv = o->csv,
                         .tty = isatty(2), .quiet = o->quiet, .ar = &R->ar, .err = err};
    pg.test_acc = pg.ser = pg.loss = NAN;
    app_resume_init(&R->ar, o->checkpoint_every, o->resume, o->checkpoint, o->save);
    int rc = app_resume_start(&R->ar, o->csv, run_id, canon, &R->m.params, err);
    if (rc) return rc;
    if (R->ar.have_state) { pg.loss = app_resume_noted(&R->ar, "loss"); pg.test_acc = app_resume_noted(&R->ar, "test_acc"); pg.ser = app_resume_noted(&R->ar, "ser"); }
    if (!o->quiet)
        fprintf(stderr, "attnlab train: %s (%lld params) on %s: %d train clips (%lld frames), %d test clips (%lld frames), "
                "%d %s, %d classes, run %s\n", o->model, (long long)R->m.params.total, R->dataset, R->tr.n, (long long)R->tr.foff[R->tr.n],
                R->te.n, (long long)R->te.foff[R->te.n], R->tr.dim, al_speech_features_name(O->fe.features), R->tr.classes, run_id);
    al_speech_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = o->epochs; tc.batch = o->batch; tc.eval_batch = o->eval_batch; tc.lr = (float)o->lr; tc.weight_decay = (float)o->wd;
    tc.seed = (uint64_t)o->seed; tc.resume = app_resume_loop(&R->ar);
    double t0 = al_time();
    if (al_speech_train(&R->m, &R->tr, &R->te, &tc, on_progress, &pg, err) != AL_OK) { app_resume_fail_note(&R->ar, err); return 1; }
    double secs = al_time() - t0, fps = pg.secs_sum > 0 ? pg.frames_sum / pg.secs_sum : NAN;
    if (o->save) {
        char acc[32], ser[32], ts[32], sd[32], mx[32];
        snprintf(acc, sizeof acc, "%.6f", pg.test_acc); snprintf(ser, sizeof ser, "%.6f", pg.ser);
        snprintf(mx, sizeof mx, "%g", O->max_seconds > 0 ? O->max_seconds : O->target == T_FRAMES ? 0.0 : 1.0);
        snprintf(ts, sizeof ts, "%d", R->tr.n); snprintf(sd, sizeof sd, "%ld", o->seed);
        const char *x[] = {"task", "speech", "data", R->dname, "target", target_name[O->target], "train_size", ts, "seed", sd,
                           "run_id", run_id, "test_acc", acc, "string_err", ser, "max_seconds", mx};
        if (al_speech_save(o->save, &R->m, &O->fe, &R->tr, x, (int)(sizeof x / sizeof *x / 2), err) != AL_OK) return 1;
    }
    printf("run %s task speech data %s target %s model %s train_size %d seed %ld epochs %d params %lld train_loss %.4f test_acc %.4f "
           "string_err %.4f train_frames_per_s %.0f seconds %.1f%s%s\n", run_id, R->dname, target_name[O->target], o->model, R->tr.n,
           o->seed, o->epochs, (long long)R->m.params.total, pg.loss, pg.test_acc, pg.ser, fps, secs, o->save ? " saved " : "",
           o->save ? o->save : "");
    fflush(stdout);
    return 0;
}

int train_speech_main(int argc, char **argv)
{
    spopts O;
    int rc = parse_args(argc, argv, &O);
    if (rc) return rc < 0 ? 0 : rc;
    al_error err = {{0}};
    al_seq_config cfg;
    if ((rc = build_seq_config(&O.s, &cfg, &err))) return rc;
    if (cli_check_env_threads(CMD)) return 2;
    if (O.s.threads > 0) al_set_threads(O.s.threads);
    if (!O.s.quiet) fprintf(stderr, "attnlab train: %d threads, gemm %s\n", al_threads(), al_gemm_backend());
    srun R;
    memset(&R, 0, sizeof R);
    rc = load_data(&O, &R, &err);
    if (!rc) rc = run(&O, &R, &cfg, &err);
    if (rc) fprintf(stderr, "%sattnlab train: %s\n", isatty(2) && !O.s.quiet ? "\r\033[K" : "", err.msg[0] ? err.msg : "failed");
    run_free(&R);
    return rc;
}
