/* json.c — a small strict JSON parser for the subset safetensors headers use (objects, arrays,
 * strings with escapes, numbers, true/false/null), a JSON string writer, and metadata look-ups. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ====================================================================================== */
/* JSON: a small strict parser for the subset safetensors headers use                      */
/* (objects, arrays, strings with escapes, numbers, true/false/null).                      */
/* ====================================================================================== */
typedef struct jparser { const char *p; size_t n, pos; int depth; char err[160]; } jparser;

void al_json_free(al_jval *v)
{
    if (!v) return;
    for (int i = 0; i < v->n; i++) { al_json_free(v->kids[i]); if (v->keys) free(v->keys[i]); }
    free(v->kids); free(v->keys); free(v->s); free(v);
}
static al_jval *jerr(jparser *P, const char *what)
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
static void put_utf8(al_sbuf *b, unsigned cp)
{
    char o[4]; size_t k;
    if (cp < 0x80) { o[0] = (char)cp; k = 1; }
    else if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 0x3F)); k = 2; }
    else if (cp < 0x10000) { o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[2] = (char)(0x80 | (cp & 0x3F)); k = 3; }
    else { o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); o[3] = (char)(0x80 | (cp & 0x3F)); k = 4; }
    al_sb_put(b, o, k);
}
/* Parses a string starting at '"'; returns a malloc'd decoded copy (and its length). */
static char *jstring(jparser *P, size_t *len)
{
    if (P->pos >= P->n || P->p[P->pos] != '"') { jerr(P, "expected a string"); return NULL; }
    P->pos++;
    al_sbuf b = {0};
    al_sb_reserve(&b, 16);
    for (;;) {
        if (P->pos >= P->n) { free(b.p); jerr(P, "unterminated string"); return NULL; }
        unsigned char c = (unsigned char)P->p[P->pos];
        if (c == '"') { P->pos++; break; }
        if (c < 0x20) { free(b.p); jerr(P, "control character in a string"); return NULL; }
        if (c != '\\') { al_sb_put(&b, &P->p[P->pos], 1); P->pos++; continue; }
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
        al_sb_put(&b, &o, 1);
    }
    if (b.oom || !b.p) { free(b.p); jerr(P, "out of memory"); return NULL; }
    b.p[b.n] = 0;   /* "" decodes to an empty, NUL-terminated string */
    *len = b.n;
    return b.p;
}
static al_jval *jnew(al_jtype t, size_t beg)
{
    al_jval *v = calloc(1, sizeof *v);
    if (v) { v->t = t; v->beg = beg; }
    return v;
}
static int jpush(al_jval *v, al_jval *kid, char *key)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 8;
        al_jval **k = realloc(v->kids, (size_t)cap * sizeof *k);
        if (!k) return -1;
        v->kids = k;
        if (v->t == AL_J_OBJ) {
            char **ks = realloc(v->keys, (size_t)cap * sizeof *ks);
            if (!ks) return -1;
            v->keys = ks;
        }
        v->cap = cap;
    }
    v->kids[v->n] = kid;
    if (v->t == AL_J_OBJ) v->keys[v->n] = key;
    v->n++;
    return 0;
}
static al_jval *jvalue(jparser *P);
static al_jval *jnumber(jparser *P)
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
    al_jval *v = jnew(AL_J_NUM, s);
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
static al_jval *jvalue(jparser *P)
{
    jws(P);
    if (P->pos >= P->n) return jerr(P, "unexpected end of JSON");
    char c = P->p[P->pos];
    size_t beg = P->pos;
    if (c == '{' || c == '[') {
        if (++P->depth > 64) return jerr(P, "nesting too deep");
        int obj = c == '{';
        al_jval *v = jnew(obj ? AL_J_OBJ : AL_J_ARR, beg);
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
                if (!key) { al_json_free(v); return NULL; }
                for (int k = 0; k < v->n; k++)
                    if (!strcmp(v->keys[k], key)) { free(key); al_json_free(v); return jerr(P, "duplicate key"); }
                jws(P);
                if (P->pos >= P->n || P->p[P->pos] != ':') { free(key); al_json_free(v); return jerr(P, "expected ':'"); }
                P->pos++;
            }
            al_jval *kid = jvalue(P);
            if (!kid) { free(key); al_json_free(v); return NULL; }
            if (jpush(v, kid, key)) { al_json_free(kid); free(key); al_json_free(v); return jerr(P, "out of memory"); }
            jws(P);
            if (P->pos >= P->n) { al_json_free(v); return jerr(P, obj ? "unterminated object" : "unterminated array"); }
            if (P->p[P->pos] == ',') { P->pos++; continue; }
            if (P->p[P->pos] == close) { P->pos++; break; }
            al_json_free(v);
            return jerr(P, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        v->end = P->pos; P->depth--;
        return v;
    }
    if (c == '"') {
        al_jval *v = jnew(AL_J_STR, beg);
        if (!v) return jerr(P, "out of memory");
        v->s = jstring(P, &v->slen);
        if (!v->s) { al_json_free(v); return NULL; }
        v->end = P->pos;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return jnumber(P);
    static const struct { const char *w; al_jtype t; } lit[] = {{"true", AL_J_BOOL}, {"false", AL_J_BOOL}, {"null", AL_J_NULL}};
    for (int k = 0; k < 3; k++) {
        size_t L = strlen(lit[k].w);
        if (P->pos + L <= P->n && !memcmp(P->p + P->pos, lit[k].w, L)) {
            al_jval *v = jnew(lit[k].t, beg);
            if (!v) return jerr(P, "out of memory");
            v->i = k == 0; P->pos += L; v->end = P->pos;
            return v;
        }
    }
    return jerr(P, "unexpected character");
}
/* Parse a whole document (trailing whitespace allowed, anything else is an error). */
al_jval *al_json_parse(const char *text, size_t n, char *err, size_t errn)
{
    jparser P = {text, n, 0, 0, {0}};
    al_jval *v = jvalue(&P);
    if (v) {
        jws(&P);
        if (P.pos != n) { al_json_free(v); v = NULL; jerr(&P, "trailing characters after the JSON value"); }
    }
    if (!v) snprintf(err, errn, "%s", P.err[0] ? P.err : "invalid JSON");
    return v;
}
al_jval *al_json_get(const al_jval *obj, const char *key)
{
    if (!obj || obj->t != AL_J_OBJ) return NULL;
    for (int i = 0; i < obj->n; i++) if (!strcmp(obj->keys[i], key)) return obj->kids[i];
    return NULL;
}

void al_json_put_str(al_sbuf *b, const char *s)
{
    al_sb_put(b, "\"", 1);
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\') { char e[2] = {'\\', (char)*q}; al_sb_put(b, e, 2); }
        else if (*q < 0x20) al_sb_printf(b, "\\u%04x", *q);
        else al_sb_put(b, q, 1);
    }
    al_sb_put(b, "\"", 1);
}

char *al_meta_get(const char *meta_json, const char *key)
{
    if (!meta_json || !key) return NULL;
    char e[200];
    al_jval *v = al_json_parse(meta_json, strlen(meta_json), e, sizeof e);
    if (!v) return NULL;
    char *out = NULL;
    const al_jval *s = al_json_get(v, key);
    if (s && s->t == AL_J_STR) out = strdup(s->s);
    al_json_free(v);
    return out;
}
