/* examples/mps/mps.c: a small matrix product state program written against the public API
 * only (it links the shared library): a random complex MPS, its norm, left-canonical form by
 * QR, compression by truncated SVD with the truncation error the SVD reports, and the
 * amplitudes of every basis state evaluated as a batch on the pool's lanes with tl_map.
 *
 * Site i is a c128 tensor A[i] of shape (left bond, 2, right bond), column-major; the end
 * bonds have extent 1. The program checks its own results and exits non-zero when one is
 * off: the norm after normalising is 1, the error of the compressed state measured by
 * overlaps equals the discarded weight the SVDs reported, and the amplitudes' squares sum to
 * the compressed state's norm. Usage: tenlane-mps [sites] [bond] [kept bond] [threads]. */
#include <complex.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tenlane/tenlane.h>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    tl_status status_ = (call);                                                                    \
    if (status_ != TL_OK) {                                                                        \
      fprintf(stderr, "mps.c:%d: %s: %s\n", __LINE__, tl_status_name(status_), tl_last_message()); \
      exit(1);                                                                                     \
    }                                                                                              \
  } while (0)

/* ---- the numerical core ---------------------------------------------------------------- */

static void random_mps(tl_exec *x, tl_tensor *A, int n, int64_t bond, uint64_t seed) {
  for (int i = 0; i < n; i++) {
    int64_t shape[3] = {i == 0 ? 1 : bond, 2, i == n - 1 ? 1 : bond};
    CHECK(tl_tensor_create(TL_C128, 3, shape, &A[i]));
    CHECK(tl_random_into(x, seed + (uint64_t)i, &A[i]));
  }
}

/* <a|b>: the environment env(i, j) grows site by site, einsum("ij,isk,jsl->kl"). */
static double complex overlap(tl_exec *x, const tl_tensor *a, const tl_tensor *b, int n) {
  tl_tensor env, next, ca;
  CHECK(tl_tensor_create(TL_C128, 2, (int64_t[2]){1, 1}, &env));
  CHECK(tl_identity_into(x, &env));
  for (int i = 0; i < n; i++) {
    CHECK(tl_conj(x, &a[i], &ca));
    const tl_tensor *ops[3] = {&env, &ca, &b[i]};
    CHECK(tl_einsum(x, "ij,isk,jsl->kl", 3, ops, &next));
    tl_tensor_release(&ca);
    tl_tensor_release(&env);
    env = next;
  }
  tl_scalar v;
  CHECK(tl_tensor_get(&env, (int64_t[2]){0, 0}, &v));
  tl_tensor_release(&env);
  return v.re + I * v.im;
}

/* Left-canonical form by QR, sweeping right; returns the norm and normalises the state. */
static double left_canonical(tl_exec *x, tl_tensor *A, int n) {
  for (int i = 0; i + 1 < n; i++) {
    int64_t dl = A[i].shape[0], dr = A[i].shape[2];
    tl_tensor m, q, r, next;
    CHECK(tl_tensor_reshape_move(&A[i], 2, (int64_t[2]){dl * 2, dr}, &m));
    CHECK(tl_qr(x, &m, &q, &r));
    CHECK(tl_tensor_reshape_move(&q, 3, (int64_t[3]){dl, 2, q.shape[1]}, &A[i]));
    const tl_tensor *ops[2] = {&r, &A[i + 1]};
    CHECK(tl_einsum(x, "ij,jsk->isk", 2, ops, &next));
    tl_tensor_release(&m);
    tl_tensor_release(&r);
    tl_tensor_release(&A[i + 1]);
    A[i + 1] = next;
  }
  tl_tensor norm, unit;
  CHECK(tl_reduce(x, TL_REDUCE_NORM2, &A[n - 1], 3, (int[3]){0, 1, 2}, &norm));
  tl_scalar value;
  CHECK(tl_tensor_get(&norm, NULL, &value));
  CHECK(tl_scale(x, tl_scalar_real(1.0 / value.re), &A[n - 1], &unit));
  tl_tensor_release(&norm);
  tl_tensor_release(&A[n - 1]);
  A[n - 1] = unit;
  return value.re;
}

/* Truncated SVD sweeping left from a left-canonical state; returns the discarded weight. */
static double compress(tl_exec *x, tl_tensor *A, int n, int64_t kept) {
  tl_truncation cut = {sizeof(tl_truncation), kept, 0.0, 0.0};
  double discarded = 0.0;
  for (int i = n - 1; i > 0; i--) {
    int64_t dl = A[i].shape[0], dr = A[i].shape[2];
    tl_tensor m, u, s, vt, sc, us, next;
    tl_truncation_report report;
    CHECK(tl_tensor_reshape_move(&A[i], 2, (int64_t[2]){dl, 2 * dr}, &m));
    CHECK(tl_svd_reported(x, &cut, &m, &u, &s, &vt, &report));
    discarded += report.discarded_weight;
    CHECK(tl_tensor_reshape_move(&vt, 3, (int64_t[3]){report.rank, 2, dr}, &A[i]));
    CHECK(tl_convert(x, TL_C128, &s, &sc)); /* u diag(s): s as a complex row, broadcast */
    CHECK(tl_tensor_reshape_move(&sc, 2, (int64_t[2]){1, report.rank}, &sc));
    CHECK(tl_mul(x, &u, &sc, &us));
    const tl_tensor *ops[2] = {&A[i - 1], &us};
    CHECK(tl_einsum(x, "isj,jk->isk", 2, ops, &next));
    tl_tensor *done[] = {&m, &u, &s, &sc, &us, &A[i - 1]};
    for (int k = 0; k < 6; k++) tl_tensor_release(done[k]);
    A[i - 1] = next;
  }
  return discarded;
}

