/* tests/pool/test_pool.c: the pool on its own: broadcasts, loops, pinning, idling, and a
 * worker that waits on another pool while its own pool has work queued. */
#define _GNU_SOURCE 1
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool/pool_int.h"
#include "tenlane/context.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "th_fixtures.h"
#include "th_test.h"

static tl_pool *make_pool(int workers) {
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = workers;
  tl_pool *pool = NULL;
  TH_CHECK_OK(tl_pool_create(&config, &pool));
  return pool;
}

typedef struct count_args {
  atomic_int calls[8];
  tl_pool *pool;
  atomic_int index_ok;
} count_args;

static void count_calls(int worker_index, void *arg) {
  count_args *args = arg;
  atomic_fetch_add(&args->calls[worker_index], 1);
  if (tl_pool_current_index(args->pool) == worker_index) atomic_fetch_add(&args->index_ok, 1);
}

static void pool_broadcast_runs_each_worker_exactly_once(void) {
  for (int workers = 1; workers <= 4; workers++) {
    tl_pool *pool = make_pool(workers);
    for (int round = 0; round < 200; round++) {
      count_args args;
      memset(&args, 0, sizeof args);
      args.pool = pool;
      TH_CHECK_OK(tl_pool_broadcast(pool, count_calls, &args));
      for (int i = 0; i < workers; i++) TH_CHECK(atomic_load(&args.calls[i]) == 1);
      for (int i = workers; i < 8; i++) TH_CHECK(atomic_load(&args.calls[i]) == 0);
      TH_CHECK(atomic_load(&args.index_ok) == workers);
    }
    TH_CHECK(tl_pool_current_index(pool) == -1);
    tl_pool_destroy(pool);
  }
}

typedef struct nested_args {
  tl_pool *pool;
  atomic_int refused;
} nested_args;

static void broadcast_to_own_pool(int worker_index, void *arg) {
  (void)worker_index;
  nested_args *args = arg;
  if (tl_pool_broadcast(args->pool, broadcast_to_own_pool, arg) == TL_E_TARGET_POOL_CALLER)
    atomic_fetch_add(&args->refused, 1);
}

static void broadcast_from_a_worker_of_the_same_pool_is_refused(void) {
  tl_pool *pool = make_pool(2);
  nested_args args = {pool, 0};
  TH_CHECK_OK(tl_pool_broadcast(pool, broadcast_to_own_pool, &args));
  TH_CHECK(atomic_load(&args.refused) == 2);
  TH_CHECK(strstr(tl_last_message(), "") != NULL);
  tl_pool_destroy(pool);
}

typedef struct range_args {
  atomic_int *hits;
} range_args;

static void mark_range(size_t begin, size_t end, int worker_index, void *arg) {
  (void)worker_index;
  range_args *args = arg;
  for (size_t i = begin; i < end; i++) atomic_fetch_add(&args->hits[i], 1);
}

static void pool_parallel_for_covers_every_index_once(void) {
  tl_pool *pool = make_pool(3);
  static atomic_int hits[10007];
  size_t counts[] = {0, 1, 2, 7, 64, 1000, 10007};
  size_t grains[] = {0, 1, 3, 1000};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    for (size_t g = 0; g < sizeof grains / sizeof grains[0]; g++) {
      for (size_t i = 0; i < counts[c]; i++) atomic_store(&hits[i], 0);
      range_args args = {hits};
      TH_CHECK_OK(tl_pool_parallel_for(pool, counts[c], grains[g], mark_range, &args));
      for (size_t i = 0; i < counts[c]; i++) TH_CHECK(atomic_load(&hits[i]) == 1);
    }
  }
  TH_CHECK_STATUS(tl_pool_parallel_for(NULL, 4, 1, mark_range, NULL), TL_E_INVALID);
  tl_pool_destroy(pool);
}

/* Pool A's only worker drives a broadcast on pool B whose worker waits for a flag that only
 * a job queued on pool A sets. The job can run only if A's worker, while it waits on B,
 * keeps running A's queue. If it did not, the test would deadlock and fail by its bounds. */
typedef struct cross_args {
  tl_pool *a, *b;
  atomic_int flag;
  atomic_int b_saw_flag;
  atomic_int job_ran_on_a_worker;
} cross_args;

