/* src/einsum/fold.c: the one-operand step of einsum: out = sum of a strided view over the
 * axes the output does not keep, the kept axes permuted into the output's order. It
 * prepares operands (a diagonal view summed over its lone labels) and finishes a
 * single-operand einsum (a trace, a transpose, a sum).
 *
 * Invariant: every output element is written exactly once, with the full sum, so the
 * output needs no zeroing and is never read. The sums run on the calling thread: they are
 * memory-bound and small next to the contractions they feed. */
#include <complex.h>
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"

typedef struct fold_loop {
  int out_rank, sum_rank;
  int64_t out_extent[TL_MAX_RANK], out_stride[TL_MAX_RANK], in_stride_out[TL_MAX_RANK];
  int64_t sum_extent[TL_MAX_RANK], sum_stride[TL_MAX_RANK];
} fold_loop;

#define TL__DEFINE_FOLD(NAME, T)                                                       \
  static void NAME(const fold_loop *loop, const void *in_base, void *out_base) {       \
    const T *in = in_base;                                                             \
    T *out = out_base;                                                                 \
    int64_t out_index[TL_MAX_RANK] = {0};                                              \
    /* zeroed once: the sum's odometer ends each element with every index wrapped to 0 \
     * (zeroing all TL_MAX_RANK of them per element cost 10 ns an element) */          \
    int64_t sum_index[TL_MAX_RANK] = {0};                                              \
    int64_t in_pos = 0, out_pos = 0;                                                   \
    for (;;) {                                                                         \
      T acc = 0;                                                                       \
      if (loop->sum_rank == 0) {                                                       \
        acc = in[in_pos];                                                              \
      } else {                                                                         \
        int64_t pos = in_pos;                                                          \
        const int64_t inner = loop->sum_extent[0], inner_stride = loop->sum_stride[0]; \
        for (;;) {                                                                     \
          for (int64_t i = 0; i < inner; i++) acc += in[pos + i * inner_stride];       \
          int d = 1;                                                                   \
          for (; d < loop->sum_rank; d++) {                                            \
            pos += loop->sum_stride[d];                                                \
            if (++sum_index[d] < loop->sum_extent[d]) break;                           \
            pos -= loop->sum_stride[d] * loop->sum_extent[d];                          \
            sum_index[d] = 0;                                                          \
          }                                                                            \
          if (d == loop->sum_rank) break;                                              \
        }                                                                              \
      }                                                                                \
      out[out_pos] = acc;                                                              \
      int d = 0;                                                                       \
      for (; d < loop->out_rank; d++) {                                                \
        in_pos += loop->in_stride_out[d];                                              \
        out_pos += loop->out_stride[d];                                                \
        if (++out_index[d] < loop->out_extent[d]) break;                               \
        in_pos -= loop->in_stride_out[d] * loop->out_extent[d];                        \
        out_pos -= loop->out_stride[d] * loop->out_extent[d];                          \
        out_index[d] = 0;                                                              \
      }                                                                                \
      if (d == loop->out_rank) break;                                                  \
    }                                                                                  \
  }

TL__DEFINE_FOLD(fold_f32, float)
TL__DEFINE_FOLD(fold_f64, double)
TL__DEFINE_FOLD(fold_c64, float complex)
TL__DEFINE_FOLD(fold_c128, double complex)

void tl__einsum_fold(const tl_tensor *in, const int *in_to_out, const tl_tensor *out) {
  fold_loop loop;
  memset(&loop, 0, sizeof loop);
  int64_t out_count = 1;
  for (int a = 0; a < out->rank; a++) {
    loop.out_extent[a] = out->shape[a];
    loop.out_stride[a] = out->strides[a];
    out_count *= out->shape[a];
  }
  loop.out_rank = out->rank;
  if (out_count == 0) return;
  int has_empty_sum = 0;
  for (int k = 0; k < in->rank; k++) {
    if (in_to_out[k] >= 0) {
      loop.in_stride_out[in_to_out[k]] += in->strides[k];
    } else {
      if (in->shape[k] == 0) has_empty_sum = 1;
      if (in->shape[k] <= 1) continue;
      loop.sum_extent[loop.sum_rank] = in->shape[k];
      loop.sum_stride[loop.sum_rank] = in->strides[k];
      loop.sum_rank++;
    }
  }
  /* Sum over the smallest input stride innermost. */
  for (int i = 1; i < loop.sum_rank; i++) {
    for (int j = i; j > 0; j--) {
      int64_t sj = loop.sum_stride[j] < 0 ? -loop.sum_stride[j] : loop.sum_stride[j];
      int64_t sp = loop.sum_stride[j - 1] < 0 ? -loop.sum_stride[j - 1] : loop.sum_stride[j - 1];
      if (sj >= sp) break;
      int64_t te = loop.sum_extent[j], ts = loop.sum_stride[j];
      loop.sum_extent[j] = loop.sum_extent[j - 1];
      loop.sum_stride[j] = loop.sum_stride[j - 1];
      loop.sum_extent[j - 1] = te;
      loop.sum_stride[j - 1] = ts;
    }
  }
  size_t esize = tl_dtype_size(in->dtype);
  const char *in_base = NULL;
  char *out_base = (char *)out->data + out->offset * (int64_t)esize;
  if (!has_empty_sum) {
    in_base = (const char *)in->data + in->offset * (int64_t)esize;
  } else {
    /* A sum over nothing: zero, through the same odometer over a zero-extent sum. */
    loop.sum_rank = 1;
    loop.sum_extent[0] = 0;
    loop.sum_stride[0] = 0;
  }
  switch (in->dtype) {
    case TL_F32:
      fold_f32(&loop, in_base, out_base);
      break;
    case TL_F64:
      fold_f64(&loop, in_base, out_base);
      break;
    case TL_C64:
      fold_c64(&loop, in_base, out_base);
      break;
    case TL_C128:
      fold_c128(&loop, in_base, out_base);
      break;
  }
}
