/* image_file.c — one image file as a model input (images.h: al_image_file_load), decoded and resized
 * exactly as the files of an image folder are (stb_image, then stb_image_resize's linear filter). */
#include "attnlab/images.h"
#include <stdlib.h>
#include <string.h>
#include <stb/stb_image.h>
#include "data/stb_impl.h"


al_status al_image_file_load(const char *path, int channels, int height, int width, uint8_t *out, al_error *err)
{
    int w, h, comp;
    if (channels < 1 || channels > 4 || height < 1 || width < 1)
        return al_seterr(err, "%s: bad target shape %dx%dx%d", path, channels, height, width);
    if (!stbi_info(path, &w, &h, &comp)) {
        const char *why = stbi_failure_reason();
        return al_seterr(err, "%s: not a readable image (%s)", path, why ? why : "unknown error");
    }
    if ((int64_t)w * h > (int64_t)1 << 26) return al_seterr(err, "%s: %dx%d pixels is too large", path, w, h);
    uint8_t *img = al__stbi_load(path, &w, &h, &comp, channels);
    if (!img) {
        const char *why = stbi_failure_reason();
        return al_seterr(err, "%s: could not be decoded (%s)", path, why ? why : "unknown error");
    }
    if (!al__to_chw(img, w, h, channels, height, width, out)) {
        stbi_image_free(img);
        return al_seterr(err, "%s: resizing %dx%d to %dx%d failed", path, w, h, width, height);
    }
    stbi_image_free(img);
    return AL_OK;
}
