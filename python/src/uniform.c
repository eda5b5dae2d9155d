/* python/src/uniform.c: a run of map_einsum items that share one layout, as one einsum.
 *
 * Items cut from stacks (`tuple(m[z] for m in stacks)`, a tensor train evaluated at many
 * points) share their shapes and strides, and item z's operand j lies at operand j of item 0
 * plus z times a fixed step. A run of such items is then one einsum over views with one more
 * axis (the item axis, the slowest of every operand): one plan lookup and one pass of
 * checks for the run, each pairwise step one batched GEMM over the run's items, where a
 * loop of single calls paid the lookup, the checks and the contraction's set-up per item and
 * per step (about 0.5 us each, against tens of ns of arithmetic for 2 x 2 matrices).
 *
 * Invariant: the bits are those of single calls. The run takes the path a single call takes
 * (tl_einsum_path, AUTO, handed back as a given path), so every step contracts the same
 * pair in the same roles; the item axis is a batch axis of every step (in both operands and
 * the result), which the contraction keeps out of the GEMM's rows and columns, so each item
 * is one GEMM entry of the shape, strides and kernel a single call's step has (a stack of
 * real entries goes through gemm_batch_small.c, whose bits are those of a single GEMM).
 * Only forms where that holds are taken, and the rest run item by item as before: every
 * label of an input appears in another input or the output (nothing is summed before the
 * steps), no term repeats a label (no diagonal), every step sums a label (a step that sums
 * nothing is an elementwise product, whose route may differ with the size), the explicit
 * "->" form with letters only, operands of one dtype, no empty axis, positive strides
 * within an item and a step that clears an item's span (so the item axis is the slowest,
 * and a single call's axis order holds for every other label). tests
 * python/tests/test_map_uniform.py compares the bits with single calls.
 *
 * Thread rules: tlpy_uniform_plan runs once per map (any thread); the rest is pure and runs
 * on the lanes without the GIL. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <stdatomic.h>
#include <string.h>

static atomic_size_t uniform_items_run; /* tlpy_uniform_items */

size_t tlpy_uniform_items(void) { return atomic_load(&uniform_items_run); }

/* Bit of letter c in a label mask ('A'..'Z' 0..25, 'a'..'z' 26..51), or 0 for another
 * character. */
static uint64_t letter_bit(char c) {
  if (c >= 'A' && c <= 'Z') return (uint64_t)1 << (c - 'A');
  if (c >= 'a' && c <= 'z') return (uint64_t)1 << (26 + c - 'a');
  return 0;
}

/* The terms of spec (letters, ',' and one "->"): each input's label mask into masks, the
 * output's into *out; 0 when the spec is of another form or repeats a label in a term. */
static int spec_masks(const char *spec, int n, const tl_tensor *t, uint64_t *masks, uint64_t *out) {
  const char *arrow = strstr(spec, "->");
  if (arrow == NULL || strstr(arrow + 2, "->") != NULL) return 0;
  int term = 0, count = 0;
  uint64_t mask = 0;
  for (const char *p = spec;; p++) {
    if (p == arrow || *p == ',') {
      if (term >= n || count != t[term].rank) return 0;
      masks[term++] = mask;
      mask = 0;
      count = 0;
      if (p == arrow) break;
      continue;
    }
    uint64_t bit = letter_bit(*p);
    if (bit == 0 || (mask & bit)) return 0;
    mask |= bit;
    count++;
  }
  if (term != n) return 0;
  for (const char *p = arrow + 2; *p; p++) {
    uint64_t bit = letter_bit(*p);
    if (bit == 0 || (mask & bit)) return 0;
    mask |= bit;
  }
  *out = mask;
  return 1;
}

/* 1 when every input label is in another input or the output, and every output label in an
 * input. */
static int labels_meet(int n, const uint64_t *masks, uint64_t out) {
  uint64_t all = 0;
  for (int i = 0; i < n; i++) all |= masks[i];
  if ((out & ~all) != 0) return 0;
  for (int i = 0; i < n; i++) {
    uint64_t elsewhere = out;
    for (int j = 0; j < n; j++)
      if (j != i) elsewhere |= masks[j];
    if ((masks[i] & ~elsewhere) != 0) return 0;
  }
  return 1;
}

/* Follow the path's slot pairs: 1 when every step sums a label; its linear form (positions
 * in the list of tensors left, the result appended) into linear. */
