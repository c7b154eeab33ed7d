/* test_reliability_input.c — every input through one safe path, under the memory budget (io.h:
 * al_input_open): a named FIFO without a writer, a device, a directory given where a file is read is one
 * line at once, never a hang or an unbounded read; stdin and pipes are read, and stopped once they pass
 * the budget; the boundaries of the budget on files and streams; tag, generated sequences and data
 * import check the budget before they allocate or write. Library calls that could block run in a child
 * with an alarm, CLI runs under a deadline with their peak memory measured (wait4). */
#include "testutil.h"
#include "attnlab/graph.h"
#include "attnlab/images.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include "attnlab/text.h"
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SEQ_CKPT "tests/bad-inputs/ckpt/seq-ok.safetensors"
#define GRAPH_OK "tests/bad-inputs/graph/ok"
#if defined(__SANITIZE_ADDRESS__)
#define RSS_LIMIT_KB (768L * 1024)   /* AddressSanitizer's shadow and quarantine */
#else
#define RSS_LIMIT_KB (96L * 1024)
#endif

/* In a child that runs a reader: 2 GiB of address space at most, so that a reader without the checks
 * fails on memory instead of taking the machine's (not under ASan, which reserves terabytes). */
static void limit_memory(void)
{
#if !defined(__SANITIZE_ADDRESS__)
    struct rlimit rl = {(rlim_t)2 << 30, (rlim_t)2 << 30};
    (void)setrlimit(RLIMIT_AS, &rl);
#endif
}

static int setup(void **st) { (void)st; return tu_tmpdir_make("input"); }
static int teardown(void **st) { (void)st; al_mem_budget_set(0); return tu_tmpdir_remove(); }
/* A command line (one of 8 rotating buffers). */
static const char *args(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *args(const char *fmt, ...)
{
    static char b[8][2048];
    static int k;
    k = (k + 1) % 8;
    va_list ap; va_start(ap, fmt);
    vsnprintf(b[k], sizeof b[k], fmt, ap);
    va_end(ap);
    return b[k];
}
#define ASSERT_HAS(msg, s) do { if (!strstr((msg), (s))) fail_msg("message \"%s\" lacks \"%s\"", (msg), (s)); } while (0)

/* ---------------- running bin/attnlab under a deadline ---------------- */
/* Bytes written to the command's descriptor fd (0: stdin; 3: read as /dev/fd/3) by a writer process:
 * once, or again and again until the reader goes (endless). */
typedef struct feed { int fd; const char *text; int endless; } feed;
typedef struct run { int rc, timed_out; long maxrss_kb; char *out, *err; } run;

/* A process that writes f->text into a pipe whose read end it returns in *rd. */
static pid_t start_writer(const feed *f, int *rd)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t w = fork();
    assert_true(w >= 0);
    if (w == 0) {
        close(p[0]);
        signal(SIGPIPE, SIG_DFL);
        size_t n = strlen(f->text);
        do {
            for (size_t o = 0; o < n;) { ssize_t k = write(p[1], f->text + o, n - o); if (k <= 0) _exit(0); o += (size_t)k; }
        } while (f->endless);
        _exit(0);
    }
    close(p[1]);
    *rd = p[0];
    return w;
}

/* `attnlab ARGS` (words split at spaces) with stdin from /dev/null unless a feed names fd 0, killed
 * after timeout_s seconds. r gets the exit status, whether it was killed, its peak RSS, its output. */
