/* train/io_impl.h — internals shared by the I/O files of src/train (not part of the public API):
 * a growable byte buffer (fileio.c), whole reads and writes on a descriptor (fileio.c), and the
 * JSON value tree of the small strict parser (json.c) that the safetensors reader uses. */
#ifndef AL_TRAIN_IO_IMPL_H
#define AL_TRAIN_IO_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include "attnlab/tensor.h"

/* ---------- growable byte buffer (always NUL-terminated; oom is sticky) ---------- */
typedef struct al_sbuf { char *p; size_t n, cap; int oom; } al_sbuf;
void al_sb_reserve(al_sbuf *b, size_t extra);
void al_sb_put(al_sbuf *b, const void *s /* (n) bytes */, size_t n);
void al_sb_printf(al_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------- whole reads and writes ---------- */
/* 0, or -1 with errno set. */
int al_write_all(int fd, const void *data /* (n) bytes */, size_t n);
/* 0, -1 with errno set, or -2 at end of file. */
int al_pread_all(int fd, void *data /* (n) bytes */, size_t n, off_t off);
/* AL_OK if sb (the stat of path) is a regular file; else the error of a destination that is not one:
 * "PATH: is a directory, expected a file name", "PATH: is a FIFO, not a regular file", ... */
struct stat;
al_status al__output_kind(const char *path, const struct stat *sb, al_error *err);
/* "a FIFO", "a character device", "a directory", ...: what a file of mode m (st_mode) is, in the
 * messages of outputs and inputs alike ("PATH: is a FIFO, not a regular file"). */
const char *al__file_kind(mode_t m);

/* ---------- canonical run descriptions ---------- */
/* Appends ";key=value" for each of the k pairs kv[2i], kv[2i+1] to buf, whose first o bytes are
 * written (snprintf's running total: stops adding once it reaches n). Returns the new total. */
int al__canonical_append(char *buf, size_t n, int o, const char *const *kv, int k);

/* ---------- checkpoints with metadata ---------- */
/* al_safetensors_save with the metadata pairs in the order of tmpl[0..2·ntmpl): a pair whose value is
 * NULL is the caller's, its value taken from the pair of extra[0..2·nextra) with that key (left out when
 * extra has none); then extra's pairs whose keys tmpl lacks, in their order. A model's save says which
 * keys it writes and where; the caller adds the run's own (seed, run id, result). */
al_status al__safetensors_save_merged(const char *path, const al_params *p, const char *const *tmpl, int ntmpl,
                                      const char *const *extra, int nextra, al_error *err);

/* ---------- JSON values ---------- */
typedef enum { AL_J_NULL, AL_J_BOOL, AL_J_NUM, AL_J_STR, AL_J_ARR, AL_J_OBJ } al_jtype;
typedef struct al_jval {
    al_jtype t;
    double num; int is_int; int64_t i;  /* AL_J_NUM: is_int when written as an integer that fits */
    char *s; size_t slen;               /* AL_J_STR (decoded, NUL-terminated) */
    struct al_jval **kids; char **keys; int n, cap;   /* AL_J_ARR / AL_J_OBJ (keys only for objects) */
    size_t beg, end;                    /* byte range [beg, end) of this value in the text */
} al_jval;
/* Parse a whole document text[0..n) (trailing whitespace allowed); NULL with a message in err. */
al_jval *al_json_parse(const char *text, size_t n, char *err, size_t errn);
void     al_json_free(al_jval *v);
/* The value of key in an object, or NULL (also when obj is not an object). */
al_jval *al_json_get(const al_jval *obj, const char *key);
/* Append s as a JSON string literal (quotes, escapes). */
void     al_json_put_str(al_sbuf *b, const char *s);

/* A run config "k=v;k=v": one pair of it. al__next_pair steps *pos past the next pair (0 at the end). */
typedef struct al_pair { const char *p; size_t len, klen; const char *val; size_t vlen; } al_pair;
static inline int al__next_pair(const char **pos, al_pair *q)
{
    const char *p = *pos;
    if (!*p) return 0;
    const char *c = strchr(p, ';');
    q->p = p; q->len = c ? (size_t)(c - p) : strlen(p);
    const char *eq = memchr(p, '=', q->len);
    q->klen = eq ? (size_t)(eq - p) : q->len;
    q->val = eq ? eq + 1 : p + q->len; q->vlen = eq ? q->len - q->klen - 1 : 0;
    *pos = p + q->len + (c != NULL);
    return 1;
}
/* Append bytes s[0..len) to out (n bytes, *o used) after sep when out is not empty; dropped whole if
 * it does not fit. */
static inline void al__put_pair(char *out, size_t n, size_t *o, const char *s, size_t len, char sep)
{
    if (*o + len + 2 >= n) return;
    if (*o) out[(*o)++] = sep;
    memcpy(out + *o, s, len); *o += len; out[*o] = 0;
}

/* Metadata as (key, value) string pairs: kv[2i], kv[2i+1], the values printed into buf. al__kv appends
 * one pair; after an overflow (too many pairs, buf too small) b->n is -1 and stays so. */
typedef struct al_kvb { const char **kv; int max, n; char *buf; size_t size, off; } al_kvb;
static inline void al__kv(al_kvb *b, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void al__kv(al_kvb *b, const char *key, const char *fmt, ...)
{
    if (b->n < 0) return;
    if (b->n >= b->max) { b->n = -1; return; }
    va_list ap; va_start(ap, fmt);
    int w = vsnprintf(b->buf + b->off, b->size - b->off, fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= b->size - b->off) { b->n = -1; return; }
    b->kv[2 * b->n] = key; b->kv[2 * b->n + 1] = b->buf + b->off;
    b->off += (size_t)w + 1; b->n++;
}
#endif
