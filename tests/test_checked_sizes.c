/* test_checked_sizes.c — sizes computed from user numbers, at their boundaries: a training batch up to
 * INT_MAX takes ceil(n / batch) steps an epoch (n + batch - 1 overflowed an int: no step at all), and a
 * batch beyond the data allocates for the data, not the batch, and --epochs 10^9 times the steps of an
 * epoch is counted in 64 bits (through bin/attnlab); a graph
 * model and a molecule model are refused when all their parameters (values, gradients, AdamW moments) are
 * more than the memory budget, by one byte, and built when they are exactly the budget — every layer
 * counted (a graph transformer's blocks hold width² weights each; a molecule mlp hidden², with --hidden up
 * to 65536), and so is a sequence model (--max-len, up to 10^6, learned positions of dim each). */
#include "testutil.h"
#include "attnlab/gnn.h"
#include "attnlab/graph.h"
#include "attnlab/io.h"
#include "attnlab/molecule.h"
#include "attnlab/molnet.h"
#include "attnlab/seq.h"
#include "attnlab/text.h"
#include "attnlab/train.h"
#include "attnlab/trainstate.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NSENT = 40 };

static int setup(void **st) { (void)st; return tu_tmpdir_make("checked_sizes"); }
static int teardown(void **st) { (void)st; al_mem_budget_set(0); return tu_tmpdir_remove(); }

/* The steps of epoch 1, from the state handed out after it. */
static int first_epoch_steps(void *ud, const al_train_state *s) { if (s->epoch == 1) *(int64_t *)ud = s->steps; return 0; }

static void test_batch_int_max(void **st)
{
    (void)st;
    tu_write_treebank(tu_tpath("train.conllu"), NSENT, 1, 0);
    al_conllu d; al_featurizer fz; al_seq_data tr; al_error e = {{0}};
    if (al_conllu_read(tu_tpath("train.conllu"), NULL, &d, &e) || al_feat_build(&d, &fz, &e) || al_seq_data_encode(&fz, &d, &tr, &e))
        fail_msg("%s", e.msg);
    al_seq_config cfg;
    assert_int_equal(al_seq_config_default(&cfg, "fc", al_feat_nwords(&fz), al_feat_nsuffixes(&fz), 17, &e), AL_OK);
    cfg.word_dim = 8; cfg.suffix_dim = 4; cfg.dim = 8; cfg.hidden = 8;
    const int batches[] = {INT_MAX, INT_MAX - NSENT + 2, NSENT, NSENT - 1}, steps[] = {1, 1, 1, 2};
    for (int i = 0; i < 4; i++) {
        al_seq_model m;
        if (al_seq_init(&m, &cfg, 3, &e) != AL_OK) fail_msg("%s", e.msg);
        int64_t got = -1;
        al_resume rs = {1, first_epoch_steps, &got, NULL, NULL, NULL};
        al_seq_train_config tc = {0};
        tc.epochs = 1; tc.batch = batches[i]; tc.lr = 3e-3f; tc.seed = 3; tc.resume = &rs;
        if (al_seq_train(&m, &tr, NULL, &tc, NULL, NULL, &e) != AL_OK) fail_msg("batch %d: %s", batches[i], e.msg);
        if (got != steps[i]) fail_msg("batch %d: %lld steps in epoch 1, expected %d", batches[i], (long long)got, steps[i]);
        al_seq_free(&m);
    }
    al_seq_data_free(&tr); al_feat_free(&fz); al_conllu_free(&d);
}

/* --batch 10^9 on an image folder of 6 images: the batch's scratch is the data's size, so the run fits in
 * 1 GiB of address space (it asked for 2 x 4 GB before). An ASan build reserves terabytes of address space
 * and runs without the limit. */
static void test_batch_beyond_data(void **st)
{
    (void)st;
    char cmd[8192];
    const char *bin = tu_attnlab_bin();
    snprintf(cmd, sizeof cmd, "ldd '%s' 2>/dev/null | grep -q libasan", bin);
    const int asan = tu_system(cmd) == 0;
    snprintf(cmd, sizeof cmd, "%s'%s' train --model cnn --data tests/bad-inputs/images/ok --batch 1000000000 --epochs 1 "
             "--threads 1 --quiet > /dev/null 2> %s", asan ? "" : "prlimit --as=1073741824 -- ", bin, tu_tpath("err.txt"));
    const int rc = tu_system(cmd);
    if (rc) { char *e = tu_slurp(tu_tpath("err.txt")); fail_msg("exit %d: %s", rc, e ? e : ""); }
}

