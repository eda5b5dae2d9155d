/* tests/kernels/test_gemm_split_bits.c: a GEMM cut into blocks of C over a team gives the
 * bits of the uncut product (gemm.c: every block runs the whole product's kernel). Before,
 * each block chose its own kernel by its own size, so a c64 product of 8 x 16384 x 4 (past
 * the tiny complex kernel's 80^3, on the packed kernel) cut in four went to the tiny kernel,
 * which rounds differently, and two threads gave other bits than one. Shapes where the
 * whole and a block sit on different sides of a kernel's bound, in every dtype, through
 * tl_gemm_into and through tl_contract_into on a permuted output (the contraction route
 * that packs an operand, then splits the GEMM); plus a last block of one line (a thin
 * product where the whole is not). Each result is also checked against a direct sum. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/ops.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

typedef struct gemm_shape {
  int64_t m, n, k;
  int c_row_major;
} gemm_shape;

static const gemm_shape shapes[] = {
    {8, 16384, 4, 1},  /* complex: whole on the packed kernel, quarters on the tiny one */
    {16384, 8, 4, 0},  /* the same, cut by rows */
    {3, 131072, 3, 1}, /* the permutation network's last step, as einsum hands it */
    {400, 40, 30, 0},  /* real: whole past the small kernel's 64^3, halves within it */
    {200, 200, 64, 0}, /* c128 short k, wide C: whole on BLIS, halves on the packed kernel */
    {49, 48, 200, 0},  /* halves of 48 and 1 rows: the last block would be a thin product */
};

/* |c - a b| within rounding, element by element (every 13th row, every column). */
static int check_product(const tl_tensor *a, const tl_tensor *b, const tl_tensor *c) {
  int bad = 0;
  const int64_t m = c->shape[0], n = c->shape[1], k = a->shape[1];
  for (int64_t i = 0; i < m && bad < 3; i += 13) {
    for (int64_t j = 0; j < n && bad < 3; j += (n > 4096 ? 97 : 1)) {
      double complex want = 0;
      double scale = 0;
      for (int64_t p = 0; p < k; p++) {
        int64_t ia[2] = {i, p}, ib[2] = {p, j};
        double complex t = th_num_get(a, ia) * th_num_get(b, ib);
        want += t;
        scale += cabs(t);
      }
      int64_t ic[2] = {i, j};
      if (!th_num_close_enough(th_num_get(c, ic), want, th_num_tolerance(c->dtype) * 8, scale))
        bad++;
    }
  }
  return bad == 0;
}

static void make_c(tl_dtype dt, const gemm_shape *s, tl_tensor *c) {
  int64_t shape[2] = {s->m, s->n};
  TH_CHECK_OK(tl_tensor_create(dt, 2, shape, c));
  if (s->c_row_major) { /* a row-major view: strides (n, 1) */
    c->strides[0] = s->n;
    c->strides[1] = 1;
  }
}

static void gemm_split_over_two_threads_gives_one_threads_bits(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  int mismatches = 0;
  for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
    const gemm_shape *s = &shapes[si];
    for (int d = 0; d < TL_DTYPE_COUNT; d++) {
      tl_dtype dt = (tl_dtype)d;
      int64_t sa[2] = {s->m, s->k}, sb[2] = {s->k, s->n};
      tl_tensor a, b, c1, c2;
      TH_CHECK_OK(tl_tensor_create(dt, 2, sa, &a));
      TH_CHECK_OK(tl_tensor_create(dt, 2, sb, &b));
      TH_CHECK_OK(tl_random_into(one.exec, 11u + si, &a));
      TH_CHECK_OK(tl_random_into(one.exec, 29u + si, &b));
      make_c(dt, s, &c1);
      make_c(dt, s, &c2);
      TH_CHECK_OK(tl_gemm_into(one.exec, tl_scalar_real(1), &a, &b, tl_scalar_real(0), &c1));
      TH_CHECK_OK(tl_gemm_into(two.exec, tl_scalar_real(1), &a, &b, tl_scalar_real(0), &c2));
      TH_CHECK(check_product(&a, &b, &c1));
      size_t bytes = (size_t)(s->m * s->n) * tl_dtype_size(dt);
      if (memcmp(c1.data, c2.data, bytes) != 0) {
        fprintf(stderr, "  gemm %lld x %lld x %lld %s: two threads differ from one\n",
                (long long)s->m, (long long)s->n, (long long)s->k, tl_dtype_name(dt));
        mismatches++;
      }
      tl_tensor_release(&a), tl_tensor_release(&b);
      tl_tensor_release(&c1), tl_tensor_release(&c2);
    }
  }
  TH_CHECK(mismatches == 0);
  th_held_close(&one);
  th_held_close(&two);
}

