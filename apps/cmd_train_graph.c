/* train_graph.c — attnlab train --task graph: node classification (gat, gat-full, gcn, mlp) on a
 * graph dataset, one or several seeds, CSV log, checkpoint, learned attention as CSV. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "attnlab/gnn.h"
#include "attnlab/io.h"
#include "attnlab/datadir.h"
#include "attnlab/kernels.h"

#define MAX_SEEDS 1000

typedef struct gopts {
    const char *data, *model, *split, *csv, *save, *attn;
    int per_class, epochs, threads, quiet, normalize, sequential;
    double frac;
    long seeds[MAX_SEEDS]; int nseeds;
    /* overrides; < 0 (or NaN) = model default */
    int hidden, heads, patience;
    double dropout, attn_dropout, lr, wd;
} gopts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: attnlab train --task graph --data cora|DIR --model gat|gat-full|gcn|mlp [OPTIONS]\n\n"
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
        "  --labels-per-class N  (implies --split per-class; default 20)\n"
        "  --train-frac F        in (0, 1] (implies --split frac; default 0.1)\n"
        "model (defaults: the papers' Cora settings):\n"
        "  --model M             gat: 2 layers, 8 heads x 8 hidden (ELU, concatenated), then 1 head;\n"
        "                        additive scores LeakyReLU 0.2 over neighbours and self; dropout 0.6 on\n"
        "                        both inputs and the coefficients; lr 0.005, wd 5e-4 on all parameters;\n"
        "                        1000 epochs, patience 100\n"
        "                        gat-full: the same with every node attending to every node\n"
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
        "output:\n"
        "  --csv FILE            append one row per epoch, then one for the restored best model with its\n"
        "                        epoch number, train_loss without dropout and empty timing (a run's last row\n"
        "                        is its result); columns: " AL_CSV_HEADER ";\n"
        "                        train_size = labelled training nodes, samples_per_second = nodes / step s\n"
        "  --save FILE           safetensors checkpoint of the kept model (several seeds: FILE-seedS.ext)\n"
        "  --attention FILE      CSV layer,head,src,dst,weight of the kept model's attention, evaluation mode\n"
        "                        (gat, gat-full; gat-full writes the weights on the edges of A+I only)\n"
        "  --quiet               no progress on stderr\n"
        "  --help\n");
}

static int parse_int(const char *s, const char *flag, int lo, int *out)
{
    char *e; errno = 0;
    long v = strtol(s, &e, 10);
    if (e == s || *e || errno || v < lo || v > 1000000000L) {
        fprintf(stderr, "attnlab train: %s expects an integer >= %d, got '%s'\n", flag, lo, s);
        return -1;
    }
    *out = (int)v;
    return 0;
}
static int parse_num(const char *s, const char *flag, double lo, double hi, double *out)
{
    char *e; errno = 0;
    double v = strtod(s, &e);
    if (e == s || *e || errno || !isfinite(v) || v < lo || v > hi) {
        fprintf(stderr, "attnlab train: %s expects a number in [%g, %g], got '%s'\n", flag, lo, hi, s);
        return -1;
    }
    *out = v;
    return 0;
}
/* "1-10", "3", "1,2,5-7" */
static int parse_seeds(const char *s, gopts *o)
{
    o->nseeds = 0;
    const char *p = s;
    while (*p) {
        char *e; errno = 0;
        long a = strtol(p, &e, 10), b;
        if (e == p || errno || a < 0) goto bad;
        p = e; b = a;
        if (*p == '-') {
            p++; b = strtol(p, &e, 10);
            if (e == p || errno || b < a) goto bad;
            p = e;
        }
        for (long v = a; v <= b; v++) {
            if (o->nseeds >= MAX_SEEDS) { fprintf(stderr, "attnlab train: --seeds: more than %d seeds\n", MAX_SEEDS); return -1; }
            o->seeds[o->nseeds++] = v;
        }
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    if (o->nseeds > 0) return 0;
bad:
    fprintf(stderr, "attnlab train: --seeds expects a list like 1-10 or 1,3,5-7, got '%s'\n", s);
    return -1;
}

/* FILE → FILE-seedS.ext when several seeds write the same output. */
static void seed_path(char *out, size_t n, const char *path, long seed, int several)
{
    if (!several) { snprintf(out, n, "%s", path); return; }
    const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash) || dot == path) snprintf(out, n, "%s-seed%ld", path, seed);
    else snprintf(out, n, "%.*s-seed%ld%s", (int)(dot - path), path, seed, dot);
}

