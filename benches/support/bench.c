/* benches/support/bench.c: the harness behind bench.h (pinning, clock, statistics, the
 * round-trip probe, alternation and the table).
 *
 * Invariant: a figure is always a median and a p99 of real samples; nothing is averaged
 * across contestants or rounds, and an unmeasured figure prints as "nan", never as 0. */
#include "bench.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t tl_bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's mask before its first pin, which tl_bench_unpin_self restores (the
 * thread's current mask after a pin is that one CPU, so it cannot be read back then). */
static _Thread_local cpu_set_t unpinned_mask;
static _Thread_local int unpinned_saved;

int tl_bench_pin_self(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return EINVAL;
  if (!unpinned_saved) {
    if (pthread_getaffinity_np(pthread_self(), sizeof unpinned_mask, &unpinned_mask) != 0)
      return EAGAIN;
    unpinned_saved = 1;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  int rc = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (rc != 0) return rc;
  /* The kernel moves the thread before the call returns; check it. */
  return sched_getcpu() == cpu ? 0 : EAGAIN;
}

int tl_bench_unpin_self(void) {
  if (!unpinned_saved) return 0; /* never pinned: nothing to undo */
  return pthread_setaffinity_np(pthread_self(), sizeof unpinned_mask, &unpinned_mask);
}

int tl_bench_cpus(int *cpus, int max) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
  int found = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (found < max) cpus[found] = cpu;
    found++;
  }
  return found;
}

static int compare_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

tl_bench_stats tl_bench_stats_of(uint64_t *samples, size_t count) {
  tl_bench_stats stats = {NAN, NAN, count};
  if (count == 0) return stats;
  qsort(samples, count, sizeof samples[0], compare_u64);
  stats.median_ns = count % 2 ? (double)samples[count / 2]
                              : 0.5 * ((double)samples[count / 2 - 1] + (double)samples[count / 2]);
  /* Nearest rank: the smallest sample with at least 99% of the samples at or below it. */
  size_t rank = (size_t)ceil(0.99 * (double)count);
  stats.p99_ns = (double)samples[rank - 1];
  return stats;
}

/* --- round-trip probe ------------------------------------------------------------------- */

enum { ROUND_TRIP_BATCH = 64 };

typedef struct round_trip_probe {
  /* The ball both threads write: alone on its cache line, so a round trip moves exactly
   * this line from one core to the other and back. */
  _Alignas(64) _Atomic uint64_t ball;
  _Alignas(64) int cpu_b;
  int batches;
  _Atomic int b_ready; /* 1: pinned and waiting, -1: could not pin */
} round_trip_probe;

static void *round_trip_responder(void *arg) {
  round_trip_probe *probe = arg;
  if (tl_bench_pin_self(probe->cpu_b) != 0) {
    atomic_store(&probe->b_ready, -1);
    return NULL;
  }
  atomic_store(&probe->b_ready, 1);
  uint64_t total = (uint64_t)probe->batches * ROUND_TRIP_BATCH;
  for (uint64_t i = 0; i < total; i++) {
    /* Wait for the serve (odd value), return it (even value). */
    while (atomic_load_explicit(&probe->ball, memory_order_acquire) != 2 * i + 1) {
    }
    atomic_store_explicit(&probe->ball, 2 * i + 2, memory_order_release);
  }
  return NULL;
}

tl_bench_stats tl_bench_round_trip(int cpu_a, int cpu_b, int batches) {
  tl_bench_stats none = {NAN, NAN, 0};
  if (batches <= 0) return none;
  round_trip_probe *probe = aligned_alloc(64, sizeof *probe);
  uint64_t *samples = malloc((size_t)batches * sizeof *samples);
  if (probe == NULL || samples == NULL) {
    free(probe);
    free(samples);
    return none;
  }
  memset(probe, 0, sizeof *probe);
  probe->cpu_b = cpu_b;
  probe->batches = batches;
  atomic_init(&probe->ball, 0);
  atomic_init(&probe->b_ready, 0);

  tl_bench_stats stats = none;
  pthread_t responder;
  cpu_set_t previous;
  int restore = pthread_getaffinity_np(pthread_self(), sizeof previous, &previous) == 0;
  if (tl_bench_pin_self(cpu_a) != 0 ||
      pthread_create(&responder, NULL, round_trip_responder, probe) != 0) {
    goto out;
  }
  while (atomic_load(&probe->b_ready) == 0) sched_yield();
  if (atomic_load(&probe->b_ready) < 0) {
    pthread_join(responder, NULL);
    goto out;
  }
  uint64_t value = 0;
  for (int b = 0; b < batches; b++) {
    uint64_t start = tl_bench_now_ns();
    for (int i = 0; i < ROUND_TRIP_BATCH; i++) {
      atomic_store_explicit(&probe->ball, value + 1, memory_order_release);
      while (atomic_load_explicit(&probe->ball, memory_order_acquire) != value + 2) {
      }
      value += 2;
    }
    samples[b] = (tl_bench_now_ns() - start) / ROUND_TRIP_BATCH;
  }
  pthread_join(responder, NULL);
  stats = tl_bench_stats_of(samples, (size_t)batches);
out:
  if (restore) pthread_setaffinity_np(pthread_self(), sizeof previous, &previous);
  free(probe);
  free(samples);
  return stats;
}

