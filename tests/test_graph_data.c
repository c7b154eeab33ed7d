/* test_graph_data.c — the graph reader: Cora's shape, malformed files and their FILE:LINE errors,
 * splits, self-loops, GCN normalisation, random graphs. */
#include "testutil.h"
#include "attnlab/graph.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_cora_shape(void **st)
{
    (void)st;
    char dir[4096]; al_error err = {{0}};
    if (al_graph_resolve("cora", NULL, dir, sizeof dir, &err)) fail_msg("%s", err.msg);
    al_graph g;
    if (al_graph_load(&g, dir, 1, &err)) fail_msg("%s", err.msg);
    assert_int_equal(g.n, 2708);
    assert_int_equal(g.nfeat, 1433);
    assert_int_equal(g.nclass, 7);
    assert_int_equal(g.nedges_file, 10556);
    assert_int_equal(g.adj.nnz, 10556);          /* sorted, no duplicates, no loops as shipped */
    assert_int_equal(g.ntrain, 140);
    assert_int_equal(g.nval, 500);
    assert_int_equal(g.ntest, 1000);
    assert_string_equal(g.name, "cora");
    /* Planetoid: the first 140 nodes train, 20 per class */
    int per[7] = {0};
    for (int i = 0; i < g.ntrain; i++) { assert_int_equal(g.train[i], i); per[g.label[i]]++; }
    for (int k = 0; k < 7; k++) assert_int_equal(per[k], 20);
    /* rows sum to 1 after normalisation; symmetric adjacency */
    for (int i = 0; i < g.n; i++) {
        double s = 0;
        for (int64_t k = g.feat.rowptr[i]; k < g.feat.rowptr[i + 1]; k++) s += g.feat.val[k];
        if (g.feat.rowptr[i + 1] > g.feat.rowptr[i]) assert_true(fabs(s - 1) < 1e-5);
    }
    int64_t asym = 0;
    for (int i = 0; i < g.n; i++)
        for (int64_t k = g.adj.rowptr[i]; k < g.adj.rowptr[i + 1]; k++) {
            int j = g.adj.col[k], found = 0;
            for (int64_t q = g.adj.rowptr[j]; q < g.adj.rowptr[j + 1]; q++) found |= g.adj.col[q] == i;
            asym += !found;
        }
    assert_int_equal(asym, 0);
    /* self-loops and Â */
    al_csr a, h;
    assert_int_equal(al_graph_adj_self_loops(&g, &a, &err), AL_OK);
    assert_int_equal(a.nnz, 10556 + 2708);
    for (int i = 0; i < g.n; i++) {
        int self = 0;
        for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) {
            self += a.col[k] == i;
            if (k > a.rowptr[i]) assert_true(a.col[k] > a.col[k - 1]);
        }
        assert_int_equal(self, 1);
    }
    assert_int_equal(al_graph_gcn_norm(&g, &h, &err), AL_OK);
    /* Â[i][j] = 1/sqrt(d_i d_j) */
    int i0 = 0; int64_t di = h.rowptr[1] - h.rowptr[0];
    for (int64_t k = h.rowptr[i0]; k < h.rowptr[i0 + 1]; k++) {
        int j = h.col[k]; int64_t dj = h.rowptr[j + 1] - h.rowptr[j];
        assert_true(fabsf(h.val[k] - (float)(1.0 / sqrt((double)di * dj))) < 1e-6f);
    }
    al_csr_free(&a); al_csr_free(&h);
    /* unnormalised: binary features */
    al_graph g2;
    assert_int_equal(al_graph_load(&g2, dir, 0, &err), AL_OK);
    assert_true(g2.feat.val[0] == 1.0f && g2.feat.nnz == g.feat.nnz);
    al_graph_free(&g2);

    /* splits: seeded, disjoint from val/test, per class counts */
    assert_int_equal(al_graph_split_per_class(&g, 5, 3, &err), AL_OK);
    assert_int_equal(g.ntrain, 35);
    int first[35]; memcpy(first, g.train, sizeof first);
    memset(per, 0, sizeof per);
    uint8_t *held = calloc((size_t)g.n, 1);
    for (int i = 0; i < g.nval; i++) held[g.val[i]] = 1;
    for (int i = 0; i < g.ntest; i++) held[g.test[i]] = 1;
    for (int i = 0; i < g.ntrain; i++) { assert_false(held[g.train[i]]); per[g.label[g.train[i]]]++; }
    for (int k = 0; k < 7; k++) assert_int_equal(per[k], 5);
    assert_int_equal(al_graph_split_per_class(&g, 5, 3, &err), AL_OK);
    assert_memory_equal(first, g.train, sizeof first);
    assert_int_equal(al_graph_split_per_class(&g, 5, 4, &err), AL_OK);
    assert_true(memcmp(first, g.train, sizeof first) != 0);
    assert_int_equal(al_graph_split_frac(&g, 0.5, 1, &err), AL_OK);
    assert_int_equal(g.ntrain, (int)lround(0.5 * (2708 - 1500)));
    for (int i = 0; i < g.ntrain; i++) assert_false(held[g.train[i]]);
    assert_int_equal(al_graph_split_frac(&g, 1.5, 1, &err), AL_ERR);
    free(held);
    al_graph_free(&g);
}

