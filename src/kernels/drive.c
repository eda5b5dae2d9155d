/* src/kernels/drive.c: running the cores over a surface, for every route file: a loop plan
 * with a row kernel (tl__loop_execute) and a copy through the permute core
 * (tl__copy_execute). Small work runs on the calling thread in one go; large work is cut
 * into chunks that tl__exec_run_chunks spreads over the pool, or runs one after another on
 * a one-thread team (TL__SERIAL_CHUNK_ELEMENTS), checking cancellation before each chunk.
 * The route files call these and not each other. */
#include <stdint.h>

#include "kernels.h"
#include "base/base.h"
#include "exec/exec.h"

typedef struct loop_job {
  const tl__loop *loop;
  tl__row_fn fn;
  const void *params;
  int64_t pieces;    /* pieces each row is cut into (1 = whole rows) */
  int64_t piece_len; /* elements per piece */
} loop_job;

static void loop_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const loop_job *job = arg;
  (void)worker_index;
  if (job->pieces == 1) {
    tl__loop_run(job->loop, (int64_t)begin, (int64_t)end, job->fn, job->params);
    return;
  }
  for (size_t item = begin; item < end; item++) {
    int64_t row = (int64_t)item / job->pieces, piece = (int64_t)item % job->pieces;
    int64_t i0 = piece * job->piece_len;
    int64_t i1 = i0 + job->piece_len < job->loop->inner ? i0 + job->piece_len : job->loop->inner;
    tl__loop_run_span(job->loop, row, i0, i1, job->fn, job->params);
  }
}

/* A grain of about `target` elements per chunk, at most a quarter of the items per worker. */
static int64_t chunk_grain(int64_t items, int64_t per_item, int64_t target, int team, int spread) {
  int64_t grain = target / (per_item > 0 ? per_item : 1);
  int64_t max_grain = (items + (int64_t)team * spread - 1) / ((int64_t)team * spread);
  if (grain > max_grain) grain = max_grain;
  return grain < 1 ? 1 : grain;
}

tl_status tl__loop_execute(tl_exec *exec, int team, const tl__loop *loop, tl__row_fn fn,
                           const void *params) {
  int64_t total = loop->rows * loop->inner;
  if (total == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the first element was written");
  loop_job job = {loop, fn, params, 1, loop->inner};
  if (team <= 1 || total < TL__PARALLEL_MIN_ELEMENTS) {
    if (total < TL__SERIAL_CHUNK_ELEMENTS) {
      tl__loop_run(loop, 0, loop->rows, fn, params);
      return TL_OK;
    }
    /* large work on one thread: in chunks, each row in pieces, to look at the flag */
    if (loop->inner > TL__SERIAL_CHUNK_ELEMENTS) {
      job.piece_len = TL__SERIAL_CHUNK_ELEMENTS;
      job.pieces = (loop->inner + job.piece_len - 1) / job.piece_len;
    }
    const int64_t per_item = job.pieces == 1 ? loop->inner : job.piece_len;
    const int64_t grain = TL__SERIAL_CHUNK_ELEMENTS / per_item;
    return tl__exec_run_chunks(exec, 0, (size_t)(loop->rows * job.pieces),
                               (size_t)(grain > 0 ? grain : 1), loop_chunk, &job, "writing");
  }
  /* Few long rows: cut each row into pieces so every worker gets work. */
  if (loop->rows < (int64_t)team * 8 && loop->inner >= 8192) {
    job.piece_len = 4096;
    job.pieces = (loop->inner + job.piece_len - 1) / job.piece_len;
  }
  int64_t items = loop->rows * job.pieces;
  /* chunks of about 2^18 elements (2 MiB of f64): at 2^14 a 4096^2 outer product on two
   * threads of the Zen 5 VM ran 1.57x its one-thread speed, at 2^18 1.81x (each chunk starts
   * a new stream in every operand and is claimed under the queue lock) */
  int64_t grain =
      chunk_grain(items, job.pieces == 1 ? loop->inner : job.piece_len, (int64_t)1 << 18, team, 4);
  return tl__exec_run_chunks(exec, 1, (size_t)items, (size_t)grain, loop_chunk, &job, "writing");
}

static void permute_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  (void)worker_index;
  tl__permute_run(arg, (int64_t)begin, (int64_t)end);
}

/* One long row, cut into pieces of COPY_PIECE elements that each run the plan's own copy
 * (streaming stores on a large contiguous output, as on one thread). Cut through the loop
 * runner's elementwise copy instead, the pieces used ordinary stores, each of which reads
 * its line first, and a second thread gained less. */
#define COPY_PIECE 65536
_Static_assert(TL__SERIAL_CHUNK_ELEMENTS % COPY_PIECE == 0, "whole copy pieces to a serial chunk");
static void span_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  const tl__permute_plan *plan = arg;
  const int64_t inner = plan->loop.inner;
  (void)worker_index;
  const int64_t i0 = (int64_t)begin * COPY_PIECE;
  const int64_t i1 = (int64_t)end * COPY_PIECE < inner ? (int64_t)end * COPY_PIECE : inner;
  tl__permute_run_span(plan, 0, i0, i1);
}

tl_status tl__copy_execute(tl_exec *exec, int team, const tl_tensor *dst, const tl_tensor *src) {
  tl__permute_plan plan;
  tl__permute_plan_make(&plan, dst, src);
  int64_t total = plan.loop.rows * plan.loop.inner;
  if (total == 0) return TL_OK;
  if (tl__exec_cancelled(exec))
    return tl__fail(TL_E_CANCELLED, "cancelled before the first element was written");
  const int parallel = team > 1 && total >= TL__PARALLEL_MIN_ELEMENTS;
  if (!parallel || plan.blocks < 2) {
    const int64_t pieces = (plan.loop.inner + COPY_PIECE - 1) / COPY_PIECE;
    if (!plan.tiled && plan.loop.rows < 2 && (parallel || total >= TL__SERIAL_CHUNK_ELEMENTS))
      return tl__exec_run_chunks(exec, parallel, (size_t)pieces,
                                 parallel ? 1 : TL__SERIAL_CHUNK_ELEMENTS / COPY_PIECE, span_chunk,
                                 &plan, "copying");
    if (!parallel && total >= TL__SERIAL_CHUNK_ELEMENTS && plan.blocks >= 2) {
      /* large work on one thread: in chunks of blocks, to look at the flag */
      const int64_t grain = TL__SERIAL_CHUNK_ELEMENTS / (total / plan.blocks);
      return tl__exec_run_chunks(exec, 0, (size_t)plan.blocks, (size_t)(grain > 0 ? grain : 1),
                                 permute_chunk, &plan, "copying");
    }
    tl__permute_run(&plan, 0, plan.blocks);
    return TL_OK;
  }
  int64_t grain = chunk_grain(plan.blocks, total / plan.blocks, 65536, team, 8);
  return tl__exec_run_chunks(exec, 1, (size_t)plan.blocks, (size_t)grain, permute_chunk, &plan,
                             "copying");
}
