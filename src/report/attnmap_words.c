/* attnmap_words.c — attention of the sequence models (sa, trunc) over the words of one sentence: every
 * block's captured weights spread from the graph pattern's slots onto an n×n grid, and the figure of
 * those grids (see attnlab/attnmap.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/attnmap.h"
#include "report/draw_impl.h"

/* ------------------------------------------------------------------ compute */

/* "sa and trunc": the attention models of the sequence table. */
static const char *attention_models(char *buf, size_t n)
{
    size_t o = 0;
    int k = 0, total = 0;
    buf[0] = 0;
    for (int i = 0; i < al_seq_arch_count(); i++) total += al_seq_arch_at(i)->attention;
    for (int i = 0; i < al_seq_arch_count() && o < n; i++) {
        if (!al_seq_arch_at(i)->attention) continue;
        o += (size_t)snprintf(buf + o, n - o, "%s%s", k == 0 ? "" : k == total - 1 ? " and " : ", ", al_seq_arch_at(i)->name);
        k++;
    }
    return buf;
}

/* Block L's weights w (1, H, nnz) in adj's slot order onto maps (H, n, n). Returns 0, or -1 for a shape
 * that does not fit. */
static int spread_block(const al_tensor *w, const al_csr *adj, int H, int n, float *maps /* (H, n, n) */, uint8_t *allowed)
{
    const int64_t nnz = adj->nnz;
    if (!w || w->ndim != 3 || w->shape[0] != 1 || w->shape[1] != H || w->shape[2] != (nnz > 0 ? nnz : 1)) return -1;
    for (int i = 0; i < n; i++)
        for (int64_t s = adj->rowptr[i]; s < adj->rowptr[i + 1]; s++) {
            const int j = adj->col[s];
            if (allowed) allowed[(size_t)i * n + j] = 1;
            for (int h = 0; h < H; h++) maps[((size_t)h * n + i) * n + j] = w->data[(size_t)h * nnz + s];
        }
    return 0;
}

al_status al_seq_attnmap(al_seq_model *m, const al_seq_batch *b, float *maps, uint8_t *allowed, int *pred, al_error *err)
{
    const al_seq_config *g = &m->cfg;
    char names[64];
    if (!m->kind || !m->kind->attention)
        return al_seterr(err, "attnmap: a '%s' model has no attention weights (only %s have)", g->name,
                         attention_models(names, sizeof names));
    if (b->nseg != 1 || b->ntok < 1 || b->len[0] != b->ntok)
        return al_seterr(err, "attnmap: draws one sentence at a time (got a batch of %d)", b->nseg);
    const int n = al_seq_out_len(g, b->ntok), H = g->heads;
    memset(maps, 0, (size_t)g->depth * H * n * n * sizeof *maps);
    if (allowed) memset(allowed, 0, (size_t)n * n);
    al_ctx *c = al_ctx_new(1);
    if (!c) return al_seterr(err, "attnmap: out of memory");
    c->grad_enabled = 0; c->training = 0;
    const int saved = m->capture_attn;
    m->capture_attn = 1;
    al_tensor *lg = al_seq_forward(c, m, b);                                    /* (n, tags) */
    m->capture_attn = saved;
    al_status st = AL_OK;
    if (!lg || !m->attn_adj) st = al_seterr(err, "attnmap: forward failed: %s", al_ok(c) ? "no weights captured" : al_ctx_error(c));
    for (int L = 0; st == AL_OK && L < g->depth; L++)
        if (spread_block(m->attn_weights[L], m->attn_adj, H, n, maps + (size_t)L * H * n * n, allowed))
            st = al_seterr(err, "attnmap: block %d's weights do not match the sentence's %d words", L + 1, n);
    if (st == AL_OK && pred)
        for (int i = 0; i < n; i++) {
            const float *r = lg->data + (size_t)i * lg->shape[1];
            int k = 0;
            for (int t = 1; t < lg->shape[1]; t++) if (r[t] > r[k]) k = t;
            pred[i] = k;
        }
    for (int L = 0; L < AL_MODEL_MAXDEPTH; L++) m->attn_weights[L] = NULL;   /* arena memory, gone below */
    m->attn_adj = NULL;
    al_ctx_free(c);
    return st;
}

/* ------------------------------------------------------------------ figure */

