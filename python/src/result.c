/* python/src/result.c: tenlane tensors out, as numpy arrays over tenlane memory.
 *
 * A result's memory was allocated by tenlane (through its allocator hooks) and moves into
 * a tenlane.Buffer, which becomes the numpy array's base: the array and every view of it
 * keep the Buffer alive, and collecting the last of them frees the memory with
 * tl_tensor_release. The memory belongs to no context or session, so a result outlives
 * both. A Buffer is also a DLPack producer (dlpack.c). */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <string.h>

/* A Buffer keeps its tensor's fields, not a tl_tensor (over a kilobyte with TL_MAX_RANK
 * shapes and strides, which put every Buffer past the interpreter's small-object allocator
 * into malloc): the shapes and strides of up to INLINE_RANK axes lie in the object itself. */
#define INLINE_RANK 4
typedef struct tlpy_buffer {
  PyObject_HEAD tl_dtype dtype;
  int rank;
  int64_t offset; /* elements from data to element (0, ..., 0) */
  void *data;
  void *owned; /* what tenlane allocated, freed with the Buffer; NULL when borrowed */
  void *block; /* NULL, or the block (blocks.c) the tensor lies in */
  size_t block_bytes;
  int64_t *dims; /* shape[rank], then strides[rank] (elements): inline_dims, or PyMem_Malloc */
  int64_t inline_dims[2 * INLINE_RANK];
} tlpy_buffer;

int tlpy_npy_type(tl_dtype dtype) {
  static const int types[TL_DTYPE_COUNT] = {NPY_FLOAT32, NPY_FLOAT64, NPY_COMPLEX64,
                                            NPY_COMPLEX128};
  return types[dtype];
}

void tlpy_buffer_tensor(PyObject *buffer, tl_tensor *out) {
  const tlpy_buffer *b = (const tlpy_buffer *)buffer;
  memset(out, 0, sizeof *out);
  out->dtype = b->dtype;
  out->rank = b->rank;
  memcpy(out->shape, b->dims, (size_t)b->rank * sizeof(int64_t));
  memcpy(out->strides, b->dims + b->rank, (size_t)b->rank * sizeof(int64_t));
  out->offset = b->offset;
  out->data = b->data;
}

/* Buffers alive now (GIL held for every change). */
static Py_ssize_t live_buffers;

Py_ssize_t tlpy_live_buffers(void) { return live_buffers; }

/* Collected Buffers kept for the next results, at most BUFFER_KEEP, linked through `block`
 * (GIL held for every change). A batch of results is dropped all at once, and the
 * interpreter's allocator then hands the emptied arenas back to the system; the next
 * batch's Buffers had to be faulted in and zeroed again, page by page. At about 140 bytes
 * each (INLINE_RANK), 65536 of them hold 9 MB at most. tlpy_buffers_release frees them. */
#define BUFFER_KEEP 65536
static tlpy_buffer *kept_head;
static Py_ssize_t kept_count;

static void buffer_dealloc(PyObject *self) {
  tlpy_buffer *buffer = (tlpy_buffer *)self;
  live_buffers--;
  if (buffer->owned) { /* tenlane's memory goes back through tenlane's release */
    tl_tensor owner = {.owned = buffer->owned};
    tl_tensor_release(&owner);
  }
  tlpy_block_give_held(buffer->block, buffer->block_bytes);
  if (buffer->dims != buffer->inline_dims) PyMem_Free(buffer->dims);
  if (kept_count < BUFFER_KEEP) { /* the type has no subclasses: every Buffer is this size */
    buffer->block = kept_head;
    kept_head = buffer;
    kept_count++;
    return;
  }
  Py_TYPE(self)->tp_free(self);
}

Py_ssize_t tlpy_buffers_release(void) {
  Py_ssize_t freed = kept_count;
  while (kept_head) {
    tlpy_buffer *next = kept_head->block;
    PyObject_Free(kept_head);
    kept_head = next;
  }
  kept_count = 0;
  return freed;
}