/* ---- per-epoch callback: CSV row and progress ---- */
typedef struct run_ctx {
    const gopts *o; const al_graph *g; const al_gnn *m;
    const char *run_id; long seed; int tty;
    al_error *err; int failed;
} run_ctx;

static int on_epoch(const al_gnn_epoch *e, void *ud)
{
    run_ctx *r = ud;
    if (r->o->csv) {
        al_csv_row row;
        memset(&row, 0, sizeof row);
        row.run_id = r->run_id; row.task = "graph"; row.dataset = r->g->name; row.model = r->o->model;
        row.train_size = r->g->ntrain; row.seed = r->seed; row.epoch = e->epoch;
        row.train_loss = e->train_loss; row.train_acc = e->train_acc; row.val_acc = e->val_acc;
        row.test_acc = e->test_acc; row.epoch_seconds = e->seconds;
        row.samples_per_second = e->seconds > 0 ? r->g->n / e->seconds : NAN;
        row.params = (long)r->m->params.total;
        al_status st;
        #pragma omp critical(train_graph_csv)
        st = al_csv_append(r->o->csv, &row, r->err);
        if (st != AL_OK) { r->failed = 1; return 1; }
    }
    if (r->tty && !r->o->quiet && !e->final)
        fprintf(stderr, "\r\033[Kseed %ld epoch %d  loss %.4f  train %.3f  val %.3f (loss %.4f)  test %.3f  %.1f ms",
                r->seed, e->epoch, e->train_loss, e->train_acc, e->val_acc, e->val_loss, e->test_acc, 1e3 * e->seconds);
    return 0;
}

