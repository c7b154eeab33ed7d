/* ops_elementwise.c — add, mul, scale, broadcast add, activations and dropout; each forward
 * beside its backward. All loops are elementwise and owned per index (OpenMP static), except
 * the broadcast reduction, which is split by column so each thread owns its outputs. */
#include "attnlab/ops.h"
#include "core/omp_impl.h"
#include "ops_impl.h"
#include "core/fastmath_impl.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ======================= add / mul ======================= */
typedef struct { al_tensor *a, *b, *y; } bin_node;   /* all the same shape */

static void add_backward(al_ctx *c, void *p)
{
    bin_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy) return;
    const int64_t n = nd->y->numel;
    for (int k = 0; k < 2; k++) {
        al_tensor *t = k ? nd->b : nd->a;
        if (!t->requires_grad) continue;
        if (!t->grad && nd->y->grad == dy) {
            /* The first input without a gradient takes dy's buffer as it is: y is this entry's output, so
             * nobody reads its gradient after this backward (al_backward_run would free it now). The
             * same values as the copy below, one pass over the tensor less. */
            t->grad = nd->y->grad; nd->y->grad = NULL;
            continue;
        }
        int fresh;                                 /* a fresh gradient is a copy of dy: no zeroing */
        float *d = al_grad_for_write(c, t, &fresh);
        if (!d) return;
        if (fresh) {
            AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
            for (int64_t i = 0; i < n; i++) d[i] = dy[i];
        } else {
            AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
            for (int64_t i = 0; i < n; i++) d[i] += dy[i];
        }
    }
}

static void mul_backward(al_ctx *c, void *p)
{
    bin_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy) return;
    const int64_t n = nd->y->numel;
    for (int k = 0; k < 2; k++) {
        al_tensor *t = k ? nd->b : nd->a;
        const float *o = k ? nd->a->data : nd->b->data;
        if (!t->requires_grad) continue;
        float *d = al_grad(c, t);
        if (!d) return;
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) d[i] += dy[i] * o[i];
    }
}

static al_tensor *binary(al_ctx *c, al_tensor *a, al_tensor *b, int mul)
{
    if (!a || !b || !al_ok(c)) return NULL;
    if (!al_same_shape(a, b)) {
        char b1[64], b2[64];
        return al_fail(c, "%s: shapes differ: %s vs %s", mul ? "mul" : "add",
                       al_shape_str(a, b1, sizeof b1), al_shape_str(b, b2, sizeof b2));
    }
    al_tensor *y = al_new(c, a->ndim, a->shape);
    if (!y) return NULL;
    const float *x0 = a->data, *x1 = b->data;
    float *o = y->data;
    const int64_t n = y->numel;
    if (mul) {
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) o[i] = x0[i] * x1[i];
    } else {
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) o[i] = x0[i] + x1[i];
    }
    if (al__wants_grad(c, a) || al__wants_grad(c, b)) {
        bin_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->a = a; nd->b = b; nd->y = y; }
        if (!al__record(c, y, mul ? mul_backward : add_backward, nd)) return NULL;
    }
    return y;
}
al_tensor *al_add(al_ctx *c, al_tensor *a, al_tensor *b) { return binary(c, a, b, 0); }
int al__add_record(al_ctx *c, al_tensor *a, al_tensor *b, al_tensor *y)
{
    if (!(al__wants_grad(c, a) || al__wants_grad(c, b))) return 1;
    bin_node *nd = al__node_new(c, sizeof *nd);
    if (nd) { nd->a = a; nd->b = b; nd->y = y; }
    return al__record(c, y, add_backward, nd);
}
al_tensor *al_mul(al_ctx *c, al_tensor *a, al_tensor *b) { return binary(c, a, b, 1); }

/* ======================= scale ======================= */
typedef struct { al_tensor *x, *y; float s; } scale_node;

static void scale_backward(al_ctx *c, void *p)
{
    scale_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);
    if (!dx) return;
    const int64_t n = nd->y->numel; const float s = nd->s;
    AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
    for (int64_t i = 0; i < n; i++) dx[i] += s * dy[i];
}

