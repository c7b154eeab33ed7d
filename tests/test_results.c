/* test_results.c — results CSV reader: parsing, grouping into runs, mean ± std, error lines. */
#include "testutil.h"
#include <sys/stat.h>
#include <zlib.h>
#include "attnlab/io.h"
#include "attnlab/results.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H AL_CSV_HEADER_V1 "\n"   /* most tests: files of attnlab < 0.4 (14 columns) still read */
#define H2 AL_CSV_HEADER_V2 "\n"  /* attnlab 0.4: + config, status */
#define H3 AL_CSV_HEADER "\n"     /* the current format: + unseen_acc, ambig_acc, test_rmse, test_mae */

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
    /* FILE.gz: the same rows through zlib; a cut gzip stream is an error naming the file */
    char gz[64];
    snprintf(gz, sizeof gz, "%s.gz", path);
    gzFile z = gzopen(gz, "wb9");
    assert_non_null(z);
    assert_int_equal(gzwrite(z, csv_ok, (unsigned)strlen(csv_ok)), (int)strlen(csv_ok));
    assert_int_equal(gzclose(z), Z_OK);
    assert_int_equal(al_results_read(gz, &r, &e), AL_OK);
    assert_int_equal(r.n, 6);
    al_results_free(&r);
    struct stat sb;
    assert_int_equal(stat(gz, &sb), 0);
    assert_int_equal(truncate(gz, sb.st_size - 12), 0);
    e2.msg[0] = 0;
    assert_int_equal(al_results_read(gz, &r, &e2), AL_ERR);
    if (!strstr(e2.msg, "cut short or damaged")) fail_msg("%s", e2.msg);
    unlink(gz);
}

/* The 16-column format of 0.4: config and status columns; variants grouped apart, --by merges them,
 * runs without a final "done" row are left out and listed. */
static const char *csv_v2 =
    H2
    "a,image,fm,sa,1000,1,1,2.1,0.3,,0.41,1.5,666,1234,patch=2;pos=learned,\n"
    "a,image,fm,sa,1000,1,2,1.1,0.6,,0.80,2.5,400,1234,patch=2;pos=learned,done\n"
    "b,image,fm,sa,1000,1,2,1.0,0.6,,0.60,2.5,400,1234,patch=4;pos=learned,done\n"
    "c,image,fm,sa,1000,2,2,1.0,0.6,,0.70,2.5,400,1234,patch=4;pos=learned,done\n"
    "d,image,fm,sa,1000,3,1,1.0,0.6,,0.99,2.5,400,1234,patch=4;pos=learned,\n"
    "e,image,fm,cnn,1000,1,2,1.0,0.6,,0.85,2.5,400,99,\"lr=0.001;note=a,b\",done\n";

