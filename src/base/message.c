/* src/base/message.c: the per-thread failure message and the thread token. Each thread owns
 * a fixed message buffer, so recording a failure (out of memory included) never allocates. */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base.h"

static _Thread_local char thread_message[TL_MESSAGE_CAPACITY];

const char *tl_last_message(void) { return thread_message; }

/* Thread identities are drawn from one 64-bit counter, never reused: the address of a
 * thread-local variable is not an identity, since the next thread gets the same address
 * back once a thread has exited. */
static atomic_uint_fast64_t last_thread_token;
static _Thread_local uint64_t thread_token;

uint64_t tl__thread_token(void) {
  if (TL__UNLIKELY(thread_token == 0)) thread_token = atomic_fetch_add(&last_thread_token, 1) + 1;
  return thread_token;
}

void tl__message_copy(char *dst) { memcpy(dst, thread_message, TL_MESSAGE_CAPACITY); }

/* The text is formatted into a buffer of its own and then copied over the thread's
 * message, so a caller may pass tl_last_message() (or any part of it) as an argument: the
 * buffer is never both the destination and a source of one vsnprintf call, which C leaves
 * undefined (and glibc garbles). */
tl_status tl__failv(tl_status status, const char *format, va_list args) {
  char text[TL_MESSAGE_CAPACITY];
  if (format == NULL) {
    snprintf(text, sizeof text, "%s", tl_status_str(status));
  } else {
    vsnprintf(text, sizeof text, format, args);
  }
  memcpy(thread_message, text, sizeof text);
  return status;
}

tl_status tl__fail(tl_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  tl__failv(status, format, args);
  va_end(args);
  return status;
}

uint64_t tl__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
