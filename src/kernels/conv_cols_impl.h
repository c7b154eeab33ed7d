/* conv_cols_impl.h — im2col and col2im of one image for the convolutions of kernels/conv.c (internal;
 * included by conv.c only, whose drivers call them once per image: they stay in its translation unit
 * and inline there as before): the row-wise forms of any stride and padding, the flat forms of a
 * stride-1 'same' convolution (masked loads and adds on the flat plane, AVX-512 and AVX2, with the
 * shape's masks in a same_plan), AVX-512's row-wise stride-1 col2im, and the short-row helpers.
 */
#ifndef ATTNLAB_CONV_COLS_IMPL_H
#define ATTNLAB_CONV_COLS_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "core/omp_impl.h"
#include "core/simd_impl.h"
#include "kernels/conv_impl.h"

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

/* Short-row copy / zero / add (rows of an output image are often 7-28 floats: library calls and
 * vector-loop epilogues would dominate): whole vectors, then the tail — one masked operation on
 * AVX-512, a scalar loop on AVX2 (AMD's 256-bit masked stores cost more than the few scalar ones). */
#if defined(AL_SIMD_AVX2)
#define ROW_TAIL_SCALAR 1
#else
#define ROW_TAIL_SCALAR 0
#endif
static inline void row_copy(float *d /* (n) */, const float *s /* (n) */, int n)
{
    for (; n >= AL_VL; n -= AL_VL, d += AL_VL, s += AL_VL) al_v_store(d, al_v_load(s));
    if (ROW_TAIL_SCALAR) { for (int i = 0; i < n; i++) d[i] = s[i]; }
    else if (n > 0) { const al_vm m = al_v_mask(n); al_v_storem(m, d, al_v_loadm(m, s)); }
}
static inline void row_zero(float *d /* (n) */, int n)
{
    for (; n >= AL_VL; n -= AL_VL, d += AL_VL) al_v_store(d, al_v_zero());
    if (ROW_TAIL_SCALAR) { for (int i = 0; i < n; i++) d[i] = 0.f; }
    else if (n > 0) al_v_storem(al_v_mask(n), d, al_v_zero());
}
static inline void row_add(float *d /* (n) */, const float *s /* (n) */, int n)
{
    for (; n >= AL_VL; n -= AL_VL, d += AL_VL, s += AL_VL) al_v_store(d, al_v_add(al_v_load(d), al_v_load(s)));
    if (ROW_TAIL_SCALAR) { for (int i = 0; i < n; i++) d[i] += s[i]; }
    else if (n > 0) {
        const al_vm m = al_v_mask(n);
        al_v_storem(m, d, al_v_add(al_v_loadm(m, d), al_v_loadm(m, s)));
    }
}

/* One stride-1 im2col row: d[ow] = xr[ow + off] for ow in [lo, hi), 0 elsewhere in [0, Wo).
 * AVX-512 (raw intrinsics: a lane permute, which core/simd_impl.h does not express): per 16 lanes
 * one masked load of the valid run, one lane shift, one store; the store may
 * run up to 15 floats past the row when `spill` (the caller guarantees those floats are later rows
 * of the same (c, kh, kw) block, written afterwards by the same thread), which avoids a slow masked
 * store on most rows. */
static inline void im2col_row_s1(float *d, const float *xr, int off, int lo, int hi, int Wo, int spill)
{
#ifdef __AVX512F__
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int j0 = 0; j0 < Wo; j0 += 16) {
        const int a = lo > j0 ? lo : j0, e = hi < j0 + 16 ? hi : j0 + 16;   /* valid [a, e) */
        __m512 v = _mm512_setzero_ps();
        if (e > a) {
            const int n = e - a, sh = a - j0;
            __m512 raw = _mm512_maskz_loadu_ps((__mmask16)((1u << n) - 1), xr + a + off);
            __mmask16 keep = (__mmask16)(((1u << n) - 1) << sh);
            v = _mm512_maskz_permutexvar_ps(keep, _mm512_sub_epi32(iota, _mm512_set1_epi32(sh)), raw);
        }
        const int left = Wo - j0;
        if (left >= 16 || spill) _mm512_storeu_ps(d + j0, v);
        else _mm512_mask_storeu_ps(d + j0, (__mmask16)((1u << left) - 1), v);
    }
