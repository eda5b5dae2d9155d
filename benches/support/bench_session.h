/* benches/support/bench_session.h: the tenlane side of the bench harness, apart from bench.h
 * (which uses no tenlane code so anchor-only binaries need no library): stopping a bench on
 * a failed call, and a held session (a context with a session open on it) that a bench
 * times its routes on. Linked into the binaries tl_add_bench marks TENLANE. */
#ifndef TL_BENCH_SESSION_H
#define TL_BENCH_SESSION_H

#include <stddef.h>

#include "tenlane/context.h"
#include "tenlane/session.h"

/* Print "<bench>: <what>: <status name> (<last message>)" on stderr and exit(1). */
void tl_bench_die(const char *bench, const char *what, tl_status status);

/* A context and a session on it, held by the thread that opened it. */
typedef struct tl_bench_held {
  tl_context *ctx;
  tl_session *session;
  tl_exec *exec; /* the session's root surface */
} tl_bench_held;

/* Create a context of `threads` threads (scratch_limit 0: the library's default) and open a
 * session on it from the calling thread in `mode`. A failure stops the bench through
 * tl_bench_die(bench, ...). */
void tl_bench_held_open(tl_bench_held *held, const char *bench, int threads, size_t scratch_limit,
                        tl_wait_mode mode);
/* The same with the context's workers pinned, one per CPU of cpus[0..cpu_count). */
void tl_bench_held_open_pinned(tl_bench_held *held, const char *bench, int threads, const int *cpus,
                               int cpu_count, tl_wait_mode mode);
/* Close the session and destroy the context (statuses ignored: the bench is ending). Call
 * from the thread that opened it. */
void tl_bench_held_close(tl_bench_held *held);

#endif
