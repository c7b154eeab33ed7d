/* test_attention_grad.c — finite-difference gradient checks of al_attention (and of the reference)
 * for q, k, v, rel_bias, a_q / a_k and bias, on every pattern, both scores and both normalisers. */
#include "test_attention_util.h"
#include <stdio.h>

typedef struct gc_ud { const acase *a; int map[IN_COUNT]; int nin; int ref; } gc_ud;

static al_tensor *gc_fn(al_ctx *c, al_tensor **t, void *p)
{
    gc_ud *u = p;
    al_tensor *x[IN_COUNT] = {0};
    for (int i = 0; i < IN_COUNT; i++) if (u->map[i] >= 0) x[i] = t[u->map[i]];
    al_attn_desc d = acase_desc(u->a, NULL);
    return (u->ref ? al_attention_ref : al_attention)(c, &d, x[IN_Q], x[IN_K], x[IN_V], x[IN_AQ], x[IN_AK],
                                                      x[IN_REL], x[IN_BIAS]);
}

/* Move every score away from the kinks at 0 (LeakyReLU of the additive score, the ReLU
 * normaliser) by more than any ±eps perturbation can move it: a central difference across a
 * kink is not a derivative. Both sides of each kink are still visited (random signs).
 * additive: a_k[h][0] = 1 and |k[..][0]| ≥ 0.5 dominate u = a_q·q + a_k·k (|u| ≥ 0.25), and u
 * varies over the keys, so the softmax over keys still depends on q and k;
 * relu: bias = ±(2 + |b|) dominates the rest of the score (|s| ≥ 0.5). */
static void kink_safe(const acase *a, float *data[IN_COUNT])
{
    int64_t nq = (int64_t)a->B * a->H * a->N * a->D;
    if (a->additive) {
        for (int h = 0; h < a->H; h++)
            for (int d = 0; d < a->D; d++) {
                data[IN_AK][h * a->D + d] = d == 0 ? 1.0f : 0.1f * data[IN_AK][h * a->D + d];
                data[IN_AQ][h * a->D + d] *= 0.1f;
            }
        for (int64_t r = 0; r < nq; r += a->D) {
            float x = data[IN_K][r];
            data[IN_K][r] = x < 0 ? x - 0.5f : x + 0.5f;
        }
    }
    if (a->relu) {
        int64_t nb = al_pattern_slots(&a->pat, a->N) * a->H;
        for (int64_t x = 0; x < nb; x++) { float b = data[IN_BIAS][x]; data[IN_BIAS][x] = b < 0 ? b - 2.0f : b + 2.0f; }
        if (data[IN_REL]) for (int64_t x = 0; x < (int64_t)a->H * al_pattern_offsets(&a->pat); x++) data[IN_REL][x] *= 0.1f;
        if (!a->additive) for (int64_t x = 0; x < nq; x++) { data[IN_Q][x] *= 0.3f; data[IN_K][x] *= 0.3f; }
    }
}

/* Gradient check of every present input of case a. */
static void gradcheck_case(const acase *a, int ref, double tol, const char *what)
{
    float *data[IN_COUNT];
    acase_inputs(a, data);
    kink_safe(a, data);
    gc_ud u = {a, {0}, 0, ref};
    tu_input in[IN_COUNT];
    for (int i = 0; i < IN_COUNT; i++) {
        u.map[i] = -1;
        if (!data[i]) continue;
        int nd, sh[4] = {1, 1, 1, 1};
        acase_shape(a, i, &nd, sh);
        in[u.nin] = tu_in(data[i], 1, nd, sh[0], sh[1], sh[2], sh[3]);
        u.map[i] = u.nin++;
    }
    TU_GRADCHECK(what, gc_fn, &u, in, u.nin, 1e-2, tol);
    acase_free_inputs(data);
}

static acase small_case(int kind, const al_csr *g)
{
    acase a = {0};
    a.B = 2; a.H = 2; a.N = 6; a.D = 3; a.Dv = 2; a.slope = 0.2f; a.use_bias = 1; a.seed = 11 + (uint64_t)kind;
    switch (kind) {
    case AL_PAT_FULL: a.pat = al_pattern_full(); break;
    case AL_PAT_WINDOW2D: a.pat = al_pattern_window2d(2, 3, 3, 3); a.use_rel = 1; break;
    case AL_PAT_WINDOW1D: a.pat = al_pattern_window1d(1); a.use_rel = 1; break;
    default: a.pat = al_pattern_graph(g); break;
    }
    return a;
}

static void test_gradcheck_softmax(void **st)
{
    (void)st;
    al_csr g = rand_graph(6, 0.4, 1, 5, 3);
    for (int kind = 0; kind < 4; kind++)
        for (int score = 0; score < 2; score++) {
            acase a = small_case(kind, &g);
            a.additive = score;
            char what[64];
            snprintf(what, sizeof what, "softmax pattern %d score %d", kind, score);
            gradcheck_case(&a, 0, 1e-2, what);
        }
    al_csr_free(&g);
}

/* ReLU normaliser (scores kept away from the kink, see kink_safe). */
static void test_gradcheck_relu(void **st)
{
    (void)st;
    al_csr g = rand_graph(6, 0.4, 1, -1, 4);
    for (int kind = 0; kind < 4; kind++)
        for (int score = 0; score < 2; score++) {
            acase a = small_case(kind, &g);
            a.additive = score; a.relu = 1;
            a.seed = 500 + (uint64_t)(kind * 2 + score);
            char what[64];
            snprintf(what, sizeof what, "relu pattern %d score %d", kind, score);
            gradcheck_case(&a, 0, 1e-2, what);
        }
    al_csr_free(&g);
}

/* Dropout active: the mask is the same in every evaluation (restored RNG), so the op is smooth. */
static void test_gradcheck_dropout(void **st)
{
    (void)st;
    acase a = small_case(AL_PAT_FULL, NULL);
    a.dropout = 0.25f; a.N = 7;
    gradcheck_case(&a, 0, 1e-2, "full softmax dropout");
    a = small_case(AL_PAT_WINDOW2D, NULL);
    a.dropout = 0.25f; a.additive = 1;
    gradcheck_case(&a, 0, 1e-2, "window2d additive dropout");
}

/* Full dot-product softmax with D = Dv = 16: the query-in-lanes kernels (attention_full16.c),
 * forward and the per-head backward (B·H = 4), on N = 19 (one full and one partial query block). */
static void test_gradcheck_full_d16(void **st)
{
    (void)st;
    acase a = {0};
    a.pat = al_pattern_full();
    a.B = 2; a.H = 2; a.N = 19; a.D = 16; a.Dv = 16; a.seed = 61;
    gradcheck_case(&a, 0, 1e-2, "full d16");
}

/* The reference has its own backward: check it too (it is what the fast kernels are held to). */
static void test_gradcheck_reference(void **st)
{
    (void)st;
    al_csr g = rand_graph(6, 0.4, 1, 5, 3);
    for (int kind = 0; kind < 4; kind++) {
        acase a = small_case(kind, &g);
        a.additive = kind & 1;
        gradcheck_case(&a, 1, 1e-2, "reference");
    }
    al_csr_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradcheck_softmax),
        cmocka_unit_test(test_gradcheck_relu),
        cmocka_unit_test(test_gradcheck_full_d16),
        cmocka_unit_test(test_gradcheck_dropout),
        cmocka_unit_test(test_gradcheck_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