static void run_cli(run *r, const char *args, const feed *f, int nfeed, int timeout_s)
{
    memset(r, 0, sizeof *r);
    char *copy = strdup(args), *argv[64];
    int argc = 0;
    argv[argc++] = (char *)tu_attnlab_bin();
    for (char *s = strtok(copy, " "); s && argc < 63; s = strtok(NULL, " ")) argv[argc++] = s;
    argv[argc] = NULL;
    pid_t wr[2] = {0, 0};
    int rd[2] = {-1, -1};
    for (int i = 0; i < nfeed; i++) wr[i] = start_writer(&f[i], &rd[i]);
    const char *outp = tu_tpath("out.txt"), *errp = tu_tpath("err.txt");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int devnull = open("/dev/null", O_RDONLY), o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644),
            e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(devnull, 0); dup2(o, 1); dup2(e, 2);
        limit_memory();
        for (int i = 0; i < nfeed; i++) dup2(rd[i], f[i].fd);
        execv(argv[0], argv);
        _exit(127);
    }
    for (int i = 0; i < nfeed; i++) close(rd[i]);
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    struct rusage ru;
    for (;;) {   /* a deadline, not a measurement: a command that blocks is killed */
        pid_t k = wait4(pid, &status, WNOHANG, &ru);
        if (k == pid) break;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec >= timeout_s) { kill(pid, SIGKILL); wait4(pid, &status, 0, &ru); r->timed_out = 1; break; }
        usleep(20000);
    }
    for (int i = 0; i < nfeed; i++) { kill(wr[i], SIGKILL); waitpid(wr[i], NULL, 0); }
    r->rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->maxrss_kb = ru.ru_maxrss;
    r->out = tu_slurp(outp); r->err = tu_slurp(errp);
    assert_non_null(r->out); assert_non_null(r->err);
    free(copy);
}
static void run_free(run *r) { free(r->out); free(r->err); }
static int count_lines(const char *s) { int n = 0; for (; *s; s++) n += *s == '\n'; return n; }

/* The command ended by itself (no deadline) with want, one line on stderr that holds needle, within
 * RSS_LIMIT_KB. */
static void expect_refused(const char *args, const feed *f, int nfeed, int timeout_s, int want, const char *needle)
{
    run r;
    run_cli(&r, args, f, nfeed, timeout_s);
    if (r.timed_out) fail_msg("attnlab %s: still running after %d s (killed); stderr:\n%s", args, timeout_s, r.err);
    if (r.rc != want || count_lines(r.err) != 1 || !strstr(r.err, needle))
        fail_msg("attnlab %s: exit %d (want %d), stderr:\n%s(want one line with '%s')", args, r.rc, want, r.err, needle);
    if (r.maxrss_kb > RSS_LIMIT_KB) fail_msg("attnlab %s: peak RSS %ld KiB, more than %ld KiB", args, r.maxrss_kb, RSS_LIMIT_KB);
    run_free(&r);
}

/* ---------------- library calls in a child with an alarm ---------------- */
typedef void (*child_fn)(const char *path);
/* fn(path) in a child killed after 5 s: the child must exit 0 (its checks passed) by itself. */
static void in_child(child_fn fn, const char *path, const char *what)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) { alarm(5); limit_memory(); fn(path); _exit(0); }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) fail_msg("%s on %s: still blocked after 5 s", what, path);
    if (!WIFEXITED(status) || WEXITSTATUS(status)) fail_msg("%s on %s: the child failed (status %d)", what, path, status);
}
/* In the child: fail (exit 1) unless the message holds want. */
static void child_expect(al_status st, const al_error *e, const char *want)
{
    if (st == AL_OK || !strstr(e->msg, want)) { fprintf(stderr, "got %s: '%s', want '%s'\n", st == AL_OK ? "AL_OK" : "AL_ERR", e->msg, want); _exit(1); }
}

static const char *g_want;   /* what the child's readers must say */
static void readers_on(const char *path)
{
    char *text = NULL, *meta = NULL; size_t len;
    al_error e1 = {{0}}, e2 = {{0}}, e3 = {{0}}, e4 = {{0}}, e5 = {{0}};
    child_expect(al_read_file(path, &text, &len, &e1), &e1, g_want);
    child_expect(al_safetensors_read_meta(path, &meta, &e2), &e2, g_want);
    al_results r;
    child_expect(al_results_read(path, &r, &e3), &e3, g_want);
    al_conllu d;
    child_expect(al_conllu_read(path, NULL, &d, &e4), &e4, g_want);
    al_images im;
    child_expect(al_idx_load(path, path, &im, &e5), &e5, g_want);
}

/* 1. A named FIFO with no writer: every reader says so at once (they blocked in open for ever). */
static void test_named_fifo_refused(void **st)
{
    (void)st;
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s", tu_tpath("fifo"));
    assert_int_equal(mkfifo(fifo, 0644), 0);
    g_want = "fifo: is a FIFO, not a regular file";
    in_child(readers_on, fifo, "the readers");
    /* a graph directory whose edges.txt is a FIFO */
    tu_mkdirs(tu_tpath("g"));
    static const char *const files[] = {"features.libsvm", "train.idx", "val.idx", "test.idx"};
    char cmd[512];
    for (int i = 0; i < 4; i++) {
        snprintf(cmd, sizeof cmd, "cp %s/%s %s", GRAPH_OK, files[i], tu_tpath("g/%s", files[i]));
        assert_int_equal(tu_system(cmd), 0);
    }
    assert_int_equal(mkfifo(tu_tpath("g/edges.txt"), 0644), 0);
    expect_refused(args("train --task graph --model gcn --data %s --epochs 1 --quiet", tu_tpath("g")), NULL, 0, 10, 1,
                   "edges.txt: is a FIFO, not a regular file");
}

