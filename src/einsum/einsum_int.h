/* src/einsum/einsum_int.h: what the einsum module's files share, and nothing else sees.
 *
 * The pipeline: parse (spec text -> label lists, bound to the operands' ranks), plan
 * (labels + extents -> per-operand preparation, a contraction path, a scratch layout),
 * execute (views, preparation, pairwise contractions into the output). The invariant the
 * plan keeps: after preparation every operand holds each label at most once and only
 * labels that another operand or the output still needs, so every pairwise step is a
 * plain batch/contract/free contraction as tl_contract defines it. */
#ifndef TL_EINSUM_INT_H
#define TL_EINSUM_INT_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/einsum.h"
#include "tenlane/tensor.h"

/* Label ids: 'A'..'Z' are 0..25 and 'a'..'z' 26..51, so id order is character order (the
 * implicit output's order); broadcast ("...") axis k is 52 + k; the integer labels of a
 * sublist spec ("{7}") take the ids after those, in order of first appearance. */
#define TL__EINSUM_LETTERS 52
#define TL__EINSUM_INTEGER_BASE (TL__EINSUM_LETTERS + TL_MAX_RANK)
#define TL__EINSUM_LABELS 256
#define TL__EINSUM_INTEGER_MAX (TL__EINSUM_LABELS - TL__EINSUM_INTEGER_BASE)
#define TL__LABELSET_WORDS (TL__EINSUM_LABELS / 64)

/* A set of label ids. */
typedef struct tl__labelset {
  uint64_t word[TL__LABELSET_WORDS];
} tl__labelset;

static inline void tl__labelset_add(tl__labelset *set, int label) {
  set->word[label >> 6] |= (uint64_t)1 << (label & 63);
}
static inline int tl__labelset_has(tl__labelset set, int label) {
  return (int)((set.word[label >> 6] >> (label & 63)) & 1u);
}
static inline tl__labelset tl__labelset_or(tl__labelset a, tl__labelset b) {
  tl__labelset r;
  for (int w = 0; w < TL__LABELSET_WORDS; w++) r.word[w] = a.word[w] | b.word[w];
  return r;
}
static inline tl__labelset tl__labelset_and(tl__labelset a, tl__labelset b) {
  tl__labelset r;
  for (int w = 0; w < TL__LABELSET_WORDS; w++) r.word[w] = a.word[w] & b.word[w];
  return r;
}
static inline int tl__labelset_empty(tl__labelset a) {
  uint64_t any = 0;
  for (int w = 0; w < TL__LABELSET_WORDS; w++) any |= a.word[w];
  return any == 0;
}

/* One term of a spec, bound to its operand: `count` labels, one per axis. */
typedef struct tl__einsum_term {
  int count;
  int labels[TL_MAX_RANK];
  int positions[TL_MAX_RANK]; /* byte offset in the spec of each label (of "..." for its axes) */
  int has_ellipsis;
} tl__einsum_term;

typedef struct tl__einsum_spec {
  int n_inputs;
  int n_integers;                                   /* distinct "{N}" labels */
  long long integer_values[TL__EINSUM_INTEGER_MAX]; /* N of label id INTEGER_BASE + k */
  int broadcast_rank; /* axes "..." stands for (the widest operand's) */
  int explicit_output;
  tl__einsum_term inputs[TL_EINSUM_MAX_OPERANDS];
  tl__einsum_term output;
} tl__einsum_spec;

/* Parse `spec` for n_operands operands of the given ranks into *out. Errors (message on
 * the thread, with the spec and the byte position): TL_E_INVALID, TL_E_SHAPE (a term's
 * axis count differs from its operand's rank). */
tl_status tl__einsum_parse(const char *spec, int n_operands, const int *ranks,
                           tl__einsum_spec *out);

/* Each label's extent from the operands' shapes (shapes[i] holds the extents of input
 * term i's axes), into extent[TL__EINSUM_LABELS] (-1 for a label no input has). A "..."
 * axis of extent 1 takes the extent another operand gives it (broadcasting). TL_E_SHAPE,
 * with a message naming the label, both extents and where each came from, when one label
 * has two extents, or for a negative extent. */
tl_status tl__einsum_bind_extents(const char *spec, const tl__einsum_spec *parsed,
                                  const int64_t *const *shapes, int64_t *extent);

/* A label's printable name for messages: "i", "B", "...[0]", "{17}" (parsed gives the
 * integer labels' values; NULL prints their ids). buf holds 32 bytes. */
