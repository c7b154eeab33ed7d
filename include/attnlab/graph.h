/* attnlab/graph.h — graph data for node classification: the text format reader, splits, the
 * adjacency matrices the models use and random benchmark graphs. The models (gat, gat-full, gatv2, gt,
 * gt-full, gcn, mlp) and their training loop are in gnn.h; gt-full's Laplacian eigenvectors are here.
 *
 * A dataset is a directory with features.libsvm, edges.txt, train.idx, val.idx, test.idx
 * (datasets/README.md, "Graph format"). Features are stored as CSR (nodes × features); the first
 * layer of every model is dropout(features) · W, computed as a sparse product when the features
 * are sparse and as a blocked dense gemm when enough of the entries are stored (gnn.h,
 * AL_GNN_DENSE_MIN; the random benchmark graphs). Every malformed line is reported as "FILE:LINE: what is wrong"
 * through al_error.
 *
 *   al_graph g; al_error err = {{0}};
 *   char dir[4096];
 *   if (al_graph_resolve("cora", argv0, dir, sizeof dir, &err) || al_graph_load(&g, dir, 1, &err)) ...;
 *   ... al_graph_free(&g);
 */
#ifndef ATTNLAB_GRAPH_H
#define ATTNLAB_GRAPH_H
#include <stdint.h>
#include "tensor.h"

/* ---------------- data ---------------- */
/* Reader limits: a feature index may exceed 64 × the file's IDX:VAL entries only up to this floor, and
 * the memory it implies must fit the budget (io.h); labels must be below AL_GRAPH_MAX_CLASSES. */
#define AL_GRAPH_FEAT_FLOOR (1 << 16)
#define AL_GRAPH_MAX_CLASSES (1 << 16)
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

/* Laplacian positional encodings (Dwivedi & Bresson 2020): pe (n, k) row-major receives the k
 * eigenvectors (unit norm, columns) of L = I − D^-1/2 A D^-1/2 with the smallest non-trivial
 * eigenvalues, eval (k) or NULL those eigenvalues ascending. A is adj made symmetric, without
 * self-loops; an isolated node has L_ii = 0. "Non-trivial": outside L's null space (one D^1/2 1 per
 * connected component), which is excluded exactly. Each vector's largest entry is positive (the sign
 * is otherwise arbitrary; within a repeated eigenvalue the basis is). When the graph has fewer than k
 * non-trivial eigenpairs the last columns are 0 and their eval NaN. Solver: AL_EIG_DENSE is
 * LAPACKE_dsyevd on the n × n matrix; AL_EIG_ARPACK implicitly restarted Lanczos (ARPACK dsaupd) on
 * P (2I − L) P, P off the null space; AL_EIG_AUTO dense up to AL_LAPPE_DENSE_MAX nodes (src/data/graph_lappe.c). */
typedef enum { AL_EIG_AUTO, AL_EIG_DENSE, AL_EIG_ARPACK } al_eig_solver;
#define AL_LAPPE_DENSE_MAX 1000
al_status al_graph_lap_pe(const al_csr *adj, int k, al_eig_solver solver, float *pe, double *eval, al_error *err);

/* A random graph for benchmarks: n nodes, m distinct directed edges (no self-loops) with uniform
 * endpoints, nfeat dense uniform features per node stored as CSR (row-normalised), nclass
 * random labels; train / val / test are random disjoint 10 % / 10 % / 10 % of the nodes. */
al_status al_graph_random(al_graph *g, int n, int64_t m, int nfeat, int nclass, uint64_t seed, al_error *err);

#endif
