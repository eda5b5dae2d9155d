/* Concurrent provider calls from lanes: every lane of a tl_map calls the linked provider
 * (real and complex GEMM) and LAPACK (QR, SVD, LU) at the same time as the others, and each
 * item's results are the same bits as when one lane runs all items one after another. A
 * provider that kept unlocked shared state (a packing buffer, a context being rewritten, a
 * per-process error slot) would mix items up here: OpenBLAS 0.3.21's serial build did, now
 * and then, until tenlane serialized its calls (provider_blas.c). The lane surfaces are
 * single-threaded, so the two runs take the same code path item by item. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/tenlane.h"
#include "th_fixtures.h"
#include "th_test.h"

enum { ITEMS = 24, N = 96, OUTPUTS = 5 };

typedef struct run {
  /* per item: gemm f64, gemm c128, qr r, svd s, lu */
  void *out[ITEMS][OUTPUTS];
  size_t bytes[ITEMS][OUTPUTS];
} run;

static void fill(tl_tensor *t, uint64_t seed) {
  int64_t count = 1;
  for (int d = 0; d < t->rank; d++) count *= t->shape[d];
  const int64_t doubles = count * (int64_t)(tl_dtype_size(t->dtype) / sizeof(double));
  double *x = (double *)t->data + t->offset;
  for (int64_t i = 0; i < doubles; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = (double)(seed >> 11) / 9007199254740992.0 - 0.5;
  }
}

static tl_tensor matrix(tl_dtype dtype, uint64_t seed) {
  int64_t shape[2] = {N, N};
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_create(dtype, 2, shape, &t));
  fill(&t, seed);
  return t;
}

/* Keeps a copy of a result tensor's bytes (dense, as the routes create them). */
static void keep(run *r, size_t item, int slot, const tl_tensor *t) {
  int64_t count = 1;
  for (int d = 0; d < t->rank; d++) count *= t->shape[d];
  size_t bytes = (size_t)count * tl_dtype_size(t->dtype);
  r->out[item][slot] = malloc(bytes);
  TH_CHECK(r->out[item][slot] != NULL);
  memcpy(r->out[item][slot], (const char *)t->data + t->offset * (int64_t)tl_dtype_size(t->dtype),
         bytes);
  r->bytes[item][slot] = bytes;
}

static int item_fn(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index;
  run *r = arg;
  tl_status status = TL_OK;
  for (int k = 0; k < 2 && status == TL_OK; k++) {
    const tl_dtype dt = k ? TL_C128 : TL_F64;
    tl_tensor a = matrix(dt, 1000u + item * 7u + (unsigned)k), b = matrix(dt, 2000u + item), c;
    status = tl_gemm(exec, &a, &b, &c);
    if (status == TL_OK) keep(r, item, k, &c), tl_tensor_release(&c);
    tl_tensor_release(&a);
    tl_tensor_release(&b);
  }
  tl_tensor a = matrix(TL_F64, 3000u + item);
  tl_tensor q, rr, u, s, vt, lu;
  int64_t rank, pivots[N];
  if (status == TL_OK && (status = tl_qr(exec, &a, &q, &rr)) == TL_OK) {
    keep(r, item, 2, &rr);
    tl_tensor_release(&q), tl_tensor_release(&rr);
  }
  if (status == TL_OK && (status = tl_svd(exec, NULL, &a, &u, &s, &vt, &rank)) == TL_OK) {
    keep(r, item, 3, &s);
    tl_tensor_release(&u), tl_tensor_release(&s), tl_tensor_release(&vt);
  }
  if (status == TL_OK && (status = tl_lu(exec, &a, &lu, pivots)) == TL_OK) {
    keep(r, item, 4, &lu);
    tl_tensor_release(&lu);
  }
  tl_tensor_release(&a);
  return (int)status;
}

static void provider_calls_from_concurrent_lanes_match_one_lane(void) {
  th_held held;
  th_held_open(&held, 4);
  static run one, all;
  tl_map_options just_one = {sizeof(tl_map_options), 1};
  tl_map_outcome outcome;
  TH_CHECK_OK(tl_map_ex(held.session, &just_one, ITEMS, item_fn, &one, &outcome));
  for (int round = 0; round < 3; round++) {
    memset(&all, 0, sizeof all);
    TH_CHECK_OK(tl_map(held.session, ITEMS, item_fn, &all, &outcome));
    for (size_t i = 0; i < ITEMS; i++)
      for (int o = 0; o < OUTPUTS; o++) {
        TH_CHECK(all.bytes[i][o] == one.bytes[i][o] && all.bytes[i][o] > 0);
        if (memcmp(all.out[i][o], one.out[i][o], one.bytes[i][o]) != 0) {
          char what[96];
          snprintf(what, sizeof what, "round %d item %zu output %d differs from the one-lane run",
                   round, i, o);
          th_test_fail_at(__FILE__, __LINE__, what);
        }
        free(all.out[i][o]);
      }
  }
  for (size_t i = 0; i < ITEMS; i++)
    for (int o = 0; o < OUTPUTS; o++) free(one.out[i][o]);
  th_held_close(&held);
}

TH_TEST_MAIN(TH_CASE(provider_calls_from_concurrent_lanes_match_one_lane))
