/* speech.c — training, evaluation and checkpoints of the speech task (speech.h): shuffled batches of
 * whole utterances packed frame after frame (no padding), one context per step whose ops run in
 * parallel inside (a batch holds thousands of frames, unlike a batch of sentences), AdamW, cross-entropy
 * per frame (N-to-N) or per utterance over the mean of its frame logits (N-to-1). Nothing prints. */
#include "attnlab/train.h"
#include "attnlab/speech.h"
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

/* The model reads d's frames: speech.h. */
al_status al_speech_config(al_seq_config *cfg, const char *name, const al_speech_data *d, int subsample, al_error *err)
{
    if (al_seq_config_default(cfg, name, 2, 2, d->classes, err) != AL_OK) return AL_ERR;
    cfg->feat_dim = d->dim;
    cfg->subsample = subsample > 1 ? subsample : 1;
    int ml = al_seq_out_len(cfg, d->max_frames);
    cfg->max_len = ml > 0 ? ml : 1;
    return AL_OK;
}

/* ---------------- batches ---------------- */
typedef struct sbatch {
    int *len;          /* (cap_utt) input frames per utterance */
    float *x;          /* (cap_frames, dim) */
    int *lab;          /* (cap_frames) N-to-N labels at the output frames, or (cap_utt) N-to-1 labels */
} sbatch;

static int sbatch_alloc(sbatch *b, const al_speech_data *d, int cap_utt, int64_t cap_frames)
{
    memset(b, 0, sizeof *b);
    if (cap_frames < 1) cap_frames = 1;
    b->len = malloc((size_t)cap_utt * sizeof(int));
    b->x = malloc((size_t)cap_frames * (size_t)d->dim * sizeof(float));
    b->lab = malloc((size_t)(cap_frames > cap_utt ? cap_frames : cap_utt) * sizeof(int));
    return b->len && b->x && b->lab ? 0 : -1;
}
static void sbatch_free(sbatch *b) { free(b->len); free(b->x); free(b->lab); }

/* The most frames any k utterances of d hold. */
static int64_t frames_cap(const al_speech_data *d, int k)
{
    return (int64_t)(k < d->n ? k : d->n) * (d->max_frames > 0 ? d->max_frames : 1);
}

/* Pack utterances ids[0..S) of d; labels at the output frames (input frame sub·t') or per utterance. */
static void gather(const al_speech_data *d, const al_seq_config *g, const int *ids, int S, sbatch *bb, al_seq_batch *b)
{
    int64_t t = 0, o = 0;
    const int sub = g->subsample > 1 ? g->subsample : 1;
    for (int k = 0; k < S; k++) {
        const int i = ids[k];
        const int64_t f0 = d->foff[i], T = d->foff[i + 1] - f0;
        bb->len[k] = (int)T;
        memcpy(bb->x + t * d->dim, d->x + f0 * d->dim, (size_t)(T * d->dim) * sizeof(float));
        if (d->framewise) {
            const int To = al_seq_out_len(g, (int)T);
            for (int u = 0; u < To; u++) bb->lab[o++] = d->flab[f0 + (int64_t)u * sub];
        } else bb->lab[k] = d->label[i];
        t += T;
    }
    memset(b, 0, sizeof *b);
    b->nseg = S; b->ntok = (int)t; b->len = bb->len; b->feat = bb->x;
}

static int argmax_row(const float *r, int n)
{
    int k = 0;
    for (int j = 1; j < n; j++) if (r[j] > r[k]) k = j;
    return k;
}

/* Logits (N', K) of a batch → (S, K) utterance logits: the mean over each utterance's frames. */
static al_tensor *pooled(al_ctx *c, const al_seq_config *g, al_tensor *logits, const al_seq_batch *b)
{
    int *lo = al_arena_alloc(&c->arena, (size_t)b->nseg * sizeof(int));
    if (!lo) return al_fail(c, "speech: out of memory (arena)");
    for (int s = 0; s < b->nseg; s++) lo[s] = al_seq_out_len(g, b->len[s]);
    return al_seg_pool(c, logits, lo, b->nseg, 1);
}

