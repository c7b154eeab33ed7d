/* fileio.c — file I/O underneath every file attnlab writes: a growable byte buffer, whole reads and
 * writes on a descriptor, atomic writes (the one path of every file written whole: the destination
 * checked, a temporary DEST.tmp.HOST.PID created exclusively beside it, fsync, rename, fsync of the
 * directory; the temporaries of dead processes removed). Whole-file reads are input.c's. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ====================================================================================== */
/* small growable byte buffer                                                             */
/* ====================================================================================== */
void al_sb_reserve(al_sbuf *b, size_t extra)
{
    if (b->oom) return;
    if (b->n + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) { b->oom = 1; return; }
    b->p = q; b->cap = cap;
    b->p[b->n] = 0;   /* always a string, even before the first put (an empty JSON string "") */
}
void al_sb_put(al_sbuf *b, const void *s, size_t n)
{
    al_sb_reserve(b, n);
    if (b->oom) return;
    memcpy(b->p + b->n, s, n); b->n += n; b->p[b->n] = 0;
}
void al_sb_printf(al_sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap; va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if ((size_t)k < sizeof tmp) { al_sb_put(b, tmp, (size_t)k); return; }
    al_sb_reserve(b, (size_t)k);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

/* ====================================================================================== */
/* whole reads and writes on a descriptor                                                 */
/* ====================================================================================== */
int al_write_all(int fd, const void *data, size_t n)
{
    const char *p = data;
    while (n) {
        ssize_t k = write(fd, p, n);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        if (k == 0) { errno = EIO; return -1; }
        p += k; n -= (size_t)k;
    }
    return 0;
}
int al_pread_all(int fd, void *data, size_t n, off_t off)
{
    char *p = data;
    while (n) {
        ssize_t k = pread(fd, p, n, off);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        if (k == 0) return -2;   /* end of file */
        p += k; n -= (size_t)k; off += k;
    }
    return 0;
}


/* ====================================================================================== */
/* the destination and its temporary: one path for every file written whole                */
/* ====================================================================================== */
/* What a file that is not a regular file is, for "PATH: is a FIFO, not a regular file" (io_impl.h). */
const char *al__file_kind(mode_t m)
{
    return S_ISDIR(m) ? "a directory" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) ? "a character device"
         : S_ISBLK(m) ? "a block device" : S_ISLNK(m) ? "a symbolic link" : "a special file";
}

al_status al__output_kind(const char *path, const struct stat *sb, al_error *err)
{
    if (S_ISREG(sb->st_mode)) return AL_OK;
    if (S_ISDIR(sb->st_mode)) return al_seterr(err, "%s: is a directory, expected a file name", al_path_short(path));
    return al_seterr(err, "%s: is %s, not a regular file", al_path_short(path), al__file_kind(sb->st_mode));
}

/* Where a write of path renames to (*dest, malloc'd): path itself when it does not exist or is a
 * regular file; the regular file a symbolic link at path leads to (the link stays, its target is
 * replaced). Anything else is refused, before any work. */
static al_status resolve_dest(const char *path, char **dest, al_error *err)
{
    struct stat sb;
    *dest = NULL;
    if (!*path) return al_seterr(err, "an empty file name");
    if (lstat(path, &sb) != 0 || S_ISREG(sb.st_mode)) {   /* new (or unreachable: the create says why) */
        if (path[strlen(path) - 1] == '/') return al_seterr(err, "%s: ends in '/', expected a file name", al_path_short(path));
        if (!(*dest = strdup(path))) return al_seterr(err, "%s: out of memory", al_path_short(path));
        return AL_OK;
    }
    if (!S_ISLNK(sb.st_mode)) return al__output_kind(path, &sb, err);
    if (stat(path, &sb) != 0)
        return al_seterr(err, "%s: is a symbolic link that leads to no file: %s", al_path_short(path), strerror(errno));
    if (al__output_kind(path, &sb, err) != AL_OK) return AL_ERR;
    if (!(*dest = realpath(path, NULL))) return al_seterr(err, "%s: cannot resolve the symbolic link: %s", al_path_short(path), strerror(errno));
    return AL_OK;
}

