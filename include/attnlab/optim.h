/* attnlab/optim.h — optimisers over the flat parameter array, clipping, LR schedules.
 *
 *   al_optim o; if (al_optim_init(&o, AL_ADAMW, params.total, 1e-3f, &err) != AL_OK) ...;   // weight decay 0.01
 *   al_lr_schedule sched = {AL_LR_COSINE, 1e-3f, 100, 10000, 0, 0.f, 1e-5f};
 *   for (int64_t step = 0; step < 10000; step++) {
 *       ... al_params_zero_grad(&params); al_backward(c, loss); al_clip_grad_norm(&params, 1.0f);
 *       o.lr = al_lr_at(&sched, step); al_optim_step(&o, &params);
 *   }
 *   al_optim_free(&o);
 */
#ifndef ATTNLAB_OPTIM_H
#define ATTNLAB_OPTIM_H
#include "tensor.h"

typedef enum { AL_SGD, AL_ADAM, AL_ADAMW } al_optim_kind;
typedef struct al_optim {
    al_optim_kind kind;
    float lr, momentum, beta1, beta2, eps, weight_decay;
    int nesterov;
    int64_t step;          /* number of steps taken */
    int64_t n;             /* parameter count */
    float *m, *v;          /* (n) state; caller frees with al_optim_free */
    int nonfinite;         /* set by each al_optim_step: 1 if it left a weight NaN or infinite */
} al_optim;
/* Defaults: momentum 0, betas (0.9, 0.999), eps 1e-8, weight_decay 0 (AdamW: 0.01, as PyTorch). */
al_status al_optim_init(al_optim *o, al_optim_kind kind, int64_t n, float lr, al_error *err);
/* SGD: v = μv + g (+wd·w coupled); w -= lr·v.  Adam: L2 (wd·w added to g).  AdamW: decoupled w -= lr·wd·w.
 * Weight decay applies only to tensors with p->decay set (default: tensors of >= 2 dims). */
void al_optim_step(al_optim *o, al_params *p);
void al_optim_free(al_optim *o);
/* Scale all gradients so their global L2 norm is at most max_norm; returns the norm before clipping. */
float al_clip_grad_norm(al_params *p, float max_norm);

typedef enum { AL_LR_CONSTANT, AL_LR_STEP, AL_LR_COSINE } al_lr_kind;
typedef struct al_lr_schedule {
    al_lr_kind kind;
    float base_lr;
    int64_t warmup_steps;     /* linear warm-up from 0 over these steps (0 = none) */
    int64_t total_steps;      /* cosine: decays to min_lr at total_steps */
    int64_t step_size;        /* step: multiply by gamma every step_size steps */
    float gamma, min_lr;
} al_lr_schedule;
float al_lr_at(const al_lr_schedule *s, int64_t step);   /* step counts from 0 */
#endif
