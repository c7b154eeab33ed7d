/* cmd_sweep.c — attnlab sweep: models × training-set sizes (or graph splits) × seeds, each run a child
 * `attnlab train` process, all results in one CSV that is only ever replaced atomically.
 *
 * Resumability. A run is identified by (task, dataset, model, split, seed), where split is
 * "size=N", "lpc=K", "frac=F" or "planetoid"; its run_id in the sweep CSV is al_run_id() of that
 * description (the child's own run_id is replaced when its rows are merged), so a run whose run_id
 * is in the CSV is complete. A child writes CSV.run-RUNID.part (its stderr goes to .part.log,
 * shown only if the run fails) and its training state to CSV.run-RUNID.train after every epoch
 * (--checkpoint-every 1 --resume). When it exits 0 the sweep writes old CSV + the child's rows to a
 * temporary CSV.tmp.HOST.PID, fsyncs and renames it over CSV (al_write_atomic). On start, a part file
 * with its state is kept and its run continues from the state (the child cuts the rows written after
 * it); other *.part and *.part.log files left by a killed sweep, and the temporaries its processes
 * left on this host (al_tmp_stale), are deleted and their runs redone. Children get
 * PR_SET_PDEATHSIG(SIGKILL), so a sweep killed with SIGKILL leaves no orphan writing. A lock file
 * CSV.lock (flock) keeps two sweeps off one CSV. docs/experiments.md has the whole story.
 */
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
#include "attnlab/molecule.h"
#include "attnlab/molnet.h"
#include "attnlab/results.h"
#include "attnlab/datadir.h"
#include "attnlab/seq.h"
#include "attnlab/text.h"
#include "cli.h"
#include "sweep.h"
#include "image_common.h"
#include "app_mpi.h"
#include "train_flags.h"

