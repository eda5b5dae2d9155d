/* tests/einsum/test_einsum_products.c: einsum products that sum nothing and write their
 * output across an input's dense axis (ij,ij->ji, ij,ji->ij, ij,j->ji and a rank-3 one),
 * which product_tiles.c makes in one pass of transposed tiles on AVX-512 machines and
 * direct.c's two passes elsewhere.
 *
 * Every element must be the row kernels' product bit for bit (one rounded product for the
 * real dtypes; re = ar br - ai bi, im = ar bi + ai br for the complex ones), so the check
 * is exact, in every dtype, for every memory order of the three tensors, with extents that
 * leave partial tiles both ways, and with tensors placed off the 64-byte lines (an output
 * whose first whole line comes after a head of elements, inputs whose rows start mid-line,
 * rows of different phases, a negative stride). Two threads must give one thread's bits.
 * The route itself is asked, on the same tensors, whether it takes the aligned cases, so
 * a change that quietly sends them elsewhere fails here.
 *
 * Two products in a row (ij,ij,ij->ij: the first's result used only by the second) run as
 * one pass (direct.c, tl__einsum_product3): the output must be the two steps' bits, with
 * the first's result as either operand of the second, on one thread and on two. */
#include <complex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/isa.h"
#include "einsum/einsum_int.h"
#include "exec/exec.h"
#include "kernels/kernels.h"
#include "tenlane/einsum.h"
#include "tenlane/tensor.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

static uint64_t rng_state = 0x70d0c7511e5ull;

typedef struct product_case {
  const char *terms[3]; /* a, b, out */
  int64_t shape[3][3];
  /* 1 when the one-pass route must take the case with all three tensors column-major
   * (tiles[0]) or all row-major (tiles[1]) on lines (placements 0-2 below) */
  int tiles[2];
  int both; /* 1 when both inputs run across out there */
} product_case;

/* 259 and 261 leave partial tiles (16 floats, 8 doubles or complex floats, 4 complex
 * doubles) and a partial band along
 * each axis; every output has at least the einsum's 65536-element threshold. In the last
 * case with everything column-major, b runs across a's dense axis and along neither of
 * out's: no one-pass tile reads both, and the route declines. */
static const product_case product_cases[] = {
    {{"ij", "ij", "ji"}, {{259, 261}, {259, 261}, {261, 259}}, {1, 1}, 1},
    {{"ij", "ji", "ij"}, {{259, 261}, {261, 259}, {259, 261}}, {1, 1}, 0},
    {{"ji", "ij", "ij"}, {{261, 259}, {259, 261}, {259, 261}}, {1, 1}, 0},
    {{"ij", "j", "ji"}, {{259, 261}, {261}, {261, 259}}, {1, 1}, 0},
    {{"j", "ij", "ji"}, {{261}, {259, 261}, {261, 259}}, {1, 1}, 0},
    {{"ijk", "ijk", "kji"}, {{41, 37, 47}, {41, 37, 47}, {47, 37, 41}}, {1, 1}, 1},
    {{"ijk", "kij", "jik"}, {{41, 37, 47}, {47, 41, 37}, {37, 41, 47}}, {0, 1}, 0},
};
#define CASES (sizeof product_cases / sizeof product_cases[0])

/* Where a tensor lies: `row_major` picks the dense order; `shift` elements between the
 * buffer's 64-byte aligned start and element 0; every stride past the dense one rounded up
 * to a multiple of `align` elements, then `pad` added; `flip` reverses the slowest axis of
 * a tensor of rank 2 or more (a negative stride). */
typedef struct placement {
  int shift, align, pad, flip;
} placement;

