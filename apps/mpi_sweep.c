/* mpi_sweep.c — `mpirun -np N attnlab sweep ...` (built only with `make MPI=1`; docs/scale-out.md).
 *
 * Every rank parses the same command line and builds the same plan. Rank 0 alone takes the CSV's lock,
 * cleans up after a killed sweep, reads what is done and then hands the runs out, in plan order, to
 * whichever rank asks first; it runs --jobs runs itself too (in the CSV's directory, with training
 * states, exactly as the local scheduler). A worker rank runs its runs as the local scheduler does (a
 * child `attnlab train` with ATTNLAB_NO_MPI=1 into a part file, here in a private temporary directory),
 * and sends the finished part file's bytes back; rank 0 merges them with the same atomic writer, so it
 * is the only writer of the CSV and rows arrive as whole runs. The messages (point to point, tag):
 *   worker -> 0  REQ   one int: a slot is free
 *   0 -> worker  RUN   one int: the plan index to run, or -1: nothing left, stop asking
 *   worker -> 0  DONE  three int64: plan index, the trainer's wait status, the byte count that follows
 *   worker -> 0  BYTES the part file (exit 0) or the tail of the trainer's stderr (a failure)
 * A rank that dies takes the job down (Open MPI's default); the CSV holds every run merged before, and
 * the same command resumes: rank 0 keeps the runs that have a training state in the CSV's directory for
 * itself (it continues them from there); the dead workers' runs start over. */
#ifdef AL_MPI
#include <mpi.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attnlab/io.h"
#include "app_mpi.h"
#include "sweep.h"

enum { TAG_REQ = 11, TAG_RUN, TAG_DONE, TAG_BYTES };

int mpi_sweep_go(int rc)
{
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return rc;
}

/* ---------------- rank 0 ---------------- */
typedef struct sched {
    const sweep_cfg *c; plan_run *plan; int np;
    int next[2];                    /* the next plan index to look at: [0] any run, [1] runs with a state here */
    unsigned char *mine;            /* (np) 1: a killed sweep left this run's training state here: rank 0 resumes it */
    int local, remote;              /* runs in flight here, on the workers */
    int stopped;                    /* workers told to stop asking */
    int ndone, nfail, fatal;
    csvbuf *csv;
} sched;

/* Cursor k's next run (k = 1: those with a state here; k = 0: the others), without taking it; -1 for none. */
static int peek(sched *S, int k)
{
    if (sweep_stopped() || S->fatal) return -1;
    int *i = &S->next[k];
    while (*i < S->np && (S->plan[*i].state != RUN_TODO || S->mine[*i] != k)) (*i)++;
    return *i < S->np ? *i : -1;
}

/* Is a run left to hand out? */
static int runs_left(sched *S) { return peek(S, 0) >= 0 || peek(S, 1) >= 0; }

/* The next run for rank 0 (here: its resumable runs first) or a worker (never those), or -1. */
static int next_run(sched *S, int here)
{
    int k = here && peek(S, 1) >= 0 ? 1 : 0, i = peek(S, k);
    if (i >= 0) S->next[k]++;
    return i;
}

static void head_of(const sched *S, const plan_run *r, int rank, char *head, size_t n)
{
    snprintf(head, n, "[%d/%d] %s (rank %d) ", (int)(r - S->plan) + 1, S->np, r->desc, rank);
}

