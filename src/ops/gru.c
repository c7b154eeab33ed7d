/* gru.c — a one-layer GRU (PyTorch's equations and gate order r, z, n) over sequences of different
 * lengths, one or both directions in one op, forward beside its backward through time, and the naive
 * double reference. al_gru_packed reads and writes packed batches (seq.h's layout); al_gru is one
 * direction on a padded (B, T, I) batch; both run the same code below.
 *
 * Only the P = Σ len valid steps are ever computed or read; they are numbered in packed token order,
 * p = off[b] + t, so padded inputs (even NaN) reach nothing. At step s of the recurrence the
 * sequences still running are a prefix of the batch sorted by length (longest first, as a PyTorch
 * packed sequence), so their states form one contiguous (nact, H) block.
 *
 * Forward: GI (P, ndir·3H) = x · [W_ih⁰; W_ih¹]ᵀ, every step of every direction in ONE gemm. Then per
 * direction and step: gh (nact, 3H) = h · W_hhᵀ, one small serial gemm on a copy of W_hhᵀ made once
 * per call (so no step re-packs W_hh), and one fused gate loop per running row that adds both
 * biases, applies σ and tanh (al__expf / al__expm1_neg: branch-free, vectorised by the compiler) and
 * writes the new state into the state block and the output. Saved per step: r, z, n, hn = W_hn h + b_hn.
 *
 * Backward, per direction, last step first: the gate derivatives of the running rows go to dGI
 * (token order) and dGH (step order: one step's rows are contiguous, so dh_prev = dh ⊙ z +
 * dGH_step · W_hh is one serial gemm reading them in place), h_prev next to dGH. After the loop dW_ih
 * and dW_hh are one gemm each over all steps and the biases column sums; dx = dGI · [W_ih⁰; W_ih¹] is
 * one gemm for both directions. The equations are in docs/gru.md.
 *
 * Threads: a time step (32 rows × 64 units) is far too small to split, and a fork per step would
 * cost more than the step; the two directions, however, are independent. So with two directions and
 * two or more threads they run concurrently: one parallel region for the forward recurrence, one for
 * the backward. Inside a direction everything is serial code, and al_gemm is bitwise identical for any
 * thread count, so the results do not depend on the number of threads.
 */
#include "attnlab/rnn.h"
#include "ops_impl.h"
#include "attnlab/kernels.h"
#include "core/exp_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static inline float sigm(float a) { return 1.0f / (1.0f + al__expf(-a)); }
/* tanh(a) = −m / (2 + m) with m = e^(−2|a|) − 1, sign of a: no cancellation near 0 (al__expm1_neg
 * switches to its Taylor series there), exactly ±1 beyond |a| ≈ 43. */
static inline float tanh_f(float a)
{
    const float m = al__expm1_neg(-2.0f * fabsf(a));
    return copysignf(-m / (2.0f + m), a);
}

typedef struct {
    al_tensor *w_ih, *w_hh, *b_ih, *b_hh;
    int reverse;
    float *whh_t;      /* (H, 3H) W_hhᵀ */
    float *gates;      /* (P, 4H): r, z, n, hn per valid step, token order */
    float *h, *gh;     /* (B, H), (B, 3H): forward scratch (state block, recurrent pre-activations) */
} gru_dir;

typedef struct {
    al_tensor *x, *y;
    int B, T, I, H, P, ndir, smax;  /* T: padded length (al_gru), 0 for a packed x */
    int ldy;                        /* floats per row of y: ndir·H packed, H padded */
    int *len, *off, *order;         /* (B) lengths, packed row of (b, 0), batch rows longest first */
    int *nact, *soff;               /* (smax), (smax + 1): sequences running at step s; Σ_{s' < s} nact */
    const int *xrow;                /* (P) row of x and y holding packed step p; NULL: row p */
    const float *xp;                /* (P, I) the valid rows of x */
    const float *wcat;              /* (ndir·3H, I) W_ih of every direction, stacked */
    float *gi;                      /* (P, ndir·3H) x · wcatᵀ */
    const float *zero;              /* (3H) zeros: absent biases, the state before the first step */
    gru_dir d[2];
} gru_node;

