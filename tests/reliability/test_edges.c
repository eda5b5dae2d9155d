/* tests/reliability/test_edges.c: the second adversarial pass (issue 28, C side). Each case
 * is one hole that was found, driven with the extreme values that opened it: scratch sizes
 * next to SIZE_MAX, parallel loops of SIZE_MAX indices, messages built from the message
 * slot, a map whose item returns TL_E_CANCELLED, slices with steps next to +-2^63, a
 * ticket whose context's address is reused. Every case is bounded by the harness alarm and
 * ctest's TIMEOUT (a wrapped loop would otherwise spin for ever). */
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "rel_common.h"
#include "tenlane/alloc.h"
#include "tenlane/einsum.h"
#include "tenlane/map.h"
#include "tenlane/phase.h"
#include "tenlane/pool.h"
#include "th_fixtures.h"
#include "th_test.h"

/* How often `needle` occurs in `text`. */
static int occurrences(const char *text, const char *needle) {
  int count = 0;
  for (const char *at = strstr(text, needle); at != NULL; at = strstr(at + 1, needle)) count++;
  return count;
}

static void check_message_once(const char *message, const char *call) {
  if (strncmp(message, call, strlen(call)) != 0 || occurrences(message, call) != 1) {
    fprintf(stderr, "message \"%s\" should begin with \"%s\" and name it once\n", message, call);
    TH_CHECK(0);
  }
}

/* ---- item 1: scratch sizes near SIZE_MAX never wrap ---- */

typedef struct scratch_probe {
  atomic_int wrapped;   /* huge requests that returned TL_OK */
  atomic_int garbled;   /* refusals whose message is not "tl_exec_scratch: ..." once */
  atomic_int small_bad; /* small requests refused */
  atomic_int probes;
} scratch_probe;

/* One small request, then every size from SIZE_MAX - 200 up to SIZE_MAX and a few other
 * huge ones: all must be refused (none fits any machine), and a small one still works. */
static void probe_scratch(tl_exec *exec, scratch_probe *probe) {
  void *ptr = NULL;
  if (tl_exec_scratch(exec, 100, TL_SCRATCH_ITEM, &ptr) != TL_OK || ptr == NULL)
    atomic_fetch_add(&probe->small_bad, 1);
  size_t others[] = {SIZE_MAX / 2, SIZE_MAX / 2 + 1, SIZE_MAX - 4096, SIZE_MAX - 65536,
                     (size_t)1 << 62};
  for (size_t k = 0; k <= 200 + sizeof others / sizeof others[0]; k++) {
    size_t bytes = k <= 200 ? SIZE_MAX - k : others[k - 201];
    tl_status status =
        tl_exec_scratch(exec, bytes, k % 2 ? TL_SCRATCH_LANE : TL_SCRATCH_ITEM, &ptr);
    atomic_fetch_add(&probe->probes, 1);
    if (status == TL_OK) {
      atomic_fetch_add(&probe->wrapped, 1);
      continue;
    }
    const char *message = tl_last_message();
    if (strncmp(message, "tl_exec_scratch: ", 17) != 0 ||
        occurrences(message, "tl_exec_scratch") != 1 || strstr(message, "bytes") == NULL) {
      if (atomic_fetch_add(&probe->garbled, 1) == 0) fprintf(stderr, "message: %s\n", message);
    }
  }
  ptr = NULL;
  if (tl_exec_scratch(exec, 4096, TL_SCRATCH_ITEM, &ptr) != TL_OK || ptr == NULL)
    atomic_fetch_add(&probe->small_bad, 1);
  else
    memset(ptr, 0x5a, 4096);
}

static int scratch_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)item, (void)lane_index;
  probe_scratch(exec, arg);
  return 0;
}

static int scratch_ticket_fn(tl_exec *exec, void *arg) {
  probe_scratch(exec, arg);
  return 0;
}

typedef struct ticket_call {
  tl_ticket ticket;
  tl_ticket_fn fn;
  void *arg;
  tl_status status;
  int result;
} ticket_call;

static void *ticket_thread(void *arg) {
  ticket_call *call = arg;
  call->status = tl_ticket_enter(&call->ticket, call->fn, call->arg, &call->result);
  return NULL;
}

