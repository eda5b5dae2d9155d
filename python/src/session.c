/* python/src/session.c: tenlane.Session, a held session (tl_session) and its object.
 *
 * `with ctx.session() as s:` opens the session on the calling thread (waiting for the
 * context without the GIL) and closes it when the block ends. Every method checks first
 * that it runs on the opening thread: from any other thread it raises WrongThreadError
 * before touching the C session, so a second Python thread can never race the owner. */
#include "tlpy.h"

tl_exec *tlpy_session_exec(tlpy_session *self, const char *where) {
  if (TL__PY_UNLIKELY(!self->session)) {
    tlpy_raise(TL_E_STALE, "%s: the session is not open (use `with ctx.session() as s:`)", where);
    return NULL;
  }
  unsigned long me = PyThread_get_thread_ident();
  if (TL__PY_UNLIKELY(me != self->thread)) {
    tlpy_raise(TL_E_WRONG_THREAD,
               "%s: this session was opened on thread %lu and is used only there; called "
               "from thread %lu (open a session on this thread, or use s.map)",
               where, self->thread, me);
    return NULL;
  }
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
  Py_BEGIN_ALLOW_THREADS;
  status = tl_session_open(s->context->ctx, owner, s->wait ? TL_WAIT : TL_NOWAIT, &session);
  if (status != TL_OK) snprintf(message, sizeof message, "%s", tl_last_message());
  Py_END_ALLOW_THREADS;
  if (status != TL_OK) return tlpy_raise_message(status, message, -1);
  s->session = session;
  s->exec = tl_session_exec(session);
  tl_exec_set_order(s->exec, TL_ORDER_ROW_MAJOR); /* numpy's order for every fresh result */
  s->thread = PyThread_get_thread_ident();
  return Py_NewRef(self);
}

static PyObject *session_close(PyObject *self, PyObject *unused) {
  (void)unused;
  tlpy_session *s = (tlpy_session *)self;
  if (!s->session) Py_RETURN_NONE;
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
  if (s->session) {
    /* Left open: close it when this is the opening thread. From another thread the C
     * session cannot be closed; the context then stays held (and is never destroyed). */
    if (PyThread_get_thread_ident() == s->thread && tl_session_close(s->session) == TL_OK) {
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
  return PyBool_FromLong(((tlpy_session *)self)->session != NULL);
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
    {"is_open", session_is_open, NULL, "True while the session is held.", NULL},
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
