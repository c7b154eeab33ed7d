/* test_cli_flags.c — `attnlab train` refuses every flag that does not apply to the chosen task, model,
 * data, split or seed count (exit 2, one line naming the flag), before it loads any data; absurd
 * thread counts (--threads, OMP_NUM_THREADS) are refused by every command that runs OpenMP; a --window
 * larger than the token grid is refused; eval refuses the other task's flags; the sequence and
 * molecule tasks refuse the other tasks' options and model options on models they do not fit.
 * Runs $ATTNLAB_BIN. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include "attnlab/io.h"

static char dir[64];

/* Run `[env] bin ARGS`; returns the exit status, stderr in *err (caller frees). */
static int run(const char *env, const char *args, char **err)
{
    char cmd[2048], path[128];
    snprintf(cmd, sizeof cmd, "%s %s %s > /dev/null 2> %s/err.txt", env ? env : "", tu_attnlab_bin(), args, dir);
    int rc = system(cmd);
    snprintf(path, sizeof path, "%s/err.txt", dir);
    *err = tu_slurp(path);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}
static int count_lines(const char *s) { int n = 0; for (; *s; s++) n += *s == '\n'; return n; }

/* `args` must exit 2 with one line on stderr that names `flag` (and `also`, if not NULL). */
static void expect_refused(const char *env, const char *args, const char *flag, const char *also)
{
    char *err = NULL;
    int rc = run(env, args, &err);
    if (rc != 2 || !err || !strstr(err, flag) || count_lines(err) != 1 || (also && !strstr(err, also)))
        fail_msg("'%s': exit %d (want 2), stderr '%s' (want one line naming %s%s%s)", args, rc, err ? err : "",
                 flag, also ? " and " : "", also ? also : "");
    free(err);
}

static const char *image_models[] = {"cnn", "sa", "local", "conv-attn", "conv-attn-ft"};
static const char *graph_models[] = {"gat", "gat-full", "gcn", "mlp", "gatv2", "gt", "gt-full"};
enum { TRAINABLE = 1, ATTENTION = 2, WINDOWED = 4, ATTNMAP = 8 };
static const unsigned image_props[] = {TRAINABLE, TRAINABLE | ATTENTION, TRAINABLE | ATTENTION | WINDOWED, 0, TRAINABLE | WINDOWED};
static const unsigned graph_props[] = {ATTENTION | ATTNMAP, ATTENTION | ATTNMAP, 0, 0, ATTENTION, ATTENTION, ATTENTION};

/* Image flags that need a model property (their value, the property). */
static const struct { const char *flag, *value; unsigned need; } image_model_flags[] = {
    {"--train-size", "10", TRAINABLE}, {"--epochs", "1", TRAINABLE}, {"--lr", "0.01", TRAINABLE},
    {"--wd", "0", TRAINABLE}, {"--weight-decay", "0", TRAINABLE}, {"--batch", "8", TRAINABLE},
    {"--eval-every", "1", TRAINABLE}, {"--save", "/tmp/never.safetensors", TRAINABLE},
    {"--dim", "8", ATTENTION}, {"--depth", "1", ATTENTION}, {"--heads", "2", ATTENTION}, {"--patch", "2", ATTENTION},
    {"--pos", "none", ATTENTION}, {"--score", "dot", ATTENTION}, {"--norm", "relu", ATTENTION}, {"--window", "3", WINDOWED}};
/* Options of one task only (with a value, or "" for a switch). */
static const struct { const char *flag, *value; } graph_only[] = {
    {"--seeds", "1-2"}, {"--sequential", ""}, {"--split", "planetoid"}, {"--labels-per-class", "5"},
    {"--train-frac", "0.5"}, {"--no-normalize", ""}, {"--hidden", "8"}, {"--dropout", "0.1"},
    {"--attn-dropout", "0.1"}, {"--attention", "a.csv"}};
static const struct { const char *flag, *value; } image_only[] = {
    {"--data-dir", "/nonexistent"}, {"--train-size", "10"}, {"--test-size", "10"}, {"--image-size", "8"},
    {"--channels", "1"}, {"--batch", "8"}, {"--eval-every", "1"}, {"--dim", "8"}, {"--depth", "1"},
    {"--patch", "2"}, {"--window", "3"}, {"--pos", "none"}, {"--score", "dot"}, {"--norm", "relu"},
    {"--init-from", "/nonexistent"}, {"--val-size", "100"}};
