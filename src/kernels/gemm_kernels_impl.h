/* gemm_kernels_impl.h — the GEMM's register tiles and micro-kernels (internal; included by
 * kernels/gemm.c only): the tile sizes per ISA, the operand modes, one kernel per tile shape and
 * operand mode, and the tables the blocked driver picks a tile's kernel from. They stay in the
 * driver's translation unit: the scalar build's driver, whose every tile takes the same kernel, then
 * calls it directly, specialised to the call (the tables folded away), as when they were in gemm.c.
 */
#ifndef ATTNLAB_GEMM_KERNELS_IMPL_H
#define ATTNLAB_GEMM_KERNELS_IMPL_H
#include "core/simd_impl.h"

/* Register tiles per ISA: MR rows × NV vectors of AL_VL columns. */
#if defined(AL_SIMD_AVX512)
#define NV 2
#define MR 12
#elif defined(AL_SIMD_AVX2)
#define NV 2
#define MR 6
#else
#define NV 8
#define MR 4
#endif
#define GEMM_EDGE (AL_VL > 1)   /* smaller register tiles for the edges of a wide call (below) */
#define NR (NV * AL_VL)

/* Variants, all computing every c_ij by the same chain of FMAs over k (so all give the same bits):
 *   wide    MR × NV vectors;
 *   narrow  one vector wide, for N <= AL_VL (per-head products with head size 16): 2·MR rows when A is
 *           packed or read along contiguous rows of a transposed A, MR rows when read from MR rows.
 * Operands are either packed or read in place (amode/bmode below). Reading in place saves the copy,
 * which costs about as much as the FMAs when the packed sliver would serve only a few kernel calls. */
#define MRX (2 * MR)
#if AL_VL > 1
#define HAVE_NARROW 1
#else
#define HAVE_NARROW 0
#endif
enum { A_PACKED = 0, A_ROWS = 1, A_TRANS = 2 };   /* a(i,k) = a[k·mrk + i] | a[i·lda + k] | a[k·lda + i] */
enum { B_PACKED = 0, B_ROWS = 1 };                /* b(k,j) = b[k·nrk + j] | b[k·ldb + j] */

static inline __attribute__((always_inline)) void
kernel_body(const int mrk, const int nvk, const int amode, const int bmode, int kc,
            const float *restrict a, int lda, const float *restrict b, int ldb,
            float *restrict c /* (mr, nr), ldc */, int ldc, int mr, int nr, float alpha, float beta, int first,
            const float *restrict bias /* (nr) or NULL */)
{
    const int nrk = nvk * AL_VL;
    const size_t astep = amode == A_PACKED ? (size_t)mrk : amode == A_TRANS ? (size_t)lda : 1;
    const size_t bstep = bmode == B_PACKED ? (size_t)nrk : (size_t)ldb;
    al_vf acc[MRX][NV];
    const float *row[MRX];
#pragma GCC unroll 32
    for (int i = 0; i < mrk; i++) {
        row[i] = a + (size_t)i * lda;
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) acc[i][v] = al_v_zero();
    }
    for (int k = 0; k < kc; k++) {
        al_vf bv[NV];
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) bv[v] = al_v_load(b + v * AL_VL);
#pragma GCC unroll 32
        for (int i = 0; i < mrk; i++) {
            al_vf av = al_v_set1(amode == A_ROWS ? row[i][k] : a[i]);
#pragma GCC unroll 8
            for (int v = 0; v < nvk; v++) acc[i][v] = al_v_fma(av, bv[v], acc[i][v]);
        }
        if (amode != A_ROWS) a += astep;
        b += bstep;
    }
    al_vf va = al_v_set1(alpha);
    if (mr == mrk && nr == nrk) {
        al_vf vb = al_v_set1(beta);
#pragma GCC unroll 32
        for (int i = 0; i < mrk; i++)
#pragma GCC unroll 8
            for (int v = 0; v < nvk; v++) {
                float *p = c + (size_t)i * ldc + v * AL_VL;
                al_vf t = al_v_mul(va, acc[i][v]);
                if (!first) t = al_v_add(al_v_load(p), t);
                else if (beta != 0.f) t = al_v_add(t, al_v_mul(vb, al_v_load(bias ? bias + v * AL_VL : p)));
                al_v_store(p, t);
            }
        return;
    }
#if defined(AL_SIMD_AVX512)
    /* Edge tile: the same operations on the live rows, and on the live lanes of each vector (masked
     * loads and stores; IEEE mul/add lane by lane: identical bits) */
    al_vf vb = al_v_set1(beta);
#pragma GCC unroll 32
    for (int i = 0; i < mrk; i++) {
        if (i >= mr) break;
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) {
            const int n = nr - v * AL_VL;
            if (n <= 0) break;
            const al_vm m = al_v_mask(n);
            float *p = c + (size_t)i * ldc + v * AL_VL;
            al_vf t = al_v_mul(va, acc[i][v]);
            if (!first) t = al_v_add(al_v_loadm(m, p), t);
            else if (beta != 0.f) t = al_v_add(t, al_v_mul(vb, al_v_loadm(m, bias ? bias + v * AL_VL : p)));
            al_v_storem(m, p, t);
        }
    }
#else
    /* Edge tile: the same operations, element by element (IEEE mul/add: identical bits; AVX2's masked
     * loads and stores measured slower here) */
    float tmp[MRX * NR];
#pragma GCC unroll 32
    for (int i = 0; i < mrk; i++)
#pragma GCC unroll 8
        for (int v = 0; v < nvk; v++) al_v_store(tmp + i * nrk + v * AL_VL, al_v_mul(va, acc[i][v]));
    for (int i = 0; i < mr; i++)
        for (int j = 0; j < nr; j++) {
            float *p = c + (size_t)i * ldc + j, t = tmp[i * nrk + j];
            if (!first) t = *p + t;
            else if (beta != 0.f) t = t + beta * (bias ? bias[j] : *p);
            *p = t;
        }
