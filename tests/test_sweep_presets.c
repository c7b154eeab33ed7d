/* test_sweep_presets.c — the sweep's preset files (results/presets/NAME.preset) and its speech, molecule and
 * staged sweeps, through $ATTNLAB_BIN:
 *   - every preset file parses and plans runs; the nine presets that were C code plan exactly the runs
 *     and run ids recorded before they became files (tests/data/sweep-plans/NAME.plan);
 *   - the committed CSVs of the presets that replaced scripts show their finished runs as done;
 *   - a broken preset file is one error line "attnlab sweep: FILE:LINE: what", exit 2;
 *   - $ATTNLAB_PRESETS is searched first, and --preset takes a path;
 *   - a tiny speech, molecule and staged (cnn, then conv-attn-ft from it) sweep killed with SIGKILL after
 *     its first run and rerun skips the finished runs and ends with the rows of an uninterrupted one.
 */
#include "sweep_util.h"
#include <limits.h>

static char g_repo[4096];      /* the repository: the working directory */

/* `attnlab ARGS` (stdout, stderr into g_dir/out.txt, err.txt); its exit status and stdout (caller frees). */
static int run(const char *args, char **out)
{
    int rc = tu_run_cli(g_dir, args);
    char p[600];
    snprintf(p, sizeof p, "%s/out.txt", g_dir);
    *out = tu_slurp(p);
    assert_non_null(*out);
    return rc;
}

static char *err_text(void)
{
    char p[600];
    snprintf(p, sizeof p, "%s/err.txt", g_dir);
    char *e = tu_slurp(p);
    assert_non_null(e);
    return e;
}

static int count(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, what)); p++) n++;
    return n;
}

/* --data for a preset that needs one (speech: any folder for a dry run) */
static const char *data_arg(const char *name)
{
    static char arg[700];
    char p[4400];
    snprintf(p, sizeof p, "%s/results/presets/%s.preset", g_repo, name);
    char *t = tu_slurp(p);
    assert_non_null(t);
    arg[0] = 0;
    if (strstr(t, "task = speech")) snprintf(arg, sizeof arg, "--data %s", g_dir);
    free(t);
    return arg;
}

static void test_every_preset_plans(void **st)
{
    (void)st;
    char dir[4300], args[6000];
    snprintf(dir, sizeof dir, "%s/results/presets", g_repo);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l <= 7 || strcmp(e->d_name + l - 7, ".preset")) continue;
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(l - 7 < 60 ? l - 7 : 60), e->d_name);
        snprintf(args, sizeof args, "sweep --preset %s --dry-run --csv %s/none.csv %s", name, g_dir, data_arg(name));
        char *out;
        int rc = run(args, &out);
        if (rc != 0 || count(out, " todo ") == 0) { char *m = err_text(); fail_msg("%s: exit %d, %s", name, rc, m); }
        free(out);
        n++;
    }
    closedir(d);
    assert_true(n >= 15);
    /* --help lists them, each with its description */
    char *out;
    assert_int_equal(run("sweep --help", &out), 0);
    assert_non_null(strstr(out, "  conv-to-attention  a cnn, conv-attn built exactly from it"));
    assert_non_null(strstr(out, "  image-tradeoff     cnn, sa, local on Fashion-MNIST"));
    free(out);
}

/* The presets that were code plan what they planned then: the same runs, epochs and run ids. */
static void test_plans_as_recorded(void **st)
{
    (void)st;
    static const char *const names[] = {"image-tradeoff", "prior-mismatch", "augment", "long-range", "graph-tradeoff",
                                        "graph-fair", "sequence-tradeoff", "distance", "demo"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char args[1000], p[4300];
        snprintf(args, sizeof args, "sweep --preset %s --dry-run --csv %s/none.csv", names[i], g_dir);
        snprintf(p, sizeof p, "%s/tests/data/sweep-plans/%s.plan", g_repo, names[i]);
        char *out, *want = tu_slurp(p);
        assert_non_null(want);
        assert_int_equal(run(args, &out), 0);
        if (strcmp(out, want)) fail_msg("%s: the plan differs from %s", names[i], p);
        free(out); free(want);
    }
}

