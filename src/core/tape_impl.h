/* tape_impl.h — the tape-recording helpers every op shares, on the attention and ops floors alike
 * (internal header): one copy of "does this op need a backward", "allocate its node" and "push it". */
#ifndef ATTNLAB_TAPE_IMPL_H
#define ATTNLAB_TAPE_IMPL_H
#include "attnlab/tensor.h"

/* 1 when the op must record a backward for input a (a may be NULL). */
static inline int al__wants_grad(const al_ctx *c, const al_tensor *a) { return c->grad_enabled && a && a->requires_grad; }
/* 1 when any of up to three inputs (NULL = absent) needs a gradient. */
static inline int al__any_grad(const al_ctx *c, const al_tensor *a, const al_tensor *b, const al_tensor *d)
{
    return c->grad_enabled && ((a && a->requires_grad) || (b && b->requires_grad) || (d && d->requires_grad));
}
/* A zeroed tape node of `bytes` from the arena; NULL (and c in error) when the arena is full. */
static inline void *al__node_new(al_ctx *c, size_t bytes)
{
    void *p = al_arena_calloc(&c->arena, bytes);
    if (!p) al_fail(c, "out of memory (arena) for a tape node");
    return p;
}
/* Push node nd (backward fn) for output y, which now requires a gradient. 0 if nd is NULL. */
static inline int al__record(al_ctx *c, al_tensor *y, al_backward_fn fn, void *nd)
{
    if (!nd) return 0;
    y->requires_grad = 1;
    al_tape_push_out(c, fn, nd, y);
    return al_ok(c);
}
#endif
