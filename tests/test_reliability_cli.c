/* test_reliability_cli.c — the reliability flags and checks of bin/attnlab, through $ATTNLAB_BIN:
 * --max-memory is accepted by every command that loads data or builds models (a bad value is one line
 * naming the flag), a tiny one makes loading Cora or Fashion-MNIST fail with the size asked and the
 * limit, a big one works, sweep passes it to its runs; output files (--save, --csv, --out, --logits,
 * --attention, --script, --plot, data import --out) are checked before anything is loaded, and a FIFO,
 * a directory or /dev/null as one is refused; a link to a regular file stays a link; eval refuses a
 * checkpoint with a NaN weight or a std of 0. */
#include "testutil.h"
#include "attnlab/checkpoint.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];
static int setup(void **st) { (void)st; snprintf(dir, sizeof dir, "/tmp/attnlab-relcli-XXXXXX"); return mkdtemp(dir) ? 0 : -1; }
static int teardown(void **st)
{
    (void)st;
    char cmd[128]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return tu_system(cmd) == 0 ? 0 : -1;
}
static int count_lines(const char *s) { int n = 0; for (; *s; s++) n += *s == '\n'; return n; }

/* `attnlab ARGS` (%s in fmt: the test's directory, every time) must exit want and print exactly one
 * line on stderr that holds each of the NULL-terminated strings after want. */
static void expect_line(int want, const char *fmt, ...)
{
    char args[2048], a[8][256];
    int k = 0;
    va_list ap; va_start(ap, fmt);
    const char *s;
    while (k < 8 && (s = va_arg(ap, const char *))) { snprintf(a[k], sizeof a[k], "%s", s); k++; }
    va_end(ap);
    snprintf(args, sizeof args, fmt, dir, dir, dir, dir);
    int rc = tu_run_cli(dir, args);
    char ep[128]; snprintf(ep, sizeof ep, "%s/err.txt", dir);
    char *err = tu_slurp(ep);
    assert_non_null(err);
    int ok = rc == want && count_lines(err) == 1;
    for (int i = 0; ok && i < k; i++) ok = strstr(err, a[i]) != NULL;
    if (!ok) fail_msg("attnlab %s: exit %d (want %d), stderr:\n%s(want one line with '%s'%s)", args, rc, want, err, a[0], k > 1 ? " ..." : "");
    free(err);
}
#define EXPECT_LINE(want, fmt, ...) expect_line(want, fmt, __VA_ARGS__, (const char *)NULL)

static int have_fashion_mnist(void)
{
    int64_t n = 0; al_error e = {{0}};
    return al_fashion_mnist_count(NULL, &n, NULL, &e) == AL_OK && n > 0;
}

/* Every command that loads data or builds models takes --max-memory; a bad value is one line. */
static void test_max_memory_flag_everywhere(void **st)
{
    (void)st;
    static const char *cmds[] = {
        "train --model cnn", "train --task graph --model gcn", "train --task sequence --model fc", "eval --load x.st",
        "predict --load x.st y.png", "tag --load x.st", "attnmap --load x.st --out a.png",
        "sweep --task graph --models gcn --planetoid --seeds 1 --csv s.csv", "data import --format linqs --in a --out b",
        "bench train", "bench graph"};
    static const char *bad[] = {"2Q", "0", "-1G", "1.5G", "lots", "99999999999T"};
    char fmt[512];
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        for (size_t j = 0; j < sizeof bad / sizeof bad[0]; j++) {
            snprintf(fmt, sizeof fmt, "%s --max-memory %s", cmds[i], bad[j]);
            char val[64]; snprintf(val, sizeof val, "'%s'", bad[j]);
            if (!strcmp(bad[j], "99999999999T")) EXPECT_LINE(2, fmt, "--max-memory 99999999999T does not fit in 64 bits");
            else EXPECT_LINE(2, fmt, "--max-memory expects a size such as 512M or 2G", val);
        }
}

/* A tiny budget refuses Cora and Fashion-MNIST with the size asked and the limit; a big one works; a
 * sweep's runs get it. */
