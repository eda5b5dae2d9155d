/* tests/kernels/test_routes.c: every kernel route against a naive reference, table-driven
 * over dtype x layout (column, row, general stride, negative stride, permuted view) x shape
 * (with extent-1 and extent-0 axes), with a per-dtype tolerance; contraction also by a
 * randomized residual; root-team results against one thread; team refusal on a child
 * surface; cancellation. The naive references share no code with the library. */
#include <pthread.h>
#include <time.h>

#include "kt_support.h"
#include "tenlane/phase.h"

static const tl_dtype dtypes[] = {TL_F32, TL_F64, TL_C64, TL_C128};

typedef struct shape_case {
  int rank;
  int64_t shape[4];
} shape_case;

static const shape_case shapes[] = {
    {0, {0}},       {1, {1}},       {1, {7}},      {2, {3, 4}},  {2, {1, 5}},    {2, {0, 3}},
    {3, {4, 1, 3}}, {3, {2, 3, 4}}, {2, {17, 33}}, {2, {70, 9}}, {3, {3, 0, 2}}, {4, {2, 3, 1, 5}},
};
#define N_SHAPES (int)(sizeof shapes / sizeof shapes[0])

static void fail_at(const char *what, tl_dtype dtype, int layout, int shape_index,
                    double complex got, double complex want) {
  char text[512];
  snprintf(text, sizeof text, "%s: dtype %s layout %s shape #%d: got %g%+gi, want %g%+gi", what,
           tl_dtype_name(dtype), layout >= 0 ? kt_layout_name[layout] : "-", shape_index,
           creal(got), cimag(got), creal(want), cimag(want));
  th_test_fail_at(__FILE__, __LINE__, text);
}

/* ---- elementwise ---------------------------------------------------------------------- */

static double complex naive_binary(tl_binary_op op, double complex x, double complex y) {
  switch (op) {
    case TL_OP_ADD:
      return x + y;
    case TL_OP_SUB:
      return x - y;
    case TL_OP_MUL:
      return x * y;
    default:
      return x / y;
  }
}

static void elementwise_binary_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++)
      for (int lo = 0; lo < KT_LAYOUTS; lo++)
        for (int li = 0; li < KT_LAYOUTS; li++)
          for (int op = 0; op < 4; op++) {
            const shape_case *sc = &shapes[si];
            kt_tensor a, b, out;
            kt_make(&a, dtypes[di], sc->rank, sc->shape, (kt_layout)li, 1);
            kt_make(&b, dtypes[di], sc->rank, sc->shape, (kt_layout)((li + 2) % KT_LAYOUTS), 1);
            kt_make(&out, dtypes[di], sc->rank, sc->shape, (kt_layout)lo, 0);
            TH_CHECK_OK(tl_binary_into(h.exec, (tl_binary_op)op, &a.t, &b.t, &out.t));
            TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
              double complex want =
                  naive_binary((tl_binary_op)op, th_num_get(&a.t, idx), th_num_get(&b.t, idx));
              double complex got = th_num_get(&out.t, idx);
              if (!th_num_close_enough(got, want, th_num_tolerance(dtypes[di]), 1.0))
                fail_at("binary", dtypes[di], lo, si, got, want);
            }
            kt_free(&a), kt_free(&b), kt_free(&out);
          }
  th_held_close(&h);
}

static void elementwise_broadcasts_extent_one_axes(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++) {
    int64_t so[3] = {4, 3, 5}, sa[3] = {4, 1, 5}, sb[2] = {1, 3}; /* b padded with a trailing 1 */
    kt_tensor a, b, out;
    kt_make(&a, dtypes[di], 3, sa, KT_GENERAL, 1);
    kt_make(&b, dtypes[di], 2, sb, KT_NEGATIVE, 1);
    kt_make(&out, dtypes[di], 3, so, KT_ROW, 0);
    TH_CHECK_OK(tl_mul_into(h.exec, &a.t, &b.t, &out.t));
    TH_NUM_FOR_EACH(idx, 3, so) {
      int64_t ia[3] = {idx[0], 0, idx[2]}, ib[2] = {0, idx[1]};
      double complex want = th_num_get(&a.t, ia) * th_num_get(&b.t, ib);
      if (!th_num_close_enough(th_num_get(&out.t, idx), want, th_num_tolerance(dtypes[di]), 1.0))
        fail_at("broadcast mul", dtypes[di], -1, 0, th_num_get(&out.t, idx), want);
    }
    /* the fresh form takes the larger extent on each axis */
    tl_tensor fresh;
    TH_CHECK_OK(tl_sub(h.exec, &a.t, &b.t, &fresh));
    TH_CHECK(fresh.rank == 3 && fresh.shape[0] == 4 && fresh.shape[1] == 3 && fresh.shape[2] == 5);
    TH_CHECK(fresh.owned != NULL && tl_tensor_is_col_major(&fresh));
    TH_NUM_FOR_EACH(idx, 3, so) {
      int64_t ia[3] = {idx[0], 0, idx[2]}, ib[2] = {0, idx[1]};
      double complex want = th_num_get(&a.t, ia) - th_num_get(&b.t, ib);
      if (!th_num_close_enough(th_num_get(&fresh, idx), want, th_num_tolerance(dtypes[di]), 1.0))
        fail_at("broadcast sub", dtypes[di], -1, 0, th_num_get(&fresh, idx), want);
    }
    tl_tensor_release(&fresh);
    kt_free(&a), kt_free(&b), kt_free(&out);
  }
  th_held_close(&h);
}

static double complex naive_unary(tl_unary_op op, double complex x, int is_complex) {
  switch (op) {
    case TL_OP_NEG:
      return -x;
    case TL_OP_CONJ:
      return conj(x);
    case TL_OP_ABS:
      return cabs(x);
    case TL_OP_EXP:
      return is_complex ? cexp(x) : exp(creal(x));
    case TL_OP_LOG:
      return is_complex ? clog(x) : log(creal(x));
    case TL_OP_SQRT:
      return is_complex ? csqrt(x) : sqrt(creal(x));
    default:
      return x;
  }
}

static void elementwise_unary_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++)
      for (int lo = 0; lo < KT_LAYOUTS; lo++)
        for (int op = 0; op <= TL_OP_COPY; op++) {
          const shape_case *sc = &shapes[si];
          tl_dtype dt = dtypes[di];
          tl_dtype odt = op == TL_OP_ABS ? tl_dtype_real(dt) : dt;
          kt_tensor x, out;
          kt_make(&x, dt, sc->rank, sc->shape, (kt_layout)((lo + 1) % KT_LAYOUTS), 1);
          kt_make(&out, odt, sc->rank, sc->shape, (kt_layout)lo, 0);
          TH_CHECK_OK(tl_unary_into(h.exec, (tl_unary_op)op, &x.t, &out.t));
          TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
            double complex want =
                naive_unary((tl_unary_op)op, th_num_get(&x.t, idx), tl_dtype_is_complex(dt));
            if (!th_num_close_enough(th_num_get(&out.t, idx), want, th_num_tolerance(dt), 1.0))
              fail_at("unary", dt, lo, si, th_num_get(&out.t, idx), want);
          }
          kt_free(&x), kt_free(&out);
          /* fresh form */
          tl_tensor fresh;
          kt_make(&x, dt, sc->rank, sc->shape, KT_GENERAL, 1);
          TH_CHECK_OK(tl_unary(h.exec, (tl_unary_op)op, &x.t, &fresh));
          TH_CHECK(fresh.dtype == odt);
          TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
            double complex want =
                naive_unary((tl_unary_op)op, th_num_get(&x.t, idx), tl_dtype_is_complex(dt));
            if (!th_num_close_enough(th_num_get(&fresh, idx), want, th_num_tolerance(dt), 1.0))
              fail_at("unary fresh", dt, -1, si, th_num_get(&fresh, idx), want);
          }
          tl_tensor_release(&fresh);
          kt_free(&x);
        }
  th_held_close(&h);
}

