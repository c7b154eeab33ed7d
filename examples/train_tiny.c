/* train_tiny.c — embedding attnlab: a two-layer MLP learns two interleaved spirals (synthetic data,
 * 2 classes) with AdamW, on the library's tape. Build against an installed copy:
 *   cc train_tiny.c $(pkg-config --cflags --libs attnlab) -o train_tiny && ./train_tiny
 * Exits 0 when the training accuracy reaches 95 %. */
#include <math.h>
#include <stdio.h>
#include <attnlab/ops.h>
#include <attnlab/optim.h>
#include <attnlab/tensor.h>

enum { N = 512, HIDDEN = 64, STEPS = 600 };

int main(void)
{
    /* the data: class k's point i lies on spiral k, radius growing with the angle, plus noise */
    static float xs[N * 2];
    static int ys[N];
    al_rng r; al_rng_seed(&r, 7, AL_RNG_DATA);
    for (int i = 0; i < N; i++) {
        int k = i % 2;
        float t = 0.25f + 3.0f * (float)(i / 2) / (N / 2), a = t * 2.6f + (float)k * 3.14159265f;
        xs[2 * i] = t * cosf(a) + 0.05f * al_rng_normal(&r);
        xs[2 * i + 1] = t * sinf(a) + 0.05f * al_rng_normal(&r);
        ys[i] = k;
    }
    /* the model: parameters registered once, in one flat array */
    al_params p; al_params_init(&p);
    al_tensor *w1 = al_params_add(&p, "fc1.weight", 2, (int[]){HIDDEN, 2}, al_init_kaiming(2));
    al_tensor *b1 = al_params_add(&p, "fc1.bias", 1, (int[]){HIDDEN}, al_init_kaiming(2));
    al_tensor *w2 = al_params_add(&p, "fc2.weight", 2, (int[]){HIDDEN, HIDDEN}, al_init_kaiming(HIDDEN));
    al_tensor *b2 = al_params_add(&p, "fc2.bias", 1, (int[]){HIDDEN}, al_init_kaiming(HIDDEN));
    al_tensor *w3 = al_params_add(&p, "out.weight", 2, (int[]){2, HIDDEN}, al_init_kaiming(HIDDEN));
    al_tensor *b3 = al_params_add(&p, "out.bias", 1, (int[]){2}, al_init_kaiming(HIDDEN));
    al_error err = {{0}};
    al_rng init; al_rng_seed(&init, 1, AL_RNG_INIT);
    al_optim opt;
    if (al_params_finalize(&p, &init, &err) != AL_OK || al_optim_init(&opt, AL_ADAMW, p.total, 1e-2f, &err) != AL_OK) {
        fprintf(stderr, "train_tiny: %s\n", err.msg);
        return 1;
    }
    opt.weight_decay = 0.f;
    al_ctx *c = al_ctx_new(1);
    double acc = 0;
    for (int step = 1; step <= STEPS; step++) {
        al_tensor *x = al_wrap(c, xs, 2, (int[]){N, 2});
        al_tensor *h = al_relu(c, al_linear(c, x, w1, b1));
        h = al_relu(c, al_linear(c, h, w2, b2));
        al_tensor *logits = al_linear(c, h, w3, b3);                /* (N, 2) */
        al_tensor *loss = al_cross_entropy(c, logits, ys, NULL);
        al_params_zero_grad(&p);
        if (!loss || al_backward(c, loss) != AL_OK) { fprintf(stderr, "train_tiny: %s\n", al_ctx_error(c)); return 1; }
        al_optim_step(&opt, &p);
        if (step % 100 == 0) {
            int right = 0;
            for (int i = 0; i < N; i++) right += (logits->data[2 * i + 1] > logits->data[2 * i]) == ys[i];
            acc = (double)right / N;
            printf("step %4d  loss %.4f  train accuracy %.3f\n", step, loss->data[0], acc);
        }
        al_ctx_reset(c);
    }
    al_ctx_free(c); al_optim_free(&opt); al_params_free(&p);
    if (acc < 0.95) { fprintf(stderr, "train_tiny: accuracy %.3f below 0.95\n", acc); return 1; }
    return 0;
}
