/* tests/fuzz/fuzz_tensor_desc.c: libFuzzer target for tensor descriptors: validation, the
 * memory-range queries, and routes that read and write through the descriptor.
 *
 * Input: a dtype byte (0..5: four valid, two not), a rank byte (0..TL_MAX_RANK + 1, the last
 * one past the limit), then per axis an extent and a stride, then an offset; each value is
 * either small (one byte) or a raw
 * 64-bit word (chosen by a flag byte), so overflowing spans are reached as easily as
 * ordinary ones. The target validates the descriptor; when it is valid and small, it backs
 * it with a heap buffer of exactly the element range tl_tensor_extent_range reports (so any
 * access outside that range is caught by ASan), then:
 *   - sums it with tl_reduce and compares with a naive strided sum (integer data: exact),
 *   - copies it into a fresh column-major tensor and compares element by element,
 *   - contracts it over its first axis with a vector of ones (tl_contract) and compares
 *     with a naive partial sum,
 *   - when it maps no two indices to one element, fills it through tl_fill_into (a write through
 *     the descriptor) and checks every element it covers;
 * and stops the process on any disagreement (a finding). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/context.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"

#include "fuzz_common.h"

#define MAX_ELEMENTS 4096

static void finding(const char *what, const tl_tensor *t) {
  fprintf(stderr, "FINDING: %s (dtype %d rank %d offset %lld", what, (int)t->dtype, t->rank,
          (long long)t->offset);
  for (int k = 0; k < t->rank && k < TL_MAX_RANK; k++)
    fprintf(stderr, " [%lld:%lld]", (long long)t->shape[k], (long long)t->strides[k]);
  fprintf(stderr, "; message \"%s\")\n", tl_last_message());
  abort();
}

typedef struct reader {
  const uint8_t *bytes;
  size_t size, at;
} reader;

static uint8_t next_byte(reader *r) { return r->at < r->size ? r->bytes[r->at++] : 0; }

static int64_t next_value(reader *r, int signed_small) {
  uint8_t flag = next_byte(r);
  if (flag & 0x80) {
    uint64_t raw = 0;
    for (int i = 0; i < 8; i++) raw = (raw << 8) | next_byte(r);
    return (int64_t)raw;
  }
  int64_t small = flag & 0x0f;
  if (signed_small && (flag & 0x40)) small = -small;
  return small;
}

/* The real part of element `e` as a double, and setting one to a small integer. */
static double get_re(const tl_tensor *t, const void *p) {
  switch (t->dtype) {
    case TL_F32:
    case TL_C64:
      return *(const float *)p;
    default:
      return *(const double *)p;
  }
}

static void set_small(tl_dtype dtype, void *p, int value) {
  switch (dtype) {
    case TL_F32:
      *(float *)p = (float)value;
      break;
    case TL_F64:
      *(double *)p = value;
      break;
    case TL_C64:
      ((float *)p)[0] = (float)value, ((float *)p)[1] = 0;
      break;
    case TL_C128:
      ((double *)p)[0] = value, ((double *)p)[1] = 0;
      break;
  }
}

/* Visit every index of t (column-major order); calls fn with the element pointer. */
typedef void (*visit_fn)(const tl_tensor *t, const int64_t *idx, void *p, void *arg);
static void visit(const tl_tensor *t, visit_fn fn, void *arg) {
  int64_t n = tl_tensor_numel(t);
  int64_t idx[TL_MAX_RANK] = {0};
  for (int64_t e = 0; e < n; e++) {
    fn(t, idx, tl_tensor_element(t, idx), arg);
    for (int k = 0; k < t->rank; k++) {
      if (++idx[k] < t->shape[k]) break;
      idx[k] = 0;
    }
  }
}

static void add_re(const tl_tensor *t, const int64_t *idx, void *p, void *arg) {
  (void)idx;
  *(double *)arg += get_re(t, p);
}

typedef struct compare {
  const tl_tensor *other;
  int bad;
} compare;

static void compare_copy(const tl_tensor *t, const int64_t *idx, void *p, void *arg) {
  compare *c = arg;
  if (get_re(t, p) != get_re(c->other, tl_tensor_element(c->other, idx))) c->bad = 1;
}

static void partial_sum(const tl_tensor *t, const int64_t *idx, void *p, void *arg) {
  /* arg: the expected result, indexed by the remaining axes (column-major). */
  tl_tensor *expect = arg;
  double *slot = tl_tensor_element(expect, idx + 1);
  *slot += get_re(t, p);
}