static const placement placements[7][3] = {
    /* a, b, out; 16 elements are at least a line in every dtype */
    {{0, 16, 0, 0}, {0, 16, 0, 0}, {0, 16, 0, 0}}, /* rows on whole lines */
    {{1, 16, 0, 0}, {1, 16, 0, 0}, {1, 16, 0, 0}}, /* a head band in out, inputs mid-line */
    {{5, 16, 16, 1}, {0, 1, 2, 0}, {3, 16, 0, 0}}, /* a flipped; b's rows at many phases */
    {{0, 16, 0, 0}, {2, 16, 0, 0}, {0, 16, 1, 0}}, /* out's rows at many phases: declined */
    {{0, 1, 0, 0}, {0, 1, 0, 0}, {0, 1, 0, 0}},    /* dense, as numpy lays 259 x 261 out */
    /* b's rows all at one phase, not a's: read shifted (when both run across out), from
     * the first tile on, and from a later one */
    {{0, 16, 0, 0}, {3, 16, 0, 0}, {0, 16, 0, 0}},
    {{5, 16, 0, 0}, {2, 16, 0, 0}, {0, 16, 0, 0}},
};
#define PLACEMENTS 7

typedef struct placed {
  tl_tensor storage, view;
} placed;

static void place(placed *p, tl_dtype dtype, int rank, const int64_t *shape, int row_major,
                  placement where) {
  int64_t strides[3], step = 1;
  for (int n = 0; n < rank; n++) {
    int k = row_major ? rank - 1 - n : n;
    strides[k] = step;
    step *= shape[k];
    step = (step + where.align - 1) / where.align * where.align + where.pad;
  }
  int64_t total = step + where.shift;
  TH_CHECK_OK(tl_tensor_create(dtype, 1, &total, &p->storage));
  p->view = p->storage;
  p->view.owned = NULL;
  p->view.rank = rank;
  p->view.offset = where.shift;
  for (int k = 0; k < rank; k++) p->view.shape[k] = shape[k], p->view.strides[k] = strides[k];
  if (where.flip && rank > 1) {
    int slow = row_major ? 0 : rank - 1;
    p->view.offset += (shape[slow] - 1) * strides[slow];
    p->view.strides[slow] = -strides[slow];
  }
}

static void fill(const tl_tensor *t) {
  int64_t idx[3] = {0, 0, 0};
  do {
    double re = th_num_uniform(&rng_state) - 0.5, im = th_num_uniform(&rng_state) - 0.5;
    th_num_set_parts(t, idx, re, im);
  } while (th_num_next_index(t->rank, t->shape, idx));
}

/* `in` (labels `term`) seen with out's axes, stride 0 where it lacks a label. */
static tl_tensor in_out_axes(const tl_tensor *in, const char *term, const tl_tensor *out,
                             const char *out_term) {
  tl_tensor v = *in;
  v.rank = out->rank;
  for (int r = 0; r < out->rank; r++) {
    const char *hit = strchr(term, out_term[r]);
    v.shape[r] = out->shape[r];
    v.strides[r] = hit != NULL ? in->strides[hit - term] : 0;
  }
  return v;
}

/* The row kernels' product of x and y in `dtype`: one rounding per product, and for the
 * complex dtypes each part's two products rounded before their sum. */
static double complex product(tl_dtype dtype, double complex x, double complex y) {
  const double xr = creal(x), xi = cimag(x), yr = creal(y), yi = cimag(y);
  switch (dtype) {
    case TL_F32:
      return (double)((float)xr * (float)yr);
    case TL_F64:
      return xr * yr;
    case TL_C64: {
      float p0 = (float)xr * (float)yr, p1 = (float)xi * (float)yi;
      float p2 = (float)xr * (float)yi, p3 = (float)xi * (float)yr;
      return __builtin_complex((double)(p0 - p1), (double)(p2 + p3));
    }
    default: {
      double p0 = xr * yr, p1 = xi * yi, p2 = xr * yi, p3 = xi * yr;
      return __builtin_complex(p0 - p1, p2 + p3);
    }
  }
}

