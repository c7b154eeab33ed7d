/* safetensors.c — checkpoints in the safetensors format: every parameter as F32 under its name,
 * string metadata in "__metadata__". One reader parses the header (8-byte little-endian length, then
 * a JSON object) with the JSON parser of json.c, for full loads and metadata-only reads alike. */
#include "attnlab/io.h"
#include "io/io_impl.h"
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER ((uint64_t)100 << 20)   /* same limit as the reference implementation */

/* 4-byte values (F32 or I32) to and from little-endian bytes. */
static void put_le32(unsigned char *o, const void *x, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(o, x, (size_t)n * 4);
#else
    const unsigned char *b = x;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u; memcpy(&u, b + 4 * i, 4);
        o[4 * i] = (unsigned char)u; o[4 * i + 1] = (unsigned char)(u >> 8);
        o[4 * i + 2] = (unsigned char)(u >> 16); o[4 * i + 3] = (unsigned char)(u >> 24);
    }
#endif
}
static void get_le32(void *x, const unsigned char *in, int64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(x, in, (size_t)n * 4);
#else
    unsigned char *b = x;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)in[4 * i] | (uint32_t)in[4 * i + 1] << 8 | (uint32_t)in[4 * i + 2] << 16 | (uint32_t)in[4 * i + 3] << 24;
        memcpy(b + 4 * i, &u, 4);
    }
#endif
}

static const char *dtype_name(al_st_dtype t) { return t == AL_ST_I32 ? "I32" : "F32"; }
static int64_t array_numel(const al_st_array *a)
{
    int64_t n = 1;
    for (int d = 0; d < a->ndim; d++) n *= a->shape[d];
    return n;
}

al_status al_safetensors_write(const char *path, const al_st_array *a, int na, const char *const *kv, int nkv, al_error *err)
{
    if (na < 0 || (na > 0 && !a)) return al_seterr(err, "%s: bad tensor list (%d tensors)", al_path_short(path), na);
    if (nkv < 0 || (nkv > 0 && !kv)) return al_seterr(err, "%s: bad metadata (%d pairs)", al_path_short(path), nkv);
    al_sbuf h = {0};
    al_sb_put(&h, "{", 1);
    uint64_t off = 0;
    for (int i = 0; i < na; i++) {
        for (int j = 0; j < i; j++)
            if (!strcmp(a[j].name, a[i].name)) { free(h.p); return al_seterr(err, "%s: two parameters are named '%s'", al_path_short(path), a[i].name); }
        if (i) al_sb_put(&h, ",", 1);
        al_json_put_str(&h, a[i].name);
        al_sb_printf(&h, ":{\"dtype\":\"%s\",\"shape\":[", dtype_name(a[i].dtype));
        for (int d = 0; d < a[i].ndim; d++) al_sb_printf(&h, d ? ",%lld" : "%lld", (long long)a[i].shape[d]);
        uint64_t end = off + (uint64_t)array_numel(&a[i]) * 4;
        al_sb_printf(&h, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off, (unsigned long long)end);
        off = end;
    }
    if (nkv > 0) {
        if (na) al_sb_put(&h, ",", 1);
        al_sb_put(&h, "\"__metadata__\":{", 16);
        for (int i = 0; i < nkv; i++) {
            if (!kv[2 * i] || !kv[2 * i + 1]) { free(h.p); return al_seterr(err, "%s: metadata pair %d has a NULL key or value", al_path_short(path), i); }
            if (i) al_sb_put(&h, ",", 1);
            al_json_put_str(&h, kv[2 * i]); al_sb_put(&h, ":", 1); al_json_put_str(&h, kv[2 * i + 1]);
        }
        al_sb_put(&h, "}", 1);
    }
    al_sb_put(&h, "}", 1);
    while (h.n % 8) al_sb_put(&h, " ", 1);   /* pad so the data starts 8-byte aligned */
    if (h.oom) { free(h.p); return al_seterr(err, "%s: out of memory building the header", al_path_short(path)); }

    size_t total = 8 + h.n + (size_t)off;
    unsigned char *buf = malloc(total);
    if (!buf) { free(h.p); return al_seterr(err, "%s: out of memory (%zu bytes)", al_path_short(path), total); }
    uint64_t hl = h.n;
    for (int k = 0; k < 8; k++) buf[k] = (unsigned char)(hl >> (8 * k));
    memcpy(buf + 8, h.p, h.n);
    free(h.p);
    unsigned char *d = buf + 8 + hl;
    for (int i = 0; i < na; i++) { int64_t n = array_numel(&a[i]); put_le32(d, a[i].data, n); d += n * 4; }
    al_status st = al_write_atomic(path, buf, total, err);
    free(buf);
    return st;
}

