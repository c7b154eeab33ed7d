/* ops_linalg.c — matmul (2-D, batched, transposed, broadcast), linear (nn.Linear) and sparse ×
 * dense (CSR constant · X), each forward beside its backward. Dense products all go through
 * al_gemm (kernels.h); backward accumulates with beta = 1.
 *
 * Determinism: every gemm writes a block it owns. Where a broadcast operand's gradient is a sum
 * over batches it is accumulated batch by batch in order (or folded into one gemm), never with
 * atomics; spmm's backward scatters into dX with each thread owning a range of dX rows, so
 * each dX row is summed in CSR order whatever the thread count.
 */
#include "attnlab/ops.h"
#include "core/omp_impl.h"
#include "ops_impl.h"
#include "attnlab/kernels.h"
#include "kernels/gemm_impl.h"
#include <string.h>

/* Batched matmul: per-batch products at most this many multiply-adds run one batch per thread
 * (al_gemm_serial); bigger ones run one after another, each gemm using every thread. */
#define SMALL_GEMM (64 * 64 * 64)

/* C_b = op(A_b)·op(B_b) (+ beta·C_b) for b < Bt, with batch strides sA, sB, sC (0 = shared).
 * A shared C (sC == 0, a broadcast operand's gradient) is accumulated in batch order. */
static void gemm_batched(int Bt, int ta, int tb, int M, int N, int K,
                         const float *A, int lda, int64_t sA, const float *B, int ldb, int64_t sB,
                         float beta, float *C, int ldc, int64_t sC)
{
    if (Bt == 1 || sC == 0 || (int64_t)M * N * K > SMALL_GEMM) {
        for (int b = 0; b < Bt; b++)
            al_gemm(ta, tb, M, N, K, 1.0f, A + b * sA, lda, B + b * sB, ldb, beta, C + b * sC, ldc);
        return;
    }
    /* below ~1M multiply-adds in total a fork/join costs more than it saves */
    AL_OMP("omp parallel for schedule(static) if ((int64_t)Bt * M * N * K >= (1 << 20))")
    for (int b = 0; b < Bt; b++)
        al_gemm_serial(ta, tb, M, N, K, 1.0f, A + b * sA, lda, B + b * sB, ldb, beta, C + b * sC, ldc);
}

/* ======================= matmul ======================= */
typedef struct {
    al_tensor *a, *b, *y;
    int ta, tb, Bt, M, N, K;
    int64_t sa, sb;          /* batch strides of a and b (0 = 2-D, shared over the batch) */
} mm_node;

static void matmul_backward(al_ctx *c, void *p)
{
    mm_node *nd = p;
    const float *dC = nd->y->grad;                 /* (Bt, M, N) */
    if (!dC) return;
    const int ta = nd->ta, tb = nd->tb, Bt = nd->Bt, M = nd->M, N = nd->N, K = nd->K;
    const int lda = ta ? M : K, ldb = tb ? K : N;
    const float *A = nd->a->data, *B = nd->b->data;
    const int64_t sa = nd->sa, sb = nd->sb, sc = (int64_t)M * N;
    /* 3-D A (not transposed) with 2-D B: A and dC are (Bt·M, K) and (Bt·M, N) matrices. */
    const int fold = Bt > 1 && sa && !sb && !ta;
    al_flops_add("matmul", AL_FLOPS_BWD, 2.0 * Bt * M * N * K * (nd->a->requires_grad + nd->b->requires_grad));
    if (nd->a->requires_grad) {
        float *dA = al_grad(c, nd->a);             /* (Bt, M, K) or (Bt, K, M), or 2-D */
        if (!dA) return;
        if (fold)      /* d op(A) = dC · op(B)ᵀ */
            al_gemm(0, !tb, Bt * M, K, N, 1.0f, dC, N, B, ldb, 1.0f, dA, K);
        else if (!ta)
            gemm_batched(Bt, 0, !tb, M, K, N, dC, N, sc, B, ldb, sb, 1.0f, dA, K, sa);
        else           /* A is (K, M): dA = op(B) · dCᵀ */
            gemm_batched(Bt, tb, 1, K, M, N, B, ldb, sb, dC, N, sc, 1.0f, dA, M, sa);
    }
    if (nd->b->requires_grad) {
        float *dB = al_grad(c, nd->b);             /* (Bt, K, N) or (Bt, N, K), or 2-D */
        if (!dB) return;
        if (fold && !tb)
            al_gemm(1, 0, K, N, Bt * M, 1.0f, A, K, dC, N, 1.0f, dB, N);
        else if (fold)
            al_gemm(1, 0, N, K, Bt * M, 1.0f, dC, N, A, K, 1.0f, dB, K);
        else if (!tb)  /* dB = op(A)ᵀ · dC */
            gemm_batched(Bt, !ta, 0, K, N, M, A, lda, sa, dC, N, sc, 1.0f, dB, N, sb);
        else           /* B is (N, K): dB = dCᵀ · op(A) */
            gemm_batched(Bt, 1, ta, N, K, M, dC, N, sc, A, lda, sa, 1.0f, dB, K, sb);
    }
}

