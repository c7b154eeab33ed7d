/* data_textfeat.c — token features of the POS task, as torch_pos.py's Featurizer: lower-casing,
 * shape bits, word and suffix vocabularies (min count 2, sorted), "unseen in train" and "ambiguous
 * in train" flags, and the vocabularies as text for checkpoints (see attnlab/text.h).
 *
 * Python's str.lower()/isupper()/isdigit()/isalnum() use the whole Unicode database; here ASCII is
 * exact and a few European blocks are tabled (Latin-1, Latin Extended-A, Greek, Cyrillic). Measured
 * against python3: on the 254 818 words of UD English EWT train/dev/test no lower-cased form and no
 * shape bit differs, and the word ids, suffix ids and unseen flags of all three splits are identical
 * to torch_pos.py's; U+0080–U+017F and Cyrillic lower-case exactly; Latin Extended-B, Greek archaic
 * letters, combining marks and other scripts' case or class may differ. Byte-wise strcmp order of
 * UTF-8 equals Python's code point order, so the vocabularies sort the same.
 */
#include "attnlab/text.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------- characters ---------------- */
/* Decode one code point at s (valid UTF-8 assumed; a stray byte decodes as itself). */
static uint32_t utf8_next(const unsigned char **ps)
{
    const unsigned char *s = *ps;
    uint32_t c = s[0];
    int k = c >= 0xF0 && c <= 0xF4 ? 3 : c >= 0xE0 && c <= 0xEF ? 2 : c >= 0xC2 && c <= 0xDF ? 1 : 0;
    for (int j = 1; j <= k; j++) if ((s[j] & 0xC0) != 0x80) { k = 0; break; }
    if (k == 0) { *ps = s + 1; return c; }
    c &= k == 1 ? 0x1F : k == 2 ? 0x0F : 0x07;
    for (int j = 1; j <= k; j++) c = (c << 6) | (s[j] & 0x3F);
    *ps = s + k + 1;
    return c;
}
static int utf8_put(uint32_t c, char *o)
{
    if (c < 0x80) { o[0] = (char)c; return 1; }
    if (c < 0x800) { o[0] = (char)(0xC0 | (c >> 6)); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
    if (c < 0x10000) { o[0] = (char)(0xE0 | (c >> 12)); o[1] = (char)(0x80 | ((c >> 6) & 0x3F)); o[2] = (char)(0x80 | (c & 0x3F)); return 3; }
    o[0] = (char)(0xF0 | (c >> 18)); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* Simple lower-case mapping of the tabled blocks (U+0130 handled by the caller); c when none. */
static uint32_t lower1(uint32_t c)
{
    if (c < 0x80) return c >= 'A' && c <= 'Z' ? c + 32 : c;
    if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
    if (c >= 0x100 && c <= 0x137) return c % 2 == 0 && c != 0x130 ? c + 1 : c;
    if (c >= 0x139 && c <= 0x148) return c % 2 == 1 ? c + 1 : c;
    if (c >= 0x14A && c <= 0x177) return c % 2 == 0 ? c + 1 : c;
    if (c == 0x178) return 0xFF;
    if (c >= 0x179 && c <= 0x17E) return c % 2 == 1 ? c + 1 : c;
    if (c == 0x386) return 0x3AC;
    if (c >= 0x388 && c <= 0x38A) return c + 37;
    if (c == 0x38C) return 0x3CC;
    if (c == 0x38E || c == 0x38F) return c + 63;
    if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 32;
    if (c >= 0x400 && c <= 0x40F) return c + 80;
    if (c >= 0x410 && c <= 0x42F) return c + 32;
    if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF) || (c >= 0x4D0 && c <= 0x52F)) return c % 2 == 0 ? c + 1 : c;
    if (c == 0x4C0) return 0x4CF;
    if (c >= 0x4C1 && c <= 0x4CE) return c % 2 == 1 ? c + 1 : c;
    return c;
}