#define N(a) (int)(sizeof a / sizeof a[0])

static void test_image_task(void **st)
{
    (void)st;
    char args[1024];
    for (int m = 0; m < N(image_models); m++) {
        const char *model = image_models[m], *init = image_props[m] & TRAINABLE ? "" : "--init-from /nonexistent";
        for (int f = 0; f < N(image_model_flags); f++) {
            if ((image_props[m] & image_model_flags[f].need) == image_model_flags[f].need) continue;
            snprintf(args, sizeof args, "train --model %s %s %s %s", model, init, image_model_flags[f].flag, image_model_flags[f].value);
            expect_refused(NULL, args, image_model_flags[f].flag, model);
        }
        for (int f = 0; f < N(graph_only); f++) {
            snprintf(args, sizeof args, "train --model %s %s %s %s", model, init, graph_only[f].flag, graph_only[f].value);
            expect_refused(NULL, args, graph_only[f].flag, "graph");
        }
        /* data: --image-size / --channels need an image folder, --data-dir needs fashion-mnist */
        snprintf(args, sizeof args, "train --model %s %s --image-size 8", model, init);
        expect_refused(NULL, args, "--image-size", "fashion-mnist");
        snprintf(args, sizeof args, "train --model %s %s --channels 1", model, init);
        expect_refused(NULL, args, "--channels", "fashion-mnist");
        snprintf(args, sizeof args, "train --model %s %s --data %s --data-dir /nonexistent", model, init, dir);
        expect_refused(NULL, args, "--data-dir", "folder");
    }
}

static void test_graph_task(void **st)
{
    (void)st;
    char args[1024];
    for (int m = 0; m < N(graph_models); m++) {
        const char *model = graph_models[m];
        for (int f = 0; f < N(image_only); f++) {
            snprintf(args, sizeof args, "train --task graph --model %s %s %s", model, image_only[f].flag, image_only[f].value);
            expect_refused(NULL, args, image_only[f].flag, "image");
        }
        if (!(graph_props[m] & ATTENTION)) {
            snprintf(args, sizeof args, "train --task graph --model %s --heads 2", model);
            expect_refused(NULL, args, "--heads", model);
            snprintf(args, sizeof args, "train --task graph --model %s --attn-dropout 0.1", model);
            expect_refused(NULL, args, "--attn-dropout", model);
            snprintf(args, sizeof args, "train --task graph --model %s --labels-per-class 5 --attention a.csv", model);
            expect_refused(NULL, args, "--attention", "no attention");
        } else if (!(graph_props[m] & ATTNMAP)) {   /* attention whose weights --attention does not write */
            snprintf(args, sizeof args, "train --task graph --model %s --labels-per-class 5 --attention a.csv", model);
            expect_refused(NULL, args, "--attention", "not written");
        }
        /* split and seeds */
        snprintf(args, sizeof args, "train --task graph --model %s --split frac --labels-per-class 5", model);
        expect_refused(NULL, args, "--labels-per-class", "per-class");
        snprintf(args, sizeof args, "train --task graph --model %s --split planetoid --labels-per-class 5", model);
        expect_refused(NULL, args, "--labels-per-class", "per-class");
        snprintf(args, sizeof args, "train --task graph --model %s --split per-class --train-frac 0.5", model);
        expect_refused(NULL, args, "--train-frac", "frac");
        snprintf(args, sizeof args, "train --task graph --model %s --sequential", model);
        expect_refused(NULL, args, "--sequential", "--seeds");
    }
}

static void test_eval_flags(void **st)
{
    (void)st;
    const char *image_flags[] = {"--batch 8", "--test-size 10", "--logits l.csv", "--data-dir /x"};
    char args[512];
    for (int i = 0; i < N(image_flags); i++) {
        snprintf(args, sizeof args, "eval --task graph --load /nonexistent %s", image_flags[i]);
        char flag[32]; sscanf(image_flags[i], "%31s", flag);
        expect_refused(NULL, args, flag, "graph");
    }
    expect_refused(NULL, "eval --task image --load /nonexistent --no-normalize", "--no-normalize", "image");
    snprintf(args, sizeof args, "eval --load /nonexistent --data %s --data-dir /x", dir);
    expect_refused(NULL, args, "--data-dir", "folder");
}