static void check_one(const tl_tensor *t, const int64_t *idx, void *p, void *arg) {
  (void)idx;
  if (get_re(t, p) != 1.0) *(int *)arg = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size) {
  tl_session *session = fuzz_session();
  reader r = {bytes, size, 0};
  tl_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = (tl_dtype)(next_byte(&r) % 6);
  t.rank = next_byte(&r) % (TL_MAX_RANK + 2); /* 0..TL_MAX_RANK + 1: one rank past the limit */
  for (int k = 0; k < t.rank && k < TL_MAX_RANK; k++) {
    t.shape[k] = next_value(&r, 0);
    t.strides[k] = next_value(&r, 1);
  }
  t.offset = next_value(&r, 0);
  static char placeholder[16];
  t.data = placeholder;

  tl_status valid = tl_tensor_validate(&t, "t");
  if (valid != TL_OK) {
    if (tl_last_message()[0] == '\0') finding("rejected without a message", &t);
    return 0;
  }
  int64_t lo, hi;
  if (!tl_tensor_extent_range(&t, &lo, &hi)) finding("valid but no extent range", &t);
  int64_t numel = tl_tensor_numel(&t);
  if (numel < 0) finding("valid but numel overflows", &t);
  if (numel == 0 || hi < lo || hi - lo >= MAX_ELEMENTS || numel > MAX_ELEMENTS) return 0;

  /* Back exactly the reported range: anything outside it is a heap overflow. */
  size_t esize = tl_dtype_size(t.dtype);
  size_t span = (size_t)(hi - lo + 1);
  char *buffer = malloc(span * esize);
  t.data = buffer;
  t.offset -= lo;
  if (tl_tensor_validate(&t, "t") != TL_OK) finding("rebased descriptor invalid", &t);
  for (size_t i = 0; i < span; i++) set_small(t.dtype, buffer + i * esize, (int)(i % 7) - 3);

  tl_exec *exec = tl_session_exec(session);
  /* 1. the sum of every element */
  double naive = 0;
  visit(&t, add_re, &naive);
  int axes[TL_MAX_RANK];
  for (int k = 0; k < t.rank; k++) axes[k] = k;
  tl_tensor sum;
  tl_status status = tl_reduce(exec, TL_REDUCE_SUM, &t, t.rank, axes, &sum);
  if (status != TL_OK) finding("tl_reduce refused a valid tensor", &t);
  if (get_re(&sum, sum.data) != naive) finding("tl_reduce disagrees with the naive sum", &t);
  tl_tensor_release(&sum);

  /* 2. a copy into column-major */
  tl_tensor copy;
  if (tl_unary(exec, TL_OP_COPY, &t, &copy) != TL_OK) finding("tl_unary copy refused", &t);
  compare cmp = {&copy, 0};
  visit(&t, compare_copy, &cmp);
  if (cmp.bad || !tl_tensor_is_col_major(&copy)) finding("the copy differs", &t);
  tl_tensor_release(&copy);

  /* 3. contraction over axis 0 with ones */
  if (t.rank >= 1) {
    tl_tensor ones, out, expect;
    const int64_t ones_shape[1] = {t.shape[0]};
    if (tl_tensor_create(t.dtype, 1, ones_shape, &ones) != TL_OK) abort();
    for (int64_t i = 0; i < t.shape[0]; i++) set_small(t.dtype, (char *)ones.data + i * esize, 1);
    int a_labels[TL_MAX_RANK], c_labels[TL_MAX_RANK];
    for (int k = 0; k < t.rank; k++) a_labels[k] = k;
    for (int k = 1; k < t.rank; k++) c_labels[k - 1] = k;
    const int b_labels[1] = {0};
    status = tl_contract(exec, t.rank - 1, c_labels, &t, a_labels, &ones, b_labels, &out);
    if (status != TL_OK) finding("tl_contract refused a valid tensor", &t);
    if (tl_tensor_create(TL_F64, t.rank - 1, t.shape + 1, &expect) != TL_OK) abort();
    visit(&t, partial_sum, &expect);
    compare against = {&expect, 0};
    visit(&out, compare_copy, &against);
    if (against.bad) finding("tl_contract disagrees with the naive partial sum", &t);
    tl_tensor_release(&expect);
    tl_tensor_release(&out);
    tl_tensor_release(&ones);
  }

  /* 4. a write through the descriptor */
  if (!tl_tensor_self_overlap(&t)) {
    if (tl_fill_into(exec, tl_scalar_real(1.0), &t) != TL_OK) finding("tl_fill_into refused", &t);
    int bad = 0;
    visit(&t, check_one, &bad);
    if (bad) finding("tl_fill_into missed an element", &t);
  } else if (tl_fill_into(exec, tl_scalar_real(1.0), &t) != TL_E_ALIAS) {
    finding("tl_fill_into accepted a self-overlapping output", &t);
  }
  free(buffer);
  return 0;
}