enum { C_UPPER = 1, C_LOWER = 2, C_ALNUM = 4, C_DIGIT = 8 };
static int cclass(uint32_t c)
{
    if (c < 0x80) {
        if (c >= 'A' && c <= 'Z') return C_UPPER | C_ALNUM;
        if (c >= 'a' && c <= 'z') return C_LOWER | C_ALNUM;
        if (c >= '0' && c <= '9') return C_DIGIT | C_ALNUM;
        return 0;
    }
    if (c == 0x130 || lower1(c) != c) return C_UPPER | C_ALNUM;
    if (c == 0xB5 || (c >= 0xDF && c <= 0xFF && c != 0xF7) || (c >= 0x100 && c <= 0x17F) ||
        c == 0x390 || (c >= 0x3AC && c <= 0x3CE) || (c >= 0x430 && c <= 0x45F) ||
        (c >= 0x461 && c <= 0x481) || (c >= 0x48B && c <= 0x52F))
        return C_LOWER | C_ALNUM;                       /* what is left of the cased blocks is lower case */
    if (c == 0xB2 || c == 0xB3 || c == 0xB9 || (c >= 0x660 && c <= 0x669) || (c >= 0x6F0 && c <= 0x6F9) ||
        (c >= 0x966 && c <= 0x96F) || (c >= 0xFF10 && c <= 0xFF19))
        return C_DIGIT | C_ALNUM;
    if (c == 0xAA || c == 0xBA || (c >= 0xBC && c <= 0xBE)) return C_ALNUM;   /* ª º, ¼ ½ ¾ */
    if (c < 0xC0 || c == 0xD7 || c == 0xF7) return 0;   /* Latin-1 punctuation and symbols */
    if ((c >= 0x300 && c <= 0x36F) || c == 0x37E || c == 0x387 ||   /* combining marks, Greek ; · */
        (c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) || (c >= 0xD800 && c <= 0xF8FF) ||
        (c >= 0xFE00 && c <= 0xFE6F) || (c >= 0xFF00 && c <= 0xFF0F) || (c >= 0x1F000 && c <= 0x1FAFF))
        return 0;
    return C_ALNUM;                                     /* letters of other (uncased) scripts */
}

int al_text_lower(const char *s, char *out, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t k = 0;
    while (*p) {
        uint32_t c = utf8_next(&p);
        char b[8]; int m;
        if (c == 0x130) { b[0] = 'i'; m = 1 + utf8_put(0x307, b + 1); }   /* İ → i + combining dot, as Python */
        else m = utf8_put(lower1(c), b);
        if (k + (size_t)m + 1 > n) return -1;
        memcpy(out + k, b, (size_t)m); k += (size_t)m;
    }
    if (k + 1 > n) return -1;
    out[k] = 0;
    return (int)k;
}

void al_text_shape(const char *word, float bits[4])
{
    const unsigned char *p = (const unsigned char *)word;
    int first = 1, any_cased = 0, any_lower = 0, any_digit = 0, any_alnum = 0, first_upper = 0;
    while (*p) {
        int k = cclass(utf8_next(&p));
        if (first) first_upper = !!(k & C_UPPER);
        first = 0;
        any_cased |= !!(k & (C_UPPER | C_LOWER)); any_lower |= !!(k & C_LOWER);
        any_digit |= !!(k & C_DIGIT); any_alnum |= !!(k & C_ALNUM);
    }
    bits[0] = (float)first_upper;
    bits[1] = (float)(any_cased && !any_lower);
    bits[2] = (float)any_digit;
    bits[3] = (float)!any_alnum;
}

/* Start of the last 3 code points of s. */
static const char *last3(const char *s, size_t len)
{
    size_t i = len;
    for (int n = 0; n < 3 && i > 0; n++) {
        i--;
        while (i > 0 && ((unsigned char)s[i] & 0xC0) == 0x80) i--;
    }
    return s + i;
}

/* ---------------- vocabularies ---------------- */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int al_vocab_id(const al_vocab *v, const char *s)
{
    int lo = 0, hi = v->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(v->s[mid], s);
        if (c == 0) return mid + 2;
        if (c < 0) lo = mid + 1; else hi = mid - 1;
    }
    return 1;
}