static void test_absurd_threads(void **st)
{
    (void)st;
    const char *cmds[] = {"train --model cnn", "train --task graph --model gat", "eval --load /nonexistent",
                          "attnmap --load /nonexistent --out /tmp/never.png", "predict --load /nonexistent x.png",
                          "bench train --model cnn", "bench gemm", "bench attention", "bench graph"};
    char args[512];
    for (int i = 0; i < N(cmds); i++) {
        snprintf(args, sizeof args, "%s --threads 65536", cmds[i]);
        expect_refused(NULL, args, "--threads", "65536");
        expect_refused("OMP_NUM_THREADS=100000", cmds[i], "OMP_NUM_THREADS", "100000");
    }
}

/* A 28x28 image folder: --window beyond the 14x14 token grid (patch 2) is refused after loading. */
static void test_window_beyond_grid(void **st)
{
    (void)st;
    char p[256], args[512];
    uint8_t pix[28 * 28];
    al_error e = {{0}};
    const char *sub[] = {"train/a", "train/b", "test/a", "test/b"};
    snprintf(p, sizeof p, "%s/img", dir); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/img/train", dir); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/img/test", dir); mkdir(p, 0700);
    for (int s = 0; s < 4; s++) {
        snprintf(p, sizeof p, "%s/img/%s", dir, sub[s]); mkdir(p, 0700);
        for (int k = 0; k < 2; k++) {
            for (int i = 0; i < 28 * 28; i++) pix[i] = (uint8_t)(i * (s + 1) + k);
            snprintf(p, sizeof p, "%s/img/%s/%d.png", dir, sub[s], k);
            assert_int_equal(al_png_write(p, pix, 28, 28, 1, &e), AL_OK);
        }
    }
    const char *windows[] = {"99", "15"};
    for (int i = 0; i < N(windows); i++) {
        snprintf(args, sizeof args, "train --model local --data %s/img --window %s --epochs 1 --threads 1 --quiet", dir, windows[i]);
        expect_refused(NULL, args, "--window", "14x14");
    }
    /* full is conv-attn-ft's window (every key of a conv layer's grid), not a token window of local */
    snprintf(args, sizeof args, "train --model local --data %s/img --window full --epochs 1 --threads 1 --quiet", dir);
    expect_refused(NULL, args, "--window full", "conv-attn-ft");
    snprintf(args, sizeof args, "train --model conv-attn-ft --data %s/img --window 4 --epochs 1 --threads 1 --quiet", dir);
    expect_refused(NULL, args, "--window", "odd");
}

/* The sequence and molecule tasks take only their own columns of train_flags.h: every option of the
 * other tasks is refused (exit 2, one line naming it), and so is every model option on a model it does
 * not fit. */
static const struct { const char *flag, *value; } not_sequence[] = {
    {"--data-dir", "/x"}, {"--image-size", "8"}, {"--channels", "1"}, {"--patch", "2"}, {"--init-from", "/x"},
    {"--test-size", "10"}, {"--eval-every", "1"}, {"--dim", "8"}, {"--seeds", "1-2"}, {"--sequential", ""},
    {"--split", "planetoid"}, {"--labels-per-class", "5"}, {"--train-frac", "0.5"}, {"--no-normalize", ""},
    {"--hidden", "8"}, {"--dropout", "0.1"}, {"--attn-dropout", "0.1"}, {"--patience", "5"},
    {"--attention", "a.csv"}, {"--readout", "sum"}, {"--target", "frames"}, {"--features", "fbank"}, {"--subsample", "2"},
    {"--cmvn", "0"}, {"--train-speakers", "3"}, {"--max-seconds", "2"}};
enum { S_WINDOW = 1, S_RNN = 2, S_ATTN = 4 };
static const struct { const char *model; unsigned props; } seq_models[] = {
    {"fc", 0}, {"window-fc", S_WINDOW}, {"rnn", S_RNN}, {"sa", S_ATTN}, {"trunc", S_ATTN | S_WINDOW}};
