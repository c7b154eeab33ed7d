/* image_load.c — an image dataset by name for a model's input shape (images.h): Fashion-MNIST's IDX
 * files (idx.c) or an image folder (image.c). */
#include "attnlab/images.h"
#include <string.h>

al_status al_image_data_load(const char *data, const char *data_dir, int channels, int height, int width,
                             al_warn_fn warn, void *warn_ud, al_image_split *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    if (!strcmp(data, "fashion-mnist")) return al_fashion_mnist_load(data_dir, out, err);
    al_folder_opts fo;
    memset(&fo, 0, sizeof fo);
    fo.h = height; fo.w = width; fo.channels = channels;
    fo.split_seed = 0;   /* a fixed held-out split for every seed */
    fo.require_test = 1; /* training needs a test split: an empty one used to end in test_acc nan */
    fo.warn = warn; fo.warn_ud = warn_ud;
    return al_image_folder_load(data, &fo, out, err);
}
