/* ops_conv.c — differentiable conv2d and max-pooling (NCHW) on the tape.
 * The compute lives in kernels_conv.c; this file checks shapes and records the backward. */
#include "attnlab/ops.h"
#include "ops_impl.h"
#include "attnlab/kernels.h"
#include "kernels/winograd_impl.h"
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#include "core/omp_impl.h"

/* ---------------- conv2d ---------------- */
typedef struct conv_node {
    al_tensor *x;      /* (B, C, H, W) */
    al_tensor *w;      /* (O, C, KH, KW) */
    al_tensor *b;      /* (O) or NULL */
    al_tensor *out;    /* (B, O, Ho, Wo) */
    int stride, pad;
} conv_node;

static void conv2d_backward(al_ctx *c, void *p)
{
    conv_node *n = p;
    if (!n->out->grad) return;   /* nothing downstream used the output */
    al_tensor *x = n->x, *w = n->w, *b = n->b;
    int fresh = 0;
    float *dx = x->requires_grad ? al_grad_for_write(c, x, &fresh) : NULL;   /* (B, C, H, W) */
    float *dw = w->requires_grad ? al_grad(c, w) : NULL;             /* (O, C, KH, KW) */
    float *db = b && b->requires_grad ? al_grad(c, b) : NULL;        /* (O) */
    if (!al_ok(c)) return;
    al_flops_add("conv2d", AL_FLOPS_BWD, 2.0 * (n->out->numel / w->shape[0]) * (double)w->numel * ((dx != NULL) + (dw != NULL)));
    al_conv2d_bwd_fresh(x->data, w->data, n->out->grad, dx, dw, db,
                        x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                        w->shape[0], w->shape[2], w->shape[3], n->stride, n->pad, fresh);
}

/* The shapes of a convolution, checked: 0, or -1 after al_fail. *ho, *wo: its output plane. */
static int conv_check(al_ctx *c, const char *op, al_tensor *x, al_tensor *w, al_tensor *b, int stride, int pad, int *ho, int *wo)
{
    char s1[64], s2[64], s3[64];
    if (x->ndim != 4 || w->ndim != 4)
        return al_fail(c, "%s: x %s must be (B, C, H, W) and w %s (O, C, KH, KW)", op,
                       al_shape_str(x, s1, sizeof s1), al_shape_str(w, s2, sizeof s2)), -1;
    if (x->shape[1] != w->shape[1])
        return al_fail(c, "%s: x %s has %d channels but w %s expects %d", op,
                       al_shape_str(x, s1, sizeof s1), x->shape[1], al_shape_str(w, s2, sizeof s2), w->shape[1]), -1;
    if (stride < 1 || pad < 0)
        return al_fail(c, "%s: stride %d must be >= 1 and pad %d >= 0", op, stride, pad), -1;
    const int C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int O = w->shape[0], KH = w->shape[2], KW = w->shape[3];
    if ((int64_t)H + 2 * (int64_t)pad < KH || (int64_t)W + 2 * (int64_t)pad < KW)
        return al_fail(c, "%s: kernel %dx%d of w %s does not fit input %s with padding %d", op,
                       KH, KW, al_shape_str(w, s2, sizeof s2), al_shape_str(x, s1, sizeof s1), pad), -1;
    if (b && (b->ndim != 1 || b->shape[0] != O))
        return al_fail(c, "%s: bias %s must be (%d) for w %s", op,
                       al_shape_str(b, s3, sizeof s3), O, al_shape_str(w, s2, sizeof s2)), -1;
    const int Ho = (H + 2 * pad - KH) / stride + 1, Wo = (W + 2 * pad - KW) / stride + 1;
    /* the kernels index with int sizes: keep the im2col matrix dimensions within int */
    if ((int64_t)C * KH * KW > (1 << 30) || (int64_t)Ho * Wo > (1 << 30) || (int64_t)x->shape[0] * Ho * Wo > (1 << 30))
        return al_fail(c, "%s: x %s with w %s is too large", op, al_shape_str(x, s1, sizeof s1), al_shape_str(w, s2, sizeof s2)), -1;
    *ho = Ho; *wo = Wo;
    return 0;
}

