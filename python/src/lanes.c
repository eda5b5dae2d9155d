/* python/src/lanes.c: batched calls on the session's lanes, without the GIL.
 *
 * map_einsum, map_svd and map_qrcp read every item's operands first (GIL held, nothing
 * copied, each operand's owner referenced until the end), then run the items with
 * tl_map on the session's lanes with the GIL released: each item calls the same function
 * a single call does, on its lane's surface, into its own result slot. Results are
 * published only after the whole map succeeded, in item order. On a failure the lowest
 * failing item is raised (its class is the item's status, `item` its index); an operand
 * that cannot be read at item k counts as item k failing, after the items below it ran.
 *
 * map(fn, n) runs Python callbacks on the lanes: each takes the GIL for its call, so they
 * run one at a time (bound by the GIL; useful for callbacks that release it themselves). */
#include <string.h>

#include "tlpy.h"

enum { JOB_EINSUM, JOB_SVD, JOB_QRCP, JOB_PYTHON };

typedef struct lanes_job {
  int kind;
  size_t items;
  const char *spec;
  Py_ssize_t *starts, *counts; /* per item: its operands in ops[] */
  tlpy_operand *ops;
  const tl_tensor **ptrs; /* &ops[i].tensor */
  tl_tensor *einsum_out;
  tlpy_svd_item *svd_out;
  tlpy_qrcp_item *qrcp_out;
  const tl_truncation *truncation;
  int max_lanes; /* lanes that take items; 0 = all */
  /* JOB_PYTHON */
  PyObject *fn, *results;
  size_t py_failed; /* lowest item whose callback raised (items when none) */
  PyObject *py_error;
} lanes_job;

static int run_item(tl_exec *exec, size_t item, int lane_index, void *arg) {
  (void)lane_index;
  lanes_job *job = arg;
  Py_ssize_t s = job->starts[item];
  tl_exec_set_order(exec, TL_ORDER_ROW_MAJOR); /* as the session's own surface */
  switch (job->kind) {
    case JOB_EINSUM:
      return (int)tl_einsum(exec, job->spec, (int)job->counts[item], job->ptrs + s,
                            &job->einsum_out[item]);
    case JOB_SVD:
      return (int)tlpy_svd_on(exec, job->ptrs[s], job->truncation, &job->svd_out[item]);
    default:
      return (int)tlpy_qrcp_on(exec, job->ptrs[s], job->truncation, &job->qrcp_out[item]);
  }
}

