/* test_io.c — results CSV (header once, NaN, torn lines, foreign header), run ids, atomic writes,
 * safetensors round trip and every refusal, metadata, PNG through libpng. */
#define _XOPEN_SOURCE 700
#include "testutil.h"
#include "attnlab/io.h"
#include <ftw.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }
static int setup(void **st) { (void)st; snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_io_XXXXXX"); return mkdtemp(tmpdir) ? 0 : -1; }
static int teardown(void **st) { (void)st; return nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }
static char *tpath(const char *name) { static char b[4][512]; static int k; k = (k + 1) % 4; snprintf(b[k], sizeof b[k], "%s/%s", tmpdir, name); return b[k]; }

static void spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}
static int count_char(const char *s, char c) { int n = 0; for (; *s; s++) n += *s == c; return n; }

static al_csv_row sample_row(int epoch)
{
    al_csv_row r = {"0123456789abcdef", "image", "fashion-mnist", "cnn", 1000, 7, epoch,
                    0.5, 0.875, NAN, 0.8125, 1.23456789, 812.34, 12345, NULL, NULL, 0, NAN, NAN, 0, NAN, NAN};
    return r;
}

/* ---------------------------------------------------------------- CSV */
static void test_csv_format_and_nan(void **st)
{
    (void)st;
    char buf[512];
    al_csv_row r = sample_row(3);
    int n = al_csv_format(buf, sizeof buf, &r);
    assert_string_equal(buf, "0123456789abcdef,image,fashion-mnist,cnn,1000,7,3,0.5,0.875,,0.8125,1.2346,812.3,12345,,,,,,");
    assert_int_equal(n, (int)strlen(buf));
    r.config = "lr=0.001;patch=2"; r.status = "done";
    al_csv_format(buf, sizeof buf, &r);
    assert_string_equal(buf, "0123456789abcdef,image,fashion-mnist,cnn,1000,7,3,0.5,0.875,,0.8125,1.2346,812.3,12345,"
                             "lr=0.001;patch=2,done,,,,");
    /* the word scores only with word_scores set (a zeroed row leaves them empty, not 0); NaN is empty */
    r.unseen_acc = 0.5; r.ambig_acc = 0.25;
    al_csv_format(buf, sizeof buf, &r);
    assert_non_null(strstr(buf, ",done,,"));
    r.word_scores = 1;
    al_csv_format(buf, sizeof buf, &r);
    assert_non_null(strstr(buf, ",done,0.5,0.25"));
    r.ambig_acc = NAN;
    al_csv_format(buf, sizeof buf, &r);
    assert_non_null(strstr(buf, ",done,0.5,"));
    assert_int_equal(buf[strlen(buf) - 1], ',');
    r.word_scores = 0;
    /* a regression row (--task molecule) fills test_rmse and test_mae, the last two columns */
    r.regression = 1; r.test_rmse = 0.5625; r.test_mae = 0.4;
    al_csv_format(buf, sizeof buf, &r);
    assert_string_equal(buf, "0123456789abcdef,image,fashion-mnist,cnn,1000,7,3,0.5,0.875,,0.8125,1.2346,812.3,12345,"
                             "lr=0.001;patch=2,done,,,0.5625,0.4");
    r.regression = 0;
    r.config = NULL; r.status = NULL;
    /* NULL strings and NaN doubles are empty; a comma in a string is quoted */
    al_csv_row q = {NULL, "image", "my,data", "a\"b", 1, 2, 0, NAN, NAN, NAN, NAN, NAN, NAN, 0, NULL, NULL, 0, NAN, NAN, 0, NAN, NAN};
    al_csv_format(buf, sizeof buf, &q);
    assert_string_equal(buf, ",image,\"my,data\",\"a\"\"b\",1,2,0,,,,,,,0,,,,,,");
    /* 20 fields, like the header (16 in files of attnlab 0.4, 14 before) */
    assert_int_equal(count_char(AL_CSV_HEADER, ','), 19);
    assert_int_equal(count_char(AL_CSV_HEADER_V2, ','), 15);
    assert_int_equal(count_char(AL_CSV_HEADER_V1, ','), 13);
    /* too small a buffer: -1 and an empty string, never an overflow */
    char small[10];
    assert_int_equal(al_csv_format(small, sizeof small, &r), -1);
    assert_string_equal(small, "");
}

