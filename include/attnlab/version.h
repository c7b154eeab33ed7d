/* attnlab/version.h — the library's version (semantic: the major number is the shared library's
 * soname, libattnlab.so.MAJOR). The Makefile and attnlab.pc read it from here. */
#ifndef ATTNLAB_VERSION_H
#define ATTNLAB_VERSION_H
#define AL_VERSION_MAJOR 0
#define AL_VERSION_MINOR 6
#define AL_VERSION_PATCH 0
#define AL_VERSION_STRING "0.6.0"
#endif
