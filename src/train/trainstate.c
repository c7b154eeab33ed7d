/* trainstate.c — training states (trainstate.h): the divergence detector, the state file (save and
 * load through the safetensors array reader and writer) and the loops' side of resuming
 * (state_impl.h). */
#include "attnlab/train.h"
#include "attnlab/trainstate.h"
#include "attnlab/optim.h"
#include "attnlab/io.h"
#include "io/io_impl.h"
#include "train/state_impl.h"
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STATE_FORMAT "attnlab-train-state"
#define MAXKV 64

/* ---------------- divergence ---------------- */
void al_diverge_init(al_diverge *d) { d->min = INFINITY; }

al_status al_diverge_loss(al_diverge *d, double loss, int epoch, int step, al_error *err)
{
    if (!isfinite(loss))
        return al_seterr(err, "training diverged at epoch %d step %d: loss is %s (lowest so far %.4g); try a lower --lr",
                         epoch, step, isnan(loss) ? "NaN" : "infinite", d->min);
    double ref = d->min > AL_DIVERGE_FLOOR ? d->min : AL_DIVERGE_FLOOR;
    if (isfinite(d->min) && loss > AL_DIVERGE_RATIO * ref)
        return al_seterr(err, "training diverged at epoch %d step %d: loss %.4g is over %gx the lowest so far (%.4g); "
                         "try a lower --lr", epoch, step, loss, AL_DIVERGE_RATIO, d->min);
    if (loss < d->min) d->min = loss;
    return AL_OK;
}

al_status al_diverge_weights(const al_diverge *d, const al_params *p, double loss, int epoch, int step, al_error *err)
{
    int64_t bad = -1;
    for (int64_t i = 0; i < p->total && bad < 0; i++)
        if (!isfinite(p->data[i])) bad = i;
    if (bad < 0) return AL_OK;
    int ti = 0;
    while (ti + 1 < p->n && p->t[ti + 1]->data - p->data <= bad) ti++;
    return al_seterr(err, "training diverged at epoch %d step %d: %s[%lld] is %g after the optimiser step (loss %.4g, "
                     "lowest so far %.4g); try a lower --lr", epoch, step, p->n ? p->t[ti]->name : "a weight",
                     (long long)(bad - (p->n ? p->t[ti]->data - p->data : 0)), (double)p->data[bad], loss, d->min);
}

al_status al_diverge_step(const al_diverge *d, const al_optim *o, const al_params *p, double loss, int epoch, int step,
                          al_error *err)
{
    return o->nonfinite ? al_diverge_weights(d, p, loss, epoch, step, err) : AL_OK;
}

/* ---------------- the file ---------------- */
static const char *optim_name(al_optim_kind k) { return k == AL_SGD ? "sgd" : k == AL_ADAM ? "adam" : "adamw"; }

static void rng_text(char out[68], const al_rng *r)
{
    snprintf(out, 68, "%016llx%016llx%016llx%016llx", (unsigned long long)r->s[0], (unsigned long long)r->s[1],
             (unsigned long long)r->s[2], (unsigned long long)r->s[3]);
}

/* The state's scalars as metadata pairs into b. */
static void state_kv(al_kvb *b, const al_train_state *s)
{
    char r1[68], r2[68];
    rng_text(r1, &s->shuffle); rng_text(r2, &s->dropout);
    const al_optim *o = &s->opt;
    al__kv(b, "format", "%s", STATE_FORMAT);
    al__kv(b, "epoch", "%d", s->epoch); al__kv(b, "finished", "%d", s->finished);
    al__kv(b, "steps", "%lld", (long long)s->steps);
    al__kv(b, "rng.shuffle", "%s", r1); al__kv(b, "rng.dropout", "%s", r2);
    al__kv(b, "optim", "%s", optim_name(o->kind)); al__kv(b, "optim.step", "%lld", (long long)o->step);
    al__kv(b, "optim.lr", "%a", (double)o->lr); al__kv(b, "optim.momentum", "%a", (double)o->momentum);
    al__kv(b, "optim.beta1", "%a", (double)o->beta1); al__kv(b, "optim.beta2", "%a", (double)o->beta2);
    al__kv(b, "optim.eps", "%a", (double)o->eps); al__kv(b, "optim.weight_decay", "%a", (double)o->weight_decay);
    al__kv(b, "optim.nesterov", "%d", o->nesterov);
    al__kv(b, "diverge.min", "%a", s->div.min);
    al__kv(b, "order", "%d", s->order ? s->norder : 0);
    al__kv(b, "graph", "%d", s->best != NULL);
    if (s->best) {
        al__kv(b, "graph.best_epoch", "%d", s->best_epoch); al__kv(b, "graph.bad", "%d", s->bad);
        al__kv(b, "graph.acc_max", "%a", s->acc_max); al__kv(b, "graph.loss_min", "%a", s->loss_min);
        al__kv(b, "graph.step_seconds", "%a", s->step_seconds);
    }
}

