/* test_lappe.c — the Laplacian positional encodings of gt-full (al_graph_lap_pe): ARPACK against
 * LAPACKE's dense solver on small graphs (eigenvalues equal; eigenvectors satisfy L v = lambda v, are
 * orthogonal to each component's null vector and lie in the dense solver's eigenspace of the same
 * eigenvalue: equal up to sign for a simple one), fewer eigenpairs than asked, bad arguments. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/graph.h"

/* ---------------- Laplacian positional encodings ---------------- */
/* An undirected graph from an edge list, as al_graph's adjacency (both directions, sorted rows). */
static void csr_from_edges(al_csr *A, int n, const int (*e)[2], int ne)
{
    A->rows = A->cols = n; A->val = NULL;
    A->rowptr = calloc((size_t)n + 1, sizeof *A->rowptr);
    A->col = malloc((size_t)(2 * ne > 0 ? 2 * ne : 1) * sizeof *A->col);
    for (int k = 0; k < ne; k++) { A->rowptr[e[k][0] + 1]++; A->rowptr[e[k][1] + 1]++; }
    for (int i = 0; i < n; i++) A->rowptr[i + 1] += A->rowptr[i];
    int64_t *fill = calloc((size_t)n, sizeof *fill);
    for (int k = 0; k < ne; k++) {
        A->col[A->rowptr[e[k][0]] + fill[e[k][0]]++] = e[k][1];
        A->col[A->rowptr[e[k][1]] + fill[e[k][1]]++] = e[k][0];
    }
    for (int i = 0; i < n; i++)   /* insertion sort of each row */
        for (int64_t a = A->rowptr[i] + 1; a < A->rowptr[i + 1]; a++)
            for (int64_t b = a; b > A->rowptr[i] && A->col[b - 1] > A->col[b]; b--) { int t = A->col[b]; A->col[b] = A->col[b - 1]; A->col[b - 1] = t; }
    A->nnz = A->rowptr[n];
    free(fill);
}

/* A cycle of 40 (repeated eigenvalues 1 - cos(2 pi j / 40)), a random graph of 70 nodes, a pair and an
 * isolated node: 4 components. */
static int test_graph_edges(int (*e)[2], int *n)
{
    int ne = 0;
    for (int i = 0; i < 40; i++) { e[ne][0] = i; e[ne][1] = (i + 1) % 40; ne++; }
    al_rng r; al_rng_seed(&r, 9, 1);
    for (int i = 1; i < 70; i++) { e[ne][0] = 40 + i; e[ne][1] = 40 + (int)al_rng_below(&r, (uint32_t)i); ne++; }   /* a tree: connected */
    for (int k = 0; k < 90; k++) {
        int a = 40 + (int)al_rng_below(&r, 70), b = 40 + (int)al_rng_below(&r, 70), dup = a == b;
        for (int q = 0; q < ne && !dup; q++) dup = (e[q][0] == a && e[q][1] == b) || (e[q][0] == b && e[q][1] == a);
        if (!dup) { e[ne][0] = a; e[ne][1] = b; ne++; }
    }
    e[ne][0] = 110; e[ne][1] = 111; ne++;
    *n = 113;   /* node 112 is isolated */
    return ne;
}

/* y = L x with L = I - D^-1/2 A D^-1/2 (isolated: 0), in double. */
static void lap_mul(const al_csr *A, const double *x, double *y)
{
    for (int i = 0; i < A->rows; i++) {
        const double di = (double)(A->rowptr[i + 1] - A->rowptr[i]);
        double s = di > 0 ? x[i] : 0;
        for (int64_t k = A->rowptr[i]; k < A->rowptr[i + 1]; k++)
            s -= x[A->col[k]] / sqrt(di * (double)(A->rowptr[A->col[k] + 1] - A->rowptr[A->col[k]]));
        y[i] = s;
    }
}

