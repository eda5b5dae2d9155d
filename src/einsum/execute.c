/* src/einsum/execute.c: the einsum routes (tl_einsum, tl_einsum_into, _using).
 *
 * A call checks its arguments, finds its plan in the surface's plan cache (or builds and
 * stores one), takes one block of scratch for every prepared operand and intermediate,
 * then prepares the operands (diagonal views; lone labels summed by the fold) and runs
 * the path's pairwise contractions, the last one straight into the output.
 *
 * Invariants: nothing is written to the output before every check has passed and all
 * scratch is held, and the output is written by exactly one step (the fold for a single
 * operand, else the last contraction), so a failure or a cancellation seen between steps
 * leaves it untouched. With a cached plan, an _into call allocates nothing from the heap:
 * the key is built on the stack and intermediates come from the arena. */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"
#include "exec/exec.h"
#include "kernels/kernels.h"
#include "tenlane/ops.h"

/* Key: a tag, the kind, dtype and operand count, each operand's rank, shape and strides,
 * then the spec's bytes. */
#define KEY_TAG 0x6d75736e6965ll /* "einsum" */
#define KEY_WORDS                                                                    \
  (5 + TL_EINSUM_MAX_OPERANDS * (1 + 2 * TL_MAX_RANK) + 2 * TL_EINSUM_MAX_OPERANDS + \
   (TL_EINSUM_SPEC_MAX + 8) / 8 + 1)

/* A caller's path: n_steps pairs in opt_einsum's linear format (kind TL_EINSUM_PATH_GIVEN). */
typedef struct given_path {
  int n_steps;
  const int *pairs;
} given_path;

static size_t build_key(int64_t *key, const char *spec, size_t spec_length, int n,
                        const tl_tensor *const *operands, tl_einsum_path_kind kind,
                        const given_path *path) {
  size_t w = 0;
  key[w++] = KEY_TAG;
  key[w++] = (int64_t)kind;
  key[w++] = (int64_t)operands[0]->dtype;
  key[w++] = n;
  for (int i = 0; i < n; i++) {
    const tl_tensor *t = operands[i];
    key[w++] = t->rank;
    for (int k = 0; k < t->rank; k++) key[w++] = t->shape[k];
    for (int k = 0; k < t->rank; k++) key[w++] = t->strides[k];
  }
  if (kind == TL_EINSUM_PATH_GIVEN) {
    key[w++] = path->n_steps;
    for (int k = 0; k < 2 * path->n_steps; k++) key[w++] = path->pairs[k];
  }
  size_t bytes = w * sizeof(int64_t);
  memcpy((char *)key + bytes, spec, spec_length);
  return bytes + spec_length;
}

static void plan_destroy(void *plan) { tl__free(plan); }

static tl_status check_arguments(const char *spec, int n, const tl_tensor *const *operands,
                                 const tl_tensor *out) {
  if (spec == NULL) return tl__fail(TL_E_INVALID, "einsum: spec is NULL");
  if (n < 1 || n > TL_EINSUM_MAX_OPERANDS) {
    return tl__fail(TL_E_INVALID,
                    "einsum: n_operands is %d, expected 1..%d (TL_EINSUM_MAX_OPERANDS); spec "
                    "\"%.96s\"",
                    n, TL_EINSUM_MAX_OPERANDS, spec);
  }
  if (operands == NULL) return tl__fail(TL_E_INVALID, "einsum \"%s\": operands is NULL", spec);
  if (out == NULL) return tl__fail(TL_E_INVALID, "einsum \"%s\": out is NULL", spec);
  for (int i = 0; i < n; i++) {
    if (operands[i] == NULL)
      return tl__fail(TL_E_INVALID, "einsum \"%s\": operands[%d] is NULL", spec, i);
    /* The operand's name is formatted only when it fails validation (then validated again
     * with it): an snprintf per operand per call cost more than a small contraction's
     * bookkeeping. */
    if (tl_tensor_validate(operands[i], "operand") != TL_OK) {
      char name[32];
      snprintf(name, sizeof name, "operands[%d]", i);
      return tl_tensor_validate(operands[i], name);
    }
    if (operands[i]->dtype != operands[0]->dtype) {
      return tl__fail(TL_E_DTYPE, "einsum \"%s\": operands[%d] is %s but operands[0] is %s", spec,
                      i, tl_dtype_name(operands[i]->dtype), tl_dtype_name(operands[0]->dtype));
    }
  }
  return TL_OK;
}

