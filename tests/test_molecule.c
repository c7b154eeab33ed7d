/* test_molecule.c — molecules: the reader (ESOL's shape, 17 bad inputs with FILE:LINE, splits, budget),
 * smiles_to_graphs.py reproducing the committed file, batches (block-diagonal, no attention across
 * molecules, a batch = the molecules one at a time in outputs and gradients), GATv2's and the
 * readout ops' gradients, fingerprints, and `train --task molecule` (CSV,
 * thread-count independence, 0/1 targets as classification). */
#include "testutil.h"
#include "attnlab/molecule.h"
#include "attnlab/molnet.h"
#include "attnlab/ops.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

/* A small valid file: ethanol (C-C-O), formaldehyde (C=O), a 4-atom aromatic ring with an ion (no
 * target), methane. */
static const char *small =
    "attnlab-molecules 1\n"
    "elements C N O\n"
    "targets y\n"
    "molecules 4\n"
    "mol 0 3 2 -0.5\n"
    "C 1 0 3 0 0\nC 2 0 2 0 0\nO 1 0 1 0 0\n"
    "0 1 1\n1 2 1\n"
    "mol 1 2 1 1.25\n"
    "C 1 0 2 0 0\nO 1 0 0 0 0\n"
    "0 1 2\n"
    "mol 2 5 4 nan\n"
    "C 2 0 1 1 1\nC 2 0 1 1 1\nN 2 0 0 1 1\nC 2 0 1 1 1\nN 0 1 4 0 0\n"
    "0 1 4\n1 2 4\n2 3 4\n0 3 4\n"
    "mol 3 1 0 2.0\n"
    "C 0 0 4 0 0\n";

static void put(const char *name, const char *text) { tu_put(dir, name, text); }

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_mol_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    tu_put_molset(dir, small, NULL, "0\n2\n", "1\n", "3\n");
    return 0;
}
static int teardown(void **st) { (void)st; return tu_rm_rf(dir); }

static void test_esol_shape(void **st)
{
    (void)st;
    char d[4096]; al_error err = {{0}};
    al_molset ms;
    if (al_molset_resolve("esol", d, sizeof d, &err) || al_molset_load(&ms, d, &err)) fail_msg("%s", err.msg);
    assert_int_equal(ms.nmol, 1128);
    assert_int_equal(ms.ntrain, 902); assert_int_equal(ms.nval, 112); assert_int_equal(ms.ntest, 114);
    assert_int_equal(ms.nelem, 9); assert_int_equal(al_mol_nfeat(&ms), 14);
    assert_string_equal(ms.targets[0], "log_solubility");
    assert_int_equal(ms.natoms, 14991);
    assert_int_equal(ms.atom_start[1], 32);                    /* Amigdalin: 32 heavy atoms, 34 bonds */
    assert_int_equal(ms.bond_start[1], 34);
    assert_true(fabsf(ms.y[0] - (-0.77f)) < 1e-6f);
    al_molset_free(&ms);
}

/* The converter reproduces the committed files byte for byte, molecules.txt with and without
 * --coords, and coords.txt (RDKit's depiction; skipped without RDKit). */
static void test_smiles_to_graphs_reproduces(void **st)
{
    (void)st;
    if (tu_system("/usr/bin/python3 -c 'import rdkit' 2>/dev/null") != 0) { skip(); return; }
    char cmd[1024], out[256];
    snprintf(out, sizeof out, "%s/esol.txt", dir);
    snprintf(cmd, sizeof cmd, "R=$(git -C \"$(dirname \"$(readlink -f %s)\")\" rev-parse --show-toplevel) && "
             "$R/scripts/smiles_to_graphs.py $R/datasets/esol/esol.csv %s 2>/dev/null && cmp -s %s $R/datasets/esol/molecules.txt",
             tu_attnlab_bin(), out, out);
    assert_int_equal(tu_system(cmd), 0);
    snprintf(cmd, sizeof cmd, "R=$(git -C \"$(dirname \"$(readlink -f %s)\")\" rev-parse --show-toplevel) && "
             "$R/scripts/smiles_to_graphs.py $R/datasets/esol/esol.csv %s --coords %s/xy.txt 2>/dev/null && "
             "cmp -s %s $R/datasets/esol/molecules.txt && cmp -s %s/xy.txt $R/datasets/esol/coords.txt",
             tu_attnlab_bin(), out, dir, out, dir);
    assert_int_equal(tu_system(cmd), 0);
    /* a SMILES RDKit rejects: the CSV line is named and nothing is written */
    put("bad.csv", "name,smiles,y\na,CCO,1\nb,C1CC,2\n");
    snprintf(cmd, sizeof cmd, "R=$(git -C \"$(dirname \"$(readlink -f %s)\")\" rev-parse --show-toplevel) && "
             "$R/scripts/smiles_to_graphs.py %s/bad.csv %s/bad.txt 2>%s/bad.err; test $? -eq 1 && test ! -e %s/bad.txt && "
             "grep -q 'bad.csv:3: RDKit rejects the SMILES .C1CC.' %s/bad.err", tu_attnlab_bin(), dir, dir, dir, dir, dir);
    assert_int_equal(tu_system(cmd), 0);
}

