/* benches/bench_kernels.c: the core numerical routes against their anchors, alternated in
 * rounds (medians), single-thread rows pinned to one CPU:
 *   - GEMM f64 n = 64, 256, 1024, 2048 through a held session (tl_gemm_into) against the
 *     best direct provider call at the same thread count: libxsmm for n = 64, BLIS with its
 *     skx context otherwise; 2 threads = two OpenMP threads each calling the provider on
 *     half of C (aim >= 0.95x);
 *   - permute: 2-D 8192^2 and 8200^2 f64 transposes, a 3-D 512x512x256 in all five
 *     non-trivial orders, a 6-D one, and in c128 a 3-D 512x512x128 (2,1,0) and the 6-D one,
 *     and the einsum benchmark's bit reversal of 3-element runs (19-D, f64 and c128), on 2
 *     threads, against a 2-thread copy of the same bytes (aim >= 0.8x);
 *   - reduce sum over one axis and axpby on strided views (every other column of a wider
 *     matrix) against a 2-thread read (sum) and triad over the same bytes (aim >= 0.85x);
 *   - tiny contraction 2x2 and 8x8 f64 tl_contract_into on a held session, ns per call,
 *     beside a direct cached libxsmm kernel call (aim < 300 ns).
 * The timing rows go to the harness table (scripts/run-benches); the rates are printed as
 * `name | value | anchor | ratio` lines after it. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if TL_PROVIDER_BLIS
#include "kernels/providers.h"
#else
#include "kernels/kernels.h"
#endif
/* libxsmm (an anchor here, never a provider of the library): its header is not warning-clean. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wshadow"
#include <libxsmm.h>
#pragma GCC diagnostic pop

#include "bench.h"
#include "bench_session.h"
#include "tenlane/context.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"

static void die(const char *what, tl_status status) { tl_bench_die("bench_kernels", what, status); }

/* ---- rate lines --------------------------------------------------------------------- */
#define MAX_LINES 64
static char lines[MAX_LINES][160];
static int line_count;
static void rate_line(const char *name, double value, const char *unit, double anchor,
                      const char *anchor_name) {
  if (line_count < MAX_LINES)
    snprintf(lines[line_count++], sizeof lines[0], "%-40s | %8.2f %-7s | %-28s %8.2f | %.3f", name,
             value, unit, anchor_name, anchor, anchor > 0 ? value / anchor : 0.0);
}

static char name_pool[128][96];
static int name_used;
static const char *name_of(const char *fmt, long long a, long long b) {
  char *s = name_pool[name_used++ % 128];
  snprintf(s, sizeof name_pool[0], fmt, a, b);
  return s;
}

/* Size a contestant's timed block to ~target ns per round. */
static tl_bench_options sized(const tl_bench_options *opt, void (*run)(void *), void *arg,
                              double target_ns) {
  tl_bench_options local = *opt;
  run(arg);
  uint64_t t0 = tl_bench_now_ns();
  run(arg);
  double call_ns = (double)(tl_bench_now_ns() - t0);
  int per_round = (int)(target_ns / (call_ns + 1));
  if (per_round < 2) per_round = 2;
  if (per_round < local.per_round) local.per_round = per_round;
  if (local.settle_ms > 5) local.settle_ms = 5;
  if (local.rounds > 7 && call_ns > 1e7) local.rounds = 7;
  return local;
}

/* ---- GEMM --------------------------------------------------------------------------- */
static int g_quick; /* --quick: small shapes only */
/* The linked provider's name (tl_kernels_provider up to its first ':', '+' or ' ':
 * "blis", "openblas", "reference"), for the anchor rows; and their names made with it. */
static char prov_label[32];
static char fmt_direct1[96], fmt_direct2[96], label_direct1[64], label_direct2[64];

static void set_provider_label(void) {
  const char *p = tl_kernels_provider();
  size_t n = strcspn(p, ":+ ");
  if (n >= sizeof prov_label) n = sizeof prov_label - 1;
  memcpy(prov_label, p, n);
  prov_label[n] = 0;
  snprintf(fmt_direct1, sizeof fmt_direct1, "gemm f64 n=%%lld %%lldt direct %s", prov_label);
  snprintf(fmt_direct2, sizeof fmt_direct2, "gemm f64 n=%%lld %%lldt direct %s (omp halves)",
           prov_label);
  snprintf(label_direct1, sizeof label_direct1, "%s direct", prov_label);
  snprintf(label_direct2, sizeof label_direct2, "%s direct x2 (omp)", prov_label);
}
#if TL_PROVIDER_BLIS
static cntx_t *blis_cntx;
static rntm_t blis_rntm;
#endif

