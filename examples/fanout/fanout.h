/* examples/fanout/fanout.h: what the parts of the fan-out program share.
 *
 * The program runs one computation (a patch of a tensor-cross interpolation, patch.h) over
 * thousands of items, several ways, and compares them. The per-item work lives in the
 * tenlane_fanout_patch library (patch.h); this header is the program's own: progress,
 * options, the runners and the counters. */
#ifndef FANOUT_H
#define FANOUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "patch.h"

/* Progress reporting from inside items (no allocation, no lock, no extra thread). One
 * report spans the whole measured run; the label says which variant runs now. */
typedef struct fan_progress {
  _Atomic(const char *) label;
  size_t total;
  int mode; /* 0 quiet, 1 terminal bar, 2 plain lines */
  double start;
  atomic_size_t done;
  atomic_llong next_ns;
} fan_progress;

void fan_progress_begin(fan_progress *p, size_t total, int mode);
void fan_progress_label(fan_progress *p, const char *label);
void fan_progress_item(fan_progress *p);
void fan_progress_end(fan_progress *p, int ok);

/* The table's rows (variants), in the order they run in a round. */
enum { FAN_A = 0, FAN_B = 1, FAN_C = 2, FAN_D = 3, FAN_E = 4, FAN_ROWS = 5 };

/* One way of running the items: a row of the table at its thread count, or the one-thread
 * run of an OpenMP row that gives that row's scaling column. */
typedef struct fan_config {
  const char *key;        /* "a".."e"; "c1", "d1", "e1" for the one-thread runs */
  const char *label;      /* the table's label */
  const char *brief;      /* the short label (progress, run-benches rows) */
  int row;                /* FAN_A..FAN_E: the row it measures */
  int one_thread;         /* 1: runs on one thread/lane whatever --threads says */
  int tenlane;            /* 1: tl_map runner; 0: OpenMP runner */
  fan_direct_style style; /* OpenMP runner: the direct backend's style */
} fan_config;

typedef struct fan_options {
  size_t patches;
  int length, phys, bond_lo, bond_hi;
  int bond_sorted; /* --bond-order sorted */
  fan_dtype dtype;
  double tol;
  int threads;
  uint64_t seed;
  const char *csv;
  int quiet;
  long long fail_item;
  const char *variants; /* subset of "abcde" to run */
  size_t warmup;        /* items of the untimed warm-up pass */
  int rounds;           /* the measured items are run in this many interleaved rounds */
  int rows;             /* also print scripts/run-benches rows */
  int scaling;          /* run the one-thread passes of the OpenMP rows (scaling column) */
} fan_options;

typedef struct fan_env {
  const fan_options *opt;
  fan_problem *pb;
  int *cpus; /* CPUs the process may run on (pinning targets) */
  int cpu_count;
} fan_env;

/* What one pass (a range of items on one configuration) measured, or why it failed. */
typedef struct fan_pass {
  size_t first, count; /* the items: first .. first + count - 1 */
  fan_result *priv;    /* results, indexed by item; private until the run succeeded */
  fan_progress *progress;
  int sample_threads; /* count /proc/self/task entries from inside items */
  double seconds;
  uint64_t tl_allocs; /* tl_allocation_count() delta over the pass */
  uint64_t mallocs;   /* malloc-family calls over the pass (see counters.c) */
  int threads_seen;   /* most entries of /proc/self/task seen from inside an item */
  size_t failed_item; /* when the pass returned 1 */
  char why[400];      /* when the pass returned non-zero */
} fan_pass;

/* A way of running items. open makes what the configuration keeps across passes (context,
 * per-lane or per-thread buffers); pass runs items and returns only after every thread
 * that ran them has joined: 0, 1 when an item failed (the lowest one that failed by
 * itself, in failed_item and why), 3 on a setup failure (why); close frees it all. */
typedef struct fan_runner {
  int (*open)(const fan_env *env, const fan_config *config, void **state, char *why,
              size_t why_size);
  int (*pass)(void *state, fan_pass *pass);
  int (*lanes)(void *state);
  void (*close)(void *state);
} fan_runner;

/* tl_map over every lane of a context with budget --threads ((a)), or budget 1 ((b)). */
extern const fan_runner fan_tenlane_runner;
/* The kernel provider tenlane picked, for the header line. */
const char *fan_tenlane_kernels(void);
/* An OpenMP loop over the items on the direct backend ((c), (d), (e)). */
extern const fan_runner fan_openmp_runner;
/* 1 when the OpenMP variants were built. */
int fan_openmp_available(void);

/* ---- Counters ----------------------------------------------------------------------- */

/* malloc-family calls made by this process so far (0 when not counted: see counters.c). */
uint64_t fan_malloc_count(void);
int fan_malloc_counted(void);
/* Entries of /proc/self/task right now, read without allocating; -1 on failure. */
int fan_thread_count(void);
/* Record max(threads_seen, now) atomically. */
void fan_thread_sample(atomic_int *max_seen);

double fan_now(void);
/* Pin the calling thread to one CPU; 0 or -1. */
int fan_pin_to(int cpu);

#endif
