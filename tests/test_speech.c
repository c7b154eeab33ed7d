/* test_speech.c — the sequence models over frames (speech.h): the front end (linear, strided
 * convolutions) against a naive loop computation, finite-difference gradients of every frame model with
 * and without subsampling and with mean pooling (N-to-1), packed = alone, subsampled lengths, the
 * digit-string decoding, padding / cutting a frame set, checkpoints round-trip, and training learns: a
 * synthetic N-to-1 task (which tone) and a synthetic N-to-N task (which tone at each frame), both from
 * real audio through the front end. */
#include "testutil.h"
#include "attnlab/train.h"
#include "attnlab/speech.h"
#include "attnlab/fbank.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F 6      /* features per frame in the small tests */
#define K 5      /* classes */

static void init_frames(al_seq_model *m, const char *name, int sub, int window)
{
    al_seq_config cfg; al_error e = {{0}};
    assert_int_equal(al_seq_config_default(&cfg, name, 2, 2, K, &e), AL_OK);
    cfg.feat_dim = F; cfg.subsample = sub; cfg.max_len = 64; cfg.dim = 8; cfg.hidden = 12; cfg.heads = 2;
    if (window >= 0) cfg.window = window;
    if (al_seq_init(m, &cfg, 3, &e) != AL_OK) fail_msg("%s: %s", name, e.msg);
}

static void test_out_len(void **st)
{
    (void)st;
    al_seq_config c; memset(&c, 0, sizeof c);
    int L[] = {1, 2, 3, 4, 5, 98, 1598};
    int want1[] = {1, 2, 3, 4, 5, 98, 1598}, want2[] = {1, 1, 2, 2, 3, 49, 799}, want4[] = {1, 1, 1, 1, 2, 25, 400};
    for (int i = 0; i < 7; i++) {
        c.subsample = 1; assert_int_equal(al_seq_out_len(&c, L[i]), want1[i]);
        c.subsample = 2; assert_int_equal(al_seq_out_len(&c, L[i]), want2[i]);
        c.subsample = 4; assert_int_equal(al_seq_out_len(&c, L[i]), want4[i]);
    }
}

static double gelu_ref(double x) { return 0.5 * x * (1 + erf(x / sqrt(2.0))); }

/* fc over frames with subsample 4: proj, two kernel-3 stride-2 convolutions with zero padding inside
 * each utterance, GELU, then the fc head — by plain loops in double. */
static void test_front_matches_naive(void **st)
{
    (void)st;
    al_seq_model m; init_frames(&m, "fc", 4, -1);
    const int len[3] = {7, 1, 10}, N = 18, D = m.cfg.dim, H = m.cfg.hidden;
    float *x = tu_alloc_rand(N * F, 5, -1, 1);
    al_seq_batch b; memset(&b, 0, sizeof b);
    b.nseg = 3; b.ntok = N; b.len = len; b.feat = x;
    al_ctx *c = al_ctx_new(1);
    al_tensor *y = al_seq_forward(c, &m, &b);
    if (!y) fail_msg("%s", al_ctx_error(c));
    int rows = 0;
    for (int s = 0; s < 3; s++) rows += al_seq_out_len(&m.cfg, len[s]);
    assert_int_equal(y->shape[0], rows); assert_int_equal(rows, 2 + 1 + 3);
    double *h = malloc(sizeof(double) * N * D), *h2 = malloc(sizeof(double) * N * D);
    for (int i = 0; i < N; i++)
        for (int o = 0; o < D; o++) {
            double a = m.front_b->data[o];
            for (int f = 0; f < F; f++) a += (double)m.front_w->data[o * F + f] * x[i * F + f];
            h[i * D + o] = a;
        }
    int cur[3] = {len[0], len[1], len[2]};
    for (int k = 0; k < 2; k++) {                       /* one stride-2 convolution per factor 2 */
        int orow = 0, irow = 0;
        for (int s = 0; s < 3; s++) {
            int Lo = (cur[s] + 1) / 2;
            for (int t = 0; t < Lo; t++)
                for (int o = 0; o < D; o++) {
                    double a = m.conv_b[k]->data[o];
                    for (int tap = 0; tap < 3; tap++) {
                        int u = 2 * t + tap - 1;
                        if (u < 0 || u >= cur[s]) continue;
                        for (int i = 0; i < D; i++) a += (double)m.conv_w[k]->data[o * 3 * D + tap * D + i] * h[(irow + u) * D + i];
                    }
                    h2[(orow + t) * D + o] = gelu_ref(a);
                }
            irow += cur[s]; orow += Lo; cur[s] = Lo;
        }
        memcpy(h, h2, sizeof(double) * orow * D);
    }
    double worst = 0;
    for (int r = 0; r < rows; r++)
        for (int k = 0; k < K; k++) {
            double out = m.h2_b->data[k];
            for (int j = 0; j < H; j++) {
                double a = m.h1_b->data[j];
                for (int i = 0; i < D; i++) a += (double)m.h1_w->data[j * D + i] * h[r * D + i];
                out += (double)m.h2_w->data[k * H + j] * (a > 0 ? a : 0);
            }
            double e = fabs(out - y->data[r * K + k]) / (1 + fabs(out));
            if (e > worst) worst = e;
        }
    if (!(worst < 1e-5)) fail_msg("front end vs naive: %.3g", worst);
    al_ctx_free(c); free(h); free(h2); free(x); al_seq_free(&m);
}

