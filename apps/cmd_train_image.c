/* cmd_train_image.c — attnlab train --task image: train an image classifier, log CSV, save a
 * checkpoint. parse (options struct, the flag table of train_flags.h) → load data → build the model →
 * run (train, or evaluate conv-attn) → save. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "train_flags.h"
#include "image_common.h"
#include "train_resume.h"
#include "train_report.h"
#include "app_mpi.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/kernels.h"
#include "attnlab/checkpoint.h"
#include "attnlab/train.h"

typedef struct train_image_opts {
    const char *model, *data, *data_dir, *csv, *save, *init_from, *checkpoint;
    int epochs, batch, eval_batch, threads, train_size, test_size, eval_every, image_h, image_w, channels, quiet;
    int checkpoint_every, resume;
    int val_size, patience;             /* --val-size (0 none, -2 auto), --patience (0 none) */
    const al_dist *dist;                /* under mpirun: this rank's share (app_mpi.h) */
    long seed, permute;                 /* permute: --permute-pixels SEED, -1 none */
    al_augment augment;                 /* --augment; all zero: none */
    float lr, wd; int wd_set;
    /* model options; -1 / NULL = model default */
    int heads, depth, dim, patch, window;
    const char *pos, *score, *norm;
    unsigned char seen[TF_NFLAGS];      /* flags given on the command line */
} train_image_opts;

/* What a run holds between its stages. */
typedef struct image_run {
    al_image_split D;
    al_images val;                      /* --val-size: held out of D.train (n 0: none) */
    char dname[64];                     /* the dataset column: fashion-mnist or the folder's name */
    al_model_config cfg;
    al_model m;
    int have_model, classes;
    app_resume ar;                      /* --checkpoint-every, --resume */
} image_run;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab train [--task image] --model %s [OPTIONS]\n"
        "       (the graph task's options: attnlab train --task graph --help; molecules: --task molecule --help;\n"
        "        POS tagging: --task sequence --help; speech: --task speech --help)\n\n"
        "Trains an image classifier with AdamW and cross-entropy; evaluates the whole test split after\n"
        "every epoch; one CSV row per epoch (--csv); summary line on stdout; progress on stderr.\n\n"
        "data:\n"
        "  --data NAME|DIR      fashion-mnist (IDX files) or an image folder DIR/{train,test}/CLASS/*.png|jpg\n"
        "                       (default fashion-mnist)\n"
        "  --data fashion-pairs generated: two Fashion-MNIST items at random, non-overlapping places of a 56x56\n"
        "                       canvas, label same class or not (half and half); --train-size examples (default\n"
        "                       10000, up to 10^6) drawn from the train split with --seed, --test-size (10000)\n"
        "                       from the test split, the same for every run\n"
        "  --data-dir DIR       where the Fashion-MNIST .gz files are (default: $ATTNLAB_FASHION_MNIST, $ATTNLAB_DATA/fashion-mnist,\n"
        "                       datasets/fashion-mnist, " AL_DATADIR "/fashion-mnist, then " AL_FASHION_MNIST_DIR ")\n"
        "  --train-size N       stratified subset of N training images, seeded (default 0 = all)\n"
        "  --test-size N        evaluate on a stratified subset of N test images (quick checks only;\n"
        "                       default 0 = the whole test split, the reported protocol)\n"
        "  --augment SPEC       on-the-fly augmentation of the training images, e.g. shift:2,flip,erase:0.25\n"
        "                       (shift by up to N pixels, mirror with p 1/2, random erasing with probability P;\n"
        "                       parts joined by ',' or '+'; seeded per epoch and image, so runs repeat bit for\n"
        "                       bit; default none)\n"
        "  --permute-pixels S   one fixed random permutation of the pixel positions (seed S), train and test\n"
        "                       alike: locality is gone, every value kept (the checkpoint carries it to eval,\n"
        "                       predict and attnmap); none (the default): the pixels as they are\n"
        "  --image-size HxW     image folders: resize to HxW, or SxS for a single number S (default: the\n"
        "                       most common size in the folder)\n"
        "  --channels C         image folders: 1 (grey) or 3 (RGB) (default: 3 if any image has colour)\n"
        "training:\n"
        "  --epochs N           (default 10; with --val-size the cap)\n"
        "  --val-size N|auto    hold N of the training images out (stratified, seeded; --train-size N counts\n"
        "                       both parts; auto: 10 %%, at least 100, at most half) as a validation set,\n"
        "                       evaluated every epoch; the model of the best validation accuracy (the\n"
        "                       earliest on ties) is kept, saved and reported in a last CSV row (status done,\n"
        "                       its epoch, val_acc and test_acc). Default 0: no validation set, the last\n"
        "                       epoch's model is the result\n"
        "  --patience N         with --val-size: stop after N epochs without a better validation accuracy\n"
        "                       (default 0: train every epoch)\n"
        "  --lr X               AdamW learning rate (default 0.001)\n"
        "  --wd X               AdamW weight decay on all parameters (default 0 for cnn, 0.01 otherwise)\n"
        "  --batch N            (default 64)\n"
        "  --seed N             init, subset and shuffling (default 1)\n"
        "  --threads N          OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
        CLI_MAX_MEMORY_HELP
        "  --eval-every N       evaluate every N epochs and after the last (default 1); the CSV rows of\n"
        "                       epochs not evaluated have an empty test_acc\n"
        "  --eval-batch N       images per evaluation forward pass (default 64): memory, never results —\n"
        "                       evaluation runs without a tape, each layer's temporaries freed once used\n"
        "model (sa, local):\n"
        "  --dim N (64)  --depth N (2)  --heads N (4)  --patch P (2; 1 = pixel tokens)  --window K (local: 5)\n"
        "  --pos none|learned|sinusoidal|relative   (sa: learned, local: relative)\n"
        "  --score dot|additive (dot)   --norm softmax|relu (softmax)\n"
        "  --init-from FILE     start from a checkpoint with the same parameters. conv-attn is not trained:\n"
        "                       it runs a trained cnn checkpoint's convs as attention (exact construction)\n"
        "                       and prints both test accuracies and how often their predictions agree\n"
        "model (conv-attn-ft: the cnn's convs as trainable 9-head window attention):\n"
        "  --window 3|5|7|...|full (5)   the attention window of both layers; --init-from a trained cnn\n"
        "                       checkpoint builds the cnn exactly (relative bias one-hot at the conv offsets,\n"
        "                       queries 0), then training may widen what each head looks at\n"
        "model (gpsa: sa's blocks with gated positional self-attention, ConViT):\n"
        "  --dim N (63)  --heads N (9: a square, one head per offset of the 3x3 neighbourhood)  --depth, --patch\n"
        "  --pos none|learned|sinusoidal (learned)   each head mixes a content and a positional map through its\n"
        "                       gate, 0.95 positional at the start (attnlab attnmap --distance prints the gates)\n"
        APP_MPI_TRAIN_HELP
        "output:\n"
        "  --csv FILE           append one row per epoch (columns: " AL_CSV_HEADER ");\n"
        "                       val_acc is empty without --val-size\n"
        "  --save FILE          safetensors checkpoint with the model and hyperparameters in __metadata__\n"
        "  --quiet              no progress or thread line on stderr\n"
        "resuming (docs/experiments.md):\n"
        "  --checkpoint-every N write the training state (weights, AdamW moments and step, the shuffle and\n"
        "                       dropout streams, the data order, the epoch, the CSV rows written) before the\n"
        "                       first step, every N epochs and after the last, atomically\n"
        "  --checkpoint FILE    where the state goes (default: SAVE.train with --save, else\n"
        "                       attnlab-RUNID.train in the current directory)\n"
        "  --resume             continue from the state: the same rows and bit-identical weights as an\n"
        "                       uninterrupted run; the CSV's rows of the run written after the state are\n"
        "                       removed. Refused for a state of another configuration; without a state the\n"
        "                       run starts from scratch (and says so)\n"
        "A loss over 1000x its running minimum (taken as at least 0.01) or a non-finite weight stops\n"
        "training with exit 1 (lower --lr); the last training state is kept and --save is not written.\n"
        "A flag that does not apply to the model or data (e.g. --window with sa, --epochs with conv-attn,\n"
        "--image-size with fashion-mnist) is an error (exit 2).\n", al_model_arch_names());
}


