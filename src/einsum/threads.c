/* src/einsum/threads.c: whether one einsum step should split over the surface's team.
 *
 * A step's one-thread time is estimated from its floating-point operations and the bytes it
 * moves (TL__EINSUM_FLOP_RATE, TL__EINSUM_BYTE_RATE per thread: deliberately optimistic,
 * so a doubtful step stays on one thread). Splitting it over `team` threads saves
 * t * (1 - 1/team) and costs one split of the pool: the split pays when the saving is at
 * least TL__EINSUM_SPLIT_MARGIN splits. The cost of a split is measured once per process
 * on the first surface with a team (the median of a few empty parallel loops over the
 * team), not assumed: it is a few microseconds with spinning workers and tens when they
 * sleep.
 *
 * Invariant: the choice is a pure function of the step's shape and the measured overhead,
 * and it never changes results' bits by itself: the routes split GEMMs by blocks of C and
 * elementwise work by rows, so a step gives the same bits on one thread or many (the
 * reduce route, which may split a summed range, is the exception; see einsum.md). */
#include <stdatomic.h>
#include <time.h>

#include "base/base.h"
#include "einsum_int.h"
#include "exec/exec.h"

#define TL__EINSUM_FLOP_RATE 2.0e10 /* real flops per second per thread */
#define TL__EINSUM_BYTE_RATE 1.0e10 /* bytes per second per thread */
#define TL__EINSUM_SPLIT_MARGIN 3.0
#define TL__EINSUM_SPLIT_SAMPLES 7

/* Nanoseconds one split costs; 0 until measured. */
static atomic_llong split_ns;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nothing(size_t begin, size_t end, int worker_index, void *arg) {
  (void)begin, (void)end, (void)worker_index, (void)arg;
}

static double measured_split_seconds(tl_exec *exec, int team) {
  long long ns = atomic_load_explicit(&split_ns, memory_order_relaxed);
  if (ns > 0) return (double)ns * 1e-9;
  int64_t samples[TL__EINSUM_SPLIT_SAMPLES];
  for (int s = 0; s < TL__EINSUM_SPLIT_SAMPLES; s++) {
    int64_t start = now_ns();
    if (tl__exec_parallel_for(exec, (size_t)team, 1, nothing, NULL) != TL_OK) return 1.0;
    samples[s] = now_ns() - start;
  }
  for (int i = 1; i < TL__EINSUM_SPLIT_SAMPLES; i++) {
    for (int j = i; j > 0 && samples[j] < samples[j - 1]; j--) {
      int64_t t = samples[j];
      samples[j] = samples[j - 1];
      samples[j - 1] = t;
    }
  }
  ns = samples[TL__EINSUM_SPLIT_SAMPLES / 2];
  if (ns < 1) ns = 1;
  atomic_store_explicit(&split_ns, ns, memory_order_relaxed);
  return (double)ns * 1e-9;
}

int tl__einsum_step_team(tl_exec *exec, int team, double flops, double bytes) {
  if (team <= 1) return 1;
  double serial = flops / TL__EINSUM_FLOP_RATE + bytes / TL__EINSUM_BYTE_RATE;
  /* Far below any split's cost: decide without measuring. */
  if (serial < 2e-6) return 1;
  double saving = serial * (1.0 - 1.0 / (double)team);
  return saving >= TL__EINSUM_SPLIT_MARGIN * measured_split_seconds(exec, team) ? team : 1;
}
