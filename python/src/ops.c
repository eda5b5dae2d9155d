/* python/src/ops.c: Session.einsum and the core routes (tensordot, matmul, transpose,
 * reshape, sum, norm), each a thin call of the tenlane route on the session's surface.
 *
 * Operands are read in place (operand.c); results are fresh tenlane tensors handed to
 * numpy (result.c). A failing route writes nothing: an `out=` array is unchanged. Calls
 * whose operands hold TLPY_NOGIL_ELEMENTS or more release the GIL while they compute
 * (einsum: unless its labels span fewer elements, as a trace or a diagonal does). */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

int64_t tlpy_elements(int n, const tlpy_operand *ops) {
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += tl_tensor_numel(&ops[i].tensor);
  return total;
}

static void release_all(int n, tlpy_operand *ops) {
  for (int i = 0; i < n; i++) tlpy_operand_release(&ops[i]);
}

tl_exec *tlpy_session_operands(tlpy_session *self, const char *where, PyObject *a, PyObject *b,
                               tlpy_operand *ops) {
  tl_exec *exec = tlpy_session_exec(self, where);
  if (!exec) return NULL;
  if (tlpy_operand_get(a, 0, where, "a", &ops[0]) < 0) return NULL;
  if (b && tlpy_operand_get(b, 0, where, "b", &ops[1]) < 0) {
    release_all(1, ops);
    return NULL;
  }
  return exec;
}

PyObject *tlpy_result_or_raise(tl_status status, tl_tensor *result) {
  return status == TL_OK ? tlpy_result(result, NULL) : tlpy_raise_last(status);
}

int tlpy_path_kind(PyObject *obj, const char *where, tl_einsum_path_kind *out) {
  *out = TL_EINSUM_PATH_AUTO;
  /* numpy's optimize=True/False: tenlane always plans, so both mean "auto" */
  if (!obj || obj == Py_None || PyBool_Check(obj)) return 0;
  const char *name = PyUnicode_Check(obj) ? PyUnicode_AsUTF8(obj) : NULL;
  if (name && !strcmp(name, "auto"))
    *out = TL_EINSUM_PATH_AUTO;
  else if (name && !strcmp(name, "greedy"))
    *out = TL_EINSUM_PATH_GREEDY;
  else if (name && !strcmp(name, "optimal"))
    *out = TL_EINSUM_PATH_OPTIMAL;
  else {
    PyErr_Clear();
    tlpy_raise(TL_E_INVALID, "%s: path (optimize) must be 'auto', 'greedy', 'optimal' or a bool",
               where);
    return -1;
  }
  return 0;
}

/* ---- einsum ------------------------------------------------------------------------- */

/* The elements an einsum of letter labels walks: the product of its labels' extents
 * (a trace "ii->" of an n x n operand walks n, a product "ij,ij->ij" walks n^2), at most
 * `cap`. Specs with "..." or integer labels, and ones that do not parse here, count as
 * `cap` (the route reports the errors). */
static int64_t einsum_walk(const char *spec, int n, const tlpy_operand *ops, int64_t cap) {
  int64_t extent[128] = {0};
  const char *c = spec;
  for (int term = 0; term < n; term++, c++) {
    const tl_tensor *t = &ops[term].tensor;
    int axis = 0;
    for (; *c && *c != ',' && *c != '-'; c++) {
      if (*c == ' ') continue;
      if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')) || axis >= t->rank) return cap;
      const int64_t e = t->shape[axis++];
      if (e > extent[(unsigned char)*c]) extent[(unsigned char)*c] = e;
    }
    if (axis != t->rank || (term + 1 < n && *c != ',')) return cap;
  }
  int64_t walk = 1;
  for (int label = 'A'; label <= 'z'; label++) {
    if (extent[label] == 0) continue;
    if (walk > cap / extent[label]) return cap;
    walk *= extent[label];
  }
  return walk;
}

/* einsum of the operands on exec (the caller checked the session) into out_obj or a fresh
 * result in `layout`. */