/* ---- progress on stderr ---- */
typedef struct prog {
    train_run run;          /* the CSV's identity columns, where rows and progress go */
    int64_t total_steps, done_steps;   /* --epochs (up to 10^9) x steps per epoch: more than an int holds */
    int evals_total, evals_done, batch, test_n;
    double last_draw, last_step_elapsed, first_eval, eval_total;   /* first_eval < 0: not measured yet */
    double last_test_acc, last_loss;
    int validated, best_epoch;  /* --val-size: the kept model's row ends the run; its epoch */
    double val_acc;             /* and its validation accuracy */
} prog;

/* Evaluations a run of `epochs` epochs makes with --eval-every k (and always after the last). */
static int count_evals(int epochs, int k)
{
    int n = 0;
    for (int e = 1; e <= epochs; e++) n += k <= 1 || e % k == 0 || e == epochs;
    return n;
}

/* Remaining time: the training steps left at the rate so far (evaluation time taken out), plus the
 * evaluations left at the duration of the first one (before it: a forward pass ~ 1/3 of a step). */
static double eta(const prog *pg, double elapsed)
{
    if (!pg->done_steps) return NAN;
    double per_step = (elapsed - pg->eval_total) / (double)pg->done_steps;
    double per_eval = pg->first_eval >= 0 ? pg->first_eval : per_step * pg->test_n / (3.0 * pg->batch);
    return per_step * (double)(pg->total_steps - pg->done_steps) + per_eval * (pg->evals_total - pg->evals_done);
}

