/* image_eval.c — evaluation of an image model with its logits and progress (train.h:
 * al_model_evaluate_ex). The same batches, forward and argmax as al_model_evaluate, so its accuracy and
 * predictions are identical. */
#include "attnlab/train.h"
#include "train/fit_impl.h"
#include <stdlib.h>
#include <string.h>

static int argmax_row(const float *r, int n)
{
    int k = 0;
    for (int j = 1; j < n; j++) if (r[j] > r[k]) k = j;
    return k;
}

/* One batch of images s..s+B: logits → correct count, pred, logits copy. */
static al_status eval_batch(al_ctx *c, al_model *m, const al_images *d, const float mean[4], const float std[4],
                            int s, int B, int *idx, int *lab, int64_t *correct, int *pred, float *logits, al_error *err)
{
    for (int b = 0; b < B; b++) idx[b] = s + b;
    al_ctx_reset(c);
    al_tensor *x = al_new(c, 4, (int[]){B, d->c, d->h, d->w});
    if (x && al_images_batch(d, idx, B, mean, std, x->data, lab, err) != AL_OK) return AL_ERR;
    al_tensor *lg = al_model_forward(c, m, x);   /* (B, classes) */
    if (!lg) return al_seterr(err, "evaluation: %s", al_ctx_error(c));
    int K = lg->shape[1];
    for (int b = 0; b < B; b++) {
        int k = argmax_row(lg->data + (int64_t)b * K, K);
        *correct += k == lab[b];
        if (pred) pred[s + b] = k;
    }
    if (logits) memcpy(logits + (int64_t)s * K, lg->data, (size_t)B * K * sizeof(float));
    return AL_OK;
}

al_status al_model_evaluate_ex(al_model *m, const al_images *d, const float mean[4], const float std[4], int batch,
                               double *acc, int *pred, float *logits, al_eval_progress_fn fn, void *ud, al_error *err)
{
    batch = al__batch_rows(batch < 1 ? 64 : batch, d->n);
    if (d->c != m->cfg.channels || d->h != m->cfg.height || d->w != m->cfg.width)
        return al_seterr(err, "evaluation: images are %dx%dx%d but the %s model expects %dx%dx%d", d->c,
                         d->h, d->w, m->cfg.name, m->cfg.channels, m->cfg.height, m->cfg.width);
    al_ctx *c = al_ctx_new(0);
    int *idx = malloc((size_t)batch * sizeof(int)), *lab = malloc((size_t)batch * sizeof(int));
    al_status st = AL_OK;
    int64_t correct = 0;
    if (!c || !idx || !lab) st = al_seterr(err, "evaluation: out of memory");
    else {
        c->grad_enabled = 0; c->training = 0;
        /* One image first: its arena peak, times the batch, sizes the arena as one block, so that the
         * first batch does not grow it block by block (each block touched, the resident size twice the need). */
        int64_t one = 0;
        if (batch > 1 && d->n > 1 && (st = eval_batch(c, m, d, mean, std, 0, 1, idx, lab, &one, NULL, NULL, err)) == AL_OK) {
            size_t want = c->arena.peak * (size_t)(d->n < batch ? d->n : batch);
            al_ctx_reset(c);
            if (al_arena_reserve(&c->arena, want)) st = al_seterr(err, "evaluation: out of memory (%zu bytes for a batch)", want);
        }
        for (int s = 0; s < d->n && st == AL_OK; s += batch) {
            int B = d->n - s < batch ? d->n - s : batch;
            st = eval_batch(c, m, d, mean, std, s, B, idx, lab, &correct, pred, logits, err);
            if (st == AL_OK && fn) fn(ud, s + B, d->n);
        }
    }
    if (st == AL_OK) *acc = d->n > 0 ? (double)correct / d->n : 0.0;
    free(idx); free(lab); al_ctx_free(c);
    return st;
}
