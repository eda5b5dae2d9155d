/* src/einsum/plan.c: from a parsed spec and the operands' shapes to an executable plan,
 * and tl_einsum_path, which exposes the planning without data.
 *
 * Invariants the plan keeps (execute.c relies on them):
 *  - every label has one extent; a broadcast label's extent-1 axes are dropped where the
 *    label is wider elsewhere, so the dropped axis is exactly numpy's broadcasting;
 *  - a prepared operand holds each label once and only labels that another operand or
 *    the output needs (with a single operand, preparation is left to the final fold);
 *  - each step's result holds the labels of its inputs still needed outside them; the
 *    last step's result is exactly the output, in the output's order;
 *  - scratch_bytes covers every summed operand and every intermediate but the last, each
 *    at a 64-byte-aligned offset; two of them share bytes only if no step has both live
 *    (a step's inputs and its result are live at it), and no size computation overflowed. */
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"

tl_status tl__einsum_bind_extents(const char *spec, const tl__einsum_spec *parsed,
                                  const int64_t *const *shapes, int64_t *extent) {
  int source_operand[TL__EINSUM_LABELS], source_axis[TL__EINSUM_LABELS];
  for (int l = 0; l < TL__EINSUM_LABELS; l++) extent[l] = -1;
  for (int i = 0; i < parsed->n_inputs; i++) {
    const tl__einsum_term *term = &parsed->inputs[i];
    for (int k = 0; k < term->count; k++) {
      int label = term->labels[k];
      int64_t e = shapes[i][k];
      if (e < 0) {
        return tl__fail(TL_E_SHAPE, "einsum spec \"%s\": operand %d axis %d has extent %lld", spec,
                        i, k, (long long)e);
      }
      int broadcast = tl__einsum_is_broadcast(label);
      if (extent[label] < 0 || (broadcast && extent[label] == 1)) {
        extent[label] = e;
        source_operand[label] = i;
        source_axis[label] = k;
      } else if (extent[label] != e && !(broadcast && e == 1)) {
        char name[32];
        return tl__fail(TL_E_SHAPE,
                        "einsum spec \"%s\": label '%s' has extent %lld on operand %d axis %d "
                        "but %lld on operand %d axis %d",
                        spec, tl__einsum_label_name(label, parsed, name), (long long)extent[label],
                        source_operand[label], source_axis[label], (long long)e, i, k);
      }
    }
  }
  return TL_OK;
}

/* Elements times element size, rounded up to 64 bytes, in *rounded; 0 on overflow. */
static int buffer_bytes(const int64_t *extent, int rank, const int *labels, size_t element_size,
                        size_t *rounded) {
  size_t bytes = element_size;
  for (int k = 0; k < rank; k++) {
    if (!tl__size_mul(bytes, (size_t)extent[labels[k]], &bytes)) return 0;
  }
  if (!tl__size_add(bytes, 63, rounded)) return 0;
  *rounded &= ~(size_t)63;
  return 1;
}

/* The labels of slot `slot` (an operand after preparation, or an earlier step's result). */
static const int *slot_labels(const tl__einsum_plan *plan, int slot, int *rank) {
  if (slot < plan->n_inputs) {
    *rank = plan->prep[slot].n_kept;
    return plan->prep[slot].kept_labels;
  }
  *rank = plan->step_rank[slot - plan->n_inputs];
  return plan->step_labels[slot - plan->n_inputs];
}

/* The same labels in the order the slot holds them in memory, densest first (an
 * intermediate is column-major in its label order). */
static const int *slot_memory_order(const tl__einsum_plan *plan, int slot, int *rank) {
  if (slot < plan->n_inputs) {
    *rank = plan->prep[slot].n_kept;
    return plan->prep[slot].memory_order;
  }
  return slot_labels(plan, slot, rank);
}

static double slot_size(const tl__einsum_plan *plan, int slot) {
  int rank;
  const int *labels = slot_labels(plan, slot, &rank);
  double size = 1.0;
  for (int k = 0; k < rank; k++) size *= (double)plan->extent[labels[k]];
  return size;
}

static tl_status too_many_axes(const char *spec, int step) {
  return tl__fail(TL_E_SHAPE,
                  "einsum spec \"%s\": path step %d would make an intermediate of more than %d "
                  "axes",
                  spec, step, TL_MAX_RANK);
}

