/* src/kernels/reduce_core.c: the reduction core: accumulate runs of the input in double,
 * walk an item's reduced rows, store and combine accumulators (see reduce_core.h). Functions
 * of the plan: no allocation, no messages; of the surface they read only its cancellation
 * flag. */
#include <assert.h>
#include <complex.h>
#include <math.h>
#include <string.h>

#include "reduce_core.h"

#include "base/base.h"
#include "base/isa.h"
#include "exec/exec.h"

_Static_assert(TL__REDUCE_CHECK_ELEMENTS % TL__SUM16_PIECE_REALS == 0,
               "a strided run cut at each look at the flag must keep its sixteen sums' bits");

/* 1 once the plan's call should stop: the surface was cancelled (raising *stopped for the
 * other loops and threads) or another loop saw it first. */
static int stop_now(const tl__reduce_plan *pl) {
  if (atomic_load_explicit(pl->stopped, memory_order_relaxed)) return 1;
  if (pl->exec == NULL || !tl__exec_cancelled(pl->exec)) return 0;
  atomic_store_explicit(pl->stopped, 1, memory_order_relaxed);
  return 1;
}

/* How many rows of row_elements elements a row walk reads between two looks at the flag. */
static int64_t rows_per_check(int64_t row_elements) {
  if (row_elements >= TL__REDUCE_CHECK_ELEMENTS) return 1;
  return TL__REDUCE_CHECK_ELEMENTS / (row_elements > 0 ? row_elements : 1);
}

static double identity(tl_reduce_op op) {
  switch (op) {
    case TL_REDUCE_PROD:
      return 1.0;
    case TL_REDUCE_MAX:
      return -INFINITY;
    case TL_REDUCE_MIN:
      return INFINITY;
    default:
      return 0.0;
  }
}

static inline double max_nan(double acc, double v) { return (v > acc || v != v) ? v : acc; }
static inline double min_nan(double acc, double v) { return (v < acc || v != v) ? v : acc; }

/* Load element i of a run as (re, im). */
static inline void load(tl_dtype dtype, const char *p, double *re, double *im) {
  switch (dtype) {
    case TL_F32:
      *re = *(const float *)p, *im = 0;
      break;
    case TL_F64:
      *re = *(const double *)p, *im = 0;
      break;
    case TL_C64:
      *re = ((const float *)p)[0], *im = ((const float *)p)[1];
      break;
    default:
      *re = ((const double *)p)[0], *im = ((const double *)p)[1];
      break;
  }
}

/* Sum of squares of x[0 .. n-1] in double (four running sums). */
#define TL__SUM_SQUARES(NAME, T)                                                \
  static double NAME(const T *x, int64_t n) {                                   \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                      \
    int64_t i = 0;                                                              \
    for (; i + 4 <= n; i += 4)                                                  \
      s0 += (double)x[i] * x[i], s1 += (double)x[i + 1] * x[i + 1],             \
          s2 += (double)x[i + 2] * x[i + 2], s3 += (double)x[i + 3] * x[i + 3]; \
    for (; i < n; i++) s0 += (double)x[i] * x[i];                               \
    return (s0 + s1) + (s2 + s3);                                               \
  }
TL__SUM_SQUARES(sum_squares, double)
TL__SUM_SQUARES(sum_squares_float, float)

/* Unit-stride complex sums and norms of a run into acc[0..1]; 0 when not this case. The
 * pairs' parts are summed as one run of 2n reals: even accumulators hold real parts. */
static int complex_run_into_scalar(const tl__reduce_plan *pl, const char *p, int64_t n,
                                   double *acc) {
  if (pl->op == TL_REDUCE_SUM) {
    double re, im;
    if (pl->dtype == TL_C128)
      tl__sum16_f64(pl->isa, pl->prefetch, (const double *)p, 2 * n, 1, &re, &im);
    else
      tl__sum16_f32(pl->isa, pl->prefetch, (const float *)p, 2 * n, 1, &re, &im);
    acc[0] += re;
    acc[1] += im;
    return 1;
  }
  if (pl->op == TL_REDUCE_NORM2) { /* |z|^2 = re^2 + im^2 */
    acc[0] += pl->dtype == TL_C128 ? sum_squares((const double *)p, 2 * n)
                                   : sum_squares_float((const float *)p, 2 * n);
    return 1;
  }
  return 0;
}

