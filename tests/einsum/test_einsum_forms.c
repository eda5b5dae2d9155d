/* tests/einsum/test_einsum_forms.c: the spec forms beyond 52 letters and the caller's path.
 *
 * - Integer labels ("{7}") give the same result as the letter spec they rename, mixed with
 *   letters, and a network of 61 distinct labels (30 three-axis operands: a matrix chain
 *   whose every factor carries a free extent-1 label) matches a chain of plain matrix
 *   products computed here.
 * - An explicit path in opt_einsum's linear format gives the automatic path's result, is
 *   cached (a repeated call makes no heap allocation), and every malformed path is
 *   TL_E_INVALID with a message naming the step, with the output untouched.
 * - TL_EINSUM_LAYOUT_KEEP (tl_einsum_ex) lays a fresh result out as the last step's inputs
 *   hold their labels, whatever the surface's order, with the bits of the ordered result;
 *   options of the older size ignore the field, an unknown layout is TL_E_INVALID, and a
 *   path passed in the options is the path tl_einsum_with_path takes. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_test.h"

static tl_tensor random_tensor(tl_exec *exec, tl_dtype dtype, int rank, const int64_t *shape,
                               uint64_t seed) {
  tl_tensor t;
  TH_CHECK_OK(tl_tensor_create(dtype, rank, shape, &t));
  TH_CHECK_OK(tl_random_into(exec, seed, &t));
  return t;
}

/* max |a - b| over elements, as complex doubles; a and b of one shape (column-major). */
static double max_diff(const tl_tensor *a, const tl_tensor *b) {
  int64_t count = tl_tensor_numel(a);
  TH_CHECK(count == tl_tensor_numel(b));
  double worst = 0.0;
  int64_t idx[TL_MAX_RANK];
  for (int64_t p = 0; p < count; p++) {
    int64_t rest = p;
    for (int k = 0; k < a->rank; k++) {
      idx[k] = rest % a->shape[k];
      rest /= a->shape[k];
    }
    tl_scalar x, y;
    TH_CHECK_OK(tl_tensor_get(a, idx, &x));
    TH_CHECK_OK(tl_tensor_get(b, idx, &y));
    double d = hypot(x.re - y.re, x.im - y.im);
    if (d > worst) worst = d;
  }
  return worst;
}

static double tolerance(tl_dtype dtype) {
  return dtype == TL_F32 || dtype == TL_C64 ? 1e-4 : 1e-11;
}