static void draw_step(prog *pg, const al_train_progress *p)
{
    double now = al_time();
    if (now - pg->last_draw < 0.1 && p->step != p->steps_per_epoch) return;
    pg->last_draw = now;
    char e[32]; train_report_time(e, sizeof e, eta(pg, p->elapsed));
    int w = 20, fill = p->steps_per_epoch ? w * p->step / p->steps_per_epoch : 0;
    char bar[32]; for (int i = 0; i < w; i++) bar[i] = i < fill ? '=' : ' '; bar[w] = 0;
    fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %d/%d loss %.4f %.0f img/s ETA %s", p->epoch, p->epochs, bar,
            p->step, p->steps_per_epoch, p->loss, p->img_per_s, e);
    fflush(stderr);
}

static int on_progress(void *ud, const al_train_progress *p)
{
    prog *pg = ud;
    if (p->kind == 0) {
        pg->done_steps++;
        pg->last_step_elapsed = p->elapsed;
        if (!pg->run.quiet && pg->run.tty) draw_step(pg, p);
        return 0;
    }
    if (p->kind == 2) {   /* the kept model (--val-size): the run's result row */
        pg->last_test_acc = p->test_acc; pg->val_acc = p->val_acc; pg->best_epoch = p->epoch;
        train_epoch e = train_epoch_none();
        e.epoch = p->epoch; e.epochs = p->epochs; e.final = 1; e.kept = 1; e.val_acc = p->val_acc; e.test_acc = p->test_acc;
        return train_report_epoch(&pg->run, &e);
    }
    if (!isnan(p->test_acc)) {   /* evaluated: the time since the last step was the evaluation */
        double t = p->elapsed - pg->last_step_elapsed;
        if (pg->first_eval < 0) pg->first_eval = t;
        pg->eval_total += t; pg->evals_done++;
    }
    pg->last_test_acc = p->test_acc; pg->last_loss = p->loss;
    app_resume_note(pg->run.ar, "loss", p->loss); app_resume_note(pg->run.ar, "test_acc", p->test_acc);
    train_epoch e = train_epoch_none();
    e.epoch = p->epoch; e.epochs = p->epochs; e.final = !pg->validated && p->epoch == p->epochs;
    e.loss = p->loss; e.train_acc = p->train_acc; e.test_acc = p->test_acc; e.val_acc = p->val_acc;
    e.seconds = p->epoch_seconds; e.per_second = p->img_per_s; e.elapsed = p->elapsed;
    return train_report_epoch(&pg->run, &e);
}

/* ---- parse ---- */
/* --image-size S or HxW, each side in [4, 4096]. */
static int parse_hw(const char *s, int *h, int *w)
{
    char *end; long a = strtol(s, &end, 10), b = a;
    if (end != s && (*end == 'x' || *end == 'X')) { const char *t = end + 1; b = strtol(t, &end, 10); if (end == t) end = (char *)s; }
    if (end == s || *end || a < 4 || a > 4096 || b < 4 || b > 4096) {
        fprintf(stderr, "attnlab train: --image-size wants S or HxW with sides 4..4096, got '%s'\n", s);
        return -1;
    }
    *h = (int)a; *w = (int)b;
    return 0;
}

static int parse_channels(const char *s, int *out)
{
    if (cli_int32("train", "--channels", s, 1, CLI_NOMAX, out)) return -1;
    if (*out != 1 && *out != 3) { fprintf(stderr, "attnlab train: --channels must be 1 or 3\n"); return -1; }
    return 0;
}

static int parse_float(const char *flag, const char *s, double lo, float *out)
{
    double v;
    if (cli_num("train", flag, s, lo, 1e3, &v)) return -1;
    *out = (float)v;
    return 0;
}

/* One flag's value into o; 0 ok, -1 (message printed) bad. Flags of the graph task are only noted
 * (train_flags_check refuses them). */
