/* test_attnmap_mol.c — the attention pooling readout of a molecule model over one molecule's atoms
 * (each head's weights sum to 1, the same for any thread count; models without attention pooling
 * refused), its figure (each atom filled with the colour of its weight, single / double / triple bonds
 * as 1 / 2 / 3 lines, aromatic ones as a solid line and a dashed one inside the ring), and
 * attnlab attnmap --molecule end to end (PNG written atomically, one-line errors). */
#include "testutil.h"
#include "attnlab/attnmap.h"
#include "attnlab/io.h"
#include "attnlab/molnet.h"
#include <math.h>
#include <stb/stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

/* ethanol (single bonds), ethyne (triple), ethene (double), benzene (aromatic), laid out flat so that
 * the bonds drawn in the tests are horizontal; benzene's top edge is its bond 1-2. */
static const char *mols =
    "attnlab-molecules 1\nelements C O\ntargets y\nmolecules 4\n"
    "mol 0 3 2 -0.5\nC 1 0 3 0 0\nC 2 0 2 0 0\nO 1 0 1 0 0\n0 1 1\n1 2 1\n"
    "mol 1 2 1 0.5\nC 1 0 1 0 0\nC 1 0 1 0 0\n0 1 3\n"
    "mol 2 2 1 1.5\nC 1 0 2 0 0\nC 1 0 2 0 0\n0 1 2\n"
    "mol 3 6 6 -2\nC 2 0 1 1 1\nC 2 0 1 1 1\nC 2 0 1 1 1\nC 2 0 1 1 1\nC 2 0 1 1 1\nC 2 0 1 1 1\n"
    "0 1 4\n1 2 4\n2 3 4\n3 4 4\n4 5 4\n0 5 4\n";
static const char *coords =
    "attnlab-coords 1\nmolecules 4\n"
    "mol 0 3 ethanol\n0 0\n1.5 0\n3 0\n"
    "mol 1 2 ethyne\n0 0\n1.5 0\n"
    "mol 2 2 ethene\n0 0\n1.5 0\n"
    "mol 3 6 benzene\n1.5 0\n0.75 1.299\n-0.75 1.299\n-1.5 0\n-0.75 -1.299\n0.75 -1.299\n";

static int setup(void **st)
{
    (void)st;
    snprintf(dir, sizeof dir, "/tmp/attnlab_attnmol_XXXXXX");
    if (!mkdtemp(dir)) return -1;
    tu_put_molset(dir, mols, coords, "0\n1\n", "2\n", "3\n");
    return 0;
}
static int teardown(void **st) { (void)st; return tu_rm_rf(dir); }

