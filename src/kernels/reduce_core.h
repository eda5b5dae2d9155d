/* src/kernels/reduce_core.h: the reduction core shared by reduce_core.c (the loops) and
 * reduce.c (the route), for sum, prod, max, min and the 2-norm.
 *
 * Two shapes of loop, chosen by where the input is dense:
 *   - inner: the input's densest axis is reduced. Each output element is one accumulator
 *     fed by unit-stride runs of the input (sixteen partial sums, reduce_sums.c).
 *   - outer: the densest axis is kept. A chunk of up to CHUNK (8192) outputs along it is
 *     held in accumulators (scratch, one block per worker) while the reduced axes stream
 *     past, so the input is read in long sequential runs.
 * Accumulators are double (f32 inputs too; complex as two doubles), so f32 sums are
 * accurate to f32 rounding at the end. When there are fewer output items than workers
 * (a full reduction, say) the reduced range is cut into parts whose partial accumulators
 * live in scratch and are combined at the end.
 *
 * Invariants: all checks precede the first write; an empty reduction gives the identity
 * (0, 1, -inf, +inf, 0); max and min propagate NaN. */
#ifndef TL_KERNELS_REDUCE_CORE_H
#define TL_KERNELS_REDUCE_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#define CHUNK 8192

typedef struct tl__reduce_plan {
  tl_reduce_op op;
  tl_dtype dtype, out_dtype;
  int complex_in;
  int inner_mode;
  const char *xbase;
  char *obase;
  int64_t xes, oes;
  int nk, nr;
  int64_t ke[TL_MAX_RANK], kx[TL_MAX_RANK], ko[TL_MAX_RANK]; /* kept: extent, x, out strides */
  int64_t re[TL_MAX_RANK], rx[TL_MAX_RANK];                  /* reduced: extent, x stride */
  int64_t out_items; /* output items (elements in inner mode, chunks in outer mode) */
  int64_t chunks;    /* outer mode: chunks along kept axis 0 */
  int64_t r_rows;    /* reduced rows walked per item (inner: excluding axis 0) */
  int64_t parts, part_len;
  int empty;           /* a reduced axis has extent 0: every output is the identity */
  double *partials;    /* [item][part][2] (inner) or [item][part][2 * CHUNK] (outer) */
  double *acc_slots;   /* outer mode: one 2 * CHUNK accumulator block per worker (+1) */
  int64_t total;       /* elements read: reduced extent times outputs */
  int isa;             /* TL__ISA_* level of the unit-stride sums, read once per plan */
  int prefetch;        /* 1: the unit-stride sums prefetch ahead (TL__SUM_PREFETCH_*); 2: not past a
                        * run's end */
  int one_run;         /* runs read from memory go one at a time, not four side by side (below) */
  int blocked;         /* inner mode, items whose runs lie side by side in each row (see below) */
  const tl_exec *exec; /* the surface whose cancellation the long loops read, or NULL */
  atomic_int *stopped; /* raised once a loop saw the cancellation and quit part way */
} tl__reduce_plan;

/* Inside an item, the loops look at the surface's cancellation every
 * TL__REDUCE_CHECK_ELEMENTS elements read (a row of a broadcast view can be 2^40 elements
 * long, read in no memory at all): once seen, *stopped goes up, every loop of the plan quits
 * at its next look, and the route reports TL_E_CANCELLED. A multiple of
 * TL__SUM16_PIECE_REALS. Unit-stride runs of the sixteen sums (tl__sum16_f64 / _f32) are
 * read whole: their length is bounded by memory. */
#define TL__REDUCE_CHECK_ELEMENTS ((int64_t)1 << 20)

/* Blocked items: runs that lie side by side in each reduced row (kept axis 0's stride is
 * the run's length) while an item's rows lie apart (einsum ijk->j: a row is an i, a run a
 * k). Item by item, a sum read one short run from each of many rows far apart (ijk->j at
 * 50 x 400 x 60 took 1.4x numpy's time in f64, 2.2x in f32). A block of up to
 * TL__REDUCE_ITEM_BLOCK items along kept axis 0 walks the rows once instead, each row's runs
 * in memory order; the route hands such plans work in chunks of whole blocks where it can.
 * Each item still adds its rows' totals in row order, as one item alone does, so the bits
 * do not change. */
#define TL__REDUCE_ITEM_BLOCK 512

/* An insertion sort of up to TL_MAX_RANK axes (extent, strides...) ascending by key. */
void tl__reduce_sort_axes(int n, int64_t *key, int64_t *e, int64_t *s1, int64_t *s2);
/* Choose inner or outer mode, count items and parts for a team, and read the instruction
 * set level (the axes are filled in, op, dtypes and bases set). */
void tl__reduce_plan_modes(tl__reduce_plan *pl, int team, int64_t out_elements);
/* Items [begin, end) of the plan (item * parts + part), on thread slot worker_index + 1; a
 * tl_pool_range_fn. */
void tl__reduce_run(size_t begin, size_t end, int worker_index, void *arg);
/* With parts > 1: merge each item's partials in part order and store the results. */
void tl__reduce_combine(const tl__reduce_plan *pl);

/* reduce_sums.c: the total of x[0..n-1] by sixteen running double sums (s[k] takes the
 * indices equal to k modulo 16, then the last n % 16 go one by one into s[0], s[1], ...;
 * floats reach them through float partials of sixteen elements each, per block of 256),
 * totalled pairwise: with `pairs` the even sums into *re and the odd ones into *im (complex
 * numbers as pairs of reals), else all into *re (and *im = 0). The same bits at every
 * instruction-set level `isa` (TL__ISA_*), with or without `prefetch` (a software prefetch
 * ahead of the loads, which only the AVX-512 paths issue: 1 on past the run's end, 2 not
 * past it). */
