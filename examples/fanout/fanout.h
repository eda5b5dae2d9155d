/* examples/fanout/fanout.h: what the parts of the fan-out demo share.
 *
 * The demo runs one computation (a patch of a tensor-cross interpolation) over thousands
 * of items, four ways, and compares them. The invariant every part keeps: a patch's inputs
 * are a pure function of (seed, item index), and its result a pure function of its inputs
 * and of the kernels that compute it, so every variant computes the same thing and the two
 * tenlane variants can be compared bit for bit. A patch reaches its matrix kernels only
 * through a fan_ops table (tenlane routes, or the providers called directly), and its
 * buffers only through a fan_work carved by its caller. */
#ifndef FANOUT_H
#define FANOUT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* ---- The problem: a random tensor train and the patches over it -------------------- */

typedef struct fan_problem {
  int length; /* L: sites of the tensor train */
  int phys;   /* d: physical dimension of every site */
  int bond;   /* chi: bond dimension of every bond */
  double tol; /* relative truncation tolerance of the rank-revealing factorization */
  uint64_t seed;
  size_t patches;
  long long fail_item; /* a test hook: this item fails on purpose (-1: none) */
  /* The tensor train: core k is chi x d x chi, column-major, at cores + k * core_size.
   * f(s_0..s_{L-1}) = left^T G_0[s_0] ... G_{L-1}[s_{L-1}] right. Read-only once made. */
  double *cores;
  double *left;  /* chi */
  double *right; /* chi */
} fan_problem;

/* chi * d: the side of a patch's grid (the grid is (chi d) x (d chi)). */
static inline int fan_grid_side(const fan_problem *pb) { return pb->bond * pb->phys; }

/* Build the tensor train for pb's sizes and seed (allocates cores, left, right).
 * Returns 0, or -1 when out of memory. */
int fan_problem_make(fan_problem *pb);
void fan_problem_free(fan_problem *pb);

/* What one patch produces; results are kept per item and compared across variants. */
typedef struct fan_result {
  int rank;        /* columns kept by the truncated factorization */
  int site;        /* the patch's left free site p (sites p and p+1 are free) */
  double residual; /* ||A - A[:,J] A[I,J]^-1 A[I,:]||_F / ||A||_F */
  uint64_t digest; /* FNV-1a over the new cores' bits, the pivots, rank and residual */
  int computed;    /* 1 once the item ran to the end */
} fan_result;

/* ---- Matrix kernels a patch needs (column-major, leading dimensions) ---------------- */

typedef struct fan_call fan_call;

typedef struct fan_ops {
  const char *name;
  /* c (m x n) = a (m x k) * b (k x n). */
  int (*gemm)(fan_call *call, int m, int n, int k, const double *a, int lda, const double *b,
              int ldb, double *c, int ldc);
  /* QR with column pivoting of a (m x n; a is not modified), truncated: *rank = how many
   * |r(i,i)| exceed rtol |r(0,0)|; perm (n) the 0-based column order; q (m x c) and
   * r (c x n), c = min(m, n), get their first *rank columns / rows, the rest zero. */
  int (*qrcp)(fan_call *call, int m, int n, const double *a, int lda, double rtol, double *q,
              int ldq, double *r, int ldr, int64_t *perm, int *rank);
  /* LU with partial pivoting of a (m x n) into lu (LAPACK layout: unit L below the
   * diagonal, U on and above); pivots (min(m, n)): row i swapped with row pivots[i]. */
  int (*lu)(fan_call *call, int m, int n, const double *a, int lda, double *lu, int ldlu,
            int64_t *pivots);
  /* x (m x n) solves x T = b, T the upper (lower = 0) or lower (lower = 1) triangle of
   * t (n x n), with a unit diagonal when unit = 1. x does not overlap b or t. */
  int (*solve_right)(fan_call *call, int lower, int unit, int m, int n, const double *t, int ldt,
                     const double *b, int ldb, double *x, int ldx);
} fan_ops;

/* One item's view of its kernels: the table, the backend's state for this thread or
 * lane, and where a failing kernel writes why. */
struct fan_call {
  const fan_ops *ops;
  void *backend;
  char why[240];
};

/* ---- Buffers of one patch ----------------------------------------------------------- */

typedef struct fan_work {
  double *env_left;   /* chi x chi: row alpha = left environment of left pivot alpha */
  double *env_right;  /* chi x chi: column beta = right environment of right pivot beta */
  double *step;       /* chi x (d chi): one environment step before the gather */
  double *lmat;       /* (chi d) x chi: rows (alpha, s_p) */
  double *rmat;       /* chi x (d chi): columns (s_{p+1}, beta) */
  double *grid;       /* M x M, M = chi d: the sampled function A */
  double *qbuf;       /* M x M: Q of the QR with column pivoting */
  double *rbuf;       /* M x M: R of it */
  double *cols;       /* M x rank: the pivot columns A[:, J] */
  double *lu;         /* M x rank: their LU factors */
  double *half;       /* M x rank: A[:, J] U^-1 */
  double *left_core;  /* M x rank: A[:, J] A[I, J]^-1, the new left core */
  double *right_core; /* rank x M: A[I, :], the new right core */
  double *recon;      /* M x M: left_core * right_core */
  int64_t *perm;      /* M: column order of the QR */
  int64_t *pivots;    /* M: row swaps of the LU */
  int *rows;          /* M: the pivot rows I (first rank entries) */
  int *left_pivots;   /* L x chi: left pivot multi-indices, column alpha */
  int *right_pivots;  /* L x chi: right pivot multi-indices, column beta */
} fan_work;

