/* test_models_image.c — image models: parameter counts and order (the PyTorch peer's), init,
 * forward shapes of every option, end-to-end gradient checks of tiny models, configuration errors,
 * checkpoint round trip through safetensors metadata. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attnlab/models.h"
#include "attnlab/checkpoint.h"
#include "attnlab/train.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"

static void test_param_counts_match_peer(void **st)
{
    (void)st;
    static const struct { const char *name; long n; } want[] = {{"cnn", 50186}, {"sa", 80586}, {"local", 68242},
                                                                {"mlp", 784 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10}};
    for (int i = 0; i < 4; i++) {
        al_model m;
        tu_model_init(&m, want[i].name, 1, 28, 28, 10, 1);
        if (m.params.total != want[i].n) fail_msg("%s: %lld params, want %ld", want[i].name, (long long)m.params.total, want[i].n);
        for (int j = 0; j < m.params.n; j++) assert_int_equal(m.params.decay[j], 1);   /* AdamW on all, as the peer */
        al_model_free(&m);
    }
    /* pixel tokens: 784 positions of 64 instead of 196, and a 1-pixel patch embedding */
    al_model_config cfg; al_error e = {{0}}; al_model m;
    al_model_config_default(&cfg, "sa", 1, 28, 28, 10, &e);
    cfg.patch = 1;
    assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_OK);
    assert_int_equal(m.params.total, 80586 - 196 * 64 + 784 * 64 - 3 * 64);
    al_model_free(&m);
}

static void test_param_order_names_and_init(void **st)
{
    (void)st;
    al_model m;
    tu_model_init(&m, "cnn", 1, 28, 28, 10, 3);
    const char *cnn_names[] = {"c1.weight", "c1.bias", "c2.weight", "c2.bias", "fc.weight", "fc.bias"};
    assert_int_equal(m.params.n, 6);
    for (int i = 0; i < 6; i++) assert_string_equal(m.params.t[i]->name, cnn_names[i]);
    assert_int_equal(m.fc_w->shape[1], 3136);
    /* Kaiming-uniform bound 1/sqrt(fan_in), weights and biases */
    float b1 = 1.f / sqrtf(9.f), b2 = 1.f / sqrtf(288.f), mx1 = 0, mx2 = 0;
    for (int i = 0; i < 32 * 9; i++) { assert_true(fabsf(m.c1_w->data[i]) <= b1); mx1 = fmaxf(mx1, fabsf(m.c1_w->data[i])); }
    for (int i = 0; i < 64; i++) { assert_true(fabsf(m.c2_b->data[i]) <= b2); mx2 = fmaxf(mx2, fabsf(m.c2_b->data[i])); }
    assert_true(mx1 > 0.9f * b1 && mx2 > 0.8f * b2);
    al_model_free(&m);

    tu_model_init(&m, "sa", 1, 28, 28, 10, 3);
    const char *sa_first[] = {"embed.weight", "embed.bias", "pos", "blocks.0.ln1.weight", "blocks.0.ln1.bias",
                              "blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.weight",
                              "blocks.0.attn.proj.bias", "blocks.0.ln2.weight", "blocks.0.ln2.bias",
                              "blocks.0.fc1.weight", "blocks.0.fc1.bias", "blocks.0.fc2.weight", "blocks.0.fc2.bias"};
    for (int i = 0; i < 15; i++) assert_string_equal(m.params.t[i]->name, sa_first[i]);
    assert_string_equal(m.params.t[m.params.n - 1]->name, "head.bias");
    assert_string_equal(m.params.t[m.params.n - 4]->name, "ln.weight");
    double s = 0, s2 = 0;
    for (int i = 0; i < 196 * 64; i++) { s += m.pos->data[i]; s2 += (double)m.pos->data[i] * m.pos->data[i]; }
    double sd = sqrt(s2 / (196 * 64) - (s / (196 * 64)) * (s / (196 * 64)));
    assert_true(sd > 0.019 && sd < 0.021);
    for (int i = 0; i < 64; i++) { assert_true(m.blocks[1].ln1_w->data[i] == 1.f); assert_true(m.blocks[1].ln1_b->data[i] == 0.f); }
    assert_null(m.blocks[0].rel);
    al_model_free(&m);

    tu_model_init(&m, "local", 1, 28, 28, 10, 3);
    assert_null(m.pos);
    assert_non_null(m.blocks[0].rel);
    assert_int_equal(m.blocks[0].rel->shape[0], 4); assert_int_equal(m.blocks[0].rel->shape[1], 25);
    for (int i = 0; i < 100; i++) assert_true(m.blocks[1].rel->data[i] == 0.f);
    assert_string_equal(m.params.t[8]->name, "blocks.0.attn.rel");
    al_model_free(&m);
}

