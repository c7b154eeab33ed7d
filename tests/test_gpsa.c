/* test_gpsa.c — gated positional self-attention: the op al_gpsa against a dense reference in double, its
 * gradients for q, k, v, the gate and the positional vectors by central differences, the same bits for 1
 * and 2 threads; the gpsa image model: each head local around its own offset at initialisation, its size
 * against sa's, the same logits and gradients for 1 and 2 threads, a checkpoint round trip, and a short
 * learning run on a synthetic task. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "attnlab/attention.h"
#include "attnlab/checkpoint.h"
#include "attnlab/models.h"
#include "attnlab/ops.h"
#include "attnlab/train.h"

/* ---------------- the op ---------------- */

typedef struct op_case { int B, H, gh, gw, D, Dv; float scale; uint64_t seed; } op_case;
enum { IN_Q, IN_K, IN_V, IN_GATE, IN_POS, NIN };
static const char *const in_names[NIN] = {"q", "k", "v", "gate", "pos"};

static int64_t in_numel(const op_case *a, int i)
{
    const int64_t N = (int64_t)a->gh * a->gw;
    switch (i) {
    case IN_Q: case IN_K: return (int64_t)a->B * a->H * N * a->D;
    case IN_V: return (int64_t)a->B * a->H * N * a->Dv;
    case IN_GATE: return a->H;
    default: return 3 * a->H;
    }
}
static tu_input in_shape(const op_case *a, int i, float *data, int check)
{
    const int N = a->gh * a->gw;
    switch (i) {
    case IN_Q: case IN_K: return tu_in(data, check, 4, a->B, a->H, N, a->D);
    case IN_V: return tu_in(data, check, 4, a->B, a->H, N, a->Dv);
    case IN_GATE: return tu_in(data, check, 1, a->H, 0, 0, 0);
    default: return tu_in(data, check, 2, a->H, 3, 0, 0);
    }
}
/* Random inputs in general position: gates around 0 (σ' far from 0), positional vectors of either sign. */
static void make_inputs(const op_case *a, float *x[NIN])
{
    for (int i = 0; i < NIN; i++) x[i] = tu_alloc_rand(in_numel(a, i), a->seed + (uint64_t)i, -1.0f, 1.0f);
    for (int h = 0; h < a->H; h++) x[IN_GATE][h] *= 1.5f;
    for (int64_t j = 0; j < 3 * a->H; j++) x[IN_POS][j] *= 0.6f;
}
static al_attn_desc op_desc(const op_case *a, al_tensor **weights)
{
    al_attn_desc d;
    memset(&d, 0, sizeof d);
    d.pattern = al_pattern_full();
    d.pattern.grid_h = a->gh; d.pattern.grid_w = a->gw;
    d.scale = a->scale;
    d.weights = weights;
    return d;
}

/* The definition, densely, in double: out (B,H,N,Dv) and A (B,H,N,N). */
static void gpsa_ref(const op_case *a, float *const x[NIN], double *out, double *A)
{
    const int N = a->gh * a->gw, D = a->D, Dv = a->Dv;
    const double c = a->scale != 0.f ? a->scale : 1.0 / sqrt((double)D);
    double *sc = malloc((size_t)N * sizeof *sc), *sp = malloc((size_t)N * sizeof *sp);
    assert_true(sc && sp);
    for (int b = 0; b < a->B; b++)
        for (int h = 0; h < a->H; h++) {
            const int64_t bh = (int64_t)b * a->H + h;
            const float *q = x[IN_Q] + bh * N * D, *k = x[IN_K] + bh * N * D, *v = x[IN_V] + bh * N * Dv, *p = x[IN_POS] + 3 * h;
            const double g = 1.0 / (1.0 + exp(-(double)x[IN_GATE][h]));
            for (int i = 0; i < N; i++) {
                double mc = -INFINITY, mp = -INFINITY, zc = 0, zp = 0;
                for (int j = 0; j < N; j++) {
                    double s = 0;
                    for (int d = 0; d < D; d++) s += (double)q[i * D + d] * k[j * D + d];
                    const double dx = j % a->gw - i % a->gw, dy = j / a->gw - i / a->gw;
                    sc[j] = c * s;
                    sp[j] = p[0] * dx + p[1] * dy + p[2] * (dx * dx + dy * dy);
                    mc = fmax(mc, sc[j]); mp = fmax(mp, sp[j]);
                }
                for (int j = 0; j < N; j++) { zc += exp(sc[j] - mc); zp += exp(sp[j] - mp); }
                double *Ai = A + (bh * N + i) * N, *oi = out + (bh * N + i) * Dv;
                for (int e = 0; e < Dv; e++) oi[e] = 0;
                for (int j = 0; j < N; j++) {
                    Ai[j] = (1 - g) * exp(sc[j] - mc) / zc + g * exp(sp[j] - mp) / zp;
                    for (int e = 0; e < Dv; e++) oi[e] += Ai[j] * v[j * Dv + e];
                }
            }
        }
    free(sc); free(sp);
}