/* Bytes of one fan_work block (64-byte aligned pieces). */
size_t fan_work_bytes(const fan_problem *pb);
/* Carve w out of `block` (fan_work_bytes(pb) bytes, 64-byte aligned). */
void fan_work_carve(const fan_problem *pb, void *block, fan_work *w);
/* Allocate each buffer of w with its own malloc (the per-call style); 0 or -1. */
int fan_work_malloc_each(const fan_problem *pb, fan_work *w);
void fan_work_free_each(fan_work *w);

/* Run patch `item`: sample the grid, pick pivots by QR with column pivoting and LU,
 * solve for the new cores with two triangular solves, check their product.
 * Writes *out only on success. Returns 0, or non-zero with call->why set. Pure function
 * of (pb, item) and the kernels; any thread, with its own w and call. */
int fan_patch_run(const fan_problem *pb, size_t item, fan_call *call, fan_work *w, fan_result *out);

/* ---- Backends and runners ----------------------------------------------------------- */

/* The providers called directly (libxsmm for small GEMMs, BLIS otherwise, LAPACKE,
 * cblas trsm). With per_call set, every factorization mallocs its scratch and calls
 * LAPACKE's allocating drivers (the usual way); otherwise it uses the scratch below, made
 * once per thread by fan_direct_make. */
extern const fan_ops fan_direct_ops;
typedef struct fan_direct {
  int per_call;
  double *factor; /* M x M */
  double *tau;    /* M */
  int *ipiv;      /* M */
  double *lapack_work;
  int lapack_lwork;
} fan_direct;
/* Per-thread scratch for the workspace style; 0 or -1 (out of memory). */
int fan_direct_make(fan_direct *d, const fan_problem *pb);
void fan_direct_free(fan_direct *d);
void fan_direct_init(void);

/* Progress reporting from inside items (no allocation, no lock, no extra thread). One
 * report spans the whole measured run; the label says which variant runs now. */
typedef struct fan_progress {
  _Atomic(const char *) label;
  size_t total;
  int mode; /* 0 quiet, 1 terminal bar, 2 plain lines */
  double start;
  atomic_size_t done;
  atomic_llong next_ns;
} fan_progress;

void fan_progress_begin(fan_progress *p, size_t total, int mode);
void fan_progress_label(fan_progress *p, const char *label);
void fan_progress_item(fan_progress *p);
void fan_progress_end(fan_progress *p, int ok);

/* Which variant, for labels and the CSV. */
enum { FAN_A = 0, FAN_B = 1, FAN_C = 2, FAN_D = 3, FAN_VARIANTS = 4 };

typedef struct fan_options {
  size_t patches;
  int length, phys, bond;
  double tol;
  int threads;
  uint64_t seed;
  const char *csv;
  int quiet;
  long long fail_item;
  const char *variants; /* subset of "abcd" to run */
  size_t warmup;        /* items of the untimed warm-up pass */
  int rounds;           /* the measured items are run in this many interleaved rounds */
  int rows;             /* also print scripts/run-benches rows */
} fan_options;

typedef struct fan_env {
  const fan_options *opt;
  fan_problem *pb;
  int *cpus; /* CPUs the process may run on (pinning targets) */
  int cpu_count;
} fan_env;

/* What one pass (a range of items on one variant) measured, or why it failed. */
typedef struct fan_pass {
  size_t first, count; /* the items: first .. first + count - 1 */
  fan_result *priv;    /* results, indexed by item; private until the run succeeded */
  fan_progress *progress;
  int sample_threads; /* count /proc/self/task entries from inside items */
  double seconds;
  uint64_t tl_allocs; /* tl_allocation_count() delta over the pass */
  uint64_t mallocs;   /* malloc-family calls over the pass (see counters.c) */
  int threads_seen;   /* most entries of /proc/self/task seen from inside an item */
  size_t failed_item; /* when the pass returned 1 */
  char why[400];      /* when the pass returned non-zero */
} fan_pass;

/* A way of running items. open makes what the variant keeps across passes (context,
 * per-lane or per-thread buffers); pass runs items and returns only after every thread
 * that ran them has joined: 0, 1 when an item failed (the lowest one that failed by
 * itself, in failed_item and why), 3 on a setup failure (why); close frees it all. */
typedef struct fan_runner {
  int (*open)(const fan_env *env, int variant, void **state, char *why, size_t why_size);
  int (*pass)(void *state, fan_pass *pass);
  int (*lanes)(void *state);
  void (*close)(void *state);
} fan_runner;

/* (a) tl_map over every lane of a context with budget --threads; (b) budget 1. */
extern const fan_runner fan_tenlane_runner;
/* The kernel provider tenlane picked, for the header line. */
const char *fan_tenlane_kernels(void);
/* (c) OpenMP with allocation per item; (d) with per-thread workspaces. */
extern const fan_runner fan_openmp_runner;
/* 1 when the OpenMP variants were built. */
int fan_openmp_available(void);

/* ---- Counters ----------------------------------------------------------------------- */

/* malloc-family calls made by this process so far (0 when not counted: see counters.c). */
uint64_t fan_malloc_count(void);
int fan_malloc_counted(void);
/* Entries of /proc/self/task right now, read without allocating; -1 on failure. */
int fan_thread_count(void);
/* Record max(threads_seen, now) atomically. */
void fan_thread_sample(atomic_int *max_seen);

double fan_now(void);
/* Pin the calling thread to one CPU; 0 or -1. */
int fan_pin_to(int cpu);

#endif