void tl__sum16_f64(int isa, int prefetch, const double *x, int64_t n, int pairs, double *re,
                   double *im);
void tl__sum16_f32(int isa, int prefetch, const float *x, int64_t n, int pairs, double *re,
                   double *im);

/* The sixteen sums of a strided run: n elements (complex ones with `pairs`), element i at
 * x + i * step (step counted in reals: a complex element's parts are x[i * step] and
 * x[i * step + 1]), added into s[0..15] in tl__sum16_f64 / _f32's order; scalar at every
 * level. tl__sum16_total then gives the bits tl__sum16_f64 / _f32 give the same values laid
 * out contiguously. A run fed in pieces, each but the last a multiple of
 * TL__SUM16_PIECE_REALS reals, gives the bits of one piece (so a caller can stop between
 * pieces: the float partials restart every 256 reals, the sixteen chains every 16). */
#define TL__SUM16_PIECE_REALS 256
void tl__sum16_strided_add_f64(const double *x, int64_t n, int64_t step, int pairs, double *s);
void tl__sum16_strided_add_f32(const float *x, int64_t n, int64_t step, int pairs, double *s);
/* The total of sixteen sums in tl__sum16_f64's order (pairs: even ones into *re, odd ones
 * into *im; else all into *re and *im = 0). */
void tl__sum16_total(const double *s, int pairs, double *re, double *im);
/* Four runs of n reals each, run r at x + r * ld: out[r] gets the total tl__sum16_f32 /
 * _f64 gives that run, or, with `pairs` (runs of complex numbers as 2n reals), out[2r] and
 * out[2r + 1] its real and imaginary totals; bit for bit, at AVX-512 the four summed side by
 * side. */
void tl__sum16_f32_rows4(int isa, int prefetch, const float *x, int64_t n, int64_t ld, int pairs,
                         double *out);
void tl__sum16_f64_rows4(int isa, int prefetch, const double *x, int64_t n, int64_t ld, int pairs,
                         double *out);
/* Unit-stride runs of at most TL__REDUCE_SHORT_RUN elements, or of at most
 * TL__REDUCE_SHORT_BYTES (f32 runs of up to 64), are summed in order (tl__short_sums_*),
 * longer ones by the sixteen sums (tl__sum16_*). Strided runs of more than
 * TL__REDUCE_SHORT_RUN elements take the sixteen strided sums (tl__sum16_strided_*). */
#define TL__REDUCE_SHORT_RUN 32
#define TL__REDUCE_SHORT_BYTES 256
/* The in-order double total of each of `rows` runs, run r at x + r * ld: of its n
 * contiguous elements into out[r], or, with `pairs`, of the real and of the imaginary parts
 * of its n contiguous complex elements into out[2r] and out[2r + 1]. Each total is
 * ((0 + x_0) + x_1) + ..., the same bits at every isa; at AVX-512 eight runs at a time. For
 * the short rows of the reduce core (TL__REDUCE_SHORT_RUN). `ahead`: 0, or the runs after
 * these (same ld) that the caller reads next from beyond the caches; the prefetch then
 * reaches into them and long runs also fetch further ahead. Reads nothing more. */
void tl__short_sums_f64(int isa, const double *x, int64_t n, int pairs, int64_t ld, int64_t rows,
                        int64_t ahead, double *out);
void tl__short_sums_f32(int isa, const float *x, int64_t n, int pairs, int64_t ld, int64_t rows,
                        int64_t ahead, double *out);
/* acc[i] += x[i] for i < n, one double addition per element: the same bits at every isa. */
void tl__add_run_f64(int isa, const double *x, int64_t n, double *acc);
void tl__add_run_f32(int isa, const float *x, int64_t n, double *acc);
/* The window of a reduction's input bytes in which the sums prefetch: past one
 * core's second-level cache and within about half the last level's. On the project's Zen 5 VM,
 * one core, best of the two in one process: 1024^2 doubles (8 MiB) 83-85 us with the
 * prefetch, 97-98 without; 256^2 (512 KiB) 5.5-5.7 against 4.9-5.0; 2048 x 1024 (16 MiB)
 * 262-298 against 227-250; 2048^2 (32 MiB) 819-954 against 684-829. */
#define TL__SUM_PREFETCH_MIN_BYTES ((int64_t)1 << 20)
#define TL__SUM_PREFETCH_MAX_BYTES ((int64_t)12 << 20)
/* Runs of more than MIN and at most MAX bytes, and runs of doubles (f64, c128) of at least
 * LONG bytes, in an input past the prefetch window, are summed one run at a time
 * (tl__sum16_*), not four side by side (tl__sum16_*_rows4). The same bits; on the project's
 * Zen 5 VM four such runs read side by side from memory came in at 1.1-2.4x numpy's time
 * where one after another took 0.8-1.5x (f32 rows of 128 and 256, c64 of 64 and 128, f64
 * of 64 and 128; f64 rows of 1024 to 4096, c128 of 512 to 4096). Rows of 2-4 KiB read
 * four at a time were faster in every dtype, and so were long float rows (f32 of 4096). */
#define TL__REDUCE_ONE_RUN_MIN_BYTES 256
#define TL__REDUCE_ONE_RUN_MAX_BYTES 1024
#define TL__REDUCE_ONE_RUN_LONG_BYTES 8192

#endif