static double rel_err_d(const float *got, const double *want, int64_t n)
{
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; i++) {
        const double d = fabs((double)got[i] - want[i]);
        num = d > num || isnan(d) ? (isnan(d) ? INFINITY : d) : num;
        den = fabs(want[i]) > den ? fabs(want[i]) : den;
    }
    return num / (den + 1e-12);
}

static void check_forward(const op_case *a)
{
    float *x[NIN];
    make_inputs(a, x);
    const int N = a->gh * a->gw;
    const int64_t no = (int64_t)a->B * a->H * N * a->Dv, na = (int64_t)a->B * a->H * N * N;
    double *out = malloc((size_t)no * sizeof *out), *A = malloc((size_t)na * sizeof *A);
    assert_true(out && A);
    gpsa_ref(a, x, out, A);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN], *w = NULL;
    for (int i = 0; i < NIN; i++) { tu_input s = in_shape(a, i, x[i], 0); t[i] = al_wrap(c, x[i], s.ndim, s.shape); }
    al_attn_desc d = op_desc(a, &w);
    al_tensor *y = al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
    if (!y) fail_msg("gpsa: %s", al_ctx_error(c));
    assert_int_equal(y->numel, no);
    assert_non_null(w);
    assert_int_equal(w->numel, na);
    const double eo = rel_err_d(y->data, out, no), ea = rel_err_d(w->data, A, na);
    print_message("gpsa %dx%d grid, B %d, H %d, D %d, Dv %d: output rel err %.2g, weights %.2g\n", a->gh, a->gw, a->B, a->H,
                  a->D, a->Dv, eo, ea);
    assert_true(eo < 1e-5 && ea < 1e-5);
    for (int64_t r = 0; r < na / N; r++) {   /* every row of A sums to 1: two softmaxes mixed convexly */
        double s = 0;
        for (int j = 0; j < N; j++) s += w->data[r * N + j];
        assert_true(fabs(s - 1) < 1e-5);
    }
    al_ctx_free(c);
    for (int i = 0; i < NIN; i++) free(x[i]);
    free(out); free(A);
}

static void test_forward_matches_dense_reference(void **st)
{
    (void)st;
    const op_case cases[] = {{2, 3, 3, 4, 5, 2, 0.f, 1},      /* N = 12 < one lane block */
                             {1, 2, 5, 7, 3, 4, 0.7f, 2},     /* N = 35: lane blocks and a tail, a given scale */
                             {2, 1, 1, 1, 2, 3, 0.f, 3}};     /* one token */
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_forward(&cases[i]);
}

static al_tensor *op_fn(al_ctx *c, al_tensor **t, void *ud)
{
    al_attn_desc d = op_desc(ud, NULL);
    return al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
}

static void test_gradcheck_every_input(void **st)
{
    (void)st;
    const op_case cases[] = {{2, 2, 2, 3, 3, 2, 0.f, 11}, {1, 3, 3, 7, 2, 2, 0.f, 12}};   /* N = 6; N = 21 (a lane tail) */
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const op_case *a = &cases[ci];
        float *x[NIN];
        make_inputs(a, x);
        for (int only = 0; only < NIN; only++) {   /* one input at a time, so that each is named and held to the bound */
            tu_input in[NIN];
            for (int i = 0; i < NIN; i++) in[i] = in_shape(a, i, x[i], i == only);
            char what[64];
            snprintf(what, sizeof what, "gpsa case %zu, d/d%s", ci, in_names[only]);
            TU_GRADCHECK(what, op_fn, (void *)a, in, NIN, 1e-2, 1e-2);
        }
        for (int i = 0; i < NIN; i++) free(x[i]);
    }
}

