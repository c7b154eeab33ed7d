/* test_graph_import.c — `data import` (graph_import.h, io.h): a LINQS pair written byte for byte as
 * attnlab's format; Cora exported to LINQS and imported back unchanged; an OGB CSV set read back with
 * exact floats, symmetrised edges and its split; input errors naming FILE:LINE; the CLI end to end. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "attnlab/io.h"
#include "attnlab/graph_import.h"

static char dir[64];

static void put(const char *sub, const char *name, const char *text)
{
    char p[512]; snprintf(p, sizeof p, "%s/%s", dir, sub); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fputs(text, f); fclose(f);
}
static void expect_file(const char *sub, const char *name, const char *want)
{
    char p[512]; snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    char *got = tu_slurp(p);
    if (!got || strcmp(got, want)) fail_msg("%s:\n--- got\n%s--- want\n%s", p, got ? got : "(missing)", want);
    free(got);
}
static al_import_opts opts(al_import_format fmt, const char *in, const char *out, al_import_split split)
{
    static char pin[8][512], pout[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(pin[k], sizeof pin[k], "%s/%s", dir, in); snprintf(pout[k], sizeof pout[k], "%s/%s", dir, out);
    return (al_import_opts){fmt, pin[k], pout[k], NULL, split, 1};
}

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_import_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[256]; snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) ? -1 : 0;
}

/* String ids out of order, tabs and spaces, a citation of a missing paper, a duplicate, a self-citation. */
static void test_linqs_bytes(void **state)
{
    (void)state;
    put("li", "toy.content", "p3\t1\t0\t1\tB\np1\t0\t1\t0\tA\nx9 1 1 1 B\nq2 0 0 0 A\np7 1 0 0 B\nz 0 1 1 A\n");
    put("li", "toy.cites", "p1 p3\np3 p1\np1 p1\np1 zz\nx9 p3\n");
    al_import_opts o = opts(AL_IMPORT_LINQS, "li", "li_out", AL_SPLIT_RANDOM);
    al_import_stats st; al_error err = {{0}};
    if (al_graph_import(&o, &st, &err)) fail_msg("%s", err.msg);
    assert_int_equal(st.edges_missing, 1); assert_int_equal(st.self_loops, 1); assert_int_equal(st.edges_in, 5);
    assert_true(st.clamped);
    expect_file("li_out", "features.libsvm", "1 1:1 3:1\n0 2:1\n1 1:1 2:1 3:1\n0\n1 1:1\n0 2:1 3:1\n");
    expect_file("li_out", "edges.txt", "0 1\n0 2\n1 0\n2 0\n");
    expect_file("li_out", "classes.txt", "A\nB\n");
    al_graph g;
    if (al_graph_load(&g, o.out, 0, &err)) fail_msg("%s", err.msg);
    assert_int_equal(g.n, 6); assert_int_equal(g.nclass, 2); assert_int_equal(g.nfeat, 3); assert_int_equal(g.adj.nnz, 4);
    assert_int_equal(g.ntrain, 2); assert_int_equal(g.nval + g.ntest, 4);
    for (int i = 0; i < g.ntrain; i++) assert_int_equal(g.label[g.train[i]], i == 0 ? g.label[g.train[0]] : 1 - g.label[g.train[0]]);
    al_graph_free(&g);
}

/* Cora as LINQS (p<i>, 0/1 columns, c<k>) and back: features, labels and edges equal. */
static void test_cora_roundtrip(void **state)
{
    (void)state;
    al_graph a, b; al_error err = {{0}};
    if (al_graph_load(&a, "datasets/cora", 0, &err)) fail_msg("%s", err.msg);
    char p[512]; snprintf(p, sizeof p, "%s/cl", dir); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/cl/cora.content", dir);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    char *row = malloc((size_t)a.nfeat * 2 + 1);
    for (int i = 0; i < a.n; i++) {
        for (int j = 0; j < a.nfeat; j++) { row[2 * j] = '\t'; row[2 * j + 1] = '0'; }
        for (int64_t k = a.feat.rowptr[i]; k < a.feat.rowptr[i + 1]; k++) row[2 * a.feat.col[k] + 1] = '1';
        row[2 * a.nfeat] = 0;
        fprintf(f, "p%d%s\tc%d\n", i, row, a.label[i]);
    }
    fclose(f); free(row);
    snprintf(p, sizeof p, "%s/cl/cora.cites", dir);
    f = fopen(p, "w"); assert_non_null(f);
    for (int i = 0; i < a.n; i++)
        for (int64_t k = a.adj.rowptr[i]; k < a.adj.rowptr[i + 1]; k++) fprintf(f, "p%d p%d\n", a.adj.col[k], i);
    fclose(f);
    al_import_opts o = opts(AL_IMPORT_LINQS, "cl", "cl_out", AL_SPLIT_RANDOM);
    al_import_stats st;
    if (al_graph_import(&o, &st, &err)) fail_msg("%s", err.msg);
    assert_int_equal(st.edges_missing, 0); assert_false(st.clamped);
    if (al_graph_load(&b, o.out, 0, &err)) fail_msg("%s", err.msg);
    assert_int_equal(b.n, a.n); assert_int_equal(b.nfeat, a.nfeat); assert_int_equal(b.nclass, a.nclass);
    assert_memory_equal(b.label, a.label, (size_t)a.n * sizeof *a.label);
    assert_int_equal(b.feat.nnz, a.feat.nnz);
    assert_memory_equal(b.feat.rowptr, a.feat.rowptr, ((size_t)a.n + 1) * sizeof *a.feat.rowptr);
    assert_memory_equal(b.feat.col, a.feat.col, (size_t)a.feat.nnz * sizeof *a.feat.col);
    assert_memory_equal(b.feat.val, a.feat.val, (size_t)a.feat.nnz * sizeof *a.feat.val);
    assert_int_equal(b.adj.nnz, a.adj.nnz);
    assert_memory_equal(b.adj.rowptr, a.adj.rowptr, ((size_t)a.n + 1) * sizeof *a.adj.rowptr);
    assert_memory_equal(b.adj.col, a.adj.col, (size_t)a.adj.nnz * sizeof *a.adj.col);
    assert_int_equal(b.ntrain, 20 * a.nclass); assert_int_equal(b.nval, 500); assert_int_equal(b.ntest, 1000);
    al_graph_free(&a); al_graph_free(&b);
}