/* Reduce a run of n elements (stride s elements) into acc[0..1]. */
static void run_into_scalar(const tl__reduce_plan *pl, const char *p, int64_t n, int64_t s,
                            double *acc) {
  const tl_reduce_op op = pl->op;
  if ((pl->dtype == TL_C128 || pl->dtype == TL_C64) && s == 1 &&
      complex_run_into_scalar(pl, p, n, acc))
    return;
  if (op == TL_REDUCE_SUM && (pl->dtype == TL_F64 || pl->dtype == TL_F32) && s == 1) {
    double re, im;
    if (pl->dtype == TL_F64)
      tl__sum16_f64(pl->isa, pl->prefetch, (const double *)p, n, 0, &re, &im);
    else
      tl__sum16_f32(pl->isa, pl->prefetch, (const float *)p, n, 0, &re, &im);
    acc[0] += re;
    return;
  }
  if (op == TL_REDUCE_NORM2 && pl->dtype == TL_F64 && s == 1) {
    acc[0] += sum_squares((const double *)p, n);
    return;
  }
  /* A long strided sum: the unit-stride sums' sixteen chains and order (one chain of
   * dependent additions took 2.5x numpy's time on every third of 3e6 doubles). Short ones
   * keep the in-order loop below. */
  const int doubles = pl->dtype == TL_F64 || pl->dtype == TL_C128;
  const int floats = pl->dtype == TL_F32 || pl->dtype == TL_C64;
  if (op == TL_REDUCE_SUM && n > TL__REDUCE_SHORT_RUN && (doubles || floats)) {
    const int cplx = pl->dtype == TL_C128 || pl->dtype == TL_C64;
    const int64_t step = cplx ? 2 * s : s; /* in reals */
    double sums[16] = {0}, re, im;
    for (int64_t done = 0; done < n; done += TL__REDUCE_CHECK_ELEMENTS) {
      if (done > 0 && stop_now(pl)) break;
      const int64_t len =
          n - done < TL__REDUCE_CHECK_ELEMENTS ? n - done : TL__REDUCE_CHECK_ELEMENTS;
      if (doubles)
        tl__sum16_strided_add_f64((const double *)p + done * step, len, step, cplx, sums);
      else
        tl__sum16_strided_add_f32((const float *)p + done * step, len, step, cplx, sums);
    }
    tl__sum16_total(sums, cplx, &re, &im);
    acc[0] += re;
    acc[1] += im;
    return;
  }
  const int64_t step = s * pl->xes;
  double a0 = acc[0], a1 = acc[1];
  for (int64_t i0 = 0; i0 < n; i0 += TL__REDUCE_CHECK_ELEMENTS) {
    if (i0 > 0 && stop_now(pl)) break;
    const int64_t i1 = n - i0 < TL__REDUCE_CHECK_ELEMENTS ? n : i0 + TL__REDUCE_CHECK_ELEMENTS;
    for (int64_t i = i0; i < i1; i++, p += step) {
      double re, im;
      load(pl->dtype, p, &re, &im);
      switch (op) {
        case TL_REDUCE_SUM:
          a0 += re, a1 += im;
          break;
        case TL_REDUCE_NORM2:
          a0 += re * re + im * im;
          break;
        case TL_REDUCE_PROD: {
          double r = a0 * re - a1 * im, m = a0 * im + a1 * re;
          a0 = r, a1 = m;
          break;
        }
        case TL_REDUCE_MAX:
          a0 = max_nan(a0, re);
          break;
        case TL_REDUCE_MIN:
          a0 = min_nan(a0, re);
          break;
      }
    }
  }
  acc[0] = a0, acc[1] = a1;
}

/* Unit-stride complex norms of n elements (pairs of T) into their accumulators, one real
 * per element. */
#define TL__COMPLEX_NORMS_VECTOR(NAME, T)                                        \
  static void NAME(const T *restrict x, int64_t n, double *restrict a) {         \
    for (int64_t i = 0; i < n; i++)                                              \
      a[i] += (double)x[2 * i] * x[2 * i] + (double)x[2 * i + 1] * x[2 * i + 1]; \
  }
TL__COMPLEX_NORMS_VECTOR(complex_norms_into_vector_c128, double)
TL__COMPLEX_NORMS_VECTOR(complex_norms_into_vector_c64, float)

