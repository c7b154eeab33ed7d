/* cmd_train_graph.c — attnlab train --task graph: node classification (gat, gat-full, gatv2, gt, gt-full,
 * gcn, mlp) on a
 * graph dataset, one or several seeds, CSV log, checkpoint, learned attention as CSV.
 * parse (options struct, the flag table of train_flags.h) → load the graph → build the config →
 * run each seed (train, save, attention) → the mean over seeds. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "train_flags.h"
#include "train_resume.h"
#include "train_report.h"
#include "attnlab/train.h"
#include "attnlab/gnn.h"
#include "attnlab/io.h"
#include "attnlab/datadir.h"
#include "attnlab/kernels.h"

#define MAX_SEEDS 1000

typedef struct train_graph_opts {
    const char *data, *model, *split, *csv, *save, *attn, *checkpoint;
    int per_class, epochs, threads, quiet, normalize, sequential, split_set, checkpoint_every, resume;
    double frac;
    long seeds[MAX_SEEDS]; int nseeds;
    /* overrides; < 0 (or NaN) = model default */
    int hidden, heads, patience;
    double dropout, attn_dropout, lr, wd;
    unsigned char seen[TF_NFLAGS];      /* flags given on the command line */
} train_graph_opts;
typedef train_graph_opts gopts;

