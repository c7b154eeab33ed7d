/* stb_impl.h — the allocation cap stb_image runs under (internal; stb_impl.c). */
#ifndef ATTNLAB_DATA_STB_IMPL_H
#define ATTNLAB_DATA_STB_IMPL_H
#include <stddef.h>
#include <stdint.h>
/* Resize (h, w, c) interleaved pixels to (H, W, c) with stb_image_resize's linear filter: the one
 * resize every image reader uses (folders and single files alike). 1 on success. */
int al__resize_u8(const uint8_t *in, int w, int h, uint8_t *out, int W, int H, int c);
/* img (h, w, C) interleaved, resized to (H, W) if it differs, into dst (C, H, W) planes: how every
 * decoded image becomes a model input. 1 on success, 0 when the resize fails. */
int al__to_chw(const uint8_t *img /* (h, w, C) */, int w, int h, int C, int H, int W, uint8_t *dst /* (C, H, W) */);
/* Largest single allocation stb_image may make on this thread; 0: the memory budget (io.h). A chunk
 * length in a tiny PNG made stb_image realloc 1.3 GB before finding the data missing (fuzz_image). */
void al__stbi_cap_set(size_t bytes);   /* also clears the refusal below */
/* The largest allocation the cap refused since al__stbi_cap_set, or 0. */
size_t al__stbi_refused(void);
/* stbi_load, except that a valid PNG with empty IDAT chunks (which stb_image would step on with
 * undefined behaviour) is decoded from a copy without them. */
uint8_t *al__stbi_load(const char *path, int *w, int *h, int *comp, int req);
#endif
