/* tests/einsum/test_einsum_scratch.c: einsum's scratch memory. A step that needs more
 * scratch than a user's limit fails typed, the same step runs on a context with the
 * default (no limit), an allocator that gives nothing is TL_E_NOMEM with a message that
 * says so, and a stream of growing shapes grows the arena a handful of times.
 *
 * The network "ijx,jk->ik" sums x out of the first operand into scratch before the
 * contraction, so its scratch need is i*j elements, whatever the path. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_test.h"

typedef struct net {
  int64_t i, j, x, k;
  double *a, *b, *c;
  tl_tensor ta, tb, tc;
} net;

/* Column-major a[i,j,x], b[j,k], c[i,k] over malloc'ed memory (not the library's hooks). */
static void net_make(net *n, int64_t i, int64_t j, int64_t x, int64_t k) {
  n->i = i, n->j = j, n->x = x, n->k = k;
  n->a = malloc(sizeof(double) * (size_t)(i * j * x));
  n->b = malloc(sizeof(double) * (size_t)(j * k));
  n->c = malloc(sizeof(double) * (size_t)(i * k));
  TH_CHECK(n->a != NULL && n->b != NULL && n->c != NULL);
  for (int64_t p = 0; p < i * j * x; p++) n->a[p] = (double)((p * 7 + 3) % 11) - 5.0;
  for (int64_t p = 0; p < j * k; p++) n->b[p] = (double)((p * 5 + 1) % 7) - 3.0;
  int64_t sa[3] = {i, j, x}, sb[2] = {j, k}, sc[2] = {i, k};
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, sa, NULL, n->a, 0, &n->ta));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, sb, NULL, n->b, 0, &n->tb));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, sc, NULL, n->c, 0, &n->tc));
}

static void net_free(net *n) {
  free(n->a);
  free(n->b);
  free(n->c);
}

static tl_status net_run(tl_exec *exec, net *n) {
  const tl_tensor *ops[2] = {&n->ta, &n->tb};
  return tl_einsum_into(exec, "ijx,jk->ik", 2, ops, &n->tc);
}

/* Exact: every value is a small integer, so the sums are exact in f64. */
static int net_correct(const net *n) {
  for (int64_t ii = 0; ii < n->i; ii++) {
    for (int64_t kk = 0; kk < n->k; kk++) {
      double want = 0.0;
      for (int64_t jj = 0; jj < n->j; jj++) {
        double s = 0.0;
        for (int64_t xx = 0; xx < n->x; xx++) s += n->a[ii + n->i * (jj + n->j * xx)];
        want += s * n->b[jj + n->j * kk];
      }
      if (n->c[ii + n->i * kk] != want) return 0;
    }
  }
  return 1;
}

static tl_context *context_with(int threads, size_t limit) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  config.scratch_limit = limit;
  tl_context *ctx = NULL;
  TH_CHECK_OK(tl_context_create(&config, &ctx));
  return ctx;
}

/* 512 x 512 summed operand: 2 MiB of scratch. A 1 MiB limit refuses it (as the former
 * 256 MiB default refused the benchmark's 271-344 MB steps); the default context runs it. */
static void einsum_step_over_a_limit_runs_on_the_default_context(void) {
  net n;
  net_make(&n, 512, 512, 2, 3);
  tl_context *limited = context_with(1, (size_t)1 << 20);
  tl_session *session;
  TH_CHECK_OK(tl_session_open(limited, tl_owner_new(), TL_NOWAIT, &session));
  TH_CHECK_STATUS(net_run(tl_session_exec(session), &n), TL_E_SCRATCH_LIMIT);
  TH_CHECK(strstr(tl_last_message(), "scratch limit") != NULL);
  TH_CHECK_OK(tl_session_close(session));
  TH_CHECK_OK(tl_context_destroy(limited));

  th_held h;
  th_held_open(&h, 1);
  memset(n.c, 0, sizeof(double) * (size_t)(n.i * n.k));
  TH_CHECK_OK(net_run(h.exec, &n));
  TH_CHECK(net_correct(&n));
  tl_context_stats stats;
  TH_CHECK_OK(tl_context_stats_get(h.ctx, &stats));
  TH_CHECK(stats.root_scratch_bytes >= (size_t)512 * 512 * sizeof(double));
  th_held_close(&h);
  net_free(&n);
}

/* An allocator that refuses every request above `refuse_above` bytes. */
static size_t refuse_above = SIZE_MAX;
static void *picky_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (size > refuse_above) return NULL;
  size_t rounded = (size + align - 1) / align * align;
  return aligned_alloc(align, rounded);
}
static void picky_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

