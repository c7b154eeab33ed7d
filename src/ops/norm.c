/* ops_norm.c — layernorm, softmax, log-softmax and cross-entropy over the last dimension,
 * each forward beside its hand-written backward (derivations in docs/backward.md).
 *
 * The row kernels live in kernels_norm.c. Backward passes are parallel over rows (each thread
 * owns its rows of dx); layernorm's dgamma/dbeta are summed per fixed chunk of rows and the
 * chunk partials reduced in chunk order, so results do not depend on the thread count.
 */
#include "attnlab/ops.h"
#include "core/omp_impl.h"
#include "ops_impl.h"
#include "attnlab/kernels.h"
#include <math.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#define LANES 16
#define PAR_MIN 20000   /* floats of work below which a loop stays serial */

/* Σ a_i·b_i with 16 fixed lanes (vectorisable, order independent of the build). */
static inline float dot_lanes(const float *a, const float *b, int n)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += a[i + j] * b[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += a[i] * b[i];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}
static inline float sum_lanes(const float *a, int n)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += a[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += a[i];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

static void *scratch(al_ctx *c, int64_t nfloats)
{
    void *p = al_arena_alloc(&c->arena, (size_t)nfloats * sizeof(float));
    if (!p) al_fail(c, "out of memory (arena) for %lld floats of scratch", (long long)nfloats);
    return p;
}

/* ======================= layernorm ======================= */
typedef struct {
    al_tensor *x, *gamma, *beta, *y;   /* x, y (..., C); gamma, beta (C) or NULL */
    float *mean, *rstd;                /* (rows) */
    int64_t rows; int n;
} ln_node;

#define LN_CHUNKS 64   /* fixed row chunks for the dgamma/dbeta partial sums */

#if defined(__AVX512F__)
/* acc[0] after the lane tree of dot_lanes / sum_lanes (acc[j] += acc[j + w], w = 8, 4, 2, 1). */
static inline float lane_tree16(__m512 v)
{
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
    __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    q = _mm_add_ps(q, _mm_movehl_ps(q, q));
    q = _mm_add_ss(q, _mm_shuffle_ps(q, q, 1));
    return _mm_cvtss_f32(q);
}

/* One row of layernorm_backward when C is a multiple of 16, fused: x̂ is computed in registers (not stored
 * and re-read), the dgamma/dbeta partials, the two row sums and dx in two sweeps. Every value is the scalar
 * loops' expression with the same roundings (mul then add: ISO C mode does not contract), and the row sums
 * add their 16 lanes in the same tree, so the bits are the same. */
static void ln_bwd_row16(const float *xr, const float *dyr, const float *gamma, float m, float rs, float inv_n, int n,
                         float *pgc, float *pbc, float *dxr, int fresh)
{
    const __m512 mv = _mm512_set1_ps(m), rv = _mm512_set1_ps(rs);
    __m512 aa = _mm512_setzero_ps(), ab = _mm512_setzero_ps();
    for (int i = 0; i < n; i += LANES) {
        const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + i), mv), rv), d = _mm512_loadu_ps(dyr + i);
        if (pgc) {
            _mm512_storeu_ps(pgc + i, _mm512_add_ps(_mm512_loadu_ps(pgc + i), _mm512_mul_ps(d, xh)));
            _mm512_storeu_ps(pbc + i, _mm512_add_ps(_mm512_loadu_ps(pbc + i), d));
        }
        if (dxr) {
            const __m512 g = gamma ? _mm512_mul_ps(d, _mm512_loadu_ps(gamma + i)) : d;
            aa = _mm512_add_ps(aa, g);
            ab = _mm512_add_ps(ab, _mm512_mul_ps(g, xh));
        }
    }
    if (!dxr) return;
    const __m512 av = _mm512_set1_ps(lane_tree16(aa) * inv_n), bv = _mm512_set1_ps(lane_tree16(ab) * inv_n);
    for (int i = 0; i < n; i += LANES) {
        const __m512 xh = _mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + i), mv), rv), d = _mm512_loadu_ps(dyr + i);
        const __m512 g = gamma ? _mm512_mul_ps(d, _mm512_loadu_ps(gamma + i)) : d;
        const __m512 v = _mm512_mul_ps(rv, _mm512_sub_ps(_mm512_sub_ps(g, av), _mm512_mul_ps(xh, bv)));
        _mm512_storeu_ps(dxr + i, fresh ? v : _mm512_add_ps(_mm512_loadu_ps(dxr + i), v));
    }
}
#endif

