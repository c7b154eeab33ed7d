/* attnmap_mol.c — the attention pooling readout of a molecule model over the atoms of one molecule
 * (each head's learned query, its softmax over the atoms) and the figure of it: the molecule drawn
 * from its coords.txt depiction once per head, atoms as circles coloured by their weight with the
 * element inside, bonds as one, two or three lines, aromatic ones as a line and a dashed line (see
 * attnlab/attnmap.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/attnmap.h"
#include "report/draw_impl.h"

/* ------------------------------------------------------------------ compute */

al_status al_mol_attnmap(al_molnet *m, const al_molset *ms, int mol, float *weights, float *pred, al_error *err)
{
    if (!m->kind->layers || m->cfg.readout != AL_MOL_READ_ATTN)
        return al_seterr(err, "attnmap: a '%s' model with the %s readout has no attention pooling to draw (train a graph model "
                         "with --readout attn)", m->cfg.model, m->kind->layers ? al_mol_readout_name(m->cfg.readout) : "fixed");
    if (mol < 0 || mol >= ms->nmol) return al_seterr(err, "attnmap: molecule %d out of range [0, %d)", mol, ms->nmol);
    const int n = (int)(ms->atom_start[mol + 1] - ms->atom_start[mol]), H = m->cfg.heads;
    al_ctx *c = al_ctx_new(1);
    if (!c) return al_seterr(err, "attnmap: out of memory");
    c->grad_enabled = 0; c->training = 0;
    al_mol_batch b;
    const int saved = m->capture;
    m->capture = 1;
    al_tensor *y = al_mol_batch_build(c, ms, &mol, 1, m->cfg.target >= 0 ? m->cfg.target : 0, m->kind->full, m->kind->fp, &b)
                   ? NULL : al_molnet_forward(c, m, &b);   /* (1, nout) */
    m->capture = saved;
    const al_tensor *w = m->pool_weights;                    /* (n, H) */
    al_status st = AL_OK;
    if (!y || !w) st = al_seterr(err, "attnmap: forward failed: %s", al_ok(c) ? "no weights captured" : al_ctx_error(c));
    else if (w->ndim != 2 || w->shape[0] != n || w->shape[1] != H)
        st = al_seterr(err, "attnmap: the readout's weights do not match the molecule's %d atoms and %d heads", n, H);
    for (int h = 0; st == AL_OK && h < H; h++)
        for (int i = 0; i < n; i++) weights[(size_t)h * n + i] = w->data[(size_t)i * H + h];
    if (st == AL_OK && pred) {
        const float *o = y->data;
        *pred = m->nout == 2 ? (float)(1.0 / (1.0 + exp((double)o[0] - o[1]))) : o[0] * m->y_std + m->y_mean;
    }
    m->pool_weights = NULL;   /* arena memory, gone below */
    al_ctx_free(c);
    return st;
}

/* ------------------------------------------------------------------ figure */

enum { MARGIN = 10, GAP = 14, TS = 2, LINE = 7 * TS + 6, UNDER = 7 + 8, R = 10, PAD = R + 6, BAR_H = 12, BAR_W = 240,
       FOOTER = 6 + BAR_H + 4 + 7 * TS + MARGIN, MAXPIX = 16384, MIN_PANEL = 90 };

/* Sizes of the figure: pixels per coordinate unit, the drawing's box, a panel, the whole. */
typedef struct mlayout { double s, x0, y1; int pw, ph, top, W, H; } mlayout;

static al_status mol_layout(const al_attnmap_mol_fig *f, mlayout *L, al_error *err)
{
    if (!f || !f->ms || !f->weights) return al_seterr(err, "attnmap: empty figure");
    const al_molset *ms = f->ms;
    if (!ms->xy) return al_seterr(err, "attnmap: the molecules have no 2-D coordinates (coords.txt)");
    if (f->mol < 0 || f->mol >= ms->nmol) return al_seterr(err, "attnmap: molecule %d out of range [0, %d)", f->mol, ms->nmol);
    if (f->heads < 1 || f->heads > 64) return al_seterr(err, "attnmap: %d heads (1..64)", f->heads);
    if (f->bond_px < 12 || f->bond_px > 200) return al_seterr(err, "attnmap: a bond of %d pixels (12..200)", f->bond_px);
    const float *xy = ms->xy + 2 * ms->atom_start[f->mol];
    const int n = (int)(ms->atom_start[f->mol + 1] - ms->atom_start[f->mol]);
    double x0 = xy[0], x1 = xy[0], y0 = xy[1], y1 = xy[1];
    for (int i = 1; i < n; i++) {
        x0 = fmin(x0, xy[2 * i]); x1 = fmax(x1, xy[2 * i]); y0 = fmin(y0, xy[2 * i + 1]); y1 = fmax(y1, xy[2 * i + 1]);
    }
    L->s = f->bond_px / 1.5;   /* RDKit's depiction draws bonds 1.5 long */
    L->x0 = x0; L->y1 = y1;
    L->pw = (int)ceil((x1 - x0) * L->s) + 2 * PAD; L->ph = (int)ceil((y1 - y0) * L->s) + 2 * PAD;
    if (L->pw < MIN_PANEL) { L->x0 -= (MIN_PANEL - L->pw) / 2.0 / L->s; L->pw = MIN_PANEL; }
    L->top = MARGIN + LINE + (f->note ? LINE : 0);
    int64_t W = 2 * MARGIN + (int64_t)f->heads * (L->pw + GAP) - GAP;
    int64_t tw = 2 * MARGIN + (int64_t)al__label_len(f->title ? f->title : "") * 6 * TS;
    int64_t nw = 2 * MARGIN + (int64_t)al__label_len(f->note ? f->note : "") * 6 * TS;
    if (W < tw) W = tw;
    if (W < nw) W = nw;
    if (W < 2 * MARGIN + BAR_W) W = 2 * MARGIN + BAR_W;
    int64_t H = L->top + LINE + (int64_t)L->ph + UNDER + FOOTER;
    if (W > MAXPIX || H > MAXPIX)
        return al_seterr(err, "attnmap: a %lldx%lld figure is too large (at most %d pixels a side): fewer heads or a shorter --bond",
                         (long long)W, (long long)H, MAXPIX);
    L->W = (int)W; L->H = (int)H;
    return AL_OK;
}

