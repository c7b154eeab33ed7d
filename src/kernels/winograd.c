/* winograd.c — a 3×3, stride-1, pad-1 convolution fused with 2×2 max pooling (and a ReLU), by Winograd's
 * minimal filtering F(2×2, 3×3) (Lavin & Gray, "Fast Algorithms for Convolutional Neural Networks", 2016).
 *
 * Every 2×2 block of the convolution's output — exactly one pooling window — is
 *     Y = Aᵀ [ Σ_c (G g_oc Gᵀ) ⊙ (Bᵀ d_c B) ] A
 * with d_c the 4×4 input patch of channel c under the block (stride 2) and
 *     Bᵀ = [1 0 −1 0; 0 1 1 0; 0 −1 1 0; 0 1 0 −1],  G = [1 0 0; ½ ½ ½; ½ −½ ½; 0 0 1],  Aᵀ = [1 1 1 0; 0 1 −1 −1].
 * The sum over c is, for each of the 16 positions ξ of the 4×4 transform, one GEMM
 *     M_ξ (O, T) = U_ξ (O, C) · V_ξ (C, T)       (T: the blocks of a chunk of images)
 * with 16·2·O·C multiply-adds per block instead of the direct convolution's 4·9·2·O·C: 2.25× fewer.
 * The backward is the same three transforms transposed: with Ṁ = A dY Aᵀ (dY: the pooled gradient at its
 * window's max),  dV_ξ = U_ξᵀ · Ṁ_ξ  →  dx (B dV Bᵀ, overlapping patches added),  dU_ξ = Ṁ_ξ · V_ξᵀ  →  dw (Gᵀ dU G).
 *
 * Numerics: not the direct convolution's bits (its sums run in another order, through the transforms'
 * halves and differences); within ~1e-6 relative of it for this layer's sizes (test_winograd_*). Deterministic:
 * images go in chunks of a fixed size (CH), each chunk's products and partial weight gradients computed
 * alone and added in chunk order, so any thread count gives the same bits.
 */
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"   /* al_threads */
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "winograd_impl.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CH 8   /* images per chunk: the unit of work of a thread, and of the order of the sums */

int al__wino_off;   /* tests, benchmarks: nonzero sends every convolution to the direct path */

int al__wino_ok(int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    /* a single input channel (the first layer) has too little to sum for the transforms to pay */
    return !al__wino_off && KH == 3 && KW == 3 && stride == 1 && pad == 1 && H >= 2 && W >= 2 && H % 2 == 0 &&
           W % 2 == 0 && C >= 4 && O >= 1 && (int64_t)(H / 2) * (W / 2) * CH < (1 << 30) / 16;
}

const char *al_conv_kernels(void)
{
    return al__wino_off ? "im2col + gemm (winograd off)"
                        : "winograd F(2x2,3x3) for 3x3 'same' convs with >= 4 channels fused with 2x2 max pooling; im2col + gemm otherwise";
}

static void *falloc(size_t n) { return aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64); }

/* U (16, O, C) = G g Gᵀ for every filter g = w[o][c] (3×3) */
static void filter_transform(const float *w, float *U, int O, int C)
{
    const int64_t OC = (int64_t)O * C;
    for (int64_t q = 0; q < OC; q++) {
        const float *g = w + q * 9;
        float h[4][3];   /* G g: the rows */
        for (int l = 0; l < 3; l++) {
            h[0][l] = g[l];
            h[1][l] = 0.5f * ((g[l] + g[3 + l]) + g[6 + l]);
            h[2][l] = 0.5f * ((g[l] - g[3 + l]) + g[6 + l]);
            h[3][l] = g[6 + l];
        }
        for (int i = 0; i < 4; i++) {   /* (G g) Gᵀ: the columns */
            U[(i * 4 + 0) * OC + q] = h[i][0];
            U[(i * 4 + 1) * OC + q] = 0.5f * ((h[i][0] + h[i][1]) + h[i][2]);
            U[(i * 4 + 2) * OC + q] = 0.5f * ((h[i][0] - h[i][1]) + h[i][2]);
            U[(i * 4 + 3) * OC + q] = h[i][2];
        }
    }
}

