/* src/einsum/shape.c: tl_einsum_shape, the output shape of a spec over operand shapes,
 * read with the parser and extent rules every einsum call uses (parse.c, plan.c), so a
 * binding that allocates the output itself agrees with the library by construction. */
#include <string.h>

#include "base/base.h"
#include "einsum_int.h"

tl_status tl_einsum_shape(const char *spec, int n_operands, const int *ranks,
                          const int64_t *const *shapes, int *out_rank, int64_t *out_shape) {
  if (spec == NULL || ranks == NULL || shapes == NULL || out_rank == NULL || out_shape == NULL) {
    return tl__fail(TL_E_INVALID,
                    "tl_einsum_shape: NULL argument (spec %p, ranks %p, shapes %p, out_rank %p, "
                    "out_shape %p)",
                    (const void *)spec, (const void *)ranks, (const void *)shapes, (void *)out_rank,
                    (void *)out_shape);
  }
  if (n_operands < 1 || n_operands > TL_EINSUM_MAX_OPERANDS) {
    return tl__fail(TL_E_INVALID, "tl_einsum_shape: n_operands is %d, expected 1..%d", n_operands,
                    TL_EINSUM_MAX_OPERANDS);
  }
  for (int i = 0; i < n_operands; i++) {
    if (ranks[i] < 0 || ranks[i] > TL_MAX_RANK || (ranks[i] > 0 && shapes[i] == NULL)) {
      return tl__fail(TL_E_INVALID, "tl_einsum_shape: operand %d has rank %d and shape %p", i,
                      ranks[i], (const void *)shapes[i]);
    }
  }
  /* A parsed spec is some tens of kilobytes: off the caller's stack (a lane's, a binding's). */
  tl__einsum_spec *parsed = tl__alloc(sizeof *parsed, 64);
  if (parsed == NULL) {
    return tl__fail(TL_E_NOMEM, "tl_einsum_shape: %zu bytes for the parsed spec", sizeof *parsed);
  }
  int64_t extent[TL__EINSUM_LABELS];
  tl_status status = tl__einsum_parse(spec, n_operands, ranks, parsed);
  if (status == TL_OK) status = tl__einsum_bind_extents(spec, parsed, shapes, extent);
  if (status == TL_OK) {
    /* The parser admits only output labels some input has, so every extent is bound; the
     * check keeps a -1 from ever reaching a caller. */
    for (int k = 0; k < parsed->output.count && status == TL_OK; k++) {
      if (extent[parsed->output.labels[k]] < 0) {
        char name[32];
        status =
            tl__fail(TL_E_INVALID, "tl_einsum_shape: spec \"%s\": output label '%s' has no extent",
                     spec, tl__einsum_label_name(parsed->output.labels[k], parsed, name));
      }
    }
  }
  if (status == TL_OK) {
    *out_rank = parsed->output.count;
    for (int k = 0; k < parsed->output.count; k++) out_shape[k] = extent[parsed->output.labels[k]];
  }
  tl__free(parsed);
  return status;
}
