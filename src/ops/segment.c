/* segment.c — ops on packed batches of sequences (seq.h): the window concatenation of window-fc and
 * the packed ⇄ padded layout changes (for ops that want padded sequences), forward and backward side
 * by side. A packed (N, C) tensor holds nseg segments back to back, segment s owning len[s] rows.
 * The lengths are copied into the arena, so the caller's array need not outlive the call. Everything
 * here is a copy or a sum of copies in a fixed order: results do not depend on the thread count. */
#include "attnlab/ops.h"
#include "ops_impl.h"
#include <math.h>
#include <string.h>

/* Lengths (and their starts) copied into the arena; N = Σ len. NULL (c in error) on bad lengths. */
static int *seg_copy(al_ctx *c, const char *op, const int *len, int nseg, int **start, int64_t *N, int *Tmax)
{
    if (nseg < 1 || !len) { al_fail(c, "%s: need at least one segment, got %d", op, nseg); return NULL; }
    int *l = al_arena_alloc(&c->arena, (size_t)nseg * sizeof(int));
    int *st = al_arena_alloc(&c->arena, (size_t)(nseg + 1) * sizeof(int));
    if (!l || !st) { al_fail(c, "%s: out of memory (arena)", op); return NULL; }
    int64_t n = 0; int tm = 1;
    for (int s = 0; s < nseg; s++) {
        if (len[s] < 0) { al_fail(c, "%s: segment %d has negative length %d", op, s, len[s]); return NULL; }
        l[s] = len[s]; st[s] = (int)n; n += len[s];
        if (len[s] > tm) tm = len[s];
        if (n > 0x7fffffff) { al_fail(c, "%s: more than 2^31 tokens", op); return NULL; }
    }
    st[nseg] = (int)n;
    *start = st; *N = n; if (Tmax) *Tmax = tm;
    return l;
}

void al_seg_positions(const int *len, int nseg, int *pos)
{
    int64_t i = 0;
    for (int s = 0; s < nseg; s++)
        for (int p = 0; p < len[s]; p++) pos[i++] = p;
}

void al_sinusoid(float *pe, int n, int d)
{
    for (int p = 0; p < n; p++)
        for (int i = 0; i < d; i += 2) {
            /* torch: ang = pos / 10000^(i/d) in float32 */
            float ang = (float)p / powf(10000.0f, (float)i / (float)d);
            pe[(int64_t)p * d + i] = sinf(ang);
            if (i + 1 < d) pe[(int64_t)p * d + i + 1] = cosf(ang);
        }
}

/* ---------------- window concatenation ---------------- */
typedef struct { al_tensor *x, *y; const int *len, *start; int nseg, K; } win_node;

/* y[i, (o+K)·C + c] = x[i + o, c] when i + o lies in i's segment, else 0; o = −K … K. */
static void win_forward(const float *x /* (N, C) */, float *y /* (N, (2K+1)·C) */, const int *len,
                        const int *start, int nseg, int K, int C)
{
    const int W = (2 * K + 1) * C;
    for (int s = 0; s < nseg; s++)
        for (int p = 0; p < len[s]; p++) {
            int64_t i = start[s] + p;
            float *yr = y + i * W;
            for (int o = -K; o <= K; o++) {
                float *dst = yr + (int64_t)(o + K) * C;
                if (p + o < 0 || p + o >= len[s]) memset(dst, 0, (size_t)C * sizeof(float));
                else memcpy(dst, x + (i + o) * C, (size_t)C * sizeof(float));
            }
        }
}

static void win_backward(al_ctx *c, void *p)
{
    win_node *nd = p;
    if (!nd->y->grad) return;
    const int C = nd->x->shape[1], K = nd->K, W = (2 * K + 1) * C;
    float *dx = al_grad(c, nd->x);                  /* (N, C) */
    const float *dy = nd->y->grad;                  /* (N, (2K+1)·C) */
    if (!dx) return;
    for (int s = 0; s < nd->nseg; s++)
        for (int q = 0; q < nd->len[s]; q++) {
            int64_t j = nd->start[s] + q;           /* dx[j] gathers from the rows that copied it */
            float *dxr = dx + j * C;
            for (int o = -K; o <= K; o++) {
                int pi = q - o;                     /* row i = j − o copied x[j] into block o */
                if (pi < 0 || pi >= nd->len[s]) continue;
                const float *g = dy + (j - o) * W + (int64_t)(o + K) * C;
                for (int k = 0; k < C; k++) dxr[k] += g[k];
            }
        }
}

