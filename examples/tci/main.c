/* examples/tci/main.c: tenlane-tci, the adaptive patched TCI of a built-in function on
 * tenlane's lanes, and its report: run on one lane and on all lanes, compared bit for bit,
 * checked on random points and (where known) against the integral, saved on request. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "program.h"
#include "tenlane/context.h"
#include "tenlane/tenlane.h"

int tci_open(int threads, tl_context **ctx, tl_session **session) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  if (tl_context_create(&config, ctx) != TL_OK) {
    fprintf(stderr, "tenlane-tci: a context of %d threads: %s\n", threads, tl_last_message());
    return 1;
  }
  if (tl_session_open(*ctx, tl_owner_new(), TL_WAIT, session) != TL_OK) {
    fprintf(stderr, "tenlane-tci: a session: %s\n", tl_last_message());
    tl_context_destroy(*ctx);
    return 1;
  }
  return 0;
}

void tci_close(tl_context *ctx, tl_session *session) {
  tl_session_close(session);
  tl_context_destroy(ctx);
}

static int run_on(int threads, const tci_grid *grid, const tci_program *p, tci_train *train,
                  tci_stats *stats) {
  tl_context *ctx;
  tl_session *session;
  if (tci_open(threads, &ctx, &session)) return 1;
  char why[TCI_WHY];
  int rc = tci_run_lanes(session, grid, p->function, &p->options, train, stats, why);
  tci_close(ctx, session);
  if (rc) {
    fprintf(stderr, "tenlane-tci: the run on %d lane%s failed: %s\n", threads,
            threads == 1 ? "" : "s", why);
    return 1;
  }
  return 0;
}

static void print_patches(const tci_train *t) {
  printf("  bond dimension per patch (prefix:largest)");
  size_t show = t->count < 48 ? t->count : 48;
  for (size_t i = 0; i < show; i++) {
    const tci_piece *q = t->pieces[i];
    if (i % 8 == 0) printf("\n   ");
    printf(" [");
    for (int k = 0; k < q->patch.prefix_len; k++) printf("%d", q->patch.prefix[k]);
    printf("]:%d%s", q->max_rank, q->converged ? "" : "!");
  }
  if (show < t->count) printf("\n    ... and %zu more", t->count - show);
  printf("\n  ('!' marks a patch kept above the tolerance: within 4x of it, or unsplittable)\n");
}

static int report(const tci_program *p, const tci_grid *grid, const tci_train *one,
                  const tci_stats *s1, const tci_train *all, const tci_stats *sn, int threads) {
  const tci_function *f = p->function;
  char why[TCI_WHY];
  tci_accuracy acc;
  if (tci_accuracy_check(all, f, p->samples, p->options.seed + 17, &acc, why)) {
    fprintf(stderr, "tenlane-tci: the error check failed: %s\n", why);
    return 1;
  }
  int same = tci_train_identical(one, all);
  printf("tenlane-tci: %s = %s\n", f->name, f->about);
  printf("  grid %d variable%s x 2^%d points, %s (%d sites of %d); tol %g, max bond %d%s\n",
         grid->dims, grid->dims > 1 ? "s" : "", grid->bits,
         grid->layout == TCI_FUSED ? "fused" : "interleaved", grid->sites, grid->local_dim,
         p->options.tol, p->options.max_bond, p->options.patching ? "" : ", no patching");
  printf("  function evaluations   %llu (values asked for: %llu)\n",
         (unsigned long long)sn->evaluations, (unsigned long long)sn->lookups);
  printf("  patches                %zu kept (%zu TCIs run, %zu split)\n", all->count,
         sn->patches_run, sn->splits);
  printf("  largest bond dimension %d\n", tci_train_max_rank(all));
  print_patches(all);
  printf("  error on %zu random points: max %.3e, mean %.3e (relative to max|f| = %.6g)\n",
         acc.samples, acc.max_error, acc.mean_error, acc.max_abs_f);
  printf("  largest error at x = (");
  for (int v = 0; v < grid->dims; v++) printf("%s%.9g", v ? ", " : "", acc.worst_x[v]);
  printf("): f = %.12g, train = %.12g\n", acc.worst_f, acc.worst_train);
  double integral = tci_train_integral(all);
  if (f->has_integral)
    printf("  integral               %.15g (known %.15g, relative difference %.2e)\n", integral,
           f->integral, fabs(integral - f->integral) / fabs(f->integral));
  else
    printf("  integral               %.15g (grid sum times cell; no known value)\n", integral);
  printf("  time                   1 lane %.3f s, %d lanes %.3f s (%.2fx)\n", s1->seconds, threads,
         sn->seconds, sn->seconds > 0 ? s1->seconds / sn->seconds : 0.0);
  printf(
      "  lanes                  busy %.0f%% of %d x %.3f s; longest chain of patch TCIs %.3f s\n",
      sn->seconds > 0 ? 100.0 * sn->busy_seconds / (threads * sn->seconds) : 0.0, threads,
      sn->seconds, sn->chain_seconds);
  printf("  bit-identical across lane counts (1 and %d): %s\n", threads, same ? "yes" : "no");
  if (p->save) {
    if (tci_save(all, p->save, why)) {
      fprintf(stderr, "tenlane-tci: %s\n", why);
      return 1;
    }
    printf("  saved                  %s (docs/tci.md)\n", p->save);
  }
  printf("tci-check identical=%d patches=%zu max_bond=%d evaluations=%llu max_error=%.3e\n", same,
         all->count, tci_train_max_rank(all), (unsigned long long)sn->evaluations, acc.max_error);
  return same ? 0 : 1;
}

int main(int argc, char **argv) {
  tci_program p;
  int rc = tci_parse(argc, argv, &p);
  if (rc) return rc;
  if (p.help) {
    tci_usage(stdout);
    return 0;
  }
  if (p.bench) return tci_bench(&p);
  int threads = p.threads > 0 ? p.threads : (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (threads < 1) threads = 1;
  tci_grid grid;
  char why[TCI_WHY];
  if (tci_grid_init(&grid, p.function->dims, p.bits ? p.bits : p.function->bits, p.layout,
                    p.function->lo, p.function->hi, why)) {
    fprintf(stderr, "tenlane-tci: %s\n", why);
    return 2;
  }
  tci_train one, all;
  tci_stats s1, sn;
  if (run_on(1, &grid, &p, &one, &s1)) return 1;
  if (run_on(threads, &grid, &p, &all, &sn)) {
    tci_train_free(&one);
    return 1;
  }
  rc = report(&p, &grid, &one, &s1, &all, &sn, threads);
  tci_train_free(&one);
  tci_train_free(&all);
  return rc;
}