static tl_status choose_path(const tl__path_problem *problem, tl_einsum_path_kind kind,
                             tl__einsum_plan *plan) {
  tl__path greedy;
  tl__path_greedy(problem, &greedy);
  plan->greedy_flops = greedy.flops;
  plan->optimal_flops = -1.0;
  int search = kind == TL_EINSUM_PATH_OPTIMAL ||
               (kind == TL_EINSUM_PATH_AUTO && problem->n <= TL_EINSUM_AUTO_OPTIMAL_MAX);
  if (kind == TL_EINSUM_PATH_OPTIMAL && problem->n > TL_EINSUM_OPTIMAL_MAX) {
    return tl__fail(TL_E_INVALID,
                    "einsum: kind TL_EINSUM_PATH_OPTIMAL takes at most %d operands, %d given",
                    TL_EINSUM_OPTIMAL_MAX, problem->n);
  }
  if (search) {
    tl_status status = tl__path_optimal(problem, &plan->path);
    if (status != TL_OK) return status;
    plan->optimal_flops = plan->path.flops;
    /* The exact search never costs more; on a tie keep the greedy order only when asked. */
    if (kind == TL_EINSUM_PATH_OPTIMAL || plan->path.flops <= greedy.flops) {
      plan->chosen = TL_EINSUM_PATH_OPTIMAL;
      return TL_OK;
    }
  }
  plan->path = greedy;
  plan->chosen = TL_EINSUM_PATH_GREEDY;
  return TL_OK;
}

/* 1 when `label` is one of slot's labels. */
static int slot_has(const tl__einsum_plan *plan, int slot, int label) {
  int rank;
  const int *labels = slot_labels(plan, slot, &rank);
  for (int k = 0; k < rank; k++)
    if (labels[k] == label) return 1;
  return 0;
}

/* Move a step's batch labels (kept, and in both operands) behind its other labels, in the
 * order they had. The contraction keeps batch labels out of the GEMM's rows and columns, so
 * each batch entry is one GEMM: with the batch labels slowest, every entry's C is one dense
 * block (a stack of small products, "zab,zbc->zac", writes C[a,c,z] entry after entry),
 * where in the middle ([a,z,c]) each entry's columns lay a whole stack apart. The next step
 * then reads each entry as a dense block too. */
static void batch_labels_last(const tl__einsum_plan *plan, int big_slot, int small_slot,
                              int *labels, int count) {
  int batch[TL_MAX_RANK] = {0}, n_batch = 0, kept = 0;
  for (int k = 0; k < count; k++) {
    if (slot_has(plan, big_slot, labels[k]) && slot_has(plan, small_slot, labels[k]))
      batch[n_batch++] = labels[k];
    else
      labels[kept++] = labels[k];
  }
  memcpy(labels + kept, batch, sizeof(int) * (size_t)n_batch);
}

/* The label order of each path step's result; the last step's is the output's. */
static tl_status order_step_labels(const char *spec, tl__einsum_plan *plan) {
  for (int step = 0; step < plan->path.n_steps; step++) {
    int *labels = plan->step_labels[step];
    int count = 0;
    if (step == plan->path.n_steps - 1) {
      memcpy(labels, plan->out_labels, sizeof(int) * (size_t)plan->out_rank);
      count = plan->out_rank;
    } else {
      /* The larger input's surviving labels in the order it holds them in memory, then
       * the smaller one's new labels in its memory order. That is the column-major GEMM
       * form C[M, N] with M in the order the big operand holds it, so the contraction
       * writes the intermediate in place, and a chain of basis changes (X[i,j,k] P[a,i] ->
       * [j,k,a], then j, then k) always finds the next summed label at the front: no step
       * needs a permuted copy. Memory order, not the spec's: for C-ordered operands (numpy's)
       * the spec's order is the reverse, and E[a,b] A[a,s,c] -> [s,c,b] made the next step
       * (with conj(A)[b,s,e]) permute it, where [c,s,b] needs no copy anywhere. */
      int big_slot = plan->path.pairs[step][0], small_slot = plan->path.pairs[step][1];
      if (slot_size(plan, small_slot) > slot_size(plan, big_slot)) {
        int swap = big_slot;
        big_slot = small_slot;
        small_slot = swap;
      }
      int sides[2] = {big_slot, small_slot};
      for (int side = 0; side < 2; side++) {
        int rank;
        const int *in = slot_memory_order(plan, sides[side], &rank);
        for (int k = 0; k < rank; k++) {
          int label = in[k];
          if (!tl__labelset_has(plan->path.result[step], label)) continue;
          int seen = 0;
          for (int m = 0; m < count; m++) seen |= labels[m] == label;
          if (seen) continue;
          if (count == TL_MAX_RANK) return too_many_axes(spec, step);
          labels[count++] = label;
        }
      }
      batch_labels_last(plan, big_slot, small_slot, labels, count);
    }
    plan->step_rank[step] = count;
  }

  return TL_OK;
}

