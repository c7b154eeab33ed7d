/* graph_lappe.c — Laplacian eigenvector positional encodings (Dwivedi & Bresson 2020): the k
 * eigenvectors of the symmetric normalised Laplacian L = I − D^-1/2 A D^-1/2 with the smallest
 * non-trivial eigenvalues; see graph.h (al_graph_lap_pe).
 *
 * A is the adjacency made symmetric (an edge either way is an edge), without self-loops; an
 * isolated node has L_ii = 0 (the scipy / networkx convention). The trivial eigenvectors — the
 * null space of L, one per connected component, D^1/2 1 on that component — are known exactly
 * and excluded: "non-trivial" means outside that null space, so a graph with many components
 * (Cora has 78) does not spend its k vectors on component indicators.
 *
 * Two solvers, the same answer:
 *   dense   LAPACKE_dsyevd on the n × n matrix (small graphs; the tests' reference)
 *   ARPACK  dsaupd/dseupd (implicitly restarted Lanczos) on op = P (2I − L) P, P the projector off
 *           the null space: its largest eigenvalues 2 − λ are L's smallest non-trivial ones and the
 *           null space maps to 0. Only matrix-vector products with the sparse A are needed.
 * ARPACK keeps state in SAVE variables, so its calls are serialised (omp critical); its start
 * vector is fixed (not ARPACK's own random one, whose seed advances from call to call), and every
 * eigenvector's sign is set so that its largest entry is positive: the result depends on the graph
 * only. */
#include "attnlab/graph.h"
#include "attnlab/io.h"
#include <arpack.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The symmetric pattern: rows of A ∪ Aᵀ without self-loops, sorted, no duplicates. */
typedef struct sym_adj { int n; int64_t *ptr; int *col; } sym_adj;

static int cmp_int(const void *a, const void *b) { int x = *(const int *)a, y = *(const int *)b; return (x > y) - (x < y); }

static al_status sym_build(const al_csr *A, sym_adj *s, al_error *err)
{
    const int n = A->rows;
    s->n = n;
    s->ptr = calloc((size_t)n + 1, sizeof *s->ptr);
    int64_t *fill = calloc((size_t)n + 1, sizeof *fill);
    if (!s->ptr || !fill) { free(fill); return al_seterr(err, "laplacian: out of memory for %d nodes", n); }
    for (int i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++)
            if (A->col[e] != i) { s->ptr[i + 1]++; s->ptr[A->col[e] + 1]++; }
    for (int i = 0; i < n; i++) s->ptr[i + 1] += s->ptr[i];
    s->col = malloc((size_t)(s->ptr[n] > 0 ? s->ptr[n] : 1) * sizeof *s->col);
    if (!s->col) { free(fill); return al_seterr(err, "laplacian: out of memory for %lld edges", (long long)s->ptr[n]); }
    for (int i = 0; i < n; i++)
        for (int64_t e = A->rowptr[i]; e < A->rowptr[i + 1]; e++) {
            const int j = A->col[e];
            if (j == i) continue;
            s->col[s->ptr[i] + fill[i]++] = j;
            s->col[s->ptr[j] + fill[j]++] = i;
        }
    /* sort each row and drop duplicates in place (the rows shrink; ptr is rewritten) */
    int64_t w = 0;
    for (int i = 0; i < n; i++) {
        const int64_t a = s->ptr[i], b = s->ptr[i + 1];
        qsort(s->col + a, (size_t)(b - a), sizeof *s->col, cmp_int);
        s->ptr[i] = w;
        for (int64_t e = a; e < b; e++)
            if (e == a || s->col[e] != s->col[e - 1]) s->col[w++] = s->col[e];
    }
    s->ptr[n] = w;
    free(fill);
    return AL_OK;
}

/* y = L x with L = I − D^-1/2 A D^-1/2 (isolated nodes: 0). dinv = D^-1/2 (0 when isolated). */
static void lap_apply(const sym_adj *s, const double *dinv, const double *x, double *y)
{
    for (int i = 0; i < s->n; i++) {
        double acc = 0;
        for (int64_t e = s->ptr[i]; e < s->ptr[i + 1]; e++) acc += dinv[s->col[e]] * x[s->col[e]];
        y[i] = (s->ptr[i + 1] > s->ptr[i] ? x[i] : 0.0) - dinv[i] * acc;
    }
}

/* The null space: comp[i] the component of node i (0..ncomp-1), u[i] its basis vector's entry
 * (√deg, or 1 for an isolated node), unorm2[c] = Σ u² over component c. */
typedef struct nullspace { int ncomp; int *comp; double *u, *unorm2; } nullspace;

