/* attnlab/checkpoint.h — image-model checkpoints (safetensors with the configuration in __metadata__)
 * and the canonical run description that run ids hash.
 *
 *   al_model_save("m.safetensors", &m, mean, std, NULL, 0, &err);
 *   al_model m2; float mean[4], std[4]; al_model_load("m.safetensors", &m2, mean, std, NULL, &err);
 */
#ifndef ATTNLAB_CHECKPOINT_H
#define ATTNLAB_CHECKPOINT_H
#include <stddef.h>
#include "tensor.h"
#include "models.h"
#include "io.h"   /* al_safetensors_read_meta, al_meta_get */

/* Model configuration as metadata strings: writes up to max pairs (key, value) into kv[0..2·n),
 * values in buf (bufsize bytes). Returns n, or -1 if the space is too small. */
int       al_model_config_to_kv(const al_model_config *cfg, const char **kv, int max, char *buf, size_t bufsize);
/* Rebuild a configuration from a checkpoint's __metadata__ JSON (see al_safetensors_load). */
al_status al_model_config_from_meta(al_model_config *cfg, const char *meta_json, al_error *err);

/* The parameter count of the model cfg describes, from its parameter shapes only: nothing is
 * allocated or initialised (defined with the model table, models/image.c). Checks the configuration
 * and the memory budget (io.h) first. */
al_status al_model_config_params(const al_model_config *cfg, int64_t *nparam, al_error *err);

/* Save m as safetensors; __metadata__ holds format "attnlab-image", the configuration
 * (al_model_config_to_kv), the normalisation ("mean", "std": comma lists per channel) and the
 * extra (key, value) pairs kv[0..2·nkv). */
al_status al_model_save(const char *path, const al_model *m, const float mean[4], const float std[4],
                        const char *const *kv, int nkv, al_error *err);
/* Rebuild a model from a checkpoint written by al_model_save: configuration from the metadata,
 * then the tensors (names and shapes must match, every value finite). mean/std receive the
 * normalisation (finite; std positive); *meta (if meta is non-NULL) a malloc'd copy of the metadata
 * JSON. On error m is left freed. */
al_status al_model_load(const char *path, al_model *m, float mean[4], float std[4], char **meta, al_error *err);
/* Canonical description of an image run (task, data, model and its whole configuration, split,
 * hyperparameters, seed), the input of al_run_id. Returns the length written. */
int al_image_run_canonical(char *buf, size_t n, const al_model_config *cfg, const char *dataset, long train_size,
                           int epochs, float lr, float wd, int batch, long seed);
#endif