al_tensor *al_matmul(al_ctx *c, al_tensor *a, al_tensor *b, int trans_a, int trans_b)
{
    if (!a || !b || !al_ok(c)) return NULL;
    char b1[64], b2[64];
    if (a->ndim < 2 || a->ndim > 3 || b->ndim < 2 || b->ndim > 3)
        return al_fail(c, "matmul: operands must be 2-D or 3-D, got A %s and B %s",
                       al_shape_str(a, b1, sizeof b1), al_shape_str(b, b2, sizeof b2));
    const int ta = !!trans_a, tb = !!trans_b;
    const int a3 = a->ndim == 3, b3 = b->ndim == 3;
    const int ar = a->shape[a->ndim - 2], ac = a->shape[a->ndim - 1];
    const int br = b->shape[b->ndim - 2], bc = b->shape[b->ndim - 1];
    const int M = ta ? ac : ar, K = ta ? ar : ac, Kb = tb ? bc : br, N = tb ? br : bc;
    if (a3 && b3 && a->shape[0] != b->shape[0])
        return al_fail(c, "matmul: batch sizes differ: A %s vs B %s",
                       al_shape_str(a, b1, sizeof b1), al_shape_str(b, b2, sizeof b2));
    if (K != Kb)
        return al_fail(c, "matmul: inner dimensions differ: A %s%s vs B %s%s (%d vs %d)",
                       al_shape_str(a, b1, sizeof b1), ta ? "ᵀ" : "", al_shape_str(b, b2, sizeof b2),
                       tb ? "ᵀ" : "", K, Kb);
    const int Bt = a3 ? a->shape[0] : b3 ? b->shape[0] : 1;
    al_tensor *y = (a3 || b3) ? al_new(c, 3, (int[]){Bt, M, N}) : al_new(c, 2, (int[]){M, N});
    if (!y) return NULL;
    const int lda = ta ? M : K, ldb = tb ? K : N;
    const int64_t sa = a3 ? (int64_t)M * K : 0, sb = b3 ? (int64_t)K * N : 0;
    if (Bt > 1 && a3 && !b3 && !ta)   /* fold the batch into M: one big gemm */
        al_gemm(0, tb, Bt * M, N, K, 1.0f, a->data, K, b->data, ldb, 0.0f, y->data, N);
    else
        gemm_batched(Bt, ta, tb, M, N, K, a->data, lda, sa, b->data, ldb, sb, 0.0f, y->data, N, (int64_t)M * N);
    al_flops_add("matmul", AL_FLOPS_FWD, 2.0 * Bt * M * N * K);
    if (c->grad_enabled && (a->requires_grad || b->requires_grad)) {
        mm_node *nd = al__node_new(c, sizeof *nd);
        if (!nd) return NULL;
        nd->a = a; nd->b = b; nd->y = y; nd->ta = ta; nd->tb = tb;
        nd->Bt = Bt; nd->M = M; nd->N = N; nd->K = K; nd->sa = sa; nd->sb = sb;
        y->requires_grad = 1;
        al_tape_push_out(c, matmul_backward, nd, y);
    }
    return y;
}

/* ======================= linear ======================= */
/* C combined elementwise with an array a of C's shape: mul, c ← c·a (act_backward's dy·GELU', dy the product,
 * fresh: stored); else c ← a + c (al_add's sum of a residual a and the product, its bias included) */
typedef struct { const float *a; int lda, mul; } epi_elem_ctx;

static void epi_elem(void *ctx, int i0, int j0, int m, int n, float *c, int ldc)
{
    const epi_elem_ctx *e = ctx;
    for (int r = 0; r < m; r++) {
        float *restrict cr = c + (size_t)r * ldc;
        const float *restrict ar = e->a + (size_t)(i0 + r) * e->lda + j0;
        if (e->mul) for (int j = 0; j < n; j++) cr[j] = cr[j] * ar[j];
        else for (int j = 0; j < n; j++) cr[j] = ar[j] + cr[j];
    }
}

