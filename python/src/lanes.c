/* python/src/lanes.c: batched calls on the session's lanes, without the GIL.
 *
 * map_einsum, map_svd and map_qrcp first take the items into a tuple of their own (GIL
 * held; einsum items become tuples too), so nothing another thread does to the caller's
 * list can drop an operand meanwhile. Then tl_map runs the items on the session's lanes
 * with the GIL released: each lane reads its item's numpy arrays in place (their fields
 * only, no Python call: tlpy_ndarray_tensor) and calls the same function a single call
 * does, on its lane's surface, into the item's own result slot. Reading on the lanes keeps
 * the serial part of a batch small (taking the tuple, then publishing the results).
 * Results are published only after the whole map succeeded, in item order. On a failure
 * the lowest failing item is raised (its class is the item's status, `item` its index);
 * an operand that cannot be read counts as its item failing. Batched operands must be
 * numpy arrays (wrap other buffers with numpy.asarray or tenlane.from_dlpack: no copy).
 * A small einsum result whose shape the spec gives beforehand is computed into a kept
 * block (blocks.c; each lane takes STASH at a time) instead of fresh memory. A uniform run's
 * results (uniform.c) lie instead in one slab per run, published as one Buffer whose rows
 * are the results' arrays (publish_run).
 *
 * A long map_einsum hands its items to the lanes in runs of consecutive items (one tl_map
 * item per run; run_length): each lane then reads operands that lie one after another in
 * memory, as a serial loop would, where single items dealt out in turn gave each lane every
 * other item's arrays and the prefetchers little to follow (two lanes then took 5-14% more
 * CPU per 16 x 16 environment update than one; with the items' memory shuffled, one lane
 * was as slow per item as two). A run stops at its first failing item, and the lowest
 * failing run's first failure is the lowest failing item: every run below it ran whole
 * (tl_map's order), and its own items before the failure succeeded.
 *
 * map(fn, n) runs Python callbacks on the lanes: each takes the GIL for its call, so they
 * run one at a time (bound by the GIL; useful for callbacks that release it themselves).
 *
 * Ctrl-C: every map watches for SIGINT (interrupt.c). An item that starts after the signal
 * returns TL_E_CANCELLED at once, so the lanes stop taking work within one item's time and
 * join; the driver, back with the GIL, runs Python's handler: a KeyboardInterrupt frees every
 * result slot (nothing is published) and leaves the session as it was. A handler that
 * returns lets the map go on: it runs again, and the items already done (`done`) return at
 * once, their results kept. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

enum { JOB_EINSUM, JOB_SVD, JOB_QRCP, JOB_PYTHON };

/* Blocks a lane took ahead, all of one size: a lane goes to the shared lists (and their
 * lock) once per STASH results instead of once per result. */
#define STASH 16
typedef struct lane_stash {
  size_t bytes;
  int count;
  void *block[STASH];
  /* The last operand shapes this lane asked tl_einsum_shape about, and its answer: the
   * items of a batch mostly share their shapes, so the spec is parsed once per lane. */
  int seen_n; /* operands; 0 before the first answer */
  int seen_ranks[TL_EINSUM_MAX_OPERANDS];
  int64_t seen_shapes[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK];
  int seen_out_rank;
  int64_t seen_out[TL_MAX_RANK];
  void *stack; /* a uniform run's results (uniform.c), stack_bytes long */
  size_t stack_bytes;
} lane_stash;

/* The results of a uniform run (uniform_items), one row per item: a kept block (`block`,
 * taken for `bytes`) or memory from tenlane's allocator (`owned`), until publish hands it
 * to a Buffer. */
struct run_slab {
  void *data;  /* NULL: the run made no slab */
  void *block; /* data itself when it is a block, else NULL */
  void *owned; /* what tenlane allocated for it (tl_tensor's `owned`), else NULL */
  size_t bytes;
};

/* Free a slab no Buffer took (a run that failed, a map that failed or was interrupted).
 * Any thread, GIL or not. */
static void slab_free(struct run_slab *slab) {
  if (slab->block) tlpy_block_give(slab->block, slab->bytes);
  if (slab->owned) {
    tl_tensor t;
    memset(&t, 0, sizeof t);
    t.owned = slab->owned;
    tl_tensor_release(&t);
  }
  memset(slab, 0, sizeof *slab);
}

/* The item a run of items stopped at, and why (noted on its lane, raised by run_map). */
typedef struct tlpy_run_fail {
  size_t item;
  int lane, code;
  char message[TL_MESSAGE_CAPACITY];
} tlpy_run_fail;

typedef struct lanes_job {
  int kind;
  const char *where;
  size_t items;
  PyObject *inputs; /* a tuple: per item a tuple of arrays (einsum) or one array */
  const char *spec;
  void **blocks;       /* einsum: the block an item's result lies in, or NULL */
  size_t *block_bytes; /* the bytes it was taken for */
  lane_stash *stash;   /* one per lane (lane_index < stashes) */
  int stashes;
  tl_tensor *einsum_out;
  tlpy_svd_item *svd_out;
  tlpy_qrcp_item *qrcp_out;
  int64_t **perms;       /* qrcp: each item's column order, raw memory until published */
  tlpy_fail **read_fail; /* per item: why its operands could not be read, or NULL */
  const tl_truncation *truncation;
  int max_lanes;            /* lanes that take items; 0 = all */
  size_t mapped;            /* items the map runs (those below an unreadable item tuple) */
  int published;            /* einsum: every result is in the list (the slots hold nothing) */
  size_t run_items;         /* consecutive items per tl_map item (1: one item each) */
  size_t runs;              /* tl_map items: runs of run_items (the last may be shorter) */
  tlpy_run_fail **run_fail; /* per run: its failing item, or NULL (run_items > 1) */
  tlpy_watch watch;         /* SIGINT since the map began */
  tlpy_uniform *uniform;    /* einsum: the items' shared layout (uniform.c), or NULL */
  unsigned char *done;      /* per item: 1 once it ran to its result (kept across a resume) */
  unsigned char *from_run;  /* einsum, per item: 1 when a uniform run made it (in its slab) */
  struct run_slab *slabs;   /* einsum with `uniform`: per run, the slab its results lie in */
  /* JOB_PYTHON */
  PyObject *fn, *results;
  size_t py_failed; /* lowest item whose callback raised (items when none) */
  PyObject *py_error;
  PyObject *py_interrupt; /* a KeyboardInterrupt raised inside a callback (inline lane) */
} lanes_job;

