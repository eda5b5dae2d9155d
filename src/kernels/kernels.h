/* src/kernels/kernels.h: what the route files of src/kernels/ share, and the pure kernel
 * cores the tests call directly.
 *
 * Layering inside the folder: the *_core / loop / provider files are pure functions of
 * their arguments (no surface, no allocation, no messages); the route files (elementwise.c,
 * permute.c, reduce.c, contract.c, gemm.c) check arguments, take scratch from the surface
 * and split the cores' work over it. Invariant: a core never fails, so once a route has
 * validated its arguments and taken its scratch, nothing can stop it but cancellation. */
#ifndef TL_KERNELS_H
#define TL_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "base/isa.h"
#include "tenlane/ops.h"
#include "tenlane/tensor.h"

/* ---- Strided loops over up to 4 operands ---------------------------------------------
 * A loop plan flattens the operands' common index space: extent-1 axes dropped, the axes
 * ordered by the first operand's (the output's) stride, negative output strides flipped,
 * and axes merged wherever every operand is contiguous across them. Axis 0 is the inner
 * row handed to a row kernel; the rest are walked by an odometer (no division in the
 * inner loop, one division per chunk). Operand 0 is the output. */
#define TL__LOOP_MAX_OPS 4

typedef struct tl__loop {
  int rank; /* axes after merging; 0 = a single element */
  int ops;
  int64_t shape[TL_MAX_RANK];
  int64_t strides[TL__LOOP_MAX_OPS][TL_MAX_RANK]; /* in elements */
  char *base[TL__LOOP_MAX_OPS];                   /* element 0 of each operand */
  int64_t esize[TL__LOOP_MAX_OPS];                /* bytes per element */
  int64_t rows;                                   /* product of shape[1..] */
  int64_t inner;                                  /* shape[0], or 1 */
} tl__loop;

/* A row kernel: n elements, operand pointers p[0..ops-1] and their element strides. */
typedef void (*tl__row_fn)(int64_t n, char *const *p, const int64_t *s, const void *params);

/* Build a plan over `ops` tensors whose shapes are all out's shape (inputs already
 * broadcast, e.g. with stride 0). Never fails for validated tensors. */
void tl__loop_plan(tl__loop *loop, int ops, const tl_tensor *const *tensors);
/* Run rows [row_begin, row_end) of the plan on the calling thread. */
void tl__loop_run(const tl__loop *loop, int64_t row_begin, int64_t row_end, tl__row_fn fn,
                  const void *params);

/* Run elements [i0, i1) of row `row` (one call of fn). */
void tl__loop_run_span(const tl__loop *loop, int64_t row, int64_t i0, int64_t i1, tl__row_fn fn,
                       const void *params);

/* ---- Elementwise row kernels (elementwise_core.c) ------------------------------------ */
typedef struct tl__ew_params {
  tl_scalar alpha, beta;
} tl__ew_params;

/* The row kernel for a binary op / unary op / scale / axpby on `dtype`, or NULL. */
tl__row_fn tl__ew_binary_kernel(tl_binary_op op, tl_dtype dtype);
tl__row_fn tl__ew_unary_kernel(tl_unary_op op, tl_dtype dtype);
tl__row_fn tl__ew_scale_kernel(tl_dtype dtype);                /* p0 = alpha * p1 */
tl__row_fn tl__ew_axpby_kernel(tl_dtype dtype, int beta_zero); /* p0 = alpha p1 + beta p2 */
tl__row_fn tl__ew_fill_kernel(tl_dtype dtype);                 /* p0 = alpha */

/* ---- Permute core (permute_core.c) ---------------------------------------------------
 * dst[i] = src[i] over a loop plan of two operands (dst first). When src's fastest axis
 * differs from dst's, the copy is done in cache tiles: a 2-D tile over dst's inner axis
 * and src's inner axis, transposed by a vectorised kernel. */
/* Tiles over axis groups (permute_group.c): D is the destination's contiguous chain from
 * loop axis 0, S the source's from its dense axis; each whole axes plus a range of the last
 * (d_len, s_len elements of it per tile); rows/cols elements per full tile. */
#define TL__PERMUTE_GROUP_COLS 512 /* 2048 bytes of 4-byte elements */
#define TL__PERMUTE_GROUP_ROWS 64  /* 256 bytes of 4-byte elements */
typedef struct tl__permute_group {
  int nd, ns, n_other;
  int d_axes[TL_MAX_RANK], s_axes[TL_MAX_RANK], other_axes[TL_MAX_RANK];
  int64_t d_len, s_len, d_tiles, s_tiles, rows, cols;
  int64_t col_off[TL__PERMUTE_GROUP_COLS]; /* source offset of each D element */
  int64_t row_off[TL__PERMUTE_GROUP_ROWS]; /* destination offset of each S element */
} tl__permute_group;

typedef struct tl__permute_plan {
  tl__loop loop;  /* dst-ordered plan */
  int tiled;      /* 1 when the transpose tile path is used */
  int src_axis;   /* loop axis along which src is fastest (tiled only) */
  int64_t tiles0; /* tiles along loop axis 0 (dst fastest) */
  int64_t tiles1; /* tiles along src_axis */
  int64_t tile0;  /* tile extent along loop axis 0 (elements) */
  int64_t tile1;  /* tile extent along src_axis (elements) */
  int64_t blocks; /* independent work blocks: tiles0 * tiles1 * other rows */
  int stream;     /* 1: streaming (non-temporal) stores for a large aligned output */
  int align64;    /* 1: every destination micro-tile row starts on a 64-byte boundary */
  int grouped;    /* 1: tiles over axis groups (tiled too) */
  tl__permute_group group;
} tl__permute_plan;

