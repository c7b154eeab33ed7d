/* ops/graph.c — the fused layers of the graph models, each with its backward beside it: sparse
 * input dropout (al_csr_dropout), the first layer dropout(X)·W written head-major for a sparse or
 * dense X (al_gnn_project), bias + activation + dropout with the heads merged
 * (al_gnn_bias_act_dropout), and the rows of the training nodes for the loss (al_take_rows).
 *
 * On sparse features they give bit for bit what the chain of generic ops gave (al_csr_dropout,
 * al_spmm, al_split_heads, al_merge_heads, al_add_bcast, al_elu / al_relu, al_dropout, a masked
 * al_cross_entropy): same dropout masks, same arithmetic, same summation orders — test_graph
 * checks it — with no layout copies and far fewer N·H·D intermediates. */
#include "attnlab/ops.h"
#include "attnlab/kernels.h"
#include "core/fastmath_impl.h"
#include "core/omp_impl.h"
#include "core/rng_impl.h"
#include "ops_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- dropout masks ---------------- */
/* Counter-based keep decision of stored entry k: 32 bits of splitmix64(base + k/2) (the low half
 * for an even k, the high half for an odd one) >= thr = p·2^32. No state: the mask of any entry
 * can be recomputed in the backward pass, and it does not depend on the thread count. */
static inline int keep_entry(uint64_t base, uint32_t thr, int64_t k)
{
    uint64_t z = al__mix64(base + AL__GOLDEN64 * (uint64_t)(k / 2 + 1));
    return (uint32_t)(k & 1 ? z >> 32 : z) >= thr;
}
static uint32_t keep_threshold(float p) { return (uint32_t)fmin(4294967295.0, (double)p * 4294967296.0); }

/* Inverted dropout on the stored values of a constant sparse matrix (no gradient flows into it):
 * entry k keeps its value (times 1/(1−p)) when keep_entry(base, thr, k), base being one draw of
 * c->dropout_rng. */
const al_csr *al_csr_dropout(al_ctx *c, const al_csr *s /* (rows, cols) */, float p)
{
    if (!s || !al_ok(c)) return NULL;
    if (!c->training || p <= 0.f) return s;
    if (p >= 1.f) return al_fail(c, "csr_dropout: p must be < 1, got %g", (double)p);
    al_csr *o = al_arena_alloc(&c->arena, sizeof *o);
    float *v = al_arena_alloc(&c->arena, (size_t)(s->nnz > 0 ? s->nnz : 1) * sizeof(float));  /* (nnz) */
    if (!o || !v) return al_fail(c, "csr_dropout: out of memory (arena)");
    *o = *s; o->val = v;
    const float *sv = s->val;   /* (nnz) or NULL = ones */
    const uint64_t base = al_rng_u64(&c->dropout_rng);
    const uint32_t thr = keep_threshold(p);
    const float scale = 1.0f / (1.0f - p);
    const int64_t nnz = s->nnz;
    AL_OMP("omp parallel for schedule(static) if (nnz > 131072)")
    for (int64_t k = 0; k < nnz; k++) v[k] = keep_entry(base, thr, k) ? (sv ? sv[k] : 1.0f) * scale : 0.0f;
    return o;
}

/* ELU's eˣ − 1 is al_elu's own (fastmath_impl.h), so the fused activation gives al_elu's bits. */

/* y (n) += a · x (n); y and x never overlap. Written as al_spmm's axpy (no FMA contraction in
 * ISO C mode), so the sparse first layer gives al_spmm's bits. */
static inline void axpy(float *restrict y /* (n) */, const float *restrict x /* (n) */, float a, int n)
{
    for (int f = 0; f < n; f++) y[f] += a * x[f];
}

