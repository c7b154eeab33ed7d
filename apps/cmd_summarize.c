/* cmd_summarize.c — attnlab summarize: final test accuracy (mean ± std over seeds) per task,
 * dataset, model and training-set size, as an aligned table or as CSV. */
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include "attnlab/results.h"
#include "cli.h"

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab summarize FILE.csv [--csv] [--by KEYS]\n"
        "  Reads a results CSV (one row per epoch, the last row of a run is its result) and prints, per\n"
        "  task, dataset, model, variant (the run's config: patch, pos, score, lr, split kind, ...) and\n"
        "  training-set size, the final test accuracy as mean +- sample std over runs (seeds), the number\n"
        "  of runs, the mean epoch of the final row (graph runs: the restored best epoch), parameters and\n"
        "  mean training seconds per run (sum of epoch_seconds). The variant column shows the config keys\n"
        "  whose values differ between groups. Runs that did not finish (no final row marked done, e.g.\n"
        "  killed) are listed on stderr and never averaged. Sorted by model, variant, then size.\n"
        "  --csv       print CSV instead of the aligned table (with the group's whole config)\n"
        "  --by KEYS   group by the model and only these config keys (comma list, e.g. patch,pos;\n"
        "              --by model merges every variant of a model); default: the whole config\n"
        "  -h, --help\n");
}

static int width(const char *s, int w) { int n = (int)strlen(s); return n > w ? n : w; }

static void print_csv(const al_summary *s)
{
    printf("task,dataset,model,train_size,runs,test_acc_mean,test_acc_std,epochs_mean,params,seconds_per_run,config\n");
    for (int i = 0; i < s->n; i++) {
        const al_summary_group *grp = &s->grp[i];
        printf("%s,%s,%s,%ld,%d,%.6f,%.6f,%.2f,%ld,%.3f,%s\n", grp->task, grp->dataset, grp->model, grp->train_size,
               grp->nruns, grp->mean, grp->std, grp->mean_epochs, grp->params, grp->mean_seconds, grp->config);
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
    printf("%-*s  %-*s  %-*s  %s%-*s%s%8s  %4s  %-17s  %6s  %9s  %9s\n", wt, "task", wd, "dataset", wm, "model",
           "", wv, wv ? "variant" : "", wv ? "  " : "", "size", "runs", "test_acc (+- std)", "epochs", "params", "s/run");
    for (int i = 0; i < s->n; i++) {
        const al_summary_group *grp = &s->grp[i];
        char acc[32];
        snprintf(acc, sizeof acc, "%.4f +- %.4f", grp->mean, grp->std);
        printf("%-*s  %-*s  %-*s  %s%-*s%s%8ld  %4d  %-17s  %6.1f  %9ld  %9.1f\n", wt, grp->task, wd, grp->dataset, wm,
               grp->model, "", wv, var[i], wv ? "  " : "", grp->train_size, grp->nruns, acc, grp->mean_epochs,
               grp->params, grp->mean_seconds);
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
