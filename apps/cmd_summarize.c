/* cmd_summarize.c — attnlab summarize: final test accuracy (mean ± std over seeds) per task,
 * dataset, model and training-set size, as an aligned table or as CSV; the sequence runs' unseen_acc
 * and ambig_acc beside it when the file has them. */
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "attnlab/results.h"
#include "cli.h"

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab summarize FILE.csv [--csv] [--by KEYS]\n"
        "  Reads a results CSV (or FILE.csv.gz; one row per epoch, the last row of a run is its result) and\n"
        "  prints, per task, dataset, model, variant (the run's config: patch, pos, score, lr, split kind, ...)\n"
        "  and training-set size, the final test accuracy as mean +- sample std over runs (seeds; n/a, or an\n"
        "  empty CSV field, for a single run), the number of runs, the mean epoch of the final row (graph\n"
        "  runs and image runs with --val-size: the kept model's epoch), parameters and mean training seconds per run (sum of\n"
        "  epoch_seconds). When the file has them (sequence runs of attnlab >= 0.5), unseen_acc and\n"
        "  ambig_acc (accuracy on test words unseen in train, and on words that took two or more tags in\n"
        "  train) follow as mean +- std too. The variant column shows the config keys whose values differ\n"
        "  between groups. Runs that did not finish (no final row marked done, e.g. killed) are listed on\n"
        "  stderr and never averaged. Sorted by model, variant, then size.\n"
        "  --csv       print CSV instead of the aligned table (with the group's whole config)\n"
        "  --by KEYS   group by the model and only these config keys (comma list, e.g. patch,pos;\n"
        "              --by model merges every variant of a model); default: the whole config\n"
        "  -h, --help\n");
}

static int width(const char *s, int w) { int n = (int)strlen(s); return n > w ? n : w; }

/* The metrics beyond test_acc that some group has (unseen_acc, ambig_acc); returns how many. */
static int extra_metrics(const al_summary *s, al_metric *out)
{
    int n = 0;
    for (int m = AL_METRIC_TEST_ACC + 1; m < AL_NMETRICS; m++) if (al_summary_has_metric(s, (al_metric)m)) out[n++] = (al_metric)m;
    return n;
}

/* "0.1234 +- 0.0012"; "0.1234 +- n/a" from one run (a sample std needs two); "-" for a group without the metric. */
static void mean_std_text(double mean, double std, int runs, char *buf, size_t n)
{
    if (runs == 0) snprintf(buf, n, "-");
    else if (runs == 1) snprintf(buf, n, "%.4f +- n/a", mean);
    else snprintf(buf, n, "%.4f +- %.4f", mean, std);
}
static void mean_std_str(const al_summary_group *g, al_metric m, char *buf, size_t n)
{
    mean_std_text(g->metric_mean[m], g->metric_std[m], g->metric_runs[m], buf, n);
}
/* A CSV field: the std, or empty from fewer than two runs. */
static void std_field(double std, int runs)
{
    if (runs >= 2) printf(",%.6f", std); else printf(",");
}

static void print_csv(const al_summary *s)
{
    al_metric ex[AL_NMETRICS];
    int nex = extra_metrics(s, ex);
    printf("task,dataset,model,train_size,runs,test_acc_mean,test_acc_std,epochs_mean,params,seconds_per_run,config");
    for (int k = 0; k < nex; k++) printf(",%s_mean,%s_std", al_metric_name(ex[k]), al_metric_name(ex[k]));
    printf("\n");
    for (int i = 0; i < s->n; i++) {
        const al_summary_group *grp = &s->grp[i];
        printf("%s,%s,%s,%ld,%d,%.6f", grp->task, grp->dataset, grp->model, grp->train_size, grp->nruns, grp->mean);
        std_field(grp->std, grp->nruns);
        printf(",%.2f,%ld,%.3f,%s", grp->mean_epochs, grp->params, grp->mean_seconds, grp->config);
        for (int k = 0; k < nex; k++) {   /* empty fields where the group has no value */
            if (grp->metric_runs[ex[k]]) { printf(",%.6f", grp->metric_mean[ex[k]]); std_field(grp->metric_std[ex[k]], grp->metric_runs[ex[k]]); }
            else printf(",,");
        }
        printf("\n");
    }
}

