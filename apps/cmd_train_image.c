/* train_image.c — attnlab train --task image: train an image classifier, log CSV, save a checkpoint. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/kernels.h"
#include "attnlab/checkpoint.h"
#include "attnlab/train.h"

typedef struct opts {
    const char *model, *data, *data_dir, *csv, *save, *init_from;
    int epochs, batch, threads, train_size, test_size, eval_every, image_h, image_w, channels, quiet;
    long seed;
    float lr, wd; int wd_set;
    /* model options; -1 / NULL = model default */
    int heads, depth, dim, patch, window;
    const char *pos, *score, *norm;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab train [--task image] --model %s [OPTIONS]\n\n"
        "Trains an image classifier with AdamW and cross-entropy; evaluates the whole test split after\n"
        "every epoch; one CSV row per epoch (--csv); summary line on stdout; progress on stderr.\n\n"
        "data:\n"
        "  --data NAME|DIR      fashion-mnist (IDX files) or an image folder DIR/{train,test}/CLASS/*.png|jpg\n"
        "                       (default fashion-mnist)\n"
        "  --data-dir DIR       where the Fashion-MNIST .gz files are (default: $ATTNLAB_FASHION_MNIST, $ATTNLAB_DATA/fashion-mnist,\n"
        "                       datasets/fashion-mnist, " AL_DATADIR "/fashion-mnist, then " AL_FASHION_MNIST_DIR ")\n"
        "  --train-size N       stratified subset of N training images, seeded (default 0 = all)\n"
        "  --test-size N        evaluate on a stratified subset of N test images (quick checks only;\n"
        "                       default 0 = the whole test split, the reported protocol)\n"
        "  --image-size HxW     image folders: resize to HxW, or SxS for a single number S (default: the\n"
        "                       most common size in the folder)\n"
        "  --channels C         image folders: 1 (grey) or 3 (RGB) (default: 3 if any image has colour)\n"
        "training:\n"
        "  --epochs N           (default 10)\n"
        "  --lr X               AdamW learning rate (default 0.001)\n"
        "  --wd X               AdamW weight decay on all parameters (default 0 for cnn, 0.01 otherwise)\n"
        "  --batch N            (default 64)\n"
        "  --seed N             init, subset and shuffling (default 1)\n"
        "  --threads N          OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
        "  --eval-every N       evaluate every N epochs and after the last (default 1); the CSV rows of\n"
        "                       epochs not evaluated have an empty test_acc\n"
        "model (sa, local):\n"
        "  --dim N (64)  --depth N (2)  --heads N (4)  --patch P (2; 1 = pixel tokens)  --window K (local: 5)\n"
        "  --pos none|learned|sinusoidal|relative   (sa: learned, local: relative)\n"
        "  --score dot|additive (dot)   --norm softmax|relu (softmax)\n"
        "  --init-from FILE     start from a checkpoint with the same parameters. conv-attn is not trained:\n"
        "                       it runs a trained cnn checkpoint's convs as attention (exact construction)\n"
        "                       and prints both test accuracies and how often their predictions agree\n"
        "output:\n"
        "  --csv FILE           append one row per epoch (columns: " AL_CSV_HEADER ")\n"
        "                       val_acc is empty: image runs hold out no validation split\n"
        "  --save FILE          safetensors checkpoint with the model and hyperparameters in __metadata__\n"
        "  --quiet              no progress on stderr\n", al_model_names());
}

/* ---- progress on stderr ---- */
typedef struct prog {
    int tty, quiet, total_steps, done_steps;
    double last_draw;
    const opts *o;
    const char *run_id; long train_size; long params; const char *dataset;
    double last_test_acc, last_loss;
    al_error *err;
} prog;

