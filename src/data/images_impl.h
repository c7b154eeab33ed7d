/* images_impl.h — what the image readers share (internal): a big-endian word, the checked probe and
 * decode of one image file (image.c) and the class names of an image set (images.c). */
#ifndef ATTNLAB_DATA_IMAGES_IMPL_H
#define ATTNLAB_DATA_IMAGES_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include "attnlab/images.h"

static inline uint32_t al__be32(const unsigned char *b /* (4) */)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
/* One image file as its header describes it (image.c), checked before anything is decoded: the
 * files of an image folder and single files (al_image_file_load) alike. */
typedef struct al__imgfile {
    int w, h, comp;       /* from stbi_info */
    int64_t fsize;        /* bytes of the file */
    int pnm16;            /* a 16-bit binary PNM: stb_image converts its channels as if 8-bit (over-read) */
} al__imgfile;
/* path's header checked: a regular file, a PNM header that stb_image reads without overflowing, a size
 * within AL_IMAGE_MAX_SIDE / _PIXELS and plausible for the file's bytes. 0 with *f filled, or -1 with
 * the reason in why (n bytes, without the path). */
int al__image_probe(const char *path, al__imgfile *f, char *why, size_t n);
/* Decode path (probed into f) to dst (C, H, W), stb_image's allocations capped by what the header and
 * the file's size can need, a 16-bit PNM's channels converted here. 0, or -1 with the reason in why.
 * Thread-safe. */
int al__image_decode(const char *path, const al__imgfile *f, uint8_t *dst /* (C, H, W) */, int C, int H, int W,
                     char *why, size_t n);
/* im->class_names = copies of names[0..k). */
al_status al__images_set_names(al_images *im, const char *const *names, int k, al_error *err);
#endif
