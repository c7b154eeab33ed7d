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
 * halves and differences); within 2e-5 of its largest magnitude (test_wino_* in tests/test_ops_conv.c). Deterministic:
 * images go in chunks of a fixed size (CH), each chunk's products and partial weight gradients computed
 * alone and added in chunk order, so any thread count gives the same bits.
 */
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"   /* al_threads */
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "winograd_impl.h"
#include "conv_impl.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CH 8   /* images per chunk: the unit of work of a thread, and of the order of the sums */
static int chunks(int B) { return (B + CH - 1) / CH; }

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

/* d B along padded row r (a row of E, O): the span's four vectors u[j] = (a − c, b + c, c − b, b − d), padded
 * columns 2k..2k+3 being E[k] O[k] E[k+1] O[k+1] */
#define ROW_U(u, E, O, r, tw1) do { \
        const al_vf a_ = L((E) + (size_t)(r) * (tw1)), b_ = L((O) + (size_t)(r) * (tw1)); \
        const al_vf c_ = L((E) + (size_t)(r) * (tw1) + 1), d_ = L((O) + (size_t)(r) * (tw1) + 1); \
        (u)[0] = al_v_sub(a_, c_); (u)[1] = al_v_add(b_, c_); (u)[2] = al_v_sub(c_, b_); (u)[3] = al_v_sub(b_, d_); \
    } while (0)

/* One split plane (E, O of the zero-padded (H + 2, W + 2) plane) into V[ξ][·] at column t0 (stride ldv between
 * ξ rows): the 4×4 patches at stride 2, Bᵀ d B — d B along each padded row, once (a row belongs to two patch
 * rows: the lower two are carried to the next patch row in registers), then Bᵀ down each patch row's four:
 * (r0 − r2, r1 + r2, r2 − r1, r1 − r3). */
static void input_transform(const float *E, const float *O, int H, int W, float *V, int64_t ldv, int64_t t0)
{
    const int th = H / 2, tw = W / 2, tw1 = tw + 1;
    SPAN(tw,
         al_vf r0[4], r1[4];
         ROW_U(r0, E, O, 0, tw1); ROW_U(r1, E, O, 1, tw1);
         for (int ty = 0; ty < th; ty++) {
             al_vf r2[4], r3[4];
             ROW_U(r2, E, O, 2 * ty + 2, tw1); ROW_U(r3, E, O, 2 * ty + 3, tw1);
             float *v = V + t0 + (int64_t)ty * tw;
             for (int j = 0; j < 4; j++) {
                 S(v + (0 * 4 + j) * ldv, al_v_sub(r0[j], r2[j])); S(v + (1 * 4 + j) * ldv, al_v_add(r1[j], r2[j]));
                 S(v + (2 * 4 + j) * ldv, al_v_sub(r2[j], r1[j])); S(v + (3 * 4 + j) * ldv, al_v_sub(r1[j], r3[j]));
                 r0[j] = r2[j]; r1[j] = r3[j];
             }
         })
}

/* Floats of a thread's plane scratch: one image's split planes (C, 2, H + 2, W/2 + 1) for the input
 * transform, or chunk_grad_out's accumulators (4, H, W/2 + 2) */
static size_t plane_scratch(int C, int H, int W)
{
    const size_t in = (size_t)2 * C * (H + 2) * (W / 2 + 1), out = (size_t)4 * H * (W / 2 + 2);
    return (in > out ? in : out) + 16;
}

/* The chunk's images [b0, b0 + n) into V (16, C, n·P): each image's planes split first, then transformed (the
 * split's scalar stores have left the store buffer by the time the vectors read them) */
