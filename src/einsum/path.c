/* src/einsum/path.c: the order in which einsum contracts its prepared operands.
 *
 * Both searches work on label sets only. A step's result keeps the labels of its two
 * inputs that some other remaining operand or the output still needs; its cost is
 * 2 * (product of the extents of all labels of the two inputs). The exact search is a
 * dynamic program over operand subsets: best(S) = min over splits S = A + B of
 * best(A) + best(B) + cost(result(A), result(B)), where result(X) is X's labels that
 * the operands outside X or the output need. It considers every binary contraction
 * tree, outer products included, so its cost is never above the greedy path's. */
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"

double tl__path_size(const tl__path_problem *problem, tl__labelset s) {
  double size = 1.0;
  for (int w = 0; w < TL__LABELSET_WORDS; w++) {
    uint64_t bits = s.word[w];
    while (bits != 0) {
      int label = w * 64 + __builtin_ctzll(bits);
      bits &= bits - 1;
      size *= (double)problem->extent[label];
    }
  }
  return size;
}

double tl__path_step_flops(const tl__path_problem *problem, tl__labelset a, tl__labelset b) {
  return 2.0 * tl__path_size(problem, tl__labelset_or(a, b));
}

/* Labels needed by anything other than the operands in `alive` at indices i and j. */
static tl__labelset needed_elsewhere(const tl__labelset *sets, const int *alive, int count, int i,
                                     int j, tl__labelset output) {
  tl__labelset need = output;
  for (int k = 0; k < count; k++) {
    if (k == i || k == j) continue;
    need = tl__labelset_or(need, sets[alive[k]]);
  }
  return need;
}

/* The start of every path: each operand in its own slot, alive, and an empty path. Returns
 * the number of operands left (all of them). */
static int path_begin(const tl__path_problem *problem, tl__labelset *sets, int *alive,
                      tl__path *out) {
  for (int i = 0; i < problem->n; i++) {
    sets[i] = problem->sets[i];
    alive[i] = i;
  }
  out->n_steps = 0;
  out->flops = 0.0;
  out->largest = 0.0;
  return problem->n;
}

