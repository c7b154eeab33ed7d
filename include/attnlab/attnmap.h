/* attnlab/attnmap.h — attention maps: which pixels a query token of an image model looks at, which
 * words a word of a sentence looks at in a sequence model, and which atoms of a molecule the attention
 * pooling readout of a molecule model weighs (both at the end of this header).
 *
 * al_attnmap_compute runs one image through an attention model (sa, local) with capture_attn set and
 * scatters the weights of one block back onto the token grid: whatever the pattern's layout (full:
 * (B,H,N,N); window2d: (B,H,N,win_h·win_w) by offset), map (q, h) holds, for every key token of the
 * grid, the weight query token q gives it in head h (0 outside a window).
 *
 * al_attnmap_render draws a figure as an RGB image: one row per query; the input image with the
 * query's token outlined, then one heat map per head (viridis, scaled to the panel's own maximum,
 * which is printed under the panel) for each model side by side; model names, predictions and head
 * numbers on top (a built-in 5×7 font); a colour bar at the bottom.
 *
 *   float *maps = malloc(nq * heads * N * sizeof *maps);
 *   al_attnmap_compute(&m, x, -1, tokens, nq, maps, &pred, &err);      // last block
 *   al_attnmap_model mm = {"sa", m.grid_h, m.grid_w, m.cfg.patch, m.cfg.heads, maps, pred_name};
 *   al_attnmap_fig f = {pix, 1, 28, 28, caption, nq, qy, qx, &mm, 1, 4};
 *   uint8_t *rgb; int w, h; al_attnmap_render(&f, &rgb, &w, &h, &err);  // then al_png_write
 */
#ifndef ATTNLAB_ATTNMAP_H
#define ATTNLAB_ATTNMAP_H
#include <stdint.h>
#include "tensor.h"
#include "models.h"
#include "seq.h"
#include "molnet.h"

#define AL_ATTNMAP_MAXQ 16      /* queries per figure */
#define AL_ATTNMAP_MAXMODELS 4  /* models side by side */

/* Attention of block `layer` (0-based, -1 = the last) of an sa/local model for one image
 * x (C, H, W), already normalised as the model expects. queries[0..nq) are token indices of the
 * model's grid (row-major, grid_h·grid_w tokens). maps (nq, heads, grid_h·grid_w) receives the
 * weights; *pred (may be NULL) the predicted class. m->capture_attn is restored on return.
 * Errors: a model without attention (cnn, conv-attn), a layer or query out of range. */
al_status al_attnmap_compute(al_model *m, const float *x /* (C, H, W) */, int layer, const int *queries /* (nq) */,
                             int nq, float *maps /* (nq, heads, grid_h·grid_w) */, int *pred, al_error *err);

/* One model's maps in a figure. */
typedef struct al_attnmap_model {
    const char *title;          /* e.g. "sa" (drawn upper-case) */
    int grid_h, grid_w, patch;  /* token grid; a token covers patch×patch input pixels */
    int heads;
    const float *maps;          /* (nq, heads, grid_h·grid_w) */
    const char *note;           /* second title line (e.g. "pred coat"), or NULL */
} al_attnmap_model;

/* A whole figure: the input image, the queries (input pixel coordinates), the models. */
typedef struct al_attnmap_fig {
    const uint8_t *image;       /* (c, h, w) uint8, c = 1 (grey) or 3 (RGB) */
    int c, h, w;
    const char *caption;        /* under "input" (e.g. "test #0\ncoat": up to two lines), or NULL */
    int nq;
    const int *qy, *qx;         /* (nq) pixel coordinates of the queries; each model uses the token holding it */
    const al_attnmap_model *models;
    int nmodels;
    int scale;                  /* screen pixels per input pixel, 1..32 */
} al_attnmap_fig;

/* Where a panel lands: model -1 = the input column (head ignored). Writes its top-left corner and
 * size in pixels; the figure's total size when model = -2. Returns AL_ERR for a bad index. */
