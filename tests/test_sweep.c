/* test_sweep.c — `attnlab sweep` end to end, through $ATTNLAB_BIN (exported by the Makefile):
 * a sweep killed with SIGKILL after its first run and resumed gives the same CSV as an uninterrupted
 * one (timing columns aside); Ctrl-C stops cleanly; a failing run adds no row; bad arguments exit 2
 * before any run starts.
 *
 * The mechanics are tested with a stand-in trainer (a shell script run through ATTNLAB_SWEEP_TRAINER,
 * slow enough to be killed mid-run; 4 runs); the same kill-and-resume check then runs with the real
 * `attnlab train` (2 runs of graph mlp on cora, else of image cnn; kept small for the ASan suite) when
 * that works, and is skipped when neither does; a real graph run killed part-way continues from its
 * training state.
 */
#include "testutil.h"
#include "sweep_util.h"
#include "attnlab/results.h"
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_fake[512], g_marker[512];

/* A stand-in for `attnlab train`: one row per epoch, FAKE_SLEEP seconds apart; FAKE_FAIL=1 fails
 * after one row; it touches $FAKE_MARKER when it runs at all. */
static const char *fake_script =
    "#!/bin/sh\n"
    "[ -n \"$FAKE_MARKER\" ] && : > \"$FAKE_MARKER\"\n"
    "task=; data=; model=; size=0; seed=0; csv=; epochs=3; patch=2; lr=0.001\n"
    "shift\n"
    "while [ $# -gt 0 ]; do\n"
    "  case \"$1\" in\n"
    "    --task) task=$2; shift;; --data) data=$2; shift;; --model) model=$2; shift;;\n"
    "    --train-size) size=$2; shift;; --labels-per-class) size=$(($2*7)); shift;;\n"
    "    --epochs) epochs=$2; shift;; --seed) seed=$2; shift;; --csv) csv=$2; shift;;\n"
    "    --patch) patch=$2; shift;; --lr) lr=$2; shift;;\n"
    "  esac; shift\n"
    "done\n"
    "[ -s \"$csv\" ] || echo 'run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,"
    "epoch_seconds,samples_per_second,params,config,status' > \"$csv\"\n"
    "e=1\n"
    "while [ $e -le $epochs ]; do\n"
    "  sleep ${FAKE_SLEEP:-0.05}\n"
    "  st=; [ $e -eq $epochs ] && st=done\n"
    "  echo \"own-id,$task,$data,$model,$size,$seed,$e,1.$e,0.$e,0.$e,0.$seed$e$size,0.$$,$$,42,lr=$lr;patch=$patch,$st\" >> \"$csv\"\n"
    "  [ \"$FAKE_FAIL\" = 1 ] && exit 1\n"
    "  e=$((e+1))\n"
    "done\n"
    "exit 0\n";

static void use_fake(void) { setenv("ATTNLAB_SWEEP_TRAINER", g_fake, 1); setenv("FAKE_SLEEP", "0.05", 1); }

static void test_kill_resume_stand_in(void **st)
{
    (void)st;
    use_fake();
    setenv("FAKE_SLEEP", "0.08", 1);
    char *args[] = {"--task", "graph", "--models", "mlp", "--labels-per-class", "2,5", "--seeds", "1,2",
                    "--epochs", "4"};
    kill_and_resume(args, 10, 4, 1);
    /* the child's own run_id was replaced by the sweep's */
    char p[600]; snprintf(p, sizeof p, "%s/killed.csv", g_dir);
    char *t = slurp(p);
    assert_non_null(t);
    assert_null(strstr(t, "own-id"));
    free(t);
    /* a second resume has nothing to do and changes nothing */
    char *full = slurp(p), err[600];
    snprintf(err, sizeof err, "%s/err.txt", g_dir);
    char *av[] = {"--task", "graph", "--models", "mlp", "--labels-per-class", "2,5", "--seeds", "1-2",
                  "--epochs", "4", "--csv", p, NULL};
    assert_int_equal(sweep(av, err), 0);
    char *again = slurp(p);
    assert_string_equal(full, again);
    free(full); free(again);
}

static void test_jobs_two(void **st)
{
    (void)st;
    use_fake();
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/jobs.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn,sa,local", "--train-sizes", "100", "--seeds", "1-2",
                  "--epochs", "2", "--jobs", "2", "--csv", p, NULL};
    assert_int_equal(sweep(av, err), 0);
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 6);
    assert_int_equal(r.n, 12);
    for (int k = 0; k < r.nrun; k++) assert_int_equal(r.run[k].nrows, 2);   /* runs are not interleaved */
    for (int k = 0; k < r.nrun; k++) assert_int_equal(r.run[k].last - r.run[k].first, 1);
    al_results_free(&r);
}

/* Model flags as grid axes: a list multiplies the runs of the models it applies to only; the config
 * column tells the variants apart, so summarize keeps them apart; a flag that applies to no model of
 * the sweep, or a lone bad flag, is refused before anything runs. */