/* ---------------- usage ---------------- */
static void usage(FILE *f)
{
    char seq_models[128], mol_models[128];
    snprintf(seq_models, sizeof seq_models, "%s", al_seq_arch_names());
    snprintf(mol_models, sizeof mol_models, "%s", al_molnet_arch_names());
    for (char *p = seq_models; *p; p++) if (*p == '|') *p = ',';
    for (char *p = mol_models; *p; p++) if (*p == '|') *p = ',';
    cli_usage(f,
        "usage: attnlab sweep --preset NAME|FILE.preset [--csv FILE] [--seeds LIST] [--jobs N]\n"
        "       attnlab sweep --task image|sequence|speech --models a,b,... --train-sizes n1,n2,... --seeds LIST --csv FILE\n"
        "       attnlab sweep --task graph --models a,b,... [--labels-per-class k1,k2,...] [--train-frac F,...]\n"
        "                     [--planetoid] --seeds LIST --csv FILE\n"
        "       attnlab sweep --task molecule --models a,b,... [--train-frac F,...] --seeds LIST --csv FILE\n"
        "  Runs every combination model x size (or graph split) x seed as a child `attnlab train` process and\n"
        "  appends each finished run's rows to FILE in one atomic step. Runs already in FILE are skipped, so a\n"
        "  sweep that was interrupted (Ctrl-C, kill -9, power loss) resumes with the same command; a run that\n"
        "  was in flight continues from its training state (FILE.run-RUNID.train, written after every epoch).\n"
        "options:\n"
        "  --task T                 image: models cnn, sa, local, ...; graph: gat, gat-full, gatv2, gt, gt-full,\n"
        "                           gcn, mlp; sequence and speech: %s;\n"
        "                           molecule: %s\n"
        "  --data NAME[,NAME...]    dataset passed to train (default fashion-mnist / cora / ud-english-ewt / esol;\n"
        "                           speech: a corpus of attnlab data speech-digits, required); a list is a grid\n"
        "                           axis (e.g. --task sequence --data recall:16,recall:256)\n"
        "  --models LIST            comma-separated models\n"
        "  --train-sizes LIST       image: training-set sizes (at most the training set, 60000 for Fashion-MNIST);\n"
        "                           sequence: training sentences (at most the treebank's, 12544 for EWT);\n"
        "                           speech: training clips (default all)\n"
        "  --labels-per-class LIST  graph: labelled training nodes per class\n"
        "  --train-frac LIST        graph: fraction of the non-val/test labelled nodes used for training;\n"
        "                           molecule: fraction of the training molecules (default all)\n"
        "  --planetoid              graph: also run the standard Planetoid split\n"
        "  --seeds LIST             seeds: 1,2,3 or 1-10 or 1-3,7\n"
        "model flags (a value, or a comma list that becomes a grid axis; each applies to the models that\n"
        "take it, e.g. --patch 2,4 doubles the sa and local runs and leaves cnn alone): every flag of\n"
        "attnlab train --task T --help that sets the model or its training, such as\n"
        "  image: --patch --pos --score --norm --depth --dim --heads (attention models), --window (local),\n"
        "         --lr --wd --batch --test-size (every model; --test-size N evaluates a stratified subset\n"
        "         of N test images: quick checks only), --permute-pixels none,S and --augment none,SPEC (every\n"
        "         model; inside a list join an augmentation's parts with '+': shift:2+flip), --val-size\n"
        "         --patience (every model: a validation set and early stopping)\n"
        "  graph: --heads --attn-dropout (gat, gat-full, gatv2, gt, gt-full), --hidden --dropout --lr --wd\n"
        "         --patience (every model)\n"
        "  sequence: --pos --score --norm --depth --heads (sa, trunc), --window (window-fc, trunc: context each\n"
        "         side), --rnn (rnn), --lr --wd --batch --max-len (every model)\n"
        "  speech: sequence's, and --target digit|speaker|frames --features --cmvn --max-seconds\n"
        "         --train-speakers --subsample (every model)\n"
        "  molecule: --heads (gat, gatv2, gt, gt-full), --depth --dim --readout (graph models), --target\n"
        "         --hidden --dropout --lr --wd --batch (every model)\n"
        "  Each run's variant is its CSV row's config column; summarize and plot keep variants apart.\n"
        "  --epochs E               epochs per run (default: the trainer's default; presets: their rule)\n"
        "  --csv FILE               results CSV (presets: results/PRESET.csv)\n"
        "  --jobs N                 N runs side by side (default 1); each gets OMP_NUM_THREADS = cores / N\n"
        "                           unless OMP_NUM_THREADS is set\n"
        "  --plot FILE.png          presets with plots: where the first goes (default results/PRESET.png; the\n"
        "                           others to FILE-METRIC.png)\n"
        "  --threads N              OpenMP threads of each run (default: cores / N of --jobs, and under mpirun\n"
        "                           cores / (jobs x ranks on the node); OMP_NUM_THREADS if set and jobs = 1)\n"
        "  --max-memory SIZE        memory budget of each run (passed to train), e.g. 512M or 4G\n"
        "  --dry-run                print the runs (todo / done) and exit\n"
        "presets (files NAME.preset in $ATTNLAB_PRESETS, the repository's results/presets or the installed\n"
        "share/attnlab/presets; --preset FILE.preset reads another; docs/experiments.md says how to write one):\n",
        seq_models, mol_models);
    preset_list(f);
    cli_usage(f,
        "  --seeds and, for graph presets, --labels-per-class / --train-frac restrict a preset (the same runs and\n"
        "  run ids: the full preset later resumes the rest); a staged preset runs each stage's runs after those\n"
        "  of the stage they start from (--init-from the checkpoint it keeps beside FILE)\n"
        "MPI (a build with make MPI=1): mpirun -np N attnlab sweep ... plans on rank 0, which hands the runs out\n"
        "  to the ranks as they free up (--jobs runs each, rank 0 included) and alone writes FILE; rerunning resumes\n"
        "  (docs/scale-out.md); staged presets run in one process\n"
        "exit status: 0 all runs complete, 1 a run failed or an I/O error, 2 bad arguments, 130 interrupted\n");
}

/* ---------------- the data ---------------- */
/* Training images of Fashion-MNIST: the count in the IDX header (or 60000 if unreadable), found
 * where `attnlab train` finds it (al_data_locate); -1 for a dataset we cannot size (an image folder:
 * the trainer checks). */
static long image_train_count(const char *data)
{
    if (strcmp(data, "fashion-mnist")) return -1;
    int64_t n = 0;
    al_error e = {{0}};
    return al_fashion_mnist_count(NULL, &n, NULL, &e) == AL_OK ? (long)n : 60000;
}

/* Training sentences of a treebank, found as `attnlab train --task sequence` finds it (al_data_resolve:
 * a path, an existing directory, or a NAME looked up); -1 with e set when it cannot be read. */
static long seq_train_count(const char *data, al_error *e)
{
    char dir[PATH_MAX], path[PATH_MAX];
    if (al_data_resolve(data, dir, sizeof dir, e) != AL_OK ||
        al_conllu_find(dir, "train", path, sizeof path, e) != AL_OK)
        return -1;
    al_conllu d;
    if (al_conllu_read(path, NULL, &d, e) != AL_OK) return -1;
    long n = d.nsent;
    al_conllu_free(&d);
    return n;
}

