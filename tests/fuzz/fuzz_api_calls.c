/* tests/fuzz/fuzz_api_calls.c: libFuzzer target for sequences of public calls with hostile
 * arguments (issue 28). The input is a program: each step is an opcode byte and its
 * arguments, read from the input as it goes. Integer arguments are drawn either from a table
 * of extremes (0, 1, SIZE_MAX and its neighbours, INT64_MIN, INT64_MAX, 2^62, 2^63 ...) or
 * taken raw (eight bytes), so the edges are as near as the ordinary values.
 *
 * The steps make and destroy contexts (with extreme scratch limits), open and close
 * sessions, keep the handles of closed sessions and the tickets of closed sessions and
 * destroyed contexts (and use them: they must be refused, never trusted), take scratch of
 * any size on lane and ticket surfaces, run maps whose items fail or return TL_E_CANCELLED,
 * split loops of huge counts on a pool, make tensors of extreme shapes, and slice, select
 * and reshape them with extreme integers, and take every view of empty tensors (an axis of
 * extent 0) whose strides and offset are extreme. Every call must return a status with a message
 * or a correct result: the target stops the process (a finding) when a slice disagrees with
 * Python's rules, a loop's chunks do not tile its range, scratch that was granted is not
 * writable, a stale handle or ticket is accepted, or a map breaks its promise. At the end
 * of each input everything is closed and destroyed, so a leak is a finding too. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tenlane/alloc.h"
#include "tenlane/context.h"
#include "tenlane/map.h"
#include "tenlane/ops.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "tenlane/session.h"
#include "tenlane/tensor.h"

/* The allocator this target installs refuses blocks above CAP_BYTES (as a machine without
 * the memory does), so a huge request that passes every check still never exhausts the
 * fuzzer's memory limit. */
#define CAP_BYTES ((size_t)256 << 20)
#define SLOTS 3
#define KEPT 8
#define STEPS 48

static void finding(const char *what) {
  fprintf(stderr, "FINDING: %s; message \"%s\"\n", what, tl_last_message());
  abort();
}

/* ---- reading the program ---- */

typedef struct program {
  const uint8_t *data;
  size_t size, at;
} program;

static uint8_t next_byte(program *p) { return p->at < p->size ? p->data[p->at++] : 0; }

static uint64_t next_raw(program *p) {
  uint64_t value = 0;
  for (int i = 0; i < 8; i++) value = value << 8 | next_byte(p);
  return value;
}

static const uint64_t extremes[] = {0,
                                    1,
                                    2,
                                    3,
                                    7,
                                    63,
                                    64,
                                    4096,
                                    65536,
                                    (uint64_t)1 << 31,
                                    (uint64_t)1 << 32,
                                    (uint64_t)1 << 62,
                                    (uint64_t)1 << 63,
                                    ((uint64_t)1 << 63) + 1,
                                    ((uint64_t)1 << 63) - 1,
                                    UINT64_MAX,
                                    UINT64_MAX - 1,
                                    UINT64_MAX - 3,
                                    UINT64_MAX - 6,
                                    UINT64_MAX - 63,
                                    UINT64_MAX - 64,
                                    UINT64_MAX - 127,
                                    UINT64_MAX - 4095};

/* A size: an extreme, a small value, or raw bits. */
static size_t next_size(program *p) {
  uint8_t pick = next_byte(p);
  if (pick < 96) return (size_t)extremes[pick % (sizeof extremes / sizeof extremes[0])];
  if (pick < 200) return pick - 96;
  return (size_t)next_raw(p);
}

/* A signed value: an extreme (either sign), a small value of either sign, or raw bits. */
static int64_t next_i64(program *p) {
  uint8_t pick = next_byte(p);
  if (pick < 96) {
    uint64_t bits = extremes[pick % (sizeof extremes / sizeof extremes[0])];
    return pick & 1 ? (int64_t)bits : (int64_t)(0 - bits);
  }
  if (pick < 200) return (int64_t)pick - 148; /* -52 .. 51 */
  return (int64_t)next_raw(p);
}

/* ---- the state one input works on ---- */

typedef struct slot {
  tl_context *ctx;
  tl_session *session; /* open, or NULL */
} slot;

typedef struct world {
  slot slots[SLOTS];
  tl_session *closed[KEPT]; /* handles of closed sessions */
  int closed_count;
  tl_ticket tickets[KEPT]; /* of open, closed and destroyed sessions */
  int ticket_count;
  tl_pool *pool;
} world;

