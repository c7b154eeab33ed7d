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
#include "train/state_impl.h"
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

al_status al_seq_eval_scores(al_seq_model *m, const al_seq_data *d, int batch, al_seq_scores *sc, int *pred, al_error *err)
{
    if (batch < 1) batch = 256;
    al_ctx *c = al_ctx_new(0);
    batchbuf bb;
    int *ids = malloc((size_t)batch * sizeof(int));
    al_status st;
    if (!c || !ids || batchbuf_alloc(&bb, batch, batch_cap(d, batch))) st = al_seterr(err, "evaluation: out of memory");
    else st = eval_with(c, m, d, batch, sc, pred, &bb, ids, NULL, err);
    batchbuf_free(&bb); free(ids); al_ctx_free(c);
    return st;
}

al_status al_seq_eval(al_seq_model *m, const al_seq_data *d, int batch, double *acc, double *unseen_acc, int *pred, al_error *err)
{
    al_seq_scores sc;
    if (al_seq_eval_scores(m, d, batch, &sc, pred, err) != AL_OK) return AL_ERR;
    if (acc) *acc = sc.acc;
    if (unseen_acc) *unseen_acc = sc.unseen_acc;
    return AL_OK;
}

/* ---------------- training ---------------- */
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

    const int batch = tc->batch, eval_batch = tc->eval_batch > 0 ? tc->eval_batch : 256;
    const int scratch = batch > eval_batch ? batch : eval_batch;
    int64_t cap = batch_cap(train, scratch);
    if (test && batch_cap(test, scratch) > cap) cap = batch_cap(test, scratch);
    int *perm = malloc((size_t)train->nsent * sizeof(int)), *ids = malloc((size_t)scratch * sizeof(int));
    batchbuf bb;
    int bb_ok = batchbuf_alloc(&bb, scratch, cap) == 0;
    al_ctx *c = al_ctx_new(tc->seed);
    al_optim opt;
    memset(&opt, 0, sizeof opt);
    al_gradsum gs;                                  /* across processes (dist.h) */
    memset(&gs, 0, sizeof gs);
    al__seq_stepper stp;                            /* the data-parallel step (train/seq_impl.h) */
    al_status st = al__seq_stepper_init(&stp, m, tc->seed, err);
    if (st != AL_OK) goto done;
    if (!perm || !ids || !bb_ok || !c) { st = al_seterr(err, "training: out of memory"); goto done; }
    if (al_optim_init(&opt, AL_ADAMW, m->params.total, tc->lr, err) != AL_OK) { st = AL_ERR; goto done; }
    opt.weight_decay = tc->weight_decay;

    al_rng shuf;
    const int steps_per_epoch = (train->nsent + batch - 1) / batch, uni = uniform_lengths(train);
    int64_t total_steps;
    al_diverge div;
    al__loop L = {&opt, &shuf, c, perm, train->nsent, &total_steps, &div};
    int first;
    st = al__loop_begin(tc->resume, &L, tc->seed, &first, err);   /* the identity order and a fresh shuffle stream, or the state's */
    double t_start = al_time();
    for (int ep = first; ep <= tc->epochs && st == AL_OK; ep++) {
        al_rng_shuffle(&shuf, perm, train->nsent);
        double loss_sum = 0, t0 = al_time();
        int64_t correct = 0, seen = 0, toks = 0;   /* labelled tokens, all tokens */
        int step;
        for (step = 1; step <= steps_per_epoch; step++) {
            int s = (step - 1) * batch, S = train->nsent - s < batch ? train->nsent - s : batch;
            al_seq_batch b;
            gather(train, uni, perm + s, S, &bb, &b);
            double lv; int64_t hits;                /* forward, loss (mean over the batch's tokens), backward */
            al_error serr = {{0}};
            al_status ss = tc->dist ? al__seq_step_dist(&stp, m, &b, bb.tag, tc->dist, tc->seed, total_steps, &gs, &lv, &hits, &serr)
                                    : al__seq_step(&stp, m, &b, bb.tag, &lv, &hits, &serr);
            if (ss != AL_OK) {
                st = al_seterr(err, "training step %d of epoch %d: %s", step, ep, serr.msg);
                break;
            }
            if (al_diverge_loss(&div, lv, ep, step, err) != AL_OK) { st = AL_ERR; break; }   /* before the update */
            al_optim_step(&opt, &m->params);
            if (al_diverge_step(&div, &opt, &m->params, lv, ep, step, err) != AL_OK) { st = AL_ERR; break; }
            const int ntag = al__seq_tagged(bb.tag, b.ntok);
            correct += hits;
            loss_sum += lv * ntag; seen += ntag; toks += b.ntok; total_steps++;
            if (cb) {
                double now = al_time();
                al_seq_progress p = {0};
                p.kind = 0; p.epoch = ep; p.epochs = tc->epochs; p.step = step; p.steps_per_epoch = steps_per_epoch;
                p.loss = lv; p.train_acc = (double)correct / seen; p.test_acc = p.unseen_acc = p.ambig_acc = NAN;
                p.epoch_seconds = now - t0; p.tok_per_s = toks / (now - t0 > 1e-9 ? now - t0 : 1e-9); p.elapsed = now - t_start;
                if (cb(ud, &p)) { st = al_seterr(err, "stopped"); break; }
            }
            if (tc->max_steps > 0 && total_steps >= tc->max_steps) break;
        }
        if (st != AL_OK) break;
        double secs = al_time() - t0;
        al_seq_scores sc = {NAN, NAN, NAN, 0, 0, 0};
        if (test && test->nsent > 0 && eval_with(c, m, test, eval_batch, &sc, NULL, &bb, ids, tc->dist, err) != AL_OK) { st = AL_ERR; break; }
        if (cb) {
            al_seq_progress p = {0};
            p.kind = 1; p.epoch = ep; p.epochs = tc->epochs; p.step = step > steps_per_epoch ? steps_per_epoch : step;
            p.steps_per_epoch = steps_per_epoch;
            p.loss = seen ? loss_sum / seen : NAN; p.train_acc = seen ? (double)correct / seen : NAN;
            p.test_acc = sc.acc; p.unseen_acc = sc.unseen_acc; p.ambig_acc = sc.ambig_acc;
            p.epoch_seconds = secs; p.tok_per_s = toks / (secs > 1e-9 ? secs : 1e-9); p.elapsed = al_time() - t_start;
            if (cb(ud, &p)) { st = al_seterr(err, "stopped"); break; }
        }
        int last = ep == tc->epochs || (tc->max_steps > 0 && total_steps >= tc->max_steps);
        if (al__loop_offer(tc->resume, &L, ep, last, err) != AL_OK) { st = AL_ERR; break; }
        if (tc->max_steps > 0 && total_steps >= tc->max_steps) break;
    }
done:
    al_gradsum_free(&gs);
    al__seq_stepper_free(&stp);
    al_optim_free(&opt);
    al_ctx_free(c);
    free(perm); free(ids);
    if (bb_ok) batchbuf_free(&bb); else { batchbuf_free(&bb); }
    return st;
}
