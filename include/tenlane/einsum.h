/* tenlane/einsum.h: N-ary Einstein summation over tl_tensor, in numpy's grammar.
 *
 * A spec names each operand's axes with one letter per axis ("ij,jk->ik"): a label that
 * appears in the output stays, every other label is summed. A label repeated inside one
 * operand takes that operand's diagonal ("ii->i", and "ii->" is the trace). Without "->"
 * the output is every label that appears exactly once, in alphabetical order (upper case
 * before lower case). "..." stands for the leading broadcast axes, aligned from the right
 * as in numpy; only those may broadcast an extent of 1. Spaces are ignored.
 *
 * Beyond the 52 letters, a label may be an integer written in braces: "{0}{1},{1}{2}->{0}{2}"
 * is "ij,jk->ik" (numpy's sublist form, einsum(a, [0, 1], b, [1, 2], [0, 2]), written as
 * text). Up to 140 distinct integers per spec, each of at most 10 digits, mixed freely
 * with letters; the implicit output lists the letters once-used, then the integers used
 * once in increasing value (numpy's order).
 *
 * Execution: each operand is first reduced on its own (diagonals become strided views,
 * labels no other operand or the output needs are summed), then the operands are
 * contracted two at a time (tl_contract) in the order of a contraction path chosen to
 * minimise floating-point operations: exact (dynamic programming over operand subsets)
 * for up to TL_EINSUM_OPTIMAL_MAX operands, greedy beyond. The path and the scratch
 * layout are cached on the surface under (spec, shapes, strides, dtype), and every
 * intermediate lives in the surface's scratch arena, so a repeated einsum_into with the
 * same key makes no heap allocation.
 *
 * All operands and the output share one dtype. Costs are counted as 2 * (product of the
 * extents of every label of the two operands) per pairwise step, whatever the dtype. */
#ifndef TENLANE_EINSUM_H
#define TENLANE_EINSUM_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/session.h"
#include "tenlane/status.h"
#include "tenlane/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most operands one einsum takes. */
#define TL_EINSUM_MAX_OPERANDS 32
/* Most operands the exact path search accepts (TL_EINSUM_PATH_OPTIMAL beyond it is
 * TL_E_INVALID); TL_EINSUM_PATH_AUTO uses it up to TL_EINSUM_AUTO_OPTIMAL_MAX. */
#define TL_EINSUM_OPTIMAL_MAX 12
#define TL_EINSUM_AUTO_OPTIMAL_MAX 8
/* Longest spec accepted, in bytes. */
#define TL_EINSUM_SPEC_MAX 4096

typedef enum tl_einsum_path_kind {
  TL_EINSUM_PATH_AUTO = 0,    /* exact up to TL_EINSUM_AUTO_OPTIMAL_MAX operands, else greedy */
  TL_EINSUM_PATH_GREEDY = 1,  /* pick the pair that shrinks memory most, ties by cost */
  TL_EINSUM_PATH_OPTIMAL = 2, /* exact minimum cost over all pairwise orders */
  TL_EINSUM_PATH_GIVEN = 3    /* the caller's path: tl_einsum_with_path(_into), or options */
} tl_einsum_path_kind;

/* The memory layout of a fresh result (tl_einsum_ex). Into forms write the caller's out in
 * whatever strides it has. */
typedef enum tl_einsum_layout {
  TL_EINSUM_LAYOUT_ORDER = 0, /* dense in the surface's order (tl_exec_set_order) */
  /* Dense, in the order the last step writes without moving anything (numpy's order='K'):
   * the labels of the last step's first input outermost, in the order that input holds
   * them in memory, then the second input's other labels, in its memory order (numpy's
   * tensordot layout; a single-operand spec: the operand's order). A last step that sums
   * no label (a Hadamard, outer or broadcast product) is laid out as numpy's einsum lays
   * it out: from C order, a label goes denser than another when every input holding both
   * holds it denser. A product of two C-ordered matrices is C-ordered; "ij,ij->ji" comes
   * out in the inputs' layout, as a transposed view would. */
  TL_EINSUM_LAYOUT_KEEP = 1
} tl_einsum_layout;

