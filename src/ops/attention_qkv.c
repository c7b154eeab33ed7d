/* attention_qkv.c — attention on a packed q/k/v projection (ops.h): the attention floor's in-place path
 * where the d = 16 lane kernels run, else split (al_split_qkv), attend (al_attention), merge
 * (al_merge_heads) — the same bits either way. */
#include "attnlab/ops.h"
#include "attention/attention_impl.h"

al_tensor *al_attention_qkv(al_ctx *c, const al_attn_desc *d, al_tensor *qkv, int heads, al_tensor *a_q, al_tensor *a_k,
                            al_tensor *rel_bias, al_tensor *bias)
{
    int split;
    al_tensor *out = al__attention_qkv_lanes(c, d, qkv, heads, a_q, a_k, rel_bias, bias, &split);
    if (!split) return out;
    al_tensor *q, *k, *v;   /* split, attend, merge: al_attention's kernels and bits */
    if (al_split_qkv(c, qkv, heads, &q, &k, &v) != AL_OK) return NULL;
    return al_merge_heads(c, al_attention(c, d, q, k, v, a_q, a_k, rel_bias, bias));
}
