/* stb_impl.c — the one translation unit that compiles the stb single-file libraries attnlab uses:
 * stb_image (decode PNG/JPEG/BMP/GIF/TGA/PNM/PSD/HDR/PIC), stb_image_resize (v1, Debian's libstb-dev
 * ships stb_image_resize.h; stb_image_resize2.h is used instead when it is the one installed).
 * stb_image_write is deliberately not compiled in: its JPEG encoder shifts signed ints out of range
 * (UBSan stops on it) and PNG output goes through libpng (al_png_write).
 *
 * Headers come from /usr/include/stb/ (a system include directory, so their own warnings stay quiet).
 * stb_image's default STBI_MAX_DIMENSIONS (2^24) is kept: data_image.c refuses large images itself,
 * from stbi_info, before anything is decoded, with a message naming the file.
 */
#define STBI_FAILURE_USERMSG
#define STB_IMAGE_IMPLEMENTATION
#include <stb/stb_image.h>

#if __has_include(<stb/stb_image_resize2.h>)
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize2.h>
#else
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include <stb/stb_image_resize.h>
#endif
