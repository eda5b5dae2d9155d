/* examples/tci/openmp.c: the same patched TCI as an OpenMP task loop, for the benchmark.
 * One task per patch; each task mallocs its own workspace and runs the patch's linear
 * algebra on a tenlane ticket entry (a child surface of its own); a task that splits spawns
 * its children as tasks. The parallel region runs on a helper thread, since the session's
 * own thread cannot enter a ticket of its own context. Results are sorted as in the phase
 * run, so the train is the same bits. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "tci_internal.h"

int tci_have_openmp(void) {
#ifdef _OPENMP
  return 1;
#else
  return 0;
#endif
}

typedef struct omp_state {
  tci_problem problem;
  tci_options options; /* the caller's, with the value cache decided */
  tl_ticket ticket;
  int threads;
  tci_queue queue; /* its lock, kept list and stats; the pending stack is unused */
  char why[TCI_WHY];
  int rc;
} omp_state;

typedef struct task_arg {
  omp_state *run;
  const tci_patch *patch;
  tci_patch_outcome outcome;
  char why[TCI_WHY];
  int rc;
} task_arg;

static int task_entry(tl_exec *exec, void *arg) {
  task_arg *ta = arg;
  size_t bytes = tci_workspace_bytes(ta->run->problem.grid, ta->run->problem.options);
  void *memory = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
  if (!memory) {
    snprintf(ta->why, TCI_WHY, "no memory for a task workspace of %zu bytes", bytes);
    return TCI_E_NOMEM;
  }
  tci_workspace *ws = tci_workspace_place(memory, ta->run->problem.grid, ta->run->problem.options);
  int rc = tci_patch_run(exec, ws, &ta->run->problem, ta->patch, NULL, NULL, &ta->outcome, ta->why);
  tci_workspace_release(ws);
  free(memory);
  return rc;
}

static void run_patch(omp_state *run, tci_patch patch) {
  task_arg ta;
  memset(&ta, 0, sizeof ta);
  ta.run = run;
  ta.patch = &patch;
  int rc = 0;
  pthread_mutex_lock(&run->queue.lock);
  int stopped = run->queue.stopped;
  pthread_mutex_unlock(&run->queue.lock);
  if (stopped) return;
  double started = tci_seconds();
  tl_status st = tl_ticket_enter(&run->ticket, task_entry, &ta, &rc);
  double seconds = tci_seconds() - started;
  pthread_mutex_lock(&run->queue.lock);
  double chain = tci_queue_timing(&run->queue, &patch, seconds);
  run->queue.stats.evaluations += ta.outcome.evaluations;
  run->queue.stats.lookups += ta.outcome.lookups;
  run->queue.stats.patches_run++;
  if ((st != TL_OK || rc) && !run->queue.stopped) {
    run->queue.stopped = 1;
    run->rc = st != TL_OK ? TCI_E_TENLANE : rc;
    snprintf(run->why, TCI_WHY, "%s", st != TL_OK ? "tl_ticket_enter failed" : ta.why);
  }
  int split = st == TL_OK && rc == 0 && ta.outcome.split;
  if (st == TL_OK && rc == 0 && !split) {
    if (run->queue.kept_count == run->queue.kept_cap) {
      size_t cap = run->queue.kept_cap * 2;
      tci_piece **p = realloc(run->queue.kept, cap * sizeof *p);
      if (p) {
        run->queue.kept = p;
        run->queue.kept_cap = cap;
      }
    }
    if (run->queue.kept_count < run->queue.kept_cap)
      run->queue.kept[run->queue.kept_count++] = ta.outcome.piece;
    else
      tci_piece_free(ta.outcome.piece);
  }
  if (split) run->queue.stats.splits++;
  pthread_mutex_unlock(&run->queue.lock);
  if (!split) return;
  for (int s = 0; s < run->problem.grid->local_dim; s++) {
    tci_patch child = patch;
    child.prefix[patch.prefix_len] = (uint8_t)s;
    child.prefix_len = patch.prefix_len + 1;
    child.chain = chain;
#ifdef _OPENMP
#pragma omp task firstprivate(child)
#endif
    run_patch(run, child);
  }
}

static void *region(void *arg) {
  omp_state *run = arg;
  tci_patch root;
  root.prefix_len = 0;
  root.chain = 0.0;
#ifdef _OPENMP
#pragma omp parallel num_threads(run->threads)
#pragma omp single
#endif
  run_patch(run, root);
  return NULL;
}

int tci_run_openmp(tl_session *session, int threads, const tci_grid *grid,
                   const tci_function *function, const tci_options *options, tci_train *out,
                   tci_stats *stats, char *why) {
  memset(out, 0, sizeof *out);
  if (!tci_have_openmp()) {
    snprintf(why, TCI_WHY, "this build has no OpenMP");
    return TCI_E_ARG;
  }
  int rc = tci_check_run(grid, function, options, why);
  if (rc) return rc;
  omp_state *run = calloc(1, sizeof *run);
  if (!run) return TCI_E_NOMEM;
  run->problem.grid = grid;
  run->problem.function = function;
  tci_options_resolve(&run->options, options, function);
  run->problem.options = &run->options;
  options = &run->options;
  run->threads = threads < 1 ? 1 : threads;
  double t0 = tci_seconds();
  rc = tci_problem_scale(grid, function, options, &run->problem.scale, why);
  if (rc == TCI_OK) rc = tci_queue_init(&run->queue, 64, why);
  if (rc == TCI_OK && tl_session_ticket(session, &run->ticket) != TL_OK) {
    snprintf(why, TCI_WHY, "tl_session_ticket: %s", tl_session_message(session));
    tci_queue_destroy(&run->queue);
    rc = TCI_E_TENLANE;
  }
  if (rc) {
    free(run);
    return rc;
  }
  pthread_t helper;
  if (pthread_create(&helper, NULL, region, run) != 0) {
    snprintf(why, TCI_WHY, "could not start the OpenMP helper thread");
    rc = TCI_E_NOMEM;
  } else {
    pthread_join(helper, NULL);
    rc = run->rc;
    if (rc) snprintf(why, TCI_WHY, "%s", run->why);
  }
  if (stats) {
    *stats = run->queue.stats;
    stats->seconds = tci_seconds() - t0;
    stats->lanes = run->threads;
  }
  if (rc == TCI_OK) {
    out->grid = *grid;
    out->count = run->queue.kept_count;
    out->pieces = run->queue.kept;
    run->queue.kept = NULL;
    run->queue.kept_count = 0;
    tci_train_sort(out);
  }
  tci_queue_destroy(&run->queue);
  free(run);
  return rc;
}