static void test_csv_header_once(void **st)
{
    (void)st;
    const char *p = tpath("once.csv");
    al_error e = {{0}};
    for (int ep = 0; ep < 3; ep++) { al_csv_row r = sample_row(ep); assert_int_equal(al_csv_append(p, &r, &e), AL_OK); }
    char *s = tu_slurp_n(p, NULL);
    assert_non_null(s);
    assert_int_equal(count_char(s, '\n'), 4);
    assert_memory_equal(s, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1);
    assert_null(strstr(s + 1, "run_id"));   /* header written once only */
    assert_non_null(strstr(s, ",2,0.5,0.875,,0.8125,"));
    free(s);
    /* an existing empty file also gets the header */
    const char *q = tpath("empty.csv");
    spit(q, "", 0);
    al_csv_row r = sample_row(0);
    assert_int_equal(al_csv_append(q, &r, &e), AL_OK);
    s = tu_slurp_n(q, NULL);
    assert_int_equal(strncmp(s, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1), 0);
    assert_int_equal(count_char(s, '\n'), 2);
    free(s);
    /* a file of attnlab < 0.4 (14-column header) keeps its 14 columns when appended to */
    const char *old = tpath("old.csv");
    spit(old, AL_CSV_HEADER_V1 "\n", strlen(AL_CSV_HEADER_V1) + 1);
    r.config = "lr=0.1"; r.status = "done";
    assert_int_equal(al_csv_append(old, &r, &e), AL_OK);
    s = tu_slurp_n(old, NULL);
    assert_string_equal(s, AL_CSV_HEADER_V1 "\n0123456789abcdef,image,fashion-mnist,cnn,1000,7,0,0.5,0.875,,0.8125,"
                           "1.2346,812.3,12345\n");
    free(s);
    /* a file of attnlab 0.4 (16 columns) keeps its 16 */
    const char *v2 = tpath("v2.csv");
    spit(v2, AL_CSV_HEADER_V2 "\n", strlen(AL_CSV_HEADER_V2) + 1);
    r.word_scores = 1; r.unseen_acc = 0.5; r.ambig_acc = 0.25;
    assert_int_equal(al_csv_append(v2, &r, &e), AL_OK);
    s = tu_slurp_n(v2, NULL);
    assert_string_equal(s, AL_CSV_HEADER_V2 "\n0123456789abcdef,image,fashion-mnist,cnn,1000,7,0,0.5,0.875,,0.8125,"
                           "1.2346,812.3,12345,lr=0.1,done\n");
    free(s);
}

static void test_csv_torn_line_repaired(void **st)
{
    (void)st;
    const char *p = tpath("torn.csv");
    al_error e = {{0}};
    al_csv_row r0 = sample_row(0), r1 = sample_row(1);
    assert_int_equal(al_csv_append(p, &r0, &e), AL_OK);
    size_t n0; char *good = tu_slurp_n(p, &n0);
    /* a killed process left half a row */
    FILE *f = fopen(p, "ab"); fputs("0123456789abcdef,image,fash", f); fclose(f);
    assert_int_equal(al_csv_append(p, &r1, &e), AL_OK);
    char *s = tu_slurp_n(p, NULL);
    char line[512]; al_csv_format(line, sizeof line, &r1);
    size_t L = strlen(line);
    assert_memory_equal(s, good, n0);
    assert_memory_equal(s + n0, line, L);
    assert_string_equal(s + n0 + L, "\n");
    free(s); free(good);
    /* a torn header (a prefix of ours, no newline) is replaced by the full header */
    const char *q = tpath("tornhead.csv");
    spit(q, "run_id,task,data", 16);
    assert_int_equal(al_csv_append(q, &r0, &e), AL_OK);
    s = tu_slurp_n(q, NULL);
    assert_int_equal(strncmp(s, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1), 0);
    assert_int_equal(count_char(s, '\n'), 2);
    free(s);
}

