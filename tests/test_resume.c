/* test_resume.c — resumable training and divergence detection: a training state survives its file
 * bit for bit (optimiser moments and step, RNG streams, data order, early-stopping record); image,
 * sequence and graph training stopped after an epoch and continued from the saved state end with the
 * uninterrupted run's records and weights, whatever the thread counts (molecules too: the kept
 * best-validation model and its record); the divergence detector; the
 * CSV's per-run row count and cut; through bin/attnlab: a diverging run exits 1 with one line and
 * keeps the last state, --resume refuses another configuration, and tests/resume_kill.sh (kill -9 at
 * five random moments, resume each time). */
#include "testutil.h"
#include "attnlab/optim.h"
#include "attnlab/gnn.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/molnet.h"
#include "attnlab/seq.h"
#include "attnlab/train.h"
#include "attnlab/trainstate.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_test_resume_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return tu_system(cmd) == 0 ? 0 : -1;
}
static const char *path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); return buf; }

/* ---------------- the state file ---------------- */
static void test_state_round_trip(void **st)
{
    (void)st;
    al_params p; al_params_init(&p);
    al_params_add(&p, "w", 2, (int[]){3, 5}, (al_init){AL_INIT_UNIFORM, 1.f});
    al_params_add(&p, "b", 1, (int[]){5}, (al_init){AL_INIT_ZEROS, 0.f});
    al_rng r; al_rng_seed(&r, 7, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
    al_optim o;
    assert_int_equal(al_optim_init(&o, AL_ADAMW, p.total, 3e-3f, &e), AL_OK);
    for (int k = 0; k < 3; k++) { tu_fill(p.grad, p.total, 11 + k, -1, 1); al_optim_step(&o, &p); }
    al_train_state s;
    memset(&s, 0, sizeof s);
    s.epoch = 60; s.steps = 123456789012LL;          /* at most 60 epochs of INT_MAX steps: a state can hold it */ s.opt = o; s.div.min = 0.1234567890123;
    al_rng_seed(&s.shuffle, 5, AL_RNG_SHUFFLE); al_rng_seed(&s.dropout, 5, AL_RNG_DROPOUT);
    for (int k = 0; k < 17; k++) { al_rng_u64(&s.shuffle); al_rng_u64(&s.dropout); }
    int order[9];
    for (int i = 0; i < 9; i++) order[i] = i;
    al_rng_shuffle(&s.shuffle, order, 9);
    s.order = order; s.norder = 9;
    float best[20];
    tu_fill(best, 20, 3, -2, 2);
    s.best = best; s.best_epoch = 3; s.bad = 1; s.acc_max = 0.8125; s.loss_min = 1.0 / 3; s.step_seconds = 0.25;
    char f[128];
    const char *kv[] = {"note", "kept"};
    if (al_train_state_save(path_in(f, sizeof f, "s.train"), &p, &s, kv, 1, &e) != AL_OK) fail_msg("%s", e.msg);

    al_params q; al_params_init(&q);   /* the same parameters, other values */
    al_params_add(&q, "w", 2, (int[]){3, 5}, (al_init){AL_INIT_ZEROS, 0.f});
    al_params_add(&q, "b", 1, (int[]){5}, (al_init){AL_INIT_ONES, 0.f});
    assert_int_equal(al_params_finalize(&q, &r, &e), AL_OK);
    al_train_state t;
    char *meta = NULL;
    if (al_train_state_load(f, &q, &t, &meta, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_memory_equal(q.data, p.data, (size_t)p.total * sizeof(float));
    assert_int_equal(t.epoch, 60); assert_int_equal(t.finished, 0);
    assert_true(t.steps == 123456789012LL);
    assert_int_equal(t.opt.kind, AL_ADAMW); assert_true(t.opt.step == 3); assert_true(t.opt.n == p.total);
    assert_true(t.opt.lr == o.lr && t.opt.beta1 == o.beta1 && t.opt.beta2 == o.beta2 && t.opt.eps == o.eps &&
                t.opt.weight_decay == o.weight_decay);
    assert_memory_equal(t.opt.m, o.m, (size_t)p.total * sizeof(float));
    assert_memory_equal(t.opt.v, o.v, (size_t)p.total * sizeof(float));
    assert_memory_equal(&t.shuffle, &s.shuffle, sizeof s.shuffle);
    assert_memory_equal(&t.dropout, &s.dropout, sizeof s.dropout);
    for (int k = 0; k < 5; k++) assert_true(al_rng_u64(&t.shuffle) == al_rng_u64(&s.shuffle));   /* the streams go on alike */
    assert_int_equal(t.norder, 9);
    assert_memory_equal(t.order, order, sizeof order);
    assert_true(t.div.min == s.div.min);
    assert_non_null(t.best);
    assert_memory_equal(t.best, best, sizeof best);
    assert_int_equal(t.best_epoch, 3); assert_int_equal(t.bad, 1);
    assert_true(t.acc_max == s.acc_max && t.loss_min == s.loss_min && t.step_seconds == s.step_seconds);
    char *note = al_meta_get(meta, "note");
    assert_string_equal(note, "kept");
    free(note); free(meta);
    /* a continued optimiser takes the same step as the original */
    al_optim o2 = t.opt;
    tu_fill(p.grad, p.total, 99, -1, 1); memcpy(q.grad, p.grad, (size_t)p.total * sizeof(float));
    al_optim_step(&o, &p); al_optim_step(&o2, &q);
    assert_memory_equal(q.data, p.data, (size_t)p.total * sizeof(float));
    al_train_state_free(&t);

    /* a plain checkpoint, or a state for other parameters, is refused */
    assert_int_equal(al_safetensors_save(path_in(f, sizeof f, "plain.safetensors"), &p, kv, 1, &e), AL_OK);
    e.msg[0] = 0;
    assert_int_equal(al_train_state_load(f, &q, &t, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "not a training state"));
    al_params z; al_params_init(&z);
    al_params_add(&z, "w", 2, (int[]){3, 6}, (al_init){AL_INIT_ZEROS, 0.f});
    assert_int_equal(al_params_finalize(&z, &r, &e), AL_OK);
    e.msg[0] = 0;
    assert_int_equal(al_train_state_load(path_in(f, sizeof f, "s.train"), &z, &t, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "expected"));
    al_params_free(&z);
    al_optim_free(&o);
    al_params_free(&p); al_params_free(&q);
}

/* ---------------- the divergence detector ---------------- */
static void test_diverge_detector(void **st)
{
    (void)st;
    al_diverge d; al_diverge_init(&d);
    al_error e = {{0}};
    const double fine[] = {2.3, 1.5, 0.9, 40.0, 0.2, 150.0};   /* up to 1000x the minimum is noise */
    for (int i = 0; i < 6; i++) assert_int_equal(al_diverge_loss(&d, fine[i], 1, i + 1, &e), AL_OK);
    assert_true(d.min == 0.2);
    assert_int_equal(al_diverge_loss(&d, 201.0, 2, 7, &e), AL_ERR);
    if (!strstr(e.msg, "epoch 2 step 7") || !strstr(e.msg, "201") || !strstr(e.msg, "0.2") || !strstr(e.msg, "lower --lr"))
        fail_msg("message: %s", e.msg);
    /* the minimum counts as at least 0.01: a loss near zero does not make 5 a divergence */
    al_diverge_init(&d);
    assert_int_equal(al_diverge_loss(&d, 1e-6, 1, 1, &e), AL_OK);
    assert_int_equal(al_diverge_loss(&d, 5.0, 1, 2, &e), AL_OK);
    e.msg[0] = 0;
    assert_int_equal(al_diverge_loss(&d, 11.0, 1, 3, &e), AL_ERR);
    e.msg[0] = 0;
    assert_int_equal(al_diverge_loss(&d, NAN, 3, 1, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "NaN"));
    /* weights */
    al_params p; al_params_init(&p);
    al_params_add(&p, "a", 1, (int[]){4}, (al_init){AL_INIT_ONES, 0.f});
    al_params_add(&p, "b", 2, (int[]){2, 3}, (al_init){AL_INIT_ONES, 0.f});
    al_rng r; al_rng_seed(&r, 1, AL_RNG_INIT);
    assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
    assert_int_equal(al_diverge_weights(&d, &p, 1.0, 1, 1, &e), AL_OK);
    p.data[4 + 5] = INFINITY;
    e.msg[0] = 0;
    assert_int_equal(al_diverge_weights(&d, &p, 1.0, 4, 2, &e), AL_ERR);
    if (!strstr(e.msg, "b[5] is inf") || !strstr(e.msg, "epoch 4 step 2")) fail_msg("message: %s", e.msg);
    /* after an optimiser step: its own flag says whether to look; SGD and AdamW, a NaN gradient or none */
    for (int kind = 0; kind < 2; kind++) {
        for (int i = 0; i < 10; i++) { p.data[i] = 1.f; p.grad[i] = 0.5f; }
        al_optim o;
        assert_int_equal(al_optim_init(&o, kind ? AL_ADAMW : AL_SGD, p.total, 0.1f, &e), AL_OK);
        al_optim_step(&o, &p);
        assert_int_equal(o.nonfinite, 0);
        assert_int_equal(al_diverge_step(&d, &o, &p, 1.0, 1, 1, &e), AL_OK);
        p.grad[2] = NAN;
        al_optim_step(&o, &p);
        assert_int_equal(o.nonfinite, 1);
        e.msg[0] = 0;
        assert_int_equal(al_diverge_step(&d, &o, &p, 1.0, 2, 7, &e), AL_ERR);
        if (!strstr(e.msg, "a[2] is nan") || !strstr(e.msg, "epoch 2 step 7")) fail_msg("message: %s", e.msg);
        p.grad[2] = 0.5f; p.data[2] = 1.f;
        al_optim_free(&o);
    }
    al_params_free(&p);
}

/* ---------------- the CSV's rows of one run ---------------- */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_csv_run_rows(void **st)
{
    (void)st;
    char f[128];
    path_in(f, sizeof f, "rows.csv");
    const char *A1 = "aaaa,image,d,cnn,10,1,1,1,1,,1,1,1,5,lr=1,\n", *A2 = "aaaa,image,d,cnn,10,1,2,1,1,,1,1,1,5,lr=1,done\n";
    const char *A3 = "aaaa,image,d,cnn,10,1,1,1,1,,1,1,1,5,lr=1,\n", *B1 = "bbbb,image,d,sa,10,1,1,1,1,,1,1,1,5,lr=1,\n";
    char text[2048];
    snprintf(text, sizeof text, "%s\n%s%s%s%s%s", AL_CSV_HEADER, A1, A2, B1, A3, A3);
    write_text(f, text);
    int n, nd, removed;
    al_error e = {{0}};
    assert_int_equal(al_csv_run_rows(f, "aaaa", &n, &nd, &e), AL_OK);
    assert_int_equal(n, 4); assert_int_equal(nd, 2);
    assert_int_equal(al_csv_run_rows(f, "bbbb", &n, &nd, &e), AL_OK);
    assert_int_equal(n, 1); assert_int_equal(nd, 0);
    assert_int_equal(al_csv_run_rows(f, "cccc", &n, &nd, &e), AL_OK);
    assert_int_equal(n, 0);
    /* the run's last rows are the tail: cut short (a torn line after them goes too) */
    FILE *fp = fopen(f, "a"); fputs("aaaa,ima", fp); fclose(fp);
    assert_int_equal(al_csv_keep_run_rows(f, "aaaa", 3, &removed, &e), AL_OK);
    assert_int_equal(removed, 1);
    char *got = tu_slurp(f), want[2048];
    snprintf(want, sizeof want, "%s\n%s%s%s%s", AL_CSV_HEADER, A1, A2, B1, A3);
    assert_string_equal(got, want);
    free(got);
    /* another run's row follows: a rewrite without the run's later rows */
    assert_int_equal(al_csv_keep_run_rows(f, "aaaa", 1, &removed, &e), AL_OK);
    assert_int_equal(removed, 2);
    got = tu_slurp(f);
    snprintf(want, sizeof want, "%s\n%s%s", AL_CSV_HEADER, A1, B1);
    assert_string_equal(got, want);
    free(got);
    /* nothing to remove, and no file at all */
    assert_int_equal(al_csv_keep_run_rows(f, "aaaa", 5, &removed, &e), AL_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(al_csv_keep_run_rows(path_in(f, sizeof f, "none.csv"), "aaaa", 0, &removed, &e), AL_OK);
    assert_int_equal(al_csv_run_rows(f, "aaaa", &n, &nd, &e), AL_OK);
    assert_int_equal(n, 0);
    assert_int_equal(access(f, F_OK), -1);
}

/* ---------------- training stopped and continued: the library loops ---------------- */
/* A save callback: writes each state to path; asks to stop after epoch stop_after. */
typedef struct saver { const char *path; const al_params *p; int stop_after, saves; } saver;
static int save_to_file(void *ud, const al_train_state *s)
{
    saver *v = ud;
    al_error e = {{0}};
    if (al_train_state_save(v->path, v->p, s, NULL, 0, &e) != AL_OK) fail_msg("%s", e.msg);
    v->saves++;
    return s->epoch == v->stop_after;
}

typedef struct rec { int n; double v[3][64]; } rec;
static void rec_put(rec *r, double a, double b, double c)
{
    if (r->n < 64) { r->v[0][r->n] = a; r->v[1][r->n] = b; r->v[2][r->n] = c; r->n++; }
}
static int rec_image(void *ud, const al_train_progress *p) { if (p->kind) rec_put(ud, p->loss, p->train_acc, p->test_acc); return 0; }
static int rec_seq(void *ud, const al_seq_progress *p) { if (p->kind) rec_put(ud, p->loss, p->train_acc, p->test_acc); return 0; }
static int rec_graph(const al_gnn_epoch *e, void *ud) { rec_put(ud, e->train_loss, e->val_loss, e->test_acc); return 0; }
static int rec_mol(const al_mol_epoch *e, void *ud) { rec_put(ud, e->train_loss, e->val.rmse, e->test.rmse); return 0; }

/* The records of the continued run are the uninterrupted run's from epoch k + 1 on. */
static void assert_tail_equal(const rec *full, const rec *second, int k)
{
    assert_int_equal(second->n, full->n - k);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < second->n; i++)
            if (memcmp(&full->v[j][k + i], &second->v[j][i], sizeof(double)))
                fail_msg("record %d of epoch %d: %.17g uninterrupted, %.17g continued", j, k + 1 + i, full->v[j][k + i], second->v[j][i]);
}

static void tiny_cnn(al_model *m, uint64_t seed)
{
    al_model_config cfg; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "cnn", 1, 28, 28, 10, &e), AL_OK);
    if (al_model_init(m, &cfg, seed, &e) != AL_OK) fail_msg("%s", e.msg);
}

/* Stopped after epoch 2 and continued: the same records and weights; with a validation set (val) too,
 * where the state carries the kept model and the early-stopping record. */
static void image_stop_and_continue(al_image_split *fm, const al_images *val)
{
    al_error e = {{0}};
    int threads = al_threads();
    al_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = 4; tc.batch = 32; tc.lr = 2e-3f; tc.seed = 5;
    assert_int_equal(al_images_stats(&fm->train, NULL, 0, tc.mean, tc.std, &e), AL_OK);
    al_set_threads(1);
    al_model a; tiny_cnn(&a, 5);
    rec full = {0};
    if (al_model_train_val(&a, &fm->train, val, &fm->test, &tc, 0, rec_image, &full, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(full.n, val ? 5 : 4);              /* with val: the kept model's record last */
    /* again, stopped after epoch 2 (states every epoch), then continued on 2 threads from the file */
    char f[128];
    al_model b; tiny_cnn(&b, 5);
    saver sv = {path_in(f, sizeof f, "image.train"), &b.params, 2, 0};
    al_resume rs = {1, save_to_file, &sv, NULL, NULL, NULL};
    tc.resume = &rs;
    rec first = {0};
    assert_int_equal(al_model_train_val(&b, &fm->train, val, &fm->test, &tc, 0, rec_image, &first, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "after epoch 2"));
    assert_int_equal(sv.saves, 3);                      /* epochs 0, 1, 2 */
    al_model c; tiny_cnn(&c, 99);                       /* other initial weights: the state's replace them */
    al_train_state s;
    if (al_train_state_load(f, &c.params, &s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    al_model_refresh(&c);
    assert_int_equal(s.epoch, 2);
    assert_true(val ? s.best != NULL : s.best == NULL);
    al_set_threads(2);
    rs.from = &s; rs.every = 0;
    rec second = {0};
    e.msg[0] = 0;
    if (al_model_train_val(&c, &fm->train, val, &fm->test, &tc, 0, rec_image, &second, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_tail_equal(&full, &second, 2);
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    al_train_state_free(&s);
    al_model_free(&a); al_model_free(&b); al_model_free(&c);
    al_set_threads(threads);
}

static void test_image_stop_and_continue(void **st)
{
    (void)st;
    al_image_split fm; al_error e = {{0}};
    if (al_fashion_mnist_load(NULL, &fm, &e) != AL_OK) { print_message("  no Fashion-MNIST: %s\n", e.msg); skip(); }
    int keep[160];
    assert_int_equal(al_images_subset(&fm.train, 160, 1, keep, &e), AL_OK);
    for (int i = 0; i < 160; i++) { memmove(fm.train.pix + (size_t)i * 784, fm.train.pix + (size_t)keep[i] * 784, 784); fm.train.labels[i] = fm.train.labels[keep[i]]; }
    fm.train.n = 160; fm.test.n = 100;
    image_stop_and_continue(&fm, NULL);
    al_images val = fm.test;                            /* 60 test images after the 100 of the test set */
    val.pix += 100 * 784; val.labels += 100; val.n = 60; val.class_names = NULL;
    image_stop_and_continue(&fm, &val);
    al_image_split_free(&fm);
}

/* Sentences of 2..9 tokens; a token's tag is its word's class, shifted after an "article" (word 2). */
static void synth_tokens(al_seq_data *d, int nsent, uint64_t seed)
{
    al_rng g; al_rng_seed(&g, seed, AL_RNG_DATA);
    memset(d, 0, sizeof *d);
    d->nsent = nsent;
    d->start = malloc((size_t)(nsent + 1) * sizeof(int));
    int cap = nsent * 9;
    d->word = malloc((size_t)cap * sizeof(int)); d->suffix = malloc((size_t)cap * sizeof(int));
    d->tag = malloc((size_t)cap * sizeof(int)); d->shape = calloc((size_t)cap * 4, sizeof(float));
    d->unseen = calloc((size_t)cap, 1);
    assert_true(d->start && d->word && d->suffix && d->tag && d->shape && d->unseen);
    int t = 0;
    for (int s = 0; s < nsent; s++) {
        d->start[s] = t;
        int L = 2 + (int)al_rng_below(&g, 8);
        for (int i = 0; i < L; i++, t++) {
            d->word[t] = 2 + (int)al_rng_below(&g, 30); d->suffix[t] = 1 + d->word[t] % 5;
            d->tag[t] = (d->word[t] % 6) + (i > 0 && d->word[t - 1] == 2 ? 6 : 0);
        }
        if (L > d->max_len) d->max_len = L;
    }
    d->start[nsent] = t; d->ntok = t;
}

static void tiny_seq(al_seq_model *m, uint64_t seed)
{
    al_seq_config cfg; al_error e = {{0}};
    assert_int_equal(al_seq_config_default(&cfg, "sa", 32, 6, 12, &e), AL_OK);
    cfg.dim = 16; cfg.hidden = 32; cfg.heads = 2; cfg.depth = 1; cfg.word_dim = 16; cfg.suffix_dim = 4;
    if (al_seq_init(m, &cfg, seed, &e) != AL_OK) fail_msg("%s", e.msg);
}

static void test_sequence_stop_and_continue(void **st)
{
    (void)st;
    al_seq_data tr, te;
    synth_tokens(&tr, 120, 1); synth_tokens(&te, 40, 2);
    int threads = al_threads();
    al_seq_train_config tc = {0};
    tc.epochs = 4; tc.batch = 16; tc.lr = 3e-3f; tc.weight_decay = 0.01f; tc.seed = 3;
    al_error e = {{0}};
    al_set_threads(2);
    al_seq_model a; tiny_seq(&a, 3);
    rec full = {0};
    if (al_seq_train(&a, &tr, &te, &tc, rec_seq, &full, &e) != AL_OK) fail_msg("%s", e.msg);
    char f[128];
    al_seq_model b; tiny_seq(&b, 3);
    saver sv = {path_in(f, sizeof f, "seq.train"), &b.params, 1, 0};
    al_resume rs = {1, save_to_file, &sv, NULL, NULL, NULL};
    tc.resume = &rs;
    rec first = {0};
    assert_int_equal(al_seq_train(&b, &tr, &te, &tc, rec_seq, &first, &e), AL_ERR);
    al_seq_model c; tiny_seq(&c, 42);
    al_train_state s;
    if (al_train_state_load(f, &c.params, &s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    al_set_threads(1);
    rs.from = &s; rs.every = 0;
    rec second = {0};
    e.msg[0] = 0;
    if (al_seq_train(&c, &tr, &te, &tc, rec_seq, &second, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_tail_equal(&full, &second, 1);
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    al_train_state_free(&s);
    al_seq_free(&a); al_seq_free(&b); al_seq_free(&c);
    al_seq_data_free(&tr); al_seq_data_free(&te);
    al_set_threads(threads);
}

/* The state in f (path_in's buffer) into s and its weights into p; rs continues from it on `threads`
 * threads, writing every state to `next` (then f names it) without stopping. */
static void continue_from(al_train_state *s, char *f, al_params *p, al_resume *rs, saver *sv, const char *next, int threads)
{
    al_error e = {{0}};
    if (al_train_state_load(f, p, s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    al_set_threads(threads);
    rs->from = s; rs->every = 1; sv->path = path_in(f, 128, next); sv->p = p; sv->stop_after = -1;
}

/* The last state written (path f) replaces *s; it is a finished one, and rs continues from it without
 * writing states. */
static void continue_finished(al_train_state *s, const char *f, al_params *p, al_resume *rs)
{
    al_error e = {{0}};
    al_train_state_free(s);
    if (al_train_state_load(f, p, s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(s->finished, 1);
    rs->from = s; rs->every = 0;
}

/* GAT on Cora with dropout (the context's stream) and early stopping (the record and the kept
 * weights): stopped after epoch 6, continued; and a finished state only reports the kept model. */
static void test_graph_stop_and_continue(void **st)
{
    (void)st;
    char gdir[4096]; al_error e = {{0}};
    if (al_graph_resolve("cora", NULL, gdir, sizeof gdir, &e)) fail_msg("%s", e.msg);
    al_graph g;
    if (al_graph_load(&g, gdir, 1, &e)) fail_msg("%s", e.msg);
    al_gnn_config cfg; al_gnn_config_default(&cfg, "gat", NULL);
    cfg.epochs = 14; cfg.patience = 3; cfg.hidden = 4; cfg.heads = 2;
    int threads = al_threads();
    al_set_threads(1);
    al_gnn a; assert_int_equal(al_gnn_init(&a, &cfg, &g, 2, &e), AL_OK);
    rec full = {0};
    al_gnn_result ra, rc;
    if (al_gnn_train(&a, &g, 2, rec_graph, &full, &ra, &e)) fail_msg("%s", e.msg);
    char f[128];
    al_gnn b; assert_int_equal(al_gnn_init(&b, &cfg, &g, 2, &e), AL_OK);
    saver sv = {path_in(f, sizeof f, "graph.train"), &b.params, 6, 0};
    al_resume rs = {2, save_to_file, &sv, NULL, NULL, NULL};
    rec first = {0};
    assert_int_equal(al_gnn_train_resumable(&b, &g, 2, &rs, rec_graph, &first, &rc, &e), AL_ERR);
    al_gnn c; assert_int_equal(al_gnn_init(&c, &cfg, &g, 77, &e), AL_OK);
    al_train_state s;
    continue_from(&s, f, &c.params, &rs, &sv, "graph2.train", 2);
    rec second = {0};
    if (al_gnn_train_resumable(&c, &g, 2, &rs, rec_graph, &second, &rc, &e)) fail_msg("%s", e.msg);
    assert_tail_equal(&full, &second, 6);
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    assert_int_equal(rc.best_epoch, ra.best_epoch); assert_int_equal(rc.epochs_run, ra.epochs_run);
    assert_true(rc.test_acc == ra.test_acc);
    /* the last state written is a finished one: continuing from it trains nothing */
    continue_finished(&s, f, &c.params, &rs);
    rec third = {0};
    if (al_gnn_train_resumable(&c, &g, 2, &rs, rec_graph, &third, &rc, &e)) fail_msg("%s", e.msg);
    assert_int_equal(third.n, 1);                        /* the kept model's record only */
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    assert_true(rc.test_acc == ra.test_acc && rc.epochs_run == ra.epochs_run);
    al_train_state_free(&s);
    al_gnn_free(&a); al_gnn_free(&b); al_gnn_free(&c);
    al_graph_free(&g);
    al_set_threads(threads);
}

/* A GAT on a tenth of ESOL's training molecules, dropout on (the context's stream) and a learning rate
 * at which validation RMSE goes up and down (the kept model is not the last one): stopped after epoch
 * 3, continued on another thread count from the file; then a finished state only reports the kept
 * model. */
static void mol_model(al_molnet *m, const al_molset *ms, uint64_t seed)
{
    al_molnet_config cfg; al_error e = {{0}};
    al_molnet_config_default(&cfg, "gat", NULL);
    cfg.dim = 16; cfg.heads = 2; cfg.hidden = 16; cfg.epochs = 7; cfg.dropout = 0.2f; cfg.lr = 0.02f; cfg.batch = 16;
    if (al_molnet_init(m, &cfg, ms, seed, &e) != AL_OK) fail_msg("%s", e.msg);
}

static void test_molecule_stop_and_continue(void **st)
{
    (void)st;
    char mdir[4096]; al_error e = {{0}};
    al_molset ms;
    if (al_molset_resolve("esol", mdir, sizeof mdir, &e) || al_molset_load(&ms, mdir, &e)) fail_msg("%s", e.msg);
    assert_int_equal(al_molset_train_frac(&ms, 0.1, 4, &e), AL_OK);
    int threads = al_threads();
    al_set_threads(2);
    al_molnet a; mol_model(&a, &ms, 4);
    rec full = {0};
    al_mol_result ra, rc;
    if (al_molnet_train(&a, &ms, 4, rec_mol, &full, &ra, &e)) fail_msg("%s", e.msg);
    assert_int_equal(full.n, 7 + 1);
    char f[128];
    al_molnet b; mol_model(&b, &ms, 4);
    saver sv = {path_in(f, sizeof f, "mol.train"), &b.params, 3, 0};
    al_resume rs = {1, save_to_file, &sv, NULL, NULL, NULL};
    rec first = {0};
    assert_int_equal(al_molnet_train_resumable(&b, &ms, 4, &rs, rec_mol, &first, &rc, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "after epoch 3"));
    assert_int_equal(sv.saves, 4);                      /* epochs 0, 1, 2, 3 */
    al_molnet c; mol_model(&c, &ms, 77);                /* other weights: the state's replace them */
    al_train_state s;
    continue_from(&s, f, &c.params, &rs, &sv, "mol2.train", 1);
    assert_non_null(s.best); assert_int_equal(s.norder, ms.ntrain);
    rec second = {0};
    if (al_molnet_train_resumable(&c, &ms, 4, &rs, rec_mol, &second, &rc, &e)) fail_msg("%s", e.msg);
    assert_tail_equal(&full, &second, 3);
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    assert_int_equal(rc.best_epoch, ra.best_epoch); assert_int_equal(rc.epochs_run, 7);
    assert_true(rc.test.rmse == ra.test.rmse && rc.val.rmse == ra.val.rmse && rc.train.mae == ra.train.mae);
    assert_true(ra.best_epoch < 7);                     /* the kept model is an earlier one */
    /* the kept model, evaluated again at the end, has its epoch's figures */
    assert_true(ra.test.rmse == full.v[2][ra.best_epoch - 1] && ra.val.rmse == full.v[1][ra.best_epoch - 1]);
    continue_finished(&s, f, &c.params, &rs);
    rec third = {0};
    if (al_molnet_train_resumable(&c, &ms, 4, &rs, rec_mol, &third, &rc, &e)) fail_msg("%s", e.msg);
    assert_int_equal(third.n, 1);                        /* the kept model's record only */
    assert_memory_equal(c.params.data, a.params.data, (size_t)a.params.total * sizeof(float));
    assert_true(rc.test.rmse == ra.test.rmse && rc.epochs_run == 7 && rc.best_epoch == ra.best_epoch);
    al_train_state_free(&s);
    /* a learning rate far too high: one message naming the epoch and step */
    al_molnet d; mol_model(&d, &ms, 4);
    d.cfg.lr = 1e3f;
    e.msg[0] = 0;
    assert_int_equal(al_molnet_train(&d, &ms, 4, NULL, NULL, &rc, &e), AL_ERR);
    if (!strstr(e.msg, "training diverged at epoch") || !strstr(e.msg, "lower --lr")) fail_msg("message: %s", e.msg);
    al_molnet_free(&a); al_molnet_free(&b); al_molnet_free(&c); al_molnet_free(&d);
    al_molset_free(&ms);
    al_set_threads(threads);
}

/* ---------------- through bin/attnlab ---------------- */
static int run(const char *args) { return tu_run_cli(dir, args); }
static char *err_text(void) { char p[128]; return tu_slurp(path_in(p, sizeof p, "err.txt")); }
static int one_line(const char *s) { const char *nl = strchr(s, '\n'); return nl && nl[1] == 0; }

/* Diverging training stops with exit 1 and one line (epoch, step, loss, minimum, hint); --save is not
 * written and the last training state is kept. (Before: exit 0 after training to a loss of 1e13.) */
static void test_cli_divergence(void **st)
{
    (void)st;
    char cmd[1024], p[128];
    snprintf(cmd, sizeof cmd, "train --model cnn --train-size 100 --test-size 100 --epochs 2 --lr 1000 --threads 1 --quiet "
             "--save %s/div.safetensors --checkpoint-every 1", dir);
    assert_int_equal(run(cmd), 1);
    char *m = err_text();
    if (!strstr(m, "training diverged at epoch 1 step") || !strstr(m, "the lowest so far") || !strstr(m, "lower --lr") ||
        !strstr(m, "the training state of epoch 0 in") || !one_line(m))
        fail_msg("stderr: %s", m);
    free(m);
    assert_int_equal(access(path_in(p, sizeof p, "div.safetensors"), F_OK), -1);
    assert_int_equal(access(path_in(p, sizeof p, "div.safetensors.train"), F_OK), 0);
    /* graphs too (full batch: a step per epoch) */
    assert_int_equal(run("train --task graph --model gcn --lr 1000 --epochs 20 --threads 1 --quiet"), 1);
    m = err_text();
    if (!strstr(m, "training diverged at epoch") || !strstr(m, "lower --lr") || !one_line(m)) fail_msg("stderr: %s", m);
    free(m);
    /* molecules: the state of epoch 0 kept, no --save */
    snprintf(cmd, sizeof cmd, "train --task molecule --model gcn --train-frac 0.1 --lr 1000 --epochs 3 --threads 1 --quiet "
             "--save %s/mdiv.safetensors --checkpoint-every 1", dir);
    assert_int_equal(run(cmd), 1);
    m = err_text();
    if (!strstr(m, "training diverged at epoch 1 step") || !strstr(m, "lower --lr") ||
        !strstr(m, "the training state of epoch 0 in") || !one_line(m))
        fail_msg("stderr: %s", m);
    free(m);
    assert_int_equal(access(path_in(p, sizeof p, "mdiv.safetensors"), F_OK), -1);
    assert_int_equal(access(path_in(p, sizeof p, "mdiv.safetensors.train"), F_OK), 0);
}

/* --resume: no state (a fresh start, said), a finished state (nothing trained, the same CSV and
 * weights), a state of another configuration (refused, naming what differs). */
static void test_cli_resume_cases(void **st)
{
    (void)st;
    char base[512], cmd[1024], p[128], q[128];
    snprintf(base, sizeof base, "train --task graph --model gcn --epochs 6 --threads 1 --quiet --csv %s/g.csv --save %s/g.st "
             "--checkpoint-every 2", dir, dir);
    snprintf(cmd, sizeof cmd, "%s --resume", base);
    assert_int_equal(run(cmd), 0);
    char *m = err_text();
    if (!strstr(m, "no training state at") || !strstr(m, "starting from scratch")) fail_msg("stderr: %s", m);
    free(m);
    char *csv1 = tu_slurp(path_in(p, sizeof p, "g.csv")), *w1 = tu_slurp(path_in(q, sizeof q, "g.st"));
    assert_non_null(csv1); assert_non_null(w1);
    assert_int_equal(run(cmd), 0);
    m = err_text();
    if (!strstr(m, "where it had finished")) fail_msg("stderr: %s", m);
    free(m);
    char *csv2 = tu_slurp(p), *w2 = tu_slurp(q);
    assert_non_null(csv2);
    size_t rows1 = 0, rows2 = 0;
    for (char *c = csv1; *c; c++) rows1 += *c == '\n';
    for (char *c = csv2; *c; c++) rows2 += *c == '\n';
    assert_int_equal(rows1, rows2);                      /* no row duplicated */
    assert_int_equal(rows1, 1 + 6 + 1);
    assert_string_equal(w1, w2);
    free(csv1); free(csv2); free(w1); free(w2);
    snprintf(cmd, sizeof cmd, "%s --resume --lr 0.02", base);
    assert_int_equal(run(cmd), 1);
    m = err_text();
    if (!strstr(m, "another configuration") || !strstr(m, "lr=0.02 here, lr=0.01 in the state") || !one_line(m))
        fail_msg("stderr: %s", m);
    free(m);
    /* sequences: the same flags; exit 2 for another configuration */
    snprintf(base, sizeof base, "train --task sequence --model fc --train-size 100 --epochs 2 --threads 1 --quiet "
             "--csv %s/s.csv --checkpoint %s/s.train --checkpoint-every 1", dir, dir);
    assert_int_equal(run(base), 0);
    assert_int_equal(access(path_in(p, sizeof p, "s.train"), F_OK), 0);
    snprintf(cmd, sizeof cmd, "%s --resume --batch 8", base);
    assert_int_equal(run(cmd), 2);
    m = err_text();
    if (!strstr(m, "batch=8 here, batch=32 in the state") || !one_line(m)) fail_msg("stderr: %s", m);
    free(m);
    /* molecules: the same flags; another configuration refused (exit 2), a finished state reports again */
    snprintf(base, sizeof base, "train --task molecule --model mlp --train-frac 0.1 --epochs 2 --threads 1 --quiet "
             "--csv %s/m.csv --checkpoint %s/m.train --checkpoint-every 1", dir, dir);
    assert_int_equal(run(base), 0);
    snprintf(cmd, sizeof cmd, "%s --resume", base);
    assert_int_equal(run(cmd), 0);
    m = err_text();
    if (!strstr(m, "where it had finished")) fail_msg("stderr: %s", m);
    free(m);
    snprintf(cmd, sizeof cmd, "%s --resume --hidden 8", base);
    assert_int_equal(run(cmd), 2);
    m = err_text();
    if (!strstr(m, "hidden=8 here, hidden=64 in the state") || !one_line(m)) fail_msg("stderr: %s", m);
    free(m);
    /* --checkpoint alone would do nothing: refused */
    snprintf(cmd, sizeof cmd, "train --task graph --model gcn --epochs 2 --quiet --checkpoint %s/x.train", dir);
    assert_int_equal(run(cmd), 1);
    m = err_text();
    if (!strstr(m, "--checkpoint-every N") || !one_line(m)) fail_msg("stderr: %s", m);
    free(m);
    /* the flags apply to trained models only */
    assert_int_equal(run("train --model conv-attn --init-from x.safetensors --resume"), 2);
    m = err_text();
    assert_non_null(strstr(m, "--resume does not apply to --model conv-attn"));
    free(m);
}

/* tests/resume_kill.sh: kill -9 at five random moments (a smaller training under the sanitizers);
 * env: the script's variables of the run. */
static void kill_nine_five_times(const char *env)
{
    char cmd[4096];
#if defined(__SANITIZE_ADDRESS__)
    const char *quick = "RESUME_KILL_QUICK=1 ";
#else
    const char *quick = "";
#endif
    snprintf(cmd, sizeof cmd, "%s%stests/resume_kill.sh %s > %s/kill.log 2>&1", quick, env, tu_attnlab_bin(), dir);
    int rc = tu_system(cmd);
    char p[128];
    char *log = tu_slurp(path_in(p, sizeof p, "kill.log"));
    for (char *line = log, *nl; line && *line; line = nl + 1) {   /* a line at a time: cmocka's buffer is short */
        nl = strchr(line, '\n');
        if (!nl) { print_message("%s\n", line); break; }
        print_message("%.*s\n", (int)(nl - line), line);
    }
    free(log);
    assert_int_equal(rc, 0);
}
static void test_kill_nine_five_times(void **st) { (void)st; kill_nine_five_times(""); }
/* the molecule task: its CSV (the kept model's row last) and --save file equal the uninterrupted run's */
static void test_molecule_kill_nine_five_times(void **st) { (void)st; kill_nine_five_times("RESUME_KILL_TASK=molecule "); }

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_round_trip),
        cmocka_unit_test(test_diverge_detector),
        cmocka_unit_test(test_csv_run_rows),
        cmocka_unit_test(test_image_stop_and_continue),
        cmocka_unit_test(test_sequence_stop_and_continue),
        cmocka_unit_test(test_graph_stop_and_continue),
        cmocka_unit_test(test_molecule_stop_and_continue),
        cmocka_unit_test(test_cli_divergence),
        cmocka_unit_test(test_cli_resume_cases),
        cmocka_unit_test(test_kill_nine_five_times),
        cmocka_unit_test(test_molecule_kill_nine_five_times),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