static void scale_axpby_fill_match_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++)
      for (int lo = 0; lo < KT_LAYOUTS; lo++) {
        const shape_case *sc = &shapes[si];
        tl_dtype dt = dtypes[di];
        int cplx = tl_dtype_is_complex(dt);
        tl_scalar alpha = {0.75, cplx ? -0.5 : 0.0}, beta = {-1.25, cplx ? 0.25 : 0.0};
        double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
        kt_tensor x, y, y0, out;
        kt_make(&x, dt, sc->rank, sc->shape, (kt_layout)((lo + 3) % KT_LAYOUTS), 0);
        kt_make(&y, dt, sc->rank, sc->shape, (kt_layout)lo, 0);
        kt_make(&y0, dt, sc->rank, sc->shape, KT_COL, 0);
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) th_num_set(&y0.t, idx, th_num_get(&y.t, idx));
        kt_make(&out, dt, sc->rank, sc->shape, (kt_layout)((lo + 1) % KT_LAYOUTS), 0);
        TH_CHECK_OK(tl_axpby_into(h.exec, alpha, &x.t, beta, &y.t, &out.t));
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
          double complex want = al * th_num_get(&x.t, idx) + be * th_num_get(&y.t, idx);
          if (!th_num_close_enough(th_num_get(&out.t, idx), want, th_num_tolerance(dt), 1.0))
            fail_at("axpby_into", dt, lo, si, th_num_get(&out.t, idx), want);
        }
        TH_CHECK_OK(tl_axpby(h.exec, alpha, &x.t, beta, &y.t)); /* in place */
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
          double complex want = al * th_num_get(&x.t, idx) + be * th_num_get(&y0.t, idx);
          if (!th_num_close_enough(th_num_get(&y.t, idx), want, th_num_tolerance(dt), 1.0))
            fail_at("axpby", dt, lo, si, th_num_get(&y.t, idx), want);
        }
        TH_CHECK_OK(tl_scale_into(h.exec, alpha, &x.t, &out.t));
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
          double complex want = al * th_num_get(&x.t, idx);
          if (!th_num_close_enough(th_num_get(&out.t, idx), want, th_num_tolerance(dt), 1.0))
            fail_at("scale", dt, lo, si, th_num_get(&out.t, idx), want);
        }
        TH_CHECK_OK(tl_fill_into(h.exec, beta, &out.t));
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
          if (!th_num_close_enough(th_num_get(&out.t, idx), be, th_num_tolerance(dt), 1.0))
            fail_at("fill", dt, lo, si, th_num_get(&out.t, idx), be);
        }
        /* beta = 0 does not read y: NaN in y must not reach out */
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) th_num_set(&y.t, idx, NAN);
        TH_CHECK_OK(tl_axpby(h.exec, alpha, &x.t, tl_scalar_real(0.0), &y.t));
        TH_NUM_FOR_EACH(idx, sc->rank, sc->shape) {
          double complex want = al * th_num_get(&x.t, idx);
          if (!th_num_close_enough(th_num_get(&y.t, idx), want, th_num_tolerance(dt), 1.0))
            fail_at("axpby beta 0", dt, lo, si, th_num_get(&y.t, idx), want);
        }
        kt_free(&x), kt_free(&y), kt_free(&y0), kt_free(&out);
      }
  th_held_close(&h);
}

/* ---- permute, copy, reshape ----------------------------------------------------------- */

static void check_permute(tl_exec *exec, tl_dtype dt, int rank, const int64_t *shape,
                          const int *perm, kt_layout lx, kt_layout lo, int si) {
  int64_t oshape[TL_MAX_RANK];
  for (int k = 0; k < rank; k++) oshape[k] = shape[perm[k]];
  kt_tensor x, out;
  kt_make(&x, dt, rank, shape, lx, 0);
  kt_make(&out, dt, rank, oshape, lo, 0);
  TH_CHECK_OK(tl_permute_into(exec, &x.t, perm, &out.t));
  TH_NUM_FOR_EACH(idx, rank, oshape) {
    int64_t src[TL_MAX_RANK];
    for (int k = 0; k < rank; k++) src[perm[k]] = idx[k];
    double complex want = th_num_get(&x.t, src), got = th_num_get(&out.t, idx);
    if (memcmp(&want, &got, sizeof want) != 0 && !(want == got))
      fail_at("permute", dt, lo, si, got, want);
  }
  kt_free(&x), kt_free(&out);
}

static void permute_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++)
      for (int lx = 0; lx < KT_LAYOUTS; lx++)
        for (int lo = 0; lo < KT_LAYOUTS; lo++) {
          const shape_case *sc = &shapes[si];
          int perm[4];
          for (int k = 0; k < sc->rank; k++) perm[k] = (sc->rank - 1 - k + si) % sc->rank;
          check_permute(h.exec, dtypes[di], sc->rank, sc->shape, perm, (kt_layout)lx, (kt_layout)lo,
                        si);
        }
  /* tiles with fringes, power-of-two and odd leading dimensions, a 6-D permute */
  int64_t big[][2] = {{256, 128}, {200, 131}, {67, 300}};
  for (int di = 0; di < 4; di++) {
    int perm2[2] = {1, 0};
    for (int bi = 0; bi < 3; bi++) {
      check_permute(h.exec, dtypes[di], 2, big[bi], perm2, KT_COL, KT_COL, 100 + bi);
      check_permute(h.exec, dtypes[di], 2, big[bi], perm2, KT_GENERAL, KT_NEGATIVE, 100 + bi);
    }
    int64_t s6[6] = {3, 4, 2, 5, 3, 2};
    int p6[6] = {4, 2, 0, 5, 1, 3};
    check_permute(h.exec, dtypes[di], 6, s6, p6, KT_COL, KT_COL, 200);
    check_permute(h.exec, dtypes[di], 6, s6, p6, KT_PERMUTED, KT_ROW, 201);
    int64_t s3[3] = {40, 33, 20};
    int orders[5][3] = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (int o = 0; o < 5; o++)
      check_permute(h.exec, dtypes[di], 3, s3, orders[o], KT_COL, KT_COL, 300 + o);
  }
  th_held_close(&h);
}

static void copy_into_and_fresh_permute_match_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++) {
      const shape_case *sc = &shapes[si];
      kt_tensor x, out;
      kt_make(&x, dtypes[di], sc->rank, sc->shape, KT_PERMUTED, 0);
      kt_make(&out, dtypes[di], sc->rank, sc->shape, KT_NEGATIVE, 0);
      TH_CHECK_OK(tl_copy_into(h.exec, &x.t, &out.t));
      TH_NUM_FOR_EACH(idx, sc->rank, sc->shape)
      TH_CHECK(th_num_get(&x.t, idx) == th_num_get(&out.t, idx));
      int perm[4];
      for (int k = 0; k < sc->rank; k++) perm[k] = sc->rank - 1 - k;
      tl_tensor fresh;
      TH_CHECK_OK(tl_permute(h.exec, &x.t, perm, &fresh));
      TH_CHECK(tl_tensor_is_col_major(&fresh));
      TH_NUM_FOR_EACH(idx, sc->rank, fresh.shape) {
        int64_t src[TL_MAX_RANK];
        for (int k = 0; k < sc->rank; k++) src[perm[k]] = idx[k];
        TH_CHECK(th_num_get(&x.t, src) == th_num_get(&fresh, idx));
      }
      tl_tensor_release(&fresh);
      kt_free(&x), kt_free(&out);
    }
  th_held_close(&h);
}

