/* image.c — image folders DIR/CLASS/IMAGE (or DIR/{train,test}/CLASS/IMAGE) via stb_image: headers
 * scanned and the whole decode budgeted before any pixel is decoded, then decoded in parallel and
 * split. IDX files are idx.c's, subsets/statistics/batches images.c's. See images.h. */
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <stb/stb_image.h>
#include "core/omp_impl.h"
#include "data/stb_impl.h"
#include "data/images_impl.h"
#include "data/folder_impl.h"

/* Threads a parallel decode may use (1 without OpenMP). */
static int decode_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void al_images_free(al_images *im)
{
    if (!im) return;
    if (im->class_names) for (int k = 0; k < im->classes; k++) free(im->class_names[k]);
    free(im->class_names); free(im->pix); free(im->labels);
    memset(im, 0, sizeof *im);
}
void al_image_split_free(al_image_split *s)
{
    if (!s) return;
    al_images_free(&s->train); al_images_free(&s->test); s->skipped = 0;
}

/* ====================================================================================== */
/* image folders                                                                          */
/* ====================================================================================== */
typedef struct fentry {
    char *path;
    int label, split;     /* split: 0 train, 1 test */
    al__imgfile im;       /* what its header claims */
    int ok;
    char *msg;            /* decode failure message */
} fentry;
typedef struct fload {
    fentry *e; int n, cap;
    const al_folder_opts *o;
    al__skips sk;            /* the files skipped */
} fload;

/* Width and height from a PNG's IHDR (stb_image reports a huge PNG only as "corrupt"); 0 if not a PNG. */
static int png_header_dims(const char *path, uint32_t *w, uint32_t *h)
{
    unsigned char b[24];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t k = fread(b, 1, sizeof b, f);
    fclose(f);
    if (k < 24 || memcmp(b, "\x89PNG\r\n\x1a\n", 8) || memcmp(b + 12, "IHDR", 4)) return 0;
    *w = al__be32(b + 16); *h = al__be32(b + 20);
    return 1;
}

/* 1 if the file starts "P5" or "P6" (binary PNM). */
static int is_pnm(const char *path)
{
    unsigned char b[2] = {0, 0};
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    size_t k = fread(b, 1, 2, f);
    fclose(f);
    return k == 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6');
}

/* 1 if path is a binary PNM (P5/P6) whose header holds a number that stb_image's integer reader
 * would overflow on (signed int: UB, a UBSan abort; fuzz_image) or that cannot be checked within the
 * first 64 KiB; 0 otherwise. Walks the header as stb_image does: whitespace, '#' comments, digits. */
static int pnm_header_overflows(const char *path)
{
    static const size_t cap = 1 << 16;
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    unsigned char *b = malloc(cap);
    if (!b) { fclose(f); return 1; }
    size_t n = fread(b, 1, cap, f);
    int more = n == cap && fgetc(f) != EOF;
    fclose(f);
    int bad = 0;
    if (n >= 2 && b[0] == 'P' && (b[1] == '5' || b[1] == '6')) {
        size_t i = 2;
        for (int k = 0; k < 3 && !bad; k++) {
            for (;;) {
                while (i < n && (b[i] == ' ' || (b[i] >= '\t' && b[i] <= '\r'))) i++;
                if (i < n && b[i] == '#') { while (i < n && b[i] != '\n' && b[i] != '\r') i++; continue; }
                break;
            }
            uint64_t v = 0;
            while (i < n && b[i] >= '0' && b[i] <= '9' && !bad) { v = v * 10 + (uint64_t)(b[i] - '0'); bad = v > ((uint64_t)1 << 30); i++; }
            if (i >= n && more) bad = 1;   /* the header goes on past what we read */
        }
    }
    free(b);
    return bad;
}

