/* python/src/context.c: tenlane.Context, the engine object (tl_context). */
#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <limits.h>
#include <sched.h>

/* The CPUs the calling thread may run on, ascending, into cpus; returns how many (0 when
 * the mask cannot be read: then nothing is pinned). */
static int allowed_cpus(int cpus[CPU_SETSIZE]) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int count = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
    if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
  return count;
}

/* cpus=[...]: the CPU set to pin to, in order (at most CPU_SETSIZE); -1 with an error. */
static int cpu_set(PyObject *list, int cpus[CPU_SETSIZE]) {
  PyObject *seq = PySequence_Fast(list, "tenlane.Context: cpus must be a sequence of ints");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  if (n > CPU_SETSIZE) n = CPU_SETSIZE + 1;
  for (Py_ssize_t k = 0; k < n && k < CPU_SETSIZE; k++) {
    long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
    if (v == -1 && PyErr_Occurred()) break;
    cpus[k] = v < INT_MIN || v > INT_MAX ? -1 : (int)v; /* tl_context_create names a bad one */
  }
  Py_DECREF(seq);
  if (PyErr_Occurred()) return -1;
  if (n > CPU_SETSIZE) {
    tlpy_raise(TL_E_INVALID, "tenlane.Context: cpus holds more than %d entries", CPU_SETSIZE);
    return -1;
  }
  return (int)n;
}

static int context_init(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"threads", "pin", "cpus", "scratch_limit", "spin_us", NULL};
  int threads = 0, pin = 1, spin_us = -1;
  unsigned long long scratch_limit = 0;
  PyObject *cpu_list = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ip$OKi:Context", keywords, &threads, &pin,
                                   &cpu_list, &scratch_limit, &spin_us))
    return -1;
  tlpy_context *c = (tlpy_context *)self;
  if (c->ctx) {
    tlpy_raise(TL_E_INVALID, "tenlane.Context: this context is already created");
    return -1;
  }
  tl_context_config config;
  tl_context_config_init(&config);
  config.threads = threads;
  config.scratch_limit = (size_t)scratch_limit;
  config.spin_us = spin_us;
  /* Pinned by default: unpinned workers woken from the same CPU were left there by the
   * scheduler for whole batches (two lanes ran at 1.0-1.5x one lane). The C library leaves
   * the choice to its caller; the Python binding makes it here, as the demos do. */
  int cpus[CPU_SETSIZE];
  int count = pin && cpu_list == Py_None ? allowed_cpus(cpus) : 0;
  if (pin && cpu_list != Py_None && (count = cpu_set(cpu_list, cpus)) < 0) return -1;
  if (count > 0) {
    config.cpus = cpus;
    config.cpu_count = count;
  }
  tl_status status = tl_context_create(&config, &c->ctx);
  if (status != TL_OK) {
    c->ctx = NULL;
    tlpy_raise_last(status);
    return -1;
  }
  c->threads = tl_context_budget(c->ctx);
  return 0;
}

static void context_dealloc(PyObject *self) {
  tlpy_context *c = (tlpy_context *)self;
  /* A session keeps its context alive, so none is open here; a failure would only leak. */
  if (c->ctx) tl_context_destroy(c->ctx);
  Py_TYPE(self)->tp_free(self);
}

static PyObject *context_session(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"wait", NULL};
  int wait = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:session", keywords, &wait)) return NULL;
  tlpy_context *c = (tlpy_context *)self;
  if (!c->ctx) return tlpy_raise(TL_E_STALE, "tenlane.Context.session: the context is closed");
  tlpy_session *s = PyObject_New(tlpy_session, &tlpy_session_type);
  if (!s) return NULL;
  s->context = (tlpy_context *)Py_NewRef(self);
  s->session = NULL;
  s->exec = NULL;
  s->thread = 0;
  s->serial = 0;
  s->owner = 0;
  s->wait = wait;
  return (PyObject *)s;
}

static PyObject *context_close(PyObject *self, PyObject *unused) {
  (void)unused;
  tlpy_context *c = (tlpy_context *)self;
  if (c->ctx) {
    tl_status status = tl_context_destroy(c->ctx);
    if (status != TL_OK) return tlpy_raise_last(status);
    c->ctx = NULL;
  }
  Py_RETURN_NONE;
}

static PyObject *context_enter(PyObject *self, PyObject *unused) {
  (void)unused;
  return Py_NewRef(self);
}

static PyObject *context_exit(PyObject *self, PyObject *args) {
  (void)args;
  return context_close(self, NULL);
}

static PyObject *context_threads(PyObject *self, void *unused) {
  (void)unused;
  return PyLong_FromLong(((tlpy_context *)self)->threads);
}

static PyObject *context_closed(PyObject *self, void *unused) {
  (void)unused;
  return PyBool_FromLong(((tlpy_context *)self)->ctx == NULL);
}

static PyMethodDef context_methods[] = {
    {"session", (PyCFunction)(void (*)(void))context_session, METH_VARARGS | METH_KEYWORDS,
     "session(wait=True) -> Session\n\n"
     "A held session, opened by `with ctx.session() as s:` on the calling thread and closed "
     "when the block ends. One session holds the context at a time: with wait=True a second "
     "opener waits (the GIL is released while it waits), with wait=False it gets BusyError. "
     "Use the session only on the thread that opened it (elsewhere: WrongThreadError)."},
    {"close", context_close, METH_NOARGS,
     "close(): destroy the context now (joins its workers). BusyError while a session is "
     "open. Results made on it stay valid. Also done by `with Context() as ctx:` and when "
     "the context is collected."},
    {"__enter__", context_enter, METH_NOARGS, "Returns the context."},
    {"__exit__", context_exit, METH_VARARGS, "Closes the context."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef context_getset[] = {
    {"threads", context_threads, NULL, "The thread budget: the lanes a map runs on.", NULL},
    {"closed", context_closed, NULL, "True once close() ran.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tlpy_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tenlane.Context",
    .tp_basicsize = sizeof(tlpy_context),
    .tp_dealloc = context_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "Context(threads=0, pin=True, *, cpus=None, scratch_limit=0, spin_us=-1)\n\n"
        "The engine: a thread budget (0 = one per CPU this thread may use) and, above 1, a "
        "pool of that many workers, one per lane (1 = no pool and no thread). With pin=True "
        "each worker is pinned to one CPU of those the creating thread may use (its affinity "
        "mask, spread evenly), and a session's thread is kept inside that set while it holds the "
        "session; pin=False leaves every thread where the scheduler puts it. Numerical work "
        "enters through a session (ctx.session()). cpus lists the CPUs to pin to instead of the "
        "affinity mask (with pin=True); scratch_limit caps the bytes one scratch arena may hold "
        "(0: the library's default); spin_us is the workers' idle spin window in "
        "microseconds (-1: the default, at most 10000). The context may be made and closed on "
        "any thread; it is closed when collected. Arrays it computed own their memory and "
        "outlive it.",
    .tp_methods = context_methods,
    .tp_getset = context_getset,
    .tp_init = context_init,
    .tp_new = PyType_GenericNew,
};
