/* test_attention_qkv.c — al_attention_qkv: attention on a packed (B,N,3·H·D) projection, the heads
 * merged on the way out. Promise: the same bits as al_merge_heads(al_attention(al_split_qkv(qkv))),
 * forward and backward (the gradient of qkv and of the relative bias), on 1 and 2 threads. Where the
 * d = 16 lane kernels run, q, k, v are read in place (al_attention_qkv_inplace says so, and must say so
 * on a build with AVX2 or AVX-512); elsewhere the call splits and merges. Also a finite-difference check
 * of the in-place path and the argument errors. */
#include "testutil.h"
#include "attnlab/attention.h"
#include "attnlab/ops.h"
#include "attention/attention_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct qcase {
    const char *name;
    al_pattern pat;
    int B, H, N, D, rel, additive, inplace;   /* inplace: expected where the lane kernels exist */
    float dropout;
} qcase;

typedef struct qrun { float *out, *dqkv, *drel, *daq; int64_t nout, nqkv, nrel, naq; } qrun;

static void qrun_free(qrun *r) { free(r->out); free(r->dqkv); free(r->drel); free(r->daq); }

static float *dup(const float *x, int64_t n)
{
    float *y = malloc((size_t)n * sizeof(float));
    assert_non_null(y);
    memcpy(y, x, (size_t)n * sizeof(float));
    return y;
}

/* One forward + backward of L = Σ r ⊙ out, packed (packed = 1) or split/attend/merge. */
static qrun run(const qcase *k, const float *x, const float *rel, const float *aq, const float *r, int packed, int threads)
{
    al_set_threads(threads);
    al_ctx *c = al_ctx_new(7);
    c->training = 1;
    const int H = k->H, D = k->D, noff = al_pattern_offsets(&k->pat);
    al_tensor *qkv = al_wrap(c, (float *)x, 3, (int[]){k->B, k->N, 3 * H * D});
    qkv->requires_grad = 1;
    al_tensor *tr = k->rel ? al_wrap(c, (float *)rel, 2, (int[]){H, noff}) : NULL;
    if (tr) tr->requires_grad = 1;
    al_tensor *ta = k->additive ? al_wrap(c, (float *)aq, 2, (int[]){H, D}) : NULL;
    al_tensor *tk = k->additive ? al_wrap(c, (float *)aq + H * D, 2, (int[]){H, D}) : NULL;
    if (ta) { ta->requires_grad = 1; tk->requires_grad = 1; }
    al_attn_desc d = {.pattern = k->pat, .score = k->additive ? AL_SCORE_ADDITIVE : AL_SCORE_DOT, .slope = 0.2f,
                      .dropout = k->dropout};
    al_tensor *o;
    if (packed) {
        o = al_attention_qkv(c, &d, qkv, H, ta, tk, tr, NULL);
    } else {
        al_tensor *q, *kk, *v;
        assert_int_equal(al_split_qkv(c, qkv, H, &q, &kk, &v), AL_OK);
        o = al_merge_heads(c, al_attention(c, &d, q, kk, v, ta, tk, tr, NULL));
    }
    if (!o) fail_msg("%s: %s", k->name, al_ctx_error(c));
    assert_int_equal(o->ndim, 3);
    assert_int_equal(o->shape[2], H * D);
    float *g = al_grad(c, o);
    for (int64_t i = 0; i < o->numel; i++) g[i] = r[i];
    assert_int_equal(al_backward_run(c), AL_OK);
    qrun q = {dup(o->data, o->numel), dup(qkv->grad, qkv->numel), tr ? dup(tr->grad, tr->numel) : NULL,
              ta ? dup(ta->grad, ta->numel) : NULL, o->numel, qkv->numel, tr ? tr->numel : 0, ta ? ta->numel : 0};
    al_ctx_free(c);
    return q;
}

static void same_bits(const qcase *k, const char *what, const float *a, const float *b, int64_t n, int threads)
{
    if (n && memcmp(a, b, (size_t)n * sizeof(float)))
        fail_msg("%s, %d thread(s): %s bits differ from split + attention + merge", k->name, threads, what);
}