static inline int step_t(const gru_node *nd, const gru_dir *D, int b, int s) { return D->reverse ? nd->len[b] - 1 - s : s; }
static inline int64_t yrow(const gru_node *nd, int64_t p) { return nd->xrow ? nd->xrow[p] : p; }
/* Run directions 0..ndir) of fn concurrently when there are two and the work is worth a fork. */
#define PAR_DIRS(nd) ((nd)->ndir > 1 && al_threads() > 1 && (int64_t)(nd)->P * (nd)->H * (nd)->H >= AL_PAR_MIN)

/* One running row's gates: r, z, n and the new state, into h, y and g (r, z, n, hn). */
static inline void gate_fwd(int H, const float *restrict gi /* (3H) */, const float *restrict gh /* (3H) */,
                            const float *restrict bi /* (3H) */, const float *restrict bh /* (3H) */,
                            float *restrict h /* (H) */, float *restrict y /* (H) */, float *restrict g /* (4H) */)
{
    for (int j = 0; j < H; j++) {
        const float r = sigm((gi[j] + bi[j]) + (gh[j] + bh[j]));
        const float z = sigm((gi[H + j] + bi[H + j]) + (gh[H + j] + bh[H + j]));
        const float hn = gh[2 * H + j] + bh[2 * H + j];
        const float n = tanh_f((gi[2 * H + j] + bi[2 * H + j]) + r * hn);
        const float hv = (1.f - z) * n + z * h[j];
        g[j] = r; g[H + j] = z; g[2 * H + j] = n; g[3 * H + j] = hn;
        h[j] = hv; y[j] = hv;
    }
}

/* One running row's gate derivatives from d = dh + dy: into dgi, dgh (3H), h_prev into hp, d ⊙ z into dh. */
static inline void gate_bwd(int H, const float *restrict g /* (4H) */, const float *restrict h0 /* (H) */,
                            const float *restrict dy /* (H) */, float *restrict dh /* (H) */,
                            float *restrict dgi /* (3H) */, float *restrict dgh /* (3H) */, float *restrict hp /* (H) */)
{
    for (int j = 0; j < H; j++) {
        const float r = g[j], z = g[H + j], n = g[2 * H + j], hn = g[3 * H + j];
        const float d = dh[j] + dy[j];
        const float dan = d * (1.f - z) * (1.f - n * n);
        const float dar = dan * hn * r * (1.f - r);
        const float daz = d * (h0[j] - n) * z * (1.f - z);
        dgi[j] = dar; dgi[H + j] = daz; dgi[2 * H + j] = dan;
        dgh[j] = dar; dgh[H + j] = daz; dgh[2 * H + j] = dan * r;
        hp[j] = h0[j];
        dh[j] = d * z;
    }
}

/* The recurrence of direction dd (GI already computed): states, outputs, saved gates. Serial. */
static void dir_forward(gru_node *nd, int dd)
{
    gru_dir *D = &nd->d[dd];
    const int H = nd->H, H3 = 3 * H, G = nd->ndir * H3;
    const float *bi = D->b_ih ? D->b_ih->data : nd->zero, *bh = D->b_hh ? D->b_hh->data : nd->zero;
    const float *W = D->w_hh->data;                /* (3H, H) */
    for (int k = 0; k < H3; k++)
        for (int j = 0; j < H; j++) D->whh_t[(int64_t)j * H3 + k] = W[(int64_t)k * H + j];
    memset(D->h, 0, (size_t)nd->B * H * sizeof(float));
    float *Y = nd->y->data;
    for (int s = 0; s < nd->smax; s++) {
        const int nact = nd->nact[s];
        al_gemm_serial(0, 0, nact, H3, H, 1.0f, D->h, H, D->whh_t, H3, 0.0f, D->gh, H3);   /* (nact, 3H) */
        for (int i = 0; i < nact; i++) {
            const int b = nd->order[i];
            const int64_t p = (int64_t)nd->off[b] + step_t(nd, D, b, s);
            gate_fwd(H, nd->gi + p * G + (int64_t)dd * H3, D->gh + (int64_t)i * H3, bi, bh, D->h + (int64_t)i * H,
                     Y + yrow(nd, p) * nd->ldy + (int64_t)dd * H, D->gates + p * 4 * H);
        }
    }
}

