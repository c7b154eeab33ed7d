/* attnlab/graph.h — node classification on a graph: the text format reader, splits, and the
 * four models (gat, gat-full, gcn, mlp) with their full-batch training loop.
 *
 * A dataset is a directory with features.libsvm, edges.txt, train.idx, val.idx, test.idx
 * (datasets/README.md, "Graph format"). Features are stored as CSR (nodes × features); the first
 * layer of every model is dropout(features) · W, computed as a sparse product when the features
 * are sparse and as a blocked dense gemm when at least AL_GNN_DENSE_MIN of the entries are stored
 * (the random benchmark graphs). Every malformed line is reported as "FILE:LINE: what is wrong"
 * through al_error.
 *
 *   al_graph g; al_error err = {{0}};
 *   char dir[4096];
 *   if (al_graph_resolve("cora", argv0, dir, sizeof dir, &err) || al_graph_load(&g, dir, 1, &err)) ...;
 *   al_gnn_cfg cfg; al_gnn_defaults(&cfg, AL_GNN_GAT);
 *   al_gnn m; al_gnn_init(&m, &cfg, &g, seed, &err);
 *   al_gnn_result r; al_gnn_train(&m, &g, seed, on_epoch, ud, &r, &err);   // r.test_acc
 *   al_gnn_free(&m); al_graph_free(&g);
 */
#ifndef ATTNLAB_GRAPH_H
#define ATTNLAB_GRAPH_H
#include <stdint.h>
#include "tensor.h"
#include "optim.h"

/* ---------------- data ---------------- */
typedef struct al_graph {
    int n, nfeat, nclass;
    al_csr feat;            /* (n, nfeat): features, row-normalised if asked; val never NULL */
    al_csr adj;             /* (n, n): row = destination, columns = its sources, sorted, no
                             * duplicates, no self-loops; val NULL (all ones) */
    int64_t nedges_file;    /* lines of edges.txt (before dropping duplicates / self-loops) */
    int *label;             /* (n): class 0..nclass-1, or -1 unlabelled */
    int *train, *val, *test;        /* node ids; owned */
    int ntrain, nval, ntest;
    char name[64];          /* last path component of the directory */
} al_graph;

/* Find a dataset: if `name` names an existing directory (or contains '/'), it is used as is;
 * otherwise al_data_locate (datadir.h) looks NAME up ($ATTNLAB_DATA/NAME, the repository's
 * datasets/NAME, the installed data directory). exe is unused (/proc/self/exe is). Writes the
 * directory to out. */
al_status al_graph_resolve(const char *name, const char *exe, char *out, size_t n, al_error *err);
/* Read and validate a dataset directory; normalize = divide every feature row by its sum.
 * Caller frees with al_graph_free (also safe after a failed load). */
al_status al_graph_load(al_graph *g, const char *dir, int normalize, al_error *err);
void      al_graph_free(al_graph *g);

/* Replace the training split (val and test stay as loaded). Candidates are labelled nodes in
 * neither val nor test, shuffled with the AL_RNG_DATA stream of seed.
 * per_class: the first per_class candidates of each class (fewer if a class has fewer). */
al_status al_graph_split_per_class(al_graph *g, int per_class, uint64_t seed, al_error *err);
/* frac in (0, 1]: the first round(frac · #candidates) candidates (at least 1). */
al_status al_graph_split_frac(al_graph *g, double frac, uint64_t seed, al_error *err);

/* Adjacency for attention: A with a self-loop added to every row (row i = the keys of query i). */
al_status al_graph_adj_self_loops(const al_graph *g, al_csr *out, al_error *err);
/* GCN propagation matrix Â = D^-1/2 (A + I) D^-1/2 with values, D the row sums of A + I. */
al_status al_graph_gcn_norm(const al_graph *g, al_csr *out, al_error *err);

/* A random graph for benchmarks: n nodes, m distinct directed edges (no self-loops) with uniform
 * endpoints, nfeat dense uniform features per node stored as CSR (row-normalised), nclass
 * random labels; train / val / test are random disjoint 10 % / 10 % / 10 % of the nodes. */
al_status al_graph_random(al_graph *g, int n, int64_t m, int nfeat, int nclass, uint64_t seed, al_error *err);

/* ---------------- models ---------------- */
typedef enum { AL_GNN_GAT, AL_GNN_GAT_FULL, AL_GNN_GCN, AL_GNN_MLP } al_gnn_kind;

/* Fraction of stored feature entries (nnz / (n · nfeat)) from which the first layer multiplies a
 * dense feature matrix (gemm) instead of the CSR (spmm). */
#define AL_GNN_DENSE_MIN 0.25

typedef struct al_gnn_cfg {
    al_gnn_kind kind;
    int hidden;             /* GAT: features per head of layer 1; GCN / MLP: hidden width */
    int heads;              /* GAT: heads of layer 1 (concatenated); layer 2 has one head */
    float dropout;          /* on the input of both layers */
    float attn_dropout;     /* GAT: on the normalised attention coefficients */
    float slope;            /* GAT: LeakyReLU slope of the additive score */
    float lr, weight_decay; /* Adam with L2 weight decay */
    int decay_all;          /* 1: decay every parameter; 0: only the first layer's weight (Kipf) */
    int epochs;             /* maximum number of epochs */
    int patience;           /* stop when neither val loss nor val acc improved for this many epochs; 0 = never */
} al_gnn_cfg;