static tl_status check_output(const char *spec, const tl__einsum_plan *plan, int n,
                              const tl_tensor *const *operands, const tl_tensor *out) {
  tl_status status = tl_tensor_validate(out, "out");
  if (status != TL_OK) return status;
  if (out->dtype != plan->dtype) {
    return tl__fail(TL_E_DTYPE, "einsum \"%s\": out is %s but the operands are %s", spec,
                    tl_dtype_name(out->dtype), tl_dtype_name(plan->dtype));
  }
  int fits = out->rank == plan->out_rank;
  for (int k = 0; fits && k < out->rank; k++) fits = out->shape[k] == plan->out_shape[k];
  if (!fits) {
    char want[160], got[160];
    size_t wl = 0, gl = 0;
    want[0] = got[0] = '\0';
    for (int k = 0; k < plan->out_rank && wl < sizeof want - 24; k++) {
      wl += (size_t)snprintf(want + wl, sizeof want - wl, "%s%lld", k ? "x" : "",
                             (long long)plan->out_shape[k]);
    }
    for (int k = 0; k < out->rank && gl < sizeof got - 24; k++) {
      gl += (size_t)snprintf(got + gl, sizeof got - gl, "%s%lld", k ? "x" : "",
                             (long long)out->shape[k]);
    }
    return tl__fail(TL_E_SHAPE,
                    "einsum \"%s\": out has rank %d shape [%s], expected rank %d "
                    "shape [%s]",
                    spec, out->rank, got, plan->out_rank, want);
  }
  if (tl_tensor_self_overlap(out)) {
    return tl__fail(TL_E_ALIAS,
                    "einsum \"%s\": out maps two indices to one element (a zero or "
                    "colliding stride)",
                    spec);
  }
  for (int i = 0; i < n; i++) {
    if (tl_tensor_overlap(out, operands[i])) {
      return tl__fail(TL_E_ALIAS, "einsum \"%s\": out overlaps operands[%d]", spec, i);
    }
  }
  return TL_OK;
}

/* Find or build the plan for this call. The plan is owned by the surface's cache. */
static tl_status find_plan(tl_exec *exec, const char *spec, int n, const tl_tensor *const *operands,
                           tl_einsum_path_kind kind, const given_path *path,
                           const tl__einsum_plan **out) {
  size_t spec_length = strnlen(spec, TL_EINSUM_SPEC_MAX + 1);
  if (spec_length > TL_EINSUM_SPEC_MAX) {
    return tl__fail(TL_E_INVALID, "einsum: the spec is longer than %d bytes", TL_EINSUM_SPEC_MAX);
  }
  int64_t key[KEY_WORDS];
  if (kind == TL_EINSUM_PATH_GIVEN &&
      (path->n_steps < 0 || path->n_steps > TL_EINSUM_MAX_OPERANDS ||
       (path->n_steps > 0 && path->pairs == NULL))) {
    return tl__fail(TL_E_INVALID, "einsum \"%s\": the path has %d steps at %p", spec, path->n_steps,
                    (const void *)path->pairs);
  }
  size_t key_length = build_key(key, spec, spec_length, n, operands, kind, path);
  tl__plan_cache *cache = tl__exec_plans(exec);
  const tl__einsum_plan *found = tl__plan_cache_find(cache, key, key_length);
  if (found != NULL) {
    *out = found;
    return TL_OK;
  }
  tl__einsum_spec *parsed = tl__alloc(sizeof *parsed, 64);
  tl__einsum_plan *plan = tl__alloc(sizeof *plan, 64);
  tl_status status = TL_OK;
  if (parsed == NULL || plan == NULL) {
    status = tl__fail(TL_E_NOMEM, "einsum \"%s\": %zu bytes for its plan", spec,
                      sizeof *parsed + sizeof *plan);
  }
  int ranks[TL_EINSUM_MAX_OPERANDS];
  const int64_t *shapes[TL_EINSUM_MAX_OPERANDS], *strides[TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n; i++) {
    ranks[i] = operands[i]->rank;
    shapes[i] = operands[i]->shape;
    strides[i] = operands[i]->strides; /* the key holds them: the plan may depend on them */
  }
  if (status == TL_OK) status = tl__einsum_parse(spec, n, ranks, parsed);
  if (status == TL_OK) {
    status = tl__einsum_plan_build(spec, parsed, shapes, strides, operands[0]->dtype, kind,
                                   path->pairs, path->n_steps, plan);
  }
  tl__free(parsed);
  if (status != TL_OK) {
    tl__free(plan);
    return status;
  }
  status = tl__plan_cache_insert(cache, key, key_length, plan, plan_destroy);
  if (status != TL_OK) return status; /* the cache destroyed the plan */
  *out = plan;
  return TL_OK;
}

