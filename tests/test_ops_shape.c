/* test_ops_shape.c — shape ops: hand-value forwards, finite-difference gradients, shape errors. */
#include "testutil.h"
#include "attnlab/ops.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_error(al_ctx *c, al_tensor *r, const char *needle)
{
    assert_null(r);
    assert_false(al_ok(c));
    if (!strstr(al_ctx_error(c), needle)) fail_msg("error '%s' does not contain '%s'", al_ctx_error(c), needle);
    al_ctx_clear_error(c);
}

static void iota(float *x, int n) { for (int i = 0; i < n; i++) x[i] = (float)i; }

/* ---------------- reshape ---------------- */
static al_tensor *reshape_only_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    return al_reshape(c, al_reshape(c, t[0], 2, (int[]){6, 4}), 3, (int[]){4, 3, 2});
}

static void test_reshape(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[24]; iota(xd, 24);
    al_tensor *x = al_wrap(c, xd, 3, (int[]){2, 3, 4});
    x->requires_grad = 1;
    al_tensor *y = al_reshape(c, x, 2, (int[]){4, 6});
    assert_non_null(y);
    assert_ptr_equal(y->data, x->data);                 /* zero-copy */
    assert_int_equal(y->ndim, 2); assert_int_equal(y->shape[0], 4); assert_int_equal(y->shape[1], 6);
    assert_true(y->requires_grad);
    /* backward adds the output gradient into x's (which already holds something) */
    float *gx = al_grad(c, x);
    for (int i = 0; i < 24; i++) gx[i] = 1;
    float *g = al_grad(c, y);
    for (int i = 0; i < 24; i++) g[i] = (float)(2 * i);
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < 24; i++) assert_float_equal(x->grad[i], 1 + 2 * i, 0);
    expect_error(c, al_reshape(c, x, 2, (int[]){5, 5}), "24 elements");
    expect_error(c, al_reshape(c, x, 2, (int[]){-1, 24}), "invalid target shape");
    expect_error(c, al_reshape(c, x, 5, (int[]){1, 2, 3, 4, 1}), "invalid target shape");
    assert_null(al_reshape(c, NULL, 1, (int[]){24}));
    assert_true(al_ok(c));
    al_ctx_free(c);

    float *d = tu_alloc_rand(24, 1, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 3, 2, 3, 4, 0)};
    TU_GRADCHECK("reshape", reshape_only_fn, NULL, in, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- permute ---------------- */
typedef struct perm_args { int perm[4]; } perm_args;
static al_tensor *permute_fn(al_ctx *c, al_tensor **t, void *ud) { return al_permute(c, t[0], ((perm_args *)ud)->perm); }

static void test_permute(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[24]; iota(xd, 24);
    al_tensor *x = al_wrap(c, xd, 3, (int[]){2, 3, 4});
    /* (2,3,4) with perm (2,0,1) → (4,2,3): out[k][i][j] = x[i][j][k] = 12i + 4j + k */
    al_tensor *y = al_permute(c, x, (int[]){2, 0, 1});
    assert_non_null(y);
    assert_int_equal(y->shape[0], 4); assert_int_equal(y->shape[1], 2); assert_int_equal(y->shape[2], 3);
    for (int k = 0; k < 4; k++) for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++)
        assert_float_equal(y->data[(k * 2 + i) * 3 + j], 12 * i + 4 * j + k, 0);
    /* a 2-D transpose and the identity */
    al_tensor *m = al_wrap(c, xd, 2, (int[]){4, 6});
    al_tensor *mt = al_permute(c, m, (int[]){1, 0});
    assert_non_null(mt);
    assert_float_equal(mt->data[1], 6, 0);             /* mt[0][1] = m[1][0] */
    al_tensor *id = al_permute(c, x, (int[]){0, 1, 2});
    assert_memory_equal(id->data, xd, sizeof xd);
    /* 4-D: every permutation of 4 dims is inverted by its inverse */
    float *z = tu_alloc_rand(2 * 3 * 4 * 5, 3, -1, 1);
    al_tensor *tz = al_wrap(c, z, 4, (int[]){2, 3, 4, 5});
    int p[4] = {0, 1, 2, 3}, nperm = 0;
    for (p[0] = 0; p[0] < 4; p[0]++) for (p[1] = 0; p[1] < 4; p[1]++) for (p[2] = 0; p[2] < 4; p[2]++) {
        p[3] = 6 - p[0] - p[1] - p[2];
        if (p[0] == p[1] || p[0] == p[2] || p[1] == p[2]) continue;
        int inv[4];
        for (int i = 0; i < 4; i++) inv[p[i]] = i;
        al_tensor *a = al_permute(c, tz, p);
        assert_non_null(a);
        for (int i = 0; i < 4; i++) assert_int_equal(a->shape[i], tz->shape[p[i]]);
        al_tensor *back = al_permute(c, a, inv);
        assert_non_null(back);
        assert_memory_equal(back->data, z, 120 * sizeof(float));
        nperm++;
    }
    assert_int_equal(nperm, 24);
    expect_error(c, al_permute(c, x, (int[]){0, 0, 1}), "(0, 0, 1) is not a permutation");
    expect_error(c, al_permute(c, x, (int[]){0, 1, 3}), "not a permutation of the 3 dims of x (2, 3, 4)");
    al_ctx_free(c);

    perm_args a3 = {{1, 2, 0, 0}}, a4 = {{3, 1, 0, 2}};
    float *d = tu_alloc_rand(120, 5, -1, 1);
    tu_input in3[1] = {tu_in(d, 1, 3, 4, 5, 6, 0)};
    TU_GRADCHECK("permute 3-D", permute_fn, &a3, in3, 1, 1e-2, 1e-3);
    tu_input in4[1] = {tu_in(d, 1, 4, 2, 3, 4, 5)};
    TU_GRADCHECK("permute 4-D", permute_fn, &a4, in4, 1, 1e-2, 1e-3);
    free(d); free(z);
}

