/* omp_impl.h — OpenMP pragmas through a macro, so OPENMP=0 builds have no unknown-pragma
 * warnings (internal header). */
#ifndef ATTNLAB_OMP_IMPL_H
#define ATTNLAB_OMP_IMPL_H
#ifdef _OPENMP
#define AL_OMP(x) _Pragma(x)
#else
#define AL_OMP(x)
#endif

#ifdef _OPENMP
#include <omp.h>
#endif
/* This thread's number inside a parallel region (0 outside one, or without OpenMP). */
static inline int al__thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
#endif
