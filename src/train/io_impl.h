/* train/io_impl.h — internals shared by the I/O files of src/train (not part of the public API):
 * a growable byte buffer (fileio.c), whole reads and writes on a descriptor (fileio.c), and the
 * JSON value tree of the small strict parser (json.c) that the safetensors reader uses. */
#ifndef AL_TRAIN_IO_IMPL_H
#define AL_TRAIN_IO_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
#endif