void tl__path_greedy(const tl__path_problem *problem, tl__path *out) {
  int n = problem->n;
  tl__labelset sets[2 * TL_EINSUM_MAX_OPERANDS];
  int alive[TL_EINSUM_MAX_OPERANDS]; /* slot ids of the remaining operands */
  int count = path_begin(problem, sets, alive, out);
  while (count > 1) {
    int best_i = -1, best_j = -1;
    double best_score = 0.0, best_cost = 0.0;
    tl__labelset best_result = {{0}};
    /* Pairs that share a label: the one whose result shrinks memory most, then cheapest. */
    for (int i = 0; i < count; i++) {
      for (int j = i + 1; j < count; j++) {
        tl__labelset a = sets[alive[i]], b = sets[alive[j]];
        if (tl__labelset_empty(tl__labelset_and(a, b))) continue;
        tl__labelset need = needed_elsewhere(sets, alive, count, i, j, problem->output);
        tl__labelset result = tl__labelset_and(tl__labelset_or(a, b), need);
        double score =
            tl__path_size(problem, result) - tl__path_size(problem, a) - tl__path_size(problem, b);
        double cost = tl__path_step_flops(problem, a, b);
        if (best_i < 0 || score < best_score || (score == best_score && cost < best_cost)) {
          best_i = i;
          best_j = j;
          best_score = score;
          best_cost = cost;
          best_result = result;
        }
      }
    }
    if (best_i < 0) {
      /* Nothing shares a label: take the outer product of the two smallest. */
      int small0 = -1, small1 = -1;
      for (int k = 0; k < count; k++) {
        double size = tl__path_size(problem, sets[alive[k]]);
        if (small0 < 0 || size < tl__path_size(problem, sets[alive[small0]])) {
          small1 = small0;
          small0 = k;
        } else if (small1 < 0 || size < tl__path_size(problem, sets[alive[small1]])) {
          small1 = k;
        }
      }
      best_i = small0 < small1 ? small0 : small1;
      best_j = small0 < small1 ? small1 : small0;
      tl__labelset a = sets[alive[best_i]], b = sets[alive[best_j]];
      tl__labelset need = needed_elsewhere(sets, alive, count, best_i, best_j, problem->output);
      best_result = tl__labelset_and(tl__labelset_or(a, b), need);
      best_cost = tl__path_step_flops(problem, a, b);
    }
    int step = out->n_steps++;
    int slot = n + step;
    out->pairs[step][0] = alive[best_i];
    out->pairs[step][1] = alive[best_j];
    out->result[step] = best_result;
    out->flops += best_cost;
    double size = tl__path_size(problem, best_result);
    if (size > out->largest) out->largest = size;
    sets[slot] = best_result;
    /* Remove j then i (j > i), append the result at the end. */
    for (int k = best_j; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    for (int k = best_i; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    alive[count++] = slot;
  }
}

/* The DP tables, one entry per subset of operands. */
typedef struct dp_entry {
  tl__labelset all;    /* union of the operands' labels in the subset */
  tl__labelset result; /* the labels the subset's contracted tensor keeps */
  double cost;         /* best cost to contract the subset into one tensor */
  uint32_t left;       /* the split that achieved it (a proper, non-empty subset) */
  uint32_t pad;
} dp_entry;

/* Emit the steps of subset `mask` in post-order; returns its slot. */
static int emit_steps(const dp_entry *table, uint32_t mask, const tl__path_problem *problem,
                      tl__path *out) {
  if ((mask & (mask - 1)) == 0) return __builtin_ctz(mask);
  uint32_t left = table[mask].left;
  int slot_a = emit_steps(table, left, problem, out);
  int slot_b = emit_steps(table, mask ^ left, problem, out);
  int step = out->n_steps++;
  out->pairs[step][0] = slot_a;
  out->pairs[step][1] = slot_b;
  out->result[step] = table[mask].result;
  double size = tl__path_size(problem, table[mask].result);
  if (size > out->largest) out->largest = size;
  return problem->n + step;
}

tl_status tl__path_optimal(const tl__path_problem *problem, tl__path *out) {
  int n = problem->n;
  if (n < 1 || n > TL_EINSUM_OPTIMAL_MAX) {
    return tl__fail(TL_E_INVALID, "einsum: the exact path search takes 1..%d operands, not %d",
                    TL_EINSUM_OPTIMAL_MAX, n);
  }
  uint32_t full = (1u << n) - 1u;
  dp_entry *table = tl__alloc(sizeof(dp_entry) * ((size_t)full + 1), 64);
  if (table == NULL) {
    return tl__fail(TL_E_NOMEM, "einsum: %zu bytes for the exact path search",
                    sizeof(dp_entry) * ((size_t)full + 1));
  }
  memset(&table[0].all, 0, sizeof table[0].all);
  for (uint32_t mask = 1; mask <= full; mask++) {
    int low = __builtin_ctz(mask);
    table[mask].all = tl__labelset_or(table[mask & (mask - 1)].all, problem->sets[low]);
  }
  for (uint32_t mask = 1; mask <= full; mask++) {
    tl__labelset outside = tl__labelset_or(table[full ^ mask].all, problem->output);
    table[mask].result = tl__labelset_and(table[mask].all, outside);
    table[mask].left = 0;
    if ((mask & (mask - 1)) == 0) {
      table[mask].cost = 0.0;
      continue;
    }
    /* Splits whose left part holds the lowest operand: each unordered split once. Subsets
     * are visited in increasing order, so both parts are already solved. */
    uint32_t lowest = mask & (~mask + 1u);
    uint32_t rest = mask ^ lowest;
    double best = -1.0;
    uint32_t best_left = 0;
    for (uint32_t sub = rest;; sub = (sub - 1) & rest) {
      uint32_t left = sub | lowest;
      if (left != mask) {
        uint32_t right = mask ^ left;
        double cost = table[left].cost + table[right].cost +
                      tl__path_step_flops(problem, table[left].result, table[right].result);
        if (best < 0.0 || cost < best) {
          best = cost;
          best_left = left;
        }
      }
      if (sub == 0) break;
    }
    table[mask].cost = best;
    table[mask].left = best_left;
  }
  out->n_steps = 0;
  out->largest = 0.0;
  out->flops = table[full].cost;
  emit_steps(table, full, problem, out);
  tl__free(table);
  return TL_OK;
}

tl_status tl__path_from_linear(const tl__path_problem *problem, const int *linear, int steps,
                               tl__path *out) {
  int n = problem->n;
  if (steps != n - 1 || (steps > 0 && linear == NULL)) {
    return tl__fail(TL_E_INVALID,
                    "einsum path: %d step%s given (path %p) but %d operands need %d pairwise "
                    "steps",
                    steps, steps == 1 ? "" : "s", (const void *)linear, n, n - 1);
  }
  tl__labelset sets[2 * TL_EINSUM_MAX_OPERANDS];
  int alive[TL_EINSUM_MAX_OPERANDS];
  int count = path_begin(problem, sets, alive, out);
  for (int step = 0; step < steps; step++) {
    int i = linear[2 * step], j = linear[2 * step + 1];
    if (i < 0 || j < 0 || i >= count || j >= count || i == j) {
      return tl__fail(TL_E_INVALID,
                      "einsum path step %d is (%d, %d): expected two different positions in "
                      "0..%d (the %d tensors left before it)",
                      step, i, j, count - 1, count);
    }
    if (i > j) {
      int swap = i;
      i = j;
      j = swap;
    }
    tl__labelset a = sets[alive[i]], b = sets[alive[j]];
    tl__labelset need = needed_elsewhere(sets, alive, count, i, j, problem->output);
    tl__labelset result = tl__labelset_and(tl__labelset_or(a, b), need);
    int slot = n + step;
    out->pairs[step][0] = alive[linear[2 * step]];
    out->pairs[step][1] = alive[linear[2 * step + 1]];
    out->result[step] = result;
    out->flops += tl__path_step_flops(problem, a, b);
    double size = tl__path_size(problem, result);
    if (size > out->largest) out->largest = size;
    out->n_steps++;
    sets[slot] = result;
    for (int k = j; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    for (int k = i; k + 1 < count; k++) alive[k] = alive[k + 1];
    count--;
    alive[count++] = slot;
  }
  return TL_OK;
}
