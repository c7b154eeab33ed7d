/* io.c — results CSV, run ids, atomic files, safetensors checkpoints (with a small JSON parser), PNG.
 *
 * CSV number formats (chosen so a row is short, exact enough and locale-free — the library never calls
 * setlocale, so '.' is the decimal point):
 *   train_loss, train_acc, val_acc, test_acc   %.6g   (six significant digits)
 *   epoch_seconds                              %.4f   (0.1 ms resolution)
 *   samples_per_second                         %.1f
 *   integers                                   %ld / %d
 * A NaN double or a NULL string is an empty field. Strings holding ',', '"', CR or LF are quoted
 * with '"' and inner quotes doubled (RFC 4180).
 */
#include "attnlab/io.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ====================================================================================== */
/* small growable byte buffer                                                             */
/* ====================================================================================== */
typedef struct sbuf { char *p; size_t n, cap; int oom; } sbuf;
static void sb_reserve(sbuf *b, size_t extra)
{
    if (b->oom) return;
    if (b->n + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) cap *= 2;
    char *q = realloc(b->p, cap);
    if (!q) { b->oom = 1; return; }
    b->p = q; b->cap = cap;
}
static void sb_put(sbuf *b, const void *s, size_t n)
{
    sb_reserve(b, n);
    if (b->oom) return;
    memcpy(b->p + b->n, s, n); b->n += n; b->p[b->n] = 0;
}
static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap; va_start(ap, fmt);
    int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = 1; return; }
    if ((size_t)k < sizeof tmp) { sb_put(b, tmp, (size_t)k); return; }
    sb_reserve(b, (size_t)k);
    if (b->oom) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

/* ====================================================================================== */
/* CSV                                                                                    */
/* ====================================================================================== */
static void csv_str(sbuf *b, const char *s)
{
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) { sb_put(b, s, strlen(s)); return; }
    sb_put(b, "\"", 1);
    for (const char *q = s; *q; q++) { if (*q == '"') sb_put(b, "\"", 1); sb_put(b, q, 1); }
    sb_put(b, "\"", 1);
}
static void csv_num(sbuf *b, const char *fmt, double v)
{
    if (isnan(v)) return;
    sb_printf(b, fmt, v);
}
/* The row into a growable buffer (no newline). */
static void csv_row(sbuf *b, const al_csv_row *r)
{
    csv_str(b, r->run_id); sb_put(b, ",", 1);
    csv_str(b, r->task); sb_put(b, ",", 1);
    csv_str(b, r->dataset); sb_put(b, ",", 1);
    csv_str(b, r->model); sb_put(b, ",", 1);
    sb_printf(b, "%ld,%ld,%d,", r->train_size, r->seed, r->epoch);
    csv_num(b, "%.6g", r->train_loss); sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->train_acc); sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->val_acc); sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->test_acc); sb_put(b, ",", 1);
    csv_num(b, "%.4f", r->epoch_seconds); sb_put(b, ",", 1);
    csv_num(b, "%.1f", r->samples_per_second); sb_put(b, ",", 1);
    sb_printf(b, "%ld", r->params);
}

/* Returns the row's length; if it does not fit in n bytes (with its NUL), returns -1 and buf is "". */
int al_csv_format(char *buf, size_t n, const al_csv_row *r)
{
    sbuf b = {0};
    csv_row(&b, r);
    int len = -1;
    if (!b.oom && b.n < n && b.n <= INT_MAX) { memcpy(buf, b.p, b.n + 1); len = (int)b.n; }
    else if (n) buf[0] = 0;
    free(b.p);
    return len;
}

static int write_all(int fd, const void *data, size_t n)
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
static int pread_all(int fd, void *data, size_t n, off_t off)
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

/* Offset just after the last '\n' in [0, size), or 0 if there is none. */
static off_t last_line_end(int fd, off_t size, int *ioerr)
{
    char chunk[4096];
    off_t end = size;
    *ioerr = 0;
    while (end > 0) {
        off_t beg = end > (off_t)sizeof chunk ? end - (off_t)sizeof chunk : 0;
        if (pread_all(fd, chunk, (size_t)(end - beg), beg) != 0) { *ioerr = 1; return 0; }
        for (off_t i = end - beg; i > 0; i--)
            if (chunk[i - 1] == '\n') return beg + i;
        end = beg;
    }
    return 0;
}