/* Gradient pointers of one direction's parameters (NULL: not wanted), taken before any parallel region. */
typedef struct { float *wih, *whh, *bih, *bhh; float *dgh, *hp, *dh; } dir_grads;

/* Backpropagation through time of direction dd: its columns of dGI, then its parameter gradients. Serial. */
static void dir_backward(const gru_node *nd, int dd, const float *dY, float *dGI, const dir_grads *gr)
{
    const gru_dir *D = &nd->d[dd];
    const int H = nd->H, H3 = 3 * H, G = nd->ndir * H3, P = nd->P;
    const float *Y = nd->y->data;
    memset(gr->dh, 0, (size_t)nd->B * H * sizeof(float));
    for (int s = nd->smax - 1; s >= 0; s--) {
        const int nact = nd->nact[s];
        const int64_t q0 = nd->soff[s];             /* this step's first row of dGH and Hp */
        for (int i = 0; i < nact; i++) {
            const int b = nd->order[i], t = step_t(nd, D, b, s);
            const int64_t p = (int64_t)nd->off[b] + t;
            const float *h0 = s == 0 ? nd->zero
                            : Y + yrow(nd, (int64_t)nd->off[b] + (D->reverse ? t + 1 : t - 1)) * nd->ldy + (int64_t)dd * H;
            gate_bwd(H, D->gates + p * 4 * H, h0, dY + yrow(nd, p) * nd->ldy + (int64_t)dd * H, gr->dh + (int64_t)i * H,
                     dGI + p * G + (int64_t)dd * H3, gr->dgh + (q0 + i) * H3, gr->hp + (q0 + i) * H);
        }
        if (s > 0)   /* dh_prev (nact, H) += dGH_step (nact, 3H) · W_hh (3H, H) */
            al_gemm_serial(0, 0, nact, H, H3, 1.0f, gr->dgh + q0 * H3, H3, D->w_hh->data, H, 1.0f, gr->dh, H);
    }
    if (gr->whh) al_gemm_serial(1, 0, H3, H, P, 1.0f, gr->dgh, H3, gr->hp, H, 1.0f, gr->whh, H);                  /* dGHᵀ·Hp */
    if (gr->wih) al_gemm_serial(1, 0, H3, nd->I, P, 1.0f, dGI + (int64_t)dd * H3, G, nd->xp, nd->I, 1.0f, gr->wih, nd->I); /* dGIᵀ·x */
    if (gr->bih || gr->bhh) {                       /* column sums, rows in order */
        float *acc = gr->dh;                        /* (3H) scratch: dh is no longer needed */
        if (gr->bih) {
            memset(acc, 0, (size_t)H3 * sizeof(float));
            for (int64_t p = 0; p < P; p++) { const float *r = dGI + p * G + (int64_t)dd * H3; for (int j = 0; j < H3; j++) acc[j] += r[j]; }
            for (int j = 0; j < H3; j++) gr->bih[j] += acc[j];
        }
        if (gr->bhh) {
            memset(acc, 0, (size_t)H3 * sizeof(float));
            for (int64_t q = 0; q < P; q++) { const float *r = gr->dgh + q * H3; for (int j = 0; j < H3; j++) acc[j] += r[j]; }
            for (int j = 0; j < H3; j++) gr->bhh[j] += acc[j];
        }
    }
}

static float *grad_if(al_ctx *c, al_tensor *t) { return t && t->requires_grad ? al_grad(c, t) : NULL; }

