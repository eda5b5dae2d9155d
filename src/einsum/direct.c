/* src/einsum/direct.c: the einsum terms that are not contractions, run by the memory-bound
 * kernels instead of GEMM.
 *
 * - A pairwise step that sums nothing (a Hadamard product in any axis order, an outer
 *   product, a broadcast product) is one elementwise multiply over the result's index
 *   space, each input seen through a view with the result's axes (stride 0 where it lacks
 *   the label). Through GEMM it was a batch of 1x1x1 products, one per element. One whose
 *   output runs across an input's dense axis goes through product_tiles.c in one pass
 *   where it can, else through two (the product in the input's order, then the blocked
 *   copy).
 * - Where the output's rows are short and one input repeats along them (ab,b->ab with b of a
 *   few elements), two axes are made one row against a repeated copy of that input.
 * - Two such steps in a row, the second multiplying the first's result by another operand
 *   (ij,ij,ij->ij), run as one pass when no input is read across its dense axis: the
 *   first product is made a chunk at a time into a stack buffer, not into scratch.
 * - A one-operand step (a transpose, a diagonal, a trace, a reduction) of at least
 *   TL__EINSUM_DIRECT_MIN elements is a blocked copy (tl_copy_into) when it sums nothing,
 *   else a sum (tl_reduce_into) into the output seen in the input's axis order. Smaller
 *   ones stay on the fold, whose per-call cost is lower.
 *
 * Invariant: both write each output element exactly once, as the fold does. */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "base/base.h"
#include "einsum_int.h"
#include "exec/exec.h"
#include "kernels/kernels.h"
#include "tenlane/ops.h"

static int index_of(const int *labels, int count, int label) {
  for (int k = 0; k < count; k++) {
    if (labels[k] == label) return k;
  }
  return -1;
}

int tl__einsum_step_sums_nothing(const int *a_labels, int a_rank, const int *b_labels, int b_rank,
                                 const int *out_labels, int out_rank) {
  for (int k = 0; k < a_rank; k++) {
    if (index_of(out_labels, out_rank, a_labels[k]) < 0) return 0;
  }
  for (int k = 0; k < b_rank; k++) {
    if (index_of(out_labels, out_rank, b_labels[k]) < 0) return 0;
  }
  return 1;
}

/* `in` seen with out's axes: stride 0 on a label it lacks. */
static void view_in_out_axes(const tl_tensor *in, const int *in_labels, const tl_tensor *out,
                             const int *out_labels, tl_tensor *view) {
  memset(view, 0, sizeof *view);
  view->dtype = in->dtype;
  view->rank = out->rank;
  for (int r = 0; r < out->rank; r++) {
    int k = index_of(in_labels, in->rank, out_labels[r]);
    view->shape[r] = out->shape[r];
    view->strides[r] = k >= 0 ? in->strides[k] : 0;
  }
  view->offset = in->offset;
  view->data = in->data;
}

void tl__advise_huge(void *buffer, size_t bytes) {
#ifdef MADV_HUGEPAGE
  /* The whole 2 MiB pages inside the buffer: a large fresh result then faults in 2 MiB at a
   * time, as numpy's do (it advises the same), not 4 KiB. */
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (bytes < 2 * huge) return;
  uintptr_t begin = ((uintptr_t)buffer + huge - 1) & ~(huge - 1);
  uintptr_t end = ((uintptr_t)buffer + bytes) & ~(huge - 1);
  if (end > begin) (void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
  (void)buffer, (void)bytes;
#endif
}

/* The axis of t's smallest nonzero stride among axes of extent > 1, or -1. */
static int densest_axis(const tl_tensor *t) {
  int best = -1;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] < 2 || t->strides[k] == 0) continue;
    if (best < 0 || tl__abs64(t->strides[k]) < tl__abs64(t->strides[best])) best = k;
  }
  return best;
}

/* Elements from which a product whose output runs across its inputs' dense axis is made
 * in the inputs' order and then copied through the blocked permute (two streaming passes
 * beat one pass whose reads or writes each touch a new cache line). */
