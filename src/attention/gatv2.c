/* gatv2.c — GATv2 attention over a CSR pattern (Brody, Alon & Yahav, ICLR 2022), forward and backward:
 * the LeakyReLU sits between the sum of the query and key projections and the score vector, so the
 * ranking of keys can depend on the query (GAT's additive score a_q·q_i + a_k·k_j cannot):
 *   e[h, s] = Σ_d a[h, d] LeakyReLU(q[i, h, d] + k[j, h, d]) + bias[h, s]     s = slot (i, j) of row i
 *   α = softmax of e over row i's slots;  out[i, h, :] = Σ_s α[h, s] k[j, h, :]
 * Its own loop rather than a score kind of al_attention: the score is not separable into a query
 * part and a key part, which the sparse kernels' additive path relies on. Loops run over rows in
 * order (the key gradients are scattered), so results do not depend on the thread count.
 * Attention dropout (al_gatv2_dropout, training only) drops coefficients after the softmax, as GAT's:
 * the keep decision of slot s of head h is al__keep_hash(seed, h·nnz + s), drawn again in backward
 * rather than stored. */
#include "attnlab/attention.h"
#include "core/tape_impl.h"
#include "core/rng_impl.h"
#include <math.h>
#include <string.h>

/* Attention dropout of one call: drop when the hash is below thresh, scale kept weights by inv_keep. */
typedef struct { int on; uint64_t seed; uint32_t thresh; float inv_keep; } gatv2_drop;
/* The multiplier of slot s of head h: 1 without dropout, 0 or 1/(1-p) with it. */
static inline float drop_mul(const gatv2_drop *dr, int h, int64_t E, int64_t s)
{
    return !dr->on ? 1.f : al__keep_hash(dr->seed, (uint64_t)((int64_t)h * E + s), dr->thresh) ? dr->inv_keep : 0.f;
}

typedef struct { const al_csr *adj; al_tensor *q, *k, *a, *bias, *y, *w; int H; float slope; gatv2_drop drop; } gatv2_node;

static void gatv2_forward(const al_csr *A, const float *q /* (N, H·D) */, const float *k /* (N, H·D) */,
                          const float *a /* (H, D) */, const float *bias /* (H, nnz) or NULL */, float *w /* (H, nnz) */,
                          float *y /* (N, H·D) */, int H, int D, float slope, const gatv2_drop *dr)
{
    const int N = A->rows, HD = H * D;
    const int64_t E = A->nnz;
    for (int i = 0; i < N; i++)
        for (int h = 0; h < H; h++) {
            const float *qi = q + (int64_t)i * HD + h * D;
            float *yi = y + (int64_t)i * HD + h * D;
            for (int d = 0; d < D; d++) yi[d] = 0.f;
            const int64_t s0 = A->rowptr[i], s1 = A->rowptr[i + 1];
            if (s1 <= s0) continue;
            float mx = -INFINITY;
            for (int64_t s = s0; s < s1; s++) {
                const float *kj = k + (int64_t)A->col[s] * HD + h * D;
                float e = bias ? bias[(int64_t)h * E + s] : 0.f;
                for (int d = 0; d < D; d++) { float z = qi[d] + kj[d]; e += a[h * D + d] * (z > 0 ? z : slope * z); }
                w[(int64_t)h * E + s] = e;
                mx = fmaxf(mx, e);
            }
            double sum = 0;
            for (int64_t s = s0; s < s1; s++) { float e = expf(w[(int64_t)h * E + s] - mx); w[(int64_t)h * E + s] = e; sum += e; }
            const float inv = (float)(1.0 / sum);
            for (int64_t s = s0; s < s1; s++) {
                const float al = (w[(int64_t)h * E + s] *= inv) * drop_mul(dr, h, E, s);
                const float *kj = k + (int64_t)A->col[s] * HD + h * D;
                for (int d = 0; d < D; d++) yi[d] += al * kj[d];
            }
        }
}

