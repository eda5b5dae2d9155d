/* src/kernels/contract_vertical.c: contractions whose fastest axis is a batch label, summed
 * row by row across that axis (einsum ij,ij->j, ijk,ijk->k, acbd,acd->bd).
 *
 * With the batch label f at unit stride in a, b and c, each entry of the batched product is
 * a dot (or a matrix-vector product) whose elements lie f's extent apart: the GEMM route's
 * entries read a and b a few elements per cache line and per page. Here the entries are
 * taken side by side instead: for a block of f's indices, c's block is a * b over the first
 * summed index, then plus a * b over each next one, so a and b are read along their unit
 * stride, once, and the block of c stays in the first-level cache while the summed indices
 * go by.
 *
 * Bits: each element of c is the products over the summed indices added in the odometer's
 * order (the first summed label fastest) from the first product, each product and each sum
 * rounded in the dtype (complex: (ar br - ai bi, ar bi + ai br) as the elementwise product
 * rounds it, then each part added). No fused multiply-add (ISO C: no contraction), so every
 * instruction-set level gives the same bits; a block's elements do not depend on the block's
 * bounds or on which thread computed it.
 *
 * Thread rules: tl__vertical_run splits blocks over the surface's team and reads the lane's
 * cancellation inside long sums; pure otherwise. */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "base/isa.h"
#include "exec/exec.h"

#define TL__VERTICAL_REAL(NAME, T)                                                  \
  static inline void NAME(int64_t n, int first, T *restrict c, const T *restrict a, \
                          const T *restrict b) {                                    \
    if (first) {                                                                    \
      for (int64_t i = 0; i < n; i++) c[i] = a[i] * b[i];                           \
    } else {                                                                        \
      for (int64_t i = 0; i < n; i++) c[i] = c[i] + a[i] * b[i];                    \
    }                                                                               \
  }

#define TL__VERTICAL_COMPLEX(NAME, T)                                               \
  static inline void NAME(int64_t n, int first, T *restrict c, const T *restrict a, \
                          const T *restrict b) {                                    \
    for (int64_t i = 0; i < n; i++) {                                               \
      const T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];   \
      const T re = ar * br - ai * bi, im = ar * bi + ai * br;                       \
      c[2 * i] = first ? re : c[2 * i] + re;                                        \
      c[2 * i + 1] = first ? im : c[2 * i + 1] + im;                                \
    }                                                                               \
  }

TL__VERTICAL_REAL(row_f32, float)
TL__VERTICAL_REAL(row_f64, double)
TL__VERTICAL_COMPLEX(row_c64, float)
TL__VERTICAL_COMPLEX(row_c128, double)

typedef struct vertical_job {
  const tl__vertical *v;
  int64_t block, blocks;     /* f's indices per block; blocks along f */
  int64_t inners, run, runs; /* inner indices; per block; blocks over them */
  int64_t es;
  const tl_exec *exec; /* read for a cancellation request every CANCEL_EVERY summed indices */
  atomic_int stopped;  /* 1: a block stopped at such a request (c partly written) */
} vertical_job;

/* A block's sum cannot be cut (its order is its bits), and a summed label can be long (a
 * broadcast view of 2^36 rows reads no memory): the lane's cancellation is read inside it. */
#define CANCEL_EVERY 1024

/* Offsets (elements) of index `at` of the odometer over `rank` axes, first fastest. */
static void start_at(int rank, const int64_t *shape, const int64_t *const *strides, int ops,
                     int64_t at, int64_t *idx, int64_t *off) {
  for (int o = 0; o < ops; o++) off[o] = 0;
  for (int r = 0; r < rank; r++) {
    idx[r] = at % shape[r];
    at /= shape[r];
    for (int o = 0; o < ops; o++) off[o] += idx[r] * strides[o][r];
  }
}