static void check_forward(const al_model_config *cfg, int B)
{
    al_model m; al_error e = {{0}};
    if (al_model_init(&m, cfg, 7, &e) != AL_OK) fail_msg("%s: %s", cfg->name, e.msg);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_new(c, 4, (int[]){B, cfg->channels, cfg->height, cfg->width});
    tu_fill(x->data, x->numel, 5, -1, 1);
    al_tensor *y = al_model_forward(c, &m, x);
    if (!y) fail_msg("%s forward: %s", cfg->name, al_ctx_error(c));
    assert_int_equal(y->ndim, 2);
    assert_int_equal(y->shape[0], B);
    assert_int_equal(y->shape[1], cfg->classes);
    for (int64_t i = 0; i < y->numel; i++) assert_true(isfinite(y->data[i]));
    /* the backward runs and reaches the first layer */
    al_tensor *loss = al_cross_entropy(c, y, (int[]){0, 1, 2, 0, 1, 2, 0, 1}, NULL);
    assert_int_equal(al_backward(c, loss), AL_OK);
    double g = 0;
    for (int64_t i = 0; i < m.params.t[0]->numel; i++) g += fabs(m.params.t[0]->grad[i]);
    assert_true(g > 0);
    al_ctx_free(c);
    al_model_free(&m);
}

static void test_forward_shapes(void **st)
{
    (void)st;
    al_model_config cfg; al_error e = {{0}};
    const char *names[] = {"cnn", "sa", "local", "gpsa"};
    for (int i = 0; i < 4; i++) { al_model_config_default(&cfg, names[i], 1, 28, 28, 10, &e); check_forward(&cfg, 3); }
    /* odd sizes: the cnn floors its pools (13 → 6 → 3); 3 channels */
    al_model_config_default(&cfg, "cnn", 3, 13, 10, 4, &e); check_forward(&cfg, 2);
    /* options on a small grid */
    al_model_config_default(&cfg, "sa", 2, 8, 12, 3, &e); cfg.dim = 16; cfg.heads = 2; cfg.hidden = 24; cfg.depth = 3;
    check_forward(&cfg, 2);
    al_pos_kind pos[] = {AL_POS_NONE, AL_POS_SINUSOIDAL, AL_POS_RELATIVE};
    for (int i = 0; i < 3; i++) { cfg.pos = pos[i]; check_forward(&cfg, 2); }
    cfg.pos = AL_POS_LEARNED; cfg.score = AL_SCORE_ADDITIVE; check_forward(&cfg, 2);
    cfg.score = AL_SCORE_DOT; cfg.norm = AL_NORM_RELU; check_forward(&cfg, 2);
    cfg.norm = AL_NORM_SOFTMAX; cfg.patch = 1; check_forward(&cfg, 2);
    al_model_config_default(&cfg, "hybrid", 1, 28, 28, 10, &e); check_forward(&cfg, 2);   /* 14x14 tokens */
    al_model_config_default(&cfg, "hybrid", 3, 10, 14, 4, &e); cfg.dim = 16; cfg.depth = 1; check_forward(&cfg, 2);
    al_model_config_default(&cfg, "local", 1, 12, 12, 5, &e); cfg.window = 3; check_forward(&cfg, 2);
    cfg.pos = AL_POS_LEARNED; check_forward(&cfg, 2);
    cfg.pos = AL_POS_RELATIVE; cfg.patch = 1; cfg.window = 7; check_forward(&cfg, 2);
}