static void test_small_file(void **st)
{
    (void)st;
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    assert_int_equal(ms.nmol, 4); assert_int_equal(ms.natoms, 11); assert_int_equal(ms.nbonds, 7);
    assert_true(isnan(ms.y[2]));
    assert_int_equal(ms.charge[9], 1); assert_int_equal(ms.hs[9], 4);
    float f[8];
    al_mol_atom_features(&ms, 2, f);   /* O, degree 1, 1 H */
    assert_true(f[0] == 0 && f[1] == 0 && f[2] == 1 && f[3] == 0.25f && fabsf(f[4] - 1.f / 3) < 1e-7f && f[5] == 0 && f[6] == 0 && f[7] == 0);
    al_molset_free(&ms);
}

/* src with line `line` (1-based) replaced by `with` ("" deletes it) into text (2048 bytes). */
static void replace_line(const char *src, int line, const char *with, char *text)
{
    char *o = text; const char *p = src;
    for (int l = 1; *p; l++) {
        const char *e = strchr(p, '\n') + 1;
        if (l == line) { if (*with) o += sprintf(o, "%s\n", with); }
        else { memcpy(o, p, (size_t)(e - p)); o += e - p; }
        p = e;
    }
    *o = 0;
}

/* Replace line `line` (1-based) of the small file by `with` ("" deletes it), load, expect FILE:LINE: msg. */
static void expect_bad(int line, const char *with, const char *want)
{
    char text[2048];
    replace_line(small, line, with, text);
    put("bad.txt", text);
    char path[256]; snprintf(path, sizeof path, "%s/bad.txt", dir);
    al_molset ms; al_error err = {{0}};
    assert_int_equal(al_molset_read(&ms, path, &err), AL_ERR);
    if (!strstr(err.msg, want)) fail_msg("line %d -> '%s': expected '%s' in: %s", line, with, want, err.msg);
    assert_non_null(strstr(err.msg, "bad.txt:"));
    assert_null(ms.atom_start);   /* freed on failure */
}

static void test_bad_inputs(void **st)
{
    (void)st;
    expect_bad(1, "attnlab-molecules 2", "bad.txt:1: not a molecule file");
    expect_bad(2, "elements C N C", "bad.txt:2: element 'C' listed twice");
    expect_bad(4, "molecules 5", "bad.txt:27: file ends, expected 'mol 4");                /* count */
    expect_bad(5, "mol 1 3 2 -0.5", "bad.txt:5: molecule id 1, expected 0");                /* ids */
    expect_bad(6, "Xe 1 0 3 0 0", "bad.txt:6: element 'Xe' is not in the 'elements' line");
    expect_bad(6, "C 1 5 3 0 0", "bad.txt:6: formal charge 5 out of range [-4, 4]");        /* feature ranges */
    expect_bad(7, "C 2 0 2 2 0", "bad.txt:7: aromatic flag 2 out of range [0, 1]");
    expect_bad(9, "0 3 1", "bad.txt:9: bond atom 3 out of range [0, 2]");                   /* ids in bonds */
    expect_bad(9, "1 1 1", "bad.txt:9: atom 1 bonded to itself");
    expect_bad(10, "1 0 1", "bad.txt:10: bond 0-1 listed twice");
    expect_bad(10, "1 2 5", "bad.txt:10: bond type 5 out of range [1, 4]");
    expect_bad(8, "O 2 0 1 0 0", "atom 2 has degree 2 in its atom line but 1 bonds");
    expect_bad(11, "mol 1 2 1 abc", "bad.txt:11: target 'abc' is not a finite number");
    expect_bad(6, "C 1 0 3 0", "bad.txt:6: atom line has 5 fields, expected 6");
    expect_bad(6, "", "bad.txt:8: atom line has 3 fields, expected 6");                   /* an atom line missing */
    expect_bad(3, "", "bad.txt:3: expected 'targets NAME...'");
    expect_bad(11, "", "bad.txt:11: expected 'mol 1");
    /* splits: out of range, duplicates, overlap */
    put("train.idx", "0\n4\n"); al_molset ms; al_error err = {{0}};
    assert_int_equal(al_molset_load(&ms, dir, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "train.idx:2: molecule number 4 out of range [0, 3]"));
    put("train.idx", "0\n1\n"); memset(&err, 0, sizeof err);
    assert_int_equal(al_molset_load(&ms, dir, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "val.idx:1: molecule 1 is also in train.idx (line 2)"));
    put("train.idx", "0\n2\n");
    /* the budget is checked before allocating: a file far above a tiny budget */
    al_mem_budget_set(64);
    memset(&err, 0, sizeof err);
    assert_int_equal(al_molset_load(&ms, dir, &err), AL_ERR);
    assert_non_null(strstr(err.msg, "memory budget"));
    al_mem_budget_set(0);
}

/* coords.txt: names and 2-D coordinates beside the small file; its checks name FILE:LINE. */
static const char *small_xy =
    "attnlab-coords 1\n"
    "molecules 4\n"
    "mol 0 3 ethanol\n0 0\n1.5 0\n2.25 1.299\n"
    "mol 1 2 formaldehyde\n0 0\n1.5 0\n"
    "mol 2 5 ring, with an ion  \n0 0\n1.5 0\n1.5 1.5\n0 1.5\n3 3\n"
    "mol 3 1 methane\n-0.5 0.25\n";

/* coords.txt = small_xy with line `line` replaced by `with` ("" deletes it): the load fails with want. */
static void expect_bad_xy(int line, const char *with, const char *want)
{
    char text[2048];
    replace_line(small_xy, line, with, text);
    put("coords.txt", text);
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err) != AL_ERR) fail_msg("line %d -> '%s': loaded, expected '%s'", line, with, want);
    if (!strstr(err.msg, want) || !strstr(err.msg, "coords.txt:")) fail_msg("line %d -> '%s': expected '%s' in: %s", line, with, want, err.msg);
    assert_null(ms.atom_start);
}