typedef struct gemm_case {
  int64_t n;
  int threads;
  tl_exec *exec;
  tl_tensor a, b, c;
  libxsmm_dmmfunction xsmm;
} gemm_case;

static void blis_block(gemm_case *g, int64_t j0, int64_t cols) {
  double one = 1.0, zero = 0.0;
  const double *a = g->a.data, *b = g->b.data;
  double *c = g->c.data;
#if TL_PROVIDER_BLIS
  rntm_t rntm = blis_rntm;
  bli_dgemm_ex(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, g->n, cols, g->n, &one, (double *)a, 1, g->n,
               (double *)b + j0 * g->n, 1, g->n, &zero, c + j0 * g->n, 1, g->n, blis_cntx, &rntm);
#else
  /* Another provider: its GEMM through tenlane's boundary (no kernel of tenlane's). */
  tl__prov_gemm(TL_F64, g->n, cols, g->n, tl_scalar_real(one), a, 1, g->n, b + j0 * g->n, 1, g->n,
                tl_scalar_real(zero), c + j0 * g->n, 1, g->n);
#endif
}

static void run_gemm_direct1(void *arg) {
  gemm_case *g = arg;
  if (g->xsmm != NULL)
    g->xsmm(g->a.data, g->b.data, g->c.data);
  else
    blis_block(g, 0, g->n);
}

static void run_gemm_direct(void *arg) {
  gemm_case *g = arg;
  if (g->threads == 1) {
    if (g->xsmm != NULL)
      g->xsmm(g->a.data, g->b.data, g->c.data);
    else
      blis_block(g, 0, g->n);
    return;
  }
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    int64_t half = (g->n / 2 + 7) / 8 * 8;
    if (t == 0)
      blis_block(g, 0, half);
    else
      blis_block(g, half, g->n - half);
  }
}

static void run_gemm_session(void *arg) {
  gemm_case *g = arg;
  tl_status status =
      tl_gemm_into(g->exec, tl_scalar_real(1), &g->a, &g->b, tl_scalar_real(0), &g->c);
  if (status != TL_OK) die("tl_gemm_into", status);
}

