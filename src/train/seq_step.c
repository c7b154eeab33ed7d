/* seq_step.c — the data-parallel training step of the sequence models (seq_impl.h). */
#include "train/seq_impl.h"
#include "attnlab/train.h"
#include "attnlab/ops.h"
#include "core/omp_impl.h"
#include <stdlib.h>
#include <string.h>

al_status al__seq_stepper_init(al__seq_stepper *s, const al_seq_model *m, uint64_t seed, al_error *err)
{
    memset(s, 0, sizeof *s);
    for (int k = 0; k < AL_SEQ_SHARDS; k++)
        if (!(s->c[k] = al_ctx_new(seed))) return al_seterr(err, "training: out of memory");
    if (al_seq_replica(m, &s->rep, err) != AL_OK) return AL_ERR;
    s->have_rep = 1;
    const size_t nrows = (size_t)m->cfg.nwords + (size_t)m->cfg.nsuffixes;
    s->mark = calloc(nrows, sizeof(int));
    s->rows = malloc(nrows * sizeof(int));
    if (!s->mark || !s->rows) return al_seterr(err, "training: out of memory");
    return AL_OK;
}

void al__seq_stepper_free(al__seq_stepper *s)
{
    for (int k = 0; k < AL_SEQ_SHARDS; k++) al_ctx_free(s->c[k]);
    if (s->have_rep) al_seq_free(&s->rep);
    free(s->mark); free(s->rows);
    memset(s, 0, sizeof *s);
}

/* The first sentence of shard 1: the cut that leaves the token counts closest to equal (at least one
 * sentence each side when there are two); nseg when the batch has one sentence. */
static int split_point(const al_seq_batch *b)
{
    if (b->nseg < 2) return b->nseg;
    int best = 1; int64_t n0 = 0, best_d = -1;
    for (int k = 1; k < b->nseg; k++) {
        n0 += b->len[k - 1];
        int64_t d = 2 * n0 - b->ntok;
        if (d < 0) d = -d;
        if (best_d < 0 || d < best_d) { best_d = d; best = k; }
    }
    return best;
}

typedef struct { al_seq_batch b; const int *tags; double loss; int64_t correct; int failed; } shard;

/* Tokens of tags[0..n) with a label (>= 0; -1 = unlabelled, as the generated tasks' context tokens). */
int al__seq_tagged(const int *tags, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += tags[i] >= 0;
    return k;
}

/* One shard on its own context, every op serial (called inside a parallel region, or alone). The
 * model's gradient is zeroed first; the replica's is zero already (see al__seq_step). The loss is the
 * mean over the labelled tokens, weighted by the shard's share of the batch's ntag_all labelled tokens
 * (every token, for a treebank: then no mask is built and the arithmetic is as before). */
static void shard_run(al_ctx *c, al_seq_model *m, int zero, shard *sh, int ntag_all)
{
    al_ctx_reset(c);
    if (zero) al_params_zero_grad(&m->params);
    const int n = sh->b.ntok, nt = al__seq_tagged(sh->tags, n);
    if (nt == 0) return;                                                  /* nothing to learn from here */
    uint8_t *mask = NULL;
    if (nt < n) {
        if (!(mask = al_arena_alloc(&c->arena, (size_t)n))) { sh->failed = 1; return; }
        for (int i = 0; i < n; i++) mask[i] = sh->tags[i] >= 0;
    }
    al_tensor *logits = al_seq_forward(c, m, &sh->b);                     /* (n, tags) */
    al_tensor *loss = al_cross_entropy(c, logits, sh->tags, mask);        /* mean over the shard's labelled tokens */
    float *seed = loss ? al_grad(c, loss) : NULL;
    if (!seed) { sh->failed = 1; return; }
    const float w = (float)nt / (float)ntag_all;                          /* the shard's share of the batch mean */
    sh->loss = (double)loss->data[0] * w;
    seed[0] = w;
    if (al_backward_run(c) != AL_OK) { sh->failed = 1; return; }
    const int K = logits->shape[1];
    for (int i = 0; i < n; i++) {
        if (sh->tags[i] < 0) continue;
        const float *r = logits->data + (int64_t)i * K;
        int k = 0;
        for (int j = 1; j < K; j++) if (r[j] > r[k]) k = j;
        sh->correct += k == sh->tags[i];
    }
}