/* --epochs 1000000000 --batch 1: the image trainer's progress counts epochs x steps per epoch (6 * 10^9
 * here) in 64 bits; in an int the product overflowed (undefined behaviour, which a sanitizer build stops
 * on at once). The run is stopped after 3 s, still training. */
static void test_epochs_times_steps(void **st)
{
    (void)st;
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "timeout 3 '%s' train --model cnn --data tests/bad-inputs/images/ok --epochs 1000000000 --batch 1 "
             "--threads 1 --quiet > /dev/null 2> %s", tu_attnlab_bin(), tu_tpath("err.txt"));
    const int rc = tu_system(cmd);
    char *e = tu_slurp(tu_tpath("err.txt"));
    if (rc != 124 || (e && strstr(e, "runtime error"))) fail_msg("exit %d (124: still training at the timeout): %s", rc, e ? e : "");
    free(e);
}

/* init() with the budget at the model's own figure (16 bytes a parameter) passes, one byte under is refused
 * with a message holding want. */
typedef al_status (*init_fn)(void *model, void *data, al_error *err);
typedef void (*free_fn)(void *model);
typedef int64_t (*total_fn)(const void *model);
static void budget_boundary(init_fn init, free_fn fr, total_fn total, void *model, void *data, const char *want)
{
    al_error e = {{0}};
    al_mem_budget_set(0);
    if (init(model, data, &e) != AL_OK) fail_msg("%s", e.msg);
    const uint64_t need = (uint64_t)total(model) * 16;
    fr(model);
    al_mem_budget_set(need);
    if (init(model, data, &e) != AL_OK) fail_msg("budget %llu: %s", (unsigned long long)need, e.msg);
    fr(model);
    al_mem_budget_set(need - 1);
    assert_int_equal(init(model, data, &e), AL_ERR);
    if (!strstr(e.msg, want) || !strstr(e.msg, "memory budget")) fail_msg("%s", e.msg);
    al_mem_budget_set(0);
}

static al_status gt_init(void *m, void *g, al_error *err)
{
    al_gnn_config cfg; al_gnn_config_default(&cfg, "gt", NULL);
    cfg.hidden = 8; cfg.heads = 2;
    return al_gnn_init(m, &cfg, g, 1, err);
}
static void gt_free(void *m) { al_gnn_free(m); }
static int64_t gt_total(const void *m) { return ((const al_gnn *)m)->params.total; }

static al_status mlp_init(void *m, void *ms, al_error *err)
{
    al_molnet_config cfg;
    if (al_molnet_config_default(&cfg, "mlp", err) != AL_OK) return AL_ERR;
    cfg.hidden = 300;
    return al_molnet_init(m, &cfg, ms, 1, err);
}
static void mlp_free(void *m) { al_molnet_free(m); }
static int64_t mlp_total(const void *m) { return ((const al_molnet *)m)->params.total; }

static al_status sa_init(void *m, void *unused, al_error *err)
{
    (void)unused;
    al_seq_config cfg;
    if (al_seq_config_default(&cfg, "sa", 50, 20, 17, err) != AL_OK) return AL_ERR;
    cfg.pos = AL_POS_LEARNED; cfg.max_len = 100000;              /* 100000 x dim learned positions */
    return al_seq_init(m, &cfg, 1, err);
}
static void sa_free(void *m) { al_seq_free(m); }
static int64_t sa_total(const void *m) { return ((const al_seq_model *)m)->params.total; }

static void test_model_budgets(void **st)
{
    (void)st;
    al_graph g; al_molset ms; al_error e = {{0}};
    if (al_graph_load(&g, "tests/bad-inputs/graph/ok", 1, &e)) fail_msg("%s", e.msg);
    al_gnn gm;
    budget_boundary(gt_init, gt_free, gt_total, &gm, &g, "graph model gt: ");
    al_graph_free(&g);
    if (al_molset_load(&ms, "tests/bad-inputs/molecules/ok", &e)) fail_msg("%s", e.msg);
    al_molnet mm;
    budget_boundary(mlp_init, mlp_free, mlp_total, &mm, &ms, "molecule model mlp: ");
    al_molset_free(&ms);
    al_seq_model sm;
    budget_boundary(sa_init, sa_free, sa_total, &sm, NULL, "sequence model sa: ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_int_max),
        cmocka_unit_test(test_batch_beyond_data),
        cmocka_unit_test(test_epochs_times_steps),
        cmocka_unit_test(test_model_budgets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