al_status al_csv_append(const char *path, const al_csv_row *r, al_error *err)
{
    sbuf row = {0};
    csv_row(&row, r);
    sb_put(&row, "\n", 1);
    if (row.oom) { free(row.p); return al_seterr(err, "%s: out of memory formatting a CSV row", path); }

    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) { free(row.p); return al_seterr(err, "%s: cannot open results CSV: %s", path, strerror(errno)); }
    al_status st = AL_ERR;
    /* Exclusive advisory lock: two runs appending to one CSV never interleave repair and append. */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    struct stat sb;
    if (fstat(fd, &sb) != 0) { al_seterr(err, "%s: stat failed: %s", path, strerror(errno)); goto out; }
    off_t size = sb.st_size;
    const size_t hl = strlen(AL_CSV_HEADER);

    if (size > 0) {
        /* Check the header line. */
        char first[sizeof AL_CSV_HEADER + 2];
        size_t want = (size_t)size < sizeof first ? (size_t)size : sizeof first;
        if (pread_all(fd, first, want, 0) != 0) { al_seterr(err, "%s: read failed: %s", path, strerror(errno)); goto out; }
        int complete = want > hl && first[hl] == '\n';
        if (complete) {
            if (memcmp(first, AL_CSV_HEADER, hl) != 0) {
                al_seterr(err, "%s: the header line is not attnlab's results header (%s); refusing to append to it",
                          path, AL_CSV_HEADER);
                goto out;
            }
        } else {
            /* No full header line: either a header torn by a killed process (a prefix of ours) or foreign. */
            size_t nl = 0; while (nl < want && first[nl] != '\n') nl++;
            if (nl < want || want > hl || memcmp(first, AL_CSV_HEADER, want) != 0) {
                al_seterr(err, "%s: the header line is not attnlab's results header (%s); refusing to append to it",
                          path, AL_CSV_HEADER);
                goto out;
            }
            if (ftruncate(fd, 0) != 0) { al_seterr(err, "%s: cannot truncate a torn header: %s", path, strerror(errno)); goto out; }
            size = 0;
        }
    }
    if (size > 0) {
        /* Repair a torn last line (a row cut short by a killed process has no '\n'). */
        char last;
        if (pread_all(fd, &last, 1, size - 1) != 0) { al_seterr(err, "%s: read failed: %s", path, strerror(errno)); goto out; }
        if (last != '\n') {
            int ioerr;
            off_t keep = last_line_end(fd, size, &ioerr);
            if (ioerr) { al_seterr(err, "%s: read failed: %s", path, strerror(errno)); goto out; }
            if (ftruncate(fd, keep) != 0) { al_seterr(err, "%s: cannot truncate a torn last line: %s", path, strerror(errno)); goto out; }
            size = keep;
        }
    }
    sbuf all = {0};
    if (size == 0) { sb_put(&all, AL_CSV_HEADER, hl); sb_put(&all, "\n", 1); }
    sb_put(&all, row.p, row.n);
    if (all.oom) { free(all.p); al_seterr(err, "%s: out of memory", path); goto out; }
    /* One write(2) on an O_APPEND descriptor: the row lands whole or (if killed mid-write) torn and repaired later. */
    ssize_t k;
    do k = write(fd, all.p, all.n); while (k < 0 && errno == EINTR);
    if (k < 0 || (size_t)k != all.n) {
        int e = k < 0 ? errno : EIO;
        free(all.p);
        al_seterr(err, "%s: writing a CSV row failed: %s", path, strerror(e));
        goto out;
    }
    free(all.p);
    if (fsync(fd) != 0) { al_seterr(err, "%s: fsync failed: %s", path, strerror(errno)); goto out; }
    st = AL_OK;
out:
    close(fd);   /* also releases the lock */
    free(row.p);
    return st;
}