static void reshape_is_a_view_when_strides_allow_else_a_copy(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++) {
    int64_t shape[3] = {4, 3, 5}, flat[2] = {12, 5}, other[3] = {2, 30, 1};
    kt_tensor x;
    kt_make(&x, dtypes[di], 3, shape, KT_COL, 0);
    tl_tensor r;
    TH_CHECK_OK(tl_reshape(h.exec, 2, flat, &x.t, &r));
    TH_CHECK(r.owned == NULL && r.data == x.t.data); /* a view */
    TH_NUM_FOR_EACH(idx, 3, shape) {
      int64_t j[2] = {idx[0] + 4 * idx[1], idx[2]};
      TH_CHECK(th_num_get(&x.t, idx) == th_num_get(&r, j));
    }
    kt_free(&x);
    /* row-major source: merging axes 0 and 1 in column-major order needs a copy */
    kt_make(&x, dtypes[di], 3, shape, KT_ROW, 0);
    TH_CHECK_OK(tl_reshape(h.exec, 3, other, &x.t, &r));
    TH_CHECK(r.owned != NULL);
    int64_t n = 0;
    TH_NUM_FOR_EACH(idx, 3, shape) {
      int64_t j[3] = {n % 2, n / 2, 0};
      TH_CHECK(th_num_get(&x.t, idx) == th_num_get(&r, j));
      n++;
    }
    tl_tensor_release(&r);
    /* reshape_into any layout */
    kt_tensor out;
    kt_make(&out, dtypes[di], 2, flat, KT_NEGATIVE, 0);
    TH_CHECK_OK(tl_reshape_into(h.exec, &x.t, &out.t));
    n = 0;
    TH_NUM_FOR_EACH(idx, 3, shape) {
      int64_t j[2] = {n % 12, n / 12};
      TH_CHECK(th_num_get(&x.t, idx) == th_num_get(&out.t, j));
      n++;
    }
    kt_free(&x), kt_free(&out);
  }
  th_held_close(&h);
}

/* ---- reduce ---------------------------------------------------------------------------- */

static double complex naive_reduce(tl_reduce_op op, const tl_tensor *x, unsigned mask,
                                   const int64_t *kept_idx, int *empty) {
  /* iterate all of x; use elements whose kept coordinates match */
  double complex acc = op == TL_REDUCE_PROD  ? 1
                       : op == TL_REDUCE_MAX ? -INFINITY
                       : op == TL_REDUCE_MIN ? INFINITY
                                             : 0;
  *empty = 1;
  TH_NUM_FOR_EACH(idx, x->rank, x->shape) {
    int match = 1;
    for (int k = 0; k < x->rank; k++)
      if (!((mask >> k) & 1) && idx[k] != kept_idx[k]) match = 0;
    if (!match) continue;
    *empty = 0;
    double complex v = th_num_get(x, idx);
    switch (op) {
      case TL_REDUCE_SUM:
        acc += v;
        break;
      case TL_REDUCE_PROD:
        acc *= v;
        break;
      case TL_REDUCE_MAX:
        acc = creal(v) > creal(acc) ? creal(v) : creal(acc);
        break;
      case TL_REDUCE_MIN:
        acc = creal(v) < creal(acc) ? creal(v) : creal(acc);
        break;
      case TL_REDUCE_NORM2:
        acc += creal(v * conj(v));
        break;
    }
  }
  if (op == TL_REDUCE_NORM2) acc = sqrt(creal(acc));
  return acc;
}

/* Sums whose contiguous reduced axes the route joins into longer runs (reduce_core.c's
 * lengthen_runs; row-major 300 x 40 becomes 3 rows of 4000, 130 x 33 2 rows of 2145, and
 * 7 x 11 x 13 summed over its inner axes runs of 143), whole and over the two inner axes
 * of a rank-3 tensor, in every dtype and layout, against the naive sum. */
static void reduce_long_runs_match_naive(void) {
  static const shape_case long_shapes[] = {{2, {300, 40}}, {2, {130, 33}}, {3, {7, 11, 13}}};
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < 3; si++)
      for (int lx = 0; lx < KT_LAYOUTS; lx++) {
        const shape_case *sc = &long_shapes[si];
        tl_dtype dt = dtypes[di];
        kt_tensor x, out;
        kt_make(&x, dt, sc->rank, sc->shape, (kt_layout)lx, 1);
        int axes[3] = {0, 1, 2};
        const int whole = sc->rank == 2;
        int64_t oshape[1] = {sc->shape[0]};
        kt_make(&out, dt, whole ? 0 : 1, oshape, KT_ROW, 0);
        TH_CHECK_OK(
            tl_reduce_into(h.exec, TL_REDUCE_SUM, &x.t, 2, whole ? axes : axes + 1, &out.t));
        int64_t outputs = whole ? 1 : sc->shape[0];
        for (int64_t o = 0; o < outputs; o++) {
          int64_t kept[4] = {o, 0, 0, 0}, oidx[1] = {o};
          int empty;
          double complex want = naive_reduce(TL_REDUCE_SUM, &x.t, whole ? 3u : 6u, kept, &empty);
          double complex got = th_num_get(&out.t, oidx);
          if (!th_num_close_enough(got, want, th_num_tolerance(dt) * 10, 1.0))
            fail_at("reduce long runs", dt, lx, si, got, want);
        }
        kt_free(&x), kt_free(&out);
      }
  th_held_close(&h);
}

/* Row sums of short unit-stride rows (at most 32 elements, 64 for f32, which reduce_core.c
 * adds in order, several rows at a time at AVX-512) equal, bit
 * for bit, the in-order double sum (f64, c128) or the in-order double sum of in-order float
 * sums of sixteen elements (f32, c64), with one kept axis (37 rows: whole groups of eight and
 * sixteen and a remainder; the output contiguous or every other element) and with two that do
 * not merge, in every dtype; a longer row takes the sum kernels and is checked to rounding. */
static void reduce_short_rows_add_in_order(void) {
  th_held h;
  th_held_open(&h, 1);
  const tl_dtype kinds[4] = {TL_F64, TL_C128, TL_C64, TL_F32};
  static const int64_t longer[] = {47, 48, 63, 64, 65, 100, 127, 128, 129};
  for (int di = 0; di < 4; di++)
    for (int64_t step = 1; step <= 33 + 9; step++)
      for (int form = 0; form < 3; form++) { /* 0, 1: one kept axis (1: out strided); 2: two */
        const int64_t n = step <= 33 ? step : longer[step - 34];
        const tl_dtype dt = kinds[di];
        const int kept = form == 2 ? 2 : 1;
        int64_t xshape[3] = {37, 4, n}, oshape[2] = {37, 3};
        if (kept == 1) xshape[1] = n, oshape[1] = form == 1 ? 2 : 0;
        kt_tensor x, out;
        kt_make(&x, dt, kept + 1, xshape, KT_ROW, 0);
        if (kept == 2) x.t.shape[1] = 3; /* a view: the two kept axes cannot merge */
        kt_make(&out, dt, form == 1 ? 2 : kept, oshape, KT_ROW, 0);
        if (form == 1) out.t.rank = 1; /* every other element of a 37 x 2 array */
        int axis[1] = {kept};
        TH_CHECK_OK(tl_reduce_into(h.exec, TL_REDUCE_SUM, &x.t, 1, axis, &out.t));
        const int64_t rows = kept == 1 ? 37 : 37 * 3;
        for (int64_t r = 0; r < rows; r++) {
          int64_t xi[3] = {kept == 1 ? r : r / 3, kept == 1 ? 0 : r % 3, 0};
          int64_t oi[2] = {xi[0], xi[1]};
          const int single = dt == TL_C64 || dt == TL_F32;
          double re = 0.0, im = 0.0;
          float block_re = 0.0f, block_im = 0.0f;
          for (int64_t i = 0; i < n; i++) {
            xi[kept] = i;
            const double complex v = th_num_get(&x.t, xi);
            if (!single) {
              re += creal(v), im += cimag(v);
              continue;
            }
            block_re += (float)creal(v), block_im += (float)cimag(v);
            if (i % 16 == 15 || i == n - 1) {
              re += (double)block_re, im += (double)block_im;
              block_re = block_im = 0.0f;
            }
          }
          double complex want = re + I * im;
          if (single) want = (float)re + I * (float)im;
          const double complex got = th_num_get(&out.t, oi);
          const int exact = n <= 32 || (dt == TL_F32 && n <= 64);
          const int same = exact ? creal(got) == creal(want) && cimag(got) == cimag(want)
                                 : th_num_close_enough(got, want, th_num_tolerance(dt), 1.0);
          if (!same) {
            fail_at("reduce short rows", dt, form, (int)n, got, want);
            r = rows;
          }
        }
        kt_free(&x), kt_free(&out);
      }
  th_held_close(&h);
}