/* The arrays of the file besides the parameters, appended to a at *n. */
static void state_arrays(const al_train_state *s, al_st_array *a, int *n)
{
    int64_t N = s->opt.n;
    a[(*n)++] = (al_st_array){"optim.m", AL_ST_F32, 1, {N}, s->opt.m};
    if (s->opt.v) a[(*n)++] = (al_st_array){"optim.v", AL_ST_F32, 1, {N}, s->opt.v};
    if (s->order && s->norder > 0) a[(*n)++] = (al_st_array){"data.order", AL_ST_I32, 1, {s->norder}, s->order};
    if (s->best) a[(*n)++] = (al_st_array){"graph.best", AL_ST_F32, 1, {N}, s->best};
}

al_status al_train_state_save(const char *path, const al_params *p, const al_train_state *s,
                              const char *const *kv, int nkv, al_error *err)
{
    if (s->opt.n != p->total || !s->opt.m)
        return al_seterr(err, "%s: the optimiser holds %lld values for %lld parameters", al_path_short(path),
                         (long long)s->opt.n, (long long)p->total);
    const char *pairs[2 * MAXKV];
    char buf[4096];
    al_kvb b = {pairs, MAXKV, 0, buf, sizeof buf, 0};
    state_kv(&b, s);
    if (b.n < 0 || b.n + nkv > MAXKV) return al_seterr(err, "%s: too much training-state metadata", al_path_short(path));
    for (int i = 0; i < nkv; i++) { pairs[2 * (b.n + i)] = kv[2 * i]; pairs[2 * (b.n + i) + 1] = kv[2 * i + 1]; }
    al_st_array *a = malloc((size_t)(p->n + 4) * sizeof *a);
    if (!a) return al_seterr(err, "%s: out of memory", al_path_short(path));
    int n = al_params_arrays(p, a);
    state_arrays(s, a, &n);
    al_status st = al_safetensors_write(path, a, n, pairs, b.n + nkv, err);
    free(a);
    return st;
}

void al_train_state_free(al_train_state *s)
{
    al_optim_free(&s->opt);
    free(s->order); free(s->best);
    memset(s, 0, sizeof *s);
}

/* ---- metadata values ---- */
static int meta_i64(const char *meta, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    char *v = al_meta_get(meta, key);
    if (!v) return -1;
    char *end; errno = 0;
    long long x = strtoll(v, &end, 10);
    int bad = end == v || *end || errno || x < lo || x > hi;
    free(v);
    if (!bad) *out = x;
    return bad ? -1 : 0;
}
static int meta_int(const char *meta, const char *key, int lo, int hi, int *out)
{
    int64_t x;
    if (meta_i64(meta, key, lo, hi, &x)) return -1;
    *out = (int)x;
    return 0;
}
static int meta_f64(const char *meta, const char *key, double *out)
{
    char *v = al_meta_get(meta, key);
    if (!v) return -1;
    char *end;
    double x = strtod(v, &end);
    int bad = end == v || *end;
    free(v);
    if (!bad) *out = x;
    return bad ? -1 : 0;
}
static int meta_f32(const char *meta, const char *key, float *out)
{
    double x;
    if (meta_f64(meta, key, &x)) return -1;
    *out = (float)x;
    return 0;
}
static int meta_rng(const char *meta, const char *key, al_rng *r)
{
    char *v = al_meta_get(meta, key);
    int bad = !v || strlen(v) != 64;
    for (int k = 0; k < 4 && !bad; k++) {
        char word[17], *end;
        memcpy(word, v + 16 * k, 16); word[16] = 0;
        r->s[k] = (uint64_t)strtoull(word, &end, 16);
        bad = *end != 0;
    }
    free(v);
    return bad ? -1 : 0;
}

