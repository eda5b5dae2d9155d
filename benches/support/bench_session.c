/* benches/support/bench_session.c: see bench_session.h. */
#include "bench_session.h"

#include <stdio.h>
#include <stdlib.h>

void tl_bench_die(const char *bench, const char *what, tl_status status) {
  fprintf(stderr, "%s: %s: %s (%s)\n", bench, what, tl_status_name(status), tl_last_message());
  exit(1);
}

static void held_open(tl_bench_held *held, const char *bench, tl_context_config *config,
                      tl_wait_mode mode) {
  tl_status status = tl_context_create(config, &held->ctx);
  if (status != TL_OK) tl_bench_die(bench, "tl_context_create", status);
  status = tl_session_open(held->ctx, tl_owner_new(), mode, &held->session);
  if (status != TL_OK) tl_bench_die(bench, "tl_session_open", status);
  held->exec = tl_session_exec(held->session);
}

void tl_bench_held_open(tl_bench_held *held, const char *bench, int threads, size_t scratch_limit,
                        tl_wait_mode mode) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  config.scratch_limit = scratch_limit;
  held_open(held, bench, &config, mode);
}

void tl_bench_held_open_pinned(tl_bench_held *held, const char *bench, int threads, const int *cpus,
                               int cpu_count, tl_wait_mode mode) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  config.cpus = cpus;
  config.cpu_count = cpu_count;
  held_open(held, bench, &config, mode);
}

void tl_bench_held_close(tl_bench_held *held) {
  tl_session_close(held->session);
  tl_context_destroy(held->ctx);
}
