/* molecule.c — training and evaluation of the molecule models (molnet.h): minibatch AdamW, MSE on
 * standardised targets (regression) or cross-entropy over two classes (a 0/1 target column); after
 * every epoch validation and test figures; the best-validation model kept and restored (the PyTorch
 * peer's rule: lowest RMSE; classification: highest accuracy, ties to the lower loss). */
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

/* Running sums of one evaluation. */
typedef struct { double se, ae, loss; long right, cnt; } eval_acc;

static void eval_batch(const al_molnet *m, const al_tensor *y /* (S, nout) */, const al_mol_batch *b, int off, float *pred, eval_acc *a)
{
    for (int s = 0; s < b->nmol; s++) {
        const float *o = y->data + (int64_t)s * m->nout;
        double p;
        if (m->nout == 2) {   /* class 1 probability; log-softmax for the loss */
            double mx = o[0] > o[1] ? o[0] : o[1], lse = mx + log(exp(o[0] - mx) + exp(o[1] - mx));
            p = exp(o[1] - lse);
            if (!isnan(b->y[s])) { a->loss -= (b->y[s] > 0.5f ? o[1] : o[0]) - lse; a->right += (p > 0.5) == (b->y[s] > 0.5f); }
        } else p = (double)o[0] * m->y_std + m->y_mean;
        if (pred) pred[off + s] = (float)p;
        if (isnan(b->y[s])) continue;
        if (m->nout == 1) { a->se += (p - b->y[s]) * (p - b->y[s]); a->ae += fabs(p - b->y[s]); }
        a->cnt++;
    }
}

al_status al_molnet_evaluate(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, al_mol_eval *ev, float *pred,
                             al_error *err)
{
    const int tr = c->training, ge = c->grad_enabled;
    c->training = 0; c->grad_enabled = 0;
    eval_acc a = {0};
    al_status st = AL_OK;
    for (int i = 0; i < n && st == AL_OK; i += EVAL_BATCH) {
        int k = n - i < EVAL_BATCH ? n - i : EVAL_BATCH;
        al_ctx_reset(c);
        al_mol_batch b;
        al_tensor *y = batch_for(c, m, ms, ids + i, k, &b) ? NULL : al_molnet_forward(c, m, &b);
        if (!y) { st = al_seterr(err, "molecule evaluation: %s", al_ctx_error(c)); break; }
        eval_batch(m, y, &b, i, pred, &a);
    }
    al_ctx_reset(c);
    c->training = tr; c->grad_enabled = ge;
    const int cls = m->nout == 2;
    ev->rmse = a.cnt && !cls ? sqrt(a.se / a.cnt) : NAN; ev->mae = a.cnt && !cls ? a.ae / a.cnt : NAN;
    ev->acc = a.cnt && cls ? (double)a.right / a.cnt : NAN; ev->loss = a.cnt && cls ? a.loss / a.cnt : NAN;
    return st;
}

/* The step's loss over the molecules with a target: MSE of standardised targets, or cross-entropy. */
static al_tensor *batch_loss(al_ctx *c, const al_molnet *m, al_tensor *y /* (S, nout) */, const al_mol_batch *b, int *cnt)
{
    const int n = b->nmol;
    *cnt = 0;
    if (m->nout == 2) {
        int *lab = al_arena_alloc(&c->arena, (size_t)n * sizeof *lab);
        uint8_t *mask = al_arena_alloc(&c->arena, (size_t)n);
        if (!lab || !mask) return al_fail(c, "molecule training: out of memory (arena)");
        for (int s = 0; s < n; s++) { mask[s] = !isnan(b->y[s]); lab[s] = mask[s] && b->y[s] > 0.5f; *cnt += mask[s]; }
        return *cnt ? al_cross_entropy(c, y, lab, mask) : NULL;
    }
    al_tensor *t = al_new(c, 2, (int[]){n, 1}), *w = al_new(c, 2, (int[]){n, 1});
    if (!t || !w) return NULL;
    for (int s = 0; s < n; s++) {
        int ok = !isnan(b->y[s]);
        t->data[s] = ok ? -(b->y[s] - m->y_mean) / m->y_std : 0.f;
        w->data[s] = ok; *cnt += ok;
    }
    if (!*cnt) return NULL;
    al_tensor *d = al_mul(c, al_add(c, y, t), w);   /* (S, 1) residuals, 0 where missing */
    return al_scale(c, al_mean_tokens(c, al_reshape(c, al_mul(c, d, d), 3, (int[]){1, n, 1})), (float)n / (float)*cnt);
}

/* One step on molecules ids[0..n): forward, loss, backward, AdamW. *loss NaN when no molecule has a target. */
static al_status step(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, al_optim *o, double *loss, al_error *err)
{
    al_ctx_reset(c);
    c->training = 1; c->grad_enabled = 1;
    al_mol_batch b;
    int cnt = 0;
    al_tensor *y = batch_for(c, m, ms, ids, n, &b) ? NULL : al_molnet_forward(c, m, &b);
    al_tensor *l = y ? batch_loss(c, m, y, &b, &cnt) : NULL;
    if (!al_ok(c)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    *loss = NAN;
    if (!cnt) return AL_OK;
    al_params_zero_grad(&m->params);
    if (!l || al_backward(c, l)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    *loss = l->data[0];
    al_optim_step(o, &m->params);
    return AL_OK;
}

/* Validation and test figures of the current parameters into e (the training set's only for the kept
 * model: it would cost as much as the epoch's training). */
static al_status eval_all(al_molnet *m, const al_molset *ms, al_ctx *c, al_mol_epoch *e, al_error *err)
{
    e->train.rmse = e->train.mae = e->train.acc = e->train.loss = NAN;
    return al_molnet_evaluate(m, ms, ms->val, ms->nval, c, &e->val, NULL, err) ||
           al_molnet_evaluate(m, ms, ms->test, ms->ntest, c, &e->test, NULL, err) ? AL_ERR : AL_OK;
}

/* Is e's validation better than best's? */
static int better(const al_molnet *m, const al_mol_eval *e, const al_mol_eval *best, int first)
{
    if (first) return 1;
    if (m->nout == 1) return e->rmse < best->rmse;
    return e->acc > best->acc || (e->acc == best->acc && e->loss < best->loss);
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
    double tsum = 0;
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
        if (better(m, &e.val, &bestrec.val, ep == 1)) {
            bestrec = e; res->best_epoch = ep;
            memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
        }
        if (fn && fn(&e, ud)) break;
    }
    memcpy(m->params.data, best, (size_t)m->params.total * sizeof *best);
    if ((st = al_molnet_evaluate(m, ms, ms->train, ms->ntrain, c, &bestrec.train, NULL, err))) goto out;
    bestrec.final = 1; bestrec.epoch = res->best_epoch; bestrec.train_loss = NAN; bestrec.seconds = NAN;
    res->train = bestrec.train; res->val = bestrec.val; res->test = bestrec.test;
    res->step_seconds = res->epochs_run ? tsum / res->epochs_run : 0;
    if (fn) fn(&bestrec, ud);
out:
    free(order); free(best);
    al_ctx_free(c);
    al_optim_free(&o);
    return st;
}