int al__image_probe(const char *p, al__imgfile *f, char *why, size_t n)
{
    memset(f, 0, sizeof *f);
    struct stat sb;
    if (stat(p, &sb) != 0 || !S_ISREG(sb.st_mode)) { snprintf(why, n, "not a regular file"); return -1; }
    int w = 0, h = 0, comp = 0;
    if (pnm_header_overflows(p)) {
        snprintf(why, n, "PNM header with a number too large to be an image size (or a header longer than 64 KiB)");
        return -1;
    }
    if (!stbi_info(p, &w, &h, &comp)) {
        const char *r = stbi_failure_reason();
        uint32_t pw, ph;
        if (png_header_dims(p, &pw, &ph) && (pw > AL_IMAGE_MAX_SIDE || ph > AL_IMAGE_MAX_SIDE || (uint64_t)pw * ph > (uint64_t)AL_IMAGE_MAX_PIXELS))
            snprintf(why, n, "image header claims %ux%u pixels (limit %d per side, %lld in all)", pw, ph, AL_IMAGE_MAX_SIDE,
                     (long long)AL_IMAGE_MAX_PIXELS);
        else snprintf(why, n, "not a readable image (%s)", r ? r : "unknown format");
        return -1;
    }
    if (w < 1 || h < 1 || w > AL_IMAGE_MAX_SIDE || h > AL_IMAGE_MAX_SIDE || (int64_t)w * h > AL_IMAGE_MAX_PIXELS) {
        snprintf(why, n, "image header claims %dx%d pixels (limit %d per side, %lld in all)", w, h, AL_IMAGE_MAX_SIDE,
                 (long long)AL_IMAGE_MAX_PIXELS);
        return -1;
    }
    /* A header can claim any size: a 70-byte BMP "of 8194x4098" decodes (stb_image fills what is
     * missing) into 100 MB of nothing. Refuse claims no real encoder reaches from this many bytes. */
    uint64_t claim = al_size_mul(al_size_mul((uint64_t)w, (uint64_t)h), (uint64_t)(comp > 0 ? comp : 1));
    if (claim > AL_IMAGE_FREE_BYTES && claim / AL_IMAGE_MAX_RATIO > (uint64_t)sb.st_size) {
        char a[32];
        snprintf(why, n, "header claims %dx%d pixels (%s decoded) from a %lld-byte file, more than %d decoded bytes per file "
                 "byte: truncated or forged", w, h, al_bytes_str(claim, a), (long long)sb.st_size, AL_IMAGE_MAX_RATIO);
        return -1;
    }
    f->w = w; f->h = h; f->comp = comp; f->fsize = (int64_t)sb.st_size;
    f->pnm16 = is_pnm(p) && stbi_is_16_bit(p);
    return 0;
}

/* Probe every file of the class folder (al__image_probe); what fails is skipped with a warning. */
static al_status probe_files(fload *L, const al__classfolder *cf, al_error *err)
{
    for (int i = 0; i < cf->n; i++) {
        const al__classfile *c = &cf->f[i];
        al__imgfile im;
        char why[512];
        if (al__image_probe(c->path, &im, why, sizeof why)) { al__skipf(&L->sk, "%s: %s, skipped", c->path, why); continue; }
        if (L->n == L->cap) {
            int cap = L->cap ? 2 * L->cap : 256;
            fentry *q = realloc(L->e, (size_t)cap * sizeof *q);
            if (!q) return al_seterr(err, "out of memory");
            L->e = q; L->cap = cap;
        }
        fentry *f = &L->e[L->n];
        memset(f, 0, sizeof *f);
        if (!(f->path = strdup(c->path))) return al_seterr(err, "out of memory");
        f->label = c->label; f->split = c->split; f->im = im;
        L->n++;
    }
    return AL_OK;
}

