/* tests/einsum/test_einsum.c: einsum against a naive nested-loop evaluator, the path
 * search against greedy and against brute force, the plan cache (no heap allocation on a
 * repeated call), and a table of malformed calls that must each fail with a typed status,
 * a message, and the output untouched.
 *
 * The naive evaluator shares no code with the library: it reads the spec itself, runs one
 * loop over every assignment of every label, and indexes an axis of extent 1 at 0 (numpy's
 * broadcasting of "..." axes). */
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/einsum.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"
#include "einsum/einsum_int.h"
#include "th_fixtures.h"
#include "th_numeric.h"
#include "th_test.h"

/* ---- Data ---------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double rng_uniform(void) { return th_num_uniform(&rng_state); }

/* Visit every index of t in column-major order; fn(t, idx, arg). */
static void for_each_index(const tl_tensor *t,
                           void (*fn)(const tl_tensor *, const int64_t *, void *), void *arg) {
  TH_NUM_FOR_EACH(idx, t->rank, t->shape) fn(t, idx, arg);
}

static void fill_random_at(const tl_tensor *t, const int64_t *idx, void *arg) {
  (void)arg;
  double re = rng_uniform();
  double im = tl_dtype_is_complex(t->dtype) ? rng_uniform() : 0.0;
  th_num_set(t, idx, re + im * I);
}

static void fill_value_at(const tl_tensor *t, const int64_t *idx, void *arg) {
  th_num_set(t, idx, *(const double *)arg);
}

/* Operand layouts: 0 column-major, 1 row-major, 2 column-major with axis 0 reversed
 * (negative stride), 3 column-major inside a padded buffer (every stride doubled). */
#define LAYOUTS 4
typedef struct operand {
  tl_tensor storage; /* owns the memory */
  tl_tensor view;    /* what einsum sees */
} operand;

static void operand_make(operand *o, tl_dtype dtype, int rank, const int64_t *shape, int layout) {
  if (layout == 3) {
    int64_t padded[TL_MAX_RANK] = {0};
    for (int k = 0; k < rank; k++) padded[k] = 2 * shape[k];
    TH_CHECK_OK(tl_tensor_create(dtype, rank, padded, &o->storage));
    o->view = o->storage;
    o->view.owned = NULL;
    for (int k = 0; k < rank; k++) o->view.shape[k] = shape[k];
  } else if (layout == 1) {
    TH_CHECK_OK(tl_tensor_create_row_major(dtype, rank, shape, &o->storage));
    o->view = o->storage;
    o->view.owned = NULL;
  } else {
    TH_CHECK_OK(tl_tensor_create(dtype, rank, shape, &o->storage));
    o->view = o->storage;
    o->view.owned = NULL;
    if (layout == 2 && rank > 0 && shape[0] > 0) {
      o->view.offset = (shape[0] - 1) * o->view.strides[0];
      o->view.strides[0] = -o->view.strides[0];
    }
  }
  for_each_index(&o->view, fill_random_at, NULL);
}

/* ---- The naive evaluator -------------------------------------------------------------- */