/* 1 when every element of out is exactly the product of its inputs' elements. */
static int exact(const product_case *c, tl_dtype dtype, const tl_tensor *a, const tl_tensor *b,
                 const tl_tensor *out, const char *what) {
  const tl_tensor av = in_out_axes(a, c->terms[0], out, c->terms[2]);
  const tl_tensor bv = in_out_axes(b, c->terms[1], out, c->terms[2]);
  int64_t idx[3] = {0, 0, 0};
  do {
    double complex want = product(dtype, th_num_get(&av, idx), th_num_get(&bv, idx));
    double complex got = th_num_get(out, idx);
    if (creal(got) != creal(want) || cimag(got) != cimag(want)) {
      fprintf(stderr,
              "  %s,%s->%s %s %s: element (%lld, %lld, %lld) is %.17g%+.17gi, want "
              "%.17g%+.17gi\n",
              c->terms[0], c->terms[1], c->terms[2], tl_dtype_name(dtype), what, (long long)idx[0],
              (long long)idx[1], (long long)idx[2], creal(got), cimag(got), creal(want),
              cimag(want));
      return 0;
    }
  } while (th_num_next_index(out->rank, out->shape, idx));
  return 1;
}

/* Whether the one-pass route takes the case as placed (AVX-512 levels, every dtype):
 * -1 when no answer is required of it. */
static int tiles_expected(const product_case *c, tl_dtype dtype, int orders, int p) {
  (void)dtype;
  if (tl__isa_level() < TL__ISA_AVX512) return -1;
  if (orders != 0 && orders != 7) return -1;
  if (p == 3) return 0;
  if (p == 4) return -1;                                      /* depends on the extents' bytes */
  if (p >= 5) return c->tiles[orders == 7] ? 1 + c->both : 0; /* 2: b read shifted */
  return c->tiles[orders == 7];
}

/* The spec "a,b->out" of three terms, and each term's rank. */
static void case_spec(const char *const terms[3], char *spec, size_t size, int ranks[3]) {
  snprintf(spec, size, "%s,%s->%s", terms[0], terms[1], terms[2]);
  for (int i = 0; i < 3; i++) ranks[i] = (int)strlen(terms[i]);
}

static void einsum_transposing_products_are_exact_in_every_layout(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  int failures = 0, taken = 0;
  for (size_t c = 0; c < CASES; c++) {
    const product_case *pc = &product_cases[c];
    char spec[32];
    int ranks[3];
    case_spec(pc->terms, spec, sizeof spec, ranks);
    for (int d = 0; d < TL_DTYPE_COUNT; d++) {
      const tl_dtype dtype = (tl_dtype)d;
      for (int orders = 0; orders < 8; orders++) {
        for (int p = 0; p < PLACEMENTS; p++) {
          placed a, b, o1, o2;
          place(&a, dtype, ranks[0], pc->shape[0], orders & 1, placements[p][0]);
          place(&b, dtype, ranks[1], pc->shape[1], orders >> 1 & 1, placements[p][1]);
          place(&o1, dtype, ranks[2], pc->shape[2], orders >> 2, placements[p][2]);
          place(&o2, dtype, ranks[2], pc->shape[2], orders >> 2, placements[p][2]);
          fill(&a.view);
          fill(&b.view);
          const tl_tensor *ops[2] = {&a.view, &b.view};
          TH_CHECK_OK(tl_einsum_into(one.exec, spec, 2, ops, &o1.view));
          TH_CHECK_OK(tl_einsum_into(two.exec, spec, 2, ops, &o2.view));
          char what[64];
          snprintf(what, sizeof what, "orders %d placement %d", orders, p);
          int ok = exact(pc, dtype, &a.view, &b.view, &o1.view, what);
          const size_t bytes = (size_t)tl_tensor_numel(&o1.storage) * tl_dtype_size(dtype);
          if (ok && memcmp(o1.storage.data, o2.storage.data, bytes) != 0) {
            fprintf(stderr, "  %s %s %s: two threads differ from one\n", spec, tl_dtype_name(dtype),
                    what);
            ok = 0;
          }
          const int expected = tiles_expected(pc, dtype, orders, p);
          if (expected >= 0) {
            tl__product_tiles plan;
            tl_tensor av = in_out_axes(&a.view, pc->terms[0], &o1.view, pc->terms[2]);
            tl_tensor bv = in_out_axes(&b.view, pc->terms[1], &o1.view, pc->terms[2]);
            int took = tl__product_tiles_plan(&plan, &o1.view, &av, &bv);
            took += took && plan.y_back > 0;
            if (took != expected) {
              fprintf(stderr,
                      "  %s %s %s: the one-pass route said %d, expected %d (2: b read shifted)\n",
                      spec, tl_dtype_name(dtype), what, took, expected);
              ok = 0;
            }
            taken += took > 0;
          }
          failures += !ok;
          tl_tensor_release(&a.storage);
          tl_tensor_release(&b.storage);
          tl_tensor_release(&o1.storage);
          tl_tensor_release(&o2.storage);
        }
      }
    }
  }
  TH_CHECK(failures == 0);
  if (tl__isa_level() >= TL__ISA_AVX512) TH_CHECK(taken > 0);
  th_held_close(&one);
  th_held_close(&two);
}