al_tensor *al_scale(al_ctx *c, al_tensor *x, float s)
{
    if (!x || !al_ok(c)) return NULL;
    al_tensor *y = al_new(c, x->ndim, x->shape);
    if (!y) return NULL;
    const int64_t n = x->numel;
    const float *xd = x->data; float *yd = y->data;
    AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
    for (int64_t i = 0; i < n; i++) yd[i] = s * xd[i];
    if (al__wants_grad(c, x)) {
        scale_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->s = s; }
        if (!al__record(c, y, scale_backward, nd)) return NULL;
    }
    return y;
}

/* ======================= mass normalisation ======================= */
typedef struct { al_tensor *x, *y; int64_t R; int D; } mass_node;   /* x (R, D+1), y (R, D) */

static void mass_backward(al_ctx *c, void *p)
{
    mass_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);
    if (!dx) return;
    const int64_t R = nd->R; const int D = nd->D;
    const float *x = nd->x->data;
    AL_OMP("omp parallel for schedule(static) if (R * D >= AL_PAR_MIN)")
    for (int64_t r = 0; r < R; r++) {
        const float *xr = x + r * (D + 1), *g = dy + r * D;
        float *dr = dx + r * (D + 1);
        const float m = xr[D];
        if (m > 1.0f) {       /* y = x / m: dx = g / m, dm = −Σ g·x / m² */
            const float inv = 1.0f / m;
            float s = 0.0f;
            for (int d = 0; d < D; d++) { dr[d] += g[d] * inv; s += g[d] * xr[d]; }
            dr[D] -= s * inv * inv;
        } else
            for (int d = 0; d < D; d++) dr[d] += g[d];
    }
}

al_tensor *al_mass_normalize(al_ctx *c, al_tensor *x)
{
    if (!x || !al_ok(c)) return NULL;
    if (x->ndim < 1 || x->shape[x->ndim - 1] < 2) {
        char b[64];
        return al_fail(c, "mass_normalize: x %s needs a last dimension of at least 2 (values, then the mass)", al_shape_str(x, b, sizeof b));
    }
    int shape[AL_MAXDIM];
    for (int i = 0; i < x->ndim; i++) shape[i] = x->shape[i];
    const int D = --shape[x->ndim - 1];
    al_tensor *y = al_new(c, x->ndim, shape);
    if (!y) return NULL;
    const int64_t R = y->numel / D;
    const float *xd = x->data; float *yd = y->data;
    AL_OMP("omp parallel for schedule(static) if (R * D >= AL_PAR_MIN)")
    for (int64_t r = 0; r < R; r++) {
        const float *xr = xd + r * (D + 1);
        float *yr = yd + r * D;
        const float m = xr[D];
        if (m > 1.0f) { const float inv = 1.0f / m; for (int d = 0; d < D; d++) yr[d] = xr[d] * inv; }
        else memcpy(yr, xr, (size_t)D * sizeof(float));
    }
    if (al__wants_grad(c, x)) {
        mass_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->R = R; nd->D = D; }
        if (!al__record(c, y, mass_backward, nd)) return NULL;
    }
    return y;
}

/* ======================= broadcast add ======================= */
typedef struct { al_tensor *x, *b, *y; int64_t R, T; } bc_node;   /* x, y (R, T); b (T) */


static void add_bcast_backward(al_ctx *c, void *p)
{
    bc_node *nd = p;
    const float *dy = nd->y->grad;                  /* (R, T) */
    if (!dy) return;
    const int64_t R = nd->R, T = nd->T;
    if (nd->x->requires_grad) {
        float *dx = al_grad(c, nd->x);              /* (R, T) */
        if (!dx) return;
        const int64_t n = R * T;
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) dx[i] += dy[i];
    }
    if (nd->b->requires_grad) {
        float *db = al_grad(c, nd->b);              /* (T) */
        if (!db) return;
        al__colsum_acc(dy, db, R, T);                 /* db[j] += Σ_r dy[r, j] */
    }
}