static void gatv2_backward(al_ctx *c, void *p)
{
    gatv2_node *nd = p;
    if (!nd->y->grad) return;
    const al_csr *A = nd->adj;
    const int N = A->rows, H = nd->H, HD = nd->q->shape[1], D = HD / H;
    const int64_t E = A->nnz;
    const float *q = nd->q->data, *k = nd->k->data, *a = nd->a->data, *w = nd->w->data, *dy = nd->y->grad;
    float *dq = nd->q->requires_grad ? al_grad(c, nd->q) : NULL;            /* (N, H·D) */
    float *dk = nd->k->requires_grad ? al_grad(c, nd->k) : NULL;            /* (N, H·D) */
    float *da = nd->a->requires_grad ? al_grad(c, nd->a) : NULL;            /* (H, D) */
    float *db = nd->bias && nd->bias->requires_grad ? al_grad(c, nd->bias) : NULL;   /* (H, nnz) */
    if (!al_ok(c)) return;
    for (int i = 0; i < N; i++)
        for (int h = 0; h < H; h++) {
            const float *qi = q + (int64_t)i * HD + h * D, *dyi = dy + (int64_t)i * HD + h * D;
            const int64_t s0 = A->rowptr[i], s1 = A->rowptr[i + 1];
            double dot = 0;   /* Σ_s α_s dα_s, dα_s = m_s (dy_i · k_j), m_s the dropout multiplier */
            for (int64_t s = s0; s < s1; s++) {
                const float *kj = k + (int64_t)A->col[s] * HD + h * D;
                float dal = 0.f;
                for (int d = 0; d < D; d++) dal += dyi[d] * kj[d];
                dot += (double)w[(int64_t)h * E + s] * (dal * drop_mul(&nd->drop, h, E, s));
            }
            for (int64_t s = s0; s < s1; s++) {
                const int j = A->col[s];
                const float *kj = k + (int64_t)j * HD + h * D;
                const float al = w[(int64_t)h * E + s], mul = drop_mul(&nd->drop, h, E, s), ald = al * mul;
                float dal = 0.f;
                for (int d = 0; d < D; d++) dal += dyi[d] * kj[d];
                const float de = al * (dal * mul - (float)dot);
                if (db) db[(int64_t)h * E + s] += de;
                for (int d = 0; d < D; d++) {
                    const float z = qi[d] + kj[d], g = z > 0 ? 1.f : nd->slope;
                    if (da) da[h * D + d] += de * z * g;                  /* LeakyReLU(z) = z · g */
                    const float dz = de * a[h * D + d] * g;
                    if (dq) dq[(int64_t)i * HD + h * D + d] += dz;
                    if (dk) dk[(int64_t)j * HD + h * D + d] += dz + ald * dyi[d];   /* score and value paths */
                }
            }
        }
}

al_tensor *al_gatv2(al_ctx *c, const al_csr *adj, al_tensor *q /* (N, H·D) */, al_tensor *k /* (N, H·D) */,
                    al_tensor *a /* (H, D) */, al_tensor *bias /* (H, nnz) or NULL */, float slope)
{
    return al_gatv2_dropout(c, adj, q, k, a, bias, slope, 0.f);
}

al_tensor *al_gatv2_dropout(al_ctx *c, const al_csr *adj, al_tensor *q /* (N, H·D) */, al_tensor *k /* (N, H·D) */,
                            al_tensor *a /* (H, D) */, al_tensor *bias /* (H, nnz) or NULL */, float slope, float p)
{
    if (!q || !k || !a || !al_ok(c)) return NULL;
    char b1[64], b2[64], b3[64];
    if (!adj || !adj->rowptr || (adj->nnz > 0 && !adj->col) || adj->rows != adj->cols)
        return al_fail(c, "gatv2: needs a square CSR pattern");
    if (q->ndim != 2 || !al_same_shape(q, k) || a->ndim != 2 || q->shape[0] != adj->rows || q->shape[1] != a->shape[0] * a->shape[1])
        return al_fail(c, "gatv2: q %s, k %s must be (N, H·D) = (%d, ·) and a %s (H, D)", al_shape_str(q, b1, sizeof b1),
                       al_shape_str(k, b2, sizeof b2), adj->rows, al_shape_str(a, b3, sizeof b3));
    const int H = a->shape[0], D = a->shape[1];
    if (adj->nnz > 0x7fffffff) return al_fail(c, "gatv2: %lld slots is too many", (long long)adj->nnz);
    if (bias && (bias->ndim != 2 || bias->shape[0] != H || bias->shape[1] != adj->nnz))
        return al_fail(c, "gatv2: bias %s must be (H, nnz) = (%d, %lld)", al_shape_str(bias, b1, sizeof b1), H, (long long)adj->nnz);
    for (int64_t s = 0; s < adj->nnz; s++)
        if (adj->col[s] < 0 || adj->col[s] >= adj->rows) return al_fail(c, "gatv2: slot %lld has column %d outside [0, %d)", (long long)s, adj->col[s], adj->rows);
    if (!(p >= 0.f && p < 1.f)) return al_fail(c, "gatv2: attention dropout %g outside [0, 1)", (double)p);
    gatv2_drop dr = {0, 0, 0, 1.f};
    if (c->training && p > 0.f) {
        const double t = (double)p * 4294967296.0;
        dr.on = 1; dr.thresh = t >= 4294967295.0 ? 0xffffffffu : (uint32_t)t;
        dr.inv_keep = 1.0f / (1.0f - p); dr.seed = al_rng_u64(&c->dropout_rng);
    }
    al_tensor *y = al_new(c, 2, (int[]){q->shape[0], H * D});
    al_tensor *w = al_new(c, 2, (int[]){H, adj->nnz > 0 ? (int)adj->nnz : 1});
    if (!y || !w) return NULL;
    gatv2_forward(adj, q->data, k->data, a->data, bias ? bias->data : NULL, w->data, y->data, H, D, slope, &dr);
    if (c->grad_enabled && (q->requires_grad || k->requires_grad || a->requires_grad || (bias && bias->requires_grad))) {
        gatv2_node *nd = al__node_new(c, sizeof *nd);
        if (nd) { nd->adj = adj; nd->q = q; nd->k = k; nd->a = a; nd->bias = bias; nd->y = y; nd->w = w; nd->H = H; nd->slope = slope; nd->drop = dr; }
        if (!al__record(c, y, gatv2_backward, nd)) return NULL;
    }
    return y;
}
