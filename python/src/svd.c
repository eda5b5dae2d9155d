/* python/src/svd.c: Session.svd with numpy's keywords (full_matrices, compute_uv) and out=.
 *
 * The thin SVD (full_matrices=False, the default here as before: tenlane's factorizations
 * are thin) comes straight from tl_svd_reported or its `_into` form, truncated by tol,
 * atol and max_rank. compute_uv=False asks tenlane for the singular values alone and returns
 * them alone, as numpy does. full_matrices=True makes u m x m and vt n x n: the thin
 * factors are computed first, then each is completed to a unitary matrix. The completion of
 * an orthonormal basis B (n x k) is the trailing n - k columns of Q in the QR of [B | I_n]:
 * Householder QR gives an exactly unitary Q whose first k columns span B's range (B has
 * full column rank), so its other columns are an orthonormal basis of the complement. B's
 * own columns are kept as they are (not Q's, which may differ from them by a phase). For vt
 * the same is done on vt^H. Truncation keywords are refused with full_matrices=True: a
 * truncated SVD has no full form. */
#include "tlpy.h"

#include <string.h>

#define BIG(op) (tl_tensor_numel(&(op).tensor) >= TLPY_NOGIL_ELEMENTS)

/* dest (n x (n - k)) = an orthonormal basis of the complement of basis's range (n x k,
 * orthonormal columns); with `conj`, basis and dest hold the conjugates of the columns. */
static tl_status complete(tl_exec *exec, const tl_tensor *basis, tl_tensor *dest, int conj) {
  int64_t n = basis->shape[0], k = basis->shape[1];
  int64_t shape[2] = {n, k + n};
  tl_tensor w, left, right, q, r, tail;
  tl_status status = tlpy_create(basis->dtype, 2, shape, &w);
  if (status != TL_OK) return status;
  status = tl_tensor_slice(&w, 1, 0, k, 1, &left);
  if (status == TL_OK) status = tl_tensor_slice(&w, 1, k, k + n, 1, &right);
  if (status == TL_OK)
    status = conj ? tl_conj_into(exec, basis, &left) : tl_copy_into(exec, basis, &left);
  if (status == TL_OK) status = tl_identity_into(exec, &right);
  if (status == TL_OK) status = tl_qr(exec, &w, &q, &r);
  if (status == TL_OK) {
    status = tl_tensor_slice(&q, 1, k, n, 1, &tail);
    if (status == TL_OK)
      status = conj ? tl_conj_into(exec, &tail, dest) : tl_copy_into(exec, &tail, dest);
    tl_tensor_release(&q);
    tl_tensor_release(&r);
  }
  tl_tensor_release(&w);
  return status;
}

/* The full SVD of the matrix a into fresh u (m x m), s (k), vt (n x n). */
static tl_status svd_full(tl_exec *exec, const tl_tensor *a, tl_tensor *u, tl_tensor *s,
                          tl_tensor *vt, double *discarded) {
  int64_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n;
  int64_t us[2] = {m, m}, vs[2] = {n, n};
  tl_tensor u_thin, vt_thin, u_rest, vt_rest, basis, dest;
  tl_truncation_report report;
  memset(u, 0, sizeof *u);
  memset(s, 0, sizeof *s);
  memset(vt, 0, sizeof *vt);
  tl_status status = tlpy_create(a->dtype, 2, us, u);
  if (status == TL_OK) status = tlpy_create(tl_dtype_real(a->dtype), 1, &k, s);
  if (status == TL_OK) status = tlpy_create(a->dtype, 2, vs, vt);
  if (status == TL_OK) status = tl_tensor_slice(u, 1, 0, k, 1, &u_thin);
  if (status == TL_OK) status = tl_tensor_slice(vt, 0, 0, k, 1, &vt_thin);
  if (status == TL_OK) status = tl_svd_reported_into(exec, NULL, a, &u_thin, s, &vt_thin, &report);
  if (status == TL_OK && m > k) {
    status = tl_tensor_slice(u, 1, k, m, 1, &u_rest);
    if (status == TL_OK) status = complete(exec, &u_thin, &u_rest, 0);
  }
  if (status == TL_OK && n > k) { /* the columns of vt^H, conjugated: rows of vt */
    status = tl_tensor_slice(vt, 0, k, n, 1, &vt_rest);
    if (status == TL_OK) status = tl_tensor_transpose_view(&vt_thin, 0, 1, &basis);
    if (status == TL_OK) status = tl_tensor_transpose_view(&vt_rest, 0, 1, &dest);
    if (status == TL_OK) status = complete(exec, &basis, &dest, 1);
  }
  if (status != TL_OK) {
    tl_tensor_release(u);
    tl_tensor_release(s);
    tl_tensor_release(vt);
    return status;
  }
  *discarded = report.discarded_weight;
  return TL_OK;
}

