/* tests/reliability/test_oom.c: out-of-memory stepping. For each entry point, a fresh setup
 * is made with the allocator working, then the allocator is armed to fail the N-th
 * allocation from that point and the call is made, for N = 1, 2, ... until a run in which
 * the armed failure no longer fires (the call then needs fewer than N allocations and must
 * succeed). Every run in which it fired must:
 *   - return TL_E_NOMEM (or, for a phase, a map or a ticket whose callback's route ran out
 *     of memory, report that route's TL_E_NOMEM as the lane's, item's or callback's code),
 *   - leave a fresh failure message,
 *   - write nothing: watched outputs keep their sentinel, a fresh output struct is untouched,
 *   - leave the session idle and usable: the same call made again without the fault succeeds,
 *   - leak nothing: after teardown, the allocator's live count is back where it started
 *     (LeakSanitizer checks the same thing again in the ASan build).
 * Each case prints "REL-FIGURE oom <name> points=<failure points stepped>". */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rel_alloc.h"
#include "rel_common.h"
#include "tenlane/einsum.h"
#include "tenlane/linalg.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "tenlane/session.h"
#include "th_test.h"

#define MAX_STEPS 5000

static void fail_step(const char *what, long n, tl_status status, const char *message) {
  char text[768];
  snprintf(text, sizeof text, "%s, failing allocation #%ld: returned %s (%s)", what, n,
           tl_status_name(status), message);
  th_test_fail_at(__FILE__, __LINE__, text);
}

static void figure(const char *name, long points) {
  printf("REL-FIGURE oom %s points=%ld\n", name, points);
  fflush(stdout);
}

/* ---- numerical routes on a root surface ------------------------------------------------ */

typedef struct route_fx {
  th_held held;
  tl_dtype dtype;
  tl_tensor in[4];
  int n_in;
  tl_tensor out[4]; /* `_into` outputs (owned), or the structs a fresh form fills */
  int n_out;
  int64_t ints[2][256]; /* perm / pivots: at least max(RN, RS) entries */
  int64_t rank;
  rel_watch watch;
  tl_einsum_path_info path;
} route_fx;

typedef struct route_case {
  const char *name;
  void (*prepare)(route_fx *fx);
  tl_status (*call)(route_fx *fx);
  int fresh;   /* out[0..n_out-1] are fresh outputs: released after a successful call */
  int no_exec; /* the call takes no surface (tl_einsum_path) */
} route_case;

static tl_tensor *input(route_fx *fx, tl_dtype dtype, int rank, int64_t d0, int64_t d1, int64_t d2,
                        double diag) {
  int64_t shape[3] = {d0, d1, d2};
  tl_tensor *t = &fx->in[fx->n_in];
  TH_CHECK_OK(tl_tensor_create(dtype, rank, shape, t));
  rel_fill(t, 1000u + (uint64_t)fx->n_in, diag);
  fx->n_in++;
  return t;
}

/* An `_into` output, watched. */
static tl_tensor *output(route_fx *fx, tl_dtype dtype, int rank, int64_t d0, int64_t d1,
                         int64_t d2) {
  int64_t shape[3] = {d0, d1, d2};
  tl_tensor *t = &fx->out[fx->n_out++];
  TH_CHECK_OK(tl_tensor_create(dtype, rank, shape, t));
  rel_watch_tensor(&fx->watch, t);
  return t;
}

/* Fresh outputs: their structs are watched. */
static void fresh_outputs(route_fx *fx, int count) {
  fx->n_out = count;
  for (int i = 0; i < count; i++) rel_watch_add(&fx->watch, &fx->out[i], sizeof fx->out[i]);
}

static void watch_ints(route_fx *fx) {
  rel_watch_add(&fx->watch, fx->ints, sizeof fx->ints);
  rel_watch_add(&fx->watch, &fx->rank, sizeof fx->rank);
}

static tl_dtype real_of(const route_fx *fx) { return tl_dtype_real(fx->dtype); }

