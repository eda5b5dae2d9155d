/* examples/tci/bench.c: `tenlane-tci --bench`, one table in one run: for every built-in
 * function at tolerances 1e-6 and 1e-10, the patched TCI on all lanes and on one lane, the
 * same algorithm as an OpenMP task loop with per-task workspaces (when built with OpenMP),
 * and the plain unpatched TCI on one thread (max bond 4x, no splitting). Each row is run
 * --repeat times (default 5) on a fresh context and reports the median time. Figures are for a
 * quiet machine; the command is in docs/tci.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "program.h"

typedef struct row_ctx {
  const tci_program *p;
  const tci_function *f;
  const tci_grid *grid;
  const tci_train *reference; /* the one-lane train, for the identity column */
} row_ctx;

static int by_time(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* CPU seconds the whole process has used (every thread, user and system). */
static double process_cpu(void) {
  struct rusage r;
  if (getrusage(RUSAGE_SELF, &r)) return 0.0;
  return (double)(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * (double)(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

/* The median of n values (sorts them). */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], by_time);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void row(const row_ctx *c, const char *variant, int threads, const tci_options *o,
                int openmp, tci_train *keep) {
  tci_train train;
  tci_stats s;
  char why[TCI_WHY];
  double times[TCI_BENCH_MAX_REPEAT], busy[TCI_BENCH_MAX_REPEAT], chain[TCI_BENCH_MAX_REPEAT],
      cpu[TCI_BENCH_MAX_REPEAT];
  int reps = c->p->repeat > 0 ? c->p->repeat : 1;
  for (int r = 0; r < reps; r++) {
    tl_context *ctx;
    tl_session *session;
    if (tci_open(openmp ? 1 : threads, &ctx, &session)) return;
    tci_train again;
    double cpu0 = process_cpu();
    int rc = openmp ? tci_run_openmp(session, threads, c->grid, c->f, o, &again, &s, why)
                    : tci_run_lanes(session, c->grid, c->f, o, &again, &s, why);
    cpu[r] = process_cpu() - cpu0;
    tci_close(ctx, session);
    if (rc) {
      if (r) tci_train_free(&train);
      printf("%-9s %-6.0e %-14s %3d  failed: %s\n", c->f->name, o->tol, variant, threads, why);
      return;
    }
    times[r] = s.seconds;
    busy[r] = s.seconds > 0 ? 100.0 * s.busy_seconds / (threads * s.seconds) : 0.0;
    chain[r] = s.chain_seconds;
    if (r == 0) {
      train = again;
    } else {
      if (!tci_train_identical(&train, &again))
        printf("# %s: run %d differs from run 1\n", variant, r + 1);
      tci_train_free(&again);
    }
  }
  double busy_median = median(busy, reps), chain_median = median(chain, reps),
         cpu_median = median(cpu, reps);
  s.seconds = median(times, reps);
  tci_accuracy acc;
  memset(&acc, 0, sizeof acc);
  if (tci_accuracy_check(&train, c->f, 10000, 99, &acc, why)) acc.max_error = -1.0;
  const char *same =
      c->reference ? (tci_train_identical(c->reference, &train) ? "yes" : "no") : "-";
  printf("%-9s %-6.0e %-14s %3d %9.3f %12llu %7zu %5d %10.2e %5.0f %8.3f %7.3f  %s\n", c->f->name,
         o->tol, variant, threads, s.seconds, (unsigned long long)s.evaluations, train.count,
         tci_train_max_rank(&train), acc.max_error, busy_median, chain_median, cpu_median, same);
  fflush(stdout);
  if (keep)
    *keep = train;
  else
    tci_train_free(&train);
}

int tci_bench(const tci_program *p) {
  int threads = p->threads > 0 ? p->threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  static const double tols[2] = {1e-6, 1e-10};
  printf("# tenlane-tci --bench: max bond %d, %d lanes, layout %s, seconds: median of %d runs\n",
         p->options.max_bond, threads, p->layout == TCI_FUSED ? "fused" : "interleaved", p->repeat);
  printf("%-9s %-6s %-14s %3s %9s %12s %7s %5s %10s %5s %8s %7s  %s\n", "function", "tol",
         "variant", "thr", "seconds", "evaluations", "patches", "bond", "max_err", "busy%",
         "chain_s", "cpu_s", "same_bits_as_1_lane");
  for (size_t i = 0; i < tci_builtin_count(); i++) {
    const tci_function *f = tci_builtin_at(i);
    if (p->function_given && p->function != f) continue;
    tci_grid grid;
    char why[TCI_WHY];
    if (tci_grid_init(&grid, f->dims, p->bits ? p->bits : f->bits, p->layout, f->lo, f->hi, why))
      continue;
    for (int t = 0; t < 2; t++) {
      tci_options o = p->options;
      o.tol = tols[t];
      row_ctx c = {p, f, &grid, NULL};
      tci_train one;
      memset(&one, 0, sizeof one);
      row(&c, "lanes", 1, &o, 0, &one);
      c.reference = one.count ? &one : NULL;
      row(&c, "lanes", threads, &o, 0, NULL);
      if (tci_have_openmp()) row(&c, "openmp-tasks", threads, &o, 1, NULL);
      tci_options plain = o;
      plain.patching = 0;
      plain.max_bond = o.max_bond * 4 * grid.local_dim > TCI_PRRLU_MAX
                           ? TCI_PRRLU_MAX / grid.local_dim
                           : o.max_bond * 4;
      if (plain.max_bond > 512) plain.max_bond = 512;
      c.reference = NULL;
      row(&c, "unpatched", 1, &plain, 0, NULL);
      tci_train_free(&one);
    }
  }
  return 0;
}
