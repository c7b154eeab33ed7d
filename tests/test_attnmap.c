/* test_attnmap.c — attention maps: the weights scattered onto the grid (window support, offset
 * orientation, full attention), the rendered figure (layout, zero outside the window), and
 * attnlab attnmap end to end on a tiny image folder (PNG size, pixels, error cases). */
#include "testutil.h"
#include "attnlab/attnmap.h"
#include "attnlab/io.h"
#include "attnlab/models.h"
#include "attnlab/checkpoint.h"
#include "attnlab/train.h"
#include <math.h>
#include <stb/stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { IMG = 8, NTOK = IMG * IMG, HEADS = 2, WIN = 3 };

static char tmpdir[64];
static int setup(void **st) { (void)st; snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_attnmap_XXXXXX"); return mkdtemp(tmpdir) ? 0 : -1; }
static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A tiny 1×8×8 model, one token per pixel (8×8 grid), 2 heads, 2 blocks. */
static void tiny_model(al_model *m, const char *name, al_pos_kind pos, uint64_t seed)
{
    al_model_config cfg; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, name, 1, IMG, IMG, 2, &e), AL_OK);
    if (strcmp(name, "cnn")) {
        cfg.dim = 8; cfg.heads = HEADS; cfg.hidden = 16; cfg.depth = 2; cfg.patch = 1; cfg.window = WIN;
        cfg.pos = pos;
    }
    if (al_model_init(m, &cfg, seed, &e) != AL_OK) fail_msg("model init: %s", e.msg);
}

static void image_of(int k, uint8_t *pix /* (IMG·IMG) */, float *x /* (IMG·IMG) or NULL */)
{
    for (int i = 0; i < NTOK; i++) {
        pix[i] = (uint8_t)((i * 37 + k * 91 + (i / IMG) * (k + 3) * 11) & 0xff);
        if (x) x[i] = (pix[i] / 255.f - 0.5f) / 0.25f;
    }
}

static int in_window(int q, int key, int win)
{
    int r = win / 2;
    return abs(q / IMG - key / IMG) <= r && abs(q % IMG - key % IMG) <= r;
}

/* ---------------------------------------------------------------- compute */

static void test_local_window_support(void **st)
{
    (void)st;
    al_model m; tiny_model(&m, "local", AL_POS_RELATIVE, 3);
    uint8_t pix[NTOK]; float x[NTOK];
    image_of(1, pix, x);
    int q[5] = {0, 7, 3 * IMG + 4, 5 * IMG, NTOK - 1};   /* corners, centre, an edge */
    float maps[5 * HEADS * NTOK];
    al_error e = {{0}};
    for (int layer = -1; layer <= 1; layer++) {
        int pred = -1;
        if (al_attnmap_compute(&m, x, layer, q, 5, maps, &pred, &e) != AL_OK) fail_msg("%s", e.msg);
        assert_true(pred == 0 || pred == 1);
        assert_int_equal(m.capture_attn, 0);
        for (int i = 0; i < 5; i++)
            for (int h = 0; h < HEADS; h++) {
                const float *mp = maps + ((size_t)i * HEADS + h) * NTOK;
                double sum = 0;
                for (int j = 0; j < NTOK; j++) {
                    if (in_window(q[i], j, WIN)) {
                        if (!(mp[j] > 0.f)) fail_msg("layer %d query %d head %d: key %d inside the window has weight %g", layer, q[i], h, j, mp[j]);
                    } else if (mp[j] != 0.f) fail_msg("layer %d query %d head %d: key %d outside the window has weight %g", layer, q[i], h, j, mp[j]);
                    sum += mp[j];
                }
                if (fabs(sum - 1.0) > 1e-5) fail_msg("query %d head %d: weights sum to %.7f", q[i], h, sum);
            }
    }
    /* the layout comes from the block's pattern, not from the model's name: under another name the
     * window model's maps are the same */
    float again[5 * HEADS * NTOK];
    snprintf(m.cfg.name, sizeof m.cfg.name, "%s", "windowed");
    if (al_attnmap_compute(&m, x, 1, q, 5, again, NULL, &e) != AL_OK) fail_msg("renamed: %s", e.msg);
    assert_memory_equal(again, maps, sizeof maps);
    al_model_free(&m);
}

/* A relative bias that dominates one window offset must put the peak at query + that offset: checks
 * the scatter's orientation, for the local window and for sa's whole-grid relative window. */
