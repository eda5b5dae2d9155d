/* python/src/interrupt.c: Ctrl-C while a call runs without the GIL.
 *
 * Python runs its signal handlers on the main thread, between bytecodes: a thread blocked in
 * C (waiting for its lanes to join, or for a context another thread holds) sees SIGINT only
 * when the C call returns. A call that can run long watches instead: on the main thread,
 * for the length of the call, SIGINT's handler is one of ours that counts the signal and
 * then calls the handler that was there (Python's, which marks the signal for
 * PyErr_CheckSignals). The lanes read the count between items and stop taking work once it
 * moved; the driver, back with the GIL, runs Python's handler (PyErr_CheckSignals): a
 * KeyboardInterrupt propagates, a handler that returns lets the call go on. The handler that
 * was there is put back when the outermost watch ends, unless someone replaced ours
 * meanwhile. Nothing is installed where SIGINT is ignored or left to its default action, nor
 * on other threads (Python would never raise there). */
#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

static atomic_uint interrupts;    /* SIGINTs our handler saw */
static struct sigaction previous; /* the handler ours calls; set before ours goes in */
static int depth;                 /* nested watches on the main thread (GIL held) */
static int installed;             /* ours is in place (GIL held) */
static unsigned long main_ident;  /* the main thread's ident, once known */

static void on_sigint(int sig, siginfo_t *info, void *context) {
  int saved = errno;
  atomic_fetch_add_explicit(&interrupts, 1, memory_order_relaxed);
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

void tlpy_watch_begin(tlpy_watch *watch) {
  watch->active = 0;
  watch->seen = atomic_load_explicit(&interrupts, memory_order_relaxed);
  if (!tlpy_on_main_thread()) return;
  if (depth++ > 0) {
    watch->active = installed;
    return;
  }
  struct sigaction now;
  if (sigaction(SIGINT, NULL, &now) != 0) return;
  int handled =
      (now.sa_flags & SA_SIGINFO) || (now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN);
  if (!handled) return; /* ignored, or the default action ends the process anyway */
  previous = now;
  struct sigaction ours;
  memset(&ours, 0, sizeof ours);
  ours.sa_sigaction = on_sigint;
  ours.sa_mask = now.sa_mask;
  ours.sa_flags = (now.sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
  if (sigaction(SIGINT, &ours, NULL) != 0) return;
  installed = 1;
  watch->active = 1;
}

int tlpy_watch_fired(const tlpy_watch *watch) {
  return watch->active && atomic_load_explicit(&interrupts, memory_order_relaxed) != watch->seen;
}

void tlpy_watch_rearm(tlpy_watch *watch) {
  watch->seen = atomic_load_explicit(&interrupts, memory_order_relaxed);
}

void tlpy_watch_end(tlpy_watch *watch) {
  if (!tlpy_on_main_thread() || depth == 0) return;
  if (--depth > 0 || !installed) return;
  installed = 0;
  struct sigaction now;
  /* Put the old handler back only if ours is still the one in place: a callback that ran
   * signal.signal() meanwhile made its choice, and ours calls nothing any more. */
  if (sigaction(SIGINT, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
      now.sa_sigaction == on_sigint)
    sigaction(SIGINT, &previous, NULL);
  (void)watch;
}
