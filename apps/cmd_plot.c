/* cmd_plot.c — attnlab plot: a results CSV drawn by gnuplot (pngcairo, or png when cairo is missing).
 *
 *   tradeoff  final test accuracy vs training-set size (log x), mean ± std over seeds, one line per model
 *   curves    test accuracy per epoch, mean ± std over seeds, one line per model, for one size
 *             (both: or --metric unseen_acc / ambig_acc, the sequence runs' word-class accuracies)
 *   graph-attention  from the CSV of `attnlab train --task graph --attention` (layer,head,src,dst,weight):
 *             the weight node N gives each of its neighbours, one bar per head, one panel per layer
 *
 * The gnuplot script (data inline as datablocks) is written to gnuplot's stdin, without its
 * `set output 'OUT'` line: gnuplot writes the image to its stdout, which is the temporary of an atomic
 * write of OUT (al_atomic_begin), committed over OUT only when gnuplot succeeded. The script saved
 * with --script keeps the line, so running it writes OUT.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "attnlab/io.h"
#include "attnlab/results.h"
#include "cli.h"

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab plot FILE.csv --out FILE.png [--kind tradeoff|curves] [--size N] [--by KEYS]\n"
        "                    [--metric test_acc|unseen_acc|ambig_acc] [--script FILE.gp]   (FILE.csv.gz too)\n"
        "       attnlab plot ATTENTION.csv --kind graph-attention --node N [--layer L] --out FILE.png\n"
        "  --kind tradeoff  final test accuracy vs training-set size (log x), mean +- std over seeds as error\n"
        "                   bars, one line per model and variant (default); for graph CSVs x is the number\n"
        "                   of labelled training nodes (labels per class x classes)\n"
        "  --kind curves    test accuracy per epoch (mean +- std over seeds), one line per model and variant,\n"
        "                   at one size\n"
        "  --by KEYS        variants by these config keys only (comma list, e.g. patch,pos; --by model: one\n"
        "                   line per model); default: the whole config. The legend names the keys that differ.\n"
        "                   Runs that did not finish are left out (attnlab summarize lists them)\n"
        "  --size N         curves: the training-set size to draw (default: the largest in the file)\n"
        "  --metric NAME    the y axis of tradeoff and curves: test_acc (default), or for sequence runs\n"
        "                   unseen_acc (test words unseen in train) or ambig_acc (test words that took two or\n"
        "                   more tags in train); runs without the column are left out\n"
        "  --kind graph-attention  the CSV of attnlab train --task graph --attention (layer,head,src,dst,weight,\n"
        "                   a row = dst attends to src): the weights node --node gives its neighbours (and\n"
        "                   itself), one bar per head, one panel per layer (or only --layer L)\n"
        "  --script FILE    also save the gnuplot script (data inline) to FILE\n"
        "  Needs gnuplot (Debian: gnuplot-nox); uses the pngcairo terminal, or png if cairo is missing.\n");
}

/* gnuplot single-quoted strings take everything literally except the quote itself. */
static int quotable(const char *s) { return !strchr(s, '\'') && !strchr(s, '\n'); }

/* One line of a plot: a model and a variant (config) of it. */
typedef struct series { const char *model, *config; char title[160]; } series;
static int same_series(const series *a, const char *model, const char *config)
{
    return !strcmp(a->model, model) && !strcmp(a->config, config);
}
/* Distinct (model, config) of the summary in its sorted order; titles name the model and the config
 * keys that differ between the summary's groups. */
static int series_of(const al_summary *s, series *out, int max)
{
    int n = 0;
    for (int i = 0; i < s->n && n < max; i++) {
        if (n && same_series(&out[n - 1], s->grp[i].model, s->grp[i].config)) continue;
        series *q = &out[n++];
        q->model = s->grp[i].model; q->config = s->grp[i].config;
        char label[128];
        al_summary_label(s, i, label, sizeof label);
        snprintf(q->title, sizeof q->title, "%s%s%s", q->model, *label ? " " : "", label);
        for (char *c = q->title; *c; c++) if (*c == '\'') *c = '"';   /* gnuplot single-quoted */
    }
    return n;
}

