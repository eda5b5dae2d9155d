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

#define BIG(op) (tl_tensor_numel(&(op).tensor) >= TLPY_NOGIL_ELEMENTS)

/* A tuple of the arrays given as out, or NULL. */
static PyObject *outs_tuple(int n, PyObject *const *items) {
  PyObject *t = PyTuple_New(n);
  if (!t) return NULL;
  for (int i = 0; i < n; i++) PyTuple_SET_ITEM(t, i, Py_NewRef(items[i]));
  return t;
}

static void release_ops(int n, tlpy_operand *ops) {
  for (int i = 0; i < n; i++) tlpy_operand_release(&ops[i]);
}

/* The out= of a factorization returning n arrays: items[] and their writable operands, or
 * -1 with the error raised, nothing held, and `op` (the input) released. */
static int factor_outs(PyObject *out_obj, int n, const char *where, const char *shape_text,
                       PyObject **items, tlpy_operand *outs, tlpy_operand *op) {
  if (tlpy_out_tuple(out_obj, n, where, shape_text, items) < 0 ||
      tlpy_out_get_all(n, items, where, outs) < 0) {
    tlpy_operand_release(op);
    return -1;
  }
  return 0;
}

/* `a` as a matrix: 0, or -1 with ShapeError naming its rank (for calls that size caller
 * memory from its extents before the route runs). */
static int need_matrix(const tl_tensor *a, const char *where) {
  if (a->rank == 2) return 0;
  tlpy_raise(TL_E_SHAPE, "%s: a has %d axes; it takes a matrix (2 axes)", where, a->rank);
  return -1;
}

static PyObject *session_qr(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.qr";
  static char *keywords[] = {"a", "out", NULL};
  PyObject *a_obj, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:qr", keywords, &a_obj, &out_obj))
    return NULL;
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, where, &op);
  if (!exec) return NULL;
  tl_status status;
  if (tlpy_out_given(out_obj)) {
    PyObject *items[2];
    tlpy_operand outs[2];
    if (factor_outs(out_obj, 2, where, "(q, r)", items, outs, &op) < 0) return NULL;
    TLPY_RUN(BIG(op), status = tl_qr_into(exec, &op.tensor, &outs[0].tensor, &outs[1].tensor));
    release_ops(2, outs);
    tlpy_operand_release(&op);
    return status == TL_OK ? outs_tuple(2, items) : tlpy_raise_last(status);
  }
  tl_tensor q, r;
  TLPY_RUN(BIG(op), status = tl_qr(exec, &op.tensor, &q, &r));
  tlpy_operand_release(&op);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[2] = {tlpy_result(&q, NULL), tlpy_result(&r, NULL)};
  return pack(2, parts);
}

/* qrcp into the caller's (q, r, perm): q and r are cut to the rank kept. */
static PyObject *qrcp_into(tl_exec *exec, const char *where, tlpy_operand *op,
                           const tl_truncation *truncation, PyObject *out_obj) {
  PyObject *items[3];
  tlpy_operand outs[2];
  if (tlpy_out_tuple(out_obj, 3, where, "(q, r, perm)", items) < 0 ||
      need_matrix(&op->tensor, where) < 0) {
    tlpy_operand_release(op);
    return NULL;
  }
  int64_t *perm = tlpy_out_index(items[2], op->tensor.shape[1], where, "out[2] (perm)");
  if (!perm || tlpy_out_get_all(2, items, where, outs) < 0) {
    tlpy_operand_release(op);
    return NULL;
  }
  tl_truncation_report report;
  tl_status status;
  TLPY_RUN(BIG(*op), status = tl_qrcp_reported_into(exec, truncation, &op->tensor, &outs[0].tensor,
                                                    &outs[1].tensor, perm, &report));
  release_ops(2, outs);
  tlpy_operand_release(op);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[4] = {tlpy_out_leading(items[0], 1, report.rank),
                        tlpy_out_leading(items[1], 0, report.rank), Py_NewRef(items[2]),
                        PyFloat_FromDouble(report.discarded_weight)};
  return pack(4, parts);
}

