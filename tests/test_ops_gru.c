/* test_ops_gru.c — al_gru: forward and backward against the naive double reference (many shapes,
 * variable lengths, both directions, with and without biases), padding invariance (NaN padding
 * included), reverse = forward on the time-flipped sequence, finite-difference gradient checks of
 * every input in both directions, bitwise equality for 1 and 2 threads, shape errors.
 * al_gru_packed (one or two directions on a packed batch): against the reference per direction,
 * equal to al_gru on the padded layout, gradient checks, bitwise equality for 1 and 2 threads
 * (the directions then run concurrently), shape errors. */
#include "testutil.h"
#include "attnlab/ops.h"
#include "attnlab/rnn.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Forward vs the double reference: float rounding of sums of ≤ 64 products plus the recurrence's
 * contraction keep the error near 1e-6 relative; 2e-5 is well above that and far below any gate
 * or ordering mistake (errors of order 1e-1). Backward sums over up to B·T steps: 1e-4. */
#define FTOL 2e-5
#define BTOL 1e-4
/* Gradient checks: GRU is smooth; eps = 1e-2 gives central-difference truncation ≈ eps²·f''' ≈ 1e-4
 * relative at these O(1) pre-activations, float noise ≈ 1e-7·|L|/eps ≈ 1e-5; 2e-3 leaves margin while
 * a wrong backward term (a missing r in dhn, a sign of dz) gives errors > 1e-1. */
#define GEPS 1e-2
#define GTOL 2e-3

typedef struct {
    int B, T, I, H, reverse, bias;
    int len[16];
} gcase;

typedef struct {
    float *x, *wih, *whh, *bih, *bhh;  /* inputs */
    float *dy;                         /* (B, T, H) upstream gradient */
} gdata;

static gdata make_data(const gcase *k, uint64_t seed)
{
    const int H3 = 3 * k->H;
    gdata d;
    float bound = 1.0f / sqrtf((float)k->H);   /* PyTorch's GRU init range */
    d.x = tu_alloc_rand((int64_t)k->B * k->T * k->I, seed, -1.f, 1.f);
    d.wih = tu_alloc_rand((int64_t)H3 * k->I, seed + 1, -2 * bound, 2 * bound);
    d.whh = tu_alloc_rand((int64_t)H3 * k->H, seed + 2, -2 * bound, 2 * bound);
    d.bih = tu_alloc_rand(H3, seed + 3, -bound, bound);
    d.bhh = tu_alloc_rand(H3, seed + 4, -bound, bound);
    d.dy = tu_alloc_rand((int64_t)k->B * k->T * k->H, seed + 5, -1.f, 1.f);
    return d;
}
static void free_data(gdata *d) { free(d->x); free(d->wih); free(d->whh); free(d->bih); free(d->bhh); free(d->dy); }