/* ---------------- mean over tokens ---------------- */
static al_tensor *mean_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_mean_tokens(c, t[0]); }

static void test_mean_tokens(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[12]; iota(xd, 12);                       /* (2, 3, 2) */
    al_tensor *y = al_mean_tokens(c, al_wrap(c, xd, 3, (int[]){2, 3, 2}));
    assert_non_null(y);
    assert_int_equal(y->ndim, 2); assert_int_equal(y->shape[0], 2); assert_int_equal(y->shape[1], 2);
    /* b0: tokens (0,1),(2,3),(4,5) → (2, 3); b1: (6,7),(8,9),(10,11) → (8, 9) */
    float want[4] = {2, 3, 8, 9};
    for (int i = 0; i < 4; i++) assert_float_equal(y->data[i], want[i], 1e-6);
    expect_error(c, al_mean_tokens(c, al_wrap(c, xd, 2, (int[]){6, 2})), "(6, 2) must be (B, N, C)");
    al_ctx_free(c);
    float *d = tu_alloc_rand(3 * 7 * 5, 2, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 3, 3, 7, 5, 0)};
    TU_GRADCHECK("mean_tokens", mean_fn, NULL, in, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- split / merge heads ---------------- */
static al_tensor *split_fn(al_ctx *c, al_tensor **t, void *ud) { return al_split_heads(c, t[0], *(int *)ud); }
static al_tensor *merge_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_merge_heads(c, t[0]); }