static void load_set(al_molset *ms)
{
    al_error e = {{0}};
    if (al_molset_load(ms, dir, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_non_null(ms->xy);
}

static void model(al_molnet *m, const al_molset *ms, const char *name, al_mol_readout r)
{
    al_molnet_config cfg; al_error e = {{0}};
    al_molnet_config_default(&cfg, name, NULL);
    cfg.dim = 8; cfg.heads = 2; cfg.depth = 1; cfg.hidden = 4; cfg.readout = r;
    if (al_molnet_init(m, &cfg, ms, 3, &e) != AL_OK) fail_msg("%s", e.msg);
}

/* Every head's weights over every molecule's atoms: non-negative, summing to 1, bitwise the same on
 * 1 and 2 threads; sum and mean readouts and the mlp refused. */
static void test_weights(void **st)
{
    (void)st;
    al_molset ms; load_set(&ms);
    al_error e = {{0}};
    static const char *const names[2] = {"gt", "gat"};
    for (int k = 0; k < 2; k++) {
        al_molnet m; model(&m, &ms, names[k], AL_MOL_READ_ATTN);
        for (int mol = 0; mol < ms.nmol; mol++) {
            const int n = (int)(ms.atom_start[mol + 1] - ms.atom_start[mol]);
            float w1[2 * 6], w2[2 * 6], p1, p2;
            al_set_threads(1);
            if (al_mol_attnmap(&m, &ms, mol, w1, &p1, &e) != AL_OK) fail_msg("%s", e.msg);
            al_set_threads(2);
            if (al_mol_attnmap(&m, &ms, mol, w2, &p2, &e) != AL_OK) fail_msg("%s", e.msg);
            assert_memory_equal(w1, w2, sizeof(float) * 2 * (size_t)n);
            assert_true(p1 == p2 && isfinite(p1));
            for (int h = 0; h < 2; h++) {
                double s = 0;
                for (int i = 0; i < n; i++) { assert_true(w1[h * n + i] >= 0.f); s += w1[h * n + i]; }
                if (fabs(s - 1.0) > 1e-5) fail_msg("%s molecule %d head %d: weights sum to %.7f", names[k], mol, h, s);
            }
        }
        assert_null(m.pool_weights);
        assert_int_equal(m.capture, 0);
        al_molnet_free(&m);
    }
    float w[12];
    al_molnet m; model(&m, &ms, "gt", AL_MOL_READ_SUM);
    assert_int_equal(al_mol_attnmap(&m, &ms, 0, w, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "'gt' model with the sum readout has no attention pooling"));
    al_molnet_free(&m);
    model(&m, &ms, "mlp", AL_MOL_READ_SUM);
    assert_int_equal(al_mol_attnmap(&m, &ms, 0, w, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no attention pooling"));
    al_molnet_free(&m);
    al_molset_free(&ms);
}

static const uint8_t ink[3] = {25, 25, 25};
static int dark(const uint8_t *rgb, int W, int x, int y) { return !memcmp(rgb + ((size_t)y * W + x) * 3, ink, 3); }

/* Runs of bond ink crossing the vertical through x between y0 and y1. */
static int runs(const uint8_t *rgb, int W, int x, int y0, int y1)
{
    int k = 0, prev = 0;
    for (int y = y0; y <= y1; y++) { int d = dark(rgb, W, x, y); k += d && !prev; prev = d; }
    return k;
}

/* Molecule mol drawn with weights w (2 heads): the atoms' colours, and per bond the lines crossing the
 * middle of bond a-b (horizontal) of panel 0; returns the figure. */
static uint8_t *draw(const al_molset *ms, int mol, const float *w, int *W, int *H)
{
    al_attnmap_mol_fig f = {ms, mol, 2, w, "title", "note", 60};
    uint8_t *rgb; al_error e = {{0}};
    if (al_attnmap_mol_render(&f, &rgb, W, H, &e) != AL_OK) fail_msg("%s", e.msg);
    const int n = (int)(ms->atom_start[mol + 1] - ms->atom_start[mol]);
    for (int h = 0; h < 2; h++) {
        float mx = 0;
        for (int i = 0; i < n; i++) if (w[h * n + i] > mx) mx = w[h * n + i];
        for (int i = 0; i < n; i++) {
            int x, y, w2, h2;
            assert_int_equal(al_attnmap_mol_atom(&f, h, i, &x, &y, &w2, &h2, &e), AL_OK);
            assert_true(w2 == *W && h2 == *H);
            uint8_t want[3];
            al_attnmap_color(w[h * n + i] / mx, want);
            const uint8_t *got = rgb + ((size_t)y * *W + x + 6) * 3;   /* inside the circle, right of the symbol */
            if (memcmp(got, want, 3)) fail_msg("molecule %d head %d atom %d: colour %d,%d,%d, want %d,%d,%d", mol, h, i,
                                               got[0], got[1], got[2], want[0], want[1], want[2]);
        }
    }
    return rgb;
}

static int bond_runs(const al_molset *ms, int mol, const float *w, int a, int b)
{
    int W, H, xa, ya, xb, yb, w2, h2;
    al_error e = {{0}};
    uint8_t *rgb = draw(ms, mol, w, &W, &H);
    al_attnmap_mol_fig f = {ms, mol, 2, w, "title", "note", 60};
    al_attnmap_mol_atom(&f, 0, a, &xa, &ya, &w2, &h2, &e);
    al_attnmap_mol_atom(&f, 0, b, &xb, &yb, &w2, &h2, &e);
    assert_int_equal(ya, yb);
    int k = runs(rgb, W, (xa + xb) / 2, ya - 9, ya + 9);
    free(rgb);
    return k;
}

static void test_figure(void **st)
{
    (void)st;
    al_molset ms; load_set(&ms);
    const float w3[6] = {0.2f, 0.5f, 0.3f, 1.f / 3, 1.f / 3, 1.f / 3}, w2[4] = {0.25f, 0.75f, 0.5f, 0.5f};
    const float w6[12] = {0.1f, 0.1f, 0.1f, 0.2f, 0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
    assert_int_equal(bond_runs(&ms, 0, w3, 0, 1), 1);   /* single */
    assert_int_equal(bond_runs(&ms, 1, w2, 0, 1), 3);   /* triple */
    assert_int_equal(bond_runs(&ms, 2, w2, 0, 1), 2);   /* double */
    /* aromatic: benzene's top edge (atoms 1, 2): a solid line above, a dashed one below, inside the ring */
    int W, H, x1, y1, x2, y2, ww, hh;
    uint8_t *rgb = draw(&ms, 3, w6, &W, &H);
    al_attnmap_mol_fig f = {&ms, 3, 2, w6, "title", "note", 60};
    al_error e = {{0}};
    al_attnmap_mol_atom(&f, 0, 1, &x1, &y1, &ww, &hh, &e);
    al_attnmap_mol_atom(&f, 0, 2, &x2, &y2, &ww, &hh, &e);
    assert_int_equal(y1, y2);
    int solid = 0, dashed = 0, len = 0;
    for (int x = x2 + 14; x <= x1 - 14; x++, len++) {   /* between the circles */
        int up = 0, down = 0;
        for (int dy = -4; dy <= -1; dy++) up |= dark(rgb, W, x, y1 + dy);
        for (int dy = 2; dy <= 6; dy++) down |= dark(rgb, W, x, y1 + dy);
        solid += up; dashed += down;
    }
    assert_int_equal(solid, len);
    if (dashed < len / 4 || dashed > 3 * len / 4) fail_msg("dashed line covers %d of %d pixels", dashed, len);
    free(rgb);
    /* a molecule without coordinates, or heads out of range: refused */
    float *xy = ms.xy; ms.xy = NULL;
    uint8_t *none;
    assert_int_equal(al_attnmap_mol_render(&f, &none, &W, &H, &e), AL_ERR);
    ms.xy = xy;
    f.heads = 0;
    assert_int_equal(al_attnmap_mol_render(&f, &none, &W, &H, &e), AL_ERR);
    al_molset_free(&ms);
}

/* ---------------- through bin/attnlab ---------------- */
static int run(const char *args, char *err, size_t n) { return tu_run_cli_err(dir, args, err, n); }

static void test_cli(void **st)
{
    (void)st;
    char args[2100], err[2048], p[256];
    snprintf(args, sizeof args, "train --task molecule --data %s --model gt --readout attn --dim 8 --heads 2 --depth 1 --epochs 2 "
             "--quiet --save %s/gt.st", dir, dir);
    assert_int_equal(run(args, err, sizeof err), 0);
    snprintf(args, sizeof args, "train --task molecule --data %s --model gt --dim 8 --heads 2 --depth 1 --epochs 1 --quiet "
             "--save %s/sum.st", dir, dir);
    assert_int_equal(run(args, err, sizeof err), 0);
    snprintf(args, sizeof args, "attnmap --load %s/gt.st --data %s --molecule benzene --threads 1 --out %s/map.png", dir, dir, dir);
    if (run(args, err, sizeof err)) fail_msg("attnmap: %s", err);
    assert_non_null(strstr(err, "head 2: weight"));
    snprintf(p, sizeof p, "%s/out.txt", dir);
    char *out = tu_slurp(p);
    assert_non_null(strstr(out, "model gt, molecule 3 (benzene), 6 atoms, 2 heads"));
    free(out);
    snprintf(p, sizeof p, "%s/map.png", dir);
    int W, H, C;
    uint8_t *png = stbi_load(p, &W, &H, &C, 3);
    assert_non_null(png);
    al_molset ms; load_set(&ms);
    float w[12] = {0};
    al_attnmap_mol_fig f = {&ms, 3, 2, w, NULL, NULL, 40};
    int x, y, fw, fh;
    al_error e = {{0}};
    assert_int_equal(al_attnmap_mol_atom(&f, 1, 0, &x, &y, &fw, &fh, &e), AL_OK);
    assert_true(W >= fw && H > fh);   /* the panels, plus the molecule's title and the prediction's line */
    stbi_image_free(png);
    al_molset_free(&ms);
    assert_int_equal(tu_tmp_files(dir), 0);
    /* errors: one line, a non-zero status, and map.png left as it was */
    struct stat before; assert_int_equal(stat(p, &before), 0);
    snprintf(args, sizeof args, "%s/nocoords", dir);
    mkdir(args, 0700);
    tu_put_molset(args, mols, NULL, "0\n", "1\n", "2\n");
    struct { const char *args, *want; int rc; } bad[] = {
        {"--load %s/gt.st --data %s --molecule nope", "--molecule 'nope': no molecule of that name in", 2},
        {"--load %s/gt.st --data %s --molecule 4", "nor a number in 0..3", 2},
        {"--load %s/sum.st --data %s --molecule ethanol", "'gt' model with the sum readout has no attention pooling to draw", 1},
        {"--load %s/gt.st", "a molecule checkpoint needs --molecule NAME|NUMBER", 2},
        {"--load %s/gt.st --molecule 0 --queries 1:1", "--queries does not apply to the molecule model", 2},
        {"--load %s/gt.st --molecule 0 --sentence x", "--sentence does not apply to the molecule model", 2},
        {"--load %s/gt.st --molecule 0 --data %s/nocoords", "has no coords.txt", 1},
        {"--load tests/bad-inputs/ckpt/image-ok.safetensors --molecule 0", "--molecule applies to molecule checkpoints", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char a[1024];
        snprintf(a, sizeof a, bad[i].args, dir, dir, dir);
        snprintf(args, sizeof args, "attnmap %s --threads 1 --out %s/map.png", a, dir);
        int rc = run(args, err, sizeof err);
        if (rc != bad[i].rc || !strstr(err, bad[i].want) || strchr(err, '\n') != err + strlen(err) - 1)
            fail_msg("'%s': exit %d (want %d), stderr '%s' (want one line with '%s')", a, rc, bad[i].rc, err, bad[i].want);
        struct stat now; assert_int_equal(stat(p, &now), 0);
        assert_true(now.st_size == before.st_size && now.st_mtim.tv_sec == before.st_mtim.tv_sec &&
                    now.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    }
    assert_int_equal(tu_tmp_files(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_figure),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
