/* tests/einsum/test_einsum_threads.c: a context of two threads gives the same bits as one
 * for every einsum route the docs promise it of (docs/design/einsum.md, "Threads"): the
 * elementwise product, the blocked copy, contractions (split by blocks of C, never along
 * the summed index, except a full contraction's one dot, cut into chunks fixed by its
 * length). The shapes are large enough that the cost model splits them in every
 * dtype (f32's elementwise steps are the smallest: about 7 MB moved); the cost model's
 * decisions on steps of known size are checked too. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "einsum/einsum_int.h"
#include "kernels/kernels.h"
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
    {"ij,ij->ij", 2, {2, 2}, {{1000, 900}, {1000, 900}}},
    {"ij,ji->ij", 2, {2, 2}, {{1000, 900}, {900, 1000}}},
    {"ij,ij->ji", 2, {2, 2}, {{1000, 900}, {1000, 900}}},
    {"i,j->ij", 2, {1, 1}, {{1500}, {1200}}},
    {"ij,j->ij", 2, {2, 1}, {{1000, 900}, {900}}},
    {"ij->ji", 1, {2}, {{1000, 900}}},
    {"ij,jk->ik", 2, {2, 2}, {{300, 280}, {280, 260}}},
    {"bij,bjk->bik", 2, {3, 3}, {{16, 96, 80}, {16, 80, 96}}},
    {"ij,jk,kl->il", 3, {2, 2, 2}, {{400, 300}, {300, 440}, {440, 180}}},
    /* one long dot, cut into chunks of TL__DOT_CHUNK products whatever the team */
    {"ij,ij->", 2, {2, 2}, {{1000, 900}, {1000, 900}}},
    /* dots side by side, down a transposed operand; then a summed label made a batch label */
    {"ab,ba->a", 2, {2, 2}, {{1000, 900}, {900, 1000}}},
    {"ab,ba->", 2, {2, 2}, {{1000, 900}, {900, 1000}}},
    {"abc,cba->b", 2, {3, 3}, {{100, 40, 90}, {90, 40, 100}}},
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

/* The cost model (src/einsum/threads.c): a step splits only when it is large and can be
 * cut. (Whether the bit cases above split depends on the measured cost of a split, which a
 * loaded machine or a sanitizer raises; on an idle one they do.) */
static void einsum_cost_model_splits_only_steps_that_pay(void) {
  th_held two;
  th_held_open(&two, 2);
  /* a 1000^3 GEMM (12 ms on one thread at the model's rate) and a 4096^2 product (4.5 ms)
   * split whenever a split costs what a pool's does (microseconds to tens of them); on a
   * machine so loaded that the measured split took 0.1 ms or more (seen: a 2-core machine
   * at load 8) the model rightly keeps the product on one thread, so only the GEMM is held
   * to splitting there. */
  /* The split's cost is sampled at each of the first seven decisions that need it and then
   * fixed at their median: seven calls fill it, and later calls return that median. */
  double split = 0.0;
  for (int s = 0; s < 7; s++) split = tl__einsum_split_seconds(two.exec, 2);
  TH_CHECK(split > 0.0);
  TH_CHECK(tl__einsum_split_seconds(two.exec, 2) == split);
  TH_CHECK(tl__einsum_split_seconds(two.exec, 2) == split);
  double gemm = 2.0e9, gemm_bytes = 8.0 * 3e6;
  TH_CHECK(tl__einsum_step_team(two.exec, 2, gemm, gemm_bytes, 1e6, 1) == 2);
  double outer = 4096.0 * 4096;
  if (split < 1e-4)
    TH_CHECK(tl__einsum_step_team(two.exec, 2, outer, 8.0 * (outer + 8192), outer, 0) == 2);
  else
    fprintf(stderr, "  measured split %.0f us (a loaded machine): the 4096^2 case not held\n",
            split * 1e6);
  /* the f64 matrix chain's GEMMs (120x300x80: about 90 us on one core) stay on one thread */
  double chain = 2.0 * 120 * 300 * 80, chain_bytes = 8.0 * (120 * 300 + 300 * 80 + 120 * 80);
  TH_CHECK(tl__einsum_step_team(two.exec, 2, chain, chain_bytes, 120.0 * 80, 1) == 1);
  /* and so does its largest, 160x310x140 (about 180 us): split, it made the whole network
   * slower at two threads than at one. The same estimate for a complex step splits where a
   * split costs what a pool's does (tenlane's complex kernels gained there). */
  double big = 2.0 * 160 * 310 * 140, big_bytes = 8.0 * (160 * 310 + 310 * 140 + 160 * 140);
  TH_CHECK(tl__einsum_step_team(two.exec, 2, big, big_bytes, 160.0 * 140, 1) == 1);
  if (split < 1e-5)
    TH_CHECK(tl__einsum_step_team(two.exec, 2, big, big_bytes, 160.0 * 140, 0) == 2);
  /* a step of one part cannot be cut, however large; a full contraction (ij,ij->, one
   * output) is handed its dot's chunks as parts, and splits */
  TH_CHECK(tl__einsum_step_team(two.exec, 2, 2.0 * 4096 * 4096, 8.0 * 2 * 4096 * 4096, 1.0, 1) ==
           1);
  if (split < 1e-4)
    TH_CHECK(tl__einsum_step_team(two.exec, 2, 2.0 * 4096 * 4096, 8.0 * 2 * 4096 * 4096,
                                  4096.0 * 4096 / (double)TL__DOT_CHUNK, 1) == 2);
  /* a team of one never splits */
  TH_CHECK(tl__einsum_step_team(two.exec, 1, 1e12, 1e12, 1e9, 0) == 1);
  th_held_close(&two);
}

TH_TEST_MAIN(TH_CASE(einsum_two_threads_give_the_bits_of_one),
             TH_CASE(einsum_cost_model_splits_only_steps_that_pay))
