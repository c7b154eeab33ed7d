/* attnlab/tensor.h — tensors, arenas, parameters, RNG, errors: the bottom of the stack.
 *
 * A tensor is float32, contiguous, row-major, 1 to 4 dimensions. Activations live in an
 * arena (al_arena) that is reset after every step; parameters live in one flat array
 * (al_params) with a matching flat gradient array, so an optimiser is a single loop.
 *
 *   al_ctx *c = al_ctx_new(seed);
 *   al_tensor *x = al_new(c, 2, (int[]){B, 784});   // arena memory, freed by al_ctx_reset
 *   ...  al_ctx_reset(c);                           // next step reuses the same memory
 *
 * Errors are values: a failing call records one message in the context (al_ctx_error)
 * and returns NULL / AL_ERR; every op given a NULL input returns NULL, so a chain of ops
 * can be checked once at its end. Nothing in the library prints or exits.
 */
#ifndef ATTNLAB_TENSOR_H
#define ATTNLAB_TENSOR_H
#include <stddef.h>
#include <stdint.h>

#define AL_MAXDIM 4
#define AL_ERRLEN 512

typedef enum { AL_OK = 0, AL_ERR = -1 } al_status;

/* A public name kept for one version after its rename: the compiler names the new one. */
#if defined(__GNUC__) || defined(__clang__)
#define AL_DEPRECATED(newname) __attribute__((deprecated("renamed " newname)))
#else
#define AL_DEPRECATED(newname)
#endif

/* An error message buffer; library functions that are not ops take one of these. */
typedef struct al_error { char msg[AL_ERRLEN]; } al_error;
/* Set err->msg printf-style (first error wins only if err->msg is empty); returns AL_ERR. */
al_status al_seterr(al_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---------- RNG: xoshiro256**, seeded by splitmix64; one stream per purpose ---------- */
typedef struct al_rng { uint64_t s[4]; } al_rng;
enum { AL_RNG_INIT = 1, AL_RNG_SHUFFLE = 2, AL_RNG_DROPOUT = 3, AL_RNG_DATA = 4, AL_RNG_AUGMENT = 5 };
void     al_rng_seed(al_rng *r, uint64_t seed, uint64_t stream); /* independent stream per (seed, stream) */
uint64_t al_rng_u64(al_rng *r);
float    al_rng_uniform(al_rng *r);              /* [0, 1) with 24 random bits */
float    al_rng_normal(al_rng *r);               /* N(0, 1), Box-Muller */
uint32_t al_rng_below(al_rng *r, uint32_t n);    /* uniform integer in [0, n), unbiased */
void     al_rng_shuffle(al_rng *r, int *a, int n);

/* ---------- arena: bump allocator; grows during a step, coalesces to its peak on reset ---------- */
typedef struct al_arena {
    struct al_block *blocks;   /* current blocks, newest first */
    struct al_block *spare;    /* blocks emptied by al_arena_release, reused before malloc is asked again */
    size_t used, peak;         /* bytes in use this step, high-water mark over all steps */
    const void *memo;          /* a structure in this arena derived from long-lived data, for reuse within the
                                * step (attention's transposed graph lists); reset and release drop it */
} al_arena;
void  *al_arena_alloc(al_arena *a, size_t bytes);   /* 64-byte aligned, NULL only if malloc fails */
void  *al_arena_calloc(al_arena *a, size_t bytes);
void   al_arena_reset(al_arena *a);   /* frees everything; keeps one block of `peak` bytes */
/* A point in the arena to come back to: al_arena_release frees everything allocated after it (blocks
 * opened since are returned to malloc), so a forward pass without a tape can drop a layer's
 * temporaries as soon as the next layer has its input (al_keep). */
typedef struct al_arena_mark { const void *block; size_t block_used, used; } al_arena_mark;
al_arena_mark al_arena_mark_get(const al_arena *a);
void   al_arena_release(al_arena *a, al_arena_mark m);
/* Make the arena one block of at least `bytes` before a step whose size is known (a first evaluation
 * batch), so that it does not grow block by block; 0 or -1 if malloc fails. */
int    al_arena_reserve(al_arena *a, size_t bytes);
void   al_arena_free(al_arena *a);
int    al_arena_nblocks(const al_arena *a);
size_t al_arena_capacity(const al_arena *a);  /* bytes held in all blocks */

/* ---------- tensor ---------- */
typedef struct al_tensor {
    float  *data;            /* (numel) */
    float  *grad;            /* (numel) or NULL; parameters own theirs, activations get it lazily */
    int     ndim;
    int     shape[AL_MAXDIM];
    int64_t numel;
    int     requires_grad;   /* gradient flows into this tensor in al_backward */
    const char *name;        /* parameters only */
} al_tensor;

/* ---------- context: arena + tape + error; one per training thread of control ---------- */
struct al_ctx;
typedef void (*al_backward_fn)(struct al_ctx *c, void *node);
typedef struct al_tape_entry { al_backward_fn fn; void *node; struct al_tensor *out[3]; } al_tape_entry;
typedef struct al_ctx {
    al_arena arena;
    al_tape_entry *tape; int ntape, cap_tape;
    void *grad_free;         /* activation gradients whose producer's backward has run, for reuse (al_grad) */
    int grad_enabled;        /* record ops on the tape (default 1) */
    int training;            /* dropout active (default 1) */
    al_rng dropout_rng;
    al_status status;        /* AL_ERR after the first failure, until al_ctx_clear_error */
    char err[AL_ERRLEN];
} al_ctx;

al_ctx   *al_ctx_new(uint64_t seed);        /* caller owns; free with al_ctx_free */
void      al_ctx_free(al_ctx *c);
void      al_ctx_reset(al_ctx *c);          /* drop tape and activations (arena reset) */
int       al_ok(const al_ctx *c);
const char *al_ctx_error(const al_ctx *c);
void      al_ctx_clear_error(al_ctx *c);
void     *al_fail(al_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3))); /* returns NULL */