al_tensor *al_conv2d(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int stride, int pad)
{
    if (!x || !w || !al_ok(c)) return NULL;
    int Ho, Wo;
    if (conv_check(c, "conv2d", x, w, b, stride, pad, &Ho, &Wo)) return NULL;
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const int O = w->shape[0], KH = w->shape[2], KW = w->shape[3];

    al_tensor *out = al_new(c, 4, (int[]){B, O, Ho, Wo});            /* (B, O, Ho, Wo) */
    if (!out) return NULL;
    al_conv2d_fwd(x->data, w->data, b ? b->data : NULL, out->data, B, C, H, W, O, KH, KW, stride, pad);
    al_flops_add("conv2d", AL_FLOPS_FWD, 2.0 * B * Ho * Wo * (double)w->numel);
    if (al__any_grad(c, x, w, b)) {
        conv_node *n = al_arena_alloc(&c->arena, sizeof *n);
        if (!n) return al_fail(c, "conv2d: out of memory (arena)");
        n->x = x; n->w = w; n->b = b; n->out = out; n->stride = stride; n->pad = pad;
        out->requires_grad = 1;
        al_tape_push_out(c, conv2d_backward, n, out);
    }
    return out;
}

/* ---------------- max pooling ---------------- */
typedef struct pool_node {
    al_tensor *x;      /* (B, C, H, W) */
    al_tensor *out;    /* (B, C, Ho, Wo) */
    int32_t *arg;      /* (B, C, Ho, Wo) index of the max within its (H, W) plane */
    int k, stride;
} pool_node;

#ifdef __AVX512F__
/* The 2×2 stride-2 pooling's gradient into a fresh plane d (H, W): every element written once, dy
 * where it was its window's max and 0 elsewhere, 16 windows (32 columns of two rows) at a time —
 * no zeroing pass and no scattered adds. d = 0 + g as the scatter gives (a gradient of −0 lands as +0). */
static void pool2_grad_fresh(float *d, const float *g /* (Ho, Wo) */, const int32_t *a /* (Ho, Wo) */, int H, int W, int Ho, int Wo,
                             const float *r /* (Ho, Wo): a ReLU's output after the pooling (its gradient g·[r > 0]), or NULL */)
{
    const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    const __m512 zero = _mm512_setzero_ps();
    for (int oh = 0; oh < Ho; oh++) {
        float *d0 = d + (size_t)(2 * oh) * W, *d1 = d0 + W;
        const float *go = g + (size_t)oh * Wo;
        const int32_t *ao = a + (size_t)oh * Wo;
        for (int ow = 0; ow < Wo; ow += 16) {
            const int n = Wo - ow < 16 ? Wo - ow : 16, m2 = 2 * n;
            const __mmask16 kin = n == 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
            const __mmask16 klo = m2 >= 16 ? 0xFFFF : (__mmask16)((1u << m2) - 1);
            const __mmask16 khi = m2 >= 32 ? 0xFFFF : m2 <= 16 ? 0 : (__mmask16)((1u << (m2 - 16)) - 1);
            /* with r: the ReLU's gradient (r > 0 ? g : 0) first, then 0 + it, as the two ops give */
            const __mmask16 kg = r ? _mm512_mask_cmp_ps_mask(kin, _mm512_maskz_loadu_ps(kin, r + (size_t)oh * Wo + ow), zero, _CMP_GT_OQ) : kin;
            const __m512 gv = _mm512_add_ps(zero, _mm512_maskz_loadu_ps(kg, go + ow));
            const __m512i rel = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(kin, ao + ow),
                                                 _mm512_add_epi32(_mm512_set1_epi32(2 * oh * W + 2 * ow), lane2));
            const __m512 e0 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(rel, _mm512_setzero_si512()), gv);
            const __m512 o0 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(rel, _mm512_set1_epi32(1)), gv);
            const __m512 e1 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(rel, _mm512_set1_epi32(W)), gv);
            const __m512 o1 = _mm512_maskz_mov_ps(_mm512_cmpeq_epi32_mask(rel, _mm512_set1_epi32(W + 1)), gv);
            _mm512_mask_storeu_ps(d0 + 2 * ow, klo, _mm512_permutex2var_ps(e0, lo, o0));
            _mm512_mask_storeu_ps(d0 + 2 * ow + 16, khi, _mm512_permutex2var_ps(e0, hi, o0));
            _mm512_mask_storeu_ps(d1 + 2 * ow, klo, _mm512_permutex2var_ps(e1, lo, o1));
            _mm512_mask_storeu_ps(d1 + 2 * ow + 16, khi, _mm512_permutex2var_ps(e1, hi, o1));
        }
        if (W > 2 * Wo) for (int j = 2 * Wo; j < W; j++) d0[j] = d1[j] = 0.f;   /* columns no window covers */
    }
    if (H > 2 * Ho) memset(d + (size_t)(2 * Ho) * W, 0, (size_t)(H - 2 * Ho) * W * sizeof(float));
}
#endif

