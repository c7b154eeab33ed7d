/* attention.c — the multi-head attention op al_attention and its tape node: argument checking
 * (pattern.c), the additive score's head projections, then one of three kernel families, forward
 * now and backward from the tape:
 *   full      full.c (and full16_fwd.c, full16_bwd.c for D = Dv = 16): streamed tiles, online softmax,
 *             lse saved;
 *   sparse    sparse.c: window2d / window1d / graph through slot lists, weights saved per slot;
 *   gat       gat.c: graph + additive + softmax without bias, the heads in vector lanes.
 * Parameter gradients are reduced in a fixed order after the passes, so results are bitwise
 * independent of the schedule and of the thread count. The maths of the backward passes is written
 * up in docs/attention.md. */
#include "attention/attention_impl.h"
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "attnlab/kernels.h"
#include <stdio.h>
#include <string.h>

const char *al_attn_kernels(void)
{
    static char buf[160];
    snprintf(buf, sizeof buf, "window d16: %s; full d16: %s", al__win16_path(), al__full16_path());
    return buf;
}

/* Query-key pairs the pattern scores per (b, h): N² for full, the in-grid window cells for window2d and
 * window1d, the edges for a graph. */
static double attn_pairs(const al_pattern *p, const al_attn_cfg *g)
{
    if (p->kind == AL_PAT_FULL) return (double)g->N * g->N;
    if (p->kind == AL_PAT_WINDOW2D) {
        double sy = 0, sx = 0;
        for (int y = 0; y < p->grid_h; y++)
            for (int d = -(p->win_h / 2); d <= p->win_h / 2; d++) sy += y + d >= 0 && y + d < p->grid_h;
        for (int x = 0; x < p->grid_w; x++)
            for (int d = -(p->win_w / 2); d <= p->win_w / 2; d++) sx += x + d >= 0 && x + d < p->grid_w;
        return sy * sx;
    }
    if (p->kind == AL_PAT_WINDOW1D) {
        double s = 0;
        for (int i = 0; i < g->N; i++) {
            int lo = i - p->radius < 0 ? 0 : i - p->radius, hi = i + p->radius >= g->N ? g->N - 1 : i + p->radius;
            s += hi - lo + 1;
        }
        return s;
    }
    return (double)g->slots;
}

/* FLOPs of the products: forward QKᵀ (dot score) and PV; backward dP = dO·Vᵀ, dV = Pᵀ·dO, dQ and dK, and
 * for the full kernels (which keep only the log-sum-exp) QKᵀ once more. */
static void attn_count(const attn_node *nd, int phase)
{
    if (!al_flops_enabled()) return;
    const al_attn_cfg *g = &nd->g;
    const double pairs = attn_pairs(&nd->pat, g) * g->B * g->H;
    const double qk = g->additive ? 0.0 : 2.0 * g->D, pv = 2.0 * g->Dv;
    if (phase == AL_FLOPS_FWD) al_flops_add("attention", phase, pairs * (qk + pv));
    else al_flops_add("attention", phase, pairs * (2 * pv + 2 * qk + (nd->pat.kind == AL_PAT_FULL ? qk : 0)));
}

static void attention_backward(al_ctx *c, void *p)
{
    attn_node *nd = p;
    if (!nd->out->grad) return;
    attn_count(nd, AL_FLOPS_BWD);
    if (nd->pat.kind == AL_PAT_FULL) al__attn_full_backward(c, nd);
    else if (nd->gat) al__attn_gat_backward(c, nd);
    else if (nd->win16) al__win16_backward(c, nd);
    else al__attn_sparse_backward(c, nd);
}

static int wants_grad(al_tensor *t) { return t && t->requires_grad; }

/* The full pattern's forward: lse and the per-thread scratch (arena), then the d = 16 lane kernels (q, k,
 * v, out in the node's layouts) or the generic tiles. Returns the scratch (the weights reuse it), or NULL
 * after al_fail. */