#define TL__EINSUM_PRODUCT_TILE_MIN 65536
/* Below the size from which the permute core streams its output (16 MiB, permute_core.c),
 * the two passes go band by band over the lead input's slowest axis: each band's product is
 * made into a scratch slot of about BAND_BYTES (a core's L2 on the machines measured) and
 * copied out from there, so the intermediate does not go out to memory and scratch is one
 * band per thread, not a copy of the result. A band keeps at least BAND_MIN_INDICES indices
 * of that axis (whole cache lines of the output when it is the output's dense axis); where
 * that is more than BAND_MAX_BYTES, or the output streams (a band's copy is too small to
 * stream, and the whole copy's streaming stores were worth more than the band in a c128
 * probe), the product is made whole first. */
#define TL__EINSUM_PRODUCT_STREAM_BYTES ((int64_t)16 << 20)
#define TL__EINSUM_PRODUCT_BAND_BYTES ((int64_t)1 << 20)
#define TL__EINSUM_PRODUCT_BAND_MIN_INDICES 16
#define TL__EINSUM_PRODUCT_BAND_MAX_BYTES ((int64_t)4 << 20)

typedef struct product_bands {
  tl_tensor out, a, b, tmp; /* whole views; tmp.data is slot 0 */
  int axis;                 /* the lead input's slowest axis: the one cut into bands */
  int64_t band;             /* its indices per band */
  size_t slot_bytes;
  tl__row_fn mul;
} product_bands;

static void band_view(tl_tensor *t, int axis, int64_t begin, int64_t len) {
  t->offset += begin * t->strides[axis];
  t->shape[axis] = len;
}

/* Bands [begin, end): each band's product into the worker's slot, then the slot's copy
 * into out through the permute core. Both are elementwise: a band's bits are those of the
 * whole product, whoever runs it. */
static void product_band_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const product_bands *j = arg;
  char *slot = (char *)j->tmp.data + (size_t)(worker_index + 1) * j->slot_bytes;
  for (size_t item = begin; item < end; item++) {
    int64_t first = (int64_t)item * j->band, extent = j->out.shape[j->axis];
    int64_t len = extent - first < j->band ? extent - first : j->band;
    tl_tensor out = j->out, a = j->a, b = j->b, tmp = j->tmp;
    band_view(&out, j->axis, first, len);
    band_view(&a, j->axis, first, len);
    band_view(&b, j->axis, first, len);
    tmp.shape[j->axis] = len;
    tmp.data = slot;
    const tl_tensor *ts[3] = {&tmp, &a, &b};
    tl__loop loop;
    tl__loop_plan(&loop, 3, ts);
    tl__loop_run(&loop, 0, loop.rows, j->mul, NULL);
    tl__permute_plan plan;
    tl__permute_plan_make(&plan, &out, &tmp);
    tl__permute_run(&plan, 0, plan.blocks);
  }
}

/* Blocks [begin, end) of the one-pass route (product_tiles.c). */
static void product_tiles_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  (void)worker_index;
  tl__product_tiles_run(arg, (int64_t)begin, (int64_t)end);
}

/* ---- short rows against a short broadcast input ------------------------------------------
 * ab,b->ab with b of a few elements: the loop's rows are b's extent long, and each costs a
 * row call for a handful of products (1.2-1.4x numpy's time at 7 or 8). Where the output
 * and one input are dense over their two fastest axes and the other input runs along the
 * first with stride 0 along the second (it repeats every `period` elements), the two axes
 * are one row: each call copies the short input, repeated, into a stack buffer of whole
 * periods, and multiplies the long row by it a buffer at a time, each element by the same
 * kernel as before (so the same bits). */
#define PERIODIC_MAX 32     /* longest period taken: longer rows pay their call already */
#define PERIODIC_REPEAT 256 /* elements of the buffer's repeated periods, at least */

static atomic_size_t periodic_runs; /* tl__einsum_periodic_runs */

size_t tl__einsum_periodic_runs(void) { return atomic_load(&periodic_runs); }

typedef struct periodic_product {
  tl__row_fn mul;
  int64_t es, period;
  const char *out0; /* out's element 0: a row's phase is its offset from here */
  int y_is_b;       /* 1: the repeating input is the product's second operand */
} periodic_product;

