/* python/src/tlpy.h: what the files of the `tenlane` extension module share.
 *
 * The module is one shared object, tenlane.cpython-*.so, linked against libtenlane.a of
 * the CMake build. Each file holds one concept: errors.c (the exception classes),
 * operand.c (Python objects in: numpy arrays, buffers and DLPack producers as borrowed
 * tl_tensor views), result.c (tenlane tensors out: numpy arrays over tenlane memory),
 * blocks.c (small results' memory, kept for the next result of its size),
 * dlpack.c (from_dlpack and the Buffer's DLPack export), context.c, session.c (the held
 * session and its object), ops.c (einsum and the core routes), linalg.c, lanes.c (the
 * map_* calls on lanes without the GIL) and module.c (the module table).
 *
 * Thread rules of the Python layer: every call holds the GIL while it reads its
 * arguments and builds its results. A numerical call on a session runs on the thread
 * that opened the session; large single calls and every map_* call release the GIL
 * while tenlane computes. */
#ifndef TLPY_H
#define TLPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL tlpy_ARRAY_API
#ifndef TLPY_IMPORT_ARRAY
#define NO_IMPORT_ARRAY
#endif
#include <numpy/arrayobject.h>

#include <tenlane/tenlane.h>

/* ---- errors.c ------------------------------------------------------------------------ */

/* Create tenlane.Error and one subclass per status of TL_STATUS_MAP; add them to m. */
int tlpy_errors_init(PyObject *m);
/* The class for a status (tenlane.Error for TL_OK or an unknown value). Borrowed. */
PyObject *tlpy_error_class(tl_status status);
/* Raise the class of `status` carrying `message`; item >= 0 also sets the exception's
 * `item` (the lowest failing item of a map). Returns NULL. */
