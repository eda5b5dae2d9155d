/* src/kernels/contract.c: binary contraction with batch axes, on GEMM.
 *
 * A label in a, b and c is a batch axis; in a and b only, contracted (K); in a and c, a
 * row of the GEMM (M); in b and c, a column (N). Each group is ordered (M and N by c's
 * strides, K by a's, batch by c's) and merged into one GEMM dimension when the operand's
 * strides allow it: then the operand is handed to the provider in place. Only an operand
 * whose strides do not fit (a group that is not contiguous in that order, a negative or
 * zero stride, a layout the provider rejects) is permuted into scratch first, and a c that
 * does not fit is computed into scratch and added in afterwards. Dots whose summed labels
 * lie in different orders in a and b are the exception: the summed labels but one become
 * batch labels of a scratch result, which is then summed (contract_promoted). A
 * product whose rows are not one stride in a (ajb,j->ab, ajb,jk->akb) makes its slowest
 * rows batch labels that b lacks instead of copying a (rows_in_batch). Broadcast operands
 * are not copied either: a label of c that every operand holding it walks with stride 0 is
 * computed at its first index and copied along (contract_constant), and a batch label may
 * have stride 0 in a or b.
 *
 * Invariant: every check happens before anything is written to c; scratch comes from the
 * surface's arena (no heap allocation once the arena has grown). */
#include <stddef.h>
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

#define TL__LABEL_LIMIT 256

enum { OP_A = 0, OP_B = 1, OP_C = 2 };

typedef struct group {
  int count;
  int labels[TL_MAX_RANK]; /* labels of extent > 1, in the chosen order */
} group;

typedef struct contraction {
  const tl_tensor *t[3];
  const int *labels[3];
  group m, n, k, batch;
  int64_t extent_m, extent_n, extent_k, batches;
} contraction;

static int find_label(const int *labels, int rank, int label) {
  for (int i = 0; i < rank; i++)
    if (labels[i] == label) return i;
  return -1;
}

static tl_status check_labels(const tl_tensor *t, const int *labels, const char *name) {
  if (t->rank > 0 && labels == NULL) return tl__fail(TL_E_INVALID, "%s_labels is NULL", name);
  for (int i = 0; i < t->rank; i++) {
    if (labels[i] < 0 || labels[i] >= TL__LABEL_LIMIT)
      return tl__fail(TL_E_INVALID, "%s_labels[%d] = %d outside [0, %d)", name, i, labels[i],
                      TL__LABEL_LIMIT);
    for (int j = 0; j < i; j++) {
      if (labels[j] == labels[i])
        return tl__fail(TL_E_INVALID,
                        "%s_labels[%d] and [%d] are both %d (a label appears at most once per "
                        "operand; take diagonals with einsum)",
                        name, j, i, labels[i]);
    }
  }
  return TL_OK;
}

/* Append label to g in the order of operand `by`'s strides (insertion). */
static void group_add(contraction *x, group *g, int label, int by) {
  const tl_tensor *t = x->t[by];
  int pos_new = find_label(x->labels[by], t->rank, label);
  int64_t s_new = tl__abs64(t->strides[pos_new]);
  int at = g->count;
  while (at > 0) {
    int pos = find_label(x->labels[by], t->rank, g->labels[at - 1]);
    if (tl__abs64(t->strides[pos]) <= s_new) break;
    g->labels[at] = g->labels[at - 1];
    at--;
  }
  g->labels[at] = label;
  g->count++;
}

/* acc * e for the group extents: the true product, or INT64_MAX where it passes int64. A
 * product of a validated tensor's extents fits (its element count does) unless another of
 * its extents is 0; then the operand is empty and the saturated value is never used for
 * work: an empty c returns before any, and an empty k is 0 once its zero extent is in. */
static int64_t extent_mul(int64_t acc, int64_t e) {
  int64_t product;
  return tl__i64_mul(acc, e, &product) ? product : INT64_MAX;
}

static tl_status classify(contraction *x) {
  const tl_tensor *a = x->t[OP_A], *b = x->t[OP_B], *c = x->t[OP_C];
  const int *al = x->labels[OP_A], *bl = x->labels[OP_B], *cl = x->labels[OP_C];
  x->extent_m = x->extent_n = x->extent_k = x->batches = 1;
  for (int i = 0; i < c->rank; i++) {
    int pa = find_label(al, a->rank, cl[i]), pb = find_label(bl, b->rank, cl[i]);
    if (pa < 0 && pb < 0)
      return tl__fail(TL_E_INVALID, "c_labels[%d] = %d is in neither a nor b", i, cl[i]);
    int64_t e = c->shape[i];
    if (pa >= 0 && a->shape[pa] != e)
      return tl__fail(TL_E_SHAPE, "label %d has extent %lld in a (axis %d) but %lld in c (axis %d)",
                      cl[i], (long long)a->shape[pa], pa, (long long)e, i);
    if (pb >= 0 && b->shape[pb] != e)
      return tl__fail(TL_E_SHAPE, "label %d has extent %lld in b (axis %d) but %lld in c (axis %d)",
                      cl[i], (long long)b->shape[pb], pb, (long long)e, i);
    if (e == 1) continue;
    if (pa >= 0 && pb >= 0) {
      group_add(x, &x->batch, cl[i], OP_C);
      x->batches = extent_mul(x->batches, e);
    } else if (pa >= 0) {
      group_add(x, &x->m, cl[i], OP_C);
      x->extent_m = extent_mul(x->extent_m, e);
    } else {
      group_add(x, &x->n, cl[i], OP_C);
      x->extent_n = extent_mul(x->extent_n, e);
    }
  }
  for (int i = 0; i < a->rank; i++) {
    if (find_label(cl, c->rank, al[i]) >= 0) continue;
    int pb = find_label(bl, b->rank, al[i]);
    if (pb < 0)
      return tl__fail(TL_E_INVALID,
                      "a_labels[%d] = %d is in neither b nor c (sum that axis out first)", i,
                      al[i]);
    if (b->shape[pb] != a->shape[i])
      return tl__fail(TL_E_SHAPE,
                      "contracted label %d has extent %lld in a (axis %d) but %lld in b (axis %d)",
                      al[i], (long long)a->shape[i], i, (long long)b->shape[pb], pb);
    x->extent_k = extent_mul(x->extent_k, a->shape[i]);
    if (a->shape[i] > 1) group_add(x, &x->k, al[i], OP_A);
  }
  for (int i = 0; i < b->rank; i++) {
    if (find_label(cl, c->rank, bl[i]) >= 0 || find_label(al, a->rank, bl[i]) >= 0) continue;
    return tl__fail(TL_E_INVALID,
                    "b_labels[%d] = %d is in neither a nor c (sum that axis out first)", i, bl[i]);
  }
  return TL_OK;
}

/* Stride of group g in operand op when its axes are contiguous in g's order (1 for an
 * empty group); 0 when they are not, or a stride is not positive. */
static int64_t group_stride(const contraction *x, const group *g, int op) {
  if (g->count == 0) return 1;
  const tl_tensor *t = x->t[op];
  int64_t first = 0, expect = 0;
  for (int i = 0; i < g->count; i++) {
    int pos = find_label(x->labels[op], t->rank, g->labels[i]);
    int64_t s = t->strides[pos];
    if (s <= 0) return 0;
    if (i == 0)
      first = s;
    else if (s != expect)
      return 0;
    /* Past int64 no next stride can equal it (the group is then not contiguous). */
    if (!tl__i64_mul(s, t->shape[pos], &expect)) expect = 0;
  }
  return first;
}

/* Copy operand op into a dense column-major scratch tensor whose axes are the groups
 * g0, g1, batch in order; *copy describes it with op's own labels (so group_stride and
 * the batch strides read it the same way). */