/* ====================================================================================== */
/* run id, atomic write                                                                   */
/* ====================================================================================== */
void al_run_id(char out[17], const char *canonical)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *s = (const unsigned char *)(canonical ? canonical : ""); *s; s++) {
        h ^= *s;
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

al_status al_write_atomic(const char *path, const void *data, size_t n, al_error *err)
{
    size_t pl = strlen(path);
    char *tmp = malloc(pl + 32);
    if (!tmp) return al_seterr(err, "%s: out of memory", path);
    snprintf(tmp, pl + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { al_seterr(err, "%s: cannot create %s: %s", path, tmp, strerror(errno)); free(tmp); return AL_ERR; }
    if (write_all(fd, data, n) != 0) {
        al_seterr(err, "%s: writing %s failed: %s", path, tmp, strerror(errno));
        close(fd); unlink(tmp); free(tmp); return AL_ERR;
    }
    if (fsync(fd) != 0) {
        al_seterr(err, "%s: fsync of %s failed: %s", path, tmp, strerror(errno));
        close(fd); unlink(tmp); free(tmp); return AL_ERR;
    }
    if (close(fd) != 0) { al_seterr(err, "%s: closing %s failed: %s", path, tmp, strerror(errno)); unlink(tmp); free(tmp); return AL_ERR; }
    if (rename(tmp, path) != 0) {
        al_seterr(err, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        unlink(tmp); free(tmp); return AL_ERR;
    }
    free(tmp);
    /* Make the rename itself durable: fsync the directory (best effort). */
    char *dir = strdup(path);
    if (dir) {
        char *slash = strrchr(dir, '/');
        const char *d = ".";
        if (slash) { if (slash == dir) slash[1] = 0; else *slash = 0; d = dir; }
        int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) { (void)fsync(dfd); close(dfd); }
        free(dir);
    }
    return AL_OK;
}

/* ====================================================================================== */
/* JSON: a small strict parser for the subset safetensors headers use                      */
/* (objects, arrays, strings with escapes, numbers, true/false/null).                      */
/* ====================================================================================== */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jval {
    jtype t;
    double num; int is_int; int64_t i;  /* J_NUM: is_int when written as an integer that fits */
    char *s; size_t slen;               /* J_STR (decoded, NUL-terminated) */
    struct jval **kids; char **keys; int n, cap;   /* J_ARR / J_OBJ (keys only for objects) */
    size_t beg, end;                    /* byte range of this value in the text */
} jval;
typedef struct jparser { const char *p; size_t n, pos; int depth; char err[160]; } jparser;

static void jfree(jval *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) { jfree(v->kids[i]); if (v->keys) free(v->keys[i]); }
    free(v->kids); free(v->keys); free(v->s); free(v);
}
static jval *jerr(jparser *P, const char *what)
{
    if (!P->err[0]) snprintf(P->err, sizeof P->err, "%s at byte %zu", what, P->pos);
    return NULL;
}
static void jws(jparser *P)
{
    while (P->pos < P->n && (P->p[P->pos] == ' ' || P->p[P->pos] == '\t' || P->p[P->pos] == '\n' || P->p[P->pos] == '\r')) P->pos++;
}
static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
static int jhex4(jparser *P, unsigned *u)
{
    if (P->pos + 4 > P->n) return -1;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) { int h = hexval(P->p[P->pos + (size_t)k]); if (h < 0) return -1; v = v * 16 + (unsigned)h; }
    P->pos += 4; *u = v; return 0;
}
static void put_utf8(sbuf *b, unsigned cp)
{
    char o[4]; size_t k;
    if (cp < 0x80) { o[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
    else if (cp < 0x10000) { o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F)); k = 3; }
    else { o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); k = 4; }
    sb_put(b, o, k);
}
/* Parses a string starting at '"'; returns a malloc'd decoded copy (and its length). */
static char *jstring(jparser *P, size_t *len)
{
    if (P->pos >= P->n || P->p[P->pos] != '"') { jerr(P, "expected a string"); return NULL; }
    P->pos++;
    sbuf b = {0};
    sb_reserve(&b, 16);
    for (;;) {
        if (P->pos >= P->n) { free(b.p); jerr(P, "unterminated string"); return NULL; }
        unsigned char c = (unsigned char)P->p[P->pos];
        if (c == '"') { P->pos++; break; }
        if (c < 0x20) { free(b.p); jerr(P, "control character in a string"); return NULL; }
        if (c != '\\') { sb_put(&b, &P->p[P->pos], 1); P->pos++; continue; }
        P->pos++;
        if (P->pos >= P->n) { free(b.p); jerr(P, "unterminated escape"); return NULL; }
        char e = P->p[P->pos++];
        char o;
        switch (e) {
        case '"': o = '"'; break;
        case '\\': o = '\\'; break;
        case '/': o = '/'; break;
        case 'b': o = '\b'; break;
        case 'f': o = '\f'; break;
        case 'n': o = '\n'; break;
        case 'r': o = '\r'; break;
        case 't': o = '\t'; break;
        case 'u': {
            unsigned u;
            if (jhex4(P, &u)) { free(b.p); jerr(P, "bad \\u escape"); return NULL; }
            if (u >= 0xD800 && u < 0xDC00) {   /* high surrogate: a low one must follow */
                unsigned lo;
                if (P->pos + 2 > P->n || P->p[P->pos] != '\\' || P->p[P->pos + 1] != 'u') { free(b.p); jerr(P, "unpaired surrogate"); return NULL; }
                P->pos += 2;
                if (jhex4(P, &lo) || lo < 0xDC00 || lo > 0xDFFF) { free(b.p); jerr(P, "bad surrogate pair"); return NULL; }
                u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
            } else if (u >= 0xDC00 && u < 0xE000) { free(b.p); jerr(P, "unpaired surrogate"); return NULL; }
            if (u == 0) { free(b.p); jerr(P, "\\u0000 in a string"); return NULL; }
            put_utf8(&b, u);
            continue;
        }
        default: free(b.p); P->pos--; jerr(P, "unknown escape"); return NULL;
        }
        sb_put(&b, &o, 1);
    }
    if (b.oom) { free(b.p); jerr(P, "out of memory"); return NULL; }
    *len = b.n;
    return b.p;
}
static jval *jnew(jtype t, size_t beg)
{
    jval *v = calloc(1, sizeof *v);
    if (v) { v->t = t; v->beg = beg; }
    return v;
}
static int jpush(jval *v, jval *kid, char *key)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 8;
        jval **k = realloc(v->kids, (size_t)cap * sizeof *k);
        if (!k) return -1;
        v->kids = k;
        if (v->t == J_OBJ) {
            char **ks = realloc(v->keys, (size_t)cap * sizeof *ks);
            if (!ks) return -1;
            v->keys = ks;
        }
        v->cap = cap;
    }
    v->kids[v->n] = kid;
    if (v->t == J_OBJ) v->keys[v->n] = key;
    v->n++;
    return 0;
}
static jval *jvalue(jparser *P);
static jval *jnumber(jparser *P)
{
    size_t s = P->pos;
    const char *p = P->p;
    size_t i = s;
    if (i < P->n && p[i] == '-') i++;
    if (i >= P->n || !(p[i] >= '0' && p[i] <= '9')) return jerr(P, "bad number");
    if (p[i] == '0') i++; else while (i < P->n && p[i] >= '0' && p[i] <= '9') i++;
    int frac = 0;
    if (i < P->n && p[i] == '.') {
        frac = 1; i++;
        if (i >= P->n || !(p[i] >= '0' && p[i] <= '9')) return jerr(P, "bad number");
        while (i < P->n && p[i] >= '0' && p[i] <= '9') i++;
    }
    if (i < P->n && (p[i] == 'e' || p[i] == 'E')) {
        frac = 1; i++;
        if (i < P->n && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= P->n || !(p[i] >= '0' && p[i] <= '9')) return jerr(P, "bad number");
        while (i < P->n && p[i] >= '0' && p[i] <= '9') i++;
    }
    char tmp[64];
    if (i - s >= sizeof tmp) return jerr(P, "number too long");
    memcpy(tmp, p + s, i - s); tmp[i - s] = 0;
    jval *v = jnew(J_NUM, s);
    if (!v) return jerr(P, "out of memory");
    v->num = strtod(tmp, NULL);
    if (!frac) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) { v->is_int = 1; v->i = ll; }
    }
    P->pos = i; v->end = i;
    return v;
}
static jval *jvalue(jparser *P)
{
    jws(P);
    if (P->pos >= P->n) return jerr(P, "unexpected end of JSON");
    char c = P->p[P->pos];
    size_t beg = P->pos;
    if (c == '{' || c == '[') {
        if (++P->depth > 64) return jerr(P, "nesting too deep");
        int obj = c == '{';
        jval *v = jnew(obj ? J_OBJ : J_ARR, beg);
        if (!v) return jerr(P, "out of memory");
        P->pos++;
        jws(P);
        char close = obj ? '}' : ']';
        if (P->pos < P->n && P->p[P->pos] == close) { P->pos++; v->end = P->pos; P->depth--; return v; }
        for (;;) {
            char *key = NULL;
            if (obj) {
                jws(P);
                size_t kl;
                key = jstring(P, &kl);
                if (!key) { jfree(v); return NULL; }
                for (int k = 0; k < v->n; k++)
                    if (!strcmp(v->keys[k], key)) { free(key); jfree(v); return jerr(P, "duplicate key"); }
                jws(P);
                if (P->pos >= P->n || P->p[P->pos] != ':') { free(key); jfree(v); return jerr(P, "expected ':'"); }
                P->pos++;
            }
            jval *kid = jvalue(P);
            if (!kid) { free(key); jfree(v); return NULL; }
            if (jpush(v, kid, key)) { jfree(kid); free(key); jfree(v); return jerr(P, "out of memory"); }
            jws(P);
            if (P->pos >= P->n) { jfree(v); return jerr(P, obj ? "unterminated object" : "unterminated array"); }
            if (P->p[P->pos] == ',') { P->pos++; continue; }
            if (P->p[P->pos] == close) { P->pos++; break; }
            jfree(v);
            return jerr(P, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        v->end = P->pos; P->depth--;
        return v;
    }
    if (c == '"') {
        jval *v = jnew(J_STR, beg);
        if (!v) return jerr(P, "out of memory");
        v->s = jstring(P, &v->slen);
        if (!v->s) { jfree(v); return NULL; }
        v->end = P->pos;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber(P);
    static const struct { const char *w; jtype t; } lit[] = {{"true", J_BOOL}, {"false", J_BOOL}, {"null", J_NULL}};
    for (int k = 0; k < 3; k++) {
        size_t L = strlen(lit[k].w);
        if (P->pos + L <= P->n && !memcmp(P->p + P->pos, lit[k].w, L)) {
            jval *v = jnew(lit[k].t, beg);
            if (!v) return jerr(P, "out of memory");
            v->i = k == 0; P->pos += L; v->end = P->pos;
            return v;
        }
    }
    return jerr(P, "unexpected character");
}
/* Parse a whole document (trailing whitespace allowed, anything else is an error). */
static jval *jparse(const char *text, size_t n, char *err, size_t errn)
{
    jparser P = {text, n, 0, 0, {0}};
    jval *v = jvalue(&P);
    if (v) {
        jws(&P);
        if (P.pos != n) { jfree(v); v = NULL; jerr(&P, "trailing characters after the JSON value"); }
    }
    if (!v) snprintf(err, errn, "%s", P.err[0] ? P.err : "invalid JSON");
    return v;
}
static jval *jget(const jval *obj, const char *key)
{
    if (!obj || obj->t != J_OBJ) return NULL;
    for (int i = 0; i < obj->n; i++) if (!strcmp(obj->keys[i], key)) return obj->kids[i];
    return NULL;
}

/* ====================================================================================== */
/* safetensors                                                                            */
/* ====================================================================================== */
#define ST_MAX_HEADER ((uint64_t)100 << 20)   /* same limit as the reference implementation */

static void json_str(sbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\') { char e[2] = {'\\', (char)*q}; sb_put(b, e, 2); }
        else if (*q < 0x20) sb_printf(b, "\\u%04x", *q);
        else sb_put(b, q, 1);
    }
    sb_put(b, "\"", 1);
}
static void put_le32(unsigned char *o, const float *x, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(o, x, (size_t)n * 4);
#else
    for (int64_t i = 0; i < n; i++) {
        uint32_t u; memcpy(&u, &x[i], 4);
        o[4 * i] = (unsigned char)u; o[4 * i + 1] = (unsigned char)(u >> 8);
        o[4 * i + 2] = (unsigned char)(u >> 16); o[4 * i + 3] = (unsigned char)(u >> 24);
    }
#endif
}
static void get_le32(float *x, const unsigned char *in, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(x, in, (size_t)n * 4);
#else
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)in[4 * i] | (uint32_t)in[4 * i + 1] << 8 | (uint32_t)in[4 * i + 2] << 16 | (uint32_t)in[4 * i + 3] << 24;
        memcpy(&x[i], &u, 4);
    }
#endif
}

