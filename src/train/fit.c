/* fit.c — the one training skeleton of every task (train/fit_impl.h): epochs, batches, the divergence
 * checks, keep-best and early stopping, training states, progress. Library code: nothing prints. */
#include "train/fit_impl.h"
#include "attnlab/io.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct fit {
    const al__fit_task *t;
    void *self;
    const al__fit_config *fc;
    al_ctx *c;
    al_optim opt;
    al_rng shuf;
    int *order;
    int64_t steps;
    al_diverge div;
    al__loop L;
    al__fit_track track;
    float *best;                   /* keep-best tasks: the kept model's parameters */
    double t_start;
} fit;

/* Optimiser steps in an epoch: one full batch, or ceil(n / batch) (the last batch may be short), without
 * the n + batch - 1 that overflows an int for a batch near INT_MAX. */
static int steps_per_epoch(const al__fit_config *fc)
{
    return fc->full_batch ? 1 : fc->n / fc->batch + (fc->n % fc->batch != 0);
}

/* The state after epoch ep when the run's al_resume wants it (with the kept model and its record). */
static al_status offer(fit *F, int ep, int last, al_error *err)
{
    const al_resume *rs = F->fc->resume;
    if (!F->best) return al__loop_offer(rs, &F->L, ep, last, err);
    if (!al__resume_due(rs, ep, last)) return AL_OK;
    al_train_state s;
    al__loop_view(&F->L, ep, last, &s);
    s.best = F->best; s.best_epoch = F->track.best_epoch; s.bad = F->track.bad;
    s.acc_max = F->track.acc_max; s.loss_min = F->track.loss_min; s.step_seconds = F->track.step_seconds;
    return rs->save(rs->ud, &s) ? al_seterr(err, "stopped: the training state after epoch %d was not saved", ep) : AL_OK;
}

/* A fresh start (the state of epoch 0 offered) or rs->from restored; *over when that state had finished
 * a keep-best run (then only the kept model is restored and reported). */
static al_status begin(fit *F, int *first, int *over, al_error *err)
{
    const al_resume *rs = F->fc->resume;
    const al_train_state *f = rs ? rs->from : NULL;
    *over = 0;
    if (!F->best) return al__loop_begin(rs, &F->L, F->fc->seed, first, err);
    if (f && !f->best)
        return al_seterr(err, "%s: the training state is not a %s model's (no graph.best: the kept weights)",
                         rs->from_path ? al_path_short(rs->from_path) : "resume", F->fc->what);
    if (al__loop_begin(f ? rs : NULL, &F->L, F->fc->seed, first, err) != AL_OK) return AL_ERR;
    if (!f) return offer(F, 0, 0, err);
    memcpy(F->best, f->best, (size_t)F->opt.n * sizeof *F->best);
    F->track.acc_max = f->acc_max; F->track.loss_min = f->loss_min; F->track.step_seconds = f->step_seconds;
    F->track.bad = f->bad; F->track.best_epoch = f->best_epoch;
    *over = f->finished;
    return AL_OK;
}

static void progress(const fit *F, int kind, int ep, int step, int spe, double loss, int64_t hits, int64_t count,
                     double secs, double units, al__fit_progress *p)
{
    memset(p, 0, sizeof *p);
    p->kind = kind; p->epoch = ep; p->epochs = F->fc->epochs; p->step = step; p->steps_per_epoch = spe;
    p->loss = loss; p->train_acc = count ? (double)hits / (double)count : NAN;
    p->seconds = secs; p->units = units; p->elapsed = al_time() - F->t_start;
}

/* An epoch's steps over the freshly shuffled order: the optimiser step between the divergence checks,
 * the running figures, step reports. *steps_done: the number of the last step begun (for reports). */
static al_status epoch_steps(fit *F, int ep, int spe, double *loss_sum, double *weight, int64_t *hits, int64_t *count,
                             double *units, double t0, int *steps_done, al_error *err)
{
    const al__fit_config *fc = F->fc;
    int step;
    for (step = 1; step <= spe; step++) {
        const int s = (step - 1) * fc->batch, n = fc->full_batch ? 0 : fc->n - s < fc->batch ? fc->n - s : fc->batch;
        al__fit_step r = {0};
        if (F->t->step(F->self, F->c, fc->full_batch ? NULL : F->order + s, n, ep, step, F->steps, &r, err) != AL_OK) return AL_ERR;
        if (r.skip) continue;
        if (al_diverge_loss(&F->div, r.loss, ep, step, err) != AL_OK) return AL_ERR;   /* before the update */
        al_optim_step(&F->opt, fc->params);
        if (al_diverge_step(&F->div, &F->opt, fc->params, r.loss, ep, step, err) != AL_OK) return AL_ERR;
        *loss_sum += r.loss * r.weight; *weight += r.weight;
        *hits += r.hits; *count += r.count; *units += (double)r.units;
        F->steps++;
        if (fc->step_reports && F->t->report) {
            al__fit_progress p;
            progress(F, 0, ep, step, spe, r.loss, *hits, *count, al_time() - t0, *units, &p);
            if (F->t->report(F->self, &p) != AL__FIT_CONTINUE) { *steps_done = step; return al_seterr(err, "stopped"); }
        }
        if (fc->max_steps > 0 && F->steps >= fc->max_steps) break;
    }
    *steps_done = step > spe ? spe : step;
    return AL_OK;
}

