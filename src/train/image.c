/* train_image.c — the image training and evaluation loop (library: no printing; see models.h).
 *
 * One step: arena reset → normalised batch → forward → cross-entropy → backward → AdamW.
 * The activation arena keeps its peak block after the first step, so steady-state steps do
 * no malloc. Data order comes only from the AL_RNG_SHUFFLE stream of the seed, and every
 * kernel is deterministic, so runs repeat bit for bit — also across a stop and a resume from a
 * training state (trainstate.h), which holds the order, the streams and the optimiser.
 */
#include "attnlab/train.h"
#include "attnlab/optim.h"
#include "attnlab/ops.h"
#include "train/fit_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int argmax_row(const float *r, int n)
{
    int k = 0;
    for (int j = 1; j < n; j++) if (r[j] > r[k]) k = j;
    return k;
}

/* One data-parallel step (dist.h): this rank's micro-shards of the batch ids (B), forward and backward
 * each alone on c, the gradient summed over every rank into m's. *loss = the batch's mean loss and
 * *hits its argmax hits, the same on every rank. lab (B) is scratch. */
static al_status dist_step(al_ctx *c, al_model *m, const al_images *train, const al_train_config *tc, const int *ids,
                           int B, int64_t step_no, int epoch, const float *fill, al_gradsum *gs, int *lab, double *loss,
                           int64_t *hits, al_error *err)
{
    const al_model_config *cfg = &m->cfg;
    const int S = al_dist_shards(B);
    int j0, j1;
    al_dist_my_shards(tc->dist, S, &j0, &j1);
    double lv[AL_DIST_MAX_SHARDS] = {0};
    *hits = 0;
    al_gradsum_begin(gs, m->params.total);
    for (int j = j0; j < j1; j++) {
        const int a = B * j / S, n = B * (j + 1) / S - a;
        al_ctx_reset(c);
        al_rng_seed(&c->dropout_rng, tc->seed + (uint64_t)(step_no * S + j), AL_RNG_DROPOUT);   /* per shard, not per rank */
        al_tensor *x = al_new(c, 4, (int[]){n, cfg->channels, cfg->height, cfg->width});
        if (x && al_images_batch(train, ids + a, n, tc->mean, tc->std, x->data, lab, err) != AL_OK) return AL_ERR;
        if (x && al_augment_batch(&tc->augment, x->data, n, cfg->channels, cfg->height, cfg->width, ids + a, tc->seed, epoch,
                                  fill, err) != AL_OK) return AL_ERR;   /* per image: the same on any shard */
        al_tensor *logits = al_model_forward(c, m, x);                 /* (n, classes) */
        al_tensor *l = al_cross_entropy(c, logits, lab, NULL);         /* mean over the shard */
        float *seed = l ? al_grad(c, l) : NULL;
        if (!seed) return al_seterr(err, "%s", al_ctx_error(c));
        const float w = (float)n / (float)B;                            /* the shard's share of the batch mean */
        lv[j] = (double)l->data[0] * w;
        seed[0] = w;
        al_params_zero_grad(&m->params);
        if (al_backward_run(c) != AL_OK) return al_seterr(err, "backward: %s", al_ctx_error(c));
        const int K = logits->shape[1];
        for (int b = 0; b < n; b++) *hits += argmax_row(logits->data + (int64_t)b * K, K) == lab[b];
        if (al_gradsum_add(gs, m->params.grad, err) != AL_OK) return AL_ERR;
    }
    if (al_gradsum_reduce(gs, tc->dist, m->params.grad, err) != AL_OK || al_dist_sum_slots(tc->dist, lv, S, loss, err) != AL_OK)
        return AL_ERR;
    return al_dist_sum_counts(tc->dist, hits, 1, err);
}