static PyObject *buffer_nbytes(PyObject *self, void *unused) {
  (void)unused;
  const tlpy_buffer *b = (const tlpy_buffer *)self;
  int64_t n = 1;
  for (int k = 0; k < b->rank; k++) n *= b->dims[k]; /* a tensor tenlane made: in range */
  return PyLong_FromLongLong(n * (int64_t)tl_dtype_size(b->dtype));
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
  const tlpy_buffer *buffer = (const tlpy_buffer *)self;
  return PyLong_FromVoidPtr(buffer->block ? buffer->block : buffer->owned);
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

/* A numpy array over t's elements whose base is `keep` (a reference it takes over). */
static PyObject *array_over(const tl_tensor *t, PyObject *keep) {
  npy_intp dims[TL_MAX_RANK], strides[TL_MAX_RANK];
  npy_intp size = (npy_intp)tl_dtype_size(t->dtype);
  int rank = t->rank, type = tlpy_npy_type(t->dtype);
  for (int k = 0; k < rank; k++) {
    dims[k] = (npy_intp)t->shape[k];
    strides[k] = (npy_intp)t->strides[k] * size;
  }
  char *first = (char *)t->data + t->offset * size;
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

/* A Buffer over *t (owned memory, or a borrowed tensor over block); NULL if out of memory. */
static tlpy_buffer *buffer_new(const tl_tensor *t, void *block, size_t bytes) {
  tlpy_buffer *buffer;
  if (kept_head) {
    buffer = kept_head;
    kept_head = buffer->block;
    kept_count--;
    PyObject_Init((PyObject *)buffer, &tlpy_buffer_type);
  } else {
    buffer = PyObject_New(tlpy_buffer, &tlpy_buffer_type);
    if (!buffer) return NULL;
  }
  buffer->dims = buffer->inline_dims;
  if (t->rank > INLINE_RANK &&
      !(buffer->dims = PyMem_Malloc(2 * (size_t)t->rank * sizeof(int64_t)))) {
    PyObject_Free(buffer); /* kept ones were made by PyObject_New too */
    PyErr_NoMemory();
    return NULL;
  }
  buffer->dtype = t->dtype;
  buffer->rank = t->rank;
  memcpy(buffer->dims, t->shape, (size_t)t->rank * sizeof(int64_t));
  memcpy(buffer->dims + t->rank, t->strides, (size_t)t->rank * sizeof(int64_t));
  buffer->offset = t->offset;
  buffer->data = t->data;
  buffer->owned = t->owned;
  buffer->block = block;
  buffer->block_bytes = bytes;
  live_buffers++;
  return buffer;
}

PyObject *tlpy_result(tl_tensor *t, PyObject *base) {
  tl_tensor copy = *t;
  memset(t, 0, sizeof *t);
  PyObject *keep;
  if (copy.owned) {
    keep = (PyObject *)buffer_new(&copy, NULL, 0);
    if (!keep) {
      tl_tensor_release(&copy);
      return NULL;
    }
  } else {
    keep = Py_NewRef(base);
  }
  return array_over(&copy, keep);
}

PyObject *tlpy_result_block(const tl_tensor *t, void *block, size_t bytes) {
  tlpy_buffer *buffer = buffer_new(t, block, bytes);
  if (!buffer) {
    tlpy_block_give_held(block, bytes);
    return NULL;
  }
  return array_over(t, (PyObject *)buffer);
}

PyObject *tlpy_result_slab(const tl_tensor *stack, void *block, size_t bytes) {
  tlpy_buffer *buffer = buffer_new(stack, block, bytes);
  if (!buffer) {
    tl_tensor dropped = *stack;
    tl_tensor_release(&dropped); /* owned memory (a block's tensor owns nothing) */
    tlpy_block_give_held(block, bytes);
    return NULL;
  }
  return (PyObject *)buffer;
}

int tlpy_result_views(PyObject *slab, size_t first, size_t count, PyObject *list, Py_ssize_t at) {
  const tlpy_buffer *stack = (const tlpy_buffer *)slab;
  const int64_t *shape = stack->dims, *st = stack->dims + stack->rank;
  npy_intp dims[TL_MAX_RANK], strides[TL_MAX_RANK];
  npy_intp size = (npy_intp)tl_dtype_size(stack->dtype);
  int rank = stack->rank - 1;
  for (int k = 0; k < rank; k++) {
    dims[k] = (npy_intp)shape[k + 1];
    strides[k] = (npy_intp)st[k + 1] * size;
  }
  /* one descriptor for every view (each PyArray_NewFromDescr steals a reference) */
  PyArray_Descr *descr = PyArray_DescrFromType(tlpy_npy_type(stack->dtype));
  if (!descr) return -1;
  char *data = (char *)stack->data + (stack->offset + (int64_t)first * st[0]) * size;
  const npy_intp step = (npy_intp)st[0] * size;
  for (size_t i = 0; i < count; i++, data += step) {
    Py_INCREF(descr);
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, descr, rank, dims, strides, data,
                                           NPY_ARRAY_WRITEABLE, NULL);
    if (!array) {
      Py_DECREF(descr);
      return -1;
    }
    Py_INCREF(slab);
    if (PyArray_SetBaseObject((PyArrayObject *)array, slab) < 0) { /* steals slab */
      Py_DECREF(array);
      Py_DECREF(descr);
      return -1;
    }
    PyList_SET_ITEM(list, at + (Py_ssize_t)i, array);
  }
  Py_DECREF(descr);
  return 0;
}

tl_status tlpy_create(tl_dtype dtype, int rank, const int64_t *shape, tl_tensor *out) {
  /* C order, as every surface the module uses makes its fresh results (tl_exec_set_order). */
  return tl_tensor_create_row_major(dtype, rank, shape, out);
}