/* Graph training candidates (labelled nodes outside val and test) and classes of known graphs. */
static const struct { const char *name; int candidates, classes; } graph_table[] = {{"cora", 1208, 7}};

/* Training molecules of a molecule dataset (what --train-frac takes a fraction of); -1 with e set. */
static long mol_train_count(const char *data, al_error *e)
{
    char dir[PATH_MAX];
    al_molset ms;
    if (al_molset_resolve(data, dir, sizeof dir, e) != AL_OK || al_molset_load(&ms, dir, e) != AL_OK) return -1;
    long n = ms.ntrain;
    al_molset_free(&ms);
    return n;
}

/* The dataset exists and every size fits its training set (its size into *full when a molecule set); 0 or 2. */
static int check_one_data(const sweep_cfg *c, const char *data, long *full)
{
    al_error e = {{0}};
    if (c->taskid == AL_TASK_SPEECH) {
        struct stat sb;
        if (stat(data, &sb) || !S_ISDIR(sb.st_mode))
            return bad("--data: '%s' is not a directory (a speech corpus: attnlab data speech-digits --out DIR)", data);
        return 0;
    }
    if (c->taskid == AL_TASK_MOLECULE) return (*full = mol_train_count(data, &e)) < 0 ? bad("--data: %s", e.msg) : 0;
    if (c->taskid == AL_TASK_SEQUENCE) {
        al_gen_seq_cfg g;
        const int gen = al_gen_seq_parse(data, &g, &e);
        if (gen < 0) return bad("--data: %s", e.msg);
        if (gen == 0) return 0;                      /* generated: as many sequences as asked for */
        long have = seq_train_count(data, &e);
        if (have < 0) return bad("--data: %s", e.msg);
        for (int i = 0; i < c->nsplits; i++)
            if (c->splits[i].n > have)
                return bad("--train-sizes: %ld is larger than the %s training set (%ld sentences)", c->splits[i].n, data, have);
        return 0;
    }
    if (c->taskid == AL_TASK_IMAGE) {
        struct stat sb;
        if (!app_image_data_named(data) && (stat(data, &sb) || !S_ISDIR(sb.st_mode)))
            return bad("--data: '%s' is neither fashion-mnist, fashion-pairs nor an image folder", data);
        long have = image_train_count(data);
        for (int i = 0; i < c->nsplits && have > 0; i++)
            if (c->splits[i].n > have)
                return bad("--train-sizes: %ld is larger than the %s training set (%ld images)", c->splits[i].n, data, have);
        return 0;
    }
    char gdir[PATH_MAX]; al_error ge = {{0}};
    if (al_graph_resolve(data, NULL, gdir, sizeof gdir, &ge) != AL_OK) return bad("--data: %s", ge.msg);
    for (size_t t = 0; t < sizeof graph_table / sizeof graph_table[0]; t++) {
        if (strcmp(graph_table[t].name, data)) continue;
        for (int i = 0; i < c->nsplits; i++)
            if (c->splits[i].kind == SPLIT_LPC && c->splits[i].n * graph_table[t].classes > graph_table[t].candidates)
                return bad("--labels-per-class: %ld x %d classes is more than the %d labelled training candidates of %s",
                           c->splits[i].n, graph_table[t].classes, graph_table[t].candidates, data);
    }
    return 0;
}
static int check_data(sweep_cfg *c)
{
    for (int i = 0; i < c->ndata; i++) if (check_one_data(c, c->datas[i], &c->full_size[i])) return 2;
    if (app_mpi_size() > 1)
        for (int k = 0; k < c->nstages; k++)
            if (c->stages[k].from >= 0) return bad("--preset %s: a staged preset runs in one process, not under mpirun", c->preset);
    return 0;
}

static void free_plan(plan_run *plan, int np)
{
    for (int i = 0; i < np; i++) { free(plan[i].part); free(plan[i].ckpt); free(plan[i].save); }
    free(plan);
}

/* Run r of stage s: its description, run id and files. Without stages and swept flags the canonical
 * text (and so the run id) is what it always was, so sweeps of earlier versions resume. 0 or -1. */
