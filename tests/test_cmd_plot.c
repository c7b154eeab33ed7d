/* test_cmd_plot.c — `attnlab plot` end to end through $ATTNLAB_BIN: a trade-off plot is a PNG and
 * leaves no temporary file; a narrow sweep (less than two decades of sizes) gets its sizes as tick
 * labels (gnuplot's log axis would label none); an output that cannot be written is one error line
 * and nothing on stdout, decided before any work; curves of runs of any length. */
#include "testutil.h"
#include "attnlab/io.h"
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static int run(const char *args) { return tu_run_cli(dir, args); }
static char *slurp(const char *name)   /* a file of the test's directory */
{
    char p[256]; snprintf(p, sizeof p, "%s/%s", dir, name);
    return tu_slurp(p);
}
/* A results CSV: models a, b at sizes s[0..ns) x seeds 1-2, two epochs each. */
static void write_csv(const char *name, const long *sz, int ns)
{
    char p[256]; snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fprintf(f, "run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,"
               "epoch_seconds,samples_per_second,params\n");
    int id = 0;
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < ns; i++)
            for (int seed = 1; seed <= 2; seed++, id++)
                for (int ep = 1; ep <= 2; ep++)
                    fprintf(f, "%016x,image,toy,%s,%ld,%d,%d,0.5,0.8,,%.4f,1.0,100,1000\n", id, m ? "b" : "a", sz[i],
                            seed, ep, 0.5 + 0.1 * m + 0.01 * i + 0.001 * seed);
    fclose(f);
}
/* A sequence results CSV (current header): models a, b at sizes 250 and 1000 x seeds 1-2, one epoch,
 * test_acc 0.8 + ..., unseen_acc 0.4 + 0.1·model + 0.001·seed, ambig_acc 0.6 + 0.1·model. */
static void write_seq_csv(const char *name)
{
    char p[256]; snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fprintf(f, "%s\n", AL_CSV_HEADER);
    static const long sz[2] = {250, 1000};
    int id = 0;
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 2; i++)
            for (int seed = 1; seed <= 2; seed++, id++)
                fprintf(f, "%016x,sequence,ewt,%s,%ld,%d,1,0.5,0.8,,%.4f,1.0,100,1000,window=2,done,%.4f,%.4f,,\n", id,
                        m ? "b" : "a", sz[i], seed, 0.8 + 0.01 * i, 0.4 + 0.1 * m + 0.001 * seed, 0.6 + 0.1 * m);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/attnlab-plot-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}
static int teardown(void **state)
{
    (void)state;
    char cmd[128]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}
static int have_gnuplot(void) { return system("command -v gnuplot > /dev/null 2>&1") == 0; }

static void test_narrow_sweep_labels_its_sizes(void **state)
{
    (void)state;
    write_csv("narrow.csv", (long[]){500, 1000}, 2);
    char args[512];
    snprintf(args, sizeof args, "plot %s/narrow.csv --out %s/n.png --script %s/n.gp", dir, dir, dir);
    int rc = run(args);
    char *gp = slurp("n.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set xtics (500, 1000)"));
    free(gp);
    write_csv("wide.csv", (long[]){100, 1000, 60000}, 3);      /* over two decades: gnuplot's own ticks */
    snprintf(args, sizeof args, "plot %s/wide.csv --out %s/w.png --script %s/w.gp", dir, dir, dir);
    int rc2 = run(args);
    gp = slurp("w.gp");
    assert_non_null(gp);
    assert_null(strstr(gp, "set xtics ("));
    free(gp);
    if (!have_gnuplot()) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
}

static void test_png_written_atomically(void **state)
{
    (void)state;
    if (!have_gnuplot()) skip();
    write_csv("r.csv", (long[]){100, 1000, 10000}, 3);
    char args[512]; snprintf(args, sizeof args, "plot %s/r.csv --out %s/r.png", dir, dir);
    assert_int_equal(run(args), 0);
    char *png = slurp("r.png");
    assert_non_null(png);
    assert_memory_equal(png, "\x89PNG", 4);
    free(png);
    DIR *d = opendir(dir); assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) assert_null(strstr(e->d_name, ".tmp."));
    closedir(d);
}

static void test_unwritable_output_is_one_clear_error(void **state)
{
    (void)state;
    write_csv("r.csv", (long[]){100, 1000}, 2);
    char args[512]; snprintf(args, sizeof args, "plot %s/r.csv --out %s/no/such/dir/r.png", dir, dir);
    assert_int_equal(run(args), 2);
    char *out = slurp("out.txt"), *err = slurp("err.txt");
    assert_string_equal(out, "");                   /* never the PNG's bytes on the terminal */
    assert_non_null(strstr(err, "--out"));
    assert_non_null(strstr(err, "does not exist"));
    assert_non_null(strstr(err, "no/such/dir/r.png"));
    int lines = 0; for (char *s = err; *s; s++) lines += *s == '\n';
    assert_int_equal(lines, 1);
    free(out); free(err);
}

