/* src/kernels/gemm.c: GEMM over a surface (tl_gemm_into, tl_gemm) and the batched GEMM
 * runner that contraction uses.
 *
 * Threading: from a root surface with a team > 1, a large GEMM is cut into blocks of C
 * (column blocks, or row blocks when C is tall), each block one single-threaded provider
 * call on a pool worker, unless the provider computes a block's elements otherwise than the
 * whole's (OpenBLAS: tl__provider_choice.provider_split); a batch of GEMMs is spread over
 * the pool batch by batch. From a
 * child surface everything runs on the calling thread. Cancellation is checked before
 * each block. Operands whose strides a provider cannot take (negative, zero on an extent
 * > 1, interleaved) are first copied into scratch, so the provider is never handed a
 * layout it would reject (BLIS aborts on bad strides). */
#include <stdatomic.h>
#include <string.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

/* 1 when BLIS accepts (rs, cs) for an m x n matrix (bli_check_matrix_strides, positive
 * strides only). Extent-1 dimensions have been given stride 1 by the caller. */
static int provider_strides_ok(int64_t m, int64_t n, int64_t rs, int64_t cs) {
  if (m <= 1 && n <= 1) return rs > 0 && cs > 0;
  if (rs <= 0 || cs <= 0) return 0;
  if (m > 1 && n > 1 && rs == 1 && cs == 1) return 0;
  if (rs == 1) return cs >= m;
  if (cs == 1) return rs >= n;
  if (rs > cs) return rs >= cs * n;
  return cs >= rs * m;
}

/* Give extent-1 dimensions a harmless stride so checks see only the real layout. */
static void tidy_strides(int64_t m, int64_t n, int64_t *rs, int64_t *cs) {
  if (m <= 1) *rs = 1;
  if (n <= 1) *cs = m > 1 ? m : 1;
  if (m <= 1 && n > 1 && *cs == 1) *rs = 1;
}

/* ---- the batched runner -------------------------------------------------------------- */

typedef struct gemm_job {
  const tl__gemm_batch *g;
  int64_t blocks;    /* blocks per GEMM */
  int split_rows;    /* 1: blocks cut m, 0: blocks cut n */
  int64_t block_len; /* rows or columns per block */
  char *pack;        /* packing scratch, pack_bytes per thread slot (NULL: none) */
  size_t pack_bytes;
  int small_stack; /* 1: whole entries through gemm_batch_small.c */
  int thin;        /* 1: the whole product is one row or one column (gemm_thin.c) */
  int dots;        /* 1: every entry is one 1 x 1 product, runs of entries at once (gemm_thin.c) */
  int rows;        /* 1: entries are short matrix-vector products, rows of groups (gemm_thin.c) */
  int tiny;        /* 1: a tall product with a tiny B, row by row (gemm_tiny_nk.c) */
  int kernel;      /* TL__SERIAL_*: the whole product's kernel, for every block */
} gemm_job;

/* One block of C. The kernel is the whole product's (thin, or job->kernel), never the
 * block's own choice: the kernels round differently, and a block's shape depends on the
 * team (see kernels.h, tl__gemm_serial_kernel). */
static void gemm_block(const gemm_job *job, int64_t batch, int64_t begin, int64_t len, void *pack) {
  const tl__gemm_batch *g = job->g;
  const int split_rows = job->split_rows;
  const int64_t es = (int64_t)tl_dtype_size(g->dtype);
  int64_t oa = 0, ob = 0, oc = 0, rem = batch;
  for (int k = 0; k < g->batch_rank; k++) {
    int64_t idx = rem % g->batch_shape[k];
    rem /= g->batch_shape[k];
    oa += idx * g->batch_strides[0][k];
    ob += idx * g->batch_strides[1][k];
    oc += idx * g->batch_strides[2][k];
  }
  const char *a = g->a + oa * es;
  const char *b = g->b + ob * es;
  char *c = g->c + oc * es;
  int64_t m = g->m, n = g->n;
  if (split_rows) {
    a += begin * g->rsa * es;
    c += begin * g->rsc * es;
    m = len;
  } else {
    b += begin * g->csb * es;
    c += begin * g->csc * es;
    n = len;
  }
  if (job->thin && tl__gemm_thin(g->dtype, m, n, g->k, g->alpha, a, g->rsa, g->csa, b, g->rsb,
                                 g->csb, g->beta, c, g->rsc, g->csc))
    return;
  if (job->tiny) {
    tl__gemm_tiny_nk(g->dtype, m, n, g->k, g->alpha, a, g->rsa, b, g->rsb, g->csb, g->beta, c,
                     g->rsc, g->csc);
    return;
  }
  tl__gemm_serial_on(job->kernel, g->dtype, m, n, g->k, g->alpha, a, g->rsa, g->csa, b, g->rsb,
                     g->csb, g->beta, c, g->rsc, g->csc, pack);
}

