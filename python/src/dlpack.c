/* python/src/dlpack.c: DLPack 0.6 (Debian's libdlpack-dev), both ways, on the CPU.
 *
 * In: tenlane.from_dlpack(x) and any operand that is no numpy array but has __dlpack__
 * read the unversioned DLManagedTensor in x's "dltensor" capsule. from_dlpack renames the
 * capsule "used_dltensor" (the protocol's mark of a consumed capsule) and hands the
 * managed tensor to a holder that calls its deleter when the numpy array over it is
 * collected. An operand only borrows the capsule for the call: the capsule, kept by the
 * operand, calls the deleter itself when it is dropped.
 * Out: a tenlane.Buffer (the base of every result array) exports its tensor; the capsule's
 * manager context holds a reference to the Buffer until the consumer calls the deleter. */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <dlpack/dlpack.h>
#include <string.h>

/* ---- reading a DLManagedTensor -------------------------------------------------------- */

static int dtype_of_dl(DLDataType t, tl_dtype *out) {
  if (t.lanes != 1) return -1;
  if (t.code == kDLFloat && t.bits == 32)
    *out = TL_F32;
  else if (t.code == kDLFloat && t.bits == 64)
    *out = TL_F64;
  else if (t.code == kDLComplex && t.bits == 64)
    *out = TL_C64;
  else if (t.code == kDLComplex && t.bits == 128)
    *out = TL_C128;
  else
    return -1;
  return 0;
}

/* The capsule from obj.__dlpack__() (new reference) and its tensor, checked for tenlane. */
static PyObject *capsule_of(PyObject *obj, const char *where, const char *what,
                            DLManagedTensor **managed, tl_dtype *dtype) {
  PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
  if (!method) {
    PyErr_Clear();
    return tlpy_raise(TL_E_DTYPE, "%s: %s (a %s) has no __dlpack__", where, what,
                      Py_TYPE(obj)->tp_name);
  }
  PyObject *capsule = PyObject_CallNoArgs(method);
  Py_DECREF(method);
  if (!capsule) { /* the producer refused: a tenlane error whose cause is its exception */
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *said = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!said) PyErr_Clear();
    tlpy_raise(TL_E_DTYPE, "%s: %s.__dlpack__() failed: %s", where, what, said ? said : "?");
    Py_XDECREF(text);
    PyObject *t2, *v2, *tb2;
    PyErr_Fetch(&t2, &v2, &tb2);
    PyErr_NormalizeException(&t2, &v2, &tb2);
    if (v2 && value) {
      if (tb) PyException_SetTraceback(value, tb);
      PyException_SetCause(v2, Py_NewRef(value));
    }
    PyErr_Restore(t2, v2, tb2);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
  }
  *managed = PyCapsule_GetPointer(capsule, "dltensor");
  if (!*managed) {
    Py_DECREF(capsule);
    return NULL;
  }
  const DLTensor *t = &(*managed)->dl_tensor;
  if (t->device.device_type != kDLCPU) {
    Py_DECREF(capsule);
    return tlpy_raise(TL_E_UNAVAILABLE,
                      "%s: %s lives on DLPack device type %d; tenlane reads CPU memory only", where,
                      what, (int)t->device.device_type);
  }
  if (dtype_of_dl(t->dtype, dtype) < 0) {
    Py_DECREF(capsule);
    return tlpy_raise(TL_E_DTYPE,
                      "%s: %s has DLPack dtype code %d, %d bits, %d lanes; tenlane takes "
                      "float32/64 and complex64/128",
                      where, what, (int)t->dtype.code, (int)t->dtype.bits, (int)t->dtype.lanes);
  }
  if (t->ndim < 0 || t->ndim > TL_MAX_RANK) {
    Py_DECREF(capsule);
    return tlpy_raise(TL_E_SHAPE, "%s: %s has %d axes; tenlane takes at most %d", where, what,
                      (int)t->ndim, TL_MAX_RANK);
  }
  return capsule;
}

/* Shape and element strides of a DLTensor (NULL strides: C order). */
static void dl_layout(const DLTensor *t, tl_tensor *out) {
  memset(out, 0, sizeof *out);
  out->rank = t->ndim;
  for (int k = 0; k < t->ndim; k++) out->shape[k] = t->shape[k];
  if (t->strides)
    for (int k = 0; k < t->ndim; k++) out->strides[k] = t->strides[k];
  else
    tl_strides_row_major(t->ndim, out->shape, out->strides);
  out->data = (char *)t->data + t->byte_offset;
}

int tlpy_operand_from_dlpack(PyObject *obj, const char *where, const char *what,
                             tlpy_operand *out) {
  DLManagedTensor *managed;
  tl_dtype dtype;
  PyObject *capsule = capsule_of(obj, where, what, &managed, &dtype);
  if (!capsule) return -1;
  dl_layout(&managed->dl_tensor, &out->tensor);
  out->tensor.dtype = dtype;
  if (tl_tensor_numel(&out->tensor) == 0 && !out->tensor.data) out->tensor.data = out;
  out->owner = capsule;
  return 0;
}