#endif
}

/* bias (NULL or the tile's nr columns of a row vector): what the first K block adds (times beta) in place
 * of C's old values, as if every row of C held it. */
typedef void (*kern_fn)(int kc, const float *a, int lda, const float *b, int ldb, float *c, int ldc,
                        int mr, int nr, float alpha, float beta, int first, const float *bias);
#define KERNEL(NAME, MRK, NVK, AMODE, BMODE) \
    static void NAME(int kc, const float *a, int lda, const float *b, int ldb, float *c, int ldc, \
                     int mr, int nr, float alpha, float beta, int first, const float *bias) \
    { kernel_body(MRK, NVK, AMODE, BMODE, kc, a, lda, b, ldb, c, ldc, mr, nr, alpha, beta, first, bias); }
KERNEL(kw_pp, MR, NV, A_PACKED, B_PACKED)
KERNEL(kw_rp, MR, NV, A_ROWS, B_PACKED)
KERNEL(kw_tp, MR, NV, A_TRANS, B_PACKED)
KERNEL(kw_pr, MR, NV, A_PACKED, B_ROWS)
KERNEL(kw_rr, MR, NV, A_ROWS, B_ROWS)
KERNEL(kw_tr, MR, NV, A_TRANS, B_ROWS)
#if HAVE_NARROW
KERNEL(kn_pp, MRX, 1, A_PACKED, B_PACKED)
KERNEL(kn_rp, MR, 1, A_ROWS, B_PACKED)
KERNEL(kn_tp, MRX, 1, A_TRANS, B_PACKED)
KERNEL(kn_pr, MRX, 1, A_PACKED, B_ROWS)
KERNEL(kn_rr, MR, 1, A_ROWS, B_ROWS)
KERNEL(kn_tr, MRX, 1, A_TRANS, B_ROWS)
#endif
/* [narrow][amode][bmode] */
static const kern_fn kernels[1 + HAVE_NARROW][3][2] = {
    {{kw_pp, kw_pr}, {kw_rp, kw_rr}, {kw_tp, kw_tr}},
#if HAVE_NARROW
    {{kn_pp, kn_pr}, {kn_rp, kn_rr}, {kn_tp, kn_tr}},
#endif
};
/* Edge tiles of a wide call: the last rows (fewer than MR) and the last columns (one vector or fewer)
 * run on smaller register tiles instead of a zero-padded MR × NR one. Each c_ij is still the same FMA
 * chain over k: the same bits, with fewer wasted FMAs (the cnn's conv2: 64 rows = 4·12 + 8 + 8, 196
 * columns = 6·32 + 4). [rows: MR, 8, 4][columns: NV vectors, 1][amode][bmode]. */
#if GEMM_EDGE
KERNEL(ke_pp, MR, 1, A_PACKED, B_PACKED)
KERNEL(ke_pr, MR, 1, A_PACKED, B_ROWS)
KERNEL(ke_tp, MR, 1, A_TRANS, B_PACKED)
KERNEL(ke_tr, MR, 1, A_TRANS, B_ROWS)
/* The six operand modes of one register tile: k<name>_pp .. k<name>_tr. */
#define KERNEL_MODES(NAME, MRK, NVK) \
    KERNEL(NAME##_pp, MRK, NVK, A_PACKED, B_PACKED) KERNEL(NAME##_pr, MRK, NVK, A_PACKED, B_ROWS) \
    KERNEL(NAME##_rp, MRK, NVK, A_ROWS, B_PACKED) KERNEL(NAME##_rr, MRK, NVK, A_ROWS, B_ROWS) \
    KERNEL(NAME##_tp, MRK, NVK, A_TRANS, B_PACKED) KERNEL(NAME##_tr, MRK, NVK, A_TRANS, B_ROWS)
KERNEL_MODES(k8w, 8, NV)
KERNEL_MODES(k8n, 8, 1)
KERNEL_MODES(k4w, 4, NV)
KERNEL_MODES(k4n, 4, 1)
static const kern_fn kernels_edge[3][2][3][2] = {
    {{{kw_pp, kw_pr}, {kw_rp, kw_rr}, {kw_tp, kw_tr}}, {{ke_pp, ke_pr}, {kn_rp, kn_rr}, {ke_tp, ke_tr}}},
    {{{k8w_pp, k8w_pr}, {k8w_rp, k8w_rr}, {k8w_tp, k8w_tr}}, {{k8n_pp, k8n_pr}, {k8n_rp, k8n_rr}, {k8n_tp, k8n_tr}}},
    {{{k4w_pp, k4w_pr}, {k4w_rp, k4w_rr}, {k4w_tp, k4w_tr}}, {{k4n_pp, k4n_pr}, {k4n_rp, k4n_rr}, {k4n_tp, k4n_tr}}},
};
#endif
/* The row class of an edge of mr < MR rows, and its rows. */
static inline int edge_class(int mr) { return mr <= 4 ? 2 : mr <= 8 && 8 < MR ? 1 : 0; }
static const int edge_rows[3] = {MR, 8, 4};
/* The kernel of a tile: narrow calls, else the wide call's row class ec and one-vector edge sliver (one). */
static inline kern_fn tile_kernel(int narrow, int ec, int one, int am, int bmode)
{
#if GEMM_EDGE
    if (!narrow) return kernels_edge[ec][one][am][bmode];
#else
    (void)ec; (void)one;
#endif
    return kernels[narrow][am][bmode];
}
/* Rows per tile of a variant. */
static inline int tile_rows(int narrow, int amode) { return narrow && amode != A_ROWS ? MRX : MR; }

#endif