static void test_forward_rejects_wrong_input(void **st)
{
    (void)st;
    al_model m;
    tu_model_init(&m, "sa", 1, 28, 28, 10, 1);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 4, (int[]){2, 1, 28, 27});
    assert_null(al_model_forward(c, &m, x));
    assert_non_null(strstr(al_ctx_error(c), "does not match"));
    al_ctx_free(c);
    al_model_free(&m);
}

static void test_config_errors(void **st)
{
    (void)st;
    al_model_config cfg; al_model m;
    al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "resnet", 1, 28, 28, 10, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "unknown model"));
    struct { const char *name; int field, value; const char *msg; } bad[] = {
        {"sa", 0, 3, "--patch"}, {"sa", 1, 5, "--heads"}, {"local", 2, 4, "--window"}, {"sa", 3, 0, "--depth"}};
    for (int i = 0; i < 4; i++) {
        memset(&e, 0, sizeof e);
        al_model_config_default(&cfg, bad[i].name, 1, 28, 28, 10, &e);
        int *f[] = {&cfg.patch, &cfg.heads, &cfg.window, &cfg.depth};
        *f[bad[i].field] = bad[i].value;
        assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_ERR);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("case %d: message '%s' lacks '%s'", i, e.msg, bad[i].msg);
    }
}

/* ---- end-to-end gradient checks: the input and every parameter of a tiny model ---- */
typedef struct gc_ud { al_model *m; al_tensor *flat; } gc_ud;
typedef struct collect_node { al_model *m; al_tensor *flat; } collect_node;
static void collect_backward(al_ctx *c, void *p)
{
    collect_node *n = p;
    float *g = al_grad(c, n->flat);
    for (int64_t i = 0; i < n->m->params.total; i++) g[i] += n->m->params.grad[i];
}
/* t[0] = x (B,C,H,W); t[1] = the flat parameter array (wrapping m->params.data itself). */
static al_tensor *model_fn(al_ctx *c, al_tensor **t, void *ud)
{
    al_model *m = ud;
    al_params_zero_grad(&m->params);
    if (c->grad_enabled && t[1]->requires_grad) {
        collect_node *n = al_arena_alloc(&c->arena, sizeof *n);
        n->m = m; n->flat = t[1];
        al_tape_push(c, collect_backward, n);   /* first on the tape: runs last in backward */
    }
    return al_model_forward(c, m, t[0]);
}
static void gradcheck_model(al_model_config *cfg, int check_params, double eps, double tol)
{
    al_model m; al_error e = {{0}};
    if (al_model_init(&m, cfg, 11, &e) != AL_OK) fail_msg("%s", e.msg);
    /* perturb the zero-initialised relative biases so their gradient path is exercised in general position */
    for (int b = 0; b < cfg->depth; b++) if (m.blocks[b].rel) tu_fill(m.blocks[b].rel->data, m.blocks[b].rel->numel, 3 + b, -0.5f, 0.5f);
    /* gpsa's gates start at σ(3): moved near 0 so that the gate's share of the gradient is not lost in the rest */
    for (int b = 0; b < cfg->depth; b++) if (m.blocks[b].gpsa_gate) tu_fill(m.blocks[b].gpsa_gate->data, cfg->heads, 13 + b, -1, 1);
    if (!strcmp(cfg->name, "conv-attn-ft"))   /* its queries start at 0 and its bias one-hot: every ReLU at a kink */
        for (int l = 0; l < 2; l++) {
            tu_fill(m.t[5 * l]->data, m.t[5 * l]->numel, 5 + l, -0.3f, 1.2f);
            tu_fill(m.t[5 * l + 1]->data, m.t[5 * l + 1]->numel, 7 + l, -0.6f, 0.6f);
        }
    int B = 2;
    int64_t nx = (int64_t)B * cfg->channels * cfg->height * cfg->width;
    float *x = tu_alloc_rand(nx, 21, -1.5f, 1.5f);
    tu_input in[2] = {tu_in(x, 1, 4, B, cfg->channels, cfg->height, cfg->width),
                      tu_in(m.params.data, check_params, 1, (int)m.params.total, 0, 0, 0)};
    char what[96];
    snprintf(what, sizeof what, "%s pos=%s score=%d norm=%d", cfg->name, al_pos_name(cfg->pos), cfg->score, cfg->norm);
    double t0 = al_time();
    TU_GRADCHECK(what, model_fn, &m, in, 2, eps, tol);
    if (getenv("TU_VERBOSE")) print_message("%s: %lld params, %.2f s\n", what, (long long)m.params.total, al_time() - t0);
    free(x);
    al_model_free(&m);
}

