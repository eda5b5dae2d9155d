/* tests/kernels/test_route_errors.c: a table of malformed route calls, each of which must
 * fail with its typed status, leave a message, and write nothing; and the steady-state
 * property: a repeated route call makes no heap allocation (counted by allocator hooks). */
#include <stdatomic.h>

#include "kt_support.h"

static void route_bad_input_table_fails_typed_and_writes_nothing(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t s34[2] = {3, 4}, s35[2] = {3, 5}, s43[2] = {4, 3}, s3[1] = {3}, s344[3] = {3, 4, 4};
  kt_tensor a, b, out, b35, bf32, c128, a3, big;
  kt_make(&a, TL_F64, 2, s34, KT_COL, 0);
  kt_make(&b, TL_F64, 2, s34, KT_ROW, 0);
  kt_make(&out, TL_F64, 2, s34, KT_COL, 0);
  kt_make(&b35, TL_F64, 2, s35, KT_COL, 0);
  kt_make(&bf32, TL_F32, 2, s34, KT_COL, 0);
  kt_make(&c128, TL_C128, 2, s34, KT_COL, 0);
  kt_make(&a3, TL_F64, 3, s344, KT_COL, 0);
  kt_make(&big, TL_F64, 2, s43, KT_COL, 0);
  tl_tensor out_alias_b = out.t; /* out shares b's memory, shifted by one element */
  out_alias_b.data = b.t.data;
  out_alias_b.offset = 1;
  out_alias_b.strides[0] = 1, out_alias_b.strides[1] = 3;
  tl_tensor out_zero_stride = out.t;
  out_zero_stride.strides[1] = 0;
  tl_tensor out_c128 = c128.t;
  tl_tensor negative = a.t;
  negative.shape[1] = -4;
  tl_tensor overflowing = a.t;
  overflowing.strides[1] = INT64_MAX / 2;
  tl_tensor rank17 = a.t;
  rank17.rank = TL_MAX_RANK + 1;
  tl_tensor no_data = a.t;
  no_data.data = NULL;
  tl_tensor bad_dtype = a.t;
  bad_dtype.dtype = (tl_dtype)11;
  tl_tensor fresh;
  memset(&fresh, 0x77, sizeof fresh);
  const tl_tensor fresh_before = fresh;
  int perm_bad[2] = {1, 1}, perm_ok[2] = {1, 0}, axes_bad[1] = {2}, axes_dup[2] = {0, 0};
  int axes0[1] = {0}, perm3[3] = {0, 1, 2};
  int l_ab[2] = {0, 1}, l_bc[2] = {1, 2}, l_ac[2] = {0, 2}, l_dup[2] = {0, 0}, l_big[2] = {0, 300};
  int l_a_only[2] = {0, 5}, l_c_neither[2] = {0, 7}, l_neg[2] = {-1, 1};
  int64_t s4[1] = {4}, s12[1] = {12};
  kt_tensor red4, flat12, mat3_4;
  kt_make(&red4, TL_F64, 1, s4, KT_COL, 0);
  kt_make(&flat12, TL_F64, 1, s12, KT_COL, 0);
  kt_make(&mat3_4, TL_F64, 1, s3, KT_COL, 0);
  int64_t s33[2] = {3, 3};
  kt_tensor out33;
  kt_make(&out33, TL_F64, 2, s33, KT_COL, 0);
  tl_tensor c_alias_a;
  TH_CHECK_OK(tl_tensor_slice(&a.t, 1, 0, 3, 1, &c_alias_a));
  tl_scalar one = tl_scalar_real(1), zero = tl_scalar_real(0), imag = {1.0, 2.0};

  struct {
    const char *name;
    tl_status expected;
    tl_status got;
  } rows[64];
  int n = 0;
#define BAD(EXPECTED, CALL)                                                                   \
  do {                                                                                        \
    kt_image before_out = kt_snapshot(&out.backing), before_b = kt_snapshot(&b.backing);      \
    kt_image before_big = kt_snapshot(&big.backing), before_33 = kt_snapshot(&out33.backing); \
    rows[n].name = #CALL;                                                                     \
    rows[n].expected = EXPECTED;                                                              \
    rows[n].got = (CALL);                                                                     \
    if (rows[n].got != rows[n].expected) {                                                    \
      char text[600];                                                                         \
      snprintf(text, sizeof text, "%s returned %s, expected %s (%s)", #CALL,                  \
               tl_status_name(rows[n].got), tl_status_name(EXPECTED), tl_last_message());     \
      th_test_fail_at(__FILE__, __LINE__, text);                                              \
    }                                                                                         \
    TH_CHECK(tl_last_message()[0] != '\0');                                                   \
    TH_CHECK(kt_unchanged(&before_out, &out.backing));                                        \
    TH_CHECK(kt_unchanged(&before_b, &b.backing));                                            \
    TH_CHECK(kt_unchanged(&before_big, &big.backing));                                        \
    TH_CHECK(kt_unchanged(&before_33, &out33.backing));                                       \
    TH_CHECK(memcmp(&fresh, &fresh_before, sizeof fresh) == 0);                               \
    n++;                                                                                      \
  } while (0)

  /* null and malformed arguments */
  BAD(TL_E_INVALID, tl_add_into(NULL, &a.t, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_add_into(h.exec, NULL, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_add_into(h.exec, &a.t, &b.t, NULL));
  BAD(TL_E_INVALID, tl_add(h.exec, &a.t, &b.t, NULL));
  BAD(TL_E_SHAPE, tl_add_into(h.exec, &negative, &b.t, &out.t));
  BAD(TL_E_SHAPE, tl_add_into(h.exec, &overflowing, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_add_into(h.exec, &rank17, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_add_into(h.exec, &no_data, &b.t, &out.t));
  BAD(TL_E_DTYPE, tl_add_into(h.exec, &bad_dtype, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_binary_into(h.exec, (tl_binary_op)9, &a.t, &b.t, &out.t));
  BAD(TL_E_INVALID, tl_unary_into(h.exec, (tl_unary_op)42, &a.t, &out.t));
  /* mismatched extents and dtypes */
  BAD(TL_E_SHAPE, tl_add_into(h.exec, &a.t, &b35.t, &out.t));
  BAD(TL_E_SHAPE, tl_add(h.exec, &a.t, &b35.t, &fresh));
  BAD(TL_E_DTYPE, tl_mul_into(h.exec, &a.t, &bf32.t, &out.t));
  BAD(TL_E_DTYPE, tl_sub_into(h.exec, &a.t, &b.t, &out_c128));
  BAD(TL_E_DTYPE, tl_abs_into(h.exec, &c128.t, &out_c128));
  BAD(TL_E_DTYPE, tl_axpby(h.exec, imag, &a.t, one, &out.t));
  BAD(TL_E_DTYPE, tl_fill_into(h.exec, imag, &out.t));
  /* aliasing outputs */
  BAD(TL_E_ALIAS, tl_add_into(h.exec, &a.t, &b.t, &out_alias_b));
  BAD(TL_E_ALIAS, tl_div_into(h.exec, &a.t, &b.t, &out_zero_stride));
  BAD(TL_E_ALIAS, tl_exp_into(h.exec, &b.t, &out_alias_b));
  BAD(TL_E_ALIAS, tl_axpby(h.exec, one, &out_alias_b, one, &b.t));
  BAD(TL_E_ALIAS, tl_copy_into(h.exec, &b.t, &out_alias_b));
  /* permute, reshape */
  BAD(TL_E_INVALID, tl_permute_into(h.exec, &a.t, perm_bad, &big.t));
  BAD(TL_E_INVALID, tl_permute_into(h.exec, &a.t, NULL, &big.t));
  BAD(TL_E_SHAPE, tl_permute_into(h.exec, &a.t, perm_ok, &out.t));
  BAD(TL_E_SHAPE, tl_permute_into(h.exec, &a3.t, perm3, &out.t));
  BAD(TL_E_SHAPE, tl_reshape_into(h.exec, &b35.t, &out.t));
  BAD(TL_E_SHAPE, tl_reshape(h.exec, 1, s4, &a.t, &fresh));
  /* reduce */
  BAD(TL_E_INVALID, tl_reduce_into(h.exec, TL_REDUCE_SUM, &a.t, 1, axes_bad, &red4.t));
  BAD(TL_E_INVALID, tl_reduce_into(h.exec, TL_REDUCE_SUM, &a.t, 2, axes_dup, &red4.t));
  BAD(TL_E_INVALID, tl_reduce_into(h.exec, (tl_reduce_op)8, &a.t, 1, axes0, &red4.t));
  BAD(TL_E_DTYPE, tl_reduce(h.exec, TL_REDUCE_MAX, &c128.t, 1, axes0, &fresh));
  BAD(TL_E_SHAPE, tl_reduce_into(h.exec, TL_REDUCE_SUM, &a.t, 1, axes0, &mat3_4.t));
  BAD(TL_E_DTYPE, tl_reduce_into(h.exec, TL_REDUCE_NORM2, &c128.t, 2, l_ab, &out_c128));
  BAD(TL_E_ALIAS, tl_reduce_into(h.exec, TL_REDUCE_SUM, &flat12.t, 0, NULL, &flat12.t));
  /* gemm */
  BAD(TL_E_SHAPE, tl_gemm_into(h.exec, one, &a3.t, &big.t, zero, &out.t));
  BAD(TL_E_SHAPE, tl_gemm_into(h.exec, one, &a.t, &a.t, zero, &out.t));
  BAD(TL_E_SHAPE, tl_gemm_into(h.exec, one, &a.t, &big.t, zero, &out.t));
  BAD(TL_E_ALIAS, tl_gemm_into(h.exec, one, &a.t, &big.t, zero, &c_alias_a));
  BAD(TL_E_DTYPE, tl_gemm_into(h.exec, imag, &a.t, &big.t, zero, &out33.t));
  BAD(TL_E_DTYPE, tl_gemm_into(h.exec, one, &a.t, &big.t, zero, &out_c128));
  /* contraction: a (i j) x big (j k) -> out (i k) would be 3x4 . 4x3 -> 3x3 */
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_ac, &a.t, l_big, &big.t, l_bc, &out33.t));
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_ac, &a.t, l_neg, &big.t, l_bc, &out33.t));
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_ac, &a.t, l_dup, &big.t, l_bc, &out33.t));
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_ac, &a.t, l_a_only, &big.t, l_bc, &out33.t));
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_c_neither, &a.t, l_ab, &big.t, l_bc, &out33.t));
  BAD(TL_E_INVALID, tl_contract_into(h.exec, l_ac, &a.t, NULL, &big.t, l_bc, &out33.t));
  BAD(TL_E_SHAPE, tl_contract_into(h.exec, l_ac, &a.t, l_ab, &big.t, l_bc, &out.t));
  BAD(TL_E_SHAPE, tl_contract_into(h.exec, l_ac, &a.t, l_ab, &b35.t, l_bc, &out33.t));
  BAD(TL_E_DTYPE, tl_contract_into(h.exec, l_ac, &a.t, l_ab, &bf32.t, l_bc, &out33.t));
  BAD(TL_E_ALIAS, tl_contract_into(h.exec, l_ac, &a.t, l_ab, &big.t, l_bc, &c_alias_a));
  BAD(TL_E_INVALID, tl_contract(h.exec, 2, l_c_neither, &a.t, l_ab, &big.t, l_bc, &fresh));
  BAD(TL_E_INVALID, tl_contract(h.exec, TL_MAX_RANK + 1, l_ac, &a.t, l_ab, &big.t, l_bc, &fresh));
  TH_CHECK(n >= 30);
  /* the surface keeps the last failure's message too */
  TH_CHECK(tl_exec_message(h.exec)[0] != '\0');
  th_held_close(&h);
  kt_free(&a), kt_free(&b), kt_free(&out), kt_free(&b35), kt_free(&bf32), kt_free(&c128);
  kt_free(&a3), kt_free(&big), kt_free(&red4), kt_free(&flat12), kt_free(&mat3_4);
  kt_free(&out33);
}