/* The machine's allocator refuses what no machine has (under ASan the default one would
 * end the process instead of returning NULL): every request above 1 TiB is NULL. */
static void *capped_alloc(size_t size, size_t align, void *user) {
  (void)user;
  if (size > ((size_t)1 << 40)) return NULL;
  if (align < sizeof(void *)) align = sizeof(void *);
  return aligned_alloc(align, (size + align - 1) & ~(align - 1));
}

static void capped_free(void *ptr, void *user) {
  (void)user;
  free(ptr);
}

static void edges_scratch_sizes_never_wrap(void) {
  const tl_allocator capped = {capped_alloc, capped_free, NULL};
  tl_allocator_set(&capped);
  const size_t limits[] = {0, SIZE_MAX, SIZE_MAX - 63, (size_t)1 << 40};
  for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++) {
    tl_context_config config;
    tl_context_config_init(&config);
    config.threads = 2;
    config.scratch_limit = limits[l];
    tl_context *ctx = NULL;
    TH_CHECK_OK(tl_context_create(&config, &ctx));
    tl_session *session = NULL;
    TH_CHECK_OK(tl_session_open(ctx, tl_owner_new(), TL_WAIT, &session));
    scratch_probe probe;
    memset(&probe, 0, sizeof probe);
    /* Lane surfaces (every lane of a map), then a ticket's surface from another thread. */
    TH_CHECK_OK(tl_map(session, 8, scratch_item, &probe, NULL));
    ticket_call call = {.fn = scratch_ticket_fn, .arg = &probe};
    TH_CHECK_OK(tl_session_ticket(session, &call.ticket));
    pthread_t thread;
    TH_CHECK(pthread_create(&thread, NULL, ticket_thread, &call) == 0);
    pthread_join(thread, NULL);
    TH_CHECK_OK(call.status);
    if (atomic_load(&probe.wrapped) != 0)
      fprintf(stderr, "limit %zu: %d of %d huge requests returned TL_OK\n", limits[l],
              atomic_load(&probe.wrapped), atomic_load(&probe.probes));
    TH_CHECK(atomic_load(&probe.probes) == 9 * 206);
    TH_CHECK(atomic_load(&probe.wrapped) == 0);
    TH_CHECK(atomic_load(&probe.garbled) == 0);
    TH_CHECK(atomic_load(&probe.small_bad) == 0);
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(ctx));
  }
  tl_allocator_set(NULL);
}

/* ---- item 2: parallel loops over huge counts ---- */

#define MAX_CHUNKS 4096

typedef struct chunk_log {
  pthread_mutex_t lock;
  size_t count;
  size_t begin[MAX_CHUNKS], end[MAX_CHUNKS];
  int overflow;
} chunk_log;

static void log_chunk(size_t begin, size_t end, int worker_index, void *arg) {
  (void)worker_index;
  chunk_log *log = arg;
  pthread_mutex_lock(&log->lock);
  if (log->count < MAX_CHUNKS) {
    log->begin[log->count] = begin;
    log->end[log->count] = end;
    log->count++;
  } else {
    log->overflow = 1;
  }
  pthread_mutex_unlock(&log->lock);
}

static int by_begin(const void *a, const void *b) {
  const size_t *x = a, *y = b;
  return *x < *y ? -1 : *x > *y;
}

/* The logged chunks are non-empty, at most `grain` long (when grain > 0), and tile
 * [0, count) exactly. */
static int chunks_tile(chunk_log *log, size_t count, size_t grain) {
  if (log->overflow || log->count == 0) return 0;
  size_t pairs[MAX_CHUNKS][2];
  for (size_t i = 0; i < log->count; i++) pairs[i][0] = log->begin[i], pairs[i][1] = log->end[i];
  qsort(pairs, log->count, sizeof pairs[0], by_begin);
  size_t at = 0;
  for (size_t i = 0; i < log->count; i++) {
    if (pairs[i][0] != at || pairs[i][1] <= pairs[i][0]) return 0;
    if (grain > 0 && pairs[i][1] - pairs[i][0] > grain) return 0;
    at = pairs[i][1];
  }
  return at == count;
}