static al_status null_build(const sym_adj *s, nullspace *ns, al_error *err)
{
    const int n = s->n;
    ns->comp = malloc((size_t)n * sizeof *ns->comp);
    ns->u = malloc((size_t)n * sizeof *ns->u);
    int *stack = malloc((size_t)n * sizeof *stack);
    ns->unorm2 = NULL; ns->ncomp = 0;
    if (!ns->comp || !ns->u || !stack) { free(stack); return al_seterr(err, "laplacian: out of memory"); }
    for (int i = 0; i < n; i++) ns->comp[i] = -1;
    for (int r = 0; r < n; r++) {
        if (ns->comp[r] >= 0) continue;
        int top = 0;
        stack[top++] = r; ns->comp[r] = ns->ncomp;
        while (top > 0) {
            const int i = stack[--top];
            for (int64_t e = s->ptr[i]; e < s->ptr[i + 1]; e++)
                if (ns->comp[s->col[e]] < 0) { ns->comp[s->col[e]] = ns->ncomp; stack[top++] = s->col[e]; }
        }
        ns->ncomp++;
    }
    free(stack);
    ns->unorm2 = calloc((size_t)ns->ncomp, sizeof *ns->unorm2);
    if (!ns->unorm2) return al_seterr(err, "laplacian: out of memory");
    for (int i = 0; i < n; i++) {
        const int64_t d = s->ptr[i + 1] - s->ptr[i];
        ns->u[i] = d > 0 ? sqrt((double)d) : 1.0;
        ns->unorm2[ns->comp[i]] += ns->u[i] * ns->u[i];
    }
    return AL_OK;
}

/* x ← P x: the components along the null space removed. tmp has ncomp entries. */
static void null_project(const nullspace *ns, int n, double *x, double *tmp)
{
    memset(tmp, 0, (size_t)ns->ncomp * sizeof *tmp);
    for (int i = 0; i < n; i++) tmp[ns->comp[i]] += ns->u[i] * x[i];
    for (int i = 0; i < n; i++) x[i] -= tmp[ns->comp[i]] / ns->unorm2[ns->comp[i]] * ns->u[i];
}

/* Eigenpairs m = 0..nev-1, λ ascending: vec[m·n + i] (column-major, unit norm), val[m]. */
static al_status solve_dense(const sym_adj *s, const double *dinv, int ncomp, int nev, double *vec, double *val,
                             al_error *err)
{
    const int n = s->n;
    if (al_mem_check(al_size_mul((uint64_t)n * (uint64_t)n, sizeof(double)), err, "laplacian: dense %d x %d", n, n)) return AL_ERR;
    double *a = calloc((size_t)n * (size_t)n, sizeof *a), *w = malloc((size_t)n * sizeof *w);
    if (!a || !w) { free(a); free(w); return al_seterr(err, "laplacian: out of memory for a dense %d x %d matrix", n, n); }
    for (int i = 0; i < n; i++) {
        if (s->ptr[i + 1] > s->ptr[i]) a[(size_t)i * n + i] = 1.0;
        for (int64_t e = s->ptr[i]; e < s->ptr[i + 1]; e++) a[(size_t)i * n + s->col[e]] -= dinv[i] * dinv[s->col[e]];
    }
    lapack_int info = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', n, a, n, w);
    if (info != 0) { free(a); free(w); return al_seterr(err, "laplacian: LAPACKE_dsyevd failed (info %d)", (int)info); }
    for (int m = 0; m < nev; m++) {      /* the first ncomp eigenvalues are the null space's zeros */
        val[m] = w[ncomp + m];
        for (int i = 0; i < n; i++) vec[(size_t)m * n + i] = a[(size_t)i * n + ncomp + m];
    }
    free(a); free(w);
    return AL_OK;
}

