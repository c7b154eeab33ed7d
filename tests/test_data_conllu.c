/* test_data_conllu.c — the CoNLL-U reader on the real UD English EWT splits (sentence, word and tag
 * counts of the dataset README), one small generated file per error kind (each message must name
 * FILE:LINE), multi-word tokens and empty nodes, CRLF and a missing final blank line, the formatter
 * round trip, treebank directories with plain and UD names, and the token features (vocabulary sizes
 * on train, lower-casing, shape bits, save/load). */
#include "testutil.h"
#include "attnlab/text.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char tmpdir[256];

static int setup(void **st)
{
    (void)st;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab-conllu-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}
static int teardown(void **st)
{
    (void)st;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes n bytes to tmpdir/name (gzip-compressed if gz); returns the path (static buffer). */
static const char *write_file(const char *name, const char *data, size_t n, int gz)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    if (gz) {
        gzFile f = gzopen(path, "wb");
        assert_non_null(f);
        if (n) assert_int_equal(gzwrite(f, data, (unsigned)n), (int)n);
        assert_int_equal(gzclose(f), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_non_null(f);
        assert_int_equal(fwrite(data, 1, n, f), n);
        fclose(f);
    }
    return path;
}

static const char *ewt_dir(void)
{
    static const char *cand[] = {"datasets/ud-english-ewt", "../datasets/ud-english-ewt", "../../datasets/ud-english-ewt"};
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/train.conllu.gz", cand[i]);
        if (access(p, R_OK) == 0) return cand[i];
    }
    fail_msg("UD English EWT not found (run the tests from the repository root)");
    return NULL;
}

#define W(id, form, upos) id "\t" form "\t_\t" upos "\t_\t_\t_\t_\t_\t_\n"
static const char GOOD[] =
    "# sent_id = a\n"
    W("1", "I", "PRON") W("2", "saw", "VERB") W("3", "a", "DET") W("4", "saw", "NOUN") W("5", ".", "PUNCT") "\n"
    "# sent_id = b\n"
    W("1", "Hello", "INTJ") "\n";

/* ---------------- the real treebank ---------------- */
static void test_ewt_counts(void **st)
{
    (void)st;
    al_conllu_set s; al_error e = {{0}};
    if (al_conllu_load_dir(ewt_dir(), NULL, &s, &e)) fail_msg("%s", e.msg);
    assert_int_equal(s.train.nsent, 12544); assert_int_equal(s.train.ntok, 204577);
    assert_int_equal(s.dev.nsent, 2001);    assert_int_equal(s.dev.ntok, 25147);
    assert_int_equal(s.test.nsent, 2077);   assert_int_equal(s.test.ntok, 25094);
    assert_int_equal(s.has_dev, 1);
    assert_int_equal(s.train.max_sent_len, 159);
    /* README: NOUN 34 751, PUNCT 23 596, VERB 22 576, PRON 18 677, ADP 17 742, DET 16 299, ADJ 13 137,
     * AUX 12 815, PROPN 12 620, ADV 10 167, CCONJ 6 687, PART 5 748, NUM 4 126, SCONJ 3 819, SYM 722,
     * INTJ 695, X 400 */
    static const struct { const char *tag; int n; } want[AL_UPOS_N] = {
        {"NOUN", 34751}, {"PUNCT", 23596}, {"VERB", 22576}, {"PRON", 18677}, {"ADP", 17742}, {"DET", 16299},
        {"ADJ", 13137}, {"AUX", 12815}, {"PROPN", 12620}, {"ADV", 10167}, {"CCONJ", 6687}, {"PART", 5748},
        {"NUM", 4126}, {"SCONJ", 3819}, {"SYM", 722}, {"INTJ", 695}, {"X", 400},
    };
    int cnt[AL_UPOS_N] = {0};
    for (int i = 0; i < s.train.ntok; i++) { assert_in_range(s.train.tag[i], 0, AL_UPOS_N - 1); cnt[s.train.tag[i]]++; }
    for (int k = 0; k < AL_UPOS_N; k++) {
        int t = al_upos_index(want[k].tag);
        assert_true(t >= 0);
        if (cnt[t] != want[k].n) fail_msg("train %s: %d, README says %d", want[k].tag, cnt[t], want[k].n);
    }
    /* sentence offsets are consistent and the first sentence starts where the file says */
    assert_int_equal(s.train.sent_start[0], 0);
    assert_int_equal(s.train.sent_start[s.train.nsent], s.train.ntok);
    for (int i = 0; i < s.train.nsent; i++) assert_true(s.train.sent_start[i + 1] > s.train.sent_start[i]);
    assert_int_equal(s.train.sent_line[0], 1);
    al_conllu_set_free(&s);
}