static void vocab_free(al_vocab *v) { free(v->s); free(v->pool); memset(v, 0, sizeof *v); }

/* v = the distinct strings of a sorted array that occur >= min_count times. */
static int vocab_from_sorted(char **a, int n, int min_count, al_vocab *v)
{
    memset(v, 0, sizeof *v);
    int cnt = 0; size_t bytes = 0;
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && strcmp(a[j], a[i]) == 0; j++) {}
        if (j - i >= min_count) { cnt++; bytes += strlen(a[i]) + 1; }
    }
    v->s = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *v->s);
    v->pool = malloc(bytes > 0 ? bytes : 1);
    if (!v->s || !v->pool) { vocab_free(v); return 0; }
    size_t off = 0;
    for (int i = 0, j; i < n; i = j) {
        for (j = i + 1; j < n && strcmp(a[j], a[i]) == 0; j++) {}
        if (j - i >= min_count) {
            size_t l = strlen(a[i]) + 1;
            memcpy(v->pool + off, a[i], l);
            v->s[v->n++] = v->pool + off; off += l;
        }
    }
    return 1;
}

void al_feat_free(al_featurizer *fz)
{
    if (!fz) return;
    vocab_free(&fz->words); vocab_free(&fz->suffixes); vocab_free(&fz->train_words); vocab_free(&fz->ambiguous);
}

static size_t max_form_len(const al_conllu *d)
{
    size_t m = 0;
    for (int i = 0; i < d->ntok; i++) { size_t l = strlen(d->form[i]); if (l > m) m = l; }
    return m;
}

/* A lower-cased word with one of its tags in train. */
typedef struct word_tag { const char *w; int tag; } word_tag;
static int cmp_word_tag(const void *a, const void *b)
{
    const word_tag *x = a, *y = b;
    int c = strcmp(x->w, y->w);
    return c ? c : (x->tag > y->tag) - (x->tag < y->tag);
}

/* v = the words of low[0..n) (lower-cased train words, tags[i] their UPOS, -1 untagged: ignored) that
 * carry two or more distinct tags: "saw" as NOUN and as VERB. */
static int ambiguous_words(char *const *low, const int *tags, int n, al_vocab *v)
{
    memset(v, 0, sizeof *v);
    word_tag *wt = malloc((size_t)(n > 0 ? n : 1) * sizeof *wt);
    char **amb = malloc((size_t)(n > 0 ? n : 1) * sizeof *amb);
    int m = 0, na = 0, ok = 0;
    if (!wt || !amb) goto out;
    for (int i = 0; i < n; i++) if (tags[i] >= 0) wt[m++] = (word_tag){low[i], tags[i]};
    qsort(wt, (size_t)m, sizeof *wt, cmp_word_tag);
    for (int i = 0, j; i < m; i = j) {   /* one word's run: distinct tags are adjacent and sorted */
        int distinct = 1;
        for (j = i + 1; j < m && !strcmp(wt[j].w, wt[i].w); j++) distinct += wt[j].tag != wt[j - 1].tag;
        if (distinct >= 2) amb[na++] = (char *)wt[i].w;
    }
    ok = vocab_from_sorted(amb, na, 1, v);
out:
    free(wt); free(amb);
    return ok;
}

