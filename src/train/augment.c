/* augment.c — on-the-fly augmentation of training images (train.h): shift, left-right flip, random
 * erasing, each image of each epoch from its own seeded stream. */
#include "attnlab/train.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

al_status al_augment_parse(const char *s, al_augment *a, al_error *err)
{
    memset(a, 0, sizeof *a);
    if (!s || !*s) return al_seterr(err, "--augment: empty (e.g. shift:2,flip,erase:0.25 or none)");
    if (!strcmp(s, "none")) return AL_OK;
    char buf[256];
    if (strlen(s) >= sizeof buf) return al_seterr(err, "--augment: '%s' is too long", s);
    strcpy(buf, s);
    for (char *next = buf, *t; (t = next) != NULL;) {
        char *end;
        next = t + strcspn(t, ",+");
        next = *next ? (*next = 0, next + 1) : NULL;
        if (!*t) return al_seterr(err, "--augment: empty part in '%s'", s);
        if (!strcmp(t, "flip")) { if (a->flip) goto twice; a->flip = 1; }
        else if (!strncmp(t, "shift:", 6)) {
            if (a->shift) goto twice;
            long v = strtol(t + 6, &end, 10);
            if (end == t + 6 || *end || v < 1 || v > 64) return al_seterr(err, "--augment: shift:%s must be 1..64 pixels", t + 6);
            a->shift = (int)v;
        } else if (!strncmp(t, "erase:", 6)) {
            if (a->erase > 0) goto twice;
            double v = strtod(t + 6, &end);
            if (end == t + 6 || *end || !(v > 0 && v <= 1)) return al_seterr(err, "--augment: erase:%s must be a probability in (0, 1]", t + 6);
            a->erase = (float)v;
        } else return al_seterr(err, "--augment: unknown part '%s' (shift:N, flip, erase:P, or none)", t);
        continue;
    twice:
        return al_seterr(err, "--augment: '%s' given twice", t);
    }
    return AL_OK;
}

int al_augment_str(const al_augment *a, char *buf, size_t n)
{
    if (!a->shift && !a->flip && !(a->erase > 0)) return snprintf(buf, n, "none");
    int o = 0;
    buf[0] = 0;
    if (a->shift) o += snprintf(buf + o, n - (size_t)o, "shift:%d", a->shift);
    if (a->flip && (size_t)o < n) o += snprintf(buf + o, n - (size_t)o, "%sflip", o ? "," : "");
    if (a->erase > 0 && (size_t)o < n) o += snprintf(buf + o, n - (size_t)o, "%serase:%g", o ? "," : "", (double)a->erase);
    return o;
}

/* The stream of (seed, epoch, image): splitmix64 of the three, stream AL_RNG_AUGMENT. */
static void image_rng(al_rng *r, uint64_t seed, int epoch, int image)
{
    uint64_t z = seed ^ ((uint64_t)(uint32_t)epoch << 32 | (uint32_t)image);
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    al_rng_seed(r, z ^ (z >> 31) ^ seed, AL_RNG_AUGMENT);
}

static void one_image(const al_augment *a, float *x /* (c, h, w) */, float *tmp /* (h, w) */, int c, int h, int w,
                      al_rng *r, const float *fill)
{
    const int dx = a->shift ? (int)al_rng_below(r, (uint32_t)(2 * a->shift + 1)) - a->shift : 0;
    const int dy = a->shift ? (int)al_rng_below(r, (uint32_t)(2 * a->shift + 1)) - a->shift : 0;
    const int flip = a->flip ? (int)al_rng_below(r, 2) : 0;
    int ex = 0, ey = 0, ew = 0, eh = 0;
    if (a->erase > 0 && al_rng_uniform(r) < a->erase)
        for (int attempt = 0; attempt < 10; attempt++) {             /* RandomErasing's scale (0.02, 0.33), ratio (0.3, 3.3) */
            const double area = (double)h * w * (0.02 + 0.31 * al_rng_uniform(r));
            const double lr = log(0.3) + (log(3.3) - log(0.3)) * al_rng_uniform(r), ratio = exp(lr);
            const int eh0 = (int)lround(sqrt(area * ratio)), ew0 = (int)lround(sqrt(area / ratio));
            if (eh0 < 1 || ew0 < 1 || eh0 >= h || ew0 >= w) continue;
            eh = eh0; ew = ew0;
            ey = (int)al_rng_below(r, (uint32_t)(h - eh + 1)); ex = (int)al_rng_below(r, (uint32_t)(w - ew + 1));
            break;
        }
    for (int ch = 0; ch < c; ch++) {
        float *p = x + (size_t)ch * h * w;
        if (dx || dy || flip) {
            for (int y = 0; y < h; y++)
                for (int xx = 0; xx < w; xx++) {                      /* output (y, xx) reads input (y − dy, sx − dx) */
                    const int sx = flip ? w - 1 - xx : xx, iy = y - dy, ix = sx - dx;
                    tmp[y * w + xx] = iy >= 0 && iy < h && ix >= 0 && ix < w ? p[iy * w + ix] : fill[ch];
                }
            memcpy(p, tmp, (size_t)h * w * sizeof(float));
        }
        for (int y = ey; y < ey + eh; y++)
            for (int xx = ex; xx < ex + ew; xx++) p[y * w + xx] = 0.f;
    }
}

al_status al_augment_batch(const al_augment *a, float *x, int b, int c, int h, int w, const int *idx, uint64_t seed, int epoch,
                           const float *fill, al_error *err)
{
    if (!a || (!a->shift && !a->flip && !(a->erase > 0))) return AL_OK;
    float *tmp = malloc((size_t)(b > 0 ? b : 1) * h * w * sizeof(float));   /* one plane per image: no sharing */
    if (!tmp) return al_seterr(err, "augmentation: out of memory");
    AL_OMP("omp parallel for schedule(static)")
    for (int i = 0; i < b; i++) {
        al_rng r;
        image_rng(&r, seed, epoch, idx[i]);
        one_image(a, x + (size_t)i * c * h * w, tmp + (size_t)i * h * w, c, h, w, &r, fill);
    }
    free(tmp);
    return AL_OK;
}