/* One odometer step over `rank` axes (first fastest) for `ops` offsets. */
static inline void step(int rank, const int64_t *shape, const int64_t *const *strides, int ops,
                        int64_t *idx, int64_t *off) {
  for (int r = 0; r < rank; r++) {
    for (int o = 0; o < ops; o++) off[o] += strides[o][r];
    if (++idx[r] < shape[r]) return;
    for (int o = 0; o < ops; o++) off[o] -= strides[o][r] * shape[r];
    idx[r] = 0;
  }
}

/* The blocks [begin, end) of one dtype: ROW its row kernel, T its part type, ATTR the
 * instruction set it is built for (the rows' loops are vectorized for it; no FMA either way). */
#define TL__VERTICAL_CHUNK(NAME, ROW, T, ATTR)                                            \
  static ATTR void NAME(size_t begin, size_t end, int worker_index, void *arg) {          \
    (void)worker_index;                                                                   \
    const vertical_job *j = arg;                                                          \
    const tl__vertical *v = j->v;                                                         \
    const int64_t *outer_strides[3] = {v->outer_a, v->outer_b, v->outer_c};               \
    const int64_t *inner_strides[3] = {v->inner_a, v->inner_b, v->inner_c};               \
    const int64_t *sum_strides[2] = {v->sum_a, v->sum_b};                                 \
    const int64_t parts = j->es / (int64_t)sizeof(T); /* T per element */                 \
    for (size_t item = begin; item < end; item++) {                                       \
      const int64_t per_outer = j->blocks * j->runs, outer = (int64_t)item / per_outer;   \
      const int64_t blk = (int64_t)item % per_outer % j->blocks,                          \
                    i0 = (int64_t)item % per_outer / j->blocks * j->run;                  \
      const int64_t f0 = blk * j->block, n = v->f - f0 < j->block ? v->f - f0 : j->block; \
      const int64_t count = j->inners - i0 < j->run ? j->inners - i0 : j->run;            \
      int64_t oidx[TL_MAX_RANK], base[3], iidx0[TL_MAX_RANK], ioff0[3];                   \
      start_at(v->outer_rank, v->outer_shape, outer_strides, 3, outer, oidx, base);       \
      start_at(v->inner_rank, v->inner_shape, inner_strides, 3, i0, iidx0, ioff0);        \
      T *c = (T *)(void *)v->c + (base[2] + ioff0[2] + f0) * parts;                       \
      const T *a = (const T *)(const void *)v->a + (base[0] + ioff0[0] + f0) * parts;     \
      const T *b = (const T *)(const void *)v->b + (base[1] + ioff0[1] + f0) * parts;     \
      int64_t kidx[TL_MAX_RANK] = {0}, koff[2] = {0, 0};                                  \
      for (int64_t k = 0; k < v->sums; k++) {                                             \
        if (k % CANCEL_EVERY == CANCEL_EVERY - 1 && tl__exec_cancelled(j->exec)) {        \
          atomic_store(&((vertical_job *)arg)->stopped, 1);                               \
          return;                                                                         \
        }                                                                                 \
        if (count == 1) {                                                                 \
          ROW(n, k == 0, c, a + koff[0] * parts, b + koff[1] * parts);                    \
        } else { /* the run's inner indices, from i0's (offsets relative to it) */        \
          int64_t iidx[TL_MAX_RANK], ioff[3] = {0, 0, 0};                                 \
          memcpy(iidx, iidx0, (size_t)v->inner_rank * sizeof iidx[0]);                    \
          for (int64_t i = 0; i < count; i++) {                                           \
            ROW(n, k == 0, c + ioff[2] * parts, a + (koff[0] + ioff[0]) * parts,          \
                b + (koff[1] + ioff[1]) * parts);                                         \
            step(v->inner_rank, v->inner_shape, inner_strides, 3, iidx, ioff);            \
          }                                                                               \
        }                                                                                 \
        step(v->sum_rank, v->sum_shape, sum_strides, 2, kidx, koff);                      \
      }                                                                                   \
    }                                                                                     \
  }