static tl_status pack_operand(tl_exec *exec, int team, contraction *x, int op, const group *g0,
                              const group *g1, tl_tensor *copy, int *copy_labels) {
  const tl_tensor *t = x->t[op];
  const group *groups[3] = {g0, g1, &x->batch};
  tl_tensor src;
  memset(&src, 0, sizeof src);
  src.dtype = t->dtype;
  src.data = t->data;
  src.offset = t->offset;
  int r = 0;
  for (int gi = 0; gi < 3; gi++) {
    for (int i = 0; i < groups[gi]->count; i++) {
      int pos = find_label(x->labels[op], t->rank, groups[gi]->labels[i]);
      src.shape[r] = t->shape[pos];
      src.strides[r] = t->strides[pos];
      copy_labels[r] = groups[gi]->labels[i];
      r++;
    }
  }
  src.rank = r;
  int64_t count = tl_tensor_numel(&src);
  void *buffer;
  size_t bytes;
  /* A broadcast operand (stride 0) has up to INT64_MAX elements over little memory: its
   * dense copy's bytes can pass SIZE_MAX (issue 28). */
  if (!tl__size_mul((size_t)count, tl_dtype_size(t->dtype), &bytes))
    return tl__fail(TL_E_SCRATCH_LIMIT,
                    "a dense copy of an operand of %lld elements of %zu bytes would be more than "
                    "SIZE_MAX bytes",
                    (long long)count, tl_dtype_size(t->dtype));
  tl_status status = tl__exec_scratch(exec, bytes ? bytes : 64, 64, &buffer);
  if (status != TL_OK) return status;
  *copy = src;
  copy->data = buffer;
  copy->offset = 0;
  tl_strides_col_major(r, src.shape, copy->strides);
  return tl__copy_execute(exec, team, copy, &src);
}

static int operand_fits(const contraction *x, int op, const group *g0, const group *g1,
                        int64_t rows, int64_t cols, int64_t *rs, int64_t *cs) {
  int64_t s0 = group_stride(x, g0, op), s1 = group_stride(x, g1, op);
  if (s0 == 0 || s1 == 0) return 0;
  /* Batch axes must not have negative strides either (pointer walk stays simple). A zero
   * stride in a or b (a broadcast view) is walked as it lies: every batch reads the same
   * elements, where a dense copy could be larger than memory. */
  for (int i = 0; i < x->batch.count; i++) {
    int pos = find_label(x->labels[op], x->t[op]->rank, x->batch.labels[i]);
    if (pos < 0) continue; /* absent: stride 0 (rows_in_batch) */
    const int64_t s = x->t[op]->strides[pos];
    if (s < 0 || (s == 0 && op == OP_C)) return 0;
  }
  int64_t r = s0, c = s1;
  if (rows <= 1) r = 1;
  if (cols <= 1) c = rows > 1 ? rows : 1;
  if (rows <= 1 && cols > 1 && s1 == 1) r = 1;
  /* the provider's stride rules (see gemm.c) */
  if (rows > 1 && cols > 1) {
    if (r == 1 && c == 1) return 0;
    if (r == 1 && c < rows) return 0;
    if (c == 1 && r < cols) return 0;
    if (r != 1 && c != 1 && ((r > c && r < c * cols) || (c >= r && c < r * rows))) return 0;
  }
  *rs = r;
  *cs = c;
  return 1;
}

/* A column-major scratch tensor for c with its axes in GEMM order (m, n, batch), its
 * labels in c_tmp_labels. */
static tl_status scratch_c(tl_exec *exec, const contraction *x, tl_tensor *c_tmp,
                           int *c_tmp_labels) {
  const tl_tensor *t = x->t[OP_C];
  memset(c_tmp, 0, sizeof *c_tmp);
  c_tmp->dtype = t->dtype;
  const group *groups[3] = {&x->m, &x->n, &x->batch};
  int r = 0;
  for (int gi = 0; gi < 3; gi++) {
    for (int i = 0; i < groups[gi]->count; i++) {
      int pos = find_label(x->labels[OP_C], t->rank, groups[gi]->labels[i]);
      c_tmp->shape[r] = t->shape[pos];
      c_tmp_labels[r] = groups[gi]->labels[i];
      r++;
    }
  }
  c_tmp->rank = r;
  tl_strides_col_major(r, c_tmp->shape, c_tmp->strides);
  size_t bytes;
  /* Bounded (c is an output that maps no two indices to one element, so its bytes lie in
   * its span), checked all the same. */
  if (!tl__size_mul((size_t)tl_tensor_numel(c_tmp), tl_dtype_size(t->dtype), &bytes))
    return tl__fail(TL_E_SCRATCH_LIMIT,
                    "a dense copy of c of %lld elements of %zu bytes would be more than SIZE_MAX "
                    "bytes",
                    (long long)tl_tensor_numel(c_tmp), tl_dtype_size(t->dtype));
  return tl__exec_scratch(exec, bytes ? bytes : 64, 64, &c_tmp->data);
}

/* ---- large operands packed block by block ------------------------------------------------
 * When a's rows (M) are not contiguous in c's order (a transposing contraction such as the
 * last step of a tensor-network permutation, whose 2^18 rows of a land bit-reversed in c),
 * a was permuted whole into scratch and then multiplied: a read, written and read again
 * besides c's write. For a large a the rows are instead taken block by block: a block spans
 * c's first M labels (the c-fast rows: one strided run of c) and, when a's k elements are
 * one contiguous run, the M labels that continue that run in a (the a-fast labels, up to
 * BLOCK_RUN_BYTES: whole cache lines of a), so both a's reads and c's writes stay dense (a
 * blocked transpose). Each block is gathered into a small scratch slot, k fastest, and each
 * a-fast index is one GEMM of the c-fast rows straight into c. a is read once and c written
 * once, and the packed block stays in cache. When B is tiny (the permutation network's
 * 4 x 3), each run's GEMM is gemm_tiny_nk.c's rows rather than a provider call: a c128 call
 * there went through BLIS's 1m packing 1024 times per product. Blocks are independent, so a
 * team shares them out; each block's GEMMs are the same calls on any thread, so the bits do
 * not depend on the team. */
#define BLOCK_MIN_BYTES ((int64_t)2 << 20) /* a's size from which packing goes by blocks */
#define BLOCK_BYTES ((int64_t)256 << 10)   /* a's share of one block */
#define BLOCK_RUN_BYTES ((int64_t)1024)    /* a's contiguous run per gathered c-fast row */
/* With a tiny B (n and k of a few elements: tl__gemm_tiny_nk, no call overhead per run) a
 * block takes a quarter of that: a quarter of the c-fast rows, so each run's rows of c are
 * still whole kilobytes while the packed block stays in the first cache levels (one probe on
 * the loaded 2-core machine: f64 permutation_rank19 about 15% less CPU time than at 256 KiB;
 * bigger runs no better). */
#define TINY_BLOCK_BYTES ((int64_t)64 << 10)

typedef struct blocked_job {
  tl__gemm_batch g; /* one GEMM: m = the c-fast rows; a and c set per call */
  tl_tensor src;    /* the general gather (row_at NULL): a's block (K, then c-fast labels) */
  tl_tensor dst;    /* and its packed form (data set per slot) */
  int n_outer;
  int64_t outer_shape[TL_MAX_RANK], outer_a[TL_MAX_RANK], outer_c[TL_MAX_RANK];
  int64_t runs;          /* GEMMs per block: the a-fast labels' product */
  const int64_t *row_at; /* per c-fast row, a's byte offset, when k is one run; else NULL */
  const int64_t *run_c;  /* per a-fast index, c's element offset */
  int64_t row_words;     /* 8-byte words of one row of a (its k elements), with row_at */
  int tiny;              /* 1: each run's GEMM by tl__gemm_tiny_nk (B of a few elements) */
  int direct;            /* 1: tiny, and its rows read a where it lies (tl__gemm_tiny_nk_rows) */
  int stream;            /* 1: direct rows written with streaming stores (a large c) */
  char *slots;
  size_t slot_bytes, pack_offset, pack_bytes;
} blocked_job;