void tl__permute_plan_make(tl__permute_plan *plan, const tl_tensor *dst, const tl_tensor *src);
/* Run blocks [begin, end) of the plan. */
void tl__permute_run(const tl__permute_plan *plan, int64_t begin, int64_t end);
/* Elements [i0, i1) of row `row` of an untiled plan (plan->tiled == 0), with the plan's
 * stores (streaming when plan->stream): the pieces a long contiguous copy is cut into. */
void tl__permute_run_span(const tl__permute_plan *plan, int64_t row, int64_t i0, int64_t i1);
/* The instruction set the permute micro-kernels use: the best this CPU has, capped by
 * tl__permute_isa_cap (tests lower the cap to run every kernel on one machine; set it
 * only while no permute runs). */
int tl__permute_isa(void);
extern int tl__permute_isa_cap;
/* A permute tile in bytes: along the destination's dense axis (that many source rows) and
 * along the source's dense axis, the latter for outputs large enough for streaming stores
 * (src_bytes) and for smaller ones (src_bytes_cached). */
typedef struct tl__permute_tiles {
  int64_t dst_bytes, src_bytes, src_bytes_cached;
} tl__permute_tiles;
/* The tile for a CPU: `amd` 1 for an AMD CPU, `family` cpuid's family (base plus extended,
 * so 25 for Zen 3/4, 26 for Zen 5). Pure. */
tl__permute_tiles tl__permute_tiles_for(int amd, int family);
/* This CPU's tile (cpuid, read once), or tl__permute_tiles_forced when its dst_bytes is
 * above 0 (tests run every choice on one machine; set it only while no permute runs). */
tl__permute_tiles tl__permute_tiles_here(void);
extern tl__permute_tiles tl__permute_tiles_forced;
/* The grouped path (permute_group.c), for plan_make and run: set up plan->group and
 * plan->blocks and return 1 when the dense axes are short and a group reaches past one
 * axis, else 0 (plan untouched but for group); run blocks [begin, end) with the kernels
 * of instruction set `isa` (TL__ISA_*). */
int tl__permute_group_plan(tl__permute_plan *plan);
void tl__permute_group_run(const tl__permute_plan *plan, int64_t begin, int64_t end, int isa);
/* Transpose one r x c tile of elements of `esize` bytes: dst(j, i) = src(i, j), where
 * src(i, j) = src + (i + j * ss) * esize and dst(j, i) = dst + (j + i * ds) * esize. */
void tl__transpose_tile(int64_t esize, int64_t r, int64_t c, const char *src, int64_t ss, char *dst,
                        int64_t ds);

/* ---- Products written across an input's dense axis (product_tiles.c) -------------------- */
typedef struct tl__product_tiles {
  tl__loop loop;    /* out, a, b (all of out's shape); axis 0 is out's dense axis */
  int axis;         /* the loop axis along which the across inputs are dense */
  int across[2];    /* per input: 1 dense along `axis`, 0 dense along axis 0 */
  int64_t head;     /* elements of axis 0 before out's first 64-byte boundary: band 0 if > 0 */
  int64_t col_head; /* indices of `axis` before the lead across input's lines: fringe */
  int64_t y_back;   /* > 0: b's rows lie this many units of the kernel's element (4 bytes
                     * for f32, else 8) past the tiles' lines; tiles [y_lo, y_hi) of
                     * `axis` read them as shifted whole lines (product_tiles.c) */
  int64_t y_lo, y_hi;
  int64_t band;   /* elements of axis 0 per band after the head (whole lines: 128 bytes) */
  int64_t bands;  /* bands along axis 0, the head's included */
  int64_t blocks; /* independent work blocks: bands times the other axes' indices */
  tl__row_fn mul; /* the row kernel, for the fringes */
  tl_dtype dtype;
} tl__product_tiles;
/* Plan out = a * b (inputs seen with out's axes, stride 0 where broadcast) as tiles. 1 when
 * this route takes it: an AVX-512 level (tl__isa_level), one dtype throughout, out dense
 * along its first loop axis, at least one input dense along another axis (and the other
 * either dense there too or dense along out's), both axes at least a cache line long, and
 * out's rows in one phase of 64 bytes (output lines go out by streaming stores).
 * 0 otherwise (plan unusable). Never fails, allocates nothing. */
int tl__product_tiles_plan(tl__product_tiles *plan, const tl_tensor *out, const tl_tensor *a,
                           const tl_tensor *b);
/* Run blocks [begin, end) of the plan on the calling thread; any split gives the same bits. */
void tl__product_tiles_run(const tl__product_tiles *plan, int64_t begin, int64_t end);

/* ---- Providers (provider.c, and the boundary below) -------------------------------------- */
/* One single-threaded GEMM call: C = alpha * A * B + beta * C with general element strides
 * (rs = row stride, cs = column stride). Tiny complex shapes run gemm_small_complex.c,
 * larger complex ones gemm_packed_complex.c when the choice has it and `pack` is given,
 * small f64/f32 shapes the hand kernel (small_gemm.c), the rest the provider
 * (tl__prov_gemm). beta 0 does not read C. */