/* Attention of the kept model: layer,head,src,dst,weight (evaluation mode), written atomically. */
static al_status write_attention(const char *path, al_gnn *m, const al_graph *g, al_error *err)
{
    if (!al_gnn_model_at((int)m->cfg.kind)->attention)
        return al_seterr(err, "--attention: model %s has no attention", al_gnn_kind_name(m->cfg.kind));
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
    int full = !al_gnn_model_at((int)m->cfg.kind)->graph, N = g->n;
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

/* One seed: split, model, training, outputs; prints its result line. Thread-safe: runs of several
 * seeds may execute concurrently (each with its own model, context and training split). */
typedef struct run_out { int ok, failed, ntrain; al_gnn_result res; al_error err; } run_out;

static int run_seed(const gopts *o, const al_gnn_cfg *cfg, const al_graph *g0, long seed, int tty, int single, run_out *ro)
{
    if (single) al_set_threads(1);   /* this worker's own thread count: ops run serially, as --threads 1 */
    al_error *err = &ro->err;
    al_graph g = *g0;           /* shallow: shares everything but the training split */
    int own_train = 0;
    if (!strcmp(o->split, "per-class") || !strcmp(o->split, "frac")) {
        g.train = NULL; g.ntrain = 0; own_train = 1;
        al_status st = !strcmp(o->split, "per-class") ? al_graph_split_per_class(&g, o->per_class, (uint64_t)seed, err)
                                                      : al_graph_split_frac(&g, o->frac, (uint64_t)seed, err);
        if (st) { ro->failed = 1; free(g.train); return 1; }
    }
    ro->ntrain = g.ntrain;
    char canon[1024], run_id[17], split_desc[64];
    if (!strcmp(o->split, "per-class")) snprintf(split_desc, sizeof split_desc, "per-class:%d", o->per_class);
    else if (!strcmp(o->split, "frac")) snprintf(split_desc, sizeof split_desc, "frac:%.6g", o->frac);
    else snprintf(split_desc, sizeof split_desc, "planetoid");
    snprintf(canon, sizeof canon,
             "task=graph;dataset=%s;model=%s;split=%s;train_size=%d;seed=%ld;epochs=%d;hidden=%d;heads=%d;"
             "dropout=%g;attn_dropout=%g;lr=%g;wd=%g;decay_all=%d;patience=%d;normalize=%d",
             g.name, o->model, split_desc, g.ntrain, seed, cfg->epochs, cfg->hidden, cfg->heads, (double)cfg->dropout,
             (double)cfg->attn_dropout, (double)cfg->lr, (double)cfg->weight_decay, cfg->decay_all, cfg->patience, o->normalize);
    al_run_id(run_id, canon);
    al_gnn m;
    if (al_gnn_init(&m, cfg, &g, (uint64_t)seed, err)) { ro->failed = 1; if (own_train) free(g.train); return 1; }
    run_ctx rctx = {o, &g, &m, run_id, seed, tty, err, 0};
    al_gnn_result res;
    double t0 = al_time();
    al_status st = al_gnn_train(&m, &g, (uint64_t)seed, on_epoch, &rctx, &res, err);
    if (tty && !o->quiet) fprintf(stderr, "\r\033[K");
    if (st == AL_OK && rctx.failed) st = AL_ERR;
    if (st == AL_OK && o->save) {
        char path[4200], vb[8][32];
        seed_path(path, sizeof path, o->save, seed, o->nseeds > 1);
        snprintf(vb[0], 32, "%d", g.ntrain); snprintf(vb[1], 32, "%ld", seed); snprintf(vb[2], 32, "%d", res.best_epoch);
        snprintf(vb[3], 32, "%.6f", res.test_acc); snprintf(vb[4], 32, "%d", g.n); snprintf(vb[5], 32, "%d", g.nfeat);
        snprintf(vb[6], 32, "%d", g.nclass); snprintf(vb[7], 32, "%d", cfg->heads);
        const char *kv[] = {"task", "graph", "dataset", g.name, "model", o->model, "split", split_desc,
                            "train_size", vb[0], "seed", vb[1], "best_epoch", vb[2], "test_acc", vb[3],
                            "nodes", vb[4], "features", vb[5], "classes", vb[6], "heads", vb[7], "run_id", run_id};
        st = al_safetensors_save(path, &m.params, kv, (int)(sizeof kv / sizeof *kv / 2), err);
    }
    if (st == AL_OK && o->attn) {
        char path[4200];
        seed_path(path, sizeof path, o->attn, seed, o->nseeds > 1);
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

enum { O_TASK = 256, O_DATA, O_MODEL, O_SPLIT, O_LPC, O_FRAC, O_SEED, O_SEEDS, O_EPOCHS, O_CSV, O_SAVE, O_ATTN,
       O_THREADS, O_QUIET, O_NONORM, O_HIDDEN, O_HEADS, O_DROPOUT, O_ADROP, O_LR, O_WD, O_PATIENCE, O_SEQ, O_HELP };

int train_graph_main(int argc, char **argv)
{
    static gopts o;
    memset(&o, 0, sizeof o);
    o.data = "cora"; o.model = NULL; o.split = "planetoid"; o.per_class = 20; o.frac = 0.1; o.normalize = 1;
    o.seeds[0] = 1; o.nseeds = 1; o.epochs = -1; o.threads = 0;
    o.hidden = o.heads = o.patience = -1; o.dropout = o.attn_dropout = o.lr = o.wd = NAN;
    static const struct option lo[] = {
        {"task", 1, 0, O_TASK}, {"data", 1, 0, O_DATA}, {"model", 1, 0, O_MODEL}, {"split", 1, 0, O_SPLIT},
        {"labels-per-class", 1, 0, O_LPC}, {"train-frac", 1, 0, O_FRAC}, {"seed", 1, 0, O_SEED},
        {"seeds", 1, 0, O_SEEDS}, {"epochs", 1, 0, O_EPOCHS}, {"csv", 1, 0, O_CSV}, {"save", 1, 0, O_SAVE},
        {"attention", 1, 0, O_ATTN}, {"threads", 1, 0, O_THREADS}, {"quiet", 0, 0, O_QUIET},
        {"no-normalize", 0, 0, O_NONORM}, {"hidden", 1, 0, O_HIDDEN}, {"heads", 1, 0, O_HEADS},
        {"dropout", 1, 0, O_DROPOUT}, {"attn-dropout", 1, 0, O_ADROP}, {"lr", 1, 0, O_LR}, {"wd", 1, 0, O_WD},
        {"weight-decay", 1, 0, O_WD}, {"patience", 1, 0, O_PATIENCE}, {"sequential", 0, 0, O_SEQ}, {"help", 0, 0, O_HELP}, {0, 0, 0, 0}};
    optind = 0; opterr = 0;
    int ch, bad = 0, split_set = 0;
    while (!bad && (ch = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
        switch (ch) {
        case O_TASK: if (strcmp(optarg, "graph")) { fprintf(stderr, "attnlab train: this is the graph task, got --task %s\n", optarg); return 2; } break;
        case O_DATA: o.data = optarg; break;
        case O_MODEL: o.model = optarg; break;
        case O_SPLIT: o.split = optarg; split_set = 1;
            if (strcmp(optarg, "planetoid") && strcmp(optarg, "per-class") && strcmp(optarg, "frac")) {
                fprintf(stderr, "attnlab train: --split expects planetoid, per-class or frac, got '%s'\n", optarg); bad = -1;
            }
            break;
        case O_LPC: bad = parse_int(optarg, "--labels-per-class", 1, &o.per_class); if (!split_set) o.split = "per-class"; break;
        case O_FRAC: bad = parse_num(optarg, "--train-frac", 1e-9, 1, &o.frac); if (!split_set) o.split = "frac"; break;
        case O_SEED: { int s = 0; bad = parse_int(optarg, "--seed", 0, &s); o.seeds[0] = s; o.nseeds = 1; break; }
        case O_SEEDS: bad = parse_seeds(optarg, &o); break;
        case O_EPOCHS: bad = parse_int(optarg, "--epochs", 1, &o.epochs); break;
        case O_CSV: o.csv = optarg; break;
        case O_SAVE: o.save = optarg; break;
        case O_ATTN: o.attn = optarg; break;
        case O_THREADS: bad = parse_int(optarg, "--threads", 1, &o.threads); break;
        case O_QUIET: o.quiet = 1; break;
        case O_SEQ: o.sequential = 1; break;
        case O_NONORM: o.normalize = 0; break;
        case O_HIDDEN: bad = parse_int(optarg, "--hidden", 1, &o.hidden); break;
        case O_HEADS: bad = parse_int(optarg, "--heads", 1, &o.heads); break;
        case O_PATIENCE: bad = parse_int(optarg, "--patience", 0, &o.patience); break;
        case O_DROPOUT: bad = parse_num(optarg, "--dropout", 0, 0.999, &o.dropout); break;
        case O_ADROP: bad = parse_num(optarg, "--attn-dropout", 0, 0.999, &o.attn_dropout); break;
        case O_LR: bad = parse_num(optarg, "--lr", 1e-12, 1e3, &o.lr); break;
        case O_WD: bad = parse_num(optarg, "--wd", 0, 1e3, &o.wd); break;
        case 'h': case O_HELP: usage(stdout); return 0;
        case ':': fprintf(stderr, "attnlab train: %s needs a value (see attnlab train --task graph --help)\n", argv[optind - 1]); return 2;
        default: fprintf(stderr, "attnlab train: unknown option '%s' (see attnlab train --task graph --help)\n", argv[optind - 1]); return 2;
        }
    }
    if (bad) return 2;
    if (optind < argc) { fprintf(stderr, "attnlab train: unexpected argument '%s'\n", argv[optind]); return 2; }
    if (!o.model) { fprintf(stderr, "attnlab train: --model is required (gat, gat-full, gcn or mlp)\n"); return 2; }
    al_error err = {{0}};
    al_gnn_kind kind;
    if (al_gnn_kind_parse(o.model, &kind, &err)) { fprintf(stderr, "attnlab train: %s\n", err.msg); return 2; }
    if (o.attn && !al_gnn_model_at((int)kind)->attention) {
        fprintf(stderr, "attnlab train: --attention needs an attention model (gat or gat-full)\n"); return 2;
    }
    al_gnn_cfg cfg; al_gnn_defaults(&cfg, kind);
    if (o.hidden > 0) cfg.hidden = o.hidden;
    if (o.heads > 0) cfg.heads = o.heads;
    if (o.patience >= 0) cfg.patience = o.patience;
    if (o.epochs > 0) cfg.epochs = o.epochs;
    if (!isnan(o.dropout)) cfg.dropout = (float)o.dropout;
    if (!isnan(o.attn_dropout)) cfg.attn_dropout = (float)o.attn_dropout;
    if (!isnan(o.lr)) cfg.lr = (float)o.lr;
    if (!isnan(o.wd)) cfg.weight_decay = (float)o.wd;
    if (o.threads > 0) al_set_threads(o.threads);

    int tty = isatty(2);
    char dir[4096];
    al_graph g; memset(&g, 0, sizeof g);
    if (al_graph_resolve(o.data, argv[0], dir, sizeof dir, &err) || al_graph_load(&g, dir, o.normalize, &err)) {
        fprintf(stderr, "attnlab train: %s\n", err.msg);
        return 1;
    }
    if (!o.quiet)
        fprintf(stderr, "attnlab train: %s on %s (%s): %d nodes, %d features, %d classes, %lld edges; %d threads, gemm %s\n",
                o.model, g.name, dir, g.n, g.nfeat, g.nclass, (long long)g.adj.nnz, al_threads(), al_gemm_backend());
    int conc = o.nseeds > 1 && !o.sequential && al_threads() > 1;
    int workers = conc ? (al_threads() < o.nseeds ? al_threads() : o.nseeds) : 1;
    if (!o.quiet && conc)
        fprintf(stderr, "attnlab train: %d seeds, %d at a time with one thread each (--sequential: one at a time)\n",
                o.nseeds, workers);
    run_out *ro = calloc((size_t)o.nseeds, sizeof *ro);
    if (!ro) { fprintf(stderr, "attnlab train: out of memory\n"); al_graph_free(&g); return 1; }
    double t_all = al_time();
    if (conc) {
        #pragma omp parallel for schedule(dynamic, 1) num_threads(workers)
        for (int s = 0; s < o.nseeds; s++) run_seed(&o, &cfg, &g, o.seeds[s], 0, 1, &ro[s]);
    } else {
        for (int s = 0; s < o.nseeds; s++) if (run_seed(&o, &cfg, &g, o.seeds[s], tty, 0, &ro[s])) break;
    }
    int done = 0, rc = 0;
    double mean = 0, var = 0;
    for (int s = 0; s < o.nseeds; s++) {
        if (ro[s].failed) { rc = 1; fprintf(stderr, "attnlab train: seed %ld: %s\n", o.seeds[s], ro[s].err.msg[0] ? ro[s].err.msg : "failed"); }
        if (ro[s].ok) { mean += ro[s].res.test_acc; done++; }
    }
    if (done > 0) mean /= done;
    for (int s = 0; s < o.nseeds; s++) if (ro[s].ok) var += (ro[s].res.test_acc - mean) * (ro[s].res.test_acc - mean);
    if (o.nseeds > 1 && done > 0) {
        double sd = done > 1 ? sqrt(var / (done - 1)) : 0;
        printf("%s %s (%s split, %d training nodes): test_acc %.2f +- %.2f %% over %d seeds, %.1f s\n",
               g.name, o.model, o.split, ro[0].ntrain, 100 * mean, 100 * sd, done, al_time() - t_all);
    }
    free(ro);
    al_graph_free(&g);
    return rc;
}