/* The flat gradient offsets of the embedding rows that batch b uses, each once, into s->rows;
 * returns their count. Word rows hold wd floats, suffix rows sd. */
static int touched_rows(al__seq_stepper *s, const al_seq_batch *b)
{
    const al_seq_model *r = &s->rep;
    const int nw = r->cfg.nwords, wd = r->cfg.word_dim, sd = r->cfg.suffix_dim;
    const int64_t w0 = r->wemb->grad - r->params.grad, s0 = r->semb->grad - r->params.grad;
    if (++s->stamp == 0x7fffffff) { memset(s->mark, 0, ((size_t)nw + (size_t)r->cfg.nsuffixes) * sizeof(int)); s->stamp = 1; }
    int n = 0;
    for (int i = 0; i < b->ntok; i++) {
        const int w = b->word[i], x = nw + b->suffix[i];
        if (w < 0 || w >= nw || b->suffix[i] < 0 || b->suffix[i] >= r->cfg.nsuffixes) continue;   /* the forward refuses it */
        if (s->mark[w] != s->stamp) { s->mark[w] = s->stamp; s->rows[n++] = (int)(w0 + (int64_t)w * wd); }
        if (s->mark[x] != s->stamp) { s->mark[x] = s->stamp; s->rows[n++] = (int)(s0 + (int64_t)b->suffix[i] * sd); }
    }
    return n;
}

/* g0 += g1, g1 = 0 over [lo, hi) ∩ [a, e). */
static void add_clear(float *restrict g0, float *restrict g1, int64_t lo, int64_t hi, int64_t a, int64_t e)
{
    if (a < lo) a = lo;
    if (e > hi) e = hi;
    for (int64_t i = a; i < e; i++) { g0[i] += g1[i]; g1[i] = 0.f; }
}

/* add_clear over [lo, hi) of the flat arrays except the two embedding tables [w0, w1), [s0, s1). */
static void add_dense(float *g0, float *g1, int64_t lo, int64_t hi, int64_t total, const int64_t tab[4])
{
    int64_t cut[6] = {0, tab[0], tab[1], tab[2], tab[3], total};
    if (tab[2] < tab[0]) { cut[1] = tab[2]; cut[2] = tab[3]; cut[3] = tab[0]; cut[4] = tab[1]; }
    for (int k = 0; k < 6; k += 2) add_clear(g0, g1, lo, hi, cut[k], cut[k + 1]);
}