/* Tensors from the arena (valid until al_ctx_reset). shape has ndim entries, each >= 1. */
al_tensor *al_new(al_ctx *c, int ndim, const int *shape);          /* uninitialised data */
al_tensor *al_zeros(al_ctx *c, int ndim, const int *shape);
al_tensor *al_wrap(al_ctx *c, float *data, int ndim, const int *shape); /* borrows data */
al_tensor *al_view(al_ctx *c, al_tensor *x, int ndim, const int *shape); /* same data, no tape */
float     *al_grad(al_ctx *c, al_tensor *t);   /* t->grad, allocating it zeroed if NULL */
/* For a backward that writes every element of t's gradient: t->grad, but when t has none yet it is
 * allocated WITHOUT zeroing and *fresh is set to 1 — the caller must then store (=), not add (+=).
 * *fresh = 0 when the gradient already existed (accumulate as usual). */
float     *al_grad_for_write(al_ctx *c, al_tensor *t, int *fresh);
int        al_same_shape(const al_tensor *a, const al_tensor *b);
const char *al_shape_str(const al_tensor *t, char *buf, size_t n);  /* "(2, 3, 4)" */
int64_t    al_shape_numel(int ndim, const int *shape);  /* -1 if a dim < 1 or overflow */

/* Inference without a tape: when gradients are off (c->grad_enabled == 0), al_keep moves the n
 * tensors t[0..n) (given in the order they were allocated, all after mark) down to the mark and frees
 * everything else allocated since — the temporaries that made them. The pointers in t are replaced by the
 * moved tensors (same shapes, same bits). With gradients on it does nothing (the tape needs them all).
 * Returns AL_ERR (the context's error set) only if memory runs out. */
al_arena_mark al_ctx_mark(const al_ctx *c);
al_status  al_keep(al_ctx *c, al_arena_mark mark, al_tensor **t, int n);

/* Record a backward step; node is arena memory the op filled in. */
void al_tape_push(al_ctx *c, al_backward_fn fn, void *node);
/* The same for an op that produced out (up to 3 outputs): once its backward has run, nothing reads the
 * outputs' gradients again, so al_backward_run hands their buffers to the next activation gradient of the
 * same size (out->grad becomes NULL) — a step keeps a fraction of its gradients alive, not all of them. */
