/* test_graph_cli.c — `attnlab train --task graph` and `attnlab bench graph` end to end through
 * $ATTNLAB_BIN (exported by the Makefile): CSV rows (per epoch + the restored best model), several
 * seeds with mean ± std, determinism, --attention rows summing to one per query, --save, errors. */
#include "testutil.h"
#include "attnlab/results.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static void write_file(const char *sub, const char *name, const char *text)
{
    char p[256]; snprintf(p, sizeof p, "%s/%s/%s", dir, sub, name);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fputs(text, f); fclose(f);
}
static int count_lines(const char *s) { int n = 0; for (; *s; s++) n += *s == '\n'; return n; }
/* Run `bin ARGS` with stdout and stderr to dir/out.txt, dir/err.txt; returns the exit status. */
static int run(const char *args) { return tu_run_cli(dir, args); }
static char *out_file(const char *name) { char p[256]; snprintf(p, sizeof p, "%s/%s", dir, name); return tu_slurp(p); }

/* A 3-class block model of 60 nodes (same construction as test_graph.c, smaller). */
static void write_graph(const char *sub)
{
    char p[256]; snprintf(p, sizeof p, "%s/%s", dir, sub); mkdir(p, 0700);
    const int n = 60, K = 3;
    al_rng r; al_rng_seed(&r, 78, 5);
    size_t cap = 1 << 16; char *buf = malloc(cap); size_t o = 0;
    for (int i = 0; i < n; i++) {
        int y = i % K, a = y * 4 + (int)al_rng_below(&r, 4), b = 12 + (int)al_rng_below(&r, 4);
        o += (size_t)snprintf(buf + o, cap - o, "%d %d:1 %d:1\n", y, a + 1, b + 1);
    }
    write_file(sub, "features.libsvm", buf);
    o = 0;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (al_rng_uniform(&r) < ((i % K == j % K) ? 0.2f : 0.02f))
                o += (size_t)snprintf(buf + o, cap - o, "%d %d\n%d %d\n", i, j, j, i);
    write_file(sub, "edges.txt", buf);
    write_file(sub, "train.idx", "0\n1\n2\n3\n4\n5\n");
    o = 0; for (int i = 6; i < 20; i++) o += (size_t)snprintf(buf + o, cap - o, "%d\n", i);
    write_file(sub, "val.idx", buf);
    o = 0; for (int i = 20; i < 60; i++) o += (size_t)snprintf(buf + o, cap - o, "%d\n", i);
    write_file(sub, "test.idx", buf);
    free(buf);
}

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_graph_cli_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    write_graph("g");
    return 0;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[256]; snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

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

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
/* Sort the lines of s in place. */
static void sort_lines(char *s)
{
    int n = count_lines(s), k = 0;
    char **l = malloc((size_t)(n + 1) * sizeof *l), *copy = strdup(s);
    for (char *p = copy, *e; (e = strchr(p, '\n')) != NULL; p = e + 1) { *e = 0; l[k++] = p; }
    qsort(l, (size_t)k, sizeof *l, cmp_str);
    char *o = s;
    for (int i = 0; i < k; i++) { size_t m = strlen(l[i]); memcpy(o, l[i], m); o += m; *o++ = '\n'; }
    *o = 0;
    free(l); free(copy);
}