/* Read operand `obj` of `item` on a lane (no GIL: the job's tuple keeps it alive). The
 * operand's name for a message is formatted only when reading failed (then the read is
 * repeated with it): an snprintf per operand was a tenth of a small item's time. */
static tl_status read_operand(lanes_job *job, size_t item, Py_ssize_t j, PyObject *obj,
                              tl_tensor *t) {
  tlpy_fail fail;
  tl_status status = tlpy_ndarray_tensor(obj, 0, job->where, "operand", t, &fail);
  if (status == TL_OK) return status;
  char what[64];
  if (job->kind == JOB_EINSUM)
    snprintf(what, sizeof what, "item %zu operand %zd", item, j);
  else
    snprintf(what, sizeof what, "item %zu", item);
  status = tlpy_ndarray_tensor(obj, 0, job->where, what, t, &fail);
  if (status != TL_OK) {
    tlpy_fail *kept = PyMem_RawMalloc(sizeof *kept);
    if (kept) *kept = fail;
    PyMem_RawFree(job->read_fail[item]); /* from a run before a resume */
    job->read_fail[item] = kept;
  }
  return status;
}

/* The output shape of `job->spec` for these operands, from the library's parser
 * (tl_einsum_shape), remembered per lane for the next item of the same shapes. */
static int spec_shape(lanes_job *job, int lane, const tl_tensor *t, int n, int *rank,
                      int64_t *shape) {
  lane_stash *st = lane >= 0 && lane < job->stashes ? &job->stash[lane] : NULL;
  int same = st != NULL && st->seen_n == n;
  for (int j = 0; same && j < n; j++)
    same = st->seen_ranks[j] == t[j].rank &&
           memcmp(st->seen_shapes[j], t[j].shape, (size_t)t[j].rank * sizeof(int64_t)) == 0;
  if (!same) {
    int ranks[TL_EINSUM_MAX_OPERANDS];
    const int64_t *shapes[TL_EINSUM_MAX_OPERANDS];
    for (int j = 0; j < n; j++) ranks[j] = t[j].rank, shapes[j] = t[j].shape;
    if (tl_einsum_shape(job->spec, n, ranks, shapes, rank, shape) != TL_OK) return 0;
    if (st == NULL) return 1;
    st->seen_n = n;
    for (int j = 0; j < n; j++) {
      st->seen_ranks[j] = t[j].rank;
      memcpy(st->seen_shapes[j], t[j].shape, (size_t)t[j].rank * sizeof(int64_t));
    }
    st->seen_out_rank = *rank;
    memcpy(st->seen_out, shape, (size_t)*rank * sizeof(int64_t));
    return 1;
  }
  *rank = st->seen_out_rank;
  memcpy(shape, st->seen_out, (size_t)*rank * sizeof(int64_t));
  return 1;
}

/* The result's rank, shape and bytes for these operands, when they share operand 0's dtype
 * and the spec gives them an output shape; 0 otherwise (the plain call then decides, and
 * says why). */
static int result_shape(lanes_job *job, int lane, const tl_tensor *t, int n, int *rank,
                        int64_t *shape, size_t *bytes) {
  for (int j = 0; j < n; j++)
    if (t[j].dtype != t[0].dtype) return 0;
  if (!spec_shape(job, lane, t, n, rank, shape)) return 0;
  int64_t numel = 1;
  for (int k = 0; k < *rank; k++) {
    if (shape[k] > 0 && numel > INT64_MAX / shape[k]) return 0; /* far past any block */
    numel *= shape[k];
  }
  *bytes = (size_t)numel * tl_dtype_size(t[0].dtype);
  return *bytes > 0 && *bytes <= TLPY_BLOCK_MAX;
}

/* A block for `bytes` from the lane's stash, refilled (or emptied and refilled for another
 * size) from the shared lists; NULL when memory is short. */
static void *stash_take(lanes_job *job, int lane, size_t bytes) {
  if (lane < 0 || lane >= job->stashes) return tlpy_block_take(bytes);
  lane_stash *st = &job->stash[lane];
  if (st->count > 0 && st->bytes != bytes) {
    tlpy_block_give_many(st->bytes, st->block, st->count);
    st->count = 0;
  }
  if (st->count == 0) {
    st->bytes = bytes;
    st->count = tlpy_block_take_many(bytes, st->block, STASH);
  }
  return st->count > 0 ? st->block[--st->count] : NULL;
}

/* einsum into a kept block; 0 when done, -1 when the plain call must run instead (no block,
 * or tl_einsum_into refused: the plain call then says why, as a single call would). */
static int einsum_in_block(tl_exec *exec, lanes_job *job, size_t item, int lane, int n,
                           const tl_tensor *tensors, const tl_tensor *const *ptrs) {
  int64_t shape[TL_MAX_RANK];
  int rank;
  size_t bytes;
  if (!result_shape(job, lane, tensors, n, &rank, shape, &bytes)) return -1;
  void *block = stash_take(job, lane, bytes);
  tl_tensor out;
  if (!block) return -1;
  if (tl_tensor_wrap_row_major(tensors[0].dtype, rank, shape, block, &out) == TL_OK &&
      tl_einsum_into(exec, job->spec, n, ptrs, &out) == TL_OK) {
    job->einsum_out[item] = out;
    job->blocks[item] = block;
    job->block_bytes[item] = bytes;
    return 0;
  }
  tlpy_block_give(block, bytes);
  return -1;
}

