/* examples/fanout/patch.h: the fan-out's per-item work, as a small library
 * (tenlane_fanout_patch) that the fan-out programs link: the problem, one patch, the kernels
 * a patch calls, and the two ways to provide them (tenlane routes on a lane's surface, or
 * the providers called directly).
 *
 * The invariant every part keeps: a patch's inputs (its bond dimension, its free site, its
 * pivots) are a pure function of (seed, item index), and its result a pure function of its
 * inputs and of the kernels that compute it, so every runner computes the same thing and
 * two runs through the same kernels can be compared bit for bit. A patch reaches its matrix
 * kernels only through a fan_ops table and its buffers only through a fan_work carved by
 * its caller; it allocates nothing itself.
 *
 * Thread rules: a fan_problem is read-only once made and may be shared by every thread;
 * each thread (or lane) brings its own fan_work, fan_call and backend state. */
#ifndef FANOUT_PATCH_H
#define FANOUT_PATCH_H

#include <stddef.h>
#include <stdint.h>

/* ---- The problem: a random tensor train and the patches over it -------------------- */

/* Element types of the tensor train, the grids and every kernel. */
typedef enum fan_dtype { FAN_F64 = 0, FAN_C128 = 1 } fan_dtype;

/* Bytes of one element: 8 or 16. */
static inline size_t fan_dtype_size(fan_dtype dtype) { return dtype == FAN_C128 ? 16 : 8; }
/* "f64" or "c128". */
const char *fan_dtype_name(fan_dtype dtype);

typedef struct fan_problem {
  fan_dtype dtype;
  int length;  /* L: sites of the tensor train */
  int phys;    /* d: physical dimension of every site */
  int bond_lo; /* each patch draws its bond dimension chi from bond_lo..bond_hi (seeded); */
  int bond_hi; /* the tensor train has bond dimension bond_hi, a patch uses its leading chi */
  /* 0: each item draws its bond from its own stream; 1: item i of `patches` gets bond
   * bond_lo + i (bond_hi - bond_lo + 1) / patches (the same spread, in runs of one shape;
   * the rest of its inputs as drawn). */
  int bond_sorted;
  size_t patches;
  double tol; /* relative truncation tolerance of the rank-revealing factorization */
  uint64_t seed;
  long long fail_item; /* a test hook: this item fails on purpose (-1: none) */
  /* The tensor train, read-only once made (X = bond_hi, elements of `dtype`):
   * core k (X x d x X, entry (a, s, b) at a + X (s + d b)) at cores + k X d X elements,
   * the same core transposed (entry (a, s, b) at b + X (s + d a)) at cores_t + k X d X.
   * f(s_0..s_{L-1}) = left^T G_0[s_0] ... G_{L-1}[s_{L-1}] right; a patch of bond chi
   * uses the leading chi x chi block of every G_k[s] and of left, right. */
  void *cores;
  void *cores_t;
  void *left;  /* X */
  void *right; /* X */
} fan_problem;

/* Fill in pb: the sizes and options (dtype, length, phys, bond_lo, bond_hi, tol, seed,
 * fail_item) are the caller's; this builds the tensor train (allocates cores, cores_t,
 * left, right). Returns 0, or -1 when out of memory (nothing is kept). */
int fan_problem_make(fan_problem *pb);
void fan_problem_free(fan_problem *pb);

/* The largest grid side a patch of pb can have: bond_hi * phys. */
static inline int fan_grid_side_max(const fan_problem *pb) { return pb->bond_hi * pb->phys; }
/* The bond dimension item `item` draws (bond_lo..bond_hi). Pure function of (pb, item). */
int fan_item_bond(const fan_problem *pb, size_t item);