static void test_train_csv_seeds_attention(void **st)
{
    (void)st;
    char args[1024];
    snprintf(args, sizeof args, "train --task graph --data %s/g --model gat --epochs 12 --seeds 1-2 --threads 1 --quiet "
             "--csv %s/a.csv --attention %s/att.csv --save %s/m.safetensors", dir, dir, dir, dir);
    int rc = run(args);
    if (rc) { char *e = out_file("err.txt"); fail_msg("train exited %d: %s", rc, e ? e : "?"); }
    char *out = out_file("out.txt");
    assert_non_null(strstr(out, "g gat seed 1: test_acc"));
    assert_non_null(strstr(out, "g gat seed 2: test_acc"));
    assert_non_null(strstr(out, "+-"));
    assert_non_null(strstr(out, "over 2 seeds"));
    free(out);
    char *csv = out_file("a.csv");
    assert_non_null(csv);
    /* header + 2 runs × (12 epochs + the restored best model) */
    assert_int_equal(count_lines(csv), 1 + 2 * 13);
    assert_true(!strncmp(csv, "run_id,task,dataset,model,train_size,seed,epoch,", 48));
    assert_non_null(strstr(csv, ",graph,g,gat,6,1,1,"));
    assert_non_null(strstr(csv, ",graph,g,gat,6,2,12,"));
    /* each run's last row: empty timing columns, epoch = a best epoch in 1..12, empty word scores */
    al_results res; al_error re = {{0}};
    if (al_results_parse(csv, strlen(csv), "a.csv", &res, &re) != AL_OK) fail_msg("%s", re.msg);
    int finals = 0;
    for (int i = 0; i < res.n; i++) {
        const al_result_row *w = &res.row[i];
        assert_true(isnan(w->unseen_acc) && isnan(w->ambig_acc));
        if (isnan(w->epoch_seconds) && isnan(w->samples_per_second)) {
            finals++;
            assert_string_equal(w->status, "done");
            assert_in_range(w->epoch, 1, 12);
        }
    }
    al_results_free(&res);
    assert_int_equal(finals, 2);
    /* checkpoints and attention per seed */
    char *att = out_file("att-seed1.csv"), *att2 = out_file("att-seed2.csv");
    assert_non_null(att); assert_non_null(att2);
    char p[256]; snprintf(p, sizeof p, "%s/m-seed2.safetensors", dir);
    assert_int_equal(access(p, R_OK), 0);
    assert_true(!strncmp(att, "layer,head,src,dst,weight\n", 26));
    /* every (layer, head, dst) sums to one over its sources */
    static double sum[2][8][60];
    memset(sum, 0, sizeof sum);
    int rows = 0;
    char *line = strchr(att, '\n') + 1;
    while (*line) {
        int l, h, s, d; double w;
        assert_int_equal(sscanf(line, "%d,%d,%d,%d,%lf", &l, &h, &s, &d, &w), 5);
        assert_true(l >= 1 && l <= 2 && h >= 0 && h < 8 && s >= 0 && s < 60 && d >= 0 && d < 60);
        sum[l - 1][h][d] += w; rows++;
        line = strchr(line, '\n') + 1;
    }
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < (l ? 1 : 8); h++)
            for (int d = 0; d < 60; d++) if (fabs(sum[l][h][d] - 1) > 1e-4) fail_msg("layer %d head %d dst %d: weights sum to %g", l + 1, h, d, sum[l][h][d]);
    assert_int_equal(rows % 9, 0);   /* 8 heads + 1, the same edges each */
    free(att); free(att2);

    /* the same runs again, two at a time (one thread each): the same CSV rows apart from timing
     * (their order may interleave, so compare sorted lines) */
    snprintf(args, sizeof args, "train --task graph --data %s/g --model gat --epochs 12 --seeds 1-2 --threads 2 --quiet "
             "--csv %s/b.csv", dir, dir);
    assert_int_equal(run(args), 0);
    char *csv2 = out_file("b.csv");
    char *s1 = strip_timing(csv), *s2 = strip_timing(csv2);
    sort_lines(s1); sort_lines(s2);
    assert_string_equal(s1, s2);
    free(s1); free(s2); free(csv); free(csv2);
}

static void test_other_models_and_splits(void **st)
{
    (void)st;
    char args[1024];
    snprintf(args, sizeof args, "train --task graph --data %s/g --model gcn --epochs 5 --labels-per-class 3 --seed 4 --threads 1 --quiet --csv %s/c.csv", dir, dir);
    assert_int_equal(run(args), 0);
    char *csv = out_file("c.csv");
    assert_int_equal(count_lines(csv), 1 + 6);
    assert_non_null(strstr(csv, ",graph,g,gcn,6,4,1,"));   /* 3 asked per class, only 2 per class outside val/test */
    free(csv);
    char *note = out_file("err.txt");   /* ... and a note says so, even with --quiet */
    assert_non_null(strstr(note, "--labels-per-class 3 asks for 9 training nodes"));
    free(note);
    snprintf(args, sizeof args, "train --task graph --data %s/g --model mlp --epochs 3 --train-frac 0.5 --threads 1 --quiet", dir);
    assert_int_equal(run(args), 0);
    char *out = out_file("out.txt");
    assert_non_null(strstr(out, "train_size 3 "));   /* candidates: 60 − 14 val − 40 test = 6; half of them */
    free(out);
}

/* gatv2, gt, gt-full: the same CSV rows (timing aside) with 1 and with 2 threads in one run, and with
 * two seeds run side by side. */