/* Defaults (the papers' Cora settings):
 *   gat, gat-full  8 heads × 8, dropout 0.6, attention dropout 0.6, slope 0.2, lr 0.005,
 *                  wd 5e-4 on every parameter, 1000 epochs, patience 100
 *   gcn            16 hidden, dropout 0.5, lr 0.01, wd 5e-4 on the first layer's weight, 200 epochs
 *   mlp            64 hidden, dropout 0.5, lr 0.01, wd 5e-4 on the first layer's weight, 200 epochs */
void        al_gnn_defaults(al_gnn_cfg *cfg, al_gnn_kind kind);
al_status   al_gnn_kind_parse(const char *name, al_gnn_kind *out, al_error *err);
const char *al_gnn_kind_name(al_gnn_kind kind);

typedef struct al_gnn {
    al_gnn_cfg cfg;
    int n, nfeat, nclass;
    const al_csr *feat;     /* borrowed from the graph: (n, nfeat) */
    const float *xdense;    /* (n, nfeat) the features as a dense matrix when they are dense enough
                             * (see AL_GNN_DENSE_MIN), else NULL: feat->val itself when the CSR stores
                             * every entry in row-major order, otherwise xdense_own */
    float *xdense_own;      /* owned dense copy, or NULL */
    al_csr adj;             /* gat: A + I; gcn: Â; gat-full, mlp: unused; owned */
    al_params params;       /* w1, b1, [a1_q, a1_k,] w2, b2, [a2_q, a2_k] */
    al_tensor *w1, *b1, *a1q, *a1k, *w2, *b2, *a2q, *a2k;
    /* If capture_attn is set, a GAT forward stores each layer's attention weights (1, H, slots)
     * in attn[0..1] (arena memory of the context, valid until al_ctx_reset). */
    int capture_attn;
    al_tensor *attn[2];
} al_gnn;

/* Build the model for graph g (which must outlive it); parameters from the AL_RNG_INIT stream of
 * seed, Glorot-uniform weights, zero biases. Caller frees with al_gnn_free. */
al_status  al_gnn_init(al_gnn *m, const al_gnn_cfg *cfg, const al_graph *g, uint64_t seed, al_error *err);
void       al_gnn_free(al_gnn *m);
/* Logits (n, nclass) for every node; dropout when c->training, on the tape when c->grad_enabled. */
al_tensor *al_gnn_forward(al_ctx *c, al_gnn *m);
/* Sparse inverted dropout of a constant CSR's values (p = 0 or !c->training: s itself).
 * Returns arena memory sharing s's structure; the mask comes from c->dropout_rng. */
const al_csr *al_csr_dropout(al_ctx *c, const al_csr *s, float p);

/* ---------------- training ---------------- */
typedef struct al_gnn_epoch {
    int epoch;              /* 1-based; for the final (restored) record, the best epoch */
    int final;              /* 1 for the record of the restored best model */
    double train_loss;      /* loss of the training step (with dropout); final record: without */
    double train_acc, val_loss, val_acc, test_acc;   /* evaluation without dropout */
    double seconds;         /* wall time of the training step (forward, backward, optimiser) */
} al_gnn_epoch;
/* Called after every epoch and once for the restored best model; a nonzero return stops training. */
typedef int (*al_gnn_epoch_fn)(const al_gnn_epoch *e, void *ud);

typedef struct al_gnn_result {
    int best_epoch, epochs_run;
    double train_acc, val_loss, val_acc, test_acc;   /* of the restored best model */
    double step_seconds;    /* mean wall time of a training step */
} al_gnn_result;

/* Full-batch training with Adam (cfg lr / weight decay), cross-entropy on the training nodes.
 * After each epoch the model is evaluated; as in the GAT paper the model is kept when validation
 * accuracy and loss are both at least as good as their best so far, and training stops after
 * cfg.patience epochs in which neither improved. The kept model is restored into m at the end.
 * Attention is not captured during training (capture_attn is ignored here). */
al_status al_gnn_train(al_gnn *m, const al_graph *g, uint64_t seed, al_gnn_epoch_fn fn, void *ud,
                       al_gnn_result *res, al_error *err);

/* One training step: forward with dropout, cross-entropy over g's training nodes, backward,
 * optimiser step. c is reset first. *loss receives the training loss. */
al_status al_gnn_step(al_gnn *m, const al_graph *g, al_ctx *c, al_optim *o, double *loss, al_error *err);

/* Evaluation without dropout, one forward pass over all nodes. */
typedef struct al_gnn_eval { double train_loss, train_acc, val_loss, val_acc, test_loss, test_acc; } al_gnn_eval;
al_status al_gnn_evaluate(al_gnn *m, const al_graph *g, al_ctx *c, al_gnn_eval *ev, al_error *err);
#endif