al_status al_feat_build(const al_conllu *train, al_featurizer *fz, al_error *err)
{
    memset(fz, 0, sizeof *fz);
    const int n = train->ntok;
    if (n < 1) return al_seterr(err, "features: the training set has no words");
    size_t total = 0;
    for (int i = 0; i < n; i++) total += 3 * strlen(train->form[i]) + 1;
    char *low = malloc(total), **w = malloc((size_t)n * sizeof *w), **suf = malloc((size_t)n * sizeof *suf);
    if (!low || !w || !suf) { free(low); free(w); free(suf); return al_seterr(err, "features: out of memory"); }
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        int l = al_text_lower(train->form[i], low + off, total - off);
        w[i] = low + off; suf[i] = (char *)last3(low + off, (size_t)l);
        off += (size_t)l + 1;
    }
    int ok_amb = ambiguous_words(w, train->tag, n, &fz->ambiguous);   /* w[i] still belongs to token i */
    qsort(w, (size_t)n, sizeof *w, cmp_str);
    int ok = ok_amb && vocab_from_sorted(w, n, 2, &fz->words) && vocab_from_sorted(w, n, 1, &fz->train_words);
    qsort(suf, (size_t)n, sizeof *suf, cmp_str);
    ok = ok && vocab_from_sorted(suf, n, 2, &fz->suffixes);
    free(low); free(w); free(suf);
    if (!ok) { al_feat_free(fz); return al_seterr(err, "features: out of memory"); }
    return AL_OK;
}

al_status al_feat_encode(const al_featurizer *fz, const al_conllu *d, int *word_id, int *suffix_id,
                         float *shape, uint8_t *unseen, uint8_t *ambiguous, al_error *err)
{
    const size_t cap = 3 * max_form_len(d) + 1;
    char *low = malloc(cap);
    if (!low) return al_seterr(err, "features: out of memory");
    for (int i = 0; i < d->ntok; i++) {
        int l = al_text_lower(d->form[i], low, cap);
        if (word_id) word_id[i] = al_vocab_id(&fz->words, low);
        if (suffix_id) suffix_id[i] = al_vocab_id(&fz->suffixes, last3(low, (size_t)l));
        if (unseen) unseen[i] = al_vocab_id(&fz->train_words, low) == 1;
        if (ambiguous) ambiguous[i] = al_vocab_id(&fz->ambiguous, low) != 1;
        if (shape) al_text_shape(d->form[i], shape + (int64_t)i * 4);
    }
    free(low);
    return AL_OK;
}

/* ---------------- vocabularies as text ---------------- */
/* Version 2 added the section "ambiguous"; version 1 texts (checkpoints of attnlab < 0.5) still load,
 * with no ambiguous words. */
static const char *const SECTION[4] = {"words", "suffixes", "train_words", "ambiguous"};
#define VOCAB_MAGIC "attnlab-vocab 2"
#define VOCAB_MAGIC_V1 "attnlab-vocab 1"

al_status al_feat_save(const al_featurizer *fz, char **out, size_t *len, al_error *err)
{
    *out = NULL; if (len) *len = 0;
    const al_vocab *v[4] = {&fz->words, &fz->suffixes, &fz->train_words, &fz->ambiguous};
    size_t total = sizeof VOCAB_MAGIC + 1;
    for (int k = 0; k < 4; k++) {
        total += strlen(SECTION[k]) + 16;
        for (int i = 0; i < v[k]->n; i++) {
            if (!v[k]->s[i][0] || strchr(v[k]->s[i], '\n'))
                return al_seterr(err, "vocab: %s entry %d is empty or holds a newline", SECTION[k], i);
            total += strlen(v[k]->s[i]) + 1;
        }
    }
    char *b = malloc(total);
    if (!b) return al_seterr(err, "vocab: out of memory");
    size_t o = (size_t)snprintf(b, total, "%s\n", VOCAB_MAGIC);
    for (int k = 0; k < 4; k++) {
        o += (size_t)snprintf(b + o, total - o, "%s %d\n", SECTION[k], v[k]->n);
        for (int i = 0; i < v[k]->n; i++) {
            size_t l = strlen(v[k]->s[i]);
            memcpy(b + o, v[k]->s[i], l); b[o + l] = '\n'; o += l + 1;
        }
    }
    b[o] = 0;
    *out = b; if (len) *len = o;
    return AL_OK;
}

/* s[0, n) is UTF-8 without NUL bytes (lead and continuation bytes checked; overlongs not). */
static int utf8_ok(const char *s, size_t n)
{
    const unsigned char *q = (const unsigned char *)s, *e = q + n;
    while (q < e) {
        const unsigned char *q0 = q;
        uint32_t c = utf8_next(&q);
        if (c == 0 || (c >= 0x80 && q == q0 + 1) || q > e) return 0;
    }
    return 1;
}