/* Features on the real train: the vocabulary sizes of torch_pos.py's Featurizer (computed with
 * python3 on the same file: 8865 words, 2262 suffixes, 16654 distinct lower-cased words), the README's
 * 1 882 test words unseen in train; 2 116 lower-cased train words with two or more UPOS tags ("saw":
 * NOUN, VERB) covering 15 241 of the 25 094 test words (python3 on the same files); a save/load round trip. */
static void test_ewt_features(void **st)
{
    (void)st;
    al_conllu_set s; al_error e = {{0}};
    if (al_conllu_load_dir(ewt_dir(), NULL, &s, &e)) fail_msg("%s", e.msg);
    al_featurizer fz;
    if (al_feat_build(&s.train, &fz, &e)) fail_msg("%s", e.msg);
    print_message("features: %d words (+2), %d suffixes (+2), %d distinct train words\n",
                  fz.words.n, fz.suffixes.n, fz.train_words.n);
    assert_int_equal(fz.words.n, 8865);
    assert_int_equal(fz.suffixes.n, 2262);
    assert_int_equal(fz.train_words.n, 16654);
    assert_int_equal(al_feat_nwords(&fz), 8867);
    for (int i = 1; i < fz.words.n; i++) assert_true(strcmp(fz.words.s[i - 1], fz.words.s[i]) < 0);
    const int n = s.test.ntok;
    int *w = malloc(n * sizeof *w), *p = malloc(n * sizeof *p);
    float *b = malloc((size_t)n * 4 * sizeof *b);
    uint8_t *u = malloc(n), *amb = malloc(n);
    assert_int_equal(al_feat_encode(&fz, &s.test, w, p, b, u, amb, &e), AL_OK);
    int unseen = 0, unk = 0, ambiguous = 0;
    assert_int_equal(fz.ambiguous.n, 2116);
    assert_int_equal(al_vocab_id(&fz.ambiguous, "saw") >= 2, 1);
    assert_int_equal(al_vocab_id(&fz.ambiguous, "dog"), 1);    /* NOUN only; "the" is DET, PRON, ADP, PART */
    for (int i = 0; i < n; i++) {
        unseen += u[i]; unk += w[i] == 1; ambiguous += amb[i];
        assert_false(u[i] && amb[i]);                  /* unseen words took no tag at all */
        assert_in_range(w[i], 1, fz.words.n + 1); assert_in_range(p[i], 1, fz.suffixes.n + 1);
        if (u[i]) assert_int_equal(w[i], 1);          /* never seen: certainly <unk> */
    }
    assert_int_equal(unseen, 1882);
    assert_int_equal(ambiguous, 15241);
    assert_true(unk >= unseen);
    /* ids are positions in the sorted vocabulary */
    assert_int_equal(al_vocab_id(&fz.words, fz.words.s[0]), 2);
    const int the = al_vocab_id(&fz.words, "the");
    assert_true(the >= 2);
    assert_string_equal(fz.words.s[the - 2], "the");
    assert_int_equal(al_vocab_id(&fz.words, "no-such-word-xyzzy"), 1);

    char *txt; size_t len;
    assert_int_equal(al_feat_save(&fz, &txt, &len, &e), AL_OK);
    assert_int_equal(strlen(txt), len);
    al_featurizer g;
    if (al_feat_load(txt, len, &g, &e)) fail_msg("%s", e.msg);
    al_vocab *a[4] = {&fz.words, &fz.suffixes, &fz.train_words, &fz.ambiguous};
    al_vocab *c[4] = {&g.words, &g.suffixes, &g.train_words, &g.ambiguous};
    for (int k = 0; k < 4; k++) {
        assert_int_equal(a[k]->n, c[k]->n);
        for (int i = 0; i < a[k]->n; i++) assert_string_equal(a[k]->s[i], c[k]->s[i]);
    }
    free(txt);
    al_feat_free(&g);
    free(w); free(p); free(b); free(u); free(amb);
    al_feat_free(&fz);
    al_conllu_set_free(&s);
}