/* Atom i's centre in panel h of the figure laid out as L. */
static void atom_at(const al_attnmap_mol_fig *f, const mlayout *L, int h, int i, double *x, double *y)
{
    const float *p = f->ms->xy + 2 * (f->ms->atom_start[f->mol] + i);
    *x = MARGIN + h * (L->pw + GAP) + PAD + (p[0] - L->x0) * L->s;
    *y = L->top + LINE + PAD + (L->y1 - p[1]) * L->s;   /* the depiction's y points up */
}

al_status al_attnmap_mol_atom(const al_attnmap_mol_fig *f, int head, int atom, int *x, int *y, int *w, int *h, al_error *err)
{
    mlayout L;
    if (mol_layout(f, &L, err) != AL_OK) return AL_ERR;
    *w = L.W; *h = L.H;
    const int n = (int)(f->ms->atom_start[f->mol + 1] - f->ms->atom_start[f->mol]);
    if (head < 0 || head >= f->heads || atom < 0 || atom >= n)
        return al_seterr(err, "attnmap: head %d or atom %d out of range (%d heads, %d atoms)", head, atom, f->heads, n);
    double ax, ay;
    atom_at(f, &L, head, atom, &ax, &ay);
    *x = (int)lround(ax); *y = (int)lround(ay);
    return AL_OK;
}

/* A line of thickness t from (x0, y0) to (x1, y1) moved by `off` pixels to its left; dashed: 4 on, 4 off. */
static void seg(al__canvas *cv, double x0, double y0, double x1, double y1, double off, int dashed, const uint8_t rgb[3])
{
    const double dx = x1 - x0, dy = y1 - y0, len = sqrt(dx * dx + dy * dy);
    if (len < 1e-9) return;
    const double nx = -dy / len * off, ny = dx / len * off;
    const int steps = (int)ceil(len);
    for (int k = 0; k <= steps; k++) {
        if (dashed && (k / 4) % 2) continue;
        const double t = (double)k / steps;
        al__fill_rect(cv, (int)lround(x0 + nx + t * dx) - 1, (int)lround(y0 + ny + t * dy) - 1, 2, 2, rgb);
    }
}

/* +1 or -1: the side of bond b (from its atom i to j, left = +1) where the aromatic neighbours of its
 * atoms lie, so that the dashed line of an aromatic bond is drawn inside its ring. */
static double ring_side(const al_attnmap_mol_fig *f, int64_t b)
{
    const al_molset *ms = f->ms;
    const float *xy = ms->xy + 2 * ms->atom_start[f->mol];
    const int i = ms->bond_i[b], j = ms->bond_j[b];
    double cx = 0, cy = 0;
    int k = 0;
    for (int64_t c = ms->bond_start[f->mol]; c < ms->bond_start[f->mol + 1]; c++) {
        if (c == b || ms->bond_type[c] != 4) continue;
        const int u = ms->bond_i[c], v = ms->bond_j[c];
        const int other = u == i || u == j ? v : v == i || v == j ? u : -1;
        if (other < 0 || other == i || other == j) continue;
        cx += xy[2 * other]; cy += xy[2 * other + 1]; k++;
    }
    if (!k) return 1;
    const double mx = (xy[2 * i] + xy[2 * j]) / 2, my = (xy[2 * i + 1] + xy[2 * j + 1]) / 2;
    const double dx = xy[2 * j] - xy[2 * i], dy = xy[2 * j + 1] - xy[2 * i + 1];
    /* on screen y points down, so the depiction's left normal (-dy, dx) is the figure's right one */
    return -dy * (cx / k - mx) + dx * (cy / k - my) > 0 ? -1 : 1;
}