/* Products whose output rows are short and one input repeats along them (direct.c's
 * periodic rows): every element exact, on one thread and two, with the repeating input
 * first or second, varying along an outer axis, an output whose outer axis runs backwards
 * (a negative offset from element 0), and a row long enough for two threads to cut it
 * mid-period; the route must take each case. */
typedef struct periodic_case {
  const char *terms[3];
  int64_t shape[3][3];
  int flip; /* 1: out's slowest axis runs backwards */
} periodic_case;

static const periodic_case periodic_cases[] = {
    {{"ab", "b", "ab"}, {{301, 7}, {7}, {301, 7}}, 0},
    {{"b", "ab", "ab"}, {{5}, {203, 5}, {203, 5}}, 0},
    {{"abc", "ac", "abc"}, {{11, 37, 3}, {11, 3}, {11, 37, 3}}, 0},
    {{"abc", "c", "abc"}, {{13, 29, 31}, {31}, {13, 29, 31}}, 1},
    /* one long row (the two axes made one), which two threads cut into pieces that start
     * mid-period */
    {{"ab", "b", "ab"}, {{40009, 7}, {7}, {40009, 7}}, 0},
};

static void einsum_short_broadcast_rows_are_exact(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  for (size_t ci = 0; ci < sizeof periodic_cases / sizeof periodic_cases[0]; ci++) {
    const periodic_case *pc = &periodic_cases[ci];
    const product_case as_product = {{pc->terms[0], pc->terms[1], pc->terms[2]}, {{0}}, {0, 0}, 0};
    char spec[32];
    int ranks[3];
    case_spec(pc->terms, spec, sizeof spec, ranks);
    for (int d = 0; d < TL_DTYPE_COUNT; d++) {
      const tl_dtype dtype = (tl_dtype)d;
      const size_t es = tl_dtype_size(dtype);
      tl_tensor t[4];
      void *buffers[4];
      for (int i = 0; i < 4; i++) {
        const int which = i < 2 ? i : 2, rank = ranks[which];
        int64_t count = 1;
        for (int k = 0; k < rank; k++) count *= pc->shape[which][k];
        buffers[i] = malloc((size_t)count * es);
        int64_t strides[3]; /* row-major, as numpy's arrays: the short axis fastest */
        tl_strides_row_major(rank, pc->shape[which], strides);
        tl_tensor_wrap(dtype, rank, pc->shape[which], strides, buffers[i], 0, &t[i]);
        if (i >= 2 && pc->flip) { /* the slowest axis backwards */
          t[i].offset = (pc->shape[which][0] - 1) * t[i].strides[0];
          t[i].strides[0] = -t[i].strides[0];
        }
        if (i < 2) fill(&t[i]);
      }
      const tl_tensor *ops[2] = {&t[0], &t[1]};
      const size_t before = tl__einsum_periodic_runs();
      TH_CHECK_OK(tl_einsum_into(one.exec, spec, 2, ops, &t[2]));
      TH_CHECK_OK(tl_einsum_into(two.exec, spec, 2, ops, &t[3]));
      TH_CHECK(tl__einsum_periodic_runs() - before == 2);
      TH_CHECK(exact(&as_product, dtype, &t[0], &t[1], &t[2], "one thread"));
      TH_CHECK(exact(&as_product, dtype, &t[0], &t[1], &t[3], "two threads"));
      /* The route on a team of two whatever the cost model says: a long row is cut into
       * pieces of 4096 elements (drive.c), which start mid-period. */
      int labels[3][3];
      for (int w = 0; w < 3; w++)
        for (int k = 0; k < ranks[w]; k++) labels[w][k] = pc->terms[w][k];
      TH_CHECK_OK(tl__exec_begin(two.exec, "test"));
      TH_CHECK_OK(tl__exec_end(two.exec, tl__einsum_product(two.exec, 2, &t[0], labels[0], &t[1],
                                                            labels[1], &t[3], labels[2])));
      TH_CHECK(tl__einsum_periodic_runs() - before == 3);
      TH_CHECK(exact(&as_product, dtype, &t[0], &t[1], &t[3], "a team of two"));
      for (int i = 0; i < 4; i++) free(buffers[i]);
    }
  }
  th_held_close(&one);
  th_held_close(&two);
}