static void reduce_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  for (int di = 0; di < 4; di++)
    for (int si = 0; si < N_SHAPES; si++)
      for (int lx = 0; lx < KT_LAYOUTS; lx++)
        for (int op = 0; op <= TL_REDUCE_NORM2; op++)
          for (unsigned mask = 0; mask < (1u << shapes[si].rank); mask++)
            for (int keep = 0; keep < 2; keep++) {
              const shape_case *sc = &shapes[si];
              tl_dtype dt = dtypes[di];
              if (tl_dtype_is_complex(dt) && (op == TL_REDUCE_MAX || op == TL_REDUCE_MIN)) continue;
              int axes[4], n_axes = 0;
              int64_t oshape[4];
              int orank = 0;
              for (int k = 0; k < sc->rank; k++) {
                if ((mask >> k) & 1) {
                  axes[n_axes++] = k;
                  if (keep) oshape[orank++] = 1;
                } else {
                  oshape[orank++] = sc->shape[k];
                }
              }
              kt_tensor x, out;
              kt_make(&x, dt, sc->rank, sc->shape, (kt_layout)lx, 1);
              tl_dtype odt = op == TL_REDUCE_NORM2 ? tl_dtype_real(dt) : dt;
              kt_make(&out, odt, orank, oshape, (kt_layout)((lx + 1) % KT_LAYOUTS), 0);
              TH_CHECK_OK(tl_reduce_into(h.exec, (tl_reduce_op)op, &x.t, n_axes, axes, &out.t));
              TH_NUM_FOR_EACH(oidx, orank, oshape) {
                int64_t kept[4] = {0};
                for (int k = 0, o = 0; k < sc->rank; k++) {
                  if ((mask >> k) & 1) {
                    if (keep) o++;
                  } else {
                    kept[k] = oidx[o++];
                  }
                }
                int empty;
                double complex want = naive_reduce((tl_reduce_op)op, &x.t, mask, kept, &empty);
                double complex got = th_num_get(&out.t, oidx);
                if (!th_num_close_enough(got, want, th_num_tolerance(dt) * 10, 1.0))
                  fail_at("reduce", dt, lx, si * 100 + op * 10 + (int)mask, got, want);
              }
              kt_free(&x), kt_free(&out);
            }
  th_held_close(&h);
}

/* A reduction over an outer and an inner axis that keeps the middle one (einsum ijk->j)
 * walks blocks of items row by row where the items' runs lie side by side; each item
 * still adds its rows' totals in row order. The same values laid out with a gap after
 * each run go item by item: both give the same bits, for every dtype and operation, on
 * one thread and on two. */
static void reduce_blocked_items_match_item_by_item(void) {
  /* 1100 items: blocks of TL__REDUCE_ITEM_BLOCK (512) and a shorter last one */
  static const int64_t cases[][3] = {
      {5, 37, 45}, {3, 64, 16}, {7, 9, 100}, {2, 130, 3}, {2, 1100, 5}};
  for (int threads = 1; threads <= 2; threads++) {
    th_held h;
    th_held_open(&h, threads);
    for (int di = 0; di < 4; di++)
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int op = 0; op <= TL_REDUCE_NORM2; op++) {
          const tl_dtype dt = dtypes[di];
          if (tl_dtype_is_complex(dt) && (op == TL_REDUCE_MAX || op == TL_REDUCE_MIN)) continue;
          const int64_t *shape = cases[c], pad = shape[2] + 3;
          kt_tensor dense;
          kt_make(&dense, dt, 3, shape, KT_ROW, 1);
          tl_tensor backing, gapped;
          const int64_t bshape[1] = {shape[0] * shape[1] * pad};
          const int64_t strides[3] = {shape[1] * pad, pad, 1};
          TH_CHECK_OK(tl_tensor_create(dt, 1, bshape, &backing));
          TH_CHECK_OK(tl_tensor_wrap(dt, 3, shape, strides, backing.data, 0, &gapped));
          TH_NUM_FOR_EACH(idx, 3, shape) { th_num_set(&gapped, idx, th_num_get(&dense.t, idx)); }
          const tl_dtype odt = op == TL_REDUCE_NORM2 ? tl_dtype_real(dt) : dt;
          const int64_t oshape[1] = {shape[1]};
          tl_tensor out_dense, out_gapped;
          TH_CHECK_OK(tl_tensor_create(odt, 1, oshape, &out_dense));
          TH_CHECK_OK(tl_tensor_create(odt, 1, oshape, &out_gapped));
          const int axes[2] = {0, 2};
          TH_CHECK_OK(tl_reduce_into(h.exec, (tl_reduce_op)op, &dense.t, 2, axes, &out_dense));
          TH_CHECK_OK(tl_reduce_into(h.exec, (tl_reduce_op)op, &gapped, 2, axes, &out_gapped));
          if (memcmp(out_dense.data, out_gapped.data, (size_t)shape[1] * tl_dtype_size(odt)) != 0) {
            char text[160];
            snprintf(text, sizeof text,
                     "%s op %d shape %lldx%lldx%lld, %d threads: blocked and "
                     "item-by-item sums differ",
                     tl_dtype_name(dt), op, (long long)shape[0], (long long)shape[1],
                     (long long)shape[2], threads);
            th_test_fail_at(__FILE__, __LINE__, text);
          }
          tl_tensor_release(&out_dense), tl_tensor_release(&out_gapped);
          tl_tensor_release(&backing), kt_free(&dense);
        }
    th_held_close(&h);
  }
}

/* Row sums of an input past the sums' prefetch window (12 MiB): rows of 512 bytes and of
 * 1 KiB, and rows of 8 KiB of doubles, go one row at a time there, other lengths four side
 * by side, as do all rows of a smaller input. Each output is bit for bit the sum of its row reduced
 * alone (one run, no kept axis), for every dtype, on one thread and on two. */
static void reduce_rows_from_memory_match_each_row_alone(void) {
  static const int64_t row_bytes[] = {512, 1024, 2048, 8192};
  for (int threads = 1; threads <= 2; threads++) {
    th_held h;
    th_held_open(&h, threads);
    for (int di = 0; di < 4; di++)
      for (size_t c = 0; c < sizeof row_bytes / sizeof row_bytes[0]; c++) {
        const tl_dtype dt = dtypes[di];
        const int64_t es = (int64_t)tl_dtype_size(dt), cols = row_bytes[c] / es;
        const int64_t rows = ((int64_t)13 << 20) / row_bytes[c] + 3; /* past 12 MiB */
        const int64_t shape[2] = {rows, cols};
        tl_tensor x, out, alone;
        TH_CHECK_OK(tl_tensor_create_row_major(dt, 2, shape, &x));
        TH_CHECK_OK(tl_random_into(h.exec, 11 + (uint64_t)c, &x));
        TH_CHECK_OK(tl_tensor_create(dt, 1, shape, &out));
        TH_CHECK_OK(tl_tensor_create(dt, 0, NULL, &alone));
        const int axes[1] = {1};
        TH_CHECK_OK(tl_reduce_into(h.exec, TL_REDUCE_SUM, &x, 1, axes, &out));
        int64_t bad = 0;
        for (int64_t r = 0; r < rows; r += r < 16 ? 1 : 97) { /* the first rows, then a spread */
          tl_tensor row;
          const int64_t row_shape[1] = {cols};
          TH_CHECK_OK(
              tl_tensor_wrap(dt, 1, row_shape, NULL, (char *)x.data + r * cols * es, 0, &row));
          const int all[1] = {0};
          TH_CHECK_OK(tl_reduce_into(h.exec, TL_REDUCE_SUM, &row, 1, all, &alone));
          bad += memcmp((const char *)out.data + r * es, alone.data, (size_t)es) != 0;
        }
        if (bad != 0) {
          char text[160];
          snprintf(text, sizeof text, "%s rows of %lld bytes, %d threads: %lld row sums differ",
                   tl_dtype_name(dt), (long long)row_bytes[c], threads, (long long)bad);
          th_test_fail_at(__FILE__, __LINE__, text);
        }
        tl_tensor_release(&x), tl_tensor_release(&out), tl_tensor_release(&alone);
      }
    th_held_close(&h);
  }
}

/* ---- gemm and contraction -------------------------------------------------------------- */

