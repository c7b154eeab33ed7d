/* fuzz_molecules.c — the molecule reader (al_molset_load: molecules.txt, the three splits and the
 * optional coords.txt of names and 2-D coordinates) and what is built from a loaded set: a packed
 * batch of every molecule (bond CSR, full pattern with distances, fingerprints) and one forward of a
 * tiny gt-full and gt model on it.
 * Input: molecules.txt FZ_SEP train.idx FZ_SEP val.idx FZ_SEP test.idx [FZ_SEP coords.txt]. */
#include "fuzz_common.h"
#include "attnlab/molecule.h"
#include "attnlab/molnet.h"
#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    fz_cpu_guard();
    static const char *const files[5] = {"molecules.txt", "train.idx", "val.idx", "test.idx", "coords.txt"};
    const uint8_t *part[5]; size_t len[5];
    int k = fz_split(d, n, part, len, 5);
    for (int i = 0; i < 4; i++) fz_write(fz_path(files[i]), i < k ? part[i] : (const uint8_t *)"", i < k ? len[i] : 0, 0);
    if (k == 5) fz_write(fz_path(files[4]), part[4], len[4], 0);
    else unlink(fz_path(files[4]));   /* absent: the load reads no coordinates */
    al_molset ms; al_error e = {{0}};
    if (al_molset_load(&ms, fz_dir(), &e) != AL_OK) {
        if (!e.msg[0]) abort();
        al_molset_free(&ms);
        return 0;
    }
    if (ms.nmol < 1 || ms.ntrain < 1 || ms.atom_start[ms.nmol] != ms.natoms) abort();
    if ((k == 5) != (ms.xy != NULL)) abort();   /* a coords.txt is read, or the load fails */
    for (int m = 0; ms.xy && m < ms.nmol; m++) if (!al_molset_name(&ms, m)[0] || al_molset_find(&ms, al_molset_name(&ms, m)) < 0) abort();
    for (int64_t a = 0; ms.xy && a < 2 * ms.natoms; a++) if (!(fabsf(ms.xy[a]) <= 1e4f)) abort();
    if (ms.natoms <= 4000) {   /* the full pattern is Σ atoms²: keep each input fast */
        int *ids = malloc((size_t)ms.nmol * sizeof *ids);
        if (!ids) abort();
        for (int i = 0; i < ms.nmol; i++) ids[i] = i;
        al_ctx *c = al_ctx_new(1);
        al_mol_batch b;
        if (al_mol_batch_build(c, &ms, ids, ms.nmol, 0, 1, 1, &b) != AL_OK) abort();
        for (int64_t s = 0; s < b.full->nnz; s++) if (b.full_dist[s] < 0 || b.full_dist[s] >= AL_MOL_SPD_BUCKETS) abort();
        static const char *const models[2] = {"gt-full", "gt"};
        al_molnet_config cfg; al_molnet_config_default(&cfg, models[n & 1], NULL);
        cfg.dim = 4; cfg.heads = 2; cfg.depth = 1; cfg.hidden = 2;
        al_molnet m; al_error e2 = {{0}};
        if (al_molnet_init(&m, &cfg, &ms, 1, &e2) == AL_OK) {
            c->grad_enabled = 0;
            if (!al_molnet_forward(c, &m, &b)) abort();
            al_molnet_free(&m);
        }
        al_ctx_free(c);
        free(ids);
    }
    al_molset_free(&ms);
    return 0;
}
