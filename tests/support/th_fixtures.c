/* tests/support/th_fixtures.c: see th_fixtures.h. */
#define _GNU_SOURCE 1
#include "th_fixtures.h"

#include <dirent.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "th_test.h"

int th_wait_until(int (*pred)(void *arg), void *arg, unsigned ms) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    if (pred(arg)) return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long elapsed = (now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
    if (elapsed >= (long)ms) return pred(arg);
    usleep(50);
  }
}

tl_context *th_make_context_on(int threads, const int *cpus, int cpu_count) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  config.cpus = cpus;
  config.cpu_count = cpu_count;
  tl_context *ctx = NULL;
  TH_CHECK_OK(tl_context_create(&config, &ctx));
  return ctx;
}

tl_context *th_make_context(int threads) { return th_make_context_on(threads, NULL, 0); }

void th_held_open(th_held *held, int threads) {
  held->ctx = th_make_context(threads);
  TH_CHECK_OK(tl_session_open(held->ctx, tl_owner_new(), TL_NOWAIT, &held->session));
  held->exec = tl_session_exec(held->session);
}

void th_held_close(th_held *held) {
  TH_CHECK_OK(tl_session_close(held->session));
  TH_CHECK_OK(tl_context_destroy(held->ctx));
  memset(held, 0, sizeof *held);
}

int th_thread_count(void) {
  DIR *dir = opendir("/proc/self/task");
  if (dir == NULL) return -1;
  int count = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] != '.') count++;
  }
  closedir(dir);
  return count;
}

tl_tensor th_vec_f64(double *data, int64_t n) {
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, &n, NULL, data, 0, &t));
  return t;
}

static void *thread_trampoline(void *arg) {
  th_thread *thread = arg;
  void *result = thread->fn(thread->arg);
  __atomic_store_n(&thread->finished, 1, __ATOMIC_RELEASE);
  return result;
}

void th_thread_start(th_thread *thread, void *(*fn)(void *), void *arg) {
  thread->fn = fn;
  thread->arg = arg;
  thread->finished = 0;
  TH_CHECK(pthread_create(&thread->handle, NULL, thread_trampoline, thread) == 0);
}

static int thread_finished(void *arg) {
  th_thread *thread = arg;
  return __atomic_load_n(&thread->finished, __ATOMIC_ACQUIRE);
}

void th_thread_join(th_thread *thread, unsigned ms) {
  if (!th_wait_until(thread_finished, thread, ms)) {
    th_test_fail_at(__FILE__, __LINE__, "a helper thread did not finish in time");
  }
  pthread_join(thread->handle, NULL);
}

int th_process_cpus(int *cpus, int max) {
  cpu_set_t set;
  CPU_ZERO(&set);
  sched_getaffinity(0, sizeof set, &set);
  int count = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE && count < max; cpu++) {
    if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
  }
  return count;
}
