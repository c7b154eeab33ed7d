/* attention_ref.c — the dense masked reference of al_attention, for tests only.
 *
 * Materialises the (N, N) scores of every (batch, head) with the pattern as a mask, computes in
 * double, and has its own backward (a tape op like the fast one), so tests compare fast against
 * reference gradients directly. It shares with the fast kernels only the argument checks and
 * the counter-based dropout mask (attention_impl.h). A graph with duplicate edges cannot be
 * represented densely: the last duplicate wins here (the fast kernel sums them).
 */
#include "attention/attention_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_node {
    al_attn_cfg g;
    al_tensor *q, *k, *v, *aq, *ak, *rel, *bias, *out;
    int64_t *slot;   /* (N, N) slot index of the pair (i, j), −1 = not allowed */
    int *off;        /* (N, N) window offset index, −1 for full / graph */
} ref_node;

/* The mask of the pattern as slot / offset maps. */
static int ref_maps(al_ctx *c, const al_pattern *p, int N, int64_t *slot, int *off)
{
    for (int64_t x = 0; x < (int64_t)N * N; x++) { slot[x] = -1; off[x] = -1; }
    for (int i = 0; i < N; i++) {
        switch (p->kind) {
        case AL_PAT_FULL:
            for (int j = 0; j < N; j++) slot[(int64_t)i * N + j] = (int64_t)i * N + j;
            break;
        case AL_PAT_WINDOW2D: {
            int W = p->grid_w, rh = p->win_h / 2, rw = p->win_w / 2, K = p->win_h * p->win_w;
            for (int j = 0; j < N; j++) {
                int dy = j / W - i / W, dx = j % W - i % W;
                if (dy < -rh || dy > rh || dx < -rw || dx > rw) continue;
                int o = (dy + rh) * p->win_w + (dx + rw);
                slot[(int64_t)i * N + j] = (int64_t)i * K + o;
                off[(int64_t)i * N + j] = o;
            }
            break;
        }
        case AL_PAT_WINDOW1D: {
            int r = p->radius;
            for (int j = 0; j < N; j++) {
                if (j - i < -r || j - i > r) continue;
                slot[(int64_t)i * N + j] = (int64_t)i * (2 * r + 1) + (j - i + r);
                off[(int64_t)i * N + j] = j - i + r;
            }
            break;
        }
        case AL_PAT_GRAPH:
            for (int64_t e = p->adj->rowptr[i]; e < p->adj->rowptr[i + 1]; e++) slot[(int64_t)i * N + p->adj->col[e]] = e;
            break;
        }
    }
    (void)c;
    return 0;
}

/* Scores (N, N) in double for head (b, h); also the additive pre-activations u (N, N) if wanted.
 * Disallowed pairs get −inf. */
static void ref_scores(const ref_node *nd, int b, int h, double *S, double *U)
{
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D;
    int64_t bh = (int64_t)b * g->H + h;
    const float *Q = nd->q->data + bh * N * D, *K = nd->k->data + bh * N * D;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int64_t x = (int64_t)i * N + j, s = nd->slot[x];
            if (s < 0) { S[x] = -INFINITY; if (U) U[x] = 0; continue; }
            double sc;
            if (g->additive) {
                double u = 0;
                for (int d = 0; d < D; d++)
                    u += (double)nd->aq->data[h * D + d] * Q[i * D + d] + (double)nd->ak->data[h * D + d] * K[j * D + d];
                if (U) U[x] = u;
                sc = u > 0 ? u : g->slope * u;
            } else {
                double a = 0;
                for (int d = 0; d < D; d++) a += (double)Q[i * D + d] * K[j * D + d];
                sc = a * g->scale;
            }
            if (nd->rel) sc += nd->rel->data[(int64_t)h * g->noff + nd->off[x]];
            if (nd->bias) sc += nd->bias->data[(int64_t)h * g->slots + s];
            S[x] = sc;
        }
}