#define GATHER_AHEAD 8

/* The block's rows of a into dst, row (i, r) at dst row r * rows + i: for each c-fast row
 * i, `runs` consecutive rows of a (its a-fast run) of `words` 8-byte words each. */
static void gather_rows(int64_t rows, int64_t runs, const int64_t *row_at, int64_t words,
                        const char *a, char *dst) {
  const int64_t row_bytes = 8 * words, run_bytes = runs * row_bytes;
  for (int64_t i = 0; i < rows; i++) {
    /* The runs are scattered over a (bit-reversed rows: a new page each), too far apart for
     * the hardware prefetchers: ask for the one GATHER_AHEAD rows on. */
    if (i + GATHER_AHEAD < rows) {
      tl__prefetch_span(a + row_at[i + GATHER_AHEAD], run_bytes, 0);
    }
    const char *in = a + row_at[i];
    for (int64_t r = 0; r < runs; r++) {
      char *out = dst + (r * rows + i) * row_bytes;
      for (int64_t w = 0; w < words; w++) {
        uint64_t v; /* word copies: a's rows need not be 8-byte aligned */
        memcpy(&v, in + 8 * w, 8);
        memcpy(out + 8 * w, &v, 8);
      }
      in += row_bytes;
    }
  }
}

static void blocked_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const blocked_job *j = arg;
  const tl__gemm_batch *g = &j->g;
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  char *slot = j->slots + (size_t)(worker_index + 1) * j->slot_bytes;
  void *pack = j->pack_bytes > 0 ? slot + j->pack_offset : NULL;
  for (size_t item = begin; item < end; item++) {
    int64_t rem = (int64_t)item, oa = 0, oc = 0;
    for (int i = 0; i < j->n_outer; i++) {
      int64_t idx = rem % j->outer_shape[i];
      rem /= j->outer_shape[i];
      oa += idx * j->outer_a[i];
      oc += idx * j->outer_c[i];
    }
    if (j->direct) {
      tl__gemm_tiny_nk_rows(g->dtype, g->m, j->runs, g->n, g->k,
                            (const char *)j->src.data + (j->src.offset + oa) * es, j->row_at, g->b,
                            g->rsb, g->csb, g->c + oc * es, g->rsc, j->run_c, j->stream);
      continue;
    }
    if (j->row_at != NULL) {
      gather_rows(g->m, j->runs, j->row_at, j->row_words,
                  (const char *)j->src.data + (j->src.offset + oa) * es, slot);
    } else {
      tl_tensor src = j->src, dst = j->dst;
      src.offset += oa;
      dst.data = slot;
      tl__permute_plan plan;
      tl__permute_plan_make(&plan, &dst, &src);
      tl__permute_run(&plan, 0, plan.blocks);
    }
    for (int64_t r = 0; r < j->runs; r++) {
      const char *a = slot + r * g->m * g->k * es;
      char *c = g->c + (oc + j->run_c[r]) * es;
      if (j->tiny) {
        tl__gemm_tiny_nk(g->dtype, g->m, g->n, g->k, g->alpha, a, g->k, g->b, g->rsb, g->csb,
                         g->beta, c, g->rsc, g->csc);
        continue;
      }
      if (tl__gemm_thin(g->dtype, g->m, g->n, g->k, g->alpha, a, g->rsa, g->csa, g->b, g->rsb,
                        g->csb, g->beta, c, g->rsc, g->csc))
        continue;
      tl__gemm_serial(g->dtype, g->m, g->n, g->k, g->alpha, a, g->rsa, g->csa, g->b, g->rsb, g->csb,
                      g->beta, c, g->rsc, g->csc, pack);
    }
  }
}

/* Make b the operand that fits and a the large one that does not (swapping a and b, and M
 * and N with them: c = a b is c^T = b^T a^T), and say whether the blocked route applies:
 * no batch axes, a at least BLOCK_MIN_BYTES and not in GEMM form, b and c in GEMM form,
 * and M of at least two labels so that there is something to block over. */
static int blocked_applies(contraction *x) {
  if (x->batch.count != 0) return 0;
  int64_t rs, cs;
  int fits_a = operand_fits(x, OP_A, &x->m, &x->k, x->extent_m, x->extent_k, &rs, &cs);
  int fits_b = operand_fits(x, OP_B, &x->k, &x->n, x->extent_k, x->extent_n, &rs, &cs);
  if (fits_a == fits_b) return 0;
  if (fits_a) {
    const tl_tensor *t = x->t[OP_A];
    x->t[OP_A] = x->t[OP_B];
    x->t[OP_B] = t;
    const int *l = x->labels[OP_A];
    x->labels[OP_A] = x->labels[OP_B];
    x->labels[OP_B] = l;
    group gm = x->m;
    x->m = x->n;
    x->n = gm;
    int64_t e = x->extent_m;
    x->extent_m = x->extent_n;
    x->extent_n = e;
  }
  int64_t es = (int64_t)tl_dtype_size(x->t[OP_C]->dtype);
  if (x->m.count < 2 || tl__i64_mul3_sat(x->extent_m, x->extent_k, es) < BLOCK_MIN_BYTES) return 0;
  return operand_fits(x, OP_B, &x->k, &x->n, x->extent_k, x->extent_n, &rs, &cs) &&
         operand_fits(x, OP_C, &x->m, &x->n, x->extent_m, x->extent_n, &rs, &cs);
}

/* Offsets of every index of `count` axes (first fastest) into table: sum of idx * stride,
 * times scale. */
static void offsets(int count, const int64_t *shape, const int64_t *stride, int64_t scale,
                    int64_t n, int64_t *table) {
  int64_t idx[TL_MAX_RANK] = {0}, at = 0;
  for (int64_t e = 0; e < n; e++) {
    table[e] = at * scale;
    for (int ax = 0; ax < count; ax++) {
      if (++idx[ax] < shape[ax]) {
        at += stride[ax];
        break;
      }
      /* Back to index 0 by (extent - 1) strides: a step past the last index can leave int64
       * on a span wider than 2^62 (as in loop.c's odometer). */
      at -= stride[ax] * (shape[ax] - 1);
      idx[ax] = 0;
    }
  }
}

/* The GEMM of one block: the c-fast rows x n, k; a packed row-major (rs = k, cs = 1). */
static void blocked_gemm(contraction *x, tl_scalar alpha, tl_scalar beta, int64_t rows,
                         tl__gemm_batch *g) {
  const tl_tensor *b = x->t[OP_B], *c = x->t[OP_C];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  memset(g, 0, offsetof(tl__gemm_batch, batch_shape));
  g->dtype = c->dtype;
  g->m = rows;
  g->n = x->extent_n;
  g->k = x->extent_k;
  g->alpha = alpha;
  g->beta = beta;
  g->batches = 1;
  g->rsa = x->extent_k > 1 ? x->extent_k : 1;
  g->csa = x->extent_k > 1 ? 1 : rows;
  int64_t rs, cs;
  (void)operand_fits(x, OP_B, &x->k, &x->n, x->extent_k, x->extent_n, &rs, &cs);
  g->rsb = rs;
  g->csb = cs;
  (void)operand_fits(x, OP_C, &x->m, &x->n, x->extent_m, x->extent_n, &rs, &cs);
  g->rsc = rs;
  g->csc = cs;
  g->b = (const char *)b->data + b->offset * es;
  g->c = (char *)c->data + c->offset * es;
}