/* out = einsum(spec, operands[0..n_operands-1]) into a caller tensor whose shape must be
 * the spec's output shape and whose dtype the operands'. out must not overlap any operand
 * (TL_E_ALIAS) nor map two indices to one element (TL_E_ALIAS). Borrows everything; owns
 * nothing after the call. Surface's thread only.
 * Errors (nothing written): TL_E_INVALID (NULL exec/spec/operands/out, n_operands outside
 * [1, TL_EINSUM_MAX_OPERANDS], a malformed spec: unknown character, misplaced '.', '-' or
 * '>', a term count that differs from n_operands, an output label that no input has or
 * that repeats; the message gives the position in the spec), TL_E_SHAPE (a term's label
 * count differs from its operand's rank, one label with two extents, out of the wrong
 * shape), TL_E_DTYPE (mixed dtypes), TL_E_ALIAS, TL_E_UNAVAILABLE (a team wider than one
 * was asked for where one thread runs), TL_E_CANCELLED (the lane's run was cancelled
 * before the output was written), TL_E_SCRATCH_LIMIT, TL_E_NOMEM, and any status the
 * binary contraction returns. */
TL_API tl_status tl_einsum_into(tl_exec *exec, const char *spec, int n_operands,
                                const tl_tensor *const *operands, tl_tensor *out);

/* Options of tl_einsum_ex_into. Fill with tl_einsum_options_init, then change fields: the
 * init sets `size`, which lets the struct grow without breaking a caller built against an
 * older header. */
typedef struct tl_einsum_options {
  size_t size;                   /* sizeof(tl_einsum_options), set by tl_einsum_options_init */
  tl_einsum_path_kind path_kind; /* TL_EINSUM_PATH_AUTO by default */
  /* Fields below were added later, past the first version's size (its padding included): a
   * caller built against an older header passes that smaller size, and they take their
   * defaults. */
  const int *path;         /* with path_kind TL_EINSUM_PATH_GIVEN: the path, in the format of */
  int n_steps;             /* tl_einsum_with_path_into (path borrowed for the call) */
  tl_einsum_layout layout; /* of a fresh result (tl_einsum_ex); TL_EINSUM_LAYOUT_ORDER */
} tl_einsum_options;

/* Fill `options` with the defaults (the path kind TL_EINSUM_PATH_AUTO, the layout
 * TL_EINSUM_LAYOUT_ORDER, no path) and set its size. NULL is ignored. Any thread. */
TL_API void tl_einsum_options_init(tl_einsum_options *options);

/* tl_einsum_into with options (NULL = the defaults; borrowed for the call; the layout is
 * ignored, out's strides rule). TL_E_INVALID also for options->size below the first
 * version's size (options not filled by tl_einsum_options_init), an unknown path kind or
 * layout, TL_EINSUM_PATH_OPTIMAL with more than TL_EINSUM_OPTIMAL_MAX operands, and
 * TL_EINSUM_PATH_GIVEN from options too old to hold a path, or with a path that is not one
 * (as tl_einsum_with_path_into). */
TL_API tl_status tl_einsum_ex_into(tl_exec *exec, const tl_einsum_options *options,
                                   const char *spec, int n_operands,
                                   const tl_tensor *const *operands, tl_tensor *out);

/* Fresh form of tl_einsum_ex_into: *out becomes a new owned tensor in options->layout
 * (release it with tl_tensor_release); on failure *out is untouched. With
 * TL_EINSUM_LAYOUT_KEEP a result whose requested axis order differs from the order the
 * operands give it is not permuted (which can cost more than the contraction itself, as
 * for a result whose axes come out reversed), and out->strides say where each axis lies. Errors as
 * tl_einsum_ex_into, less the ones about out's shape and aliasing. Surface's thread only. */
TL_API tl_status tl_einsum_ex(tl_exec *exec, const tl_einsum_options *options, const char *spec,
                              int n_operands, const tl_tensor *const *operands, tl_tensor *out);

