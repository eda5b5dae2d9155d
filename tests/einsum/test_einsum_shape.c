/* tests/einsum/test_einsum_shape.c: tl_einsum_shape, the output shape of a spec read
 * without data. Each spec of a table (explicit and implicit outputs, diagonals, "...",
 * broadcasting, integer labels) is run through tl_einsum on real operands, and the shape
 * of what it made must be the shape tl_einsum_shape gave. Bad input fails typed, with a
 * message naming the values, and leaves the outputs as they were. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/einsum.h"
#include "tenlane/status.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_test.h"

typedef struct shape_case {
  const char *spec;
  const char *shapes; /* "3x4,4x5": operands separated by ',', extents by 'x'; "-" is rank 0 */
} shape_case;

static const shape_case shape_cases[] = {
    {"ij,jk->ik", "3x4,4x5"},
    {"ij,jk", "3x4,4x5"},
    {"ba,ac", "4x3,3x5"},
    {"ij,jk->", "3x4,4x5"},
    {"ii->i", "3x3"},
    {"ii", "3x3"},
    {"i,j->ij", "2,5"},
    {"Ab,bC->CA", "2x3,3x4"},
    {"...ij,...jk->...ik", "1x3x4,5x4x2"},
    {"...ij,...jk", "2x1x3x4,5x4x2"},
    {"...i->...", "2x3x4"},
    {"i...->i", "6x2x2"},
    {"{0}{1},{1}{2}->{0}{2}", "3x4,4x5"},
    {"{7}i,i{7}", "3x2,2x3"},
    {"a", "4"},
    {",->", "-,-"},
    {"ij,jk,kl->li", "2x3,3x4,4x5"},
};
#define CASE_COUNT (sizeof shape_cases / sizeof shape_cases[0])

static int read_shapes(const char *text, int *ranks, int64_t shapes[][TL_MAX_RANK]) {
  int n = 0;
  for (const char *p = text; *p;) {
    ranks[n] = 0;
    if (*p == '-') {
      p++;
    } else {
      for (;;) {
        char *end;
        shapes[n][ranks[n]++] = strtoll(p, &end, 10);
        p = end;
        if (*p != 'x') break;
        p++;
      }
    }
    n++;
    if (*p == ',') p++;
  }
  return n;
}

static void einsum_shape_is_the_shape_einsum_makes(void) {
  th_held h;
  th_held_open(&h, 1);
  for (size_t c = 0; c < CASE_COUNT; c++) {
    int ranks[TL_EINSUM_MAX_OPERANDS];
    int64_t shapes[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
    int n = read_shapes(shape_cases[c].shapes, ranks, shapes);
    const int64_t *shape_ptrs[TL_EINSUM_MAX_OPERANDS];
    tl_tensor operands[TL_EINSUM_MAX_OPERANDS];
    const tl_tensor *operand_ptrs[TL_EINSUM_MAX_OPERANDS];
    for (int i = 0; i < n; i++) {
      shape_ptrs[i] = shapes[i];
      TH_CHECK_OK(tl_tensor_create(TL_F64, ranks[i], shapes[i], &operands[i]));
      operand_ptrs[i] = &operands[i];
    }
    int rank = -1;
    int64_t shape[TL_MAX_RANK];
    TH_CHECK_OK(tl_einsum_shape(shape_cases[c].spec, n, ranks, shape_ptrs, &rank, shape));
    tl_tensor out;
    TH_CHECK_OK(tl_einsum(h.exec, shape_cases[c].spec, n, operand_ptrs, &out));
    TH_CHECK(rank == out.rank);
    for (int k = 0; k < out.rank && k < rank; k++) TH_CHECK(shape[k] == out.shape[k]);
    tl_tensor_release(&out);
    for (int i = 0; i < n; i++) tl_tensor_release(&operands[i]);
  }
  th_held_close(&h);
}

/* The call fails with `expected`, its message holds each of `words` (NULL-terminated), and
 * the outputs are untouched. */
static void check_refused(const char *spec, int n, const int *ranks, const int64_t *const *shapes,
                          tl_status expected, const char *const *words) {
  int rank = -7;
  int64_t shape[TL_MAX_RANK];
  for (int k = 0; k < TL_MAX_RANK; k++) shape[k] = -7;
  TH_CHECK_STATUS(tl_einsum_shape(spec, n, ranks, shapes, &rank, shape), expected);
  for (int w = 0; words[w] != NULL; w++) TH_CHECK(strstr(tl_last_message(), words[w]) != NULL);
  TH_CHECK(rank == -7);
  for (int k = 0; k < TL_MAX_RANK; k++) TH_CHECK(shape[k] == -7);
}

static void einsum_shape_refuses_bad_input_naming_the_values(void) {
  int ranks[TL_EINSUM_MAX_OPERANDS + 1];
  int64_t s34[2] = {3, 4}, s52[2] = {5, 2}, neg[2] = {3, -2};
  const int64_t *shapes[TL_EINSUM_MAX_OPERANDS + 1];
  for (int i = 0; i <= TL_EINSUM_MAX_OPERANDS; i++) {
    ranks[i] = 2;
    shapes[i] = s34;
  }
  int rank;
  int64_t shape[TL_MAX_RANK];
  TH_CHECK_STATUS(tl_einsum_shape(NULL, 1, ranks, shapes, &rank, shape), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_shape("ij", 1, NULL, shapes, &rank, shape), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_shape("ij", 1, ranks, NULL, &rank, shape), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_shape("ij", 1, ranks, shapes, NULL, shape), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_shape("ij", 1, ranks, shapes, &rank, NULL), TL_E_INVALID);
  check_refused("ij", 0, ranks, shapes, TL_E_INVALID, (const char *const[]){"is 0", NULL});
  check_refused("ij", TL_EINSUM_MAX_OPERANDS + 1, ranks, shapes, TL_E_INVALID,
                (const char *const[]){"is 33", NULL});
  ranks[0] = TL_MAX_RANK + 1;
  check_refused("ij", 1, ranks, shapes, TL_E_INVALID, (const char *const[]){"rank 65", NULL});
  ranks[0] = 2;
  const int64_t *no_shape[1] = {NULL};
  check_refused("ij", 1, ranks, no_shape, TL_E_INVALID, (const char *const[]){"rank 2", NULL});
  /* the parser's refusals, as every einsum call makes them */
  check_refused("ij,jk->iz", 2, ranks, shapes, TL_E_INVALID, (const char *const[]){"z", NULL});
  check_refused("ij->i", 2, ranks, shapes, TL_E_INVALID, (const char *const[]){"ij->i", NULL});
  check_refused("ijk->i", 1, ranks, shapes, TL_E_SHAPE, (const char *const[]){"ijk->i", NULL});
  /* one label, two extents: j is 4 on operand 0 and 5 on operand 1 */
  const int64_t *clash[2] = {s34, s52};
  check_refused("ij,jk->ik", 2, ranks, clash, TL_E_SHAPE,
                (const char *const[]){"'j'", "extent 4", "but 5", NULL});
  const int64_t *negative[1] = {neg};
  check_refused("ij->ij", 1, ranks, negative, TL_E_SHAPE, (const char *const[]){"-2", NULL});
}

TH_TEST_MAIN(TH_CASE(einsum_shape_is_the_shape_einsum_makes),
             TH_CASE(einsum_shape_refuses_bad_input_naming_the_values))
