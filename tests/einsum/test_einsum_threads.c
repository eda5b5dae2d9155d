/* tests/einsum/test_einsum_threads.c: a context of two threads gives the same bits as one
 * for every einsum route the docs promise it of (docs/design/einsum.md, "Threads"): the
 * elementwise product, the blocked copy, contractions (split by blocks of C, never along
 * the summed index). The shapes are large enough that the cost model splits them. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/context.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_test.h"

typedef struct bit_case {
  const char *spec;
  int n;
  int ranks[3];
  int64_t shapes[3][3];
} bit_case;

static const bit_case bit_cases[] = {
    {"ij,ij->ij", 2, {2, 2}, {{700, 600}, {700, 600}}},
    {"ij,ji->ij", 2, {2, 2}, {{700, 600}, {600, 700}}},
    {"ij,ij->ji", 2, {2, 2}, {{700, 600}, {700, 600}}},
    {"i,j->ij", 2, {1, 1}, {{900}, {800}}},
    {"ij,j->ij", 2, {2, 1}, {{700, 600}, {600}}},
    {"ij->ji", 1, {2}, {{700, 600}}},
    {"ij,jk->ik", 2, {2, 2}, {{300, 280}, {280, 260}}},
    {"bij,bjk->bik", 2, {3, 3}, {{8, 96, 80}, {8, 80, 96}}},
    {"ij,jk,kl->il", 3, {2, 2, 2}, {{200, 150}, {150, 220}, {220, 90}}},
};

static void run(tl_exec *exec, const bit_case *c, tl_dtype dtype, tl_tensor *out) {
  tl_tensor in[3];
  const tl_tensor *ops[3];
  for (int i = 0; i < c->n; i++) {
    TH_CHECK_OK(tl_tensor_create(dtype, c->ranks[i], c->shapes[i], &in[i]));
    TH_CHECK_OK(tl_random_into(exec, 77u + (uint64_t)i, &in[i]));
    ops[i] = &in[i];
  }
  TH_CHECK_OK(tl_einsum(exec, c->spec, c->n, ops, out));
  for (int i = 0; i < c->n; i++) tl_tensor_release(&in[i]);
}

static void einsum_two_threads_give_the_bits_of_one(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  int mismatches = 0;
  for (size_t k = 0; k < sizeof bit_cases / sizeof bit_cases[0]; k++) {
    for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
      tl_tensor a, b;
      run(one.exec, &bit_cases[k], (tl_dtype)dtype, &a);
      run(two.exec, &bit_cases[k], (tl_dtype)dtype, &b);
      int64_t count = tl_tensor_numel(&a);
      TH_CHECK(count == tl_tensor_numel(&b) && count > 0);
      if (memcmp(a.data, b.data, (size_t)count * tl_dtype_size((tl_dtype)dtype)) != 0) {
        fprintf(stderr, "  %s %s: two threads differ from one\n", bit_cases[k].spec,
                tl_dtype_name((tl_dtype)dtype));
        mismatches++;
      }
      tl_tensor_release(&a);
      tl_tensor_release(&b);
    }
  }
  TH_CHECK(mismatches == 0);
  th_held_close(&one);
  th_held_close(&two);
}

TH_TEST_MAIN(TH_CASE(einsum_two_threads_give_the_bits_of_one))