static void test_split_merge_heads(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    enum { B = 2, N = 3, H = 2, D = 4 };
    float xd[B * N * H * D]; iota(xd, B * N * H * D);
    al_tensor *x = al_wrap(c, xd, 3, (int[]){B, N, H * D});
    al_tensor *s = al_split_heads(c, x, H);
    assert_non_null(s);
    assert_int_equal(s->ndim, 4);
    assert_int_equal(s->shape[0], B); assert_int_equal(s->shape[1], H);
    assert_int_equal(s->shape[2], N); assert_int_equal(s->shape[3], D);
    /* s[b][h][n][d] = x[b][n][h·D + d] */
    for (int b = 0; b < B; b++) for (int h = 0; h < H; h++) for (int n = 0; n < N; n++) for (int d = 0; d < D; d++)
        assert_float_equal(s->data[((b * H + h) * N + n) * D + d], xd[(b * N + n) * H * D + h * D + d], 0);
    assert_float_equal(s->data[N * D], 4, 0);           /* s[0][1][0][0] = x[0][0][4] */
    al_tensor *m = al_merge_heads(c, s);
    assert_non_null(m);
    assert_int_equal(m->ndim, 3); assert_int_equal(m->shape[2], H * D);
    assert_memory_equal(m->data, xd, sizeof xd);
    expect_error(c, al_split_heads(c, x, 3), "divisible by 3 heads");
    expect_error(c, al_split_heads(c, x, 0), "divisible by 0 heads");
    expect_error(c, al_merge_heads(c, x), "(2, 3, 8) must be (B, H, N, D)");
    al_ctx_free(c);

    int heads = 3;
    float *d = tu_alloc_rand(2 * 5 * 6, 3, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 3, 2, 5, 6, 0)};
    TU_GRADCHECK("split_heads", split_fn, &heads, in, 1, 1e-2, 1e-3);
    tu_input in2[1] = {tu_in(d, 1, 4, 2, 3, 5, 2)};
    TU_GRADCHECK("merge_heads", merge_fn, NULL, in2, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- fused q/k/v split ---------------- */
static al_tensor *qkv_fn(al_ctx *c, al_tensor **t, void *ud)
{
    al_tensor *o[3];
    if (al_split_qkv(c, t[0], *(int *)ud, &o[0], &o[1], &o[2]) != AL_OK) return NULL;
    return al_concat_last(c, 3, o);   /* (B, H, N, 3·D): every output element reaches the loss */
}

/* al_split_qkv against 3 × al_slice_last + al_split_heads, forward and backward, on one shape.
 * which: bit s set = output s receives a gradient; pre = x already holds a gradient (accumulate path). */
static void qkv_case(int B, int N, int H, int D, int which, int pre)
{
    al_ctx *c = al_ctx_new(1);
    const int64_t n = (int64_t)B * N * 3 * H * D, on = (int64_t)B * H * N * D;
    {   /* poison the arena: memory handed out uninitialised (a fresh gradient) then holds NaNs, not zeros */
        al_tensor *junk = al_new(c, 1, (int[]){(int)(16 * n + 4096)});
        assert_non_null(junk);
        memset(junk->data, 0xff, (size_t)junk->numel * sizeof(float));
        al_ctx_reset(c);
    }
    float *xd = tu_alloc_rand(n, (uint64_t)(B * 1000 + N * 10 + H + D), -1, 1);
    float *g = tu_alloc_rand(3 * on, 77, -1, 1), *p0 = tu_alloc_rand(n, 78, -1, 1);
    al_tensor *x1 = al_wrap(c, xd, 3, (int[]){B, N, 3 * H * D}), *x2 = al_wrap(c, xd, 3, (int[]){B, N, 3 * H * D});
    x1->requires_grad = x2->requires_grad = 1;
    if (pre) {
        memcpy(al_grad(c, x1), p0, (size_t)n * sizeof(float));
        memcpy(al_grad(c, x2), p0, (size_t)n * sizeof(float));
    }
    al_tensor *f[3], *r[3];
    assert_int_equal(al_split_qkv(c, x1, H, &f[0], &f[1], &f[2]), AL_OK);
    for (int s = 0; s < 3; s++) r[s] = al_split_heads(c, al_slice_last(c, x2, s * H * D, H * D), H);
    for (int s = 0; s < 3; s++) {
        assert_non_null(f[s]); assert_non_null(r[s]);
        assert_int_equal(f[s]->ndim, 4);
        assert_int_equal(f[s]->shape[0], B); assert_int_equal(f[s]->shape[1], H);
        assert_int_equal(f[s]->shape[2], N); assert_int_equal(f[s]->shape[3], D);
        assert_memory_equal(f[s]->data, r[s]->data, (size_t)on * sizeof(float));
        if (which >> s & 1) {
            memcpy(al_grad(c, f[s]), g + s * on, (size_t)on * sizeof(float));
            memcpy(al_grad(c, r[s]), g + s * on, (size_t)on * sizeof(float));
        }
    }
    assert_int_equal(al_backward_run(c), AL_OK);
    if (!which && !pre) { assert_null(x1->grad); }
    else {
        assert_non_null(x1->grad);
        assert_memory_equal(x1->grad, x2->grad, (size_t)n * sizeof(float));
    }
    free(xd); free(g); free(p0);
    al_ctx_free(c);
}

static void test_split_qkv(void **st)
{
    (void)st;
    /* hand values: x (1, 2, 3·2·1), row n = [q0 q1 | k0 k1 | v0 v1] with H = 2, D = 1 */
    al_ctx *c = al_ctx_new(1);
    float xd[12]; iota(xd, 12);
    al_tensor *x = al_wrap(c, xd, 3, (int[]){1, 2, 6}), *q, *k, *v;
    assert_int_equal(al_split_qkv(c, x, 2, &q, &k, &v), AL_OK);
    const float eq[4] = {0, 6, 1, 7}, ek[4] = {2, 8, 3, 9}, ev[4] = {4, 10, 5, 11};   /* (b, h, n, d) */
    assert_memory_equal(q->data, eq, sizeof eq);
    assert_memory_equal(k->data, ek, sizeof ek);
    assert_memory_equal(v->data, ev, sizeof ev);
    assert_int_equal(q->requires_grad, 0);                 /* x needs no gradient: no tape entry */
    assert_int_equal(c->ntape, 0);
    assert_int_equal(al_split_qkv(c, x, 4, &q, &k, &v), AL_ERR);
    assert_null(q); assert_null(k); assert_null(v);
    assert_non_null(strstr(al_ctx_error(c), "divisible by 3·4 heads"));
    al_ctx_clear_error(c);
    al_tensor *x2 = al_wrap(c, xd, 2, (int[]){2, 6});
    assert_int_equal(al_split_qkv(c, x2, 1, &q, &k, &v), AL_ERR);
    assert_non_null(strstr(al_ctx_error(c), "(2, 6) must be (B, N, 3·H·D)"));
    al_ctx_clear_error(c);
    assert_int_equal(al_split_qkv(c, NULL, 1, &q, &k, &v), AL_ERR);
    assert_true(al_ok(c));                                 /* NULL input: no new error */
    al_ctx_free(c);

    /* against the unfused composition, odd shapes, serial and parallel sizes, every gradient pattern */
    qkv_case(1, 1, 1, 1, 7, 0);
    qkv_case(1, 7, 3, 5, 7, 0);
    qkv_case(2, 63, 1, 7, 5, 0);       /* k gets no gradient: its part of a fresh dx must be zeros */
    qkv_case(2, 65, 2, 3, 2, 1);       /* accumulates into an existing gradient */
    qkv_case(3, 5, 2, 2, 0, 0);        /* no output gradient: x gets none */
    qkv_case(2, 129, 4, 32, 7, 0);     /* 99 072 elements: the OpenMP path */
    qkv_case(2, 129, 4, 32, 3, 1);

    int heads = 2;
    float *d = tu_alloc_rand(2 * 3 * 12, 5, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 3, 2, 3, 12, 0)};
    TU_GRADCHECK("split_qkv", qkv_fn, &heads, in, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- linear + q/k/v split ---------------- */
static al_tensor *lqkv_fn(al_ctx *c, al_tensor **t, void *ud)
{
    al_tensor *o[3];
    if (al_linear_qkv(c, t[0], t[1], t[2], *(int *)ud, &o[0], &o[1], &o[2]) != AL_OK) return NULL;
    return al_concat_last(c, 3, o);
}

/* al_linear_qkv is al_split_qkv(al_linear(...)) bit for bit, forward and every gradient (x, w, b; x
 * fresh or accumulating); it keeps no (B, N, 3·H·D) tensor; finite differences agree; bad shapes fail. */
static void test_linear_qkv(void **st)
{
    (void)st;
    const int shapes[][4] = {{1, 3, 1, 2}, {2, 65, 4, 16}, {2, 129, 4, 32}};   /* B, N, H, D (in = 24) */
    for (int si = 0; si < 3; si++)
        for (int pre = 0; pre < 2; pre++) {
            const int B = shapes[si][0], N = shapes[si][1], H = shapes[si][2], D = shapes[si][3], in = 24, out = 3 * H * D;
            al_ctx *c = al_ctx_new(1);
            float *xd = tu_alloc_rand((int64_t)B * N * in, 11 + si, -1, 1), *wd = tu_alloc_rand((int64_t)out * in, 12, -1, 1);
            float *bd = tu_alloc_rand(out, 13, -1, 1), *g = tu_alloc_rand((int64_t)3 * B * N * out, 14, -1, 1);
            al_tensor *x[2], *w[2], *b[2], *o[2][3];
            for (int k = 0; k < 2; k++) {
                x[k] = al_wrap(c, xd, 3, (int[]){B, N, in});
                float *wc = malloc((size_t)out * in * sizeof(float)), *bc = malloc((size_t)out * sizeof(float));
                memcpy(wc, wd, (size_t)out * in * sizeof(float)); memcpy(bc, bd, (size_t)out * sizeof(float));
                w[k] = al_wrap(c, wc, 2, (int[]){out, in}); b[k] = al_wrap(c, bc, 1, (int[]){out});
                x[k]->requires_grad = w[k]->requires_grad = b[k]->requires_grad = 1;
                if (pre) memset(al_grad(c, x[k]), 0, 4);   /* an existing gradient: accumulate */
            }
            size_t used0 = c->arena.used;
            assert_int_equal(al_linear_qkv(c, x[0], w[0], b[0], H, &o[0][0], &o[0][1], &o[0][2]), AL_OK);
            size_t fused = c->arena.used - used0;
            assert_true(fused < 3 * (size_t)B * N * H * D * sizeof(float) + 4096);   /* the outputs, no projection */
            assert_int_equal(al_split_qkv(c, al_linear(c, x[1], w[1], b[1]), H, &o[1][0], &o[1][1], &o[1][2]), AL_OK);
            for (int s = 0; s < 3; s++) {
                assert_memory_equal(o[0][s]->data, o[1][s]->data, (size_t)o[0][s]->numel * sizeof(float));
                for (int k = 0; k < 2; k++) memcpy(al_grad(c, o[k][s]), g + (int64_t)s * o[0][s]->numel, (size_t)o[0][s]->numel * sizeof(float));
            }
            assert_int_equal(al_backward_run(c), AL_OK);
            assert_memory_equal(x[0]->grad, x[1]->grad, (size_t)x[0]->numel * sizeof(float));
            assert_memory_equal(w[0]->grad, w[1]->grad, (size_t)w[0]->numel * sizeof(float));
            assert_memory_equal(b[0]->grad, b[1]->grad, (size_t)b[0]->numel * sizeof(float));
            for (int k = 0; k < 2; k++) { free(w[k]->data); free(b[k]->data); }
            free(xd); free(wd); free(bd); free(g);
            al_ctx_free(c);
        }
    al_ctx *c = al_ctx_new(1);
    float xd[12] = {0}, wd[36] = {0};
    al_tensor *x = al_wrap(c, xd, 3, (int[]){1, 3, 4}), *w = al_wrap(c, wd, 2, (int[]){9, 4}), *q, *k, *v;
    assert_int_equal(al_linear_qkv(c, x, w, NULL, 2, &q, &k, &v), AL_ERR);   /* 9 not divisible by 3·2 */
    assert_null(q);
    assert_non_null(strstr(al_ctx_error(c), "linear_qkv"));
    al_ctx_free(c);

    int heads = 2;
    float *d = tu_alloc_rand(2 * 3 * 5, 5, -1, 1), *wv = tu_alloc_rand(12 * 5, 6, -1, 1), *bv = tu_alloc_rand(12, 7, -1, 1);
    tu_input tin[3] = {tu_in(d, 1, 3, 2, 3, 5, 0), tu_in(wv, 1, 2, 12, 5, 0, 0), tu_in(bv, 1, 1, 12, 0, 0, 0)};
    TU_GRADCHECK("linear_qkv", lqkv_fn, &heads, tin, 3, 1e-2, 1e-3);
    free(d); free(wv); free(bv);
}

/* ---------------- concat / slice ---------------- */
static al_tensor *concat_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_concat_last(c, 3, t); }
typedef struct slice_args { int start, len; } slice_args;
static al_tensor *slice_fn(al_ctx *c, al_tensor **t, void *ud)
{
    slice_args *a = ud;
    return al_slice_last(c, t[0], a->start, a->len);
}

static void test_concat_last(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float ad[4] = {1, 2, 3, 4}, bd[6] = {10, 11, 12, 13, 14, 15};
    al_tensor *a = al_wrap(c, ad, 2, (int[]){2, 2}), *b = al_wrap(c, bd, 2, (int[]){2, 3});
    al_tensor *y = al_concat_last(c, 2, (al_tensor *[]){a, b});
    assert_non_null(y);
    assert_int_equal(y->shape[0], 2); assert_int_equal(y->shape[1], 5);
    float want[10] = {1, 2, 10, 11, 12, 3, 4, 13, 14, 15};
    assert_memory_equal(y->data, want, sizeof want);
    /* only b requires a gradient: a gets none */
    b->requires_grad = 1;
    al_tensor *y2 = al_concat_last(c, 2, (al_tensor *[]){a, b});
    float *g = al_grad(c, y2);
    for (int i = 0; i < 10; i++) g[i] = (float)i;
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_null(a->grad);
    float gb[6] = {2, 3, 4, 7, 8, 9};
    assert_memory_equal(b->grad, gb, sizeof gb);

    al_tensor *bad = al_wrap(c, bd, 2, (int[]){3, 2});
    expect_error(c, al_concat_last(c, 2, (al_tensor *[]){a, bad}), "tensor 1 (3, 2) does not match tensor 0 (2, 2)");
    expect_error(c, al_concat_last(c, 2, (al_tensor *[]){a, al_wrap(c, bd, 1, (int[]){6})}), "does not match");
    expect_error(c, al_concat_last(c, 0, (al_tensor *[]){a}), "at least one");
    assert_null(al_concat_last(c, 2, (al_tensor *[]){a, NULL}));
    assert_true(al_ok(c));
    al_ctx_free(c);

    float *d0 = tu_alloc_rand(2 * 3 * 2, 1, -1, 1), *d1 = tu_alloc_rand(2 * 3 * 5, 2, -1, 1), *d2 = tu_alloc_rand(2 * 3 * 1, 3, -1, 1);
    tu_input in[3] = {tu_in(d0, 1, 3, 2, 3, 2, 0), tu_in(d1, 1, 3, 2, 3, 5, 0), tu_in(d2, 1, 3, 2, 3, 1, 0)};
    TU_GRADCHECK("concat_last", concat_fn, NULL, in, 3, 1e-2, 1e-3);
    free(d0); free(d1); free(d2);
}

static void test_slice_last(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float xd[12]; iota(xd, 12);
    al_tensor *x = al_wrap(c, xd, 2, (int[]){3, 4});
    al_tensor *y = al_slice_last(c, x, 1, 2);
    assert_non_null(y);
    assert_int_equal(y->shape[0], 3); assert_int_equal(y->shape[1], 2);
    float want[6] = {1, 2, 5, 6, 9, 10};
    assert_memory_equal(y->data, want, sizeof want);
    expect_error(c, al_slice_last(c, x, 3, 2), "[3, 5) is not a non-empty range inside the last dim of x (3, 4)");
    expect_error(c, al_slice_last(c, x, -1, 2), "[-1, 1)");
    expect_error(c, al_slice_last(c, x, 0, 0), "non-empty");
    assert_non_null(al_slice_last(c, x, 0, 4));
    /* 4-D: y[a][b][d][j] = x4[a][b][d][3 + j] */
    float x4d[2 * 3 * 2 * 7]; iota(x4d, 2 * 3 * 2 * 7);
    al_tensor *y4 = al_slice_last(c, al_wrap(c, x4d, 4, (int[]){2, 3, 2, 7}), 3, 4);
    assert_non_null(y4);
    assert_int_equal(y4->ndim, 4); assert_int_equal(y4->shape[2], 2); assert_int_equal(y4->shape[3], 4);
    for (int r = 0; r < 12; r++) for (int j = 0; j < 4; j++) assert_float_equal(y4->data[r * 4 + j], r * 7 + 3 + j, 0);
    al_ctx_free(c);

    slice_args a = {2, 3};
    float *d = tu_alloc_rand(2 * 3 * 7, 4, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 3, 2, 3, 7, 0)};
    TU_GRADCHECK("slice_last", slice_fn, &a, in, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- embedding ---------------- */
static const int emb_ids[6] = {2, 0, 2, 4, 1, 2};   /* repeated ids: gradients add up */
static al_tensor *embed_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_embedding(c, t[0], emb_ids, 6); }

static void test_embedding(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    float td[10]; iota(td, 10);                        /* (5, 2) */
    al_tensor *t = al_wrap(c, td, 2, (int[]){5, 2});
    t->requires_grad = 1;
    int ids[3] = {4, 0, 4};
    al_tensor *y = al_embedding(c, t, ids, 3);
    assert_non_null(y);
    assert_int_equal(y->shape[0], 3); assert_int_equal(y->shape[1], 2);
    float want[6] = {8, 9, 0, 1, 8, 9};
    assert_memory_equal(y->data, want, sizeof want);
    ids[0] = 1;                                        /* the op copied ids: changing them now has no effect */
    float *g = al_grad(c, y);
    for (int i = 0; i < 6; i++) g[i] = 1;
    assert_int_equal(al_backward_run(c), AL_OK);
    float gw[10] = {1, 1, 0, 0, 0, 0, 0, 0, 2, 2};
    assert_memory_equal(t->grad, gw, sizeof gw);
    expect_error(c, al_embedding(c, t, (int[]){0, 5}, 2), "ids[1] = 5 is out of range [0, 5)");
    expect_error(c, al_embedding(c, t, (int[]){-1}, 1), "ids[0] = -1");
    expect_error(c, al_embedding(c, t, ids, 0), "at least one id");
    expect_error(c, al_embedding(c, al_wrap(c, td, 1, (int[]){10}), ids, 1), "(10) must be (V, C)");
    al_ctx_free(c);

    float *d = tu_alloc_rand(5 * 3, 5, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 2, 5, 3, 0, 0)};
    TU_GRADCHECK("embedding", embed_fn, NULL, in, 1, 1e-2, 1e-3);
    free(d);
}