void al_tape_push_out(al_ctx *c, al_backward_fn fn, void *node, al_tensor *out);
void al_tape_push_outs(al_ctx *c, al_backward_fn fn, void *node, al_tensor *const *out, int n);
/* Reverse-mode sweep from a scalar loss: seeds d(loss)=1 and runs the tape backwards.
 * Gradients accumulate (+=); zero parameter grads yourself (al_params_zero_grad). */
al_status al_backward(al_ctx *c, al_tensor *loss);
/* Run the tape backwards with gradients already seeded by the caller (e.g. dL/dout = r). */
al_status al_backward_run(al_ctx *c);

/* ---------- parameters: named tensors in one flat data array and one flat grad array ---------- */
typedef enum { AL_INIT_ZEROS, AL_INIT_ONES, AL_INIT_NORMAL, AL_INIT_UNIFORM, AL_INIT_CONST } al_init_kind;
typedef struct al_init { al_init_kind kind; float a; } al_init;  /* NORMAL: std a; UNIFORM: [-a, a]; CONST: a */
typedef struct al_params {
    al_tensor **t; int n, cap;    /* registration order */
    float *data, *grad;           /* (total) each, after al_params_finalize */
    int64_t total;
    al_init *init;
    uint8_t *decay;               /* per tensor: 1 = weight decay applies (default: ndim >= 2) */
} al_params;
void       al_params_init(al_params *p);
/* Register a parameter (name is copied). Its data is allocated by al_params_finalize. NULL: out of
 * memory, a bad shape, a NULL name, a name already registered (checkpoints name every tensor, so names
 * are unique), or p already finalized. */
al_tensor *al_params_add(al_params *p, const char *name, int ndim, const int *shape, al_init init);
/* Allocate flat arrays and initialise every parameter in registration order from rng. */
al_status  al_params_finalize(al_params *p, al_rng *rng, al_error *err);
void       al_params_zero_grad(al_params *p);
al_tensor *al_params_find(const al_params *p, const char *name);
void       al_params_free(al_params *p);
/* Kaiming-uniform bound as PyTorch's default for Linear/Conv weights and biases: 1/sqrt(fan_in). */
static inline al_init al_init_kaiming(int fan_in) { al_init i = {AL_INIT_UNIFORM, 0.f}; i.a = fan_in > 0 ? 1.0f / __builtin_sqrtf((float)fan_in) : 0.f; return i; }

/* ---------- sparse matrix (CSR), for graphs ---------- */
typedef struct al_csr {
    int rows, cols;
    int64_t nnz;
    int64_t *rowptr;   /* (rows + 1) */
    int     *col;      /* (nnz) */
    float   *val;      /* (nnz) or NULL meaning all ones */
} al_csr;
void al_csr_free(al_csr *m);   /* frees the arrays (not the struct) */

/* ---------- misc ---------- */
double al_time(void);           /* monotonic seconds */
size_t al_peak_rss_bytes(void); /* VmHWM of this process */
int    al_threads(void);        /* OpenMP max threads, 1 without OpenMP */
void   al_set_threads(int n);
/* FLOP counter (src/core/flops.c): the matmul-class work of the ops (2 FLOPs per multiply-add in linear, matmul, conv2d
 * (the direct convolution's count, whichever algorithm ran: Winograd's GFLOP/s are effective ones)
 * and the attention products QKᵀ / PV and their gradients), by op name and phase. Elementwise work
 * (norms, activations, softmax bookkeeping, the optimiser) is not counted: it is the time a step
 * spends beyond these FLOPs. Off by default; one counting thread. */
enum { AL_FLOPS_FWD, AL_FLOPS_BWD };
void al_flops_enable(int on);
int  al_flops_enabled(void);
void al_flops_reset(void);
void al_flops_add(const char *op, int phase, double flops);
int  al_flops_count(void);
void al_flops_get(int i, const char **op, double *fwd, double *bwd);
#endif