/* ---------------- first layer: dropout(X) · W, written head-major ----------------
 * y[h, i, d] = Σ_f drop(X)[i, f] · W[f, h·D + d] for X (N, F) the features (CSR or dense) and
 * W (F, H·D): the (N, H·D) product with its heads split, so the attention reads it as (1, H, N, D)
 * with no copy (H = 1: the plain (N, D) product). The input dropout is the counter-based mask of
 * al_csr_dropout, computed on the fly: no dropped copy of X is stored, dropped entries cost
 * nothing, and the backward recomputes the mask. Gradient flows into W only. */
#define PROJ_ROWS 128   /* dense path: rows per gemm block */
#define PROJ_CHUNKS 16  /* dense path: fixed partial sums of dW (thread-count independent) */

typedef struct proj_node {
    al_tensor *w, *y;          /* w (F, H·D); y (H, N, D) head-major, any leading 1s */
    const al_csr *x;           /* sparse features (N, F), or NULL */
    const float *xd;           /* dense features (N, F), or NULL */
    int n, F, H, D;
    int drop; uint64_t base; uint32_t thr; float scale;
    const uint8_t *keep;       /* sparse path with dropout: (nnz) the mask of X's entries */
    int nthr;
} proj_node;

/* Longest row of a CSR matrix (at least 1). */
static int csr_max_row(const al_csr *x /* (rows, cols) */)
{
    int64_t mx = 1;
    for (int i = 0; i < x->rows; i++) if (x->rowptr[i + 1] - x->rowptr[i] > mx) mx = x->rowptr[i + 1] - x->rowptr[i];
    return mx > INT32_MAX / 2 ? INT32_MAX / 2 : (int)mx;
}

/* Dropped, scaled copy of the dense rows [i0, i0+m) into xb (m, F); returns xb, or the rows
 * themselves when nothing is dropped. */
static const float *proj_dense_rows(const proj_node *nd, int i0, int m, float *xb /* (m, F) */)
{
    const int64_t F = nd->F;
    const float *src = nd->xd + (int64_t)i0 * F;
    if (!nd->drop) return src;
    const uint64_t base = nd->base, k0 = (uint64_t)i0 * (uint64_t)F;
    const uint32_t thr = nd->thr;
    const float scale = nd->scale;
    const int64_t ne = (int64_t)m * F;
    for (int64_t e = 0; e < ne; e++) {   /* keep_entry without branches: vectorises (64-bit lanes) */
        const uint64_t k = k0 + (uint64_t)e;
        const uint64_t z = al__mix64(base + AL__GOLDEN64 * ((k >> 1) + 1));
        const uint32_t bits = (uint32_t)(z >> (32 * (k & 1)));
        const float sv = src[e] * scale;
        xb[e] = bits >= thr ? sv : 0.0f;
    }
    return xb;
}