static void test_gradcheck_tiny_models(void **st)
{
    (void)st;
    int threads = al_threads();
    al_set_threads(1);   /* thousands of tiny forwards: thread start-up would dominate */
    al_model_config cfg; al_error e = {{0}};
    al_model_config_default(&cfg, "sa", 1, 4, 6, 3, &e);
    cfg.dim = 8; cfg.heads = 2; cfg.hidden = 12; cfg.depth = 2;
    gradcheck_model(&cfg, 1, 1e-2, 1e-2);
    cfg.score = AL_SCORE_ADDITIVE; cfg.pos = AL_POS_SINUSOIDAL;
    gradcheck_model(&cfg, 1, 1e-2, 1e-2);
    cfg.score = AL_SCORE_DOT; cfg.pos = AL_POS_RELATIVE;
    gradcheck_model(&cfg, 1, 1e-2, 1e-2);
    al_model_config_default(&cfg, "local", 2, 6, 6, 3, &e);
    cfg.dim = 8; cfg.heads = 2; cfg.hidden = 12; cfg.depth = 1; cfg.window = 3;
    gradcheck_model(&cfg, 1, 1e-2, 1e-2);
    /* cnn: the input gradient through conv, ReLU, max-pool, conv, ReLU, max-pool, linear */
    al_model_config_default(&cfg, "cnn", 1, 4, 4, 3, &e);
    gradcheck_model(&cfg, 0, 1e-3, 1e-2);
    /* mlp: every parameter and the input */
    al_model_config_default(&cfg, "mlp", 2, 3, 3, 4, &e);
    cfg.hidden = 5;
    gradcheck_model(&cfg, 1, 1e-3, 1e-2);   /* a small step: fewer ReLU kinks crossed */
    /* hybrid: conv stage, ReLU, max-pool, then attention blocks over the 3x2 map — every parameter, the input */
    al_model_config_default(&cfg, "hybrid", 1, 6, 4, 3, &e);
    cfg.dim = 8; cfg.heads = 2; cfg.hidden = 12; cfg.depth = 1;
    gradcheck_model(&cfg, 1, 1e-3, 1e-2);
    /* gpsa: 4 heads (a 2x2 neighbourhood) of gated positional attention over a 2x3 grid, two blocks — every
     * parameter (gates and positional vectors included) and the input */
    al_model_config_default(&cfg, "gpsa", 1, 4, 6, 3, &e);
    cfg.dim = 8; cfg.heads = 4; cfg.hidden = 12; cfg.depth = 2;
    gradcheck_model(&cfg, 1, 1e-2, 1e-2);
    /* conv-attn-ft: both attention layers (relative bias, queries, keys, output), ReLU, mass bound, pools,
     * linear — every parameter and the input, at window 5 and full */
    al_model_config_default(&cfg, "conv-attn-ft", 2, 6, 6, 3, &e);
    /* many ReLU kinks (attention weights, mass bound, activations) — a small step, and 2 % on the input's
     * gradient, whose every element moves queries, keys and values of both layers at once (a wrong factor
     * or a missing path shows as tens of percent) */
    gradcheck_model(&cfg, 1, 2e-4, 2e-2);
    cfg.window = 0;
    gradcheck_model(&cfg, 1, 2e-4, 2e-2);
    al_set_threads(threads);
}

