/* images.c — what every image set offers whatever its source: seeded stratified subsets, channel
 * statistics and normalised float batches. */
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/omp_impl.h"
#include "data/images_impl.h"

/* ====================================================================================== */
/* subsets, statistics, batches                                                           */
/* ====================================================================================== */
void al_pixel_permutation(int hw, uint64_t seed, int *perm)
{
    for (int i = 0; i < hw; i++) perm[i] = i;
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    al_rng_shuffle(&r, perm, hw);
}

al_status al_images_permute(al_images *im, const int *perm, al_error *err)
{
    const int hw = im->h * im->w;
    uint8_t *tmp = malloc((size_t)(hw > 0 ? hw : 1));
    if (!tmp) return al_seterr(err, "--permute-pixels: out of memory");
    for (int64_t k = 0; k < (int64_t)im->n * im->c; k++) {
        uint8_t *img = im->pix + k * hw;
        for (int p = 0; p < hw; p++) tmp[p] = img[perm[p]];
        memcpy(img, tmp, (size_t)hw);
    }
    free(tmp);
    return AL_OK;
}

al_status al_images_subset(const al_images *im, int n, uint64_t seed, int *idx /* (n) */, al_error *err)
{
    if (!im || im->n < 1 || im->classes < 1) return al_seterr(err, "subset: empty image set");
    if (n < 1 || n > im->n) return al_seterr(err, "subset: asked for %d images, the split has %d", n, im->n);
    const int K = im->classes;
    int64_t *count = calloc((size_t)K, sizeof *count), *quota = calloc((size_t)K, sizeof *quota), *rem = calloc((size_t)K, sizeof *rem);
    int *order = malloc((size_t)K * sizeof *order), *members = malloc((size_t)im->n * sizeof *members);
    uint8_t *pick = calloc((size_t)im->n, 1);
    al_status st = AL_ERR;
    if (!count || !quota || !rem || !order || !members || !pick) { al_seterr(err, "subset: out of memory"); goto out; }
    for (int i = 0; i < im->n; i++) {
        if (im->labels[i] < 0 || im->labels[i] >= K) { al_seterr(err, "subset: label %d of image %d is outside [0, %d)", im->labels[i], i, K); goto out; }
        count[im->labels[i]]++;
    }
    /* Largest-remainder apportionment of n over the classes, by class size. */
    int64_t given = 0;
    for (int k = 0; k < K; k++) {
        quota[k] = (int64_t)n * count[k] / im->n;
        rem[k] = (int64_t)n * count[k] % im->n;
        given += quota[k]; order[k] = k;
    }
    for (int a = 1; a < K; a++) {   /* insertion sort: remainder descending, class ascending */
        int x = order[a], b = a - 1;
        while (b >= 0 && rem[order[b]] < rem[x]) { order[b + 1] = order[b]; b--; }
        order[b + 1] = x;
    }
    for (int pass = 0; given < n && pass < 2; pass++)
        for (int j = 0; j < K && given < n; j++)
            if (quota[order[j]] < count[order[j]]) { quota[order[j]]++; given++; }
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_DATA);
    for (int k = 0; k < K; k++) {
        int m = 0;
        for (int i = 0; i < im->n; i++) if (im->labels[i] == k) members[m++] = i;
        al_rng_shuffle(&rng, members, m);   /* depends on the class size only: subsets nest */
        for (int j = 0; j < quota[k]; j++) pick[members[j]] = 1;
    }
    int o = 0;
    for (int i = 0; i < im->n; i++) if (pick[i]) idx[o++] = i;
    st = AL_OK;
out:
    free(count); free(quota); free(rem); free(order); free(members); free(pick);
    return st;
}

static al_status check_idx(const al_images *im, const int *idx, int n, const char *who, al_error *err)
{
    for (int i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= im->n) return al_seterr(err, "%s: index %d at position %d is outside [0, %d)", al_path_short(who), idx[i], i, im->n);
    return AL_OK;
}

al_status al_images_stats(const al_images *im, const int *idx /* (n) or NULL */, int n, float *mean /* (c) */,
                          float *std /* (c) */, al_error *err)
{
    if (!idx) n = im->n;
    if (n < 1) return al_seterr(err, "stats: no images");
    if (idx && check_idx(im, idx, n, "stats", err)) return AL_ERR;
    const size_t hw = (size_t)im->h * im->w;
    for (int ch = 0; ch < im->c; ch++) {
        uint64_t s = 0, s2 = 0;   /* exact: at most 2^31 · 255² < 2^47 */
        AL_OMP("omp parallel for reduction(+ : s, s2) schedule(static)")
        for (int i = 0; i < n; i++) {
            const uint8_t *p = im->pix + ((size_t)(idx ? idx[i] : i) * im->c + ch) * hw;
            uint64_t a = 0, b = 0;
            for (size_t j = 0; j < hw; j++) { a += p[j]; b += (uint64_t)p[j] * p[j]; }
            s += a; s2 += b;
        }
        double cntd = (double)n * (double)hw;
        double m = (double)s / cntd, v = (double)s2 / cntd - m * m;
        mean[ch] = (float)(m / 255.0);
        std[ch] = (float)(sqrt(v > 0 ? v : 0) / 255.0);
    }
    return AL_OK;
}

al_status al_images_batch(const al_images *im, const int *idx /* (b) */, int b, const float *mean /* (c) or NULL */,
                          const float *std /* (c) or NULL */, float *x /* (b, c, h, w) */, int *labels /* (b) or NULL */,
                          al_error *err)
{
    if (b < 0 || im->c > 4) return al_seterr(err, "batch: bad batch size %d or %d channels", b, im->c);
    if (check_idx(im, idx, b, "batch", err)) return AL_ERR;
    float lut[4][256];
    for (int ch = 0; ch < im->c; ch++) {
        float m = mean ? mean[ch] : 0.f, s = std ? std[ch] : 1.f;
        if (!(s >= 1e-8f)) s = 1.f;
        for (int v = 0; v < 256; v++) lut[ch][v] = ((float)v / 255.f - m) / s;
    }
    const size_t hw = (size_t)im->h * im->w, per = hw * (size_t)im->c;
    AL_OMP("omp parallel for schedule(static)")
    for (int i = 0; i < b; i++) {
        const uint8_t *p = im->pix + (size_t)idx[i] * per;   /* (c, h, w) */
        float *o = x + (size_t)i * per;                        /* (c, h, w) */
        for (int ch = 0; ch < im->c; ch++)
            for (size_t j = 0; j < hw; j++) o[ch * hw + j] = lut[ch][p[ch * hw + j]];
        if (labels) labels[i] = im->labels[idx[i]];
    }
    return AL_OK;
}

al_status al__images_set_names(al_images *im, const char *const *names, int k, al_error *err)
{
    im->class_names = calloc((size_t)k, sizeof *im->class_names);
    if (!im->class_names) return al_seterr(err, "out of memory");
    for (int i = 0; i < k; i++) if (!(im->class_names[i] = strdup(names[i]))) return al_seterr(err, "out of memory");
    return AL_OK;
}