/* ---------------- evaluation ---------------- */
static al_status eval_with(al_ctx *c, al_seq_model *m, const al_speech_data *d, int batch, al_speech_scores *sc, int *pred,
                           sbatch *bb, int *ids, al_error *err)
{
    int g0 = c->grad_enabled, t0 = c->training;
    c->grad_enabled = 0; c->training = 0;
    const al_seq_config *g = &m->cfg;
    const int sub = g->subsample > 1 ? g->subsample : 1;
    int64_t ok = 0, n = 0, strings_bad = 0;
    uint8_t *fl = d->framewise ? malloc((size_t)d->max_frames) : NULL;
    char *s1 = d->framewise ? malloc((size_t)d->max_frames + 1) : NULL;
    al_status st = AL_OK;
    if (d->framewise && (!fl || !s1)) st = al_seterr(err, "evaluation: out of memory");
    for (int s = 0; st == AL_OK && s < d->n; s += batch) {
        int S = d->n - s < batch ? d->n - s : batch;
        for (int k = 0; k < S; k++) ids[k] = s + k;
        al_seq_batch b;
        gather(d, g, ids, S, bb, &b);
        al_ctx_reset(c);
        al_tensor *logits = al_seq_forward(c, m, &b);                  /* (N', K) */
        if (logits && !d->framewise) logits = pooled(c, g, logits, &b); /* (S, K) */
        if (!logits) { st = al_seterr(err, "evaluation: %s", al_ctx_error(c)); break; }
        const int K = logits->shape[1];
        if (!d->framewise) {
            for (int k = 0; k < S; k++) {
                int p = argmax_row(logits->data + (int64_t)k * K, K);
                if (pred) pred[s + k] = p;
                ok += p == d->label[s + k]; n++;
            }
            continue;
        }
        int64_t o = 0;
        for (int k = 0; k < S; k++) {
            const int i = s + k, T = b.len[k], To = al_seq_out_len(g, T);
            const int64_t f0 = d->foff[i];
            for (int t = 0; t < T; t++) {                               /* the nearest output frame */
                int u = (t + sub / 2) / sub;
                if (u > To - 1) u = To - 1;
                fl[t] = (uint8_t)argmax_row(logits->data + (o + u) * K, K);
                if (pred) pred[f0 + t] = fl[t];
                ok += fl[t] == d->flab[f0 + t]; n++;
            }
            al_speech_decode(fl, T, s1);
            strings_bad += strcmp(s1, d->digits[i]) != 0;
            o += To;
        }
    }
    al_ctx_reset(c);
    c->grad_enabled = g0; c->training = t0;
    free(fl); free(s1);
    if (st == AL_OK && sc) {
        sc->acc = n ? (double)ok / (double)n : NAN;
        sc->ser = d->framewise && d->n ? (double)strings_bad / d->n : NAN;
        sc->n = n;
    }
    return st;
}

al_status al_speech_evaluate(al_seq_model *m, const al_speech_data *d, int batch, al_speech_scores *sc, int *pred, al_error *err)
{
    batch = al__batch_rows(batch < 1 ? 64 : batch, d->n);
    if (m->cfg.feat_dim != d->dim || m->cfg.tags != d->classes)
        return al_seterr(err, "evaluation: the model reads %d features into %d classes, the data has %d and %d",
                         m->cfg.feat_dim, m->cfg.tags, d->dim, d->classes);
    al_ctx *c = al_ctx_new(0);
    sbatch bb;
    int *ids = malloc((size_t)batch * sizeof(int));
    int bb_ok = sbatch_alloc(&bb, d, batch, frames_cap(d, batch)) == 0;
    al_status st = !c || !ids || !bb_ok ? al_seterr(err, "evaluation: out of memory") : eval_with(c, m, d, batch, sc, pred, &bb, ids, err);
    sbatch_free(&bb); free(ids); al_ctx_free(c);
    return st;
}

/* ---------------- training ---------------- */
/* Forward, mean cross-entropy, backward into m's gradients (zeroed first). */
static al_status step(al_ctx *c, al_seq_model *m, const al_seq_batch *b, const al_speech_data *d, const int *lab,
                      double *loss, int64_t *hits, int64_t *count, al_error *err)
{
    al_ctx_reset(c);
    al_params_zero_grad(&m->params);
    al_tensor *logits = al_seq_forward(c, m, b);                      /* (N', K) */
    if (logits && !d->framewise) logits = pooled(c, &m->cfg, logits, b);
    al_tensor *l = logits ? al_cross_entropy(c, logits, lab, NULL) : NULL;
    if (!l || al_backward(c, l) != AL_OK) return al_seterr(err, "%s", al_ctx_error(c));
    *loss = l->data[0];
    const int R = logits->shape[0], K = logits->shape[1];
    int64_t h = 0;
    for (int i = 0; i < R; i++) h += argmax_row(logits->data + (int64_t)i * K, K) == lab[i];
    *hits = h; *count = R;
    return AL_OK;
}

/* ---------------- the speech task of the training skeleton (train/fit_impl.h) ---------------- */
typedef struct speech_task {
    al_seq_model *m;
    const al_speech_data *train, *test;
    const al_speech_train_config *tc;
    al_speech_cb cb; void *ud;
    sbatch bb;
    int *ids, eval_batch;
    al_speech_scores sc;           /* the last evaluation */
} speech_task;