/* Evaluate with a caller-supplied context (reused across epochs). idx (batch) and lab (batch) are scratch. */
static al_status eval_with(al_ctx *c, al_model *m, const al_images *d, const float mean[4], const float std[4],
                           int batch, double *acc, int *pred, int *idx, int *lab, const al_dist *dist, al_error *err)
{
    int g0 = c->grad_enabled, t0 = c->training;
    c->grad_enabled = 0; c->training = 0;
    int64_t correct = 0;
    al_status st = AL_OK;
    for (int s = 0; s < d->n; s += batch) {
        if (dist && (s / batch) % dist->size != dist->rank) continue;   /* data-parallel: batches round-robin */
        int B = d->n - s < batch ? d->n - s : batch;
        for (int b = 0; b < B; b++) idx[b] = s + b;
        al_ctx_reset(c);
        al_tensor *x = al_new(c, 4, (int[]){B, d->c, d->h, d->w});
        if (x && al_images_batch(d, idx, B, mean, std, x->data, lab, err) != AL_OK) { st = AL_ERR; break; }
        al_tensor *logits = al_model_forward(c, m, x);   /* (B, classes) */
        if (!logits) { st = al_seterr(err, "evaluation: %s", al_ctx_error(c)); break; }
        int K = logits->shape[1];
        for (int b = 0; b < B; b++) {
            int k = argmax_row(logits->data + (int64_t)b * K, K);
            correct += k == lab[b];
            if (pred) pred[s + b] = k;
        }
    }
    al_ctx_reset(c);
    c->grad_enabled = g0; c->training = t0;
    if (st == AL_OK && dist) st = al_dist_sum_counts(dist, &correct, 1, err);
    if (st == AL_OK) *acc = d->n > 0 ? (double)correct / d->n : 0.0;
    return st;
}

al_status al_model_evaluate(al_model *m, const al_images *d, const float mean[4], const float std[4],
                            int batch, double *acc, int *pred, al_error *err)
{
    return al_model_evaluate_ex(m, d, mean, std, batch, acc, pred, NULL, NULL, NULL, err);   /* image_eval.c */
}

/* ---------------- the image task of the training skeleton (train/fit_impl.h) ---------------- */
typedef struct image_task {
    al_model *m;
    const al_images *train, *test;
    const al_train_config *tc;
    al_train_cb cb; void *ud;
    float fill[4];                 /* a black pixel after normalisation */
    al_gradsum gs;
    int *idx, *lab;                /* (max(batch, eval_batch)) scratch */
    int eval_batch;
    double test_acc;               /* the last evaluation (NaN when it was not due) */
    const al_images *val;          /* NULL, or the validation set of al_model_train_val */
    int patience;
    double val_acc;                /* its last evaluation (NaN without one) */
    int best_epoch;                /* the kept model's epoch so far */
} image_task;

static al_status image_step(void *self, al_ctx *c, const int *items, int B, int ep, int step, int64_t step_no,
                            al__fit_step *out, al_error *err)
{
    image_task *T = self;
    const al_train_config *tc = T->tc;
    const al_model_config *cfg = &T->m->cfg;
    out->weight = B; out->count = B; out->units = B;
    if (tc->dist) {                                                /* data-parallel (dist.h) */
        al_error serr = {{0}};
        if (dist_step(c, T->m, T->train, tc, items, B, step_no, ep, T->fill, &T->gs, T->lab, &out->loss, &out->hits, &serr) != AL_OK)
            return al_seterr(err, "training step %d of epoch %d: %s", step, ep, serr.msg);
        return AL_OK;
    }
    al_ctx_reset(c);
    al_tensor *x = al_new(c, 4, (int[]){B, cfg->channels, cfg->height, cfg->width});
    if (x && al_images_batch(T->train, items, B, tc->mean, tc->std, x->data, T->lab, err) != AL_OK) return AL_ERR;
    if (x && al_augment_batch(&tc->augment, x->data, B, cfg->channels, cfg->height, cfg->width, items, tc->seed, ep,
                              T->fill, err) != AL_OK) return AL_ERR;
    al_tensor *logits = al_model_forward(c, T->m, x);              /* (B, classes) */
    al_tensor *loss = al_cross_entropy(c, logits, T->lab, NULL);   /* (1) */
    if (!loss) return al_seterr(err, "training step %d of epoch %d: %s", step, ep, al_ctx_error(c));
    out->loss = loss->data[0];
    al_params_zero_grad(&T->m->params);
    if (al_backward(c, loss) != AL_OK) return al_seterr(err, "backward, epoch %d step %d: %s", ep, step, al_ctx_error(c));
    const int K = logits->shape[1];
    for (int b = 0; b < B; b++) out->hits += argmax_row(logits->data + (int64_t)b * K, K) == T->lab[b];
    return AL_OK;
}

