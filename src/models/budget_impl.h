/* models/budget_impl.h — a model's parameters against the memory budget (internal header of the graph,
 * molecule and sequence families): their values and gradients (al_params_finalize), then the optimiser's
 * two moments, checked once every parameter is registered and before any is allocated. */
#ifndef ATTNLAB_MODELS_BUDGET_IMPL_H
#define ATTNLAB_MODELS_BUDGET_IMPL_H
#include <stdint.h>
#include "attnlab/io.h"

/* AL_OK, or "FAMILY NAME: N parameters (values, gradients, AdamW moments): needs ..., more than the memory budget". */
static inline al_status al__params_budget(const al_params *p, const char *family, const char *name, al_error *err)
{
    return al_mem_check(al_size_mul((uint64_t)p->total, 4 * sizeof(float)), err,
                        "%s %s: %lld parameters (values, gradients, AdamW moments)", family, name, (long long)p->total);
}
#endif
