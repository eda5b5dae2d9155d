/* tests/einsum/test_einsum_nonfinite.c: complex einsum products over an infinite element
 * keep the parts a plain sum of products gives.
 *
 * numpy's einsum forms each complex product as (ar br - ai bi, ar bi + ai br) and sums them,
 * so (inf + 0i)(1 + 0i) is inf + NaN i: the real part stays infinite. A kernel that then
 * multiplies the sum by alpha = 1 + 0i as a complex number turns that real part into
 * inf * 1 - NaN * 0 = NaN. The case runs products that tenlane's own kernels compute (dots,
 * batched dots, the matrix-vector rows, the tiny and small complex GEMMs; shapes too small
 * for the provider) with infinities placed in each operand, and requires every part of
 * every element to be NaN, +inf, -inf or finite exactly where the plain sum says so. */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tenlane/einsum.h"
#include "tenlane/ops.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

typedef struct nonfinite_case {
  const char *spec; /* two operands, letters only, explicit output */
  int64_t extent[26];
} nonfinite_case;

/* extent by letter ('a' + index); only the letters a spec uses matter */
#define EXT(i, j, k, b) \
  { [1] = (b), [8] = (i), [9] = (j), [10] = (k) }

static const nonfinite_case specs[] = {
    {"i,i->", EXT(1, 0, 0, 0)},        {"i,i->", EXT(7, 0, 0, 0)},
    {"i,i->", EXT(37, 0, 0, 0)},       {"ij,ij->j", EXT(5, 6, 0, 0)},
    {"ij,ij->i", EXT(5, 6, 0, 0)},     {"ij,ij->", EXT(9, 4, 0, 0)},
    {"ji,j->i", EXT(40, 30, 0, 0)},    {"ij,j->i", EXT(40, 30, 0, 0)},
    {"i,ij->j", EXT(40, 30, 0, 0)},    {"ij,jk->ik", EXT(3, 4, 5, 0)},
    {"ij,jk->ik", EXT(7, 3, 2, 0)},    {"ij,jk->ki", EXT(4, 2, 6, 0)},
    {"bij,bjk->bik", EXT(4, 5, 2, 3)}, {"ij,kj->ik", EXT(6, 5, 3, 0)},
};
#define N_CASES (sizeof specs / sizeof specs[0])

/* 0 finite, 1 NaN, 2 +inf, 3 -inf */
static int kind(double x) { return isnan(x) ? 1 : isinf(x) ? (x > 0 ? 2 : 3) : 0; }

typedef struct term {
  int rank;
  int letter[3];
} term;

static term term_of(const char *s, const char *end) {
  term t = {0, {0}};
  for (; s < end; s++) t.letter[t.rank++] = *s - 'a';
  return t;
}

/* Offset of an element of a row-major tensor of term t, at the letters' values v. */
static int64_t offset(const term *t, const int64_t *extent, const int64_t *v) {
  int64_t at = 0;
  for (int d = 0; d < t->rank; d++) at = at * extent[t->letter[d]] + v[t->letter[d]];
  return at;
}

static tl_tensor operand(tl_dtype dtype, const term *t, const int64_t *extent, uint64_t *seed) {
  int64_t shape[3];
  for (int d = 0; d < t->rank; d++) shape[d] = extent[t->letter[d]];
  tl_tensor x;
  TH_CHECK_OK(tl_tensor_create_row_major(dtype, t->rank, shape, &x));
  int64_t n = tl_tensor_numel(&x);
  for (int64_t p = 0; p < n; p++) {
    double re = th_num_uniform(seed), im = th_num_uniform(seed);
    th_num_store_parts(dtype, x.data, p, re, im);
  }
  return x;
}