static void spike(al_model *m, int head, int off)
{
    for (int b = 0; b < m->cfg.depth; b++) {
        al_tensor *rel = m->blocks[b].rel;   /* (H, offsets) */
        assert_non_null(rel);
        rel->data[(size_t)head * rel->shape[1] + off] = 40.f;
    }
}
static int argmax(const float *v, int n) { int b = 0; for (int i = 1; i < n; i++) if (v[i] > v[b]) b = i; return b; }

static void test_offsets_land_where_they_should(void **st)
{
    (void)st;
    float x[NTOK], maps[HEADS * NTOK];
    uint8_t pix[NTOK];
    image_of(2, pix, x);
    al_error e = {{0}};
    /* local, window 3: head 0 → (dy, dx) = (+1, 0), head 1 → (0, −1) */
    al_model m; tiny_model(&m, "local", AL_POS_RELATIVE, 4);
    spike(&m, 0, (1 + 1) * WIN + (0 + 1));
    spike(&m, 1, (0 + 1) * WIN + (-1 + 1));
    int q = 3 * IMG + 4;
    assert_int_equal(al_attnmap_compute(&m, x, -1, &q, 1, maps, NULL, &e), AL_OK);
    assert_int_equal(argmax(maps, NTOK), 4 * IMG + 4);
    assert_int_equal(argmax(maps + NTOK, NTOK), 3 * IMG + 3);
    assert_true(maps[4 * IMG + 4] > 0.99f);
    al_model_free(&m);
    /* sa with relative positions: a (2·8−1)² window; head 1 → (dy, dx) = (−2, +3) */
    tiny_model(&m, "sa", AL_POS_RELATIVE, 5);
    int R = IMG - 1, W2 = 2 * IMG - 1;
    spike(&m, 1, (-2 + R) * W2 + (3 + R));
    q = 4 * IMG + 2;
    assert_int_equal(al_attnmap_compute(&m, x, 0, &q, 1, maps, NULL, &e), AL_OK);
    assert_int_equal(argmax(maps + NTOK, NTOK), 2 * IMG + 5);
    double sum = 0;
    for (int j = 0; j < NTOK; j++) { sum += maps[j]; assert_true(maps[j] > 0.f); }   /* head 0: every key */
    assert_true(fabs(sum - 1.0) < 1e-5);
    al_model_free(&m);
}

static void test_full_attention(void **st)
{
    (void)st;
    al_model m; tiny_model(&m, "sa", AL_POS_LEARNED, 6);
    float x[NTOK], maps[2 * HEADS * NTOK];
    uint8_t pix[NTOK];
    image_of(3, pix, x);
    int q[2] = {0, 45};
    al_error e = {{0}};
    assert_int_equal(al_attnmap_compute(&m, x, -1, q, 2, maps, NULL, &e), AL_OK);
    for (int r = 0; r < 2 * HEADS; r++) {
        double sum = 0;
        for (int j = 0; j < NTOK; j++) { assert_true(maps[r * NTOK + j] > 0.f); sum += maps[r * NTOK + j]; }
        assert_true(fabs(sum - 1.0) < 1e-5);
    }
    /* no query/key projection in the last block: every score is 0, every weight 1/N */
    al_block_params *p = &m.blocks[m.cfg.depth - 1];
    memset(p->qkv_w->data, 0, (size_t)p->qkv_w->numel * sizeof(float));
    memset(p->qkv_b->data, 0, (size_t)p->qkv_b->numel * sizeof(float));
    assert_int_equal(al_attnmap_compute(&m, x, -1, q, 2, maps, NULL, &e), AL_OK);
    for (int j = 0; j < 2 * HEADS * NTOK; j++) if (fabsf(maps[j] - 1.f / NTOK) > 1e-6f) fail_msg("slot %d: %g, not 1/%d", j, maps[j], NTOK);
    al_model_free(&m);
}