static float *full_run(al_ctx *c, attn_node *nd, const float *q, const float *k, const float *v, const float *bias,
                       float *out)
{
    const al_attn_cfg *g = &nd->g;
    nd->lse = al_arena_alloc(&c->arena, (size_t)g->B * g->H * g->N * sizeof(float));
    float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * al__attn_full_scratch_for(g, bias, 0) * sizeof(float));
    if (!nd->lse || !scratch) { al_fail(c, "attention: out of memory"); return NULL; }
    if (al__attn_use_full16(g, bias)) al__full16_forward(g, q, k, v, out, nd->lse, &nd->li, &nd->lo, scratch, nd->nthr);
    else al__attn_full_forward(g, q, k, v, nd->sq, nd->sk, bias, out, nd->lse, scratch, nd->nthr);
    return scratch;
}

/* A window or (non-GAT) graph pattern's forward: slot lists, the d = 16 window lane kernels where they
 * apply (q, k, v, out in the node's layouts) or the slot-list kernels, the dropout bytes, P and scratch.
 * Returns 0, or -1 after al_fail. */
static int slots_run(al_ctx *c, const al_attn_desc *d, attn_node *nd, const float *q, const float *k, const float *v,
                     const float *rel, const float *bias, float *out)
{
    const al_attn_cfg *g = &nd->g;
    const int64_t heads = (int64_t)g->B * g->H;
    if (al__attn_slot_lists(c, &d->pattern, g, nd) != 0) return -1;
    nd->win16 = g->slots > 0 && al__win16_ok(g, &d->pattern, bias);
    if (nd->win16 && al__win16_setup(c, nd) != 0) return -1;
    if (g->drop) {
        nd->keepb = al_arena_alloc(&c->arena, (size_t)(heads * g->slots > 0 ? heads * g->slots : 1));
        if (!nd->keepb) { al_fail(c, "attention: out of memory"); return -1; }
        al__attn_keep_bytes(g, nd->keepb);
    }
    const int64_t psz = nd->win16 ? heads * g->noff * nd->w_npad : heads * g->slots;
    nd->P = al_arena_alloc(&c->arena, (size_t)(psz > 0 ? psz : 1) * sizeof(float));
    const size_t per = nd->win16 ? al__win16_scratch(nd) : (size_t)nd->maxdeg;
    float *scratch = al_arena_alloc(&c->arena, (size_t)nd->nthr * per * sizeof(float));
    if (!nd->P || !scratch) { al_fail(c, "attention: out of memory"); return -1; }
    if (nd->win16) al__win16_forward(nd, q, k, v, rel, nd->P, out, scratch);
    else al__attn_sparse_forward(nd, q, k, v, rel, bias, out, scratch);
    return 0;
}

