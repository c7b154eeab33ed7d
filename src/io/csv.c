/* csv.c — the results CSV writer (append-only, locked, torn lines repaired) and run ids.
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
#include "io/io_impl.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* ====================================================================================== */
/* CSV                                                                                    */
/* ====================================================================================== */
static void csv_str(al_sbuf *b, const char *s)
{
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) { al_sb_put(b, s, strlen(s)); return; }
    al_sb_put(b, "\"", 1);
    for (const char *q = s; *q; q++) { if (*q == '"') al_sb_put(b, "\"", 1); al_sb_put(b, q, 1); }
    al_sb_put(b, "\"", 1);
}
static void csv_num(al_sbuf *b, const char *fmt, double v)
{
    if (isnan(v)) return;
    al_sb_printf(b, fmt, v);
}
/* The row into a growable buffer (no newline). */
static void csv_row(al_sbuf *b, const al_csv_row *r)
{
    csv_str(b, r->run_id); al_sb_put(b, ",", 1);
    csv_str(b, r->task); al_sb_put(b, ",", 1);
    csv_str(b, r->dataset); al_sb_put(b, ",", 1);
    csv_str(b, r->model); al_sb_put(b, ",", 1);
    al_sb_printf(b, "%ld,%ld,%d,", r->train_size, r->seed, r->epoch);
    csv_num(b, "%.6g", r->train_loss); al_sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->train_acc); al_sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->val_acc); al_sb_put(b, ",", 1);
    csv_num(b, "%.6g", r->test_acc); al_sb_put(b, ",", 1);
    csv_num(b, "%.4f", r->epoch_seconds); al_sb_put(b, ",", 1);
    csv_num(b, "%.1f", r->samples_per_second); al_sb_put(b, ",", 1);
    al_sb_printf(b, "%ld", r->params);
}
/* The columns added in 0.4 (config, status), for a file with the 16-column header. */
static void csv_row_v2(al_sbuf *b, const al_csv_row *r)
{
    csv_row(b, r);
    al_sb_put(b, ",", 1); csv_str(b, r->config);
    al_sb_put(b, ",", 1); csv_str(b, r->status);
}
/* The columns added in 0.5, for a file with the current header: unseen_acc, ambig_acc (sequence runs,
 * word_scores) and test_rmse, test_mae (regression runs); empty where a task does not report them. */
static void csv_row_v3(al_sbuf *b, const al_csv_row *r)
{
    csv_row_v2(b, r);
    al_sb_put(b, ",", 1); if (r->word_scores) csv_num(b, "%.6g", r->unseen_acc);
    al_sb_put(b, ",", 1); if (r->word_scores) csv_num(b, "%.6g", r->ambig_acc);
    al_sb_put(b, ",", 1); if (r->regression) csv_num(b, "%.6g", r->test_rmse);
    al_sb_put(b, ",", 1); if (r->regression) csv_num(b, "%.6g", r->test_mae);
}

/* Returns the row's length; if it does not fit in n bytes (with its NUL), returns -1 and buf is "". */
int al_csv_format(char *buf, size_t n, const al_csv_row *r)
{
    al_sbuf b = {0};
    csv_row_v3(&b, r);
    int len = -1;
    if (!b.oom && b.n < n && b.n <= INT_MAX) { memcpy(buf, b.p, b.n + 1); len = (int)b.n; }
    else if (n) buf[0] = 0;
    free(b.p);
    return len;
}

/* Offset just after the last '\n' in [0, size), or 0 if there is none. */
static off_t last_line_end(int fd, off_t size, int *ioerr)
{
    char chunk[4096];
    off_t end = size;
    *ioerr = 0;
    while (end > 0) {
        off_t beg = end > (off_t)sizeof chunk ? end - (off_t)sizeof chunk : 0;
        if (al_pread_all(fd, chunk, (size_t)(end - beg), beg) != 0) { *ioerr = 1; return 0; }
        for (off_t i = end - beg; i > 0; i--)
            if (chunk[i - 1] == '\n') return beg + i;
        end = beg;
    }
    return 0;
}

/* The header of an existing results CSV: 3 = the current one, 2 = the 16-column one of attnlab 0.4,
 * 1 = the 14-column one of attnlab before 0.4, 0 = none (empty, or a header torn by a killed process:
 * a prefix of the current one, which the caller truncates), -1 = foreign (err set). */