static void fmt_time(char *b, size_t n, double s)
{
    if (!(s >= 0) || s > 1e7) { snprintf(b, n, "--:--"); return; }
    int t = (int)(s + 0.5);
    if (t >= 3600) snprintf(b, n, "%d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
    else snprintf(b, n, "%d:%02d", t / 60, t % 60);
}

static int on_progress(void *ud, const al_train_progress *p)
{
    prog *g = ud;
    if (p->kind == 0) {
        g->done_steps++;
        if (g->quiet || !g->tty) return 0;
        double now = al_time();
        if (now - g->last_draw < 0.1 && p->step != p->steps_per_epoch) return 0;
        g->last_draw = now;
        double eta = g->done_steps ? p->elapsed / g->done_steps * (g->total_steps - g->done_steps) : NAN;
        char e[32]; fmt_time(e, sizeof e, eta);
        int w = 20, fill = p->steps_per_epoch ? w * p->step / p->steps_per_epoch : 0;
        char bar[32]; for (int i = 0; i < w; i++) bar[i] = i < fill ? '=' : ' '; bar[w] = 0;
        fprintf(stderr, "\r\033[Kepoch %d/%d [%s] %d/%d loss %.4f %.0f img/s ETA %s", p->epoch, p->epochs, bar,
                p->step, p->steps_per_epoch, p->loss, p->img_per_s, e);
        fflush(stderr);
        return 0;
    }
    g->last_test_acc = p->test_acc; g->last_loss = p->loss;
    if (g->o->csv) {
        al_csv_row r;
        memset(&r, 0, sizeof r);
        r.run_id = g->run_id; r.task = "image"; r.dataset = g->dataset; r.model = g->o->model;
        r.train_size = g->train_size; r.seed = g->o->seed; r.epoch = p->epoch;
        r.train_loss = p->loss; r.train_acc = p->train_acc; r.val_acc = NAN; r.test_acc = p->test_acc;
        r.epoch_seconds = p->epoch_seconds; r.samples_per_second = p->img_per_s; r.params = g->params;
        if (al_csv_append(g->o->csv, &r, g->err) != AL_OK) return 1;
    }
    if (!g->quiet) {
        char e[32]; fmt_time(e, sizeof e, p->elapsed);
        char ta[16];
        if (isnan(p->test_acc)) snprintf(ta, sizeof ta, "-"); else snprintf(ta, sizeof ta, "%.4f", p->test_acc);
        fprintf(stderr, "%sepoch %d/%d  loss %.4f  train_acc %.4f  test_acc %s  %.1f s  %.0f img/s  elapsed %s\n",
                g->tty ? "\r\033[K" : "", p->epoch, p->epochs, p->loss, p->train_acc, ta,
                p->epoch_seconds, p->img_per_s, e);
    }
    return 0;
}

static int parse_int(const char *s, const char *flag, int lo, int *out)
{
    char *end; long v = strtol(s, &end, 10);
    if (end == s || *end || v < lo || v > 1000000000L) {
        fprintf(stderr, "attnlab train: %s expects an integer >= %d, got '%s'\n", flag, lo, s);
        return -1;
    }
    *out = (int)v; return 0;
}
static int parse_float(const char *s, const char *flag, float *out)
{
    char *end; double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v) || v < 0) { fprintf(stderr, "attnlab train: %s expects a number >= 0, got '%s'\n", flag, s); return -1; }
    *out = (float)v; return 0;
}


static void warn_skip(void *ud, const char *msg) { (void)ud; fprintf(stderr, "attnlab: warning: %s\n", msg); }

/* --image-size S or HxW, each side in [4, 4096]. */
static int parse_hw(const char *s, int *h, int *w)
{
    char *end; long a = strtol(s, &end, 10), b = a;
    if (end != s && (*end == 'x' || *end == 'X')) { const char *t = end + 1; b = strtol(t, &end, 10); if (end == t) end = (char *)s; }
    if (end == s || *end || a < 4 || a > 4096 || b < 4 || b > 4096) {
        fprintf(stderr, "attnlab train: --image-size wants S or HxW with sides 4..4096, got '%s'\n", s);
        return 1;
    }
    *h = (int)a; *w = (int)b;
    return 0;
}

/* Load --data: "fashion-mnist" (IDX files in data_dir or where al_data_locate finds them) or an image
 * folder. name receives the dataset column of the CSV (the folder's last path component for a folder). */