static void einsum_integer_labels_match_letters(void) {
  th_held h;
  th_held_open(&h, 1);
  static const char *pairs[][2] = {
      {"ij,jk->ik", "{0}{1},{1}{2}->{0}{2}"},
      {"ij,jk->ik", "i{5},{5}k->ik"},
      {"ij,jk", "{0}{12},{12}{3}"},
      {"ii->i", "{4}{4}->{4}"},
      {"ij,ij->ji", "{9}{1},{9}{1}->{1}{9}"},
      {"...ij,...jk->...ik", "...{0}{1},...{1}{2}->...{0}{2}"},
      {"abc,cd->abd", "{7}{1234567890}c,c{3}->{7}{1234567890}{3}"},
  };
  int64_t s2[2] = {4, 5}, s3[2] = {5, 3}, s_sq[2] = {4, 4}, b3[3] = {2, 4, 5}, b4[3] = {2, 5, 3};
  int64_t t3[3] = {2, 3, 4}, t2[2] = {4, 3};
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    for (size_t c = 0; c < sizeof pairs / sizeof pairs[0]; c++) {
      tl_tensor x, y;
      int n = 2;
      if (c == 3) {
        x = random_tensor(h.exec, (tl_dtype)dtype, 2, s_sq, 1);
        n = 1;
      } else if (c == 4) {
        x = random_tensor(h.exec, (tl_dtype)dtype, 2, s2, 1);
        y = random_tensor(h.exec, (tl_dtype)dtype, 2, s2, 2);
      } else if (c == 5) {
        x = random_tensor(h.exec, (tl_dtype)dtype, 3, b3, 1);
        y = random_tensor(h.exec, (tl_dtype)dtype, 3, b4, 2);
      } else if (c == 6) {
        x = random_tensor(h.exec, (tl_dtype)dtype, 3, t3, 1);
        y = random_tensor(h.exec, (tl_dtype)dtype, 2, t2, 2);
      } else {
        x = random_tensor(h.exec, (tl_dtype)dtype, 2, s2, 1);
        y = random_tensor(h.exec, (tl_dtype)dtype, 2, s3, 2);
      }
      const tl_tensor *ops[2] = {&x, &y};
      tl_tensor want, got;
      TH_CHECK_OK(tl_einsum(h.exec, pairs[c][0], n, ops, &want));
      tl_status status = tl_einsum(h.exec, pairs[c][1], n, ops, &got);
      if (status != TL_OK) fprintf(stderr, "  %s: %s\n", pairs[c][1], tl_last_message());
      TH_CHECK_OK(status);
      TH_CHECK(got.rank == want.rank);
      for (int k = 0; k < got.rank; k++) TH_CHECK(got.shape[k] == want.shape[k]);
      TH_CHECK(max_diff(&got, &want) <= tolerance((tl_dtype)dtype));
      tl_tensor_release(&got);
      tl_tensor_release(&want);
      tl_tensor_release(&x);
      if (n == 2) tl_tensor_release(&y);
    }
  }
  /* malformed integer labels and an output integer no input has */
  int64_t s[2] = {2, 2};
  tl_tensor x = random_tensor(h.exec, TL_F64, 2, s, 3), out;
  const tl_tensor *ops[2] = {&x, &x};
  TH_CHECK_STATUS(tl_einsum(h.exec, "{0}{,{1}{2}", 2, ops, &out), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "{N}") != NULL);
  TH_CHECK_STATUS(tl_einsum(h.exec, "{0}{12345678901},{1}{2}", 2, ops, &out), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum(h.exec, "{0}{1},{1}{2}->{0}{3}", 2, ops, &out), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "{3}") != NULL);
  tl_tensor_release(&x);
  th_held_close(&h);
}

/* 30 factors A_k[{k}, {k+1}, {100+k}] (extents 2, 2, 1): 61 distinct labels. The output
 * keeps {0}, the 30 free labels and {30}: the chain product with 30 extent-1 axes between. */
static void einsum_network_of_61_labels_matches_the_chain_product(void) {
  enum { F = 30 };
  th_held h;
  th_held_open(&h, 1);
  tl_tensor factors[F];
  const tl_tensor *ops[F];
  char spec[2048];
  size_t at = 0;
  int64_t shape[3] = {2, 2, 1};
  for (int k = 0; k < F; k++) {
    factors[k] = random_tensor(h.exec, TL_F64, 3, shape, 10u + (uint64_t)k);
    ops[k] = &factors[k];
    at += (size_t)snprintf(spec + at, sizeof spec - at, "%s{%d}{%d}{%d}", k ? "," : "", k, k + 1,
                           100 + k);
  }
  at += (size_t)snprintf(spec + at, sizeof spec - at, "->{0}");
  for (int k = 0; k < F; k++) at += (size_t)snprintf(spec + at, sizeof spec - at, "{%d}", 100 + k);
  snprintf(spec + at, sizeof spec - at, "{%d}", F);
  /* the chain product, by hand */
  double m[2][2] = {{1, 0}, {0, 1}};
  for (int k = 0; k < F; k++) {
    const double *a = factors[k].data;
    double r[2][2];
    for (int i = 0; i < 2; i++) {
      for (int j = 0; j < 2; j++) r[i][j] = m[i][0] * a[0 + 2 * j] + m[i][1] * a[1 + 2 * j];
    }
    memcpy(m, r, sizeof m);
  }
  tl_tensor got;
  tl_status status = tl_einsum(h.exec, spec, F, ops, &got);
  if (status != TL_OK) fprintf(stderr, "  %s\n", tl_last_message());
  TH_CHECK_OK(status);
  TH_CHECK(got.rank == F + 2 && got.shape[0] == 2 && got.shape[F + 1] == 2);
  const double *g = got.data;
  double scale = fabs(m[0][0]) + fabs(m[0][1]) + fabs(m[1][0]) + fabs(m[1][1]);
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 2; j++) TH_CHECK(fabs(g[i + 2 * j] - m[i][j]) <= 1e-12 * (1.0 + scale));
  }
  tl_tensor_release(&got);
  for (int k = 0; k < F; k++) tl_tensor_release(&factors[k]);
  th_held_close(&h);
}