static void test_csv_header_mismatch(void **st)
{
    (void)st;
    const char *p = tpath("foreign.csv");
    spit(p, "a,b,c\n1,2,3\n", 12);
    al_error e = {{0}};
    al_csv_row r = sample_row(0);
    assert_int_equal(al_csv_append(p, &r, &e), AL_ERR);
    assert_non_null(strstr(e.msg, p));
    assert_non_null(strstr(e.msg, "header"));
    size_t n; char *s = tu_slurp_n(p, &n);
    assert_int_equal(n, 12);   /* untouched */
    free(s);
    /* header with an extra column: also refused */
    const char *q = tpath("extra.csv");
    const char *h = AL_CSV_HEADER ",extra\n";
    spit(q, h, strlen(h));
    memset(&e, 0, sizeof e);
    assert_int_equal(al_csv_append(q, &r, &e), AL_ERR);
    assert_non_null(strstr(e.msg, q));
    /* a directory that does not exist: error naming the path */
    memset(&e, 0, sizeof e);
    assert_int_equal(al_csv_append(tpath("no/such/dir.csv"), &r, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no/such/dir.csv"));
}

/* Two processes appending at once: every row arrives whole, the header once. */
static void test_csv_concurrent_appends(void **st)
{
    (void)st;
    const char *p = tpath("concurrent.csv");
    pid_t kid[2];
    for (int k = 0; k < 2; k++) {
        kid[k] = fork();
        assert_true(kid[k] >= 0);
        if (kid[k] == 0) {
            al_error e = {{0}};
            for (int i = 0; i < 25; i++) { al_csv_row r = sample_row(100 * k + i); if (al_csv_append(p, &r, &e)) _exit(1); }
            _exit(0);
        }
    }
    for (int k = 0; k < 2; k++) { int status; assert_int_equal(waitpid(kid[k], &status, 0), kid[k]); assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); }
    char *s = tu_slurp_n(p, NULL);
    assert_int_equal(count_char(s, '\n'), 51);
    int seen[2][25] = {{0}};
    char *line = strchr(s, '\n') + 1;   /* after the header */
    assert_int_equal(strncmp(s, AL_CSV_HEADER "\n", strlen(AL_CSV_HEADER) + 1), 0);
    while (*line) {
        char *nl = strchr(line, '\n');
        *nl = 0;
        char want[512]; int ep = -1;
        assert_int_equal(sscanf(line, "%*[^,],%*[^,],%*[^,],%*[^,],%*d,%*d,%d", &ep), 1);
        al_csv_row r = sample_row(ep); al_csv_format(want, sizeof want, &r);
        assert_string_equal(line, want);
        seen[ep / 100][ep % 100]++;
        line = nl + 1;
    }
    for (int k = 0; k < 2; k++) for (int i = 0; i < 25; i++) assert_int_equal(seen[k][i], 1);
    free(s);
}

/* ---------------------------------------------------------------- run id, atomic */
static void test_run_id_fnv1a(void **st)
{
    (void)st;
    char id[17];
    al_run_id(id, ""); assert_string_equal(id, "cbf29ce484222325");     /* FNV-1a 64 reference vectors */
    al_run_id(id, "a"); assert_string_equal(id, "af63dc4c8601ec8c");
    al_run_id(id, "foobar"); assert_string_equal(id, "85944171f73967e8");
    char id2[17];
    al_run_id(id, "task=image model=cnn seed=1"); al_run_id(id2, "task=image model=cnn seed=2");
    assert_int_equal(strlen(id), 16);
    assert_string_not_equal(id, id2);
}

static void test_write_atomic(void **st)
{
    (void)st;
    const char *p = tpath("atomic.bin");
    al_error e = {{0}};
    assert_int_equal(al_write_atomic(p, "hello", 5, &e), AL_OK);
    assert_int_equal(al_write_atomic(p, "bye", 3, &e), AL_OK);   /* replaces */
    size_t n; char *s = tu_slurp_n(p, &n);
    assert_int_equal(n, 3); assert_memory_equal(s, "bye", 3);
    free(s);
    assert_int_equal(tu_tmp_files(tmpdir), 0);   /* no temporary left behind */
    assert_int_equal(al_write_atomic(tpath("missing/x.bin"), "x", 1, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "missing/x.bin"));
}

/* ---------------------------------------------------------------- safetensors */
static void make_params(al_params *p, uint64_t seed)
{
    al_params_init(p);
    assert_non_null(al_params_add(p, "embed.weight", 2, (int[]){7, 5}, (al_init){AL_INIT_NORMAL, 1.f}));
    assert_non_null(al_params_add(p, "blocks.0.attn \"q\"\\bias", 1, (int[]){3}, (al_init){AL_INIT_NORMAL, 1.f}));
    assert_non_null(al_params_add(p, "conv.w", 4, (int[]){2, 3, 3, 3}, (al_init){AL_INIT_UNIFORM, 2.f}));
    al_rng r; al_rng_seed(&r, seed, AL_RNG_INIT);
    al_error e = {{0}};
    assert_int_equal(al_params_finalize(p, &r, &e), AL_OK);
}

static void test_safetensors_roundtrip(void **st)
{
    (void)st;
    al_params a, b;
    make_params(&a, 1); make_params(&b, 2);
    /* exact bits survive (an infinity or NaN is refused by the loader: test_reliability_io) */
    a.t[0]->data[3] = -0.0f; a.t[0]->data[4] = 1e-40f; a.t[0]->data[5] = -3.4028235e38f;
    const char *kv[] = {"model", "cnn", "note", "tab\there \"quoted\" back\\slash \xc3\xa9", "epoch", "12"};
    const char *p = tpath("rt.safetensors");
    al_error e = {{0}};
    assert_int_equal(al_safetensors_save(p, &a, kv, 3, &e), AL_OK);
    /* the file layout: u64 LE header length, multiple of 8, JSON object, then 4·total bytes */
    size_t n; unsigned char *s = (unsigned char *)tu_slurp_n(p, &n);
    uint64_t hl = 0; for (int k = 7; k >= 0; k--) hl = hl << 8 | s[k];
    assert_int_equal(hl % 8, 0);
    assert_int_equal(n, 8 + hl + 4 * (size_t)a.total);
    assert_int_equal(s[8], '{');
    assert_memory_equal(s + 8 + hl, a.data, 4 * (size_t)a.total);
    assert_non_null(strstr((char *)s + 8, "\"embed.weight\":{\"dtype\":\"F32\",\"shape\":[7,5],\"data_offsets\":[0,140]}"));
    free(s);

    char *meta = NULL;
    assert_int_equal(al_safetensors_load(p, &b, &meta, &e), AL_OK);
    assert_memory_equal(a.data, b.data, 4 * (size_t)a.total);
    assert_non_null(meta);
    char *v = al_meta_get(meta, "model"); assert_string_equal(v, "cnn"); free(v);
    v = al_meta_get(meta, "note"); assert_string_equal(v, "tab\there \"quoted\" back\\slash \xc3\xa9"); free(v);
    v = al_meta_get(meta, "epoch"); assert_string_equal(v, "12"); free(v);
    assert_null(al_meta_get(meta, "absent"));
    free(meta);
    /* no metadata: meta is "{}" */
    assert_int_equal(al_safetensors_save(p, &a, NULL, 0, &e), AL_OK);
    assert_int_equal(al_safetensors_load(p, &b, &meta, &e), AL_OK);
    assert_string_equal(meta, "{}");
    free(meta);
    al_params_free(&a); al_params_free(&b);
}

/* Write a safetensors file with a given header text and n data bytes (pattern). */
static void write_st(const char *path, const char *header, size_t ndata, int64_t claimed_len)
{
    size_t hl = strlen(header);
    unsigned char *b = calloc(8 + hl + ndata + 1, 1);
    uint64_t L = claimed_len >= 0 ? (uint64_t)claimed_len : hl;
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)(L >> (8 * k));
    memcpy(b + 8, header, hl);
    for (size_t i = 0; i < ndata; i++) b[8 + hl + i] = (unsigned char)i;
    spit(path, b, 8 + hl + ndata);
    free(b);
}