/* One message from a worker; returns 0 or -1 (MPI failed). */
static int serve(sched *S, const MPI_Status *ms)
{
    const int src = ms->MPI_SOURCE;
    if (ms->MPI_TAG == TAG_REQ) {
        int dummy, k;
        MPI_Recv(&dummy, 1, MPI_INT, src, TAG_REQ, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        k = next_run(S, 0);
        if (k < 0) S->stopped++;
        else {
            plan_run *r = &S->plan[k];
            r->state = RUN_RUNNING; r->t0 = al_time(); S->remote++;
            fprintf(stderr, "[%d/%d] %s started on rank %d\n", k + 1, S->np, r->desc, src);
        }
        return MPI_Send(&k, 1, MPI_INT, src, TAG_RUN, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
    }
    int64_t h[3];
    MPI_Recv(h, 3, MPI_INT64_T, src, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    char *bytes = malloc((size_t)h[2] + 1);
    if (!bytes) return -1;
    MPI_Recv(bytes, (int)h[2], MPI_CHAR, src, TAG_BYTES, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    bytes[h[2]] = 0;
    if (h[0] < 0 || h[0] >= S->np) { free(bytes); return -1; }
    plan_run *r = &S->plan[h[0]];
    S->remote--;
    char head[320], label[64];
    head_of(S, r, src, head, sizeof head);
    snprintf(label, sizeof label, "run %s from rank %d", r->run_id, src);
    const int ok = WIFEXITED((int)h[1]) && WEXITSTATUS((int)h[1]) == 0;
    if (ok) { if (sweep_finish(S->c, r, (int)h[1], bytes, (size_t)h[2], label, NULL, head, S->csv, &S->fatal)) S->ndone++; else S->nfail++; }
    else {
        sweep_finish(S->c, r, (int)h[1], NULL, 0, label, bytes, head, S->csv, &S->fatal);
        S->nfail++;
        free(bytes);
    }
    return 0;
}

/* Rank 0's own runs: start what its slots allow, reap what ended (without blocking). Returns whether
 * anything happened. */
static int work_here(sched *S, const char *exe, const char *threads)
{
    int busy = 0, k;
    while (S->local < S->c->jobs && (k = next_run(S, 1)) >= 0) {
        plan_run *r = &S->plan[k];
        const char *again = keep_partial(r) ? " (resuming)" : "";
        fprintf(stderr, "[%d/%d] %s started on rank 0%s\n", k + 1, S->np, r->desc, again);
        sigset_t block, prev;
        sigemptyset(&block); sigaddset(&block, SIGINT); sigaddset(&block, SIGTERM);
        sigprocmask(SIG_BLOCK, &block, &prev);     /* the handler must see the pid once it exists */
        r->pid = start_child(S->c, r, exe, threads);
        if (r->pid > 0) sweep_track(r->pid);
        sigprocmask(SIG_SETMASK, &prev, NULL);
        if (r->pid < 0) { fprintf(stderr, "sweep: FAILED: fork: %s\n", strerror(errno)); r->state = RUN_FAILED; S->nfail++; continue; }
        r->state = RUN_RUNNING; r->t0 = al_time(); S->local++; busy = 1;
    }
    int st;
    pid_t pid;
    while (S->local > 0 && (pid = waitpid(-1, &st, WNOHANG)) > 0) {
        if (sweep_untrack(pid) < 0) continue;
        plan_run *r = NULL;
        for (int i = 0; i < S->np && !r; i++) if (S->plan[i].state == RUN_RUNNING && S->plan[i].pid == pid) r = &S->plan[i];
        if (!r) continue;
        S->local--; busy = 1; r->pid = 0;
        char head[320];
        head_of(S, r, 0, head, sizeof head);
        if (sweep_stopped()) {
            r->state = RUN_STOPPED;
            fprintf(stderr, "%sinterrupted%s\n", head, keep_partial(r) ? " (its training state is kept: it resumes)" : "");
            continue;
        }
        if (sweep_finish(S->c, r, st, NULL, 0, NULL, NULL, head, S->csv, &S->fatal)) S->ndone++; else S->nfail++;
    }
    return busy;
}

int mpi_run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail)
{
    sched S = {c, plan, np, {0, 0}, calloc((size_t)(np > 0 ? np : 1), 1), 0, 0, 0, 0, 0, 0, main_csv};
    if (!S.mine) { fprintf(stderr, "sweep: out of memory\n"); return 1; }
    for (int i = 0; i < np; i++)
        S.mine[i] = plan[i].state == RUN_TODO && access(plan[i].ckpt, F_OK) == 0 && access(plan[i].part, F_OK) == 0;
    const int workers = app_mpi_size() - 1;
    char tb[32];
    const char *threads = sweep_threads(c, app_mpi_local_size(), tb, sizeof tb);
    sweep_signals(1);
    int mpi_ok = 1;
    for (;;) {
        int busy = work_here(&S, exe, threads);
        int flag = 1;
        while (mpi_ok && flag) {
            MPI_Status ms;
            if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &ms) != MPI_SUCCESS) { mpi_ok = 0; break; }
            if (flag) { busy = 1; if (serve(&S, &ms)) mpi_ok = 0; }
        }
        if (!mpi_ok || (sweep_stopped() && S.local == 0)) break;   /* the workers are taken down by main's MPI_Abort */
        if (S.local == 0 && S.remote == 0 && S.stopped == workers && !runs_left(&S)) break;
        if (!busy) usleep(20000);
    }
    sweep_signals(0);
    free(S.mine);
    if (mpi_ok && S.stopped == workers && S.remote == 0) app_mpi_settled();   /* every worker is done asking */
    *ndone = S.ndone; *nfail = S.nfail;
    if (!mpi_ok) { fprintf(stderr, "sweep: MPI communication failed\n"); return 1; }
    return sweep_stopped() ? 130 : S.fatal ? 1 : 0;
}

/* ---------------- the other ranks ---------------- */
/* Run r's part file (exit 0) or its stderr's tail (a failure), and the DONE message with them. */
static int report(const plan_run *r, int k, int st)
{
    char *text = NULL, tail[4096];
    size_t len = 0;
    al_error e = {{0}};
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        if (al_read_file(r->part, &text, &len, &e) != AL_OK) {   /* a failure after all, with the reason */
            snprintf(tail, sizeof tail, "%s\n", e.msg);
            st = 1 << 8; len = strlen(tail);
        }
    } else len = run_log_tail(r, tail, sizeof tail);
    if (len > INT_MAX) { free(text); return -1; }
    int64_t h[3] = {k, st, (int64_t)len};
    int rc = MPI_Send(h, 3, MPI_INT64_T, 0, TAG_DONE, MPI_COMM_WORLD) == MPI_SUCCESS &&
             MPI_Send(text ? text : tail, (int)len, MPI_CHAR, 0, TAG_BYTES, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
    free(text);
    drop_run_files(r, 0);
    return rc;
}

int mpi_sweep_worker(const sweep_cfg *c, plan_run *plan, int np, const char *exe)
{
    char tb[32];
    const char *threads = sweep_threads(c, app_mpi_local_size(), tb, sizeof tb);
    int running = 0, stop = 0, rc = 0;
    while (!rc) {
        while (!stop && running < c->jobs) {
            int k, one = 1;
            if (MPI_Send(&one, 1, MPI_INT, 0, TAG_REQ, MPI_COMM_WORLD) != MPI_SUCCESS ||
                MPI_Recv(&k, 1, MPI_INT, 0, TAG_RUN, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) { rc = 1; break; }
            if (k < 0 || k >= np) { stop = 1; break; }
            plan_run *r = &plan[k];
            drop_run_files(r, 0);
            r->pid = start_child(c, r, exe, threads);
            if (r->pid < 0) { rc = report(r, k, 127 << 8) ? 1 : 0; continue; }
            r->state = RUN_RUNNING; running++;
        }
        if (rc || running == 0) break;
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) { if (errno == EINTR) continue; rc = 1; break; }
        for (int i = 0; i < np; i++)
            if (plan[i].state == RUN_RUNNING && plan[i].pid == pid) {
                plan[i].state = RUN_DONE; running--;
                if (report(&plan[i], i, st)) rc = 1;
                break;
            }
    }
    if (!rc) app_mpi_settled();
    return rc;
}
#else
typedef int mpi_sweep_unused;   /* ISO C wants a declaration in every file */
#endif
