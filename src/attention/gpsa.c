/* gpsa.c — gated positional self-attention (d'Ascoli et al., "ConViT", ICML 2021), forward and backward.
 *
 * Per batch b and head h, over the N = grid_h·grid_w tokens of a grid (row-major):
 *   C_ij = softmax_j(c · q_i·k_j)                      the content map (c = scale, 0 → 1/√D)
 *   P_ij = softmax_j(p_h · r_ij)                       the positional map, r_ij = (δx, δy, δx² + δy²) with
 *                                                      δ = key j's grid position − query i's
 *   A_ij = (1 − g_h)·C_ij + g_h·P_ij,  g_h = σ(λ_h)    both maps normalised on their own, mixed afterwards
 *   o_i  = Σ_j A_ij v_j                                one value projection for both maps
 * P does not depend on the batch: it is computed once per call, (H, N, N). The node keeps C, (B, H, N, N),
 * for the backward (a plain implementation: the O(N²) maps are held, not streamed as full.c streams).
 *
 * Backward, per (b, h), with G_i = ∂ℓ/∂o_i and dA_ij = G_i·v_j:
 *   ∂ℓ/∂v_j = Σ_i A_ij G_i
 *   content:    dC = (1 − g)·dA, dS_ij = C_ij (dC_ij − Σ_k C_ik dC_ik); ∂ℓ/∂q_i = c Σ_j dS_ij k_j, ∂ℓ/∂k_j = c Σ_i dS_ij q_i
 *   positional: dP = g·dA,       dT_ij = P_ij (dP_ij − Σ_k P_ik dP_ik);  ∂ℓ/∂p_h = Σ_{b,i,j} dT_ij r_ij
 *   gate:       ∂ℓ/∂λ_h = g(1 − g) Σ_{b,i,j} dA_ij (P_ij − C_ij)
 * A task is one (b, h): it owns the rows of q, k, v's gradients of that head, and writes its share of the
 * (H)- and (H, 3)-sized gradients into its own slot; the slots are summed over b in order afterwards. So the
 * results are bitwise the same for any number of threads. */
#include "attnlab/attention.h"
#include "attnlab/io.h"
#include "core/tape_impl.h"
#include "core/omp_impl.h"
#include "core/exp_impl.h"
#include "attnlab/kernels.h"
#include <math.h>
#include <string.h>

typedef struct gpsa_node {
    al_tensor *q, *k, *v, *gate, *pos, *y;
    float *cm;       /* (B,H,N,N) the content maps C */
    float *pm;       /* (H,N,N) the positional maps P */
    float *gx, *gy;  /* (N) each: the grid column and row of every token */
    int B, H, N, D, Dv;
    float scale;
} gpsa_node;

static inline float sigm(float x) { return 1.0f / (1.0f + al__expf(-x)); }

/* Sums over a row in LANES fixed lanes (element j into lane j mod LANES), then a fixed tree: the compiler
 * vectorises the lanes, and the order of the additions is the code's, whatever it does. */
#define LANES 16
static inline float lane_sum(float acc[LANES])
{
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int l = 0; l < w; l++) acc[l] += acc[l + w];
    return acc[0];
}

/* P (H,N,N): row (h, i) is the softmax over j of pos[h]·r_ij, r_ij = (δx, δy, δx² + δy²). */
static void positional_maps(const float *pos /* (H,3) */, const float *gx, const float *gy, float *pm /* (H,N,N) */,
                            int H, int N)
{
    AL_OMP("omp parallel for schedule(static) if ((int64_t)H * N * N >= AL_PAR_MIN)")
    for (int64_t hi = 0; hi < (int64_t)H * N; hi++) {
        const float *p = pos + 3 * (hi / N);
        const float fx = gx[hi % N], fy = gy[hi % N];
        float *row = pm + hi * N;
        for (int j = 0; j < N; j++) {
            const float dx = gx[j] - fx, dy = gy[j] - fy;
            row[j] = p[0] * dx + p[1] * dy + p[2] * (dx * dx + dy * dy);
        }
    }
    al_softmax_rows(pm, pm, (int64_t)H * N, N);
}

/* Per-thread scratch: two N×N maps, the stride rounded to 64 bytes so that every thread's buffer is aligned
 * alike (the GEMMs then see the same addresses modulo 64 whichever thread runs a head). */
static int64_t scratch_stride(int N) { return ((int64_t)2 * N * N + 15) / 16 * 16; }