typedef struct batch {
  const tl_tensor *A;
  int n;
  int64_t bond;
  double complex *amplitude; /* one per item: item k is the basis state of k's bits */
} batch;

/* One item on a lane: the row vector v = A[0][:, s0, :] A[1][:, s1, :] ... in item scratch. */
static int amplitude(tl_exec *x, size_t item, int lane_index, void *arg) {
  (void)lane_index;
  const batch *b = arg;
  double complex *buf;
  tl_status status =
      tl_exec_scratch(x, 2 * (size_t)b->bond * sizeof *buf, TL_SCRATCH_ITEM, (void **)&buf);
  if (status != TL_OK) return (int)status;
  tl_tensor v, w, site;
  tl_tensor_wrap(TL_C128, 2, (int64_t[2]){1, 1}, NULL, buf, 0, &v);
  buf[0] = 1.0;
  for (int i = 0; i < b->n; i++) {
    tl_tensor_select(&b->A[i], 1, (int64_t)(item >> i) & 1, &site);
    tl_tensor_wrap(TL_C128, 2, (int64_t[2]){1, site.shape[1]}, NULL,
                   buf + (i % 2 == 0 ? b->bond : 0), 0, &w);
    status = tl_gemm_into(x, tl_scalar_real(1.0), &v, &site, tl_scalar_real(0.0), &w);
    if (status != TL_OK) return (int)status;
    v = w;
  }
  b->amplitude[item] = *(double complex *)tl_tensor_element(&v, (int64_t[2]){0, 0});
  return 0;
}

/* ---- the program ------------------------------------------------------------------------ */

static int close_to(const char *what, double got, double want, double tol) {
  int ok = fabs(got - want) <= tol;
  printf("%-44s %.12g (expected %.12g)%s\n", what, got, want, ok ? "" : "  <-- OFF");
  return ok;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 12;
  int64_t bond = argc > 2 ? atoll(argv[2]) : 16, kept = argc > 3 ? atoll(argv[3]) : 6;
  int threads = argc > 4 ? atoi(argv[4]) : 0;
  if (n < 2 || n > 20 || bond < 1 || kept < 1) {
    fprintf(stderr, "usage: tenlane-mps [sites 2..20] [bond] [kept bond] [threads]\n");
    return 2;
  }
  printf("tenlane %s: %d sites, bond %lld compressed to %lld\n", tl_version(), n, (long long)bond,
         (long long)kept);
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  tl_context *ctx;
  tl_session *session;
  CHECK(tl_context_create(&config, &ctx));
  CHECK(tl_session_open(ctx, tl_owner_new(), TL_WAIT, &session));
  tl_exec *x = tl_session_exec(session);

  tl_tensor *A = calloc((size_t)n, sizeof *A), *B = calloc((size_t)n, sizeof *B);
  random_mps(x, A, n, bond, 2026);
  double norm = left_canonical(x, A, n);
  printf("%-44s %.6g\n", "norm of the random state", norm);
  for (int i = 0; i < n; i++) CHECK(tl_unary(x, TL_OP_COPY, &A[i], &B[i]));
  double discarded = compress(x, B, n, kept);
  double complex ab = overlap(x, A, B, n);
  double bb = creal(overlap(x, B, B, n)), aa = creal(overlap(x, A, A, n));
  int ok = close_to("<a|a> after normalising", aa, 1.0, 1e-10);
  ok &= close_to("||a - b||^2 from overlaps vs discarded", aa + bb - 2.0 * creal(ab), discarded,
                 1e-9);
  ok &= close_to("<b|b> vs 1 - discarded", bb, 1.0 - discarded, 1e-9);

  size_t count = (size_t)1 << n;
  batch work = {B, n, bond, calloc(count, sizeof(double complex))};
  tl_map_outcome outcome;
  CHECK(tl_map(session, count, amplitude, &work, &outcome));
  double sum = 0.0;
  for (size_t k = 0; k < count; k++) sum += creal(work.amplitude[k] * conj(work.amplitude[k]));
  ok &= close_to("sum of |amplitude|^2 over the batch vs <b|b>", sum, bb, 1e-9);
  printf("truncation error ||a - b|| = %.6g over %zu amplitudes on %d lanes\n", sqrt(discarded),
         count, tl_context_budget(ctx));

  for (int i = 0; i < n; i++) tl_tensor_release(&A[i]), tl_tensor_release(&B[i]);
  free(A), free(B), free(work.amplitude);
  CHECK(tl_session_close(session));
  CHECK(tl_context_destroy(ctx));
  return ok ? 0 : 1;
}
