/* tenlane/panic.h: a small, explicit unwinding mechanism for C.
 *
 * tl_panic ends the current computation: control returns to the innermost tl_catch
 * on the same thread, which reports TL_E_PANICKED with the message. Cleanups that
 * library objects registered inside that scope (held sessions opened in it, a phase
 * lease running in it) run before tl_catch returns. Panics never cross threads: a panic
 * in a phase lane stops at that lane's boundary on its worker and is raised again on
 * the driver only after every lane has joined. With no tl_catch on the thread the
 * message is printed to stderr and the process aborts.
 *
 * Memory taken from a surface's scratch arena is reclaimed by the unwind; memory a
 * callback took with malloc, and locks it holds, are the callback's own to protect. */
#ifndef TENLANE_PANIC_H
#define TENLANE_PANIC_H

#include "tenlane/export.h"
#include "tenlane/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_panic_info {
  char message[TL_MESSAGE_CAPACITY]; /* the panic's message, truncated */
} tl_panic_info;

/* Raise a panic with a printf-style message. Never returns. Any thread. */
#if defined(__GNUC__)
__attribute__((noreturn, format(printf, 1, 2)))
#endif
TL_API void
tl_panic(const char *format, ...);

/* Run fn(arg) in a catch scope on the calling thread. Returns TL_OK when fn returned,
 * TL_E_PANICKED when a panic unwound to this scope (the message goes to *info, which may
 * be NULL). Scopes nest. fn must not return by longjmp of its own past this scope. */
TL_API tl_status tl_catch(void (*fn)(void *arg), void *arg, tl_panic_info *info);

/* 1 while the calling thread is inside at least one tl_catch scope. */
TL_API int tl_catch_active(void);

#ifdef __cplusplus
}
#endif
#endif