al_tensor *al_seg_window(al_ctx *c, al_tensor *x /* (N, C) */, const int *len, int nseg, int K)
{
    if (!x || !al_ok(c)) return NULL;
    if (K < 0) return al_fail(c, "seg_window: K must be >= 0, got %d", K);
    int *start; int64_t N;
    int *l = seg_copy(c, "seg_window", len, nseg, &start, &N, NULL);
    if (!l) return NULL;
    if (x->ndim != 2 || x->shape[0] != N) {
        char b[64];
        return al_fail(c, "seg_window: x is %s but the segments hold %lld tokens (want (N, C))", al_shape_str(x, b, sizeof b), (long long)N);
    }
    const int C = x->shape[1];
    if ((int64_t)(2 * K + 1) * C > 0x7fffffff) return al_fail(c, "seg_window: window too wide");
    al_tensor *y = al_new(c, 2, (int[]){(int)N, (2 * K + 1) * C});
    if (!y) return NULL;
    win_forward(x->data, y->data, l, start, nseg, K, C);
    if (al__wants_grad(c, x)) {
        win_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->len = l; nd->start = start; nd->nseg = nseg; nd->K = K; }
        if (!al__record(c, y, win_backward, nd)) return NULL;
    }
    return y;
}

/* ---------------- packed ⇄ padded ---------------- */
typedef struct { al_tensor *in, *out; const int *len, *start; int nseg, T; } pad_node;

/* Row copies between packed (N, C) and padded (nseg, T, C); to_padded chooses the direction.
 * acc: add instead of copy (backward). Padded rows beyond len[s] are untouched. */
static void seg_copy_rows(float *packed, float *padded, const int *len, const int *start, int nseg, int T, int C,
                          int to_padded, int acc)
{
    for (int s = 0; s < nseg; s++) {
        float *pk = packed + (int64_t)start[s] * C, *pd = padded + (int64_t)s * T * C;
        int64_t n = (int64_t)len[s] * C;
        float *dst = to_padded ? pd : pk;
        const float *src = to_padded ? pk : pd;
        if (acc) for (int64_t k = 0; k < n; k++) dst[k] += src[k];
        else memcpy(dst, src, (size_t)n * sizeof(float));
    }
}

static void unpack_backward(al_ctx *c, void *p)   /* in (N, C) packed, out (nseg, T, C) */
{
    pad_node *nd = p;
    if (!nd->out->grad) return;
    float *dx = al_grad(c, nd->in);
    if (dx) seg_copy_rows(dx, nd->out->grad, nd->len, nd->start, nd->nseg, nd->T, nd->in->shape[1], 0, 1);
}

static void pack_backward(al_ctx *c, void *p)     /* in (nseg, T, C) padded, out (N, C) */
{
    pad_node *nd = p;
    if (!nd->out->grad) return;
    float *dy = al_grad(c, nd->in);
    if (dy) seg_copy_rows(nd->out->grad, dy, nd->len, nd->start, nd->nseg, nd->T, nd->in->shape[2], 1, 1);
}

al_tensor *al_seg_unpack(al_ctx *c, al_tensor *x /* (N, C) */, const int *len, int nseg)
{
    if (!x || !al_ok(c)) return NULL;
    int *start; int64_t N; int T;
    int *l = seg_copy(c, "seg_unpack", len, nseg, &start, &N, &T);
    if (!l) return NULL;
    if (x->ndim != 2 || x->shape[0] != N) {
        char b[64];
        return al_fail(c, "seg_unpack: x is %s but the segments hold %lld tokens (want (N, C))", al_shape_str(x, b, sizeof b), (long long)N);
    }
    const int C = x->shape[1];
    al_tensor *y = al_zeros(c, 3, (int[]){nseg, T, C});
    if (!y) return NULL;
    seg_copy_rows(x->data, y->data, l, start, nseg, T, C, 1, 0);
    if (al__wants_grad(c, x)) {
        pad_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->in = x; nd->out = y; nd->len = l; nd->start = start; nd->nseg = nseg; nd->T = T; }
        if (!al__record(c, y, unpack_backward, nd)) return NULL;
    }
    return y;
}

al_tensor *al_seg_pack(al_ctx *c, al_tensor *y /* (nseg, T, C) */, const int *len, int nseg)
{
    if (!y || !al_ok(c)) return NULL;
    int *start; int64_t N; int T;
    int *l = seg_copy(c, "seg_pack", len, nseg, &start, &N, &T);
    if (!l) return NULL;
    if (y->ndim != 3 || y->shape[0] != nseg || y->shape[1] < T) {
        char b[64];
        return al_fail(c, "seg_pack: y is %s; want (%d, >= %d, C)", al_shape_str(y, b, sizeof b), nseg, T);
    }
    if (N < 1) return al_fail(c, "seg_pack: the segments hold no token");
    const int C = y->shape[2];
    al_tensor *x = al_new(c, 2, (int[]){(int)N, C});
    if (!x) return NULL;
    seg_copy_rows(x->data, y->data, l, start, nseg, y->shape[1], C, 0, 0);
    if (al__wants_grad(c, y)) {
        pad_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->in = y; nd->out = x; nd->len = l; nd->start = start; nd->nseg = nseg; nd->T = y->shape[1]; }
        if (!al__record(c, x, pack_backward, nd)) return NULL;
    }
    return x;
}
