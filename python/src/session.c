/* python/src/session.c: tenlane.Session, a held session (tl_session) and its object.
 *
 * `with ctx.session() as s:` opens the session on the calling thread (waiting for the
 * context without the GIL) and closes it when the block ends. Every method checks first
 * that it runs on the opening thread: from any other thread it raises WrongThreadError
 * before touching the C session, so a second Python thread can never race the owner. The
 * opening thread is recognised by a serial of its own (tlpy_thread_serial), never by its OS
 * id, which a later thread may get once it ended: a session whose thread ended (tenlane
 * then closed it) is StaleError from every thread, and is_open reads False. */
#include "tlpy.h"

#include <stdatomic.h>
#include <time.h>

static _Thread_local uint64_t thread_serial; /* 0 until the thread asks */
static atomic_uint_fast64_t serials_given;

uint64_t tlpy_thread_serial(void) {
  if (TL__PY_UNLIKELY(thread_serial == 0))
    thread_serial =
        (uint64_t)atomic_fetch_add_explicit(&serials_given, 1, memory_order_relaxed) + 1;
  return thread_serial;
}

/* 1 while the C session this object opened is still held: tenlane closes it when the
 * opening thread ends without closing it (then its owner reads 0). That happens when the
 * thread's C-level exit runs, a little after Python's join() returned. Any thread. */
static int held(const tlpy_session *self) {
  return self->session != NULL && tl_session_owner(self->session) == self->owner;
}

/* Forget a session tenlane closed for its dead thread. */
static void forget(tlpy_session *self) {
  self->session = NULL;
  self->exec = NULL;
  self->owner = 0;
}

/* The caller is not the opening thread: StaleError when that thread ended (tenlane closed
 * the session), else WrongThreadError. */
static tl_exec *foreign_thread(tlpy_session *self, const char *where) {
  unsigned long me = PyThread_get_thread_ident();
  if (!held(self)) {
    tlpy_raise(TL_E_STALE,
               "%s: the thread that opened this session (thread %lu) ended without closing it, "
               "so tenlane closed it; called from thread %lu (open a new session here)",
               where, self->thread, me);
    return NULL;
  }
  tlpy_raise(TL_E_WRONG_THREAD,
             "%s: this session was opened on thread %lu and is used only there; called "
             "from thread %lu (open a session on this thread, or use s.map)",
             where, self->thread, me);
  return NULL;
}

tl_exec *tlpy_session_exec(tlpy_session *self, const char *where) {
  if (TL__PY_UNLIKELY(!self->session)) {
    tlpy_raise(TL_E_STALE, "%s: the session is not open (use `with ctx.session() as s:`)", where);
    return NULL;
  }
  /* The serial, not the OS id: the opening thread, alive, so the session is still its own
   * and the cached surface is this session's (the C library hands every session of a
   * context the same root surface, so a surface alone proves nothing). */
  if (TL__PY_UNLIKELY(tlpy_thread_serial() != self->serial)) return foreign_thread(self, where);
  return self->exec;
}

static PyObject *session_open(PyObject *self, PyObject *unused) {
  (void)unused;
  tlpy_session *s = (tlpy_session *)self;
  if (s->session)
    return tlpy_raise(TL_E_REENTERED, "tenlane.Session.open: this session is already open");
  if (!s->context->ctx)
    return tlpy_raise(TL_E_STALE, "tenlane.Session.open: the context is closed");
  tl_session *session = NULL;
  tl_status status;
  tl_owner owner = tl_owner_new();
  char message[TL_MESSAGE_CAPACITY];
  /* A waiting open on the main thread polls instead of queueing: TL_NOWAIT, then a sleep
   * without the GIL (0.2 ms, doubling up to 10 ms), then Python's signal handlers, again,
   * so that Ctrl-C interrupts a wait for a holder that may never leave. Elsewhere (no
   * KeyboardInterrupt arrives there; a pool worker never waits) it queues in tenlane. */
  const int poll = s->wait && tlpy_on_main_thread() && tl_pool_current() == NULL;
  const tl_wait_mode mode = s->wait && !poll ? TL_WAIT : TL_NOWAIT;
  long slice_us = 200;
  for (;;) {
    tl_context *ctx = s->context->ctx;
    if (!ctx) return tlpy_raise(TL_E_STALE, "tenlane.Session.open: the context was closed");
    Py_BEGIN_ALLOW_THREADS;
    status = tl_session_open(ctx, owner, mode, &session);
    if (status != TL_OK) snprintf(message, sizeof message, "%s", tl_last_message());
    if (poll && status == TL_E_BUSY) {
      struct timespec nap = {0, slice_us * 1000};
      nanosleep(&nap, NULL);
    }
    Py_END_ALLOW_THREADS;
    if (!poll || status != TL_E_BUSY) break;
    if (PyErr_CheckSignals() < 0) return NULL; /* KeyboardInterrupt: nothing was opened */
    slice_us = slice_us < 5000 ? 2 * slice_us : 10000;
  }
  if (status != TL_OK) return tlpy_raise_message(status, message, -1);
  s->session = session;
  s->exec = tl_session_exec(session);
  tl_exec_set_order(s->exec, TL_ORDER_ROW_MAJOR); /* numpy's order for every fresh result */
  s->thread = PyThread_get_thread_ident();
  s->serial = tlpy_thread_serial();
  s->owner = owner;
  return Py_NewRef(self);
}