/* The aligned table; a "variant" column (the config keys that differ between groups) when any differ. */
static void print_table(const al_summary *s)
{
    int wt = 4, wd = 7, wm = 5, wv = 0;   /* wv: the variant column, shown when a model has several */
    char (*var)[256] = calloc((size_t)s->n, sizeof *var);
    if (!var) { fprintf(stderr, "attnlab summarize: out of memory\n"); return; }
    for (int i = 0; i < s->n; i++) {
        wt = width(s->grp[i].task, wt); wd = width(s->grp[i].dataset, wd); wm = width(s->grp[i].model, wm);
        al_summary_label(s, i, var[i], sizeof var[i]);
        wv = width(var[i], wv);
    }
    if (wv) wv = width("variant", wv);
    al_metric ex[AL_NMETRICS];
    int nex = extra_metrics(s, ex);
    printf("%-*s  %-*s  %-*s  %s%-*s%s%8s  %4s  %-17s", wt, "task", wd, "dataset", wm, "model",
           "", wv, wv ? "variant" : "", wv ? "  " : "", "size", "runs", "test_acc (+- std)");
    for (int k = 0; k < nex; k++) printf("  %-19s", ex[k] == AL_METRIC_UNSEEN_ACC ? "unseen_acc (+- std)" : "ambig_acc (+- std)");
    printf("  %6s  %9s  %9s\n", "epochs", "params", "s/run");
    for (int i = 0; i < s->n; i++) {
        const al_summary_group *grp = &s->grp[i];
        char acc[32];
        mean_std_text(grp->mean, grp->std, grp->nruns, acc, sizeof acc);
        printf("%-*s  %-*s  %-*s  %s%-*s%s%8ld  %4d  %-17s", wt, grp->task, wd, grp->dataset, wm,
               grp->model, "", wv, var[i], wv ? "  " : "", grp->train_size, grp->nruns, acc);
        for (int k = 0; k < nex; k++) { mean_std_str(grp, ex[k], acc, sizeof acc); printf("  %-19s", acc); }
        printf("  %6.1f  %9ld  %9.1f\n", grp->mean_epochs, grp->params, grp->mean_seconds);
    }
    free(var);
}

int cmd_summarize(int argc, char **argv)
{
    static const struct option opts[] = {{"csv", no_argument, 0, 'c'}, {"by", required_argument, 0, 'b'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    int as_csv = 0, ch;
    const char *by = NULL;
    optind = 0; opterr = 0;
    while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (ch == 'c') as_csv = 1;
        else if (ch == 'b') by = optarg;
        else if (ch == 'h') { usage(stdout); return 0; }
        else return cli_bad_option("summarize", argv);
    }
    if (optind != argc - 1) {
        fprintf(stderr, "attnlab summarize: expected exactly one CSV file (see --help)\n");
        return 2;
    }
    const char *path = argv[optind];
    al_results r; al_summary s; al_error e = {{0}};
    if (al_results_read(path, &r, &e) != AL_OK) { fprintf(stderr, "attnlab summarize: %s\n", e.msg); return 1; }
    if (al_results_summarize_by(&r, by, &s, &e) != AL_OK) {
        al_results_free(&r);
        fprintf(stderr, "attnlab summarize: %s\n", e.msg);
        return 1;
    }
    for (int i = 0; i < s.nincomplete; i++) {
        const al_result_row *last = &r.row[r.run[s.incomplete[i]].last];
        fprintf(stderr, "attnlab summarize: %s: run %s (%s size %ld seed %ld) stopped at epoch %d without finishing; "
                "not counted\n", path, last->run_id, last->model, last->train_size, last->seed, last->epoch);
    }
    if (as_csv) print_csv(&s);
    else if (s.n == 0) printf("%s: no complete runs\n", path);
    else print_table(&s);
    al_summary_free(&s);
    al_results_free(&r);
    return 0;
}