/* What the y axis shows, in words. */
static const char *metric_words(al_metric m)
{
    return m == AL_METRIC_UNSEEN_ACC ? "test accuracy on words unseen in train"
         : m == AL_METRIC_AMBIG_ACC ? "test accuracy on words ambiguous in train" : "test accuracy";
}

/* The script's `set output 'OUT'` line; oline[0..1] receive its byte range, which gnuplot is not given. */
static void output_line(FILE *f, const char *out, long oline[2])
{
    oline[0] = ftell(f);
    fprintf(f, "set output '%s'\n", out);
    oline[1] = ftell(f);
}

static void preamble(FILE *f, const char *out, long oline[2], al_metric metric)
{
    fprintf(f, "set encoding utf8\n");
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,640 noenhanced font ',11' }"
               " else { set terminal png size 960,640 noenhanced }\n");
    output_line(f, out, oline);
    fprintf(f, "set grid\nset key bottom right box opaque\nset ylabel '%s'\n", metric_words(metric));
}

static const char *size_words(const char *task)
{
    return !strcmp(task, "graph") ? "labelled training nodes (labels per class x classes)"
         : !strcmp(task, "sequence") ? "training-set size (sentences)"
         : !strcmp(task, "speech") ? "training-set size (clips)" : "training-set size (images)";
}

static int tradeoff(FILE *f, const al_results *r, const al_summary *s, const char *task, const char *dataset, al_metric mt)
{
    series m[64]; int nm = series_of(s, m, 64);
    int maxruns = 0;
    for (int i = 0; i < s->n; i++) if (s->grp[i].metric_runs[mt] > maxruns) maxruns = s->grp[i].metric_runs[mt];
    int drawn[64], nd = 0;
    for (int k = 0; k < nm; k++) {   /* a series without the metric (an image run's unseen_acc) is left out */
        int any = 0;
        for (int i = 0; i < s->n; i++)
            any |= same_series(&m[k], s->grp[i].model, s->grp[i].config) && s->grp[i].train_size > 0 && s->grp[i].metric_runs[mt];
        if (!any) continue;
        fprintf(f, "$d%d << EOD\n", nd);
        for (int i = 0; i < s->n; i++) {
            const al_summary_group *g = &s->grp[i];
            if (same_series(&m[k], g->model, g->config) && g->train_size > 0 && g->metric_runs[mt])
                fprintf(f, "%ld %.6f %.6f %d\n", g->train_size, g->metric_mean[mt], g->metric_std[mt], g->metric_runs[mt]);
        }
        fprintf(f, "EOD\n");
        drawn[nd++] = k;
    }
    (void)r;
    fprintf(f, "set logscale x\nset xlabel '%s'\n", size_words(task));
    /* gnuplot's log axis labels only powers of ten: a sweep narrower than two decades would show
     * no label at all, so there the ticks are the sizes themselves */
    long lo = 0, hi = 0, sizes[32]; int ns = 0;
    for (int i = 0; i < s->n; i++) {
        long v = s->grp[i].train_size;
        if (v <= 0) continue;
        if (!lo || v < lo) lo = v;
        if (v > hi) hi = v;
        int seen = 0;
        for (int j = 0; j < ns; j++) seen |= sizes[j] == v;
        if (!seen && ns < 32) sizes[ns++] = v;
    }
    if (lo > 0 && hi < 100 * lo && ns <= 24) {
        fprintf(f, "set xtics (");
        for (int j = 0; j < ns; j++) fprintf(f, "%s%ld", j ? ", " : "", sizes[j]);
        fprintf(f, ")\n");
    }
    if (maxruns > 1)
        fprintf(f, "set title '%s: final %s vs training-set size (mean ± std over up to %d seeds)'\n",
                dataset, metric_words(mt), maxruns);
    else fprintf(f, "set title '%s: final %s vs training-set size (one seed)'\n", dataset, metric_words(mt));
    fprintf(f, "set autoscale xfix\nset offsets graph 0.05, graph 0.05, 0, 0\nplot ");
    for (int k = 0; k < nd; k++)
        fprintf(f, "%s$d%d using 1:2:3 with yerrorlines lw 2 pt 7 title '%s'", k ? ", " : "", k, m[drawn[k]].title);
    fprintf(f, "\n");
    return 0;
}