/* ---------------- patchify ---------------- */
static al_tensor *patch_fn(al_ctx *c, al_tensor **t, void *ud) { return al_patchify(c, t[0], *(int *)ud); }

static void test_patchify(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    /* (1, 2, 4, 6), p = 2 → (1, 2·3, 2·2·2): patch (gy, gx) = grid row-major, flattened (c, dy, dx) */
    float xd[48]; iota(xd, 48);                        /* x[c][h][w] = 24c + 6h + w */
    al_tensor *y = al_patchify(c, al_wrap(c, xd, 4, (int[]){1, 2, 4, 6}), 2);
    assert_non_null(y);
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0], 1); assert_int_equal(y->shape[1], 6); assert_int_equal(y->shape[2], 8);
    /* patch 0 (gy 0, gx 0): c0 rows 0-1 cols 0-1 = 0 1 6 7; c1 = 24 25 30 31 */
    float p0[8] = {0, 1, 6, 7, 24, 25, 30, 31};
    assert_memory_equal(y->data, p0, sizeof p0);
    /* patch 4 (gy 1, gx 1): c0 rows 2-3 cols 2-3 = 14 15 20 21; c1 = 38 39 44 45 */
    float p4[8] = {14, 15, 20, 21, 38, 39, 44, 45};
    assert_memory_equal(y->data + 4 * 8, p4, sizeof p4);
    for (int t = 0; t < 6; t++) for (int ch = 0; ch < 2; ch++) for (int dy = 0; dy < 2; dy++) for (int dx = 0; dx < 2; dx++) {
        int gy = t / 3, gx = t % 3;
        assert_float_equal(y->data[t * 8 + ch * 4 + dy * 2 + dx], 24 * ch + 6 * (gy * 2 + dy) + gx * 2 + dx, 0);
    }
    /* p = 1 is a transpose to tokens: (B, H·W, C) */
    al_tensor *y1 = al_patchify(c, al_wrap(c, xd, 4, (int[]){1, 2, 4, 6}), 1);
    assert_non_null(y1);
    assert_int_equal(y1->shape[1], 24); assert_int_equal(y1->shape[2], 2);
    assert_float_equal(y1->data[2 * 7 + 1], 24 + 7, 0);
    al_tensor *x = al_wrap(c, xd, 4, (int[]){1, 2, 4, 6});
    expect_error(c, al_patchify(c, x, 4), "multiples of the patch size 4");
    expect_error(c, al_patchify(c, x, 0), "patch size 0");
    expect_error(c, al_patchify(c, al_wrap(c, xd, 3, (int[]){2, 4, 6}), 2), "(2, 4, 6)");
    al_ctx_free(c);

    int p = 2;
    float *d = tu_alloc_rand(2 * 3 * 4 * 6, 6, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 4, 2, 3, 4, 6)};
    TU_GRADCHECK("patchify", patch_fn, &p, in, 1, 1e-2, 1e-3);
    free(d);
}