/* Whether a residual fits the output of a layer with out features on x: x's shape with its last dimension out
 * (checked before any product is made) */
static int res_fits(const al_tensor *res, const al_tensor *x, int out)
{
    if (res->ndim != x->ndim || res->shape[res->ndim - 1] != out) return 0;
    for (int i = 0; i < x->ndim - 1; i++)
        if (res->shape[i] != x->shape[i]) return 0;
    return 1;
}

/* The epilogue c ← res + c over (rows, out), in e and epi; NULL when there is no res */
static const al_gemm_epi *residual_epi(const al_tensor *res, int out, epi_elem_ctx *e, al_gemm_epi *epi)
{
    if (!res) return NULL;
    *e = (epi_elem_ctx){res->data, out, 0};
    *epi = (al_gemm_epi){epi_elem, e};
    return epi;
}

typedef struct { al_tensor *x, *w, *b, *y; int rows, in, out; } lin_node;

/* y = x · Wᵀ + b, then epi (NULL: none) on y's final rows: the bias enters where the GEMM's first K block would
 * load y (al_gemm_bias), the same bits as writing the bias rows first and accumulating with beta = 1 */
static void linear_fwd_epi(const float *x, const float *w, const float *b, float *y, int rows, int in, int out,
                           const al_gemm_epi *epi)
{
    al__gemm_epi(0, 1, rows, out, in, 1.0f, x, in, w, in, 0.0f, b, y, out, epi);
    al_flops_add("linear", AL_FLOPS_FWD, 2.0 * rows * in * out);
}

void al__linear_fwd(const float *x, const float *w, const float *b, float *y, int rows, int in, int out)
{
    linear_fwd_epi(x, w, b, y, rows, in, out, NULL);
}

void al__linear_bwd(const float *dy, const float *x, const float *w, float *dx, int fresh, float *dw, float *db,
                    int rows, int in, int out)
{
    al_flops_add("linear", AL_FLOPS_BWD, 2.0 * rows * in * out * ((dx != NULL) + (dw != NULL)));
    /* dx (rows, in) = / += dy · W: a fresh dx is written (beta 0), never zeroed first */
    if (dx) al_gemm(0, 0, rows, in, out, 1.0f, dy, out, w, in, fresh ? 0.0f : 1.0f, dx, in);
    if (dw) al_gemm(1, 0, out, in, rows, 1.0f, dy, out, x, in, 1.0f, dw, in);   /* dW (out, in) += dyᵀ · x */
    if (db) al__colsum_acc(dy, db, rows, out);                                 /* db (out) += Σ_rows dy */
}

static void linear_backward(al_ctx *c, void *p)
{
    lin_node *nd = p;
    const float *dy = nd->y->grad;                 /* (rows, out) */
    if (!dy) return;
    int fresh = 0;
    float *dx = nd->x->requires_grad ? al_grad_for_write(c, nd->x, &fresh) : NULL;
    float *dw = nd->w->requires_grad ? al_grad(c, nd->w) : NULL;
    float *db = nd->b && nd->b->requires_grad ? al_grad(c, nd->b) : NULL;
    if (!al_ok(c)) return;
    al__linear_bwd(dy, nd->x->data, nd->w->data, dx, fresh, dw, db, nd->rows, nd->in, nd->out);
}