/* The general gather's tensors: a's block (K, then the c-fast labels) and its packed form,
 * K fastest. */
static void blocked_views(const contraction *x, int n_c_fast, const int *pos_a, blocked_job *jp) {
  const tl_tensor *a = x->t[OP_A];
  memset(&jp->src, 0, sizeof jp->src);
  jp->src.dtype = a->dtype;
  jp->src.data = a->data;
  jp->src.offset = a->offset;
  jp->dst = jp->src;
  jp->dst.offset = 0;
  int r = 0;
  int64_t stride = 1;
  for (int i = 0; i < x->k.count; i++) {
    int pos = find_label(x->labels[OP_A], a->rank, x->k.labels[i]);
    jp->src.shape[r] = jp->dst.shape[r] = a->shape[pos];
    jp->src.strides[r] = a->strides[pos];
    jp->dst.strides[r] = stride;
    stride *= a->shape[pos];
    r++;
  }
  for (int i = 0; i < n_c_fast; i++) {
    jp->src.shape[r] = jp->dst.shape[r] = a->shape[pos_a[i]];
    jp->src.strides[r] = a->strides[pos_a[i]];
    jp->dst.strides[r] = stride;
    stride *= a->shape[pos_a[i]];
    r++;
  }
  jp->src.rank = jp->dst.rank = r;
}

/* 1 when B is tiny: each run's GEMM is tl__gemm_tiny_nk's. */
static int tiny_b(const contraction *x) {
  return tl__gemm_tiny_nk_fits(x->t[OP_C]->dtype, x->extent_n, x->extent_k);
}

/* a's bytes in one block. */
static int64_t block_limit(const contraction *x) {
  return tiny_b(x) ? TINY_BLOCK_BYTES : BLOCK_BYTES;
}

/* The block's tables, in scratch at `table`: c's offset of each a-fast index (run_c) and,
 * when k is one run of whole words, a's byte offset of each c-fast row (row_at). */
static void blocked_tables(const contraction *x, int n_a_fast, const int *a_fast, const int *pos_c,
                           int n_c_fast, int by_rows, int64_t *table, blocked_job *j) {
  const tl_tensor *c = x->t[OP_C];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  int64_t shape[TL_MAX_RANK], strides[TL_MAX_RANK];
  for (int i = 0; i < n_a_fast; i++) {
    shape[i] = c->shape[pos_c[a_fast[i]]];
    strides[i] = c->strides[pos_c[a_fast[i]]];
  }
  offsets(n_a_fast, shape, strides, 1, j->runs, table);
  j->run_c = table;
  if (by_rows) {
    offsets(n_c_fast, j->src.shape + x->k.count, j->src.strides + x->k.count, es, j->g.m,
            table + j->runs);
    j->row_at = table + j->runs;
  }
}

static tl_status contract_blocked(tl_exec *exec, int team, tl_scalar alpha, contraction *x,
                                  tl_scalar beta) {
  const tl_tensor *a = x->t[OP_A], *c = x->t[OP_C];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  /* Sizes here are checked products (issue 28): c's extents can multiply to 2^61 elements
   * over a fake address, and a (broadcast along k) can have 2^63 elements over little memory,
   * so a block's bytes can pass int64. The tests below saturate, so such a block does not
   * fit; a block whose scratch cannot be counted sends the work to the general route, whose
   * whole-operand copy is sized with checked products too. */
  int64_t row_bytes;
  if (!tl__i64_mul(x->extent_k, es, &row_bytes)) return TL_E_UNAVAILABLE;
  int pos_a[TL_MAX_RANK] = {0}, pos_c[TL_MAX_RANK] = {0}; /* each M label's axis in a and in c */
  for (int i = 0; i < x->m.count; i++) {
    pos_a[i] = find_label(x->labels[OP_A], a->rank, x->m.labels[i]);
    pos_c[i] = find_label(x->labels[OP_C], c->rank, x->m.labels[i]);
  }
  /* k one contiguous run of whole 8-byte words: rows are gathered by a table of offsets. */
  const int by_rows = group_stride(x, &x->k, OP_A) == 1 && row_bytes % 8 == 0 && row_bytes <= 512;
  /* a-fast labels (by rows only): the M labels continuing k's run in a, never c's first. */
  int role[TL_MAX_RANK] = {0}; /* 0 outer, 1 c-fast, 2 a-fast */
  int a_fast[TL_MAX_RANK], n_a_fast = 0;
  int64_t runs = 1, expect = x->extent_k;
  while (by_rows) {
    int next = -1;
    for (int i = 1; i < x->m.count; i++) {
      if (role[i] == 0 && a->strides[pos_a[i]] == expect) next = i;
    }
    if (next < 0 || tl__i64_mul3_sat(runs, a->shape[pos_a[next]], row_bytes) > BLOCK_RUN_BYTES)
      break;
    role[next] = 2;
    a_fast[n_a_fast++] = next;
    runs *= a->shape[pos_a[next]];
    expect *= a->shape[pos_a[next]];
  }
  /* c-fast labels: c's first M labels, whole, up to an a-fast one or the block's bytes. */
  int n_c_fast = 0;
  int64_t rows = 1;
  while (n_c_fast < x->m.count && role[n_c_fast] == 0) {
    int64_t e = c->shape[pos_c[n_c_fast]];
    if (n_c_fast > 0 &&
        tl__i64_mul3_sat(tl__i64_mul3_sat(rows, e, runs), row_bytes, 1) > block_limit(x))
      break;
    role[n_c_fast] = 1;
    rows *= e;
    n_c_fast++;
  }
  blocked_job j;
  memset(&j, 0, offsetof(blocked_job, outer_shape));
  for (int i = 0; i < x->m.count; i++) {
    if (role[i] != 0) continue;
    j.outer_shape[j.n_outer] = c->shape[pos_c[i]];
    j.outer_a[j.n_outer] = a->strides[pos_a[i]];
    j.outer_c[j.n_outer] = c->strides[pos_c[i]];
    j.n_outer++;
  }
  if (j.n_outer == 0) return TL_E_UNAVAILABLE; /* one block: nothing gained */
  /* Scratch: one slot per thread that may run a block (the packed block, then the complex
   * kernel's packing scratch), then the row and run tables. c's first M label is taken
   * whole, so the block can be any size: every product checked. */
  const int parallel = team > 1;
  const size_t slots = parallel ? tl__exec_thread_slots(exec) : 1;
  const int64_t block_bytes = tl__i64_mul3_sat(rows, runs, row_bytes);
  size_t scratch_bytes, tables;
  if (block_bytes == INT64_MAX || !tl__size_align_up((size_t)block_bytes, 64, &j.pack_offset))
    return TL_E_UNAVAILABLE;
  j.tiny = tiny_b(x);
  j.pack_bytes = j.tiny ? 0 : tl__gemm_serial_pack_bytes(c->dtype, rows, x->extent_n, x->extent_k);
  if (!tl__size_add(j.pack_offset, j.pack_bytes, &j.slot_bytes) ||
      !tl__size_align_up(j.slot_bytes, 64, &j.slot_bytes) ||
      !tl__size_add((size_t)(by_rows ? rows : 0), (size_t)runs, &tables) ||
      !tl__size_mul(tables, sizeof(int64_t), &tables) ||
      !tl__size_mul(slots, j.slot_bytes, &scratch_bytes) ||
      !tl__size_add(scratch_bytes, tables, &scratch_bytes))
    return TL_E_UNAVAILABLE;
  j.runs = runs;
  j.row_at = NULL;
  j.run_c = NULL;
  j.row_words = row_bytes / 8;
  blocked_views(x, n_c_fast, pos_a, &j);
  blocked_gemm(x, alpha, beta, rows, &j.g);
  void *scratch;
  tl_status status = tl__exec_scratch(exec, scratch_bytes, 64, &scratch);
  if (status != TL_OK) return status;
  j.slots = scratch;
  blocked_tables(x, n_a_fast, a_fast, pos_c, n_c_fast, by_rows,
                 (int64_t *)(void *)((char *)scratch + slots * j.slot_bytes), &j);
  /* Where the tiny rows can read a in place, nothing is gathered: the packed copy was about
   * half of the f64 network step's time once the rows themselves took AVX2 (2026-12-05). */
  j.direct = j.tiny && by_rows && tl__gemm_tiny_nk_fast(c->dtype, j.g.n, alpha, beta, j.g.csc);
  /* The direct rows scatter C's rows over the whole of c (a bit reversal's rows lie MiBs
   * apart), and a cached store first reads each line in. Beyond one core's second-level
   * cache, f64 rows are streamed, which skips that read; c128 rows (48 bytes for n = 3,
   * six 8-byte streaming stores) were slower streamed. Figures in the commit message. */
  int64_t c_bytes;
  j.stream = j.direct && c->dtype == TL_F64 && tl__i64_mul(tl_tensor_numel(c), es, &c_bytes) &&
             c_bytes >= TL__STREAM_MIN_BYTES;
  int64_t blocks = x->extent_m / (rows * runs);
  return tl__exec_run_chunks(exec, parallel, (size_t)blocks, 1, blocked_chunk, &j,
                             "computing a contraction block by block");
}

