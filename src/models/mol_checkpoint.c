/* mol_checkpoint.c — a molecule model's checkpoint: al_molnet_save writes it (the weights, and in
 * __metadata__ what rebuilds the model), al_molnet_load rebuilds the model from it: the model, its widths, readout, outputs, target
 * standardisation and element vocabulary from __metadata__, then every tensor by name and shape. */
#include "attnlab/molnet.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The integer at key in [lo, hi] into *out; 0, or -1 with a message naming the key. */
static int meta_long(const char *path, const char *meta, const char *key, long lo, long hi, long *out, al_error *err)
{
    char *v = al_meta_get(meta, key), *end = NULL;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    int bad = !v || end == v || *end || errno || x < lo || x > hi;
    if (bad) al_seterr(err, "%s: metadata '%s' is %s%s%s, expected an integer in [%ld, %ld]", path, key, v ? "'" : "missing",
                       v ? v : "", v ? "'" : "", lo, hi);
    free(v);
    if (!bad) *out = x;
    return bad ? -1 : 0;
}

static int meta_float(const char *path, const char *meta, const char *key, float *out, al_error *err)
{
    char *v = al_meta_get(meta, key), *end = NULL;
    double x = v ? strtod(v, &end) : NAN;
    int bad = !v || end == v || *end || !isfinite(x) || fabs(x) > 1e30;
    if (bad) al_seterr(err, "%s: metadata '%s' is %s%s%s, expected a finite number", path, key, v ? "'" : "missing", v ? v : "",
                       v ? "'" : "");
    free(v);
    if (!bad) *out = (float)x;
    return bad ? -1 : 0;
}

/* The configuration and output count of the checkpoint's metadata; target = the index of its target
 * in ms (-1 if ms lacks it). */
static al_status cfg_from_meta(const char *path, const char *meta, const al_molset *ms, al_molnet_config *cfg, int *nout,
                               al_error *err)
{
    char *task = al_meta_get(meta, "task"), *model = al_meta_get(meta, "model"), *readout = al_meta_get(meta, "readout");
    char *target = al_meta_get(meta, "target"), *acc = al_meta_get(meta, "test_acc");
    al_status st = AL_ERR;
    const al_molnet_arch *kind = model ? al_molnet_arch_find(model) : NULL;
    long dim, heads, depth, hidden;
    if (!task || strcmp(task, "molecule")) al_seterr(err, "%s: not a molecule checkpoint (its metadata has task %s)", path, task ? task : "none");
    else if (!kind) al_seterr(err, "%s: metadata 'model' is '%s', not a molecule model (%s)", path, model ? model : "missing", al_molnet_arch_names());
    else if (!meta_long(path, meta, "dim", 1, 4096, &dim, err) && !meta_long(path, meta, "heads", 1, 4096, &heads, err) &&
             !meta_long(path, meta, "depth", 1, AL_MOLNET_MAXDEPTH, &depth, err) &&
             !meta_long(path, meta, "hidden", 1, 65536, &hidden, err)) {
        al_molnet_config_default(cfg, kind->name, NULL);
        cfg->dim = (int)dim; cfg->heads = (int)heads; cfg->depth = (int)depth; cfg->hidden = (int)hidden;
        cfg->dropout = 0.f;
        cfg->target = -1;
        for (int i = 0; target && i < ms->ntarget; i++) if (!strcmp(target, ms->targets[i])) cfg->target = i;
        *nout = acc ? 2 : 1;
        if (!readout || al_mol_readout_parse(readout, &cfg->readout, err) == AL_OK) st = AL_OK;
        else al_seterr(err, "%s: metadata 'readout' is '%s', expected sum, mean or attn", path, readout);
    }
    free(task); free(model); free(readout); free(target); free(acc);
    return st;
}

al_status al_molnet_save(const char *path, const al_molnet *m, const al_molset *ms, const char *const *kv_extra,
                         int n_extra, al_error *err)
{
    char v[7][32];
    snprintf(v[0], 32, "%.9g", (double)m->y_mean); snprintf(v[1], 32, "%.9g", (double)m->y_std); snprintf(v[2], 32, "%d", m->cfg.dim);
    snprintf(v[3], 32, "%d", m->cfg.heads); snprintf(v[4], 32, "%d", m->cfg.depth); snprintf(v[5], 32, "%d", m->cfg.hidden);
    snprintf(v[6], 32, "%d", m->nfeat);
    char elements[AL_MOL_MAX_ELEMENTS * 4 + 1] = "";
    for (int e = 0; e < ms->nelem; e++) strcat(strcat(elements, e ? " " : ""), ms->elements[e]);
    /* NULL: the caller's (kv_extra) */
    const char *kv[] = {"format", "attnlab-molecule", "task", "molecule", "dataset", ms->name, "model", m->kind->name,
                        "target", ms->targets[m->cfg.target],
                        "seed", NULL, "best_epoch", NULL, "test_acc", NULL, "test_rmse", NULL, "y_mean", v[0], "y_std", v[1],
                        "dim", v[2], "heads", v[3], "depth", v[4], "hidden", v[5], "features", v[6],
                        "readout", al_mol_readout_name(m->cfg.readout), "elements", elements, "run_id", NULL};
    return al__safetensors_save_merged(path, &m->params, kv, (int)(sizeof kv / sizeof *kv / 2), kv_extra, n_extra, err);
}

al_status al_molnet_load(const char *path, al_molset *ms, al_molnet *m, char **meta_out, al_error *err)
{
    memset(m, 0, sizeof *m);
    if (meta_out) *meta_out = NULL;
    char *meta = NULL, *elements = NULL;
    al_molnet_config cfg;
    int nout = 1;
    long feats = 0;
    float mean = 0.f, std = 1.f;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return AL_ERR;
    al_status st = cfg_from_meta(path, meta, ms, &cfg, &nout, err);
    if (st == AL_OK && nout == 1 && (meta_float(path, meta, "y_mean", &mean, err) || meta_float(path, meta, "y_std", &std, err)))
        st = AL_ERR;
    if (st == AL_OK && !(std > 0)) st = al_seterr(err, "%s: metadata 'y_std' is %g, expected > 0", path, (double)std);
    if (st == AL_OK && meta_long(path, meta, "features", 1, AL_MOL_MAX_ELEMENTS + 5, &feats, err)) st = AL_ERR;
    if (st == AL_OK && (elements = al_meta_get(meta, "elements")) && al_molset_use_elements(ms, elements, err) != AL_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        st = al_seterr(err, "%s: %s", path, msg);
    }
    if (st == AL_OK && feats != al_mol_nfeat(ms))
        st = al_seterr(err, "%s: the model takes %ld atom features, the molecules have %d (%d elements + 5)", path, feats,
                       al_mol_nfeat(ms), ms->nelem);
    if (st == AL_OK) st = al_molnet_build(m, &cfg, (int)feats, nout, 0, err);
    if (st == AL_OK && (st = al_safetensors_load(path, &m->params, NULL, err)) != AL_OK) al_molnet_free(m);
    if (st == AL_OK) { m->y_mean = mean; m->y_std = std; }
    free(elements);
    if (st == AL_OK && meta_out) *meta_out = meta;
    else free(meta);
    return st;
}
