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
 * Packed runs: items of one layout that are separate arrays (no fixed step between them) run
 * the same way once a lane has copied each operand of its run's items, whole (each must be
 * dense: its elements fill its span), into a stack in the run's scratch; the strides inside
 * an item stay item 0's, so the steps are those above.
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

/* The terms of spec (letters, ',' and one "->"): each input's letters into terms and label
 * mask into masks, the output's into terms[n] and *out; 0 when the spec is of another form or
 * repeats a label in a term. */
static int spec_masks(const char *spec, int n, const tl_tensor *t, char (*terms)[TL_MAX_RANK + 1],
                      uint64_t *masks, uint64_t *out) {
  const char *arrow = strstr(spec, "->");
  if (arrow == NULL || strstr(arrow + 2, "->") != NULL) return 0;
  int term = 0, count = 0;
  uint64_t mask = 0;
  for (const char *p = spec;; p++) {
    if (p == arrow || *p == ',') {
      if (term >= n || count != t[term].rank) return 0;
      terms[term][count] = '\0';
      masks[term++] = mask;
      mask = 0;
      count = 0;
      if (p == arrow) break;
      continue;
    }
    uint64_t bit = letter_bit(*p);
    if (bit == 0 || (mask & bit) || count >= TL_MAX_RANK) return 0;
    mask |= bit;
    terms[term][count++] = *p;
  }
  if (term != n) return 0;
  for (const char *p = arrow + 2; *p; p++) {
    uint64_t bit = letter_bit(*p);
    if (bit == 0 || (mask & bit) || count >= TL_MAX_RANK) return 0;
    mask |= bit;
    terms[n][count++] = *p;
  }
  terms[n][count] = '\0';
  *out = mask;
  return 1;
}

/* Index of letter c (as letter_bit's bit). */
static int letter_index(char c) { return c >= 'A' && c <= 'Z' ? c - 'A' : 26 + c - 'a'; }

/* An input's letters in the order a single call reads it in memory (src/einsum/plan.c,
 * order_in_memory): by the magnitude of their stride, densest first, a zero stride last, ties
 * in the term's order. */