/* --- options and alternation ------------------------------------------------------------ */

static int parse_positive(const char *text, long *out) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value <= 0 || value > 100000000) return -1;
  *out = value;
  return 0;
}

int tl_bench_options_parse(int argc, char **argv, tl_bench_options *opt) {
  opt->rows = 0;
  opt->rounds = 10;
  opt->per_round = 2000;
  opt->settle_ms = 30.0;
  for (int i = 1; i < argc; i++) {
    long value = 0;
    if (strcmp(argv[i], "--rows") == 0) {
      opt->rows = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      opt->rounds = 2;
      opt->per_round = 200;
      opt->settle_ms = 5.0;
    } else if (i + 1 < argc && parse_positive(argv[i + 1], &value) == 0 &&
               (strcmp(argv[i], "--rounds") == 0 || strcmp(argv[i], "--per-round") == 0 ||
                strcmp(argv[i], "--settle-ms") == 0)) {
      if (strcmp(argv[i], "--rounds") == 0) opt->rounds = (int)value;
      if (strcmp(argv[i], "--per-round") == 0) opt->per_round = (int)value;
      if (strcmp(argv[i], "--settle-ms") == 0) opt->settle_ms = (double)value;
      i++;
    } else {
      fprintf(stderr,
              "%s: unknown or malformed argument '%s'\n"
              "usage: %s [--rows] [--quick] [--rounds N] [--per-round N] [--settle-ms N]\n",
              argv[0], argv[i], argv[0]);
      return -1;
    }
  }
  return 0;
}

int tl_bench_alternate(tl_bench_contestant *contestants, int count, const tl_bench_options *opt) {
  size_t per_contestant = (size_t)opt->rounds * (size_t)opt->per_round;
  uint64_t *samples = malloc((size_t)count * per_contestant * sizeof *samples);
  if (samples == NULL) return ENOMEM;
  uint64_t settle_ns = (uint64_t)(opt->settle_ms * 1e6);
  for (int round = 0; round < opt->rounds; round++) {
    for (int c = 0; c < count; c++) {
      tl_bench_contestant *contestant = &contestants[c];
      uint64_t settle_end = tl_bench_now_ns() + settle_ns;
      do contestant->run(contestant->arg);
      while (tl_bench_now_ns() < settle_end);
      uint64_t *out = samples + (size_t)c * per_contestant + (size_t)round * opt->per_round;
      for (int i = 0; i < opt->per_round; i++) {
        uint64_t start = tl_bench_now_ns();
        contestant->run(contestant->arg);
        out[i] = tl_bench_now_ns() - start;
      }
    }
  }
  for (int c = 0; c < count; c++) {
    contestants[c].stats = tl_bench_stats_of(samples + (size_t)c * per_contestant, per_contestant);
  }
  free(samples);
  return 0;
}

/* --- table ------------------------------------------------------------------------------ */

void tl_bench_table_init(tl_bench_table *table, const char *section, tl_bench_stats round_trip,
                         const tl_bench_options *opt) {
  memset(table, 0, sizeof *table);
  table->section = section;
  table->round_trip = round_trip;
  table->rows_format = opt->rows;
}

void tl_bench_table_add(tl_bench_table *table, const char *benchmark, tl_bench_stats stats,
                        const char *anchor, const tl_bench_stats *anchor_stats) {
  if (table->count == TL_BENCH_MAX_ROWS) {
    fprintf(stderr, "bench: table '%s' is full; row '%s' dropped\n", table->section, benchmark);
    return;
  }
  tl_bench_row *row = &table->rows[table->count++];
  row->benchmark = benchmark;
  row->stats = stats;
  row->anchor = anchor;
  tl_bench_stats none = {NAN, NAN, 0};
  row->anchor_stats = anchor != NULL && anchor_stats != NULL ? *anchor_stats : none;
}