static void test_max_memory_limits_loading(void **st)
{
    (void)st;
    EXPECT_LINE(1, "train --task graph --model gcn --data cora --max-memory 64K --epochs 2 --quiet",
                "cora/features.libsvm: needs 309.2 KiB, more than the memory budget of 64.0 KiB",
                "raise it with --max-memory");
    assert_int_equal(tu_run_cli(dir, "train --task graph --model gcn --data cora --max-memory 4G --epochs 2 --quiet"), 0);
    EXPECT_LINE(1, "eval --task graph --load %s/none.st --max-memory 1K --quiet", "none.st: cannot open checkpoint");
    /* the sweep's run fails on the budget (its log is shown), then runs within a big one */
    char args[512];
    snprintf(args, sizeof args, "sweep --task graph --models gcn --planetoid --seeds 1 --epochs 2 --csv %s/s.csv --max-memory 64K", dir);
    assert_int_equal(tu_run_cli(dir, args), 1);
    char ep[128]; snprintf(ep, sizeof ep, "%s/err.txt", dir);
    char *err = tu_slurp(ep);
    assert_non_null(err);
    if (!strstr(err, "more than the memory budget of 64.0 KiB")) fail_msg("sweep's run did not get --max-memory:\n%s", err);
    free(err);
    snprintf(args, sizeof args, "sweep --task graph --models gcn --planetoid --seeds 1 --epochs 2 --csv %s/s.csv --max-memory 4G", dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    if (!have_fashion_mnist()) { print_message("Fashion-MNIST not found: its --max-memory checks skipped\n"); return; }
    EXPECT_LINE(1, "train --model cnn --max-memory 10M --epochs 1 --quiet",
                "train-images-idx3-ubyte", "header declares 60000 images of 28x28: needs 45.1 MiB, more than the memory budget of 10.0 MiB");
    assert_int_equal(tu_run_cli(dir, "train --model cnn --max-memory 2G --train-size 100 --test-size 100 --epochs 1 --quiet"), 0);
}

/* Commands whose output (flag) is refused before any work: exit 2, one line naming flag and why. */
typedef struct out_case { const char *args, *flag, *why; } out_case;
static void expect_refused(const out_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) EXPECT_LINE(2, c[i].args, c[i].flag, c[i].why);
}

/* The directory holds nothing but the CLI's out.txt and err.txt and the test's file "plain". */
static void assert_dir_clean(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && strcmp(e->d_name, "out.txt") && strcmp(e->d_name, "err.txt") && strcmp(e->d_name, "plain"))
            fail_msg("%s/%s left behind", dir, e->d_name);
    closedir(d);
}

/* Each command's outputs are checked before anything is loaded: the data and models named here do
 * not exist, so an error about them would mean the output came second. */
static void test_outputs_checked_first(void **st)
{
    (void)st;
    char plain[128]; snprintf(plain, sizeof plain, "%s/plain", dir);
    FILE *f = fopen(plain, "w");
    assert_non_null(f); fputs("x\n", f); fclose(f);
    static const out_case cases[] = {
        {"train --model cnn --data /nonexistent --save %s/no/m.st", "--save", "/no' does not exist"},
        {"train --model sa --data /nonexistent --csv %s", "--csv", ": is a directory, expected a file name"},
        {"train --model cnn --csv %s/plain", "--csv", "plain: the header line is not attnlab's results header"},
        {"train --task graph --model gat --data /nonexistent --attention %s/plain/a.csv", "--attention", "plain' is not a directory"},
        {"train --task graph --model gcn --data /nonexistent --save %s/", "--save", "is a directory"},
        {"train --task sequence --model fc --data /nonexistent --csv %s/no/r.csv", "--csv", "does not exist"},
        {"train --task sequence --model fc --data /nonexistent --save %s", "--save", "is a directory"},
        {"eval --load /nonexistent.st --logits %s/no/l.csv", "--logits", "does not exist"},
        {"attnmap --load /nonexistent.st --out %s", "--out", "is a directory"},
        {"plot /nonexistent.csv --out %s/no/p.png", "--out", "does not exist"},
        {"plot /nonexistent.csv --out %s/p.png --script %s/no/p.gp", "--script", "does not exist"},
        {"sweep --task graph --models gcn --planetoid --seeds 1 --csv %s", "--csv", "is a directory"},
        {"sweep --preset demo --csv %s/d.csv --plot %s/no/d.png", "--plot", "does not exist"},
        {"data import --format linqs --in /nonexistent --out %s/plain", "--out", "not a directory"}};
    expect_refused(cases, sizeof cases / sizeof cases[0]);
    assert_dir_clean();
    /* a writable target passes, the data comes next, and no probe file is left behind */
    EXPECT_LINE(1, "train --model cnn --data /nonexistent --save %s/m.st --csv %s/r.csv --quiet", "/nonexistent");
    EXPECT_LINE(1, "attnmap --load /nonexistent.st --out %s/a.png", "/nonexistent.st");
    assert_dir_clean();
}

/* Outputs onto a FIFO, a directory or /dev/null are one line naming what the file is, before any work
 * (the data named does not exist), and the FIFO stays a FIFO; a --save onto a symbolic link to a
 * regular file keeps the link and replaces the file it leads to. */
