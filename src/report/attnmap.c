/* attnmap.c — attention maps of image models (compute + figure), see attnlab/attnmap.h.
 *
 * Compute: one forward of a batch of one image with capture_attn set; the chosen block's weights
 * are scattered from the pattern's layout onto the token grid. Render: a plain RGB canvas, panels
 * up-scaled by nearest neighbour, a hand-made viridis-like colour map and a 5×7 bitmap font.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/attnmap.h"
#include "report/draw_impl.h"

/* ------------------------------------------------------------------ compute */

al_status al_attnmap_compute(al_model *m, const float *x /* (C, H, W) */, int layer, const int *queries /* (nq) */,
                             int nq, float *maps /* (nq, heads, grid_h·grid_w) */, int *pred, al_error *err)
{
    const al_model_config *cfg = &m->cfg;
    if (!m->kind || !m->kind->attention)
        return al_seterr(err, "attnmap: a '%s' model has no attention weights (only sa, local, hybrid and gpsa have)", cfg->name);
    const int depth = cfg->depth, H = cfg->heads, gh = m->grid_h, gw = m->grid_w, N = gh * gw;
    if (layer == -1) layer = depth - 1;
    if (layer < 0 || layer >= depth)
        return al_seterr(err, "attnmap: layer %d does not exist: the model has %d blocks (1..%d)", layer + 1, depth, depth);
    if (nq < 1) return al_seterr(err, "attnmap: no query");
    for (int i = 0; i < nq; i++)
        if (queries[i] < 0 || queries[i] >= N)
            return al_seterr(err, "attnmap: query token %d is outside the %dx%d token grid", queries[i], gh, gw);
    al_ctx *c = al_ctx_new(1);
    if (!c) return al_seterr(err, "attnmap: out of memory");
    c->grad_enabled = 0; c->training = 0;
    al_status st = AL_OK;
    int saved = m->capture_attn;
    m->capture_attn = 1;
    al_tensor *xt = al_new(c, 4, (int[]){1, cfg->channels, cfg->height, cfg->width});   /* (1,C,H,W) */
    if (xt) memcpy(xt->data, x, (size_t)xt->numel * sizeof(float));
    al_tensor *lg = al_model_forward(c, m, xt);                                     /* (1,classes) */
    m->capture_attn = saved;
    al_tensor *w = lg ? m->attn_weights[layer] : NULL;                              /* (1,H,N,K) */
    if (!lg || !w) { st = al_seterr(err, "attnmap: forward failed: %s", al_ok(c) ? "no weights captured" : al_ctx_error(c)); goto out; }
    /* the layout of the weights is the block's pattern: a window (K = its cells, e.g. local's window, or
     * sa's relative positions as a window over the whole grid) or full (K = N) */
    const al_pattern *pat = &m->attn_pattern[layer];
    const int wh = pat->kind == AL_PAT_WINDOW2D ? pat->win_h : 0, ww = pat->kind == AL_PAT_WINDOW2D ? pat->win_w : 0;
    const int K = wh ? wh * ww : N;   /* slots per query */
    if (w->ndim != 4 || w->shape[0] != 1 || w->shape[1] != H || w->shape[2] != N || w->shape[3] != K) {
        char b[64];
        st = al_seterr(err, "attnmap: block %d weights have shape %s, expected (1, %d, %d, %d)", layer + 1,
                       al_shape_str(w, b, sizeof b), H, N, K);
        goto out;
    }
    const int rh = wh / 2, rw = ww / 2;
    for (int i = 0; i < nq; i++) {
        const int q = queries[i], qy = q / gw, qx = q % gw;
        for (int h = 0; h < H; h++) {
            float *dst = maps + ((size_t)i * H + h) * N;                    /* (N) */
            const float *row = w->data + ((size_t)h * N + q) * K;          /* (K) */
            if (!wh) { memcpy(dst, row, (size_t)N * sizeof(float)); continue; }
            memset(dst, 0, (size_t)N * sizeof(float));
            for (int dy = -rh; dy <= rh; dy++) {
                int ky = qy + dy;
                if (ky < 0 || ky >= gh) continue;
                for (int dx = -rw; dx <= rw; dx++) {
                    int kx = qx + dx;
                    if (kx < 0 || kx >= gw) continue;
                    dst[ky * gw + kx] = row[(dy + rh) * ww + (dx + rw)];
                }
            }
        }
    }
    if (pred) {
        int best = 0;
        for (int k = 1; k < lg->shape[1]; k++) if (lg->data[k] > lg->data[best]) best = k;
        *pred = best;
    }
out:
    for (int b = 0; b < AL_MODEL_MAXDEPTH; b++) m->attn_weights[b] = NULL;   /* arena memory, gone below */
    al_ctx_free(c);
    return st;
}

/* ------------------------------------------------------------------ layout */

