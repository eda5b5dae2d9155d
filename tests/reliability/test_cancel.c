/* tests/reliability/test_cancel.c: tl_exec_cancel on a session's root surface (issue 28,
 * Ctrl-C for single long calls, C side).
 *
 * Each case starts one long call (a matrix product, an einsum contraction, an SVD, a QR) on
 * the root surface while another thread raises the surface's flag once the call is under
 * way. The call must come back with TL_E_CANCELLED and a message naming the route, and the
 * session must work afterwards once the flag is lowered. Nothing here measures time: if the
 * call ended before the flag went up (a fast machine), the case runs again on a larger input
 * (up to a bound); a cancellation that is never seen runs into the harness alarm and ctest's
 * TIMEOUT instead of hanging. */
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fault.h"
#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/ops.h"
#include "th_fixtures.h"
#include "th_test.h"

/* ---- the canceller ---- */

typedef struct canceller {
  tl_exec *exec;
  long delay_ms;      /* how long the call runs before the flag goes up */
  atomic_int calling; /* 1 while the main thread is inside the long call */
  atomic_int raised;  /* 1 once the canceller raised the flag */
} canceller;

static int is_calling(void *arg) { return atomic_load(&((canceller *)arg)->calling); }

/* Waits for the call to begin, lets it run delay_ms, and raises the flag if it still runs. */
static void *cancel_soon(void *arg) {
  canceller *c = arg;
  if (!th_wait_until(is_calling, c, 60000)) return NULL;
  struct timespec nap = {c->delay_ms / 1000, c->delay_ms % 1000 * 1000 * 1000};
  nanosleep(&nap, NULL);
  if (atomic_load(&c->calling)) {
    tl_exec_cancel(c->exec);
    atomic_store(&c->raised, 1);
  }
  return NULL;
}

/* One long call on inputs of size n: prepare, call (between the calling marks), release. */
typedef struct long_call {
  const char *route; /* the entry point the message must name */
  const char *mid;   /* what the message says when the flag was seen inside the work */
  tl_status (*prepare)(tl_exec *exec, int64_t n, tl_tensor *in);
  tl_status (*call)(tl_exec *exec, tl_tensor *in);
  int inputs;
  /* NULL, or what the message says when the flag was seen in a step after the wanted one
   * (too late: the next run raises it sooner, on a larger input) */
  const char *late;
} long_call;

static void make_random(tl_exec *exec, int64_t rows, int64_t cols, uint64_t seed, tl_tensor *t) {
  int64_t shape[2] = {rows, cols};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, t));
  TH_CHECK_OK(tl_random_into(exec, seed, t));
}

static tl_status prepare_pair(tl_exec *exec, int64_t n, tl_tensor *in) {
  make_random(exec, n, n, 1, &in[0]);
  make_random(exec, n, n, 2, &in[1]);
  return TL_OK;
}

static tl_status prepare_one(tl_exec *exec, int64_t n, tl_tensor *in) {
  make_random(exec, n, n, 3, &in[0]);
  return TL_OK;
}

/* The product's output is made with the inputs, outside the timed call: under TSan, making
 * an 18 MB tensor takes six times as long as the product itself (0.48 s against 0.08 s at
 * n = 1536), so a flag raised in the call would mostly land before the GEMM began. */
static tl_status prepare_gemm(tl_exec *exec, int64_t n, tl_tensor *in) {
  prepare_pair(exec, n, in);
  int64_t shape[2] = {n, n};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &in[2]));
  return TL_OK;
}

static tl_status call_gemm(tl_exec *exec, tl_tensor *in) {
  return tl_gemm_into(exec, tl_scalar_real(1.0), &in[0], &in[1], tl_scalar_real(0.0), &in[2]);
}

static tl_status call_einsum(tl_exec *exec, tl_tensor *in) {
  const tl_tensor *ops[3] = {&in[0], &in[1], &in[0]};
  tl_tensor out;
  tl_status status = tl_einsum(exec, "ij,jk,kl->il", 3, ops, &out);
  if (status == TL_OK) tl_tensor_release(&out);
  return status;
}

static tl_status call_svd(tl_exec *exec, tl_tensor *in) {
  tl_tensor u, s, vt;
  tl_status status = tl_svd(exec, NULL, &in[0], &u, &s, &vt, NULL);
  if (status == TL_OK) {
    tl_tensor_release(&u);
    tl_tensor_release(&s);
    tl_tensor_release(&vt);
  }
  return status;
}

static tl_status call_qr(tl_exec *exec, tl_tensor *in) {
  tl_tensor q, r;
  tl_status status = tl_qr(exec, &in[0], &q, &r);
  if (status == TL_OK) {
    tl_tensor_release(&q);
    tl_tensor_release(&r);
  }
  return status;
}

/* Pivoted QR through its own loop of steps (a truncation that drops nothing: every step
 * runs), which checks the flag between steps. */
