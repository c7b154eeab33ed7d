/* test_mlp_e2e.c — end to end: a 2→32→32→2 ReLU MLP (al_linear, al_relu, al_cross_entropy, tape,
 * Adam) learns noisy two moons to 100 % training accuracy, and the run is bitwise reproducible. */
#include "testutil.h"
#include "attnlab/ops.h"
#include "attnlab/optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { NPTS = 200, HID = 32, MAX_STEPS = 3000 };

/* Two interleaved half circles (as sklearn's make_moons) with Gaussian noise of std `noise`. */
static void two_moons(float *x /* (NPTS, 2) */, int *y /* (NPTS) */, uint64_t seed, float noise)
{
    al_rng r; al_rng_seed(&r, seed, AL_RNG_DATA);
    for (int i = 0; i < NPTS; i++) {
        int lab = i & 1;
        double t = 3.14159265358979 * al_rng_uniform(&r);
        double px = lab ? 1.0 - cos(t) : cos(t), py = lab ? 0.5 - sin(t) : sin(t);
        x[2 * i] = (float)(px + noise * al_rng_normal(&r));
        x[2 * i + 1] = (float)(py + noise * al_rng_normal(&r));
        y[i] = lab;
    }
}

typedef struct result { int steps; double acc, first_loss, last_loss; float *params; int64_t nparams; } result;

static result train(const float *X, const int *Y)
{
    al_params p; al_params_init(&p);
    al_tensor *w1 = al_params_add(&p, "w1", 2, (int[]){HID, 2}, al_init_kaiming(2));
    al_tensor *b1 = al_params_add(&p, "b1", 1, (int[]){HID}, al_init_kaiming(2));
    al_tensor *w2 = al_params_add(&p, "w2", 2, (int[]){HID, HID}, al_init_kaiming(HID));
    al_tensor *b2 = al_params_add(&p, "b2", 1, (int[]){HID}, al_init_kaiming(HID));
    al_tensor *w3 = al_params_add(&p, "w3", 2, (int[]){2, HID}, al_init_kaiming(HID));
    al_tensor *b3 = al_params_add(&p, "b3", 1, (int[]){2}, al_init_kaiming(HID));
    assert_true(w1 && b1 && w2 && b2 && w3 && b3);
    al_rng rng; al_rng_seed(&rng, 3, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(&p, &rng, &e), AL_OK);
    al_optim o;
    assert_int_equal(al_optim_init(&o, AL_ADAM, p.total, 0.01f, &e), AL_OK);
    al_ctx *c = al_ctx_new(3);
    assert_non_null(c);
    result res = {0, 0, 0, 0, NULL, p.total};
    for (int step = 0; step < MAX_STEPS; step++) {
        al_ctx_reset(c);
        al_tensor *x = al_wrap(c, (float *)X, 2, (int[]){NPTS, 2});
        al_tensor *h = al_relu(c, al_linear(c, x, w1, b1));            /* (NPTS, HID) */
        h = al_relu(c, al_linear(c, h, w2, b2));                        /* (NPTS, HID) */
        al_tensor *logits = al_linear(c, h, w3, b3);                   /* (NPTS, 2) */
        al_tensor *loss = al_cross_entropy(c, logits, Y, NULL);
        if (!loss) fail_msg("forward failed: %s", al_ctx_error(c));
        int correct = 0;
        for (int i = 0; i < NPTS; i++) correct += (logits->data[2 * i + 1] > logits->data[2 * i]) == (Y[i] == 1);
        if (step == 0) res.first_loss = loss->data[0];
        res.last_loss = loss->data[0];
        res.acc = (double)correct / NPTS;
        res.steps = step;
        if (correct == NPTS) break;
        al_params_zero_grad(&p);
        if (al_backward(c, loss) != AL_OK) fail_msg("backward failed: %s", al_ctx_error(c));
        al_optim_step(&o, &p);
    }
    res.params = malloc((size_t)p.total * sizeof(float));
    assert_non_null(res.params);
    memcpy(res.params, p.data, (size_t)p.total * sizeof(float));
    al_ctx_free(c); al_optim_free(&o); al_params_free(&p);
    return res;
}

static void test_mlp_learns_two_moons(void **st)
{
    (void)st;
    float X[NPTS * 2]; int Y[NPTS];
    two_moons(X, Y, 2024, 0.1f);
    result a = train(X, Y);
    print_message("two moons: %.1f %% after %d steps, loss %.4f -> %.4f\n", 100 * a.acc, a.steps, a.first_loss, a.last_loss);
    assert_true(a.first_loss > 0.5);             /* starts near chance: ln 2 = 0.69 */
    assert_true(a.last_loss < 0.2 * a.first_loss);
    assert_true(a.acc == 1.0);                   /* every training point right */
    result b = train(X, Y);                       /* same seed, same threads → same bits */
    assert_int_equal(a.steps, b.steps);
    assert_memory_equal(a.params, b.params, (size_t)a.nparams * sizeof(float));
    free(a.params); free(b.params);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_learns_two_moons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
