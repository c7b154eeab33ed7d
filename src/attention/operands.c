/* operands.c — what the attention op (attention.c) and its kernels (full.c, sparse.c, win16.c) share:
 * the additive score's head projections and their gradient, and a tape node's operand and gradient
 * pointers (split q, k, v, or read in place from a packed projection). */
#include "attention/attention_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"

/* s (B,H,N) = a[h] · x[b,h,i] for the additive score. */
void al__attn_head_dot(const al_attn_cfg *g, const float *x /* (B,H,N,D) */, const float *a /* (H,D) */,
                       float *s /* (B,H,N) */)
{
    int64_t rows = (int64_t)g->B * g->H * g->N;
    int D = g->D;
    AL_OMP("omp parallel for schedule(static) if (rows * D > AL_PAR_MIN)")
    for (int64_t r = 0; r < rows; r++) {
        int h = (int)((r / g->N) % g->H);
        const float *xr = x + r * D, *ah = a + (int64_t)h * D;
        float acc = 0.f;
        for (int d = 0; d < D; d++) acc = AL_FMA(xr[d], ah[d], acc);
        s[r] = acc;
    }
}

/* da (H,D) += Σ_{b,i} ds[b,h,i] · x[b,h,i,:] in a fixed order (b, then i). */
void al__attn_head_dot_grad(const al_attn_cfg *g, const float *x /* (B,H,N,D) */, const float *ds /* (B,H,N) */,
                            float *da /* (H,D) */)
{
    int D = g->D;
    AL_OMP("omp parallel for schedule(static) if (g->H > 1 && (int64_t)g->B * g->N * D > AL_PAR_MIN)")
    for (int h = 0; h < g->H; h++) {
        float *dah = da + (int64_t)h * D;
        for (int b = 0; b < g->B; b++) {
            int64_t base = ((int64_t)b * g->H + h) * g->N;
            for (int i = 0; i < g->N; i++) {
                float w = ds[base + i];
                const float *xr = x + (base + i) * D;
                for (int d = 0; d < D; d++) dah[d] = AL_FMA(w, xr[d], dah[d]);
            }
        }
    }
}

/* ---------------- q, k, v read in place from the packed projection ---------------- */

void al__attn_ptrs(al_ctx *c, attn_node *nd, const float **q, const float **k, const float **v, float **dq, float **dk,
                   float **dv, int *fresh)
{
    if (fresh) *fresh = 0;
    if (nd->qkv) {   /* (B,N,3·H·D): q, k, v and their gradients are column blocks of one tensor */
        const int64_t hd = (int64_t)nd->g.H * nd->g.D;
        float *g0 = !nd->qkv->requires_grad ? NULL : fresh ? al_grad_for_write(c, nd->qkv, fresh) : al_grad(c, nd->qkv);
        *q = nd->qkv->data; *k = *q + hd; *v = *q + 2 * hd;
        *dq = g0; *dk = g0 ? g0 + hd : NULL; *dv = g0 ? g0 + 2 * hd : NULL;
        return;
    }
    *q = nd->q->data; *k = nd->k->data; *v = nd->v->data;
    *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;
    *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;
    *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;
}
