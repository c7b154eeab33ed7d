/* stb_impl.c — the one translation unit that compiles the stb single-file libraries attnlab uses:
 * stb_image (decode PNG/JPEG/BMP/GIF/TGA/PNM/PSD/HDR/PIC); stb_image_resize is compiled in stb_resize.c.
 * stb_image_write is deliberately not compiled in: its JPEG encoder shifts signed ints out of range
 * (UBSan stops on it) and PNG output goes through libpng (al_png_write).
 *
 * Headers come from /usr/include/stb/ (a system include directory, so their own warnings stay quiet).
 * stb_image's default STBI_MAX_DIMENSIONS (2^24) is kept: data_image.c refuses large images itself,
 * from stbi_info, before anything is decoded, with a message naming the file.
 */
#include "attnlab/io.h"
#include "data/stb_impl.h"
#include "data/images_impl.h"
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every stb_image allocation goes through a cap: a file's own numbers (a PNG chunk length, a
 * declared size) never make it allocate more than the caller allows for that file. */
static _Thread_local size_t stbi_cap, stbi_refused;
void al__stbi_cap_set(size_t bytes) { stbi_cap = bytes; stbi_refused = 0; }
size_t al__stbi_refused(void) { return stbi_refused; }
static int stbi_too_big(size_t n)
{
    if (n <= (stbi_cap ? stbi_cap : al_mem_budget())) return 0;
    if (n > stbi_refused) stbi_refused = n;
    return 1;
}
static void *al_stbi_malloc(size_t n) { return stbi_too_big(n) ? NULL : malloc(n); }
static void *al_stbi_realloc(void *p, size_t n) { return stbi_too_big(n) ? NULL : realloc(p, n); }
#define STBI_MALLOC(sz) al_stbi_malloc(sz)
#define STBI_REALLOC(p, newsz) al_stbi_realloc(p, newsz)
#define STBI_FREE(p) free(p)

#define STBI_FAILURE_USERMSG
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>


/* stb_image computes z->idata + ioff with idata still NULL when a PNG's first IDAT chunk is empty
 * (stb_image.h:5130; NULL + 0 is undefined in C, a UBSan abort; fuzz_image). Such a file is valid
 * PNG: it is decoded from a copy without its empty IDAT chunks (they carry no data; stb_image does
 * not check CRCs). Returns the number of empty IDAT chunks, or 0 (also for a non-PNG). */
static int png_empty_idats(FILE *f)
{
    unsigned char b[8];
    if (fread(b, 1, 8, f) != 8 || memcmp(b, "\x89PNG\r\n\x1a\n", 8)) return 0;
    int n = 0;
    while (fread(b, 1, 8, f) == 8) {
        uint32_t len = al__be32(b);
        if (len == 0 && !memcmp(b + 4, "IDAT", 4)) n++;
        if (!memcmp(b + 4, "IEND", 4) || len > 0x7fffffffu || fseek(f, (long)len + 4, SEEK_CUR)) break;
    }
    return n;
}

uint8_t *al__stbi_load(const char *path, int *w, int *h, int *comp, int req)
{
    FILE *f = fopen(path, "rb");
    if (!f || !png_empty_idats(f)) {
        if (f) fclose(f);
        return stbi_load(path, w, h, comp, req);
    }
    long size = (fseek(f, 0, SEEK_END) == 0) ? ftell(f) : -1;
    unsigned char *buf = size > 8 && size < INT_MAX && (unsigned long)size <= al_mem_budget() ? malloc((size_t)size) : NULL;
    if (!buf || fseek(f, 0, SEEK_SET) || fread(buf, 1, (size_t)size, f) != (size_t)size) {
        free(buf); fclose(f);
        stbi__err("read failed", "could not read the file");
        return NULL;
    }
    fclose(f);
    size_t i = 8, o = 8, n = (size_t)size;
    while (i + 8 <= n) {   /* copy every chunk except the empty IDATs (even one cut off after its type) */
        uint32_t len = al__be32(buf + i);
        size_t whole = n - i - 8 < (size_t)len + 4 ? n - i : (size_t)len + 12;
        if (!(len == 0 && !memcmp(buf + i + 4, "IDAT", 4))) { memmove(buf + o, buf + i, whole); o += whole; }
        i += whole;
    }
    if (i < n) { memmove(buf + o, buf + i, n - i); o += n - i; }
    uint8_t *img = stbi_load_from_memory(buf, (int)o, w, h, comp, req);
    free(buf);
    return img;
}

int al__to_chw(const uint8_t *img, int w, int h, int C, int H, int W, uint8_t *dst)
{
    const uint8_t *src = img;
    uint8_t *rs = NULL;
    if (w != W || h != H) {
        rs = malloc((size_t)W * H * C);
        if (!rs || !al__resize_u8(img, w, h, rs, W, H, C)) { free(rs); return 0; }
        src = rs;
    }
    const size_t hw = (size_t)H * W;
    for (int ch = 0; ch < C; ch++)
        for (size_t i = 0; i < hw; i++) dst[ch * hw + i] = src[i * (size_t)C + (size_t)ch];
    free(rs);
    return 1;
}
