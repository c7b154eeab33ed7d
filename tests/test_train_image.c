/* test_train_image.c — the image training loop: learning a real task (a Fashion-MNIST subset) to a
 * stated accuracy, bitwise determinism (library and CLI CSV), divergence reported as an error,
 * shape checks, and train --save / eval --load through bin/attnlab. */
#include "testutil.h"
#include "attnlab/results.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "attnlab/io.h"
#include "attnlab/train.h"
#include "attnlab/checkpoint.h"
#include "attnlab/images.h"

static al_image_split fm;   /* Fashion-MNIST, loaded once */

static int setup(void **st)
{
    (void)st;
    al_error e = {{0}};
    if (al_fashion_mnist_load(NULL, &fm, &e) != AL_OK) { fprintf(stderr, "cannot load Fashion-MNIST: %s\n", e.msg); return -1; }
    return 0;
}
static int teardown(void **st) { (void)st; al_image_split_free(&fm); return 0; }

/* A stratified subset of im (seeded), copied. */
static al_images subset(const al_images *im, int n, uint64_t seed)
{
    al_images s = *im;
    al_error e = {{0}};
    int *idx = malloc((size_t)n * sizeof(int));
    assert_non_null(idx);
    if (al_images_subset(im, n, seed, idx, &e) != AL_OK) fail_msg("subset: %s", e.msg);
    size_t per = (size_t)im->c * im->h * im->w;
    s.n = n; s.class_names = NULL;
    s.pix = malloc((size_t)n * per); s.labels = malloc((size_t)n * sizeof(int));
    assert_non_null(s.pix); assert_non_null(s.labels);
    for (int i = 0; i < n; i++) { memcpy(s.pix + i * per, im->pix + (size_t)idx[i] * per, per); s.labels[i] = im->labels[idx[i]]; }
    free(idx);
    return s;
}
static void free_subset(al_images *s) { free(s->pix); free(s->labels); }

/* The small model of these tests: sa with 7×7 patches (16 tokens), width 32, one block. */
static void tiny_sa(al_model *m, uint64_t seed)
{
    al_model_config cfg; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "sa", 1, 28, 28, 10, &e), AL_OK);
    cfg.patch = 7; cfg.dim = 32; cfg.heads = 2; cfg.hidden = 64; cfg.depth = 1;
    if (al_model_init(m, &cfg, seed, &e) != AL_OK) fail_msg("%s", e.msg);
}

typedef struct rec { int n; double loss[16], tr[16], te[16]; int steps; } rec;
static int record(void *ud, const al_train_progress *p)
{
    rec *r = ud;
    if (p->kind == 0) { r->steps++; return 0; }
    if (r->n < 16) { r->loss[r->n] = p->loss; r->tr[r->n] = p->train_acc; r->te[r->n] = p->test_acc; r->n++; }
    return 0;
}

static void default_tc(al_train_config *tc, const al_images *train, int epochs, float lr)
{
    memset(tc, 0, sizeof *tc);
    tc->epochs = epochs; tc->batch = 32; tc->eval_batch = 256; tc->lr = lr; tc->weight_decay = 0.01f; tc->seed = 1;
    al_error e = {{0}};
    assert_int_equal(al_images_stats(train, NULL, 0, tc->mean, tc->std, &e), AL_OK);
}

/* CI: 315 AdamW steps (2000 images, 5 epochs, batch 32) of the tiny sa reach >= 0.62 on 1000 test
 * images (measured 0.69; chance is 0.10). A few seconds on one core. */