al_status al_safetensors_save(const char *path, const al_params *p, const char *const *kv, int nkv, al_error *err)
{
    if (!p || (p->n > 0 && !p->data)) return al_seterr(err, "%s: parameters are not finalized; nothing to save", path);
    if (nkv < 0 || (nkv > 0 && !kv)) return al_seterr(err, "%s: bad metadata (%d pairs)", path, nkv);
    sbuf h = {0};
    sb_put(&h, "{", 1);
    uint64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        const al_tensor *t = p->t[i];
        for (int j = 0; j < i; j++)
            if (!strcmp(p->t[j]->name, t->name)) { free(h.p); return al_seterr(err, "%s: two parameters are named '%s'", path, t->name); }
        if (i) sb_put(&h, ",", 1);
        json_str(&h, t->name);
        sb_put(&h, ":{\"dtype\":\"F32\",\"shape\":[", 25);
        for (int d = 0; d < t->ndim; d++) sb_printf(&h, d ? ",%d" : "%d", t->shape[d]);
        uint64_t end = off + (uint64_t)t->numel * 4;
        sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)end);
        off = end;
    }
    if (nkv > 0) {
        if (p->n) sb_put(&h, ",", 1);
        sb_put(&h, "\"__metadata__\":{", 16);
        for (int i = 0; i < nkv; i++) {
            if (!kv[2 * i] || !kv[2 * i + 1]) { free(h.p); return al_seterr(err, "%s: metadata pair %d has a NULL key or value", path, i); }
            if (i) sb_put(&h, ",", 1);
            json_str(&h, kv[2 * i]); sb_put(&h, ":", 1); json_str(&h, kv[2 * i + 1]);
        }
        sb_put(&h, "}", 1);
    }
    sb_put(&h, "}", 1);
    while (h.n % 8) sb_put(&h, " ", 1);   /* pad so the data starts 8-byte aligned */
    if (h.oom) { free(h.p); return al_seterr(err, "%s: out of memory building the header", path); }

    size_t total = 8 + h.n + (size_t)off;
    unsigned char *buf = malloc(total);
    if (!buf) { free(h.p); return al_seterr(err, "%s: out of memory (%zu bytes)", path, total); }
    uint64_t hl = h.n;
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(hl >> (8 * k));
    memcpy(buf + 8, h.p, h.n);
    free(h.p);
    unsigned char *d = buf + 8 + hl;
    for (int i = 0; i < p->n; i++) { put_le32(d, p->t[i]->data, p->t[i]->numel); d += p->t[i]->numel * 4; }
    al_status st = al_write_atomic(path, buf, total, err);
    free(buf);
    return st;
}

