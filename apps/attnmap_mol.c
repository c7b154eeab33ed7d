/* attnmap_mol.c — attnlab attnmap on a molecule checkpoint: the attention pooling readout (--readout
 * attn: a learned query per head attending over the atoms) of one molecule (--molecule NAME or its
 * number) of the checkpoint's dataset, drawn from the dataset's coords.txt, one panel per head, as a
 * PNG. cmd_attnmap.c hands over here when the checkpoint's metadata says task molecule.
 * load → the molecule → compute → render. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "attnlab/attnmap.h"
#include "attnlab/io.h"
#include "attnlab/molnet.h"

typedef struct mol_run {
    al_molset ms; char dir[4096];
    al_molnet m; int loaded;
    int mol;
    float *w, pred;
    uint8_t *rgb;
} mol_run;

/* The dataset (--data, else the checkpoint's), which must have coordinates, and the model. */
static int load_mol(const attnmap_mol_opts *o, mol_run *R)
{
    al_error err = {{0}};
    char *meta = NULL, *dataset = NULL;
    if (al_safetensors_read_meta(o->load, &meta, &err) == AL_OK) dataset = al_meta_get(meta, "dataset");
    free(meta);
    const char *data = o->data ? o->data : dataset ? dataset : "esol";
    int rc = 1;
    if (al_molset_resolve(data, R->dir, sizeof R->dir, &err) || al_molset_load(&R->ms, R->dir, &err))
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg);
    else if (!R->ms.xy)
        fprintf(stderr, "attnlab attnmap: %s has no coords.txt (the molecules' names and 2-D coordinates: "
                "scripts/smiles_to_graphs.py --coords)\n", R->dir);
    else if (al_molnet_load(o->load, &R->ms, &R->m, NULL, &err) != AL_OK)
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg);
    else { R->loaded = 1; rc = 0; }
    free(dataset);
    return rc;
}

/* --molecule as a name of coords.txt or a number; the readout's weights and the prediction. */
static int compute_mol(const attnmap_mol_opts *o, mol_run *R)
{
    if ((R->mol = al_molset_find(&R->ms, o->molecule)) < 0) {
        fprintf(stderr, "attnlab attnmap: --molecule '%s': no molecule of that name in %s/coords.txt, nor a number in 0..%d\n",
                o->molecule, R->dir, R->ms.nmol - 1);
        return 2;
    }
    const int n = (int)(R->ms.atom_start[R->mol + 1] - R->ms.atom_start[R->mol]), H = R->m.cfg.heads;
    al_error err = {{0}};
    if (!(R->w = malloc((size_t)H * n * sizeof *R->w))) { fprintf(stderr, "attnlab attnmap: out of memory\n"); return 1; }
    if (al_mol_attnmap(&R->m, &R->ms, R->mol, R->w, &R->pred, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s: %s\n", o->load, err.msg); return 1;
    }
    if (!o->quiet)
        for (int h = 0; h < H; h++) {
            int best = 0;
            for (int i = 1; i < n; i++) if (R->w[(size_t)h * n + i] > R->w[(size_t)h * n + best]) best = i;
            fprintf(stderr, "attnlab attnmap: head %d: weight %.3f on atom %d (%s), the most of %d atoms\n", h + 1,
                    (double)R->w[(size_t)h * n + best], best, R->ms.elements[R->ms.elem[R->ms.atom_start[R->mol] + best]], n);
        }
    return 0;
}

static int render_mol(const attnmap_mol_opts *o, mol_run *R)
{
    const al_molnet *m = &R->m;
    const int t = m->cfg.target >= 0 ? m->cfg.target : 0;
    const float y = R->ms.y[(int64_t)R->mol * R->ms.ntarget + t];
    char title[320], note[200], measured[64] = "";
    snprintf(title, sizeof title, "%s: molecule %d of %s", al_molset_name(&R->ms, R->mol), R->mol, R->ms.name);
    if (m->cfg.target >= 0 && !isnan(y)) snprintf(measured, sizeof measured, ", measured %.3g", (double)y);
    snprintf(note, sizeof note, "%s, attention pooling readout; %s %.3g%s", m->cfg.model,
             m->nout == 2 ? "P(class 1)" : "predicts", (double)R->pred, measured);
    al_attnmap_mol_fig f = {&R->ms, R->mol, m->cfg.heads, R->w, title, note, 40};
    int W, H;
    al_error err = {{0}};
    if (al_attnmap_mol_render(&f, &R->rgb, &W, &H, &err) != AL_OK || al_png_write(o->out, R->rgb, W, H, 3, &err) != AL_OK) {
        fprintf(stderr, "attnlab attnmap: %s\n", err.msg); return 1;
    }
    printf("attnmap %s: %dx%d pixels, model %s, molecule %d (%s), %lld atoms, %d heads\n", o->out, W, H, m->cfg.model, R->mol,
           al_molset_name(&R->ms, R->mol), (long long)(R->ms.atom_start[R->mol + 1] - R->ms.atom_start[R->mol]), m->cfg.heads);
    return 0;
}

int attnmap_mol_run(const attnmap_mol_opts *o)
{
    static mol_run R;
    memset(&R, 0, sizeof R);
    int rc = load_mol(o, &R);
    if (!rc) rc = compute_mol(o, &R);
    if (!rc) rc = render_mol(o, &R);
    if (R.loaded) al_molnet_free(&R.m);
    al_molset_free(&R.ms);
    free(R.w); free(R.rgb);
    return rc;
}