/* p: out, a, b; the repeating input at its first element (stride 0 along the row). */
static void periodic_row(int64_t n, char *const *p, const int64_t *s, const void *params) {
  const periodic_product *f = params;
  const int64_t period = f->period, es = f->es;
  const int64_t whole = (PERIODIC_REPEAT + period - 1) / period * period;
  _Alignas(64) char rep[(PERIODIC_REPEAT + 2 * PERIODIC_MAX) * 16];
  const char *y = p[f->y_is_b ? 2 : 1];
  const int64_t fill = whole + period < n + period ? whole + period : n + period;
  for (int64_t j = 0; j < fill; j++) memcpy(rep + j * es, y + (j % period) * es, (size_t)es);
  /* out's strides past the row are whole periods (periodic_views), so this is the row's
   * phase at p[0] */
  const int64_t phase = ((int64_t)((p[0] - f->out0) / es) % period + period) % period;
  const int x = f->y_is_b ? 1 : 2;
  for (int64_t at = 0; at < n; at += whole) {
    const int64_t len = n - at < whole ? n - at : whole;
    char *const rows[3] = {p[0] + at * s[0] * es,
                           f->y_is_b ? p[x] + at * s[x] * es : rep + phase * es,
                           f->y_is_b ? rep + phase * es : p[x] + at * s[x] * es};
    const int64_t strides[3] = {s[0], f->y_is_b ? s[x] : 1, f->y_is_b ? 1 : s[x]};
    f->mul(len, rows, strides, NULL);
  }
}

/* The views of the periodic product (above) with out's two fastest axes made one, or 0
 * where it does not apply. */
static int periodic_views(const tl_tensor *out, const tl_tensor *av, const tl_tensor *bv,
                          tl_tensor *v, periodic_product *f) {
  int d0 = -1, d1 = -1;
  for (int k = 0; k < out->rank; k++) {
    if (out->strides[k] == 1 && out->shape[k] >= 2) d0 = k;
  }
  if (d0 < 0 || out->shape[d0] > PERIODIC_MAX || tl_tensor_numel(out) < PERIODIC_REPEAT) return 0;
  const int64_t period = out->shape[d0];
  for (int k = 0; k < out->rank; k++) {
    if (k != d0 && out->strides[k] == period && out->shape[k] >= 2) d1 = k;
  }
  if (d1 < 0) return 0;
  const tl_tensor *in[2] = {av, bv};
  int y = -1;
  for (int i = 0; i < 2; i++) {
    const tl_tensor *t = in[i], *other = in[1 - i];
    if (t->strides[d0] == 1 && t->strides[d1] == 0 && other->strides[d0] == 1 &&
        other->strides[d1] == period)
      y = i;
  }
  if (y < 0) return 0;
  for (int k = 0; k < out->rank; k++) {
    if (k != d0 && k != d1 && out->strides[k] % period != 0) return 0;
  }
  const tl_tensor *src[3] = {out, av, bv};
  for (int i = 0; i < 3; i++) {
    v[i] = *src[i];
    v[i].owned = NULL;
    int r = 0;
    for (int k = 0; k < out->rank; k++) {
      if (k == d1) continue;
      v[i].shape[r] = k == d0 ? period * out->shape[d1] : src[i]->shape[k];
      v[i].strides[r] = k != d0 ? src[i]->strides[k] : i == 1 + y ? 0 : 1;
      r++;
    }
    v[i].rank = r;
  }
  f->mul = tl__ew_binary_kernel(TL_OP_MUL, out->dtype);
  f->es = (int64_t)tl_dtype_size(out->dtype);
  f->period = period;
  f->out0 = (const char *)out->data + out->offset * f->es;
  f->y_is_b = y == 1;
  return 1;
}