/* acc[i] op= x[i] for a run of n elements; acc holds reals (n doubles) or complex (2n). */
static void run_into_vector(const tl__reduce_plan *pl, const char *p, int64_t n, int64_t s,
                            double *acc) {
  const tl_reduce_op op = pl->op;
  /* Sums (complex ones as runs of 2n reals): one double addition per element at the
   * widest instruction set (reduce_sums.c). */
  if (s == 1 && op == TL_REDUCE_SUM) {
    const int64_t reals = pl->complex_in ? 2 * n : n;
    if (pl->dtype == TL_F64 || pl->dtype == TL_C128) {
      tl__add_run_f64(pl->isa, (const double *)p, reals, acc);
      return;
    }
    if (pl->dtype == TL_F32 || pl->dtype == TL_C64) {
      tl__add_run_f32(pl->isa, (const float *)p, reals, acc);
      return;
    }
  }
  if (pl->dtype == TL_F64 && s == 1 && op == TL_REDUCE_NORM2) {
    const double *restrict x = (const double *)p;
    double *restrict a = acc;
    for (int64_t i = 0; i < n; i++) a[i] += x[i] * x[i];
    return;
  }
  if (pl->dtype == TL_C128 && s == 1 && op == TL_REDUCE_NORM2) {
    complex_norms_into_vector_c128((const double *)p, n, acc);
    return;
  }
  if (pl->dtype == TL_C64 && s == 1 && op == TL_REDUCE_NORM2) {
    complex_norms_into_vector_c64((const float *)p, n, acc);
    return;
  }
  const int64_t step = s * pl->xes;
  for (int64_t i = 0; i < n; i++, p += step) {
    double re, im;
    load(pl->dtype, p, &re, &im);
    if (pl->complex_in) {
      double *a = acc + 2 * i;
      switch (op) {
        case TL_REDUCE_SUM:
          a[0] += re, a[1] += im;
          break;
        case TL_REDUCE_NORM2:
          acc[i] += re * re + im * im;
          break; /* real accumulators */
        case TL_REDUCE_PROD: {
          double r = a[0] * re - a[1] * im, m = a[0] * im + a[1] * re;
          a[0] = r, a[1] = m;
          break;
        }
        default:
          break;
      }
    } else {
      switch (op) {
        case TL_REDUCE_SUM:
          acc[i] += re;
          break;
        case TL_REDUCE_NORM2:
          acc[i] += re * re;
          break;
        case TL_REDUCE_PROD:
          acc[i] *= re;
          break;
        case TL_REDUCE_MAX:
          acc[i] = max_nan(acc[i], re);
          break;
        case TL_REDUCE_MIN:
          acc[i] = min_nan(acc[i], re);
          break;
      }
    }
  }
}

/* Complex accumulators are pairs except for NORM2, whose accumulators are real. */
static int acc_width(const tl__reduce_plan *pl) {
  return pl->complex_in && pl->op != TL_REDUCE_NORM2 ? 2 : 1;
}

static void merge(tl_reduce_op op, double *into, const double *from, int width) {
  switch (op) {
    case TL_REDUCE_SUM:
    case TL_REDUCE_NORM2:
      into[0] += from[0];
      if (width == 2) into[1] += from[1];
      break;
    case TL_REDUCE_PROD:
      if (width == 2) {
        double r = into[0] * from[0] - into[1] * from[1];
        double m = into[0] * from[1] + into[1] * from[0];
        into[0] = r, into[1] = m;
      } else {
        into[0] *= from[0];
      }
      break;
    case TL_REDUCE_MAX:
      into[0] = max_nan(into[0], from[0]);
      break;
    case TL_REDUCE_MIN:
      into[0] = min_nan(into[0], from[0]);
      break;
  }
}

static void store(const tl__reduce_plan *pl, const double *acc, int width, char *dst) {
  double re = acc[0], im = width == 2 ? acc[1] : 0.0;
  if (pl->op == TL_REDUCE_NORM2) re = sqrt(re), im = 0.0;
  switch (pl->out_dtype) {
    case TL_F32:
      *(float *)dst = (float)re;
      break;
    case TL_F64:
      *(double *)dst = re;
      break;
    case TL_C64:
      ((float *)dst)[0] = (float)re, ((float *)dst)[1] = (float)im;
      break;
    default:
      ((double *)dst)[0] = re, ((double *)dst)[1] = im;
      break;
  }
}

/* Walk reduced rows [r0, r1) over axes [first, nr), running BODY with row_ptr at each row;
 * every rows_per_check(ROW_ELEMENTS) rows it looks at the flag and quits once it is up. */
#define WALK_ROWS(PL, FIRST, BASE, R0, R1, ROW_ELEMENTS, BODY) \
  do {                                                         \
    int64_t idx_[TL_MAX_RANK];                                 \
    int64_t rem_ = (R0);                                       \
    const char *rp_ = (BASE);                                  \
    const int64_t every_ = rows_per_check(ROW_ELEMENTS);       \
    int64_t until_ = every_;                                   \
    for (int k_ = (FIRST); k_ < (PL)->nr; k_++) {              \
      idx_[k_] = rem_ % (PL)->re[k_];                          \
      rem_ /= (PL)->re[k_];                                    \
      rp_ += idx_[k_] * (PL)->rx[k_] * (PL)->xes;              \
    }                                                          \
    for (int64_t row_ = (R0); row_ < (R1); row_++) {           \
      if (--until_ == 0) {                                     \
        if (stop_now(PL)) break;                               \
        until_ = every_;                                       \
      }                                                        \
      const char *row_ptr = rp_;                               \
      BODY;                                                    \
      for (int k_ = (FIRST); k_ < (PL)->nr; k_++) {            \
        rp_ += (PL)->rx[k_] * (PL)->xes;                       \
        if (++idx_[k_] < (PL)->re[k_]) break;                  \
        rp_ -= (PL)->re[k_] * (PL)->rx[k_] * (PL)->xes;        \
        idx_[k_] = 0;                                          \
      }                                                        \
    }                                                          \
  } while (0)