static void test_learns_fashion_mnist_subset(void **st)
{
    (void)st;
    int threads = al_threads();
    al_set_threads(1);
    al_images tr = subset(&fm.train, 2000, 1), te = subset(&fm.test, 1000, 0);
    al_model m; tiny_sa(&m, 1);
    al_train_config tc; default_tc(&tc, &tr, 5, 3e-3f);
    rec r = {0};
    al_error e = {{0}};
    double t0 = al_time();
    if (al_model_train(&m, &tr, &te, &tc, record, &r, &e) != AL_OK) fail_msg("train: %s", e.msg);
    print_message("tiny sa, 2000 images x 5 epochs: test acc %.4f (loss %.4f -> %.4f) in %.1f s\n", r.te[r.n - 1],
                  r.loss[0], r.loss[r.n - 1], al_time() - t0);
    assert_int_equal(r.n, 5);
    assert_int_equal(r.steps, 5 * 63);
    assert_true(r.loss[4] < r.loss[0]);
    if (!(r.te[4] >= 0.62)) fail_msg("test accuracy %.4f < 0.62", r.te[4]);
    /* al_model_evaluate agrees with the last epoch's evaluation */
    double acc;
    int *pred = malloc(1000 * sizeof(int));
    assert_int_equal(al_model_evaluate(&m, &te, tc.mean, tc.std, 100, &acc, pred, &e), AL_OK);
    assert_true(acc == r.te[4]);
    int ok = 0;
    for (int i = 0; i < 1000; i++) ok += pred[i] == te.labels[i];
    assert_true(ok / 1000.0 == acc);
    free(pred);
    al_model_free(&m);
    free_subset(&tr); free_subset(&te);
    al_set_threads(threads);
}

/* Same seed and thread count → bitwise the same losses, accuracies and parameters (2 threads). */
static void test_deterministic(void **st)
{
    (void)st;
    int threads = al_threads();
    al_set_threads(2);
    al_images tr = subset(&fm.train, 300, 2), te = subset(&fm.test, 200, 0);
    float *params[2] = {0};
    rec r[2];
    int64_t total = 0;
    for (int k = 0; k < 2; k++) {
        al_model m; tiny_sa(&m, 3);
        al_train_config tc; default_tc(&tc, &tr, 2, 1e-3f);
        tc.seed = 3;
        memset(&r[k], 0, sizeof r[k]);
        al_error e = {{0}};
        if (al_model_train(&m, &tr, &te, &tc, record, &r[k], &e) != AL_OK) fail_msg("train: %s", e.msg);
        total = m.params.total;
        params[k] = malloc((size_t)total * sizeof(float));
        memcpy(params[k], m.params.data, (size_t)total * sizeof(float));
        al_model_free(&m);
    }
    assert_int_equal(r[0].n, 2);
    assert_memory_equal(r[0].loss, r[1].loss, sizeof r[0].loss);
    assert_memory_equal(r[0].tr, r[1].tr, sizeof r[0].tr);
    assert_memory_equal(r[0].te, r[1].te, sizeof r[0].te);
    assert_memory_equal(params[0], params[1], (size_t)total * sizeof(float));
    /* and a different seed gives a different run */
    al_model m; tiny_sa(&m, 4);
    al_train_config tc; default_tc(&tc, &tr, 1, 1e-3f);
    tc.seed = 4;
    al_error e = {{0}};
    assert_int_equal(al_model_train(&m, &tr, &te, &tc, NULL, NULL, &e), AL_OK);
    assert_true(memcmp(m.params.data, params[0], (size_t)total * sizeof(float)) != 0);
    al_model_free(&m);
    free(params[0]); free(params[1]);
    free_subset(&tr); free_subset(&te);
    al_set_threads(threads);
}

/* Data-parallel training (dist.h) over 1, 2 and 3 ranks simulated by threads (tu_ranks): every rank
 * ends with the same weights and reports the same losses and accuracies, and so does every rank count. */
typedef struct dp_rank { const al_images *tr, *te; float *w; int64_t n; rec r; int failed; } dp_rank;
static void dp_train(const al_dist *d, void *p)
{
    dp_rank *a = p;
    al_model m; tiny_sa(&m, 5);
    al_train_config tc; default_tc(&tc, a->tr, 2, 1e-3f);
    tc.seed = 5; tc.dist = d; tc.batch = 50;    /* 6 steps of 8 micro-shards, the last one short */
    al_error e = {{0}};
    memset(&a->r, 0, sizeof a->r);
    a->failed = al_model_train(&m, a->tr, a->te, &tc, record, &a->r, &e) != AL_OK;
    a->n = m.params.total;
    a->w = malloc((size_t)a->n * sizeof(float));
    if (a->w) memcpy(a->w, m.params.data, (size_t)a->n * sizeof(float));
    al_model_free(&m);
}

