/* src/base/panic.c: tl_panic and tl_catch, built on setjmp/longjmp, one chain of scopes
 * per thread (sigsetjmp without the signal mask, so entering a scope costs no system call). A panic
 * never crosses threads: it lands in the innermost scope of the thread that raised it, after that
 * scope's registered cleanups ran (unwind.h). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "tenlane/panic.h"
#include "unwind.h"

typedef struct tl__catch_frame {
  sigjmp_buf env; /* saved without the signal mask: no system call per scope */
  struct tl__catch_frame *parent;
  tl__unwind_node *cleanups; /* newest first */
  char message[TL_MESSAGE_CAPACITY];
} tl__catch_frame;

static _Thread_local tl__catch_frame *innermost;
static _Thread_local int panicking;

int tl_catch_active(void) { return innermost != NULL; }

void tl__unwind_push(tl__unwind_node *node, void (*fn)(void *arg), void *arg) {
  node->fn = fn;
  node->arg = arg;
  node->frame = innermost;
  node->next = NULL;
  if (innermost == NULL) return;
  node->next = innermost->cleanups;
  innermost->cleanups = node;
}

void tl__unwind_pop(tl__unwind_node *node) {
  tl__catch_frame *frame = node->frame;
  if (frame == NULL) return;
  for (tl__unwind_node **link = &frame->cleanups; *link != NULL; link = &(*link)->next) {
    if (*link == node) {
      *link = node->next;
      break;
    }
  }
  node->frame = NULL;
  node->next = NULL;
}

void tl_panic(const char *format, ...) {
  char message[TL_MESSAGE_CAPACITY];
  va_list args;
  va_start(args, format);
  vsnprintf(message, sizeof message, format, args);
  va_end(args);
  tl__catch_frame *frame = innermost;
  if (frame == NULL || panicking) {
    fprintf(stderr, "tenlane: %s: %s\n",
            panicking ? "panic while running panic cleanups" : "panic with no tl_catch scope",
            message);
    fflush(stderr);
    abort();
  }
  panicking = 1;
  while (frame->cleanups != NULL) {
    tl__unwind_node *node = frame->cleanups;
    frame->cleanups = node->next;
    node->frame = NULL;
    node->next = NULL;
    node->fn(node->arg);
  }
  panicking = 0;
  memcpy(frame->message, message, sizeof message);
  siglongjmp(frame->env, 1);
}

tl_status tl_catch(void (*fn)(void *arg), void *arg, tl_panic_info *info) {
  if (fn == NULL) return tl__fail(TL_E_INVALID, "tl_catch: fn must not be NULL");
  tl__catch_frame frame;
  frame.parent = innermost;
  frame.cleanups = NULL;
  frame.message[0] = '\0';
  innermost = &frame;
  if (sigsetjmp(frame.env, 0) == 0) {
    fn(arg);
    innermost = frame.parent;
    /* Objects still alive (a session opened inside and not closed) now belong to the
     * enclosing scope, or to none. */
    while (frame.cleanups != NULL) {
      tl__unwind_node *node = frame.cleanups;
      frame.cleanups = node->next;
      node->frame = innermost;
      if (innermost != NULL) {
        node->next = innermost->cleanups;
        innermost->cleanups = node;
      } else {
        node->next = NULL;
      }
    }
    return TL_OK;
  }
  innermost = frame.parent;
  if (info != NULL) memcpy(info->message, frame.message, sizeof info->message);
  return tl__fail(TL_E_PANICKED, "panic: %s", frame.message);
}