/* One (H, W) plane's gradient d from its pooled gradient g (Ho, Wo) and argmax a: fresh, d is
 * overwritten (0 + g at each max, 0 elsewhere), else added to. */
static void pool_grad_plane(float *d, const float *g, const int32_t *a, int H, int W, int Ho, int Wo, int k, int stride, int fresh,
                            const float *r /* as pool2_grad_fresh's */)
{
#ifdef __AVX512F__
    if (fresh && k == 2 && stride == 2) { pool2_grad_fresh(d, g, a, H, W, Ho, Wo, r); return; }
#else
    (void)k; (void)stride;
#endif
    if (fresh) memset(d, 0, (size_t)H * W * sizeof(float));
    if (r) for (int64_t i = 0; i < (int64_t)Ho * Wo; i++) d[a[i]] += r[i] > 0.f ? g[i] : 0.f;
    else for (int64_t i = 0; i < (int64_t)Ho * Wo; i++) d[a[i]] += g[i];
}

static void maxpool2d_backward(al_ctx *c, void *p)
{
    pool_node *n = p;
    if (!n->out->grad || !n->x->requires_grad) return;
    int fresh;
    float *dx = al_grad_for_write(c, n->x, &fresh);                  /* (B, C, H, W) */
    if (!dx) return;
    const float *dy = n->out->grad;                                  /* (B, C, Ho, Wo) */
    const int64_t planes = (int64_t)n->x->shape[0] * n->x->shape[1];
    const int64_t HW = (int64_t)n->x->shape[2] * n->x->shape[3];
    const int64_t P = (int64_t)n->out->shape[2] * n->out->shape[3];
    /* each plane is owned by one iteration; overlapping windows add in output order. A fresh
     * gradient is zeroed plane by plane by the thread that scatters into it (not serially first). */
    AL_OMP("omp parallel for schedule(static) if (planes * P >= 65536)")
    for (int64_t t = 0; t < planes; t++)
        pool_grad_plane(dx + t * HW, dy + t * P, n->arg + t * P, n->x->shape[2], n->x->shape[3],
                        n->out->shape[2], n->out->shape[3], n->k, n->stride, fresh, NULL);
}

/* max-pool update: v (at plane index i) replaces the running max only if strictly greater, so ties keep
 * the first max in row-major window order; a NaN wins once (it propagates). Branch-free. */
static inline void pool_upd(float v, int32_t i, float *best, int32_t *bi)
{
    float b = *best;
    int gt = (v > b) | ((v != v) & (b == b));
    *best = gt ? v : b;
    *bi = gt ? i : *bi;
}

/* One output row of max pooling: y[ow] = max over the k×k window at (h0, ow·stride) of the plane
 * xp (·, W); arg[ow] (if not NULL) = its index in the plane. The 2×2 stride-2 case is unrolled.
 * AVX2 may read whole vectors up to xend (the end of x) and, with spill, store whole vectors up to
 * 7 floats past the row (later rows of the same plane, written afterwards by the same thread). */