/* conv-attn with a cnn's weights computes the cnn's function (exact construction, float rounding only). */
/* Backward passes write fresh activation gradients without zeroing them (al_grad_for_write):
 * a step on an arena full of NaN garbage must give the same parameter gradients, bitwise, as the
 * first step on clean memory (every model, small batch, the default architectures). */
static void test_grads_independent_of_arena_garbage(void **st)
{
    (void)st;
    const char *names[] = {"cnn", "sa", "local", "gpsa"};
    for (int mi = 0; mi < 4; mi++) {
        al_model_config cfg; al_model m; al_error e = {{0}};
        assert_int_equal(al_model_config_default(&cfg, names[mi], 1, 12, 12, 10, &e), AL_OK);
        if (al_model_init(&m, &cfg, 3, &e) != AL_OK) fail_msg("%s", e.msg);
        enum { B = 3 };
        float *xin = tu_alloc_rand(B * 144, 21, -1, 1);
        int y[B] = {1, 7, 4};
        float *g0 = malloc((size_t)m.params.total * sizeof(float));
        assert_non_null(g0);
        al_ctx *c = al_ctx_new(1);
        for (int pass = 0; pass < 2; pass++) {
            if (pass) {   /* fill the whole arena block the step will reuse with NaNs */
                size_t cap = al_arena_capacity(&c->arena);
                al_ctx_reset(c);
                float *junk = al_arena_alloc(&c->arena, cap / 2);
                assert_non_null(junk);
                memset(junk, 0xff, cap / 2);
                al_ctx_reset(c);
            }
            al_ctx_reset(c);
            al_tensor *x = al_wrap(c, xin, 4, (int[]){B, 1, 12, 12});
            al_tensor *loss = al_cross_entropy(c, al_model_forward(c, &m, x), y, NULL);
            assert_non_null(loss);
            al_params_zero_grad(&m.params);
            assert_int_equal(al_backward(c, loss), AL_OK);
            if (!pass) memcpy(g0, m.params.grad, (size_t)m.params.total * sizeof(float));
            else if (memcmp(g0, m.params.grad, (size_t)m.params.total * sizeof(float)))
                fail_msg("%s: gradients differ after the arena held garbage", names[mi]);
        }
        for (int64_t i = 0; i < m.params.total; i++) assert_true(isfinite(g0[i]));
        al_ctx_free(c); free(g0); free(xin); al_model_free(&m);
    }
}

/* Inference mode: without a tape the transformer blocks free their temporaries as they go (al_keep);
 * the logits are the training-mode forward's, bit for bit, in a fraction of the arena. */
static void test_inference_forward_same_bits_less_memory(void **st)
{
    (void)st;
    const char *names[] = {"sa", "local", "hybrid", "gpsa", "cnn"};
    for (int mi = 0; mi < 5; mi++) {
        al_model m;
        tu_model_init(&m, names[mi], 1, 16, 16, 10, 5);
        enum { B = 5 };
        float *xin = tu_alloc_rand(B * 256, 33, -1, 1);
        float out[2][B * 10];
        size_t peak[2];
        for (int pass = 0; pass < 2; pass++) {
            al_ctx *c = al_ctx_new(1);
            c->grad_enabled = pass == 0; c->training = 0;
            al_tensor *x = al_wrap(c, xin, 4, (int[]){B, 1, 16, 16});
            al_tensor *lg = al_model_forward(c, &m, x);
            if (!lg) fail_msg("%s: %s", names[mi], al_ctx_error(c));
            memcpy(out[pass], lg->data, sizeof out[pass]);
            peak[pass] = c->arena.peak;
            al_ctx_free(c);
        }
        if (memcmp(out[0], out[1], sizeof out[0])) fail_msg("%s: inference logits differ from the training forward", names[mi]);
        if (mi < 4 && !(peak[1] * 2 < peak[0]))
            fail_msg("%s: inference arena peak %zu not under half the training forward's %zu", names[mi], peak[1], peak[0]);
        free(xin); al_model_free(&m);
    }
}