int al__image_decode(const char *path, const al__imgfile *f, uint8_t *dst, int C, int H, int W, char *why, size_t n)
{
    int w, h, comp;
    /* Cap what stb_image may allocate for this file: its 16-bit decode (8 bytes a pixel at most),
     * twice over for zlib's growing buffer, plus twice the file's own size (chunks read whole). */
    uint64_t cap = al_size_add(al_size_add(al_size_mul(al_size_mul((uint64_t)f->w, (uint64_t)f->h), 2 * 8 + 2),
                                           al_size_mul((uint64_t)f->h, 4)),
                               al_size_add(al_size_mul((uint64_t)f->fsize, 2), (uint64_t)1 << 20));
    al__stbi_cap_set(cap > (uint64_t)SIZE_MAX ? SIZE_MAX : (size_t)cap);
    /* stb_image's 16-bit PNM path converts channels with its 8-bit routine and then reads past the
     * buffer (fuzz_image): load such a file in its own channel count and convert here. */
    const int req = f->pnm16 && f->comp != C ? f->comp : C;
    uint8_t *img = al__stbi_load(path, &w, &h, &comp, req);
    size_t refused = al__stbi_refused();
    if (img && req != C) {
        uint8_t *cv = malloc((size_t)w * (size_t)h * (size_t)C);
        if (cv) {
            for (size_t i = 0, np = (size_t)w * (size_t)h; i < np; i++) {
                if (req == 1) for (int ch = 0; ch < C; ch++) cv[i * (size_t)C + (size_t)ch] = img[i];
                else if (C == 1) { const uint8_t *q = img + i * (size_t)req; cv[i] = (uint8_t)((q[0] * 77 + q[1] * 150 + q[2] * 29) >> 8); }
                else for (int ch = 0; ch < C; ch++) cv[i * (size_t)C + (size_t)ch] = img[i * (size_t)req + (size_t)(ch < req ? ch : req - 1)];
            }
        }
        stbi_image_free(img);
        img = cv;
    }
    al__stbi_cap_set(0);
    if (!img) {
        const char *r = stbi_failure_reason();
        char a[32], b[32];
        if (refused)
            snprintf(why, n, "could not be decoded (it asked for %s at once, more than the %s a %dx%d image in a %lld-byte file may need)",
                     al_bytes_str(refused, a), al_bytes_str(cap, b), f->w, f->h, (long long)f->fsize);
        else snprintf(why, n, "could not be decoded (%s)", r ? r : "unknown error");
        return -1;
    }
    int ok = al__to_chw(img, w, h, C, H, W, dst);
    stbi_image_free(img);
    if (!ok) { snprintf(why, n, "resizing %dx%d to %dx%d failed", w, h, W, H); return -1; }
    return 0;
}

/* Decode entry f into dst (C, H, W). Returns 0, or -1 with f->msg set. Thread-safe. */
static int decode_one(fentry *f, uint8_t *dst, int C, int H, int W)
{
    char why[512], msg[AL_ERRLEN + 600];
    if (!al__image_decode(f->path, &f->im, dst, C, H, W, why, sizeof why)) return 0;
    snprintf(msg, sizeof msg, "%s: %s, skipped", f->path, why);
    f->msg = strdup(msg);
    return -1;
}

typedef struct sizecount { int h, w, n; } sizecount;
static int cmp_size(const void *a, const void *b)
{
    const sizecount *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return x->w < y->w ? -1 : x->w > y->w;
}

static al_status make_images(al_images *im, int n, int C, int H, int W, const al__strlist *classes, al_error *err)
{
    memset(im, 0, sizeof *im);
    im->n = n; im->c = C; im->h = H; im->w = W; im->classes = classes->n;
    im->pix = malloc((size_t)(n ? n : 1) * C * H * W);
    im->labels = malloc((size_t)(n ? n : 1) * sizeof *im->labels);
    if (!im->pix || !im->labels) return al_seterr(err, "out of memory for %d images", n);
    return al__images_set_names(im, (const char *const *)classes->s, classes->n, err);
}

/* The most common image size of the scanned files (ties: smallest h, then w). */
static al_status common_size(const fload *L, int *H, int *W, al_error *err)
{
    sizecount *sc = malloc((size_t)L->n * sizeof *sc);
    if (!sc) return al_seterr(err, "out of memory");
    for (int i = 0; i < L->n; i++) { sc[i].h = L->e[i].im.h; sc[i].w = L->e[i].im.w; }
    qsort(sc, (size_t)L->n, sizeof *sc, cmp_size);
    int best = 0;
    for (int i = 0, j; i < L->n; i = j) {
        for (j = i; j < L->n && sc[j].h == sc[i].h && sc[j].w == sc[i].w; j++) {}
        if (j - i > best) { best = j - i; *H = sc[i].h; *W = sc[i].w; }
    }
    free(sc);
    return AL_OK;
}

/* Hold out round(frac · n_k) usable images of each of the nclass classes for the test split, chosen
 * with the split seed (stream AL_RNG_DATA); file order kept. */