static PyObject *einsum_run(tl_exec *exec, const char *where, const char *spec, int n,
                            tlpy_operand *ops, PyObject *out_obj, tl_einsum_path_kind kind,
                            int n_given, const int *given, tl_einsum_layout layout) {
  const tl_tensor *ptrs[TL_EINSUM_MAX_OPERANDS];
  for (int i = 0; i < n; i++) ptrs[i] = &ops[i].tensor;
  /* A call whose labels walk few elements is quick however large its operands are: the
   * GIL and the Ctrl-C watch are kept (the watch's sigaction query was a sixth of a
   * 1024 x 1024 trace). */
  int big = tlpy_elements(n, ops) >= TLPY_NOGIL_ELEMENTS &&
            einsum_walk(spec, n, ops, TLPY_NOGIL_ELEMENTS) >= TLPY_NOGIL_ELEMENTS;
  tl_einsum_options options;
  tl_einsum_options_init(&options);
  options.path_kind = n_given >= 0 ? TL_EINSUM_PATH_GIVEN : kind;
  options.n_steps = n_given;
  options.path = given;
  options.layout = layout;
  tl_status status;
  if (out_obj) {
    tlpy_operand out;
    if (tlpy_operand_get(out_obj, 1, where, "out", &out) < 0) return NULL;
    TLPY_RUN(big, status = tl_einsum_ex_into(exec, &options, spec, n, ptrs, &out.tensor));
    tlpy_operand_release(&out);
    if (status != TL_OK) return tlpy_raise_last(status);
    return Py_NewRef(out_obj);
  }
  tl_tensor result;
  TLPY_RUN(big, status = tl_einsum_ex(exec, &options, spec, n, ptrs, &result));
  return tlpy_result_or_raise(status, &result);
}

/* "operand i" for i < 100 into buf, without snprintf (which cost a tenth of a 2x2 einsum
 * call made from Python). */
static const char *operand_name(int i, char buf[16]) {
  memcpy(buf, "operand ", 8);
  int at = 8;
  if (i >= 10) buf[at++] = (char)('0' + i / 10 % 10);
  buf[at++] = (char)('0' + i % 10);
  buf[at] = '\0';
  return buf;
}

/* numpy's promotion of mixed operands: complex when any is, double when any is (f64 with c64
 * gives c128). Operands of another dtype are converted (a copy, as numpy makes) into
 * promoted[], which then backs ops[i].tensor; returns how many were converted (release
 * them after the call), or -1 with the error raised. */
static int promote(tl_exec *exec, int n, tlpy_operand *ops, tl_tensor *promoted) {
  int complex_any = 0, double_any = 0, mixed = 0;
  for (int i = 0; i < n; i++) {
    tl_dtype d = ops[i].tensor.dtype;
    complex_any |= tl_dtype_is_complex(d);
    double_any |= d == TL_F64 || d == TL_C128;
    mixed |= d != ops[0].tensor.dtype;
  }
  if (!mixed) return 0;
  tl_dtype target = complex_any ? (double_any ? TL_C128 : TL_C64) : (double_any ? TL_F64 : TL_F32);
  int count = 0;
  for (int i = 0; i < n; i++) {
    if (ops[i].tensor.dtype == target) continue;
    tl_status status = tl_convert(exec, target, &ops[i].tensor, &promoted[count]);
    if (status != TL_OK) {
      for (int k = 0; k < count; k++) tl_tensor_release(&promoted[k]);
      tlpy_raise_last(status);
      return -1;
    }
    ops[i].tensor = promoted[count++];
  }
  return count;
}

/* order=: "C" (the default) or "K" (numpy's default: the layout the computation gives). */
static int einsum_order(PyObject *order_obj, const char *where, tl_einsum_layout *layout) {
  *layout = TL_EINSUM_LAYOUT_ORDER;
  if (order_obj == NULL || order_obj == Py_None) return 0;
  const char *order = PyUnicode_Check(order_obj) ? PyUnicode_AsUTF8(order_obj) : NULL;
  if (order && !strcmp(order, "C")) return 0;
  if (order && !strcmp(order, "K")) {
    *layout = TL_EINSUM_LAYOUT_KEEP;
    return 0;
  }
  PyErr_Clear();
  PyObject *repr = PyObject_Repr(order_obj);
  const char *text = repr ? PyUnicode_AsUTF8(repr) : NULL;
  if (text) tlpy_raise(TL_E_INVALID, "%s: order must be 'C' or 'K', not %.80s", where, text);
  Py_XDECREF(repr);
  return -1;
}