static void gru_backward(al_ctx *c, void *p)
{
    gru_node *nd = p;
    const float *dY = nd->y->grad;
    if (!dY) return;
    const int B = nd->B, I = nd->I, H = nd->H, H3 = 3 * H, P = nd->P, G = nd->ndir * H3;
    float *dGI = al_arena_alloc(&c->arena, (size_t)P * G * sizeof(float));            /* (P, ndir·3H) */
    dir_grads gr[2];
    memset(gr, 0, sizeof gr);
    for (int dd = 0; dd < nd->ndir; dd++) {
        const gru_dir *D = &nd->d[dd];
        gr[dd].dgh = al_arena_alloc(&c->arena, (size_t)P * H3 * sizeof(float));      /* (P, 3H) step order */
        gr[dd].hp = al_arena_alloc(&c->arena, (size_t)P * H * sizeof(float));        /* (P, H) step order */
        gr[dd].dh = al_arena_alloc(&c->arena, (size_t)(B > 3 ? B : 3) * H * sizeof(float));   /* (B, H), ≥ 3H */
        if (!gr[dd].dgh || !gr[dd].hp || !gr[dd].dh) break;
        gr[dd].wih = grad_if(c, D->w_ih); gr[dd].whh = grad_if(c, D->w_hh);
        gr[dd].bih = grad_if(c, D->b_ih); gr[dd].bhh = grad_if(c, D->b_hh);
    }
    if (!dGI || !gr[nd->ndir - 1].dh) { al_fail(c, "gru: out of memory (arena) in backward"); return; }
    if (!al_ok(c)) return;
    AL_OMP("omp parallel for num_threads(2) schedule(static, 1) if (PAR_DIRS(nd))")
    for (int dd = 0; dd < nd->ndir; dd++) dir_backward(nd, dd, dY, dGI, &gr[dd]);
    if (!nd->x->requires_grad) return;
    int fresh;                                      /* dx (P, I) += dGI · wcat, for every direction at once */
    float *dx = al_grad_for_write(c, nd->x, &fresh);
    if (!dx) return;
    if (!nd->xrow) { al_gemm(0, 0, P, I, G, 1.0f, dGI, G, nd->wcat, I, fresh ? 0.0f : 1.0f, dx, I); return; }
    float *dxp = al_arena_alloc(&c->arena, (size_t)P * I * sizeof(float));           /* (P, I) */
    if (!dxp) { al_fail(c, "gru: out of memory (arena) in backward"); return; }
    al_gemm(0, 0, P, I, G, 1.0f, dGI, G, nd->wcat, I, 0.0f, dxp, I);
    const int T = nd->T;                            /* padded x (B, T, I): valid rows get dxp, padded ones stay 0 */
    AL_OMP("omp parallel for schedule(static) if ((int64_t)T * I * B >= AL_PAR_MIN)")
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            float *d = dx + ((int64_t)b * T + t) * I;
            const float *src = dxp + ((int64_t)nd->off[b] + t) * I;
            if (t < nd->len[b]) { if (fresh) memcpy(d, src, (size_t)I * sizeof(float)); else for (int q = 0; q < I; q++) d[q] += src[q]; }
            else if (fresh) memset(d, 0, (size_t)I * sizeof(float));
        }
}