/* "8.31 us" / "412 ns" for a duration in ns, "nan" when not measured. */
static void format_ns(char *buf, size_t size, double ns) {
  if (isnan(ns)) {
    snprintf(buf, size, "nan");
  } else if (ns >= 1e6) {
    snprintf(buf, size, "%.2f ms", ns / 1e6);
  } else if (ns >= 1e3) {
    snprintf(buf, size, "%.2f us", ns / 1e3);
  } else {
    snprintf(buf, size, "%.0f ns", ns);
  }
}

/* A duration with the same duration in round trips beside it: "8.31 us = 81 rt". */
static void format_with_round_trips(char *buf, size_t size, double ns, double round_trip_ns) {
  char plain[32];
  format_ns(plain, sizeof plain, ns);
  if (isnan(ns) || isnan(round_trip_ns) || round_trip_ns <= 0) {
    snprintf(buf, size, "%s", plain);
  } else {
    snprintf(buf, size, "%s = %.1f rt", plain, ns / round_trip_ns);
  }
}

enum { COLUMNS = 7 };

/* The seven cells of one row, formatted. */
static void format_row(const tl_bench_table *table, const tl_bench_row *row,
                       char cells[COLUMNS][128]) {
  double round_trip_ns = table->round_trip.median_ns;
  snprintf(cells[0], 128, "%s", table->section);
  snprintf(cells[1], 128, "%s", row->benchmark);
  format_with_round_trips(cells[2], 128, row->stats.median_ns, round_trip_ns);
  format_with_round_trips(cells[3], 128, row->stats.p99_ns, round_trip_ns);
  snprintf(cells[4], 128, "%s", row->anchor ? row->anchor : "-");
  snprintf(cells[5], 128, "-");
  snprintf(cells[6], 128, "-");
  if (row->anchor != NULL) {
    format_ns(cells[5], 128, row->anchor_stats.median_ns);
    if (row->anchor_stats.median_ns > 0 && !isnan(row->stats.median_ns)) {
      snprintf(cells[6], 128, "%.2fx", row->stats.median_ns / row->anchor_stats.median_ns);
    }
  }
}

static void print_cells(FILE *out, char cells[COLUMNS][128], const int *widths) {
  for (int c = 0; c + 1 < COLUMNS; c++) fprintf(out, "%-*s | ", widths[c], cells[c]);
  fprintf(out, "%s\n", cells[COLUMNS - 1]);
}

void tl_bench_table_print(const tl_bench_table *table, FILE *out) {
  if (table->rows_format) {
    for (size_t r = 0; r < table->count; r++) {
      const tl_bench_row *row = &table->rows[r];
      fprintf(out, "row\t%s\t%s\t%.1f\t%.1f\t%s\t%.1f\t%.1f\n", table->section, row->benchmark,
              row->stats.median_ns, row->stats.p99_ns, row->anchor ? row->anchor : "-",
              row->anchor_stats.median_ns, table->round_trip.median_ns);
    }
    return;
  }
  static const char *const header[COLUMNS] = {"section", "benchmark",     "median", "p99",
                                              "anchor",  "anchor median", "ratio"};
  char cells[COLUMNS][128];
  int widths[COLUMNS];
  for (int c = 0; c < COLUMNS; c++) widths[c] = (int)strlen(header[c]);
  for (size_t r = 0; r < table->count; r++) {
    format_row(table, &table->rows[r], cells);
    for (int c = 0; c < COLUMNS; c++) {
      if ((int)strlen(cells[c]) > widths[c]) widths[c] = (int)strlen(cells[c]);
    }
  }
  char round_trip[32];
  format_ns(round_trip, sizeof round_trip, table->round_trip.median_ns);
  fprintf(out, "%s: cache-line round trip (rt) %s median, probed first in this run\n",
          table->section, round_trip);
  for (int c = 0; c < COLUMNS; c++) snprintf(cells[c], 128, "%s", header[c]);
  print_cells(out, cells, widths);
  for (size_t r = 0; r < table->count; r++) {
    format_row(table, &table->rows[r], cells);
    print_cells(out, cells, widths);
  }
}

int tl_bench_env_init(int argc, char **argv, tl_bench_env *env) {
  if (tl_bench_options_parse(argc, argv, &env->opt) != 0) return -1;
  env->cpus[0] = env->cpus[1] = 0;
  env->cpu_count = tl_bench_cpus(env->cpus, 2);
  env->round_trip =
      tl_bench_round_trip(env->cpus[0], env->cpu_count > 1 ? env->cpus[1] : env->cpus[0], 200);
  return 0;
}