static void einsum_explicit_path_matches_auto_and_is_cached(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t sa[2] = {6, 5}, sb[2] = {5, 7}, sc[2] = {7, 4}, sd[2] = {4, 6};
  for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
    tl_tensor a = random_tensor(h.exec, (tl_dtype)dtype, 2, sa, 1);
    tl_tensor b = random_tensor(h.exec, (tl_dtype)dtype, 2, sb, 2);
    tl_tensor c = random_tensor(h.exec, (tl_dtype)dtype, 2, sc, 3);
    tl_tensor d = random_tensor(h.exec, (tl_dtype)dtype, 2, sd, 4);
    const tl_tensor *ops[4] = {&a, &b, &c, &d};
    tl_tensor want;
    TH_CHECK_OK(tl_einsum(h.exec, "ij,jk,kl,lm->im", 4, ops, &want));
    /* every linear path of four operands that opt_einsum could give, a few of them */
    static const int paths[][6] = {
        {0, 1, 0, 1, 0, 1}, {2, 3, 0, 1, 0, 1}, {1, 2, 0, 2, 0, 1}, {3, 2, 1, 0, 1, 0}};
    for (size_t p = 0; p < sizeof paths / sizeof paths[0]; p++) {
      tl_tensor got;
      TH_CHECK_OK(tl_einsum_with_path(h.exec, 3, paths[p], "ij,jk,kl,lm->im", 4, ops, &got));
      TH_CHECK(max_diff(&got, &want) <= 10 * tolerance((tl_dtype)dtype));
      tl_tensor_release(&got);
    }
    /* planned once: a repeated _into call makes no heap allocation */
    tl_tensor out;
    TH_CHECK_OK(tl_tensor_create((tl_dtype)dtype, 2, want.shape, &out));
    TH_CHECK_OK(tl_einsum_with_path_into(h.exec, 3, paths[1], "ij,jk,kl,lm->im", 4, ops, &out));
    uint64_t before = tl_allocation_count();
    TH_CHECK_OK(tl_einsum_with_path_into(h.exec, 3, paths[1], "ij,jk,kl,lm->im", 4, ops, &out));
    TH_CHECK(tl_allocation_count() == before);
    TH_CHECK(max_diff(&out, &want) <= 10 * tolerance((tl_dtype)dtype));
    tl_tensor_release(&out);
    tl_tensor_release(&want);
    tl_tensor_release(&a);
    tl_tensor_release(&b);
    tl_tensor_release(&c);
    tl_tensor_release(&d);
  }
  th_held_close(&h);
}