/* Output and every input's gradient (for the loss Σ r ⊙ out) with `threads` threads, into res. */
static void op_run(const op_case *a, float *const x[NIN], int threads, float *res[NIN + 1])
{
    al_set_threads(threads);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN];
    for (int i = 0; i < NIN; i++) {
        tu_input s = in_shape(a, i, x[i], 1);
        t[i] = al_wrap(c, x[i], s.ndim, s.shape);
        t[i]->requires_grad = 1;
    }
    al_attn_desc d = op_desc(a, NULL);
    al_tensor *y = al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]);
    if (!y) fail_msg("gpsa: %s", al_ctx_error(c));
    tu_fill(al_grad(c, y), y->numel, 77, -1, 1);
    res[0] = malloc((size_t)y->numel * sizeof(float));
    memcpy(res[0], y->data, (size_t)y->numel * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < NIN; i++) {
        res[i + 1] = malloc((size_t)t[i]->numel * sizeof(float));
        memcpy(res[i + 1], al_grad(c, t[i]), (size_t)t[i]->numel * sizeof(float));
    }
    al_ctx_free(c);
}

static void test_op_threads_bitwise(void **st)
{
    (void)st;
    const int threads = al_threads();
    const op_case a = {3, 4, 8, 8, 5, 3, 0.f, 21};   /* 12 heads of 64 tokens: enough work for the parallel loops */
    float *x[NIN], *r1[NIN + 1], *r2[NIN + 1];
    make_inputs(&a, x);
    op_run(&a, x, 1, r1);
    op_run(&a, x, 2, r2);
    const int N = a.gh * a.gw;
    const int64_t n[NIN + 1] = {(int64_t)a.B * a.H * N * a.Dv, in_numel(&a, 0), in_numel(&a, 1), in_numel(&a, 2),
                                in_numel(&a, 3), in_numel(&a, 4)};
    for (int i = 0; i <= NIN; i++) {
        if (memcmp(r1[i], r2[i], (size_t)n[i] * sizeof(float)))
            fail_msg("gpsa: %s differs between 1 and 2 threads", i ? in_names[i - 1] : "the output");
        free(r1[i]); free(r2[i]);
    }
    for (int i = 0; i < NIN; i++) free(x[i]);
    al_set_threads(threads);
}

static void test_op_rejects_bad_arguments(void **st)
{
    (void)st;
    const op_case a = {1, 2, 2, 3, 3, 2, 0.f, 5};
    float *x[NIN];
    make_inputs(&a, x);
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[NIN];
    for (int i = 0; i < NIN; i++) { tu_input s = in_shape(&a, i, x[i], 0); t[i] = al_wrap(c, x[i], s.ndim, s.shape); }
    al_attn_desc d = op_desc(&a, NULL);
    d.pattern.grid_w = 2;   /* 2x2 is not 6 tokens */
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]));
    assert_non_null(strstr(al_ctx_error(c), "not a 2x2 grid"));
    al_ctx_clear_error(c);
    d = op_desc(&a, NULL);
    d.norm = AL_NORM_RELU;
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_GATE], t[IN_POS]));
    al_ctx_clear_error(c);
    d = op_desc(&a, NULL);
    assert_null(al_gpsa(c, &d, t[IN_Q], t[IN_K], t[IN_V], t[IN_POS], t[IN_POS]));   /* a gate of (H, 3) */
    assert_non_null(strstr(al_ctx_error(c), "gate"));
    al_ctx_free(c);
    for (int i = 0; i < NIN; i++) free(x[i]);
}

/* ---------------- the model ---------------- */

