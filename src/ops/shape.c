/* ops_shape.c — differentiable shape ops: reshape (zero-copy), permute, mean over tokens,
 * split/merge heads, concat/slice of the last dimension, embedding lookup, patchify.
 *
 * permute, split_heads, merge_heads, slice_last and patchify are all one index map: every output
 * element (in row-major order over an up-to-6-d output index) reads x at base + Σ idx_i·stride_i.
 * The map is injective, so the backward scatter-add is parallel without two threads ever writing
 * the same gradient element.
 */
#include "attnlab/ops.h"
#include "ops_impl.h"
#include <stdio.h>
#include <string.h>

#include "core/omp_impl.h"
#include "core/simd_impl.h"

#define SHAPE_PAR_MIN 65536   /* elements below which the copies stay serial */

static void *node_alloc(al_ctx *c, size_t bytes, const char *op)
{
    void *n = al_arena_alloc(&c->arena, bytes);
    if (!n) al_fail(c, "%s: out of memory (arena)", op);
    return n;
}

/* dst[0..n) = src[0..n): the head-sized rows here (D = 16 floats) are too short for a libc memcpy call
 * to pay (3 % of a local training step in perf); masked 16-lane moves, inline. */
static inline void copy_row(float *restrict dst, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i += 16) {
        const al_m16 m = al_v16_mask((int)(n - i < 16 ? n - i : 16));
        al_v16_store(m, dst + i, al_v16_load(m, src + i));
    }
}

/* ---------------- index map (gather forward / scatter-add backward) ---------------- */
typedef struct imap {
    int shape[6];          /* output index ranges, leading entries 1 when fewer dims */
    int64_t stride[6];     /* x offset per unit of each output index */
    int64_t base;          /* x offset of output element 0 */
} imap;

/* Fill an imap from nd (≤ 6) output dims, right-aligned. */
static imap imap_make(int nd, const int *shape, const int64_t *stride, int64_t base)
{
    imap m;
    for (int i = 0; i < 6; i++) { m.shape[i] = 1; m.stride[i] = 0; }
    for (int i = 0; i < nd; i++) { m.shape[6 - nd + i] = shape[i]; m.stride[6 - nd + i] = stride[i]; }
    m.base = base;
    return m;
}

/* y (map's output, contiguous) = x[map] when !add; x[map] += y when add (the backward). The threads
 * split the first four (right-aligned, so leading 1s) output indices: a 4-D map such as merge_heads
 * has shape (1, 1, B, N, H, D), and splitting only the first two left it on one thread. Every map
 * here is injective (permutations, slices, patches), so each element of x has one writer. */
static void imap_run(const imap *m, float *x, float *y, int add)
{
    const int *n = m->shape;
    const int64_t *s = m->stride;
    const int64_t outer = (int64_t)n[0] * n[1] * n[2] * n[3];
    const int64_t inner = (int64_t)n[4] * n[5];
    AL_OMP("omp parallel for schedule(static) if (outer * inner >= SHAPE_PAR_MIN)")
    for (int64_t t = 0; t < outer; t++) {
        int64_t r = t;
        const int64_t i3 = r % n[3]; r /= n[3];
        const int64_t i2 = r % n[2]; r /= n[2];
        const int64_t i1 = r % n[1], i0 = r / n[1];
        float *x03 = x + m->base + i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3];
        float *yo = y + t * inner;
        for (int i4 = 0; i4 < n[4]; i4++) {
            float *xr = x03 + i4 * s[4];
            if (s[5] == 1) {
                if (add) for (int i5 = 0; i5 < n[5]; i5++) xr[i5] += yo[i5];
                else copy_row(yo, xr, n[5]);
            } else {
                if (add) for (int i5 = 0; i5 < n[5]; i5++) xr[i5 * s[5]] += yo[i5];
                else for (int i5 = 0; i5 < n[5]; i5++) yo[i5] = xr[i5 * s[5]];
            }
            yo += n[5];
        }
    }
}

typedef struct map_node {
    al_tensor *x;      /* input, any shape */
    al_tensor *out;    /* map output */
    imap m;
} map_node;