static int name_run(const sweep_cfg *c, plan_run *r, long p, const char *dir, const char *base)
{
    char sp[48], canon[512];
    split_str(&r->sp, sp, sizeof sp);
    if (c->ndata > 1) snprintf(r->desc, sizeof r->desc, "%s %s %s seed=%ld", r->model, r->data, sp, r->seed);
    else snprintf(r->desc, sizeof r->desc, "%s %s seed=%ld", r->model, sp, r->seed);
    size_t d0 = strlen(r->desc);
    if (c->nstages > 1) snprintf(r->desc + d0, sizeof r->desc - d0, " stage=%s", r->st->name);
    model_point(r->st, r->model, p, r->val, r->desc, sizeof r->desc);
    snprintf(canon, sizeof canon, "sweep task=%s dataset=%s model=%s %s seed=%ld%s", c->task, r->data, r->model, sp,
             r->seed, r->desc + d0);
    al_run_id(r->run_id, canon);
    if (asprintf(&r->part, "%s/%s.run-%s.part", dir, base, r->run_id) < 0) { r->part = NULL; return -1; }
    if (asprintf(&r->ckpt, "%s/%s.run-%s.train", dir, base, r->run_id) < 0) { r->ckpt = NULL; return -1; }
    if (r->st->saved && asprintf(&r->save, "%s/%s.run-%s.safetensors", dir, base, r->run_id) < 0) { r->save = NULL; return -1; }
    return 0;
}

/* The runs, ordered seed, then dataset, split, stage, model: a half-done sweep has every model at the
 * first seeds, and a stage's runs come after those they start from. NULL out of memory. */
static plan_run *make_plan(const sweep_cfg *c, const char *dir, const char *base, int *np)
{
    const uint64_t n = sweep_runs(c);   /* at most MAXRUNS: parse_args refused more */
    long k = 0;
    plan_run *plan = n <= MAXRUNS ? calloc((size_t)(n > 0 ? n : 1), sizeof *plan) : NULL;
    int stage_first[MAXSTAGES];
    *np = 0;
    if (!plan) return NULL;
    for (int s = 0; s < c->nseeds; s++)
        for (int d = 0; d < c->ndata; d++)
        for (int j = 0; j < c->nsplits; j++)
        for (int g = 0; g < c->nstages; g++) {
            const stage *st = &c->stages[g];
            stage_first[g] = (int)k;
            for (int m = 0; st->use[j] && m < st->nmodels; m++)
                for (long p = 0; (uint64_t)p < model_points(st, st->models[m]); p++) {
                    plan_run *r = &plan[k++];
                    r->model = st->models[m]; r->data = c->datas[d]; r->d = d; r->st = st; r->sp = c->splits[j];
                    r->seed = c->seeds[s];
                    r->sized = r->sp.kind != SPLIT_ALL && trained_model(c->taskid, r->model);
                    r->epochs = (int)epochs_for(c, st, r->model, &c->splits[j]);   /* <= MAXEPOCHS (parse_args) */
                    r->dep = st->from >= 0 ? stage_first[st->from] : -1;   /* one run per split and seed */
                    r->init_from = r->dep >= 0 ? plan[r->dep].save : NULL;
                    *np = (int)k;
                    if (name_run(c, r, p, dir, base)) { free_plan(plan, *np); return NULL; }
                }
        }
    return plan;
}


/* A sweep CSV cut short (power loss during the write of the last run): the torn last line and the
 * rows of the run it belonged to (runs are merged whole, so they are the file's tail) are dropped,
 * with a note; that run is redone. Returns the length of the text to keep. */
static size_t cut_unfinished_tail(const char *path, char *text, size_t len)
{
    if (len == 0 || text[len - 1] == '\n') return len;
    size_t keep = len;
    while (keep > 0 && text[keep - 1] != '\n') keep--;          /* the torn line */
    if (keep == 0) return len;                                   /* a torn header: the parser says so */
    /* the rows before it that share its run id (the first field) */
    const char *torn = text + keep;
    const char *comma = memchr(torn, ',', len - keep);
    size_t idl = comma ? (size_t)(comma - torn) : 0;
    int dropped = 1;
    while (idl && keep > 0) {
        size_t b = keep - 1;                                     /* the '\n' ending the previous line */
        while (b > 0 && text[b - 1] != '\n') b--;
        if (b == 0 || keep - b <= idl || memcmp(text + b, torn, idl) || text[b + idl] != ',') break;
        keep = b; dropped++;
    }
    fprintf(stderr, "sweep: %s: dropped %d line%s of a run whose writing was cut short (a torn last line); "
            "the run will be redone\n", path, dropped, dropped == 1 ? "" : "s");
    text[keep] = 0;
    return keep;
}

