/* conv.c — 2-D convolution (NCHW, weights (O,C,KH,KW), stride, zero padding).
 *
 * Fast path: one image at a time, im2col into a buffer that stays in L2, then GEMMs on that image
 * (K = C·KH·KW, P = Ho·Wo):
 *   forward   cols (K, P) = im2col(x_b);   y_b (O, P) = w (O, K) · cols + b        (written in place)
 *   backward  dw: per group g of images, K >= 64:  dw_gᵀ (K, O) += cols · dy_bᵀ (P, O)   (dy_b
 *                 transposed, a small copy: a plain GEMM, 2.5× faster than the form below)
 *                                        K < 64:   dw_g (O, K) += dy_b (O, P) · colsᵀ
 *             then dw += Σ_g dw_g in group order
 *             dcols (K, P) = wᵀ · dy_b (O, P);   dx_b += col2im(dcols)
 *             db: per channel, 16 fixed lanes per image, double across images
 * A 1×1, stride-1, unpadded convolution uses x_b itself as cols.
 * Parallelism: OpenMP over images (forward) or over groups of images (backward), each calling the
 * GEMM serially; with one image/group, or under ~1M multiply-adds, the loop is serial and the
 * GEMM and im2col/col2im thread themselves when large enough. The number of groups depends only on
 * the shapes, so with al_gemm's thread-count-independent results the outputs are bitwise the same
 * for any thread count (checked in the tests to 1e-6; bitwise in practice).
 * Scratch: the calling thread owns growing buffers (one cols slice per OpenMP thread, the dw
 * partials), sized before the parallel loop, so repeated calls allocate nothing and no allocation
 * happens inside a parallel region. If they cannot be allocated, the naive references run instead.
 *
 * The _ref kernels are plain loops (forward accumulates in double) that the tests compare against.
 */
#include "attnlab/kernels.h"
#include "attnlab/tensor.h"   /* al_threads */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "kernels/conv_impl.h"
#include "kernels/conv_cols_impl.h"   /* conv_out; im2col, col2im and their forms */

#define AL_CONV_PARTIALS ((size_t)1 << 22) /* floats of dw partials (16 MB) at most */
#define AL_CONV_GROUPS 16                   /* dw groups of images at most */
#define AL_CONV_PAR_MACS ((int64_t)1 << 20) /* a convolution under ~1M multiply-adds runs on one thread */

int al__im2col_flat = 1;

/* ---------------- per-thread scratch ---------------- */
static _Thread_local float *tl_buf[AL_CONV_SCRATCH_SLOTS];
static _Thread_local size_t tl_cap[AL_CONV_SCRATCH_SLOTS];
float *al__conv_scratch(int i, size_t n)
{
    if (n > tl_cap[i]) {
        free(tl_buf[i]);
        size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
        tl_buf[i] = aligned_alloc(64, bytes);
        tl_cap[i] = tl_buf[i] ? n : 0;
    }
    return tl_buf[i];
}

/* ---------------- forward ---------------- */
void al_conv2d_fwd(const float *x, const float *w, const float *b, float *y,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    (void)al_conv2d_fwd_each(x, w, b, y, B, C, H, W, O, KH, KW, stride, pad, NULL, NULL);
}

