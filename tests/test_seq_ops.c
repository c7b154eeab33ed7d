/* test_seq_ops.c — the packed-batch pieces of seq.h: the segment CSR against a brute-force pattern
 * (whole segments and radii, empty segments), the window concatenation and the pack / unpack ops
 * (forward against naive loops, finite-difference gradients), positions and torch's sinusoid. */
#include "testutil.h"
#include "attnlab/seq.h"
#include "attnlab/ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Gradient checks: these ops are copies and sums, exactly linear; eps 1e-2 has no truncation error,
 * only float noise (~1e-6 · |L| / eps), so 1e-3 is generous while a misrouted row gives ~1. */
#define GEPS 1e-2
#define GTOL 1e-3

static int seg_of(const int *len, int nseg, int i, int *pos)
{
    *pos = -1;
    for (int s = 0, a = 0; s < nseg; a += len[s], s++)
        if (i < a + len[s]) { *pos = i - a; return s; }
    return -1;
}

static void check_segments(const int *len, int nseg, int radius)
{
    al_csr a; al_error e = {{0}};
    assert_int_equal(al_csr_segments(len, nseg, radius, &a, &e), AL_OK);
    int N = 0; for (int s = 0; s < nseg; s++) N += len[s];
    assert_int_equal(a.rows, N); assert_int_equal(a.cols, N);
    assert_null(a.val);
    int64_t e_ = 0;
    for (int i = 0; i < N; i++) {
        int pi, si = seg_of(len, nseg, i, &pi);
        assert_int_equal(a.rowptr[i], e_);
        for (int j = 0; j < N; j++) {   /* brute force: same segment and within the radius, in order */
            int pj, sj = seg_of(len, nseg, j, &pj);
            if (sj != si || (radius >= 0 && abs(pi - pj) > radius)) continue;
            assert_true(e_ < a.nnz);
            assert_int_equal(a.col[e_], j);
            e_++;
        }
    }
    assert_int_equal(a.rowptr[N], a.nnz);
    assert_int_equal(e_, a.nnz);
    /* the arena version is the same matrix */
    al_ctx *c = al_ctx_new(1);
    const al_csr *b = al_csr_segments_arena(c, len, nseg, radius);
    assert_non_null(b);
    assert_int_equal(b->nnz, a.nnz);
    assert_memory_equal(b->rowptr, a.rowptr, (size_t)(N + 1) * sizeof(int64_t));
    if (a.nnz) assert_memory_equal(b->col, a.col, (size_t)a.nnz * sizeof(int));
    al_ctx_free(c);
    al_csr_free(&a);
}

static void test_segments(void **st)
{
    (void)st;
    const int l1[] = {3, 1, 5, 2}, l2[] = {7}, l3[] = {0, 4, 0, 1, 6};
    for (int r = -1; r <= 6; r++) {
        check_segments(l1, 4, r);
        check_segments(l2, 1, r);
        check_segments(l3, 5, r);
    }
    al_csr a; al_error e = {{0}};
    const int bad[] = {2, -1};
    assert_int_equal(al_csr_segments(bad, 2, -1, &a, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "segments"));
}

/* ---- window ---- */
typedef struct { const int *len; int nseg, K; } segud;
static al_tensor *fn_window(al_ctx *c, al_tensor **t, void *ud) { segud *u = ud; return al_seg_window(c, t[0], u->len, u->nseg, u->K); }
static al_tensor *fn_unpack(al_ctx *c, al_tensor **t, void *ud) { segud *u = ud; return al_seg_unpack(c, t[0], u->len, u->nseg); }
static al_tensor *fn_pack(al_ctx *c, al_tensor **t, void *ud) { segud *u = ud; return al_seg_pack(c, t[0], u->len, u->nseg); }