static void pool_row(const float *xp, int W, int h0, int Wo, int k, int stride, float *y, int32_t *arg,
                     const float *xend, int spill)
{
    (void)xend; (void)spill;   /* AVX2 only */
    const int32_t r0 = h0 * W;
    if (k == 2 && stride == 2) {   /* the CNN's pooling */
        const float *a = xp + r0, *b = a + W;
        int ow = 0;
#ifdef __AVX512F__
        /* 16 outputs at a time: de-interleave even/odd columns of both rows, then the same
         * compare-and-select sequence as pool_upd, lane-wise */
        const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
        const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
        for (; ow < Wo; ow += 16) {
            const int n = Wo - ow < 16 ? Wo - ow : 16;
            const int m2 = 2 * n;                                    /* input floats needed per row */
            const __mmask16 klo = m2 >= 16 ? 0xFFFF : (__mmask16)((1u << m2) - 1);
            const __mmask16 khi = m2 >= 32 ? 0xFFFF : m2 <= 16 ? 0 : (__mmask16)((1u << (m2 - 16)) - 1);
            const __mmask16 kout = n == 16 ? 0xFFFF : (__mmask16)((1u << n) - 1);
            __m512 alo = _mm512_maskz_loadu_ps(klo, a + 2 * ow), ahi = _mm512_maskz_loadu_ps(khi, a + 2 * ow + 16);
            __m512 blo = _mm512_maskz_loadu_ps(klo, b + 2 * ow), bhi = _mm512_maskz_loadu_ps(khi, b + 2 * ow + 16);
            __m512 v[4] = {_mm512_permutex2var_ps(alo, ev, ahi), _mm512_permutex2var_ps(alo, od, ahi),
                           _mm512_permutex2var_ps(blo, ev, bhi), _mm512_permutex2var_ps(blo, od, bhi)};
            const int offs[4] = {0, 1, W, W + 1};
            __m512 m = v[0];
            __m512i off = _mm512_setzero_si512();
            for (int q = 1; q < 4; q++) {
                __mmask16 gt = _mm512_cmp_ps_mask(v[q], m, _CMP_GT_OQ) |
                               (_mm512_cmp_ps_mask(v[q], v[q], _CMP_UNORD_Q) & _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q));
                m = _mm512_mask_mov_ps(m, gt, v[q]);
                off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32(offs[q]));
            }
            _mm512_mask_storeu_ps(y + ow, kout, m);
            if (arg) {
                __m512i idx = _mm512_add_epi32(_mm512_add_epi32(_mm512_set1_epi32(r0 + 2 * ow), lane2), off);
                _mm512_mask_storeu_epi32(arg + ow, kout, idx);
            }
        }
#elif defined(__AVX2__)
        /* 8 outputs at a time, as above: even/odd columns by shuffles, masked loads and stores at the
         * row's end, the compare-and-select of pool_upd lane-wise */
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), lane2 = _mm256_slli_epi32(lane, 1);
        for (; ow < Wo; ow += 8) {
            const int n = Wo - ow < 8 ? Wo - ow : 8;
            const int m2 = 2 * n;                                    /* input floats needed per row */
            const __m256i klo = _mm256_cmpgt_epi32(_mm256_set1_epi32(m2), lane);
            const __m256i khi = _mm256_cmpgt_epi32(_mm256_set1_epi32(m2 - 8), lane);
            const __m256i kout = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lane);
            /* masked loads and stores are slow on AMD: whole vectors wherever the memory is ours
             * (lanes past the row hold other values, and only lanes < n are stored) */
            const int rd = b + 2 * ow + 16 <= xend, full = n == 8 || spill;
            const __m256 alo = rd ? _mm256_loadu_ps(a + 2 * ow) : _mm256_maskload_ps(a + 2 * ow, klo);
            const __m256 ahi = rd ? _mm256_loadu_ps(a + 2 * ow + 8) : _mm256_maskload_ps(a + 2 * ow + 8, khi);
            const __m256 blo = rd ? _mm256_loadu_ps(b + 2 * ow) : _mm256_maskload_ps(b + 2 * ow, klo);
            const __m256 bhi = rd ? _mm256_loadu_ps(b + 2 * ow + 8) : _mm256_maskload_ps(b + 2 * ow + 8, khi);
#define AL_DEINT(lo, hi, sel) _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, sel)), 0xD8))
            const __m256 v[4] = {AL_DEINT(alo, ahi, 0x88), AL_DEINT(alo, ahi, 0xDD), AL_DEINT(blo, bhi, 0x88), AL_DEINT(blo, bhi, 0xDD)};