#elif defined(__AVX2__)
    /* 8 lanes: one masked load at the shifted address (lanes outside [lo, hi) read nothing and
     * give 0), one store (spilling up to 7 floats under the same guarantee) */
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i vlo = _mm256_set1_epi32(lo - 1), vhi = _mm256_set1_epi32(hi);
    for (int j0 = 0; j0 < Wo; j0 += 8) {
        const __m256i col = _mm256_add_epi32(iota, _mm256_set1_epi32(j0));
        const __m256i ok = _mm256_and_si256(_mm256_cmpgt_epi32(col, vlo), _mm256_cmpgt_epi32(vhi, col));
        const __m256 v = _mm256_maskload_ps(xr + off + j0, ok);
        const int left = Wo - j0;
        if (left >= 8 || spill) _mm256_storeu_ps(d + j0, v);
        else _mm256_maskstore_ps(d + j0, _mm256_cmpgt_epi32(_mm256_set1_epi32(left), iota), v);
    }
#else
    (void)spill;
    row_zero(d, lo);
    row_copy(d + lo, xr + lo + off, hi - lo);
    row_zero(d + hi, Wo - hi);
#endif
}

/* A stride-1 'same' convolution (KH = KW = 2·pad + 1, Ho = H, Wo = W): row (c, kh, kw) of cols is the
 * plane shifted by s = (kh − pad)·W + (kw − pad), zero where the shift leaves the image, and which
 * positions are kept depends on (kh, kw) alone. A same_plan holds those masks for one call's shape,
 * made once by the calling thread and read by every image: rowm[k] / colm[k] mark the positions p of
 * the plane whose row / column stays inside when shifted by k − pad (16 positions per block). */
#define SAME_KMAX 9     /* kernel sizes the flat forms take */
#define SAME_VMAX 512   /* and planes of at most 512 blocks of 16 positions (8 192 positions) */
typedef struct same_plan {
    int H, W, KH, pad, nv;
    unsigned tail;     /* the last block's positions */
    uint16_t rowm[SAME_KMAX][SAME_VMAX], colm[SAME_KMAX][SAME_VMAX];
} same_plan;

#if defined(__AVX512F__) || defined(__AVX2__)
/* m[v] |= the bits of positions [lo, hi) that fall in block v. */
static void mask_range(uint16_t *m, int lo, int hi)
{
    for (int p = lo; p < hi;) {
        const int v = p >> 4, a = p & 15, e = hi - (v << 4) < 16 ? hi - (v << 4) : 16;
        m[v] |= (uint16_t)(((1u << e) - 1) & ~((1u << a) - 1));
        p = (v + 1) << 4;
    }
}
#endif

/* The plan of a call's shape, or NULL when the flat forms do not take it (another shape, a plane too
 * large, a build without AVX-512 or AVX2, or al__im2col_flat off): the row-wise forms run then. */
static const same_plan *same_plan_make(same_plan *sp, int H, int W, int KH, int KW, int stride, int pad, int Ho, int Wo)
{
#if defined(__AVX512F__) || defined(__AVX2__)
    const int nv = (H * W + 15) >> 4;
    if (!al__im2col_flat || stride != 1 || Ho != H || Wo != W || KH != KW || KH != 2 * pad + 1 ||
        KH > SAME_KMAX || nv > SAME_VMAX)
        return NULL;
    const int P = H * W;
    *sp = (same_plan){.H = H, .W = W, .KH = KH, .pad = pad, .nv = nv, .tail = (P & 15) ? (1u << (P & 15)) - 1 : 0xffffu};
    for (int k = 0; k < KH; k++) {
        const int d = k - pad;
        memset(sp->rowm[k], 0, (size_t)nv * sizeof(uint16_t));
        memset(sp->colm[k], 0, (size_t)nv * sizeof(uint16_t));
        const int r0 = d < 0 ? -d : 0, r1 = H - d < H ? H - d : H;      /* rows oh with oh + d in [0, H) */
        if (r1 > r0) mask_range(sp->rowm[k], r0 * W, r1 * W);
        const int c0 = d < 0 ? -d : 0, c1 = W - d < W ? W - d : W;      /* columns likewise */
        if (c1 > c0) for (int oh = 0; oh < H; oh++) mask_range(sp->colm[k], oh * W + c0, oh * W + c1);
    }
    return sp;
#else
    (void)sp; (void)H; (void)W; (void)KH; (void)KW; (void)stride; (void)pad; (void)Ho; (void)Wo;
    return NULL;
#endif
}

