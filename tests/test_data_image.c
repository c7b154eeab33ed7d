/* test_data_image.c — Fashion-MNIST from the Debian package, malformed IDX files, image folders
 * (sorting, 80/20 split, resize, channels, skipped files, hostile headers), subsets, stats, batches. */
#define _XOPEN_SOURCE 700
#include "testutil.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static al_image_split fm;   /* Fashion-MNIST, loaded once */

static int setup(void **st) { (void)st; return tu_tmpdir_make("data"); }
static int teardown(void **st) { (void)st; al_image_split_free(&fm); return tu_tmpdir_remove(); }
/* ================================================================ Fashion-MNIST (real data) */
static void load_fm(void)
{
    if (fm.train.n) return;
    al_error e = {{0}};
    const char *dir = NULL;   /* the Debian package: AL_FASHION_MNIST_DIR */
    if (al_fashion_mnist_load(dir, &fm, &e) != AL_OK) fail_msg("Fashion-MNIST did not load (run scripts/install-deps.sh): %s", e.msg);
}

static void test_fashion_mnist_real(void **st)
{
    (void)st;
    double t0 = al_time();
    load_fm();
    print_message("  Fashion-MNIST loaded in %.2f s\n", al_time() - t0);
    assert_int_equal(fm.train.n, 60000); assert_int_equal(fm.test.n, 10000);
    assert_int_equal(fm.skipped, 0);
    const al_images *s[2] = {&fm.train, &fm.test};
    for (int k = 0; k < 2; k++) {
        assert_int_equal(s[k]->c, 1); assert_int_equal(s[k]->h, 28); assert_int_equal(s[k]->w, 28);
        assert_int_equal(s[k]->classes, 10);
        int hist[10] = {0};
        for (int i = 0; i < s[k]->n; i++) { assert_in_range(s[k]->labels[i], 0, 9); hist[s[k]->labels[i]]++; }
        for (int c = 0; c < 10; c++) assert_int_equal(hist[c], k ? 1000 : 6000);
        assert_string_equal(s[k]->class_names[0], "T-shirt/top");
        assert_string_equal(s[k]->class_names[9], "Ankle boot");
    }
    /* the well-known training statistics: mean 0.2860, std 0.3530 */
    float mean, std; al_error e = {{0}};
    assert_int_equal(al_images_stats(&fm.train, NULL, 0, &mean, &std, &e), AL_OK);
    print_message("  train mean %.4f std %.4f\n", mean, std);
    assert_true(fabsf(mean - 0.2860f) < 5e-4f);
    assert_true(fabsf(std - 0.3530f) < 5e-4f);
    /* first training label of the original files is 9 (ankle boot) */
    assert_int_equal(fm.train.labels[0], 9);
}

static void test_subset_stratified(void **st)
{
    (void)st;
    load_fm();
    al_error e = {{0}};
    int *a = malloc(10000 * sizeof *a), *b = malloc(10000 * sizeof *b), *big = malloc(10000 * sizeof *big);
    assert_int_equal(al_images_subset(&fm.train, 1000, 5, a, &e), AL_OK);
    int hist[10] = {0};
    for (int i = 0; i < 1000; i++) { hist[fm.train.labels[a[i]]]++; if (i) assert_true(a[i] > a[i - 1]); }
    for (int c = 0; c < 10; c++) assert_int_equal(hist[c], 100);
    /* same seed: same subset; another seed: another subset */
    assert_int_equal(al_images_subset(&fm.train, 1000, 5, b, &e), AL_OK);
    assert_memory_equal(a, b, 1000 * sizeof *a);
    assert_int_equal(al_images_subset(&fm.train, 1000, 6, b, &e), AL_OK);
    int same = 0; for (int i = 0; i < 1000; i++) same += a[i] == b[i];
    assert_true(same < 200);
    /* nested: the 1000-subset lies inside the 10000-subset of the same seed */
    assert_int_equal(al_images_subset(&fm.train, 10000, 5, big, &e), AL_OK);
    for (int i = 0, j = 0; i < 1000; i++) { while (j < 10000 && big[j] < a[i]) j++; assert_true(j < 10000 && big[j] == a[i]); }
    /* an uneven size: every class gets 1 or 2 */
    assert_int_equal(al_images_subset(&fm.train, 15, 1, a, &e), AL_OK);
    memset(hist, 0, sizeof hist);
    for (int i = 0; i < 15; i++) hist[fm.train.labels[a[i]]]++;
    for (int c = 0; c < 10; c++) assert_in_range(hist[c], 1, 2);
    /* more than the split holds, or none */
    assert_int_equal(al_images_subset(&fm.test, 10001, 1, a, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "10001"));
    memset(&e, 0, sizeof e);
    assert_int_equal(al_images_subset(&fm.test, 0, 1, a, &e), AL_ERR);
    /* the whole split: every index once */
    assert_int_equal(al_images_subset(&fm.test, 10000, 3, big, &e), AL_OK);
    for (int i = 0; i < 10000; i++) assert_int_equal(big[i], i);
    free(a); free(b); free(big);
}