al_tensor *al_add_bcast(al_ctx *c, al_tensor *x, al_tensor *b)
{
    if (!x || !b || !al_ok(c)) return NULL;
    int ok = b->ndim <= x->ndim;
    for (int i = 0; ok && i < b->ndim; i++) ok = b->shape[b->ndim - 1 - i] == x->shape[x->ndim - 1 - i];
    if (!ok) {
        char b1[64], b2[64];
        return al_fail(c, "add_bcast: y %s must equal the trailing dims of x %s",
                       al_shape_str(b, b1, sizeof b1), al_shape_str(x, b2, sizeof b2));
    }
    const int64_t T = b->numel, R = x->numel / T;
    al_tensor *y = al_new(c, x->ndim, x->shape);    /* (R, T) */
    if (!y) return NULL;
    const float *xd = x->data, *bd = b->data; float *yd = y->data;
    AL_OMP("omp parallel for schedule(static) if (R * T >= AL_PAR_MIN && R > 1)")
    for (int64_t r = 0; r < R; r++)
        for (int64_t j = 0; j < T; j++) yd[r * T + j] = xd[r * T + j] + bd[j];
    if (al__wants_grad(c, x) || al__wants_grad(c, b)) {
        bc_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->b = b; nd->y = y; nd->R = R; nd->T = T; }
        if (!al__record(c, y, add_bcast_backward, nd)) return NULL;
    }
    return y;
}

/* ======================= activations ======================= */
typedef enum { ACT_RELU, ACT_LEAKY, ACT_ELU, ACT_GELU } act_kind;
typedef struct { al_tensor *x, *y; act_kind kind; float a; } act_node;

#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT2PI 0.39894228040143268f

/* phi[j] = Φ(x[j]) for n ≤ GELU_BLK elements: the standard normal CDF, through erfc(z) for z = |x|/√2 ≥ 0 with the Chebyshev fit of
 * Press et al. (Numerical Recipes, "erfcc"): fractional error < 1.2e-7 everywhere, so the tail
 * Φ(−4) ≈ 3e-5 keeps its relative precision (1 + erf(x) would cancel). Branch-free, vectorises;
 * libm's erff does not (and costs ~10x more per element here).
 *
 * Computed stage by stage over the block (tests/test_ops_elementwise.c holds it to the one-element
 * formula, bit for bit). In one loop each vector of elements is a single ~40-operation dependency chain
 * (division, 9-term Horner, expf) and the out-of-order core can hold only two of them: the
 * GELU loops ran latency-bound, at a third of their throughput. Short stages over a block in L1
 * let it overlap a whole block. */
#define GELU_BLK 128
static void normal_cdf_blk(const float *x, float *phi, int n)
{
    float z[GELU_BLK], t[GELU_BLK], p[GELU_BLK];
    for (int j = 0; j < n; j++) {
        z[j] = fabsf(x[j]) * INV_SQRT2;
        t[j] = 1.0f / (1.0f + 0.5f * z[j]);
    }
    for (int j = 0; j < n; j++) {
        float q = 0.17087277f, u = t[j];
        q = q * u - 0.82215223f;
        q = q * u + 1.48851587f;
        q = q * u - 1.13520398f;
        q = q * u + 0.27886807f;
        q = q * u - 0.18628806f;
        q = q * u + 0.09678418f;
        q = q * u + 0.37409196f;
        q = q * u + 1.00002368f;
        q = q * u - 1.26551223f;
        p[j] = q - z[j] * z[j];
    }
    for (int j = 0; j < n; j++) p[j] = al__expf(p[j]);
    for (int j = 0; j < n; j++) {
        float half_erfc = 0.5f * t[j] * p[j];
        phi[j] = x[j] < 0.f ? half_erfc : 1.0f - half_erfc;
    }
}

/* Φ(x) and the derivative d[j] = Φ(x) + x·φ(x) of a block (one home, so the saved and the recomputed
 * derivative are the same expressions). */
static void gelu_deriv_blk(const float *x, float *phi, float *d, int m)
{
    float pdf[GELU_BLK];
    normal_cdf_blk(x, phi, m);
    for (int j = 0; j < m; j++) pdf[j] = INV_SQRT2PI * al__expf(-0.5f * x[j] * x[j]);
    for (int j = 0; j < m; j++) d[j] = phi[j] + x[j] * pdf[j];
}