/* ---- malformed files ---- */
static char tmpdir[256];

static void write_file(const char *name, const char *text)
{
    char p[512]; snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fputs(text, f); fclose(f);
}
static void write_good(void)
{
    write_file("features.libsvm", "0 1:1 3:1\n1 2:1\n-1\n1 1:0.5 2:0.5 4:1\n0 3:1\n2 4:2\n");
    write_file("edges.txt", "0 1\n1 0\n1 2\n2 1\n3 4\n4 3\n4 5\n5 4\n0 0\n0 1\n");
    write_file("train.idx", "0\n1\n");
    write_file("val.idx", "3\n");
    write_file("test.idx", "4\n5\n");
}
/* Load tmpdir and expect an error containing want (or success when want is NULL). */
static void expect(const char *want)
{
    al_graph g; al_error err = {{0}};
    al_status st = al_graph_load(&g, tmpdir, 1, &err);
    if (!want) { if (st) fail_msg("unexpected error: %s", err.msg); al_graph_free(&g); return; }
    if (st == AL_OK) fail_msg("expected an error containing '%s'", want);
    if (!strstr(err.msg, want)) fail_msg("error '%s' does not contain '%s'", err.msg, want);
    al_graph_free(&g);
}

static int setup_dir(void **st)
{
    (void)st;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_graph_test_%d", (int)getpid());
    mkdir(tmpdir, 0700);
    return 0;
}
static int teardown_dir(void **st)
{
    (void)st;
    const char *f[] = {"features.libsvm", "edges.txt", "train.idx", "val.idx", "test.idx"};
    char p[512];
    for (int i = 0; i < 5; i++) { snprintf(p, sizeof p, "%s/%s", tmpdir, f[i]); unlink(p); }
    rmdir(tmpdir);
    return 0;
}

static void test_small_good(void **st)
{
    (void)st;
    write_good();
    al_graph g; al_error err = {{0}};
    if (al_graph_load(&g, tmpdir, 1, &err)) fail_msg("%s", err.msg);
    assert_int_equal(g.n, 6); assert_int_equal(g.nfeat, 4); assert_int_equal(g.nclass, 3);
    assert_int_equal(g.nedges_file, 10);
    assert_int_equal(g.adj.nnz, 8);         /* the self-loop and the duplicate are dropped */
    assert_int_equal(g.label[2], -1);
    assert_int_equal(g.feat.rowptr[3] - g.feat.rowptr[2], 0);   /* node without features */
    assert_true(fabsf(g.feat.val[g.feat.rowptr[3]] - 0.25f) < 1e-7f);   /* 0.5 / 2 */
    assert_int_equal(g.feat.col[g.feat.rowptr[3] + 2], 3);
    al_graph_free(&g);
}