static void test_batch_normalised(void **st)
{
    (void)st;
    load_fm();
    al_error e = {{0}};
    int idx[1000];
    assert_int_equal(al_images_subset(&fm.train, 1000, 2, idx, &e), AL_OK);
    float mean, std;
    assert_int_equal(al_images_stats(&fm.train, idx, 1000, &mean, &std, &e), AL_OK);
    /* reference statistics in double */
    double s = 0, s2 = 0;
    for (int i = 0; i < 1000; i++) for (int j = 0; j < 784; j++) { double v = fm.train.pix[(size_t)idx[i] * 784 + j] / 255.0; s += v; s2 += v * v; }
    double m = s / 784000, sd = sqrt(s2 / 784000 - m * m);
    assert_true(fabs(mean - m) < 1e-6 && fabs(std - sd) < 1e-6);
    const int bi[3] = {idx[7], 0, 59999};
    float *x = malloc(3 * 784 * sizeof *x); int y[3];
    assert_int_equal(al_images_batch(&fm.train, bi, 3, &mean, &std, x, y, &e), AL_OK);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(y[i], fm.train.labels[bi[i]]);
        for (int j = 0; j < 784; j++) {
            float want = ((float)fm.train.pix[(size_t)bi[i] * 784 + j] / 255.f - mean) / std;
            assert_true(fabsf(x[i * 784 + j] - want) <= 1e-6f * (1 + fabsf(want)));
        }
    }
    /* the batch of normalised values of the subset has mean ~0, std ~1 */
    float *xs = malloc((size_t)1000 * 784 * sizeof *xs);
    assert_int_equal(al_images_batch(&fm.train, idx, 1000, &mean, &std, xs, NULL, &e), AL_OK);
    double t = 0, t2 = 0; for (size_t i = 0; i < 784000; i++) { t += xs[i]; t2 += (double)xs[i] * xs[i]; }
    assert_true(fabs(t / 784000) < 1e-4 && fabs(t2 / 784000 - 1) < 1e-3);
    /* an index out of range is an error, not a read past the pixels */
    const int bad[2] = {0, 60000};
    assert_int_equal(al_images_batch(&fm.train, bad, 2, NULL, NULL, x, y, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "60000"));
    free(x); free(xs);
}

/* ================================================================ malformed IDX files */
static void be32(unsigned char *b, uint32_t v) { b[0] = (unsigned char)(v >> 24); b[1] = (unsigned char)(v >> 16); b[2] = (unsigned char)(v >> 8); b[3] = (unsigned char)v; }
/* An idx3 file of n images rows×cols (pixel = i+j) and an idx1 file of nl labels (i % 3); raw or gzip. */
static void write_idx(const char *ip, const char *lp, uint32_t magic_i, uint32_t n, uint32_t rows, uint32_t cols,
                      uint32_t n_data, uint32_t nl, int gz, size_t extra)
{
    size_t bytes = 16 + (size_t)n_data * rows * cols + extra;
    unsigned char *b = calloc(bytes, 1);
    be32(b, magic_i); be32(b + 4, n); be32(b + 8, rows); be32(b + 12, cols);
    for (size_t i = 16; i < bytes; i++) b[i] = (unsigned char)(i * 7);
    unsigned char *l = calloc(8 + nl, 1);
    be32(l, 0x801); be32(l + 4, nl);
    for (uint32_t i = 0; i < nl; i++) l[8 + i] = (unsigned char)(i % 3);
    if (gz) {
        gzFile f = gzopen(ip, "wb"); assert_non_null(f); assert_int_equal(gzwrite(f, b, (unsigned)bytes), (int)bytes); gzclose(f);
        f = gzopen(lp, "wb"); assert_non_null(f); assert_int_equal(gzwrite(f, l, 8 + nl), (int)(8 + nl)); gzclose(f);
    } else {
        tu_spit(ip, b, bytes); tu_spit(lp, l, 8 + nl);
    }
    free(b); free(l);
}
static void idx_refused(const char *ip, const char *lp, const char *want_file, const char *want)
{
    al_images im; al_error e = {{0}};
    if (al_idx_load(ip, lp, &im, &e) != AL_ERR) fail_msg("%s loaded, expected an error '%s'", ip, want);
    if (!strstr(e.msg, want)) fail_msg("error '%s' does not mention '%s'", e.msg, want);
    if (!strstr(e.msg, want_file)) fail_msg("error '%s' does not name %s", e.msg, want_file);
    if (getenv("AL_TEST_VERBOSE")) print_message("  refused: %s\n", e.msg);
    assert_null(im.pix); assert_null(im.labels);
}

