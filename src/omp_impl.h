/* omp_impl.h — OpenMP pragmas through a macro, so OPENMP=0 builds have no unknown-pragma
 * warnings (internal header). */
#ifndef ATTNLAB_OMP_IMPL_H
#define ATTNLAB_OMP_IMPL_H
#ifdef _OPENMP
#define AL_OMP(x) _Pragma(x)
#else
#define AL_OMP(x)
#endif
#endif