/* The input and output of item over kept axes [first_kept, nk) (first fastest); with idx,
 * its index along each of those axes too. */
static void item_pointers(const tl__reduce_plan *pl, int64_t item, int first_kept, int64_t *idx,
                          const char **xp, char **op) {
  const char *x = pl->xbase;
  char *o = pl->obase;
  for (int k = first_kept; k < pl->nk; k++) {
    int64_t i = item % pl->ke[k];
    item /= pl->ke[k];
    x += i * pl->kx[k] * pl->xes;
    o += i * pl->ko[k] * pl->oes;
    if (idx) idx[k] = i;
  }
  *xp = x;
  *op = o;
}

/* Outer mode: the input and output of item (a chunk along kept axis 0 times the other kept
 * axes) in *xp and *op; returns the chunk's length. */
static int64_t chunk_pointers(const tl__reduce_plan *pl, int64_t item, const char **xp, char **op) {
  int64_t chunk = item % pl->chunks, rest = item / pl->chunks;
  item_pointers(pl, rest, 1, NULL, xp, op);
  int64_t c0 = chunk * CHUNK;
  *xp += c0 * pl->kx[0] * pl->xes;
  *op += c0 * pl->ko[0] * pl->oes;
  return pl->ke[0] - c0 < CHUNK ? pl->ke[0] - c0 : CHUNK;
}

/* Inner mode: reduce the rows [r0, r1) of the item whose input starts at x into acc. */
static void inner_rows(const tl__reduce_plan *pl, const char *x, int64_t r0, int64_t r1,
                       double *acc) {
  const int64_t n0 = pl->nr > 0 ? pl->re[0] : 1, s0 = pl->nr > 0 ? pl->rx[0] : 1;
  if (pl->nr > 0)
    WALK_ROWS(pl, 1, x, r0, r1, n0, run_into_scalar(pl, row_ptr, n0, s0, acc));
  else if (!pl->empty && r0 == 0)
    run_into_scalar(pl, x, 1, 1, acc); /* every reduced axis has extent 1 */
}

/* Sums of short unit-stride runs (TL__REDUCE_SHORT_RUN, TL__REDUCE_SHORT_BYTES:
 * reduce_core.h), added in order in double (tl__short_sums_*, eight or sixteen rows at a
 * time at AVX-512): for a few elements the sum kernels' setup and lane sums cost more than
 * the additions (a 65536 x 4 f64 row sum took 14 ns a row through them, three times numpy's
 * time; rows of 24 and 32 still ran at 2x numpy's; f32 rows of 48 and 64 at 1.25-1.4x).
 * short_run_sum is one run (a reduction that keeps no axis), with the same additions. */
static void short_run_sum(tl_dtype dtype, const char *p, int64_t n, double *acc) {
  const int cplx = dtype == TL_C128 || dtype == TL_C64;
  double sum[2];
  if (dtype == TL_F64 || dtype == TL_C128)
    tl__short_sums_f64(TL__ISA_PORTABLE, (const double *)p, n, cplx, 0, 1, 0, sum);
  else
    tl__short_sums_f32(TL__ISA_PORTABLE, (const float *)p, n, cplx, 0, 1, 0, sum);
  for (int part = 0; part <= cplx; part++) acc[part] += sum[part];
}

/* A block of sums (op SUM, so each is stored as it is, in the output dtype; complex ones as
 * (re, im) pairs) into o, `step` bytes apart: the same values store() writes, without its
 * per-item switch (a 65536 x 4 f64 row sum spent a third of its time storing one by one). */