/* al_linear, or (res not NULL, no tape) res + al_linear in the GEMM's epilogue */
static al_tensor *linear(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, al_tensor *res)
{
    if (!x || !w || !al_ok(c)) return NULL;
    char b1[64], b2[64], b3[64];
    const int in = x->shape[x->ndim - 1];
    if (w->ndim != 2 || w->shape[1] != in)
        return al_fail(c, "linear: weight %s must be (out, %d) for x %s",
                       al_shape_str(w, b1, sizeof b1), in, al_shape_str(x, b2, sizeof b2));
    const int out = w->shape[0];
    if (b && !(b->ndim == 1 && b->shape[0] == out))
        return al_fail(c, "linear: bias %s must be (%d) for weight %s and x %s", al_shape_str(b, b1, sizeof b1),
                       out, al_shape_str(w, b2, sizeof b2), al_shape_str(x, b3, sizeof b3));
    const int64_t rows64 = x->numel / in;
    if (rows64 > 2147483647LL) return al_fail(c, "linear: too many rows (%lld)", (long long)rows64);
    const int rows = (int)rows64;
    if (res && !res_fits(res, x, out)) return al_fail(c, "linear_add: the residual's shape differs from the output's");
    int shape[AL_MAXDIM];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = out;
    al_tensor *y = al_new(c, x->ndim, shape);      /* (..., out) */
    if (!y) return NULL;
    epi_elem_ctx e;
    al_gemm_epi epi;
    linear_fwd_epi(x->data, w->data, b ? b->data : NULL, y->data, rows, in, out, residual_epi(res, out, &e, &epi));
    if (c->grad_enabled && (x->requires_grad || w->requires_grad || (b && b->requires_grad))) {
        lin_node *nd = al__node_new(c, sizeof *nd);
        if (!nd) return NULL;
        nd->x = x; nd->w = w; nd->b = b; nd->y = y; nd->rows = rows; nd->in = in; nd->out = out;
        y->requires_grad = 1;
        al_tape_push_out(c, linear_backward, nd, y);
    }
    return y;
}

al_tensor *al_linear(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b) { return linear(c, x, w, b, NULL); }

/* res + x·Wᵀ + b: without a tape the sum in the GEMM's epilogue, with one al_add after al_linear */
al_tensor *al__linear_add(al_ctx *c, al_tensor *res, al_tensor *x, al_tensor *w, al_tensor *b)
{
    if (!res || c->grad_enabled) return al_add(c, res, al_linear(c, x, w, b));
    return linear(c, x, w, b, res);
}

/* ======================= a block's MLP: fc2(gelu(fc1(x))) ======================= */
/* The arithmetic of al_linear → al_gelu → al_linear, element for element: fc1's GEMM applies the
 * GELU to each row sliver of its output while it is in L1 (g = h·Φ(h) written beside it, h replaced by
 * GELU'(h)), and the backward GEMM dy·W2 multiplies each sliver by GELU'(h) there — the two elementwise
 * passes over the (rows, hidden) activations and the hidden layer's gradient tensor are gone. */
typedef struct {
    al_tensor *x, *w1, *b1, *w2, *b2, *y;
    float *d, *g;      /* (rows, hid): GELU'(fc1's output), and the GELU itself (fc2's input) */
    int rows, in, hid, out;
} mlp_node;

typedef struct { float *g; int ldg; } epi_gelu_ctx;

static void epi_gelu_saved(void *ctx, int i0, int j0, int m, int n, float *c, int ldc)
{
    const epi_gelu_ctx *e = ctx;
    for (int r = 0; r < m; r++) al__gelu_saved_seg(c + (size_t)r * ldc, e->g + (size_t)(i0 + r) * e->ldg + j0, n);
}

static void epi_gelu_inplace(void *ctx, int i0, int j0, int m, int n, float *c, int ldc)
{
    (void)ctx; (void)i0; (void)j0;
    for (int r = 0; r < m; r++) al__gelu_seg(c + (size_t)r * ldc, c + (size_t)r * ldc, n);
}

static void mlp_backward(al_ctx *c, void *p)
{
    mlp_node *nd = p;
    const float *dy = nd->y->grad;                 /* (rows, out) */
    if (!dy) return;
    const int rows = nd->rows, in = nd->in, hid = nd->hid, out = nd->out;
    const int need1 = nd->x->requires_grad || nd->w1->requires_grad || (nd->b1 && nd->b1->requires_grad);
    float *dw2 = nd->w2->requires_grad ? al_grad(c, nd->w2) : NULL;
    float *db2 = nd->b2 && nd->b2->requires_grad ? al_grad(c, nd->b2) : NULL;
    if (!al_ok(c)) return;
    al_flops_add("linear", AL_FLOPS_BWD, 2.0 * rows * hid * out * (need1 + (dw2 != NULL)));
    /* fc2: dW2 += dyᵀ · g, db2 += Σ_rows dy (al__linear_bwd's products; each writes its own array, so
     * the order among them does not matter) */
    if (dw2) al_gemm(1, 0, out, hid, rows, 1.0f, dy, out, nd->g, hid, 1.0f, dw2, hid);
    if (db2) al__colsum_acc(dy, db2, rows, out);
    if (!need1) return;
    /* fc1's output gradient (dy · W2) ⊙ GELU', written over g, which nothing reads any more */
    epi_elem_ctx e = {nd->d, hid, 1};
    const al_gemm_epi epi = {epi_elem, &e};
    al__gemm_epi(0, 0, rows, hid, out, 1.0f, dy, out, nd->w2->data, hid, 0.0f, NULL, nd->g, hid, &epi);
    int fresh = 0;
    float *dx = nd->x->requires_grad ? al_grad_for_write(c, nd->x, &fresh) : NULL;
    float *dw1 = nd->w1->requires_grad ? al_grad(c, nd->w1) : NULL;
    float *db1 = nd->b1 && nd->b1->requires_grad ? al_grad(c, nd->b1) : NULL;
    if (!al_ok(c)) return;
    al__linear_bwd(nd->g, nd->x->data, nd->w1->data, dx, fresh, dw1, db1, rows, in, hid);
}

