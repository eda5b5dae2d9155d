/* src/kernels/small_gemm.c: the small real GEMM path's reach, and the call into the hand
 * kernel of small_gemm_core.c.
 *
 * libxsmm's JIT kernels are the fastest for small shapes once they exist (8^3 in ~11 ns,
 * 64^3 at ~140 GFLOP/s on this machine) but generating one costs 10-15 us on a quiet
 * machine and several times that on a loaded one, while BLIS costs 1.6 us of overhead
 * even at 4^3. A stream of shapes that each appear once or twice (an MPS sweep growing its
 * bonds, a fan-out whose ranks differ per patch) would pay a JIT per call. The hand kernel
 * never generates code: its first call costs what its later calls cost, at 0.9-1.15x
 * libxsmm's time from 16^3 up on Zen 2 (small_gemm_core.c has the numbers).
 *
 * The kernel a call runs must be a function of its shape alone. The hand kernel and
 * libxsmm's kernels round differently for some shapes (libxsmm splits the k sum for a few
 * m and n; a sweep over m, n <= 64 found 5034 of 40960 shapes that differ), so an earlier
 * choice that depended on how often this thread had seen the shape made the same call give
 * other bits on another lane, or later on the same one: tl_map results then depended on
 * which lane ran an item. So every call in the reach (64^3 multiply-adds) runs the hand
 * kernel. Complex dtypes are not handled here.
 *
 * Thread rules: no state; nothing here allocates or fails. */
#include "kernels.h"

/* The reach (the hand kernel's packed block is k x 16 elements of the stack). */
#define SMALL_MAX_MNK (64 * 64 * 64)
#define SMALL_MAX_EXTENT 4096

int tl__small_gemm_fits(tl_dtype dtype, int64_t m, int64_t n, int64_t k) {
  if (dtype != TL_F64 && dtype != TL_F32) return 0;
  if (m > SMALL_MAX_EXTENT || n > SMALL_MAX_EXTENT || k > TL__SMALL_GEMM_MAX_K) return 0;
  return m * n * k <= SMALL_MAX_MNK; /* each bounded above: no overflow */
}

int tl__small_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc) {
  if (!tl__small_gemm_fits(dtype, m, n, k)) return 0;
  if (m == 0 || n == 0) return 1;
  /* The hand kernel writes whole columns of C fastest: give it C's unit stride as rows
   * (C^T = B^T A^T). */
  if (csc == 1 && rsc != 1 && n > 1)
    tl__small_gemm_kernel(-1, dtype, n, m, k, alpha, b, csb, rsb, a, csa, rsa, beta, c, csc, rsc);
  else
    tl__small_gemm_kernel(-1, dtype, m, n, k, alpha, a, rsa, csa, b, rsb, csb, beta, c, rsc, csc);
  return 1;
}