static int path_sums_each_step(const tl_einsum_path_info *info, const uint64_t *masks, uint64_t out,
                               int *linear) {
  int n = info->n_operands;
  uint64_t sets[2 * TL_EINSUM_MAX_OPERANDS];
  int alive[TL_EINSUM_MAX_OPERANDS], count = n;
  for (int i = 0; i < n; i++) sets[i] = masks[i], alive[i] = i;
  for (int step = 0; step < info->n_steps; step++) {
    int a = info->pairs[step][0], b = info->pairs[step][1], pa = -1, pb = -1;
    for (int k = 0; k < count; k++) {
      if (alive[k] == a) pa = k;
      if (alive[k] == b) pb = k;
    }
    if (pa < 0 || pb < 0 || pa == pb) return 0;
    uint64_t need = out;
    for (int k = 0; k < count; k++)
      if (k != pa && k != pb) need |= sets[alive[k]];
    uint64_t both = sets[a] | sets[b], result = both & need;
    if (result == both) return 0; /* sums nothing: an elementwise product */
    linear[2 * step] = pa;
    linear[2 * step + 1] = pb;
    sets[n + step] = result;
    int lo = pa < pb ? pa : pb, hi = pa < pb ? pb : pa;
    for (int k = hi; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    for (int k = lo; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    alive[count++] = n + step;
  }
  return 1;
}

/* Elements from an item's first element to its last, plus one; 0 when a stride of an axis
 * longer than 1 is not positive. */
static int64_t item_span(const tl_tensor *t) {
  int64_t span = 1;
  for (int k = 0; k < t->rank; k++) {
    if (t->shape[k] == 1) continue;
    if (t->strides[k] <= 0) return 0;
    span += t->strides[k] * (t->shape[k] - 1);
  }
  return span;
}

int tlpy_uniform_plan(const char *spec, int n, const tl_tensor *first, const tl_tensor *second,
                      tlpy_uniform *u) {
  memset(u, 0, sizeof *u);
  if (n < 2 || n > TL_EINSUM_MAX_OPERANDS) return 0;
  size_t length = strnlen(spec, TL_EINSUM_SPEC_MAX + 1);
  /* the stacked spec: one more letter per term */
  if (length + (size_t)n + 2 > TL_EINSUM_SPEC_MAX) return 0;
  uint64_t masks[TL_EINSUM_MAX_OPERANDS], out = 0, all = 0;
  if (!spec_masks(spec, n, first, masks, &out) || !labels_meet(n, masks, out)) return 0;
  const size_t es = tl_dtype_size(first[0].dtype);
  int ranks[TL_EINSUM_MAX_OPERANDS];
  const int64_t *shapes[TL_EINSUM_MAX_OPERANDS];
  for (int j = 0; j < n; j++) {
    const tl_tensor *a = &first[j], *b = &second[j];
    all |= masks[j];
    if (a->dtype != first[0].dtype || b->dtype != a->dtype || b->rank != a->rank ||
        a->rank >= TL_MAX_RANK)
      return 0;
    for (int k = 0; k < a->rank; k++)
      if (a->shape[k] <= 0 || a->shape[k] != b->shape[k] || a->strides[k] != b->strides[k])
        return 0;
    ptrdiff_t bytes = (const char *)b->data - (const char *)a->data;
    int64_t span = item_span(a);
    if (span <= 0 || bytes <= 0 || (size_t)bytes % es != 0) return 0;
    u->step[j] = (int64_t)((size_t)bytes / es);
    if (u->step[j] < span) return 0;
    ranks[j] = a->rank;
    shapes[j] = a->shape;
    u->first[j] = *a;
  }
  tl_einsum_path_info info;
  if (tl_einsum_path(TL_EINSUM_PATH_AUTO, spec, n, ranks, shapes, &info) != TL_OK) return 0;
  if (info.n_steps != n - 1 || !path_sums_each_step(&info, masks, out, u->linear)) return 0;
  if (tl_einsum_shape(spec, n, ranks, shapes, &u->out_rank, u->out_shape) != TL_OK ||
      u->out_rank >= TL_MAX_RANK)
    return 0;
  size_t bytes = es;
  for (int k = 0; k < u->out_rank; k++) bytes *= (size_t)u->out_shape[k];
  if (bytes == 0 || bytes > TLPY_BLOCK_MAX) return 0;
  /* what a run takes per item: its result and, at most, every step's intermediate at the
   * largest one's size (a run's scratch grows with its items) */
  double scratch = info.largest_intermediate * (double)es * (double)info.n_steps + (double)bytes;
  if (!(scratch < (double)((size_t)1 << 40))) return 0;
  u->item_bytes = (size_t)scratch;
  /* the item axis: a letter no term has */
  char z = 0;
  for (const char *c = "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"; *c && !z; c++)
    if (!(all & letter_bit(*c))) z = *c;
  if (!z) return 0;
  size_t w = 0;
  u->spec[w++] = z;
  for (const char *p = spec; *p; p++) {
    u->spec[w++] = *p;
    if (*p == ',' || (*p == '>' && p > spec && p[-1] == '-')) u->spec[w++] = z;
  }
  u->spec[w] = '\0';
  u->n = n;
  u->steps = n - 1;
  u->out_bytes = bytes;
  return 1;
}

tl_status tlpy_uniform_run(tl_exec *exec, const tlpy_uniform *u, size_t begin, size_t count,
                           void *out) {
  tl_tensor views[TL_EINSUM_MAX_OPERANDS], result;
  const tl_tensor *ptrs[TL_EINSUM_MAX_OPERANDS];
  const size_t es = tl_dtype_size(u->first[0].dtype);
  for (int j = 0; j < u->n; j++) {
    const tl_tensor *a = &u->first[j];
    tl_tensor *v = &views[j];
    memset(v, 0, sizeof *v);
    v->dtype = a->dtype;
    v->rank = a->rank + 1;
    v->shape[0] = (int64_t)count;
    v->strides[0] = u->step[j];
    memcpy(v->shape + 1, a->shape, (size_t)a->rank * sizeof(int64_t));
    memcpy(v->strides + 1, a->strides, (size_t)a->rank * sizeof(int64_t));
    v->data = (char *)a->data + (size_t)u->step[j] * es * begin;
    ptrs[j] = v;
  }
  int64_t shape[TL_MAX_RANK];
  shape[0] = (int64_t)count;
  memcpy(shape + 1, u->out_shape, (size_t)u->out_rank * sizeof(int64_t));
  tl_status status =
      tl_tensor_wrap_row_major(u->first[0].dtype, u->out_rank + 1, shape, out, &result);
  if (status != TL_OK) return status;
  status = tl_einsum_with_path_into(exec, u->steps, u->linear, u->spec, u->n, ptrs, &result);
  if (status == TL_OK) atomic_fetch_add(&uniform_items_run, count);
  return status;
}