int al_conv2d_fwd_each(const float *x, const float *w, const float *b, float *y,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad,
                       void (*post)(void *ctx, int bi, const float *yb), void *ctx)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    if (B <= 0 || O <= 0 || Ho <= 0 || Wo <= 0) return 0;
    const int K = C * KH * KW, P = Ho * Wo;
    const int direct = KH == 1 && KW == 1 && stride == 1 && pad == 0;   /* cols = x_b */
    /* over images when there are several and enough work; otherwise one image at a time, with the
     * im2col and the GEMM threaded themselves (each stays serial when small) */
    const int par = B > 1 && (int64_t)B * O * P * K >= AL_CONV_PAR_MACS;
    const int one = !par;
    const int nthr = par ? al_threads() : 1;
    const size_t ncols = direct ? 0 : (size_t)K * P, per = ncols + (post ? (size_t)O * P : 0);
    float *slots = per ? al__conv_scratch(0, (size_t)nthr * per) : NULL;     /* (nthr, K·P [+ O·P]) */
    if (per && !slots) {
        if (post) return -1;
        al_conv2d_fwd_ref(x, w, b, y, B, C, H, W, O, KH, KW, stride, pad);
        return 0;
    }
    same_plan spbuf;
    const same_plan *sp = direct ? NULL : same_plan_make(&spbuf, H, W, KH, KW, stride, pad, Ho, Wo);
    /* dynamic: each image writes only its own output, so results do not depend on which thread
     * ran it; on a shared machine a descheduled thread no longer holds up its half of the batch */
    AL_OMP("omp parallel for schedule(dynamic, 1) num_threads(nthr) if (par)")
    for (int bi = 0; bi < B; bi++) {
        const float *xb = x + (size_t)bi * C * H * W;              /* (C, H, W) */
        float *slot = slots ? slots + (size_t)al__thread_id() * per : NULL;
        float *yb = post ? slot + ncols : y + (size_t)bi * O * P;  /* (O, P) */
        const float *cols = xb;                                    /* (K, P) */
        if (!direct) {
            float *buf = slot;
            im2col(xb, buf, C, H, W, KH, KW, stride, pad, Ho, Wo, one, sp);
            cols = buf;
        }
        al_gemm(0, 0, O, P, K, 1.0f, w, K, cols, P, 0.0f, yb, P);   /* serial inside the image loop */
        if (b)
            for (int o = 0; o < O; o++) {
                float *yo = yb + (size_t)o * P, bo = b[o];
                for (int p = 0; p < P; p++) yo[p] += bo;
            }
        if (post) post(ctx, bi, yb);
    }
    return 0;
}

/* ---------------- backward ---------------- */
/* t (n, m) = transpose of a (m, n), in 16×16 tiles. */
static void transpose(const float *a, float *t, int m, int n)
{
    for (int i0 = 0; i0 < m; i0 += 16)
        for (int j0 = 0; j0 < n; j0 += 16) {
            const int i1 = i0 + 16 < m ? i0 + 16 : m, j1 = j0 + 16 < n ? j0 + 16 : n;
            for (int j = j0; j < j1; j++)
                for (int i = i0; i < i1; i++) t[(size_t)j * m + i] = a[(size_t)i * n + j];
        }
}

/* Σ g[0..n) in a fixed order that vectorises: 16 running lanes, then the lanes in order. */
static float sum_lanes(const float *g, int n)
{
    float acc[16] = {0};
    int p = 0;
    for (; p + 16 <= n; p += 16)
        for (int j = 0; j < 16; j++) acc[j] += g[p + j];
    for (int j = 0; p < n; p++, j++) acc[j] += g[p];
    float s = 0.f;
    for (int j = 0; j < 16; j++) s += acc[j];
    return s;
}

/* db += Σ_images Σ_positions dy in the order above, in a pass of its own. */
static void db_pass(const float *dy, float *db, int B, int O, int P)
{
    AL_OMP("omp parallel for schedule(static) if ((int64_t)B * O * P >= 2 * AL_PAR_MIN)")
    for (int o = 0; o < O; o++) {
        double s = 0;
        for (int bi = 0; bi < B; bi++) s += sum_lanes(dy + ((size_t)bi * O + o) * P, P);
        db[o] += (float)s;
    }
}

/* Groups of images for the dw partials: depends only on the shapes (never on the thread count). */
static int dw_groups(int B, int OK)
{
    int g = B < AL_CONV_GROUPS ? B : AL_CONV_GROUPS;
    while (g > 1 && (size_t)g * OK > AL_CONV_PARTIALS) g--;
    return g;
}

void al_conv2d_bwd(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                   int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad)
{
    al_conv2d_bwd_fresh(x, w, dy, dx, dw, db, B, C, H, W, O, KH, KW, stride, pad, 0);
}