static void einsum_invalid_paths_fail_typed_and_write_nothing(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t s[2] = {3, 3};
  tl_tensor a = random_tensor(h.exec, TL_F64, 2, s, 1);
  const tl_tensor *ops[3] = {&a, &a, &a};
  tl_tensor out;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 2, s, &out));
  double *o = out.data;
  for (int k = 0; k < 9; k++) o[k] = 1234.5;
  static const struct {
    int steps;
    int path[6];
    const char *says;
  } bad[] = {
      {1, {0, 1}, "need 2 pairwise steps"},             /* too few */
      {3, {0, 1, 0, 1, 0, 1}, "need 2 pairwise steps"}, /* too many */
      {2, {0, 3, 0, 1}, "step 0 is (0, 3)"},            /* outside the list */
      {2, {0, 1, 0, 2}, "step 1 is (0, 2)"},            /* outside after a step */
      {2, {1, 1, 0, 1}, "step 0 is (1, 1)"},            /* one tensor twice */
      {2, {-1, 0, 0, 1}, "step 0 is (-1, 0)"},          /* negative */
  };
  for (size_t c = 0; c < sizeof bad / sizeof bad[0]; c++) {
    tl_status status =
        tl_einsum_with_path_into(h.exec, bad[c].steps, bad[c].path, "ij,jk,kl->il", 3, ops, &out);
    TH_CHECK_STATUS(status, TL_E_INVALID);
    if (strstr(tl_last_message(), bad[c].says) == NULL)
      fprintf(stderr, "  case %zu: \"%s\" lacks \"%s\"\n", c, tl_last_message(), bad[c].says);
    TH_CHECK(strstr(tl_last_message(), bad[c].says) != NULL);
  }
  TH_CHECK_STATUS(tl_einsum_with_path_into(h.exec, 2, NULL, "ij,jk,kl->il", 3, ops, &out),
                  TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_ex_into(h.exec,
                                    &(tl_einsum_options){.size = sizeof(tl_einsum_options),
                                                         .path_kind = TL_EINSUM_PATH_GIVEN},
                                    "ij,jk,kl->il", 3, ops, &out),
                  TL_E_INVALID);
  for (int k = 0; k < 9; k++) TH_CHECK(o[k] == 1234.5);
  /* the surface still works, with a good path */
  int good[4] = {1, 2, 0, 1};
  TH_CHECK_OK(tl_einsum_with_path_into(h.exec, 2, good, "ij,jk,kl->il", 3, ops, &out));
  tl_tensor_release(&out);
  tl_tensor_release(&a);
  th_held_close(&h);
}

/* 1 when a and b hold the same bits at every index. */
static int same_values(const tl_tensor *a, const tl_tensor *b) {
  if (a->rank != b->rank || tl_tensor_numel(a) != tl_tensor_numel(b)) return 0;
  int64_t idx[TL_MAX_RANK];
  for (int64_t p = 0; p < tl_tensor_numel(a); p++) {
    int64_t rest = p;
    for (int k = 0; k < a->rank; k++) idx[k] = rest % a->shape[k], rest /= a->shape[k];
    tl_scalar x, y;
    TH_CHECK_OK(tl_tensor_get(a, idx, &x));
    TH_CHECK_OK(tl_tensor_get(b, idx, &y));
    if (memcmp(&x, &y, sizeof x) != 0) return 0;
  }
  return 1;
}