static void test_lappe_arpack_vs_dense(void **st)
{
    (void)st;
    int (*e)[2] = malloc(400 * sizeof *e), n;
    const int ne = test_graph_edges(e, &n), k = 8, kd = 14;
    al_csr A; csr_from_edges(&A, n, (const int (*)[2])e, ne);
    float *pa = malloc((size_t)n * k * sizeof *pa), *pd = malloc((size_t)n * kd * sizeof *pd);
    double la[8], ld[14];
    al_error err = {{0}};
    if (al_graph_lap_pe(&A, k, AL_EIG_ARPACK, pa, la, &err)) fail_msg("arpack: %s", err.msg);
    if (al_graph_lap_pe(&A, kd, AL_EIG_DENSE, pd, ld, &err)) fail_msg("dense: %s", err.msg);
    /* the eigenvalues agree, ascending and non-trivial (> 0) */
    for (int m = 0; m < k; m++) {
        if (fabs(la[m] - ld[m]) > 1e-8) fail_msg("eigenvalue %d: arpack %.12g, dense %.12g", m, la[m], ld[m]);
        assert_true(la[m] > 1e-6);
        if (m) assert_true(la[m] >= la[m - 1] - 1e-12);
    }
    /* the cycle's smallest, 1 - cos(2 pi / 40), twice: a repeated eigenvalue among the first ones */
    const double cyc = 1 - cos(2 * M_PI / 40);
    int seen = 0;
    for (int m = 0; m < k; m++) seen += fabs(la[m] - cyc) < 1e-8;
    assert_int_equal(seen, 2);
    double *v = malloc((size_t)n * sizeof *v), *lv = malloc((size_t)n * sizeof *lv);
    for (int m = 0; m < k; m++) {
        for (int i = 0; i < n; i++) v[i] = pa[(int64_t)i * k + m];
        /* L v = lambda v, unit norm, orthogonal to the null space of every component */
        lap_mul(&A, v, lv);
        double res = 0, nrm = 0;
        for (int i = 0; i < n; i++) { res += (lv[i] - la[m] * v[i]) * (lv[i] - la[m] * v[i]); nrm += v[i] * v[i]; }
        if (sqrt(res) > 1e-5 || fabs(nrm - 1) > 1e-5) fail_msg("vector %d: |Lv - lv| %.3g, |v|^2 %.9g", m, sqrt(res), nrm);
        double comp[4] = {0};
        for (int i = 0; i < n; i++) {
            int c = i < 40 ? 0 : i < 110 ? 1 : i < 112 ? 2 : 3;
            comp[c] += sqrt((double)(A.rowptr[i + 1] - A.rowptr[i])) * v[i] + (c == 3 ? v[i] : 0);
        }
        for (int c = 0; c < 4; c++) if (fabs(comp[c]) > 1e-5) fail_msg("vector %d has %.3g along component %d's null vector", m, comp[c], c);
        /* subspace agreement: v lies in the span of the dense vectors of the same eigenvalue */
        double proj = 0;
        for (int q = 0; q < kd; q++) {
            if (fabs(ld[q] - la[m]) > 1e-6) continue;
            double d = 0;
            for (int i = 0; i < n; i++) d += v[i] * pd[(int64_t)i * kd + q];
            proj += d * d;
        }
        if (fabs(proj - 1) > 1e-5) fail_msg("vector %d: |projection on the dense eigenspace|^2 = %.9g", m, proj);
        /* a simple eigenvalue: the same vector (both solvers make the largest entry positive) */
        int simple = 1;
        for (int q = 0; q < kd; q++) if (q != m && fabs(ld[q] - la[m]) < 1e-6) simple = 0;
        if (simple) for (int i = 0; i < n; i++) assert_true(fabsf(pa[(int64_t)i * k + m] - pd[(int64_t)i * kd + m]) < 1e-5f);
    }
    /* AL_EIG_AUTO is the dense solver at this size: the same as its first k columns */
    float *pauto = malloc((size_t)n * k * sizeof *pauto);
    assert_int_equal(al_graph_lap_pe(&A, k, AL_EIG_AUTO, pauto, NULL, &err), AL_OK);
    for (int i = 0; i < n; i++) for (int m = 0; m < k; m++) assert_true(pauto[(int64_t)i * k + m] == pd[(int64_t)i * kd + m]);
    /* deterministic: a second ARPACK call gives the same bits */
    float *pb = malloc((size_t)n * k * sizeof *pb);
    assert_int_equal(al_graph_lap_pe(&A, k, AL_EIG_ARPACK, pb, NULL, &err), AL_OK);
    assert_memory_equal(pa, pb, (size_t)n * k * sizeof *pa);
    free(pa); free(pb); free(pd); free(pauto); free(v); free(lv); free(e); al_csr_free(&A);
}

/* A path of 3 nodes has 2 non-trivial eigenpairs (1 and 2): the other columns are 0, their eigenvalues
 * NaN; a directed edge list is made symmetric; bad arguments are errors. */
static void test_lappe_small_and_errors(void **st)
{
    (void)st;
    const int64_t rp[4] = {0, 1, 2, 2};   /* 0 <- 1, 1 <- 2 only: one direction of each edge */
    int col[2] = {1, 2};
    al_csr A = {3, 3, 2, (int64_t *)rp, col, NULL};
    float pe[3 * 4];
    double ev[4];
    al_error err = {{0}};
    assert_int_equal(al_graph_lap_pe(&A, 4, AL_EIG_AUTO, pe, ev, &err), AL_OK);
    assert_true(fabs(ev[0] - 1) < 1e-12 && fabs(ev[1] - 2) < 1e-12 && isnan(ev[2]) && isnan(ev[3]));
    /* lambda = 1: (1, 0, -1)/sqrt 2 up to sign; lambda = 2: (1, -sqrt 2, 1)/2 up to sign */
    assert_true(fabsf(fabsf(pe[0]) - (float)M_SQRT1_2) < 1e-6f && fabsf(pe[4]) < 1e-6f && fabsf(pe[0] + pe[8]) < 1e-6f);
    assert_true(fabsf(fabsf(pe[1]) - 0.5f) < 1e-6f && fabsf(fabsf(pe[5]) - (float)M_SQRT1_2) < 1e-6f);
    for (int i = 0; i < 3; i++) assert_true(pe[i * 4 + 2] == 0.f && pe[i * 4 + 3] == 0.f);
    assert_int_equal(al_graph_lap_pe(&A, 0, AL_EIG_AUTO, pe, NULL, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "k = 0"));
    al_csr B = {3, 4, 2, (int64_t *)rp, col, NULL};
    assert_int_equal(al_graph_lap_pe(&B, 2, AL_EIG_AUTO, pe, NULL, &err), AL_ERR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lappe_arpack_vs_dense),
        cmocka_unit_test(test_lappe_small_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
