/* src/core/marker.c: per-thread marks (see core_int.h). */
#include "core/core_int.h"

#include "base/base.h"

/* A mark holds the context's serial, not its address (issue 28: addresses come back). */
typedef struct mark {
  uint64_t ctx_serial;
  tl_owner owner;
} mark;

static _Thread_local mark marks[TL__MARKS_MAX];
static _Thread_local int mark_count;
int tl__marker_has(const tl_context *ctx) {
  for (int i = 0; i < mark_count; i++) {
    if (marks[i].ctx_serial == ctx->serial) return 1;
  }
  return 0;
}

tl_status tl__marker_push(const tl_context *ctx, tl_owner owner, const char *call) {
  if (mark_count == TL__MARKS_MAX)
    return tl__fail(TL_E_LIMIT,
                    "%s: owner %llu: this thread already executes for %d contexts (holds their "
                    "sessions or runs their lanes or tickets), TL_CONTEXTS_PER_THREAD_MAX",
                    call, (unsigned long long)owner, TL__MARKS_MAX);
  marks[mark_count].ctx_serial = ctx->serial;
  marks[mark_count].owner = owner;
  mark_count++;
  return TL_OK;
}

void tl__marker_pop(const tl_context *ctx) {
  for (int i = mark_count - 1; i >= 0; i--) {
    if (marks[i].ctx_serial == ctx->serial) {
      marks[i] = marks[mark_count - 1];
      mark_count--;
      return;
    }
  }
}