/* out arrays of full_matrices=True: checked before anything is computed (the factors are
 * then copied in, so a failure writes nothing). */
static int check_full_outs(const tl_tensor *a, tlpy_operand *outs, const char *where) {
  int64_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n;
  const int64_t want[3][2] = {{m, m}, {k, 0}, {n, n}};
  const int ranks[3] = {2, 1, 2};
  const char *names[3] = {"u", "s", "vt"};
  for (int i = 0; i < 3; i++) {
    const tl_tensor *t = &outs[i].tensor;
    tl_dtype dtype = i == 1 ? tl_dtype_real(a->dtype) : a->dtype;
    if (t->dtype != dtype) {
      tlpy_raise(TL_E_DTYPE, "%s: out[%d] (%s) is %s; full_matrices=True of a %s matrix takes %s",
                 where, i, names[i], tl_dtype_name(t->dtype), tl_dtype_name(a->dtype),
                 tl_dtype_name(dtype));
      return -1;
    }
    if (t->rank != ranks[i] || t->shape[0] != want[i][0] || (i != 1 && t->shape[1] != want[i][1])) {
      tlpy_raise(TL_E_SHAPE,
                 "%s: out[%d] (%s) has %d axes (%lld x %lld); full_matrices=True of a %lld x %lld "
                 "matrix takes %s",
                 where, i, names[i], t->rank, t->rank > 0 ? (long long)t->shape[0] : 1LL,
                 t->rank > 1 ? (long long)t->shape[1] : 1LL, (long long)m, (long long)n,
                 i == 0   ? "m x m"
                 : i == 1 ? "min(m, n) entries"
                          : "n x n");
      return -1;
    }
    if (tl_tensor_overlap(t, a) || tl_tensor_self_overlap(t)) {
      tlpy_raise(TL_E_ALIAS, "%s: out[%d] (%s) overlaps a or itself", where, i, names[i]);
      return -1;
    }
    for (int j = 0; j < i; j++)
      if (tl_tensor_overlap(t, &outs[j].tensor)) {
        tlpy_raise(TL_E_ALIAS, "%s: out[%d] (%s) overlaps out[%d] (%s)", where, i, names[i], j,
                   names[j]);
        return -1;
      }
  }
  return 0;
}

static PyObject *full(tl_exec *exec, const char *where, tlpy_operand *op, PyObject *out_obj) {
  const tl_tensor *a = &op->tensor;
  if (a->rank != 2)
    return tlpy_raise(TL_E_SHAPE, "%s: a has %d axes; it takes a matrix (2 axes)", where, a->rank);
  PyObject *items[3];
  tlpy_operand outs[3];
  int given = tlpy_out_given(out_obj);
  if (given) {
    if (tlpy_out_tuple(out_obj, 3, where, "(u, s, vt)", items) < 0 ||
        tlpy_out_get_all(3, items, where, outs) < 0)
      return NULL;
    if (check_full_outs(a, outs, where) < 0) {
      for (int i = 0; i < 3; i++) tlpy_operand_release(&outs[i]);
      return NULL;
    }
  }
  tl_tensor f[3];
  double discarded = 0.0;
  tl_status status;
  TLPY_RUN(BIG(*op), status = svd_full(exec, a, &f[0], &f[1], &f[2], &discarded));
  if (status != TL_OK) {
    if (given)
      for (int i = 0; i < 3; i++) tlpy_operand_release(&outs[i]);
    return tlpy_raise_last(status);
  }
  PyObject *parts[4] = {NULL, NULL, NULL, PyFloat_FromDouble(discarded)};
  if (given) {
    for (int i = 0; i < 3 && status == TL_OK; i++)
      status = tl_copy_into(exec, &f[i], &outs[i].tensor);
    for (int i = 0; i < 3; i++) {
      tlpy_operand_release(&outs[i]);
      tl_tensor_release(&f[i]);
      parts[i] = status == TL_OK ? Py_NewRef(items[i]) : NULL;
    }
    if (status != TL_OK) {
      Py_XDECREF(parts[3]);
      return tlpy_raise_last(status);
    }
  } else {
    for (int i = 0; i < 3; i++) parts[i] = tlpy_result(&f[i], NULL);
  }
  for (int i = 0; i < 4; i++)
    if (!parts[i]) {
      for (int j = 0; j < 4; j++) Py_XDECREF(parts[j]);
      return NULL;
    }
  return Py_BuildValue("(NNNN)", parts[0], parts[1], parts[2], parts[3]);
}

