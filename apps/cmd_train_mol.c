/* cmd_train_mol.c — attnlab train --task molecule: graph-level regression on molecules (gat, gt,
 * gt-full, gcn, mlp, fingerprint), one or several seeds (one after the other), CSV log, checkpoint,
 * training states (--checkpoint-every, --resume: train_resume.h) and the divergence stop.
 * parse → check the flags against the model table → load → run each seed → mean ± std. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "train_resume.h"
#include "train_report.h"
#include "train_flags.h"
#include "attnlab/train.h"
#include "attnlab/molnet.h"
#include "attnlab/io.h"
#include "attnlab/datadir.h"

#define MAX_SEEDS 1000

typedef struct mol_opts {
    const char *data, *model, *csv, *save, *target, *readout, *checkpoint;
    int epochs, batch, threads, quiet, dim, heads, depth, hidden, checkpoint_every, resume;
    double lr, wd, dropout, frac;
    long seeds[MAX_SEEDS]; int nseeds;
    unsigned char seen[TF_NFLAGS];     /* the flags given (train_flags_check_model) */
} mol_opts;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab train --task molecule --data esol|DIR --model M [OPTIONS]\n\n"
        "Graph-level prediction (N-to-1: a molecule in, one number out). Minibatches of molecules are packed\n"
        "into one block-diagonal graph. Regression: AdamW on the MSE of standardised targets; the model with\n"
        "the lowest validation RMSE is kept and its test RMSE and MAE (in the file's units) reported. A\n"
        "target column of only 0 and 1 is a class label: cross-entropy over two logits, the model with the\n"
        "highest validation accuracy (then lowest loss) kept, accuracies reported. Molecules without a\n"
        "target (nan) are skipped. Evaluation runs after every epoch without dropout.\n\n"
        "data:\n"
        "  --data NAME|DIR       a directory with molecules.txt, train.idx, val.idx, test.idx (datasets/README.md,\n"
        "                        \"Molecules\"); a NAME is looked up as for the graph task (default esol)\n"
        "  --target NAME         which target column of molecules.txt (default: the first)\n"
        "  --train-frac F        train on round(F x 902) of train.idx's molecules, drawn by the seed (default 1)\n"
        "model:\n"
        "  --model M             gat: 3 GAT layers over bonds + self, additive score, bond-type bias, residual\n"
        "                        gatv2: the same with GATv2's score a . LeakyReLU(W_r x_i + W_l x_j)\n"
        "                        gt: 3 pre-LN transformer blocks masked by bonds + self, bond-type bias\n"
        "                        gt-full: gt over every atom of the molecule, shortest-path-distance bias\n"
        "                        gcn: 3 GCN layers, D^-1/2 (A+I) D^-1/2; mlp: summed atom features, 2 layers;\n"
        "                        fingerprint: Morgan-style bits (radius 2, 2048) from the graph, 2 layers\n"
        "  --dim N               atom vector width (default 64; graph models)\n"
        "  --heads N             attention heads (default 4; gat, gt, gt-full)\n"
        "  --depth N             graph layers (default 3; gat, gt, gt-full, gcn)\n"
        "  --readout sum|mean|attn  graph readout (default sum; attn: a learned query per head; graph models)\n"
        "  --hidden N            head / MLP width (default 64; fingerprint 256)\n"
        "  --dropout P           on the head's hidden layer (default 0; fingerprint 0.2, also on the bits)\n"
        "  --lr X  --wd X        AdamW (default 1e-3, 0.01 on every parameter)\n"
        "  --batch N             molecules per step (default 32)\n"
        "  --epochs N            epochs (default 150)\n"
        "runs:\n"
        "  --seed S              init and shuffling seed (default 1)\n"
        "  --seeds LIST          several runs one after another, e.g. 1-3: each is printed, then mean +- std\n"
        "  --threads T           OpenMP threads (results are identical for any T)\n"
        CLI_MAX_MEMORY_HELP
        "output:\n"
        "  --csv FILE            append one row per epoch, then one for the kept model (status done, its\n"
        "                        epoch, train figures); regression fills test_rmse and test_mae (the\n"
        "                        accuracy columns stay empty), classification the accuracy columns;\n"
        "                        columns: " AL_CSV_HEADER "\n"
        "  --save FILE           safetensors checkpoint of the kept model (several seeds: FILE-seedS.ext)\n"
        "  --quiet               no progress on stderr\n"
        "resuming (as for images: attnlab train --help):\n"
        "  --checkpoint-every N  the training state (weights, AdamW moments and step, the shuffle and dropout\n"
        "                        streams, the data order, the kept model and its validation figures, the CSV\n"
        "                        rows written) before the first epoch, every N epochs and after the last\n"
        "                        (several seeds: FILE-seedS.ext)\n"
        "  --checkpoint FILE     where (default SAVE.train with --save, else attnlab-RUNID.train)\n"
        "  --resume              continue from it: the same rows and weights as an uninterrupted run\n"
        "A loss over 1000x its running minimum or a non-finite loss or weight stops training (exit 1; lower\n"
        "--lr). A flag that does not apply to the model (e.g. --heads with gcn) is an error (exit 2).\n"
        "  --help\n");
}