static void map_backward(al_ctx *c, void *p)
{
    map_node *n = p;
    if (!n->out->grad) return;
    float *dx = al_grad(c, n->x);
    if (!dx) return;
    imap_run(&n->m, dx, n->out->grad, 1);
}

/* Forward of an index-map op: out gets shape (ondim, oshape); map describes where it reads x. */
static al_tensor *map_op(al_ctx *c, al_tensor *x, int ondim, const int *oshape, const imap *m, const char *op)
{
    al_tensor *out = al_new(c, ondim, oshape);
    if (!out) return NULL;
    imap_run(m, x->data, out->data, 0);
    if (al__wants_grad(c, x)) {
        map_node *n = node_alloc(c, sizeof *n, op);
        if (!n) return NULL;
        n->x = x; n->out = out; n->m = *m;
        out->requires_grad = 1;
        al_tape_push_out(c, map_backward, n, out);
    }
    return out;
}

/* ---------------- reshape (zero-copy) ---------------- */
typedef struct reshape_node { al_tensor *x, *out; } reshape_node;   /* same numel */

static void reshape_backward(al_ctx *c, void *p)
{
    reshape_node *n = p;
    if (!n->out->grad) return;
    float *dx = al_grad(c, n->x);
    if (!dx) return;
    const float *g = n->out->grad;
    const int64_t m = n->x->numel;
    AL_OMP("omp parallel for schedule(static) if (m >= SHAPE_PAR_MIN)")
    for (int64_t i = 0; i < m; i++) dx[i] += g[i];
}

al_tensor *al_reshape(al_ctx *c, al_tensor *x, int ndim, const int *shape)
{
    if (!x || !shape || !al_ok(c)) return NULL;
    char s1[64];
    int64_t n = al_shape_numel(ndim, shape);
    if (n < 0) {
        char b[96] = "(";
        for (int i = 0; i < ndim && i < AL_MAXDIM; i++)
            snprintf(b + strlen(b), sizeof b - strlen(b), i ? ", %d" : "%d", shape[i]);
        return al_fail(c, "reshape: invalid target shape %s) with %d dims for x %s", b, ndim, al_shape_str(x, s1, sizeof s1));
    }
    if (n != x->numel)
        return al_fail(c, "reshape: x %s has %lld elements, the target shape has %lld",
                       al_shape_str(x, s1, sizeof s1), (long long)x->numel, (long long)n);
    al_tensor *out = al_view(c, x, ndim, shape);   /* shares x->data */
    if (!out) return NULL;
    if (al__wants_grad(c, x)) {
        reshape_node *nd = node_alloc(c, sizeof *nd, "reshape");
        if (!nd) return NULL;
        nd->x = x; nd->out = out;
        out->requires_grad = 1;
        al_tape_push_out(c, reshape_backward, nd, out);
    }
    return out;
}

/* ---------------- permute ---------------- */
static void row_major_strides(const al_tensor *x, int64_t *st)
{
    int64_t s = 1;
    for (int i = x->ndim - 1; i >= 0; i--) { st[i] = s; s *= x->shape[i]; }
}

al_tensor *al_permute(al_ctx *c, al_tensor *x, const int *perm)
{
    if (!x || !perm || !al_ok(c)) return NULL;
    char s1[64];
    int seen[AL_MAXDIM] = {0}, oshape[AL_MAXDIM];
    int64_t xs[AL_MAXDIM], os[AL_MAXDIM];
    for (int i = 0; i < x->ndim; i++) {
        if (perm[i] < 0 || perm[i] >= x->ndim || seen[perm[i]]++) {
            char b[64] = "(";
            for (int j = 0; j < x->ndim; j++) snprintf(b + strlen(b), sizeof b - strlen(b), j ? ", %d" : "%d", perm[j]);
            return al_fail(c, "permute: %s) is not a permutation of the %d dims of x %s",
                           b, x->ndim, al_shape_str(x, s1, sizeof s1));
        }
    }
    row_major_strides(x, xs);
    for (int i = 0; i < x->ndim; i++) { oshape[i] = x->shape[perm[i]]; os[i] = xs[perm[i]]; }
    imap m = imap_make(x->ndim, oshape, os, 0);
    return map_op(c, x, x->ndim, oshape, &m, "permute");
}