/* compute_uv=False: the singular values alone (a fresh array, or out cut to the rank). */
static PyObject *values_only(tl_exec *exec, const char *where, tlpy_operand *op,
                             const tl_truncation *truncation, PyObject *out_obj) {
  tl_truncation_report report;
  tl_status status;
  if (tlpy_out_given(out_obj)) {
    tlpy_operand out;
    if (tlpy_out_get_all(1, &out_obj, where, &out) < 0) return NULL;
    TLPY_RUN(BIG(*op), status = tl_svd_reported_into(exec, truncation, &op->tensor, NULL,
                                                     &out.tensor, NULL, &report));
    tlpy_operand_release(&out);
    return status == TL_OK ? tlpy_out_leading(out_obj, 0, report.rank) : tlpy_raise_last(status);
  }
  tl_tensor s;
  TLPY_RUN(BIG(*op),
           status = tl_svd_reported(exec, truncation, &op->tensor, NULL, &s, NULL, &report));
  return tlpy_result_or_raise(status, &s);
}

/* The thin SVD into the caller's (u, s, vt), cut to the rank kept. */
static PyObject *thin_into(tl_exec *exec, const char *where, tlpy_operand *op,
                           const tl_truncation *truncation, PyObject *out_obj) {
  PyObject *items[3];
  tlpy_operand outs[3];
  if (tlpy_out_tuple(out_obj, 3, where, "(u, s, vt)", items) < 0 ||
      tlpy_out_get_all(3, items, where, outs) < 0)
    return NULL;
  tl_truncation_report report;
  tl_status status;
  TLPY_RUN(BIG(*op), status = tl_svd_reported_into(exec, truncation, &op->tensor, &outs[0].tensor,
                                                   &outs[1].tensor, &outs[2].tensor, &report));
  for (int i = 0; i < 3; i++) tlpy_operand_release(&outs[i]);
  if (status != TL_OK) return tlpy_raise_last(status);
  PyObject *parts[4] = {
      tlpy_out_leading(items[0], 1, report.rank), tlpy_out_leading(items[1], 0, report.rank),
      tlpy_out_leading(items[2], 0, report.rank), PyFloat_FromDouble(report.discarded_weight)};
  for (int i = 0; i < 4; i++)
    if (!parts[i]) {
      for (int j = 0; j < 4; j++) Py_XDECREF(parts[j]);
      return NULL;
    }
  return Py_BuildValue("(NNNN)", parts[0], parts[1], parts[2], parts[3]);
}

PyObject *tlpy_session_svd(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.svd";
  static char *keywords[] = {"a",        "full_matrices", "compute_uv", "tol",
                             "max_rank", "atol",          "out",        NULL};
  PyObject *a_obj, *tol = NULL, *max_rank = NULL, *atol = NULL, *out_obj = NULL;
  int full_matrices = 0, compute_uv = 1;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|pp$OOOO:svd", keywords, &a_obj, &full_matrices,
                                   &compute_uv, &tol, &max_rank, &atol, &out_obj))
    return NULL;
  tl_truncation storage;
  int any;
  if (tlpy_truncation(tol, atol, max_rank, where, &storage, &any) < 0) return NULL;
  const tl_truncation *truncation = any ? &storage : NULL;
  if (full_matrices && compute_uv && any)
    return tlpy_raise(TL_E_INVALID,
                      "%s: full_matrices=True keeps every singular value; tol, atol and "
                      "max_rank truncate (use full_matrices=False with them)",
                      where);
  tlpy_operand op;
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, NULL, &op);
  if (!exec) return NULL;
  PyObject *r;
  if (!compute_uv) {
    r = values_only(exec, where, &op, truncation, out_obj);
  } else if (full_matrices) {
    r = full(exec, where, &op, out_obj);
  } else if (tlpy_out_given(out_obj)) {
    r = thin_into(exec, where, &op, truncation, out_obj);
  } else {
    tlpy_svd_item item;
    tl_status status;
    TLPY_RUN(BIG(op), status = tlpy_svd_on(exec, &op.tensor, truncation, &item));
    r = status == TL_OK ? tlpy_svd_tuple(&item) : tlpy_raise_last(status);
  }
  tlpy_operand_release(&op);
  return r;
}