/* ---- steady state --------------------------------------------------------------------- */

static atomic_long hook_allocations;

static void *counting_alloc(size_t size, size_t align, void *user) {
  (void)user;
  atomic_fetch_add(&hook_allocations, 1);
  if (align < sizeof(void *)) align = sizeof(void *);
  return aligned_alloc(align, (size + align - 1) & ~(align - 1));
}

static void counting_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

typedef struct workload {
  kt_tensor a, b, out, big, bigt, tiny_a, tiny_b, tiny_c, c_neg, red, x3, y3, c3;
} workload;

static void run_workload(tl_exec *exec, workload *w) {
  int perm[2] = {1, 0}, axes[1] = {1};
  int ij[2] = {0, 1}, jk[2] = {1, 2}, ik[2] = {0, 2};
  int x3l[3] = {0, 1, 2}, y3l[3] = {2, 1, 3}, c3l[2] = {3, 0};
  TH_CHECK_OK(tl_add_into(exec, &w->a.t, &w->b.t, &w->out.t));
  TH_CHECK_OK(tl_axpby(exec, tl_scalar_real(2), &w->a.t, tl_scalar_real(0.5), &w->out.t));
  TH_CHECK_OK(tl_permute_into(exec, &w->big.t, perm, &w->bigt.t));
  TH_CHECK_OK(tl_reduce_into(exec, TL_REDUCE_SUM, &w->big.t, 1, axes, &w->red.t));
  TH_CHECK_OK(tl_contract_into(exec, ik, &w->tiny_a.t, ij, &w->tiny_b.t, jk, &w->tiny_c.t));
  tl_tensor bt, bigv;
  TH_CHECK_OK(tl_tensor_transpose_view(&w->b.t, 0, 1, &bt)); /* 200 x 300, negative strides */
  TH_CHECK_OK(
      tl_gemm_into(exec, tl_scalar_real(1), &w->a.t, &bt, tl_scalar_real(0.5), &w->c_neg.t));
  TH_CHECK_OK(tl_contract_into(exec, c3l, &w->x3.t, x3l, &w->y3.t, y3l, &w->c3.t));
  TH_CHECK_OK(tl_tensor_transpose_view(&w->big.t, 0, 1, &bigv));
  TH_CHECK_OK(tl_copy_into(exec, &bigv, &w->bigt.t));
}