/* The same along the contraction path the caller gives (from opt_einsum, cotengra, or by
 * hand), in opt_einsum's linear format: before step k the tensors left form a list (the
 * operands first); path[2k] and path[2k + 1] are the positions in that list of the two
 * tensors step k contracts; both leave the list and the result is appended to its end.
 * n_steps must be n_operands - 1. The plan, path included, is cached like any other
 * (the path is part of the key), so a whole network is one planned-once call. Borrows
 * path for the call. Surface's thread only.
 * Errors: those of tl_einsum_into, and TL_E_INVALID for a path that is not one: a NULL path
 * with steps, a step count other than n_operands - 1, a position outside the list or a
 * step naming one tensor twice (the message names the step and the list's length). */
TL_API tl_status tl_einsum_with_path_into(tl_exec *exec, int n_steps, const int *path,
                                          const char *spec, int n_operands,
                                          const tl_tensor *const *operands, tl_tensor *out);

/* Fresh form of tl_einsum_with_path_into (as tl_einsum is of tl_einsum_into). */
TL_API tl_status tl_einsum_with_path(tl_exec *exec, int n_steps, const int *path, const char *spec,
                                     int n_operands, const tl_tensor *const *operands,
                                     tl_tensor *out);

/* Fresh form: *out becomes a new owned tensor (in the surface's order) holding the result (release
 * it with tl_tensor_release). On failure *out is untouched. Errors as tl_einsum_into, less the ones
 * about out's shape and aliasing. */
TL_API tl_status tl_einsum(tl_exec *exec, const char *spec, int n_operands,
                           const tl_tensor *const *operands, tl_tensor *out);

/* A contraction path, as tl_einsum_path reports it. Slots 0..n_operands-1 are the
 * operands; step k contracts slots pairs[k][0] and pairs[k][1] into slot n_operands + k. */
typedef struct tl_einsum_path_info {
  int n_operands;
  int n_steps; /* n_operands - 1 (0 for a single operand) */
  int pairs[TL_EINSUM_MAX_OPERANDS][2];
  double flops;                /* cost of the chosen path */
  double greedy_flops;         /* cost of the greedy path */
  double optimal_flops;        /* cost of the exact path, or -1 when it was not searched */
  double largest_intermediate; /* elements of the largest intermediate on the chosen path */
  tl_einsum_path_kind chosen;  /* TL_EINSUM_PATH_GREEDY, _OPTIMAL (or _GIVEN) */
} tl_einsum_path_info;

/* Plan the contraction path for spec over operands of the given ranks and shapes
 * (shapes[i] holds ranks[i] extents) without data or a surface. Fills *out (its pairs are
 * slot numbers, not opt_einsum's linear positions). TL_E_INVALID for TL_EINSUM_PATH_GIVEN.
 * Allocates only through the allocator hooks and frees before returning. Any thread. Errors: those
 * of tl_einsum_into about the spec and shapes, and TL_E_NOMEM. */
TL_API tl_status tl_einsum_path(tl_einsum_path_kind kind, const char *spec, int n_operands,
                                const int *ranks, const int64_t *const *shapes,
                                tl_einsum_path_info *out);

/* The rank and shape of the output of spec over operands of the given ranks and shapes
 * (shapes[i] holds ranks[i] extents), as tl_einsum would make it, without data or a
 * surface: the library's own parser and rules (implicit output, "...", integer labels,
 * broadcasting of extent-1 "..." axes). *out_rank gets the rank and out_shape[0 .. rank-1]
 * the extents; out_shape must hold TL_MAX_RANK entries. For a binding or a caller that
 * allocates the output itself before tl_einsum_into. Borrows every argument for the call;
 * allocates only through the allocator hooks and frees before returning. Any thread.
 * Dtypes are not asked about: the caller checks that the operands share one.
 * Errors (nothing written; the message names the values): TL_E_INVALID (NULL spec, ranks,
 * shapes, out_rank or out_shape, n_operands outside [1, TL_EINSUM_MAX_OPERANDS], a rank
 * outside [0, TL_MAX_RANK] or a positive rank with a NULL shape, a malformed spec as
 * tl_einsum_into says it), TL_E_SHAPE (a term's label count differs from its operand's
 * rank, one label with two extents, a negative extent), TL_E_NOMEM. */
TL_API tl_status tl_einsum_shape(const char *spec, int n_operands, const int *ranks,
                                 const int64_t *const *shapes, int *out_rank, int64_t *out_shape);

#ifdef __cplusplus
}
#endif
#endif