static int parse_flag(mol_opts *o, int f, const char *a)
{
    const char *c = "train";
    switch (f) {
    case TF_TASK: if (!strcmp(a, "molecule")) return 0;
        fprintf(stderr, "attnlab train: this is the molecule task, got --task %s\n", a); return -1;
    case TF_DATA: o->data = a; return 0;
    case TF_MODEL: o->model = a; return 0;
    case TF_TARGET: o->target = a; return 0;
    case TF_DIM: return cli_int32(c, "--dim", a, 1, 4096, &o->dim);
    case TF_HEADS: return cli_int32(c, "--heads", a, 1, 4096, &o->heads);
    case TF_DEPTH: return cli_int32(c, "--depth", a, 1, AL_MOLNET_MAXDEPTH, &o->depth);
    case TF_READOUT: o->readout = a; return 0;
    case TF_HIDDEN: return cli_int32(c, "--hidden", a, 1, 65536, &o->hidden);
    case TF_DROPOUT: return cli_num(c, "--dropout", a, 0, 0.999, &o->dropout);
    case TF_LR: return cli_num(c, "--lr", a, 1e-12, 1e3, &o->lr);
    case TF_WD: case TF_WEIGHT_DECAY: return cli_num(c, "--wd", a, 0, 1e3, &o->wd);
    case TF_BATCH: return cli_int32(c, "--batch", a, 1, 1 << 20, &o->batch);
    case TF_EPOCHS: return cli_int32(c, "--epochs", a, 1, CLI_NOMAX, &o->epochs);
    case TF_SEED: o->nseeds = 1; return cli_int(c, "--seed", a, 0, CLI_NOMAX, &o->seeds[0]);
    case TF_SEEDS: return cli_seeds(c, a, o->seeds, MAX_SEEDS, &o->nseeds);
    case TF_THREADS: return cli_threads(c, a, &o->threads);
    case TF_CSV: o->csv = a; return 0;
    case TF_SAVE: o->save = a; return 0;
    case TF_QUIET: o->quiet = 1; return 0;
    case TF_FRAC: return cli_num(c, "--train-frac", a, 1e-9, 1, &o->frac);
    case TF_MAX_MEMORY: return cli_max_memory(c, a);
    case TF_CHECKPOINT_EVERY: return cli_int32(c, "--checkpoint-every", a, 1, CLI_NOMAX, &o->checkpoint_every);
    case TF_CHECKPOINT: o->checkpoint = a; return 0;
    case TF_RESUME: o->resume = 1; return 0;
    default: return -1;
    }
}