static void gemm_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const gemm_job *job = arg;
  (void)worker_index;
  const tl__gemm_batch *g = job->g;
  if (job->small_stack) {
    tl__gemm_batch_small(-1, g, (int64_t)begin, (int64_t)end);
    return;
  }
  if (job->dots) {
    tl__gemm_thin_dots(g, (int64_t)begin, (int64_t)end);
    return;
  }
  if (job->rows) {
    tl__gemm_thin_rows(g, (int64_t)begin, (int64_t)end);
    return;
  }
  void *pack = job->pack ? job->pack + (size_t)(worker_index + 1) * job->pack_bytes : NULL;
  for (size_t item = begin; item < end; item++) {
    int64_t batch = (int64_t)item / job->blocks, block = (int64_t)item % job->blocks;
    int64_t total = job->split_rows ? g->m : g->n;
    int64_t b0 = block * job->block_len;
    int64_t len = block == job->blocks - 1 ? total - b0 : job->block_len;
    gemm_block(job, batch, b0, len, pack);
  }
}

/* Cancellation (tl_exec_cancel, a lane's run) is seen between blocks only, inside none: a
 * long product is cut into blocks of at most the provider's bound (tl__prov_gemm_block:
 * 2^32 real floating-point operations on an optimized provider, a complex multiply-add
 * counting eight, fewer on reference BLAS) so that a request is seen within one block's time
 * (under about a tenth of a second on one idle core). A block keeps at least the provider's
 * minimum of rows or columns (128 for a packing provider). The blocks are cut equal: every
 * block packs the shared operand again, and a short last block (600 columns as 544 + 56)
 * paid a whole packing for a tenth of the work. */
/* The real flops of one line of C: `other` x k multiply-adds (a complex one counts eight). */
static double line_flops(int complex_dtype, int64_t other, int64_t k) {
  return (complex_dtype ? 8.0 : 2.0) * (double)other * (double)(k > 0 ? k : 1);
}

int64_t tl__gemm_cancel_block(int complex_dtype, int64_t dim, int64_t other, int64_t k,
                              int64_t block_len, double max_flops, int64_t min_len) {
  const double per_line = line_flops(complex_dtype, other, k);
  if (per_line * (double)block_len <= max_flops) return block_len;
  double fit = max_flops / per_line; /* lines per block within the bound */
  int64_t len = fit >= (double)dim ? dim : (int64_t)fit;
  len = len / 16 * 16;
  if (len < min_len) len = min_len;
  if (len >= block_len) return block_len;
  /* As many blocks as the bound needs, of equal length (a multiple of 16, not past it). */
  const int64_t blocks = (dim + len - 1) / len;
  const int64_t even = ((dim + blocks - 1) / blocks + 15) / 16 * 16;
  return even < len && even >= min_len ? even : len;
}

/* A block also writes at most this many bytes of C: with a short k a product writes far
 * more than it multiplies (2^14 x 4 times 4 x 2^14 is 2 GiB of C and 2^31 flops, one
 * block, and a Ctrl-C came 3.8 s late while fresh pages were written at under 1 GB/s). */
#define TL__GEMM_BLOCK_C_BYTES ((double)(64 << 20))