/* A preset's summary table and plots (demo: test accuracy; sequence-tradeoff: test_acc to --plot FILE.png,
 * unseen_acc and ambig_acc to FILE-unseen_acc.png, FILE-ambig_acc.png). Returns 0 or 1. */
static int post_process(const sweep_cfg *c)
{
    int rc = 0;
    char *sargv[] = {"summarize", (char *)c->csv, NULL};
    if (c->summarize && cmd_summarize(2, sargv)) rc = 1;
    for (int m = 0; m < c->nplots; m++) {
        char out[PATH_MAX];
        const char *dot = strrchr(c->plot_out, '.');
        size_t stem = dot && !strchr(dot, '/') ? (size_t)(dot - c->plot_out) : strlen(c->plot_out);
        if (m == 0) snprintf(out, sizeof out, "%s", c->plot_out);
        else snprintf(out, sizeof out, "%.*s-%s%s", (int)stem, c->plot_out, c->plots[m], c->plot_out + stem);
        char *pargv[] = {"plot", (char *)c->csv, "--out", out, "--metric", c->plots[m], NULL};
        if (cmd_plot(6, pargv)) rc = 1;
        else fprintf(stderr, "sweep: plot written to %s\n", out);
    }
    return rc;
}

/* This binary's path (or ATTNLAB_SWEEP_TRAINER, a stand-in for `attnlab train` in tests); 0 or 1. */
static int own_exe(char *exe, size_t n)
{
    const char *trainer = getenv("ATTNLAB_SWEEP_TRAINER");
    if (trainer && *trainer) { snprintf(exe, n, "%s", trainer); return 0; }
    ssize_t k = readlink("/proc/self/exe", exe, n - 1);
    if (k <= 0) { fprintf(stderr, "attnlab sweep: cannot find my own binary: %s\n", strerror(errno)); return 1; }
    exe[k] = 0;
    return 0;
}

/* A rank other than 0 under mpirun (mpi_sweep.c): the same plan with its part files in a private
 * temporary directory, run as rank 0 hands it out. */
