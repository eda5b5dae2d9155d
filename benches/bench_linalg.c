/* benches/bench_linalg.c: LU, QR and SVD of an n x n f64 matrix, n = 16..256, one thread
 * pinned to one CPU: tenlane's `_into` routes on a held budget-1 session against direct
 * LAPACKE calls (the high-level entries, which allocate their own workspace) on the same
 * input. LAPACK overwrites what it factors, so both sides copy the input first (tenlane into
 * its scratch, the anchor with one memcpy into its buffer). Contestants alternate in rounds;
 * aim: the anchor's median / tenlane's median >= 0.95. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_session.h"
#include "tenlane/linalg.h"
#include "tenlane/session.h"

static void die(const char *what, tl_status status) { tl_bench_die("bench_linalg", what, status); }

typedef struct problem {
  int n;
  tl_exec *exec;
  tl_tensor a, out1, out2, s;
  int64_t *pivots;
  double *work_a, *tau, *sv, *u, *vt;
  lapack_int *ipiv;
} problem;

static void tl_lu_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_lu_into(p->exec, &p->a, &p->out1, p->pivots);
  if (status != TL_OK) die("tl_lu_into", status);
}

static void lapacke_lu_run(void *arg) {
  problem *p = arg;
  memcpy(p->work_a, p->a.data, sizeof(double) * (size_t)p->n * (size_t)p->n);
  LAPACKE_dgetrf(LAPACK_COL_MAJOR, p->n, p->n, p->work_a, p->n, p->ipiv);
}

static void tl_qr_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_qr_into(p->exec, &p->a, &p->out1, &p->out2);
  if (status != TL_OK) die("tl_qr_into", status);
}

static void lapacke_qr_run(void *arg) {
  problem *p = arg;
  memcpy(p->work_a, p->a.data, sizeof(double) * (size_t)p->n * (size_t)p->n);
  LAPACKE_dgeqrf(LAPACK_COL_MAJOR, p->n, p->n, p->work_a, p->n, p->tau);
  LAPACKE_dorgqr(LAPACK_COL_MAJOR, p->n, p->n, p->n, p->work_a, p->n, p->tau);
}

static void tl_svd_run(void *arg) {
  problem *p = arg;
  tl_status status = tl_svd_into(p->exec, NULL, &p->a, &p->out1, &p->s, &p->out2, NULL);
  if (status != TL_OK) die("tl_svd_into", status);
}

static void lapacke_svd_run(void *arg) {
  problem *p = arg;
  memcpy(p->work_a, p->a.data, sizeof(double) * (size_t)p->n * (size_t)p->n);
  LAPACKE_dgesdd(LAPACK_COL_MAJOR, 'S', p->n, p->n, p->work_a, p->n, p->sv, p->u, p->n, p->vt,
                 p->n);
}

int main(int argc, char **argv) {
  tl_bench_env env;
  if (tl_bench_env_init(argc, argv, &env) != 0) return 2;
  if (env.cpu_count > 0) tl_bench_pin_self(env.cpus[0]);
  tl_bench_held held;
  tl_bench_held_open(&held, "bench_linalg", 1, 0, TL_NOWAIT);
  tl_status status;
  tl_bench_table table;
  tl_bench_table_init(&table, "linalg f64 n x n, 1 thread", env.round_trip, &env.opt);
  static const int sizes[] = {16, 32, 64, 128, 256};
  static char names[5][6][64];
  for (int z = 0; z < 5; z++) {
    problem p;
    memset(&p, 0, sizeof p);
    p.n = sizes[z];
    p.exec = held.exec;
    int64_t shape[2] = {p.n, p.n};
    if ((status = tl_tensor_create(TL_F64, 2, shape, &p.a)) != TL_OK ||
        (status = tl_tensor_create(TL_F64, 2, shape, &p.out1)) != TL_OK ||
        (status = tl_tensor_create(TL_F64, 2, shape, &p.out2)) != TL_OK ||
        (status = tl_tensor_create(TL_F64, 1, shape, &p.s)) != TL_OK) {
      die("tl_tensor_create", status);
    }
    double *a = p.a.data;
    for (int i = 0; i < p.n * p.n; i++) a[i] = sin(0.71 * i) + (i % (p.n + 1) == 0 ? 4.0 : 0.0);
    size_t bytes = sizeof(double) * (size_t)p.n * (size_t)p.n;
    p.pivots = malloc(sizeof(int64_t) * (size_t)p.n);
    p.ipiv = malloc(sizeof(lapack_int) * (size_t)p.n);
    p.work_a = malloc(bytes);
    p.tau = malloc(sizeof(double) * (size_t)p.n);
    p.sv = malloc(sizeof(double) * (size_t)p.n);
    p.u = malloc(bytes);
    p.vt = malloc(bytes);
    tl_bench_options local = env.opt;
    /* ~30 ms of timed calls per contestant per round, at most the configured count. */
    uint64_t t0 = tl_bench_now_ns();
    lapacke_svd_run(&p);
    double call_ns = (double)(tl_bench_now_ns() - t0);
    int per_round = (int)(3e7 / (call_ns + 1));
    if (per_round < 5) per_round = 5;
    if (per_round < local.per_round) local.per_round = per_round;
    if (local.settle_ms > 5) local.settle_ms = 5;
    struct {
      const char *what;
      void (*tl_run)(void *);
      void (*anchor_run)(void *);
      const char *anchor;
    } routes[3] = {
        {"lu", tl_lu_run, lapacke_lu_run, "LAPACKE_dgetrf"},
        {"qr", tl_qr_run, lapacke_qr_run, "LAPACKE_dgeqrf+dorgqr"},
        {"svd", tl_svd_run, lapacke_svd_run, "LAPACKE_dgesdd"},
    };
    for (int r = 0; r < 3; r++) {
      tl_bench_contestant contestants[2] = {
          {routes[r].anchor, routes[r].anchor_run, &p, {0, 0, 0}},
          {routes[r].what, routes[r].tl_run, &p, {0, 0, 0}},
      };
      if (tl_bench_alternate(contestants, 2, &local) != 0) return 1;
      snprintf(names[z][2 * r], sizeof names[z][0], "n=%d %s", p.n, routes[r].anchor);
      snprintf(names[z][2 * r + 1], sizeof names[z][0], "n=%d tl_%s_into", p.n, routes[r].what);
      tl_bench_table_add(&table, names[z][2 * r], contestants[0].stats, NULL, NULL);
      tl_bench_table_add(&table, names[z][2 * r + 1], contestants[1].stats, names[z][2 * r],
                         &contestants[0].stats);
    }
    tl_tensor_release(&p.a);
    tl_tensor_release(&p.out1);
    tl_tensor_release(&p.out2);
    tl_tensor_release(&p.s);
    free(p.pivots);
    free(p.ipiv);
    free(p.work_a);
    free(p.tau);
    free(p.sv);
    free(p.u);
    free(p.vt);
  }
  tl_bench_table_print(&table, stdout);
  tl_bench_held_close(&held);
  return 0;
}