static void test_params_near_sa(void **st)
{
    (void)st;
    al_model g, s;
    tu_model_init(&g, "gpsa", 1, 28, 28, 10, 1);
    tu_model_init(&s, "sa", 1, 28, 28, 10, 1);
    print_message("parameters on 1x28x28, 10 classes: gpsa %lld (dim %d, %d heads, hidden %d), sa %lld: %+.1f %%\n",
                  (long long)g.params.total, g.cfg.dim, g.cfg.heads, g.cfg.hidden, (long long)s.params.total,
                  100.0 * (double)(g.params.total - s.params.total) / (double)s.params.total);
    assert_int_equal(g.params.total, 78899);
    assert_true(llabs((long long)(g.params.total - s.params.total)) * 10 <= s.params.total);
    assert_int_equal(g.cfg.heads, 9);
    assert_non_null(al_params_find(&g.params, "blocks.1.attn.gating_param"));
    assert_non_null(al_params_find(&g.params, "blocks.0.attn.pos_proj.weight"));
    for (int b = 0; b < g.cfg.depth; b++) assert_non_null(g.blocks[b].gpsa_gate);   /* every block is gpsa */
    assert_null(s.blocks[0].gpsa_gate);
    al_model_free(&g); al_model_free(&s);
}

/* At initialisation the gate favours position and head h's positional map peaks at its offset Δ_h of the
 * 3×3 neighbourhood: each head puts ≥ 0.9 of its weight within one token (Chebyshev) of query + Δ_h,
 * averaged over the queries two or more tokens from the border (so that the whole 3×3 around the target
 * is in the grid) and over a batch of images. */
static void test_init_heads_local_around_their_offsets(void **st)
{
    (void)st;
    al_model m;
    tu_model_init(&m, "gpsa", 1, 28, 28, 10, 1);
    const int H = m.cfg.heads, gh = m.grid_h, gw = m.grid_w, N = gh * gw, B = 2;
    assert_int_equal(gh, 14); assert_int_equal(gw, 14);
    for (int b = 0; b < m.cfg.depth; b++)
        for (int h = 0; h < H; h++) assert_true(m.blocks[b].gpsa_gate->data[h] == 3.0f);
    al_ctx *c = al_ctx_new(1);
    c->grad_enabled = 0; c->training = 0;
    m.capture_attn = 1;
    al_tensor *x = al_new(c, 4, (int[]){B, 1, 28, 28});
    tu_fill(x->data, x->numel, 3, -1.5f, 1.5f);
    assert_non_null(al_model_forward(c, &m, x));
    double worst = 1, mean = 0;
    for (int blk = 0; blk < m.cfg.depth; blk++) {
        const al_tensor *w = m.attn_weights[blk];   /* (B,H,N,N) */
        assert_non_null(w);
        assert_int_equal(w->shape[3], N);
        for (int h = 0; h < H; h++) {
            const int dx = h % 3 - 1, dy = h / 3 - 1;
            double s = 0; int nq = 0;
            for (int b = 0; b < B; b++)
                for (int iy = 2; iy < gh - 2; iy++)
                    for (int ix = 2; ix < gw - 2; ix++, nq++) {
                        const float *row = w->data + (((int64_t)b * H + h) * N + iy * gw + ix) * N;
                        for (int ky = iy + dy - 1; ky <= iy + dy + 1; ky++)
                            for (int kx = ix + dx - 1; kx <= ix + dx + 1; kx++) s += row[ky * gw + kx];
                    }
            const double f = s / nq;
            if (f < worst) worst = f;
            mean += f / (m.cfg.depth * H);
            if (!(f >= 0.9)) fail_msg("block %d head %d (offset %+d,%+d): %.3f of its weight near its offset", blk + 1, h + 1, dx, dy, f);
        }
    }
    print_message("gpsa at initialisation: weight within one token of the head's offset, per head: min %.4f, mean %.4f\n",
                  worst, mean);
    al_ctx_free(c);
    al_model_free(&m);
}

/* Logits, loss and every parameter's gradient of one step with `threads` threads. */
static float *model_step(al_model *m, const float *xin, int B, int threads, int64_t *nout)
{
    al_set_threads(threads);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_wrap(c, (float *)xin, 4, (int[]){B, 1, 28, 28});
    al_tensor *lg = al_model_forward(c, m, x);
    if (!lg) fail_msg("%s", al_ctx_error(c));
    const int y[4] = {3, 1, 4, 1};
    al_tensor *loss = al_cross_entropy(c, lg, y, NULL);
    al_params_zero_grad(&m->params);
    assert_int_equal(al_backward(c, loss), AL_OK);
    *nout = lg->numel + m->params.total;
    float *r = malloc((size_t)*nout * sizeof(float));
    memcpy(r, lg->data, (size_t)lg->numel * sizeof(float));
    memcpy(r + lg->numel, m->params.grad, (size_t)m->params.total * sizeof(float));
    al_ctx_free(c);
    return r;
}