/* A filled disc of radius r centred on (cx, cy). */
static void disc(al__canvas *cv, double cx, double cy, double r, const uint8_t rgb[3])
{
    for (int y = (int)floor(cy - r); y <= (int)ceil(cy + r); y++)
        for (int x = (int)floor(cx - r); x <= (int)ceil(cx + r); x++)
            if ((x - cx) * (x - cx) + (y - cy) * (y - cy) <= r * r) al__put(cv, x, y, rgb);
}

/* Head h's panel: the bonds, then the atoms coloured by weight / the panel's maximum, its captions. */
static void draw_panel(al__canvas *cv, const al_attnmap_mol_fig *f, const mlayout *L, int h)
{
    static const uint8_t ink[3] = {25, 25, 25}, white[3] = {255, 255, 255};
    const al_molset *ms = f->ms;
    const int n = (int)(ms->atom_start[f->mol + 1] - ms->atom_start[f->mol]), px = MARGIN + h * (L->pw + GAP);
    const float *w = f->weights + (size_t)h * n;   /* (n) */
    char buf[48];
    snprintf(buf, sizeof buf, "head %d", h + 1);
    al__draw_text_centred(cv, px + L->pw / 2, L->top, buf, TS, ink);
    for (int64_t b = ms->bond_start[f->mol]; b < ms->bond_start[f->mol + 1]; b++) {
        double x0, y0, x1, y1;
        atom_at(f, L, h, ms->bond_i[b], &x0, &y0);
        atom_at(f, L, h, ms->bond_j[b], &x1, &y1);
        switch (ms->bond_type[b]) {
        case 2: seg(cv, x0, y0, x1, y1, -3, 0, ink); seg(cv, x0, y0, x1, y1, 3, 0, ink); break;
        case 3: seg(cv, x0, y0, x1, y1, -5, 0, ink); seg(cv, x0, y0, x1, y1, 0, 0, ink); seg(cv, x0, y0, x1, y1, 5, 0, ink); break;
        case 4: {
            const double side = ring_side(f, b);
            seg(cv, x0, y0, x1, y1, -2 * side, 0, ink); seg(cv, x0, y0, x1, y1, 4 * side, 1, ink);
            break;
        }
        default: seg(cv, x0, y0, x1, y1, 0, 0, ink); break;
        }
    }
    float mx = 0.f;
    for (int i = 0; i < n; i++) if (w[i] > mx) mx = w[i];
    for (int i = 0; i < n; i++) {
        double x, y;
        uint8_t c3[3];
        atom_at(f, L, h, i, &x, &y);
        al_attnmap_color(mx > 0.f ? w[i] / mx : 0.f, c3);
        disc(cv, x, y, R, ink);
        disc(cv, x, y, R - 1.5, c3);
        const char *sym = ms->elements[ms->elem[ms->atom_start[f->mol] + i]];
        const int light = 3 * c3[0] + 6 * c3[1] + c3[2] > 1400;   /* dark text on the yellow end */
        al__draw_label(cv, (int)lround(x) - (al__label_len(sym) * 6 - 1) / 2, (int)lround(y) - 3, sym, 1, 0, light ? ink : white);
    }
    snprintf(buf, sizeof buf, "max %.3f", (double)mx);
    al__draw_text(cv, px, L->top + LINE + L->ph + 4, buf, 1, ink);
}

al_status al_attnmap_mol_render(const al_attnmap_mol_fig *f, uint8_t **rgb, int *w, int *h, al_error *err)
{
    *rgb = NULL;
    mlayout L;
    if (mol_layout(f, &L, err) != AL_OK) return AL_ERR;
    al__canvas cv = {malloc((size_t)L.W * L.H * 3), L.W, L.H};
    if (!cv.p) return al_seterr(err, "attnmap: out of memory (%dx%d figure)", L.W, L.H);
    memset(cv.p, 255, (size_t)L.W * L.H * 3);
    static const uint8_t ink[3] = {25, 25, 25};
    if (f->title) al__draw_label(&cv, MARGIN, MARGIN, f->title, TS, 0, ink);
    if (f->note) al__draw_label(&cv, MARGIN, MARGIN + LINE, f->note, TS, 0, ink);
    for (int hd = 0; hd < f->heads; hd++) draw_panel(&cv, f, &L, hd);
    const int by = L.H - FOOTER + 6;
    al__colour_bar(&cv, MARGIN, by, BAR_W, BAR_H);
    al__draw_text(&cv, MARGIN, by + BAR_H + 4, "0", TS, ink);
    al__draw_text(&cv, MARGIN + BAR_W - al__text_width("max", TS), by + BAR_H + 4, "max", TS, ink);
    *rgb = cv.p; *w = L.W; *h = L.H;
    return AL_OK;
}