const char *tl__einsum_label_name(int label, const tl__einsum_spec *parsed, char *buf);

/* 1 for a label that "..." stands for (only those broadcast an extent of 1). */
static inline int tl__einsum_is_broadcast(int label) {
  return label >= TL__EINSUM_LETTERS && label < TL__EINSUM_INTEGER_BASE;
}

/* ---- Path search ------------------------------------------------------------------- */

/* The path problem: after preparation, operand i holds `sets[i]`; `output` is the
 * output's label set; extents of every label in `extent`. */
typedef struct tl__path_problem {
  int n;
  tl__labelset sets[TL_EINSUM_MAX_OPERANDS];
  tl__labelset output;
  const int64_t *extent; /* TL__EINSUM_LABELS entries */
} tl__path_problem;

typedef struct tl__path {
  int n_steps;
  int pairs[TL_EINSUM_MAX_OPERANDS][2];        /* slot numbering as tl_einsum_path_info */
  tl__labelset result[TL_EINSUM_MAX_OPERANDS]; /* label set of each step's result */
  double flops;
  double largest; /* elements of the largest intermediate */
} tl__path;

/* Cost of contracting operands with sets a and b: 2 * product of extents over a | b. */
double tl__path_step_flops(const tl__path_problem *problem, tl__labelset a, tl__labelset b);
/* Elements of a tensor with label set s. */
double tl__path_size(const tl__path_problem *problem, tl__labelset s);

/* Greedy path. Never fails. */
void tl__path_greedy(const tl__path_problem *problem, tl__path *out);
/* Exact path (n <= TL_EINSUM_OPTIMAL_MAX). Its tables take (1 << n) * 48 bytes from the
 * allocator hooks. Errors: TL_E_INVALID (n too large), TL_E_NOMEM. */
tl_status tl__path_optimal(const tl__path_problem *problem, tl__path *out);

/* The path the caller gave in opt_einsum's linear format (steps pairs of positions in the
 * list of tensors left; both leave it, the result is appended). Errors: TL_E_INVALID, the
 * message naming the step (a wrong step count, a position outside the list, a repeat). */
tl_status tl__path_from_linear(const tl__path_problem *problem, const int *linear, int steps,
                               tl__path *out);

/* ---- Plan ------------------------------------------------------------------------ */

/* How one operand is prepared. The operand's axes map onto `unique` axes (a repeated
 * label's axes merge into one diagonal axis whose stride is the sum of theirs; a
 * broadcast axis of extent 1 that the label has wider elsewhere is dropped). If `sum`
 * is set, the labels in `kept` survive and the rest are summed into scratch; else the
 * diagonal view itself is the prepared operand. */
typedef struct tl__einsum_prep {
  int rank;                        /* the operand's rank */
  int axis_to_unique[TL_MAX_RANK]; /* -1: dropped */
  int n_unique;
  int unique_labels[TL_MAX_RANK];
  int sum;
  int n_kept;
  int kept_labels[TL_MAX_RANK];
  /* kept_labels in the order the slot holds them in memory, densest first: the operand's
   * strides (a merged diagonal's added up), or kept_labels itself for a summed operand (its
   * scratch is column-major in that order) and when the plan was built without strides */
  int memory_order[TL_MAX_RANK];
  size_t scratch_offset; /* of the summed buffer, when sum */
} tl__einsum_prep;