/* Lengths, the length order, steps per time step; x's valid rows (xp, and xrow when x is padded). 0 or -1. */
static int gru_layout(al_ctx *c, gru_node *nd, const int *len)
{
    const int B = nd->B, T = nd->T, I = nd->I;
    nd->len = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    nd->off = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    nd->order = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    if (!nd->len || !nd->off || !nd->order) return -1;
    for (int b = 0, o = 0; b < B; b++) { nd->len[b] = len ? len[b] : T; nd->off[b] = o; o += nd->len[b]; }
    for (int b = 0; b < B; b++) {                  /* stable insertion sort, longest first (B: a batch size) */
        int k = b;
        while (k > 0 && nd->len[nd->order[k - 1]] < nd->len[b]) { nd->order[k] = nd->order[k - 1]; k--; }
        nd->order[k] = b;
    }
    nd->smax = B > 0 ? nd->len[nd->order[0]] : 0;
    nd->nact = al_arena_alloc(&c->arena, (size_t)(nd->smax > 0 ? nd->smax : 1) * sizeof(int));
    nd->soff = al_arena_alloc(&c->arena, (size_t)(nd->smax + 1) * sizeof(int));
    if (!nd->nact || !nd->soff) return -1;
    nd->soff[0] = 0;
    for (int s = 0, n = B; s < nd->smax; s++) {
        while (n > 0 && nd->len[nd->order[n - 1]] <= s) n--;
        nd->nact[s] = n; nd->soff[s + 1] = nd->soff[s] + n;
    }
    if (!T || nd->P == B * T) { nd->xp = nd->x->data; return 0; }   /* packed, or nothing padded */
    int *row = al_arena_alloc(&c->arena, (size_t)nd->P * sizeof(int));
    float *xp = al_arena_alloc(&c->arena, (size_t)nd->P * I * sizeof(float));
    if (!row || !xp) return -1;
    for (int b = 0; b < B; b++) {
        memcpy(xp + (int64_t)nd->off[b] * I, nd->x->data + (int64_t)b * T * I, (size_t)nd->len[b] * I * sizeof(float));
        for (int t = 0; t < nd->len[b]; t++) row[nd->off[b] + t] = b * T + t;
    }
    nd->xrow = row; nd->xp = xp;
    return 0;
}

/* Everything after the checks: layout, GI, the recurrences, the tape node. nd has x, y, B, T, I, H,
 * P, ndir, ldy and the directions' tensors and flags. Returns y. */
static al_tensor *gru_run(al_ctx *c, gru_node *nd, const int *len)
{
    const int B = nd->B, I = nd->I, H = nd->H, H3 = 3 * H, P = nd->P, G = nd->ndir * H3;
    if (gru_layout(c, nd, len)) return al_fail(c, "gru: out of memory (arena)");
    if (P == 0) return nd->y;                      /* every sequence empty: all outputs 0 */
    float *zero = al_arena_calloc(&c->arena, (size_t)H3 * sizeof(float));
    nd->gi = al_arena_alloc(&c->arena, (size_t)P * G * sizeof(float));
    if (!zero || !nd->gi) return al_fail(c, "gru: out of memory (arena)");
    nd->zero = zero;
    if (nd->ndir == 1) nd->wcat = nd->d[0].w_ih->data;
    else {
        float *w = al_arena_alloc(&c->arena, (size_t)G * I * sizeof(float));
        if (!w) return al_fail(c, "gru: out of memory (arena)");
        for (int dd = 0; dd < nd->ndir; dd++) memcpy(w + (int64_t)dd * H3 * I, nd->d[dd].w_ih->data, (size_t)H3 * I * sizeof(float));
        nd->wcat = w;
    }
    for (int dd = 0; dd < nd->ndir; dd++) {
        gru_dir *D = &nd->d[dd];
        D->whh_t = al_arena_alloc(&c->arena, (size_t)H * H3 * sizeof(float));
        D->gates = al_arena_alloc(&c->arena, (size_t)P * 4 * H * sizeof(float));
        D->h = al_arena_alloc(&c->arena, (size_t)B * H * sizeof(float));
        D->gh = al_arena_alloc(&c->arena, (size_t)B * H3 * sizeof(float));
        if (!D->whh_t || !D->gates || !D->h || !D->gh) return al_fail(c, "gru: out of memory (arena)");
    }
    al_gemm(0, 1, P, G, I, 1.0f, nd->xp, I, nd->wcat, I, 0.0f, nd->gi, G);   /* GI (P, ndir·3H) */
    AL_OMP("omp parallel for num_threads(2) schedule(static, 1) if (PAR_DIRS(nd))")
    for (int dd = 0; dd < nd->ndir; dd++) dir_forward(nd, dd);
    int want = al__wants_grad(c, nd->x);
    for (int dd = 0; dd < nd->ndir; dd++) {
        const gru_dir *D = &nd->d[dd];
        want |= al__any_grad(c, D->w_ih, D->w_hh, D->b_ih) || al__wants_grad(c, D->b_hh);
    }
    if (want) {
        nd->y->requires_grad = 1;
        al_tape_push_out(c, gru_backward, nd, nd->y);
    }
    return nd->y;
}