/* This host's name as temporaries carry it: gethostname's, every byte outside [A-Za-z0-9-] made '-'
 * (so the name never holds the '.' that separates the parts of a temporary's name). */
#define HOST_MAX 64
static void host_name(char out[HOST_MAX + 1])
{
    char h[256] = "";
    if (gethostname(h, sizeof h - 1) != 0 || !h[0]) snprintf(h, sizeof h, "unknown");
    size_t i = 0;
    for (; h[i] && i < HOST_MAX; i++) {
        char c = h[i];
        out[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ? c : '-';
    }
    out[i] = 0;
}

/* digits [0-9]+ at *p: their value (saturating past INT_MAX), *p moved past them; -1 if none. */
static long digits(const char **p)
{
    long v = -1;
    for (; **p >= '0' && **p <= '9'; (*p)++) v = v < 0 ? **p - '0' : v > INT_MAX ? v : v * 10 + (**p - '0');
    return v;
}

int al_tmp_stale(const char *suffix)
{
    char host[HOST_MAX + 1];
    host_name(host);
    size_t hl = strlen(host);
    if (strncmp(suffix, ".tmp.", 5) || strncmp(suffix + 5, host, hl) || suffix[5 + hl] != '.') return 0;
    const char *p = suffix + 6 + hl;
    long pid = digits(&p);
    if (*p == '.') { p++; if (digits(&p) < 0) return 0; }
    if (*p || pid <= 0 || pid > INT_MAX) return 0;   /* never kill(0) or kill(-1): those name groups */
    return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

/* The directory part of path ("." when it has none, "/" for "/x"), or NULL when out of memory. */
static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    size_t n = slash == path ? 1 : (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) { memcpy(d, path, n); d[n] = 0; }
    return d;
}

/* Remove the temporaries of dest that dead processes of this host left (best effort). */
static void remove_stale(const char *dest)
{
    char *dir = dir_of(dest);
    DIR *d = dir ? opendir(dir) : NULL;
    const char *slash = strrchr(dest, '/'), *base = slash ? slash + 1 : dest;
    size_t bl = strlen(base);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, base, bl) && al_tmp_stale(e->d_name + bl)) (void)unlinkat(dirfd(d), e->d_name, 0);
    if (d) closedir(d);
    free(dir);
}

/* Create dest's temporary exclusively: DEST.tmp.HOST.PID, then DEST.tmp.HOST.PID.1, .2, ... while the
 * name is taken (by a live writer, a leftover or a planted link: none is followed or reused). A file
 * (is_dir 0) is opened for writing (mode 0644 less the umask) and its descriptor returned; a directory
 * (is_dir 1) is made 0755 and 0 returned. -1 with errno set on failure; *tmp is malloc'd either way. */