/* P (N, N) = normalised weights (before dropout) from S. */
static void ref_norm(const ref_node *nd, const double *S, double *P)
{
    const int N = nd->g.N;
    for (int i = 0; i < N; i++) {
        const double *s = S + (int64_t)i * N;
        double *p = P + (int64_t)i * N;
        if (nd->g.relu) { for (int j = 0; j < N; j++) p[j] = s[j] > 0 ? s[j] : 0; continue; }
        double mx = -INFINITY, sum = 0;
        for (int j = 0; j < N; j++) if (s[j] > mx) mx = s[j];
        for (int j = 0; j < N; j++) { p[j] = mx == -INFINITY ? 0 : exp(s[j] - mx); sum += p[j]; }
        for (int j = 0; j < N; j++) p[j] = sum > 0 ? p[j] / sum : 0;
    }
}

/* The weight actually applied to v_j: P with the dropout mask. */
static double ref_drop(const ref_node *nd, int64_t bh, int64_t slot, double p)
{
    if (!nd->g.drop || slot < 0) return p;
    return al_attn_keep(&nd->g, bh, slot) ? p * nd->g.inv_keep : 0.0;
}

static void ref_backward(al_ctx *c, void *vp)
{
    ref_node *nd = vp;
    const al_attn_cfg *g = &nd->g;
    const int N = g->N, D = g->D, Dv = g->Dv, H = g->H;
    const float *dO = nd->out->grad;
    if (!dO) return;
    double *S = malloc((size_t)N * N * sizeof(double)), *U = malloc((size_t)N * N * sizeof(double));
    double *P = malloc((size_t)N * N * sizeof(double)), *dS = malloc((size_t)N * N * sizeof(double));
    if (!S || !U || !P || !dS) { free(S); free(U); free(P); free(dS); al_fail(c, "attention_ref: out of memory"); return; }
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;
    float *daq = nd->aq && nd->aq->requires_grad ? al_grad(c, nd->aq) : NULL;
    float *dak = nd->ak && nd->ak->requires_grad ? al_grad(c, nd->ak) : NULL;
    float *drel = nd->rel && nd->rel->requires_grad ? al_grad(c, nd->rel) : NULL;
    float *dbias = nd->bias && nd->bias->requires_grad ? al_grad(c, nd->bias) : NULL;
    for (int b = 0; b < g->B; b++)
        for (int h = 0; h < H; h++) {
            int64_t bh = (int64_t)b * H + h;
            const float *Q = nd->q->data + bh * N * D, *K = nd->k->data + bh * N * D, *V = nd->v->data + bh * N * Dv;
            const float *G = dO + bh * N * Dv;
            ref_scores(nd, b, h, S, U);
            ref_norm(nd, S, P);
            for (int i = 0; i < N; i++) {
                double delta = 0;
                for (int j = 0; j < N; j++) {
                    int64_t x = (int64_t)i * N + j;
                    if (nd->slot[x] < 0) { dS[x] = 0; continue; }
                    double dp = 0;
                    for (int e = 0; e < Dv; e++) dp += (double)G[i * Dv + e] * V[j * Dv + e];
                    dp = ref_drop(nd, bh, nd->slot[x], dp);     /* d(loss)/dP = mask · d(loss)/dP' */
                    dS[x] = dp;
                    delta += P[x] * dp;
                }
                for (int j = 0; j < N; j++) {
                    int64_t x = (int64_t)i * N + j;
                    if (nd->slot[x] < 0) continue;
                    dS[x] = g->relu ? (S[x] > 0 ? dS[x] : 0) : P[x] * (dS[x] - delta);
                }
            }
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    int64_t x = (int64_t)i * N + j, s = nd->slot[x];
                    if (s < 0) continue;
                    double ds = dS[x];
                    if (dv) {
                        double p = ref_drop(nd, bh, s, P[x]);
                        for (int e = 0; e < Dv; e++) dv[(bh * N + j) * Dv + e] += (float)(p * G[i * Dv + e]);
                    }
                    if (drel) drel[(int64_t)h * g->noff + nd->off[x]] += (float)ds;
                    if (dbias) dbias[(int64_t)h * g->slots + s] += (float)ds;
                    if (g->additive) {
                        double du = ds * (U[x] > 0 ? 1.0 : g->slope);
                        for (int d = 0; d < D; d++) {
                            if (dq) dq[(bh * N + i) * D + d] += (float)(du * nd->aq->data[h * D + d]);
                            if (dk) dk[(bh * N + j) * D + d] += (float)(du * nd->ak->data[h * D + d]);
                            if (daq) daq[h * D + d] += (float)(du * Q[i * D + d]);
                            if (dak) dak[h * D + d] += (float)(du * K[j * D + d]);
                        }
                    } else {
                        for (int d = 0; d < D; d++) {
                            if (dq) dq[(bh * N + i) * D + d] += (float)(g->scale * ds * K[j * D + d]);
                            if (dk) dk[(bh * N + j) * D + d] += (float)(g->scale * ds * Q[i * D + d]);
                        }
                    }
                }
        }
    free(S); free(U); free(P); free(dS);
}