static PyObject *session_einsum(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                                PyObject *kwnames) {
  static const char *where = "tenlane.Session.einsum";
  PyObject *out_obj = NULL, *path_obj = NULL, *order_obj = NULL;
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t k = 0; k < nkw; k++) {
    const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
    if (key && !strcmp(key, "out"))
      out_obj = args[nargs + k];
    else if (key && (!strcmp(key, "path") || !strcmp(key, "optimize"))) /* numpy's name */
      path_obj = args[nargs + k];
    else if (key && !strcmp(key, "order"))
      order_obj = args[nargs + k];
    else
      return tlpy_raise(TL_E_INVALID, "%s: unknown keyword '%s'", where, key ? key : "?");
  }
  if (out_obj == Py_None) out_obj = NULL;
  tl_einsum_layout layout;
  if (einsum_order(order_obj, where, &layout) < 0) return NULL;
  char sublist_spec[TL_EINSUM_SPEC_MAX + 1];
  PyObject *arrays[TL_EINSUM_MAX_OPERANDS];
  const char *spec;
  int n;
  if (nargs >= 2 && !PyUnicode_Check(args[0])) { /* numpy's sublist form */
    if (tlpy_einsum_sublist(args, nargs, where, sublist_spec, sizeof sublist_spec, arrays, &n) < 0)
      return NULL;
    spec = sublist_spec;
  } else {
    if (nargs < 2)
      return tlpy_raise(TL_E_INVALID, "%s: takes a spec string and at least one array", where);
    if (nargs - 1 > TL_EINSUM_MAX_OPERANDS)
      return tlpy_raise(TL_E_INVALID, "%s: %zd operands; at most %d", where, nargs - 1,
                        TL_EINSUM_MAX_OPERANDS);
    spec = PyUnicode_AsUTF8(args[0]);
    if (!spec) return NULL;
    n = (int)(nargs - 1);
    for (int i = 0; i < n; i++) arrays[i] = args[i + 1];
  }
  tl_einsum_path_kind kind = TL_EINSUM_PATH_AUTO;
  int given[2 * TL_EINSUM_MAX_OPERANDS], n_given = -1;
  int has_path = tlpy_einsum_given_path(path_obj, where, given, &n_given);
  if (has_path < 0) return NULL;
  if (!has_path && tlpy_path_kind(path_obj, where, &kind) < 0) return NULL;
  tlpy_operand ops[TL_EINSUM_MAX_OPERANDS];
  char what[16];
  for (int i = 0; i < n; i++) {
    if (tlpy_operand_get(arrays[i], 0, where, operand_name(i, what), &ops[i]) < 0) {
      release_all(i, ops);
      return NULL;
    }
  }
  /* checked after the operands were read, so a bad operand is reported first */
  tl_exec *exec = tlpy_session_exec((tlpy_session *)self, where);
  tl_tensor promoted[TL_EINSUM_MAX_OPERANDS];
  int count = exec ? promote(exec, n, ops, promoted) : -1;
  PyObject *r = count >= 0
                    ? einsum_run(exec, where, spec, n, ops, out_obj, kind, n_given, given, layout)
                    : NULL;
  for (int i = 0; i < count; i++) tl_tensor_release(&promoted[i]);
  release_all(n, ops);
  return r;
}

/* ---- tensordot and matmul ---------------------------------------------------------- */

static int axis_index(PyObject *obj, int rank, const char *where, const char *what, int *out) {
  long v = PyLong_AsLong(obj);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < 0) v += rank;
  if (v < 0 || v >= rank) {
    tlpy_raise(TL_E_INVALID, "%s: %s axis %ld is out of range for %d axes", where, what,
               PyLong_AsLong(obj), rank);
    return -1;
  }
  *out = (int)v;
  return 0;
}