static void layernorm_backward(al_ctx *c, void *p)
{
    ln_node *nd = p;
    const float *dy = nd->y->grad;                        /* (rows, C) */
    if (!dy) return;
    const int64_t rows = nd->rows; const int n = nd->n;
    const float *x = nd->x->data;                         /* (rows, C) */
    const float *gamma = nd->gamma ? nd->gamma->data : NULL;   /* (C) */
    int fresh = 0;                                        /* dx not yet allocated: store, don't add */
    float *dx = nd->x->requires_grad ? al_grad_for_write(c, nd->x, &fresh) : NULL; /* (rows, C) */
    float *dg = nd->gamma && nd->gamma->requires_grad ? al_grad(c, nd->gamma) : NULL; /* (C) */
    float *db = nd->beta && nd->beta->requires_grad ? al_grad(c, nd->beta) : NULL;    /* (C) */
    if (!al_ok(c)) return;
    const int64_t nch = rows < LN_CHUNKS ? rows : LN_CHUNKS;
    float *pg = NULL, *pb = NULL;                         /* (nch, C) partials */
    if (dg || db) {
        pg = scratch(c, nch * n); pb = scratch(c, nch * n);
        if (!pg || !pb) return;
    }
    float *xh = scratch(c, nch * n);                      /* (nch, C) one x̂ row per chunk */
    if (!xh) return;
    const float inv_n = 1.0f / (float)n;
    AL_OMP("omp parallel for schedule(static) if (rows * n >= PAR_MIN && nch > 1)")
    for (int64_t ch = 0; ch < nch; ch++) {
        int64_t r0 = rows * ch / nch, r1 = rows * (ch + 1) / nch;
        float *xhr = xh + ch * n;
        float *pgc = pg ? pg + ch * n : NULL, *pbc = pb ? pb + ch * n : NULL;
        if (pgc) { memset(pgc, 0, (size_t)n * sizeof(float)); memset(pbc, 0, (size_t)n * sizeof(float)); }
        for (int64_t r = r0; r < r1; r++) {
            const float *xr = x + r * n, *dyr = dy + r * n;
            const float m = nd->mean[r], rs = nd->rstd[r];
#if defined(__AVX512F__)
            if (n % LANES == 0) {
                ln_bwd_row16(xr, dyr, gamma, m, rs, inv_n, n, pgc, pbc, dx ? dx + r * n : NULL, fresh);
                continue;
            }
#endif
            for (int i = 0; i < n; i++) xhr[i] = (xr[i] - m) * rs;
            if (pgc)
                for (int i = 0; i < n; i++) { pgc[i] += dyr[i] * xhr[i]; pbc[i] += dyr[i]; }
            if (dx) {
                /* g = dy·γ;  dx = rstd·(g − mean(g) − x̂·mean(g·x̂)) */
                float *dxr = dx + r * n;
                float a, b;
                if (gamma) {
                    float acc_a[LANES] = {0}, acc_b[LANES] = {0};
                    int i = 0;
                    for (; i + LANES <= n; i += LANES)
                        for (int j = 0; j < LANES; j++) {
                            float g = dyr[i + j] * gamma[i + j];
                            acc_a[j] += g; acc_b[j] += g * xhr[i + j];
                        }
                    for (int j = 0; i < n; i++, j++) { float g = dyr[i] * gamma[i]; acc_a[j] += g; acc_b[j] += g * xhr[i]; }
                    for (int w = LANES / 2; w > 0; w /= 2)
                        for (int j = 0; j < w; j++) { acc_a[j] += acc_a[j + w]; acc_b[j] += acc_b[j + w]; }
                    a = acc_a[0] * inv_n; b = acc_b[0] * inv_n;
                    if (fresh) for (int i = 0; i < n; i++) dxr[i] = rs * (dyr[i] * gamma[i] - a - xhr[i] * b);
                    else for (int i = 0; i < n; i++) dxr[i] += rs * (dyr[i] * gamma[i] - a - xhr[i] * b);
                } else {
                    a = sum_lanes(dyr, n) * inv_n; b = dot_lanes(dyr, xhr, n) * inv_n;
                    if (fresh) for (int i = 0; i < n; i++) dxr[i] = rs * (dyr[i] - a - xhr[i] * b);
                    else for (int i = 0; i < n; i++) dxr[i] += rs * (dyr[i] - a - xhr[i] * b);
                }
            }
        }
    }
    if (pg) {
        AL_OMP("omp parallel for schedule(static) if (nch * n >= PAR_MIN)")
        for (int i = 0; i < n; i++) {
            float sg = 0, sb = 0;
            for (int64_t ch = 0; ch < nch; ch++) { sg += pg[ch * n + i]; sb += pb[ch * n + i]; }
            if (dg) dg[i] += sg;
            if (db) db[i] += sb;
        }
    }
}