static void proj_backward(al_ctx *c, void *p)
{
    proj_node *nd = p;
    const float *dy = nd->y->grad;                  /* (H, N, D) */
    if (!dy || !nd->w->requires_grad) return;
    float *dw = al_grad(c, nd->w);                  /* (F, H·D) */
    if (!dw) return;
    const int n = nd->n, F = nd->F, H = nd->H, D = nd->D, HD = H * D;
    if (nd->x) {
        /* dW = drop(X)ᵀ · dY as a scatter over X's entries in CSR order, as al_spmm's backward:
         * each thread owns a range of dW rows and applies only the entries whose column falls in
         * it, so every dW row sums its terms in CSR order whatever the thread count. */
        const al_csr *s = nd->x;
        const int64_t *rp = s->rowptr; const int *col = s->col; const float *val = s->val;
        const uint8_t *keep = nd->keep;
        const int drop = nd->drop; const float scale = nd->scale;
        const int64_t work = (drop ? 2 : 5) * s->nnz * (int64_t)HD / 5;
        const int nparts = work >= AL_PAR_MIN && nd->nthr > 1 ? nd->nthr : 1;
        const int maxrow = csr_max_row(s);
        const size_t per = (size_t)HD + (size_t)maxrow;
        float *buf = al_arena_alloc(&c->arena, (size_t)nparts * per * sizeof(float));   /* (parts, H·D + maxrow) */
        if (!buf) { al_fail(c, "graph layer 1 backward: out of memory (arena)"); return; }
        AL_OMP("omp parallel for schedule(static) num_threads(nparts) if (nparts > 1)")
        for (int part = 0; part < nparts; part++) {
            const unsigned j0 = (unsigned)((int64_t)F * part / nparts), span = (unsigned)((int64_t)F * (part + 1) / nparts) - j0;
            float *restrict dyi = buf + (size_t)part * per;   /* (H·D) row i of dY, gathered from the heads */
            int *restrict sel = (int *)(dyi + HD);             /* (maxrow) this part's kept entries of row i */
            for (int i = 0; i < n; i++) {
                const int64_t k0 = rp[i];
                const int len = (int)(rp[i + 1] - k0);
                int nk = 0;   /* select without a branch per entry: column in range, entry kept */
                if (keep) for (int t = 0; t < len; t++) { sel[nk] = t; nk += ((unsigned)col[k0 + t] - j0 < span) & keep[k0 + t]; }
                else for (int t = 0; t < len; t++) { sel[nk] = t; nk += (unsigned)col[k0 + t] - j0 < span; }
                if (!nk) continue;
                for (int h = 0; h < H; h++)
                    for (int d = 0; d < D; d++) dyi[h * D + d] = dy[((int64_t)h * n + i) * D + d];
                for (int t = 0; t < nk; t++) {
                    const int64_t k = k0 + sel[t];
                    float v = val ? val[k] : 1.0f;
                    if (drop) v *= scale;
                    axpy(dw + (int64_t)col[k] * HD, dyi, v, HD);
                }
            }
        }
        return;
    }
    /* Dense: dW = Σ over fixed chunks of row blocks of drop(X_b)ᵀ · dY_b, each chunk into its own
     * partial sum (gemm), the partials added in chunk order: bitwise the same for any thread count. */
    const int nblk = (n + PROJ_ROWS - 1) / PROJ_ROWS, nch = nblk < PROJ_CHUNKS ? nblk : PROJ_CHUNKS;
    const size_t per = (size_t)PROJ_ROWS * F + (size_t)PROJ_ROWS * HD;
    float *part = al_arena_calloc(&c->arena, (size_t)nch * F * HD * sizeof(float));   /* (chunks, F, H·D) */
    float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * per * sizeof(float));
    if (!part || !scr) { al_fail(c, "graph layer 1 backward: out of memory (arena)"); return; }
    AL_OMP("omp parallel num_threads(nd->nthr) if (nd->nthr > 1 && nch > 1 && (int64_t)n * F * HD >= AL_PAR_MIN)")
    {
        float *xb = scr + (size_t)al__thread_id() * per, *dyb = xb + (size_t)PROJ_ROWS * F;
        AL_OMP("omp for schedule(static)")
        for (int ch = 0; ch < nch; ch++) {
            for (int b = (int)((int64_t)nblk * ch / nch); b < (int)((int64_t)nblk * (ch + 1) / nch); b++) {
                const int i0 = b * PROJ_ROWS, m = n - i0 < PROJ_ROWS ? n - i0 : PROJ_ROWS;
                const float *g = dy + (int64_t)i0 * D;
                if (H > 1) {
                    for (int h = 0; h < H; h++)
                        for (int r = 0; r < m; r++)
                            for (int d = 0; d < D; d++) dyb[(size_t)r * HD + h * D + d] = dy[((int64_t)h * n + i0 + r) * D + d];
                    g = dyb;
                }
                const float *a = proj_dense_rows(nd, i0, m, xb);
                al_gemm_serial(1, 0, F, HD, m, 1.0f, a, F, g, HD, 1.0f, part + (size_t)ch * F * HD, HD);
            }
        }
    }
    const int64_t nw = (int64_t)F * HD;
    AL_OMP("omp parallel for schedule(static) if (nw * nch >= AL_PAR_MIN)")
    for (int64_t e = 0; e < nw; e++) {
        float acc = dw[e];
        for (int ch = 0; ch < nch; ch++) acc += part[(size_t)ch * nw + e];
        dw[e] = acc;
    }
}