static void einsum_allocator_refusal_is_nomem_with_a_message(void) {
  net n;
  net_make(&n, 512, 512, 2, 3);
  tl_allocator picky = {picky_alloc, picky_free, NULL};
  tl_allocator_set(&picky);
  th_held h;
  th_held_open(&h, 1);
  refuse_above = (size_t)1 << 20;
  tl_status status = net_run(h.exec, &n);
  char message[512];
  snprintf(message, sizeof message, "%s", tl_last_message());
  refuse_above = SIZE_MAX;
  TH_CHECK_STATUS(status, TL_E_NOMEM);
  TH_CHECK(strstr(message, "allocator gave no memory") != NULL);
  /* The surface still works once the allocator gives again. */
  TH_CHECK_OK(net_run(h.exec, &n));
  TH_CHECK(net_correct(&n));
  th_held_close(&h);
  tl_allocator_set(NULL);
  net_free(&n);
}

/* 15 calls whose scratch need grows by about 21% each (14x over the stream): the arena
 * grows geometrically, so its size changes a handful of times, not once per call. */
static void einsum_growing_stream_grows_scratch_a_handful_of_times(void) {
  th_held h;
  th_held_open(&h, 1);
  size_t last = 0;
  int growths = 0;
  for (int t = 0; t < 15; t++) {
    int64_t side = (int64_t)(64.0 * (1.0 + 0.1 * t) + 0.5) + t;
    net n;
    net_make(&n, side, side, 2, 2);
    TH_CHECK_OK(net_run(h.exec, &n));
    TH_CHECK(net_correct(&n));
    net_free(&n);
    tl_context_stats stats;
    TH_CHECK_OK(tl_context_stats_get(h.ctx, &stats));
    if (stats.root_scratch_bytes != last) growths++;
    last = stats.root_scratch_bytes;
  }
  fprintf(stderr, "  scratch grew %d times over 15 growing calls, to %zu bytes\n", growths, last);
  TH_CHECK(growths >= 1 && growths <= 5);
  th_held_close(&h);
}

/* Broadcast operands (stride 0 along a label of the result) over 2^21 rows: a dense copy of
 * one is 64 MiB, past the context's 1 MiB limit, and numpy reads them where they lie. Each
 * step runs within the limit and gives the exact values (small integers) on 1 and 2 threads:
 * bi,i->b and bi,ij->bj (a's rows all alike), ib,i->b (a's columns alike), bi,bi->b with a
 * alike over b and b dense (no constant axis: the batch walks a's zero stride), and bxi,iy->bxy
 * with b and y both constant axes. */
static void einsum_broadcast_operands_take_no_dense_copy(void) {
  const int64_t rows = (int64_t)1 << 21;
  double row[4] = {1.0, -2.0, 3.0, 5.0}, vec[4] = {2.0, 1.0, -1.0, 4.0};
  double mat[4 * 3];
  for (int p = 0; p < 12; p++) mat[p] = (double)(p % 5) - 2.0;
  double *dense = malloc(sizeof(double) * (size_t)(rows / 2));
  double *out = malloc(sizeof(double) * (size_t)rows * 3);
  TH_CHECK(dense != NULL && out != NULL);
  for (int64_t p = 0; p < rows / 2; p++) dense[p] = (double)(p % 9) - 4.0;
  double dot = 0.0;
  for (int i = 0; i < 4; i++) dot += row[i] * vec[i];
  for (int threads = 1; threads <= 2; threads++) {
    tl_context *ctx = context_with(threads, (size_t)1 << 20);
    tl_session *session;
    TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
    tl_exec *exec = tl_session_exec(session);
    tl_tensor a, b, c;
    int64_t a_shape[2] = {rows, 4}, a_strides[2] = {0, 1}, v_shape[1] = {4};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, a_shape, a_strides, row, 0, &a));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, v_shape, NULL, vec, 0, &b));
    int64_t c_shape[2] = {rows, 3};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, c_shape, NULL, out, 0, &c));
    const tl_tensor *ops[2] = {&a, &b};
    memset(out, 0, sizeof(double) * (size_t)rows);
    TH_CHECK_OK(tl_einsum_into(exec, "bi,i->b", 2, ops, &c));
    for (int64_t p = 0; p < rows; p++) TH_CHECK(out[p] == dot);
    /* the same rows read as columns: ib,i->b */
    int64_t t_shape[2] = {4, rows}, t_strides[2] = {1, 0};
    tl_tensor at;
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, t_shape, t_strides, row, 0, &at));
    ops[0] = &at;
    memset(out, 0, sizeof(double) * (size_t)rows);
    TH_CHECK_OK(tl_einsum_into(exec, "ib,i->b", 2, ops, &c));
    for (int64_t p = 0; p < rows; p++) TH_CHECK(out[p] == dot);
    /* bi,ij->bj: every row of c is row * mat (c row-major, rows x 3) */
    tl_tensor m, c2;
    int64_t m_shape[2] = {4, 3};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, m_shape, NULL, mat, 0, &m));
    TH_CHECK_OK(tl_tensor_wrap_row_major(TL_F64, 2, c_shape, out, &c2));
    ops[0] = &a;
    ops[1] = &m;
    memset(out, 0, sizeof(double) * (size_t)rows * 3);
    TH_CHECK_OK(tl_einsum_into(exec, "bi,ij->bj", 2, ops, &c2));
    for (int j = 0; j < 3; j++) {
      double want = 0.0;
      for (int i = 0; i < 4; i++) want += row[i] * mat[i + 4 * j];
      for (int64_t p = 0; p < rows; p++) TH_CHECK(out[3 * p + j] == want);
    }
    /* bi,bi->b: a alike over b, b dense (2^18 rows: a dense copy of a is 8 MiB) */
    tl_tensor a3, b3, c3;
    int64_t s3[2] = {rows / 8, 4}, a3_strides[2] = {0, 1}, b3_strides[2] = {4, 1};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, s3, a3_strides, row, 0, &a3));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, s3, b3_strides, dense, 0, &b3));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, s3, NULL, out, 0, &c3));
    ops[0] = &a3;
    ops[1] = &b3;
    memset(out, 0, sizeof(double) * (size_t)rows);
    TH_CHECK_OK(tl_einsum_into(exec, "bi,bi->b", 2, ops, &c3));
    for (int64_t p = 0; p < rows / 8; p++) {
      double want = 0.0;
      for (int i = 0; i < 4; i++) want += row[i] * dense[4 * p + i];
      TH_CHECK(out[p] == want);
    }
    /* bxi,iy->bxy: b from a's stride 0, y from m's (its columns alike) */
    tl_tensor a4, m4, c4;
    int64_t a4_shape[3] = {rows / 64, 2, 4}, a4_strides[3] = {0, 4, 1};
    int64_t m4_shape[2] = {4, 32}, m4_strides[2] = {1, 0}, c4_shape[3] = {rows / 64, 2, 32};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, a4_shape, a4_strides, dense, 0, &a4));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, m4_shape, m4_strides, vec, 0, &m4));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 3, c4_shape, NULL, out, 0, &c4));
    ops[0] = &a4;
    ops[1] = &m4;
    memset(out, 0, sizeof(double) * (size_t)rows);
    TH_CHECK_OK(tl_einsum_into(exec, "bxi,iy->bxy", 2, ops, &c4));
    for (int x = 0; x < 2; x++) {
      double want = 0.0;
      for (int i = 0; i < 4; i++) want += dense[4 * x + i] * vec[i];
      for (int64_t p = 0; p < rows / 64 * 32; p++) {
        int64_t bb = p % (rows / 64), y = p / (rows / 64);
        TH_CHECK(out[bb + (rows / 64) * (x + 2 * y)] == want);
      }
    }
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
  free(dense);
  free(out);
}