/* axes: an int n (a's last n with b's first n), or a pair of ints or of sequences. */
static int dot_axes(PyObject *axes, int ra, int rb, const char *where, int *count, int *aa,
                    int *ba) {
  if (PyLong_Check(axes)) {
    long n = PyLong_AsLong(axes);
    if (n < 0 || n > ra || n > rb) {
      tlpy_raise(TL_E_INVALID, "%s: axes=%ld with operands of %d and %d axes", where, n, ra, rb);
      return -1;
    }
    *count = (int)n;
    for (int k = 0; k < n; k++) {
      aa[k] = ra - (int)n + k;
      ba[k] = k;
    }
    return 0;
  }
  if (!PySequence_Check(axes) || PySequence_Size(axes) != 2) {
    tlpy_raise(TL_E_INVALID, "%s: axes must be an int or a pair of axis lists", where);
    return -1;
  }
  PyObject *sides[2] = {PySequence_GetItem(axes, 0), PySequence_GetItem(axes, 1)};
  int rc = -1;
  if (sides[0] && sides[1]) {
    int n[2], ranks[2] = {ra, rb}, *lists[2] = {aa, ba};
    rc = 0;
    for (int s = 0; s < 2 && rc == 0; s++) {
      if (PyLong_Check(sides[s])) {
        n[s] = 1;
        rc = axis_index(sides[s], ranks[s], where, s ? "b" : "a", lists[s]);
        continue;
      }
      PyObject *seq = PySequence_Fast(sides[s], "tenlane.Session.tensordot: axes lists");
      if (!seq) {
        rc = -1;
        break;
      }
      n[s] = (int)PySequence_Fast_GET_SIZE(seq);
      if (n[s] > ranks[s]) {
        tlpy_raise(TL_E_SHAPE, "%s: %d axes of %s listed; it has %d", where, n[s], s ? "b" : "a",
                   ranks[s]);
        rc = -1;
      }
      for (int k = 0; k < n[s] && rc == 0; k++)
        rc = axis_index(PySequence_Fast_GET_ITEM(seq, k), ranks[s], where, s ? "b" : "a",
                        &lists[s][k]);
      Py_DECREF(seq);
    }
    if (rc == 0 && n[0] != n[1]) {
      tlpy_raise(TL_E_SHAPE, "%s: %d axes of a against %d axes of b", where, n[0], n[1]);
      rc = -1;
    }
    if (rc == 0) *count = n[0];
  }
  Py_XDECREF(sides[0]);
  Py_XDECREF(sides[1]);
  return rc;
}

static PyObject *session_tensordot(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.tensordot";
  static char *keywords[] = {"a", "b", "axes", "out", NULL};
  PyObject *a_obj, *b_obj, *axes = NULL, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|O$O:tensordot", keywords, &a_obj, &b_obj,
                                   &axes, &out_obj))
    return NULL;
  tlpy_operand ops[2];
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, b_obj, ops);
  if (!exec) return NULL;
  PyObject *r = NULL;
  int ra = ops[0].tensor.rank, rb = ops[1].tensor.rank, count = 0;
  int aa[TL_MAX_RANK + 1], ba[TL_MAX_RANK + 1];
  PyObject *two = NULL;
  if (!axes) axes = two = PyLong_FromLong(2);
  if (axes && dot_axes(axes, ra, rb, where, &count, aa, ba) == 0) {
    int al[TL_MAX_RANK], bl[TL_MAX_RANK], cl[2 * TL_MAX_RANK], cr = 0;
    for (int k = 0; k < ra; k++) al[k] = k;
    for (int k = 0; k < rb; k++) bl[k] = ra + k;
    for (int k = 0; k < count; k++) bl[ba[k]] = aa[k];
    for (int k = 0; k < ra; k++) {
      int summed = 0;
      for (int j = 0; j < count; j++) summed |= aa[j] == k;
      if (!summed) cl[cr++] = k;
    }
    for (int k = 0; k < rb; k++)
      if (bl[k] >= ra) cl[cr++] = bl[k];
    tl_tensor result;
    tl_status status;
    int big = tlpy_elements(2, ops) >= TLPY_NOGIL_ELEMENTS;
    if (cr > TL_MAX_RANK) {
      tlpy_raise(TL_E_SHAPE, "%s: the result would have %d axes; at most %d", where, cr,
                 TL_MAX_RANK);
    } else if (tlpy_out_given(out_obj)) {
      tlpy_operand out;
      if (tlpy_out_get_all(1, &out_obj, where, &out) == 0) {
        if (out.tensor.rank != cr) {
          tlpy_raise(TL_E_SHAPE, "%s: out has %d axes; the result has %d", where, out.tensor.rank,
                     cr);
        } else {
          TLPY_RUN(big, status = tl_contract_into(exec, cl, &ops[0].tensor, al, &ops[1].tensor, bl,
                                                  &out.tensor));
          r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
        }
        tlpy_operand_release(&out);
      }
    } else {
      TLPY_RUN(big,
               status = tl_contract(exec, cr, cl, &ops[0].tensor, al, &ops[1].tensor, bl, &result));
      r = tlpy_result_or_raise(status, &result);
    }
  }
  Py_XDECREF(two);
  release_all(2, ops);
  return r;
}