static void test_idx_valid_small(void **st)
{
    (void)st;
    const char *ip = tu_tpath("ok-images.gz"), *lp = tu_tpath("ok-labels.gz");
    for (int gz = 0; gz < 2; gz++) {
        write_idx(ip, lp, 0x803, 5, 4, 3, 5, 5, gz, 0);
        al_images im; al_error e = {{0}};
        assert_int_equal(al_idx_load(ip, lp, &im, &e), AL_OK);
        assert_int_equal(im.n, 5); assert_int_equal(im.h, 4); assert_int_equal(im.w, 3); assert_int_equal(im.c, 1);
        assert_int_equal(im.classes, 3);
        assert_int_equal(im.pix[0], (unsigned char)(16 * 7)); assert_int_equal(im.pix[59], (unsigned char)(75 * 7));
        assert_int_equal(im.labels[4], 1);
        al_images_free(&im);
    }
}

static void test_idx_malformed(void **st)
{
    (void)st;
    const char *ip = tu_tpath("images"), *lp = tu_tpath("labels");
    /* wrong magic (image and label file) */
    write_idx(ip, lp, 0x802, 5, 4, 3, 5, 5, 1, 0);
    idx_refused(ip, lp, ip, "bad magic number 0x00000802");
    write_idx(ip, lp, 0x803, 5, 4, 3, 5, 5, 0, 0);
    unsigned char badl[9] = {0, 0, 8, 3, 0, 0, 0, 1, 0};
    tu_spit(lp, badl, 9);
    idx_refused(ip, lp, lp, "bad magic number 0x00000803");
    /* label count != image count */
    write_idx(ip, lp, 0x803, 5, 4, 3, 5, 4, 1, 0);
    idx_refused(ip, lp, lp, "4 labels, but");
    /* absurd dimensions, refused before allocating */
    write_idx(ip, lp, 0x803, 5, 100000, 3, 0, 5, 0, 0);
    idx_refused(ip, lp, ip, "absurd image size 100000x3");
    write_idx(ip, lp, 0x803, 0, 4, 3, 0, 0, 0, 0);
    idx_refused(ip, lp, ip, "0 images");
    write_idx(ip, lp, 0x803, 0x7fffffff, 28, 28, 0, 5, 0, 0);   /* sizes are checked before the label count */
    idx_refused(ip, lp, ip, "limit");
    /* short raw file: 3 of 5 images present → data ran out at 16 + 3·12 = 52 */
    write_idx(ip, lp, 0x803, 5, 4, 3, 3, 5, 0, 0);
    idx_refused(ip, lp, ip, "byte offset 52");
    /* a header cut short */
    tu_spit(ip, "\0\0\x08\x03\0\0", 6);
    idx_refused(ip, lp, ip, "byte offset 6");
    /* trailing garbage after the declared pixels */
    write_idx(ip, lp, 0x803, 5, 4, 3, 5, 5, 1, 7);
    idx_refused(ip, lp, ip, "trailing data at byte offset 76");
    /* a truncated gzip stream: cut the compressed file in the middle */
    const char *gp = tu_tpath("cut.gz");
    write_idx(gp, lp, 0x803, 200, 28, 28, 200, 200, 1, 0);
    FILE *f = fopen(gp, "rb"); fseek(f, 0, SEEK_END); long L = ftell(f); fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)L); assert_int_equal(fread(b, 1, (size_t)L, f), (size_t)L); fclose(f);
    tu_spit(gp, b, (size_t)L / 2);
    free(b);
    idx_refused(gp, lp, gp, "byte offset");
    /* a missing file */
    idx_refused(tu_tpath("does-not-exist"), lp, "does-not-exist", "cannot open");
}

/* ================================================================ image folders */
typedef struct warns { int n; char msg[16][600]; } warns;
static void collect(void *ud, const char *m) { warns *w = ud; if (w->n < 16) snprintf(w->msg[w->n], sizeof w->msg[0], "%s", m); w->n++; }
static int warned_about(const warns *w, const char *a, const char *b)
{
    for (int i = 0; i < w->n && i < 16; i++) if (strstr(w->msg[i], a) && (!b || strstr(w->msg[i], b))) return 1;
    return 0;
}

