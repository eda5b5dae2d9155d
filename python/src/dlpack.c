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

/* The capsule from obj.__dlpack__() (new reference) and its tensor, checked for tenlane:
 * an unconsumed "dltensor" capsule of a CPU tensor of a dtype tenlane computes in. */
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
    PyObject *value = tlpy_exception_take();
    PyObject *text = value ? PyObject_Str(value) : NULL;
    const char *said = text ? PyUnicode_AsUTF8(text) : NULL;
    if (!said) PyErr_Clear();
    tlpy_raise(TL_E_DTYPE, "%s: %s.__dlpack__() failed: %s", where, what, said ? said : "?");
    Py_XDECREF(text);
    tlpy_exception_chain(value);
    Py_XDECREF(value);
    return NULL;
  }
  if (!PyCapsule_CheckExact(capsule)) {
    tlpy_raise(TL_E_DTYPE, "%s: %s.__dlpack__() returned a %s, not a DLPack capsule", where, what,
               Py_TYPE(capsule)->tp_name);
    Py_DECREF(capsule);
    return NULL;
  }
  if (!PyCapsule_IsValid(capsule, "dltensor")) {
    /* "used_dltensor" is a capsule some consumer already took; any other name is no
     * DLPack 0.6 tensor (a versioned capsule included). */
    const char *name = PyCapsule_GetName(capsule);
    PyErr_Clear();
    tlpy_raise(TL_E_INVALID,
               "%s: %s.__dlpack__() returned a capsule named \"%s\", not an unconsumed "
               "\"dltensor\"%s",
               where, what, name ? name : "(null)",
               name && !strcmp(name, "used_dltensor") ? " (already consumed)" : "");
    Py_DECREF(capsule);
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
    return tlpy_raise(TL_E_SHAPE, "%s: %s has %d axes; tenlane takes 0 to %d", where, what,
                      (int)t->ndim, TL_MAX_RANK);
  }
  return capsule;
}

/* Shape and element strides of a DLTensor (NULL strides: C order) as a borrowed tensor,
 * checked so that every element lies at an address the process can form: no NULL shape
 * or data where there are elements, no negative extent, no product or byte span that
 * overflows, no start that is not aligned to the element (the rule numpy operands follow).
 * empty_data: the address a tensor without elements gets when its data is NULL. Returns 0,
 * or -1 with the error raised, naming the value. */
static int dl_layout(const DLTensor *t, tl_dtype dtype, const char *where, const char *what,
                     void *empty_data, tl_tensor *out) {
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->rank = t->ndim;
  const int64_t size = (int64_t)tl_dtype_size(dtype);
  if (t->ndim > 0 && t->shape == NULL) {
    tlpy_raise(TL_E_INVALID, "%s: %s has %d axes and a NULL shape", where, what, (int)t->ndim);
    return -1;
  }
  int64_t numel = 1;
  for (int k = 0; k < t->ndim; k++) {
    int64_t extent = t->shape[k];
    if (extent < 0) {
      tlpy_raise(TL_E_SHAPE, "%s: %s has extent %lld on axis %d; extents are 0 or more", where,
                 what, (long long)extent, k);
      return -1;
    }
    out->shape[k] = extent;
    if (__builtin_mul_overflow(numel, extent, &numel)) {
      tlpy_raise(TL_E_SHAPE,
                 "%s: %s has %lld elements up to axis %d and extent %lld there: the "
                 "count overflows 64 bits",
                 where, what, (long long)numel, k, (long long)extent);
      return -1;
    }
  }
  int64_t total;
  if (__builtin_mul_overflow(numel, size, &total)) {
    tlpy_raise(TL_E_SHAPE, "%s: %s has %lld elements of %lld bytes: the size overflows 64 bits",
               where, what, (long long)numel, (long long)size);
    return -1;
  }
  if (t->strides) {
    for (int k = 0; k < t->ndim; k++) out->strides[k] = t->strides[k];
  } else if (!tl_strides_row_major(t->ndim, out->shape, out->strides)) {
    tlpy_raise(TL_E_SHAPE, "%s: %s's C-order strides overflow 64 bits", where, what);
    return -1;
  }
  /* The bytes from the first element to the lowest and the highest one it touches. */
  int64_t lo = 0, hi = 0;
  for (int k = 0; k < t->ndim; k++) {
    int64_t bytes, span;
    if (__builtin_mul_overflow(out->strides[k], size, &bytes) ||
        (numel > 0 && (__builtin_mul_overflow(bytes, out->shape[k] - 1, &span) ||
                       __builtin_add_overflow(span < 0 ? lo : hi, span, span < 0 ? &lo : &hi)))) {
      tlpy_raise(TL_E_SHAPE,
                 "%s: %s has stride %lld on axis %d of extent %lld: its byte span "
                 "overflows 64 bits",
                 where, what, (long long)out->strides[k], k, (long long)out->shape[k]);
      return -1;
    }
  }
  if (numel == 0) {
    out->data = t->data ? t->data : empty_data; /* no elements: any non-NULL address */
    return 0;
  }
  if (t->data == NULL) {
    tlpy_raise(TL_E_INVALID, "%s: %s has %lld elements and NULL data", where, what,
               (long long)numel);
    return -1;
  }
  uintptr_t start;
  if (t->byte_offset > (uint64_t)INT64_MAX ||
      __builtin_add_overflow((uintptr_t)t->data, (uintptr_t)t->byte_offset, &start) ||
      (uintptr_t)0 - (uintptr_t)lo > start ||
      UINTPTR_MAX - start < (uintptr_t)hi + (uintptr_t)size) {
    tlpy_raise(TL_E_SHAPE,
               "%s: %s's data %p with byte_offset %llu and a byte span [%lld, %lld] "
               "runs past the address space",
               where, what, t->data, (unsigned long long)t->byte_offset, (long long)lo,
               (long long)hi);
    return -1;
  }
  const uintptr_t align = (uintptr_t)(size > 8 ? 8 : size);
  if (start % align != 0) {
    tlpy_raise(TL_E_INVALID,
               "%s: %s's data %p with byte_offset %llu is not aligned to its %s "
               "elements (%llu bytes); tenlane refuses unaligned memory",
               where, what, t->data, (unsigned long long)t->byte_offset, tl_dtype_name(dtype),
               (unsigned long long)align);
    return -1;
  }
  out->data = (void *)start;
  return 0;
}

int tlpy_operand_from_dlpack(PyObject *obj, const char *where, const char *what,
                             tlpy_operand *out) {
  DLManagedTensor *managed;
  tl_dtype dtype;
  PyObject *capsule = capsule_of(obj, where, what, &managed, &dtype);
  if (!capsule) return -1;
  if (dl_layout(&managed->dl_tensor, dtype, where, what, out, &out->tensor) < 0) {
    Py_DECREF(capsule);
    return -1;
  }
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
  if (dl_layout(&managed->dl_tensor, dtype, "tenlane.from_dlpack", "x", managed, &t) < 0) {
    Py_DECREF(capsule); /* not consumed: the producer's capsule still deletes it */
    return NULL;
  }
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
  tl_tensor view;
  tlpy_buffer_tensor(self, &view);
  const tl_tensor *t = &view;
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
