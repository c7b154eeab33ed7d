/* idx.c — IDX files (gzip or raw) and the Fashion-MNIST directory: headers checked, counts budgeted
 * before allocating, truncation reported with the byte offset where the data ran out. */
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "data/images_impl.h"

/* ====================================================================================== */
/* IDX                                                                                    */
/* ====================================================================================== */
typedef struct gzr { gzFile f; const char *path; uint64_t off; } gzr;

/* zlib's error message without the "<fd:N>: " it puts in front (ours names the file already). */
static const char *gz_msg(const gzr *gz, int *zerr)
{
    return al_input_zmsg(gzerror(gz->f, zerr));
}

/* Reads exactly n bytes or reports where the data ran out (offset in the uncompressed stream). */
static al_status gz_exact(gzr *gz, void *buf, uint64_t n, const char *what, al_error *err)
{
    unsigned char *p = buf;
    uint64_t done = 0;
    while (done < n) {
        unsigned chunk = n - done > (1u << 30) ? (1u << 30) : (unsigned)(n - done);
        int k = gzread(gz->f, p + done, chunk);
        if (k < 0) {
            int zerr; const char *zm = gz_msg(gz, &zerr);
            return al_seterr(err, "%s: corrupt data at byte %llu of the uncompressed stream while reading %s: %s", al_path_short(gz->path), (unsigned long long)(gz->off + done), what, zm ? zm : "zlib error");
        }
        if (k == 0) {
            int zerr; const char *zm = gz_msg(gz, &zerr);
            return al_seterr(err, "%s: data ran out at byte offset %llu while reading %s (%llu more bytes expected)%s%s", al_path_short(gz->path), (unsigned long long)(gz->off + done), what, (unsigned long long)(n - done),
                             zerr != Z_OK && zm && zm[0] ? ": " : "", zerr != Z_OK && zm ? zm : "");
        }
        done += (uint64_t)k;
    }
    gz->off += n;
    return AL_OK;
}
static al_status gz_open(gzr *gz, const char *path, al_error *err)
{
    gz->path = path; gz->off = 0;
    gz->f = NULL;
    al_input in;   /* a regular file or an inherited pipe; never a FIFO or device (io.h) */
    if (al_input_open(&in, path, AL_IN_STREAM, "IDX file", err) != AL_OK) return AL_ERR;
    gz->f = gzdopen(in.fd, "rb");
    if (!gz->f) { al_input_close(&in); return al_seterr(err, "%s: cannot open: out of memory", al_path_short(path)); }
    gzbuffer(gz->f, 1 << 17);
    return AL_OK;
}
/* After the declared data: one more byte means the file is longer than its header says. */
static al_status gz_expect_end(gzr *gz, const char *what, al_error *err)
{
    unsigned char extra;
    int k = gzread(gz->f, &extra, 1);
    if (k > 0)
        return al_seterr(err, "%s: unexpected trailing data at byte offset %llu (after the %s the header declares)", al_path_short(gz->path), (unsigned long long)gz->off, what);
    if (k < 0) {
        int zerr; const char *zm = gz_msg(gz, &zerr);
        return al_seterr(err, "%s: corrupt data at byte %llu of the uncompressed stream: %s", al_path_short(gz->path),
                         (unsigned long long)gz->off, zm ? zm : "zlib error");
    }
    return AL_OK;
}

al_status al_idx_load(const char *images_path, const char *labels_path, al_images *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    gzr gi = {0}, gl = {0};
    unsigned char hi[16], hl[8];
    al_status st = AL_ERR;
    uint8_t *lab8 = NULL;
    if (gz_open(&gi, images_path, err)) return AL_ERR;
    if (gz_open(&gl, labels_path, err)) { gzclose(gi.f); return AL_ERR; }
    if (gz_exact(&gi, hi, 16, "the idx3 header", err)) goto out;
    if (gz_exact(&gl, hl, 8, "the idx1 header", err)) goto out;
    uint32_t mi = al__be32(hi), ml = al__be32(hl);
    if (mi != 0x00000803) { al_seterr(err, "%s: bad magic number 0x%08x at byte offset 0 (an idx3 image file has 0x00000803)", al_path_short(images_path), mi); goto out; }
    if (ml != 0x00000801) { al_seterr(err, "%s: bad magic number 0x%08x at byte offset 0 (an idx1 label file has 0x00000801)", al_path_short(labels_path), ml); goto out; }
    uint32_t n = al__be32(hi + 4), rows = al__be32(hi + 8), cols = al__be32(hi + 12), nl = al__be32(hl + 4);
    if (n == 0) { al_seterr(err, "%s: the header declares 0 images", al_path_short(images_path)); goto out; }
    if (rows == 0 || cols == 0 || rows > AL_IMAGE_MAX_SIDE || cols > AL_IMAGE_MAX_SIDE) {
        al_seterr(err, "%s: absurd image size %ux%u in the header (byte offset 8; limit %d per side)", al_path_short(images_path), rows, cols, AL_IMAGE_MAX_SIDE);
        goto out;
    }
    uint64_t bytes = (uint64_t)n * rows * cols;
    if (bytes > (uint64_t)AL_DATA_MAX_BYTES || n > (uint32_t)INT32_MAX) {
        al_seterr(err, "%s: header declares %u images of %ux%u = %llu bytes, more than the %lld-byte limit", al_path_short(images_path), n, rows, cols, (unsigned long long)bytes, (long long)AL_DATA_MAX_BYTES);
        goto out;
    }
    if (nl != n) { al_seterr(err, "%s: %u labels, but %s has %u images", al_path_short(labels_path), nl, images_path, n); goto out; }
    if (al_mem_check(al_size_add(bytes, al_size_mul(n, sizeof *out->labels + 1)), err,
                     "%s: header declares %u images of %ux%u", images_path, n, rows, cols))
        goto out;
    out->pix = malloc((size_t)bytes);
    out->labels = malloc((size_t)n * sizeof *out->labels);
    lab8 = malloc(n);
    if (!out->pix || !out->labels || !lab8) { al_seterr(err, "%s: out of memory for %llu bytes", al_path_short(images_path), (unsigned long long)bytes); goto out; }
    if (gz_exact(&gi, out->pix, bytes, "the pixels", err)) goto out;
    if (gz_expect_end(&gi, "pixels", err)) goto out;
    if (gz_exact(&gl, lab8, n, "the labels", err)) goto out;
    if (gz_expect_end(&gl, "labels", err)) goto out;
    int maxl = 0;
    for (uint32_t i = 0; i < n; i++) { out->labels[i] = lab8[i]; if (lab8[i] > maxl) maxl = lab8[i]; }
    out->n = (int)n; out->c = 1; out->h = (int)rows; out->w = (int)cols; out->classes = maxl + 1;
    st = AL_OK;
out:
    gzclose(gi.f); gzclose(gl.f);
    free(lab8);
    if (st != AL_OK) al_images_free(out);
    return st;
}