static void test_data_parallel_same_bits_for_any_rank_count(void **st)
{
    (void)st;
    int threads = al_threads();
    al_set_threads(1);
    al_images tr = subset(&fm.train, 290, 4), te = subset(&fm.test, 300, 0);
    dp_rank one[1], three[3];
    for (int N = 1; N <= 3; N += 2) {
        dp_rank *a = N == 1 ? one : three;
        void *args[3];
        for (int k = 0; k < N; k++) { memset(&a[k], 0, sizeof a[k]); a[k].tr = &tr; a[k].te = &te; args[k] = &a[k]; }
        tu_ranks(N, dp_train, args);
        for (int k = 0; k < N; k++) {
            assert_false(a[k].failed);
            assert_non_null(a[k].w);
            assert_int_equal(a[k].r.n, 2);
            assert_memory_equal(a[k].w, one[0].w, (size_t)one[0].n * sizeof(float));
            assert_memory_equal(&a[k].r, &one[0].r, sizeof one[0].r);
        }
    }
    assert_true(one[0].r.te[1] > 0.2);               /* it learns (chance: 0.1) */
    free(one[0].w);
    for (int k = 0; k < 3; k++) free(three[k].w);
    free_subset(&tr); free_subset(&te);
    al_set_threads(threads);
}

static void test_nan_loss_is_an_error(void **st)
{
    (void)st;
    al_images tr = subset(&fm.train, 64, 1);
    al_model m; tiny_sa(&m, 1);
    m.head_b->data[3] = NAN;
    al_train_config tc; default_tc(&tc, &tr, 1, 1e-3f);
    al_error e = {{0}};
    assert_int_equal(al_model_train(&m, &tr, NULL, &tc, NULL, NULL, &e), AL_ERR);
    if (!strstr(e.msg, "NaN") || !strstr(e.msg, "epoch 1 step 1")) fail_msg("message: %s", e.msg);
    al_model_free(&m);
    free_subset(&tr);
}

static void test_shape_and_label_checks(void **st)
{
    (void)st;
    al_images tr = subset(&fm.train, 64, 1);
    al_model m; al_model_config cfg; al_error e = {{0}};
    al_model_config_default(&cfg, "cnn", 1, 14, 14, 10, &e);
    assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_OK);
    al_train_config tc; default_tc(&tc, &tr, 1, 1e-3f);
    assert_int_equal(al_model_train(&m, &tr, NULL, &tc, NULL, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "expects 1x14x14"));
    al_model_free(&m);
    al_model_config_default(&cfg, "cnn", 1, 28, 28, 5, &e);
    assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_OK);
    memset(&e, 0, sizeof e);
    assert_int_equal(al_model_train(&m, &tr, NULL, &tc, NULL, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "outside [0, 5)"));
    al_model_free(&m);
    free_subset(&tr);
}

/* ---- through bin/attnlab ---- */
/* The CSV without columns 12 and 13 (epoch_seconds, samples_per_second). */
static char *strip_timing(const char *csv)
{
    char *out = malloc(strlen(csv) + 1), *o = out;
    int col = 1;
    for (const char *p = csv; *p; p++) {
        if (*p == '\n') { col = 1; *o++ = *p; continue; }
        if (*p == ',') col++;
        if (col != 12 && col != 13) *o++ = *p;
    }
    *o = 0;
    return out;
}