/* ---- finite differences through the whole frame model, pooled or not ---- */
typedef struct { al_seq_model *m; const al_seq_batch *b; int pool; } gctx;
static al_tensor *frames_fn(al_ctx *c, al_tensor **t, void *ud)
{
    gctx *g = ud;
    al_seq_model *m = g->m;
    m->front_w = t[0]; m->front_b = t[1];
    if (m->cfg.subsample > 1) { m->conv_w[0] = t[2]; m->conv_b[0] = t[3]; }
    al_tensor *y = al_seq_forward(c, m, g->b);
    if (y && g->pool) {
        int lo[8];
        for (int s = 0; s < g->b->nseg; s++) lo[s] = al_seq_out_len(&m->cfg, g->b->len[s]);
        y = al_seg_pool(c, y, lo, g->b->nseg, 1);
    }
    return y;
}

static void test_frames_gradcheck(void **st)
{
    (void)st;
    const char *models[] = {"sa", "trunc", "rnn", "window-fc"};
    const int len[3] = {5, 2, 6}, N = 13;
    float *x = tu_alloc_rand(N * F, 7, -1, 1);
    al_seq_batch b; memset(&b, 0, sizeof b);
    b.nseg = 3; b.ntok = N; b.len = len; b.feat = x;
    for (int mi = 0; mi < 4; mi++)
        for (int sub = 1; sub <= 2; sub++)
            for (int pool = 0; pool <= 1; pool++) {
                al_seq_model m; init_frames(&m, models[mi], sub, !strcmp(models[mi], "trunc") ? 1 : -1);
                al_tensor *keep[4] = {m.front_w, m.front_b, m.conv_w[0], m.conv_b[0]};
                const int D = m.cfg.dim;
                float *w0 = malloc(sizeof(float) * D * F), *b0 = malloc(sizeof(float) * D);
                float *w1 = malloc(sizeof(float) * D * 3 * D), *b1 = malloc(sizeof(float) * D);
                memcpy(w0, m.front_w->data, sizeof(float) * D * F); memcpy(b0, m.front_b->data, sizeof(float) * D);
                if (sub > 1) { memcpy(w1, m.conv_w[0]->data, sizeof(float) * D * 3 * D); memcpy(b1, m.conv_b[0]->data, sizeof(float) * D); }
                tu_input in[4] = {tu_in(w0, 1, 2, D, F, 0, 0), tu_in(b0, 1, 1, D, 0, 0, 0),
                                  tu_in(w1, 1, 2, D, 3 * D, 0, 0), tu_in(b1, 1, 1, D, 0, 0, 0)};
                gctx g = {&m, &b, pool};
                char what[64];
                snprintf(what, sizeof what, "%s subsample %d pool %d", models[mi], sub, pool);
                TU_GRADCHECK(what, frames_fn, &g, in, sub > 1 ? 4 : 2, 1e-3, 3e-2);
                m.front_w = keep[0]; m.front_b = keep[1]; m.conv_w[0] = keep[2]; m.conv_b[0] = keep[3];
                free(w0); free(b0); free(w1); free(b1);
                al_seq_free(&m);
            }
    free(x);
}