/* Spans of n floats through the lane layer, the last vector masked: L(p) loads p[s..], S(p, v) stores. */
#define SPAN(n, ...) for (int s_ = 0; s_ < (n); s_ += AL_VL) { const al_vm m_ = al_v_mask((n) - s_); __VA_ARGS__ }
#define L(p) al_v_loadm(m_, (p) + s_)
#define S(p, v) al_v_storem(m_, (p) + s_, (v))

/* The zero-padded plane (H + 2, W + 2) of x (H, W), its even columns into E and its odd columns into O,
 * both (H + 2, W/2 + 1): padded column 2k is E[·][k], 2k + 1 is O[·][k]. */
static void split_plane(const float *restrict x, int H, int W, float *restrict E, float *restrict O)
{
    const int tw1 = W / 2 + 1;
    memset(E, 0, (size_t)tw1 * sizeof(float)); memset(O, 0, (size_t)tw1 * sizeof(float));
    for (int y = 0; y < H; y++) {
        const float *restrict r = x + (size_t)y * W;
        float *restrict e = E + (size_t)(y + 1) * tw1, *restrict o = O + (size_t)(y + 1) * tw1;
        e[0] = 0.f; o[tw1 - 1] = 0.f;
        for (int k = 0; k < tw1 - 1; k++) { o[k] = r[2 * k]; e[k + 1] = r[2 * k + 1]; }
    }
    memset(E + (size_t)(H + 1) * tw1, 0, (size_t)tw1 * sizeof(float));
    memset(O + (size_t)(H + 1) * tw1, 0, (size_t)tw1 * sizeof(float));
}

/* One image plane (H, W) into V[ξ][·] at column t0 (stride ldv between ξ rows): the zero-padded plane's
 * 4×4 patches at stride 2, Bᵀ d B — d B along the padded rows (once per row: a row belongs to two patch
 * rows), then Bᵀ down each patch row's four. xp: plane_scratch floats. */
static void input_transform(const float *x, int H, int W, float *V, int64_t ldv, int64_t t0, float *xp)
{
    const int Hp = H + 2, th = H / 2, tw = W / 2, tw1 = tw + 1, ne = Hp * tw1;
    float *E = xp, *O = E + ne, *u = O + ne;   /* u: (4, Hp, tw1) */
    split_plane(x, H, W, E, O);
    /* padded row values a b c d at columns 2k..2k+3 are E[k] O[k] E[k+1] O[k+1]: d B = (a − c, b + c, c − b, b − d),
     * over the whole plane at once (the last column of each row is not a patch's) */
    float *u0 = u, *u1 = u0 + ne, *u2 = u1 + ne, *u3 = u2 + ne;
    SPAN(ne - 1,
         const al_vf a = L(E), b = L(O), c = L(E + 1), d = L(O + 1);
         S(u0, al_v_sub(a, c)); S(u1, al_v_add(b, c)); S(u2, al_v_sub(c, b)); S(u3, al_v_sub(b, d));)
    for (int ty = 0; ty < th; ty++) {
        const int64_t t = t0 + (int64_t)ty * tw;
        for (int j = 0; j < 4; j++) {
            const float *r0 = u + (size_t)j * ne + (size_t)(2 * ty) * tw1, *r1 = r0 + tw1, *r2 = r1 + tw1, *r3 = r2 + tw1;
            float *v0 = V + (0 * 4 + j) * ldv + t, *v1 = V + (1 * 4 + j) * ldv + t;
            float *v2 = V + (2 * 4 + j) * ldv + t, *v3 = V + (3 * 4 + j) * ldv + t;
            SPAN(tw,
                 const al_vf a = L(r0), b = L(r1), c = L(r2), d = L(r3);
                 S(v0, al_v_sub(a, c)); S(v1, al_v_add(b, c)); S(v2, al_v_sub(c, b)); S(v3, al_v_sub(b, d));)
        }
    }
}

static size_t plane_scratch(int H, int W) { return (size_t)6 * (H + 2) * (W / 2 + 1) + 16; }

/* The chunk's images [b0, b0 + n) into V (16, C, n·P) */
static void chunk_inputs(const float *x, int b0, int n, int C, int H, int W, float *V, float *xp)
{
    const int64_t P = (int64_t)(H / 2) * (W / 2), ldv = (int64_t)C * n * P;
    for (int bl = 0; bl < n; bl++)
        for (int c = 0; c < C; c++)
            input_transform(x + ((int64_t)(b0 + bl) * C + c) * H * W, H, W, V + (int64_t)c * n * P, ldv, bl * P, xp);
}