al_tensor *al__mlp_gelu(al_ctx *c, al_tensor *x, al_tensor *w1, al_tensor *b1, al_tensor *w2, al_tensor *b2, al_tensor *res)
{
    if (!x || !w1 || !w2 || !al_ok(c)) return NULL;
    if (res && c->grad_enabled) return al_add(c, res, al__mlp_gelu(c, x, w1, b1, w2, b2, NULL));
    char s1[64], s2[64];
    const int in = x->shape[x->ndim - 1];
    if (w1->ndim != 2 || w1->shape[1] != in || w2->ndim != 2 || w2->shape[1] != w1->shape[0])
        return al_fail(c, "mlp: weights %s and %s must be (hidden, %d) and (out, hidden)",
                       al_shape_str(w1, s1, sizeof s1), al_shape_str(w2, s2, sizeof s2), in);
    const int hid = w1->shape[0], out = w2->shape[0];
    if ((b1 && !(b1->ndim == 1 && b1->shape[0] == hid)) || (b2 && !(b2->ndim == 1 && b2->shape[0] == out)))
        return al_fail(c, "mlp: biases must be (%d) and (%d)", hid, out);
    const int64_t rows64 = x->numel / in;
    if (rows64 > 2147483647LL) return al_fail(c, "mlp: too many rows (%lld)", (long long)rows64);
    const int rows = (int)rows64;
    if (res && !res_fits(res, x, out)) return al_fail(c, "mlp: the residual's shape differs from the output's");
    const int need = c->grad_enabled && (x->requires_grad || w1->requires_grad || (b1 && b1->requires_grad) ||
                                         w2->requires_grad || (b2 && b2->requires_grad));
    int shape[AL_MAXDIM];
    memcpy(shape, x->shape, sizeof shape);
    shape[x->ndim - 1] = hid;
    al_tensor *h = al_new(c, x->ndim, shape);      /* (..., hid): fc1's output, then GELU' or (no tape) the GELU */
    al_tensor *g = need ? al_new(c, x->ndim, shape) : h;
    if (!h || !g) return NULL;
    epi_gelu_ctx e = {g->data, hid};
    const al_gemm_epi epi = {need ? epi_gelu_saved : epi_gelu_inplace, &e};
    linear_fwd_epi(x->data, w1->data, b1 ? b1->data : NULL, h->data, rows, in, hid, &epi);
    shape[x->ndim - 1] = out;
    al_tensor *y = al_new(c, x->ndim, shape);      /* (..., out) */
    if (!y) return NULL;
    epi_elem_ctx ea;
    al_gemm_epi epa;   /* no tape: res + fc2(·) in fc2's epilogue */
    linear_fwd_epi(g->data, w2->data, b2 ? b2->data : NULL, y->data, rows, hid, out, residual_epi(res, out, &ea, &epa));
    if (need) {
        mlp_node *nd = al__node_new(c, sizeof *nd);
        if (!nd) return NULL;
        *nd = (mlp_node){.x = x, .w1 = w1, .b1 = b1, .w2 = w2, .b2 = b2, .y = y, .d = h->data, .g = g->data,
                         .rows = rows, .in = in, .hid = hid, .out = out};
        y->requires_grad = 1;
        al_tape_push_out(c, mlp_backward, nd, y);
    }
    return y;
}

/* ======================= spmm ======================= */
typedef struct {
    al_tensor *x, *y;        /* x (cols, F); y (rows, F) */
    al_csr s;                /* the constant S (arrays borrowed from the caller, see al_spmm) */
} spmm_node;

/* y += a·x over n floats; y and x never overlap (distinct tensors), which restrict tells the
 * vectoriser so it needs no run-time overlap check per nonzero. */
