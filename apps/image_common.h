/* image_common.h — what the image commands (train, eval, predict) share: the dataset column's name,
 * the stratified test/train subsets, and class names in a checkpoint's metadata. */
#ifndef ATTNLAB_APPS_IMAGE_COMMON_H
#define ATTNLAB_APPS_IMAGE_COMMON_H
#include <stddef.h>
#include <stdint.h>
#include "attnlab/images.h"

/* Keep the stratified, seeded subset of n images of im (al_images_subset); nothing if n is 0 or not
 * below im->n. If idx is non-NULL, *idx receives the kept images' positions in the old im (malloc'd,
 * im->n entries after the call; NULL when nothing was dropped). */
al_status app_images_keep(al_images *im, int n, uint64_t seed, int **idx, al_error *err);

/* --val-size: move a stratified, seeded subset of nval of im's images (al_images_subset, from a stream
 * of seed of its own) into val (allocated; free with al_images_free); im keeps the others in their order.
 * The error names --val-size when nval is not in [1, im->n). */
#define APP_HOLD_OUT_SALT 0x76616c2d686f6c64ULL   /* "val-hold" */
al_status app_images_hold_out(al_images *im, int nval, uint64_t seed, al_images *val, al_error *err);
/* --val-size auto for n training images: 10 %, at least 100, at most half. */
int app_val_size(int n);

/* --data NAME that is a dataset's name rather than an image folder: fashion-mnist, or fashion-pairs (generated
 * from it); 1 or 0. */
int app_image_data_named(const char *data);

/* --permute-pixels SEED (train) and the checkpoint metadata key that carries it to eval, predict and
 * attnmap: every image of im rearranged by the seeded permutation of its pixel positions. seed < 0: nothing. */
#define APP_PERMUTE_KEY "permute_pixels"
al_status app_images_permute(al_images *im, long seed, al_error *err);
/* The permutation seed a checkpoint's metadata names (-1 if none; -2 for a bad value). */
long app_permute_seed(const char *meta);

/* Checkpoint metadata key of the class names: "class_names" = the names joined by ',' with '%' and ','
 * inside a name written as %25 and %2C. */
#define APP_CLASS_NAMES_KEY "class_names"
/* names[0..k) joined into buf; -1 if buf is too small. */
int    app_class_names_join(char *const *names, int k, char *buf, size_t n);
/* The names of a joined list: a malloc'd array of *k malloc'd strings (free with app_class_names_free). */
char **app_class_names_split(const char *s, int *k);
void   app_class_names_free(char **names, int k);
#endif
