/* test_results.c — results CSV reader: parsing, grouping into runs, mean ± std, error lines. */
#include "testutil.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H AL_CSV_HEADER "\n"

/* Two image models, two sizes; runs a and b interleave (as from parallel appends). */
static const char *csv_ok =
    H
    "a,image,fashion-mnist,sa,1000,1,1,2.1,0.3,0.4,0.41,1.5,666,1234\n"
    "b,image,fashion-mnist,sa,1000,2,1,2.0,0.3,0.4,0.52,1.5,666,1234\n"
    "a,image,fashion-mnist,sa,1000,1,2,1.1,0.6,0.7,0.80,2.5,400,1234\n"
    "b,image,fashion-mnist,sa,1000,2,2,1.0,0.6,0.7,0.90,2.5,400,1234\n"
    "c,image,fashion-mnist,cnn,5000,1,1,0.9,0.7,0.7,0.75,3,1666,999\n"
    "d,image,fashion-mnist,cnn,500,1,1,1.9,0.5,,0.60,,,999\n";

static void test_parse_and_group(void **st)
{
    (void)st;
    al_results r; al_error e = {{0}};
    assert_int_equal(al_results_parse(csv_ok, strlen(csv_ok), "x.csv", &r, &e), AL_OK);
    assert_int_equal(r.n, 6);
    assert_int_equal(r.nrun, 4);
    assert_string_equal(r.row[0].run_id, "a");
    assert_string_equal(r.row[0].dataset, "fashion-mnist");
    assert_int_equal(r.row[0].train_size, 1000);
    assert_int_equal(r.row[1].seed, 2);
    assert_int_equal(r.row[2].epoch, 2);
    assert_int_equal(r.row[0].params, 1234);
    assert_int_equal(r.row[0].line, 2);
    assert_true(fabs(r.row[0].samples_per_second - 666) < 1e-12);
    /* run a = rows 0, 2; run b = rows 1, 3 */
    int ka = al_results_find_run(&r, "a"), kb = al_results_find_run(&r, "b");
    assert_int_equal(ka, 0); assert_int_equal(kb, 1);
    assert_int_equal(r.run[ka].first, 0); assert_int_equal(r.run[ka].last, 2); assert_int_equal(r.run[ka].nrows, 2);
    assert_int_equal(r.next[0], 2); assert_int_equal(r.next[2], -1);
    assert_int_equal(r.run[kb].last, 3);
    assert_int_equal(al_results_find_run(&r, "zz"), -1);
    /* empty numeric fields read as NaN */
    assert_true(isnan(r.row[5].val_acc));
    assert_true(isnan(r.row[5].epoch_seconds));
    al_results_free(&r);

    /* an empty file and a header-only file are empty result sets */
    assert_int_equal(al_results_parse("", 0, "e.csv", &r, &e), AL_OK);
    assert_int_equal(r.n, 0); assert_int_equal(r.nrun, 0);
    al_results_free(&r);
    assert_int_equal(al_results_parse(H, strlen(H), "h.csv", &r, &e), AL_OK);
    assert_int_equal(r.n, 0);
    al_results_free(&r);
}

static void test_mean_std(void **st)
{
    (void)st;
    double m, s;
    al_mean_std((double[]){2, 4, 4, 4, 5, 5, 7, 9}, 8, &m, &s);
    assert_true(fabs(m - 5.0) < 1e-12);
    assert_true(fabs(s - sqrt(32.0 / 7.0)) < 1e-12);   /* sample std, n - 1 */
    al_mean_std((double[]){0.7}, 1, &m, &s);
    assert_true(fabs(m - 0.7) < 1e-12 && s == 0.0);
}