enum { MARGIN = 10, GAP = 4, GAP_BLOCK = 20, TS = 2, LINE = 7 * TS + 6, HEADER = MARGIN + 3 * LINE,
       UNDER = 7 + 6, BAR_H = 12, FOOTER = 6 + BAR_H + 4 + 7 * TS + MARGIN };

static al_status check_fig(const al_attnmap_fig *f, al_error *err)
{
    if (!f || !f->image || !f->models) return al_seterr(err, "attnmap: empty figure");
    if (f->c != 1 && f->c != 3) return al_seterr(err, "attnmap: the input image has %d channels (1 or 3 drawn)", f->c);
    if (f->h < 1 || f->w < 1 || f->h > 4096 || f->w > 4096) return al_seterr(err, "attnmap: bad image size %dx%d", f->h, f->w);
    if (f->nq < 1 || f->nq > AL_ATTNMAP_MAXQ) return al_seterr(err, "attnmap: %d queries (1..%d)", f->nq, AL_ATTNMAP_MAXQ);
    if (f->nmodels < 1 || f->nmodels > AL_ATTNMAP_MAXMODELS)
        return al_seterr(err, "attnmap: %d models (1..%d)", f->nmodels, AL_ATTNMAP_MAXMODELS);
    if (f->scale < 1 || f->scale > 32) return al_seterr(err, "attnmap: scale %d (1..32)", f->scale);
    for (int i = 0; i < f->nq; i++)
        if (f->qy[i] < 0 || f->qy[i] >= f->h || f->qx[i] < 0 || f->qx[i] >= f->w)
            return al_seterr(err, "attnmap: query (%d, %d) is outside the %dx%d image", f->qy[i], f->qx[i], f->h, f->w);
    for (int k = 0; k < f->nmodels; k++) {
        const al_attnmap_model *m = &f->models[k];
        if (!m->maps || m->heads < 1 || m->heads > 64 || m->patch < 1 || m->grid_h < 1 || m->grid_w < 1 ||
            (int64_t)m->grid_h * m->patch > f->h || (int64_t)m->grid_w * m->patch > f->w)
            return al_seterr(err, "attnmap: model %d: bad grid %dx%d, patch %d or heads %d for a %dx%d image", k + 1,
                             m->grid_h, m->grid_w, m->patch, m->heads, f->h, f->w);
    }
    return AL_OK;
}

static int block_x(const al_attnmap_fig *f, int model)   /* left edge of model's block (model = nmodels: end) */
{
    int pw = f->w * f->scale, x = MARGIN + pw + GAP_BLOCK;
    for (int k = 0; k < model; k++) x += f->models[k].heads * (pw + GAP) - GAP + GAP_BLOCK;
    return x;
}

al_status al_attnmap_layout(const al_attnmap_fig *f, int model, int query, int head, int *x, int *y,
                            int *w, int *h, al_error *err)
{
    if (check_fig(f, err) != AL_OK) return AL_ERR;
    const int pw = f->w * f->scale, ph = f->h * f->scale;
    if (model == -2) {
        *x = 0; *y = 0;
        *w = block_x(f, f->nmodels) - GAP_BLOCK + MARGIN;
        *h = HEADER + f->nq * (ph + UNDER) + FOOTER;
        return AL_OK;
    }
    if (model < -1 || model >= f->nmodels || query < 0 || query >= f->nq ||
        (model >= 0 && (head < 0 || head >= f->models[model].heads)))
        return al_seterr(err, "attnmap: no panel (model %d, query %d, head %d)", model, query, head);
    *x = model < 0 ? MARGIN : block_x(f, model) + head * (pw + GAP);
    *y = HEADER + query * (ph + UNDER);
    *w = pw; *h = ph;
    return AL_OK;
}

/* ------------------------------------------------------------------ render */