PyObject *tlpy_raise_message(tl_status status, const char *message, Py_ssize_t item);
/* Raise the class of `status` with a formatted message. Returns NULL. */
PyObject *tlpy_raise(tl_status status, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
/* Raise the class of `status` with tenlane's message for the last failing call on this
 * thread (tl_last_message). Returns NULL. */
PyObject *tlpy_raise_last(tl_status status);
/* Take the pending exception (the indicator is cleared): the normalized instance with its
 * traceback attached, a new reference, or NULL when none was pending. GIL held. */
PyObject *tlpy_exception_take(void);
/* Give the pending exception `cause` (borrowed) as its __cause__. GIL held. */
void tlpy_exception_chain(PyObject *cause);

/* ---- operand.c ----------------------------------------------------------------------- */

/* A Python object seen as a tenlane tensor without a copy. `tensor` borrows the object's
 * memory; `owner` keeps that memory alive (a new reference) until tlpy_operand_release. */
typedef struct tlpy_operand {
  tl_tensor tensor;
  PyObject *owner;
  Py_buffer view; /* filled when the memory came through the buffer protocol */
  int has_view;
} tlpy_operand;

/* Read `obj` (a numpy array, an object with __dlpack__, or a buffer exporter) as a
 * tensor. `writable` asks for memory that may be written (an `out=` argument). `where`
 * names the call and `what` the argument in error messages ("tenlane.Session.einsum",
 * "operand 1"). Returns 0, or -1 with a tenlane.Error raised (DtypeError for a dtype
 * tenlane lacks or an object that is no array, ShapeError for strides that are not whole
 * elements or too many axes, InvalidError for unaligned or read-only memory). */
int tlpy_operand_get(PyObject *obj, int writable, const char *where, const char *what,
                     tlpy_operand *out);
/* A failure described without the GIL: raised later with tlpy_raise_message. */
typedef struct tlpy_fail {
  tl_status status;
  char message[TL_MESSAGE_CAPACITY];
} tlpy_fail;

/* Read a numpy array's own fields as a tensor (as tlpy_operand_get does for one) without
 * any Python call, so without the GIL as long as the array is kept alive and unchanged.
 * Anything but a numpy array is TL_E_DTYPE. On failure *fail says why. */
tl_status tlpy_ndarray_tensor(PyObject *obj, int writable, const char *where, const char *what,
                              tl_tensor *t, tlpy_fail *fail);
/* Release what tlpy_operand_get took. Safe on a zeroed operand. GIL held. */
void tlpy_operand_release(tlpy_operand *op);

/* ---- result.c ------------------------------------------------------------------------ */

/* tenlane.Buffer: owns one tenlane tensor's memory; the base of every result array. */
extern PyTypeObject tlpy_buffer_type;
/* A numpy array over `t`. An owned tensor's memory moves into a new Buffer that becomes
 * the array's base (freed when the array and its views are collected); a borrowed tensor
 * (a view of an input) gets `base` as its base instead. On failure the owned memory is
 * released and NULL returned with an exception set; *t is cleared either way. */
PyObject *tlpy_result(tl_tensor *t, PyObject *base);
/* The tensor a tenlane.Buffer holds, as a borrowed view into *out (owns nothing). */
void tlpy_buffer_tensor(PyObject *buffer, tl_tensor *out);
/* Buffers alive now: results not yet collected. */
Py_ssize_t tlpy_live_buffers(void);
/* Free the collected Buffer objects kept for reuse (result.c); returns how many. GIL held. */
Py_ssize_t tlpy_buffers_release(void);
/* numpy type number of a tenlane dtype. */
int tlpy_npy_type(tl_dtype dtype);

/* A numpy array over `t`, a borrowed tensor over `block` (from tlpy_block_take, `bytes`
 * asked): the block moves into a new Buffer and goes back to the block lists when the
 * Buffer is collected. On failure the block is given back and NULL returned with an
 * exception set. *t owns nothing (it is read, not cleared). GIL held. */
PyObject *tlpy_result_block(const tl_tensor *t, void *block, size_t bytes);

/* The results of a run of map_einsum items in one slab of memory (lanes.c): `stack` is
 * (count, ...) row-major, each item's result one row. Its memory moves into one Buffer, the
 * base of every item's array (tlpy_result_views): the slab is freed (an owned tensor) or
 * given back to the block lists (`block`, taken for `bytes`; `stack` then borrows it) when
 * the last of those arrays is collected. Returns the Buffer (a new reference), or NULL with
 * the memory released and an exception set. GIL held. */
PyObject *tlpy_result_slab(const tl_tensor *stack, void *block, size_t bytes);
/* Rows [first, first + count) of a slab Buffer as numpy arrays (each holds a reference to
 * the Buffer), stored into the list's slots from `at` on (PyList_SET_ITEM: the slots must
 * be empty). 0, or -1 with an exception set (the slots filled so far stay filled). */
int tlpy_result_views(PyObject *slab, size_t first, size_t count, PyObject *list, Py_ssize_t at);

/* ---- blocks.c ------------------------------------------------------------------------ */

#define TLPY_BLOCK_MAX (64 * 1024)         /* larger results get memory of their own */
#define TLPY_BLOCK_KEEP ((size_t)64 << 20) /* bytes kept on the lists at most */
/* A 64-byte aligned block for `bytes` (1 to TLPY_BLOCK_MAX) of a result, kept or new; NULL
 * when bytes is out of that range or memory is short. Any thread, GIL or not. */
void *tlpy_block_take(size_t bytes);
/* Up to `count` such blocks into blocks[] under one lock; returns how many (fewer only when
 * memory is short, 0 when bytes is out of range). */
int tlpy_block_take_many(size_t bytes, void **blocks, int count);
/* Give back a block taken for `bytes` (NULL is ignored): kept for the next result of its
 * size while the lists hold less than TLPY_BLOCK_KEEP, else freed. Any thread. */
void tlpy_block_give(void *block, size_t bytes);
/* The same for `count` blocks of one size (NULL entries are ignored), under one lock. */
void tlpy_block_give_many(size_t bytes, void *const *blocks, int count);
/* tlpy_block_give for a thread that holds the GIL (a collected result): the block waits
 * with others and goes to the lists with them, under one lock. tlpy_block_flush_held puts the
 * waiting ones there now (before a batch, so its lanes can take them, and before the kept
 * bytes are read or freed). Both with the GIL held. */
void tlpy_block_give_held(void *block, size_t bytes);
void tlpy_block_flush_held(void);
/* Register the fork handlers (module initialisation, once); -1 if that failed. */
int tlpy_blocks_init(void);
/* Free every kept block; returns the bytes freed. Bytes kept now. Any thread. */
size_t tlpy_block_release(void);
size_t tlpy_block_kept(void);

/* ---- dlpack.c ------------------------------------------------------------------------ */

/* tenlane.from_dlpack(x): a numpy array over the memory x exports through __dlpack__. */
PyObject *tlpy_from_dlpack(PyObject *module, PyObject *obj);
/* Buffer.__dlpack__ and Buffer.__dlpack_device__. */
PyObject *tlpy_buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames);
PyObject *tlpy_buffer_dlpack_device(PyObject *self, PyObject *unused);
/* Read a "dltensor" capsule's tensor as an operand (the capsule stays the producer's).
 * The DLTensor is checked first (dlpack.c, dl_layout): InvalidError for a NULL shape or
 * data where there are elements, an unaligned start or a capsule of another name (a
 * consumed one included), ShapeError for a negative extent, too many axes or a count or
 * byte span that overflows, DtypeError for no capsule at all. */