static void store_sums(tl_dtype dtype, const double *sums, int64_t count, char *o, int64_t step) {
  const int64_t es = (int64_t)tl_dtype_size(dtype);
  if (step == es && (dtype == TL_F64 || dtype == TL_C128)) { /* the sums' own layout */
    memcpy(o, sums, (size_t)(count * es));
    return;
  }
  switch (dtype) {
    case TL_F64:
      for (int64_t r = 0; r < count; r++) *(double *)(void *)(o + r * step) = sums[r];
      break;
    case TL_F32:
      if (step == es) {
        float *f = (float *)(void *)o;
        for (int64_t r = 0; r < count; r++) f[r] = (float)sums[r];
      } else {
        for (int64_t r = 0; r < count; r++) *(float *)(void *)(o + r * step) = (float)sums[r];
      }
      break;
    case TL_C128:
      for (int64_t r = 0; r < count; r++) {
        double *d = (double *)(void *)(o + r * step);
        d[0] = sums[2 * r], d[1] = sums[2 * r + 1];
      }
      break;
    default:
      for (int64_t r = 0; r < count; r++) {
        float *f = (float *)(void *)(o + r * step);
        f[0] = (float)sums[2 * r], f[1] = (float)sums[2 * r + 1];
      }
      break;
  }
}

/* Items [0, count) along the one kept axis, from x and o on (short runs, one kept axis). */
#define TL__SHORT_BLOCK 256
static void short_items(const tl__reduce_plan *pl, int64_t count, const char *x, char *o) {
  const int width = acc_width(pl), cplx = width == 2;
  const int64_t n = pl->re[0], ld = pl->kx[0] * (cplx ? 2 : 1);
  /* an input past the prefetch window is read from memory: the sums prefetch across blocks */
  const int stream = tl__i64_mul3_sat(pl->total, pl->xes, 1) > TL__SUM_PREFETCH_MAX_BYTES;
  double sums[2 * TL__SHORT_BLOCK];
  for (int64_t done = 0; done < count; done += TL__SHORT_BLOCK) {
    const int64_t block = count - done < TL__SHORT_BLOCK ? count - done : TL__SHORT_BLOCK;
    const int64_t ahead = stream ? count - done - block : 0;
    const char *xb = x + done * pl->kx[0] * pl->xes;
    if (pl->dtype == TL_F64 || pl->dtype == TL_C128)
      tl__short_sums_f64(pl->isa, (const double *)xb, n, cplx, ld, block, ahead, sums);
    else
      tl__short_sums_f32(pl->isa, (const float *)xb, n, cplx, ld, block, ahead, sums);
    store_sums(pl->out_dtype, sums, block, o + done * pl->ko[0] * pl->oes, pl->ko[0] * pl->oes);
  }
}

/* Blocked items (tl__reduce_plan.blocked): a block of items walks the rows once, each
 * row's runs in memory order (reduce_core.h). */
/* Four items' runs along kept axis 0 from x, summed side by side (tl__sum16_*_rows4: the
 * bits of each run's own sum), into acc[0..3] as run_into_scalar adds a run's total. */
static void sum_runs4(const tl__reduce_plan *pl, const char *x, double (*acc)[2]) {
  const int cplx = pl->dtype == TL_C128 || pl->dtype == TL_C64;
  const int64_t n = cplx ? 2 * pl->re[0] : pl->re[0], ld = cplx ? 2 * pl->kx[0] : pl->kx[0];
  double sums[8];
  if (pl->dtype == TL_F32 || pl->dtype == TL_C64)
    tl__sum16_f32_rows4(pl->isa, pl->prefetch, (const float *)(const void *)x, n, ld, cplx, sums);
  else
    tl__sum16_f64_rows4(pl->isa, pl->prefetch, (const double *)(const void *)x, n, ld, cplx, sums);
  for (int r = 0; r < 4; r++) {
    acc[r][0] += sums[cplx ? 2 * r : r];
    if (cplx) acc[r][1] += sums[2 * r + 1];
  }
}

static void block_row(const tl__reduce_plan *pl, const char *row, int64_t count, double (*acc)[2]) {
  const int64_t n0 = pl->re[0], step = pl->kx[0] * pl->xes;
  int64_t b = 0;
  if (pl->op == TL_REDUCE_SUM && !pl->one_run)
    for (; b + 4 <= count; b += 4) sum_runs4(pl, row + b * step, acc + b);
  for (; b < count; b++) run_into_scalar(pl, row + b * step, n0, 1, acc[b]);
}

static void blocked_items(const tl__reduce_plan *pl, const char *x, char *o, int64_t count) {
  const int width = acc_width(pl);
  double acc[TL__REDUCE_ITEM_BLOCK][2];
  for (int64_t b = 0; b < count; b++) acc[b][0] = identity(pl->op), acc[b][1] = 0.0;
  WALK_ROWS(pl, 1, x, 0, pl->r_rows, count * pl->re[0], block_row(pl, row_ptr, count, acc));
  for (int64_t b = 0; b < count; b++) store(pl, acc[b], width, o + b * pl->ko[0] * pl->oes);
}

