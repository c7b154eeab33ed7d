/* train/graph.c — full-batch training of the graph models: one step (forward with dropout,
 * cross-entropy over the training nodes, backward, Adam), evaluation of every split, and the
 * training loop with the GAT paper's early stopping; see gnn.h. */
#include "attnlab/train.h"
#include "attnlab/gnn.h"
#include "attnlab/ops.h"
#include "attnlab/optim.h"
#include "train/fit_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- training ---------------- */
/* al_gnn_step without the optimiser: the loss's gradient in m's parameters. */
static al_status gnn_grad(al_gnn *m, const al_graph *g, al_ctx *c, double *loss, al_error *err)
{
    al_ctx_reset(c);
    c->training = 1; c->grad_enabled = 1;
    /* the training nodes once each, in node order (the order al_cross_entropy's mask would sum them) */
    uint8_t *mask = al_arena_calloc(&c->arena, (size_t)g->n);                /* (N) */
    int *ids = al_arena_alloc(&c->arena, (size_t)(g->ntrain > 0 ? g->ntrain : 1) * sizeof *ids);   /* (ntrain) */
    int *lab = al_arena_alloc(&c->arena, (size_t)(g->ntrain > 0 ? g->ntrain : 1) * sizeof *lab);
    if (!mask || !ids || !lab) return al_seterr(err, "graph training: out of memory");
    for (int i = 0; i < g->ntrain; i++) mask[g->train[i]] = 1;
    int nt = 0;
    for (int i = 0; i < g->n; i++)
        if (mask[i]) { ids[nt] = i; lab[nt] = g->label[i] >= 0 ? g->label[i] : 0; nt++; }
    al_tensor *logits = al_gnn_forward(c, m);
    al_tensor *L;
    if (nt > 0) L = al_cross_entropy(c, al_take_rows(c, logits, ids, nt), lab, NULL);
    else L = al_cross_entropy(c, logits, (int *)mask, mask);   /* no training node: a zero loss */
    al_params_zero_grad(&m->params);
    if (!L || al_backward(c, L) != AL_OK) return al_seterr(err, "graph training: %s", al_ctx_error(c));
    if (loss) *loss = L->data[0];
    return AL_OK;
}

al_status al_gnn_step(al_gnn *m, const al_graph *g, al_ctx *c, al_optim *o, double *loss, al_error *err)
{
    if (gnn_grad(m, g, c, loss, err) != AL_OK) return AL_ERR;
    al_optim_step(o, &m->params);
    return AL_OK;
}

static void split_stats(const float *lg, int C, const int *label, const int *ids, int n, double *loss, double *acc)
{
    double ls = 0; long hit = 0;
    for (int t = 0; t < n; t++) {
        const float *z = lg + (int64_t)ids[t] * C;        /* (C) */
        int y = label[ids[t]], arg = 0;
        double mx = z[0];
        for (int k = 1; k < C; k++) if (z[k] > mx) { mx = z[k]; arg = k; }
        double s = 0;
        for (int k = 0; k < C; k++) s += exp((double)z[k] - mx);
        ls += mx + log(s) - z[y];
        hit += arg == y;
    }
    *loss = n ? ls / n : NAN;
    *acc = n ? (double)hit / n : NAN;
}

al_status al_gnn_evaluate(al_gnn *m, const al_graph *g, al_ctx *c, al_gnn_eval *ev, al_error *err)
{
    al_ctx_reset(c);
    int tr = c->training, ge = c->grad_enabled;
    c->training = 0; c->grad_enabled = 0;
    al_tensor *lg = al_gnn_forward(c, m);       /* (N, C) */
    c->training = tr; c->grad_enabled = ge;
    if (!lg) return al_seterr(err, "graph evaluation: %s", al_ctx_error(c));
    split_stats(lg->data, m->nclass, g->label, g->train, g->ntrain, &ev->train_loss, &ev->train_acc);
    split_stats(lg->data, m->nclass, g->label, g->val, g->nval, &ev->val_loss, &ev->val_acc);
    split_stats(lg->data, m->nclass, g->label, g->test, g->ntest, &ev->test_loss, &ev->test_acc);
    return AL_OK;
}

/* ---------------- the graph task of the training skeleton (train/fit_impl.h) ---------------- */
typedef struct gnn_task {
    al_gnn *m;
    const al_graph *g;
    al_gnn_epoch_fn fn; void *ud;
    al_gnn_result *res;
    al_gnn_eval ev;                /* the last evaluation */
} gnn_task;