static void test_conv_attn_equals_cnn(void **st)
{
    (void)st;
    al_model cnn, ca;
    tu_model_init(&cnn, "cnn", 2, 12, 10, 5, 8);
    tu_model_init(&ca, "conv-attn", 2, 12, 10, 5, 9);
    assert_int_equal(ca.params.total, cnn.params.total);
    memcpy(ca.params.data, cnn.params.data, (size_t)cnn.params.total * sizeof(float));
    al_model_refresh(&ca);
    al_ctx *c = al_ctx_new(1);
    c->grad_enabled = 0;
    al_tensor *x = al_new(c, 4, (int[]){3, 2, 12, 10});
    tu_fill(x->data, x->numel, 4, -2, 2);
    al_tensor *y1 = al_model_forward(c, &cnn, x), *y2 = al_model_forward(c, &ca, x);
    if (!y1 || !y2) fail_msg("%s", al_ctx_error(c));
    double e = tu_max_rel_err(y2->data, y1->data, y1->numel);
    if (!(e < 1e-5)) fail_msg("conv-attn vs cnn: rel err %.3g", e);
    /* after changing the weights, refresh rebuilds the attention layers */
    for (int64_t i = 0; i < cnn.params.total; i++) cnn.params.data[i] *= 0.5f;
    memcpy(ca.params.data, cnn.params.data, (size_t)cnn.params.total * sizeof(float));
    al_model_refresh(&ca);
    y1 = al_model_forward(c, &cnn, x); y2 = al_model_forward(c, &ca, x);
    assert_true(tu_max_rel_err(y2->data, y1->data, y1->numel) < 1e-5);
    al_ctx_free(c);
    al_model_free(&cnn); al_model_free(&ca);
}

/* conv-attn-ft built from a cnn (al_model_arch.from) computes the cnn's function before any update, at
 * every window: the same logits to rounding and the same predictions, on images with borders (zero
 * padding: an absent target key leaves its head at 0); a random initialisation is the conv prior too
 * (one-hot bias, zero queries); from() refuses a model that is not a cnn of the same images. */