static void usage(FILE *f)
{
    cli_usage(f,
        "usage: attnlab train --task graph --data cora|DIR --model gat|gat-full|gatv2|gt|gt-full|gcn|mlp [OPTIONS]\n\n"
        "Semi-supervised node classification, full batch: Adam with L2 weight decay, cross-entropy on the\n"
        "training nodes; after every epoch the model is evaluated (no dropout) on train / val / test. The\n"
        "model kept is the last one whose validation accuracy and loss were both at least as good as\n"
        "their best so far (the GAT paper's rule); the reported test accuracy is that model's.\n\n"
        "data:\n"
        "  --data NAME|DIR       a directory with features.libsvm, edges.txt, train.idx, val.idx, test.idx\n"
        "                        (datasets/README.md); a NAME is looked up in $ATTNLAB_DATA, the\n"
        "                        repository's datasets/ (next to the executable, then ./datasets) and\n"
        "                        " AL_DATADIR " (default cora)\n"
        "  --no-normalize        keep raw feature values (default: each row divided by its sum)\n"
        "  --split planetoid|per-class|frac\n"
        "                        planetoid (default): train.idx as given; per-class: --labels-per-class N\n"
        "                        nodes of each class; frac: --train-frac F of the candidates. Candidates are\n"
        "                        the labelled nodes in neither val.idx nor test.idx, shuffled by the seed;\n"
        "                        val and test always stay as given\n"
        "  --labels-per-class N  (implies --split per-class; default 20; a class with fewer candidates gives\n"
        "                        what it has, with a note; N above all the candidates together is an error)\n"
        "  --train-frac F        in (0, 1] (implies --split frac; default 0.1)\n"
        "model (defaults: the papers' Cora settings):\n"
        "  --model M             gat: 2 layers, 8 heads x 8 hidden (ELU, concatenated), then 1 head;\n"
        "                        additive scores LeakyReLU 0.2 over neighbours and self; dropout 0.6 on\n"
        "                        both inputs and the coefficients; lr 0.005, wd 5e-4 on all parameters;\n"
        "                        1000 epochs, patience 100\n"
        "                        gat-full: the same with every node attending to every node; the degenerate\n"
        "                        case, kept as a reference: GAT's additive score is static (one ranking of\n"
        "                        the keys for every query) and the layer has no residual path, so over all\n"
        "                        nodes it gives every node nearly the same mixture (Cora: chance)\n"
        "                        gatv2: gat with GATv2's dynamic score a . LeakyReLU(W_r h_i + W_l h_j)\n"
        "                        (Brody et al. 2022), separate target / source weights; gat's defaults\n"
        "                        gt: graph transformer (Dwivedi & Bresson 2020), 2 pre-LN blocks of 8 heads\n"
        "                        x 8 (--heads x --hidden), dot-product attention over neighbours and self,\n"
        "                        residual + layer norm + feed-forward (2x width); input embedding\n"
        "                        layer-normed; dropout 0.6 on the input, the residual branches and before\n"
        "                        the classifier, attention dropout 0.6; lr 0.005, wd 5e-4 on all\n"
        "                        parameters; 1000 epochs, patience 100\n"
        "                        gt-full: gt over every node, plus the 8 Laplacian eigenvectors with the\n"
        "                        smallest non-trivial eigenvalues (ARPACK; each sign flipped at random while\n"
        "                        training) through a linear layer added to the input; 200 epochs\n"
        "                        gcn: 2 layers, 16 hidden, D^-1/2 (A+I) D^-1/2, dropout 0.5, lr 0.01,\n"
        "                        wd 5e-4 on the first layer's weight only (Kipf & Welling), 200 epochs\n"
        "                        mlp: no graph; 2 layers, 64 hidden, ReLU, dropout 0.5, lr 0.01, wd 5e-4\n"
        "                        on the first layer's weight, 200 epochs\n"
        "  --hidden N  --heads N  --dropout P  --attn-dropout P  --lr X  --wd X  --patience N (0 = none)\n"
        "  --epochs N            maximum number of epochs\n"
        "runs:\n"
        "  --seed S              init, dropout and split seed (default 1)\n"
        "  --seeds LIST          several runs, e.g. 1-10 or 1,2,5-7: each is printed, then mean +- std\n"
        "                        (sample standard deviation)\n"
        "  --threads T           OpenMP threads (default: OMP_NUM_THREADS or all cores). With several\n"
        "                        seeds, T runs go at once with one thread each (results equal --threads 1)\n"
        "  --sequential          several seeds: one run at a time, each with all threads\n"
        "  --max-memory SIZE     memory budget for the graph and the model, e.g. 512M or 4G (default:\n"
        "                        $ATTNLAB_MEM_BUDGET, else half of the physical memory)\n"
        "output:\n"
        "  --csv FILE            append one row per epoch, then one for the restored best model with its\n"
        "                        epoch number, train_loss without dropout and empty timing (a run's last row\n"
        "                        is its result); columns: " AL_CSV_HEADER ";\n"
        "                        train_size = labelled training nodes, samples_per_second = nodes / step s\n"
        "  --save FILE           safetensors checkpoint of the kept model (several seeds: FILE-seedS.ext)\n"
        "  --attention FILE      CSV layer,head,src,dst,weight of the kept model's attention, evaluation mode\n"
        "                        (gat, gat-full; gat-full writes the weights on the edges of A+I only;\n"
        "                        for the other models: an error)\n"
        "  --quiet               no progress on stderr\n"
        "resuming (as for images: attnlab train --help):\n"
        "  --checkpoint-every N  the training state (weights, Adam moments and step, the dropout stream, the\n"
        "                        early-stopping record and kept model, the CSV rows written) before the first\n"
        "                        epoch, every N epochs and after the last (several seeds: FILE-seedS.ext)\n"
        "  --checkpoint FILE     where (default SAVE.train with --save, else attnlab-RUNID.train)\n"
        "  --resume              continue from it: the same rows and weights as an uninterrupted run\n"
        "A loss over 1000x its running minimum or a non-finite weight stops training (exit 1; lower --lr).\n"
        "A flag that does not apply to the model, split or seeds (e.g. --heads with gcn, --labels-per-class\n"
        "with --split frac, an image option) is an error (exit 2).\n"
        "  --help\n");
}

/* ---- per-epoch callback: CSV row and progress ---- */
typedef struct run_ctx { train_run run; int n, failed; } run_ctx;   /* n: the graph's nodes */

static int on_epoch(const al_gnn_epoch *e, void *ud)
{
    run_ctx *r = ud;
    train_epoch x = train_epoch_none();
    x.epoch = e->epoch; x.final = e->final;   /* the restored best model's row closes the run */
    x.loss = e->train_loss; x.train_acc = e->train_acc; x.val_acc = e->val_acc; x.val_loss = e->val_loss;
    x.test_acc = e->test_acc; x.seconds = e->seconds; x.per_second = e->seconds > 0 ? r->n / e->seconds : NAN;
    if (train_report_epoch(&r->run, &x)) { r->failed = 1; return 1; }
    return 0;
}

