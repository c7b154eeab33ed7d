/* image_common.c — see image_common.h. */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "image_common.h"
#include "attnlab/io.h"

/* Replace im by the n images idx[0..n) (copied). */
static al_status take_subset(al_images *im, const int *idx, int n, al_error *err)
{
    size_t per = (size_t)im->c * im->h * im->w;
    uint8_t *pix = malloc((size_t)n * per);
    int *lab = malloc((size_t)n * sizeof(int));
    if (!pix || !lab) { free(pix); free(lab); return al_seterr(err, "out of memory taking a subset of %d images", n); }
    for (int i = 0; i < n; i++) { memcpy(pix + (size_t)i * per, im->pix + (size_t)idx[i] * per, per); lab[i] = im->labels[idx[i]]; }
    free(im->pix); free(im->labels);
    im->pix = pix; im->labels = lab; im->n = n;
    return AL_OK;
}

al_status app_images_permute(al_images *im, long seed, al_error *err)
{
    if (seed < 0 || im->n == 0) return AL_OK;
    const int hw = im->h * im->w;
    int *perm = malloc((size_t)(hw > 0 ? hw : 1) * sizeof(int));
    if (!perm) return al_seterr(err, "--permute-pixels: out of memory");
    al_pixel_permutation(hw, (uint64_t)seed, perm);
    al_status st = al_images_permute(im, perm, err);
    free(perm);
    return st;
}

long app_permute_seed(const char *meta)
{
    char *v = meta ? al_meta_get(meta, APP_PERMUTE_KEY) : NULL;
    if (!v) return -1;
    char *end; long s = strtol(v, &end, 10);
    long r = end == v || *end || s < 0 ? -2 : s;
    free(v);
    return r;
}

int app_image_data_named(const char *data) { return !strcmp(data, "fashion-mnist") || !strcmp(data, "fashion-pairs"); }

al_status app_images_keep(al_images *im, int n, uint64_t seed, int **keep, al_error *err)
{
    if (keep) *keep = NULL;
    if (n <= 0 || n >= im->n) return AL_OK;
    int *idx = malloc((size_t)n * sizeof(int));
    al_status st = idx ? al_images_subset(im, n, seed, idx, err) : al_seterr(err, "out of memory");
    if (st == AL_OK) st = take_subset(im, idx, n, err);
    if (st == AL_OK && keep) *keep = idx;
    else free(idx);
    return st;
}

al_status app_images_hold_out(al_images *im, int nval, uint64_t seed, al_images *val, al_error *err)
{
    memset(val, 0, sizeof *val);
    if (nval < 1 || nval >= im->n) return al_seterr(err, "--val-size %d: needs 1 to %d of the %d training images", nval, im->n - 1, im->n);
    const size_t per = (size_t)im->c * im->h * im->w;
    int *idx = malloc((size_t)im->n * sizeof(int));
    unsigned char *held = calloc((size_t)im->n, 1);
    val->pix = malloc((size_t)nval * per); val->labels = malloc((size_t)nval * sizeof(int));
    al_status st = idx && held && val->pix && val->labels ? al_images_subset(im, nval, seed ^ APP_HOLD_OUT_SALT, idx, err)
                                                          : al_seterr(err, "out of memory holding out %d validation images", nval);
    if (st == AL_OK) {   /* the held-out images, in the subset's order; the rest stay training images, in theirs */
        val->n = nval; val->c = im->c; val->h = im->h; val->w = im->w; val->classes = im->classes;
        for (int i = 0; i < nval; i++) {
            memcpy(val->pix + (size_t)i * per, im->pix + (size_t)idx[i] * per, per);
            val->labels[i] = im->labels[idx[i]];
            held[idx[i]] = 1;
        }
        int k = 0;
        for (int i = 0; i < im->n; i++) if (!held[i]) idx[k++] = i;
        st = take_subset(im, idx, k, err);
    }
    if (st != AL_OK) al_images_free(val);
    free(idx); free(held);
    return st;
}

int app_val_size(int n) { int v = n / 10 > 100 ? n / 10 : 100; return v <= n / 2 ? v : n / 2; }

int app_class_names_join(char *const *names, int k, char *buf, size_t n)
{
    size_t o = 0;
    for (int i = 0; i < k; i++) {
        if (i) { if (o + 1 >= n) return -1; buf[o++] = ','; }
        for (const char *p = names[i]; *p; p++) {
            const char *esc = *p == '%' ? "%25" : *p == ',' ? "%2C" : NULL;
            size_t len = esc ? 3 : 1;
            if (o + len >= n) return -1;
            if (esc) memcpy(buf + o, esc, 3); else buf[o] = *p;
            o += len;
        }
    }
    if (o >= n) return -1;
    buf[o] = 0;
    return 0;
}

char **app_class_names_split(const char *s, int *k)
{
    int n = 1;
    for (const char *p = s; *p; p++) n += *p == ',';
    char **names = calloc((size_t)n, sizeof *names);
    if (!names) return NULL;
    for (int i = 0; i < n; i++) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s), o = 0;
        if (!(names[i] = malloc(len + 1))) { app_class_names_free(names, i); return NULL; }
        for (size_t j = 0; j < len; j++) {
            if (s[j] == '%' && j + 2 < len && !strncmp(s + j, "%25", 3)) { names[i][o++] = '%'; j += 2; }
            else if (s[j] == '%' && j + 2 < len && !strncmp(s + j, "%2C", 3)) { names[i][o++] = ','; j += 2; }
            else names[i][o++] = s[j];
        }
        names[i][o] = 0;
        s = e ? e + 1 : s + len;
    }
    *k = n;
    return names;
}

void app_class_names_free(char **names, int k)
{
    if (names) for (int i = 0; i < k; i++) free(names[i]);
    free(names);
}
