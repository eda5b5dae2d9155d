/* benches/bench_einsum.c: the N-ary einsum `pi,qj,ijkl,rk,sl->pqrs` (a four-sided basis
 * change of a 4-index tensor) at N = 10, 24, 48, f64, one thread pinned to one CPU:
 *   - path search: tl_einsum_path (parse, plan, greedy and exact search), aim < 1 ms;
 *   - FLOPs of the chosen path against the exact optimum and the greedy path;
 *   - tl_einsum_into on a held budget-1 session (plan cached) against the same four
 *     contractions sequenced by hand as single-threaded provider GEMM calls on strided
 *     blocks (no permutes: 1 + N^2 + N + 1 calls), the best a caller could write by hand.
 * Contestants alternate in rounds. The FLOP lines are printed as `name | value | anchor |
 * ratio` beside the timing table (they are not rows of scripts/run-benches). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_session.h"
#include "kernels/kernels.h"
#include "tenlane/einsum.h"
#include "tenlane/session.h"

static void die(const char *what, tl_status status) { tl_bench_die("bench_einsum", what, status); }

static const char *spec = "pi,qj,ijkl,rk,sl->pqrs";

typedef struct problem {
  int64_t n;
  tl_exec *exec;
  tl_tensor p, q, x, r, s, out;
  double *t1, *t2, *t3, *hand; /* by-hand intermediates and result */
  tl_einsum_path_info info;
} problem;

static void run_path(void *arg) {
  problem *pr = arg;
  int ranks[5] = {2, 2, 4, 2, 2};
  const int64_t *shapes[5] = {pr->p.shape, pr->q.shape, pr->x.shape, pr->r.shape, pr->s.shape};
  tl_status status = tl_einsum_path(TL_EINSUM_PATH_AUTO, spec, 5, ranks, shapes, &pr->info);
  if (status != TL_OK) die("tl_einsum_path", status);
}

static void run_einsum(void *arg) {
  problem *pr = arg;
  const tl_tensor *ops[5] = {&pr->p, &pr->q, &pr->x, &pr->r, &pr->s};
  tl_status status = tl_einsum_into(pr->exec, spec, 5, ops, &pr->out);
  if (status != TL_OK) die("tl_einsum_into", status);
}

/* The optimal order by hand, column-major throughout:
 *   t1[p,j,k,l] = sum_i P[p,i] X[i,j,k,l]    one GEMM  (N x N) (N x N^3)
 *   t2[p,q,k,l] = sum_j t1[p,j,kl] Q[q,j]    N^2 GEMMs (N x N) (N x N)^T
 *   t3[p,q,r,l] = sum_k t2[pq,k,l] R[r,k]    N GEMMs   (N^2 x N) (N x N)^T
 *   out[pqr,s]  = sum_l t3[pqr,l] S[s,l]     one GEMM  (N^3 x N) (N x N)^T */
static void run_hand(void *arg) {
  problem *pr = arg;
  int64_t n = pr->n, n2 = n * n, n3 = n2 * n;
  tl_scalar one = tl_scalar_real(1.0), zero = tl_scalar_real(0.0);
  const double *P = pr->p.data, *Q = pr->q.data, *X = pr->x.data, *R = pr->r.data, *S = pr->s.data;
  tl__gemm_serial(TL_F64, n, n3, n, one, P, 1, n, X, 1, n, zero, pr->t1, 1, n, NULL);
  for (int64_t kl = 0; kl < n2; kl++) {
    tl__gemm_serial(TL_F64, n, n, n, one, pr->t1 + kl * n2, 1, n, Q, n, 1, zero, pr->t2 + kl * n2,
                    1, n, NULL);
  }
  for (int64_t l = 0; l < n; l++) {
    tl__gemm_serial(TL_F64, n2, n, n, one, pr->t2 + l * n3, 1, n2, R, n, 1, zero, pr->t3 + l * n3,
                    1, n2, NULL);
  }
  tl__gemm_serial(TL_F64, n3, n, n, one, pr->t3, 1, n3, S, n, 1, zero, pr->hand, 1, n3, NULL);
}

static void fill(tl_tensor *t) {
  double *d = t->data;
  int64_t count = tl_tensor_numel(t);
  for (int64_t i = 0; i < count; i++) d[i] = sin(0.37 * (double)i + 0.1 * (double)t->rank);
}

static void make(tl_tensor *t, int rank, int64_t n) {
  int64_t shape[4] = {n, n, n, n};
  tl_status status = tl_tensor_create(TL_F64, rank, shape, t);
  if (status != TL_OK) die("tl_tensor_create", status);
  fill(t);
}

