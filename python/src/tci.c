/* python/src/tci.c: tenlane.tci's engine. crossinterpolate runs the C library of examples/tci
 * (docs/tci.md) on the lanes of a held session: the patches fan out over the lanes exactly as
 * in tenlane-tci, the linear algebra runs without the GIL, and each lane takes the GIL only
 * to call the user's Python function on a batch of grid indices. The trains are the C
 * library's, so they are the same bits for any number of lanes.
 *
 * Failures: an exception raised by f (the first one, on whichever lane) is raised again
 * unchanged once every lane has joined; a value that is not a real number array of the
 * right length is a TypeError or ValueError naming the batch; anything the C library
 * refuses comes back as (code, message) for tenlane.tci to raise as TCIError. Ctrl-C on the
 * main thread stops every lane at its next batch and raises KeyboardInterrupt. */
#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

#include "tci.h"

typedef struct tci_call {
  PyObject *f;
  tlpy_watch watch;
  PyObject *error; /* the first exception of a batch (GIL held to touch it) */
} tci_call;

/* Keep the pending exception as the call's first failure (GIL held). */
static void keep_error(tci_call *call) {
  PyObject *value = tlpy_exception_take();
  if (!call->error) call->error = Py_XNewRef(value);
  Py_XDECREF(value);
}

/* The tci_index_fn the lanes call: f on one batch, under the GIL. */
static int call_python(const uint64_t *index, size_t n, int dims, double *y, void *arg) {
  tci_call *call = arg;
  if (tlpy_watch_fired(&call->watch)) return 2; /* Ctrl-C: stop at this batch */
  PyGILState_STATE gil = PyGILState_Ensure();
  int rc = 1;
  if (call->error) goto done; /* another lane failed: the run is stopping */
  npy_intp shape[2] = {(npy_intp)n, (npy_intp)dims};
  PyObject *points = PyArray_SimpleNew(2, shape, NPY_INT64);
  if (!points) {
    keep_error(call);
    goto done;
  }
  memcpy(PyArray_DATA((PyArrayObject *)points), index, n * (size_t)dims * sizeof(uint64_t));
  PyObject *r = PyObject_CallOneArg(call->f, points);
  Py_DECREF(points);
  if (!r) {
    keep_error(call);
    goto done;
  }
  /* Safe casting only: bools and integers become float64, complex values are refused. */
  PyArrayObject *v = (PyArrayObject *)PyArray_FROMANY(r, NPY_FLOAT64, 0, 1, NPY_ARRAY_CARRAY_RO);
  Py_DECREF(r);
  if (!v) { /* a TypeError naming the batch, numpy's own error as its cause */
    PyObject *cause = tlpy_exception_take();
    PyErr_Format(PyExc_TypeError,
                 "tenlane.tci.crossinterpolate: f must return n real numbers for a batch of n "
                 "indices; on a batch of %zu it returned something numpy cannot read as that "
                 "without loss",
                 n);
    tlpy_exception_chain(cause);
    Py_XDECREF(cause);
    keep_error(call);
    goto done;
  }
  if ((size_t)PyArray_SIZE(v) != n) {
    PyErr_Format(PyExc_ValueError,
                 "tenlane.tci.crossinterpolate: f returned %zd values for a batch of %zu indices",
                 (Py_ssize_t)PyArray_SIZE(v), n);
    Py_DECREF(v);
    keep_error(call);
    goto done;
  }
  memcpy(y, PyArray_DATA(v), n * sizeof(double));
  Py_DECREF(v);
  rc = 0;
done:
  PyGILState_Release(gil);
  return rc;
}

/* The kept train as a list of (prefix tuple, [cores]) with cores (r, local_dim, r') arrays. */
static PyObject *pieces_of(const tci_train *train) {
  PyObject *pieces = PyList_New((Py_ssize_t)train->count);
  for (size_t i = 0; pieces && i < train->count; i++) {
    const tci_piece *p = train->pieces[i];
    PyObject *prefix = PyTuple_New(p->patch.prefix_len);
    PyObject *cores = PyList_New(p->n);
    for (int k = 0; prefix && k < p->patch.prefix_len; k++)
      PyTuple_SET_ITEM(prefix, k, PyLong_FromLong(p->patch.prefix[k]));
    for (int k = 0; cores && k < p->n; k++) {
      npy_intp shape[3] = {p->rank[k], train->grid.local_dim, p->rank[k + 1]};
      PyObject *core = PyArray_SimpleNew(3, shape, NPY_FLOAT64);
      if (!core) break;
      memcpy(PyArray_DATA((PyArrayObject *)core), p->core[k],
             (size_t)(shape[0] * shape[1] * shape[2]) * sizeof(double));
      PyList_SET_ITEM(cores, k, core);
    }
    if (!prefix || !cores || PyErr_Occurred()) {
      Py_XDECREF(prefix);
      Py_XDECREF(cores);
      Py_CLEAR(pieces);
      break;
    }
    PyList_SET_ITEM(pieces, (Py_ssize_t)i, Py_BuildValue("(NN)", prefix, cores));
  }
  return pieces;
}