/* --metric: the word scores of sequence runs on the y axis (mean over seeds), or a clear error. */
static void test_metric(void **state)
{
    (void)state;
    write_seq_csv("s.csv");
    char args[512];
    snprintf(args, sizeof args, "plot %s/s.csv --out %s/u.png --metric unseen_acc --script %s/u.gp", dir, dir, dir);
    int rc = run(args);
    char *gp = slurp("u.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "set ylabel 'test accuracy on words unseen in train'"));
    assert_non_null(strstr(gp, "set xlabel 'training-set size (sentences)'"));
    assert_non_null(strstr(gp, "250 0.401500 0.000707 2"));     /* model a: mean of 0.401, 0.402 */
    assert_non_null(strstr(gp, "1000 0.501500 0.000707 2"));    /* model b */
    free(gp);
    snprintf(args, sizeof args, "plot %s/s.csv --out %s/c.png --kind curves --metric ambig_acc --script %s/c.gp", dir, dir, dir);
    int rc2 = run(args);
    gp = slurp("c.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "1 0.700000 0.000000 2"));       /* model b at the largest size, epoch 1 */
    free(gp);
    /* an image CSV has no unseen_acc; an unknown metric is a usage error; both one line */
    write_csv("r.csv", (long[]){100, 1000}, 2);
    const struct { const char *args; int rc; const char *msg; } bad[] = {
        {"--metric unseen_acc", 1, "has no unseen_acc values"}, {"--metric val_acc", 2, "--metric: unknown metric 'val_acc'"},
        {"--kind graph-attention --node 1 --metric ambig_acc", 2, "--metric goes with --kind tradeoff or curves"}};
    for (int i = 0; i < 3; i++) {
        snprintf(args, sizeof args, "plot %s/r.csv --out %s/x.png %s", dir, dir, bad[i].args);
        assert_int_equal(run(args), bad[i].rc);
        char *err = slurp("err.txt");
        if (!strstr(err, bad[i].msg)) fail_msg("'%s': %s", bad[i].args, err);
        assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
        free(err);
        assert_null(slurp("x.png"));
    }
    if (!have_gnuplot()) skip();
    assert_int_equal(rc, 0);
    assert_int_equal(rc2, 0);
}

/* Curves of runs of any length: a 1 000-epoch run is drawn to its last epoch (the points were kept in a
 * 16 KiB buffer, so about 690 epochs fitted and gnuplot got a broken data block), and so is the
 * repository's own graph-tradeoff.csv.gz. */
static void test_curves_of_long_runs(void **state)
{
    (void)state;
    char p[256], args[8192];
    snprintf(p, sizeof p, "%s/long.csv", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "%s\n", AL_CSV_HEADER);
    for (int seed = 1; seed <= 2; seed++)
        for (int ep = 1; ep <= 1000; ep++)
            fprintf(f, "%016x,graph,toy,gat,140,%d,%d,0.5,0.8,0.7,%.4f,0.01,100,1000,split=planetoid,%s,,,,\n", seed, seed,
                    ep, 0.5 + 0.0002 * ep + 0.001 * seed, ep == 1000 ? "done" : "");
    assert_int_equal(fclose(f), 0);
    snprintf(args, sizeof args, "plot %s --kind curves --out %s/l.png --script %s/l.gp", p, dir, dir);
    int rc = run(args);
    char *gp = slurp("l.gp");
    assert_non_null(gp);
    assert_non_null(strstr(gp, "\n999 0.701300 0.000707 2\n1000 0.701500 0.000707 2\nEOD\n"));
    free(gp);
    if (have_gnuplot()) assert_int_equal(rc, 0);
    char repo[4096];
    assert_non_null(getcwd(repo, sizeof repo));
    snprintf(args, sizeof args, "plot %s/results/graph-tradeoff.csv.gz --kind curves --out %s/g.png --script %s/g.gp", repo,
             dir, dir);
    rc = run(args);
    gp = slurp("g.gp");
    assert_non_null(gp);
    int open = 0, close = 0;
    for (const char *q = gp; (q = strstr(q, "<< EOD\n")); q++) open++;
    for (const char *q = gp; (q = strstr(q, "\nEOD\n")); q++) close++;
    assert_true(open >= 2);
    assert_int_equal(open, close);
    free(gp);
    if (have_gnuplot()) assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_narrow_sweep_labels_its_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_png_written_atomically, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unwritable_output_is_one_clear_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metric, setup, teardown),
        cmocka_unit_test_setup_teardown(test_curves_of_long_runs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