#undef AL_DEINT
            const int offs[4] = {0, 1, W, W + 1};
            __m256 m = v[0], off = _mm256_setzero_ps();
            for (int q = 1; q < 4; q++) {
                const __m256 gt = _mm256_or_ps(_mm256_cmp_ps(v[q], m, _CMP_GT_OQ),
                                               _mm256_and_ps(_mm256_cmp_ps(v[q], v[q], _CMP_UNORD_Q), _mm256_cmp_ps(m, m, _CMP_ORD_Q)));
                m = _mm256_blendv_ps(m, v[q], gt);
                off = _mm256_blendv_ps(off, _mm256_castsi256_ps(_mm256_set1_epi32(offs[q])), gt);
            }
            if (full) _mm256_storeu_ps(y + ow, m);
            else _mm256_maskstore_ps(y + ow, kout, m);
            if (arg) {
                const __m256i idx = _mm256_add_epi32(_mm256_add_epi32(_mm256_set1_epi32(r0 + 2 * ow), lane2), _mm256_castps_si256(off));
                if (full) _mm256_storeu_si256((__m256i *)(arg + ow), idx);
                else _mm256_maskstore_epi32((int *)(arg + ow), kout, idx);
            }
        }
#endif
        for (; ow < Wo; ow++) {
            const int cc = 2 * ow;
            float best = a[cc]; int32_t bi = r0 + cc;
            pool_upd(a[cc + 1], r0 + cc + 1, &best, &bi);
            pool_upd(b[cc], r0 + W + cc, &best, &bi);
            pool_upd(b[cc + 1], r0 + W + cc + 1, &best, &bi);
            y[ow] = best;
            if (arg) arg[ow] = bi;
        }
        return;
    }
    for (int ow = 0; ow < Wo; ow++) {
        const int32_t c0 = r0 + ow * stride;
        float best = xp[c0]; int32_t bi = c0;
        for (int dh = 0; dh < k; dh++) {
            const int32_t rr = c0 + dh * W;
            for (int dw = 0; dw < k; dw++) pool_upd(xp[rr + dw], rr + dw, &best, &bi);
        }
        y[ow] = best;
        if (arg) arg[ow] = bi;
    }
}

/* One plane xp (·, W) pooled into yp (Ho, Wo), its argmax into ap (or NULL); xend: pool_row's. */
static void pool_plane(const float *xp, int W, int Ho, int Wo, int k, int stride, float *yp, int32_t *ap, const float *xend)
{
    for (int oh = 0; oh < Ho; oh++)
        pool_row(xp, W, oh * stride, Wo, k, stride, yp + (size_t)oh * Wo, ap ? ap + (size_t)oh * Wo : NULL,
                 xend, (int64_t)(Ho - 1 - oh) * Wo >= 8);
}

al_tensor *al_maxpool2d(al_ctx *c, al_tensor *x, int k, int stride)
{
    if (!x || !al_ok(c)) return NULL;
    char s1[64];
    if (x->ndim != 4) return al_fail(c, "maxpool2d: x %s must be (B, C, H, W)", al_shape_str(x, s1, sizeof s1));
    if (k < 1 || stride < 1) return al_fail(c, "maxpool2d: window %d and stride %d must be >= 1", k, stride);
    const int B = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    if (H < k || W < k)
        return al_fail(c, "maxpool2d: window %dx%d larger than input %s", k, k, al_shape_str(x, s1, sizeof s1));
    if ((int64_t)H * W > INT32_MAX)
        return al_fail(c, "maxpool2d: plane of x %s too large for 32-bit indices", al_shape_str(x, s1, sizeof s1));
    const int Ho = (H - k) / stride + 1, Wo = (W - k) / stride + 1;
    al_tensor *out = al_new(c, 4, (int[]){B, C, Ho, Wo});            /* (B, C, Ho, Wo) */
    if (!out) return NULL;
    const int need = al__any_grad(c, x, NULL, NULL);
    int32_t *arg = need ? al_arena_alloc(&c->arena, (size_t)out->numel * sizeof(int32_t)) : NULL;
    if (need && !arg) return al_fail(c, "maxpool2d: out of memory (arena)");
    const int64_t planes = (int64_t)B * C, P = (int64_t)Ho * Wo;
    AL_OMP("omp parallel for schedule(static) if (out->numel * k * k >= 65536)")
    for (int64_t t = 0; t < planes; t++)
        pool_plane(x->data + t * H * W, W, Ho, Wo, k, stride, out->data + t * P, arg ? arg + t * P : NULL, x->data + x->numel);
    if (need) {
        pool_node *n = al_arena_alloc(&c->arena, sizeof *n);
        if (!n) return al_fail(c, "maxpool2d: out of memory (arena)");
        n->x = x; n->out = out; n->arg = arg; n->k = k; n->stride = stride;
        out->requires_grad = 1;
        al_tape_push_out(c, maxpool2d_backward, n, out);
    }
    return out;
}