static void routes_make_no_heap_allocation_in_steady_state(void) {
  tl_allocator hooks = {counting_alloc, counting_free, NULL};
  tl_allocator_set(&hooks);
  for (int threads = 1; threads <= 2; threads++) {
    th_held h;
    th_held_open(&h, threads);
    workload w;
    int64_t s[2] = {300, 200}, sb[2] = {400, 300}, sbt[2] = {300, 400}, sr[1] = {400};
    int64_t s2[2] = {2, 2}, sx[3] = {20, 30, 40}, sy[3] = {40, 30, 50}, sc[2] = {50, 20};
    int64_t sg[2] = {300, 300};
    kt_make(&w.a, TL_F64, 2, s, KT_COL, 0);
    kt_make(&w.b, TL_F64, 2, s, KT_NEGATIVE, 0);
    kt_make(&w.out, TL_F64, 2, s, KT_ROW, 0);
    kt_make(&w.big, TL_F64, 2, sb, KT_COL, 0);
    kt_make(&w.bigt, TL_F64, 2, sbt, KT_COL, 0);
    kt_make(&w.red, TL_F64, 1, sr, KT_COL, 0);
    kt_make(&w.tiny_a, TL_F64, 2, s2, KT_COL, 0);
    kt_make(&w.tiny_b, TL_F64, 2, s2, KT_COL, 0);
    kt_make(&w.tiny_c, TL_F64, 2, s2, KT_COL, 0);
    kt_make(&w.c_neg, TL_F64, 2, sg, KT_NEGATIVE, 0);
    kt_make(&w.x3, TL_F64, 3, sx, KT_PERMUTED, 0);
    kt_make(&w.y3, TL_F64, 3, sy, KT_GENERAL, 0);
    kt_make(&w.c3, TL_F64, 2, sc, KT_NEGATIVE, 0);
    run_workload(h.exec, &w); /* grows the arena */
    run_workload(h.exec, &w);
    long before = atomic_load(&hook_allocations);
    uint64_t count_before = tl_allocation_count();
    for (int i = 0; i < 20; i++) run_workload(h.exec, &w);
    long after = atomic_load(&hook_allocations);
    if (after != before || tl_allocation_count() != count_before) {
      char text[200];
      snprintf(text, sizeof text, "%ld heap allocations in 20 repeats with %d thread(s)",
               after - before, threads);
      th_test_fail_at(__FILE__, __LINE__, text);
    }
    th_held_close(&h);
    kt_free(&w.a), kt_free(&w.b), kt_free(&w.out), kt_free(&w.big), kt_free(&w.bigt);
    kt_free(&w.red), kt_free(&w.tiny_a), kt_free(&w.tiny_b), kt_free(&w.tiny_c);
    kt_free(&w.c_neg), kt_free(&w.x3), kt_free(&w.y3), kt_free(&w.c3);
  }
  tl_allocator_set(NULL);
}

TH_TEST_MAIN(TH_CASE(route_bad_input_table_fails_typed_and_writes_nothing),
             TH_CASE(routes_make_no_heap_allocation_in_steady_state))