static void test_special_outputs_refused(void **st)
{
    (void)st;
    char p[128]; snprintf(p, sizeof p, "%s/fifo", dir);
    assert_int_equal(mkfifo(p, 0644), 0);
    snprintf(p, sizeof p, "%s/adir", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    static const out_case cases[] = {
        {"train --model cnn --data /nonexistent --save %s/fifo", "--save", "fifo: is a FIFO, not a regular file"},
        {"train --task graph --model gcn --data /nonexistent --save %s/fifo", "--save", "fifo: is a FIFO, not a regular file"},
        {"train --model cnn --data /nonexistent --csv %s/fifo", "--csv", "fifo: is a FIFO, not a regular file"},
        {"attnmap --load /nonexistent.st --out %s/fifo", "--out", "fifo: is a FIFO, not a regular file"},
        {"plot /nonexistent.csv --out %s/fifo", "--out", "fifo: is a FIFO, not a regular file"},
        {"eval --load /nonexistent.st --logits %s/fifo", "--logits", "fifo: is a FIFO, not a regular file"},
        {"train --model cnn --data /nonexistent --save %s/adir", "--save", "adir: is a directory"},
        {"plot /nonexistent.csv --out %s/adir", "--out", "adir: is a directory"},
        {"train --task graph --model gcn --data /nonexistent --save /dev/null", "--save", "/dev/null: is a character device, not a regular file"}};
    expect_refused(cases, sizeof cases / sizeof cases[0]);
    struct stat sb;
    snprintf(p, sizeof p, "%s/fifo", dir);
    assert_int_equal(lstat(p, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    assert_int_equal(tu_tmp_files(dir), 0);
    /* a link to a regular file: the link stays, the file behind it becomes the checkpoint */
    char target[128], link[128], args[512];
    snprintf(target, sizeof target, "%s/adir/model.st", dir); snprintf(link, sizeof link, "%s/model.st", dir);
    FILE *f = fopen(target, "w"); assert_non_null(f); fputs("old\n", f); fclose(f);
    assert_int_equal(symlink("adir/model.st", link), 0);
    snprintf(args, sizeof args, "train --task graph --model gcn --data tests/bad-inputs/graph/ok --epochs 1 --quiet --save %s", link);
    assert_int_equal(tu_run_cli(dir, args), 0);
    assert_int_equal(lstat(link, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    char *meta = NULL; al_error e = {{0}};
    if (al_safetensors_read_meta(target, &meta, &e) != AL_OK) fail_msg("%s is not the checkpoint: %s", target, e.msg);
    free(meta);
    assert_int_equal(tu_tmp_files(dir), 0);
    snprintf(p, sizeof p, "%s/adir", dir);
    assert_int_equal(tu_tmp_files(p), 0);
}

/* A small image checkpoint made by the library, then a NaN poked into its weights, or saved with a std of 0. */
static void test_eval_refuses_bad_checkpoints(void **st)
{
    (void)st;
    al_model_config cfg; al_model m; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "sa", 1, 28, 28, 10, &e), AL_OK);
    cfg.dim = 8; cfg.hidden = 16; cfg.depth = 1; cfg.heads = 1; cfg.patch = 7;
    assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_OK);
    float mean[4] = {0.3f}, sd[4] = {0.f};
    char p[128];
    snprintf(p, sizeof p, "%s/std0.st", dir);
    assert_int_equal(al_model_save(p, &m, mean, sd, NULL, 0, &e), AL_OK);
    sd[0] = 0.35f;
    snprintf(p, sizeof p, "%s/nan.st", dir);
    assert_int_equal(al_model_save(p, &m, mean, sd, NULL, 0, &e), AL_OK);
    al_model_free(&m);
    size_t n; char *b = tu_slurp_n(p, &n);
    assert_non_null(b);
    uint64_t hl = 0; for (int k = 7; k >= 0; k--) hl = hl << 8 | (unsigned char)b[k];
    float nan = NAN;
    memcpy(b + 8 + hl + 40, &nan, 4);   /* the first tensor's 11th value */
    FILE *f = fopen(p, "wb"); assert_non_null(f); assert_int_equal(fwrite(b, 1, n, f), n); fclose(f);
    free(b);
    EXPECT_LINE(1, "eval --load %s/nan.st --quiet", "nan.st: tensor 'embed.weight' holds NaN at element 10");
    EXPECT_LINE(1, "eval --load %s/std0.st --quiet", "std0.st: metadata 'std' is \"0\"");
    EXPECT_LINE(1, "predict --load %s/nan.st x.png --quiet", "nan.st: tensor 'embed.weight' holds NaN");
    EXPECT_LINE(1, "attnmap --load %s/std0.st --out %s/a.png --quiet", "std0.st: metadata 'std'");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_max_memory_flag_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(test_max_memory_limits_loading, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outputs_checked_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_special_outputs_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_eval_refuses_bad_checkpoints, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
