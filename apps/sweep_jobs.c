/* sweep_jobs.c — the process side of `attnlab sweep`: one child `attnlab train` per run, Ctrl-C and
 * SIGTERM forwarded to the children, each finished run's rows merged into the CSV in one atomic
 * replace, the files of a killed sweep cleaned up. See cmd_sweep.c for what a run is. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attnlab/gnn.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/models.h"
#include "attnlab/results.h"
#include "cli.h"
#include "sweep.h"
#include "app_mpi.h"
#include "train_flags.h"

/* ---------------- signals: forwarded to running children from the handler ---------------- */
static volatile sig_atomic_t g_stop;
static volatile sig_atomic_t g_child[MAXJOBS];

static void on_signal(int sig)
{
    g_stop = sig;
    for (int i = 0; i < MAXJOBS; i++)
        if (g_child[i] > 0) kill((pid_t)g_child[i], sig);
}

void sweep_signals(int on)
{
    static struct sigaction old_int, old_term;
    if (on) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa); sa.sa_handler = on_signal; sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &old_int); sigaction(SIGTERM, &sa, &old_term);
        g_stop = 0;
    } else {
        sigaction(SIGINT, &old_int, NULL); sigaction(SIGTERM, &old_term, NULL);
    }
}

int sweep_stopped(void) { return g_stop != 0; }

int sweep_track(pid_t pid)
{
    for (int i = 0; i < MAXJOBS; i++) if (g_child[i] <= 0) { g_child[i] = pid; return i; }
    return -1;
}

int sweep_untrack(pid_t pid)
{
    for (int i = 0; i < MAXJOBS; i++) if (g_child[i] == pid) { g_child[i] = 0; return i; }
    return -1;
}

const char *sweep_threads(const sweep_cfg *c, int ranks_here, char *buf, size_t n)
{
    if (c->threads > 0) { snprintf(buf, n, "%d", c->threads); return buf; }
    if (c->jobs * ranks_here > 1 && !getenv("OMP_NUM_THREADS")) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN), per = cores / (c->jobs * ranks_here);
        snprintf(buf, n, "%ld", per > 1 ? per : 1);
        return buf;
    }
    return NULL;
}

/* ---------------- the CSV and its companions ---------------- */
int buf_put(csvbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1 << 16;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        if (!q) return -1;
        b->p = q; b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n; b->p[b->n] = 0;
    return 0;
}

void dir_and_base(const char *path, char *dir, size_t dn, const char **base)
{
    const char *sl = strrchr(path, '/');
    if (!sl) { snprintf(dir, dn, "."); *base = path; }
    else if (sl == path) { snprintf(dir, dn, "/"); *base = sl + 1; }
    else { snprintf(dir, dn, "%.*s", (int)(sl - path), path); *base = sl + 1; }
}

int mkdir_p(const char *dir)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", dir);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') { *p = 0; if (mkdir(tmp, 0755) && errno != EEXIST) return -1; *p = '/'; }
    if (mkdir(tmp, 0755) && errno != EEXIST) return -1;
    return 0;
}

/* Does dir/NAME exist, NAME being name with its suffix `from` replaced by `to`? */
static int sibling_exists(const char *dir, const char *name, const char *from, const char *to)
{
    char p[PATH_MAX];
    size_t l = strlen(name) - strlen(from);
    if (snprintf(p, sizeof p, "%s/%.*s%s", dir, (int)l, name, to) >= (int)sizeof p) return 0;
    return access(p, F_OK) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

int remove_leftovers(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    size_t bl = strlen(base);
    int removed = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        if (strncmp(nm, base, bl)) continue;
        const char *rest = nm + bl, *tmp = strstr(rest, ".tmp.");
        int run = !strncmp(rest, ".run-", 5) && strlen(rest) > 10;
        int drop = (tmp && al_tmp_stale(tmp) && (tmp == rest || run))   /* BASE's or a state's temporary, of a dead process of this host */
                   || (run && ends_with(rest, ".part.log"))
                   || (run && ends_with(rest, ".part") && !sibling_exists(dir, nm, ".part", ".train"))
                   || (run && ends_with(rest, ".train") && !sibling_exists(dir, nm, ".train", ".part"));
        if (run && ends_with(rest, ".part") && !drop)
            fprintf(stderr, "sweep: %s/%s has a training state: its run resumes where it stopped\n", dir, nm);
        if (!drop) continue;
        char p[PATH_MAX];
        if (snprintf(p, sizeof p, "%s/%s", dir, nm) >= (int)sizeof p) continue;
        if (unlink(p) == 0) { fprintf(stderr, "sweep: removed %s left by an interrupted sweep\n", p); removed++; }
    }
    closedir(d);
    return removed;
}

