/* examples/tci/tci.h: a small tensor cross interpolation (TCI) library on tenlane's lanes.
 *
 * A function of 1 to 3 variables on a quantics grid (2^R points per variable) is learnt as a
 * tensor train by 2-site TCI (TCI2): each pivot update factors the two-site matrix by a
 * partial rank-revealing LU with full pivot search, stopping at a tolerance or a maximum bond
 * dimension; full sweeps run until the error estimate converges. A patch whose TCI reaches
 * the maximum bond dimension without converging splits on its next quantics site into
 * sub-patches that go back on a shared queue; the lanes of one tenlane phase pull from that
 * queue while it grows (fanout.c). The kept result is the patched tensor train, in a canonical
 * order, bit-identical for any number of lanes.
 *
 * Ownership: everything a function here returns through an out pointer belongs to the caller
 * and is released by the matching *_free. Thread rules: a tci_train is immutable once built
 * and may be read from any thread; a tci_workspace belongs to one thread at a time. Errors:
 * functions return 0 on success or a TCI_E_* code and write a message naming the values into
 * the caller's `why` buffer (TCI_WHY bytes). */
#ifndef TENLANE_EXAMPLES_TCI_H
#define TENLANE_EXAMPLES_TCI_H

#include <stddef.h>
#include <stdint.h>

#include "tenlane/session.h"

#define TCI_MAX_DIMS 3
#define TCI_MAX_BITS 40
#define TCI_MAX_SITES (TCI_MAX_DIMS * TCI_MAX_BITS)
#define TCI_WHY 512
/* The largest matrix side the pivot update takes (max_bond * local_dim). */
#define TCI_PRRLU_MAX 4096

enum {
  TCI_OK = 0,
  TCI_E_ARG = 1,       /* a bad argument or option (the message names it) */
  TCI_E_NONFINITE = 2, /* the function returned NaN or infinity (the message names the point) */
  TCI_E_FUNCTION = 3,  /* the user callback returned non-zero */
  TCI_E_TENLANE = 4,   /* a tenlane call failed (the message carries tenlane's) */
  TCI_E_NOMEM = 5,
  TCI_E_CANCELLED = 6, /* the run was cancelled */
  TCI_E_IO = 7         /* a file could not be written or read, or is not a tci file */
};

/* ---- Quantics grid (grid.c) ------------------------------------------------------------ */

typedef enum tci_layout {
  TCI_INTERLEAVED = 0, /* R*dims sites of 2: bit b of every variable, most significant first */
  TCI_FUSED = 1        /* R sites of 2^dims: site b holds bit b of all variables together */
} tci_layout;

typedef struct tci_grid {
  int dims;                /* 1..3 */
  int bits;                /* R, 1..40: 2^R points per variable */
  tci_layout layout;       /* how the bits of the variables map to sites */
  int sites;               /* R*dims (interleaved) or R (fused) */
  int local_dim;           /* 2 (interleaved) or 2^dims (fused): every site's extent */
  double lo[TCI_MAX_DIMS]; /* variable v runs over lo[v] + (hi[v]-lo[v]) * i / 2^R, */
  double hi[TCI_MAX_DIMS]; /* i = 0 .. 2^R - 1 (hi itself is not on the grid) */
} tci_grid;

int tci_grid_init(tci_grid *grid, int dims, int bits, tci_layout layout, const double *lo,
                  const double *hi, char *why);
/* The grid indices (dims of them) of a full site vector, and the coordinates (may be NULL). */
void tci_grid_point(const tci_grid *grid, const uint8_t *sites, uint64_t *index, double *x);
/* The coordinates (dims of them) of grid indices. */
void tci_grid_coords(const tci_grid *grid, const uint64_t *index, double *x);
/* The site vector (grid->sites entries) of grid indices. */
void tci_grid_sites(const tci_grid *grid, const uint64_t *index, uint8_t *sites);
/* The volume of one grid cell: the product of (hi - lo) / 2^R. */
double tci_grid_cell(const tci_grid *grid);

/* ---- Functions (functions.c) ---------------------------------------------------------------- */

/* A function vectorised over a batch: x holds n points of `dims` coordinates each (point p at
 * x[p*dims .. p*dims+dims-1]); write the n values to y. Return 0, or non-zero to fail the run
 * (TCI_E_FUNCTION). Called from any lane thread, concurrently: it must be thread-safe. */
typedef int (*tci_batch_fn)(const double *x, size_t n, int dims, double *y, void *arg);
/* The same over grid indices: index holds n points of `dims` indices each (0 .. 2^R - 1), the
 * form a caller with its own grid bookkeeping (the Python binding) wants. Same rules. */