/* Shape checks of one direction's parameters against I (and H from w_hh); H or -1 after al_fail. */
static int check_dir(al_ctx *c, const char *op, const al_tensor *x, int I, al_tensor *w_ih, al_tensor *w_hh,
                     al_tensor *b_ih, al_tensor *b_hh)
{
    char s1[64], s2[64], s3[64];
    if (!w_ih || !w_hh) { al_fail(c, "%s: missing weights", op); return -1; }
    if (w_hh->ndim != 2 || w_hh->shape[0] != 3 * w_hh->shape[1]) {
        al_fail(c, "%s: w_hh %s must be (3H, H)", op, al_shape_str(w_hh, s1, sizeof s1)); return -1;
    }
    const int H = w_hh->shape[1], H3 = 3 * H;
    if (w_ih->ndim != 2 || w_ih->shape[0] != H3 || w_ih->shape[1] != I) {
        al_fail(c, "%s: w_ih %s must be (%d, %d) for x %s and w_hh %s", op, al_shape_str(w_ih, s1, sizeof s1),
                H3, I, al_shape_str(x, s2, sizeof s2), al_shape_str(w_hh, s3, sizeof s3));
        return -1;
    }
    if (b_ih && !(b_ih->ndim == 1 && b_ih->shape[0] == H3)) { al_fail(c, "%s: b_ih %s must be (%d)", op, al_shape_str(b_ih, s1, sizeof s1), H3); return -1; }
    if (b_hh && !(b_hh->ndim == 1 && b_hh->shape[0] == H3)) { al_fail(c, "%s: b_hh %s must be (%d)", op, al_shape_str(b_hh, s1, sizeof s1), H3); return -1; }
    return H;
}

al_tensor *al_gru(al_ctx *c, al_tensor *x, const int *len, al_tensor *w_ih, al_tensor *w_hh,
                  al_tensor *b_ih, al_tensor *b_hh, int reverse)
{
    if (!x || !w_ih || !w_hh || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 3)
        return al_fail(c, "gru: x %s must be (B, T, I)", al_shape_str(x, s1, sizeof s1));
    const int B = x->shape[0], T = x->shape[1], I = x->shape[2];
    const int H = check_dir(c, "gru", x, I, w_ih, w_hh, b_ih, b_hh);
    if (H < 0) return NULL;
    const int64_t BT = (int64_t)B * T;
    if (BT > 2147483647LL || (int64_t)H * 4 > 2147483647LL / (BT > 0 ? BT : 1))
        return al_fail(c, "gru: too large (B·T = %lld, H = %d)", (long long)BT, H);
    int64_t P = 0;
    for (int b = 0; b < B; b++) {
        if (len && (len[b] < 0 || len[b] > T))
            return al_fail(c, "gru: len[%d] = %d out of range [0, %d] for x %s", b, len[b], T,
                           al_shape_str(x, s1, sizeof s1));
        P += len ? len[b] : T;
    }
    gru_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    al_tensor *y = al_zeros(c, 3, (int[]){B, T, H});                           /* (B, T, H) */
    if (!y) return NULL;
    if (!nd) return al_fail(c, "gru: out of memory (arena)");
    nd->x = x; nd->y = y; nd->B = B; nd->T = T; nd->I = I; nd->H = H; nd->P = (int)P; nd->ndir = 1; nd->ldy = H;
    nd->d[0] = (gru_dir){w_ih, w_hh, b_ih, b_hh, !!reverse, NULL, NULL, NULL, NULL};
    return gru_run(c, nd, len);
}