/* ---------------- heads ---------------- */
al_tensor *al_split_heads(al_ctx *c, al_tensor *x, int heads)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 3 || heads < 1 || x->shape[2] % heads)
        return al_fail(c, "split_heads: x %s must be (B, N, H·D) with the last dim divisible by %d heads",
                       al_shape_str(x, s1, sizeof s1), heads);
    const int B = x->shape[0], N = x->shape[1], HD = x->shape[2], D = HD / heads;
    const int os[4] = {B, heads, N, D};                               /* (B, H, N, D) */
    const int64_t st[4] = {(int64_t)N * HD, D, HD, 1};
    imap m = imap_make(4, os, st, 0);
    return map_op(c, x, 4, os, &m, "split_heads");
}

al_tensor *al_merge_heads(al_ctx *c, al_tensor *x)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 4)
        return al_fail(c, "merge_heads: x %s must be (B, H, N, D)", al_shape_str(x, s1, sizeof s1));
    const int B = x->shape[0], H = x->shape[1], N = x->shape[2], D = x->shape[3];
    if ((int64_t)H * D > INT32_MAX)
        return al_fail(c, "merge_heads: x %s: H·D too large", al_shape_str(x, s1, sizeof s1));
    const int idx[4] = {B, N, H, D};                                  /* output index (b, n, h, d) */
    const int64_t st[4] = {(int64_t)H * N * D, D, (int64_t)N * D, 1};
    imap m = imap_make(4, idx, st, 0);
    return map_op(c, x, 3, (int[]){B, N, H * D}, &m, "merge_heads"); /* (B, N, H·D) */
}

/* ---------------- fused q/k/v split ---------------- */
typedef struct qkv_node { al_tensor *x, *o[3]; int B, N, H, D; } qkv_node;

/* Row t = (b, n) of x (B, N, 3·H·D) holds [q | k | v], each H blocks of D; block (s, h) goes to
 * o[s] (B, H, N, D) at (b, h, n). dir 0: o = x[...] (forward). dir 1 (backward, x is dx): dx += g,
 * dir 2: dx = g (dx fresh); a NULL g[s] counts as zeros. Each row of x is owned by one thread. */
static void qkv_run(float *x, float *const o[3], int B, int N, int H, int D, int dir)
{
    const int64_t rows = (int64_t)B * N, HD = (int64_t)H * D, W = 3 * HD;
    AL_OMP("omp parallel for schedule(static) if (rows * W >= SHAPE_PAR_MIN)")
    for (int64_t t = 0; t < rows; t++) {
        const int64_t b = t / N, n = t % N;
        float *xr = x + t * W;
        for (int s = 0; s < 3; s++)
            for (int h = 0; h < H; h++) {
                float *xs = xr + s * HD + (int64_t)h * D;
                if (!o[s]) { if (dir == 2) memset(xs, 0, (size_t)D * sizeof(float)); continue; }
                float *os = o[s] + ((b * H + h) * N + n) * D;
                if (dir == 0) copy_row(os, xs, D);
                else if (dir == 2) copy_row(xs, os, D);
                else for (int d = 0; d < D; d++) xs[d] += os[d];
            }
    }
}

static void qkv_backward(al_ctx *c, void *p)
{
    qkv_node *nd = p;
    float *g[3] = {nd->o[0]->grad, nd->o[1]->grad, nd->o[2]->grad};
    if (!g[0] && !g[1] && !g[2]) return;
    int fresh;
    float *dx = al_grad_for_write(c, nd->x, &fresh);   /* (B, N, 3·H·D) */
    if (!dx) return;
    qkv_run(dx, g, nd->B, nd->N, nd->H, nd->D, fresh ? 2 : 1);
}