static void check_refused(al_params *p, const char *path, const char *want)
{
    float *before = malloc(4 * (size_t)p->total);
    memcpy(before, p->data, 4 * (size_t)p->total);
    al_error e = {{0}};
    char *meta = (char *)1;
    if (al_safetensors_load(path, p, &meta, &e) != AL_ERR) fail_msg("%s: load succeeded, expected '%s'", path, want);
    if (!strstr(e.msg, want)) fail_msg("%s: error '%s' does not mention '%s'", path, e.msg, want);
    if (!strstr(e.msg, path)) fail_msg("error '%s' does not name the file %s", e.msg, path);
    if (getenv("AL_TEST_VERBOSE")) print_message("  refused: %s\n", e.msg);
    assert_null(meta);
    assert_memory_equal(before, p->data, 4 * (size_t)p->total);   /* parameters untouched */
    free(before);
}
static void refuse_header(al_params *p, const char *name, const char *header, size_t ndata, int64_t claimed, const char *want)
{
    const char *path = tpath(name);
    write_st(path, header, ndata, claimed);
    check_refused(p, path, want);
}

static void test_safetensors_refusals(void **st)
{
    (void)st;
    al_params p; al_params_init(&p);
    al_params_add(&p, "w", 2, (int[]){2, 3}, (al_init){AL_INIT_ONES, 0});
    al_params_add(&p, "b", 1, (int[]){2}, (al_init){AL_INIT_ONES, 0});
    al_rng r; al_rng_seed(&r, 1, 1); al_error e = {{0}};
    assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
    const char *W = "\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}";
    const char *B = "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,32]}";
    char h[1024];

    /* the well-formed file loads (so each refusal below is caused by its one defect) */
    snprintf(h, sizeof h, "{%s,%s}", W, B);
    write_st(tpath("good.st"), h, 32, -1);
    assert_int_equal(al_safetensors_load(tpath("good.st"), &p, NULL, &e), AL_OK);
    assert_true(p.data[1] != 1.0f);   /* the pattern bytes were loaded */
    for (int i = 0; i < 8; i++) p.data[i] = 1.0f;

    /* truncated: fewer than 8 bytes; the data section cut short */
    spit(tpath("tiny.st"), "\x10\0\0", 3);
    check_refused(&p, tpath("tiny.st"), "truncated");
    refuse_header(&p, "short.st", h, 28, -1, "out of range");
    refuse_header(&p, "empty.st", "", 0, -1, "cannot hold");
    /* header length larger than the file */
    refuse_header(&p, "hlen.st", h, 32, 1000, "larger than the file");
    refuse_header(&p, "hlen2.st", h, 32, (int64_t)1 << 62, "larger than the file");
    /* unparsable JSON, several ways */
    refuse_header(&p, "json1.st", "{\"w\":{\"dtype\":\"F32\",", 32, -1, "not valid JSON");
    refuse_header(&p, "json2.st", "{\"w\" {}}", 32, -1, "not valid JSON");
    refuse_header(&p, "json3.st", "{\"w\":\"\\x\"}", 32, -1, "not valid JSON");
    refuse_header(&p, "json4.st", "{\"w\":[1,2,]}", 32, -1, "not valid JSON");
    refuse_header(&p, "json5.st", "{\"a\":1} x", 32, -1, "not valid JSON");
    refuse_header(&p, "json6.st", "{\"a\":\"\\ud800\"}", 32, -1, "not valid JSON");
    refuse_header(&p, "json7.st", "{\"a\":1,\"a\":2}", 32, -1, "duplicate key");
    char deep[400]; memset(deep, '[', 300); deep[300] = 0;
    refuse_header(&p, "json8.st", deep, 32, -1, "nesting too deep");
    refuse_header(&p, "json9.st", "[1,2]", 32, -1, "not a JSON object");
    /* wrong dtype */
    snprintf(h, sizeof h, "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[0,12]},%s}", B);
    refuse_header(&p, "dtype.st", h, 32, -1, "dtype F16");
    /* a tensor missing, and one the model does not have */
    snprintf(h, sizeof h, "{%s}", W);
    refuse_header(&p, "missing.st", h, 32, -1, "'b' is missing");
    snprintf(h, sizeof h, "{%s,%s,\"zz\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[32,36]}}", W, B);
    refuse_header(&p, "extra.st", h, 36, -1, "'zz' is in the file but not in the model");
    /* shape mismatch (same number of elements, different shape) */
    snprintf(h, sizeof h, "{\"w\":{\"dtype\":\"F32\",\"shape\":[3,2],\"data_offsets\":[0,24]},%s}", B);
    refuse_header(&p, "shape.st", h, 32, -1, "shape mismatch: file has [3, 2], model has (2, 3)");
    /* offsets out of range, inconsistent with the shape, reversed, negative, and overlapping */
    snprintf(h, sizeof h, "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[28,36]}}", W);
    refuse_header(&p, "range.st", h, 32, -1, "out of range");
    snprintf(h, sizeof h, "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[24,30]}}", W);
    refuse_header(&p, "span.st", h, 32, -1, "shape needs 8");
    snprintf(h, sizeof h, "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[32,24]}}", W);
    refuse_header(&p, "reversed.st", h, 32, -1, "out of range");
    snprintf(h, sizeof h, "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[-8,0]}}", W);
    refuse_header(&p, "negative.st", h, 32, -1, "non-negative");
    snprintf(h, sizeof h, "{%s,\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]}}", W);
    refuse_header(&p, "overlap.st", h, 32, -1, "overlap");
    snprintf(h, sizeof h, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3.5],\"data_offsets\":[0,24]},%s}", B);
    refuse_header(&p, "fracdim.st", h, 32, -1, "shape entry 1");
    snprintf(h, sizeof h, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3]},%s}", B);
    refuse_header(&p, "nooffs.st", h, 32, -1, "data_offsets");
    /* a file that does not exist */
    check_refused(&p, tpath("nope.st"), "cannot open");
    al_params_free(&p);
}