enum { MARGIN = 10, GAP = 12, GAP_BLOCK = 16, TS = 2, LINE = 7 * TS + 6, UNDER = 7 + 8, BAR_H = 12, BAR_W = 240,
       FOOTER = 6 + BAR_H + 4 + 7 * TS + MARGIN, MAXPIX = 16384 };
#define OUTSIDE_LABEL "not attended"   /* the legend of the grey cells */

/* Sizes of the figure's parts, from the words and the cell. */
typedef struct wlayout {
    int lts;          /* label text scale */
    int left, top;    /* the query-label column's width; the rotated key labels' height */
    int pw, row_h;    /* a panel's side; one block row (head captions, key labels, grid, "max") */
    int W, H;
} wlayout;

/* The longest query label (word, "/TAG" when tags are shown), in glyphs. */
static int longest_label(const al_attnmap_words_fig *f, int with_tags)
{
    int m = 0;
    for (int i = 0; i < f->n; i++) {
        int k = al__label_len(f->words[i]) + (with_tags && f->tags && f->tags[i] ? 1 + al__label_len(f->tags[i]) : 0);
        if (k > m) m = k;
    }
    return m;
}

/* Does the pattern leave any key out (then the figure has grey cells and their legend)? */
static int has_outside(const al_attnmap_words_fig *f)
{
    for (int k = 0; f->allowed && k < f->n * f->n; k++) if (!f->allowed[k]) return 1;
    return 0;
}

static al_status words_layout(const al_attnmap_words_fig *f, wlayout *L, al_error *err)
{
    if (!f || !f->words || !f->maps || !f->blocks) return al_seterr(err, "attnmap: empty figure");
    if (f->n < 1 || f->n > AL_ATTNMAP_MAXWORDS) return al_seterr(err, "attnmap: %d words (1..%d drawn)", f->n, AL_ATTNMAP_MAXWORDS);
    if (f->heads < 1 || f->heads > 64 || f->depth < 1 || f->depth > AL_MODEL_MAXDEPTH)
        return al_seterr(err, "attnmap: bad heads %d or depth %d", f->heads, f->depth);
    if (f->nblocks < 1 || f->nblocks > f->depth) return al_seterr(err, "attnmap: %d blocks to draw (1..%d)", f->nblocks, f->depth);
    for (int k = 0; k < f->nblocks; k++)
        if (f->blocks[k] < 0 || f->blocks[k] >= f->depth)
            return al_seterr(err, "attnmap: block %d does not exist (the model has %d)", f->blocks[k] + 1, f->depth);
    if (f->cell < 8 || f->cell > 64) return al_seterr(err, "attnmap: cell %d pixels (8..64)", f->cell);
    for (int i = 0; i < f->n; i++) if (!f->words[i]) return al_seterr(err, "attnmap: word %d is missing", i + 1);
    L->lts = f->cell >= 16 ? 2 : 1;
    L->left = longest_label(f, 1) * 6 * L->lts + 8;
    L->top = longest_label(f, 0) * 6 * L->lts + 6;
    L->pw = f->n * f->cell;
    L->row_h = LINE + L->top + L->pw + UNDER;
    int64_t W = MARGIN + (int64_t)L->left + (int64_t)f->heads * (L->pw + GAP) - GAP + MARGIN;
    int64_t title_w = f->title ? 2 * MARGIN + (int64_t)al__label_len(f->title) * 6 * TS : 0;
    if (W < title_w) W = title_w;   /* the title always fits, and the footer */
    int64_t footer_w = 2 * MARGIN + BAR_W + (has_outside(f) ? 24 + BAR_H + al__text_width(OUTSIDE_LABEL, 1) : 0);
    if (W < footer_w) W = footer_w;
    int64_t H = MARGIN + LINE + (int64_t)f->nblocks * (L->row_h + GAP_BLOCK) - GAP_BLOCK + FOOTER;
    if (W > MAXPIX || H > MAXPIX)
        return al_seterr(err, "attnmap: a %lldx%lld figure is too large (at most %d pixels a side): fewer words, heads or a smaller cell",
                         (long long)W, (long long)H, MAXPIX);
    L->W = (int)W; L->H = (int)H;
    return AL_OK;
}

