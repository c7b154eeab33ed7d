/* cmd_eval.c — attnlab eval: rebuild a model from a checkpoint and report its test accuracy: an image
 * model on a test split (optionally a stratified subset, with its logits as CSV), a graph model on
 * its graph's test nodes, or a molecule model on its dataset's test molecules (RMSE and MAE, or
 * accuracy). parse → check the flags against the task → load → evaluate → report. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "image_common.h"
#include "train_flags.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/checkpoint.h"
#include "attnlab/datadir.h"
#include "attnlab/gnn.h"
#include "attnlab/molnet.h"
#include "attnlab/train.h"

/* Where each flag applies: the image task, the graph task, the molecule task, fashion-mnist only. */
enum { EV_IMAGE = 1, EV_GRAPH = 2, EV_MOL = 8, EV_IDX = 4, EV_ALL = EV_IMAGE | EV_GRAPH | EV_MOL };
enum { E_TASK, E_LOAD, E_DATA, E_DATA_DIR, E_MODEL, E_BATCH, E_THREADS, E_TEST_SIZE, E_LOGITS, E_QUIET,
       E_NO_NORMALIZE, E_MAX_MEMORY, E_HELP, E_EVAL_BATCH, E_NFLAGS };
static const struct { const char *name; int has_arg; unsigned where; } eval_flags[E_NFLAGS] = {
    [E_TASK] = {"task", 1, EV_ALL}, [E_LOAD] = {"load", 1, EV_ALL}, [E_DATA] = {"data", 1, EV_ALL},
    [E_DATA_DIR] = {"data-dir", 1, EV_IMAGE | EV_IDX}, [E_MODEL] = {"model", 1, EV_ALL},
    [E_BATCH] = {"batch", 1, EV_IMAGE}, [E_THREADS] = {"threads", 1, EV_ALL}, [E_TEST_SIZE] = {"test-size", 1, EV_IMAGE},
    [E_LOGITS] = {"logits", 1, EV_IMAGE}, [E_QUIET] = {"quiet", 0, EV_ALL}, [E_NO_NORMALIZE] = {"no-normalize", 0, EV_GRAPH},
    [E_MAX_MEMORY] = {"max-memory", 1, EV_ALL}, [E_HELP] = {"help", 0, EV_ALL},
    [E_EVAL_BATCH] = {"eval-batch", 1, EV_IMAGE}};

typedef struct eval_opts {
    const char *task, *load, *data, *data_dir, *want_model, *logits;
    int batch, threads, test_size, quiet, normalize;
    unsigned char seen[E_NFLAGS];
} eval_opts;

static int eval_image(const eval_opts *o, const char *argv0, al_error *err);
static int eval_graph(const eval_opts *o, const char *argv0, al_error *err);
static int eval_mol(const eval_opts *o, const char *argv0, al_error *err);
/* The evaluator of each task's checkpoints (by AL_TASK_*; NULL: eval does not take that task). */
static int (*const evaluators[AL_TASK_COUNT])(const eval_opts *, const char *, al_error *) = {
    [AL_TASK_IMAGE] = eval_image, [AL_TASK_GRAPH] = eval_graph, [AL_TASK_MOLECULE] = eval_mol};

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab eval --load FILE [--data fashion-mnist|DIR] [OPTIONS]\n"
        "       attnlab eval --task graph --load FILE [--data cora|DIR]\n"
        "       attnlab eval --task molecule --load FILE [--data esol|DIR]\n\n"
        "Rebuilds the model saved by `attnlab train --save FILE` from the checkpoint's metadata\n"
        "(model, shape, hyperparameters, normalisation) and prints its accuracy on the whole test split\n"
        "(graph checkpoints: on the graph's test nodes; molecule checkpoints: test_rmse and test_mae, or\n"
        "test_acc for a 0/1 target, on the dataset's test.idx molecules, with the validation figure, as\n"
        "train printed them for the kept model). Progress on stderr when it is a terminal.\n\n"
        "  --task image|graph|molecule  (default: the checkpoint's own task)\n"
        "  --load FILE          safetensors checkpoint written by attnlab train --save\n"
        "  --data NAME|DIR      images: fashion-mnist (default) or an image folder (resized to the model's\n"
        "                       input); graph, molecule: a directory or name (default: the checkpoint's dataset)\n"
        "  --data-dir DIR       where the Fashion-MNIST files are (default: $ATTNLAB_FASHION_MNIST, $ATTNLAB_DATA/fashion-mnist,\n"
        "                       datasets/fashion-mnist, " AL_DATADIR "/fashion-mnist, then " AL_FASHION_MNIST_DIR ")\n"
        "  --model M            refuse the checkpoint unless it holds model M\n"
        "  --batch N, --eval-batch N   images per forward pass (default 64): memory, never results\n"
        "  --test-size N        evaluate a stratified subset of N test images (as train --test-size)\n"
        "  --logits FILE.csv    one row per evaluated test image: index,label,logit_0,...,logit_{K-1}\n"
        "                       (index = the image's position in the test split)\n"
        "  --no-normalize       graph: the checkpoint was trained with train --no-normalize\n"
        "  --threads N          OpenMP threads\n"
        CLI_MAX_MEMORY_HELP
        "  --quiet              no thread line or progress on stderr\n"
        "A flag of the other task (e.g. --batch with --task graph) is an error (exit 2).\n");
}