static void test_axes_and_config(void **st)
{
    (void)st;
    use_fake();
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/axes.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn,sa", "--train-sizes", "100,200", "--seeds", "1-2",
                  "--epochs", "2", "--patch", "2,4", "--csv", p, NULL};
    assert_int_equal(sweep(av, err), 0);
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 2 * 2 * 3);                 /* cnn x1, sa x2 (patch 2, 4), per size and seed */
    al_summary s;
    assert_int_equal(al_results_summarize(&r, &s, &e), AL_OK);
    assert_int_equal(s.n, 2 * 3);                        /* (cnn, sa patch=2, sa patch=4) x 2 sizes */
    int p4 = 0;
    for (int i = 0; i < s.n; i++) p4 += strstr(s.grp[i].config, "patch=4") != NULL && s.grp[i].nruns == 2;
    assert_int_equal(p4, 2);
    al_summary_free(&s);
    al_results_free(&r);
    /* the same command again: everything is done */
    assert_int_equal(sweep(av, err), 0);
    char *log = slurp(err);
    assert_non_null(strstr(log, "12 already complete"));
    free(log);
    char *cnn_only[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1",
                        "--patch", "2,4", "--csv", p, NULL};
    assert_int_equal(sweep(cnn_only, err), 2);
    log = slurp(err);
    assert_non_null(strstr(log, "--patch applies to none of the models"));
    free(log);
    char *graph_flag[] = {"--task", "image", "--models", "sa", "--train-sizes", "100", "--seeds", "1",
                          "--hidden", "8", "--csv", p, NULL};
    assert_int_equal(sweep(graph_flag, err), 2);
    log = slurp(err);
    assert_non_null(strstr(log, "--hidden is not a model flag of --task image"));
    free(log);
}

/* Results CSVs of attnlab < 0.4 (14 columns) and 0.4 (16 columns) resume: their runs count as done,
 * and the file is rewritten in the current format (18 columns) when the first new run is merged. */
static void test_resume_old_format(void **st)
{
    (void)st;
    use_fake();
    static const struct { const char *header; int drop; } old[] = {{AL_CSV_HEADER_V1, 6}, {AL_CSV_HEADER_V2, 4}};
    for (int v = 0; v < 2; v++) {
        char p[600], err[600];
        snprintf(p, sizeof p, "%s/old%d.csv", g_dir, v + 1); snprintf(err, sizeof err, "%s/err.txt", g_dir);
        unlink(p);
        char *one[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1", "--epochs", "2",
                       "--csv", p, NULL};
        assert_int_equal(sweep(one, err), 0);
        /* turn it into an old-format file: the old header, the columns added since dropped */
        char *cur = slurp(p);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fprintf(f, "%s\n", old[v].header);
        for (char *line = strchr(cur, '\n') + 1; *line;) {
            char *nl = strchr(line, '\n'), *c = nl;
            for (int k = 0; k < old[v].drop; k++) do c--; while (*c != ',');
            fprintf(f, "%.*s\n", (int)(c - line), line);
            line = nl + 1;
        }
        fclose(f);
        free(cur);
        al_results r; al_error e = {{0}};
        if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
        assert_int_equal(r.version, v + 1);
        al_results_free(&r);
        char *two[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1-2", "--epochs", "2",
                       "--csv", p, NULL};
        assert_int_equal(sweep(two, err), 0);
        char *log = slurp(err);
        assert_non_null(strstr(log, "1 already complete"));
        free(log);
        if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
        assert_int_equal(r.version, 3);
        assert_int_equal(r.nrun, 2);
        assert_true(r.run[0].complete && r.run[1].complete);
        assert_string_equal(r.row[r.run[1].last].config, "lr=0.001;patch=2");
        assert_true(isnan(r.row[0].unseen_acc) && isnan(r.row[r.run[1].last].ambig_acc));   /* image runs: empty */
        al_results_free(&r);
    }
}

/* Power loss while the CSV was written: a torn last line (and its run's rows) is dropped with a
 * note, the run is redone, and the file ends as the uninterrupted sweep's. */
static void test_resume_after_torn_line(void **st)
{
    (void)st;
    use_fake();
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/torn.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn,sa", "--train-sizes", "100", "--seeds", "1", "--epochs", "2",
                  "--csv", p, NULL};
    assert_int_equal(sweep(av, err), 0);
    char *full = slurp(p);
    assert_non_null(full);
    /* cut the file inside its last row */
    size_t n = strlen(full);
    FILE *f = fopen(p, "w"); assert_non_null(f);
    fwrite(full, 1, n - 7, f); fclose(f);
    assert_int_equal(sweep(av, err), 0);
    char *log = slurp(err);
    assert_non_null(strstr(log, "dropped 2 lines of a run whose writing was cut short"));
    assert_non_null(strstr(log, "1 already complete"));
    free(log);
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 2);
    assert_true(r.run[0].complete && r.run[1].complete);
    assert_int_equal(r.n, 4);
    al_results_free(&r);
    free(full);
}

static void test_ctrl_c(void **st)
{
    (void)st;
    use_fake();
    setenv("FAKE_SLEEP", "0.2", 1);
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/int.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100,200,300", "--seeds", "1",
                  "--epochs", "3", "--csv", p, NULL};
    pid_t pid = spawn(av, err);
    for (int i = 0; i < 400 && count_parts(g_dir) == 0; i++) msleep(5);
    msleep(100);
    kill(pid, SIGINT);
    double t0 = now();
    assert_int_equal(wait_status(pid), 130);
    assert_true(now() - t0 < 2.0);             /* forwarded at once, not after the run */
    assert_int_equal(count_parts(g_dir), 0);
    al_results r; al_error e = {{0}};
    if (access(p, F_OK) == 0) {                /* whatever is there is whole runs */
        if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
        for (int k = 0; k < r.nrun; k++) assert_int_equal(r.run[k].nrows, 3);
        al_results_free(&r);
    }
    char *m = slurp(err);
    assert_non_null(strstr(m, "interrupted"));
    free(m);
}