al_status al__seq_step(al__seq_stepper *s, al_seq_model *m, const al_seq_batch *b, const int *tags,
                       double *loss, int64_t *correct, al_error *err)
{
    const int k = split_point(b), nsh = k < b->nseg ? 2 : 1, ntag = al__seq_tagged(tags, b->ntok);
    if (ntag == 0) return al_seterr(err, "a batch of %d sequences has no labelled token", b->nseg);
    int n0 = 0;
    for (int i = 0; i < k; i++) n0 += b->len[i];
    shard sh[AL_SEQ_SHARDS];
    memset(sh, 0, sizeof sh);
    sh[0].b = *b; sh[0].b.nseg = k; sh[0].b.ntok = n0; sh[0].tags = tags;
    sh[1].b = *b; sh[1].b.nseg = b->nseg - k; sh[1].b.ntok = b->ntok - n0; sh[1].tags = tags + n0;
    sh[1].b.len = b->len + k; sh[1].b.word = b->word + n0; sh[1].b.suffix = b->suffix + n0;
    sh[1].b.shape = b->shape + (int64_t)n0 * 4;
    const int nrows = nsh > 1 ? touched_rows(s, &sh[1].b) : 0;
    float *g0 = m->params.grad, *g1 = s->rep.params.grad;
    const int64_t total = m->params.total;
    const int64_t tab[4] = {s->rep.wemb->grad - g1, s->rep.wemb->grad - g1 + s->rep.wemb->numel,
                            s->rep.semb->grad - g1, s->rep.semb->grad - g1 + s->rep.semb->numel};
    const int wd = m->cfg.word_dim, sd = m->cfg.suffix_dim;
    AL_OMP("omp parallel num_threads(2) if (nsh > 1 && al_threads() > 1)")
    {
        const int t = al__thread_id(), nt = al__num_threads();
        for (int q = t; q < nsh; q += nt) shard_run(s->c[q], q ? &s->rep : m, q == 0, &sh[q], ntag);
        AL_OMP("omp barrier")
        if (nsh > 1) {                             /* g0 += g1, g1 = 0: each thread its own part */
            add_dense(g0, g1, total * t / nt, total * (t + 1) / nt, total, tab);
            for (int j = nrows * t / nt; j < nrows * (t + 1) / nt; j++) {
                const int64_t o = s->rows[j], len = o >= tab[2] && o < tab[3] ? sd : wd;
                add_clear(g0, g1, o, o + len, o, o + len);
            }
        }
    }
    for (int q = 0; q < nsh; q++)
        if (sh[q].failed) {
            al_params_zero_grad(&s->rep.params);  /* keep the replica's invariant */
            return al_seterr(err, "%s", al_ctx_error(s->c[q]));
        }
    *loss = sh[0].loss + (nsh > 1 ? sh[1].loss : 0.0);
    *correct = sh[0].correct + (nsh > 1 ? sh[1].correct : 0);
    return AL_OK;
}

al_status al__seq_step_dist(al__seq_stepper *s, al_seq_model *m, const al_seq_batch *b, const int *tags,
                            const al_dist *d, uint64_t seed, int64_t step_no, al_gradsum *gs,
                            double *loss, int64_t *correct, al_error *err)
{
    const int ntag = al__seq_tagged(tags, b->ntok);
    if (ntag == 0) return al_seterr(err, "a batch of %d sequences has no labelled token", b->nseg);
    const int S = al_dist_shards(b->nseg);
    int j0, j1;
    al_dist_my_shards(d, S, &j0, &j1);
    double lv[AL_DIST_MAX_SHARDS] = {0};
    *correct = 0;
    al_gradsum_begin(gs, m->params.total);
    int64_t t0 = 0;                                  /* the first token of shard j */
    for (int j = 0; j < j1; j++) {
        const int a = (int)((int64_t)b->nseg * j / S), e = (int)((int64_t)b->nseg * (j + 1) / S);
        int n = 0;
        for (int i = a; i < e; i++) n += b->len[i];
        if (j >= j0) {
            shard sh;
            memset(&sh, 0, sizeof sh);
            sh.b = *b; sh.b.nseg = e - a; sh.b.ntok = n; sh.b.len = b->len + a; sh.b.word = b->word + t0;
            sh.b.suffix = b->suffix + t0; sh.b.shape = b->shape + t0 * 4; sh.tags = tags + t0;
            al_rng_seed(&s->c[0]->dropout_rng, seed + (uint64_t)(step_no * S + j), AL_RNG_DROPOUT);   /* per shard, not per rank */
            shard_run(s->c[0], m, 1, &sh, ntag);
            if (sh.failed) return al_seterr(err, "%s", al_ctx_error(s->c[0]));
            lv[j] = sh.loss; *correct += sh.correct;
            if (al_gradsum_add(gs, m->params.grad, err) != AL_OK) return AL_ERR;
        }
        t0 += n;
    }
    if (al_gradsum_reduce(gs, d, m->params.grad, err) != AL_OK || al_dist_sum_slots(d, lv, S, loss, err) != AL_OK) return AL_ERR;
    return al_dist_sum_counts(d, correct, 1, err);
}