static void test_window(void **st)
{
    (void)st;
    const int len[] = {4, 1, 6}, nseg = 3, N = 11, C = 3;
    for (int K = 0; K <= 3; K++) {
        float *x = tu_alloc_rand(N * C, 10 + K, -1, 1);
        al_ctx *c = al_ctx_new(1);
        al_tensor *xt = al_wrap(c, x, 2, (int[]){N, C});
        al_tensor *y = al_seg_window(c, xt, len, nseg, K);
        assert_non_null(y);
        assert_int_equal(y->shape[0], N); assert_int_equal(y->shape[1], (2 * K + 1) * C);
        for (int i = 0; i < N; i++) {   /* naive: torch's F.pad + cat over the offsets */
            int p, s = seg_of(len, nseg, i, &p);
            for (int o = -K; o <= K; o++)
                for (int k = 0; k < C; k++) {
                    float want = (p + o >= 0 && p + o < len[s]) ? x[(i + o) * C + k] : 0.f;
                    assert_true(y->data[(int64_t)i * (2 * K + 1) * C + (o + K) * C + k] == want);
                }
        }
        al_ctx_free(c);
        segud u = {len, nseg, K};
        tu_input in = tu_in(x, 1, 2, N, C, 0, 0);
        TU_GRADCHECK("seg_window", fn_window, &u, &in, 1, GEPS, GTOL);
        free(x);
    }
}

static void test_pack_unpack(void **st)
{
    (void)st;
    const int len[] = {2, 5, 1, 3}, nseg = 4, N = 11, C = 4, T = 5;
    float *x = tu_alloc_rand(N * C, 3, -1, 1);
    al_ctx *c = al_ctx_new(1);
    al_tensor *xt = al_wrap(c, x, 2, (int[]){N, C});
    al_tensor *p = al_seg_unpack(c, xt, len, nseg);
    assert_non_null(p);
    assert_int_equal(p->shape[0], nseg); assert_int_equal(p->shape[1], T); assert_int_equal(p->shape[2], C);
    for (int s = 0, a = 0; s < nseg; a += len[s], s++)
        for (int t = 0; t < T; t++)
            for (int k = 0; k < C; k++)
                assert_true(p->data[((int64_t)s * T + t) * C + k] == (t < len[s] ? x[(a + t) * C + k] : 0.f));
    al_tensor *back = al_seg_pack(c, p, len, nseg);   /* pack ∘ unpack = identity */
    assert_non_null(back);
    assert_memory_equal(back->data, x, (size_t)N * C * sizeof(float));
    /* shape errors are recorded, not crashes */
    assert_null(al_seg_unpack(c, al_wrap(c, x, 2, (int[]){N - 1, C}), len, nseg));
    assert_false(al_ok(c));
    al_ctx_free(c);
    segud u = {len, nseg, 0};
    tu_input in = tu_in(x, 1, 2, N, C, 0, 0);
    TU_GRADCHECK("seg_unpack", fn_unpack, &u, &in, 1, GEPS, GTOL);
    float *y = tu_alloc_rand(nseg * 6 * C, 4, -1, 1);   /* padded input with a longer T than needed */
    tu_input in2 = tu_in(y, 1, 3, nseg, 6, C, 0);
    TU_GRADCHECK("seg_pack", fn_pack, &u, &in2, 1, GEPS, GTOL);
    free(x); free(y);
}

static void test_positions_sinusoid(void **st)
{
    (void)st;
    const int len[] = {3, 1, 2};
    int pos[6];
    al_seg_positions(len, 3, pos);
    const int want[] = {0, 1, 2, 0, 0, 1};
    assert_memory_equal(pos, want, sizeof want);
    float pe[5 * 8];
    al_sinusoid(pe, 5, 8);
    for (int p = 0; p < 5; p++)
        for (int i = 0; i < 8; i += 2) {
            double ang = p / pow(10000.0, (double)i / 8);
            assert_true(fabs(pe[p * 8 + i] - sin(ang)) < 1e-6);
            assert_true(fabs(pe[p * 8 + i + 1] - cos(ang)) < 1e-6);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_window),
        cmocka_unit_test(test_pack_unpack),
        cmocka_unit_test(test_positions_sinusoid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