static void einsum_complex_infinity_keeps_its_part(void) {
  th_held h;
  th_held_open(&h, 1);
  /* (value to place, in a, in b): an infinite real part, an infinite imaginary part, and
   * one of each sign in both operands */
  static const double places[4][4] = {
      {INFINITY, 0.0, 1.0, 0.0},
      {0.0, -INFINITY, 1.0, 0.0},
      {INFINITY, 0.0, 0.0, INFINITY},
      {-INFINITY, 1.0, INFINITY, -1.0},
  };
  int failures = 0;
  for (int di = 0; di < 2; di++) {
    const tl_dtype dtype = di ? TL_C128 : TL_C64;
    for (size_t c = 0; c < N_CASES; c++) {
      const nonfinite_case *nc = &specs[c];
      const char *comma = strchr(nc->spec, ','), *arrow = strstr(nc->spec, "->");
      term ta = term_of(nc->spec, comma), tb = term_of(comma + 1, arrow);
      term to = term_of(arrow + 2, nc->spec + strlen(nc->spec));
      for (int pl = 0; pl < 4; pl++) {
        uint64_t seed = 1000u * c + (uint64_t)pl;
        tl_tensor a = operand(dtype, &ta, nc->extent, &seed);
        tl_tensor b = operand(dtype, &tb, nc->extent, &seed);
        int64_t na = tl_tensor_numel(&a), nb = tl_tensor_numel(&b);
        th_num_store_parts(dtype, a.data, (na * 2) / 3, places[pl][0], places[pl][1]);
        th_num_store_parts(dtype, b.data, nb / 3, places[pl][2], places[pl][3]);
        /* the plain sums, over every value of every letter the spec uses */
        int used[26] = {0}, letters[6], n_letters = 0;
        for (const char *s = nc->spec; *s; s++)
          if (*s >= 'a' && *s <= 'z' && !used[*s - 'a'])
            used[*s - 'a'] = 1, letters[n_letters++] = *s - 'a';
        int64_t out_n = 1;
        for (int d = 0; d < to.rank; d++) out_n *= nc->extent[to.letter[d]];
        double want[2 * 64] = {0};
        TH_CHECK(out_n <= 64);
        int64_t v[26] = {0};
        for (;;) {
          double complex x = th_num_load(dtype, a.data, offset(&ta, nc->extent, v));
          double complex y = th_num_load(dtype, b.data, offset(&tb, nc->extent, v));
          int64_t o = offset(&to, nc->extent, v);
          want[2 * o] += creal(x) * creal(y) - cimag(x) * cimag(y);
          want[2 * o + 1] += creal(x) * cimag(y) + cimag(x) * creal(y);
          int d = n_letters - 1;
          for (; d >= 0; d--) {
            if (++v[letters[d]] < nc->extent[letters[d]]) break;
            v[letters[d]] = 0;
          }
          if (d < 0) break;
        }
        tl_tensor out;
        TH_CHECK_OK(tl_einsum(h.exec, nc->spec, 2, (const tl_tensor *[]){&a, &b}, &out));
        TH_CHECK(tl_tensor_numel(&out) == out_n);
        for (int64_t o = 0; o < out_n; o++) {
          int64_t idx[3], rest = o;
          for (int d = to.rank - 1; d >= 0; d--) {
            idx[d] = rest % nc->extent[to.letter[d]];
            rest /= nc->extent[to.letter[d]];
          }
          double complex got = th_num_get(&out, idx);
          if (kind(creal(got)) != kind(want[2 * o]) || kind(cimag(got)) != kind(want[2 * o + 1])) {
            if (failures++ < 8)
              fprintf(stderr, "%s %s, inf placement %d, element %lld: got %g%+gi, want %g%+gi\n",
                      nc->spec, tl_dtype_name(dtype), pl, (long long)o, creal(got), cimag(got),
                      want[2 * o], want[2 * o + 1]);
          }
        }
        tl_tensor_release(&out);
        tl_tensor_release(&a);
        tl_tensor_release(&b);
      }
    }
  }
  th_held_close(&h);
  if (failures) {
    char buf[96];
    snprintf(buf, sizeof buf, "%d parts differ from the plain sums' NaN and infinity", failures);
    th_test_fail_at(__FILE__, __LINE__, buf);
  }
}

TH_TEST_MAIN(TH_CASE(einsum_complex_infinity_keeps_its_part))
