/* tensor.c — errors, RNG, arena, context, tape, tensors, parameters, CSR, misc. */
#include "attnlab/tensor.h"
#include "core/rng_impl.h"
#include "core/omp_impl.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

/* ---------------- errors ---------------- */
al_status al_seterr(al_error *err, const char *fmt, ...)
{
    if (err && !err->msg[0]) {
        va_list ap; va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return AL_ERR;
}

void *al_fail(al_ctx *c, const char *fmt, ...)
{
    if (c->status == AL_OK) {
        va_list ap; va_start(ap, fmt);
        vsnprintf(c->err, sizeof c->err, fmt, ap);
        va_end(ap);
        c->status = AL_ERR;
    }
    return NULL;
}
int al_ok(const al_ctx *c) { return c->status == AL_OK; }
const char *al_ctx_error(const al_ctx *c) { return c->status == AL_OK ? "" : c->err; }
void al_ctx_clear_error(al_ctx *c) { c->status = AL_OK; c->err[0] = 0; }

/* ---------------- RNG ---------------- */
void al_rng_seed(al_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed * AL__GOLDEN64 ^ (stream + 1) * 0xd1b54a32d192ed03ULL;
    for (int i = 0; i < 4; i++) r->s[i] = al__splitmix64(&x);
}
uint64_t al_rng_u64(al_rng *r) { return al__xoshiro_next(r->s); }
float al_rng_uniform(al_rng *r) { return (float)(al_rng_u64(r) >> 40) * (1.0f / 16777216.0f); }
float al_rng_normal(al_rng *r)
{
    double u1 = ((al_rng_u64(r) >> 11) + 1.0) * (1.0 / 9007199254740993.0);  /* (0, 1] */
    double u2 = (al_rng_u64(r) >> 11) * (1.0 / 9007199254740992.0);
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}
uint32_t al_rng_below(al_rng *r, uint32_t n)
{
    if (n <= 1) return 0;
    uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
    do x = al_rng_u64(r); while (x >= lim);
    return (uint32_t)(x % n);
}
void al_rng_shuffle(al_rng *r, int *a, int n)
{
    for (int i = n - 1; i > 0; i--) { int j = (int)al_rng_below(r, (uint32_t)i + 1); int t = a[i]; a[i] = a[j]; a[j] = t; }
}

/* ---------------- arena ---------------- */
typedef struct al_block { struct al_block *next; size_t size, used; unsigned char *mem; } al_block;
#define AL_ALIGN 64
#define AL_HUGE ((size_t)2 << 20)   /* a transparent huge page (x86-64) */
static al_block *block_new(size_t size)
{
    al_block *b = malloc(sizeof *b);
    if (!b) return NULL;
    /* A large block in huge pages where the kernel gives them on request (THP "madvise"): the
     * graph kernels read rows at random all over arrays of hundreds of MB, and with 4 KiB pages
     * nearly every such read also missed the TLB. */
    const size_t align = size >= 32 * AL_HUGE ? AL_HUGE : AL_ALIGN;
    const size_t bytes = (size + align - 1) / align * align;
    b->mem = aligned_alloc(align, bytes);
    if (!b->mem) { free(b); return NULL; }
#ifdef MADV_HUGEPAGE
    if (align == AL_HUGE) madvise(b->mem, bytes, MADV_HUGEPAGE);   /* advice only: failure changes nothing */
#endif
    b->size = size; b->used = 0; b->next = NULL;
    return b;
}
void *al_arena_alloc(al_arena *a, size_t bytes)
{
    size_t need = (bytes + AL_ALIGN - 1) / AL_ALIGN * AL_ALIGN;
    if (need == 0) need = AL_ALIGN;
    al_block *b = a->blocks;
    if (!b || b->size - b->used < need) {
        al_block *nb = NULL;
        for (al_block **s = &a->spare; *s; s = &(*s)->next)   /* an emptied block that fits */
            if ((*s)->size >= need) { nb = *s; *s = nb->next; nb->used = 0; break; }
        if (!nb) {
            size_t sz = need > ((size_t)1 << 20) ? need : ((size_t)1 << 20);
            if (b && sz < b->size) sz = b->size;        /* grow geometrically-ish */
            nb = block_new(sz);
        }
        if (!nb) return NULL;
        nb->next = a->blocks; a->blocks = nb; b = nb;
    }
    void *p = b->mem + b->used;
    b->used += need; a->used += need;
    if (a->used > a->peak) a->peak = a->used;
    return p;
}
void *al_arena_calloc(al_arena *a, size_t bytes)
{
    void *p = al_arena_alloc(a, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}
void al_arena_free(al_arena *a)
{
    for (al_block *b = a->blocks, *n; b; b = n) { n = b->next; free(b->mem); free(b); }
    for (al_block *b = a->spare, *n; b; b = n) { n = b->next; free(b->mem); free(b); }
    a->blocks = NULL; a->spare = NULL; a->used = 0; a->memo = NULL;
}
int al_arena_nblocks(const al_arena *a)
{
    int n = 0;
    for (al_block *b = a->blocks; b; b = b->next) n++;
    for (al_block *b = a->spare; b; b = b->next) n++;
    return n;
}
size_t al_arena_capacity(const al_arena *a)
{
    size_t n = 0;
    for (al_block *b = a->blocks; b; b = b->next) n += b->size;
    for (al_block *b = a->spare; b; b = b->next) n += b->size;
    return n;
}
void al_arena_reset(al_arena *a)
{
    /* One block that holds the largest step seen: after the first step no allocation happens. */
    if (a->spare || (a->blocks && (a->blocks->next || a->blocks->size < a->peak))) {
        al_arena_free(a);
        a->blocks = block_new(a->peak);
    } else if (a->blocks) {
        a->blocks->used = 0;
    }
    a->used = 0; a->memo = NULL;
}

al_arena_mark al_arena_mark_get(const al_arena *a)
{
    return (al_arena_mark){a->blocks, a->blocks ? a->blocks->used : 0, a->used};
}
void al_arena_release(al_arena *a, al_arena_mark m)
{
    while (a->blocks && a->blocks != m.block) {   /* blocks opened after the mark: kept aside, empty */
        al_block *b = a->blocks;
        a->blocks = b->next;
        b->used = 0; b->next = a->spare; a->spare = b;
    }
    if (a->blocks) a->blocks->used = m.block_used;
    a->used = m.used;
    a->memo = NULL;   /* it may have been in what was released */
}

int al_arena_reserve(al_arena *a, size_t bytes)
{
    if (a->used || (a->blocks && !a->blocks->next && !a->spare && a->blocks->size >= bytes)) return 0;
    al_block *b = block_new(bytes);
    if (!b) return -1;
    al_arena_free(a);
    a->blocks = b;
    return 0;
}

/* ---------------- context & tape ---------------- */
al_ctx *al_ctx_new(uint64_t seed)
{
    al_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->grad_enabled = 1; c->training = 1;
    al_rng_seed(&c->dropout_rng, seed, AL_RNG_DROPOUT);
    return c;
}
void al_ctx_free(al_ctx *c)
{
    if (!c) return;
    al_arena_free(&c->arena); free(c->tape); free(c);
}
void al_ctx_reset(al_ctx *c) { c->ntape = 0; c->grad_free = NULL; al_arena_reset(&c->arena); }

void al_tape_push_outs(al_ctx *c, al_backward_fn fn, void *node, al_tensor *const *out, int n)
{
    if (c->ntape == c->cap_tape) {
        int cap = c->cap_tape ? 2 * c->cap_tape : 256;
        al_tape_entry *t = realloc(c->tape, (size_t)cap * sizeof *t);
        if (!t) { al_fail(c, "out of memory growing the tape"); return; }
        c->tape = t; c->cap_tape = cap;
    }
    al_tape_entry *e = &c->tape[c->ntape++];
    e->fn = fn; e->node = node;
    for (int i = 0; i < 3; i++) e->out[i] = i < n ? out[i] : NULL;
}
void al_tape_push_out(al_ctx *c, al_backward_fn fn, void *node, al_tensor *out) { al_tape_push_outs(c, fn, node, &out, 1); }
void al_tape_push(al_ctx *c, al_backward_fn fn, void *node) { al_tape_push_outs(c, fn, node, NULL, 0); }

/* Free activation gradients: a singly linked list threaded through the buffers themselves (arena
 * blocks of at least 64 bytes), each with its size; al_grad takes one of exactly its size. */
typedef struct grad_buf { struct grad_buf *next; size_t bytes; } grad_buf;
static void grad_release(al_ctx *c, al_tensor *t)
{
    if (!t || !t->grad) return;
    grad_buf *g = (grad_buf *)(void *)t->grad;
    g->bytes = (size_t)t->numel * sizeof(float);
    g->next = c->grad_free; c->grad_free = g;
    t->grad = NULL;
}
static float *grad_reuse(al_ctx *c, size_t bytes)
{
    for (grad_buf **p = (grad_buf **)&c->grad_free; *p; p = &(*p)->next)
        if ((*p)->bytes == bytes) { grad_buf *g = *p; *p = g->next; return (float *)(void *)g; }
    return NULL;
}

al_status al_backward(al_ctx *c, al_tensor *loss)
{
    if (!loss || !al_ok(c)) { if (al_ok(c)) al_fail(c, "backward: loss is NULL"); return AL_ERR; }
    if (loss->numel != 1) { al_fail(c, "backward: loss must be a scalar, got %lld elements", (long long)loss->numel); return AL_ERR; }
    float *g = al_grad(c, loss);
    if (!g) return AL_ERR;
    g[0] += 1.0f;
    return al_backward_run(c);
}
al_status al_backward_run(al_ctx *c)
{
    for (int i = c->ntape - 1; i >= 0 && al_ok(c); i--) {
        c->tape[i].fn(c, c->tape[i].node);
        for (int k = 0; k < 3; k++) grad_release(c, c->tape[i].out[k]);
    }
    c->ntape = 0;
    return al_ok(c) ? AL_OK : AL_ERR;
}

/* ---------------- tensors ---------------- */
int64_t al_shape_numel(int ndim, const int *shape)
{
    if (ndim < 1 || ndim > AL_MAXDIM) return -1;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 1) return -1;
        if (n > ((int64_t)1 << 40) / shape[i]) return -1;
        n *= shape[i];
    }
    return n;
}
const char *al_shape_str(const al_tensor *t, char *buf, size_t n)
{
    if (!t) { snprintf(buf, n, "(null)"); return buf; }
    size_t o = 0;
    o += (size_t)snprintf(buf + o, n - o, "(");
    for (int i = 0; i < t->ndim && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, i ? ", %d" : "%d", t->shape[i]);
    if (o < n) snprintf(buf + o, n - o, ")");
    return buf;
}
static al_tensor *tensor_header(al_ctx *c, int ndim, const int *shape)
{
    if (!al_ok(c)) return NULL;
    int64_t n = al_shape_numel(ndim, shape);
    if (n < 0) {
        char b[96] = "("; for (int i = 0; i < ndim && i < AL_MAXDIM; i++) snprintf(b + strlen(b), sizeof b - strlen(b), i ? ", %d" : "%d", shape[i]);
        return al_fail(c, "invalid tensor shape %s) with %d dims", b, ndim);
    }
    al_tensor *t = al_arena_calloc(&c->arena, sizeof *t);
    if (!t) return al_fail(c, "out of memory (arena)");
    t->ndim = ndim; t->numel = n;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int));
    return t;
}
al_tensor *al_new(al_ctx *c, int ndim, const int *shape)
{
    al_tensor *t = tensor_header(c, ndim, shape);
    if (!t) return NULL;
    t->data = al_arena_alloc(&c->arena, (size_t)t->numel * sizeof(float));
    if (!t->data) return al_fail(c, "out of memory allocating %lld floats", (long long)t->numel);
    return t;
}
al_tensor *al_zeros(al_ctx *c, int ndim, const int *shape)
{
    al_tensor *t = al_new(c, ndim, shape);
    if (t) memset(t->data, 0, (size_t)t->numel * sizeof(float));
    return t;
}
al_tensor *al_wrap(al_ctx *c, float *data, int ndim, const int *shape)
{
    al_tensor *t = tensor_header(c, ndim, shape);
    if (t) t->data = data;
    return t;
}
al_tensor *al_view(al_ctx *c, al_tensor *x, int ndim, const int *shape)
{
    if (!x) return NULL;
    al_tensor *t = tensor_header(c, ndim, shape);
    if (!t) return NULL;
    if (t->numel != x->numel) {
        char b[64]; return al_fail(c, "view: %lld elements cannot be viewed as %lld (from %s)",
                                   (long long)x->numel, (long long)t->numel, al_shape_str(x, b, sizeof b));
    }
    t->data = x->data;
    return t;
}
al_arena_mark al_ctx_mark(const al_ctx *c) { return al_arena_mark_get(&c->arena); }