tl_status tl__einsum_product(tl_exec *exec, int team, const tl_tensor *a, const int *a_labels,
                             const tl_tensor *b, const int *b_labels, const tl_tensor *out,
                             const int *out_labels) {
  tl_tensor av, bv;
  view_in_out_axes(a, a_labels, out, out_labels, &av);
  view_in_out_axes(b, b_labels, out, out_labels, &bv);
  /* One pass of transposed tiles where the instruction set, dtype and layout allow it (on
   * any input read across its dense axis, either one); else the two passes below. */
  tl__product_tiles tiles;
  if (tl_tensor_numel(out) >= TL__EINSUM_PRODUCT_TILE_MIN &&
      tl__product_tiles_plan(&tiles, out, &av, &bv)) {
    const int parallel = team > 1 && tiles.blocks >= 2;
    return tl__exec_run_chunks(exec, parallel, (size_t)tiles.blocks, 1, product_tiles_chunk, &tiles,
                               "writing a transposing product");
  }
  /* The input that would be read across its dense axis, if any: a when it varies along the
   * output's dense axis but is densest along another; else b on the same terms when a is
   * constant along it (an outer product i,j->ij reads b along the output's rows and a not at
   * all there: it runs direct, as a two-pass copy would triple its traffic). */
  int out_axis = densest_axis(out);
  const tl_tensor *lead = NULL;
  if (out_axis >= 0 && av.strides[out_axis] != 0) {
    if (densest_axis(&av) != out_axis) lead = &av;
  } else if (out_axis >= 0 && bv.strides[out_axis] != 0 && densest_axis(&bv) != out_axis) {
    lead = &bv;
  }
  if (lead != NULL && tl_tensor_numel(out) >= TL__EINSUM_PRODUCT_TILE_MIN) {
    /* Scratch in lead's order: its axes by lead's strides, column-major. */
    tl_tensor tmp = *out;
    tmp.owned = NULL;
    tmp.offset = 0;
    int order[TL_MAX_RANK] = {0};
    for (int k = 0; k < out->rank; k++) order[k] = k;
    for (int i = 1; i < out->rank; i++) {
      for (int j = i; j > 0; j--) {
        int64_t sj = lead->strides[order[j]] == 0 ? INT64_MAX : tl__abs64(lead->strides[order[j]]);
        int64_t sp =
            lead->strides[order[j - 1]] == 0 ? INT64_MAX : tl__abs64(lead->strides[order[j - 1]]);
        if (sj >= sp) break;
        int swap = order[j];
        order[j] = order[j - 1];
        order[j - 1] = swap;
      }
    }
    int64_t stride = 1;
    for (int k = 0; k < out->rank; k++) {
      tmp.strides[order[k]] = stride;
      stride *= out->shape[order[k]];
    }
    const int64_t es = (int64_t)tl_dtype_size(out->dtype);
    /* out has at least TILE_MIN elements: rank >= 1, every extent >= 1 */
    const int slow = out->rank > 0 ? order[out->rank - 1] : 0;
    const int64_t per_index = stride / out->shape[slow] * es; /* bytes per index of slow */
    int64_t band = TL__EINSUM_PRODUCT_BAND_BYTES / per_index;
    if (band < TL__EINSUM_PRODUCT_BAND_MIN_INDICES) band = TL__EINSUM_PRODUCT_BAND_MIN_INDICES;
    if (band < out->shape[slow] && band * per_index <= TL__EINSUM_PRODUCT_BAND_MAX_BYTES &&
        stride * es < TL__EINSUM_PRODUCT_STREAM_BYTES) {
      product_bands job = {*out,
                           av,
                           bv,
                           tmp,
                           slow,
                           band,
                           (size_t)((band * per_index + 63) / 64 * 64),
                           tl__ew_binary_kernel(TL_OP_MUL, out->dtype)};
      job.out.owned = NULL;
      const int64_t bands = (out->shape[slow] + band - 1) / band;
      const int parallel = team > 1 && bands >= 2;
      const size_t slots = parallel ? tl__exec_thread_slots(exec) : 1;
      tl_status status = tl__exec_scratch(exec, slots * job.slot_bytes, 64, &job.tmp.data);
      if (status != TL_OK) return status;
      return tl__exec_run_chunks(exec, parallel, (size_t)bands, 1, product_band_chunk, &job,
                                 "writing a transposing product");
    }
    tl_status status = tl__exec_scratch(exec, (size_t)(stride * es), 64, &tmp.data);
    if (status != TL_OK) return status;
    const tl_tensor *ts[3] = {&tmp, &av, &bv};
    tl__loop loop;
    tl__loop_plan(&loop, 3, ts);
    status = tl__loop_execute(exec, team, &loop, tl__ew_binary_kernel(TL_OP_MUL, out->dtype), NULL);
    if (status != TL_OK) return status;
    return tl__copy_execute(exec, team, out, &tmp);
  }
  tl_tensor pv[3];
  periodic_product f;
  if (periodic_views(out, &av, &bv, pv, &f)) {
    atomic_fetch_add_explicit(&periodic_runs, 1, memory_order_relaxed);
    const tl_tensor *ts[3] = {&pv[0], &pv[1], &pv[2]};
    tl__loop loop;
    tl__loop_plan(&loop, 3, ts);
    return tl__loop_execute(exec, team, &loop, periodic_row, &f);
  }
  const tl_tensor *ts[3] = {out, &av, &bv};
  tl__loop loop;
  tl__loop_plan(&loop, 3, ts);
  return tl__loop_execute(exec, team, &loop, tl__ew_binary_kernel(TL_OP_MUL, out->dtype), NULL);
}

