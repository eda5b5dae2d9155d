/* src/base/status.c: the name and text tables, generated from TL_STATUS_MAP so that a
 * new status cannot be added without both. */
#include <stdio.h>

#include "base/base.h"
#include "tenlane/status.h"

static const char *const status_names[] = {
#define TL__NAME(suffix, text) "TL_" #suffix,
    TL_STATUS_MAP(TL__NAME)
#undef TL__NAME
};

static const char *const status_texts[] = {
#define TL__TEXT(suffix, text) text,
    TL_STATUS_MAP(TL__TEXT)
#undef TL__TEXT
};

const char *tl_status_name(tl_status status) {
  if ((unsigned)status >= (unsigned)TL__STATUS_COUNT) return "TL_E_?";
  return status_names[status];
}

const char *tl_status_str(tl_status status) {
  if ((unsigned)status >= (unsigned)TL__STATUS_COUNT) return "unknown status";
  return status_texts[status];
}

void tl__code_text(int code, char *dst, size_t size) {
  if (code > 0 && code < (int)TL__STATUS_COUNT)
    snprintf(dst, size, "%s (%d)", tl_status_name((tl_status)code), code);
  else
    snprintf(dst, size, "%d", code);
}