/* Epochs first..epochs: steps, evaluation, the kept model, the epoch's report, the state. */
static al_status epochs(fit *F, int *ep_io, al_error *err)
{
    const al__fit_config *fc = F->fc;
    const int spe = steps_per_epoch(fc);
    int ep = *ep_io;
    al_status st = AL_OK;
    for (; ep <= fc->epochs; ep++) {
        if (!fc->full_batch) al_rng_shuffle(&F->shuf, F->order, fc->n);
        double loss_sum = 0, weight = 0, units = 0, t0 = al_time();
        int64_t hits = 0, count = 0;
        int done = 0;
        if ((st = epoch_steps(F, ep, spe, &loss_sum, &weight, &hits, &count, &units, t0, &done, err)) != AL_OK) break;
        const double secs = al_time() - t0;
        F->track.step_seconds += secs;
        const int capped = fc->max_steps > 0 && F->steps >= fc->max_steps;
        if ((st = F->t->evaluate(F->self, F->c, ep, ep == fc->epochs || capped, err)) != AL_OK) break;
        int keep = 0, stop = F->t->track ? F->t->track(F->self, &F->track, ep, &keep) : 0;
        if (keep) {
            memcpy(F->best, fc->params->data, (size_t)fc->params->total * sizeof *F->best);
            F->track.best_epoch = ep;
        }
        if (F->t->report) {
            al__fit_progress p;
            progress(F, 1, ep, done, spe, weight > 0 ? loss_sum / weight : NAN, hits, count, secs, units, &p);
            int r = F->t->report(F->self, &p);
            if (r == AL__FIT_ABORT) { st = al_seterr(err, "stopped"); break; }
            if (r == AL__FIT_STOP) stop = 1;
        }
        if ((st = offer(F, ep, stop || capped || ep == fc->epochs, err)) != AL_OK) break;
        if (stop) { ep++; break; }
        if (capped) break;
    }
    *ep_io = ep;
    return st;
}

al_status al__fit(const al__fit_task *t, void *self, const al__fit_config *fc, int *epochs_run, al_error *err)
{
    fit F;
    memset(&F, 0, sizeof F);
    F.t = t; F.self = self; F.fc = fc; F.track = fc->track0;
    if (epochs_run) *epochs_run = 0;
    const size_t np = (size_t)(fc->params->total > 0 ? fc->params->total : 1);
    F.c = al_ctx_new(fc->seed);
    F.order = fc->full_batch ? NULL : malloc((size_t)(fc->n > 0 ? fc->n : 1) * sizeof *F.order);
    F.best = t->track ? malloc(np * sizeof *F.best) : NULL;
    al_status st = AL_OK;
    if (!F.c || (!fc->full_batch && !F.order) || (t->track && !F.best)) { st = al_seterr(err, "training: out of memory"); goto done; }
    if ((st = al_optim_init(&F.opt, fc->optim, fc->params->total, fc->lr, err)) != AL_OK) goto done;
    F.opt.weight_decay = fc->weight_decay;
    if (F.best) memcpy(F.best, fc->params->data, (size_t)fc->params->total * sizeof *F.best);
    F.L = (al__loop){&F.opt, fc->full_batch ? NULL : &F.shuf, F.c, F.order, fc->full_batch ? 0 : fc->n, &F.steps, &F.div,
                     fc->epochs, steps_per_epoch(fc)};
    int ep, over;
    if ((st = begin(&F, &ep, &over, err)) != AL_OK) goto done;
    F.t_start = al_time();
    if (!over) st = epochs(&F, &ep, err);
    if (epochs_run) *epochs_run = ep - 1;
    if (st == AL_OK && F.best) {                          /* the kept model back, evaluated, reported */
        memcpy(fc->params->data, F.best, (size_t)fc->params->total * sizeof *F.best);
        st = t->finish(self, F.c, &F.track, ep - 1, err);
    }
done:
    al_optim_free(&F.opt);
    al_ctx_free(F.c);
    free(F.order); free(F.best);
    return st;
}
