/* data_conllu.c — CoNLL-U treebanks: a checked streaming reader (gzip or plain, via zlib), the
 * treebank-directory loader and the sentence formatter (see attnlab/text.h).
 *
 * The reader keeps one 256 KiB window of the decompressed stream and hands out one line at a time;
 * a line longer than AL_CONLLU_MAX_LINE is refused before it is copied anywhere. Forms are appended
 * to one growing text buffer and only turned into pointers at the end, so the growth never leaves a
 * dangling pointer. Every error names FILE:LINE.
 */
#include "attnlab/text.h"
#include "attnlab/io.h"
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static const char *const UPOS[AL_UPOS_N] = {
    "ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM",
    "PART", "PRON", "PROPN", "PUNCT", "SCONJ", "SYM", "VERB", "X",
};

const char *al_upos_name(int tag)
{
    if (tag == -1) return "_";
    return tag >= 0 && tag < AL_UPOS_N ? UPOS[tag] : NULL;
}

int al_upos_index(const char *name)
{
    for (int i = 0; name && i < AL_UPOS_N; i++)
        if (strcmp(name, UPOS[i]) == 0) return i;
    return -1;
}

/* ---------------- UTF-8 ---------------- */
/* Offset of the first byte that does not start or continue a valid UTF-8 sequence (no overlongs,
 * surrogates or code points above U+10FFFF; NUL refused too), or -1; *why says what is wrong. */
static long utf8_bad(const unsigned char *s, size_t n, const char **why)
{
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c == 0) { *why = "a NUL byte"; return (long)i; }
        if (c < 0x80) { i++; continue; }
        int k; unsigned cp, min;
        if (c >= 0xC2 && c <= 0xDF) { k = 1; cp = c & 0x1F; min = 0x80; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 2; cp = c & 0x0F; min = 0x800; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 3; cp = c & 0x07; min = 0x10000; }
        else { *why = c < 0xC0 ? "a continuation byte without a lead byte" : "an invalid lead byte"; return (long)i; }
        for (int j = 1; j <= k; j++) {
            if (i + j >= n || (s[i + j] & 0xC0) != 0x80) { *why = "a truncated sequence"; return (long)i; }
            cp = (cp << 6) | (s[i + j] & 0x3F);
        }
        if (cp < min) { *why = "an overlong encoding"; return (long)i; }
        if (cp >= 0xD800 && cp <= 0xDFFF) { *why = "a UTF-16 surrogate"; return (long)i; }
        if (cp > 0x10FFFF) { *why = "a code point above U+10FFFF"; return (long)i; }
        i += (size_t)k + 1;
    }
    return -1;
}

/* ---------------- line reader over zlib ---------------- */
#define WIN (256 * 1024)
typedef struct reader {
    gzFile gz;
    const char *path;
    char *buf;               /* (WIN) */
    size_t beg, end;         /* unread bytes buf[beg, end) */
    int eof;
    long line;               /* number of the line last returned */
    int zerr;                /* zlib reported an error after returning data: report it at the next read */
    char zmsg[200];
} reader;

/* Next line in *s (NUL-terminated in place, '\n' and a trailing '\r' removed), length in *len.
 * Returns 1 for a line, 0 at the end, -1 on error (err set). */