static int header_version(int fd, off_t size, const char *path, al_error *err)
{
    const size_t hl = strlen(AL_CSV_HEADER), hl2 = strlen(AL_CSV_HEADER_V2), hl1 = strlen(AL_CSV_HEADER_V1);
    char first[sizeof AL_CSV_HEADER + 2];
    size_t want = (size_t)size < sizeof first ? (size_t)size : sizeof first;
    if (size == 0) return 0;
    if (al_pread_all(fd, first, want, 0) != 0) { al_seterr(err, "%s: read failed: %s", al_path_short(path), strerror(errno)); return -1; }
    if (want > hl && first[hl] == '\n' && !memcmp(first, AL_CSV_HEADER, hl)) return 3;
    if (want > hl2 && first[hl2] == '\n' && !memcmp(first, AL_CSV_HEADER_V2, hl2)) return 2;
    if (want > hl1 && first[hl1] == '\n' && !memcmp(first, AL_CSV_HEADER_V1, hl1)) return 1;
    size_t nl = 0; while (nl < want && first[nl] != '\n') nl++;
    if (nl == want && want <= hl && !memcmp(first, AL_CSV_HEADER, want)) return 0;
    al_seterr(err, "%s: the header line is not attnlab's results header (%s); refusing to append to it", al_path_short(path),
              AL_CSV_HEADER);
    return -1;
}

al_status al_csv_check(const char *path, al_error *err)
{
    struct stat sb;
    if (!path || !*path || stat(path, &sb) != 0) return al_output_check(path, err);   /* a new file */
    if (al__output_kind(path, &sb, err) != AL_OK) return AL_ERR;   /* a directory, a FIFO, a device, ... */
    int fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC);
    if (fd < 0) return al_seterr(err, "%s: cannot open results CSV for writing: %s", al_path_short(path), strerror(errno));
    al_status st = header_version(fd, sb.st_size, path, err) < 0 ? AL_ERR : AL_OK;
    close(fd);
    return st;
}

/* An append that failed (what, with errno e): the file is cut back to size, its length before the
 * append, so no reader sees a torn row; err names the file and the reason (and a cut that failed). */
static void cut_back(int fd, const struct stat *sb, off_t size, const char *what, int e, const char *path, al_error *err)
{
    if (!S_ISREG(sb->st_mode) || ftruncate(fd, size) == 0) {
        if (S_ISREG(sb->st_mode)) (void)fsync(fd);   /* best effort: the cut is what readers see either way */
        al_seterr(err, "%s: %s failed: %s", al_path_short(path), what, strerror(e));
        return;
    }
    al_seterr(err, "%s: %s failed: %s (cutting the file back to %lld bytes failed too: %s)", al_path_short(path), what,
              strerror(e), (long long)size, strerror(errno));
}