/* A graph model's first layer with H heads (1 for gcn and mlp). Returns (1, H, N, D) for H > 1 (and
 * for a one-head gat, as4d), else (N, D). */
al_tensor *al_gnn_project(al_ctx *c, const al_csr *x /* (N, F) */, const float *xd /* (N, F) or NULL */,
                          al_tensor *w /* (F, H·D) */, int H, int as4d, float p)
{
    if (!w || !al_ok(c)) return NULL;
    const int n = x->rows, F = x->cols, HD = w->shape[1], D = HD / H;
    if (w->ndim != 2 || w->shape[0] != F || HD % H) {
        char b[64];
        return al_fail(c, "graph layer 1: weight %s does not fit %d x %d features and %d heads",
                       al_shape_str(w, b, sizeof b), x->rows, x->cols, H);
    }
    if (!(p >= 0.f && p < 1.f)) return al_fail(c, "graph layer 1: dropout %g outside [0, 1)", (double)p);
    al_tensor *y = (H > 1 || as4d) ? al_new(c, 4, (int[]){1, H, n, D}) : al_new(c, 2, (int[]){n, D});
    proj_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    if (!y || !nd) return al_ok(c) ? al_fail(c, "graph layer 1: out of memory (arena)") : NULL;
    nd->w = w; nd->y = y; nd->n = n; nd->F = F; nd->H = H; nd->D = D; nd->nthr = al_threads();
    nd->x = xd ? NULL : x; nd->xd = xd;
    if (c->training && p > 0.f) {   /* the draw al_csr_dropout would take, in the same place */
        nd->drop = 1; nd->base = al_rng_u64(&c->dropout_rng); nd->thr = keep_threshold(p); nd->scale = 1.0f / (1.0f - p);
    }
    float *yd = y->data;
    if (nd->x) {
        const int64_t *rp = x->rowptr; const int *col = x->col; const float *val = x->val, *wd = w->data;
        const float scale = nd->scale;
        const int64_t work = (nd->drop ? 2 : 5) * x->nnz * (int64_t)HD / 5;
        (void)work;   /* read by the OpenMP clause only */
        const int maxrow = csr_max_row(x);
        const size_t per = (size_t)HD + (size_t)maxrow;   /* per thread: a row of H·D floats, maxrow ints */
        float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * per * sizeof(float));
        uint8_t *keep = nd->drop ? al_arena_alloc(&c->arena, (size_t)(x->nnz > 0 ? x->nnz : 1)) : NULL;     /* (nnz) */
        if (!scr || (nd->drop && !keep)) return al_fail(c, "graph layer 1: out of memory (arena)");
        if (keep) {   /* one hash per pair of entries, as al_csr_dropout */
            const int64_t npair = (x->nnz + 1) / 2, nnz = x->nnz;
            const uint64_t base = nd->base; const uint32_t thr = nd->thr;
            AL_OMP("omp parallel for schedule(static) num_threads(nd->nthr) if (nd->nthr > 1 && npair > 65536)")
            for (int64_t q = 0; q < npair; q++) {
                uint64_t z = al__mix64(base + AL__GOLDEN64 * (uint64_t)(q + 1));
                keep[2 * q] = (uint32_t)z >= thr;
                if (2 * q + 1 < nnz) keep[2 * q + 1] = (uint32_t)(z >> 32) >= thr;
            }
            nd->keep = keep;
        }
        AL_OMP("omp parallel num_threads(nd->nthr) if (nd->nthr > 1 && work >= AL_PAR_MIN)")
        {
            float *buf = scr + (size_t)al__thread_id() * per;
            int *sel = (int *)(buf + HD);   /* (maxrow) kept entries of row i, offsets from its start */
            /* rows are owned by one thread each and summed in CSR order, as in al_spmm */
            AL_OMP("omp for schedule(static)")
            for (int i = 0; i < n; i++) {
                float *acc = H > 1 ? buf : yd + (int64_t)i * HD;   /* (H·D) */
                for (int f = 0; f < HD; f++) acc[f] = 0.f;
                const int64_t k0 = rp[i];
                const int len = (int)(rp[i + 1] - k0);
                if (keep) {   /* the kept entries first (no branch per entry), then their products */
                    int nk = 0;
                    for (int t = 0; t < len; t++) { sel[nk] = t; nk += keep[k0 + t]; }
                    for (int t = 0; t < nk; t++) {
                        const int64_t k = k0 + sel[t];
                        axpy(acc, wd + (int64_t)col[k] * HD, (val ? val[k] : 1.0f) * scale, HD);
                    }
                } else {
                    for (int64_t k = k0; k < k0 + len; k++) axpy(acc, wd + (int64_t)col[k] * HD, val ? val[k] : 1.0f, HD);
                }
                if (H > 1)
                    for (int h = 0; h < H; h++)
                        for (int d = 0; d < D; d++) yd[((int64_t)h * n + i) * D + d] = acc[h * D + d];
            }
        }
    } else {
        const int nblk = (n + PROJ_ROWS - 1) / PROJ_ROWS;
        const size_t per = (size_t)PROJ_ROWS * F + (size_t)PROJ_ROWS * HD;
        float *scr = al_arena_alloc(&c->arena, (size_t)nd->nthr * per * sizeof(float));
        if (!scr) return al_fail(c, "graph layer 1: out of memory (arena)");
        /* fixed row blocks, one gemm each: every output row is computed the same way whatever
         * the thread count */
        AL_OMP("omp parallel num_threads(nd->nthr) if (nd->nthr > 1 && nblk > 1 && (int64_t)n * F * HD >= AL_PAR_MIN)")
        {
            float *xb = scr + (size_t)al__thread_id() * per, *yb = xb + (size_t)PROJ_ROWS * F;
            AL_OMP("omp for schedule(static)")
            for (int b = 0; b < nblk; b++) {
                const int i0 = b * PROJ_ROWS, mr = n - i0 < PROJ_ROWS ? n - i0 : PROJ_ROWS;
                const float *a = proj_dense_rows(nd, i0, mr, xb);
                float *o = H > 1 ? yb : yd + (int64_t)i0 * HD;
                al_gemm_serial(0, 0, mr, HD, F, 1.0f, a, F, w->data, HD, 0.0f, o, HD);
                if (H > 1)
                    for (int h = 0; h < H; h++)
                        for (int r = 0; r < mr; r++)
                            for (int d = 0; d < D; d++) yd[((int64_t)h * n + i0 + r) * D + d] = yb[(size_t)r * HD + h * D + d];
            }
        }
    }
    if (al__wants_grad(c, w)) al__record(c, y, proj_backward, nd);
    return y;
}

