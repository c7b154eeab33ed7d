/* png.c — 8-bit PNG output through libpng, encoded in memory and written atomically. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

/* ====================================================================================== */
/* PNG                                                                                    */
/* ====================================================================================== */
static void png_mem_write(png_structp png, png_bytep data, size_t n)
{
    al_sbuf *b = png_get_io_ptr(png);
    al_sb_put(b, data, n);
    if (b->oom) png_error(png, "out of memory");
}
static void png_mem_flush(png_structp png) { (void)png; }
static void png_on_error(png_structp png, png_const_charp msg)
{
    char *e = png_get_error_ptr(png);
    if (e) snprintf(e, 128, "%s", msg);
    png_longjmp(png, 1);
}
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

al_status al_png_write(const char *path, const uint8_t *pix, int w, int h, int channels, al_error *err)
{
    if (!pix || w < 1 || h < 1 || w > 1000000 || h > 1000000)
        return al_seterr(err, "%s: bad PNG size %dx%d", path, w, h);
    int ct;
    switch (channels) {
    case 1: ct = PNG_COLOR_TYPE_GRAY; break;
    case 2: ct = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case 3: ct = PNG_COLOR_TYPE_RGB; break;
    case 4: ct = PNG_COLOR_TYPE_RGB_ALPHA; break;
    default: return al_seterr(err, "%s: PNG needs 1, 2, 3 or 4 channels, got %d", path, channels);
    }
    char perr[128] = "";
    al_sbuf out = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, perr, png_on_error, png_on_warning);
    if (!png) return al_seterr(err, "%s: libpng could not start", path);
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); return al_seterr(err, "%s: libpng could not start", path); }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(out.p);
        return al_seterr(err, "%s: PNG encoding failed: %s", path, perr[0] ? perr : "libpng error");
    }
    png_set_write_fn(png, &out, png_mem_write, png_mem_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, ct, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(pix + (size_t)y * (size_t)w * (size_t)channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    al_status st = al_write_atomic(path, out.p, out.n, err);
    free(out.p);
    return st;
}
