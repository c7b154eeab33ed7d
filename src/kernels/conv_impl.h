/* conv_impl.h — conv kernel internals the tests reach (not installed). */
#ifndef ATTNLAB_CONV_IMPL_H
#define ATTNLAB_CONV_IMPL_H
/* nonzero (the default): stride-1 'same' convolutions on AVX-512 build their im2col rows from the flat
 * plane with masked loads; 0: the row-wise copies (the tests compare the two bit for bit) */
extern int al__im2col_flat;
#endif