static PyObject *session_matmul(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.matmul";
  static char *keywords[] = {"a", "b", "out", NULL};
  PyObject *a_obj, *b_obj, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO|$O:matmul", keywords, &a_obj, &b_obj,
                                   &out_obj))
    return NULL;
  if (out_obj == Py_None) out_obj = NULL;
  tlpy_operand ops[2];
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, b_obj, ops);
  if (!exec) return NULL;
  PyObject *r;
  int ra = ops[0].tensor.rank, rb = ops[1].tensor.rank;
  if (ra == 0 || rb == 0) {
    r = tlpy_raise(TL_E_SHAPE, "%s: operands must have at least one axis (a has %d, b has %d)",
                   where, ra, rb);
  } else if (ra == 2 && rb == 2 && out_obj) {
    tlpy_operand out;
    r = NULL;
    if (tlpy_out_get_all(1, &out_obj, where, &out) == 0) {
      tl_status status;
      TLPY_RUN(tlpy_elements(2, ops) >= TLPY_NOGIL_ELEMENTS,
               status = tl_gemm_into(exec, (tl_scalar){1.0, 0.0}, &ops[0].tensor, &ops[1].tensor,
                                     (tl_scalar){0.0, 0.0}, &out.tensor));
      r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
      tlpy_operand_release(&out);
    }
  } else if (ra == 2 && rb == 2) {
    tl_tensor result;
    tl_status status;
    TLPY_RUN(tlpy_elements(2, ops) >= TLPY_NOGIL_ELEMENTS,
             status = tl_gemm(exec, &ops[0].tensor, &ops[1].tensor, &result));
    r = tlpy_result_or_raise(status, &result);
  } else {
    const char *spec = ra == 1 && rb == 1 ? "j,j->"
                       : ra == 1          ? "j,...jk->...k"
                       : rb == 1          ? "...ij,j->...i"
                                          : "...ij,...jk->...ik";
    r = einsum_run(exec, where, spec, 2, ops, out_obj, TL_EINSUM_PATH_AUTO, -1, NULL,
                   TL_EINSUM_LAYOUT_ORDER);
  }
  release_all(2, ops);
  return r;
}

/* ---- transpose and reshape --------------------------------------------------------- */

static PyObject *session_transpose(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.transpose";
  static char *keywords[] = {"a", "axes", "out", NULL};
  PyObject *a_obj, *axes = Py_None, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$O:transpose", keywords, &a_obj, &axes,
                                   &out_obj))
    return NULL;
  tlpy_operand op;
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, NULL, &op);
  if (!exec) return NULL;
  int rank = op.tensor.rank, perm[TL_MAX_RANK];
  PyObject *r = NULL;
  for (int k = 0; k < rank; k++) perm[k] = rank - 1 - k;
  if (axes != Py_None) {
    PyObject *seq = PySequence_Fast(axes, "tenlane.Session.transpose: axes must be a sequence");
    if (!seq) goto done;
    if (PySequence_Fast_GET_SIZE(seq) != rank) {
      tlpy_raise(TL_E_INVALID, "%s: axes has %zd entries for %d axes", where,
                 PySequence_Fast_GET_SIZE(seq), rank);
      Py_DECREF(seq);
      goto done;
    }
    for (int k = 0; k < rank; k++)
      if (axis_index(PySequence_Fast_GET_ITEM(seq, k), rank, where, "a", &perm[k]) < 0) {
        Py_DECREF(seq);
        goto done;
      }
    Py_DECREF(seq);
  }
  tl_tensor result;
  tl_status status;
  if (tlpy_out_given(out_obj)) {
    tlpy_operand out;
    if (tlpy_out_get_all(1, &out_obj, where, &out) < 0) goto done;
    TLPY_RUN(tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS,
             status = tl_permute_into(exec, &op.tensor, perm, &out.tensor));
    tlpy_operand_release(&out);
    r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
    goto done;
  }
  TLPY_RUN(tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS,
           status = tl_permute(exec, &op.tensor, perm, &result));
  r = tlpy_result_or_raise(status, &result);
done:
  tlpy_operand_release(&op);
  return r;
}