/* ---------------- small files ---------------- */
static void test_read_small(void **st)
{
    (void)st;
    for (int gz = 0; gz < 2; gz++) {
        const char *path = write_file(gz ? "good.conllu.gz" : "good.conllu", GOOD, sizeof GOOD - 1, gz);
        al_conllu d; al_error e = {{0}};
        if (al_conllu_read(path, NULL, &d, &e)) fail_msg("%s", e.msg);
        assert_int_equal(d.nsent, 2); assert_int_equal(d.ntok, 6);
        assert_int_equal(d.sent_start[1], 5);
        assert_string_equal(d.form[1], "saw"); assert_string_equal(al_upos_name(d.tag[1]), "VERB");
        assert_string_equal(d.form[3], "saw"); assert_string_equal(al_upos_name(d.tag[3]), "NOUN");
        assert_int_equal(d.sent_line[0], 1); assert_int_equal(d.sent_line[1], 8);
        al_conllu_free(&d);
    }
}

static void test_mwt_and_empty_nodes(void **st)
{
    (void)st;
    static const char txt[] =
        "# text = don't go\n"
        "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n"
        W("1", "do", "AUX") W("2", "n't", "PART") W("3", "go", "VERB")
        "3.1\tgo\tgo\tVERB\t_\t_\t_\t_\t2:ref\t_\n"
        W("4", "!", "PUNCT");                       /* no final blank line */
    al_conllu d; al_error e = {{0}};
    if (al_conllu_read(write_file("mwt.conllu", txt, sizeof txt - 1, 0), NULL, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.nsent, 1); assert_int_equal(d.ntok, 4);
    const char *want[4] = {"do", "n't", "go", "!"};
    for (int i = 0; i < 4; i++) assert_string_equal(d.form[i], want[i]);
    al_conllu_free(&d);

    /* CRLF line ends are accepted */
    static const char crlf[] = "1\tYes\t_\tINTJ\t_\t_\t_\t_\t_\t_\r\n\r\n";
    if (al_conllu_read(write_file("crlf.conllu", crlf, sizeof crlf - 1, 0), NULL, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.ntok, 1); assert_string_equal(d.form[0], "Yes");
    al_conllu_free(&d);
}

/* Asserts reading data (as FILE, gzip if gz) fails with a message containing "FILE:LINE:" (line > 0)
 * or "FILE:" (line 0) and want. */
static void expect_error(const char *name, const char *data, size_t n, int gz, const al_conllu_opts *o,
                         long line, const char *want)
{
    const char *path = write_file(name, data, n, gz);
    al_conllu d; al_error e = {{0}};
    if (al_conllu_read(path, o, &d, &e) == AL_OK) fail_msg("%s: read succeeded, expected '%s'", name, want);
    assert_null(d.form); assert_int_equal(d.ntok, 0);
    char where[600];
    if (line > 0) snprintf(where, sizeof where, "%s:%ld: ", path, line);
    else snprintf(where, sizeof where, "%s: ", path);
    if (strncmp(e.msg, where, strlen(where)) != 0 || !strstr(e.msg, want))
        fail_msg("%s: message '%s' should start with '%s' and contain '%s'", name, e.msg, where, want);
}

static void test_errors(void **st)
{
    (void)st;
    const char *h = W("1", "I", "PRON");                  /* a good first line */
    char b[512];
    int k;
#define CASE(name, line, want, ...) do { k = snprintf(b, sizeof b, __VA_ARGS__); \
        expect_error(name, b, (size_t)k, 0, NULL, line, want); } while (0)
    CASE("f9.conllu", 3, "9 tab-separated fields, expected 10", "# c\n%s2\tsaw\t_\tVERB\t_\t_\t_\t_\t_\n", h);
    CASE("f11.conllu", 2, "11 tab-separated fields, expected 10", "%s2\tsaw\t_\tVERB\t_\t_\t_\t_\t_\t_\t_\n", h);
    CASE("f1.conllu", 2, "1 tab-separated field, expected 10", "%sjust text\n", h);
    CASE("upos.conllu", 2, "field 4 (UPOS) 'FOO' is not a UPOS tag", "%s" W("2", "x", "FOO"), h);
    CASE("upos_.conllu", 2, "field 4 (UPOS) '_' is not a UPOS tag", "%s" W("2", "x", "_"), h);
    CASE("utf8.conllu", 2, "byte 0xFF at column 4 is not valid UTF-8 (an invalid lead byte)", "%s2\tx\xFFy\t_\tX\t_\t_\t_\t_\t_\t_\n", h);
    CASE("overlong.conllu", 1, "byte 0xE0 at column 4 is not valid UTF-8 (an overlong encoding)",
         "1\ta\xE0\x80\xAF\t_\tX\t_\t_\t_\t_\t_\t_\n");
    CASE("trunc8.conllu", 1, "byte 0xC3 at column 6 is not valid UTF-8 (a truncated sequence)",
         "1\tcaf\xC3\t_\tX\t_\t_\t_\t_\t_\t_\n");
    CASE("surrogate.conllu", 1, "(a UTF-16 surrogate)", "1\t\xED\xA0\x80\t_\tX\t_\t_\t_\t_\t_\t_\n");
    CASE("idorder.conllu", 2, "field 1 (ID) '3' does not continue the sentence (expected 2)", "%s" W("3", "x", "X"), h);
    CASE("idstart.conllu", 3, "field 1 (ID) '2' does not continue the sentence (expected 1)", "%s\n" W("2", "x", "X"), h);
    CASE("idtext.conllu", 2, "field 1 (ID) 'two' is not an integer", "%s" W("two", "x", "X"), h);
    CASE("idrange.conllu", 2, "field 1 (ID) '2-' is not an integer", "%s" W("2-", "x", "X"), h);
    CASE("form.conllu", 2, "field 2 (FORM) is empty", "%s" W("2", "", "X"), h);
    CASE("empty.conllu", 0, "no sentence (empty file)", "%s", "");
    CASE("comments.conllu", 0, "no sentence (no word lines)", "# only\n# comments\n\n");
    /* NUL byte: written by hand, snprintf would stop at it */
    static const char nul[] = "1\tx\0y\t_\tX\t_\t_\t_\t_\t_\t_\n";
    expect_error("nul.conllu", nul, sizeof nul - 1, 0, NULL, 1, "byte 0x00 at column 4 is not valid UTF-8 (a NUL byte)");
    /* max_len: the message names the sentence's first line (its comment) */
    al_conllu_opts o = {3, 0};
    k = snprintf(b, sizeof b, "%s\n# s2\n%s" W("2", "b", "X") W("3", "c", "X") W("4", "d", "X"), h, h);
    expect_error("maxlen.conllu", b, (size_t)k, 1, &o, 3, "sentence has more than 3 words (max_len)");
    /* a line over 64 KiB, in a gzip file */
    size_t big = 70000;
    char *l = malloc(big + 64);
    int m = snprintf(l, 64, "%s2\t", h);
    memset(l + m, 'a', big); memcpy(l + m + big, "\t_\tX\t_\t_\t_\t_\t_\t_\n", 17);
    expect_error("longline.conllu.gz", l, (size_t)m + big + 17, 1, NULL, 2, "line longer than 65536 bytes");
    free(l);
    /* a missing file */
    al_conllu d; al_error e = {{0}};
    char miss[512];
    snprintf(miss, sizeof miss, "%s/missing.conllu", tmpdir);
    assert_int_equal(al_conllu_read(miss, NULL, &d, &e), AL_ERR);
    if (!strstr(e.msg, miss) || !strstr(e.msg, "cannot open")) fail_msg("missing file: '%s'", e.msg);
#undef CASE
}

/* A gzip file cut in the middle: the error names the file and the line where the data ran out. */
static void test_gzip_truncated(void **st)
{
    (void)st;
    /* enough varied text that the compressed stream is long */
    size_t cap = 1 << 20, n = 0;
    char *txt = malloc(cap);
    al_rng r; al_rng_seed(&r, 3, 1);
    for (int s = 0; s < 2000; s++) {
        for (int i = 1; i <= 5; i++)
            n += (size_t)snprintf(txt + n, cap - n, "%d\tw%u\t_\tNOUN\t_\t_\t_\t_\t_\t_\n", i, (unsigned)al_rng_below(&r, 1000000));
        txt[n++] = '\n';
    }
    const char *path = write_file("cut.conllu.gz", txt, n, 1);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fclose(f);
    assert_true(sz > 1000);
    assert_int_equal(truncate(path, sz / 2), 0);
    al_conllu d; al_error e = {{0}};
    assert_int_equal(al_conllu_read(path, NULL, &d, &e), AL_ERR);
    char where[600];
    snprintf(where, sizeof where, "%s:", path);
    long line = 0;
    if (strncmp(e.msg, where, strlen(where)) != 0 || sscanf(e.msg + strlen(where), "%ld:", &line) != 1 ||
        line < 2 || !strstr(e.msg, "gzip stream truncated"))
        fail_msg("truncated gzip: '%s'", e.msg);
    /* the same with only the 8-byte trailer (CRC, size) missing */
    path = write_file("cut8.conllu.gz", txt, n, 1);
    f = fopen(path, "rb"); fseek(f, 0, SEEK_END); sz = ftell(f); fclose(f);
    assert_int_equal(truncate(path, sz - 4), 0);
    memset(&e, 0, sizeof e);
    assert_int_equal(al_conllu_read(path, NULL, &d, &e), AL_ERR);
    if (!strstr(e.msg, "gzip stream truncated")) fail_msg("truncated trailer: '%s'", e.msg);
    free(txt);
}

static void test_untagged_and_roundtrip(void **st)
{
    (void)st;
    const char *forms[4] = {"Grüße", "from", "İzmir", "!"};
    int tags[4] = {6, 1, -1, 12};
    char *txt; size_t len; al_error e = {{0}};
    assert_int_equal(al_conllu_format(4, forms, tags, &txt, &len, &e), AL_OK);
    assert_int_equal(strlen(txt), len);
    assert_non_null(strstr(txt, "3\tİzmir\t_\t_\t_\t_\t_\t_\t_\t_\n"));
    const char *path = write_file("rt.conllu", txt, len, 0);
    al_conllu d;
    assert_int_equal(al_conllu_read(path, NULL, &d, &e), AL_ERR);   /* '_' needs allow_untagged */
    memset(&e, 0, sizeof e);
    al_conllu_opts o = {0, 1};
    if (al_conllu_read(path, &o, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.ntok, 4);
    for (int i = 0; i < 4; i++) { assert_string_equal(d.form[i], forms[i]); assert_int_equal(d.tag[i], tags[i]); }
    al_conllu_free(&d);
    free(txt);

    /* every sentence of the real dev set: format → read gives the same words and tags */
    al_conllu dev;
    char p[512];
    snprintf(p, sizeof p, "%s/dev.conllu.gz", ewt_dir());
    if (al_conllu_read(p, NULL, &dev, &e)) fail_msg("%s", e.msg);
    size_t cap = 1 << 22, n = 0;
    char *all = malloc(cap);
    for (int s = 0; s < dev.nsent; s++) {
        int a = dev.sent_start[s], z = dev.sent_start[s + 1];
        assert_int_equal(al_conllu_format(z - a, dev.form + a, dev.tag + a, &txt, &len, &e), AL_OK);
        assert_true(n + len < cap);
        memcpy(all + n, txt, len); n += len;
        free(txt);
    }
    path = write_file("dev-rt.conllu.gz", all, n, 1);
    free(all);
    if (al_conllu_read(path, NULL, &d, &e)) fail_msg("%s", e.msg);
    assert_int_equal(d.nsent, dev.nsent); assert_int_equal(d.ntok, dev.ntok);
    for (int i = 0; i < d.ntok; i++) { assert_string_equal(d.form[i], dev.form[i]); assert_int_equal(d.tag[i], dev.tag[i]); }
    assert_memory_equal(d.sent_start, dev.sent_start, (size_t)(d.nsent + 1) * sizeof(int));
    al_conllu_free(&d); al_conllu_free(&dev);

    /* formatter errors */
    const char *badf[2] = {"a\tb", "c"};
    int badt[2] = {0, 17};
    assert_int_equal(al_conllu_format(2, badf, NULL, &txt, &len, &e), AL_ERR);
    assert_null(txt);
    const char *okf[2] = {"a", "b"};
    memset(&e, 0, sizeof e);
    assert_int_equal(al_conllu_format(2, okf, badt, &txt, &len, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "tag 17"));
}

static void test_dir_names(void **st)
{
    (void)st;
    char dir[512], p[600], cmd[700];
    snprintf(dir, sizeof dir, "%s/ud", tmpdir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    assert_int_equal(system(cmd), 0);
    write_file("ud/en_x-ud-train.conllu", GOOD, sizeof GOOD - 1, 0);
    write_file("ud/en_x-ud-test.conllu.gz", GOOD, sizeof GOOD - 1, 1);
    al_conllu_set s; al_error e = {{0}};
    if (al_conllu_load_dir(dir, NULL, &s, &e)) fail_msg("%s", e.msg);
    assert_int_equal(s.has_dev, 0); assert_int_equal(s.dev.nsent, 0);
    assert_int_equal(s.train.ntok, 6); assert_int_equal(s.test.ntok, 6);
    al_conllu_set_free(&s);
    assert_int_equal(al_conllu_find(dir, "test", p, sizeof p, &e), AL_OK);
    assert_non_null(strstr(p, "en_x-ud-test.conllu.gz"));
    /* a plain name wins over UD names */
    write_file("ud/train.conllu", GOOD, sizeof GOOD - 1, 0);
    assert_int_equal(al_conllu_find(dir, "train", p, sizeof p, &e), AL_OK);
    assert_non_null(strstr(p, "/train.conllu"));
    /* two UD test files: ambiguous */
    write_file("ud/en_y-ud-test.conllu.gz", GOOD, sizeof GOOD - 1, 1);
    assert_int_equal(al_conllu_find(dir, "test", p, sizeof p, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "more than one"));
    memset(&e, 0, sizeof e);
    assert_int_equal(al_conllu_find(dir, "dev", p, sizeof p, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no dev file"));
    memset(&e, 0, sizeof e);
    /* an error in one split is reported with its file and line, and nothing is kept */
    static const char bad[] = "1\tx\t_\tNOPE\t_\t_\t_\t_\t_\t_\n";
    write_file("ud/test.conllu", bad, sizeof bad - 1, 0);
    assert_int_equal(al_conllu_load_dir(dir, NULL, &s, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "test.conllu:1: field 4 (UPOS) 'NOPE'"));
    assert_int_equal(s.train.ntok, 0);
}

/* ---------------- features ---------------- */
static void test_lower_and_shape(void **st)
{
    (void)st;
    static const struct { const char *in, *low; const char *bits; } cases[] = {
        {"Hello", "hello", "1000"}, {"NASA", "nasa", "1100"}, {"3rd", "3rd", "0010"}, {"...", "...", "0001"},
        {"A", "a", "1100"}, {"a", "a", "0000"}, {"ÉCOLE", "école", "1100"}, {"Straße", "straße", "1000"},
        {"STRAßE", "straße", "1000"}, {"İ", "i\xCC\x87", "1100"}, {"ΑΘΗΝΑ", "αθηνα", "1100"},
        {"МОСКВА", "москва", "1100"}, {"’s", "’s", "0000"}, {"£5", "£5", "0010"}, {"x³", "x³", "0010"},
        {"—", "—", "0001"}, {"A1-B2", "a1-b2", "1110"}, {"東京", "東京", "0000"}, {"Ÿ", "ÿ", "1100"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char out[64]; float b[4]; char bits[5];
        assert_true(al_text_lower(cases[i].in, out, sizeof out) >= 0);
        assert_string_equal(out, cases[i].low);
        al_text_shape(cases[i].in, b);
        for (int j = 0; j < 4; j++) bits[j] = b[j] != 0.f ? '1' : '0';
        bits[4] = 0;
        if (strcmp(bits, cases[i].bits) != 0) fail_msg("shape of '%s': %s, Python gives %s", cases[i].in, bits, cases[i].bits);
    }
    char small[3];
    assert_int_equal(al_text_lower("abc", small, sizeof small), -1);
}

static void test_vocab_build_and_load_errors(void **st)
{
    (void)st;
    /* counts: "saw" ×2 (Saw, saw) → in words; suffix "saw" ×2; "the" ×1 → <unk> */
    static const char txt[] = W("1", "Saw", "VERB") W("2", "the", "DET") W("3", "saw", "NOUN") W("4", "SAWS", "NOUN") "\n";
    al_conllu d; al_error e = {{0}};
    if (al_conllu_read(write_file("v.conllu", txt, sizeof txt - 1, 0), NULL, &d, &e)) fail_msg("%s", e.msg);
    al_featurizer fz;
    assert_int_equal(al_feat_build(&d, &fz, &e), AL_OK);
    assert_int_equal(fz.words.n, 1); assert_string_equal(fz.words.s[0], "saw");
    assert_int_equal(fz.suffixes.n, 1); assert_string_equal(fz.suffixes.s[0], "saw");   /* "saw" ×2; "aws" ×1 */
    assert_int_equal(fz.train_words.n, 3);
    /* "I saw a saw": saw is VERB and NOUN → ambiguous; saws is NOUN only; the is DET only */
    assert_int_equal(fz.ambiguous.n, 1); assert_string_equal(fz.ambiguous.s[0], "saw");
    int w[4], p[4]; uint8_t u[4], amb[4]; float b[16];
    assert_int_equal(al_feat_encode(&fz, &d, w, p, b, u, amb, &e), AL_OK);
    assert_int_equal(amb[0], 1); assert_int_equal(amb[1], 0); assert_int_equal(amb[2], 1); assert_int_equal(amb[3], 0);
    assert_int_equal(w[0], 2); assert_int_equal(w[1], 1); assert_int_equal(w[2], 2); assert_int_equal(w[3], 1);
    assert_int_equal(p[0], 2); assert_int_equal(p[3], 1);
    for (int i = 0; i < 4; i++) assert_int_equal(u[i], 0);
    assert_true(b[12] == 1.f && b[13] == 1.f);            /* SAWS: first upper, all upper */
    al_feat_free(&fz);
    al_conllu_free(&d);

    static const struct { const char *text; const char *want; } bad[] = {
        {"nope\n", "vocab:1: not an attnlab vocabulary"},
        {"attnlab-vocab 1\nwords 2\na\n", "vocab:3: section 'words' ends after 1 of 2"},
        {"attnlab-vocab 1\nwords 2\nb\na\nsuffixes 0\ntrain_words 0\n", "vocab:4: entries of 'words' not in strictly increasing order"},
        {"attnlab-vocab 1\nwords 1\na\nsuffix 0\ntrain_words 0\n", "vocab:4: expected 'suffixes COUNT'"},
        {"attnlab-vocab 1\nwords 0\nsuffixes 0\ntrain_words 0\nextra\n", "vocab:5: unexpected text"},
        {"attnlab-vocab 1\nwords 1\n\xFF\nsuffixes 0\ntrain_words 0\n", "vocab:3: entry is not valid UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        memset(&e, 0, sizeof e);
        assert_int_equal(al_feat_load(bad[i].text, strlen(bad[i].text), &fz, &e), AL_ERR);
        if (!strstr(e.msg, bad[i].want)) fail_msg("vocab case %zu: '%s', expected '%s'", i, e.msg, bad[i].want);
        assert_int_equal(fz.words.n, 0);
    }
    /* version 1 (checkpoints of attnlab < 0.5): no ambiguous section, none ambiguous */
    static const char ok[] = "attnlab-vocab 1\nwords 2\na b\nc\nsuffixes 0\ntrain_words 1\nx\n";
    assert_int_equal(al_feat_load(ok, sizeof ok - 1, &fz, &e), AL_OK);
    assert_int_equal(al_vocab_id(&fz.words, "a b"), 2); assert_int_equal(al_vocab_id(&fz.words, "c"), 3);
    assert_int_equal(al_vocab_id(&fz.suffixes, "c"), 1);
    assert_int_equal(fz.ambiguous.n, 0);
    al_feat_free(&fz);
    static const char ok2[] = "attnlab-vocab 2\nwords 0\nsuffixes 0\ntrain_words 2\nsaw\nx\nambiguous 1\nsaw\n";
    assert_int_equal(al_feat_load(ok2, sizeof ok2 - 1, &fz, &e), AL_OK);
    assert_int_equal(al_vocab_id(&fz.ambiguous, "saw"), 2);
    al_feat_free(&fz);
    /* version 2 without its ambiguous section is cut short */
    static const char short2[] = "attnlab-vocab 2\nwords 0\nsuffixes 0\ntrain_words 0\n";
    memset(&e, 0, sizeof e);
    assert_int_equal(al_feat_load(short2, sizeof short2 - 1, &fz, &e), AL_ERR);
    if (!strstr(e.msg, "missing section 'ambiguous'")) fail_msg("%s", e.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ewt_counts),
        cmocka_unit_test(test_ewt_features),
        cmocka_unit_test(test_read_small),
        cmocka_unit_test(test_mwt_and_empty_nodes),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_gzip_truncated),
        cmocka_unit_test(test_untagged_and_roundtrip),
        cmocka_unit_test(test_dir_names),
        cmocka_unit_test(test_lower_and_shape),
        cmocka_unit_test(test_vocab_build_and_load_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
