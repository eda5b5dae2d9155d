/* python/src/default.c: the module-level calls (tenlane.einsum, svd, ...) on a default
 * context.
 *
 * The default context is made on the first call, with tenlane.set_threads' budget (0, one
 * lane per CPU the calling thread may use, until set), pinned as Context() pins. The first
 * Python thread that makes a module-level call opens the context's session and holds it
 * until the thread ends (the thread's state dict owns it, so its teardown closes it), so
 * its calls cost what the session method costs. Any other thread enters through a ticket
 * of that session (tl_ticket_enter): a child surface of its own, one thread, no waiting,
 * a private scratch. If the holder ends, the next caller opens the session again.
 *
 * The lanes of the default context belong to the holder. A map_* call from any other thread
 * runs on a second context made for that purpose (the lanes context, made on the first such
 * call with the same thread budget): the call opens a session there (waiting, without the
 * GIL, while another thread's map holds it), runs the map on its lanes and closes the
 * session. So maps from several threads run one at a time there, beside the holder's calls.
 * A lane (a pool worker, e.g. inside map(fn, n)) does not start a map of its own: that could
 * wait for the map it is part of.
 * Everything here runs with the GIL held, which guards the module state below. */
#include "tlpy.h"

#include <string.h>

/* One per Python thread that made a module-level call, in its thread-state dict. */
typedef struct tlpy_slot {
  PyObject_HEAD tlpy_session *session; /* on the default context */
  unsigned long generation;            /* the default context it was made for */
  unsigned long thread;                /* PyThread ident, for messages */
  uint64_t serial;                     /* tlpy_thread_serial() of its thread */
  int holder;                          /* 1 when this thread holds the session */
} tlpy_slot;

static tlpy_context *default_context; /* NULL until the first call */
static tlpy_context *lanes_context;   /* map_* of threads that do not hold; NULL until used */
static int default_threads;           /* set_threads' budget; 0 = one per CPU */
static unsigned long generation = 1;  /* counts default contexts */
static tlpy_slot *holder;             /* the slot holding the session, or NULL */
static tl_ticket holder_ticket;
static PyObject *slot_key;
static _Thread_local tlpy_slot *this_thread; /* the calling thread's slot (a cache) */

/* Close the held session with the GIL released: closing waits for ticket entries of other
 * threads, which may need the GIL to finish. */
static void slot_close(tlpy_slot *slot) {
  tlpy_session *s = slot->session;
  if (holder == slot) holder = NULL;
  slot->holder = 0;
  if (!s || !s->session || tlpy_thread_serial() != s->serial) return;
  tl_session *session = s->session;
  s->session = NULL;
  s->exec = NULL;
  Py_BEGIN_ALLOW_THREADS;
  (void)tl_session_close(session); /* released even when the affinity was not restored */
  Py_END_ALLOW_THREADS;
}

static void slot_dealloc(PyObject *self) {
  tlpy_slot *slot = (tlpy_slot *)self;
  if (this_thread == slot) this_thread = NULL;
  slot_close(slot);
  Py_XDECREF(slot->session); /* left open only when collected off its thread */
  PyObject_Free(self);
}

static PyTypeObject slot_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tenlane._DefaultSession",
    .tp_basicsize = sizeof(tlpy_slot),
    .tp_dealloc = slot_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A thread's session on tenlane's default context (module-level calls).",
};

static tlpy_context *context_get(void) {
  if (default_context && default_context->ctx) return default_context;
  Py_CLEAR(default_context);
  PyObject *c = PyObject_CallFunction((PyObject *)&tlpy_context_type, "i", default_threads);
  if (!c) return NULL;
  default_context = (tlpy_context *)c;
  generation++;
  return default_context;
}

static tlpy_context *lanes_context_get(void) {
  if (lanes_context && lanes_context->ctx) return lanes_context;
  Py_CLEAR(lanes_context);
  PyObject *c = PyObject_CallFunction((PyObject *)&tlpy_context_type, "i", default_threads);
  lanes_context = (tlpy_context *)c;
  return lanes_context;
}

/* Session.<name> (a map_* call) on a session of the lanes context opened for this call;
 * stack[0] is replaced by that session. */
