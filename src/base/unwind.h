/* src/base/unwind.h: cleanups that a panic runs on its way out of a tl_catch scope.
 *
 * An object that must be released if a panic passes over it (a held session, a running
 * phase, a ticket entry) registers a node on the thread's innermost catch scope and
 * removes it when it ends normally. tl_panic runs the innermost scope's nodes, newest
 * first, while their stack frames are still alive, and only then jumps. When a scope ends
 * normally, nodes still registered move to the enclosing scope. With no scope active,
 * registering does nothing (a panic then aborts the process anyway). */
#ifndef TL_BASE_UNWIND_H
#define TL_BASE_UNWIND_H

typedef struct tl__unwind_node {
  struct tl__unwind_node *next;
  struct tl__catch_frame *frame; /* the scope it is registered on, NULL when none */
  void (*fn)(void *arg);
  void *arg;
} tl__unwind_node;

void tl__unwind_push(tl__unwind_node *node, void (*fn)(void *arg), void *arg);
void tl__unwind_pop(tl__unwind_node *node);

#endif