/* node-feat / node-label / edge / split/x/{train,valid,test}: exact floats, symmetric edges, the split kept. */
static void test_ogb_roundtrip(void **state)
{
    (void)state;
    const float v[4][3] = {{0.1f, -3.25e-5f, 0}, {1e30f, 0, 0}, {0, 0, 0}, {2.5f, 0.3333333433f, -7}};
    char buf[1024]; size_t n = 0;
    for (int i = 0; i < 4; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%.9g,%.9g,%.9g\n", (double)v[i][0], (double)v[i][1], (double)v[i][2]);
    put("og", "node-feat.csv", buf);
    put("og", "node-label.csv", "1\n0\nnan\n2\n");
    put("og", "edge.csv", "0,1\n1,3\n3,1\n2,2\n");
    char sp[128]; snprintf(sp, sizeof sp, "%s/og/split", dir); mkdir(sp, 0700);
    put("og/split/x", "train.csv", "3\n");
    put("og/split/x", "valid.csv", "0\n");
    put("og/split/x", "test.csv", "1\n");
    al_import_opts o = opts(AL_IMPORT_OGB, "og", "og_out", AL_SPLIT_GIVEN);
    al_import_stats st; al_error err = {{0}};
    if (al_graph_import(&o, &st, &err)) fail_msg("%s", err.msg);
    al_graph g;
    if (al_graph_load(&g, o.out, 0, &err)) fail_msg("%s", err.msg);
    assert_int_equal(g.n, 4); assert_int_equal(g.nclass, 3); assert_int_equal(g.nfeat, 3);
    int lab[4] = {1, 0, -1, 2};
    assert_memory_equal(g.label, lab, sizeof lab);
    for (int i = 0; i < 4; i++) {
        float row[3] = {0, 0, 0};
        for (int64_t k = g.feat.rowptr[i]; k < g.feat.rowptr[i + 1]; k++) row[g.feat.col[k]] = g.feat.val[k];
        assert_memory_equal(row, v[i], sizeof row);
    }
    expect_file("og_out", "edges.txt", "0 1\n1 0\n1 3\n3 1\n");
    assert_int_equal(st.self_loops, 1);
    assert_int_equal(g.ntrain, 1); assert_int_equal(g.train[0], 3);
    assert_int_equal(g.nval, 1); assert_int_equal(g.val[0], 0);
    assert_int_equal(g.ntest, 1); assert_int_equal(g.test[0], 1);
    al_graph_free(&g);
}

/* Import sub (a copy of "og" with one file replaced) and expect an error containing want. */
static void expect_ogb_error(const char *file, const char *text, const char *want)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/bad' && cp -r '%s/og' '%s/bad'", dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    put("bad", file, text);
    al_import_opts o = opts(AL_IMPORT_OGB, "bad", "bad_out", AL_SPLIT_GIVEN);
    al_import_stats st; al_error err = {{0}};
    assert_int_equal(al_graph_import(&o, &st, &err), AL_ERR);
    if (!strstr(err.msg, want)) fail_msg("expected '%s' in: %s", want, err.msg);
}

