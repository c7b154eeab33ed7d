/* kernels_conv.c — 2-D convolution (NCHW, weights (O,C,KH,KW), stride, zero padding).
 *
 * Fast path: im2col over a chunk of the batch, then one large GEMM per chunk.
 *   cols (K, N) with K = C·KH·KW and N = Bc·Ho·Wo (images side by side along N), so
 *   forward   ybuf (O, N) = w (O, K) · cols (K, N)         then scatter to y (Bc, O, Ho·Wo) + bias
 *   backward  dyT  (O, N) = dy gathered image by image
 *             dw  (O, K) += dyT · colsᵀ                   (one GEMM, the batch is its inner dimension)
 *             dcols (K, N) = wᵀ · dyT                      then col2im adds into dx
 * Parallelism: the GEMM is threaded by al_gemm; im2col/col2im/scatter are OpenMP loops in which
 * every iteration owns its writes, and every reduction (db, dw over chunks) runs in a fixed
 * order, so results are bitwise identical for the same thread count.
 * Scratch memory (cols and ybuf/dyT) is a per-thread buffer that only grows, so repeated calls
 * allocate nothing; the batch is processed in chunks that bound cols to AL_CONV_SCRATCH floats.
 * If the scratch cannot be allocated, the kernels fall back to the naive references.
 *
 * The _ref kernels are plain loops (forward accumulates in double) that the tests compare against.
 */
#include "attnlab/kernels.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* OpenMP pragmas through a macro so OPENMP=0 builds have no unknown-pragma warnings. */
#ifndef AL_OMP
#ifdef _OPENMP
#define AL_OMP(x) _Pragma(x)
#else
#define AL_OMP(x)
#endif
#endif

#define AL_CONV_SCRATCH ((size_t)1 << 22)   /* floats of cols per chunk (16 MB), at least one image */
#define AL_CONV_PAR_MIN 16384               /* below this many floats of work, stay serial */

static inline int conv_out(int in, int k, int stride, int pad) { return (in + 2 * pad - k) / stride + 1; }

/* Output positions o in [*lo, *hi) whose input index o·stride − pad + k lies in [0, in). */
static inline void valid_range(int k, int stride, int pad, int in, int outn, int *lo, int *hi)
{
    int a = pad - k, l = a > 0 ? (a + stride - 1) / stride : 0;
    int e = in - 1 + pad - k, h = e < 0 ? 0 : e / stride + 1;
    if (h > outn) h = outn;
    if (l > h) l = h;
    *lo = l; *hi = h;
}

/* ---------------- per-thread scratch ---------------- */
static _Thread_local float *tl_buf[2];
static _Thread_local size_t tl_cap[2];
static float *scratch(int i, size_t n)
{
    if (n > tl_cap[i]) {
        free(tl_buf[i]);
        size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
        tl_buf[i] = aligned_alloc(64, bytes);
        tl_cap[i] = tl_buf[i] ? n : 0;
    }
    return tl_buf[i];
}

/* ---------------- im2col / col2im over a chunk of nb images ---------------- */
/* x (nb, C, H, W) → cols (K, ldn) columns [0, nb·P); row r = (c, kh, kw), column b·P + oh·Wo + ow. */
static void im2col(const float *x, float *cols, size_t ldn, int nb, int C, int H, int W,
                   int KH, int KW, int stride, int pad, int Ho, int Wo)
{
    const int K = C * KH * KW, P = Ho * Wo;
    const int64_t tasks = (int64_t)K * nb;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)K * nb * P >= AL_CONV_PAR_MIN)")
    for (int64_t t = 0; t < tasks; t++) {
        int r = (int)(t / nb), b = (int)(t % nb);
        int c = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
        const float *xp = x + ((size_t)b * C + c) * H * W;       /* (H, W) */
        float *dst = cols + (size_t)r * ldn + (size_t)b * P;      /* (Ho, Wo) */
        int lo, hi; valid_range(kw, stride, pad, W, Wo, &lo, &hi);
        for (int oh = 0; oh < Ho; oh++) {
            int ih = oh * stride - pad + kh;
            float *d = dst + (size_t)oh * Wo;
            if (ih < 0 || ih >= H) { memset(d, 0, (size_t)Wo * sizeof(float)); continue; }
            const float *xr = xp + (size_t)ih * W;                 /* (W) */
            const int off = kw - pad;                              /* iw = ow·stride + off */
            for (int ow = 0; ow < lo; ow++) d[ow] = 0.f;
            if (stride == 1) {
                if (hi > lo) memcpy(d + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(float));
            } else {
                for (int ow = lo; ow < hi; ow++) d[ow] = xr[ow * stride + off];
            }
            for (int ow = hi; ow < Wo; ow++) d[ow] = 0.f;
        }
    }
}

