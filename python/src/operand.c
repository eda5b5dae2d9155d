/* python/src/operand.c: Python objects in, as tenlane tensors, without a copy.
 *
 * A numpy array is read from its own fields (data pointer, byte strides, dtype); any other
 * object is asked for DLPack (__dlpack__) and then for the buffer protocol. The tensor
 * borrows that memory: its data is the object's first element and its strides are the
 * object's byte strides divided by the element size, negative ones included, so a
 * reversed or sliced view is used in place. Strides that are not whole elements,
 * unaligned or byte-swapped data and dtypes tenlane lacks are refused, never copied. */
#include <string.h>

#include "tlpy.h"

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

/* Fill op->tensor from shape and byte strides; checks rank and whole-element strides. */
static int set_layout(tlpy_operand *op, tl_dtype dtype, int rank, const Py_ssize_t *shape,
                      const Py_ssize_t *byte_strides, void *data, const char *where,
                      const char *what) {
  if (rank > TL_MAX_RANK) {
    tlpy_raise(TL_E_SHAPE, "%s: %s has %d axes; tenlane takes at most %d", where, what, rank,
               TL_MAX_RANK);
    return -1;
  }
  Py_ssize_t size = (Py_ssize_t)tl_dtype_size(dtype);
  tl_tensor *t = &op->tensor;
  memset(t, 0, sizeof *t);
  t->dtype = dtype;
  t->rank = rank;
  t->data = data;
  int64_t count = 1;
  for (int k = 0; k < rank; k++) {
    t->shape[k] = shape[k];
    count *= shape[k];
    Py_ssize_t stride = byte_strides ? byte_strides[k] : 0;
    if (stride % size != 0) {
      tlpy_raise(TL_E_SHAPE,
                 "%s: %s has a stride of %zd bytes on axis %d, not a whole number of %s "
                 "elements (%zd bytes)",
                 where, what, stride, k, tl_dtype_name(dtype), size);
      return -1;
    }
    t->strides[k] = stride / size;
  }
  if (!byte_strides) tl_strides_row_major(rank, t->shape, t->strides);
  if (count > 0 && ((uintptr_t)data % (uintptr_t)(size > 8 ? 8 : size)) != 0) {
    tlpy_raise(TL_E_INVALID, "%s: %s's data at %p is not aligned to its %s elements", where, what,
               data, tl_dtype_name(dtype));
    return -1;
  }
  if (count == 0 && t->data == NULL) t->data = op; /* any non-NULL address for no elements */
  return 0;
}

static int from_ndarray(PyArrayObject *a, int writable, const char *where, const char *what,
                        tlpy_operand *out) {
  tl_dtype dtype;
  if (dtype_of_npy(PyArray_TYPE(a), &dtype) < 0) {
    tlpy_raise(TL_E_DTYPE,
               "%s: %s has dtype %s; tenlane computes in float32, float64, complex64 and "
               "complex128 and does not convert (use .astype)",
               where, what, PyArray_DESCR(a)->typeobj->tp_name);
    return -1;
  }
  if (!PyArray_ISNOTSWAPPED(a)) {
    tlpy_raise(TL_E_DTYPE, "%s: %s is byte-swapped (non-native byte order)", where, what);
    return -1;
  }
  if (writable && !PyArray_ISWRITEABLE(a)) {
    tlpy_raise(TL_E_INVALID, "%s: %s is read-only", where, what);
    return -1;
  }
  if (set_layout(out, dtype, PyArray_NDIM(a), PyArray_SHAPE(a), PyArray_STRIDES(a), PyArray_DATA(a),
                 where, what) < 0)
    return -1;
  out->owner = Py_NewRef((PyObject *)a);
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
  if (set_layout(out, dtype, out->view.ndim, shape, out->view.strides, out->view.buf, where, what) <
      0)
    return -1;
  out->owner = Py_NewRef(obj);
  return 0;
}

int tlpy_operand_get(PyObject *obj, int writable, const char *where, const char *what,
                     tlpy_operand *out) {
  memset(out, 0, sizeof *out);
  int rc;
  if (PyArray_Check(obj)) {
    rc = from_ndarray((PyArrayObject *)obj, writable, where, what, out);
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