/* Matrix extents of the linear-algebra and contraction cases: rectangular RM x RN, square
 * RS. Stepped twice: small (everything fits the arena's first chunk) and large (scratch
 * grows chunk by chunk, so every growth is a failure point). */
static int64_t RM = 6, RN = 4, RS = 5;

/* einsum */
static const char *const chain_spec = "ij,jk,kl->il";
static void prep_chain(route_fx *fx) {
  input(fx, fx->dtype, 2, 4, 5, 0, 0);
  input(fx, fx->dtype, 2, 5, 6, 0, 0);
  input(fx, fx->dtype, 2, 6, 3, 0, 0);
  output(fx, fx->dtype, 2, 4, 3, 0);
}
static tl_status call_einsum_into(route_fx *fx) {
  const tl_tensor *ops[3] = {&fx->in[0], &fx->in[1], &fx->in[2]};
  return tl_einsum_into(fx->held.exec, chain_spec, 3, ops, &fx->out[0]);
}
static void prep_diag(route_fx *fx) {
  input(fx, fx->dtype, 3, 3, 3, 4, 0);
  input(fx, fx->dtype, 2, 4, 5, 0, 0);
  fresh_outputs(fx, 1);
}
static tl_status call_einsum_fresh(route_fx *fx) {
  const tl_tensor *ops[2] = {&fx->in[0], &fx->in[1]};
  return tl_einsum(fx->held.exec, "iij,jk->ik", 2, ops, &fx->out[0]);
}
static void prep_ring(route_fx *fx) {
  input(fx, fx->dtype, 2, 3, 4, 0, 0);
  input(fx, fx->dtype, 2, 4, 5, 0, 0);
  input(fx, fx->dtype, 2, 5, 2, 0, 0);
  input(fx, fx->dtype, 2, 2, 3, 0, 0);
  output(fx, fx->dtype, 0, 0, 0, 0);
}
static tl_status call_einsum_optimal(route_fx *fx) {
  const tl_tensor *ops[4] = {&fx->in[0], &fx->in[1], &fx->in[2], &fx->in[3]};
  return tl_einsum_ex_into(
      fx->held.exec,
      &(tl_einsum_options){.size = sizeof(tl_einsum_options), .path_kind = TL_EINSUM_PATH_OPTIMAL},
      "ab,bc,cd,da->", 4, ops, &fx->out[0]);
}
static void prep_path(route_fx *fx) { rel_watch_add(&fx->watch, &fx->path, sizeof fx->path); }
static tl_status call_einsum_path(route_fx *fx) {
  static const int64_t s0[2] = {8, 9}, s1[3] = {9, 10, 3}, s2[2] = {10, 7}, s3[2] = {7, 8},
                       s4[2] = {3, 2};
  const int64_t *shapes[5] = {s0, s1, s2, s3, s4};
  const int ranks[5] = {2, 3, 2, 2, 2};
  return tl_einsum_path(TL_EINSUM_PATH_OPTIMAL, "ab,bcx,cd,da,xy->y", 5, ranks, shapes, &fx->path);
}

/* binary contraction, GEMM, reduce, permute */
static void prep_contract(route_fx *fx) {
  input(fx, fx->dtype, 3, 3, RN, RM, 0);
  input(fx, fx->dtype, 3, RM, RS, 3, 0);
  output(fx, fx->dtype, 3, RN, RS, 3);
}
static tl_status call_contract_into(route_fx *fx) {
  /* a(b,i,k) b(k,j,b) -> c(i,j,b): a batch axis that is not outermost makes it pack. */
  static const int la[3] = {0, 1, 2}, lb[3] = {2, 3, 0}, lc[3] = {1, 3, 0};
  return tl_contract_into(fx->held.exec, lc, &fx->in[0], la, &fx->in[1], lb, &fx->out[0]);
}
static void prep_gemm(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RS, 0, 0);
  input(fx, fx->dtype, 2, RS, RN, 0, 0);
  fresh_outputs(fx, 1);
}
static tl_status call_gemm(route_fx *fx) {
  return tl_gemm(fx->held.exec, &fx->in[0], &fx->in[1], &fx->out[0]);
}
static void prep_reduce(route_fx *fx) {
  input(fx, fx->dtype, 3, RS, RN, 7, 0);
  fresh_outputs(fx, 1);
}
static tl_status call_reduce(route_fx *fx) {
  static const int axes[2] = {0, 2};
  return tl_reduce(fx->held.exec, TL_REDUCE_SUM, &fx->in[0], 2, axes, &fx->out[0]);
}
static tl_status call_permute(route_fx *fx) {
  static const int perm[3] = {2, 0, 1};
  return tl_permute(fx->held.exec, &fx->in[0], perm, &fx->out[0]);
}