static void test_malformed(void **st)
{
    (void)st;
    char p[512];
    write_good(); write_file("edges.txt", "0 1\n1 9\n"); expect("edges.txt:2: node id 9 out of range [0, 6)");
    write_good(); write_file("edges.txt", "0 1\n-1 2\n"); expect("edges.txt:2: node id -1 out of range");
    write_good(); write_file("edges.txt", "0 1\n1 0\n2 x3\n"); expect("edges.txt:3: destination id 'x3' is not an integer");
    write_good(); write_file("edges.txt", "0 1 7\n"); expect("edges.txt:1: unexpected '7'");
    write_good(); write_file("features.libsvm", "0 1:1\n1 2:abc\n"); expect("features.libsvm:2: feature value 'abc' is not a finite number");
    write_good(); write_file("features.libsvm", "0 1:1\nx 2:1\n"); expect("features.libsvm:2: label 'x' is not an integer");
    write_good(); write_file("features.libsvm", "0 1:1\n1 2:1\n-2 1:1\n"); expect("features.libsvm:3: label -2 out of range");
    write_good(); write_file("features.libsvm", "0 1:1\n1 0:1\n"); expect("features.libsvm:2: feature index 0 out of range");
    write_good(); write_file("features.libsvm", "0 2:1 2:1\n"); expect("features.libsvm:1: feature index 2 not greater");
    write_good(); write_file("features.libsvm", "0 3:1 1:1\n"); expect("features.libsvm:1: feature index 1 not greater");
    write_good(); write_file("features.libsvm", "0 1:1\n\n1 2:1\n"); expect("features.libsvm:2: empty line");
    write_good(); write_file("features.libsvm", "0 1:1 5\n"); expect("features.libsvm:1: '5' is not IDX:VAL");
    write_good(); write_file("features.libsvm", "0 1:1\n1 2:1e99\n"); expect("features.libsvm:2: feature value '1e99'");
    write_good(); write_file("train.idx", "0\n2\n"); expect("train.idx:2: node 2 has no label");
    write_good(); write_file("train.idx", "0\n1\n0\n"); expect("train.idx:3: node 0 listed twice (first on line 1)");
    write_good(); write_file("test.idx", "4\n0\n"); expect("test.idx:2: node 0 is also in train.idx (line 1)");
    write_good(); write_file("val.idx", "3\n6\n"); expect("val.idx:2: node id 6 out of range");
    write_good(); write_file("val.idx", "3\n2.5\n"); expect("val.idx:2: node id '2.5' is not an integer");
    write_good(); write_file("val.idx", "3\n99999999999999999999\n"); expect("val.idx:2: node id");
    write_good(); snprintf(p, sizeof p, "%s/val.idx", tmpdir); unlink(p); expect("val.idx: cannot open");
    write_good(); snprintf(p, sizeof p, "%s/edges.txt", tmpdir); unlink(p); expect("edges.txt: cannot open");
    write_good(); write_file("features.libsvm", ""); expect("features.libsvm: empty file");
    write_good(); write_file("features.libsvm", "-1 1:1\n-1\n"); expect("no node has a label");
    /* CRLF line ends and a missing final newline are fine */
    write_good(); write_file("edges.txt", "0 1\r\n1 0\r\n2 1"); expect(NULL);
    write_good(); expect(NULL);
    al_error err = {{0}}; char out[64];
    assert_int_equal(al_graph_resolve("no-such-dataset-xyz", NULL, out, sizeof out, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "not found"));
}

static void test_random_graph(void **st)
{
    (void)st;
    al_graph g; al_error err = {{0}};
    assert_int_equal(al_graph_random(&g, 1000, 20000, 8, 5, 7, &err), AL_OK);
    assert_int_equal(g.n, 1000); assert_int_equal(g.adj.nnz, 20000);
    assert_int_equal(g.feat.nnz, 8000);
    assert_int_equal(g.ntrain, 100);
    for (int i = 0; i < g.n; i++)
        for (int64_t k = g.adj.rowptr[i]; k < g.adj.rowptr[i + 1]; k++) {
            assert_true(g.adj.col[k] != i);
            if (k > g.adj.rowptr[i]) assert_true(g.adj.col[k] > g.adj.col[k - 1]);
        }
    al_graph_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cora_shape),
        cmocka_unit_test_setup_teardown(test_small_good, setup_dir, teardown_dir),
        cmocka_unit_test_setup_teardown(test_malformed, setup_dir, teardown_dir),
        cmocka_unit_test(test_random_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