/* A column-major tensor over scratch with the extents of `labels`. */
static void scratch_tensor(const tl__einsum_plan *plan, void *data, int rank, const int *labels,
                           tl_tensor *out) {
  memset(out, 0, sizeof *out);
  out->dtype = plan->dtype;
  out->rank = rank;
  int64_t stride = 1;
  for (int k = 0; k < rank; k++) {
    out->shape[k] = plan->extent[labels[k]];
    out->strides[k] = stride;
    stride *= out->shape[k];
  }
  out->data = data;
}

/* The operand's diagonal view: one axis per unique label, strides of merged axes added. */
static void diagonal_view(const tl__einsum_plan *plan, const tl__einsum_prep *prep,
                          const tl_tensor *operand, tl_tensor *view) {
  memset(view, 0, sizeof *view);
  view->dtype = operand->dtype;
  view->rank = prep->n_unique;
  for (int u = 0; u < prep->n_unique; u++) view->shape[u] = plan->extent[prep->unique_labels[u]];
  for (int k = 0; k < prep->rank; k++) {
    int u = prep->axis_to_unique[k];
    if (u >= 0) view->strides[u] += operand->strides[k];
  }
  view->offset = operand->offset;
  view->data = operand->data;
}

static int index_of(const int *labels, int count, int label) {
  for (int k = 0; k < count; k++) {
    if (labels[k] == label) return k;
  }
  return -1;
}

/* The part of the call's scratch block at `offset`, or NULL when the plan needs no scratch
 * (every intermediate is empty): an offset is never applied to a null pointer. */
static char *scratch_at(char *scratch, size_t offset) {
  return scratch != NULL ? scratch + offset : NULL;
}

/* Elements of t as a double (0 for an empty tensor). */
static double numel_d(const tl_tensor *t) {
  double count = 1.0;
  for (int k = 0; k < t->rank; k++) count *= (double)t->shape[k];
  return count;
}

/* The team one step runs on: the surface's, unless the cost model says a split does not
 * pay (then the step's routes see a team request of one). */
static int step_team(tl_exec *exec, double flops, double bytes, double parts, int real_gemm) {
  int team;
  if (tl__exec_team(exec, &team) != TL_OK) return 1;
  return tl__einsum_step_team(exec, team, flops, bytes, parts, real_gemm);
}