/* Per block: where its window starts in the (H, W) plane */
static void block_base(int32_t *base, int H, int W)
{
    const int th = H / 2, tw = W / 2;
    for (int ty = 0; ty < th; ty++)
        for (int tx = 0; tx < tw; tx++) base[ty * tw + tx] = 2 * ty * W + 2 * tx;
}

/* The sixteen rows ξ = 4i + j of a (16, ·) array from m, ld apart: m0 .. m15 */
#define ROWS16(T, m, ld) \
    T *restrict m##0 = (m), *restrict m##1 = (m) + (ld), *restrict m##2 = (m) + 2 * (ld), *restrict m##3 = (m) + 3 * (ld); \
    T *restrict m##4 = (m) + 4 * (ld), *restrict m##5 = (m) + 5 * (ld), *restrict m##6 = (m) + 6 * (ld); \
    T *restrict m##7 = (m) + 7 * (ld), *restrict m##8 = (m) + 8 * (ld), *restrict m##9 = (m) + 9 * (ld); \
    T *restrict m##10 = (m) + 10 * (ld), *restrict m##11 = (m) + 11 * (ld), *restrict m##12 = (m) + 12 * (ld); \
    T *restrict m##13 = (m) + 13 * (ld), *restrict m##14 = (m) + 14 * (ld), *restrict m##15 = (m) + 15 * (ld)

/* M (16, O, n·P) → out (B, O, P) pooled (+ ReLU), arg: Aᵀ m A + bias, the window's max. Straight-line over the
 * blocks p, so that the compiler runs it in vectors. */
__attribute__((noinline)) static void chunk_outputs(const float *M, const float *bias, int b0, int n, int O, int H, int W, const int32_t *base,
                          float *out, int32_t *arg, int relu)
{
    const int64_t P = (int64_t)(H / 2) * (W / 2), ld = (int64_t)O * n * P;
    for (int o = 0; o < O; o++) {
        const float bo = bias ? bias[o] : 0.f;
        for (int bl = 0; bl < n; bl++) {
            const float *m = M + (int64_t)o * n * P + bl * P;
            ROWS16(const float, m, ld);
            float *restrict y = out + ((int64_t)(b0 + bl) * O + o) * P;
            int32_t *restrict a = arg ? arg + ((int64_t)(b0 + bl) * O + o) * P : NULL;
#pragma GCC ivdep
            for (int64_t p = 0; p < P; p++) {
                /* Aᵀ m down the columns j (rows i = 0..3 are m[4i + j]), then along the rows */
                const float r00 = (m0[p] + m4[p]) + m8[p], r01 = (m1[p] + m5[p]) + m9[p];
                const float r02 = (m2[p] + m6[p]) + m10[p], r03 = (m3[p] + m7[p]) + m11[p];
                const float r10 = (m4[p] - m8[p]) - m12[p], r11 = (m5[p] - m9[p]) - m13[p];
                const float r12 = (m6[p] - m10[p]) - m14[p], r13 = (m7[p] - m11[p]) - m15[p];
                const float y00 = ((r00 + r01) + r02) + bo, y01 = ((r01 - r02) - r03) + bo;
                const float y10 = ((r10 + r11) + r12) + bo, y11 = ((r11 - r12) - r13) + bo;
                /* the pooling op's update: strictly greater wins (ties keep the first in row-major window
                 * order), a NaN wins once */
                float best = y00; int32_t off = 0;
                if (y01 > best || (y01 != y01 && best == best)) { best = y01; off = 1; }
                if (y10 > best || (y10 != y10 && best == best)) { best = y10; off = W; }
                if (y11 > best || (y11 != y11 && best == best)) { best = y11; off = W + 1; }
                y[p] = relu ? (best > 0.f ? best : 0.f) : best;
                if (a) a[p] = base[p] + off;
            }
        }
    }
}

/* What the forward and the backward share: the filters' transforms U (16, O, C), each thread's scratch
 * (V (16, C, T), M (16, O, T) and a plane's, T = CH·P), the blocks' window starts, the chunks. */
typedef struct {
    float *U, *scr;
    int32_t *base;
    size_t per;
    int64_t P, T;
    int nch, nthr;
} plan;