int al_params_arrays(const al_params *p, al_st_array *a)
{
    for (int i = 0; i < p->n; i++) {
        const al_tensor *t = p->t[i];
        a[i].name = t->name; a[i].dtype = AL_ST_F32; a[i].ndim = t->ndim; a[i].data = t->data;
        for (int d = 0; d < AL_MAXDIM; d++) a[i].shape[d] = d < t->ndim ? t->shape[d] : 1;
    }
    return p->n;
}

al_status al_safetensors_save(const char *path, const al_params *p, const char *const *kv, int nkv, al_error *err)
{
    if (!p || (p->n > 0 && !p->data)) return al_seterr(err, "%s: parameters are not finalized; nothing to save", al_path_short(path));
    al_st_array *a = malloc((size_t)(p->n > 0 ? p->n : 1) * sizeof *a);
    if (!a) return al_seterr(err, "%s: out of memory", al_path_short(path));
    al_status st = al_safetensors_write(path, a, al_params_arrays(p, a), kv, nkv, err);
    free(a);
    return st;
}

al_status al__safetensors_save_merged(const char *path, const al_params *p, const char *const *tmpl, int ntmpl,
                                      const char *const *extra, int nextra, al_error *err)
{
    if (ntmpl < 0 || nextra < 0 || (nextra > 0 && !extra))
        return al_seterr(err, "%s: bad metadata (%d + %d pairs)", al_path_short(path), ntmpl, nextra);
    const char **kv = malloc((size_t)(ntmpl + nextra + 1) * 2 * sizeof *kv);
    if (!kv) return al_seterr(err, "%s: out of memory", al_path_short(path));
    int n = 0;
    for (int i = 0; i < ntmpl; i++) {
        const char *v = tmpl[2 * i + 1];
        for (int j = 0; !v && j < nextra; j++) if (extra[2 * j] && !strcmp(extra[2 * j], tmpl[2 * i])) v = extra[2 * j + 1];
        if (v) { kv[2 * n] = tmpl[2 * i]; kv[2 * n + 1] = v; n++; }
    }
    for (int j = 0; j < nextra; j++) {
        int known = 0;
        for (int i = 0; i < ntmpl && !known; i++) known = extra[2 * j] && !strcmp(extra[2 * j], tmpl[2 * i]);
        if (!known) { kv[2 * n] = extra[2 * j]; kv[2 * n + 1] = extra[2 * j + 1]; n++; }
    }
    al_status st = al_safetensors_save(path, p, kv, n, err);
    free(kv);
    return st;
}

typedef struct st_entry { const char *name; uint64_t beg, end; al_st_dtype dtype; al_tensor *t; void *dst; } st_entry;
static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->beg != y->beg) return x->beg < y->beg ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}
static void shape_text(char *buf, size_t n, const al_jval *shape)
{
    size_t o = (size_t)snprintf(buf, n, "[");
    for (int i = 0; shape && i < shape->n && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, i ? ", %lld" : "%lld", (long long)shape->kids[i]->i);
    if (o < n) snprintf(buf + o, n - o, "]");
}

/* ---------------- the header: one reader for full loads and metadata-only reads ---------------- */
typedef struct st_header {
    uint64_t fsize, hl;        /* file size; header length */
    char *text;                /* (hl + 1) the header text, NUL-terminated */
    al_jval *root;             /* the header's JSON object */
    const al_jval *meta;       /* its __metadata__ object (every value a string), or NULL */
} st_header;

static void st_header_free(st_header *h)
{
    free(h->text); al_json_free(h->root);
    memset(h, 0, sizeof *h);
}

/* Reads the 8-byte header length and the header of the open file fd (and nothing else), parses it as
 * a JSON object and checks __metadata__. On error h is left empty. */