static al_status load_split(const char *data, const char *data_dir, int size_h, int size_w, int channels, al_image_split *S,
                            char *name, size_t nn, al_error *err)
{
    memset(S, 0, sizeof *S);
    if (!strcmp(data, "fashion-mnist")) snprintf(name, nn, "fashion-mnist");
    else {
        const char *b = data + strlen(data);
        while (b > data && b[-1] == '/') b--;
        const char *e = b;
        while (b > data && b[-1] != '/') b--;
        snprintf(name, nn, "%.*s", (int)(e - b), b);
        for (char *q = name; *q; q++) if (*q == ',' || *q == '"' || *q == '\n') *q = '_';
    }
    return al_image_data_load(data, data_dir, channels, size_h, size_w, warn_skip, NULL, S, err);
}

/* Replace im by the n images idx[0..n) (copied). */
static al_status take_subset(al_images *im, const int *idx, int n, al_error *err)
{
    size_t per = (size_t)im->c * im->h * im->w;
    uint8_t *pix = malloc((size_t)n * per);
    int *lab = malloc((size_t)n * sizeof(int));
    if (!pix || !lab) { free(pix); free(lab); return al_seterr(err, "out of memory taking a subset of %d images", n); }
    for (int i = 0; i < n; i++) { memcpy(pix + (size_t)i * per, im->pix + (size_t)idx[i] * per, per); lab[i] = im->labels[idx[i]]; }
    free(im->pix); free(im->labels);
    im->pix = pix; im->labels = lab; im->n = n;
    return AL_OK;
}

/* conv-attn is a fixed construction (forward only): take a trained cnn checkpoint, evaluate the same
 * weights as a cnn and as attention, and report both accuracies and how often the predictions agree. */
static int run_conv_attn(const opts *o, al_model *m, const al_image_split *D, const char *dname, al_error *err)
{
    al_model cnn;
    float mean[4], std[4];
    if (al_model_load(o->init_from, &cnn, mean, std, NULL, err) != AL_OK) return 1;
    int rc = 1;
    int *p1 = malloc((size_t)D->test.n * sizeof(int)), *p2 = malloc((size_t)D->test.n * sizeof(int));
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
    double acc_cnn, acc_ca, t0 = al_time();
    if (al_eval_image(&cnn, &D->test, mean, std, 256, &acc_cnn, p1, err) != AL_OK) goto done;
    double t1 = al_time();
    if (al_eval_image(m, &D->test, mean, std, 256, &acc_ca, p2, err) != AL_OK) goto done;
    double t2 = al_time();
    int agree = 0;
    for (int i = 0; i < D->test.n; i++) agree += p1[i] == p2[i];
    double frac = D->test.n ? (double)agree / D->test.n : 1.0;
    char canon[2048], run_id[17];
    al_image_run_canonical(canon, sizeof canon, &m->cfg, dname, 0, 0, 0.f, 0.f, 0, o->seed);
    size_t l = strlen(canon);
    snprintf(canon + l, sizeof canon - l, ";init_from=%s;test_size=%d", o->init_from, D->test.n);
    al_run_id(run_id, canon);
    if (o->csv) {
        al_csv_row r;
        memset(&r, 0, sizeof r);
        r.run_id = run_id; r.task = "image"; r.dataset = dname; r.model = "conv-attn"; r.train_size = 0;
        r.seed = o->seed; r.epoch = 0; r.train_loss = r.train_acc = r.val_acc = NAN; r.test_acc = acc_ca;
        r.epoch_seconds = t2 - t1; r.samples_per_second = D->test.n / (t2 - t1 > 1e-9 ? t2 - t1 : 1e-9);
        r.params = (long)m->params.total;
        if (al_csv_append(o->csv, &r, err) != AL_OK) goto done;
    }
    printf("run %s task image data %s model conv-attn init_from %s test_images %d test_acc %.4f cnn_test_acc %.4f "
           "agree_with_cnn %.5f cnn_seconds %.1f conv_attn_seconds %.1f\n", run_id, dname, o->init_from, D->test.n,
           acc_ca, acc_cnn, frac, t1 - t0, t2 - t1);
    fflush(stdout);
    if (frac < 0.999) { al_seterr(err, "conv-attn agrees with the cnn on only %.3f%% of the test set (< 99.9%%)", 100 * frac); goto done; }
    rc = 0;
done:
    free(p1); free(p2);
    al_model_free(&cnn);
    return rc;
}