static int create_tmp(const char *dest, int is_dir, char **tmp)
{
    char host[HOST_MAX + 1];
    host_name(host);
    size_t n = strlen(dest) + HOST_MAX + 48;
    if (!(*tmp = malloc(n))) { errno = ENOMEM; return -1; }
    for (int k = 0; k < 1000; k++) {
        if (k) snprintf(*tmp, n, "%s.tmp.%s.%ld.%d", dest, host, (long)getpid(), k);
        else snprintf(*tmp, n, "%s.tmp.%s.%ld", dest, host, (long)getpid());
        int fd = is_dir ? mkdir(*tmp, 0755) : open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

al_status al_tmp_dir(const char *path, char **tmp, al_error *err)
{
    if (create_tmp(path, 1, tmp) == 0) return AL_OK;
    int e = errno;
    al_seterr(err, "%s: cannot create %s: %s", al_path_short(path), *tmp ? *tmp : "its temporary directory", strerror(e));
    free(*tmp); *tmp = NULL;
    return AL_ERR;
}

static void atomic_free(al_atomic *a)
{
    free(a->path); free(a->dest); free(a->tmp);
    a->path = a->dest = a->tmp = NULL;
    a->fd = -1;
}

al_status al_atomic_begin(al_atomic *a, const char *path, al_error *err)
{
    memset(a, 0, sizeof *a);
    a->fd = -1;
    if (!path) return al_seterr(err, "an empty file name");
    if (!(a->path = strdup(path))) return al_seterr(err, "%s: out of memory", al_path_short(path));
    if (resolve_dest(path, &a->dest, err) != AL_OK) { atomic_free(a); return AL_ERR; }
    remove_stale(a->dest);
    a->fd = create_tmp(a->dest, 0, &a->tmp);
    if (a->fd < 0) {
        int e = errno;
        al_seterr(err, "%s: cannot create %s: %s", al_path_short(path), a->tmp ? a->tmp : "a temporary file", strerror(e));
        atomic_free(a);
        return AL_ERR;
    }
    return AL_OK;
}

void al_atomic_abort(al_atomic *a)
{
    if (a->fd >= 0) close(a->fd);
    if (a->tmp) unlink(a->tmp);
    atomic_free(a);
}

al_status al_atomic_commit(al_atomic *a, al_error *err)
{
    const char *p = al_path_short(a->path);
    const char *what = "fsync of";
    int rc = fsync(a->fd);
    if (rc == 0) {
        what = "closing";
        rc = close(a->fd);
        a->fd = -1;   /* closed even when close reports an error */
    }
    if (rc == 0) { what = "renaming"; rc = rename(a->tmp, a->dest); }
    if (rc != 0) {
        al_seterr(err, "%s: %s %s failed: %s", p, what, a->tmp, strerror(errno));
        al_atomic_abort(a);
        return AL_ERR;
    }
    al_fsync_parent(a->dest);   /* the rename itself durable */
    atomic_free(a);
    return AL_OK;
}

al_status al_write_atomic(const char *path, const void *data, size_t n, al_error *err)
{
    al_atomic a;
    if (al_atomic_begin(&a, path, err) != AL_OK) return AL_ERR;
    if (al_write_all(a.fd, data, n) != 0) {
        al_seterr(err, "%s: writing %s failed: %s", al_path_short(path), a.tmp, strerror(errno));
        al_atomic_abort(&a);
        return AL_ERR;
    }
    return al_atomic_commit(&a, err);
}

void al_fsync_parent(const char *path)
{
    char *dir = dir_of(path);
    int dfd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    free(dir);
}

/* A new file can be created in the directory of dest (path's destination): a temporary is created
 * and removed, as al_atomic_begin would create it. */
static al_status probe_create(const char *path, const char *dest, al_error *err)
{
    char *dir = dir_of(dest);
    if (!dir) return al_seterr(err, "%s: out of memory", al_path_short(path));
    struct stat sb;
    al_status st = AL_OK;
    if (stat(dir, &sb) != 0)
        st = errno == ENOENT ? al_seterr(err, "%s: directory '%s' does not exist", al_path_short(path), al_path_short(dir))
                             : al_seterr(err, "%s: directory '%s': %s", al_path_short(path), al_path_short(dir), strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = al_seterr(err, "%s: '%s' is not a directory", al_path_short(path), al_path_short(dir));
    if (st != AL_OK) { free(dir); return st; }
    char *tmp = NULL;
    int fd = create_tmp(dest, 0, &tmp);
    if (fd >= 0) { close(fd); unlink(tmp); }
    else st = al_seterr(err, "%s: cannot create files in directory '%s': %s", al_path_short(path), al_path_short(dir), strerror(errno));
    free(tmp); free(dir);
    return st;
}

al_status al_output_check(const char *path, al_error *err)
{
    char *dest;
    if (!path) return al_seterr(err, "an empty file name");
    if (resolve_dest(path, &dest, err) != AL_OK) return AL_ERR;
    al_status st = probe_create(path, dest, err);
    free(dest);
    return st;
}