static void keep_closed(world *w, tl_session *handle) {
  w->closed[w->closed_count % KEPT] = handle;
  w->closed_count++;
}

/* ---- scratch on lane and ticket surfaces ---- */

typedef struct scratch_job {
  size_t bytes[4];
} scratch_job;

static void take_scratch(tl_exec *exec, const scratch_job *job) {
  for (int i = 0; i < 4; i++) {
    void *ptr = NULL;
    tl_status status =
        tl_exec_scratch(exec, job->bytes[i], i % 2 ? TL_SCRATCH_LANE : TL_SCRATCH_ITEM, &ptr);
    if (status == TL_OK) {
      if (ptr == NULL || job->bytes[i] > CAP_BYTES)
        finding("scratch granted past the allocator's cap");
      /* Granted memory is writable at both ends (ASan checks the block). */
      size_t touch = job->bytes[i] < 4096 ? job->bytes[i] : 4096;
      if (touch > 0) {
        memset(ptr, 0x5a, touch);
        ((unsigned char *)ptr)[job->bytes[i] - 1] = 0xa5;
      }
    } else if (tl_last_message()[0] == '\0') {
      finding("scratch refused without a message");
    }
  }
}

static int scratch_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)item, (void)lane_index;
  take_scratch(exec, arg);
  return 0;
}

static int scratch_ticket(tl_exec *exec, void *arg) {
  take_scratch(exec, arg);
  return 0;
}

typedef struct ticket_call {
  const tl_ticket *ticket;
  tl_ticket_fn fn;
  void *arg;
  tl_status status;
} ticket_call;

static void *ticket_thread(void *arg) {
  ticket_call *call = arg;
  call->status = tl_ticket_enter(call->ticket, call->fn, call->arg, NULL);
  return NULL;
}

static tl_status enter_elsewhere(const tl_ticket *ticket, tl_ticket_fn fn, void *arg) {
  ticket_call call = {ticket, fn, arg, TL_OK};
  pthread_t thread;
  if (pthread_create(&thread, NULL, ticket_thread, &call) != 0) return TL_E_THREAD;
  pthread_join(thread, NULL);
  return call.status;
}

/* ---- maps whose items fail or are cancelled ---- */

typedef struct map_job {
  size_t count, fail_at, cancel_at;
  atomic_uchar ran[256];
} map_job;

static int map_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)lane_index;
  map_job *job = arg;
  atomic_fetch_add(&job->ran[item], 1);
  if (item == job->cancel_at) return (int)TL_E_CANCELLED;
  if (item == job->fail_at) return 7;
  return 0;
}

static void check_map(const map_job *job, tl_status status, const tl_map_outcome *outcome) {
  size_t low = job->fail_at < job->cancel_at ? job->fail_at : job->cancel_at;
  if (low >= job->count) {
    if (status != TL_OK) finding("a clean map failed");
    return;
  }
  if (outcome->failed_item != low) finding("the map reported another item than the lowest");
  /* An item that is both returns TL_E_CANCELLED (map_item checks that first). */
  if (status != (low == job->cancel_at ? TL_E_CANCELLED : TL_E_LANE))
    finding("the map's status does not say what the lowest item did");
  for (size_t i = 0; i < low; i++)
    if (atomic_load(&job->ran[i]) != 1) finding("an item below the reported one did not run");
}

/* ---- loops on a pool ---- */

typedef struct loop_log {
  pthread_mutex_t lock;
  size_t n, begin[512], end[512];
} loop_log;

static void log_range(size_t begin, size_t end, int worker_index, void *arg) {
  (void)worker_index;
  loop_log *log = arg;
  pthread_mutex_lock(&log->lock);
  if (log->n < 512) log->begin[log->n] = begin, log->end[log->n] = end;
  log->n++;
  pthread_mutex_unlock(&log->lock);
}

static int by_begin(const void *a, const void *b) {
  size_t x = *(const size_t *)a, y = *(const size_t *)b;
  return x < y ? -1 : x > y;
}

