/* python/src/operand.c: Python objects in, as tenlane tensors, without a copy.
 *
 * A numpy array is read from its own fields (data pointer, byte strides, dtype); any other
 * object is asked for DLPack (__dlpack__) and then for the buffer protocol. The tensor
 * borrows that memory: its data is the object's first element and its strides are the
 * object's byte strides divided by the element size, negative ones included, so a
 * reversed or sliced view is used in place. Strides that are not whole elements,
 * unaligned or byte-swapped data and dtypes tenlane lacks are refused, never copied. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int dtype_of_npy(int type, tl_dtype *out) {
  switch (type) {
    case NPY_FLOAT32:
      *out = TL_F32;
      return 0;
    case NPY_FLOAT64:
      *out = TL_F64;
      return 0;
    case NPY_COMPLEX64:
      *out = TL_C64;
      return 0;
    case NPY_COMPLEX128:
      *out = TL_C128;
      return 0;
    default:
      return -1;
  }
}

static tl_status fail_with(tlpy_fail *fail, tl_status status, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static tl_status fail_with(tlpy_fail *fail, tl_status status, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  vsnprintf(fail->message, sizeof fail->message, format, ap);
  va_end(ap);
  fail->status = status;
  return status;
}

/* Fill t from shape and byte strides; checks rank, whole-element strides and alignment.
 * Makes no Python call. */
static tl_status layout_of(tl_tensor *t, tl_dtype dtype, int rank, const Py_ssize_t *shape,
                           const Py_ssize_t *byte_strides, void *data, const char *where,
                           const char *what, tlpy_fail *fail) {
  if (rank > TL_MAX_RANK)
    return fail_with(fail, TL_E_SHAPE, "%s: %s has %d axes; tenlane takes at most %d", where, what,
                     rank, TL_MAX_RANK);
  Py_ssize_t size = (Py_ssize_t)tl_dtype_size(dtype);
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  t->data = data;
  int64_t count = 1;
  for (int k = 0; k < rank; k++) {
    t->shape[k] = shape[k];
    /* A buffer's extents: numpy keeps their product in range, any other exporter is checked
     * here (and by tl_tensor_validate where the tensor is used). */
    if (shape[k] < 0 || __builtin_mul_overflow(count, (int64_t)shape[k], &count))
      return fail_with(fail, TL_E_SHAPE,
                       "%s: %s has extent %zd on axis %d: its element count is not in int64", where,
                       what, shape[k], k);
    Py_ssize_t stride = byte_strides ? byte_strides[k] : 0;
    if (stride % size != 0)
      return fail_with(fail, TL_E_SHAPE,
                       "%s: %s has a stride of %zd bytes on axis %d, not a whole number of %s "
                       "elements (%zd bytes)",
                       where, what, stride, k, tl_dtype_name(dtype), size);
    t->strides[k] = stride / size;
  }
  if (!byte_strides) tl_strides_row_major(rank, t->shape, t->strides);
  if (count > 0 && ((uintptr_t)data % (uintptr_t)(size > 8 ? 8 : size)) != 0)
    return fail_with(fail, TL_E_INVALID, "%s: %s's data at %p is not aligned to its %s elements",
                     where, what, data, tl_dtype_name(dtype));
  if (count == 0 && t->data == NULL) t->data = t; /* any non-NULL address for no elements */
  return TL_OK;
}

tl_status tlpy_ndarray_tensor(PyObject *obj, int writable, const char *where, const char *what,
                              tl_tensor *t, tlpy_fail *fail) {
  if (!PyArray_Check(obj))
    return fail_with(fail, TL_E_DTYPE, "%s: %s is a %s, not a numpy array", where, what,
                     Py_TYPE(obj)->tp_name);
  PyArrayObject *a = (PyArrayObject *)obj;
  tl_dtype dtype;
  if (dtype_of_npy(PyArray_TYPE(a), &dtype) < 0)
    return fail_with(fail, TL_E_DTYPE,
                     "%s: %s has dtype %s; tenlane computes in float32, float64, complex64 and "
                     "complex128 and does not convert (use .astype)",
                     where, what, PyArray_DESCR(a)->typeobj->tp_name);
  if (!PyArray_ISNOTSWAPPED(a))
    return fail_with(fail, TL_E_DTYPE, "%s: %s is byte-swapped (non-native byte order)", where,
                     what);
  if (writable && !PyArray_ISWRITEABLE(a))
    return fail_with(fail, TL_E_INVALID, "%s: %s is read-only", where, what);
  return layout_of(t, dtype, PyArray_NDIM(a), PyArray_SHAPE(a), PyArray_STRIDES(a), PyArray_DATA(a),
                   where, what, fail);
}

