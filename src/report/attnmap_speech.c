/* attnmap_speech.c — the figure of a speech model on one utterance (attnlab/attnmap.h): log-mel
 * spectrogram, reference and predicted frame labels, and one block's attention over frames, all on one
 * time axis. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "attnlab/attnmap.h"
#include "report/draw_impl.h"

enum { MARGIN = 10, TS = 2, LINE = 7 * TS + 6, LEFT = 64, MEL = 80, MEL_PX = 2, STRIP = 16, GAP = 8, BAR_H = 12,
       BAR_W = 240, MAXPIX = 16384 };

/* A colour per class: ten distinct hues, then greys; the last class of 11 (silence) light grey. */
static void class_colour(int k, int classes, uint8_t c[3])
{
    static const uint8_t pal[10][3] = {{228, 26, 28}, {55, 126, 184}, {77, 175, 74}, {152, 78, 163}, {255, 127, 0},
                                       {200, 180, 40}, {166, 86, 40}, {247, 129, 191}, {90, 90, 90}, {23, 190, 207}};
    if (classes == 11 && k == 10) { c[0] = c[1] = c[2] = 235; return; }
    memcpy(c, pal[k % 10], 3);
    if (k >= 10) for (int i = 0; i < 3; i++) c[i] = (uint8_t)(c[i] / 2 + 64);
}

/* One label strip at y: runs of equal labels filled, the class name centred on runs wide enough. */
static void draw_strip(al__canvas *cv, const al_attnmap_speech_fig *f, const uint8_t *lab, int x0, int y, const char *name)
{
    static const uint8_t ink[3] = {25, 25, 25};
    al__draw_text(cv, MARGIN, y + (STRIP - 7) / 2, name, 1, ink);
    for (int t = 0; t < f->T;) {
        int u = t;
        while (u < f->T && lab[u] == lab[t]) u++;
        uint8_t c[3];
        class_colour(lab[t], f->classes, c);
        al__fill_rect(cv, x0 + t * f->px, y, (u - t) * f->px, STRIP, c);
        const char *nm = lab[t] < f->classes && f->names ? f->names[lab[t]] : "?";
        if (!(f->classes == 11 && lab[t] == 10) && al__text_width(nm, 1) + 2 <= (u - t) * f->px)
            al__draw_text_centred(cv, x0 + (t + u) * f->px / 2, y + (STRIP - 7) / 2, nm, 1, ink);
        t = u;
    }
}