static void test_coords(void **st)
{
    (void)st;
    put("coords.txt", small_xy);
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    assert_string_equal(al_molset_name(&ms, 2), "ring, with an ion");     /* spaces inside kept, trailing cut */
    assert_string_equal(al_molset_name(&ms, 3), "methane");
    assert_true(ms.xy[2 * 10] == -0.5f && ms.xy[2 * 10 + 1] == 0.25f && ms.xy[2 * 2] == 2.25f);
    assert_int_equal(al_molset_find(&ms, "formaldehyde"), 1);
    assert_int_equal(al_molset_find(&ms, "3"), 3);
    assert_int_equal(al_molset_find(&ms, "4"), -1);
    assert_int_equal(al_molset_find(&ms, "ethanol "), -1);
    al_molset_free(&ms);
    static const struct { int line; const char *with, *want; } bad[] = {
        {1, "attnlab-coords 2", "coords.txt:1: not a coordinates file"},
        {2, "molecules 5", "coords.txt:2: 5 molecules, but molecules.txt has 4"},
        {3, "mol 1 3 ethanol", "coords.txt:3: molecule id 1, expected 0"},
        {3, "mol 0 4 ethanol", "coords.txt:3: molecule 0 has 4 atoms here but 3 in molecules.txt"},
        {3, "mol 0 3 ", "coords.txt:3: molecule 0: the name must have 1 to 255 characters"},
        {4, "0 nan", "coords.txt:4: coordinate 'nan' is not a number"},
        {5, "1e9 0", "coords.txt:5: coordinate '1e9' is not a number"},
        {5, "1 2 3", "coords.txt:5: expected 'X Y' (2 fields), got 3"},
        {7, "0 0", "coords.txt:7: expected 'mol 1 ATOMS NAME'"}, /* an atom line too many */
        {17, "-0.5 0.25\n0 0", "coords.txt:18: unexpected line after the 4 molecules"},
        {17, "", "coords.txt: 16 lines, too few for 4 molecules of 11 atoms"}, /* one missing */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) expect_bad_xy(bad[i].line, bad[i].with, bad[i].want);
    char path[256];
    snprintf(path, sizeof path, "%s/coords.txt", dir);
    unlink(path);
}

/* ---------------- readout ops: finite differences ---------------- */
static const int seg_len[3] = {3, 1, 4};
static al_tensor *pool_sum_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_seg_pool(c, t[0], seg_len, 3, 0); }
static al_tensor *pool_mean_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_seg_pool(c, t[0], seg_len, 3, 1); }
static al_tensor *apool_fn(al_ctx *c, al_tensor **t, void *ud) { (void)ud; return al_seg_attn_pool(c, t[0], t[1], seg_len, 3, NULL); }

/* gatv2 over a 5-node pattern with an empty row, a self-loop row and a row of 3 keys */
static const int64_t g2_rowptr[6] = {0, 2, 2, 5, 6, 8};
static int g2_col[8] = {0, 1, 0, 2, 4, 3, 4, 1};
static al_tensor *gatv2_fn(al_ctx *c, al_tensor **t, void *ud)
{
    (void)ud;
    static al_csr A;
    A.rows = A.cols = 5; A.nnz = 8; A.rowptr = (int64_t *)g2_rowptr; A.col = g2_col; A.val = NULL;
    return al_gatv2(c, &A, t[0], t[1], t[2], t[3], 0.2f);
}

static void gatv2_inputs(float *q, float *k, float *a, float *bias)
{
    tu_fill(q, 30, 4, -1, 1); tu_fill(k, 30, 5, -1, 1); tu_fill(a, 6, 6, -1, 1); tu_fill(bias, 16, 7, -0.5f, 0.5f);
}

static void test_gatv2_grads(void **st)
{
    (void)st;
    float q[5 * 6], k[5 * 6], a[2 * 3], bias[2 * 8];
    gatv2_inputs(q, k, a, bias);
    tu_input in[4] = {tu_in(q, 1, 2, 5, 6, 0, 0), tu_in(k, 1, 2, 5, 6, 0, 0), tu_in(a, 1, 2, 2, 3, 0, 0), tu_in(bias, 1, 2, 2, 8, 0, 0)};
    TU_GRADCHECK("gatv2", gatv2_fn, NULL, in, 4, 1e-3, 5e-3);
    /* a row with one key returns that key's value; an empty row returns zeros */
    al_ctx *c = al_ctx_new(1);
    al_tensor *t[4] = {al_wrap(c, q, 2, (int[]){5, 6}), al_wrap(c, k, 2, (int[]){5, 6}), al_wrap(c, a, 2, (int[]){2, 3}), NULL};
    al_tensor *y = gatv2_fn(c, t, NULL);
    assert_non_null(y);
    for (int d = 0; d < 6; d++) { assert_true(y->data[6 + d] == 0.f); assert_true(fabsf(y->data[3 * 6 + d] - k[3 * 6 + d]) < 1e-6f); }
    al_ctx_free(c);
}

/* GATv2 with attention dropout: gradients through the kept coefficients, evaluation = al_gatv2 */
static al_tensor *gatv2_drop_fn(al_ctx *c, al_tensor **t, void *ud)
{
    static al_csr A;
    A.rows = A.cols = 5; A.nnz = 8; A.rowptr = (int64_t *)g2_rowptr; A.col = g2_col; A.val = NULL;
    c->training = 1;
    return al_gatv2_dropout(c, &A, t[0], t[1], t[2], t[3], 0.2f, *(const float *)ud);
}