static int parse_flag(train_image_opts *o, int f, const char *a)
{
    const char *c = "train";
    switch (f) {
    case TF_TASK: if (!strcmp(a, "image")) return 0;
        fprintf(stderr, "attnlab train: this is the image task, got --task %s\n", a); return -1;
    case TF_MODEL: o->model = a; return 0;
    case TF_DATA: o->data = a; return 0;
    case TF_DATA_DIR: o->data_dir = a; return 0;
    case TF_TRAIN_SIZE: return cli_int32(c, "--train-size", a, 0, CLI_NOMAX, &o->train_size);
    case TF_TEST_SIZE: return cli_int32(c, "--test-size", a, 0, CLI_NOMAX, &o->test_size);
    case TF_IMAGE_SIZE: return parse_hw(a, &o->image_h, &o->image_w);
    case TF_CHANNELS: return parse_channels(a, &o->channels);
    case TF_EPOCHS: return cli_int32(c, "--epochs", a, 1, CLI_NOMAX, &o->epochs);
    case TF_LR: return parse_float("--lr", a, 1e-12, &o->lr);
    case TF_WD: case TF_WEIGHT_DECAY: o->wd_set = 1; return parse_float("--wd", a, 0, &o->wd);
    case TF_BATCH: return cli_int32(c, "--batch", a, 1, CLI_NOMAX, &o->batch);
    case TF_EVAL_BATCH: return cli_int32(c, "--eval-batch", a, 1, 1 << 20, &o->eval_batch);
    case TF_EVAL_EVERY: return cli_int32(c, "--eval-every", a, 1, CLI_NOMAX, &o->eval_every);
    case TF_SEED: return cli_int(c, "--seed", a, 0, CLI_NOMAX, &o->seed);
    case TF_PERMUTE:
        if (!strcmp(a, "none")) { o->permute = -1; return 0; }    /* a sweep's "original" grid point */
        return cli_int(c, "--permute-pixels", a, 0, CLI_NOMAX, &o->permute);
    case TF_AUGMENT: {
        al_error e = {{0}};
        if (al_augment_parse(a, &o->augment, &e) != AL_OK) { fprintf(stderr, "attnlab train: %s\n", e.msg); return -1; }
        return 0;
    }
    case TF_THREADS: return cli_threads(c, a, &o->threads);
    case TF_MAX_MEMORY: return cli_max_memory(c, a);
    case TF_DIM: return cli_int32(c, "--dim", a, 1, CLI_NOMAX, &o->dim);
    case TF_DEPTH: return cli_int32(c, "--depth", a, 1, CLI_NOMAX, &o->depth);
    case TF_HEADS: return cli_int32(c, "--heads", a, 1, CLI_NOMAX, &o->heads);
    case TF_PATCH: return cli_int32(c, "--patch", a, 1, CLI_NOMAX, &o->patch);
    case TF_WINDOW:
        if (!strcmp(a, "full")) { o->window = 0; return 0; }   /* conv-attn-ft: every key of the layer's grid */
        return cli_int32(c, "--window", a, 1, CLI_NOMAX, &o->window);
    case TF_POS: o->pos = a; return 0;
    case TF_SCORE: o->score = a; return 0;
    case TF_NORM: o->norm = a; return 0;
    case TF_INIT_FROM: o->init_from = a; return 0;
    case TF_CSV: o->csv = a; return 0;
    case TF_SAVE: o->save = a; return 0;
    case TF_QUIET: o->quiet = 1; return 0;
    case TF_CHECKPOINT_EVERY: return cli_int32(c, "--checkpoint-every", a, 1, CLI_NOMAX, &o->checkpoint_every);
    case TF_CHECKPOINT: o->checkpoint = a; return 0;
    case TF_RESUME: o->resume = 1; return 0;
    case TF_VAL_SIZE:
        if (!strcmp(a, "auto")) { o->val_size = -2; return 0; }
        return cli_int32(c, "--val-size", a, 0, CLI_NOMAX, &o->val_size);
    case TF_PATIENCE: return cli_int32(c, "--patience", a, 0, CLI_NOMAX, &o->patience);
    default: return 0;
    }
}

/* argv → o. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_image_opts(int argc, char **argv, train_image_opts *o)
{
    memset(o, 0, sizeof *o);
    o->model = al_model_arch_at(0)->name; o->data = al_task_at(AL_TASK_IMAGE)->default_data; o->epochs = 10; o->batch = 64; o->eval_batch = 64; o->seed = 1; o->lr = 1e-3f;
    o->permute = -1;
    o->heads = o->depth = o->dim = o->patch = o->window = -1;
    const struct option *lo = train_flags_options(AL_TASK_IMAGE);
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (ch == 'h' || ch == TF_BASE + TF_HELP) { usage(stdout); return 0; }
        if (ch < TF_BASE || ch >= TF_BASE + TF_NFLAGS) return cli_bad_option("train", argv);
        o->seen[ch - TF_BASE] = 1;
        if (parse_flag(o, ch - TF_BASE, optarg)) return 2;   /* the parser printed what was wrong */
    }
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    return -1;
}

/* The model exists, every flag applies to it and to the data, conv-attn has its cnn, the outputs can be written. */
static int check_image_opts(train_image_opts *o)
{
    al_error err = {{0}};
    al_model_config cfg;
    if (al_model_config_default(&cfg, o->model, 1, 1, 1, 2, &err) != AL_OK) { fprintf(stderr, "attnlab train: %s\n", err.msg); return 2; }
    flag_ctx fc = {AL_TASK_IMAGE, o->model, train_model_props(AL_TASK_IMAGE, o->model)};
    fc.props |= app_image_data_named(o->data) ? AP_IDX : AP_FOLDER;
    if (train_flags_check(&fc, o->seen)) return 2;
    const al_model_arch *kind = al_model_arch_find(o->model);
    if (!kind->trainable && !o->init_from) {
        fprintf(stderr, "attnlab train: --model %s needs --init-from CNN_CHECKPOINT (it is built from a trained cnn)\n", o->model);
        return 2;
    }
    if (!o->wd_set) o->wd = kind->weight_decay;
    if (o->seen[TF_PATIENCE] && !o->val_size) {
        fprintf(stderr, "attnlab train: --patience stops on the validation accuracy: it needs --val-size N|auto\n");
        return 2;
    }
    /* the outputs can be written: known before the data is loaded, not after the training */
    if (cli_output("train", "--csv", o->csv, 1) || cli_output("train", "--save", o->save, 0)) return 2;
    return 0;
}

