/* norm.c — row-wise softmax, log-softmax and layernorm kernels, each with a naive
 * double-precision reference (suffix _ref) that the tests compare against.
 *
 * Rows are independent: OpenMP splits them statically, so each thread owns its output rows
 * and the result does not depend on the thread count. Inner loops are written over 16 fixed
 * lanes (plain C, no intrinsics) so that gcc vectorises them without -ffast-math: the lane
 * structure fixes the order of the float additions, so a vector build and a scalar build
 * (PORTABLE=1) give the same bits. exp is a Cephes-style polynomial (≈1 ulp on the range
 * softmax uses) that vectorises; libm's expf does not without -ffast-math.
 */
#include "attnlab/kernels.h"
#include "core/exp_impl.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

#define LANES 16
/* Parallelise only when a call has enough work to pay for the fork/join: AL_PAR_MIN / 2 floats
 * (each costs an exp or two passes, about twice a plain multiply-add). */


static inline float row_max(const float *x, int n)
{
    float acc[LANES];
    for (int j = 0; j < LANES; j++) acc[j] = -INFINITY;
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j];
    for (int j = 0; i < n; i++, j++) acc[j] = x[i] > acc[j] ? x[i] : acc[j];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] = acc[j + w] > acc[j] ? acc[j + w] : acc[j];
    return acc[0];
}

static inline float row_sum(const float *x, int n)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) acc[j] += x[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += x[i];
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

/* Σ (x_i − m)² */
static inline float row_sqdev(const float *x, float m, int n)
{
    float acc[LANES] = {0};
    int i = 0;
    for (; i + LANES <= n; i += LANES)
        for (int j = 0; j < LANES; j++) { float d = x[i + j] - m; acc[j] += d * d; }
    for (int j = 0; i < n; i++, j++) { float d = x[i] - m; acc[j] += d * d; }
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++) acc[j] += acc[j + w];
    return acc[0];
}

/* y = exp(x − m), returns Σ y. y may alias x. */
static inline float row_exp_sum(const float *x, float *y, float m, int n)
{
    for (int i = 0; i < n; i++) y[i] = al__expf(x[i] - m);
    return row_sum(y, n);
}

/* ---------------- softmax ---------------- */
void al_softmax_rows(const float *x /* (rows, n) */, float *y /* (rows, n) */, int64_t rows, int n)
{
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float m = row_max(xr, n);
        float s = row_exp_sum(xr, yr, m, n);
        float inv = 1.0f / s;
        for (int i = 0; i < n; i++) yr[i] *= inv;
    }
}

void al_softmax_rows_ref(const float *x, float *y, int64_t rows, int n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double m = -INFINITY, s = 0;
        for (int i = 0; i < n; i++) if (xr[i] > m) m = xr[i];
        for (int i = 0; i < n; i++) s += exp((double)xr[i] - m);
        for (int i = 0; i < n; i++) y[r * n + i] = (float)(exp((double)xr[i] - m) / s);
    }
}

/* ---------------- log-softmax ---------------- */
void al_log_softmax_rows(const float *x /* (rows, n) */, float *y /* (rows, n) */, int64_t rows, int n)
{
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        float *yr = y + r * n;
        float m = row_max(xr, n);
        float s = row_exp_sum(xr, yr, m, n);            /* y holds exp temporarily */
        float lse = m + logf(s);
        for (int i = 0; i < n; i++) yr[i] = xr[i] - lse;
    }
}

void al_log_softmax_rows_ref(const float *x, float *y, int64_t rows, int n)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double m = -INFINITY, s = 0;
        for (int i = 0; i < n; i++) if (xr[i] > m) m = xr[i];
        for (int i = 0; i < n; i++) s += exp((double)xr[i] - m);
        double lse = m + log(s);
        for (int i = 0; i < n; i++) y[r * n + i] = (float)((double)xr[i] - lse);
    }
}

/* ---------------- layernorm ---------------- */
/* One row: y = (x − mean)·rstd·γ + β, two-pass variance; mean and rstd stored when asked. */
static inline void ln_row(const float *xr /* (n) */, const float *gamma /* (n) or NULL */, const float *beta /* (n) or NULL */,
                          float *yr /* (n) */, float *mean, float *rstd, int n, float inv_n, float eps)
{
    float m = row_sum(xr, n) * inv_n;
    float rs = 1.0f / sqrtf(row_sqdev(xr, m, n) * inv_n + eps);   /* two-pass variance */
    if (mean) *mean = m;
    if (rstd) *rstd = rs;
    if (gamma && beta)
        for (int i = 0; i < n; i++) yr[i] = (xr[i] - m) * rs * gamma[i] + beta[i];
    else
        for (int i = 0; i < n; i++) {
            float v = (xr[i] - m) * rs;
            if (gamma) v *= gamma[i];
            if (beta) v += beta[i];
            yr[i] = v;
        }
}

void al_layernorm_rows(const float *x /* (rows, n) */, const float *gamma /* (n) or NULL */,
                       const float *beta /* (n) or NULL */, float *y /* (rows, n) */,
                       float *mean /* (rows) or NULL */, float *rstd /* (rows) or NULL */,
                       int64_t rows, int n, float eps)
{
    const float inv_n = 1.0f / (float)n;
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t r = 0; r < rows; r++)
        ln_row(x + r * n, gamma, beta, y + r * n, mean ? mean + r : NULL, rstd ? rstd + r : NULL, n, inv_n, eps);
}

/* s = a + b, then y = layernorm(s), row by row: the row is normalised while it is still in L1. The
 * same operations as al_layernorm_rows on a finished s, so the same bits. */
void al_add_layernorm_rows(const float *a /* (rows, n) */, const float *b /* (rows, n) */, float *s /* (rows, n) */,
                           const float *gamma /* (n) or NULL */, const float *beta /* (n) or NULL */, float *y /* (rows, n) */,
                           float *mean /* (rows) or NULL */, float *rstd /* (rows) or NULL */, int64_t rows, int n, float eps)
{
    const float inv_n = 1.0f / (float)n;
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t r = 0; r < rows; r++) {
        const float *ar = a + r * n, *br = b + r * n;
        float *sr = s + r * n;
        for (int i = 0; i < n; i++) sr[i] = ar[i] + br[i];
        ln_row(sr, gamma, beta, y + r * n, mean ? mean + r : NULL, rstd ? rstd + r : NULL, n, inv_n, eps);
    }
}

void al_layernorm_rows_ref(const float *x, const float *gamma, const float *beta, float *y,
                           float *mean, float *rstd, int64_t rows, int n, float eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * n;
        double m = 0, v = 0;
        for (int i = 0; i < n; i++) m += xr[i];
        m /= n;
        for (int i = 0; i < n; i++) v += ((double)xr[i] - m) * ((double)xr[i] - m);
        v /= n;
        double rs = 1.0 / sqrt(v + (double)eps);
        if (mean) mean[r] = (float)m;
        if (rstd) rstd[r] = (float)rs;
        for (int i = 0; i < n; i++) {
            double o = ((double)xr[i] - m) * rs;
            if (gamma) o *= gamma[i];
            if (beta) o += beta[i];
            y[r * n + i] = (float)o;
        }
    }
}