static PyObject *map_on_lanes_context(PyObject *name, PyObject **stack, size_t nargsf,
                                      PyObject *kwnames, unsigned long thread) {
  if (tl_pool_current() != NULL)
    return tlpy_raise(TL_E_WRONG_THREAD,
                      "tenlane.%s: called on a lane of a running map (thread %lu); a lane does "
                      "not start a map of its own (run the items in the outer map)",
                      PyUnicode_AsUTF8(name), thread);
  tlpy_context *ctx = lanes_context_get();
  if (!ctx) return NULL;
  PyObject *session = PyObject_CallMethod((PyObject *)ctx, "session", NULL);
  if (!session) return NULL;
  PyObject *opened = PyObject_CallMethod(session, "open", NULL); /* waits without the GIL */
  if (!opened) {
    Py_DECREF(session);
    return NULL;
  }
  Py_DECREF(opened);
  stack[0] = session;
  PyObject *r = PyObject_VectorcallMethod(name, stack, nargsf, kwnames);
  PyObject *type = NULL, *value = NULL, *trace = NULL;
  if (!r) PyErr_Fetch(&type, &value, &trace); /* the map's error, raised after the close */
  PyObject *closed = PyObject_CallMethod(session, "close", NULL);
  if (closed) {
    Py_DECREF(closed);
  } else if (r) {
    Py_CLEAR(r); /* the close's error is the one raised */
  } else {
    PyErr_Clear();
  }
  if (type) PyErr_Restore(type, value, trace);
  Py_DECREF(session);
  return r;
}

/* The calling thread's slot for the current default context (made on first use). */
static tlpy_slot *slot_get(void) {
  tlpy_slot *slot = this_thread;
  if (slot && slot->generation == generation && default_context && default_context->ctx)
    return slot;
  tlpy_context *ctx = context_get();
  if (!ctx) return NULL;
  PyObject *dict = PyThreadState_GetDict();
  if (!dict) return (tlpy_slot *)tlpy_raise(TL_E_INVALID, "tenlane: no thread state dict");
  slot = PyObject_New(tlpy_slot, &slot_type);
  if (!slot) return NULL;
  slot->session = (tlpy_session *)PyObject_CallMethod((PyObject *)ctx, "session", NULL);
  slot->generation = generation;
  slot->thread = PyThread_get_thread_ident();
  slot->serial = tlpy_thread_serial();
  slot->holder = 0;
  if (!slot->session || PyDict_SetItem(dict, slot_key, (PyObject *)slot) < 0) {
    Py_DECREF(slot);
    return NULL;
  }
  Py_DECREF(slot); /* the dict owns it (a previous slot of this thread is collected here) */
  this_thread = slot;
  return slot;
}

/* Make the calling thread the holder: open the session (waiting without the GIL while a
 * previous holder closes) and take its ticket. */
static int slot_hold(tlpy_slot *slot) {
  PyObject *r = PyObject_CallMethod((PyObject *)slot->session, "open", NULL);
  if (!r) return -1;
  Py_DECREF(r);
  if (tl_session_ticket(slot->session->session, &holder_ticket) != TL_OK) {
    slot_close(slot);
    tlpy_raise_last(TL_E_INVALID);
    return -1;
  }
  slot->holder = 1;
  holder = slot;
  return 0;
}

typedef struct entry {
  tlpy_slot *slot;
  tl_session *session; /* the holder's, valid while the entry runs */
  PyObject *name, *const *args;
  size_t nargsf;
  PyObject *kwnames, *result;
} entry;

static int entry_run(tl_exec *exec, void *arg) {
  entry *e = arg;
  tlpy_session *s = e->slot->session;
  tl_exec_set_order(exec, TL_ORDER_ROW_MAJOR);
  s->session = e->session; /* so the method's checks pass; never closed through s */
  s->exec = exec;
  s->serial = e->slot->serial;
  s->thread = e->slot->thread;
  e->result = PyObject_VectorcallMethod(e->name, e->args, e->nargsf, e->kwnames);
  s->session = NULL;
  s->exec = NULL;
  s->serial = 0;
  return 0;
}

/* tenlane.<name>(*args, **kwargs): Session.<name> on the calling thread's default session.
 * `self` is the method's name (an interned str). */
static PyObject *dispatch(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                          PyObject *kwnames) {
  tlpy_slot *slot = slot_get();
  if (!slot) return NULL;
  if (!holder && slot_hold(slot) < 0) return NULL;
  Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  PyObject *small[16], **stack = small;
  if (total + 1 > 16 && !(stack = PyMem_Malloc((size_t)(total + 1) * sizeof *stack)))
    return PyErr_NoMemory();
  stack[0] = (PyObject *)slot->session;
  for (Py_ssize_t k = 0; k < total; k++) stack[k + 1] = args[k];
  size_t nargsf = (size_t)(nargs + 1);
  PyObject *r;
  if (slot->holder) {
    r = PyObject_VectorcallMethod(self, stack, nargsf, kwnames);
  } else if (!strncmp(PyUnicode_AsUTF8(self), "map", 3)) {
    r = map_on_lanes_context(self, stack, nargsf, kwnames, slot->thread);
  } else {
    entry e = {slot, holder->session->session, self, stack, nargsf, kwnames, NULL};
    tl_status status = tl_ticket_enter(&holder_ticket, entry_run, &e, NULL);
    if (status == TL_E_STALE) { /* the holder closed meanwhile: hold it here */
      if (slot_hold(slot) < 0)
        r = NULL;
      else
        r = PyObject_VectorcallMethod(self, stack, nargsf, kwnames);
    } else {
      r = status == TL_OK ? e.result : tlpy_raise_last(status);
    }
  }
  if (stack != small) PyMem_Free(stack);
  return r;
}