static void test_conv_attn_ft_starts_as_the_cnn(void **st)
{
    (void)st;
    al_model cnn, ft, sa;
    tu_model_init(&cnn, "cnn", 2, 12, 10, 5, 8);
    al_ctx *c = al_ctx_new(1);
    c->grad_enabled = 0;
    al_tensor *x = al_new(c, 4, (int[]){6, 2, 12, 10});
    tu_fill(x->data, x->numel, 4, -2, 2);
    al_tensor *y1 = al_model_forward(c, &cnn, x);
    assert_non_null(y1);
    const int windows[] = {3, 5, 7, 0};
    for (int i = 0; i < 4; i++) {
        al_model_config cfg; al_error e = {{0}};
        assert_int_equal(al_model_config_default(&cfg, "conv-attn-ft", 2, 12, 10, 5, &e), AL_OK);
        cfg.window = windows[i];
        if (al_model_init(&ft, &cfg, 9, &e) != AL_OK) fail_msg("%s", e.msg);
        const al_model_arch *k = al_model_arch_find("conv-attn-ft");
        assert_string_equal(k->built_from, "cnn");
        if (k->from(&ft, &cnn, &e) != AL_OK) fail_msg("%s", e.msg);
        al_tensor *y2 = al_model_forward(c, &ft, x);
        if (!y2) fail_msg("%s", al_ctx_error(c));
        double err = tu_max_rel_err(y2->data, y1->data, y1->numel);
        if (!(err < 1e-5)) fail_msg("conv-attn-ft window %d vs cnn: rel err %.3g", windows[i], err);
        for (int b = 0; b < 6; b++) {
            int a1 = 0, a2 = 0;
            for (int j = 1; j < 5; j++) { if (y1->data[b * 5 + j] > y1->data[b * 5 + a1]) a1 = j; if (y2->data[b * 5 + j] > y2->data[b * 5 + a2]) a2 = j; }
            assert_int_equal(a1, a2);
        }
        /* a random initialisation: one-hot bias at the conv offsets, zero queries */
        const float *rel = ft.t[0]->data;
        const int win = windows[i] ? windows[i] : 2 * 12 - 1, r = win / 2;
        for (int h = 0; h < 9; h++)
            for (int o = 0; o < win * win; o++)
                assert_true(rel[h * win * win + o] == (o == (h / 3 - 1 + r) * win + (h % 3 - 1 + r) ? 1.0f : 0.0f));
        al_model_free(&ft);
    }
    /* not a cnn, or a cnn of other images */
    al_model_config cfg; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "conv-attn-ft", 2, 12, 10, 5, &e), AL_OK);
    if (al_model_init(&ft, &cfg, 9, &e) != AL_OK) fail_msg("%s", e.msg);
    tu_model_init(&sa, "sa", 2, 12, 10, 5, 3);
    assert_int_equal(al_model_arch_find("conv-attn-ft")->from(&ft, &sa, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "built from a cnn"));
    al_model_free(&sa);
    tu_model_init(&sa, "cnn", 1, 12, 10, 5, 3);
    assert_int_equal(al_model_arch_find("conv-attn-ft")->from(&ft, &sa, &e), AL_ERR);
    al_model_free(&sa);
    /* windows that are not odd or below the conv's 3 */
    const int badw[] = {1, 4, -3};
    for (int i = 0; i < 3; i++) { cfg.window = badw[i]; assert_int_equal(al_model_config_check(&cfg, &e), AL_ERR); }
    al_ctx_free(c);
    al_model_free(&ft); al_model_free(&cnn);
}

