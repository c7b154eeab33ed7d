/* sweep_util.h — what the sweep tests (test_sweep.c, test_sweep_presets.c) share: `attnlab sweep` run as
 * a child (g_bin, in the scratch folder g_dir), and the kill-and-resume check: a sweep killed with
 * SIGKILL once a run is complete, then rerun, gives the CSV of an uninterrupted one (timing aside).
 * Static definitions: each test binary includes it once. */
#ifndef ATTNLAB_TESTS_SWEEP_UTIL_H
#define ATTNLAB_TESTS_SWEEP_UTIL_H
#include "testutil.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char g_bin[4096], g_dir[256];

static inline double now(void)
{
    struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline void msleep(int ms) { struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L}; nanosleep(&t, NULL); }

/* Start `attnlab sweep ARGS...` with stderr to errpath; returns the pid. */
static inline pid_t spawn(char *const *args, const char *errpath)
{
    char *av[64]; int n = 0;
    av[n++] = g_bin; av[n++] = "sweep";
    for (; *args; args++) av[n++] = *args;
    av[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int nul = open("/dev/null", O_WRONLY);
        if (fd >= 0) dup2(fd, 2);
        if (nul >= 0) dup2(nul, 1);
        execv(g_bin, av);
        _exit(127);
    }
    return pid;
}

static inline int wait_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0) if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static inline int sweep(char *const *args, const char *errpath) { return wait_status(spawn(args, errpath)); }

static inline char *slurp(const char *path)
{
    char *d; size_t n; al_error e = {{0}};
    if (al_read_file(path, &d, &n, &e) != AL_OK) return NULL;
    return d;
}

static inline int count_parts(const char *dir)
{
    DIR *d = opendir(dir); int n = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) n += strstr(e->d_name, ".part") != NULL;
    closedir(d);
    return n;
}

static inline void first_part(const char *dir, char *out, size_t n)
{
    DIR *d = opendir(dir); out[0] = 0;
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) if (strstr(e->d_name, ".part")) { snprintf(out, n, "%s/%s", dir, e->d_name); break; }
    closedir(d);
}

static inline long file_size(const char *p) { struct stat s; return stat(p, &s) ? -1 : (long)s.st_size; }

/* Both CSVs hold the same runs in the same order, equal in every column but the timing ones. */
static inline void assert_same_results(const char *a, const char *b)
{
    al_results ra, rb; al_error e = {{0}};
    if (al_results_read(a, &ra, &e) != AL_OK) fail_msg("%s", e.msg);
    if (al_results_read(b, &rb, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(ra.n, rb.n);
    assert_int_equal(ra.nrun, rb.nrun);
    for (int i = 0; i < ra.n; i++) {
        const al_result_row *x = &ra.row[i], *y = &rb.row[i];
        if (strcmp(x->run_id, y->run_id) || strcmp(x->task, y->task) || strcmp(x->dataset, y->dataset)
            || strcmp(x->model, y->model) || x->train_size != y->train_size || x->seed != y->seed
            || x->epoch != y->epoch || x->params != y->params)
            fail_msg("row %d differs in its identity columns (%s vs %s)", i + 2, x->run_id, y->run_id);
        const double *dx[4] = {&x->train_loss, &x->train_acc, &x->val_acc, &x->test_acc};
        const double *dy[4] = {&y->train_loss, &y->train_acc, &y->val_acc, &y->test_acc};
        for (int k = 0; k < 4; k++)
            if (!(*dx[k] == *dy[k] || (isnan(*dx[k]) && isnan(*dy[k]))))
                fail_msg("row %d: metric %d differs: %.9g vs %.9g", i + 2, k, *dx[k], *dy[k]);
    }
    al_results_free(&ra); al_results_free(&rb);
}

/* Run ARGS into csv_a uninterrupted, then into csv_b killed with SIGKILL once a run is complete
 * (and, if it comes, while the next one is being written), resume, and compare. */
static inline void kill_and_resume(char **args, int nargs, int total_runs, int strict)
{
    char a[600], b[600], err[600];
    snprintf(a, sizeof a, "%s/full.csv", g_dir); snprintf(b, sizeof b, "%s/killed.csv", g_dir);
    snprintf(err, sizeof err, "%s/err.txt", g_dir);
    unlink(a); unlink(b);
    char *av[64];
    for (int i = 0; i < nargs; i++) av[i] = args[i];
    av[nargs] = "--csv"; av[nargs + 2] = NULL;

    av[nargs + 1] = a;
    double t0 = now();
    int rc = sweep(av, err);
    if (rc != 0) { char *m = slurp(err); fail_msg("uninterrupted sweep exited %d: %s", rc, m ? m : ""); }
    double full_secs = now() - t0;

    av[nargs + 1] = b;
    pid_t pid = spawn(av, err);
    double deadline = now() + 10 + 3 * full_secs;
    int complete = 0;
    while (now() < deadline) {
        char *t = slurp(b);
        if (t) {
            al_results r; al_error e = {{0}};
            if (al_results_parse(t, strlen(t), b, &r, &e) == AL_OK) { complete = r.nrun; al_results_free(&r); }
            free(t);
        }
        if (complete >= 1) break;
        msleep(5);
    }
    assert_true(complete >= 1);
    /* give the next run a moment to start writing its part file */
    for (int i = 0; i < 200 && count_parts(g_dir) == 0; i++) msleep(5);
    char part[1024]; first_part(g_dir, part, sizeof part);
    kill(pid, SIGKILL);
    assert_int_equal(wait_status(pid), 128 + SIGKILL);

    /* what the killed sweep left: whole runs only */
    al_results r; al_error e = {{0}};
    if (al_results_read(b, &r, &e) != AL_OK) fail_msg("after SIGKILL: %s", e.msg);
    int done_before = r.nrun;
    al_results_free(&r);
    if (strict) {
        assert_true(done_before >= 1 && done_before < total_runs);
        /* the child died with the sweep (PR_SET_PDEATHSIG): its part file stops growing */
        if (part[0]) {
            long s0 = file_size(part);
            msleep(400);
            assert_int_equal(file_size(part), s0);
        }
    }
    rc = sweep(av, err);
    char *m = slurp(err);
    if (rc != 0) fail_msg("resumed sweep exited %d: %s", rc, m ? m : "");
    if (part[0] && file_size(part) >= 0) fail_msg("leftover %s was not removed", part);
    if (strict && !strstr(m, "already complete")) fail_msg("resume did not report skipped runs: %s", m);
    free(m);
    assert_int_equal(count_parts(g_dir), 0);
    assert_same_results(a, b);
    if (al_results_read(b, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.nrun, total_runs);
    al_results_free(&r);
}

#endif