/* 2. The commands of the CLI on a FIFO: one line within seconds, not a hang. */
static void test_cli_fifo_refused(void **st)
{
    (void)st;
    char fifo[512];   /* tu_tpath's buffers rotate; run_cli takes two of them each time */
    snprintf(fifo, sizeof fifo, "%s", tu_tpath("cli-fifo"));
    assert_int_equal(mkfifo(fifo, 0644), 0);
    const char *want = "cli-fifo: is a FIFO, not a regular file";
    expect_refused(args("eval --load %s --quiet", fifo), NULL, 0, 10, 1, want);
    expect_refused(args("summarize %s", fifo), NULL, 0, 10, 1, want);
    expect_refused(args("tag --load " SEQ_CKPT " %s", fifo), NULL, 0, 10, 1, want);
    expect_refused(args("plot %s --out %s", fifo, tu_tpath("p.png")), NULL, 0, 10, 1, want);
    expect_refused(args("train --task graph --model gcn --data " GRAPH_OK " --epochs 1 --quiet --resume --checkpoint %s", fifo),
                   NULL, 0, 20, 1, want);
}

/* 3. Devices: refused before a byte is read, without memory growth (they read /dev/zero until memory
 * ran out). */
static void test_devices_refused(void **st)
{
    (void)st;
    const char *want = "/dev/zero: is a character device, not a regular file";
    expect_refused("summarize /dev/zero", NULL, 0, 10, 1, want);
    expect_refused(args("plot /dev/zero --out %s", tu_tpath("p.png")), NULL, 0, 10, 1, want);
    expect_refused("tag --load " SEQ_CKPT " /dev/zero", NULL, 0, 10, 1, want);
    expect_refused("eval --load /dev/zero --quiet", NULL, 0, 10, 1, want);
    expect_refused("tag --load " SEQ_CKPT " /dev/urandom", NULL, 0, 10, 1, "/dev/urandom: is a character device, not a regular file");
    g_want = "/dev/zero: is a character device, not a regular file";
    in_child(readers_on, "/dev/zero", "the readers");
    char *text; size_t len; al_error e = {{0}};
    assert_int_equal(al_read_file(tu_tmpdir(), &text, &len, &e), AL_ERR);
    ASSERT_HAS(e.msg, "is a directory, expected a file");
}

/* 4. stdin and pipes still work: a sentence through stdin ('-' and none), plain text and CoNLL-U through
 * /dev/fd/3 (as `<(zcat ...)` gives); the CoNLL-U pipe came back empty (it was read twice). */
static void test_tag_pipes_work(void **st)
{
    (void)st;
    static const char *sent = "The cat sat on the mat .\n";
    feed in = {0, sent, 0};
    const char *cmds[] = {"tag --load " SEQ_CKPT " -", "tag --load " SEQ_CKPT, "tag --load " SEQ_CKPT " /dev/stdin"};
    for (int i = 0; i < 3; i++) {
        run r;
        run_cli(&r, cmds[i], &in, 1, 20);
        if (r.rc != 0 || r.timed_out || count_lines(r.out) != 8 || !strstr(r.out, "1\tThe\t_\t") || !strstr(r.out, "7\t.\t_\t"))
            fail_msg("attnlab %s < pipe: exit %d, stdout:\n%s\nstderr:\n%s", cmds[i], r.rc, r.out, r.err);
        run_free(&r);
    }
    static const char *conllu = "# a comment\n1\tThe\t_\tDET\t_\t_\t_\t_\t_\t_\n2\tcat\t_\tNOUN\t_\t_\t_\t_\t_\t_\n\n";
    const feed three[2] = {{3, sent, 0}, {3, conllu, 0}};
    for (int i = 0; i < 2; i++) {
        run r;
        run_cli(&r, "tag --load " SEQ_CKPT " /dev/fd/3", &three[i], 1, 20);
        if (r.rc != 0 || count_lines(r.out) != (i ? 3 : 8) || !strstr(r.out, "2\tcat\t_\t"))
            fail_msg("attnlab tag /dev/fd/3 (%s): exit %d, stdout:\n%s\nstderr:\n%s", i ? "CoNLL-U" : "text", r.rc, r.out, r.err);
        run_free(&r);
    }
}