static void held_order(const tl_tensor *t, const char *term, char *out) {
  int64_t key[TL_MAX_RANK];
  int rank = t->rank;
  for (int k = 0; k < rank; k++) {
    int64_t st = t->strides[k];
    out[k] = term[k];
    key[k] = st == 0 ? INT64_MAX : st < 0 ? -st : st;
  }
  for (int j = 1; j < rank; j++) { /* insertion: stable */
    char label = out[j];
    int64_t kj = key[j];
    int at = j;
    while (at > 0 && key[at - 1] > kj) {
      out[at] = out[at - 1];
      key[at] = key[at - 1];
      at--;
    }
    out[at] = label;
    key[at] = kj;
  }
  out[rank] = '\0';
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

/* Per-item elements of the labels in `labels`. */
static double labels_size(const char *labels, const int64_t *extent) {
  double size = 1.0;
  for (const char *c = labels; *c; c++) size *= (double)extent[letter_index(*c)];
  return size;
}

/* Follow the path's slot pairs as a single call lays the steps out (src/einsum/plan.c,
 * order_step_labels): an intermediate is column-major in the larger operand's surviving
 * labels, in the order that operand holds them in memory (the pair's first on a tie), then
 * the smaller one's new labels; the last step writes the output. 1 when every step sums a
 * label; fills u's step specs, operand slots and intermediates (item axis z in front). */
static int plan_steps(const tl_einsum_path_info *info, const tl_tensor *first,
                      char (*terms)[TL_MAX_RANK + 1], const uint64_t *masks, uint64_t out,
                      const int64_t *extent, char z, size_t es, tlpy_uniform *u) {
  int n = info->n_operands;
  static const size_t line = 64;
  char mem[2 * TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK + 1]; /* each slot's letters in memory */
  const char *axes[2 * TL_EINSUM_MAX_OPERANDS];          /* ... and in its tensor's order */
  uint64_t sets[2 * TL_EINSUM_MAX_OPERANDS];
  int alive[TL_EINSUM_MAX_OPERANDS], count = n;
  for (int i = 0; i < n; i++) {
    sets[i] = masks[i], alive[i] = i;
    held_order(&first[i], terms[i], mem[i]);
    axes[i] = terms[i];
  }
  size_t offset = 0;
  for (int step = 0; step < info->n_steps; step++) {
    int a = info->pairs[step][0], b = info->pairs[step][1], pa = -1, pb = -1;
    if (a < 0 || b < 0 || a >= n + step || b >= n + step) return 0;
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
    char *labels = mem[n + step];
    if (step == info->n_steps - 1) {
      strcpy(labels, terms[n]);
    } else {
      int big = a, small = b, w = 0;
      if (labels_size(mem[b], extent) > labels_size(mem[a], extent)) big = b, small = a;
      uint64_t taken = 0;
      const char *sides[2] = {mem[big], mem[small]};
      for (int side = 0; side < 2; side++)
        for (const char *c = sides[side]; *c; c++) {
          uint64_t bit = letter_bit(*c);
          if ((result & bit) && !(taken & bit)) labels[w++] = *c, taken |= bit;
        }
      labels[w] = '\0';
      if (w + 1 >= TL_MAX_RANK) return 0;
      u->inter_rank[step] = w;
      size_t bytes = es;
      for (int k = 0; k < w; k++) {
        u->inter_shape[step][k] = extent[letter_index(labels[k])];
        /* extents of different operands: their product may pass size_t (then not uniform) */
        if (__builtin_mul_overflow(bytes, (size_t)u->inter_shape[step][k], &bytes)) return 0;
      }
      if (bytes > TLPY_BLOCK_MAX) return 0;
      u->inter_offset[step] = offset;
      offset += (bytes + line - 1) / line * line;
    }
    axes[n + step] = labels;
    sets[n + step] = result;
    u->step_slot[step][0] = a;
    u->step_slot[step][1] = b;
    snprintf(u->step_spec[step], sizeof u->step_spec[step], "%c%s,%c%s->%c%s", z, axes[a], z,
             axes[b], z, labels);
    int lo = pa < pb ? pa : pb, hi = pa < pb ? pb : pa;
    for (int k = hi; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    for (int k = lo; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    alive[count++] = n + step;
  }
  u->inter_bytes = offset;
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
  if (strnlen(spec, TL_EINSUM_SPEC_MAX + 1) > TL_EINSUM_SPEC_MAX) return 0;
  char terms[TL_EINSUM_MAX_OPERANDS + 1][TL_MAX_RANK + 1];
  uint64_t masks[TL_EINSUM_MAX_OPERANDS], out = 0, all = 0;
  if (!spec_masks(spec, n, first, terms, masks, &out) || !labels_meet(n, masks, out)) return 0;
  const size_t es = tl_dtype_size(first[0].dtype);
  int ranks[TL_EINSUM_MAX_OPERANDS];
  const int64_t *shapes[TL_EINSUM_MAX_OPERANDS];
  int64_t extent[52] = {0};
  for (int j = 0; j < n; j++) {
    const tl_tensor *a = &first[j], *b = second ? &second[j] : a;
    all |= masks[j];
    if (a->dtype != first[0].dtype || b->dtype != a->dtype || b->rank != a->rank ||
        a->rank >= TL_MAX_RANK)
      return 0;
    for (int k = 0; k < a->rank; k++) {
      if (a->shape[k] <= 0 || a->shape[k] != b->shape[k] || a->strides[k] != b->strides[k])
        return 0;
      int64_t *e = &extent[letter_index(terms[j][k])];
      if (*e != 0 && *e != a->shape[k]) return 0; /* the call itself says why */
      *e = a->shape[k];
    }
    int64_t span = item_span(a);
    if (span <= 0) return 0;
    if (second) {
      ptrdiff_t bytes = (const char *)b->data - (const char *)a->data;
      if (bytes <= 0 || (size_t)bytes % es != 0) return 0;
      u->step[j] = (int64_t)((size_t)bytes / es);
      if (u->step[j] < span) return 0;
    } else { /* packed: the item's elements fill its span (copied as one block) */
      int64_t numel = 1;
      for (int k = 0; k < a->rank; k++) numel *= a->shape[k]; /* <= span: no overflow */
      if (numel != span || (size_t)span > TLPY_BLOCK_MAX / es) return 0;
      u->step[j] = span;
      u->pack_offset[j] = u->pack_bytes;
      u->pack_bytes += ((size_t)span * es + 63) / 64 * 64;
    }
    ranks[j] = a->rank;
    shapes[j] = a->shape;
    u->first[j] = *a;
  }
  tl_einsum_path_info info;
  if (tl_einsum_path(TL_EINSUM_PATH_AUTO, spec, n, ranks, shapes, &info) != TL_OK) return 0;
  if (info.n_steps != n - 1) return 0;
  if (tl_einsum_shape(spec, n, ranks, shapes, &u->out_rank, u->out_shape) != TL_OK ||
      u->out_rank >= TL_MAX_RANK)
    return 0;
  size_t bytes = es;
  for (int k = 0; k < u->out_rank; k++) /* checked as the intermediates' */
    if (__builtin_mul_overflow(bytes, (size_t)u->out_shape[k], &bytes)) return 0;
  if (bytes == 0 || bytes > TLPY_BLOCK_MAX) return 0;
  /* the item axis: a letter no term has */
  char z = 0;
  for (const char *c = "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA"; *c && !z; c++)
    if (!(all & letter_bit(*c))) z = *c;
  if (!z) return 0;
  if (!plan_steps(&info, first, terms, masks, out, extent, z, es, u)) return 0;
  u->packed = second == NULL;
  u->item_bytes = bytes + u->inter_bytes + u->pack_bytes; /* what a run takes per item */
  u->n = n;
  u->steps = n - 1;
  u->out_bytes = bytes;
  return 1;
}

/* Step `step`'s operand `slot` over the run: an input's view with the item axis in front, or
 * an intermediate in scratch, each item's column-major as a single call's, items one after
 * another (the item axis slowest). */
static void slot_tensor(const tlpy_uniform *u, int slot, size_t begin, size_t count, char *scratch,
                        tl_tensor *v) {
  memset(v, 0, sizeof *v);
  v->dtype = u->first[0].dtype;
  v->shape[0] = (int64_t)count;
  const size_t es = tl_dtype_size(v->dtype);
  if (slot < u->n) {
    const tl_tensor *a = &u->first[slot];
    v->rank = a->rank + 1;
    v->strides[0] = u->step[slot];
    memcpy(v->shape + 1, a->shape, (size_t)a->rank * sizeof(int64_t));
    memcpy(v->strides + 1, a->strides, (size_t)a->rank * sizeof(int64_t));
    v->data = u->packed ? tlpy_uniform_packed(u, count, scratch, slot, 0)
                        : (char *)a->data + (size_t)u->step[slot] * es * begin;
    return;
  }
  int s = slot - u->n, rank = u->inter_rank[s];
  int64_t stride = 1;
  v->rank = rank + 1;
  for (int k = 0; k < rank; k++) {
    v->shape[k + 1] = u->inter_shape[s][k];
    v->strides[k + 1] = stride;
    stride *= u->inter_shape[s][k]; /* bounded: the step's bytes are <= TLPY_BLOCK_MAX */
  }
  v->strides[0] = stride;
  v->data = scratch + u->inter_offset[s] * count;
}

char *tlpy_uniform_packed(const tlpy_uniform *u, size_t count, void *scratch, int j, size_t i) {
  return (char *)scratch + count * (u->inter_bytes + u->pack_offset[j]) +
         i * (size_t)u->step[j] * tl_dtype_size(u->first[0].dtype);
}

tl_status tlpy_uniform_run(tl_exec *exec, const tlpy_uniform *u, size_t begin, size_t count,
                           void *out, void *scratch) {
  static const int pair[2] = {0, 1};
  tl_tensor ops[2], result;
  int64_t shape[TL_MAX_RANK];
  shape[0] = (int64_t)count;
  memcpy(shape + 1, u->out_shape, (size_t)u->out_rank * sizeof(int64_t));
  tl_status status =
      tl_tensor_wrap_row_major(u->first[0].dtype, u->out_rank + 1, shape, out, &result);
  for (int step = 0; status == TL_OK && step < u->steps; step++) {
    const tl_tensor *ptrs[2] = {&ops[0], &ops[1]};
    for (int side = 0; side < 2; side++)
      slot_tensor(u, u->step_slot[step][side], begin, count, scratch, &ops[side]);
    tl_tensor into;
    if (step == u->steps - 1)
      into = result;
    else
      slot_tensor(u, u->n + step, begin, count, scratch, &into);
    status = tl_einsum_with_path_into(exec, 1, pair, u->step_spec[step], 2, ptrs, &into);
  }
  if (status == TL_OK) atomic_fetch_add(&uniform_items_run, count);
  return status;
}