static void plan_free(plan *q) { free(q->U); free(q->scr); free(q->base); }

static int plan_make(plan *q, const float *w, int B, int C, int H, int W, int O)
{
    q->P = (int64_t)(H / 2) * (W / 2); q->T = (int64_t)CH * q->P;
    q->nch = (B + CH - 1) / CH; q->nthr = q->nch > 1 ? al_threads() : 1;
    q->per = (size_t)16 * q->T * (C + O) + plane_scratch(H, W);
    q->U = falloc((size_t)16 * O * C); q->scr = falloc(q->per * (size_t)q->nthr);
    q->base = malloc((size_t)q->P * sizeof(int32_t));
    if (!q->U || !q->scr || !q->base) { plan_free(q); return -1; }
    filter_transform(w, q->U, O, C);
    block_base(q->base, H, W);
    return 0;
}

/* Chunk ch: its images [b0, b0 + n), its n·P blocks, and the calling thread's scratch */
typedef struct { int b0, n, Tn; float *V, *M, *xp; } chunk;
static chunk chunk_of(const plan *q, int ch, int B, int C, int O)
{
    chunk k = {.b0 = ch * CH};
    k.n = B - k.b0 < CH ? B - k.b0 : CH;
    k.Tn = (int)(k.n * q->P);
    k.V = q->scr + q->per * (size_t)al__thread_id(); k.M = k.V + (size_t)16 * q->T * C; k.xp = k.M + (size_t)16 * q->T * O;
    return k;
}

int al__wino_conv_pool_fwd(const float *x, const float *w, const float *b, float *out, int32_t *arg, int relu,
                           int B, int C, int H, int W, int O)
{
    plan q;
    if (plan_make(&q, w, B, C, H, W, O)) return -1;
    AL_OMP("omp parallel for schedule(static) num_threads(q.nthr) if (q.nthr > 1)")
    for (int ch = 0; ch < q.nch; ch++) {
        const chunk c = chunk_of(&q, ch, B, C, O);
        const int b0 = c.b0, n = c.n, Tn = c.Tn;
        float *V = c.V, *M = c.M, *xp = c.xp;
        chunk_inputs(x, b0, n, C, H, W, V, xp);
        for (int k = 0; k < 16; k++)   /* M_ξ (O, T) = U_ξ · V_ξ */
            al_gemm_serial(0, 0, O, Tn, C, 1.0f, q.U + (int64_t)k * O * C, C, V + (int64_t)k * C * Tn, Tn, 0.0f,
                           M + (int64_t)k * O * Tn, Tn);
        chunk_outputs(M, b, b0, n, O, H, W, q.base, out, arg, relu);
    }
    plan_free(&q);
    return 0;
}

/* The pooled gradient (through the ReLU) at each window's max, as Ṁ (16, O, n·P) = A dY Aᵀ; db[o] = its sum.
 * dY has one nonzero: Ṁ's entries are 0 or ±gy. Straight-line over p, for the vectoriser. */
__attribute__((noinline)) static void chunk_grad_in(const float *g, const float *out, const int32_t *arg, const int32_t *base, int relu, int b0,
                          int n, int O, int W, int64_t P, float *M, float *db)
{
    const int64_t ld = (int64_t)O * n * P;
    for (int o = 0; o < O; o++) {
        float s = 0.f;
        for (int bl = 0; bl < n; bl++) {
            const int64_t at = ((int64_t)(b0 + bl) * O + o) * P;
            const float *restrict gg = g + at, *restrict oo = out + at;
            const int32_t *restrict aa = arg + at;
            float *m = M + (int64_t)o * n * P + bl * P;
            ROWS16(float, m, ld);
            for (int64_t p = 0; p < P; p++) s += relu && !(oo[p] > 0.f) ? 0.f : gg[p];   /* db, in block order */
            /* (the stores go to sixteen rows of one array: no two the same element, which ivdep tells the vectoriser) */
#pragma GCC ivdep
            for (int64_t p = 0; p < P; p++) {
                const float gv = gg[p], ov = oo[p];
                const float gy = relu ? (ov > 0.f ? gv : 0.f) : gv;
                const int32_t rel = aa[p] - base[p];
                const float d00 = rel == 0 ? gy : 0.f, d01 = rel == 1 ? gy : 0.f;
                const float d10 = rel == W ? gy : 0.f, d11 = rel == W + 1 ? gy : 0.f;
                /* A dY down the columns: rows (d0, d0 + d1, d0 − d1, −d1); then along each row the same */
                const float a0 = d00, b0_ = d01, a1 = d00 + d10, b1 = d01 + d11, a2 = d00 - d10, b2 = d01 - d11, a3 = -d10, b3 = -d11;
                m0[p] = a0; m1[p] = a0 + b0_; m2[p] = a0 - b0_; m3[p] = -b0_;
                m4[p] = a1; m5[p] = a1 + b1; m6[p] = a1 - b1; m7[p] = -b1;
                m8[p] = a2; m9[p] = a2 + b2; m10[p] = a2 - b2; m11[p] = -b2;
                m12[p] = a3; m13[p] = a3 + b3; m14[p] = a3 - b3; m15[p] = -b3;
            }
        }
        db[o] = s;
    }
}

