/* python/src/result.c: tenlane tensors out, as numpy arrays over tenlane memory.
 *
 * A result's memory was allocated by tenlane (through its allocator hooks) and moves into
 * a tenlane.Buffer, which becomes the numpy array's base: the array and every view of it
 * keep the Buffer alive, and collecting the last of them frees the memory with
 * tl_tensor_release. The memory belongs to no context or session, so a result outlives
 * both. A Buffer is also a DLPack producer (dlpack.c). */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

typedef struct tlpy_buffer {
  PyObject_HEAD tl_tensor tensor; /* owned */
} tlpy_buffer;

int tlpy_npy_type(tl_dtype dtype) {
  static const int types[TL_DTYPE_COUNT] = {NPY_FLOAT32, NPY_FLOAT64, NPY_COMPLEX64,
                                            NPY_COMPLEX128};
  return types[dtype];
}

const tl_tensor *tlpy_buffer_tensor(PyObject *buffer) { return &((tlpy_buffer *)buffer)->tensor; }

/* Buffers alive now (GIL held for every change). */
static Py_ssize_t live_buffers;

Py_ssize_t tlpy_live_buffers(void) { return live_buffers; }

static void buffer_dealloc(PyObject *self) {
  live_buffers--;
  tl_tensor_release(&((tlpy_buffer *)self)->tensor);
  Py_TYPE(self)->tp_free(self);
}

static PyObject *buffer_nbytes(PyObject *self, void *unused) {
  (void)unused;
  const tl_tensor *t = &((tlpy_buffer *)self)->tensor;
  int64_t n = tl_tensor_numel(t);
  return PyLong_FromLongLong(n * (int64_t)tl_dtype_size(t->dtype));
}

static PyMethodDef buffer_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))tlpy_buffer_dlpack, METH_FASTCALL | METH_KEYWORDS,
     "__dlpack__(stream=None): a 'dltensor' capsule (DLPack 0.6) over this memory; the "
     "capsule keeps the Buffer alive until its consumer is done. Any thread."},
    {"__dlpack_device__", tlpy_buffer_dlpack_device, METH_NOARGS,
     "__dlpack_device__(): (1, 0), the CPU."},
    {NULL, NULL, 0, NULL}};

static PyObject *buffer_address(PyObject *self, void *unused) {
  (void)unused;
  const tl_tensor *t = &((tlpy_buffer *)self)->tensor;
  return PyLong_FromVoidPtr(t->owned);
}

static PyGetSetDef buffer_getset[] = {
    {"address", buffer_address, NULL, "The address of the memory tenlane allocated.", NULL},
    {"nbytes", buffer_nbytes, NULL, "Bytes of the tensor's elements.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject tlpy_buffer_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tenlane.Buffer",
    .tp_basicsize = sizeof(tlpy_buffer),
    .tp_dealloc = buffer_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "Memory tenlane allocated for one result; the base of every result array. "
        "It is freed when the last array over it is collected, also after the "
        "session and the context are gone. A DLPack producer (__dlpack__).",
    .tp_methods = buffer_methods,
    .tp_getset = buffer_getset,
};

PyObject *tlpy_result(tl_tensor *t, PyObject *base) {
  npy_intp dims[TL_MAX_RANK], strides[TL_MAX_RANK];
  npy_intp size = (npy_intp)tl_dtype_size(t->dtype);
  int rank = t->rank, type = tlpy_npy_type(t->dtype);
  for (int k = 0; k < rank; k++) {
    dims[k] = (npy_intp)t->shape[k];
    strides[k] = (npy_intp)t->strides[k] * size;
  }
  char *first = (char *)t->data + t->offset * size;
  PyObject *keep;
  if (t->owned) {
    tlpy_buffer *buffer = PyObject_New(tlpy_buffer, &tlpy_buffer_type);
    if (!buffer) {
      tl_tensor_release(t);
      return NULL;
    }
    buffer->tensor = *t;
    live_buffers++;
    keep = (PyObject *)buffer;
  } else {
    keep = Py_NewRef(base);
  }
  memset(t, 0, sizeof *t);
  PyObject *array = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(type), rank, dims,
                                         strides, first, NPY_ARRAY_WRITEABLE, NULL);
  if (!array) {
    Py_DECREF(keep);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)array, keep) < 0) { /* steals keep */
    Py_DECREF(array);
    return NULL;
  }
  return array;
}

tl_status tlpy_create(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *out) {
  /* C order, as every surface the module uses makes its fresh results (tl_exec_set_order). */
  return tl_tensor_create_row_major(dtype, rank, shape, out);
}