/* One head (b, h): o (N,Dv) = A V; the content maps C into cm (N,N) (or the scratch), A into w (N,N) (or the
 * scratch). scr: 2·N·N floats. */
static void head_forward(const float *q /* (N,D) */, const float *k /* (N,D) */, const float *v /* (N,Dv) */,
                         const float *pm /* (N,N) */, float g, float scale, float *o /* (N,Dv) */,
                         float *cm /* (N,N) or NULL */, float *w /* (N,N) or NULL */, float *scr /* (2,N,N) */,
                         int N, int D, int Dv)
{
    float *C = cm ? cm : scr, *A = w ? w : scr + (int64_t)N * N;
    al_gemm_serial(0, 1, N, N, D, scale, q, D, k, D, 0.f, C, N);             /* c·Q Kᵀ */
    al_softmax_rows(C, C, N, N);
    for (int64_t x = 0; x < (int64_t)N * N; x++) A[x] = (1.0f - g) * C[x] + g * pm[x];
    al_gemm_serial(0, 0, N, Dv, N, 1.f, A, N, v, Dv, 0.f, o, Dv);           /* A V */
}

/* Element j of row i's backward, in lane l: the positional score gradient t = g·P(dA − dp) times r_ij into
 * ax, ay, ad, dA (P − C) into ag, and dA replaced by the content score gradient (1 − g)·C(dA − dc). */
static inline void row_step(float *di, const float *pi, const float *ci, const float *gx, const float *gy, int j, int l,
                            float fx, float fy, float g, float dp, float dc, float *ax, float *ay, float *ad, float *ag)
{
    const float d = di[j], p = pi[j], c = ci[j];
    const float t = g * p * (d - dp), dx = gx[j] - fx, dy = gy[j] - fy;
    ax[l] += t * dx; ay[l] += t * dy; ad[l] += t * (dx * dx + dy * dy); ag[l] += d * (p - c);
    di[j] = (1.0f - g) * c * (d - dc);
}

/* The gradients of one head (b, h): dq, dk, dv (NULL: not wanted) accumulate; part (4) receives Σ dT·r
 * (3) and Σ dA (P − C) of this head. scr: 2·N·N floats. */
static void head_backward(const gpsa_node *nd, int64_t bh, const float *G /* (N,Dv) */, float *dq, float *dk, float *dv,
                          double part[4], float *scr /* (2,N,N) */)
{
    const int N = nd->N, D = nd->D, Dv = nd->Dv, H = nd->H, h = (int)(bh % H);
    const float *q = nd->q->data + bh * N * D, *k = nd->k->data + bh * N * D, *v = nd->v->data + bh * N * Dv;
    const float *C = nd->cm + bh * N * N, *P = nd->pm + (int64_t)h * N * N;
    const float g = sigm(nd->gate->data[h]), c = nd->scale;
    float *dA = scr, *A = scr + (int64_t)N * N;
    al_gemm_serial(0, 1, N, N, Dv, 1.f, G, Dv, v, Dv, 0.f, dA, N);           /* dA = G Vᵀ */
    if (dv) {
        for (int64_t x = 0; x < (int64_t)N * N; x++) A[x] = (1.0f - g) * C[x] + g * P[x];
        al_gemm_serial(1, 0, N, Dv, N, 1.f, A, N, G, Dv, 1.f, dv + bh * N * Dv, Dv);   /* dV += Aᵀ G */
    }
    double pr[3] = {0, 0, 0}, pg = 0;
    for (int i = 0; i < N; i++) {
        const float *ci = C + (int64_t)i * N, *pi = P + (int64_t)i * N, *gx = nd->gx, *gy = nd->gy;
        float *di = dA + (int64_t)i * N;
        float sc[LANES] = {0}, sp[LANES] = {0};   /* Σ_j C dA, Σ_j P dA */
        int j = 0;
        for (; j + LANES <= N; j += LANES)
            for (int l = 0; l < LANES; l++) { sc[l] += ci[j + l] * di[j + l]; sp[l] += pi[j + l] * di[j + l]; }
        for (int l = 0; j < N; j++, l++) { sc[l] += ci[j] * di[j]; sp[l] += pi[j] * di[j]; }
        const float dc = lane_sum(sc), dp = lane_sum(sp), fx = gx[i], fy = gy[i];
        float ax[LANES] = {0}, ay[LANES] = {0}, ad[LANES] = {0}, ag[LANES] = {0};
        for (j = 0; j + LANES <= N; j += LANES)
            for (int l = 0; l < LANES; l++) row_step(di, pi, ci, gx, gy, j + l, l, fx, fy, g, dp, dc, ax, ay, ad, ag);
        for (int l = 0; j < N; j++, l++) row_step(di, pi, ci, gx, gy, j, l, fx, fy, g, dp, dc, ax, ay, ad, ag);
        pr[0] += lane_sum(ax); pr[1] += lane_sum(ay); pr[2] += lane_sum(ad); pg += lane_sum(ag);
    }
    if (dq) al_gemm_serial(0, 0, N, D, N, c, dA, N, k, D, 1.f, dq + bh * N * D, D);   /* dQ += c dS K */
    if (dk) al_gemm_serial(1, 0, N, D, N, c, dA, N, q, D, 1.f, dk + bh * N * D, D);   /* dK += c dSᵀ Q */
    part[0] = pr[0]; part[1] = pr[1]; part[2] = pr[2]; part[3] = pg;
}