/* The gradient flows through a chain of shape ops into one input that is used twice. */
static al_tensor *chain_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    al_tensor *tok = al_patchify(c, t[0], 2);                         /* (2, 4, 8) */
    al_tensor *h = al_split_heads(c, tok, 2);                          /* (2, 2, 4, 4) */
    al_tensor *m = al_merge_heads(c, al_permute(c, h, (int[]){0, 1, 3, 2}));   /* (2, 4, 8) */
    al_tensor *cat = al_concat_last(c, 2, (al_tensor *[]){m, tok});   /* (2, 4, 16) */
    al_tensor *s = al_slice_last(c, cat, 3, 10);                       /* (2, 4, 10) */
    return al_reshape(c, al_mean_tokens(c, s), 1, (int[]){20});
}
static void test_shape_chain_gradcheck(void **st)
{
    (void)st;
    float *d = tu_alloc_rand(2 * 2 * 4 * 4, 7, -1, 1);
    tu_input in[1] = {tu_in(d, 1, 4, 2, 2, 4, 4)};
    TU_GRADCHECK("shape chain", chain_fn, NULL, in, 1, 1e-2, 1e-3);
    free(d);
}

/* Large enough to take the OpenMP path of the index map: forward exact, backward exact. */
static void test_patchify_large_roundtrip(void **st)
{
    (void)st;
    enum { B = 32, C = 3, H = 32, W = 32, P = 4 };   /* 98304 elements */
    al_ctx *c = al_ctx_new(1);
    float *xd = tu_alloc_rand(B * C * H * W, 8, -1, 1);
    al_tensor *x = al_wrap(c, xd, 4, (int[]){B, C, H, W});
    x->requires_grad = 1;
    al_tensor *y = al_patchify(c, x, P);
    assert_non_null(y);
    for (int b = 0; b < B; b += 5) for (int t = 0; t < 64; t += 3) for (int k = 0; k < C * P * P; k++) {
        int gy = t / 8, gx = t % 8, ch = k / (P * P), dy = (k / P) % P, dx = k % P;
        assert_float_equal(y->data[((size_t)b * 64 + t) * C * P * P + k],
                           xd[(((size_t)b * C + ch) * H + gy * P + dy) * W + gx * P + dx], 0);
    }
    /* backward of an injective copy: dL/dx = the matching element of dL/dy */
    float *g = al_grad(c, y);
    memcpy(g, y->data, (size_t)y->numel * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    assert_memory_equal(x->grad, xd, (size_t)x->numel * sizeof(float));
    free(xd);
    al_ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reshape),
        cmocka_unit_test(test_permute),
        cmocka_unit_test(test_mean_tokens),
        cmocka_unit_test(test_split_merge_heads),
        cmocka_unit_test(test_split_qkv),
        cmocka_unit_test(test_linear_qkv),
        cmocka_unit_test(test_concat_last),
        cmocka_unit_test(test_slice_last),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_patchify),
        cmocka_unit_test(test_shape_chain_gradcheck),
        cmocka_unit_test(test_patchify_large_roundtrip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