/* 5. An endless pipe stops at the budget with one line (`yes word | attnlab tag -` grew for ever). */
static void test_tag_endless_pipe(void **st)
{
    (void)st;
    feed yes = {0, "word\nword\nword\nword\nword\nword\nword\nword\n", 1};
    expect_refused("tag --load " SEQ_CKPT " - --max-memory 16M", &yes, 1, 30, 1, "stdin: more than the memory budget of 16.0 MiB");
    feed yes3 = {3, "word word word word\n", 1};
    expect_refused("tag --load " SEQ_CKPT " /dev/fd/3 --max-memory 16M", &yes3, 1, 30, 1, "/dev/fd/3: more than the memory budget of 16.0 MiB");
}

/* 6. tag's memory is checked before it allocates: 20 MB of text under 16M is refused as it is read;
 * 3 MB of one-letter words (1.5 million tokens, 75 MiB to tag) before the per-token arrays (the 20 MB
 * peaked at 272 MB). */
static void test_tag_text_over_budget(void **st)
{
    (void)st;
    const size_t big = 20u << 20, small = 3u << 20;
    static const char line[] = "the cat sat on the mat and the dog ran\n", letters[] = "a b c d e f g h\n";
    char *b = malloc(big);
    assert_non_null(b);
    for (size_t i = 0; i < big; i++) b[i] = line[i % (sizeof line - 1)];
    b[big - 1] = '\n';
    tu_spit(tu_tpath("big.txt"), b, big);
    for (size_t i = 0; i < small; i++) b[i] = letters[i % (sizeof letters - 1)];
    tu_spit(tu_tpath("small.txt"), b, small);
    free(b);
    expect_refused(args("tag --load " SEQ_CKPT " --max-memory 16M %s", tu_tpath("big.txt")), NULL, 0, 30, 1,
                   "big.txt: needs 20.0 MiB, more than the memory budget of 16.0 MiB");
    expect_refused(args("tag --load " SEQ_CKPT " --max-memory 16M %s", tu_tpath("small.txt")), NULL, 0, 30, 1,
                   "small.txt: 1572864 tokens in 196608 sentences: needs 75.0 MiB, more than the memory budget of 16.0 MiB");
}

/* 7. The budget at its boundary: a file or a stream of exactly the budget is read whole, one byte more is
 * refused; a gzip file is held to it by its decompressed size. */