#if defined(__AVX512F__) || defined(__AVX2__)
/* im2col of a 'same' convolution: each row is nv masked loads of the flat plane and stores (lanes
 * outside the mask are neither read nor kept: a lane is kept only if its source lies in the plane),
 * with no libc calls and no per-row edges: the same values (copies and +0) as the row-wise form. */
static void im2col_same_flat(const float *x, float *cols, int C, const same_plan *sp, int par)
{
    const int W = sp->W, KH = sp->KH, pad = sp->pad, P = sp->H * W, nv = sp->nv, K = C * KH * KH;
    (void)par;
    AL_OMP("omp parallel for schedule(static) if (par && (int64_t)K * P >= AL_PAR_MIN / 2)")
    for (int r = 0; r < K; r++) {
        const int c = r / (KH * KH), kh = (r / KH) % KH, kw = r % KH;
        const ptrdiff_t s = (ptrdiff_t)(kh - pad) * W + (kw - pad);
        const float *xp = x + (size_t)c * P;                       /* (H, W) */
        float *dst = cols + (size_t)r * P;                         /* (H, W) */
        const uint16_t *rm = sp->rowm[kh], *cm = sp->colm[kw];
#if defined(__AVX512F__)
        int v = 0;
        for (; v < nv - 1; v++)
            _mm512_storeu_ps(dst + 16 * v, _mm512_maskz_loadu_ps((__mmask16)(rm[v] & cm[v]), xp + 16 * v + s));
        _mm512_mask_storeu_ps(dst + 16 * v, (__mmask16)sp->tail, _mm512_maskz_loadu_ps((__mmask16)(rm[v] & cm[v]), xp + 16 * v + s));
#else
        /* AVX2: 8 lanes; the last block's lanes past P are stored one by one (AMD's 256-bit masked
         * stores cost more than a few scalar ones) */
        for (int v = 0; v < nv; v++) {
            const unsigned m = (unsigned)(rm[v] & cm[v]);
            const __m256 lo = _mm256_maskload_ps(xp + 16 * v + s, al_v_mask_bits(m & 0xffu));
            const __m256 hi = _mm256_maskload_ps(xp + 16 * v + 8 + s, al_v_mask_bits(m >> 8));
            if (v < nv - 1 || sp->tail == 0xffffu) {
                _mm256_storeu_ps(dst + 16 * v, lo);
                _mm256_storeu_ps(dst + 16 * v + 8, hi);
            } else {
                float t[16];
                _mm256_storeu_ps(t, lo);
                _mm256_storeu_ps(t + 8, hi);
                for (int i = 16 * v; i < P; i++) dst[i] = t[i - 16 * v];
            }
        }
#endif
    }
}
#endif