/* ---------------- bias + activation + dropout, heads merged ----------------
 * z (N, H·D) = dropout(act(merge(a) + b)) for a (1, H, N, D) head-major (or (N, D), one head),
 * b (H·D), act = ELU(alpha) or ReLU: what al_merge_heads, al_add_bcast, al_elu / al_relu and
 * al_dropout compute one after another, with the same arithmetic and the same dropout mask (the
 * same draws of c->dropout_rng in the same order), in one pass and one output. Saved for the
 * backward: the mask (N·H·D bytes); the activation output before dropout is z itself without
 * dropout, else the backward recomputes it from a and b (the same operations, so the same bits)
 * rather than keep N·H·D more floats. */
typedef struct bact_node {
    al_tensor *a, *b, *z;
    const float *y;            /* (N, H·D) act output before dropout, or NULL: recomputed */
    const uint8_t *keep;       /* (N, H·D) 1 = kept, or NULL (no dropout) */
    int n, H, D, relu;
    float alpha, scale;
    int nthr;
} bact_node;

/* g (n) = the gradient of the activation's input from dz (n) of the output after dropout: the
 * dropout (kept · s), then ReLU / ELU through y, the activation's output (y > 0 exactly when its
 * input is > 0). The same operations as al_dropout's and al_relu / al_elu's backward. */
