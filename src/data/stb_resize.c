/* stb_resize.c — the translation unit of stb_image_resize (v1, Debian's libstb-dev ships
 * stb_image_resize.h; stb_image_resize2.h is used instead when it is the one installed): the one resize
 * every image reader uses. Its own file so that the fuzz build can leave these inner loops out of
 * libFuzzer's coverage instrumentation (tests/fuzz/run.sh): they parse nothing from a file, and
 * instrumented they made one 2611x1024 TGA take 6 s per decode (a false timeout). */
#include "data/stb_impl.h"

#if __has_include(<stb/stb_image_resize2.h>)
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize2.h>
#define AL_STBIR2 1
#else
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>
#endif

int al__resize_u8(const uint8_t *in, int w, int h, uint8_t *out, int W, int H, int c)
{
#ifdef AL_STBIR2
    return stbir_resize_uint8_linear(in, w, h, 0, out, W, H, 0, (stbir_pixel_layout)c) != NULL;
#else
    return stbir_resize_uint8(in, w, h, 0, out, W, H, 0, c) != 0;
#endif
}
