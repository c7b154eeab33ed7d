/* ops_gru.c — one direction of a GRU layer (PyTorch's equations and gate order r, z, n) over a
 * padded batch, forward beside its backward through time, and the naive double reference.
 *
 * Only the valid steps (t < len[b]) are ever computed or read: they are numbered in one packed row
 * index p = off[b] + t (off = prefix sums of len), so padded inputs (even NaN) reach nothing.
 *
 * Forward: GI (P, 3H) = x_valid·W_ihᵀ + b_ih for all P valid steps in ONE gemm; then per time step the
 * sequences still running are a prefix of the batch sorted by length (longest first, as a
 * packed sequence), so the recurrence is one (nact, H)·(H, 3H) gemm on a contiguous state block
 * and a gate loop over those rows. Saved per (b, t): r, z, n and hn = W_hn h + b_hn.
 *
 * Backward: per step (last to first) the gate derivatives of the running rows go into dGI and dGH
 * (P, 3H), and dh_prev = dh ⊙ z + dGH_step · W_hh is one (nact, 3H)·(3H, H) gemm. After the loop
 * dx, dW_ih, dW_hh are one gemm each over all steps and db_ih, db_hh are column sums.
 *
 * Determinism: gate loops own their rows; column sums give each thread whole columns summed in row
 * order; every gemm writes blocks it owns (al_gemm is bitwise identical for any thread count). So
 * the results do not depend on the number of threads.
 */
#include "attnlab/rnn.h"
#include "ops_impl.h"
#include "attnlab/kernels.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GATE_COST 16  /* rough flops per hidden unit of the gate loop, for the parallel threshold */

static inline float sigm(float a) { return 1.0f / (1.0f + expf(-a)); }


typedef struct {
    al_tensor *x, *w_ih, *w_hh, *b_ih, *b_hh, *y;
    int B, T, I, H, reverse;
    int P;           /* valid steps: Σ len */
    int *len;        /* (B) copy */
    int *off;        /* (B) packed row of (b, 0): Σ_{b' < b} len[b'] */
    int *order;      /* (B) batch rows sorted by length, longest first (stable) */
    const float *xp; /* (P, I) valid rows of x (x->data itself when nothing is padded) */
    float *gates;    /* (P, 4H): r, z, n, hn per valid step */
} gru_node;

/* Number of sequences (a prefix of order) with more than s steps. */
static int active(const gru_node *nd, int s, int from)
{
    int n = from;
    while (n > 0 && nd->len[nd->order[n - 1]] <= s) n--;
    return n;
}
/* Time index of step s of sequence b. */
static inline int step_t(const gru_node *nd, int b, int s) { return nd->reverse ? nd->len[b] - 1 - s : s; }

