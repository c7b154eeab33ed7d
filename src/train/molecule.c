/* molecule.c — training and evaluation of the molecule models (molnet.h): minibatch AdamW, MSE on
 * standardised targets (regression) or cross-entropy over two classes (a 0/1 target column); after
 * every epoch validation and test figures; the best-validation model kept and restored (the PyTorch
 * peer's rule: lowest RMSE; classification: highest accuracy, ties to the lower loss); the divergence
 * stop and training states (trainstate.h), the kept model and its record in the state's graph fields. */
#include "attnlab/train.h"
#include "attnlab/molnet.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"
#include "train/state_impl.h"
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

/* One step on molecules ids[0..n): forward, loss, the divergence check, backward, AdamW, the weights'
 * check (step `no` of epoch `ep`). *loss NaN when no molecule has a target (then no step). */
static al_status step(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, al_optim *o, al_diverge *div,
                      int ep, int no, double *loss, al_error *err)
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
    if (!l) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    if (al_diverge_loss(div, l->data[0], ep, no, err)) return AL_ERR;
    al_params_zero_grad(&m->params);
    if (al_backward(c, l)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    *loss = l->data[0];
    al_optim_step(o, &m->params);
    return al_diverge_step(div, o, &m->params, *loss, ep, no, err);
}

/* Validation and test figures of the current parameters into e (the training set's only for the kept
 * model: it would cost as much as the epoch's training). */
static al_status eval_all(al_molnet *m, const al_molset *ms, al_ctx *c, al_mol_epoch *e, al_error *err)
{
    e->train.rmse = e->train.mae = e->train.acc = e->train.loss = NAN;
    return al_molnet_evaluate(m, ms, ms->val, ms->nval, c, &e->val, NULL, err) ||
           al_molnet_evaluate(m, ms, ms->test, ms->ntest, c, &e->test, NULL, err) ? AL_ERR : AL_OK;
}

/* The kept model's record: its epoch (0: none yet), the validation figures it was chosen by, and the
 * time spent in training steps. */
typedef struct mol_track { al_mol_eval val; int best_epoch; double tsum; } mol_track;

/* Is e's validation better than the kept model's? */
static int better(const al_molnet *m, const al_mol_eval *e, const mol_track *t)
{
    if (!t->best_epoch) return 1;
    if (m->nout == 1) return e->rmse < t->val.rmse;
    return e->acc > t->val.acc || (e->acc == t->val.acc && e->loss < t->val.loss);
}

/* The state after epoch ep when rs wants it: the loop's view plus the kept model and its record (in the
 * graph fields: acc_max = validation accuracy, loss_min = validation RMSE, or loss for classification). */
static al_status offer_state(const al_resume *rs, const al__loop *L, int ep, int last, const al_molnet *m,
                             const mol_track *t, float *best, al_error *err)
{
    if (!al__resume_due(rs, ep, last)) return AL_OK;
    al_train_state s;
    al__loop_view(L, ep, last, &s);
    s.best = best; s.best_epoch = t->best_epoch; s.step_seconds = t->tsum;
    s.acc_max = t->val.acc; s.loss_min = m->nout == 1 ? t->val.rmse : t->val.loss;
    return rs->save(rs->ud, &s) ? al_seterr(err, "stopped: the training state after epoch %d was not saved", ep) : AL_OK;
}

/* The loop's variables, the kept model and its record from rs->from (or a fresh start offered as epoch 0). */
static al_status begin(const al_resume *rs, const al__loop *L, uint64_t seed, const al_molnet *m, mol_track *t,
                       float *best, int *first, int *over, al_error *err)
{
    const al_train_state *f = rs ? rs->from : NULL;
    *over = 0;
    if (f && !f->best) return al_seterr(err, "resume: the training state is not a molecule model's (no kept weights)");
    if (al__loop_begin(f ? rs : NULL, L, seed, first, err)) return AL_ERR;   /* epoch 0 is offered below, with the record */
    if (!f) return offer_state(rs, L, 0, 0, m, t, best, err);
    memcpy(best, f->best, (size_t)L->opt->n * sizeof *best);
    t->best_epoch = f->best_epoch; t->tsum = f->step_seconds; t->val.acc = f->acc_max;
    if (m->nout == 1) t->val.rmse = f->loss_min; else t->val.loss = f->loss_min;
    *over = f->finished;
    return AL_OK;
}