/* linear algebra */
static void prep_qr_into(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  output(fx, fx->dtype, 2, RM, RN, 0);
  output(fx, fx->dtype, 2, RN, RN, 0);
}
static tl_status call_qr_into(route_fx *fx) {
  return tl_qr_into(fx->held.exec, &fx->in[0], &fx->out[0], &fx->out[1]);
}
static void prep_a64_fresh2(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  fresh_outputs(fx, 2);
  watch_ints(fx);
}
static tl_status call_qr(route_fx *fx) {
  return tl_qr(fx->held.exec, &fx->in[0], &fx->out[0], &fx->out[1]);
}
static void prep_qrcp_into(route_fx *fx) {
  prep_qr_into(fx);
  watch_ints(fx);
}
static tl_status call_qrcp_into(route_fx *fx) {
  return tl_qrcp_into(fx->held.exec, NULL, &fx->in[0], &fx->out[0], &fx->out[1], fx->ints[0],
                      &fx->rank);
}
static tl_status call_qrcp(route_fx *fx) {
  tl_truncation truncation = {sizeof(tl_truncation), 3, 0.0, 0.0};
  return tl_qrcp(fx->held.exec, &truncation, &fx->in[0], &fx->out[0], &fx->out[1], fx->ints[0],
                 &fx->rank);
}
static void prep_svd_into(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  output(fx, fx->dtype, 2, RM, RN, 0);
  output(fx, real_of(fx), 1, RN, 0, 0);
  output(fx, fx->dtype, 2, RN, RN, 0);
  watch_ints(fx);
}
static tl_status call_svd_into(route_fx *fx) {
  return tl_svd_into(fx->held.exec, NULL, &fx->in[0], &fx->out[0], &fx->out[1], &fx->out[2],
                     &fx->rank);
}
static void prep_svd(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  fresh_outputs(fx, 3);
  watch_ints(fx);
}
static tl_status call_svd(route_fx *fx) {
  tl_truncation truncation = {sizeof(tl_truncation), 0, 1e-12, 0.0};
  return tl_svd(fx->held.exec, &truncation, &fx->in[0], &fx->out[0], &fx->out[1], &fx->out[2],
                &fx->rank);
}
static void prep_lu_into(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  output(fx, fx->dtype, 2, RM, RN, 0);
  watch_ints(fx);
}
static tl_status call_lu_into(route_fx *fx) {
  return tl_lu_into(fx->held.exec, &fx->in[0], &fx->out[0], fx->ints[0]);
}
static void prep_lu(route_fx *fx) {
  input(fx, fx->dtype, 2, RM, RN, 0, 0);
  fresh_outputs(fx, 1);
  watch_ints(fx);
}
static tl_status call_lu(route_fx *fx) {
  return tl_lu(fx->held.exec, &fx->in[0], &fx->out[0], fx->ints[0]);
}
/* A square system: in[0] 5x5 (diagonally dominant), in[1] 5x3. For tl_lu_solve_into in[0]
 * is taken as its own LU factorization with L = I (its strictly lower part is zeroed) and
 * identity pivots, which is a valid factorization of its upper triangle. */