static al_status hold_out(fload *L, int nclass, double frac, uint64_t seed, al_error *err)
{
    al_rng rng; al_rng_seed(&rng, seed, AL_RNG_DATA);
    int *members = malloc((size_t)L->n * sizeof *members);
    if (!members) return al_seterr(err, "out of memory");
    for (int k = 0; k < nclass; k++) {
        int m = 0;
        for (int i = 0; i < L->n; i++) if (L->e[i].ok && L->e[i].label == k) members[m++] = i;
        int nt = al__hold_out_pick(&rng, members, m, frac, 0);
        for (int j = 0; j < nt; j++) L->e[members[j]].split = 1;
    }
    free(members);
    return AL_OK;
}

/* Copies the usable decoded images all (L->n, per bytes each) into out's train and test splits (already
 * sized), class-major (classes by name, files by name). */
static void fill_splits(const fload *L, int nclass, const uint8_t *all /* (L->n, per) */, int64_t per, al_image_split *out)
{
    int pos[2] = {0, 0};
    for (int k = 0; k < nclass; k++)
        for (int i = 0; i < L->n; i++) {
            const fentry *f = &L->e[i];
            if (!f->ok || f->label != k) continue;
            al_images *im = f->split ? &out->test : &out->train;
            int j = pos[f->split]++;
            memcpy(im->pix + (size_t)j * (size_t)per, all + (size_t)i * (size_t)per, (size_t)per);
            im->labels[j] = k;
        }
}

/* The whole decode of L's files at C×H×W, budgeted before any of it: the decoded set (twice: all +
 * the splits) and, per decoding thread, the largest file's stb_image buffer and its resized copy. */
static al_status budget_decode(const fload *L, const char *dir, int C, int H, int W, int64_t per, al_error *err)
{
    uint64_t biggest = 0; int bi = 0;
    for (int i = 0; i < L->n; i++) {
        uint64_t b = al_size_mul(al_size_mul((uint64_t)L->e[i].im.w, (uint64_t)L->e[i].im.h), (uint64_t)(L->e[i].im.comp > C ? L->e[i].im.comp : C));
        if (b > biggest) { biggest = b; bi = i; }
    }
    uint64_t need = al_size_add(al_size_mul(al_size_mul((uint64_t)L->n, (uint64_t)per), 2),
                                al_size_mul(al_size_add(biggest, (uint64_t)per), (uint64_t)decode_threads()));
    char pb[200];
    return al_mem_check(need, err, "%s: %d images at %dx%dx%d (the largest file, %s, is %dx%d)", dir, L->n, C, H, W,
                        al_path_abbrev(L->e[bi].path, pb, sizeof pb), L->e[bi].im.w, L->e[bi].im.h);
}


/* The class folder dir (folder.c: the layout, its class directories and files) with every image file
 * probed into L (headers only). */
static al_status scan_folder(fload *L, const char *dir, al__classfolder *cf, al_error *err)
{
    if (al__classfolder_list(dir, "IMAGE", al__skip_entry, &L->sk, cf, err)) return AL_ERR;
    if (probe_files(L, cf, err)) return AL_ERR;
    if (L->n == 0) return al__none_usable(&L->sk, dir, "images", err);
    return AL_OK;
}

