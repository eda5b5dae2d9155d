/* tests/session/interleave.h: admission interleavings written as data.
 *
 * A script is a list of steps, each done by one actor (a thread named 'A', 'B', ...) in
 * script order: an actor waits (bounded) for its step's turn, does it, checks the status,
 * and passes the turn on. An "open, waiting" step passes the turn on before it blocks; the
 * actor's next step checks what that open finally returned. So
 *   {'A', OPEN}, {'B', OPEN_WAIT_ASYNC}, {'-', EXPECT_QUEUED, 1}, {'A', CLOSE}, {'B', AWAIT_OPEN}
 * reads "A opens, B queues, A closes, B gets in". */
#ifndef TH_INTERLEAVE_H
#define TH_INTERLEAVE_H

#include "tenlane/context.h"
#include "tenlane/status.h"

typedef enum step_action {
  OPEN_NOWAIT,     /* tl_session_open(..., TL_NOWAIT) returns expect */
  OPEN_WAIT,       /* tl_session_open(..., TL_WAIT) returns expect (does not block) */
  OPEN_WAIT_ASYNC, /* starts a waiting open; the turn moves on at once */
  AWAIT_OPEN,      /* the async open of this actor returned expect */
  CLOSE,           /* tl_session_close returns expect */
  RUN_OP,          /* one tl_add_into on the actor's session returns expect, with the right sum */
  EXPECT_QUEUED,   /* (any actor '-') stats show `count` queued openers, within a bound */
  EXPECT_HOLDER    /* (any actor '-') stats show actor `count` ('A' + k) as the holder */
} step_action;

typedef struct step {
  char actor;
  step_action action;
  tl_status expect;
  int count;
} step;

/* Run the script on ctx with one thread per actor; fails the test on any mismatch. */
void run_interleaving(tl_context *ctx, const step *steps, int step_count);

#endif