/* x (C, H, W) → cols (K, P); row r = (c, kh, kw), column oh·Wo + ow. Parallel over rows if par. */
static void im2col(const float *x, float *cols, int C, int H, int W,
                   int KH, int KW, int stride, int pad, int Ho, int Wo, int par, const same_plan *sp /* or NULL */)
{
    const int K = C * KH * KW, P = Ho * Wo;
    (void)par;
#if defined(__AVX512F__) || defined(__AVX2__)
    if (sp) { im2col_same_flat(x, cols, C, sp, par); return; }
#else
    (void)sp;
#endif
    AL_OMP("omp parallel for schedule(static) if (par && (int64_t)K * P >= AL_PAR_MIN / 2)")
    for (int r = 0; r < K; r++) {
        int c = r / (KH * KW), kh = (r / KW) % KH, kw = r % KW;
        const float *xp = x + (size_t)c * H * W;                  /* (H, W) */
        float *dst = cols + (size_t)r * P;                         /* (Ho, Wo) */
        if (stride == 1 && Ho == H && Wo == W) {
            /* 'same' stride-1 conv: the block is the plane shifted by (dh, dw) with zeros where the
             * shift leaves it, i.e. one contiguous copy of the rows that stay inside, then the
             * columns that wrapped round to the neighbouring row set to zero (no masked row ends) */
            const int dh = kh - pad, dw = kw - pad;
            int oh0 = dh < 0 ? -dh : 0, oh1 = H - dh < Ho ? H - dh : Ho;
            if (oh0 > Ho) oh0 = Ho;
            if (oh1 < oh0) oh1 = oh0;
            const int64_t a = (int64_t)oh0 * W + (dw < 0 ? -dw : 0), e = (int64_t)oh1 * W - (dw > 0 ? dw : 0);
            memset(dst, 0, (size_t)oh0 * W * sizeof(float));
            if (e > a) memcpy(dst + a, xp + a + (int64_t)dh * W + dw, (size_t)(e - a) * sizeof(float));
            const int zlo = dw < 0 ? (-dw < W ? -dw : W) : 0, zhi = dw > 0 ? (W - dw > 0 ? W - dw : 0) : W;
            for (int oh = oh0; oh < oh1; oh++) {
                float *d = dst + (size_t)oh * W;
                for (int j = 0; j < zlo; j++) d[j] = 0.f;
                for (int j = zhi; j < W; j++) d[j] = 0.f;
            }
            memset(dst + (size_t)oh1 * W, 0, (size_t)(Ho - oh1) * W * sizeof(float));
            continue;
        }
        int lo, hi; valid_range(kw, stride, pad, W, Wo, &lo, &hi);
        for (int oh = 0; oh < Ho; oh++) {
            int ih = oh * stride - pad + kh;
            float *d = dst + (size_t)oh * Wo;
            const int off = kw - pad;                              /* iw = ow·stride + off */
            if (stride == 1) {   /* a row outside the image is an empty valid range */
                const int in = ih >= 0 && ih < H;
                im2col_row_s1(d, xp + (size_t)(in ? ih : 0) * W, off, in ? lo : 0, in ? hi : 0, Wo,
                              (Ho - 1 - oh) * Wo >= 16);   /* spill only into later rows of this block */
                continue;
            }
            if (ih < 0 || ih >= H) { row_zero(d, Wo); continue; }
            const float *xr = xp + (size_t)ih * W;                 /* (W) */
            row_zero(d, lo);
            for (int ow = lo; ow < hi; ow++) d[ow] = xr[ow * stride + off];
            row_zero(d + hi, Wo - hi);
        }
    }
}

/* dx (C, H, W) += col2im(dcols (K, P)); each channel plane is owned by one iteration and sums its
 * KH·KW contributions in a fixed order. Parallel over channels if par. */
static void col2im_add(const float *dcols, float *dx, int C, int H, int W,
                       int KH, int KW, int stride, int pad, int Ho, int Wo, int par)
{
    const int P = Ho * Wo;
    (void)par;
    AL_OMP("omp parallel for schedule(static) if (par && (int64_t)C * KH * KW * P >= AL_PAR_MIN / 2)")
    for (int c = 0; c < C; c++) {
        float *dxp = dx + (size_t)c * H * W;                       /* (H, W) */
        for (int kh = 0; kh < KH; kh++)
            for (int kw = 0; kw < KW; kw++) {
                const float *src = dcols + (size_t)((c * KH + kh) * KW + kw) * P;   /* (Ho, Wo) */
                int lo, hi; valid_range(kw, stride, pad, W, Wo, &lo, &hi);
                const int off = kw - pad;
                for (int oh = 0; oh < Ho; oh++) {
                    int ih = oh * stride - pad + kh;
                    if (ih < 0 || ih >= H) continue;
                    float *xr = dxp + (size_t)ih * W;              /* (W) */
                    const float *sr = src + (size_t)oh * Wo;
                    if (stride == 1) {
                        row_add(xr + lo + off, sr + lo, hi - lo);
                    } else {
                        for (int ow = lo; ow < hi; ow++) xr[ow * stride + off] += sr[ow];
                    }
                }
            }
    }
}