static tl_status call_qrcp(tl_exec *exec, tl_tensor *in) {
  tl_truncation truncation;
  tl_truncation_init(&truncation);
  tl_tensor q, r;
  int64_t rank = 0;
  int64_t *perm = malloc(sizeof(int64_t) * (size_t)in[0].shape[1]);
  TH_CHECK(perm != NULL);
  tl_status status = tl_qrcp(exec, &truncation, &in[0], &q, &r, perm, &rank);
  if (status == TL_OK) {
    tl_tensor_release(&q);
    tl_tensor_release(&r);
  }
  free(perm);
  return status;
}

/* A symmetric input for eigh (the lower triangle of a random matrix is read). */
static tl_status call_eigh(tl_exec *exec, tl_tensor *in) {
  tl_tensor w, v;
  tl_status status = tl_eigh(exec, TL_LOWER, &in[0], &w, &v);
  if (status == TL_OK) {
    tl_tensor_release(&w);
    tl_tensor_release(&v);
  }
  return status;
}

static tl_status call_lu(tl_exec *exec, tl_tensor *in) {
  tl_tensor lu;
  int64_t *pivots = malloc(sizeof(int64_t) * (size_t)in[0].shape[0]);
  TH_CHECK(pivots != NULL);
  tl_status status = tl_lu(exec, &in[0], &lu, pivots);
  if (status == TL_OK) tl_tensor_release(&lu);
  free(pivots);
  return status;
}

/* After a cancellation: a call while the flag is up is refused at once, naming the route;
 * once lowered, a small product is right. */
static void check_usable_after(tl_exec *exec) {
  double a_data[4] = {1, 2, 3, 4}, b_data[4] = {5, 6, 7, 8};
  int64_t shape[2] = {2, 2};
  tl_tensor a, b, c;
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, a_data, 0, &a));
  TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, NULL, b_data, 0, &b));
  TH_CHECK(tl_exec_cancel_requested(exec) == 1);
  TH_CHECK_STATUS(tl_gemm(exec, &a, &b, &c), TL_E_CANCELLED);
  TH_CHECK(strncmp(tl_last_message(), "tl_gemm: ", 9) == 0);
  TH_CHECK(strstr(tl_last_message(), "tl_exec_cancel_clear") != NULL);
  TH_CHECK_OK(tl_exec_cancel_clear(exec));
  TH_CHECK(tl_exec_cancel_requested(exec) == 0);
  TH_CHECK_OK(tl_gemm(exec, &a, &b, &c));
  /* Column-major 2 x 2: a = [1 3; 2 4], b = [5 7; 6 8], a b = [23 31; 34 46]. */
  const double *cd = c.data;
  TH_CHECK(cd[0] == 23 && cd[1] == 34 && cd[2] == 31 && cd[3] == 46);
  tl_tensor_release(&c);
}

/* Run `op` until a run is cancelled inside its work (the message says op->mid): a run that
 * ended before the flag went up is repeated on an input 1.5 times larger, one cancelled
 * before its work began (between the call's entry and its first block) with twice the
 * delay, one seen in a step after the wanted one (op->late) with half the delay on a larger
 * input. At most 8 runs; the input grows at most 5 times (memory). */
static void cancel_while_running(int threads, const long_call *op, int64_t n) {
  th_held held;
  th_held_open(&held, threads);
  int cancelled = 0;
  long delay_ms = 100;
  int grown = 0;
  for (int attempt = 0; attempt < 8 && !cancelled; attempt++) {
    tl_tensor in[3];
    op->prepare(held.exec, n, in);
    canceller c = {held.exec, delay_ms, 0, 0};
    th_thread thread;
    th_thread_start(&thread, cancel_soon, &c);
    atomic_store(&c.calling, 1);
    tl_status status = op->call(held.exec, in);
    char message[TL_MESSAGE_CAPACITY];
    snprintf(message, sizeof message, "%s", tl_last_message());
    atomic_store(&c.calling, 0);
    th_thread_join(&thread, 60000);
    for (int i = 0; i < op->inputs; i++) tl_tensor_release(&in[i]);
    if (status == TL_OK) {
      /* Ended before the flag went up: lower it if it went up late, and try larger. */
      fprintf(stderr, "%s at n = %lld ended before the cancel; trying a larger input\n", op->route,
              (long long)n);
      TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
      if (++grown <= 5) n = n * 3 / 2;
      continue;
    }
    if (status != TL_E_CANCELLED) fprintf(stderr, "%s: %s\n", tl_status_name(status), message);
    TH_CHECK(status == TL_E_CANCELLED);
    TH_CHECK(atomic_load(&c.raised) == 1);
    fprintf(stderr, "n = %lld: %s\n", (long long)n, message);
    TH_CHECK(strncmp(message, op->route, strlen(op->route)) == 0);
    TH_CHECK(strstr(message, "cancel") != NULL);
    TH_CHECK(strcmp(tl_session_message(held.session), message) == 0);
    TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
    if (op->late != NULL && strstr(message, op->late) != NULL) {
      fprintf(stderr, "seen after the wanted step; trying a shorter delay on a larger input\n");
      if (delay_ms > 10) delay_ms /= 2;
      if (++grown <= 5) n = n * 3 / 2;
      continue;
    }
    if (strstr(message, op->mid) == NULL) {
      fprintf(stderr, "seen before the work began; trying a longer delay\n");
      if (delay_ms < 1600) delay_ms *= 2;
      continue;
    }
    cancelled = 1;
    tl_exec_cancel(held.exec); /* raised again for check_usable_after */
  }
  TH_CHECK(cancelled);
  check_usable_after(held.exec);
  th_held_close(&held);
}