/* A solid image (every pixel = rgb, or grey v = rgb[0]) written as PNG by attnlab's own writer. */
static void solid_png(const char *path, int w, int h, int ch, const uint8_t *rgb)
{
    uint8_t *p = malloc((size_t)w * h * ch);
    for (int i = 0; i < w * h; i++) for (int c = 0; c < ch; c++) p[i * ch + c] = rgb[c];
    al_error e = {{0}};
    assert_int_equal(al_png_write(path, p, w, h, ch, &e), AL_OK);
    free(p);
}
/* A PNG that has only a signature, an IHDR claiming w×h, and IEND (CRCs correct). */
static void hostile_png(const char *path, uint32_t w, uint32_t h)
{
    unsigned char b[8 + 25 + 12] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    unsigned char *c = b + 8;
    be32(c, 13); memcpy(c + 4, "IHDR", 4); be32(c + 8, w); be32(c + 12, h);
    c[16] = 8; c[17] = 0; c[18] = 0; c[19] = 0; c[20] = 0;
    be32(c + 21, (uint32_t)crc32(0, c + 4, 17));
    unsigned char *e = c + 25;
    be32(e, 0); memcpy(e + 4, "IEND", 4); be32(e + 8, (uint32_t)crc32(0, e + 4, 4));
    tu_spit(path, b, sizeof b);
}

/* Folder "fold": classes zebra, ant, moth (10 images each, value 10·class_on_disk + j), plus odd files. */
static void make_folder(void)
{
    const char *cls[3] = {"zebra", "ant", "moth"};
    for (int k = 0; k < 3; k++) {
        tu_mkdirs(tu_tpath("fold/%s", cls[k]));
        for (int j = 0; j < 10; j++) {
            uint8_t v = (uint8_t)(50 + 60 * k + 3 * j);
            uint8_t rgb[3] = {v, v, v};
            /* mostly 8x8 grey; the ant class has one RGB image and one 12x10 image */
            int colour = k == 1 && j == 3, big = k == 1 && j == 4;
            if (colour) { rgb[1] = (uint8_t)(v + 1); rgb[2] = (uint8_t)(v + 2); }
            solid_png(tu_tpath("fold/%s/img%02d.png", cls[k], j), big ? 12 : 8, big ? 10 : 8, colour ? 3 : 1, rgb);
        }
    }
    tu_spit(tu_tpath("fold/ant/notes.txt"), "not an image\n", 13);
    hostile_png(tu_tpath("fold/moth/huge.png"), 100000, 100000);
    hostile_png(tu_tpath("fold/moth/wide.png"), 20000, 100);
    tu_spit(tu_tpath("fold/README"), "x", 1);   /* a file next to the classes */
    tu_spit(tu_tpath("fold/zebra/.hidden"), "x", 1);   /* hidden: ignored silently */
}

static void test_folder_defaults_and_split(void **st)
{
    (void)st;
    char root[512]; snprintf(root, sizeof root, "%s", tu_tpath("fold"));
    make_folder();
    warns w = {0};
    al_folder_opts o = {0}; o.warn = collect; o.warn_ud = &w;
    al_image_split d; al_error e = {{0}};
    if (al_image_folder_load(root, &o, &d, &e) != AL_OK) fail_msg("%s", e.msg);
    /* classes sorted by name */
    assert_int_equal(d.train.classes, 3);
    assert_string_equal(d.train.class_names[0], "ant");
    assert_string_equal(d.train.class_names[1], "moth");
    assert_string_equal(d.train.class_names[2], "zebra");
    /* default size: the most common (8x8); default channels: 3 because one image has colour */
    assert_int_equal(d.train.h, 8); assert_int_equal(d.train.w, 8); assert_int_equal(d.train.c, 3);
    assert_int_equal(d.test.c, 3);
    /* 80/20 per class */
    assert_int_equal(d.train.n, 24); assert_int_equal(d.test.n, 6);
    int ht[3] = {0}, hs[3] = {0};
    for (int i = 0; i < 24; i++) ht[d.train.labels[i]]++;
    for (int i = 0; i < 6; i++) hs[d.test.labels[i]]++;
    for (int k = 0; k < 3; k++) { assert_int_equal(ht[k], 8); assert_int_equal(hs[k], 2); }
    /* class-major, file order within a class: solid values increase */
    for (int i = 1; i < 24; i++)
        if (d.train.labels[i] == d.train.labels[i - 1]) assert_true(d.train.pix[(size_t)i * 192] > d.train.pix[(size_t)(i - 1) * 192]);
        else assert_true(d.train.labels[i] == d.train.labels[i - 1] + 1);
    /* skipped with warnings naming the files: notes.txt, huge.png, wide.png, README */
    assert_int_equal(d.skipped, 4); assert_int_equal(w.n, 4);
    assert_true(warned_about(&w, "ant/notes.txt", "skipped"));
    assert_true(warned_about(&w, "moth/huge.png", "100000x100000"));
    assert_true(warned_about(&w, "moth/wide.png", "20000x100"));
    assert_true(warned_about(&w, "fold/README", NULL));
    if (getenv("AL_TEST_VERBOSE")) for (int i = 0; i < w.n; i++) print_message("  warning: %s\n", w.msg[i]);
    /* each image is a solid colour (grey images replicated into 3 channels, resize keeps it solid) */
    al_images *all[2] = {&d.train, &d.test};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < all[s]->n; i++) {
            const uint8_t *p = all[s]->pix + (size_t)i * 192;
            for (int j = 0; j < 192; j++) assert_true(abs((int)p[j] - (int)p[(j / 64) * 64]) <= 1);
        }
    /* deterministic: the same load (on one thread, too) gives the same bytes; another split seed
     * another test set */
    al_image_split d2; warns w2 = {0}; o.warn_ud = &w2;
    int nthr = al_threads();
    al_set_threads(1);
    assert_int_equal(al_image_folder_load(root, &o, &d2, &e), AL_OK);
    al_set_threads(nthr);
    assert_memory_equal(d.train.pix, d2.train.pix, (size_t)24 * 192);
    assert_memory_equal(d.test.pix, d2.test.pix, (size_t)6 * 192);
    assert_memory_equal(d.test.labels, d2.test.labels, 6 * sizeof(int));
    assert_int_equal(w2.n, 4);
    for (int i = 0; i < 4; i++) assert_string_equal(w.msg[i], w2.msg[i]);   /* warnings in file order */
    al_image_split_free(&d2);
    int differs = 0;
    for (uint64_t seed = 1; seed < 6 && !differs; seed++) {
        o.split_seed = seed;
        assert_int_equal(al_image_folder_load(root, &o, &d2, &e), AL_OK);
        differs = memcmp(d.test.pix, d2.test.pix, (size_t)6 * 192) != 0;
        al_image_split_free(&d2);
    }
    assert_true(differs);
    al_image_split_free(&d);
}