void tl__gemm_serial(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                     const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                     int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc, void *pack);
/* Which kernel tl__gemm_serial runs for a call (TL__SERIAL_*): a size and layout decision
 * alone. A caller that cuts one product into blocks of C (gemm.c) decides once, on the
 * whole product, and runs every block through tl__gemm_serial_on with that decision, so a
 * block never lands on another kernel than the whole (the kernels round differently) and
 * the bits of C do not depend on how it was cut, hence not on the team. Every kernel
 * computes each element of C by the same operations wherever it sits in a block; a block
 * must keep the whole's strides and an extent above one where the whole has one. */
enum {
  TL__SERIAL_SMALL_COMPLEX = 0,  /* gemm_small_complex.c */
  TL__SERIAL_PACKED_COMPLEX = 1, /* gemm_packed_complex.c (with pack; else the provider) */
  TL__SERIAL_SMALL_REAL = 2,     /* small_gemm.c */
  TL__SERIAL_PROVIDER = 3        /* tl__prov_gemm */
};
int tl__gemm_serial_kernel(tl_dtype dtype, int64_t m, int64_t n, int64_t k, int64_t rsa,
                           int64_t rsc, int64_t csb, int64_t csc);
/* tl__gemm_serial on `kernel`, a tl__gemm_serial_kernel decision for this call or for a
 * larger product of which it is a block. Falls back to the provider where the kernel
 * declines (no pack, alpha 0, a C layout it cannot store), as tl__gemm_serial does. */
void tl__gemm_serial_on(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                        tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                        int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc,
                        void *pack);
/* The scratch tl__gemm_serial can use for this call: the bytes `pack` should have (64-byte
 * aligned, one call at a time) for it to run the packed complex kernel, or 0 when the call
 * would not run it (then pack may be NULL). With pack NULL such a call goes to the provider. */
size_t tl__gemm_serial_pack_bytes(tl_dtype dtype, int64_t m, int64_t n, int64_t k);
/* The scratch that covers every call of tl__gemm_serial whose m, n, k are at most these (for
 * a caller that makes many, such as a recursive factorisation): 0 when none of them could
 * run the packed complex kernel. */
size_t tl__gemm_serial_pack_bound(tl_dtype dtype, int64_t m, int64_t n, int64_t k);
/* ---- Small real GEMMs (small_gemm.c, small_gemm_core.c) ------------------------------
 * f32/f64 with m n k <= 64^3, m, n <= 4096 and k <= TL__SMALL_GEMM_MAX_K. Every call in
 * that reach runs the hand kernel (no code generated), so results depend on the shape
 * alone, never on which thread ran a call or what ran before. */
#define TL__SMALL_GEMM_MAX_K 256
/* 1 when (dtype, m, n, k) is in the small path's reach. */
int tl__small_gemm_fits(tl_dtype dtype, int64_t m, int64_t n, int64_t k);
/* Run the call on the small path and return 1, or return 0 (out of reach; nothing done).
 * Any strides. Single-threaded; never fails. */
int tl__small_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc);
/* The hand kernel alone: C = alpha A B + beta C, f32/f64, any strides, k <=
 * TL__SMALL_GEMM_MAX_K; isa 2 = AVX-512F, 1 = AVX2+FMA, 0 = plain C, -1 = the best this CPU
 * has (a level the CPU lacks is lowered to what it has). Pure core. */
void tl__small_gemm_kernel(int isa, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                           tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                           int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc,
                           int64_t csc);
/* The best level this CPU has (2, 1 or 0, as above). */
int tl__small_gemm_isa(void);
/* Tiny complex GEMM (c64, c128, m n k <= TL__SMALL_COMPLEX_MNK) by tenlane's own kernel
 * (gemm_small_complex.c); `kernel` is a TL__SMALL_COMPLEX_* value. Returns 1 when it
 * computed C, 0 when the shape, dtype or layout is not its (then nothing was touched). */
#define TL__SMALL_COMPLEX_MNK (80 * 80 * 80)
/* 1 when tl__gemm_small_complex would compute a call of this dtype, shape and layout. */
int tl__gemm_small_complex_takes(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                                 int64_t rsa, int64_t rsc, int64_t csb, int64_t csc);
int tl__gemm_small_complex(int kernel, tl_dtype dtype, int64_t m, int64_t n, int64_t k,
                           tl_scalar alpha, const void *a, int64_t rsa, int64_t csa, const void *b,
                           int64_t rsb, int64_t csb, tl_scalar beta, void *c, int64_t rsc,
                           int64_t csc);
/* Complex GEMM past the tiny kernel's reach by tenlane's cache-blocked AVX-512F kernel
 * (gemm_packed_complex.c). _takes: 1 when `enabled` (the provider choice) and (dtype, m, n,
 * k) are its: c64/c128 with m n k > TL__SMALL_COMPLEX_MNK. _bytes: the packing scratch a
 * call of that shape (or any smaller one) needs. The kernel returns 1 when it computed C, 0 when
 * pack is NULL, alpha or k is 0 or C has neither a unit row nor a unit column stride (then nothing
 * was touched); the CPU must have AVX-512F. */
