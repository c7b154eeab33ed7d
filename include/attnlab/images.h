/* attnlab/images.h — image datasets: IDX files (Fashion-MNIST), image folders, seeded subsets, batches.
 *
 * Images are kept as uint8 (n, c, h, w) and turned into normalised floats one batch at a time:
 *
 *   al_image_split d; al_error e = {{0}};
 *   if (al_fashion_mnist_load(NULL, &d, &e)) { fprintf(stderr, "%s\n", e.msg); ... }  // NULL: al_data_locate
 *   int *idx = malloc(1000 * sizeof *idx);
 *   al_images_subset(&d.train, 1000, seed, idx, &e);          // class-stratified, seeded
 *   float mean[3], std[3]; al_images_stats(&d.train, idx, 1000, mean, std, &e);
 *   al_images_batch(&d.train, idx, 64, mean, std, x, y, &e);   // x (64, c, h, w), y (64)
 *   ... al_image_split_free(&d);
 *
 * Nothing here prints: errors come back in al_error (naming the file and, for IDX, the byte offset),
 * and skipped files of an image folder are reported through a callback and counted.
 */
#ifndef ATTNLAB_IMAGES_H
#define ATTNLAB_IMAGES_H
#include <stdint.h>
#include "tensor.h"
#include "datadir.h"

#define AL_IMAGE_MAX_SIDE 16384               /* larger images are refused before decoding */
#define AL_IMAGE_MAX_PIXELS ((int64_t)1 << 28)
#define AL_DATA_MAX_BYTES ((int64_t)1 << 31)   /* refuse datasets larger than this in memory */
/* An image file whose header claims more than AL_IMAGE_MAX_RATIO decoded bytes per byte of file (and
 * more than AL_IMAGE_FREE_BYTES in all) is truncated or forged: no encoder stb_image reads compresses
 * that far (deflate tops out near 1032:1). Such a file is skipped like an unreadable one. */
#define AL_IMAGE_MAX_RATIO 4096
#define AL_IMAGE_FREE_BYTES ((uint64_t)1 << 22)

/* A set of labelled images, uint8 pixels, channel-major per image. Owns all its memory. */
typedef struct al_images {
    int n, c, h, w, classes;
    uint8_t *pix;          /* (n, c, h, w) */
    int *labels;           /* (n), each in [0, classes) */
    char **class_names;    /* (classes) or NULL (IDX files carry no names) */
} al_images;
/* A train and a test split; skipped = files an image-folder load skipped (0 for IDX). */
typedef struct al_image_split { al_images train, test; int skipped; } al_image_split;

void al_images_free(al_images *im);           /* frees the arrays and zeroes the struct */
void al_image_split_free(al_image_split *s);

/* ---------- IDX (the MNIST format), gzip-compressed or raw ---------- */
/* Reads an idx3 image file (magic 0x00000803) and an idx1 label file (magic 0x00000801) into out
 * (c = 1, classes = largest label + 1, class_names NULL). Checks magics, dimensions, that the counts
 * agree, refuses more than AL_DATA_MAX_BYTES before allocating, and reports a short file (with the
 * byte offset in the uncompressed stream where the data ran out) or trailing bytes. */
al_status al_idx_load(const char *images_path, const char *labels_path, al_images *out, al_error *err);
/* The item count in the header of an IDX file (gzip-compressed or raw; magic 0x00000801 or
 * 0x00000803), without reading the data. */
al_status al_idx_count(const char *path, int64_t *n, al_error *err);
/* Fashion-MNIST train (60000) and test (10000) from dir (NULL: al_data_locate("fashion-mnist")), the
 * four files train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-…; sets the 10 class names. */
al_status al_fashion_mnist_load(const char *dir, al_image_split *out, al_error *err);
/* Image counts of Fashion-MNIST's train and test files in dir (NULL: al_data_locate) from their IDX
 * headers only; ntest may be NULL (then only the train file is read). */
al_status al_fashion_mnist_count(const char *dir, int64_t *ntrain, int64_t *ntest, al_error *err);

/* ---------- image folders: DIR/CLASS/IMAGE, decoded with stb_image ---------- */
typedef struct al_folder_opts {
    int h, w;              /* size every image is resized to; 0, 0: the most common size in the folder */
    int channels;          /* 1 (grey) or 3 (RGB); 0: 3 if any image file has colour, else 1 */
    double test_frac;      /* held out per class when DIR has no train/ and test/; 0: 0.2 */
    uint64_t split_seed;   /* seed of that held-out split (stream AL_RNG_DATA) */
    int require_test;      /* 1: a held-out split that leaves no test image is an error (classes of one image
                            * each); 0: such a test split is returned empty. al_image_data_load sets it. */
    al_warn_fn warn;       /* called once per skipped file with a message naming it; may be NULL */
    void *warn_ud;
} al_folder_opts;
/* Loads DIR/CLASS/IMAGE (classes and files sorted by name). If DIR holds train/ and test/ directories,
 * those are the splits (test classes must be train classes); otherwise round(test_frac · n) images of
 * each class, chosen with split_seed, form the test split. Every regular, non-hidden file is tried:
 * one that stb_image cannot read, or whose header claims more than AL_IMAGE_MAX_SIDE per side or
 * AL_IMAGE_MAX_PIXELS pixels, is skipped with a warning and counted in out->skipped. A folder with no
 * class directories, or a class with no usable image, is an error. opts may be NULL (all defaults). */
