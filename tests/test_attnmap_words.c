/* test_attnmap_words.c — attention over the words of a sentence (sa, trunc): every block's weights
 * spread onto an n×n grid (rows sum to 1, keys outside trunc's window exactly 0 and marked, the same
 * for any thread count), the figure (sizes, the band's grey, each panel's maximum), and
 * attnlab attnmap on sequence checkpoints end to end (PNG written atomically, error cases). */
#include "testutil.h"
#include "attnlab/attnmap.h"
#include "attnlab/io.h"
#include "attnlab/seq.h"
#include <math.h>
#include <stb/stb_image.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { NV = 12, N = 7 };

static char tmpdir[64];
static int setup(void **st) { (void)st; snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_attnwords_XXXXXX"); return mkdtemp(tmpdir) ? 0 : -1; }
static int teardown(void **st)
{
    (void)st;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A model of the table with random weights; window applies to trunc. */
static void tiny_seq(al_seq_model *m, const char *name, int window, uint64_t seed)
{
    al_seq_config cfg; al_error e = {{0}};
    assert_int_equal(al_seq_config_default(&cfg, name, NV, NV, AL_UPOS_N, &e), AL_OK);
    if (window >= 0) cfg.window = window;
    if (al_seq_init(m, &cfg, seed, &e) != AL_OK) fail_msg("init: %s", e.msg);
}

/* One sentence of N tokens (word, suffix ids and shape bits), or two sentences (3 + 4) when two. */
static int lens[2];
static int words[N], sufs[N];
static float shape[N * 4];
static al_seq_batch batch(int two)
{
    for (int i = 0; i < N; i++) { words[i] = 1 + (i * 5) % (NV - 1); sufs[i] = 1 + (i * 3) % (NV - 1); }
    for (int i = 0; i < N * 4; i++) shape[i] = (float)((i * 7) % 3 == 0);
    lens[0] = two ? 3 : N; lens[1] = N - 3;
    al_seq_batch b = {two ? 2 : 1, N, lens, words, sufs, shape, NULL, 0};
    return b;
}

static void check_maps(const al_seq_model *m, const float *maps, const uint8_t *allowed, int radius)
{
    const int H = m->cfg.heads;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            int want = radius < 0 || abs(i - j) <= radius;
            if (allowed[i * N + j] != want) fail_msg("allowed[%d][%d] = %d, want %d", i, j, allowed[i * N + j], want);
        }
    for (int L = 0; L < m->cfg.depth; L++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++) {
                const float *row = maps + (((size_t)L * H + h) * N + i) * N;   /* (N) */
                double s = 0;
                for (int j = 0; j < N; j++) {
                    if (!allowed[i * N + j] && row[j] != 0.f) fail_msg("block %d head %d: key %d of query %d is outside the window but %g", L, h, j, i, row[j]);
                    assert_true(row[j] >= 0.f);
                    s += row[j];
                }
                if (fabs(s - 1.0) > 1e-5) fail_msg("block %d head %d query %d: weights sum to %.7f", L, h, i, s);
            }
}

static void test_words_compute(void **st)
{
    (void)st;
    const struct { const char *name; int window, radius; } cases[] = {{"trunc", 1, 1}, {"trunc", 0, 0}, {"sa", -1, -1}};
    for (int k = 0; k < 3; k++) {
        al_seq_model m; al_error e = {{0}};
        tiny_seq(&m, cases[k].name, cases[k].window, 5 + k);
        const size_t nm = (size_t)m.cfg.depth * m.cfg.heads * N * N;
        float *maps = malloc(nm * sizeof *maps), *maps2 = malloc(nm * sizeof *maps2);
        uint8_t allowed[N * N]; int pred[N];
        al_seq_batch b = batch(0);
        al_set_threads(1);
        if (al_seq_attnmap(&m, &b, maps, allowed, pred, &e) != AL_OK) fail_msg("%s: %s", cases[k].name, e.msg);
        check_maps(&m, maps, allowed, cases[k].radius);
        for (int i = 0; i < N; i++) assert_in_range(pred[i], 0, AL_UPOS_N - 1);
        assert_int_equal(m.capture_attn, 0);                     /* restored */
        al_set_threads(2);                                       /* the same bits for any thread count */
        assert_int_equal(al_seq_attnmap(&m, &b, maps2, NULL, NULL, &e), AL_OK);
        assert_memory_equal(maps, maps2, nm * sizeof *maps);
        al_set_threads(1);
        free(maps); free(maps2);
        al_seq_free(&m);
    }
    /* no attention, or more than one sentence: errors that say so */
    const char *plain[] = {"fc", "window-fc", "rnn"};
    for (int k = 0; k < 3; k++) {
        al_seq_model m; al_error e = {{0}};
        tiny_seq(&m, plain[k], -1, 1);
        float maps[N * N]; al_seq_batch b = batch(0);
        assert_int_equal(al_seq_attnmap(&m, &b, maps, NULL, NULL, &e), AL_ERR);
        if (!strstr(e.msg, "has no attention weights (only sa and trunc have)")) fail_msg("%s: %s", plain[k], e.msg);
        al_seq_free(&m);
    }
    al_seq_model m; al_error e = {{0}};
    tiny_seq(&m, "sa", -1, 1);
    float *maps = malloc((size_t)m.cfg.depth * m.cfg.heads * N * N * sizeof *maps);
    al_seq_batch b = batch(1);
    assert_int_equal(al_seq_attnmap(&m, &b, maps, NULL, NULL, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "one sentence"));
    free(maps);
    al_seq_free(&m);
}

static long count_colour(const uint8_t *rgb, int w, int h, const uint8_t c[3])
{
    long n = 0;
    for (long i = 0; i < (long)w * h; i++) n += !memcmp(rgb + 3 * i, c, 3);
    return n;
}

static void test_words_render(void **st)
{
    (void)st;
    const char *w[4] = {"I", "saw", "a", "saw"}, *tags[4] = {"PRON", "VERB", "DET", "NOUN"};
    enum { n = 4, H = 2, D = 2, CELL = 10 };
    float maps[D * H * n * n];
    uint8_t allowed[n * n];
    for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) allowed[i * n + j] = abs(i - j) <= 1;   /* a band of 1 */
    for (int k = 0; k < D * H * n * n; k++) maps[k] = allowed[k % (n * n)] ? 0.1f + 0.01f * (float)(k % 7) : 0.f;
    maps[1 * n + 2] = 0.9f;                                   /* block 1, head 1: one clear maximum */
    int blocks[2] = {0, 1};
    al_attnmap_words_fig f = {n, w, tags, H, D, 2, blocks, maps, allowed, "trunc", CELL};
    uint8_t *rgb; int W, Hh; al_error e = {{0}};
    assert_int_equal(al_attnmap_words_render(&f, &rgb, &W, &Hh, &e), AL_OK);
    /* the band: 6 cells outside it per panel, 2 blocks × 2 heads, in the legend's grey too */
    const uint8_t grey[3] = {225, 225, 225}, top[3] = {253, 231, 37};
    assert_int_equal(count_colour(rgb, W, Hh, grey), 6L * 2 * 2 * CELL * CELL + 12 * 12);
    /* every panel's maximum is drawn at the colour map's top: at least one cell per panel (+ the bar's end) */
    long ntop = count_colour(rgb, W, Hh, top);
    assert_true(ntop >= 4L * CELL * CELL);
    free(rgb);
    /* one block only: half the panels */
    f.nblocks = 1; blocks[0] = 1;
    int W1, H1;
    assert_int_equal(al_attnmap_words_render(&f, &rgb, &W1, &H1, &e), AL_OK);
    assert_int_equal(W1, W);
    assert_true(H1 < Hh);
    assert_int_equal(count_colour(rgb, W1, H1, grey), 6L * 2 * CELL * CELL + 12 * 12);
    free(rgb);
    /* without a pattern mask (or one that leaves nothing out) there is no grey at all, legend included */
    f.allowed = NULL;
    assert_int_equal(al_attnmap_words_render(&f, &rgb, &W1, &H1, &e), AL_OK);
    assert_int_equal(count_colour(rgb, W1, H1, grey), 0);
    free(rgb);
    /* bad figures */
    al_attnmap_words_fig bad = f;
    bad.cell = 7; assert_int_equal(al_attnmap_words_render(&bad, &rgb, &W1, &H1, &e), AL_ERR);
    bad = f; bad.n = 0; memset(&e, 0, sizeof e); assert_int_equal(al_attnmap_words_render(&bad, &rgb, &W1, &H1, &e), AL_ERR);
    bad = f; blocks[0] = 2; memset(&e, 0, sizeof e);
    assert_int_equal(al_attnmap_words_render(&bad, &rgb, &W1, &H1, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "block 3 does not exist"));
    assert_null(rgb);
}