static int einsum_item(tl_exec *exec, lanes_job *job, size_t item, int lane) {
  PyObject *ops = PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)item);
  Py_ssize_t n = PyTuple_GET_SIZE(ops);
  tl_tensor tensors[TL_EINSUM_MAX_OPERANDS];
  const tl_tensor *ptrs[TL_EINSUM_MAX_OPERANDS];
  if (n < 1 || n > TL_EINSUM_MAX_OPERANDS) {
    tlpy_fail *kept = PyMem_RawMalloc(sizeof *kept);
    if (kept) {
      kept->status = TL_E_INVALID;
      snprintf(kept->message, sizeof kept->message, "%s: item %zu has %zd operands; 1 to %d",
               job->where, item, n, TL_EINSUM_MAX_OPERANDS);
    }
    PyMem_RawFree(job->read_fail[item]);
    job->read_fail[item] = kept;
    return (int)TL_E_INVALID;
  }
  for (Py_ssize_t j = 0; j < n; j++) {
    tl_status status = read_operand(job, item, j, PyTuple_GET_ITEM(ops, j), &tensors[j]);
    if (status != TL_OK) return (int)status;
    ptrs[j] = &tensors[j];
  }
  if (einsum_in_block(exec, job, item, lane, (int)n, tensors, ptrs) == 0) return 0;
  return (int)tl_einsum(exec, job->spec, (int)n, ptrs, &job->einsum_out[item]);
}

static int factor_item(tl_exec *exec, lanes_job *job, size_t item) {
  tl_tensor a;
  tl_status status =
      read_operand(job, item, 0, PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)item), &a);
  if (status != TL_OK) return (int)status;
  if (job->kind == JOB_SVD) return (int)tlpy_svd_on(exec, &a, job->truncation, &job->svd_out[item]);
  int64_t columns = a.rank == 2 ? a.shape[1] : 0;
  if (!job->perms[item]) /* kept from a run before a resume */
    job->perms[item] = PyMem_RawMalloc((size_t)(columns > 0 ? columns : 1) * sizeof(int64_t));
  if (!job->perms[item]) return (int)TL_E_NOMEM;
  return (int)tlpy_qrcp_on(exec, &a, job->truncation, job->perms[item], &job->qrcp_out[item]);
}

static int run_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  lanes_job *job = arg;
  if (job->done[item]) return 0;                                 /* resumed: ran before */
  if (tlpy_watch_fired(&job->watch)) return (int)TL_E_CANCELLED; /* Ctrl-C */
  tl_exec_set_order(exec, TL_ORDER_ROW_MAJOR);                   /* as the session's own surface */
  int code = job->kind == JOB_EINSUM ? einsum_item(exec, job, item, lane_index)
                                     : factor_item(exec, job, item);
  if (code == 0) job->done[item] = 1;
  return code;
}

/* 1 when `obj` (operand j of `item`) is a numpy array of the same type, byte order, shape
 * and strides as `first` (item 0's, which tlpy_uniform_plan read as u->first[j]) that lies
 * `item` steps on (u->packed: anywhere, aligned to its elements as a single call asks): then
 * it reads as item 0's operand does. Its fields only, no Python call. */
static int same_layout(PyObject *first, PyObject *obj, const tlpy_uniform *u, int j, size_t item) {
  if (Py_TYPE(obj) != &PyArray_Type && !PyArray_Check(obj)) return 0;
  PyArrayObject *a = (PyArrayObject *)first, *b = (PyArrayObject *)obj;
  int nd = PyArray_NDIM(a);
  if (PyArray_NDIM(b) != nd || PyArray_TYPE(b) != PyArray_TYPE(a) || !PyArray_ISNOTSWAPPED(b))
    return 0;
  const npy_intp *da = PyArray_DIMS(a), *db = PyArray_DIMS(b);
  const npy_intp *sa = PyArray_STRIDES(a), *sb = PyArray_STRIDES(b);
  for (int k = 0; k < nd; k++) /* a loop: a memcmp call per operand cost more than the test */
    if (da[k] != db[k] || sa[k] != sb[k]) return 0;
  const size_t es = tl_dtype_size(u->first[j].dtype);
  if (u->packed) return (uintptr_t)PyArray_DATA(b) % (es > 8 ? 8 : es) == 0; /* operand.c's */
  return (const char *)PyArray_DATA(b) ==
         (const char *)u->first[j].data + (size_t)u->step[j] * es * item;
}

/* The items [first, end) (run `run`) as one einsum (uniform.c) when each is a member of the
 * map's layout, their results straight into one slab of memory (struct run_slab) that
 * publish hands to one Buffer, the base of every result of the run. Items it could not
 * finish are left undone (not `done`): the caller runs them one by one, which says which
 * item failed and why, as a single call would. */
