/* test_checked_sizes.c — sizes computed from user numbers, at their boundaries: a graph model and a
 * molecule model are refused when all their parameters (values, gradients, AdamW moments) are more than
 * the memory budget, by one byte, and built when they are exactly the budget — every layer counted (a
 * graph transformer's blocks hold width² weights each; a molecule mlp hidden², with --hidden up to 65536). */
#include "testutil.h"
#include "attnlab/gnn.h"
#include "attnlab/graph.h"
#include "attnlab/io.h"
#include "attnlab/molecule.h"
#include "attnlab/molnet.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **st) { (void)st; return tu_tmpdir_make("checked_sizes"); }
static int teardown(void **st) { (void)st; al_mem_budget_set(0); return tu_tmpdir_remove(); }

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
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_budgets),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