static void cap_block_for_cancel(gemm_job *job, const tl__gemm_batch *g) {
  double max_flops;
  int64_t min_len;
  tl__prov_gemm_block(&max_flops, &min_len);
  const int64_t dim = job->split_rows ? g->m : g->n, other = job->split_rows ? g->n : g->m;
  /* the byte bound as flops: the lines within it, at a line's flops */
  const double c_lines = TL__GEMM_BLOCK_C_BYTES / ((double)other * (double)tl_dtype_size(g->dtype));
  const double c_flops = c_lines * line_flops(tl_dtype_is_complex(g->dtype), other, g->k);
  if (c_flops < max_flops) max_flops = c_flops;
  const int64_t len = tl__gemm_cancel_block(tl_dtype_is_complex(g->dtype), dim, other, g->k,
                                            job->block_len, max_flops, min_len);
  if (len == job->block_len) return;
  job->block_len = len;
  job->blocks = (dim + len - 1) / len;
}

/* A tall product whose B is a few columns (2^18 rows of A times a 4 x 3 B, as a tensor
 * network's last step has when nothing needs permuting) goes row by row through
 * gemm_tiny_nk.c's vector rows, which stream A once: a provider packs A and pads B to its
 * register tile for such a product. Only where those rows run (tl__gemm_tiny_nk_fast: f64
 * and c128 up to 4 columns); the portable rows trail the provider from 8 columns on. A's k
 * elements of a row must be contiguous. The choice is the whole product's, and each row's
 * bits depend on its own values alone, so blocks of rows on any team give the same bits. */
#define TINY_ROUTE_MIN_ROWS 512
static int tiny_route(const tl__gemm_batch *g) {
  return g->m >= TINY_ROUTE_MIN_ROWS && (g->csa == 1 || g->k == 1) &&
         tl__gemm_tiny_nk_fits(g->dtype, g->n, g->k) &&
         tl__gemm_tiny_nk_fast(g->dtype, g->n, g->alpha, g->beta, g->csc);
}

/* One long dot in fixed chunks (gemm_thin.c): the parts in scratch, one per chunk, shared
 * by the team, then added in chunk order. A GEMM is otherwise never cut along k, so a full
 * dot product (einsum's ij,ij->) ran on one thread whatever the team. */
typedef struct dot_job {
  const tl__gemm_batch *g;
  double *parts;
} dot_job;

static void dot_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const dot_job *job = arg;
  (void)worker_index;
  for (size_t c = begin; c < end; c++)
    tl__gemm_thin_dot_chunk(job->g, (int64_t)c, job->parts + 2 * c);
}

static tl_status long_dot(tl_exec *exec, int team, const tl__gemm_batch *g) {
  const int64_t chunks = (g->k + TL__DOT_CHUNK - 1) / TL__DOT_CHUNK;
  dot_job job = {g, NULL};
  void *parts = NULL;
  tl_status status = tl__exec_scratch(exec, (size_t)chunks * 2 * sizeof(double), 64, &parts);
  if (status != TL_OK) return status;
  job.parts = parts;
  status = tl__exec_run_chunks(exec, team > 1, (size_t)chunks, 1, dot_chunk, &job,
                               "computing a dot product");
  if (status != TL_OK) return status;
  tl__gemm_thin_dot_finish(g, chunks, job.parts);
  return TL_OK;
}