/* dV (16, C, n·P) → dx of the chunk's images: B dV Bᵀ per block, the overlapping patches added in block
 * order into the padded plane (kept as its even and odd columns, so that a patch row's contributions are
 * spans), the padding cut off. fresh: dx written, else added to. xp: plane_scratch floats. */
static void chunk_grad_out(const float *dV, int b0, int n, int C, int H, int W, float *dx, int fresh, float *xp)
{
    const int Hp = H + 2, th = H / 2, tw = W / 2, tw1 = tw + 1, ne = Hp * tw1;
    const int64_t P = (int64_t)th * tw, ld = (int64_t)C * n * P;
    float *E = xp, *O = E + ne, *f = O + ne;   /* f: (4, tw) for one patch row i */
    for (int bl = 0; bl < n; bl++)
        for (int c = 0; c < C; c++) {
            const float *v = dV + (int64_t)c * n * P + bl * P;
            memset(E, 0, (size_t)2 * ne * sizeof(float));
            for (int ty = 0; ty < th; ty++) {
                const float *vt = v + (int64_t)ty * tw;
                for (int i = 0; i < 4; i++) {
                    float *f0 = f, *f1 = f + tw, *f2 = f1 + tw, *f3 = f2 + tw;
                    /* B dV: row i of (v0, v1 − v2 + v3, v1 + v2 − v0, −v3) down the columns j, then the same along j */
                    SPAN(tw,
                         al_vf e[4];
                         for (int j = 0; j < 4; j++) {
                             const al_vf v0 = L(vt + (0 * 4 + j) * ld), v1 = L(vt + (1 * 4 + j) * ld);
                             const al_vf v2 = L(vt + (2 * 4 + j) * ld), v3 = L(vt + (3 * 4 + j) * ld);
                             e[j] = i == 0 ? v0 : i == 1 ? al_v_add(al_v_sub(v1, v2), v3)
                                  : i == 2 ? al_v_sub(al_v_add(v1, v2), v0) : al_v_sub(al_v_zero(), v3);
                         }
                         S(f0, e[0]); S(f1, al_v_add(al_v_sub(e[1], e[2]), e[3]));
                         S(f2, al_v_sub(al_v_add(e[1], e[2]), e[0])); S(f3, al_v_sub(al_v_zero(), e[3]));)
                    /* padded row 2ty + i: columns 2tx + (0, 1, 2, 3) are E[tx], O[tx], E[tx + 1], O[tx + 1] */
                    float *er = E + (size_t)(2 * ty + i) * tw1, *orow = O + (size_t)(2 * ty + i) * tw1;
                    SPAN(tw, S(er, al_v_add(L(er), L(f0))); S(orow, al_v_add(L(orow), L(f1))););
                    SPAN(tw, S(er + 1, al_v_add(L(er + 1), L(f2))); S(orow + 1, al_v_add(L(orow + 1), L(f3))););
                }
            }
            float *d = dx + ((int64_t)(b0 + bl) * C + c) * H * W;
            for (int y = 0; y < H; y++) {   /* plane column x is padded column x + 1: O[x/2] (x even), E[(x+1)/2] (odd) */
                const float *restrict e = E + (size_t)(y + 1) * tw1, *restrict o = O + (size_t)(y + 1) * tw1;
                float *restrict dr = d + (size_t)y * W;
                if (fresh) for (int k = 0; k < tw; k++) { dr[2 * k] = o[k]; dr[2 * k + 1] = e[k + 1]; }
                else for (int k = 0; k < tw; k++) { dr[2 * k] += o[k]; dr[2 * k + 1] += e[k + 1]; }
            }
        }
}