#define TL__BASELINE
TL__VERTICAL_CHUNK(chunk_f32, row_f32, float, TL__BASELINE)
TL__VERTICAL_CHUNK(chunk_f64, row_f64, double, TL__BASELINE)
TL__VERTICAL_CHUNK(chunk_c64, row_c64, float, TL__BASELINE)
TL__VERTICAL_CHUNK(chunk_c128, row_c128, double, TL__BASELINE)
#if TL_X86_KERNELS
#define TL__AVX2 __attribute__((target("avx2")))
TL__VERTICAL_CHUNK(chunk_f32_avx2, row_f32, float, TL__AVX2)
TL__VERTICAL_CHUNK(chunk_f64_avx2, row_f64, double, TL__AVX2)
TL__VERTICAL_CHUNK(chunk_c64_avx2, row_c64, float, TL__AVX2)
TL__VERTICAL_CHUNK(chunk_c128_avx2, row_c128, double, TL__AVX2)
#endif

typedef void chunk_fn(size_t begin, size_t end, int worker_index, void *arg);

static chunk_fn *chunk_for(tl_dtype dtype) {
#if TL_X86_KERNELS
  if (tl__isa_level() >= TL__ISA_AVX2) {
    return dtype == TL_F32   ? chunk_f32_avx2
           : dtype == TL_F64 ? chunk_f64_avx2
           : dtype == TL_C64 ? chunk_c64_avx2
                             : chunk_c128_avx2;
  }
#endif
  return dtype == TL_F32   ? chunk_f32
         : dtype == TL_F64 ? chunk_f64
         : dtype == TL_C64 ? chunk_c64
                           : chunk_c128;
}

tl_status tl__vertical_run(tl_exec *exec, int team, const tl__vertical *v) {
  vertical_job j = {v, 0, 0, 1, 1, 1, (int64_t)tl_dtype_size(v->dtype), exec, 0};
  j.block = TL__VERTICAL_BLOCK_BYTES / j.es;
  if (j.block > v->f) j.block = v->f;
  j.blocks = (v->f + j.block - 1) / j.block;
  int64_t outers = 1;
  for (int r = 0; r < v->outer_rank; r++) outers *= v->outer_shape[r];
  for (int r = 0; r < v->inner_rank; r++) j.inners *= v->inner_shape[r];
  /* runs of inner indices within TL__VERTICAL_INNER_BYTES of c, cut equal */
  int64_t fit = TL__VERTICAL_INNER_BYTES / (j.block * j.es);
  if (fit < 1) fit = 1;
  j.runs = j.inners == 0 ? 1 : (j.inners + fit - 1) / fit;
  /* a team gets at least a block each, where the inner indices allow */
  if (team > 1 && outers * j.blocks * j.runs < team) {
    const int64_t want = (team + outers * j.blocks - 1) / (outers * j.blocks);
    j.runs = want < j.inners ? want : j.inners;
  }
  j.run = j.inners == 0 ? 1 : (j.inners + j.runs - 1) / j.runs;
  /* c's elements bound outers * blocks * runs */
  const size_t items = (size_t)(outers * j.blocks * j.runs);
  const int parallel = team > 1 && items >= 2 &&
                       (double)v->sums * (double)v->f * (double)outers * (double)j.inners >=
                           TL__PARALLEL_MIN_ELEMENTS;
  tl_status status = tl__exec_run_chunks(exec, parallel, items, 1, chunk_for(v->dtype), &j,
                                         "summing a contraction across its batch axis");
  if (status == TL_OK && atomic_load(&j.stopped))
    return tl__fail(TL_E_CANCELLED,
                    "cancelled while summing a contraction across its batch "
                    "axis (%lld summed indices per element; output partly written)",
                    (long long)v->sums);
  return status;
}
