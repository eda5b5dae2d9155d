/* python/src/linalg.c: Session.qr, qrcp, svd, lu, solve and eigh over tenlane's LAPACK
 * routes; the SVD and pivoted QR item functions are shared with the map_* calls (lanes.c)
 * so a batched item computes exactly what a single call does.
 *
 * Truncation keywords: tol (relative to the largest value), atol (absolute) and max_rank
 * (0 = no cap), tenlane's tl_truncation; none given keeps everything. svd and qrcp return
 * the discarded weight of tenlane's tl_truncation_report (tl_svd_reported, tl_qrcp_reported): the
 * sum of the squares of the dropped singular values, or ||r22||_F^2 of the dropped rows. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

int tlpy_truncation(PyObject *tol, PyObject *atol, PyObject *max_rank, const char *where,
                    tl_truncation *out, int *any) {
  tl_truncation_init(out);
  *any = 0;
  if (tol && tol != Py_None) {
    out->rtol = PyFloat_AsDouble(tol);
    if (out->rtol == -1.0 && PyErr_Occurred()) return -1;
    *any = 1;
  }
  if (atol && atol != Py_None) {
    out->atol = PyFloat_AsDouble(atol);
    if (out->atol == -1.0 && PyErr_Occurred()) return -1;
    *any = 1;
  }
  if (max_rank && max_rank != Py_None) {
    out->max_rank = PyLong_AsLongLong(max_rank);
    if (out->max_rank == -1 && PyErr_Occurred()) return -1;
    *any = 1;
  }
  (void)where;
  return 0;
}

tl_status tlpy_svd_on(tl_exec *exec, const tl_tensor *a, const tl_truncation *truncation,
                      tlpy_svd_item *out) {
  memset(out, 0, sizeof *out);
  tl_truncation_report report;
  tl_status status = tl_svd_reported(exec, truncation, a, &out->u, &out->s, &out->vt, &report);
  if (status != TL_OK) return status;
  out->rank = report.rank;
  out->discarded = report.discarded_weight;
  return TL_OK;
}

/* A tuple of results; on failure every array made so far is dropped. */
static PyObject *pack(int n, PyObject **items) {
  for (int i = 0; i < n; i++)
    if (!items[i]) {
      for (int j = 0; j < n; j++) Py_XDECREF(items[j]);
      return NULL;
    }
  PyObject *t = PyTuple_New(n);
  if (!t) {
    for (int j = 0; j < n; j++) Py_DECREF(items[j]);
    return NULL;
  }
  for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, items[i]);
  return t;
}

PyObject *tlpy_svd_tuple(tlpy_svd_item *item) {
  PyObject *parts[4] = {tlpy_result(&item->u, NULL), tlpy_result(&item->s, NULL),
                        tlpy_result(&item->vt, NULL), PyFloat_FromDouble(item->discarded)};
  return pack(4, parts);
}

tl_status tlpy_qrcp_on(tl_exec *exec, const tl_tensor *a, const tl_truncation *truncation,
                       int64_t *perm, tlpy_qrcp_item *item) {
  tl_truncation_report report;
  tl_status status = tl_qrcp_reported(exec, truncation, a, &item->q, &item->r, perm, &report);
  if (status != TL_OK) return status;
  item->rank = report.rank;
  item->discarded = report.discarded_weight;
  return TL_OK;
}

PyObject *tlpy_qrcp_tuple(tlpy_qrcp_item *item) {
  PyObject *parts[4] = {tlpy_result(&item->q, NULL), tlpy_result(&item->r, NULL), item->perm,
                        PyFloat_FromDouble(item->discarded)};
  item->perm = NULL;
  return pack(4, parts);
}

/* ---- the methods ------------------------------------------------------------------- */

/* Reads the one matrix argument `a` of a method; returns its surface or NULL. */
static tl_exec *one_operand(PyObject *self, PyObject *obj, const char *where, tlpy_operand *op) {
  return tlpy_session_operands((tlpy_session *)self, where, obj, NULL, op);
}

/* The arguments (a, *, tol, max_rank, atol) of svd and qrcp (`format` names the method):
 * the surface, `a` read into op and the truncation (*truncation NULL when none is given,
 * else `storage`). NULL with an exception raised and nothing held on failure. */