static void gru_backward(al_ctx *c, void *p)
{
    gru_node *nd = p;
    const float *dY = nd->y->grad;                 /* (B, T, H) */
    if (!dY) return;
    const int B = nd->B, T = nd->T, I = nd->I, H = nd->H, H3 = 3 * H, P = nd->P;
    const float *Y = nd->y->data;                  /* (B, T, H) */
    const float *Whh = nd->w_hh->data;             /* (3H, H) */
    float *dGI = al_arena_alloc(&c->arena, (size_t)P * H3 * sizeof(float));   /* (P, 3H) */
    float *dGH = al_arena_alloc(&c->arena, (size_t)P * H3 * sizeof(float));   /* (P, 3H) */
    float *Hp = al_arena_alloc(&c->arena, (size_t)P * H * sizeof(float));     /* (P, H) h_prev */
    float *dh = al_arena_calloc(&c->arena, (size_t)B * H * sizeof(float));    /* (B, H) packed by order */
    float *step = al_arena_alloc(&c->arena, (size_t)B * H3 * sizeof(float));  /* (B, 3H) packed by order */
    if (!dGI || !dGH || !Hp || !dh || !step) { al_fail(c, "gru: out of memory (arena) in backward"); return; }
    const int smax = nd->len[nd->order[0]];
    for (int s = smax - 1; s >= 0; s--) {
        const int nact = active(nd, s, B);         /* grows as s falls: recount from B */
        AL_OMP("omp parallel for schedule(static) if ((int64_t)nact * H * GATE_COST >= AL_PAR_MIN)")
        for (int i = 0; i < nact; i++) {
            const int b = nd->order[i], t = step_t(nd, b, s);
            const int64_t pr = (int64_t)nd->off[b] + t;          /* packed row of (b, t) */
            const int tp = nd->reverse ? t + 1 : t - 1;        /* the step before, in time */
            const float *hprev = s > 0 ? Y + ((int64_t)b * T + tp) * H : NULL;
            const float *g = nd->gates + pr * 4 * H;           /* r, z, n, hn */
            const float *dy = dY + ((int64_t)b * T + t) * H;
            float *dhi = dh + (int64_t)i * H, *st = step + (int64_t)i * H3;
            float *dgi = dGI + pr * H3, *dgh = dGH + pr * H3, *hp = Hp + pr * H;
            for (int j = 0; j < H; j++) {
                const float r = g[j], z = g[H + j], n = g[2 * H + j], hn = g[3 * H + j];
                const float h0 = hprev ? hprev[j] : 0.f;
                const float d = dhi[j] + dy[j];                /* dL/dh at (b, t) */
                const float dan = d * (1.f - z) * (1.f - n * n);
                const float dar = dan * hn * r * (1.f - r);
                const float daz = d * (h0 - n) * z * (1.f - z);
                dgi[j] = dar; dgi[H + j] = daz; dgi[2 * H + j] = dan;
                dgh[j] = dar; dgh[H + j] = daz; dgh[2 * H + j] = dan * r;
                st[j] = dar; st[H + j] = daz; st[2 * H + j] = dan * r;
                hp[j] = h0;
                dhi[j] = d * z;
            }
        }
        if (s > 0)   /* dh_prev (nact, H) += step (nact, 3H) · W_hh (3H, H) */
            al_gemm(0, 0, nact, H, H3, 1.0f, step, H3, Whh, H, 1.0f, dh, H);
    }
    if (nd->x->requires_grad) {                    /* dx_valid (P, I) += dGI · W_ih */
        int fresh;
        float *dx = al_grad_for_write(c, nd->x, &fresh);   /* (B, T, I) */
        if (!dx) return;
        if (P == B * T) {                          /* nothing padded: packed rows are x's rows */
            al_gemm(0, 0, P, I, H3, 1.0f, dGI, H3, nd->w_ih->data, I, fresh ? 0.0f : 1.0f, dx, I);
        } else {
            float *dxp = al_arena_alloc(&c->arena, (size_t)P * I * sizeof(float));   /* (P, I) */
            if (!dxp) { al_fail(c, "gru: out of memory (arena) in backward"); return; }
            al_gemm(0, 0, P, I, H3, 1.0f, dGI, H3, nd->w_ih->data, I, 0.0f, dxp, I);
            AL_OMP("omp parallel for schedule(static) if ((int64_t)T * I * B >= AL_PAR_MIN)")
            for (int b = 0; b < B; b++)
                for (int t = 0; t < T; t++) {
                    float *d = dx + ((int64_t)b * T + t) * I;
                    const float *src = dxp + ((int64_t)nd->off[b] + t) * I;
                    if (t < nd->len[b]) { if (fresh) memcpy(d, src, (size_t)I * sizeof(float)); else for (int q = 0; q < I; q++) d[q] += src[q]; }
                    else if (fresh) memset(d, 0, (size_t)I * sizeof(float));
                }
        }
    }
    if (nd->w_ih->requires_grad) {                 /* dW_ih (3H, I) += dGIᵀ · x_valid */
        float *dw = al_grad(c, nd->w_ih);
        if (!dw) return;
        al_gemm(1, 0, H3, I, P, 1.0f, dGI, H3, nd->xp, I, 1.0f, dw, I);
    }
    if (nd->w_hh->requires_grad) {                 /* dW_hh (3H, H) += dGHᵀ · h_prev */
        float *dw = al_grad(c, nd->w_hh);
        if (!dw) return;
        al_gemm(1, 0, H3, H, P, 1.0f, dGH, H3, Hp, H, 1.0f, dw, H);
    }
    if (nd->b_ih && nd->b_ih->requires_grad) {
        float *db = al_grad(c, nd->b_ih);
        if (!db) return;
        al__colsum_acc(dGI, db, P, H3);
    }
    if (nd->b_hh && nd->b_hh->requires_grad) {
        float *db = al_grad(c, nd->b_hh);
        if (!db) return;
        al__colsum_acc(dGH, db, P, H3);
    }
}