/* ---- load ---- */
/* --data into R->D, with the --train-size and --test-size subsets. Returns an exit status. */
static int load_image_data(const train_image_opts *o, image_run *R, al_error *err)
{
    cli_dataset_name(o->data, R->dname, sizeof R->dname);
    const int pairs = !strcmp(o->data, "fashion-pairs");
    if (al_image_data_load(pairs ? "fashion-mnist" : o->data, o->data_dir, o->channels, o->image_h, o->image_w, cli_warn, NULL,
                           &R->D, err) != AL_OK)
        return 1;
    if (pairs) {   /* the generated task: its examples from the train and test pools, then as any image data */
        al_images tr, te;
        if (al_pairs_make(&R->D.train, o->train_size > 0 ? o->train_size : 10000, (uint64_t)o->seed, &tr, err) != AL_OK) return 1;
        if (al_pairs_make(&R->D.test, o->test_size > 0 ? o->test_size : 10000, 0, &te, err) != AL_OK) { al_images_free(&tr); return 1; }
        al_images_free(&R->D.train); al_images_free(&R->D.test);
        R->D.train = tr; R->D.test = te;
    }
    if (o->train_size > R->D.train.n) {
        al_seterr(err, "--train-size %d is larger than the training split (%d images)", o->train_size, R->D.train.n);
        return 2;
    }
    if (app_images_keep(&R->D.train, o->train_size, (uint64_t)o->seed, NULL, err) != AL_OK) return 1;
    if (o->val_size && R->D.train.n >= 2 &&   /* held out of the N training images: N counts both parts */
        app_images_hold_out(&R->D.train, o->val_size > 0 ? o->val_size : app_val_size(R->D.train.n), (uint64_t)o->seed, &R->val,
                            err) != AL_OK)
        return 2;
    if (o->val_size && !R->val.n) { al_seterr(err, "--val-size: %d training image(s) cannot be split", R->D.train.n); return 2; }
    if (app_images_keep(&R->D.test, o->test_size, 0, NULL, err) != AL_OK) return 1;
    if (app_images_permute(&R->D.train, o->permute, err) != AL_OK || app_images_permute(&R->D.test, o->permute, err) != AL_OK ||
        app_images_permute(&R->val, o->permute, err) != AL_OK)
        return 1;
    R->classes = R->D.train.classes > R->D.test.classes ? R->D.train.classes : R->D.test.classes;
    return 0;
}

/* ---- build ---- */
/* The model options over the defaults; 0 or an exit status. */
static int apply_model_opts(const train_image_opts *o, al_model_config *cfg, al_error *err)
{
    if (o->dim > 0) { cfg->dim = o->dim; cfg->hidden = 2 * o->dim; }
    if (o->depth > 0) cfg->depth = o->depth;
    if (o->heads > 0) cfg->heads = o->heads;
    if (o->patch > 0) cfg->patch = o->patch;
    if (o->window >= 0) cfg->window = o->window;
    if (o->pos && al_pos_parse(o->pos, &cfg->pos)) { al_seterr(err, "--pos must be none, learned, sinusoidal or relative"); return 2; }
    if (o->score && al_score_parse(o->score, &cfg->score)) { al_seterr(err, "--score must be dot or additive"); return 2; }
    if (o->norm && al_norm_parse(o->norm, &cfg->norm)) { al_seterr(err, "--norm must be softmax or relu"); return 2; }
    const al_model_arch *kind = al_model_arch_find(cfg->name);
    if (o->window == 0 && kind->attention) {
        al_seterr(err, "--window full is for conv-attn-ft (for full attention over the tokens use --model sa)");
        return 2;
    }
    if (kind->windowed && kind->attention && cfg->patch > 0) {   /* a window beyond the grid only costs time */
        int gh = cfg->height / cfg->patch, gw = cfg->width / cfg->patch;
        if (cfg->window > (gh > gw ? gh : gw)) {
            al_seterr(err, "--window %d is larger than the %dx%d token grid (%dx%d images, patch %d)", cfg->window, gh, gw,
                      cfg->height, cfg->width, cfg->patch);
            return 2;
        }
    }
    return 0;
}

