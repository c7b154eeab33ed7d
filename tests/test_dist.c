/* test_dist.c — the data-parallel step's arithmetic (dist.h) without MPI: micro-shard counts and
 * ranges, and the fixed-point gradient sum across 1, 2, 3 and 5 ranks simulated by threads whose
 * allreduce meets at a barrier. The sum must have the same bits for every rank count and lie within
 * the fixed point's rounding of the exact sum. (tests/mpi.sh does the same through mpirun.) */
#include "testutil.h"
#include "attnlab/dist.h"
#include "attnlab/tensor.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_shard_counts(void **st)
{
    (void)st;
    static const int n[] = {1, 5, 8, 32, 64, 100, 512, 5000}, want[] = {1, 5, 8, 8, 8, 13, 64, 64};
    for (size_t i = 0; i < sizeof n / sizeof *n; i++) assert_int_equal(al_dist_shards(n[i]), want[i]);
    for (int N = 1; N <= 9; N++) {             /* ranks cover [0, S) in order, each shard once */
        int next = 0;
        for (int r = 0; r < N; r++) {
            al_dist d = {r, N, NULL, NULL};
            int j0, j1;
            al_dist_my_shards(&d, 8, &j0, &j1);
            assert_int_equal(j0, next);
            assert_true(j1 >= j0);
            next = j1;
        }
        assert_int_equal(next, 8);
    }
}

enum { P = 1000, S = 8, MAXN = 5 };
typedef struct rank_arg { float (*g)[P]; float result[P]; int failed; } rank_arg;

/* One rank: its shards of g added, then the sum over the ranks into result. */
static void rank_main(const al_dist *d, void *p)
{
    rank_arg *a = p;
    al_gradsum gs;
    memset(&gs, 0, sizeof gs);
    al_error e = {{0}};
    int j0, j1;
    al_dist_my_shards(d, S, &j0, &j1);
    al_gradsum_begin(&gs, P);
    for (int j = j0; j < j1; j++) a->failed |= al_gradsum_add(&gs, a->g[j], &e) != AL_OK;
    a->failed |= al_gradsum_reduce(&gs, d, a->result, &e) != AL_OK;
    al_gradsum_free(&gs);
}

static void sum_on(int N, float (*g)[P], float out[P])
{
    rank_arg *a = calloc((size_t)N, sizeof *a);
    void *args[MAXN];
    for (int r = 0; r < N; r++) { a[r].g = g; args[r] = &a[r]; }
    tu_ranks(N, rank_main, args);
    for (int r = 0; r < N; r++) {
        assert_false(a[r].failed);
        assert_memory_equal(a[r].result, a[0].result, sizeof a[0].result);   /* every rank the same */
    }
    memcpy(out, a[0].result, sizeof a[0].result);
    free(a);
}

static void test_gradient_sum_same_bits_for_any_rank_count(void **st)
{
    (void)st;
    static float g[S][P];
    al_rng r; al_rng_seed(&r, 7, AL_RNG_DATA);
    for (int j = 0; j < S; j++)
        for (int i = 0; i < P; i++) g[j][i] = al_rng_normal(&r) * ldexpf(1.f, (int)al_rng_below(&r, 30) - 20);   /* 2^-20 .. 2^9 */
    static float one[P], other[P];
    sum_on(1, g, one);
    for (int N = 2; N <= MAXN; N++) {
        sum_on(N, g, other);
        assert_memory_equal(one, other, sizeof one);
    }
    double M = 0;
    for (int j = 0; j < S; j++) for (int i = 0; i < P; i++) if (fabs(g[j][i]) > M) M = fabs(g[j][i]);
    for (int i = 0; i < P; i++) {              /* each term rounds by half a unit of 2^-k, k = 56 - e(M) */
        double exact = 0;
        for (int j = 0; j < S; j++) exact += g[j][i];
        int e; frexp(M, &e);
        double tol = S * ldexp(0.5, e - 56) + fabs(exact) * ldexp(1.0, -23);
        if (!(fabs(one[i] - exact) <= tol)) fail_msg("element %d: %.9g, exact %.9g", i, (double)one[i], exact);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shard_counts),
        cmocka_unit_test(test_gradient_sum_same_bits_for_any_rank_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