int main(int argc, char **argv) {
  tl_bench_env env;
  if (tl_bench_env_init(argc, argv, &env) != 0) return 2;
  if (env.cpu_count > 0) tl_bench_pin_self(env.cpus[0]);
  tl_bench_held held;
  tl_bench_held_open(&held, "bench_einsum", 1, (size_t)1 << 30, TL_NOWAIT);

  tl_bench_table table;
  tl_bench_table_init(&table, "einsum pi,qj,ijkl,rk,sl->pqrs f64 1 thread", env.round_trip,
                      &env.opt);
  static const int64_t sizes[3] = {10, 24, 48};
  static char names[3][4][96];
  char flop_lines[3][256];
  for (int z = 0; z < 3; z++) {
    problem pr;
    memset(&pr, 0, sizeof pr);
    pr.n = sizes[z];
    pr.exec = held.exec;
    make(&pr.p, 2, pr.n);
    make(&pr.q, 2, pr.n);
    make(&pr.x, 4, pr.n);
    make(&pr.r, 2, pr.n);
    make(&pr.s, 2, pr.n);
    make(&pr.out, 4, pr.n);
    size_t bytes = sizeof(double) * (size_t)(pr.n * pr.n * pr.n * pr.n);
    pr.t1 = malloc(bytes);
    pr.t2 = malloc(bytes);
    pr.t3 = malloc(bytes);
    pr.hand = malloc(bytes);
    run_path(&pr);
    run_einsum(&pr);
    run_hand(&pr);
    /* The two agree (a benchmark of a wrong answer is worth nothing). */
    const double *got = pr.out.data;
    double err = 0, scale = 0;
    for (size_t i = 0; i < bytes / sizeof(double); i++) {
      err = fmax(err, fabs(got[i] - pr.hand[i]));
      scale = fmax(scale, fabs(pr.hand[i]));
    }
    if (err > 1e-9 * (scale + 1)) {
      fprintf(stderr, "bench_einsum: N=%lld einsum and by-hand results differ by %g\n",
              (long long)pr.n, err);
      return 1;
    }
    /* Per-call work differs by 10^4 between sizes: size the timed blocks to ~50 ms. */
    tl_bench_options local = env.opt;
    uint64_t t0 = tl_bench_now_ns();
    run_hand(&pr);
    double call_ns = (double)(tl_bench_now_ns() - t0);
    int per_round = (int)(5e7 / (call_ns + 1));
    if (per_round < 3) per_round = 3;
    if (per_round < local.per_round) local.per_round = per_round;
    if (local.settle_ms > 5) local.settle_ms = 5;
    tl_bench_contestant timing[2] = {
        {"by hand", run_hand, &pr, {0, 0, 0}},
        {"tl_einsum_into", run_einsum, &pr, {0, 0, 0}},
    };
    if (tl_bench_alternate(timing, 2, &local) != 0) return 1;
    tl_bench_options path_opt = env.opt;
    if (path_opt.per_round > 500) path_opt.per_round = 500;
    path_opt.settle_ms = 1;
    tl_bench_contestant path[1] = {{"path", run_path, &pr, {0, 0, 0}}};
    if (tl_bench_alternate(path, 1, &path_opt) != 0) return 1;
    snprintf(names[z][0], sizeof names[z][0], "N=%lld path search (parse+plan+greedy+exact)",
             (long long)pr.n);
    snprintf(names[z][1], sizeof names[z][1], "N=%lld by hand: %lld provider GEMMs",
             (long long)pr.n, (long long)(2 + pr.n * pr.n + pr.n));
    snprintf(names[z][2], sizeof names[z][2], "N=%lld tl_einsum_into (held session)",
             (long long)pr.n);
    tl_bench_table_add(&table, names[z][0], path[0].stats, NULL, NULL);
    tl_bench_table_add(&table, names[z][1], timing[0].stats, NULL, NULL);
    tl_bench_table_add(&table, names[z][2], timing[1].stats, names[z][1], &timing[0].stats);
    snprintf(flop_lines[z], sizeof flop_lines[z],
             "N=%lld flops of the chosen path | %.4g | optimal %.4g (greedy %.4g) | %.3f",
             (long long)pr.n, pr.info.flops, pr.info.optimal_flops, pr.info.greedy_flops,
             pr.info.flops / pr.info.optimal_flops);
    tl_tensor_release(&pr.p);
    tl_tensor_release(&pr.q);
    tl_tensor_release(&pr.x);
    tl_tensor_release(&pr.r);
    tl_tensor_release(&pr.s);
    tl_tensor_release(&pr.out);
    free(pr.t1);
    free(pr.t2);
    free(pr.t3);
    free(pr.hand);
  }
  tl_bench_table_print(&table, stdout);
  printf("# name | value | anchor | ratio\n");
  for (int z = 0; z < 3; z++) printf("# %s\n", flop_lines[z]);
  tl_bench_held_close(&held);
  return 0;
}
