/* test_resume_states.c — training states checked for what they can hold and against the run they
 * continue (trainstate.h). Each case forges a state with the library's own writer (al_train_state_save):
 * a real state of a short sequence run with one field changed. What a state cannot hold (a data order
 * that is not a permutation, a step count of INT64_MAX, a negative second moment, ...) is refused by
 * al_train_state_load, what this run cannot have reached (an epoch beyond its epochs, more steps than its
 * epochs take) by the training loop before its first step; each with one message naming the file and
 * the field, and the exact boundary passes. Through bin/attnlab: such a state is refused (exit 1, one
 * line) and neither the results CSV nor the state is touched. */
#include "testutil.h"
#include "attnlab/gnn.h"
#include "attnlab/graph.h"
#include "attnlab/io.h"
#include "attnlab/seq.h"
#include "attnlab/text.h"
#include "attnlab/train.h"
#include "attnlab/trainstate.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NSENT = 40, BATCH = 16, EPOCHS = 2, SPE = (NSENT + BATCH - 1) / BATCH };   /* 3 steps an epoch */

static al_featurizer g_fz;
static al_seq_data g_tr, g_short;        /* NSENT sentences; NSENT - 1 of them */
static al_seq_config g_cfg;

static int setup(void **st)
{
    (void)st;
    if (tu_tmpdir_make("resume_states")) return -1;
    tu_write_treebank(tu_tpath("train.conllu"), NSENT, 1, 0);
    al_conllu d; al_error e = {{0}};
    if (al_conllu_read(tu_tpath("train.conllu"), NULL, &d, &e) || al_feat_build(&d, &g_fz, &e) ||
        al_seq_data_encode(&g_fz, &d, &g_tr, &e))
        return -1;
    d.nsent--;                                         /* the same sentences but the last */
    d.ntok = d.sent_start[d.nsent];
    al_status st2 = al_seq_data_encode(&g_fz, &d, &g_short, &e);
    d.nsent++; d.ntok = d.sent_start[d.nsent];
    al_conllu_free(&d);
    if (st2 || al_seq_config_default(&g_cfg, "fc", al_feat_nwords(&g_fz), al_feat_nsuffixes(&g_fz), 17, &e)) return -1;
    g_cfg.word_dim = 8; g_cfg.suffix_dim = 4; g_cfg.dim = 8; g_cfg.hidden = 8;
    return 0;
}
static int teardown(void **st)
{
    (void)st;
    al_seq_data_free(&g_tr); al_seq_data_free(&g_short); al_feat_free(&g_fz);
    return tu_tmpdir_remove();
}

static al_seq_train_config train_config(void)
{
    al_seq_train_config tc = {0};
    tc.epochs = EPOCHS; tc.batch = BATCH; tc.lr = 3e-3f; tc.seed = 3;
    return tc;
}

/* The state after epoch 1 of a run, written to state1.train by the library's writer. */
typedef struct saver { const al_params *p; int saves; } saver;
static int save_epoch1(void *ud, const al_train_state *s)
{
    saver *sv = ud;
    al_error e = {{0}};
    if (s->epoch == 1 && al_train_state_save(tu_tpath("state1.train"), sv->p, s, NULL, 0, &e) != AL_OK) return 1;
    sv->saves++;
    return 0;
}

static void model(al_seq_model *m)
{
    al_error e = {{0}};
    if (al_seq_init(m, &g_cfg, 3, &e) != AL_OK) fail_msg("%s", e.msg);
}