static void gemm_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t sizes[][3] = {{0, 3, 2}, {3, 0, 2}, {3, 2, 0},    {1, 1, 1},    {2, 2, 2},
                        {7, 5, 3}, {8, 8, 8}, {33, 17, 40}, {64, 64, 64}, {97, 70, 45}};
  for (int di = 0; di < 4; di++)
    for (int zi = 0; zi < (int)(sizeof sizes / sizeof sizes[0]); zi++)
      for (int la = 0; la < KT_LAYOUTS; la++)
        for (int lc = 0; lc < KT_LAYOUTS; lc += 2)
          for (int ab = 0; ab < 2; ab++) {
            tl_dtype dt = dtypes[di];
            int64_t m = sizes[zi][0], n = sizes[zi][1], k = sizes[zi][2];
            /* big shapes: a few layout pairs only (keeps the sanitizer runs short) */
            if (m * n * k > 4096 && la != lc && !(la == 3 && lc == 0)) continue;
            int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc2[2] = {m, n};
            kt_tensor a, b, c, c0;
            kt_make(&a, dt, 2, sa, (kt_layout)la, 0);
            kt_make(&b, dt, 2, sb, (kt_layout)((la + 1) % KT_LAYOUTS), 0);
            kt_make(&c, dt, 2, sc2, (kt_layout)lc, 0);
            kt_make(&c0, dt, 2, sc2, KT_COL, 0);
            TH_NUM_FOR_EACH(idx, 2, sc2) th_num_set(&c0.t, idx, th_num_get(&c.t, idx));
            int cplx = tl_dtype_is_complex(dt);
            tl_scalar alpha = ab ? (tl_scalar){1.0, 0.0} : (tl_scalar){0.5, cplx ? 0.25 : 0.0};
            tl_scalar beta = ab ? (tl_scalar){0.0, 0.0} : (tl_scalar){-1.5, cplx ? 1.0 : 0.0};
            TH_CHECK_OK(tl_gemm_into(h.exec, alpha, &a.t, &b.t, beta, &c.t));
            double complex al = alpha.re + I * alpha.im, be = beta.re + I * beta.im;
            TH_NUM_FOR_EACH(idx, 2, sc2) {
              double complex s = 0;
              double scale = 0;
              for (int64_t p = 0; p < k; p++) {
                int64_t ia[2] = {idx[0], p}, ib[2] = {p, idx[1]};
                s += th_num_get(&a.t, ia) * th_num_get(&b.t, ib);
                scale += cabs(th_num_get(&a.t, ia) * th_num_get(&b.t, ib));
              }
              double complex want = al * s + (ab ? 0 : be * th_num_get(&c0.t, idx));
              if (!th_num_close_enough(th_num_get(&c.t, idx), want, th_num_tolerance(dt) * 4,
                                       scale + 1.0))
                fail_at("gemm", dt, la, zi, th_num_get(&c.t, idx), want);
            }
            kt_free(&a), kt_free(&b), kt_free(&c), kt_free(&c0);
          }
  th_held_close(&h);
}

typedef struct contract_case {
  const char *a, *b, *c; /* labels as letters */
  int64_t extent[26];    /* by letter */
} contract_case;

static const contract_case contract_cases[] = {
    {"ij", "jk", "ik", {['i' - 'a'] = 5, ['j' - 'a'] = 4, ['k' - 'a'] = 3}},
    {"ij", "jk", "ki", {['i' - 'a'] = 2, ['j' - 'a'] = 2, ['k' - 'a'] = 2}},
    {"ji", "kj", "ik", {['i' - 'a'] = 8, ['j' - 'a'] = 8, ['k' - 'a'] = 8}},
    {"bij", "bjk", "bik", {['b' - 'a'] = 3, ['i' - 'a'] = 4, ['j' - 'a'] = 5, ['k' - 'a'] = 2}},
    {"ijb", "jkb", "kib", {['b' - 'a'] = 3, ['i' - 'a'] = 4, ['j' - 'a'] = 5, ['k' - 'a'] = 2}},
    {"i", "j", "ij", {['i' - 'a'] = 6, ['j' - 'a'] = 4}},
    {"i", "i", "", {['i' - 'a'] = 9}},
    {"abc", "cbd", "ad", {['a' - 'a'] = 3, ['b' - 'a'] = 4, ['c' - 'a'] = 5, ['d' - 'a'] = 6}},
    {"abc", "dca", "bd", {['a' - 'a'] = 3, ['b' - 'a'] = 4, ['c' - 'a'] = 2, ['d' - 'a'] = 5}},
    {"iaj", "jbi", "ab", {['i' - 'a'] = 3, ['a' - 'a'] = 4, ['j' - 'a'] = 2, ['b' - 'a'] = 5}},
    {"pqr", "rs", "sqp", {['p' - 'a'] = 2, ['q' - 'a'] = 3, ['r' - 'a'] = 4, ['s' - 'a'] = 5}},
    {"ab", "bc", "ac", {['a' - 'a'] = 1, ['b' - 'a'] = 7, ['c' - 'a'] = 1}},
    {"ab", "bc", "ac", {['a' - 'a'] = 4, ['b' - 'a'] = 0, ['c' - 'a'] = 3}},
    {"ab", "bc", "ac", {['a' - 'a'] = 0, ['b' - 'a'] = 2, ['c' - 'a'] = 3}},
    {"xab", "xbc", "acx", {['x' - 'a'] = 6, ['a' - 'a'] = 1, ['b' - 'a'] = 3, ['c' - 'a'] = 4}},
    {"kij", "jk", "i", {['i' - 'a'] = 7, ['j' - 'a'] = 3, ['k' - 'a'] = 4}},
    {"mn", "nm", "", {['m' - 'a'] = 30, ['n' - 'a'] = 70}},
    {"ij", "jk", "ik", {['i' - 'a'] = 90, ['j' - 'a'] = 120, ['k' - 'a'] = 70}},
    /* a matrix-vector product whose rows lie on either side of the summed label: the slower
     * rows become batch labels b lacks (contract.c, rows_in_batch) */
    {"ajb", "j", "ab", {['a' - 'a'] = 5, ['j' - 'a'] = 3, ['b' - 'a'] = 7}},
    {"ajb", "j", "ba", {['a' - 'a'] = 4, ['j' - 'a'] = 2, ['b' - 'a'] = 9}},
    {"abjc", "j", "abc", {['a' - 'a'] = 3, ['b' - 'a'] = 4, ['j' - 'a'] = 5, ['c' - 'a'] = 6}},
    {"ajbk", "kj", "ab", {['a' - 'a'] = 6, ['j' - 'a'] = 2, ['b' - 'a'] = 17, ['k' - 'a'] = 3}},
    /* the same with columns (an MPS gate on the physical leg), either operand first, with a
     * batch label the product already has, and with two summed labels */
    {"ajb", "jk", "akb", {['a' - 'a'] = 16, ['j' - 'a'] = 2, ['b' - 'a'] = 17, ['k' - 'a'] = 3}},
    {"jk", "ajb", "abk", {['a' - 'a'] = 17, ['j' - 'a'] = 3, ['b' - 'a'] = 16, ['k' - 'a'] = 2}},
    {"xajb",
     "xjk",
     "xakb",
     {['x' - 'a'] = 3, ['a' - 'a'] = 16, ['j' - 'a'] = 2, ['b' - 'a'] = 17, ['k' - 'a'] = 2}},
    {"ajkb",
     "jkmn",
     "amnb",
     {['a' - 'a'] = 16,
      ['j' - 'a'] = 2,
      ['k' - 'a'] = 2,
      ['b' - 'a'] = 17,
      ['m' - 'a'] = 2,
      ['n' - 'a'] = 3}},
    /* a batch label fastest (row-major layouts: contract_vertical.c) */
    {"ij", "ij", "j", {['i' - 'a'] = 13, ['j' - 'a'] = 9}},
    {"acbd", "acd", "bd", {['a' - 'a'] = 3, ['c' - 'a'] = 2, ['b' - 'a'] = 4, ['d' - 'a'] = 9}},
    {"ab", "aib", "ib", {['a' - 'a'] = 5, ['i' - 'a'] = 3, ['b' - 'a'] = 10}},
    /* a tall product past 256 rows with a narrow B: the small kernels' reach */
    {"ij", "jk", "ik", {['i' - 'a'] = 600, ['j' - 'a'] = 4, ['k' - 'a'] = 6}},
};