static void reverse_axes(tl_tensor *t) {
  for (int k = 0; k < t->rank / 2; k++) {
    int j = t->rank - 1 - k;
    int64_t s = t->shape[k], st = t->strides[k];
    t->shape[k] = t->shape[j];
    t->strides[k] = t->strides[j];
    t->shape[j] = s;
    t->strides[j] = st;
  }
}

static int shape_arg(PyObject *obj, int64_t numel, const char *where, int *rank, int64_t *shape) {
  PyObject *seq = PyLong_Check(obj) ? PyTuple_Pack(1, obj) : PySequence_Fast(obj, "shape");
  if (!seq) return -1;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  int rc = 0, unknown = -1;
  int64_t known = 1;
  if (n > TL_MAX_RANK) {
    tlpy_raise(TL_E_SHAPE, "%s: %zd axes; at most %d", where, n, TL_MAX_RANK);
    rc = -1;
  }
  for (Py_ssize_t k = 0; k < n && rc == 0; k++) {
    long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, k));
    if (v == -1 && PyErr_Occurred())
      rc = -1;
    else if (v == -1 && unknown < 0)
      unknown = (int)k;
    else if (v < 0)
      rc = -1, tlpy_raise(TL_E_SHAPE, "%s: extent %lld in the new shape", where, v);
    else if (__builtin_mul_overflow(known, (int64_t)v, &known))
      rc = -1, tlpy_raise(TL_E_SHAPE,
                          "%s: the new shape's extents multiply past int64 at axis %zd "
                          "(extent %lld)",
                          where, k, v);
    else
      shape[k] = v;
  }
  if (rc == 0 && unknown >= 0) {
    if (known == 0 || numel % known) {
      tlpy_raise(TL_E_SHAPE, "%s: cannot infer -1 for %lld elements", where, (long long)numel);
      rc = -1;
    } else {
      shape[unknown] = numel / known;
    }
  }
  *rank = (int)n;
  Py_DECREF(seq);
  return rc;
}

static PyObject *session_reshape(PyObject *self, PyObject *args, PyObject *kwargs) {
  static const char *where = "tenlane.Session.reshape";
  static char *keywords[] = {"a", "shape", NULL};
  PyObject *a_obj, *shape_obj;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:reshape", keywords, &a_obj, &shape_obj))
    return NULL;
  tlpy_operand op;
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, NULL, &op);
  if (!exec) return NULL;
  PyObject *r = NULL;
  int rank;
  int64_t shape[TL_MAX_RANK], reversed[TL_MAX_RANK];
  if (shape_arg(shape_obj, tl_tensor_numel(&op.tensor), where, &rank, shape) == 0) {
    /* numpy reshapes in C order, tenlane in column-major order: reverse both sides. */
    tl_tensor in = op.tensor, result;
    reverse_axes(&in);
    for (int k = 0; k < rank; k++) reversed[k] = shape[rank - 1 - k];
    tl_status status;
    /* a copy made column-major in the reversed axes is C order once they are reversed back */
    tl_exec_set_order(exec, TL_ORDER_COL_MAJOR);
    TLPY_RUN(tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS,
             status = tl_reshape(exec, rank, reversed, &in, &result));
    tl_exec_set_order(exec, TL_ORDER_ROW_MAJOR);
    if (status != TL_OK) {
      r = tlpy_raise_last(status);
    } else {
      reverse_axes(&result);
      PyObject *base = op.has_view ? PyMemoryView_FromObject(op.owner) : Py_NewRef(op.owner);
      if (base) r = tlpy_result(&result, base);
      Py_XDECREF(base);
    }
  }
  tlpy_operand_release(&op);
  return r;
}

/* ---- sum and norm ------------------------------------------------------------------ */

