/* benches/bench_eigh_cancel.c: how long tl_eigh's tridiagonal solver (src/linalg/tridiag.c)
 * runs on after its cancel flag goes up, its longest uncancellable piece, on the tridiagonal
 * form of a random symmetric matrix of order n (Dumitriu and Edelman's model of the GOE's:
 * d_i normal of variance 2, e_i chi with n - 1 - i degrees of freedom; one unreduced block
 * with little deflation, as tl_eigh sees for a random dense matrix), one thread.
 *
 * For each n, dtype (f64, f32) and path: one uncancelled solve records the time of every
 * piece (the pause hook TL__PAUSE_TRIDIAG_PIECE, passed as each piece begins) and finds the
 * longest; then `reps` solves raise the flag from the hook as that piece begins and time
 * from the raise to the solver's return: the median, min and max are printed. Paths: with
 * vectors "merge" (tridiag.c's own merges, chunked above order 362) and "laed1" (every merge
 * one LAPACK laed1 call, tl__tridiag_by_lapack = 1: the solver before the merges were torn),
 * without vectors "ql" (tridiag.c's QL iteration in windows of eigenvalues above order 362)
 * and "sterf" (one sterf call per block, tl__tridiag_by_lapack = 1). The solver runs inside a route
 * call of the surface (tl__exec_begin), as in tl_eigh, so that tenlane's dgemm_ sees the flag and
 * returns zeros, as it does in laed1's product under tl_eigh.
 *
 * Run: build/benches/cancel/bench_eigh_cancel [--values] [n ...] (default 1000 2000 4000;
 * reps 5, 3 at n >= 4000; --values: the rows without vectors only). --whole [--values]
 * [n ...]: the whole tl_eigh call in f64, c128 (n <= 2000) and f32, with vectors and without
 * (--values: without only); reps 3, 1 at n >= 4000 (see whole() below). --rows [--quick]:
 * run-benches' rows (n = 1000; median "merge", anchor "laed1"; time from raise to return). Needs
 * the Release build for figures worth citing. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "bench.h"
#include "bench_session.h"
#include "exec/exec.h"
#include "linalg/linalg_int.h"
#include "tenlane/ops.h"

#define MAX_PIECES 65536

static uint64_t stamps[MAX_PIECES];
static atomic_int passes;
static int raise_at;
static tl_exec *target;
static uint64_t raised_ns;

static unsigned char sites[MAX_PIECES];
static int whole_call; /* --whole: every look of the route counts, not only the solver's */

static void hook(tl__pause_site site) {
  if (site != TL__PAUSE_TRIDIAG_PIECE && !(whole_call && site == TL__PAUSE_LINALG_STEP)) return;
  int pass = atomic_fetch_add(&passes, 1) + 1;
  uint64_t now = tl_bench_now_ns();
  if (pass <= MAX_PIECES) stamps[pass - 1] = now, sites[pass - 1] = (unsigned char)site;
  if (pass == raise_at) {
    raised_ns = now;
    tl_exec_cancel(target);
  }
}

typedef struct run_result {
  int pieces;       /* pauses passed */
  int longest_at;   /* the piece (1-based) that ran longest */
  double longest_s; /* its duration */
  double total_s;   /* the whole solve */
  double after_s;   /* raise to return (cancelled runs) */
} run_result;

/* The solver's buffers, allocated and touched once for the largest n (tl_eigh takes them
 * from the session's scratch, which stays mapped between calls: fresh pages on every run
 * would time the kernel's page faults). */
static char *d, *e, *z, *work;
static lapack_int *iwork;

static void buffers(int64_t n) {
  size_t bytes = (size_t)TL__TRIDIAG_WORK(n) * sizeof(double);
  d = malloc((size_t)n * sizeof(double)), e = malloc((size_t)n * sizeof(double));
  z = malloc((size_t)(n * n) * sizeof(double)), work = malloc(bytes);
  iwork = malloc((size_t)TL__TRIDIAG_IWORK(n) * sizeof(lapack_int));
  if (!d || !e || !z || !work || !iwork) {
    fprintf(stderr, "bench_eigh_cancel: out of memory at n = %lld\n", (long long)n);
    exit(1);
  }
  memset(z, 0, (size_t)(n * n) * sizeof(double));
  memset(work, 0, bytes);
  memset(iwork, 0, (size_t)TL__TRIDIAG_IWORK(n) * sizeof(lapack_int));
}