al_status al_split_qkv(al_ctx *c, al_tensor *x, int heads, al_tensor **q, al_tensor **k, al_tensor **v)
{
    *q = *k = *v = NULL;
    if (!x || !al_ok(c)) return AL_ERR;
    char s1[64];
    if (x->ndim != 3 || heads < 1 || x->shape[2] % (3 * heads)) {
        al_fail(c, "split_qkv: x %s must be (B, N, 3·H·D) with the last dim divisible by 3·%d heads",
                al_shape_str(x, s1, sizeof s1), heads);
        return AL_ERR;
    }
    const int B = x->shape[0], N = x->shape[1], D = x->shape[2] / (3 * heads);
    const int os[4] = {B, heads, N, D};                               /* (B, H, N, D) */
    al_tensor *o[3];
    for (int s = 0; s < 3; s++)
        if (!(o[s] = al_new(c, 4, os))) return AL_ERR;
    float *od[3] = {o[0]->data, o[1]->data, o[2]->data};
    qkv_run(x->data, od, B, N, heads, D, 0);
    if (al__wants_grad(c, x)) {
        qkv_node *nd = node_alloc(c, sizeof *nd, "split_qkv");
        if (!nd) return AL_ERR;
        nd->x = x; nd->B = B; nd->N = N; nd->H = heads; nd->D = D;
        for (int s = 0; s < 3; s++) { nd->o[s] = o[s]; o[s]->requires_grad = 1; }
        al_tape_push_outs(c, qkv_backward, nd, o, 3);
    }
    *q = o[0]; *k = o[1]; *v = o[2];
    return AL_OK;
}

/* ---------------- linear + q/k/v split, the projection in a scratch ---------------- */
typedef struct lqkv_node { al_tensor *x, *w, *b, *o[3]; int rows, in, B, N, H, D; } lqkv_node;

static void lqkv_backward(al_ctx *c, void *p)
{
    lqkv_node *nd = p;
    float *g[3] = {nd->o[0]->grad, nd->o[1]->grad, nd->o[2]->grad};
    if (!g[0] && !g[1] && !g[2]) return;
    const int rows = nd->rows, in = nd->in, out = 3 * nd->H * nd->D;
    int fresh = 0;
    float *dx = nd->x->requires_grad ? al_grad_for_write(c, nd->x, &fresh) : NULL;   /* before the scratch */
    float *dw = nd->w->requires_grad ? al_grad(c, nd->w) : NULL;
    float *db = nd->b && nd->b->requires_grad ? al_grad(c, nd->b) : NULL;
    if (!al_ok(c)) return;
    al_arena_mark m = al_ctx_mark(c);
    float *dy = al_arena_alloc(&c->arena, (size_t)rows * out * sizeof(float));      /* (rows, 3·H·D) */
    if (!dy) { al_fail(c, "linear_qkv: out of memory (arena)"); return; }
    qkv_run(dy, g, nd->B, nd->N, nd->H, nd->D, 2);            /* split_qkv's backward into a fresh gradient */
    al__linear_bwd(dy, nd->x->data, nd->w->data, dx, fresh, dw, db, rows, in, out);
    al_arena_release(&c->arena, m);
}

