/* benches/bench_shapes.c: what a never-seen shape costs. A stream of shapes, each new to
 * the process, goes through one route on a held budget-1 session pinned to one CPU; for
 * every shape the first call is timed alone, then the same call again (the shape now
 * cached: plan, kernels); a figure is the median over the stream. Routes, f64 and c128:
 *   - tl_gemm_into, m, n, k drawn from 1..64;
 *   - tl_einsum_into "ij,jk->ik" (extents 1..64), "asb,bsc->ac" (bonds 2..48, s 2..4) and
 *     the four-operand MPS environment step "ab,asc,btd,st->cd" (bonds 2..32, s, t 2..4).
 * The aim (issue 9) is first <= 5 us + 2 x cached; the bound is printed beside each pair.
 * Every shape (route, dtype, extents) is used once per run: the first call is a real miss
 * of tenlane's caches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_session.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"

static void die(const char *what, tl_status status) { tl_bench_die("bench_shapes", what, status); }

enum { ROUTE_GEMM, ROUTE_MATMUL, ROUTE_THREE, ROUTE_FOUR, ROUTES };

static const char *route_name[ROUTES] = {"tl_gemm_into m,n,k<=64", "einsum ij,jk->ik <=64",
                                         "einsum asb,bsc->ac", "einsum ab,asc,btd,st->cd"};

/* Shapes already used in this run (route, dtype, extents), so none is drawn twice. */
#define SEEN_SLOTS (1 << 16)
static uint64_t seen[SEEN_SLOTS];

static int first_use(uint64_t key) {
  key = key * 0x9e3779b97f4a7c15ull + 1;
  for (uint64_t i = key >> 48;; i = (i + 1) % SEEN_SLOTS) {
    if (seen[i] == key) return 0;
    if (seen[i] == 0) {
      seen[i] = key;
      return 1;
    }
  }
}

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static int64_t draw(int64_t lo, int64_t hi) {
  rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
  return lo + (int64_t)(rng_state % (uint64_t)(hi - lo + 1));
}

static void make(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *t) {
  tl_status status = tl_tensor_create(dtype, rank, shape, t);
  if (status != TL_OK) die("tl_tensor_create", status);
  double *d = t->data;
  int64_t reals = tl_tensor_numel(t) * (dtype == TL_C128 ? 2 : 1);
  for (int64_t i = 0; i < reals; i++) d[i] = sin(0.37 * (double)i + 0.1);
}

typedef struct call {
  tl_exec *exec;
  int route;
  int n;
  tl_tensor in[4], out;
} call;

static const char *spec_of(int route) {
  return route == ROUTE_MATMUL  ? "ij,jk->ik"
         : route == ROUTE_THREE ? "asb,bsc->ac"
                                : "ab,asc,btd,st->cd";
}

static void run(call *c) {
  tl_status status;
  if (c->route == ROUTE_GEMM) {
    status = tl_gemm_into(c->exec, tl_scalar_real(1.0), &c->in[0], &c->in[1], tl_scalar_real(0.0),
                          &c->out);
  } else {
    const tl_tensor *ops[4] = {&c->in[0], &c->in[1], &c->in[2], &c->in[3]};
    status = tl_einsum_into(c->exec, spec_of(c->route), c->n, ops, &c->out);
  }
  if (status != TL_OK) die(route_name[c->route], status);
}

/* Draw a new shape for the route and make its tensors. */
static void setup(call *c, int route, tl_dtype dtype) {
  int64_t e[4];
  uint64_t key;
  do {
    if (route == ROUTE_GEMM || route == ROUTE_MATMUL) {
      e[0] = draw(1, 64), e[1] = draw(1, 64), e[2] = draw(1, 64), e[3] = 0;
    } else if (route == ROUTE_THREE) {
      e[0] = draw(2, 48), e[1] = draw(2, 48), e[2] = draw(2, 48), e[3] = draw(2, 4);
    } else {
      e[0] = draw(2, 32), e[1] = draw(2, 32), e[2] = draw(2, 32), e[3] = draw(2, 4);
    }
    key = (uint64_t)route << 60 | (uint64_t)dtype << 56 | (uint64_t)e[0] << 36 |
          (uint64_t)e[1] << 24 | (uint64_t)e[2] << 12 | (uint64_t)e[3];
  } while (!first_use(key));
  c->route = route;
  if (route == ROUTE_GEMM || route == ROUTE_MATMUL) {
    int64_t m = e[0], n = e[1], k = e[2];
    int64_t sa[2] = {m, k}, sb[2] = {k, n}, sc[2] = {m, n};
    make(dtype, 2, sa, &c->in[0]);
    make(dtype, 2, sb, &c->in[1]);
    make(dtype, 2, sc, &c->out);
    c->n = 2;
  } else if (route == ROUTE_THREE) {
    int64_t a = e[0], b = e[1], cc = e[2], s = e[3];
    int64_t s0[3] = {a, s, b}, s1[3] = {b, s, cc}, so[2] = {a, cc};
    make(dtype, 3, s0, &c->in[0]);
    make(dtype, 3, s1, &c->in[1]);
    make(dtype, 2, so, &c->out);
    c->n = 2;
  } else {
    /* L[a,b] A[a,s,c] B[b,t,d] W[s,t] -> [c,d]; t drawn as s+1 capped at 4 */
    int64_t a = e[0], b = e[1], cd = e[2], s = e[3], t = s == 4 ? 2 : s + 1;
    int64_t s0[2] = {a, b}, s1[3] = {a, s, cd}, s2[3] = {b, t, cd}, s3[2] = {s, t},
            so[2] = {cd, cd};
    make(dtype, 2, s0, &c->in[0]);
    make(dtype, 3, s1, &c->in[1]);
    make(dtype, 3, s2, &c->in[2]);
    make(dtype, 2, s3, &c->in[3]);
    make(dtype, 2, so, &c->out);
    c->n = 4;
  }
}