static void bench_gemm(tl_bench_table *table, const tl_bench_options *opt, int threads,
                       const int *cpus, int cpu_count) {
  tl_bench_held h;
  if (threads == 1 && cpu_count > 0) tl_bench_pin_self(cpus[0]);
  if (threads > 1) tl_bench_unpin_self();
  if (threads > 1 && cpu_count >= threads) {
    /* Both 2-thread contestants on the same two CPUs, one thread each: the context's workers
     * and the OpenMP team (libgomp keeps the threads a region pinned for later regions). */
    tl_bench_held_open_pinned(&h, "bench_kernels", threads, cpus, threads, TL_WAIT);
#pragma omp parallel num_threads(2)
    tl_bench_pin_self(cpus[omp_get_thread_num()]);
  } else {
    tl_bench_held_open(&h, "bench_kernels", threads, 0, TL_WAIT);
  }
  int64_t sizes[4] = {64, 256, 1024, 2048};
  for (int z = 0; z < (g_quick ? 2 : 4); z++) {
    gemm_case g;
    memset(&g, 0, sizeof g);
    g.n = sizes[z];
    g.threads = threads;
    g.exec = h.exec;
    int64_t shape[2] = {g.n, g.n};
    tl_tensor_create(TL_F64, 2, shape, &g.a);
    tl_tensor_create(TL_F64, 2, shape, &g.b);
    tl_tensor_create(TL_F64, 2, shape, &g.c);
    for (int64_t i = 0; i < g.n * g.n; i++) {
      ((double *)g.a.data)[i] = (double)(i % 7) * 0.25;
      ((double *)g.b.data)[i] = (double)(i % 5) * 0.5;
    }
    if (g.n <= 64) {
      int flags = LIBXSMM_GEMM_FLAG_BETA_0;
      g.xsmm = libxsmm_dmmdispatch((int)g.n, (int)g.n, (int)g.n, NULL, NULL, NULL, NULL, NULL,
                                   &flags, NULL);
    }
    tl_bench_options local = sized(opt, run_gemm_direct1, &g, 5e7);
    /* The anchor at 2 threads is the better of the best 1-thread call and two OpenMP
     * threads each calling the provider on half of C (small n gains nothing from 2). */
    tl_bench_contestant c[3] = {
        {"direct", threads == 1 ? run_gemm_direct1 : run_gemm_direct, &g, {0, 0, 0}},
        {"session", run_gemm_session, &g, {0, 0, 0}},
        {"direct 1t", run_gemm_direct1, &g, {0, 0, 0}}};
    if (tl_bench_alternate(c, threads == 1 ? 2 : 3, &local) != 0) exit(1);
    int one_better = threads > 1 && c[2].stats.median_ns < c[0].stats.median_ns;
    if (one_better) c[0].stats = c[2].stats;
    const char *anchor =
        name_of(threads == 1 ? (g.xsmm ? "gemm f64 n=%lld %lldt direct libxsmm" : fmt_direct1)
                : one_better ? "gemm f64 n=%lld best direct (1t beat 2t)"
                             : fmt_direct2,
                (long long)g.n, threads);
    const char *mine = name_of("gemm f64 n=%lld %lldt tl_gemm_into", (long long)g.n, threads);
    tl_bench_table_add(table, anchor, c[0].stats, NULL, NULL);
    tl_bench_table_add(table, mine, c[1].stats, anchor, &c[0].stats);
    double flops = 2.0 * (double)g.n * (double)g.n * (double)g.n;
    rate_line(mine, flops / c[1].stats.median_ns, "GFLOP/s", flops / c[0].stats.median_ns,
              threads == 1 ? (g.xsmm ? "libxsmm direct" : label_direct1)
                           : (one_better ? "best direct (1 thread)" : label_direct2));
    tl_tensor_release(&g.a), tl_tensor_release(&g.b), tl_tensor_release(&g.c);
  }
  tl_bench_held_close(&h);
}

/* ---- memory-bound routes (2 threads) --------------------------------------------------- */
typedef struct mem_case {
  tl_exec *exec;
  tl_tensor x, out, y;
  int perm[TL_MAX_RANK];
  int axis;
  double *src, *dst, *src2;
  size_t count; /* doubles in the anchor's arrays */
  double sink;
} mem_case;

static void run_copy(void *arg) {
  mem_case *m = arg;
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    size_t half = m->count / 2, begin = t == 0 ? 0 : half, len = t == 0 ? half : m->count - half;
    memcpy(m->dst + begin, m->src + begin, len * sizeof(double));
  }
}

static void run_read(void *arg) {
  mem_case *m = arg;
  double total = 0;
#pragma omp parallel for num_threads(2) reduction(+ : total) schedule(static)
  for (size_t i = 0; i < m->count; i++) total += m->src[i];
  m->sink += total;
}

static void run_triad(void *arg) {
  mem_case *m = arg;
  double *restrict a = m->dst;
  const double *restrict b = m->src, *restrict c = m->src2;
#pragma omp parallel for num_threads(2) schedule(static)
  for (size_t i = 0; i < m->count; i++) a[i] = 2.0 * b[i] + 0.5 * c[i];
}

static void run_permute(void *arg) {
  mem_case *m = arg;
  tl_status status = tl_permute_into(m->exec, &m->x, m->perm, &m->out);
  if (status != TL_OK) die("tl_permute_into", status);
}

static void run_reduce(void *arg) {
  mem_case *m = arg;
  tl_status status = tl_reduce_into(m->exec, TL_REDUCE_SUM, &m->x, 1, &m->axis, &m->out);
  if (status != TL_OK) die("tl_reduce_into", status);
}

static void run_axpby(void *arg) {
  mem_case *m = arg;
  tl_status status = tl_axpby(m->exec, tl_scalar_real(2.0), &m->x, tl_scalar_real(0.5), &m->y);
  if (status != TL_OK) die("tl_axpby", status);
}