al_status al_linear_qkv(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int heads, al_tensor **q, al_tensor **k,
                        al_tensor **v)
{
    *q = *k = *v = NULL;
    if (!x || !w || !al_ok(c)) return AL_ERR;
    char s1[64], s2[64];
    const int in = x->shape[x->ndim - 1];
    if (x->ndim != 3 || w->ndim != 2 || w->shape[1] != in || heads < 1 || w->shape[0] % (3 * heads) ||
        (b && !(b->ndim == 1 && b->shape[0] == w->shape[0]))) {
        al_fail(c, "linear_qkv: x %s must be (B, N, in) and w %s (3·H·D, in) for %d heads, with a bias of 3·H·D",
                al_shape_str(x, s1, sizeof s1), al_shape_str(w, s2, sizeof s2), heads);
        return AL_ERR;
    }
    const int B = x->shape[0], N = x->shape[1], out = w->shape[0], D = out / (3 * heads);
    if ((int64_t)B * N > 2147483647LL) { al_fail(c, "linear_qkv: too many rows"); return AL_ERR; }
    const int rows = B * N;
    al_tensor *o[3];
    for (int s = 0; s < 3; s++)
        if (!(o[s] = al_new(c, 4, (int[]){B, heads, N, D}))) return AL_ERR;
    const int want = c->grad_enabled && (x->requires_grad || w->requires_grad || (b && b->requires_grad));
    lqkv_node *nd = want ? node_alloc(c, sizeof *nd, "linear_qkv") : NULL;
    if (want && !nd) return AL_ERR;
    al_arena_mark m = al_ctx_mark(c);
    float *y = al_arena_alloc(&c->arena, (size_t)rows * out * sizeof(float));       /* (rows, 3·H·D) scratch */
    if (!y) { al_fail(c, "linear_qkv: out of memory (arena)"); return AL_ERR; }
    al__linear_fwd(x->data, w->data, b ? b->data : NULL, y, rows, in, out);
    float *od[3] = {o[0]->data, o[1]->data, o[2]->data};
    qkv_run(y, od, B, N, heads, D, 0);
    al_arena_release(&c->arena, m);
    if (nd) {
        nd->x = x; nd->w = w; nd->b = b; nd->rows = rows; nd->in = in; nd->B = B; nd->N = N; nd->H = heads; nd->D = D;
        for (int s = 0; s < 3; s++) { nd->o[s] = o[s]; o[s]->requires_grad = 1; }
        al_tape_push_outs(c, lqkv_backward, nd, o, 3);
    }
    *q = o[0]; *k = o[1]; *v = o[2];
    return AL_OK;
}

/* ---------------- slice / concat of the last dim ---------------- */
al_tensor *al_slice_last(al_ctx *c, al_tensor *x, int start, int len)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    const int L = x->shape[x->ndim - 1];
    if (start < 0 || len < 1 || (int64_t)start + len > L)
        return al_fail(c, "slice_last: [%d, %lld) is not a non-empty range inside the last dim of x %s",
                       start, (long long)start + len, al_shape_str(x, s1, sizeof s1));
    int oshape[AL_MAXDIM];
    memcpy(oshape, x->shape, sizeof oshape);
    oshape[x->ndim - 1] = len;
    int64_t st[AL_MAXDIM];                                            /* x's own strides, read from start */
    row_major_strides(x, st);
    imap m = imap_make(x->ndim, oshape, st, start);
    return map_op(c, x, x->ndim, oshape, &m, "slice_last");
}

typedef struct concat_node {
    int n;
    al_tensor **xs;    /* n × (..., L_i) */
    al_tensor *out;    /* (..., Σ L_i) */
} concat_node;

static void concat_backward(al_ctx *c, void *p)
{
    concat_node *nd = p;
    if (!nd->out->grad) return;
    const int Lo = nd->out->shape[nd->out->ndim - 1];
    const int64_t R = nd->out->numel / Lo;
    int off = 0;
    for (int i = 0; i < nd->n; i++) {
        al_tensor *x = nd->xs[i];
        const int L = x->shape[x->ndim - 1];
        if (x->requires_grad) {
            float *dx = al_grad(c, x);                                /* (R, L) */
            if (!dx) return;
            const float *g = nd->out->grad;                           /* (R, Lo) */
            AL_OMP("omp parallel for schedule(static) if (R * L >= SHAPE_PAR_MIN)")
            for (int64_t r = 0; r < R; r++)
                for (int j = 0; j < L; j++) dx[r * L + j] += g[r * Lo + off + j];
        }
        off += L;
    }
}

