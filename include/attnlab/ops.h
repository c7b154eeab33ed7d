/* attnlab/ops.h — differentiable ops on the tape.
 *
 * Each op allocates its output from the context's arena, computes the forward pass and,
 * when any input requires a gradient and c->grad_enabled, records its backward on the tape.
 * Backward passes accumulate (+=) into the inputs' gradients. An op given a NULL input, or
 * called on a context already in error, returns NULL; a shape mismatch records an error
 * naming the op and the shapes and returns NULL (never an out-of-bounds access).
 *
 *   al_tensor *h = al_relu(c, al_linear(c, x, W1, b1));     // (B, 128)
 *   al_tensor *loss = al_cross_entropy(c, al_linear(c, h, W2, b2), labels, NULL);
 *   if (!loss) { fprintf(stderr, "%s\n", al_ctx_error(c)); ... }
 *   al_backward(c, loss);
 */
#ifndef ATTNLAB_OPS_H
#define ATTNLAB_OPS_H
#include "tensor.h"
#include "attention.h"

/* ---- linear algebra ---- */
/* A (M,K) or (Bt,M,K) [transposed: (K,M)/(Bt,K,M)]; B (K,N) or (Bt,K,N) [transposed: (N,K)/(Bt,N,K)].
 * 3-D A with 2-D B folds A's batch into M. Result (M,N) or (Bt,M,N). */
al_tensor *al_matmul(al_ctx *c, al_tensor *a, al_tensor *b, int trans_a, int trans_b);
/* x (..., in) · W(out, in)ᵀ + b(out) → (..., out); b may be NULL. PyTorch's nn.Linear. */
al_tensor *al_linear(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b);
/* S (rows, cols) CSR, constant · X (cols, F) → (rows, F). Gradient flows into X only. */
al_tensor *al_spmm(al_ctx *c, const al_csr *s, al_tensor *x);

/* ---- elementwise and broadcast ---- */
al_tensor *al_add(al_ctx *c, al_tensor *a, al_tensor *b);        /* same shape */
al_tensor *al_mul(al_ctx *c, al_tensor *a, al_tensor *b);        /* same shape */
al_tensor *al_scale(al_ctx *c, al_tensor *x, float s);
/* x (..., T) + y (T) where y's shape equals x's trailing dims: bias add, positional add. */
al_tensor *al_add_bcast(al_ctx *c, al_tensor *x, al_tensor *y);

/* x (..., D+1) whose last column is a mass m → (..., D) = x[..., :D] / max(1, m): the first D columns
 * divided by the mass where it exceeds 1, as they are where it does not (conv-attn-ft's bounded ReLU
 * attention: values with a ones column appended give each query its total weight as m). */
al_tensor *al_mass_normalize(al_ctx *c, al_tensor *x);

/* ---- activations ---- */
al_tensor *al_relu(al_ctx *c, al_tensor *x);
al_tensor *al_leaky_relu(al_ctx *c, al_tensor *x, float slope);
al_tensor *al_elu(al_ctx *c, al_tensor *x, float alpha);
al_tensor *al_gelu(al_ctx *c, al_tensor *x);                     /* exact (erf) GELU, as nn.GELU() */
al_tensor *al_dropout(al_ctx *c, al_tensor *x, float p);         /* inverted; identity unless c->training */

/* ---- normalisation, softmax, loss (all over the last dimension) ---- */
al_tensor *al_layernorm(al_ctx *c, al_tensor *x, al_tensor *gamma, al_tensor *beta, float eps);
/* y = layernorm(a + b) with the sum returned in *sum (the residual of a pre-LN block): one pass over the
 * rows instead of two, the same bits and gradients as al_add then al_layernorm. */
al_tensor *al_add_layernorm(al_ctx *c, al_tensor *a, al_tensor *b, al_tensor *gamma, al_tensor *beta, float eps,
                            al_tensor **sum);
al_tensor *al_softmax(al_ctx *c, al_tensor *x);
al_tensor *al_log_softmax(al_ctx *c, al_tensor *x);
/* logits (B, C), labels[B] in [0, C); mask[B] (1 = row counts) or NULL.
 * Returns the scalar mean negative log-likelihood over counted rows (shape (1)). */
