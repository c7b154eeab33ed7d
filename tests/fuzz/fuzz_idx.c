/* fuzz_idx.c — the IDX reader (al_idx_load, al_idx_count). Input: [flags byte] IMAGES FZ_SEP LABELS;
 * flags bit 0 writes both files gzip-compressed. */
#include "fuzz_common.h"
#include "attnlab/images.h"

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    if (n < 1) return 0;
    int gz = d[0] & 1;
    const uint8_t *part[2]; size_t len[2];
    int k = fz_split(d + 1, n - 1, part, len, 2);
    fz_write(fz_path("images"), part[0], len[0], gz);
    fz_write(fz_path("labels"), k > 1 ? part[1] : part[0], k > 1 ? len[1] : 0, gz);
    al_images im; al_error e = {{0}};
    if (al_idx_load(fz_path("images"), fz_path("labels"), &im, &e) == AL_OK) {
        if (im.n < 1 || im.h < 1 || im.w < 1 || im.classes < 1 || im.classes > 256) abort();
        for (int i = 0; i < im.n; i++) if (im.labels[i] < 0 || im.labels[i] >= im.classes) abort();
        al_images_free(&im);
    } else if (!e.msg[0]) abort();   /* every failure says why */
    int64_t cnt; al_error e2 = {{0}};
    if (al_idx_count(fz_path("images"), &cnt, &e2) != AL_OK && !e2.msg[0]) abort();
    return 0;
}
