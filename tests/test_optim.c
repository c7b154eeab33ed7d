/* test_optim.c — SGD (momentum, Nesterov, coupled decay), Adam (L2), AdamW (decoupled): the first
 * steps against values worked out by hand below; the weight-decay mask; gradient clipping; LR schedules. */
#include "testutil.h"
#include "attnlab/optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Two parameters: "w" (1, 2) is decayed (2-D), "b" (2) is not (1-D). All start at 1. */
static void make_params(al_params *p)
{
    al_params_init(p);
    assert_non_null(al_params_add(p, "w", 2, (int[]){1, 2}, (al_init){AL_INIT_ONES, 0}));
    assert_non_null(al_params_add(p, "b", 1, (int[]){2}, (al_init){AL_INIT_ONES, 0}));
    al_rng r; al_rng_seed(&r, 1, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(p, &r, &e), AL_OK);
    assert_int_equal(p->decay[0], 1);
    assert_int_equal(p->decay[1], 0);
}
static void set_grad(al_params *p, float g) { for (int64_t i = 0; i < p->total; i++) p->grad[i] = g; }
#define NEAR(got, want) do { double g_ = (got), w_ = (want); \
        if (!(fabs(g_ - w_) <= 2e-6 * (1 + fabs(w_)))) fail_msg("%s = %.9g, want %.9g (line %d)", #got, g_, w_, __LINE__); } while (0)

static const float G[3] = {0.5f, -0.2f, 0.3f};   /* gradients fed at steps 1, 2, 3 */

static void test_sgd_momentum(void **st)
{
    (void)st;
    al_params p; make_params(&p);
    al_optim o; al_error e = {{0}};
    assert_int_equal(al_optim_init(&o, AL_SGD, p.total, 0.1f, &e), AL_OK);
    assert_true(o.momentum == 0.f && o.weight_decay == 0.f);
    o.momentum = 0.9f;
    /* buf1 = g1 = 0.5                      w1 = 1 - 0.1·0.5 = 0.95
     * buf2 = 0.9·0.5 - 0.2 = 0.25          w2 = 0.95 - 0.1·0.25 = 0.925
     * buf3 = 0.9·0.25 + 0.3 = 0.525        w3 = 0.925 - 0.0525 = 0.8725 */
    const double want[3] = {0.95, 0.925, 0.8725};
    for (int s = 0; s < 3; s++) {
        set_grad(&p, G[s]);
        al_optim_step(&o, &p);
        for (int i = 0; i < 4; i++) NEAR(p.data[i], want[s]);
    }
    assert_int_equal(o.step, 3);
    al_optim_free(&o); al_params_free(&p);
}

static void test_sgd_nesterov_and_decay_mask(void **st)
{
    (void)st;
    al_params p; make_params(&p);
    al_optim o; al_error e = {{0}};
    assert_int_equal(al_optim_init(&o, AL_SGD, p.total, 0.1f, &e), AL_OK);
    o.momentum = 0.9f; o.nesterov = 1; o.weight_decay = 0.1f;
    /* decayed w: d1 = 0.5 + 0.1·1 = 0.6, buf1 = 0.6, step = 0.6 + 0.9·0.6 = 1.14, w1 = 1 - 0.114 = 0.886
     *            d2 = -0.2 + 0.1·0.886 = -0.1114, buf2 = 0.9·0.6 - 0.1114 = 0.4286,
     *            step = -0.1114 + 0.9·0.4286 = 0.27434, w2 = 0.886 - 0.027434 = 0.858566
     * plain b:   d1 = 0.5, buf1 = 0.5, step = 0.95, b1 = 0.905
     *            d2 = -0.2, buf2 = 0.25, step = -0.2 + 0.225 = 0.025, b2 = 0.9025 */
    const double ww[2] = {0.886, 0.858566}, wb[2] = {0.905, 0.9025};
    for (int s = 0; s < 2; s++) {
        set_grad(&p, G[s]);
        al_optim_step(&o, &p);
        NEAR(p.data[0], ww[s]); NEAR(p.data[1], ww[s]);
        NEAR(p.data[2], wb[s]); NEAR(p.data[3], wb[s]);
    }
    al_optim_free(&o); al_params_free(&p);
}

/* Adam by hand, in double, as torch.optim.Adam/AdamW: returns w after each of 3 steps. */
static void adam_by_hand(double wd, int decoupled, double out[3])
{
    double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, w = 1, m = 0, v = 0;
    for (int t = 1; t <= 3; t++) {
        double g = G[t - 1];
        if (decoupled) w -= lr * wd * w; else g += wd * w;
        m = b1 * m + (1 - b1) * g;
        v = b2 * v + (1 - b2) * g * g;
        double mhat = m / (1 - pow(b1, t)), vhat = v / (1 - pow(b2, t));
        w -= lr * mhat / (sqrt(vhat) + eps);
        out[t - 1] = w;
    }
}

static void test_adam_and_adamw(void **st)
{
    (void)st;
    /* Adam, no decay:  step 1: m = 0.05, v = 0.00025, m̂ = 0.5, √v̂ = 0.5, w = 1 - 0.1 = 0.9
     *   step 2: m = 0.045 - 0.02 = 0.025, v = 0.00024975 + 0.00004 = 0.00028975,
     *           m̂ = 0.025/0.19 = 0.1315789, v̂ = 0.00028975/0.001999 = 0.1449475, w = 0.9 - 0.0345606 = 0.8654394
     *   step 3: w = 0.8109954
     * Adam, L2 0.1 on "w": g1 = 0.6 → w = 0.9; g2 = -0.2 + 0.09 = -0.11 → w = 0.8475191; w3 = 0.7791122
     * AdamW 0.1 on "w": w ← 0.99 then the Adam step: 0.89; 0.89·0.99 - 0.0345606 = 0.8465394; 0.7836300 */
    const double adam[3] = {0.900000002, 0.8654394181, 0.8109953837};
    const double adam_l2[3] = {0.9000000017, 0.8475190630, 0.7791121608};
    const double adamw[3] = {0.890000002, 0.8465394181, 0.7836299895};
    double h[3];
    adam_by_hand(0, 0, h);   for (int s = 0; s < 3; s++) NEAR(h[s], adam[s]);
    adam_by_hand(0.1, 0, h); for (int s = 0; s < 3; s++) NEAR(h[s], adam_l2[s]);
    adam_by_hand(0.1, 1, h); for (int s = 0; s < 3; s++) NEAR(h[s], adamw[s]);

    for (int kind = 0; kind < 2; kind++) {
        al_params p; make_params(&p);
        al_optim o; al_error e = {{0}};
        assert_int_equal(al_optim_init(&o, kind ? AL_ADAMW : AL_ADAM, p.total, 0.1f, &e), AL_OK);
        assert_true(o.beta1 == 0.9f && o.beta2 == 0.999f && o.eps == 1e-8f);
        assert_true(o.weight_decay == (kind ? 0.01f : 0.f));
        o.weight_decay = 0.1f;
        for (int s = 0; s < 3; s++) {
            set_grad(&p, G[s]);
            al_optim_step(&o, &p);
            const double *wd = kind ? adamw : adam_l2;
            NEAR(p.data[0], wd[s]); NEAR(p.data[1], wd[s]);
            NEAR(p.data[2], adam[s]); NEAR(p.data[3], adam[s]);   /* "b" is not decayed */
        }
        al_optim_free(&o); al_params_free(&p);
    }
}

static void test_decay_mask_override(void **st)
{
    (void)st;
    /* Turning decay on for the 1-D tensor and off for the 2-D one swaps who shrinks. */
    al_params p; make_params(&p);
    p.decay[0] = 0; p.decay[1] = 1;
    al_optim o; al_error e = {{0}};
    assert_int_equal(al_optim_init(&o, AL_SGD, p.total, 0.1f, &e), AL_OK);
    o.weight_decay = 0.5f;
    set_grad(&p, 0.f);
    al_optim_step(&o, &p);          /* w -= 0.1·(0 + 0.5·1) = 0.95 only where decay is set */
    NEAR(p.data[0], 1.0); NEAR(p.data[1], 1.0);
    NEAR(p.data[2], 0.95); NEAR(p.data[3], 0.95);
    al_optim_free(&o); al_params_free(&p);
}

static void test_init_errors(void **st)
{
    (void)st;
    al_optim o; al_error e = {{0}};
    assert_int_equal(al_optim_init(&o, AL_ADAM, -1, 0.1f, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "negative"));
    al_error e2 = {{0}};
    assert_int_equal(al_optim_init(&o, AL_SGD, 4, -1.f, &e2), AL_ERR);
    assert_non_null(strstr(e2.msg, "learning rate"));
}

static void test_clip_grad_norm(void **st)
{
    (void)st;
    al_params p; make_params(&p);
    p.grad[0] = 3.f; p.grad[1] = 0.f; p.grad[2] = 0.f; p.grad[3] = 4.f;    /* global norm 5 */
    float n = al_clip_grad_norm(&p, 10.f);
    NEAR(n, 5.0);
    assert_true(p.grad[0] == 3.f && p.grad[3] == 4.f);                     /* below max: untouched */
    n = al_clip_grad_norm(&p, 1.f);
    NEAR(n, 5.0);                                                           /* returns the pre-clip norm */
    NEAR(p.grad[0], 3.0 / (5.0 + 1e-6)); NEAR(p.grad[3], 4.0 / (5.0 + 1e-6));
    NEAR(al_clip_grad_norm(&p, 0.f), 1.0);                                 /* now norm 1; 0 = measure only */
    al_params_free(&p);

    /* a large array: the chunked norm agrees with a double loop and is the same on a second call */
    al_params q; al_params_init(&q);
    assert_non_null(al_params_add(&q, "big", 2, (int[]){300, 1000}, (al_init){AL_INIT_ZEROS, 0}));
    al_rng r; al_rng_seed(&r, 2, AL_RNG_INIT); al_error e = {{0}};
    assert_int_equal(al_params_finalize(&q, &r, &e), AL_OK);
    tu_fill(q.grad, q.total, 3, -1.f, 1.f);
    double s = 0; for (int64_t i = 0; i < q.total; i++) s += (double)q.grad[i] * q.grad[i];
    float a = al_clip_grad_norm(&q, 0.f), b = al_clip_grad_norm(&q, 0.f);
    NEAR(a, sqrt(s));
    assert_true(a == b);
    al_params_free(&q);
}

/* A tensor big enough for the OpenMP path: same bytes on 1 and 2 threads, and element 0 follows the
 * hand-checked scalar recurrence (adam_by_hand with AdamW decay 0.1). */
static void test_large_tensor_threads(void **st)
{
    (void)st;
    enum { N = 200000 };
    float *res[2];
    int nt = al_threads();
    for (int rep = 0; rep < 2; rep++) {
        al_set_threads(rep ? 2 : 1);
        al_params p; al_params_init(&p);
        assert_non_null(al_params_add(&p, "big", 2, (int[]){N / 100, 100}, (al_init){AL_INIT_ONES, 0}));
        al_rng r; al_rng_seed(&r, 1, AL_RNG_INIT); al_error e = {{0}};
        assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
        al_optim o;
        assert_int_equal(al_optim_init(&o, AL_ADAMW, p.total, 0.1f, &e), AL_OK);
        o.weight_decay = 0.1f;
        for (int s = 0; s < 3; s++) {
            set_grad(&p, G[s]);
            p.grad[N - 1] = G[s] + 0.1f;          /* one element differs (Adam is scale-invariant: not 2·G) */
            al_optim_step(&o, &p);
        }
        double h[3]; adam_by_hand(0.1, 1, h);
        NEAR(p.data[0], h[2]);
        NEAR(p.data[N / 2], h[2]);
        assert_true(p.data[N - 1] != p.data[0]);
        res[rep] = malloc((size_t)N * sizeof(float));
        assert_non_null(res[rep]);
        memcpy(res[rep], p.data, (size_t)N * sizeof(float));
        al_optim_free(&o); al_params_free(&p);
    }
    al_set_threads(nt);
    assert_memory_equal(res[0], res[1], (size_t)N * sizeof(float));
    free(res[0]); free(res[1]);
}

static void test_lr_schedules(void **st)
{
    (void)st;
    al_lr_schedule c = {.kind = AL_LR_CONSTANT, .base_lr = 0.3f};
    NEAR(al_lr_at(&c, 0), 0.3); NEAR(al_lr_at(&c, 1000), 0.3);
    c.warmup_steps = 4;                           /* linear from 0: 0.3·step/4 */
    NEAR(al_lr_at(&c, 0), 0.0); NEAR(al_lr_at(&c, 1), 0.075); NEAR(al_lr_at(&c, 3), 0.225); NEAR(al_lr_at(&c, 4), 0.3);

    al_lr_schedule s = {.kind = AL_LR_STEP, .base_lr = 0.5f, .step_size = 30, .gamma = 0.1f};
    NEAR(al_lr_at(&s, 0), 0.5); NEAR(al_lr_at(&s, 29), 0.5); NEAR(al_lr_at(&s, 30), 0.05); NEAR(al_lr_at(&s, 65), 0.005);
    s.warmup_steps = 10;                          /* decay steps count from the end of the warm-up */
    NEAR(al_lr_at(&s, 5), 0.25); NEAR(al_lr_at(&s, 39), 0.5); NEAR(al_lr_at(&s, 40), 0.05);

    /* cosine over steps 10..110 from 1 to 0.1: at 60 (half way) 0.1 + 0.9·0.5·(1 + cos π/2) = 0.55,
     * at 35 (quarter) 0.1 + 0.45·(1 + cos π/4) = 0.8681981 */
    al_lr_schedule k = {.kind = AL_LR_COSINE, .base_lr = 1.f, .warmup_steps = 10, .total_steps = 110, .min_lr = 0.1f};
    NEAR(al_lr_at(&k, 0), 0.0); NEAR(al_lr_at(&k, 5), 0.5); NEAR(al_lr_at(&k, 10), 1.0);
    NEAR(al_lr_at(&k, 35), 0.1 + 0.45 * (1 + cos(M_PI / 4)));
    NEAR(al_lr_at(&k, 35), 0.8681980515);
    NEAR(al_lr_at(&k, 60), 0.55); NEAR(al_lr_at(&k, 110), 0.1); NEAR(al_lr_at(&k, 500), 0.1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd_momentum),
        cmocka_unit_test(test_sgd_nesterov_and_decay_mask),
        cmocka_unit_test(test_adam_and_adamw),
        cmocka_unit_test(test_decay_mask_override),
        cmocka_unit_test(test_init_errors),
        cmocka_unit_test(test_clip_grad_norm),
        cmocka_unit_test(test_large_tensor_threads),
        cmocka_unit_test(test_lr_schedules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