/* Inner mode, whole items [begin, end) (parts == 1): the items' pointers advance as an
 * odometer over the kept axes (first fastest, as item_pointers numbers them), so a run of
 * short rows pays no division per item (a 256 x 256 f32 row sum spent a fifth of its time
 * in item_pointers' divisions). */
/* The odometer over the kept axes (first fastest) one item on; with `wrapped`, axis 0 has
 * just reached its extent (idx[0] == ke[0], x and o one past its last item) and the step
 * carries into the axes after it. */
static inline void next_item(const tl__reduce_plan *pl, int64_t *idx, const char **x, char **o,
                             int wrapped) {
  for (int k = 0; k < pl->nk; k++) {
    if (!wrapped || k > 0) {
      *x += pl->kx[k] * pl->xes;
      *o += pl->ko[k] * pl->oes;
      ++idx[k];
    }
    wrapped = 0;
    if (idx[k] < pl->ke[k]) return;
    *x -= pl->ke[k] * pl->kx[k] * pl->xes;
    *o -= pl->ke[k] * pl->ko[k] * pl->oes;
    idx[k] = 0;
  }
}

static void inner_items(const tl__reduce_plan *pl, int64_t begin, int64_t end) {
  const int width = acc_width(pl);
  /* Sums of one unit-stride run per item: four items along kept axis 0 at a time
   * (sum_runs4: tl__sum16_f32_rows4 / _f64_rows4, complex runs as pairs, which prefetch each
   * run ahead when the plan does), each with the bits of its own. */
  const int short_sum =
      pl->op == TL_REDUCE_SUM && pl->nr == 1 && pl->rx[0] == 1 &&
      (pl->re[0] <= TL__REDUCE_SHORT_RUN || pl->re[0] * pl->xes <= TL__REDUCE_SHORT_BYTES) &&
      !pl->empty;
  const int rows4 = !short_sum && pl->op == TL_REDUCE_SUM && pl->nr == 1 && pl->rx[0] == 1 &&
                    pl->nk > 0 && !pl->one_run;

  const int blocked = pl->blocked;

  int64_t idx[TL_MAX_RANK];
  const char *x;
  char *o;
  item_pointers(pl, begin, 0, idx, &x, &o);
  for (int64_t item = begin; item < end;) {
    double sums[4][2];
    int64_t here = 1;
    int stored = 0;
    if (blocked && end - item >= 2 && pl->ke[0] - idx[0] >= 2) {
      here = end - item < pl->ke[0] - idx[0] ? end - item : pl->ke[0] - idx[0];
      if (here > TL__REDUCE_ITEM_BLOCK) here = TL__REDUCE_ITEM_BLOCK;
      blocked_items(pl, x, o, here);
      stored = 1;
    } else if (short_sum && pl->nk > 0) { /* short runs along kept axis 0, side by side */
      here = end - item < pl->ke[0] - idx[0] ? end - item : pl->ke[0] - idx[0];
      short_items(pl, here, x, o);
      stored = 1;
    } else if (rows4 && end - item >= 4 && pl->ke[0] - idx[0] >= 4) {
      for (int r = 0; r < 4; r++) sums[r][0] = identity(pl->op), sums[r][1] = 0.0;
      sum_runs4(pl, x, sums);
      here = 4;
    }
    if (stored) { /* `here` items along kept axis 0, within its extent: one step */
      item += here;
      idx[0] += here;
      x += here * pl->kx[0] * pl->xes;
      o += here * pl->ko[0] * pl->oes;
      if (idx[0] == pl->ke[0]) next_item(pl, idx, &x, &o, 1);
      continue;
    }
    for (int64_t r = 0; r < here; r++, item++) {
      double acc[2] = {identity(pl->op), 0.0};
      if (here == 4)
        acc[0] = sums[r][0], acc[1] = sums[r][1];
      else if (short_sum)
        short_run_sum(pl->dtype, x, pl->re[0], acc);
      else
        inner_rows(pl, x, 0, pl->r_rows, acc);
      store(pl, acc, width, o);
      next_item(pl, idx, &x, &o, 0);
    }
  }
}