/* One pairwise step: an elementwise product when it sums nothing, else a contraction. */
static tl_status run_step(tl_exec *exec, const tl_tensor *a, const int *a_labels,
                          const tl_tensor *b, const int *b_labels, tl_tensor *c,
                          const int *c_labels) {
  double esize = (double)tl_dtype_size(c->dtype);
  double complex_factor = tl_dtype_is_complex(c->dtype) ? 4.0 : 1.0;
  double moved = (numel_d(a) + numel_d(b) + numel_d(c)) * esize;
  if (tl__einsum_step_sums_nothing(a_labels, a->rank, b_labels, b->rank, c_labels, c->rank)) {
    int team = step_team(exec, numel_d(c) * complex_factor, moved, numel_d(c), 0);
    return tl__einsum_product(exec, team, a, a_labels, b, b_labels, c, c_labels);
  }
  /* 2 * (product of every label's extent): the extents of a, times b's labels a lacks. */
  double flops = 2.0 * numel_d(a) * complex_factor;
  for (int k = 0; k < b->rank; k++) {
    if (index_of(a_labels, a->rank, b_labels[k]) < 0) flops *= (double)b->shape[k];
  }
  /* A contraction to one number is one long dot, which the GEMM route cuts into chunks
   * of TL__DOT_CHUNK products (gemm_thin.c): those are its parts. */
  double parts = numel_d(c);
  if (parts == 1.0) parts = flops / (2.0 * complex_factor * (double)TL__DOT_CHUNK);
  int saved = exec->team_request;
  if (step_team(exec, flops, moved, parts, !tl_dtype_is_complex(c->dtype)) == 1)
    exec->team_request = 1;
  tl_status status = tl_contract_into(exec, c_labels, a, a_labels, b, b_labels, c);
  exec->team_request = saved;
  return status;
}

/* A one-operand step (preparation, or the whole call for one operand), on the team the
 * cost model gives it. */
static tl_status run_fold(tl_exec *exec, const tl_tensor *in, const int *in_to_out,
                          const tl_tensor *out) {
  double moved = (numel_d(in) + numel_d(out)) * (double)tl_dtype_size(in->dtype);
  int saved = exec->team_request;
  if (step_team(exec, numel_d(in), moved, numel_d(in), 0) == 1) exec->team_request = 1;
  tl_status status = tl__einsum_fold_route(exec, in, in_to_out, out);
  exec->team_request = saved;
  return status;
}

/* Step `step`'s result slot: the call's output for the last step, else its scratch. */
static void step_slot(const tl__einsum_plan *plan, char *scratch, int step, tl_tensor *out,
                      tl_tensor *slots, const int **slot_labels) {
  const int slot = plan->n_inputs + step;
  if (step == plan->path.n_steps - 1) {
    slots[slot] = *out;
  } else {
    scratch_tensor(plan, scratch_at(scratch, plan->step_offset[step]), plan->step_rank[step],
                   plan->step_labels[step], &slots[slot]);
  }
  slot_labels[slot] = plan->step_labels[step];
}

/* Steps `step` and `step + 1` in one pass (tl__einsum_product3), when neither sums anything
 * and the second multiplies the first's result (which nothing else reads: a path uses each
 * result once) by another operand. TL_E_UNAVAILABLE, with nothing written, where they do
 * not fuse; then they run one by one. */