static const long_call gemm_call = {
    "tl_gemm_into", "GEMM blocks", prepare_gemm, call_gemm, 3, NULL};
static const long_call einsum_call = {"tl_einsum", "cancel", prepare_pair, call_einsum, 2, NULL};
static const long_call svd_call = {"tl_svd", "results were dropped", prepare_one, call_svd, 1,
                                   NULL};
static const long_call qr_call = {"tl_qr", "results were dropped", prepare_one, call_qr, 1, NULL};
/* Seen inside the step loop, not only after ungqr (the message names the steps); a flag
 * that came up once the steps had ended is seen in ungqr. */
static const long_call qrcp_call = {"tl_qrcp", "pivoted QR steps", prepare_one, call_qrcp, 1,
                                    "ungqr"};
/* Seen between the panels of the tridiagonal reduction or the back-transformation blocks,
 * not only once LAPACK's whole eigensolver has ended. */
static const long_call eigh_call = {"tl_eigh", "cancelled while the ", prepare_one, call_eigh, 1,
                                    NULL};
static const long_call lu_call = {"tl_lu", "results were dropped", prepare_one, call_lu, 1, NULL};

/* ---- reductions over broadcast views ----
 * A stride-0 view of 2^40 elements occupies one element of memory and takes hours to sum:
 * the flag must be seen inside a run or a row walk, not only between items. in[0] is the
 * view, in[1] the output; `n` is not used (no run ends before the flag goes up). */
static double broadcast_one[2] = {0.5, -0.25};

static tl_status wrap_broadcast(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *x) {
  const int64_t zeros[TL_MAX_RANK] = {0};
  TH_CHECK_OK(tl_tensor_wrap(dtype, rank, shape, zeros, broadcast_one, 0, x));
  return TL_OK;
}

/* ij->i over a 64 x 2^40 view: the kept axis is as dense as the reduced one, so the rows
 * stream past a block of accumulators (a row walk of 2^40 rows). */
static tl_status prepare_rows(tl_exec *exec, int64_t n, tl_tensor *in) {
  (void)exec, (void)n;
  const int64_t shape[2] = {64, (int64_t)1 << 40}, out_shape[1] = {64};
  wrap_broadcast(TL_F64, 2, shape, &in[0]);
  TH_CHECK_OK(tl_tensor_create(TL_F64, 1, out_shape, &in[1]));
  return TL_OK;
}
static tl_status call_sum_rows(tl_exec *exec, tl_tensor *in) {
  const int axes[1] = {1};
  return tl_reduce_into(exec, TL_REDUCE_SUM, &in[0], 1, axes, &in[1]);
}
static tl_status call_einsum_rows(tl_exec *exec, tl_tensor *in) {
  const tl_tensor *ops[1] = {&in[0]};
  return tl_einsum_into(exec, "ij->i", 1, ops, &in[1]);
}

/* One complex run of 2^40 elements into a scalar: the sixteen strided sums, in pieces. */
static tl_status prepare_run(tl_exec *exec, int64_t n, tl_tensor *in) {
  (void)exec, (void)n;
  const int64_t shape[1] = {(int64_t)1 << 40};
  wrap_broadcast(TL_C128, 1, shape, &in[0]);
  TH_CHECK_OK(tl_tensor_create(TL_C128, 0, NULL, &in[1]));
  return TL_OK;
}
static tl_status call_sum_run(tl_exec *exec, tl_tensor *in) {
  const int axes[1] = {0};
  return tl_reduce_into(exec, TL_REDUCE_SUM, &in[0], 1, axes, &in[1]);
}

/* The maximum of one real run of 2^40 elements: the in-order loop. */
static tl_status prepare_real_run(tl_exec *exec, int64_t n, tl_tensor *in) {
  (void)exec, (void)n;
  const int64_t shape[1] = {(int64_t)1 << 40};
  wrap_broadcast(TL_F64, 1, shape, &in[0]);
  TH_CHECK_OK(tl_tensor_create(TL_F64, 0, NULL, &in[1]));
  return TL_OK;
}
static tl_status call_max_run(tl_exec *exec, tl_tensor *in) {
  const int axes[1] = {0};
  return tl_reduce_into(exec, TL_REDUCE_MAX, &in[0], 1, axes, &in[1]);
}

/* Three outputs (kept stride 1), each the sum of 2^36 runs of 40 floats at stride 0: the
 * reduced axes are the densest, so each output walks its 2^36 rows. */