al_tensor *al_concat_last(al_ctx *c, int n, al_tensor **xs)
{
    if (!xs || !al_ok(c)) return NULL;
    if (n < 1) return al_fail(c, "concat_last: need at least one tensor, got %d", n);
    for (int i = 0; i < n; i++) if (!xs[i]) return NULL;
    char s1[64], s2[64];
    const al_tensor *x0 = xs[0];
    int64_t Lo = 0;
    int grad = 0;
    for (int i = 0; i < n; i++) {
        const al_tensor *x = xs[i];
        int same = x->ndim == x0->ndim;
        for (int d = 0; same && d < x0->ndim - 1; d++) same = x->shape[d] == x0->shape[d];
        if (!same)
            return al_fail(c, "concat_last: tensor %d %s does not match tensor 0 %s except in the last dim",
                           i, al_shape_str(x, s1, sizeof s1), al_shape_str(x0, s2, sizeof s2));
        Lo += x->shape[x->ndim - 1];
        grad |= al__wants_grad(c, x);
    }
    if (Lo > INT32_MAX) return al_fail(c, "concat_last: concatenated last dim %lld too large", (long long)Lo);
    int oshape[AL_MAXDIM];
    memcpy(oshape, x0->shape, sizeof oshape);
    oshape[x0->ndim - 1] = (int)Lo;
    al_tensor *out = al_new(c, x0->ndim, oshape);                    /* (..., Σ L_i) */
    if (!out) return NULL;
    const int64_t R = out->numel / Lo;
    int off = 0;
    for (int i = 0; i < n; i++) {
        const int L = xs[i]->shape[xs[i]->ndim - 1];
        const float *src = xs[i]->data;                               /* (R, L) */
        float *dst = out->data;                                       /* (R, Lo) */
        AL_OMP("omp parallel for schedule(static) if (R * L >= SHAPE_PAR_MIN)")
        for (int64_t r = 0; r < R; r++) memcpy(dst + r * Lo + off, src + r * L, (size_t)L * sizeof(float));
        off += L;
    }
    if (grad) {
        concat_node *nd = node_alloc(c, sizeof *nd, "concat_last");
        al_tensor **keep = nd ? al_arena_alloc(&c->arena, (size_t)n * sizeof *keep) : NULL;
        if (!keep) return al_fail(c, "concat_last: out of memory (arena)");
        memcpy(keep, xs, (size_t)n * sizeof *keep);
        nd->n = n; nd->xs = keep; nd->out = out;
        out->requires_grad = 1;
        al_tape_push_out(c, concat_backward, nd, out);
    }
    return out;
}

/* ---------------- mean over tokens ---------------- */
typedef struct mean_node { al_tensor *x, *out; } mean_node;   /* (B, N, C) → (B, C) */

static void mean_tokens_backward(al_ctx *c, void *p)
{
    mean_node *nd = p;
    if (!nd->out->grad) return;
    float *dx = al_grad(c, nd->x);                                    /* (B, N, C) */
    if (!dx) return;
    const int B = nd->x->shape[0], N = nd->x->shape[1], C = nd->x->shape[2];
    const float *g = nd->out->grad;                                   /* (B, C) */
    const float invN = 1.0f / (float)N;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)B * N * C >= SHAPE_PAR_MIN)")
    for (int b = 0; b < B; b++)
        for (int n = 0; n < N; n++) {
            float *d = dx + ((size_t)b * N + n) * C;
            const float *gb = g + (size_t)b * C;
            for (int k = 0; k < C; k++) d[k] += gb[k] * invN;
        }
}

al_tensor *al_mean_tokens(al_ctx *c, al_tensor *x)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 3) return al_fail(c, "mean_tokens: x %s must be (B, N, C)", al_shape_str(x, s1, sizeof s1));
    const int B = x->shape[0], N = x->shape[1], C = x->shape[2];
    al_tensor *out = al_new(c, 2, (int[]){B, C});                    /* (B, C) */
    if (!out) return NULL;
    const float invN = 1.0f / (float)N;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)B * N * C >= SHAPE_PAR_MIN)")
    for (int b = 0; b < B; b++) {
        float *o = out->data + (size_t)b * C;
        const float *xb = x->data + (size_t)b * N * C;                /* (N, C) */
        for (int k = 0; k < C; k++) o[k] = 0.f;
        for (int n = 0; n < N; n++)
            for (int k = 0; k < C; k++) o[k] += xb[(size_t)n * C + k];
        for (int k = 0; k < C; k++) o[k] *= invN;
    }
    if (al__wants_grad(c, x)) {
        mean_node *nd = node_alloc(c, sizeof *nd, "mean_tokens");
        if (!nd) return NULL;
        nd->x = x; nd->out = out;
        out->requires_grad = 1;
        al_tape_push_out(c, mean_tokens_backward, nd, out);
    }
    return out;
}

