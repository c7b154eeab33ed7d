/* test_attention_util.h — helpers shared by the attention tests: a case description, random graphs,
 * and a runner that does forward + backward (fast or reference) and returns copies of every
 * result, so tests can compare implementations and configurations directly. */
#ifndef ATTNLAB_TEST_ATTENTION_UTIL_H
#define ATTNLAB_TEST_ATTENTION_UTIL_H
#include "testutil.h"
#include "attnlab/attention.h"
#include <stdlib.h>
#include <string.h>

typedef struct acase {
    al_pattern pat;
    int B, H, N, D, Dv;
    int additive, relu, use_rel, use_bias;
    float dropout, slope;
    uint64_t seed;
} acase;

enum { IN_Q, IN_K, IN_V, IN_AQ, IN_AK, IN_REL, IN_BIAS, IN_COUNT };

typedef struct aresult {
    float *out; int64_t nout;
    float *w; int64_t nw;                 /* attention weights (pattern layout) */
    float *g[IN_COUNT]; int64_t n[IN_COUNT];  /* gradients, NULL for absent inputs */
} aresult;

static inline void aresult_free(aresult *r)
{
    free(r->out); free(r->w);
    for (int i = 0; i < IN_COUNT; i++) free(r->g[i]);
    memset(r, 0, sizeof *r);
}

/* Random CSR on n nodes: each (i, j) with probability p, self-loops if selfloops; row `empty`
 * (if ≥ 0) gets no edges at all. Columns sorted, no duplicates. Caller frees with al_csr_free. */
static inline al_csr rand_graph(int n, double p, int selfloops, int empty, uint64_t seed)
{
    al_csr m = {0};
    m.rows = m.cols = n;
    m.rowptr = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t cap = (int64_t)n * n > 0 ? (int64_t)n * n : 1;
    m.col = malloc((size_t)cap * sizeof(int));
    al_rng r; al_rng_seed(&r, seed, 11);
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            int on = (i == j) ? selfloops : al_rng_uniform(&r) < p;
            if (i == empty) on = 0;
            if (on) m.col[m.nnz++] = j;
        }
        m.rowptr[i + 1] = m.nnz;
    }
    return m;
}

static inline al_attn_desc acase_desc(const acase *a, al_tensor **wout)
{
    al_attn_desc d = {0};
    d.pattern = a->pat;
    d.score = a->additive ? AL_SCORE_ADDITIVE : AL_SCORE_DOT;
    d.norm = a->relu ? AL_NORM_RELU : AL_NORM_SOFTMAX;
    d.slope = a->slope;
    d.dropout = a->dropout;
    d.weights = wout;
    return d;
}

static inline void acase_shape(const acase *a, int i, int *nd, int sh[4])
{
    int64_t slots = al_pattern_slots(&a->pat, a->N);
    int off = al_pattern_offsets(&a->pat);
    switch (i) {
    case IN_Q: case IN_K: *nd = 4; sh[0] = a->B; sh[1] = a->H; sh[2] = a->N; sh[3] = a->D; break;
    case IN_V: *nd = 4; sh[0] = a->B; sh[1] = a->H; sh[2] = a->N; sh[3] = a->Dv; break;
    case IN_AQ: case IN_AK: *nd = 2; sh[0] = a->H; sh[1] = a->D; break;
    case IN_REL: *nd = 2; sh[0] = a->H; sh[1] = off; break;
    default: *nd = 2; sh[0] = a->H; sh[1] = (int)slots; break;
    }
}

static inline int acase_has(const acase *a, int i)
{
    if (i == IN_AQ || i == IN_AK) return a->additive;
    if (i == IN_REL) return a->use_rel;
    if (i == IN_BIAS) return a->use_bias;
    return 1;
}

/* Random inputs for the case (deterministic in a->seed); data[i] NULL for absent inputs. */
static inline void acase_inputs(const acase *a, float *data[IN_COUNT])
{
    for (int i = 0; i < IN_COUNT; i++) {
        data[i] = NULL;
        if (!acase_has(a, i)) continue;
        int nd, sh[4];
        acase_shape(a, i, &nd, sh);
        int64_t n = al_shape_numel(nd, sh);
        float lo = -1.f, hi = 1.f;
        if (i >= IN_AQ) { lo = -0.5f; hi = 0.5f; }
        data[i] = tu_alloc_rand(n, a->seed * 31 + (uint64_t)i, lo, hi);
    }
}

/* Forward (+ backward with dL/dout = r fixed random) with the fast op or the reference. */
static inline aresult acase_run(const acase *a, float *data[IN_COUNT], int ref)
{
    aresult res = {0};
    al_ctx *c = al_ctx_new(77);
    al_tensor *t[IN_COUNT] = {0};
    for (int i = 0; i < IN_COUNT; i++) {
        if (!data[i]) continue;
        int nd, sh[4];
        acase_shape(a, i, &nd, sh);
        t[i] = al_wrap(c, data[i], nd, sh);
        t[i]->requires_grad = 1;
    }
    al_tensor *w = NULL;
    al_attn_desc d = acase_desc(a, &w);
    al_tensor *o = (ref ? al_attention_ref : al_attention)(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_AQ], t[IN_AK],
                                                           t[IN_REL], t[IN_BIAS]);
    if (!o) fail_msg("attention%s failed: %s", ref ? "_ref" : "", al_ctx_error(c));
    res.nout = o->numel;
    res.out = malloc((size_t)o->numel * sizeof(float));
    memcpy(res.out, o->data, (size_t)o->numel * sizeof(float));
    assert_non_null(w);
    res.nw = w->numel;
    res.w = malloc((size_t)w->numel * sizeof(float));
    memcpy(res.w, w->data, (size_t)w->numel * sizeof(float));
    float *og = al_grad(c, o);
    tu_fill(og, o->numel, 4242, -1.f, 1.f);
    if (al_backward_run(c) != AL_OK) fail_msg("backward failed: %s", al_ctx_error(c));
    for (int i = 0; i < IN_COUNT; i++) {
        if (!t[i]) continue;
        res.n[i] = t[i]->numel;
        res.g[i] = calloc((size_t)t[i]->numel, sizeof(float));
        if (t[i]->grad) memcpy(res.g[i], t[i]->grad, (size_t)t[i]->numel * sizeof(float));
    }
    al_ctx_free(c);
    return res;
}

static inline void acase_free_inputs(float *data[IN_COUNT])
{
    for (int i = 0; i < IN_COUNT; i++) { free(data[i]); data[i] = NULL; }
}

/* Runs case a on 1 and on 2 threads and asserts bitwise-identical outputs and gradients; leaves
 * the thread count at 2 (callers restore their own). */
static inline void acase_assert_same_across_threads(const acase *a)
{
    float *data[IN_COUNT];
    acase_inputs(a, data);
    al_set_threads(1);
    aresult x = acase_run(a, data, 0);
    al_set_threads(2);
    aresult y = acase_run(a, data, 0);
    assert_memory_equal(x.out, y.out, (size_t)x.nout * sizeof(float));
    for (int i = 0; i < IN_COUNT; i++)
        if (x.g[i]) assert_memory_equal(x.g[i], y.g[i], (size_t)x.n[i] * sizeof(float));
    aresult_free(&x); aresult_free(&y);
    acase_free_inputs(data);
}
#endif
