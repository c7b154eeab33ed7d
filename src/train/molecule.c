/* molecule.c — training and evaluation of the molecule models (molnet.h): minibatch AdamW, MSE on
 * standardised targets (regression) or cross-entropy over two classes (a 0/1 target column); after
 * every epoch validation and test figures; the best-validation model kept and restored (the PyTorch
 * peer's rule: lowest RMSE; classification: highest accuracy, ties to the lower loss); the divergence
 * stop and training states (trainstate.h), the kept model and its record in the state's graph fields. */
#include "attnlab/train.h"
#include "attnlab/molnet.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"
#include "train/fit_impl.h"
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

/* Forward, loss and backward on molecules ids[0..n) (the gradient in m's parameters); *cnt = 0 when no
 * molecule has a target (then nothing else is done). */
static al_status grad(al_molnet *m, const al_molset *ms, const int *ids, int n, al_ctx *c, double *loss, int *cnt,
                      al_error *err)
{
    al_ctx_reset(c);
    c->training = 1; c->grad_enabled = 1;
    al_mol_batch b;
    *cnt = 0;
    al_tensor *y = batch_for(c, m, ms, ids, n, &b) ? NULL : al_molnet_forward(c, m, &b);
    al_tensor *l = y ? batch_loss(c, m, y, &b, cnt) : NULL;
    if (!al_ok(c)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    if (!*cnt) return AL_OK;
    if (!l) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    al_params_zero_grad(&m->params);
    if (al_backward(c, l)) return al_seterr(err, "molecule training: %s", al_ctx_error(c));
    *loss = l->data[0];
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

/* ---------------- the molecule task of the training skeleton (train/fit_impl.h) ---------------- */
typedef struct mol_task {
    al_molnet *m;
    const al_molset *ms;
    al_mol_epoch_fn fn; void *ud;
    al_mol_result *res;
    int *ids;                      /* (batch) */
    al_mol_epoch e;                /* the last evaluation */
} mol_task;

static al_status mol_step(void *self, al_ctx *c, const int *items, int n, int ep, int step, int64_t step_no,
                          al__fit_step *out, al_error *err)
{
    (void)ep; (void)step; (void)step_no;
    mol_task *T = self;
    for (int j = 0; j < n; j++) T->ids[j] = T->ms->train[items[j]];
    int cnt;
    if (grad(T->m, T->ms, T->ids, n, c, &out->loss, &cnt, err) != AL_OK) return AL_ERR;
    out->skip = cnt == 0;          /* no molecule with a target: no step */
    out->weight = 1;
    return AL_OK;
}

static al_status mol_evaluate(void *self, al_ctx *c, int ep, int last, al_error *err)
{
    (void)last;
    mol_task *T = self;
    memset(&T->e, 0, sizeof T->e);
    T->e.epoch = ep;
    return eval_all(T->m, T->ms, c, &T->e, err);
}

/* Keep the model whose validation is best: the lowest RMSE, or for classification the highest accuracy,
 * then the lowest loss (the record holds validation accuracy in acc_max, RMSE or loss in loss_min). */
static int mol_track(void *self, al__fit_track *t, int ep, int *keep)
{
    (void)ep;
    mol_task *T = self;
    const al_mol_eval *v = &T->e.val;
    const int reg = T->m->nout == 1;
    *keep = !t->best_epoch || (reg ? v->rmse < t->loss_min
                                   : v->acc > t->acc_max || (v->acc == t->acc_max && v->loss < t->loss_min));
    if (*keep) { t->acc_max = v->acc; t->loss_min = reg ? v->rmse : v->loss; }
    return 0;
}

static int mol_report(void *self, const al__fit_progress *f)
{
    mol_task *T = self;
    T->e.train_loss = f->loss; T->e.seconds = f->seconds;
    return T->fn && T->fn(&T->e, T->ud) ? AL__FIT_STOP : AL__FIT_CONTINUE;
}

/* The kept model (back in m) evaluated on every split: res and its record. */
static al_status mol_finish(void *self, al_ctx *c, const al__fit_track *t, int epochs_run, al_error *err)
{
    mol_task *T = self;
    al_mol_epoch r;
    memset(&r, 0, sizeof r);
    if (eval_all(T->m, T->ms, c, &r, err) || al_molnet_evaluate(T->m, T->ms, T->ms->train, T->ms->ntrain, c, &r.train, NULL, err))
        return AL_ERR;
    r.final = 1; r.epoch = t->best_epoch; r.train_loss = NAN; r.seconds = NAN;
    al_mol_result *res = T->res;
    res->best_epoch = t->best_epoch;
    res->train = r.train; res->val = r.val; res->test = r.test;
    res->step_seconds = epochs_run ? t->step_seconds / epochs_run : 0;
    if (T->fn) T->fn(&r, T->ud);
    return AL_OK;
}

static const al__fit_task mol_fit = {mol_step, mol_evaluate, mol_track, mol_report, mol_finish};

al_status al_molnet_train(al_molnet *m, const al_molset *ms, uint64_t seed, al_mol_epoch_fn fn, void *ud, al_mol_result *res,
                          al_error *err)
{
    return al_molnet_train_resumable(m, ms, seed, NULL, fn, ud, res, err);
}

al_status al_molnet_train_resumable(al_molnet *m, const al_molset *ms, uint64_t seed, const al_resume *rs,
                                    al_mol_epoch_fn fn, void *ud, al_mol_result *res, al_error *err)
{
    memset(res, 0, sizeof *res);
    mol_task T;
    memset(&T, 0, sizeof T);
    T.m = m; T.ms = ms; T.fn = fn; T.ud = ud; T.res = res;
    int nt = ms->ntrain > 0 ? ms->ntrain : 1, b = m->cfg.batch < nt ? m->cfg.batch : nt;
    if (!(T.ids = malloc((size_t)b * sizeof *T.ids))) return al_seterr(err, "molecule training: out of memory");
    al__fit_config fc = {0};
    fc.params = &m->params; fc.optim = AL_ADAMW; fc.lr = m->cfg.lr; fc.weight_decay = m->cfg.weight_decay;
    fc.seed = seed; fc.epochs = m->cfg.epochs; fc.n = ms->ntrain; fc.batch = m->cfg.batch;
    fc.resume = rs; fc.what = "molecule";
    fc.track0 = (al__fit_track){NAN, NAN, 0, 0, 0};
    int epochs_run = 0;
    al_status st = al__fit(&mol_fit, &T, &fc, &epochs_run, err);
    res->epochs_run = epochs_run;
    free(T.ids);
    return st;
}