int tl__gemm_packed_complex_takes(int enabled, tl_dtype dtype, int64_t m, int64_t n, int64_t k);
size_t tl__gemm_packed_complex_bytes(tl_dtype dtype, int64_t m, int64_t n, int64_t k);
int tl__gemm_packed_complex(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                            const void *a, int64_t rsa, int64_t csa, const void *b, int64_t rsb,
                            int64_t csb, tl_scalar beta, void *c, int64_t rsc, int64_t csc,
                            void *pack);
/* Initialise providers once (thread-safe; cheap after the first call). Every route that
 * reaches the provider or LAPACK calls it first (with BLIS it also sets the context LAPACK's
 * BLAS calls get). */
void tl__providers_init(void);

/* The CPU features the provider choice looks at (a description, so tests can feed any). */
typedef struct tl__cpu_features {
  int avx2, fma, avx512f, avx512dq, avx512cd, avx512bw, avx512vl;
} tl__cpu_features;

enum {
  TL__BLIS_DETECTED = 0, /* the context BLIS's own CPU detection picked */
  TL__BLIS_SKX = 1,      /* BLIS's AVX-512 context */
  TL__BLIS_HASWELL = 2   /* BLIS's AVX2+FMA context */
};
enum { TL__SMALL_COMPLEX_PORTABLE = 0, TL__SMALL_COMPLEX_AVX2 = 1, TL__SMALL_COMPLEX_AVX512 = 2 };

typedef struct tl__provider_choice {
  int blis;           /* TL__BLIS_* */
  int complex_1m;     /* 1: complex GEMM through BLIS's induced method 1m on the real kernels */
  int small_complex;  /* TL__SMALL_COMPLEX_*: the tiny complex GEMM kernel */
  int zen_c64_blocks; /* 1: c64 under 1m takes cache blocks measured on Zen 4 (provider.c) */
  int packed_complex; /* 1: c64/c128 past the tiny kernel run gemm_packed_complex.c */
  /* 1: a GEMM on the provider may be cut into blocks of C over a team (gemm.c): the provider
   * gives every element of C the same bits whichever block computes it, and its calls run
   * at once. 0 (tl__prov_setup: OpenBLAS) keeps each provider GEMM whole on one thread, cut
   * only as cancellation asks, which does not depend on the team. */
  int provider_split;
} tl__provider_choice;

/* 1 sends the complex GEMMs gemm_packed_complex.c would take to the provider (the
 * benchmark's earn-its-place row turns it on; set it only while no GEMM runs). 0 by
 * default. Defined in provider.c. */
extern int tl__packed_complex_off;

/* What BLIS's own CPU detection picked, as far as the choice cares. */
enum {
  TL__BLIS_SAW_GENERIC = 0, /* it did not recognise the CPU: generic kernels */
  TL__BLIS_SAW_ZEN = 1,     /* one of BLIS 0.9's AVX2 Zen contexts (zen, zen2, zen3) */
  TL__BLIS_SAW_OTHER = 2,   /* any other context it has */
  /* its AVX2 haswell context: on a CPU with skx's AVX-512 subsets that is BLIS 0.9 counting
   * one AVX-512 FMA unit, or none it can tell, from the brand string (a VM's "Intel(R)
   * Xeon(R) Processor" names no tier) */
  TL__BLIS_SAW_HASWELL = 3
};

/* The choice for a CPU with `features` where BLIS's detection saw `blis_saw`
 * (TL__BLIS_SAW_*). Pure. */
tl__provider_choice tl__provider_choose(const tl__cpu_features *features, int blis_saw);
/* What BLIS's detection saw in this process (TL__BLIS_SAW_*). */
int tl__provider_blis_saw(void);
/* The choice made for this process (after falling back where a context is missing). */
tl__provider_choice tl__provider_current(void);

/* ---- The provider boundary (provider_blis.c or provider_blas.c: the build has exactly
 * one, chosen by TL_PROVIDER in cmake/Providers.cmake). Every call single-threaded, any
 * thread, never failing (arguments were checked by the caller). ---- */
/* Start the provider (once, before any other tl__prov_ call; tl__providers_init) and say
 * what BLIS's own CPU detection saw (TL__BLIS_SAW_*); a provider other than BLIS answers
 * TL__BLIS_SAW_OTHER, so the choice keeps no BLIS context of tenlane's. */
int tl__prov_start(void);
/* Set the provider up for `features` and `choice` (tl__provider_choose's), lowering in
 * `choice` what it cannot give (a missing context: TL__BLIS_DETECTED, no 1m), and write its
 * part of the provider string ("blis:skx(1m)", "reference", "openblas:Haswell") into name.
 * Once, after tl__prov_start. */
void tl__prov_setup(const tl__cpu_features *features, tl__provider_choice *choice, char *name,
                    size_t size);
/* Per-thread set-up, on each thread's first tl__providers_init. */
void tl__prov_thread(const tl__provider_choice *choice);
/* Around every call into the provider's BLAS or LAPACK (the tl__prov_* calls below and
 * src/linalg/lapack.c): on a provider that concurrent callers could corrupt (OpenBLAS's
 * serial build, provider_blas.c) one process-wide recursive lock, so lanes may call it at
 * once and each waits its turn; elsewhere nothing. Any thread; nests; never fails. */