static tl_status run_fused(tl_exec *exec, const tl__einsum_plan *plan, char *scratch, int step,
                           tl_tensor *out, tl_tensor *slots, const int **slot_labels) {
  if (step + 1 >= plan->path.n_steps) return TL_E_UNAVAILABLE;
  const int mid = plan->n_inputs + step;
  const int *first = plan->path.pairs[step], *second = plan->path.pairs[step + 1];
  if (second[0] != mid && second[1] != mid) return TL_E_UNAVAILABLE;
  const int other = second[0] == mid ? second[1] : second[0];
  if (!tl__einsum_step_sums_nothing(slot_labels[first[0]], slots[first[0]].rank,
                                    slot_labels[first[1]], slots[first[1]].rank, slot_labels[mid],
                                    slots[mid].rank) ||
      !tl__einsum_step_sums_nothing(slot_labels[mid], slots[mid].rank, slot_labels[other],
                                    slots[other].rank, plan->step_labels[step + 1],
                                    plan->step_rank[step + 1]))
    return TL_E_UNAVAILABLE;
  step_slot(plan, scratch, step + 1, out, slots, slot_labels);
  const tl_tensor *result = &slots[mid + 1];
  const tl_tensor *a = &slots[first[0]], *b = &slots[first[1]], *c = &slots[other];
  /* The plan lets the second step's result share scratch with what only the first step
   * reads (no longer live by then); fused, the first step's inputs are still being read. */
  if (tl_tensor_overlap(result, a) || tl_tensor_overlap(result, b)) return TL_E_UNAVAILABLE;
  double esize = (double)tl_dtype_size(result->dtype);
  double moved = (numel_d(a) + numel_d(b) + numel_d(c) + numel_d(result)) * esize;
  double flops = 2.0 * numel_d(result) * (tl_dtype_is_complex(result->dtype) ? 4.0 : 1.0);
  int team = step_team(exec, flops, moved, numel_d(result), 0);
  return tl__einsum_product3(exec, team, a, slot_labels[first[0]], b, slot_labels[first[1]], c,
                             slot_labels[other], second[0] == mid, result, slot_labels[mid + 1]);
}

static tl_status run_plan(tl_exec *exec, const tl__einsum_plan *plan,
                          const tl_tensor *const *operands, tl_tensor *out) {
  char *scratch = NULL;
  if (plan->scratch_bytes > 0) {
    tl_status status = tl__exec_scratch(exec, plan->scratch_bytes, 64, (void **)&scratch);
    if (status != TL_OK) return status;
  }
  int n = plan->n_inputs;
  tl_tensor slots[2 * TL_EINSUM_MAX_OPERANDS];
  const int *slot_labels[2 * TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n; i++) {
    const tl__einsum_prep *prep = &plan->prep[i];
    tl_tensor view;
    diagonal_view(plan, prep, operands[i], &view);
    if (n == 1) {
      int to_out[TL_MAX_RANK];
      for (int u = 0; u < prep->n_unique; u++) {
        to_out[u] = index_of(plan->out_labels, plan->out_rank, prep->unique_labels[u]);
      }
      if (tl__exec_cancelled(exec)) {
        return tl__fail(TL_E_CANCELLED,
                        "cancelled (the lane's run or tl_exec_cancel) before the last fold");
      }
      return run_fold(exec, &view, to_out, out);
    }
    if (prep->sum) {
      scratch_tensor(plan, scratch_at(scratch, prep->scratch_offset), prep->n_kept,
                     prep->kept_labels, &slots[i]);
      int to_kept[TL_MAX_RANK];
      for (int u = 0; u < prep->n_unique; u++) {
        to_kept[u] = index_of(prep->kept_labels, prep->n_kept, prep->unique_labels[u]);
      }
      tl_status status = run_fold(exec, &view, to_kept, &slots[i]);
      if (status != TL_OK) return status;
    } else {
      slots[i] = view;
    }
    slot_labels[i] = prep->kept_labels;
  }
  for (int step = 0; step < plan->path.n_steps; step++) {
    if (tl__exec_cancelled(exec)) {
      return tl__fail(TL_E_CANCELLED,
                      "cancelled (the lane's run or tl_exec_cancel) before step %d of %d", step,
                      plan->path.n_steps);
    }
    step_slot(plan, scratch, step, out, slots, slot_labels);
    int a = plan->path.pairs[step][0], b = plan->path.pairs[step][1];
    tl_status status = run_fused(exec, plan, scratch, step, out, slots, slot_labels);
    if (status != TL_E_UNAVAILABLE) {
      if (status != TL_OK) return status;
      step++; /* the next step is done too */
      continue;
    }
    status = run_step(exec, &slots[a], slot_labels[a], &slots[b], slot_labels[b], &slots[n + step],
                      slot_labels[n + step]);
    if (status != TL_OK) return status;
  }
  return TL_OK;
}