/* The validation set every epoch; the test set every eval_every epochs and after the last. */
static al_status image_evaluate(void *self, al_ctx *c, int ep, int last, al_error *err)
{
    image_task *T = self;
    const al_train_config *tc = T->tc;
    T->test_acc = NAN; T->val_acc = NAN;
    if (T->val && eval_with(c, T->m, T->val, tc->mean, tc->std, T->eval_batch, &T->val_acc, NULL, T->idx, T->lab, tc->dist,
                            err) != AL_OK)
        return AL_ERR;
    int due = tc->eval_every <= 1 || ep % tc->eval_every == 0 || last;
    if (!due || !T->test || T->test->n <= 0) return AL_OK;
    return eval_with(c, T->m, T->test, tc->mean, tc->std, T->eval_batch, &T->test_acc, NULL, T->idx, T->lab, tc->dist, err);
}

static int image_report(void *self, const al__fit_progress *f)
{
    image_task *T = self;
    if (!T->cb) return AL__FIT_CONTINUE;
    al_train_progress p = {0};
    p.kind = f->kind; p.epoch = f->epoch; p.epochs = f->epochs; p.step = f->step; p.steps_per_epoch = f->steps_per_epoch;
    p.loss = f->loss; p.train_acc = f->train_acc; p.test_acc = f->kind == 1 ? T->test_acc : NAN;
    p.epoch_seconds = f->seconds; p.img_per_s = f->units / (f->seconds > 1e-9 ? f->seconds : 1e-9); p.elapsed = f->elapsed;
    p.val_acc = f->kind == 1 ? T->val_acc : NAN; p.best_epoch = T->best_epoch;
    return T->cb(T->ud, &p) ? AL__FIT_ABORT : AL__FIT_CONTINUE;
}

/* Keep the model of the best validation accuracy (strictly better: the earliest on ties); stop after
 * `patience` epochs without one. */
static int image_track(void *self, al__fit_track *t, int ep, int *keep)
{
    image_task *T = self;
    *keep = T->val_acc > t->acc_max;
    T->best_epoch = *keep ? ep : t->best_epoch;
    if (*keep) { t->acc_max = T->val_acc; t->bad = 0; return 0; }
    return T->patience > 0 && ++t->bad >= T->patience;
}

/* The kept model (back in the parameters): its validation and test accuracy, reported as kind 2. */
static al_status image_finish(void *self, al_ctx *c, const al__fit_track *t, int epochs_run, al_error *err)
{
    (void)epochs_run;
    image_task *T = self;
    const al_train_config *tc = T->tc;
    double val = NAN, test = NAN;
    if (eval_with(c, T->m, T->val, tc->mean, tc->std, T->eval_batch, &val, NULL, T->idx, T->lab, tc->dist, err) != AL_OK ||
        (T->test && T->test->n > 0 &&
         eval_with(c, T->m, T->test, tc->mean, tc->std, T->eval_batch, &test, NULL, T->idx, T->lab, tc->dist, err) != AL_OK))
        return AL_ERR;
    if (!T->cb) return AL_OK;
    al_train_progress p = {0};
    p.kind = 2; p.epoch = t->best_epoch; p.epochs = tc->epochs; p.best_epoch = t->best_epoch;
    p.loss = p.train_acc = p.epoch_seconds = p.img_per_s = p.elapsed = NAN;
    p.val_acc = val; p.test_acc = test;
    T->cb(T->ud, &p);
    return AL_OK;
}