al_status al_csv_append(const char *path, const al_csv_row *r, al_error *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return al_seterr(err, "%s: cannot open results CSV: %s", al_path_short(path), strerror(errno));
    al_status st = AL_ERR;
    al_sbuf row = {0};
    /* Exclusive advisory lock: two runs appending to one CSV never interleave repair and append. */
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {}
    struct stat sb;
    if (fstat(fd, &sb) != 0) { al_seterr(err, "%s: stat failed: %s", al_path_short(path), strerror(errno)); goto out; }
    off_t size = sb.st_size;
    const size_t hl = strlen(AL_CSV_HEADER);
    int version = header_version(fd, size, path, err);
    if (version < 0) goto out;
    if (version == 0 && size > 0) {
        if (ftruncate(fd, 0) != 0) { al_seterr(err, "%s: cannot truncate a torn header: %s", al_path_short(path), strerror(errno)); goto out; }
        size = 0;
    }
    if (version == 1) csv_row(&row, r);           /* an older file keeps its 14 columns */
    else if (version == 2) csv_row_v2(&row, r);   /* or its 16 */
    else csv_row_v3(&row, r);
    al_sb_put(&row, "\n", 1);
    if (row.oom) { al_seterr(err, "%s: out of memory formatting a CSV row", path); goto out; }
    if (size > 0) {
        /* Repair a torn last line (a row cut short by a killed process has no '\n'). */
        char last;
        if (al_pread_all(fd, &last, 1, size - 1) != 0) { al_seterr(err, "%s: read failed: %s", al_path_short(path), strerror(errno)); goto out; }
        if (last != '\n') {
            int ioerr;
            off_t keep = last_line_end(fd, size, &ioerr);
            if (ioerr) { al_seterr(err, "%s: read failed: %s", al_path_short(path), strerror(errno)); goto out; }
            if (ftruncate(fd, keep) != 0) { al_seterr(err, "%s: cannot truncate a torn last line: %s", al_path_short(path), strerror(errno)); goto out; }
            size = keep;
        }
    }
    al_sbuf all = {0};
    if (size == 0) { al_sb_put(&all, AL_CSV_HEADER, hl); al_sb_put(&all, "\n", 1); }
    al_sb_put(&all, row.p, row.n);
    if (all.oom) { free(all.p); al_seterr(err, "%s: out of memory", al_path_short(path)); goto out; }
    /* One write(2) on an O_APPEND descriptor: the row lands whole or (if killed mid-write) torn and
     * repaired by the next append; a write that fails is cut back at once. */
    ssize_t k;
    do k = write(fd, all.p, all.n); while (k < 0 && errno == EINTR);
    if (k >= 0 && (size_t)k < all.n) {
        /* A short write (a full disk, a file-size limit): the row is torn already; writing the rest
         * either completes it or returns the reason (ENOSPC: "No space left on device"), which a plain
         * EIO would hide. */
        if (al_write_all(fd, all.p + k, all.n - (size_t)k) == 0) k = (ssize_t)all.n;
        else k = -1;
    }
    int e = k < 0 ? errno : EIO;
    free(all.p);
    if (k < 0 || (size_t)k != all.n) { cut_back(fd, &sb, size, "writing a CSV row", e, path, err); goto out; }
    if (fsync(fd) != 0) { cut_back(fd, &sb, size, "fsync", errno, path, err); goto out; }
    st = AL_OK;
out:
    close(fd);   /* also releases the lock */
    free(row.p);
    return st;
}

/* ====================================================================================== */
/* the rows of one run (resuming)                                                         */
/* ====================================================================================== */
/* A whole CSV read under the append lock: text (size bytes), its header version, the descriptor. */
typedef struct csv_file { int fd, version; char *text; off_t size; } csv_file;

static void csv_close(csv_file *f) { if (f->fd >= 0) close(f->fd); free(f->text); f->fd = -1; f->text = NULL; }

/* Opens path (a missing file is an empty one when `create` is 0: fd -1, size 0), locks and reads it. */
static al_status csv_open(const char *path, int create, csv_file *f, al_error *err)
{
    memset(f, 0, sizeof *f);
    f->fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0), 0644);
    if (f->fd < 0) {
        if (errno == ENOENT && !create) return AL_OK;
        return al_seterr(err, "%s: cannot open results CSV: %s", al_path_short(path), strerror(errno));
    }
    while (flock(f->fd, LOCK_EX) != 0 && errno == EINTR) {}
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) { al_seterr(err, "%s: stat failed: %s", al_path_short(path), strerror(errno)); csv_close(f); return AL_ERR; }
    f->size = sb.st_size;
    f->text = malloc((size_t)f->size + 1);
    if (!f->text) { al_seterr(err, "%s: out of memory", al_path_short(path)); csv_close(f); return AL_ERR; }
    if (f->size > 0 && al_pread_all(f->fd, f->text, (size_t)f->size, 0) != 0) {
        al_seterr(err, "%s: read failed: %s", al_path_short(path), strerror(errno)); csv_close(f); return AL_ERR;
    }
    f->text[f->size] = 0;
    f->version = header_version(f->fd, f->size, path, err);
    if (f->version < 0) { csv_close(f); return AL_ERR; }
    return AL_OK;
}

/* The whole lines after the header: each call gives [*b, *e) of the next line without its '\n'
 * (a torn last line is not given); 0 at the end. *pos starts at 0. */
static int next_row(const csv_file *f, size_t *pos, size_t *b, size_t *e)
{
    if (*pos == 0) {
        const char *nl = memchr(f->text, '\n', (size_t)f->size);
        if (!nl) return 0;
        *pos = (size_t)(nl - f->text) + 1;
    }
    if (*pos >= (size_t)f->size) return 0;
    const char *nl = memchr(f->text + *pos, '\n', (size_t)f->size - *pos);
    if (!nl) return 0;
    *b = *pos; *e = (size_t)(nl - f->text); *pos = *e + 1;
    return 1;
}