static void test_failing_run(void **st)
{
    (void)st;
    use_fake();
    setenv("FAKE_FAIL", "1", 1);
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/fail.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1,2", "--csv", p, NULL};
    int rc = sweep(av, err);
    unsetenv("FAKE_FAIL");
    assert_int_equal(rc, 1);
    char *m = slurp(err);
    assert_non_null(strstr(m, "FAILED"));
    free(m);
    assert_int_equal(count_parts(g_dir), 0);
    char *t = slurp(p);                         /* no row of a failed run */
    assert_true(t == NULL || strchr(t, '\n') == t + strlen(t) - 1);
    free(t);

    /* a malformed existing CSV is reported with FILE:LINE and left alone */
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fprintf(f, "%s\nbroken,row\n", "run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,"
               "test_acc,epoch_seconds,samples_per_second,params");
    fclose(f);
    long s0 = file_size(p);
    assert_int_equal(sweep(av, err), 1);
    m = slurp(err);
    char where[700]; snprintf(where, sizeof where, "%s:2:", p);
    if (!strstr(m, where)) fail_msg("expected '%s' in: %s", where, m);
    free(m);
    assert_int_equal(file_size(p), s0);
}

static void test_bad_arguments(void **st)
{
    (void)st;
    use_fake();
    setenv("FAKE_MARKER", g_marker, 1);
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/bad.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    struct { const char *what; char *args[16]; } cases[] = {
        {"unknown graph model 'transformer'", {"--task", "graph", "--models", "mlp,transformer", "--labels-per-class", "2", "--seeds", "1", "--csv", p}},
        {"unknown image model 'gat'", {"--task", "image", "--models", "gat", "--train-sizes", "100", "--seeds", "1", "--csv", p}},
        {"70000 is larger than the fashion-mnist training set (60000", {"--task", "image", "--models", "cnn", "--train-sizes", "1000,70000", "--seeds", "1", "--csv", p}},
        {"--models: empty list", {"--task", "image", "--models", "", "--train-sizes", "100", "--seeds", "1", "--csv", p}},
        {"--train-sizes: empty item", {"--task", "image", "--models", "cnn", "--train-sizes", "100,", "--seeds", "1", "--csv", p}},
        {"--seeds: empty list", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "", "--csv", p}},
        {"--seeds: bad range '5-2'", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "5-2", "--csv", p}},
        {"--seeds: bad seed 'x'", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1,x", "--csv", p}},
        {"seed 2 appears twice", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1-3,2", "--csv", p}},
        {"unknown preset 'huge'", {"--preset", "huge"}},
        {"--csv FILE is required", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1"}},
        {"not a positive integer", {"--task", "image", "--models", "cnn", "--train-sizes", "0", "--seeds", "1", "--csv", p}},
        {"needs --labels-per-class", {"--task", "graph", "--models", "gcn", "--seeds", "1", "--csv", p}},
        {"not a fraction", {"--task", "graph", "--models", "gcn", "--train-frac", "1.5", "--seeds", "1", "--csv", p}},
        {"--jobs", {"--preset", "demo", "--jobs", "0"}},
        {"--preset graph-fair has no split lpc=7", {"--preset", "graph-fair", "--labels-per-class", "7"}},
        {"restrict the graph presets only", {"--preset", "demo", "--labels-per-class", "20"}},
        {"neither fashion-mnist, fashion-pairs nor an image folder", {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1", "--data", "/nonexistent/dir", "--csv", p}},
        {"unknown sequence model 'cnn' (expected fc, window-fc, rnn, sa or trunc)", {"--task", "sequence", "--models", "fc,cnn", "--train-sizes", "20", "--seeds", "1", "--csv", p}},
        {"20000 is larger than the ud-english-ewt training set (12544 sentences)", {"--task", "sequence", "--models", "fc", "--train-sizes", "20000", "--seeds", "1", "--csv", p}},
        {"--patch is not a model flag of --task sequence", {"--task", "sequence", "--models", "sa", "--train-sizes", "20", "--patch", "2", "--seeds", "1", "--csv", p}},
        {"--window applies to none of the models of this sweep (windowed models only)", {"--task", "sequence", "--models", "fc,sa", "--train-sizes", "20", "--window", "1,2", "--seeds", "1", "--csv", p}},
        {"--task sequence needs --train-sizes", {"--task", "sequence", "--models", "fc", "--seeds", "1", "--csv", p}},
        {"--preset distance sets its datasets", {"--preset", "distance", "--data", "recall:16"}},
        {"--data: 'recall:16' appears twice", {"--task", "sequence", "--models", "sa", "--train-sizes", "20", "--seeds", "1", "--data", "recall:16,recall:16", "--csv", p}},
        {"the length must be a number in 12..100000", {"--task", "sequence", "--models", "sa", "--train-sizes", "20", "--seeds", "1", "--data", "recall:16,recall:5", "--csv", p}},
        {"--permute-pixels is not a model flag of --task sequence", {"--task", "sequence", "--models", "sa", "--train-sizes", "20", "--permute-pixels", "none,1", "--seeds", "1", "--csv", p}},
        {"dataset 'no-such-graph' not found", {"--task", "graph", "--models", "gcn", "--labels-per-class", "2", "--seeds", "1", "--data", "no-such-graph", "--csv", p}},
    };
    enum { NCASES = sizeof cases / sizeof cases[0] };
    pid_t pid[NCASES];
    char errs[NCASES][640];
    unlink(g_marker);
    for (int i = 0; i < NCASES; i++) {          /* side by side: process start-up dominates under ASan */
        snprintf(errs[i], sizeof errs[i], "%s.%d", err, i);
        pid[i] = spawn(cases[i].args, errs[i]);
    }
    for (int i = 0; i < NCASES; i++) {
        int rc = wait_status(pid[i]);
        char *m = slurp(errs[i]);
        unlink(errs[i]);
        if (rc != 2) fail_msg("case %d (%s): exit %d, expected 2; stderr: %s", i, cases[i].what, rc, m ? m : "");
        if (!m || !strstr(m, cases[i].what)) fail_msg("case %d: stderr \"%s\" lacks \"%s\"", i, m ? m : "", cases[i].what);
        assert_non_null(strchr(m, '\n'));
        assert_ptr_equal(strchr(m, '\n'), m + strlen(m) - 1);   /* one line */
        free(m);
    }
    assert_int_equal(access(g_marker, F_OK), -1);              /* no run started */
    assert_int_equal(access(p, F_OK), -1);                     /* no CSV written */
    unsetenv("FAKE_MARKER");
}

/* `attnlab sweep ARGS --dry-run` (ARGS a shell word list): its exit status; *lines = its plan's lines,
 * err (n bytes) = its stderr. */
static int dry_run(const char *args, int *lines, char *err, size_t n)
{
    char cmd[16384], out[700], ep[700];
    snprintf(out, sizeof out, "%s/dry.txt", g_dir); snprintf(ep, sizeof ep, "%s/dry.err", g_dir);
    snprintf(cmd, sizeof cmd, "%s sweep %s --csv %s/grid.csv --dry-run > %s 2> %s", g_bin, args, g_dir, out, ep);
    int rc = tu_system(cmd);
    char *t = slurp(out), *e = slurp(ep);
    assert_non_null(t); assert_non_null(e);
    *lines = 0;
    for (char *q = t; *q; q++) *lines += *q == '\n';
    snprintf(err, n, "%s", e);
    free(t); free(e);
    unlink(out); unlink(ep);
    return rc;
}

/* "1,2,...,n" */
static void count_list(char *buf, size_t n, int count)
{
    size_t o = 0;
    for (int i = 1; i <= count && o < n; i++) o += (size_t)snprintf(buf + o, n - o, i > 1 ? ",%d" : "%d", i);
}

/* The grid's size is a sum over models of products of axis sizes, seeds, splits and datasets, counted
 * without overflow: exactly MAXRUNS (100000) runs plan, one more is refused naming the flag that took the
 * grid past it, and a grid of more than 2^64 runs (eight lists of 256 values) is refused the same way.
 * A preset's step budget gives each run its epochs without overflow: exactly 100000 epochs plan, one more
 * and a budget past 10^9 are refused. */
static void test_grid_size(void **st)
{
    (void)st;
    char h[2048], d[2048], l256[2048], args[16384], err[1024];
    int lines;
    count_list(h, sizeof h, 250); count_list(d, sizeof d, 200); count_list(l256, sizeof l256, 256);
    /* sa and local take --heads and --dim (250 x 200 points each), cnn neither (1 point) */
    snprintf(args, sizeof args, "--task image --models sa,local --train-sizes 100 --seeds 1 --heads %s --dim %s", h, d);
    assert_int_equal(dry_run(args, &lines, err, sizeof err), 0);
    assert_int_equal(lines, 100000);
    snprintf(args, sizeof args, "--task image --models sa,local,cnn --train-sizes 100 --seeds 1 --heads %s --dim %s", h, d);
    assert_int_equal(dry_run(args, &lines, err, sizeof err), 2);
    if (!strstr(err, "--heads (250 values): the grid has more than 100000 runs (100001 in all)") || strchr(err, '\n') != err + strlen(err) - 1)
        fail_msg("stderr: %s", err);
    assert_int_equal(lines, 0);
    snprintf(args, sizeof args, "--task image --models sa --train-sizes 100 --seeds 0-255 --batch %s --depth %s --dim %s --heads %s "
             "--patch %s --lr %s --wd %s", l256, l256, l256, l256, l256, l256, l256);
    assert_int_equal(dry_run(args, &lines, err, sizeof err), 2);
    if (!strstr(err, "--depth (256 values): the grid has more than 100000 runs (more than 2^64 in all)")) fail_msg("stderr: %s", err);
    /* epochs = steps N: a size of 1 is one step an epoch, so N epochs */
    const char *budget[] = {"steps 100000", "steps 100001", "steps 99999999999 min 2", "steps 1000000000"};
    const char *want[] = {NULL, "epochs = steps N: cnn at size=1 gets 100001 epochs, more than 100000",
                          "b2.preset:5: epochs: 'steps 99999999999 min 2' is not default, N or steps N [min M]",
                          "epochs = steps N: cnn at size=1 gets 1000000000 epochs"};
    for (int i = 0; i < 4; i++) {
        char name[32], text[256], p[700];
        snprintf(name, sizeof name, "b%d.preset", i);
        snprintf(text, sizeof text, "task = image\nmodels = cnn\ntrain-sizes = 1,500\nseeds = 1\nepochs = %s\n", budget[i]);
        snprintf(p, sizeof p, "%s/%s", g_dir, name);
        FILE *f = fopen(p, "w"); assert_non_null(f); fputs(text, f); fclose(f);
        snprintf(args, sizeof args, "--preset %s", p);
        int rc = dry_run(args, &lines, err, sizeof err);
        if (!want[i]) {
            if (rc != 0) fail_msg("%s: exit %d: %s", budget[i], rc, err);
            assert_int_equal(lines, 2);
        } else if (rc != 2 || !strstr(err, want[i])) fail_msg("%s: exit %d, stderr: %s", budget[i], rc, err);
    }
}

/* The --dry-run plans of n presets (each "NAME [flags]") into plans[] (malloc'd); each must list runs[i] runs. */
static void dry_run_plans(const char *const *presets, const int *runs, int n, char **plans)
{
    for (int i = 0; i < n; i++) {
        char cmd[8192], p[700];
        snprintf(p, sizeof p, "%s/plan%d.txt", g_dir, i);
        snprintf(cmd, sizeof cmd, "%s sweep --preset %s --csv %s/plan.csv --dry-run > %s", g_bin, presets[i], g_dir, p);
        assert_int_equal(tu_system(cmd), 0);
        plans[i] = slurp(p);
        assert_non_null(plans[i]);
        int lines = 0;
        for (char *q = plans[i]; *q; q++) lines += *q == '\n';
        if (lines != runs[i]) fail_msg("--preset %s: %d runs, expected %d", presets[i], lines, runs[i]);
        unlink(p);
    }
}

/* The graph presets' plans: graph-tradeoff keeps its 4 models (a model added to the table does not
 * join it), graph-fair has 7 with gat-full and gt-full capped, and --labels-per-class restricts a preset
 * to some of its splits with the same run ids. */
static void test_graph_presets(void **st)
{
    (void)st;
    const char *presets[] = {"graph-tradeoff", "graph-fair", "graph-fair --labels-per-class 20"};
    const int runs[] = {280, 490, 70};
    char *plans[3];
    dry_run_plans(presets, runs, 3, plans);
    assert_null(strstr(plans[0], "gatv2")); assert_null(strstr(plans[0], " gt"));
    assert_non_null(strstr(plans[0], "[4/280] todo mlp lpc=2 seed=1 epochs=default"));
    assert_non_null(strstr(plans[1], "[6/490] todo gt-full lpc=2 seed=1 epochs=100"));
    assert_non_null(strstr(plans[1], "[7/490] todo gat-full lpc=2 seed=1 epochs=100"));
    assert_non_null(strstr(plans[2], "[2/70] todo gatv2 lpc=20 seed=1 epochs=default"));
    /* the same run (gatv2 lpc=20 seed=1) has the same id in the full and the restricted plan */
    const char *a = strstr(plans[1], "gatv2 lpc=20 seed=1 "), *b = strstr(plans[2], "gatv2 lpc=20 seed=1 ");
    assert_non_null(a); assert_non_null(b);
    a = strstr(a, "run_id="); b = strstr(b, "run_id=");
    assert_non_null(a); assert_non_null(b);
    assert_memory_equal(a, b, 23);
    for (int i = 0; i < 3; i++) free(plans[i]);
}

/* The plans of the prior-mismatch, augment, distance and long-range presets: prior-mismatch sweeps
 * sa's patch (2, 1) and not local's, every model with and without the permutation; augment every model with and without augmentation (its parts joined by
 * '+' inside a list); distance the sequence models over the recall lengths, each length its dataset;
 * long-range the generated fashion-pairs up to 10^6 examples, sa at patch 4. And
 * a --permute-pixels / --augment axis of a free sweep reaches the trainer as a flag pair. */
static void test_prior_and_distance_presets(void **st)
{
    (void)st;
    const char *presets[] = {"prior-mismatch", "augment", "distance", "long-range"};
    const int runs[] = {90, 18, 48, 36};
    char *plans[4];
    dry_run_plans(presets, runs, 4, plans);
    assert_non_null(strstr(plans[0], "[1/90] todo cnn size=1000 seed=1 permute-pixels=none epochs=63"));
    assert_non_null(strstr(plans[0], "[8/90] todo sa size=1000 seed=1 patch=1 permute-pixels=1 epochs=63"));
    assert_non_null(strstr(plans[0], "[90/90] todo mlp size=60000 seed=3 permute-pixels=1 epochs=2"));
    assert_null(strstr(plans[0], "local size=1000 seed=1 patch"));       /* the patch axis is sa's alone */
    assert_non_null(strstr(plans[1], "[2/18] todo cnn size=60000 seed=1 augment=shift:2+flip+erase:0.25 epochs=30"));
    assert_non_null(strstr(plans[1], "[18/18] todo hybrid size=60000 seed=3 augment=shift:2+flip+erase:0.25"));
    assert_non_null(strstr(plans[2], "[1/48] todo rnn recall:16 size=20000 seed=1 epochs=40"));
    assert_non_null(strstr(plans[2], "[3/48] todo trunc recall:16 size=20000 seed=1 depth=3 epochs=40"));
    assert_non_null(strstr(plans[2], "[48/48] todo sa recall:1024 size=20000 seed=3 depth=3 epochs=40"));
    assert_null(strstr(plans[2], "rnn recall:16 size=20000 seed=1 depth"));   /* depth is the attention models' */
    assert_non_null(strstr(plans[3], "[2/36] todo sa size=1000 seed=1 patch=4 epochs=63"));
    assert_non_null(strstr(plans[3], "[36/36] todo hybrid size=1000000 seed=3 epochs=2"));
    for (int i = 0; i < 4; i++) free(plans[i]);

    /* a free image sweep over both new axes, through the stand-in trainer: 2 x 2 runs, each its own id */
    use_fake();
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/perm.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *av[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100", "--seeds", "1", "--epochs", "1",
                  "--permute-pixels", "none,3", "--augment", "none,shift:1+flip", "--csv", p, NULL};
    assert_int_equal(sweep(av, err), 0);
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 4);
    al_results_free(&r);
}

/* --data LIST with the real trainer: recall and copy at length 16 are two grid points, each run's rows
 * name its dataset, and a second sweep over one of them alone finds its run done (the same id). */
static void test_data_list(void **st)
{
    (void)st;
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    setenv("OMP_NUM_THREADS", "1", 1);
    char p[600], err[600];
    snprintf(p, sizeof p, "%s/gen.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(p);
    char *args[] = {"--task", "sequence", "--data", "recall:16,copy:16", "--models", "fc", "--train-sizes", "50",
                    "--seeds", "1", "--epochs", "1", "--csv", p, NULL};
    int rc = sweep(args, err);
    if (rc) { char *m = slurp(err); fail_msg("sweep exited %d: %s", rc, m ? m : ""); }
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 2);
    int seen = 0;
    for (int k = 0; k < r.nrun; k++) {
        const al_result_row *w = &r.row[r.run[k].last];
        assert_true(r.run[k].complete);
        seen |= (strstr(w->dataset, "recall") ? 1 : 0) | (strstr(w->dataset, "copy") ? 2 : 0);
    }
    assert_int_equal(seen, 3);
    al_results_free(&r);
    char *one[] = {"--task", "sequence", "--data", "copy:16", "--models", "fc", "--train-sizes", "50",
                   "--seeds", "1", "--epochs", "1", "--csv", p, NULL};
    assert_int_equal(sweep(one, err), 0);
    char *log = slurp(err);
    assert_non_null(strstr(log, "1 already complete"));
    free(log);
    unsetenv("OMP_NUM_THREADS");
}

/* A tiny treebank DIR/train.conllu (ntrain sentences) and DIR/test.conllu, whose every third
 * sentence has a noun train never has (unseen). */
static void write_treebank(const char *dir, int ntrain, int ntest)
{
    char p[700];
    mkdir(dir, 0700);
    snprintf(p, sizeof p, "%s/train.conllu", dir); tu_write_treebank(p, ntrain, 1, 0);
    snprintf(p, sizeof p, "%s/test.conllu", dir); tu_write_treebank(p, ntest, 2, 3);
}

/* --task sequence with the real trainer on a tiny treebank: every model and window point a run, the
 * word scores in every final row, summarize shows them; the sequence-tradeoff preset's plan. */
static void test_sequence_sweep(void **st)
{
    (void)st;
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    setenv("OMP_NUM_THREADS", "1", 1);
    char tb[600], p[600], err[600], cmd[8192];
    snprintf(tb, sizeof tb, "%s.tb", g_dir);
    snprintf(p, sizeof p, "%s/seq.csv", g_dir); snprintf(err, sizeof err, "%s/err.txt", g_dir);
    write_treebank(tb, 40, 12);
    char *args[] = {"--task", "sequence", "--data", tb, "--models", "fc,window-fc,trunc", "--train-sizes", "30",
                    "--window", "0,1", "--seeds", "1-2", "--epochs", "1", "--csv", p, NULL};
    int rc = sweep(args, err);
    if (rc) { char *m = slurp(err); fail_msg("sweep exited %d: %s", rc, m ? m : ""); }
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.version, 3);
    assert_int_equal(r.nrun, 2 * (1 + 2 + 2));                    /* fc; window-fc and trunc at 2 windows */
    for (int k = 0; k < r.nrun; k++) {
        const al_result_row *w = &r.row[r.run[k].last];
        assert_true(r.run[k].complete);
        assert_string_equal(w->task, "sequence");
        assert_int_equal(w->train_size, 30);
        assert_true(w->unseen_acc >= 0 && w->unseen_acc <= 1);      /* zebra, yak */
        assert_true(w->ambig_acc >= 0 && w->ambig_acc <= 1);        /* saw */
        if (strcmp(w->model, "fc")) assert_non_null(strstr(w->config, "window="));
    }
    al_results_free(&r);
    snprintf(cmd, sizeof cmd, "%s summarize %s > %s/sum.txt 2>&1", g_bin, p, g_dir);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/sum.txt", g_dir);
    char *sum = slurp(cmd);
    assert_non_null(sum);
    if (!strstr(sum, "unseen_acc (+- std)") || !strstr(sum, "ambig_acc (+- std)") || !strstr(sum, "window=1"))
        fail_msg("summary lacks the word scores or the window variants:\n%s", sum);
    free(sum);
    /* the preset: 5 models x 4 sizes x 3 seeds, 10 epochs each */
    snprintf(cmd, sizeof cmd, "%s sweep --preset sequence-tradeoff --csv %s/st.csv --dry-run > %s/plan.txt", g_bin, g_dir, g_dir);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/plan.txt", g_dir);
    char *plan = slurp(cmd);
    assert_non_null(plan);
    int lines = 0;
    for (char *q = plan; *q; q++) lines += *q == '\n';
    assert_int_equal(lines, 60);
    assert_non_null(strstr(plan, "[1/60] todo fc size=250 seed=1 epochs=10"));
    assert_non_null(strstr(plan, "[60/60] todo trunc size=12544 seed=3 epochs=10"));
    free(plan);
    snprintf(cmd, sizeof cmd, "rm -rf %s", tb);
    assert_int_equal(tu_system(cmd), 0);
    unsetenv("OMP_NUM_THREADS");
}

/* scripts/context-width.sh with 1 epoch on a tiny treebank: widths in tokens become --window radii,
 * window-fc and trunc at each, sa once; the table says what each model sees; bad widths exit 2. */
static void test_context_width_script(void **st)
{
    (void)st;
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("ATTNLAB_BIN", g_bin, 1);
    char tb[600], cmd[8192], p[700];
    snprintf(tb, sizeof tb, "%s.tb", g_dir);
    write_treebank(tb, 40, 12);
    snprintf(cmd, sizeof cmd, "scripts/context-width.sh --data %s --train-size 20 --epochs 1 --widths '1 3' --csv %s/cw.csv "
             "> %s/cw.txt 2> %s/cw.err", tb, g_dir, g_dir, g_dir);
    int rc = tu_system(cmd);
    snprintf(p, sizeof p, "%s/cw.err", g_dir);
    if (rc) { char *m = slurp(p); fail_msg("context-width.sh exited %d: %s", rc, m ? m : ""); }
    snprintf(p, sizeof p, "%s/cw.csv", g_dir);
    al_results r; al_error e = {{0}};
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, 5);                                   /* window-fc, trunc at 2 widths; sa */
    al_results_free(&r);
    snprintf(p, sizeof p, "%s/cw.txt", g_dir);
    char *t = slurp(p);
    assert_non_null(t);
    /* model, --window, tokens seen, receptive field (trunc: 2 blocks of radius 1 reach 5 tokens) */
    const char *rows[] = {"window-fc        0            1                1", "window-fc        1            3                3",
                          "trunc            1            3                5", "sa               -     sentence         sentence",
                          "unseen_acc", "ambig_acc"};
    for (int i = 0; i < 6; i++) if (!strstr(t, rows[i])) fail_msg("the table lacks '%s':\n%s", rows[i], t);
    free(t);
    const char *bad[] = {"--widths 2", "--widths x", "--bogus", "--epochs"};
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "scripts/context-width.sh %s --csv %s/cw2.csv > /dev/null 2> %s/cw.err", bad[i], g_dir, g_dir);
        assert_int_equal(tu_system(cmd), 2);
        snprintf(p, sizeof p, "%s/cw.err", g_dir);
        char *m = slurp(p);
        assert_non_null(m);
        assert_ptr_equal(strchr(m, '\n'), m + strlen(m) - 1);       /* one line */
        free(m);
    }
    snprintf(p, sizeof p, "%s/cw2.csv", g_dir);
    assert_int_equal(access(p, F_OK), -1);                         /* nothing ran */
    snprintf(cmd, sizeof cmd, "rm -rf %s", tb);
    assert_int_equal(tu_system(cmd), 0);
    unsetenv("OMP_NUM_THREADS");
}