void tl__prov_lock(void);
void tl__prov_unlock(void);
/* The provider's gemv for LAPACK's BLAS calls (linalg/gemv.c): y = beta y + alpha op(A) x,
 * op by trans (0 'N', 1 'T', 2 'C'), A column-major with leading dimension lda, x and y
 * from their first elements (a negative increment walks back from there); alpha and beta
 * point at one element of the dtype. Arguments checked by the caller; m, n > 0. */
void tl__prov_gemv(tl_dtype dtype, int trans, int64_t m, int64_t n, const void *alpha,
                   const void *a, int64_t lda, const void *x, int64_t incx, const void *beta,
                   void *y, int64_t incy);
/* The provider's gemm for LAPACK's BLAS calls (linalg/gemm_blas.c): C = alpha op(A) op(B) +
 * beta C, op by ta and tb (0 'N', 1 'T', 2 'C'), every matrix column-major with its leading
 * dimension, alpha and beta pointing at one element of the dtype (BLIS: the process-wide
 * context, as BLIS's own BLAS layer would call it). Arguments checked by the caller; m, n > 0. */
void tl__prov_gemm_blas(tl_dtype dtype, int ta, int tb, int64_t m, int64_t n, int64_t k,
                        const void *alpha, const void *a, int64_t lda, const void *b, int64_t ldb,
                        const void *beta, void *c, int64_t ldc);
/* The provider's ger for LAPACK's BLAS calls (linalg/ger.c): A += alpha x op(y)^T, op conj
 * when conj_y, A column-major with leading dimension lda, x and y from their first elements.
 * Arguments checked by the caller; m, n > 0. */
void tl__prov_ger(tl_dtype dtype, int conj_y, int64_t m, int64_t n, const void *alpha,
                  const void *x, int64_t incx, const void *y, int64_t incy, void *a, int64_t lda);
/* The provider's trmm for LAPACK's BLAS calls (linalg/trmm.c): B = alpha op(A) B (right 0) or
 * alpha B op(A) (right 1), A triangular (upper or lower, unit diagonal not read when
 * unit_diag), op by trans (0 'N', 1 'T', 2 'C'), column-major with leading dimensions.
 * Arguments checked by the caller; m, n > 0, alpha != 0. */
void tl__prov_trmm(tl_dtype dtype, int right, int upper, int trans, int unit_diag, int64_t m,
                   int64_t n, const void *alpha, const void *a, int64_t lda, void *b, int64_t ldb);
/* The provider's Euclidean norm (BLAS's nrm2) of n elements of x with increment incx > 0
 * (providers differ below 1: OpenBLAS 0.3.21 returns 0), as the provider's own nrm2 entry
 * computes it (BLIS: its normfv with the process-wide context); f32 and c64
 * results widened to double. The norms of tenlane's own pivoted QR steps and of the
 * eigensolver's merges (linalg/lapack.c) come from here. n > 0. */
double tl__prov_nrm2(tl_dtype dtype, int64_t n, const void *x, int64_t incx);
/* 0 puts the provider's own complex level-1 kernels back into its contexts in the slots where
 * set-up put tenlane's (blis_level1.c), 1 puts tenlane's there again; nothing where set-up
 * put none (a provider other than BLIS 0.9, a CPU without AVX2 and FMA). For the
 * benchmark's earn-its-place row: call it only while no BLAS or LAPACK call runs. */
void tl__prov_own_level1(int on);
/* How large a cancellable block of a route's GEMM may be on this provider (gemm.c): at
 * most *flops real floating-point operations (a complex multiply-add counts eight), but at
 * least *min_len rows or columns of C. A cancellation request is seen between blocks only,
 * so the bound follows the provider's speed: an optimized provider runs 2^32 flops in well
 * under a tenth of a second, and packs the shared operand again per block (hence a minimum
 * length); reference BLAS runs some 30 times slower and packs nothing. Any thread. */
void tl__prov_gemm_block(double *flops, int64_t *min_len);
/* gemm.c: the length of a cancellable block of a GEMM's `dim` rows or columns, each line
 * `other` x k multiply-adds (complex_dtype: eight real flops each, else two), now cut in
 * blocks of block_len: block_len when such a block is within max_flops, else the fewest
 * blocks within it (none shorter than min_len), cut equal, in multiples of 16. Pure. */
int64_t tl__gemm_cancel_block(int complex_dtype, int64_t dim, int64_t other, int64_t k,
                              int64_t block_len, double max_flops, int64_t min_len);
/* One GEMM on the provider alone, with general element strides as tl__gemm_serial takes
 * them (strides a route accepted: gemm.c). tl__gemm_serial's last resort; the benchmark's
 * direct-provider anchor calls it too. */
void tl__prov_gemm(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                   int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb,
                   tl_scalar beta, void *c, int64_t rsc, int64_t csc);

/* ---- Batched GEMM over a surface (gemm.c) --------------------------------------------
 * batches GEMMs C_i = alpha A_i B_i + beta C_i, batch i's element offsets given by its
 * multi-index over batch_shape and the per-operand batch strides (elements). Strides must
 * already suit the provider (tl__gemm_operand makes sure). */
typedef struct tl__gemm_batch {
  tl_dtype dtype;
  int64_t m, n, k;
  tl_scalar alpha, beta;
  const char *a, *b;
  char *c;
  int64_t rsa, csa, rsb, csb, rsc, csc;
  int64_t batches;
  int batch_rank;
  int64_t batch_shape[TL_MAX_RANK];
  int64_t batch_strides[3][TL_MAX_RANK];
} tl__gemm_batch;