/* c[b, x] = a[b] * v[x] with v broadcast along x (stride 0): x is constant in c. A slice of
 * c of 2^24 doubles (128 MiB, past the 64 MiB that go through scratch) is computed into c's
 * first column and copied along x; exact values, 1 and 2 threads, 1 MiB scratch limit. */
static void contract_constant_axis_with_a_large_slice_writes_in_place(void) {
  const int64_t rows = (int64_t)1 << 24, cols = 3;
  double *a = malloc(sizeof(double) * (size_t)rows);
  double *out = malloc(sizeof(double) * (size_t)(rows * cols));
  TH_CHECK(a != NULL && out != NULL);
  for (int64_t p = 0; p < rows; p++) a[p] = (double)(p % 13) - 6.0;
  double v = 3.0;
  for (int threads = 1; threads <= 2; threads++) {
    tl_context *ctx = context_with(threads, (size_t)1 << 20);
    tl_session *session;
    TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
    tl_tensor ta, tv, tc;
    int64_t a_shape[1] = {rows}, v_shape[1] = {cols}, v_strides[1] = {0};
    int64_t c_shape[2] = {rows, cols};
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, a_shape, NULL, a, 0, &ta));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 1, v_shape, v_strides, &v, 0, &tv));
    TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, c_shape, NULL, out, 0, &tc));
    const int a_labels[1] = {0}, v_labels[1] = {1}, c_labels[2] = {0, 1};
    memset(out, 0, sizeof(double) * (size_t)(rows * cols));
    TH_CHECK_OK(
        tl_contract_into(tl_session_exec(session), c_labels, &ta, a_labels, &tv, v_labels, &tc));
    for (int64_t x = 0; x < cols; x++)
      for (int64_t p = 0; p < rows; p++) TH_CHECK(out[p + rows * x] == a[p] * v);
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
  free(a);
  free(out);
}

TH_TEST_MAIN(TH_CASE(einsum_step_over_a_limit_runs_on_the_default_context),
             TH_CASE(einsum_allocator_refusal_is_nomem_with_a_message),
             TH_CASE(einsum_growing_stream_grows_scratch_a_handful_of_times),
             TH_CASE(einsum_broadcast_operands_take_no_dense_copy),
             TH_CASE(contract_constant_axis_with_a_large_slice_writes_in_place))