static void gpsa_backward(al_ctx *c, void *p)
{
    gpsa_node *nd = p;
    if (!nd->y->grad) return;
    const int B = nd->B, H = nd->H, N = nd->N;
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;                  /* (B,H,N,D) */
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;                  /* (B,H,N,D) */
    float *dv = nd->v->requires_grad ? al_grad(c, nd->v) : NULL;                  /* (B,H,N,Dv) */
    float *dgate = nd->gate->requires_grad ? al_grad(c, nd->gate) : NULL;         /* (H) */
    float *dpos = nd->pos->requires_grad ? al_grad(c, nd->pos) : NULL;            /* (H,3) */
    double *part = al_arena_alloc(&c->arena, (size_t)B * H * 4 * sizeof(double));  /* (B,H,4) */
    const int nthr = al_threads() > 0 ? al_threads() : 1;
    float *scratch = al_arena_alloc(&c->arena, (size_t)(nthr * scratch_stride(N)) * sizeof(float));
    if (!part || !scratch) { al_fail(c, "gpsa: out of memory"); return; }
    if (!al_ok(c)) return;
    if (al_flops_enabled()) al_flops_add("attention", AL_FLOPS_BWD, (double)B * H * N * N * (4.0 * nd->D + 4.0 * nd->Dv));
    const int64_t tasks = (int64_t)B * H;
    AL_OMP("omp parallel for schedule(dynamic, 1) if (tasks > 1 && tasks * N * N >= AL_PAR_MIN)")
    for (int64_t t = 0; t < tasks; t++)
        head_backward(nd, t, nd->y->grad + t * N * nd->Dv, dq, dk, dv, part + 4 * t, scratch + al__thread_id() * scratch_stride(N));
    for (int h = 0; h < H; h++) {   /* the shared parameters: batch by batch, in order */
        double s[4] = {0, 0, 0, 0};
        for (int b = 0; b < B; b++)
            for (int x = 0; x < 4; x++) s[x] += part[((int64_t)b * H + h) * 4 + x];
        const double g = sigm(nd->gate->data[h]);
        if (dpos) for (int x = 0; x < 3; x++) dpos[3 * h + x] += (float)s[x];
        if (dgate) dgate[h] += (float)(g * (1.0 - g) * s[3]);
    }
}

/* The arguments of al_gpsa; 0, or -1 after al_fail. */
static int gpsa_check(al_ctx *c, const al_attn_desc *d, const al_tensor *q, const al_tensor *k, const al_tensor *v,
                      const al_tensor *gate, const al_tensor *pos)
{
    char b1[64], b2[64], b3[64];
    if (!d || d->pattern.kind != AL_PAT_FULL || d->pattern.grid_h < 1 || d->pattern.grid_w < 1)
        return al_fail(c, "gpsa: the pattern must be full, with the token grid (grid_h, grid_w) set"), -1;
    if (d->score != AL_SCORE_DOT || d->norm != AL_NORM_SOFTMAX || d->dropout != 0.f)
        return al_fail(c, "gpsa: dot score and softmax only, without attention dropout"), -1;
    if (q->ndim != 4 || !al_same_shape(q, k) || v->ndim != 4 || v->shape[0] != q->shape[0] || v->shape[1] != q->shape[1] ||
        v->shape[2] != q->shape[2])
        return al_fail(c, "gpsa: q %s, k %s must be (B,H,N,D) and v %s (B,H,N,Dv)", al_shape_str(q, b1, sizeof b1),
                       al_shape_str(k, b2, sizeof b2), al_shape_str(v, b3, sizeof b3)), -1;
    const int H = q->shape[1], N = q->shape[2];
    if ((int64_t)d->pattern.grid_h * d->pattern.grid_w != N)
        return al_fail(c, "gpsa: %d tokens are not a %dx%d grid", N, d->pattern.grid_h, d->pattern.grid_w), -1;
    if (gate->ndim != 1 || gate->shape[0] != H || pos->ndim != 2 || pos->shape[0] != H || pos->shape[1] != 3)
        return al_fail(c, "gpsa: gate %s must be (H) and pos %s (H, 3) with H = %d", al_shape_str(gate, b1, sizeof b1),
                       al_shape_str(pos, b2, sizeof b2), H), -1;
    return 0;
}