static const size_t huge_counts[] = {SIZE_MAX,     SIZE_MAX - 1, SIZE_MAX - 3,
                                     SIZE_MAX - 6, SIZE_MAX / 2, (SIZE_MAX / 2) + 2};

/* The grains worth trying for `count`: 0 (automatic) and large ones (so the loop has at most
 * a few thousand chunks). */
static size_t huge_grains(size_t count, size_t *grains) {
  size_t n = 0;
  grains[n++] = 0;
  grains[n++] = (size_t)1 << 63;
  grains[n++] = ((size_t)1 << 63) + 1;
  grains[n++] = SIZE_MAX;
  grains[n++] = SIZE_MAX - 1;
  grains[n++] = count;
  grains[n++] = count - 1;
  grains[n++] = count / 3;
  grains[n++] = count / 1000 + 7;
  return n;
}

static void run_huge_loops(tl_status (*loop)(void *ctx, size_t count, size_t grain,
                                             tl_pool_range_fn fn, void *arg),
                           void *ctx, const char *what) {
  chunk_log *log = calloc(1, sizeof *log);
  pthread_mutex_init(&log->lock, NULL);
  int bad = 0;
  for (size_t c = 0; c < sizeof huge_counts / sizeof huge_counts[0]; c++) {
    size_t grains[16];
    size_t n = huge_grains(huge_counts[c], grains);
    for (size_t g = 0; g < n; g++) {
      log->count = 0;
      log->overflow = 0;
      tl_status status = loop(ctx, huge_counts[c], grains[g], log_chunk, log);
      if (status != TL_OK || !chunks_tile(log, huge_counts[c], grains[g])) {
        fprintf(stderr, "%s: count %zu grain %zu: %s, %zu chunks\n", what, huge_counts[c],
                grains[g], tl_status_name(status), log->count);
        bad++;
      }
    }
  }
  pthread_mutex_destroy(&log->lock);
  free(log);
  TH_CHECK(bad == 0);
}

static tl_status pool_loop(void *ctx, size_t count, size_t grain, tl_pool_range_fn fn, void *arg) {
  return tl_pool_parallel_for(ctx, count, grain, fn, arg);
}

static tl_status exec_loop(void *ctx, size_t count, size_t grain, tl_pool_range_fn fn, void *arg) {
  return tl__exec_parallel_for(ctx, count, grain, fn, arg);
}

static int exec_loop_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)item, (void)lane_index, (void)arg;
  run_huge_loops(exec_loop, exec, "lane surface");
  return 0;
}

static void edges_parallel_for_huge_counts(void) {
  for (int workers = 1; workers <= 3; workers++) {
    tl_pool_config config;
    tl_pool_config_init(&config);
    config.workers = workers;
    tl_pool *pool = NULL;
    TH_CHECK_OK(tl_pool_create(&config, &pool));
    run_huge_loops(pool_loop, pool, "tl_pool_parallel_for");
    tl_pool_destroy(pool);
  }
  /* The serial split a one-thread surface takes (and a root surface's pool path). */
  th_held held;
  th_held_open(&held, 2);
  run_huge_loops(exec_loop, held.exec, "root surface");
  TH_CHECK_OK(tl_map(held.session, 1, exec_loop_item, NULL, NULL));
  th_held_close(&held);
}

/* ---- item 5: messages built from the message slot read right ---- */

static void edges_messages_are_not_garbled(void) {
  double data[6] = {0};
  tl_tensor t;
  int64_t shape6[1] = {6};
  TH_CHECK_OK(tl_tensor_wrap_row_major(TL_F64, 1, shape6, data, &t));
  t.shape[0] = -3;
  int64_t index[1] = {0};
  tl_scalar value;
  TH_CHECK_STATUS(tl_tensor_get(&t, index, &value), TL_E_SHAPE);
  check_message_once(tl_last_message(), "tl_tensor_get");
  TH_CHECK(strstr(tl_last_message(), "-3") != NULL);
  TH_CHECK_STATUS(tl_tensor_set(&t, index, tl_scalar_real(1.0)), TL_E_SHAPE);
  check_message_once(tl_last_message(), "tl_tensor_set");
  TH_CHECK(strstr(tl_last_message(), "-3") != NULL);

  tl_tensor owned;
  TH_CHECK_OK(tl_tensor_create(TL_F64, 1, shape6, &owned));
  int64_t shape7[2] = {7, 1};
  tl_tensor out;
  TH_CHECK_STATUS(tl_tensor_reshape_move(&owned, 2, shape7, &out), TL_E_SHAPE);
  check_message_once(tl_last_message(), "tl_tensor_reshape_move");
  TH_CHECK(strstr(tl_last_message(), "has 7 elements, src has 6") != NULL);
  tl_tensor_release(&owned);
}

