/* fastmath_impl.h — the one vectorisable exp used by the softmax/layernorm kernels, GELU, ELU and
 * the fused graph activation, so every caller gets the same bits (internal header). */
#ifndef ATTNLAB_FASTMATH_IMPL_H
#define ATTNLAB_FASTMATH_IMPL_H
#include <stdint.h>
#include <string.h>

/* exp(x) for finite x, ≈1 ulp; 0 below -87 (true value < 1.7e-38), clamped above 88.
 * Range reduction x = n·ln2 + r with a two-constant (Cody–Waite) ln2, then a degree-5
 * polynomial for (e^r − 1 − r)/r² on |r| ≤ ln2/2. n is taken from the bits of
 * t + 1.5·2²³ so there is no float→int conversion (no UB for NaN, and it vectorises). */
static inline float al__expf(float x)
{
    float xc = x < -87.0f ? -87.0f : x;
    xc = xc > 88.0f ? 88.0f : xc;
    float t = xc * 1.44269504088896341f + 12582912.0f;    /* round(x/ln2) in the low bits */
    float n = t - 12582912.0f;
    uint32_t tb; memcpy(&tb, &t, 4);
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * (r * r) + r + 1.0f;
    uint32_t sb = (tb - 0x4B400000u + 127u) << 23;       /* 2^n */
    float s; memcpy(&s, &sb, 4);
    return x < -87.0f ? 0.0f : e * s;
}

/* eˣ − 1 for x ≤ 0 without libm (vectorises): a short Taylor series near 0, where eˣ − 1 would
 * cancel (error x⁵/120 < 1e-12 for |x| < 0.01), al__expf − 1 elsewhere (abs. error ~1e-7). */
static inline float al__expm1_neg(float x)
{
    float taylor = x * (1.0f + x * (0.5f + x * (1.0f / 6.0f + x * (1.0f / 24.0f))));
    return x > -0.01f ? taylor : al__expf(x) - 1.0f;
}
#endif
