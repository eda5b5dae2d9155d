/* benches/support/bench.h: the benchmark harness every bench binary shares.
 *
 * It keeps the measurements comparable: threads are pinned to named CPUs, time is the
 * monotonic clock in nanoseconds, a figure is a median and a p99 over many samples, the
 * contestants of one table are alternated in rounds (each round first lets the previous
 * contestant's spinning threads go idle), and every table carries the cache-line round trip
 * between the two CPUs measured in the same run, because on this machine that round trip
 * moves between about 100 and 430 ns over minutes and every latency figure moves with it.
 *
 * A bench binary prints one table; with --rows it prints machine-readable rows instead,
 * which scripts/run-benches gathers from every binary into one table:
 *   section | benchmark | median | p99 | anchor | anchor median | ratio
 * The harness uses no tenlane code, so the anchors it measures need no library. */
#ifndef TL_BENCH_H
#define TL_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The monotonic clock in nanoseconds (CLOCK_MONOTONIC). Any thread. */
uint64_t tl_bench_now_ns(void);

/* Pin the calling thread to `cpu` and check it runs there. Returns 0, or an errno value
 * (EINVAL for a CPU outside the process's set). */
int tl_bench_pin_self(int cpu);

/* Undo tl_bench_pin_self: let the calling thread run on every CPU of the process's set.
 * Returns 0 or an errno value. */
int tl_bench_unpin_self(void);

/* Write up to `max` CPUs of the process's affinity set, lowest first, to cpus[]. Returns how
 * many there are in the set (may exceed max), or -1 when the set cannot be read. */
int tl_bench_cpus(int *cpus, int max);

/* A summary of samples in nanoseconds. */
typedef struct tl_bench_stats {
  double median_ns;
  double p99_ns;
  size_t count; /* 0: nothing measured (the figures are NaN) */
} tl_bench_stats;

/* Median and p99 (nearest rank) of samples[0..count). Sorts samples in place. */
tl_bench_stats tl_bench_stats_of(uint64_t *samples, size_t count);

/* The cache-line round trip between cpu_a and cpu_b: two threads pinned there pass a value
 * back and forth on one cache line; a sample is the mean of a batch of 64 round trips.
 * Returns the summary over `batches` batches (count 0 when a thread could not be pinned or
 * started). Takes a few milliseconds. Any thread; it starts and joins its own thread and
 * gives the calling thread its previous affinity back. */
tl_bench_stats tl_bench_round_trip(int cpu_a, int cpu_b, int batches);

/* How a bench binary runs, from its command line:
 *   --rows          print machine-readable rows (for scripts/run-benches)
 *   --quick         few samples (a smoke run: checks the binary works, not the figures)
 *   --rounds N      rounds of alternation (default 10)
 *   --per-round N   timed calls per contestant per round (default 2000)
 *   --settle-ms N   untimed calls before each contestant's timed block (default 30 ms), long
 *                   enough for the previous contestant's spinning threads to park */
typedef struct tl_bench_options {
  int rows;
  int rounds;
  int per_round;
  double settle_ms;
} tl_bench_options;

/* Parse argv into *opt (defaults for anything absent). Returns 0, or -1 after printing a
 * usage message to stderr on an unknown or malformed argument. */
int tl_bench_options_parse(int argc, char **argv, tl_bench_options *opt);

/* What every bench binary does first, in this order: parse its command line, find the first
 * two CPUs of the process's set, and probe the round trip between them (the first CPU with
 * itself when the set has one). */
typedef struct tl_bench_env {
  tl_bench_options opt;
  int cpus[2];               /* 0 where the set has no such CPU */
  int cpu_count;             /* as tl_bench_cpus returns: may exceed 2, or be -1 */
  tl_bench_stats round_trip; /* 200 batches */
} tl_bench_env;

/* Fill *env as above. Returns 0, or -1 after tl_bench_options_parse printed its usage
 * message (the bench then exits with status 2). Call from main, before any pinning. */
int tl_bench_env_init(int argc, char **argv, tl_bench_env *env);

/* One contestant: `run(arg)` is one timed call. */
typedef struct tl_bench_contestant {
  const char *name;
  void (*run)(void *arg);
  void *arg;
  tl_bench_stats stats; /* filled by tl_bench_alternate */
} tl_bench_contestant;

/* Measure the contestants alternately: opt->rounds rounds, in each one every contestant in
 * turn runs untimed for opt->settle_ms, then opt->per_round timed calls (one sample per
 * call). Fills each contestant's stats. Returns 0, or ENOMEM. Call from the thread the
 * contestants are meant to be measured on. */
int tl_bench_alternate(tl_bench_contestant *contestants, int count, const tl_bench_options *opt);

#define TL_BENCH_MAX_ROWS 64

typedef struct tl_bench_row {
  const char *benchmark;
  tl_bench_stats stats;
  const char *anchor; /* NULL: the row is itself an anchor or a plain figure */
  tl_bench_stats anchor_stats;
} tl_bench_row;

/* The rows of one bench binary, under one section name. The strings are borrowed and must
 * outlive the table. */
typedef struct tl_bench_table {
  const char *section;
  tl_bench_stats round_trip; /* probed first, in the same run; quoted beside each median */
  int rows_format;           /* 1: print machine-readable rows */
  size_t count;
  tl_bench_row rows[TL_BENCH_MAX_ROWS];
} tl_bench_table;

void tl_bench_table_init(tl_bench_table *table, const char *section, tl_bench_stats round_trip,
                         const tl_bench_options *opt);

/* Add a row; `anchor` names the figure to compare with (its stats in anchor_stats), or NULL.
 * Rows beyond TL_BENCH_MAX_ROWS are dropped with a note on stderr. */
void tl_bench_table_add(tl_bench_table *table, const char *benchmark, tl_bench_stats stats,
                        const char *anchor, const tl_bench_stats *anchor_stats);

/* Print the table: aligned columns, or with rows_format one line per row,
 *   row<TAB>section<TAB>benchmark<TAB>median_ns<TAB>p99_ns<TAB>anchor<TAB>anchor_median_ns
 *      <TAB>round_trip_ns
 * ("-" for an absent anchor, "nan" for a figure not measured). */
void tl_bench_table_print(const tl_bench_table *table, FILE *out);

#endif
