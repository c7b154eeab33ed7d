/* test_tensor.c — arena, RNG, tensors, parameters, tape basics. */
#include "testutil.h"
#include <string.h>
#include <stdlib.h>
#include <stdio.h>
#include <math.h>
#include "attnlab/ops.h"

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

/* Marks: release returns to the mark (blocks opened since are kept aside and reused); al_keep moves
 * tensors down to the mark with their bits, in place or through a copy, and does nothing with a tape. */
static void test_arena_mark_release_keep(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    assert_non_null(c);
    c->grad_enabled = 0;
    al_tensor *x = al_new(c, 1, (int[]){100});
    for (int i = 0; i < 100; i++) x->data[i] = (float)i;
    al_arena_mark m = al_ctx_mark(c);
    size_t used0 = c->arena.used;
    al_tensor *junk = al_new(c, 1, (int[]){5000});
    assert_non_null(junk);
    memset(junk->data, 0xff, 5000 * sizeof(float));
    al_tensor *k[2] = {al_new(c, 2, (int[]){3, 7}), al_new(c, 1, (int[]){11})};
    for (int i = 0; i < 21; i++) k[0]->data[i] = 0.5f * (float)i;
    for (int i = 0; i < 11; i++) k[1]->data[i] = -(float)i;
    float *old0 = k[0]->data;
    assert_int_equal(al_keep(c, m, k, 2), AL_OK);
    assert_true(k[0]->data < old0);                        /* moved down over the freed temporary */
    assert_int_equal(k[0]->ndim, 2); assert_int_equal(k[0]->shape[1], 7);
    for (int i = 0; i < 21; i++) assert_true(k[0]->data[i] == 0.5f * (float)i);
    for (int i = 0; i < 11; i++) assert_true(k[1]->data[i] == -(float)i);
    for (int i = 0; i < 100; i++) assert_true(x->data[i] == (float)i);   /* before the mark: untouched */
    assert_true(c->arena.used < used0 + 5000 * sizeof(float));
    /* a tensor in a block opened after the mark (bigger than the current block) */
    m = al_ctx_mark(c);
    al_tensor *big = al_new(c, 1, (int[]){1 << 19});
    assert_non_null(big);
    for (int i = 0; i < (1 << 19); i++) big->data[i] = (float)(i % 977);
    int nb = al_arena_nblocks(&c->arena);
    assert_int_equal(al_keep(c, m, &big, 1), AL_OK);
    for (int i = 0; i < (1 << 19); i++) assert_true(big->data[i] == (float)(i % 977));
    assert_true(al_arena_nblocks(&c->arena) <= nb + 1);
    al_arena_release(&c->arena, m);
    assert_non_null(al_new(c, 1, (int[]){1 << 19}));       /* reuses the block kept aside */
    assert_true(al_arena_nblocks(&c->arena) <= nb + 1);
    /* with a tape nothing moves */
    c->grad_enabled = 1;
    m = al_ctx_mark(c);
    al_new(c, 1, (int[]){64});
    al_tensor *t = al_new(c, 1, (int[]){8}), *t0 = t;
    assert_int_equal(al_keep(c, m, &t, 1), AL_OK);
    assert_ptr_equal(t, t0);
    al_ctx_reset(c);
    assert_int_equal(al_arena_nblocks(&c->arena), 1);
    /* reserve: one block of the size asked */
    assert_int_equal(al_arena_reserve(&c->arena, (size_t)3 << 20), 0);
    assert_int_equal(al_arena_nblocks(&c->arena), 1);
    assert_true(al_arena_capacity(&c->arena) >= (size_t)3 << 20);
    al_ctx_free(c);
}

/* Once an op's backward has run its output's gradient is handed to the next gradient of that size:
 * through a chain of three linear layers the backward allocates one new buffer, the intermediate
 * gradients end NULL, and the input's gradient is W1ᵀ·W2ᵀ·W3ᵀ·g, as computed by hand. */
static void test_backward_reuses_dead_gradients(void **st)
{
    (void)st;
    enum { N = 8 };
    al_params P; al_params_init(&P);
    al_tensor *w[3];
    for (int i = 0; i < 3; i++) { char nm[8]; snprintf(nm, sizeof nm, "w%d", i); w[i] = al_params_add(&P, nm, 2, (int[]){N, N}, (al_init){AL_INIT_NORMAL, 0.5f}); }
    al_rng r; al_rng_seed(&r, 3, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(&P, &r, &e), AL_OK);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 2, (int[]){1, N});
    x->requires_grad = 1;
    al_tensor *y1 = al_linear(c, x, w[0], NULL), *y2 = al_linear(c, y1, w[1], NULL), *y3 = al_linear(c, y2, w[2], NULL);
    assert_non_null(y3);
    float *g = al_grad(c, y3);
    for (int i = 0; i < N; i++) g[i] = (float)(i + 1);
    size_t before = c->arena.used;
    al_params_zero_grad(&P);
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_true(c->arena.used - before <= 64 * ((N * sizeof(float) + 63) / 64));   /* y2's; y1 and x reuse */
    assert_null(y3->grad); assert_null(y2->grad); assert_null(y1->grad);
    assert_non_null(x->grad);
    double v[N], u[N];
    for (int i = 0; i < N; i++) v[i] = i + 1;
    for (int l = 2; l >= 0; l--) {   /* dx = Wᵀ dy per layer (y = x Wᵀ) */
        for (int j = 0; j < N; j++) { u[j] = 0; for (int i = 0; i < N; i++) u[j] += (double)w[l]->data[i * N + j] * v[i]; }
        memcpy(v, u, sizeof v);
    }
    for (int j = 0; j < N; j++) assert_true(fabs(x->grad[j] - v[j]) <= 1e-4 * (1 + fabs(v[j])));
    al_ctx_free(c); al_params_free(&P);
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
        assert_null(al_params_add(&p, "w", 1, (int[]){4}, (al_init){AL_INIT_ZEROS, 0}));   /* a name twice */
        assert_null(al_params_add(&p, NULL, 1, (int[]){4}, (al_init){AL_INIT_ZEROS, 0}));
        assert_int_equal(p.n, 2);
        al_rng r; al_rng_seed(&r, 5, AL_RNG_INIT);
        al_error e = {{0}};
        assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
        assert_int_equal(p.total, 13);
        assert_ptr_equal(b->data, p.data + 10);
        assert_ptr_equal(b->grad, p.grad + 10);
        for (int i = 0; i < 10; i++) { assert_true(w->data[i] >= -0.4473f && w->data[i] <= 0.4473f); first[rep][i] = w->data[i]; }
        assert_true(b->data[2] == 1.0f);
        assert_ptr_equal(al_params_find(&p, "b"), b);
        assert_null(al_params_add(&p, "c", 1, (int[]){1}, (al_init){AL_INIT_ZEROS, 0}));   /* finalized */
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
        cmocka_unit_test(test_arena_mark_release_keep),
        cmocka_unit_test(test_backward_reuses_dead_gradients),
        cmocka_unit_test(test_tensor_shape_errors),
        cmocka_unit_test(test_params_flat_and_seeded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
