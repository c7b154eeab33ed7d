/* pairs.c — fashion-pairs (images.h): two pool items on a canvas, labelled same class or not. */
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <stdlib.h>
#include <string.h>

/* The box of the non-zero pixels of an h x w image (the whole image if it is all zero). */
static void bbox(const uint8_t *p, int h, int w, int *y0, int *x0, int *bh, int *bw)
{
    int t = h, l = w, bo = -1, ri = -1;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            if (p[(size_t)y * w + x]) { if (y < t) t = y; if (y > bo) bo = y; if (x < l) l = x; if (x > ri) ri = x; }
    if (bo < 0) { t = 0; l = 0; bo = h - 1; ri = w - 1; }
    *y0 = t; *x0 = l; *bh = bo - t + 1; *bw = ri - l + 1;
}

al_status al_pairs_make(const al_images *pool, int n, uint64_t seed, al_images *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    if (!pool || pool->n < 2 || pool->c != 1 || pool->h < 1 || pool->w < 1 || pool->classes < 2)
        return al_seterr(err, "fashion-pairs: the pool needs at least 2 one-channel images of 2 classes or more");
    if (n < 1 || n > 100000000) return al_seterr(err, "fashion-pairs: %d examples (want 1 .. 10^8)", n);
    const int ih = pool->h, iw = pool->w, H = 2 * ih, W = 2 * iw, K = pool->classes;
    if (al_mem_check(al_size_mul((uint64_t)n, (uint64_t)H * W + sizeof(int)), err, "fashion-pairs: %d examples of %dx%d", n, H, W))
        return AL_ERR;
    /* the pool's images by class: byclass[start[k] .. start[k+1]) */
    int *start = calloc((size_t)K + 1, sizeof(int)), *byclass = malloc((size_t)pool->n * sizeof(int)), *fill = NULL;
    out->pix = malloc((size_t)n * H * W);
    out->labels = malloc((size_t)n * sizeof(int));
    out->class_names = calloc(2, sizeof(char *));
    if (start) fill = calloc((size_t)K, sizeof(int));
    if (!start || !byclass || !fill || !out->pix || !out->labels || !out->class_names ||
        !(out->class_names[0] = strdup("different")) || !(out->class_names[1] = strdup("same"))) {
        free(start); free(byclass); free(fill); al_images_free(out);
        return al_seterr(err, "fashion-pairs: out of memory");
    }
    for (int i = 0; i < pool->n; i++) start[pool->labels[i] + 1]++;
    for (int k = 0; k < K; k++) start[k + 1] += start[k];
    for (int i = 0; i < pool->n; i++) byclass[start[pool->labels[i]] + fill[pool->labels[i]]++] = i;
    int nonempty = 0, multi = 0;
    for (int k = 0; k < K; k++) { nonempty += start[k + 1] > start[k]; multi |= start[k + 1] - start[k] >= 2; }
    free(fill);
    if (nonempty < 2 || !multi) {
        free(start); free(byclass); al_images_free(out);
        return al_seterr(err, "fashion-pairs: the pool needs two classes with images and one class with two");
    }
    out->n = n; out->c = 1; out->h = H; out->w = W; out->classes = 2;
    memset(out->pix, 0, (size_t)n * H * W);
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    for (int e = 0; e < n; e++) {
        const int same = (int)al_rng_below(&r, 2);
        int a, b, ka, kb;
        do ka = (int)al_rng_below(&r, (uint32_t)K); while (start[ka + 1] - start[ka] < (same ? 2 : 1));
        if (same) kb = ka;
        else do kb = (int)al_rng_below(&r, (uint32_t)K); while (kb == ka || start[kb + 1] == start[kb]);
        const int na = start[ka + 1] - start[ka], nb = start[kb + 1] - start[kb];
        a = byclass[start[ka] + (int)al_rng_below(&r, (uint32_t)na)];
        do b = byclass[start[kb] + (int)al_rng_below(&r, (uint32_t)nb)]; while (b == a);
        /* each item cut to the box of its non-zero pixels, the two boxes at uniformly random places of the
         * canvas, drawn again until they do not overlap (two full 28x28 boxes fit only side by side) */
        const uint8_t *src[2] = {pool->pix + (size_t)a * ih * iw, pool->pix + (size_t)b * ih * iw};
        int by[2], bx[2], bh[2], bw[2], py[2], px[2];
        for (int t = 0; t < 2; t++) bbox(src[t], ih, iw, &by[t], &bx[t], &bh[t], &bw[t]);
        do {
            for (int t = 0; t < 2; t++) {
                py[t] = (int)al_rng_below(&r, (uint32_t)(H - bh[t] + 1));
                px[t] = (int)al_rng_below(&r, (uint32_t)(W - bw[t] + 1));
            }
        } while (py[0] < py[1] + bh[1] && py[1] < py[0] + bh[0] && px[0] < px[1] + bw[1] && px[1] < px[0] + bw[0]);
        uint8_t *dst = out->pix + (size_t)e * H * W;
        for (int t = 0; t < 2; t++)
            for (int y = 0; y < bh[t]; y++)
                memcpy(dst + (size_t)(py[t] + y) * W + px[t], src[t] + (size_t)(by[t] + y) * iw + bx[t], (size_t)bw[t]);
        out->labels[e] = same;
    }
    free(start); free(byclass);
    return AL_OK;
}