static int next_line(reader *r, char **s, size_t *len, al_error *err)
{
    for (;;) {
        char *p = r->buf + r->beg;
        char *nl = memchr(p, '\n', r->end - r->beg);
        if (nl || (r->eof && r->end > r->beg)) {
            size_t n = nl ? (size_t)(nl - p) : r->end - r->beg;
            r->beg = nl ? r->beg + n + 1 : r->end;
            r->line++;
            if (n > 0 && p[n - 1] == '\r') n--;
            if (n > AL_CONLLU_MAX_LINE) {
                al_seterr(err, "%s:%ld: line longer than %d bytes", al_path_short(r->path), r->line, AL_CONLLU_MAX_LINE);
                return -1;
            }
            p[n] = 0;
            *s = p; *len = n;
            return 1;
        }
        if (r->eof) return 0;
        if (r->end - r->beg > AL_CONLLU_MAX_LINE + 1) {   /* no newline within the limit: refuse now */
            al_seterr(err, "%s:%ld: line longer than %d bytes", al_path_short(r->path), r->line + 1, AL_CONLLU_MAX_LINE);
            return -1;
        }
        if (r->zerr) {   /* the previous read returned its data and then hit an error */
            al_seterr(err, "%s:%ld: %s", al_path_short(r->path), r->line + 1, r->zmsg);
            return -1;
        }
        memmove(r->buf, r->buf + r->beg, r->end - r->beg);
        r->end -= r->beg; r->beg = 0;
        int got = gzread(r->gz, r->buf + r->end, (unsigned)(WIN - 1 - r->end));
        int zerr = Z_OK;
        const char *zmsg = gzerror(r->gz, &zerr);
        if (zerr != Z_OK && zerr != Z_STREAM_END) {
            zmsg = al_input_zmsg(zmsg);   /* without the "<fd:N>: " zlib puts in front */
            snprintf(r->zmsg, sizeof r->zmsg, "%s (%s)",
                     zerr == Z_BUF_ERROR ? "gzip stream truncated" : "cannot decompress",
                     zerr == Z_ERRNO ? strerror(errno) : zmsg ? zmsg : "?");
            r->zerr = 1;
            if (got <= 0) { al_seterr(err, "%s:%ld: %s", al_path_short(r->path), r->line + 1, r->zmsg); return -1; }
        }
        if (got == 0) r->eof = 1;
        r->end += (size_t)got;
    }
}

/* ---------------- growing arrays ---------------- */
static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : 1024;
    while (nc < need) { if (nc > SIZE_MAX / 2 / elem) return 0; nc *= 2; }
    void *q = realloc(*p, nc * elem);
    if (!q) return 0;
    *p = q; *cap = nc;
    return 1;
}

static int all_digits(const char *s) { if (!*s) return 0; for (; *s; s++) if (*s < '0' || *s > '9') return 0; return 1; }
/* "A-B" or "A.B" with digit strings A and B. */
static int digits_sep_digits(const char *s, char sep)
{
    const char *m = strchr(s, sep);
    if (!m || m == s || !m[1]) return 0;
    for (const char *q = s; q < m; q++) if (*q < '0' || *q > '9') return 0;
    return all_digits(m + 1);
}

/* Quote at most 40 bytes of a field for a message. */
static const char *clip(const char *s, char *b, size_t n)
{
    size_t k = strlen(s);
    if (k + 1 <= n && k <= 40) return s;
    size_t m = n - 4 < 40 ? n - 4 : 40;
    while (m > 0 && ((unsigned char)s[m] & 0xC0) == 0x80) m--;   /* do not cut a character */
    memcpy(b, s, m); memcpy(b + m, "...", 4);
    return b;
}

/* The corpus being read: forms (NUL-separated in text, offsets in foff), tags, sentence starts/lines. */
typedef struct corpus {
    int *tag, *sent; long *sline; size_t *foff; char *text;
    size_t cap_tag, cap_foff, cap_sent, cap_sline, cap_text, text_len;
    int ntok, nsent, maxs;
} corpus;

/* Close the sentence of in_sent words that began on block_line; 0, or -1 when out of memory. */
static int end_sentence(corpus *cp, int in_sent, long block_line)
{
    if (in_sent == 0) return 0;
    if (!grow((void **)&cp->sent, &cp->cap_sent, (size_t)cp->nsent + 2, sizeof *cp->sent) ||
        !grow((void **)&cp->sline, &cp->cap_sline, (size_t)cp->nsent + 1, sizeof *cp->sline)) return -1;
    cp->sline[cp->nsent] = block_line;
    cp->sent[++cp->nsent] = cp->ntok;
    if (in_sent > cp->maxs) cp->maxs = in_sent;
    return 0;
}

/* The fields of a word line (already split at tabs into f[0..10)): 1 = a word (*tag set), 0 = a line
 * that tagging skips (multi-word token range, empty node), -1 = an error naming path:line. */