static void test_gatv2_dropout(void **st)
{
    (void)st;
    float q[5 * 6], k[5 * 6], a[2 * 3], bias[2 * 8];
    gatv2_inputs(q, k, a, bias);
    tu_input in[4] = {tu_in(q, 1, 2, 5, 6, 0, 0), tu_in(k, 1, 2, 5, 6, 0, 0), tu_in(a, 1, 2, 2, 3, 0, 0), tu_in(bias, 1, 2, 2, 8, 0, 0)};
    float p = 0.4f;
    TU_GRADCHECK("gatv2 attention dropout 0.4", gatv2_drop_fn, &p, in, 4, 1e-3, 5e-3);
    /* forward: each output is Σ over kept slots of α/(1-p) k_j; without training, al_gatv2's output */
    al_csr A = {5, 5, 8, (int64_t *)g2_rowptr, g2_col, NULL};
    al_ctx *c = al_ctx_new(3), *c0 = al_ctx_new(3);
    al_tensor *t[4] = {al_wrap(c, q, 2, (int[]){5, 6}), al_wrap(c, k, 2, (int[]){5, 6}), al_wrap(c, a, 2, (int[]){2, 3}), NULL};
    al_tensor *t0[4] = {al_wrap(c0, q, 2, (int[]){5, 6}), al_wrap(c0, k, 2, (int[]){5, 6}), al_wrap(c0, a, 2, (int[]){2, 3}), NULL};
    c->training = 0;
    al_tensor *y_eval = al_gatv2_dropout(c, &A, t[0], t[1], t[2], NULL, 0.2f, 0.9f), *y_ref = al_gatv2(c0, &A, t0[0], t0[1], t0[2], NULL, 0.2f);
    assert_non_null(y_eval); assert_non_null(y_ref);
    assert_memory_equal(y_eval->data, y_ref->data, 30 * sizeof(float));
    c->training = 1;
    al_tensor *y = al_gatv2_dropout(c, &A, t[0], t[1], t[2], NULL, 0.2f, 0.5f);
    assert_non_null(y);
    int differs = 0;
    for (int i = 0; i < 30; i++) {
        assert_true(isfinite(y->data[i]));
        differs |= y->data[i] != y_ref->data[i];
    }
    assert_true(differs);
    for (int d = 0; d < 6; d++) assert_true(y->data[6 + d] == 0.f);   /* the empty row */
    /* a bad probability is an error */
    assert_null(al_gatv2_dropout(c, &A, t[0], t[1], t[2], NULL, 0.2f, 1.0f));
    al_ctx_free(c); al_ctx_free(c0);
}

static void test_readout_grads(void **st)
{
    (void)st;
    float x[8 * 5], s[8 * 2], v[8 * 6];
    tu_fill(x, 40, 1, -1, 1); tu_fill(s, 16, 2, -2, 2); tu_fill(v, 48, 3, -1, 1);
    tu_input in1[1] = {tu_in(x, 1, 2, 8, 5, 0, 0)};
    TU_GRADCHECK("seg_pool sum", pool_sum_fn, NULL, in1, 1, 1e-2, 1e-3);
    TU_GRADCHECK("seg_pool mean", pool_mean_fn, NULL, in1, 1, 1e-2, 1e-3);
    tu_input in2[2] = {tu_in(s, 1, 2, 8, 2, 0, 0), tu_in(v, 1, 2, 8, 6, 0, 0)};
    TU_GRADCHECK("seg_attn_pool", apool_fn, NULL, in2, 2, 1e-2, 2e-3);
    /* forward: the weights of a graph sum to 1, a one-atom graph gives its own value */
    al_ctx *c = al_ctx_new(1);
    al_tensor *w = NULL;
    al_tensor *y = al_seg_attn_pool(c, al_wrap(c, s, 2, (int[]){8, 2}), al_wrap(c, v, 2, (int[]){8, 6}), seg_len, 3, &w);
    assert_non_null(y); assert_non_null(w);
    for (int h = 0; h < 2; h++) {
        double a = w->data[0 * 2 + h] + w->data[1 * 2 + h] + w->data[2 * 2 + h];
        assert_true(fabs(a - 1) < 1e-6);
        for (int d = 0; d < 3; d++) assert_true(fabsf(y->data[1 * 6 + h * 3 + d] - v[3 * 6 + h * 3 + d]) < 1e-6f);
    }
    al_ctx_free(c);
}