static const struct { const char *flag, *value; unsigned need; } seq_model_flags[] = {
    {"--window", "2", S_WINDOW}, {"--rnn", "uni", S_RNN}, {"--pos", "none", S_ATTN}, {"--score", "dot", S_ATTN},
    {"--norm", "relu", S_ATTN}, {"--heads", "2", S_ATTN}, {"--depth", "1", S_ATTN}};

static void test_sequence_task(void **st)
{
    (void)st;
    char args[1024];
    for (int m = 0; m < N(seq_models); m++) {
        const char *model = seq_models[m].model;
        for (int f = 0; f < N(not_sequence); f++) {
            snprintf(args, sizeof args, "train --task sequence --model %s %s %s", model, not_sequence[f].flag, not_sequence[f].value);
            expect_refused(NULL, args, not_sequence[f].flag, NULL);
        }
        for (int f = 0; f < N(seq_model_flags); f++) {
            if (seq_models[m].props & seq_model_flags[f].need) continue;
            snprintf(args, sizeof args, "train --task sequence --model %s %s %s", model, seq_model_flags[f].flag, seq_model_flags[f].value);
            expect_refused(NULL, args, seq_model_flags[f].flag, NULL);
        }
    }
}

/* Speech: the sequence models (fc aside) over frames; the image, graph, molecule and word options are
 * refused, and so is every model option on a model it does not fit. */
static const struct { const char *flag, *value; } not_speech[] = {
    {"--data-dir", "/x"}, {"--image-size", "8"}, {"--channels", "1"}, {"--patch", "2"}, {"--init-from", "/x"},
    {"--split", "planetoid"}, {"--labels-per-class", "5"}, {"--hidden", "8"}, {"--dropout", "0.1"},
    {"--readout", "sum"}, {"--max-len", "30"}, {"--attention", "a.csv"}, {"--seeds", "1-2"}};

static void test_speech_task(void **st)
{
    (void)st;
    char args[1024];
    for (int m = 1; m < N(seq_models); m++) {
        const char *model = seq_models[m].model;
        for (int f = 0; f < N(not_speech); f++) {
            snprintf(args, sizeof args, "train --task speech --data /nonexistent --model %s %s %s", model, not_speech[f].flag, not_speech[f].value);
            expect_refused(NULL, args, not_speech[f].flag, NULL);
        }
        for (int f = 0; f < N(seq_model_flags); f++) {
            if (seq_models[m].props & seq_model_flags[f].need) continue;
            snprintf(args, sizeof args, "train --task speech --data /nonexistent --model %s %s %s", model, seq_model_flags[f].flag, seq_model_flags[f].value);
            expect_refused(NULL, args, seq_model_flags[f].flag, NULL);
        }
    }
    expect_refused(NULL, "train --task speech --data /nonexistent --model fc", "fc", NULL);
    expect_refused(NULL, "train --task speech --data /nonexistent --model sa --subsample 3", "--subsample", NULL);
    expect_refused(NULL, "train --task speech --data /nonexistent --model sa --target speaker --train-speakers 2", "--train-speakers", NULL);
    expect_refused(NULL, "train --task speech --data /nonexistent --model sa --max-seconds 0", "--max-seconds", NULL);
    expect_refused(NULL, "train --task speech --data /nonexistent --model sa --features wav", "--features", NULL);
}

static const struct { const char *flag, *value; } not_molecule[] = {
    {"--data-dir", "/x"}, {"--image-size", "8"}, {"--channels", "1"}, {"--patch", "2"}, {"--window", "2"},
    {"--pos", "none"}, {"--score", "dot"}, {"--norm", "relu"}, {"--rnn", "uni"}, {"--max-len", "30"},
    {"--train-size", "10"}, {"--labels-per-class", "5"}, {"--split", "planetoid"}, {"--attention", "a.csv"}};
enum { M_ATTN = 1, M_GRAPH = 2 };
static const struct { const char *model; unsigned props; } mol_models[] = {
    {"gat", M_ATTN | M_GRAPH}, {"gatv2", M_ATTN | M_GRAPH}, {"gt", M_ATTN | M_GRAPH}, {"gt-full", M_ATTN | M_GRAPH},
    {"gcn", M_GRAPH}, {"mlp", 0}, {"fingerprint", 0}};