al_status al_image_folder_load(const char *dir, const al_folder_opts *opts, al_image_split *out, al_error *err);

/* ---------- a dataset by name, for a model's input shape ---------- */
/* data "fashion-mnist": its IDX files from data_dir (--data-dir) or al_data_locate; any other data is
 * an image-folder DIR loaded with images resized to height × width with `channels` channels (0, 0, 0:
 * the folder's own; see al_folder_opts), the fixed held-out split (split_seed 0), skipped files reported
 * through warn (may be NULL). The caller checks the loaded shape against the model's. */
al_status al_image_data_load(const char *data, const char *data_dir, int channels, int height, int width,
                             al_warn_fn warn, void *warn_ud, al_image_split *out, al_error *err);

/* ---------- fashion-pairs: a generated task whose label needs a long-range relation ----------
 * Each example is two items of a pool (Fashion-MNIST's train split for training, its test split for
 * testing), each cut to the box of its non-zero pixels and pasted at a uniformly random place of a black
 * canvas of twice the item's side (56×56 for 28×28 items), the two boxes never overlapping: label 1 ("same") if both are of the same class, 0 ("different") otherwise, drawn half
 * and half so that chance is 50 %. Neither item alone says anything: the model must relate two regions
 * up to a canvas apart. The same (pool, n, seed) gives the same examples (stream AL_RNG_DATA), so a
 * training set of any size 1 .. 10⁶ is built in memory (side² bytes per example, budgeted first).
 * The pool needs at least 2 classes and one-channel items; out has classes 2, names "different", "same". */
al_status al_pairs_make(const al_images *pool, int n, uint64_t seed, al_images *out, al_error *err);

/* ---------- subsets, statistics, batches ---------- */
/* n image indices of im, class-stratified (each class gets its share, largest remainders first) and
 * seeded (stream AL_RNG_DATA): idx (n) is caller-allocated and receives ascending indices. For one seed
 * a smaller subset is (nearly) contained in a larger one. n < 1 or n > im->n is an error. */
al_status al_images_subset(const al_images *im, int n, uint64_t seed, int *idx /* (n) */, al_error *err);
/* --permute-pixels: one fixed random permutation of the h·w pixel positions, seeded (stream AL_RNG_DATA
 * of seed, Fisher-Yates), the same for every channel and image: pixel p of the output image is pixel
 * perm[p] of the input. It destroys locality and keeps every pixel's value. */
void al_pixel_permutation(int hw, uint64_t seed, int *perm /* (hw) */);
/* Every image of im rearranged by perm (h·w entries, a permutation). AL_ERR on out of memory. */
al_status al_images_permute(al_images *im, const int *perm, al_error *err);
/* Per-channel mean and (population) standard deviation of pixel/255 over the images idx[0..n)
 * (all images if idx is NULL; n is then ignored). mean, std: (c). Exact integer sums, so the result
 * does not depend on the thread count. An index outside [0, im->n) is an error. */
al_status al_images_stats(const al_images *im, const int *idx /* (n) or NULL */, int n, float *mean /* (c) */,
                          float *std /* (c) */, al_error *err);
/* x (b, c, h, w) = (pix/255 - mean[c]) / std[c] for images idx[0..b); labels (b) if non-NULL.
 * mean/std may be NULL (then 0 and 1); a std below 1e-8 is treated as 1. Parallel over images.
 * An index outside [0, im->n) is an error (nothing is written past x). */
al_status al_images_batch(const al_images *im, const int *idx /* (b) */, int b, const float *mean /* (c) or NULL */,
                          const float *std /* (c) or NULL */, float *x /* (b, c, h, w) */, int *labels /* (b) or NULL */,
                          al_error *err);
/* ---------- one image file ---------- */
/* Decode an image file (PNG, JPEG, BMP, ... via stb_image) into out (channels, height, width), converted
 * to `channels` and resized (linear) to height × width as an image folder's files are, after the same
 * checks (a forged or absurd header size is an error, never a huge decode; src/data/image_file.c). */
al_status al_image_file_load(const char *path, int channels, int height, int width, uint8_t *out /* (c, h, w) */,
                             al_error *err);
#endif