static int wants(al_tensor *t) { return t && t->requires_grad; }

al_tensor *al_attention_ref(al_ctx *c, const al_attn_desc *d, al_tensor *q, al_tensor *k, al_tensor *v,
                            al_tensor *a_q, al_tensor *a_k, al_tensor *rel_bias, al_tensor *bias)
{
    if (!al_ok(c) || !q || !k || !v) return NULL;
    al_attn_cfg g;
    if (al_attn_setup(c, "attention_ref", d, q, k, v, a_q, a_k, rel_bias, bias, &g) != 0) return NULL;
    const int N = g.N, Dv = g.Dv, H = g.H;
    ref_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    al_tensor *out = al_new(c, 4, (int[]){g.B, H, N, Dv});
    if (!nd || !out) return al_ok(c) ? al_fail(c, "attention_ref: out of memory") : NULL;
    nd->slot = al_arena_alloc(&c->arena, (size_t)N * N * sizeof(int64_t));
    nd->off = al_arena_alloc(&c->arena, (size_t)N * N * sizeof(int));
    if (!nd->slot || !nd->off) return al_fail(c, "attention_ref: out of memory");
    nd->g = g; nd->q = q; nd->k = k; nd->v = v; nd->aq = a_q; nd->ak = a_k; nd->rel = rel_bias; nd->bias = bias; nd->out = out;
    ref_maps(c, &d->pattern, N, nd->slot, nd->off);
    al_tensor *w = NULL;
    if (d->weights) {
        if (d->pattern.kind == AL_PAT_FULL) w = al_zeros(c, 4, (int[]){g.B, H, N, N});
        else if (g.noff) w = al_zeros(c, 4, (int[]){g.B, H, N, g.noff});
        else w = al_zeros(c, 3, (int[]){g.B, H, g.slots > 0 ? (int)g.slots : 1});
        if (!w) return NULL;
    }
    double *S = malloc((size_t)N * N * sizeof(double)), *P = malloc((size_t)N * N * sizeof(double));
    if (!S || !P) { free(S); free(P); return al_fail(c, "attention_ref: out of memory"); }
    for (int b = 0; b < g.B; b++)
        for (int h = 0; h < H; h++) {
            int64_t bh = (int64_t)b * H + h;
            const float *V = v->data + bh * N * Dv;
            ref_scores(nd, b, h, S, NULL);
            ref_norm(nd, S, P);
            for (int i = 0; i < N; i++) {
                for (int e = 0; e < Dv; e++) {
                    double a = 0;
                    for (int j = 0; j < N; j++) {
                        int64_t x = (int64_t)i * N + j;
                        if (nd->slot[x] >= 0) a += ref_drop(nd, bh, nd->slot[x], P[x]) * V[j * Dv + e];
                    }
                    out->data[(bh * N + i) * Dv + e] = (float)a;
                }
                if (w)
                    for (int j = 0; j < N; j++) {
                        int64_t x = (int64_t)i * N + j;
                        if (nd->slot[x] >= 0) w->data[bh * g.slots + nd->slot[x]] = (float)P[x];
                    }
            }
        }
    free(S); free(P);
    if (d->weights) *d->weights = w;
    if (c->grad_enabled && (wants(q) || wants(k) || wants(v) || wants(a_q) || wants(a_k) || wants(rel_bias) || wants(bias))) {
        out->requires_grad = 1;
        al_tape_push_out(c, ref_backward, nd, out);
    }
    return out;
}
