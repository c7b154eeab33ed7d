/* bench_graph.c — attnlab bench graph: ms per training epoch (forward, backward, Adam step) of the
 * graph models on Cora and on large random graphs, with the peak resident memory of each run. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/train.h"
#include "attnlab/gnn.h"
#include "attnlab/kernels.h"

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab bench graph [OPTIONS]\n\n"
        "Milliseconds per full-batch training epoch (forward, backward, optimiser step; no evaluation),\n"
        "wall clock (median and min) and process CPU time (median, all threads: the figure to trust on a\n"
        "loaded machine), and the peak resident memory (VmHWM) of each run, in a child process per run.\n"
        "Random graphs: uniform random distinct directed edges, 64 dense features per node (stored as\n"
        "CSR), 7 classes, 10 %% of the nodes for training; models use their default sizes.\n\n"
        "  --graphs LIST   comma-separated: cora (or a dataset NAME / DIR) and NODESxEDGES random graphs\n"
        "                  (default cora,1000000x1000000,1000000x5000000,1000000x10000000)\n"
        "  --models LIST   comma-separated (default gat,gcn)\n"
        "  --epochs N      timed epochs per run (default: 50 for graphs under 100 000 nodes, 3 above),\n"
        "                  after 2 untimed warm-up epochs (1 above 100 000 nodes: the first timed epoch\n"
        "                  then still touches fresh pages of the activation arena, which the median skips)\n"
        "  --features F    features of random graphs (default 64)\n"
        "  --threads T     OpenMP threads (default: OMP_NUM_THREADS or all cores)\n"
        "  --max-memory SIZE  memory budget of each graph and model, e.g. 512M or 4G\n"
        "  --quick         cora and a 100000x1000000 random graph only\n"
        "  --help\n");
}

typedef struct bopts { int epochs, nfeat, threads; } bopts;

/* CPU seconds of the whole process (all threads): meaningful on a shared, loaded machine. */
static double cpu_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* Median of v[n] (sorts v). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One run in this (child) process: prints one table row; returns the exit status. */
static int run_one(const al_graph *g, const char *model, const bopts *o)
{
    al_error err = {{0}};
    al_gnn_kind kind;
    if (al_gnn_kind_parse(model, &kind, &err)) { fprintf(stderr, "attnlab bench graph: %s\n", err.msg); return 2; }
    al_gnn_config cfg; al_gnn_config_default(&cfg, al_gnn_kind_name(kind), NULL);
    al_gnn m;
    if (al_gnn_init(&m, &cfg, g, 1, &err)) { fprintf(stderr, "attnlab bench graph: %s\n", err.msg); return 1; }
    al_ctx *c = al_ctx_new(1);
    al_optim opt;
    if (!c || al_optim_init(&opt, AL_ADAM, m.params.total, cfg.lr, &err)) {
        fprintf(stderr, "attnlab bench graph: %s\n", err.msg[0] ? err.msg : "out of memory");
        al_gnn_free(&m); al_ctx_free(c); return 1;
    }
    opt.weight_decay = cfg.weight_decay;
    int big = g->n >= 100000;
    int warm = big ? 1 : 2, epochs = o->epochs > 0 ? o->epochs : big ? 3 : 50;
    double loss = 0;
    double *wall = malloc((size_t)epochs * sizeof *wall), *cpu = malloc((size_t)epochs * sizeof *cpu);   /* (epochs) */
    int rc = !wall || !cpu;
    if (rc) fprintf(stderr, "attnlab bench graph: out of memory\n");
    for (int e = 0; !rc && e < warm + epochs; e++) {
        double t0 = al_time(), c0 = cpu_seconds();
        if (al_gnn_step(&m, g, c, &opt, &loss, &err)) { fprintf(stderr, "attnlab bench graph: %s\n", err.msg); rc = 1; break; }
        if (e >= warm) { wall[e - warm] = al_time() - t0; cpu[e - warm] = cpu_seconds() - c0; }
    }
    if (!rc) {
        double best = wall[0];
        for (int e = 1; e < epochs; e++) if (wall[e] < best) best = wall[e];
        printf("%-22s %9d %10lld %-8s %7d %11.2f %9.2f %9.2f %10.0f %9.0f\n", g->name, g->n, (long long)g->adj.nnz, model,
               al_threads(), 1e3 * median(wall, epochs), 1e3 * best, 1e3 * median(cpu, epochs),
               (double)al_peak_rss_bytes() / (1 << 20), (double)c->arena.peak / (1 << 20));
    }
    free(wall); free(cpu);
    fflush(stdout);
    al_optim_free(&opt); al_ctx_free(c); al_gnn_free(&m);
    return rc;
}