static void test_qkv_matches_split(void **st)
{
    (void)st;
    const qcase cs[] = {
        {"full d16", al_pattern_full(), 2, 4, 37, 16, 0, 0, 1, 0.f},
        {"full d16 several key tiles", al_pattern_full(), 1, 4, 300, 16, 0, 0, 1, 0.f},
        {"full d16, B·H < 4 (split)", al_pattern_full(), 1, 2, 21, 16, 0, 0, 0, 0.f},
        {"window2d d16 + rel", al_pattern_window2d(7, 9, 5, 5), 2, 4, 63, 16, 1, 0, 1, 0.f},
        {"window2d d16, window wider than the grid", al_pattern_window2d(3, 5, 7, 11), 1, 2, 15, 16, 1, 0, 1, 0.f},
        {"window1d d16", al_pattern_window1d(3), 2, 2, 40, 16, 0, 0, 1, 0.f},
        {"full d8 (split)", al_pattern_full(), 2, 4, 19, 8, 0, 0, 0, 0.f},
        {"window2d additive (split)", al_pattern_window2d(4, 4, 3, 3), 1, 2, 16, 16, 0, 1, 0, 0.f},
        {"full d16 dropout (split)", al_pattern_full(), 2, 4, 23, 16, 0, 0, 0, 0.25f},
    };
    const int lanes = strstr(al_attn_kernels(), "per vector") != NULL;   /* AVX2 / AVX-512 builds */
    for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
        const qcase *k = &cs[t];
        const int H = k->H, D = k->D, noff = al_pattern_offsets(&k->pat);
        const int64_t nx = (int64_t)k->B * k->N * 3 * H * D, no = (int64_t)k->B * k->N * H * D;
        float *x = tu_alloc_rand(nx, 11 + t, -1.5f, 1.5f), *r = tu_alloc_rand(no, 12 + t, -1, 1);
        float *rel = tu_alloc_rand(noff ? (int64_t)H * noff : 1, 13 + t, -0.5f, 0.5f);
        float *aq = tu_alloc_rand(2 * H * D, 14 + t, -0.5f, 0.5f);
        al_ctx *c = al_ctx_new(1);
        c->training = 1;
        al_attn_desc d = {.pattern = k->pat, .score = k->additive ? AL_SCORE_ADDITIVE : AL_SCORE_DOT, .dropout = k->dropout};
        const int inplace = al_attention_qkv_inplace(c, &d, k->B, k->N, H, D, NULL);
        assert_true(al_ok(c));
        al_ctx_free(c);
        if (inplace != (k->inplace && lanes)) fail_msg("%s: in place %d, expected %d", k->name, inplace, k->inplace && lanes);
        for (int threads = 1; threads <= 2; threads++) {
            qrun a = run(k, x, rel, aq, r, 1, threads), b = run(k, x, rel, aq, r, 0, threads);
            same_bits(k, "output", a.out, b.out, a.nout, threads);
            same_bits(k, "qkv gradient", a.dqkv, b.dqkv, a.nqkv, threads);
            same_bits(k, "rel gradient", a.drel, b.drel, a.nrel, threads);
            same_bits(k, "a_q gradient", a.daq, b.daq, a.naq, threads);
            qrun_free(&a); qrun_free(&b);
        }
        free(x); free(r); free(rel); free(aq);
    }
    al_set_threads(1);
}

/* Finite differences through the in-place path (full and window + relative bias). */
typedef struct gq { al_pattern pat; int H; } gq;
static al_tensor *gq_fn(al_ctx *c, al_tensor **t, void *p)
{
    const gq *u = p;
    al_attn_desc d = {.pattern = u->pat, .score = AL_SCORE_DOT};
    return al_attention_qkv(c, &d, t[0], u->H, NULL, NULL, u->pat.kind == AL_PAT_FULL ? NULL : t[1], NULL);
}

static void test_qkv_gradcheck(void **st)
{
    (void)st;
    const gq cs[] = {{al_pattern_full(), 4}, {al_pattern_window2d(3, 4, 3, 3), 2}};
    for (int t = 0; t < 2; t++) {
        const int B = 1, H = cs[t].H, N = 12, D = 16, noff = al_pattern_offsets(&cs[t].pat);
        float *x = tu_alloc_rand((int64_t)B * N * 3 * H * D, 21 + t, -1, 1);
        float *rel = tu_alloc_rand(noff ? H * noff : 1, 22 + t, -0.5f, 0.5f);
        tu_input in[2] = {tu_in(x, 1, 3, B, N, 3 * H * D, 0), tu_in(rel, 1, 2, H, noff ? noff : 1, 0, 0)};
        TU_GRADCHECK(t ? "attention_qkv window2d" : "attention_qkv full", gq_fn, (void *)&cs[t], in, noff ? 2 : 1, 1e-2, 2e-2);
        free(x); free(rel);
    }
}

static void test_qkv_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_attn_desc d = {.pattern = al_pattern_full(), .score = AL_SCORE_DOT};
    al_tensor *x = al_zeros(c, 3, (int[]){1, 4, 40});
    assert_null(al_attention_qkv(c, &d, x, 3, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "(1, 4, 40) must be (B, N, 3·H·D) with H = 3"));
    al_ctx_clear_error(c);
    x = al_zeros(c, 3, (int[]){1, 4, 48});
    d.pattern = al_pattern_window2d(3, 3, 3, 3);
    assert_null(al_attention_qkv(c, &d, x, 1, NULL, NULL, NULL, NULL));
    assert_non_null(strstr(al_ctx_error(c), "grid 3x3 does not hold N = 4"));
    al_ctx_clear_error(c);
    assert_int_equal(al_attention_qkv_inplace(c, &d, 1, 4, 1, 16, NULL), 0);   /* invalid: no error left behind */
    assert_true(al_ok(c));
    al_ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qkv_matches_split),
        cmocka_unit_test(test_qkv_gradcheck),
        cmocka_unit_test(test_qkv_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