/* A 20x10 JPEG of solid RGB (40, 120, 200), quality 90, made once with stb_image_write (whose JPEG
 * encoder trips UBSan, so it is not linked into attnlab). */
static const char jpeg_20x10[] =
    "\xff\xd8\xff\xe0\x00\x10\x4a\x46\x49\x46\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00\xff\xdb\x00\x84\x00\x03\x02\x02"
    "\x03\x02\x02\x03\x03\x03\x03\x04\x03\x03\x04\x05\x08\x05\x05\x04\x04\x05\x0a\x07\x07\x06\x08\x0c\x0a\x0c\x0c\x0b"
    "\x0a\x0b\x0b\x0d\x0e\x12\x10\x0d\x0e\x11\x0e\x0b\x0b\x10\x16\x10\x11\x13\x14\x15\x15\x15\x0c\x0f\x17\x18\x16\x14"
    "\x18\x12\x14\x15\x14\x01\x03\x04\x04\x05\x04\x05\x09\x05\x05\x09\x14\x0d\x0b\x0d\x14\x14\x14\x14\x14\x14\x14\x14"
    "\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14"
    "\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\x14\xff\xc0\x00\x11\x08\x00\x0a\x00\x14\x03\x01\x22\x00\x02"
    "\x11\x01\x03\x11\x01\xff\xc4\x01\xa2\x00\x00\x01\x05\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01"
    "\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x10\x00\x02\x01\x03\x03\x02\x04\x03\x05\x05\x04\x04\x00\x00\x01\x7d\x01"
    "\x02\x03\x00\x04\x11\x05\x12\x21\x31\x41\x06\x13\x51\x61\x07\x22\x71\x14\x32\x81\x91\xa1\x08\x23\x42\xb1\xc1\x15"
    "\x52\xd1\xf0\x24\x33\x62\x72\x82\x09\x0a\x16\x17\x18\x19\x1a\x25\x26\x27\x28\x29\x2a\x34\x35\x36\x37\x38\x39\x3a"
    "\x43\x44\x45\x46\x47\x48\x49\x4a\x53\x54\x55\x56\x57\x58\x59\x5a\x63\x64\x65\x66\x67\x68\x69\x6a\x73\x74\x75\x76"
    "\x77\x78\x79\x7a\x83\x84\x85\x86\x87\x88\x89\x8a\x92\x93\x94\x95\x96\x97\x98\x99\x9a\xa2\xa3\xa4\xa5\xa6\xa7\xa8"
    "\xa9\xaa\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xc2\xc3\xc4\xc5\xc6\xc7\xc8\xc9\xca\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9"
    "\xda\xe1\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9\xfa\x01\x00\x03\x01\x01\x01\x01"
    "\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x11\x00\x02\x01\x02\x04"
    "\x04\x03\x04\x07\x05\x04\x04\x00\x01\x02\x77\x00\x01\x02\x03\x11\x04\x05\x21\x31\x06\x12\x41\x51\x07\x61\x71\x13"
    "\x22\x32\x81\x08\x14\x42\x91\xa1\xb1\xc1\x09\x23\x33\x52\xf0\x15\x62\x72\xd1\x0a\x16\x24\x34\xe1\x25\xf1\x17\x18"
    "\x19\x1a\x26\x27\x28\x29\x2a\x35\x36\x37\x38\x39\x3a\x43\x44\x45\x46\x47\x48\x49\x4a\x53\x54\x55\x56\x57\x58\x59"
    "\x5a\x63\x64\x65\x66\x67\x68\x69\x6a\x73\x74\x75\x76\x77\x78\x79\x7a\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x92\x93"
    "\x94\x95\x96\x97\x98\x99\x9a\xa2\xa3\xa4\xa5\xa6\xa7\xa8\xa9\xaa\xb2\xb3\xb4\xb5\xb6\xb7\xb8\xb9\xba\xc2\xc3\xc4"
    "\xc5\xc6\xc7\xc8\xc9\xca\xd2\xd3\xd4\xd5\xd6\xd7\xd8\xd9\xda\xe2\xe3\xe4\xe5\xe6\xe7\xe8\xe9\xea\xf2\xf3\xf4\xf5"
    "\xf6\xf7\xf8\xf9\xfa\xff\xda\x00\x0c\x03\x01\x00\x02\x11\x03\x11\x00\x3f\x00\xe0\xa8\xa2\x8a\xfe\x8f\x3f\x03\x0a"
    "\x28\xa2\x80\x3f\xff\xd9";