/* dw[o][c] += Gᵀ dU G (3×3 from 4×4) */
static void filter_grad(const float *dU, float *dw, int O, int C)
{
    const int64_t OC = (int64_t)O * C;
    for (int64_t q = 0; q < OC; q++) {
        float z[3][4];   /* Gᵀ X: rows (x0 + ½x1 + ½x2, ½x1 − ½x2, ½x1 + ½x2 + x3) */
        for (int j = 0; j < 4; j++) {
            const float x0 = dU[(0 * 4 + j) * OC + q], x1 = dU[(1 * 4 + j) * OC + q];
            const float x2 = dU[(2 * 4 + j) * OC + q], x3 = dU[(3 * 4 + j) * OC + q];
            z[0][j] = x0 + 0.5f * (x1 + x2);
            z[1][j] = 0.5f * (x1 - x2);
            z[2][j] = 0.5f * (x1 + x2) + x3;
        }
        float *g = dw + q * 9;
        for (int k = 0; k < 3; k++) {
            g[k * 3 + 0] += z[k][0] + 0.5f * (z[k][1] + z[k][2]);
            g[k * 3 + 1] += 0.5f * (z[k][1] - z[k][2]);
            g[k * 3 + 2] += 0.5f * (z[k][1] + z[k][2]) + z[k][3];
        }
    }
}

int al__wino_conv_pool_bwd(const float *x, const float *w, const float *g, const float *out, const int32_t *arg, int relu,
                           float *dx, int dx_fresh, float *dw, float *db, int B, int C, int H, int W, int O)
{
    const int64_t OC = (int64_t)O * C;
    plan q;
    if (plan_make(&q, w, B, C, H, W, O)) return -1;
    float *dUc = dw ? falloc((size_t)q.nch * 16 * OC) : NULL, *dbc = falloc((size_t)q.nch * O);
    if ((dw && !dUc) || !dbc) { free(dUc); free(dbc); plan_free(&q); return -1; }
    AL_OMP("omp parallel for schedule(static) num_threads(q.nthr) if (q.nthr > 1)")
    for (int ch = 0; ch < q.nch; ch++) {
        const chunk c = chunk_of(&q, ch, B, C, O);
        const int b0 = c.b0, n = c.n, Tn = c.Tn;
        float *V = c.V, *M = c.M, *xp = c.xp;
        chunk_grad_in(g, out, arg, q.base, relu, b0, n, O, W, q.P, M, dbc + (int64_t)ch * O);
        if (dw) {
            chunk_inputs(x, b0, n, C, H, W, V, xp);
            for (int k = 0; k < 16; k++)   /* dU_ξ (O, C) = Ṁ_ξ · V_ξᵀ, this chunk's part */
                al_gemm_serial(0, 1, O, C, Tn, 1.0f, M + (int64_t)k * O * Tn, Tn, V + (int64_t)k * C * Tn, Tn, 0.0f,
                               dUc + ((int64_t)ch * 16 + k) * OC, C);
        }
        if (dx) {
            for (int k = 0; k < 16; k++)   /* dV_ξ (C, T) = U_ξᵀ · Ṁ_ξ, over V */
                al_gemm_serial(1, 0, C, Tn, O, 1.0f, q.U + (int64_t)k * OC, C, M + (int64_t)k * O * Tn, Tn, 0.0f,
                               V + (int64_t)k * C * Tn, Tn);
            chunk_grad_out(V, b0, n, C, H, W, dx, dx_fresh, xp);
        }
    }
    if (dw) {   /* the chunks' parts in chunk order */
        for (int ch = 1; ch < q.nch; ch++) {
            const float *s = dUc + (int64_t)ch * 16 * OC;
            for (int64_t i = 0; i < 16 * OC; i++) dUc[i] += s[i];
        }
        filter_grad(dUc, dw, O, C);
    }
    if (db)
        for (int o = 0; o < O; o++) {
            float s = 0.f;
            for (int ch = 0; ch < q.nch; ch++) s += dbc[(int64_t)ch * O + o];
            db[o] += s;
        }
    free(dUc); free(dbc); plan_free(&q);
    return 0;
}