static al_status solve_arpack(const sym_adj *s, const double *dinv, const nullspace *ns, int nev, double *vec,
                              double *val, al_error *err)
{
    const int n = s->n;
    int ncv = 2 * nev + 1 > 48 ? 2 * nev + 1 : 48;
    if (ncv > n) ncv = n;
    const int lworkl = ncv * (ncv + 8);
    double *resid = malloc((size_t)n * sizeof *resid), *v = malloc((size_t)n * ncv * sizeof *v);
    double *workd = malloc(3 * (size_t)n * sizeof *workd), *workl = malloc((size_t)lworkl * sizeof *workl);
    double *tmp = malloc((size_t)ns->ncomp * sizeof *tmp), *x = malloc((size_t)n * sizeof *x);
    double *d = malloc((size_t)nev * sizeof *d), *z = malloc((size_t)n * nev * sizeof *z);
    a_int *select = calloc((size_t)ncv, sizeof *select);
    al_status st = AL_OK;
    if (!resid || !v || !workd || !workl || !tmp || !x || !d || !z || !select) { st = al_seterr(err, "laplacian: out of memory"); goto out; }
    for (int i = 0; i < n; i++) resid[i] = 1.0 + 0.5 * sin(1.0 + (double)i);   /* a fixed start, off the null space */
    null_project(ns, n, resid, tmp);
    a_int iparam[11] = {0}, ipntr[14] = {0}, ido = 0, info = 1;
    iparam[0] = 1; iparam[2] = 20000; iparam[6] = 1;
    const double tol = 1e-10;
    #pragma omp critical(al_arpack)
    {
        for (;;) {
            dsaupd_c(&ido, "I", n, "LA", nev, tol, resid, ncv, v, n, iparam, ipntr, workd, workl, lworkl, &info);
            if (ido != -1 && ido != 1) break;
            const double *xin = workd + ipntr[0] - 1;
            double *y = workd + ipntr[1] - 1;
            memcpy(x, xin, (size_t)n * sizeof *x);
            null_project(ns, n, x, tmp);
            lap_apply(s, dinv, x, y);
            for (int i = 0; i < n; i++) y[i] = 2.0 * x[i] - y[i];
            null_project(ns, n, y, tmp);
        }
        if (info >= 0 && iparam[4] >= nev)
            dseupd_c(1, "A", select, d, z, n, 0.0, "I", n, "LA", nev, tol, resid, ncv, v, n, iparam, ipntr, workd, workl,
                     lworkl, &info);
    }
    if (info < 0 || iparam[4] < nev) {
        st = al_seterr(err, "laplacian: ARPACK %s (info %d, %d of %d eigenvalues converged)", info < 0 ? "failed" : "did not converge",
                       (int)info, (int)iparam[4], nev);
        goto out;
    }
    /* dseupd gives the op's eigenvalues 2 − λ in ascending order: λ ascending is the reverse */
    for (int m = 0; m < nev; m++) {
        val[m] = 2.0 - d[nev - 1 - m];
        memcpy(vec + (size_t)m * n, z + (size_t)(nev - 1 - m) * n, (size_t)n * sizeof *vec);
    }
out:
    free(resid); free(v); free(workd); free(workl); free(tmp); free(x); free(d); free(z); free(select);
    return st;
}

al_status al_graph_lap_pe(const al_csr *adj, int k, al_eig_solver solver, float *pe, double *eval, al_error *err)
{
    if (!adj || adj->rows != adj->cols || adj->rows < 1 || (adj->nnz > 0 && !adj->col))
        return al_seterr(err, "laplacian: needs a square adjacency");
    if (k < 1 || k > 1024) return al_seterr(err, "laplacian: k = %d outside [1, 1024]", k);
    const int n = adj->rows;
    sym_adj s = {0, NULL, NULL};
    nullspace ns = {0, NULL, NULL, NULL};
    double *dinv = NULL, *vec = NULL, *val = NULL;
    al_status st = sym_build(adj, &s, err);
    if (st == AL_OK) st = null_build(&s, &ns, err);
    const int avail = n - ns.ncomp, nev = k < avail ? k : avail;   /* non-trivial eigenpairs there are */
    if (st == AL_OK && !((dinv = malloc((size_t)n * sizeof *dinv)) && (vec = calloc((size_t)n * (nev > 0 ? nev : 1), sizeof *vec)) &&
                         (val = calloc((size_t)(nev > 0 ? nev : 1), sizeof *val))))
        st = al_seterr(err, "laplacian: out of memory");
    if (st == AL_OK) {
        for (int i = 0; i < n; i++) { const int64_t d = s.ptr[i + 1] - s.ptr[i]; dinv[i] = d > 0 ? 1.0 / sqrt((double)d) : 0.0; }
        /* Lanczos wants a few more dimensions than eigenvalues; small graphs go dense */
        int dense = solver == AL_EIG_DENSE || (solver == AL_EIG_AUTO && n <= AL_LAPPE_DENSE_MAX) || nev + 2 >= avail;
        if (nev > 0) st = dense ? solve_dense(&s, dinv, ns.ncomp, nev, vec, val, err) : solve_arpack(&s, dinv, &ns, nev, vec, val, err);
    }
    if (st == AL_OK) {
        for (int m = 0; m < nev; m++) {   /* sign: the largest entry (the first of equals) positive */
            double *v = vec + (size_t)m * n, big = 0;
            int at = 0;
            for (int i = 0; i < n; i++) if (fabs(v[i]) > big) { big = fabs(v[i]); at = i; }
            if (v[at] < 0) for (int i = 0; i < n; i++) v[i] = -v[i];
        }
        for (int i = 0; i < n; i++)
            for (int m = 0; m < k; m++) pe[(size_t)i * k + m] = m < nev ? (float)vec[(size_t)m * n + i] : 0.f;
        if (eval) for (int m = 0; m < k; m++) eval[m] = m < nev ? val[m] : NAN;
    }
    free(s.ptr); free(s.col); free(ns.comp); free(ns.u); free(ns.unorm2); free(dinv); free(vec); free(val);
    return st;
}