static int curves(FILE *f, const al_results *r, const al_summary *s, long size, const char *dataset, const char *by,
                  al_metric mt)
{
    series m[64]; int nm = series_of(s, m, 64);
    int maxep = 0;
    for (int i = 0; i < r->n; i++) if (r->row[i].train_size == size && r->row[i].epoch > maxep) maxep = r->row[i].epoch;
    if (maxep == 0) { fprintf(stderr, "attnlab plot: no rows with training-set size %ld\n", size); return -1; }
    double *acc = malloc((size_t)r->nrun * sizeof *acc);
    if (!acc) return -1;
    int drawn[64], nd = 0;
    for (int k = 0; k < nm; k++) {
        int points = 0;   /* one model's points, streamed; models without this size are left out */
        for (int ep = 1; ep <= maxep; ep++) {
            int n = 0;
            for (int u = 0; u < r->nrun; u++) {
                const al_result_row *fst = &r->row[r->run[u].first];
                char cfg[512];
                al_config_filter(r->row[r->run[u].last].config, by, cfg, sizeof cfg);
                if (!r->run[u].complete || fst->train_size != size || !same_series(&m[k], fst->model, cfg)) continue;
                for (int i = r->run[u].first; i >= 0; i = r->next[i])
                    if (r->row[i].epoch == ep && !isnan(al_result_metric(&r->row[i], mt))) {
                        acc[n++] = al_result_metric(&r->row[i], mt);
                        break;
                    }
            }
            if (n == 0) continue;
            double mean, sd; al_mean_std(acc, n, &mean, &sd);
            if (!points++) fprintf(f, "$d%d << EOD\n", nd);
            fprintf(f, "%d %.6f %.6f %d\n", ep, mean, sd, n);
        }
        if (points == 0) continue;
        fprintf(f, "EOD\n");
        drawn[nd++] = k;
    }
    free(acc);
    fprintf(f, "set xlabel 'epoch'\nset title '%s, training-set size %ld: %s per epoch (mean ± std over seeds)'\n",
            dataset, size, metric_words(mt));
    fprintf(f, "set offsets graph 0.02, graph 0.02, 0, 0\nplot ");
    for (int k = 0; k < nd; k++)
        fprintf(f, "%s$d%d using 1:2:3 with yerrorlines lw 2 pt 7 title '%s'", k ? ", " : "", k, m[drawn[k]].title);
    fprintf(f, "\n");
    return 0;
}

/* ---- graph-attention: the rows layer,head,src,dst,weight with dst = node ---- */
typedef struct ga_row { int layer, head; long src; double w; } ga_row;