static double *big_array(size_t count) {
  double *p = aligned_alloc(64, (count * sizeof(double) + 63) / 64 * 64);
  if (p == NULL) {
    fprintf(stderr, "bench_kernels: out of memory\n");
    exit(1);
  }
#pragma omp parallel for num_threads(2) schedule(static)
  for (size_t i = 0; i < count; i++) p[i] = (double)(i % 1000) * 1e-3;
  return p;
}

static void bench_permute(tl_bench_table *table, const tl_bench_options *opt, tl_exec *exec,
                          const char *label, tl_dtype dtype, int rank, const int64_t *shape,
                          const int *perm) {
  mem_case m;
  memset(&m, 0, sizeof m);
  m.exec = exec;
  int64_t oshape[TL_MAX_RANK];
  size_t count = 1;
  for (int k = 0; k < rank; k++)
    oshape[k] = shape[perm[k]], count *= (size_t)shape[k], m.perm[k] = perm[k];
  count *= tl_dtype_size(dtype) / sizeof(double); /* the anchor copies the same bytes */
  m.count = count;
  m.src = big_array(count);
  m.dst = big_array(count);
  tl_tensor_wrap(dtype, rank, shape, NULL, m.src, 0, &m.x);
  tl_tensor_wrap(dtype, rank, oshape, NULL, m.dst, 0, &m.out);
  tl_bench_options local = sized(opt, run_copy, &m, 3e8);
  tl_bench_contestant c[2] = {{"copy", run_copy, &m, {0, 0, 0}},
                              {"permute", run_permute, &m, {0, 0, 0}}};
  if (tl_bench_alternate(c, 2, &local) != 0) exit(1);
  const char *anchor =
      name_of("copy %s (%lld MB) 2t", (long long)(intptr_t)label, (long long)(count * 8 >> 20));
  (void)anchor;
  char *an = name_pool[name_used++ % 128];
  snprintf(an, sizeof name_pool[0], "copy same bytes as %s 2t", label);
  char *mine = name_pool[name_used++ % 128];
  snprintf(mine, sizeof name_pool[0], "permute %s 2t", label);
  tl_bench_table_add(table, an, c[0].stats, NULL, NULL);
  tl_bench_table_add(table, mine, c[1].stats, an, &c[0].stats);
  double bytes = 2.0 * (double)count * 8.0; /* read + write */
  rate_line(mine, bytes / c[1].stats.median_ns, "GB/s", bytes / c[0].stats.median_ns,
            "copy (memcpy, 2 threads)");
  free(m.src), free(m.dst);
}

static void bench_streams(tl_bench_table *table, const tl_bench_options *opt, tl_exec *exec) {
  /* x, y: every other column of 8192 x 8192 bases, i.e. 8192 x 4096 views */
  const int64_t rows = 8192, cols = 4096;
  size_t base_count = (size_t)rows * (size_t)(2 * cols);
  mem_case m;
  memset(&m, 0, sizeof m);
  m.exec = exec;
  double *bx = big_array(base_count), *by = big_array(base_count);
  int64_t shape[2] = {rows, cols}, strides[2] = {1, 2 * rows}, rshape0[1] = {cols},
          rshape1[1] = {rows};
  tl_tensor_wrap(TL_F64, 2, shape, strides, bx, 0, &m.x);
  tl_tensor_wrap(TL_F64, 2, shape, strides, by, 0, &m.y);
  m.count = (size_t)rows * (size_t)cols; /* the anchors touch the same number of doubles */
  m.src = big_array(m.count), m.src2 = big_array(m.count), m.dst = big_array(m.count);
  tl_tensor out0, out1;
  tl_tensor_create(TL_F64, 1, rshape0, &out0);
  tl_tensor_create(TL_F64, 1, rshape1, &out1);
  const char *names[3][2] = {{"read (sum) 256 MB 2t", "reduce sum axis 0 of strided view 2t"},
                             {"read (sum) 256 MB 2t", "reduce sum axis 1 of strided view 2t"},
                             {"triad 3 x 256 MB 2t", "axpby in place on strided views 2t"}};
  for (int which = 0; which < 3; which++) {
    m.axis = which == 0 ? 0 : 1;
    m.out = which == 0 ? out0 : out1;
    void (*anchor_fn)(void *) = which < 2 ? run_read : run_triad;
    void (*mine_fn)(void *) = which < 2 ? run_reduce : run_axpby;
    tl_bench_options local = sized(opt, anchor_fn, &m, 3e8);
    tl_bench_contestant c[2] = {{"anchor", anchor_fn, &m, {0, 0, 0}},
                                {"route", mine_fn, &m, {0, 0, 0}}};
    if (tl_bench_alternate(c, 2, &local) != 0) exit(1);
    if (which != 1) tl_bench_table_add(table, names[which][0], c[0].stats, NULL, NULL);
    tl_bench_table_add(table, names[which][1], c[1].stats, names[which][0], &c[0].stats);
    double bytes = (which < 2 ? 1.0 : 3.0) * (double)m.count * 8.0;
    rate_line(names[which][1], bytes / c[1].stats.median_ns, "GB/s", bytes / c[0].stats.median_ns,
              which < 2 ? "read (sum, 2 threads)" : "triad (2 threads)");
  }
  tl_tensor_release(&out0), tl_tensor_release(&out1);
  free(bx), free(by), free(m.src), free(m.src2), free(m.dst);
}