static int scratch_message_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)item, (void)lane_index;
  char *copy = arg;
  void *ptr;
  if (tl_exec_scratch(exec, SIZE_MAX - 8, TL_SCRATCH_ITEM, &ptr) == TL_OK) return 1;
  snprintf(copy, TL_MESSAGE_CAPACITY, "%s", tl_last_message());
  return 0;
}

static void edges_scratch_message_names_call_once(void) {
  th_held held;
  th_held_open(&held, 1);
  char message[TL_MESSAGE_CAPACITY] = "";
  TH_CHECK_OK(tl_map(held.session, 1, scratch_message_item, message, NULL));
  check_message_once(message, "tl_exec_scratch");
  TH_CHECK(strstr(message, "18446744073709551607 bytes") != NULL);
  th_held_close(&held);
}

/* ---- item 4: a cancelled item keeps the map's promise ---- */

#define MAP_ITEMS 4000

typedef struct cancel_job {
  atomic_int ran[MAP_ITEMS];
  size_t cancel_at, fail_at;
} cancel_job;

static int cancel_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec, (void)lane_index;
  cancel_job *job = arg;
  atomic_fetch_add(&job->ran[item], 1);
  volatile unsigned spin = 0;
  for (unsigned k = 0; k < 200; k++) spin = spin + k; /* lanes interleave */
  (void)spin;
  if (item == job->cancel_at) return (int)TL_E_CANCELLED;
  if (item == job->fail_at) return 99;
  return 0;
}

static void edges_map_cancelled_item_keeps_promise(void) {
  for (int budget = 2; budget <= 3; budget++) {
    th_held held;
    th_held_open(&held, budget);
    cancel_job *job = calloc(1, sizeof *job);
    for (int round = 0; round < 20; round++) {
      for (int i = 0; i < MAP_ITEMS; i++) atomic_store(&job->ran[i], 0);
      /* Even rounds: the cancel below the failure; odd rounds: the failure below it. */
      job->cancel_at = round % 2 ? 3000 : 1000;
      job->fail_at = round % 2 ? 1000 : 3000;
      tl_map_outcome outcome;
      tl_status status = tl_map(held.session, MAP_ITEMS, cancel_item, job, &outcome);
      size_t low = round % 2 ? job->fail_at : job->cancel_at;
      int missing = 0;
      for (size_t i = 0; i < outcome.failed_item && i < MAP_ITEMS; i++)
        missing += atomic_load(&job->ran[i]) != 1;
      if (missing != 0 || outcome.failed_item != low)
        fprintf(stderr, "budget %d round %d: %s, item %zu reported, %d items below it not run\n",
                budget, round, tl_status_name(status), outcome.failed_item, missing);
      TH_CHECK(missing == 0);
      TH_CHECK(outcome.failed == 1 && outcome.failed_item == low);
      if (round % 2 == 0) {
        TH_CHECK(status == TL_E_CANCELLED && outcome.status == TL_E_CANCELLED);
        TH_CHECK(outcome.code == (int)TL_E_CANCELLED);
        TH_CHECK(strstr(outcome.message, "cancelled at item 1000") != NULL);
        check_message_once(tl_last_message(), "tl_map");
        TH_CHECK(strstr(tl_last_message(), "item 1000") != NULL);
      } else {
        TH_CHECK(status == TL_E_LANE && outcome.code == 99);
        TH_CHECK(strstr(outcome.message, "item 1000") != NULL);
      }
    }
    free(job);
    th_held_close(&held);
  }
}