static al_status st_read_header(int fd, const char *path, st_header *h, al_error *err)
{
    memset(h, 0, sizeof *h);
    struct stat sb;
    if (fstat(fd, &sb) != 0) return al_seterr(err, "%s: stat failed: %s", al_path_short(path), strerror(errno));
    uint64_t fsize = (uint64_t)sb.st_size;
    if (fsize < 8) return al_seterr(err, "%s: truncated safetensors file: %llu bytes, the 8-byte header length is missing", al_path_short(path), (unsigned long long)fsize);
    unsigned char lb[8];
    if (al_pread_all(fd, lb, 8, 0) != 0) return al_seterr(err, "%s: read failed: %s", al_path_short(path), strerror(errno));
    uint64_t hl = 0;
    for (int k = 7; k >= 0; k--) hl = hl << 8 | lb[k];
    if (hl > fsize - 8) return al_seterr(err, "%s: header length %llu is larger than the file (%llu bytes) allows: truncated or not a safetensors file", al_path_short(path), (unsigned long long)hl, (unsigned long long)fsize);
    if (hl > ST_MAX_HEADER) return al_seterr(err, "%s: header length %llu exceeds the %llu-byte limit", al_path_short(path), (unsigned long long)hl, (unsigned long long)ST_MAX_HEADER);
    if (hl < 2) return al_seterr(err, "%s: header of %llu bytes cannot hold a JSON object", al_path_short(path), (unsigned long long)hl);
    h->fsize = fsize; h->hl = hl;
    h->text = malloc(hl + 1);
    if (!h->text) { st_header_free(h); return al_seterr(err, "%s: out of memory", al_path_short(path)); }
    if (al_pread_all(fd, h->text, hl, 8) != 0) { st_header_free(h); return al_seterr(err, "%s: read of the header failed", al_path_short(path)); }
    h->text[hl] = 0;
    char jerrbuf[200];
    h->root = al_json_parse(h->text, hl, jerrbuf, sizeof jerrbuf);
    if (!h->root) { st_header_free(h); return al_seterr(err, "%s: the header is not valid JSON: %s", al_path_short(path), jerrbuf); }
    if (h->root->t != AL_J_OBJ) { st_header_free(h); return al_seterr(err, "%s: the header is not a JSON object", al_path_short(path)); }
    const al_jval *v = al_json_get(h->root, "__metadata__");
    if (v) {
        if (v->t != AL_J_OBJ) { st_header_free(h); return al_seterr(err, "%s: __metadata__ is not an object", al_path_short(path)); }
        for (int k = 0; k < v->n; k++)
            if (v->kids[k]->t != AL_J_STR) {
                al_seterr(err, "%s: __metadata__ value of '%s' is not a string", al_path_short(path), v->keys[k]);
                st_header_free(h); return AL_ERR;
            }
        h->meta = v;
    }
    return AL_OK;
}

/* path opened for reading (al_input_open: a regular file, never a FIFO or device); -1 with err set. */
static int st_open(const char *path, al_error *err)
{
    al_input in;
    return al_input_open(&in, path, 0, "checkpoint", err) == AL_OK ? in.fd : -1;
}

/* st_read_header on path, opened and closed here. */
static al_status st_open_header(const char *path, st_header *h, al_error *err)
{
    memset(h, 0, sizeof *h);
    int fd = st_open(path, err);
    if (fd < 0) return AL_ERR;
    al_status st = st_read_header(fd, path, h, err);
    close(fd);
    return st;
}

/* A malloc'd copy of the __metadata__ object's text as written in the file ("{}" if there is none). */
static al_status st_meta_text(const st_header *h, const char *path, char **meta, al_error *err)
{
    if (h->meta) {
        size_t L = h->meta->end - h->meta->beg;
        *meta = malloc(L + 1);
        if (*meta) { memcpy(*meta, h->text + h->meta->beg, L); (*meta)[L] = 0; }
    } else *meta = strdup("{}");
    return *meta ? AL_OK : al_seterr(err, "%s: out of memory", al_path_short(path));
}

al_status al_safetensors_read_meta(const char *path, char **meta, al_error *err)
{
    *meta = NULL;
    st_header h;
    al_status st = st_open_header(path, &h, err);
    if (st != AL_OK) return st;
    if (!h.meta) st = al_seterr(err, "%s: no __metadata__ in the safetensors header", al_path_short(path));
    else st = st_meta_text(&h, path, meta, err);
    st_header_free(&h);
    return st;
}

/* ---------------- tensors ---------------- */
static al_status st_parse_entry(const char *path, const char *name, const al_jval *v, uint64_t dsize,
                                int any_dtype, st_entry *e, al_error *err);