/* out[legs reversed, y] = sum_x w[x, y] big[legs, x], 2^14 rows: under the blocked route's
 * 2 MiB in every dtype, so big is permuted whole and the GEMM (11 x 16384 x 3, past the
 * tiny complex kernel's bound; a quarter on the provider) is split. */
#define LEGS 14
#define KX 3
#define NY 11
static void contract_permuted_split_over_two_threads_gives_one_threads_bits(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  int w_labels[2] = {100, 101}, big_labels[LEGS + 1], out_labels[LEGS + 1];
  int64_t big_shape[LEGS + 1], out_shape[LEGS + 1], w_shape[2] = {KX, NY};
  for (int i = 0; i < LEGS; i++) {
    big_labels[i] = i;
    out_labels[LEGS - 1 - i] = i;
    big_shape[i] = out_shape[i] = 2;
  }
  big_labels[LEGS] = 100;
  big_shape[LEGS] = KX;
  out_labels[LEGS] = 101;
  out_shape[LEGS] = NY;
  int mismatches = 0;
  for (int d = 0; d < TL_DTYPE_COUNT; d++) {
    tl_dtype dt = (tl_dtype)d;
    tl_tensor w, big, o1, o2;
    TH_CHECK_OK(tl_tensor_create(dt, 2, w_shape, &w));
    TH_CHECK_OK(tl_tensor_create(dt, LEGS + 1, big_shape, &big));
    TH_CHECK_OK(tl_tensor_create(dt, LEGS + 1, out_shape, &o1));
    TH_CHECK_OK(tl_tensor_create(dt, LEGS + 1, out_shape, &o2));
    TH_CHECK_OK(tl_random_into(one.exec, 5u, &w));
    TH_CHECK_OK(tl_random_into(one.exec, 6u, &big));
    TH_CHECK_OK(tl_contract_into(one.exec, out_labels, &w, w_labels, &big, big_labels, &o1));
    TH_CHECK_OK(tl_contract_into(two.exec, out_labels, &w, w_labels, &big, big_labels, &o2));
    int bad = 0;
    int64_t bi[LEGS + 1], oi[LEGS + 1], wi[2];
    for (int64_t row = 0; row < ((int64_t)1 << LEGS) && bad < 3; row += 5) {
      for (int i = 0; i < LEGS; i++) bi[i] = oi[LEGS - 1 - i] = (row >> i) & 1;
      for (int64_t y = 0; y < NY; y++) {
        double complex want = 0;
        double scale = 0;
        for (int64_t x = 0; x < KX; x++) {
          bi[LEGS] = wi[0] = x;
          wi[1] = y;
          double complex t = th_num_get(&w, wi) * th_num_get(&big, bi);
          want += t;
          scale += cabs(t);
        }
        oi[LEGS] = y;
        if (!th_num_close_enough(th_num_get(&o1, oi), want, th_num_tolerance(dt) * 8, scale)) bad++;
      }
    }
    TH_CHECK(bad == 0);
    if (memcmp(o1.data, o2.data, (size_t)tl_tensor_numel(&o1) * tl_dtype_size(dt)) != 0) {
      fprintf(stderr, "  permuted contraction %s: two threads differ from one\n",
              tl_dtype_name(dt));
      mismatches++;
    }
    tl_tensor_release(&w), tl_tensor_release(&big);
    tl_tensor_release(&o1), tl_tensor_release(&o2);
  }
  TH_CHECK(mismatches == 0);
  th_held_close(&one);
  th_held_close(&two);
}

TH_TEST_MAIN(TH_CASE(gemm_split_over_two_threads_gives_one_threads_bits),
             TH_CASE(contract_permuted_split_over_two_threads_gives_one_threads_bits))