/* d = s for n floats, d ≤ s. When the two do not overlap (the usual case: what is kept lies above
 * at least as many floats of temporaries) the copy is split across the threads — evaluation moves
 * every block's output this way, and one thread's memmove left the others waiting (3 % of
 * pixel-level sa's inference). Overlapping: one memmove. A copy either way: the same bits. */
static void move_down(float *d, const float *s, int64_t n)
{
    if (s - d < n || n < (1 << 18)) { memmove(d, s, (size_t)n * sizeof(float)); return; }
    const int64_t chunk = 1 << 16, nc = (n + chunk - 1) / chunk;
    AL_OMP("omp parallel for schedule(static)")
    for (int64_t k = 0; k < nc; k++) {
        const int64_t a = k * chunk, m = n - a < chunk ? n - a : chunk;
        memcpy(d + a, s + a, (size_t)m * sizeof(float));
    }
}

al_status al_keep(al_ctx *c, al_arena_mark mark, al_tensor **t, int n)
{
    if (c->grad_enabled || !al_ok(c)) return al_ok(c) ? AL_OK : AL_ERR;
    enum { MAXKEEP = 8 };
    if (n < 1 || n > MAXKEEP) { al_fail(c, "keep: %d tensors (1..%d)", n, MAXKEEP); return AL_ERR; }
    al_tensor hdr[MAXKEEP];
    float *tmp[MAXKEEP] = {0};
    for (int i = 0; i < n; i++) {
        if (!t[i]) return AL_ERR;
        hdr[i] = *t[i];
    }
    /* When all the data lies after the mark in the mark's own block, in allocation order, it moves down in
     * place (memmove in that order: each destination is at or below its source and above every source not
     * yet moved); otherwise (a newer block, borrowed memory) everything is copied out first. */
    const al_block *mb = mark.block;
    const unsigned char *lo = mb ? mb->mem + mark.block_used : NULL, *hi = mb ? mb->mem + mb->size : NULL;
    int inplace = c->arena.blocks == mb && mb != NULL;
    for (int i = 0; i < n && inplace; i++) {   /* all in place, in ascending order, or all copied */
        const unsigned char *d = (const unsigned char *)hdr[i].data;
        inplace = d >= lo && d < hi && (i == 0 || hdr[i].data >= hdr[i - 1].data + hdr[i - 1].numel);
    }
    for (int i = 0; i < n; i++) {
        if (!inplace) {
            tmp[i] = malloc((size_t)hdr[i].numel * sizeof(float));
            if (!tmp[i]) { for (int j = 0; j < i; j++) free(tmp[j]); al_fail(c, "keep: out of memory"); return AL_ERR; }
            memcpy(tmp[i], hdr[i].data, (size_t)hdr[i].numel * sizeof(float));
        }
    }
    al_arena_release(&c->arena, mark);
    float *dst[MAXKEEP];
    al_status st = AL_OK;
    for (int i = 0; i < n; i++) {   /* the data first, back to back from the mark, then the headers */
        dst[i] = al_arena_alloc(&c->arena, (size_t)hdr[i].numel * sizeof(float));
        if (!dst[i]) { st = AL_ERR; break; }
        if (tmp[i]) memcpy(dst[i], tmp[i], (size_t)hdr[i].numel * sizeof(float));
        else move_down(dst[i], hdr[i].data, hdr[i].numel);
    }
    for (int i = 0; i < n && st == AL_OK; i++) {
        al_tensor *h = al_arena_alloc(&c->arena, sizeof *h);
        if (!h) { st = AL_ERR; break; }
        *h = hdr[i];
        h->data = dst[i]; h->grad = NULL;
        t[i] = h;
    }
    for (int i = 0; i < n; i++) free(tmp[i]);
    if (st != AL_OK) al_fail(c, "keep: out of memory (arena)");
    return st;
}