/* Position of `label` in slot's memory order (0: densest), -1 when the slot lacks it. */
static int memory_rank(const tl__einsum_plan *plan, int slot, int label) {
  int rank;
  const int *in = slot_memory_order(plan, slot, &rank);
  for (int k = 0; k < rank; k++)
    if (in[k] == label) return k;
  return -1;
}

static int out_has(const tl__einsum_plan *plan, int label) {
  for (int m = 0; m < plan->out_rank; m++)
    if (plan->out_labels[m] == label) return 1;
  return 0;
}

/* A last step that sums nothing (a Hadamard, outer or broadcast product) is laid out as
 * numpy's iterator lays out its output in order "K": from the output's labels in C order
 * (last densest), each label moves denser past every label that each input holding both
 * holds less densely (one input holding the other denser stops it), and past labels no
 * input holds together with it. The tensordot order of the other steps put the second input's
 * own labels densest whatever their place in it: bdc,dab->cdab wrote a fastest, a stride-16
 * read of the second input, slower than numpy; here c comes first, as numpy's, and the
 * first input is read in order. */
static void keep_order_elementwise(const tl__einsum_plan *plan, int first, int second, int *labels,
                                   int count) {
  int given[TL_MAX_RANK], n = 0;
  memcpy(given, labels, sizeof(int) * (size_t)count);
  for (int m = plan->out_rank - 1; m >= 0; m--)
    for (int k = 0; k < count; k++)
      if (given[k] == plan->out_labels[m]) labels[n++] = given[k];
  const int sides[2] = {first, second};
  for (int i = 1; i < n; i++) {
    const int label = labels[i];
    int at = i;
    for (int k = i - 1; k >= 0; k--) {
      int order = 0; /* < 0: label is denser than labels[k]; > 0: not; 0: undecided */
      for (int side = 0; side < 2 && order <= 0; side++) {
        const int p = memory_rank(plan, sides[side], label);
        const int q = memory_rank(plan, sides[side], labels[k]);
        if (p >= 0 && q >= 0) order = p < q ? -1 : 1;
      }
      if (order > 0) break;
      if (order < 0) at = k;
    }
    memmove(labels + at + 1, labels + at, sizeof(int) * (size_t)(i - at));
    labels[at] = label;
  }
}

/* TL_EINSUM_LAYOUT_KEEP's order (einsum.h): the output's labels, densest first. The last
 * step's second input's labels that its first lacks, in the second's memory order, then the
 * first's labels in its own (a single operand: its labels); a last step that sums nothing
 * as keep_order_elementwise says. */
static int keep_order(const tl__einsum_plan *plan, int *labels) {
  int count = 0, first = 0, second = -1;
  if (plan->path.n_steps > 0) {
    first = plan->path.pairs[plan->path.n_steps - 1][0];
    second = plan->path.pairs[plan->path.n_steps - 1][1];
  }
  const int sides[2] = {second, first};
  for (int side = 0; side < 2; side++) {
    if (sides[side] < 0) continue;
    int rank;
    const int *in = slot_memory_order(plan, sides[side], &rank);
    for (int k = 0; k < rank; k++) {
      /* each label once: an input holds it once, and the second's skips the first's */
      if (side == 0 && slot_has(plan, first, in[k])) continue;
      int wanted = 0;
      for (int m = 0; m < plan->out_rank; m++) wanted |= plan->out_labels[m] == in[k];
      if (wanted) labels[count++] = in[k];
    }
  }
  if (second < 0) return count;
  int sums = 0;
  for (int side = 0; side < 2; side++) {
    int rank;
    const int *in = slot_labels(plan, sides[side], &rank);
    for (int k = 0; k < rank; k++) sums |= !out_has(plan, in[k]);
  }
  if (!sums) keep_order_elementwise(plan, first, second, labels, count);
  return count;
}