static inline void bact_grad_row(float *restrict g /* (n) */, const float *restrict dz /* (n) */, const float *restrict y /* (n) */,
                                 const uint8_t *restrict keep /* (n) or NULL */, int n, float s, float alpha, int relu)
{
    if (keep) for (int j = 0; j < n; j++) { float sd = s * dz[j]; g[j] = keep[j] ? sd : 0.f; }
    else for (int j = 0; j < n; j++) g[j] = dz[j];
    if (relu) for (int j = 0; j < n; j++) g[j] = y[j] > 0.f ? g[j] : 0.f;
    else for (int j = 0; j < n; j++) { float e = g[j] * (y[j] + alpha); g[j] = y[j] > 0.f ? g[j] : e; }
}
static inline void add_row(float *restrict a /* (n) */, const float *restrict b /* (n) */, int n) { for (int j = 0; j < n; j++) a[j] += b[j]; }
static inline void copy_row(float *restrict a /* (n) */, const float *restrict b /* (n) */, int n) { for (int j = 0; j < n; j++) a[j] = b[j]; }

static inline void sum_row(float *restrict u /* (n) */, const float *restrict a /* (n) */, const float *restrict b /* (n) */, int n)
{
    for (int j = 0; j < n; j++) u[j] = a[j] + b[j];
}
static inline void act_row(float *restrict v /* (n) */, const float *restrict u /* (n) */, int n, float alpha, int relu)
{
    if (relu) for (int j = 0; j < n; j++) v[j] = u[j] > 0.f ? u[j] : 0.f;
    else for (int j = 0; j < n; j++) v[j] = u[j] > 0.f ? u[j] : alpha * al__expm1_neg(u[j]);
}
static void bact_backward(al_ctx *c, void *p)
{
    bact_node *nd = p;
    const float *dz = nd->z->grad;                  /* (N, H·D) */
    if (!dz) return;
    int fresh = 0;   /* every element of da is written once below: a fresh gradient is stored, not zeroed first */
    float *da = nd->a->requires_grad ? al_grad_for_write(c, nd->a, &fresh) : NULL;   /* (H, N, D) */
    float *db = nd->b->requires_grad ? al_grad(c, nd->b) : NULL;   /* (H·D) */
    const int n = nd->n, D = nd->D, HD = nd->H * D;
    /* Threads own column ranges and run down the rows in order, so the bias gradient sums each
     * column in row order (as al_add_bcast's backward) whatever the thread count. */
    const int nparts = (int64_t)n * HD >= AL_PAR_MIN && nd->nthr > 1 ? (nd->nthr < HD ? nd->nthr : HD) : 1;
    float *acc = al_arena_calloc(&c->arena, (size_t)HD * sizeof(float));              /* (H·D) column sums */
    float *gbuf = al_arena_alloc(&c->arena, (size_t)nparts * 3 * HD * sizeof(float)); /* (parts, 3, H·D) */
    if (!al_ok(c) || !acc || !gbuf) { al_fail(c, "graph activation backward: out of memory (arena)"); return; }
    const float *y = nd->y, *ad = nd->a->data, *bd = nd->b->data, s = nd->scale, alpha = nd->alpha;
    const uint8_t *keep = nd->keep;
    const int relu = nd->relu;
    AL_OMP("omp parallel for schedule(static) num_threads(nparts) if (nparts > 1)")
    for (int part = 0; part < nparts; part++) {
        const int j0 = HD * part / nparts, j1 = HD * (part + 1) / nparts;
        float *g = gbuf + (size_t)part * 3 * HD;    /* (H·D) gradient of the pre-activation, row i */
        float *u = g + HD, *v = u + HD;             /* (H·D) each: the forward's u and act output, row i */
        for (int i = 0; i < n; i++) {
            const int64_t r = (int64_t)i * HD;
            const float *yr = y ? y + r : v;
            if (!y) {   /* columns j0..j1 of the forward's row i: merged, bias added, activated */
                for (int h = j0 / D; h * D < j1; h++) {
                    const int d0 = j0 > h * D ? j0 - h * D : 0, d1 = j1 < (h + 1) * D ? j1 - h * D : D;
                    sum_row(u + h * D + d0, ad + ((int64_t)h * n + i) * D + d0, bd + h * D + d0, d1 - d0);
                }
                act_row(v + j0, u + j0, j1 - j0, alpha, relu);
            }
            bact_grad_row(g + j0, dz + r + j0, yr + j0, keep ? keep + r + j0 : NULL, j1 - j0, s, alpha, relu);
            add_row(acc + j0, g + j0, j1 - j0);
            if (da)   /* heads split again: column h·D + d of row i is da[h, i, d] */
                for (int h = j0 / D; h * D < j1; h++) {
                    const int d0 = j0 > h * D ? j0 - h * D : 0, d1 = j1 < (h + 1) * D ? j1 - h * D : D;
                    float *dah = da + ((int64_t)h * n + i) * D + d0;
                    if (fresh) copy_row(dah, g + h * D + d0, d1 - d0);
                    else add_row(dah, g + h * D + d0, d1 - d0);
                }
        }
    }
    if (db) for (int j = 0; j < HD; j++) db[j] += acc[j];
}

