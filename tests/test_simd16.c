/* test_simd16.c — the sixteen-lane layer (al_v16 of core/simd_impl.h) against its contract: every
 * operation gives, lane for lane, the bits of the plain scalar expression written out below (the
 * scalar build's definition), on whatever ISA this was compiled for (AVX-512, AVX2 + FMA or scalar).
 * The GAT kernel's outputs, checkpoints and results files rest on this: a lane that differed in one
 * bit (a signed zero from max, a lane loaded past its mask, an exp off by an ulp) would change them.
 * Inputs include ±0, NaN, ±inf, the exp clamps and every mask length 0..16. */
#include "testutil.h"
#include "core/exp_impl.h"
#include "core/simd_impl.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint32_t bits_of(float x) { uint32_t u; memcpy(&u, &x, 4); return u; }

/* the lanes of x, through a whole-line store */
static void lanes(al_v16 x, float out[16])
{
    _Alignas(64) float line[16];
    al_v16_stl(line, x);
    memcpy(out, line, sizeof line);
}

static void expect_lanes(al_v16 got, const float want[16], const char *what)
{
    float g[16];
    lanes(got, g);
    for (int l = 0; l < 16; l++)
        if (bits_of(g[l]) != bits_of(want[l]))
            fail_msg("%s: lane %d is %a (0x%08x), expected %a (0x%08x)", what, l, g[l], bits_of(g[l]), want[l], bits_of(want[l]));
}

/* 64 awkward values, then pseudo-random ones */
static float value(int i)
{
    static const float special[] = {0.f, -0.f, 1.f, -1.f, INFINITY, -INFINITY, NAN, 1e-40f, -1e-40f, 88.f, 88.5f, 89.f,
                                    -87.f, -87.5f, -86.9f, -126.f, 3.4e38f, -3.4e38f, 0.5f, -0.5f, 1e-7f, 2.f, -2.f, 7.25f};
    const int ns = (int)(sizeof special / sizeof special[0]);
    if (i < ns) return special[i];
    uint32_t s = (uint32_t)i * 2654435761u;
    s ^= s >> 15; s *= 2246822519u; s ^= s >> 13;
    return ((float)(s % 200001u) - 100000.f) / 997.f;   /* about ±100 */
}

static void fill(float *x, int n, int from)
{
    for (int l = 0; l < n; l++) x[l] = value(from + l);
}

static void test_load_store_masks(void **state)
{
    (void)state;
    _Alignas(64) float src[48], dst[48], want[16];
    fill(src, 48, 30);
    for (int n = -1; n <= 17; n++) {
        const al_m16 m = al_v16_mask(n);
        const int live = n < 0 ? 0 : n > 16 ? 16 : n;
        for (int off = 0; off < 16; off += 5) {
            char what[64];
            snprintf(what, sizeof what, "load of %d lanes at offset %d", n, off);
            for (int l = 0; l < 16; l++) want[l] = l < live ? src[off + l] : 0.f;
            expect_lanes(al_v16_load(m, src + off), want, what);
            /* a store writes the live lanes only */
            for (int l = 0; l < 48; l++) dst[l] = -7.f;
            al_v16_store(m, dst + off, al_v16_ldl(src + 16));
            for (int l = 0; l < 48; l++) {
                const float e = l >= off && l < off + live ? src[16 + l - off] : -7.f;
                if (bits_of(dst[l]) != bits_of(e)) fail_msg("store of %d lanes at offset %d: element %d is %g, expected %g", n, off, l, dst[l], e);
            }
        }
    }
}

static void test_arithmetic(void **state)
{
    (void)state;
    _Alignas(64) float a[16], b[16], c[16], want[16];
    for (int rep = 0; rep < 40; rep++) {
        fill(a, 16, rep * 16); fill(b, 16, 7 + rep * 13); fill(c, 16, 500 + rep * 11);
        const al_v16 va = al_v16_ldl(a), vb = al_v16_ldl(b), vc = al_v16_ldl(c);
        for (int l = 0; l < 16; l++) want[l] = a[l] + b[l];
        expect_lanes(al_v16_add(va, vb), want, "add");
        for (int l = 0; l < 16; l++) want[l] = a[l] - b[l];
        expect_lanes(al_v16_sub(va, vb), want, "sub");
        for (int l = 0; l < 16; l++) want[l] = a[l] * b[l];
        expect_lanes(al_v16_mul(va, vb), want, "mul");
        for (int l = 0; l < 16; l++) want[l] = AL_FMA(a[l], b[l], c[l]);
        expect_lanes(al_v16_fma(va, vb, vc), want, "fma");
        for (int l = 0; l < 16; l++) want[l] = b[l] > a[l] ? b[l] : a[l];
        expect_lanes(al_v16_max(va, vb), want, "max(a, b)");
        for (int l = 0; l < 16; l++) want[l] = a[l] > b[l] ? a[l] : b[l];
        expect_lanes(al_v16_max(vb, va), want, "max(b, a)");
        for (int l = 0; l < 16; l++) want[l] = a[l] > 0.f ? b[l] : 0.2f * b[l];
        expect_lanes(al_v16_pos_or(va, vb, 0.2f), want, "pos_or");
        for (int l = 0; l < 16; l++) want[l] = a[l] > 0.f ? 1.f / a[l] : 0.f;
        expect_lanes(al_v16_recip(va), want, "recip");
        const uint32_t keep = 0x9a5cu * (uint32_t)(rep + 1) ^ (uint32_t)rep << 9;
        for (int l = 0; l < 16; l++) want[l] = (keep >> l & 1u) ? a[l] * 1.25f : 0.f;
        expect_lanes(al_v16_keep(keep, va, 1.25f), want, "keep");
        for (int l = 0; l < 16; l++) want[l] = 3.5f;
        expect_lanes(al_v16_set1(3.5f), want, "set1");
        for (int l = 0; l < 16; l++) want[l] = 0.f;
        expect_lanes(al_v16_zero(), want, "zero");
    }
}

/* the vector exp against the scalar Cephes expf, lane for lane, over the clamps and a sweep of
 * arguments (-100 .. 100 in steps that hit many reduction intervals) */
static void test_exp(void **state)
{
    (void)state;
    _Alignas(64) float x[16], want[16];
    for (int rep = 0; rep < 2000; rep++) {
        for (int l = 0; l < 16; l++) x[l] = rep < 4 ? value(rep * 16 + l) : -100.f + (float)(rep * 16 + l) * (200.f / 32000.f);
        for (int l = 0; l < 16; l++) want[l] = al__exp_cephes(x[l]);
        expect_lanes(al__exp_cephes_v16(al_v16_ldl(x)), want, "exp");
    }
    /* and the values the contract names: 0 below -87 (and for NaN), finite at the top clamp */
    float e[16];
    for (int l = 0; l < 16; l++) x[l] = l < 8 ? -87.5f : NAN;
    lanes(al__exp_cephes_v16(al_v16_ldl(x)), e);
    for (int l = 0; l < 16; l++) assert_true(e[l] == 0.f);
    for (int l = 0; l < 16; l++) x[l] = l < 8 ? 1000.f : INFINITY;
    lanes(al__exp_cephes_v16(al_v16_ldl(x)), e);
    for (int l = 0; l < 16; l++) assert_true(isfinite(e[l]) && e[l] > 1e38f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_store_masks),
        cmocka_unit_test(test_arithmetic),
        cmocka_unit_test(test_exp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