static void act_backward(al_ctx *c, void *p)
{
    act_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy || !nd->x->requires_grad) return;
    int fresh = 0;                                 /* dx not allocated yet: store (=), no zeroing */
    float *dx = nd->kind == ACT_ELU ? al_grad(c, nd->x) : al_grad_for_write(c, nd->x, &fresh); /* ELU: += */
    if (!dx) return;
    const float *x = nd->x->data, *y = nd->y->data;
    const int64_t n = nd->x->numel; const float a = nd->a;
#define ACC(i, v) (dx[i] = fresh ? (v) : dx[i] + (v))   /* loop-invariant test: unswitched by -O3 */
    switch (nd->kind) {
    case ACT_RELU:
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) ACC(i, x[i] > 0.f ? dy[i] : 0.f);
        break;
    case ACT_LEAKY:
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) ACC(i, x[i] > 0.f ? dy[i] : a * dy[i]);
        break;
    case ACT_ELU:   /* x ≤ 0: d/dx α(eˣ − 1) = αeˣ = y + α */
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) dx[i] += x[i] > 0.f ? dy[i] : dy[i] * (y[i] + a);
        break;
    case ACT_GELU: {  /* d/dx x·Φ(x) = Φ(x) + x·φ(x); in blocks (normal_cdf_blk) */
        const int64_t nb = (n + GELU_BLK - 1) / GELU_BLK;
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN / 8)")
        for (int64_t b = 0; b < nb; b++) {
            const int64_t i0 = b * GELU_BLK;
            const int m = (int)(n - i0 < GELU_BLK ? n - i0 : GELU_BLK);
            float phi[GELU_BLK], d[GELU_BLK];
            gelu_deriv_blk(x + i0, phi, d, m);
            for (int j = 0; j < m; j++) ACC(i0 + j, dy[i0 + j] * d[j]);
        }
        break;
    }
    }
}
#undef ACC

/* y = x·Φ(x) over n elements in blocks of GELU_BLK, on the calling thread; y may be x (each block's Φ is
 * taken before its y is written). */
void al__gelu_seg(const float *xd, float *yd, int64_t n)
{
    for (int64_t i0 = 0; i0 < n; i0 += GELU_BLK) {
        const int m = (int)(n - i0 < GELU_BLK ? n - i0 : GELU_BLK);
        float phi[GELU_BLK];
        normal_cdf_blk(xd + i0, phi, m);
        for (int j = 0; j < m; j++) yd[i0 + j] = xd[i0 + j] * phi[j];
    }
}

/* y = x·Φ(x) as al__gelu_seg, then x ← Φ(x) + x·φ(x), the derivative act_backward's GELU case computes
 * (the same expressions, so the same bits); on the calling thread. */
void al__gelu_saved_seg(float *xd, float *yd, int64_t n)
{
    for (int64_t i0 = 0; i0 < n; i0 += GELU_BLK) {
        const int m = (int)(n - i0 < GELU_BLK ? n - i0 : GELU_BLK);
        float phi[GELU_BLK], d[GELU_BLK];
        gelu_deriv_blk(xd + i0, phi, d, m);
        for (int j = 0; j < m; j++) yd[i0 + j] = xd[i0 + j] * phi[j];
        memcpy(xd + i0, d, (size_t)m * sizeof(float));
    }
}

static void gelu_fwd(const float *xd, float *yd, int64_t n)
{
    const int64_t nb = (n + GELU_BLK - 1) / GELU_BLK;
    AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN / 4)")
    for (int64_t b = 0; b < nb; b++) {
        const int64_t i0 = b * GELU_BLK;
        al__gelu_seg(xd + i0, yd + i0, n - i0 < GELU_BLK ? n - i0 : GELU_BLK);
    }
}

