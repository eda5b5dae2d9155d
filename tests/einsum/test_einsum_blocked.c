/* tests/einsum/test_einsum_blocked.c: contractions whose large operand's rows land permuted
 * in the output, which tl_contract_into takes block by block (contract.c, "large operands
 * packed block by block"): the last step of a tensor-network permutation, out[rows
 * bit-reversed, n] = sum_k A[rows, k] W[k, n] over 2^17 rows (2 MiB of f32 up to 8 MiB of
 * c128, past the route's 2 MiB threshold), in every dtype, against a direct reference:
 * - A with k contiguous (rows gathered by table, with the a-fast runs) and with k strided
 *   (rows gathered by the permute plan), k = 4 and k = 3 (12-byte f32 rows: no whole words);
 * - W of 3 columns (each run's GEMM by the tiny-B kernel) and of 17 (past its reach);
 * - the large operand first and second (the route swaps them);
 * - two threads give one thread's bits (blocks are whole GEMMs on any thread);
 * - the same products with the rows in order (one tall GEMM, gemm.c's tiny-B route);
 * - and with the output's n axis first, where f64 and c128 rows are read in place. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

#define LEGS_MAX 17
static int n_legs = LEGS_MAX; /* the output's 2-extent axes */
#define ROWS ((int64_t)1 << n_legs)
/* Rows checked against the reference: every 7th (each block holds hundreds of them; a
 * sanitizer build checking all 2^17 rows of 32 cases ran past the test alarm). The two
 * thread counts are compared on every element. */
#define ROW_STEP 7

static uint64_t rng_state = 0x5eed5eedull;

static void fill(tl_tensor *t) {
  int64_t n = tl_tensor_numel(t), idx[TL_MAX_RANK];
  for (int64_t e = 0; e < n; e++) {
    int64_t rem = e;
    for (int k = 0; k < t->rank; k++) idx[k] = rem % t->shape[k], rem /= t->shape[k];
    double re = th_num_uniform(&rng_state) - 0.5, im = th_num_uniform(&rng_state) - 0.5;
    th_num_set(t, idx, re + im * I);
  }
}

/* One case: A's k axis first (k_first 1: contiguous in a column-major A) or last; the large operand
 * first or second in the spec. Returns the output (caller releases). */
static int reversed_out = 1; /* 0: the rows land in order (a plain tall product) */
static int n_first = 0;      /* 1: the output's n axis first (contiguous in tenlane's order) */
static int one_column = 0;   /* 1: W has one column (n 1) instead of 3 */

static void run(tl_exec *exec, tl_dtype dtype, int64_t k, int k_first, int large_first,
                const tl_tensor *a, const tl_tensor *w, tl_tensor *out) {
  /* legs a..q, k is 'x', n is 'y' */
  char legs[LEGS_MAX + 1], reversed[LEGS_MAX + 1], a_term[LEGS_MAX + 2], spec[96];
  for (int i = 0; i < n_legs; i++)
    legs[i] = (char)('a' + i), reversed[reversed_out ? n_legs - 1 - i : i] = legs[i];
  legs[n_legs] = reversed[n_legs] = '\0';
  snprintf(a_term, sizeof a_term, k_first == 1 ? "x%s" : "%sx", legs);
  const char *pre = n_first ? "y" : "", *post = n_first ? "" : "y";
  if (large_first)
    snprintf(spec, sizeof spec, "%s,xy->%s%s%s", a_term, pre, reversed, post);
  else
    snprintf(spec, sizeof spec, "xy,%s->%s%s%s", a_term, pre, reversed, post);
  int64_t shape[LEGS_MAX + 1];
  for (int i = 0; i <= n_legs; i++) shape[i] = 2;
  shape[n_first ? 0 : n_legs] = w->shape[1];
  TH_CHECK_OK(tl_tensor_create(dtype, n_legs + 1, shape, out));
  const tl_tensor *ops[2] = {large_first ? a : w, large_first ? w : a};
  TH_CHECK_OK(tl_einsum_into(exec, spec, 2, ops, out));
  (void)k;
}

