/* tenlane/ops.h: the core numerical routes on tl_tensor: elementwise, permute, reshape,
 * reduce, binary contraction and GEMM.
 *
 * Every route takes the surface it runs on first (a session's, a lane's or a ticket
 * entry's tl_exec): from a root surface it splits its work over the context's pool, from
 * a child surface it runs on the calling thread. Conventions shared by all routes:
 *   - `_into` forms write into a caller tensor whose shape and dtype must already fit;
 *     the plain forms create a fresh owned output in *out, contiguous from offset 0,
 *     column-major unless tl_exec_set_order chose row-major (release it with
 *     tl_tensor_release). A failing call writes nothing: *out is untouched and no element
 *     of an `_into` output changed.
 *   - An `_into` output that overlaps an input is TL_E_ALIAS (except where a route says
 *     it updates in place), and an output that maps two indices to one element (a zero
 *     stride) is TL_E_ALIAS too.
 *   - All operands of a route share one dtype (TL_E_DTYPE otherwise), except where noted
 *     (abs and norms of complex values are real).
 *   - Bad input is a typed status (TL_E_INVALID, TL_E_SHAPE, TL_E_DTYPE, TL_E_ALIAS) with
 *     a message naming the argument and values (tl_exec_message / tl_last_message).
 *   - TL_E_UNAVAILABLE when tl_exec_set_team asked for more than one thread on a surface
 *     that runs on one; TL_E_CANCELLED when the lane's run was cancelled (output then
 *     unspecified for long `_into` calls: cancellation is checked between blocks);
 *     TL_E_SCRATCH_LIMIT / TL_E_NOMEM when scratch runs out.
 * Temporaries come from the surface's scratch arena: a repeated call with the same
 * shapes makes no heap allocation. Surface's thread only. */
#ifndef TENLANE_OPS_H
#define TENLANE_OPS_H

#include <stdint.h>

#include "tenlane/export.h"
#include "tenlane/session.h"
#include "tenlane/status.h"
#include "tenlane/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Elementwise ----------------------------------------------------------------------
 * Broadcasting: an input axis of extent 1 stretches to the output's extent, and an input
 * of lower rank is padded with trailing extent-1 axes (column-major convention, as in
 * Julia). The fresh form's output extent on each axis is the larger of the inputs'. */

typedef enum tl_binary_op {
  TL_OP_ADD = 0,
  TL_OP_SUB = 1,
  TL_OP_MUL = 2,
  TL_OP_DIV = 3
} tl_binary_op;