al_status al_attnmap_render(const al_attnmap_fig *f, uint8_t **rgb, int *w, int *h, al_error *err)
{
    *rgb = NULL;
    int x0, y0, W, Hh;
    if (al_attnmap_layout(f, -2, 0, 0, &x0, &y0, &W, &Hh, err) != AL_OK) return AL_ERR;
    al__canvas cv = {malloc((size_t)W * Hh * 3), W, Hh};
    if (!cv.p) return al_seterr(err, "attnmap: out of memory (%dx%d figure)", W, Hh);
    memset(cv.p, 255, (size_t)W * Hh * 3);
    static const uint8_t ink[3] = {25, 25, 25}, red[3] = {240, 30, 30}, grey[3] = {128, 128, 128};
    const int S = f->scale, pw = f->w * S, ph = f->h * S, t = S >= 3 ? 2 : 1;
    char buf[64];

    /* header: the input column, then each model's title, note and head numbers */
    al__draw_text_centred(&cv, MARGIN + pw / 2, MARGIN, "input", TS, ink);
    if (f->caption) {   /* up to two lines, split at '\n' */
        const char *nl = strchr(f->caption, '\n');
        int n1 = nl ? (int)(nl - f->caption) : (int)strlen(f->caption);
        snprintf(buf, sizeof buf, "%.*s", n1, f->caption);
        al__draw_text_centred(&cv, MARGIN + pw / 2, MARGIN + LINE, buf, TS, ink);
        if (nl) al__draw_text_centred(&cv, MARGIN + pw / 2, MARGIN + 2 * LINE, nl + 1, TS, ink);
    }
    for (int k = 0; k < f->nmodels; k++) {
        const al_attnmap_model *m = &f->models[k];
        int bx = block_x(f, k), bw = m->heads * (pw + GAP) - GAP;
        if (m->title) al__draw_text_centred(&cv, bx + bw / 2, MARGIN, m->title, TS, ink);
        if (m->note) al__draw_text_centred(&cv, bx + bw / 2, MARGIN + LINE, m->note, TS, ink);
        for (int hd = 0; hd < m->heads; hd++) {
            snprintf(buf, sizeof buf, "head %d", hd + 1);
            if (al__text_width(buf, TS) > pw) snprintf(buf, sizeof buf, "%d", hd + 1);
            al__draw_text_centred(&cv, bx + hd * (pw + GAP) + pw / 2, MARGIN + 2 * LINE, buf, TS, ink);
        }
    }

    for (int q = 0; q < f->nq; q++) {
        int px, py, pw_, ph_;
        al_attnmap_layout(f, -1, q, 0, &px, &py, &pw_, &ph_, err);
        /* the input, nearest-neighbour up-scaled */
        for (int y = 0; y < ph; y++)
            for (int x = 0; x < pw; x++) {
                size_t o = (size_t)(y / S) * f->w + (size_t)(x / S), plane = (size_t)f->h * f->w;
                uint8_t c3[3];
                for (int ch = 0; ch < 3; ch++) c3[ch] = f->image[(f->c == 3 ? (size_t)ch * plane : 0) + o];
                al__put(&cv, px + x, py + y, c3);
            }
        snprintf(buf, sizeof buf, "(%d,%d)", f->qy[q], f->qx[q]);
        al__draw_text(&cv, px, py + ph + 3, buf, 1, ink);
        /* the query's token, outlined on the input for the first model's grid */
        const al_attnmap_model *m0 = &f->models[0];
        {
            int ty = f->qy[q] / m0->patch, tx = f->qx[q] / m0->patch;
            if (ty >= m0->grid_h) ty = m0->grid_h - 1;
            if (tx >= m0->grid_w) tx = m0->grid_w - 1;
            int bs = m0->patch * S;
            al__outline(&cv, px + tx * bs, py + ty * bs, bs, bs, t, red);
        }
        for (int k = 0; k < f->nmodels; k++) {
            const al_attnmap_model *m = &f->models[k];
            const int gh = m->grid_h, gw = m->grid_w, N = gh * gw, P = m->patch;
            int ty = f->qy[q] / P, tx = f->qx[q] / P;
            if (ty >= gh) ty = gh - 1;
            if (tx >= gw) tx = gw - 1;
            for (int hd = 0; hd < m->heads; hd++) {
                const float *mp = m->maps + ((size_t)q * m->heads + hd) * N;   /* (N) */
                float mx = 0.f;
                for (int j = 0; j < N; j++) if (mp[j] > mx) mx = mp[j];
                al_attnmap_layout(f, k, q, hd, &px, &py, &pw_, &ph_, err);
                for (int y = 0; y < ph; y++) {
                    int gy = y / S / P;
                    for (int x = 0; x < pw; x++) {
                        int gx = x / S / P;
                        uint8_t c3[3];
                        if (gy >= gh || gx >= gw) memcpy(c3, grey, 3);   /* pixels no token covers */
                        else al_attnmap_color(mx > 0.f ? mp[gy * gw + gx] / mx : 0.f, c3);
                        al__put(&cv, px + x, py + y, c3);
                    }
                }
                al__outline(&cv, px + tx * P * S, py + ty * P * S, P * S, P * S, t, red);
                snprintf(buf, sizeof buf, "max %.3f", (double)mx);
                if (al__text_width(buf, 1) > pw) snprintf(buf, sizeof buf, "%.2f", (double)mx);
                al__draw_text(&cv, px, py + ph + 3, buf, 1, ink);
            }
        }
    }

    /* colour bar: 0 … the panel's own maximum */
    {
        int by = Hh - FOOTER + 6, bw = W - 2 * MARGIN;
        if (bw > 320) bw = 320;
        al__colour_bar(&cv, MARGIN, by, bw, BAR_H);
        al__draw_text(&cv, MARGIN, by + BAR_H + 4, "0", TS, ink);
        const char *lab = "weight / panel max";
        int lx = MARGIN + bw - al__text_width(lab, TS);
        al__draw_text(&cv, lx > MARGIN + 20 ? lx : MARGIN + 20, by + BAR_H + 4, lab, TS, ink);
    }
    *rgb = cv.p; *w = W; *h = Hh;
    return AL_OK;
}