static int sweep_worker(sweep_cfg *c)
{
    char tmpl[PATH_MAX], exe[PATH_MAX];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/attnlab-sweep-rank%d-XXXXXX", tmp && *tmp ? tmp : "/tmp", app_mpi_rank());
    int bad_setup = own_exe(exe, sizeof exe) || !mkdtemp(tmpl);
    int np = 0;
    plan_run *plan = bad_setup ? NULL : make_plan(c, tmpl, "sweep", &np);
    int go = mpi_sweep_go(0), rc = 0;                       /* rank 0's checks passed? */
    if (!go && !plan) { fprintf(stderr, "attnlab sweep: rank %d: cannot set up in %s\n", app_mpi_rank(), tmpl); rc = 1; }
    else if (!go) rc = mpi_sweep_worker(c, plan, np, exe);
    else app_mpi_settled();
    if (plan) free_plan(plan, np);
    if (!bad_setup) rmdir(tmpl);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    static sweep_cfg c;
    memset(&c, 0, sizeof c);
    int rc = parse_args(argc, argv, &c);
    if (rc < 0) usage(stdout);
    if (!rc) rc = check_data(&c);
    rc = app_mpi_agree(rc);                                  /* every rank goes on, or none */
    if (rc) { free_cfg(&c); return rc < 0 ? 0 : rc; }
    if (app_mpi_rank() > 0) {
        rc = c.dry_run ? 0 : sweep_worker(&c);
        free_cfg(&c);
        return rc;
    }
    int sent_go = app_mpi_size() == 1 || c.dry_run;          /* the workers wait for rank 0's word */

    char dir[PATH_MAX]; const char *base;
    dir_and_base(c.csv, dir, sizeof dir, &base);
    int np = 0, lockfd = -1;
    plan_run *plan = make_plan(&c, dir, base, &np);
    csvbuf main_csv = {0};
    al_results have; memset(&have, 0, sizeof have);
    al_error e = {{0}};
    if (!plan) { fprintf(stderr, "attnlab sweep: out of memory\n"); rc = 1; goto done; }

    /* lock, clean up after a killed sweep, read what is already done */
    if (!c.dry_run) {
        char lockp[PATH_MAX + 8];
        if (mkdir_p(dir)) { fprintf(stderr, "attnlab sweep: cannot create directory %s: %s\n", dir, strerror(errno)); rc = 1; goto done; }
        /* the outputs can be written, before the first run rather than after it */
        if (cli_output("sweep", "--csv", c.csv, 0) || cli_output("sweep", "--plot", c.nplots ? c.plot_out : NULL, 0)) { rc = 2; goto done; }
        snprintf(lockp, sizeof lockp, "%s.lock", c.csv);
        lockfd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lockfd < 0) { fprintf(stderr, "attnlab sweep: cannot open %s: %s\n", lockp, strerror(errno)); rc = 1; goto done; }
        if (flock(lockfd, LOCK_EX | LOCK_NB)) {
            fprintf(stderr, "attnlab sweep: another sweep is writing %s (lock %s held)\n", c.csv, lockp);
            rc = 1; goto done;
        }
        remove_leftovers(dir, base);
    }
    if (access(c.csv, F_OK) == 0) {
        size_t len;
        if (al_read_file(c.csv, &main_csv.p, &len, &e) != AL_OK) {
            fprintf(stderr, "attnlab sweep: %s\n", e.msg);
            rc = 1; goto done;
        }
        len = cut_unfinished_tail(c.csv, main_csv.p, len);
        if (al_results_parse(main_csv.p, len, c.csv, &have, &e) != AL_OK) {
            fprintf(stderr, "attnlab sweep: %s (not touching it; fix or move the file)\n", e.msg);
            rc = 1; goto done;
        }
        main_csv.n = len; main_csv.cap = len + 1;
        if (csv_upgrade(&main_csv)) { fprintf(stderr, "attnlab sweep: out of memory\n"); rc = 1; goto done; }
    }
    int ntodo = 0;
    for (int i = 0; i < np; i++) {
        int k = al_results_find_run(&have, plan[i].run_id);
        plan[i].state = k >= 0 && have.run[k].complete ? RUN_SKIP : RUN_TODO;
        ntodo += plan[i].state == RUN_TODO;
        if (plan[i].state == RUN_SKIP && !c.dry_run) drop_run_files(&plan[i], 0);   /* merged just before a kill */
    }
    if (c.adopt) ntodo -= adopt_rows(&c, plan, np, &have);
    if (c.dry_run) {
        for (int i = 0; i < np; i++) {
            char ep[24] = "default";
            if (plan[i].epochs > 0) snprintf(ep, sizeof ep, "%d", plan[i].epochs);
            printf("[%d/%d] %s %s epochs=%s run_id=%s\n", i + 1, np, plan[i].state == RUN_SKIP ? "done" : "todo",
                   plan[i].desc, ep, plan[i].run_id);
        }
        goto done;
    }
    if (app_mpi_size() > 1)
        fprintf(stderr, "sweep: %d runs, %d already complete in %s, %d to run (%d MPI ranks x %d at a time)\n", np,
                np - ntodo, c.csv, ntodo, app_mpi_size(), c.jobs);
    else
        fprintf(stderr, "sweep: %d runs, %d already complete in %s, %d to run (%d at a time)\n", np, np - ntodo, c.csv,
                ntodo, c.jobs);

    char exe[PATH_MAX];
    if (own_exe(exe, sizeof exe)) { rc = 1; goto done; }
    int ndone, nfail;
    if (!sent_go) {
        sent_go = 1;
        mpi_sweep_go(0);
        rc = mpi_run_plan(&c, plan, np, exe, &main_csv, &ndone, &nfail);
    } else rc = run_plan(&c, plan, np, exe, &main_csv, &ndone, &nfail);
    if (rc == 130) {
        fprintf(stderr, "sweep: interrupted; %d runs finished this time, %s keeps every complete run — run the "
                "same command to resume\n", ndone, c.csv);
        goto done;
    }
    if (rc) { fprintf(stderr, "sweep: cannot update %s; stopping\n", c.csv); goto done; }
    fprintf(stderr, "sweep: %d runs done now, %d were already complete, %d failed; results in %s\n", ndone,
            np - ntodo, nfail, c.csv);
    rc = nfail ? 1 : 0;
    if ((c.summarize || c.nplots) && ndone + (np - ntodo) > 0 && post_process(&c)) rc = 1;
done:
    if (!sent_go) { mpi_sweep_go(rc ? rc : 1); app_mpi_settled(); }   /* rank 0 stopped before the runs: so do the others */
    if (lockfd >= 0) close(lockfd);
    al_results_free(&have);
    free(main_csv.p);
    if (plan) free_plan(plan, np);
    free_cfg(&c);
    return rc;
}