static void test_new_models_threads(void **st)
{
    (void)st;
    const char *models[] = {"gatv2", "gt", "gt-full"};
    for (int i = 0; i < 3; i++) {
        char *csv[3];
        const char *how[3] = {"--seeds 1-2 --threads 1 --sequential", "--seeds 1-2 --threads 2 --sequential", "--seeds 1-2 --threads 2"};
        for (int k = 0; k < 3; k++) {
            char args[1024], name[32];
            snprintf(name, sizeof name, "t%d.csv", k);
            snprintf(args, sizeof args, "train --task graph --data %s/g --model %s --epochs 6 %s --quiet --csv %s/%s", dir,
                     models[i], how[k], dir, name);
            assert_int_equal(run(args), 0);
            char *raw = out_file(name);
            assert_non_null(raw);
            csv[k] = strip_timing(raw);
            sort_lines(csv[k]);
            free(raw);
            snprintf(args, sizeof args, "%s/%s", dir, name);
            unlink(args);
        }
        if (strcmp(csv[0], csv[1]) || strcmp(csv[0], csv[2])) fail_msg("%s: the CSV rows depend on the threads", models[i]);
        for (int k = 0; k < 3; k++) free(csv[k]);
    }
}

/* eval --task graph rebuilds a saved model (gat: heads from the metadata, hidden from the shapes) and
 * reproduces the test accuracy train printed; without --task the checkpoint's own task is used. */
static void test_eval_graph_checkpoint(void **st)
{
    (void)st;
    const char *models[] = {"gat", "gcn", "mlp", "gatv2", "gt", "gt-full"};
    for (int i = 0; i < 6; i++) {
        char args[1024];
        snprintf(args, sizeof args, "train --task graph --data %s/g --model %s --epochs 15 --hidden 6 --seed 3 --threads 1 "
                 "--quiet --save %s/e.safetensors", dir, models[i], dir);
        assert_int_equal(run(args), 0);
        char *out = out_file("out.txt");
        char *t = strstr(out, "test_acc ");
        assert_non_null(t);
        double want = strtod(t + 9, NULL) / 100;
        free(out);
        for (int k = 0; k < 2; k++) {
            snprintf(args, sizeof args, "eval %s --load %s/e.safetensors --data %s/g --threads 1", k ? "" : "--task graph", dir, dir);
            int rc = run(args);
            if (rc) { char *e = out_file("err.txt"); fail_msg("eval exited %d: %s", rc, e ? e : "?"); }
            out = out_file("out.txt");
            t = strstr(out, "test_acc ");
            assert_non_null(t);
            assert_non_null(strstr(out, "test_nodes 40 "));
            double got = strtod(t + 9, NULL);
            if (fabs(got - want) > 0.006) fail_msg("%s: eval test_acc %.4f, train said %.4f", models[i], got, want);
            free(out);
        }
    }
    /* a graph with other features is refused */
    char args[512];
    snprintf(args, sizeof args, "eval --task graph --load %s/e.safetensors --data cora --threads 1", dir);
    assert_int_not_equal(run(args), 0);
}

static void test_errors(void **st)
{
    (void)st;
    char args[1024];
    assert_int_equal(run("train --task graph --help"), 0);
    char *out = out_file("out.txt");
    assert_non_null(strstr(out, "usage: attnlab train --task graph"));
    free(out);
    assert_int_equal(run("train --task graph --model gat --frobnicate"), 2);
    char *err = out_file("err.txt");
    assert_non_null(strstr(err, "unknown option '--frobnicate'"));
    assert_int_equal(count_lines(err), 1);
    free(err);
    assert_int_equal(run("train --task graph --model gin"), 2);
    assert_int_equal(run("train --task graph --model gcn --seeds 3-1"), 2);
    /* a malformed dataset: FILE:LINE on stderr, exit 1 */
    write_graph("bad");
    write_file("bad", "edges.txt", "0 1\n1 60\n");
    snprintf(args, sizeof args, "train --task graph --data %s/bad --model gcn --quiet", dir);
    assert_int_equal(run(args), 1);
    err = out_file("err.txt");
    assert_non_null(strstr(err, "bad/edges.txt:2: node id 60 out of range [0, 60)"));
    free(err);
    assert_int_equal(run("bench graph --help"), 0);
    assert_int_equal(run("bench graph --nope"), 2);
}

static void test_bench_small(void **st)
{
    (void)st;
    char args[512];
    snprintf(args, sizeof args, "bench graph --graphs %s/g,2000x10000 --epochs 2 --threads 1", dir);
    int rc = run(args);
    if (rc) { char *e = out_file("err.txt"); fail_msg("bench exited %d: %s", rc, e ? e : "?"); }
    char *out = out_file("out.txt");
    assert_non_null(strstr(out, "random-2000-10000"));
    int gat = 0;
    for (char *p = out; (p = strstr(p, " gat ")) != NULL; p++) gat++;
    assert_int_equal(gat, 2);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_csv_seeds_attention),
        cmocka_unit_test(test_other_models_and_splits),
        cmocka_unit_test(test_new_models_threads),
        cmocka_unit_test(test_eval_graph_checkpoint),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_bench_small),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