int tlpy_operand_from_dlpack(PyObject *obj, const char *where, const char *what, tlpy_operand *out);

/* ---- context.c, session.c ------------------------------------------------------------ */

typedef struct tlpy_context {
  PyObject_HEAD tl_context *ctx; /* NULL once closed */
  int threads;
} tlpy_context;

typedef struct tlpy_session {
  PyObject_HEAD tlpy_context *context; /* strong reference */
  tl_session *session;                 /* NULL unless open */
  tl_exec *exec;        /* the root surface, used only while `serial` is the caller's */
  uint64_t serial;      /* tlpy_thread_serial() of the opening thread: never reused */
  tl_owner owner;       /* the owner it was opened for (0 once tenlane closed it) */
  unsigned long thread; /* PyThread ident of the opening thread, for messages only */
  int wait;             /* open with TL_WAIT (1) or TL_NOWAIT (0) */
} tlpy_session;

/* A number for the calling thread, unique for the life of the process: OS thread ids are
 * reused once a thread is joined, this never is. Any thread, GIL or not. */
uint64_t tlpy_thread_serial(void);

extern PyTypeObject tlpy_context_type;
extern PyTypeObject tlpy_session_type;

/* Merge the method tables below into tenlane.Session and ready the type. */
int tlpy_session_type_init(void);

#define TL__PY_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The session's surface for a call named `where`, or NULL with StaleError (not open, or
 * its thread ended and tenlane closed it) or WrongThreadError (called from another live
 * thread than the one that opened it) raised. The opener is recognised by its thread serial,
 * not its OS id, so a new thread that got a dead opener's id is refused too. */
tl_exec *tlpy_session_exec(tlpy_session *self, const char *where);

/* ---- interrupt.c: Ctrl-C during calls that run without the GIL ---------------------- */

/* A watch for SIGINT over one call. */
typedef struct tlpy_watch {
  unsigned seen; /* the signal count when the watch began (or was rearmed) */
  int active;    /* 0: nothing to watch (not the main thread, or SIGINT ignored/default) */
} tlpy_watch;

/* 1 on Python's main thread (the one its signal handlers run on). GIL held. */
int tlpy_on_main_thread(void);
/* Begin watching (GIL held): on the main thread SIGINT's handler becomes one that counts
 * the signal before calling the handler that was there (Python's). Nests. */
void tlpy_watch_begin(tlpy_watch *watch);
/* 1 once SIGINT arrived since the watch began (or was rearmed). Any thread, no GIL, no
 * lock: lanes call it between items. */
int tlpy_watch_fired(const tlpy_watch *watch);
/* Start counting afresh (GIL held), after Python's handler ran and returned. */
void tlpy_watch_rearm(tlpy_watch *watch);
/* End the watch (GIL held); the outermost one puts the previous handler back. */
void tlpy_watch_end(tlpy_watch *watch);

/* ---- out.c: the out= arguments ---------------------------------------------------- */