/* The fresh result, dense in `layout`, not zeroed: every route einsum ends with writes
 * each output element (zeroing it first touched every page twice: a 2048^2 Hadamard
 * product's fresh form took several times numpy's a * b). */
static tl_status fresh_unzeroed(const tl_exec *exec, const tl__einsum_plan *plan,
                                tl_einsum_layout layout, tl_tensor *out) {
  int64_t strides[TL_MAX_RANK];
  int rank = plan->out_rank;
  int ok = exec->order == TL_ORDER_ROW_MAJOR ? tl_strides_row_major(rank, plan->out_shape, strides)
                                             : tl_strides_col_major(rank, plan->out_shape, strides);
  size_t bytes = tl_dtype_size(plan->dtype);
  for (int k = 0; ok && k < rank; k++) ok = tl__size_mul(bytes, (size_t)plan->out_shape[k], &bytes);
  if (!ok) return tl__fail(TL_E_SHAPE, "einsum: the result's size overflows");
  /* after the size check: the kept layout's strides are products of the same extents */
  if (layout == TL_EINSUM_LAYOUT_KEEP) tl__einsum_keep_strides(plan, strides);
  void *buffer = tl__alloc(bytes == 0 ? 64 : bytes, 64);
  if (buffer == NULL) {
    return tl__fail(TL_E_NOMEM, "einsum: the allocator gave no memory for a %zu-byte result",
                    bytes);
  }
  tl__advise_huge(buffer, bytes);
  tl_status status = tl_tensor_wrap(plan->dtype, rank, plan->out_shape, strides, buffer, 0, out);
  if (status != TL_OK) {
    tl__free(buffer);
    return status;
  }
  out->owned = buffer;
  return TL_OK;
}

static tl_status einsum_impl(tl_exec *exec, const char *spec, int n,
                             const tl_tensor *const *operands, tl_einsum_path_kind kind,
                             const given_path *path, tl_einsum_layout layout, tl_tensor *out,
                             int fresh) {
  tl_status status = check_arguments(spec, n, operands, out);
  if (status != TL_OK) return status;
  int team;
  status = tl__exec_team(exec, &team);
  if (status != TL_OK) return status;
  const tl__einsum_plan *plan;
  status = find_plan(exec, spec, n, operands, kind, path, &plan);
  if (status != TL_OK) return status;
  if (!fresh) {
    status = check_output(spec, plan, n, operands, out);
    if (status != TL_OK) return status;
    return run_plan(exec, plan, operands, out);
  }
  tl_tensor result;
  status = fresh_unzeroed(exec, plan, layout, &result);
  if (status != TL_OK) return status;
  status = run_plan(exec, plan, operands, &result);
  if (status != TL_OK) {
    tl_tensor_release(&result);
    return status;
  }
  *out = result;
  return TL_OK;
}

void tl_einsum_options_init(tl_einsum_options *options) {
  if (options == NULL) return;
  memset(options, 0, sizeof *options);
  options->size = sizeof *options;
  options->path_kind = TL_EINSUM_PATH_AUTO;
  options->layout = TL_EINSUM_LAYOUT_ORDER;
}

/* The options' path kind, path and layout (the defaults for NULL, and for fields past a
 * caller's size). */
static tl_status read_options(const char *where, const tl_einsum_options *options,
                              tl_einsum_path_kind *kind, given_path *path,
                              tl_einsum_layout *layout) {
  *kind = TL_EINSUM_PATH_AUTO;
  *layout = TL_EINSUM_LAYOUT_ORDER;
  path->n_steps = 0;
  path->pairs = NULL;
  if (options == NULL) return TL_OK;
  tl_status status = tl__check_struct_size(where, "tl_einsum_options", options->size,
                                           TL__SIZE_THROUGH(tl_einsum_options, path_kind));
  if (status != TL_OK) return status;
  *kind = options->path_kind;
  const int has_path = options->size >= TL__SIZE_THROUGH(tl_einsum_options, n_steps);
  if (options->size >= TL__SIZE_THROUGH(tl_einsum_options, layout)) *layout = options->layout;
  if (*layout != TL_EINSUM_LAYOUT_ORDER && *layout != TL_EINSUM_LAYOUT_KEEP)
    return tl__fail(TL_E_INVALID, "%s: unknown layout %d", where, (int)*layout);
  if (*kind == TL_EINSUM_PATH_GIVEN) {
    if (!has_path) {
      return tl__fail(TL_E_INVALID,
                      "%s: kind TL_EINSUM_PATH_GIVEN needs a path, and options of %zu bytes "
                      "hold none (use tl_einsum_options_init, or tl_einsum_with_path_into)",
                      where, options->size);
    }
    path->n_steps = options->n_steps;
    path->pairs = options->path;
  }
  return TL_OK;
}