/* GEMM with a C of one row or one column (gemm_thin.c): dot products and matrix-vector
 * products without packing. Returns 0 (nothing done) when m != 1 and n != 1, k <= 0 or the
 * dtype is not a floating type; else computes c = alpha a b + beta c and returns 1. */
int tl__gemm_thin(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha, const void *a,
                  int64_t rsa, int64_t csa, const void *b, int64_t rsb, int64_t csb, tl_scalar beta,
                  void *c, int64_t rsc, int64_t csc);

/* A batch of 1 x 1 products (einsum's batched dots): _fit is 1 when g's entries are m = n = 1
 * with k > 0 of a floating dtype; then tl__gemm_thin_dots computes entries [begin, end) (in
 * the batched runner's numbering, g's first batch axis fastest), each with the bits that
 * tl__gemm_thin gives it alone. Pure, any thread, never fails. */
int tl__gemm_thin_dots_fit(const tl__gemm_batch *g);
void tl__gemm_thin_dots(const tl__gemm_batch *g, int64_t begin, int64_t end);
/* A batch of matrix-vector products (n == 1, m >= 2, k >= 2, A's rows and B along k at unit
 * stride, short enough for tl__thin_dots_short, a first batch axis at least its width): _fit
 * says so; tl__gemm_thin_rows computes entries [begin, end) (the batched runner's numbering),
 * each row with the bits tl__gemm_thin gives it. Pure, any thread, never fails. */
int tl__gemm_thin_rows_fit(const tl__gemm_batch *g);
void tl__gemm_thin_rows(const tl__gemm_batch *g, int64_t begin, int64_t end);

/* One long dot (a single 1 x 1 product of contiguous operands, k >= 2 TL__DOT_CHUNK) in
 * chunks of TL__DOT_CHUNK elements, a number fixed by k alone, so that the pool can share
 * them and any team gives the same bits: _fits says whether g is such a product;
 * tl__gemm_thin_dot_chunk puts chunk `chunk`'s dot (tl__thin_dot) in part[0..1];
 * tl__gemm_thin_dot_finish adds the `chunks` parts in chunk order and stores alpha times the
 * sum plus beta c, as tl__gemm_thin stores a dot. Pure, any thread, never fail. */
#define TL__DOT_CHUNK ((int64_t)1 << 14)
int tl__gemm_thin_dot_chunks_fit(const tl__gemm_batch *g);
void tl__gemm_thin_dot_chunk(const tl__gemm_batch *g, int64_t chunk, double *part);
void tl__gemm_thin_dot_finish(const tl__gemm_batch *g, int64_t chunks, const double *parts);

/* A contraction whose fastest axis is a batch label f, at unit stride in a, b and c
 * (contract_vertical.c): c(outer, f) = sum over the summed indices of a b, alpha 1, beta 0.
 * Summed labels: extents and strides in a and b, the first fastest in the order of the sum.
 * Outer and inner labels: c's other labels, with their strides in a, b (0 where absent) and
 * c. A block of c covers one outer index, TL__VERTICAL_BLOCK_BYTES or less of f, and a run
 * of inner indices (in their odometer's order, first fastest) that keeps the block within
 * TL__VERTICAL_INNER_BYTES; it walks its inner indices inside each summed index, so a row of
 * the operand that lacks them is reused while it is in cache. a, b, c: element 0 (offset
 * applied). Runs on `team` threads (1: the calling thread); each block of c is computed
 * whole by one thread, in an order that does not depend on the team. Errors:
 * TL_E_CANCELLED (c partly written). */
#define TL__VERTICAL_BLOCK_BYTES 16384 /* c's bytes along f per block (L1 beside a's rows) */
#define TL__VERTICAL_INNER_BYTES ((int64_t)1 << 20) /* c's bytes per block: a core's L2 */
typedef struct tl__vertical {
  tl_dtype dtype;
  int64_t f;
  int sum_rank;
  int64_t sums; /* product of sum_shape */
  int64_t sum_shape[TL_MAX_RANK], sum_a[TL_MAX_RANK], sum_b[TL_MAX_RANK];
  int outer_rank, inner_rank;
  int64_t outer_shape[TL_MAX_RANK], outer_a[TL_MAX_RANK], outer_b[TL_MAX_RANK],
      outer_c[TL_MAX_RANK];
  int64_t inner_shape[TL_MAX_RANK], inner_a[TL_MAX_RANK], inner_b[TL_MAX_RANK],
      inner_c[TL_MAX_RANK];
  const char *a, *b;
  char *c;
} tl__vertical;
tl_status tl__vertical_run(struct tl_exec *exec, int team, const tl__vertical *v);

/* GEMM with a tiny B (gemm_tiny_nk.c): C = alpha A B + beta C for an m x n C at (rsc, csc),
 * A's rows of k contiguous elements rsa apart, B k x n at (rsb, csb) (strides in elements).
 * _fits: 1 when (dtype, n, k) is in reach (a float dtype, n, k <= TL__TINY_NK_MAX, n k <=
 * TL__TINY_NK_MAX_ELEMENTS). beta 0 does not read C. Pure, any thread, never fails; each
 * row's bits depend on n, k and its values only, never on m, where the row sits, or the
 * instruction set (_at: at level isa, at most tl__isa_level(), for tests; the plain call
 * runs at tl__isa_level()). */