al_status al_image_folder_load(const char *dir, const al_folder_opts *opts, al_image_split *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    al_folder_opts def = {0};
    if (!opts) opts = &def;
    fload L = {0};
    L.o = opts;
    L.sk.warn = opts->warn; L.sk.ud = opts->warn_ud;
    al__classfolder cf = {0};
    uint8_t *all = NULL;
    int *cnt = NULL;
    al_status st = AL_ERR;
    double frac = opts->test_frac > 0 ? opts->test_frac : 0.2;
    if (frac >= 1.0 || opts->test_frac < 0) return al_seterr(err, "%s: test fraction %g is not in [0, 1)", al_path_short(dir), opts->test_frac);
    if (opts->channels != 0 && opts->channels != 1 && opts->channels != 3)
        return al_seterr(err, "%s: channels must be 1 or 3 (or 0 for automatic), got %d", al_path_short(dir), opts->channels);
    if (opts->h < 0 || opts->w < 0 || opts->h > AL_IMAGE_MAX_SIDE || opts->w > AL_IMAGE_MAX_SIDE || (!opts->h) != (!opts->w))
        return al_seterr(err, "%s: bad target size %dx%d", al_path_short(dir), opts->h, opts->w);
    if (scan_folder(&L, dir, &cf, err)) goto out;
    const al__strlist classes = cf.classes;
    const int split_mode = cf.split_mode;
    /* Target size: the caller's, else the most common (ties: smallest h, then w). */
    int H = opts->h, W = opts->w;
    if (!H && common_size(&L, &H, &W, err)) goto out;
    int C = opts->channels;
    if (!C) { C = 1; for (int i = 0; i < L.n; i++) if (L.e[i].im.comp >= 3) C = 3; }
    int64_t per = (int64_t)C * H * W;
    if ((int64_t)L.n * per > AL_DATA_MAX_BYTES) {
        al_seterr(err, "%s: %d images of %dx%dx%d need more than %lld bytes", al_path_short(dir), L.n, C, H, W, (long long)AL_DATA_MAX_BYTES);
        goto out;
    }
    if (budget_decode(&L, dir, C, H, W, per, err)) goto out;
    all = malloc((size_t)((int64_t)L.n * per));
    if (!all) { al_seterr(err, "%s: out of memory for %d images", al_path_short(dir), L.n); goto out; }

    /* Decode in parallel: each file writes its own slot; warnings are emitted afterwards in file order. */
    const int ne = L.n;
    AL_OMP("omp parallel for schedule(dynamic, 4)")
    for (int i = 0; i < ne; i++) L.e[i].ok = decode_one(&L.e[i], all + (size_t)i * (size_t)per, C, H, W) == 0;
    for (int i = 0; i < ne; i++)
        if (!L.e[i].ok) {
            al__skipf(&L.sk, "%s", L.e[i].msg ? L.e[i].msg : "an image could not be decoded, skipped");
        }

    /* Per-class counts of usable images in the train pool (and in the test split). */
    cnt = calloc((size_t)classes.n * 2, sizeof *cnt);
    if (!cnt) { al_seterr(err, "out of memory"); goto out; }
    for (int i = 0; i < ne; i++) if (L.e[i].ok) cnt[2 * L.e[i].label + L.e[i].split]++;
    for (int k = 0; k < classes.n; k++)
        if (cnt[2 * k] == 0) { al_seterr(err, "%s/%s: the class has no usable images", al_path_short(cf.cbase), classes.s[k]); goto out; }
    if (!split_mode) {
        if (hold_out(&L, classes.n, frac, opts->split_seed, err)) goto out;
        int ntest = 0;
        for (int i = 0; i < ne; i++) ntest += L.e[i].ok && L.e[i].split;
        if (ntest == 0 && opts->require_test) {
            int usable = 0;
            for (int k = 0; k < classes.n; k++) usable += cnt[2 * k];
            al_seterr(err, "%s: too few images for a test split: %d usable image%s in %d class%s, test fraction %g holds out none "
                      "(each class needs at least 2 images, or add train/ and test/ directories)", al_path_short(dir), usable, usable == 1 ? "" : "s", classes.n, classes.n == 1 ? "" : "es", frac);
            goto out;
        }
    } else {
        int ntest = 0;
        for (int k = 0; k < classes.n; k++) ntest += cnt[2 * k + 1];
        if (ntest == 0) { al_seterr(err, "%s: the test split has no usable images", al_path_short(cf.tedir)); goto out; }
    }
    int nsplit[2] = {0, 0};
    for (int i = 0; i < ne; i++) if (L.e[i].ok) nsplit[L.e[i].split]++;
    if (make_images(&out->train, nsplit[0], C, H, W, &classes, err)) goto out;
    if (make_images(&out->test, nsplit[1], C, H, W, &classes, err)) goto out;
    fill_splits(&L, classes.n, all, per, out);
    out->skipped = L.sk.n;
    st = AL_OK;
out:
    for (int i = 0; i < L.n; i++) { free(L.e[i].path); free(L.e[i].msg); }
    free(L.e); free(all); free(cnt);
    al__classfolder_free(&cf);
    if (st != AL_OK) al_image_split_free(out);
    return st;
}

