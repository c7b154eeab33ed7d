/* fuzz_image.c — one image file through the image-folder loader's path (stbi_info, the size and
 * plausibility checks, the folder budget, stb_image decode and resize). Input: [flags] IMAGE; the
 * image is written as DIR/a/x, DIR/a/y and DIR/b/x; flags pick the channel count and a target size. */
#include "fuzz_common.h"
#include "attnlab/images.h"
#include <sys/stat.h>

static void quiet(void *ud, const char *msg) { (void)ud; (void)msg; }

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    if (n < 1) return 0;
    static int made;
    if (!made) { mkdir(fz_path("img"), 0755); mkdir(fz_path("img/a"), 0755); mkdir(fz_path("img/b"), 0755); made = 1; }
    fz_write(fz_path("img/a/x"), d + 1, n - 1, 0);
    fz_write(fz_path("img/a/y"), d + 1, n - 1, 0);
    fz_write(fz_path("img/b/x"), d + 1, n - 1, 0);
    al_folder_opts o = {0};
    o.channels = (d[0] & 3) == 3 ? 0 : (d[0] & 3) == 2 ? 3 : (d[0] & 3);
    if (d[0] & 4) { o.h = 1 + (d[0] >> 5); o.w = 1 + ((d[0] >> 3) & 3); }
    o.test_frac = 0.4; o.warn = quiet;
    al_image_split s; al_error e = {{0}};
    if (al_image_folder_load(fz_path("img"), &o, &s, &e) == AL_OK) {
        if (s.train.n < 1 || s.test.n < 1 || s.train.h < 1) abort();
        al_image_split_free(&s);
    } else if (!e.msg[0]) abort();
    return 0;
}