static tl_exec *truncated_operand(PyObject *self, PyObject *args, PyObject *kwargs,
                                  const char *format, const char *where, tl_truncation *storage,
                                  const tl_truncation **truncation, tlpy_operand *op) {
  static char *keywords[] = {"a", "tol", "max_rank", "atol", NULL};
  PyObject *a_obj, *tol = NULL, *max_rank = NULL, *atol = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, format, keywords, &a_obj, &tol, &max_rank, &atol))
    return NULL;
  int any;
  if (tlpy_truncation(tol, atol, max_rank, where, storage, &any) < 0) return NULL;
  *truncation = any ? storage : NULL;
  return one_operand(self, a_obj, where, op);
}

#define BIG(op) (tl_tensor_numel(&(op).tensor) >= TLPY_NOGIL_ELEMENTS)

static PyObject *session_qr(PyObject *self, PyObject *a_obj) {
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, "tenlane.Session.qr", &op);
  if (!exec) return NULL;
  tl_tensor q, r;
  tl_status status;
  TLPY_RUN(BIG(op), status = tl_qr(exec, &op.tensor, &q, &r));
  tlpy_operand_release(&op);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[2] = {tlpy_result(&q, NULL), tlpy_result(&r, NULL)};
  return pack(2, parts);
}

static PyObject *session_qrcp(PyObject *self, PyObject *args, PyObject *kwargs) {
  tl_truncation storage;
  const tl_truncation *truncation;
  tlpy_operand op;
  tl_exec *exec = truncated_operand(self, args, kwargs, "O|$OOO:qrcp", "tenlane.Session.qrcp",
                                    &storage, &truncation, &op);
  if (!exec) return NULL;
  const tl_tensor *a = &op.tensor;
  npy_intp columns = a->rank == 2 ? (npy_intp)a->shape[1] : 0;
  tlpy_qrcp_item item;
  memset(&item, 0, sizeof item);
  item.perm = PyArray_SimpleNew(1, &columns, NPY_INT64);
  if (!item.perm) {
    tlpy_operand_release(&op);
    return NULL;
  }
  tl_status status;
  TLPY_RUN(BIG(op),
           status = tlpy_qrcp_on(exec, a, truncation,
                                 (int64_t *)PyArray_DATA((PyArrayObject *)item.perm), &item));
  tlpy_operand_release(&op);
  if (status != TL_OK) {
    Py_DECREF(item.perm);
    return tlpy_raise_last(status);
  }
  return tlpy_qrcp_tuple(&item);
}

static PyObject *session_svd(PyObject *self, PyObject *args, PyObject *kwargs) {
  tl_truncation storage;
  const tl_truncation *truncation;
  tlpy_operand op;
  tl_exec *exec = truncated_operand(self, args, kwargs, "O|$OOO:svd", "tenlane.Session.svd",
                                    &storage, &truncation, &op);
  if (!exec) return NULL;
  tlpy_svd_item item;
  tl_status status;
  TLPY_RUN(BIG(op), status = tlpy_svd_on(exec, &op.tensor, truncation, &item));
  tlpy_operand_release(&op);
  if (status != TL_OK) return tlpy_raise_last(status);
  return tlpy_svd_tuple(&item);
}

static PyObject *session_lu(PyObject *self, PyObject *a_obj) {
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, "tenlane.Session.lu", &op);
  if (!exec) return NULL;
  const tl_tensor *a = &op.tensor;
  npy_intp k = a->rank == 2 ? (npy_intp)(a->shape[0] < a->shape[1] ? a->shape[0] : a->shape[1]) : 0;
  PyObject *pivots = PyArray_SimpleNew(1, &k, NPY_INT64);
  if (!pivots) {
    tlpy_operand_release(&op);
    return NULL;
  }
  tl_tensor lu;
  tl_status status;
  TLPY_RUN(BIG(op), status = tl_lu(exec, a, &lu, (int64_t *)PyArray_DATA((PyArrayObject *)pivots)));
  tlpy_operand_release(&op);
  if (status != TL_OK) {
    Py_DECREF(pivots);
    return tlpy_raise_last(status);
  }
  PyObject *parts[2] = {tlpy_result(&lu, NULL), pivots};
  return pack(2, parts);
}