/* Attention of the kept model: layer,head,src,dst,weight (evaluation mode), written atomically. */
static al_status write_attention(const char *path, al_gnn *m, const al_graph *g, al_error *err)
{
    if (!al_gnn_arch_at((int)m->cfg.kind)->capture)
        return al_seterr(err, "--attention: model %s does not write its attention weights", al_gnn_kind_name(m->cfg.kind));
    al_csr a;
    if (al_graph_adj_self_loops(g, &a, err)) return AL_ERR;
    al_ctx *c = al_ctx_new(1);
    if (!c) { al_csr_free(&a); return al_seterr(err, "out of memory"); }
    c->training = 0; c->grad_enabled = 0;
    m->capture_attn = 1;
    al_tensor *lg = al_gnn_forward(c, m);
    m->capture_attn = 0;
    al_status st = AL_OK;
    char *buf = NULL; size_t len = 0, cap = 0;
    if (!lg || !m->attn[0] || !m->attn[1]) { st = al_seterr(err, "--attention: forward failed: %s", al_ctx_error(c)); goto out; }
    int full = !al_gnn_arch_at((int)m->cfg.kind)->graph, N = g->n;
    cap = (size_t)(a.nnz * (m->cfg.heads + 1)) * 40 + 64;
    buf = malloc(cap);
    if (!buf) { st = al_seterr(err, "--attention: out of memory"); goto out; }
    len = (size_t)snprintf(buf, cap, "layer,head,src,dst,weight\n");
    for (int layer = 0; layer < 2; layer++) {
        al_tensor *w = m->attn[layer];
        int H = layer == 0 ? m->cfg.heads : 1;
        int64_t per_head = full ? (int64_t)N * N : a.nnz;
        if (w->numel != H * per_head) { st = al_seterr(err, "--attention: layer %d weights have %lld entries, expected %lld", layer + 1, (long long)w->numel, (long long)(H * per_head)); goto out; }
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int64_t k = a.rowptr[i]; k < a.rowptr[i + 1]; k++) {
                    int j = a.col[k];
                    float v = full ? w->data[h * per_head + (int64_t)i * N + j] : w->data[h * per_head + k];
                    if (cap - len < 96) {
                        char *nb = realloc(buf, cap * 2);
                        if (!nb) { st = al_seterr(err, "--attention: out of memory"); goto out; }
                        buf = nb; cap *= 2;
                    }
                    len += (size_t)snprintf(buf + len, cap - len, "%d,%d,%d,%d,%.6g\n", layer + 1, h, j, i, (double)v);
                }
    }
    st = al_write_atomic(path, buf, len, err);
out:
    m->attn[0] = m->attn[1] = NULL;
    free(buf); al_csr_free(&a); al_ctx_free(c);
    return st;
}

/* The run's split description and id (canonical description of the run, hashed). */
static void graph_run_id(const gopts *o, const al_gnn_config *cfg, const al_graph *g, long seed, char *split_desc,
                         size_t sn, char run_id[17], char *config, size_t cn, char canon[1024])
{
    if (!strcmp(o->split, "per-class")) snprintf(split_desc, sn, "per-class:%d", o->per_class);
    else if (!strcmp(o->split, "frac")) snprintf(split_desc, sn, "frac:%.6g", o->frac);
    else snprintf(split_desc, sn, "planetoid");
    snprintf(canon, 1024,
             "task=graph;dataset=%s;model=%s;split=%s;train_size=%d;seed=%ld;epochs=%d;hidden=%d;heads=%d;"
             "dropout=%g;attn_dropout=%g;lr=%g;wd=%g;decay_all=%d;patience=%d;normalize=%d",
             g->name, o->model, split_desc, g->ntrain, seed, cfg->epochs, cfg->hidden, cfg->heads, (double)cfg->dropout,
             (double)cfg->attn_dropout, (double)cfg->lr, (double)cfg->weight_decay, cfg->decay_all, cfg->patience, o->normalize);
    /* only the models that have them: the other models' run ids stay what they were */
    size_t len = strlen(canon);
    if (cfg->layers > 0) len += (size_t)snprintf(canon + len, 1024 - len, ";layers=%d", cfg->layers);
    if (cfg->pe_dim > 0) snprintf(canon + len, 1024 - len, ";pe=%d", cfg->pe_dim);
    al_run_id(run_id, canon);
    al_run_config(config, cn, canon);
}