al_tensor *al_cross_entropy(al_ctx *c, al_tensor *logits, const int *labels, const uint8_t *mask);

/* ---- convolution and pooling (NCHW) ---- */
/* x (B,C,H,W), w (O,C,KH,KW), b (O) or NULL, zero padding → (B,O,Ho,Wo). */
al_tensor *al_conv2d(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int stride, int pad);
al_tensor *al_maxpool2d(al_ctx *c, al_tensor *x, int k, int stride);   /* (B,C,H,W) → (B,C,Ho,Wo) */
/* al_maxpool2d(al_conv2d(x, w, b, 1, pad), 2, 2) in one op, without the convolution's output tensor (each
 * image is pooled while its output is in cache): the same values and gradients, bit for bit — except for a
 * 3×3 pad-1 convolution over even planes with ≥ 4 input channels, which runs Winograd's F(2×2, 3×3) (each
 * 2×2 output block is one pooling window; al_conv_kernels, kernels.h): within ~1e-6 relative of those
 * values, the same for any thread count. */
al_tensor *al_conv2d_maxpool2(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int pad);
/* al_relu(al_conv2d_maxpool2(..)) in one op (the ReLU applied to each pooled plane while it is in cache, its
 * gradient mask read from the output): the same values and gradients as al_relu of al_conv2d_maxpool2, bit
 * for bit. */
al_tensor *al_conv2d_maxpool2_relu(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int pad);

/* ---- shape ---- */
al_tensor *al_reshape(al_ctx *c, al_tensor *x, int ndim, const int *shape); /* same numel */
al_tensor *al_permute(al_ctx *c, al_tensor *x, const int *perm);          /* out.shape[i] = x.shape[perm[i]] */
al_tensor *al_mean_tokens(al_ctx *c, al_tensor *x);                       /* (B,N,C) → (B,C) */
al_tensor *al_split_heads(al_ctx *c, al_tensor *x, int heads);            /* (B,N,H·D) → (B,H,N,D) */
al_tensor *al_merge_heads(al_ctx *c, al_tensor *x);                       /* (B,H,N,D) → (B,N,H·D) */
/* x (B,N,3·H·D) → *q, *k, *v (B,H,N,D) each: al_split_heads(al_slice_last(x, s·H·D, H·D), heads) for
 * s = 0, 1, 2 fused into one pass over x with one backward. AL_OK, or AL_ERR with the message in c. */
al_status  al_split_qkv(al_ctx *c, al_tensor *x, int heads, al_tensor **q, al_tensor **k, al_tensor **v);
/* Attention (attention.h) on a packed projection, the heads merged on the way out:
 *   al_attention_qkv(c, d, qkv, H, a_q, a_k, rel, bias)
 *     = al_merge_heads(al_attention(c, d, q, k, v, a_q, a_k, rel, bias))   with (q, k, v) = al_split_qkv(qkv, H),
 * bit for bit, forward and backward. qkv (B,N,3·H·D) → (B,N,H·Dv) with Dv = D. Where the d = 16 lane
 * kernels run (dot score, softmax, D = 16, no bias, no attention dropout, no captured weights; full
 * with B·H ≥ 4 or a window pattern) q, k and v are read in place from qkv and the output is written
 * merged: no copies either way. Elsewhere the call splits, attends and merges as above.
 * al_attention_qkv_inplace says which for qkv (batch, n, 3·heads·head_dim) (1: in place), for a caller that
 * picks what to keep. */
al_tensor *al_attention_qkv(al_ctx *c, const al_attn_desc *d, al_tensor *qkv, int heads, al_tensor *a_q, al_tensor *a_k,
                            al_tensor *rel_bias, al_tensor *bias);
/* al_split_qkv(al_linear(x, w, b), heads) with the same arithmetic (same bits, forward and backward),
 * but the (…, N, 3·H·D) projection lives only in a scratch that is freed before the op returns (and its
 * gradient only inside the backward): a transformer block keeps 3·D fewer floats per token. */
al_status  al_linear_qkv(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int heads, al_tensor **q, al_tensor **k,
                         al_tensor **v);