static tl_status prepare_items(tl_exec *exec, int64_t n, tl_tensor *in) {
  (void)exec, (void)n;
  static float three[3] = {1.0f, 2.0f, 3.0f};
  const int64_t shape[3] = {3, 40, (int64_t)1 << 36}, strides[3] = {1, 0, 0}, out_shape[1] = {3};
  TH_CHECK_OK(tl_tensor_wrap(TL_F32, 3, shape, strides, three, 0, &in[0]));
  TH_CHECK_OK(tl_tensor_create(TL_F32, 1, out_shape, &in[1]));
  return TL_OK;
}
static tl_status call_sum_items(tl_exec *exec, tl_tensor *in) {
  const int axes[2] = {1, 2};
  return tl_reduce_into(exec, TL_REDUCE_SUM, &in[0], 2, axes, &in[1]);
}

static const long_call sum_rows_call = {
    "tl_reduce_into", "stopped inside a run", prepare_rows, call_sum_rows, 2, NULL};
static const long_call einsum_rows_call = {
    "tl_einsum_into", "stopped inside a run", prepare_rows, call_einsum_rows, 2, NULL};
static const long_call sum_run_call = {
    "tl_reduce_into", "stopped inside a run", prepare_run, call_sum_run, 2, NULL};
static const long_call max_run_call = {
    "tl_reduce_into", "stopped inside a run", prepare_real_run, call_max_run, 2, NULL};
static const long_call sum_items_call = {
    "tl_reduce_into", "stopped inside a run", prepare_items, call_sum_items, 2, NULL};

static void cancel_reduce_broadcast_rows(void) {
  cancel_while_running(1, &sum_rows_call, 0);
  cancel_while_running(2, &sum_rows_call, 0);
  cancel_while_running(2, &einsum_rows_call, 0);
}
static void cancel_reduce_broadcast_runs(void) {
  cancel_while_running(1, &sum_run_call, 0);
  cancel_while_running(2, &sum_run_call, 0);
  cancel_while_running(1, &max_run_call, 0);
  cancel_while_running(2, &max_run_call, 0);
}
static void cancel_reduce_broadcast_items(void) {
  cancel_while_running(1, &sum_items_call, 0);
  cancel_while_running(2, &sum_items_call, 0);
}

/* ---- large elementwise work and copies on one thread ----
 * A one-thread team runs them in chunks of TL__SERIAL_CHUNK_ELEMENTS, looking at the flag
 * before each. The pause point before each serial chunk raises the flag at the second
 * chunk: the call must stop there (TL_E_CANCELLED, chunks not started). A call that runs in
 * one go passes no pause point and returns TL_OK. */
static tl_exec *chunk_exec;
static atomic_int chunk_passes;

static void raise_at_second_chunk(tl__pause_site site) {
  if (site != TL__PAUSE_SERIAL_CHUNK) return;
  if (atomic_fetch_add(&chunk_passes, 1) + 1 == 2) tl_exec_cancel(chunk_exec);
}

enum { SERIAL_MUL, SERIAL_EINSUM_DIAGONAL, SERIAL_COPY_FLAT, SERIAL_COPY_TRANSPOSED, SERIAL_KINDS };

static tl_status serial_call(tl_exec *exec, int kind, tl_tensor *a, tl_tensor *b, tl_tensor *out) {
  switch (kind) {
    case SERIAL_MUL:
      return tl_mul_into(exec, a, b, out);
    case SERIAL_EINSUM_DIAGONAL: { /* ii->i of a 2^22 x 2^22 broadcast view */
      const tl_tensor *ops[1] = {b};
      return tl_einsum_into(exec, "ii->i", 1, ops, out);
    }
    case SERIAL_COPY_FLAT:
      return tl_copy_into(exec, a, out);
    default: { /* a transposed view of a into out */
      tl_tensor t = *a;
      t.shape[0] = a->shape[1], t.shape[1] = a->shape[0];
      t.strides[0] = a->strides[1], t.strides[1] = a->strides[0];
      return tl_copy_into(exec, &t, out);
    }
  }
}