static const struct { const char *flag, *value; unsigned need; } mol_model_flags[] = {
    {"--heads", "2", M_ATTN}, {"--depth", "2", M_GRAPH}, {"--dim", "32", M_GRAPH}, {"--readout", "attn", M_GRAPH}};

static void test_molecule_task(void **st)
{
    (void)st;
    char args[1024];
    for (int m = 0; m < N(mol_models); m++) {
        const char *model = mol_models[m].model;
        for (int f = 0; f < N(not_molecule); f++) {
            snprintf(args, sizeof args, "train --task molecule --model %s %s %s", model, not_molecule[f].flag, not_molecule[f].value);
            expect_refused(NULL, args, not_molecule[f].flag, NULL);
        }
        for (int f = 0; f < N(mol_model_flags); f++) {
            if ((mol_models[m].props & mol_model_flags[f].need) == mol_model_flags[f].need) continue;
            snprintf(args, sizeof args, "train --task molecule --model %s %s %s", model, mol_model_flags[f].flag, mol_model_flags[f].value);
            expect_refused(NULL, args, mol_model_flags[f].flag, model);
        }
    }
}

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_cli_flags_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[256]; snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* --patience stops on the validation accuracy, so an image run needs --val-size for it; --val-size
 * needs a training set to split and a trained model. */
static void test_validation_flags(void **st)
{
    (void)st;
    expect_refused(NULL, "train --model cnn --patience 3", "--patience", "--val-size");
    expect_refused(NULL, "train --model cnn --val-size many", "--val-size", NULL);
    expect_refused(NULL, "train --model conv-attn --init-from x.st --val-size 100", "--val-size", NULL);
    expect_refused(NULL, "train --model cnn --train-size 100 --val-size 100 --epochs 1 --quiet", "--val-size 100", "1 to 99");
}

/* A bare `attnlab train` is a usage (exit 2), not a ten-minute default run; any flag still picks the
 * image task and its default model. */
static void test_bare_train_is_a_usage(void **st)
{
    (void)st;
    char *err = NULL;
    assert_int_equal(run(NULL, "train", &err), 2);
    assert_non_null(strstr(err, "usage: attnlab train --task image|graph|sequence|speech|molecule"));
    free(err);
    assert_int_equal(run(NULL, "train --task text", &err), 2);
    assert_non_null(strstr(err, "unknown task 'text' (expected image|graph|sequence|speech|molecule)"));
    assert_int_equal(count_lines(err), 1);
    free(err);
    assert_int_equal(run(NULL, "train --threads 1 --epochs 1 --train-size 64 --test-size 64", &err), 0);
    assert_non_null(strstr(err, "epoch 1/1"));   /* the cnn trained */
    free(err);
}

/* Off a terminal (a log file, CI, a notebook) a graph run reports its epochs as lines of their own, without
 * the terminal's redraw codes: the first epoch of each seed at once, then at most one a second. */
static void test_graph_progress_off_a_terminal(void **st)
{
    (void)st;
    char *err = NULL;
    assert_int_equal(run(NULL, "train --task graph --model gcn --seeds 1-2 --sequential --epochs 5 --threads 1", &err), 0);
    assert_non_null(strstr(err, "\nseed 1 epoch 1  loss "));
    assert_non_null(strstr(err, "\nseed 2 epoch 1  loss "));
    assert_null(strchr(err, '\r'));
    assert_null(strchr(err, '\033'));
    free(err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_image_task),
        cmocka_unit_test(test_graph_task),
        cmocka_unit_test(test_sequence_task),
        cmocka_unit_test(test_molecule_task),
        cmocka_unit_test(test_speech_task),
        cmocka_unit_test(test_eval_flags),
        cmocka_unit_test(test_absurd_threads),
        cmocka_unit_test(test_window_beyond_grid),
        cmocka_unit_test(test_bare_train_is_a_usage),
        cmocka_unit_test(test_validation_flags),
        cmocka_unit_test(test_graph_progress_off_a_terminal),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
