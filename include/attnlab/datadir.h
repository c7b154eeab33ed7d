/* attnlab/datadir.h — where datasets are found: one resolver for image and graph datasets alike.
 *
 *   char dir[4096]; al_error e = {{0}};
 *   if (al_data_locate("cora", NULL, dir, sizeof dir, &e) != AL_OK) { fprintf(stderr, "%s\n", e.msg); ... }
 *
 * Lookup order for dataset NAME (the first that exists as a directory wins):
 *   1. explicit (--data PATH / --data-dir DIR) if non-NULL: used as is; an error if it is not a directory
 *   2. $ATTNLAB_FASHION_MNIST (NAME fashion-mnist only; kept for compatibility)
 *   3. $ATTNLAB_DATA/NAME
 *   4. the repository's datasets/NAME: <dir of /proc/self/exe>/../datasets/NAME (bin/attnlab),
 *      <dir of /proc/self/exe>/../../datasets/NAME (test binaries in BUILD/tests/), ./datasets/NAME
 *   5. AL_DATADIR/NAME, the installed data directory
 *   6. NAME fashion-mnist only: AL_FASHION_MNIST_DIR (Debian's fashion-mnist package)
 * When nothing is found the error is one line listing every place looked at.
 */
#ifndef ATTNLAB_DATADIR_H
#define ATTNLAB_DATADIR_H
#include <stddef.h>
#include "tensor.h"

#ifndef AL_DATADIR
#define AL_DATADIR "/usr/local/share/attnlab/datasets"   /* the Makefile may define it */
#endif
#define AL_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"

/* How the folder readers (images.h, audio.h) report a file they skip: one message naming it. */
typedef void (*al_warn_fn)(void *ud, const char *msg);

/* Writes the directory of dataset `name` to out (n bytes). */
al_status al_data_locate(const char *name, const char *explicit_dir, char *out, size_t n, al_error *err);
/* What --data NAME means for every task: a path (it has a '/') or an existing directory as it is, else
 * NAME looked up as above. */
al_status al_data_resolve(const char *name, char *out, size_t n, al_error *err);

/* The same search for other shipped files (the sweep's presets): the folders, in order, where files of
 * kind `subdir` are looked for: $ENV, the repository's SUBDIR (beside the binary as in 4. above, then
 * ./SUBDIR), then `installed`. Up to max of them into dirs (each AL_LOCATE_LEN bytes); returns the count. */
#define AL_LOCATE_LEN 4200
int al_locate_dirs(const char *env, const char *subdir, const char *installed, char (*dirs)[AL_LOCATE_LEN], int max);
/* The first regular file dir/name over those folders into out (n bytes); AL_ERR naming every place looked at. */
al_status al_file_locate(const char *env, const char *subdir, const char *installed, const char *name, char *out,
                         size_t n, al_error *err);
#endif
