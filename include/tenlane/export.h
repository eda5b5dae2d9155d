/* tenlane/export.h: the mark that puts a declaration in libtenlane.so's interface.
 *
 * The library is compiled with hidden visibility: a symbol is exported only when its
 * declaration carries TL_API, and every public tl_* function does. Internal tl__*
 * helpers and the providers linked in from archives (BLIS, libxsmm) stay inside the
 * shared library. A program that links the static archive sees no difference. */
#ifndef TENLANE_EXPORT_H
#define TENLANE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define TL_API __attribute__((visibility("default")))
#else
#define TL_API
#endif

#endif