typedef struct tl__einsum_plan {
  tl_dtype dtype;
  int n_inputs;
  int out_rank;
  int out_labels[TL_MAX_RANK];
  int64_t out_shape[TL_MAX_RANK];
  int64_t extent[TL__EINSUM_LABELS];
  tl__einsum_prep prep[TL_EINSUM_MAX_OPERANDS];
  tl__path path;
  tl_einsum_path_kind chosen;
  double greedy_flops, optimal_flops;
  /* Each step's result labels (in axis order) and, except the last, its scratch offset. */
  int step_rank[TL_EINSUM_MAX_OPERANDS];
  int step_labels[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  size_t step_offset[TL_EINSUM_MAX_OPERANDS];
  size_t scratch_bytes; /* everything preparation and intermediates need, 64-aligned parts */
} tl__einsum_plan;

/* Build a plan for the parsed spec (along `linear` when kind is TL_EINSUM_PATH_GIVEN) over operands
 * with the given shapes (the dtype is recorded). strides (NULL: unknown) are the operands' own:
 * each intermediate then takes its axes in the order the operands hold them in memory, so that the
 * next step finds its axes contiguous (no permuted copy) for C-ordered operands as for column-major
 * ones. Errors: TL_E_SHAPE (extent mismatch; an intermediate of more than TL_MAX_RANK axes),
 * TL_E_INVALID (path kind), TL_E_NOMEM. *out fully written on success. */
tl_status tl__einsum_plan_build(const char *spec, const tl__einsum_spec *parsed,
                                const int64_t *const *shapes, const int64_t *const *strides,
                                tl_dtype dtype, tl_einsum_path_kind kind, const int *linear,
                                int linear_steps, tl__einsum_plan *out);

/* strides[0..out_rank) (elements) of the dense fresh result in TL_EINSUM_LAYOUT_KEEP
 * (einsum.h) for the plan's output axes. Never fails. */
void tl__einsum_keep_strides(const tl__einsum_plan *plan, int64_t *strides);

/* ---- Fold (fold.c) ------------------------------------------------------------------ */

/* out = in summed over every axis k with in_to_out[k] < 0, axis k landing on output axis
 * in_to_out[k] otherwise (each output axis from exactly one input axis of the same extent).
 * Same dtype; out validated and not overlapping in. Writes each element once; never fails. */
void tl__einsum_fold(const tl_tensor *in, const int *in_to_out, const tl_tensor *out);

/* ---- Direct routes (direct.c) ------------------------------------------------------- */

/* Elements below which a one-operand step stays on the fold. */
#define TL__EINSUM_DIRECT_MIN 4096

struct tl_exec;
/* 1 when every label of a and b is kept by the step's result: no summation. */
int tl__einsum_step_sums_nothing(const int *a_labels, int a_rank, const int *b_labels, int b_rank,
                                 const int *out_labels, int out_rank);
/* out = a * b elementwise over out's labels (a step that sums nothing), on `team` threads.
 * Errors: TL_E_CANCELLED. */
tl_status tl__einsum_product(struct tl_exec *exec, int team, const tl_tensor *a,
                             const int *a_labels, const tl_tensor *b, const int *b_labels,
                             const tl_tensor *out, const int *out_labels);
/* out = (a * b) * c, or c * (a * b) when tmp_first is 0, elementwise over out's labels
 * (two steps that sum nothing, the first's result used only by the second), in one pass
 * with the bits of the two steps. TL_E_UNAVAILABLE (nothing written, no message) where an
 * input would be read across its dense axis: run the two steps then. Errors:
 * TL_E_CANCELLED. */
tl_status tl__einsum_product3(struct tl_exec *exec, int team, const tl_tensor *a,
                              const int *a_labels, const tl_tensor *b, const int *b_labels,
                              const tl_tensor *c, const int *c_labels, int tmp_first,
                              const tl_tensor *out, const int *out_labels);
/* How many fused passes tl__einsum_product3 has run in this process (for tests: a test
 * of the fused route cannot pass without it). Any thread. */
size_t tl__einsum_fused_runs(void);
/* How many products have run as long rows against a repeated short input (direct.c), for
 * tests as above. Any thread. */
size_t tl__einsum_periodic_runs(void);
/* Advise the kernel to back the buffer's whole 2 MiB pages with huge pages (direct.c). */
void tl__advise_huge(void *buffer, size_t bytes);
/* The team a step of `flops` real floating-point operations moving `bytes`, with `parts`
 * independent parts a split can share out (a contraction's or product's output elements, a
 * one-operand step's input elements), should run on: `team` when the split's saving beats
 * its cost, else 1 (threads.c). real_gemm: 1 for a contraction in a real dtype, whose
 * split must save more (see threads.c). */
int tl__einsum_step_team(struct tl_exec *exec, int team, double flops, double bytes, double parts,
                         int real_gemm);
/* The measured cost of one split over `team` threads, in seconds (measured on the first
 * call, then kept), as tl__einsum_step_team weighs it; tests read it. */
double tl__einsum_split_seconds(struct tl_exec *exec, int team);
/* The fold's contract (out = in summed over the axes with in_to_out < 0), through the blocked
 * copy or the reduce route when in is large. Errors: those of tl_copy_into/tl_reduce_into. */
tl_status tl__einsum_fold_route(struct tl_exec *exec, const tl_tensor *in, const int *in_to_out,
                                const tl_tensor *out);

#endif