/* The kept model as safetensors with what eval --task graph needs to rebuild it in __metadata__. */
static al_status save_graph(const gopts *o, const al_graph *g, al_gnn *m, long seed, const al_gnn_result *res,
                            const char *split_desc, const char *run_id, al_error *err)
{
    char path[4200], vb[3][32];
    cli_seed_path(path, sizeof path, o->save, seed, o->nseeds > 1);
    snprintf(vb[0], 32, "%ld", seed); snprintf(vb[1], 32, "%d", res->best_epoch); snprintf(vb[2], 32, "%.6f", res->test_acc);
    const char *kv[] = {"split", split_desc, "seed", vb[0], "best_epoch", vb[1], "test_acc", vb[2], "run_id", run_id};
    return al_gnn_save(path, m, g, kv, (int)(sizeof kv / sizeof *kv / 2), err);
}

/* g's training split for this seed (--split per-class / frac); *own: g->train is this run's own. */
static al_status seed_split(const gopts *o, al_graph *g, long seed, int *own, al_error *err)
{
    *own = 0;
    if (strcmp(o->split, "per-class") && strcmp(o->split, "frac")) return AL_OK;
    g->train = NULL; g->ntrain = 0; *own = 1;
    return !strcmp(o->split, "per-class") ? al_graph_split_per_class(g, o->per_class, (uint64_t)seed, err)
                                          : al_graph_split_frac(g, o->frac, (uint64_t)seed, err);
}

/* One seed: split, model, training, outputs; prints its result line. Thread-safe: runs of several
 * seeds may execute concurrently (each with its own model, context and training split). */
typedef struct run_out { int ok, failed, ntrain; al_gnn_result res; al_error err; } run_out;

static int run_seed(const gopts *o, const al_gnn_config *cfg, const al_graph *g0, long seed, int tty, int single, run_out *ro)
{
    if (single) al_set_threads(1);   /* this worker's own thread count: ops run serially, as --threads 1 */
    al_error *err = &ro->err;
    al_graph g = *g0;           /* shallow: shares everything but the training split */
    int own_train;
    if (seed_split(o, &g, seed, &own_train, err)) { ro->failed = 1; free(g.train); return 1; }
    ro->ntrain = g.ntrain;
    char run_id[17], split_desc[64];
    char config[1024], canon[1024];
    graph_run_id(o, cfg, &g, seed, split_desc, sizeof split_desc, run_id, config, sizeof config, canon);
    al_gnn m;
    if (al_gnn_init(&m, cfg, &g, (uint64_t)seed, err)) { ro->failed = 1; if (own_train) free(g.train); return 1; }
    char ckpt[4200], save[4200];
    if (o->checkpoint) cli_seed_path(ckpt, sizeof ckpt, o->checkpoint, seed, o->nseeds > 1);
    if (o->save) cli_seed_path(save, sizeof save, o->save, seed, o->nseeds > 1);
    app_resume ar;
    app_resume_init(&ar, o->checkpoint_every, o->resume, o->checkpoint ? ckpt : NULL, o->save ? save : NULL);
    run_ctx rctx = {{.task = AL_TASK_GRAPH, .run_id = run_id, .dataset = g.name, .model = o->model, .config = config,
                     .train_size = g.ntrain, .seed = seed, .params = (long)m.params.total, .csv = o->csv, .tty = tty,
                     .quiet = o->quiet, .ar = &ar, .err = err}, g.n, 0};
    al_gnn_result res;
    double t0 = al_time();
    int rc;
    #pragma omp critical(train_csv)
    rc = app_resume_start(&ar, o->csv, run_id, canon, &m.params, err);   /* seeds share the CSV */
    al_status st = rc ? AL_ERR : al_gnn_train_resumable(&m, &g, (uint64_t)seed, app_resume_loop(&ar), on_epoch, &rctx, &res, err);
    if (st != AL_OK && !rc) app_resume_fail_note(&ar, err);
    app_resume_free(&ar);
    if (tty && !o->quiet) fprintf(stderr, "\r\033[K");
    if (st == AL_OK && rctx.failed) st = AL_ERR;
    if (st == AL_OK && o->save) st = save_graph(o, &g, &m, seed, &res, split_desc, run_id, err);
    if (st == AL_OK && o->attn) {
        char path[4200];
        cli_seed_path(path, sizeof path, o->attn, seed, o->nseeds > 1);
        st = write_attention(path, &m, &g, err);
    }
    al_gnn_free(&m);
    if (own_train) free(g.train);
    if (st) { ro->failed = 1; return 1; }
    ro->ok = 1; ro->res = res;
    #pragma omp critical(train_graph_stdout)
    {
        printf("%s %s seed %ld: test_acc %.2f %%  val_acc %.2f %%  best epoch %d of %d  %.2f ms/epoch  %.1f s  train_size %d  run %s\n",
               g.name, o->model, seed, 100 * res.test_acc, 100 * res.val_acc, res.best_epoch, res.epochs_run,
               1e3 * res.step_seconds, al_time() - t0, g.ntrain, run_id);
        fflush(stdout);
    }
    return 0;
}