static void run_loop(world *w, size_t count, size_t grain) {
  /* Only loops of a few hundred chunks are run (the chunks themselves are the check). */
  size_t chunks = grain == 0 ? 0 : count / grain + (count % grain != 0);
  if (chunks > 256) return;
  loop_log log = {.n = 0};
  pthread_mutex_init(&log.lock, NULL);
  tl_status status = tl_pool_parallel_for(w->pool, count, grain, log_range, &log);
  pthread_mutex_destroy(&log.lock);
  if (status != TL_OK) finding("a loop was refused");
  if (count == 0) {
    if (log.n != 0) finding("an empty loop ran a chunk");
    return;
  }
  if (log.n > 256) finding("a loop ran more chunks than it has");
  size_t pairs[256][2];
  for (size_t i = 0; i < log.n; i++) pairs[i][0] = log.begin[i], pairs[i][1] = log.end[i];
  qsort(pairs, log.n, sizeof pairs[0], by_begin);
  size_t at = 0;
  for (size_t i = 0; i < log.n; i++) {
    if (pairs[i][0] != at || pairs[i][1] <= pairs[i][0]) finding("loop chunks do not tile");
    if (grain > 0 && pairs[i][1] - pairs[i][0] > grain) finding("a chunk is longer than grain");
    at = pairs[i][1];
  }
  if (at != count) finding("loop chunks stop short");
}

/* ---- slices against Python's rules ---- */

typedef __int128 i128;

static i128 python_count(i128 n, i128 start, i128 stop, i128 step, i128 *first) {
  i128 ends[2] = {start, stop};
  for (int e = 0; e < 2; e++) {
    if (ends[e] < 0) {
      ends[e] += n;
      if (ends[e] < 0) ends[e] = step < 0 ? -1 : 0;
    } else if (ends[e] >= n) {
      ends[e] = step < 0 ? n - 1 : n;
    }
  }
  *first = ends[0];
  if (step < 0 && ends[1] < ends[0]) return (ends[0] - ends[1] - 1) / -step + 1;
  if (step > 0 && ends[0] < ends[1]) return (ends[1] - ends[0] - 1) / step + 1;
  return 0;
}

static void slice_step(program *p) {
  static double data[16];
  int64_t n = next_byte(p) % 17;
  tl_tensor vec;
  int64_t shape[1] = {n};
  if (tl_tensor_wrap_row_major(TL_F64, 1, shape, data, &vec) != TL_OK) finding("wrap refused");
  int64_t start = next_i64(p), stop = next_i64(p), step = next_i64(p);
  tl_tensor view;
  tl_status status = tl_tensor_slice(&vec, 0, start, stop, step, &view);
  if (step == 0) {
    if (status != TL_E_INVALID) finding("a slice of step 0 was taken");
    return;
  }
  i128 first, count = python_count(n, start, stop, step, &first);
  if (status != TL_OK || view.shape[0] != count) finding("a slice disagrees with Python's length");
  if (count > 0 && view.offset != first) finding("a slice starts elsewhere than Python's");
  int64_t lo, hi;
  if (count > 0 && (!tl_tensor_extent_range(&view, &lo, &hi) || lo < 0 || hi >= n))
    finding("a slice reaches outside its source");
}

/* ---- tensors of extreme shapes ---- */

static void tensor_step(program *p) {
  int rank = next_byte(p) % 4;
  int64_t shape[4] = {0, 0, 0, 0};
  for (int k = 0; k < rank; k++) {
    /* Mostly small extents (the tensor is allocated when valid), sometimes extreme. */
    uint8_t pick = next_byte(p);
    shape[k] = pick < 200 ? pick % 9 : next_i64(p);
  }
  tl_tensor t;
  tl_status status = tl_tensor_create(TL_F64, rank, shape, &t);
  if (status != TL_OK) {
    if (tl_last_message()[0] == '\0') finding("tensor refused without a message");
    return;
  }
  int64_t numel = tl_tensor_numel(&t);
  int64_t index[4] = {0, 0, 0, 0};
  for (int k = 0; k < rank; k++) index[k] = next_i64(p);
  tl_scalar value;
  status = tl_tensor_get(&t, index, &value);
  int inside = 1;
  for (int k = 0; k < rank; k++) inside &= index[k] >= 0 && index[k] < shape[k];
  if ((status == TL_OK) != inside) finding("tl_tensor_get's bounds check is wrong");
  tl_tensor view;
  (void)tl_tensor_select(&t, rank > 0 ? (int)(next_byte(p) % rank) : 0, next_i64(p), &view);
  int64_t new_shape[2] = {next_i64(p), next_i64(p)};
  status = tl_tensor_reshape_view(&t, 2, new_shape, &view);
  if (status == TL_OK && tl_tensor_numel(&view) != numel) finding("a reshape changed the count");
  tl_tensor_release(&t);
}