/* A 24-bit BMP (bottom-up rows of BGR, each padded to 4 bytes). */
static void write_bmp(const char *path, int w, int h, const uint8_t *rgb)
{
    int stride = (w * 3 + 3) & ~3;
    size_t n = 54 + (size_t)stride * h;
    uint8_t *b = calloc(n, 1);
    uint32_t v[] = {(uint32_t)n, 0, 54, 40, (uint32_t)w, (uint32_t)h};
    b[0] = 'B'; b[1] = 'M';
    for (int i = 0; i < 6; i++) for (int k = 0; k < 4; k++) b[2 + 4 * i + k] = (uint8_t)(v[i] >> (8 * k));
    b[26] = 1; b[28] = 24;   /* planes, bits per pixel; compression 0 */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) b[54 + (size_t)(h - 1 - y) * stride + 3 * x + c] = rgb[3 * (y * w + x) + 2 - c];
    tu_spit(path, b, n);
    free(b);
}

static void test_folder_size_channels_formats(void **st)
{
    (void)st;
    /* one class per format: PNG (attnlab's writer), JPEG (embedded bytes), BMP and PGM by hand */
    char root[512]; snprintf(root, sizeof root, "%s", tu_tpath("fmt"));
    tu_mkdirs(tu_tpath("fmt/a_png")); tu_mkdirs(tu_tpath("fmt/b_jpg")); tu_mkdirs(tu_tpath("fmt/c_bmp")); tu_mkdirs(tu_tpath("fmt/d_pgm"));
    uint8_t red[3] = {255, 0, 0};
    for (int j = 0; j < 5; j++) solid_png(tu_tpath("fmt/a_png/%d.png", j), 6, 4, 3, red);
    uint8_t *rgb = malloc(20 * 10 * 3);
    for (int i = 0; i < 200; i++) { rgb[3 * i] = 40; rgb[3 * i + 1] = 120; rgb[3 * i + 2] = 200; }
    for (int j = 0; j < 5; j++) {
        tu_spit(tu_tpath("fmt/b_jpg/%d.jpg", j), jpeg_20x10, sizeof jpeg_20x10 - 1);
        write_bmp(tu_tpath("fmt/c_bmp/%d.bmp", j), 20, 10, rgb);
        char pgm[64 + 35]; int hl = snprintf(pgm, 64, "P5\n7 5\n255\n");
        memset(pgm + hl, 77, 35);
        tu_spit(tu_tpath("fmt/d_pgm/%d.pgm", j), pgm, (size_t)hl + 35);
    }
    free(rgb);
    al_folder_opts o = {0}; o.h = 16; o.w = 12; o.channels = 1;
    al_image_split d; al_error e = {{0}};
    if (al_image_folder_load(root, &o, &d, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(d.skipped, 0);
    assert_int_equal(d.train.h, 16); assert_int_equal(d.train.w, 12); assert_int_equal(d.train.c, 1);
    assert_int_equal(d.train.n + d.test.n, 20);
    assert_int_equal(d.test.n, 4);   /* round(0.2 · 5) = 1 per class */
    /* greyscale is stb's luminance (77 R + 150 G + 29 B) / 256; resizing keeps solid images solid */
    const int want[4] = {(255 * 77) >> 8, (40 * 77 + 120 * 150 + 200 * 29) >> 8, (40 * 77 + 120 * 150 + 200 * 29) >> 8, 77};
    for (int i = 0; i < d.train.n; i++) {
        int k = d.train.labels[i], tol = k == 1 ? 4 : 1;   /* JPEG is lossy */
        for (int j = 0; j < 16 * 12; j++)
            if (abs((int)d.train.pix[(size_t)i * 192 + j] - want[k]) > tol)
                fail_msg("class %d image %d pixel %d: %d, want %d", k, i, j, d.train.pix[(size_t)i * 192 + j], want[k]);
    }
    al_image_split_free(&d);
    /* RGB requested: planes (channel-major) hold R, G, B */
    o.channels = 3; o.h = 0; o.w = 0;
    assert_int_equal(al_image_folder_load(root, &o, &d, &e), AL_OK);
    assert_int_equal(d.train.c, 3);
    assert_int_equal(d.train.h, 10); assert_int_equal(d.train.w, 20);   /* the most common size */
    for (int i = 0; i < d.train.n; i++) {
        if (d.train.labels[i] != 2) continue;   /* the BMP class: lossless */
        const uint8_t *p = d.train.pix + (size_t)i * 600;
        assert_int_equal(p[0], 40); assert_int_equal(p[200], 120); assert_int_equal(p[400], 200); assert_int_equal(p[599], 200);
    }
    al_image_split_free(&d);
}

static void test_folder_train_test_dirs(void **st)
{
    (void)st;
    uint8_t g[1] = {9};
    char root[512]; snprintf(root, sizeof root, "%s", tu_tpath("tt"));
    for (int j = 0; j < 3; j++) { tu_mkdirs(tu_tpath("tt/train/cat")); tu_mkdirs(tu_tpath("tt/train/dog")); tu_mkdirs(tu_tpath("tt/test/dog"));
        solid_png(tu_tpath("tt/train/cat/%d.png", j), 5, 5, 1, g); solid_png(tu_tpath("tt/train/dog/%d.png", j), 5, 5, 1, g); }
    solid_png(tu_tpath("tt/test/dog/x.png"), 5, 5, 1, g);
    al_image_split d; al_error e = {{0}};
    if (al_image_folder_load(root, NULL, &d, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(d.train.n, 6); assert_int_equal(d.test.n, 1);
    assert_int_equal(d.test.labels[0], 1);   /* dog */
    assert_int_equal(d.test.classes, 2);
    assert_int_equal(d.train.c, 1);
    al_image_split_free(&d);
    /* a test class that training does not have is an error */
    tu_mkdirs(tu_tpath("tt/test/emu"));
    solid_png(tu_tpath("tt/test/emu/y.png"), 5, 5, 1, g);
    assert_int_equal(al_image_folder_load(root, NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "emu"));
}

static void test_folder_errors(void **st)
{
    (void)st;
    al_image_split d; al_error e = {{0}};
    /* empty folder */
    tu_mkdirs(tu_tpath("empty"));
    assert_int_equal(al_image_folder_load(tu_tpath("empty"), NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no class directories"));
    assert_non_null(strstr(e.msg, tu_tpath("empty")));
    /* a class whose only file is not an image */
    uint8_t g[1] = {9};
    tu_mkdirs(tu_tpath("bad/ok")); tu_mkdirs(tu_tpath("bad/junk"));
    solid_png(tu_tpath("bad/ok/1.png"), 4, 4, 1, g);
    tu_spit(tu_tpath("bad/junk/1.png"), "\x89PNG\r\n\x1a\nnot really", 18);
    memset(&e, 0, sizeof e);
    warns w = {0}; al_folder_opts o = {0}; o.warn = collect; o.warn_ud = &w;
    assert_int_equal(al_image_folder_load(tu_tpath("bad"), &o, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "junk"));
    assert_non_null(strstr(e.msg, "no usable images"));
    assert_true(warned_about(&w, "junk/1.png", "skipped"));
    /* not a directory; bad options */
    memset(&e, 0, sizeof e);
    assert_int_equal(al_image_folder_load(tu_tpath("nowhere"), NULL, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "nowhere"));
    memset(&e, 0, sizeof e);
    o.channels = 2;
    assert_int_equal(al_image_folder_load(tu_tpath("bad"), &o, &d, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "channels"));
    /* a PNG whose header passes stbi_info but whose data is corrupt: skipped at decode with a warning */
    tu_mkdirs(tu_tpath("corrupt/c"));
    solid_png(tu_tpath("corrupt/c/good.png"), 4, 4, 1, g);
    hostile_png(tu_tpath("corrupt/c/nodata.png"), 4, 4);
    memset(&e, 0, sizeof e); memset(&w, 0, sizeof w); o.channels = 0;
    assert_int_equal(al_image_folder_load(tu_tpath("corrupt"), &o, &d, &e), AL_OK);
    assert_int_equal(d.skipped, 1);
    assert_true(warned_about(&w, "nodata.png", "could not be decoded"));
    assert_int_equal(d.train.n + d.test.n, 1);
    al_image_split_free(&d);
}

/* fashion-pairs: a pool of 9 blocks of distinct sizes on 6x6 images (grey value 10 + item, class item %
 * 3): every example holds exactly two items, whole (each grey value's pixel count is its block's area, so
 * the boxes never overlap) and distinct, labelled 1 exactly when their classes agree, about half and half;
 * the same seed gives the same bytes, another seed others; bad pools and sizes are errors. */
static void test_fashion_pairs(void **st)
{
    (void)st;
    enum { P = 9, S = 6, N = 3000 };
    al_images pool = {0};
    pool.n = P; pool.c = 1; pool.h = S; pool.w = S; pool.classes = 3;
    pool.pix = calloc(P * S * S, 1); pool.labels = malloc(P * sizeof(int));
    int area[P];
    for (int i = 0; i < P; i++) {
        const int bh = 1 + i % 5, bw = 1 + (i * 2) % 6, y0 = i % (S - bh + 1), x0 = (i * 3) % (S - bw + 1);
        area[i] = bh * bw;
        for (int y = 0; y < bh; y++) for (int x = 0; x < bw; x++) pool.pix[i * S * S + (y0 + y) * S + x0 + x] = (uint8_t)(10 + i);
        pool.labels[i] = i % 3;
    }
    al_images a, b, c2; al_error e = {{0}};
    assert_int_equal(al_pairs_make(&pool, N, 7, &a, &e), AL_OK);
    assert_int_equal(a.n, N); assert_int_equal(a.h, 2 * S); assert_int_equal(a.w, 2 * S); assert_int_equal(a.c, 1);
    assert_int_equal(a.classes, 2);
    assert_string_equal(a.class_names[0], "different"); assert_string_equal(a.class_names[1], "same");
    int same = 0;
    for (int k = 0; k < N; k++) {
        int count[P] = {0}, other = 0;
        const uint8_t *p = a.pix + (size_t)k * 4 * S * S;
        for (int q = 0; q < 4 * S * S; q++) {
            if (!p[q]) continue;
            if (p[q] >= 10 && p[q] < 10 + P) count[p[q] - 10]++; else other++;
        }
        assert_int_equal(other, 0);
        int items[2], ni = 0;
        for (int i = 0; i < P; i++) if (count[i]) { if (ni < 2) items[ni] = i; ni++; }
        if (ni != 2) fail_msg("example %d holds %d items", k, ni);
        for (int t = 0; t < 2; t++)
            if (count[items[t]] != area[items[t]]) fail_msg("example %d: item %d has %d of its %d pixels", k, items[t], count[items[t]], area[items[t]]);
        assert_int_equal(a.labels[k], pool.labels[items[0]] == pool.labels[items[1]]);
        same += a.labels[k];
    }
    assert_true(same > N * 45 / 100 && same < N * 55 / 100);
    assert_int_equal(al_pairs_make(&pool, N, 7, &b, &e), AL_OK);
    assert_memory_equal(a.pix, b.pix, (size_t)N * 4 * S * S);
    assert_memory_equal(a.labels, b.labels, N * sizeof(int));
    assert_int_equal(al_pairs_make(&pool, N, 8, &c2, &e), AL_OK);
    assert_true(memcmp(a.pix, c2.pix, (size_t)N * 4 * S * S) != 0);
    al_images_free(&a); al_images_free(&b); al_images_free(&c2);
    assert_int_equal(al_pairs_make(&pool, 0, 7, &a, &e), AL_ERR);
    pool.classes = 1;
    for (int i = 0; i < P; i++) pool.labels[i] = 0;
    assert_int_equal(al_pairs_make(&pool, 10, 7, &a, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "fashion-pairs"));
    al_images_free(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fashion_mnist_real),
        cmocka_unit_test(test_subset_stratified),
        cmocka_unit_test(test_batch_normalised),
        cmocka_unit_test(test_idx_valid_small),
        cmocka_unit_test(test_idx_malformed),
        cmocka_unit_test(test_folder_defaults_and_split),
        cmocka_unit_test(test_folder_size_channels_formats),
        cmocka_unit_test(test_folder_train_test_dirs),
        cmocka_unit_test(test_folder_errors),
        cmocka_unit_test(test_fashion_pairs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