static void einsum_keep_layout_follows_the_operands(void) {
  th_held h;
  th_held_open(&h, 1);
  int64_t s45[2] = {4, 5}, s53[2] = {5, 3}, s3[1] = {3}, s453[3] = {4, 5, 3};
  /* the surface is column-major: a, b, c hold their first axis densest; r is row-major */
  tl_tensor a = random_tensor(h.exec, TL_F64, 2, s45, 1),
            b = random_tensor(h.exec, TL_F64, 2, s45, 2);
  tl_tensor c = random_tensor(h.exec, TL_F64, 2, s53, 3),
            v = random_tensor(h.exec, TL_F64, 1, s3, 4);
  tl_tensor r, t = random_tensor(h.exec, TL_F64, 3, s453, 6);
  TH_CHECK_OK(tl_tensor_create_row_major(TL_F64, 2, s45, &r));
  TH_CHECK_OK(tl_random_into(h.exec, 5, &r));
  static const struct {
    const char *spec;
    int n;
    int ops[3];      /* 0 a, 1 b, 2 c, 3 r, 4 v, 5 t */
    int64_t want[3]; /* the KEEP strides */
  } cases[] = {
      {"ij,ij->ji", 2, {0, 1}, {4, 1}},       /* a's layout: the transpose of a */
      {"ij,ij->ij", 2, {3, 0}, {5, 1}},       /* r's layout (row-major), not the surface's */
      {"ij,jk->ik", 2, {0, 2}, {3, 1}},       /* a's i outermost, then c's k */
      {"ij,jk->ki", 2, {0, 2}, {1, 3}},       /* the same memory, other axis order */
      {"ij->ji", 1, {3}, {1, 5}},             /* one operand: r's own order */
      {"ij,jk,k->ij", 3, {0, 2, 4}, {1, 4}},  /* a network: its last step's inputs */
      {"bjk,jl->lkb", 2, {5, 2}, {1, 12, 3}}, /* t's b then k outermost, c's l innermost */
      /* sums nothing: as numpy's iterator, a's i then j densest, c's own k outermost */
      {"ij,jk->kij", 2, {0, 2}, {20, 1, 4}},
  };
  const tl_tensor *all[6] = {&a, &b, &c, &r, &v, &t};
  tl_einsum_options keep;
  tl_einsum_options_init(&keep);
  TH_CHECK(keep.layout == TL_EINSUM_LAYOUT_ORDER && keep.path == NULL);
  keep.layout = TL_EINSUM_LAYOUT_KEEP;
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const tl_tensor *ops[3];
    for (int i = 0; i < cases[k].n; i++) ops[i] = all[cases[k].ops[i]];
    tl_tensor ordered, kept;
    TH_CHECK_OK(tl_einsum(h.exec, cases[k].spec, cases[k].n, ops, &ordered));
    TH_CHECK_OK(tl_einsum_ex(h.exec, &keep, cases[k].spec, cases[k].n, ops, &kept));
    int strides_ok = 1;
    for (int d = 0; d < kept.rank; d++) strides_ok &= kept.strides[d] == cases[k].want[d];
    if (!strides_ok) {
      fprintf(stderr, "  %s: strides", cases[k].spec);
      for (int d = 0; d < kept.rank; d++) fprintf(stderr, " %lld", (long long)kept.strides[d]);
      fprintf(stderr, "\n");
    }
    TH_CHECK(strides_ok);
    TH_CHECK(same_values(&ordered, &kept));
    tl_tensor_release(&ordered);
    tl_tensor_release(&kept);
  }
  /* options of the first version's size (its sizeof): the later fields are not read */
  tl_einsum_options old = keep;
  old.size = offsetof(tl_einsum_options, path);
  const tl_tensor *ab[2] = {&a, &b};
  tl_tensor o;
  TH_CHECK_OK(tl_einsum_ex(h.exec, &old, "ij,ij->ji", 2, ab, &o));
  TH_CHECK(o.strides[0] == 1 && o.strides[1] == 5); /* the surface's column-major order */
  tl_tensor_release(&o);
  /* an unknown layout: typed, named, *out untouched */
  tl_einsum_options bad = keep;
  bad.layout = (tl_einsum_layout)7;
  tl_tensor untouched = {0};
  untouched.rank = -3;
  TH_CHECK_STATUS(tl_einsum_ex(h.exec, &bad, "ij,ij->ji", 2, ab, &untouched), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "unknown layout 7") != NULL);
  TH_CHECK(untouched.rank == -3);
  /* a path in the options: tl_einsum_with_path's result; GIVEN from old options: refused */
  const tl_tensor *chain[3] = {&a, &c, &v};
  int path[4] = {1, 2, 0, 1};
  tl_einsum_options given = keep;
  given.path_kind = TL_EINSUM_PATH_GIVEN;
  given.n_steps = 2;
  given.path = path;
  tl_tensor with_path, with_options;
  TH_CHECK_OK(tl_einsum_with_path(h.exec, 2, path, "ij,jk,k->ij", 3, chain, &with_path));
  TH_CHECK_OK(tl_einsum_ex(h.exec, &given, "ij,jk,k->ij", 3, chain, &with_options));
  TH_CHECK(same_values(&with_path, &with_options));
  given.size = offsetof(tl_einsum_options, path);
  TH_CHECK_STATUS(tl_einsum_ex(h.exec, &given, "ij,jk,k->ij", 3, chain, &o), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "needs a path") != NULL);
  tl_tensor_release(&with_path);
  tl_tensor_release(&with_options);
  tl_tensor *owned[6] = {&a, &b, &c, &r, &v, &t};
  for (int i = 0; i < 6; i++) tl_tensor_release(owned[i]);
  th_held_close(&h);
}

TH_TEST_MAIN(TH_CASE(einsum_integer_labels_match_letters),
             TH_CASE(einsum_network_of_61_labels_matches_the_chain_product),
             TH_CASE(einsum_explicit_path_matches_auto_and_is_cached),
             TH_CASE(einsum_keep_layout_follows_the_operands),
             TH_CASE(einsum_invalid_paths_fail_typed_and_write_nothing))