al_status al_attnmap_layout(const al_attnmap_fig *f, int model, int query, int head, int *x, int *y,
                            int *w, int *h, al_error *err);
/* The colour map (viridis-like, by hand) at t in [0, 1] (clamped). */
void al_attnmap_color(float t, uint8_t rgb[3]);
/* Draw the figure: *rgb (h·w·3, rows top to bottom) is malloc'd, the caller frees it. */
al_status al_attnmap_render(const al_attnmap_fig *f, uint8_t **rgb /* *rgb: (h, w, 3) */, int *w, int *h, al_error *err);

/* ---- sequence models: attention over the words of one sentence ----
 *
 *   float *maps = malloc(depth * heads * n * n * sizeof *maps); uint8_t *allowed = malloc(n * n);
 *   al_seq_attnmap(&m, &batch, maps, allowed, pred, &err);            // batch: one sentence of n words
 *   al_attnmap_words_fig f = {n, words, tags, heads, depth, 2, (int[]){0, 1}, maps, allowed, "sa", 16};
 *   uint8_t *rgb; int w, h; al_attnmap_words_render(&f, &rgb, &w, &h, &err);   // then al_png_write
 */
#define AL_ATTNMAP_MAXWORDS 128   /* words of a sentence a figure draws */

/* Every block's attention of an sa/trunc model (the table's attention models) for one sentence, b a
 * batch of one segment of b->ntok tokens, n = al_seq_out_len(cfg, b->ntok) of them after a frame
 * model's subsampling (else n = b->ntok): maps (depth, heads, n, n), row i = query word i, column j
 * = key word j, in evaluation mode. Keys the pattern leaves out (trunc: |i − j| > window) hold 0, and
 * allowed (n, n), if not NULL, receives 1 where the pattern has the key, 0 elsewhere. With the softmax
 * norm every row of every (block, head) sums to 1 over its allowed keys. pred (n), if not NULL, receives
 * the argmax tags. m->capture_attn is restored on return. Errors: a model without attention (fc,
 * window-fc, rnn), a batch that is not one sentence. */
al_status al_seq_attnmap(al_seq_model *m, const al_seq_batch *b, float *maps /* (depth, heads, n, n) */,
                         uint8_t *allowed /* (n, n) or NULL */, int *pred /* (n) or NULL */, al_error *err);

/* A figure of word-by-word attention: one row of panels per drawn block, one panel per head; each panel
 * an n×n grid of cells (query words down the rows, key words along the columns, labelled on the left
 * and, rotated, on top), coloured by weight / the panel's maximum (viridis; "max" printed under it),
 * light grey where the pattern has no key (trunc's band shows). */
typedef struct al_attnmap_words_fig {
    int n;                      /* words, 1..AL_ATTNMAP_MAXWORDS */
    const char *const *words;   /* (n) UTF-8; drawn with the built-in font (non-ASCII letters as '?') */
    const char *const *tags;    /* (n) shown after each query word ("saw/VERB"), or NULL */
    int heads, depth;           /* of maps */
    int nblocks;
    const int *blocks;          /* (nblocks) 0-based blocks to draw, one row of panels each */
    const float *maps;          /* (depth, heads, n, n) as al_seq_attnmap gives them */
    const uint8_t *allowed;     /* (n, n), or NULL: every cell */
    const char *title;          /* top line (e.g. the model), or NULL */
    int cell;                   /* pixels per word cell, 8..64 */
} al_attnmap_words_fig;
/* Draw the figure: *rgb (h·w·3, rows top to bottom) is malloc'd, the caller frees it. */
al_status al_attnmap_words_render(const al_attnmap_words_fig *f, uint8_t **rgb /* (h, w, 3) */, int *w, int *h,
                                  al_error *err);