/* argv → o; -1 to go on, else the exit status. */
static int parse_mol_opts(int argc, char **argv, mol_opts *o)
{
    memset(o, 0, sizeof *o);
    o->data = al_task_at(AL_TASK_MOLECULE)->default_data; o->seeds[0] = 1; o->nseeds = 1;
    o->dim = o->heads = o->depth = o->hidden = o->epochs = o->batch = -1;
    o->lr = o->wd = o->dropout = NAN; o->frac = 1;
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", train_flags_options(AL_TASK_MOLECULE), NULL)) != -1) {
        if (ch == 'h' || ch == TF_BASE + TF_HELP) { usage(stdout); return 0; }
        if (ch == ':') { fprintf(stderr, "attnlab train: %s needs a value (see attnlab train --task molecule --help)\n", argv[optind - 1]); return 2; }
        if (ch < TF_BASE || ch >= TF_BASE + TF_NFLAGS) { fprintf(stderr, "attnlab train: unknown option '%s' for --task molecule (see attnlab train --task molecule --help)\n", argv[optind - 1]); return 2; }
        o->seen[ch - TF_BASE] = 1;
        if (parse_flag(o, ch - TF_BASE, optarg)) return 2;
    }
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!o->model) { fprintf(stderr, "attnlab train: --model is required (%s)\n", al_molnet_arch_names()); return 2; }
    const al_molnet_arch *k = al_molnet_arch_find(o->model);
    if (!k) { fprintf(stderr, "attnlab train: unknown molecule model '%s' (expected %s)\n", o->model, al_molnet_arch_names()); return 2; }
    if (train_flags_check_model(AL_TASK_MOLECULE, o->model, o->seen)) return 2;
    if (cli_output("train", "--csv", o->csv, 1) || cli_output("train", "--save", o->save, 0)) return 2;   /* before any data is read */
    return -1;
}

/* Options over the model's defaults; 0 or an exit status (message printed). */
static int mol_config(const mol_opts *o, const al_molset *ms, al_molnet_config *cfg)
{
    al_molnet_config_default(cfg, o->model, NULL);
    if (o->dim > 0) cfg->dim = o->dim;
    if (o->heads > 0) cfg->heads = o->heads;
    if (o->depth > 0) cfg->depth = o->depth;
    if (o->hidden > 0) cfg->hidden = o->hidden;
    if (o->epochs > 0) cfg->epochs = o->epochs;
    if (o->batch > 0) cfg->batch = o->batch;
    if (!isnan(o->lr)) cfg->lr = (float)o->lr;
    if (!isnan(o->wd)) cfg->weight_decay = (float)o->wd;
    if (!isnan(o->dropout)) cfg->dropout = (float)o->dropout;
    al_error err = {{0}};
    if (o->readout && al_mol_readout_parse(o->readout, &cfg->readout, &err)) { fprintf(stderr, "attnlab train: --readout: %s\n", err.msg); return 2; }
    if (o->target) {
        cfg->target = -1;
        for (int i = 0; i < ms->ntarget; i++) if (!strcmp(o->target, ms->targets[i])) cfg->target = i;
        if (cfg->target < 0) { fprintf(stderr, "attnlab train: --target %s: not a target of %s (its first is %s)\n", o->target, ms->name, ms->targets[0]); return 2; }
    }
    return 0;
}

/* ---- one seed ---- */
typedef struct run_ctx {
    train_run run;          /* the CSV's identity columns, where rows and progress go */
    const al_molnet *m;
    char run_id[17], config[1024], canon[1024]; int failed;
} run_ctx;

