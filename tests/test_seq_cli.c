/* test_seq_cli.c — `attnlab train --task sequence` and `attnlab tag` end to end through $ATTNLAB_BIN on a
 * tiny treebank: a CSV row per epoch with the image task's columns, the summary line, a checkpoint
 * that `tag` loads; tag's output (from plain text and from CoNLL-U, files and stdin) reads back through
 * al_conllu_read with every word tagged; usage errors (bad model, bad --window) exit 2. */
#include "testutil.h"
#include "attnlab/text.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[64];

static int run(const char *args) { return tu_run_cli(dir, args); }
static char *file(const char *name)
{
    char p[256]; snprintf(p, sizeof p, "%s/%s", dir, name);
    char *d; size_t n; al_error e = {{0}};
    return al_read_file(p, &d, &n, &e) == AL_OK ? d : NULL;
}

static void write_treebank(const char *name, int nsent, uint64_t seed)
{
    char p[256]; snprintf(p, sizeof p, "%s/tb/%s", dir, name);
    tu_write_treebank(p, nsent, seed, 0);
}

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab-seqcli-XXXXXX");
    if (!mkdtemp(dir)) return -1;
    char p[256]; snprintf(p, sizeof p, "%s/tb", dir); mkdir(p, 0700);
    write_treebank("train.conllu", 200, 1);
    write_treebank("test.conllu", 40, 2);
    return 0;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[128]; snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_train_and_tag(void **st)
{
    (void)st;
    char a[1024];
    snprintf(a, sizeof a, "train --task sequence --data %s/tb --model window-fc --epochs 3 --threads 1 --quiet --csv %s/r.csv --save %s/m.safetensors",
             dir, dir, dir);
    int rc = run(a);
    if (rc) { char *e = file("err.txt"); fail_msg("train exit %d: %s", rc, e ? e : "?"); }
    char *out = file("out.txt"), *csv = file("r.csv");
    assert_non_null(out); assert_non_null(csv);
    assert_non_null(strstr(out, "task sequence data tb model window-fc train_size 200"));
    assert_non_null(strstr(out, "unseen_acc"));
    assert_true(!strncmp(csv, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1));
    /* the word scores end every row: unseen_acc (no test word is unseen here: empty), ambig_acc ("saw") */
    const char *q = strstr(out, "ambig_acc ");
    assert_non_null(q);
    double amb = atof(q + 10);
    assert_true(amb > 0.9 && amb <= 1.0);
    const char *tail = strstr(csv, ",done,,");                         /* the final row's last fields */
    if (!tail) fail_msg("the final row should end with ',done,,AMBIG':\n%s", csv);
    assert_true(fabs(atof(tail + 7) - amb) < 6e-5);                     /* the CSV has more digits */
    int rows = 0; for (char *q = csv; *q; q++) rows += *q == '\n';
    assert_int_equal(rows, 1 + 3);
    assert_non_null(strstr(csv, ",sequence,tb,window-fc,200,1,3,"));
    /* this task is trivial: the tagger has learnt it */
    double acc = 0; q = strstr(out, "test_acc ");
    assert_non_null(q); acc = atof(q + 9);
    assert_true(acc > 0.95);
    free(out); free(csv);

    /* plain text from a file and from stdin; CoNLL-U (untagged) from a file */
    char p[256]; snprintf(p, sizeof p, "%s/in.txt", dir);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fputs("the dog sees a cat .\n\n  A   bird ran  near the house .  \r\nzebra\n", f); fclose(f);
    const char *inputs[3][2] = {{"%s/in.txt", ""}, {"", "< %s/in.txt"}, {"%s/tb/test.conllu", ""}};
    for (int k = 0; k < 3; k++) {
        char in1[300] = "", in2[300] = "";
        if (*inputs[k][0]) snprintf(in1, sizeof in1, inputs[k][0], dir);
        if (*inputs[k][1]) snprintf(in2, sizeof in2, inputs[k][1], dir);
        snprintf(a, sizeof a, "tag --load %s/m.safetensors %s %s", dir, in1, in2);
        rc = run(a);
        if (rc) { char *e = file("err.txt"); fail_msg("tag exit %d: %s", rc, e ? e : "?"); }
        char op[256]; snprintf(op, sizeof op, "%s/out.txt", dir);
        al_conllu d; al_error e = {{0}};
        if (al_conllu_read(op, NULL, &d, &e) != AL_OK) fail_msg("tag output does not read back: %s", e.msg);   /* every word tagged */
        if (k < 2) {
            assert_int_equal(d.nsent, 3); assert_int_equal(d.ntok, 6 + 7 + 1);
            assert_string_equal(d.form[7], "bird"); assert_string_equal(d.form[13], "zebra");
            assert_string_equal(al_upos_name(d.tag[0]), "DET"); assert_string_equal(al_upos_name(d.tag[1]), "NOUN");
            assert_string_equal(al_upos_name(d.tag[5]), "PUNCT");
        } else {
            al_conllu g; assert_int_equal(al_conllu_read(in1, NULL, &g, &e), AL_OK);
            assert_int_equal(d.nsent, g.nsent); assert_int_equal(d.ntok, g.ntok);
            int ok = 0;
            for (int i = 0; i < d.ntok; i++) { assert_string_equal(d.form[i], g.form[i]); ok += d.tag[i] == g.tag[i]; }
            assert_true(ok > 0.95 * d.ntok);
            al_conllu_free(&g);
        }
        al_conllu_free(&d);
    }
    /* a missing checkpoint is a runtime error */
    snprintf(a, sizeof a, "tag --load %s/nothing.safetensors %s/in.txt", dir, dir);
    assert_int_equal(run(a), 1);
}

static void test_usage_errors(void **st)
{
    (void)st;
    char a[512];
    const char *bad[] = {"--model cnn", "--model nonsense", "--model window-fc --window -1", "--model trunc --window x",
                         "--model fc --window 2", "--model rnn --rnn sideways", "--model fc --pos learned", "--model sa --pos relative",
                         "", "--model sa --heads 5"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(a, sizeof a, "train --task sequence --data %s/tb %s --epochs 1", dir, bad[k]);
        int rc = run(a);
        if (rc != 2) fail_msg("'%s' exited %d, want 2", bad[k], rc);
        char *e = file("err.txt"); assert_non_null(e); assert_true(strlen(e) > 0); free(e);
    }
    assert_int_equal(run("tag"), 2);
    assert_int_equal(run("tag --bogus"), 2);
}

/* --data NAME finds a treebank directory NAME of the working directory, as it does an image folder or a
 * graph directory (before, only ./NAME or a path did). */
static void test_data_name_in_working_directory(void **st)
{
    (void)st;
    char cmd[8192], bin[4096];
    assert_non_null(realpath(tu_attnlab_bin(), bin));   /* the command runs in dir */
    snprintf(cmd, sizeof cmd, "cd %s && ATTNLAB_DATA=/nonexistent %s train --task sequence --data tb --model fc --epochs 1 "
             "--threads 1 --quiet > name.out 2> name.err", dir, bin);
    int rc = tu_system(cmd);
    char *out = file("name.out"), *err = file("name.err");
    if (rc != 0 || !out || !strstr(out, "task sequence data tb model fc train_size 200"))
        fail_msg("exit %d, stdout '%s', stderr '%s'", rc, out ? out : "", err ? err : "");
    free(out); free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_train_and_tag),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_data_name_in_working_directory),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
