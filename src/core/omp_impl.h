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

/* Work (elements, multiply-adds) below which a loop stays on one thread: forking a team costs a
 * few microseconds, more than such a loop takes. The one threshold of the library; a loop whose
 * work per element differs scales its count, e.g. `if (n * d > AL_PAR_MIN)`. Results never depend
 * on it (no reduction is split by thread count). */
#define AL_PAR_MIN 32768
/* This thread's number inside a parallel region (0 outside one, or without OpenMP). */
static inline int al__thread_id(void)
{
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
/* 1 inside an active parallel region (a kernel called there runs on the calling thread), else 0. */
static inline int al__in_parallel(void)
{
#ifdef _OPENMP
    return omp_in_parallel();
#else
    return 0;
#endif
}
/* Threads of the current team (1 outside a parallel region, or without OpenMP). */
static inline int al__num_threads(void)
{
#ifdef _OPENMP
    return omp_get_num_threads();
#else
    return 1;
#endif
}
#endif