static void uniform_items(tl_exec *exec, lanes_job *job, size_t run, size_t first, size_t end,
                          int lane) {
  const tlpy_uniform *u = job->uniform;
  PyObject *first_ops = PyTuple_GET_ITEM(job->inputs, 0);
  if (end - first < 2 || lane < 0 || lane >= job->stashes) return;
  if (tlpy_watch_fired(&job->watch)) return;
  lane_stash *st = &job->stash[lane];
  const size_t count = end - first, bytes = count * u->out_bytes;
  /* the intermediates (and a packed run's operands), from a 64-byte boundary */
  size_t need = count * u->item_bytes + 64;
  if (st->stack_bytes < need) {
    void *grown = PyMem_RawRealloc(st->stack, need);
    if (!grown) return;
    st->stack = grown;
    st->stack_bytes = need;
  }
  char *scratch = (char *)st->stack + (64 - (uintptr_t)st->stack % 64) % 64;
  for (size_t item = first; item < end; item++) {
    PyObject *ops = PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)item);
    if (job->done[item] || PyTuple_GET_SIZE(ops) != u->n) return;
    for (int j = 0; j < u->n; j++) {
      PyObject *op = PyTuple_GET_ITEM(ops, j);
      if (!same_layout(PyTuple_GET_ITEM(first_ops, j), op, u, j, item)) return;
      if (u->packed) /* dense: its span of elements from its first, in item 0's strides */
        memcpy(tlpy_uniform_packed(u, count, scratch, j, item - first),
               PyArray_DATA((PyArrayObject *)op),
               (size_t)u->step[j] * tl_dtype_size(u->first[0].dtype));
    }
  }
  struct run_slab slab = {NULL, NULL, NULL, bytes};
  if (u->out_rank + 1 > TL_MAX_RANK) return;
  if (bytes <= TLPY_BLOCK_MAX) { /* a kept block: no fresh pages for a small run */
    slab.data = slab.block = tlpy_block_take(bytes);
  } else {
    int64_t shape[TL_MAX_RANK + 1];
    tl_tensor t;
    shape[0] = (int64_t)count;
    memcpy(shape + 1, u->out_shape, (size_t)u->out_rank * sizeof(int64_t));
    if (tl_tensor_create_row_major(u->first[0].dtype, u->out_rank + 1, shape, &t) == TL_OK)
      slab.data = t.data, slab.owned = t.owned;
  }
  if (!slab.data) return;
  tl_exec_set_order(exec, TL_ORDER_ROW_MAJOR);
  if (tlpy_uniform_run(exec, u, first, count, slab.data, scratch) != TL_OK) {
    slab_free(&slab);
    return;
  }
  /* The items' slots in einsum_out and blocks stay untouched (from_run: publish makes each
   * result a view of the slab). Writing a tensor per item (over a kilobyte each,
   * TL_MAX_RANK shapes and strides) made a 20,000-item map fault in 22 MB of fresh slots. */
  job->slabs[run] = slab;
  for (size_t item = first; item < end; item++) {
    job->from_run[item] = 1;
    job->done[item] = 1;
  }
}

/* One run of consecutive items (run_items > 1): in order, stopping at the first failure,
 * which is kept for run_map (tl_map's own message would name the run, not the item). */
static int run_of_items(tl_exec *exec, size_t run, int lane_index, void *arg) {
  lanes_job *job = arg;
  size_t first = run * job->run_items;
  size_t end = job->mapped - first < job->run_items ? job->mapped : first + job->run_items;
  if (job->uniform) uniform_items(exec, job, run, first, end, lane_index);
  for (size_t item = first; item < end; item++) {
    int code = run_item(exec, item, lane_index, job);
    if (code == 0) continue;
    if (code != (int)TL_E_CANCELLED) {
      tlpy_run_fail *fail = PyMem_RawMalloc(sizeof *fail);
      if (fail) {
        fail->item = item;
        fail->lane = lane_index;
        fail->code = code;
        snprintf(fail->message, sizeof fail->message, "%s", tl_exec_message(exec));
      }
      PyMem_RawFree(job->run_fail[run]); /* from a run before a resume */
      job->run_fail[run] = fail;
    }
    return code;
  }
  return 0;
}

/* Items per run: 1 for short batches (every item its own, so the lanes stay balanced to
 * the end), up to RUN_MAX for long ones, keeping at least 32 runs per lane. */
#define RUN_MAX 16
static size_t run_length(size_t items, int lanes) {
  size_t per = items / ((size_t)(lanes > 0 ? lanes : 1) * 32);
  return per < 1 ? 1 : per > RUN_MAX ? RUN_MAX : per;
}

/* Items per run when the items share one layout (uniform.c; job->uniform set), else 0:
 * runs of up to UNIFORM_RUN_MAX items (at most UNIFORM_RUN_BYTES of results and scratch
 * each), at least 8 runs per lane so the lanes stay balanced. Reads items 0 and 1 only: every other
 * item is checked on its lane before its run is taken as one einsum. */
#define UNIFORM_RUN_MAX 1024
#define UNIFORM_RUN_BYTES ((size_t)4 << 20)
static size_t uniform_layout(lanes_job *job, size_t items, int lanes) {
  if (items < 16 || job->stashes <= 0) return 0;
  PyObject *first = PyTuple_GET_ITEM(job->inputs, 0), *second = PyTuple_GET_ITEM(job->inputs, 1);
  Py_ssize_t n = PyTuple_GET_SIZE(first);
  if (n < 2 || n > TL_EINSUM_MAX_OPERANDS || PyTuple_GET_SIZE(second) != n) return 0;
  tl_tensor a[TL_EINSUM_MAX_OPERANDS], b[TL_EINSUM_MAX_OPERANDS];
  tlpy_fail fail;
  for (Py_ssize_t j = 0; j < n; j++)
    if (tlpy_ndarray_tensor(PyTuple_GET_ITEM(first, j), 0, job->where, "operand", &a[j], &fail) !=
            TL_OK ||
        tlpy_ndarray_tensor(PyTuple_GET_ITEM(second, j), 0, job->where, "operand", &b[j], &fail) !=
            TL_OK)
      return 0;
  tlpy_uniform *u = PyMem_Malloc(sizeof *u);
  if (!u) return 0;
  /* Items cut from stacks (items 0 and 1 give the step; the last item must lie where it
   * says, as separate arrays can happen to lie at some step from each other); else items of
   * item 0's layout anywhere, copied into runs (packed). */
  int stacked = tlpy_uniform_plan(job->spec, (int)n, a, b, u);
  PyObject *last = PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)items - 1);
  for (Py_ssize_t j = 0; stacked && j < n; j++)
    stacked =
        PyTuple_GET_SIZE(last) == n &&
        same_layout(PyTuple_GET_ITEM(first, j), PyTuple_GET_ITEM(last, j), u, (int)j, items - 1);
  if (!stacked && !tlpy_uniform_plan(job->spec, (int)n, a, NULL, u)) {
    PyMem_Free(u);
    return 0;
  }
  size_t per = items / ((size_t)lanes * 8), cap = UNIFORM_RUN_BYTES / u->item_bytes;
  if (per > UNIFORM_RUN_MAX) per = UNIFORM_RUN_MAX;
  if (per > cap) per = cap;
  if (per < 2) { /* too few items per lane, or items too large for a run of two */
    PyMem_Free(u);
    return 0;
  }
  job->uniform = u;
  return per;
}