static int on_epoch(const al_mol_epoch *e, void *ud)
{
    run_ctx *r = ud;
    train_epoch x = train_epoch_none();
    x.epoch = e->epoch; x.final = e->final; x.loss = e->train_loss; x.train_acc = e->train.acc;
    x.val_acc = e->val.acc; x.test_acc = e->test.acc; x.seconds = e->seconds;
    x.per_second = e->seconds > 0 ? r->run.train_size / e->seconds : NAN;
    x.classes = r->m->nout == 2; x.val_rmse = e->val.rmse; x.test_rmse = e->test.rmse; x.test_mae = e->test.mae;
    if (train_report_epoch(&r->run, &x)) { r->failed = 1; return 1; }
    return 0;
}

static void mol_run_id(const mol_opts *o, const al_molnet_config *cfg, const al_molset *ms, long seed, run_ctx *r)
{
    char *canon = r->canon;
    snprintf(canon, sizeof r->canon, "task=molecule;dataset=%s;model=%s;train_size=%d;seed=%ld;epochs=%d;target=%s;dim=%d;heads=%d;"
             "depth=%d;hidden=%d;readout=%s;dropout=%g;lr=%g;wd=%g;batch=%d", ms->name, o->model, ms->ntrain, seed, cfg->epochs,
             ms->targets[cfg->target], cfg->dim, cfg->heads, cfg->depth, cfg->hidden, al_mol_readout_name(cfg->readout),
             (double)cfg->dropout, (double)cfg->lr, (double)cfg->weight_decay, cfg->batch);
    al_run_id(r->run_id, canon);
    al_run_config(r->config, sizeof r->config, canon);
}

static al_status save_mol(const mol_opts *o, const al_molnet *m, const al_molset *ms, long seed, const al_mol_result *res,
                          const char *run_id, al_error *err)
{
    char path[4200], v[3][32];
    cli_seed_path(path, sizeof path, o->save, seed, o->nseeds > 1);
    snprintf(v[0], 32, "%ld", seed); snprintf(v[1], 32, "%d", res->best_epoch);
    snprintf(v[2], 32, "%.6f", m->nout == 2 ? res->test.acc : res->test.rmse);
    const char *kv[] = {"seed", v[0], "best_epoch", v[1], m->nout == 2 ? "test_acc" : "test_rmse", v[2], "run_id", run_id};
    return al_molnet_save(path, m, ms, kv, (int)(sizeof kv / sizeof *kv / 2), err);
}