static void job_free(lanes_job *job, size_t converted_ops) {
  for (size_t i = 0; i < converted_ops; i++) tlpy_operand_release(&job->ops[i]);
  for (size_t i = 0; i < job->items; i++) {
    if (job->einsum_out) tl_tensor_release(&job->einsum_out[i]);
    if (job->svd_out) {
      tl_tensor_release(&job->svd_out[i].u);
      tl_tensor_release(&job->svd_out[i].s);
      tl_tensor_release(&job->svd_out[i].vt);
    }
    if (job->qrcp_out) {
      tl_tensor_release(&job->qrcp_out[i].q);
      tl_tensor_release(&job->qrcp_out[i].r);
      Py_CLEAR(job->qrcp_out[i].perm);
    }
  }
  PyMem_Free(job->starts);
  PyMem_Free(job->counts);
  PyMem_Free(job->ops);
  PyMem_Free(job->ptrs);
  PyMem_Free(job->einsum_out);
  PyMem_Free(job->svd_out);
  PyMem_Free(job->qrcp_out);
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

/* Run tl_map over the first `count` items without the GIL; raise its failure. */
static int run_map(tl_session *session, const char *where, size_t count, tl_map_fn fn,
                   lanes_job *job) {
  tl_map_outcome outcome;
  tl_map_options options = {.max_lanes = job->max_lanes};
  tl_status status;
  Py_BEGIN_ALLOW_THREADS;
  status = tl_map_ex(session, count, fn, job, &options, &outcome);
  Py_END_ALLOW_THREADS;
  if (status == TL_OK) return 0;
  if (status == TL_E_LANE && outcome.failed) {
    char message[TL_MESSAGE_CAPACITY + 128];
    tl_status item_status = (tl_status)outcome.code;
    if (job->kind == JOB_PYTHON && job->py_error) {
      item_status = TL_E_LANE;
      PyObject *text = PyObject_Str(job->py_error);
      const char *said = text ? PyUnicode_AsUTF8(text) : NULL;
      if (!said) PyErr_Clear();
      snprintf(message, sizeof message, "%s: item %zu raised %s: %s", where, outcome.failed_item,
               Py_TYPE(job->py_error)->tp_name, said ? said : "?");
      Py_XDECREF(text);
    } else {
      snprintf(message, sizeof message, "%s: %s", where, outcome.message);
    }
    tlpy_raise_message(item_status, message, (Py_ssize_t)outcome.failed_item);
  } else {
    char message[TL_MESSAGE_CAPACITY + 128];
    snprintf(message, sizeof message, "%s: %s", where, outcome.message);
    tlpy_raise_message(status, message, -1);
  }
  return -1;
}

/* Read the items of `seq` (each a tuple of operands for einsum, one array otherwise). On
 * a bad item k, *bad = k and its exception is fetched into *pending. */
static int read_items(PyObject *seq, int tuples, const char *where, lanes_job *job,
                      size_t *converted, size_t *bad, PyObject *pending[3]) {
  size_t n = job->items, total = 0;
  PyObject **items = PySequence_Fast_ITEMS(seq);
  for (size_t i = 0; i < n; i++) {
    Py_ssize_t c = tuples && PySequence_Check(items[i]) ? PySequence_Size(items[i]) : 1;
    if (c < 0) return -1;
    total += (size_t)c;
  }
  job->starts = PyMem_Calloc(n + 1, sizeof *job->starts);
  job->counts = PyMem_Calloc(n + 1, sizeof *job->counts);
  job->ops = PyMem_Calloc(total + 1, sizeof *job->ops);
  job->ptrs = PyMem_Calloc(total + 1, sizeof *job->ptrs);
  if (!job->starts || !job->counts || !job->ops || !job->ptrs) {
    PyErr_NoMemory();
    return -1;
  }
  *bad = n;
  size_t at = 0;
  char what[64];
  for (size_t i = 0; i < n && *bad == n; i++) {
    PyObject *item = items[i];
    job->starts[i] = (Py_ssize_t)at;
    PyObject *inner = tuples ? PySequence_Fast(item, "tenlane: an item must be a tuple of arrays")
                             : PyTuple_Pack(1, item);
    if (!inner) {
      tag_item((Py_ssize_t)i);
      PyErr_Fetch(&pending[0], &pending[1], &pending[2]);
      *bad = i;
      break;
    }
    job->counts[i] = PySequence_Fast_GET_SIZE(inner);
    if (tuples && (job->counts[i] < 1 || job->counts[i] > TL_EINSUM_MAX_OPERANDS)) {
      tlpy_raise_message(TL_E_INVALID, "item has no operands or too many", (Py_ssize_t)i);
      PyErr_Fetch(&pending[0], &pending[1], &pending[2]);
      *bad = i;
    }
    for (Py_ssize_t j = 0; j < job->counts[i] && *bad == n; j++) {
      snprintf(what, sizeof what, tuples ? "item %zu operand %zd" : "item %zu", i, j);
      if (tlpy_operand_get(PySequence_Fast_GET_ITEM(inner, j), 0, where, what, &job->ops[at]) < 0) {
        tag_item((Py_ssize_t)i);
        PyErr_Fetch(&pending[0], &pending[1], &pending[2]);
        *bad = i;
        break;
      }
      job->ptrs[at] = &job->ops[at].tensor;
      at++;
    }
    Py_DECREF(inner);
  }
  *converted = at;
  return 0;
}

/* The shared driver of map_einsum, map_svd and map_qrcp. */
static PyObject *run_batch(tlpy_session *self, const char *where, PyObject *items_obj,
                           lanes_job *job) {
  if (!tlpy_session_exec(self, where)) return NULL;
  PyObject *seq = PySequence_Fast(items_obj, "tenlane: the items must be a sequence");
  if (!seq) return NULL;
  job->items = (size_t)PySequence_Fast_GET_SIZE(seq);
  size_t n = job->items, converted = 0, bad = n;
  PyObject *pending[3] = {NULL, NULL, NULL}, *list = NULL;
  if (read_items(seq, job->kind == JOB_EINSUM, where, job, &converted, &bad, pending) < 0)
    goto done;
  if (job->kind == JOB_EINSUM) job->einsum_out = PyMem_Calloc(n + 1, sizeof *job->einsum_out);
  if (job->kind == JOB_SVD) job->svd_out = PyMem_Calloc(n + 1, sizeof *job->svd_out);
  if (job->kind == JOB_QRCP) {
    job->qrcp_out = PyMem_Calloc(n + 1, sizeof *job->qrcp_out);
    for (size_t i = 0; job->qrcp_out && i < bad; i++)
      if (tlpy_qrcp_prepare(job->ptrs[job->starts[i]], &job->qrcp_out[i]) < 0) goto done;
  }
  if (!job->einsum_out && !job->svd_out && !job->qrcp_out) {
    PyErr_NoMemory();
    goto done;
  }
  if (bad > 0 && run_map(self->session, where, bad, run_item, job) < 0) goto done;
  if (bad < n) {
    PyErr_Restore(pending[0], pending[1], pending[2]);
    pending[0] = pending[1] = pending[2] = NULL;
    goto done;
  }
  list = PyList_New((Py_ssize_t)n);
  for (size_t i = 0; list && i < n; i++) {
    PyObject *r = job->kind == JOB_EINSUM ? tlpy_result(&job->einsum_out[i], NULL)
                  : job->kind == JOB_SVD  ? tlpy_svd_tuple(&job->svd_out[i])
                                          : tlpy_qrcp_tuple(&job->qrcp_out[i]);
    if (!r)
      Py_CLEAR(list);
    else
      PyList_SET_ITEM(list, (Py_ssize_t)i, r);
  }
done:
  Py_XDECREF(pending[0]);
  Py_XDECREF(pending[1]);
  Py_XDECREF(pending[2]);
  job_free(job, converted);
  Py_DECREF(seq);
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
  lanes_job job = {.kind = JOB_EINSUM, .spec = spec, .max_lanes = max_lanes};
  return run_batch((tlpy_session *)self, "tenlane.Session.map_einsum", items, &job);
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
  lanes_job job = {.kind = kind, .truncation = any ? &truncation : NULL, .max_lanes = max_lanes};
  return run_batch((tlpy_session *)self, where, items, &job);
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
  PyGILState_STATE gil = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction(job->fn, "n", (Py_ssize_t)item);
  int rc = 0;
  if (r) {
    PyList_SetItem(job->results, (Py_ssize_t)item, r); /* steals r */
  } else {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value && tb) PyException_SetTraceback(value, tb);
    if (item < job->py_failed) {
      job->py_failed = item;
      Py_XSETREF(job->py_error, Py_XNewRef(value));
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
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
  lanes_job job = {.kind = JOB_PYTHON, .fn = fn, .py_failed = (size_t)n, .max_lanes = max_lanes};
  job.results = PyList_New(n);
  if (!job.results) return NULL;
  for (Py_ssize_t i = 0; i < n; i++) PyList_SET_ITEM(job.results, i, Py_NewRef(Py_None));
  if (run_map(s->session, where, (size_t)n, python_item, &job) < 0) {
    if (job.py_error) { /* the callback's own exception becomes the cause */
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
     "same calls made one by one. A failure raises the lowest failing item's error (its "
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
     "time "
     "(lanes help only when fn releases the GIL, e.g. in a C extension). fn must not use the "
     "session (PhaseActiveError or WrongThreadError). When calls raise, LaneError names the "
     "lowest failing item (`item`) and its exception is the __cause__."},
    {NULL, NULL, 0, NULL}};