static void cancel_serial_chunks_on_one_thread(void) {
  th_held held;
  th_held_open(&held, 1);
  const int64_t side = 2048, square[2] = {side, side}, flat[1] = {side * side};
  const int64_t wide[2] = {side * side, side * side};
  for (int kind = 0; kind < SERIAL_KINDS; kind++) {
    tl_tensor a, b, out;
    const int is_flat = kind == SERIAL_COPY_FLAT || kind == SERIAL_EINSUM_DIAGONAL;
    TH_CHECK_OK(tl_tensor_create(TL_F64, is_flat ? 1 : 2, is_flat ? flat : square, &a));
    TH_CHECK_OK(tl_random_into(held.exec, 5, &a));
    if (kind == SERIAL_EINSUM_DIAGONAL)
      wrap_broadcast(TL_F64, 2, wide, &b);
    else
      TH_CHECK_OK(tl_tensor_create_like(&a, &b));
    TH_CHECK_OK(tl_tensor_create_like(&a, &out));
    /* unhooked: the call runs to the end and is right */
    TH_CHECK_OK(serial_call(held.exec, kind, &a, &b, &out));
    chunk_exec = held.exec;
    atomic_store(&chunk_passes, 0);
    atomic_store(&tl__pause_hook, raise_at_second_chunk);
    const tl_status status = serial_call(held.exec, kind, &a, &b, &out);
    atomic_store(&tl__pause_hook, NULL);
    char message[TL_MESSAGE_CAPACITY];
    snprintf(message, sizeof message, "%s", tl_last_message());
    if (status != TL_E_CANCELLED)
      fprintf(stderr, "kind %d: %s after %d chunk passes: %s\n", kind, tl_status_name(status),
              atomic_load(&chunk_passes), message);
    TH_CHECK(status == TL_E_CANCELLED);
    TH_CHECK(atomic_load(&chunk_passes) == 2); /* none began after the flag */
    TH_CHECK(strstr(message, "were not started") != NULL);
    TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
    tl_tensor_release(&a), tl_tensor_release(&b), tl_tensor_release(&out);
  }
  th_held_close(&held);
}

/* A product with a short k writes far more than it multiplies: a row-major 4096^2 C (128 MiB)
 * with k = 4 is cut into blocks of at most 64 MiB of C (a square C along its columns), one
 * serial chunk each. The flag raised at the second leaves C's last columns as they were. In
 * one block the call ran to the end. */
static void cancel_short_k_gemm_between_blocks_of_c(void) {
  th_held held;
  th_held_open(&held, 1);
  const int64_t n = 4096, k = 4, a_shape[2] = {n, k}, b_shape[2] = {k, n}, c_shape[2] = {n, n};
  tl_tensor a, b, c;
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F64, 2, a_shape, &a));
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F64, 2, b_shape, &b));
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F64, 2, c_shape, &c));
  TH_CHECK_OK(tl_random_into(held.exec, 1, &a));
  TH_CHECK_OK(tl_random_into(held.exec, 2, &b));
  TH_CHECK_OK(tl_fill_into(held.exec, tl_scalar_real(-7.0), &c));
  chunk_exec = held.exec;
  atomic_store(&chunk_passes, 0);
  atomic_store(&tl__pause_hook, raise_at_second_chunk);
  const tl_status status =
      tl_gemm_into(held.exec, tl_scalar_real(1.0), &a, &b, tl_scalar_real(0.0), &c);
  atomic_store(&tl__pause_hook, NULL);
  TH_CHECK(status == TL_E_CANCELLED);
  TH_CHECK(atomic_load(&chunk_passes) == 2);
  const double *cd = c.data;
  TH_CHECK(cd[0] != -7.0);     /* the first block ran */
  TH_CHECK(cd[n - 1] == -7.0); /* the last columns' block never began */
  TH_CHECK(cd[(n - 1) * n + n - 1] == -7.0);
  TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
  tl_tensor_release(&a), tl_tensor_release(&b), tl_tensor_release(&c);
  th_held_close(&held);
}

static void cancel_gemm_on_a_pool(void) { cancel_while_running(2, &gemm_call, 1536); }
static void cancel_gemm_on_one_thread(void) { cancel_while_running(1, &gemm_call, 1536); }
static void cancel_einsum_on_a_pool(void) { cancel_while_running(2, &einsum_call, 1024); }
static void cancel_svd_on_a_pool(void) { cancel_while_running(2, &svd_call, 768); }
static void cancel_qr_on_one_thread(void) { cancel_while_running(1, &qr_call, 1536); }
static void cancel_qrcp_on_one_thread(void) { cancel_while_running(1, &qrcp_call, 1536); }
static void cancel_eigh_on_one_thread(void) { cancel_while_running(1, &eigh_call, 1536); }
static void cancel_lu_on_one_thread(void) { cancel_while_running(1, &lu_call, 2048); }

/* ---- Inside tl_eigh's tridiagonal solver ----
 *
 * The solver runs in pieces (unreduced blocks; with vectors the leaves and merges of the
 * divide and conquer) and passes the pause point TL__PAUSE_TRIDIAG_PIECE as each piece
 * begins. The hook below counts the pieces and raises the flag as piece `raise_at` begins,
 * so that the flag goes up inside the solver at a chosen place, whatever the machine's
 * speed: the call must stop before the next piece, and the message must say how many
 * pieces were left. */

static tl_exec *piece_exec;
static atomic_int piece_passes;
static atomic_int piece_raise_at;

static void raise_at_piece(tl__pause_site site) {
  if (site != TL__PAUSE_TRIDIAG_PIECE) return;
  int pass = atomic_fetch_add(&piece_passes, 1) + 1;
  if (pass == atomic_load(&piece_raise_at)) tl_exec_cancel(piece_exec);
}

/* A random symmetric n x n matrix (f64, both triangles), block diagonal with `blocks` equal
 * blocks when blocks > 1: its tridiagonal form then splits exactly between the blocks. */