/* dx (nb, C, H, W) += col2im(dcols (K, ldn)); each (b, c) plane is owned by one iteration and
 * sums its K·K contributions in a fixed order. */
static void col2im_add(const float *dcols, size_t ldn, float *dx, int nb, int C, int H, int W,
                       int KH, int KW, int stride, int pad, int Ho, int Wo)
{
    const int P = Ho * Wo;
    const int64_t tasks = (int64_t)nb * C;
    AL_OMP("omp parallel for schedule(static) if ((int64_t)C * KH * KW * nb * P >= AL_CONV_PAR_MIN)")
    for (int64_t t = 0; t < tasks; t++) {
        int b = (int)(t / C), c = (int)(t % C);
        float *dxp = dx + (size_t)t * H * W;                       /* (H, W) */
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                int r = (c * KH + kh) * KW + kw;
                const float *src = dcols + (size_t)r * ldn + (size_t)b * P;   /* (Ho, Wo) */
                int lo, hi; valid_range(kw, stride, pad, W, Wo, &lo, &hi);
                for (int oh = 0; oh < Ho; oh++) {
                    int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    float *xr = dxp + (size_t)ih * W;              /* (W) */
                    const float *s = src + (size_t)oh * Wo;
                    const int off = kw - pad;
                    if (stride == 1) {
                        float *xo = xr + lo + off;
                        const float *so = s + lo;
                        for (int i = 0; i < hi - lo; i++) xo[i] += so[i];
                    } else {
                        for (int ow = lo; ow < hi; ow++) xr[ow * stride + off] += s[ow];
                    }
                }
            }
    }
}

/* Images per chunk so that cols (K, nb·P) stays within the scratch budget. */
static int chunk_images(int B, int K, int P)
{
    size_t per = (size_t)K * P;
    size_t n = per ? AL_CONV_SCRATCH / per : (size_t)B;
    if (n < 1) n = 1;
    return n > (size_t)B ? B : (int)n;
}

/* ---------------- forward ---------------- */
void al_conv2d_fwd(const float *x, const float *w, const float *b, float *y,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    if (B <= 0 || O <= 0 || Ho <= 0 || Wo <= 0) return;
    const int K = C * KH * KW, P = Ho * Wo;
    const int Bc = chunk_images(B, K, P);
    float *cols = scratch(0, (size_t)K * Bc * P);                  /* (K, Bc·P) */
    float *ybuf = Bc > 1 ? scratch(1, (size_t)O * Bc * P) : y;     /* (O, Bc·P) */
    if (!cols || !ybuf) { al_conv2d_fwd_ref(x, w, b, y, B, C, H, W, O, KH, KW, stride, pad); return; }

    for (int b0 = 0; b0 < B; b0 += Bc) {
        const int nb = B - b0 < Bc ? B - b0 : Bc;
        const size_t N = (size_t)nb * P;
        const float *xc = x + (size_t)b0 * C * H * W;              /* (nb, C, H, W) */
        float *yc = y + (size_t)b0 * O * P;                        /* (nb, O, Ho, Wo) */
        im2col(xc, cols, N, nb, C, H, W, KH, KW, stride, pad, Ho, Wo);
        float *dst = nb > 1 ? ybuf : yc;   /* one image: (O, P) is already y's layout */
        al_gemm(0, 0, O, (int)N, K, 1.0f, w, K, cols, (int)N, 0.0f, dst, (int)N);
        const int64_t tasks = (int64_t)nb * O;
        AL_OMP("omp parallel for schedule(static) if ((int64_t)nb * O * P >= AL_CONV_PAR_MIN)")
        for (int64_t t = 0; t < tasks; t++) {
            int bi = (int)(t / O), o = (int)(t % O);
            float *yo = yc + (size_t)t * P;                        /* (P) */
            const float *src = dst + (size_t)o * N + (size_t)bi * P;
            float bo = b ? b[o] : 0.f;
            if (src != yo) for (int p = 0; p < P; p++) yo[p] = src[p] + bo;
            else if (b) for (int p = 0; p < P; p++) yo[p] += bo;
        }
    }
}