static int flag_set(void *arg) { return atomic_load(&((cross_args *)arg)->flag); }

static void b_worker_waits_for_flag(int worker_index, void *arg) {
  (void)worker_index;
  cross_args *args = arg;
  if (th_wait_until(flag_set, args, 10000)) atomic_store(&args->b_saw_flag, 1);
}

static void a_worker_drives_b(int worker_index, void *arg) {
  (void)worker_index;
  cross_args *args = arg;
  TH_CHECK_OK(tl_pool_broadcast(args->b, b_worker_waits_for_flag, args));
}

static void *outside_broadcast_on_a(void *arg) {
  cross_args *args = arg;
  TH_CHECK_OK(tl_pool_broadcast(args->a, a_worker_drives_b, args));
  return NULL;
}

static void set_flag_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  (void)begin, (void)end;
  cross_args *args = arg;
  if (worker_index == 0 && tl_pool_current_index(args->a) == 0)
    atomic_store(&args->job_ran_on_a_worker, 1);
  atomic_store(&args->flag, 1);
}

static void a_waiting_foreign_worker_keeps_running_its_own_pool(void) {
  cross_args args;
  memset(&args, 0, sizeof args);
  args.a = make_pool(1);
  args.b = make_pool(1);
  th_thread driver;
  th_thread_start(&driver, outside_broadcast_on_a, &args);
  /* Two chunks so the loop is queued on A rather than run inline by this thread. The
   * calling thread is not a worker of A, so it cannot run them: A's worker must. */
  TH_CHECK_OK(tl_pool_parallel_for(args.a, 2, 1, set_flag_chunk, &args));
  th_thread_join(&driver, 20000);
  TH_CHECK(atomic_load(&args.b_saw_flag) == 1);
  TH_CHECK(atomic_load(&args.job_ran_on_a_worker) == 1);
  tl_pool_destroy(args.a);
  tl_pool_destroy(args.b);
}

/* Workers pinned inside the set, and the held caller narrowed to it and restored. */
typedef struct mask_args {
  cpu_set_t expect;
  atomic_int inside;
} mask_args;

static void check_worker_mask(int worker_index, void *arg) {
  (void)worker_index;
  mask_args *args = arg;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  sched_getaffinity(0, sizeof mask, &mask);
  cpu_set_t both;
  CPU_AND(&both, &mask, &args->expect);
  if (CPU_COUNT(&mask) == 1 && CPU_EQUAL(&both, &mask)) atomic_fetch_add(&args->inside, 1);
}