static void labels_of(const char *s, int *labels, int64_t *shape, const int64_t *extent) {
  for (int i = 0; s[i]; i++) {
    labels[i] = s[i] - 'a';
    shape[i] = extent[s[i] - 'a'];
  }
}

static void contract_table_matches_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  int ncases = (int)(sizeof contract_cases / sizeof contract_cases[0]);
  for (int ci = 0; ci < ncases; ci++)
    for (int di = 0; di < 4; di++)
      for (int la = 0; la < KT_LAYOUTS; la++)
        for (int lc = 0; lc < KT_LAYOUTS; lc += 2) {
          const contract_case *cc = &contract_cases[ci];
          tl_dtype dt = dtypes[di];
          int64_t work = 1;
          for (int l = 0; l < 26; l++) work *= cc->extent[l] > 0 ? cc->extent[l] : 1;
          if (work > 4096 && la != lc && !(la == 3 && lc == 0)) continue;
          int ra = (int)strlen(cc->a), rb = (int)strlen(cc->b), rc = (int)strlen(cc->c);
          int al[8], bl[8], cl[8];
          int64_t sa[8], sb[8], sc2[8];
          labels_of(cc->a, al, sa, cc->extent);
          labels_of(cc->b, bl, sb, cc->extent);
          labels_of(cc->c, cl, sc2, cc->extent);
          kt_tensor a, b, c;
          kt_make(&a, dt, ra, sa, (kt_layout)la, 0);
          kt_make(&b, dt, rb, sb, (kt_layout)((la + 2) % KT_LAYOUTS), 0);
          kt_make(&c, dt, rc, sc2, (kt_layout)lc, 0);
          TH_CHECK_OK(tl_contract_into(h.exec, cl, &a.t, al, &b.t, bl, &c.t));
          /* naive: one pass over every assignment of every label, accumulating into a
           * column-major reference of c */
          int all[26], nall = 0;
          int64_t ext[26];
          const char *specs[3] = {cc->a, cc->b, cc->c};
          for (int sp = 0; sp < 3; sp++)
            for (int i = 0; specs[sp][i]; i++) {
              int l = specs[sp][i] - 'a', seen = 0;
              for (int j = 0; j < nall; j++) seen |= all[j] == l;
              if (!seen) all[nall] = l, ext[nall] = cc->extent[l], nall++;
            }
          int64_t ncell = th_num_numel(rc, sc2);
          double complex *ref = calloc((size_t)(ncell + 1), sizeof *ref);
          double *scale = calloc((size_t)(ncell + 1), sizeof *scale);
          TH_NUM_FOR_EACH(v, nall, ext) {
            int64_t val[26];
            for (int j = 0; j < nall; j++) val[all[j]] = v[j];
            int64_t ia[8], ib[8], cell = 0, step = 1;
            for (int i = 0; i < ra; i++) ia[i] = val[al[i]];
            for (int i = 0; i < rb; i++) ib[i] = val[bl[i]];
            for (int i = 0; i < rc; i++) cell += val[cl[i]] * step, step *= sc2[i];
            double complex p = th_num_get(&a.t, ia) * th_num_get(&b.t, ib);
            ref[cell] += p;
            scale[cell] += cabs(p);
          }
          int64_t cell = 0;
          TH_NUM_FOR_EACH(cidx, rc, sc2) {
            if (!th_num_close_enough(th_num_get(&c.t, cidx), ref[cell], th_num_tolerance(dt) * 4,
                                     scale[cell] + 1.0))
              fail_at(cc->c[0] ? cc->c : "(scalar)", dt, la, ci, th_num_get(&c.t, cidx), ref[cell]);
            cell++;
          }
          free(ref), free(scale);
          kt_free(&a), kt_free(&b), kt_free(&c);
        }
  th_held_close(&h);
}

/* ---- a batch label at unit stride everywhere (contract_vertical.c) ------------------- */

/* One element of kf,kf->f (rows 0), kmf,kf->mf (rows 1: row[0] is m) or kmnf,kf->mnf
 * (rows 2): the products summed over k in order from the first, each product and sum
 * rounded in the dtype, as the route promises. */
static double complex vertical_expected(tl_dtype dt, const tl_tensor *a, const tl_tensor *b,
                                        int rows, const int64_t *row, int64_t fi, int64_t ks) {
  double complex sum = 0;
  float sr = 0, si = 0;
  double dr = 0, di = 0;
  for (int64_t k = 0; k < ks; k++) {
    int64_t ia[4] = {k, 0, 0, 0}, ib[2] = {k, fi};
    for (int r = 0; r < rows; r++) ia[1 + r] = row[r];
    ia[1 + rows] = fi;
    const double complex x = th_num_get(a, ia), y = th_num_get(b, ib);
    if (dt == TL_F32 || dt == TL_C64) {
      const float xr = (float)creal(x), xi = (float)cimag(x), yr = (float)creal(y),
                  yi = (float)cimag(y);
      const float pr = dt == TL_F32 ? xr * yr : xr * yr - xi * yi;
      const float pi = dt == TL_F32 ? 0.0f : xr * yi + xi * yr;
      sr = k == 0 ? pr : sr + pr;
      si = k == 0 ? pi : si + pi;
      sum = (double)sr + I * (double)si;
    } else {
      const double xr = creal(x), xi = cimag(x), yr = creal(y), yi = cimag(y);
      const double pr = dt == TL_F64 ? xr * yr : xr * yr - xi * yi;
      const double pi = dt == TL_F64 ? 0.0 : xr * yi + xi * yr;
      dr = k == 0 ? pr : dr + pr;
      di = k == 0 ? pi : di + pi;
      sum = dr + I * di;
    }
  }
  return sum;
}

/* Row-major operands whose last label f is a batch label (at unit stride in a, b and c):
 * every element of c is the in-order sum bit for bit, on one thread and on two, with no
 * label one operand lacks (ij,ij->j), with one (aib,ab->ib, whose rows go inside the sum)
 * and with two (aijb,ab->ijb: two threads cut the 15 rows into runs of 8 and 7, the second
 * starting inside the first row label's extent). The in-order sum is not what the GEMM
 * route's dots give (those keep several partial sums), so the check fails if such a
 * contraction goes there. */
static void contract_vertical_sums_in_order_bit_for_bit(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  enum { KS = 301, MS = 5, NS = 3, FS = 37 };
  static const char *const specs[3] = {"ij,ij->j", "aib,ab->ib", "aijb,ab->ijb"};
  for (int di = 0; di < 4; di++)
    for (int rows = 0; rows < 3; rows++) {
      const tl_dtype dt = dtypes[di];
      /* labels: k 0, f 1, m 2, n 3 */
      int64_t ashape[4] = {KS}, cshape[3];
      int al[4] = {0}, cl[3];
      const int64_t bshape[2] = {KS, FS}, extents[2] = {MS, NS};
      const int bl[2] = {0, 1};
      for (int r = 0; r < rows; r++)
        ashape[1 + r] = cshape[r] = extents[r], al[1 + r] = cl[r] = 2 + r;
      ashape[1 + rows] = cshape[rows] = FS, al[1 + rows] = cl[rows] = 1;
      kt_tensor a, b, c1, c2;
      kt_make(&a, dt, rows + 2, ashape, KT_ROW, 0);
      kt_make(&b, dt, 2, bshape, KT_ROW, 0);
      kt_make(&c1, dt, rows + 1, cshape, KT_ROW, 0);
      kt_make(&c2, dt, rows + 1, cshape, KT_ROW, 0);
      TH_CHECK_OK(tl_contract_into(one.exec, cl, &a.t, al, &b.t, bl, &c1.t));
      TH_CHECK_OK(tl_contract_into(two.exec, cl, &a.t, al, &b.t, bl, &c2.t));
      for (int64_t mi = 0; mi < (rows > 0 ? MS : 1); mi++)
        for (int64_t ni = 0; ni < (rows > 1 ? NS : 1); ni++)
          for (int64_t fi = 0; fi < FS; fi++) {
            const int64_t at[3] = {rows > 0 ? mi : fi, rows > 1 ? ni : fi, fi}, row[2] = {mi, ni};
            const double complex want = vertical_expected(dt, &a.t, &b.t, rows, row, fi, KS);
            if (th_num_get(&c1.t, at) != want || th_num_get(&c2.t, at) != want)
              fail_at(specs[rows], dt, KT_ROW, (int)fi, th_num_get(&c1.t, at), want);
          }
      kt_free(&a), kt_free(&b), kt_free(&c1), kt_free(&c2);
    }
  th_held_close(&one);
  th_held_close(&two);
}