/* The model for the loaded data: defaults, options, initialisation, --init-from. Returns an exit status. */
static int build_image_model(const train_image_opts *o, image_run *R, al_error *err)
{
    const al_images *T = &R->D.train;
    if (al_model_config_default(&R->cfg, o->model, T->c, T->h, T->w, R->classes, err) != AL_OK) return 1;
    int rc = apply_model_opts(o, &R->cfg, err);
    if (rc) return rc;
    if (al_model_init(&R->m, &R->cfg, (uint64_t)o->seed, err) != AL_OK) return 2;
    R->have_model = 1;
    if (o->init_from && R->m.kind->trainable) {   /* start from a checkpoint with the same parameter names and shapes */
        const al_model_arch *k = R->m.kind;
        if (k->from) {                            /* or of the model this one is built from (conv-attn-ft: a cnn) */
            al_model src;
            float mean[4], std[4];
            if (al_model_load(o->init_from, &src, mean, std, NULL, err) != AL_OK) return 1;
            al_status st = !strcmp(src.cfg.name, k->built_from) ? k->from(&R->m, &src, err)
                                                                 : al_safetensors_load(o->init_from, &R->m.params, NULL, err);
            al_model_free(&src);
            if (st != AL_OK) {
                char why[sizeof err->msg];
                snprintf(why, sizeof why, "%s", err->msg);
                al_seterr(err, "--init-from %s: %s", o->init_from, why);
                return 2;
            }
        } else if (al_safetensors_load(o->init_from, &R->m.params, NULL, err) != AL_OK) return 1;
        al_model_refresh(&R->m);
    }
    return 0;
}

/* ---- run: conv-attn ---- */
/* conv-attn is a fixed construction (forward only): take a trained cnn checkpoint, evaluate the same
 * weights as a cnn and as attention. acc[0..1] = cnn, conv-attn; t[0..2] = timestamps; *agree = the
 * fraction of equal predictions. Returns an exit status. */
static int conv_attn_eval(const train_image_opts *o, al_model *m, const al_images *T, double acc[2], double t[3],
                          double *agree, al_error *err)
{
    al_model cnn;
    float mean[4], std[4];
    if (al_model_load(o->init_from, &cnn, mean, std, NULL, err) != AL_OK) return 1;
    int rc = 1;
    int *p1 = malloc((size_t)T->n * sizeof(int)), *p2 = malloc((size_t)T->n * sizeof(int));
    /* a trained model with conv-attn's own parameters: the cnn */
    if (!cnn.kind->trainable || cnn.kind->init != m->kind->init || cnn.params.total != m->params.total || cnn.cfg.channels != m->cfg.channels ||
        cnn.cfg.height != m->cfg.height || cnn.cfg.width != m->cfg.width || cnn.cfg.classes != m->cfg.classes) {
        al_seterr(err, "--init-from %s: conv-attn needs a cnn checkpoint for %dx%dx%d images and %d classes (it holds a %s model)",
                  o->init_from, m->cfg.channels, m->cfg.height, m->cfg.width, m->cfg.classes, cnn.cfg.name);
        rc = 2; goto done;
    }
    if (!p1 || !p2) { al_seterr(err, "out of memory"); goto done; }
    memcpy(m->params.data, cnn.params.data, (size_t)m->params.total * sizeof(float));
    al_model_refresh(m);
    t[0] = al_time();
    if (al_model_evaluate(&cnn, T, mean, std, 256, &acc[0], p1, err) != AL_OK) goto done;
    t[1] = al_time();
    if (al_model_evaluate(m, T, mean, std, 256, &acc[1], p2, err) != AL_OK) goto done;
    t[2] = al_time();
    int same = 0;
    for (int i = 0; i < T->n; i++) same += p1[i] == p2[i];
    *agree = T->n ? (double)same / T->n : 1.0;
    rc = 0;
done:
    free(p1); free(p2);
    al_model_free(&cnn);
    return rc;
}

/* Both accuracies and their agreement: CSV row, summary line, < 99.9 % agreement is an error. */
static int run_conv_attn(const train_image_opts *o, image_run *R, al_error *err)
{
    al_model *m = &R->m;
    const al_images *T = &R->D.test;
    double acc[2], t[3], frac;
    int rc = conv_attn_eval(o, m, T, acc, t, &frac, err);
    if (rc) return rc;
    char canon[2048], run_id[17];
    al_image_run_canonical(canon, sizeof canon, &m->cfg, R->dname, 0, 0, 0.f, 0.f, 0, o->seed);
    size_t l = strlen(canon);
    snprintf(canon + l, sizeof canon - l, ";init_from=%s;test_size=%d", o->init_from, T->n);
    al_run_id(run_id, canon);
    if (o->csv) {
        char config[1024];
        al_run_config(config, sizeof config, canon);
        train_run run = {.task = AL_TASK_IMAGE, .run_id = run_id, .dataset = R->dname, .model = o->model, .config = config,
                         .seed = o->seed, .params = (long)m->params.total, .csv = o->csv, .err = err};
        train_epoch e = train_epoch_none();
        e.final = 1; e.test_acc = acc[1];
        e.seconds = t[2] - t[1]; e.per_second = T->n / (t[2] - t[1] > 1e-9 ? t[2] - t[1] : 1e-9);
        if (train_report_row(&run, &e)) return 1;
    }
    printf("run %s task image data %s model conv-attn init_from %s test_images %d test_acc %.4f cnn_test_acc %.4f "
           "agree_with_cnn %.5f cnn_seconds %.1f conv_attn_seconds %.1f\n", run_id, R->dname, o->init_from, T->n,
           acc[1], acc[0], frac, t[1] - t[0], t[2] - t[1]);
    fflush(stdout);
    if (frac < 0.999) { al_seterr(err, "conv-attn agrees with the cnn on only %.3f%% of the test set (< 99.9%%)", 100 * frac); return 1; }
    return 0;
}