/* ---- tiny contraction ----------------------------------------------------------------- */
typedef struct tiny_case {
  tl_exec *exec;
  tl_tensor a, b, c;
  libxsmm_dmmfunction xsmm;
} tiny_case;

static const int lab_a[2] = {0, 1}, lab_b[2] = {1, 2}, lab_c[2] = {0, 2};

static void run_tiny(void *arg) {
  tiny_case *t = arg;
  tl_status status = tl_contract_into(t->exec, lab_c, &t->a, lab_a, &t->b, lab_b, &t->c);
  if (status != TL_OK) die("tl_contract_into", status);
}

static void run_tiny_direct(void *arg) {
  tiny_case *t = arg;
  t->xsmm(t->a.data, t->b.data, t->c.data);
}

static void bench_tiny(tl_bench_table *table, const tl_bench_options *opt, tl_exec *exec) {
  int64_t sizes[2] = {2, 8};
  for (int z = 0; z < 2; z++) {
    tiny_case t;
    memset(&t, 0, sizeof t);
    t.exec = exec;
    int64_t shape[2] = {sizes[z], sizes[z]};
    tl_tensor_create(TL_F64, 2, shape, &t.a);
    tl_tensor_create(TL_F64, 2, shape, &t.b);
    tl_tensor_create(TL_F64, 2, shape, &t.c);
    int flags = LIBXSMM_GEMM_FLAG_BETA_0;
    int n = (int)sizes[z];
    t.xsmm = libxsmm_dmmdispatch(n, n, n, NULL, NULL, NULL, NULL, NULL, &flags, NULL);
    tl_bench_options local = *opt;
    if (local.settle_ms > 5) local.settle_ms = 5;
    tl_bench_contestant c[2] = {{"libxsmm", run_tiny_direct, &t, {0, 0, 0}},
                                {"contract", run_tiny, &t, {0, 0, 0}}};
    if (tl_bench_alternate(c, 2, &local) != 0) exit(1);
    const char *anchor =
        name_of("libxsmm %lldx%lld kernel call (cached)", (long long)n, (long long)n);
    const char *mine =
        name_of("tl_contract_into %lldx%lld f64 held session", (long long)n, (long long)n);
    tl_bench_table_add(table, anchor, c[0].stats, NULL, NULL);
    tl_bench_table_add(table, mine, c[1].stats, anchor, &c[0].stats);
    rate_line(mine, c[1].stats.median_ns, "ns", 300.0, "aim (ns)");
    tl_tensor_release(&t.a), tl_tensor_release(&t.b), tl_tensor_release(&t.c);
  }
}

/* ---- complex against real (1 thread) ---------------------------------------------------- */
/* The complex row kernels and the unit-stride complex sums (docs/design/kernels.md, the
 * decisions of 2026-12-04): a square multiply and the sums over each axis of a column-major
 * operand (axis 0: inner mode, axis 1: outer mode) in f64, c64 and c128, alternated in one
 * run on a one-thread session. The complex rows are anchored to the f64 row of the same
 * element count (c64 has as many bytes as f64, c128 twice as many). */
typedef struct cplx_case {
  tl_exec *exec;
  tl_tensor a, b, out, sum;
  int axis;
} cplx_case;