/* ---- parse ---- */
static int parse_flag(eval_opts *o, int f, const char *a)
{
    switch (f) {
    case E_TASK: o->task = a;
        if (task_find(a) < 0 || !evaluators[task_find(a)]) {
            fprintf(stderr, "attnlab eval: --task expects image, graph or molecule, got '%s'\n", a);
            return -1;
        }
        return 0;
    case E_LOAD: o->load = a; return 0;
    case E_DATA: o->data = a; return 0;
    case E_DATA_DIR: o->data_dir = a; return 0;
    case E_MODEL: o->want_model = a; return 0;
    case E_BATCH: return cli_int32("eval", "--batch", a, 1, 1 << 20, &o->batch);
    case E_EVAL_BATCH: return cli_int32("eval", "--eval-batch", a, 1, 1 << 20, &o->batch);
    case E_THREADS: return cli_threads("eval", a, &o->threads);
    case E_TEST_SIZE: return cli_int32("eval", "--test-size", a, 0, CLI_NOMAX, &o->test_size);
    case E_LOGITS: o->logits = a; return 0;
    case E_QUIET: o->quiet = 1; return 0;
    case E_NO_NORMALIZE: o->normalize = 0; return 0;
    case E_MAX_MEMORY: return cli_max_memory("eval", a);
    default: return 0;
    }
}

/* argv → o. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_eval_opts(int argc, char **argv, eval_opts *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 64; o->normalize = 1;
    struct option lo[E_NFLAGS + 1];
    memset(lo, 0, sizeof lo);
    for (int i = 0; i < E_NFLAGS; i++) lo[i] = (struct option){eval_flags[i].name, eval_flags[i].has_arg, 0, 256 + i};
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
        if (ch == 'h' || ch == 256 + E_HELP) { usage(stdout); return 0; }
        if (ch < 256 || ch >= 256 + E_NFLAGS) return cli_bad_option("eval", argv);
        o->seen[ch - 256] = 1;
        if (parse_flag(o, ch - 256, optarg)) return 2;
    }
    if (optind < argc) { fprintf(stderr, "attnlab eval: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!o->load) { fprintf(stderr, "attnlab eval: --load FILE is required\n"); usage(stderr); return 2; }
    return -1;
}

/* The task (--task, else the checkpoint's metadata, else image), every flag applies to it, --logits can be written. */
static int check_eval_opts(eval_opts *o)
{
    if (!o->task) {   /* no task, an unreadable file or a task eval does not take: the image path says why */
        al_error e = {{0}};
        const al_task *ck = al_task_of_checkpoint(o->load, &e);
        o->task = al_task_at(ck && evaluators[ck->id] ? ck->id : AL_TASK_IMAGE)->name;
    }
    const int t = task_find(o->task);
    unsigned have = t == AL_TASK_GRAPH ? EV_GRAPH : t == AL_TASK_MOLECULE ? EV_MOL
                  : EV_IMAGE | (!o->data || !strcmp(o->data, "fashion-mnist") ? EV_IDX : 0);
    for (int f = 0; f < E_NFLAGS; f++) {
        unsigned w = eval_flags[f].where;
        if (!o->seen[f]) continue;
        if (!(w & have & EV_ALL)) {
            fprintf(stderr, "attnlab eval: --%s does not apply to %s checkpoints\n", eval_flags[f].name, o->task);
            return 2;
        }
        if ((w & EV_IDX) && !(have & EV_IDX)) {
            fprintf(stderr, "attnlab eval: --%s locates the Fashion-MNIST files; it does not apply to an image folder\n",
                    eval_flags[f].name);
            return 2;
        }
    }
    return cli_output("eval", "--logits", o->logits, 0) ? 2 : 0;   /* writable before the model and data are loaded */
}

/* ---- images ---- */
static void eval_progress(void *ud, int done, int total)
{
    double *last = ud, now = al_time();
    if (done < total && now - *last < 0.1) return;
    *last = now;
    if (done < total) fprintf(stderr, "\r\033[Keval %d/%d images", done, total);
    else fprintf(stderr, "\r\033[K");
    fflush(stderr);
}