#define TL__TINY_NK_MAX 16
#define TL__TINY_NK_MAX_ELEMENTS 64
int tl__gemm_tiny_nk_fits(tl_dtype dtype, int64_t n, int64_t k);
void tl__gemm_tiny_nk(tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                      const void *a, int64_t rsa, const void *b, int64_t rsb, int64_t csb,
                      tl_scalar beta, void *c, int64_t rsc, int64_t csc);
void tl__gemm_tiny_nk_at(int isa, tl_dtype dtype, int64_t m, int64_t n, int64_t k, tl_scalar alpha,
                         const void *a, int64_t rsa, const void *b, int64_t rsb, int64_t csb,
                         tl_scalar beta, void *c, int64_t rsc, int64_t csc);
/* _fast: 1 when tl__gemm_tiny_nk runs its vector rows for such a call (f64 and c128 with
 * n <= 4, alpha 1, beta 0, csc 1 unless n is 1, on an x86 build at AVX2 or above), 0 where
 * it runs the portable rows, which trail a provider's GEMM once n passes a few columns.
 * _rows: where _fast, the rows of a block of contract.c's blocked route read where they
 * lie: group i's `runs` consecutive rows of A (k contiguous elements each, k apart) start at
 * byte offset row_at[i] from a; row r of group i is C's row at element offset
 * run_c[r] + i * rsc from c, its n elements contiguous. Each row gets tl__gemm_tiny_nk's
 * bits. stream 1 (f64 only): C's rows are written with non-temporal stores (then a store
 * fence), for a C too large to stay in the cache for whoever reads it next. Pure, any
 * thread, never fails. */
/* Outputs of at least this many bytes (one core's second-level cache on the project's
 * machines) are written with streaming stores where a kernel offers them. */
#define TL__STREAM_MIN_BYTES ((int64_t)1 << 20)
int tl__gemm_tiny_nk_fast(tl_dtype dtype, int64_t n, tl_scalar alpha, tl_scalar beta, int64_t csc);
void tl__gemm_tiny_nk_rows(tl_dtype dtype, int64_t groups, int64_t runs, int64_t n, int64_t k,
                           const void *a, const int64_t *row_at, const void *b, int64_t rsb,
                           int64_t csb, void *c, int64_t rsc, const int64_t *run_c, int stream);

/* The thin GEMM's inner loops (gemm_thin_core.c), pure, never failing. isa: TL__ISA_* at
 * most tl__gemm_thin_isa() (tests run each level). tl__thin_dot: the unconjugated dot of k
 * contiguous elements of x and y, accumulated in the dtype's precision, into *re (and *im,
 * 0 for a real dtype). tl__thin_axpy: c[e] += sum over i < k, in order, of
 * alpha v[i * sv_k] u[i * su_k + e] for e < count, c and each row of u contiguous. */
/* elementwise_complex.c: o[i] = a[i * sa] * b[i * sb] for i < n, complex double as
 * interleaved pairs, o contiguous, sa and sb each 0 or 1, with the bits of the written-out
 * product (two rounded products, one rounded sum per part); isa: TL__ISA_* at most
 * tl__isa_level(). Pure, never fails. */
void tl__mul_c128_rows(int isa, int64_t n, double *o, const double *a, int64_t sa, const double *b,
                       int64_t sb);
int tl__gemm_thin_isa(void);
void tl__thin_dot(int isa, tl_dtype dtype, int64_t k, const void *x, const void *y, double *re,
                  double *im);
/* tl__thin_dot with a software prefetch ahead of both operands at AVX-512, for operands that
 * stream from memory (a long dot's chunks); the same bits. */
void tl__thin_dot_stream(int isa, tl_dtype dtype, int64_t k, const void *x, const void *y,
                         double *re, double *im);
/* Four real (F32 or F64) dots: out[r] gets the tl__thin_dot of x + r xs and y + r ys
 * (strides in elements), bit for bit; at AVX-512 the four run side by side. */
void tl__thin_dot4_real(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t xs,
                        const void *y, int64_t ys, double *out);
/* gemm_thin_short.c: short dots across a group of entries. _width: how many entries one
 * call of tl__thin_dots_short takes (8 for F64 and C128, 16 for F32 and C64) when it
 * applies, else 0: it needs AVX-512 (isa) and at most 64 reals an entry for F64 and C128
 * (k, or 2k complex), 512 for F32 and C64. ahead: read as tl__thin_dot_stream does (for
 * batches that stream from memory), with the same bits. Entry
 * j's operands are x + j xs and y + j ys (strides in elements, any sign), each k contiguous
 * elements; re[j] and im[j] (im only for a complex dtype) get the tl__thin_dot of entry j at
 * that isa, bit for bit. Pure, never fails. */
int tl__thin_dots_short_width(int isa, tl_dtype dtype, int64_t k);
void tl__thin_dots_short(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t xs,
                         const void *y, int64_t ys, int ahead, double *re, double *im);
void tl__thin_axpy(int isa, tl_dtype dtype, int64_t count, int64_t k, tl_scalar alpha,
                   const void *u, int64_t su_k, const void *v, int64_t sv_k, void *c);