static run_result solve(tl_exec *exec, tl_dtype real, int64_t n, const double *d0, const double *e0,
                        int vectors, int by_laed1, int raise) {
  for (int64_t i = 0; i < n; i++) {
    if (real == TL_F32) {
      ((float *)d)[i] = (float)d0[i];
      ((float *)e)[i] = (float)e0[i];
    } else {
      ((double *)d)[i] = d0[i];
      ((double *)e)[i] = e0[i];
    }
  }
  atomic_store(&passes, 0);
  raise_at = raise;
  target = exec;
  tl__tridiag_by_lapack = by_laed1;
  uint64_t start = tl_bench_now_ns();
  tl_status status = tl__exec_begin(exec, "bench_eigh_cancel");
  if (status == TL_OK) {
    status = tl__tridiag_solve(exec, "bench_eigh_cancel", real, n, d, e, vectors ? z : NULL,
                               (lapack_int)n, vectors ? work : NULL, vectors ? iwork : NULL);
    status = tl__exec_end(exec, status);
  }
  uint64_t end = tl_bench_now_ns();
  tl__tridiag_by_lapack = 0;
  if (status != (raise > 0 ? TL_E_CANCELLED : TL_OK))
    tl_bench_die("bench_eigh_cancel", "solve", status);
  if (raise > 0) tl_exec_cancel_clear(exec);
  run_result r = {atomic_load(&passes), 0, 0.0, (double)(end - start) * 1e-9, 0.0};
  int recorded = r.pieces < MAX_PIECES ? r.pieces : MAX_PIECES;
  for (int i = 0; i < recorded; i++) {
    uint64_t next = i + 1 < recorded ? stamps[i + 1] : end;
    double s = (double)(next - stamps[i]) * 1e-9;
    if (s > r.longest_s) r.longest_s = s, r.longest_at = i + 1;
  }
  if (raise > 0) r.after_s = (double)(end - raised_ns) * 1e-9;
  return r;
}