/* --logits: index (position in the test split), label, the K logits; written atomically. */
static al_status write_logits(const char *path, const al_images *T, const int *keep, const float *lg, int K, al_error *err)
{
    size_t cap = 64 + (size_t)K * 12 + (size_t)T->n * (24 + (size_t)K * 18), len = 0;
    char *buf = malloc(cap);
    if (!buf) return al_seterr(err, "--logits: out of memory");
    len += (size_t)snprintf(buf + len, cap - len, "index,label");
    for (int k = 0; k < K; k++) len += (size_t)snprintf(buf + len, cap - len, ",logit_%d", k);
    len += (size_t)snprintf(buf + len, cap - len, "\n");
    for (int i = 0; i < T->n; i++) {
        len += (size_t)snprintf(buf + len, cap - len, "%d,%d", keep ? keep[i] : i, T->labels[i]);
        for (int k = 0; k < K; k++) len += (size_t)snprintf(buf + len, cap - len, ",%.9g", (double)lg[(size_t)i * K + k]);
        len += (size_t)snprintf(buf + len, cap - len, "\n");
    }
    al_status st = al_write_atomic(path, buf, len, err);
    free(buf);
    return st;
}

/* The test split for the model's input: loaded, checked, subset. Returns an exit status. */
static int load_test(const eval_opts *o, const al_model *m, al_image_split *D, int **keep, al_error *err)
{
    const char *data = o->data ? o->data : "fashion-mnist";
    if (al_image_data_load(data, o->data_dir, m->cfg.channels, m->cfg.height, m->cfg.width, cli_warn, NULL, D, err) != AL_OK)
        return 1;
    if (D->test.c != m->cfg.channels || D->test.h != m->cfg.height || D->test.w != m->cfg.width) {
        al_seterr(err, "%s expects %dx%dx%d images but %s has %dx%dx%d", o->load, m->cfg.channels, m->cfg.height,
                  m->cfg.width, data, D->test.c, D->test.h, D->test.w);
        return 2;
    }
    if (D->test.classes > m->cfg.classes) {
        al_seterr(err, "%s has %d classes but %s has %d", o->load, m->cfg.classes, data, D->test.classes);
        return 2;
    }
    return app_images_keep(&D->test, o->test_size, 0, keep, err) != AL_OK;
}

static int eval_image(const eval_opts *o, const char *argv0, al_error *err)
{
    (void)argv0;
    al_model m;
    float mean[4], std[4];
    char *meta = NULL;
    if (al_model_load(o->load, &m, mean, std, &meta, err) != AL_OK) return 1;
    const long perm = app_permute_seed(meta);
    free(meta);
    al_image_split D;
    memset(&D, 0, sizeof D);
    int *keep = NULL, rc = 2;
    float *lg = NULL;
    if (perm == -2) { al_seterr(err, "%s: a bad %s in the metadata", o->load, APP_PERMUTE_KEY); goto out; }
    if (o->want_model && strcmp(o->want_model, m.cfg.name)) {
        al_seterr(err, "%s holds a '%s' model, not '%s'", o->load, m.cfg.name, o->want_model);
        goto out;
    }
    if ((rc = load_test(o, &m, &D, &keep, err))) goto out;
    rc = 1;
    if (app_images_permute(&D.test, perm, err) != AL_OK) goto out;   /* as the model was trained */
    if (o->logits && !(lg = malloc((size_t)D.test.n * m.cfg.classes * sizeof *lg + 1))) { al_seterr(err, "out of memory"); goto out; }
    double acc, t0 = al_time(), last = 0;
    int progress = !o->quiet && isatty(2);
    if (al_model_evaluate_ex(&m, &D.test, mean, std, o->batch, &acc, NULL, lg, progress ? eval_progress : NULL, &last, err) != AL_OK) goto out;
    double secs = al_time() - t0;
    if (o->logits && write_logits(o->logits, &D.test, keep, lg, m.cfg.classes, err) != AL_OK) goto out;
    printf("model %s checkpoint %s data %s test_images %d test_acc %.4f seconds %.2f\n", m.cfg.name, o->load,
           o->data ? o->data : "fashion-mnist", D.test.n, acc, secs);
    rc = 0;
out:
    free(keep); free(lg);
    al_image_split_free(&D);
    al_model_free(&m);
    return rc;
}