static void run_item(tl__reduce_plan *pl, int64_t item, int64_t part, int slot) {
  const int width = acc_width(pl);
  const int64_t r0 = part * pl->part_len;
  const int64_t r1 = r0 + pl->part_len < pl->r_rows ? r0 + pl->part_len : pl->r_rows;
  if (pl->inner_mode) {
    const char *x;
    char *o;
    item_pointers(pl, item, 0, NULL, &x, &o);
    double acc[2] = {identity(pl->op), 0.0};
    inner_rows(pl, x, r0, r1, acc);
    if (pl->parts == 1) {
      store(pl, acc, width, o);
    } else {
      double *partial = pl->partials + (item * pl->parts + part) * 2;
      partial[0] = acc[0], partial[1] = acc[1];
    }
    return;
  }
  /* outer mode: item = chunk along kept axis 0 x the other kept axes */
  const char *x;
  char *o;
  int64_t len = chunk_pointers(pl, item, &x, &o);
  double *local = pl->acc_slots + (int64_t)slot * 2 * CHUNK;
  double *acc = pl->parts == 1 ? local : pl->partials + (item * pl->parts + part) * 2 * CHUNK;
  const double id = identity(pl->op);
  for (int64_t i = 0; i < len * width; i++) acc[i] = (width == 2 && (i & 1)) ? 0.0 : id;
  const int64_t s0 = pl->kx[0];
  WALK_ROWS(pl, 0, x, r0, r1, len, run_into_vector(pl, row_ptr, len, s0, acc));
  if (pl->parts == 1) {
    for (int64_t i = 0; i < len; i++)
      store(pl, acc + i * width, width, o + i * pl->ko[0] * pl->oes);
  }
}

void tl__reduce_run(size_t begin, size_t end, int worker_index, void *arg) {
  tl__reduce_plan *pl = arg;
  if (pl->inner_mode && pl->parts == 1) {
    inner_items(pl, (int64_t)begin, (int64_t)end);
    return;
  }
  for (size_t w = begin; w < end; w++)
    run_item(pl, (int64_t)w / pl->parts, (int64_t)w % pl->parts, worker_index + 1);
}

/* Sort axes (extent, strides...) ascending by key; n <= TL_MAX_RANK. */
void tl__reduce_sort_axes(int n, int64_t *key, int64_t *e, int64_t *s1, int64_t *s2) {
  for (int i = 1; i < n; i++) {
    for (int j = i; j > 0 && key[j - 1] > key[j]; j--) {
      int64_t t;
#define SWAP(A) t = A[j], A[j] = A[j - 1], A[j - 1] = t
      SWAP(key);
      SWAP(e);
      SWAP(s1);
      if (s2) SWAP(s2);
#undef SWAP
    }
  }
}

/* Reduced axes 0 and 1 that continue each other (axis 1's stride is axis 0's run): axis 0
 * takes a factor f of axis 1's extent, the largest divisor with a run of at most
 * TL__REDUCE_LONG_RUN elements, so the sum kernels see longer runs (a float run's partials
 * are flushed to double at its end: in runs of 256 that cost about what the additions did)
 * while axis 1 keeps rows for the parts to split. Unit stride only, where those kernels
 * run. */
#define TL__REDUCE_LONG_RUN 4096
static void lengthen_runs(tl__reduce_plan *pl) {
  if (pl->nr < 2 || pl->rx[0] != 1 || pl->rx[1] != pl->re[0]) return;
  int64_t f = 1;
  for (int64_t d = 2; d <= pl->re[1] && pl->re[0] * d <= TL__REDUCE_LONG_RUN; d++)
    if (pl->re[1] % d == 0) f = d;
  if (f == 1) return;
  pl->re[0] *= f;
  pl->re[1] /= f;
  pl->rx[1] *= f;
  if (pl->re[1] > 1) return;
  for (int k = 1; k + 1 < pl->nr; k++) pl->re[k] = pl->re[k + 1], pl->rx[k] = pl->rx[k + 1];
  pl->nr--;
}

