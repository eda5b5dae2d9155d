/* examples/fanout/openmp.c: variants (c) and (d), an OpenMP parallel-for over the items.
 *
 * (c) is the loop most code has today: every item mallocs its buffers, and every
 * factorization its scratch, through LAPACKE's allocating drivers. (d) is the careful
 * hand-written loop: each thread carves its buffers once from a block it keeps, and
 * passes LAPACK scratch and a workspace it keeps too. Both pin thread t
 * to CPU t mod n, pull items dynamically (as tl_map's lanes do), stop pulling once an item
 * fails, and report the lowest failing item after the region's join. Results are written
 * to a private array and copied to the caller's only when the whole pass succeeded. */
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
} omp_thread_state;

typedef struct omp_pass {
  const fan_env *env;
  int variant;
  size_t count;
  fan_result *priv;
  omp_thread_state *threads;
  fan_progress *progress;
  atomic_int stop;
  atomic_int threads_seen;
  long long lowest_fail;
  char why[400];
  int setup_failed;
} omp_pass;

static void record_failure(omp_pass *pass, size_t item, const char *why) {
#pragma omp critical(fanout_failure)
  {
    if (pass->lowest_fail < 0 || (long long)item < pass->lowest_fail) {
      pass->lowest_fail = (long long)item;
      snprintf(pass->why, sizeof pass->why, "%s", why);
    }
  }
  atomic_store(&pass->stop, 1);
}

static void run_pass(omp_pass *pass) {
  const fan_env *env = pass->env;
  const fan_problem *pb = env->pb;
  int team = env->opt->threads;
  cpu_set_t saved;
  int have_saved = pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) == 0;

#pragma omp parallel num_threads(team)
  {
    int tid = omp_get_thread_num();
    fan_pin_to(env->cpus[tid % env->cpu_count]);
    omp_thread_state *ts = &pass->threads[tid];
    fan_direct per_call;
    memset(&per_call, 0, sizeof per_call);
    per_call.per_call = 1;
    if (pass->variant == FAN_D && !ts->ready) {
      size_t bytes = (fan_work_bytes(pb) + 63) & ~(size_t)63;
      ts->block = aligned_alloc(64, bytes);
      if (ts->block && fan_direct_make(&ts->direct, pb) == 0) {
        fan_work_carve(pb, ts->block, &ts->work);
        ts->ready = 1;
      } else {
        record_failure(pass, 0, "out of memory for a per-thread workspace");
      }
    }
    fan_call call;
    call.ops = &fan_direct_ops;
    call.backend = pass->variant == FAN_D ? &ts->direct : &per_call;
    call.why[0] = '\0';

#pragma omp for schedule(dynamic, 1)
    for (size_t item = 0; item < pass->count; item++) {
      if (atomic_load_explicit(&pass->stop, memory_order_relaxed)) continue;
      fan_work local;
      fan_work *work = &ts->work;
      if (pass->variant == FAN_C) {
        if (fan_work_malloc_each(pb, &local) != 0) {
          record_failure(pass, item, "out of memory for the item's buffers");
          continue;
        }
        work = &local;
      }
      int rc = fan_patch_run(pb, item, &call, work, &pass->priv[item]);
      if (pass->variant == FAN_C) fan_work_free_each(&local);
      if (rc) {
        record_failure(pass, item, call.why);
        continue;
      }
      if ((item & 255) == 0) fan_thread_sample(&pass->threads_seen);
      fan_progress_item(pass->progress);
    }
  }
  if (have_saved) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
}

int fan_run_openmp(const fan_env *env, int variant, fan_result *results, fan_run *run) {
  const fan_problem *pb = env->pb;
  const fan_options *opt = env->opt;
  memset(run, 0, sizeof *run);
  run->lanes = opt->threads;
  fan_result *priv = calloc(pb->patches, sizeof *priv);
  omp_thread_state *threads = calloc((size_t)opt->threads, sizeof *threads);
  if (!priv || !threads) {
    free(priv);
    free(threads);
    snprintf(run->why, sizeof run->why, "out of memory for %zu results", pb->patches);
    return 3;
  }
  const char *label =
      variant == FAN_C ? "(c) OpenMP, malloc per item" : "(d) OpenMP, per-thread workspaces";
  int status = 0;
  for (int pass_index = 0; pass_index < 2 && status == 0; pass_index++) {
    int measured = pass_index == 1;
    omp_pass pass;
    memset(&pass, 0, sizeof pass);
    pass.env = env;
    pass.variant = variant;
    pass.count = measured ? pb->patches : (opt->warmup < pb->patches ? opt->warmup : pb->patches);
    pass.priv = priv;
    pass.threads = threads;
    pass.lowest_fail = -1;
    atomic_init(&pass.stop, 0);
    atomic_init(&pass.threads_seen, 0);
    fan_progress progress;
    fan_progress_begin(&progress, label, pass.count, measured ? env->progress_mode : 0);
    pass.progress = &progress;

    uint64_t mallocs0 = fan_malloc_count();
    double t0 = fan_now();
    run_pass(&pass);
    double t1 = fan_now();
    uint64_t mallocs1 = fan_malloc_count();
    fan_progress_end(&progress, pass.lowest_fail < 0);

    if (pass.lowest_fail >= 0) {
      run->failed = 1;
      run->failed_item = (size_t)pass.lowest_fail;
      snprintf(run->why, sizeof run->why, "%s", pass.why);
      status = 1;
    } else if (measured) {
      run->seconds = t1 - t0;
      run->items = pass.count;
      run->mallocs = mallocs1 - mallocs0;
      run->threads_seen = atomic_load(&pass.threads_seen);
    }
  }
  if (status == 0) memcpy(results, priv, sizeof *priv * pb->patches); /* publish */
  for (int t = 0; t < opt->threads; t++) {
    free(threads[t].block);
    fan_direct_free(&threads[t].direct);
  }
  free(threads);
  free(priv);
  return status;
}

#else /* no OpenMP */

int fan_openmp_available(void) { return 0; }

int fan_run_openmp(const fan_env *env, int variant, fan_result *results, fan_run *run) {
  (void)env;
  (void)variant;
  (void)results;
  memset(run, 0, sizeof *run);
  snprintf(run->why, sizeof run->why, "built without OpenMP");
  return 3;
}

#endif