/* ---- item 3: slices with steps near +-2^63 follow Python's rules ---- */

typedef __int128 i128;

/* Python's slice over n elements, literally (PySlice_AdjustIndices with unbounded ints),
 * in 128 bits: nothing can overflow. *first is the first index when *count > 0. */
static void python_slice(i128 n, i128 start, i128 stop, i128 step, i128 *first, i128 *count) {
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
  *count = 0;
  if (step < 0 && ends[1] < ends[0]) *count = (ends[0] - ends[1] - 1) / -step + 1;
  if (step > 0 && ends[0] < ends[1]) *count = (ends[1] - ends[0] - 1) / step + 1;
}

/* The same by walking the indices one by one (a brute force for the formula above). */
static i128 walk_slice(i128 n, i128 first, i128 stop_raw, i128 step) {
  i128 stop = stop_raw;
  if (stop < 0) stop += n;
  if (stop < 0) stop = step < 0 ? -1 : 0;
  if (stop >= n) stop = step < 0 ? n - 1 : n;
  i128 count = 0;
  for (i128 i = first; step > 0 ? i < stop : i > stop; i += step) {
    if (i < 0 || i >= n) break;
    count++;
  }
  return count;
}

static void edges_slice_extreme_steps_follow_python(void) {
  const int64_t values[] = {INT64_MIN,
                            INT64_MIN + 1,
                            INT64_MIN + 2,
                            INT64_MIN + 9,
                            -((int64_t)1 << 62),
                            -12,
                            -11,
                            -10,
                            -9,
                            -3,
                            -2,
                            -1,
                            0,
                            1,
                            2,
                            3,
                            9,
                            10,
                            11,
                            12,
                            (int64_t)1 << 62,
                            INT64_MAX - 9,
                            INT64_MAX - 1,
                            INT64_MAX};
  const size_t nv = sizeof values / sizeof values[0];
  const int64_t extents[] = {0, 1, 10};
  static double data[10];
  int wrong = 0, cases = 0;
  for (size_t e = 0; e < sizeof extents / sizeof extents[0]; e++) {
    for (int order = 0; order < 2; order++) {
      int64_t shape[2] = {extents[e], 3};
      tl_tensor src;
      int64_t strides[2] = {order ? 3 : 1, order ? 1 : 10};
      TH_CHECK_OK(tl_tensor_wrap(TL_F64, 2, shape, strides, data, 0, &src));
      src.shape[1] = 1; /* the data holds 10 f64: keep axis 1 to one element */
      for (size_t a = 0; a < nv; a++)
        for (size_t b = 0; b < nv; b++)
          for (size_t c = 0; c < nv; c++) {
            int64_t start = values[a], stop = values[b], step = values[c];
            if (step == 0) continue;
            cases++;
            i128 first, count;
            python_slice(extents[e], start, stop, step, &first, &count);
            if (count != walk_slice(extents[e], first, stop, step)) wrong++;
            tl_tensor view;
            tl_status status = tl_tensor_slice(&src, 0, start, stop, step, &view);
            int ok = status == TL_OK && (i128)view.shape[0] == count;
            if (ok && count > 0) ok = (i128)view.offset == first * strides[0];
            if (ok && count > 1) ok = (i128)view.strides[0] == (i128)step * strides[0];
            if (ok) ok = tl_tensor_validate(&view, "view") == TL_OK;
            if (!ok) {
              if (wrong < 10)
                fprintf(stderr,
                        "n %lld slice(%lld, %lld, %lld): %s extent %lld, Python gives %lld\n",
                        (long long)extents[e], (long long)start, (long long)stop, (long long)step,
                        tl_status_name(status), (long long)view.shape[0], (long long)count);
              wrong++;
            }
          }
    }
  }
  if (wrong != 0) fprintf(stderr, "%d of %d slices wrong\n", wrong, cases);
  TH_CHECK(cases > 30000);
  TH_CHECK(wrong == 0);
  /* The example of the issue, by hand: 10 elements, start 0, stop INT64_MIN, step 3 is
   * empty (stop counts from the end and clamps to 0); with step -3 it is empty as well. */
  tl_tensor vec = th_vec_f64(data, 10), view;
  TH_CHECK_OK(tl_tensor_slice(&vec, 0, 0, INT64_MIN, 3, &view));
  TH_CHECK(view.shape[0] == 0);
  TH_CHECK_OK(tl_tensor_slice(&vec, 0, INT64_MAX, INT64_MIN, INT64_MIN, &view));
  TH_CHECK(view.shape[0] == 1 && view.offset == 9);
  TH_CHECK_OK(tl_tensor_slice(&vec, 0, INT64_MIN, INT64_MAX, INT64_MAX, &view));
  TH_CHECK(view.shape[0] == 1 && view.offset == 0);
}