static void prep_system(route_fx *fx) {
  tl_tensor *a = input(fx, fx->dtype, 2, RS, RS, 0, 8.0);
  for (int64_t j = 0; j < RS; j++) {
    for (int64_t i = j + 1; i < RS; i++) {
      int64_t idx[2] = {i, j};
      memset(tl_tensor_element(a, idx), 0, tl_dtype_size(a->dtype));
    }
  }
  for (int64_t i = 0; i < RS; i++) fx->ints[1][i] = i;
  input(fx, fx->dtype, 2, RS, 3, 0, 0);
}
static void prep_system_into(route_fx *fx) {
  prep_system(fx);
  output(fx, fx->dtype, 2, RS, 3, 0);
}
static void prep_system_fresh(route_fx *fx) {
  prep_system(fx);
  fresh_outputs(fx, 1);
}
static tl_status call_lu_solve_into(route_fx *fx) {
  return tl_lu_solve_into(fx->held.exec, TL_CONJ_TRANS, &fx->in[0], fx->ints[1], &fx->in[1],
                          &fx->out[0]);
}
static tl_status call_solve_into(route_fx *fx) {
  return tl_solve_into(fx->held.exec, &fx->in[0], &fx->in[1], &fx->out[0]);
}
static tl_status call_solve(route_fx *fx) {
  return tl_solve(fx->held.exec, &fx->in[0], &fx->in[1], &fx->out[0]);
}
static tl_status call_trsm_into(route_fx *fx) {
  return tl_triangular_solve_into(fx->held.exec, TL_LEFT, TL_UPPER, TL_NO_TRANS, TL_NON_UNIT,
                                  &fx->in[0], &fx->in[1], &fx->out[0]);
}
static void prep_trsm_right(route_fx *fx) {
  input(fx, fx->dtype, 2, RS, RS, 0, 8.0);
  input(fx, fx->dtype, 2, 3, RS, 0, 0);
  fresh_outputs(fx, 1);
}
static tl_status call_trsm(route_fx *fx) {
  return tl_triangular_solve(fx->held.exec, TL_RIGHT, TL_LOWER, TL_TRANS, TL_UNIT, &fx->in[0],
                             &fx->in[1], &fx->out[0]);
}
static void prep_eigh_into(route_fx *fx) {
  input(fx, fx->dtype, 2, RS, RS, 0, 2.0);
  output(fx, real_of(fx), 1, RS, 0, 0);
  output(fx, fx->dtype, 2, RS, RS, 0);
}
static tl_status call_eigh_into(route_fx *fx) {
  return tl_eigh_into(fx->held.exec, TL_LOWER, &fx->in[0], &fx->out[0], &fx->out[1]);
}
static void prep_eigh(route_fx *fx) {
  input(fx, fx->dtype, 2, RS, RS, 0, 2.0);
  fresh_outputs(fx, 1);
}
static tl_status call_eigh_values(route_fx *fx) {
  return tl_eigh(fx->held.exec, TL_UPPER, &fx->in[0], &fx->out[0], NULL);
}

static void route_teardown(route_fx *fx, int success) {
  for (int i = 0; i < fx->n_in; i++) tl_tensor_release(&fx->in[i]);
  if (success) {
    for (int i = 0; i < fx->n_out; i++) tl_tensor_release(&fx->out[i]);
  }
  th_held_close(&fx->held);
}

/* Step one route for one dtype on a context of `budget`. Returns the failure points. */
static long step_route(const route_case *rc, tl_dtype dtype, int budget) {
  rel_alloc_install();
  long base = rel_alloc_live();
  char what[128];
  snprintf(what, sizeof what, "%s (%s, budget %d)", rc->name, tl_dtype_name(dtype), budget);
  for (long n = 1; n <= MAX_STEPS; n++) {
    route_fx *fx = calloc(1, sizeof *fx);
    fx->dtype = dtype;
    rel_watch_init(&fx->watch);
    th_held_open(&fx->held, budget);
    rc->prepare(fx);
    rel_message_reset();
    rel_alloc_fail_nth(n);
    tl_status status = rc->call(fx);
    int fired = rel_alloc_disarm();
    if (!fired) {
      if (status != TL_OK) fail_step(what, n, status, tl_last_message());
      route_teardown(fx, 1);
      free(fx);
      TH_CHECK(rel_alloc_live() == base);
      return n - 1;
    }
    if (status != TL_E_NOMEM) fail_step(what, n, status, tl_last_message());
    TH_CHECK(rel_message_fresh(tl_last_message()));
    if (!rc->no_exec) TH_CHECK(rel_message_fresh(tl_session_message(fx->held.session)));
    if (!rel_watch_unchanged(&fx->watch)) fail_step(what, n, status, "an output was written");
    rel_check_idle(fx->held.ctx);
    /* Usable: the same call, without the fault, succeeds on the same session. */
    TH_CHECK_OK(rc->call(fx));
    route_teardown(fx, 1);
    free(fx);
    if (rel_alloc_live() != base) fail_step(what, n, status, "allocations leaked");
  }
  TH_CHECK(!"the call still failed after MAX_STEPS allocations");
  return -1;
}