static al_status speech_step(void *self, al_ctx *c, const int *items, int S, int ep, int stp, int64_t step_no,
                             al__fit_step *out, al_error *err)
{
    (void)step_no;
    speech_task *T = self;
    al_seq_batch b;
    gather(T->train, &T->m->cfg, items, S, &T->bb, &b);
    al_error serr = {{0}};
    if (step(c, T->m, &b, T->train, T->bb.lab, &out->loss, &out->hits, &out->count, &serr) != AL_OK)
        return al_seterr(err, "training step %d of epoch %d: %s", stp, ep, serr.msg);
    out->weight = (double)out->count; out->units = b.ntok;
    return AL_OK;
}

static al_status speech_evaluate(void *self, al_ctx *c, int ep, int last, al_error *err)
{
    (void)ep; (void)last;
    speech_task *T = self;
    T->sc = (al_speech_scores){NAN, NAN, 0};
    if (!T->test || T->test->n <= 0) return AL_OK;
    return eval_with(c, T->m, T->test, T->eval_batch, &T->sc, NULL, &T->bb, T->ids, err);
}

static int speech_report(void *self, const al__fit_progress *f)
{
    speech_task *T = self;
    if (!T->cb) return AL__FIT_CONTINUE;
    al_speech_progress p = {0};
    p.kind = f->kind; p.epoch = f->epoch; p.epochs = f->epochs; p.step = f->step; p.steps_per_epoch = f->steps_per_epoch;
    p.loss = f->loss; p.train_acc = f->train_acc;
    if (f->kind == 1) p.test = T->sc; else p.test.acc = p.test.ser = NAN;
    p.epoch_seconds = f->seconds; p.frames_per_s = f->units / (f->seconds > 1e-9 ? f->seconds : 1e-9); p.elapsed = f->elapsed;
    return T->cb(T->ud, &p) ? AL__FIT_ABORT : AL__FIT_CONTINUE;
}

static const al__fit_task speech_fit = {speech_step, speech_evaluate, NULL, speech_report, NULL};

al_status al_speech_train(al_seq_model *m, const al_speech_data *train, const al_speech_data *test,
                          const al_speech_train_config *tc, al_speech_cb cb, void *ud, al_error *err)
{
    if (tc->epochs < 1 || tc->batch < 1) return al_seterr(err, "training: epochs and batch must be positive");
    if (train->n < 1) return al_seterr(err, "training: the training set is empty");
    if (!(tc->lr > 0) || !(tc->weight_decay >= 0)) return al_seterr(err, "training: need lr > 0 and weight decay >= 0");
    if (m->cfg.feat_dim != train->dim || m->cfg.tags != train->classes || (test && (test->dim != train->dim || test->classes != train->classes)))
        return al_seterr(err, "training: the model reads %d features into %d classes, the data has %d and %d",
                         m->cfg.feat_dim, m->cfg.tags, train->dim, train->classes);
    const int mx = train->max_frames > (test ? test->max_frames : 0) ? train->max_frames : test->max_frames;
    if (al_seq_out_len(&m->cfg, mx) > m->cfg.max_len)
        return al_seterr(err, "training: an utterance has %d frames, more than the model's max_len %d", al_seq_out_len(&m->cfg, mx), m->cfg.max_len);
    speech_task T;
    memset(&T, 0, sizeof T);
    T.m = m; T.train = train; T.test = test; T.tc = tc; T.cb = cb; T.ud = ud;
    T.eval_batch = tc->eval_batch > 0 ? tc->eval_batch : 64;
    const int scratch = al__max_int(al__batch_rows(tc->batch, train->n), al__batch_rows(T.eval_batch, test ? test->n : 0));
    int64_t cap = frames_cap(train, scratch);
    if (test && frames_cap(test, scratch) > cap) cap = frames_cap(test, scratch);
    T.ids = malloc((size_t)scratch * sizeof(int));
    int bb_ok = sbatch_alloc(&T.bb, train, scratch, cap) == 0;
    al_status st = !T.ids || !bb_ok ? al_seterr(err, "training: out of memory") : AL_OK;
    if (st == AL_OK) {
        al__fit_config fc = {0};
        fc.params = &m->params; fc.optim = AL_ADAMW; fc.lr = tc->lr; fc.weight_decay = tc->weight_decay;
        fc.seed = tc->seed; fc.epochs = tc->epochs; fc.n = train->n; fc.batch = tc->batch;
        fc.max_steps = tc->max_steps; fc.step_reports = 1; fc.resume = tc->resume;
        st = al__fit(&speech_fit, &T, &fc, NULL, err);
    }
    free(T.ids);
    sbatch_free(&T.bb);
    return st;
}