/* Holds a consumed DLManagedTensor; calls its deleter when collected. */
typedef struct dl_holder {
  PyObject_HEAD DLManagedTensor *managed;
} dl_holder;

static void holder_dealloc(PyObject *self) {
  DLManagedTensor *managed = ((dl_holder *)self)->managed;
  if (managed && managed->deleter) managed->deleter(managed);
  Py_TYPE(self)->tp_free(self);
}

static PyTypeObject holder_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tenlane._DLPackHolder",
    .tp_basicsize = sizeof(dl_holder),
    .tp_dealloc = holder_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Keeps a DLPack producer's tensor alive for the numpy array over it.",
};

PyObject *tlpy_from_dlpack(PyObject *module, PyObject *obj) {
  (void)module;
  if (PyType_Ready(&holder_type) < 0) return NULL;
  DLManagedTensor *managed;
  tl_dtype dtype;
  PyObject *capsule = capsule_of(obj, "tenlane.from_dlpack", "x", &managed, &dtype);
  if (!capsule) return NULL;
  tl_tensor t;
  dl_layout(&managed->dl_tensor, &t);
  t.dtype = dtype;
  dl_holder *holder = PyObject_New(dl_holder, &holder_type);
  if (!holder) {
    Py_DECREF(capsule);
    return NULL;
  }
  holder->managed = NULL;
  /* Consume the capsule: from here on the holder calls the deleter, the capsule does not. */
  if (PyCapsule_SetName(capsule, "used_dltensor") < 0) {
    Py_DECREF(holder);
    Py_DECREF(capsule);
    return NULL;
  }
  holder->managed = managed;
  Py_DECREF(capsule);
  if (t.data == NULL) t.data = managed; /* no elements: any non-NULL address */
  PyObject *array = tlpy_result(&t, (PyObject *)holder);
  Py_DECREF(holder);
  return array;
}

/* ---- exporting a Buffer --------------------------------------------------------------- */

typedef struct export_ctx {
  PyObject *buffer; /* strong reference */
  int64_t shape[TL_MAX_RANK];
  int64_t strides[TL_MAX_RANK];
} export_ctx;

static void export_deleter(DLManagedTensor *self) {
  export_ctx *ctx = self->manager_ctx;
  PyGILState_STATE gil = PyGILState_Ensure();
  Py_XDECREF(ctx->buffer);
  PyGILState_Release(gil);
  PyMem_RawFree(ctx);
  PyMem_RawFree(self);
}

static void capsule_destructor(PyObject *capsule) {
  if (!PyCapsule_IsValid(capsule, "dltensor")) return; /* consumed: the consumer deletes */
  DLManagedTensor *managed = PyCapsule_GetPointer(capsule, "dltensor");
  if (managed && managed->deleter) managed->deleter(managed);
}

PyObject *tlpy_buffer_dlpack(PyObject *self, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames) {
  (void)args;
  Py_ssize_t given = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
  if (given > 1 || nargs > 1)
    return tlpy_raise(TL_E_INVALID, "tenlane.Buffer.__dlpack__: takes only stream=None");
  const tl_tensor *t = tlpy_buffer_tensor(self);
  DLManagedTensor *managed = PyMem_RawCalloc(1, sizeof *managed);
  export_ctx *ctx = PyMem_RawCalloc(1, sizeof *ctx);
  if (!managed || !ctx) {
    PyMem_RawFree(managed);
    PyMem_RawFree(ctx);
    return PyErr_NoMemory();
  }
  static const uint8_t codes[TL_DTYPE_COUNT] = {kDLFloat, kDLFloat, kDLComplex, kDLComplex};
  for (int k = 0; k < t->rank; k++) {
    ctx->shape[k] = t->shape[k];
    ctx->strides[k] = t->strides[k];
  }
  ctx->buffer = Py_NewRef(self);
  managed->manager_ctx = ctx;
  managed->deleter = export_deleter;
  managed->dl_tensor.data = t->data;
  managed->dl_tensor.byte_offset = (uint64_t)(t->offset * (int64_t)tl_dtype_size(t->dtype));
  managed->dl_tensor.device.device_type = kDLCPU;
  managed->dl_tensor.device.device_id = 0;
  managed->dl_tensor.ndim = t->rank;
  managed->dl_tensor.dtype.code = codes[t->dtype];
  managed->dl_tensor.dtype.bits = (uint8_t)(8 * tl_dtype_size(t->dtype));
  managed->dl_tensor.dtype.lanes = 1;
  managed->dl_tensor.shape = ctx->shape;
  managed->dl_tensor.strides = ctx->strides;
  PyObject *capsule = PyCapsule_New(managed, "dltensor", capsule_destructor);
  if (!capsule) export_deleter(managed);
  return capsule;
}

PyObject *tlpy_buffer_dlpack_device(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return Py_BuildValue("(ii)", (int)kDLCPU, 0);
}