al_status al_safetensors_read_info(const char *path, char **meta, uint64_t *tensor_bytes, int *ntensors, al_error *err)
{
    if (meta) *meta = NULL;
    *tensor_bytes = 0; *ntensors = 0;
    st_header h;
    al_status st = st_open_header(path, &h, err);
    if (st != AL_OK) return st;
    const uint64_t dsize = h.fsize - 8 - h.hl;
    uint64_t sum = 0;
    int n = 0;
    for (int i = 0; i < h.root->n && st == AL_OK; i++) {
        if (!strcmp(h.root->keys[i], "__metadata__")) continue;
        st_entry e;
        st = st_parse_entry(path, h.root->keys[i], h.root->kids[i], dsize, 0, &e, err);
        if (st == AL_OK) { sum = al_size_add(sum, e.end - e.beg); n++; }
    }
    if (st == AL_OK && meta) {
        if (!h.meta) st = al_seterr(err, "%s: no __metadata__ in the safetensors header", al_path_short(path));
        else st = st_meta_text(&h, path, meta, err);
    }
    if (st == AL_OK) { *tensor_bytes = sum; *ntensors = n; }
    st_header_free(&h);
    return st;
}


/* Checks the header entry `name` → v against the data section (dsize bytes); fills *e. dtype F32, or
 * with any_dtype also I32. */
static al_status st_parse_entry(const char *path, const char *name, const al_jval *v, uint64_t dsize,
                                int any_dtype, st_entry *e, al_error *err)
{
    memset(e, 0, sizeof *e);
    if (v->t != AL_J_OBJ) return al_seterr(err, "%s: tensor '%s': entry is not an object", al_path_short(path), name);
    const al_jval *dt = al_json_get(v, "dtype"), *sh = al_json_get(v, "shape"), *of = al_json_get(v, "data_offsets");
    if (!dt || dt->t != AL_J_STR) return al_seterr(err, "%s: tensor '%s': missing or non-string dtype", al_path_short(path), name);
    e->dtype = !strcmp(dt->s, "I32") && any_dtype ? AL_ST_I32 : AL_ST_F32;
    if (strcmp(dt->s, dtype_name(e->dtype)))
        return al_seterr(err, "%s: tensor '%s' has dtype %s; only F32%s is supported", al_path_short(path), name, dt->s, any_dtype ? " and I32" : "");
    if (!sh || sh->t != AL_J_ARR) return al_seterr(err, "%s: tensor '%s': missing shape array", al_path_short(path), name);
    if (!of || of->t != AL_J_ARR || of->n != 2) return al_seterr(err, "%s: tensor '%s': data_offsets must be an array of two integers", al_path_short(path), name);
    uint64_t numel = 1;
    for (int k = 0; k < sh->n; k++) {
        const al_jval *d = sh->kids[k];
        if (d->t != AL_J_NUM || !d->is_int || d->i < 0 || d->i > ((int64_t)1 << 40)) return al_seterr(err, "%s: tensor '%s': shape entry %d is not a valid dimension", al_path_short(path), name, k);
        numel *= (uint64_t)d->i;
        if (numel > ((uint64_t)1 << 40)) return al_seterr(err, "%s: tensor '%s': shape is absurdly large", al_path_short(path), name);
    }
    int64_t ob[2];
    for (int k = 0; k < 2; k++) {
        const al_jval *d = of->kids[k];
        if (d->t != AL_J_NUM || !d->is_int || d->i < 0) return al_seterr(err, "%s: tensor '%s': data_offsets[%d] is not a non-negative integer", al_path_short(path), name, k);
        ob[k] = d->i;
    }
    if (ob[1] < ob[0] || (uint64_t)ob[1] > dsize)
        return al_seterr(err, "%s: tensor '%s': data_offsets [%lld, %lld] out of range (data section is %llu bytes%s)", al_path_short(path), name,
                         (long long)ob[0], (long long)ob[1], (unsigned long long)dsize,
                         ob[1] >= ob[0] && (uint64_t)ob[1] > dsize ? ": truncated file?" : "");
    if ((uint64_t)(ob[1] - ob[0]) != numel * 4)
        return al_seterr(err, "%s: tensor '%s': data_offsets span %lld bytes but shape needs %llu", al_path_short(path), name,
                         (long long)(ob[1] - ob[0]), (unsigned long long)(numel * 4));
    e->name = name; e->beg = (uint64_t)ob[0]; e->end = (uint64_t)ob[1];
    return AL_OK;
}