typedef struct st_entry { const char *name; uint64_t beg, end; al_tensor *t; } st_entry;
static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->beg != y->beg) return x->beg < y->beg ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}
static void shape_text(char *buf, size_t n, const jval *shape)
{
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; shape && i < shape->n && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)shape->kids[i]->i);
    if (o < n) snprintf(buf + o, n - o, "]");
}

al_status al_safetensors_load(const char *path, al_params *p, char **meta, al_error *err)
{
    if (meta) *meta = NULL;
    if (!p || (p->n > 0 && !p->data)) return al_seterr(err, "%s: parameters are not finalized; nothing to load into", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return al_seterr(err, "%s: cannot open checkpoint: %s", path, strerror(errno));
    al_status st = AL_ERR;
    char *htext = NULL; jval *root = NULL; st_entry *ent = NULL; float *stage = NULL; unsigned char *raw = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) { al_seterr(err, "%s: stat failed: %s", path, strerror(errno)); goto out; }
    uint64_t fsize = (uint64_t)sb.st_size;
    if (fsize < 8) { al_seterr(err, "%s: truncated safetensors file: %llu bytes, the 8-byte header length is missing", path, (unsigned long long)fsize); goto out; }
    unsigned char lb[8];
    if (pread_all(fd, lb, 8, 0) != 0) { al_seterr(err, "%s: read failed", path); goto out; }
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = hl << 8 | lb[k];
    if (hl > fsize - 8) { al_seterr(err, "%s: header length %llu is larger than the file (%llu bytes) allows: truncated or not a safetensors file", path, (unsigned long long)hl, (unsigned long long)fsize); goto out; }
    if (hl > ST_MAX_HEADER) { al_seterr(err, "%s: header length %llu exceeds the %llu-byte limit", path, (unsigned long long)hl, (unsigned long long)ST_MAX_HEADER); goto out; }
    if (hl < 2) { al_seterr(err, "%s: header of %llu bytes cannot hold a JSON object", path, (unsigned long long)hl); goto out; }
    htext = malloc(hl + 1);
    if (!htext) { al_seterr(err, "%s: out of memory", path); goto out; }
    if (pread_all(fd, htext, hl, 8) != 0) { al_seterr(err, "%s: read of the header failed", path); goto out; }
    htext[hl] = 0;
    char jerrbuf[200];
    root = jparse(htext, hl, jerrbuf, sizeof jerrbuf);
    if (!root) { al_seterr(err, "%s: the header is not valid JSON: %s", path, jerrbuf); goto out; }
    if (root->t != J_OBJ) { al_seterr(err, "%s: the header is not a JSON object", path); goto out; }
    uint64_t dsize = fsize - 8 - hl;   /* bytes of tensor data */

    ent = calloc((size_t)root->n + 1, sizeof *ent);
    if (!ent) { al_seterr(err, "%s: out of memory", path); goto out; }
    int ne = 0;
    const jval *mj = NULL;
    for (int i = 0; i < root->n; i++) {
        const char *name = root->keys[i];
        const jval *v = root->kids[i];
        if (!strcmp(name, "__metadata__")) {
            if (v->t != J_OBJ) { al_seterr(err, "%s: __metadata__ is not an object", path); goto out; }
            for (int k = 0; k < v->n; k++)
                if (v->kids[k]->t != J_STR) { al_seterr(err, "%s: __metadata__ value of '%s' is not a string", path, v->keys[k]); goto out; }
            mj = v; continue;
        }
        if (v->t != J_OBJ) { al_seterr(err, "%s: tensor '%s': entry is not an object", path, name); goto out; }
        const jval *dt = jget(v, "dtype"), *sh = jget(v, "shape"), *of = jget(v, "data_offsets");
        if (!dt || dt->t != J_STR) { al_seterr(err, "%s: tensor '%s': missing or non-string dtype", path, name); goto out; }
        if (strcmp(dt->s, "F32")) { al_seterr(err, "%s: tensor '%s' has dtype %s; only F32 is supported", path, name, dt->s); goto out; }
        if (!sh || sh->t != J_ARR) { al_seterr(err, "%s: tensor '%s': missing shape array", path, name); goto out; }
        if (!of || of->t != J_ARR || of->n != 2) { al_seterr(err, "%s: tensor '%s': data_offsets must be an array of two integers", path, name); goto out; }
        uint64_t numel = 1;
        for (int k = 0; k < sh->n; k++) {
            const jval *d = sh->kids[k];
            if (d->t != J_NUM || !d->is_int || d->i < 0 || d->i > ((int64_t)1 << 40)) { al_seterr(err, "%s: tensor '%s': shape entry %d is not a valid dimension", path, name, k); goto out; }
            numel *= (uint64_t)d->i;
            if (numel > ((uint64_t)1 << 40)) { al_seterr(err, "%s: tensor '%s': shape is absurdly large", path, name); goto out; }
        }
        int64_t ob[2];
        for (int k = 0; k < 2; k++) {
            const jval *d = of->kids[k];
            if (d->t != J_NUM || !d->is_int || d->i < 0) { al_seterr(err, "%s: tensor '%s': data_offsets[%d] is not a non-negative integer", path, name, k); goto out; }
            ob[k] = d->i;
        }
        if (ob[1] < ob[0] || (uint64_t)ob[1] > dsize) {
            al_seterr(err, "%s: tensor '%s': data_offsets [%lld, %lld] out of range (data section is %llu bytes%s)", path, name,
                      (long long)ob[0], (long long)ob[1], (unsigned long long)dsize,
                      ob[1] >= ob[0] && (uint64_t)ob[1] > dsize ? ": truncated file?" : "");
            goto out;
        }
        if ((uint64_t)(ob[1] - ob[0]) != numel * 4) {
            al_seterr(err, "%s: tensor '%s': data_offsets span %lld bytes but shape needs %llu", path, name,
                      (long long)(ob[1] - ob[0]), (unsigned long long)(numel * 4));
            goto out;
        }
        al_tensor *t = al_params_find(p, name);
        if (!t) { al_seterr(err, "%s: tensor '%s' is in the file but not in the model", path, name); goto out; }
        int same = sh->n == t->ndim;
        for (int k = 0; same && k < t->ndim; k++) same = sh->kids[k]->i == t->shape[k];
        if (!same) {
            char a[128], b[64];
            shape_text(a, sizeof a, sh);
            al_seterr(err, "%s: tensor '%s': shape mismatch: file has %s, model has %s", path, name, a, al_shape_str(t, b, sizeof b));
            goto out;
        }
        ent[ne].name = name; ent[ne].beg = (uint64_t)ob[0]; ent[ne].end = (uint64_t)ob[1]; ent[ne].t = t; ne++;
    }
    for (int i = 0; i < p->n; i++) {
        int found = 0;
        for (int k = 0; k < ne && !found; k++) found = ent[k].t == p->t[i];
        if (!found) { al_seterr(err, "%s: tensor '%s' is missing from the file", path, p->t[i]->name); goto out; }
    }
    qsort(ent, (size_t)ne, sizeof *ent, cmp_entry);
    for (int k = 1; k < ne; k++)
        if (ent[k].beg < ent[k - 1].end) {
            al_seterr(err, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", path,
                      ent[k - 1].name, (unsigned long long)ent[k - 1].beg, (unsigned long long)ent[k - 1].end,
                      ent[k].name, (unsigned long long)ent[k].beg, (unsigned long long)ent[k].end);
            goto out;
        }
    /* Everything checked: read into a staging copy so a failed read leaves the parameters untouched. */
    stage = malloc((size_t)(p->total > 0 ? p->total : 1) * sizeof(float));
    raw = malloc(1 << 20);
    if (!stage || !raw) { al_seterr(err, "%s: out of memory", path); goto out; }
    for (int k = 0; k < ne; k++) {
        al_tensor *t = ent[k].t;
        float *dst = stage + (t->data - p->data);
        uint64_t nb = ent[k].end - ent[k].beg, done = 0;
        while (done < nb) {
            size_t chunk = nb - done > (1u << 20) ? (1u << 20) : (size_t)(nb - done);
            int r = pread_all(fd, raw, chunk, (off_t)(8 + hl + ent[k].beg + done));
            if (r != 0) { al_seterr(err, "%s: tensor '%s': read failed at byte %llu", path, ent[k].name, (unsigned long long)(8 + hl + ent[k].beg + done)); goto out; }
            get_le32(dst + done / 4, raw, (int64_t)(chunk / 4));
            done += chunk;
        }
    }
    if (meta) {
        if (mj) {
            size_t L = mj->end - mj->beg;
            *meta = malloc(L + 1);
            if (!*meta) { al_seterr(err, "%s: out of memory", path); goto out; }
            memcpy(*meta, htext + mj->beg, L); (*meta)[L] = 0;
        } else {
            *meta = strdup("{}");
            if (!*meta) { al_seterr(err, "%s: out of memory", path); goto out; }
        }
    }
    if (p->total > 0) memcpy(p->data, stage, (size_t)p->total * sizeof(float));
    st = AL_OK;
out:
    if (st != AL_OK && meta && *meta) { free(*meta); *meta = NULL; }
    close(fd);
    free(htext); jfree(root); free(ent); free(stage); free(raw);
    return st;
}