static int ga_cmp(const void *a, const void *b)
{
    const ga_row *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

static int graph_attention(FILE *f, const char *path, long node, int want_layer, const char *out, long oline[2])
{
    al_input ai;   /* a regular file or an inherited pipe; never a FIFO or device */
    al_error e = {{0}};
    FILE *in = NULL;
    if (al_input_open(&ai, path, AL_IN_STREAM, NULL, &e) != AL_OK || !(in = fdopen(ai.fd, "r"))) {
        if (!e.msg[0]) { al_input_close(&ai); al_seterr(&e, "%s: out of memory", path); }
        fprintf(stderr, "attnlab plot: %s\n", e.msg);
        return -1;
    }
    char line[512];
    long ln = 1, maxdst = -1;
    int rc = -1;
    ga_row *rows = NULL;
    size_t n = 0, cap = 0;
    if (!fgets(line, sizeof line, in) || strncmp(line, "layer,head,src,dst,weight", 25)) {
        fprintf(stderr, "attnlab plot: %s is not an attention CSV (expected the header layer,head,src,dst,weight)\n", path);
        goto done;
    }
    while (fgets(line, sizeof line, in)) {
        ln++;
        int layer, head; long src, dst; double w; char tail;
        if (sscanf(line, "%d,%d,%ld,%ld,%lf %c", &layer, &head, &src, &dst, &w, &tail) != 5 || layer < 1 ||
            layer > 64 || head < 0 || head >= 64 || src < 0 || dst < 0 || !isfinite(w)) {
            fprintf(stderr, "attnlab plot: %s:%ld: expected layer,head,src,dst,weight\n", path, ln);
            goto done;
        }
        if (dst > maxdst) maxdst = dst;
        if (dst != node || (want_layer > 0 && layer != want_layer)) continue;
        if (n == cap) {
            if (al_mem_check(al_size_mul(cap ? 2 * cap : 256, sizeof *rows), &e, "%s: the rows of node %ld", path, node)) {
                fprintf(stderr, "attnlab plot: %s\n", e.msg);
                goto done;
            }
            ga_row *nr = realloc(rows, (cap = cap ? 2 * cap : 256) * sizeof *rows);
            if (!nr) { fprintf(stderr, "attnlab plot: out of memory\n"); goto done; }
            rows = nr;
        }
        rows[n++] = (ga_row){layer, head, src, w};
    }
    if (n == 0) {
        if (want_layer > 0) fprintf(stderr, "attnlab plot: %s has no layer %d rows for node %ld (dst nodes 0..%ld)\n", path, want_layer, node, maxdst);
        else fprintf(stderr, "attnlab plot: %s has no rows for node %ld (dst nodes 0..%ld)\n", path, node, maxdst);
        goto done;
    }
    qsort(rows, n, sizeof *rows, ga_cmp);
    int layers[64], nl = 0;
    for (size_t i = 0; i < n; i++) if (nl == 0 || layers[nl - 1] != rows[i].layer) layers[nl++] = rows[i].layer;
    long nb0 = 0;
    for (size_t i = 0; i < n; i++) if (rows[i].layer == layers[0] && (i == 0 || rows[i - 1].src != rows[i].src)) nb0++;
    fprintf(f, "set encoding utf8\n");
    fprintf(f, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 960,%d noenhanced font ',10' }"
               " else { set terminal png size 960,%d noenhanced }\n", 80 + 340 * nl, 80 + 340 * nl);
    output_line(f, out, oline);
    fprintf(f, "set multiplot layout %d,1 title 'node %ld: attention weight it gives each neighbour (and itself), per head'\n", nl, node);
    fprintf(f, "set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.85 border -1\n");
    fprintf(f, "set grid ytics\nset yrange [0:*]\nset ylabel 'attention weight'\nset xlabel 'neighbour (src node)'\n");
    fprintf(f, "set key outside right top\n%s\n", nb0 > 16 ? "set xtics rotate by -60 font ',8'" : "set xtics norotate");
    size_t i = 0;
    for (int L = 0; L < nl; L++) {
        int heads = 0;
        long nb = 0;
        size_t start = i;
        for (; i < n && rows[i].layer == layers[L]; i++) {
            if (rows[i].head + 1 > heads) heads = rows[i].head + 1;
            if (i == start || rows[i - 1].src != rows[i].src) nb++;
        }
        fprintf(f, "set style fill solid 0.85 %s\n", nb * heads > 200 ? "noborder" : "border -1");   /* borders hide thin bars */
        fprintf(f, "$L%d << EOD\n", L);
        for (size_t j = start; j < i;) {   /* one line per neighbour: label, then the weight of every head */
            long src = rows[j].src;
            double w[64] = {0};
            for (; j < i && rows[j].src == src; j++) w[rows[j].head] = rows[j].w;
            fprintf(f, src == node ? "\"%ld (self)\"" : "\"%ld\"", src);
            for (int h = 0; h < heads; h++) fprintf(f, " %.6g", w[h]);
            fprintf(f, "\n");
        }
        fprintf(f, "EOD\n");
        /* a dashed line at 1/k: what attention that ignores the features (uniform, as a GCN-like mean) gives */
        fprintf(f, "unset arrow\nset arrow from graph 0, first %.6g to graph 1, first %.6g nohead dt 2 lw 1.5 lc rgb 'black' front\n",
                1.0 / (double)nb, 1.0 / (double)nb);
        fprintf(f, "set title 'layer %d: %ld neighbours incl. itself, %d head%s (dashed: uniform 1/%ld)'\nplot ", layers[L], nb,
                heads, heads > 1 ? "s" : "", nb);
        long every = (nb + 39) / 40;   /* at most ~40 tick labels */
        for (int h = 0; h < heads; h++) {
            fprintf(f, "%s$L%d using %d", h ? ", " : "", L, h + 2);
            if (h == 0 && every > 1) fprintf(f, ":xtic(int($0) %% %ld == 0 ? stringcolumn(1) : '')", every);
            else if (h == 0) fprintf(f, ":xtic(1)");
            fprintf(f, " title 'head %d'", h + 1);
        }
        fprintf(f, "\n");
    }
    fprintf(f, "unset multiplot\n");
    rc = 0;
done:
    free(rows);
    fclose(in);
    return rc;
}