TL_API tl_status tl_binary_into(tl_exec *exec, tl_binary_op op, const tl_tensor *a,
                                const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_binary(tl_exec *exec, tl_binary_op op, const tl_tensor *a, const tl_tensor *b,
                           tl_tensor *out);

TL_API tl_status tl_add_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_sub_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_mul_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_div_into(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_add(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_sub(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_mul(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);
TL_API tl_status tl_div(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);

typedef enum tl_unary_op {
  TL_OP_NEG = 0,
  TL_OP_CONJ = 1, /* identity for real dtypes */
  TL_OP_ABS = 2,  /* complex input gives the real dtype of its precision */
  TL_OP_EXP = 3,
  TL_OP_LOG = 4,  /* principal branch for complex; real log of x < 0 is NaN */
  TL_OP_SQRT = 5, /* principal branch for complex; real sqrt of x < 0 is NaN */
  TL_OP_COPY = 6
} tl_unary_op;

TL_API tl_status tl_unary_into(tl_exec *exec, tl_unary_op op, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_unary(tl_exec *exec, tl_unary_op op, const tl_tensor *x, tl_tensor *out);

TL_API tl_status tl_neg_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_conj_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_abs_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_exp_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_log_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_sqrt_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_neg(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_conj(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_abs(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_exp(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_log(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_sqrt(tl_exec *exec, const tl_tensor *x, tl_tensor *out);

/* Copy x into out of the same shape (any strides; x may broadcast). */
TL_API tl_status tl_copy_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
/* Set every element of out to value (a real dtype takes value.im == 0, else TL_E_DTYPE). */
TL_API tl_status tl_fill_into(tl_exec *exec, tl_scalar value, tl_tensor *out);
/* out (a matrix, m x n, any strides) = the identity: 1 where i == j, 0 elsewhere.
 * TL_E_SHAPE for a rank other than 2. */
TL_API tl_status tl_identity_into(tl_exec *exec, tl_tensor *out);
/* out = random values, uniform on [-1, 1) (complex dtypes: real and imaginary parts drawn
 * independently). The values depend only on seed, out's shape and dtype: element i (its
 * column-major position) is the same whatever out's strides, the surface or its team, so
 * a seed reproduces a tensor everywhere. Not for cryptography. Runs on the calling thread. */
TL_API tl_status tl_random_into(tl_exec *exec, uint64_t seed, tl_tensor *out);

/* Convert x's elements to out's dtype (out of x's shape; x may broadcast). Real to complex
 * sets the imaginary part to 0; complex to real keeps the real part (numpy's astype);
 * f64 to f32 rounds to nearest. Same dtype is a copy. */
TL_API tl_status tl_convert_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);
/* Fresh form: *out becomes a new tensor of `dtype` and x's shape. TL_E_DTYPE for an
 * unknown dtype. */
TL_API tl_status tl_convert(tl_exec *exec, tl_dtype dtype, const tl_tensor *x, tl_tensor *out);

/* out = alpha * x (x may broadcast into out). */
TL_API tl_status tl_scale_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_tensor *out);
TL_API tl_status tl_scale(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_tensor *out);
/* y = alpha * x + beta * y, in place on y (BLAS axpby). x may broadcast into y; x must
 * not overlap y (TL_E_ALIAS). beta = 0 does not read y (NaNs in y do not propagate). */
TL_API tl_status tl_axpby(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_scalar beta,
                          tl_tensor *y);
/* out = alpha * x + beta * y. */
TL_API tl_status tl_axpby_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *x, tl_scalar beta,
                               const tl_tensor *y, tl_tensor *out);

/* ---- Permute and reshape ------------------------------------------------------------- */

/* out axis k = x axis perm[k]: out's shape must be x's shape permuted. Cache-blocked. */
TL_API tl_status tl_permute_into(tl_exec *exec, const tl_tensor *x, const int *perm,
                                 tl_tensor *out);
TL_API tl_status tl_permute(tl_exec *exec, const tl_tensor *x, const int *perm, tl_tensor *out);

/* x with a new shape (same element count, column-major element order). *out is a view of
 * x (out->owned NULL) when x's strides allow, else a fresh owned copy. */
TL_API tl_status tl_reshape(tl_exec *exec, int rank, const int64_t *shape, const tl_tensor *x,
                            tl_tensor *out);
/* Copy x's elements, in column-major order, into out (same element count, any shape). */
TL_API tl_status tl_reshape_into(tl_exec *exec, const tl_tensor *x, tl_tensor *out);

/* ---- Reduce -------------------------------------------------------------------------- */

typedef enum tl_reduce_op {
  TL_REDUCE_SUM = 0,
  TL_REDUCE_PROD = 1,
  TL_REDUCE_MAX = 2,  /* real dtypes only */
  TL_REDUCE_MIN = 3,  /* real dtypes only */
  TL_REDUCE_NORM2 = 4 /* sqrt(sum |x|^2); complex input gives the real dtype */
} tl_reduce_op;

/* Reduce x over the `axis_count` distinct axes in `axes`. out either drops those axes
 * (rank - axis_count) or keeps them with extent 1 (same rank). Reducing over an empty
 * axis gives the identity (0, 1, -inf, +inf, 0). Sums accumulate in double; along a
 * contiguous run, f32 and c64 values reach those sums through float partials of at most
 * sixteen values each, so their error stays near the double sums' (and values near
 * FLT_MAX may overflow a partial, as they overflow a float result). */
TL_API tl_status tl_reduce_into(tl_exec *exec, tl_reduce_op op, const tl_tensor *x, int axis_count,
                                const int *axes, tl_tensor *out);
/* Fresh form: out drops the reduced axes. */
TL_API tl_status tl_reduce(tl_exec *exec, tl_reduce_op op, const tl_tensor *x, int axis_count,
                           const int *axes, tl_tensor *out);

/* ---- Contraction and GEMM ------------------------------------------------------------ */

/* Labels are small non-negative ints (< 256). A label in a, b and c is a batch axis; in a
 * and b only, contracted; in one input and c, free. Each label at most once per operand
 * (einsum handles traces/diagonals itself); a label only in one input and not in c is
 * TL_E_INVALID (sum it first). c = contraction of a and b (c's old contents ignored).
 * Operands are permuted into GEMM form only when their strides do not already fit. */
TL_API tl_status tl_contract_into(tl_exec *exec, const int *c_labels, const tl_tensor *a,
                                  const int *a_labels, const tl_tensor *b, const int *b_labels,
                                  tl_tensor *c);
/* Fresh form: the result's labels (c_rank of them) say what to make. */
TL_API tl_status tl_contract(tl_exec *exec, int c_rank, const int *c_labels, const tl_tensor *a,
                             const int *a_labels, const tl_tensor *b, const int *b_labels,
                             tl_tensor *out);
/* The same with c = alpha * contraction + beta * c (beta 0: c not read). */
TL_API tl_status tl_contract_scaled_into(tl_exec *exec, tl_scalar alpha, tl_scalar beta,
                                         const int *c_labels, const tl_tensor *a,
                                         const int *a_labels, const tl_tensor *b,
                                         const int *b_labels, tl_tensor *c);

/* c = alpha * a * b + beta * c for rank-2 a (m x k), b (k x n), c (m x n), any strides
 * (pass a tl_tensor_transpose_view for a transpose). beta 0: c not read. A complex product
 * with m n k > 80^3 on a CPU with AVX-512F takes packing scratch of at most 8.1 MiB per
 * thread that may run a block of it (the calling thread, and each pool worker when the
 * call splits), reused by later calls. */
TL_API tl_status tl_gemm_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *a,
                              const tl_tensor *b, tl_scalar beta, tl_tensor *c);
/* Fresh c = a * b. */
TL_API tl_status tl_gemm(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out);

/* Which provider the library picked at first use, and the instruction-set level, for
 * benchmarks and logs: e.g. "blis:skx(1m)+tl-complex isa:avx512", "reference isa:avx2", or
 * "openblas:Haswell+lock+tl-complex isa:avx512" ("+lock": calls into that OpenBLAS build
 * are serialized, lanes take it one at a time). Static storage, never NULL; any thread. */
TL_API const char *tl_kernels_provider(void);

#ifdef __cplusplus
}
#endif
#endif