static void run_cplx_mul(void *arg) {
  cplx_case *c = arg;
  tl_status status = tl_mul_into(c->exec, &c->a, &c->b, &c->out);
  if (status != TL_OK) die("tl_mul_into", status);
}

static void run_cplx_sum(void *arg) {
  cplx_case *c = arg;
  tl_status status = tl_reduce_into(c->exec, TL_REDUCE_SUM, &c->a, 1, &c->axis, &c->sum);
  if (status != TL_OK) die("tl_reduce_into", status);
}

static void bench_complex(tl_bench_table *table, const tl_bench_options *opt, tl_exec *exec,
                          int64_t n) {
  const tl_dtype dtypes[3] = {TL_F64, TL_C64, TL_C128};
  const char *dtype_names[3] = {"f64", "c64", "c128"};
  cplx_case cases[3];
  int64_t shape[2] = {n, n}, sum_shape[1] = {n};
  for (int d = 0; d < 3; d++) {
    memset(&cases[d], 0, sizeof cases[d]);
    cases[d].exec = exec;
    if (tl_tensor_create(dtypes[d], 2, shape, &cases[d].a) != TL_OK ||
        tl_tensor_create(dtypes[d], 2, shape, &cases[d].b) != TL_OK ||
        tl_tensor_create(dtypes[d], 2, shape, &cases[d].out) != TL_OK ||
        tl_tensor_create(dtypes[d], 1, sum_shape, &cases[d].sum) != TL_OK)
      die("tl_tensor_create", TL_E_NOMEM);
  }
  const char *ops[3] = {"mul", "sum axis 0 (inner)", "sum axis 1 (outer)"};
  for (int op = 0; op < 3; op++) {
    tl_bench_contestant c[3];
    for (int d = 0; d < 3; d++) {
      cases[d].axis = op == 2 ? 1 : 0;
      c[d].name = dtype_names[d];
      c[d].run = op == 0 ? run_cplx_mul : run_cplx_sum;
      c[d].arg = &cases[d];
      memset(&c[d].stats, 0, sizeof c[d].stats);
    }
    tl_bench_options local = sized(opt, c[2].run, c[2].arg, 3e7);
    if (tl_bench_alternate(c, 3, &local) != 0) exit(1);
    const char *anchor = NULL;
    for (int d = 0; d < 3; d++) {
      char *name = name_pool[name_used++ % 128];
      snprintf(name, sizeof name_pool[0], "%s %lld^2 %s 1t", ops[op], (long long)n, dtype_names[d]);
      tl_bench_table_add(table, name, c[d].stats, anchor, d == 0 ? NULL : &c[0].stats);
      if (d == 0) anchor = name;
    }
  }
  for (int d = 0; d < 3; d++)
    tl_tensor_release(&cases[d].a), tl_tensor_release(&cases[d].b),
        tl_tensor_release(&cases[d].out), tl_tensor_release(&cases[d].sum);
}

/* TL_BENCH_KERNELS_ONLY=gemm|permute|stream|tiny|complex runs those groups (for
 * investigation). */
static int wanted(const char *group) {
  const char *only = getenv("TL_BENCH_KERNELS_ONLY");
  return only == NULL || strstr(only, group) != NULL;
}