/* Feed the script but its bytes [oline[0], oline[1]) to gnuplot on a pipe, gnuplot's stdout going to
 * outfd; returns gnuplot's exit status, or 127 if it cannot be run. */
static int run_gnuplot(const char *script, size_t n, const long oline[2], int outfd)
{
    int fd[2];
    if (pipe(fd)) return -1;
    pid_t pid = fork();
    if (pid < 0) { close(fd[0]); close(fd[1]); return -1; }
    if (pid == 0) {
        dup2(fd[0], 0); close(fd[0]); close(fd[1]);
        if (dup2(outfd, 1) < 0) _exit(126);
        execlp("gnuplot", "gnuplot", (char *)NULL);
        _exit(127);
    }
    close(fd[0]);
    void (*old)(int) = signal(SIGPIPE, SIG_IGN);
    const size_t part[2][2] = {{0, (size_t)oline[0]}, {(size_t)oline[1], n}};
    for (int i = 0; i < 2; i++)
        for (size_t off = part[i][0]; off < part[i][1];) {
            ssize_t k = write(fd[1], script + off, part[i][1] - off);
            if (k < 0) { if (errno == EINTR) continue; i = 2; break; }   /* gnuplot gone: its status says why */
            off += (size_t)k;
        }
    close(fd[1]);
    signal(SIGPIPE, old);
    int st;
    while (waitpid(pid, &st, 0) < 0) if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Save the script if asked, run gnuplot into the temporary of an atomic write of out, commit it.
 * Returns the exit status. */
static int emit(const char *script, size_t slen, const long oline[2], const char *script_path, const char *out)
{
    al_error err = {{0}};
    if (script_path && al_write_atomic(script_path, script, slen, &err) != AL_OK) {
        fprintf(stderr, "attnlab plot: --script %s\n", err.msg);
        return 1;
    }
    al_atomic a;
    if (al_atomic_begin(&a, out, &err) != AL_OK) { fprintf(stderr, "attnlab plot: --out %s\n", err.msg); return 1; }
    int st = run_gnuplot(script, slen, oline, a.fd);
    struct stat sb;
    if (st == 127) fprintf(stderr, "attnlab plot: cannot run gnuplot (is it installed? Debian: apt-get install gnuplot-nox)\n");
    else if (st != 0) fprintf(stderr, "attnlab plot: gnuplot failed (status %d)\n", st);
    else if (fstat(a.fd, &sb) || sb.st_size == 0) fprintf(stderr, "attnlab plot: gnuplot wrote no image\n");
    else if (al_atomic_commit(&a, &err) != AL_OK) { fprintf(stderr, "attnlab plot: --out %s\n", err.msg); return 1; }
    else return 0;
    al_atomic_abort(&a);
    return 1;
}

/* attnlab plot ATTENTION.csv --kind graph-attention --node N [--layer L] */
static int plot_graph_attention(const char *path, long node, int layer, const char *out, const char *script_path)
{
    char *script = NULL; size_t slen = 0;
    long oline[2] = {0, 0};
    FILE *f = open_memstream(&script, &slen);
    if (!f) { fprintf(stderr, "attnlab plot: out of memory\n"); return 1; }
    int bad = graph_attention(f, path, node, layer, out, oline);
    fprintf(f, "set output\n");
    if (fclose(f)) { free(script); fprintf(stderr, "attnlab plot: out of memory\n"); return 1; }
    int rc = bad ? 1 : emit(script, slen, oline, script_path, out);
    free(script);
    return rc;
}

int cmd_plot(int argc, char **argv)
{
    static const struct option opts[] = {
        {"out", required_argument, 0, 'o'}, {"kind", required_argument, 0, 'k'}, {"size", required_argument, 0, 's'},
        {"script", required_argument, 0, 'S'}, {"node", required_argument, 0, 'N'}, {"layer", required_argument, 0, 'L'},
        {"by", required_argument, 0, 'b'}, {"metric", required_argument, 0, 'M'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *out = NULL, *kind = "tradeoff", *script_path = NULL, *by = NULL, *metric_name = NULL;
    long size = -1, node = -1;
    int ch, layer = 0;
    optind = 0; opterr = 0;
    while ((ch = getopt_long(argc, argv, "ho:", opts, NULL)) != -1) {
        switch (ch) {
        case 'h': usage(stdout); return 0;
        case 'o': out = optarg; break;
        case 'k': kind = optarg; break;
        case 'S': script_path = optarg; break;
        case 'b': by = optarg; break;
        case 'M': metric_name = optarg; break;
        case 's': {
            char *e; errno = 0; size = strtol(optarg, &e, 10);
            if (errno || *e || size < 1) { fprintf(stderr, "attnlab plot: --size: '%s' is not a positive integer\n", optarg); return 2; }
            break;
        }
        case 'N': case 'L': {
            char *e; errno = 0; long v = strtol(optarg, &e, 10);
            if (e == optarg || errno || *e || v < (ch == 'N' ? 0 : 1) || v > 1000000000L) {
                fprintf(stderr, "attnlab plot: --%s: '%s' is not a %s integer\n", ch == 'N' ? "node" : "layer", optarg,
                        ch == 'N' ? "non-negative" : "positive");
                return 2;
            }
            if (ch == 'N') node = v; else layer = (int)v;
            break;
        }
        default: fprintf(stderr, "attnlab plot: unknown or incomplete option '%s' (see --help)\n", argv[optind - 1]); return 2;
        }
    }
    if (optind != argc - 1) { fprintf(stderr, "attnlab plot: expected one CSV file (see --help)\n"); return 2; }
    if (!out) { fprintf(stderr, "attnlab plot: --out FILE.png is required\n"); return 2; }
    int ga = !strcmp(kind, "graph-attention");
    if (strcmp(kind, "tradeoff") && strcmp(kind, "curves") && !ga) {
        fprintf(stderr, "attnlab plot: --kind: unknown kind '%s' (expected tradeoff, curves or graph-attention)\n", kind);
        return 2;
    }
    if (strlen(out) >= 4096 || !quotable(out)) {   /* the saved script names it in a gnuplot string */
        fprintf(stderr, "attnlab plot: cannot use output path '%s' (too long, or contains a quote)\n", out);
        return 2;
    }
    /* the outputs must be writable before any work */
    const char *path = argv[optind];
    if (ga && node < 0) { fprintf(stderr, "attnlab plot: --kind graph-attention needs --node N\n"); return 2; }
    if (!ga && (node >= 0 || layer)) { fprintf(stderr, "attnlab plot: --node and --layer go with --kind graph-attention\n"); return 2; }
    if (cli_output("plot", "--out", out, 0) || cli_output("plot", "--script", script_path, 0)) return 2;
    int mt = metric_name ? al_metric_find(metric_name) : AL_METRIC_TEST_ACC;
    if (mt < 0) {
        fprintf(stderr, "attnlab plot: --metric: unknown metric '%s' (expected test_acc, unseen_acc or ambig_acc)\n", metric_name);
        return 2;
    }
    if (ga && metric_name) { fprintf(stderr, "attnlab plot: --metric goes with --kind tradeoff or curves\n"); return 2; }
    if (ga) return plot_graph_attention(path, node, layer, out, script_path);
    al_results r; al_summary s; al_error e = {{0}};
    if (al_results_read(path, &r, &e) != AL_OK) { fprintf(stderr, "attnlab plot: %s\n", e.msg); return 1; }
    if (al_results_summarize_by(&r, by, &s, &e) != AL_OK) { fprintf(stderr, "attnlab plot: %s\n", e.msg); al_results_free(&r); return 1; }
    int rc = 1;
    char *script = NULL; size_t slen = 0;
    long oline[2] = {0, 0};
    FILE *f = NULL;
    if (s.n == 0) { fprintf(stderr, "attnlab plot: %s holds no runs\n", path); goto out; }
    for (int i = 1; i < s.n; i++)
        if (strcmp(s.grp[i].task, s.grp[0].task) || strcmp(s.grp[i].dataset, s.grp[0].dataset)) {
            fprintf(stderr, "attnlab plot: %s mixes %s/%s and %s/%s runs; plot one task and dataset per file\n", path,
                    s.grp[0].task, s.grp[0].dataset, s.grp[i].task, s.grp[i].dataset);
            goto out;
        }
    for (int i = 0; i < s.n; i++)
        if (!quotable(s.grp[i].model) || !quotable(s.grp[i].dataset)) {
            fprintf(stderr, "attnlab plot: %s: a model or dataset name contains a quote\n", path);
            goto out;
        }
    if (!al_summary_has_metric(&s, (al_metric)mt)) {
        fprintf(stderr, "attnlab plot: %s has no %s values (sequence runs of attnlab >= 0.5 record unseen_acc and ambig_acc)\n",
                path, al_metric_name((al_metric)mt));
        goto out;
    }
    if (size < 0) for (int i = 0; i < s.n; i++) if (s.grp[i].train_size > size) size = s.grp[i].train_size;
    f = open_memstream(&script, &slen);
    if (!f) { fprintf(stderr, "attnlab plot: out of memory\n"); goto out; }
    preamble(f, out, oline, (al_metric)mt);
    int bad = !strcmp(kind, "tradeoff") ? tradeoff(f, &r, &s, s.grp[0].task, s.grp[0].dataset, (al_metric)mt)
                                        : curves(f, &r, &s, size, s.grp[0].dataset, by, (al_metric)mt);
    fprintf(f, "set output\n");
    if (fclose(f)) { f = NULL; fprintf(stderr, "attnlab plot: out of memory\n"); goto out; }
    f = NULL;
    if (bad) goto out;
    rc = emit(script, slen, oline, script_path, out);
out:
    if (f) fclose(f);
    free(script);
    al_summary_free(&s);
    al_results_free(&r);
    return rc;
}
