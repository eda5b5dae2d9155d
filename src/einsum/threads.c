/* src/einsum/threads.c: whether one einsum step should split over the surface's team.
 *
 * A step's one-thread time is estimated from its floating-point operations and the bytes it
 * moves (TL__EINSUM_FLOP_RATE, TL__EINSUM_BYTE_RATE per thread: rates a fast core reaches,
 * so the estimate is short and a doubtful step stays on one thread). Splitting it over
 * `team` threads saves t * (1 - 1/team) and costs one split of the pool plus what a split
 * step loses (a GEMM cut into blocks of C packs its shared operand once per block, and each
 * block runs at a smaller block's rate): the split pays when the saving is at least
 * TL__EINSUM_SPLIT_MARGIN splits and at least TL__EINSUM_MIN_SAVING, and the step has
 * at least TL__EINSUM_MIN_PARTS independent parts per thread (a one-element contraction
 * cannot be cut). The cost of a split is measured, not assumed: an empty parallel loop over
 * the team at each of the process's first TL__EINSUM_SPLIT_SAMPLES decisions that need it,
 * then their median for good. It is a few microseconds with spinning workers and tens when
 * they sleep.
 *
 * This is the one place that decides; the Python module's einsum goes through it.
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

/* One AVX-512 core ran the matrix chain's and the language models' GEMM steps at 63-93
 * real GFlop/s and a 2048^2 Hadamard product at 39 GB/s (benches/results, 2026-12-04);
 * an older or narrower core is slower, which only keeps more steps on one thread. */
#define TL__EINSUM_FLOP_RATE 8.0e10 /* real flops per second per thread */
#define TL__EINSUM_BYTE_RATE 3.0e10 /* bytes per second per thread */
#define TL__EINSUM_SPLIT_MARGIN 3.0
/* Seconds a split must save whatever the measured split cost: the f64 matrix chain's
 * GEMMs (120 x 80..400 x 80..400, 75-180 us on one thread) ran 1.36x slower split in two
 * (quiet window, 2026-12-04), its c128 GEMMs (225-700 us) 0.82x. A real GEMM must save
 * more: at 1e-4 one f64 step of the chain still split (160 x 310 x 140, estimated saving
 * 100 us); alone it ran 0.94x of one thread, but inside the network the whole call took
 * 1.09-1.26x the one-thread time (2026-12-05; without that split, 1.03x). A real GEMM's
 * blocks go to the provider, each packing the shared operand again; the complex ones run
 * tenlane's kernels, whose steps of the same size gained (the c128 language model
 * b256_h128: 0.67x at 1e-4, 0.99x when held to 2.5e-4). */
#define TL__EINSUM_MIN_SAVING 1.0e-4
#define TL__EINSUM_MIN_SAVING_REAL_GEMM 2.5e-4
#define TL__EINSUM_MIN_PARTS 16.0
#define TL__EINSUM_SPLIT_SAMPLES 7

/* The cost of a split, sampled once per decision that needs it until SPLIT_SAMPLES samples
 * are in, then fixed at their median. Samples spread over the process's first decisions, not
 * taken back to back: on a VM one stall of the other vCPU (seen: 240 us, every one of seven
 * back-to-back samples inside it) had decided for the whole process that no step pays a
 * split. Each slot is written once; 0 means not yet taken. */
static atomic_llong split_sample[TL__EINSUM_SPLIT_SAMPLES];
static atomic_int split_claimed; /* slots claimed so far (may pass SPLIT_SAMPLES) */
static atomic_llong split_ns;    /* the median of a full set; 0 until then */

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void nothing(size_t begin, size_t end, int worker_index, void *arg) {
  (void)begin, (void)end, (void)worker_index, (void)arg;
}

/* Nanoseconds of one empty parallel loop over the team (at least 1), or 0 if it failed. */
static long long sample_split(tl_exec *exec, int team) {
  int64_t start = now_ns();
  if (tl__exec_parallel_for(exec, (size_t)team, 1, nothing, NULL) != TL_OK) return 0;
  int64_t ns = now_ns() - start;
  return ns > 0 ? (long long)ns : 1;
}

static double measured_split_seconds(tl_exec *exec, int team) {
  long long ns = atomic_load_explicit(&split_ns, memory_order_relaxed);
  if (ns > 0) return (double)ns * 1e-9;
  long long own = 0;
  int slot = atomic_fetch_add_explicit(&split_claimed, 1, memory_order_relaxed);
  if (slot < TL__EINSUM_SPLIT_SAMPLES) {
    own = sample_split(exec, team);
    if (own == 0) return 1.0; /* the pool refused: no split */
    atomic_store_explicit(&split_sample[slot], own, memory_order_relaxed);
  }
  /* The median of the samples in so far (other threads may still be taking theirs). */
  long long got[TL__EINSUM_SPLIT_SAMPLES];
  int count = 0;
  for (int s = 0; s < TL__EINSUM_SPLIT_SAMPLES; s++) {
    long long v = atomic_load_explicit(&split_sample[s], memory_order_relaxed);
    if (v > 0) got[count++] = v;
  }
  if (count == 0) { /* every slot claimed, none written yet: decide on a sample of our own */
    own = sample_split(exec, team);
    return own == 0 ? 1.0 : (double)own * 1e-9;
  }
  for (int i = 1; i < count; i++)
    for (int j = i; j > 0 && got[j] < got[j - 1]; j--) {
      long long t = got[j];
      got[j] = got[j - 1];
      got[j - 1] = t;
    }
  ns = got[count / 2];
  if (count == TL__EINSUM_SPLIT_SAMPLES) atomic_store_explicit(&split_ns, ns, memory_order_relaxed);
  return (double)ns * 1e-9;
}

double tl__einsum_split_seconds(tl_exec *exec, int team) {
  return measured_split_seconds(exec, team);
}

int tl__einsum_step_team(tl_exec *exec, int team, double flops, double bytes, double parts,
                         int real_gemm) {
  if (team <= 1) return 1;
  if (parts < TL__EINSUM_MIN_PARTS * (double)team) return 1;
  double serial = flops / TL__EINSUM_FLOP_RATE + bytes / TL__EINSUM_BYTE_RATE;
  double saving = serial * (1.0 - 1.0 / (double)team);
  /* Below the least saving that pays: decide without measuring. */
  if (saving < (real_gemm ? TL__EINSUM_MIN_SAVING_REAL_GEMM : TL__EINSUM_MIN_SAVING)) return 1;
  return saving >= TL__EINSUM_SPLIT_MARGIN * measured_split_seconds(exec, team) ? team : 1;
}