static PyObject *reduce(PyObject *self, PyObject *args, PyObject *kwargs, tl_reduce_op which,
                        const char *where) {
  static char *keywords[] = {"a", "axis", "keepdims", "out", NULL};
  PyObject *a_obj, *axis = Py_None, *out_obj = NULL;
  int keepdims = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Op$O", keywords, &a_obj, &axis, &keepdims,
                                   &out_obj))
    return NULL;
  tlpy_operand op;
  tl_exec *exec = tlpy_session_operands((tlpy_session *)self, where, a_obj, NULL, &op);
  if (!exec) return NULL;
  int rank = op.tensor.rank, count = 0, axes[TL_MAX_RANK], picked[TL_MAX_RANK] = {0};
  PyObject *r = NULL;
  if (axis == Py_None) {
    for (int k = 0; k < rank; k++) axes[count++] = k;
  } else {
    PyObject *seq = PyLong_Check(axis) ? PyTuple_Pack(1, axis) : PySequence_Fast(axis, "axis");
    if (!seq) goto done;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t k = 0; k < n; k++) {
      int a;
      if (count >= TL_MAX_RANK ||
          axis_index(PySequence_Fast_GET_ITEM(seq, k), rank, where, "a", &a) < 0) {
        if (!PyErr_Occurred()) tlpy_raise(TL_E_INVALID, "%s: too many axes", where);
        Py_DECREF(seq);
        goto done;
      }
      axes[count++] = a;
    }
    Py_DECREF(seq);
  }
  tl_tensor result;
  tl_status status;
  if (tlpy_out_given(out_obj)) { /* keepdims decides which of tl_reduce_into's shapes */
    tlpy_operand out;
    if (tlpy_out_get_all(1, &out_obj, where, &out) < 0) goto done;
    int want = keepdims ? rank : rank - count;
    if (out.tensor.rank != want) {
      tlpy_raise(TL_E_SHAPE,
                 "%s: out has %d axes; reducing %d of %d axes with keepdims=%s gives %d", where,
                 out.tensor.rank, count, rank, keepdims ? "True" : "False", want);
    } else {
      TLPY_RUN(tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS,
               status = tl_reduce_into(exec, which, &op.tensor, count, axes, &out.tensor));
      r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
    }
    tlpy_operand_release(&out);
    goto done;
  }
  TLPY_RUN(tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS,
           status = tl_reduce(exec, which, &op.tensor, count, axes, &result));
  if (status != TL_OK) {
    r = tlpy_raise_last(status);
    goto done;
  }
  if (keepdims) { /* put the reduced axes back with extent 1 */
    for (int k = 0; k < count; k++) picked[axes[k]] = 1;
    tl_tensor kept = result;
    int j = 0;
    for (int k = 0; k < rank; k++) {
      kept.shape[k] = picked[k] ? 1 : result.shape[j];
      kept.strides[k] = picked[k] ? 0 : result.strides[j];
      j += !picked[k];
    }
    kept.rank = rank;
    result = kept;
  }
  r = tlpy_result(&result, NULL);
  /* every axis reduced: a numpy scalar (np.float64 is a Python float), as numpy returns */
  if (r && PyArray_Check(r) && PyArray_NDIM((PyArrayObject *)r) == 0)
    r = PyArray_Return((PyArrayObject *)r);
done:
  tlpy_operand_release(&op);
  return r;
}

static PyObject *session_sum(PyObject *self, PyObject *args, PyObject *kwargs) {
  return reduce(self, args, kwargs, TL_REDUCE_SUM, "tenlane.Session.sum");
}

static PyObject *session_norm(PyObject *self, PyObject *args, PyObject *kwargs) {
  return reduce(self, args, kwargs, TL_REDUCE_NORM2, "tenlane.Session.norm");
}

/* ---- conj and scale ---------------------------------------------------------------- */

/* f(a) into out_obj (written in place, a may be out) or a fresh result. */
static PyObject *elementwise(tlpy_session *self, const char *where, PyObject *a_obj,
                             PyObject *out_obj, int conj, tl_scalar alpha) {
  tlpy_operand op;
  tl_exec *exec = tlpy_session_operands(self, where, a_obj, NULL, &op);
  if (!exec) return NULL;
  int big = tlpy_elements(1, &op) >= TLPY_NOGIL_ELEMENTS;
  tl_status status;
  PyObject *r = NULL;
  if (out_obj && out_obj != Py_None) {
    tlpy_operand out;
    if (tlpy_operand_get(out_obj, 1, where, "out", &out) == 0) {
      TLPY_RUN(big, status = conj ? tl_conj_into(exec, &op.tensor, &out.tensor)
                                  : tl_scale_into(exec, alpha, &op.tensor, &out.tensor));
      tlpy_operand_release(&out);
      r = status == TL_OK ? Py_NewRef(out_obj) : tlpy_raise_last(status);
    }
  } else {
    tl_tensor result;
    TLPY_RUN(big, status = conj ? tl_conj(exec, &op.tensor, &result)
                                : tl_scale(exec, alpha, &op.tensor, &result));
    r = tlpy_result_or_raise(status, &result);
  }
  tlpy_operand_release(&op);
  return r;
}