/* Each utterance alone gives the same rows as in the packed batch (subsample 4: no frame crosses). */
static void test_frames_packed_alone(void **st)
{
    (void)st;
    const char *models[] = {"sa", "trunc", "rnn", "window-fc"};
    const int len[3] = {9, 3, 11}, N = 23;
    float *x = tu_alloc_rand(N * F, 8, -1, 1);
    for (int mi = 0; mi < 4; mi++) {
        al_seq_model m; init_frames(&m, models[mi], 4, -1);
        al_ctx *c = al_ctx_new(1);
        c->grad_enabled = 0;
        al_seq_batch b; memset(&b, 0, sizeof b);
        b.nseg = 3; b.ntok = N; b.len = len; b.feat = x;
        al_tensor *y = al_seq_forward(c, &m, &b);
        assert_non_null(y);
        int row = 0, fr = 0;
        for (int s = 0; s < 3; s++) {
            al_ctx *c1 = al_ctx_new(1);
            c1->grad_enabled = 0;
            al_seq_batch b1; memset(&b1, 0, sizeof b1);
            b1.nseg = 1; b1.ntok = len[s]; b1.len = &len[s]; b1.feat = x + fr * F;
            al_tensor *y1 = al_seq_forward(c1, &m, &b1);
            assert_non_null(y1);
            const int Lo = al_seq_out_len(&m.cfg, len[s]);
            assert_int_equal(y1->shape[0], Lo);
            double e = tu_max_rel_err(y->data + row * K, y1->data, (int64_t)Lo * K);
            if (!(e < 1e-5)) fail_msg("%s utterance %d: packed vs alone %.3g", models[mi], s, e);
            row += Lo; fr += len[s];
            al_ctx_free(c1);
        }
        al_ctx_free(c); al_seq_free(&m);
    }
    free(x);
}

static void test_decode(void **st)
{
    (void)st;
    const uint8_t lab[] = {10, 10, 3, 3, 3, 10, 4, 4, 10, 10, 4, 7, 7};
    char out[16];
    al_speech_decode(lab, 13, out);
    assert_string_equal(out, "3447");
    al_speech_decode(lab, 2, out);
    assert_string_equal(out, "");
}

/* ---- synthetic audio: tones through the real front end ---- */
static const double TONE[4] = {300, 900, 2000, 4200};

/* N-to-1: clip i is a 0.5-s tone of class i % 4 with a random phase and amplitude; N-to-N: each clip has
 * three tone segments with silence around, every frame labelled with the tone at its centre (or 10). */
static void tone_audio(al_audio *a, int n, int seg, uint64_t seed, uint8_t **flab, int64_t **foff)
{
    memset(a, 0, sizeof *a);
    al_rng g; al_rng_seed(&g, seed, 3);
    const int64_t S = seg ? 16000 : 8000;
    a->n = n; a->classes = 4; a->rate = 16000;
    a->off = malloc(sizeof(int64_t) * (n + 1)); a->x = calloc((size_t)(n * S), sizeof(float));
    a->labels = malloc(sizeof(int) * n); a->speaker = malloc(sizeof(int) * n);
    a->class_names = malloc(sizeof(char *) * 4);
    for (int k = 0; k < 4; k++) { char nm[8]; snprintf(nm, sizeof nm, "t%d", k); a->class_names[k] = strdup(nm); }
    al_fbank_cfg fc = al_fbank_defaults();
    const int64_t T = al_fbank_frames(&fc, S);
    if (seg) { *flab = malloc((size_t)(n * T)); *foff = malloc(sizeof(int64_t) * (n + 1)); }
    for (int i = 0; i < n; i++) {
        float *x = a->x + i * S;
        a->off[i] = i * S; a->labels[i] = i % 4; a->speaker[i] = -1;
        for (int64_t t = 0; t < S; t++) x[t] = 0.001f * (al_rng_uniform(&g) - 0.5f);
        int nseg = seg ? 3 : 1;
        int64_t pos = seg ? 800 + (int64_t)al_rng_below(&g, 1600) : 0;
        int cls[3];
        int64_t a0[3], a1[3];
        for (int k = 0; k < nseg; k++) {
            cls[k] = seg ? (int)al_rng_below(&g, 4) : i % 4;
            int64_t dur = seg ? 2400 + (int64_t)al_rng_below(&g, 1600) : S;
            a0[k] = pos; a1[k] = pos + dur < S ? pos + dur : S;
            double ph = al_rng_uniform(&g) * 6.28, amp = 0.2 + 0.5 * al_rng_uniform(&g);
            for (int64_t t = a0[k]; t < a1[k]; t++) x[t] += (float)(amp * sin(ph + 2 * M_PI * TONE[cls[k]] * t / 16000.0));
            pos = a1[k] + 800 + (int64_t)al_rng_below(&g, 800);
        }
        if (seg) {
            (*foff)[i] = i * T;
            for (int64_t f = 0; f < T; f++) {
                int64_t ctr = 160 * f + 200;
                uint8_t l = AL_FRAME_SILENCE;
                for (int k = 0; k < nseg; k++) if (ctr >= a0[k] && ctr < a1[k]) l = (uint8_t)cls[k];
                (*flab)[i * T + f] = l;
            }
        }
    }
    a->off[n] = n * S;
    if (seg) (*foff)[n] = n * T;
}

