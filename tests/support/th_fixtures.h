/* tests/support/th_fixtures.h: helpers shared by the suite: bounded waits, contexts of a
 * given budget, a held session, small f64 vectors, threads that run a function, the process
 * thread count. */
#ifndef TH_FIXTURES_H
#define TH_FIXTURES_H

#include <pthread.h>
#include <stdint.h>

#include "tenlane/context.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"

/* Poll pred(arg) every 50 us until it holds (1) or `ms` milliseconds pass (0). */
int th_wait_until(int (*pred)(void *arg), void *arg, unsigned ms);

/* A context with the given budget (and optional CPU set); fails the test on error. */
tl_context *th_make_context(int threads);
tl_context *th_make_context_on(int threads, const int *cpus, int cpu_count);

/* A context of `threads` threads with a session opened on it by the calling thread, and that
 * session's root surface. th_held_open fails the test on error; th_held_close closes the
 * session, destroys the context (failing the test on error) and zeroes *held. */
typedef struct th_held {
  tl_context *ctx;
  tl_session *session;
  tl_exec *exec;
} th_held;
void th_held_open(th_held *held, int threads);
void th_held_close(th_held *held);

/* The number of threads of this process (entries of /proc/self/task). */
int th_thread_count(void);

/* Borrowed 1-D f64 tensor over data[n]. */
tl_tensor th_vec_f64(double *data, int64_t n);

/* A thread running fn(arg); th_thread_join fails the test if it does not end in `ms`. */
typedef struct th_thread {
  pthread_t handle;
  void *(*fn)(void *);
  void *arg;
  volatile int finished;
} th_thread;
void th_thread_start(th_thread *thread, void *(*fn)(void *), void *arg);
void th_thread_join(th_thread *thread, unsigned ms);

/* The CPUs of the process's affinity set, ascending; returns how many. */
int th_process_cpus(int *cpus, int max);

#endif
