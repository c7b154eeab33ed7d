/* image_file.c — one image file as a model input (images.h: al_image_file_load), checked, decoded and
 * resized exactly as the files of an image folder are (al__image_probe, al__image_decode: stb_image,
 * then stb_image_resize's linear filter). */
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "data/images_impl.h"

al_status al_image_file_load(const char *path, int channels, int height, int width, uint8_t *out, al_error *err)
{
    if (channels < 1 || channels > 4 || height < 1 || width < 1)
        return al_seterr(err, "%s: bad target shape %dx%dx%d", al_path_short(path), channels, height, width);
    al__imgfile f;
    char why[512];
    if (al__image_probe(path, &f, why, sizeof why) || al__image_decode(path, &f, out, channels, height, width, why, sizeof why))
        return al_seterr(err, "%s: %s", al_path_short(path), why);
    return AL_OK;
}
