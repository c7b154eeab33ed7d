/* block_impl.h — the pre-LN transformer block that the image models (sa, local) and the sequence
 * models (sa, trunc) share: x += proj(attention(LN x)); x += fc2(GELU(fc1(LN x))) (internal; block.c). */
#ifndef ATTNLAB_MODELS_BLOCK_IMPL_H
#define ATTNLAB_MODELS_BLOCK_IMPL_H
#include "attnlab/models.h"

/* Register block b's parameters in P, in PyTorch's order and initialisation, as
 * "blocks.B.ln1.weight", "blocks.B.<attn>qkv.weight", … where <attn> is attn_prefix ("attn." for the
 * image models, "" for the sequence models); a relative bias "…rel" (heads, offs) when offs > 0, and
 * a_q/a_k (heads, dim/heads) for the additive score. AL_ERR when out of memory. */
al_status al__block_params_add(al_params *P, al_block_params *p /* out */, int b, const char *attn_prefix, int dim,
                               int heads, int hidden, int offs, al_score_kind score);
/* x (…, N, dim) → the block's output (…, N, dim), attention as described by d (pattern, score, norm,
 * weights to capture); p->rel, p->a_q, p->a_k are used where registered. */
al_tensor *al__block_forward(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads, al_tensor *x);
/* The same with an additive score bias (H, slots) in the pattern's layout (al_attention's bias), or NULL:
 * the molecule models' bond-type and distance biases. */
al_tensor *al__block_forward_bias(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads, al_tensor *x,
                                  al_tensor *bias);
/* The same with dropout p on the attention and the feed-forward outputs before each residual add
 * (identity when p = 0 or not training): the graph transformers of gnn.c. */
al_tensor *al__block_forward_drop(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads, al_tensor *x,
                                  al_tensor *bias, float drop);
#endif