/* attnlab attnmap on checkpoints trained on a tiny treebank */
static int run(const char *args, char *err, size_t n) { return tu_run_cli_err(tmpdir, args, err, n); }

static void test_words_cli(void **st)
{
    (void)st;
    char p[512], args[2048], err[2048];
    snprintf(p, sizeof p, "%s/tb", tmpdir); mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/tb/train.conllu", tmpdir); tu_write_treebank(p, 60, 1, 0);
    snprintf(p, sizeof p, "%s/tb/test.conllu", tmpdir); tu_write_treebank(p, 8, 2, 3);
    const char *models[3][2] = {{"sa", ""}, {"trunc", "--window 1"}, {"fc", ""}};
    for (int k = 0; k < 3; k++) {
        snprintf(args, sizeof args, "train --task sequence --data %s/tb --model %s %s --epochs 1 --threads 1 --quiet --save %s/%s.st",
                 tmpdir, models[k][0], models[k][1], tmpdir, models[k][0]);
        if (run(args, err, sizeof err)) fail_msg("train %s: %s", models[k][0], err);
    }
    /* "I saw a saw", then sentence 2 of a CoNLL-U file, one block */
    snprintf(args, sizeof args, "attnmap --load %s/trunc.st --sentence \"I saw a saw .\" --threads 1 --out %s/map.png", tmpdir, tmpdir);
    if (run(args, err, sizeof err)) fail_msg("attnmap: %s", err);
    snprintf(p, sizeof p, "%s/out.txt", tmpdir);
    char *out = tu_slurp(p);
    int w = 0, h = 0;
    assert_non_null(out);
    assert_int_equal(sscanf(strstr(out, "map.png: "), "map.png: %dx%d", &w, &h), 2);
    assert_non_null(strstr(out, "model trunc, 5 words, 2 blocks, 4 heads"));
    free(out);
    assert_non_null(strstr(err, "saw/"));                        /* the predicted tags on stderr */
    snprintf(p, sizeof p, "%s/map.png", tmpdir);
    int W, H, C;
    uint8_t *png = stbi_load(p, &W, &H, &C, 3);
    assert_non_null(png);
    assert_int_equal(W, w); assert_int_equal(H, h);
    const uint8_t grey[3] = {225, 225, 225};                    /* trunc's band: 12 of 25 cells outside, 2 × 4 panels */
    assert_int_equal(count_colour(png, W, H, grey), 12L * 8 * 16 * 16 + 12 * 12);
    stbi_image_free(png);
    snprintf(args, sizeof args, "attnmap --load %s/sa.st --conllu %s/tb/test.conllu --index 2 --block 2 --cell 8 --quiet "
             "--out %s/map2.png", tmpdir, tmpdir, tmpdir);
    if (run(args, err, sizeof err)) fail_msg("attnmap --conllu: %s", err);
    assert_int_equal(tu_tmp_files(tmpdir), 0);
    snprintf(p, sizeof p, "%s/map2.png", tmpdir);
    png = stbi_load(p, &W, &H, &C, 3);
    assert_non_null(png);
    assert_int_equal(count_colour(png, W, H, grey), 0);        /* sa attends to every word: no grey, no legend */
    stbi_image_free(png);

    /* errors: one line, a non-zero status, and map.png (written above) left as it was */
    snprintf(p, sizeof p, "%s/map.png", tmpdir);
    struct stat before; assert_int_equal(stat(p, &before), 0);
    struct { const char *args, *want; int rc; } bad[] = {
        {"--load %s/fc.st --sentence \"I saw\"", "holds a 'fc' model, which has no attention to draw (use an sa or trunc checkpoint)", 1},
        {"--load %s/sa.st", "needs --sentence TEXT or --conllu FILE", 2},
        {"--load %s/sa.st --sentence \"a b\" --conllu x.conllu", "one of them", 2},
        {"--load %s/sa.st --sentence \"a b\" --queries 1:1", "--queries applies to image checkpoints", 2},
        {"--load %s/sa.st --sentence \"a b\" --block 3", "--block 3", 2},
        {"--load %s/sa.st --sentence \"a b\" --cell 4", "--cell", 2},
        {"--load %s/sa.st --conllu %s/tb/test.conllu --index 8", "--index 8 is out of range", 2},
        {"--load %s/none.st --sentence \"a b\"", "--sentence applies to sequence checkpoints", 2},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char a[1024];
        snprintf(a, sizeof a, bad[i].args, tmpdir, tmpdir);
        snprintf(args, sizeof args, "attnmap %s --threads 1 --out %s/map.png", a, tmpdir);
        int rc = run(args, err, sizeof err);
        if (rc != bad[i].rc || !strstr(err, bad[i].want))
            fail_msg("'%s': exit %d (want %d), stderr '%s' (want '%s')", a, rc, bad[i].rc, err, bad[i].want);
        assert_ptr_equal(strchr(err, '\n'), err + strlen(err) - 1);
        struct stat now; assert_int_equal(stat(p, &now), 0);
        assert_int_equal(now.st_size, before.st_size);
        assert_true(now.st_mtim.tv_sec == before.st_mtim.tv_sec && now.st_mtim.tv_nsec == before.st_mtim.tv_nsec);
    }
    assert_int_equal(tu_tmp_files(tmpdir), 0);
}

int main(void)
{
    al_set_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_words_compute),
        cmocka_unit_test(test_words_render),
        cmocka_unit_test(test_words_cli),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