typedef struct naive_spec {
  int n;
  int rank[TL_EINSUM_MAX_OPERANDS];
  char labels[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  int out_rank;
  char out[TL_MAX_RANK];
} naive_spec;

/* Expand a term; "..." becomes the digits '0'.. aligned from the right of `broadcast`. */
static int expand(const char *term, size_t length, int rank, int broadcast, char *labels) {
  int named = 0, ellipsis = 0;
  for (size_t i = 0; i < length; i++) {
    if (term[i] == '.') {
      ellipsis = 1;
      i += 2;
    } else if (term[i] != ' ') {
      named++;
    }
  }
  int axes = ellipsis ? (rank < 0 ? broadcast : rank - named) : 0;
  int k = 0;
  for (size_t i = 0; i < length; i++) {
    if (term[i] == '.') {
      for (int e = 0; e < axes; e++) labels[k++] = (char)('0' + (broadcast - axes + e));
      i += 2;
    } else if (term[i] != ' ') {
      labels[k++] = term[i];
    }
  }
  return axes;
}

static void naive_parse(const char *spec, int n, const tl_tensor *const *ops, naive_spec *out) {
  const char *arrow = strstr(spec, "->");
  size_t in_length = arrow ? (size_t)(arrow - spec) : strlen(spec);
  const char *start[TL_EINSUM_MAX_OPERANDS];
  size_t length[TL_EINSUM_MAX_OPERANDS];
  int count = 0;
  const char *p = spec;
  for (;;) {
    const char *comma = memchr(p, ',', in_length - (size_t)(p - spec));
    start[count] = p;
    length[count] = comma ? (size_t)(comma - p) : in_length - (size_t)(p - spec);
    count++;
    if (!comma) break;
    p = comma + 1;
  }
  TH_CHECK(count == n);
  int broadcast = 0;
  out->n = n;
  for (int i = 0; i < n; i++) {
    out->rank[i] = ops[i]->rank;
    int axes = expand(start[i], length[i], ops[i]->rank, 0, out->labels[i]);
    if (axes > broadcast) broadcast = axes;
  }
  for (int i = 0; i < n; i++) expand(start[i], length[i], ops[i]->rank, broadcast, out->labels[i]);
  if (arrow) {
    const char *o = arrow + 2;
    int named = 0, ellipsis = 0;
    for (const char *q = o; *q; q++) {
      if (*q == '.') {
        ellipsis = 1;
        q += 2;
      } else if (*q != ' ') {
        named++;
      }
    }
    out->out_rank = named + (ellipsis ? broadcast : 0);
    expand(o, strlen(o), ellipsis ? -1 : 0, broadcast, out->out);
  } else {
    int k = 0;
    for (int e = 0; e < broadcast; e++) out->out[k++] = (char)('0' + e);
    for (int c = 'A'; c <= 'z'; c++) {
      int seen = 0;
      for (int i = 0; i < n; i++) {
        for (int a = 0; a < out->rank[i]; a++) seen += out->labels[i][a] == c;
      }
      if (seen == 1) out->out[k++] = (char)c;
    }
    out->out_rank = k;
  }
}

/* ref (column-major over the output, double complex) and mag (sum of |terms|). */
static void naive_eval(const char *spec, int n, const tl_tensor *const *ops, int64_t *out_shape,
                       int *out_rank, double complex **ref_out, double **mag_out) {
  naive_spec s;
  naive_parse(spec, n, ops, &s);
  char labels[128];
  int64_t extent[128];
  int count = 0;
  for (int i = 0; i < n; i++) {
    for (int a = 0; a < s.rank[i]; a++) {
      int found = -1;
      for (int l = 0; l < count; l++) found = labels[l] == s.labels[i][a] ? l : found;
      if (found < 0) {
        labels[count] = s.labels[i][a];
        extent[count] = ops[i]->shape[a];
        count++;
      } else if (ops[i]->shape[a] > extent[found]) {
        extent[found] = ops[i]->shape[a];
      }
    }
  }
  int op_axis_label[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  for (int i = 0; i < n; i++) {
    for (int a = 0; a < s.rank[i]; a++) {
      for (int l = 0; l < count; l++) {
        if (labels[l] == s.labels[i][a]) op_axis_label[i][a] = l;
      }
    }
  }
  int out_label[TL_MAX_RANK];
  int64_t out_size = 1;
  for (int k = 0; k < s.out_rank; k++) {
    for (int l = 0; l < count; l++) {
      if (labels[l] == s.out[k]) out_label[k] = l;
    }
    out_shape[k] = extent[out_label[k]];
    out_size *= out_shape[k];
  }
  *out_rank = s.out_rank;
  double complex *ref = calloc((size_t)(out_size > 0 ? out_size : 1), sizeof *ref);
  double *mag = calloc((size_t)(out_size > 0 ? out_size : 1), sizeof *mag);
  int empty = 0;
  for (int l = 0; l < count; l++) empty |= extent[l] == 0;
  int64_t idx[128] = {0};
  while (!empty) {
    double complex term = 1.0;
    double term_mag = 1.0;
    for (int i = 0; i < n; i++) {
      int64_t at[TL_MAX_RANK];
      for (int a = 0; a < s.rank[i]; a++) {
        at[a] = ops[i]->shape[a] == 1 ? 0 : idx[op_axis_label[i][a]];
      }
      double complex v = th_num_get(ops[i], at);
      term *= v;
      term_mag *= cabs(v);
    }
    int64_t pos = 0, stride = 1;
    for (int k = 0; k < s.out_rank; k++) {
      pos += idx[out_label[k]] * stride;
      stride *= out_shape[k];
    }
    ref[pos] += term;
    mag[pos] += term_mag;
    int l = 0;
    for (; l < count; l++) {
      if (++idx[l] < extent[l]) break;
      idx[l] = 0;
    }
    if (l == count) break;
  }
  *ref_out = ref;
  *mag_out = mag;
}

/* ---- The spec table ------------------------------------------------------------------- */

typedef struct spec_case {
  const char *spec;
  const char *shapes; /* operands separated by ',', extents by 'x'; "" is a scalar */
} spec_case;

static const spec_case spec_table[] = {
    /* matrix chains */
    {"ij,jk->ik", "3x4,4x5"},
    {"ij,jk", "3x4,4x5"},
    {"ij,jk,kl->il", "3x4,4x5,5x2"},
    {"ij,jk,kl,lm->im", "2x3,3x4,4x5,5x2"},
    {"ij,jk,kl,lm,mn->in", "4x3,3x5,5x2,2x4,4x3"},
    {"ij,jk,kl->li", "3x4,4x5,5x2"},
    {"ab,bc,cd,de,ef,fg,gh,hi->ai", "3x4,4x5,5x2,2x6,6x3,3x4,4x2,2x5"},
    {"abx,bcy,cd,de,ef,fg->ag", "3x4x2,4x5x3,5x2,2x6,6x3,3x4"},
    {"ba,ac->cb", "4x3,3x5"},
    {"ij,j->i", "3x4,4"},
    {"i,ij->j", "3,3x4"},
    {"iI,Ij->ij", "3x2,2x4"},
    {"ij,jk->", "3x4,4x5"},
    /* traces and diagonals */
    {"ii->", "4x4"},
    {"ii", "3x3"},
    {"ii->i", "4x4"},
    {"iij->j", "3x3x2"},
    {"ijji->", "2x3x3x2"},
    {"iii->i", "3x3x3"},
    {"ii,ij->j", "3x3,3x4"},
    {"ijk,ikj->", "2x3x3,2x3x3"},
    {"ij,jj->i", "3x4,4x4"},
    /* transposes and sums on one operand */
    {"ij->ji", "3x4"},
    {"ij->", "3x4"},
    {"ijk->kji", "2x3x4"},
    {"ijk->j", "2x3x4"},
    /* outer products and elementwise */
    {"i,j->ij", "3,4"},
    {"i,j,k->ijk", "2,3,4"},
    {"ij,kl->ijkl", "2x3,2x2"},
    {",ij->ij", ",3x4"},
    {"i,i->", "5,5"},
    {"i,i->i", "5,5"},
    {"ij,ij->ij", "3x4,3x4"},
    {"ij,ij->", "3x4,3x4"},
    {"abc,abc,abc->", "2x3x2,2x3x2,2x3x2"},
    {"ij,ij,ij->ij", "2x3,2x3,2x3"},
    {"i,i,i->i", "4,4,4"},
    /* batch */
    {"bij,bjk->bik", "3x2x4,3x4x2"},
    {"bij,bjk->bki", "3x2x4,3x4x2"},
    {"ijb,jkb->ikb", "2x4x3,4x2x3"},
    {"bi,bi->b", "3x4,3x4"},
    {"bij,bjk,bkl->bil", "2x3x2,2x2x4,2x4x3"},
    /* tensor networks: 3- and 4-index */
    {"abc,cd->abd", "2x3x4,4x3"},
    {"abc,bcd->ad", "2x3x4,3x4x2"},
    {"abcd,cdef->abef", "2x3x2x3,2x3x2x2"},
    {"abcd,dcef->feba", "2x2x3x2,2x3x2x3"},
    {"ijkl,jk->il", "2x3x4x2,3x4"},
    {"abcd,cdef,efgh->abgh", "2x2x3x2,3x2x2x3,2x3x2x2"},
    {"ij,jk,ki->", "3x4,4x5,5x3"},
    /* dots whose summed labels lie in other orders (a summed label becomes a batch label) */
    {"ab,ba->", "20x17,17x20"},
    {"ab,ba->a", "19x21,21x19"},
    {"abc,cba->b", "17x3x18,18x3x17"},
    {"abc,cba->", "17x3x18,18x3x17"},
    {"abc,bca->", "16x5x17,5x17x16"},
    {"ij,jk,ki->i", "3x4,4x5,5x3"},
    {"ab,bc,cd,da->", "2x3,3x4,4x2,2x2"},
    {"pi,qj,ijkl,rk,sl->pqrs", "3x2,3x2,2x2x2x2,3x2,3x2"},
    /* MPS environment updates (L: left env, A: site tensor, W: MPO, B: conjugate site) */
    {"ab,asc,bsd->cd", "3x3,3x2x4,3x2x4"},
    {"abc,asd,bste,ctf->def", "3x2x3,3x2x4,2x2x2x2,3x2x4"},
    {"asd,bste,ctf,def->abc", "3x2x4,2x2x2x2,3x2x4,4x2x4"},
    {"abc,asd,dtf,bsue,etvg,cuh,hvi->fgi", "3x2x3,3x2x3,3x2x3,2x2x2x2,2x2x2x2,3x2x3,3x2x3"},
    /* ellipsis and broadcasting */
    {"...ij,...jk->...ik", "2x3x4,2x4x5"},
    {"...ij,...jk->...ik", "1x3x4,2x4x5"},
    {"...ij,...jk", "2x3x4,4x5"},
    {"i...->...", "3x2x4"},
    {"...ii->...i", "2x3x3"},
    /* empty and size-1 extents */
    /* every term class large enough for the direct routes (elementwise product, blocked
     * copy, reduce: at least 4096 elements) */
    {"ij,ij->ij", "64x80,64x80"},
    {"ij,ji->ij", "64x80,80x64"},
    {"ij,ij->ji", "64x80,64x80"},
    {"ij,ij->ji", "300x250,300x250"}, /* product in the inputs' order, then the tiled copy */
    {"ij,ij->ji", "257x330,257x330"}, /* the same with partial tiles both ways */
    /* the two passes band by band (direct.c): several bands of about 1 MiB and a partial
     * last one in every dtype; then bands of the minimum 16 indices of a rank-3 lead's
     * slowest axis (the complex ones past the band limit: made whole) */
    {"ij,ij->ji", "700x1100,700x1100"},
    {"ijk,ijk->kji", "500x60x40,500x60x40"},
    {"ij,ji->ij", "300x250,250x300"},
    {"i,j->ij", "70,66"},
    {"i,j->ij", "300,250"}, /* outer products: direct, each input read along its axis */
    {"j,i->ij", "250,300"},
    {"i,ji->ij", "300,250x300"},
    {"j,ji->ij", "250,250x300"}, /* a constant along out's dense axis, b dense across it */
    {"ji,j->ij", "250x300,250"}, /* a read across its dense axis: the product in a's order */
    {"i,ij->j", "37,37x70"},     /* the thin GEMM's axpy and dot forms, with tails */
    {"ij,j->i", "70x37,37"},
    {"bi,bi->b", "40x37,40x37"},
    {"ij,ij->", "64x81,64x81"},
    {"ij,j->ij", "64x80,80"},
    {"ij,i->ji", "64x80,64"},
    {"bij,bjk->bik", "8x24x20,8x20x24"},
    {"bi,bi->bi", "40x120,40x120"},
    {"ij,jk,ik->ik", "60x3,3x70,60x70"},
    {"ii->", "70x70"},
    {"ii->i", "70x70"},
    {"iij->ji", "40x40x3"},
    {"ij->", "64x80"},
    {"ij->i", "64x80"},
    {"ij->j", "64x80"},
    {"ij->ji", "64x80"},
    {"ijk->kij", "16x20x18"},
    {"ijk,k->ij", "16x20x18,18"},
    {"ij,jk->ik", "3x0,0x4"},
    {"ij,jk->ik", "0x3,3x4"},
    {"ij,jk->ik", "1x1,1x1"},
    {"ii->", "0x0"},
};
#define SPEC_COUNT (sizeof spec_table / sizeof spec_table[0])

static int parse_shapes(const char *text, int *ranks, int64_t shapes[][TL_MAX_RANK]) {
  int n = 0;
  const char *p = text;
  for (;;) {
    ranks[n] = 0;
    while (*p && *p != ',') {
      char *end;
      shapes[n][ranks[n]++] = strtoll(p, &end, 10);
      p = end;
      if (*p == 'x') p++;
    }
    n++;
    if (*p != ',') break;
    p++;
  }
  return n;
}

static int run_case(tl_exec *exec, const spec_case *c, tl_dtype dtype, int layout, int fresh,
                    tl_einsum_path_kind kind) {
  int ranks[TL_EINSUM_MAX_OPERANDS];
  int64_t shapes[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  int n = parse_shapes(c->shapes, ranks, shapes);
  operand ops[TL_EINSUM_MAX_OPERANDS];
  const tl_tensor *views[TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n; i++) {
    operand_make(&ops[i], dtype, ranks[i], shapes[i], layout);
    views[i] = &ops[i].view;
  }
  int64_t out_shape[TL_MAX_RANK];
  int out_rank;
  double complex *ref;
  double *mag;
  naive_eval(c->spec, n, views, out_shape, &out_rank, &ref, &mag);
  tl_tensor out;
  tl_status status;
  if (fresh) {
    status = tl_einsum(exec, c->spec, n, views, &out);
  } else {
    TH_CHECK_OK(tl_tensor_create(dtype, out_rank, out_shape, &out));
    double poison = 1234.5;
    for_each_index(&out, fill_value_at, &poison);
    status = tl_einsum_ex_into(
        exec, &(tl_einsum_options){.size = sizeof(tl_einsum_options), .path_kind = kind}, c->spec,
        n, views, &out);
  }
  int ok = status == TL_OK;
  if (!ok) {
    fprintf(stderr, "  %s [%s] %s layout %d: %s (%s)\n", c->spec, c->shapes, tl_dtype_name(dtype),
            layout, tl_status_name(status), tl_last_message());
  } else {
    TH_CHECK(out.rank == out_rank);
    for (int k = 0; k < out_rank && ok; k++) ok = out.shape[k] == out_shape[k];
    int64_t idx[TL_MAX_RANK] = {0};
    int64_t count = 1;
    for (int k = 0; k < out_rank; k++) count *= out_shape[k];
    double tol = th_num_tolerance(dtype);
    for (int64_t pos = 0; pos < count && ok; pos++) {
      int64_t rest = pos;
      for (int k = 0; k < out_rank; k++) {
        idx[k] = rest % out_shape[k];
        rest /= out_shape[k];
      }
      double complex got = th_num_get(&out, idx);
      double err = cabs(got - ref[pos]);
      if (!(err <= tol * (1.0 + mag[pos]))) {
        fprintf(stderr, "  %s [%s] %s layout %d: element %lld is %g%+gi, expected %g%+gi\n",
                c->spec, c->shapes, tl_dtype_name(dtype), layout, (long long)pos, creal(got),
                cimag(got), creal(ref[pos]), cimag(ref[pos]));
        ok = 0;
      }
    }
    tl_tensor_release(&out);
  }
  if (!fresh && !ok && status != TL_OK) tl_tensor_release(&out);
  free(ref);
  free(mag);
  for (int i = 0; i < n; i++) tl_tensor_release(&ops[i].storage);
  return ok;
}

static void einsum_spec_table_matches_naive_evaluation(void) {
  TH_CHECK(SPEC_COUNT >= 40);
  th_held h;
  th_held_open(&h, 2);
  int failures = 0;
  for (size_t c = 0; c < SPEC_COUNT; c++) {
    for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
      for (int layout = 0; layout < LAYOUTS; layout++) {
        failures +=
            !run_case(h.exec, &spec_table[c], (tl_dtype)dtype, layout, 0, TL_EINSUM_PATH_AUTO);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void einsum_fresh_form_and_every_path_kind_match_naive(void) {
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  for (size_t c = 0; c < SPEC_COUNT; c++) {
    failures += !run_case(h.exec, &spec_table[c], TL_F64, 0, 1, TL_EINSUM_PATH_AUTO);
    failures += !run_case(h.exec, &spec_table[c], TL_C128, 2, 0, TL_EINSUM_PATH_GREEDY);
    failures += !run_case(h.exec, &spec_table[c], TL_F64, 1, 0, TL_EINSUM_PATH_OPTIMAL);
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

/* ---- Paths ---------------------------------------------------------------------------- */

static void einsum_chosen_path_never_costs_more_than_greedy(void) {
  for (size_t c = 0; c < SPEC_COUNT; c++) {
    int ranks[TL_EINSUM_MAX_OPERANDS];
    int64_t shapes[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
    int n = parse_shapes(spec_table[c].shapes, ranks, shapes);
    const int64_t *shape_ptrs[TL_EINSUM_MAX_OPERANDS];
    for (int i = 0; i < n; i++) shape_ptrs[i] = shapes[i];
    tl_einsum_path_info info;
    TH_CHECK_OK(
        tl_einsum_path(TL_EINSUM_PATH_AUTO, spec_table[c].spec, n, ranks, shape_ptrs, &info));
    TH_CHECK(info.n_steps == n - 1);
    TH_CHECK(info.flops <= info.greedy_flops);
    if (n <= TL_EINSUM_AUTO_OPTIMAL_MAX) TH_CHECK(info.flops == info.optimal_flops);
  }
  /* The benchmark's spec at a size where the order matters. */
  int ranks[5] = {2, 2, 4, 2, 2};
  int64_t m[2] = {48, 48}, t[4] = {48, 48, 48, 48};
  const int64_t *shapes[5] = {m, m, t, m, m};
  tl_einsum_path_info info;
  TH_CHECK_OK(
      tl_einsum_path(TL_EINSUM_PATH_AUTO, "pi,qj,ijkl,rk,sl->pqrs", 5, ranks, shapes, &info));
  TH_CHECK(info.flops <= info.greedy_flops);
  /* Sequencing the four matrices one by one: 4 steps of 2 * 48^5 each. */
  TH_CHECK(info.flops == 4.0 * 2.0 * pow(48.0, 5.0));
}

/* Brute force: the cheapest of every sequence of pairwise contractions. */
typedef struct bf_problem {
  int labels; /* label count */
  int64_t extent[16];
  uint32_t output;
} bf_problem;

static double bf_size(const bf_problem *p, uint32_t set) {
  double s = 1.0;
  for (int l = 0; l < p->labels; l++) {
    if (set >> l & 1u) s *= (double)p->extent[l];
  }
  return s;
}

static double brute_force(const bf_problem *p, uint32_t *sets, int count) {
  if (count == 1) return 0.0;
  double best = -1.0;
  for (int i = 0; i < count; i++) {
    for (int j = i + 1; j < count; j++) {
      uint32_t need = p->output;
      for (int k = 0; k < count; k++) {
        if (k != i && k != j) need |= sets[k];
      }
      uint32_t result = (sets[i] | sets[j]) & need;
      double cost = 2.0 * bf_size(p, sets[i] | sets[j]);
      uint32_t next[8];
      int m = 0;
      for (int k = 0; k < count; k++) {
        if (k != i && k != j) next[m++] = sets[k];
      }
      next[m++] = result;
      double total = cost + brute_force(p, next, m);
      if (best < 0 || total < best) best = total;
    }
  }
  return best;
}

static void einsum_exact_path_matches_brute_force_on_random_networks(void) {
  for (int trial = 0; trial < 60; trial++) {
    int n = 2 + trial % 5; /* 2..6 operands */
    bf_problem p;
    p.labels = 6 + trial % 4;
    for (int l = 0; l < p.labels; l++) p.extent[l] = 1 + (int64_t)((rng_uniform() + 1.0) * 4.0);
    uint32_t sets[8];
    char spec[128];
    size_t at = 0;
    int ranks[8];
    int64_t shapes[8][TL_MAX_RANK];
    const int64_t *shape_ptrs[8];
    uint32_t count_of[16] = {0};
    for (int i = 0; i < n; i++) {
      sets[i] = 0;
      ranks[i] = 0;
      for (int l = 0; l < p.labels; l++) {
        if (rng_uniform() < -0.3) continue;
        sets[i] |= 1u << l;
        count_of[l]++;
        shapes[i][ranks[i]++] = p.extent[l];
        spec[at++] = (char)('a' + l);
      }
      spec[at++] = i + 1 < n ? ',' : '-';
      shape_ptrs[i] = shapes[i];
    }
    spec[at++] = '>';
    /* Output: labels seen once, and a random extra one seen more often. */
    p.output = 0;
    for (int l = 0; l < p.labels; l++) {
      if (count_of[l] == 1 || (count_of[l] > 1 && rng_uniform() > 0.6)) {
        p.output |= 1u << l;
        spec[at++] = (char)('a' + l);
      }
    }
    spec[at] = '\0';
    /* The library sums lone labels before the path; do the same for brute force. */
    uint32_t prepared[8];
    for (int i = 0; i < n; i++) {
      uint32_t need = p.output;
      for (int j = 0; j < n; j++) {
        if (j != i) need |= sets[j];
      }
      prepared[i] = sets[i] & need;
    }
    double expected = brute_force(&p, prepared, n);
    tl_einsum_path_info info;
    TH_CHECK_OK(tl_einsum_path(TL_EINSUM_PATH_OPTIMAL, spec, n, ranks, shape_ptrs, &info));
    if (fabs(info.optimal_flops - expected) > 1e-9 * expected) {
      fprintf(stderr, "  %s: exact %g, brute force %g\n", spec, info.optimal_flops, expected);
      TH_CHECK(0);
    }
    TH_CHECK(info.optimal_flops <= info.greedy_flops);
  }
}

/* ---- Plan cache and allocation --------------------------------------------------------- */

static void einsum_repeated_into_makes_no_heap_allocation(void) {
  th_held h;
  th_held_open(&h, 1);
  const char *spec = "abc,asd,bste,ctf->def";
  int ranks[4];
  int64_t shapes[4][TL_MAX_RANK];
  int n = parse_shapes("3x2x3,3x2x4,2x2x2x2,3x2x4", ranks, shapes);
  operand ops[4];
  const tl_tensor *views[4];
  for (int i = 0; i < n; i++) {
    operand_make(&ops[i], TL_F64, ranks[i], shapes[i], 0);
    views[i] = &ops[i].view;
  }
  int64_t out_shape[3] = {4, 2, 4};
  tl_tensor out;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 3, out_shape, &out));
  TH_CHECK_OK(tl_einsum_into(h.exec, spec, n, views, &out));
  TH_CHECK_OK(tl_einsum_into(h.exec, spec, n, views, &out));
  uint64_t before = tl_allocation_count();
  for (int r = 0; r < 20; r++) TH_CHECK_OK(tl_einsum_into(h.exec, spec, n, views, &out));
  uint64_t after = tl_allocation_count();
  if (after != before)
    fprintf(stderr, "  %llu allocations in 20 calls\n", (unsigned long long)(after - before));
  TH_CHECK(after == before);
  tl_tensor_release(&out);
  for (int i = 0; i < n; i++) tl_tensor_release(&ops[i].storage);
  th_held_close(&h);
}

/* An intermediate takes its axes in the order its operands hold them in memory, so the next
 * step of a chain finds its summed axes contiguous: for the environment update
 * E[a,b] A[a,s,c] conj(A)[b,s,e] -> [c,e] over C-ordered operands (numpy's), E A gives
 * [c,s,b] (densest first), which the second step reads in place; in the spec's order,
 * [s,c,b], it would have to be permuted first. Column-major operands keep the spec's order,
 * and so does a plan built without strides (tl_einsum_path). */
static void einsum_intermediates_follow_operand_memory_order(void) {
  const char *spec = "ab,asc,bse->ce";
  int ranks[3] = {2, 3, 3};
  int64_t shapes[3][TL_MAX_RANK] = {{16, 16}, {16, 2, 16}, {16, 2, 16}};
  int64_t row[3][TL_MAX_RANK], col[3][TL_MAX_RANK];
  for (int i = 0; i < 3; i++) {
    tl_strides_row_major(ranks[i], shapes[i], row[i]);
    tl_strides_col_major(ranks[i], shapes[i], col[i]);
  }
  const int64_t *shape_of[3] = {shapes[0], shapes[1], shapes[2]};
  const int64_t *row_of[3] = {row[0], row[1], row[2]}, *col_of[3] = {col[0], col[1], col[2]};
  tl__einsum_spec *parsed = malloc(sizeof *parsed);
  tl__einsum_plan *plan = malloc(sizeof *plan);
  TH_CHECK(parsed != NULL && plan != NULL);
  TH_CHECK_OK(tl__einsum_parse(spec, 3, ranks, parsed));
  const int64_t *const *strides[3] = {row_of, col_of, NULL};
  for (int v = 0; v < 3; v++) {
    TH_CHECK_OK(tl__einsum_plan_build(spec, parsed, shape_of, strides[v], TL_F64,
                                      TL_EINSUM_PATH_AUTO, NULL, 0, plan));
    TH_CHECK(plan->path.n_steps == 2);
    /* E meets one of the two rank-3 operands first (both cost the same): X[x0,x1,x2] with
     * x0 summed against E, whose other label y is new. */
    int p0 = plan->path.pairs[0][0], p1 = plan->path.pairs[0][1];
    TH_CHECK((p0 == 0) != (p1 == 0));
    const int *x = parsed->inputs[p0 == 0 ? p1 : p0].labels, *e = parsed->inputs[0].labels;
    int y = e[0] == x[0] ? e[1] : e[0];
    const int memory[3] = {x[2], x[1], y}, written[3] = {x[1], x[2], y};
    const int *expect = v == 0 ? memory : written;
    TH_CHECK(plan->step_rank[0] == 3);
    for (int k = 0; k < 3; k++) {
      if (plan->step_labels[0][k] != expect[k])
        fprintf(stderr, "  strides %d: step 0 axis %d has label %d, expected %d\n", v, k,
                plan->step_labels[0][k], expect[k]);
      TH_CHECK(plan->step_labels[0][k] == expect[k]);
    }
  }
  free(parsed);
  free(plan);
}

/* A batch label (kept by a step, in both of its operands) is the slowest axis of the step's
 * intermediate, so each entry of a stack of small products is one dense block: for
 * "zab,zbc,zcd->zad" over C-ordered operands (numpy's stacks) the first step writes [a,c,z]
 * (densest first), not [a,z,c] with each entry's columns a whole stack apart; the same with
 * column-major operands and without strides. */
static void einsum_intermediates_keep_batch_labels_slowest(void) {
  const char *spec = "zab,zbc,zcd->zad";
  int ranks[3] = {3, 3, 3};
  int64_t shapes[3][TL_MAX_RANK] = {{50, 4, 4}, {50, 4, 4}, {50, 4, 4}};
  int64_t row[3][TL_MAX_RANK], col[3][TL_MAX_RANK];
  for (int i = 0; i < 3; i++) {
    tl_strides_row_major(ranks[i], shapes[i], row[i]);
    tl_strides_col_major(ranks[i], shapes[i], col[i]);
  }
  const int64_t *shape_of[3] = {shapes[0], shapes[1], shapes[2]};
  const int64_t *row_of[3] = {row[0], row[1], row[2]}, *col_of[3] = {col[0], col[1], col[2]};
  tl__einsum_spec *parsed = malloc(sizeof *parsed);
  tl__einsum_plan *plan = malloc(sizeof *plan);
  TH_CHECK(parsed != NULL && plan != NULL);
  TH_CHECK_OK(tl__einsum_parse(spec, 3, ranks, parsed));
  const int z = parsed->inputs[0].labels[0];
  const int64_t *const *strides[3] = {row_of, col_of, NULL};
  for (int v = 0; v < 3; v++) {
    TH_CHECK_OK(tl__einsum_plan_build(spec, parsed, shape_of, strides[v], TL_F64,
                                      TL_EINSUM_PATH_AUTO, NULL, 0, plan));
    TH_CHECK(plan->path.n_steps == 2);
    TH_CHECK(plan->step_rank[0] == 3);
    if (plan->step_labels[0][2] != z)
      fprintf(stderr, "  strides %d: step 0 labels %d %d %d, batch label %d not last\n", v,
              plan->step_labels[0][0], plan->step_labels[0][1], plan->step_labels[0][2], z);
    TH_CHECK(plan->step_labels[0][2] == z);
  }
  free(parsed);
  free(plan);
}

/* Scratch holds an intermediate only while it is live: from the step that writes it to the
 * step that reads it (the summed operands from before the first step). Buffers live at the
 * same step never share bytes, every buffer lies inside scratch_bytes at a 64-byte-aligned
 * offset, and a chain evaluated left to right needs two intermediates of scratch, as numpy's
 * einsum does, not one per step. Checked on plans of a left-to-right chain, a pairwise tree,
 * the greedy path, and a network whose operands are summed first. */
typedef struct live_buffer {
  size_t offset, bytes;
  int first, last;
} live_buffer;

static int consumer_step(const tl__einsum_plan *plan, int slot) {
  for (int s = 0; s < plan->path.n_steps; s++)
    if (plan->path.pairs[s][0] == slot || plan->path.pairs[s][1] == slot) return s;
  return plan->path.n_steps;
}

static size_t labels_bytes(const tl__einsum_plan *plan, int rank, const int *labels) {
  size_t bytes = sizeof(double);
  for (int k = 0; k < rank; k++) bytes *= (size_t)plan->extent[labels[k]];
  return bytes;
}

/* Checks the plan's layout; returns the largest buffer's size. */
static size_t check_scratch_layout(const char *what, const tl__einsum_plan *plan) {
  live_buffer buffers[2 * TL_EINSUM_MAX_OPERANDS];
  int count = 0;
  size_t largest = 0;
  for (int i = 0; i < plan->n_inputs; i++) {
    const tl__einsum_prep *prep = &plan->prep[i];
    if (!prep->sum) continue;
    buffers[count++] =
        (live_buffer){prep->scratch_offset, labels_bytes(plan, prep->n_kept, prep->kept_labels), -1,
                      consumer_step(plan, i)};
  }
  for (int s = 0; s + 1 < plan->path.n_steps; s++) {
    buffers[count++] = (live_buffer){plan->step_offset[s],
                                     labels_bytes(plan, plan->step_rank[s], plan->step_labels[s]),
                                     s, consumer_step(plan, plan->n_inputs + s)};
  }
  for (int k = 0; k < count; k++) {
    const live_buffer *b = &buffers[k];
    if (b->bytes > largest) largest = b->bytes;
    TH_CHECK(b->offset % 64 == 0);
    TH_CHECK(b->offset + b->bytes <= plan->scratch_bytes);
    for (int o = 0; o < k; o++) {
      const live_buffer *c = &buffers[o];
      int meet = !(c->last < b->first || b->last < c->first);
      int share = b->offset < c->offset + c->bytes && c->offset < b->offset + b->bytes;
      if (meet && share)
        fprintf(stderr, "  %s: buffers %d [%d, %d] and %d [%d, %d] share bytes\n", what, o,
                c->first, c->last, k, b->first, b->last);
      TH_CHECK(!(meet && share));
    }
  }
  return largest;
}

static void einsum_scratch_holds_only_live_intermediates(void) {
  enum { N = 12 };
  char spec[4 * N + 8];
  int ranks[N];
  int64_t shapes[N][TL_MAX_RANK];
  const int64_t *shape_of[N];
  char *w = spec;
  for (int i = 0; i < N; i++) {
    w += sprintf(w, "%s%c%c", i ? "," : "", 'a' + i, 'b' + i);
    ranks[i] = 2;
    shapes[i][0] = shapes[i][1] = 32;
    shape_of[i] = shapes[i];
  }
  sprintf(w, "->a%c", 'a' + N);
  int chain[2 * (N - 1)], tree[2 * (N - 1)];
  for (int s = 0; s < N - 1; s++) {
    chain[2 * s] = 0; /* the next operand and the newest result, at the end of the list */
    chain[2 * s + 1] = s == 0 ? 1 : N - 1 - s;
    tree[2 * s] = 0;
    tree[2 * s + 1] = 1;
  }
  tl__einsum_spec *parsed = malloc(sizeof *parsed);
  tl__einsum_plan *plan = malloc(sizeof *plan);
  TH_CHECK(parsed != NULL && plan != NULL);
  TH_CHECK_OK(tl__einsum_parse(spec, N, ranks, parsed));
  TH_CHECK_OK(tl__einsum_plan_build(spec, parsed, shape_of, NULL, TL_F64, TL_EINSUM_PATH_GIVEN,
                                    chain, N - 1, plan));
  size_t one = check_scratch_layout("chain", plan);
  TH_CHECK(one == 32 * 32 * sizeof(double));
  if (plan->scratch_bytes > 2 * one)
    fprintf(stderr, "  chain of %d: %zu bytes of scratch for intermediates of %zu\n", N,
            plan->scratch_bytes, one);
  TH_CHECK(plan->scratch_bytes <= 2 * one);
  TH_CHECK_OK(tl__einsum_plan_build(spec, parsed, shape_of, NULL, TL_F64, TL_EINSUM_PATH_GIVEN,
                                    tree, N - 1, plan));
  check_scratch_layout("tree", plan);
  TH_CHECK(plan->scratch_bytes < (size_t)(N - 2) * one);
  TH_CHECK_OK(tl__einsum_plan_build(spec, parsed, shape_of, NULL, TL_F64, TL_EINSUM_PATH_GREEDY,
                                    NULL, 0, plan));
  check_scratch_layout("greedy", plan);
  /* summed operands: x and y leave the first two before any step, and stay live until read */
  const char *summed = "ijx,jky,kl,lm,mi->";
  int summed_ranks[5] = {3, 3, 2, 2, 2};
  int64_t summed_shapes[5][TL_MAX_RANK] = {{8, 9, 3}, {9, 10, 4}, {10, 7}, {7, 6}, {6, 8}};
  const int64_t *summed_of[5];
  for (int i = 0; i < 5; i++) summed_of[i] = summed_shapes[i];
  TH_CHECK_OK(tl__einsum_parse(summed, 5, summed_ranks, parsed));
  int late[8] = {2, 3, 2, 3, 0, 2, 0, 1}; /* kl lm, mi (kl lm), ijx, jky last */
  TH_CHECK_OK(tl__einsum_plan_build(summed, parsed, summed_of, NULL, TL_F64, TL_EINSUM_PATH_GIVEN,
                                    late, 4, plan));
  TH_CHECK(plan->prep[0].sum && plan->prep[1].sum);
  check_scratch_layout("summed", plan);
  free(parsed);
  free(plan);
}

/* ---- Bad input ------------------------------------------------------------------------ */

typedef struct bad_case {
  const char *what;
  const char *spec;
  const char *shapes; /* operands */
  int n;              /* n_operands passed (-1: from shapes) */
  const char *out_shape;
  int variant; /* see run_bad */
  tl_status expected;
} bad_case;

enum {
  BAD_PLAIN = 0,
  BAD_NULL_EXEC,
  BAD_NULL_OPERANDS,
  BAD_NULL_OPERAND,
  BAD_NULL_OUT,
  BAD_MIXED_DTYPE,
  BAD_OUT_DTYPE,
  BAD_OUT_ALIAS,
  BAD_OUT_ZERO_STRIDE,
  BAD_NEGATIVE_EXTENT,
  BAD_KIND,
  BAD_NULL_DATA
};

static const bad_case bad_table[] = {
    {"NULL exec", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NULL_EXEC, TL_E_INVALID},
    {"NULL spec", NULL, "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"NULL operands", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NULL_OPERANDS, TL_E_INVALID},
    {"NULL operand", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NULL_OPERAND, TL_E_INVALID},
    {"NULL out", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NULL_OUT, TL_E_INVALID},
    {"no operands", "ij->ij", "2x3", 0, "2x3", BAD_PLAIN, TL_E_INVALID},
    {"too many operands", "ij->ij", "2x3", 33, "2x3", BAD_PLAIN, TL_E_INVALID},
    {"unknown label char", "ij,j1->i", "2x3,3x2", -1, "2", BAD_PLAIN, TL_E_INVALID},
    {"a lone '.'", "i.j,jk->ik", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"two ellipses", "...i...,ij->j", "2x3,3x2", -1, "2", BAD_PLAIN, TL_E_INVALID},
    {"'-' without '>'", "ij,jk-ik", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"'>' without '-'", "ij,jk>ik", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"second arrow", "ij,jk->ik->i", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"fewer terms than operands", "ij->ij", "2x3,3x2", -1, "2x3", BAD_PLAIN, TL_E_INVALID},
    {"more terms than operands", "ij,jk,kl->il", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"output label in no input", "ij,jk->iq", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"output label repeated", "ij,jk->ii", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_INVALID},
    {"term longer than the rank", "ijk,jk->i", "2x3,3x2", -1, "2", BAD_PLAIN, TL_E_SHAPE},
    {"term shorter than the rank", "i,jk->ik", "2x3,3x2", -1, "2x2", BAD_PLAIN, TL_E_SHAPE},
    {"contracted extents differ", "ij,jk->ik", "2x3,4x2", -1, "2x2", BAD_PLAIN, TL_E_SHAPE},
    {"diagonal extents differ", "ii->i", "3x4", -1, "3", BAD_PLAIN, TL_E_SHAPE},
    {"letter labels do not broadcast", "ij,ij->ij", "2x3,1x3", -1, "2x3", BAD_PLAIN, TL_E_SHAPE},
    {"ellipsis extents differ", "...i,...i->...i", "2x3,4x3", -1, "2x3", BAD_PLAIN, TL_E_SHAPE},
    {"out of the wrong shape", "ij,jk->ik", "2x3,3x2", -1, "2x3", BAD_PLAIN, TL_E_SHAPE},
    {"out of the wrong rank", "ij,jk->ik", "2x3,3x2", -1, "4", BAD_PLAIN, TL_E_SHAPE},
    {"operands of mixed dtypes", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_MIXED_DTYPE, TL_E_DTYPE},
    {"out of another dtype", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_OUT_DTYPE, TL_E_DTYPE},
    {"out overlaps an operand", "ij,jk->ik", "2x2,2x2", -1, "2x2", BAD_OUT_ALIAS, TL_E_ALIAS},
    {"out has a zero stride", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_OUT_ZERO_STRIDE, TL_E_ALIAS},
    {"operand with a negative extent", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NEGATIVE_EXTENT,
     TL_E_SHAPE},
    {"operand without data", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_NULL_DATA, TL_E_INVALID},
    {"unknown path kind", "ij,jk->ik", "2x3,3x2", -1, "2x2", BAD_KIND, TL_E_INVALID},
    {"implicit output over 64 axes",
     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
     ",{0}{1}{2}{3}{4}{5}{6}{7}{8}{9}{10}{11}{12}",
     "1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1"
     "x1x1x1x1x1"
     ",1x1x1x1x1x1x1x1x1x1x1x1x1",
     -1, "2", BAD_PLAIN, TL_E_SHAPE},
};
#define BAD_COUNT (sizeof bad_table / sizeof bad_table[0])

static int run_bad(tl_exec *exec, const bad_case *c) {
  int ranks[TL_EINSUM_MAX_OPERANDS];
  int64_t shapes[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  int n = parse_shapes(c->shapes, ranks, shapes);
  operand ops[TL_EINSUM_MAX_OPERANDS];
  const tl_tensor *views[TL_EINSUM_MAX_OPERANDS + 1];
  for (int i = 0; i < n; i++) {
    operand_make(&ops[i], TL_F64, ranks[i], shapes[i], 0);
    views[i] = &ops[i].view;
  }
  for (int i = n; i <= TL_EINSUM_MAX_OPERANDS; i++) views[i] = views[0];
  int out_ranks[1];
  int64_t out_shapes[1][TL_MAX_RANK];
  parse_shapes(c->out_shape, out_ranks, out_shapes);
  tl_tensor out;
  TH_CHECK_OK(tl_tensor_create(c->variant == BAD_OUT_DTYPE ? TL_F32 : TL_F64, out_ranks[0],
                               out_shapes[0], &out));
  double poison = 77.0;
  for_each_index(&out, fill_value_at, &poison);
  tl_tensor target = out;
  tl_tensor original_first = ops[0].view;
  switch (c->variant) {
    case BAD_MIXED_DTYPE:
      tl_tensor_release(&ops[1].storage);
      operand_make(&ops[1], TL_C128, ranks[1], shapes[1], 0);
      break;
    case BAD_OUT_ALIAS:
      target = ops[1].view;
      break;
    case BAD_OUT_ZERO_STRIDE:
      target.strides[1] = 0;
      break;
    case BAD_NEGATIVE_EXTENT:
      ops[0].view.shape[0] = -2;
      break;
    case BAD_NULL_DATA:
      ops[0].view.data = NULL;
      break;
    default:
      break;
  }
  int n_pass = c->n >= 0 ? c->n : n;
  const tl_tensor *const *operand_list = views;
  if (c->variant == BAD_NULL_OPERANDS) operand_list = NULL;
  if (c->variant == BAD_NULL_OPERAND) views[1] = NULL;
  tl_exec *e = c->variant == BAD_NULL_EXEC ? NULL : exec;
  tl_tensor *out_arg = c->variant == BAD_NULL_OUT ? NULL : &target;
  tl_tensor before_target = target;
  tl_status status =
      c->variant == BAD_KIND
          ? tl_einsum_ex_into(e,
                              &(tl_einsum_options){.size = sizeof(tl_einsum_options),
                                                   .path_kind = (tl_einsum_path_kind)7},
                              c->spec, n_pass, operand_list, out_arg)
          : tl_einsum_into(e, c->spec, n_pass, operand_list, out_arg);
  int ok = status == c->expected && tl_last_message()[0] != '\0';
  if (!ok) {
    fprintf(stderr, "  bad case \"%s\": %s (expected %s), message \"%s\"\n", c->what,
            tl_status_name(status), tl_status_name(c->expected), tl_last_message());
  }
  /* Nothing written: the poison is intact and the descriptor unchanged. */
  int intact = memcmp(&before_target, &target, sizeof target) == 0;
  int64_t idx[TL_MAX_RANK] = {0};
  int64_t count = tl_tensor_numel(&out);
  for (int64_t pos = 0; pos < count; pos++) {
    int64_t rest = pos;
    for (int k = 0; k < out.rank; k++) {
      idx[k] = rest % out.shape[k];
      rest /= out.shape[k];
    }
    intact &= creal(th_num_get(&out, idx)) == 77.0;
  }
  if (!intact) fprintf(stderr, "  bad case \"%s\": the output was written\n", c->what);
  /* The fresh form rejects the same calls (those about out's own shape aside). */
  if (c->variant == BAD_PLAIN && strstr(c->what, "out of the wrong") == NULL) {
    tl_tensor fresh;
    memset(&fresh, 0xab, sizeof fresh);
    tl_tensor fresh_before = fresh;
    tl_status fresh_status = tl_einsum(exec, c->spec, n_pass, views, &fresh);
    if (fresh_status != c->expected || memcmp(&fresh, &fresh_before, sizeof fresh) != 0) {
      fprintf(stderr, "  bad case \"%s\" (fresh form): %s\n", c->what,
              tl_status_name(fresh_status));
      ok = 0;
    }
  }
  ops[0].view = original_first;
  tl_tensor_release(&out);
  for (int i = 0; i < n; i++) tl_tensor_release(&ops[i].storage);
  return ok && intact;
}

/* Rank TL_MAX_RANK (64) through every route: 12 axes behind "..." and the 52 letters, 13
 * of extent 2 (8192 elements, enough for the direct routes) and the rest of extent 1.
 * The blocked copy (a transpose of the letters and back), the elementwise product, a
 * contraction summing two axes, the reduce route and a diagonal, each against the naive
 * evaluator in every dtype. Layout 3 (every stride doubled) would address 2^64 elements. */
static void einsum_rank_64_runs_through_every_route(void) {
  TH_CHECK(TL_MAX_RANK >= 64);
  char letters[53], reversed[53], shape[64 * 2 + 1], shapes[5][2 * (64 * 2 + 1) + 8];
  for (int k = 0; k < 52; k++) letters[k] = (char)(k < 26 ? 'A' + k : 'a' + k - 26);
  letters[52] = '\0';
  for (int k = 0; k < 52; k++) reversed[k] = letters[51 - k];
  reversed[52] = '\0';
  size_t at = 0;
  for (int k = 0; k < 64; k++) {
    at += (size_t)snprintf(shape + at, sizeof shape - at, "%s%c", k ? "x" : "",
                           k % 5 == 2 ? '2' : '1');
  }
  /* extent 2 on axes 2, 7, 12, ...: letters 'A' (axis 12) and 'F' (axis 17) among them */
  char no_af[51], diagonal[53], shape_diag[64 * 2 + 1];
  for (int k = 0, m = 0; k < 52; k++) {
    if (k != 0 && k != 5) no_af[m++] = letters[k];
  }
  no_af[50] = '\0';
  memcpy(diagonal, letters, sizeof letters);
  diagonal[51] = 'A'; /* axis 63 repeats 'A': a diagonal */
  memcpy(shape_diag, shape, sizeof shape);
  shape_diag[strlen(shape_diag) - 1] = '2';
  char specs[5][256];
  snprintf(specs[0], sizeof specs[0], "...%s->%s...", letters, reversed);
  snprintf(specs[1], sizeof specs[1], "...%s,...%s->...%s", letters, letters, reversed);
  snprintf(specs[2], sizeof specs[2], "...%s,AF->...%s", letters, no_af);
  snprintf(specs[3], sizeof specs[3], "...%s->%.40s", letters, letters + 12);
  snprintf(specs[4], sizeof specs[4], "...%s->...%.51s", diagonal, letters);
  snprintf(shapes[0], sizeof shapes[0], "%s", shape);
  snprintf(shapes[1], sizeof shapes[1], "%s,%s", shape, shape);
  snprintf(shapes[2], sizeof shapes[2], "%s,2x2", shape);
  snprintf(shapes[3], sizeof shapes[3], "%s", shape);
  snprintf(shapes[4], sizeof shapes[4], "%s", shape_diag);
  th_held h;
  th_held_open(&h, 2);
  int failures = 0;
  for (int c = 0; c < 5; c++) {
    spec_case rank_case = {specs[c], shapes[c]};
    for (int dtype = 0; dtype < TL_DTYPE_COUNT; dtype++) {
      for (int layout = 0; layout < 3; layout++) {
        failures += !run_case(h.exec, &rank_case, (tl_dtype)dtype, layout, layout == 1,
                              TL_EINSUM_PATH_AUTO);
      }
    }
  }
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void einsum_bad_input_table_fails_typed_and_writes_nothing(void) {
  TH_CHECK(BAD_COUNT >= 30);
  th_held h;
  th_held_open(&h, 1);
  int failures = 0;
  for (size_t c = 0; c < BAD_COUNT; c++) failures += !run_bad(h.exec, &bad_table[c]);
  /* The session surface still works after all that. */
  failures += !run_case(h.exec, &spec_table[0], TL_F64, 0, 0, TL_EINSUM_PATH_AUTO);
  TH_CHECK(failures == 0);
  th_held_close(&h);
}

static void einsum_path_rejects_bad_arguments(void) {
  int ranks[13];
  int64_t shape[1] = {2};
  const int64_t *shapes[13];
  for (int i = 0; i < 13; i++) {
    ranks[i] = 1;
    shapes[i] = shape;
  }
  tl_einsum_path_info info;
  TH_CHECK_STATUS(tl_einsum_path(TL_EINSUM_PATH_OPTIMAL, "a,a,a,a,a,a,a,a,a,a,a,a,a->a", 13, ranks,
                                 shapes, &info),
                  TL_E_INVALID);
  TH_CHECK_OK(tl_einsum_path(TL_EINSUM_PATH_AUTO, "a,a,a,a,a,a,a,a,a,a,a,a,a->a", 13, ranks, shapes,
                             &info));
  TH_CHECK(info.chosen == TL_EINSUM_PATH_GREEDY && info.optimal_flops < 0);
  TH_CHECK_STATUS(tl_einsum_path(TL_EINSUM_PATH_AUTO, NULL, 1, ranks, shapes, &info), TL_E_INVALID);
  TH_CHECK_STATUS(tl_einsum_path(TL_EINSUM_PATH_AUTO, "a->a", 1, ranks, shapes, NULL),
                  TL_E_INVALID);
  ranks[0] = TL_MAX_RANK + 1;
  TH_CHECK_STATUS(tl_einsum_path(TL_EINSUM_PATH_AUTO, "a->a", 1, ranks, shapes, &info),
                  TL_E_INVALID);
}

TH_TEST_MAIN(TH_CASE(einsum_spec_table_matches_naive_evaluation),
             TH_CASE(einsum_fresh_form_and_every_path_kind_match_naive),
             TH_CASE(einsum_chosen_path_never_costs_more_than_greedy),
             TH_CASE(einsum_exact_path_matches_brute_force_on_random_networks),
             TH_CASE(einsum_repeated_into_makes_no_heap_allocation),
             TH_CASE(einsum_intermediates_follow_operand_memory_order),
             TH_CASE(einsum_intermediates_keep_batch_labels_slowest),
             TH_CASE(einsum_scratch_holds_only_live_intermediates),
             TH_CASE(einsum_rank_64_runs_through_every_route),
             TH_CASE(einsum_bad_input_table_fails_typed_and_writes_nothing),
             TH_CASE(einsum_path_rejects_bad_arguments))