typedef int (*tci_index_fn)(const uint64_t *index, size_t n, int dims, double *y, void *arg);

typedef struct tci_function {
  const char *name;  /* what --function selects */
  const char *about; /* one line */
  int dims;
  double lo[TCI_MAX_DIMS], hi[TCI_MAX_DIMS];
  tci_batch_fn fn;
  void *arg;
  int bits;         /* the default R (2^R points per variable) */
  int has_integral; /* 1 when `integral` is the exact integral over the box */
  double integral;
  int cheap; /* 1: a value costs less than a probe of the value cache (TCI_CACHE_AUTO skips it) */
  tci_index_fn index_fn; /* when set, called instead of fn (which may then be NULL) */
} tci_function;

/* f at n points, given both as grid indices and as coordinates (either may be NULL when the
 * function does not take that form): 0 or the function's non-zero return. */
int tci_function_call(const tci_function *f, const uint64_t *index, const double *x, size_t n,
                      double *y);

size_t tci_builtin_count(void);
const tci_function *tci_builtin_at(size_t i);
/* NULL for an unknown name. */
const tci_function *tci_builtin(const char *name);

enum { TCI_CACHE_OFF = 0, TCI_CACHE_ON = 1, TCI_CACHE_AUTO = 2 };

/* ---- Options ------------------------------------------------------------------------------- */

typedef struct tci_options {
  double tol;         /* relative to the function's scale (max |f| seen); > 0 */
  int max_bond;       /* the maximum bond dimension, 1..512 */
  int max_sweeps;     /* full (forward + backward) sweeps at most per patch */
  int patching;       /* 1: split a patch that saturates max_bond without converging */
  int min_free_sites; /* never split a patch below this many free sites (>= 2) */
  uint64_t seed;      /* for the initial pivot candidates (the result depends on it only) */
  int cancel_after;   /* tests: a lane cancels the run after this many patches (0: never) */
  int max_lanes;      /* tci_run_lanes: at most this many of the session's lanes take patches
                         (0: all); the train is the same bits for any number */
  int value_cache;    /* TCI_CACHE_ON: a patch calls f once per point (cache.c); TCI_CACHE_OFF;
                         TCI_CACHE_AUTO (default): on unless the function is marked cheap */
} tci_options;

void tci_options_init(tci_options *options);

/* ---- Workspace and one patch's TCI (workspace.c, prrlu.c, sweep.c) ----------------------------
 */

typedef struct tci_workspace tci_workspace;

/* Bytes of one workspace for this grid and these options (everything one patch needs). */
size_t tci_workspace_bytes(const tci_grid *grid, const tci_options *options);
/* Lay a workspace out in caller memory of tci_workspace_bytes (64-byte aligned). */
tci_workspace *tci_workspace_place(void *memory, const tci_grid *grid, const tci_options *options);

/* Free what a workspace grew on the heap (its draft piece); the workspace may be reused. */
void tci_workspace_release(tci_workspace *ws);

/* The partial rank-revealing LU of the m x n column-major matrix a (overwritten: the rows and
 * columns left unchosen hold the residual): full pivot search, at most max_rank pivots, stopping
 * once the largest residual entry is at most tol_abs (the first pivot is always taken). Pivot rows
 * and columns go to rows[] and cols[] in the order they were chosen; returns the rank. *error gets
 * the largest residual entry left (0 when the matrix is exhausted). Ties go to the first entry in
 * column-major order, so the result depends on the matrix alone. */
int tci_prrlu(double *a, int m, int n, int max_rank, double tol_abs, int *rows, int *cols,
              double *error);

/* A patch: the first prefix_len sites are fixed to prefix[]. */
typedef struct tci_patch {
  int prefix_len;
  uint8_t prefix[TCI_MAX_SITES];
  double chain; /* seconds its ancestors' TCIs took, one after another (timing only) */
} tci_patch;

/* One kept patch of the result: its prefix and the tensor train over its free sites.
 * Core k has shape rank[k] x local_dim x rank[k+1] (rank[0] = rank[n] = 1), element
 * (a, s, b) at core[k][(a * local_dim + s) * rank[k+1] + b]. One malloc block. */
typedef struct tci_piece {
  tci_patch patch;
  int n;         /* free sites */
  int max_rank;  /* the largest bond dimension */
  int converged; /* 1 when the error estimate met the tolerance */
  int sweeps;
  double error; /* the last error estimate (absolute) */
  uint64_t evaluations;
  int *rank;     /* n + 1 entries */
  double **core; /* n pointers */
} tci_piece;

void tci_piece_free(tci_piece *piece);