/* One block's row of panels with its captions and labels, its top at y. */
static void draw_block_row(al__canvas *cv, const al_attnmap_words_fig *f, const wlayout *L, int blk, int y)
{
    static const uint8_t ink[3] = {25, 25, 25}, outside[3] = {225, 225, 225};
    const int n = f->n, C = f->cell, x0 = MARGIN + L->left, gy = y + LINE + L->top, ts = L->lts;
    const int ty = (C - 7 * ts) / 2;   /* labels centred in their cell */
    char buf[64];
    snprintf(buf, sizeof buf, "block %d", blk + 1);
    al__draw_text(cv, MARGIN, y, buf, TS, ink);
    for (int i = 0; i < n; i++) {      /* query words down the left, right-aligned, with their tags */
        char lab[160];
        snprintf(lab, sizeof lab, "%s%s%s", f->words[i], f->tags && f->tags[i] ? "/" : "", f->tags && f->tags[i] ? f->tags[i] : "");
        al__draw_label(cv, x0 - 6 - (al__label_len(lab) * 6 - 1) * ts, gy + i * C + ty, lab, ts, 0, ink);
    }
    for (int h = 0; h < f->heads; h++) {
        const int px = x0 + h * (L->pw + GAP);
        const float *mp = f->maps + ((size_t)blk * f->heads + h) * n * n;   /* (n, n) */
        snprintf(buf, sizeof buf, "head %d", h + 1);
        if (al__text_width(buf, TS) > L->pw) snprintf(buf, sizeof buf, "%d", h + 1);
        al__draw_text_centred(cv, px + L->pw / 2, y, buf, TS, ink);
        for (int j = 0; j < n; j++)    /* key words along the top, rotated, reading upwards */
            al__draw_label(cv, px + j * C + ty, gy - 4, f->words[j], ts, 1, ink);
        float mx = 0.f;
        for (int k = 0; k < n * n; k++) if ((!f->allowed || f->allowed[k]) && mp[k] > mx) mx = mp[k];
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) {
                uint8_t c3[3];
                if (f->allowed && !f->allowed[i * n + j]) memcpy(c3, outside, 3);
                else al_attnmap_color(mx > 0.f ? mp[i * n + j] / mx : 0.f, c3);
                al__fill_rect(cv, px + j * C, gy + i * C, C, C, c3);
            }
        snprintf(buf, sizeof buf, "max %.3f", (double)mx);
        al__draw_text(cv, px, gy + L->pw + 4, buf, 1, ink);
    }
}

al_status al_attnmap_words_render(const al_attnmap_words_fig *f, uint8_t **rgb, int *w, int *h, al_error *err)
{
    *rgb = NULL;
    wlayout L = {0};
    if (words_layout(f, &L, err) != AL_OK) return AL_ERR;
    al__canvas cv = {malloc((size_t)L.W * L.H * 3), L.W, L.H};
    if (!cv.p) return al_seterr(err, "attnmap: out of memory (%dx%d figure)", L.W, L.H);
    memset(cv.p, 255, (size_t)L.W * L.H * 3);
    static const uint8_t ink[3] = {25, 25, 25}, outside[3] = {225, 225, 225};
    if (f->title) al__draw_label(&cv, MARGIN, MARGIN, f->title, TS, 0, ink);
    for (int k = 0; k < f->nblocks; k++) draw_block_row(&cv, f, &L, f->blocks[k], MARGIN + LINE + k * (L.row_h + GAP_BLOCK));
    /* colour bar: 0 … the panel's own maximum; the grey of keys outside the pattern */
    const int by = L.H - FOOTER + 6, bw = BAR_W;
    al__colour_bar(&cv, MARGIN, by, bw, BAR_H);
    al__draw_text(&cv, MARGIN, by + BAR_H + 4, "0", TS, ink);
    al__draw_text(&cv, MARGIN + bw - al__text_width("max", TS), by + BAR_H + 4, "max", TS, ink);
    if (has_outside(f)) {
        al__fill_rect(&cv, MARGIN + bw + 20, by, BAR_H, BAR_H, outside);
        al__draw_text(&cv, MARGIN + bw + 24 + BAR_H, by + 3, OUTSIDE_LABEL, 1, ink);
    }
    *rgb = cv.p; *w = L.W; *h = L.H;
    return AL_OK;
}