static void teardown(call *c) {
  for (int i = 0; i < c->n; i++) tl_tensor_release(&c->in[i]);
  tl_tensor_release(&c->out);
}

int main(int argc, char **argv) {
  tl_bench_env env;
  if (tl_bench_env_init(argc, argv, &env) != 0) return 2;
  if (env.cpu_count > 0) tl_bench_pin_self(env.cpus[0]);
  tl_bench_held held;
  tl_bench_held_open(&held, "bench_shapes", 1, 0, TL_NOWAIT);
  int quick = env.opt.rounds <= 2 && env.opt.per_round <= 200;
  int shapes = quick ? 20 : 300;

  tl_bench_table table;
  tl_bench_table_init(&table, "new shapes (1 thread)", env.round_trip, &env.opt);
  static char names[2 * ROUTES][2][96];
  static char lines[2 * ROUTES][160];
  int line_count = 0;
  uint64_t *first = malloc(sizeof(uint64_t) * (size_t)shapes);
  uint64_t *cached = malloc(sizeof(uint64_t) * (size_t)shapes);
  if (first == NULL || cached == NULL) return 1;
  const tl_dtype dtypes[2] = {TL_F64, TL_C128};
  /* Warm the library once (provider start-up is a once-per-process cost, not a shape's). */
  call warm;
  memset(&warm, 0, sizeof warm);
  warm.exec = held.exec;
  setup(&warm, ROUTE_THREE, TL_F64);
  run(&warm);
  teardown(&warm);
  for (int d = 0; d < 2; d++) {
    for (int route = 0; route < ROUTES; route++) {
      for (int s = 0; s < shapes; s++) {
        call c;
        memset(&c, 0, sizeof c);
        c.exec = held.exec;
        setup(&c, route, dtypes[d]);
        uint64_t t0 = tl_bench_now_ns();
        run(&c);
        first[s] = tl_bench_now_ns() - t0;
        /* past the JIT threshold: the cached call is the steady state's */
        for (int r = 0; r < 4; r++) run(&c);
        uint64_t best = UINT64_MAX;
        for (int r = 0; r < 3; r++) {
          t0 = tl_bench_now_ns();
          run(&c);
          uint64_t t = tl_bench_now_ns() - t0;
          if (t < best) best = t;
        }
        cached[s] = best;
        teardown(&c);
      }
      tl_bench_stats f = tl_bench_stats_of(first, (size_t)shapes);
      /* the cached figure of a shape is its best of three, the row's median over shapes */
      tl_bench_stats k = tl_bench_stats_of(cached, (size_t)shapes);
      int row = d * ROUTES + route;
      const char *dn = d == 0 ? "f64" : "c128";
      snprintf(names[row][0], sizeof names[row][0], "cached call %s %s", route_name[route], dn);
      snprintf(names[row][1], sizeof names[row][1], "first call %s %s", route_name[route], dn);
      tl_bench_table_add(&table, names[row][0], k, NULL, NULL);
      tl_bench_table_add(&table, names[row][1], f, names[row][0], &k);
      double bound = 5000.0 + 2.0 * k.median_ns;
      snprintf(lines[line_count++], sizeof lines[0], "%-44s | first %8.2f us | aim %8.2f us | %s",
               names[row][1], f.median_ns / 1e3, bound / 1e3,
               f.median_ns <= bound ? "met" : "missed");
    }
  }
  tl_bench_table_print(&table, stdout);
  printf("# first call against the aim 5 us + 2 x cached (medians over %d shapes)\n", shapes);
  for (int i = 0; i < line_count; i++) printf("# %s\n", lines[i]);
  free(first);
  free(cached);
  tl_bench_held_close(&held);
  return 0;
}