/* ---- views of empty tensors with extreme strides ---- */

/* A view call's answer: refused with a message, or a descriptor that validates and, when
 * `empty` (the source holds no element and the view keeps the empty axis), holds none. */
static void check_view(tl_status status, const tl_tensor *view, int empty, const char *call) {
  if (status != TL_OK) {
    if (tl_last_message()[0] == '\0') finding("an empty view was refused without a message");
    return;
  }
  if (tl_tensor_validate(view, "view") != TL_OK) {
    fprintf(stderr, "%s gave an invalid view\n", call);
    finding("a view of an empty tensor does not validate");
  }
  if (empty && tl_tensor_numel(view) != 0) {
    fprintf(stderr, "%s\n", call);
    finding("a view of an empty tensor holds elements");
  }
}

/* An empty tensor (one axis of extent 0) validates whatever its strides and offset: every
 * view of it is taken with extreme indices, steps and shapes (the class of aff9a60, where
 * select overflowed int64 on such a tensor). */
static void empty_view_step(program *p) {
  static double placeholder[1];
  int rank = 1 + next_byte(p) % 4;
  int zero_axis = next_byte(p) % rank;
  int64_t shape[4], strides[4];
  for (int k = 0; k < rank; k++) {
    uint8_t pick = next_byte(p);
    shape[k] = k == zero_axis ? 0 : pick < 128 ? pick % 5 : next_i64(p);
    strides[k] = next_i64(p);
  }
  tl_tensor t;
  if (tl_tensor_wrap(TL_F64, rank, shape, strides, placeholder, next_i64(p), &t) != TL_OK) {
    if (tl_last_message()[0] == '\0') finding("an empty wrap was refused without a message");
    return;
  }
  tl_tensor view;
  int axis = next_byte(p) % rank, other = next_byte(p) % rank;
  int64_t index = next_i64(p);
  check_view(tl_tensor_select(&t, axis, index, &view), &view, axis != zero_axis, "select");
  int64_t start = next_i64(p), stop = next_i64(p), step = next_i64(p);
  check_view(tl_tensor_slice(&t, axis, start, stop, step, &view), &view, 1, "slice");
  check_view(tl_tensor_transpose_view(&t, axis, other, &view), &view, 1, "transpose_view");
  check_view(tl_tensor_reverse_view(&t, &view), &view, 1, "reverse_view");
  check_view(tl_tensor_unsqueeze(&t, axis, &view), &view, 1, "unsqueeze");
  int perm[4] = {0, 1, 2, 3};
  perm[axis] = other;
  perm[other] = axis;
  check_view(tl_tensor_permute_view(&t, perm, &view), &view, 1, "permute_view");
  int64_t new_shape[2] = {next_i64(p), next_i64(p)};
  check_view(tl_tensor_reshape_view(&t, 2, new_shape, &view), &view, 1, "reshape_view");
  int64_t wide[5];
  for (int k = 0; k < rank; k++) wide[k] = shape[k]; /* src's axes lead */
  wide[rank] = next_i64(p);
  check_view(tl_tensor_broadcast_view(&t, rank + 1, wide, &view), &view, 1, "broadcast_view");
  int64_t lo, hi;
  (void)tl_tensor_extent_range(&t, &lo, &hi);
  (void)tl_tensor_self_overlap(&t);
  (void)tl_tensor_overlap(&t, &t);
  int64_t at[4] = {index, index, index, index};
  tl_scalar value;
  if (tl_tensor_get(&t, at, &value) == TL_OK) finding("tl_tensor_get read an empty tensor");
}

/* ---- sessions, tickets, maps on the slots ---- */

static tl_context *make_context(program *p) {
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = 1 + next_byte(p) % 2;
  config.scratch_limit = next_size(p);
  tl_context *ctx = NULL;
  if (tl_context_create(&config, &ctx) != TL_OK) return NULL;
  return ctx;
}

static void close_slot(world *w, slot *s) {
  if (s->session == NULL) return;
  if (tl_session_close(s->session) != TL_OK) finding("closing an open session failed");
  keep_closed(w, s->session);
  s->session = NULL;
}

static void destroy_slot(world *w, slot *s) {
  close_slot(w, s);
  if (s->ctx != NULL && tl_context_destroy(s->ctx) != TL_OK) finding("destroying a context failed");
  s->ctx = NULL;
}