/* The committed CSVs of the presets that replaced scripts: their runs are done. */
static void test_committed_csvs_done(void **st)
{
    (void)st;
    static const struct { const char *name, *extra; int done, todo; } c[] = {
        {"speech-window", "", 7, 0}, {"speech-speakers", "--seeds 1-2", 40, 0}, {"speech-main", "", 10, 0},
        {"conv-to-attention", "", 30, 6}, {"molecules", "--seeds 1-5", 35, 0}, {"molecules-extra", "", 21, 0},
        {"image-tradeoff", "", 63, 0}};
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        char args[6000];
        const char *csv = !strcmp(c[i].name, "molecules-extra") ? "molecules" : c[i].name;
        snprintf(args, sizeof args, "sweep --preset %s --dry-run --csv %s/results/%s.csv %s %s", c[i].name, g_repo, csv,
                 c[i].extra, data_arg(c[i].name));
        char *out;
        assert_int_equal(run(args, &out), 0);
        if (count(out, " done ") != c[i].done || count(out, " todo ") != c[i].todo)
            fail_msg("%s: %d done, %d todo; expected %d, %d", c[i].name, count(out, " done "), count(out, " todo "),
                     c[i].done, c[i].todo);
        free(out);
    }
}

static void test_broken_presets(void **st)
{
    (void)st;
    static const struct { const char *text, *want; } cases[] = {
        {"# x\ntask = image\nmodels cnn\n", ":3: expected 'key = value'"},
        {"task = image\nmodels = cnn\ncolour = blue\n", ":3: unknown key 'colour'"},
        {"task = image\nmodels = cnn\ntrain-sizes = 100\nseeds = 1\nepochs = lots\n", ":5: epochs: 'lots' is not"},
        {"task = graph\nmodels = gcn\npatch = 2\n", ":3: patch is not a model flag of task graph"},
        {"task = image\nmodels = cnn,vgg\n", ":2: models: unknown image model 'vgg'"},
        {"task = image\ntrain-sizes = 10\nseeds = 1\n[stage a]\nmodels = cnn\n[stage b]\nmodels = cnn\ninit-from = c\n",
         ":8: init-from: 'c' is not an earlier stage"},
        {"task = image\n[stage a b]\n", ":2: stage name 'a b'"},
        {"task = image\n[stage a]\nseeds = 1\n", ":3: seeds is a setting of the whole preset"},
        {"task = cooking\n", ":1: task: unknown task 'cooking'"},
        {"task = image\nmodels = cnn\nlr[vgg] = 1\n", ":3: lr[vgg]: not a image model"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char name[64], args[1000], *out;
        snprintf(name, sizeof name, "broken%zu.preset", i);
        tu_put(g_dir, name, cases[i].text);
        snprintf(args, sizeof args, "sweep --preset %s/%s --dry-run --csv %s/none.csv", g_dir, name, g_dir);
        assert_int_equal(run(args, &out), 2);
        char *e = err_text(), want[1200];
        snprintf(want, sizeof want, "attnlab sweep: %s/%s%s", g_dir, name, cases[i].want);
        if (strncmp(e, want, strlen(want)) || count(e, "\n") != 1) fail_msg("case %zu: got '%s', want '%s...'", i, e, want);
        free(out); free(e);
    }
}

/* $ATTNLAB_PRESETS comes first; a name not found says where it looked. */
static void test_preset_lookup(void **st)
{
    (void)st;
    char args[1000], *out;
    tu_put(g_dir, "image-tradeoff.preset", "# mine\ntask = graph\nmodels = gcn\nplanetoid = yes\nseeds = 4\n");
    setenv("ATTNLAB_PRESETS", g_dir, 1);
    snprintf(args, sizeof args, "sweep --preset image-tradeoff --dry-run --csv %s/none.csv", g_dir);
    assert_int_equal(run(args, &out), 0);
    assert_non_null(strstr(out, "[1/1] todo gcn planetoid seed=4"));
    free(out);
    assert_int_equal(run("sweep --help", &out), 0);
    assert_non_null(strstr(out, "  image-tradeoff     mine\n"));
    free(out);
    assert_int_equal(run("sweep --preset no-such-preset --dry-run", &out), 2);
    char *e = err_text();
    assert_non_null(strstr(e, "unknown preset 'no-such-preset'"));
    assert_non_null(strstr(e, g_dir));
    free(out); free(e);
    unsetenv("ATTNLAB_PRESETS");
}

static void test_speech_sweep_resumes(void **st)
{
    (void)st;
    char corpus[600], cmd[1200];
    snprintf(corpus, sizeof corpus, "%s.corpus", g_dir);
    snprintf(cmd, sizeof cmd, "data speech-digits --out %s --speakers 4 --repeats 1 --sequences 2", corpus);
    assert_int_equal(tu_run_cli(g_dir, cmd), 0);
    char *args[] = {"--task", "speech", "--data", corpus, "--models", "trunc,rnn", "--target", "digit", "--seeds", "1-2",
                    "--epochs", "3", "--threads", "1"};
    kill_and_resume(args, 14, 4, 1);
    tu_rm_rf(corpus);
}

static void test_molecule_sweep_resumes(void **st)
{
    (void)st;
    char *args[] = {"--task", "molecule", "--models", "gcn,mlp", "--train-frac", "0.1", "--seeds", "1-2", "--epochs", "4",
                    "--threads", "1"};
    kill_and_resume(args, 12, 4, 1);
}

/* A cnn, then conv-attn-ft started from its checkpoint (kept beside the CSV), at two seeds. */
static void test_staged_sweep_resumes(void **st)
{
    (void)st;
    char text[6000], preset[600];
    snprintf(text, sizeof text, "# staged\ntask = image\ndata = %s/tests/bad-inputs/images/ok\ntrain-sizes = 6\nseeds = 1-2\n"
             "[stage cnn]\nmodels = cnn\nepochs = 3\n[stage ft]\nmodels = conv-attn-ft\ninit-from = cnn\nwindow = 3\n"
             "epochs = 2\nlr = 1e-4\n", g_repo);
    snprintf(preset, sizeof preset, "%s.staged.preset", g_dir);
    FILE *f = fopen(preset, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    char *args[] = {"--preset", preset, "--threads", "1"};
    kill_and_resume(args, 4, 4, 1);
    /* the fine-tuned runs name the cnn checkpoint they started from */
    char csv[600];
    snprintf(csv, sizeof csv, "%s/killed.csv", g_dir);
    char *t = slurp(csv);
    assert_non_null(t);
    assert_int_equal(count(t, "conv-attn-ft"), 4);
    assert_non_null(strstr(t, "init_from=killed.csv.run-"));
    free(t);
    unlink(preset);
}

static int setup(void **st)
{
    (void)st;
    const char *b = getenv("ATTNLAB_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", b && *b ? b : "bin/attnlab");
    if (access(g_bin, X_OK)) { fprintf(stderr, "test_sweep_presets: %s is not executable (set ATTNLAB_BIN)\n", g_bin); return -1; }
    if (!getcwd(g_repo, sizeof g_repo)) return -1;   /* make test and make check run from the repository */
    snprintf(g_dir, sizeof g_dir, "/tmp/attnlab_test_sweep_presets_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    unsetenv("OMP_NUM_THREADS");
    unsetenv("ATTNLAB_PRESETS");
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    tu_rm_rf(g_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_preset_plans),
        cmocka_unit_test(test_plans_as_recorded),
        cmocka_unit_test(test_committed_csvs_done),
        cmocka_unit_test(test_broken_presets),
        cmocka_unit_test(test_preset_lookup),
        cmocka_unit_test(test_speech_sweep_resumes),
        cmocka_unit_test(test_molecule_sweep_resumes),
        cmocka_unit_test(test_staged_sweep_resumes),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
