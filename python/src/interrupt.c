/* python/src/interrupt.c: Ctrl-C while a call runs without the GIL.
 *
 * Python runs its signal handlers on the main thread, between bytecodes: a thread blocked in
 * C (waiting for its lanes to join, or for a context another thread holds) sees SIGINT only
 * when the C call returns. A call that can run long watches instead: on the main thread,
 * for the length of the call, SIGINT's handler is one of ours that counts the signal and
 * then calls the handler that was there (Python's, which marks the signal for
 * PyErr_CheckSignals). The lanes read the count between items and stop taking work once it
 * moved; the driver, back with the GIL, runs Python's handler (PyErr_CheckSignals): a
 * KeyboardInterrupt propagates, a handler that returns lets the call go on. Once in, ours
 * stays after the call: between calls it only counts and forwards, so Python sees what it
 * would have seen, and each call is spared two of its four system calls (about 1.5 us
 * each on this project's VMs, which was most of a trace's time on a 1024^2 array). A
 * handler set meanwhile (signal.signal) replaces ours; the next call finds that out and
 * puts ours in front of it (still_in_front says when the query can be skipped). Nothing
 * is installed where SIGINT is ignored or left to its default action, nor on other
 * threads (Python would never raise there). */
#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

static atomic_uint interrupts; /* SIGINTs our handler saw */
/* The surface of the single long call the main thread runs without the GIL (tlpy_cancel_begin),
 * or NULL: our handler raises its cancellation flag (tl_exec_cancel is one atomic store,
 * safe in a signal handler). */
static _Atomic(tl_exec *) cancel_target;
static struct sigaction previous; /* the handler ours calls; set while ours is not in place */
static int depth;                 /* nested watches on the main thread (GIL held) */
static int installed;             /* ours is in place for the outermost watch (GIL held) */
static unsigned long main_ident;  /* the main thread's ident, once known */

static void on_sigint(int sig, siginfo_t *info, void *context) {
  int saved = errno;
  atomic_fetch_add_explicit(&interrupts, 1, memory_order_relaxed);
  tl_exec *target = atomic_load_explicit(&cancel_target, memory_order_acquire);
  if (target != NULL) tl_exec_cancel(target);
  if (previous.sa_flags & SA_SIGINFO)
    previous.sa_sigaction(sig, info, context);
  else
    previous.sa_handler(sig);
  errno = saved;
}

int tlpy_on_main_thread(void) {
  if (main_ident == 0) {
    PyObject *threading = PyImport_ImportModule("threading");
    PyObject *main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
    PyObject *ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
    if (ident) main_ident = PyLong_AsUnsignedLong(ident);
    if (PyErr_Occurred()) PyErr_Clear(); /* unknown: no thread counts as the main one */
    Py_XDECREF(ident);
    Py_XDECREF(main);
    Py_XDECREF(threading);
  }
  return main_ident != 0 && PyThread_get_thread_ident() == main_ident;
}

/* SIGINT's Python-level handler (a new reference; NULL, with no error set, when it cannot be
 * told). _signal is the C module under signal: signal.getsignal wraps the same call in
 * Python and tries to turn the handler into an enum member, which raises and catches a
 * ValueError whenever the handler is a function (default_int_handler is one): about a
 * microsecond of every call. GIL held. */
static PyObject *python_handler(void) {
  static PyObject *getsignal;
  if (getsignal == NULL) {
    PyObject *module = PyImport_ImportModule("_signal");
    if (module == NULL) { /* not CPython's layout: the public module */
      PyErr_Clear();
      module = PyImport_ImportModule("signal");
    }
    if (module != NULL) getsignal = PyObject_GetAttrString(module, "getsignal");
    Py_XDECREF(module);
  }
  PyObject *now = getsignal ? PyObject_CallFunction(getsignal, "i", SIGINT) : NULL;
  if (PyErr_Occurred()) PyErr_Clear();
  return now;
}

/* The query that ours is still in front costs a system call, and on this project's VMs a
 * system call also empties the TLB: a row sum of a 1024^2 array took 141 us with it and 125
 * us without. The query is skipped while Python's handler is the object it was when ours
 * was last seen in front, for at most a second: signal.signal, the way Python code replaces
 * a handler, also changes that object. What the skip cannot see (C code replacing the
 * handler with sigaction, or signal.signal putting back the very same handler) is seen by
 * the next query, within a second; until then a call may go unwatched, which leaves Ctrl-C
 * to act when it returns, as it would without tenlane. GIL held. */