/* A product whose rows are not one stride in a: einsum ajb,j->ab or ajb,jk->akb, the rows a
 * and b on either side of the summed j (an MPS tensor's physical leg). The general route
 * copies a whole, and the blocked route block by block, to make them one; instead the
 * slowest row labels (in c's order) become batch labels that b does not have (stride 0
 * there), as few as make a's remaining rows and k, and c's rows, fit: each entry is then a
 * product on a and c where they lie, and a is read once; batch labels the product already
 * has stay (map_einsum's item axis), so its entries are a single call's. Only when b and the
 * new a and c fit as they are. With N labels, only for entries of at least
 * ROWS_IN_BATCH_MIN_ROWS rows (a bit reversal's steps would cut entries of two rows, which
 * the blocked route's gathered blocks beat), and only where each entry runs one of
 * tenlane's own kernels: a provider's GEMM repacks B for every entry, which costs more than
 * the one copy of a it saves. */
#define ROWS_IN_BATCH_MIN_ROWS 16
static int rows_in_batch(contraction *x) {
  const int with_n = x->n.count != 0;
  if (x->m.count < 2) return 0;
  int64_t rsa, csa, rsb, csb, rsc, csc;
  if (operand_fits(x, OP_A, &x->m, &x->k, x->extent_m, x->extent_k, &rsa, &csa) ||
      !operand_fits(x, OP_B, &x->k, &x->n, x->extent_k, x->extent_n, &rsb, &csb))
    return 0;
  const tl_tensor *c = x->t[OP_C];
  for (int keep = x->m.count - 1; keep >= 1; keep--) {
    group rows = x->m, batch = x->batch;
    rows.count = keep;
    int64_t extent_rows = 1, batches = x->batches;
    for (int i = 0; i < x->m.count; i++) {
      const int64_t e = c->shape[find_label(x->labels[OP_C], c->rank, x->m.labels[i])];
      if (i < keep) {
        extent_rows *= e;
      } else {
        batch.labels[batch.count++] = x->m.labels[i];
        batches *= e;
      }
    }
    contraction y = *x;
    y.m = rows, y.batch = batch, y.extent_m = extent_rows, y.batches = batches;
    if (!operand_fits(&y, OP_A, &y.m, &y.k, y.extent_m, y.extent_k, &rsa, &csa) ||
        !operand_fits(&y, OP_C, &y.m, &y.n, y.extent_m, y.extent_n, &rsc, &csc))
      continue;
    if (with_n && (y.extent_m < ROWS_IN_BATCH_MIN_ROWS ||
                   tl__gemm_serial_kernel(c->dtype, y.extent_m, y.extent_n, y.extent_k, rsa, rsc,
                                          csb, csc) == TL__SERIAL_PROVIDER))
      return 0;
    *x = y;
    return 1;
  }
  return 0;
}

/* A batch label at unit stride in a, b and c (einsum ij,ij->j, acbd,acd->bd): the entries'
 * elements lie that label's extent apart, so each entry's dots read a few elements per cache
 * line; contract_vertical.c sums across the label instead, reading a and b along it. Only
 * for alpha 1 and beta 0 (einsum's steps), a label of at least VERTICAL_MIN_EXTENT, and a
 * product with at most one side of rows or columns (batched dots and matrix-vector
 * products: each element of the larger operand is read once; a batched GEMM with rows and
 * columns would read each many times). */
#define VERTICAL_MIN_EXTENT 8
static int vertical_fits(const contraction *x, tl_scalar alpha, tl_scalar beta, tl__vertical *v) {
  if (alpha.re != 1.0 || alpha.im != 0.0 || beta.re != 0.0 || beta.im != 0.0) return 0;
  if (x->k.count == 0 || x->batch.count == 0 || (x->m.count != 0 && x->n.count != 0)) return 0;
  const tl_tensor *a = x->t[OP_A], *b = x->t[OP_B], *c = x->t[OP_C];
  int f = -1;
  for (int i = 0; i < x->batch.count && f < 0; i++) {
    int pa = find_label(x->labels[OP_A], a->rank, x->batch.labels[i]);
    int pb = find_label(x->labels[OP_B], b->rank, x->batch.labels[i]);
    int pc = find_label(x->labels[OP_C], c->rank, x->batch.labels[i]);
    if (a->strides[pa] == 1 && b->strides[pb] == 1 && c->strides[pc] == 1 &&
        c->shape[pc] >= VERTICAL_MIN_EXTENT)
      f = i;
  }
  if (f < 0) return 0;
  memset(v, 0, offsetof(tl__vertical, sum_shape));
  v->dtype = c->dtype;
  v->sums = x->extent_k;
  for (int i = 0; i < x->k.count; i++) {
    int pa = find_label(x->labels[OP_A], a->rank, x->k.labels[i]);
    int pb = find_label(x->labels[OP_B], b->rank, x->k.labels[i]);
    v->sum_shape[i] = a->shape[pa];
    v->sum_a[i] = a->strides[pa];
    v->sum_b[i] = b->strides[pb];
  }
  v->sum_rank = x->k.count;
  v->outer_rank = v->inner_rank = 0;
  const int pf = find_label(x->labels[OP_C], c->rank, x->batch.labels[f]);
  v->f = c->shape[pf];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  /* The rows or columns (the labels one operand lacks) go inside the sum: the row of the
   * operand that lacks them is read once per summed index and block of them
   * (tl__vertical_run sizes the blocks). The other batch labels are outer. */
  const group *outer[3] = {&x->m, &x->n, &x->batch};
  for (int g = 0; g < 3; g++) {
    for (int i = 0; i < outer[g]->count; i++) {
      if (g == 2 && i == f) continue;
      const int label = outer[g]->labels[i];
      const int pa = find_label(x->labels[OP_A], a->rank, label);
      const int pb = find_label(x->labels[OP_B], b->rank, label);
      const int pc = find_label(x->labels[OP_C], c->rank, label);
      const int in = g < 2;
      const int r = in ? v->inner_rank++ : v->outer_rank++;
      (in ? v->inner_shape : v->outer_shape)[r] = c->shape[pc];
      (in ? v->inner_a : v->outer_a)[r] = pa >= 0 ? a->strides[pa] : 0;
      (in ? v->inner_b : v->outer_b)[r] = pb >= 0 ? b->strides[pb] : 0;
      (in ? v->inner_c : v->outer_c)[r] = c->strides[pc];
    }
  }
  v->a = (const char *)a->data + a->offset * es;
  v->b = (const char *)b->data + b->offset * es;
  v->c = (char *)c->data + c->offset * es;
  return 1;
}