/* Runs al_gru forward and backward (seeded with dy); copies out y and every gradient. */
typedef struct { float *y, *dx, *dwih, *dwhh, *dbih, *dbhh; } gout;
static gout run_gru(const gcase *k, const gdata *d)
{
    const int B = k->B, T = k->T, I = k->I, H = k->H, H3 = 3 * H;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_wrap(c, d->x, 3, (int[]){B, T, I});
    al_tensor *wih = al_wrap(c, d->wih, 2, (int[]){H3, I}), *whh = al_wrap(c, d->whh, 2, (int[]){H3, H});
    al_tensor *bih = k->bias ? al_wrap(c, d->bih, 1, (int[]){H3}) : NULL;
    al_tensor *bhh = k->bias ? al_wrap(c, d->bhh, 1, (int[]){H3}) : NULL;
    x->requires_grad = wih->requires_grad = whh->requires_grad = 1;
    if (bih) bih->requires_grad = bhh->requires_grad = 1;
    al_tensor *y = al_gru(c, x, k->len, wih, whh, bih, bhh, k->reverse);
    if (!y) fail_msg("gru failed: %s", al_ctx_error(c));
    assert_int_equal(y->ndim, 3);
    assert_int_equal(y->shape[0], B); assert_int_equal(y->shape[1], T); assert_int_equal(y->shape[2], H);
    memcpy(al_grad(c, y), d->dy, (size_t)y->numel * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    gout o;
    size_t ny = (size_t)B * T * H, nx = (size_t)B * T * I;
    o.y = malloc(ny * sizeof(float)); memcpy(o.y, y->data, ny * sizeof(float));
    o.dx = calloc(nx, sizeof(float)); if (x->grad) memcpy(o.dx, x->grad, nx * sizeof(float));
    o.dwih = calloc((size_t)H3 * I, sizeof(float)); if (wih->grad) memcpy(o.dwih, wih->grad, (size_t)H3 * I * sizeof(float));
    o.dwhh = calloc((size_t)H3 * H, sizeof(float)); if (whh->grad) memcpy(o.dwhh, whh->grad, (size_t)H3 * H * sizeof(float));
    o.dbih = calloc(H3, sizeof(float)); if (bih && bih->grad) memcpy(o.dbih, bih->grad, (size_t)H3 * sizeof(float));
    o.dbhh = calloc(H3, sizeof(float)); if (bhh && bhh->grad) memcpy(o.dbhh, bhh->grad, (size_t)H3 * sizeof(float));
    al_ctx_free(c);
    return o;
}
static void free_out(gout *o) { free(o->y); free(o->dx); free(o->dwih); free(o->dwhh); free(o->dbih); free(o->dbhh); }

static gout run_ref(const gcase *k, const gdata *d)
{
    const int B = k->B, T = k->T, I = k->I, H = k->H, H3 = 3 * H;
    gout o;
    o.y = malloc((size_t)B * T * H * sizeof(float));
    o.dx = calloc((size_t)B * T * I, sizeof(float));
    o.dwih = calloc((size_t)H3 * I, sizeof(float)); o.dwhh = calloc((size_t)H3 * H, sizeof(float));
    o.dbih = calloc(H3, sizeof(float)); o.dbhh = calloc(H3, sizeof(float));
    assert_int_equal(al_gru_ref(B, T, I, H, d->x, k->len, d->wih, d->whh, k->bias ? d->bih : NULL,
                                k->bias ? d->bhh : NULL, k->reverse, o.y, d->dy, o.dx, o.dwih, o.dwhh,
                                k->bias ? o.dbih : NULL, k->bias ? o.dbhh : NULL), AL_OK);
    return o;
}

static void check_close(const char *what, const gcase *k, const float *a, const float *b, int64_t n, double tol)
{
    double e = tu_max_rel_err(a, b, n);
    if (!(e <= tol))
        fail_msg("%s (B %d T %d I %d H %d reverse %d bias %d): rel err %.3g > %.3g",
                 what, k->B, k->T, k->I, k->H, k->reverse, k->bias, e, tol);
}

static void compare_case(gcase k)
{
    gdata d = make_data(&k, 1000 + k.B * 31 + k.T * 7 + k.H);
    gout a = run_gru(&k, &d), r = run_ref(&k, &d);
    const int H3 = 3 * k.H;
    check_close("y", &k, a.y, r.y, (int64_t)k.B * k.T * k.H, FTOL);
    /* padded outputs exactly 0 */
    for (int b = 0; b < k.B; b++)
        for (int t = k.len[b]; t < k.T; t++)
            for (int j = 0; j < k.H; j++) assert_true(a.y[((int64_t)b * k.T + t) * k.H + j] == 0.f);
    check_close("dx", &k, a.dx, r.dx, (int64_t)k.B * k.T * k.I, BTOL);
    check_close("dw_ih", &k, a.dwih, r.dwih, (int64_t)H3 * k.I, BTOL);
    check_close("dw_hh", &k, a.dwhh, r.dwhh, (int64_t)H3 * k.H, BTOL);
    if (k.bias) {
        check_close("db_ih", &k, a.dbih, r.dbih, H3, BTOL);
        check_close("db_hh", &k, a.dbhh, r.dbhh, H3, BTOL);
    }
    free_out(&a); free_out(&r); free_data(&d);
}

static void test_gru_vs_reference(void **st)
{
    (void)st;
    /* B, T, I, H (H not a multiple of 16 in most), lengths incl. 1 and T */
    static const struct { int B, T, I, H; int len[16]; } cases[] = {
        {1, 1, 1, 1, {1}},
        {1, 6, 3, 5, {6}},
        {3, 5, 4, 7, {5, 1, 3}},
        {4, 9, 6, 17, {2, 9, 9, 1}},
        {5, 12, 16, 33, {12, 4, 1, 7, 11}},
        {2, 7, 10, 16, {7, 3}},
        {8, 15, 24, 40, {15, 1, 14, 8, 8, 2, 15, 5}},
        {3, 4, 5, 64, {4, 4, 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int rev = 0; rev < 2; rev++)
            for (int bias = 0; bias < 2; bias++) {
                gcase k = {cases[i].B, cases[i].T, cases[i].I, cases[i].H, rev, bias, {0}};
                memcpy(k.len, cases[i].len, sizeof k.len);
                compare_case(k);
            }
}

/* len = NULL means every sequence has T steps; len 0 gives an all-zero sequence. */
static void test_gru_len_null_and_zero(void **st)
{
    (void)st;
    gcase k = {3, 4, 5, 6, 0, 1, {4, 4, 4}};
    gdata d = make_data(&k, 77);
    gout full = run_gru(&k, &d);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_wrap(c, d.x, 3, (int[]){3, 4, 5});
    al_tensor *wih = al_wrap(c, d.wih, 2, (int[]){18, 5}), *whh = al_wrap(c, d.whh, 2, (int[]){18, 6});
    al_tensor *bih = al_wrap(c, d.bih, 1, (int[]){18}), *bhh = al_wrap(c, d.bhh, 1, (int[]){18});
    al_tensor *y = al_gru(c, x, NULL, wih, whh, bih, bhh, 0);
    assert_non_null(y);
    assert_memory_equal(y->data, full.y, 3 * 4 * 6 * sizeof(float));
    int len0[3] = {0, 2, 0};
    y = al_gru(c, x, len0, wih, whh, bih, bhh, 1);
    assert_non_null(y);
    for (int t = 0; t < 4; t++) for (int j = 0; j < 6; j++) { assert_true(y->data[t * 6 + j] == 0.f); assert_true(y->data[(2 * 4 + t) * 6 + j] == 0.f); }
    int lenz[3] = {0, 0, 0};
    y = al_gru(c, x, lenz, wih, whh, bih, bhh, 0);
    assert_non_null(y);
    for (int i = 0; i < 3 * 4 * 6; i++) assert_true(y->data[i] == 0.f);
    al_ctx_free(c);
    free_out(&full); free_data(&d);
}

/* A sequence alone (B = 1, T = L) and the same sequence as row 1 of a batch padded to T = L + 3 (the
 * other rows shorter and longer, padded inputs NaN, their upstream gradient 0): same outputs, same
 * input gradient, same weight gradients; padded outputs and input gradients 0. */
static void test_gru_padding_invariance(void **st)
{
    (void)st;
    const int L = 6, I = 5, H = 7, H3 = 21, Tp = L + 3, Bp = 3;
    for (int rev = 0; rev < 2; rev++) {
        gcase ka = {1, L, I, H, rev, 1, {L}};
        gdata da = make_data(&ka, 5);
        gout a = run_gru(&ka, &da);

        gcase kb = {Bp, Tp, I, H, rev, 1, {2, L, Tp}};
        gdata db = make_data(&kb, 9);
        memcpy(db.wih, da.wih, (size_t)H3 * I * sizeof(float));
        memcpy(db.whh, da.whh, (size_t)H3 * H * sizeof(float));
        memcpy(db.bih, da.bih, H3 * sizeof(float)); memcpy(db.bhh, da.bhh, H3 * sizeof(float));
        for (int64_t i = 0; i < (int64_t)Bp * Tp * I; i++) db.x[i] = NAN;
        for (int64_t i = 0; i < (int64_t)Bp * Tp * H; i++) db.dy[i] = 0.f;
        for (int b = 0; b < Bp; b++)          /* valid inputs: row 1 = the lone sequence, others random */
            for (int t = 0; t < kb.len[b]; t++)
                for (int q = 0; q < I; q++)
                    db.x[((int64_t)b * Tp + t) * I + q] = b == 1 ? da.x[t * I + q] : 0.5f * sinf((float)(b * 100 + t * 10 + q));
        for (int t = 0; t < Tp; t++)          /* upstream gradient: row 1's own, also at padded steps (must be ignored) */
            for (int j = 0; j < H; j++) db.dy[((int64_t)1 * Tp + t) * H + j] = t < L ? da.dy[t * H + j] : 5.f;
        gout b = run_gru(&kb, &db);
        const double tol = 1e-6;
        for (int t = 0; t < Tp; t++)
            for (int j = 0; j < H; j++) {
                float v = b.y[((int64_t)1 * Tp + t) * H + j];
                if (t < L) assert_true(fabs(v - a.y[t * H + j]) <= tol);
                else assert_true(v == 0.f);
            }
        for (int t = 0; t < Tp; t++)
            for (int q = 0; q < I; q++) {
                float v = b.dx[((int64_t)1 * Tp + t) * I + q];
                if (t < L) assert_true(fabs(v - a.dx[t * I + q]) <= tol);
                else assert_true(v == 0.f);
            }
        for (int64_t i = 0; i < (int64_t)Bp * Tp * I; i++) assert_true(isfinite(b.dx[i]));
        assert_true(tu_max_abs_err(b.dwih, a.dwih, (int64_t)H3 * I) <= tol);
        assert_true(tu_max_abs_err(b.dwhh, a.dwhh, (int64_t)H3 * H) <= tol);
        assert_true(tu_max_abs_err(b.dbih, a.dbih, H3) <= tol);
        assert_true(tu_max_abs_err(b.dbhh, a.dbhh, H3) <= tol);
        free_out(&a); free_out(&b); free_data(&da); free_data(&db);
    }
}

/* reverse on a sequence = forward on the time-flipped sequence, outputs flipped back. */
static void test_gru_reverse_is_flip(void **st)
{
    (void)st;
    const int T = 7, I = 4, H = 9;
    gcase kf = {2, T, I, H, 0, 1, {T, 4}}, kr = kf;
    kr.reverse = 1;
    gdata d = make_data(&kf, 21);
    gout r = run_gru(&kr, &d);
    float *xf = malloc((size_t)2 * T * I * sizeof(float));
    memcpy(xf, d.x, (size_t)2 * T * I * sizeof(float));
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < kf.len[b]; t++)
            memcpy(xf + ((int64_t)b * T + t) * I, d.x + ((int64_t)b * T + kf.len[b] - 1 - t) * I, I * sizeof(float));
    float *x0 = d.x; d.x = xf;
    gout f = run_gru(&kf, &d);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < kf.len[b]; t++)
            for (int j = 0; j < H; j++)
                assert_true(fabsf(f.y[((int64_t)b * T + t) * H + j] - r.y[((int64_t)b * T + kf.len[b] - 1 - t) * H + j]) <= 1e-6f);
    d.x = x0; free(xf);
    free_out(&r); free_out(&f); free_data(&d);
}

typedef struct { const int *len; int reverse, bias; } gru_ud;
static al_tensor *f_gru(al_ctx *c, al_tensor **t, void *ud)
{
    gru_ud *u = ud;
    return al_gru(c, t[0], u->len, t[1], t[2], u->bias ? t[3] : NULL, u->bias ? t[4] : NULL, u->reverse);
}

static void test_gru_gradcheck(void **st)
{
    (void)st;
    const int B = 3, T = 4, I = 3, H = 5, H3 = 15;
    int len[3] = {4, 1, 3};
    for (int rev = 0; rev < 2; rev++) {
        float *x = tu_alloc_rand(B * T * I, 31, -1.f, 1.f);
        float *wih = tu_alloc_rand(H3 * I, 32, -0.8f, 0.8f), *whh = tu_alloc_rand(H3 * H, 33, -0.8f, 0.8f);
        float *bih = tu_alloc_rand(H3, 34, -0.5f, 0.5f), *bhh = tu_alloc_rand(H3, 35, -0.5f, 0.5f);
        tu_input in[5] = {
            tu_in(x, 1, 3, B, T, I, 0), tu_in(wih, 1, 2, H3, I, 0, 0), tu_in(whh, 1, 2, H3, H, 0, 0),
            tu_in(bih, 1, 1, H3, 0, 0, 0), tu_in(bhh, 1, 1, H3, 0, 0, 0),
        };
        gru_ud u = {len, rev, 1};
        TU_GRADCHECK(rev ? "gru reverse" : "gru forward", f_gru, &u, in, 5, GEPS, GTOL);
        u.bias = 0;
        TU_GRADCHECK(rev ? "gru reverse, no bias" : "gru forward, no bias", f_gru, &u, in, 3, GEPS, GTOL);
        free(x); free(wih); free(whh); free(bih); free(bhh);
    }
}

/* Gradients accumulate: two calls on the same parameters give twice one call's gradient. */
static void test_gru_accumulates(void **st)
{
    (void)st;
    gcase k = {2, 3, 4, 5, 0, 1, {3, 2}};
    gdata d = make_data(&k, 50);
    gout one = run_gru(&k, &d);
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_wrap(c, d.x, 3, (int[]){2, 3, 4});
    al_tensor *wih = al_wrap(c, d.wih, 2, (int[]){15, 4}), *whh = al_wrap(c, d.whh, 2, (int[]){15, 5});
    al_tensor *bih = al_wrap(c, d.bih, 1, (int[]){15}), *bhh = al_wrap(c, d.bhh, 1, (int[]){15});
    x->requires_grad = whh->requires_grad = 1;
    al_tensor *y1 = al_gru(c, x, k.len, wih, whh, bih, bhh, 0), *y2 = al_gru(c, x, k.len, wih, whh, bih, bhh, 0);
    assert_non_null(y1); assert_non_null(y2);
    memcpy(al_grad(c, y1), d.dy, 30 * sizeof(float));
    memcpy(al_grad(c, y2), d.dy, 30 * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    for (int i = 0; i < 24; i++) assert_true(fabsf(x->grad[i] - 2 * one.dx[i]) <= 1e-6f * (1 + fabsf(one.dx[i])));
    for (int i = 0; i < 75; i++) assert_true(fabsf(whh->grad[i] - 2 * one.dwhh[i]) <= 1e-6f * (1 + fabsf(one.dwhh[i])));
    assert_null(wih->grad);
    al_ctx_free(c);
    free_out(&one); free_data(&d);
}

/* Same bits for 1 and 2 threads, at a size where the gate loops and the gemms run in parallel. */
static void test_gru_threads_bitwise(void **st)
{
    (void)st;
    gcase k = {64, 20, 64, 40, 0, 1, {0}};
    const int H3 = 120;
    for (int rev = 0; rev < 2; rev++) {
        k.reverse = rev;
        gdata d = make_data(&k, 60 + rev);
        int lens[64];                      /* 1 … 20, every length several times */
        for (int b = 0; b < 64; b++) lens[b] = 1 + (b * 7) % 20;
        float *res[2][6];
        int64_t sz[6] = {64 * 20 * 40, 64 * 20 * 64, H3 * 64, H3 * 40, H3, H3};
        int saved = al_threads();
        for (int th = 0; th < 2; th++) {
            al_set_threads(th + 1);
            al_ctx *c = al_ctx_new(1);
            al_tensor *x = al_wrap(c, d.x, 3, (int[]){64, 20, 64});
            al_tensor *wih = al_wrap(c, d.wih, 2, (int[]){H3, 64}), *whh = al_wrap(c, d.whh, 2, (int[]){H3, 40});
            al_tensor *bih = al_wrap(c, d.bih, 1, (int[]){H3}), *bhh = al_wrap(c, d.bhh, 1, (int[]){H3});
            x->requires_grad = wih->requires_grad = whh->requires_grad = bih->requires_grad = bhh->requires_grad = 1;
            al_tensor *y = al_gru(c, x, lens, wih, whh, bih, bhh, rev);
            assert_non_null(y);
            memcpy(al_grad(c, y), d.dy, (size_t)y->numel * sizeof(float));
            assert_int_equal(al_backward_run(c), AL_OK);
            const float *src[6] = {y->data, x->grad, wih->grad, whh->grad, bih->grad, bhh->grad};
            for (int i = 0; i < 6; i++) {
                res[th][i] = malloc((size_t)sz[i] * sizeof(float));
                memcpy(res[th][i], src[i], (size_t)sz[i] * sizeof(float));
            }
            al_ctx_free(c);
        }
        al_set_threads(saved);
        for (int i = 0; i < 6; i++) {
            if (memcmp(res[0][i], res[1][i], (size_t)sz[i] * sizeof(float)) != 0)
                fail_msg("gru %s: output %d differs between 1 and 2 threads", rev ? "reverse" : "forward", i);
            free(res[0][i]); free(res[1][i]);
        }
        free_data(&d);
    }
}

static void test_gru_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 3, (int[]){2, 3, 4});
    al_tensor *wih = al_zeros(c, 2, (int[]){15, 4}), *whh = al_zeros(c, 2, (int[]){15, 5});
    al_tensor *b = al_zeros(c, 1, (int[]){15}), *bbad = al_zeros(c, 1, (int[]){14});
    al_tensor *wih_bad = al_zeros(c, 2, (int[]){15, 3}), *whh_bad = al_zeros(c, 2, (int[]){12, 5});
    al_tensor *x2 = al_zeros(c, 2, (int[]){3, 4});
    struct { al_tensor *x, *wih, *whh, *bih, *bhh; const int *len; const char *want; } cases[] = {
        {x2, wih, whh, b, b, NULL, "must be (B, T, I)"},
        {x, wih_bad, whh, b, b, NULL, "w_ih"},
        {x, wih, whh_bad, b, b, NULL, "w_hh"},
        {x, wih, whh, bbad, b, NULL, "b_ih"},
        {x, wih, whh, b, bbad, NULL, "b_hh"},
        {x, wih, whh, b, b, (const int[]){3, 4}, "len[1] = 4 out of range"},
        {x, wih, whh, b, b, (const int[]){-1, 2}, "len[0] = -1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        al_ctx_clear_error(c);
        assert_null(al_gru(c, cases[i].x, cases[i].len, cases[i].wih, cases[i].whh, cases[i].bih, cases[i].bhh, 0));
        if (!strstr(al_ctx_error(c), cases[i].want) || !strstr(al_ctx_error(c), "gru:"))
            fail_msg("case %zu: error '%s' does not mention '%s'", i, al_ctx_error(c), cases[i].want);
    }
    al_ctx_clear_error(c);
    assert_null(al_gru(c, NULL, NULL, wih, whh, b, b, 0));
    al_ctx_free(c);
}

/* ---------------- al_gru_packed ---------------- */
typedef struct { int nseg, I, H, ndir, bias; int len[16]; } pcase;

/* Weights of direction dd of a packed case: 4 arrays (w_ih, w_hh, b_ih, b_hh). */
typedef struct { float *x, *dy, *w[2][4]; } pdata;
static pdata make_pdata(const pcase *k, int N, uint64_t seed)
{
    const int H3 = 3 * k->H;
    const float bound = 1.0f / sqrtf((float)k->H);
    pdata d;
    d.x = tu_alloc_rand((int64_t)N * k->I, seed, -1.f, 1.f);
    d.dy = tu_alloc_rand((int64_t)N * k->ndir * k->H, seed + 1, -1.f, 1.f);
    for (int dd = 0; dd < 2; dd++) {
        d.w[dd][0] = tu_alloc_rand((int64_t)H3 * k->I, seed + 10 * dd + 2, -2 * bound, 2 * bound);
        d.w[dd][1] = tu_alloc_rand((int64_t)H3 * k->H, seed + 10 * dd + 3, -2 * bound, 2 * bound);
        d.w[dd][2] = tu_alloc_rand(H3, seed + 10 * dd + 4, -bound, bound);
        d.w[dd][3] = tu_alloc_rand(H3, seed + 10 * dd + 5, -bound, bound);
    }
    return d;
}
static void free_pdata(pdata *d)
{
    free(d->x); free(d->dy);
    for (int dd = 0; dd < 2; dd++) for (int q = 0; q < 4; q++) free(d->w[dd][q]);
}
static int pcase_n(const pcase *k) { int n = 0; for (int s = 0; s < k->nseg; s++) n += k->len[s]; return n; }

/* al_gru_packed forward + backward (seeded with d->dy): y (N, ndir·H), dx (N, I), grads[dd][q]. */
typedef struct { float *y, *dx, *g[2][4]; } pout;
static pout run_packed(const pcase *k, const pdata *d)
{
    const int N = pcase_n(k), H = k->H, H3 = 3 * H, I = k->I;
    const int64_t sz[4] = {(int64_t)H3 * I, (int64_t)H3 * H, H3, H3};
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_wrap(c, d->x, 2, (int[]){N, I});
    x->requires_grad = 1;
    al_gru_dir dir[2];
    al_tensor *t[2][4];
    for (int dd = 0; dd < k->ndir; dd++) {
        t[dd][0] = al_wrap(c, d->w[dd][0], 2, (int[]){H3, I});
        t[dd][1] = al_wrap(c, d->w[dd][1], 2, (int[]){H3, H});
        t[dd][2] = k->bias ? al_wrap(c, d->w[dd][2], 1, (int[]){H3}) : NULL;
        t[dd][3] = k->bias ? al_wrap(c, d->w[dd][3], 1, (int[]){H3}) : NULL;
        for (int q = 0; q < 4; q++) if (t[dd][q]) t[dd][q]->requires_grad = 1;
        dir[dd] = (al_gru_dir){t[dd][0], t[dd][1], t[dd][2], t[dd][3]};
    }
    al_tensor *y = al_gru_packed(c, x, k->len, k->nseg, k->ndir, dir);
    if (!y) fail_msg("gru_packed failed: %s", al_ctx_error(c));
    assert_int_equal(y->ndim, 2); assert_int_equal(y->shape[0], N); assert_int_equal(y->shape[1], k->ndir * H);
    memcpy(al_grad(c, y), d->dy, (size_t)y->numel * sizeof(float));
    assert_int_equal(al_backward_run(c), AL_OK);
    pout o;
    memset(&o, 0, sizeof o);
    o.y = malloc((size_t)y->numel * sizeof(float)); memcpy(o.y, y->data, (size_t)y->numel * sizeof(float));
    o.dx = malloc((size_t)N * I * sizeof(float)); memcpy(o.dx, x->grad, (size_t)N * I * sizeof(float));
    for (int dd = 0; dd < k->ndir; dd++)
        for (int q = 0; q < 4; q++) {
            o.g[dd][q] = calloc((size_t)sz[q], sizeof(float));
            if (t[dd][q] && t[dd][q]->grad) memcpy(o.g[dd][q], t[dd][q]->grad, (size_t)sz[q] * sizeof(float));
        }
    al_ctx_free(c);
    return o;
}
static void free_pout(pout *o)
{
    free(o->y); free(o->dx);
    for (int dd = 0; dd < 2; dd++) for (int q = 0; q < 4; q++) free(o->g[dd][q]);
}

/* Each direction of the packed op against al_gru_ref on the zero-padded batch (its dy columns). */
static void compare_packed(const pcase *k, uint64_t seed)
{
    const int N = pcase_n(k), B = k->nseg, I = k->I, H = k->H, H3 = 3 * H, W = k->ndir * H;
    int T = 1;
    for (int s = 0; s < B; s++) if (k->len[s] > T) T = k->len[s];
    pdata d = make_pdata(k, N, seed);
    pout a = run_packed(k, &d);
    float *xpad = calloc((size_t)B * T * I, sizeof(float)), *ypad = malloc((size_t)B * T * H * sizeof(float));
    float *dypad = calloc((size_t)B * T * H, sizeof(float)), *dxpad = calloc((size_t)B * T * I, sizeof(float));
    float *dxsum = calloc((size_t)N * I, sizeof(float)), *yref = malloc((size_t)N * W * sizeof(float));
    for (int s = 0, p = 0; s < B; s++)
        for (int t = 0; t < k->len[s]; t++, p++) memcpy(xpad + ((int64_t)s * T + t) * I, d.x + (int64_t)p * I, (size_t)I * sizeof(float));
    for (int dd = 0; dd < k->ndir; dd++) {
        float *g[4] = {calloc((size_t)H3 * I, sizeof(float)), calloc((size_t)H3 * H, sizeof(float)), calloc(H3, sizeof(float)), calloc(H3, sizeof(float))};
        for (int s = 0, p = 0; s < B; s++)
            for (int t = 0; t < k->len[s]; t++, p++) memcpy(dypad + ((int64_t)s * T + t) * H, d.dy + (int64_t)p * W + dd * H, (size_t)H * sizeof(float));
        memset(dxpad, 0, (size_t)B * T * I * sizeof(float));
        assert_int_equal(al_gru_ref(B, T, I, H, xpad, k->len, d.w[dd][0], d.w[dd][1], k->bias ? d.w[dd][2] : NULL,
                                    k->bias ? d.w[dd][3] : NULL, dd, ypad, dypad, dxpad, g[0], g[1],
                                    k->bias ? g[2] : NULL, k->bias ? g[3] : NULL), AL_OK);
        for (int s = 0, p = 0; s < B; s++)
            for (int t = 0; t < k->len[s]; t++, p++) {
                memcpy(yref + (int64_t)p * W + dd * H, ypad + ((int64_t)s * T + t) * H, (size_t)H * sizeof(float));
                for (int q = 0; q < I; q++) dxsum[(int64_t)p * I + q] += dxpad[((int64_t)s * T + t) * I + q];
            }
        gcase kk = {B, T, I, H, dd, k->bias, {0}};
        check_close("packed dw_ih", &kk, a.g[dd][0], g[0], (int64_t)H3 * I, BTOL);
        check_close("packed dw_hh", &kk, a.g[dd][1], g[1], (int64_t)H3 * H, BTOL);
        if (k->bias) { check_close("packed db_ih", &kk, a.g[dd][2], g[2], H3, BTOL); check_close("packed db_hh", &kk, a.g[dd][3], g[3], H3, BTOL); }
        for (int q = 0; q < 4; q++) free(g[q]);
    }
    gcase kk = {B, T, I, H, k->ndir, k->bias, {0}};
    check_close("packed y", &kk, a.y, yref, (int64_t)N * W, FTOL);
    check_close("packed dx", &kk, a.dx, dxsum, (int64_t)N * I, BTOL);
    free(xpad); free(ypad); free(dypad); free(dxpad); free(dxsum); free(yref);
    free_pout(&a); free_pdata(&d);
}

static void test_gru_packed_vs_reference(void **st)
{
    (void)st;
    static const struct { int nseg, I, H; int len[16]; } cases[] = {
        {1, 1, 1, {1}},
        {1, 3, 5, {6}},
        {3, 4, 7, {5, 1, 3}},
        {4, 6, 17, {2, 9, 0, 1}},      /* an empty sequence */
        {5, 16, 33, {12, 4, 1, 7, 11}},
        {8, 24, 40, {15, 1, 14, 8, 8, 2, 15, 5}},
        {3, 64, 64, {4, 30, 4}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int ndir = 1; ndir <= 2; ndir++)
            for (int bias = 0; bias < 2; bias++) {
                pcase k = {cases[i].nseg, cases[i].I, cases[i].H, ndir, bias, {0}};
                memcpy(k.len, cases[i].len, sizeof k.len);
                compare_packed(&k, 300 + 17 * i + 5 * ndir + bias);
            }
}

/* One direction of al_gru_packed gives al_gru's bits on the padded layout (the same code), forwards
 * and (as direction 1 of two) backwards. */
static void test_gru_packed_equals_padded(void **st)
{
    (void)st;
    pcase k = {4, 6, 9, 2, 1, {3, 7, 1, 5}};
    const int N = pcase_n(&k), B = 4, T = 7, I = 6, H = 9, H3 = 27;
    pdata d = make_pdata(&k, N, 91);
    pout a = run_packed(&k, &d);
    for (int dd = 0; dd < 2; dd++) {
        gcase g = {B, T, I, H, dd, 1, {3, 7, 1, 5}};
        gdata gd = make_data(&g, 5);
        for (int s = 0, p = 0; s < B; s++)
            for (int t = 0; t < T; t++) {
                if (t < k.len[s]) { memcpy(gd.x + ((int64_t)s * T + t) * I, d.x + (int64_t)p * I, I * sizeof(float));
                                    memcpy(gd.dy + ((int64_t)s * T + t) * H, d.dy + (int64_t)p * 2 * H + dd * H, H * sizeof(float)); p++; }
                else memset(gd.dy + ((int64_t)s * T + t) * H, 0, H * sizeof(float));
            }
        memcpy(gd.wih, d.w[dd][0], (size_t)H3 * I * sizeof(float)); memcpy(gd.whh, d.w[dd][1], (size_t)H3 * H * sizeof(float));
        memcpy(gd.bih, d.w[dd][2], H3 * sizeof(float)); memcpy(gd.bhh, d.w[dd][3], H3 * sizeof(float));
        gout o = run_gru(&g, &gd);
        for (int s = 0, p = 0; s < B; s++)
            for (int t = 0; t < k.len[s]; t++, p++)
                assert_memory_equal(a.y + (int64_t)p * 2 * H + dd * H, o.y + ((int64_t)s * T + t) * H, H * sizeof(float));
        assert_memory_equal(a.g[dd][1], o.dwhh, (size_t)H3 * H * sizeof(float));
        assert_memory_equal(a.g[dd][3], o.dbhh, H3 * sizeof(float));
        assert_true(tu_max_abs_err(a.g[dd][0], o.dwih, (int64_t)H3 * I) <= 1e-6);
        free_out(&o); free_data(&gd);
    }
    free_pout(&a); free_pdata(&d);
}

typedef struct { const int *len; int nseg, ndir, bias; } gp_ud;
static al_tensor *f_gru_packed(al_ctx *c, al_tensor **t, void *ud)
{
    gp_ud *u = ud;
    al_gru_dir dir[2];
    for (int dd = 0; dd < u->ndir; dd++) {
        al_tensor **w = t + 1 + (u->bias ? 4 : 2) * dd;
        dir[dd] = (al_gru_dir){w[0], w[1], u->bias ? w[2] : NULL, u->bias ? w[3] : NULL};
    }
    return al_gru_packed(c, t[0], u->len, u->nseg, u->ndir, dir);
}

static void test_gru_packed_gradcheck(void **st)
{
    (void)st;
    const int I = 3, H = 4, H3 = 12, N = 8;
    int len[3] = {4, 1, 3};
    float *x = tu_alloc_rand(N * I, 41, -1.f, 1.f);
    float *w[2][4];
    tu_input in[9];
    in[0] = tu_in(x, 1, 2, N, I, 0, 0);
    for (int dd = 0; dd < 2; dd++) {
        w[dd][0] = tu_alloc_rand(H3 * I, 42 + dd, -0.8f, 0.8f); w[dd][1] = tu_alloc_rand(H3 * H, 44 + dd, -0.8f, 0.8f);
        w[dd][2] = tu_alloc_rand(H3, 46 + dd, -0.5f, 0.5f); w[dd][3] = tu_alloc_rand(H3, 48 + dd, -0.5f, 0.5f);
        in[1 + 4 * dd] = tu_in(w[dd][0], 1, 2, H3, I, 0, 0); in[2 + 4 * dd] = tu_in(w[dd][1], 1, 2, H3, H, 0, 0);
        in[3 + 4 * dd] = tu_in(w[dd][2], 1, 1, H3, 0, 0, 0); in[4 + 4 * dd] = tu_in(w[dd][3], 1, 1, H3, 0, 0, 0);
    }
    gp_ud u = {len, 3, 2, 1};
    TU_GRADCHECK("gru_packed bidirectional", f_gru_packed, &u, in, 9, GEPS, GTOL);
    u.ndir = 1;
    TU_GRADCHECK("gru_packed forward", f_gru_packed, &u, in, 5, GEPS, GTOL);
    tu_input nb[5] = {in[0], in[1], in[2], in[5], in[6]};
    u.ndir = 2; u.bias = 0;
    TU_GRADCHECK("gru_packed bidirectional, no bias", f_gru_packed, &u, nb, 5, GEPS, GTOL);
    free(x);
    for (int dd = 0; dd < 2; dd++) for (int q = 0; q < 4; q++) free(w[dd][q]);
}

/* Same bits for 1 and 2 threads with two directions (which then run concurrently). */
static void test_gru_packed_threads_bitwise(void **st)
{
    (void)st;
    pcase k = {16, 64, 64, 2, 1, {0}};
    for (int s = 0; s < 16; s++) k.len[s] = 1 + (s * 11) % 37;
    const int N = pcase_n(&k);
    pdata d = make_pdata(&k, N, 123);
    int saved = al_threads();
    al_set_threads(1);
    pout a = run_packed(&k, &d);
    al_set_threads(2);
    pout b = run_packed(&k, &d);
    al_set_threads(saved);
    assert_memory_equal(a.y, b.y, (size_t)N * 2 * 64 * sizeof(float));
    assert_memory_equal(a.dx, b.dx, (size_t)N * 64 * sizeof(float));
    const int64_t sz[4] = {192 * 64, 192 * 64, 192, 192};
    for (int dd = 0; dd < 2; dd++)
        for (int q = 0; q < 4; q++)
            if (memcmp(a.g[dd][q], b.g[dd][q], (size_t)sz[q] * sizeof(float))) fail_msg("direction %d gradient %d differs between 1 and 2 threads", dd, q);
    free_pout(&a); free_pout(&b); free_pdata(&d);
}

static void test_gru_packed_errors(void **st)
{
    (void)st;
    al_ctx *c = al_ctx_new(1);
    al_tensor *x = al_zeros(c, 2, (int[]){5, 4}), *x3 = al_zeros(c, 3, (int[]){1, 5, 4});
    al_tensor *wih = al_zeros(c, 2, (int[]){15, 4}), *whh = al_zeros(c, 2, (int[]){15, 5});
    al_tensor *wih2 = al_zeros(c, 2, (int[]){18, 4}), *whh2 = al_zeros(c, 2, (int[]){18, 6});
    const al_gru_dir ok[2] = {{wih, whh, NULL, NULL}, {wih, whh, NULL, NULL}};
    const al_gru_dir mixed[2] = {{wih, whh, NULL, NULL}, {wih2, whh2, NULL, NULL}};
    const int len[2] = {2, 3}, bad[2] = {2, 2}, neg[2] = {-1, 6};
    struct { al_tensor *x; const int *len; int nseg, ndir; const al_gru_dir *dir; const char *want; } cases[] = {
        {x3, len, 2, 2, ok, "must be (N, I)"},
        {x, len, 2, 3, ok, "ndir must be 1 or 2"},
        {x, len, 0, 2, ok, "at least one sequence"},
        {x, bad, 2, 2, ok, "lengths sum to 4"},
        {x, neg, 2, 2, ok, "negative length"},
        {x, len, 2, 2, mixed, "hidden sizes 5 and 6"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        al_ctx_clear_error(c);
        assert_null(al_gru_packed(c, cases[i].x, cases[i].len, cases[i].nseg, cases[i].ndir, cases[i].dir));
        if (!strstr(al_ctx_error(c), cases[i].want) || !strstr(al_ctx_error(c), "gru_packed:"))
            fail_msg("case %zu: error '%s' does not mention '%s'", i, al_ctx_error(c), cases[i].want);
    }
    al_ctx_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gru_vs_reference),
        cmocka_unit_test(test_gru_len_null_and_zero),
        cmocka_unit_test(test_gru_padding_invariance),
        cmocka_unit_test(test_gru_reverse_is_flip),
        cmocka_unit_test(test_gru_gradcheck),
        cmocka_unit_test(test_gru_accumulates),
        cmocka_unit_test(test_gru_threads_bitwise),
        cmocka_unit_test(test_gru_errors),
        cmocka_unit_test(test_gru_packed_vs_reference),
        cmocka_unit_test(test_gru_packed_equals_padded),
        cmocka_unit_test(test_gru_packed_gradcheck),
        cmocka_unit_test(test_gru_packed_threads_bitwise),
        cmocka_unit_test(test_gru_packed_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