al_tensor *al_gpsa(al_ctx *c, const al_attn_desc *d, al_tensor *q /* (B,H,N,D) */, al_tensor *k /* (B,H,N,D) */,
                   al_tensor *v /* (B,H,N,Dv) */, al_tensor *gate /* (H) */, al_tensor *pos /* (H,3) */)
{
    if (!al_ok(c) || !q || !k || !v || !gate || !pos) return NULL;
    if (gpsa_check(c, d, q, k, v, gate, pos)) return NULL;
    const int B = q->shape[0], H = q->shape[1], N = q->shape[2], D = q->shape[3], Dv = v->shape[3];
    const int record = c->grad_enabled && (q->requires_grad || k->requires_grad || v->requires_grad ||
                                           gate->requires_grad || pos->requires_grad);
    const uint64_t maps = al_size_mul(al_size_mul((uint64_t)B * H, (uint64_t)N * N), sizeof(float));
    al_error me = {{0}};
    if ((record || d->weights) && al_mem_check(maps, &me, "gpsa: the attention maps of %d images, %d heads, %d tokens", B, H, N))
        return al_fail(c, "%s", me.msg);
    al_tensor *y = al_new(c, 4, (int[]){B, H, N, Dv});
    al_tensor *w = d->weights ? al_new(c, 4, (int[]){B, H, N, N}) : NULL;
    float *pm = al_arena_alloc(&c->arena, (size_t)H * N * N * sizeof(float));
    float *gx = al_arena_alloc(&c->arena, (size_t)2 * N * sizeof(float)), *gy = gx ? gx + N : NULL;
    float *cm = record ? al_arena_alloc(&c->arena, (size_t)maps) : NULL;
    const int nthr = al_threads() > 0 ? al_threads() : 1;
    float *scratch = al_arena_alloc(&c->arena, (size_t)(nthr * scratch_stride(N)) * sizeof(float));
    if (!y || (d->weights && !w) || !pm || !gx || (record && !cm) || !scratch) return al_ok(c) ? al_fail(c, "gpsa: out of memory") : NULL;
    const float scale = d->scale != 0.f ? d->scale : 1.0f / sqrtf((float)D);
    for (int i = 0; i < N; i++) { gx[i] = (float)(i % d->pattern.grid_w); gy[i] = (float)(i / d->pattern.grid_w); }
    positional_maps(pos->data, gx, gy, pm, H, N);
    if (al_flops_enabled()) al_flops_add("attention", AL_FLOPS_FWD, (double)B * H * N * N * (2.0 * D + 2.0 * Dv));
    const int64_t tasks = (int64_t)B * H;
    AL_OMP("omp parallel for schedule(dynamic, 1) if (tasks > 1 && tasks * N * N >= AL_PAR_MIN)")
    for (int64_t t = 0; t < tasks; t++) {
        const int h = (int)(t % H);
        head_forward(q->data + t * N * D, k->data + t * N * D, v->data + t * N * Dv, pm + (int64_t)h * N * N,
                     sigm(gate->data[h]), scale, y->data + t * N * Dv, cm ? cm + t * N * N : NULL,
                     w ? w->data + t * N * N : NULL, scratch + al__thread_id() * scratch_stride(N), N, D, Dv);
    }
    if (d->weights) *d->weights = w;
    if (record) {
        gpsa_node *nd = al__node_new(c, sizeof *nd);
        if (nd) *nd = (gpsa_node){q, k, v, gate, pos, y, cm, pm, gx, gy, B, H, N, D, Dv, scale};
        if (!al__record(c, y, gpsa_backward, nd)) return NULL;
    }
    return y;
}