al_tensor *al_gru_packed(al_ctx *c, al_tensor *x, const int *len, int nseg, int ndir, const al_gru_dir *dir)
{
    if (!x || !dir || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 2) return al_fail(c, "gru_packed: x %s must be (N, I)", al_shape_str(x, s1, sizeof s1));
    if (ndir != 1 && ndir != 2) return al_fail(c, "gru_packed: ndir must be 1 or 2, got %d", ndir);
    if (nseg < 1 || !len) return al_fail(c, "gru_packed: need at least one sequence, got %d", nseg);
    const int N = x->shape[0], I = x->shape[1];
    int H = -1;
    for (int dd = 0; dd < ndir; dd++) {
        int h = check_dir(c, "gru_packed", x, I, dir[dd].w_ih, dir[dd].w_hh, dir[dd].b_ih, dir[dd].b_hh);
        if (h < 0) return NULL;
        if (dd && h != H) return al_fail(c, "gru_packed: the directions have hidden sizes %d and %d", H, h);
        H = h;
    }
    if ((int64_t)N * 4 * H * ndir > 2147483647LL) return al_fail(c, "gru_packed: too large (N = %d, H = %d)", N, H);
    int64_t P = 0;
    for (int s = 0; s < nseg; s++) {
        if (len[s] < 0) return al_fail(c, "gru_packed: sequence %d has negative length %d", s, len[s]);
        P += len[s];
    }
    if (P != N) return al_fail(c, "gru_packed: lengths sum to %lld, not x's %d rows", (long long)P, N);
    gru_node *nd = al_arena_calloc(&c->arena, sizeof *nd);
    al_tensor *y = al_new(c, 2, (int[]){N, ndir * H});                        /* (N, ndir·H) */
    if (!y) return NULL;
    if (!nd) return al_fail(c, "gru_packed: out of memory (arena)");
    nd->x = x; nd->y = y; nd->B = nseg; nd->T = 0; nd->I = I; nd->H = H; nd->P = N; nd->ndir = ndir; nd->ldy = ndir * H;
    for (int dd = 0; dd < ndir; dd++)
        nd->d[dd] = (gru_dir){dir[dd].w_ih, dir[dd].w_hh, dir[dd].b_ih, dir[dd].b_hh, dd == 1, NULL, NULL, NULL, NULL};
    return gru_run(c, nd, len);
}

/* ======================= naive reference ======================= */
static double sigmd(double a) { return 1.0 / (1.0 + exp(-a)); }