al_tensor *al_attention(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v,
                        al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias)
{
    if (!al_ok(c) || !q || !k || !v) return NULL;
    al_attn_cfg g;
    if (al_attn_setup(c, "attention", d, q, k, v, a_q, a_k, rel_bias, bias, &g) != 0) return NULL;
    const int N = g.N;
    const int64_t rows = (int64_t)g.B * g.H * N;
    al_tensor *out = al_new(c, 4, (int[]){g.B, g.H, N, g.Dv});
    attn_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    if (!out || !nd) return al_ok(c) ? al_fail(c, "attention: out of memory") : NULL;
    nd->g = g; nd->pat = d->pattern;
    nd->q = q; nd->k = k; nd->v = v; nd->aq = a_q; nd->ak = a_k; nd->rel = rel_bias; nd->bias = bias; nd->out = out;
    nd->li = al__lay_plain(&g, g.D); nd->lo = al__lay_plain(&g, g.Dv);
    nd->nthr = al_threads();
    nd->gat = d->pattern.kind == AL_PAT_GRAPH && g.additive && !g.relu && !bias;
    if (g.additive && !nd->gat) {
        nd->sq = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
        nd->sk = al_arena_alloc(&c->arena, (size_t)rows * sizeof(float));
        if (!nd->sq || !nd->sk) return al_fail(c, "attention: out of memory");
        al__attn_head_dot(&g, q->data, a_q->data, nd->sq);
        al__attn_head_dot(&g, k->data, a_k->data, nd->sk);
    }
    al_tensor *w = NULL;
    if (d->pattern.kind == AL_PAT_FULL) {
        if (d->weights) { w = al_new(c, 4, (int[]){g.B, g.H, N, N}); if (!w) return NULL; }
        const float *bd = bias ? bias->data : NULL;
        float *scratch = full_run(c, nd, q->data, k->data, v->data, bd, out->data);
        if (!scratch) return NULL;
        if (w) al__attn_full_weights(&g, q->data, k->data, nd->sq, nd->sk, bd, nd->lse, w->data, scratch, nd->nthr);
    } else if (nd->gat) {
        if (al__attn_slot_lists(c, &d->pattern, &g, nd) != 0 || al__attn_gat_setup(c, nd) != 0) return NULL;
        al__attn_gat_forward(nd, q->data, k->data, v->data, out->data);
        if (d->weights) {   /* P is (B,slots,H): the weights are (B,H,slots) */
            w = al_new(c, 3, (int[]){g.B, g.H, g.slots > 0 ? (int)g.slots : 1});
            if (!w) return NULL;
            if (g.slots == 0) w->data[0] = 0.f;
            for (int64_t bh = 0; bh < (int64_t)g.B * g.H; bh++)
                for (int64_t s = 0; s < g.slots; s++)
                    w->data[bh * g.slots + s] = nd->P[((bh / g.H) * g.slots + s) * g.H + bh % g.H];
        }
    } else {
        if (slots_run(c, d, nd, q->data, k->data, v->data, rel_bias ? rel_bias->data : NULL, bias ? bias->data : NULL,
                      out->data) != 0)
            return NULL;
        if (d->weights) {
            if (g.noff) w = al_new(c, 4, (int[]){g.B, g.H, N, g.noff});
            else w = al_new(c, 3, (int[]){g.B, g.H, g.slots > 0 ? (int)g.slots : 1});
            if (!w) return NULL;
            if (nd->win16) al__win16_weights(nd, w->data);   /* P is block-major there */
            else if (g.slots > 0) memcpy(w->data, nd->P, (size_t)(rows / N * g.slots) * sizeof(float));
            else w->data[0] = 0.f;   /* an empty graph: no slots; (B,H,1) of zeros stands in */
        }
    }
    if (d->weights) *d->weights = w;
    attn_count(nd, AL_FLOPS_FWD);
    if (c->grad_enabled && (wants_grad(q) || wants_grad(k) || wants_grad(v) || wants_grad(a_q) ||
                            wants_grad(a_k) || wants_grad(rel_bias) || wants_grad(bias))) {
        out->requires_grad = 1;
        al_tape_push_out(c, attention_backward, nd, out);
    }
    return al_ok(c) ? out : NULL;
}

/* The lane kernels (full: with the fused per-head backward) run this configuration. */
static int qkv_lanes(const al_attn_desc *d, const al_attn_cfg *g)
{
    if (d->weights || g->drop || g->additive || g->relu || g->D != 16 || g->Dv != 16) return 0;
    if (d->pattern.kind == AL_PAT_FULL) return al__attn_use_full16(g, NULL) && (int64_t)g->B * g->H >= AL_FULL_FUSED_MIN_HEADS;
    return g->slots > 0 && al__win16_ok(g, &d->pattern, NULL);
}

/* Validates the packed call and fills g with what al_attention would see for the split q, k, v, except
 * dropout: no seed is drawn here (g->drop is 0; al_attention draws it on the split path). */