/* A fused pair of products must not write over what its first step reads: the plan may let
 * the second step's result share scratch with the first step's inputs (found by the einsum
 * spec fuzzer: ej,bb,cl,de,Av,fa gave another result on its exact path than on the greedy
 * one). Integer-valued data: every path computes the same numbers exactly. */
static void einsum_fused_products_never_write_over_their_inputs(void) {
  th_held one;
  th_held_open(&one, 1);
  const char *spec = "ej,bb,cl,de,Av,fa";
  tl_tensor in[6], got[2];
  const tl_tensor *ops[6];
  const int64_t shape[2] = {2, 2}, out_shape[8] = {2, 2, 2, 2, 2, 2, 2, 2};
  for (int i = 0; i < 6; i++) {
    TH_CHECK_OK(tl_tensor_create(TL_F64, 2, shape, &in[i]));
    for (int e = 0; e < 4; e++) ((double *)in[i].data)[e] = (double)(1 + i + e);
    ops[i] = &in[i];
  }
  const tl_einsum_path_kind kinds[2] = {TL_EINSUM_PATH_GREEDY, TL_EINSUM_PATH_OPTIMAL};
  for (int k = 0; k < 2; k++) {
    TH_CHECK_OK(tl_tensor_create(TL_F64, 8, out_shape, &got[k]));
    tl_einsum_options options;
    tl_einsum_options_init(&options);
    options.path_kind = kinds[k];
    TH_CHECK_OK(tl_einsum_ex_into(one.exec, &options, spec, 6, ops, &got[k]));
  }
  TH_CHECK(memcmp(got[0].data, got[1].data, 256 * sizeof(double)) == 0);
  for (int i = 0; i < 6; i++) tl_tensor_release(&in[i]);
  tl_tensor_release(&got[0]), tl_tensor_release(&got[1]);
  th_held_close(&one);
}

typedef struct chain_case {
  const char *spec;     /* three operands */
  int path[4];          /* the given path: (a, b), then the result with c */
  const char *steps[2]; /* the two steps as single calls, operands in the path's order */
  int64_t shape[3][2];
  int rank[3];
  int fused; /* 1: one pass; 0: inputs read across their dense axis, step by step */
} chain_case;

