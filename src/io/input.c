/* input.c — the one way attnlab opens a file it reads (io.h): opened without blocking, then fstat; a
 * regular file is read as it is, stdin and the pipes a shell hands over (/dev/fd/N) are read while the
 * bytes are counted against the memory budget, and anything else (a directory, a named FIFO, a device,
 * a socket) is refused with one line before a byte is read. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <zlib.h>

_Static_assert(sizeof(((al_input *)0)->name) == AL_PATH_SHORT, "al_input.name holds an al_path_short name");

const char *al_input_name(const char *path) { return path && !strcmp(path, "-") ? "stdin" : al_path_short(path); }

/* path names a descriptor this process inherited: /dev/stdin, /dev/fd/N, /proc/self/fd/N. */
static int names_fd(const char *path)
{
    static const char *const pre[] = {"/dev/fd/", "/proc/self/fd/"};
    if (!strcmp(path, "/dev/stdin")) return 1;
    for (int i = 0; i < 2; i++) {
        size_t l = strlen(pre[i]);
        if (strncmp(path, pre[i], l) || !path[l]) continue;
        const char *p = path + l;
        while (*p >= '0' && *p <= '9') p++;
        return *p == 0;
    }
    return 0;
}

/* An inherited descriptor this process may read to its end: a pipe, a socket, a terminal (a person
 * typing) or /dev/null (`< /dev/null` reads as empty); never /dev/zero or another device. */
static int stream_ok(int fd, const struct stat *sb)
{
    if (S_ISFIFO(sb->st_mode) || S_ISSOCK(sb->st_mode)) return 1;
    if (!S_ISCHR(sb->st_mode)) return 0;
    return isatty(fd) || (major(sb->st_rdev) == 1 && minor(sb->st_rdev) == 3);
}

/* Article of a noun phrase: "an IDX file", "a checkpoint". */
static const char *article(const char *s) { return strchr("aeiouAEIOU", s[0]) && s[0] ? "an" : "a"; }

al_status al_input_open(al_input *in, const char *path, int flags, const char *kind, al_error *err)
{
    memset(in, 0, sizeof *in);
    in->fd = -1;
    if (!path || !*path) return al_seterr(err, "an empty file name");
    snprintf(in->name, sizeof in->name, "%s", al_input_name(path));
    const int dash = (flags & AL_IN_STREAM) && !strcmp(path, "-");
    int fd = dash ? fcntl(0, F_DUPFD_CLOEXEC, 3) : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        if (dash) return al_seterr(err, "stdin: %s", strerror(errno));
        return kind ? al_seterr(err, "%s: cannot open %s: %s", in->name, kind, strerror(errno))
                    : al_seterr(err, "%s: cannot open: %s", in->name, strerror(errno));
    }
    struct stat sb;
    al_status st = AL_OK;
    if (fstat(fd, &sb) != 0) st = al_seterr(err, "%s: stat failed: %s", in->name, strerror(errno));
    else if (S_ISDIR(sb.st_mode)) st = al_seterr(err, "%s: is a directory, expected %s %s", in->name, kind ? article(kind) : "a", kind ? kind : "file");
    else if (S_ISREG(sb.st_mode)) in->size = (uint64_t)sb.st_size;
    else if ((flags & AL_IN_STREAM) && (dash || names_fd(path)) && stream_ok(fd, &sb))
        in->stream = 1;
    else   /* a named FIFO may have no writer, a device may never end: refused before any read */
        st = al_seterr(err, "%s: is %s, not a regular file", in->name, al__file_kind(sb.st_mode));
    /* reads block again (a pipe's writer may be slow); fd 0's own flags are shared, so never touched */
    if (st == AL_OK && !dash) {
        int fl = fcntl(fd, F_GETFL);
        if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) st = al_seterr(err, "%s: fcntl failed: %s", in->name, strerror(errno));
    }
    if (st != AL_OK) { close(fd); return AL_ERR; }
    in->fd = fd;
    return AL_OK;
}

al_status al_input_check(const char *path, int flags, const char *kind, al_error *err)
{
    al_input in;
    if (al_input_open(&in, path, flags, kind, err) != AL_OK) return AL_ERR;
    al_input_close(&in);
    return AL_OK;
}

void al_input_close(al_input *in)
{
    if (in->fd >= 0) close(in->fd);
    in->fd = -1;
}