/* 1 when an out= argument was given (not NULL, not None). */
int tlpy_out_given(PyObject *obj);
/* out= of a call returning n arrays: a tuple of exactly n, none None (`shape_text` describes
 * them in messages, e.g. "(q, r)"); the items (borrowed) into items[]. 0, or -1 with
 * DtypeError (not a tuple) or InvalidError (a wrong count, a None) raised. */
int tlpy_out_tuple(PyObject *obj, int n, const char *where, const char *shape_text,
                   PyObject **items);
/* Read n (1 to 4) out arrays as writable operands named "out" (n == 1) or "out[i]"; 0, or
 * -1 with the error raised and none held. */
int tlpy_out_get_all(int n, PyObject *const *items, const char *where, tlpy_operand *ops);
/* The int64 memory of an out array for pivots or a permutation: a writable, contiguous,
 * 1-D numpy int64 array of `length`; NULL with DtypeError, ShapeError or InvalidError. */
int64_t *tlpy_out_index(PyObject *obj, int64_t length, const char *where, const char *what);
/* obj (an out array) cut to its first `count` entries along axis 0 or 1: obj itself (a
 * new reference) when it has exactly that many, else a numpy view of it. */
PyObject *tlpy_out_leading(PyObject *obj, int axis, int64_t count);

/* A single long call's cancellation on Ctrl-C: while it runs without the GIL on the main
 * thread, SIGINT raises the cancellation flag of its surface (tl_exec_cancel), so that the
 * call returns TL_E_CANCELLED within a block's time; tlpy_raise_message then turns that
 * status into the KeyboardInterrupt Python's handler raises. Only while the Python-level
 * handler is signal.default_int_handler: a handler of the user's runs after the call. */
typedef struct tlpy_cancel {
  tlpy_watch watch;
  tl_exec *exec;     /* the surface whose flag SIGINT raises, or NULL (nothing armed) */
  tl_exec *previous; /* the target before this one (a call from a map callback nests) */
} tlpy_cancel;
/* Arm (GIL held, before releasing it). */
void tlpy_cancel_begin(tlpy_cancel *cancel, tl_exec *exec);
/* Disarm and lower the flag (GIL held again, after the call returned). */
void tlpy_cancel_end(tlpy_cancel *cancel);

/* ---- ops.c, linalg.c, lanes.c: the methods of tenlane.Session ------------------------ */

extern PyMethodDef tlpy_ops_methods[];
extern PyMethodDef tlpy_linalg_methods[];
extern PyMethodDef tlpy_lanes_methods[];

/* Shared by ops.c and lanes.c: "auto", "greedy", "optimal" (or None) as a path kind. */
int tlpy_path_kind(PyObject *obj, const char *where, tl_einsum_path_kind *out);
/* einsum_forms.c: numpy's sublist form (args = a0, sub0, a1, sub1, ..., [out_sub]) into a
 * spec with integer labels and the arrays; 0, or -1 with an exception. */
int tlpy_einsum_sublist(PyObject *const *args, Py_ssize_t nargs, const char *where, char *spec,
                        size_t cap, PyObject **arrays, int *n);
/* A path in opt_einsum's linear format ([(0, 1), ...], optionally led by 'einsum_path'):
 * 1 and the pairs, 0 when obj is not one (a kind name or None), -1 with an exception. */
int tlpy_einsum_given_path(PyObject *obj, const char *where, int *pairs, int *n_steps);
/* Shared by linalg.c and lanes.c: the truncation of tol/atol/max_rank keywords. */
int tlpy_truncation(PyObject *tol, PyObject *atol, PyObject *max_rank, const char *where,
                    tl_truncation *out, int *any);

/* A fresh result tensor in the layout the module returns (see result.c). */
tl_status tlpy_create(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *out);
/* Elements a call's operands hold, to decide whether it releases the GIL. */
int64_t tlpy_elements(int n, const tlpy_operand *ops);
/* The session's surface for a call named `where`, then `a` read as operand "a" into
 * ops[0] and, unless `b` is NULL, `b` as operand "b" into ops[1] (tlpy_operand_get).
 * Returns NULL with the exception raised and no operand held on any failure. */
tl_exec *tlpy_session_operands(tlpy_session *self, const char *where, PyObject *a, PyObject *b,
                               tlpy_operand *ops);