/* The scalars of a state from its metadata; 0 or -1 (a key missing or malformed). */
static int state_from_meta(const char *meta, al_train_state *s)
{
    char *kind = al_meta_get(meta, "optim");
    int bad = !kind;
    if (kind) {
        s->opt.kind = !strcmp(kind, "sgd") ? AL_SGD : !strcmp(kind, "adam") ? AL_ADAM : AL_ADAMW;
        bad = strcmp(kind, optim_name(s->opt.kind)) != 0;
        free(kind);
    }
    int graph = 0;
    bad = bad || meta_int(meta, "epoch", 0, 1 << 30, &s->epoch) || meta_int(meta, "finished", 0, 1, &s->finished) ||
          meta_i64(meta, "steps", 0, INT64_MAX, &s->steps) || meta_rng(meta, "rng.shuffle", &s->shuffle) ||
          meta_rng(meta, "rng.dropout", &s->dropout) || meta_i64(meta, "optim.step", 0, INT64_MAX, &s->opt.step) ||
          meta_f32(meta, "optim.lr", &s->opt.lr) || meta_f32(meta, "optim.momentum", &s->opt.momentum) ||
          meta_f32(meta, "optim.beta1", &s->opt.beta1) || meta_f32(meta, "optim.beta2", &s->opt.beta2) ||
          meta_f32(meta, "optim.eps", &s->opt.eps) || meta_f32(meta, "optim.weight_decay", &s->opt.weight_decay) ||
          meta_int(meta, "optim.nesterov", 0, 1, &s->opt.nesterov) || meta_f64(meta, "diverge.min", &s->div.min) ||
          meta_int(meta, "order", 0, 1 << 30, &s->norder) || meta_int(meta, "graph", 0, 1, &graph);
    if (!bad && graph)
        bad = meta_int(meta, "graph.best_epoch", 0, 1 << 30, &s->best_epoch) || meta_int(meta, "graph.bad", 0, 1 << 30, &s->bad) ||
              meta_f64(meta, "graph.acc_max", &s->acc_max) || meta_f64(meta, "graph.loss_min", &s->loss_min) ||
              meta_f64(meta, "graph.step_seconds", &s->step_seconds);
    return bad ? -1 : graph;
}

/* ---- what a state can hold on its own (the run's bounds are restore_check's, below) ---- */
static int rng_zero(const al_rng *r) { return !(r->s[0] | r->s[1] | r->s[2] | r->s[3]); }

/* The scalars: AL_OK, or one message naming the file (f) and the field. */
static al_status state_scalars_check(const char *f, const al_train_state *s, int graph, al_error *err)
{
    const al_optim *o = &s->opt;
    const int64_t most = (int64_t)s->epoch * INT_MAX;   /* an epoch takes at most INT_MAX steps (n is an int) */
    if (s->finished && s->epoch == 0) return al_seterr(err, "%s: finished = 1 at epoch 0 (the state before the first step)", f);
    if (s->steps > most || o->step > most)
        return al_seterr(err, "%s: %s = %lld is more than %d epoch%s can take", f, s->steps > most ? "steps" : "optim.step",
                         (long long)(s->steps > most ? s->steps : o->step), s->epoch, s->epoch == 1 ? "" : "s");
    const int shuffle_zero = s->norder > 0 && rng_zero(&s->shuffle);   /* full-batch loops (graphs) never shuffle */
    if (shuffle_zero || rng_zero(&s->dropout))
        return al_seterr(err, "%s: %s is all zeros (no state of the generator)", f, shuffle_zero ? "rng.shuffle" : "rng.dropout");
    const struct { const char *key; double v, lo, hi; } hp[] = {   /* each in [lo, hi) */
        {"optim.lr", o->lr, 0, INFINITY}, {"optim.momentum", o->momentum, 0, 1}, {"optim.beta1", o->beta1, 0, 1},
        {"optim.beta2", o->beta2, 0, 1}, {"optim.eps", o->eps, 0, INFINITY}, {"optim.weight_decay", o->weight_decay, 0, INFINITY}};
    for (size_t i = 0; i < sizeof hp / sizeof *hp; i++)
        if (!(hp[i].v >= hp[i].lo && hp[i].v < hp[i].hi))
            return al_seterr(err, "%s: %s = %g is outside [%g, %g)", f, hp[i].key, hp[i].v, hp[i].lo, hp[i].hi);
    if (isnan(s->div.min) || s->div.min == -INFINITY) return al_seterr(err, "%s: diverge.min = %g is not a loss", f, s->div.min);
    if (graph && (s->best_epoch > s->epoch || s->bad > s->epoch))
        return al_seterr(err, "%s: %s = %d is beyond epoch %d", f, s->best_epoch > s->epoch ? "graph.best_epoch" : "graph.bad",
                         s->best_epoch > s->epoch ? s->best_epoch : s->bad, s->epoch);
    if (graph && !(s->step_seconds >= 0 && isfinite(s->step_seconds)))
        return al_seterr(err, "%s: graph.step_seconds = %g is not a time", f, s->step_seconds);
    return AL_OK;
}