static al_tensor *ln_check(al_ctx *c, const char *op, al_tensor *x, al_tensor *gamma, al_tensor *beta, float eps)
{
    char b1[64], b2[64];
    const int n = x->shape[x->ndim - 1];
    if (gamma && !(gamma->ndim == 1 && gamma->shape[0] == n))
        return al_fail(c, "%s: gamma %s must be (%d) for x %s", op, al_shape_str(gamma, b1, sizeof b1), n, al_shape_str(x, b2, sizeof b2));
    if (beta && !(beta->ndim == 1 && beta->shape[0] == n))
        return al_fail(c, "%s: beta %s must be (%d) for x %s", op, al_shape_str(beta, b1, sizeof b1), n, al_shape_str(x, b2, sizeof b2));
    if (!(eps >= 0.f))
        return al_fail(c, "%s: eps must be >= 0, got %g", op, (double)eps);
    return x;
}

static int ln_record(al_ctx *c, al_tensor *x, al_tensor *gamma, al_tensor *beta, al_tensor *y, float *mean, float *rstd)
{
    if (!(c->grad_enabled && (x->requires_grad || (gamma && gamma->requires_grad) || (beta && beta->requires_grad)))) return 1;
    ln_node *nd = al__node_new(c, sizeof *nd);
    if (!nd) return 0;
    nd->x = x; nd->gamma = gamma; nd->beta = beta; nd->y = y;
    nd->mean = mean; nd->rstd = rstd; nd->rows = x->numel / x->shape[x->ndim - 1]; nd->n = x->shape[x->ndim - 1];
    y->requires_grad = 1;
    al_tape_push_out(c, layernorm_backward, nd, y);
    return al_ok(c);
}

al_tensor *al_layernorm(al_ctx *c, al_tensor *x, al_tensor *gamma, al_tensor *beta, float eps)
{
    if (!x || !al_ok(c) || !ln_check(c, "layernorm", x, gamma, beta, eps)) return NULL;
    const int n = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / n;
    al_tensor *y = al_new(c, x->ndim, x->shape);                /* (..., C) */
    float *mean = scratch(c, rows), *rstd = scratch(c, rows);   /* (rows) */
    if (!y || !mean || !rstd) return NULL;
    al_layernorm_rows(x->data, gamma ? gamma->data : NULL, beta ? beta->data : NULL, y->data,
                      mean, rstd, rows, n, eps);
    return ln_record(c, x, gamma, beta, y, mean, rstd) ? y : NULL;
}