/* Which real trainer works here: 0 none, 1 graph mlp on cora, 2 image cnn. */
static int probe_real(void)
{
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    char csv[600]; snprintf(csv, sizeof csv, "%s/probe.csv", g_dir);
    char *graph[] = {g_bin, "train", "--task", "graph", "--data", "cora", "--model", "mlp", "--labels-per-class", "2",
                     "--epochs", "1", "--seed", "1", "--csv", csv, "--quiet", NULL};
    char *image[] = {g_bin, "train", "--task", "image", "--data", "fashion-mnist", "--model", "cnn", "--train-size", "100",
                     "--epochs", "1", "--seed", "1", "--csv", csv, "--quiet", NULL};
    char **tries[2] = {graph, image};
    for (int k = 0; k < 2; k++) {
        unlink(csv);
        pid_t pid = fork();
        if (pid == 0) {
            int nul = open("/dev/null", O_WRONLY);
            if (nul >= 0) { dup2(nul, 1); dup2(nul, 2); }
            execv(g_bin, tries[k]);
            _exit(127);
        }
        int rc = wait_status(pid);
        al_results r; al_error e = {{0}};
        if (rc == 0 && al_results_read(csv, &r, &e) == AL_OK) {
            int ok = r.n >= 1;
            al_results_free(&r);
            if (ok) return k + 1;
        }
    }
    return 0;
}