/* The arrays: data.order a permutation of 0..norder-1, the moments and kept weights finite, optim.v >= 0. */
static al_status state_arrays_check(const char *f, const al_train_state *s, al_error *err)
{
    uint8_t *seen = calloc((size_t)(s->norder > 0 ? s->norder : 1), 1);
    if (!seen) return al_seterr(err, "%s: out of memory", f);
    int dup = -1;
    for (int i = 0; i < s->norder && dup < 0; i++) {
        const int v = s->order[i];
        if (v < 0 || v >= s->norder) { free(seen); return al_seterr(err, "%s: data.order[%d] = %d is outside [0, %d)", f, i, v, s->norder); }
        if (seen[v]) dup = i; else seen[v] = 1;
    }
    free(seen);
    if (dup >= 0) {
        int first = 0;
        while (s->order[first] != s->order[dup]) first++;
        return al_seterr(err, "%s: data.order is not a permutation: data.order[%d] = %d repeats data.order[%d]", f, dup,
                         s->order[dup], first);
    }
    const struct { const char *key; const float *x; } arr[] = {{"optim.m", s->opt.m}, {"optim.v", s->opt.v}, {"graph.best", s->best}};
    for (int k = 0; k < 3; k++)
        for (int64_t i = 0; arr[k].x && i < s->opt.n; i++)
            if (!isfinite(arr[k].x[i]) || (k == 1 && arr[k].x[i] < 0))
                return al_seterr(err, "%s: %s[%lld] = %g is %s", f, arr[k].key, (long long)i, (double)arr[k].x[i],
                                 isfinite(arr[k].x[i]) ? "negative (a second moment)" : "not finite");
    return AL_OK;
}

al_status al_train_state_load(const char *path, al_params *p, al_train_state *s, char **meta_out, al_error *err)
{
    memset(s, 0, sizeof *s);
    if (meta_out) *meta_out = NULL;
    char *meta = NULL, *fmt = NULL;
    if (al_safetensors_read_meta(path, &meta, err) != AL_OK) return AL_ERR;
    al_status st = AL_ERR;
    al_st_array *a = NULL;
    fmt = al_meta_get(meta, "format");
    if (!fmt || strcmp(fmt, STATE_FORMAT)) { al_seterr(err, "%s: not a training state (metadata format is not " STATE_FORMAT ")", al_path_short(path)); goto out; }
    int graph = state_from_meta(meta, s);
    if (graph < 0) { al_seterr(err, "%s: missing or malformed training-state metadata", al_path_short(path)); goto out; }
    if (state_scalars_check(al_path_short(path), s, graph, err) != AL_OK) goto out;
    int64_t N = p->total > 0 ? p->total : 1;
    if (al_mem_check(al_size_mul((uint64_t)(2 + graph) * 4, (uint64_t)N) + (uint64_t)s->norder * 4, err, "%s: training state", path))
        goto out;
    s->opt.n = p->total;
    s->opt.m = calloc((size_t)N, sizeof(float));
    s->opt.v = s->opt.kind != AL_SGD ? calloc((size_t)N, sizeof(float)) : NULL;
    s->order = s->norder > 0 ? malloc((size_t)s->norder * sizeof(int)) : NULL;
    s->best = graph ? malloc((size_t)N * sizeof(float)) : NULL;
    a = malloc((size_t)(p->n + 4) * sizeof *a);
    if (!s->opt.m || (s->opt.kind != AL_SGD && !s->opt.v) || (s->norder > 0 && !s->order) || (graph && !s->best) || !a) {
        al_seterr(err, "%s: out of memory", al_path_short(path));
        goto out;
    }
    int n = al_params_arrays(p, a);
    state_arrays(s, a, &n);
    if (al_safetensors_read(path, a, n, NULL, err) != AL_OK) goto out;
    if (state_arrays_check(al_path_short(path), s, err) != AL_OK) goto out;
    st = AL_OK;
out:
    free(fmt); free(a);
    if (st != AL_OK) al_train_state_free(s);
    if (st == AL_OK && meta_out) *meta_out = meta; else free(meta);
    return st;
}

