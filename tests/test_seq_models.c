/* test_seq_models.c — the sequence taggers on packed batches: a packed batch gives the same logits and
 * parameter gradients as each sentence alone (every model, attention variants included), changing
 * one sentence changes no other sentence's outputs (no weight crosses a sentence boundary), the
 * parameter names / shapes / init of torch_pos.py's Tagger, checkpoints round-trip, and the taggers
 * learn a synthetic task in which a token's tag depends on the word and its left neighbour. The
 * data-parallel training step (train/seq_impl.h) gives the one-pass gradient and loss and leaves the
 * replica's gradient zero; training gives the same weights on 1 and 2 threads. */
#include "testutil.h"
#include "attnlab/seq.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"
#include "train/seq_impl.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NW 30
#define NS 12
#define TAGS 9

/* ---- a random packed batch ---- */
typedef struct { int nseg, ntok; int len[8]; int word[64], suffix[64]; float shape[64 * 4]; } rbatch;
static void make_batch(rbatch *r, const int *len, int nseg, uint64_t seed)
{
    al_rng g; al_rng_seed(&g, seed, 9);
    r->nseg = nseg; r->ntok = 0;
    for (int s = 0; s < nseg; s++) { r->len[s] = len[s]; r->ntok += len[s]; }
    for (int i = 0; i < r->ntok; i++) {
        r->word[i] = 1 + (int)al_rng_below(&g, NW - 1);
        r->suffix[i] = 1 + (int)al_rng_below(&g, NS - 1);
        for (int k = 0; k < 4; k++) r->shape[i * 4 + k] = (float)al_rng_below(&g, 2);
    }
}
static al_seq_batch view(const rbatch *r, int first, int nseg)
{
    int a = 0; for (int s = 0; s < first; s++) a += r->len[s];
    int n = 0; for (int s = first; s < first + nseg; s++) n += r->len[s];
    al_seq_batch b = {nseg, n, r->len + first, r->word + a, r->suffix + a, r->shape + (int64_t)a * 4, NULL, 0};
    return b;
}

