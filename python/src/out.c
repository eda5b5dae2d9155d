/* python/src/out.c: the `out=` arguments of the calls that return arrays.
 *
 * A call given out= writes its result into the caller's array and returns that array, as
 * numpy's out= does. The arrays are read as writable operands (operand.c), so any strides
 * are fine (also Fortran-ordered and negatively strided views); the route's `_into` form
 * then checks them: ShapeError (a ValueError) for a shape that does not fit, DtypeError (a
 * TypeError) for a dtype other than the result's, AliasError (a ValueError) for an out that
 * overlaps an input or another out, InvalidError for read-only memory. A call that fails
 * writes nothing into out. Factorizations take a tuple of arrays, one per array they return;
 * pivots and permutations go into writable, contiguous int64 arrays. An out that is no array
 * (or a tuple that is no tuple) is InvalidError, as einsum's out= has always said.
 * Everything here runs with the GIL held. */
#include "tlpy.h"

int tlpy_out_given(PyObject *obj) { return obj != NULL && obj != Py_None; }

int tlpy_out_tuple(PyObject *obj, int n, const char *where, const char *shape_text,
                   PyObject **items) {
  if (!PyTuple_Check(obj)) {
    tlpy_raise(TL_E_INVALID, "%s: out must be a tuple of %d arrays %s, not %s", where, n,
               shape_text, Py_TYPE(obj)->tp_name);
    return -1;
  }
  if (PyTuple_GET_SIZE(obj) != n) {
    tlpy_raise(TL_E_INVALID, "%s: out has %zd entries; it takes %d arrays %s", where,
               PyTuple_GET_SIZE(obj), n, shape_text);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    items[i] = PyTuple_GET_ITEM(obj, i);
    if (items[i] == Py_None) {
      tlpy_raise(TL_E_INVALID, "%s: out[%d] is None; give every array %s", where, i, shape_text);
      return -1;
    }
  }
  return 0;
}

int tlpy_out_get_all(int n, PyObject *const *items, const char *where, tlpy_operand *ops) {
  static const char *const names[] = {"out[0]", "out[1]", "out[2]", "out[3]"};
  for (int i = 0; i < n; i++) {
    if (tlpy_operand_get(items[i], 1, where, n == 1 ? "out" : names[i], &ops[i]) < 0) {
      for (int j = 0; j < i; j++) tlpy_operand_release(&ops[j]);
      return -1;
    }
  }
  return 0;
}

int64_t *tlpy_out_index(PyObject *obj, int64_t length, const char *where, const char *what) {
  if (!PyArray_Check(obj)) {
    tlpy_raise(TL_E_INVALID, "%s: %s must be a numpy int64 array of %lld entries, not %s", where,
               what, (long long)length, Py_TYPE(obj)->tp_name);
    return NULL;
  }
  PyArrayObject *arr = (PyArrayObject *)obj;
  if (PyArray_TYPE(arr) != NPY_INT64) {
    tlpy_raise(TL_E_DTYPE, "%s: %s has dtype %s; it must be int64", where, what,
               PyArray_DESCR(arr)->typeobj->tp_name);
    return NULL;
  }
  if (PyArray_NDIM(arr) != 1 || (int64_t)PyArray_DIM(arr, 0) != length) {
    tlpy_raise(TL_E_SHAPE, "%s: %s has %d axes (first extent %lld); it must be 1-D of %lld", where,
               what, PyArray_NDIM(arr),
               PyArray_NDIM(arr) > 0 ? (long long)PyArray_DIM(arr, 0) : 0LL, (long long)length);
    return NULL;
  }
  if (!PyArray_IS_C_CONTIGUOUS(arr)) {
    tlpy_raise(TL_E_INVALID, "%s: %s must be contiguous (its stride is %lld bytes, not 8)", where,
               what, (long long)PyArray_STRIDE(arr, 0));
    return NULL;
  }
  if (!PyArray_ISWRITEABLE(arr)) {
    tlpy_raise(TL_E_INVALID, "%s: %s is read-only", where, what);
    return NULL;
  }
  return (int64_t *)PyArray_DATA(arr);
}

PyObject *tlpy_out_leading(PyObject *obj, int axis, int64_t count) {
  PyArrayObject *arr = (PyArrayObject *)obj;
  if (!PyArray_Check(obj) || PyArray_NDIM(arr) <= axis || PyArray_DIM(arr, axis) == count)
    return Py_NewRef(obj);
  PyObject *stop = PyLong_FromLongLong(count);
  PyObject *slice = stop ? PySlice_New(NULL, stop, NULL) : NULL;
  Py_XDECREF(stop);
  if (!slice) return NULL;
  PyObject *key = slice;
  if (axis == 1) {
    PyObject *all = PySlice_New(NULL, NULL, NULL);
    key = all ? PyTuple_Pack(2, all, slice) : NULL;
    Py_XDECREF(all);
    Py_DECREF(slice);
    if (!key) return NULL;
  }
  PyObject *view = PyObject_GetItem(obj, key);
  Py_DECREF(key);
  return view;
}