typedef struct tci_problem {
  const tci_grid *grid;
  const tci_function *function;
  const tci_options *options;
  double scale; /* the run's reference scale of |f| (>= every patch's own max is not needed) */
} tci_problem;

/* What one patch's TCI decided. */
typedef struct tci_patch_outcome {
  int split;            /* 1: saturated max_bond without converging; the caller splits it */
  tci_piece *piece;     /* the kept result when split == 0 (caller frees) */
  uint64_t evaluations; /* calls of f, point by point */
  uint64_t lookups;     /* values the TCI asked for (the cache answered the difference) */
  int max_rank;
} tci_patch_outcome;

/* Run the TCI of one patch on `exec` (its linear algebra runs there) with workspace `ws`.
 * `stop(stop_arg)` is polled between pivot updates: non-zero stops with TCI_E_CANCELLED.
 * Allocates only the kept piece. */
int tci_patch_run(tl_exec *exec, tci_workspace *ws, const tci_problem *problem,
                  const tci_patch *patch, int (*stop)(void *), void *stop_arg,
                  tci_patch_outcome *out, char *why);

/* ---- The patched tensor train (train.c) ------------------------------------------------------ */

typedef struct tci_train {
  tci_grid grid;
  size_t count; /* pieces, sorted by prefix (lexicographic; a prefix-free cover) */
  tci_piece **pieces;
} tci_train;

void tci_train_free(tci_train *train);
/* Sort the pieces canonically (by prefix). */
void tci_train_sort(tci_train *train);
/* The interpolant at a full site vector. */
double tci_train_eval_sites(const tci_train *train, const uint8_t *sites);
/* The interpolant at grid indices (dims of them). */
double tci_train_eval(const tci_train *train, const uint64_t *index);
/* The integral over the grid's box: cell volume times the sum over every grid point. */
double tci_train_integral(const tci_train *train);
/* 1 when both trains have the same pieces, ranks and core bits. */
int tci_train_identical(const tci_train *a, const tci_train *b);
int tci_train_max_rank(const tci_train *train);

/* ---- The run: the fan-out over a phase (fanout.c), OpenMP (openmp.c) ---------------------------
 */

typedef struct tci_stats {
  uint64_t evaluations; /* function values computed, every patch (split ones included) */
  uint64_t lookups;     /* values asked for: the evaluations plus the cache's answers */
  size_t patches_run;   /* patch TCIs run (split ones included) */
  size_t splits;
  double seconds;
  int lanes;
  double busy_seconds;  /* time the lanes spent inside patch TCIs, summed over lanes */
  double chain_seconds; /* the longest root-to-leaf chain of patch TCIs: each waits for its
                           parent, so no number of lanes finishes the patches sooner */
} tci_stats;

/* The run's reference scale: max |f| over the root's initial pivot candidates. */
int tci_problem_scale(const tci_grid *grid, const tci_function *function,
                      const tci_options *options, double *scale, char *why);

/* The patched TCI as one tenlane phase on `session`: every lane pulls patches from one queue
 * that grows while lanes work; the run ends when the queue is empty and no lane works.
 * On success *out is the sorted patched train (caller frees). On failure nothing is kept,
 * every lane has joined and the session is usable; the message names the failing patch. */
int tci_run_lanes(tl_session *session, const tci_grid *grid, const tci_function *function,
                  const tci_options *options, tci_train *out, tci_stats *stats, char *why);

/* The same algorithm as an OpenMP task loop (one task per patch, a workspace malloc'd per
 * task, the linear algebra on a tenlane ticket entry per task). TCI_E_ARG when built without
 * OpenMP. */
int tci_run_openmp(tl_session *session, int threads, const tci_grid *grid,
                   const tci_function *function, const tci_options *options, tci_train *out,
                   tci_stats *stats, char *why);
int tci_have_openmp(void);

/* ---- Save and load (io.c): the format is in docs/tci.md ------------------------------------- */

int tci_save(const tci_train *train, const char *path, char *why);
int tci_load(const char *path, tci_train *out, char *why);

/* ---- Report (report.c) ------------------------------------------------------------------------
 */

typedef struct tci_accuracy {
  size_t samples;
  double max_error; /* relative to max |f| on the samples */
  double mean_error;
  double max_abs_f;
  double worst_x[TCI_MAX_DIMS]; /* where the largest error is */
  double worst_f, worst_train;  /* f and the train there */
} tci_accuracy;

/* Compare the train with the function on `samples` random grid points (seeded). */
int tci_accuracy_check(const tci_train *train, const tci_function *function, size_t samples,
                       uint64_t seed, tci_accuracy *out, char *why);

/* Small helpers shared by the files. */
uint64_t tci_rng_next(uint64_t *state);
double tci_seconds(void);

#endif