static PyObject *session_qrcp(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.qrcp";
  static char *keywords[] = {"a", "tol", "max_rank", "atol", "out", NULL};
  PyObject *a_obj, *tol = NULL, *max_rank = NULL, *atol = NULL, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$OOOO:qrcp", keywords, &a_obj, &tol, &max_rank,
                                   &atol, &out_obj))
    return NULL;
  tl_truncation storage;
  int any;
  if (tlpy_truncation(tol, atol, max_rank, where, &storage, &any) < 0) return NULL;
  const tl_truncation *truncation = any ? &storage : NULL;
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, where, &op);
  if (!exec) return NULL;
  if (tlpy_out_given(out_obj)) return qrcp_into(exec, where, &op, truncation, out_obj);
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

static PyObject *session_lu(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.lu";
  static char *keywords[] = {"a", "out", NULL};
  PyObject *a_obj, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|$O:lu", keywords, &a_obj, &out_obj))
    return NULL;
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, where, &op);
  if (!exec) return NULL;
  const tl_tensor *a = &op.tensor;
  npy_intp k = a->rank == 2 ? (npy_intp)(a->shape[0] < a->shape[1] ? a->shape[0] : a->shape[1]) : 0;
  tl_status status;
  if (tlpy_out_given(out_obj)) {
    PyObject *items[2];
    tlpy_operand out;
    int64_t *pivots = NULL;
    if (tlpy_out_tuple(out_obj, 2, where, "(lu, piv)", items) == 0 && need_matrix(a, where) == 0)
      pivots = tlpy_out_index(items[1], k, where, "out[1] (piv)");
    if (!pivots || tlpy_out_get_all(1, items, where, &out) < 0) {
      tlpy_operand_release(&op);
      return NULL;
    }
    TLPY_RUN(BIG(op), status = tl_lu_into(exec, a, &out.tensor, pivots));
    tlpy_operand_release(&out);
    tlpy_operand_release(&op);
    return status == TL_OK ? outs_tuple(2, items) : tlpy_raise_last(status);
  }
  PyObject *pivots = PyArray_SimpleNew(1, &k, NPY_INT64);
  if (!pivots) {
    tlpy_operand_release(&op);
    return NULL;
  }
  tl_tensor lu;
  TLPY_RUN(BIG(op), status = tl_lu(exec, a, &lu, (int64_t *)PyArray_DATA((PyArrayObject *)pivots)));
  tlpy_operand_release(&op);
  if (status != TL_OK) {
    Py_DECREF(pivots);
    return tlpy_raise_last(status);
  }
  PyObject *parts[2] = {tlpy_result(&lu, NULL), pivots};
  return pack(2, parts);
}

static PyObject *session_solve(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.solve";
  static char *keywords[] = {"a", "b", "out", NULL};
  PyObject *a_obj, *b_obj, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:solve", keywords, &a_obj, &b_obj, &out_obj))
    return NULL;
  tlpy_operand ops[2];
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, b_obj, ops);
  if (!exec) return NULL;
  tl_status status;
  PyObject *r = NULL;
  if (tlpy_out_given(out_obj)) {
    tlpy_operand out;
    if (tlpy_out_get_all(1, &out_obj, where, &out) == 0) {
      TLPY_RUN(BIG(ops[0]),
               status = tl_solve_into(exec, &ops[0].tensor, &ops[1].tensor, &out.tensor));
      tlpy_operand_release(&out);
      r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
    }
  } else {
    tl_tensor x;
    TLPY_RUN(BIG(ops[0]), status = tl_solve(exec, &ops[0].tensor, &ops[1].tensor, &x));
    r = tlpy_result_or_raise(status, &x);
  }
  release_ops(2, ops);
  return r;
}