/* Concatenate n tensors along the last dimension (all other dims equal). */
al_tensor *al_concat_last(al_ctx *c, int n, al_tensor **xs);
/* Slice [start, start+len) of the last dimension. */
al_tensor *al_slice_last(al_ctx *c, al_tensor *x, int start, int len);
/* table (V, C), ids[n] in [0, V) → (n, C). */
al_tensor *al_embedding(al_ctx *c, al_tensor *table, const int *ids, int n);
/* (B,C,H,W) → (B, (H/p)(W/p), C·p·p): non-overlapping p×p patches, row-major over the grid,
 * each patch flattened as (c, dy, dx). H and W must be multiples of p. */
al_tensor *al_patchify(al_ctx *c, al_tensor *x, int p);

/* ---- graph layers, fused (the graph models' building blocks; src/ops/graph.c) ---- */
/* Sparse inverted dropout of a constant CSR's values (p = 0 or !c->training: s itself).
 * Returns arena memory sharing s's structure; the mask comes from c->dropout_rng. */
const al_csr *al_csr_dropout(al_ctx *c, const al_csr *s, float p);
/* dropout(X) · W with the heads split as it is written: X (N, F) the features as CSR x, or as the
 * dense rows xd (N, F) when xd is non-NULL (x still gives N and F); w (F, H·D). The input dropout is
 * al_csr_dropout's mask, computed on the fly. → (1, H, N, D) when H > 1 or as4d, else (N, D).
 * Gradient flows into w only. */
al_tensor *al_gnn_project(al_ctx *c, const al_csr *x, const float *xd, al_tensor *w, int H, int as4d, float p);
/* dropout(act(merge(a) + b)) for a (1, H, N, D) head-major or (N, D), b (H·D); act = ELU(alpha), or
 * ReLU when relu: al_merge_heads, al_add_bcast, al_elu / al_relu, al_dropout in one pass → (N, H·D). */
al_tensor *al_gnn_bias_act_dropout(al_ctx *c, al_tensor *a, al_tensor *b, int relu, float alpha, float p);
/* x (N, C), ids[m] (m >= 1) → (m, C): the rows ids of x, gradient scattered back. */
al_tensor *al_take_rows(al_ctx *c, al_tensor *x, const int *ids, int m);

/* ---- graph readouts of a packed batch: graph s owns rows [Σ_{t<s} len[t], … + len[s]) (src/ops/readout.c) ---- */
/* x (N, C) → (nseg, C): the sum of each graph's rows, or their mean when mean (an empty graph gives 0). */
al_tensor *al_seg_pool(al_ctx *c, al_tensor *x, const int *len, int nseg, int mean);
/* Attention pooling: scores s (N, H) (e.g. a learned query · keys), values v (N, H·Dv) → (nseg, H·Dv),
 * out[g, h·Dv + d] = Σ_i softmax_i∈g(s[i, h]) v[i, h·Dv + d]. *weights (if non-NULL) receives the
 * softmax weights (N, H) (arena memory; no gradient flows through it). */
al_tensor *al_seg_attn_pool(al_ctx *c, al_tensor *s, al_tensor *v, const int *len, int nseg, al_tensor **weights);
/* ---------------- packed-layout ops (src/ops/segment.c), with backward ---------------- */
/* x (N, C) packed, len (nseg) summing to N → (N, (2K+1)·C): row i is the concatenation of the rows
 * i−K, …, i+K of its own segment, in that order, with zeros for positions outside the segment. */
al_tensor *al_seg_window(al_ctx *c, al_tensor *x, const int *len, int nseg, int K);
/* x (N, C) packed → (nseg, Tmax, C) padded with zeros, Tmax = max(len) (at least 1). */
al_tensor *al_seg_unpack(al_ctx *c, al_tensor *x, const int *len, int nseg);
/* y (nseg, T, C) padded, len[s] <= T → (Σ len, C) packed: the first len[s] steps of each sequence. */
al_tensor *al_seg_pack(al_ctx *c, al_tensor *y, const int *len, int nseg);
/* Position of each packed token within its segment: pos[i] for i < Σ len. */
void al_seg_positions(const int *len /* (nseg) */, int nseg, int *pos /* (Σ len) */);
/* torch_pos.py's sinusoid(n, d): pe[p, 2i] = sin(p / 10000^(2i/d)), pe[p, 2i+1] = cos(same); d even. */
void al_sinusoid(float *pe /* (n, d) */, int n, int d);

#endif