static void test_model_threads_bitwise(void **st)
{
    (void)st;
    const int threads = al_threads(), B = 4;
    al_model m;
    tu_model_init(&m, "gpsa", 1, 28, 28, 10, 7);
    float *x = tu_alloc_rand(B * 28 * 28, 9, -1, 1);
    int64_t n1, n2;
    float *a = model_step(&m, x, B, 1, &n1), *b = model_step(&m, x, B, 2, &n2);
    assert_int_equal(n1, n2);
    if (memcmp(a, b, (size_t)B * 10 * sizeof(float))) fail_msg("gpsa: logits differ between 1 and 2 threads");
    if (memcmp(a, b, (size_t)n1 * sizeof(float))) fail_msg("gpsa: parameter gradients differ between 1 and 2 threads");
    free(a); free(b); free(x);
    al_model_free(&m);
    al_set_threads(threads);
}

static void test_checkpoint_round_trip(void **st)
{
    (void)st;
    char path[64];
    snprintf(path, sizeof path, "/tmp/attnlab_test_gpsa_%d.safetensors", (int)getpid());
    al_model m, m2;
    al_error e = {{0}};
    tu_model_init(&m, "gpsa", 1, 12, 12, 4, 5);
    tu_fill(m.blocks[1].gpsa_gate->data, m.cfg.heads, 4, -2, 2);   /* as after training: not the initial values */
    float mean[4] = {0.5f, 0, 0, 0}, sd[4] = {0.25f, 1, 1, 1}, mean2[4], sd2[4];
    if (al_model_save(path, &m, mean, sd, NULL, 0, &e) != AL_OK) fail_msg("save: %s", e.msg);
    if (al_model_load(path, &m2, mean2, sd2, NULL, &e) != AL_OK) fail_msg("load: %s", e.msg);
    assert_string_equal(m2.cfg.name, "gpsa");
    assert_int_equal(m2.cfg.heads, 9); assert_int_equal(m2.cfg.dim, 63);
    assert_int_equal(m2.params.total, m.params.total);
    assert_memory_equal(m2.params.data, m.params.data, (size_t)m.params.total * sizeof(float));
    al_model_free(&m2); al_model_free(&m);
    unlink(path);
}

/* Configurations gpsa refuses: heads that are not a square, relative positions, other scores and norms. */
static void test_config_errors(void **st)
{
    (void)st;
    al_model_config cfg; al_model m; al_error e;
    struct { int heads, dim; al_pos_kind pos; al_norm_kind norm; const char *msg; } bad[] = {
        {8, 64, AL_POS_LEARNED, AL_NORM_SOFTMAX, "square"}, {9, 63, AL_POS_RELATIVE, AL_NORM_SOFTMAX, "relative"},
        {9, 63, AL_POS_LEARNED, AL_NORM_RELU, "softmax"}};
    for (int i = 0; i < 3; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(al_model_config_default(&cfg, "gpsa", 1, 28, 28, 10, &e), AL_OK);
        cfg.heads = bad[i].heads; cfg.dim = bad[i].dim; cfg.pos = bad[i].pos; cfg.norm = bad[i].norm;
        assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_ERR);
        if (!strstr(e.msg, bad[i].msg)) fail_msg("case %d: '%s' lacks '%s'", i, e.msg, bad[i].msg);
    }
    /* 4 heads (a 2x2 neighbourhood, offsets ±1/2) and one head are squares */
    const int ok[] = {4, 1};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(al_model_config_default(&cfg, "gpsa", 1, 8, 8, 3, &e), AL_OK);
        cfg.heads = ok[i]; cfg.dim = 8;
        assert_int_equal(al_model_config_check(&cfg, &e), AL_OK);
    }
}