#if defined(__AVX512F__)
#define AL_C2I_KW 32   /* kernel widths the row-wise col2im takes (wider: col2im_add) */
/* The dx columns [rlo[kw], rhi[kw]) that stride-1 kernel column kw adds into (ow + kw − pad, ow valid). */
static void c2i_ranges(int KW, int pad, int W, int Wo, int *rlo, int *rhi)
{
    for (int kw = 0; kw < KW; kw++) {
        int lo, hi; valid_range(kw, 1, pad, W, Wo, &lo, &hi);
        rlo[kw] = lo + kw - pad; rhi[kw] = hi + kw - pad;
    }
}

/* Stride 1 on AVX-512: dx row by row, 16 columns at a time, the row's KH·KW contributions added in
 * a register in col2im_add's (kh, kw) order (the same additions in the same order: the same bits),
 * with one load and one store of dx per 16 columns (fresh: no load, every element stored: dx need not be
 * zeroed first). col2im_add's row-at-a-time adds store a dx row
 * and load it again one float over for the next kw, which defeats store forwarding: this form took
 * col2im from 9.3 % to 4.5 % of a cnn training step (perf, Intel AVX-512 host; docs/performance.md). */
static void col2im_add_s1(const float *dcols, float *dx, int C, int H, int W,
                          int KH, int KW, int pad, int Ho, int Wo, int par, int fresh)
{
    const int P = Ho * Wo;
    int rlo[AL_C2I_KW], rhi[AL_C2I_KW];                            /* kernel column kw adds into [rlo, rhi) */
    c2i_ranges(KW, pad, W, Wo, rlo, rhi);
    (void)par;
    AL_OMP("omp parallel for schedule(static) if (par && (int64_t)C * KH * KW * P >= AL_PAR_MIN / 2)")
    for (int c = 0; c < C; c++) {
        float *dxp = dx + (size_t)c * H * W;                       /* (H, W) */
        for (int ih = 0; ih < H; ih++) {
            float *xr = dxp + (size_t)ih * W;
            for (int j0 = 0; j0 < W; j0 += 16) {
                const int n = W - j0 < 16 ? W - j0 : 16;
                const __mmask16 m = (__mmask16)(n == 16 ? 0xffffu : (1u << n) - 1);
                __m512 acc = fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(m, xr + j0);   /* fresh: dx = 0 + ... */
                for (int kh = 0; kh < KH; kh++) {
                    const int oh = ih + pad - kh;
                    if (oh < 0 || oh >= Ho) continue;
                    for (int kw = 0; kw < KW; kw++) {
                        const int off = kw - pad;                  /* iw = ow + off */
                        int a = rlo[kw] - j0, b = rhi[kw] - j0;    /* lanes [a, b) of this chunk */
                        if (a < 0) a = 0;
                        if (b > n) b = n;
                        if (b <= a) continue;
                        const __mmask16 km = (__mmask16)(((1u << b) - 1) & ~((1u << a) - 1));
                        const float *sr = dcols + (size_t)((c * KH + kh) * KW + kw) * P + (size_t)oh * Wo;
                        acc = _mm512_mask_add_ps(acc, km, acc, _mm512_maskz_loadu_ps(km, sr + j0 - off));
                    }
                }
                _mm512_mask_storeu_ps(xr + j0, m, acc);
            }
        }
    }
}
#endif