static void pinned_workers_and_the_held_caller_stay_inside_the_cpu_set(void) {
  int cpus[CPU_SETSIZE];
  int count = th_process_cpus(cpus, CPU_SETSIZE);
  TH_CHECK(count >= 1);
  int chosen = cpus[count - 1]; /* a set of one CPU: every worker must land on it */
  cpu_set_t before;
  CPU_ZERO(&before);
  sched_getaffinity(0, sizeof before, &before);
  for (int threads = 2; threads <= 4; threads += 2) {
    tl_context *ctx = th_make_context_on(threads, &chosen, 1);
    mask_args args;
    memset(&args, 0, sizeof args);
    CPU_ZERO(&args.expect);
    CPU_SET(chosen, &args.expect);
    TH_CHECK_OK(tl_pool_broadcast(tl_context_pool(ctx), check_worker_mask, &args));
    TH_CHECK(atomic_load(&args.inside) == threads);
    tl_session *session;
    TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
    cpu_set_t held;
    CPU_ZERO(&held);
    sched_getaffinity(0, sizeof held, &held);
    TH_CHECK(CPU_EQUAL(&held, &args.expect));
    TH_CHECK_OK(tl_session_close(session));
    cpu_set_t after;
    CPU_ZERO(&after);
    sched_getaffinity(0, sizeof after, &after);
    TH_CHECK(CPU_EQUAL(&after, &before));
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
  /* A CPU outside the process's set is refused. */
  int outside = CPU_SETSIZE - 1;
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 2;
  config.cpus = &outside;
  config.cpu_count = 1;
  tl_context *ctx = NULL;
  TH_CHECK_STATUS(tl_context_create(&config, &ctx), TL_E_INVALID);
  TH_CHECK(ctx == NULL);
}

static double process_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void noop(int worker_index, void *arg) { (void)arg, (void)worker_index; }

static void an_idle_context_uses_no_cpu(void) {
  tl_context *ctx = th_make_context(4);
  TH_CHECK_OK(tl_pool_broadcast(tl_context_pool(ctx), noop, NULL));
  usleep(50 * 1000); /* past the spin window: the workers are asleep now */
  double before = process_cpu_seconds();
  usleep(400 * 1000);
  double used = process_cpu_seconds() - before;
  /* Four spinning workers would burn ~0.8 s of CPU here (two cores); sleeping ones ~0. */
  if (used >= 0.04) fprintf(stderr, "idle context used %.3f s of CPU in 0.4 s\n", used);
  TH_CHECK(used < 0.04);
  TH_CHECK_OK(tl_context_destroy(ctx));
}

typedef struct wake_log {
  int order[8];
  int count;
} wake_log;

static void log_wake(tl__worker *worker, void *arg) {
  wake_log *log = arg;
  if (log->count < 8) log->order[log->count++] = worker->index;
}

/* A broadcast wakes the workers of the other CPUs before the one that shares the caller's
 * CPU, which could otherwise preempt the caller before it woke the rest. */
static void workers_on_the_callers_cpu_are_woken_last(void) {
  tl_pool_config config;
  tl_pool_config_init(&config);
  config.workers = 4;
  int cpus[4] = {0, 0, 0, 0};
  cpu_set_t set;
  TH_CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && seen < 2; cpu++)
    if (CPU_ISSET(cpu, &set)) cpus[seen++] = cpu;
  if (seen < 2) {
    fprintf(stderr, "one CPU in the affinity set: wake order has nothing to reorder\n");
    return;
  }
  /* Workers 0 and 2 on the first CPU, 1 and 3 on the second. */
  int pinned[4] = {cpus[0], cpus[1], cpus[0], cpus[1]};
  config.cpus = pinned;
  config.cpu_count = 4;
  tl_pool *pool = NULL;
  TH_CHECK_OK(tl_pool_create(&config, &pool));
  wake_log log = {{0}, 0};
  tl__pool_wake_each(pool, cpus[0], log_wake, &log);
  TH_CHECK(log.count == 4);
  TH_CHECK(log.order[0] == 1 && log.order[1] == 3 && log.order[2] == 0 && log.order[3] == 2);
  log.count = 0;
  tl__pool_wake_each(pool, cpus[1], log_wake, &log);
  TH_CHECK(log.order[0] == 0 && log.order[1] == 2 && log.order[2] == 1 && log.order[3] == 3);
  log.count = 0;
  tl__pool_wake_each(pool, -1, log_wake, &log);
  for (int i = 0; i < 4; i++) TH_CHECK(log.order[i] == i);
  tl_pool_destroy(pool);
}

static void pool_config_errors_are_typed(void) {
  tl_pool_config config;
  tl_pool_config_init(&config);
  tl_pool *pool = NULL;
  config.workers = 0;
  TH_CHECK_STATUS(tl_pool_create(&config, &pool), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "workers is 0") != NULL);
  config.workers = 1;
  int bad = -3;
  config.cpus = &bad;
  config.cpu_count = 1;
  TH_CHECK_STATUS(tl_pool_create(&config, &pool), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "cpus[0] is -3") != NULL);
  TH_CHECK_STATUS(tl_pool_create(NULL, &pool), TL_E_INVALID);
  TH_CHECK_STATUS(tl_pool_broadcast(NULL, noop, NULL), TL_E_INVALID);
  TH_CHECK(pool == NULL);
  tl_pool_destroy(NULL);
}

TH_TEST_MAIN(TH_CASE(pool_broadcast_runs_each_worker_exactly_once),
             TH_CASE(broadcast_from_a_worker_of_the_same_pool_is_refused),
             TH_CASE(pool_parallel_for_covers_every_index_once),
             TH_CASE(a_waiting_foreign_worker_keeps_running_its_own_pool),
             TH_CASE(pinned_workers_and_the_held_caller_stay_inside_the_cpu_set),
             TH_CASE(an_idle_context_uses_no_cpu),
             TH_CASE(workers_on_the_callers_cpu_are_woken_last),
             TH_CASE(pool_config_errors_are_typed))