/* One epoch over the shuffled training positions: its record into e. */
static al_status epoch(al_molnet *m, const al_molset *ms, al_ctx *c, const al__loop *L, int *ids, int ep,
                       al_mol_epoch *e, al_error *err)
{
    al_rng_shuffle(L->shuffle, L->order, L->norder);
    double t0 = al_time(), lsum = 0;
    int nb = 0;
    for (int i = 0, no = 1; i < ms->ntrain; i += m->cfg.batch, no++) {
        int k = ms->ntrain - i < m->cfg.batch ? ms->ntrain - i : m->cfg.batch;
        for (int j = 0; j < k; j++) ids[j] = ms->train[L->order[i + j]];
        double loss = NAN;
        if (step(m, ms, ids, k, c, L->opt, L->div, ep, no, &loss, err)) return AL_ERR;
        if (!isnan(loss)) { lsum += loss; nb++; (*L->steps)++; }
    }
    memset(e, 0, sizeof *e);
    e->epoch = ep; e->seconds = al_time() - t0;
    e->train_loss = nb ? lsum / nb : NAN;
    return eval_all(m, ms, c, e, err);
}

/* The kept model back into m, evaluated on every split: res and its record (handed to fn). */
static al_status finish(al_molnet *m, const al_molset *ms, al_ctx *c, const float *best, const mol_track *t,
                        int epochs_run, al_mol_epoch_fn fn, void *ud, al_mol_result *res, al_error *err)
{
    memcpy(m->params.data, best, (size_t)m->params.total * sizeof *best);
    al_mol_epoch r;
    memset(&r, 0, sizeof r);
    if (eval_all(m, ms, c, &r, err) || al_molnet_evaluate(m, ms, ms->train, ms->ntrain, c, &r.train, NULL, err)) return AL_ERR;
    r.final = 1; r.epoch = t->best_epoch; r.train_loss = NAN; r.seconds = NAN;
    res->best_epoch = t->best_epoch; res->epochs_run = epochs_run;
    res->train = r.train; res->val = r.val; res->test = r.test;
    res->step_seconds = epochs_run ? t->tsum / epochs_run : 0;
    if (fn) fn(&r, ud);
    return AL_OK;
}

al_status al_molnet_train(al_molnet *m, const al_molset *ms, uint64_t seed, al_mol_epoch_fn fn, void *ud, al_mol_result *res,
                          al_error *err)
{
    return al_molnet_train_resumable(m, ms, seed, NULL, fn, ud, res, err);
}

al_status al_molnet_train_resumable(al_molnet *m, const al_molset *ms, uint64_t seed, const al_resume *rs,
                                    al_mol_epoch_fn fn, void *ud, al_mol_result *res, al_error *err)
{
    memset(res, 0, sizeof *res);
    al_optim o;
    if (al_optim_init(&o, AL_ADAMW, m->params.total, m->cfg.lr, err)) return AL_ERR;
    o.weight_decay = m->cfg.weight_decay;
    al_ctx *c = al_ctx_new(seed);
    int nt = ms->ntrain > 0 ? ms->ntrain : 1, b = m->cfg.batch < nt ? m->cfg.batch : nt;
    int *order = malloc((size_t)nt * sizeof *order), *ids = malloc((size_t)b * sizeof *ids);
    float *best = malloc((size_t)(m->params.total > 0 ? m->params.total : 1) * sizeof *best);
    al_status st = AL_OK;
    if (!c || !order || !ids || !best) { st = al_seterr(err, "molecule training: out of memory"); goto out; }
    memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
    al_rng shuf;
    int64_t steps = 0;
    al_diverge div;
    al__loop L = {&o, &shuf, c, order, ms->ntrain, &steps, &div};
    mol_track t = {{NAN, NAN, NAN, NAN}, 0, 0};
    int ep, over;
    if ((st = begin(rs, &L, seed, m, &t, best, &ep, &over, err))) goto out;
    for (; !over && ep <= m->cfg.epochs; ep++) {
        al_mol_epoch e;
        if ((st = epoch(m, ms, c, &L, ids, ep, &e, err))) goto out;
        t.tsum += e.seconds;
        if (better(m, &e.val, &t)) {
            t.val = e.val; t.best_epoch = ep;
            memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
        }
        int stop = fn && fn(&e, ud);
        if ((st = offer_state(rs, &L, ep, stop || ep == m->cfg.epochs, m, &t, best, err))) goto out;
        if (stop) { ep++; break; }
    }
    st = finish(m, ms, c, best, &t, ep - 1, fn, ud, res, err);
out:
    free(order); free(ids); free(best);
    al_ctx_free(c);
    al_optim_free(&o);
    return st;
}
