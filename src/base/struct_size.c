/* src/base/struct_size.c: the check every call makes on a versioned public struct.
 *
 * A public config or options struct starts with `size_t size`, set to its sizeof by the
 * struct's _init function. A call reads a field only when `size` covers it, so a struct
 * may gain fields at its end without breaking a program built against an older header;
 * a struct never filled by its _init (size 0 or garbage below the first version's size)
 * is refused here with a message instead of being read. */
#include "base/base.h"

tl_status tl__check_struct_size(const char *call, const char *type, size_t size, size_t need) {
  if (size >= need) return TL_OK;
  return tl__fail(TL_E_INVALID,
                  "%s: %s.size is %zu, below the %zu bytes of its first version; fill it with "
                  "%s_init before setting fields",
                  call, type, size, need, type);
}