static void test_cli_csv_deterministic_and_eval(void **st)
{
    (void)st;
    const char *b = tu_attnlab_bin();
    char dir[] = "/tmp/attnlab_test_train_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[2048], *csv[2];
    const char *common = "train --task image --model sa --patch 7 --dim 32 --heads 2 --depth 1 --train-size 400 "
                         "--lr 3e-3 --epochs 2 --eval-every 2 --batch 32 --seed 5 --threads 1 --quiet";
    for (int k = 0; k < 2; k++) {
        char save[128] = "";
        if (!k) snprintf(save, sizeof save, "--save %s/m.safetensors", dir);
        snprintf(cmd, sizeof cmd, "%s %s --csv %s/r%d.csv %s > %s/out%d.txt 2>%s/err%d.txt", b, common, dir, k,
                 save, dir, k, dir, k);
        int rc = system(cmd);
        if (rc != 0) { snprintf(cmd, sizeof cmd, "%s/err%d.txt", dir, k); char *err = tu_slurp(cmd); fail_msg("train exited %d: %s", rc, err ? err : "?"); }
        snprintf(cmd, sizeof cmd, "%s/r%d.csv", dir, k);
        csv[k] = tu_slurp(cmd);
        assert_non_null(csv[k]);
    }
    /* header + 2 rows; identical apart from the timing columns */
    int lines = 0;
    for (char *p = csv[0]; *p; p++) lines += *p == '\n';
    assert_int_equal(lines, 3);
    assert_true(!strncmp(csv[0], "run_id,task,dataset,model,train_size,seed,epoch,", 48));
    char *s0 = strip_timing(csv[0]), *s1 = strip_timing(csv[1]);
    assert_string_equal(s0, s1);
    assert_non_null(strstr(s0, ",image,fashion-mnist,sa,400,5,2,"));
    /* epoch 1 was not evaluated (--eval-every 2): val_acc and test_acc empty; epoch 2: val_acc empty */
    al_results res; al_error re = {{0}};
    if (al_results_parse(csv[0], strlen(csv[0]), "r0.csv", &res, &re) != AL_OK) fail_msg("%s", re.msg);
    assert_int_equal(res.n, 2);
    assert_true(isnan(res.row[0].val_acc) && isnan(res.row[0].test_acc));
    assert_true(isnan(res.row[1].val_acc) && res.row[1].test_acc > 0);
    assert_true(isnan(res.row[1].unseen_acc) && isnan(res.row[1].ambig_acc));   /* sequence runs only */
    al_results_free(&res);
    /* eval --load rebuilds the model and reproduces the final test accuracy */
    char *last = strrchr(s0, '\n');
    *last = 0;
    last = strrchr(s0, '\n') + 1;               /* final row */
    char *f = last;
    for (int i = 1; i < 11; i++) f = strchr(f, ',') + 1;   /* column 11: test_acc */
    double want = strtod(f, NULL);
    snprintf(cmd, sizeof cmd, "%s eval --load %s/m.safetensors --threads 1 > %s/eval.txt 2>&1", b, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/eval.txt", dir);
    char *ev = tu_slurp(cmd);
    assert_non_null(ev);
    char *ta = strstr(ev, "test_acc ");
    assert_non_null(ta);
    double got = strtod(ta + 9, NULL);
    if (!(fabs(got - want) < 1e-4 && got > 0.3)) fail_msg("eval --load: test_acc %.4f, the run's final row says %.4f", got, want);
    /* eval --test-size N --logits: N rows index,label,logit_0..9; --quiet: nothing on stderr */
    snprintf(cmd, sizeof cmd, "%s eval --load %s/m.safetensors --test-size 50 --logits %s/l.csv --threads 1 --quiet "
             "> %s/eval2.txt 2> %s/eval2.err", b, dir, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/eval2.txt", dir);
    char *ev2 = tu_slurp(cmd);
    assert_non_null(strstr(ev2, "test_images 50 "));
    snprintf(cmd, sizeof cmd, "%s/eval2.err", dir);
    char *er2 = tu_slurp(cmd);
    assert_string_equal(er2, "");
    snprintf(cmd, sizeof cmd, "%s/l.csv", dir);
    char *lg = tu_slurp(cmd);
    assert_non_null(lg);
    assert_true(!strncmp(lg, "index,label,logit_0,logit_1,", 28) && strstr(lg, ",logit_9\n"));
    int rows = 0, prev = -1;
    for (char *p = strchr(lg, '\n') + 1; *p; p = strchr(p, '\n') + 1) {
        int idx, lab, commas = 0;
        assert_int_equal(sscanf(p, "%d,%d", &idx, &lab), 2);
        assert_true(idx > prev && idx < 10000 && lab >= 0 && lab < 10);   /* ascending positions in the test split */
        for (char *q = p; *q != '\n'; q++) commas += *q == ',';
        assert_int_equal(commas, 11);
        prev = idx; rows++;
    }
    assert_int_equal(rows, 50);
    free(ev2); free(er2); free(lg);
    /* predict: one row per image file, the class by its Fashion-MNIST name (stored in the checkpoint) */
    snprintf(cmd, sizeof cmd, "%s/imgs", dir);
    mkdir(cmd, 0700);
    for (int k = 0; k < 2; k++) {
        uint8_t px[28 * 28];
        for (int i = 0; i < 28 * 28; i++) px[i] = (uint8_t)(k ? (i % 28 > 8 && i % 28 < 20 ? 200 : 0) : i / 4);
        al_error pe = {{0}};
        snprintf(cmd, sizeof cmd, "%s/imgs/%d.png", dir, k);
        assert_int_equal(al_png_write(cmd, px, 28, 28, 1, &pe), AL_OK);
    }
    snprintf(cmd, sizeof cmd, "%s predict --load %s/m.safetensors %s/imgs --threads 1 --quiet > %s/pred.csv", b, dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/pred.csv", dir);
    char *pred = tu_slurp(cmd);
    assert_true(!strncmp(pred, "file,class,prob\n", 16));
    const char *names[] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
    int nrows = 0;
    for (char *p = strchr(pred, '\n') + 1; *p; p = strchr(p, '\n') + 1, nrows++) {
        char *c1 = strchr(p, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
        assert_non_null(c2);
        int known = 0;
        for (int k = 0; k < 10; k++) known |= (size_t)(c2 - c1 - 1) == strlen(names[k]) && !strncmp(c1 + 1, names[k], strlen(names[k]));
        if (!known) fail_msg("predict row '%.*s': not a class name", (int)(strchr(p, '\n') - p), p);
        double prob = strtod(c2 + 1, NULL);
        assert_true(prob >= 0.1 && prob <= 1.0);
    }
    assert_int_equal(nrows, 2);
    free(pred);
    /* train --help points to the graph task's options */
    snprintf(cmd, sizeof cmd, "%s train --help > %s/help.txt", b, dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/help.txt", dir);
    char *help = tu_slurp(cmd);
    assert_non_null(strstr(help, "train --task graph --help"));
    free(help);
    /* a checkpoint for another model is refused */
    snprintf(cmd, sizeof cmd, "%s eval --load %s/m.safetensors --model cnn > /dev/null 2>&1", b, dir);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
    free(ev); free(s0); free(s1); free(csv[0]); free(csv[1]);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* --permute-pixels: a seeded permutation (every position once, the same for a seed), applied to every
 * image and channel alike; a model trained on permuted pixels is evaluated on them by eval and predict
 * (the checkpoint carries the seed): eval reproduces the run's test accuracy, which differs from the
 * unpermuted run's. */
static void test_permute_pixels(void **st)
{
    (void)st;
    int p1[784], p2[784], seen[784] = {0};
    al_pixel_permutation(784, 7, p1); al_pixel_permutation(784, 7, p2);
    assert_memory_equal(p1, p2, sizeof p1);
    for (int i = 0; i < 784; i++) seen[p1[i]]++;
    for (int i = 0; i < 784; i++) assert_int_equal(seen[i], 1);
    al_pixel_permutation(784, 8, p2);
    assert_true(memcmp(p1, p2, sizeof p1) != 0);
    int moved = 0;
    for (int i = 0; i < 784; i++) moved += p1[i] != i;
    assert_true(moved > 700);
    al_images im = {0};
    im.n = 2; im.c = 2; im.h = 28; im.w = 28; im.classes = 1;
    im.pix = malloc(2 * 2 * 784);
    for (int k = 0; k < 4 * 784; k++) im.pix[k] = (uint8_t)(k * 7 + k / 784);
    uint8_t *orig = malloc(4 * 784);
    memcpy(orig, im.pix, 4 * 784);
    al_error e = {{0}};
    assert_int_equal(al_images_permute(&im, p1, &e), AL_OK);
    for (int k = 0; k < 4; k++)
        for (int q = 0; q < 784; q++) assert_int_equal(im.pix[k * 784 + q], orig[k * 784 + p1[q]]);
    free(orig); free(im.pix);

    const char *b = tu_attnlab_bin();
    char dir[] = "/tmp/attnlab_test_permute_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cmd[2048];
    double acc[2];
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "%s train --model cnn --train-size 300 --test-size 300 --epochs 2 --seed 2 --threads 1 --quiet "
                 "%s --save %s/m%d.st > %s/o%d.txt 2>&1", b, k ? "--permute-pixels 5" : "", dir, k, dir, k);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "%s/o%d.txt", dir, k);
        char *out = tu_slurp(cmd), *ta = out ? strstr(out, "test_acc ") : NULL;
        assert_non_null(ta);
        acc[k] = strtod(ta + 9, NULL);
        snprintf(cmd, sizeof cmd, "%s eval --load %s/m%d.st --test-size 300 --threads 1 --quiet > %s/e%d.txt 2>&1", b, dir, k, dir, k);
        assert_int_equal(system(cmd), 0);
        snprintf(cmd, sizeof cmd, "%s/e%d.txt", dir, k);
        char *ev = tu_slurp(cmd), *ea = ev ? strstr(ev, "test_acc ") : NULL;
        assert_non_null(ea);
        if (!(fabs(strtod(ea + 9, NULL) - acc[k]) < 1e-4)) fail_msg("eval of the %s model: %s vs %.4f", k ? "permuted" : "plain", ea, acc[k]);
        free(out); free(ev);
    }
    assert_true(acc[0] != acc[1]);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* With a validation set: the model of the best validation accuracy (the earliest on ties) is kept and
 * is in m at the end, reported once more (kind 2) with that epoch's figures; patience 1 stops training
 * at the first epoch that does not improve on it; patience 0 runs every epoch. */
typedef struct vrec { int n, kept, kept_epoch; double va[32], te[32], kept_val, kept_test; } vrec;
static int vrecord(void *ud, const al_train_progress *p)
{
    vrec *r = ud;
    if (p->kind == 1 && r->n < 32) { r->va[r->n] = p->val_acc; r->te[r->n] = p->test_acc; r->n++; }
    if (p->kind == 2) { r->kept++; r->kept_epoch = p->epoch; r->kept_val = p->val_acc; r->kept_test = p->test_acc; }
    return 0;
}
static void test_validation_keeps_the_best_and_stops_early(void **st)
{
    (void)st;
    al_images tr = subset(&fm.train, 600, 1), va = subset(&fm.test, 200, 3), te = subset(&fm.test, 500, 0);
    al_error e = {{0}};
    for (int patience = 1; patience >= 0; patience--) {
        al_model m; tiny_sa(&m, 1);
        al_train_config tc; default_tc(&tc, &tr, 12, 1e-2f);
        vrec r = {0};
        if (al_model_train_val(&m, &tr, &va, &te, &tc, patience, vrecord, &r, &e) != AL_OK) fail_msg("train: %s", e.msg);
        int best = 0;
        for (int k = 1; k < r.n; k++) if (r.va[k] > r.va[best]) best = k;
        print_message("patience %d: %d epochs, kept epoch %d (val %.3f, test %.4f)\n", patience, r.n, r.kept_epoch, r.kept_val,
                      r.kept_test);
        assert_int_equal(r.kept, 1);
        assert_int_equal(r.kept_epoch, best + 1);
        assert_true(r.kept_val == r.va[best] && r.kept_test == r.te[best]);   /* the same weights, the same bits */
        if (patience == 1) {
            assert_true(r.n < 12);                                             /* it stopped early */
            assert_int_equal(r.n, best + 2);
        } else assert_int_equal(r.n, 12);
        double acc;
        assert_int_equal(al_model_evaluate(&m, &te, tc.mean, tc.std, 100, &acc, NULL, &e), AL_OK);
        assert_true(acc == r.kept_test);                                       /* the kept model is in m */
        al_model_free(&m);
    }
    al_model m; tiny_sa(&m, 1);
    al_train_config tc; default_tc(&tc, &tr, 1, 1e-2f);
    al_images empty = va; empty.n = 0;
    assert_int_equal(al_model_train_val(&m, &tr, &empty, &te, &tc, 0, NULL, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "the validation set is empty"));
    al_model_free(&m);
    free_subset(&tr); free_subset(&va); free_subset(&te);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_learns_fashion_mnist_subset),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_data_parallel_same_bits_for_any_rank_count),
        cmocka_unit_test(test_nan_loss_is_an_error),
        cmocka_unit_test(test_shape_and_label_checks),
        cmocka_unit_test(test_cli_csv_deterministic_and_eval),
        cmocka_unit_test(test_permute_pixels),
        cmocka_unit_test(test_validation_keeps_the_best_and_stops_early),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