/* What one patch produces; results are kept per item and compared across runners. */
typedef struct fan_result {
  int rank;        /* columns kept by the truncated factorization */
  int site;        /* the patch's left free site p (sites p and p+1 are free) */
  int bond;        /* the patch's bond dimension chi; its grid is (chi d) x (d chi) */
  double residual; /* ||A - A[:,J] A[I,J]^-1 A[I,:]||_F / ||A||_F */
  uint64_t digest; /* FNV-1a over the new cores' bits, the pivots, rank and residual */
  uint64_t pivots; /* FNV-1a over the bond, the rank and the kept pivots (J and I) alone */
  int computed;    /* 1 once the item ran to the end */
} fan_result;

/* How many of items 0..n-1 differ between x and y in any bit (rank, site, bond, digest,
 * residual), counting an item that either side did not compute as differing; *first gets
 * the lowest such item (left alone when none differs). Reads only; any thread. */
size_t fan_results_mismatches(const fan_result *x, const fan_result *y, size_t n, size_t *first);

/* ---- Matrix kernels a patch needs (column-major, leading dimensions, call->dtype) ------ */

typedef struct fan_call fan_call;

typedef struct fan_ops {
  const char *name;
  /* c (m x n) = a (m x k) * b (k x n). */
  int (*gemm)(fan_call *call, int m, int n, int k, const void *a, int lda, const void *b, int ldb,
              void *c, int ldc);
  /* QR with column pivoting of a (m x n; a is not modified), truncated: *rank = how many
   * |r(i,i)| exceed rtol |r(0,0)|; perm (n) the 0-based column order; q (m x c) and
   * r (c x n), c = min(m, n), get their first *rank columns / rows, the rest zero. */
  int (*qrcp)(fan_call *call, int m, int n, const void *a, int lda, double rtol, void *q, int ldq,
              void *r, int ldr, int64_t *perm, int *rank);
  /* LU with partial pivoting of a (m x n) into lu (LAPACK layout: unit L below the
   * diagonal, U on and above); pivots (min(m, n)): row i swapped with row pivots[i]. */
  int (*lu)(fan_call *call, int m, int n, const void *a, int lda, void *lu, int ldlu,
            int64_t *pivots);
  /* x (m x n) solves x T = b, T the upper (lower = 0) or lower (lower = 1) triangle of
   * t (n x n), with a unit diagonal when unit = 1. x does not overlap b or t. */
  int (*solve_right)(fan_call *call, int lower, int unit, int m, int n, const void *t, int ldt,
                     const void *b, int ldb, void *x, int ldx);
} fan_ops;

/* One item's view of its kernels: the table, the element type, the backend's state for
 * this thread or lane, and where a failing kernel writes why. */
struct fan_call {
  const fan_ops *ops;
  fan_dtype dtype;
  void *backend;
  char why[240];
};

/* ---- Buffers of one patch (sized for the largest bond, bond_hi) ----------------------- */

typedef struct fan_work {
  void *env_left;    /* chi x chi: row alpha = left environment of left pivot alpha */
  void *env_right_t; /* chi x chi: row beta = right environment of right pivot beta */
  void *step;        /* chi x (d chi): one environment step before the gather */
  void *lmat;        /* (chi d) x chi: rows (alpha, s) */
  void *rmat;        /* chi x (d chi): columns (t, beta) */
  void *grid;        /* M x M, M = chi d: the sampled function A */
  void *qbuf;        /* M x M: Q of the QR with column pivoting */
  void *rbuf;        /* M x M: R of it */
  void *cols;        /* M x rank: the pivot columns A[:, J] */
  void *lu;          /* M x rank: their LU factors */
  void *half;        /* M x rank: A[:, J] U^-1 */
  void *left_core;   /* M x rank: A[:, J] A[I, J]^-1, the new left core */
  void *right_core;  /* rank x M: A[I, :], the new right core */
  void *recon;       /* M x M: left_core * right_core */
  int64_t *perm;     /* M: column order of the QR */
  int64_t *pivots;   /* M: row swaps of the LU */
  int *rows;         /* M: the pivot rows I (first rank entries) */
  int *left_pivots;  /* L x chi: left pivot multi-indices, column alpha */
  int *right_pivots; /* L x chi: right pivot multi-indices, column beta */
} fan_work;