static void chunk_inputs(const float *x, int b0, int n, int C, int H, int W, float *V, float *xp)
{
    const int64_t P = (int64_t)(H / 2) * (W / 2), ldv = (int64_t)C * n * P, ne = (int64_t)(H + 2) * (W / 2 + 1);
    for (int bl = 0; bl < n; bl++) {
        const float *xi = x + (int64_t)(b0 + bl) * C * H * W;
        for (int c = 0; c < C; c++) split_plane(xi + (int64_t)c * H * W, H, W, xp + 2 * c * ne, xp + (2 * c + 1) * ne);
        for (int c = 0; c < C; c++) input_transform(xp + 2 * c * ne, xp + (2 * c + 1) * ne, H, W, V + (int64_t)c * n * P, ldv, bl * P);
    }
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
static void chunk_outputs(const float *M, const float *bias, int b0, int n, int O, int H, int W, const int32_t *base,
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
 * (V (16, C, T), M (16, O, T) and a plane's, T = CH·P), the blocks' window starts, the chunks — in the calling
 * thread's conv scratch (kept between calls: a step allocates nothing), with `extra` floats for the caller. */
typedef struct {
    float *U, *scr, *extra;
    int32_t *base;
    size_t per;
    int64_t P, T;
    int nch, nthr;
} plan;

static int plan_make(plan *q, const float *w, int B, int C, int H, int W, int O, size_t extra)
{
    q->P = (int64_t)(H / 2) * (W / 2); q->T = (int64_t)CH * q->P;
    q->nch = chunks(B); q->nthr = q->nch > 1 ? al_threads() : 1;
    q->per = ((size_t)16 * q->T * (C + O) + plane_scratch(C, H, W) + 15) / 16 * 16;
    const size_t nu = ((size_t)16 * O * C + 15) / 16 * 16, nx = (extra + 15) / 16 * 16;
    float *s = al__conv_scratch(3, q->per * (size_t)q->nthr + nu + nx + (size_t)q->P);
    if (!s) return -1;
    q->scr = s; q->U = s + q->per * (size_t)q->nthr; q->extra = q->U + nu; q->base = (int32_t *)(q->extra + nx);
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
    if (plan_make(&q, w, B, C, H, W, O, 0)) return -1;
    AL_OMP("omp parallel for schedule(static) num_threads(q.nthr) if (q.nthr > 1)")
    for (int ch = 0; ch < q.nch; ch++) {
        const chunk k = chunk_of(&q, ch, B, C, O);
        chunk_inputs(x, k.b0, k.n, C, H, W, k.V, k.xp);
        for (int i = 0; i < 16; i++)   /* M_ξ (O, T) = U_ξ · V_ξ */
            al_gemm_serial(0, 0, O, k.Tn, C, 1.0f, q.U + (int64_t)i * O * C, C, k.V + (int64_t)i * C * k.Tn, k.Tn, 0.0f,
                           k.M + (int64_t)i * O * k.Tn, k.Tn);
        chunk_outputs(k.M, b, k.b0, k.n, O, H, W, q.base, out, arg, relu);
    }
    return 0;
}

/* The pooled gradient (through the ReLU) at each window's max, as Ṁ (16, O, n·P) = A dY Aᵀ; db[o] = its sum.
 * dY has one nonzero: Ṁ's entries are 0 or ±gy. Straight-line over p, for the vectoriser. */
static void chunk_grad_in(const float *g, const float *out, const int32_t *arg, const int32_t *base, int relu, int b0,
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
            /* db, in block order: its own loop (an in-order float sum would keep the loop below scalar) */
            for (int64_t p = 0; p < P; p++) s += relu && !(oo[p] > 0.f) ? 0.f : gg[p];
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

/* dV (16, C, n·P) → dx of the chunk's images: B dV Bᵀ per block (4×4, at stride 2 in the zero-padded plane),
 * the overlapping patches added, the padding cut off. fresh: dx written, else added to. xp: plane_scratch floats.
 * A block's column k of B dV Bᵀ lands on padded column 2tx + k; each padded row is kept as four accumulators of
 * the blocks' columns (A_k[tx], k = 0..3), so that every add is at the block's own position (no reload of a
 * just-stored, shifted vector), and a padded row's two overlapping patch rows meet in registers (the lower
 * half of block row ty is carried to ty + 1). The columns meet at the end: padded column 2m + 1 (plane column
 * 2m) is A_1[m] + A_3[m − 1], padded column 2m + 2 (plane column 2m + 1) is A_0[m + 1] + A_2[m]. */
static void chunk_grad_out(const float *dV, int b0, int n, int C, int H, int W, float *dx, int fresh, float *xp)
{
    const int th = H / 2, tw = W / 2, tw2 = tw + 2;   /* accumulator rows: a zero guard column each side */
    const int64_t P = (int64_t)th * tw, ld = (int64_t)C * n * P;
    float *A[4];   /* (H, tw2) each, for the plane rows 0..H−1 (padded rows 1..H; rows 0 and H+1 are cut) */
    for (int k = 0; k < 4; k++) A[k] = xp + (size_t)k * H * tw2;
    for (int k = 0; k < 4; k++)
        for (int y = 0; y < H; y++) A[k][(size_t)y * tw2] = A[k][(size_t)y * tw2 + tw + 1] = 0.f;
    for (int bl = 0; bl < n; bl++)
        for (int c = 0; c < C; c++) {
            const float *v = dV + (int64_t)c * n * P + bl * P;
            SPAN(tw,
                 al_vf carry[2][4];   /* padded rows 2ty, 2ty + 1: block row ty − 1's rows 2, 3 */
                 for (int k = 0; k < 4; k++) carry[0][k] = carry[1][k] = al_v_zero();
                 for (int ty = 0; ty <= th; ty++) {
                     al_vf f[4][4];   /* (B dV Bᵀ)[i][k] of the span's blocks in row ty */
                     if (ty < th) {
                         const float *vt = v + (int64_t)ty * tw;
                         al_vf e[4][4];   /* B dV down the rows: (v0, v1 − v2 + v3, v1 + v2 − v0, −v3) */
                         for (int j = 0; j < 4; j++) {
                             const al_vf v0 = L(vt + (0 * 4 + j) * ld), v1 = L(vt + (1 * 4 + j) * ld);
                             const al_vf v2 = L(vt + (2 * 4 + j) * ld), v3 = L(vt + (3 * 4 + j) * ld);
                             e[0][j] = v0; e[1][j] = al_v_add(al_v_sub(v1, v2), v3);
                             e[2][j] = al_v_sub(al_v_add(v1, v2), v0); e[3][j] = al_v_sub(al_v_zero(), v3);
                         }
                         for (int i = 0; i < 4; i++) {   /* … then along the columns */
                             f[i][0] = e[i][0]; f[i][1] = al_v_add(al_v_sub(e[i][1], e[i][2]), e[i][3]);
                             f[i][2] = al_v_sub(al_v_add(e[i][1], e[i][2]), e[i][0]); f[i][3] = al_v_sub(al_v_zero(), e[i][3]);
                         }
                     } else {
                         for (int i = 0; i < 4; i++) for (int k = 0; k < 4; k++) f[i][k] = al_v_zero();
                     }
                     for (int h = 0; h < 2; h++) {   /* padded rows 2ty + h, complete now: plane rows 2ty + h − 1 */
                         const int y = 2 * ty + h - 1;
                         if (y >= 0 && y < H)
                             for (int k = 0; k < 4; k++) S(A[k] + (size_t)y * tw2 + 1, al_v_add(carry[h][k], f[h][k]));
                         for (int k = 0; k < 4; k++) carry[h][k] = f[2 + h][k];
                     }
                 })
            float *d = dx + ((int64_t)(b0 + bl) * C + c) * H * W;
            for (int y = 0; y < H; y++) {
                const float *restrict a0 = A[0] + (size_t)y * tw2 + 1, *restrict a1 = A[1] + (size_t)y * tw2 + 1;
                const float *restrict a2 = A[2] + (size_t)y * tw2 + 1, *restrict a3 = A[3] + (size_t)y * tw2 + 1;
                float *restrict dr = d + (size_t)y * W;
                if (fresh) for (int m = 0; m < tw; m++) { dr[2 * m] = a1[m] + a3[m - 1]; dr[2 * m + 1] = a0[m + 1] + a2[m]; }
                else for (int m = 0; m < tw; m++) { dr[2 * m] += a1[m] + a3[m - 1]; dr[2 * m + 1] += a0[m + 1] + a2[m]; }
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
    const int nch = chunks(B);
    plan q;
    if (plan_make(&q, w, B, C, H, W, O, (size_t)nch * 16 * OC + (size_t)nch * O)) return -1;
    float *dUc = q.extra, *dbc = dUc + (size_t)nch * 16 * OC;
    AL_OMP("omp parallel for schedule(static) num_threads(q.nthr) if (q.nthr > 1)")
    for (int ch = 0; ch < q.nch; ch++) {
        const chunk k = chunk_of(&q, ch, B, C, O);
        chunk_grad_in(g, out, arg, q.base, relu, k.b0, k.n, O, W, q.P, k.M, dbc + (int64_t)ch * O);
        if (dw) {
            chunk_inputs(x, k.b0, k.n, C, H, W, k.V, k.xp);
            for (int i = 0; i < 16; i++)   /* dU_ξ (O, C) = Ṁ_ξ · V_ξᵀ, this chunk's part */
                al_gemm_serial(0, 1, O, C, k.Tn, 1.0f, k.M + (int64_t)i * O * k.Tn, k.Tn, k.V + (int64_t)i * C * k.Tn, k.Tn,
                               0.0f, dUc + ((int64_t)ch * 16 + i) * OC, C);
        }
        if (dx) {
            for (int i = 0; i < 16; i++)   /* dV_ξ (C, T) = U_ξᵀ · Ṁ_ξ, over V */
                al_gemm_serial(1, 0, C, k.Tn, O, 1.0f, q.U + (int64_t)i * OC, C, k.M + (int64_t)i * O * k.Tn, k.Tn, 0.0f,
                               k.V + (int64_t)i * C * k.Tn, k.Tn);
            chunk_grad_out(k.V, k.b0, k.n, C, H, W, dx, dx_fresh, k.xp);
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
    return 0;
}