static int qkv_setup(al_ctx *c, const al_attn_desc *d, const al_tensor *qkv, int heads, al_tensor *a_q, al_tensor *a_k,
                     al_tensor *rel_bias, al_tensor *bias, al_attn_cfg *g)
{
    char s1[64];
    if (qkv->ndim != 3 || heads < 1 || qkv->shape[2] % (3 * heads) != 0) {
        al_fail(c, "attention_qkv: qkv %s must be (B, N, 3·H·D) with H = %d heads", al_shape_str(qkv, s1, sizeof s1), heads);
        return -1;
    }
    if (!d) { al_fail(c, "attention_qkv: descriptor is NULL"); return -1; }
    al_attn_desc e = *d;
    e.dropout = 0.f;
    if (!(d->dropout >= 0.f && d->dropout < 1.f)) e.dropout = d->dropout;   /* the error message */
    al_tensor h = {0};   /* the shape of each of q, k, v (B,H,N,D); no data is read */
    h.ndim = 4; h.shape[0] = qkv->shape[0]; h.shape[1] = heads; h.shape[2] = qkv->shape[1]; h.shape[3] = qkv->shape[2] / (3 * heads);
    h.numel = qkv->numel / 3;
    return al_attn_setup(c, "attention_qkv", &e, &h, &h, &h, a_q, a_k, rel_bias, bias, g);
}

int al_attention_qkv_inplace(al_ctx *c, const al_attn_desc *d, int batch, int n, int heads, int head_dim, al_tensor *rel_bias)
{
    al_attn_cfg g;
    if (!al_ok(c) || !d || (c->training && d->dropout > 0.f) || d->score != AL_SCORE_DOT) return 0;
    if (batch < 1 || n < 1 || heads < 1 || head_dim != 16) return 0;
    al_tensor h = {0};   /* the packed projection's shape; no data is read */
    h.ndim = 3; h.shape[0] = batch; h.shape[1] = n; h.shape[2] = 3 * heads * head_dim;
    h.numel = (int64_t)batch * n * h.shape[2];
    if (qkv_setup(c, d, &h, heads, NULL, NULL, rel_bias, NULL, &g) != 0) { al_ctx_clear_error(c); return 0; }
    return qkv_lanes(d, &g);
}

al_tensor *al__attention_qkv_lanes(al_ctx *c, const al_attn_desc *d, al_tensor *qkv, int heads, al_tensor *a_q,
                                   al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias, int *split)
{
    *split = 0;
    if (!al_ok(c) || !qkv) return NULL;
    al_attn_cfg g;
    if (qkv_setup(c, d, qkv, heads, a_q, a_k, rel_bias, bias, &g) != 0) return NULL;
    g.drop = c->training && d->dropout > 0.f;
    if (!qkv_lanes(d, &g) || bias || a_q) { *split = 1; return NULL; }   /* the caller splits, attends, merges */
    const int B = g.B, H = g.H, N = g.N, D = 16;
    al_tensor *out = al_new(c, 3, (int[]){B, N, H * D});   /* the heads merged */
    attn_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    if (!out || !nd) return al_ok(c) ? al_fail(c, "attention_qkv: out of memory") : NULL;
    nd->g = g; nd->pat = d->pattern; nd->qkv = qkv; nd->rel = rel_bias; nd->out = out; nd->nthr = al_threads();
    nd->li = (al_attn_lay){(int64_t)N * 3 * H * D, D, 3 * H * D};
    nd->lo = (al_attn_lay){(int64_t)N * H * D, D, H * D};
    const float *q = qkv->data, *k = q + H * D, *v = q + 2 * H * D;   /* qkv_lanes: the lane kernels run */
    if (d->pattern.kind == AL_PAT_FULL ? !full_run(c, nd, q, k, v, NULL, out->data)
                                       : slots_run(c, d, nd, q, k, v, rel_bias ? rel_bias->data : NULL, NULL, out->data) != 0)
        return NULL;
    attn_count(nd, AL_FLOPS_FWD);
    if (c->grad_enabled && (wants_grad(qkv) || wants_grad(rel_bias))) {
        out->requires_grad = 1;
        al_tape_push_out(c, attention_backward, nd, out);
    }
    return al_ok(c) ? out : NULL;
}