/* ---- parse ---- */
static int parse_split(gopts *o, const char *a)
{
    o->split = a; o->split_set = 1;
    if (!strcmp(a, "planetoid") || !strcmp(a, "per-class") || !strcmp(a, "frac")) return 0;
    fprintf(stderr, "attnlab train: --split expects planetoid, per-class or frac, got '%s'\n", a);
    return -1;
}

/* One flag's value into o; 0 ok, -1 (message printed) bad. Flags of the image task are only noted
 * (train_flags_check refuses them). */
static int parse_flag(gopts *o, int f, const char *a)
{
    const char *c = "train";
    switch (f) {
    case TF_TASK: if (!strcmp(a, "graph")) return 0;
        fprintf(stderr, "attnlab train: this is the graph task, got --task %s\n", a); return -1;
    case TF_DATA: o->data = a; return 0;
    case TF_MODEL: o->model = a; return 0;
    case TF_SPLIT: return parse_split(o, a);
    case TF_LPC: if (!o->split_set) o->split = "per-class";
        return cli_int32(c, "--labels-per-class", a, 1, CLI_NOMAX, &o->per_class);
    case TF_FRAC: if (!o->split_set) o->split = "frac";
        return cli_num(c, "--train-frac", a, 1e-9, 1, &o->frac);
    case TF_SEED: o->nseeds = 1; return cli_int(c, "--seed", a, 0, CLI_NOMAX, &o->seeds[0]);
    case TF_SEEDS: return cli_seeds(c, a, o->seeds, MAX_SEEDS, &o->nseeds);
    case TF_EPOCHS: return cli_int32(c, "--epochs", a, 1, CLI_NOMAX, &o->epochs);
    case TF_CSV: o->csv = a; return 0;
    case TF_SAVE: o->save = a; return 0;
    case TF_ATTENTION: o->attn = a; return 0;
    case TF_THREADS: return cli_threads(c, a, &o->threads);
    case TF_MAX_MEMORY: return cli_max_memory(c, a);
    case TF_QUIET: o->quiet = 1; return 0;
    case TF_CHECKPOINT_EVERY: return cli_int32(c, "--checkpoint-every", a, 1, CLI_NOMAX, &o->checkpoint_every);
    case TF_CHECKPOINT: o->checkpoint = a; return 0;
    case TF_RESUME: o->resume = 1; return 0;
    case TF_SEQUENTIAL: o->sequential = 1; return 0;
    case TF_NO_NORMALIZE: o->normalize = 0; return 0;
    case TF_HIDDEN: return cli_int32(c, "--hidden", a, 1, CLI_NOMAX, &o->hidden);
    case TF_HEADS: return cli_int32(c, "--heads", a, 1, CLI_NOMAX, &o->heads);
    case TF_PATIENCE: return cli_int32(c, "--patience", a, 0, CLI_NOMAX, &o->patience);
    case TF_DROPOUT: return cli_num(c, "--dropout", a, 0, 0.999, &o->dropout);
    case TF_ATTN_DROPOUT: return cli_num(c, "--attn-dropout", a, 0, 0.999, &o->attn_dropout);
    case TF_LR: return cli_num(c, "--lr", a, 1e-12, 1e3, &o->lr);
    case TF_WD: case TF_WEIGHT_DECAY: return cli_num(c, "--wd", a, 0, 1e3, &o->wd);
    default: return 0;
    }
}