static void make_symmetric(int64_t n, int64_t blocks, tl_tensor *a) {
  int64_t shape[2] = {n, n};
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, a));
  uint64_t state = 0x9e3779b97f4a7c15u;
  int64_t size = n / blocks;
  char *base = a->data;
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = j; i < n; i++) {
      state = state * 6364136223846793005u + 1442695040888963407u;
      double value = i / size == j / size ? (double)(state >> 11) / 9007199254740992.0 - 0.5 : 0.0;
      *(double *)(base + i * a->strides[0] * 8 + j * a->strides[1] * 8) = value;
      *(double *)(base + j * a->strides[0] * 8 + i * a->strides[1] * 8) = value;
    }
  }
}

static double entry(const tl_tensor *t, int64_t i, int64_t j) {
  return *(const double *)((const char *)t->data + (i * t->strides[0] + j * t->strides[1]) * 8);
}

/* max |A v - v diag(w)| over the entries, and w ascending (fails otherwise). */
static double eigen_residual(const tl_tensor *a, const tl_tensor *w, const tl_tensor *v) {
  int64_t n = a->shape[0];
  const char *wd = w->data;
  double worst = 0.0;
  for (int64_t j = 0; j < n; j++) {
    double wj = *(const double *)(wd + j * w->strides[0] * 8);
    if (j > 0) TH_CHECK(*(const double *)(wd + (j - 1) * w->strides[0] * 8) <= wj);
    if (v == NULL) continue;
    for (int64_t i = 0; i < n; i++) {
      double sum = 0.0;
      for (int64_t k = 0; k < n; k++) sum += entry(a, i, k) * entry(v, k, j);
      double r = fabs(sum - wj * entry(v, i, j));
      if (r > worst) worst = r;
    }
  }
  return worst;
}

/* The end of a hook-driven case: the hook removed, the input released, the flag raised once
 * more for check_usable_after, the session closed. */
static void finish_hooked(th_held *held, tl_tensor *a) {
  atomic_store(&tl__pause_hook, NULL);
  tl_tensor_release(a);
  tl_exec_cancel(held->exec);
  check_usable_after(held->exec);
  th_held_close(held);
}

/* extra_from_end > 0: the flag is also raised as piece total - extra_from_end begins. */
static void cancel_in_solver(int vectors, int64_t n, int64_t blocks, int expected_pieces,
                             int extra_from_end) {
  th_held held;
  th_held_open(&held, 1);
  tl_tensor a, w, v;
  make_symmetric(n, blocks, &a);
  piece_exec = held.exec;
  atomic_store(&piece_passes, 0);
  atomic_store(&piece_raise_at, 0);
  atomic_store(&tl__pause_hook, raise_at_piece);
  /* Uncancelled: the pieces counted, the result right. */
  TH_CHECK_OK(tl_eigh(held.exec, TL_LOWER, &a, &w, vectors ? &v : NULL));
  int total = atomic_load(&piece_passes);
  fprintf(stderr, "n = %lld, %lld blocks, vectors %d: %d pieces\n", (long long)n, (long long)blocks,
          vectors, total);
  TH_CHECK(total == expected_pieces);
  TH_CHECK(eigen_residual(&a, &w, vectors ? &v : NULL) < 1e-12 * (double)n);
  tl_tensor_release(&w);
  if (vectors) tl_tensor_release(&v);
  /* The flag raised as the first, a middle and the last piece begins. */
  int raise_at[4] = {1, total / 2 + 1, total, total - extra_from_end};
  for (int r = 0; r < (extra_from_end > 0 ? 4 : 3); r++) {
    atomic_store(&piece_passes, 0);
    atomic_store(&piece_raise_at, raise_at[r]);
    TH_CHECK_STATUS(tl_eigh(held.exec, TL_LOWER, &a, &w, vectors ? &v : NULL), TL_E_CANCELLED);
    const char *message = tl_last_message();
    fprintf(stderr, "raised at piece %d: %s\n", raise_at[r], message);
    TH_CHECK(strncmp(message, "tl_eigh: cancelled while the tridiagonal solver ran (", 53) == 0);
    char left[64];
    snprintf(left, sizeof left, ": %d of %d pieces were not started", total - raise_at[r], total);
    TH_CHECK(strstr(message, left) != NULL);
    TH_CHECK(atomic_load(&piece_passes) == raise_at[r]); /* no piece began after the flag */
    TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
  }
  finish_hooked(&held, &a);
}

/* With vectors, one unreduced block of order 400: 16 leaves (orders 25) and 15 merges, the
 * top one (order 400, above TL__TRIDIAG_CHUNKED) chunked: its deflation, then 2 chunks (of
 * 327 columns) each of roots, weights and columns, and 2 each of the final sort's gathering
 * and copying back: 10 pieces more. */
