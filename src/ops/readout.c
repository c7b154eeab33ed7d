/* readout.c — graph readouts of a packed batch (N-to-1 per graph): sum or mean of each graph's rows,
 * and attention pooling (a learned query's softmax over each graph's atoms), forward and backward
 * side by side. Graph s owns rows [start[s], start[s] + len[s]) of the packed (N, ·) input; the
 * lengths are copied into the arena. Every sum runs over a graph's rows in order, one graph per
 * iteration: results do not depend on the thread count. */
#include "attnlab/ops.h"
#include "ops_impl.h"
#include <math.h>
#include <string.h>

/* Lengths and starts in the arena; *N = Σ len. NULL (c in error) on bad lengths. */
static int *seg_starts(al_ctx *c, const char *op, const int *len, int nseg, int64_t *N)
{
    if (nseg < 1 || !len) { al_fail(c, "%s: need at least one graph, got %d", op, nseg); return NULL; }
    int *st = al_arena_alloc(&c->arena, (size_t)(nseg + 1) * sizeof(int));
    if (!st) { al_fail(c, "%s: out of memory (arena)", op); return NULL; }
    int64_t n = 0;
    for (int s = 0; s < nseg; s++) {
        if (len[s] < 0) { al_fail(c, "%s: graph %d has negative length %d", op, s, len[s]); return NULL; }
        st[s] = (int)n; n += len[s];
        if (n > 0x7fffffff) { al_fail(c, "%s: more than 2^31 rows", op); return NULL; }
    }
    st[nseg] = (int)n;
    *N = n;
    return st;
}

/* ---------------- sum / mean ---------------- */
typedef struct { al_tensor *x, *y; const int *start; int nseg, mean; } pool_node;

static void pool_backward(al_ctx *c, void *p)
{
    pool_node *nd = p;
    if (!nd->y->grad) return;
    const int C = nd->x->shape[1];
    float *dx = al_grad(c, nd->x);                 /* (N, C) */
    const float *dy = nd->y->grad;                 /* (S, C) */
    if (!dx) return;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)nd->x->numel >= AL_PAR_MIN)")
    for (int s = 0; s < nd->nseg; s++) {
        int a = nd->start[s], b = nd->start[s + 1];
        float k = nd->mean && b > a ? 1.f / (float)(b - a) : 1.f;
        for (int i = a; i < b; i++)
            for (int j = 0; j < C; j++) dx[(int64_t)i * C + j] += k * dy[(int64_t)s * C + j];
    }
}

al_tensor *al_seg_pool(al_ctx *c, al_tensor *x /* (N, C) */, const int *len, int nseg, int mean)
{
    if (!x || !al_ok(c)) return NULL;
    int64_t N;
    int *st = seg_starts(c, "seg_pool", len, nseg, &N);
    if (!st) return NULL;
    char b[64];
    if (x->ndim != 2 || x->shape[0] != N)
        return al_fail(c, "seg_pool: x is %s but the graphs hold %lld rows (want (N, C))", al_shape_str(x, b, sizeof b), (long long)N);
    const int C = x->shape[1];
    al_tensor *y = al_new(c, 2, (int[]){nseg, C});
    if (!y) return NULL;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)x->numel >= AL_PAR_MIN)")
    for (int s = 0; s < nseg; s++) {
        float *yr = y->data + (int64_t)s * C;
        for (int j = 0; j < C; j++) yr[j] = 0.f;
        for (int i = st[s]; i < st[s + 1]; i++)
            for (int j = 0; j < C; j++) yr[j] += x->data[(int64_t)i * C + j];
        if (mean && st[s + 1] > st[s]) {
            float k = 1.f / (float)(st[s + 1] - st[s]);
            for (int j = 0; j < C; j++) yr[j] *= k;
        }
    }
    if (al__wants_grad(c, x)) {
        pool_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->start = st; nd->nseg = nseg; nd->mean = mean; }
        if (!al__record(c, y, pool_backward, nd)) return NULL;
    }
    return y;
}

/* ---------------- attention pooling ---------------- */
typedef struct { al_tensor *s, *v, *y, *w; const int *start; int nseg, H; } apool_node;