/* One seed on ms0 (its training split cut to --train-frac for this seed); prints its result line. */
static int run_seed(const mol_opts *o, const al_molnet_config *cfg, const al_molset *ms0, long seed, al_mol_result *res)
{
    al_error err = {{0}};
    al_molnet m;
    al_molset sub = *ms0, *ms = &sub;   /* shallow: shares everything but a cut training split */
    int *own = NULL;
    if (o->frac < 1) {
        if (!(own = malloc((size_t)ms0->ntrain * sizeof *own))) { fprintf(stderr, "attnlab train: out of memory\n"); return 1; }
        memcpy(own, ms0->train, (size_t)ms0->ntrain * sizeof *own);
        sub.train = own;
        al_molset_train_frac(&sub, o->frac, (uint64_t)seed, &err);
    }
    run_ctx r = {.failed = 0};
    mol_run_id(o, cfg, ms, seed, &r);
    if (al_molnet_init(&m, cfg, ms, (uint64_t)seed, &err)) { fprintf(stderr, "attnlab train: %s\n", err.msg); free(own); return 1; }
    r.m = &m;
    char ckpt[4200], save[4200];
    if (o->checkpoint) cli_seed_path(ckpt, sizeof ckpt, o->checkpoint, seed, o->nseeds > 1);
    if (o->save) cli_seed_path(save, sizeof save, o->save, seed, o->nseeds > 1);
    app_resume ar;
    app_resume_init(&ar, o->checkpoint_every, o->resume, o->checkpoint ? ckpt : NULL, o->save ? save : NULL);
    r.run = (train_run){.task = AL_TASK_MOLECULE, .run_id = r.run_id, .dataset = ms->name, .model = o->model, .config = r.config,
                        .train_size = ms->ntrain, .seed = seed, .params = (long)m.params.total, .csv = o->csv,
                        .tty = isatty(2), .quiet = o->quiet, .ar = &ar, .err = &err};
    double t0 = al_time();
    int rc = app_resume_start(&ar, o->csv, r.run_id, r.canon, &m.params, &err);
    al_status st = rc ? AL_ERR : al_molnet_train_resumable(&m, ms, (uint64_t)seed, app_resume_loop(&ar), on_epoch, &r, res, &err);
    if (st != AL_OK && !rc) app_resume_fail_note(&ar, &err);
    app_resume_free(&ar);
    if (r.run.tty && !o->quiet) fprintf(stderr, "\r\033[K");
    if (st == AL_OK && r.failed) st = AL_ERR;
    if (st == AL_OK && o->save) st = save_mol(o, &m, ms, seed, res, r.run_id, &err);
    al_molnet_free(&m);
    free(own);
    if (st) { fprintf(stderr, "attnlab train: seed %ld: %s\n", seed, err.msg); return rc ? rc : 1; }
    if (cfg->target >= 0 && ms->binary[cfg->target])
        printf("%s %s seed %ld: test_acc %.2f %%  val_acc %.2f %%  best epoch %d of %d  %.2f s/epoch  %.1f s  run %s\n", ms->name,
               o->model, seed, 100 * res->test.acc, 100 * res->val.acc, res->best_epoch, res->epochs_run, res->step_seconds,
               al_time() - t0, r.run_id);
    else
        printf("%s %s seed %ld: test_rmse %.4f  test_mae %.4f  val_rmse %.4f  best epoch %d of %d  %.2f s/epoch  %.1f s  "
               "train_size %d  run %s\n", ms->name, o->model, seed, res->test.rmse, res->test.mae, res->val.rmse, res->best_epoch,
               res->epochs_run, res->step_seconds, al_time() - t0, ms->ntrain, r.run_id);
    fflush(stdout);
    return 0;
}

int train_mol_main(int argc, char **argv)
{
    static mol_opts o;
    int rc = parse_mol_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("train")) return 2;
    if (o.threads > 0) al_set_threads(o.threads);
    char dir[4096];
    al_error err = {{0}};
    al_molset ms;
    memset(&ms, 0, sizeof ms);
    if (al_molset_resolve(o.data, dir, sizeof dir, &err) || al_molset_load(&ms, dir, &err)) {
        fprintf(stderr, "attnlab train: %s\n", err.msg);
        return 1;
    }
    al_molnet_config cfg;
    if ((rc = mol_config(&o, &ms, &cfg))) { al_molset_free(&ms); return rc; }
    if (!o.quiet)
        fprintf(stderr, "attnlab train: %s on %s (%s): %d molecules (%d train, %d val, %d test), %lld atoms, %d features; %d threads\n",
                o.model, ms.name, dir, ms.nmol, ms.ntrain, ms.nval, ms.ntest, (long long)ms.natoms, al_mol_nfeat(&ms), al_threads());
    double sum = 0, sum2 = 0; int done = 0;
    for (int s = 0; s < o.nseeds; s++) {
        al_mol_result res;
        if ((rc = run_seed(&o, &cfg, &ms, o.seeds[s], &res))) break;
        double v = ms.binary[cfg.target] ? res.test.acc : res.test.rmse;
        sum += v; sum2 += v * v; done++;
    }
    if (o.nseeds > 1 && done > 0) {
        double mean = sum / done, sd = done > 1 ? sqrt(fmax(0, (sum2 - done * mean * mean) / (done - 1))) : 0;
        printf("%s %s: %s %.4f +- %.4f over %d seeds\n", ms.name, o.model, ms.binary[cfg.target] ? "test_acc" : "test_rmse", mean, sd, done);
    }
    al_molset_free(&ms);
    return rc > 0 ? rc : 0;
}
