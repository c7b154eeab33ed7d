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
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

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
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1 && !al__in_parallel())")
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

#if defined(__AVX512F__)
/* The lane sums of ln_row for 16 rows at once: a[r] holds row r's 16 lane accumulators; returns
 * the 16 row totals, each added in row_sum's tree (lane j + lane j+8, then j+4, j+2, j+1), the
 * trees of the 16 rows interleaved by shuffles instead of one after the other. */
static inline __m512 lane_trees16(const __m512 a[16])
{
    __m512 c[8], e[4], f[2];
    for (int k = 0; k < 8; k++)   /* lanes 0-7: row 2k's j + j+8; lanes 8-15: row 2k+1's */
        c[k] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x44), _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xee));
    for (int k = 0; k < 4; k++)   /* 128-bit lane L: row 4k + L's j + j+4 */
        e[k] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * k], c[2 * k + 1], 0x88), _mm512_shuffle_f32x4(c[2 * k], c[2 * k + 1], 0xdd));
    for (int k = 0; k < 2; k++)   /* lane L, elements 0-1: row 8k + L's j + j+2; elements 2-3: row 8k + 4 + L's */
        f[k] = _mm512_add_ps(_mm512_shuffle_ps(e[2 * k], e[2 * k + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm512_shuffle_ps(e[2 * k], e[2 * k + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    /* lane L, element t: row 4t + L's total */
    const __m512 g = _mm512_add_ps(_mm512_shuffle_ps(f[0], f[1], _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(f[0], f[1], _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i to_rows = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(to_rows, g);   /* row r's total in lane r */
}

/* ln_row for 16 rows of n (a multiple of 16) floats with γ and β: the same operations in the same
 * order, row by row (sum, two-pass variance, 1/√ and the affine map), so the same bits. */
static void ln_rows16(const float *x /* (16, n) */, const float *gamma, const float *beta, float *y /* (16, n) */,
                      float *mean /* (16) or NULL */, float *rstd /* (16) or NULL */, int n, float inv_n, float eps)
{
    __m512 a[16];
    for (int r = 0; r < 16; r++) {
        __m512 acc = _mm512_setzero_ps();
        for (int i = 0; i < n; i += LANES) acc = _mm512_add_ps(acc, _mm512_loadu_ps(x + (int64_t)r * n + i));
        a[r] = acc;
    }
    const __m512 mv = _mm512_mul_ps(lane_trees16(a), _mm512_set1_ps(inv_n));
    float m[16], rs[16];
    _mm512_storeu_ps(m, mv);
    for (int r = 0; r < 16; r++) {
        const __m512 mr = _mm512_set1_ps(m[r]);
        __m512 acc = _mm512_setzero_ps();
        for (int i = 0; i < n; i += LANES) {
            const __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + (int64_t)r * n + i), mr);
            acc = _mm512_add_ps(acc, _mm512_mul_ps(d, d));
        }
        a[r] = acc;
    }
    const __m512 var = _mm512_add_ps(_mm512_mul_ps(lane_trees16(a), _mm512_set1_ps(inv_n)), _mm512_set1_ps(eps));
    const __m512 rsv = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_sqrt_ps(var));
    _mm512_storeu_ps(rs, rsv);
    if (mean) _mm512_storeu_ps(mean, mv);
    if (rstd) _mm512_storeu_ps(rstd, rsv);
    for (int r = 0; r < 16; r++) {
        const __m512 mr = _mm512_set1_ps(m[r]), rr = _mm512_set1_ps(rs[r]);
        for (int i = 0; i < n; i += LANES) {
            const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_sub_ps(_mm512_loadu_ps(x + (int64_t)r * n + i), mr), rr), _mm512_loadu_ps(gamma + i));
            _mm512_storeu_ps(y + (int64_t)r * n + i, _mm512_add_ps(v, _mm512_loadu_ps(beta + i)));
        }
    }
}
#endif

/* ln_row over rows [r0, r1): sixteen rows at a time where ln_rows16 applies, the rest one by one. */
static void ln_range(const float *x, const float *gamma, const float *beta, float *y, float *mean, float *rstd, int64_t r0, int64_t r1,
                     int n, float inv_n, float eps)
{
    int64_t r = r0;
#if defined(__AVX512F__)
    if (gamma && beta && n % LANES == 0)
        for (; r + 16 <= r1; r += 16)
            ln_rows16(x + r * n, gamma, beta, y + r * n, mean ? mean + r : NULL, rstd ? rstd + r : NULL, n, inv_n, eps);
#endif
    for (; r < r1; r++)
        ln_row(x + r * n, gamma, beta, y + r * n, mean ? mean + r : NULL, rstd ? rstd + r : NULL, n, inv_n, eps);
}

void al_layernorm_rows(const float *x /* (rows, n) */, const float *gamma /* (n) or NULL */,
                       const float *beta /* (n) or NULL */, float *y /* (rows, n) */,
                       float *mean /* (rows) or NULL */, float *rstd /* (rows) or NULL */,
                       int64_t rows, int n, float eps)
{
    const float inv_n = 1.0f / (float)n;
    const int64_t ng = (rows + 15) / 16;   /* groups of 16 rows, split statically */
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t gi = 0; gi < ng; gi++)
        ln_range(x, gamma, beta, y, mean, rstd, gi * 16, gi * 16 + 16 < rows ? gi * 16 + 16 : rows, n, inv_n, eps);
}

/* s = a + b, then y = layernorm(s), row by row: the row is normalised while it is still in L1. The
 * same operations as al_layernorm_rows on a finished s, so the same bits. */
void al_add_layernorm_rows(const float *a /* (rows, n) */, const float *b /* (rows, n) */, float *s /* (rows, n) */,
                           const float *gamma /* (n) or NULL */, const float *beta /* (n) or NULL */, float *y /* (rows, n) */,
                           float *mean /* (rows) or NULL */, float *rstd /* (rows) or NULL */, int64_t rows, int n, float eps)
{
    const float inv_n = 1.0f / (float)n;
    const int64_t ng = (rows + 15) / 16;   /* groups of 16 rows: added, then normalised while in L1 */
    AL_OMP("omp parallel for schedule(static) if (rows * n >= AL_PAR_MIN / 2 && rows > 1)")
    for (int64_t gi = 0; gi < ng; gi++) {
        const int64_t r0 = gi * 16, r1 = r0 + 16 < rows ? r0 + 16 : rows;
        for (int64_t i = r0 * n; i < r1 * n; i++) s[i] = a[i] + b[i];
        ln_range(s, gamma, beta, y, mean, rstd, r0, r1, n, inv_n, eps);
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