/* Next line of text[0, len) from *pos as [*s, *s + *n) without its '\n'; 0 at the end. */
static int text_line(const char *text, size_t len, size_t *pos, long *line, const char **s, size_t *n)
{
    if (*pos >= len) return 0;
    const char *b = text + *pos, *e = memchr(b, '\n', len - *pos);
    *s = b; *n = (size_t)((e ? e : text + len) - b);
    *pos += *n + 1; (*line)++;
    return 1;
}

al_status al_feat_load(const char *text, size_t len, al_featurizer *fz, al_error *err)
{
    memset(fz, 0, sizeof *fz);
    al_vocab *v[4] = {&fz->words, &fz->suffixes, &fz->train_words, &fz->ambiguous};
    size_t pos = 0; long line = 0;
    const char *s; size_t n;
    int nsec = 0;
    if (text_line(text, len, &pos, &line, &s, &n)) {
        if (n == strlen(VOCAB_MAGIC) && !memcmp(s, VOCAB_MAGIC, n)) nsec = 4;
        else if (n == strlen(VOCAB_MAGIC_V1) && !memcmp(s, VOCAB_MAGIC_V1, n)) nsec = 3;
    }
    if (!nsec) return al_seterr(err, "vocab:1: not an attnlab vocabulary (expected '%s')", VOCAB_MAGIC);
    for (int k = 0; k < nsec; k++) {
        char head[64];
        long cnt = -1; int used = 0;
        if (!text_line(text, len, &pos, &line, &s, &n)) { al_seterr(err, "vocab:%ld: missing section '%s'", line + 1, SECTION[k]); goto fail; }
        if (n >= sizeof head) n = sizeof head - 1;
        memcpy(head, s, n); head[n] = 0;
        char want[32];
        snprintf(want, sizeof want, "%s %%ld%%n", SECTION[k]);
        if (sscanf(head, want, &cnt, &used) != 1 || (size_t)used != n || cnt < 0 || cnt > (long)(len - pos)) {
            al_seterr(err, "vocab:%ld: expected '%s COUNT', got '%s'", line, SECTION[k], head);
            goto fail;
        }
        const size_t start = pos; const long start_line = line;
        size_t bytes = 0;
        for (long i = 0; i < cnt; i++) {
            if (!text_line(text, len, &pos, &line, &s, &n)) { al_seterr(err, "vocab:%ld: section '%s' ends after %ld of %ld entries", line, SECTION[k], i, cnt); goto fail; }
            bytes += n + 1;
        }
        v[k]->s = malloc((size_t)(cnt > 0 ? cnt : 1) * sizeof *v[k]->s);
        v[k]->pool = malloc(bytes > 0 ? bytes : 1);
        if (!v[k]->s || !v[k]->pool) { al_seterr(err, "vocab: out of memory"); goto fail; }
        pos = start; line = start_line;
        size_t off = 0;
        for (long i = 0; i < cnt; i++) {
            text_line(text, len, &pos, &line, &s, &n);
            if (n == 0) { al_seterr(err, "vocab:%ld: empty entry in '%s'", line, SECTION[k]); goto fail; }
            memcpy(v[k]->pool + off, s, n); v[k]->pool[off + n] = 0;
            if (!utf8_ok(s, n)) {
                al_seterr(err, "vocab:%ld: entry is not valid UTF-8", line); goto fail;
            }
            if (i > 0 && strcmp(v[k]->s[i - 1], v[k]->pool + off) >= 0) {
                al_seterr(err, "vocab:%ld: entries of '%s' not in strictly increasing order", line, SECTION[k]); goto fail;
            }
            v[k]->s[i] = v[k]->pool + off; v[k]->n++;
            off += n + 1;
        }
    }
    if (pos < len) { al_seterr(err, "vocab:%ld: unexpected text after the last section", line + 1); goto fail; }
    return AL_OK;
fail:
    al_feat_free(fz);
    return AL_ERR;
}