void tl__einsum_keep_strides(const tl__einsum_plan *plan, int64_t *strides) {
  int order[TL_MAX_RANK];
  const int count = keep_order(plan, order);
  int64_t stride = 1;
  int placed[TL_MAX_RANK] = {0};
  for (int k = 0; k < count; k++) {
    for (int m = 0; m < plan->out_rank; m++) {
      if (plan->out_labels[m] != order[k]) continue;
      strides[m] = stride;
      placed[m] = 1;
    }
    stride *= plan->extent[order[k]] > 1 ? plan->extent[order[k]] : 1; /* empty: as numpy */
  }
  /* Any label neither input of the last step holds (none should be) goes outermost, in the
   * output's order from the back, so the layout stays dense. */
  for (int m = plan->out_rank - 1; m >= 0; m--) {
    if (placed[m]) continue;
    strides[m] = stride;
    stride *= plan->out_shape[m] > 1 ? plan->out_shape[m] : 1;
  }
}

/* The step that reads slot `slot`, or n_steps when none does (a lone operand). */
static int consumer_of(const tl__einsum_plan *plan, int slot) {
  for (int step = 0; step < plan->path.n_steps; step++)
    if (plan->path.pairs[step][0] == slot || plan->path.pairs[step][1] == slot) return step;
  return plan->path.n_steps;
}

/* One scratch buffer: its rounded size, its lifetime in steps (live from `first`, written
 * there, through `last`, where it is read; -1 for the summed operands, which are written
 * before the first step) and the plan's field that gets its offset. */
typedef struct scratch_buffer {
  size_t bytes;
  int first, last;
  size_t *offset;
} scratch_buffer;

static int lifetimes_meet(const scratch_buffer *a, const scratch_buffer *b) {
  return a->first <= b->last && b->first <= a->last;
}

/* The lowest 64-aligned offset where buffers[k] overlaps in memory no placed buffer whose
 * lifetime meets its own: the candidates are 0 and the end of each such buffer. */
static int place_buffer(scratch_buffer *buffers, int k, size_t *top) {
  scratch_buffer *b = &buffers[k];
  size_t best = SIZE_MAX;
  for (int c = -1; c < k; c++) {
    size_t at = 0;
    if (c >= 0) {
      if (!lifetimes_meet(&buffers[c], b)) continue;
      at = *buffers[c].offset + buffers[c].bytes; /* no overflow: placed buffers fit */
    }
    size_t end;
    if (at >= best || !tl__size_add(at, b->bytes, &end)) continue;
    int clear = 1;
    for (int o = 0; o < k && clear; o++) {
      const scratch_buffer *p = &buffers[o];
      if (lifetimes_meet(p, b)) clear = end <= *p->offset || *p->offset + p->bytes <= at;
    }
    if (clear) best = at;
  }
  if (best == SIZE_MAX) return 0;
  *b->offset = best;
  if (best + b->bytes > *top) *top = best + b->bytes;
  return 1;
}

/* Offsets in the surface's scratch of every summed operand and intermediate. Buffers whose
 * lifetimes do not meet share memory, so a long chain needs about two intermediates of
 * scratch, not the sum of all of them (numpy frees each intermediate once it is read). A
 * step's result never shares memory with the step's inputs: both are live at that step. */
static tl_status layout_scratch(const char *spec, tl__einsum_plan *plan) {
  int n = plan->n_inputs;
  size_t element_size = tl_dtype_size(plan->dtype);
  scratch_buffer buffers[2 * TL_EINSUM_MAX_OPERANDS];
  int count = 0;
  for (int i = 0; i < n; i++) {
    tl__einsum_prep *prep = &plan->prep[i];
    if (!prep->sum) continue;
    scratch_buffer *b = &buffers[count++];
    if (!buffer_bytes(plan->extent, prep->n_kept, prep->kept_labels, element_size, &b->bytes)) {
      return tl__fail(TL_E_SHAPE,
                      "einsum spec \"%s\": operand %d summed over its lone labels "
                      "overflows the address space",
                      spec, i);
    }
    b->first = -1;
    b->last = consumer_of(plan, i);
    b->offset = &prep->scratch_offset;
  }
  for (int step = 0; step + 1 < plan->path.n_steps; step++) {
    scratch_buffer *b = &buffers[count++];
    if (!buffer_bytes(plan->extent, plan->step_rank[step], plan->step_labels[step], element_size,
                      &b->bytes)) {
      return tl__fail(TL_E_SHAPE,
                      "einsum spec \"%s\": the intermediate of path step %d overflows the address "
                      "space",
                      spec, step);
    }
    b->first = step;
    b->last = consumer_of(plan, n + step);
    b->offset = &plan->step_offset[step];
  }
  size_t top = 0;
  for (int k = 0; k < count; k++) {
    if (!place_buffer(buffers, k, &top)) {
      return tl__fail(TL_E_SHAPE,
                      "einsum spec \"%s\": the scratch for its intermediates overflows the "
                      "address space",
                      spec);
    }
  }
  plan->scratch_bytes = top;
  return TL_OK;
}