/* z may be v itself (dropout in place) */
static inline void drop_row(float *z /* (n) */, const float *v /* (n) */, const uint8_t *restrict keep /* (n) */, int n, float s)
{
    for (int j = 0; j < n; j++) { float sv = s * v[j]; z[j] = keep[j] ? sv : 0.f; }
}

al_tensor *al_gnn_bias_act_dropout(al_ctx *c, al_tensor *a /* (1, H, N, D) or (N, D) */, al_tensor *b /* (H·D) */,
                                   int relu, float alpha, float p)
{
    if (!a || !b || !al_ok(c)) return NULL;
    char b1[64], b2[64];
    const int n = a->ndim == 4 ? a->shape[2] : a->shape[0];
    const int H = a->ndim == 4 ? a->shape[1] : 1, D = a->shape[a->ndim - 1], HD = H * D;
    if (!((a->ndim == 4 && a->shape[0] == 1) || a->ndim == 2) || b->ndim != 1 || b->shape[0] != HD)
        return al_fail(c, "graph activation: input %s must be (1, H, N, D) or (N, D) with a bias (H·D), got bias %s",
                       al_shape_str(a, b1, sizeof b1), al_shape_str(b, b2, sizeof b2));
    if (!(p >= 0.f && p < 1.f)) return al_fail(c, "graph activation: dropout %g outside [0, 1)", (double)p);
    const int64_t ne = (int64_t)n * HD;
    const int drop = c->training && p > 0.f;
    const int save = al__any_grad(c, a, b, NULL);
    al_tensor *z = al_new(c, 2, (int[]){n, HD});   /* (N, H·D) */
    uint8_t *keep = drop ? al_arena_alloc(&c->arena, (size_t)ne) : NULL;          /* (N, H·D) */
    if (!z || (drop && !keep)) return al_ok(c) ? al_fail(c, "graph activation: out of memory (arena)") : NULL;
    if (drop) {   /* al_dropout's mask: two 24-bit uniforms per draw, in index order */
        const uint64_t thr = (uint64_t)ceil((double)p * 16777216.0);
        uint64_t st[4];   /* a local copy (al_rng_u64 inlined: one draw per two elements): the byte stores below could alias c's state */
        memcpy(st, c->dropout_rng.s, sizeof st);
        int64_t i = 0;
        for (; i + 2 <= ne; i += 2) {
            uint64_t u = al__xoshiro_next(st);
            keep[i] = (u >> 40) >= thr;
            keep[i + 1] = ((u >> 8) & 0xFFFFFFu) >= thr;
        }
        if (i < ne) keep[i] = (al__xoshiro_next(st) >> 40) >= thr;
        memcpy(c->dropout_rng.s, st, sizeof st);
    }
    const float s = drop ? 1.0f / (1.0f - p) : 1.0f;
    const float *ad = a->data, *bd = b->data;
    float *zd = z->data;
    float *ubuf = al_arena_alloc(&c->arena, (size_t)al_threads() * 2 * HD * sizeof(float));   /* (threads, 2, H·D) */
    if (!ubuf) return al_fail(c, "graph activation: out of memory (arena)");
    AL_OMP("omp parallel if (ne >= AL_PAR_MIN / 4 && al_threads() > 1)")
    {
        float *u = ubuf + (size_t)al__thread_id() * 2 * HD;   /* (H·D) row i: heads merged, bias added */
        AL_OMP("omp for schedule(static)")
        for (int i = 0; i < n; i++) {
            const int64_t r = (int64_t)i * HD;
            for (int h = 0; h < H; h++) sum_row(u + h * D, ad + ((int64_t)h * n + i) * D, bd + h * D, D);
            float *v = drop ? u + HD : zd + r;         /* act output before dropout */
            act_row(v, u, HD, alpha, relu);
            if (drop) drop_row(zd + r, v, keep + r, HD, s);
        }
    }
    if (save) {
        bact_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
        if (!nd) return al_fail(c, "graph activation: out of memory (arena)");
        nd->a = a; nd->b = b; nd->z = z; nd->y = drop ? NULL : zd; nd->keep = keep;
        nd->n = n; nd->H = H; nd->D = D; nd->relu = relu; nd->alpha = alpha; nd->scale = s; nd->nthr = al_threads();
        al__record(c, z, bact_backward, nd);
    }
    return z;
}

