/* fastmath_impl.h — al__expf and al__expm1_neg, the vectorisable exp of the softmax/layernorm
 * kernels, GELU, ELU and the fused graph activation (internal header). They live in exp_impl.h,
 * the one home of every exp variant; this name stays for the files that include it. */
#ifndef ATTNLAB_FASTMATH_IMPL_H
#define ATTNLAB_FASTMATH_IMPL_H
#include "core/exp_impl.h"
#endif