/* ---- item 9: a ticket never outlives its context's address ---- */

/* An allocator that hands a freed block back to the next request of the same size and
 * alignment (last freed, first reused), as jemalloc and many pools do. */
#define REUSE_SLOTS 512

static struct {
  pthread_mutex_t lock;
  int count;
  void *ptr[REUSE_SLOTS];
  size_t size[REUSE_SLOTS], align[REUSE_SLOTS];
} reuse = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}, {0}};

typedef struct reuse_header {
  size_t size, align;
} reuse_header;

static void *reuse_alloc(size_t size, size_t align, void *user) {
  (void)user;
  pthread_mutex_lock(&reuse.lock);
  for (int i = reuse.count - 1; i >= 0; i--) {
    if (reuse.size[i] == size && reuse.align[i] == align) {
      void *ptr = reuse.ptr[i];
      reuse.count--;
      reuse.ptr[i] = reuse.ptr[reuse.count];
      reuse.size[i] = reuse.size[reuse.count];
      reuse.align[i] = reuse.align[reuse.count];
      pthread_mutex_unlock(&reuse.lock);
      return ptr;
    }
  }
  pthread_mutex_unlock(&reuse.lock);
  /* The block's size and alignment sit in a header just before it. */
  size_t lead = align < sizeof(reuse_header) ? sizeof(reuse_header) : align;
  if (lead < sizeof(void *)) lead = sizeof(void *);
  size_t total = lead + size;
  unsigned char *base = aligned_alloc(lead, (total + lead - 1) / lead * lead);
  if (base == NULL) return NULL;
  reuse_header header = {size, align};
  memcpy(base + lead - sizeof header, &header, sizeof header);
  return base + lead;
}

static void reuse_free(void *ptr, void *user) {
  (void)user;
  reuse_header header;
  memcpy(&header, (unsigned char *)ptr - sizeof header, sizeof header);
  pthread_mutex_lock(&reuse.lock);
  if (reuse.count < REUSE_SLOTS) {
    reuse.ptr[reuse.count] = ptr;
    reuse.size[reuse.count] = header.size;
    reuse.align[reuse.count] = header.align;
    reuse.count++;
    ptr = NULL;
  }
  pthread_mutex_unlock(&reuse.lock);
  if (ptr != NULL) {
    size_t lead = header.align < sizeof(reuse_header) ? sizeof(reuse_header) : header.align;
    if (lead < sizeof(void *)) lead = sizeof(void *);
    free((unsigned char *)ptr - lead);
  }
}

static void reuse_drain(void) {
  for (int i = 0; i < reuse.count; i++) {
    size_t lead = reuse.align[i] < sizeof(reuse_header) ? sizeof(reuse_header) : reuse.align[i];
    if (lead < sizeof(void *)) lead = sizeof(void *);
    free((unsigned char *)reuse.ptr[i] - lead);
  }
  reuse.count = 0;
}

static int mark_ran(tl_exec *exec, void *arg) {
  (void)exec;
  atomic_fetch_add((atomic_int *)arg, 1);
  return 0;
}