static int word_fields(char *const *f, const char *path, long line, int in_sent, int untagged, int *tag, al_error *err)
{
    char cb[64];
    if (strchr(f[0], '-') && digits_sep_digits(f[0], '-')) return 0;   /* multi-word token: its words follow */
    if (strchr(f[0], '.') && digits_sep_digits(f[0], '.')) return 0;   /* empty node of the enhanced graph */
    if (strchr(f[0], '-') || strchr(f[0], '.') || !all_digits(f[0])) {
        al_seterr(err, "%s:%ld: field 1 (ID) '%s' is not an integer, a range A-B or a decimal A.B", al_path_short(path), line, clip(f[0], cb, sizeof cb));
        return -1;
    }
    errno = 0;
    long id = strtol(f[0], NULL, 10);
    if (errno || id != in_sent + 1) {
        al_seterr(err, "%s:%ld: field 1 (ID) '%s' does not continue the sentence (expected %d)", al_path_short(path), line, clip(f[0], cb, sizeof cb), in_sent + 1);
        return -1;
    }
    if (!f[1][0]) { al_seterr(err, "%s:%ld: field 2 (FORM) is empty", al_path_short(path), line); return -1; }
    *tag = al_upos_index(f[3]);
    if (*tag < 0 && !(untagged && strcmp(f[3], "_") == 0)) {
        al_seterr(err, "%s:%ld: field 4 (UPOS) '%s' is not a UPOS tag%s", al_path_short(path), line, clip(f[3], cb, sizeof cb),
                  strcmp(f[3], "_") == 0 ? " (untagged input not allowed here)" : "");
        return -1;
    }
    return 1;
}

/* Append word `form` with `tag` to the corpus, within the memory budget; 0, -1 (err set) or -2 (oom). */
static int add_word(corpus *cp, const char *form, int tag, const char *path, long line, al_error *err)
{
    if (cp->ntok == INT_MAX - 1) { al_seterr(err, "%s:%ld: too many words", al_path_short(path), line); return -1; }
    const size_t fl = strlen(form) + 1;
    /* the whole corpus in memory: forms, per-word tag, offset and pointer, per-sentence start and line */
    const uint64_t need = al_size_add(al_size_add((uint64_t)cp->text_len, fl),
                                      al_size_add(al_size_mul((uint64_t)cp->ntok + 1, sizeof *cp->tag + sizeof *cp->foff + sizeof(char *)),
                                                  al_size_mul((uint64_t)cp->nsent + 2, sizeof *cp->sent + sizeof *cp->sline)));
    if (need > al_mem_budget()) {
        al_mem_check(need, err, "%s:%ld: the corpus read so far (%d words in %d sentences)", path, line, cp->ntok + 1, cp->nsent + 1);
        return -1;
    }
    if (!grow((void **)&cp->tag, &cp->cap_tag, (size_t)cp->ntok + 1, sizeof *cp->tag) ||
        !grow((void **)&cp->foff, &cp->cap_foff, (size_t)cp->ntok + 1, sizeof *cp->foff) ||
        !grow((void **)&cp->text, &cp->cap_text, cp->text_len + fl, 1)) return -2;
    memcpy(cp->text + cp->text_len, form, fl);
    cp->foff[cp->ntok] = cp->text_len; cp->text_len += fl;
    cp->tag[cp->ntok++] = tag;
    return 0;
}

/* Read every line of r into cp; 0, -1 (err set) or -2 (out of memory). */
static int read_lines(reader *r, corpus *cp, int max_len, int untagged, al_error *err)
{
    const char *path = r->path;
    int in_sent = 0, k;
    long block_line = 0;
    char *line;
    size_t len;
    while ((k = next_line(r, &line, &len, err)) == 1) {
        const char *why;
        long bad = utf8_bad((const unsigned char *)line, len, &why);
        if (bad >= 0) {
            al_seterr(err, "%s:%ld: byte 0x%02X at column %ld is not valid UTF-8 (%s)", al_path_short(path), r->line,
                      (unsigned char)line[bad], bad + 1, why);
            return -1;
        }
        if (len == 0) {                                  /* blank line: the sentence ends */
            if (end_sentence(cp, in_sent, block_line)) return -2;
            in_sent = 0; block_line = 0;
            continue;
        }
        if (!block_line) block_line = r->line;
        if (line[0] == '#') continue;
        char *f[10];
        int nf = 1, tag;
        f[0] = line;
        for (char *q = line; *q; q++)
            if (*q == '\t') { if (nf < 10) f[nf] = q + 1; nf++; *q = 0; }
        if (nf != 10) {
            al_seterr(err, "%s:%ld: %d tab-separated field%s, expected 10", al_path_short(path), r->line, nf, nf == 1 ? "" : "s");
            return -1;
        }
        int w = word_fields(f, path, r->line, in_sent, untagged, &tag, err);
        if (w <= 0) { if (w < 0) return -1; continue; }
        if (in_sent >= max_len) {
            al_seterr(err, "%s:%ld: sentence has more than %d words (max_len)", al_path_short(path), block_line, max_len);
            return -1;
        }
        int a = add_word(cp, f[1], tag, path, r->line, err);
        if (a) return a;
        in_sent++;
    }
    if (k < 0) return -1;
    return end_sentence(cp, in_sent, block_line) ? -2 : 0;   /* last sentence without a blank line after it */
}

