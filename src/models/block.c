/* block.c — the pre-LN transformer block shared by the image and sequence models (block_impl.h). */
#include "block_impl.h"
#include "attnlab/ops.h"
#include "attnlab/attention.h"
#include "ops/ops_impl.h"
#include <stdio.h>

al_status al__block_params_add(al_params *P, al_block_params *p, int b, const char *attn_prefix, int dim, int heads,
                               int hidden, int offs, al_score_kind score)
{
    const int D = dim, Dh = dim / heads;
    const al_init zeros = {AL_INIT_ZEROS, 0}, ones = {AL_INIT_ONES, 0};
    char nm[96];
#define ADD(dst, attn, name, nd, shp, ini) do { \
        snprintf(nm, sizeof nm, "blocks.%d.%s%s", b, (attn) ? attn_prefix : "", name); \
        if (!((dst) = al_params_add(P, nm, (nd), (int[])shp, (ini)))) return AL_ERR; \
    } while (0)
#define S1(a) {a}
#define S2(a, c2) {a, c2}
    ADD(p->ln1_w, 0, "ln1.weight", 1, S1(D), ones);
    ADD(p->ln1_b, 0, "ln1.bias", 1, S1(D), zeros);
    ADD(p->qkv_w, 1, "qkv.weight", 2, S2(3 * D, D), al_init_kaiming(D));
    ADD(p->qkv_b, 1, "qkv.bias", 1, S1(3 * D), al_init_kaiming(D));
    ADD(p->proj_w, 1, "proj.weight", 2, S2(D, D), al_init_kaiming(D));
    ADD(p->proj_b, 1, "proj.bias", 1, S1(D), al_init_kaiming(D));
    if (offs) ADD(p->rel, 1, "rel", 2, S2(heads, offs), zeros);
    if (score == AL_SCORE_ADDITIVE) {
        ADD(p->a_q, 1, "a_q", 2, S2(heads, Dh), al_init_kaiming(Dh));
        ADD(p->a_k, 1, "a_k", 2, S2(heads, Dh), al_init_kaiming(Dh));
    }
    ADD(p->ln2_w, 0, "ln2.weight", 1, S1(D), ones);
    ADD(p->ln2_b, 0, "ln2.bias", 1, S1(D), zeros);
    ADD(p->fc1_w, 0, "fc1.weight", 2, S2(hidden, D), al_init_kaiming(D));
    ADD(p->fc1_b, 0, "fc1.bias", 1, S1(hidden), al_init_kaiming(D));
    ADD(p->fc2_w, 0, "fc2.weight", 2, S2(D, hidden), al_init_kaiming(hidden));
    ADD(p->fc2_b, 0, "fc2.bias", 1, S1(D), al_init_kaiming(hidden));
#undef ADD
#undef S1
#undef S2
    return AL_OK;
}

al_tensor *al__block_forward(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads,
                             al_tensor *x /* (…,N,D) */)
{
    return al__block_forward_bias(c, p, d, heads, x, NULL);
}

al_tensor *al__block_forward_bias(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads,
                                  al_tensor *x /* (…,N,D) */, al_tensor *bias /* (H,slots) or NULL */)
{
    return al__block_forward_drop(c, p, d, heads, x, bias, 0.f);
}

/* Without a tape: move t[0..n) down to m over the temporaries since (al_keep); 0, or -1 on failure. With a tape
 * or captured weights (lean = 0) nothing moves. */
static int lean_keep(al_ctx *c, int lean, al_arena_mark m, al_tensor **t, int n)
{
    return lean && al_keep(c, m, t, n) != AL_OK ? -1 : 0;
}

