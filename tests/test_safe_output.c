/* test_safe_output.c — the one path of every file written whole (io.h: al_atomic_begin/_commit,
 * al_write_atomic, al_output_check) and the results CSV's failed append:
 *   - a symbolic link planted under the temporary's predictable name is not followed;
 *   - a destination that is a FIFO, socket, directory or character device is refused, and stays what it was;
 *   - a destination that is a link to a regular file stays a link, and its target is replaced;
 *   - the temporaries a dead process of this host left are removed, another host's and live ones kept;
 *   - an append cut short by the file-size limit leaves the CSV byte-identical to before. */
#include "testutil.h"
#include "attnlab/io.h"
#include "attnlab/results.h"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int setup(void **st) { (void)st; return tu_tmpdir_make("safeout"); }
static int teardown(void **st) { (void)st; return tu_tmpdir_remove(); }
#define ASSERT_HAS(msg, s) do { if (!strstr((msg), (s))) fail_msg("message \"%s\" lacks \"%s\"", (msg), (s)); } while (0)

/* The file at path holds exactly text. */
static void assert_file_is(const char *path, const char *text)
{
    size_t n; char *s = tu_slurp_n(path, &n);
    if (!s) fail_msg("%s: cannot read", path);
    if (n != strlen(text) || memcmp(s, text, n)) fail_msg("%s holds \"%s\", want \"%s\"", path, s, text);
    free(s);
}
static mode_t lmode(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0) fail_msg("%s: %s", path, strerror(errno));
    return sb.st_mode;
}
/* This host's name as a temporary's name carries it, worked out here on its own: bytes outside
 * [A-Za-z0-9-] become '-'. */
static void host(char *out, size_t n)
{
    char h[256] = "";
    assert_int_equal(gethostname(h, sizeof h - 1), 0);
    size_t i = 0;
    for (; h[i] && i < 64 && i + 1 < n; i++) {
        char c = h[i];
        out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ? c : '-';
    }
    out[i] = 0;
}
/* The id of a process that has ended (a child reaped). */
static long dead_pid(void)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(0);
    assert_int_equal(waitpid(pid, NULL, 0), pid);
    return (long)pid;
}

/* Links to a victim file under every name the temporary of out.bin has had (PATH.tmp.PID) or has now
 * (PATH.tmp.HOST.PID): the write goes elsewhere, the victim keeps its bytes, out.bin is a regular file. */