/* ---- run: training ---- */
static void image_run_id(const train_image_opts *o, const image_run *R, char run_id[17], char *config, size_t cn,
                         char canon[2048])
{
    al_image_run_canonical(canon, 2048, &R->cfg, R->dname, R->D.train.n + R->val.n, o->epochs, o->lr, o->wd, o->batch, o->seed);
    if (R->val.n) {           /* the protocol with a validation set (absent otherwise: earlier run ids stay) */
        size_t l = strlen(canon);
        snprintf(canon + l, 2048 - l, ";val_size=%d;patience=%d", R->val.n, o->patience);
    }
    if (o->test_size > 0) {   /* a reduced test set is a different experiment */
        size_t l = strlen(canon);
        snprintf(canon + l, 2048 - l, ";test_size=%d", R->D.test.n);
    }
    if (o->permute >= 0) {    /* so is a permuted one (absent otherwise: earlier run ids stay) */
        size_t l = strlen(canon);
        snprintf(canon + l, 2048 - l, ";permute_pixels=%ld", o->permute);
    }
    if (o->init_from) {       /* and a run from a checkpoint (its file name) */
        const char *slash = strrchr(o->init_from, '/');
        size_t l = strlen(canon);
        snprintf(canon + l, 2048 - l, ";init_from=%s", slash ? slash + 1 : o->init_from);
    }
    char aug[96];
    if (al_augment_str(&o->augment, aug, sizeof aug) && strcmp(aug, "none")) {   /* and augmented training */
        size_t l = strlen(canon);
        snprintf(canon + l, 2048 - l, ";augment=%s", aug);
    }
    al_run_id(run_id, canon);
    al_run_config(config, cn, canon);
}

/* The checkpoint: the model, the normalisation, the run's hyperparameters, the class names (predict
 * prints them). */
static al_status save_image(const train_image_opts *o, const image_run *R, const al_train_config *tc, const char *run_id,
                            double test_acc, al_error *err)
{
    char vb[6][48], names[8192] = "";
    snprintf(vb[0], 48, "%d", R->D.train.n + R->val.n); snprintf(vb[1], 48, "%d", o->epochs); snprintf(vb[2], 48, "%.9g", (double)o->lr);
    snprintf(vb[3], 48, "%.9g", (double)o->wd); snprintf(vb[4], 48, "%d", o->batch); snprintf(vb[5], 48, "%ld", o->seed);
    char acc[32], perm[32]; snprintf(acc, sizeof acc, "%.6f", test_acc); snprintf(perm, sizeof perm, "%ld", o->permute);
    const char *kv[] = {"task", "image", "data", R->dname, "train_size", vb[0], "epochs", vb[1], "lr", vb[2],
                        "wd", vb[3], "batch", vb[4], "seed", vb[5], "optim", "adamw", "run_id", run_id,
                        "test_acc", acc, APP_PERMUTE_KEY, perm, APP_CLASS_NAMES_KEY, names};
    int nkv = (int)(sizeof kv / sizeof *kv / 2);
    if (o->permute < 0) { kv[2 * nkv - 4] = kv[2 * nkv - 2]; kv[2 * nkv - 3] = kv[2 * nkv - 1]; nkv--; }   /* no key: unpermuted */
    const al_images *T = R->D.train.class_names ? &R->D.train : &R->D.test;
    if (!T->class_names || T->classes != R->classes || app_class_names_join(T->class_names, T->classes, names, sizeof names))
        nkv--;   /* no names (or too long): predict prints class indices */
    return al_model_save(o->save, &R->m, tc->mean, tc->std, kv, nkv, err);
}