/* prep->memory_order: the kept labels by the magnitude of their stride in the operand
 * (a merged diagonal's strides added up), densest first; a zero stride (a broadcast axis)
 * sorts last and ties keep the spec's order. Without strides, or for a summed operand (whose
 * scratch is column-major in kept order), the kept order itself. */
static void order_in_memory(tl__einsum_prep *prep, const int *term_labels, const int64_t *strides) {
  int64_t key[TL_MAX_RANK];
  for (int j = 0; j < prep->n_kept; j++) {
    prep->memory_order[j] = prep->kept_labels[j];
    int64_t s = 0;
    for (int k = 0; strides != NULL && k < prep->rank; k++)
      if (prep->axis_to_unique[k] >= 0 && term_labels[k] == prep->kept_labels[j]) s += strides[k];
    key[j] = s == 0 ? INT64_MAX : s < 0 ? -s : s;
  }
  if (strides == NULL || prep->sum) return;
  for (int j = 1; j < prep->n_kept; j++) { /* insertion: stable, and ranks are small */
    int label = prep->memory_order[j];
    int64_t k = key[j];
    int at = j;
    while (at > 0 && key[at - 1] > k) {
      prep->memory_order[at] = prep->memory_order[at - 1];
      key[at] = key[at - 1];
      at--;
    }
    prep->memory_order[at] = label;
    key[at] = k;
  }
}

tl_status tl__einsum_plan_build(const char *spec, const tl__einsum_spec *parsed,
                                const int64_t *const *shapes, const int64_t *const *strides,
                                tl_dtype dtype, tl_einsum_path_kind kind, const int *linear,
                                int linear_steps, tl__einsum_plan *plan) {
  if (kind != TL_EINSUM_PATH_AUTO && kind != TL_EINSUM_PATH_GREEDY &&
      kind != TL_EINSUM_PATH_OPTIMAL && kind != TL_EINSUM_PATH_GIVEN) {
    return tl__fail(TL_E_INVALID, "einsum: unknown path kind %d", (int)kind);
  }
  memset(plan, 0, sizeof *plan);
  plan->dtype = dtype;
  int n = parsed->n_inputs;
  plan->n_inputs = n;
  tl_status status = tl__einsum_bind_extents(spec, parsed, shapes, plan->extent);
  if (status != TL_OK) return status;

  plan->out_rank = parsed->output.count;
  tl__labelset output_set = {{0}};
  for (int k = 0; k < plan->out_rank; k++) {
    int label = parsed->output.labels[k];
    plan->out_labels[k] = label;
    plan->out_shape[k] = plan->extent[label] < 0 ? 1 : plan->extent[label];
    tl__labelset_add(&output_set, label);
  }

  /* Diagonal merge and broadcast drop, per operand. */
  tl__labelset unique_set[TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n; i++) {
    const tl__einsum_term *term = &parsed->inputs[i];
    tl__einsum_prep *prep = &plan->prep[i];
    prep->rank = term->count;
    memset(&unique_set[i], 0, sizeof unique_set[i]);
    for (int k = 0; k < term->count; k++) {
      int label = term->labels[k];
      if (tl__einsum_is_broadcast(label) && shapes[i][k] == 1 && plan->extent[label] != 1) {
        prep->axis_to_unique[k] = -1;
        continue;
      }
      int u = 0;
      while (u < prep->n_unique && prep->unique_labels[u] != label) u++;
      if (u == prep->n_unique) {
        prep->unique_labels[prep->n_unique++] = label;
        tl__labelset_add(&unique_set[i], label);
      }
      prep->axis_to_unique[k] = u;
    }
  }
  /* Keep what another operand or the output needs; sum the rest (n > 1 only). */
  for (int i = 0; i < n; i++) {
    tl__einsum_prep *prep = &plan->prep[i];
    tl__labelset need = output_set;
    for (int j = 0; j < n; j++) {
      if (j != i) need = tl__labelset_or(need, unique_set[j]);
    }
    for (int u = 0; u < prep->n_unique; u++) {
      int label = prep->unique_labels[u];
      if (n == 1 || tl__labelset_has(need, label)) prep->kept_labels[prep->n_kept++] = label;
    }
    prep->sum = prep->n_kept < prep->n_unique;
    order_in_memory(prep, parsed->inputs[i].labels, strides != NULL ? strides[i] : NULL);
  }

  tl__path_problem problem;
  problem.n = n;
  problem.output = output_set;
  problem.extent = plan->extent;
  for (int i = 0; i < n; i++) {
    memset(&problem.sets[i], 0, sizeof problem.sets[i]);
    for (int k = 0; k < plan->prep[i].n_kept; k++) {
      tl__labelset_add(&problem.sets[i], plan->prep[i].kept_labels[k]);
    }
  }
  if (kind == TL_EINSUM_PATH_GIVEN) {
    tl__path greedy;
    tl__path_greedy(&problem, &greedy);
    plan->greedy_flops = greedy.flops;
    plan->optimal_flops = -1.0;
    plan->chosen = TL_EINSUM_PATH_GIVEN;
    status = tl__path_from_linear(&problem, linear, linear_steps, &plan->path);
  } else {
    status = choose_path(&problem, kind, plan);
  }
  if (status != TL_OK) return status;

  if ((status = order_step_labels(spec, plan)) != TL_OK) return status;
  return layout_scratch(spec, plan);
}