static PyObject *session_solve(PyObject *self, PyObject *args) {
  static const char *where = "tenlane.Session.solve";
  PyObject *a_obj, *b_obj;
  if (!PyArg_ParseTuple(args, "OO:solve", &a_obj, &b_obj)) return NULL;
  tlpy_operand ops[2];
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, b_obj, ops);
  if (!exec) return NULL;
  tl_tensor x;
  tl_status status;
  TLPY_RUN(BIG(ops[0]), status = tl_solve(exec, &ops[0].tensor, &ops[1].tensor, &x));
  tlpy_operand_release(&ops[0]);
  tlpy_operand_release(&ops[1]);
  return tlpy_result_or_raise(status, &x);
}

static PyObject *session_eigh(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.eigh";
  static char *keywords[] = {"a", "UPLO", NULL};
  PyObject *a_obj;
  const char *uplo = "L";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s:eigh", keywords, &a_obj, &uplo)) return NULL;
  if (strcmp(uplo, "L") && strcmp(uplo, "U"))
    return tlpy_raise(TL_E_INVALID, "%s: UPLO must be 'L' or 'U', not '%s'", where, uplo);
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, where, &op);
  if (!exec) return NULL;
  tl_tensor w, v;
  tl_status status;
  TLPY_RUN(BIG(op), status = tl_eigh(exec, *uplo == 'L' ? TL_LOWER : TL_UPPER, &op.tensor, &w, &v));
  tlpy_operand_release(&op);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[2] = {tlpy_result(&w, NULL), tlpy_result(&v, NULL)};
  return pack(2, parts);
}

#define CAST(f) (PyCFunction)(void (*)(void))(f)

PyMethodDef tlpy_linalg_methods[] = {
    {"qr", session_qr, METH_O,
     "qr(a) -> (q, r): thin QR of a matrix, q (m x k) with orthonormal columns, r (k x n) "
     "upper trapezoidal, k = min(m, n). Opening thread only."},
    {"qrcp", CAST(session_qrcp), METH_VARARGS | METH_KEYWORDS,
     "qrcp(a, *, tol=None, max_rank=None, atol=None) -> (q, r, perm, discarded): QR with "
     "column pivoting, a[:, perm] ~= q @ r, truncated where |r[i, i]| falls to max(atol, "
     "tol * |r[0, 0]|), at most max_rank kept (none given: rank min(m, n)). discarded is the "
     "squared Frobenius norm of the dropped rows of r (||a||^2 - ||r||^2: accurate to about "
     "eps * ||a||^2). Opening thread only."},
    {"svd", CAST(session_svd), METH_VARARGS | METH_KEYWORDS,
     "svd(a, *, tol=None, max_rank=None, atol=None) -> (u, s, vt, discarded): thin SVD "
     "a ~= u @ diag(s) @ vt, s descending (real), keeping the values above max(atol, tol * "
     "s[0]), at most max_rank of them (none given: all). discarded is the sum of the squares "
     "of the dropped values (the squared Frobenius error), from tenlane's report. Opening "
     "thread only."},
    {"lu", session_lu, METH_O,
     "lu(a) -> (lu, piv): LU with partial pivoting, LAPACK's packed form (unit lower "
     "triangle below the diagonal, u on and above); row i was swapped with row piv[i] "
     "(0-based), in order. Opening thread only."},
    {"solve", CAST(session_solve), METH_VARARGS,
     "solve(a, b) -> x: a @ x = b for a square a and b of n or n x r. InvalidError for an "
     "exactly singular a. Opening thread only."},
    {"eigh", CAST(session_eigh), METH_VARARGS | METH_KEYWORDS,
     "eigh(a, UPLO='L') -> (w, v): a = v @ diag(w) @ v^H for symmetric/Hermitian a, w "
     "ascending (real), reading only the UPLO triangle (numpy.linalg.eigh). Opening thread "
     "only."},
    {NULL, NULL, 0, NULL}};