void tl__reduce_plan_modes(tl__reduce_plan *pl, int team, int64_t out_elements) {
  pl->isa = tl__isa_level(); /* once, not per run: a run can be a few elements */
  int empty = 0;
  for (int k = 0; k < pl->nr; k++) empty |= pl->re[k] == 0;
  if (empty) pl->nr = 0; /* nothing to reduce: every output is the identity */
  pl->empty = empty;
  lengthen_runs(pl);
  /* inner when x is densest along a reduced axis (or nothing is kept) */
  int64_t best_k = INT64_MAX, best_r = INT64_MAX;
  int best_k_axis = 0;
  for (int k = 0; k < pl->nk; k++) {
    if (tl__abs64(pl->kx[k]) < best_k) best_k = tl__abs64(pl->kx[k]), best_k_axis = k;
  }
  if (pl->nr > 0) best_r = tl__abs64(pl->rx[0]);
  pl->inner_mode = pl->nk == 0 || (pl->nr > 0 && best_r < best_k);
  int64_t total_reduced = 1;
  for (int k = 0; k < pl->nr; k++) total_reduced *= pl->re[k];
  if (pl->inner_mode) {
    pl->out_items = 1;
    for (int k = 0; k < pl->nk; k++) pl->out_items *= pl->ke[k];
    pl->r_rows = pl->nr > 0 ? total_reduced / pl->re[0] : 1;
  } else {
    if (best_k_axis != 0) { /* kept axis densest in x goes first */
      int64_t t;
      t = pl->ke[0], pl->ke[0] = pl->ke[best_k_axis], pl->ke[best_k_axis] = t;
      t = pl->kx[0], pl->kx[0] = pl->kx[best_k_axis], pl->kx[best_k_axis] = t;
      t = pl->ko[0], pl->ko[0] = pl->ko[best_k_axis], pl->ko[best_k_axis] = t;
    }
    pl->chunks = (pl->ke[0] + CHUNK - 1) / CHUNK;
    pl->out_items = pl->chunks;
    for (int k = 1; k < pl->nk; k++) pl->out_items *= pl->ke[k];
    pl->r_rows = empty ? 0 : total_reduced;
  }
  /* Parts: cut the reduced rows when there are too few items for the team. */
  int64_t total = total_reduced * out_elements;
  pl->parts = 1;
  if (team > 1 && total >= TL__PARALLEL_MIN_ELEMENTS && pl->out_items < (int64_t)team * 4 &&
      pl->r_rows >= 2) {
    pl->parts = ((int64_t)team * 4 + pl->out_items - 1) / pl->out_items;
    if (pl->parts > pl->r_rows) pl->parts = pl->r_rows;
  }
  pl->part_len = (pl->r_rows + pl->parts - 1) / pl->parts;
  pl->blocked = pl->inner_mode && pl->parts == 1 && pl->nr >= 2 && pl->rx[0] == 1 && pl->nk > 0 &&
                pl->kx[0] == pl->re[0] && pl->r_rows > 1 && !pl->empty;
  if (pl->part_len == 0) pl->part_len = 1;
  pl->total = total;
  /* The prefetch window (reduce_core.h), for every dtype since the float sums add in
   * float: rows of 1024 floats, one core, medians of 101 alternating: 512 rows 44 us with
   * it, 51 without; 1024 rows 141-142 against 144-148; 2048 rows 313 against 332. */
  const int64_t bytes = tl__i64_mul3_sat(total, pl->xes, 1);
  pl->prefetch = bytes > TL__SUM_PREFETCH_MIN_BYTES && bytes <= TL__SUM_PREFETCH_MAX_BYTES;
  const int64_t run_bytes = pl->nr > 0 ? tl__i64_mul3_sat(pl->re[0], pl->xes, 1) : 0;
  const int doubles = pl->dtype == TL_F64 || pl->dtype == TL_C128;
  pl->one_run =
      bytes > TL__SUM_PREFETCH_MAX_BYTES &&
      ((run_bytes > TL__REDUCE_ONE_RUN_MIN_BYTES && run_bytes <= TL__REDUCE_ONE_RUN_MAX_BYTES) ||
       (doubles && run_bytes >= TL__REDUCE_ONE_RUN_LONG_BYTES));
  /* Rows with a gap after each (a strided view's rows): a prefetch past a row's end would
   * fetch the gap, so the one-row sums stop short of it (2). */
  if (pl->prefetch && pl->inner_mode && pl->nr == 1 && pl->rx[0] == 1 && pl->nk > 0 &&
      pl->kx[0] != pl->re[0])
    pl->prefetch = 2;
}

void tl__reduce_combine(const tl__reduce_plan *pl) {
  assert(pl->parts > 1 && pl->partials != NULL);
  const int width = acc_width(pl);
  const tl_reduce_op op = pl->op;
  if (pl->parts > 1) {
    /* combine partials in part order (deterministic for a given team) */
    for (int64_t item = 0; item < pl->out_items; item++) {
      if (pl->inner_mode) {
        const char *xp;
        char *o;
        item_pointers(pl, item, 0, NULL, &xp, &o);
        double *first = pl->partials + item * pl->parts * 2;
        for (int64_t p = 1; p < pl->parts; p++) merge(op, first, first + p * 2, width);
        store(pl, first, width, o);
      } else {
        const char *xp;
        char *o;
        int64_t len = chunk_pointers(pl, item, &xp, &o);
        double *first = pl->partials + item * pl->parts * 2 * CHUNK;
        for (int64_t p = 1; p < pl->parts; p++) {
          double *other = first + p * 2 * CHUNK;
          for (int64_t i = 0; i < len; i++) merge(op, first + i * width, other + i * width, width);
        }
        for (int64_t i = 0; i < len; i++)
          store(pl, first + i * width, width, o + i * pl->ko[0] * pl->oes);
      }
    }
  }
}
