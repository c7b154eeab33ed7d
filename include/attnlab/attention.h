/* attnlab/attention.h — one multi-head attention operator, parameterised by who may attend to whom.
 *
 *   pattern   full      every token attends to every token            O(N² D), O(N D) memory (streamed)
 *             window2d  the win_h×win_w window around the query on a grid_h×grid_w grid;
 *                       keys outside the grid are absent (not zero)   O(N K² D)
 *             window1d  keys j with |i − j| ≤ radius in a sequence    O(N (2r+1) D)
 *             graph     keys = row i of a CSR adjacency               O(E D)
 *   score     dot       q·k · scale (scale 0 → 1/√D)
 *             additive  LeakyReLU(a_q[h]·q_i + a_k[h]·k_j, slope)     (GAT)
 *   norm      softmax over the allowed keys, or relu (unnormalised)
 *   extras    rel_bias: one learned scalar per head and window offset (window patterns);
 *             bias: an additive score bias per head in the pattern's layout; attention dropout.
 *
 *   al_attn_desc d = { .pattern = al_pattern_window2d(14, 14, 5, 5), .score = AL_SCORE_DOT };
 *   al_tensor *o = al_attention(c, &d, q, k, v, NULL, NULL, rel, NULL);   // (B,H,N,Dv)
 */
#ifndef ATTNLAB_ATTENTION_H
#define ATTNLAB_ATTENTION_H
#include "tensor.h"

typedef enum { AL_PAT_FULL, AL_PAT_WINDOW2D, AL_PAT_WINDOW1D, AL_PAT_GRAPH } al_pattern_kind;
typedef enum { AL_SCORE_DOT, AL_SCORE_ADDITIVE } al_score_kind;
typedef enum { AL_NORM_SOFTMAX, AL_NORM_RELU } al_norm_kind;

typedef struct al_pattern {
    al_pattern_kind kind;
    int grid_h, grid_w;    /* window2d: tokens are the grid, row-major; N = grid_h·grid_w (full: 0, or gpsa's grid) */
    int win_h, win_w;      /* window2d: odd sizes, centred on the query */
    int radius;            /* window1d */
    const al_csr *adj;     /* graph: (N, N); row i = the keys query i attends to (add self-loops yourself) */
    const struct al_graph_plan *plan;   /* graph, optional: adj's per-key lists built once (below) */
} al_pattern;

static inline al_pattern al_pattern_full(void) { al_pattern p = {0}; p.kind = AL_PAT_FULL; return p; }
static inline al_pattern al_pattern_window2d(int gh, int gw, int wh, int ww)
{ al_pattern p = {0}; p.kind = AL_PAT_WINDOW2D; p.grid_h = gh; p.grid_w = gw; p.win_h = wh; p.win_w = ww; return p; }
static inline al_pattern al_pattern_window1d(int radius) { al_pattern p = {0}; p.kind = AL_PAT_WINDOW1D; p.radius = radius; return p; }
static inline al_pattern al_pattern_graph(const al_csr *adj) { al_pattern p = {0}; p.kind = AL_PAT_GRAPH; p.adj = adj; return p; }

/* A graph pattern's transpose (for each key, the slots that name it), which attention otherwise
 * builds in every step: for an adjacency that stays the same over many steps (full-batch training)
 * build it once, pass it with al_pattern_graph_plan, and free it after the adjacency's last use. The
 * plan remembers adj's arrays; attention refuses a plan made for other arrays, but the
 * contents of rowptr/col must not change while the plan lives. Thread-safe to share (read only). */
typedef struct al_graph_plan al_graph_plan;
al_graph_plan *al_graph_plan_new(const al_csr *adj, al_error *err);   /* NULL (err set) on bad input or OOM */
void al_graph_plan_free(al_graph_plan *plan);
static inline al_pattern al_pattern_graph_plan(const al_csr *adj, const al_graph_plan *plan)
{ al_pattern p = al_pattern_graph(adj); p.plan = plan; return p; }

typedef struct al_attn_desc {
    al_pattern pattern;
    al_score_kind score;
    al_norm_kind norm;
    float scale;           /* dot: 0 → 1/√D */
    float slope;           /* additive: LeakyReLU negative slope (GAT: 0.2) */
    float dropout;         /* on the normalised weights, active when c->training */
    al_tensor **weights;   /* if non-NULL, receives the weights in the pattern's layout (see below) */
} al_attn_desc;

/* Number of score slots per (batch, head) in the pattern's layout:
 * full N·N; window2d N·win_h·win_w (absent keys hold 0); window1d N·(2r+1); graph nnz. */
int64_t al_pattern_slots(const al_pattern *p, int n);
/* Number of window offsets (win_h·win_w or 2r+1); 0 for full and graph. */
int al_pattern_offsets(const al_pattern *p);

/* q (B,H,N,D), k (B,H,N,D), v (B,H,N,Dv) → (B,H,N,Dv).
 * a_q, a_k (H,D): additive score vectors (required for additive, NULL for dot).
 * rel_bias (H, offsets) or NULL: window patterns only; offset index (dy+rh)·win_w + (dx+rw), or j−i+r.
 * bias (H, slots) or NULL: added to every score, shared over the batch.
 * Gradients flow into every tensor argument that requires them. */
al_tensor *al_attention(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v,
                        al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias);
/* Whether al_attention_qkv (ops.h) reads q, k and v in place from a packed projection (batch, n,
 * 3·heads·head_dim) for this call (1) or splits, attends and merges (0): the d = 16 lane kernels run. */