static uint64_t state;
static double gaussian(void) { /* Box and Muller */
  state = state * 6364136223846793005u + 1442695040888963407u;
  double u = ((double)(state >> 11) + 0.5) / 9007199254740992.0;
  state = state * 6364136223846793005u + 1442695040888963407u;
  double v = (double)(state >> 11) / 9007199254740992.0;
  return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* One line (or one row): the uncancelled run, then reps runs raised at its longest piece.
 * Returns the median raise-to-return time. */
static double measure(tl_exec *exec, tl_dtype real, int64_t n, const double *d0, const double *e0,
                      int vectors, int by_laed1, int reps, int rows, double *max_out) {
  const char *path = !vectors ? (by_laed1 ? "sterf" : "ql") : by_laed1 ? "laed1" : "merge";
  run_result whole = solve(exec, real, n, d0, e0, vectors, by_laed1, 0);
  double after[16];
  for (int r = 0; r < reps; r++) {
    after[r] = solve(exec, real, n, d0, e0, vectors, by_laed1, whole.longest_at).after_s;
  }
  qsort(after, (size_t)reps, sizeof(double), by_value);
  double median = reps % 2 ? after[reps / 2] : 0.5 * (after[reps / 2 - 1] + after[reps / 2]);
  if (max_out) *max_out = after[reps - 1];
  if (!rows) {
    printf("%6lld  %s  %-7s  %-5s  %6d  %8.3f  %6d  %8.4f  %8.4f  %8.4f  %8.4f  %d\n", (long long)n,
           real == TL_F32 ? "f32" : "f64", vectors ? "vectors" : "values", path, whole.pieces,
           whole.total_s, whole.longest_at, whole.longest_s, median, after[0], after[reps - 1],
           reps);
    fflush(stdout);
  }
  return median;
}

/* ---- --whole: the whole tl_eigh call ----
 *
 * The steps between two looks at the flag anywhere in tl_eigh: the reduction's panels and
 * last block and the back-transformation's blocks (tl__la_cancelled, TL__PAUSE_LINALG_STEP),
 * the solver's pieces (TL__PAUSE_TRIDIAG_PIECE), and what runs before the first look
 * (copying a in, the finiteness check, scaling) and after the last (writing w and v). A step
 * is named by the phase it begins in: "reduce" (a look before the solver's first piece),
 * "solve" (a solver piece; it also holds the widening of the vectors in a complex dtype),
 * "apply" (a look after the solver), and "enter" (before the first look). The last step also
 * writes w and v. Steps are timed on a second call on the same matrix; "cold" is the longest
 * step of the first, which also touches its scratch for the first time. */

typedef struct whole_result {
  int steps;
  double total_s, after_s;
  int longest_at;            /* the step (1-based; 0: before the first look) */
  double longest_s;          /* its duration */
  const char *longest_phase; /* its phase */
  double phase_max[4];       /* enter, reduce, solve, apply */
} whole_result;

static const char *const phase_names[4] = {"enter", "reduce", "solve", "apply"};

static whole_result whole_run(tl_exec *exec, const tl_tensor *a, int vectors, int raise) {
  tl_tensor w, v;
  atomic_store(&passes, 0);
  raise_at = raise;
  target = exec;
  uint64_t start = tl_bench_now_ns();
  tl_status status = tl_eigh(exec, TL_LOWER, a, &w, vectors ? &v : NULL);
  uint64_t end = tl_bench_now_ns();
  /* Raised as the last step begins, the call has no look left and ends with TL_OK. */
  if (status != TL_OK && (raise == 0 || status != TL_E_CANCELLED))
    tl_bench_die("bench_eigh_cancel", "tl_eigh", status);
  if (status == TL_OK) {
    tl_tensor_release(&w);
    if (vectors) tl_tensor_release(&v);
  }
  if (raise > 0) tl_exec_cancel_clear(exec);
  whole_result r;
  memset(&r, 0, sizeof r);
  r.steps = atomic_load(&passes);
  r.total_s = (double)(end - start) * 1e-9;
  if (raise > 0) r.after_s = (double)(end - raised_ns) * 1e-9;
  int recorded = r.steps < MAX_PIECES ? r.steps : MAX_PIECES, solved = 0;
  for (int i = -1; i < recorded; i++) {
    uint64_t from = i < 0 ? start : stamps[i], to = i + 1 < recorded ? stamps[i + 1] : end;
    int phase = i < 0 ? 0 : sites[i] == TL__PAUSE_TRIDIAG_PIECE ? 2 : solved ? 3 : 1;
    if (i >= 0 && sites[i] == TL__PAUSE_TRIDIAG_PIECE) solved = 1;
    double step_s = (double)(to - from) * 1e-9;
    if (step_s > r.phase_max[phase]) r.phase_max[phase] = step_s;
    if (step_s > r.longest_s) {
      r.longest_s = step_s, r.longest_at = i + 1;
      r.longest_phase = phase_names[phase];
    }
  }
  return r;
}

static void whole(tl_exec *exec, const int64_t *orders, int count, int values_only) {
  printf(
      "# tl_eigh, one thread: its longest step between two looks at the flag, by phase, "
      "and raise to return with the flag raised as that step begins (seconds)\n");
  printf(
      "#    n  dtype what     steps   total_s     cold  longest  phase     enter   reduce    "
      "solve    apply   median      max  reps\n");
  const tl_dtype dtypes[3] = {TL_F64, TL_C128, TL_F32};
  for (int o = 0; o < count; o++) {
    int64_t n = orders[o], shape[2] = {n, n};
    int reps = n >= 4000 ? 1 : 3;
    for (int t = 0; t < 3; t++) {
      if (dtypes[t] == TL_C128 && n > 2000) continue; /* minutes at one thread */
      tl_tensor a;
      if (tl_tensor_create(dtypes[t], 2, shape, &a) != TL_OK ||
          tl_random_into(exec, 0x5eed + (uint64_t)n, &a) != TL_OK) {
        tl_bench_die("bench_eigh_cancel", "input", TL_E_NOMEM);
      }
      for (int vectors = values_only ? 0 : 1; vectors >= 0; vectors--) {
        /* The first call also touches its scratch for the first time: its longest step is
         * shown (cold), the steps are timed on the second. */
        whole_result cold = whole_run(exec, &a, vectors, 0);
        whole_result r = whole_run(exec, &a, vectors, 0);
        double after[16];
        for (int k = 0; k < reps; k++) {
          after[k] = r.longest_at > 0 ? whole_run(exec, &a, vectors, r.longest_at).after_s : NAN;
        }
        qsort(after, (size_t)reps, sizeof(double), by_value);
        printf(
            "%6lld  %-5s  %-7s  %5d  %8.3f  %7.4f  %7.4f  %-6s  %7.4f  %7.4f  %7.4f  %7.4f  "
            "%7.4f  %7.4f  %d\n",
            (long long)n, tl_dtype_name(dtypes[t]), vectors ? "vectors" : "values", r.steps,
            r.total_s, cold.longest_s, r.longest_s, r.longest_phase, r.phase_max[0], r.phase_max[1],
            r.phase_max[2], r.phase_max[3], after[reps / 2], after[reps - 1], reps);
        fflush(stdout);
      }
      tl_tensor_release(&a);
    }
  }
}

int main(int argc, char **argv) {
  int rows = 0, values_only = 0;
  int64_t orders[16];
  int count = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--rows") == 0) {
      rows = 1;
    } else if (strcmp(argv[i], "--quick") == 0) {
      continue;
    } else if (strcmp(argv[i], "--values") == 0) {
      values_only = 1;
    } else if (strcmp(argv[i], "--whole") == 0) {
      whole_call = 1;
    } else if (count < 16) {
      orders[count++] = atoll(argv[i]);
    }
  }
  if (count == 0 && rows) orders[count++] = 1000;
  if (count == 0) {
    orders[count++] = 1000;
    orders[count++] = 2000;
    orders[count++] = 4000;
  }
  int64_t largest = 2;
  for (int o = 0; o < count; o++) largest = orders[o] > largest ? orders[o] : largest;
  buffers(largest);
  tl_bench_held held;
  tl_bench_held_open(&held, "bench_eigh_cancel", 1, 0, TL_WAIT);
  atomic_store(&tl__pause_hook, hook);
  if (whole_call) {
    whole(held.exec, orders, count, values_only);
    atomic_store(&tl__pause_hook, NULL);
    tl_bench_held_close(&held);
    return 0;
  }
  if (!rows) {
    printf(
        "# raise to return: the flag raised as the longest piece of the uncancelled run "
        "begins (seconds)\n");
    printf(
        "#    n  dtype what     path   pieces   total_s  longest  piece_s   "
        "median       min       max  reps\n");
  }
  for (int o = 0; o < count; o++) {
    int64_t n = orders[o];
    if (n < 2) continue;
    int reps = n >= 4000 ? 3 : 5;
    double *d0 = malloc((size_t)n * sizeof(double)), *e0 = malloc((size_t)n * sizeof(double));
    if (!d0 || !e0) return 1;
    state = 0x243f6a8885a308d3u + (uint64_t)n;
    for (int64_t i = 0; i < n; i++) { /* Dumitriu and Edelman's tridiagonal of the GOE */
      d0[i] = sqrt(2.0) * gaussian();
      double chi2 = 0.0;
      for (int64_t k = 0; k < n - 1 - i; k++) {
        double g = gaussian();
        chi2 += g * g;
      }
      e0[i] = sqrt(chi2);
    }
    for (int t = 0; t < 2; t++) {
      tl_dtype real = t == 0 ? TL_F64 : TL_F32;
      if (rows) {
        if (real == TL_F32) continue;
        double mine_max = 0.0, ref_max = 0.0;
        double mine = measure(held.exec, real, n, d0, e0, 1, 0, reps, 1, &mine_max);
        double ref = measure(held.exec, real, n, d0, e0, 1, 1, reps, 1, &ref_max);
        printf(
            "row\teigh_cancel\tf64 n=%lld vectors: raise to return\t%.0f\t%.0f\tlaed1\t%.0f\tnan\n",
            (long long)n, mine * 1e9, mine_max * 1e9, ref * 1e9);
        continue;
      }
      if (!values_only) {
        measure(held.exec, real, n, d0, e0, 1, 1, reps, 0, NULL);
        measure(held.exec, real, n, d0, e0, 1, 0, reps, 0, NULL);
      }
      measure(held.exec, real, n, d0, e0, 0, 1, reps, 0, NULL);
      measure(held.exec, real, n, d0, e0, 0, 0, reps, 0, NULL);
    }
    free(d0), free(e0);
  }
  atomic_store(&tl__pause_hook, NULL);
  tl_bench_held_close(&held);
  return 0;
}
