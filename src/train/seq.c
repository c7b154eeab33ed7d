/* seq.c — sequence-labelling training and evaluation (seq.h): features encoded once per treebank,
 * shuffled batches of whole sentences packed into one token sequence, AdamW, cross-entropy over the
 * batch's tokens (there is no padding to mask), token accuracy and accuracy on words unseen in
 * train and on words ambiguous in train after every epoch; checkpoints with the configuration and the vocabularies in metadata.
 * Library code: nothing prints. */
#include "attnlab/train.h"
#include "attnlab/seq.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include "train/fit_impl.h"
#include "train/seq_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- batches ---------------- */
/* Scratch for one packed batch of up to cap tokens. */
typedef struct batchbuf { int *len, *word, *suffix, *tag; float *shape; uint8_t *unseen, *ambiguous; } batchbuf;

/* 1 if every sentence of d has one length: a property of the data set, so every batching of d (and every
 * batch of it) is marked alike (al_seq_batch.uniform). */
static int uniform_lengths(const al_seq_data *d)
{
    for (int s = 1; s < d->nsent; s++)
        if (d->start[s + 1] - d->start[s] != d->start[1] - d->start[0]) return 0;
    return d->nsent > 0;
}

static int batchbuf_alloc(batchbuf *b, int nseg, int64_t cap)
{
    memset(b, 0, sizeof *b);
    if (cap < 1) cap = 1;
    b->len = malloc((size_t)nseg * sizeof(int));
    b->word = malloc((size_t)cap * sizeof(int)); b->suffix = malloc((size_t)cap * sizeof(int));
    b->tag = malloc((size_t)cap * sizeof(int)); b->shape = malloc((size_t)cap * 4 * sizeof(float));
    b->unseen = malloc((size_t)cap); b->ambiguous = malloc((size_t)cap);
    return b->len && b->word && b->suffix && b->tag && b->shape && b->unseen && b->ambiguous ? 0 : -1;
}
static void batchbuf_free(batchbuf *b)
{
    free(b->len); free(b->word); free(b->suffix); free(b->tag); free(b->shape); free(b->unseen); free(b->ambiguous);
}

/* Pack sentences ids[0..S) of d into bb; fills the batch view (uniform: uniform_lengths(d)). */
static void gather(const al_seq_data *d, int uniform, const int *ids, int S, batchbuf *bb, al_seq_batch *b)
{
    int t = 0;
    for (int k = 0; k < S; k++) {
        int s0 = d->start[ids[k]], L = d->start[ids[k] + 1] - s0;
        bb->len[k] = L;
        memcpy(bb->word + t, d->word + s0, (size_t)L * sizeof(int));
        memcpy(bb->suffix + t, d->suffix + s0, (size_t)L * sizeof(int));
        memcpy(bb->tag + t, d->tag + s0, (size_t)L * sizeof(int));
        memcpy(bb->shape + (int64_t)t * 4, d->shape + (int64_t)s0 * 4, (size_t)L * 4 * sizeof(float));
        memcpy(bb->unseen + t, d->unseen + s0, (size_t)L);
        if (d->ambiguous) memcpy(bb->ambiguous + t, d->ambiguous + s0, (size_t)L);
        else memset(bb->ambiguous + t, 0, (size_t)L);
        t += L;
    }
    b->nseg = S; b->ntok = t; b->len = bb->len; b->word = bb->word; b->suffix = bb->suffix; b->shape = bb->shape;
    b->feat = NULL; b->uniform = uniform;
}

/* The most tokens any `batch` consecutive-or-not sentences of d can hold: the sum of the largest. */
static int64_t batch_cap(const al_seq_data *d, int batch)
{
    return (int64_t)(batch < d->nsent ? batch : d->nsent) * (d->max_len > 0 ? d->max_len : 1);
}

static int argmax_row(const float *r, int n)
{
    int k = 0;
    for (int j = 1; j < n; j++) if (r[j] > r[k]) k = j;
    return k;
}

/* ---------------- evaluation ---------------- */
/* A ratio of counts; NaN for none. */
static double ratio(int64_t ok, int64_t n) { return n ? (double)ok / (double)n : NAN; }