/* ---- two products in one pass ---------------------------------------------------------
 * ij,ij,ij->ij is two steps that sum nothing: a * b into scratch, then that times c. Both
 * are memory-bound, so the scratch's write and read were a third of the traffic. Fused,
 * each row makes a * b a chunk at a time into a stack buffer (in L1) and multiplies that by
 * c straight into the output: the same multiply kernel on the same values in the same order
 * as the two steps, so the same bits. */
#define FUSED_CHUNK 256

static atomic_size_t fused_runs; /* tl__einsum_fused_runs */

size_t tl__einsum_fused_runs(void) { return atomic_load(&fused_runs); }

typedef struct fused_product {
  tl__row_fn mul;
  int64_t es;    /* bytes per element */
  int tmp_first; /* 1: out = (a b) c, 0: out = c (a b), as the second step had them */
} fused_product;

/* p: out, a, b, c (s: their element strides). */
static void fused_row(int64_t n, char *const *p, const int64_t *s, const void *params) {
  const fused_product *f = params;
  _Alignas(64) char tmp[FUSED_CHUNK * 16];
  for (int64_t at = 0; at < n; at += FUSED_CHUNK) {
    const int64_t len = n - at < FUSED_CHUNK ? n - at : FUSED_CHUNK;
    char *const first[3] = {tmp, p[1] + at * s[1] * f->es, p[2] + at * s[2] * f->es};
    const int64_t first_s[3] = {1, s[1], s[2]};
    f->mul(len, first, first_s, NULL);
    char *c = p[3] + at * s[3] * f->es;
    char *const second[3] = {p[0] + at * s[0] * f->es, f->tmp_first ? tmp : c,
                             f->tmp_first ? c : tmp};
    const int64_t second_s[3] = {s[0], f->tmp_first ? 1 : s[3], f->tmp_first ? s[3] : 1};
    f->mul(len, second, second_s, NULL);
  }
}

tl_status tl__einsum_product3(tl_exec *exec, int team, const tl_tensor *a, const int *a_labels,
                              const tl_tensor *b, const int *b_labels, const tl_tensor *c,
                              const int *c_labels, int tmp_first, const tl_tensor *out,
                              const int *out_labels) {
  tl_tensor v[3];
  view_in_out_axes(a, a_labels, out, out_labels, &v[0]);
  view_in_out_axes(b, b_labels, out, out_labels, &v[1]);
  view_in_out_axes(c, c_labels, out, out_labels, &v[2]);
  /* Only where every input runs along the output's dense axis (or is constant there): an
   * input read across its own dense axis takes tl__einsum_product's transposing passes. */
  const int out_axis = densest_axis(out);
  for (int i = 0; i < 3; i++) {
    if (out_axis >= 0 && v[i].strides[out_axis] != 0 && densest_axis(&v[i]) != out_axis)
      return TL_E_UNAVAILABLE;
  }
  fused_product f = {tl__ew_binary_kernel(TL_OP_MUL, out->dtype),
                     (int64_t)tl_dtype_size(out->dtype), tmp_first};
  const tl_tensor *ts[4] = {out, &v[0], &v[1], &v[2]};
  tl__loop loop;
  tl__loop_plan(&loop, 4, ts);
  atomic_fetch_add_explicit(&fused_runs, 1, memory_order_relaxed);
  return tl__loop_execute(exec, team, &loop, fused_row, &f);
}

tl_status tl__einsum_fold_route(tl_exec *exec, const tl_tensor *in, const int *in_to_out,
                                const tl_tensor *out) {
  if (tl_tensor_numel(in) < TL__EINSUM_DIRECT_MIN) {
    tl__einsum_fold(in, in_to_out, out);
    return TL_OK;
  }
  /* out seen in the order in keeps its axes. */
  tl_tensor out_view = *out;
  out_view.owned = NULL;
  int axes[TL_MAX_RANK];
  int n_sum = 0, r = 0;
  for (int k = 0; k < in->rank; k++) {
    if (in_to_out[k] < 0) {
      axes[n_sum++] = k;
      continue;
    }
    out_view.shape[r] = out->shape[in_to_out[k]];
    out_view.strides[r] = out->strides[in_to_out[k]];
    r++;
  }
  if (n_sum == 0) return tl_copy_into(exec, in, &out_view);
  return tl_reduce_into(exec, TL_REDUCE_SUM, in, n_sum, axes, &out_view);
}
