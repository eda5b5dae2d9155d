/* src/base/base.h: internal helpers every layer uses: failure messages, the allocator
 * hooks, and small utilities. Only tenlane's own sources include it. */
#ifndef TL_BASE_H
#define TL_BASE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "tenlane/alloc.h"
#include "tenlane/status.h"

#if defined(__GNUC__)
#define TL__PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#define TL__LIKELY(x) __builtin_expect(!!(x), 1)
#define TL__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define TL__PRINTF(fmt_index, first_arg)
#define TL__LIKELY(x) (x)
#define TL__UNLIKELY(x) (x)
#endif

/* Cache line size used for padding shared atomics apart (false sharing). */
#define TL__CACHE_LINE 64

/* Record `status` with a printf-style message in the calling thread's message slot and
 * return `status`. An out-of-memory status with a NULL format uses a static text. */
tl_status tl__fail(tl_status status, const char *format, ...) TL__PRINTF(2, 3);
tl_status tl__failv(tl_status status, const char *format, va_list args) TL__PRINTF(2, 0);

/* The bytes of `type` up to and including `field`: the size a versioned public struct
 * (one with a leading `size_t size` set by its _init) must declare for `field` to be read. */
#define TL__SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/* Check a versioned public struct's `size` field (struct_size.c): TL_OK when `size` is at
 * least `need` (the first version's size), else TL_E_INVALID with a message naming the
 * call, the type, both sizes and the _init function to use. */
tl_status tl__check_struct_size(const char *call, const char *type, size_t size, size_t need);

/* A callback's return code as text: "TL_E_SHAPE (11)" when it is a tl_status other than
 * TL_OK, the bare number otherwise. */
void tl__code_text(int code, char *dst, size_t size);

/* Copy the thread's current message into `dst` (TL_MESSAGE_CAPACITY bytes). */
void tl__message_copy(char *dst);

/* The calling thread's identity: a 64-bit number drawn once per thread from a process-wide
 * counter, never 0 and never given to another thread (so it cannot wrap in any run). */
uint64_t tl__thread_token(void);

/* The fork epoch (fork.c): bumped in the child of every fork(). tl__fork_watch registers
 * the handler (once) and returns the current epoch, to be kept by an object that needs
 * threads; tl__forked(epoch) is 1 when the process has forked since. */
extern atomic_uint tl__fork_epoch_value;
unsigned tl__fork_watch(void);
static inline int tl__forked(unsigned epoch) {
  return TL__UNLIKELY(atomic_load_explicit(&tl__fork_epoch_value, memory_order_relaxed) != epoch);
}

/* Allocation through the installed hooks. Return NULL on failure (callers report
 * TL_E_NOMEM). align must be a power of two <= 4096; size 0 is treated as 1. */
void *tl__alloc(size_t size, size_t align);
void *tl__calloc(size_t count, size_t size, size_t align); /* zeroed; NULL on overflow */
void tl__free(void *ptr);

/* Overflow-checked arithmetic for sizes, counts, steps and offsets: 1 and *out set on
 * success, 0 (and *out unspecified) on overflow. Every such computation in src/ goes
 * through these (issue 28): a wrapped size is a short buffer, a wrapped step a wrong view. */
static inline int tl__size_mul(size_t a, size_t b, size_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
static inline int tl__size_add(size_t a, size_t b, size_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
static inline int tl__size_sub(size_t a, size_t b, size_t *out) {
  return !__builtin_sub_overflow(a, b, out);
}
/* `value` rounded up to a multiple of `align` (a power of two, not 0). */
static inline int tl__size_align_up(size_t value, size_t align, size_t *out) {
  size_t bumped;
  if (align == 0 || (align & (align - 1)) != 0 || __builtin_add_overflow(value, align - 1, &bumped))
    return 0;
  *out = bumped & ~(align - 1);
  return 1;
}
static inline int tl__i64_add(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_add_overflow(a, b, out);
}
static inline int tl__i64_sub(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_sub_overflow(a, b, out);
}
static inline int tl__i64_mul(int64_t a, int64_t b, int64_t *out) {
  return !__builtin_mul_overflow(a, b, out);
}
/* a x b x c for extents (>= 0), saturated at INT64_MAX: for size tests against a bound
 * (a GEMM's m n k), where broadcast (stride 0) operands let the product exceed every
 * buffer while each extent is valid. */
static inline int64_t tl__i64_mul3_sat(int64_t a, int64_t b, int64_t c) {
  int64_t ab, abc;
  if (__builtin_mul_overflow(a, b, &ab) || __builtin_mul_overflow(ab, c, &abc)) return INT64_MAX;
  return abc;
}
/* `value` (>= 0) rounded up to a multiple of `align` (> 0). */
static inline int tl__i64_align_up(int64_t value, int64_t align, int64_t *out) {
  if (value < 0 || align <= 0) return 0;
  int64_t rest = value % align;
  if (rest == 0) {
    *out = value;
    return 1;
  }
  return !__builtin_add_overflow(value, align - rest, out);
}
/* Widen the element span [*lo, *hi] by one axis: `extent` elements `stride` apart, an
 * extent of 0 counting as 2 (decided 2026-12-04, issue 28: its stride is never applied to
 * data, yet views and kernels still compute with it: moving along it, merging it, turning
 * it into bytes; as extent 2 it is bounded like the stride of any axis that has a step, so
 * no empty tensor carries a stride larger than a real one could). 0 when a bound leaves
 * int64. Every tensor's span goes through this one helper (tensor.c: tl_tensor_extent_range
 * and the validation every view result passes), so no view, offset or stride product can
 * wrap. */
static inline int tl__span_axis(int64_t extent, int64_t stride, int64_t *lo, int64_t *hi) {
  int64_t reach;
  if (extent < 0 || __builtin_mul_overflow(extent > 0 ? extent - 1 : 1, stride, &reach)) return 0;
  return reach > 0 ? !__builtin_add_overflow(*hi, reach, hi)
                   : !__builtin_add_overflow(*lo, reach, lo);
}
/* ceil(a / b) for b > 0, never overflowing (a + b - 1 may). */
static inline size_t tl__size_div_up(size_t a, size_t b) { return a / b + (a % b != 0); }

/* Monotonic clock in nanoseconds. */
uint64_t tl__now_ns(void);

/* CPU relax hint for spin loops. */
static inline void tl__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

#endif