#define CM 259
#define CN 261
static const chain_case chain_cases[] = {
    {"ij,ij,ij->ij",
     {0, 1, 0, 1},
     {"ij,ij->ij", "ij,ij->ij"},
     {{CM, CN}, {CM, CN}, {CM, CN}},
     {2, 2, 2},
     1},
    {"ij,ij,ij->ij",
     {0, 1, 1, 0},
     {"ij,ij->ij", "ij,ij->ij"},
     {{CM, CN}, {CM, CN}, {CM, CN}},
     {2, 2, 2},
     1},
    {"ij,j,i->ij", {0, 1, 0, 1}, {"ij,j->ij", "i,ij->ij"}, {{CM, CN}, {CN}, {CM}}, {2, 1, 1}, 1},
    {"ij,j,i->ij", {0, 1, 1, 0}, {"ij,j->ij", "ij,i->ij"}, {{CM, CN}, {CN}, {CM}}, {2, 1, 1}, 1},
    {"ij,ji,ij->ij",
     {0, 1, 0, 1},
     {"ij,ji->ij", "ij,ij->ij"},
     {{CM, CN}, {CN, CM}, {CM, CN}},
     {2, 2, 2},
     0},
};

static void einsum_chained_products_give_the_two_steps_bits(void) {
  th_held one, two;
  th_held_open(&one, 1);
  th_held_open(&two, 2);
  for (int d = 0; d < TL_DTYPE_COUNT; d++) {
    const tl_dtype dtype = (tl_dtype)d;
    const size_t es = tl_dtype_size(dtype);
    for (size_t ci = 0; ci < sizeof chain_cases / sizeof chain_cases[0]; ci++) {
      const chain_case *cc = &chain_cases[ci];
      tl_tensor in[3], want, mid, got1, got2;
      void *buffers[7];
      for (int i = 0; i < 3; i++) {
        int64_t count = cc->shape[i][0] * (cc->rank[i] > 1 ? cc->shape[i][1] : 1);
        buffers[i] = malloc((size_t)count * es);
        tl_tensor_wrap(dtype, cc->rank[i], cc->shape[i], NULL, buffers[i], 0, &in[i]);
        fill(&in[i]);
      }
      const int64_t out_shape[2] = {CM, CN};
      tl_tensor *outs[4] = {&want, &mid, &got1, &got2};
      for (int i = 0; i < 4; i++) {
        buffers[3 + i] = malloc((size_t)(CM * CN) * es);
        tl_tensor_wrap(dtype, 2, out_shape, NULL, buffers[3 + i], 0, outs[i]);
      }
      /* the reference: the two steps as single calls */
      const tl_tensor *first[2] = {&in[0], &in[1]};
      TH_CHECK_OK(tl_einsum_into(one.exec, cc->steps[0], 2, first, &mid));
      const tl_tensor *second[2] = {cc->path[2] == 0 ? &in[2] : &mid,
                                    cc->path[2] == 0 ? &mid : &in[2]};
      TH_CHECK_OK(tl_einsum_into(one.exec, cc->steps[1], 2, second, &want));
      const tl_tensor *ops[3] = {&in[0], &in[1], &in[2]};
      const size_t before = tl__einsum_fused_runs();
      TH_CHECK_OK(tl_einsum_with_path_into(one.exec, 2, cc->path, cc->spec, 3, ops, &got1));
      TH_CHECK_OK(tl_einsum_with_path_into(two.exec, 2, cc->path, cc->spec, 3, ops, &got2));
      TH_CHECK(tl__einsum_fused_runs() - before == (size_t)(2 * cc->fused));
      if (memcmp(got1.data, want.data, (size_t)(CM * CN) * es) != 0 ||
          memcmp(got2.data, want.data, (size_t)(CM * CN) * es) != 0) {
        char what[160];
        snprintf(what, sizeof what, "%s %s path (%d %d)(%d %d): not the two steps' bits", cc->spec,
                 tl_dtype_name(dtype), cc->path[0], cc->path[1], cc->path[2], cc->path[3]);
        th_test_fail_at(__FILE__, __LINE__, what);
      }
      for (int i = 0; i < 7; i++) free(buffers[i]);
    }
  }
  th_held_close(&one);
  th_held_close(&two);
}

TH_TEST_MAIN(TH_CASE(einsum_transposing_products_are_exact_in_every_layout),
             TH_CASE(einsum_chained_products_give_the_two_steps_bits),
             TH_CASE(einsum_short_broadcast_rows_are_exact),
             TH_CASE(einsum_fused_products_never_write_over_their_inputs))