static void test_errors(void **state)
{
    (void)state;
    expect_ogb_error("node-feat.csv", "1,2,3\n4,5\n", "node-feat.csv:2: 2 fields, expected 3");
    expect_ogb_error("node-feat.csv", "1,2,3\n4,5,6\n7,x,9\n", "node-feat.csv:3: field 2 'x' is not a finite number");
    expect_ogb_error("node-feat.csv", "", "node-feat.csv:1: empty file");
    expect_ogb_error("edge.csv", "0,1\n0,9\n", "edge.csv:2: node id 9 out of range [0, 4)");
    expect_ogb_error("edge.csv", "0;1\n", "edge.csv:1: '0;1' is not SRC,DST");
    expect_ogb_error("node-label.csv", "1\n0\nz\n2\n", "node-label.csv:3: label 'z'");
    /* a label is a class number: the class count (label + 1) and its tables are sized from it */
    expect_ogb_error("node-label.csv", "1\n0\n2147483647\n2\n", "node-label.csv:3: label 2147483647 is absurd (limit 65536 classes)");
    expect_ogb_error("node-label.csv", "1\n0\n2147483646\n2\n", "node-label.csv:3: label 2147483646 is absurd");
    expect_ogb_error("node-label.csv", "1\n0\n65536\n2\n", "node-label.csv:3: label 65536 is absurd");
    expect_ogb_error("split/x/test.csv", "1\n7\n", "test.csv:2: node id 7 out of range");
    expect_ogb_error("split/x/test.csv", "3\n", "test.csv:1: node 3 already in train.csv (line 1)");
    expect_ogb_error("split/x/valid.csv", "2\n", "valid.csv:1: node 2 has no label");
    /* LINQS */
    put("lb", "t.content", "a 1 0 X\nb 1 Y\n");
    put("lb", "t.cites", "a b\n");
    al_import_opts o = opts(AL_IMPORT_LINQS, "lb", "lb_out", AL_SPLIT_RANDOM);
    al_import_stats st; al_error err = {{0}};
    assert_int_equal(al_graph_import(&o, &st, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "t.content:2: 1 word columns between the paper id and the class, expected 2"));
    put("lb", "t.content", "a 1 0 X\na 1 1 Y\n");
    memset(&err, 0, sizeof err);
    assert_int_equal(al_graph_import(&o, &st, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "t.content:2: paper id 'a' already on line 1"));
    put("lb", "t.content", "a 1 0 X\nb 1 1 Y\n");
    put("lb", "t.cites", "a b\na\n");
    memset(&err, 0, sizeof err);
    assert_int_equal(al_graph_import(&o, &st, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "t.cites:2: one field"));
}

/* The largest label the class limit admits imports (65536 classes), with the given split and with a
 * random one (its per-class tables sized by the class count). */
static void test_ogb_label_limit(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s/top' && cp -r '%s/og' '%s/top'", dir, dir, dir);
    assert_int_equal(system(cmd), 0);
    put("top", "node-label.csv", "1\n0\n65535\n2\n");
    put("topr", "node-feat.csv", "1,0\n0,1\n1,1\n1,0\n0,1\n1,1\n1,0\n0,1\n");
    put("topr", "node-label.csv", "0\n0\n0\n0\n1\n1\n1\n65535\n");
    put("topr", "edge.csv", "0,1\n1,2\n");
    const char *in[] = {"top", "topr"};
    for (int split = 0; split < 2; split++) {
        al_import_opts o = opts(AL_IMPORT_OGB, in[split], split ? "topr_out" : "top_out", split ? AL_SPLIT_RANDOM : AL_SPLIT_GIVEN);
        al_import_stats st; al_error err = {{0}};
        if (al_graph_import(&o, &st, &err)) fail_msg("%s", err.msg);
        assert_int_equal(st.nclass, 65536);
    }
}

static int run(const char *args) { return tu_run_cli(dir, args); }

static void test_cli(void **state)
{
    (void)state;
    char a[1024];
    snprintf(a, sizeof a, "data import --format linqs --in %s/cl --out %s/cli_out --seed 3", dir, dir);
    int rc = run(a);
    char ep[128]; snprintf(ep, sizeof ep, "%s/err.txt", dir);
    if (rc) { char *e = tu_slurp(ep); fail_msg("data import exited %d: %s", rc, e ? e : "?"); }
    snprintf(a, sizeof a, "train --task graph --data %s/cli_out --model gcn --epochs 5 --quiet", dir);
    rc = run(a);
    if (rc) { char *e = tu_slurp(ep); fail_msg("train exited %d: %s", rc, e ? e : "?"); }
    const char *bad[] = {"data", "data export", "data import --in x --out y", "data import --format csv --in x --out y",
                         "data import --format ogb --in x", "data import --format linqs --in x --out y --split planetoid",
                         "data import --format ogb --in x --out y --seed -1", "data import --format ogb --in x --out y --bogus"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = run(bad[i]);
        if (rc != 2) fail_msg("`attnlab %s` exited %d, expected 2", bad[i], rc);
    }
    snprintf(a, sizeof a, "data import --format ogb --in %s/nothing --out %s/x", dir, dir);
    assert_int_equal(run(a), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linqs_bytes),
        cmocka_unit_test(test_cora_roundtrip),
        cmocka_unit_test(test_ogb_roundtrip),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_ogb_label_limit),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