static tl_status try_blocked(tl_exec *exec, int team, tl_scalar alpha, contraction *x,
                             tl_scalar beta) {
  return blocked_applies(x) ? contract_blocked(exec, team, alpha, x, beta) : TL_E_UNAVAILABLE;
}

/* ---- dots whose summed labels lie in different orders ------------------------------- */

/* A contraction of dots (no M or N label) over several summed labels that one operand holds
 * in another order than the other (tr(AB) is ab,ba->; abc,cba->b): a dot needs its summed
 * labels merged into one stride in both, so one operand would be permuted whole into
 * scratch. Instead the summed label densest in a stays summed and the others become batch
 * labels of a dense scratch c2, those labels fastest (densest in b first), then c's axes:
 * each entry of c2 is one strided dot, run side by side with its neighbours (gemm_thin.c's
 * groups), and c is the sum of its entries over those labels, in order, on the calling
 * thread, so the bits do not depend on the team. With beta == 0 only; and only while the
 * dot that stays is at least TL__PROMOTED_MIN_DOT long. */
#define TL__PROMOTED_MIN_DOT 16

static tl_status contract_run(tl_exec *exec, int team, tl_scalar alpha, contraction *x,
                              tl_scalar beta, const int *c_labels);

static int promoted_applies(const contraction *x, tl_scalar beta) {
  if (beta.re != 0.0 || beta.im != 0.0) return 0;
  if (x->m.count != 0 || x->n.count != 0 || x->k.count < 2) return 0;
  if (x->t[OP_C]->rank + x->k.count - 1 > TL_MAX_RANK) return 0;
  const tl_tensor *a = x->t[OP_A];
  if (a->shape[find_label(x->labels[OP_A], a->rank, x->k.labels[0])] < TL__PROMOTED_MIN_DOT)
    return 0;
  int64_t rs, cs;
  return !operand_fits(x, OP_A, &x->m, &x->k, 1, x->extent_k, &rs, &cs) ||
         !operand_fits(x, OP_B, &x->k, &x->n, x->extent_k, 1, &rs, &cs);
}

/* The sum, in order and in double, of `count` values of dtype at v: *re, and *im for a
 * complex dtype. */
static void sum_in_order(tl_dtype dtype, const void *v, int64_t count, double *re, double *im) {
  double r = 0.0, i = 0.0;
  if (dtype == TL_F64) {
    for (int64_t p = 0; p < count; p++) r += ((const double *)v)[p];
  } else if (dtype == TL_F32) {
    for (int64_t p = 0; p < count; p++) r += ((const float *)v)[p];
  } else if (dtype == TL_C128) {
    for (int64_t p = 0; p < count; p++)
      r += ((const double *)v)[2 * p], i += ((const double *)v)[2 * p + 1];
  } else {
    for (int64_t p = 0; p < count; p++)
      r += ((const float *)v)[2 * p], i += ((const float *)v)[2 * p + 1];
  }
  *re = r;
  *im = i;
}

/* c[e] = alpha * (sum of the `count` values at sums + e * count), over c's elements e in
 * column-major order; a real alpha scales each part of a complex sum alone. */
static void promoted_sum(const tl_tensor *c, tl_scalar alpha, const char *sums, int64_t count) {
  const int64_t es = (int64_t)tl_dtype_size(c->dtype), n = tl_tensor_numel(c);
  const int cplx = tl_dtype_is_complex(c->dtype);
  int64_t idx[TL_MAX_RANK] = {0}, at = 0;
  for (int64_t e = 0; e < n; e++) {
    double re, im;
    sum_in_order(c->dtype, sums + e * count * es, count, &re, &im);
    double out_re = alpha.re * re, out_im = alpha.re * im;
    if (cplx && alpha.im != 0.0) out_re -= alpha.im * im, out_im += alpha.im * re;
    char *o = (char *)c->data + (c->offset + at) * es;
    switch (c->dtype) {
      case TL_F64:
        *(double *)(void *)o = out_re;
        break;
      case TL_F32:
        *(float *)(void *)o = (float)out_re;
        break;
      case TL_C128:
        ((double *)(void *)o)[0] = out_re;
        ((double *)(void *)o)[1] = out_im;
        break;
      default:
        ((float *)(void *)o)[0] = (float)out_re;
        ((float *)(void *)o)[1] = (float)out_im;
        break;
    }
    for (int d = 0; d < c->rank; d++) { /* c's next element, column-major */
      at += c->strides[d];
      if (++idx[d] < c->shape[d]) break;
      at -= c->shape[d] * c->strides[d];
      idx[d] = 0;
    }
  }
}

static tl_status contract_promoted(tl_exec *exec, int team, tl_scalar alpha, contraction *x) {
  const tl_tensor *b = x->t[OP_B], *c = x->t[OP_C];
  /* the summed labels but the first (densest in a), densest in b first */
  group promoted;
  promoted.count = 0;
  for (int i = 1; i < x->k.count; i++) group_add(x, &promoted, x->k.labels[i], OP_B);
  const int count = promoted.count;
  int64_t extent[TL_MAX_RANK], entries = 1;
  for (int i = 0; i < count; i++) {
    extent[i] = b->shape[find_label(x->labels[OP_B], b->rank, promoted.labels[i])];
    entries *= extent[i]; /* at most a's element count */
  }
  tl_tensor c2;
  memset(&c2, 0, sizeof c2);
  int c2_labels[TL_MAX_RANK];
  c2.dtype = c->dtype;
  c2.rank = count + c->rank;
  for (int i = 0; i < count; i++) c2.shape[i] = extent[i], c2_labels[i] = promoted.labels[i];
  for (int i = 0; i < c->rank; i++)
    c2.shape[count + i] = c->shape[i], c2_labels[count + i] = x->labels[OP_C][i];
  tl_strides_col_major(c2.rank, c2.shape, c2.strides);
  size_t bytes = tl_dtype_size(c->dtype); /* at most a's bytes times c's element count */
  for (int i = 0; i < c2.rank; i++) bytes *= (size_t)c2.shape[i];
  tl_status status = tl__exec_scratch(exec, bytes, 64, &c2.data);
  if (status != TL_OK) return status;
  contraction x2;
  memset(&x2, 0, offsetof(contraction, m));
  x2.t[OP_A] = x->t[OP_A];
  x2.t[OP_B] = b;
  x2.t[OP_C] = &c2;
  x2.labels[OP_A] = x->labels[OP_A];
  x2.labels[OP_B] = x->labels[OP_B];
  x2.labels[OP_C] = c2_labels;
  x2.m.count = x2.n.count = x2.k.count = x2.batch.count = 0;
  if ((status = classify(&x2)) != TL_OK) return status;
  status = contract_run(exec, team, tl_scalar_real(1.0), &x2, tl_scalar_real(0.0), c2_labels);
  if (status != TL_OK) return status;
  promoted_sum(c, alpha, (const char *)c2.data, entries);
  return TL_OK;
}

/* g's batch axes: c's extents, each operand's strides (0 where an operand lacks the label:
 * rows_in_batch's batch labels are not in b). */
static void set_batch(const contraction *x, tl__gemm_batch *g) {
  g->batch_rank = x->batch.count;
  for (int i = 0; i < x->batch.count; i++) {
    const int label = x->batch.labels[i];
    for (int op = 0; op < 3; op++) {
      const int pos = find_label(x->labels[op], x->t[op]->rank, label);
      g->batch_strides[op][i] = pos >= 0 ? x->t[op]->strides[pos] : 0;
      if (op == OP_C) g->batch_shape[i] = x->t[op]->shape[pos];
    }
  }
}

