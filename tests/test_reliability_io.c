/* test_reliability_io.c — known holes in the checkpoint / JSON / results /
 * file-writing code, each with its minimal input (also under tests/data/): a header that ends inside
 * the key "__metadata__", empty JSON strings, a tiny checkpoint whose metadata describes a huge model,
 * metadata sizes that overflowed int, the memory budget, torn results CSVs, short writes, directories
 * where a file is expected, long paths in messages, output targets checked before any work, weights
 * and normalisation that must be finite. */
#include "testutil.h"
#include "attnlab/io.h"
#include "attnlab/checkpoint.h"
#include "attnlab/results.h"
#include "io/io_impl.h"
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];
static int rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *f) { (void)sb; (void)flag; (void)f; return remove(p); }
static int setup(void **st) { (void)st; snprintf(tmpdir, sizeof tmpdir, "/tmp/attnlab_relio_XXXXXX"); return mkdtemp(tmpdir) ? 0 : -1; }
static int teardown(void **st) { (void)st; al_mem_budget_set(0); return nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS); }
static char *tpath(const char *name) { static char b[4][512]; static int k; k = (k + 1) % 4; snprintf(b[k], sizeof b[k], "%s/%s", tmpdir, name); return b[k]; }
static void spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
}
/* A safetensors file: 8-byte length of header, the header, then ndata pattern bytes. */
static void write_st(const char *path, const char *header, size_t ndata)
{
    size_t hl = strlen(header), n = 8 + hl + ndata;
    unsigned char *b = calloc(n, 1);
    assert_non_null(b);
    for (int k = 0; k < 8; k++) b[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(b + 8, header, hl);
    spit(path, b, n);
    free(b);
}
/* Leaves a freed 256-byte chunk full of 'x' for the next malloc(256) to reuse (glibc tcache), so a
 * string buffer that is never NUL-terminated shows up outside ASan too. */
static void dirty_heap(void)
{
    char *junk = malloc(256);
    memset(junk, 'x', 256);
    __asm__ volatile("" : : "r"(junk) : "memory");
    free(junk);
}
#define ASSERT_HAS(msg, s) do { if (!strstr((msg), (s))) fail_msg("message \"%s\" lacks \"%s\"", (msg), (s)); } while (0)

/* 1a. The 22-byte file the fuzzer found: length 14, then {"__metadata__ (the key never ends). */
static void test_header_ends_inside_metadata_key(void **st)
{
    (void)st;
    static const unsigned char b[22] = {14, 0, 0, 0, 0, 0, 0, 0, '{', '"', '_', '_', 'm', 'e', 't', 'a', 'd', 'a', 't', 'a', '_', '_'};
    const char *paths[2] = {tpath("key.st"), "tests/data/st-header-ends-in-key.safetensors"};
    spit(paths[0], b, sizeof b);
    for (int i = 0; i < 2; i++) {
        char *meta = (char *)1; al_error e = {{0}};
        assert_int_equal(al_safetensors_read_meta(paths[i], &meta, &e), AL_ERR);
        assert_null(meta);
        ASSERT_HAS(e.msg, "not valid JSON");
        ASSERT_HAS(e.msg, "unterminated string");
        al_model m; float mean[4], sd[4]; al_error e2 = {{0}};
        assert_int_equal(al_model_load(paths[i], &m, mean, sd, NULL, &e2), AL_ERR);
        uint64_t tb; int nt; al_error e3 = {{0}};
        assert_int_equal(al_safetensors_read_info(paths[i], NULL, &tb, &nt, &e3), AL_ERR);
    }
}

/* 1b. An empty JSON string "" decoded to an unterminated buffer: strcmp/strdup read past it. */
static void test_empty_json_strings(void **st)
{
    (void)st;
    char e[200];
    dirty_heap();
    al_jval *v = al_json_parse("\"\"", 2, e, sizeof e);
    assert_non_null(v);
    assert_int_equal(v->t, AL_J_STR);
    assert_int_equal(v->slen, 0);
    assert_int_equal(v->s[0], 0);
    al_json_free(v);

    /* {"__metadata__":{"format":""}}: the metadata reads, the format is "", not an image checkpoint */
    write_st(tpath("fmt.st"), "{\"__metadata__\":{\"format\":\"\"}}", 0);
    const char *fpaths[2] = {tpath("fmt.st"), "tests/data/st-empty-format.safetensors"};
    for (int i = 0; i < 2; i++) {
        char *meta = NULL; al_error err = {{0}};
        dirty_heap();
        assert_int_equal(al_safetensors_read_meta(fpaths[i], &meta, &err), AL_OK);
        dirty_heap();
        char *f = al_meta_get(meta, "format");
        assert_non_null(f);
        assert_string_equal(f, "");
        free(f); free(meta);
        al_model m; float mean[4], sd[4]; al_error e2 = {{0}};
        assert_int_equal(al_model_load(fpaths[i], &m, mean, sd, NULL, &e2), AL_ERR);
        ASSERT_HAS(e2.msg, "not an attnlab image-model checkpoint");
    }

    /* an empty dtype is refused by name, not read past */
    write_st(tpath("dtype.st"), "{\"w\":{\"dtype\":\"\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    const char *dpaths[2] = {tpath("dtype.st"), "tests/data/st-empty-dtype.safetensors"};
    for (int i = 0; i < 2; i++) {
        al_params p; al_params_init(&p);
        al_params_add(&p, "w", 1, (int[]){1}, (al_init){AL_INIT_ONES, 0});
        al_rng r; al_rng_seed(&r, 1, 1); al_error err = {{0}};
        assert_int_equal(al_params_finalize(&p, &r, &err), AL_OK);
        dirty_heap();
        assert_int_equal(al_safetensors_load(dpaths[i], &p, NULL, &err), AL_ERR);
        ASSERT_HAS(err.msg, "has dtype ; only F32");
        al_params_free(&p);
    }
    /* empty keys and values everywhere */
    write_st(tpath("keys.st"), "{\"\":{\"\":\"\"},\"__metadata__\":{\"\":\"\"}}", 0);
    char *meta = NULL; al_error err = {{0}};
    dirty_heap();
    assert_int_equal(al_safetensors_read_meta(tpath("keys.st"), &meta, &err), AL_OK);
    char *x = al_meta_get(meta, "");
    assert_non_null(x); assert_string_equal(x, "");
    free(x); free(meta);
}

/* 2. A few-KB checkpoint whose metadata says depth 16, dim 4096: refused from the header, before the
 * model (about 3.3 G parameters) is allocated. */
static const char *META_BIG[] = {
    "format", "attnlab-image", "model", "sa", "channels", "1", "height", "28", "width", "28", "classes", "10",
    "dim", "4096", "depth", "16", "heads", "4", "hidden", "128", "patch", "2", "window", "5",
    "pos", "learned", "score", "dot", "norm", "softmax", "mean", "0.5", "std", "0.25"};
static void test_tiny_checkpoint_huge_model(void **st)
{
    (void)st;
    al_params p; al_params_init(&p);
    al_params_add(&p, "embed.weight", 2, (int[]){32, 40}, (al_init){AL_INIT_ONES, 0});
    al_rng r; al_rng_seed(&r, 1, 1); al_error e = {{0}};
    assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
    assert_int_equal(al_safetensors_save(tpath("big.st"), &p, META_BIG, 17, &e), AL_OK);
    al_params_free(&p);
    const char *paths[2] = {tpath("big.st"), "tests/data/st-tiny-file-huge-model.safetensors"};
    for (int i = 0; i < 2; i++) {
        struct stat sb; assert_int_equal(stat(paths[i], &sb), 0);
        assert_true(sb.st_size < 8192);
        al_model m; float mean[4], sd[4]; al_error e2 = {{0}};
        assert_int_equal(al_model_load(paths[i], &m, mean, sd, NULL, &e2), AL_ERR);
        /* with the default budget (half the RAM) the size comparison or the budget refuses it */
        if (!strstr(e2.msg, "memory budget")) { ASSERT_HAS(e2.msg, "describes a sa of"); ASSERT_HAS(e2.msg, "5.0 KiB"); }
        /* with a small budget: the budget, before any allocation */
        al_mem_budget_set(64 << 20);
        al_error e3 = {{0}};
        assert_int_equal(al_model_load(paths[i], &m, mean, sd, NULL, &e3), AL_ERR);
        ASSERT_HAS(e3.msg, "memory budget of 64.0 MiB");
        /* with a huge budget: the tensors' total against the metadata's model */
        al_mem_budget_set((uint64_t)1 << 50);
        al_error e4 = {{0}};
        assert_int_equal(al_model_load(paths[i], &m, mean, sd, NULL, &e4), AL_ERR);
        ASSERT_HAS(e4.msg, "describes a sa of");
        ASSERT_HAS(e4.msg, "tensors hold 5.0 KiB");
        al_mem_budget_set(0);
    }
}

/* 2b. Sizes from metadata that overflowed int in the models' init: 64·(h/4)·(w/4), the token grid. */
static void test_metadata_sizes_do_not_overflow(void **st)
{
    (void)st;
    const char *models[3] = {"cnn", "sa", "local"};
    for (int k = 0; k < 3; k++) {
        char meta[1024];
        snprintf(meta, sizeof meta,
                 "{\"model\":\"%s\",\"channels\":\"1\",\"height\":\"1048576\",\"width\":\"1048576\",\"classes\":\"10\",\"dim\":\"64\","
                 "\"depth\":\"2\",\"heads\":\"4\",\"hidden\":\"128\",\"patch\":\"1\",\"window\":\"1048575\",\"pos\":\"relative\","
                 "\"score\":\"dot\",\"norm\":\"softmax\"}", models[k]);
        al_model_config cfg; al_error e = {{0}};
        assert_int_equal(al_model_config_from_meta(&cfg, meta, &e), AL_ERR);
        ASSERT_HAS(e.msg, "exceeds the limit");
        int64_t n; al_error e2 = {{0}};
        cfg.height = cfg.width = 16384; cfg.window = 1048575;
        assert_int_equal(al_model_config_params(&cfg, &n, &e2), AL_ERR);
    }
    /* the largest accepted sizes register (shapes only) without overflow, and the budget speaks */
    al_model_config cfg; al_error e = {{0}};
    assert_int_equal(al_model_config_default(&cfg, "cnn", 1, 16384, 16384, 10, &e), AL_OK);
    int64_t n = 0;
    al_error e2 = {{0}};
    al_mem_budget_set((uint64_t)1 << 50);
    assert_int_equal(al_model_config_params(&cfg, &n, &e2), AL_OK);
    assert_true(n == 32 * 9 + 32 + 64 * 32 * 9 + 64 + (int64_t)10 * 64 * 4096 * 4096 + 10);
    al_mem_budget_set(1 << 30);
    al_model m; al_error e3 = {{0}};
    assert_int_equal(al_model_init(&m, &cfg, 1, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "memory budget of 1.0 GiB");
    ASSERT_HAS(e3.msg, "cnn: a model of");
    al_mem_budget_set(0);
}

/* The budget API itself: default, set, reset, saturating sizes, the message. */
static void test_budget_api(void **st)
{
    (void)st;
    uint64_t def = al_mem_budget();
    assert_true(def >= (64u << 20));
    al_mem_budget_set(1000);
    assert_true(al_mem_budget() == 1000);
    al_error e = {{0}};
    assert_int_equal(al_mem_check(1000, &e, "x"), AL_OK);
    assert_int_equal(al_mem_check(1001, &e, "%s: %d things", "file.bin", 7), AL_ERR);
    assert_string_equal(e.msg, "file.bin: 7 things: needs 1001 B, more than the memory budget of 1000 B (raise it with --max-memory or ATTNLAB_MEM_BUDGET)");
    al_mem_budget_set(0);
    assert_true(al_mem_budget() == def);
    assert_true(al_size_mul(UINT64_MAX / 2, 3) == UINT64_MAX);
    assert_true(al_size_mul(1u << 31, 1u << 31) == (uint64_t)1 << 62);
    assert_true(al_size_add(UINT64_MAX, 1) == UINT64_MAX);
    al_error e2 = {{0}};
    assert_int_equal(al_mem_check(al_size_mul(UINT64_MAX, 2), &e2, "y"), AL_ERR);
    ASSERT_HAS(e2.msg, "more than 16 EiB");
    /* a path of 2000 bytes keeps the reason */
    char lp[2100]; memset(lp, 'd', 2000); lp[0] = '/'; lp[2000] = 0;
    al_error e3 = {{0}};
    al_mem_budget_set(10);
    assert_int_equal(al_mem_check(11, &e3, "%s: some file", lp), AL_ERR);
    ASSERT_HAS(e3.msg, "...");
    ASSERT_HAS(e3.msg, "more than the memory budget of 10 B");
    al_mem_budget_set(0);
    setenv("ATTNLAB_MEM_BUDGET", "3G", 1);
    assert_true(al_mem_budget_default() == (uint64_t)3 << 30);
    unsetenv("ATTNLAB_MEM_BUDGET");
    /* the size grammar of ATTNLAB_MEM_BUDGET and --max-memory */
    static const struct { const char *s; int rc; uint64_t v; } sz[] = {
        {"1048576", 0, 1048576}, {"512M", 0, (uint64_t)512 << 20}, {"2G", 0, (uint64_t)2 << 30}, {"2gb", 0, (uint64_t)2 << 30},
        {"3T", 0, (uint64_t)3 << 40}, {"1K", 0, 1024}, {"4GiB", 0, (uint64_t)4 << 30}, {"5iB", -1, 0}, {"5Gi", -1, 0}, {"0", -1, 0}, {"0G", -1, 0}, {"-1G", -1, 0}, {" 5", -1, 0},
        {"", -1, 0}, {"G", -1, 0}, {"2X", -1, 0}, {"2GBs", -1, 0}, {"1.5G", -1, 0}, {"99999999T", 1, UINT64_MAX},
        {"99999999999999999999999", 1, UINT64_MAX}};
    for (size_t i = 0; i < sizeof sz / sizeof sz[0]; i++) {
        uint64_t v = 7;
        int rc = al_mem_parse(sz[i].s, &v);
        if (rc != sz[i].rc || (rc >= 0 && v != sz[i].v)) fail_msg("al_mem_parse(\"%s\") = %d, %llu", sz[i].s, rc, (unsigned long long)v);
    }
    assert_int_equal(al_mem_parse(NULL, &(uint64_t){0}), -1);
}

/* 3. Torn results CSVs: the reader names the line; the tolerant reader drops it and says so. */
static void test_results_torn_last_line(void **st)
{
    (void)st;
    const char *txt = AL_CSV_HEADER_V2 "\n"   /* a file of attnlab 0.4 (16 columns) */
                      "r1,image,d,cnn,10,1,1,0.5,0.5,,0.4,1.0,10.0,100,lr=0.1,\n"
                      "r1,image,d,cnn,10,1,2,0.4,0.6,,0.5,1.0,10.0,1";   /* cut inside the params field */
    spit(tpath("torn.csv"), txt, strlen(txt));
    const char *paths[2] = {tpath("torn.csv"), "tests/data/results-torn-last-line.csv"};
    for (int i = 0; i < 2; i++) {
        al_results r; al_error e = {{0}};
        assert_int_equal(al_results_read(paths[i], &r, &e), AL_ERR);
        ASSERT_HAS(e.msg, ":3: incomplete last line");
        char note[AL_ERRLEN]; al_error e2 = {{0}};
        assert_int_equal(al_results_read_ex(paths[i], AL_RESULTS_DROP_TORN, &r, note, &e2), AL_OK);
        assert_int_equal(r.n, 1);
        assert_int_equal(r.row[0].epoch, 1);
        ASSERT_HAS(note, ":3: incomplete last line");
        ASSERT_HAS(note, "dropped");
        al_results_free(&r);
    }
    /* a complete file: nothing dropped, the note is empty; a torn header alone: an empty set */
    const char *ok = AL_CSV_HEADER_V2 "\n";
    spit(tpath("ok.csv"), ok, strlen(ok));
    al_results r; char note[AL_ERRLEN]; al_error e = {{0}};
    assert_int_equal(al_results_read_ex(tpath("ok.csv"), AL_RESULTS_DROP_TORN, &r, note, &e), AL_OK);
    assert_int_equal(note[0], 0); al_results_free(&r);
    spit(tpath("hdr.csv"), "run_id,ta", 9);
    assert_int_equal(al_results_read_ex(tpath("hdr.csv"), AL_RESULTS_DROP_TORN, &r, note, &e), AL_OK);
    assert_int_equal(r.n, 0); ASSERT_HAS(note, ":1: incomplete"); al_results_free(&r);
    /* other damage is still an error under the tolerant reader */
    const char *bad = AL_CSV_HEADER_V2 "\nr1,image\nr2,x\n";
    spit(tpath("bad.csv"), bad, strlen(bad));
    al_error e3 = {{0}};
    assert_int_equal(al_results_read_ex(tpath("bad.csv"), AL_RESULTS_DROP_TORN, &r, note, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, ":2: expected 16");   /* the 16-column header of 0.4 */
}

static const al_csv_row ROW = {"abc", "image", "d", "cnn", 10, 1, 1, 0.5, 0.5, 0.5, 0.5, 1.0, 10.0, 100, NULL, NULL, 0, 0, 0, 0, 0, 0};

/* 3. ENOSPC says so: /dev/full for the CSV append. */
static void test_csv_append_disk_full(void **st)
{
    (void)st;
    if (access("/dev/full", W_OK) != 0) { skip(); return; }
    al_error e = {{0}};
    assert_int_equal(al_csv_append("/dev/full", &ROW, &e), AL_ERR);
    ASSERT_HAS(e.msg, "No space left on device");
}

/* 3. A short write (the file-size limit cuts the row) reports the real reason, not EIO. Run in a child
 * with RLIMIT_FSIZE: the kernel writes what fits and then refuses, as a full disk does. */
static void test_short_writes_say_why(void **st)
{
    (void)st;
    for (int which = 0; which < 2; which++) {
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {150, 150};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
            al_error e = {{0}};
            al_status s;
            if (which == 0) s = al_csv_append(tpath("short.csv"), &ROW, &e);   /* header 146 bytes + row > 150 */
            else { char big[1000]; memset(big, 'a', sizeof big); s = al_write_atomic(tpath("short.bin"), big, sizeof big, &e); }
            if (s == AL_OK) _exit(4);
            if (strstr(e.msg, "Input/output error")) _exit(5);
            if (!strstr(e.msg, "File too large")) _exit(6);
            _exit(0);
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) != 0) fail_msg("short write %d: child exit %d", which, WEXITSTATUS(status));
    }
}

/* 3. A directory where a file is expected: "is a directory", not "read failed". */
static void test_directory_instead_of_file(void **st)
{
    (void)st;
    mkdir(tpath("adir"), 0755);
    char *d = NULL; size_t n; al_error e = {{0}};
    assert_int_equal(al_read_file(tpath("adir"), &d, &n, &e), AL_ERR);
    ASSERT_HAS(e.msg, "is a directory");
    al_results r; al_error e2 = {{0}};
    assert_int_equal(al_results_read(tpath("adir"), &r, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "is a directory");
    char *meta; al_error e3 = {{0}};
    assert_int_equal(al_safetensors_read_meta(tpath("adir"), &meta, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "is a directory");
}

/* 4. Output targets checked before any work (al_output_check, al_csv_check): a missing directory, a
 * directory as the target, a parent that is a file, a foreign CSV; what passes leaves no file behind. */
static void test_output_checks(void **st)
{
    (void)st;
    mkdir(tpath("out"), 0755);
    static const struct { const char *name, *why; int csv; } bad[] = {
        {"out/no/such/x.st", "directory '", 0}, {"out", "is a directory, expected a file name", 0},
        {"out", "is a directory, expected a file name", 1}, {"out/", "is a directory", 0},
        {"out/new/", "ends in '/'", 0}, {"plain.txt/x.csv", "plain.txt' is not a directory", 1}};
    spit(tpath("plain.txt"), "hello\n", 6);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        al_error e = {{0}};
        al_status r = bad[i].csv ? al_csv_check(tpath(bad[i].name), &e) : al_output_check(tpath(bad[i].name), &e);
        if (r != AL_ERR || !strstr(e.msg, bad[i].why)) fail_msg("%s: status %d, message '%s' (want '%s')", bad[i].name, r, e.msg, bad[i].why);
    }
    al_error e = {{0}};
    assert_int_equal(al_output_check("", &e), AL_ERR);
    ASSERT_HAS(e.msg, "empty file name");
    /* a CSV to append to: foreign header refused; attnlab's header (either version), empty or new accepted */
    al_error e2 = {{0}};
    assert_int_equal(al_csv_check(tpath("plain.txt"), &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "not attnlab's results header");
    spit(tpath("out/v1.csv"), AL_CSV_HEADER_V1 "\n", strlen(AL_CSV_HEADER_V1) + 1);
    spit(tpath("out/empty.csv"), "", 0);
    const char *ok[] = {"out/v1.csv", "out/empty.csv", "out/new.csv"};
    for (int i = 0; i < 3; i++) { al_error e3 = {{0}}; if (al_csv_check(tpath(ok[i]), &e3) != AL_OK) fail_msg("%s: %s", ok[i], e3.msg); }
    al_error e4 = {{0}};
    assert_int_equal(al_output_check(tpath("out/model.st"), &e4), AL_OK);
    assert_int_equal(access(tpath("out/model.st"), F_OK), -1);   /* the probe is gone */
    assert_int_equal(access(tpath("out/new.csv"), F_OK), -1);
    /* a directory that takes no new file: only where one exists for this user (root writes anywhere) */
    int fd = open("/sys/attnlab-probe", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) { close(fd); unlink("/sys/attnlab-probe"); }
    else if (access("/sys", F_OK) == 0) {
        al_error e5 = {{0}};
        assert_int_equal(al_output_check("/sys/attnlab.csv", &e5), AL_ERR);
        ASSERT_HAS(e5.msg, "cannot create files in directory '/sys'");
    }
}

/* 5. A checkpoint whose weights hold a NaN or an infinity is refused with the tensor and the byte
 * offset (and the parameters are left as they were); a std of 0, below 0 or NaN, or a NaN mean, with the key. */
static void test_checkpoint_values_finite(void **st)
{
    (void)st;
    al_params p; al_params_init(&p);
    al_params_add(&p, "a", 1, (int[]){3}, (al_init){AL_INIT_ONES, 0});
    al_params_add(&p, "b", 2, (int[]){2, 2}, (al_init){AL_INIT_ONES, 0});
    al_rng r; al_rng_seed(&r, 1, 1); al_error e = {{0}};
    assert_int_equal(al_params_finalize(&p, &r, &e), AL_OK);
    assert_int_equal(al_safetensors_save(tpath("w.st"), &p, NULL, 0, &e), AL_OK);
    size_t n; char *b = tu_slurp_n(tpath("w.st"), &n);
    assert_non_null(b);
    uint64_t hl = 0; for (int k = 7; k >= 0; k--) hl = hl << 8 | (unsigned char)b[k];
    const float bad[2] = {NAN, -INFINITY};
    const char *what[2] = {"tensor 'b' holds NaN at element 1", "tensor 'b' holds an infinity at element 1"};
    for (int i = 0; i < 2; i++) {
        memcpy(b + 8 + hl + 3 * 4 + 1 * 4, &bad[i], 4);   /* b[1], after a's three floats */
        spit(tpath("bad.st"), b, n);
        for (int64_t j = 0; j < p.total; j++) p.data[j] = 7.f;
        al_error e2 = {{0}};
        assert_int_equal(al_safetensors_load(tpath("bad.st"), &p, NULL, &e2), AL_ERR);
        ASSERT_HAS(e2.msg, what[i]);
        char off[64]; snprintf(off, sizeof off, "(byte offset %llu)", (unsigned long long)(8 + hl + 16));
        ASSERT_HAS(e2.msg, off);
        for (int64_t j = 0; j < p.total; j++) assert_true(p.data[j] == 7.f);
    }
    free(b);
    al_params_free(&p);
    /* the normalisation of an image checkpoint */
    al_model_config cfg; al_model m;
    assert_int_equal(al_model_config_default(&cfg, "sa", 1, 4, 4, 2, &e), AL_OK);
    cfg.dim = 8; cfg.hidden = 16; cfg.depth = 1; cfg.heads = 1; cfg.patch = 2;
    assert_int_equal(al_model_init(&m, &cfg, 1, &e), AL_OK);
    static const struct { float mean, std; const char *why; } norm[] = {
        {0.5f, 0.f, "metadata 'std' is \"0\": expected 1 positive finite number"}, {0.5f, -2.f, "metadata 'std' is \"-2\""},
        {0.5f, NAN, "metadata 'std' is \"nan\""}, {INFINITY, 1.f, "metadata 'mean' is \"inf\": expected 1 finite number"},
        {0.5f, 0.25f, NULL}};
    for (size_t i = 0; i < sizeof norm / sizeof norm[0]; i++) {
        float mean[4] = {norm[i].mean}, sd[4] = {norm[i].std}, m2[4], s2[4];
        al_error e3 = {{0}};
        assert_int_equal(al_model_save(tpath("n.st"), &m, mean, sd, NULL, 0, &e3), AL_OK);
        al_model back;
        al_status r2 = al_model_load(tpath("n.st"), &back, m2, s2, NULL, &e3);
        if (!norm[i].why) { assert_int_equal(r2, AL_OK); assert_true(s2[0] == 0.25f); al_model_free(&back); continue; }
        assert_int_equal(r2, AL_ERR);
        ASSERT_HAS(e3.msg, "n.st: ");
        ASSERT_HAS(e3.msg, norm[i].why);
    }
    al_model_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_checks),
        cmocka_unit_test(test_checkpoint_values_finite),
        cmocka_unit_test(test_header_ends_inside_metadata_key),
        cmocka_unit_test(test_empty_json_strings),
        cmocka_unit_test(test_tiny_checkpoint_huge_model),
        cmocka_unit_test(test_metadata_sizes_do_not_overflow),
        cmocka_unit_test(test_budget_api),
        cmocka_unit_test(test_results_torn_last_line),
        cmocka_unit_test(test_csv_append_disk_full),
        cmocka_unit_test(test_short_writes_say_why),
        cmocka_unit_test(test_directory_instead_of_file),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