al_status al_idx_count(const char *path, int64_t *n, al_error *err)
{
    gzr gz = {0};
    unsigned char h[8];
    *n = 0;
    if (gz_open(&gz, path, err)) return AL_ERR;
    al_status st = gz_exact(&gz, h, 8, "the idx header", err);
    uint32_t magic = st == AL_OK ? al__be32(h) : 0;
    if (st == AL_OK && magic != 0x00000801 && magic != 0x00000803)
        st = al_seterr(err, "%s: bad magic number 0x%08x at byte offset 0 (not an idx1 or idx3 file)", al_path_short(path), magic);
    if (st == AL_OK) *n = al__be32(h + 4);
    gzclose(gz.f);
    return st;
}

static const char *const fashion_names[10] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};

/* dir/base.gz if it exists, else dir/base (then the open error names that). */
static char *idx_path(const char *dir, const char *base)
{
    size_t n = strlen(dir) + strlen(base) + 8;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s/%s.gz", dir, base);
    struct stat sb;
    if (stat(p, &sb) != 0) snprintf(p, n, "%s/%s", dir, base);
    return p;
}
/* dir, or (NULL or empty) where al_data_locate finds fashion-mnist (into buf). */
static const char *fashion_dir(const char *dir, char *buf, size_t n, al_error *err)
{
    if (dir && dir[0]) return dir;
    return al_data_locate("fashion-mnist", NULL, buf, n, err) == AL_OK ? buf : NULL;
}

al_status al_fashion_mnist_count(const char *dir, int64_t *ntrain, int64_t *ntest, al_error *err)
{
    char buf[4200];
    if (!(dir = fashion_dir(dir, buf, sizeof buf, err))) return AL_ERR;
    const char *base[2] = {"train-images-idx3-ubyte", "t10k-images-idx3-ubyte"};
    int64_t *cnt[2] = {ntrain, ntest};
    for (int k = 0; k < 2; k++) {
        if (!cnt[k]) continue;
        char *p = idx_path(dir, base[k]);
        if (!p) return al_seterr(err, "out of memory");
        al_status st = al_idx_count(p, cnt[k], err);
        free(p);
        if (st != AL_OK) return st;
    }
    return AL_OK;
}

al_status al_fashion_mnist_load(const char *dir, al_image_split *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    char buf[4200];
    if (!(dir = fashion_dir(dir, buf, sizeof buf, err))) return AL_ERR;
    const char *base[4] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
    char *p[4];
    for (int i = 0; i < 4; i++) p[i] = idx_path(dir, base[i]);
    al_status st = AL_ERR;
    if (!p[0] || !p[1] || !p[2] || !p[3]) { al_seterr(err, "out of memory"); goto out; }
    if (al_idx_load(p[0], p[1], &out->train, err)) goto out;
    if (al_idx_load(p[2], p[3], &out->test, err)) goto out;
    al_images *s[2] = {&out->train, &out->test};
    for (int k = 0; k < 2; k++) {
        if (s[k]->h != 28 || s[k]->w != 28 || s[k]->classes > 10) {
            al_seterr(err, "%s: not Fashion-MNIST: %dx%d images with %d classes (expected 28x28, 10)",
                      p[2 * k], s[k]->h, s[k]->w, s[k]->classes);
            goto out;
        }
        s[k]->classes = 10;
        if (al__images_set_names(s[k], fashion_names, 10, err)) goto out;
    }
    st = AL_OK;
out:
    for (int i = 0; i < 4; i++) free(p[i]);
    if (st != AL_OK) al_image_split_free(out);
    return st;
}