typedef struct cancel_later {
  tl_exec *exec;
  int delay_ms;
} cancel_later;

static void *cancel_after(void *arg) {
  cancel_later *c = arg;
  struct timespec t = {0, (long)c->delay_ms * 1000000L};
  nanosleep(&t, NULL);
  tl_exec_cancel(c->exec);
  return NULL;
}

/* A sum across the batch label over 2^40 summed indices (both operands broadcast along
 * them: stride 0, no memory) cannot finish; tl_exec_cancel from another thread stops it
 * with TL_E_CANCELLED and a message within the test's alarm, on one thread and on two. */
static void contract_vertical_long_sum_stops_at_cancel(void) {
  for (int threads = 1; threads <= 2; threads++) {
    th_held h;
    th_held_open(&h, threads);
    double row[16] = {0}, out[16];
    const int64_t shape[2] = {(int64_t)1 << 40, 16}, strides[2] = {0, 1}, oshape[1] = {16};
    tl_tensor a, c;
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, strides, row, 0, &a));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, oshape, NULL, out, 0, &c));
    const int al[2] = {0, 1}, cl[1] = {1};
    cancel_later later = {h.exec, 50};
    pthread_t thread;
    TH_CHECK(pthread_create(&thread, NULL, cancel_after, &later) == 0);
    TH_CHECK_STATUS(tl_contract_into(h.exec, cl, &a, al, &a, al, &c), TL_E_CANCELLED);
    TH_CHECK(strstr(tl_last_message(), "across its batch axis") != NULL);
    pthread_join(thread, NULL);
    tl_exec_cancel_clear(h.exec);
    th_held_close(&h);
  }
}

/* C = A B checked by C x = A (B x) for random x (Freivalds), for sizes too big for naive. */
static void contract_randomized_residual_is_small(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t sizes[][4] = {{300, 257, 190, 1}, {64, 512, 96, 3}, {1000, 40, 30, 2}};
  for (int di = 0; di < 4; di++)
    for (int zi = 0; zi < 3; zi++) {
      tl_dtype dt = dtypes[di];
      int64_t m = sizes[zi][0], n = sizes[zi][1], k = sizes[zi][2], nb = sizes[zi][3];
      int64_t sa[3] = {nb, k, m}, sb[3] = {n, k, nb}, sc2[3] = {m, nb, n};
      int al[3] = {0, 2, 1}, bl[3] = {3, 2, 0}, cl[3] = {1, 0, 3}; /* b=0 m=1 k=2 n=3 */
      kt_tensor a, b, c;
      kt_make(&a, dt, 3, sa, KT_COL, 0);
      kt_make(&b, dt, 3, sb, KT_ROW, 0);
      kt_make(&c, dt, 3, sc2, KT_GENERAL, 0);
      TH_CHECK_OK(tl_contract_into(h.exec, cl, &a.t, al, &b.t, bl, &c.t));
      double complex *x = malloc(sizeof *x * (size_t)n), *bx = malloc(sizeof *bx * (size_t)k);
      for (int64_t batch = 0; batch < nb; batch++) {
        for (int64_t j = 0; j < n; j++) x[j] = kt_uniform() + I * kt_uniform();
        for (int64_t p = 0; p < k; p++) {
          bx[p] = 0;
          for (int64_t j = 0; j < n; j++) {
            int64_t ib[3] = {j, p, batch};
            bx[p] += th_num_get(&b.t, ib) * x[j];
          }
        }
        double worst = 0;
        for (int64_t i = 0; i < m; i++) {
          double complex lhs = 0, rhs = 0;
          for (int64_t j = 0; j < n; j++) {
            int64_t ic[3] = {i, batch, j};
            lhs += th_num_get(&c.t, ic) * x[j];
          }
          for (int64_t p = 0; p < k; p++) {
            int64_t ia[3] = {batch, p, i};
            rhs += th_num_get(&a.t, ia) * bx[p];
          }
          double r = cabs(lhs - rhs) / (sqrt((double)(n * k)) + cabs(rhs));
          if (r > worst) worst = r;
        }
        if (worst > th_num_tolerance(dt) * 10) {
          char text[200];
          snprintf(text, sizeof text, "residual %g for %s m=%lld n=%lld k=%lld", worst,
                   tl_dtype_name(dt), (long long)m, (long long)n, (long long)k);
          th_test_fail_at(__FILE__, __LINE__, text);
        }
      }
      free(x), free(bx);
      kt_free(&a), kt_free(&b), kt_free(&c);
    }
  th_held_close(&h);
}

/* ---- threading ------------------------------------------------------------------------- */

static void root_team_results_match_one_thread(void) {
  th_held h2, h1;
  th_held_open(&h2, 2);
  int64_t m = 700, n = 650, k = 300;
  int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc2[2] = {m, n};
  kt_tensor a, b, c1, c2;
  kt_make(&a, TL_F64, 2, sa, KT_COL, 0);
  kt_make(&b, TL_F64, 2, sb, KT_ROW, 0);
  kt_make(&c1, TL_F64, 2, sc2, KT_COL, 0);
  kt_make(&c2, TL_F64, 2, sc2, KT_COL, 0);
  TH_CHECK_OK(tl_gemm_into(h2.exec, tl_scalar_real(1), &a.t, &b.t, tl_scalar_real(0), &c2.t));
  /* permute, reduce and axpby big enough to be split */
  int perm[2] = {1, 0};
  int64_t st[2] = {n, m};
  kt_tensor t2, t1;
  kt_make(&t2, TL_F64, 2, st, KT_COL, 0);
  kt_make(&t1, TL_F64, 2, st, KT_COL, 0);
  TH_CHECK_OK(tl_permute_into(h2.exec, &c2.t, perm, &t2.t));
  tl_tensor r2, r1, s2, s1;
  int axis1[1] = {1}, axis0[1] = {0};
  TH_CHECK_OK(tl_reduce(h2.exec, TL_REDUCE_SUM, &t2.t, 1, axis1, &r2));
  TH_CHECK_OK(tl_reduce(h2.exec, TL_REDUCE_NORM2, &t2.t, 1, axis0, &s2));
  th_held_close(&h2);
  th_held_open(&h1, 1);
  TH_CHECK_OK(tl_gemm_into(h1.exec, tl_scalar_real(1), &a.t, &b.t, tl_scalar_real(0), &c1.t));
  /* The same input as the split permute: a permute is exact, so the two must agree bit for
   * bit (the GEMMs agree only to rounding: which provider kernel runs a block can differ). */
  TH_CHECK_OK(tl_permute_into(h1.exec, &c2.t, perm, &t1.t));
  TH_CHECK_OK(tl_reduce(h1.exec, TL_REDUCE_SUM, &t1.t, 1, axis1, &r1));
  TH_CHECK_OK(tl_reduce(h1.exec, TL_REDUCE_NORM2, &t1.t, 1, axis0, &s1));
  th_held_close(&h1);
  TH_NUM_FOR_EACH(idx, 2, sc2)
  TH_CHECK(th_num_close_enough(th_num_get(&c1.t, idx), th_num_get(&c2.t, idx), 1e-12, 1.0));
  TH_NUM_FOR_EACH(idx, 2, st) TH_CHECK(th_num_get(&t1.t, idx) == th_num_get(&t2.t, idx));
  TH_NUM_FOR_EACH(idx, 1, r1.shape)
  TH_CHECK(th_num_close_enough(th_num_get(&r1, idx), th_num_get(&r2, idx), 1e-12, 1.0));
  TH_NUM_FOR_EACH(idx, 1, s1.shape)
  TH_CHECK(th_num_close_enough(th_num_get(&s1, idx), th_num_get(&s2, idx), 1e-12, 1.0));
  tl_tensor_release(&r1), tl_tensor_release(&r2), tl_tensor_release(&s1), tl_tensor_release(&s2);
  kt_free(&a), kt_free(&b), kt_free(&c1), kt_free(&c2), kt_free(&t1), kt_free(&t2);
}