static void step_routes(const route_case *cases, size_t count, const char *figure_name) {
  static const tl_dtype dtypes[2] = {TL_F64, TL_C64};
  static const int64_t sizes[2][3] = {{6, 4, 5}, {150, 100, 120}};
  long points = 0;
  for (int z = 0; z < 2; z++) {
    RM = sizes[z][0], RN = sizes[z][1], RS = sizes[z][2];
    for (size_t i = 0; i < count; i++) {
      for (int d = 0; d < 2; d++) {
        long p = step_route(&cases[i], dtypes[d], 2);
        printf("  %s %s %lldx%lld: %ld failure points\n", cases[i].name, tl_dtype_name(dtypes[d]),
               (long long)RM, (long long)RN, p);
        points += p;
      }
    }
  }
  figure(figure_name, points);
}

static void oom_einsum_plan_and_execute(void) {
  static const route_case cases[] = {
      {"tl_einsum_path", prep_path, call_einsum_path, 0, 1},
      {"tl_einsum_into", prep_chain, call_einsum_into, 0, 0},
      {"tl_einsum", prep_diag, call_einsum_fresh, 1, 0},
      {"tl_einsum_ex_into(OPTIMAL)", prep_ring, call_einsum_optimal, 0, 0},
  };
  step_routes(cases, sizeof cases / sizeof cases[0], "einsum");
}

static void oom_contraction_routes(void) {
  static const route_case cases[] = {
      {"tl_contract_into", prep_contract, call_contract_into, 0, 0},
      {"tl_gemm", prep_gemm, call_gemm, 1, 0},
      {"tl_reduce", prep_reduce, call_reduce, 1, 0},
      {"tl_permute", prep_reduce, call_permute, 1, 0},
  };
  step_routes(cases, sizeof cases / sizeof cases[0], "contraction");
}

static void oom_linalg_routes(void) {
  static const route_case cases[] = {
      {"tl_qr_into", prep_qr_into, call_qr_into, 0, 0},
      {"tl_qr", prep_a64_fresh2, call_qr, 1, 0},
      {"tl_qrcp_into", prep_qrcp_into, call_qrcp_into, 0, 0},
      {"tl_qrcp", prep_a64_fresh2, call_qrcp, 1, 0},
      {"tl_svd_into", prep_svd_into, call_svd_into, 0, 0},
      {"tl_svd", prep_svd, call_svd, 1, 0},
      {"tl_lu_into", prep_lu_into, call_lu_into, 0, 0},
      {"tl_lu", prep_lu, call_lu, 1, 0},
      {"tl_lu_solve_into", prep_system_into, call_lu_solve_into, 0, 0},
      {"tl_solve_into", prep_system_into, call_solve_into, 0, 0},
      {"tl_solve", prep_system_fresh, call_solve, 1, 0},
      {"tl_triangular_solve_into", prep_system_into, call_trsm_into, 0, 0},
      {"tl_triangular_solve", prep_trsm_right, call_trsm, 1, 0},
      {"tl_eigh_into", prep_eigh_into, call_eigh_into, 0, 0},
      {"tl_eigh", prep_eigh, call_eigh_values, 1, 0},
  };
  step_routes(cases, sizeof cases / sizeof cases[0], "linalg");
}