/* ---------------- the loops' side ---------------- */
/* rs->from against the run of L (trainstate.h); AL_OK or one message naming the file and the field. */
static al_status restore_check(const al__loop *L, const al_resume *rs, al_error *err)
{
    const al_train_state *from = rs->from;
    const al_optim *o = L->opt;
    const char *f = rs->from_path ? al_path_short(rs->from_path) : "resume";
    if (from->opt.n != o->n || from->opt.kind != o->kind || !from->opt.m || (o->v && !from->opt.v))
        return al_seterr(err, "%s: the state's optimiser (%s, %lld values) is not this run's (%s, %lld)", f,
                         optim_name(from->opt.kind), (long long)from->opt.n, optim_name(o->kind), (long long)o->n);
    if (from->norder != L->norder)
        return al_seterr(err, "%s: data.order holds %d examples, this run has %d", f, from->norder, L->norder);
    if (from->epoch > L->epochs)
        return al_seterr(err, "%s: epoch %d is beyond the %d epoch%s of this run", f, from->epoch, L->epochs, L->epochs == 1 ? "" : "s");
    /* epoch <= epochs < 2^31 and steps_per_epoch < 2^31: the product fits */
    const int64_t most = (int64_t)from->epoch * (L->steps_per_epoch > 0 ? L->steps_per_epoch : 0);
    const char *key = from->steps < 0 || from->steps > most ? "steps" : from->opt.step < 0 || from->opt.step > most ? "optim.step" : NULL;
    if (key)
        return al_seterr(err, "%s: %s = %lld, but %d epoch%s of this run take%s at most %lld optimiser steps (%lld an epoch)", f,
                         key, (long long)(key[0] == 's' ? from->steps : from->opt.step), from->epoch, from->epoch == 1 ? "" : "s",
                         from->epoch == 1 ? "s" : "", (long long)most, (long long)L->steps_per_epoch);
    return AL_OK;
}

al_status al__loop_restore(const al__loop *L, const al_resume *rs, int *first_epoch, al_error *err)
{
    if (restore_check(L, rs, err) != AL_OK) return AL_ERR;
    const al_train_state *from = rs->from;
    al_optim *o = L->opt;
    size_t bytes = (size_t)(o->n > 0 ? o->n : 0) * sizeof(float);
    memcpy(o->m, from->opt.m, bytes);
    if (o->v) memcpy(o->v, from->opt.v, bytes);
    o->step = from->opt.step;
    if (L->norder > 0) memcpy(L->order, from->order, (size_t)L->norder * sizeof(int));
    if (L->shuffle) *L->shuffle = from->shuffle;
    L->c->dropout_rng = from->dropout;
    *L->steps = from->steps;
    *L->div = from->div;
    *first_epoch = from->epoch + 1;
    return AL_OK;
}

int al__resume_due(const al_resume *rs, int epoch, int last)
{
    return rs && rs->every > 0 && rs->save && (last || epoch % rs->every == 0);
}

void al__loop_view(const al__loop *L, int epoch, int last, al_train_state *s)
{
    memset(s, 0, sizeof *s);
    s->epoch = epoch; s->finished = last; s->steps = *L->steps;
    if (L->shuffle) s->shuffle = *L->shuffle;
    s->dropout = L->c->dropout_rng;
    s->order = L->order; s->norder = L->norder;
    s->opt = *L->opt;                   /* borrowed moments */
    s->div = *L->div;
}

al_status al__loop_offer(const al_resume *rs, const al__loop *L, int epoch, int last, al_error *err)
{
    if (!al__resume_due(rs, epoch, last)) return AL_OK;
    al_train_state s;
    al__loop_view(L, epoch, last, &s);
    return rs->save(rs->ud, &s) ? al_seterr(err, "stopped: the training state after epoch %d was not saved", epoch) : AL_OK;
}

al_status al__loop_begin(const al_resume *rs, const al__loop *L, uint64_t seed, int *first_epoch, al_error *err)
{
    *first_epoch = 1;
    *L->steps = 0;
    al_diverge_init(L->div);
    if (L->shuffle) al_rng_seed(L->shuffle, seed, AL_RNG_SHUFFLE);
    for (int i = 0; i < L->norder; i++) L->order[i] = i;
    if (rs && rs->from) {
        if (al__loop_restore(L, rs, first_epoch, err) != AL_OK) return AL_ERR;
        return rs->resumed && rs->resumed(rs->ud, rs->from) ? al_seterr(err, "stopped before resuming after epoch %d", rs->from->epoch) : AL_OK;
    }
    return al__loop_offer(rs, L, 0, 0, err);
}
