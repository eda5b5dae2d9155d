/* src/base/message.c: the per-thread failure message and the thread token. Each thread owns
 * a fixed message buffer, so recording a failure (out of memory included) never allocates. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base.h"

static _Thread_local char thread_message[TL_MESSAGE_CAPACITY];

const char *tl_last_message(void) { return thread_message; }

static _Thread_local char token_anchor;

unsigned long tl__thread_token(void) { return (unsigned long)(uintptr_t)&token_anchor; }

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
