/* test_augment.c — on-the-fly augmentation (train.h): the spec parser and its canonical text; a shift is
 * a translation by at most N pixels with black coming in, a flip a mirror, an erase one rectangle of
 * 2-33 % set to 0; the same (seed, epoch, image) gives the same output on 1 and 2 threads, another epoch
 * another one. */
#include "testutil.h"
#include "attnlab/train.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define H 12
#define W 10
#define C 2
#define B 16

static void test_parse(void **st)
{
    (void)st;
    al_augment a; al_error e = {{0}};
    char buf[96];
    assert_int_equal(al_augment_parse("erase:0.25,shift:2,flip", &a, &e), AL_OK);
    assert_int_equal(a.shift, 2); assert_int_equal(a.flip, 1); assert_true(fabsf(a.erase - 0.25f) < 1e-7f);
    al_augment_str(&a, buf, sizeof buf);
    assert_string_equal(buf, "shift:2,flip,erase:0.25");
    /* '+' joins parts as ',' does (a sweep's axis value cannot hold a comma): the same canonical text */
    assert_int_equal(al_augment_parse("shift:2+flip+erase:0.25", &a, &e), AL_OK);
    al_augment_str(&a, buf, sizeof buf);
    assert_string_equal(buf, "shift:2,flip,erase:0.25");
    assert_int_equal(al_augment_parse("none", &a, &e), AL_OK);
    al_augment_str(&a, buf, sizeof buf);
    assert_string_equal(buf, "none");
    const char *bad[] = {"", "shift", "shift:0", "shift:65", "erase:0", "erase:1.5", "flip,flip", "flip+flip", "rotate:3", "shift:2x", "shift:2++"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        e.msg[0] = 0;
        if (al_augment_parse(bad[i], &a, &e) != AL_ERR || !strstr(e.msg, "--augment")) fail_msg("'%s' accepted (%s)", bad[i], e.msg);
    }
}

static void make_batch(float *x, int *idx)
{
    for (int i = 0; i < B; i++) idx[i] = 100 + 3 * i;
    for (int k = 0; k < B * C * H * W; k++) x[k] = 1.f + (float)(k % 997) / 97.f;   /* no value equals the fill */
}

/* Is out (c, h, w) in a shifted by (dx, dy) (after a flip if flip), fill coming in? */
static int is_shift(const float *in, const float *out, int dx, int dy, int flip, const float *fill)
{
    for (int ch = 0; ch < C; ch++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                int sx = flip ? W - 1 - x : x, iy = y - dy, ix = sx - dx;
                float want = iy >= 0 && iy < H && ix >= 0 && ix < W ? in[(ch * H + iy) * W + ix] : fill[ch];
                if (out[(ch * H + y) * W + x] != want) return 0;
            }
    return 1;
}

static void test_shift_and_flip(void **st)
{
    (void)st;
    float x[B * C * H * W], x0[B * C * H * W], fill[C] = {-0.5f, -2.f};
    int idx[B], flips = 0, moved = 0;
    al_error e = {{0}};
    make_batch(x, idx);
    memcpy(x0, x, sizeof x);
    al_augment a = {2, 1, 0.f};
    assert_int_equal(al_augment_batch(&a, x, B, C, H, W, idx, 7, 3, fill, &e), AL_OK);
    for (int i = 0; i < B; i++) {
        const float *in = x0 + i * C * H * W, *out = x + i * C * H * W;
        int found = 0;
        for (int f = 0; f <= 1 && !found; f++)
            for (int dy = -2; dy <= 2 && !found; dy++)
                for (int dx = -2; dx <= 2 && !found; dx++)
                    if (is_shift(in, out, dx, dy, f, fill)) { found = 1; flips += f; moved += dx || dy; }
        if (!found) fail_msg("image %d is not a shift by <= 2 pixels of the input (flipped or not)", i);
    }
    assert_true(flips > 0 && flips < B);   /* p = 1/2 over 16 images */
    assert_true(moved > B / 2);
}

static void test_erase(void **st)
{
    (void)st;
    float x[B * C * H * W], x0[B * C * H * W], fill[C] = {0, 0};
    int idx[B], erased = 0;
    al_error e = {{0}};
    make_batch(x, idx);
    memcpy(x0, x, sizeof x);
    al_augment a = {0, 0, 1.f};
    assert_int_equal(al_augment_batch(&a, x, B, C, H, W, idx, 7, 1, fill, &e), AL_OK);
    for (int i = 0; i < B; i++) {
        int y0 = H, y1 = -1, x0b = W, x1 = -1, n = 0;
        for (int y = 0; y < H; y++)
            for (int xx = 0; xx < W; xx++) {
                float v = x[(i * C) * H * W + y * W + xx];
                if (v != x0[(i * C) * H * W + y * W + xx]) {
                    assert_true(v == 0.f);
                    n++;
                    y0 = y < y0 ? y : y0; y1 = y > y1 ? y : y1;
                    x0b = xx < x0b ? xx : x0b; x1 = xx > x1 ? xx : x1;
                    assert_true(x[(i * C + 1) * H * W + y * W + xx] == 0.f);   /* every channel */
                }
            }
        if (!n) continue;
        erased++;
        assert_int_equal(n, (y1 - y0 + 1) * (x1 - x0b + 1));   /* a rectangle */
        double frac = (double)n / (H * W);
        if (!(frac >= 0.01 && frac <= 0.40)) fail_msg("image %d: %.3f of the image erased", i, frac);
    }
    assert_true(erased >= B - 2);
}

static void test_deterministic(void **st)
{
    (void)st;
    static float x[3][B * C * H * W];
    float fill[C] = {-1.f, -1.f};
    int idx[B];
    al_error e = {{0}};
    al_augment a = {3, 1, 0.5f};
    const int saved = al_threads();
    for (int k = 0; k < 3; k++) {
        make_batch(x[k], idx);
        al_set_threads(k == 1 ? 2 : 1);
        assert_int_equal(al_augment_batch(&a, x[k], B, C, H, W, idx, 11, k == 2 ? 5 : 4, fill, &e), AL_OK);
    }
    al_set_threads(saved);
    assert_memory_equal(x[0], x[1], sizeof x[0]);                 /* 1 and 2 threads */
    assert_true(memcmp(x[0], x[2], sizeof x[0]) != 0);            /* another epoch */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_shift_and_flip),
        cmocka_unit_test(test_erase),
        cmocka_unit_test(test_deterministic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