static void stale_step(world *w, program *p) {
  if (w->closed_count == 0) return;
  tl_session *handle = w->closed[next_byte(p) % (w->closed_count < KEPT ? w->closed_count : KEPT)];
  tl_ticket ticket;
  if (tl_session_ticket(handle, &ticket) != TL_E_STALE) finding("a closed session made a ticket");
  if (tl_session_close(handle) != TL_E_STALE) finding("a closed session closed twice");
  if (tl_map(handle, 4, map_item, NULL, NULL) != TL_E_STALE) finding("a closed session ran a map");
}

static void ticket_step(world *w, program *p) {
  if (w->ticket_count == 0) return;
  const tl_ticket *ticket =
      &w->tickets[next_byte(p) % (w->ticket_count < KEPT ? w->ticket_count : KEPT)];
  int open = 0;
  for (int i = 0; i < SLOTS; i++) {
    tl_ticket now;
    if (w->slots[i].session != NULL && tl_session_ticket(w->slots[i].session, &now) == TL_OK &&
        now.session_serial == ticket->session_serial &&
        now.context_serial == ticket->context_serial)
      open = 1;
  }
  scratch_job job = {{next_size(p), next_size(p), next_size(p), next_size(p)}};
  tl_status status = enter_elsewhere(ticket, scratch_ticket, &job);
  if (!open && status != TL_E_STALE) finding("a ticket of a closed session was entered");
  if (open && status != TL_OK && status != TL_E_NOMEM) finding("a live ticket was refused");
}

static void map_step(slot *s, program *p) {
  if (s->session == NULL) return;
  map_job *job = calloc(1, sizeof *job);
  if (job == NULL) return;
  job->count = next_byte(p);
  job->fail_at = next_byte(p) % 128 + (next_byte(p) & 1 ? 0 : 512);
  job->cancel_at = next_byte(p) % 128 + (next_byte(p) & 1 ? 0 : 512);
  tl_map_outcome outcome;
  tl_status status = tl_map(s->session, job->count, map_item, job, &outcome);
  check_map(job, status, &outcome);
  free(job);
}

static void scratch_step(slot *s, program *p) {
  if (s->session == NULL) return;
  scratch_job job = {{next_size(p), next_size(p), next_size(p), next_size(p)}};
  (void)tl_map(s->session, 1 + next_byte(p) % 3, scratch_item, &job, NULL);
}

static void step(world *w, program *p) {
  uint8_t op = next_byte(p);
  slot *s = &w->slots[next_byte(p) % SLOTS];
  switch (op % 13) {
    case 0:
      if (s->ctx == NULL) s->ctx = make_context(p);
      break;
    case 1:
      destroy_slot(w, s);
      break;
    case 2:
      if (s->ctx != NULL && s->session == NULL &&
          tl_session_open(s->ctx, tl_owner_new(), TL_NOWAIT, &s->session) != TL_OK)
        s->session = NULL;
      break;
    case 3:
      close_slot(w, s);
      break;
    case 4:
      if (s->session != NULL &&
          tl_session_ticket(s->session, &w->tickets[w->ticket_count % KEPT]) == TL_OK)
        w->ticket_count++;
      break;
    case 5:
      ticket_step(w, p);
      break;
    case 6:
      stale_step(w, p);
      break;
    case 7:
      scratch_step(s, p);
      break;
    case 8:
      map_step(s, p);
      break;
    case 9:
      run_loop(w, next_size(p), next_size(p));
      break;
    case 10:
      slice_step(p);
      break;
    case 11:
      empty_view_step(p);
      break;
    default:
      tensor_step(p);
      break;
  }
}

static void *capped_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (size > CAP_BYTES) return NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  return aligned_alloc(align, (size + align - 1) / align * align);
}

static void capped_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static world w;
  if (w.pool == NULL) {
    const tl_allocator capped = {capped_alloc, capped_free, NULL};
    tl_allocator_set(&capped); /* before any tenlane object exists */
    tl_pool_config config;
    tl_pool_config_init(&config);
    config.workers = 2;
    if (tl_pool_create(&config, &w.pool) != TL_OK) abort();
  }
  program p = {data, size, 0};
  for (int i = 0; i < STEPS && p.at < p.size; i++) step(&w, &p);
  for (int i = 0; i < SLOTS; i++) destroy_slot(&w, &w.slots[i]);
  /* Handles and tickets stay from one input to the next: they must stay refused. */
  return 0;
}