/* st_parse_entry, then the model's parameter of that name must exist with the same shape. */
static al_status st_check_entry(const char *path, const char *name, const al_jval *v, uint64_t dsize,
                                al_params *p, st_entry *e, al_error *err)
{
    if (st_parse_entry(path, name, v, dsize, 0, e, err) != AL_OK) return AL_ERR;
    const al_jval *sh = al_json_get(v, "shape");
    al_tensor *t = al_params_find(p, name);
    if (!t) return al_seterr(err, "%s: tensor '%s' is in the file but not in the model", al_path_short(path), name);
    int same = sh->n == t->ndim;
    for (int k = 0; same && k < t->ndim; k++) same = sh->kids[k]->i == t->shape[k];
    if (!same) {
        char a[128], b[64];
        shape_text(a, sizeof a, sh);
        return al_seterr(err, "%s: tensor '%s': shape mismatch: file has %s, model has %s", al_path_short(path), name, a, al_shape_str(t, b, sizeof b));
    }
    e->t = t;
    return AL_OK;
}

/* Every parameter of p is in ent[0..ne) (sorted here by offset) and no two entries overlap. */
static al_status st_check_cover(const char *path, const al_params *p, st_entry *ent, int ne, al_error *err)
{
    for (int i = 0; i < p->n; i++) {
        int found = 0;
        for (int k = 0; k < ne && !found; k++) found = ent[k].t == p->t[i];
        if (!found) return al_seterr(err, "%s: tensor '%s' is missing from the file", al_path_short(path), p->t[i]->name);
    }
    qsort(ent, (size_t)ne, sizeof *ent, cmp_entry);
    for (int k = 1; k < ne; k++)
        if (ent[k].beg < ent[k - 1].end)
            return al_seterr(err, "%s: tensors '%s' [%llu, %llu) and '%s' [%llu, %llu) overlap", al_path_short(path),
                             ent[k - 1].name, (unsigned long long)ent[k - 1].beg, (unsigned long long)ent[k - 1].end,
                             ent[k].name, (unsigned long long)ent[k].beg, (unsigned long long)ent[k].end);
    return AL_OK;
}

/* Reads the tensors ent[0..ne) of the data section (which starts at byte 8 + hl), each into its dst. */
static al_status st_read_tensors(int fd, const char *path, uint64_t hl, const st_entry *ent, int ne, al_error *err)
{
    unsigned char *raw = malloc(1 << 20);
    if (!raw) return al_seterr(err, "%s: out of memory", al_path_short(path));
    for (int k = 0; k < ne; k++) {
        unsigned char *dst = ent[k].dst;
        uint64_t nb = ent[k].end - ent[k].beg, done = 0;
        while (done < nb) {
            size_t chunk = nb - done > (1u << 20) ? (1u << 20) : (size_t)(nb - done);
            int r = al_pread_all(fd, raw, chunk, (off_t)(8 + hl + ent[k].beg + done));
            if (r != 0) {
                free(raw);
                return al_seterr(err, "%s: tensor '%s': read failed at byte %llu", al_path_short(path), ent[k].name, (unsigned long long)(8 + hl + ent[k].beg + done));
            }
            get_le32(dst + done, raw, (int64_t)(chunk / 4));
            done += chunk;
        }
    }
    free(raw);
    return AL_OK;
}

/* Every value read is finite: a NaN or an infinity is a corrupt checkpoint or a diverged run's, and
 * would only turn every prediction into NaN. */
static al_status st_check_finite(const char *path, uint64_t hl, const st_entry *ent, int ne, const al_params *p,
                                 const float *stage /* (p->total) */, al_error *err)
{
    for (int k = 0; k < ne; k++) {
        const al_tensor *t = ent[k].t;
        const float *v = stage + (t->data - p->data);
        for (int64_t i = 0; i < t->numel; i++)
            if (!isfinite(v[i]))
                return al_seterr(err, "%s: tensor '%s' holds %s at element %lld (byte offset %llu): a corrupt checkpoint or "
                                 "a diverged run's", al_path_short(path), ent[k].name, isnan(v[i]) ? "NaN" : "an infinity",
                                 (long long)i, (unsigned long long)(8 + hl + ent[k].beg + 4 * (uint64_t)i));
    }
    return AL_OK;
}

