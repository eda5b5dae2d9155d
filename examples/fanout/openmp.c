/* examples/fanout/openmp.c: variants (c), (d) and (e), an OpenMP parallel-for over the items
 * on the direct backend (direct.c).
 *
 * (c) runs tenlane's algorithm with allocation per item: every item mallocs its buffers,
 * every factorization its scratch (LAPACKE's allocating drivers). (d) is the careful
 * hand-written loop: each thread carves its buffers once from a block it keeps, and keeps
 * its LAPACK scratch too. (e) is the loop most code has today: malloc per item and the full
 * geqp3, truncated afterwards. All pin thread t
 * to CPU t mod n, pull items dynamically (as tl_map's lanes do), stop pulling once an item
 * fails, and report the lowest failing item after the region's join. Results go to the
 * caller's private array, which main publishes only after the whole run succeeded. */
#define _GNU_SOURCE
#include <sched.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "fanout.h"

#ifdef _OPENMP

int fan_openmp_available(void) { return 1; }

typedef struct omp_thread_state {
  void *block; /* (d): the thread's buffers, kept across passes */
  fan_work work;
  fan_direct direct; /* (d): the thread's factorization scratch */
  int ready;
  char pad[64]; /* threads write their states concurrently */
} omp_thread_state;

typedef struct omp_state {
  const fan_env *env;
  fan_direct_style style;
  int team;
  omp_thread_state *threads;
} omp_state;

typedef struct omp_pass {
  omp_state *st;
  fan_pass *pass;
  atomic_int stop;
  atomic_int threads_seen;
  long long lowest_fail;
  char why[400];
} omp_pass;

static void record_failure(omp_pass *op, size_t item, const char *why) {
#pragma omp critical(fanout_failure)
  {
    if (op->lowest_fail < 0 || (long long)item < op->lowest_fail) {
      op->lowest_fail = (long long)item;
      snprintf(op->why, sizeof op->why, "%s", why);
    }
  }
  atomic_store(&op->stop, 1);
}

static void run_region(omp_pass *op) {
  omp_state *st = op->st;
  const fan_env *env = st->env;
  const fan_problem *pb = env->pb;
  fan_pass *pass = op->pass;
  cpu_set_t saved;
  int have_saved = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;

#pragma omp parallel num_threads(st->team)
  {
    int tid = omp_get_thread_num();
    fan_pin_to(env->cpus[tid % env->cpu_count]);
    fan_direct_thread_init();
    omp_thread_state *ts = &st->threads[tid];
    int kept = st->style == FAN_DIRECT_KEPT;
    fan_direct per_call; /* the per-call styles' backend: allocates nothing here */
    memset(&per_call, 0, sizeof per_call);
    if (!kept) fan_direct_make(&per_call, st->style, pb);
    if (kept && !ts->ready) {
      size_t bytes = (fan_work_bytes(pb) + 63) & ~(size_t)63;
      if (!ts->block) ts->block = aligned_alloc(64, bytes);
      if (ts->block && fan_direct_make(&ts->direct, st->style, pb) == 0) {
        fan_work_carve(pb, ts->block, &ts->work);
        ts->ready = 1;
      } else {
        record_failure(op, pass->first, "out of memory for a per-thread workspace");
      }
    }
    fan_call call;
    call.ops = &fan_direct_ops;
    call.dtype = pb->dtype;
    call.backend = kept ? &ts->direct : &per_call;
    call.why[0] = '\0';

#pragma omp for schedule(dynamic, 1)
    for (size_t index = 0; index < pass->count; index++) {
      if (atomic_load_explicit(&op->stop, memory_order_relaxed)) continue;
      size_t item = pass->first + index;
      fan_work local;
      fan_work *work = &ts->work;
      if (!kept) {
        if (fan_work_malloc_each(pb, &local) != 0) {
          record_failure(op, item, "out of memory for the item's buffers");
          continue;
        }
        work = &local;
      }
      int rc = fan_patch_run(pb, item, &call, work, &pass->priv[item]);
      if (!kept) fan_work_free_each(&local);
      if (rc) {
        record_failure(op, item, call.why);
        continue;
      }
      if (pass->sample_threads && (item & 255) == 0) fan_thread_sample(&op->threads_seen);
      fan_progress_item(pass->progress);
    }
  }
  if (have_saved) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
}

static int omp_open(const fan_env *env, const fan_config *config, void **out, char *why,
                    size_t why_size) {
  omp_state *st = calloc(1, sizeof *st);
  if (st) st->threads = calloc((size_t)env->opt->threads, sizeof *st->threads);
  if (!st || !st->threads) {
    free(st);
    snprintf(why, why_size, "out of memory for %d thread states", env->opt->threads);
    return 3;
  }
  st->env = env;
  st->style = config->style;
  st->team = config->one_thread ? 1 : env->opt->threads;
  *out = st;
  return 0;
}

static int omp_pass_run(void *state, fan_pass *pass) {
  omp_pass op;
  memset(&op, 0, sizeof op);
  op.st = state;
  op.pass = pass;
  op.lowest_fail = -1;
  atomic_init(&op.stop, 0);
  atomic_init(&op.threads_seen, 0);
  uint64_t m0 = fan_malloc_count();
  double t0 = fan_now();
  run_region(&op); /* the region's end joins every thread */
  double t1 = fan_now();
  uint64_t m1 = fan_malloc_count();
  if (op.lowest_fail >= 0) {
    pass->failed_item = (size_t)op.lowest_fail;
    snprintf(pass->why, sizeof pass->why, "%s", op.why);
    return 1;
  }
  pass->seconds = t1 - t0;
  pass->mallocs = m1 - m0;
  pass->tl_allocs = 0;
  pass->threads_seen = atomic_load(&op.threads_seen);
  return 0;
}

static int omp_lanes(void *state) { return ((omp_state *)state)->team; }

static void omp_close(void *state) {
  omp_state *st = state;
  if (!st) return;
  for (int t = 0; t < st->team; t++) {
    free(st->threads[t].block);
    fan_direct_free(&st->threads[t].direct);
  }
  free(st->threads);
  free(st);
}

const fan_runner fan_openmp_runner = {omp_open, omp_pass_run, omp_lanes, omp_close};

#else /* no OpenMP */

int fan_openmp_available(void) { return 0; }

static int omp_open(const fan_env *env, const fan_config *config, void **out, char *why,
                    size_t why_size) {
  (void)env;
  (void)config;
  (void)out;
  snprintf(why, why_size, "built without OpenMP");
  return 3;
}
static int omp_pass_run(void *state, fan_pass *pass) {
  (void)state;
  (void)pass;
  return 3;
}
static int omp_lanes(void *state) {
  (void)state;
  return 0;
}
static void omp_close(void *state) { (void)state; }

const fan_runner fan_openmp_runner = {omp_open, omp_pass_run, omp_lanes, omp_close};

#endif