/* ---- context create and session open --------------------------------------------------- */

static void oom_context_create(void) {
  rel_alloc_install();
  long base = rel_alloc_live();
  long points = 0;
  static const int budgets[3] = {1, 2, 4};
  for (int b = 0; b < 3; b++) {
    for (long n = 1; n <= MAX_STEPS; n++) {
      tl_context_config config;
      tl_context_config_init(&config);
      config.threads = budgets[b];
      tl_context *sentinel = (tl_context *)(uintptr_t)0x5a5a5a5a;
      tl_context *ctx = sentinel;
      rel_message_reset();
      rel_alloc_fail_nth(n);
      tl_status status = tl_context_create(&config, &ctx);
      int fired = rel_alloc_disarm();
      if (!fired) {
        TH_CHECK_OK(status);
        TH_CHECK_OK(tl_context_destroy(ctx));
        TH_CHECK(rel_alloc_live() == base);
        break;
      }
      points++;
      if (status != TL_E_NOMEM) fail_step("tl_context_create", n, status, tl_last_message());
      TH_CHECK(ctx == sentinel);
      TH_CHECK(rel_message_fresh(tl_last_message()));
      if (rel_alloc_live() != base) fail_step("tl_context_create", n, status, "leaked");
    }
  }
  figure("context_create", points);
}

static void oom_session_open(void) {
  rel_alloc_install();
  long base = rel_alloc_live();
  long points = 0;
  for (long n = 1; n <= MAX_STEPS; n++) {
    tl_context *ctx;
    tl_context_config config;
    tl_context_config_init(&config);
    config.threads = 2;
    TH_CHECK_OK(tl_context_create(&config, &ctx));
    tl_session *sentinel = (tl_session *)(uintptr_t)0x5a5a5a5a;
    tl_session *session = sentinel;
    rel_message_reset();
    rel_alloc_fail_nth(n);
    tl_status status = tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session);
    int fired = rel_alloc_disarm();
    if (fired) {
      points++;
      if (status != TL_E_NOMEM) fail_step("tl_session_open", n, status, tl_last_message());
      TH_CHECK(session == sentinel);
      TH_CHECK(rel_message_fresh(tl_last_message()));
      TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_NOWAIT, &session));
    } else {
      TH_CHECK_OK(status);
    }
    rel_check_idle(ctx);
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(ctx));
    TH_CHECK(rel_alloc_live() == base);
    if (!fired) break;
  }
  figure("session_open", points);
}

/* ---- ticket entry from another thread --------------------------------------------------- */

typedef struct ticket_fx {
  tl_ticket ticket;
  tl_tensor in[3], out;
  tl_status enter_status;
  int fn_result;
  int fn_calls;
} ticket_fx;

static int ticket_work(tl_exec *exec, void *arg) {
  ticket_fx *fx = arg;
  fx->fn_calls++;
  const tl_tensor *ops[3] = {&fx->in[0], &fx->in[1], &fx->in[2]};
  return (int)tl_einsum_into(exec, chain_spec, 3, ops, &fx->out);
}

static void *ticket_thread(void *arg) {
  ticket_fx *fx = arg;
  fx->fn_result = -1;
  fx->enter_status = tl_ticket_enter(&fx->ticket, ticket_work, fx, &fx->fn_result);
  return NULL;
}

static void enter_from_thread(ticket_fx *fx) {
  pthread_t thread;
  TH_CHECK(pthread_create(&thread, NULL, ticket_thread, fx) == 0);
  TH_CHECK(pthread_join(thread, NULL) == 0);
}