static void job_free(lanes_job *job) {
  /* Every result published: the arrays own what the slots held (a slot over a kept block
   * borrows it and owns nothing), so there is nothing per item to free. */
  size_t items = job->published ? 0 : job->items;
  for (size_t i = 0; i < items; i++) {
    if (job->perms) PyMem_RawFree(job->perms[i]);
    if (job->read_fail) PyMem_RawFree(job->read_fail[i]);
    /* Only an item that ran to its result holds one (a failing item keeps nothing): the
     * slots of the items never reached stay untouched, so a map stopped early (Ctrl-C, a
     * failure) does not fault in the pages of a long batch's slots to clear them. */
    if (!job->done || !job->done[i]) continue; /* no done flags: nothing ran */
    if (job->einsum_out && !job->from_run[i]) tl_tensor_release(&job->einsum_out[i]);
    if (job->svd_out) {
      tl_tensor_release(&job->svd_out[i].u);
      tl_tensor_release(&job->svd_out[i].s);
      tl_tensor_release(&job->svd_out[i].vt);
    }
    if (job->qrcp_out) {
      tl_tensor_release(&job->qrcp_out[i].q);
      tl_tensor_release(&job->qrcp_out[i].r);
    }
    if (job->blocks) tlpy_block_give_held(job->blocks[i], job->block_bytes[i]); /* unpublished */
  }
  for (int l = 0; l < job->stashes; l++) {
    tlpy_block_give_many(job->stash[l].bytes, job->stash[l].block, job->stash[l].count);
    PyMem_RawFree(job->stash[l].stack);
  }
  for (size_t r = 0; job->slabs && r < job->runs; r++) slab_free(&job->slabs[r]); /* unpublished */
  PyMem_Free(job->slabs);
  PyMem_Free(job->uniform);
  PyMem_Free(job->stash);
  PyMem_Free(job->blocks);
  PyMem_Free(job->block_bytes);
  PyMem_Free(job->einsum_out);
  PyMem_Free(job->svd_out);
  PyMem_Free(job->qrcp_out);
  PyMem_Free(job->perms);
  PyMem_Free(job->read_fail);
  PyMem_Free(job->done);
  PyMem_Free(job->from_run);
  if (job->run_fail) {
    for (size_t r = 0; r < job->runs; r++) PyMem_RawFree(job->run_fail[r]);
    PyMem_Free(job->run_fail);
  }
  Py_CLEAR(job->inputs);
}

/* Set `item` on the exception being raised. */
static void tag_item(Py_ssize_t item) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  PyObject *index = PyLong_FromSsize_t(item);
  if (value && index && PyObject_SetAttrString(value, "item", index) < 0) PyErr_Clear();
  Py_XDECREF(index);
  PyErr_Restore(type, value, tb);
}

/* Run tl_map over the first `count` items without the GIL; raise its failure. When SIGINT
 * stopped it, Python's handler runs here: its exception is raised, or, when it returns, the
 * map runs again (the items done return at once). */
static int run_map(tl_session *session, size_t count, tl_map_fn fn, lanes_job *job) {
  const char *where = job->where;
  tl_map_outcome outcome;
  tl_map_options options;
  tl_map_options_init(&options);
  options.max_lanes = job->max_lanes;
  tl_status status;
  for (;;) {
    Py_BEGIN_ALLOW_THREADS;
    status = tl_map_ex(session, &options, count, fn, job, &outcome);
    Py_END_ALLOW_THREADS;
    if (status == TL_OK) return 0;
    if (job->py_interrupt) { /* a callback on this (main) thread was interrupted */
      PyObject *e = job->py_interrupt;
      job->py_interrupt = NULL;
      PyErr_SetObject((PyObject *)Py_TYPE(e), e);
      Py_DECREF(e);
      return -1;
    }
    if (!tlpy_watch_fired(&job->watch)) break;
    if (PyErr_CheckSignals() < 0) return -1; /* KeyboardInterrupt, or the handler's error */
    tlpy_watch_rearm(&job->watch);
  }
  const char *map_said = outcome.message; /* what the map said went wrong */
  char run_text[TL_MESSAGE_CAPACITY + 96];
  if (status == TL_E_LANE && outcome.failed && job->run_fail) {
    /* a run failed: name its failing item, as a map of single items would */
    const tlpy_run_fail *run = job->run_fail[outcome.failed_item];
    if (run == NULL) { /* no memory was left to note it */
      tlpy_raise_message((tl_status)outcome.code, "a batched item failed (no memory to say which)",
                         -1);
      return -1;
    }
    outcome.failed_item = run->item;
    outcome.code = run->code;
    snprintf(run_text, sizeof run_text, "item %zu (lane %d) returned %s (%d): %s", run->item,
             run->lane, tl_status_name((tl_status)run->code), run->code, run->message);
    map_said = run_text;
  }
  if (status == TL_E_LANE && outcome.failed) {
    char message[2 * TL_MESSAGE_CAPACITY + 256];
    tl_status item_status = (tl_status)outcome.code;
    if (job->kind == JOB_PYTHON && job->py_error) {
      item_status = TL_E_LANE;
      PyObject *text = PyObject_Str(job->py_error);
      const char *said = text ? PyUnicode_AsUTF8(text) : NULL;
      if (!said) PyErr_Clear();
      snprintf(message, sizeof message, "%s: item %zu raised %s: %s", where, outcome.failed_item,
               Py_TYPE(job->py_error)->tp_name, said ? said : "?");
      Py_XDECREF(text);
    } else if (job->read_fail && job->read_fail[outcome.failed_item]) {
      /* its operands could not be read: that message says which and why */
      const tlpy_fail *fail = job->read_fail[outcome.failed_item];
      item_status = fail->status;
      snprintf(message, sizeof message, "%s", fail->message);
    } else {
      snprintf(message, sizeof message, "%s: %s", where, map_said);
    }
    tlpy_raise_message(item_status, message, (Py_ssize_t)outcome.failed_item);
  } else {
    char message[2 * TL_MESSAGE_CAPACITY + 256];
    snprintf(message, sizeof message, "%s: %s", where, map_said);
    tlpy_raise_message(status, message, -1);
  }
  return -1;
}