static int read_box(PyObject *seq, int dims, double *out, const char *name) {
  PyObject *fast = PySequence_Fast(seq, "tenlane.tci: lo and hi must be sequences");
  if (!fast) return -1;
  if (PySequence_Fast_GET_SIZE(fast) != dims) {
    PyErr_Format(PyExc_ValueError, "tenlane.tci: %s has %zd entries for %d variables", name,
                 PySequence_Fast_GET_SIZE(fast), dims);
    Py_DECREF(fast);
    return -1;
  }
  for (int v = 0; v < dims; v++) {
    out[v] = PyFloat_AsDouble(PySequence_Fast_GET_ITEM(fast, v));
    if (out[v] == -1.0 && PyErr_Occurred()) {
      Py_DECREF(fast);
      return -1;
    }
  }
  Py_DECREF(fast);
  return 0;
}

/* _tci_run(session, f, dims, bits, fused, lo, hi, tol, max_bond, max_sweeps, patching,
 *          min_free_sites, seed, max_lanes) -> (0, "", pieces, stats) or (code, message, None,
 *          None). */
PyObject *tlpy_tci_run(PyObject *module, PyObject *args) {
  (void)module;
  static const char *where = "tenlane.tci.crossinterpolate";
  PyObject *session_obj, *f, *lo_obj, *hi_obj;
  int dims, bits, fused, max_bond, max_sweeps, patching, min_free_sites, max_lanes;
  double tol;
  unsigned long long seed;
  if (!PyArg_ParseTuple(args, "O!OiipOOdiipiKi:_tci_run", &tlpy_session_type, &session_obj, &f,
                        &dims, &bits, &fused, &lo_obj, &hi_obj, &tol, &max_bond, &max_sweeps,
                        &patching, &min_free_sites, &seed, &max_lanes))
    return NULL;
  tlpy_session *s = (tlpy_session *)session_obj;
  if (!tlpy_session_exec(s, where)) return NULL;
  if (!PyCallable_Check(f)) return tlpy_raise(TL_E_INVALID, "%s: f is not callable", where);
  char why[TCI_WHY] = "";
  if (dims < 1 || dims > TCI_MAX_DIMS)
    return Py_BuildValue("(isOO)", TCI_E_ARG, "dims must be 1..3", Py_None, Py_None);
  double lo[TCI_MAX_DIMS], hi[TCI_MAX_DIMS];
  if (read_box(lo_obj, dims, lo, "lo") < 0 || read_box(hi_obj, dims, hi, "hi") < 0) return NULL;
  tci_grid grid;
  int rc = tci_grid_init(&grid, dims, bits, fused ? TCI_FUSED : TCI_INTERLEAVED, lo, hi, why);
  if (rc) return Py_BuildValue("(isOO)", rc, why, Py_None, Py_None);
  tci_call call = {.f = f};
  tci_function function = {.name = "f",
                           .about = "a Python function of grid indices",
                           .dims = dims,
                           .index_fn = call_python,
                           .arg = &call,
                           .bits = bits};
  memcpy(function.lo, lo, sizeof lo);
  memcpy(function.hi, hi, sizeof hi);
  tci_options options;
  tci_options_init(&options);
  options.tol = tol;
  options.max_bond = max_bond;
  options.max_sweeps = max_sweeps;
  options.patching = patching;
  options.min_free_sites = min_free_sites;
  options.seed = seed;
  options.max_lanes = max_lanes;
  tci_train train;
  tci_stats stats;
  tlpy_watch_begin(&call.watch);
  for (;;) {
    if (PyErr_CheckSignals() < 0) { /* a SIGINT from before the run began */
      tlpy_watch_end(&call.watch);
      return NULL;
    }
    Py_BEGIN_ALLOW_THREADS;
    rc = tci_run_lanes(s->session, &grid, &function, &options, &train, &stats, why);
    Py_END_ALLOW_THREADS;
    if (call.error || !tlpy_watch_fired(&call.watch)) break;
    /* Ctrl-C stopped the lanes: Python's handler runs here. If it returns, run again. */
    if (rc == TCI_OK) tci_train_free(&train);
    if (PyErr_CheckSignals() < 0) {
      tlpy_watch_end(&call.watch);
      return NULL;
    }
    tlpy_watch_rearm(&call.watch);
  }
  tlpy_watch_end(&call.watch);
  if (call.error) { /* f's own exception, raised again as it was */
    if (rc == TCI_OK) tci_train_free(&train);
    PyErr_SetObject((PyObject *)Py_TYPE(call.error), call.error);
    Py_DECREF(call.error);
    return NULL;
  }
  if (rc) return Py_BuildValue("(isOO)", rc, why, Py_None, Py_None);
  PyObject *pieces = pieces_of(&train);
  tci_train_free(&train);
  if (!pieces) return NULL;
  return Py_BuildValue("(isN{s:K,s:K,s:n,s:n,s:d,s:i,s:d,s:d})", 0, "", pieces, "evaluations",
                       (unsigned long long)stats.evaluations, "lookups",
                       (unsigned long long)stats.lookups, "patches_run",
                       (Py_ssize_t)stats.patches_run, "splits", (Py_ssize_t)stats.splits, "seconds",
                       stats.seconds, "lanes", stats.lanes, "busy_seconds", stats.busy_seconds,
                       "chain_seconds", stats.chain_seconds);
}