static void edges_ticket_refused_on_reused_context_address(void) {
  const tl_allocator reusing = {reuse_alloc, reuse_free, NULL};
  tl_allocator_set(&reusing);
  for (int threads = 1; threads <= 2; threads++) {
    tl_context *first = th_make_context(threads);
    tl_session *session = NULL;
    TH_CHECK_OK(tl_session_open(first, tl_owner_new(), TL_WAIT, &session));
    atomic_int ran = 0;
    ticket_call old = {.fn = mark_ran, .arg = &ran};
    TH_CHECK_OK(tl_session_ticket(session, &old.ticket));
    TH_CHECK(old.ticket.context_serial == tl_context_serial(first));
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(first));
    /* Another owner's context, at the same address (the allocator reuses the block). */
    tl_context *second = th_make_context(threads);
    if (second != first) fprintf(stderr, "the allocator did not reuse the context's block\n");
    TH_CHECK(second == first);
    TH_CHECK(tl_context_serial(second) != old.ticket.context_serial);
    TH_CHECK_OK(tl_session_open(second, tl_owner_new(), TL_WAIT, &session));
    pthread_t thread;
    TH_CHECK(pthread_create(&thread, NULL, ticket_thread, &old) == 0);
    pthread_join(thread, NULL);
    TH_CHECK_STATUS(old.status, TL_E_STALE);
    TH_CHECK(atomic_load(&ran) == 0);
    /* The new session's own ticket works. */
    ticket_call fresh = {.fn = mark_ran, .arg = &ran};
    TH_CHECK_OK(tl_session_ticket(session, &fresh.ticket));
    TH_CHECK(pthread_create(&thread, NULL, ticket_thread, &fresh) == 0);
    pthread_join(thread, NULL);
    TH_CHECK_OK(fresh.status);
    TH_CHECK(atomic_load(&ran) == 1);
    TH_CHECK_OK(tl_session_close(session));
    TH_CHECK_OK(tl_context_destroy(second));
  }
  tl_allocator_set(NULL);
  reuse_drain();
}

/* ---- item 10: documented limits, and a 33-operand einsum says why ---- */

static void edges_limits_are_documented_and_said(void) {
  TH_CHECK(TL_THREADS_MAX == 4096);
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = TL_THREADS_MAX + 1;
  tl_context *ctx = NULL;
  TH_CHECK_STATUS(tl_context_create(&config, &ctx), TL_E_INVALID);
  TH_CHECK(strstr(tl_last_message(), "TL_THREADS_MAX") != NULL);
  /* context.h itself states the cap. */
  FILE *header = fopen(TL_SOURCE_DIR "/include/tenlane/context.h", "r");
  TH_CHECK(header != NULL);
  char text[16384];
  size_t length = fread(text, 1, sizeof text - 1, header);
  fclose(header);
  text[length] = '\0';
  TH_CHECK(strstr(text, "#define TL_THREADS_MAX 4096") != NULL);
  TH_CHECK(strstr(text, "at most TL_THREADS_MAX") != NULL);

  th_held held;
  th_held_open(&held, 1);
  enum { N = TL_EINSUM_MAX_OPERANDS + 1 };
  double one = 1.0;
  tl_tensor vec = th_vec_f64(&one, 1);
  const tl_tensor *operands[N];
  /* Terms of eight labels: the spec alone is longer than a message. */
  char spec[9 * N + 16] = "";
  for (int i = 0; i < N; i++) {
    operands[i] = &vec;
    strcat(spec, i ? ",abcdefgh" : "abcdefgh");
  }
  strcat(spec, "->a");
  tl_tensor out;
  TH_CHECK_STATUS(tl_einsum(held.exec, spec, N, operands, &out), TL_E_INVALID);
  const char *message = tl_last_message();
  if (strstr(message, "n_operands is 33, expected 1..32") == NULL ||
      strlen(message) >= TL_MESSAGE_CAPACITY - 1) {
    fprintf(stderr, "message: %s\n", message);
    TH_CHECK(0);
  }
  th_held_close(&held);
}

TH_TEST_MAIN(TH_CASE(edges_ticket_refused_on_reused_context_address),
             TH_CASE(edges_limits_are_documented_and_said),
             TH_CASE(edges_slice_extreme_steps_follow_python),
             TH_CASE(edges_map_cancelled_item_keeps_promise),
             TH_CASE(edges_scratch_sizes_never_wrap), TH_CASE(edges_parallel_for_huge_counts),
             TH_CASE(edges_messages_are_not_garbled),
             TH_CASE(edges_scratch_message_names_call_once))