al_tensor *al_add_layernorm(al_ctx *c, al_tensor *a, al_tensor *b, al_tensor *gamma, al_tensor *beta, float eps,
                            al_tensor **sum)
{
    *sum = NULL;
    if (!a || !b || !al_ok(c)) return NULL;
    if (!al_same_shape(a, b)) {
        char b1[64], b2[64];
        return al_fail(c, "add_layernorm: shapes differ: %s vs %s", al_shape_str(a, b1, sizeof b1), al_shape_str(b, b2, sizeof b2));
    }
    if (!ln_check(c, "add_layernorm", a, gamma, beta, eps)) return NULL;
    const int n = a->shape[a->ndim - 1];
    const int64_t rows = a->numel / n;
    al_tensor *s = al_new(c, a->ndim, a->shape);                /* (..., C) the sum */
    if (!s) return NULL;
    /* the sum's tape entry first, as al_add would push it: the backward runs in the same order */
    if (!al__add_record(c, a, b, s)) return NULL;
    al_tensor *y = al_new(c, a->ndim, a->shape);                /* (..., C) */
    float *mean = scratch(c, rows), *rstd = scratch(c, rows);   /* (rows) */
    if (!y || !mean || !rstd) return NULL;
    al_add_layernorm_rows(a->data, b->data, s->data, gamma ? gamma->data : NULL, beta ? beta->data : NULL, y->data,
                          mean, rstd, rows, n, eps);
    if (!ln_record(c, s, gamma, beta, y, mean, rstd)) return NULL;
    *sum = s;
    return y;
}

/* ======================= softmax / log-softmax ======================= */
typedef struct { al_tensor *x, *y; int64_t rows; int n; } sm_node;   /* x, y (..., n) */

static void softmax_backward(al_ctx *c, void *p)
{
    sm_node *nd = p;
    const float *dy = nd->y->grad, *y = nd->y->data;     /* (rows, n) */
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);                       /* (rows, n) */
    if (!dx) return;
    const int64_t rows = nd->rows; const int n = nd->n;
    /* dx = y ⊙ (dy − Σ dy⊙y) */
    AL_OMP("omp parallel for schedule(static) if (rows * n >= PAR_MIN && rows > 1)")
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * n, *dyr = dy + r * n;
        float *dxr = dx + r * n;
        float s = dot_lanes(dyr, yr, n);
        for (int i = 0; i < n; i++) dxr[i] += yr[i] * (dyr[i] - s);
    }
}

static void log_softmax_backward(al_ctx *c, void *p)
{
    sm_node *nd = p;
    const float *dy = nd->y->grad, *y = nd->y->data;     /* (rows, n) */
    if (!dy || !nd->x->requires_grad) return;
    float *dx = al_grad(c, nd->x);                       /* (rows, n) */
    if (!dx) return;
    const int64_t rows = nd->rows; const int n = nd->n;
    float *sm = scratch(c, rows * n);                    /* (rows, n) softmax = exp(y) */
    if (!sm) return;
    al_softmax_rows(y, sm, rows, n);                     /* softmax(log-softmax(x)) = softmax(x) */
    /* dx = dy − softmax ⊙ Σ dy */
    AL_OMP("omp parallel for schedule(static) if (rows * n >= PAR_MIN && rows > 1)")
    for (int64_t r = 0; r < rows; r++) {
        const float *dyr = dy + r * n, *pr = sm + r * n;
        float *dxr = dx + r * n;
        float s = sum_lanes(dyr, n);
        for (int i = 0; i < n; i++) dxr[i] += dyr[i] - pr[i] * s;
    }
}

static al_tensor *softmax_common(al_ctx *c, al_tensor *x, int log)
{
    if (!x || !al_ok(c)) return NULL;
    const int n = x->shape[x->ndim - 1];
    const int64_t rows = x->numel / n;
    al_tensor *y = al_new(c, x->ndim, x->shape);         /* (..., n) */
    if (!y) return NULL;
    if (log) al_log_softmax_rows(x->data, y->data, rows, n);
    else     al_softmax_rows(x->data, y->data, rows, n);
    if (c->grad_enabled && x->requires_grad) {
        sm_node *nd = al__node_new(c, sizeof *nd);
        if (!nd) return NULL;
        nd->x = x; nd->y = y; nd->rows = rows; nd->n = n;
        y->requires_grad = 1;
        al_tape_push_out(c, log ? log_softmax_backward : softmax_backward, nd, y);
    }
    return y;
}
al_tensor *al_softmax(al_ctx *c, al_tensor *x) { return softmax_common(c, x, 0); }
al_tensor *al_log_softmax(al_ctx *c, al_tensor *x) { return softmax_common(c, x, 1); }