static int from_ndarray(PyObject *a, int writable, const char *where, const char *what,
                        tlpy_operand *out) {
  tlpy_fail fail;
  if (tlpy_ndarray_tensor(a, writable, where, what, &out->tensor, &fail) != TL_OK) {
    tlpy_raise_message(fail.status, fail.message, -1);
    return -1;
  }
  out->owner = Py_NewRef(a);
  return 0;
}

static int dtype_of_format(const char *format, Py_ssize_t itemsize, tl_dtype *out) {
  if (!format) format = "B";
  if (*format == '@' || *format == '=' || *format == '<') format++;
  if (!strcmp(format, "f") && itemsize == 4)
    *out = TL_F32;
  else if (!strcmp(format, "d") && itemsize == 8)
    *out = TL_F64;
  else if (!strcmp(format, "Zf") && itemsize == 8)
    *out = TL_C64;
  else if (!strcmp(format, "Zd") && itemsize == 16)
    *out = TL_C128;
  else
    return -1;
  return 0;
}

static int from_buffer(PyObject *obj, int writable, const char *where, const char *what,
                       tlpy_operand *out) {
  int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
  if (PyObject_GetBuffer(obj, &out->view, flags) < 0) {
    PyErr_Clear();
    tlpy_raise(writable ? TL_E_INVALID : TL_E_DTYPE,
               "%s: %s is a %s, not %s (tenlane reads numpy arrays, buffers and DLPack "
               "producers in place; pass numpy.asarray(x))",
               where, what, Py_TYPE(obj)->tp_name,
               writable ? "a writable array"
                        : "an array of float32, float64, complex64 or "
                          "complex128");
    return -1;
  }
  out->has_view = 1;
  tl_dtype dtype;
  if (dtype_of_format(out->view.format, out->view.itemsize, &dtype) < 0) {
    tlpy_raise(TL_E_DTYPE, "%s: %s has buffer format '%s'; tenlane takes 'f', 'd', 'Zf', 'Zd'",
               where, what, out->view.format ? out->view.format : "B");
    return -1;
  }
  Py_ssize_t one = out->view.len / out->view.itemsize;
  const Py_ssize_t *shape = out->view.ndim ? out->view.shape : &one;
  tlpy_fail fail;
  if (layout_of(&out->tensor, dtype, out->view.ndim, shape, out->view.strides, out->view.buf, where,
                what, &fail) != TL_OK) {
    tlpy_raise_message(fail.status, fail.message, -1);
    return -1;
  }
  out->owner = Py_NewRef(obj);
  return 0;
}

int tlpy_operand_get(PyObject *obj, int writable, const char *where, const char *what,
                     tlpy_operand *out) {
  memset(out, 0, sizeof *out);
  int rc;
  if (PyArray_Check(obj)) {
    rc = from_ndarray(obj, writable, where, what, out);
  } else if (!writable && !PyObject_CheckBuffer(obj) && PyObject_HasAttrString(obj, "__dlpack__")) {
    rc = tlpy_operand_from_dlpack(obj, where, what, out);
  } else {
    rc = from_buffer(obj, writable, where, what, out);
  }
  if (rc < 0) tlpy_operand_release(out);
  return rc;
}

void tlpy_operand_release(tlpy_operand *op) {
  if (op->has_view) PyBuffer_Release(&op->view);
  op->has_view = 0;
  Py_CLEAR(op->owner);
}