static al_tensor *activation(al_ctx *c, al_tensor *x, act_kind kind, float a)
{
    if (!x || !al_ok(c)) return NULL;
    al_tensor *y = al_new(c, x->ndim, x->shape);
    if (!y) return NULL;
    const float *xd = x->data; float *yd = y->data;
    const int64_t n = x->numel;
    switch (kind) {
    case ACT_RELU:
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) yd[i] = xd[i] > 0.f ? xd[i] : 0.f;
        break;
    case ACT_LEAKY:
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
        for (int64_t i = 0; i < n; i++) yd[i] = xd[i] > 0.f ? xd[i] : a * xd[i];
        break;
    case ACT_ELU:
        AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN / 8)")
        for (int64_t i = 0; i < n; i++) yd[i] = xd[i] > 0.f ? xd[i] : a * al__expm1_neg(xd[i]);
        break;
    case ACT_GELU:  /* exact form x·Φ(x) = ½x(1 + erf(x/√2)); Φ from normal_cdf (rel. err ~1e-7) */
        gelu_fwd(xd, yd, n);
        break;
    }
    if (al__wants_grad(c, x)) {
        act_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->kind = kind; nd->a = a; }
        if (!al__record(c, y, act_backward, nd)) return NULL;
    }
    return y;
}
al_tensor *al_relu(al_ctx *c, al_tensor *x) { return activation(c, x, ACT_RELU, 0.f); }
al_tensor *al_leaky_relu(al_ctx *c, al_tensor *x, float slope) { return activation(c, x, ACT_LEAKY, slope); }
al_tensor *al_elu(al_ctx *c, al_tensor *x, float alpha) { return activation(c, x, ACT_ELU, alpha); }
al_tensor *al_gelu(al_ctx *c, al_tensor *x) { return activation(c, x, ACT_GELU, 0.f); }

/* ======================= dropout ======================= */
typedef struct { al_tensor *x, *y; uint8_t *keep; float scale; } drop_node;   /* keep (numel) */

static void dropout_backward(al_ctx *c, void *p)
{
    drop_node *nd = p;
    const float *dy = nd->y->grad;
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);
    if (!dx) return;
    const int64_t n = nd->x->numel; const float s = nd->scale;
    const uint8_t *k = nd->keep;
    AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
    for (int64_t i = 0; i < n; i++) dx[i] += k[i] ? s * dy[i] : 0.f;
}

al_tensor *al_dropout(al_ctx *c, al_tensor *x, float p)
{
    if (!x || !al_ok(c)) return NULL;
    if (!(p >= 0.f && p < 1.f)) return al_fail(c, "dropout: p must be in [0, 1), got %g", (double)p);
    if (!c->training || p == 0.f) return x;             /* identity: no copy, no tape entry */
    al_tensor *y = al_new(c, x->ndim, x->shape);
    const int64_t n = x->numel;
    uint8_t *keep = al_arena_alloc(&c->arena, (size_t)n);   /* (numel) 1 = kept */
    if (!y || !keep) return al_fail(c, "out of memory (arena) in dropout");
    /* Element i is dropped when a uniform 24-bit number u falls below p·2²⁴ (u·2⁻²⁴ < p, as
     * al_rng_uniform would give). Each 64-bit draw yields two such numbers (bits 40..63 for an
     * even i, bits 8..31 for the next odd i), taken in index order from c->dropout_rng: the
     * mask depends only on the RNG state, not on threads, and costs half a draw per element. */
    const uint64_t thr = (uint64_t)ceil((double)p * 16777216.0);
    int64_t i = 0;
    for (; i + 2 <= n; i += 2) {
        uint64_t u = al_rng_u64(&c->dropout_rng);
        keep[i] = (u >> 40) >= thr;
        keep[i + 1] = ((u >> 8) & 0xFFFFFFu) >= thr;
    }
    if (i < n) keep[i] = (al_rng_u64(&c->dropout_rng) >> 40) >= thr;
    const float s = 1.0f / (1.0f - p);
    const float *xd = x->data; float *yd = y->data;
    AL_OMP("omp parallel for schedule(static) if (n >= AL_PAR_MIN)")
    for (int64_t i = 0; i < n; i++) yd[i] = keep[i] ? s * xd[i] : 0.f;
    if (al__wants_grad(c, x)) {
        drop_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->x = x; nd->y = y; nd->keep = keep; nd->scale = s; }
        if (!al__record(c, y, dropout_backward, nd)) return NULL;
    }
    return y;
}
