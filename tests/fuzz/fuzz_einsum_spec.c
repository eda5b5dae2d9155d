/* tests/fuzz/fuzz_einsum_spec.c: libFuzzer target for the einsum spec parser and planner,
 * through the public API only.
 *
 * Input: byte 0 gives the operand count (1..6); then per operand a rank byte (0..4) and one
 * byte per extent (0..4); then a path-kind byte; the rest, cut at 1100 bytes and ended with
 * NUL, is the spec. The target plans the spec with tl_einsum_path and, when that accepts it
 * and the work is small, runs it on small integer-valued f64 tensors four ways (fresh with
 * the automatic path, into with the greedy path, into with the exact path, fresh in the
 * operands' layout: TL_EINSUM_LAYOUT_KEEP). It stops the process (a finding) when:
 *   - the planner and the executing call disagree on accepting the spec (same status),
 *   - a rejection leaves no message,
 *   - the four executions differ (integer data: every path computes exactly the same sums),
 *   - the kept layout is not dense (every element its own place, within the count),
 *   - anything crashes, reads or writes out of bounds, leaks or hits undefined behaviour
 *     (ASan + UBSan + LeakSanitizer in the fuzz build). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/context.h"
#include "tenlane/einsum.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"

#include "fuzz_common.h"

#define MAX_OPS 6
#define SPEC_CUT 1100

static void finding(const char *what, const char *spec, tl_status a, tl_status b) {
  fprintf(stderr, "FINDING: %s (spec \"%s\": %s vs %s; message \"%s\")\n", what, spec,
          tl_status_name(a), tl_status_name(b), tl_last_message());
  abort();
}

static void fill(tl_tensor *t, uint64_t seed) {
  int64_t n = tl_tensor_numel(t);
  double *data = t->data;
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    data[i] = (double)((int)(seed >> 60) % 5 - 2);
  }
}

/* Equal values, element by element. Not bytes: the data are small integers, so every path
 * computes the same exact values, but a zero's sign may differ between routes (a sum-free
 * product gives -2 * 0 = -0, a GEMM accumulates 0 + -0 = +0), and -0 == +0. */
static int same(const tl_tensor *x, const tl_tensor *y) {
  int64_t n = tl_tensor_numel(x);
  if (n != tl_tensor_numel(y) || x->rank != y->rank) return 0;
  const double *a = x->data, *b = y->data;
  for (int64_t i = 0; i < n; i++)
    if (!(a[i] == b[i])) return 0;
  return 1;
}

/* The same values index by index, whatever the two layouts. */
static int same_at(const tl_tensor *x, const tl_tensor *y) {
  int64_t n = tl_tensor_numel(x), idx[TL_MAX_RANK];
  if (n != tl_tensor_numel(y) || x->rank != y->rank) return 0;
  for (int64_t p = 0; p < n; p++) {
    int64_t rest = p;
    for (int k = 0; k < x->rank; k++) idx[k] = rest % x->shape[k], rest /= x->shape[k];
    tl_scalar a, b;
    if (tl_tensor_get(x, idx, &a) != TL_OK || tl_tensor_get(y, idx, &b) != TL_OK) return 0;
    if (!(a.re == b.re)) return 0;
  }
  return 1;
}

