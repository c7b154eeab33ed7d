/* test_reliability_data.c — the data loaders under the memory budget and against forged headers:
 * IDX counts, image folders whose tiny files claim huge images (and the decoded total of a folder),
 * a folder too small for a test split, graph feature indices far beyond the data (5 000 000, and
 * 2147483647 which overflowed int), CoNLL-U against the budget, directories where files are
 * expected, long paths that must not cut the reason off a message; single image files checked as a
 * folder's files are. */
#include "testutil.h"
#include "attnlab/images.h"
#include "attnlab/graph.h"
#include "attnlab/gnn.h"
#include "attnlab/text.h"
#include "attnlab/io.h"
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];
static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }
static int setup(void **st) { (void)st; snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_reldata_XXXXXX"); return mkdtemp(tmpdir) ? 0 : -1; }
static int teardown(void **st) { (void)st; al_mem_budget_set(0); return nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }
static const char *tpath(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *tpath(const char *fmt, ...)
{
    static char b[8][1200]; static int k; k = (k + 1) % 8;
    int o = snprintf(b[k], sizeof b[k], "%s/", tmpdir);
    va_list ap; va_start(ap, fmt); vsnprintf(b[k] + o, sizeof b[k] - (size_t)o, fmt, ap); va_end(ap);
    return b[k];
}
static void mkdirs(const char *p) { char b[1200]; snprintf(b, sizeof b, "%s", p); for (char *s = b + 1; *s; s++) if (*s == '/') { *s = 0; mkdir(b, 0755); *s = '/'; } mkdir(b, 0755); }
static void spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n); fclose(f);
}
#define ASSERT_HAS(msg, s) do { if (!strstr((msg), (s))) fail_msg("message \"%s\" lacks \"%s\"", (msg), (s)); } while (0)

/* A 70-byte 24-bit BMP whose header claims w x h pixels (the pixel data is missing). */
static void forged_bmp(const char *path, int w, int h)
{
    unsigned char b[70] = {'B', 'M'};
    uint32_t v[] = {70, 0, 54, 40, (uint32_t)w, (uint32_t)h};
    memcpy(b + 2, &v[0], 4); memcpy(b + 10, &v[2], 4); memcpy(b + 14, &v[3], 4);
    memcpy(b + 18, &v[4], 4); memcpy(b + 22, &v[5], 4);
    b[26] = 1; b[28] = 24;   /* planes, bits per pixel; compression 0 */
    spit(path, b, sizeof b);
}
/* A valid 8-bit grey PGM of w x h. */
static void pgm(const char *path, int w, int h, int seed)
{
    char hdr[64]; int k = snprintf(hdr, sizeof hdr, "P5\n%d %d\n255\n", w, h);
    unsigned char *b = malloc((size_t)k + (size_t)w * h);
    memcpy(b, hdr, (size_t)k);
    for (int i = 0; i < w * h; i++) b[k + i] = (unsigned char)(i * 7 + seed * 31);
    spit(path, b, (size_t)k + (size_t)w * h);
    free(b);
}

static int nwarn;
static void count_warn(void *ud, const char *msg) { (void)ud; (void)msg; nwarn++; }