static al_status gnn_task_step(void *self, al_ctx *c, const int *items, int n, int ep, int step, int64_t step_no,
                               al__fit_step *out, al_error *err)
{
    (void)items; (void)n; (void)ep; (void)step; (void)step_no;
    gnn_task *T = self;
    if (gnn_grad(T->m, T->g, c, &out->loss, err) != AL_OK) return AL_ERR;
    out->weight = 1;
    return AL_OK;
}

static al_status gnn_task_evaluate(void *self, al_ctx *c, int ep, int last, al_error *err)
{
    (void)ep; (void)last;
    gnn_task *T = self;
    return al_gnn_evaluate(T->m, T->g, c, &T->ev, err);
}

/* The GAT paper's rule: keep the model when validation accuracy and loss are both at least as good as
 * their best; stop when neither improved for patience epochs. */
static int gnn_task_track(void *self, al__fit_track *t, int ep, int *keep)
{
    (void)ep;
    gnn_task *T = self;
    const al_gnn_eval *ev = &T->ev;
    *keep = 0;
    if (ev->val_acc >= t->acc_max || ev->val_loss <= t->loss_min) {
        *keep = ev->val_acc >= t->acc_max && ev->val_loss <= t->loss_min;
        if (ev->val_acc > t->acc_max) t->acc_max = ev->val_acc;
        if (ev->val_loss < t->loss_min) t->loss_min = ev->val_loss;
        t->bad = 0;
        return 0;
    }
    return T->m->cfg.patience > 0 && ++t->bad >= T->m->cfg.patience;
}

static int gnn_task_report(void *self, const al__fit_progress *f)
{
    gnn_task *T = self;
    const al_gnn_eval *ev = &T->ev;
    al_gnn_epoch rec = {f->epoch, 0, f->loss,   /* one step an epoch: its loss */ ev->train_acc, ev->val_loss, ev->val_acc, ev->test_acc, f->seconds};
    return T->fn && T->fn(&rec, T->ud) ? AL__FIT_STOP : AL__FIT_CONTINUE;
}

/* The kept model (back in m) evaluated: res and the final record. */
static al_status gnn_task_finish(void *self, al_ctx *c, const al__fit_track *t, int epochs_run, al_error *err)
{
    gnn_task *T = self;
    al_gnn_eval ev;
    if (al_gnn_evaluate(T->m, T->g, c, &ev, err)) return AL_ERR;
    al_gnn_result *res = T->res;
    res->best_epoch = t->best_epoch;
    res->train_acc = ev.train_acc; res->val_loss = ev.val_loss;
    res->val_acc = ev.val_acc; res->test_acc = ev.test_acc;
    res->step_seconds = epochs_run ? t->step_seconds / epochs_run : 0;
    al_gnn_epoch rec = {t->best_epoch, 1, ev.train_loss, ev.train_acc, ev.val_loss, ev.val_acc, ev.test_acc, NAN};
    if (T->fn) T->fn(&rec, T->ud);
    return AL_OK;
}

static const al__fit_task gnn_fit = {gnn_task_step, gnn_task_evaluate, gnn_task_track, gnn_task_report, gnn_task_finish};

al_status al_gnn_train(al_gnn *m, const al_graph *g, uint64_t seed, al_gnn_epoch_fn fn, void *ud,
                       al_gnn_result *res, al_error *err)
{
    return al_gnn_train_resumable(m, g, seed, NULL, fn, ud, res, err);
}

al_status al_gnn_train_resumable(al_gnn *m, const al_graph *g, uint64_t seed, const al_resume *rs,
                                 al_gnn_epoch_fn fn, void *ud, al_gnn_result *res, al_error *err)
{
    memset(res, 0, sizeof *res);
    gnn_task T;
    memset(&T, 0, sizeof T);
    T.m = m; T.g = g; T.fn = fn; T.ud = ud; T.res = res;
    al__fit_config fc = {0};
    fc.params = &m->params; fc.optim = AL_ADAM; fc.lr = m->cfg.lr; fc.weight_decay = m->cfg.weight_decay;
    fc.seed = seed; fc.epochs = m->cfg.epochs; fc.full_batch = 1; fc.resume = rs; fc.what = "graph";
    fc.track0 = (al__fit_track){-1, INFINITY, 0, 0, 0};
    int capture = m->capture_attn;
    m->capture_attn = 0;   /* attention is not captured during training */
    al_status st = al__fit(&gnn_fit, &T, &fc, &res->epochs_run, err);
    m->capture_attn = capture;
    m->attn[0] = m->attn[1] = NULL;
    return st;
}