static void cancel_eigh_inside_divide_and_conquer(void) { cancel_in_solver(1, 400, 1, 41, 0); }
/* Eigenvalues only of a direct sum of 4 blocks: sterf on each unreduced block. */
static void cancel_eigh_inside_sterf_blocks(void) { cancel_in_solver(0, 200, 4, 4, 0); }
/* Eigenvalues only of one block of order 800: the QL iteration in 5 windows of 163
 * eigenvalues; also raised as the fourth window begins (total - 1). */
static void cancel_eigh_inside_ql_windows(void) { cancel_in_solver(0, 800, 1, 5, 1); }
/* With vectors, 4 blocks of order 50: each 2 leaves and 1 merge. */
static void cancel_eigh_inside_blocks_with_vectors(void) { cancel_in_solver(1, 200, 4, 12, 0); }
/* With vectors, one block of order 600: 32 leaves, 30 merges of one piece, the top merge (of
 * order 600 in chunks of 218) 10 pieces: the deflation (total - 15), 3 chunks of roots
 * (total - 14 .. total - 12), 3 of weights, 3 of columns; then the final sort's 6. The flag
 * goes up as the second chunk of roots begins (total - 13): the merge stops between laed4
 * calls, 13 pieces left. */
static void cancel_eigh_inside_top_merge_roots(void) { cancel_in_solver(1, 600, 1, 78, 13); }

/* ---- Between tl_eigh's own steps ----
 *
 * The reduction's panels and the back-transformation's blocks each begin with a look at the
 * flag (tl__la_cancelled), which passes TL__PAUSE_LINALG_STEP when the flag is down. The hook
 * counts those looks before the solver's first piece (the reduction's) and after it (the
 * back-transformation's), and raises the flag at a chosen look: the step that look began
 * runs, and the next look stops the call. */

static atomic_int step_passes, step_raise_at, steps_before_solver, solver_seen;

static void raise_at_step(tl__pause_site site) {
  if (site == TL__PAUSE_TRIDIAG_PIECE) {
    atomic_store(&solver_seen, 1);
    return;
  }
  if (site != TL__PAUSE_LINALG_STEP) return;
  int pass = atomic_fetch_add(&step_passes, 1) + 1;
  if (!atomic_load(&solver_seen)) atomic_store(&steps_before_solver, pass);
  if (pass == atomic_load(&step_raise_at)) tl_exec_cancel(piece_exec);
}

/* n = 600 with vectors: two looks in the entry (after the copy of a, after its check),
 * then 17 panels of 32 columns while more than 64 rows are left, each with a look before
 * latrd and one before the rank-2k update, and one look before the last block of 56 (37
 * looks before the solver); then the back-transformation's 19 blocks of 32 reflectors (or
 * fewer), each applied to all 600 columns in one step, and a look after the last (20). */
static void cancel_eigh_between_reduction_and_apply_steps(void) {
  th_held held;
  th_held_open(&held, 1);
  tl_tensor a, w, v;
  make_symmetric(600, 1, &a);
  piece_exec = held.exec;
  atomic_store(&step_passes, 0);
  atomic_store(&step_raise_at, 0);
  atomic_store(&solver_seen, 0);
  atomic_store(&tl__pause_hook, raise_at_step);
  TH_CHECK_OK(tl_eigh(held.exec, TL_LOWER, &a, &w, &v));
  int total = atomic_load(&step_passes), reduce = atomic_load(&steps_before_solver);
  fprintf(stderr, "%d looks, %d of them in the reduction\n", total, reduce);
  TH_CHECK(reduce == 37 && total == 57);
  TH_CHECK(eigen_residual(&a, &w, &v) < 1e-12 * 600.0);
  tl_tensor_release(&w);
  tl_tensor_release(&v);
  /* A panel's latrd, the last block's look, the first and the last back-transformation block. */
  const int raise_at[4] = {3, reduce, reduce + 1, total};
  const char *const seen_in[4] = {"the tridiagonal reduction (rank-2k updates)",
                                  "the tridiagonal solver",
                                  "the back-transformation (larfb blocks)", NULL};
  for (int r = 0; r < 4; r++) {
    atomic_store(&step_passes, 0);
    atomic_store(&solver_seen, 0);
    atomic_store(&step_raise_at, raise_at[r]);
    tl_status status = tl_eigh(held.exec, TL_LOWER, &a, &w, &v);
    fprintf(stderr, "raised at look %d: %s: %s\n", raise_at[r], tl_status_name(status),
            tl_last_message());
    if (seen_in[r] == NULL) { /* raised as the last step began: no look is left */
      TH_CHECK_OK(status);
      tl_tensor_release(&w);
      tl_tensor_release(&v);
    } else {
      TH_CHECK(status == TL_E_CANCELLED);
      TH_CHECK(strncmp(tl_last_message(), "tl_eigh: cancelled while ", 25) == 0);
      TH_CHECK(strstr(tl_last_message(), seen_in[r]) != NULL);
    }
    TH_CHECK(atomic_load(&step_passes) == raise_at[r]); /* no step began after the flag */
    TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
  }
  finish_hooked(&held, &a);
}