/* A long contiguous copy on a team of two is cut into pieces (drive.c, 65536 elements
 * each, streaming stores from 16 MiB on): every element arrives bit for bit, at offsets one
 * element off any alignment, and nothing past either end of the destination is written. */
static void long_copies_on_a_team_match_their_source(void) {
  th_held h;
  th_held_open(&h, 2);
  const tl_dtype kinds[2] = {TL_F64, TL_C128};
  for (int d = 0; d < 2; d++) {
    const tl_dtype dt = kinds[d];
    const int64_t es = (int64_t)tl_dtype_size(dt);
    const int64_t lengths[3] = {3 * 65536 + 17, 40000, ((int64_t)16 << 20) / es + 4099};
    for (int l = 0; l < 3; l++) {
      const int64_t n = lengths[l], span[1] = {n + 2}, shape[1] = {n}, unit[1] = {1};
      tl_tensor src_back, dst_back, src, dst;
      TH_CHECK_OK(tl_tensor_create(dt, 1, span, &src_back));
      TH_CHECK_OK(tl_tensor_create(dt, 1, span, &dst_back));
      unsigned char *sb = src_back.data, *db = dst_back.data;
      for (int64_t i = 0; i < (n + 2) * es; i++)
        sb[i] = (unsigned char)(i * 7 + i / 4093), db[i] = 0xA5;
      TH_CHECK_OK(tl_tensor_wrap(dt, 1, shape, unit, src_back.data, 1, &src));
      TH_CHECK_OK(tl_tensor_wrap(dt, 1, shape, unit, dst_back.data, 1, &dst));
      TH_CHECK_OK(tl_copy_into(h.exec, &src, &dst));
      TH_CHECK(memcmp(db + es, sb + es, (size_t)(n * es)) == 0);
      for (int64_t i = 0; i < es; i++) TH_CHECK(db[i] == 0xA5 && db[(n + 1) * es + i] == 0xA5);
      tl_tensor_release(&src_back), tl_tensor_release(&dst_back);
    }
  }
  th_held_close(&h);
}

typedef struct ticket_arg {
  tl_ticket ticket;
  kt_tensor *a, *b, *out;
  tl_status team_status, add_status, gemm_status;
  int enter_status;
} ticket_arg;

static int on_ticket(tl_exec *exec, void *arg_) {
  ticket_arg *arg = (ticket_arg *)arg_;
  arg->team_status = tl_exec_set_team(exec, 2);
  arg->add_status = tl_add_into(exec, &arg->a->t, &arg->b->t, &arg->out->t);
  arg->gemm_status = tl_gemm_into(exec, tl_scalar_real(1), &arg->a->t, &arg->b->t,
                                  tl_scalar_real(0), &arg->out->t);
  return 0;
}

static void *ticket_thread(void *arg_) {
  ticket_arg *arg = (ticket_arg *)arg_;
  arg->enter_status = tl_ticket_enter(&arg->ticket, on_ticket, arg, NULL);
  return NULL;
}

static void team_wider_than_one_on_child_surface_is_unavailable(void) {
  th_held h;
  th_held_open(&h, 2);
  int64_t s[2] = {64, 64};
  kt_tensor a, b, out;
  kt_make(&a, TL_F64, 2, s, KT_COL, 0);
  kt_make(&b, TL_F64, 2, s, KT_COL, 0);
  kt_make(&out, TL_F64, 2, s, KT_COL, 0);
  kt_image before = kt_snapshot(&out.backing);
  ticket_arg arg;
  memset(&arg, 0, sizeof arg);
  arg.a = &a, arg.b = &b, arg.out = &out;
  TH_CHECK_OK(tl_session_ticket(h.session, &arg.ticket));
  pthread_t thread;
  TH_CHECK(pthread_create(&thread, NULL, ticket_thread, &arg) == 0);
  pthread_join(thread, NULL);
  TH_CHECK_OK((tl_status)arg.enter_status);
  TH_CHECK_OK(arg.team_status);
  TH_CHECK_STATUS(arg.add_status, TL_E_UNAVAILABLE);
  TH_CHECK_STATUS(arg.gemm_status, TL_E_UNAVAILABLE);
  TH_CHECK(kt_unchanged(&before, &out.backing));
  th_held_close(&h);
  kt_free(&a), kt_free(&b), kt_free(&out);
}

typedef struct lane_arg {
  kt_tensor *a, *b, *outs;
  tl_status status[8];
} lane_arg;

static int on_lane(tl_lane *lane, int lane_index, void *arg_) {
  lane_arg *arg = (lane_arg *)arg_;
  tl_lane_cancel(lane);
  while (!tl_lane_cancelled(lane)) {
  }
  tl_exec *exec = tl_lane_exec(lane);
  arg->status[lane_index] = tl_add_into(exec, &arg->a->t, &arg->b->t, &arg->outs[lane_index].t);
  return 0;
}

static void on_phase(tl_phase *phase, void *arg) { tl_phase_run(phase, on_lane, arg, NULL); }

static void cancelled_lane_route_returns_cancelled_and_writes_nothing(void) {
  th_held h;
  th_held_open(&h, 2);
  int64_t s[2] = {50, 40};
  kt_tensor a, b, outs[8];
  kt_make(&a, TL_F64, 2, s, KT_COL, 0);
  kt_make(&b, TL_F64, 2, s, KT_COL, 0);
  for (int i = 0; i < 8; i++) kt_make(&outs[i], TL_F64, 2, s, KT_COL, 0);
  kt_image before[8];
  for (int i = 0; i < 8; i++) before[i] = kt_snapshot(&outs[i].backing);
  lane_arg arg;
  memset(&arg, 0, sizeof arg);
  arg.a = &a, arg.b = &b, arg.outs = outs;
  const tl_status not_run = (tl_status)-1;
  for (int i = 0; i < 8; i++) arg.status[i] = not_run;
  TH_CHECK_OK(tl_session_phase(h.session, on_phase, &arg));
  /* a lane that saw the flag before its callback is skipped; every lane that ran got
   * TL_E_CANCELLED from the route and its output is untouched */
  int ran = 0;
  for (int i = 0; i < 8; i++) {
    if (arg.status[i] != not_run) {
      TH_CHECK_STATUS(arg.status[i], TL_E_CANCELLED);
      ran++;
    }
    TH_CHECK(kt_unchanged(&before[i], &outs[i].backing));
  }
  TH_CHECK(ran >= 1);
  th_held_close(&h);
  kt_free(&a), kt_free(&b);
  for (int i = 0; i < 8; i++) kt_free(&outs[i]);
}

TH_TEST_MAIN(TH_CASE(elementwise_binary_table_matches_naive),
             TH_CASE(elementwise_broadcasts_extent_one_axes),
             TH_CASE(elementwise_unary_table_matches_naive), TH_CASE(scale_axpby_fill_match_naive),
             TH_CASE(permute_table_matches_naive), TH_CASE(copy_into_and_fresh_permute_match_naive),
             TH_CASE(reshape_is_a_view_when_strides_allow_else_a_copy),
             TH_CASE(reduce_table_matches_naive), TH_CASE(reduce_long_runs_match_naive),
             TH_CASE(reduce_short_rows_add_in_order),
             TH_CASE(reduce_blocked_items_match_item_by_item),
             TH_CASE(reduce_rows_from_memory_match_each_row_alone),
             TH_CASE(gemm_table_matches_naive), TH_CASE(contract_table_matches_naive),
             TH_CASE(contract_vertical_sums_in_order_bit_for_bit),
             TH_CASE(contract_vertical_long_sum_stops_at_cancel),
             TH_CASE(contract_randomized_residual_is_small),
             TH_CASE(root_team_results_match_one_thread),
             TH_CASE(long_copies_on_a_team_match_their_source),
             TH_CASE(team_wider_than_one_on_child_surface_is_unavailable),
             TH_CASE(cancelled_lane_route_returns_cancelled_and_writes_nothing))