/* The items as a tuple of our own (nobody can change it while the lanes read it): for
 * einsum each item a tuple too. An item that is no sequence stops the tuple at *bad, its
 * exception fetched into pending (raised if no item below it fails). */
static int own_items(PyObject *items_obj, int tuples, lanes_job *job, size_t *bad,
                     PyObject *pending[3]) {
  job->inputs = PySequence_Tuple(items_obj);
  if (!job->inputs) return -1;
  job->items = (size_t)PyTuple_GET_SIZE(job->inputs);
  *bad = job->items;
  for (size_t i = 0; tuples && i < job->items; i++) {
    PyObject *item = PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)i);
    if (PyTuple_CheckExact(item)) continue;
    PyObject *copy = PySequence_Check(item) ? PySequence_Tuple(item) : NULL;
    if (!copy) {
      if (!PyErr_Occurred())
        tlpy_raise(TL_E_INVALID, "%s: item %zu is a %s, not a tuple of arrays", job->where, i,
                   Py_TYPE(item)->tp_name);
      tag_item((Py_ssize_t)i);
      PyErr_Fetch(&pending[0], &pending[1], &pending[2]);
      *bad = i;
      break;
    }
    PyTuple_SET_ITEM(job->inputs, (Py_ssize_t)i, copy); /* the tuple is ours alone */
    Py_DECREF(item);
  }
  return 0;
}

/* A uniform run's `count` results (its slab, which moves into one Buffer) as views, into the
 * list's slots from `at` on. 0, or -1 with an exception set (the slab is then freed or the
 * Buffer's, and slots left empty stay NULL). */
static int publish_run(lanes_job *job, struct run_slab *slab, size_t count, PyObject *list,
                       size_t at) {
  const tlpy_uniform *u = job->uniform;
  int64_t shape[TL_MAX_RANK + 1];
  tl_tensor stack;
  shape[0] = (int64_t)count;
  memcpy(shape + 1, u->out_shape, (size_t)u->out_rank * sizeof(int64_t));
  if (tl_tensor_wrap_row_major(u->first[0].dtype, u->out_rank + 1, shape, slab->data, &stack) !=
      TL_OK) {
    slab_free(slab);
    tlpy_raise_last(TL_E_INVALID);
    return -1;
  }
  stack.owned = slab->owned; /* the Buffer frees what tenlane allocated (NULL: a block) */
  PyObject *buffer = tlpy_result_slab(&stack, slab->block, slab->bytes);
  memset(slab, 0, sizeof *slab); /* the Buffer's now, or freed */
  if (!buffer) return -1;
  int rc = tlpy_result_views(buffer, 0, count, list, (Py_ssize_t)at);
  Py_DECREF(buffer); /* the views hold it */
  return rc;
}

/* The results list, in item order; the slots' memory moves into the arrays. */
static PyObject *publish(lanes_job *job) {
  size_t n = job->items;
  PyObject *list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    PyObject *r;
    if (job->kind == JOB_EINSUM && job->from_run[i]) {
      /* a uniform run's results: one Buffer over its slab, a view of it per item */
      size_t run = i / job->run_items, first = run * job->run_items;
      size_t end = job->mapped - first < job->run_items ? job->mapped : first + job->run_items;
      if (i != first || publish_run(job, &job->slabs[run], end - first, list, i) < 0) {
        if (i != first) tlpy_raise(TL_E_INVALID, "%s: run %zu half made", job->where, run);
        Py_CLEAR(list);
        break;
      }
      i = end - 1;
      continue;
    } else if (job->kind == JOB_EINSUM && job->blocks[i]) {
      r = tlpy_result_block(&job->einsum_out[i], job->blocks[i], job->block_bytes[i]);
      job->blocks[i] = NULL; /* the Buffer's now, or given back */
    } else if (job->kind == JOB_EINSUM) {
      r = tlpy_result(&job->einsum_out[i], NULL);
    } else if (job->kind == JOB_SVD) {
      r = tlpy_svd_tuple(&job->svd_out[i]);
    } else {
      npy_intp columns = 0;
      PyObject *a = PyTuple_GET_ITEM(job->inputs, (Py_ssize_t)i);
      if (PyArray_NDIM((PyArrayObject *)a) == 2) columns = PyArray_DIM((PyArrayObject *)a, 1);
      PyObject *perm = PyArray_SimpleNew(1, &columns, NPY_INT64);
      if (perm && columns > 0)
        memcpy(PyArray_DATA((PyArrayObject *)perm), job->perms[i], (size_t)columns * 8);
      job->qrcp_out[i].perm = perm;
      r = perm ? tlpy_qrcp_tuple(&job->qrcp_out[i]) : NULL;
      if (!perm) {
        tl_tensor_release(&job->qrcp_out[i].q);
        tl_tensor_release(&job->qrcp_out[i].r);
      }
    }
    if (!r)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, r);
  }
  return list;
}

