/* images_impl.h — what the image readers share (internal): a big-endian word and the class names of
 * an image set (images.c). */
#ifndef ATTNLAB_DATA_IMAGES_IMPL_H
#define ATTNLAB_DATA_IMAGES_IMPL_H
#include <stdint.h>
#include "attnlab/images.h"

static inline uint32_t al__be32(const unsigned char *b /* (4) */)
{
    return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}
/* im->class_names = copies of names[0..k). */
al_status al__images_set_names(al_images *im, const char *const *names, int k, al_error *err);
#endif