tl_status tl__gemm_batch_run(tl_exec *exec, int team, const tl__gemm_batch *g) {
  if (g->m == 0 || g->n == 0 || g->batches == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the first block was computed");
  if (tl__gemm_thin_dot_chunks_fit(g)) return long_dot(exec, team, g);
  /* Blocks cut the longer side of C (for a square C, its columns). Cutting a row-major square
   * C along its rows instead (so that a block is one piece of its memory) gave NaN where
   * numpy and one thread give Inf, in c128 products with Inf among the inputs, on two
   * threads: the row blocks ran another kernel. */
  const int split_rows = g->m > g->n;
  gemm_job job = {g, 1, split_rows, split_rows ? g->m : g->n, NULL, 0, 0, 0, 0, 0, 0, 0};
  job.tiny = tiny_route(g);
  job.thin = !job.tiny && (g->m == 1 || g->n == 1);
  job.kernel = tl__gemm_serial_kernel(g->dtype, g->m, g->n, g->k, g->rsa, g->rsc, g->csb, g->csc);
  double flops =
      2.0 * (double)g->m * (double)g->n * (double)(g->k > 0 ? g->k : 1) * (double)g->batches;
  const int parallel = team > 1 && flops >= 2.0 * 48 * 48 * 48 * 4;
  /* Packing scratch for the complex kernel, one slice per thread that may run a block, all
   * taken here (the arena is the calling thread's), before anything is written. */
  job.pack_bytes = tl__gemm_serial_pack_bytes(g->dtype, g->m, g->n, g->k);
  if (job.pack_bytes > 0) {
    void *pack = NULL;
    size_t slots = parallel ? tl__exec_thread_slots(exec) : 1;
    tl_status status = tl__exec_scratch(exec, slots * job.pack_bytes, 64, &pack);
    if (status != TL_OK) return status;
    job.pack = pack;
  }
  /* The one rule for cutting a GEMM over a team: only where every block computes its
   * elements as the whole product would (tenlane's kernels run the whole product's kernel;
   * a provider must say so, provider_split). Elsewhere the product stays whole, cut only
   * for cancellation, which does not depend on the team: two threads give one thread's
   * bits on every provider. */
  const int cut = job.thin || job.tiny || job.kernel != TL__SERIAL_PROVIDER ||
                  tl__provider_current().provider_split;
  if (parallel && cut) {
    if (g->batches < (int64_t)team * 4) {
      /* Cut each GEMM into blocks of C: one per worker while blocks are small (every block
       * packs the whole shared operand again, which small blocks cannot amortise), twice
       * that when they are large, so an unequal pair of CPUs balances. */
      int64_t dim = job.block_len;
      int64_t want = dim >= (int64_t)team * 1024 ? (int64_t)team * 2 : (int64_t)team;
      if (want * g->batches > (int64_t)team * 4)
        want = ((int64_t)team * 4 + g->batches - 1) / g->batches;
      /* Equal blocks, a whole number per worker, each a multiple of 16 (the micro-tiles'
       * common factor): 3 blocks on 2 workers would leave one idle for a third of the time. */
      int64_t len = (dim + want - 1) / want;
      len = (len + 15) / 16 * 16;
      if (len < 48) len = 48;
      if (len < dim) {
        job.block_len = len;
        job.blocks = (dim + len - 1) / len;
      }
    }
  }
  cap_block_for_cancel(&job, g);
  /* A last block of one line joins the one before: a block of extent 1 where the product has
   * more would take another path (a thin product, the kernels' extent-1 layouts). */
  const int64_t dim = job.split_rows ? g->m : g->n;
  if (job.blocks > 1 && dim - (job.blocks - 1) * job.block_len == 1) job.blocks--;
  if (job.blocks == 1) job.block_len = dim;
  /* batches * blocks <= batches * max(m, n) elements of C: no overflow. */
  int64_t items = g->batches * job.blocks;
  /* whole GEMMs: runs of consecutive entries per chunk (gemm_batch_runs.c) */
  size_t run = job.blocks == 1 ? tl__gemm_batch_run_length(g, parallel ? team : 1) : 1;
  job.small_stack = job.blocks == 1 && g->batches > 1 && tl__gemm_batch_small_takes(g);
  job.dots = !job.small_stack && job.blocks == 1 && tl__gemm_thin_dots_fit(g);
  job.rows = !job.small_stack && !job.dots && job.blocks == 1 && tl__gemm_thin_rows_fit(g);
  if (items > 1)
    return tl__exec_run_chunks(exec, parallel, (size_t)items, run, gemm_chunk, &job,
                               "computing GEMM blocks");
  gemm_block(&job, 0, 0, job.block_len, job.pack);
  return TL_OK;
}

/* ---- operand preparation ------------------------------------------------------------- */

tl_status tl__gemm_operand(tl_exec *exec, const tl_tensor *t, int64_t rows, int64_t cols,
                           int64_t *rs, int64_t *cs, const char **base) {
  int64_t r = *rs, c = *cs;
  tidy_strides(rows, cols, &r, &c);
  const int64_t es = (int64_t)tl_dtype_size(t->dtype);
  if (provider_strides_ok(rows, cols, r, c)) {
    *rs = r;
    *cs = c;
    return TL_OK;
  }
  /* Copy into a column-major scratch matrix. */
  void *buffer;
  size_t bytes = (size_t)(rows * cols * es);
  tl_status status = tl__exec_scratch(exec, bytes ? bytes : 64, 64, &buffer);
  if (status != TL_OK) return status;
  tl_tensor src, dst;
  memset(&src, 0, sizeof src);
  src.dtype = t->dtype;
  src.rank = 2;
  src.shape[0] = rows;
  src.shape[1] = cols;
  src.strides[0] = *rs;
  src.strides[1] = *cs;
  src.data = (void *)*base;
  dst = src;
  dst.strides[0] = 1;
  dst.strides[1] = rows;
  dst.data = buffer;
  tl__permute_plan plan;
  tl__permute_plan_make(&plan, &dst, &src);
  tl__permute_run(&plan, 0, plan.blocks);
  *base = (const char *)buffer;
  *rs = 1;
  *cs = rows > 0 ? rows : 1;
  tidy_strides(rows, cols, rs, cs);
  return TL_OK;
}

/* ---- tl_gemm_into --------------------------------------------------------------------- */

static tl_status gemm_into_impl(tl_exec *exec, tl_scalar alpha, const tl_tensor *a,
                                const tl_tensor *b, tl_scalar beta, tl_tensor *c) {
  tl_status status;
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return status;
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return status;
  if ((status = tl__check_output(c, "c")) != TL_OK) return status;
  if (a->rank != 2 || b->rank != 2 || c->rank != 2)
    return tl__fail(TL_E_SHAPE, "gemm needs matrices: a, b, c have ranks %d, %d, %d", a->rank,
                    b->rank, c->rank);
  if (b->dtype != a->dtype)
    return tl__fail(TL_E_DTYPE, "b has dtype %s, a has %s", tl_dtype_name(b->dtype),
                    tl_dtype_name(a->dtype));
  if ((status = tl__check_dtype(c, "c", a->dtype)) != TL_OK) return status;
  if (a->shape[1] != b->shape[0])
    return tl__fail(TL_E_SHAPE, "a is %lld x %lld and b is %lld x %lld: inner extents differ",
                    (long long)a->shape[0], (long long)a->shape[1], (long long)b->shape[0],
                    (long long)b->shape[1]);
  if (c->shape[0] != a->shape[0] || c->shape[1] != b->shape[1])
    return tl__fail(TL_E_SHAPE, "c is %lld x %lld, a * b is %lld x %lld", (long long)c->shape[0],
                    (long long)c->shape[1], (long long)a->shape[0], (long long)b->shape[1]);
  if ((status = tl__check_scalar("alpha", alpha, a->dtype)) != TL_OK) return status;
  if ((status = tl__check_scalar("beta", beta, a->dtype)) != TL_OK) return status;
  if ((status = tl__check_no_overlap(c, "c", a, "a")) != TL_OK) return status;
  if ((status = tl__check_no_overlap(c, "c", b, "b")) != TL_OK) return status;
  int team;
  if ((status = tl__exec_team(exec, &team)) != TL_OK) return status;
  return tl__gemm_tensors(exec, team, alpha, a, b, beta, c);
}

tl_status tl__gemm_tensors(tl_exec *exec, int team, tl_scalar alpha, const tl_tensor *a,
                           const tl_tensor *b, tl_scalar beta, tl_tensor *c) {
  const int64_t m = c->shape[0], n = c->shape[1], k = a->shape[1];
  const int64_t es = (int64_t)tl_dtype_size(a->dtype);
  if (m == 0 || n == 0) return TL_OK;
  if (tl__exec_cancelled(exec)) return tl__fail(TL_E_CANCELLED, "cancelled before the GEMM");
  tl__providers_init();
  tl__gemm_batch g;
  memset(&g, 0, sizeof g);
  g.dtype = a->dtype;
  g.m = m;
  g.n = n;
  g.k = k;
  g.alpha = alpha;
  g.beta = beta;
  g.batches = 1;
  if (k == 0) {
    /* C = beta * C, without the provider. */
    tl__loop loop;
    const tl_tensor *ts[2] = {c, c};
    tl__ew_params params = {beta, beta};
    tl__loop_plan(&loop, beta.re == 0.0 && beta.im == 0.0 ? 1 : 2, ts);
    return tl__loop_execute(
        exec, team, &loop,
        loop.ops == 1 ? tl__ew_fill_kernel(c->dtype) : tl__ew_scale_kernel(c->dtype), &params);
  }
  tl_status status;
  g.a = (const char *)a->data + a->offset * es;
  g.rsa = a->strides[0];
  g.csa = a->strides[1];
  if ((status = tl__gemm_operand(exec, a, m, k, &g.rsa, &g.csa, &g.a)) != TL_OK) return status;
  g.b = (const char *)b->data + b->offset * es;
  g.rsb = b->strides[0];
  g.csb = b->strides[1];
  if ((status = tl__gemm_operand(exec, b, k, n, &g.rsb, &g.csb, &g.b)) != TL_OK) return status;
  int64_t rsc = c->strides[0], csc = c->strides[1];
  tidy_strides(m, n, &rsc, &csc);
  if (provider_strides_ok(m, n, rsc, csc)) {
    g.c = (char *)c->data + c->offset * es;
    g.rsc = rsc;
    g.csc = csc;
    return tl__gemm_batch_run(exec, team, &g);
  }
  /* C's layout does not fit (negative strides): compute alpha*A*B into scratch, then
   * c = tmp + beta * c elementwise. */
  void *buffer;
  if ((status = tl__exec_scratch(exec, (size_t)(m * n * es), 64, &buffer)) != TL_OK) return status;
  g.c = (char *)buffer;
  g.rsc = 1;
  g.csc = m;
  tidy_strides(m, n, &g.rsc, &g.csc);
  g.beta = tl_scalar_real(0.0);
  if ((status = tl__gemm_batch_run(exec, team, &g)) != TL_OK) return status;
  tl_tensor tmp = *c;
  tmp.owned = NULL;
  tmp.data = buffer;
  tmp.offset = 0;
  tmp.strides[0] = 1;
  tmp.strides[1] = m;
  const tl_tensor *ts[3] = {c, &tmp, c};
  tl__loop loop;
  int beta_zero = beta.re == 0.0 && beta.im == 0.0;
  tl__loop_plan(&loop, beta_zero ? 2 : 3, ts);
  tl__ew_params params = {tl_scalar_real(1.0), beta};
  return tl__loop_execute(exec, team, &loop, tl__ew_axpby_kernel(c->dtype, beta_zero), &params);
}

tl_status tl_gemm_into(tl_exec *exec, tl_scalar alpha, const tl_tensor *a, const tl_tensor *b,
                       tl_scalar beta, tl_tensor *c) {
  tl_status status = tl__exec_begin(exec, "tl_gemm_into");
  if (status != TL_OK) return status;
  return tl__exec_end(exec, gemm_into_impl(exec, alpha, a, b, beta, c));
}

tl_status tl_gemm(tl_exec *exec, const tl_tensor *a, const tl_tensor *b, tl_tensor *out) {
  tl_status status = tl__exec_begin(exec, "tl_gemm");
  if (status != TL_OK) return status;
  if (out == NULL) return tl__exec_end(exec, tl__fail(TL_E_INVALID, "out is NULL"));
  if ((status = tl__check_tensor(a, "a")) != TL_OK) return tl__exec_end(exec, status);
  if ((status = tl__check_tensor(b, "b")) != TL_OK) return tl__exec_end(exec, status);
  if (a->rank != 2 || b->rank != 2)
    return tl__exec_end(exec, tl__fail(TL_E_SHAPE, "gemm needs matrices: a, b have ranks %d, %d",
                                       a->rank, b->rank));
  int64_t shape[2] = {a->shape[0], b->shape[1]};
  tl_tensor fresh;
  if ((status = tl__exec_fresh(exec, a->dtype, 2, shape, &fresh)) != TL_OK)
    return tl__exec_end(exec, status);
  status = gemm_into_impl(exec, tl_scalar_real(1.0), a, b, tl_scalar_real(0.0), &fresh);
  if (status != TL_OK)
    tl_tensor_release(&fresh);
  else
    *out = fresh;
  return tl__exec_end(exec, status);
}
