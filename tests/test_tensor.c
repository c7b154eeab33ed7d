/* test_tensor.c — arena, RNG, tensors, parameters, tape basics. */
#include "testutil.h"
#include <string.h>
#include <stdlib.h>

static void test_rng_streams_deterministic(void **st)
{
    (void)st;
    al_rng a, b, c;
    al_rng_seed(&a, 7, AL_RNG_INIT); al_rng_seed(&b, 7, AL_RNG_INIT); al_rng_seed(&c, 7, AL_RNG_SHUFFLE);
    int same_ab = 1, same_ac = 1;
    for (int i = 0; i < 100; i++) { uint64_t x = al_rng_u64(&a), y = al_rng_u64(&b), z = al_rng_u64(&c); same_ab &= x == y; same_ac &= x == z; }
    assert_true(same_ab);
    assert_false(same_ac);
    /* uniform in [0,1), normal has mean ~0 and var ~1 */
    double s = 0, s2 = 0;
    for (int i = 0; i < 100000; i++) { float u = al_rng_uniform(&a); assert_true(u >= 0 && u < 1); float n = al_rng_normal(&a); s += n; s2 += (double)n * n; }
    assert_true(s / 1e5 < 0.02 && s / 1e5 > -0.02);
    assert_true(s2 / 1e5 > 0.97 && s2 / 1e5 < 1.03);
    int hist[7] = {0};
    for (int i = 0; i < 70000; i++) hist[al_rng_below(&a, 7)]++;
    for (int i = 0; i < 7; i++) assert_true(hist[i] > 9500 && hist[i] < 10500);
}

static void test_arena_coalesces_to_peak(void **st)
{
    (void)st;
    al_arena a = {0};
    void *p1 = al_arena_alloc(&a, 3 << 20), *p2 = al_arena_alloc(&a, 5 << 20);
    assert_non_null(p1); assert_non_null(p2);
    assert_int_equal((uintptr_t)p1 % 64, 0); assert_int_equal((uintptr_t)p2 % 64, 0);
    size_t peak = a.peak;
    assert_true(peak >= (size_t)(8 << 20));
    al_arena_reset(&a);
    assert_int_equal(al_arena_nblocks(&a), 1);
    assert_true(al_arena_capacity(&a) >= peak);
    /* the same step again fits in the one block */
    al_arena_alloc(&a, 3 << 20); al_arena_alloc(&a, 5 << 20);
    assert_int_equal(al_arena_nblocks(&a), 1);
    al_arena_free(&a);
}

static void test_tensor_shape_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    assert_null(al_new(c, 2, (int[]){3, 0}));
    assert_false(al_ok(c));
    assert_non_null(strstr(al_ctx_error(c), "invalid tensor shape"));
    al_ctx_clear_error(c);
    assert_null(al_new(c, 5, (int[]){1, 1, 1, 1, 1}));
    al_ctx_clear_error(c);
    al_tensor *t = al_zeros(c, 3, (int[]){2, 3, 4});
    assert_non_null(t); assert_int_equal(t->numel, 24);
    char b[64]; assert_string_equal(al_shape_str(t, b, sizeof b), "(2, 3, 4)");
    assert_null(al_view(c, t, 2, (int[]){5, 5}));
    assert_non_null(strstr(al_ctx_error(c), "view"));
    al_ctx_free(c);
}

static void test_params_flat_and_seeded(void **st)
{
    (void)st;
    float first[2][10];
    for (int rep = 0; rep < 2; rep++) {
        al_params p; al_params_init(&p);
        al_tensor *w = al_params_add(&p, "w", 2, (int[]){2, 5}, al_init_kaiming(5));
        al_tensor *b = al_params_add(&p, "b", 1, (int[]){3}, (al_init){AL_INIT_ONES, 0});
        assert_non_null(w); assert_non_null(b);
        al_rng r; al_rng_seed(&r, 5, AL_RNG_INIT);
        al_error e = {{0}};
        assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
        assert_int_equal(p.total, 13);
        assert_ptr_equal(b->data, p.data + 10);
        assert_ptr_equal(b->grad, p.grad + 10);
        for (int i = 0; i < 10; i++) { assert_true(w->data[i] >= -0.4473f && w->data[i] <= 0.4473f); first[rep][i] = w->data[i]; }
        assert_true(b->data[2] == 1.0f);
        assert_ptr_equal(al_params_find(&p, "b"), b);
        assert_int_equal(p.decay[0], 1); assert_int_equal(p.decay[1], 0);
        al_params_free(&p);
    }
    assert_memory_equal(first[0], first[1], sizeof first[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_streams_deterministic),
        cmocka_unit_test(test_arena_coalesces_to_peak),
        cmocka_unit_test(test_tensor_shape_errors),
        cmocka_unit_test(test_params_flat_and_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