/* ======================= cross-entropy ======================= */
typedef struct {
    al_tensor *logits, *loss;   /* logits (B, C); loss (1) */
    float *logp;                /* (B, C) log-softmax of logits */
    int *labels;                /* (B) copy */
    uint8_t *mask;              /* (B) copy or NULL */
    int B, C; int64_t count;
} ce_node;

static void cross_entropy_backward(al_ctx *c, void *p)
{
    ce_node *nd = p;
    if (!nd->loss->grad || !nd->logits->requires_grad || nd->count == 0) return;
    const float scale = nd->loss->grad[0] / (float)nd->count;
    float *dx = al_grad(c, nd->logits);                  /* (B, C) */
    float *sm = scratch(c, (int64_t)nd->B * nd->C);      /* (B, C) softmax */
    if (!dx || !sm) return;
    const int B = nd->B, C = nd->C;
    al_softmax_rows(nd->logp, sm, B, C);
    /* dlogits = (softmax − onehot(label)) · dL / count, on counted rows only */
    AL_OMP("omp parallel for schedule(static) if ((int64_t)B * C >= PAR_MIN && B > 1)")
    for (int r = 0; r < B; r++) {
        if (nd->mask && !nd->mask[r]) continue;
        const float *pr = sm + (int64_t)r * C;
        float *dxr = dx + (int64_t)r * C;
        for (int i = 0; i < C; i++) dxr[i] += scale * pr[i];
        dxr[nd->labels[r]] -= scale;
    }
}

al_tensor *al_cross_entropy(al_ctx *c, al_tensor *logits, const int *labels, const uint8_t *mask)
{
    if (!logits || !al_ok(c)) return NULL;
    char b1[64];
    if (logits->ndim != 2)
        return al_fail(c, "cross_entropy: logits must be (B, C), got %s", al_shape_str(logits, b1, sizeof b1));
    if (!labels) return al_fail(c, "cross_entropy: labels is NULL");
    const int B = logits->shape[0], C = logits->shape[1];
    int64_t count = 0;
    for (int r = 0; r < B; r++) {                        /* labels of masked-out rows are not read */
        if (mask && !mask[r]) continue;
        if (labels[r] < 0 || labels[r] >= C)
            return al_fail(c, "cross_entropy: label %d of row %d is out of range [0, %d) for logits %s",
                           labels[r], r, C, al_shape_str(logits, b1, sizeof b1));
        count++;
    }
    al_tensor *loss = al_new(c, 1, (int[]){1});          /* (1) */
    float *logp = scratch(c, (int64_t)B * C);            /* (B, C) */
    if (!loss || !logp) return NULL;
    al_log_softmax_rows(logits->data, logp, B, C);
    double s = 0;                                        /* fixed row order: deterministic */
    for (int r = 0; r < B; r++)
        if (!mask || mask[r]) s -= logp[(int64_t)r * C + labels[r]];
    loss->data[0] = count ? (float)(s / (double)count) : 0.0f;
    if (c->grad_enabled && logits->requires_grad) {
        ce_node *nd = al__node_new(c, sizeof *nd);
        int *lab = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
        uint8_t *mk = mask ? al_arena_alloc(&c->arena, (size_t)B) : NULL;
        if (!nd || !lab || (mask && !mk)) return al_fail(c, "out of memory (arena) in cross_entropy");
        memcpy(lab, labels, (size_t)B * sizeof(int));
        if (mask) memcpy(mk, mask, (size_t)B);
        nd->logits = logits; nd->loss = loss; nd->logp = logp; nd->labels = lab; nd->mask = mk;
        nd->B = B; nd->C = C; nd->count = count;
        loss->requires_grad = 1;
        al_tape_push(c, cross_entropy_backward, nd);
    }
    return loss;
}