/* ---- molecule models: the attention pooling readout over the atoms of one molecule ----
 *
 *   float *w = malloc(heads * n * sizeof *w);                   // n = the molecule's atoms
 *   al_mol_attnmap(&m, &ms, mol, w, &pred, &err);               // ms with coords.txt (ms.xy)
 *   al_attnmap_mol_fig f = {&ms, mol, m.cfg.heads, w, "title", "note", 40};
 *   uint8_t *rgb; int W, H; al_attnmap_mol_render(&f, &rgb, &W, &H, &err);   // then al_png_write
 */
/* The readout's weights of molecule mol of ms, evaluation mode: weights (heads, n) holds, for each head,
 * the softmax of its learned query over the molecule's n atoms (each row sums to 1); *pred (may be
 * NULL) the model's prediction (the target's units; a 0/1 target: the probability of class 1). Errors:
 * a model without attention pooling (--readout sum or mean, mlp, fingerprint), a molecule out of range. */
al_status al_mol_attnmap(al_molnet *m, const al_molset *ms, int mol, float *weights /* (heads, n) */, float *pred,
                         al_error *err);

/* A figure of one molecule, one panel per head: the molecule drawn from ms->xy (bonds: single one line,
 * double two, triple three, aromatic a line and a dashed line; atoms: circles filled with the colour of
 * weight / the panel's maximum, the element symbol inside), "head h" above and "max" under each panel;
 * title and note lines on top, a colour bar at the bottom. */
typedef struct al_attnmap_mol_fig {
    const al_molset *ms;        /* with coordinates (coords.txt) */
    int mol;
    int heads;
    const float *weights;       /* (heads, atoms of mol) */
    const char *title, *note;   /* top lines (UTF-8 labels), or NULL */
    int bond_px;                /* pixels per bond (RDKit's 1.5 units), 12..200 */
} al_attnmap_mol_fig;
/* Where atom `atom` of panel `head` is drawn (its centre) and the figure's size. */
al_status al_attnmap_mol_atom(const al_attnmap_mol_fig *f, int head, int atom, int *x, int *y, int *w, int *h, al_error *err);
/* Draw the figure: *rgb (h·w·3, rows top to bottom) is malloc'd, the caller frees it. */
al_status al_attnmap_mol_render(const al_attnmap_mol_fig *f, uint8_t **rgb /* (h, w, 3) */, int *w, int *h, al_error *err);
/* ---- speech models: the log-mel spectrogram of an utterance, its frame labels, and attention over frames ----
 *
 *   al_attnmap_speech_fig f = {T, logmel, truth, pred, names, 11, n, sub, attn, allowed, "trunc", note, 3};
 *   uint8_t *rgb; int W, H; al_attnmap_speech_render(&f, &rgb, &W, &H, &err);   // then al_png_write
 *
 * Top: the 80 log-mel energies of every frame (low frequencies at the bottom, viridis from the
 * utterance's minimum to its maximum); under it two strips, the reference label of every frame and the
 * model's, one colour per class with its name written over each run wide enough; under them the
 * attention of one block averaged over its heads, query frames down, key frames across, on the same
 * time axis as the spectrogram (a subsampled frame covers sub input frames), each row scaled to its own
 * maximum; light grey where the pattern has no key (trunc's band). */
typedef struct al_attnmap_speech_fig {
    int T;                        /* input frames, 1.. */
    const float *logmel;          /* (T, 80) */
    const uint8_t *truth, *pred;  /* (T) class per frame, or NULL (the strip is left out) */
    const char *const *names;     /* (classes) drawn over label runs */
    int classes;                  /* 1..64 */
    int n, sub;                   /* attention frames n = ceil(T / sub), sub 1, 2 or 4 */
    const float *attn;            /* (n, n) or NULL (no attention panel: rnn, window-fc) */
    const uint8_t *allowed;       /* (n, n) or NULL */
    const char *title, *note;     /* lines on top, or NULL */
    int px;                       /* pixels per input frame, 1..8 */
} al_attnmap_speech_fig;
al_status al_attnmap_speech_render(const al_attnmap_speech_fig *f, uint8_t **rgb, int *w, int *h, al_error *err);
#endif