static void test_compute_errors(void **st)
{
    (void)st;
    float x[NTOK] = {0}, maps[HEADS * NTOK];
    int q = 0;
    al_error e = {{0}};
    al_model m; tiny_model(&m, "cnn", AL_POS_NONE, 1);
    assert_int_equal(al_attnmap_compute(&m, x, -1, &q, 1, maps, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no attention"));
    al_model_free(&m);
    tiny_model(&m, "local", AL_POS_RELATIVE, 1);
    memset(&e, 0, sizeof e);
    assert_int_equal(al_attnmap_compute(&m, x, 2, &q, 1, maps, NULL, &e), AL_ERR);   /* blocks 0 and 1 only */
    assert_non_null(strstr(e.msg, "layer 3"));
    memset(&e, 0, sizeof e);
    q = NTOK;
    assert_int_equal(al_attnmap_compute(&m, x, -1, &q, 1, maps, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "outside"));
    al_model_free(&m);
}

/* ---------------------------------------------------------------- render */

/* Every pixel of a local model's heat map whose token lies outside the query's window has the colour
 * of weight 0; the window's strongest token (unless it is the outlined query) has the colour of 1. */
static void check_local_panels(const uint8_t *rgb, int W, const al_attnmap_fig *f, int model, const int *qtok, int check_max)
{
    uint8_t c0[3], c1[3];
    al_attnmap_color(0.f, c0); al_attnmap_color(1.f, c1);
    al_error e = {{0}};
    const al_attnmap_model *mm = &f->models[model];
    for (int q = 0; q < f->nq; q++)
        for (int h = 0; h < mm->heads; h++) {
            int px, py, pw, ph;
            assert_int_equal(al_attnmap_layout(f, model, q, h, &px, &py, &pw, &ph, &e), AL_OK);
            assert_int_equal(pw, IMG * f->scale);
            const float *mp = mm->maps + ((size_t)q * mm->heads + h) * NTOK;
            int best = argmax(mp, NTOK), seen_max = 0, outside = 0;
            for (int y = 0; y < ph; y++)
                for (int x = 0; x < pw; x++) {
                    int tok = (y / f->scale) * IMG + x / f->scale;
                    const uint8_t *p = rgb + ((size_t)(py + y) * W + (px + x)) * 3;
                    if (!in_window(qtok[q], tok, WIN)) {
                        outside++;
                        if (memcmp(p, c0, 3)) fail_msg("query %d head %d: pixel (%d, %d) outside the window is %d,%d,%d", q, h, y, x, p[0], p[1], p[2]);
                    }
                    if (tok == best && !memcmp(p, c1, 3)) seen_max = 1;
                }
            assert_true(outside > 0);
            if (check_max && best != qtok[q]) assert_true(seen_max);
        }
}

static void test_render(void **st)
{
    (void)st;
    al_model a, b;
    tiny_model(&a, "sa", AL_POS_LEARNED, 7);
    tiny_model(&b, "local", AL_POS_RELATIVE, 8);
    uint8_t pix[NTOK]; float x[NTOK];
    image_of(4, pix, x);
    int qy[3] = {0, 4, 7}, qx[3] = {0, 3, 6}, tok[3];
    for (int i = 0; i < 3; i++) tok[i] = qy[i] * IMG + qx[i];
    float ma[3 * HEADS * NTOK], mb[3 * HEADS * NTOK];
    al_error e = {{0}};
    assert_int_equal(al_attnmap_compute(&a, x, -1, tok, 3, ma, NULL, &e), AL_OK);
    assert_int_equal(al_attnmap_compute(&b, x, -1, tok, 3, mb, NULL, &e), AL_OK);
    al_attnmap_model mm[2] = {{"sa", IMG, IMG, 1, HEADS, ma, "pred 1"}, {"local 3x3", IMG, IMG, 1, HEADS, mb, NULL}};
    al_attnmap_fig f = {pix, 1, IMG, IMG, "test #0\nbag", 3, qy, qx, mm, 2, 5};
    uint8_t *rgb; int W, H, x0, y0, w, h;
    assert_int_equal(al_attnmap_render(&f, &rgb, &W, &H, &e), AL_OK);
    assert_int_equal(al_attnmap_layout(&f, -2, 0, 0, &x0, &y0, &w, &h, &e), AL_OK);
    assert_int_equal(W, w); assert_int_equal(H, h);
    /* panels do not overlap and fit: the last head of the last model ends inside the figure */
    int px, py, pw, ph, px2, py2;
    assert_int_equal(al_attnmap_layout(&f, 1, 2, HEADS - 1, &px, &py, &pw, &ph, &e), AL_OK);
    assert_true(px + pw <= W && py + ph <= H);
    assert_int_equal(al_attnmap_layout(&f, 0, 0, 1, &px2, &py2, &pw, &ph, &e), AL_OK);
    assert_int_equal(al_attnmap_layout(&f, 0, 0, 0, &px, &py, &pw, &ph, &e), AL_OK);
    assert_true(px2 >= px + pw && py2 == py);
    /* the input column: up-scaled pixels (away from the query outline) */
    assert_int_equal(al_attnmap_layout(&f, -1, 1, 0, &px, &py, &pw, &ph, &e), AL_OK);
    const uint8_t *p = rgb + ((size_t)(py + 2 * 5 + 2) * W + (px + 6 * 5 + 2)) * 3;   /* image pixel (2, 6) */
    assert_int_equal(p[0], pix[2 * IMG + 6]); assert_int_equal(p[1], pix[2 * IMG + 6]);
    /* the query's token is outlined in red on the input */
    p = rgb + ((size_t)(py + 4 * 5) * W + (px + 3 * 5)) * 3;
    assert_true(p[0] > 200 && p[1] < 80 && p[2] < 80);
    check_local_panels(rgb, W, &f, 1, tok, 1);
    free(rgb);
    /* bad figures are refused */
    f.scale = 0;
    assert_int_equal(al_attnmap_render(&f, &rgb, &W, &H, &e), AL_ERR);
    f.scale = 2; qy[2] = IMG;
    memset(&e, 0, sizeof e);
    assert_int_equal(al_attnmap_render(&f, &rgb, &W, &H, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "outside"));
    al_model_free(&a); al_model_free(&b);
}

/* ---------------------------------------------------------------- CLI */

static int run(const char *cmd, char *err, size_t n)   /* exit status; stderr's start in err */
{
    char full[4096], ep[256];
    snprintf(ep, sizeof ep, "%s/stderr.txt", tmpdir);
    snprintf(full, sizeof full, "%s > /dev/null 2> %s", cmd, ep);
    int st = system(full);
    FILE *f = fopen(ep, "r");
    size_t k = f ? fread(err, 1, n - 1, f) : 0;
    err[k] = 0;
    if (f) fclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_cli(void **st)
{
    (void)st;
    const char *b = tu_attnlab_bin();
    char path[512], cmd[2048], err[2048];
    al_error e = {{0}};
    /* an image folder: train/ and test/ with classes a and b, three 8×8 grey images each */
    for (int s = 0; s < 2; s++)
        for (int c = 0; c < 2; c++) {
            snprintf(path, sizeof path, "%s/data/%s/%c", tmpdir, s ? "test" : "train", 'a' + c);
            snprintf(cmd, sizeof cmd, "mkdir -p %s", path);
            assert_int_equal(system(cmd), 0);
            for (int i = 0; i < 3; i++) {
                uint8_t pix[NTOK];
                image_of(s * 10 + c * 3 + i, pix, NULL);
                snprintf(path, sizeof path, "%s/data/%s/%c/%d.png", tmpdir, s ? "test" : "train", 'a' + c, i);
                assert_int_equal(al_png_write(path, pix, IMG, IMG, 1, &e), AL_OK);
            }
        }
    float mean[4] = {0.5f}, sd[4] = {0.25f};
    const char *names[3] = {"sa", "local", "cnn"};
    for (int k = 0; k < 3; k++) {
        al_model m; tiny_model(&m, names[k], k == 0 ? AL_POS_LEARNED : AL_POS_RELATIVE, 10 + k);
        snprintf(path, sizeof path, "%s/%s.safetensors", tmpdir, names[k]);
        if (al_model_save(path, &m, mean, sd, NULL, 0, &e) != AL_OK) fail_msg("save: %s", e.msg);
        al_model_free(&m);
    }
    /* two models side by side, two queries */
    snprintf(cmd, sizeof cmd, "%s attnmap --load %s/sa.safetensors,%s/local.safetensors --data %s/data --index 4 "
             "--queries 3:4,7:0 --scale 3 --threads 1 --out %s/fig.png", b, tmpdir, tmpdir, tmpdir, tmpdir);
    int rc = run(cmd, err, sizeof err);
    if (rc != 0) fail_msg("attnmap exited %d: %s", rc, err);
    snprintf(path, sizeof path, "%s/fig.png", tmpdir);
    int W, H, C;
    uint8_t *png = stbi_load(path, &W, &H, &C, 3);
    assert_non_null(png);
    /* the size the layout gives for the same figure */
    float dummy[2 * HEADS * NTOK] = {0};
    uint8_t pix[NTOK] = {0};
    int qy[2] = {3, 7}, qx[2] = {4, 0}, tok[2] = {3 * IMG + 4, 7 * IMG + 0};
    al_attnmap_model mm[2] = {{"sa", IMG, IMG, 1, HEADS, dummy, NULL}, {"local", IMG, IMG, 1, HEADS, dummy, NULL}};
    al_attnmap_fig f = {pix, 1, IMG, IMG, NULL, 2, qy, qx, mm, 2, 3};
    int x0, y0, w, h;
    assert_int_equal(al_attnmap_layout(&f, -2, 0, 0, &x0, &y0, &w, &h, &e), AL_OK);
    assert_int_equal(W, w); assert_int_equal(H, h);
    /* the local model's maps, recomputed here, match the drawn panels: zero outside the window */
    al_model m;
    snprintf(path, sizeof path, "%s/local.safetensors", tmpdir);
    float mn[4], sdv[4], x[NTOK], mb[2 * HEADS * NTOK];
    assert_int_equal(al_model_load(path, &m, mn, sdv, NULL, &e), AL_OK);
    image_of(10 + 3 + 1, pix, x);   /* test image 4 = class b, file 1 (classes, then files, sorted) */
    assert_int_equal(al_attnmap_compute(&m, x, -1, tok, 2, mb, NULL, &e), AL_OK);
    mm[1].maps = mb;
    check_local_panels(png, W, &f, 1, tok, 0);   /* the CLI normalises in its own order: near-ties may differ */
    al_model_free(&m);
    stbi_image_free(png);

    /* --distance without --out: a window-3 model's heads look at most sqrt(2) pixels away (patch 1) */
    char outp[512];
    snprintf(outp, sizeof outp, "%s/dist.txt", tmpdir);
    snprintf(cmd, sizeof cmd, "%s attnmap --load %s/local.safetensors,%s/sa.safetensors --data %s/data --distance 3 "
             "--threads 1 > %s 2>/dev/null", b, tmpdir, tmpdir, tmpdir, outp);
    assert_int_equal(system(cmd), 0);
    FILE *df = fopen(outp, "r");
    assert_non_null(df);
    char line[512];
    int nlocal = 0, nsa = 0;
    while (fgets(line, sizeof line, df)) {
        int blk; char *hp = line;
        if (sscanf(line, "  local block %d:", &blk) == 1) {
            nlocal++;
            while ((hp = strstr(hp, "head "))) {
                double d = strtod(hp + 7, NULL);
                if (!(d > 0.5 && d <= 1.4143)) fail_msg("local mean distance %g outside (0.5, sqrt 2]: %s", d, line);
                hp += 5;
            }
        }
        if (sscanf(line, "  sa block %d:", &blk) == 1) nsa++;
    }
    fclose(df);
    assert_int_equal(nlocal, 2); assert_int_equal(nsa, 2);

    /* errors: no output written, a clear message, a non-zero status */
    struct { const char *args, *want; int rc; } bad[] = {
        {"--load %s/sa.safetensors --data %s/data --index 6", "out of range", 2},      /* 6 test images */
        {"--load %s/cnn.safetensors --data %s/data --index 0", "no attention", 1},
        {"--load %s/none.safetensors --data %s/data --index 0", "none.safetensors", 1},
        {"--load %s/local.safetensors --data %s/data --layer 3", "--layer 3", 2},
        {"--load %s/local.safetensors --data %s/data --queries 8:0", "outside", 2},
        {"--load %s/local.safetensors --data %s/data --queries 1-2", "ROW:COL", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char args[1024];
        snprintf(args, sizeof args, bad[i].args, tmpdir, tmpdir);
        snprintf(cmd, sizeof cmd, "%s attnmap %s --threads 1 --out %s/bad.png", b, args, tmpdir);
        rc = run(cmd, err, sizeof err);
        if (rc != bad[i].rc || !strstr(err, bad[i].want))
            fail_msg("'%s': exit %d (want %d), stderr '%s' (want '%s')", args, rc, bad[i].rc, err, bad[i].want);
        snprintf(path, sizeof path, "%s/bad.png", tmpdir);
        struct stat sb;
        assert_int_not_equal(stat(path, &sb), 0);
    }
}

int main(void)
{
    al_set_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_local_window_support),
        cmocka_unit_test(test_offsets_land_where_they_should),
        cmocka_unit_test(test_full_attention),
        cmocka_unit_test(test_compute_errors),
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