static void start_progress(prog *pg, const train_image_opts *o, image_run *R, const char *run_id, const char *config,
                           al_error *err)
{
    memset(pg, 0, sizeof *pg);
    pg->run = (train_run){.task = AL_TASK_IMAGE, .run_id = run_id, .dataset = R->dname, .model = o->model, .config = config,
                          .train_size = R->D.train.n + R->val.n, .seed = o->seed, .params = (long)R->m.params.total, .csv = o->csv,
                          .tty = isatty(2), .quiet = o->quiet, .ar = &R->ar, .err = err};
    pg->last_test_acc = NAN; pg->last_loss = NAN;
    const int n = R->D.train.n, spe = n / o->batch + (n % o->batch != 0);
    pg->total_steps = (int64_t)o->epochs * spe;
    pg->evals_total = R->D.test.n > 0 ? count_evals(o->epochs, o->eval_every) : 0;
    pg->batch = o->batch; pg->test_n = R->D.test.n; pg->first_eval = -1;
}

/* Train, save, print the summary line. Returns an exit status. */
static int run_training(const train_image_opts *o, image_run *R, al_error *err)
{
    const al_images *T = &R->D.train;
    al_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = o->epochs; tc.batch = o->batch; tc.eval_batch = o->eval_batch; tc.eval_every = o->eval_every; tc.lr = o->lr;
    tc.weight_decay = o->wd; tc.seed = (uint64_t)o->seed; tc.augment = o->augment; tc.dist = o->dist;
    for (int i = 0; i < 4; i++) { tc.mean[i] = 0.f; tc.std[i] = 1.f; }
    if (al_images_stats(T, NULL, 0, tc.mean, tc.std, err) != AL_OK) return 1;
    char run_id[17], config[1024], canon[2048];
    image_run_id(o, R, run_id, config, sizeof config, canon);
    prog pg;
    start_progress(&pg, o, R, run_id, config, err);
    app_resume_init(&R->ar, o->checkpoint_every, o->resume, o->checkpoint, o->save);
    int rc = app_resume_start(&R->ar, o->csv, run_id, canon, &R->m.params, err);
    if (rc) return rc;
    tc.resume = app_resume_loop(&R->ar);
    if (R->ar.have_state) {             /* the weights are the state's; what the summary shows of its epoch */
        al_model_refresh(&R->m);
        pg.last_loss = app_resume_noted(&R->ar, "loss"); pg.last_test_acc = app_resume_noted(&R->ar, "test_acc");
        pg.done_steps = R->ar.state.steps;
    }
    if (!o->quiet)
        fprintf(stderr, "attnlab train: %s (%lld params) on %s: %d train / %d test images %dx%dx%d, %d classes, run %s\n",
                o->model, (long long)R->m.params.total, R->dname, T->n, R->D.test.n, T->c, T->h, T->w, R->classes, run_id);
    double t0 = al_time();
    pg.validated = R->val.n > 0;
    if (al_model_train_val(&R->m, T, R->val.n ? &R->val : NULL, &R->D.test, &tc, o->patience, on_progress, &pg, err) != AL_OK) {
        app_resume_fail_note(&R->ar, err);
        return 1;
    }
    double secs = al_time() - t0;
    if (o->save && save_image(o, R, &tc, run_id, pg.last_test_acc, err) != AL_OK) return 1;
    char kept[96] = "";
    if (R->val.n) snprintf(kept, sizeof kept, " val_size %d best_epoch %d val_acc %.4f", R->val.n, pg.best_epoch, pg.val_acc);
    printf("run %s task image data %s model %s train_size %d seed %ld epochs %d params %lld train_loss %.4f test_acc %.4f%s seconds "
           "%.1f%s%s\n", run_id, R->dname, o->model, T->n + R->val.n, o->seed, o->epochs, (long long)R->m.params.total, pg.last_loss,
           pg.last_test_acc, kept, secs, o->save ? " saved " : "", o->save ? o->save : "");
    fflush(stdout);
    return 0;
}

int train_image_main(int argc, char **argv)
{
    train_image_opts o;
    int rc = parse_image_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("train") || check_image_opts(&o)) return 2;
    if (app_train_dist(o.checkpoint || o.checkpoint_every || o.resume, &o.csv, &o.save, &o.quiet, &o.threads, &o.dist)) return 2;
    if (o.dist && o.dist->size > 1 && !al_model_arch_find(o.model)->trainable) {
        if (!o.dist->rank) fprintf(stderr, "attnlab train: --model %s is not trained; run it on one process\n", o.model);
        return 2;
    }
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.quiet) fprintf(stderr, "attnlab train: %d threads, gemm %s\n", al_threads(), al_gemm_backend());
    al_error err = {{0}};
    image_run R;
    memset(&R, 0, sizeof R);
    rc = load_image_data(&o, &R, &err);
    if (!rc) rc = build_image_model(&o, &R, &err);
    if (!rc) rc = R.m.kind->trainable ? run_training(&o, &R, &err) : run_conv_attn(&o, &R, &err);
    if (rc) fprintf(stderr, "%sattnlab train: %s\n", isatty(2) && !o.quiet ? "\r\033[K" : "", err.msg[0] ? err.msg : "failed");
    if (R.have_model) al_model_free(&R.m);
    app_resume_free(&R.ar);
    al_image_split_free(&R.D);
    al_images_free(&R.val);
    return rc;
}