/* tl_einsum_ex_into (fresh 0) and tl_einsum_ex (fresh 1). */
static tl_status einsum_with_options(tl_exec *exec, const char *where,
                                     const tl_einsum_options *options, const char *spec, int n,
                                     const tl_tensor *const *operands, tl_tensor *out, int fresh) {
  tl_status status = tl__exec_begin(exec, where);
  if (status != TL_OK) return status;
  tl_einsum_path_kind kind;
  tl_einsum_layout layout;
  given_path path;
  status = read_options(where, options, &kind, &path, &layout);
  if (status != TL_OK) return tl__exec_end(exec, status);
  return tl__exec_end(exec, einsum_impl(exec, spec, n, operands, kind, &path, layout, out, fresh));
}

tl_status tl_einsum_ex_into(tl_exec *exec, const tl_einsum_options *options, const char *spec,
                            int n_operands, const tl_tensor *const *operands, tl_tensor *out) {
  return einsum_with_options(exec, "tl_einsum_ex_into", options, spec, n_operands, operands, out,
                             0);
}

tl_status tl_einsum_ex(tl_exec *exec, const tl_einsum_options *options, const char *spec,
                       int n_operands, const tl_tensor *const *operands, tl_tensor *out) {
  return einsum_with_options(exec, "tl_einsum_ex", options, spec, n_operands, operands, out, 1);
}

tl_status tl_einsum_into(tl_exec *exec, const char *spec, int n_operands,
                         const tl_tensor *const *operands, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_einsum_into");
  if (status != TL_OK) return status;
  given_path none = {0, NULL};
  return tl__exec_end(exec, einsum_impl(exec, spec, n_operands, operands, TL_EINSUM_PATH_AUTO,
                                        &none, TL_EINSUM_LAYOUT_ORDER, out, 0));
}

tl_status tl_einsum(tl_exec *exec, const char *spec, int n_operands,
                    const tl_tensor *const *operands, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_einsum");
  if (status != TL_OK) return status;
  given_path none = {0, NULL};
  return tl__exec_end(exec, einsum_impl(exec, spec, n_operands, operands, TL_EINSUM_PATH_AUTO,
                                        &none, TL_EINSUM_LAYOUT_ORDER, out, 1));
}

tl_status tl_einsum_with_path_into(tl_exec *exec, int n_steps, const int *path, const char *spec,
                                   int n_operands, const tl_tensor *const *operands,
                                   tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_einsum_with_path_into");
  if (status != TL_OK) return status;
  given_path given = {n_steps, path};
  return tl__exec_end(exec, einsum_impl(exec, spec, n_operands, operands, TL_EINSUM_PATH_GIVEN,
                                        &given, TL_EINSUM_LAYOUT_ORDER, out, 0));
}

tl_status tl_einsum_with_path(tl_exec *exec, int n_steps, const int *path, const char *spec,
                              int n_operands, const tl_tensor *const *operands, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_einsum_with_path");
  if (status != TL_OK) return status;
  given_path given = {n_steps, path};
  return tl__exec_end(exec, einsum_impl(exec, spec, n_operands, operands, TL_EINSUM_PATH_GIVEN,
                                        &given, TL_EINSUM_LAYOUT_ORDER, out, 1));
}