static void test_summarize(void **st)
{
    (void)st;
    al_results r; al_error e = {{0}}; al_summary s;
    assert_int_equal(al_results_parse(csv_ok, strlen(csv_ok), "x.csv", &r, &e), AL_OK);
    assert_int_equal(al_results_summarize(&r, &s, &e), AL_OK);
    /* sorted by model then size: cnn 500, cnn 5000, sa 1000 */
    assert_int_equal(s.n, 3);
    assert_string_equal(s.grp[0].model, "cnn"); assert_int_equal(s.grp[0].train_size, 500);
    assert_string_equal(s.grp[1].model, "cnn"); assert_int_equal(s.grp[1].train_size, 5000);
    assert_string_equal(s.grp[2].model, "sa");  assert_int_equal(s.grp[2].train_size, 1000);
    /* sa 1000: final rows of a and b are 0.80 and 0.90 (not the epoch-1 values) */
    assert_int_equal(s.grp[2].nruns, 2);
    assert_true(fabs(s.grp[2].mean - 0.85) < 1e-12);
    assert_true(fabs(s.grp[2].std - sqrt(0.005)) < 1e-12);
    assert_true(fabs(s.grp[2].mean_epochs - 2) < 1e-12);
    assert_true(fabs(s.grp[2].mean_seconds - 4.0) < 1e-12);   /* 1.5 + 2.5 per run */
    assert_int_equal(s.grp[0].nruns, 1);
    assert_true(fabs(s.grp[0].mean - 0.60) < 1e-12 && s.grp[0].std == 0.0);
    assert_true(s.grp[0].mean_seconds == 0.0);                 /* empty timing column */
    assert_int_equal(s.grp[1].params, 999);
    al_summary_free(&s);
    al_results_free(&r);
}

/* Each malformed text must fail with "name:LINE:" and a hint of what is wrong. */
static void expect_error(const char *text, const char *where, const char *what)
{
    al_results r; al_error e = {{0}};
    assert_int_equal(al_results_parse(text, strlen(text), "bad.csv", &r, &e), AL_ERR);
    if (!strstr(e.msg, where) || !strstr(e.msg, what))
        fail_msg("error \"%s\" should contain \"%s\" and \"%s\"", e.msg, where, what);
    assert_null(r.row);
    assert_int_equal(r.n, 0);
}

static void test_malformed(void **st)
{
    (void)st;
    expect_error(H "a,image,f,sa,1000,1,1,2.1,0.3,0.4,0.41,1.5,666,1\n"
                   "a,image,f,sa,1000,1,2,2.1,0.3,0.4,0.41,1.5,666\n", "bad.csv:3:", "fields");
    expect_error(H "a,image,f,sa,1000,1,1,2.1,0.3,0.4,0.41,1.5,666,1,9\n", "bad.csv:2:", "fields");
    expect_error(H "a,image,f,sa,10x0,1,1,2.1,0.3,0.4,0.41,1.5,666,1\n", "bad.csv:2:", "train_size");
    expect_error(H "a,image,f,sa,1000,1,1,2.1,0.3,0.4,0.4.1,1.5,666,1\n", "bad.csv:2:", "test_acc");
    expect_error(H "a,image,f,sa,1000,1,,2.1,0.3,0.4,0.41,1.5,666,1\n", "bad.csv:2:", "epoch");
    expect_error(H "\n", "bad.csv:2:", "fields");
    expect_error("run_id,task\n", "bad.csv:1:", "header");
    /* a torn last row (killed writer) is reported, never half-read */
    expect_error(H "a,image,f,sa,1000,1,1,2.1,0.3,0.4,0.4", "bad.csv:2:", "incomplete");
}

static void test_read_file(void **st)
{
    (void)st;
    char path[] = "/tmp/attnlab_test_results_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, csv_ok, strlen(csv_ok)), (ssize_t)strlen(csv_ok));
    close(fd);
    al_results r; al_error e = {{0}};
    assert_int_equal(al_results_read(path, &r, &e), AL_OK);
    assert_int_equal(r.n, 6);
    al_results_free(&r);
    unlink(path);
    al_error e2 = {{0}};
    assert_int_equal(al_results_read(path, &r, &e2), AL_ERR);
    assert_non_null(strstr(e2.msg, path));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_group),
        cmocka_unit_test(test_mean_std),
        cmocka_unit_test(test_summarize),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