/* The fresh tensor of a call that returned `status`: a numpy array when TL_OK
 * (tlpy_result), else NULL with the call's error raised (tlpy_raise_last). */
PyObject *tlpy_result_or_raise(tl_status status, tl_tensor *result);

/* Run `call` (a statement assigning a tl_status) without the GIL when `big` is true. The
 * call runs on this thread either way, so tl_last_message still describes a failure. A big
 * call on the main thread is cancelled by Ctrl-C (tlpy_cancel): every site has the surface
 * it calls on in scope as `exec`. */
#define TLPY_RUN(big, call)                   \
  do {                                        \
    if (big) {                                \
      tlpy_cancel tlpy_cancel_;               \
      tlpy_cancel_begin(&tlpy_cancel_, exec); \
      Py_BEGIN_ALLOW_THREADS call;            \
      Py_END_ALLOW_THREADS;                   \
      tlpy_cancel_end(&tlpy_cancel_);         \
    } else {                                  \
      call;                                   \
    }                                         \
  } while (0)

/* ---- linalg.c: the factorizations shared by single calls and map_* ------------------- */

typedef struct tlpy_svd_item {
  tl_tensor u, s, vt;
  int64_t rank;
  double discarded; /* sum of the squares of the singular values dropped */
} tlpy_svd_item;

/* Truncated SVD of a on exec (truncation NULL: all of them). On failure nothing is kept. */
tl_status tlpy_svd_on(tl_exec *exec, const tl_tensor *a, const tl_truncation *truncation,
                      tlpy_svd_item *out);
/* (u, s, vt, discarded) from an item; its tensors move into the arrays. */
PyObject *tlpy_svd_tuple(tlpy_svd_item *item);

typedef struct tlpy_qrcp_item {
  tl_tensor q, r;
  int64_t rank;
  double discarded; /* ||r22||_F^2 of the rows dropped */
  PyObject *perm;   /* int64 numpy array of a's column count (set before tlpy_qrcp_tuple) */
} tlpy_qrcp_item;

/* Pivoted QR of a on exec into item (q, r, rank, discarded) and perm (a's column count). */
tl_status tlpy_qrcp_on(tl_exec *exec, const tl_tensor *a, const tl_truncation *truncation,
                       int64_t *perm, tlpy_qrcp_item *item);
/* (q, r, perm, discarded) from an item; its tensors move into the arrays. */
PyObject *tlpy_qrcp_tuple(tlpy_qrcp_item *item);

/* ---- svd.c: Session.svd (numpy's full_matrices and compute_uv, out=) --------------- */

PyObject *tlpy_session_svd(PyObject *self, PyObject *args, PyObject *kwargs);
#define TLPY_SVD_DOC                                                                           \
  "svd(a, full_matrices=False, compute_uv=True, *, tol=None, max_rank=None, atol=None, "       \
  "out=None) -> (u, s, vt, discarded), or s alone when compute_uv is False (as numpy). "       \
  "Thin by default: a ~= u @ diag(s) @ vt, u m x k, vt k x n, s descending (real), keeping "   \
  "the values above max(atol, tol * s[0]), at most max_rank of them (none given: all). "       \
  "discarded is the sum of the squares of the dropped values (the squared Frobenius error). "  \
  "full_matrices=True: u m x m and vt n x n (unitary; the columns past min(m, n) complete "    \
  "the thin factors through a QR), no truncation keywords. out: a tuple (u, s, vt) of "        \
  "arrays of the shapes computed (thin: c = min(m, n, max_rank) columns, returned cut to the " \
  "rank kept), or one array for s when compute_uv is False. Opening thread only."

/* ---- reuse.c: large freed memory kept for the next allocation of its size ------------ */

/* Install the module's tl_allocator (module initialisation, before any tenlane object). */
void tlpy_reuse_install(void);
/* Free the kept blocks; returns their bytes. Bytes kept now. Any thread. */
size_t tlpy_reuse_release(void);
size_t tlpy_reuse_kept(void);

/* ---- tci.c: tenlane.tci's engine (examples/tci on the session's lanes) ------------------ */