static void make_state1(void)
{
    al_seq_model m; model(&m);
    saver sv = {&m.params, 0};
    al_resume rs = {1, save_epoch1, &sv, NULL, NULL, NULL};
    al_seq_train_config tc = train_config();
    tc.resume = &rs;
    al_error e = {{0}};
    if (al_seq_train(&m, &g_tr, NULL, &tc, NULL, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(sv.saves, EPOCHS + 1);
    al_seq_free(&m);
}

/* state1.train with one change (fn) written to name by al_train_state_save; its path. */
typedef void (*forge_fn)(al_train_state *s, void *arg);
static const char *forge(const char *name, forge_fn fn, void *arg)
{
    al_seq_model m; model(&m);
    al_train_state s; al_error e = {{0}};
    if (al_train_state_load(tu_tpath("state1.train"), &m.params, &s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(s.epoch, 1);
    assert_true(s.steps == SPE && s.opt.step == SPE);   /* no batch is skipped: the real state is at the bound */
    fn(&s, arg);
    static char path[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(path[k], sizeof path[k], "%s", tu_tpath("%s", name));
    if (al_train_state_save(path[k], &m.params, &s, NULL, 0, &e) != AL_OK) fail_msg("%s", e.msg);
    al_train_state_free(&s);
    al_seq_free(&m);
    return path[k];
}

/* al_train_state_load refuses the file with a message that starts with its path and holds want. */
static void load_refuses(const char *path, const char *want)
{
    al_seq_model m; model(&m);
    al_train_state s; al_error e = {{0}};
    assert_int_equal(al_train_state_load(path, &m.params, &s, NULL, &e), AL_ERR);
    if (strncmp(e.msg, path, strlen(path)) || !strstr(e.msg, want)) fail_msg("%s: expected '%s: ...%s...'", e.msg, path, want);
    al_seq_free(&m);
}

static int g_resumed;
static int count_resumed(void *ud, const al_train_state *s) { (void)ud; (void)s; g_resumed++; return 0; }

/* The file loads, and training from it on data tr returns AL_ERR with a message that starts with its
 * path and holds want (want NULL: training runs, AL_OK); the resumed hook runs only when it does. */
static void resume_gives(const char *path, const al_seq_data *tr, const char *want)
{
    al_seq_model m; model(&m);
    al_train_state s; al_error e = {{0}};
    if (al_train_state_load(path, &m.params, &s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    al_resume rs = {0, NULL, NULL, &s, path, count_resumed};
    al_seq_train_config tc = train_config();
    tc.resume = &rs;
    g_resumed = 0;
    al_status st = al_seq_train(&m, tr, NULL, &tc, NULL, NULL, &e);
    if (!want) {
        if (st != AL_OK) fail_msg("%s: %s", path, e.msg);
        assert_int_equal(g_resumed, 1);
    } else {
        assert_int_equal(st, AL_ERR);
        if (strncmp(e.msg, path, strlen(path)) || !strstr(e.msg, want)) fail_msg("%s: expected '%s: ...%s...'", e.msg, path, want);
        assert_int_equal(g_resumed, 0);
    }
    al_train_state_free(&s);
    al_seq_free(&m);
}

static void set_epoch(al_train_state *s, void *a) { s->epoch = *(int *)a; }
static void set_steps(al_train_state *s, void *a) { s->steps = *(int64_t *)a; }
static void set_opt_step(al_train_state *s, void *a) { s->opt.step = *(int64_t *)a; }
static void dup_order(al_train_state *s, void *a) { (void)a; s->order[5] = s->order[2]; }
static void neg_v(al_train_state *s, void *a) { (void)a; s->opt.v[7] = -1.f; }
static void nan_m(al_train_state *s, void *a) { (void)a; s->opt.m[0] = NAN; }
static void zero_shuffle(al_train_state *s, void *a) { (void)a; memset(&s->shuffle, 0, sizeof s->shuffle); }
static void nan_min(al_train_state *s, void *a) { (void)a; s->div.min = NAN; }
static void beta2_one(al_train_state *s, void *a) { (void)a; s->opt.beta2 = 1.f; }
static void finished_at_0(al_train_state *s, void *a) { (void)a; s->epoch = 0; s->steps = s->opt.step = 0; s->finished = 1; }
/* a kept model (as graphs and molecules keep) whose epoch is later than the state's */
static void best_later(al_train_state *s, void *a)
{
    s->best = malloc((size_t)s->opt.n * sizeof *s->best);      /* freed with the state */
    assert_non_null(s->best);
    memcpy(s->best, s->opt.m, (size_t)s->opt.n * sizeof *s->best);
    s->best_epoch = *(int *)a; s->bad = 0; s->acc_max = 0.5; s->loss_min = 1; s->step_seconds = 0.1;
}

/* What a state cannot hold, whatever the run: refused when the file is read. */
static void test_load_refuses(void **st)
{
    (void)st;
    make_state1();
    int64_t big = INT64_MAX, most = INT_MAX, past = (int64_t)INT_MAX + 1;   /* state1 has 1 epoch */
    load_refuses(forge("dup.train", dup_order, NULL), "data.order is not a permutation: data.order[5] = ");
    load_refuses(forge("steps-max.train", set_steps, &big), "steps = 9223372036854775807 is more than 1 epoch can take");
    load_refuses(forge("optstep-max.train", set_opt_step, &big), "optim.step = 9223372036854775807 is more than 1 epoch");
    load_refuses(forge("steps-past.train", set_steps, &past), "steps = 2147483648 is more than 1 epoch can take");
    load_refuses(forge("v.train", neg_v, NULL), "optim.v[7] = -1 is negative");
    load_refuses(forge("m.train", nan_m, NULL), "optim.m[0] = nan is not finite");
    load_refuses(forge("rng.train", zero_shuffle, NULL), "rng.shuffle is all zeros");
    load_refuses(forge("min.train", nan_min, NULL), "diverge.min = nan");
    load_refuses(forge("beta2.train", beta2_one, NULL), "optim.beta2 = 1 is outside [0, 1)");
    load_refuses(forge("fin0.train", finished_at_0, NULL), "finished = 1 at epoch 0");
    int later = 2, same = 1;
    load_refuses(forge("best.train", best_later, &later), "graph.best_epoch = 2 is beyond epoch 1");
    /* the boundaries pass the file's own checks (INT_MAX steps in one epoch; the kept model of this epoch) */
    al_seq_model m; model(&m);
    al_train_state s; al_error e = {{0}};
    const char *ok[] = {forge("steps-most.train", set_steps, &most), forge("best-same.train", best_later, &same)};
    for (int i = 0; i < 2; i++) {
        if (al_train_state_load(ok[i], &m.params, &s, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
        al_train_state_free(&s);
    }
    al_seq_free(&m);
}

/* What this run cannot have reached: refused by the training loop, before its first step. */
static void test_resume_refuses(void **st)
{
    (void)st;
    make_state1();
    int epoch = 1000000000, past = EPOCHS + 1, last = EPOCHS;
    int64_t over = SPE + 1, at = SPE, most = INT_MAX;
    resume_gives(forge("epoch-1e9.train", set_epoch, &epoch), &g_tr, "epoch 1000000000 is beyond the 2 epochs of this run");
    resume_gives(forge("epoch-past.train", set_epoch, &past), &g_tr, "epoch 3 is beyond the 2 epochs of this run");
    resume_gives(forge("epoch-last.train", set_epoch, &last), &g_tr, NULL);
    resume_gives(forge("steps-over.train", set_steps, &over), &g_tr, "steps = 4, but 1 epoch of this run takes at most 3 optimiser steps");
    resume_gives(forge("steps-most.train", set_steps, &most), &g_tr, "steps = 2147483647, but 1 epoch");
    resume_gives(forge("optstep-over.train", set_opt_step, &over), &g_tr, "optim.step = 4, but 1 epoch");
    resume_gives(forge("steps-at.train", set_steps, &at), &g_tr, NULL);
    resume_gives(forge("same.train", set_steps, &at), &g_short, "data.order holds 40 examples, this run has 39");
}

/* ---- through bin/attnlab: a graph run's state, forged, refused before the CSV is touched ---- */
static int run(const char *args) { return tu_run_cli(tu_tmpdir(), args); }

static void test_cli_refuses_before_the_csv(void **st)
{
    (void)st;
    char base[2048], cmd[2200], gdir[4096];
    const char *csv = tu_tpath("g.csv"), *state = tu_tpath("g.train");
    snprintf(base, sizeof base, "train --task graph --model gcn --hidden 8 --epochs 4 --threads 1 --quiet --csv %s "
             "--checkpoint %s", csv, state);
    al_error e = {{0}};
    if (al_graph_resolve("cora", NULL, gdir, sizeof gdir, &e)) fail_msg("%s", e.msg);
    al_graph g;
    if (al_graph_load(&g, gdir, 1, &e)) fail_msg("%s", e.msg);
    al_gnn_config cfg; al_gnn_config_default(&cfg, "gcn", NULL);
    cfg.hidden = 8;
    al_gnn m; assert_int_equal(al_gnn_init(&m, &cfg, &g, 1, &e), AL_OK);
    const char *want[] = {"g.train: epoch 1000000000 is beyond the 4 epochs of this run",
                          "g.train: steps = 9223372036854775807 is more than 4 epochs can take"};
    for (int c = 0; c < 2; c++) {
        unlink(csv); unlink(state);
        snprintf(cmd, sizeof cmd, "%s --checkpoint-every 2", base);
        assert_int_equal(run(cmd), 0);                       /* 4 rows; the state after epoch 4 */
        /* rewritten by the library's writer with one field changed, its metadata as the run wrote it but
         * csv_rows 2 (as after epoch 2): a resume that trusted it would cut the CSV's last 2 rows */
        al_train_state s; char *meta = NULL;
        if (al_train_state_load(state, &m.params, &s, &meta, &e) != AL_OK) fail_msg("%s", e.msg);
        assert_int_equal(s.epoch, 4);
        if (c == 0) s.epoch = 1000000000; else s.steps = INT64_MAX;
        const char *keys[] = {"run_id", "run_config", "csv_rows_before"};
        char *vals[3]; const char *kv[8];
        for (int i = 0; i < 3; i++) { vals[i] = al_meta_get(meta, keys[i]); assert_non_null(vals[i]); kv[2 * i] = keys[i]; kv[2 * i + 1] = vals[i]; }
        kv[6] = "csv_rows"; kv[7] = "2";
        if (al_train_state_save(state, &m.params, &s, kv, 4, &e) != AL_OK) fail_msg("%s", e.msg);
        for (int i = 0; i < 3; i++) free(vals[i]);
        free(meta);
        al_train_state_free(&s);
        size_t n0, s0, n1, s1;
        char *csv0 = tu_slurp_n(csv, &n0), *st0 = tu_slurp_n(state, &s0);
        assert_non_null(csv0); assert_non_null(st0);
        snprintf(cmd, sizeof cmd, "%s --resume", base);
        assert_int_equal(run(cmd), 1);
        char *err = tu_slurp(tu_tpath("err.txt"));
        assert_non_null(err);
        if (!strstr(err, want[c]) || strchr(err, '\n') != err + strlen(err) - 1) fail_msg("stderr: %s", err);
        char *csv1 = tu_slurp_n(csv, &n1), *st1 = tu_slurp_n(state, &s1);
        assert_non_null(csv1); assert_non_null(st1);
        assert_true(n1 == n0 && !memcmp(csv0, csv1, n0));     /* no row removed */
        assert_true(s1 == s0 && !memcmp(st0, st1, s0));       /* the state as it was */
        free(err); free(csv0); free(csv1); free(st0); free(st1);
    }
    al_gnn_free(&m);
    al_graph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_refuses),
        cmocka_unit_test(test_resume_refuses),
        cmocka_unit_test(test_cli_refuses_before_the_csv),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