static PyObject *session_close(PyObject *self, PyObject *unused) {
  (void)unused;
  tlpy_session *s = (tlpy_session *)self;
  if (!s->session) Py_RETURN_NONE;
  if (tlpy_thread_serial() != s->serial && !held(s)) { /* its thread ended: already closed */
    forget(s);
    Py_RETURN_NONE;
  }
  if (!tlpy_session_exec(s, "tenlane.Session.close")) return NULL;
  tl_status status = tl_session_close(s->session);
  if (status == TL_E_WRONG_THREAD || status == TL_E_PHASE_ACTIVE) return tlpy_raise_last(status);
  s->session = NULL; /* released even when the affinity could not be restored */
  s->exec = NULL;
  if (status != TL_OK) return tlpy_raise_last(status);
  Py_RETURN_NONE;
}

static PyObject *session_exit(PyObject *self, PyObject *args) {
  (void)args;
  PyObject *r = session_close(self, NULL);
  if (!r) return NULL;
  Py_DECREF(r);
  Py_RETURN_FALSE;
}

static void session_dealloc(PyObject *self) {
  tlpy_session *s = (tlpy_session *)self;
  if (s->session && !held(s)) forget(s); /* its thread ended: tenlane closed it */
  if (s->session) {
    /* Left open: close it when this is the opening thread. From another thread the C
     * session cannot be closed; the context then stays held (and is never destroyed). */
    if (tlpy_thread_serial() == s->serial && tl_session_close(s->session) == TL_OK) {
      s->session = NULL;
    } else {
      Py_INCREF(s->context); /* keep the held context alive for good */
    }
  }
  Py_XDECREF(s->context);
  PyObject_Free(self);
}

static PyObject *session_is_open(PyObject *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(held((tlpy_session *)self));
}

static PyObject *session_context(PyObject *self, void *unused) {
  (void)unused;
  return Py_NewRef((PyObject *)((tlpy_session *)self)->context);
}

static PyMethodDef session_methods[] = {
    {"open", session_open, METH_NOARGS,
     "open() -> Session: open the held session on the calling thread (what `with` does). "
     "Waits without the GIL while another owner holds the context (BusyError at once when "
     "made with wait=False). ReenteredError when this thread already holds the context."},
    {"close", session_close, METH_NOARGS,
     "close(): close the session (opening thread only; WrongThreadError elsewhere)."},
    {"__enter__", session_open, METH_NOARGS, "Opens the session."},
    {"__exit__", session_exit, METH_VARARGS, "Closes the session."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef session_getset[] = {
    {"is_open", session_is_open, NULL,
     "True while the session is held (False once closed, also when its thread ended without "
     "closing it and tenlane closed it).",
     NULL},
    {"context", session_context, NULL, "The context this session holds.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tlpy_session_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tenlane.Session",
    .tp_basicsize = sizeof(tlpy_session),
    .tp_dealloc = session_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "A held session (from Context.session()).\n\n"
        "Thread rules: open, use and close it on one thread. Calls from another thread "
        "raise WrongThreadError. Numerical calls split over the context's pool; the "
        "map_* calls run their items on the session's lanes with the GIL released; "
        "map(fn, n) runs Python callbacks on the lanes, one at a time (they need the "
        "GIL). Results are numpy arrays over tenlane memory that outlive the session "
        "and the context.",
    .tp_getset = session_getset,
};

int tlpy_session_type_init(void) {
  /* The numerical methods come from ops.c, linalg.c and lanes.c: one table. */
  static PyMethodDef all[64];
  int n = 0;
  const PyMethodDef *tables[] = {session_methods, tlpy_ops_methods, tlpy_linalg_methods,
                                 tlpy_lanes_methods};
  for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
    for (const PyMethodDef *m = tables[t]; m->ml_name; m++) {
      if (n + 1 >= (int)(sizeof all / sizeof all[0])) return -1;
      all[n++] = *m;
    }
  all[n] = (PyMethodDef){NULL, NULL, 0, NULL};
  tlpy_session_type.tp_methods = all;
  return PyType_Ready(&tlpy_session_type);
}