static void test_planted_link_is_not_followed(void **st)
{
    (void)st;
    char h[80], names[3][600];
    host(h, sizeof h);
    const char *dest = tu_tpath("out.bin"), *victim = tu_tpath("victim.txt");
    tu_spit(victim, "precious", 8);
    snprintf(names[0], sizeof names[0], "%s.tmp.%ld", dest, (long)getpid());
    snprintf(names[1], sizeof names[1], "%s.tmp.%s.%ld", dest, h, (long)getpid());
    snprintf(names[2], sizeof names[2], "%s.tmp.%s.%ld.1", dest, h, (long)getpid());
    for (int i = 0; i < 3; i++) assert_int_equal(symlink(victim, names[i]), 0);
    al_error e = {{0}};
    if (al_output_check(dest, &e) != AL_OK) fail_msg("%s", e.msg);
    if (al_write_atomic(dest, "new bytes", 9, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_file_is(victim, "precious");
    assert_true(S_ISREG(lmode(dest)));
    assert_file_is(dest, "new bytes");
    for (int i = 0; i < 3; i++) assert_true(S_ISLNK(lmode(names[i])));   /* a live process's names: left alone */
    /* a second write over the regular file: the same */
    if (al_write_atomic(dest, "again", 5, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_file_is(victim, "precious");
    assert_file_is(dest, "again");
    for (int i = 0; i < 3; i++) unlink(names[i]);
    assert_int_equal(tu_tmp_files(tu_tmpdir()), 0);
}

/* A FIFO, a socket, a directory, /dev/null and a link to a FIFO are refused by the check and by the
 * write, with one message naming what they are; each stays what it was and no temporary is left. */
static void test_special_destinations_refused(void **st)
{
    (void)st;
    const char *fifo = tu_tpath("fifo"), *sock = tu_tpath("sock"), *dir = tu_tpath("dir"), *lfifo = tu_tpath("link-to-fifo");
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(symlink(fifo, lfifo), 0);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_true(s >= 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    snprintf(a.sun_path, sizeof a.sun_path, "%s", sock);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    static const struct { const char *name, *why; int write; } cases[] = {
        {"fifo", "fifo: is a FIFO, not a regular file", 1}, {"sock", "sock: is a socket, not a regular file", 1},
        {"dir", "dir: is a directory, expected a file name", 1}, {"link-to-fifo", "link-to-fifo: is a FIFO, not a regular file", 1},
        /* checked only: a write into the system's /dev/null by code without the check would replace it */
        {"/dev/null", "/dev/null: is a character device, not a regular file", 0}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = cases[i].name[0] == '/' ? cases[i].name : tu_tpath("%s", cases[i].name);
        al_error e = {{0}}, e2 = {{0}}, e3 = {{0}};
        if (al_output_check(p, &e) != AL_ERR) fail_msg("al_output_check(%s) accepted it", p);
        ASSERT_HAS(e.msg, cases[i].why);
        if (al_csv_check(p, &e2) != AL_ERR) fail_msg("al_csv_check(%s) accepted it", p);
        ASSERT_HAS(e2.msg, cases[i].why);
        if (!cases[i].write) continue;
        if (al_write_atomic(p, "x", 1, &e3) != AL_ERR) fail_msg("al_write_atomic(%s) wrote it", p);
        ASSERT_HAS(e3.msg, cases[i].why);
    }
    assert_true(S_ISFIFO(lmode(fifo)));
    assert_true(S_ISSOCK(lmode(sock)));
    assert_true(S_ISDIR(lmode(dir)));
    assert_true(S_ISLNK(lmode(lfifo)));
    struct stat sb;
    assert_int_equal(stat("/dev/null", &sb), 0);
    assert_true(S_ISCHR(sb.st_mode));
    close(s);
    unlink(fifo); unlink(sock); rmdir(dir); unlink(lfifo);
    assert_int_equal(tu_tmp_files(tu_tmpdir()), 0);
}

/* links/model.st -> ../store/model.st (relative): the link stays, store/model.st is replaced, and the
 * temporary was made beside the target (nothing is left in either directory). A link that leads to no
 * file is refused, and nothing is created at its target. */
static void test_link_to_regular_file_keeps_link(void **st)
{
    (void)st;
    tu_mkdirs(tu_tpath("links")); tu_mkdirs(tu_tpath("store"));
    const char *target = tu_tpath("store/model.st"), *link = tu_tpath("links/model.st");
    tu_spit(target, "old", 3);
    assert_int_equal(symlink("../store/model.st", link), 0);
    al_error e = {{0}};
    if (al_output_check(link, &e) != AL_OK) fail_msg("%s", e.msg);
    if (al_write_atomic(link, "replaced", 8, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_true(S_ISLNK(lmode(link)));
    char to[256] = "";
    assert_int_equal(readlink(link, to, sizeof to - 1), (ssize_t)strlen("../store/model.st"));
    assert_string_equal(to, "../store/model.st");
    assert_true(S_ISREG(lmode(target)));
    assert_file_is(target, "replaced");
    assert_int_equal(tu_tmp_files(tu_tpath("links")), 0);
    assert_int_equal(tu_tmp_files(tu_tpath("store")), 0);
    /* a dangling link */
    const char *dangling = tu_tpath("links/gone.st");
    assert_int_equal(symlink("../store/gone.st", dangling), 0);
    al_error e2 = {{0}}, e3 = {{0}};
    assert_int_equal(al_output_check(dangling, &e2), AL_ERR);
    ASSERT_HAS(e2.msg, "gone.st: is a symbolic link that leads to no file");
    assert_int_equal(al_write_atomic(dangling, "x", 1, &e3), AL_ERR);
    ASSERT_HAS(e3.msg, "is a symbolic link that leads to no file");
    assert_true(S_ISLNK(lmode(dangling)));
    assert_int_equal(access(tu_tpath("store/gone.st"), F_OK), -1);
}

/* Writing d.bin removes d.bin's temporaries of dead processes of this host (with or without the .N
 * counter); it keeps another host's, a live process's, another file's, and names that only look alike. */
static void test_stale_temporaries_removed(void **st)
{
    (void)st;
    char h[80];
    host(h, sizeof h);
    long dead = dead_pid(), live = (long)getppid();
    assert_int_equal(kill((pid_t)dead, 0), -1);
    tu_mkdirs(tu_tpath("stale"));
    char gone[2][160], kept[7][160];
    snprintf(gone[0], sizeof gone[0], "d.bin.tmp.%s.%ld", h, dead);
    snprintf(gone[1], sizeof gone[1], "d.bin.tmp.%s.%ld.3", h, dead);
    snprintf(kept[0], sizeof kept[0], "d.bin.tmp.%s-elsewhere.%ld", h, dead);   /* another host */
    snprintf(kept[1], sizeof kept[1], "d.bin.tmp.otherhost.%ld", dead);
    snprintf(kept[2], sizeof kept[2], "d.bin.tmp.%s.%ld", h, live);             /* a live process */
    snprintf(kept[3], sizeof kept[3], "e.bin.tmp.%s.%ld", h, dead);             /* another file's */
    snprintf(kept[4], sizeof kept[4], "d.binx.tmp.%s.%ld", h, dead);
    snprintf(kept[5], sizeof kept[5], "d.bin.tmp.%s.%ldx", h, dead);
    snprintf(kept[6], sizeof kept[6], "d.bin.tmp.%s.0", h);                     /* 0 is no process */
    for (int i = 0; i < 2; i++) tu_spit(tu_tpath("stale/%s", gone[i]), "partial", 7);
    for (int i = 0; i < 7; i++) tu_spit(tu_tpath("stale/%s", kept[i]), "partial", 7);
    al_error e = {{0}};
    if (al_write_atomic(tu_tpath("stale/d.bin"), "whole", 5, &e) != AL_OK) fail_msg("%s", e.msg);
    for (int i = 0; i < 2; i++)
        if (access(tu_tpath("stale/%s", gone[i]), F_OK) == 0) fail_msg("%s (a dead process's) was kept", gone[i]);
    for (int i = 0; i < 7; i++)
        if (access(tu_tpath("stale/%s", kept[i]), F_OK) != 0) fail_msg("%s was removed", kept[i]);
    assert_file_is(tu_tpath("stale/d.bin"), "whole");
    assert_int_equal(tu_tmp_files(tu_tpath("stale")), 7);
}

static const al_csv_row ROW = {"abc", "image", "d", "cnn", 10, 1, 1, 0.5, 0.5, 0.5, 0.5, 1.0, 10.0, 100, NULL, NULL, 0, 0, 0, 0, 0, 0};

/* In a child with SIGXFSZ ignored and RLIMIT_FSIZE at limit bytes: append ROW to path. Exit 0 when the
 * append failed with "File too large" and a message naming the file. */
static int append_over_limit(const char *path, rlim_t limit)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
        al_error e = {{0}};
        if (al_csv_append(path, &ROW, &e) == AL_OK) _exit(4);
        if (!strstr(e.msg, "File too large") || !strstr(e.msg, strrchr(path, '/') + 1)) _exit(5);
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* A CSV append that the file-size limit cuts short (EFBIG after a partial write) leaves the file
 * byte-identical to before; a new file is left empty, not with a torn header; the next append works. */
static void test_failed_append_cuts_back(void **st)
{
    (void)st;
    const char *p = tu_tpath("cut.csv"), *fresh = tu_tpath("fresh.csv");
    al_error e = {{0}};
    for (int i = 0; i < 2; i++) if (al_csv_append(p, &ROW, &e) != AL_OK) fail_msg("%s", e.msg);
    size_t n0; char *before = tu_slurp_n(p, &n0);
    assert_non_null(before);
    const size_t row = (n0 - strlen(AL_CSV_HEADER) - 1) / 2;
    const size_t extra[3] = {1, row / 2, row - 1};   /* the limit falls inside the new row */
    for (int i = 0; i < 3; i++) {
        int rc = append_over_limit(p, (rlim_t)(n0 + extra[i]));
        if (rc) fail_msg("append over the limit (+%zu bytes): child exit %d", extra[i], rc);
        size_t n1; char *after = tu_slurp_n(p, &n1);
        assert_non_null(after);
        if (n1 != n0 || memcmp(before, after, n0)) fail_msg("the failed append left %zu bytes, want the %zu of before", n1, n0);
        free(after);
    }
    assert_int_equal(append_over_limit(fresh, 100), 0);   /* the header alone is longer */
    struct stat sb;
    assert_int_equal(stat(fresh, &sb), 0);
    assert_int_equal(sb.st_size, 0);
    if (al_csv_append(p, &ROW, &e) != AL_OK) fail_msg("%s", e.msg);
    al_results r;
    if (al_results_read(p, &r, &e) != AL_OK) fail_msg("%s", e.msg);
    assert_int_equal(r.n, 3);
    al_results_free(&r);
    free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_planted_link_is_not_followed),
        cmocka_unit_test(test_special_destinations_refused),
        cmocka_unit_test(test_link_to_regular_file_keeps_link),
        cmocka_unit_test(test_stale_temporaries_removed),
        cmocka_unit_test(test_failed_append_cuts_back),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