static void test_kill_resume_real_trainer(void **st)
{
    (void)st;
    setenv("OMP_NUM_THREADS", "1", 1);   /* tiny runs: one thread is faster on a busy machine, and as deterministic */
    int which = probe_real();
    if (!which) { print_message("  no working `attnlab train` yet: real-trainer resume check skipped\n"); skip(); }
    if (which == 1) {
        char *args[] = {"--task", "graph", "--models", "mlp", "--labels-per-class", "2,5", "--seeds", "1", "--epochs", "3"};
        kill_and_resume(args, 10, 2, 0);
    } else {
        char *args[] = {"--task", "image", "--models", "cnn", "--train-sizes", "100,200", "--seeds", "1", "--epochs", "1"};
        kill_and_resume(args, 10, 2, 0);
    }
}

/* The name of a file of dir ending in suffix into out ("" if none). */
static void find_suffix(const char *d, const char *suffix, char *out, size_t n)
{
    DIR *dp = opendir(d); out[0] = 0;
    if (!dp) return;
    struct dirent *e;
    size_t sl = strlen(suffix);
    while ((e = readdir(dp))) {
        size_t l = strlen(e->d_name);
        if (l > sl && !strcmp(e->d_name + l - sl, suffix)) { snprintf(out, n, "%s/%s", d, e->d_name); break; }
    }
    closedir(dp);
}