void al_conv2d_bwd_fresh(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                         int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad, int dx_fresh)
{
    (void)al_conv2d_bwd_each(x, w, dy, dx, dw, db, B, C, H, W, O, KH, KW, stride, pad, dx_fresh, NULL, NULL);
}

int al_conv2d_bwd_each(const float *x, const float *w, const float *dy, float *dx, float *dw, float *db,
                       int B, int C, int H, int W, int O, int KH, int KW, int stride, int pad, int dx_fresh,
                       void (*pre)(void *ctx, int bi, float *dyb), void *ctx)
{
    const int Ho = conv_out(H, KH, stride, pad), Wo = conv_out(W, KW, stride, pad);
    if (B <= 0 || O <= 0 || Ho <= 0 || Wo <= 0) return 0;
    const int K = C * KH * KW, P = Ho * Wo;

    /* db: fixed order: images, then 16 lanes of positions; double across images. With dx or dw, each
     * image's sums are taken in the loop below while its dy_b is in cache (dbs (B, O)) and added in
     * image order after it; otherwise (or without the buffer) in a pass of their own. */
    float *dbs = db && (dx || dw || pre) ? al__conv_scratch(2, (size_t)B * O) : NULL;
    if (db && !dbs) {
        if (pre) return -1;
        db_pass(dy, db, B, O, P);
    }
    if (!dx && !dw && !(pre && db)) return 0;

    const int direct = KH == 1 && KW == 1 && stride == 1 && pad == 0;
    /* dw: ng groups of consecutive images (a number fixed by the shapes), group g accumulating into
     * its own partial, the partials added in group order at the end; dx alone: every image is its
     * own group. For K >= 64 the partials hold dwᵀ (K, O) += cols (K, P) · dy_bᵀ (P, O), a plain GEMM
     * on a small transposed copy of dy_b, measured 2.5× faster than dw (O, K) += dy_b · colsᵀ whose
     * transposed operand is the large cols; small K keeps that direct form. */
    const int ng = dw ? dw_groups(B, O * K) : B;
    const int trans = dw && K >= 64;
    /* groups in parallel when there are several and enough work; otherwise the GEMMs and
     * im2col/col2im thread themselves (each stays serial when small) */
    const int par = ng > 1 && (int64_t)B * O * P * K >= AL_CONV_PAR_MACS;
    const int one = !par;
    const int nthr = par ? al_threads() : 1;
    const size_t ncols = direct || !(dx || dw) ? 0 : (size_t)K * P, ndyT = trans ? (size_t)P * O : 0;
    const size_t per = ncols + ndyT + (pre ? (size_t)O * P : 0);  /* + dy_b when pre makes it */
    float *slots = per ? al__conv_scratch(0, (size_t)nthr * per) : NULL;      /* (nthr, K·P + P·O) */
    float *part = dw ? al__conv_scratch(1, (size_t)ng * O * K) : NULL;        /* (ng, O, K) or (ng, K, O) */
    if ((per && !slots) || (dw && !part)) {
        if (pre) return -1;
        if (dbs) db_pass(dy, db, B, O, P);
        if (dx && dx_fresh) memset(dx, 0, (size_t)B * C * H * W * sizeof(float));
        al_conv2d_bwd_ref(x, w, dy, dx, dw, NULL, B, C, H, W, O, KH, KW, stride, pad);
        return 0;
    }
    same_plan spbuf;
    const same_plan *sp = direct ? NULL : same_plan_make(&spbuf, H, W, KH, KW, stride, pad, Ho, Wo);
    /* dynamic: group g owns its partial and its images' dx, whichever thread runs it (deterministic) */
    AL_OMP("omp parallel for schedule(dynamic, 1) num_threads(nthr) if (par)")
    for (int g = 0; g < ng; g++) {
        const int b0 = (int)((int64_t)B * g / ng), b1 = (int)((int64_t)B * (g + 1) / ng);
        float *dwg = dw ? part + (size_t)g * O * K : NULL;         /* (O, K) or (K, O) */
        float *buf = slots ? slots + (size_t)al__thread_id() * per : NULL;   /* (K, P) */
        float *dyT = trans ? buf + ncols : NULL;                   /* (P, O) */
        float *dys = pre ? buf + ncols + ndyT : NULL;              /* (O, P) */
        for (int bi = b0; bi < b1; bi++) {
            const float *xb = x + (size_t)bi * C * H * W;          /* (C, H, W) */
            const float *dyb = dy ? dy + (size_t)bi * O * P : dys; /* (O, P) */
            if (pre) pre(ctx, bi, dys);
            if (dbs) for (int o = 0; o < O; o++) dbs[(size_t)bi * O + o] = sum_lanes(dyb + (size_t)o * P, P);
            if (dwg) {
                const float *cols = xb;
                if (!direct) { im2col(xb, buf, C, H, W, KH, KW, stride, pad, Ho, Wo, one, sp); cols = buf; }
                const float beta = bi == b0 ? 0.0f : 1.0f;
                if (trans) {
                    transpose(dyb, dyT, O, P);
                    al_gemm(0, 0, K, O, P, 1.0f, cols, P, dyT, O, beta, dwg, O);
                } else {
                    al_gemm(0, 1, O, K, P, 1.0f, dyb, P, cols, P, beta, dwg, K);
                }
            }
            if (dx) {
                float *dxb = dx + (size_t)bi * C * H * W;          /* (C, H, W) */
                if (direct) {
                    al_gemm(1, 0, K, P, O, 1.0f, w, K, dyb, P, dx_fresh ? 0.0f : 1.0f, dxb, P);
                } else {
                    al_gemm(1, 0, K, P, O, 1.0f, w, K, dyb, P, 0.0f, buf, P);
#if defined(__AVX512F__) || defined(__AVX2__)
                    if (sp) col2im_same_flat(buf, dxb, C, sp, one, dx_fresh);
                    else
#endif
#if defined(__AVX512F__)   /* an AVX2 twin of the row-wise kernel (blends of masked loads) measured 2 % slower than col2im_add */
                    if (stride == 1 && KW <= AL_C2I_KW) col2im_add_s1(buf, dxb, C, H, W, KH, KW, pad, Ho, Wo, one, dx_fresh);
                    else
#endif
                    {
                        if (dx_fresh) memset(dxb, 0, (size_t)C * H * W * sizeof(float));   /* by the image's thread */
                        col2im_add(buf, dxb, C, H, W, KH, KW, stride, pad, Ho, Wo, one);
                    }
                }
            }
        }
    }
    if (dbs)
        for (int o = 0; o < O; o++) {
            double t = 0;
            for (int bi = 0; bi < B; bi++) t += dbs[(size_t)bi * O + o];
            db[o] += (float)t;
        }
    if (!dw) return 0;
    /* dw += Σ_g part_g in group order (transposing back when the partials hold dwᵀ): each element's sum
     * starts at 0 and adds the groups in order, a block of contiguous elements of a partial row at a time */
    const int64_t n = (int64_t)O * K;
    const int rows = trans ? K : O, cols = trans ? O : K;   /* the partials' layout */
    AL_OMP("omp parallel for schedule(static) if (n * ng >= AL_PAR_MIN / 2)")
    for (int r = 0; r < rows; r++)
        for (int j0 = 0; j0 < cols; j0 += 256) {
            const int nj = cols - j0 < 256 ? cols - j0 : 256;
            float s[256];
            for (int j = 0; j < nj; j++) s[j] = 0.f;
            for (int g = 0; g < ng; g++) {
                const float *pg = part + (size_t)g * n + (size_t)r * cols + j0;
                for (int j = 0; j < nj; j++) s[j] += pg[j];
            }
            if (trans) for (int j = 0; j < nj; j++) dw[(size_t)(j0 + j) * K + r] += s[j];
            else for (int j = 0; j < nj; j++) dw[(size_t)r * K + j0 + j] += s[j];
        }
    return 0;
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