static PyObject *set_threads(PyObject *module, PyObject *arg) {
  (void)module;
  long n = PyLong_AsLong(arg);
  if (n == -1 && PyErr_Occurred()) return NULL;
  if (n < 0 || n > 4096)
    return tlpy_raise(TL_E_INVALID, "tenlane.set_threads: %ld threads; 0 to 4096", n);
  if (default_context) {
    if (holder && holder->serial != tlpy_thread_serial())
      return tlpy_raise(TL_E_BUSY,
                        "tenlane.set_threads: thread %lu holds the default context's session; "
                        "call set_threads on that thread",
                        holder->thread);
    if (lanes_context) { /* BusyError while another thread's map runs there */
      PyObject *r = PyObject_CallMethod((PyObject *)lanes_context, "close", NULL);
      if (!r) return NULL;
      Py_DECREF(r);
      Py_CLEAR(lanes_context);
    }
    if (holder) slot_close(holder);
    PyObject *r = PyObject_CallMethod((PyObject *)default_context, "close", NULL);
    if (!r) return NULL;
    Py_DECREF(r);
    Py_CLEAR(default_context); /* the next call makes a new one */
    generation++;
  }
  default_threads = (int)n;
  Py_RETURN_NONE;
}

static PyObject *get_threads(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  tlpy_context *ctx = context_get();
  return ctx ? PyLong_FromLong(ctx->threads) : NULL;
}

static PyObject *default_context_get(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  tlpy_context *ctx = context_get();
  return ctx ? Py_NewRef((PyObject *)ctx) : NULL;
}

static const char *const names[] = {"einsum",   "tensordot", "matmul", "transpose",  "reshape",
                                    "sum",      "norm",      "qr",     "qrcp",       "svd",
                                    "lu",       "solve",     "eigh",   "map_einsum", "map_svd",
                                    "map_qrcp", "map",       "conj",   "scale",      NULL};

static PyMethodDef dispatch_defs[sizeof names / sizeof names[0]];

static PyMethodDef default_methods[] = {
    {"set_threads", set_threads, METH_O,
     "set_threads(n): the thread budget of the default context the module-level calls run "
     "on (0: one per CPU this thread may use, the default). Closes the current default "
     "context and the lanes context of other threads' maps (results stay valid); the next "
     "call makes one with n lanes. From the thread that holds the default session (the first "
     "that made a module-level call), or before any call; elsewhere, or while another "
     "thread's map runs, BusyError."},
    {"get_threads", get_threads, METH_NOARGS,
     "get_threads() -> int: the default context's thread budget (makes the context)."},
    {"default_context", default_context_get, METH_NOARGS,
     "default_context() -> Context: the context the module-level calls run on (made on "
     "first use). Do not close it or open sessions on it; use set_threads."},
    {NULL, NULL, 0, NULL}};

int tlpy_default_init(PyObject *m) {
  if (PyType_Ready(&slot_type) < 0) return -1;
  slot_key = PyUnicode_InternFromString("tenlane._core.default_session");
  if (!slot_key || PyModule_AddFunctions(m, default_methods) < 0) return -1;
  PyObject *modname = PyModule_GetNameObject(m);
  if (!modname) return -1;
  for (int i = 0; names[i]; i++) {
    const char *doc = NULL; /* the Session method's own text */
    for (PyMethodDef *d = tlpy_session_type.tp_methods; d && d->ml_name; d++)
      if (!strcmp(d->ml_name, names[i])) doc = d->ml_doc;
    dispatch_defs[i] = (PyMethodDef){names[i], (PyCFunction)(void (*)(void))dispatch,
                                     METH_FASTCALL | METH_KEYWORDS, doc};
    PyObject *name = PyUnicode_InternFromString(names[i]);
    PyObject *fn = name ? PyCFunction_NewEx(&dispatch_defs[i], name, modname) : NULL;
    Py_XDECREF(name);
    if (!fn || PyModule_AddObject(m, names[i], fn) < 0) {
      Py_XDECREF(fn);
      Py_DECREF(modname);
      return -1;
    }
  }
  Py_DECREF(modname);
  return 0;
}