int train_image_main(int argc, char **argv)
{
    opts o = {0};
    o.model = "cnn"; o.data = "fashion-mnist"; o.epochs = 10; o.batch = 64; o.seed = 1; o.lr = 1e-3f;
    o.image_h = o.image_w = 0; o.channels = 0;
    o.heads = o.depth = o.dim = o.patch = o.window = -1;
    enum { O_TASK = 256, O_MODEL, O_DATA, O_DATADIR, O_TRAINSIZE, O_IMGSIZE, O_CHANNELS, O_EPOCHS, O_LR, O_WD,
           O_BATCH, O_SEED, O_THREADS, O_DIM, O_DEPTH, O_HEADS, O_PATCH, O_WINDOW, O_POS, O_SCORE, O_NORM,
           O_INIT, O_CSV, O_SAVE, O_QUIET, O_HELP, O_TESTSIZE, O_EVALEVERY };
    static const struct option lo[] = {
        {"task", 1, 0, O_TASK}, {"model", 1, 0, O_MODEL}, {"data", 1, 0, O_DATA}, {"data-dir", 1, 0, O_DATADIR},
        {"train-size", 1, 0, O_TRAINSIZE}, {"image-size", 1, 0, O_IMGSIZE}, {"channels", 1, 0, O_CHANNELS},
        {"epochs", 1, 0, O_EPOCHS}, {"lr", 1, 0, O_LR}, {"wd", 1, 0, O_WD}, {"batch", 1, 0, O_BATCH},
        {"seed", 1, 0, O_SEED}, {"threads", 1, 0, O_THREADS}, {"dim", 1, 0, O_DIM}, {"depth", 1, 0, O_DEPTH},
        {"heads", 1, 0, O_HEADS}, {"patch", 1, 0, O_PATCH}, {"window", 1, 0, O_WINDOW}, {"pos", 1, 0, O_POS},
        {"score", 1, 0, O_SCORE}, {"norm", 1, 0, O_NORM}, {"init-from", 1, 0, O_INIT}, {"csv", 1, 0, O_CSV},
        {"save", 1, 0, O_SAVE}, {"test-size", 1, 0, O_TESTSIZE}, {"eval-every", 1, 0, O_EVALEVERY}, {"quiet", 0, 0, O_QUIET}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch, seed_i = 1, bad = 0;
    while (!bad && (ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        switch (ch) {
        case O_TASK: if (strcmp(optarg, "image")) { fprintf(stderr, "attnlab train: this is the image task, got --task %s\n", optarg); return 2; } break;
        case O_MODEL: o.model = optarg; break;
        case O_DATA: o.data = optarg; break;
        case O_DATADIR: o.data_dir = optarg; break;
        case O_TRAINSIZE: bad = parse_int(optarg, "--train-size", 0, &o.train_size); break;
        case O_IMGSIZE: bad = parse_hw(optarg, &o.image_h, &o.image_w); break;
        case O_CHANNELS: bad = parse_int(optarg, "--channels", 1, &o.channels);
            if (!bad && o.channels != 1 && o.channels != 3) { fprintf(stderr, "attnlab train: --channels must be 1 or 3\n"); bad = -1; } break;
        case O_EPOCHS: bad = parse_int(optarg, "--epochs", 1, &o.epochs); break;
        case O_LR: bad = parse_float(optarg, "--lr", &o.lr); if (!bad && !(o.lr > 0)) { fprintf(stderr, "attnlab train: --lr must be > 0\n"); bad = -1; } break;
        case O_WD: bad = parse_float(optarg, "--wd", &o.wd); o.wd_set = 1; break;
        case O_BATCH: bad = parse_int(optarg, "--batch", 1, &o.batch); break;
        case O_SEED: bad = parse_int(optarg, "--seed", 0, &seed_i); o.seed = seed_i; break;
        case O_THREADS: bad = parse_int(optarg, "--threads", 1, &o.threads); break;
        case O_DIM: bad = parse_int(optarg, "--dim", 1, &o.dim); break;
        case O_DEPTH: bad = parse_int(optarg, "--depth", 1, &o.depth); break;
        case O_HEADS: bad = parse_int(optarg, "--heads", 1, &o.heads); break;
        case O_PATCH: bad = parse_int(optarg, "--patch", 1, &o.patch); break;
        case O_WINDOW: bad = parse_int(optarg, "--window", 1, &o.window); break;
        case O_POS: o.pos = optarg; break;
        case O_SCORE: o.score = optarg; break;
        case O_NORM: o.norm = optarg; break;
        case O_INIT: o.init_from = optarg; break;
        case O_CSV: o.csv = optarg; break;
        case O_SAVE: o.save = optarg; break;
        case O_QUIET: o.quiet = 1; break;
        case O_TESTSIZE: bad = parse_int(optarg, "--test-size", 0, &o.test_size); break;
        case O_EVALEVERY: bad = parse_int(optarg, "--eval-every", 1, &o.eval_every); break;
        case 'h': case O_HELP: usage(stdout); return 0;
        default: return cli_bad_option("train", argv);
        }
    }
    if (bad) return 2;   /* the parser printed what was wrong */
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.wd_set) {
        const al_model_kind *kind = al_model_kind_find(o.model);
        o.wd = kind ? kind->weight_decay : 0.01f;
    }

    al_error err = {{0}};
    al_model_config cfg;
    if (al_model_config_default(&cfg, o.model, 1, 1, 1, 2, &err) != AL_OK) { fprintf(stderr, "attnlab train: %s\n", err.msg); return 2; }

    fprintf(stderr, "attnlab train: %d threads, gemm %s\n", al_threads(), al_gemm_backend());

    al_image_split D;
    char dname[64];
    if (load_split(o.data, o.data_dir, o.image_h, o.image_w, o.channels, &D, dname, sizeof dname, &err) != AL_OK) {
        fprintf(stderr, "attnlab train: %s\n", err.msg);
        al_image_split_free(&D);
        return 1;
    }
    int rc = 1, have_model = 0, tty = isatty(2);
    al_model m;
    memset(&m, 0, sizeof m);
    if (o.train_size > 0 && o.train_size < D.train.n) {
        int *idx = malloc((size_t)o.train_size * sizeof(int));
        al_status st = idx ? al_images_subset(&D.train, o.train_size, (uint64_t)o.seed, idx, &err) : al_seterr(&err, "out of memory");
        if (st == AL_OK) st = take_subset(&D.train, idx, o.train_size, &err);
        free(idx);
        if (st != AL_OK) goto out;
    } else if (o.train_size > D.train.n) {
        al_seterr(&err, "--train-size %d is larger than the training split (%d images)", o.train_size, D.train.n);
        rc = 2; goto out;
    }
    if (o.test_size > 0 && o.test_size < D.test.n) {
        int *idx = malloc((size_t)o.test_size * sizeof(int));
        al_status st = idx ? al_images_subset(&D.test, o.test_size, 0, idx, &err) : al_seterr(&err, "out of memory");
        if (st == AL_OK) st = take_subset(&D.test, idx, o.test_size, &err);
        free(idx);
        if (st != AL_OK) goto out;
    }
    int classes = D.train.classes > D.test.classes ? D.train.classes : D.test.classes;
    if (al_model_config_default(&cfg, o.model, D.train.c, D.train.h, D.train.w, classes, &err) != AL_OK) goto out;
    if (o.dim > 0) { cfg.dim = o.dim; cfg.hidden = 2 * o.dim; }
    if (o.depth > 0) cfg.depth = o.depth;
    if (o.heads > 0) cfg.heads = o.heads;
    if (o.patch > 0) cfg.patch = o.patch;
    if (o.window > 0) cfg.window = o.window;
    if (o.pos && al_pos_parse(o.pos, &cfg.pos)) { al_seterr(&err, "--pos must be none, learned, sinusoidal or relative"); rc = 2; goto out; }
    if (o.score && al_score_parse(o.score, &cfg.score)) { al_seterr(&err, "--score must be dot or additive"); rc = 2; goto out; }
    if (o.norm && al_norm_parse(o.norm, &cfg.norm)) { al_seterr(&err, "--norm must be softmax or relu"); rc = 2; goto out; }
    if (al_model_init(&m, &cfg, (uint64_t)o.seed, &err) != AL_OK) { rc = 2; goto out; }
    have_model = 1;
    if (!m.kind->trainable) {
        if (!o.init_from) { al_seterr(&err, "--model conv-attn needs --init-from CNN_CHECKPOINT (it is built from a trained cnn)"); rc = 2; goto out; }
        rc = run_conv_attn(&o, &m, &D, dname, &err);
        goto out;
    }
    if (o.init_from) {   /* start from a checkpoint with the same parameter names and shapes */
        if (al_safetensors_load(o.init_from, &m.params, NULL, &err) != AL_OK) goto out;
        al_model_refresh(&m);
    }

    al_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = o.epochs; tc.batch = o.batch; tc.eval_batch = 256; tc.eval_every = o.eval_every; tc.lr = o.lr; tc.weight_decay = o.wd;
    tc.seed = (uint64_t)o.seed;
    for (int i = 0; i < 4; i++) { tc.mean[i] = 0.f; tc.std[i] = 1.f; }
    if (al_images_stats(&D.train, NULL, 0, tc.mean, tc.std, &err) != AL_OK) goto out;

    char canon[2048], run_id[17];
    al_image_run_canonical(canon, sizeof canon, &cfg, dname, D.train.n, o.epochs, o.lr, o.wd, o.batch, o.seed);
    if (o.test_size > 0) {   /* a reduced test set is a different experiment */
        size_t l = strlen(canon);
        snprintf(canon + l, sizeof canon - l, ";test_size=%d", D.test.n);
    }
    al_run_id(run_id, canon);

    prog pg;
    memset(&pg, 0, sizeof pg);
    pg.tty = tty; pg.quiet = o.quiet; pg.o = &o; pg.run_id = run_id; pg.train_size = D.train.n;
    pg.params = (long)m.params.total; pg.dataset = dname; pg.err = &err; pg.last_test_acc = NAN; pg.last_loss = NAN;
    pg.total_steps = o.epochs * ((D.train.n + o.batch - 1) / o.batch);
    if (!o.quiet)
        fprintf(stderr, "attnlab train: %s (%lld params) on %s: %d train / %d test images %dx%dx%d, %d classes, run %s\n",
                o.model, (long long)m.params.total, dname, D.train.n, D.test.n, D.train.c, D.train.h,
                D.train.w, classes, run_id);
    double t0 = al_time();
    if (al_train_image(&m, &D.train, &D.test, &tc, on_progress, &pg, &err) != AL_OK) goto out;
    double secs = al_time() - t0;
    if (o.save) {
        char vb[6][48];
        snprintf(vb[0], 48, "%d", D.train.n); snprintf(vb[1], 48, "%d", o.epochs); snprintf(vb[2], 48, "%.9g", (double)o.lr);
        snprintf(vb[3], 48, "%.9g", (double)o.wd); snprintf(vb[4], 48, "%d", o.batch); snprintf(vb[5], 48, "%ld", o.seed);
        char acc[32]; snprintf(acc, sizeof acc, "%.6f", pg.last_test_acc);
        const char *kv[] = {"task", "image", "data", dname, "train_size", vb[0], "epochs", vb[1], "lr", vb[2],
                            "wd", vb[3], "batch", vb[4], "seed", vb[5], "optim", "adamw", "run_id", run_id,
                            "test_acc", acc};
        if (al_model_save(o.save, &m, tc.mean, tc.std, kv, (int)(sizeof kv / sizeof *kv / 2), &err) != AL_OK) goto out;
    }
    printf("run %s task image data %s model %s train_size %d seed %ld epochs %d params %lld train_loss %.4f test_acc %.4f seconds %.1f%s%s\n",
           run_id, dname, o.model, D.train.n, o.seed, o.epochs, (long long)m.params.total, pg.last_loss,
           pg.last_test_acc, secs, o.save ? " saved " : "", o.save ? o.save : "");
    fflush(stdout);
    rc = 0;
out:
    if (rc) fprintf(stderr, "%sattnlab train: %s\n", tty && !o.quiet ? "\r\033[K" : "", err.msg[0] ? err.msg : "failed");
    if (have_model) al_model_free(&m);
    al_image_split_free(&D);
    return rc;
}