/* ---------------- conv2d + 2×2 max pooling, fused ---------------- */
/* al_maxpool2d(al_conv2d(x, w, b, 1, pad), 2, 2) without the convolution's output tensor: each image's
 * output is pooled from a per-thread buffer right after its GEMM (al_conv2d_fwd_each), and in the
 * backward each image's dy is made there from the pooled gradient (al_conv2d_bwd_each). The same
 * operations on the same values as the two ops: the same bits (test_conv_maxpool2_fused). */
typedef struct convpool_node {
    al_tensor *x, *w, *b;
    al_tensor *out;    /* (B, O, Ho/2, Wo/2) */
    int32_t *arg;      /* (B, O, Ho/2, Wo/2): index of the max within its (Ho, Wo) plane */
    int pad, Ho, Wo;   /* the convolution's output plane */
    int relu;          /* out is relu(pooled) */
    int wino;          /* computed by the Winograd path (kernels/winograd.c) */
} convpool_node;

typedef struct {
    float *out; int32_t *arg; const float *g;
    int O, Ho, Wo, Hp, Wp;
    int relu;          /* a ReLU after the pooling: applied to out (forward), its mask read from out (backward) */
} convpool_io;

static void convpool_post(void *ctx, int bi, const float *yb /* (O, Ho, Wo) */)
{
    const convpool_io *io = ctx;
    const int64_t P = (int64_t)io->Ho * io->Wo, Pp = (int64_t)io->Hp * io->Wp;
    for (int o = 0; o < io->O; o++) {
        const int64_t at = ((int64_t)bi * io->O + o) * Pp;
        pool_plane(yb + o * P, io->Wo, io->Hp, io->Wp, 2, 2, io->out + at, io->arg ? io->arg + at : NULL, yb + io->O * P);
        if (io->relu) {   /* al_relu's x > 0 ? x : 0 (a NaN or −0 gives +0) */
            float *y = io->out + at;
            for (int64_t i = 0; i < Pp; i++) y[i] = y[i] > 0.f ? y[i] : 0.f;
        }
    }
}

static void convpool_pre(void *ctx, int bi, float *dyb /* (O, Ho, Wo) */)
{
    const convpool_io *io = ctx;
    const int64_t P = (int64_t)io->Ho * io->Wo, Pp = (int64_t)io->Hp * io->Wp;
    for (int o = 0; o < io->O; o++) {
        const int64_t at = ((int64_t)bi * io->O + o) * Pp;
        pool_grad_plane(dyb + o * P, io->g + at, io->arg + at, io->Ho, io->Wo, io->Hp, io->Wp, 2, 2, 1, io->relu ? io->out + at : NULL);
    }
}