al_tensor *al_gru(al_ctx *c, al_tensor *x, const int *len, al_tensor *w_ih, al_tensor *w_hh,
                  al_tensor *b_ih, al_tensor *b_hh, int reverse)
{
    if (!x || !w_ih || !w_hh || !al_ok(c)) return NULL;
    char s1[64], s2[64], s3[64];
    if (x->ndim != 3)
        return al_fail(c, "gru: x %s must be (B, T, I)", al_shape_str(x, s1, sizeof s1));
    const int B = x->shape[0], T = x->shape[1], I = x->shape[2];
    if (w_hh->ndim != 2 || w_hh->shape[0] != 3 * w_hh->shape[1])
        return al_fail(c, "gru: w_hh %s must be (3H, H)", al_shape_str(w_hh, s1, sizeof s1));
    const int H = w_hh->shape[1], H3 = 3 * H;
    if (w_ih->ndim != 2 || w_ih->shape[0] != H3 || w_ih->shape[1] != I)
        return al_fail(c, "gru: w_ih %s must be (%d, %d) for x %s and w_hh %s", al_shape_str(w_ih, s1, sizeof s1),
                       H3, I, al_shape_str(x, s2, sizeof s2), al_shape_str(w_hh, s3, sizeof s3));
    if (b_ih && !(b_ih->ndim == 1 && b_ih->shape[0] == H3))
        return al_fail(c, "gru: b_ih %s must be (%d)", al_shape_str(b_ih, s1, sizeof s1), H3);
    if (b_hh && !(b_hh->ndim == 1 && b_hh->shape[0] == H3))
        return al_fail(c, "gru: b_hh %s must be (%d)", al_shape_str(b_hh, s1, sizeof s1), H3);
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
    const size_t Pz = (size_t)(P > 0 ? P : 1);
    float *GI = al_arena_alloc(&c->arena, Pz * H3 * sizeof(float));            /* (P, 3H) */
    float *gh = al_arena_alloc(&c->arena, (size_t)B * H3 * sizeof(float));     /* (B, 3H) packed by order */
    float *h = al_arena_calloc(&c->arena, (size_t)B * H * sizeof(float));      /* (B, H) packed by order */
    nd->len = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    nd->off = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    nd->order = al_arena_alloc(&c->arena, (size_t)B * sizeof(int));
    nd->gates = al_arena_alloc(&c->arena, Pz * 4 * H * sizeof(float));
    float *xp = P == BT ? NULL : al_arena_alloc(&c->arena, Pz * I * sizeof(float));   /* (P, I) */
    if (!GI || !gh || !h || !nd->len || !nd->off || !nd->order || !nd->gates || (P != BT && !xp))
        return al_fail(c, "gru: out of memory (arena)");
    nd->x = x; nd->w_ih = w_ih; nd->w_hh = w_hh; nd->b_ih = b_ih; nd->b_hh = b_hh; nd->y = y;
    nd->B = B; nd->T = T; nd->I = I; nd->H = H; nd->reverse = !!reverse; nd->P = (int)P;
    for (int b = 0, o = 0; b < B; b++) { nd->len[b] = len ? len[b] : T; nd->off[b] = o; o += nd->len[b]; }
    /* stable insertion sort by length, longest first (B is a batch size: small) */
    for (int b = 0; b < B; b++) {
        int k = b;
        while (k > 0 && nd->len[nd->order[k - 1]] < nd->len[b]) { nd->order[k] = nd->order[k - 1]; k--; }
        nd->order[k] = b;
    }
    if (xp) {                                      /* gather the valid rows of x */
        for (int b = 0; b < B; b++)
            memcpy(xp + (int64_t)nd->off[b] * I, x->data + (int64_t)b * T * I, (size_t)nd->len[b] * I * sizeof(float));
        nd->xp = xp;
    } else {
        nd->xp = x->data;
    }
    if (P == 0) return y;                          /* every sequence empty: all outputs 0 */

    /* GI (P, 3H) = x_valid · W_ihᵀ + b_ih for every valid step at once */
    if (b_ih) {
        AL_OMP("omp parallel for schedule(static) if (P * H3 >= AL_PAR_MIN)")
        for (int64_t r = 0; r < P; r++) memcpy(GI + r * H3, b_ih->data, (size_t)H3 * sizeof(float));
    }
    al_gemm(0, 1, (int)P, H3, I, 1.0f, nd->xp, I, w_ih->data, I, b_ih ? 1.0f : 0.0f, GI, H3);

    const float *Whh = w_hh->data;
    float *Y = y->data;
    const int smax = nd->len[nd->order[0]];
    int nact = B;
    for (int s = 0; s < smax; s++) {
        nact = active(nd, s, nact);
        /* gh (nact, 3H) = h · W_hhᵀ + b_hh */
        if (b_hh) for (int i = 0; i < nact; i++) memcpy(gh + (int64_t)i * H3, b_hh->data, (size_t)H3 * sizeof(float));
        al_gemm(0, 1, nact, H3, H, 1.0f, h, H, Whh, H, b_hh ? 1.0f : 0.0f, gh, H3);
        AL_OMP("omp parallel for schedule(static) if ((int64_t)nact * H * GATE_COST >= AL_PAR_MIN)")
        for (int i = 0; i < nact; i++) {
            const int b = nd->order[i], t = step_t(nd, b, s);
            const int64_t pr = (int64_t)nd->off[b] + t;
            const float *gi = GI + pr * H3, *ghi = gh + (int64_t)i * H3;
            float *hi = h + (int64_t)i * H, *yo = Y + ((int64_t)b * T + t) * H, *g = nd->gates + pr * 4 * H;
            for (int j = 0; j < H; j++) {
                const float r = sigm(gi[j] + ghi[j]);
                const float z = sigm(gi[H + j] + ghi[H + j]);
                const float hn = ghi[2 * H + j];
                const float n = tanhf(gi[2 * H + j] + r * hn);
                const float hv = (1.f - z) * n + z * hi[j];
                g[j] = r; g[H + j] = z; g[2 * H + j] = n; g[3 * H + j] = hn;
                hi[j] = hv; yo[j] = hv;
            }
        }
    }
    if (c->grad_enabled && (x->requires_grad || w_ih->requires_grad || w_hh->requires_grad ||
                            (b_ih && b_ih->requires_grad) || (b_hh && b_hh->requires_grad))) {
        y->requires_grad = 1;
        al_tape_push(c, gru_backward, nd);
    }
    return y;
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