/* A run killed part-way continues from its training state (the children run with --checkpoint-every 1
 * --resume): the resumed sweep says so, keeps the part file, and ends with the uninterrupted CSV. */
static void test_partial_run_resumes(void **st)
{
    (void)st;
    setenv("OMP_NUM_THREADS", "1", 1);
    unsetenv("ATTNLAB_SWEEP_TRAINER");
    char a[600], b[600], err[600];
    snprintf(a, sizeof a, "%s/pfull.csv", g_dir); snprintf(b, sizeof b, "%s/part.csv", g_dir);
    snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(a); unlink(b);
    char *av[] = {"--task", "graph", "--models", "gat", "--labels-per-class", "2", "--seeds", "1", "--epochs", "150",
                  "--patience", "0", "--csv", a, NULL};
    int rc = sweep(av, err);
    if (rc != 0) { char *m = slurp(err); fail_msg("uninterrupted sweep exited %d: %s", rc, m ? m : ""); }
    av[13] = b;
    pid_t pid = spawn(av, err);
    char state[1024] = "";
    for (int i = 0; i < 2000 && !state[0]; i++) { find_suffix(g_dir, ".train", state, sizeof state); msleep(5); }
    assert_true(state[0]);
    /* the part file and its log may come a little after the state on a loaded machine (ASan, CI) */
    for (int i = 0; i < 2000 && count_parts(g_dir) < 2; i++) msleep(5);
    msleep(150);                                         /* some epochs into the run */
    kill(pid, SIGKILL);
    assert_int_equal(wait_status(pid), 128 + SIGKILL);
    assert_int_equal(access(b, F_OK), -1);               /* no run was complete */
    assert_int_equal(count_parts(g_dir), 2);             /* the part file and its log */
    rc = sweep(av, err);
    char *m = slurp(err);
    if (rc != 0) fail_msg("resumed sweep exited %d: %s", rc, m ? m : "");
    if (!strstr(m, "has a training state: its run resumes") || !strstr(m, "(resuming)")) fail_msg("stderr: %s", m);
    free(m);
    assert_same_results(a, b);
    assert_int_equal(count_parts(g_dir), 0);
    find_suffix(g_dir, ".train", state, sizeof state);
    assert_string_equal(state, "");                      /* the state goes with its merged run */
}

