/* tests/fuzz/fuzz_common.h: what the fuzz targets share: one context of one thread with a
 * session held on it for the whole process. The targets link no test harness (a failure is
 * abort(), which libFuzzer reports as a crash), so this lives beside them rather than in
 * tests/support. Header-only: scripts/fuzz and the replay build compile each target as one
 * source file. */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include <stdlib.h>

#include "tenlane/context.h"
#include "tenlane/session.h"

/* The process's session, opened on the first call (any later call returns it); abort() when
 * the context or the session cannot be made. The calling thread holds it from then on. */
static tl_session *fuzz_session(void) {
  static tl_context *ctx;
  static tl_session *session;
  if (ctx != NULL) return session;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 1;
  if (tl_context_create(&config, &ctx) != TL_OK) abort();
  if (tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session) != TL_OK) abort();
  return session;
}

#endif