/* Order 1100 (f64, 8.8 KB a column): the copy of the vectors out takes two steps of at most
 * 8 MiB, with a look between them, the last look of the call. Raised at the look before it
 * (after the back-transformation), tl_eigh ends there: cancelled, nothing handed out, no
 * leak (ASan); tl_eigh_into alike. Uncancelled, both steps' columns are eigenvectors. */
static void cancel_eigh_while_copying_the_vectors_out(void) {
  const int64_t n = 1100;
  th_held held;
  th_held_open(&held, 1);
  tl_tensor a, w, v;
  make_symmetric(n, 1, &a);
  piece_exec = held.exec;
  atomic_store(&step_passes, 0);
  atomic_store(&step_raise_at, 0);
  atomic_store(&tl__pause_hook, raise_at_step);
  TH_CHECK_OK(tl_eigh(held.exec, TL_LOWER, &a, &w, &v));
  int total = atomic_load(&step_passes);
  const int64_t columns[3] = {0, 953, n - 1}; /* 953: the first column of the second step */
  for (int c = 0; c < 3; c++) {
    int64_t j = columns[c];
    double wj = *(const double *)((const char *)w.data + j * w.strides[0] * 8), worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
      double sum = 0.0;
      for (int64_t k = 0; k < n; k++) sum += entry(&a, i, k) * entry(&v, k, j);
      worst = fmax(worst, fabs(sum - wj * entry(&v, i, j)));
    }
    TH_CHECK(worst < 1e-12 * (double)n);
  }
  tl_tensor w_out, v_out;
  TH_CHECK_OK(tl_tensor_create_like(&w, &w_out));
  TH_CHECK_OK(tl_tensor_create_like(&v, &v_out));
  tl_tensor_release(&w);
  tl_tensor_release(&v);
  for (int into = 0; into < 2; into++) {
    atomic_store(&step_passes, 0);
    atomic_store(&step_raise_at, total - 1);
    memset(&w, 0, sizeof w);
    memset(&v, 0, sizeof v);
    tl_status status = into ? tl_eigh_into(held.exec, TL_LOWER, &a, &w_out, &v_out)
                            : tl_eigh(held.exec, TL_LOWER, &a, &w, &v);
    fprintf(stderr, "raised at look %d of %d: %s: %s\n", total - 1, total, tl_status_name(status),
            tl_last_message());
    TH_CHECK(status == TL_E_CANCELLED);
    TH_CHECK(strstr(tl_last_message(), "the copy of the vectors out") != NULL);
    TH_CHECK(atomic_load(&step_passes) == total - 1);
    TH_CHECK(w.data == NULL && v.data == NULL); /* nothing handed out */
    TH_CHECK_OK(tl_exec_cancel_clear(held.exec));
  }
  tl_tensor_release(&w_out);
  tl_tensor_release(&v_out);
  finish_hooked(&held, &a);
}

/* The rules with no call in progress: NULL, raising twice, lowering a lowered flag. */
static void cancel_flag_rules(void) {
  tl_exec_cancel(NULL); /* nothing happens */
  TH_CHECK(tl_exec_cancel_requested(NULL) == 0);
  TH_CHECK_STATUS(tl_exec_cancel_clear(NULL), TL_E_INVALID);
  TH_CHECK(strcmp(tl_last_message(), "tl_exec_cancel_clear: exec is NULL") == 0);
  th_held held;
  th_held_open(&held, 2);
  TH_CHECK(tl_exec_cancel_requested(held.exec) == 0);
  TH_CHECK_OK(tl_exec_cancel_clear(held.exec)); /* lowering a lowered flag */
  tl_exec_cancel(held.exec);
  tl_exec_cancel(held.exec); /* twice is no error */
  check_usable_after(held.exec);
  th_held_close(&held);
}

TH_TEST_MAIN(TH_CASE(cancel_flag_rules), TH_CASE(cancel_gemm_on_a_pool),
             TH_CASE(cancel_gemm_on_one_thread), TH_CASE(cancel_einsum_on_a_pool),
             TH_CASE(cancel_svd_on_a_pool), TH_CASE(cancel_qr_on_one_thread),
             TH_CASE(cancel_qrcp_on_one_thread), TH_CASE(cancel_eigh_on_one_thread),
             TH_CASE(cancel_lu_on_one_thread), TH_CASE(cancel_eigh_inside_divide_and_conquer),
             TH_CASE(cancel_eigh_inside_sterf_blocks),
             TH_CASE(cancel_eigh_inside_blocks_with_vectors),
             TH_CASE(cancel_eigh_inside_top_merge_roots), TH_CASE(cancel_eigh_inside_ql_windows),
             TH_CASE(cancel_eigh_between_reduction_and_apply_steps),
             TH_CASE(cancel_eigh_while_copying_the_vectors_out),
             TH_CASE(cancel_reduce_broadcast_rows), TH_CASE(cancel_reduce_broadcast_runs),
             TH_CASE(cancel_reduce_broadcast_items), TH_CASE(cancel_serial_chunks_on_one_thread),
             TH_CASE(cancel_short_k_gemm_between_blocks_of_c))
