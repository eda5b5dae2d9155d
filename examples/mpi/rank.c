/* examples/mpi/rank.c: one rank's engine: a context, one held session, a phase per batch.
 *
 * The context is made once per rank and its session opened once, on the thread that
 * initialised MPI, and held until the end: every batch is one tl_map (one phase) on that
 * session, so the lanes' child surfaces, their scratch arenas and the per-lane patch
 * buffers are all kept from batch to batch. While a batch runs, that thread is parked
 * inside tl_map; it calls MPI only before and after.
 *
 * Invariant: a batch's results are written to the caller's array only by the items
 * themselves, and the caller publishes them only when the batch returned 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/map.h"

#include "mpi_fanout.h"

int mpi_rank_open(mpi_rank *rank, const fan_problem *pb, const mpi_options *opt, int lanes,
                  const int *cpus, int cpu_count, char *why, size_t why_size) {
  memset(rank, 0, sizeof *rank);
  rank->pb = pb;
  rank->opt = opt;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = lanes;
  config.cpus = cpus;
  config.cpu_count = cpus ? cpu_count : 0;
  tl_status status = tl_context_create(&config, &rank->ctx);
  if (status != TL_OK) {
    snprintf(why, why_size, "tl_context_create(threads=%d): %s: %s", lanes, tl_status_name(status),
             tl_last_message());
    return -1;
  }
  rank->lanes = tl_context_budget(rank->ctx);
  rank->slots = calloc((size_t)rank->lanes, sizeof *rank->slots);
  if (!rank->slots) {
    snprintf(why, why_size, "out of memory for %d lane slots", rank->lanes);
    return -1;
  }
  status = tl_session_open(rank->ctx, tl_owner_new(), TL_WAIT, &rank->session);
  if (status != TL_OK) {
    snprintf(why, why_size, "tl_session_open: %s: %s", tl_status_name(status), tl_last_message());
    rank->session = NULL;
    return -1;
  }
  return 0;
}

/* After a failed map: the lowest item that failed by itself, from the lanes' own records
 * (an item stopped by the cancellation is not a failure). */
static int lowest_failure(mpi_rank *rank, const tl_map_outcome *outcome, size_t first,
                          size_t *failed_item, char *why, size_t why_size) {
  int lowest = -1;
  for (int i = 0; i < rank->lanes; i++)
    if (rank->slots[i].failed &&
        (lowest < 0 || rank->slots[i].failed_item < rank->slots[lowest].failed_item))
      lowest = i;
  if (lowest >= 0) {
    *failed_item = rank->slots[lowest].failed_item;
    snprintf(why, why_size, "%s", rank->slots[lowest].why);
    return 1;
  }
  if (outcome->failed && outcome->status == TL_E_LANE) {
    *failed_item = first + outcome->failed_item;
    snprintf(why, why_size, "%s", outcome->message);
    return 1;
  }
  snprintf(why, why_size, "tl_map: %s: %s", tl_status_name(outcome->status), outcome->message);
  return 3;
}

int mpi_rank_batch(mpi_rank *rank, size_t first, size_t count, fan_result *out, int measure,
                   size_t *failed_item, char *why, size_t why_size) {
  mpi_item_arg arg = {rank->pb, rank->opt, rank->slots, rank->lanes, first, out};
  for (int i = 0; i < rank->lanes; i++) rank->slots[i].failed = 0;
  tl_map_outcome outcome;
  uint64_t m0 = fan_malloc_count(), a0 = tl_allocation_count();
  double t0 = fan_now();
  tl_status status = tl_map(rank->session, count, mpi_item, &arg, &outcome);
  double t1 = fan_now();
  uint64_t m1 = fan_malloc_count(), a1 = tl_allocation_count();
  if (measure) {
    rank->busy_s += t1 - t0;
    rank->items += count;
    rank->batches++;
    double cost = count ? 1e6 * (t1 - t0) * rank->lanes / (double)count : 0.0;
    rank->batch_cost_sum += cost;
    rank->batch_cost_sq += cost * cost;
    rank->mallocs += m1 - m0;
    rank->tl_allocs += a1 - a0;
  }
  if (status == TL_OK) return 0;
  return lowest_failure(rank, &outcome, first, failed_item, why, why_size);
}

int mpi_rank_warm_up(mpi_rank *rank, fan_result *out, char *why, size_t why_size) {
  for (int round = 0; round < 8; round++) {
    size_t failed_item = 0;
    if (mpi_rank_batch(rank, 0, rank->opt->warmup, out, 0, &failed_item, why, why_size) == 3)
      return -1;
    int cold = 0;
    for (int i = 0; i < rank->lanes; i++) cold += rank->slots[i].block == NULL;
    if (!cold) break;
  }
  return 0;
}

void mpi_rank_close(mpi_rank *rank) {
  if (rank->session) tl_session_close(rank->session);
  rank->session = NULL;
  if (rank->ctx) tl_context_destroy(rank->ctx);
  rank->ctx = NULL;
  if (rank->slots)
    for (int i = 0; i < rank->lanes; i++) free(rank->slots[i].block);
  free(rank->slots);
  rank->slots = NULL;
}
