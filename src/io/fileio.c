/* fileio.c — file I/O underneath every file attnlab writes: a growable byte buffer, whole reads and
 * writes on a descriptor, atomic writes (PATH.tmp.PID, fsync, rename, fsync of the directory) and
 * whole-file reads. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <fcntl.h>
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
/* whole reads and writes, atomic write, whole-file read                                  */
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


al_status al_write_atomic(const char *path, const void *data, size_t n, al_error *err)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp) return al_seterr(err, "%s: out of memory", al_path_short(path));
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { al_seterr(err, "%s: cannot create %s: %s", al_path_short(path), tmp, strerror(errno)); free(tmp); return AL_ERR; }
    if (al_write_all(fd, data, n) != 0) {
        al_seterr(err, "%s: writing %s failed: %s", al_path_short(path), tmp, strerror(errno));
        close(fd); unlink(tmp); free(tmp); return AL_ERR;
    }
    if (fsync(fd) != 0) {
        al_seterr(err, "%s: fsync of %s failed: %s", al_path_short(path), tmp, strerror(errno));
        close(fd); unlink(tmp); free(tmp); return AL_ERR;
    }
    if (close(fd) != 0) { al_seterr(err, "%s: closing %s failed: %s", al_path_short(path), tmp, strerror(errno)); unlink(tmp); free(tmp); return AL_ERR; }
    if (rename(tmp, path) != 0) {
        al_seterr(err, "%s: rename from %s failed: %s", al_path_short(path), tmp, strerror(errno));
        unlink(tmp); free(tmp); return AL_ERR;
    }
    free(tmp);
    al_fsync_parent(path);   /* the rename itself durable */
    return AL_OK;
}

void al_fsync_parent(const char *path)
{
    char *dir = strdup(path);
    if (!dir) return;
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash) { if (slash == dir) slash[1] = 0; else *slash = 0; d = dir; }
    int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
    free(dir);
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

/* A new file can be created in path's directory: PATH.tmp.PID is created and removed, as
 * al_write_atomic would create it. */
static al_status probe_create(const char *path, al_error *err)
{
    char *dir = dir_of(path);
    if (!dir) return al_seterr(err, "%s: out of memory", al_path_short(path));
    struct stat sb;
    al_status st = AL_OK;
    if (stat(dir, &sb) != 0)
        st = errno == ENOENT ? al_seterr(err, "%s: directory '%s' does not exist", al_path_short(path), al_path_short(dir))
                             : al_seterr(err, "%s: directory '%s': %s", al_path_short(path), al_path_short(dir), strerror(errno));
    else if (!S_ISDIR(sb.st_mode))
        st = al_seterr(err, "%s: '%s' is not a directory", al_path_short(path), al_path_short(dir));
    if (st != AL_OK) { free(dir); return st; }
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp) { free(dir); return al_seterr(err, "%s: out of memory", al_path_short(path)); }
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) { close(fd); unlink(tmp); }
    else if (errno != EEXIST)   /* EEXIST: a leftover of this pid, which the writer truncates */
        st = al_seterr(err, "%s: cannot create files in directory '%s': %s", al_path_short(path), al_path_short(dir), strerror(errno));
    free(tmp); free(dir);
    return st;
}

al_status al_output_check(const char *path, al_error *err)
{
    if (!path || !*path) return al_seterr(err, "an empty file name");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return al_seterr(err, "%s: is a directory, expected a file name", al_path_short(path));
    if (path[strlen(path) - 1] == '/') return al_seterr(err, "%s: ends in '/', expected a file name", al_path_short(path));
    return probe_create(path, err);
}

al_status al_read_file(const char *path, char **data, size_t *len, al_error *err)
{
    *data = NULL; *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return al_seterr(err, "%s: %s", al_path_short(path), strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) == 0 && S_ISDIR(sb.st_mode)) { fclose(f); return al_seterr(err, "%s: is a directory, expected a file", al_path_short(path)); }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb; cap *= 2;
    }
    int bad = ferror(f), e = errno;
    fclose(f);
    if (!buf) return al_seterr(err, "%s: out of memory", al_path_short(path));
    if (bad) { free(buf); return al_seterr(err, "%s: read error: %s", al_path_short(path), strerror(e)); }
    buf[n] = 0;
    *data = buf; *len = n;
    return AL_OK;
}