static inline void axpy(float *restrict y, const float *restrict x, float a, int n)
{
    for (int f = 0; f < n; f++) y[f] += a * x[f];
}

static void spmm_backward(al_ctx *c, void *p)
{
    spmm_node *nd = p;
    const float *dy = nd->y->grad;                 /* (rows, F) */
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);                 /* (cols, F) */
    if (!dx) return;
    const al_csr *s = &nd->s;
    const int F = nd->x->shape[1];
    /* dX = Sᵀ·dY as a scatter over S's entries in CSR order: dX[col_k, :] += v_k·dY[i, :].
     * Each thread owns a contiguous range of dX rows and applies only the entries whose column
     * falls in it (every thread streams the column indices; only 1/T of the row updates are
     * its own). No atomics, no transposed copy of S, no shared cache lines between threads,
     * and every dX row sums its terms in CSR order whatever the thread count: bitwise
     * identical results for any number of threads. */
    const int nparts = s->nnz * (int64_t)F >= AL_PAR_MIN ? al_threads() : 1;
    AL_OMP("omp parallel for schedule(static) if (nparts > 1)")
    for (int part = 0; part < nparts; part++) {
        const int j0 = (int)((int64_t)s->cols * part / nparts), j1 = (int)((int64_t)s->cols * (part + 1) / nparts);
        for (int i = 0; i < s->rows; i++) {
            const float *dyr = dy + (int64_t)i * F;
            for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) {
                const int j = s->col[k];
                if (j >= j0 && j < j1) axpy(dx + (int64_t)j * F, dyr, s->val ? s->val[k] : 1.0f, F);
            }
        }
    }
}

/* The backward reads S's arrays again: they must stay valid and unchanged until al_backward
 * (S is a constant of the model, e.g. its adjacency, so this holds in practice). */
al_tensor *al_spmm(al_ctx *c, const al_csr *s, al_tensor *x)
{
    if (!s || !x || !al_ok(c)) return NULL;
    char b1[64];
    if (s->rows < 1 || s->cols < 1 || !s->rowptr || (s->nnz > 0 && !s->col) || s->nnz < 0)
        return al_fail(c, "spmm: invalid CSR matrix (%d x %d, nnz %lld)", s->rows, s->cols, (long long)s->nnz);
    if (x->ndim != 2 || x->shape[0] != s->cols)
        return al_fail(c, "spmm: X %s must be (%d, F) for a %d x %d sparse matrix",
                       al_shape_str(x, b1, sizeof b1), s->cols, s->rows, s->cols);
    if (s->rowptr[0] != 0 || s->rowptr[s->rows] != s->nnz)
        return al_fail(c, "spmm: CSR rowptr must run from 0 to nnz = %lld", (long long)s->nnz);
    for (int i = 0; i < s->rows; i++)
        if (s->rowptr[i + 1] < s->rowptr[i]) return al_fail(c, "spmm: CSR rowptr decreases at row %d", i);
    for (int64_t k = 0; k < s->nnz; k++)
        if (s->col[k] < 0 || s->col[k] >= s->cols)
            return al_fail(c, "spmm: CSR column index %d at entry %lld is out of range [0, %d)",
                           s->col[k], (long long)k, s->cols);
    const int rows = s->rows, F = x->shape[1];
    al_tensor *y = al_new(c, 2, (int[]){rows, F}); /* (rows, F) */
    if (!y) return NULL;
    const float *xd = x->data; float *yd = y->data;
    const int64_t *rp = s->rowptr; const int *col = s->col; const float *val = s->val;
    /* Rows are owned by one thread each and summed in CSR order: any schedule gives the same bits. */
    AL_OMP("omp parallel for schedule(dynamic, 32) if (s->nnz * (int64_t)F >= AL_PAR_MIN)")
    for (int i = 0; i < rows; i++) {
        float *yr = yd + (int64_t)i * F;
        for (int f = 0; f < F; f++) yr[f] = 0.f;
        for (int64_t k = rp[i]; k < rp[i + 1]; k++)
            axpy(yr, xd + (int64_t)col[k] * F, val ? val[k] : 1.0f, F);
    }
    if (c->grad_enabled && x->requires_grad) {
        spmm_node *nd = al__node_new(c, sizeof *nd);
        if (!nd) return NULL;
        nd->x = x; nd->y = y; nd->s = *s;
        y->requires_grad = 1;
        al_tape_push_out(c, spmm_backward, nd, y);
    }
    return y;
}