static al_status eval_with(al_ctx *c, al_seq_model *m, const al_seq_data *d, int batch, al_seq_scores *sc,
                           int *pred, batchbuf *bb, int *ids, const al_dist *dist, al_error *err)
{
    int g0 = c->grad_enabled, t0 = c->training;
    const int uni = uniform_lengths(d);
    c->grad_enabled = 0; c->training = 0;
    int64_t ok = 0, n = 0, ok_u = 0, n_u = 0, ok_a = 0, n_a = 0;
    al_status st = AL_OK;
    for (int s = 0; s < d->nsent; s += batch) {
        if (dist && (s / batch) % dist->size != dist->rank) continue;   /* data-parallel: batches round-robin */
        int S = d->nsent - s < batch ? d->nsent - s : batch;
        for (int k = 0; k < S; k++) ids[k] = s + k;
        al_seq_batch b;
        gather(d, uni, ids, S, bb, &b);
        al_ctx_reset(c);
        al_tensor *logits = al_seq_forward(c, m, &b);             /* (N, tags) */
        if (!logits) { st = al_seterr(err, "evaluation: %s", al_ctx_error(c)); break; }
        int K = logits->shape[1];
        for (int i = 0; i < b.ntok; i++) {
            int k = argmax_row(logits->data + (int64_t)i * K, K);
            if (pred) pred[d->start[s] + i] = k;
            if (bb->tag[i] < 0) continue;
            int hit = k == bb->tag[i];
            ok += hit; n++;
            if (bb->unseen[i]) { ok_u += hit; n_u++; }
            if (bb->ambiguous[i]) { ok_a += hit; n_a++; }
        }
    }
    al_ctx_reset(c);
    c->grad_enabled = g0; c->training = t0;
    int64_t cnt[6] = {ok, n, ok_u, n_u, ok_a, n_a};
    if (st == AL_OK && dist && al_dist_sum_counts(dist, cnt, 6, err) != AL_OK) st = AL_ERR;
    ok = cnt[0]; n = cnt[1]; ok_u = cnt[2]; n_u = cnt[3]; ok_a = cnt[4]; n_a = cnt[5];
    if (st == AL_OK && sc) {
        sc->acc = ratio(ok, n); sc->unseen_acc = ratio(ok_u, n_u); sc->ambig_acc = ratio(ok_a, n_a);
        sc->ntok = n; sc->nunseen = n_u; sc->nambig = n_a;
    }
    return st;
}

al_status al_seq_evaluate_scores(al_seq_model *m, const al_seq_data *d, int batch, al_seq_scores *sc, int *pred, al_error *err)
{
    batch = al__batch_rows(batch < 1 ? 256 : batch, d->nsent);
    al_ctx *c = al_ctx_new(0);
    batchbuf bb;
    int *ids = malloc((size_t)batch * sizeof(int));
    al_status st;
    if (!c || !ids || batchbuf_alloc(&bb, batch, batch_cap(d, batch))) st = al_seterr(err, "evaluation: out of memory");
    else st = eval_with(c, m, d, batch, sc, pred, &bb, ids, NULL, err);
    batchbuf_free(&bb); free(ids); al_ctx_free(c);
    return st;
}

al_status al_seq_evaluate(al_seq_model *m, const al_seq_data *d, int batch, double *acc, double *unseen_acc, int *pred, al_error *err)
{
    al_seq_scores sc;
    if (al_seq_evaluate_scores(m, d, batch, &sc, pred, err) != AL_OK) return AL_ERR;
    if (acc) *acc = sc.acc;
    if (unseen_acc) *unseen_acc = sc.unseen_acc;
    return AL_OK;
}

/* ---------------- training: the sequence task of the skeleton (train/fit_impl.h) ---------------- */
typedef struct seq_task {
    al_seq_model *m;
    const al_seq_data *train, *test;
    const al_seq_train_config *tc;
    al_seq_cb cb; void *ud;
    al__seq_stepper stp;           /* the data-parallel step (train/seq_impl.h) */
    al_gradsum gs;                 /* across processes (dist.h) */
    batchbuf bb;
    int *ids, uni, eval_batch;
    al_seq_scores sc;              /* the last evaluation */
} seq_task;

static al_status seq_step(void *self, al_ctx *c, const int *items, int S, int ep, int step, int64_t step_no,
                          al__fit_step *out, al_error *err)
{
    (void)c;
    seq_task *T = self;
    al_seq_batch b;
    gather(T->train, T->uni, items, S, &T->bb, &b);
    al_error serr = {{0}};                     /* forward, loss (mean over the batch's tokens), backward */
    al_status ss = T->tc->dist ? al__seq_step_dist(&T->stp, T->m, &b, T->bb.tag, T->tc->dist, T->tc->seed, step_no, &T->gs,
                                                   &out->loss, &out->hits, &serr)
                               : al__seq_step(&T->stp, T->m, &b, T->bb.tag, &out->loss, &out->hits, &serr);
    if (ss != AL_OK) return al_seterr(err, "training step %d of epoch %d: %s", step, ep, serr.msg);
    const int ntag = al__seq_tagged(T->bb.tag, b.ntok);
    out->weight = ntag; out->count = ntag; out->units = b.ntok;
    return AL_OK;
}