static int row_of(const char *line, size_t len, const char *run_id)
{
    size_t idl = strlen(run_id);
    return len > idl && line[idl] == ',' && !memcmp(line, run_id, idl);
}

al_status al_csv_run_rows(const char *path, const char *run_id, int *n, int *n_done, al_error *err)
{
    *n = *n_done = 0;
    csv_file f;
    if (csv_open(path, 0, &f, err) != AL_OK) return AL_ERR;
    size_t pos = 0, b, e;
    while (f.text && next_row(&f, &pos, &b, &e)) {
        if (!row_of(f.text + b, e - b, run_id)) continue;
        (*n)++;
        if (f.version == 1 || (e - b >= 5 && !memcmp(f.text + e - 5, ",done", 5))) *n_done = *n;   /* 14 columns: whole runs */
    }
    csv_close(&f);
    return AL_OK;
}

al_status al_csv_keep_run_rows(const char *path, const char *run_id, int keep, int *removed, al_error *err)
{
    *removed = 0;
    csv_file f;
    if (csv_open(path, 0, &f, err) != AL_OK) return AL_ERR;
    if (f.fd < 0) return AL_OK;
    size_t pos = 0, b, e, cut = 0;
    int k = 0, tail = 1;                       /* tail: every row from the cut on is the run's */
    while (next_row(&f, &pos, &b, &e)) {
        int mine = row_of(f.text + b, e - b, run_id);
        if (mine && k++ == keep) cut = b;
        else if (cut && !mine) tail = 0;
        if (cut && mine) (*removed)++;
    }
    al_status st = AL_OK;
    if (!cut) { csv_close(&f); return AL_OK; }
    if (tail) {                                /* the usual case: cut the file short */
        if (ftruncate(f.fd, (off_t)cut) != 0 || fsync(f.fd) != 0)
            st = al_seterr(err, "%s: cannot cut the rows of run %s: %s", al_path_short(path), run_id, strerror(errno));
    } else {                                   /* other runs' rows follow: rewrite without the run's */
        al_sbuf out = {0};
        al_sb_put(&out, f.text, cut);
        for (pos = cut; next_row(&f, &pos, &b, &e);)
            if (!row_of(f.text + b, e - b, run_id)) al_sb_put(&out, f.text + b, e - b + 1);
        if (out.oom) st = al_seterr(err, "%s: out of memory", al_path_short(path));
        else st = al_write_atomic(path, out.p, out.n, err);
        free(out.p);
    }
    csv_close(&f);                             /* releases the lock */
    return st;
}

/* ====================================================================================== */
/* run config and run id                                                                  */
/* ====================================================================================== */
int al__canonical_append(char *buf, size_t n, int o, const char *const *kv, int k)
{
    for (int i = 0; i < k && o >= 0 && (size_t)o < n; i++) o += snprintf(buf + o, n - (size_t)o, ";%s=%s", kv[2 * i], kv[2 * i + 1]);
    return o;
}

int al_run_config(char *buf, size_t n, const char *canonical)
{
    /* nwords, nsuffixes: a sequence run's vocabulary sizes, which follow from its training sentences
     * (size and seed), as classes follow from the data: runs of one variant must share a config */
    static const char *const drop[] = {"task", "data", "dataset", "model", "train_size", "seed", "epochs",
                                       "channels", "height", "width", "classes", "optim", "nwords", "nsuffixes"};
    size_t o = 0;
    al_pair q;
    if (n) buf[0] = 0;
    for (const char *pos = canonical ? canonical : ""; al__next_pair(&pos, &q);) {
        int keep = q.klen < q.len;                       /* a key=value pair */
        for (size_t i = 0; keep && i < sizeof drop / sizeof *drop; i++)
            if (q.klen == strlen(drop[i]) && !memcmp(q.p, drop[i], q.klen)) keep = 0;
        size_t len = q.len;
        if (keep && q.klen == 5 && !memcmp(q.p, "split", 5)) {   /* the split's kind, not its count */
            const char *colon = memchr(q.val, ':', q.vlen);
            if (colon) len = (size_t)(colon - q.p);
        }
        if (keep) al__put_pair(buf, n, &o, q.p, len, ';');
    }
    return (int)o;
}

void al_run_id(char out[17], const char *canonical)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const unsigned char *s = (const unsigned char *)(canonical ? canonical : ""); *s; s++) {
        h ^= *s;
        h *= 0x100000001b3ULL;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}
