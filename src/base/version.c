/* src/base/version.c: the linked library's version (tenlane/version.h). */
#include "tenlane/version.h"

const char *tl_version(void) { return TL_VERSION_STRING; }
