/* segments.c — the block-diagonal adjacency of a packed batch of sequences (seq.h): the graph
 * pattern that keeps attention inside each sentence, whole (radius −1) or truncated to a radius.
 * One pass over the rows, O(nnz) time and memory; never an N×N mask. */
#include "attnlab/attention.h"
#include <stdlib.h>
#include <string.h>

/* Row i at position p of a segment of length L keeps keys [lo, hi] of that segment. */
static inline void row_span(int p, int L, int radius, int *lo, int *hi)
{
    if (radius < 0) { *lo = 0; *hi = L - 1; return; }
    *lo = p - radius < 0 ? 0 : p - radius;
    *hi = p + radius > L - 1 ? L - 1 : p + radius;
}

/* Sizes: N and nnz; -1 on a negative length or an overflow of int tokens. */
static int seg_sizes(const int *len, int nseg, int radius, int *N, int64_t *nnz)
{
    int64_t n = 0, e = 0;
    for (int s = 0; s < nseg; s++) {
        int L = len[s];
        if (L < 0) return -1;
        if (radius < 0 || radius >= L) e += (int64_t)L * L;
        else for (int p = 0; p < L; p++) { int lo, hi; row_span(p, L, radius, &lo, &hi); e += hi - lo + 1; }
        n += L;
        if (n > 0x7fffffff) return -1;
    }
    *N = (int)n; *nnz = e;
    return 0;
}

static void seg_fill(const int *len, int nseg, int radius, int64_t *rowptr /* (N+1) */, int *col /* (nnz) */)
{
    int64_t e = 0; int i = 0, start = 0;
    rowptr[0] = 0;
    for (int s = 0; s < nseg; s++) {
        int L = len[s];
        for (int p = 0; p < L; p++, i++) {
            int lo, hi; row_span(p, L, radius, &lo, &hi);
            for (int j = lo; j <= hi; j++) col[e++] = start + j;
            rowptr[i + 1] = e;
        }
        start += L;
    }
}

al_status al_csr_segments(const int *len, int nseg, int radius, al_csr *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    int N; int64_t nnz;
    if (nseg < 0 || (nseg > 0 && !len) || seg_sizes(len, nseg, radius, &N, &nnz))
        return al_seterr(err, "segments: bad lengths (negative, or more than 2^31 tokens)");
    out->rowptr = malloc((size_t)(N + 1) * sizeof(int64_t));
    out->col = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof(int));
    if (!out->rowptr || !out->col) { al_csr_free(out); memset(out, 0, sizeof *out); return al_seterr(err, "segments: out of memory"); }
    out->rows = out->cols = N; out->nnz = nnz; out->val = NULL;
    seg_fill(len, nseg, radius, out->rowptr, out->col);
    return AL_OK;
}

const al_csr *al_csr_segments_arena(al_ctx *c, const int *len, int nseg, int radius)
{
    if (!al_ok(c)) return NULL;
    int N; int64_t nnz;
    if (nseg < 0 || (nseg > 0 && !len) || seg_sizes(len, nseg, radius, &N, &nnz))
        return al_fail(c, "segments: bad lengths (negative, or more than 2^31 tokens)");
    al_csr *a = al_arena_calloc(&c->arena, sizeof *a);
    int64_t *rowptr = al_arena_alloc(&c->arena, (size_t)(N + 1) * sizeof(int64_t));
    int *col = al_arena_alloc(&c->arena, (size_t)(nnz > 0 ? nnz : 1) * sizeof(int));
    if (!a || !rowptr || !col) return al_fail(c, "segments: out of memory (arena)");
    a->rows = a->cols = N; a->nnz = nnz; a->rowptr = rowptr; a->col = col; a->val = NULL;
    seg_fill(len, nseg, radius, rowptr, col);
    return a;
}