/* ---------------- learning ---------------- */

/* 16×16 images, four classes: a bar 6 pixels long and 2 wide, horizontal, vertical or along either
 * diagonal, at a random place, over uniform noise (0..100; the bar 200..255). */
enum { SIDE = 16, NTRAIN = 320, NTEST = 160 };
static void bars(al_images *d, int n, uint64_t seed)
{
    memset(d, 0, sizeof *d);
    d->n = n; d->c = 1; d->h = SIDE; d->w = SIDE; d->classes = 4;
    d->pix = malloc((size_t)n * SIDE * SIDE);
    d->labels = malloc((size_t)n * sizeof(int));
    assert_true(d->pix && d->labels);
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    static const int dir[4][2] = {{0, 1}, {1, 0}, {1, 1}, {1, -1}};   /* (dy, dx) along the bar */
    for (int i = 0; i < n; i++) {
        uint8_t *p = d->pix + (size_t)i * SIDE * SIDE;
        const int cls = i % 4;
        d->labels[i] = cls;
        for (int j = 0; j < SIDE * SIDE; j++) p[j] = (uint8_t)al_rng_below(&r, 100);
        const int y0 = 3 + (int)al_rng_below(&r, SIDE - 9), x0 = 3 + (int)al_rng_below(&r, SIDE - 9);
        for (int t = 0; t < 6; t++)
            for (int w = 0; w < 2; w++) {
                const int y = y0 + t * dir[cls][0] + (dir[cls][1] ? w : 0), x = x0 + t * dir[cls][1] + (dir[cls][1] ? 0 : w);
                if (y >= 0 && y < SIDE && x >= 0 && x < SIDE) p[y * SIDE + x] = (uint8_t)(200 + al_rng_below(&r, 56));
            }
    }
}

static void test_learns_bars(void **st)
{
    (void)st;
    al_images tr, te;
    bars(&tr, NTRAIN, 1);
    bars(&te, NTEST, 2);
    al_model_config cfg; al_model m; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "gpsa", 1, SIDE, SIDE, 4, &e), AL_OK);
    cfg.dim = 36; cfg.hidden = 48; cfg.depth = 1;   /* 9 heads of 4 over the 8x8 tokens */
    if (al_model_init(&m, &cfg, 1, &e) != AL_OK) fail_msg("%s", e.msg);
    al_train_config tc;
    memset(&tc, 0, sizeof tc);
    tc.epochs = 30; tc.batch = 32; tc.lr = 3e-3f; tc.weight_decay = 0.01f; tc.seed = 1;
    int all[NTRAIN];
    for (int i = 0; i < NTRAIN; i++) all[i] = i;
    assert_int_equal(al_images_stats(&tr, all, NTRAIN, tc.mean, tc.std, &e), AL_OK);
    if (al_model_train(&m, &tr, &te, &tc, NULL, NULL, &e) != AL_OK) fail_msg("train: %s", e.msg);
    double acc = 0;
    assert_int_equal(al_model_evaluate(&m, &te, tc.mean, tc.std, 64, &acc, NULL, &e), AL_OK);
    double gmin = 1, gmax = 0;
    for (int h = 0; h < cfg.heads; h++) {
        const double g = 1 / (1 + exp(-(double)m.blocks[0].gpsa_gate->data[h]));
        gmin = g < gmin ? g : gmin; gmax = g > gmax ? g : gmax;
    }
    print_message("gpsa on 4-class bars (%d training, %d test images, %d epochs): test accuracy %.3f, gates %.3f..%.3f\n",
                  NTRAIN, NTEST, tc.epochs, acc, gmin, gmax);
    assert_true(acc >= 0.85);   /* chance: 0.25; measured 0.900 */
    al_model_free(&m);
    al_images_free(&tr); al_images_free(&te);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forward_matches_dense_reference),
        cmocka_unit_test(test_gradcheck_every_input),
        cmocka_unit_test(test_op_threads_bitwise),
        cmocka_unit_test(test_op_rejects_bad_arguments),
        cmocka_unit_test(test_params_near_sa),
        cmocka_unit_test(test_init_heads_local_around_their_offsets),
        cmocka_unit_test(test_model_threads_bitwise),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_learns_bars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