/* Bytes of one fan_work block for pb (64-byte aligned pieces). */
size_t fan_work_bytes(const fan_problem *pb);
/* Carve w out of `block` (fan_work_bytes(pb) bytes, 64-byte aligned; the caller's). */
void fan_work_carve(const fan_problem *pb, void *block, fan_work *w);
/* Allocate each buffer of w with its own malloc (the per-call style); 0 or -1. */
int fan_work_malloc_each(const fan_problem *pb, fan_work *w);
void fan_work_free_each(fan_work *w);

/* Run patch `item`: sample the grid, pick pivots by QR with column pivoting and LU,
 * solve for the new cores with two triangular solves, check their product.
 * Writes *out only on success. Returns 0, or non-zero with call->why set (a kernel's own
 * non-zero code is passed through). call->dtype must be pb->dtype. Any thread, with its
 * own w and call. */
int fan_patch_run(const fan_problem *pb, size_t item, fan_call *call, fan_work *w, fan_result *out);

/* ---- Backend 1: tenlane routes on a surface ----------------------------------------- */

struct tl_exec;

/* The patch kernels as tenlane routes on `exec` (tl_gemm_into, tl_qrcp_into, tl_lu_into,
 * tl_triangular_solve_into): their temporaries come from the surface's scratch arena. */
extern const fan_ops fan_tenlane_ops;
typedef struct fan_tenlane_backend {
  struct tl_exec *exec; /* the surface for the current item (a lane's, in tl_map) */
  int last_status;      /* the tl_status of the route that failed, if one did */
} fan_tenlane_backend;
/* Make `call` use the tenlane routes on exec through `backend` (the caller's storage). */
void fan_tenlane_call_init(fan_call *call, fan_dtype dtype, fan_tenlane_backend *backend,
                           struct tl_exec *exec);

/* ---- Backend 2: the providers called directly ---------------------------------------- */

/* How the direct backend computes and where its scratch comes from:
 * FAN_DIRECT_KEPT: the same algorithm and provider calls as tenlane's routes (truncated
 *   pivoted QR), scratch kept per thread (fan_direct_make);
 * FAN_DIRECT_MALLOC: the same algorithm, every factorization mallocs its scratch and uses
 *   LAPACKE's allocating drivers;
 * FAN_DIRECT_TYPICAL: what such loops usually do: the full geqp3 truncated afterwards,
 *   LAPACKE's allocating drivers, scratch malloc'ed per call. */
typedef enum fan_direct_style {
  FAN_DIRECT_KEPT = 0,
  FAN_DIRECT_MALLOC = 1,
  FAN_DIRECT_TYPICAL = 2
} fan_direct_style;

extern const fan_ops fan_direct_ops;
typedef struct fan_direct {
  fan_direct_style style;
  fan_dtype dtype;
  /* FAN_DIRECT_KEPT only (fan_direct_make): scratch for the largest grid. */
  void *factor;      /* M x M elements */
  void *tau;         /* M elements */
  void *norms;       /* 2 M reals: the column norms the pivoted QR updates */
  void *aux;         /* block (8) + M x 8 elements: laqps's auxv and f */
  int *ipiv;         /* M */
  void *lapack_work; /* lapack_lwork elements */
  int lapack_lwork;
  double *rwork; /* 2 M reals (complex geqp3) */
} fan_direct;
/* Initialise d for `style`; FAN_DIRECT_KEPT also allocates its scratch for pb's largest
 * grid. 0, or -1 when out of memory (nothing kept). */
int fan_direct_make(fan_direct *d, fan_direct_style style, const fan_problem *pb);
void fan_direct_free(fan_direct *d);
/* Once per process, before the first direct call (libxsmm's set-up, tenlane's choice of
 * BLIS context). */
void fan_direct_init(void);
/* Once per thread that makes direct calls, before its first (BLIS's per-thread state). */
void fan_direct_thread_init(void);

#endif