static void check_every_dtype(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  const tl_dtype dtypes[4] = {TL_F32, TL_F64, TL_C64, TL_C128};
  for (int d = 0; d < 4; d++) {
    for (int64_t k = 3; k <= 4; k++) {
      for (int k_first = 0; k_first < 3; k_first++) {
        /* k_first 2: k last and W 4 x 17, past the tiny-B kernel's reach (the provider's
         * GEMM per run); once per dtype. */
        if (k_first == 2 && k != 4) continue;
        const int64_t n_out = k_first == 2 ? 17 : one_column ? 1 : 3;
        tl_dtype dt = dtypes[d];
        int64_t a_shape[LEGS_MAX + 1], w_shape[2] = {k, n_out};
        for (int i = 0; i <= n_legs; i++) a_shape[i] = 2;
        a_shape[k_first == 1 ? 0 : n_legs] = k;
        tl_tensor a, w;
        TH_CHECK_OK(tl_tensor_create(dt, n_legs + 1, a_shape, &a));
        TH_CHECK_OK(tl_tensor_create(dt, 2, w_shape, &w));
        fill(&a);
        fill(&w);
        for (int large_first = 0; large_first < 2; large_first++) {
          tl_tensor got1, got2;
          run(one.exec, dt, k, k_first, large_first, &a, &w, &got1);
          run(two.exec, dt, k, k_first, large_first, &a, &w, &got2);
          size_t bytes = (size_t)tl_tensor_numel(&got1) * tl_dtype_size(dt);
          int same = memcmp(got1.data, got2.data, bytes) == 0;
          int bad = 0;
          int64_t ai[LEGS_MAX + 1], oi[LEGS_MAX + 1], wi[2];
          for (int64_t row = 0; row < ROWS && bad < 3; row += ROW_STEP) {
            for (int i = 0; i < n_legs; i++) {
              int64_t bit = (row >> i) & 1;
              ai[k_first == 1 ? i + 1 : i] = bit;
              oi[(reversed_out ? n_legs - 1 - i : i) + n_first] = bit;
            }
            for (int64_t n = 0; n < n_out; n++) {
              double complex want = 0;
              double scale = 0;
              for (int64_t kk = 0; kk < k; kk++) {
                ai[k_first == 1 ? 0 : n_legs] = kk;
                wi[0] = kk;
                wi[1] = n;
                double complex p = th_num_get(&a, ai) * th_num_get(&w, wi);
                want += p;
                scale += cabs(p);
              }
              oi[n_first ? 0 : n_legs] = n;
              if (!th_num_close_enough(th_num_get(&got1, oi), want, th_num_tolerance(dt) * 8,
                                       scale)) {
                fprintf(stderr, "  %s k %lld k_first %d large_first %d row %lld n %lld\n",
                        tl_dtype_name(dt), (long long)k, k_first, large_first, (long long)row,
                        (long long)n);
                bad++;
              }
            }
          }
          TH_CHECK(bad == 0);
          if (!same)
            fprintf(stderr, "  %s k %lld k_first %d large_first %d: two threads differ\n",
                    tl_dtype_name(dt), (long long)k, k_first, large_first);
          TH_CHECK(same);
          tl_tensor_release(&got1);
          tl_tensor_release(&got2);
        }
        tl_tensor_release(&a);
        tl_tensor_release(&w);
      }
    }
  }
  th_held_close(&one);
  th_held_close(&two);
}

static void einsum_permuted_rows_by_blocks_match_reference(void) {
  reversed_out = 1;
  check_every_dtype();
}

/* The same products with the rows in order: one tall GEMM, which gemm.c gives to the tiny-B
 * rows when k is contiguous in A (k last) and to the provider otherwise. */
static void einsum_tall_products_with_a_tiny_b_match_reference(void) {
  reversed_out = 0;
  check_every_dtype();
}

/* The permuted rows with the output's n axis contiguous: with A's k contiguous too (k first),
 * f64 and c128 rows are read where they lie, without the packed copy
 * (tl__gemm_tiny_nk_rows, on an x86 build at AVX2 or above); the other dtypes and layouts
 * pack as before. */
static void einsum_permuted_rows_read_in_place_match_reference(void) {
  reversed_out = 1;
  n_first = 1;
  check_every_dtype();
  n_first = 0;
}

/* The same with one column of W and 2^16 rows: an f64 output under TL__STREAM_MIN_BYTES,
 * whose rows are stored through the cache (the larger f64 ones above are streamed). */
static void einsum_permuted_rows_in_place_small_match_reference(void) {
  n_legs = 16;
  one_column = 1;
  einsum_permuted_rows_read_in_place_match_reference();
  one_column = 0;
  n_legs = LEGS_MAX;
}

TH_TEST_MAIN(TH_CASE(einsum_permuted_rows_by_blocks_match_reference),
             TH_CASE(einsum_tall_products_with_a_tiny_b_match_reference),
             TH_CASE(einsum_permuted_rows_read_in_place_match_reference),
             TH_CASE(einsum_permuted_rows_in_place_small_match_reference))