static void convpool_backward(al_ctx *c, void *p)
{
    convpool_node *n = p;
    if (!n->out->grad) return;
    al_tensor *x = n->x, *w = n->w, *b = n->b;
    int fresh = 0;
    float *dx = x->requires_grad ? al_grad_for_write(c, x, &fresh) : NULL;   /* (B, C, H, W) */
    float *dw = w->requires_grad ? al_grad(c, w) : NULL;
    float *db = b && b->requires_grad ? al_grad(c, b) : NULL;
    if (!al_ok(c)) return;
    const int B = x->shape[0], O = w->shape[0];
    al_flops_add("conv2d", AL_FLOPS_BWD, 2.0 * B * n->Ho * n->Wo * (double)w->numel * ((dx != NULL) + (dw != NULL)));
    convpool_io io = {.out = n->out->data, .g = n->out->grad, .arg = n->arg, .relu = n->relu,
                      .O = O, .Ho = n->Ho, .Wo = n->Wo, .Hp = n->Ho / 2, .Wp = n->Wo / 2};
    if (n->wino ? al__wino_conv_pool_bwd(x->data, w->data, n->out->grad, n->out->data, n->arg, n->relu, dx, fresh, dw, db,
                                         B, x->shape[1], x->shape[2], x->shape[3], O)
                : al_conv2d_bwd_each(x->data, w->data, NULL, dx, dw, db, B, x->shape[1], x->shape[2], x->shape[3],
                                     O, w->shape[2], w->shape[3], 1, n->pad, fresh, convpool_pre, &io))
        al_fail(c, "conv2d_maxpool2: out of memory (backward scratch)");
}

static al_tensor *conv_maxpool2(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int pad, int relu)
{
    if (!x || !w || !al_ok(c)) return NULL;
    const char *op = relu ? "conv2d_maxpool2_relu" : "conv2d_maxpool2";
    int Ho, Wo;
    if (conv_check(c, op, x, w, b, 1, pad, &Ho, &Wo)) return NULL;
    char s1[64], s2[64];
    if (Ho < 2 || Wo < 2)
        return al_fail(c, "%s: the convolution of x %s with w %s gives %dx%d, smaller than the 2x2 pooling window",
                       op, al_shape_str(x, s1, sizeof s1), al_shape_str(w, s2, sizeof s2), Ho, Wo);
    const int B = x->shape[0], O = w->shape[0];
    al_tensor *out = al_new(c, 4, (int[]){B, O, Ho / 2, Wo / 2});   /* (B, O, Ho/2, Wo/2) */
    if (!out) return NULL;
    const int need = al__any_grad(c, x, w, b);
    int32_t *arg = need ? al_arena_alloc(&c->arena, (size_t)out->numel * sizeof(int32_t)) : NULL;
    if (need && !arg) return al_fail(c, "%s: out of memory (arena)", op);
    const int wino = al__wino_ok(x->shape[1], x->shape[2], x->shape[3], O, w->shape[2], w->shape[3], 1, pad);
    convpool_io io = {.out = out->data, .arg = arg, .O = O, .Ho = Ho, .Wo = Wo, .Hp = Ho / 2, .Wp = Wo / 2, .relu = relu};
    if (wino ? al__wino_conv_pool_fwd(x->data, w->data, b ? b->data : NULL, out->data, arg, relu, B, x->shape[1],
                                      x->shape[2], x->shape[3], O)
             : al_conv2d_fwd_each(x->data, w->data, b ? b->data : NULL, NULL, B, x->shape[1], x->shape[2], x->shape[3],
                                  O, w->shape[2], w->shape[3], 1, pad, convpool_post, &io))
        return al_fail(c, "%s: out of memory (scratch)", op);
    al_flops_add("conv2d", AL_FLOPS_FWD, 2.0 * B * Ho * Wo * (double)w->numel);
    if (need) {
        convpool_node *n = al_arena_alloc(&c->arena, sizeof *n);
        if (!n) return al_fail(c, "%s: out of memory (arena)", op);
        n->x = x; n->w = w; n->b = b; n->out = out; n->arg = arg; n->pad = pad; n->Ho = Ho; n->Wo = Wo; n->relu = relu;
        n->wino = wino;
        out->requires_grad = 1;
        al_tape_push_out(c, convpool_backward, n, out);
    }
    return out;
}

al_tensor *al_conv2d_maxpool2(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int pad)
{
    return conv_maxpool2(c, x, w, b, pad, 0);
}

al_tensor *al_conv2d_maxpool2_relu(al_ctx *c, al_tensor *x, al_tensor *w, al_tensor *b, int pad)
{
    return conv_maxpool2(c, x, w, b, pad, 1);
}