/* Six 70-byte BMPs claiming 8194x4098: refused before decoding, naming a file, the size and the limit. */
static void test_folder_forged_huge_headers(void **st)
{
    (void)st;
    for (int i = 0; i < 6; i++) {
        mkdirs(tpath("forged/c%d", i % 2));
        forged_bmp(tpath("forged/c%d/%d.bmp", i % 2, i), 8194, 4098);
    }
    al_image_split d; al_error e = {{0}};
    al_folder_opts o = {0}; o.warn = count_warn; nwarn = 0;
    assert_int_equal(al_image_folder_load(tpath("forged"), &o, &d, &e), AL_ERR);
    assert_int_equal(nwarn, 6);
    ASSERT_HAS(e.msg, "0.bmp: header claims 8194x4098 pixels");
    ASSERT_HAS(e.msg, "from a 70-byte file, more than 4096 decoded bytes per file byte");
    assert_null(strchr(e.msg, '\n'));
    /* next to real images they are skipped and do not set the size */
    for (int i = 0; i < 6; i++) pgm(tpath("forged/c%d/real%d.pgm", i % 2, i), 8, 6, i);
    nwarn = 0;
    assert_int_equal(al_image_folder_load(tpath("forged"), &o, &d, &e), AL_OK);
    assert_int_equal(nwarn, 6);
    assert_int_equal(d.train.h, 6); assert_int_equal(d.train.w, 8);
    assert_int_equal(d.skipped, 6);
    al_image_split_free(&d);
    /* the committed copy of the minimal input */
    struct stat sb;
    assert_int_equal(stat("tests/data/bmp-70-bytes-claims-8194x4098.bmp", &sb), 0);
    assert_int_equal(sb.st_size, 70);
}

/* The decoded total of a folder is budgeted before decoding. */
static void test_folder_budget(void **st)
{
    (void)st;
    for (int i = 0; i < 8; i++) { mkdirs(tpath("bud/c%d", i % 2)); pgm(tpath("bud/c%d/%d.pgm", i % 2, i), 64, 64, i); }
    al_image_split d; al_error e = {{0}};
    al_mem_budget_set(20000);
    assert_int_equal(al_image_folder_load(tpath("bud"), NULL, &d, &e), AL_ERR);
    ASSERT_HAS(e.msg, "8 images at 1x64x64");
    ASSERT_HAS(e.msg, "more than the memory budget of 19.5 KiB");
    ASSERT_HAS(e.msg, ".pgm, is 64x64)");
    al_mem_budget_set(0);
    al_error e2 = {{0}};
    assert_int_equal(al_image_folder_load(tpath("bud"), NULL, &d, &e2), AL_OK);
    al_image_split_free(&d);
}

/* One image per class: no test image can be held out; an error, not test_acc nan later. */
static void test_folder_too_small_for_test_split(void **st)
{
    (void)st;
    for (int i = 0; i < 3; i++) { mkdirs(tpath("small/c%d", i)); pgm(tpath("small/c%d/a.pgm", i), 8, 8, i); }
    al_image_split d; al_error e = {{0}};
    assert_int_equal(al_image_data_load(tpath("small"), NULL, 0, 0, 0, NULL, NULL, &d, &e), AL_ERR);
    ASSERT_HAS(e.msg, "too few images for a test split: 3 usable images in 3 classes");
    al_folder_opts o = {0}; o.require_test = 1;
    al_error e1 = {{0}};
    assert_int_equal(al_image_folder_load(tpath("small"), &o, &d, &e1), AL_ERR);
    ASSERT_HAS(e1.msg, "too few images for a test split");
    /* without require_test the folder loads with an empty test split, as before */
    al_error e2 = {{0}};
    assert_int_equal(al_image_folder_load(tpath("small"), NULL, &d, &e2), AL_OK);
    assert_int_equal(d.test.n, 0);
    al_image_split_free(&d);
}

