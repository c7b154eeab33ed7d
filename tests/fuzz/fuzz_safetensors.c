/* fuzz_safetensors.c — safetensors checkpoints: the header and metadata reader
 * (al_safetensors_read_meta, al_safetensors_read_info), loading into a fixed parameter set
 * (al_safetensors_load), the configuration from metadata (al_model_config_from_meta) and a whole
 * image-model load (al_model_load). Input: the file. */
#include "fuzz_common.h"
#include "attnlab/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    const char *path = fz_path("ckpt.safetensors");
    fz_write(path, d, n, 0);
    char *meta = NULL; al_error e = {{0}};
    if (al_safetensors_read_meta(path, &meta, &e) == AL_OK) {
        if (!meta) abort();
        al_model_config cfg; al_error e2 = {{0}};
        al_model_config_from_meta(&cfg, meta, &e2);
        char *v = al_meta_get(meta, "format");
        free(v);
        free(meta);
    } else if (!e.msg[0]) abort();
    uint64_t tb; int nt; al_error e3 = {{0}};
    char *m2 = NULL;
    if (al_safetensors_read_info(path, &m2, &tb, &nt, &e3) == AL_OK) free(m2);

    static al_params p;   /* w (2, 3) and b (2), as the unit tests' */
    if (!p.data) {
        al_params_init(&p);
        al_params_add(&p, "w", 2, (int[]){2, 3}, (al_init){AL_INIT_ONES, 0});
        al_params_add(&p, "b", 1, (int[]){2}, (al_init){AL_INIT_ONES, 0});
        al_rng r; al_rng_seed(&r, 1, 1); al_error ef = {{0}};
        if (al_params_finalize(&p, &r, &ef) != AL_OK) abort();
    }
    char *m3 = NULL; al_error e4 = {{0}};
    if (al_safetensors_load(path, &p, &m3, &e4) == AL_OK) free(m3);

    al_model model; float mean[4], sd[4]; char *m4 = NULL; al_error e5 = {{0}};
    if (al_model_load(path, &model, mean, sd, &m4, &e5) == AL_OK) { free(m4); al_model_free(&model); }
    return 0;
}