al_tensor *al__block_forward_drop(al_ctx *c, const al_block_params *p, const al_attn_desc *d, int heads,
                                  al_tensor *x /* (…,N,D) */, al_tensor *bias /* (H,slots) or NULL */, float drop)
{
    /* Without a tape (evaluation, prediction) each step's temporaries are dropped as soon as the next step
     * has its input (al_keep): the same ops in the same order, so the same bits, in a fraction of the memory.
     * Not when the attention weights are captured (they live among the temporaries). */
    const int lean = !c->grad_enabled && !d->weights;
    al_arena_mark m0 = al_ctx_mark(c);
    al_tensor *h = al_layernorm(c, x, p->ln1_w, p->ln1_b, 1e-5f), *o;
    if (!h) return NULL;
    const int nd = h->ndim, B = nd == 3 ? h->shape[0] : 1, N = h->shape[nd - 2], D = h->shape[nd - 1];
    if (nd == 3 && !p->a_q && !p->gpsa_gate && !bias && al_attention_qkv_inplace(c, d, B, N, heads, D / heads, p->rel)) {
        /* the lane kernels read q, k, v in place from the (B,N,3D) projection and write the heads merged:
         * the same bits as the path below, without its split and merge copies */
        al_tensor *qkv = al_linear(c, h, p->qkv_w, p->qkv_b);                  /* (B,N,3D) */
        o = al_attention_qkv(c, d, qkv, heads, NULL, NULL, p->rel, NULL);      /* (B,N,D) */
        if (lean_keep(c, lean, m0, &o, 1)) return NULL;
    } else {
        al_tensor *q, *k, *v;                                                   /* (…,H,N,Dh) each */
        if (al_linear_qkv(c, h, p->qkv_w, p->qkv_b, heads, &q, &k, &v) != AL_OK) return NULL;   /* no (…,N,3D) kept */
        /* A move costs a copy of what is kept: it is made where it frees at least as much as it moves.
         * q, k, v stay above the layer norm's output (moving 3 to free 1), the merged heads above the
         * attention's output (1 for 1): both go at the next move, one step later. */
        o = p->gpsa_gate ? al_gpsa(c, d, q, k, v, p->gpsa_gate, p->gpsa_pos)      /* (…,H,N,Dh) */
                         : al_attention(c, d, q, k, v, p->a_q, p->a_k, p->rel, bias);
        if (lean_keep(c, lean, m0, &o, 1)) return NULL;
        o = al_merge_heads(c, o);
    }
    /* without a tape and with the dropout an identity, the residual sums are made in the GEMMs' epilogues
     * (al__linear_add, al__mlp_gelu's res): the same bits as al_add after the products */
    const int fuse_res = !c->grad_enabled && (drop == 0.f || !c->training);
    if (lean) {   /* the residual moves down before the layer norm's temporaries start */
        x = fuse_res ? al__linear_add(c, x, o, p->proj_w, p->proj_b)
                     : al_add(c, x, al_dropout(c, al_linear(c, o, p->proj_w, p->proj_b), drop));
        if (lean_keep(c, lean, m0, &x, 1)) return NULL;
        h = al_layernorm(c, x, p->ln2_w, p->ln2_b, 1e-5f);
    } else {      /* x + o and its layer norm in one pass: the same bits */
        al_tensor *s;
        o = al_linear(c, o, p->proj_w, p->proj_b);                              /* (…,N,D) */
        h = al_add_layernorm(c, x, al_dropout(c, o, drop), p->ln2_w, p->ln2_b, 1e-5f, &s);
        x = s;
    }
    /* fc2(gelu(fc1(h))) with the GELU inside fc1's GEMM (al__mlp_gelu). Without a tape the GELU is written
     * over fc1's output (its only reader), which stays where it is: moving it down over the layer norm's
     * output would copy the hidden activations (2·dim wide here) to free dim. */
    al_tensor *y = fuse_res ? al__mlp_gelu(c, h, p->fc1_w, p->fc1_b, p->fc2_w, p->fc2_b, x)
                            : al_add(c, x, al_dropout(c, al__mlp_gelu(c, h, p->fc1_w, p->fc1_b, p->fc2_w, p->fc2_b, NULL), drop));   /* (…,N,D) */
    if (lean_keep(c, lean, m0, &y, 1)) return NULL;
    return y;
}