static al_status seq_evaluate(void *self, al_ctx *c, int ep, int last, al_error *err)
{
    (void)ep; (void)last;
    seq_task *T = self;
    T->sc = (al_seq_scores){NAN, NAN, NAN, 0, 0, 0};
    if (!T->test || T->test->nsent <= 0) return AL_OK;
    return eval_with(c, T->m, T->test, T->eval_batch, &T->sc, NULL, &T->bb, T->ids, T->tc->dist, err);
}

static int seq_report(void *self, const al__fit_progress *f)
{
    seq_task *T = self;
    if (!T->cb) return AL__FIT_CONTINUE;
    al_seq_progress p = {0};
    p.kind = f->kind; p.epoch = f->epoch; p.epochs = f->epochs; p.step = f->step; p.steps_per_epoch = f->steps_per_epoch;
    p.loss = f->loss; p.train_acc = f->train_acc;
    if (f->kind == 1) { p.test_acc = T->sc.acc; p.unseen_acc = T->sc.unseen_acc; p.ambig_acc = T->sc.ambig_acc; }
    else p.test_acc = p.unseen_acc = p.ambig_acc = NAN;
    p.epoch_seconds = f->seconds; p.tok_per_s = f->units / (f->seconds > 1e-9 ? f->seconds : 1e-9); p.elapsed = f->elapsed;
    return T->cb(T->ud, &p) ? AL__FIT_ABORT : AL__FIT_CONTINUE;
}

static const al__fit_task seq_fit = {seq_step, seq_evaluate, NULL, seq_report, NULL};

al_status al_seq_train(al_seq_model *m, const al_seq_data *train, const al_seq_data *test,
                       const al_seq_train_config *tc, al_seq_cb cb, void *ud, al_error *err)
{
    if (tc->epochs < 1 || tc->batch < 1) return al_seterr(err, "training: epochs and batch must be positive");
    if (train->nsent < 1) return al_seterr(err, "training: the training set is empty");
    if (!(tc->lr > 0) || !(tc->weight_decay >= 0)) return al_seterr(err, "training: need lr > 0 and weight decay >= 0");
    for (int i = 0; i < train->ntok; i++)   /* -1: an unlabelled token (the generated tasks' context), not trained on */
        if (train->tag[i] < -1 || train->tag[i] >= m->cfg.tags)
            return al_seterr(err, "training: token %d has tag %d outside [0, %d)", i, train->tag[i], m->cfg.tags);
    if (al__seq_tagged(train->tag, train->ntok) == 0) return al_seterr(err, "training: no training token has a label");
    if (train->max_len > m->cfg.max_len || (test && test->max_len > m->cfg.max_len))
        return al_seterr(err, "training: a sentence has %d tokens, more than --max-len %d",
                         train->max_len > (test ? test->max_len : 0) ? train->max_len : test->max_len, m->cfg.max_len);

    seq_task T;
    memset(&T, 0, sizeof T);
    T.m = m; T.train = train; T.test = test; T.tc = tc; T.cb = cb; T.ud = ud;
    T.eval_batch = tc->eval_batch > 0 ? tc->eval_batch : 256;
    const int scratch = al__max_int(al__batch_rows(tc->batch, train->nsent), al__batch_rows(T.eval_batch, test ? test->nsent : 0));
    int64_t cap = batch_cap(train, scratch);
    if (test && batch_cap(test, scratch) > cap) cap = batch_cap(test, scratch);
    T.ids = malloc((size_t)scratch * sizeof(int));
    T.uni = uniform_lengths(train);
    int bb_ok = batchbuf_alloc(&T.bb, scratch, cap) == 0;
    al_status st = al__seq_stepper_init(&T.stp, m, tc->seed, err);
    if (st == AL_OK && (!T.ids || !bb_ok)) st = al_seterr(err, "training: out of memory");
    if (st == AL_OK) {
        al__fit_config fc = {0};
        fc.params = &m->params; fc.optim = AL_ADAMW; fc.lr = tc->lr; fc.weight_decay = tc->weight_decay;
        fc.seed = tc->seed; fc.epochs = tc->epochs; fc.n = train->nsent; fc.batch = tc->batch;
        fc.max_steps = tc->max_steps; fc.step_reports = 1; fc.resume = tc->resume;
        st = al__fit(&seq_fit, &T, &fc, NULL, err);
    }
    al_gradsum_free(&T.gs);
    al__seq_stepper_free(&T.stp);
    free(T.ids);
    batchbuf_free(&T.bb);
    return st;
}