static PyObject *session_eigh(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.eigh";
  static char *keywords[] = {"a", "UPLO", "out", NULL};
  PyObject *a_obj, *out_obj = NULL;
  const char *uplo = "L";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|s$O:eigh", keywords, &a_obj, &uplo, &out_obj))
    return NULL;
  if (strcmp(uplo, "L") && strcmp(uplo, "U"))
    return tlpy_raise(TL_E_INVALID, "%s: UPLO must be 'L' or 'U', not '%s'", where, uplo);
  tl_uplo which = *uplo == 'L' ? TL_LOWER : TL_UPPER;
  tlpy_operand op;
  tl_exec *exec = one_operand(self, a_obj, where, &op);
  if (!exec) return NULL;
  tl_status status;
  if (tlpy_out_given(out_obj)) {
    PyObject *items[2];
    tlpy_operand outs[2];
    if (factor_outs(out_obj, 2, where, "(w, v)", items, outs, &op) < 0) return NULL;
    TLPY_RUN(BIG(op),
             status = tl_eigh_into(exec, which, &op.tensor, &outs[0].tensor, &outs[1].tensor));
    release_ops(2, outs);
    tlpy_operand_release(&op);
    return status == TL_OK ? outs_tuple(2, items) : tlpy_raise_last(status);
  }
  tl_tensor w, v;
  TLPY_RUN(BIG(op), status = tl_eigh(exec, which, &op.tensor, &w, &v));
  tlpy_operand_release(&op);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[2] = {tlpy_result(&w, NULL), tlpy_result(&v, NULL)};
  return pack(2, parts);
}

#define CAST(f) (PyCFunction)(void (*)(void))(f)

PyMethodDef tlpy_linalg_methods[] = {
    {"qr", CAST(session_qr), METH_VARARGS | METH_KEYWORDS,
     "qr(a, *, out=None) -> (q, r): thin QR of a matrix, q (m x k) with orthonormal columns, "
     "r (k x n) upper trapezoidal, k = min(m, n). out: a tuple (q, r) of arrays of those "
     "shapes and a's dtype (any strides), written and returned. Opening thread only."},
    {"qrcp", CAST(session_qrcp), METH_VARARGS | METH_KEYWORDS,
     "qrcp(a, *, tol=None, max_rank=None, atol=None, out=None) -> (q, r, perm, discarded): "
     "QR with column pivoting, a[:, perm] ~= q @ r, truncated where |r[i, i]| falls to "
     "max(atol, tol * |r[0, 0]|), at most max_rank kept (none given: rank min(m, n)). "
     "discarded is the squared Frobenius norm of the dropped rows of r, summed from those "
     "rows (accurate to rounding in the dropped part). out: a tuple (q, r, perm) of q "
     "(m x c), r (c x n), c = min(m, n, max_rank), and an int64 array of n; the returned q "
     "and r are their first rank columns / rows (views; the rest is zeroed). Opening thread "
     "only."},
    {"svd", CAST(tlpy_session_svd), METH_VARARGS | METH_KEYWORDS, TLPY_SVD_DOC},
    {"lu", CAST(session_lu), METH_VARARGS | METH_KEYWORDS,
     "lu(a, *, out=None) -> (lu, piv): LU with partial pivoting, LAPACK's packed form (unit "
     "lower triangle below the diagonal, u on and above); row i was swapped with row piv[i] "
     "(0-based), in order. out: a tuple (lu, piv) of an array of a's shape and dtype and a "
     "contiguous int64 array of min(m, n). Opening thread only."},
    {"solve", CAST(session_solve), METH_VARARGS | METH_KEYWORDS,
     "solve(a, b, *, out=None) -> x: a @ x = b for a square a and b of n or n x r; into out "
     "(b's shape and dtype, not overlapping a or b) when given. InvalidError for an exactly "
     "singular a. Opening thread only."},
    {"eigh", CAST(session_eigh), METH_VARARGS | METH_KEYWORDS,
     "eigh(a, UPLO='L', *, out=None) -> (w, v): a = v @ diag(w) @ v^H for symmetric/Hermitian "
     "a, w ascending (real), reading only the UPLO triangle (numpy.linalg.eigh). out: a tuple "
     "(w, v) of n entries of the real dtype and n x n of a's dtype. Opening thread only."},
    {NULL, NULL, 0, NULL}};