/* The shared driver of map_einsum, map_svd and map_qrcp. */
static PyObject *run_batch(tlpy_session *self, PyObject *items_obj, lanes_job *job) {
  if (!tlpy_session_exec(self, job->where)) return NULL;
  tlpy_block_flush_held(); /* blocks of collected results, for this batch's lanes */
  size_t bad = 0;
  PyObject *pending[3] = {NULL, NULL, NULL}, *list = NULL;
  if (own_items(items_obj, job->kind == JOB_EINSUM, job, &bad, pending) < 0) goto done;
  size_t n = job->items + 1;
  job->read_fail = PyMem_Calloc(n, sizeof *job->read_fail);
  job->done = PyMem_Calloc(n, 1);
  if (job->kind == JOB_EINSUM) {
    /* not zeroed: a slot is read only once its item is done, and a uniform run's items
     * (from_run) never touch theirs, so a long map neither clears nor faults in a kilobyte
     * per item it does not use (glibc served the 21 MB of 20,000 slots from its heap, and
     * cleared them, once its mmap threshold had grown) */
    job->einsum_out = n <= PY_SSIZE_T_MAX / sizeof *job->einsum_out
                          ? PyMem_Malloc(n * sizeof *job->einsum_out)
                          : NULL;
    job->blocks = PyMem_Calloc(n, sizeof *job->blocks);
    job->block_bytes = PyMem_Calloc(n, sizeof *job->block_bytes);
    job->from_run = PyMem_Calloc(n, 1);
    job->stashes = self->context->threads > 0 ? self->context->threads : 1;
    job->stash = PyMem_Calloc((size_t)job->stashes, sizeof *job->stash);
    if (!job->blocks || !job->block_bytes || !job->from_run || !job->stash)
      PyMem_Free(job->einsum_out), job->einsum_out = NULL, job->stashes = 0;
  }
  if (job->kind == JOB_SVD) job->svd_out = PyMem_Calloc(n, sizeof *job->svd_out);
  if (job->kind == JOB_QRCP) {
    job->qrcp_out = PyMem_Calloc(n, sizeof *job->qrcp_out);
    job->perms = PyMem_Calloc(n, sizeof *job->perms);
  }
  if (!job->read_fail || !job->done ||
      (!job->einsum_out && !job->svd_out && !(job->qrcp_out && job->perms))) {
    PyErr_NoMemory();
    goto done;
  }
  job->mapped = bad;
  job->run_items = 1;
  if (job->kind == JOB_EINSUM) {
    int lanes = self->context->threads > 0 ? self->context->threads : 1;
    if (job->max_lanes > 0 && job->max_lanes < lanes) lanes = job->max_lanes;
    job->run_items = run_length(bad, lanes);
    size_t runs = uniform_layout(job, bad, lanes);
    if (runs > 1) job->run_items = runs;
  }
  job->runs = (bad + job->run_items - 1) / job->run_items;
  if (job->uniform && !(job->slabs = PyMem_Calloc(job->runs + 1, sizeof *job->slabs))) {
    PyMem_Free(job->uniform); /* no room to note the slabs: every item runs on its own */
    job->uniform = NULL;
  }
  tlpy_watch_begin(&job->watch);
  /* A SIGINT that came before the watch began (while the items were taken) is Python's to
   * raise now; from here on the lanes see any later one. */
  int rc = PyErr_CheckSignals();
  if (rc == 0 && job->run_items > 1) {
    job->run_fail = PyMem_Calloc(job->runs, sizeof *job->run_fail);
    rc = job->run_fail ? run_map(self->session, job->runs, run_of_items, job) : -1;
    if (!job->run_fail) PyErr_NoMemory();
  } else if (rc == 0 && bad > 0) {
    rc = run_map(self->session, bad, run_item, job);
  }
  tlpy_watch_end(&job->watch);
  if (rc < 0) goto done;
  if (bad < job->items) {
    PyErr_Restore(pending[0], pending[1], pending[2]);
    pending[0] = pending[1] = pending[2] = NULL;
    goto done;
  }
  list = publish(job);
  job->published = list != NULL && job->kind == JOB_EINSUM;
done:
  Py_XDECREF(pending[0]);
  Py_XDECREF(pending[1]);
  Py_XDECREF(pending[2]);
  job_free(job);
  return list;
}

static PyObject *session_map_einsum(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"spec", "operand_tuples", "max_lanes", NULL};
  const char *spec;
  PyObject *items;
  int max_lanes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sO|$i:map_einsum", keywords, &spec, &items,
                                   &max_lanes))
    return NULL;
  lanes_job job = {.kind = JOB_EINSUM,
                   .where = "tenlane.Session.map_einsum",
                   .spec = spec,
                   .max_lanes = max_lanes};
  return run_batch((tlpy_session *)self, items, &job);
}

static PyObject *factor_batch(PyObject *self, PyObject *args, PyObject *kwargs, int kind,
                              const char *where) {
  static char *keywords[] = {"arrays", "tol", "max_rank", "atol", "max_lanes", NULL};
  PyObject *items, *tol = NULL, *max_rank = NULL, *atol = NULL;
  int max_lanes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOi", keywords, &items, &tol, &max_rank,
                                   &atol, &max_lanes))
    return NULL;
  tl_truncation truncation;
  int any;
  if (tlpy_truncation(tol, atol, max_rank, where, &truncation, &any) < 0) return NULL;
  lanes_job job = {
      .kind = kind, .where = where, .truncation = any ? &truncation : NULL, .max_lanes = max_lanes};
  return run_batch((tlpy_session *)self, items, &job);
}

