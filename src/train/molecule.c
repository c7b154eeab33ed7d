/* molecule.c — training and evaluation of the molecule models (molnet.h): minibatch AdamW on MSE of
 * standardised targets, RMSE / MAE in the file's units after every epoch, the best-validation model
 * kept and restored (the PyTorch peer's rule). */
#include "attnlab/molnet.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define EVAL_BATCH 128

static al_status batch_for(al_ctx *c, const al_molnet *m, const al_molset *ms, const int *ids, int n, al_mol_batch *b)
{
    return al_mol_batch_build(c, ms, ids, n, m->cfg.target, m->kind->full, m->kind->fp, b);
}

al_status al_molnet_evaluate(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, double *rmse, double *mae,
                             float *pred, al_error *err)
{
    const int tr = c->training, ge = c->grad_enabled;
    c->training = 0; c->grad_enabled = 0;
    double se = 0, ae = 0; int cnt = 0;
    al_status st = AL_OK;
    for (int i = 0; i < n && st == AL_OK; i += EVAL_BATCH) {
        int k = n - i < EVAL_BATCH ? n - i : EVAL_BATCH;
        al_ctx_reset(c);
        al_mol_batch b;
        al_tensor *y = batch_for(c, m, ms, ids + i, k, &b) ? NULL : al_molnet_forward(c, m, &b);
        if (!y) { st = al_seterr(err, "molecule evaluation: %s", al_ctx_error(c)); break; }
        for (int s = 0; s < k; s++) {
            double p = (double)y->data[s] * m->y_std + m->y_mean;
            if (pred) pred[i + s] = (float)p;
            if (isnan(b.y[s])) continue;
            se += (p - b.y[s]) * (p - b.y[s]); ae += fabs(p - b.y[s]); cnt++;
        }
    }
    al_ctx_reset(c);
    c->training = tr; c->grad_enabled = ge;
    *rmse = cnt ? sqrt(se / cnt) : NAN; *mae = cnt ? ae / cnt : NAN;
    return st;
}

/* One step on molecules ids[0..n): forward, MSE over the molecules with a target, backward, AdamW. */
static al_status step(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, al_optim *o, double *loss, al_error *err)
{
    al_ctx_reset(c);
    c->training = 1; c->grad_enabled = 1;
    al_mol_batch b;
    al_tensor *y = batch_for(c, m, ms, ids, n, &b) ? NULL : al_molnet_forward(c, m, &b);   /* (S, 1) */
    al_tensor *t = y ? al_new(c, 2, (int[]){n, 1}) : NULL;
    al_tensor *w = y ? al_new(c, 2, (int[]){n, 1}) : NULL;
    if (!t || !w) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    int cnt = 0;
    for (int s = 0; s < n; s++) {
        int ok = !isnan(b.y[s]);
        t->data[s] = ok ? -(b.y[s] - m->y_mean) / m->y_std : 0.f;
        w->data[s] = ok; cnt += ok;
    }
    if (!cnt) { *loss = NAN; return AL_OK; }
    al_tensor *d = al_mul(c, al_add(c, y, t), w);                      /* (S, 1) residuals, 0 where missing */
    al_tensor *l = al_scale(c, al_mean_tokens(c, al_reshape(c, al_mul(c, d, d), 3, (int[]){1, n, 1})), (float)n / (float)cnt);
    al_params_zero_grad(&m->params);
    if (!l || al_backward(c, l)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    *loss = l->data[0];
    al_optim_step(o, &m->params);
    return AL_OK;
}

/* val / test RMSE and MAE of the current parameters into e (the training set only for the kept model:
 * it would cost as much as the epoch's training). */
static al_status eval_all(al_molnet *m, const al_molset *ms, al_ctx *c, al_mol_epoch *e, al_error *err)
{
    e->train_rmse = NAN;
    return al_molnet_evaluate(m, ms, ms->val, ms->nval, c, &e->val_rmse, &e->val_mae, NULL, err) ||
           al_molnet_evaluate(m, ms, ms->test, ms->ntest, c, &e->test_rmse, &e->test_mae, NULL, err) ? AL_ERR : AL_OK;
}

al_status al_molnet_train(al_molnet *m, const al_molset *ms, uint64_t seed, al_mol_epoch_fn fn, void *ud, al_mol_result *res,
                          al_error *err)
{
    memset(res, 0, sizeof *res);
    al_optim o;
    if (al_optim_init(&o, AL_ADAMW, m->params.total, m->cfg.lr, err)) return AL_ERR;
    o.weight_decay = m->cfg.weight_decay;
    al_ctx *c = al_ctx_new(seed);
    int *order = malloc((size_t)ms->ntrain * sizeof *order);
    float *best = malloc((size_t)m->params.total * sizeof *best);
    al_status st = AL_OK;
    if (!c || !order || !best) { st = al_seterr(err, "molecule training: out of memory"); goto out; }
    memcpy(order, ms->train, (size_t)ms->ntrain * sizeof *order);
    memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
    al_rng shuf; al_rng_seed(&shuf, seed, AL_RNG_SHUFFLE);
    double best_val = INFINITY, tsum = 0;
    al_mol_epoch bestrec; memset(&bestrec, 0, sizeof bestrec);
    for (int ep = 1; ep <= m->cfg.epochs; ep++) {
        al_rng_shuffle(&shuf, order, ms->ntrain);
        double t0 = al_time(), lsum = 0; int nb = 0;
        for (int i = 0; i < ms->ntrain; i += m->cfg.batch) {
            int k = ms->ntrain - i < m->cfg.batch ? ms->ntrain - i : m->cfg.batch;
            double loss = NAN;
            if ((st = step(m, ms, order + i, k, c, &o, &loss, err))) goto out;
            if (!isnan(loss)) { lsum += loss; nb++; }
        }
        al_mol_epoch e; memset(&e, 0, sizeof e);
        e.epoch = ep; e.seconds = al_time() - t0; tsum += e.seconds;
        e.train_loss = nb ? lsum / nb : NAN;
        if ((st = eval_all(m, ms, c, &e, err))) goto out;
        if (!isfinite(e.train_loss)) { st = al_seterr(err, "molecule training: loss is %g at epoch %d (diverged)", e.train_loss, ep); goto out; }
        res->epochs_run = ep;
        if (e.val_rmse < best_val) {
            best_val = e.val_rmse; bestrec = e; res->best_epoch = ep;
            memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
        }
        if (fn && fn(&e, ud)) break;
    }
    memcpy(m->params.data, best, (size_t)m->params.total * sizeof *best);
    double mae;
    if ((st = al_molnet_evaluate(m, ms, ms->train, ms->ntrain, c, &bestrec.train_rmse, &mae, NULL, err))) goto out;
    bestrec.final = 1; bestrec.epoch = res->best_epoch; bestrec.train_loss = NAN; bestrec.seconds = NAN;
    res->train_rmse = bestrec.train_rmse; res->val_rmse = bestrec.val_rmse; res->val_mae = bestrec.val_mae;
    res->test_rmse = bestrec.test_rmse; res->test_mae = bestrec.test_mae;
    res->step_seconds = res->epochs_run ? tsum / res->epochs_run : 0;
    if (fn) fn(&bestrec, ud);
out:
    free(order); free(best);
    al_ctx_free(c);
    al_optim_free(&o);
    return st;
}