al_status al_conllu_read(const char *path, const al_conllu_opts *opts, al_conllu *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    const int max_len = opts && opts->max_len > 0 ? opts->max_len : AL_CONLLU_MAX_LEN;
    const int untagged = opts ? opts->allow_untagged : 0;
    if (!path) return al_seterr(err, "conllu: no file name");
    reader r = {0};
    r.path = path;
    al_input in;   /* a regular file or an inherited pipe; never a FIFO or device (io.h) */
    if (al_input_open(&in, path, AL_IN_STREAM, "CoNLL-U file", err) != AL_OK) return AL_ERR;
    r.gz = gzdopen(in.fd, "rb");
    if (!r.gz) { al_input_close(&in); return al_seterr(err, "%s: cannot open: out of memory", al_path_short(path)); }
    r.buf = malloc(WIN);
    if (!r.buf) { gzclose(r.gz); return al_seterr(err, "%s: out of memory", al_path_short(path)); }
    corpus cp;
    memset(&cp, 0, sizeof cp);
    al_status st = AL_ERR;
    int rc = grow((void **)&cp.sent, &cp.cap_sent, 1, sizeof *cp.sent) ? 0 : -2;
    if (!rc) { cp.sent[0] = 0; rc = read_lines(&r, &cp, max_len, untagged, err); }
    if (!rc && cp.nsent == 0) {
        al_seterr(err, "%s: no sentence (%s)", al_path_short(path), r.line == 0 ? "empty file" : "no word lines");
        rc = -1;
    }
    if (!rc && !(out->form = malloc((size_t)cp.ntok * sizeof *out->form))) rc = -2;
    if (rc == -2) al_seterr(err, "%s:%ld: out of memory", al_path_short(path), r.line);
    if (!rc) {
        for (int i = 0; i < cp.ntok; i++) out->form[i] = cp.text + cp.foff[i];
        out->nsent = cp.nsent; out->ntok = cp.ntok; out->sent_start = cp.sent; out->sent_line = cp.sline;
        out->tag = cp.tag; out->text = cp.text; out->max_sent_len = cp.maxs;
        free(cp.foff);
        st = AL_OK;
    } else {
        free(cp.tag); free(cp.sent); free(cp.sline); free(cp.foff); free(cp.text);
        memset(out, 0, sizeof *out);
    }
    free(r.buf);
    gzclose(r.gz);
    return st;
}

void al_conllu_free(al_conllu *d)
{
    if (!d) return;
    free(d->sent_start); free(d->sent_line); free((void *)d->form); free(d->tag); free(d->text);
    memset(d, 0, sizeof *d);
}

/* ---------------- treebank directories ---------------- */
static int readable(const char *p) { return access(p, R_OK) == 0; }   /* no open: a FIFO must not block */