static void test_meta_get_json(void **st)
{
    (void)st;
    char *v = al_meta_get("{\"k\":\"v\\u00e9\\ud83d\\ude00\\n\",\"n\":\"1\"}", "k");
    assert_string_equal(v, "v\xc3\xa9\xf0\x9f\x98\x80\n");
    free(v);
    assert_null(al_meta_get("{\"k\":1}", "k"));          /* not a string */
    assert_null(al_meta_get("{\"k\":\"v\"", "k"));       /* broken JSON */
    assert_null(al_meta_get(NULL, "k"));
}

/* ---------------------------------------------------------------- PNG */
static void test_png_roundtrip(void **st)
{
    (void)st;
    const int w = 7, h = 5;
    for (int ch = 1; ch <= 4; ch++) {
        uint8_t *pix = malloc((size_t)w * h * ch);
        for (int i = 0; i < w * h * ch; i++) pix[i] = (uint8_t)(i * 37 + ch);
        char name[32]; snprintf(name, sizeof name, "img%d.png", ch);
        const char *p = tpath(name);
        al_error e = {{0}};
        assert_int_equal(al_png_write(p, pix, w, h, ch, &e), AL_OK);
        png_image img; memset(&img, 0, sizeof img); img.version = PNG_IMAGE_VERSION;
        assert_true(png_image_begin_read_from_file(&img, p));
        assert_int_equal(img.width, w); assert_int_equal(img.height, h);
        img.format = ch == 1 ? PNG_FORMAT_GRAY : ch == 2 ? PNG_FORMAT_GA : ch == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_RGBA;
        uint8_t *back = malloc(PNG_IMAGE_SIZE(img));
        assert_true(png_image_finish_read(&img, NULL, back, 0, NULL));
        assert_memory_equal(back, pix, (size_t)w * h * ch);
        free(back); free(pix);
    }
    al_error e = {{0}};
    uint8_t px[4] = {0};
    assert_int_equal(al_png_write(tpath("bad.png"), px, 1, 1, 5, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "channels"));
    memset(&e, 0, sizeof e);
    assert_int_equal(al_png_write(tpath("no/dir/x.png"), px, 1, 1, 1, &e), AL_ERR);
    assert_non_null(strstr(e.msg, "no/dir/x.png"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_csv_format_and_nan),
        cmocka_unit_test(test_csv_header_once),
        cmocka_unit_test(test_csv_torn_line_repaired),
        cmocka_unit_test(test_csv_header_mismatch),
        cmocka_unit_test(test_csv_concurrent_appends),
        cmocka_unit_test(test_run_id_fnv1a),
        cmocka_unit_test(test_write_atomic),
        cmocka_unit_test(test_safetensors_roundtrip),
        cmocka_unit_test(test_safetensors_refusals),
        cmocka_unit_test(test_meta_get_json),
        cmocka_unit_test(test_png_roundtrip),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