al_status al_inbuf_room(al_inbuf *b, size_t want, const char *name, al_error *err)
{
    const uint64_t lim = al_mem_budget();
    if (b->n > lim) {
        char a[32];
        return al_seterr(err, "%s: more than the memory budget of %s (raise it with --max-memory or ATTNLAB_MEM_BUDGET)",
                         name, al_bytes_str(lim, a));
    }
    if (b->cap > b->n + 1) return AL_OK;   /* room for a byte and the NUL */
    /* at most the budget and one byte more (reading it tells that the input is larger), and the NUL */
    uint64_t cap = b->cap ? al_size_mul(b->cap, 2) : 1 << 16, top = al_size_add(lim, 2);
    if (cap < al_size_add(al_size_add(b->n, want), 1)) cap = al_size_add(al_size_add(b->n, want), 1);
    if (cap > top) cap = top;
    if (cap > SIZE_MAX) cap = SIZE_MAX;
    char *p = realloc(b->p, (size_t)cap);
    if (!p) return al_seterr(err, "%s: out of memory (%llu bytes)", name, (unsigned long long)cap);
    b->p = p; b->cap = (size_t)cap;
    return AL_OK;
}

al_status al_input_read_all(al_input *in, char **data, size_t *len, al_error *err)
{
    *data = NULL; *len = 0;
    if (!in->stream && al_mem_check(in->size, err, "%s", in->name)) return AL_ERR;
    al_inbuf b = {0};
    /* a regular file is read into a buffer of its size (one more byte tells it grew) */
    al_status st = AL_OK;
    while ((st = al_inbuf_room(&b, in->stream ? 0 : (size_t)in->size + 1, in->name, err)) == AL_OK) {
        ssize_t k = read(in->fd, b.p + b.n, b.cap - b.n - 1);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {   /* a stdin left non-blocking by its parent */
            struct pollfd pf = {in->fd, POLLIN, 0};
            (void)poll(&pf, 1, -1);
            continue;
        }
        if (k < 0) { st = al_seterr(err, "%s: read error at byte offset %zu: %s", in->name, b.n, strerror(errno)); break; }
        if (k == 0) break;
        b.n += (size_t)k;
    }
    if (st != AL_OK) { free(b.p); return AL_ERR; }
    b.p[b.n] = 0;
    *data = b.p; *len = b.n;
    return AL_OK;
}

al_status al_input_read(const char *path, int flags, const char *kind, char **data, size_t *len, al_error *err)
{
    *data = NULL; *len = 0;
    al_input in;
    if (al_input_open(&in, path, flags, kind, err) != AL_OK) return AL_ERR;
    al_status st = al_input_read_all(&in, data, len, err);
    al_input_close(&in);
    return st;
}

al_status al_read_file(const char *path, char **data, size_t *len, al_error *err)
{
    return al_input_read(path, AL_IN_STREAM, NULL, data, len, err);
}

al_status al_input_read_gz(const char *path, int flags, const char *kind, char **data, size_t *len, al_error *err)
{
    *data = NULL; *len = 0;
    al_input in;
    if (al_input_open(&in, path, flags, kind, err) != AL_OK) return AL_ERR;
    /* a plain regular file is read as it is: its size is what it needs, asked before reading */
    unsigned char magic[2];
    if (!in.stream && (pread(in.fd, magic, 2, 0) != 2 || magic[0] != 0x1f || magic[1] != 0x8b) &&
        al_mem_check(in.size, err, "%s", in.name)) {
        al_input_close(&in);
        return AL_ERR;
    }
    gzFile f = gzdopen(in.fd, "rb");   /* gzclose closes in.fd */
    if (!f) { al_input_close(&in); return al_seterr(err, "%s: cannot open: out of memory", in.name); }
    al_inbuf b = {0};   /* the decompressed bytes, within the budget */
    al_status st;
    for (int got; (st = al_inbuf_room(&b, in.stream ? 0 : (size_t)in.size, in.name, err)) == AL_OK; b.n += (size_t)got) {
        size_t want = b.cap - b.n - 1 > (1u << 30) ? (1u << 30) : b.cap - b.n - 1;
        got = gzread(f, b.p + b.n, (unsigned)want);
        if (got == 0) break;
        if (got < 0) { int zerr; st = al_seterr(err, "%s: not a readable gzip stream (%s)", in.name, al_input_zmsg(gzerror(f, &zerr))); break; }
    }
    int zerr = Z_OK;
    if (st == AL_OK) gzerror(f, &zerr);
    if (st == AL_OK && zerr != Z_OK && zerr != Z_STREAM_END)
        st = al_seterr(err, "%s: the gzip stream is cut short or damaged after %zu bytes", in.name, b.n);
    gzclose(f);
    if (st != AL_OK) { free(b.p); return AL_ERR; }
    b.p[b.n] = 0;
    *data = b.p; *len = b.n;
    return AL_OK;
}

const char *al_input_zmsg(const char *zmsg)
{
    if (zmsg && !strncmp(zmsg, "<fd:", 4)) {
        const char *c = strstr(zmsg, ">: ");
        if (c) return c + 3;
    }
    return zmsg;
}