al_status al_safetensors_load(const char *path, al_params *p, char **meta, al_error *err)
{
    if (meta) *meta = NULL;
    if (!p || (p->n > 0 && !p->data)) return al_seterr(err, "%s: parameters are not finalized; nothing to load into", al_path_short(path));
    int fd = st_open(path, err);
    if (fd < 0) return AL_ERR;
    al_status st = AL_ERR;
    st_entry *ent = NULL; float *stage = NULL;
    st_header h;
    if (st_read_header(fd, path, &h, err) != AL_OK) { close(fd); return AL_ERR; }
    uint64_t dsize = h.fsize - 8 - h.hl;   /* bytes of tensor data */
    ent = calloc((size_t)h.root->n + 1, sizeof *ent);
    if (!ent) { al_seterr(err, "%s: out of memory", al_path_short(path)); goto out; }
    int ne = 0;
    for (int i = 0; i < h.root->n; i++) {
        if (!strcmp(h.root->keys[i], "__metadata__")) continue;
        if (st_check_entry(path, h.root->keys[i], h.root->kids[i], dsize, p, &ent[ne], err) != AL_OK) goto out;
        ne++;
    }
    if (st_check_cover(path, p, ent, ne, err) != AL_OK) goto out;
    /* Everything checked: read into a staging copy so a failed read leaves the parameters untouched. */
    stage = malloc((size_t)(p->total > 0 ? p->total : 1) * sizeof(float));
    if (!stage) { al_seterr(err, "%s: out of memory", al_path_short(path)); goto out; }
    for (int k = 0; k < ne; k++) ent[k].dst = stage + (ent[k].t->data - p->data);
    if (st_read_tensors(fd, path, h.hl, ent, ne, err) != AL_OK) goto out;
    if (st_check_finite(path, h.hl, ent, ne, p, stage, err) != AL_OK) goto out;
    if (meta && st_meta_text(&h, path, meta, err) != AL_OK) goto out;
    if (p->total > 0) memcpy(p->data, stage, (size_t)p->total * sizeof(float));
    st = AL_OK;
out:
    if (st != AL_OK && meta && *meta) { free(*meta); *meta = NULL; }
    close(fd);
    st_header_free(&h); free(ent); free(stage);
    return st;
}

al_status al_safetensors_read(const char *path, al_st_array *a, int na, char **meta, al_error *err)
{
    if (meta) *meta = NULL;
    int fd = st_open(path, err);
    if (fd < 0) return AL_ERR;
    st_header h;
    if (st_read_header(fd, path, &h, err) != AL_OK) { close(fd); return AL_ERR; }
    al_status st = AL_ERR;
    const uint64_t dsize = h.fsize - 8 - h.hl;
    int *seen = calloc((size_t)(na > 0 ? na : 1), sizeof *seen);
    st_entry *ent = calloc((size_t)h.root->n + 1, sizeof *ent);
    int ne = 0;
    if (!seen || !ent) { al_seterr(err, "%s: out of memory", al_path_short(path)); goto out; }
    for (int i = 0; i < h.root->n; i++) {
        const char *name = h.root->keys[i];
        if (!strcmp(name, "__metadata__")) continue;
        st_entry *e = &ent[ne];
        if (st_parse_entry(path, name, h.root->kids[i], dsize, 1, e, err) != AL_OK) goto out;
        int k = 0;
        while (k < na && strcmp(a[k].name, name)) k++;
        if (k == na || seen[k]) { al_seterr(err, "%s: tensor '%s' is not one this file should hold", al_path_short(path), name); goto out; }
        if (e->dtype != a[k].dtype || (uint64_t)array_numel(&a[k]) * 4 != e->end - e->beg) {
            al_seterr(err, "%s: tensor '%s' is %s of %llu values, expected %s of %lld", al_path_short(path), name,
                      dtype_name(e->dtype), (unsigned long long)((e->end - e->beg) / 4), dtype_name(a[k].dtype), (long long)array_numel(&a[k]));
            goto out;
        }
        seen[k] = 1; e->dst = a[k].data; ne++;
    }
    for (int k = 0; k < na; k++)
        if (!seen[k]) { al_seterr(err, "%s: tensor '%s' is missing from the file", al_path_short(path), a[k].name); goto out; }
    qsort(ent, (size_t)ne, sizeof *ent, cmp_entry);
    for (int k = 1; k < ne; k++)
        if (ent[k].beg < ent[k - 1].end) { al_seterr(err, "%s: tensors '%s' and '%s' overlap", al_path_short(path), ent[k - 1].name, ent[k].name); goto out; }
    if (st_read_tensors(fd, path, h.hl, ent, ne, err) != AL_OK) goto out;
    if (meta && st_meta_text(&h, path, meta, err) != AL_OK) goto out;
    st = AL_OK;
out:
    close(fd);
    st_header_free(&h); free(ent); free(seen);
    return st;
}