size_t run_log_tail(const plan_run *r, char *buf, size_t n)
{
    char log[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s.log", r->part);
    buf[0] = 0;
    FILE *f = fopen(log, "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    if (len > (long)n - 1) fseek(f, len - (long)n + 1, SEEK_SET); else fseek(f, 0, SEEK_SET);
    size_t k = fread(buf, 1, n - 1, f);
    buf[k] = 0;
    fclose(f);
    return k;
}

void drop_run_files(const plan_run *r, int show_log)
{
    char log[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s.log", r->part);
    if (show_log) {
        char buf[4096];
        size_t k = run_log_tail(r, buf, sizeof buf);
        if (k) fprintf(stderr, "  --- stderr of the run ---\n%s%s", buf, buf[k - 1] == '\n' ? "" : "\n");
    }
    unlink(r->part);
    unlink(log);
    unlink(r->ckpt);
}

/* A run that stopped part-way keeps its part file when its training state exists (it resumes from
 * there); otherwise its files go. Returns 1 when kept. */
int keep_partial(const plan_run *r)
{
    if (access(r->ckpt, F_OK) == 0 && access(r->part, F_OK) == 0) return 1;
    drop_run_files(r, 0);
    return 0;
}

static void setmsg(char *msg, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void setmsg(char *msg, size_t n, const char *fmt, ...)
{
    va_list ap; va_start(ap, fmt);
    vsnprintf(msg, n, fmt, ap);
    va_end(ap);
}

int merge_rows(const sweep_cfg *c, plan_run *r, char *text, size_t len, const char *label, csvbuf *main_csv, double *acc,
               char *msg, size_t mn, int *fatal)
{
    al_error e = {{0}};
    al_results res;
    *fatal = 0;
    if (al_results_parse(text, len, label, &res, &e) != AL_OK) { setmsg(msg, mn, "%s", e.msg); free(text); return -1; }
    int ok = 0;
    if (res.n == 0) setmsg(msg, mn, "%s: the trainer wrote no rows", label);
    else if (res.nrun != 1) setmsg(msg, mn, "%s: the trainer wrote %d runs, expected 1", label, res.nrun);
    else {
        const al_result_row *last = &res.row[res.n - 1];
        if (strcmp(last->task, c->task) || strcmp(last->model, r->model) || last->seed != r->seed
            || (r->sized && r->sp.kind == SPLIT_SIZE && last->train_size != r->sp.n))
            setmsg(msg, mn, "%s: rows are for %s %s size=%ld seed=%ld, expected %s", label, last->task,
                     last->model, last->train_size, last->seed, r->desc);
        else if (strcmp(last->status, "done"))
            setmsg(msg, mn, "%s: the trainer's last row (epoch %d) is not marked done", label, last->epoch);
        else { ok = 1; *acc = isnan(last->test_acc) ? last->test_rmse : last->test_acc; }   /* regression: RMSE */
    }
    int version = res.version;     /* an older trainer's rows get the columns it lacks, empty */
    al_results_free(&res);
    if (!ok) { free(text); return -1; }
    size_t old = main_csv->n;
    int oom = 0;
    if (old == 0) oom |= buf_put(main_csv, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1);
    const char *p = strchr(text, '\n') + 1;              /* skip the header (parse checked it) */
    while (*p) {
        const char *nl = strchr(p, '\n'), *comma = strchr(p, ',');
        oom |= buf_put(main_csv, r->run_id, strlen(r->run_id));
        oom |= buf_put(main_csv, comma, (size_t)(nl - comma));
        if (version == 1) oom |= buf_put(main_csv, nl[1] ? ",," : ",,done", nl[1] ? 2 : 6);   /* config, status */
        if (version <= 2) oom |= buf_put(main_csv, ",,,,", 4);   /* the 0.5 columns: unseen_acc ... test_mae */
        oom |= buf_put(main_csv, "\n", 1);
        p = nl + 1;
    }
    free(text);
    if (oom || al_write_atomic(c->csv, main_csv->p, main_csv->n, &e) != AL_OK) {
        main_csv->n = old;
        setmsg(msg, mn, "%s", oom ? "out of memory" : e.msg);
        *fatal = 1;
        return -1;
    }
    drop_run_files(r, 0);
    return 0;
}

/* Merge a finished child's rows into the CSV (one atomic replace). Returns 0, or -1 with msg set;
 * *fatal is set when the main CSV could not be written. */
static int merge_run(const sweep_cfg *c, plan_run *r, csvbuf *main_csv, double *acc, char *msg, size_t mn, int *fatal)
{
    char *text; size_t len;
    al_error e = {{0}};
    *fatal = 0;
    if (al_read_file(r->part, &text, &len, &e) != AL_OK) { setmsg(msg, mn, "%s", e.msg); return -1; }
    return merge_rows(c, r, text, len, r->part, main_csv, acc, msg, mn, fatal);
}

/* The argv of run r's trainer into av (bufs: storage of its numbers); returns the count. */
static int child_args(const sweep_cfg *c, const plan_run *r, const char *exe, const char **av, char bufs[][32],
                      char flags[][64])
{
    int n = 0;
    av[n++] = exe; av[n++] = "train"; av[n++] = "--task"; av[n++] = c->task;
    av[n++] = "--data"; av[n++] = r->data; av[n++] = "--model"; av[n++] = r->model;
    const char *opt = r->sp.kind == SPLIT_SIZE ? "--train-size" : r->sp.kind == SPLIT_LPC ? "--labels-per-class"
                      : r->sp.kind == SPLIT_FRAC ? "--train-frac" : NULL;
    if (r->sp.kind == SPLIT_FRAC) snprintf(bufs[0], 32, "%g", r->sp.frac);
    else snprintf(bufs[0], 32, "%ld", r->sp.n);
    if (r->sp.kind == SPLIT_PLANETOID) { av[n++] = "--split"; av[n++] = "planetoid"; }
    else if (opt && r->sized) { av[n++] = opt; av[n++] = bufs[0]; }
    if (r->epochs > 0) { snprintf(bufs[1], 32, "%d", r->epochs); av[n++] = "--epochs"; av[n++] = bufs[1]; }
    /* Long image runs (small splits under the step budget) are evaluated about `evals` times, and after
     * the last epoch, instead of after each of hundreds of epochs: evaluation would dominate. */
    const int evals = r->st->evals;
    if (c->taskid == AL_TASK_IMAGE && r->epochs > evals) {
        snprintf(bufs[2], 32, "%d", (r->epochs + evals - 1) / evals);
        av[n++] = "--eval-every"; av[n++] = bufs[2];
    }
    n += run_axis_args(r, av + n, flags);
    snprintf(bufs[3], 32, "%ld", r->seed);
    av[n++] = "--seed"; av[n++] = bufs[3]; av[n++] = "--csv"; av[n++] = r->part; av[n++] = "--quiet";
    const int trained = trained_model(c->taskid, r->model);
    /* a state after every epoch: a killed sweep continues this run where it stopped */
    if (trained) { av[n++] = "--checkpoint-every"; av[n++] = "1"; av[n++] = "--checkpoint"; av[n++] = r->ckpt; av[n++] = "--resume"; }
    if (r->save) { av[n++] = "--save"; av[n++] = r->save; }
    if (r->init_from) { av[n++] = "--init-from"; av[n++] = r->init_from; }
    if (c->max_memory) { av[n++] = "--max-memory"; av[n++] = c->max_memory; }
    av[n] = NULL;
    return n;
}

pid_t start_child(const sweep_cfg *c, plan_run *r, const char *exe, const char *threads)
{
    char bufs[4][32], flags[MAXAXES][64];
    const char *av[40 + 2 * MAXAXES];
    child_args(c, r, exe, av, bufs, flags);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = SIG_DFL;
        sigaction(SIGINT, &sa, NULL); sigaction(SIGTERM, &sa, NULL);
        sigset_t none; sigemptyset(&none); sigprocmask(SIG_SETMASK, &none, NULL);
        setpgid(0, 0);                                /* Ctrl-C reaches the sweep only; it forwards */
        prctl(PR_SET_PDEATHSIG, SIGKILL);             /* no orphan outlives a killed sweep */
        if (getppid() != parent) _exit(127);
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) { dup2(devnull, 1); close(devnull); }   /* the trainer's summary; rows go to the CSV */
        char log[PATH_MAX + 8];
        snprintf(log, sizeof log, "%s.log", r->part);
        int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);   /* shown if the run fails; never through a link */
        if (lfd >= 0) { dup2(lfd, 2); close(lfd); }
        if (threads) setenv("OMP_NUM_THREADS", threads, 1);
        setenv(APP_NO_MPI_ENV, "1", 1);               /* under mpirun: the trainer is one process, not a rank */
        execv(exe, (char *const *)av);
        fprintf(stderr, "attnlab sweep: cannot run %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    if (pid > 0) setpgid(pid, pid);
    return pid;
}

int sweep_finish(const sweep_cfg *c, plan_run *r, int st, char *rows, size_t len, const char *label, const char *log,
                 const char *head, csvbuf *main_csv, int *fatal)
{
    double acc = NAN, secs = al_time() - r->t0;
    char msg[AL_ERRLEN + 64] = "";
    int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (!ok && WIFEXITED(st)) snprintf(msg, sizeof msg, "train exited with status %d", WEXITSTATUS(st));
    else if (!ok) snprintf(msg, sizeof msg, "train killed by signal %d", WTERMSIG(st));
    else if (rows) { ok = merge_rows(c, r, rows, len, label, main_csv, &acc, msg, sizeof msg, fatal) == 0; rows = NULL; }
    else ok = merge_run(c, r, main_csv, &acc, msg, sizeof msg, fatal) == 0;
    free(rows);
    if (ok) { r->state = RUN_DONE; fprintf(stderr, "%sdone %.4f (%.1f s)\n", head, acc, secs); return 1; }
    r->state = RUN_FAILED;
    fprintf(stderr, "%sFAILED: %s\n", head, msg);
    if (log && *log) fprintf(stderr, "  --- stderr of the run ---\n%s%s", log, log[strlen(log) - 1] == '\n' ? "" : "\n");
    drop_run_files(r, !log);
    return 0;
}

/* Run every RUN_TODO run, c->jobs at a time, merging each finished run into the CSV.
 * Returns 0 (check *nfail), 1 when the CSV could not be written, 130 when interrupted. */
int run_plan(const sweep_cfg *c, plan_run *plan, int np, const char *exe, csvbuf *main_csv, int *ndone, int *nfail)
{
    char threads_buf[32];
    const char *threads = sweep_threads(c, 1, threads_buf, sizeof threads_buf);
    sweep_signals(1);
    sigset_t block, prev;
    sigemptyset(&block); sigaddset(&block, SIGINT); sigaddset(&block, SIGTERM);
    int first = 0, next, running = 0, fatal = 0, slot_of[MAXJOBS];
    *ndone = *nfail = 0;
    for (;;) {
        while (!g_stop && !fatal && running < c->jobs && (next = next_startable(plan, np, &first, nfail)) >= 0) {
            plan_run *r = &plan[next];
            int slot = 0;
            while (g_child[slot] > 0) slot++;
            const char *again = keep_partial(r) ? " (resuming)" : "";
            if (c->jobs == 1) fprintf(stderr, "[%d/%d] %s%s ... ", (int)(r - plan) + 1, np, r->desc, again);
            else fprintf(stderr, "[%d/%d] %s started%s\n", (int)(r - plan) + 1, np, r->desc, again);
            sigprocmask(SIG_BLOCK, &block, &prev);     /* the handler must see the pid once it exists */
            r->pid = start_child(c, r, exe, threads);
            if (r->pid > 0) { g_child[slot] = r->pid; slot_of[slot] = (int)(r - plan); }
            sigprocmask(SIG_SETMASK, &prev, NULL);
            if (r->pid < 0) {
                fprintf(stderr, "%sFAILED: fork: %s\n", c->jobs == 1 ? "" : "sweep: ", strerror(errno));
                r->state = RUN_FAILED; (*nfail)++; continue;
            }
            r->state = RUN_RUNNING; r->t0 = al_time(); running++;
        }
        if (running == 0) break;
        int st;
        pid_t pid = waitpid(-1, &st, 0);
        if (pid < 0) { if (errno == EINTR) continue; break; }
        int slot = 0;
        while (slot < MAXJOBS && g_child[slot] != pid) slot++;
        if (slot == MAXJOBS) continue;
        plan_run *r = &plan[slot_of[slot]];
        g_child[slot] = 0; running--;
        char head[320] = "";
        if (c->jobs > 1) snprintf(head, sizeof head, "[%d/%d] %s ", slot_of[slot] + 1, np, r->desc);
        if (g_stop) {                                   /* a partial run, whatever its exit status */
            r->state = RUN_STOPPED;
            fprintf(stderr, "%sinterrupted%s\n", head, keep_partial(r) ? " (its training state is kept: it resumes)" : "");
            continue;
        }
        if (sweep_finish(c, r, st, NULL, 0, NULL, NULL, head, main_csv, &fatal)) (*ndone)++; else (*nfail)++;
    }
    sweep_signals(0);
    return g_stop ? 130 : fatal ? 1 : 0;
}

int run_axis_args(const plan_run *r, const char **av, char bufs[][64])
{
    int n = 0;
    const stage *s = r->st;
    for (int i = 0; i < s->naxes; i++) {
        if (r->val[i] < 0) continue;
        snprintf(bufs[i], 64, "--%s", s->axes[i].flag);
        av[n++] = bufs[i];
        av[n++] = s->axes[i].vals[r->val[i]];
    }
    return n;
}

int next_startable(plan_run *plan, int np, int *first, int *nfail)
{
    while (*first < np && plan[*first].state != RUN_TODO) (*first)++;
    for (int i = *first; i < np; i++) {
        plan_run *r = &plan[i];
        if (r->state != RUN_TODO) continue;
        if (r->dep < 0) return i;
        const plan_run *a = &plan[r->dep];
        if (a->state == RUN_TODO || a->state == RUN_RUNNING) continue;        /* not yet */
        const char *why = a->state == RUN_DONE || a->state == RUN_SKIP
                          ? (access(a->save, F_OK) ? "the checkpoint of the run it starts from is missing (that run "
                             "was done without keeping it: remove its rows from the CSV to redo it)" : NULL)
                          : "the run it starts from did not finish";
        if (!why) return i;
        fprintf(stderr, "[%d/%d] %s FAILED: %s (%s)\n", i + 1, np, r->desc, why, a->desc);
        r->state = RUN_FAILED; (*nfail)++;
    }
    return -1;
}

int csv_upgrade(csvbuf *b)
{
    size_t h1 = strlen(AL_CSV_HEADER_V1), h2 = strlen(AL_CSV_HEADER_V2), h;
    const char *tail;                         /* what each row lacks */
    if (b->n >= h2 + 1 && !memcmp(b->p, AL_CSV_HEADER_V2, h2) && b->p[h2] == '\n') { h = h2; tail = ",,,,\n"; }
    else if (b->n >= h1 + 1 && !memcmp(b->p, AL_CSV_HEADER_V1, h1) && b->p[h1] == '\n') { h = h1; tail = ",,done,,,,\n"; }
    else return 0;                            /* no config (V1: written whole by the old sweep), no 0.5 columns */
    csvbuf nb = {0};
    int oom = buf_put(&nb, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1);
    for (const char *p = b->p + h + 1; *p && !oom;) {
        const char *nl = strchr(p, '\n');
        if (!nl) break;                       /* the reader refused a torn line already */
        oom |= buf_put(&nb, p, (size_t)(nl - p));
        oom |= buf_put(&nb, tail, strlen(tail));
        p = nl + 1;
    }
    if (oom) { free(nb.p); return -1; }
    free(b->p);
    *b = nb;
    return 0;
}