/* argv → o. Returns -1 to go on, else the exit status (0 after --help). */
static int parse_graph_opts(int argc, char **argv, gopts *o)
{
    memset(o, 0, sizeof *o);
    o->data = al_task_at(AL_TASK_GRAPH)->default_data; o->model = NULL; o->split = "planetoid"; o->per_class = 20; o->frac = 0.1; o->normalize = 1;
    o->seeds[0] = 1; o->nseeds = 1; o->epochs = -1; o->threads = 0;
    o->hidden = o->heads = o->patience = -1; o->dropout = o->attn_dropout = o->lr = o->wd = NAN;
    const struct option *lo = train_flags_options(AL_TASK_GRAPH);
    optind = 0; opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        if (ch == 'h' || ch == TF_BASE + TF_HELP) { usage(stdout); return 0; }
        if (ch == ':') { fprintf(stderr, "attnlab train: %s needs a value (see attnlab train --task graph --help)\n", argv[optind - 1]); return 2; }
        if (ch < TF_BASE || ch >= TF_BASE + TF_NFLAGS) {
            fprintf(stderr, "attnlab train: unknown option '%s' (see attnlab train --task graph --help)\n", argv[optind - 1]);
            return 2;
        }
        o->seen[ch - TF_BASE] = 1;
        if (parse_flag(o, ch - TF_BASE, optarg)) return 2;
    }
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    return -1;
}

/* The model exists, every flag applies to it, to the split and to the seeds, the outputs can be written. */
static int check_graph_opts(const gopts *o)
{
    if (!o->model) { fprintf(stderr, "attnlab train: --model is required (%s)\n", al_gnn_arch_names()); return 2; }
    al_error err = {{0}};
    al_gnn_kind kind;
    if (al_gnn_kind_parse(o->model, &kind, &err)) { fprintf(stderr, "attnlab train: %s\n", err.msg); return 2; }
    flag_ctx fc = {AL_TASK_GRAPH, o->model, train_model_props(AL_TASK_GRAPH, o->model)};
    if (!strcmp(o->split, "per-class")) fc.props |= AP_PERCLASS;
    if (!strcmp(o->split, "frac")) fc.props |= AP_FRAC;
    if (o->nseeds > 1) fc.props |= AP_SEEDS;
    if (train_flags_check(&fc, o->seen)) return 2;
    /* the outputs can be written (several seeds write FILE-seedS.ext beside FILE): before the graph is loaded */
    if (cli_output("train", "--csv", o->csv, 1) || cli_output("train", "--save", o->save, 0) ||
        cli_output("train", "--attention", o->attn, 0))
        return 2;
    return 0;
}

/* ---- build ---- */
static void graph_config(const gopts *o, al_gnn_config *cfg)
{
    al_gnn_config_default(cfg, o->model, NULL);
    if (o->hidden > 0) cfg->hidden = o->hidden;
    if (o->heads > 0) cfg->heads = o->heads;
    if (o->patience >= 0) cfg->patience = o->patience;
    if (o->epochs > 0) cfg->epochs = o->epochs;
    if (!isnan(o->dropout)) cfg->dropout = (float)o->dropout;
    if (!isnan(o->attn_dropout)) cfg->attn_dropout = (float)o->attn_dropout;
    if (!isnan(o->lr)) cfg->lr = (float)o->lr;
    if (!isnan(o->wd)) cfg->weight_decay = (float)o->wd;
}

/* --labels-per-class beyond what the classes have: the split takes what there is and a note says so;
 * but more than all the candidates together (then the split took them all, fewer than one class
 * asks for) is an absurd value, refused. Returns 0 or the exit status 2. */
static int check_per_class(const gopts *o, const al_graph *g0)
{
    if (strcmp(o->split, "per-class")) return 0;
    al_graph g = *g0;
    al_error err = {{0}};
    int own, rc = 0;
    if (seed_split(o, &g, o->seeds[0], &own, &err) == AL_OK && g.ntrain < (long)o->per_class * g.nclass) {
        if (o->per_class > g.ntrain) {
            fprintf(stderr, "attnlab train: --labels-per-class %d is more than the %d labelled nodes outside val/test that "
                    "%s has in all (%d classes)\n", o->per_class, g.ntrain, g.name, g.nclass);
            rc = 2;
        } else
            fprintf(stderr, "attnlab train: note: --labels-per-class %d asks for %ld training nodes (%d classes), but the "
                    "classes have only %d labelled nodes outside val/test to give; training on %d\n", o->per_class,
                    (long)o->per_class * g.nclass, g.nclass, g.ntrain, g.ntrain);
    }
    free(g.train);
    return rc;
}

