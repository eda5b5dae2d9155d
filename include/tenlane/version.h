/* tenlane/version.h: the library's version, at compile time (the macros) and at run time
 * (tl_version, the version of the library actually linked). The version follows semantic
 * versioning; while the major version is 0, a minor release may change the API. */
#ifndef TENLANE_VERSION_H
#define TENLANE_VERSION_H

#include "tenlane/export.h"

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 1
#define TL_VERSION_PATCH 0
#define TL_VERSION_STRING "0.1.0"

#ifdef __cplusplus
extern "C" {
#endif

/* "MAJOR.MINOR.PATCH" of the linked library (compare with TL_VERSION_STRING to detect a
 * header/library mismatch). Static, never NULL. Any thread. */
TL_API const char *tl_version(void);

#ifdef __cplusplus
}
#endif
#endif