/* 0 found, 1 not found, -1 error (ambiguous, path too long). */
static int find_split(const char *dir, const char *split, char *out, size_t n, al_error *err)
{
    static const char *const ext[2] = {".conllu.gz", ".conllu"};
    char p[4352];
    for (int e = 0; e < 2; e++) {
        int k = snprintf(p, sizeof p, "%s/%s%s", dir, split, ext[e]);
        if (k < 0 || (size_t)k >= sizeof p) { al_seterr(err, "conllu: path too long: %s", dir); return -1; }
        if (readable(p)) {
            if ((size_t)k + 1 > n) { al_seterr(err, "conllu: path too long: %s", p); return -1; }
            memcpy(out, p, (size_t)k + 1);
            return 0;
        }
    }
    for (int e = 0; e < 2; e++) {
        char suf[64];
        snprintf(suf, sizeof suf, "-ud-%s%s", split, ext[e]);
        const size_t sl = strlen(suf);
        DIR *d = opendir(dir);
        if (!d) { al_seterr(err, "conllu: %s: cannot open directory: %s", dir, strerror(errno)); return -1; }
        struct dirent *de;
        int found = 0;
        char first[4352] = "";
        while ((de = readdir(d))) {
            size_t nl = strlen(de->d_name);
            if (nl <= sl || strcmp(de->d_name + nl - sl, suf) != 0) continue;
            if (found++) {   /* de belongs to d: use it before closedir */
                al_seterr(err, "conllu: %s: more than one *%s file (%s, %s)", dir, suf, first, de->d_name);
                closedir(d);
                return -1;
            }
            snprintf(first, sizeof first, "%s", de->d_name);
        }
        closedir(d);
        if (found) {
            int k = snprintf(p, sizeof p, "%s/%s", dir, first);
            if (k < 0 || (size_t)k >= sizeof p || (size_t)k + 1 > n) { al_seterr(err, "conllu: path too long: %s", dir); return -1; }
            memcpy(out, p, (size_t)k + 1);
            return 0;
        }
    }
    return 1;
}

al_status al_conllu_find(const char *dir, const char *split, char *out, size_t n, al_error *err)
{
    if (!dir || !split) return al_seterr(err, "conllu: no directory or split");
    int r = find_split(dir, split, out, n, err);
    if (r == 1)
        return al_seterr(err, "conllu: %s: no %s file (%s.conllu[.gz] or *-ud-%s.conllu[.gz])", dir, split, split, split);
    return r == 0 ? AL_OK : AL_ERR;
}

al_status al_conllu_load_dir(const char *dir, const al_conllu_opts *opts, al_conllu_set *out, al_error *err)
{
    memset(out, 0, sizeof *out);
    char p[4352];
    if (al_conllu_find(dir, "train", p, sizeof p, err) || al_conllu_read(p, opts, &out->train, err)) goto fail;
    int r = find_split(dir, "dev", p, sizeof p, err);
    if (r < 0) goto fail;
    if (r == 0) {
        if (al_conllu_read(p, opts, &out->dev, err)) goto fail;
        out->has_dev = 1;
    }
    if (al_conllu_find(dir, "test", p, sizeof p, err) || al_conllu_read(p, opts, &out->test, err)) goto fail;
    return AL_OK;
fail:
    al_conllu_set_free(out);
    return AL_ERR;
}

void al_conllu_set_free(al_conllu_set *s)
{
    if (!s) return;
    al_conllu_free(&s->train); al_conllu_free(&s->dev); al_conllu_free(&s->test);
    s->has_dev = 0;
}

/* ---------------- formatting ---------------- */
al_status al_conllu_format(int n, const char *const *forms, const int *tags, char **out, size_t *len,
                           al_error *err)
{
    *out = NULL; if (len) *len = 0;
    if (n < 1 || !forms) return al_seterr(err, "conllu: a sentence needs at least one word");
    size_t total = 2;                                        /* blank line + NUL */
    for (int i = 0; i < n; i++) {
        const char *f = forms[i];
        if (!f || !*f || strpbrk(f, "\t\n\r"))
            return al_seterr(err, "conllu: word %d: a form must be non-empty without tab, newline or CR", i + 1);
        if (tags && !al_upos_name(tags[i])) return al_seterr(err, "conllu: word %d: tag %d is not -1 … 16", i + 1, tags[i]);
        /* ID (≤ 11) + tabs (9) + form + "_" ×7 + tag (≤ 5) + newline */
        total += 11 + 9 + strlen(f) + 7 + 5 + 1;
    }
    char *b = malloc(total);
    if (!b) return al_seterr(err, "conllu: out of memory");
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += (size_t)snprintf(b + k, total - k, "%d\t%s\t_\t%s\t_\t_\t_\t_\t_\t_\n", i + 1, forms[i],
                              al_upos_name(tags ? tags[i] : -1));
    b[k++] = '\n'; b[k] = 0;
    *out = b; if (len) *len = k;
    return AL_OK;
}