al_status al_attnmap_speech_render(const al_attnmap_speech_fig *f, uint8_t **rgb, int *w, int *h, al_error *err)
{
    *rgb = NULL;
    if (!f || !f->logmel || f->T < 1) return al_seterr(err, "attnmap: empty speech figure");
    if (f->px < 1 || f->px > 8) return al_seterr(err, "attnmap: %d pixels per frame (1..8)", f->px);
    if (f->classes < 1 || f->classes > 64) return al_seterr(err, "attnmap: %d classes (1..64)", f->classes);
    if (f->attn && (f->sub < 1 || f->n != (f->T + f->sub - 1) / f->sub))
        return al_seterr(err, "attnmap: %d attention frames do not cover %d frames at subsampling %d", f->n, f->T, f->sub);
    for (int t = 0; t < f->T; t++)
        if ((f->truth && f->truth[t] >= f->classes) || (f->pred && f->pred[t] >= f->classes))
            return al_seterr(err, "attnmap: frame %d has a label outside the %d classes", t, f->classes);
    const int64_t tw = (int64_t)f->T * f->px;
    const int64_t W0 = MARGIN + LEFT + tw + MARGIN, attn_h = f->attn ? tw + GAP : 0;
    const int nstrip = (f->truth != NULL) + (f->pred != NULL);
    int64_t W = W0 > 2 * MARGIN + BAR_W + 200 ? W0 : 2 * MARGIN + BAR_W + 200;
    const int64_t H = MARGIN + LINE * (1 + (f->note != NULL)) + MEL * MEL_PX + GAP + nstrip * (STRIP + 2) + GAP + attn_h
                      + (f->attn ? BAR_H + 7 * TS + 10 : 0) + MARGIN;
    if (W > MAXPIX || H > MAXPIX)
        return al_seterr(err, "attnmap: a %lldx%lld figure is too large (at most %d pixels a side): a shorter utterance or a smaller --cell",
                         (long long)W, (long long)H, MAXPIX);
    al__canvas cv = {malloc((size_t)W * (size_t)H * 3), (int)W, (int)H};
    if (!cv.p) return al_seterr(err, "attnmap: out of memory (%lldx%lld figure)", (long long)W, (long long)H);
    memset(cv.p, 255, (size_t)W * (size_t)H * 3);
    static const uint8_t ink[3] = {25, 25, 25}, outside[3] = {225, 225, 225};
    int y = MARGIN;
    if (f->title) al__draw_label(&cv, MARGIN, y, f->title, TS, 0, ink);
    y += LINE;
    if (f->note) { al__draw_label(&cv, MARGIN, y, f->note, 1, 0, ink); y += LINE; }
    const int x0 = MARGIN + LEFT;
    /* spectrogram: mel 0 at the bottom */
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t k = 0; k < (int64_t)f->T * MEL; k++) {
        if (f->logmel[k] < lo) lo = f->logmel[k];
        if (f->logmel[k] > hi) hi = f->logmel[k];
    }
    const float span = hi > lo ? hi - lo : 1.f;
    al__draw_text(&cv, MARGIN, y + MEL * MEL_PX / 2 - 10, "LOG-MEL", 1, ink);
    al__draw_text(&cv, MARGIN, y + MEL * MEL_PX / 2 + 2, "80 BANDS", 1, ink);
    for (int t = 0; t < f->T; t++)
        for (int b = 0; b < MEL; b++) {
            uint8_t c[3];
            al_attnmap_color((f->logmel[(int64_t)t * MEL + b] - lo) / span, c);
            al__fill_rect(&cv, x0 + t * f->px, y + (MEL - 1 - b) * MEL_PX, f->px, MEL_PX, c);
        }
    y += MEL * MEL_PX + GAP;
    if (f->truth) { draw_strip(&cv, f, f->truth, x0, y, "TRUTH"); y += STRIP + 2; }
    if (f->pred) { draw_strip(&cv, f, f->pred, x0, y, "MODEL"); y += STRIP + 2; }
    y += GAP;
    if (f->attn) {
        const int cell = f->sub * f->px, n = f->n;
        al__draw_text(&cv, MARGIN, y, "QUERY", 1, ink);
        al__draw_text(&cv, MARGIN, y + 10, "FRAME", 1, ink);
        al__draw_text(&cv, MARGIN, y + 20, "(DOWN)", 1, ink);
        for (int i = 0; i < n; i++) {
            float mx = 0.f;
            for (int j = 0; j < n; j++)
                if ((!f->allowed || f->allowed[(int64_t)i * n + j]) && f->attn[(int64_t)i * n + j] > mx) mx = f->attn[(int64_t)i * n + j];
            for (int j = 0; j < n; j++) {
                uint8_t c[3];
                if (f->allowed && !f->allowed[(int64_t)i * n + j]) memcpy(c, outside, 3);
                else al_attnmap_color(mx > 0.f ? f->attn[(int64_t)i * n + j] / mx : 0.f, c);
                int cw = j == n - 1 ? (int)(tw - (int64_t)j * cell) : cell, ch = i == n - 1 ? (int)(tw - (int64_t)i * cell) : cell;
                al__fill_rect(&cv, x0 + j * cell, y + i * cell, cw, ch, c);
            }
        }
        y += (int)tw + GAP;
        al__colour_bar(&cv, MARGIN, y, BAR_W, BAR_H);
        al__draw_text(&cv, MARGIN, y + BAR_H + 4, "0", TS, ink);
        al__draw_text(&cv, MARGIN + BAR_W - al__text_width("ROW MAX", TS), y + BAR_H + 4, "ROW MAX", TS, ink);
        if (f->allowed) {
            al__fill_rect(&cv, MARGIN + BAR_W + 20, y, BAR_H, BAR_H, outside);
            al__draw_text(&cv, MARGIN + BAR_W + 24 + BAR_H, y + 3, "not attended", 1, ink);
        }
    }
    *rgb = cv.p; *w = (int)W; *h = (int)H;
    return AL_OK;
}