/* TL__DOT_GROUP complex dots side by side (C128 or C64): dot l is over i < k of
 * x[i * sx + l * xl] y[i * sy + l * yl] (strides in complex elements), one sum of each part
 * in order, each term numpy's written-out product (two rounded products, one rounded sum per
 * part), in the dtype's precision; out gets (re, im) of dot l at out[2 l], out[2 l + 1]. The
 * same bits at every isa level. Pure, never fails. */
#define TL__DOT_GROUP 8
void tl__thin_group_complex(int isa, tl_dtype dtype, int64_t k, const void *x, int64_t sx,
                            int64_t xl, const void *y, int64_t sy, int64_t yl, double *out);

struct tl_exec;
tl_status tl__gemm_batch_run(struct tl_exec *exec, int team, const tl__gemm_batch *g);
/* gemm_batch_runs.c: the consecutive entries of g one chunk takes when the runner spreads
 * its entries (whole GEMMs) over `team` threads (1: the calling thread alone): 1 for large
 * products, more for small ones (about 16k multiply-adds a run), never so many that a thread
 * gets fewer than 4 runs. */
size_t tl__gemm_batch_run_length(const tl__gemm_batch *g, int team);
/* gemm_batch_small.c: a stack of small real GEMMs in one call. _takes: 1 when every entry
 * of g is its (f32/f64, 2 <= m, n <= 16, 1 <= k <= 16, alpha 1, beta 0 or 1, C and the
 * matching operand with a unit stride on the same side). tl__gemm_batch_small computes
 * entries [begin, end) of such a g (nothing when g is not its), each with the bits
 * tl__gemm_serial gives that entry; isa as tl__small_gemm_kernel's (-1: this CPU's best).
 * Single-threaded; never fails. */
int tl__gemm_batch_small_takes(const tl__gemm_batch *g);
void tl__gemm_batch_small(int isa, const tl__gemm_batch *g, int64_t begin, int64_t end);
/* Make (rows x cols, strides *rs, *cs at *base) acceptable to the provider: tidy extent-1
 * strides, or copy into scratch (then *base, *rs, *cs describe the copy). */
tl_status tl__gemm_operand(struct tl_exec *exec, const tl_tensor *t, int64_t rows, int64_t cols,
                           int64_t *rs, int64_t *cs, const char **base);
/* c = alpha a b + beta c for validated rank-2 tensors (no argument checks). */
tl_status tl__gemm_tensors(struct tl_exec *exec, int team, tl_scalar alpha, const tl_tensor *a,
                           const tl_tensor *b, tl_scalar beta, tl_tensor *c);

/* ---- Argument checks shared by the routes (check.c) ---------------------------------- */
/* Validate tensor `t` named `name` (NULL -> TL_E_INVALID). */
tl_status tl__check_tensor(const tl_tensor *t, const char *name);
/* An output: validated, no zero/colliding strides (TL_E_ALIAS), no overlap with `input`
 * named `input_name` (may be NULL). */
tl_status tl__check_output(const tl_tensor *out, const char *out_name);
tl_status tl__check_no_overlap(const tl_tensor *out, const char *out_name, const tl_tensor *in,
                               const char *in_name);
/* dtype of t must be `dtype` (TL_E_DTYPE). */
tl_status tl__check_dtype(const tl_tensor *t, const char *name, tl_dtype dtype);
/* TL_E_DTYPE when a scalar for a real dtype has an imaginary part. */
tl_status tl__check_scalar(const char *name, tl_scalar s, tl_dtype dtype);
/* x broadcast to out's shape (trailing extent-1 padding), as a read-only view in *view.
 * TL_E_SHAPE with a message naming x_name when an extent fits neither way. */
tl_status tl__broadcast_to(const tl_tensor *x, const char *x_name, const tl_tensor *out,
                           tl_tensor *view);
/* Run a loop plan over the surface with `team` threads (drive.c). TL_E_CANCELLED when
 * cancellation was seen. */
struct tl_exec;
tl_status tl__loop_execute(struct tl_exec *exec, int team, const tl__loop *loop, tl__row_fn fn,
                           const void *params);

/* dst = src (same shape) over the surface through the permute core (drive.c). */
tl_status tl__copy_execute(struct tl_exec *exec, int team, const tl_tensor *dst,
                           const tl_tensor *src);

/* Elements below which a route runs on the calling thread even from a root surface. */
#define TL__PARALLEL_MIN_ELEMENTS 32768
/* Elementwise loops and copies on the calling thread alone (a one-thread team) run in
 * chunks of about this many elements, looking at the cancellation flag before each, once
 * they reach it (a diagonal copied out of a broadcast view can write gigabytes). */
#define TL__SERIAL_CHUNK_ELEMENTS ((int64_t)1 << 20)

/* |v| of a stride or extent (never INT64_MIN here). */
static inline int64_t tl__abs64(int64_t v) { return v < 0 ? -v : v; }

/* Ask for every 64-byte line of the `bytes` bytes from p, to be read (a hint: nothing is
 * read, nothing faults, p may lie past an operand's end). `write`: to be written. */
static inline void tl__prefetch_span(const void *p, int64_t bytes, int write) {
  const char *q = (const char *)p;
  for (int64_t at = 0; at < bytes; at += 64) {
    if (write)
      __builtin_prefetch(q + at, 1, 3);
    else
      __builtin_prefetch(q + at, 0, 3);
  }
}

#endif