float *al_grad(al_ctx *c, al_tensor *t)
{
    if (!t->grad) {
        const size_t bytes = (size_t)t->numel * sizeof(float);
        float *g = grad_reuse(c, bytes);
        if (g) memset(g, 0, bytes);
        else g = al_arena_calloc(&c->arena, bytes);
        t->grad = g;
        if (!t->grad) al_fail(c, "out of memory allocating a gradient");
    }
    return t->grad;
}
float *al_grad_for_write(al_ctx *c, al_tensor *t, int *fresh)
{
    *fresh = 0;
    if (!t->grad) {
        const size_t bytes = (size_t)t->numel * sizeof(float);
        float *g = grad_reuse(c, bytes);
        t->grad = g ? g : al_arena_alloc(&c->arena, bytes);
        if (!t->grad) { al_fail(c, "out of memory allocating a gradient"); return NULL; }
        *fresh = 1;
    }
    return t->grad;
}
int al_same_shape(const al_tensor *a, const al_tensor *b)
{
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return 0;
    return 1;
}

/* ---------------- parameters ---------------- */
void al_params_init(al_params *p) { memset(p, 0, sizeof *p); }
al_tensor *al_params_add(al_params *p, const char *name, int ndim, const int *shape, al_init init)
{
    int64_t n = al_shape_numel(ndim, shape);
    if (n < 0 || p->data || !name) return NULL;
    for (int i = 0; i < p->n; i++) if (!strcmp(p->t[i]->name, name)) return NULL;   /* checkpoints name tensors */
    if (p->n == p->cap) {
        int cap = p->cap ? 2 * p->cap : 32;
        al_tensor **t = realloc(p->t, (size_t)cap * sizeof *t);
        al_init *in = realloc(p->init, (size_t)cap * sizeof *in);
        uint8_t *d = realloc(p->decay, (size_t)cap);
        if (t) p->t = t;
        if (in) p->init = in;
        if (d) p->decay = d;
        if (!t || !in || !d) return NULL;
        p->cap = cap;
    }
    al_tensor *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ndim = ndim; t->numel = n; t->requires_grad = 1;
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int));
    t->name = strdup(name);
    if (!t->name) { free(t); return NULL; }
    p->t[p->n] = t; p->init[p->n] = init; p->decay[p->n] = ndim >= 2;
    p->n++; p->total += n;
    return t;
}
al_status al_params_finalize(al_params *p, al_rng *rng, al_error *err)
{
    if (p->data) return al_seterr(err, "parameters already finalized");
    size_t bytes = (size_t)(p->total > 0 ? p->total : 1) * sizeof(float);
    p->data = aligned_alloc(AL_ALIGN, (bytes + AL_ALIGN - 1) / AL_ALIGN * AL_ALIGN);
    p->grad = aligned_alloc(AL_ALIGN, (bytes + AL_ALIGN - 1) / AL_ALIGN * AL_ALIGN);
    if (!p->data || !p->grad) return al_seterr(err, "out of memory for %lld parameters", (long long)p->total);
    memset(p->grad, 0, bytes);
    int64_t off = 0;
    for (int i = 0; i < p->n; i++) {
        al_tensor *t = p->t[i];
        t->data = p->data + off; t->grad = p->grad + off; off += t->numel;
        al_init in = p->init[i];
        for (int64_t j = 0; j < t->numel; j++) {
            float v = 0.f;
            switch (in.kind) {
            case AL_INIT_ZEROS: v = 0.f; break;
            case AL_INIT_ONES: v = 1.f; break;
            case AL_INIT_CONST: v = in.a; break;
            case AL_INIT_NORMAL: v = in.a * al_rng_normal(rng); break;
            case AL_INIT_UNIFORM: v = in.a * (2.f * al_rng_uniform(rng) - 1.f); break;
            }
            t->data[j] = v;
        }
    }
    return AL_OK;
}
void al_params_zero_grad(al_params *p) { if (p->grad) memset(p->grad, 0, (size_t)p->total * sizeof(float)); }
al_tensor *al_params_find(const al_params *p, const char *name)
{
    for (int i = 0; i < p->n; i++) if (!strcmp(p->t[i]->name, name)) return p->t[i];
    return NULL;
}
void al_params_free(al_params *p)
{
    for (int i = 0; i < p->n; i++) { free((void *)p->t[i]->name); free(p->t[i]); }
    free(p->t); free(p->init); free(p->decay); free(p->data); free(p->grad);
    memset(p, 0, sizeof *p);
}

/* ---------------- CSR & misc ---------------- */
void al_csr_free(al_csr *m) { free(m->rowptr); free(m->col); free(m->val); m->rowptr = NULL; m->col = NULL; m->val = NULL; }

double al_time(void)
{
    struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
size_t al_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256]; size_t kb = 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) { kb = (size_t)strtoull(line + 6, NULL, 10); break; }
    fclose(f);
    return kb * 1024;
}
int al_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}
void al_set_threads(int n)
{
#ifdef _OPENMP
    if (n > 0) omp_set_num_threads(n);
#else
    (void)n;
#endif
}