static PyObject *session_conj(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"a", "out", NULL};
  PyObject *a_obj, *out_obj = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O:conj", keywords, &a_obj, &out_obj))
    return NULL;
  return elementwise((tlpy_session *)self, "tenlane.Session.conj", a_obj, out_obj, 1,
                     (tl_scalar){1.0, 0.0});
}

static PyObject *session_scale(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *keywords[] = {"a", "alpha", "out", NULL};
  PyObject *a_obj, *out_obj = NULL;
  Py_complex alpha;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OD|O:scale", keywords, &a_obj, &alpha, &out_obj))
    return NULL;
  return elementwise((tlpy_session *)self, "tenlane.Session.scale", a_obj, out_obj, 0,
                     (tl_scalar){alpha.real, alpha.imag});
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define CAST(f) (PyCFunction)(void (*)(void))(f)

PyMethodDef tlpy_ops_methods[] = {
    {"einsum", CAST(session_einsum), METH_FASTCALL | METH_KEYWORDS,
     "einsum(spec, *arrays, out=None, path='auto') -> ndarray (optimize= is a synonym of "
     "path=, as in numpy; True and False mean 'auto'). Operands of mixed dtypes promote as "
     "in numpy (real with complex gives complex; a converted operand is copied)\n\n"
     "numpy's einsum grammar (\"ij,jk->ik\", \"...\" broadcasting, traces) over arrays of one "
     "dtype (float32, float64, complex64, complex128) with any strides; nothing is copied in. "
     "path: 'auto', 'greedy' or 'optimal' contraction order, or an explicit path in "
     "opt_einsum's linear format ([(0, 1), (0, 1)], as opt_einsum.contract_path returns). "
     "Also numpy's sublist form: einsum(a, [0, 1], b, [1, 2], [0, 2]). out: a writable array of "
     "the "
     "result's shape and dtype, written only on success and returned. Opening thread only; "
     "the GIL is released for large operands."},
    {"tensordot", CAST(session_tensordot), KW,
     "tensordot(a, b, axes=2, *, out=None) -> ndarray: numpy.tensordot (axes an int or a pair "
     "of axis lists); into out when given (any strides, the result's shape and dtype, not "
     "overlapping a or b), which is returned. Opening thread only."},
    {"matmul", CAST(session_matmul), KW,
     "matmul(a, b, *, out=None) -> ndarray: numpy.matmul (1-D, 2-D, and stacks broadcast from "
     "the right); into out when given (any strides, the result's shape and dtype, not "
     "overlapping a or b), which is returned. Opening thread only."},
    {"transpose", CAST(session_transpose), KW,
     "transpose(a, axes=None, *, out=None) -> ndarray: a copy with the axes permuted (reversed "
     "when axes is None), made by tenlane's blocked permute; into out when given (not "
     "overlapping a). Opening thread only."},
    {"reshape", CAST(session_reshape), KW,
     "reshape(a, shape) -> ndarray: numpy's C-order reshape; a view of a when its strides "
     "allow (like numpy), else a copy. -1 infers one extent. Opening thread only."},
    {"sum", CAST(session_sum), KW,
     "sum(a, axis=None, keepdims=False, *, out=None) -> ndarray or scalar: the sum over the "
     "axes (all when None). out: an array of the result's shape (with the reduced axes kept "
     "as extent 1 when keepdims) and dtype, returned (a 0-d out for a full reduction). "
     "Opening thread only."},
    {"norm", CAST(session_norm), KW,
     "norm(a, axis=None, keepdims=False, *, out=None) -> ndarray or float: sqrt(sum |a|^2) "
     "over the axes (all when None; the Frobenius norm of a matrix); real for complex a. With "
     "every axis reduced and keepdims=False, a numpy scalar (np.float64 is a Python float). "
     "out: as for sum, of the real dtype. Opening thread only."},
    {"conj", CAST(session_conj), KW,
     "conj(a, out=None) -> ndarray: the complex conjugate (a copy for real a), into out when "
     "given (AliasError when out overlaps a). No numpy temporary. Opening thread only."},
    {"scale", CAST(session_scale), KW,
     "scale(a, alpha, out=None) -> ndarray: alpha * a (alpha a Python number; complex alpha "
     "needs complex a), into out when given (not overlapping a). Opening thread only."},
    {NULL, NULL, 0, NULL}};
