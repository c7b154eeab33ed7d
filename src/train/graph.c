/* train/graph.c — full-batch training of the graph models: one step (forward with dropout,
 * cross-entropy over the training nodes, backward, Adam), evaluation of every split, and the
 * training loop with the GAT paper's early stopping; see gnn.h. */
#include "attnlab/train.h"
#include "attnlab/gnn.h"
#include "attnlab/ops.h"
#include "attnlab/optim.h"
#include "train/state_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- training ---------------- */
al_status al_gnn_step(al_gnn *m, const al_graph *g, al_ctx *c, al_optim *o, double *loss, al_error *err)
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

/* Early stopping's record (the GAT paper's rule) and the time spent in training steps. */
typedef struct gnn_track { double acc_max, loss_min, step_total; int bad, best_epoch; } gnn_track;

/* The state after epoch e when rs wants it: the loop's view plus the record and the kept weights. */
static al_status offer_state(const al_resume *rs, const al__loop *L, int e, int last, const gnn_track *t,
                             float *best, al_error *err)
{
    if (!al__resume_due(rs, e, last)) return AL_OK;
    al_train_state s;
    al__loop_view(L, e, last, &s);
    s.best = best; s.best_epoch = t->best_epoch; s.bad = t->bad;
    s.acc_max = t->acc_max; s.loss_min = t->loss_min; s.step_seconds = t->step_total;
    return rs->save(rs->ud, &s) ? al_seterr(err, "stopped: the training state after epoch %d was not saved", e) : AL_OK;
}

/* Continue from rs->from: the loop's variables, the record and the kept weights. */
static al_status restore_state(const al_resume *rs, const al__loop *L, gnn_track *t, float *best, int *first,
                               al_error *err)
{
    const al_train_state *f = rs->from;
    if (!f->best) return al_seterr(err, "resume: the training state is not a graph model's (no kept weights)");
    if (al__loop_restore(L, f, first, err) != AL_OK) return AL_ERR;
    memcpy(best, f->best, (size_t)L->opt->n * sizeof *best);
    t->acc_max = f->acc_max; t->loss_min = f->loss_min; t->step_total = f->step_seconds;
    t->bad = f->bad; t->best_epoch = f->best_epoch;
    return AL_OK;
}

/* One epoch's evaluation against the record: keep the model when val accuracy and loss are both at
 * least as good as their best; 1 when patience has run out. */
static int track_epoch(gnn_track *t, const al_gnn_eval *ev, const al_gnn *m, float *best, int e)
{
    if (ev->val_acc >= t->acc_max || ev->val_loss <= t->loss_min) {
        if (ev->val_acc >= t->acc_max && ev->val_loss <= t->loss_min) {
            memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
            t->best_epoch = e;
        }
        if (ev->val_acc > t->acc_max) t->acc_max = ev->val_acc;
        if (ev->val_loss < t->loss_min) t->loss_min = ev->val_loss;
        t->bad = 0;
        return 0;
    }
    return m->cfg.patience > 0 && ++t->bad >= m->cfg.patience;
}

/* The kept model back into m, evaluated: res and the final record. */
static al_status finish(al_gnn *m, const al_graph *g, al_ctx *c, const float *best, const gnn_track *t, int epochs_run,
                        al_gnn_epoch_fn fn, void *ud, al_gnn_result *res, al_error *err)
{
    res->epochs_run = epochs_run;
    memcpy(m->params.data, best, (size_t)m->params.total * sizeof *best);
    al_gnn_eval ev;
    if (al_gnn_evaluate(m, g, c, &ev, err)) return AL_ERR;
    res->best_epoch = t->best_epoch;
    res->train_acc = ev.train_acc; res->val_loss = ev.val_loss;
    res->val_acc = ev.val_acc; res->test_acc = ev.test_acc;
    res->step_seconds = epochs_run ? t->step_total / epochs_run : 0;
    al_gnn_epoch rec = {t->best_epoch, 1, ev.train_loss, ev.train_acc, ev.val_loss, ev.val_acc, ev.test_acc, NAN};
    if (fn) fn(&rec, ud);
    return AL_OK;
}

al_status al_gnn_train(al_gnn *m, const al_graph *g, uint64_t seed, al_gnn_epoch_fn fn, void *ud,
                       al_gnn_result *res, al_error *err)
{
    return al_gnn_train_resumable(m, g, seed, NULL, fn, ud, res, err);
}

al_status al_gnn_train_resumable(al_gnn *m, const al_graph *g, uint64_t seed, const al_resume *rs,
                                 al_gnn_epoch_fn fn, void *ud, al_gnn_result *res, al_error *err)
{
    memset(res, 0, sizeof *res);
    al_ctx *c = al_ctx_new(seed);
    float *best = malloc((size_t)(m->params.total > 0 ? m->params.total : 1) * sizeof *best);
    al_optim o; memset(&o, 0, sizeof o);
    if (!c || !best) { al_ctx_free(c); free(best); return al_seterr(err, "graph training: out of memory"); }
    if (al_optim_init(&o, AL_ADAM, m->params.total, m->cfg.lr, err)) { al_ctx_free(c); free(best); return AL_ERR; }
    o.weight_decay = m->cfg.weight_decay;
    memcpy(best, m->params.data, (size_t)m->params.total * sizeof *best);
    gnn_track t = {-1, INFINITY, 0, 0, 0};
    int64_t steps = 0;
    al_diverge div;
    al_diverge_init(&div);
    al__loop L = {&o, NULL, c, NULL, 0, &steps, &div};
    int e = 1, over = 0;
    al_status st;
    if (rs && rs->from) { st = restore_state(rs, &L, &t, best, &e, err); over = rs->from->finished; }
    else st = offer_state(rs, &L, 0, 0, &t, best, err);
    int capture = m->capture_attn;
    m->capture_attn = 0;
    for (; st == AL_OK && !over && e <= m->cfg.epochs; e++) {
        double t0 = al_time(), loss = 0;
        if (al_gnn_step(m, g, c, &o, &loss, err)) { st = AL_ERR; break; }
        double dt = al_time() - t0;
        t.step_total += dt; steps++;
        if (al_diverge_loss(&div, loss, e, 1, err) || al_diverge_step(&div, &o, &m->params, loss, e, 1, err)) { st = AL_ERR; break; }
        al_gnn_eval ev;
        if (al_gnn_evaluate(m, g, c, &ev, err)) { st = AL_ERR; break; }
        int stop = track_epoch(&t, &ev, m, best, e);
        al_gnn_epoch rec = {e, 0, loss, ev.train_acc, ev.val_loss, ev.val_acc, ev.test_acc, dt};
        if (fn && fn(&rec, ud)) stop = 1;
        if (offer_state(rs, &L, e, stop || e == m->cfg.epochs, &t, best, err)) { st = AL_ERR; break; }
        if (stop) { e++; break; }
    }
    if (st == AL_OK) st = finish(m, g, c, best, &t, e - 1, fn, ud, res, err);
    else res->epochs_run = e - 1;
    m->capture_attn = capture;
    m->attn[0] = m->attn[1] = NULL;
    al_optim_free(&o);
    al_ctx_free(c);
    free(best);
    return st;
}