static void test_config_groups_and_incomplete_runs(void **st)
{
    (void)st;
    al_results r; al_error e = {{0}}; al_summary s;
    assert_int_equal(al_results_parse(csv_v2, strlen(csv_v2), "v2.csv", &r, &e), AL_OK);
    assert_int_equal(r.version, 2);
    assert_int_equal(r.nrun, 5);
    assert_true(isnan(r.row[0].unseen_acc) && isnan(r.row[0].ambig_acc));   /* 0.4 files have none */
    assert_string_equal(r.row[0].config, "patch=2;pos=learned");
    assert_string_equal(r.row[5].config, "lr=0.001;note=a,b");       /* quoted field, comma inside */
    assert_true(r.run[0].complete && r.run[1].complete && !r.run[3].complete);
    assert_int_equal(al_results_summarize(&r, &s, &e), AL_OK);
    /* cnn, sa patch=2, sa patch=4 (run d stopped at epoch 1: not averaged, listed) */
    assert_int_equal(s.n, 3);
    assert_false(al_summary_has_metric(&s, AL_METRIC_UNSEEN_ACC));
    assert_true(al_summary_has_metric(&s, AL_METRIC_TEST_ACC));
    assert_int_equal(s.nincomplete, 1);
    assert_string_equal(r.row[r.run[s.incomplete[0]].last].run_id, "d");
    assert_string_equal(s.grp[1].config, "patch=2;pos=learned");
    assert_int_equal(s.grp[1].nruns, 1);
    assert_int_equal(s.grp[2].nruns, 2);
    assert_true(fabs(s.grp[2].mean - 0.65) < 1e-12);
    char label[128];
    al_summary_label(&s, 1, label, sizeof label);
    assert_string_equal(label, "patch=2");                            /* pos is the same for every sa */
    al_summary_label(&s, 0, label, sizeof label);
    assert_string_equal(label, "");                                   /* cnn has one variant */
    al_summary_free(&s);
    /* --by model merges the variants; --by patch keeps patch only */
    assert_int_equal(al_results_summarize_by(&r, "model", &s, &e), AL_OK);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.grp[1].nruns, 3);
    assert_string_equal(s.grp[1].config, "");
    al_summary_free(&s);
    assert_int_equal(al_results_summarize_by(&r, "patch", &s, &e), AL_OK);
    assert_int_equal(s.n, 3);
    assert_string_equal(s.grp[2].config, "patch=4");
    al_summary_free(&s);
    al_results_free(&r);
    /* a 14-field row under the current header is an error naming the line */
    const char *bad = H2 "a,image,fm,sa,1000,1,1,2.1,0.3,,0.41,1.5,666,1234\n";
    assert_int_equal(al_results_parse(bad, strlen(bad), "b.csv", &r, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "b.csv:2: expected 16"));
}

/* The current format: unseen_acc and ambig_acc at the end, empty for image rows; summaries average
 * each over the runs that have it. */
static const char *csv_v3 =
    H3
    "s1,sequence,ewt,sa,250,1,1,1.5,0.5,,0.80,1.0,900,10,window=-1,,0.50,0.60,,\n"
    "s1,sequence,ewt,sa,250,1,2,1.1,0.7,,0.85,1.0,900,10,window=-1,done,0.55,0.70,,\n"
    "s2,sequence,ewt,sa,250,2,2,1.0,0.7,,0.87,1.0,900,10,window=-1,done,0.65,0.80,,\n"
    "s3,sequence,ewt,sa,250,3,2,1.0,0.7,,0.89,1.0,900,10,window=-1,done,,,,\n"
    "i1,image,fm,cnn,1000,1,1,1.0,0.6,,0.85,2.5,400,99,lr=0.001,done,,,,\n";