/* ---------------- batches ---------------- */
static void test_batch_structure(void **st)
{
    (void)st;
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    al_ctx *c = al_ctx_new(1);
    int ids[3] = {2, 0, 1};
    al_mol_batch b;
    assert_int_equal(al_mol_batch_build(c, &ms, ids, 3, 0, 1, 1, &b), AL_OK);
    assert_int_equal(b.natoms, 10); assert_int_equal(b.start[1], 5); assert_int_equal(b.start[2], 8);
    assert_int_equal(b.bonds.nnz, 10 + 2 * 7);
    /* no slot of either pattern leaves its molecule; the full pattern holds exactly Σ len² */
    int mol_of[10];
    for (int s = 0; s < 3; s++) for (int i = b.start[s]; i < b.start[s + 1]; i++) mol_of[i] = s;
    assert_int_equal(b.full->nnz, 25 + 9 + 4);
    for (int i = 0; i < 10; i++) {
        for (int64_t k = b.full->rowptr[i]; k < b.full->rowptr[i + 1]; k++) assert_int_equal(mol_of[b.full->col[k]], mol_of[i]);
        for (int64_t k = b.bonds.rowptr[i]; k < b.bonds.rowptr[i + 1]; k++) assert_int_equal(mol_of[b.bonds.col[k]], mol_of[i]);
    }
    /* the ring: atom 0 bonds to 1 and 3 (aromatic), distance 2 to atom 2; the ion is not connected */
    assert_int_equal(b.bonds.rowptr[1] - b.bonds.rowptr[0], 3);
    assert_int_equal(b.bond_kind[b.bonds.rowptr[0]], 0);
    assert_int_equal(b.bond_kind[b.bonds.rowptr[0] + 1], 4);
    assert_int_equal(b.full_dist[b.full->rowptr[0] + 2], 2);
    assert_int_equal(b.full_dist[b.full->rowptr[0] + 4], AL_MOL_SPD_MAX + 1);
    assert_true(isnan(b.y[0]) && b.y[1] == -0.5f && b.y[2] == 1.25f);
    assert_int_equal(b.nfeat, 8);
    /* fingerprints: the same molecule gives the same bits, different ones differ */
    float fp[AL_MOL_FP_BITS];
    al_mol_fingerprint(&ms, 0, fp);
    assert_memory_equal(fp, b.fp + AL_MOL_FP_BITS, sizeof fp);
    int on = 0, diff = 0;
    for (int k = 0; k < AL_MOL_FP_BITS; k++) { on += fp[k] != 0; diff += fp[k] != b.fp[k]; }
    assert_true(on >= 3 && on <= 9);   /* 3 atoms × radius 0..2, some identifiers shared */
    assert_true(diff > 0);
    al_ctx_free(c);
    al_molset_free(&ms);
}

/* Outputs and parameter gradients of a batch equal those of the molecules one at a time (sum of the
 * per-molecule gradients), for every model; and changing one molecule's atoms never changes
 * another molecule's output (no attention across molecules, gt-full included). */
static void batch_vs_single(const char *model, al_mol_readout ro)
{
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    al_molnet_config cfg; al_molnet_config_default(&cfg, model, NULL);
    cfg.dim = 8; cfg.heads = 2; cfg.depth = 2; cfg.hidden = 6; cfg.dropout = 0; cfg.readout = ro;
    al_molnet m;
    if (al_molnet_init(&m, &cfg, &ms, 3, &err)) fail_msg("%s", err.msg);
    for (int64_t i = 0; i < m.params.total; i++) m.params.data[i] += 0.05f * (float)((i * 7919) % 13 - 6);   /* non-zero biases */
    const int64_t P = m.params.total;
    float *g_batch = calloc((size_t)P, sizeof(float)), *g_one = calloc((size_t)P, sizeof(float));
    float out[3];
    al_ctx *c = al_ctx_new(1);
    c->training = 0;
    int ids[3] = {2, 0, 1};
    al_mol_batch b;
    al_params_zero_grad(&m.params);
    assert_int_equal(al_mol_batch_build(c, &ms, ids, 3, 0, 1, 1, &b), AL_OK);
    al_tensor *y = al_molnet_forward(c, &m, &b);
    if (!y) fail_msg("%s: %s", model, al_ctx_error(c));
    al_tensor *l = al_mean_tokens(c, al_reshape(c, y, 3, (int[]){1, 3, 1}));
    assert_int_equal(al_backward(c, l), AL_OK);
    for (int s = 0; s < 3; s++) out[s] = y->data[s];
    for (int64_t i = 0; i < P; i++) g_batch[i] = m.params.grad[i];
    for (int s = 0; s < 3; s++) {
        al_ctx_reset(c);
        al_params_zero_grad(&m.params);
        assert_int_equal(al_mol_batch_build(c, &ms, &ids[s], 1, 0, 1, 1, &b), AL_OK);
        al_tensor *y1 = al_molnet_forward(c, &m, &b);
        assert_non_null(y1);
        if (fabsf(y1->data[0] - out[s]) > 1e-5f * (1 + fabsf(out[s]))) fail_msg("%s: molecule %d alone %g, in the batch %g", model, s, y1->data[0], out[s]);
        assert_int_equal(al_backward(c, al_scale(c, y1, 1.f / 3)), AL_OK);
        for (int64_t i = 0; i < P; i++) g_one[i] += m.params.grad[i];
    }
    double e = tu_max_rel_err(g_batch, g_one, P);
    if (e > 1e-4) fail_msg("%s: batch gradient differs from the sum over molecules (rel err %g)", model, e);
    /* perturb molecule 0 (batch slot 1): slots 0 and 2 keep their outputs */
    al_ctx_reset(c);
    assert_int_equal(al_mol_batch_build(c, &ms, ids, 3, 0, 1, 1, &b), AL_OK);
    for (int i = b.start[1]; i < b.start[2]; i++) for (int k = 0; k < b.nfeat; k++) b.x[(int64_t)i * b.nfeat + k] += 0.7f;
    y = al_molnet_forward(c, &m, &b);
    assert_non_null(y);
    assert_true(y->data[0] == out[0] && y->data[2] == out[2]);
    if (strcmp(model, "fingerprint")) assert_true(y->data[1] != out[1]);
    al_ctx_free(c);
    free(g_batch); free(g_one);
    al_molnet_free(&m);
    al_molset_free(&ms);
}