/* w[i, h] = softmax over the rows i of graph g of s[i, h]; y[g, h·Dv + d] = Σ_i w[i, h] v[i, h·Dv + d]. */
static void apool_forward(const float *s /* (N, H) */, const float *v /* (N, H·Dv) */, float *w /* (N, H) */,
                          float *y /* (S, H·Dv) */, const int *start, int nseg, int H, int Dv)
{
    const int HD = H * Dv;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)start[nseg] * HD >= AL_PAR_MIN)")
    for (int g = 0; g < nseg; g++) {
        const int a = start[g], b = start[g + 1];
        float *yr = y + (int64_t)g * HD;
        for (int j = 0; j < HD; j++) yr[j] = 0.f;
        for (int h = 0; h < H; h++) {
            if (b <= a) continue;
            float mx = s[(int64_t)a * H + h];
            for (int i = a + 1; i < b; i++) mx = fmaxf(mx, s[(int64_t)i * H + h]);
            double z = 0;
            for (int i = a; i < b; i++) { float e = expf(s[(int64_t)i * H + h] - mx); w[(int64_t)i * H + h] = e; z += e; }
            float iz = (float)(1.0 / z);
            for (int i = a; i < b; i++) {
                float wi = w[(int64_t)i * H + h] *= iz;
                const float *vr = v + (int64_t)i * HD + (int64_t)h * Dv;
                for (int d = 0; d < Dv; d++) yr[h * Dv + d] += wi * vr[d];
            }
        }
    }
}

/* dv[i, h, :] += w[i, h] dy[g, h, :];  dw_i = dy[g, h, :]·v[i, h, :];  ds[i, h] += w_i (dw_i − Σ_j w_j dw_j). */
static void apool_backward(al_ctx *c, void *p)
{
    apool_node *nd = p;
    if (!nd->y->grad) return;
    const int H = nd->H, HD = nd->v->shape[1], Dv = HD / H;
    const float *dy = nd->y->grad, *w = nd->w->data, *v = nd->v->data;
    float *ds = nd->s->requires_grad ? al_grad(c, nd->s) : NULL;   /* (N, H) */
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;   /* (N, H·Dv) */
    if (!al_ok(c)) return;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)nd->v->numel >= AL_PAR_MIN)")
    for (int g = 0; g < nd->nseg; g++) {
        const int a = nd->start[g], b = nd->start[g + 1];
        const float *dyr = dy + (int64_t)g * HD;
        for (int h = 0; h < H; h++) {
            double dot = 0;
            for (int i = a; i < b; i++) {
                const float *vr = v + (int64_t)i * HD + (int64_t)h * Dv;
                float dw = 0.f, wi = w[(int64_t)i * H + h];
                for (int d = 0; d < Dv; d++) dw += dyr[h * Dv + d] * vr[d];
                if (dv) for (int d = 0; d < Dv; d++) dv[(int64_t)i * HD + (int64_t)h * Dv + d] += wi * dyr[h * Dv + d];
                dot += (double)wi * dw;
            }
            if (!ds) continue;
            for (int i = a; i < b; i++) {
                const float *vr = v + (int64_t)i * HD + (int64_t)h * Dv;
                float dw = 0.f;
                for (int d = 0; d < Dv; d++) dw += dyr[h * Dv + d] * vr[d];
                ds[(int64_t)i * H + h] += w[(int64_t)i * H + h] * (dw - (float)dot);
            }
        }
    }
}

al_tensor *al_seg_attn_pool(al_ctx *c, al_tensor *s /* (N, H) */, al_tensor *v /* (N, H·Dv) */, const int *len, int nseg,
                            al_tensor **weights)
{
    if (!s || !v || !al_ok(c)) return NULL;
    int64_t N;
    int *st = seg_starts(c, "seg_attn_pool", len, nseg, &N);
    if (!st) return NULL;
    char b1[64], b2[64];
    if (s->ndim != 2 || v->ndim != 2 || s->shape[0] != N || v->shape[0] != N || v->shape[1] % s->shape[1])
        return al_fail(c, "seg_attn_pool: scores %s and values %s must be (N, H) and (N, H·Dv) with N = %lld",
                       al_shape_str(s, b1, sizeof b1), al_shape_str(v, b2, sizeof b2), (long long)N);
    const int H = s->shape[1], Dv = v->shape[1] / H;
    al_tensor *y = al_new(c, 2, (int[]){nseg, H * Dv});
    al_tensor *w = al_zeros(c, 2, (int[]){(int)N, H});
    if (!y || !w) return NULL;
    apool_forward(s->data, v->data, w->data, y->data, st, nseg, H, Dv);
    if (weights) *weights = w;
    if (al__any_grad(c, s, v, NULL)) {
        apool_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->s = s; nd->v = v; nd->y = y; nd->w = w; nd->start = st; nd->nseg = nseg; nd->H = H; }
        if (!al__record(c, y, apool_backward, nd)) return NULL;
    }
    return y;
}