/* ---- graphs ---- */
static int eval_graph(const eval_opts *o, const char *argv0, al_error *err)
{
    char *meta = NULL, *dataset = NULL, dir[4096];
    if (al_safetensors_read_meta(o->load, &meta, err) != AL_OK) return 1;
    dataset = al_meta_get(meta, "dataset");
    free(meta); meta = NULL;
    const char *data = o->data ? o->data : dataset ? dataset : "cora";
    al_graph g; memset(&g, 0, sizeof g);
    al_gnn m;
    int rc = 1, have = 0;
    if (al_graph_resolve(data, argv0, dir, sizeof dir, err) || al_graph_load(&g, dir, o->normalize, err)) goto out;
    if (al_gnn_load(o->load, &g, &m, &meta, err) != AL_OK) goto out;
    have = 1;
    const char *name = al_gnn_kind_name(m.cfg.kind);
    if (o->want_model && strcmp(o->want_model, name)) { al_seterr(err, "%s holds a '%s' model, not '%s'", o->load, name, o->want_model); rc = 2; goto out; }
    al_ctx *c = al_ctx_new(0);
    if (!c) { al_seterr(err, "out of memory"); goto out; }
    c->training = 0; c->grad_enabled = 0;
    al_gnn_eval ev;
    double t0 = al_time();
    al_status st = al_gnn_evaluate(&m, &g, c, &ev, err);
    al_ctx_free(c);
    if (st != AL_OK) goto out;
    printf("model %s checkpoint %s data %s test_nodes %d test_acc %.4f val_acc %.4f seconds %.2f\n", name, o->load,
           g.name, g.ntest, ev.test_acc, ev.val_acc, al_time() - t0);
    rc = 0;
out:
    if (have) al_gnn_free(&m);
    al_graph_free(&g);
    free(meta); free(dataset);
    return rc;
}

/* ---- molecules ---- */
/* The figures of the kept model on the dataset's test (and validation) molecules. */
static int eval_mol(const eval_opts *o, const char *argv0, al_error *err)
{
    (void)argv0;
    char *meta = NULL, *dataset = NULL, *target = NULL, dir[4096];
    if (al_safetensors_read_meta(o->load, &meta, err) != AL_OK) return 1;
    dataset = al_meta_get(meta, "dataset"); target = al_meta_get(meta, "target");
    char *task = al_meta_get(meta, "task");
    int mol = task && !strcmp(task, "molecule");
    free(meta); meta = NULL;
    if (!mol) al_seterr(err, "%s: not a molecule checkpoint (its metadata has task %s)", o->load, task ? task : "none");
    free(task);
    if (!mol) { free(dataset); free(target); return 2; }
    const char *data = o->data ? o->data : dataset ? dataset : "esol";
    al_molset ms; memset(&ms, 0, sizeof ms);
    al_molnet m;
    al_ctx *c = NULL;
    int rc = 1, have = 0;
    if (al_molset_resolve(data, dir, sizeof dir, err) || al_molset_load(&ms, dir, err)) goto out;
    if (al_molnet_load(o->load, &ms, &m, NULL, err) != AL_OK) goto out;
    have = 1; rc = 2;
    if (o->want_model && strcmp(o->want_model, m.cfg.model)) { al_seterr(err, "%s holds a '%s' model, not '%s'", o->load, m.cfg.model, o->want_model); goto out; }
    if (m.cfg.target < 0) { al_seterr(err, "%s predicts '%s', which %s/molecules.txt does not hold", o->load, target ? target : "?", dir); goto out; }
    rc = 1;
    if (!(c = al_ctx_new(0))) { al_seterr(err, "out of memory"); goto out; }
    al_mol_eval te, va;
    double t0 = al_time();
    if (al_molnet_evaluate(&m, &ms, ms.test, ms.ntest, c, &te, NULL, err) || al_molnet_evaluate(&m, &ms, ms.val, ms.nval, c, &va, NULL, err))
        goto out;
    if (m.nout == 2)
        printf("model %s checkpoint %s data %s test_molecules %d test_acc %.4f val_acc %.4f seconds %.2f\n", m.cfg.model, o->load,
               ms.name, ms.ntest, te.acc, va.acc, al_time() - t0);
    else
        printf("model %s checkpoint %s data %s test_molecules %d test_rmse %.4f test_mae %.4f val_rmse %.4f seconds %.2f\n",
               m.cfg.model, o->load, ms.name, ms.ntest, te.rmse, te.mae, va.rmse, al_time() - t0);
    rc = 0;
out:
    al_ctx_free(c);
    if (have) al_molnet_free(&m);
    al_molset_free(&ms);
    free(dataset); free(target);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    eval_opts o;
    int rc = parse_eval_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("eval") || check_eval_opts(&o)) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    if (!o.quiet) fprintf(stderr, "attnlab eval: %d threads\n", al_threads());
    al_error err = {{0}};
    rc = evaluators[task_find(o.task)](&o, argv[0], &err);
    if (rc) fprintf(stderr, "attnlab eval: %s\n", err.msg[0] ? err.msg : "failed");
    return rc;
}