static void test_budget_boundaries(void **st)
{
    (void)st;
    enum { B = 64 * 1024 };
    char *b = malloc(B + 1);
    assert_non_null(b);
    memset(b, 'x', B + 1);
    tu_spit(tu_tpath("exact"), b, B);
    tu_spit(tu_tpath("over"), b, B + 1);
    al_mem_budget_set(B);
    char *text; size_t len;
    al_error e = {{0}}, e2 = {{0}};
    assert_int_equal(al_read_file(tu_tpath("exact"), &text, &len, &e), AL_OK);
    assert_int_equal(len, B); assert_int_equal(text[B], 0);
    free(text);
    assert_int_equal(al_read_file(tu_tpath("over"), &text, &len, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "over: needs 64.0 KiB, more than the memory budget of 64.0 KiB");
    for (int extra = 0; extra < 2; extra++) {   /* a stream: the same bytes through a pipe */
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t w = fork();
        if (w == 0) { close(p[0]); _exit(write(p[1], b, (size_t)B + (size_t)extra) == B + extra ? 0 : 1); }
        close(p[1]);
        char path[64]; snprintf(path, sizeof path, "/dev/fd/%d", p[0]);
        al_error e3 = {{0}};
        al_status s = al_read_file(path, &text, &len, &e3);
        close(p[0]); waitpid(w, NULL, 0);
        if (!extra) { assert_int_equal(s, AL_OK); assert_int_equal(len, B); free(text); }
        else { assert_int_equal(s, AL_ERR); ASSERT_HAS(e3.msg, "more than the memory budget of 64.0 KiB"); }
    }
    free(b);
    /* 1 MB of labels and features in a few KB of gzip, where the graph reads features.libsvm */
    tu_mkdirs(tu_tpath("bomb"));
    char cmd[512];
    snprintf(cmd, sizeof cmd, "(yes '0 1:1' 2>/dev/null) | head -c 1048576 | gzip -c > %s", tu_tpath("bomb/features.libsvm"));
    assert_int_equal(tu_system(cmd), 0);
    al_graph g; al_error e4 = {{0}};
    assert_int_equal(al_graph_load(&g, tu_tpath("bomb"), 0, &e4), AL_ERR);
    ASSERT_HAS(e4.msg, "features.libsvm: more than the memory budget of 64.0 KiB");
    al_mem_budget_set(0);
}

/* 8. Generated sequences ask the budget first (recall:20000 generated 2.2 GiB under 16M). */
static void test_genseq_budget(void **st)
{
    (void)st;
    al_gen_seq_cfg cfg; al_error e = {{0}};
    assert_int_equal(al_gen_seq_parse("copy:1000", &cfg, &e), 0);
    al_mem_budget_set(16u << 20);
    al_conllu d;
    assert_int_equal(al_gen_seq(&cfg, 20000, 1, &d, &e), AL_ERR);
    ASSERT_HAS(e.msg, "generated sequences: 20000 sentences of 1000 tokens: needs 229.1 MiB, more than the memory budget of 16.0 MiB");
    al_error e2 = {{0}};
    assert_int_equal(al_gen_seq(&cfg, 100, 1, &d, &e2), AL_OK);   /* 1.1 MiB */
    al_conllu_free(&d);
    al_mem_budget_set(0);
    expect_refused("train --task sequence --model fc --data recall:20000 --max-memory 16M --epochs 1 --quiet", NULL, 0, 20, 1,
                   "generated sequences: 10000 sentences of 20000 tokens: needs 2.2 GiB, more than the memory budget of 16.0 MiB");
}

/* 9. data import refuses before it writes: a LINQS graph whose 2000 features make a first layer over a
 * 100K budget leaves no output (it was written whole, then refused when read back). */
static void test_import_budget_before_writing(void **st)
{
    (void)st;
    tu_mkdirs(tu_tpath("li"));
    FILE *f = fopen(tu_tpath("li/toy.content"), "w");
    assert_non_null(f);
    for (int i = 0; i < 10; i++) {
        fprintf(f, "p%d", i);
        for (int j = 0; j < 2000; j++) fprintf(f, "\t%d", j == i || j == 1999);
        fprintf(f, "\t%s\n", i % 2 ? "A" : "B");
    }
    fclose(f);
    f = fopen(tu_tpath("li/toy.cites"), "w");
    assert_non_null(f);
    for (int i = 0; i < 10; i++) fprintf(f, "p%d p%d\n", i, (i + 1) % 10);
    fclose(f);
    char out[512];
    snprintf(out, sizeof out, "%s", tu_tpath("li-out"));
    expect_refused(args("data import --format linqs --in %s --out %s --split random --max-memory 100K", tu_tpath("li"), out),
                   NULL, 0, 20, 1, "li-out: 2000 features (a first layer of 2000 x 16 weights with gradients and AdamW moments): needs 500.0 KiB");
    struct stat sb;
    if (stat(tu_tpath("li-out/features.libsvm"), &sb) == 0) fail_msg("data import wrote %s before it refused", tu_tpath("li-out/features.libsvm"));
    run r;   /* within a budget that holds it, the same import is written and reads back */
    run_cli(&r, args("data import --format linqs --in %s --out %s --split random --max-memory 4M", tu_tpath("li"), out), NULL, 0, 20);
    if (r.rc != 0) fail_msg("data import under 4M: exit %d, stderr:\n%s", r.rc, r.err);
    run_free(&r);
    assert_int_equal(stat(tu_tpath("li-out/features.libsvm"), &sb), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_named_fifo_refused),
        cmocka_unit_test(test_cli_fifo_refused),
        cmocka_unit_test(test_devices_refused),
        cmocka_unit_test(test_tag_pipes_work),
        cmocka_unit_test(test_tag_endless_pipe),
        cmocka_unit_test(test_tag_text_over_budget),
        cmocka_unit_test(test_budget_boundaries),
        cmocka_unit_test(test_genseq_budget),
        cmocka_unit_test(test_import_budget_before_writing),
    };
    signal(SIGPIPE, SIG_IGN);
    return cmocka_run_group_tests(tests, setup, teardown);
}