/* ---------------- backward ---------------- */
void al_conv2d_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    if (B <= 0 || O <= 0 || Ho <= 0 || Wo <= 0) return;
    const int K = C * KH * KW, P = Ho * Wo;

    if (db) {   /* fixed order: images, then positions; double accumulator */
        AL_OMP("omp parallel for schedule(static) if ((int64_t)B * O * P >= 4 * AL_CONV_PAR_MIN)")
        for (int o = 0; o < O; o++) {
            double s = 0;
            for (int bi = 0; bi < B; bi++) {
                const float *g = dy + ((size_t)bi * O + o) * P;
                float part = 0.f;
                for (int p = 0; p < P; p++) part += g[p];
                s += part;
            }
            db[o] += (float)s;
        }
    }
    if (!dx && !dw) return;

    const int Bc = chunk_images(B, K, P);
    float *cols = scratch(0, (size_t)K * Bc * P);                  /* (K, Bc·P) */
    float *dyT = Bc > 1 ? scratch(1, (size_t)O * Bc * P) : NULL;   /* (O, Bc·P) */
    if (!cols || (Bc > 1 && !dyT)) {
        al_conv2d_bwd_ref(x, w, dy, dx, dw, NULL, B, C, H, W, O, KH, KW, stride, pad);
        return;
    }
    for (int b0 = 0; b0 < B; b0 += Bc) {
        const int nb = B - b0 < Bc ? B - b0 : Bc;
        const size_t N = (size_t)nb * P;
        const float *xc = x + (size_t)b0 * C * H * W;              /* (nb, C, H, W) */
        const float *dyc = dy + (size_t)b0 * O * P;                /* (nb, O, Ho, Wo) */
        const float *g = dyc;                                      /* (O, N) */
        if (nb > 1) {
            const int64_t tasks = (int64_t)O * nb;
            AL_OMP("omp parallel for schedule(static) if ((int64_t)nb * O * P >= AL_CONV_PAR_MIN)")
            for (int64_t t = 0; t < tasks; t++) {
                int o = (int)(t / nb), bi = (int)(t % nb);
                memcpy(dyT + (size_t)o * N + (size_t)bi * P, dyc + ((size_t)bi * O + o) * P, (size_t)P * sizeof(float));
            }
            g = dyT;
        }
        if (dw) {
            im2col(xc, cols, N, nb, C, H, W, KH, KW, stride, pad, Ho, Wo);
            al_gemm(0, 1, O, K, (int)N, 1.0f, g, (int)N, cols, (int)N, 1.0f, dw, K);
        }
        if (dx) {
            al_gemm(1, 0, K, (int)N, O, 1.0f, w, K, g, (int)N, 0.0f, cols, (int)N);
            col2im_add(cols, N, dx + (size_t)b0 * C * H * W, nb, C, H, W, KH, KW, stride, pad, Ho, Wo);
        }
    }
}

/* ---------------- naive references ---------------- */
void al_conv2d_fwd_ref(const float *x, const float *w, const float *b, float *y,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    for (int n = 0; n < B; n++)
        for (int o = 0; o < O; o++)
            for (int oh = 0; oh < Ho; oh++)
                for (int ow = 0; ow < Wo; ow++) {
                    double s = b ? b[o] : 0.0;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                s += (double)x[(((size_t)n * C + c) * H + ih) * W + iw] *
                                     w[(((size_t)o * C + c) * KH + kh) * KW + kw];
                            }
                    y[(((size_t)n * O + o) * Ho + oh) * Wo + ow] = (float)s;
                }
}

void al_conv2d_bwd_ref(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    for (int n = 0; n < B; n++)
        for (int o = 0; o < O; o++)
            for (int oh = 0; oh < Ho; oh++)
                for (int ow = 0; ow < Wo; ow++) {
                    float g = dy[(((size_t)n * O + o) * Ho + oh) * Wo + ow];
                    if (db) db[o] += g;
                    for (int c = 0; c < C; c++)
                        for (int kh = 0; kh < KH; kh++)
                            for (int kw = 0; kw < KW; kw++) {
                                int ih = oh * stride - pad + kh, iw = ow * stride - pad + kw;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                                size_t xi = (((size_t)n * C + c) * H + ih) * W + iw;
                                size_t wi = (((size_t)o * C + c) * KH + kh) * KW + kw;
                                if (dw) dw[wi] += g * x[xi];
                                if (dx) dx[xi] += g * w[wi];
                            }
                }
}
