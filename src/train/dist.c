/* dist.c — the data-parallel step's arithmetic (dist.h): micro-shard ranges, the exact fixed-point
 * gradient sum, per-shard scalars. No MPI here: the caller's allreduce does the talking. */
#include "attnlab/dist.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

int al_dist_shards(int n)
{
    int s = (n + AL_DIST_SHARD_ITEMS - 1) / AL_DIST_SHARD_ITEMS;
    if (s < AL_DIST_MIN_SHARDS) s = AL_DIST_MIN_SHARDS;
    if (s > AL_DIST_MAX_SHARDS) s = AL_DIST_MAX_SHARDS;
    return n < s ? (n > 0 ? n : 1) : s;
}

void al_dist_my_shards(const al_dist *d, int S, int *j0, int *j1)
{
    *j0 = (int)((int64_t)S * d->rank / d->size);
    *j1 = (int)((int64_t)S * (d->rank + 1) / d->size);
}

void al_gradsum_begin(al_gradsum *g, int64_t P)
{
    if (g->P != P) { al_gradsum_free(g); g->P = P; }
    g->n = 0; g->maxabs = 0;
}

void al_gradsum_free(al_gradsum *g)
{
    free(g->buf); free(g->acc);
    memset(g, 0, sizeof *g);
}

al_status al_gradsum_add(al_gradsum *g, const float *grad, al_error *err)
{
    if (g->n == g->cap) {
        int cap = g->cap ? 2 * g->cap : 1;
        float *b = realloc(g->buf, (size_t)cap * (size_t)g->P * sizeof(float));
        if (!b) return al_seterr(err, "data-parallel step: out of memory for %d gradients of %lld floats", cap, (long long)g->P);
        g->buf = b; g->cap = cap;
    }
    float *dst = g->buf + (int64_t)g->n++ * g->P;
    double m = g->maxabs;
    for (int64_t i = 0; i < g->P; i++) {
        dst[i] = grad[i];
        double a = fabs((double)grad[i]);
        if (!(a <= m)) m = a;                  /* NaN wins: the step diverges visibly */
    }
    g->maxabs = m;
    return AL_OK;
}

/* The bits of a non-negative double order like the double (NaN above +inf), so MPI's int64 maximum
 * is the maximum of the values. */
static int64_t dbits(double x) { int64_t b; memcpy(&b, &x, sizeof b); return b; }
static double bitsd(int64_t b) { double x; memcpy(&x, &b, sizeof x); return x; }

al_status al_gradsum_reduce(al_gradsum *g, const al_dist *d, float *grad, al_error *err)
{
    int64_t mb = dbits(g->maxabs);
    if (d->allreduce(d->ud, &mb, 1, AL_DIST_MAX)) return al_seterr(err, "data-parallel step: allreduce (max) failed");
    const double M = bitsd(mb);
    if (!isfinite(M)) {                        /* an inf or NaN gradient: let the divergence check see it */
        for (int64_t i = 0; i < g->P; i++) grad[i] = NAN;
        return AL_OK;
    }
    /* |g| <= M < 2^e, at most AL_DIST_MAX_SHARDS = 2^6 terms: every term and every partial sum stays
     * below 2^62 with the scale 2^k, k = 56 - e. Values below M·2^-56 round to 0: far below AdamW's eps
     * for any gradient this side of divergence. k depends on M alone, never on the rank count. */
    int e = 0;
    if (M > 0) frexp(M, &e);
    const int k = 56 - e;
    if (!g->acc && !(g->acc = malloc((size_t)(g->P > 0 ? g->P : 1) * sizeof(int64_t))))
        return al_seterr(err, "data-parallel step: out of memory for %lld fixed-point gradients", (long long)g->P);
    for (int64_t i = 0; i < g->P; i++) {
        int64_t s = 0;
        for (int j = 0; j < g->n; j++) s += llrint(ldexp((double)g->buf[(int64_t)j * g->P + i], k));
        g->acc[i] = s;
    }
    if (d->allreduce(d->ud, g->acc, g->P, AL_DIST_SUM)) return al_seterr(err, "data-parallel step: allreduce (sum) failed");
    for (int64_t i = 0; i < g->P; i++) grad[i] = (float)ldexp((double)g->acc[i], -k);
    return AL_OK;
}

al_status al_dist_sum_slots(const al_dist *d, double *v, int S, double *total, al_error *err)
{
    int64_t b[AL_DIST_MAX_SHARDS];
    for (int j = 0; j < S; j++) b[j] = dbits(v[j]);          /* 0.0 has the bits 0: the others add nothing */
    if (d->allreduce(d->ud, b, S, AL_DIST_SUM)) return al_seterr(err, "data-parallel step: allreduce (losses) failed");
    double t = 0;
    for (int j = 0; j < S; j++) { v[j] = bitsd(b[j]); t += v[j]; }
    *total = t;
    return AL_OK;
}

al_status al_dist_sum_counts(const al_dist *d, int64_t *v, int n, al_error *err)
{
    if (d->allreduce(d->ud, v, n, AL_DIST_SUM)) return al_seterr(err, "data-parallel step: allreduce (counts) failed");
    return AL_OK;
}