/* tenlane._core._tci_run: see tci.c. */
PyObject *tlpy_tci_run(PyObject *module, PyObject *args);

/* ---- uniform.c: a run of map_einsum items of one layout as one einsum ------------------ */

typedef struct tlpy_uniform {
  int n;     /* operands per item */
  int steps; /* n - 1 */
  /* step s as a two-operand einsum over the run, the item axis in front of every term */
  char step_spec[TL_EINSUM_MAX_OPERANDS][3 * (TL_MAX_RANK + 1) + 4];
  int step_slot[TL_EINSUM_MAX_OPERANDS][2]; /* its operands: input j, or n + earlier step */
  int inter_rank[TL_EINSUM_MAX_OPERANDS];   /* intermediate s: a single call's axes, ... */
  int64_t inter_shape[TL_EINSUM_MAX_OPERANDS][TL_MAX_RANK]; /* ... column-major, per item */
  size_t inter_offset[TL_EINSUM_MAX_OPERANDS]; /* its bytes per item, from a run's scratch */
  size_t inter_bytes;                          /* every intermediate of one item */
  tl_tensor first[TL_EINSUM_MAX_OPERANDS];     /* item 0's operands (borrowed) */
  int64_t step[TL_EINSUM_MAX_OPERANDS];        /* elements from an item's operand j to the next's */
  int out_rank;
  int64_t out_shape[TL_MAX_RANK]; /* one item's result */
  size_t out_bytes;
  size_t item_bytes; /* result and scratch per item, at most */
  /* packed (tlpy_uniform_plan with no second item): items anywhere in memory, each dense
   * (its elements fill its span), every operand of a run's items copied into a stack of its
   * own in the run's scratch first (tlpy_uniform_packed); step[j] is then an item's span */
  int packed;
  size_t pack_offset[TL_EINSUM_MAX_OPERANDS]; /* operand j's stack: at count * this in it */
  size_t pack_bytes;                          /* every operand of one item, 64-byte rounded */
} tlpy_uniform;
/* 1 when items whose operands lie as item 0's (first) and item 1's (second) do may run as one
 * einsum with the bits of single calls (fills *u); 0 otherwise (run them one by one). second
 * NULL: the packed plan, for items of item 0's shapes, strides and dtypes wherever they lie,
 * each operand dense (u->packed). */
int tlpy_uniform_plan(const char *spec, int n, const tl_tensor *first, const tl_tensor *second,
                      tlpy_uniform *u);
/* The results of items [begin, begin + count), all members, into out: count results in item
 * order, each row-major (u->out_bytes apart); scratch holds count * (u->inter_bytes +
 * u->pack_bytes) bytes (64-byte aligned) for the intermediates and, when packed, the items'
 * operands, copied there by the caller first (tlpy_uniform_packed; begin is then unused). No
 * GIL needed. Errors: tl_einsum_with_path_into's (the caller then runs the items one by one,
 * which says which item failed and why). */
tl_status tlpy_uniform_run(tl_exec *exec, const tlpy_uniform *u, size_t begin, size_t count,
                           void *out, void *scratch);
/* Where item i (0 to count - 1) of a packed run's operand j goes in its scratch: u->step[j]
 * elements from there on, in item 0's strides. */
char *tlpy_uniform_packed(const tlpy_uniform *u, size_t count, void *scratch, int j, size_t i);
/* Items whose results came from tlpy_uniform_run so far (a test hook). Any thread. */
size_t tlpy_uniform_items(void);

/* ---- default.c: the module-level calls on the default context ------------------------ */

/* Add tenlane.einsum, svd, ... (Session's methods on the calling thread's default session),
 * set_threads, get_threads and default_context to m. After tlpy_session_type_init. */
int tlpy_default_init(PyObject *m);

/* ---- bench.c ------------------------------------------------------------------------- */

/* tenlane._time_c_einsum(session, spec, a, b, calls): ns per C tl_einsum call. */
PyObject *tlpy_time_c_einsum(PyObject *module, PyObject *args);

/* Single calls release the GIL when their operands hold at least this many elements. */
#define TLPY_NOGIL_ELEMENTS 16384

#endif