static void oom_ticket_entry(void) {
  rel_alloc_install();
  long base = rel_alloc_live();
  long points = 0;
  for (long n = 1; n <= MAX_STEPS; n++) {
    th_held held;
    th_held_open(&held, 2);
    ticket_fx *fx = calloc(1, sizeof *fx);
    TH_CHECK_OK(tl_session_ticket(held.session, &fx->ticket));
    static const int64_t shapes[3][2] = {{4, 5}, {5, 6}, {6, 3}};
    for (int i = 0; i < 3; i++) {
      TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shapes[i], &fx->in[i]));
      rel_fill(&fx->in[i], (uint64_t)i, 0);
    }
    const int64_t out_shape[2] = {4, 3};
    TH_CHECK_OK(tl_tensor_create(TL_F64, 2, out_shape, &fx->out));
    rel_watch watch;
    rel_watch_init(&watch);
    rel_watch_tensor(&watch, &fx->out);
    rel_alloc_fail_nth(n);
    enter_from_thread(fx);
    int fired = rel_alloc_disarm();
    tl_status status = fx->enter_status != TL_OK ? fx->enter_status : (tl_status)fx->fn_result;
    if (fired) {
      points++;
      if (status != TL_E_NOMEM) fail_step("tl_ticket_enter + einsum", n, status, "");
      /* Entry failed: the callback did not run. */
      TH_CHECK(fx->enter_status == TL_OK || fx->fn_calls == 0);
      TH_CHECK(rel_watch_unchanged(&watch));
      rel_check_idle(held.ctx);
      fx->fn_calls = 0;
      enter_from_thread(fx);
      TH_CHECK_OK(fx->enter_status);
      TH_CHECK_OK((tl_status)fx->fn_result);
    } else {
      TH_CHECK_OK(status);
    }
    TH_CHECK(fx->fn_calls == 1);
    rel_check_idle(held.ctx);
    for (int i = 0; i < 3; i++) tl_tensor_release(&fx->in[i]);
    tl_tensor_release(&fx->out);
    free(fx);
    th_held_close(&held);
    if (rel_alloc_live() != base) fail_step("tl_ticket_enter", n, status, "leaked");
    if (!fired) break;
  }
  figure("ticket_entry", points);
}

/* ---- phase runs and maps whose lanes run einsum on their own surfaces ------------------ */

#define LANES_MAX 4
#define MAP_ITEMS 8

typedef struct phase_fx {
  tl_tensor in[3];
  tl_tensor lane_out[MAP_ITEMS]; /* private per lane (phase) or per item (map) */
  tl_tensor result;              /* published by the driver after a TL_OK run only */
  int lane_calls[LANES_MAX];
  int use_map;
  tl_status status;
  tl_phase_outcome outcome;
  tl_map_outcome map_outcome;
} phase_fx;

static int einsum_lane(tl_lane *lane, int lane_index, void *arg) {
  phase_fx *fx = arg;
  fx->lane_calls[lane_index]++;
  const tl_tensor *ops[3] = {&fx->in[0], &fx->in[1], &fx->in[2]};
  tl_status status =
      tl_einsum_into(tl_lane_exec(lane), chain_spec, 3, ops, &fx->lane_out[lane_index]);
  if (status != TL_OK)
    return tl_lane_fail(lane, (int)status, "lane %d: %s", lane_index, tl_status_name(status));
  return 0;
}

static int einsum_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  phase_fx *fx = arg;
  fx->lane_calls[lane_index]++;
  const tl_tensor *ops[3] = {&fx->in[0], &fx->in[1], &fx->in[2]};
  return (int)tl_einsum_into(exec, chain_spec, 3, ops, &fx->lane_out[item]);
}

static void phase_body(tl_phase *phase, void *arg) {
  phase_fx *fx = arg;
  fx->status = tl_phase_run(phase, einsum_lane, fx, &fx->outcome);
}

static tl_status run_phase_fx(tl_session *session, phase_fx *fx) {
  memset(fx->lane_calls, 0, sizeof fx->lane_calls);
  if (fx->use_map) {
    fx->status = tl_map(session, MAP_ITEMS, einsum_item, fx, &fx->map_outcome);
  } else {
    TH_CHECK_OK(tl_session_phase(session, phase_body, fx));
  }
  if (fx->status == TL_OK) {
    /* Publication after the join: the sum of what the lanes (items) computed. */
    int parts = fx->use_map ? MAP_ITEMS : 1;
    double *dst = fx->result.data;
    for (int i = 0; i < parts; i++) {
      const double *src = fx->lane_out[i].data;
      for (int e = 0; e < 12; e++) dst[e] = (i == 0 ? 0 : dst[e]) + src[e];
    }
  }
  return fx->status;
}