static void test_learns_n_to_1(void **st)
{
    (void)st;
    al_audio tr, te; al_error e = {{0}};
    tone_audio(&tr, 80, 0, 1, NULL, NULL); tone_audio(&te, 40, 0, 2, NULL, NULL);
    al_speech_opts o = {AL_SPEECH_MFCC, 0};   /* per-utterance CMVN would erase a stationary tone */
    al_speech_data dtr, dte;
    assert_int_equal(al_speech_from_audio(&tr, &o, AL_SPEECH_BY_CLASS, &dtr, &e), AL_OK);
    assert_int_equal(al_speech_from_audio(&te, &o, AL_SPEECH_BY_CLASS, &dte, &e), AL_OK);
    assert_int_equal(dtr.dim, 39); assert_int_equal(dtr.max_frames, 48);
    al_seq_config cfg;
    assert_int_equal(al_speech_config(&cfg, "trunc", &dtr, 2, &e), AL_OK);
    cfg.window = 4;
    al_seq_model m;
    assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
    al_speech_train_config tc = {.epochs = 8, .batch = 8, .lr = 3e-3f, .weight_decay = 0.01f, .seed = 1};
    if (al_speech_train(&m, &dtr, &dte, &tc, NULL, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    al_speech_scores sc;
    assert_int_equal(al_speech_evaluate(&m, &dte, 16, &sc, NULL, &e), AL_OK);
    if (!(sc.acc >= 0.95)) fail_msg("tone class accuracy %.3f < 0.95", sc.acc);
    assert_true(isnan(sc.ser));
    /* the checkpoint round-trips to the same scores */
    tu_tmpdir_make("speech");
    const char *path = tu_tpath("m.safetensors");
    assert_int_equal(al_speech_save(path, &m, &o, &dtr, NULL, 0, &e), AL_OK);
    al_seq_model m2; al_speech_opts o2;
    if (al_speech_load(path, &m2, &o2, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(o2.features, AL_SPEECH_MFCC); assert_int_equal(o2.cmvn, 0);
    assert_int_equal(m2.cfg.subsample, 2); assert_int_equal(m2.cfg.window, 4);
    al_speech_scores sc2;
    assert_int_equal(al_speech_evaluate(&m2, &dte, 7, &sc2, NULL, &e), AL_OK);
    assert_true(sc2.acc == sc.acc);
    tu_tmpdir_remove();
    al_seq_free(&m); al_seq_free(&m2);
    al_speech_data_free(&dtr); al_speech_data_free(&dte); al_audio_free(&tr); al_audio_free(&te);
}

static void make_frameset(al_frame_set *f, int n, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    tone_audio(&f->a, n, 1, seed, &f->flab, &f->foff);
    f->digits = malloc(sizeof(char *) * n);
    for (int i = 0; i < n; i++) {
        f->digits[i] = malloc(200);
        al_speech_decode(f->flab + f->foff[i], f->foff[i + 1] - f->foff[i], f->digits[i]);
    }
}

static void test_learns_n_to_n(void **st)
{
    (void)st;
    al_frame_set ftr, fte; al_error e = {{0}};
    make_frameset(&ftr, 60, 3); make_frameset(&fte, 30, 4);
    al_speech_opts o = {AL_SPEECH_FBANK, 1};
    al_speech_data dtr, dte;
    assert_int_equal(al_speech_from_frames(&ftr, &o, &dtr, &e), AL_OK);
    assert_int_equal(al_speech_from_frames(&fte, &o, &dte, &e), AL_OK);
    assert_int_equal(dtr.dim, 80); assert_int_equal(dtr.classes, 11);
    const char *models[] = {"trunc", "rnn"};
    for (int mi = 0; mi < 2; mi++) {
        al_seq_config cfg;
        assert_int_equal(al_speech_config(&cfg, models[mi], &dtr, 1, &e), AL_OK);
        if (mi == 0) cfg.window = 4;
        al_seq_model m;
        assert_int_equal(al_seq_init(&m, &cfg, 1, &e), AL_OK);
        al_speech_train_config tc = {.epochs = 10, .batch = 6, .lr = 3e-3f, .weight_decay = 0.01f, .seed = 1};
        if (al_speech_train(&m, &dtr, &dte, &tc, NULL, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
        al_speech_scores sc;
        assert_int_equal(al_speech_evaluate(&m, &dte, 8, &sc, NULL, &e), AL_OK);
        if (!(sc.acc >= 0.9)) fail_msg("%s: tone frame accuracy %.3f < 0.9", models[mi], sc.acc);
        assert_true(sc.ser >= 0 && sc.ser <= 1);
        assert_int_equal(sc.n, dte.foff[dte.n]);
        al_seq_free(&m);
    }
    /* padding to 1.5 s adds silence frames and keeps the strings; cutting to 0.5 s re-reads them */
    al_frame_set_fit(&fte, 1.5, &e);
    for (int i = 0; i < fte.a.n; i++) {
        assert_int_equal(fte.foff[i + 1] - fte.foff[i], 148);
        for (int t = 98; t < 148; t++) assert_int_equal(fte.flab[fte.foff[i] + t], AL_FRAME_SILENCE);
        char s[200]; al_speech_decode(dte.flab + dte.foff[i], dte.foff[i + 1] - dte.foff[i], s);
        assert_string_equal(fte.digits[i], s);
    }
    assert_int_equal(al_frame_set_fit(&fte, 0.5, &e), AL_OK);
    assert_int_equal(fte.foff[1], 48);
    assert_int_equal(al_frame_set_fit(&fte, 0.01, &e), AL_ERR);
    al_speech_data_free(&dtr); al_speech_data_free(&dte);
    al_frame_set_free(&ftr); al_frame_set_free(&fte);
}

/* The same seed gives the same weights bit for bit on 1 and 2 threads (N-to-1 through rnn, N-to-N through sa). */
static void test_threads_bitwise(void **st)
{
    (void)st;
    al_frame_set f; al_error e = {{0}};
    make_frameset(&f, 12, 5);
    al_speech_opts o = {AL_SPEECH_MFCC, 1};
    al_speech_data d;
    assert_int_equal(al_speech_from_frames(&f, &o, &d, &e), AL_OK);
    const char *models[] = {"sa", "rnn", "trunc"};
    const int saved = al_threads();
    for (int mi = 0; mi < 3; mi++) {
        float *w[2] = {NULL, NULL};
        int64_t P = 0;
        for (int th = 1; th <= 2; th++) {
            al_set_threads(th);
            al_seq_config cfg;
            assert_int_equal(al_speech_config(&cfg, models[mi], &d, mi == 2 ? 2 : 1, &e), AL_OK);
            al_seq_model m;
            assert_int_equal(al_seq_init(&m, &cfg, 9, &e), AL_OK);
            al_speech_train_config tc = {.epochs = 2, .batch = 5, .lr = 3e-3f, .weight_decay = 0.01f, .seed = 4};
            if (al_speech_train(&m, &d, NULL, &tc, NULL, NULL, &e) != AL_OK) fail_msg("%s", e.msg);
            P = m.params.total;
            w[th - 1] = malloc((size_t)P * sizeof(float));
            memcpy(w[th - 1], m.params.data, (size_t)P * sizeof(float));
            al_seq_free(&m);
        }
        if (memcmp(w[0], w[1], (size_t)P * sizeof(float))) fail_msg("%s: weights differ between 1 and 2 threads", models[mi]);
        free(w[0]); free(w[1]);
    }
    al_set_threads(saved);
    al_speech_data_free(&d); al_frame_set_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_out_len),
        cmocka_unit_test(test_front_matches_naive),
        cmocka_unit_test(test_frames_gradcheck),
        cmocka_unit_test(test_frames_packed_alone),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_learns_n_to_1),
        cmocka_unit_test(test_learns_n_to_n),
        cmocka_unit_test(test_threads_bitwise),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