/* ---- run ---- */
/* Every seed (concurrently with one thread each, or one after the other); ro[s] their results. */
static void run_seeds(const gopts *o, const al_gnn_config *cfg, const al_graph *g, run_out *ro)
{
    int tty = isatty(2);
    int conc = o->nseeds > 1 && !o->sequential && al_threads() > 1;
    int workers = conc ? (al_threads() < o->nseeds ? al_threads() : o->nseeds) : 1;
    if (!o->quiet && conc)
        fprintf(stderr, "attnlab train: %d seeds, %d at a time with one thread each (--sequential: one at a time)\n",
                o->nseeds, workers);
    if (conc) {
        #pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
        for (int s = 0; s < o->nseeds; s++) run_seed(o, cfg, g, o->seeds[s], 0, 1, &ro[s]);
    } else {
        for (int s = 0; s < o->nseeds; s++) if (run_seed(o, cfg, g, o->seeds[s], tty, 0, &ro[s])) break;
    }
}

/* Failures on stderr; with several seeds, the mean +- sample std of the test accuracy. Returns the exit status. */
static int report_seeds(const gopts *o, const al_graph *g, const run_out *ro, double t_all)
{
    int done = 0, rc = 0;
    double mean = 0, var = 0;
    for (int s = 0; s < o->nseeds; s++) {
        if (ro[s].failed) { rc = 1; fprintf(stderr, "attnlab train: seed %ld: %s\n", o->seeds[s], ro[s].err.msg[0] ? ro[s].err.msg : "failed"); }
        if (ro[s].ok) { mean += ro[s].res.test_acc; done++; }
    }
    if (done > 0) mean /= done;
    for (int s = 0; s < o->nseeds; s++) if (ro[s].ok) var += (ro[s].res.test_acc - mean) * (ro[s].res.test_acc - mean);
    if (o->nseeds > 1 && done > 0) {
        double sd = done > 1 ? sqrt(var / (done - 1)) : 0;
        printf("%s %s (%s split, %d training nodes): test_acc %.2f +- %.2f %% over %d seeds, %.1f s\n",
               g->name, o->model, o->split, ro[0].ntrain, 100 * mean, 100 * sd, done, al_time() - t_all);
    }
    return rc;
}

int train_graph_main(int argc, char **argv)
{
    static gopts o;
    int rc = parse_graph_opts(argc, argv, &o);
    if (rc >= 0) return rc;
    if (cli_check_env_threads("train") || check_graph_opts(&o)) return 2;
    al_gnn_config cfg;
    graph_config(&o, &cfg);
    if (o.threads > 0) al_set_threads(o.threads);
    char dir[4096];
    al_error err = {{0}};
    al_graph g; memset(&g, 0, sizeof g);
    if (al_graph_resolve(o.data, argv[0], dir, sizeof dir, &err) || al_graph_load(&g, dir, o.normalize, &err)) {
        fprintf(stderr, "attnlab train: %s\n", err.msg);
        return 1;
    }
    if (!o.quiet)
        fprintf(stderr, "attnlab train: %s on %s (%s): %d nodes, %d features, %d classes, %lld edges; %d threads, gemm %s\n",
                o.model, g.name, dir, g.n, g.nfeat, g.nclass, (long long)g.adj.nnz, al_threads(), al_gemm_backend());
    if ((rc = check_per_class(&o, &g))) { al_graph_free(&g); return rc; }
    run_out *ro = calloc((size_t)o.nseeds, sizeof *ro);
    if (!ro) { fprintf(stderr, "attnlab train: out of memory\n"); al_graph_free(&g); return 1; }
    double t_all = al_time();
    run_seeds(&o, &cfg, &g, ro);
    rc = report_seeds(&o, &g, ro, t_all);
    free(ro);
    al_graph_free(&g);
    return rc;
}
