/* src/kernels/gemm_batch_runs.c: how many consecutive entries of a batch of small GEMMs one
 * worker takes at a time when the batched runner (gemm.c) spreads the batch over a team.
 *
 * A stacked product such as einsum's "bij,bjk->bik" with b = 20,000 and 5 x 5 matrices is
 * 20,000 provider calls of 20-60 ns each (tl__gemm_serial; small real shapes run the hand
 * kernel, tiny complex ones gemm_small_complex.c). Handed to the pool one entry per chunk,
 * every entry also paid the chunk's claim and the workers' contention on it, about its
 * arithmetic again or more: (20000, 1, k) @ (20000, k, k) for k = 4..8 on two threads took
 * 1.7-4x the time of runs of entries (0.8-7.7 ms against 0.5-4.0 ms, f64 and c128, one
 * probe run on a shared 2-core machine, where one thread took 0.45-1.8 ms); issue 33 saw
 * 6.3 ms at k = 5 against 0.59 ms at k = 4, which stayed below the split's threshold. A run of
 * entries per chunk makes that cost once per run. On one thread the runner takes the same runs
 * (its cancellation check and its chunk call once per run rather than once per entry), and a
 * run of a stack that gemm_batch_small.c takes is one call of that kernel. Each entry is still
 * computed with the bits a provider call of its shape and strides gives, so its bits do not
 * depend on the team or on the run it falls in.
 *
 * Thread rules: no state. */
#include "kernels.h"

/* Work per run: about this many multiply-adds (a few microseconds of arithmetic), so the
 * claim of a chunk is a small part of it. */
#define RUN_MADDS (16 * 1024)
/* Runs per thread at least, so unequal threads still finish together. */
#define RUNS_PER_THREAD 4

size_t tl__gemm_batch_run_length(const tl__gemm_batch *g, int team) {
  const int64_t madds = g->m * g->n * (g->k > 0 ? g->k : 1);
  if (madds >= RUN_MADDS || g->batches <= 1) return 1;
  if (team < 1) team = 1;
  int64_t run = RUN_MADDS / madds;
  const int64_t cap = g->batches / ((int64_t)team * RUNS_PER_THREAD);
  if (run > cap) run = cap;
  return run > 1 ? (size_t)run : 1;
}