al_status al_gru_ref(int B, int T, int I, int H, const float *x, const int *len,
                     const float *w_ih, const float *w_hh, const float *b_ih, const float *b_hh,
                     int reverse, float *y, const float *dy, float *dx, float *dw_ih,
                     float *dw_hh, float *db_ih, float *db_hh)
{
    const int H3 = 3 * H;
    const size_t BT = (size_t)B * T;
    /* per (b, t): pre-activations ai = W_ih x + b_ih and ah = W_hh h_prev + b_hh, gates, h_prev */
    double *ai = calloc(BT * H3 + 1, sizeof(double)), *ah = calloc(BT * H3 + 1, sizeof(double));
    double *gr = calloc(BT * H + 1, sizeof(double)), *gz = calloc(BT * H + 1, sizeof(double));
    double *gn = calloc(BT * H + 1, sizeof(double)), *hp = calloc(BT * H + 1, sizeof(double));
    double *h = calloc((size_t)H + 1, sizeof(double)), *dh = calloc((size_t)H + 1, sizeof(double));
    double *dhp = calloc((size_t)H + 1, sizeof(double));
    al_status st = AL_ERR;
    if (!ai || !ah || !gr || !gz || !gn || !hp || !h || !dh || !dhp) goto done;
    memset(y, 0, BT * H * sizeof(float));
    for (int b = 0; b < B; b++) {
        const int L = len ? len[b] : T;
        for (int j = 0; j < H; j++) h[j] = 0;
        for (int s = 0; s < L; s++) {
            const int t = reverse ? L - 1 - s : s;
            const size_t bt = (size_t)b * T + t;
            const float *xt = x + bt * I;
            for (int k = 0; k < H3; k++) {
                double a = b_ih ? b_ih[k] : 0, e = b_hh ? b_hh[k] : 0;
                for (int q = 0; q < I; q++) a += (double)w_ih[(size_t)k * I + q] * xt[q];
                for (int q = 0; q < H; q++) e += (double)w_hh[(size_t)k * H + q] * h[q];
                ai[bt * H3 + k] = a; ah[bt * H3 + k] = e;
            }
            for (int j = 0; j < H; j++) {
                const double *a = ai + bt * H3, *e = ah + bt * H3;
                double r = sigmd(a[j] + e[j]), z = sigmd(a[H + j] + e[H + j]);
                double n = tanh(a[2 * H + j] + r * e[2 * H + j]);
                gr[bt * H + j] = r; gz[bt * H + j] = z; gn[bt * H + j] = n; hp[bt * H + j] = h[j];
            }
            for (int j = 0; j < H; j++) {
                const double z = gz[bt * H + j];
                h[j] = (1 - z) * gn[bt * H + j] + z * h[j];
                y[bt * H + j] = (float)h[j];
            }
        }
    }
    if (dy) {
        /* weight and bias gradients summed over all steps in double, added to the outputs once */
        double *dgi = calloc((size_t)H3, sizeof(double)), *dgh = calloc((size_t)H3, sizeof(double));
        double *swi = calloc((size_t)H3 * I + 1, sizeof(double)), *swh = calloc((size_t)H3 * H + 1, sizeof(double));
        double *sbi = calloc((size_t)H3, sizeof(double)), *sbh = calloc((size_t)H3, sizeof(double));
        int ok = dgi && dgh && swi && swh && sbi && sbh;
        for (int b = 0; ok && b < B; b++) {
            const int L = len ? len[b] : T;
            for (int j = 0; j < H; j++) dh[j] = 0;
            for (int s = L - 1; s >= 0; s--) {
                const int t = reverse ? L - 1 - s : s;
                const size_t bt = (size_t)b * T + t;
                for (int j = 0; j < H; j++) {
                    const double r = gr[bt * H + j], z = gz[bt * H + j], n = gn[bt * H + j];
                    const double d = dh[j] + dy[bt * H + j];
                    const double dan = d * (1 - z) * (1 - n * n);
                    const double dar = dan * ah[bt * H3 + 2 * H + j] * r * (1 - r);
                    const double daz = d * (hp[bt * H + j] - n) * z * (1 - z);
                    dgi[j] = dar; dgi[H + j] = daz; dgi[2 * H + j] = dan;
                    dgh[j] = dar; dgh[H + j] = daz; dgh[2 * H + j] = dan * r;
                    dhp[j] = d * z;
                }
                for (int q = 0; q < H; q++) {          /* dh_prev = dh ⊙ z + W_hhᵀ dgh */
                    double acc = dhp[q];
                    for (int k = 0; k < H3; k++) acc += dgh[k] * w_hh[(size_t)k * H + q];
                    dh[q] = acc;
                }
                for (int k = 0; k < H3; k++) {
                    sbi[k] += dgi[k]; sbh[k] += dgh[k];
                    for (int q = 0; q < I; q++) swi[(size_t)k * I + q] += dgi[k] * x[bt * I + q];
                    for (int q = 0; q < H; q++) swh[(size_t)k * H + q] += dgh[k] * hp[bt * H + q];
                }
                if (dx) for (int q = 0; q < I; q++) {
                    double acc = 0;
                    for (int k = 0; k < H3; k++) acc += dgi[k] * w_ih[(size_t)k * I + q];
                    dx[bt * I + q] += (float)acc;
                }
            }
        }
        for (int k = 0; ok && k < H3; k++) {
            if (db_ih) db_ih[k] += (float)sbi[k];
            if (db_hh) db_hh[k] += (float)sbh[k];
            if (dw_ih) for (int q = 0; q < I; q++) dw_ih[(size_t)k * I + q] += (float)swi[(size_t)k * I + q];
            if (dw_hh) for (int q = 0; q < H; q++) dw_hh[(size_t)k * H + q] += (float)swh[(size_t)k * H + q];
        }
        free(dgi); free(dgh); free(swi); free(swh); free(sbi); free(sbh);
        if (!ok) goto done;
    }
    st = AL_OK;
done:
    free(ai); free(ah); free(gr); free(gz); free(gn); free(hp); free(h); free(dh); free(dhp);
    return st;
}
