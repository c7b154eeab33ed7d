/* test_ops_graph.c — the fused graph ops of src/ops/graph.c: sparse input dropout (al_csr_dropout).
 * The fused layers (al_gnn_project, al_gnn_bias_act_dropout, al_take_rows) are checked bit for bit
 * against the chain of generic ops, and by gradient checks, through the models in test_graph.c. */
#include "testutil.h"
#include "attnlab/graph.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- sparse dropout ---------------- */
static void test_csr_dropout(void **st)
{
    (void)st;
    al_graph g; al_error err = {{0}};
    assert_int_equal(al_graph_random(&g, 1000, 10, 50, 2, 3, &err), AL_OK);   /* 50 000 values */
    al_ctx *c = al_ctx_new(9);
    al_rng r0 = c->dropout_rng;
    const al_csr *d = al_csr_dropout(c, &g.feat, 0.6f);
    assert_non_null(d);
    assert_ptr_equal(d->rowptr, g.feat.rowptr); assert_ptr_equal(d->col, g.feat.col);
    int64_t kept = 0;
    for (int64_t k = 0; k < d->nnz; k++) {
        if (d->val[k] != 0) { kept++; assert_true(fabsf(d->val[k] - g.feat.val[k] / 0.4f) <= 1e-6f * fabsf(d->val[k])); }
    }
    assert_true(kept > 0.38 * d->nnz && kept < 0.42 * d->nnz);
    float *first = malloc((size_t)d->nnz * sizeof *first);
    memcpy(first, d->val, (size_t)d->nnz * sizeof *first);
    c->dropout_rng = r0;   /* same stream state → same mask, whatever the thread count */
    const al_csr *d2 = al_csr_dropout(c, &g.feat, 0.6f);
    assert_memory_equal(first, d2->val, (size_t)d->nnz * sizeof *first);
    const al_csr *d3 = al_csr_dropout(c, &g.feat, 0.6f);   /* next draw differs */
    assert_true(memcmp(first, d3->val, (size_t)d->nnz * sizeof *first) != 0);
    c->training = 0;
    assert_ptr_equal(al_csr_dropout(c, &g.feat, 0.6f), &g.feat);
    c->training = 1;
    assert_null(al_csr_dropout(c, &g.feat, 1.0f));
    assert_false(al_ok(c));
    free(first); al_ctx_free(c); al_graph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csr_dropout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