#if defined(__AVX512F__) || defined(__AVX2__)
/* col2im of a 'same' convolution, the flat plane 16 positions at a time: dx position q takes cols row
 * (c, kh, kw) at q − s (s as in im2col_same_flat) where that source was kept, i.e. where q's row and
 * column stay inside when shifted by pad − kh and pad − kw: rowm[KH−1−kh] & colm[KH−1−kw]. The
 * additions are the row-wise kernels' (col2im_add_s1; on AVX2 col2im_add), in their (kh, kw) order,
 * masked the same way: the same bits, with the masks made once per call instead of per row. */
static void col2im_same_flat(const float *dcols, float *dx, int C, const same_plan *sp, int par, int fresh)
{
    const int W = sp->W, KH = sp->KH, pad = sp->pad, P = sp->H * W, nv = sp->nv, KK = KH * KH;
    (void)par;
    AL_OMP("omp parallel for schedule(static) if (par && (int64_t)C * KK * P >= AL_PAR_MIN / 2)")
    for (int c = 0; c < C; c++) {
        float *dxp = dx + (size_t)c * P;                           /* (H, W) */
        const float *src = dcols + (size_t)c * KK * P;             /* (KH·KW, H, W) */
        for (int v = 0; v < nv; v++) {
            const unsigned m = v < nv - 1 ? 0xffffu : sp->tail;
#if defined(__AVX512F__)
            __m512 acc = fresh ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps((__mmask16)m, dxp + 16 * v);
            for (int kh = 0; kh < KH; kh++)
                for (int kw = 0; kw < KH; kw++) {
                    const __mmask16 km = (__mmask16)(sp->rowm[KH - 1 - kh][v] & sp->colm[KH - 1 - kw][v]);
                    const ptrdiff_t sft = (ptrdiff_t)(kh - pad) * W + (kw - pad);
                    const float *sr = src + (size_t)(kh * KH + kw) * P;
                    acc = _mm512_mask_add_ps(acc, km, acc, _mm512_maskz_loadu_ps(km, sr + 16 * v - sft));
                }
            _mm512_mask_storeu_ps(dxp + 16 * v, (__mmask16)m, acc);
#else
            /* AVX2: two 8-lane halves; a masked add is a blend of the sum (lanes outside keep their
             * value, a −0 included); the last block's lanes past P are stored one by one */
            __m256 acc[2];
            for (int h = 0; h < 2; h++)
                acc[h] = fresh ? _mm256_setzero_ps() : _mm256_maskload_ps(dxp + 16 * v + 8 * h, al_v_mask_bits((m >> (8 * h)) & 0xffu));
            for (int kh = 0; kh < KH; kh++)
                for (int kw = 0; kw < KH; kw++) {
                    const unsigned km = (unsigned)(sp->rowm[KH - 1 - kh][v] & sp->colm[KH - 1 - kw][v]);
                    if (!km) continue;
                    const ptrdiff_t sft = (ptrdiff_t)(kh - pad) * W + (kw - pad);
                    const float *sr = src + (size_t)(kh * KH + kw) * P + 16 * v - sft;
                    for (int h = 0; h < 2; h++) {
                        const __m256i lm = al_v_mask_bits((km >> (8 * h)) & 0xffu);
                        const __m256 t = _mm256_add_ps(acc[h], _mm256_maskload_ps(sr + 8 * h, lm));
                        acc[h] = _mm256_blendv_ps(acc[h], t, _mm256_castsi256_ps(lm));
                    }
                }
            if (m == 0xffffu) {
                _mm256_storeu_ps(dxp + 16 * v, acc[0]);
                _mm256_storeu_ps(dxp + 16 * v + 8, acc[1]);
            } else {
                float t[16];
                _mm256_storeu_ps(t, acc[0]);
                _mm256_storeu_ps(t + 8, acc[1]);
                for (int i = 16 * v; i < P; i++) dxp[i] = t[i - 16 * v];
            }
#endif
        }
    }
}
#endif
#endif