char *al_meta_get(const char *meta_json, const char *key)
{
    if (!meta_json || !key) return NULL;
    char e[200];
    jval *v = jparse(meta_json, strlen(meta_json), e, sizeof e);
    if (!v) return NULL;
    char *out = NULL;
    const jval *s = jget(v, key);
    if (s && s->t == J_STR) out = strdup(s->s);
    jfree(v);
    return out;
}

/* ====================================================================================== */
/* PNG                                                                                    */
/* ====================================================================================== */
static void png_mem_write(png_structp png, png_bytep data, size_t n)
{
    sbuf *b = png_get_io_ptr(png);
    sb_put(b, data, n);
    if (b->oom) png_error(png, "out of memory");
}
static void png_mem_flush(png_structp png) { (void)png; }
static void png_on_error(png_structp png, png_const_charp msg)
{
    char *e = png_get_error_ptr(png);
    if (e) snprintf(e, 128, "%s", msg);
    png_longjmp(png, 1);
}
static void png_on_warning(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

al_status al_png_write(const char *path, const uint8_t *pix, int w, int h, int channels, al_error *err)
{
    if (!pix || w < 1 || h < 1 || w > 1000000 || h > 1000000)
        return al_seterr(err, "%s: bad PNG size %dx%d", path, w, h);
    int ct;
    switch (channels) {
    case 1: ct = PNG_COLOR_TYPE_GRAY; break;
    case 2: ct = PNG_COLOR_TYPE_GRAY_ALPHA; break;
    case 3: ct = PNG_COLOR_TYPE_RGB; break;
    case 4: ct = PNG_COLOR_TYPE_RGB_ALPHA; break;
    default: return al_seterr(err, "%s: PNG needs 1, 2, 3 or 4 channels, got %d", path, channels);
    }
    char perr[128] = "";
    sbuf out = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, perr, png_on_error, png_on_warning);
    if (!png) return al_seterr(err, "%s: libpng could not start", path);
    png_infop info = png_create_info_struct(png);
    if (!info) { png_destroy_write_struct(&png, NULL); return al_seterr(err, "%s: libpng could not start", path); }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(out.p);
        return al_seterr(err, "%s: PNG encoding failed: %s", path, perr[0] ? perr : "libpng error");
    }
    png_set_write_fn(png, &out, png_mem_write, png_mem_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, ct, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < h; y++) png_write_row(png, (png_const_bytep)(pix + (size_t)y * (size_t)w * (size_t)channels));
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    al_status st = al_write_atomic(path, out.p, out.n, err);
    free(out.p);
    return st;
}
