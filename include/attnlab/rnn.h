/* attnlab/rnn.h — recurrent ops on the tape: a GRU layer over batches of sequences of different lengths.
 *
 * al_gru_packed is PyTorch's nn.GRU (one layer, batch_first, bidirectional or not) on a packed
 * sequence: x (N, I) holds nseg sequences back to back (seq.h's packed layout, len[s] rows each),
 * and the output (N, ndir·H) holds, per token, the forward direction's state and (ndir = 2) the
 * backward direction's beside it, as nn.GRU's output does:
 *
 *   al_gru_dir dir[2] = {{Wf_ih, Wf_hh, bf_ih, bf_hh}, {Wr_ih, Wr_hh, br_ih, br_hh}};
 *   al_tensor *h = al_gru_packed(c, x, len, nseg, 2, dir);              // (N, 2H)
 *
 * al_gru is one direction on a PADDED batch x (B, T, I): sequence b runs over its first len[b] steps
 * only, forwards (t = 0 … len[b]−1) or, with reverse, backwards (t = len[b]−1 … 0).
 *
 * Weights use PyTorch's layout and gate order (r, z, n) so a state dict copies over unchanged:
 *   r  = σ(W_ir x + b_ir + W_hr h + b_hr)
 *   z  = σ(W_iz x + b_iz + W_hz h + b_hz)
 *   n  = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
 *   h' = (1 − z) ⊙ n + z ⊙ h,     h before the first step = 0.
 * Outputs at padded steps (t ≥ len[b]) are 0, and padded inputs never reach the state or any
 * gradient. The backward pass is backpropagation through time, notes in docs/gru.md. With two
 * directions and two or more threads the directions run concurrently; results never depend on the
 * thread count.
 */
#ifndef ATTNLAB_RNN_H
#define ATTNLAB_RNN_H
#include "tensor.h"

/* x (B, T, I), len[B] with 0 <= len[b] <= T (NULL: every sequence has T steps), w_ih (3H, I),
 * w_hh (3H, H), b_ih (3H) or NULL, b_hh (3H) or NULL; reverse = 0 forwards, 1 backwards in time.
 * Returns (B, T, H) from the arena; len is copied, so the caller's array need not outlive the call.
 * Gradients flow into every input that requires one (accumulated, +=). Shape errors are recorded in c. */
al_tensor *al_gru(al_ctx *c, al_tensor *x, const int *len, al_tensor *w_ih, al_tensor *w_hh,
                  al_tensor *b_ih, al_tensor *b_hh, int reverse);

/* One direction's parameters: w_ih (3H, I), w_hh (3H, H), b_ih and b_hh (3H) or NULL. */
typedef struct al_gru_dir { al_tensor *w_ih, *w_hh, *b_ih, *b_hh; } al_gru_dir;
/* x (N, I) packed: nseg >= 1 sequences of len[s] >= 0 rows, Σ len = N. ndir = 1: dir[0] forwards;
 * ndir = 2: dir[0] forwards and dir[1] backwards in time. Returns (N, ndir·H) from the arena, row i
 * = [forward state | backward state] after token i. len is copied. Gradients flow into every input
 * that requires one (accumulated, +=). Shape errors are recorded in c. */
al_tensor *al_gru_packed(al_ctx *c, al_tensor *x, const int *len, int nseg, int ndir, const al_gru_dir *dir);

/* Naive reference of al_gru for the tests: plain loops, every sum in double. Raw row-major arrays
 * with the shapes above (b_ih, b_hh may be NULL; len may be NULL). Writes y (B, T, H) (padded steps 0).
 * If dy (B, T, H) is not NULL it also runs backpropagation through time and ACCUMULATES into those of
 * dx (B, T, I), dw_ih, dw_hh, db_ih, db_hh that are not NULL. Returns AL_ERR only if out of memory. */
al_status al_gru_ref(int B, int T, int I, int H, const float *x, const int *len,
                     const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh,
                     int reverse, float *y, const float *dy, float *dx, float *dw_ih,
                     float *dw_hh, float *db_ih, float *db_hh);
#endif