/* IDX: a header declaring more than the budget is refused before allocating. */
static void test_idx_budget(void **st)
{
    (void)st;
    unsigned char hi[16] = {0, 0, 8, 3, 0, 0, 0xEA, 0x60, 0, 0, 0, 28, 0, 0, 0, 28};   /* 60000 x 28 x 28 */
    unsigned char hl[8] = {0, 0, 8, 1, 0, 0, 0xEA, 0x60};
    spit(tpath("i.idx"), hi, 16); spit(tpath("l.idx"), hl, 8);
    al_images im; al_error e = {{0}};
    al_mem_budget_set(1 << 20);
    assert_int_equal(al_idx_load(tpath("i.idx"), tpath("l.idx"), &im, &e), AL_ERR);
    ASSERT_HAS(e.msg, "header declares 60000 images of 28x28: needs 45.1 MiB, more than the memory budget of 1.0 MiB");
    al_mem_budget_set(0);
    al_error e2 = {{0}};
    assert_int_equal(al_idx_load(tpath("i.idx"), tpath("l.idx"), &im, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "data ran out");
    /* a directory where the file should be */
    mkdirs(tpath("idxdir"));
    al_error e3 = {{0}};
    assert_int_equal(al_idx_load(tpath("idxdir"), tpath("l.idx"), &im, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "is a directory");
}

static void graph_dir(const char *name, const char *features)
{
    mkdirs(tpath("%s", name));
    spit(tpath("%s/features.libsvm", name), features, strlen(features));
    spit(tpath("%s/edges.txt", name), "0 1\n1 2\n2 3\n", 12);
    spit(tpath("%s/train.idx", name), "0\n", 2);
    spit(tpath("%s/val.idx", name), "1\n", 2);
    spit(tpath("%s/test.idx", name), "2\n3\n", 4);
}

/* A feature index of 5 000 000 on one line made every model 350x larger, silently; 2147483647
 * overflowed fan_in + fan_out (a UBSan abort). Both are refused naming file:line and what they imply. */
static void test_graph_absurd_feature_index(void **st)
{
    (void)st;
    graph_dir("g5m", "0 1:1 2:1\n1 1:1 3:1\n0 2:1 5000000:1\n1 3:1\n");
    al_graph g; al_error e = {{0}};
    assert_int_equal(al_graph_load(&g, tpath("g5m"), 1, &e), AL_ERR);
    ASSERT_HAS(e.msg, "features.libsvm:3: feature index 5000000 is absurd for a file of 7 IDX:VAL entries");
    ASSERT_HAS(e.msg, "5000000 x hidden weights (305.2 MiB at 16 hidden units)");
    graph_dir("gmax", "0 1:1\n1 2147483647:1\n0 2:1\n1 3:1\n");
    al_error e2 = {{0}};
    assert_int_equal(al_graph_load(&g, tpath("gmax"), 1, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "features.libsvm:2: feature index 2147483647 is absurd");
    graph_dir("glab", "0 1:1\n2147483647 2:1\n0 2:1\n1 3:1\n");
    al_error e3 = {{0}};
    assert_int_equal(al_graph_load(&g, tpath("glab"), 1, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "features.libsvm:2: label 2147483647 is absurd");
    /* within the limit it loads, and a model over the budget is refused before allocation */
    graph_dir("gok", "0 1:1 2:1\n1 1:1 3:1\n0 2:1 400:1\n1 3:1\n");
    al_error e4 = {{0}};
    assert_int_equal(al_graph_load(&g, tpath("gok"), 1, &e4), AL_OK);
    assert_int_equal(g.nfeat, 400);
    al_gnn_config cfg; al_gnn_config_default(&cfg, "gcn", NULL);
    al_gnn m; al_error e5 = {{0}};
    al_mem_budget_set(4096);
    assert_int_equal(al_gnn_init(&m, &cfg, &g, 1, &e5), AL_ERR);
    ASSERT_HAS(e5.msg, "graph model gcn: 400 features x 16 hidden units");
    ASSERT_HAS(e5.msg, "memory budget of 4.0 KiB");
    al_mem_budget_set(0);
    al_error e6 = {{0}};
    assert_int_equal(al_gnn_init(&m, &cfg, &g, 1, &e6), AL_OK);
    al_gnn_free(&m);
    /* a huge feature count (as al_graph_random or a caller might set) does not overflow fan_in + fan_out */
    g.nfeat = 2147483647;
    al_error e7 = {{0}};
    assert_int_equal(al_gnn_init(&m, &cfg, &g, 1, &e7), AL_ERR);
    ASSERT_HAS(e7.msg, "memory budget");
    g.nfeat = 400;
    al_graph_free(&g);
    /* a directory where features.libsvm should be */
    mkdirs(tpath("gdir/features.libsvm"));
    al_error e8 = {{0}};
    assert_int_equal(al_graph_load(&g, tpath("gdir"), 1, &e8), AL_ERR);
    ASSERT_HAS(e8.msg, "features.libsvm: is a directory");
}

/* CoNLL-U: the whole corpus is checked against the budget as it is read. */
static void test_conllu_budget(void **st)
{
    (void)st;
    FILE *f = fopen(tpath("c.conllu"), "w");
    assert_non_null(f);
    for (int s = 0; s < 200; s++) {
        for (int w = 1; w <= 10; w++) fprintf(f, "%d\tword%d\t_\tNOUN\t_\t_\t_\t_\t_\t_\n", w, w);
        fputc('\n', f);
    }
    fclose(f);
    al_conllu d; al_error e = {{0}};
    al_mem_budget_set(8192);
    assert_int_equal(al_conllu_read(tpath("c.conllu"), NULL, &d, &e), AL_ERR);
    ASSERT_HAS(e.msg, "c.conllu:");
    ASSERT_HAS(e.msg, "the corpus read so far");
    ASSERT_HAS(e.msg, "more than the memory budget of 8.0 KiB");
    al_mem_budget_set(0);
    al_error e2 = {{0}};
    assert_int_equal(al_conllu_read(tpath("c.conllu"), NULL, &d, &e2), AL_OK);
    assert_int_equal(d.nsent, 200);
    al_conllu_free(&d);
    mkdirs(tpath("cdir.conllu"));
    al_error e3 = {{0}};
    assert_int_equal(al_conllu_read(tpath("cdir.conllu"), NULL, &d, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "is a directory");
}

/* Long paths: the reason of the message survives AL_ERRLEN. */
static void test_long_paths_keep_the_reason(void **st)
{
    (void)st;
    char rel[900]; size_t o = 0;
    for (int i = 0; i < 20; i++) o += (size_t)snprintf(rel + o, sizeof rel - o, "a-rather-long-directory-name-%02d/", i);
    snprintf(rel + o, sizeof rel - o, "imgs");
    for (int i = 0; i < 3; i++) { mkdirs(tpath("%s/c%d", rel, i)); pgm(tpath("%s/c%d/a.pgm", rel, i), 8, 8, i); }
    assert_true(strlen(tpath("%s", rel)) > AL_ERRLEN);
    al_image_split d; al_error e = {{0}};
    assert_int_equal(al_image_data_load(tpath("%s", rel), NULL, 0, 0, 0, NULL, NULL, &d, &e), AL_ERR);
    ASSERT_HAS(e.msg, "too few images for a test split");
    ASSERT_HAS(e.msg, "...");
    /* the graph reader's FILE:LINE messages, and IDX */
    char g[1000]; snprintf(g, sizeof g, "%s/graph", rel);
    graph_dir(g, "0 1:1\nx 2:1\n");
    al_graph gr; al_error e2 = {{0}};
    assert_int_equal(al_graph_load(&gr, tpath("%s", g), 1, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "features.libsvm:2: label 'x' is not an integer");
    al_images im; al_error e3 = {{0}};
    assert_int_equal(al_idx_load(tpath("%s/none-i", rel), tpath("%s/none-l", rel), &im, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "none-i: cannot open IDX file: No such file or directory");
}

/* fuzz_image found it: an 85-byte PNG whose IDAT chunk claims 1.3 GB made stb_image realloc that much
 * before finding the data missing. stb_image now allocates under a cap derived from the file. */
static const char *last_warn;
static void keep_warn(void *ud, const char *msg) { (void)ud; free((void *)last_warn); last_warn = strdup(msg); }
static void test_png_chunk_length_capped(void **st)
{
    (void)st;
    FILE *in = fopen("tests/data/png-idat-length-1.3GB-in-85-bytes.png", "rb");
    assert_non_null(in);
    unsigned char b[256]; size_t n = fread(b, 1, sizeof b, in); fclose(in);
    assert_int_equal(n, 85);
    mkdirs(tpath("chunk/a")); mkdirs(tpath("chunk/b"));
    spit(tpath("chunk/a/bad.png"), b, n);
    for (int i = 0; i < 4; i++) pgm(tpath("chunk/%c/%d.pgm", "ab"[i % 2], i), 3, 2, i);
    al_folder_opts o = {0}; o.warn = keep_warn;
    al_image_split d; al_error e = {{0}};
    assert_int_equal(al_image_folder_load(tpath("chunk"), &o, &d, &e), AL_OK);
    assert_int_equal(d.skipped, 1);
    assert_non_null(last_warn);
    ASSERT_HAS(last_warn, "bad.png: could not be decoded (it asked for 1.2 GiB at once, more than the");
    ASSERT_HAS(last_warn, "a 3x2 image in a 85-byte file may need");
    free((void *)last_warn); last_warn = NULL;
    al_image_split_free(&d);
}

/* fuzz_image found it (CI): a valid PNG whose first IDAT chunk is empty made stb_image compute
 * NULL + 0 (stb_image.h:5130, undefined behaviour, a UBSan abort). It now decodes, to the right pixels. */
static void test_png_empty_first_idat(void **st)
{
    (void)st;
    uint8_t px[4] = {0};
    al_error e = {{0}};
    assert_int_equal(al_image_file_load("tests/data/png-empty-first-idat-2x2.png", 1, 2, 2, px, &e), AL_OK);
    assert_int_equal(px[0], 0x10); assert_int_equal(px[1], 0x20);
    assert_int_equal(px[2], 0x30); assert_int_equal(px[3], 0x40);
    /* the 30-min run's variant: the file ends right after an empty IDAT's type (no CRC, no data) */
    al_error e2 = {{0}};
    assert_int_equal(al_image_file_load("tests/data/png-empty-idat-cut-after-type.png", 1, 2, 2, px, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "png-empty-idat-cut-after-type.png: could not be decoded");
}

/* fuzz_image found it: a PPM header number of 28 digits overflowed stb_image's int reader (signed
 * overflow, a UBSan abort in make asan). Such headers are refused before stb_image sees them. */
static void test_pnm_header_overflow(void **st)
{
    (void)st;
    FILE *in = fopen("tests/data/pnm-width-overflows-int.ppm", "rb");
    assert_non_null(in);
    unsigned char b[256]; size_t n = fread(b, 1, sizeof b, in); fclose(in);
    assert_int_equal(n, 79);
    mkdirs(tpath("pnm/a")); mkdirs(tpath("pnm/b"));
    spit(tpath("pnm/a/bad.ppm"), b, n);
    spit(tpath("pnm/b/bad.pgm"), "P5\n# c\n3 99999999999999999999 255\n", 34);
    for (int i = 0; i < 4; i++) pgm(tpath("pnm/%c/%d.pgm", "ab"[i % 2], i), 3, 2, i);
    al_folder_opts o = {0}; o.warn = keep_warn;
    al_image_split d; al_error e = {{0}};
    assert_int_equal(al_image_folder_load(tpath("pnm"), &o, &d, &e), AL_OK);
    assert_int_equal(d.skipped, 2);
    ASSERT_HAS(last_warn, "bad.pgm: PNM header with a number too large");
    free((void *)last_warn); last_warn = NULL;
    al_image_split_free(&d);
}

/* fuzz_image found it: a 16-bit PPM loaded as grey made stb_image convert channels with its 8-bit
 * routine and then read past the buffer (heap-buffer-overflow in stbi__convert_16_to_8). */
static void test_pnm16_channel_conversion(void **st)
{
    (void)st;
    mkdirs(tpath("p16/a")); mkdirs(tpath("p16/b"));
    /* 2x1 RGB, 16 bits: (0x1000, 0x8000, 0xff00) and (0xff00, 0xff00, 0xff00) */
    static const unsigned char ppm[] = {'P', '6', '\n', '2', ' ', '1', '\n', '6', '5', '5', '3', '5', '\n',
                                        0x10, 0, 0x80, 0, 0xff, 0, 0xff, 0, 0xff, 0, 0xff, 0};
    spit(tpath("p16/a/x.ppm"), ppm, sizeof ppm);
    spit(tpath("p16/b/y.ppm"), ppm, sizeof ppm);
    FILE *in = fopen("tests/data/ppm-16bit-grey-target.ppm", "rb");
    assert_non_null(in);
    unsigned char b[64]; size_t n = fread(b, 1, sizeof b, in); fclose(in);
    spit(tpath("p16/a/short.ppm"), b, n);
    al_folder_opts o = {0}; o.channels = 1; o.h = 1; o.w = 2; o.test_frac = 0.01;
    al_image_split d; al_error e = {{0}};
    assert_int_equal(al_image_folder_load(tpath("p16"), &o, &d, &e), AL_OK);
    assert_int_equal(d.skipped, 0);
    assert_int_equal(d.train.c, 1);
    /* class b's one image, grey = (r·77 + g·150 + b·29) >> 8 (stb_image's formula) of its RGB decode */
    al_folder_opts o3 = o; o3.channels = 3;
    al_image_split d3; al_error e3 = {{0}};
    assert_int_equal(al_image_folder_load(tpath("p16"), &o3, &d3, &e3), AL_OK);
    const uint8_t *g = d.train.pix + (size_t)(d.train.n - 1) * 2, *rgb = d3.train.pix + (size_t)(d3.train.n - 1) * 6;
    for (int i = 0; i < 2; i++)   /* rgb is (c, h, w): channel planes of 2 pixels */
        assert_int_equal(g[i], (rgb[i] * 77 + rgb[2 + i] * 150 + rgb[4 + i] * 29) >> 8);
    al_image_split_free(&d); al_image_split_free(&d3);
}

/* A single image file (attnlab predict: al_image_file_load) went straight to stb_image, without the
 * folder's checks: the 70-byte BMP decoded into 96 MiB of nothing and was classified, the PNG asked
 * for 1.2 GiB, the PNM header overflowed (a UBSan abort), the 16-bit PPM read past its buffer. Each
 * reproducer is now refused (or decoded right) with the reason the folder loader gives. */
static void test_single_file_checked_as_folders_are(void **st)
{
    (void)st;
    static const struct { const char *path, *why; } bad[] = {
        {"tests/data/bmp-70-bytes-claims-8194x4098.bmp", "bmp-70-bytes-claims-8194x4098.bmp: header claims 8194x4098 pixels (96.1 MiB decoded) from a 70-byte file"},
        {"tests/data/png-idat-length-1.3GB-in-85-bytes.png", "png-idat-length-1.3GB-in-85-bytes.png: could not be decoded (it asked for 1.2 GiB at once"},
        {"tests/data/pnm-width-overflows-int.ppm", "pnm-width-overflows-int.ppm: PNM header with a number too large"},
        {"tests/data", "tests/data: not a regular file"},
        {"tests/data/results-torn-last-line.csv", "not a readable image"}};
    uint8_t px[3 * 4 * 4];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        al_error e = {{0}};
        assert_int_equal(al_image_file_load(bad[i].path, 3, 4, 4, px, &e), AL_ERR);
        ASSERT_HAS(e.msg, bad[i].why);
    }
    /* the 16-bit (short) PPM as grey (its own count is 3): converted by attnlab, no over-read under ASan */
    al_error e = {{0}};
    assert_int_equal(al_image_file_load("tests/data/ppm-16bit-grey-target.ppm", 1, 2, 2, px, &e), AL_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_file_checked_as_folders_are),
        cmocka_unit_test(test_folder_forged_huge_headers),
        cmocka_unit_test(test_folder_budget),
        cmocka_unit_test(test_png_chunk_length_capped),
        cmocka_unit_test(test_pnm_header_overflow),
        cmocka_unit_test(test_pnm16_channel_conversion),
        cmocka_unit_test(test_folder_too_small_for_test_split),
        cmocka_unit_test(test_png_empty_first_idat),
        cmocka_unit_test(test_idx_budget),
        cmocka_unit_test(test_graph_absurd_feature_index),
        cmocka_unit_test(test_conllu_budget),
        cmocka_unit_test(test_long_paths_keep_the_reason),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