/* Forward b, seed dL/dlogits = rr (ntok, TAGS), backward; logits copied to out. Grads accumulate. */
static void fwd_bwd(al_seq_model *m, const al_seq_batch *b, const float *rr, float *out)
{
    al_ctx *c = al_ctx_new(1);
    al_tensor *y = al_seq_forward(c, m, b);
    if (!y) fail_msg("%s forward: %s", m->cfg.name, al_ctx_error(c));
    assert_int_equal(y->shape[0], b->ntok); assert_int_equal(y->shape[1], TAGS);
    memcpy(out, y->data, (size_t)b->ntok * TAGS * sizeof(float));
    memcpy(al_grad(c, y), rr, (size_t)b->ntok * TAGS * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    al_ctx_free(c);
}

typedef struct { const char *model; const char *pos, *score, *norm; int window; } variant;
static const variant VARIANTS[] = {
    {"fc", 0, 0, 0, -2}, {"window-fc", 0, 0, 0, -2}, {"window-fc", 0, 0, 0, 1}, {"rnn", 0, 0, 0, -2},
    {"sa", 0, 0, 0, -2}, {"trunc", 0, 0, 0, -2}, {"trunc", 0, 0, 0, 1}, {"sa", "learned", 0, 0, -2},
    {"sa", "none", "additive", 0, -2}, {"sa", 0, 0, "relu", -2}, {"trunc", 0, "additive", "relu", -2},
};

static void init_variant(al_seq_model *m, const variant *v, int bidir)
{
    al_seq_config cfg; al_error e = {{0}};
    assert_int_equal(al_seq_config_default(&cfg, v->model, NW, NS, TAGS, &e), AL_OK);
    if (v->pos) assert_int_equal(al_pos_parse(v->pos, &cfg.pos), 0);
    if (v->score) assert_int_equal(al_score_parse(v->score, &cfg.score), 0);
    if (v->norm) assert_int_equal(al_norm_parse(v->norm, &cfg.norm), 0);
    if (v->window != -2) cfg.window = v->window;
    cfg.bidirectional = bidir;
    cfg.max_len = 16;
    if (al_seq_init(m, &cfg, 7, &e) != AL_OK) fail_msg("%s", e.msg);
}

/* Packed = each sentence alone, outputs and gradients, to 1e-5 (float sums in another order). */
static void test_packed_invariance(void **st)
{
    (void)st;
    const int len[] = {5, 1, 7, 3, 2};
    rbatch r; make_batch(&r, len, 5, 11);
    float *rr = tu_alloc_rand(r.ntok * TAGS, 12, -1, 1);
    float packed[64 * TAGS], alone[64 * TAGS];
    for (size_t vi = 0; vi < sizeof VARIANTS / sizeof *VARIANTS; vi++)
        for (int bidir = 1; bidir >= (strcmp(VARIANTS[vi].model, "rnn") ? 1 : 0); bidir--) {
            al_seq_model m; init_variant(&m, &VARIANTS[vi], bidir);
            int64_t P = m.params.total;
            al_params_zero_grad(&m.params);
            al_seq_batch b = view(&r, 0, r.nseg);
            fwd_bwd(&m, &b, rr, packed);
            float *gp = malloc((size_t)P * sizeof(float));
            memcpy(gp, m.params.grad, (size_t)P * sizeof(float));
            al_params_zero_grad(&m.params);
            for (int s = 0, a = 0; s < r.nseg; a += r.len[s], s++) {
                al_seq_batch bs = view(&r, s, 1);
                fwd_bwd(&m, &bs, rr + (int64_t)a * TAGS, alone + (int64_t)a * TAGS);
            }
            double eo = tu_max_rel_err(packed, alone, (int64_t)r.ntok * TAGS), eg = tu_max_rel_err(gp, m.params.grad, P);
            if (!(eo <= 1e-5) || !(eg <= 1e-5))
                fail_msg("%s (pos %s score %s norm %s window %d bidir %d): packed vs alone: outputs %.3g, gradients %.3g",
                         VARIANTS[vi].model, VARIANTS[vi].pos ? VARIANTS[vi].pos : "-", VARIANTS[vi].score ? VARIANTS[vi].score : "-",
                         VARIANTS[vi].norm ? VARIANTS[vi].norm : "-", VARIANTS[vi].window, bidir, eo, eg);
            free(gp);
            al_seq_free(&m);
        }
    free(rr);
}

/* Data of one length (b.uniform = 1) runs sa and trunc dense over (nseg, L): the same outputs and
 * parameter gradients as the block-diagonal CSR, to 1e-5 (other kernels, other summation order), for
 * every attention variant, one sentence or four, a window narrower than L and one as wide; a batch
 * marked uniform whose lengths differ falls back to the CSR, bit for bit. */
static void test_uniform_dense(void **st)
{
    (void)st;
    const int len[] = {9, 9, 9, 9}, mixed[] = {9, 4, 9, 9};
    const variant wide = {"trunc", 0, 0, 0, 12};
    for (int nseg = 1; nseg <= 4; nseg += 3) {
        rbatch r; make_batch(&r, len, nseg, 31 + (uint64_t)nseg);
        float *rr = tu_alloc_rand(r.ntok * TAGS, 32, -1, 1);
        float dense[64 * TAGS], csr[64 * TAGS];
        for (size_t vi = 0; vi <= sizeof VARIANTS / sizeof *VARIANTS; vi++) {
            const variant *v = vi < sizeof VARIANTS / sizeof *VARIANTS ? &VARIANTS[vi] : &wide;
            al_seq_model m; init_variant(&m, v, 1);
            if (!m.kind->attention) { al_seq_free(&m); continue; }
            const int64_t P = m.params.total;
            al_seq_batch b = view(&r, 0, r.nseg);
            al_params_zero_grad(&m.params);
            b.uniform = 1; fwd_bwd(&m, &b, rr, dense);
            float *gd = malloc((size_t)P * sizeof(float));
            memcpy(gd, m.params.grad, (size_t)P * sizeof(float));
            al_params_zero_grad(&m.params);
            b.uniform = 0; fwd_bwd(&m, &b, rr, csr);
            double eo = tu_max_rel_err(dense, csr, (int64_t)r.ntok * TAGS), eg = tu_max_rel_err(gd, m.params.grad, P);
            if (!(eo <= 1e-5) || !(eg <= 1e-5))
                fail_msg("%s (score %s norm %s window %d, %d sentences): dense vs CSR: outputs %.3g, gradients %.3g", v->model,
                         v->score ? v->score : "-", v->norm ? v->norm : "-", m.cfg.window, nseg, eo, eg);
            free(gd);
            /* which kernels ran: captured weights always take the CSR, so without the mark the bits are
             * the captured run's, and with it (sa's dot-softmax: the full lane kernel) they are not
             * (trunc's window at this small L may run the slot lists either way) */
            float cap[64 * TAGS];
            m.capture_attn = 1; fwd_bwd(&m, &b, rr, cap); m.capture_attn = 0;
            assert_memory_equal(csr, cap, (size_t)r.ntok * TAGS * sizeof(float));
            if (!strcmp(v->model, "sa") && !v->score && !v->norm && memcmp(dense, cap, (size_t)r.ntok * TAGS * sizeof(float)) == 0)
                fail_msg("%s window %d: the uniform batch gave the CSR's bits: the dense path did not run", v->model, m.cfg.window);
            if (nseg == 4) {   /* marked uniform, lengths differ: the CSR's bits */
                rbatch q; make_batch(&q, mixed, 4, 33);
                al_seq_batch bq = view(&q, 0, 4);
                float *rq = tu_alloc_rand(q.ntok * TAGS, 34, -1, 1);
                bq.uniform = 1; fwd_bwd(&m, &bq, rq, dense);
                bq.uniform = 0; fwd_bwd(&m, &bq, rq, csr);
                assert_memory_equal(dense, csr, (size_t)q.ntok * TAGS * sizeof(float));
                free(rq);
            }
            al_seq_free(&m);
        }
        free(rr);
    }
}

/* Changing the words of sentence 2 leaves every other sentence's logits bit for bit unchanged. */
static void test_no_crossing(void **st)
{
    (void)st;
    const int len[] = {4, 6, 3, 5};
    rbatch r; make_batch(&r, len, 4, 21);
    for (size_t vi = 0; vi < sizeof VARIANTS / sizeof *VARIANTS; vi++) {
        al_seq_model m; init_variant(&m, &VARIANTS[vi], 1);
        al_ctx *c = al_ctx_new(1);
        c->grad_enabled = 0;
        al_seq_batch b = view(&r, 0, 4);
        al_tensor *y1 = al_seq_forward(c, &m, &b);
        rbatch r2 = r;
        for (int i = 10; i < 13; i++) { r2.word[i] = 1 + (r2.word[i] + 5) % (NW - 1); r2.shape[i * 4] = 1 - r2.shape[i * 4]; }
        al_seq_batch b2 = view(&r2, 0, 4);
        al_tensor *y2 = al_seq_forward(c, &m, &b2);
        assert_non_null(y1); assert_non_null(y2);
        int changed = 0;
        for (int i = 0; i < r.ntok; i++) {
            int diff = memcmp(y1->data + i * TAGS, y2->data + i * TAGS, TAGS * sizeof(float)) != 0;
            if (i >= 10 && i < 13) changed += diff;
            else if (diff) fail_msg("%s: token %d (outside the changed sentence) changed", VARIANTS[vi].model, i);
        }
        assert_true(changed > 0);
        al_ctx_free(c);
        al_seq_free(&m);
    }
}

/* torch_pos.py's state_dict names and shapes, init distributions, padding rows zero. */
static void test_params(void **st)
{
    (void)st;
    al_seq_model m; al_seq_config cfg; al_error e = {{0}};
    assert_int_equal(al_seq_config_default(&cfg, "rnn", 100, 40, 17, &e), AL_OK);
    assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
    const char *names[] = {"emb.w.weight", "emb.s.weight", "emb.proj.weight", "emb.proj.bias", "rnn.weight_ih_l0",
                           "rnn.weight_hh_l0", "rnn.bias_ih_l0", "rnn.bias_hh_l0", "rnn.weight_ih_l0_reverse",
                           "rnn.weight_hh_l0_reverse", "rnn.bias_ih_l0_reverse", "rnn.bias_hh_l0_reverse", "head.weight", "head.bias"};
    assert_int_equal(m.params.n, 14);
    for (int i = 0; i < 14; i++) assert_string_equal(m.params.t[i]->name, names[i]);
    /* 100·64 + 40·16 + 84·64+64 + 2·(192·64·2 + 192·2) + 17·128+17 */
    assert_int_equal(m.params.total, 6400 + 640 + 5440 + 2 * (24576 + 384) + 2176 + 17);
    for (int k = 0; k < 64; k++) assert_true(m.wemb->data[k] == 0.f);
    for (int k = 0; k < 16; k++) assert_true(m.semb->data[k] == 0.f);
    double s2 = 0; for (int k = 64; k < 6400; k++) s2 += (double)m.wemb->data[k] * m.wemb->data[k];
    assert_true(fabs(s2 / 6336 - 1.0) < 0.1);   /* N(0, 1) as nn.Embedding */
    float bound = 1.0f / 8.0f;                   /* GRU: U(±1/√H) */
    for (int64_t k = 0; k < m.rnn_whh[0]->numel; k++) assert_true(fabsf(m.rnn_whh[0]->data[k]) <= bound);
    al_seq_free(&m);
    assert_int_equal(al_seq_config_default(&cfg, "sa", 100, 40, 17, &e), AL_OK);
    assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
    assert_non_null(al_params_find(&m.params, "blocks.1.qkv.weight"));
    assert_non_null(al_params_find(&m.params, "blocks.0.fc2.bias"));
    assert_non_null(al_params_find(&m.params, "ln.weight"));
    assert_int_equal(m.params.t[m.params.n - 1]->shape[0], 17);
    al_seq_free(&m);
    assert_int_equal(al_seq_config_default(&cfg, "window-fc", 100, 40, 17, &e), AL_OK);
    assert_int_equal(cfg.window, 2);
    assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
    assert_int_equal(al_params_find(&m.params, "head.0.weight")->shape[1], 320);
    al_seq_free(&m);
    assert_int_equal(al_seq_config_default(&cfg, "trunc", 100, 40, 17, &e), AL_OK);
    assert_int_equal(cfg.window, 3);
    assert_int_equal(al_seq_config_default(&cfg, "cnn", 100, 40, 17, &e), AL_ERR);
}

/* ---- synthetic task: markers (ids 2..5) get tag 0; another word w gets 1 + w%4 after a marker,
 * 5 + w%4 otherwise. Without context the best is ≈ 80 % (guess "not after a marker"). ---- */
static void make_synth(al_seq_data *d, int nsent, uint64_t seed)
{
    al_rng g; al_rng_seed(&g, seed, 3);
    memset(d, 0, sizeof *d);
    d->nsent = nsent;
    d->start = malloc((size_t)(nsent + 1) * sizeof(int));
    int cap = nsent * 16;
    d->word = malloc((size_t)cap * sizeof(int)); d->suffix = malloc((size_t)cap * sizeof(int)); d->tag = malloc((size_t)cap * sizeof(int));
    d->shape = calloc((size_t)cap * 4, sizeof(float)); d->unseen = calloc((size_t)cap, 1);
    d->ambiguous = calloc((size_t)cap, 1);
    int t = 0;
    d->start[0] = 0;
    for (int s = 0; s < nsent; s++) {
        int L = 3 + (int)al_rng_below(&g, 13);
        for (int p = 0; p < L; p++, t++) {
            int marker = al_rng_uniform(&g) < 0.3f;
            int w = marker ? 2 + (int)al_rng_below(&g, 4) : 6 + (int)al_rng_below(&g, NW - 6);
            d->word[t] = w; d->suffix[t] = 1;
            int after = p > 0 && d->word[t - 1] < 6;
            d->tag[t] = marker ? 0 : after ? 1 + w % 4 : 5 + w % 4;
            d->unseen[t] = after;   /* "unseen" marks the context-dependent tokens, to report them */
            d->ambiguous[t] = !marker && !after;   /* and "ambiguous" the others but the markers */
        }
        d->start[s + 1] = t;
        if (L > d->max_len) d->max_len = L;
    }
    d->ntok = t;
}

static void test_learns_synthetic(void **st)
{
    (void)st;
    al_seq_data tr, te;
    make_synth(&tr, 500, 1);
    make_synth(&te, 300, 2);
    const struct { const char *model; double lo, hi; } cases[] = {
        {"window-fc", 0.95, 1.01}, {"rnn", 0.95, 1.01}, {"sa", 0.95, 1.01}, {"trunc", 0.95, 1.01}, {"fc", 0.0, 0.86}};
    for (int k = 0; k < 5; k++) {
        al_seq_config cfg; al_error e = {{0}}; al_seq_model m;
        assert_int_equal(al_seq_config_default(&cfg, cases[k].model, NW, NS, TAGS, &e), AL_OK);
        assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
        al_seq_train_config tc = {0};
        tc.epochs = 6; tc.batch = 32; tc.lr = 3e-3f; tc.weight_decay = 0.01f; tc.seed = 1;
        double t0 = al_time();
        if (al_seq_train(&m, &tr, &te, &tc, NULL, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
        double acc, ctx_acc;
        assert_int_equal(al_seq_evaluate(&m, &te, 64, &acc, &ctx_acc, NULL, &e), AL_OK);
        /* every score at once: the same accuracies, and the ambiguous tokens' share in between */
        al_seq_scores sc;
        assert_int_equal(al_seq_evaluate_scores(&m, &te, 64, &sc, NULL, &e), AL_OK);
        assert_true(sc.acc == acc && sc.unseen_acc == ctx_acc);
        int64_t nu = 0, na = 0;
        for (int i = 0; i < te.ntok; i++) { nu += te.unseen[i]; na += te.ambiguous[i]; }
        assert_int_equal(sc.ntok, te.ntok); assert_int_equal(sc.nunseen, nu); assert_int_equal(sc.nambig, na);
        assert_true(sc.nunseen + sc.nambig < sc.ntok);                       /* the markers are neither */
        double markers = ((double)sc.ntok * sc.acc - (double)nu * sc.unseen_acc - (double)na * sc.ambig_acc) / (double)(sc.ntok - nu - na);
        assert_true(markers >= -1e-9 && markers <= 1 + 1e-9);                /* the three parts add up */
        printf("# synthetic %-9s test acc %.4f (after a marker %.4f) in %.1f s\n", cases[k].model, acc, ctx_acc, al_time() - t0);
        if (!(acc >= cases[k].lo && acc <= cases[k].hi))
            fail_msg("%s: accuracy %.4f outside [%.2f, %.2f]", cases[k].model, acc, cases[k].lo, cases[k].hi);
        al_seq_free(&m);
    }
    al_seq_data_free(&tr); al_seq_data_free(&te);
}

/* Save, load: same configuration, vocabularies and logits. */
static void test_checkpoint(void **st)
{
    (void)st;
    al_conllu d; al_error e = {{0}};
    char path[64], ck[80];
    snprintf(path, sizeof path, "/tmp/attnlab-seqck-%d.conllu", (int)getpid());
    snprintf(ck, sizeof ck, "/tmp/attnlab-seqck-%d.safetensors", (int)getpid());
    const char *f1[] = {"The", "cat", "sat", "."}, *f2[] = {"the", "Dog", "sat", "quietly", "."};
    const int t1[] = {5, 7, 15, 12}, t2[] = {5, 7, 15, 2, 12};
    char *a, *b; size_t la, lb;
    assert_int_equal(al_conllu_format(4, f1, t1, &a, &la, &e), AL_OK);
    assert_int_equal(al_conllu_format(5, f2, t2, &b, &lb, &e), AL_OK);
    FILE *f = fopen(path, "w"); assert_non_null(f); fputs(a, f); fputs(b, f); fclose(f); free(a); free(b);
    assert_int_equal(al_conllu_read(path, NULL, &d, &e), AL_OK);
    al_featurizer fz, fz2;
    assert_int_equal(al_feat_build(&d, &fz, &e), AL_OK);
    al_seq_data sd; assert_int_equal(al_seq_data_encode(&fz, &d, &sd, &e), AL_OK);
    al_seq_config cfg; al_seq_model m, m2;
    assert_int_equal(al_seq_config_default(&cfg, "trunc", al_feat_nwords(&fz), al_feat_nsuffixes(&fz), 17, &e), AL_OK);
    cfg.window = 2; cfg.score = AL_SCORE_ADDITIVE;
    assert_int_equal(al_seq_init(&m, &cfg, 3, &e), AL_OK);
    const char *kv[] = {"task", "sequence"};
    if (al_seq_save(ck, &m, &fz, kv, 1, &e) != AL_OK) fail_msg("%s", e.msg);
    char *meta;
    if (al_seq_load(ck, &m2, &fz2, &meta, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_memory_equal(&m.cfg, &m2.cfg, sizeof cfg);
    assert_int_equal(m.params.total, m2.params.total);
    assert_memory_equal(m.params.data, m2.params.data, (size_t)m.params.total * sizeof(float));
    assert_int_equal(fz2.words.n, fz.words.n); assert_int_equal(fz2.train_words.n, fz.train_words.n);
    char *fmt = al_meta_get(meta, "format"); assert_string_equal(fmt, "attnlab-sequence"); free(fmt);
    int p1[16], p2[16];
    assert_int_equal(al_seq_evaluate(&m, &sd, 8, NULL, NULL, p1, &e), AL_OK);
    assert_int_equal(al_seq_evaluate(&m2, &sd, 8, NULL, NULL, p2, &e), AL_OK);
    assert_memory_equal(p1, p2, (size_t)sd.ntok * sizeof(int));
    /* a file that is not a sequence checkpoint is refused */
    al_seq_model m3; al_featurizer fz3;
    assert_int_equal(al_seq_load(path, &m3, &fz3, NULL, &e), AL_ERR);
    free(meta);
    al_seq_free(&m); al_seq_free(&m2); al_feat_free(&fz); al_feat_free(&fz2);
    al_seq_data_free(&sd); al_conllu_free(&d);
    unlink(path); unlink(ck);
}

/* The sharded step = one pass over the whole batch: loss, hits and gradient (to float rounding:
 * the shards' sums meet in another order); the replica's gradient is all zero afterwards. Batches
 * of one sentence (a single shard) and of several, every model; and with unlabelled tokens (tag -1,
 * as the generated tasks have: the mean is over the labelled ones, a shard with none adds nothing). */
static void test_shard_step(void **st)
{
    (void)st;
    const int len[] = {5, 1, 7, 3, 2};
    rbatch r; make_batch(&r, len, 5, 31);
    int tags[64];
    for (int unl = 0; unl <= 1; unl++)
    for (size_t vi = 0; vi < sizeof VARIANTS / sizeof *VARIANTS; vi++)
        for (int nseg = 1; nseg <= 5; nseg += 4) {
            for (int i = 0; i < r.ntok; i++) tags[i] = unl && (i < 3 || i % 3 == 0) ? -1 : (r.word[i] * 7 + i) % TAGS;
            uint8_t mask[64];
            for (int i = 0; i < r.ntok; i++) mask[i] = tags[i] >= 0;
            al_seq_model m; init_variant(&m, &VARIANTS[vi], 1);
            const int64_t P = m.params.total;
            al_seq_batch b = view(&r, 0, nseg);
            al_ctx *c = al_ctx_new(1);                         /* one pass */
            al_params_zero_grad(&m.params);
            al_tensor *logits = al_seq_forward(c, &m, &b);
            al_tensor *loss = al_cross_entropy(c, logits, tags, unl ? mask : NULL);
            assert_non_null(loss);
            assert_int_equal(al_backward(c, loss), AL_OK);
            const double want_loss = loss->data[0];
            int64_t want_hits = 0;
            for (int i = 0; i < b.ntok; i++) {
                if (tags[i] < 0) continue;
                const float *q = logits->data + (int64_t)i * TAGS;
                int k = 0; for (int j = 1; j < TAGS; j++) if (q[j] > q[k]) k = j;
                want_hits += k == tags[i];
            }
            float *want = malloc((size_t)P * sizeof(float));
            memcpy(want, m.params.grad, (size_t)P * sizeof(float));
            al_ctx_free(c);
            for (int64_t i = 0; i < P; i++) m.params.grad[i] = 1e30f;   /* the step sets, not adds */
            al__seq_stepper sp; al_error e = {{0}};
            assert_int_equal(al__seq_stepper_init(&sp, &m, 1, &e), AL_OK);
            double got_loss; int64_t hits;
            for (int rep = 0; rep < 2; rep++) {                          /* twice: the replica starts clean again */
                if (al__seq_step(&sp, &m, &b, tags, &got_loss, &hits, &e) != AL_OK) fail_msg("%s", e.msg);
                double eg = tu_max_rel_err(m.params.grad, want, P);
                if (!(eg <= 1e-5) || !(fabs(got_loss - want_loss) <= 1e-6 * (1 + fabs(want_loss))) || hits != want_hits)
                    fail_msg("%s, %d sentences: sharded step vs one pass: gradient %.3g, loss %.9g vs %.9g, hits %lld vs %lld",
                             VARIANTS[vi].model, nseg, eg, got_loss, want_loss, (long long)hits, (long long)want_hits);
                for (int64_t i = 0; i < P; i++) if (sp.rep.params.grad[i] != 0.f) fail_msg("%s: replica gradient %lld not 0", VARIANTS[vi].model, (long long)i);
            }
            if (unl && nseg == 5) {                                       /* no label at all: an error, not NaN */
                int none[64];
                for (int i = 0; i < r.ntok; i++) none[i] = -1;
                e.msg[0] = 0;
                assert_int_equal(al__seq_step(&sp, &m, &b, none, &got_loss, &hits, &e), AL_ERR);
                assert_non_null(strstr(e.msg, "no labelled token"));
            }
            al__seq_stepper_free(&sp);
            free(want);
            al_seq_free(&m);
        }
}

/* A training run gives the same weights, losses and accuracies on 1 and 2 threads, every model. */
typedef struct { double loss[64]; int n; } losses;
static int keep_loss(void *ud, const al_seq_progress *p) { losses *l = ud; if (l->n < 64) l->loss[l->n++] = p->loss + p->train_acc; return 0; }
static void test_train_threads_bitwise(void **st)
{
    (void)st;
    al_seq_data tr; make_synth(&tr, 200, 5);
    const char *models[] = {"fc", "window-fc", "rnn", "sa", "trunc"};
    const int saved = al_threads();
    for (int k = 0; k < 5; k++) {
        float *w[2]; losses l[2]; int64_t P = 0;
        for (int th = 0; th < 2; th++) {
            al_set_threads(th + 1);
            al_seq_config cfg; al_error e = {{0}}; al_seq_model m;
            assert_int_equal(al_seq_config_default(&cfg, models[k], NW, NS, TAGS, &e), AL_OK);
            assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
            al_seq_train_config tc = {0};
            tc.epochs = 2; tc.batch = 32; tc.lr = 3e-3f; tc.weight_decay = 0.01f; tc.seed = 1;
            memset(&l[th], 0, sizeof l[th]);
            if (al_seq_train(&m, &tr, NULL, &tc, keep_loss, &l[th], &e) != AL_OK) fail_msg("%s", e.msg);
            P = m.params.total;
            w[th] = malloc((size_t)P * sizeof(float));
            memcpy(w[th], m.params.data, (size_t)P * sizeof(float));
            al_seq_free(&m);
        }
        if (memcmp(w[0], w[1], (size_t)P * sizeof(float))) fail_msg("%s: weights differ between 1 and 2 threads", models[k]);
        assert_int_equal(l[0].n, l[1].n);
        assert_memory_equal(l[0].loss, l[1].loss, (size_t)l[0].n * sizeof(double));
        free(w[0]); free(w[1]);
    }
    al_set_threads(saved);
    al_seq_data_free(&tr);
}

/* Data-parallel training (dist.h) on 1 and 3 ranks simulated by threads (tu_ranks): the same weights,
 * losses and train accuracies on every rank and for both rank counts, every model (evaluation sharded). */
typedef struct { const char *model; const al_seq_data *tr, *te; float *w; int64_t P; losses l; int failed; } seq_rank;
static void seq_rank_train(const al_dist *d, void *p)
{
    seq_rank *a = p;
    al_seq_config cfg; al_error e = {{0}}; al_seq_model m;
    a->failed = al_seq_config_default(&cfg, a->model, NW, NS, TAGS, &e) != AL_OK || al_seq_init(&m, &cfg, 1, &e) != AL_OK;
    if (a->failed) return;
    al_seq_train_config tc = {0};
    tc.epochs = 2; tc.batch = 20; tc.lr = 3e-3f; tc.weight_decay = 0.01f; tc.seed = 1; tc.dist = d;
    memset(&a->l, 0, sizeof a->l);
    a->failed = al_seq_train(&m, a->tr, a->te, &tc, keep_loss, &a->l, &e) != AL_OK;
    a->P = m.params.total;
    a->w = malloc((size_t)a->P * sizeof(float));
    if (a->w) memcpy(a->w, m.params.data, (size_t)a->P * sizeof(float));
    al_seq_free(&m);
}

static void test_data_parallel_same_bits(void **st)
{
    (void)st;
    al_seq_data tr, te; make_synth(&tr, 130, 6); make_synth(&te, 70, 7);
    const char *models[] = {"fc", "window-fc", "rnn", "sa", "trunc"};
    const int saved = al_threads();
    al_set_threads(1);
    for (int k = 0; k < 5; k++) {
        seq_rank one[1], three[3];
        for (int N = 1; N <= 3; N += 2) {
            seq_rank *a = N == 1 ? one : three;
            void *args[3];
            for (int r = 0; r < N; r++) { memset(&a[r], 0, sizeof a[r]); a[r].model = models[k]; a[r].tr = &tr; a[r].te = &te; args[r] = &a[r]; }
            tu_ranks(N, seq_rank_train, args);
            for (int r = 0; r < N; r++) {
                if (a[r].failed || !a[r].w) fail_msg("%s: rank %d of %d failed", models[k], r, N);
                if (memcmp(a[r].w, one[0].w, (size_t)one[0].P * sizeof(float))) fail_msg("%s: rank %d of %d: other weights", models[k], r, N);
                assert_int_equal(a[r].l.n, one[0].l.n);
                assert_memory_equal(a[r].l.loss, one[0].l.loss, (size_t)one[0].l.n * sizeof(double));
            }
        }
        free(one[0].w);
        for (int r = 0; r < 3; r++) free(three[r].w);
    }
    al_set_threads(saved);
    al_seq_data_free(&tr); al_seq_data_free(&te);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_packed_invariance),
        cmocka_unit_test(test_uniform_dense),
        cmocka_unit_test(test_no_crossing),
        cmocka_unit_test(test_checkpoint),
        cmocka_unit_test(test_learns_synthetic),
        cmocka_unit_test(test_shard_step),
        cmocka_unit_test(test_train_threads_bitwise),
        cmocka_unit_test(test_data_parallel_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
