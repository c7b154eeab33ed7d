/* draw_impl.h — the plain RGB canvas and the built-in 5×7 bitmap font that the attention-map figures
 * draw with (internal; draw.c). Two kinds of text: captions (ASCII, drawn upper-case, as the image
 * figures always were) and labels (UTF-8 words as they are: lower case kept, a few typographic
 * characters mapped to ASCII look-alikes, any other code point drawn as '?'), the latter also
 * rotated a quarter turn for column labels. A glyph is 5×7 cells in a 6-cell advance, scaled by ts. */
#ifndef ATTNLAB_TRAIN_DRAW_IMPL_H
#define ATTNLAB_TRAIN_DRAW_IMPL_H
#include <stdint.h>

typedef struct al__canvas { uint8_t *p; int w, h; } al__canvas;   /* p (h, w, 3) */

void al__put(al__canvas *cv, int x, int y, const uint8_t rgb[3]);   /* clipped to the canvas */
void al__fill_rect(al__canvas *cv, int x, int y, int w, int h, const uint8_t rgb[3]);
/* An outline of thickness t drawn inside the box (x, y, w, h). */
void al__outline(al__canvas *cv, int x, int y, int w, int h, int t, const uint8_t rgb[3]);

/* Captions: ASCII, upper-cased. */
int  al__text_width(const char *s, int ts);
void al__draw_text(al__canvas *cv, int x, int y, const char *s, int ts, const uint8_t rgb[3]);
/* Centred on cx, kept inside the canvas where it fits. */
void al__draw_text_centred(al__canvas *cv, int cx, int y, const char *s, int ts, const uint8_t rgb[3]);

/* Labels: UTF-8 as written, one glyph per code point. al__label_len counts the glyphs. up = 1 draws
 * the text rotated a quarter turn counter-clockwise (read bottom to top), starting at (x, y) = its
 * bottom-left corner and going up; up = 0 draws it as a caption does, top-left at (x, y). */
int  al__label_len(const char *s);
void al__draw_label(al__canvas *cv, int x, int y, const char *s, int ts, int up, const uint8_t rgb[3]);
/* The colour map from 0 (left) to 1 (right) as a w×h bar, top-left at (x, y). */
void al__colour_bar(al__canvas *cv, int x, int y, int w, int h);
#endif
