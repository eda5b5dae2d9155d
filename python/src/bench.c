/* python/src/bench.c: the C side of the Python benchmark (python/bench/bench_python.py).
 *
 * tenlane._time_c_einsum(session, spec, a, b, calls) makes `calls` times the exact C call
 * that Session.einsum makes for two operands (tl_einsum into a fresh tensor, released at
 * once), on the session's surface, and returns the mean nanoseconds of the calling thread's
 * CPU time per call. The
 * difference to Session.einsum is the Python layer's cost per call. */
#include "tlpy.h" /* first: Python.h sets the POSIX feature macros */

#include <time.h>

/* The calling thread's CPU time: on a shared machine, time spent descheduled is not the
 * call's (the Python side measures the same way, time.thread_time_ns). */
static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

PyObject *tlpy_time_c_einsum(PyObject *module, PyObject *args) {
  (void)module;
  static const char *where = "tenlane._time_c_einsum";
  PyObject *session, *a_obj, *b_obj;
  const char *spec;
  Py_ssize_t calls;
  if (!PyArg_ParseTuple(args, "O!sOOn", &tlpy_session_type, &session, &spec, &a_obj, &b_obj,
                        &calls))
    return NULL;
  tlpy_operand ops[2];
  tl_exec *exec = tlpy_session_operands((tlpy_session *)session, where, a_obj, b_obj, ops);
  if (!exec) return NULL;
  const tl_tensor *ptrs[2] = {&ops[0].tensor, &ops[1].tensor};
  tl_status status = TL_OK;
  double start = now_ns();
  for (Py_ssize_t i = 0; i < calls && status == TL_OK; i++) {
    tl_tensor out;
    status = tl_einsum(exec, spec, 2, ptrs, &out);
    if (status == TL_OK) tl_tensor_release(&out);
  }
  double elapsed = now_ns() - start;
  tlpy_operand_release(&ops[0]);
  tlpy_operand_release(&ops[1]);
  if (status != TL_OK) return tlpy_raise_last(status);
  return PyFloat_FromDouble(calls > 0 ? elapsed / (double)calls : 0.0);
}
