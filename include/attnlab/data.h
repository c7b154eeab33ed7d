/* attnlab/data.h — compatibility name of images.h (image datasets). */
#include "images.h"