static void step_phase(int budget, int use_map, long *points) {
  rel_alloc_install();
  long base = rel_alloc_live();
  const char *what = use_map ? "tl_map + einsum items" : "tl_phase_run + einsum lanes";
  for (long n = 1; n <= MAX_STEPS; n++) {
    th_held held;
    th_held_open(&held, budget);
    phase_fx *fx = calloc(1, sizeof *fx);
    fx->use_map = use_map;
    static const int64_t shapes[3][2] = {{4, 5}, {5, 6}, {6, 3}};
    for (int i = 0; i < 3; i++) {
      TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shapes[i], &fx->in[i]));
      rel_fill(&fx->in[i], (uint64_t)i, 0);
    }
    const int64_t out_shape[2] = {4, 3};
    for (int i = 0; i < MAP_ITEMS; i++)
      TH_CHECK_OK(tl_tensor_create(TL_F64, 2, out_shape, &fx->lane_out[i]));
    TH_CHECK_OK(tl_tensor_create(TL_F64, 2, out_shape, &fx->result));
    rel_watch watch;
    rel_watch_init(&watch);
    rel_watch_tensor(&watch, &fx->result);
    rel_message_reset();
    rel_alloc_fail_nth(n);
    tl_status status = run_phase_fx(held.session, fx);
    int fired = rel_alloc_disarm();
    if (fired) {
      (*points)++;
      int code = use_map ? fx->map_outcome.code : fx->outcome.lane_code;
      int ok = status == TL_E_NOMEM || (status == TL_E_LANE && code == (int)TL_E_NOMEM);
      if (!ok) fail_step(what, n, status, tl_last_message());
      TH_CHECK(rel_message_fresh(tl_last_message()));
      if (!use_map && status == TL_E_NOMEM) {
        /* A child entry failed: that lane's callback never ran. */
        TH_CHECK(fx->outcome.kind == TL_PHASE_SESSION);
        TH_CHECK(fx->lane_calls[fx->outcome.lane_index] == 0);
        TH_CHECK(strstr(fx->outcome.message, "child entry") != NULL);
      }
      if (use_map && status == TL_E_LANE) TH_CHECK(fx->map_outcome.failed);
      TH_CHECK(rel_watch_unchanged(&watch));
      rel_check_idle(held.ctx);
      TH_CHECK_OK(run_phase_fx(held.session, fx));
    } else if (status != TL_OK) {
      fail_step(what, n, status, tl_last_message());
    }
    rel_check_idle(held.ctx);
    for (int i = 0; i < 3; i++) tl_tensor_release(&fx->in[i]);
    for (int i = 0; i < MAP_ITEMS; i++) tl_tensor_release(&fx->lane_out[i]);
    tl_tensor_release(&fx->result);
    free(fx);
    th_held_close(&held);
    if (rel_alloc_live() != base) fail_step(what, n, status, "leaked");
    if (!fired) return;
  }
  TH_CHECK(!"the phase still failed after MAX_STEPS allocations");
}

static void oom_phase_run(void) {
  long points = 0;
  static const int budgets[3] = {1, 2, 4};
  for (int b = 0; b < 3; b++) step_phase(budgets[b], 0, &points);
  figure("phase_run", points);
}

static void oom_map(void) {
  long points = 0;
  static const int budgets[3] = {1, 2, 4};
  for (int b = 0; b < 3; b++) step_phase(budgets[b], 1, &points);
  figure("map", points);
}

TH_TEST_MAIN(TH_CASE(oom_context_create), TH_CASE(oom_session_open), TH_CASE(oom_ticket_entry),
             TH_CASE(oom_phase_run), TH_CASE(oom_map), TH_CASE(oom_einsum_plan_and_execute),
             TH_CASE(oom_contraction_routes), TH_CASE(oom_linalg_routes))