tl_status tl_einsum_path(tl_einsum_path_kind kind, const char *spec, int n_operands,
                         const int *ranks, const int64_t *const *shapes, tl_einsum_path_info *out) {
  if (spec == NULL || ranks == NULL || shapes == NULL || out == NULL) {
    return tl__fail(TL_E_INVALID,
                    "tl_einsum_path: NULL argument (spec %p, ranks %p, shapes %p, "
                    "out %p)",
                    (const void *)spec, (const void *)ranks, (const void *)shapes, (void *)out);
  }
  if (n_operands < 1 || n_operands > TL_EINSUM_MAX_OPERANDS) {
    return tl__fail(TL_E_INVALID, "tl_einsum_path: n_operands is %d, expected 1..%d", n_operands,
                    TL_EINSUM_MAX_OPERANDS);
  }
  for (int i = 0; i < n_operands; i++) {
    if (ranks[i] < 0 || ranks[i] > TL_MAX_RANK || (ranks[i] > 0 && shapes[i] == NULL)) {
      return tl__fail(TL_E_INVALID, "tl_einsum_path: operand %d has rank %d and shape %p", i,
                      ranks[i], (const void *)shapes[i]);
    }
  }
  if (kind == TL_EINSUM_PATH_GIVEN) {
    return tl__fail(TL_E_INVALID,
                    "tl_einsum_path: kind TL_EINSUM_PATH_GIVEN names no path here (pass one to "
                    "tl_einsum_with_path_into)");
  }
  /* Both are a few tens of kilobytes: keep them off the caller's stack. */
  tl__einsum_spec *parsed = tl__alloc(sizeof *parsed, 64);
  tl__einsum_plan *plan = tl__alloc(sizeof *plan, 64);
  tl_status status = TL_OK;
  if (parsed == NULL || plan == NULL) {
    status = tl__fail(TL_E_NOMEM, "tl_einsum_path: %zu bytes for the plan",
                      sizeof *parsed + sizeof *plan);
  }
  if (status == TL_OK) status = tl__einsum_parse(spec, n_operands, ranks, parsed);
  if (status == TL_OK)
    status = tl__einsum_plan_build(spec, parsed, shapes, NULL, TL_F64, kind, NULL, 0, plan);
  if (status == TL_OK) {
    memset(out, 0, sizeof *out);
    out->n_operands = n_operands;
    out->n_steps = plan->path.n_steps;
    for (int step = 0; step < plan->path.n_steps; step++) {
      out->pairs[step][0] = plan->path.pairs[step][0];
      out->pairs[step][1] = plan->path.pairs[step][1];
    }
    out->flops = plan->path.flops;
    out->greedy_flops = plan->greedy_flops;
    out->optimal_flops = plan->optimal_flops;
    out->largest_intermediate = plan->path.largest;
    out->chosen = plan->chosen;
  }
  tl__free(parsed);
  tl__free(plan);
  return status;
}