static const al__fit_task image_fit = {image_step, image_evaluate, NULL, image_report, NULL};
static const al__fit_task image_fit_val = {image_step, image_evaluate, image_track, image_report, image_finish};

al_status al_model_train(al_model *m, const al_images *train, const al_images *test,
                         const al_train_config *tc, al_train_cb cb, void *ud, al_error *err)
{
    return al_model_train_val(m, train, NULL, test, tc, 0, cb, ud, err);
}

al_status al_model_train_val(al_model *m, const al_images *train, const al_images *val, const al_images *test,
                             const al_train_config *tc, int patience, al_train_cb cb, void *ud, al_error *err)
{
    const al_model_config *cfg = &m->cfg;
    if (tc->epochs < 1 || tc->batch < 1) return al_seterr(err, "training: epochs and batch must be positive");
    if (train->n < 1) return al_seterr(err, "training: the training set is empty");
    if (!(tc->lr > 0) || !(tc->weight_decay >= 0)) return al_seterr(err, "training: need lr > 0 and weight decay >= 0");
    if (val && val->n < 1) return al_seterr(err, "training: the validation set is empty");
    if (patience < 0) return al_seterr(err, "training: patience must be >= 0");
    const al_images *sets[3] = {train, test, val};
    static const char *const names[3] = {"training", "test", "validation"};
    for (int i = 0; i < 3; i++)
        if (sets[i] && (sets[i]->c != cfg->channels || sets[i]->h != cfg->height || sets[i]->w != cfg->width))
            return al_seterr(err, "training: %s images are %dx%dx%d but the %s model expects %dx%dx%d",
                             names[i], sets[i]->c, sets[i]->h, sets[i]->w,
                             cfg->name, cfg->channels, cfg->height, cfg->width);
    for (int k = 0; k < 3; k += 2)
        for (int i = 0; sets[k] && i < sets[k]->n; i++)
            if (sets[k]->labels[i] < 0 || sets[k]->labels[i] >= cfg->classes)
                return al_seterr(err, "training: label %d of %simage %d is outside [0, %d)", sets[k]->labels[i],
                                 k ? "validation " : "", i, cfg->classes);

    image_task T;
    memset(&T, 0, sizeof T);
    T.m = m; T.train = train; T.test = test; T.tc = tc; T.cb = cb; T.ud = ud;
    T.val = val; T.patience = patience; T.val_acc = NAN;
    T.eval_batch = tc->eval_batch > 0 ? tc->eval_batch : 64;
    const int scratch = al__max_int(al__batch_rows(tc->batch, train->n), al__batch_rows(T.eval_batch, test ? test->n : 0));
    T.idx = malloc((size_t)scratch * sizeof(int)); T.lab = malloc((size_t)scratch * sizeof(int));
    for (int ch = 0; ch < 4; ch++) T.fill[ch] = ch < cfg->channels ? -tc->mean[ch] / (tc->std[ch] >= 1e-8f ? tc->std[ch] : 1.f) : 0.f;
    al_status st = !T.idx || !T.lab ? al_seterr(err, "training: out of memory") : AL_OK;
    if (st == AL_OK) {
        al__fit_config fc = {0};
        fc.params = &m->params; fc.optim = AL_ADAMW; fc.lr = tc->lr; fc.weight_decay = tc->weight_decay;
        fc.seed = tc->seed; fc.epochs = tc->epochs; fc.n = train->n; fc.batch = tc->batch;   /* drop_last=False */
        fc.max_steps = tc->max_steps; fc.step_reports = 1; fc.resume = tc->resume;
        fc.what = "validated image"; fc.track0 = (al__fit_track){-1, INFINITY, 0, 0, 0};
        st = al__fit(val ? &image_fit_val : &image_fit, &T, &fc, NULL, err);
    }
    al_gradsum_free(&T.gs);
    free(T.idx); free(T.lab);
    return st;
}
