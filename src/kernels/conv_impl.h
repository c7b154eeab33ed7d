/* conv_impl.h — conv kernel internals the tests reach (not installed). */
#ifndef ATTNLAB_CONV_IMPL_H
#define ATTNLAB_CONV_IMPL_H
/* nonzero (the default): stride-1 'same' convolutions build their im2col rows from the flat plane with
 * masked loads and add their col2im into the flat plane (AVX-512, AVX2); 0: the row-wise
 * forms (the tests compare the two bit for bit) */
extern int al__im2col_flat;
/* The calling thread's scratch slot i (< AL_CONV_SCRATCH_SLOTS) of at least n floats, 64-byte aligned, kept for
 * the next call (a step's convolutions allocate nothing); NULL when out of memory. Slots 0-2: conv.c;
 * 3: winograd.c. */
#define AL_CONV_SCRATCH_SLOTS 4
float *al__conv_scratch(int i, size_t n);
#endif