static int run_forked(const al_graph *g, const char *model, const bopts *o)
{
    fflush(stdout); fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return run_one(g, model, o);   /* no fork: run here (RSS then includes earlier runs) */
    if (pid == 0) _exit(run_one(g, model, o));
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        fprintf(stderr, "attnlab bench graph: %s on %s died with signal %d\n", model, g->name, WTERMSIG(status));
        return 1;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int bench_graph_main(int argc, char **argv)
{
    const char *graphs = "cora,1000000x1000000,1000000x5000000,1000000x10000000", *models = "gat,gcn";
    bopts o = {0, 64, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int has = i + 1 < argc;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return 0; }
        else if (!strcmp(a, "--quick")) graphs = "cora,100000x1000000";
        else if (!strcmp(a, "--graphs") && has) graphs = argv[++i];
        else if (!strcmp(a, "--models") && has) models = argv[++i];
        else if (!strcmp(a, "--threads") && has) { if (cli_threads("bench graph", argv[++i], &o.threads)) return 2; }
        else if (!strcmp(a, "--max-memory") && has) { if (cli_max_memory("bench graph", argv[++i])) return 2; }
        else if ((!strcmp(a, "--epochs") || !strcmp(a, "--features")) && has) {
            char *e; long v = strtol(argv[++i], &e, 10);
            if (*e || e == argv[i] || v < 1 || v > 100000000) {
                fprintf(stderr, "attnlab bench graph: %s expects a positive integer, got '%s'\n", a, argv[i]); return 2;
            }
            if (!strcmp(a, "--epochs")) o.epochs = (int)v; else if (!strcmp(a, "--features")) o.nfeat = (int)v; else o.threads = (int)v;
        } else {
            fprintf(stderr, "attnlab bench graph: unknown option '%s' (see attnlab bench graph --help)\n", a);
            return 2;
        }
    }
    if (cli_check_env_threads("bench graph")) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    printf("# attnlab bench graph: %d threads, gemm %s; wall ms per training epoch (median, min), CPU ms per epoch\n"
           "# (all threads; on an idle machine about threads x wall), peak RSS of the run, arena = peak\n"
           "# activation memory of one step\n", al_threads(), al_gemm_backend());
    printf("%-22s %9s %10s %-8s %7s %11s %9s %9s %10s %9s\n", "graph", "nodes", "edges", "model", "threads",
           "ms/epoch", "min", "cpu ms", "RSS MiB", "arena MiB");
    int rc = 0;
    char glist[1024];
    snprintf(glist, sizeof glist, "%s", graphs);
    for (char *sv = NULL, *gname = strtok_r(glist, ",", &sv); gname; gname = strtok_r(NULL, ",", &sv)) {
        al_graph g; al_error err = {{0}};
        long long nn, ne; char extra;
        if (sscanf(gname, "%lldx%lld%c", &nn, &ne, &extra) == 2) {
            if (nn < 10 || nn > 100000000 || ne < 0 || ne > (long long)nn * (nn - 1)) {
                fprintf(stderr, "attnlab bench graph: bad random graph size '%s'\n", gname); return 2;
            }
            double t0 = al_time();
            if (al_graph_random(&g, (int)nn, ne, o.nfeat, 7, 1, &err)) { fprintf(stderr, "attnlab bench graph: %s\n", err.msg); return 1; }
            fprintf(stderr, "attnlab bench graph: generated %s in %.1f s\n", g.name, al_time() - t0);
        } else {
            char dir[4096];
            if (al_graph_resolve(gname, argv[0], dir, sizeof dir, &err) || al_graph_load(&g, dir, 1, &err)) {
                fprintf(stderr, "attnlab bench graph: %s\n", err.msg); return 1;
            }
        }
        char mlist[256];
        snprintf(mlist, sizeof mlist, "%s", models);
        for (char *sm = NULL, *m = strtok_r(mlist, ",", &sm); m; m = strtok_r(NULL, ",", &sm)) {
            int r = run_forked(&g, m, &o);
            if (r == 2) { al_graph_free(&g); return 2; }
            if (r) rc = 1;
        }
        al_graph_free(&g);
    }
    return rc;
}