/* ---------------- embedding ---------------- */
typedef struct embed_node {
    al_tensor *table;  /* (V, C) */
    al_tensor *out;    /* (n, C) */
    int *ids;          /* (n), copied */
} embed_node;

static void embedding_backward(al_ctx *c, void *p)
{
    embed_node *nd = p;
    if (!nd->out->grad) return;
    float *dt = al_grad(c, nd->table);                                /* (V, C) */
    if (!dt) return;
    const int n = nd->out->shape[0], C = nd->out->shape[1];
    const float *g = nd->out->grad;                                   /* (n, C) */
    /* repeated ids add in the order of ids: serial rows, so the result never depends on threads */
    for (int i = 0; i < n; i++) {
        float *d = dt + (size_t)nd->ids[i] * C;
        const float *gi = g + (size_t)i * C;
        for (int k = 0; k < C; k++) d[k] += gi[k];
    }
}

al_tensor *al_embedding(al_ctx *c, al_tensor *table, const int *ids, int n)
{
    if (!table || !ids || !al_ok(c)) return NULL;
    char s1[64];
    if (table->ndim != 2) return al_fail(c, "embedding: table %s must be (V, C)", al_shape_str(table, s1, sizeof s1));
    if (n < 1) return al_fail(c, "embedding: need at least one id, got n = %d", n);
    const int V = table->shape[0], C = table->shape[1];
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= V)
            return al_fail(c, "embedding: ids[%d] = %d is out of range [0, %d) for table %s",
                           i, ids[i], V, al_shape_str(table, s1, sizeof s1));
    al_tensor *out = al_new(c, 2, (int[]){n, C});                    /* (n, C) */
    if (!out) return NULL;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)n * C >= SHAPE_PAR_MIN)")
    for (int i = 0; i < n; i++)
        memcpy(out->data + (size_t)i * C, table->data + (size_t)ids[i] * C, (size_t)C * sizeof(float));
    if (al__wants_grad(c, table)) {
        embed_node *nd = node_alloc(c, sizeof *nd, "embedding");
        int *keep = nd ? al_arena_alloc(&c->arena, (size_t)n * sizeof *keep) : NULL;
        if (!keep) return al_fail(c, "embedding: out of memory (arena)");
        memcpy(keep, ids, (size_t)n * sizeof *keep);
        nd->table = table; nd->out = out; nd->ids = keep;
        out->requires_grad = 1;
        al_tape_push_out(c, embedding_backward, nd, out);
    }
    return out;
}

/* ---------------- patchify ---------------- */
al_tensor *al_patchify(al_ctx *c, al_tensor *x, int p)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 4 || p < 1 || x->shape[2] % p || x->shape[3] % p)
        return al_fail(c, "patchify: x %s must be (B, C, H, W) with H and W multiples of the patch size %d",
                       al_shape_str(x, s1, sizeof s1), p);
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int gh = H / p, gw = W / p;
    if ((int64_t)C * p * p > INT32_MAX)
        return al_fail(c, "patchify: patch of %d×%d×%d too large", C, p, p);
    /* output index (b, gy, gx, c, dy, dx) reads x[b, c, gy·p + dy, gx·p + dx] */
    const int idx[6] = {B, gh, gw, C, p, p};
    const int64_t st[6] = {(int64_t)C * H * W, (int64_t)p * W, p, (int64_t)H * W, W, 1};
    imap m = imap_make(6, idx, st, 0);
    return map_op(c, x, 3, (int[]){B, gh * gw, C * p * p}, &m, "patchify");   /* (B, gh·gw, C·p·p) */
}