static void test_word_scores(void **st)
{
    (void)st;
    al_results r; al_error e = {{0}}; al_summary s;
    assert_int_equal(al_results_parse(csv_v3, strlen(csv_v3), "v3.csv", &r, &e), AL_OK);
    assert_int_equal(r.version, 3);
    assert_int_equal(r.n, 5);
    assert_true(fabs(r.row[1].unseen_acc - 0.55) < 1e-12 && fabs(r.row[1].ambig_acc - 0.70) < 1e-12);
    assert_true(isnan(r.row[4].unseen_acc) && isnan(r.row[4].ambig_acc));   /* image: empty */
    assert_true(fabs(al_result_metric(&r.row[1], AL_METRIC_AMBIG_ACC) - 0.70) < 1e-12);
    assert_true(fabs(al_result_metric(&r.row[1], AL_METRIC_TEST_ACC) - 0.85) < 1e-12);
    assert_int_equal(al_metric_find("unseen_acc"), AL_METRIC_UNSEEN_ACC);
    assert_int_equal(al_metric_find("ambig_acc"), AL_METRIC_AMBIG_ACC);
    assert_int_equal(al_metric_find("val_acc"), -1);
    assert_string_equal(al_metric_name(AL_METRIC_UNSEEN_ACC), "unseen_acc");
    assert_int_equal(al_results_summarize(&r, &s, &e), AL_OK);
    assert_int_equal(s.n, 2);                                               /* image cnn, then sequence sa */
    assert_true(al_summary_has_metric(&s, AL_METRIC_UNSEEN_ACC) && al_summary_has_metric(&s, AL_METRIC_AMBIG_ACC));
    const al_summary_group *g = &s.grp[1];
    assert_string_equal(g->model, "sa");
    assert_int_equal(g->nruns, 3);
    assert_int_equal(g->metric_runs[AL_METRIC_TEST_ACC], 3);
    assert_true(fabs(g->metric_mean[AL_METRIC_TEST_ACC] - g->mean) < 1e-12);
    assert_int_equal(g->metric_runs[AL_METRIC_UNSEEN_ACC], 2);              /* s3's final row has none */
    assert_true(fabs(g->metric_mean[AL_METRIC_UNSEEN_ACC] - 0.60) < 1e-12);  /* final rows only: 0.55, 0.65 */
    assert_true(fabs(g->metric_std[AL_METRIC_UNSEEN_ACC] - sqrt(0.005)) < 1e-12);
    assert_true(fabs(g->metric_mean[AL_METRIC_AMBIG_ACC] - 0.75) < 1e-12);
    assert_int_equal(s.grp[0].metric_runs[AL_METRIC_UNSEEN_ACC], 0);
    assert_true(isnan(s.grp[0].metric_mean[AL_METRIC_UNSEEN_ACC]));
    al_summary_free(&s);
    al_results_free(&r);
    /* a 16-field row under the current header, and a bad number in the new columns, name the line */
    const char *bad = H3 "a,image,fm,sa,1000,1,1,2.1,0.3,,0.41,1.5,666,1234,,done\n";
    assert_int_equal(al_results_parse(bad, strlen(bad), "b.csv", &r, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "b.csv:2: expected 20"));
    bad = H3 "a,sequence,ewt,sa,1000,1,1,2.1,0.3,,0.41,1.5,666,1234,,done,0.5,0.x,,\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(al_results_parse(bad, strlen(bad), "b.csv", &r, &e), AL_ERR);
    if (!strstr(e.msg, "b.csv:2: bad value in column 18 (ambig_acc)")) fail_msg("%s", e.msg);
}

static void test_run_config(void **st)
{
    (void)st;
    char buf[256];
    al_run_config(buf, sizeof buf, "task=image;data=fashion-mnist;split=stratified;train_size=1000;epochs=30;"
                  "lr=0.001;wd=0;batch=64;optim=adamw;seed=1;model=sa;channels=1;height=28;width=28;classes=10;patch=2");
    assert_string_equal(buf, "split=stratified;lr=0.001;wd=0;batch=64;patch=2");
    al_run_config(buf, sizeof buf, "task=graph;dataset=cora;model=gat;split=per-class:20;train_size=140;seed=3;hidden=8");
    assert_string_equal(buf, "split=per-class;hidden=8");
    al_run_config(buf, sizeof buf, "task=graph;dataset=cora;model=gat;split=planetoid;train_size=140;seed=3;hidden=8");
    assert_string_equal(buf, "split=planetoid;hidden=8");
    /* a sequence run's vocabulary sizes follow from its sentences: seeds and sizes share the config */
    al_run_config(buf, sizeof buf, "task=sequence;data=ewt;train_size=250;epochs=10;lr=0.001;seed=2;model=sa;"
                  "nwords=812;nsuffixes=640;tags=17;window=-1");
    assert_string_equal(buf, "lr=0.001;tags=17;window=-1");
    char small[8];
    al_run_config(small, sizeof small, "lr=0.001;wd=0.01");      /* what does not fit is left out, never cut */
    assert_true(strlen(small) < sizeof small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_and_group),
        cmocka_unit_test(test_mean_std),
        cmocka_unit_test(test_summarize),
        cmocka_unit_test(test_config_groups_and_incomplete_runs),
        cmocka_unit_test(test_word_scores),
        cmocka_unit_test(test_run_config),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_read_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
