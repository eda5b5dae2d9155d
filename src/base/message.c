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

tl_status tl__failv(tl_status status, const char *format, va_list args) {
  if (format == NULL) {
    snprintf(thread_message, sizeof thread_message, "%s", tl_status_str(status));
  } else {
    vsnprintf(thread_message, sizeof thread_message, format, args);
  }
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