static tl_status contract_run(tl_exec *exec, int team, tl_scalar alpha, contraction *x,
                              tl_scalar beta, const int *c_labels) {
  tl_status status;
  const tl_tensor *c = x->t[OP_C];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  if (tl_tensor_numel(c) == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the contraction started");
  const int beta_zero = beta.re == 0.0 && beta.im == 0.0;
  if (x->extent_k == 0) {
    /* empty contraction: c = beta c */
    const tl_tensor *ts[2] = {c, c};
    tl__loop loop;
    tl__loop_plan(&loop, beta_zero ? 1 : 2, ts);
    tl__ew_params params = {beta, beta};
    return tl__loop_execute(
        exec, team, &loop, beta_zero ? tl__ew_fill_kernel(c->dtype) : tl__ew_scale_kernel(c->dtype),
        &params);
  }
  tl__providers_init();
  tl__vertical vertical;
  if (vertical_fits(x, alpha, beta, &vertical)) return tl__vertical_run(exec, team, &vertical);
  /* The blocked route only where no entries of enough rows can be cut; it leaves a the
   * operand that does not fit (swapping a and b), so rows_in_batch is tried again after. */
  if (!rows_in_batch(x)) {
    if ((status = try_blocked(exec, team, alpha, x, beta)) != TL_E_UNAVAILABLE) return status;
    (void)rows_in_batch(x);
  }
  if (promoted_applies(x, beta)) return contract_promoted(exec, team, alpha, x);
  tl__gemm_batch g;
  /* Only the fields before the batch arrays: those are read up to batch_rank, which is set
   * below (the arrays are 2 KiB at TL_MAX_RANK 64, a tenth of a 2x2 contraction). */
  memset(&g, 0, offsetof(tl__gemm_batch, batch_shape));
  g.dtype = c->dtype;
  g.m = x->extent_m;
  g.n = x->extent_n;
  g.k = x->extent_k;
  g.alpha = alpha;
  g.beta = beta;
  g.batches = x->batches;
  /* a and b: in place when they fit, else packed. */
  tl_tensor packed[2];
  int packed_labels[2][TL_MAX_RANK];
  const group *rows_of[2] = {&x->m, &x->k}, *cols_of[2] = {&x->k, &x->n};
  int64_t extent_rows[2] = {g.m, g.k}, extent_cols[2] = {g.k, g.n};
  int64_t rs[3], cs[3];
  for (int op = 0; op < 2; op++) {
    if (!operand_fits(x, op, rows_of[op], cols_of[op], extent_rows[op], extent_cols[op], &rs[op],
                      &cs[op])) {
      status =
          pack_operand(exec, team, x, op, rows_of[op], cols_of[op], &packed[op], packed_labels[op]);
      if (status != TL_OK) return status;
      x->t[op] = &packed[op];
      x->labels[op] = packed_labels[op];
      if (!operand_fits(x, op, rows_of[op], cols_of[op], extent_rows[op], extent_cols[op], &rs[op],
                        &cs[op]))
        return tl__fail(TL_E_PROVIDER, "internal: a packed operand does not fit GEMM form");
    }
  }
  /* c: in place, or into scratch and added afterwards. */
  tl_tensor c_tmp;
  int c_tmp_labels[TL_MAX_RANK];
  int c_in_scratch = 0;
  if (!operand_fits(x, OP_C, &x->m, &x->n, g.m, g.n, &rs[2], &cs[2])) {
    if ((status = scratch_c(exec, x, &c_tmp, c_tmp_labels)) != TL_OK) return status;
    x->t[OP_C] = &c_tmp;
    x->labels[OP_C] = c_tmp_labels;
    c_in_scratch = 1;
    g.beta = tl_scalar_real(0.0);
    if (!operand_fits(x, OP_C, &x->m, &x->n, g.m, g.n, &rs[2], &cs[2]))
      return tl__fail(TL_E_PROVIDER, "internal: scratch c does not fit GEMM form");
  }
  g.rsa = rs[0];
  g.csa = cs[0];
  g.rsb = rs[1];
  g.csb = cs[1];
  g.rsc = rs[2];
  g.csc = cs[2];
  g.a = (const char *)x->t[OP_A]->data + x->t[OP_A]->offset * es;
  g.b = (const char *)x->t[OP_B]->data + x->t[OP_B]->offset * es;
  g.c = (char *)x->t[OP_C]->data + x->t[OP_C]->offset * es;
  set_batch(x, &g);
  if ((status = tl__gemm_batch_run(exec, team, &g)) != TL_OK) return status;
  if (!c_in_scratch) return TL_OK;
  /* c = tmp + beta c, with tmp seen in c's axis order (extent-1 axes: any stride). */
  tl_tensor tmp_view = *c;
  tmp_view.owned = NULL;
  tmp_view.data = c_tmp.data;
  tmp_view.offset = 0;
  for (int i = 0; i < c->rank; i++) {
    int pos = find_label(c_tmp_labels, c_tmp.rank, c_labels[i]);
    tmp_view.strides[i] = pos >= 0 ? c_tmp.strides[pos] : 0;
  }
  const tl_tensor *ts[3] = {c, &tmp_view, c};
  tl__loop loop;
  tl__loop_plan(&loop, beta_zero ? 2 : 3, ts);
  tl__ew_params params = {tl_scalar_real(1.0), beta};
  return tl__loop_execute(exec, team, &loop, tl__ew_axpby_kernel(c->dtype, beta_zero), &params);
}

/* ---- results constant along an axis -------------------------------------------------------
 * A label of c whose stride is 0 in every operand that holds it (a broadcast view: einsum
 * bi,i->b or bi,ij->bj with a = broadcast_to(x, (B, 4))) leaves c constant along that axis.
 * A GEMM cannot take a zero row stride, so the operand was copied dense first, B times its
 * memory (8 GiB for 2^27 rows of four c128). Instead the product runs with those axes cut to
 * their first index, and that slice is copied along them (contract_constant). Only with
 * beta == 0 (c's own values differ along the axis). */
static int constant_axes(const contraction *x, tl_scalar beta, int *along) {
  if (beta.re != 0.0 || beta.im != 0.0) return 0;
  const tl_tensor *c = x->t[OP_C];
  int n = 0;
  for (int i = 0; i < c->rank; i++) {
    if (c->shape[i] < 2) continue;
    int constant = 1;
    for (int op = 0; op < 2 && constant; op++) {
      const int pos = find_label(x->labels[op], x->t[op]->rank, x->labels[OP_C][i]);
      if (pos >= 0 && x->t[op]->strides[pos] != 0) constant = 0;
    }
    if (constant) along[n++] = i;
  }
  return n;
}

#define CONSTANT_SLICE_BYTES ((int64_t)64 << 20)
static tl_status contract_constant(tl_exec *exec, int team, tl_scalar alpha, contraction *x,
                                   const int *along, int n_along) {
  tl_tensor cut[3];
  for (int op = 0; op < 3; op++) cut[op] = *x->t[op];
  const int *c_labels = x->labels[OP_C];
  for (int i = 0; i < n_along; i++) {
    cut[OP_C].shape[along[i]] = 1;
    for (int op = 0; op < 2; op++) {
      const int pos = find_label(x->labels[op], cut[op].rank, c_labels[along[i]]);
      if (pos >= 0) cut[op].shape[pos] = 1;
    }
  }
  /* A slice of at most CONSTANT_SLICE_BYTES is computed into scratch and copied over all of
   * c in c's memory order: written where it lies, a slice across c's rows (ab,bc,cd->ad with
   * d broadcast) touched every page of a fresh c in one call that cannot be cancelled (4 GiB
   * of page clearing, seconds), where the copy goes in cancellable chunks. */
  const tl_tensor *c = x->t[OP_C];
  const int64_t es = (int64_t)tl_dtype_size(c->dtype);
  const int in_scratch = tl_tensor_numel(&cut[OP_C]) <= CONSTANT_SLICE_BYTES / es;
  tl_status status;
  if (in_scratch) {
    /* dense in c's own axis order, so the copy walks both in the same order */
    int order[TL_MAX_RANK];
    for (int i = 0; i < c->rank; i++) {
      int at = i;
      while (at > 0 && tl__abs64(c->strides[order[at - 1]]) > tl__abs64(c->strides[i])) {
        order[at] = order[at - 1];
        at--;
      }
      order[at] = i;
    }
    int64_t stride = 1;
    for (int i = 0; i < c->rank; i++) {
      cut[OP_C].strides[order[i]] = stride;
      stride *= cut[OP_C].shape[order[i]];
    }
    cut[OP_C].offset = 0;
    const size_t bytes = (size_t)(tl_tensor_numel(&cut[OP_C]) * es);
    if ((status = tl__exec_scratch(exec, bytes ? bytes : 64, 64, &cut[OP_C].data)) != TL_OK)
      return status;
  }
  contraction y;
  memset(&y, 0, offsetof(contraction, m));
  y.m.count = y.n.count = y.k.count = y.batch.count = 0;
  for (int op = 0; op < 3; op++) {
    y.t[op] = &cut[op];
    y.labels[op] = x->labels[op];
  }
  if ((status = classify(&y)) != TL_OK) return status;
  if ((status = contract_run(exec, team, alpha, &y, tl_scalar_real(0.0), c_labels)) != TL_OK)
    return status;
  if (in_scratch) {
    tl_tensor src = cut[OP_C];
    for (int i = 0; i < n_along; i++) {
      src.shape[along[i]] = c->shape[along[i]];
      src.strides[along[i]] = 0;
    }
    return tl__copy_execute(exec, team, c, &src);
  }
  /* c's first slice along each axis in turn fills the rest of that axis: the source is the
   * slice at index 0 read with stride 0, the destination indices 1 .. e - 1, so they never
   * share an element. */
  tl_tensor done = cut[OP_C];
  for (int i = 0; i < n_along; i++) {
    const int axis = along[i];
    tl_tensor src = done, dst = done;
    src.shape[axis] = dst.shape[axis] = c->shape[axis] - 1;
    src.strides[axis] = 0;
    dst.offset += c->strides[axis];
    if ((status = tl__copy_execute(exec, team, &dst, &src)) != TL_OK) return status;
    done.shape[axis] = c->shape[axis];
  }
  return TL_OK;
}

static tl_status contract_into_impl(tl_exec *exec, tl_scalar alpha, const tl_tensor *a,
                                    const int *a_labels, const tl_tensor *b, const int *b_labels,
                                    tl_scalar beta, tl_tensor *c, const int *c_labels) {
  tl_status status;
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return status;
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return status;
  if ((status = tl__check_output(c, "c")) != TL_OK) return status;
  if ((status = check_labels(a, a_labels, "a")) != TL_OK) return status;
  if ((status = check_labels(b, b_labels, "b")) != TL_OK) return status;
  if ((status = check_labels(c, c_labels, "c")) != TL_OK) return status;
  if (b->dtype != a->dtype)
    return tl__fail(TL_E_DTYPE, "b has dtype %s, a has %s", tl_dtype_name(b->dtype),
                    tl_dtype_name(a->dtype));
  if ((status = tl__check_dtype(c, "c", a->dtype)) != TL_OK) return status;
  if (!tl_dtype_is_complex(a->dtype) && (alpha.im != 0.0 || beta.im != 0.0))
    return tl__fail(TL_E_DTYPE, "alpha/beta have imaginary parts %g/%g but the dtype %s is real",
                    alpha.im, beta.im, tl_dtype_name(a->dtype));
  contraction x;
  /* The label arrays of the groups are read only up to their counts. */
  memset(&x, 0, offsetof(contraction, m));
  x.m.count = x.n.count = x.k.count = x.batch.count = 0;
  x.extent_m = x.extent_n = x.extent_k = x.batches = 0;
  x.t[OP_A] = a;
  x.t[OP_B] = b;
  x.t[OP_C] = c;
  x.labels[OP_A] = a_labels;
  x.labels[OP_B] = b_labels;
  x.labels[OP_C] = c_labels;
  if ((status = classify(&x)) != TL_OK) return status;
  if ((status = tl__check_no_overlap(c, "c", a, "a")) != TL_OK) return status;
  if ((status = tl__check_no_overlap(c, "c", b, "b")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  int along[TL_MAX_RANK];
  const int n_along = constant_axes(&x, beta, along);
  if (n_along == 0) return contract_run(exec, team, alpha, &x, beta, c_labels);
  return contract_constant(exec, team, alpha, &x, along, n_along);
}

tl_status tl_contract_into(tl_exec *exec, const int *c_labels, const tl_tensor *a,
                           const int *a_labels, const tl_tensor *b, const int *b_labels,
                           tl_tensor *c) {
  tl_status status = tl__exec_begin(exec, "tl_contract_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, contract_into_impl(exec, tl_scalar_real(1.0), a, a_labels, b, b_labels,
                                               tl_scalar_real(0.0), c, c_labels));
}

tl_status tl_contract_scaled_into(tl_exec *exec, tl_scalar alpha, tl_scalar beta,
                                  const int *c_labels, const tl_tensor *a, const int *a_labels,
                                  const tl_tensor *b, const int *b_labels, tl_tensor *c) {
  tl_status status = tl__exec_begin(exec, "tl_contract_scaled_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec,
                      contract_into_impl(exec, alpha, a, a_labels, b, b_labels, beta, c, c_labels));
}

tl_status tl_contract(tl_exec *exec, int c_rank, const int *c_labels, const tl_tensor *a,
                      const int *a_labels, const tl_tensor *b, const int *b_labels,
                      tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_contract");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "out is NULL"));
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return tl__exec_end(exec, status);
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return tl__exec_end(exec, status);
  if ((status = check_labels(a, a_labels, "a")) != TL_OK) return tl__exec_end(exec, status);
  if ((status = check_labels(b, b_labels, "b")) != TL_OK) return tl__exec_end(exec, status);
  if (c_rank < 0 || c_rank > TL_MAX_RANK)
    return tl__exec_end(exec,
                        tl__fail(TL_E_INVALID, "c_rank %d outside [0, %d]", c_rank, TL_MAX_RANK));
  if (c_rank > 0 && c_labels == NULL)
    return tl__exec_end(exec, tl__fail(TL_E_INVALID, "c_labels is NULL"));
  int64_t shape[TL_MAX_RANK];
  for (int i = 0; i < c_rank; i++) {
    int pa = find_label(a_labels, a->rank, c_labels[i]);
    int pb = find_label(b_labels, b->rank, c_labels[i]);
    if (pa < 0 && pb < 0)
      return tl__exec_end(
          exec, tl__fail(TL_E_INVALID, "c_labels[%d] = %d is in neither a nor b", i, c_labels[i]));
    shape[i] = pa >= 0 ? a->shape[pa] : b->shape[pb];
  }
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, a->dtype, c_rank, shape, &fresh)) != TL_OK)
    return tl__exec_end(exec, status);
  status = contract_into_impl(exec, tl_scalar_real(1.0), a, a_labels, b, b_labels,
                              tl_scalar_real(0.0), &fresh, c_labels);
  if (status != TL_OK)
    tl_tensor_release(&fresh);
  else
    *out = fresh;
  return tl__exec_end(exec, status);
}