static PyObject *front_handler;  /* Python's handler when ours was last seen in front */
static struct timespec front_at; /* when that was */
/* front_handler when the outermost tlpy_watch_begin now running read it (so that
 * tlpy_cancel_begin need not read it again), else NULL. Borrowed. */
static PyObject *begin_handler;
static void note_in_front(void) {
  Py_XSETREF(front_handler, python_handler());
  if (clock_gettime(CLOCK_MONOTONIC, &front_at) != 0) Py_CLEAR(front_handler);
  begin_handler = front_handler;
}
static int still_in_front(void) {
  if (front_handler == NULL) return 0;
  struct timespec t;
  if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0;
  const double age =
      (double)(t.tv_sec - front_at.tv_sec) + 1e-9 * (double)(t.tv_nsec - front_at.tv_nsec);
  if (age < 0.0 || age >= 1.0) return 0;
  PyObject *now = python_handler();
  const int same = now != NULL && now == front_handler;
  Py_XDECREF(now);
  if (same) begin_handler = front_handler;
  return same;
}

void tlpy_watch_begin(tlpy_watch *watch) {
  watch->active = 0;
  watch->seen = atomic_load_explicit(&interrupts, memory_order_relaxed);
  if (!tlpy_on_main_thread()) return;
  begin_handler = NULL;
  if (depth++ > 0) {
    watch->active = installed;
    return;
  }
  installed = 0;
  if (still_in_front()) {
    installed = 1;
    watch->active = 1;
    return;
  }
  struct sigaction now;
  if (sigaction(SIGINT, NULL, &now) != 0) return;
  if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigint) {
    installed = 1; /* still in place from an earlier call, in front of `previous` */
    watch->active = 1;
    note_in_front();
    return;
  }
  int handled =
      (now.sa_flags & SA_SIGINFO) || (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
  if (!handled) return; /* ignored, or the default action ends the process anyway */
  previous = now;       /* ours is not in place: no handler of ours reads it now */
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_sigint;
  ours.sa_mask = now.sa_mask;
  ours.sa_flags = (now.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  if (sigaction(SIGINT, &ours, NULL) != 0) return;
  installed = 1;
  watch->active = 1;
  note_in_front();
}

int tlpy_watch_fired(const tlpy_watch *watch) {
  return watch->active && atomic_load_explicit(&interrupts, memory_order_relaxed) != watch->seen;
}

void tlpy_watch_rearm(tlpy_watch *watch) {
  watch->seen = atomic_load_explicit(&interrupts, memory_order_relaxed);
}

void tlpy_watch_end(tlpy_watch *watch) {
  if (!tlpy_on_main_thread() || depth == 0) return;
  /* Ours stays in place (see the top of this file); the next call checks it is. */
  if (--depth == 0) installed = 0;
  (void)watch;
}

/* 1 when SIGINT's Python-level handler is signal.default_int_handler (which raises
 * KeyboardInterrupt): the one the watch just read, when it read one. Main thread, GIL held;
 * any failure to tell counts as 0. */
static int default_handler_in_place(void) {
  static PyObject *standard; /* looked up once and kept for the process */
  if (standard == NULL) {
    PyObject *module = PyImport_ImportModule("signal");
    if (module != NULL) standard = PyObject_GetAttrString(module, "default_int_handler");
    Py_XDECREF(module);
    if (PyErr_Occurred()) PyErr_Clear();
  }
  PyObject *now = begin_handler ? Py_NewRef(begin_handler) : python_handler();
  const int same = now != NULL && standard != NULL && now == standard;
  Py_XDECREF(now);
  return same;
}

void tlpy_cancel_begin(tlpy_cancel *cancel, tl_exec *exec) {
  cancel->exec = NULL;
  cancel->previous = NULL;
  tlpy_watch_begin(&cancel->watch);
  /* A handler that returns would let the call go on (as a map goes on): the call is then
   * left to finish, and the handler runs when it returns. */
  if (!cancel->watch.active || exec == NULL || !default_handler_in_place()) return;
  cancel->exec = exec;
  cancel->previous = atomic_exchange_explicit(&cancel_target, exec, memory_order_acq_rel);
}

void tlpy_cancel_end(tlpy_cancel *cancel) {
  if (cancel->exec != NULL) {
    atomic_store_explicit(&cancel_target, cancel->previous, memory_order_release);
    /* The call has returned on this thread: lower the flag so that the session works on
     * (the status the call returned already says whether it was cancelled). */
    (void)tl_exec_cancel_clear(cancel->exec);
  }
  tlpy_watch_end(&cancel->watch);
}
