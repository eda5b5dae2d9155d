/* tests/session/interleave.c: the script runner (interleave.h). */
#include "interleave.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "th_fixtures.h"
#include "th_test.h"

#define MAX_ACTORS 4

typedef struct script {
  tl_context *ctx;
  const step *steps;
  int count;
  atomic_int turn;
  tl_owner owners[MAX_ACTORS];
} script;

typedef struct actor {
  script *run;
  char name;
  tl_session *session;
  tl_status async_status;
} actor;

typedef struct turn_wait {
  script *run;
  int step;
} turn_wait;

static int my_turn(void *arg) {
  turn_wait *wait = arg;
  return atomic_load(&wait->run->turn) == wait->step;
}

static void fail_step(int index, const step *s, const char *what, tl_status got) {
  char text[512];
  snprintf(text, sizeof text, "step %d (actor %c, action %d): %s: got %s, expected %s (%s)", index,
           s->actor, (int)s->action, what, tl_status_name(got), tl_status_name(s->expect),
           tl_last_message());
  th_test_fail_at(__FILE__, __LINE__, text);
}

static void run_op(int index, const step *s, tl_session *session) {
  double a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, c[4] = {0};
  tl_tensor ta = th_vec_f64(a, 4), tb = th_vec_f64(b, 4), tc = th_vec_f64(c, 4);
  tl_status status = tl_add_into(tl_session_exec(session), &ta, &tb, &tc);
  if (status != s->expect) fail_step(index, s, "tl_add_into", status);
  if (status == TL_OK && (c[0] != 11 || c[3] != 44)) fail_step(index, s, "wrong sum", status);
}

typedef struct queue_wait {
  tl_context *ctx;
  int count;
} queue_wait;

static int queued(void *arg) {
  queue_wait *wait = arg;
  tl_context_stats stats;
  tl_context_stats_get(wait->ctx, &stats);
  return stats.waiting_openers == wait->count;
}

static void *actor_main(void *arg) {
  actor *self = arg;
  script *run = self->run;
  tl_owner owner = run->owners[self->name - 'A'];
  for (int i = 0; i < run->count; i++) {
    const step *s = &run->steps[i];
    if (s->actor != self->name) continue;
    turn_wait wait = {run, i};
    if (!th_wait_until(my_turn, &wait, 10000)) fail_step(i, s, "turn never came", TL_OK);
    tl_status status = TL_OK;
    switch (s->action) {
      case OPEN_NOWAIT:
      case OPEN_WAIT:
        status = tl_session_open(run->ctx, owner, s->action == OPEN_WAIT ? TL_WAIT : TL_NOWAIT,
                                 &self->session);
        if (status != s->expect) fail_step(i, s, "open", status);
        break;
      case OPEN_WAIT_ASYNC:
        atomic_store(&run->turn, i + 1);
        self->async_status = tl_session_open(run->ctx, owner, TL_WAIT, &self->session);
        continue;
      case AWAIT_OPEN:
        if (self->async_status != s->expect) fail_step(i, s, "waiting open", self->async_status);
        break;
      case CLOSE:
        status = tl_session_close(self->session);
        if (status != s->expect) fail_step(i, s, "close", status);
        break;
      case RUN_OP:
        run_op(i, s, self->session);
        break;
      default:
        break;
    }
    atomic_store(&run->turn, i + 1);
  }
  return NULL;
}

void run_interleaving(tl_context *ctx, const step *steps, int step_count) {
  script run;
  run.ctx = ctx;
  run.steps = steps;
  run.count = step_count;
  atomic_init(&run.turn, 0);
  for (int i = 0; i < MAX_ACTORS; i++) run.owners[i] = tl_owner_new();
  actor actors[MAX_ACTORS];
  th_thread threads[MAX_ACTORS];
  int used[MAX_ACTORS] = {0};
  for (int i = 0; i < step_count; i++) {
    if (steps[i].actor >= 'A' && steps[i].actor < 'A' + MAX_ACTORS) used[steps[i].actor - 'A'] = 1;
  }
  for (int k = 0; k < MAX_ACTORS; k++) {
    if (!used[k]) continue;
    memset(&actors[k], 0, sizeof actors[k]);
    actors[k].run = &run;
    actors[k].name = (char)('A' + k);
    th_thread_start(&threads[k], actor_main, &actors[k]);
  }
  /* Checks that no single actor does: they run here, in turn. */
  for (int i = 0; i < step_count; i++) {
    const step *s = &steps[i];
    if (s->actor != '-') continue;
    turn_wait wait = {&run, i};
    if (!th_wait_until(my_turn, &wait, 10000)) fail_step(i, s, "turn never came", TL_OK);
    if (s->action == EXPECT_QUEUED) {
      queue_wait qw = {ctx, s->count};
      if (!th_wait_until(queued, &qw, 10000)) fail_step(i, s, "queue length", TL_OK);
    } else if (s->action == EXPECT_HOLDER) {
      tl_context_stats stats;
      tl_context_stats_get(ctx, &stats);
      if (stats.owner != run.owners[s->count]) fail_step(i, s, "holder", TL_OK);
    }
    atomic_store(&run.turn, i + 1);
  }
  for (int k = 0; k < MAX_ACTORS; k++) {
    if (used[k]) th_thread_join(&threads[k], 20000);
  }
}