static int setup(void **st)
{
    (void)st;
    const char *b = getenv("ATTNLAB_BIN");
    snprintf(g_bin, sizeof g_bin, "%s", b && *b ? b : "bin/attnlab");
    if (access(g_bin, X_OK)) { fprintf(stderr, "test_sweep: %s is not executable (set ATTNLAB_BIN)\n", g_bin); return -1; }
    snprintf(g_dir, sizeof g_dir, "/tmp/attnlab_test_sweep_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    /* the stand-in lives outside the results directory (whose *.part files the tests count) */
    snprintf(g_fake, sizeof g_fake, "%s.fake-train.sh", g_dir);
    snprintf(g_marker, sizeof g_marker, "%s.marker", g_dir);
    FILE *f = fopen(g_fake, "w");
    if (!f) return -1;
    fputs(fake_script, f);
    fclose(f);
    chmod(g_fake, 0755);
    unsetenv("OMP_NUM_THREADS");
    return 0;
}

static int teardown(void **st)
{
    (void)st;
    DIR *d = opendir(g_dir);
    if (d) {
        struct dirent *e; char p[1024];
        while ((e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) { snprintf(p, sizeof p, "%s/%s", g_dir, e->d_name); unlink(p); }
        closedir(d);
    }
    rmdir(g_dir);
    unlink(g_fake); unlink(g_marker);
    return 0;
}

/* A group of one run has no sample std: the table says "n/a" and the CSV leaves the field empty, while a
 * group of two shows its std. */
static void test_summarize_single_run_std(void **st)
{
    (void)st;
    char p[512], cmd[16384];
    snprintf(p, sizeof p, "%s/one.csv", g_dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("run_id,task,dataset,model,train_size,seed,epoch,train_loss,train_acc,val_acc,test_acc,epoch_seconds,"
          "samples_per_second,params\n"
          "a1,image,d,cnn,100,1,1,0.5,0.8,,0.79,1,1,10\n"
          "b1,image,d,sa,100,1,1,0.5,0.8,,0.70,1,1,10\n"
          "b2,image,d,sa,100,2,1,0.5,0.8,,0.72,1,1,10\n", f);
    assert_int_equal(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "%s summarize %s > %s/one.txt 2>&1 && %s summarize %s --csv > %s/one-csv.txt 2>&1",
             g_bin, p, g_dir, g_bin, p, g_dir);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s/one.txt", g_dir);
    char *t = slurp(cmd);
    assert_non_null(t);
    if (!strstr(t, "0.7900 +- n/a") || !strstr(t, "0.7100 +- 0.0141")) fail_msg("table:\n%s", t);
    free(t);
    snprintf(cmd, sizeof cmd, "%s/one-csv.txt", g_dir);
    t = slurp(cmd);
    assert_non_null(t);
    if (!strstr(t, "image,d,cnn,100,1,0.790000,,") || !strstr(t, "image,d,sa,100,2,0.710000,0.014142,")) fail_msg("csv:\n%s", t);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_graph_presets),
        cmocka_unit_test(test_grid_size),
        cmocka_unit_test(test_kill_resume_stand_in),
        cmocka_unit_test(test_axes_and_config),
        cmocka_unit_test(test_resume_old_format),
        cmocka_unit_test(test_resume_after_torn_line),
        cmocka_unit_test(test_jobs_two),
        cmocka_unit_test(test_ctrl_c),
        cmocka_unit_test(test_failing_run),
        cmocka_unit_test(test_kill_resume_real_trainer),
        cmocka_unit_test(test_partial_run_resumes),
        cmocka_unit_test(test_sequence_sweep),
        cmocka_unit_test(test_prior_and_distance_presets),
        cmocka_unit_test(test_data_list),
        cmocka_unit_test(test_context_width_script),
        cmocka_unit_test(test_summarize_single_run_std),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