static void test_checkpoint_round_trip(void **st)
{
    (void)st;
    char path[64];
    snprintf(path, sizeof path, "/tmp/attnlab_test_models_%d.safetensors", (int)getpid());
    al_model_config cfg; al_error e = {{0}};
    al_model_config_default(&cfg, "local", 1, 12, 12, 4, &e);
    cfg.dim = 16; cfg.heads = 2; cfg.hidden = 20; cfg.window = 3; cfg.score = AL_SCORE_ADDITIVE; cfg.norm = AL_NORM_RELU;
    al_model m, m2;
    assert_int_equal(al_model_init(&m, &cfg, 5, &e), AL_OK);
    for (int b = 0; b < cfg.depth; b++) tu_fill(m.blocks[b].rel->data, m.blocks[b].rel->numel, 9, -1, 1);
    float mean[4] = {0.25f, 0, 0, 0}, std[4] = {0.5f, 1, 1, 1}, mean2[4], std2[4];
    const char *kv[] = {"seed", "5", "note", "a \"quoted\" value"};
    if (al_model_save(path, &m, mean, std, kv, 2, &e) != AL_OK) fail_msg("save: %s", e.msg);
    char *meta = NULL;
    if (al_model_load(path, &m2, mean2, std2, &meta, &e) != AL_OK) fail_msg("load: %s", e.msg);
    assert_string_equal(m2.cfg.name, "local");
    assert_int_equal(m2.cfg.dim, 16); assert_int_equal(m2.cfg.window, 3); assert_int_equal(m2.cfg.hidden, 20);
    assert_int_equal(m2.cfg.score, AL_SCORE_ADDITIVE); assert_int_equal(m2.cfg.norm, AL_NORM_RELU);
    assert_int_equal(m2.cfg.classes, 4); assert_int_equal(m2.cfg.pos, AL_POS_RELATIVE);
    assert_true(mean2[0] == 0.25f && std2[0] == 0.5f);
    assert_int_equal(m2.params.total, m.params.total);
    assert_memory_equal(m2.params.data, m.params.data, (size_t)m.params.total * sizeof(float));
    char *v = al_meta_get(meta, "seed");
    assert_non_null(v); assert_string_equal(v, "5"); free(v);
    free(meta);
    /* the same forward */
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_new(c, 4, (int[]){2, 1, 12, 12});
    tu_fill(x->data, x->numel, 8, -1, 1);
    al_tensor *y1 = al_model_forward(c, &m, x), *y2 = al_model_forward(c, &m2, x);
    assert_non_null(y1); assert_non_null(y2);
    assert_memory_equal(y1->data, y2->data, (size_t)y1->numel * sizeof(float));
    al_ctx_free(c);
    al_model_free(&m2);

    /* a truncated file is refused with a message, and so is a foreign safetensors file */
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(ftruncate(fileno(f), 20), 0);
    fclose(f);
    memset(&e, 0, sizeof e);
    assert_int_equal(al_model_load(path, &m2, mean2, std2, NULL, &e), AL_ERR);
    assert_true(e.msg[0] != 0);
    memset(&e, 0, sizeof e);
    assert_int_equal(al_safetensors_save(path, &m.params, (const char *[]){"model", "local"}, 1, &e), AL_OK);
    assert_int_equal(al_model_load(path, &m2, mean2, std2, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "not an attnlab image-model checkpoint"));
    al_model_free(&m);
    unlink(path);
}

static void test_run_canonical_covers_hyperparameters(void **st)
{
    (void)st;
    al_model_config cfg; al_error e = {{0}};
    al_model_config_default(&cfg, "sa", 1, 28, 28, 10, &e);
    char a[2048], b[2048], ia[17], ib[17];
    al_image_run_canonical(a, sizeof a, &cfg, "fashion-mnist", 1000, 30, 1e-3f, 0.01f, 64, 1);
    al_run_id(ia, a);
    assert_non_null(strstr(a, "model=sa")); assert_non_null(strstr(a, "seed=1")); assert_non_null(strstr(a, "train_size=1000"));
    /* each change makes a new run id */
    cfg.heads = 2;
    al_image_run_canonical(b, sizeof b, &cfg, "fashion-mnist", 1000, 30, 1e-3f, 0.01f, 64, 1); al_run_id(ib, b);
    assert_string_not_equal(ia, ib);
    cfg.heads = 4;
    al_image_run_canonical(b, sizeof b, &cfg, "fashion-mnist", 1000, 30, 1e-3f, 0.01f, 64, 2); al_run_id(ib, b);
    assert_string_not_equal(ia, ib);
    al_image_run_canonical(b, sizeof b, &cfg, "fashion-mnist", 1000, 30, 1e-3f, 0.01f, 64, 1); al_run_id(ib, b);
    assert_string_equal(ia, ib);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_param_counts_match_peer),
        cmocka_unit_test(test_param_order_names_and_init),
        cmocka_unit_test(test_forward_shapes),
        cmocka_unit_test(test_forward_rejects_wrong_input),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_gradcheck_tiny_models),
        cmocka_unit_test(test_grads_independent_of_arena_garbage),
        cmocka_unit_test(test_inference_forward_same_bits_less_memory),
        cmocka_unit_test(test_conv_attn_equals_cnn),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_conv_attn_ft_starts_as_the_cnn),
        cmocka_unit_test(test_run_canonical_covers_hyperparameters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