/* Dense: no two indices share an element, and the last lies within the element count. */
static int dense(const tl_tensor *t) {
  int64_t n = tl_tensor_numel(t), last = 0;
  for (int k = 0; k < t->rank; k++)
    if (t->shape[k] > 0) last += (t->shape[k] - 1) * t->strides[k];
  return !tl_tensor_self_overlap(t) && (n == 0 || last == n - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  tl_session *session = fuzz_session();
  size_t at = 0;
#define NEXT() (at < size ? bytes[at++] : 0)
  int n = 1 + NEXT() % MAX_OPS;
  int ranks[MAX_OPS];
  int64_t shape_store[MAX_OPS][4];
  const int64_t *shapes[MAX_OPS];
  for (int i = 0; i < n; i++) {
    ranks[i] = NEXT() % 5;
    for (int k = 0; k < ranks[i]; k++) shape_store[i][k] = NEXT() % 5;
    shapes[i] = shape_store[i];
  }
  tl_einsum_path_kind kind = (tl_einsum_path_kind)(NEXT() % 3);
#undef NEXT
  size_t spec_length = size - at < SPEC_CUT ? size - at : SPEC_CUT;
  char *spec = malloc(spec_length + 1);
  memcpy(spec, bytes + at, spec_length);
  spec[spec_length] = '\0';

  tl_einsum_path_info info;
  tl_status planned = tl_einsum_path(kind, spec, n, ranks, shapes, &info);
  if (planned != TL_OK && tl_last_message()[0] == '\0')
    finding("rejection without a message", spec, planned, planned);
  if (planned == TL_OK && (info.n_operands != n || info.n_steps != (n > 1 ? n - 1 : 0)))
    finding("path of the wrong length", spec, planned, planned);

  /* Execute only what is small: a few thousand multiply-adds. */
  int run = planned != TL_OK || (info.flops <= 2e5 && info.largest_intermediate <= 4096);
  tl_tensor operands[MAX_OPS];
  const tl_tensor *ops[MAX_OPS];
  int made = 0;
  for (int i = 0; i < n && run; i++) {
    if (tl_tensor_create(TL_F64, ranks[i], shapes[i], &operands[i]) != TL_OK) abort();
    fill(&operands[i], (uint64_t)i + 1);
    ops[i] = &operands[i];
    made++;
  }
  if (run) {
    tl_exec *exec = tl_session_exec(session);
    tl_tensor fresh;
    tl_status executed = tl_einsum(exec, spec, n, ops, &fresh);
    int comparable =
        planned == executed ||
        (planned == TL_OK && (executed == TL_E_SCRATCH_LIMIT || executed == TL_E_NOMEM));
    if (!comparable) finding("tl_einsum_path and tl_einsum disagree", spec, planned, executed);
    if (executed != TL_OK && tl_exec_message(exec)[0] == '\0')
      finding("failed einsum without a message", spec, executed, executed);
    if (executed == TL_OK) {
      tl_tensor greedy, exact;
      if (tl_tensor_create_like(&fresh, &greedy) != TL_OK) abort();
      if (tl_tensor_create_like(&fresh, &exact) != TL_OK) abort();
      tl_status g = tl_einsum_ex_into(exec,
                                      &(tl_einsum_options){.size = sizeof(tl_einsum_options),
                                                           .path_kind = TL_EINSUM_PATH_GREEDY},
                                      spec, n, ops, &greedy);
      tl_status e = tl_einsum_ex_into(exec,
                                      &(tl_einsum_options){.size = sizeof(tl_einsum_options),
                                                           .path_kind = TL_EINSUM_PATH_OPTIMAL},
                                      spec, n, ops, &exact);
      if (g != TL_OK || e != TL_OK)
        finding("an _into path failed where the fresh form ran", spec, g, e);
      if (!same(&fresh, &greedy) || !same(&fresh, &exact))
        finding("paths computed different results", spec, TL_OK, TL_OK);
      tl_einsum_options keep;
      tl_einsum_options_init(&keep);
      keep.layout = TL_EINSUM_LAYOUT_KEEP;
      tl_tensor kept;
      tl_status k = tl_einsum_ex(exec, &keep, spec, n, ops, &kept);
      if (k != TL_OK) finding("the kept layout failed where the ordered one ran", spec, TL_OK, k);
      if (k == TL_OK && (!same_at(&fresh, &kept) || !dense(&kept)))
        finding("the kept layout differs or is not dense", spec, TL_OK, TL_OK);
      if (k == TL_OK) tl_tensor_release(&kept);
      tl_tensor_release(&greedy);
      tl_tensor_release(&exact);
      tl_tensor_release(&fresh);
    }
  }
  for (int i = 0; i < made; i++) tl_tensor_release(&operands[i]);
  free(spec);
  return 0;
}