static PyObject *session_map_svd(PyObject *self, PyObject *args, PyObject *kwargs) {
  return factor_batch(self, args, kwargs, JOB_SVD, "tenlane.Session.map_svd");
}

static PyObject *session_map_qrcp(PyObject *self, PyObject *args, PyObject *kwargs) {
  return factor_batch(self, args, kwargs, JOB_QRCP, "tenlane.Session.map_qrcp");
}

/* ---- map(fn, n): Python callbacks ------------------------------------------------- */

static int python_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)exec;
  (void)lane_index;
  lanes_job *job = arg;
  if (job->done[item]) return 0;                                 /* resumed: ran before */
  if (tlpy_watch_fired(&job->watch)) return (int)TL_E_CANCELLED; /* Ctrl-C */
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(job->fn, "n", (Py_ssize_t)item);
  int rc = 0;
  if (r) {
    PyList_SetItem(job->results, (Py_ssize_t)item, r); /* steals r */
    job->done[item] = 1;
  } else if (PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
    /* Python's handler ran inside the callback (the inline lane is the main thread): the
     * map stops and raises it, as Ctrl-C anywhere else in the map does. */
    PyObject *value = tlpy_exception_take();
    if (!job->py_interrupt) job->py_interrupt = Py_XNewRef(value);
    Py_XDECREF(value);
    rc = (int)TL_E_CANCELLED;
  } else {
    PyObject *value = tlpy_exception_take();
    if (item < job->py_failed) {
      job->py_failed = item;
      Py_XSETREF(job->py_error, Py_XNewRef(value));
    }
    Py_XDECREF(value);
    rc = 1;
  }
  PyGILState_Release(gil);
  return rc;
}

static PyObject *session_map(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.map";
  static char *keywords[] = {"fn", "n", "max_lanes", NULL};
  PyObject *fn;
  Py_ssize_t n;
  int max_lanes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "On|$i:map", keywords, &fn, &n, &max_lanes))
    return NULL;
  tlpy_session *s = (tlpy_session *)self;
  if (!tlpy_session_exec(s, where)) return NULL;
  if (n < 0) return tlpy_raise(TL_E_INVALID, "%s: n = %zd is negative", where, n);
  if (!PyCallable_Check(fn)) return tlpy_raise(TL_E_INVALID, "%s: fn is not callable", where);
  lanes_job job = {
      .kind = JOB_PYTHON, .where = where, .fn = fn, .py_failed = (size_t)n, .max_lanes = max_lanes};
  job.results = PyList_New(n);
  job.done = PyMem_Calloc((size_t)n + 1, 1);
  if (!job.results || !job.done) {
    if (job.results && !job.done) PyErr_NoMemory();
    Py_XDECREF(job.results);
    PyMem_Free(job.done);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(job.results, i, Py_NewRef(Py_None));
  tlpy_watch_begin(&job.watch);
  int rc = PyErr_CheckSignals(); /* a SIGINT from before the watch began */
  if (rc == 0) rc = run_map(s->session, (size_t)n, python_item, &job);
  tlpy_watch_end(&job.watch);
  PyMem_Free(job.done);
  Py_XDECREF(job.py_interrupt);
  if (rc < 0) {
    if (job.py_error && !PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
      /* the callback's own exception becomes the cause */
      PyObject *type, *value, *tb;
      PyErr_Fetch(&type, &value, &tb);
      PyErr_NormalizeException(&type, &value, &tb);
      if (value) PyException_SetCause(value, Py_NewRef(job.py_error));
      PyErr_Restore(type, value, tb);
    }
    Py_XDECREF(job.py_error);
    Py_DECREF(job.results);
    return NULL;
  }
  Py_XDECREF(job.py_error);
  return job.results;
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define CAST(f) (PyCFunction)(void (*)(void))(f)

PyMethodDef tlpy_lanes_methods[] = {
    {"map_einsum", CAST(session_map_einsum), KW,
     "map_einsum(spec, operand_tuples, *, max_lanes=0) -> list: einsum(spec, *t) for each "
     "tuple t, run on the session's lanes (at most max_lanes of them; 0 = all) with the GIL "
     "released; results in item order, bit for bit those of the "
     "same calls made one by one; a result of at most 64 KiB reuses memory kept from collected "
     "results of its size (tenlane.cached_memory). A failure raises the lowest failing item's "
     "error (its "
     "`item` attribute) and returns nothing. Opening thread only; do not change the arrays "
     "from other threads while it runs."},
    {"map_svd", CAST(session_map_svd), KW,
     "map_svd(arrays, *, tol=None, max_rank=None, atol=None, max_lanes=0) -> list of (u, s, "
     "vt, discarded): svd of each array on the lanes, without the GIL; as map_einsum."},
    {"map_qrcp", CAST(session_map_qrcp), KW,
     "map_qrcp(arrays, *, tol=None, max_rank=None, atol=None, max_lanes=0) -> list of (q, r, "
     "perm, discarded): qrcp "
     "of each array on the lanes, without the GIL; as map_einsum."},
    {"map", CAST(session_map), KW,
     "map(fn, n, *, max_lanes=0) -> list: [fn(0), ..., fn(n - 1)] with the calls spread over "
     "the session's lanes. Bound by the GIL: each call holds it, so Python callbacks run one at a "
     "time, and on two or more lanes every item also pays a GIL hand-over between threads "
     "(tens of microseconds): pass max_lanes=1 for pure-Python fn; more lanes help only when fn "
     "releases the GIL, e.g. in a C extension (docs/python.md). fn must not use the "
     "session (PhaseActiveError or WrongThreadError). When calls raise, LaneError names the "
     "lowest failing item (`item`) and its exception is the __cause__."},
    {NULL, NULL, 0, NULL}};