static void test_batch_equals_single(void **st)
{
    (void)st;
    for (int i = 0; i < al_molnet_arch_count(); i++) batch_vs_single(al_molnet_arch_at(i)->name, AL_MOL_READ_SUM);
    batch_vs_single("gt", AL_MOL_READ_MEAN);
    batch_vs_single("gt-full", AL_MOL_READ_ATTN);
    batch_vs_single("gat", AL_MOL_READ_ATTN);
}

/* ---------------- the CLI ---------------- */
/* bin/attnlab ARGS exits rc with one line on stderr that holds text. */
static void expect_cli_error(const char *args, int rc, const char *text)
{
    assert_int_equal(tu_run_cli(dir, args), rc);
    char p[256];
    snprintf(p, sizeof p, "%s/err.txt", dir);
    char *e = tu_slurp(p);
    assert_non_null(e);
    if (!strstr(e, text) || strchr(e, '\n') != e + strlen(e) - 1) fail_msg("expected one line with '%s', got: %s", text, e);
    free(e);
}

static void test_train_cli(void **st)
{
    (void)st;
    char args[1024];
    for (int t = 1; t <= 2; t++) {
        snprintf(args, sizeof args, "train --task molecule --data %s --model gt-full --epochs 4 --dim 8 --heads 2 --seeds 1-2 "
                 "--threads %d --quiet --csv %s/t%d.csv --save %s/w%d.safetensors", dir, t, dir, t, dir, t);
        int rc = tu_run_cli(dir, args);
        if (rc) { char p[128]; snprintf(p, sizeof p, "%s/err.txt", dir); char *e = tu_slurp(p); fail_msg("train exited %d: %s", rc, e ? e : "?"); }
    }
    char p[256];
    snprintf(p, sizeof p, "%s/t1.csv", dir);
    al_results r; al_error err = {{0}};
    if (al_results_read(p, &r, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r.version, 3);
    assert_int_equal(r.n, 2 * 5); assert_int_equal(r.nrun, 2);
    assert_true(r.run[0].complete);
    const al_result_row *f = &r.row[r.run[0].last];
    assert_string_equal(f->task, "molecule"); assert_string_equal(f->model, "gt-full");
    assert_true(isfinite(f->test_rmse) && isfinite(f->test_mae) && f->test_mae <= f->test_rmse + 1e-9);
    assert_true(isnan(f->val_acc) && isnan(f->train_acc));   /* regression: the accuracy columns stay empty */
    assert_true(isnan(f->test_acc) && isnan(f->unseen_acc));
    /* --threads 1 and 2: identical figures and weights */
    al_results r2;
    snprintf(p, sizeof p, "%s/t2.csv", dir);
    if (al_results_read(p, &r2, &err)) fail_msg("%s", err.msg);
    assert_int_equal(r2.n, r.n);
    for (int i = 0; i < r.n; i++) {
        assert_true(r.row[i].test_rmse == r2.row[i].test_rmse);
        assert_true(r.row[i].test_mae == r2.row[i].test_mae);
        assert_true(r.row[i].train_loss == r2.row[i].train_loss || isnan(r.row[i].train_loss));
    }
    al_results_free(&r); al_results_free(&r2);
    size_t n1, n2;
    snprintf(p, sizeof p, "%s/w1-seed2.safetensors", dir); char *w1 = tu_slurp_n(p, &n1);
    snprintf(p, sizeof p, "%s/w2-seed2.safetensors", dir); char *w2 = tu_slurp_n(p, &n2);
    assert_non_null(w1); assert_non_null(w2);
    assert_int_equal(n1, n2); assert_memory_equal(w1, w2, n1);
    free(w1); free(w2);
    /* flags that do not apply, unknown models, bad data: one line, exit 2 / 1 */
    snprintf(args, sizeof args, "train --task molecule --data %s --model gcn --heads 2", dir);
    expect_cli_error(args, 2, "--heads does not apply to --model gcn");
    /* --train-frac: a seeded part of train.idx (2 molecules here: 0.5 keeps one; seed 3 would keep the
     * one without a target, which is an error) */
    snprintf(args, sizeof args, "train --task molecule --data %s --model mlp --epochs 2 --train-frac 0.5 --seed 1", dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *e = tu_slurp(p);
    assert_non_null(strstr(e, "train_size 1 "));
    free(e);
    snprintf(p, sizeof p, "%s/err.txt", dir);
    snprintf(args, sizeof args, "train --task molecule --data %s --model nope", dir);
    assert_int_equal(tu_run_cli(dir, args), 2);
    snprintf(args, sizeof args, "train --task molecule --data %s --model fingerprint --readout attn", dir);
    assert_int_equal(tu_run_cli(dir, args), 2);
    put("molecules.txt", "attnlab-molecules 1\nelements C\ntargets y\nmolecules 1\nmol 0 1 0 x\nC 0 0 4 0 0\n");
    snprintf(args, sizeof args, "train --task molecule --data %s --model mlp --epochs 1", dir);
    assert_int_equal(tu_run_cli(dir, args), 1);
    e = tu_slurp(p);
    assert_non_null(strstr(e, "molecules.txt:5: target 'x' is not a finite number"));
    assert_ptr_equal(strchr(e, '\n'), e + strlen(e) - 1);   /* one line */
    free(e);
    put("molecules.txt", small);
}

/* The value after `key ` in text (train's and eval's result lines), as printed. */
static void field(const char *text, const char *key, char *out, size_t n)
{
    const char *p = text ? strstr(text, key) : NULL;
    if (!p) fail_msg("no '%s' in: %s", key, text ? text : "(null)");
    p += strlen(key);
    while (*p == ' ') p++;
    size_t l = strcspn(p, " \n");
    snprintf(out, n, "%.*s", (int)l, p);
}

/* eval --task molecule: the kept model's test RMSE, MAE and validation RMSE exactly as train printed
 * them (a model kept before the last epoch, attention pooling, a tenth of ESOL's training set: the
 * target standardisation comes from the checkpoint, not from the whole train.idx); the rebuilt model
 * in the library; flags of other tasks and checkpoints of other tasks refused with one line. */
static void test_eval_cli(void **st)
{
    (void)st;
    char args[1024], p[256], a[32], b[32];
    snprintf(args, sizeof args, "train --task molecule --model gt --readout attn --dim 8 --heads 2 --epochs 6 --lr 0.05 "
             "--train-frac 0.1 --seed 1 --quiet --save %s/ev.st", dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *train = tu_slurp(p);
    assert_non_null(strstr(train, "best epoch 5 of 6"));   /* the kept model is not the last one */
    snprintf(args, sizeof args, "eval --load %s/ev.st --quiet", dir);    /* the task from the checkpoint */
    assert_int_equal(tu_run_cli(dir, args), 0);
    char *ev = tu_slurp(p);
    static const char *const keys[3] = {"test_rmse", "test_mae", "val_rmse"};
    for (int k = 0; k < 3; k++) {
        field(train, keys[k], a, sizeof a); field(ev, keys[k], b, sizeof b);
        if (strcmp(a, b)) fail_msg("%s: train printed %s, eval %s", keys[k], a, b);
    }
    assert_non_null(strstr(ev, "model gt ")); assert_non_null(strstr(ev, "test_molecules 114 "));
    free(train); free(ev);
    /* the library: the checkpoint's standardisation, not the dataset's */
    char d[4096]; al_error err = {{0}};
    al_molset ms; al_molnet m;
    if (al_molset_resolve("esol", d, sizeof d, &err) || al_molset_load(&ms, d, &err)) fail_msg("%s", err.msg);
    snprintf(p, sizeof p, "%s/ev.st", dir);
    if (al_molnet_load(p, &ms, &m, NULL, &err)) fail_msg("%s", err.msg);
    assert_int_equal(m.cfg.readout, AL_MOL_READ_ATTN); assert_int_equal(m.cfg.target, 0); assert_int_equal(m.nout, 1);
    al_molnet full;
    al_molnet_config cfg = m.cfg;
    if (al_molnet_init(&full, &cfg, &ms, 1, &err)) fail_msg("%s", err.msg);
    assert_true(m.y_mean != full.y_mean);                /* fitted on the run's tenth of train.idx */
    al_molnet_free(&full); al_molnet_free(&m);
    al_molset_free(&ms);
    snprintf(args, sizeof args, "eval --task molecule --load %s/ev.st --batch 8", dir);
    expect_cli_error(args, 2, "--batch does not apply to molecule checkpoints");
    snprintf(args, sizeof args, "eval --task molecule --load %s/ev.st --model gcn --quiet", dir);
    expect_cli_error(args, 2, "holds a 'gt' model, not 'gcn'");
}

/* predict with a molecule checkpoint: a row per molecule with its coords.txt name (quoted when it
 * holds a comma), the predictions of test.idx's molecules give eval's test RMSE; a file of other
 * elements is renumbered to the model's vocabulary, an unknown element refused; bad arguments. */
static void test_predict_cli(void **st)
{
    (void)st;
    char args[5200], p[256], d[4096];
    al_error err = {{0}};
    al_molset ms;
    if (al_molset_resolve("esol", d, sizeof d, &err) || al_molset_load(&ms, d, &err)) fail_msg("%s", err.msg);
    snprintf(args, sizeof args, "train --task molecule --model gcn --dim 8 --epochs 2 --train-frac 0.1 --quiet --save %s/pr.st", dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    snprintf(args, sizeof args, "eval --load %s/pr.st --quiet", dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *ev = tu_slurp(p), rmse[32];
    field(ev, "test_rmse", rmse, sizeof rmse);
    free(ev);
    snprintf(args, sizeof args, "predict --load %s/pr.st %s --quiet", dir, d);
    assert_int_equal(tu_run_cli(dir, args), 0);
    char *out = tu_slurp(p);
    const char *head = "molecule,name,prediction\n0,Amigdalin,", *head2 = "molecule,name,prediction\n0,,";
    assert_int_equal(strncmp(out, head, strlen(head)), 0);
    assert_non_null(strstr(out, "\n166,\"2,4'-PCB\","));
    double *pred = calloc((size_t)ms.nmol, sizeof *pred);
    int rows = 0;
    for (char *l = strchr(out, '\n') + 1; *l; l = strchr(l, '\n') + 1, rows++) {
        int i = atoi(l);
        const char *last = strchr(l, '\n');
        while (last > l && *last != ',') last--;   /* the prediction is the last field */
        assert_true(i == rows && *last == ',');
        pred[i] = atof(last + 1);
    }
    assert_int_equal(rows, ms.nmol);
    double se = 0;
    for (int k = 0; k < ms.ntest; k++) { double r = pred[ms.test[k]] - ms.y[ms.test[k]]; se += r * r; }
    double want = atof(rmse);
    if (fabs(sqrt(se / ms.ntest) - want) > 1e-4) fail_msg("RMSE of the predictions %.6f, eval %s", sqrt(se / ms.ntest), rmse);
    free(out); free(pred);
    al_molset_free(&ms);
    /* the small file (elements C N O): renumbered, no names without coords.txt */
    snprintf(args, sizeof args, "predict --load %s/pr.st %s/molecules.txt --quiet", dir, dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    out = tu_slurp(p);
    assert_int_equal(strncmp(out, head2, strlen(head2)), 0);
    int n = 0;
    for (char *c = out; *c; c++) n += *c == '\n';
    assert_int_equal(n, 5);
    free(out);
    put("xx.txt", "attnlab-molecules 1\nelements C Xx\ntargets y\nmolecules 1\nmol 0 2 1 0\nC 1 0 3 0 0\nXx 1 0 0 0 0\n0 1 1\n");
    snprintf(args, sizeof args, "predict --load %s/pr.st %s/xx.txt --quiet", dir, dir);
    expect_cli_error(args, 1, "molecule 0 has Xx, which is not among the model's elements (Br C Cl F I N O P S)");
    snprintf(args, sizeof args, "predict --load %s/pr.st %s/xx.txt %s/xx.txt --quiet", dir, dir, dir);
    expect_cli_error(args, 2, "a molecule checkpoint takes one molecules file or directory, got 2");
}

/* A model's element vocabulary renumbers another file's atoms; an element it lacks is refused. */
static void test_use_elements(void **st)
{
    (void)st;
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    float f[20];
    assert_int_equal(al_molset_use_elements(&ms, "C O", &err), AL_ERR);   /* molecule 2 holds N */
    assert_non_null(strstr(err.msg, "molecule 2 has N"));
    assert_int_equal(ms.nelem, 3);                                          /* unchanged */
    assert_int_equal(al_molset_use_elements(&ms, "Br C Cl N O", &err), AL_OK);
    assert_int_equal(ms.nelem, 5); assert_int_equal(al_mol_nfeat(&ms), 10);
    al_mol_atom_features(&ms, 2, f);                                        /* O: one-hot position 4 */
    assert_true(f[4] == 1.f && f[0] == 0.f && f[1] == 0.f);
    al_mol_atom_features(&ms, 0, f);                                        /* C: position 1 */
    assert_true(f[1] == 1.f && f[4] == 0.f);
    assert_int_equal(al_molset_use_elements(&ms, "C C", &err), AL_ERR);
    al_molset_free(&ms);
}

/* A 0/1 target column is a class label: two logits, cross-entropy, accuracies in the CSV. */
static void test_classification(void **st)
{
    (void)st;
    char text[2048], *o = text; const char *p = small;
    static const char *const cls[4] = {" 1", " 0", " nan", " 1"};
    int m = 0;
    for (; *p; ) {
        const char *e = strchr(p, '\n');
        o += sprintf(o, "%.*s", (int)(e - p), p);
        if (!strncmp(p, "targets", 7)) o += sprintf(o, " active");
        if (!strncmp(p, "mol ", 4)) o += sprintf(o, "%s", cls[m++]);
        *o++ = '\n'; p = e + 1;
    }
    *o = 0;
    put("molecules.txt", text);
    al_molset ms; al_error err = {{0}};
    if (al_molset_load(&ms, dir, &err)) fail_msg("%s", err.msg);
    assert_int_equal(ms.ntarget, 2);
    assert_int_equal(ms.binary[0], 0); assert_int_equal(ms.binary[1], 1);
    al_molset_free(&ms);
    char args[1024], path[256];
    snprintf(args, sizeof args, "train --task molecule --data %s --model gcn --target active --epochs 3 --dim 8 --quiet --csv %s/cls.csv", dir, dir);
    assert_int_equal(tu_run_cli(dir, args), 0);
    snprintf(path, sizeof path, "%s/out.txt", dir);
    char *out = tu_slurp(path);
    assert_non_null(strstr(out, "gcn seed 1: test_acc "));
    free(out);
    snprintf(path, sizeof path, "%s/cls.csv", dir);
    al_results r;
    if (al_results_read(path, &r, &err)) fail_msg("%s", err.msg);
    const al_result_row *f = &r.row[r.n - 1];
    assert_string_equal(f->status, "done");
    assert_true(f->test_acc == 0.0 || f->test_acc == 1.0);   /* one test molecule */
    assert_true(f->train_acc >= 0 && f->train_acc <= 1 && isnan(f->test_rmse));
    al_results_free(&r);
    snprintf(args, sizeof args, "train --task molecule --data %s --model gcn --target nope", dir);
    assert_int_equal(tu_run_cli(dir, args), 2);
    put("molecules.txt", small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_esol_shape),
        cmocka_unit_test(test_smiles_to_graphs_reproduces),
        cmocka_unit_test(test_small_file),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_coords),
        cmocka_unit_test(test_readout_grads),
        cmocka_unit_test(test_gatv2_grads),
        cmocka_unit_test(test_gatv2_dropout),
        cmocka_unit_test(test_batch_structure),
        cmocka_unit_test(test_batch_equals_single),
        cmocka_unit_test(test_train_cli),
        cmocka_unit_test(test_classification),
        cmocka_unit_test(test_eval_cli),
        cmocka_unit_test(test_predict_cli),
        cmocka_unit_test(test_use_elements),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