int al_attention_qkv_inplace(al_ctx *c, const al_attn_desc *d, int batch, int n, int heads, int head_dim, al_tensor *rel_bias);
/* Which kernels this build runs for the d = 16 heads of the image models, e.g.
 * "window d16: 8 queries per vector (avx2); full d16: 8 queries per vector (avx2)" (bench prints it;
 * "generic tiles" / "slot lists" where neither AVX-512 nor AVX2 + FMA is there). */
const char *al_attn_kernels(void);

/* GATv2 (Brody et al., ICLR 2022) over the CSR pattern adj (N, N; row i = query i's keys):
 * e[h, s] = Σ_d a[h, d] LeakyReLU(q[i, h·D + d] + k[j, h·D + d], slope) + bias[h, s] for slot s = (i, j),
 * softmax over each row's slots, out[i, h·D + d] = Σ_s α[h, s] k[j, h·D + d].
 * q, k (N, H·D) (the target and source projections), a (H, D), bias (H, nnz) or NULL → (N, H·D).
 * Gradients flow into q, k, a and bias (src/attention/gatv2.c). */
al_tensor *al_gatv2(al_ctx *c, const al_csr *adj, al_tensor *q, al_tensor *k, al_tensor *a, al_tensor *bias, float slope);
/* al_gatv2 with attention dropout p in [0, 1) on the normalised coefficients while c->training (GAT's
 * rule: α·m/(1-p), m drawn per head and slot from c->dropout_rng's seed; al_gatv2 is p = 0). */
al_tensor *al_gatv2_dropout(al_ctx *c, const al_csr *adj, al_tensor *q, al_tensor *k, al_tensor *a, al_tensor *bias,
                            float slope, float p);

/* Gated positional self-attention (d'Ascoli et al., "ConViT", ICML 2021) over tokens on a grid: per head h,
 *   A_ij = (1 − σ(gate[h]))·softmax_j(c·q_i·k_j) + σ(gate[h])·softmax_j(pos[h]·r_ij),   out_i = Σ_j A_ij v_j,
 * r_ij = (δx, δy, δx² + δy²) the offset of key j from query i on the grid (row-major tokens), the two maps
 * normalised apart and mixed after the softmax. d: pattern full with grid_h·grid_w = N (the grid the offsets
 * are taken on), dot score, softmax, no dropout; scale as al_attention's (0 → 1/√D); *d->weights, if
 * requested, receives A (B,H,N,N) (not differentiable). q, k (B,H,N,D), v (B,H,N,Dv), gate (H), pos (H,3)
 * → (B,H,N,Dv). Gradients flow into q, k, v, gate and pos (src/attention/gpsa.c). The N×N maps are held
 * (B·H·N² floats while a tape records), within the memory budget (io.h). */
al_tensor *al_gpsa(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v, al_tensor *gate,
                   al_tensor *pos);

/* The dense masked reference: materialises the (N, N) scores with the pattern as a mask.
 * Same arguments and results as al_attention; for tests only. */
al_tensor *al_attention_ref(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v,
                            al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias);

/* ---- convolution as attention, exactly (Cordonnier, Loukas & Jaggi, ICLR 2020) ----
 * A K×K conv2d (stride 1, zero padding K/2) as a window2d (K×K) attention layer with K² heads:
 * head h = (dy+r)·K + (dx+r) attends to exactly the key at offset (dy, dx) through its relative
 * bias (1 at offset h, 0 elsewhere) with q = k = 0, dot score and the ReLU normaliser, so its
 * weight is 1 on that key and 0 on every other; at the border an absent key contributes nothing,
 * which is exactly zero padding (a softmax would renormalise over the present keys instead).
 * Value projections are the identity (Dv = C); the output projection (O, K²·C) holds the conv
 * weights, w_out[o][h·C + c] = w[o][c][dy+r][dx+r], plus the conv bias. */
typedef struct al_conv_attn {
    int C, O, K, heads;    /* heads = K·K */
    float *rel_bias;       /* (K², K²) one-hot rows */
    float *w_out;          /* (O, K²·C) */
    float *b_out;          /* (O) */
} al_conv_attn;
/* Build from conv weights w (O,C,K,K) and bias b (O) or NULL; K odd. Free with al_conv_attn_free. */
al_status al_conv_attn_build(al_conv_attn *ca, const float *w, const float *b, int O, int C, int K, al_error *err);
void al_conv_attn_free(al_conv_attn *ca);
/* x (B,C,H,W) → (B,O,H,W) through al_attention. Forward only: nothing is recorded on the tape. */
al_tensor *al_conv_attn_forward(al_ctx *c, const al_conv_attn *ca, al_tensor *x);
/* ---------------- segments: who may see whom in a packed batch (src/attention/segments.c) ---------------- */
/* The block-diagonal adjacency of nseg segments of lengths len[0..nseg) (each >= 0) packed back to
 * back: row i (a token of segment s) holds the tokens j of segment s with |i − j| <= radius, in
 * increasing order (radius −1: the whole segment). (N, N) with N = Σ len, built in one pass
 * (O(nnz), never N×N). out's arrays are malloc'd: free with al_csr_free. val is NULL (all ones). */
al_status al_csr_segments(const int *len /* (nseg) */, int nseg, int radius, al_csr *out, al_error *err);
/* The same adjacency from c's arena (valid until al_ctx_reset); NULL and c in error on failure. */
const al_csr *al_csr_segments_arena(al_ctx *c, const int *len /* (nseg) */, int nseg, int radius);

#endif