int main(int argc, char **argv) {
  tl_bench_env env;
  if (tl_bench_env_init(argc, argv, &env) != 0) return 2;
    /* The anchors call BLIS with the same context and one-thread runtime tenlane uses (with
     * another provider, its GEMM through the boundary); their rows name the provider. */
#if TL_PROVIDER_BLIS
  blis_cntx = tl__blis_context();
  blis_rntm = tl__blis_runtime();
#endif
  /* --quick: small shapes, a smoke run */
  int quick = env.opt.rounds <= 2 && env.opt.per_round <= 200;
  g_quick = quick;
  set_provider_label();

  tl_bench_table table;
  tl_bench_table_init(&table, "kernels (provider: see below)", env.round_trip, &env.opt);
  if (wanted("gemm")) bench_gemm(&table, &env.opt, 1, env.cpus, env.cpu_count);
  if (wanted("gemm") && env.cpu_count > 1) bench_gemm(&table, &env.opt, 2, env.cpus, env.cpu_count);

  tl_bench_unpin_self();
  tl_bench_held h2;
  tl_bench_held_open(&h2, "bench_kernels", env.cpu_count > 1 ? 2 : 1, 0, TL_WAIT);
  int64_t s2a[2] = {8192, 8192}, s2b[2] = {8200, 8200}, s3[3] = {512, 512, 256};
  int64_t s6[6] = {16, 16, 16, 16, 16, 16};
  if (quick)
    s2a[0] = s2a[1] = 1024, s2b[0] = s2b[1] = 1032, s3[0] = s3[1] = 128, s3[2] = 64,
    s6[0] = s6[1] = 8;
  int p2[2] = {1, 0};
  if (wanted("permute")) {
    bench_permute(&table, &env.opt, h2.exec, quick ? "2-D 1024^2" : "2-D 8192^2", TL_F64, 2, s2a,
                  p2);
    bench_permute(&table, &env.opt, h2.exec, quick ? "2-D 1032^2" : "2-D 8200^2", TL_F64, 2, s2b,
                  p2);
    int orders[5][3] = {{0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    const char *order_names[5] = {"3-D 512x512x256 (0,2,1)", "3-D 512x512x256 (1,0,2)",
                                  "3-D 512x512x256 (1,2,0)", "3-D 512x512x256 (2,0,1)",
                                  "3-D 512x512x256 (2,1,0)"};
    for (int o = 0; o < 5; o++)
      bench_permute(&table, &env.opt, h2.exec, order_names[o], TL_F64, 3, s3, orders[o]);
    int p6[6] = {5, 3, 1, 4, 2, 0};
    bench_permute(&table, &env.opt, h2.exec, "6-D 16^6 (5,3,1,4,2,0)", TL_F64, 6, s6, p6);
    /* complex doubles: the same 3-D bytes (the last axis halved) and the 6-D cube */
    int64_t s3c[3] = {s3[0], s3[1], s3[2] / 2};
    bench_permute(&table, &env.opt, h2.exec,
                  quick ? "3-D 128x128x32 (2,1,0) c128" : "3-D 512x512x128 (2,1,0) c128", TL_C128,
                  3, s3c, orders[4]);
    bench_permute(&table, &env.opt, h2.exec, quick ? "6-D 8x8x16^4 c128" : "6-D 16^6 c128", TL_C128,
                  6, s6, p6);
    /* The einsum benchmark's permutation network: a run of 3 kept first, 18 axes of 2
     * reversed (a bit reversal of 3-element runs; 2^14 in --quick). */
    int64_t sb[19];
    int pb[19];
    const int bits = quick ? 14 : 18;
    sb[0] = 3, pb[0] = 0;
    for (int k = 1; k <= bits; k++) sb[k] = 2, pb[k] = bits + 1 - k;
    bench_permute(&table, &env.opt, h2.exec,
                  quick ? "15-D 3x2^14 bit reversal" : "19-D 3x2^18 bit reversal", TL_F64, bits + 1,
                  sb, pb);
    bench_permute(&table, &env.opt, h2.exec,
                  quick ? "15-D 3x2^14 bit reversal c128" : "19-D 3x2^18 bit reversal c128",
                  TL_C128, bits + 1, sb, pb);
  }
  if (!quick && wanted("stream")) bench_streams(&table, &env.opt, h2.exec);
  tl_bench_held_close(&h2);

  if (env.cpu_count > 0) tl_bench_pin_self(env.cpus[0]);
  tl_bench_held hs;
  tl_bench_held_open(&hs, "bench_kernels", env.cpu_count > 1 ? 2 : 1, 0, TL_WAIT);
  if (wanted("tiny")) bench_tiny(&table, &env.opt, hs.exec);
  tl_bench_held_close(&hs);

  tl_bench_held h1;
  tl_bench_held_open(&h1, "bench_kernels", 1, 0, TL_WAIT);
  if (wanted("complex")) bench_complex(&table, &env.opt, h1.exec, quick ? 256 : 1024);
  tl_bench_held_close(&h1);

  tl_bench_table_print(&table, stdout);
  printf("\nprovider: %s\n", tl_kernels_provider());
  printf("%-40s | %-16s | %-37s | ratio\n", "name", "value", "anchor");
  for (int i = 0; i < line_count; i++) printf("%s\n", lines[i]);
  return 0;
}