/* ---------------- rows of the training nodes ---------------- */
typedef struct rows_node { al_tensor *x, *y; const int *ids; int m; } rows_node;   /* y (m, C) = x[ids] */

static void rows_backward(al_ctx *c, void *p)
{
    rows_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy) return;
    float *dx = al_grad(c, nd->x);
    if (!dx) return;
    const int C = nd->x->shape[1];
    for (int r = 0; r < nd->m; r++)
        for (int k = 0; k < C; k++) dx[(int64_t)nd->ids[r] * C + k] += dy[(int64_t)r * C + k];
}

/* x (N, C), ids[m] (m >= 1) → (m, C): the loss then looks at the labelled rows only. */
al_tensor *al_take_rows(al_ctx *c, al_tensor *x /* (N, C) */, const int *ids /* (m) */, int m)
{
    if (!x || !al_ok(c)) return NULL;
    const int C = x->shape[1];
    al_tensor *y = al_new(c, 2, (int[]){m, C});
    if (!y) return NULL;
    for (int r = 0; r < m; r++) memcpy(y->data + (int64_t)r * C, x->data + (int64_t)ids[r] * C, (size_t)C * sizeof(float));
    if (al__wants_grad(c, x)) {
        rows_node *nd = al_arena_alloc(&c->arena, sizeof *nd);
        if (!nd) return al_fail(c, "graph loss: out of memory (arena)");
        nd->x = x; nd->y = y; nd->ids = ids; nd->m = m;
        al__record(c, y, rows_backward, nd);
    }
    return y;
}

