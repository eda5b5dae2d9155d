/* python/src/module.c: the extension module tenlane._core: its table and initialisation.
 * The package python/tenlane re-exports the public names; the test hooks (_allocation_count,
 * _live_buffers, _time_c_einsum, _uniform_items) reach users only through tenlane._testing. */
#define TLPY_IMPORT_ARRAY
#include "tlpy.h"

static PyObject *module_from_dlpack(PyObject *module, PyObject *x) {
  return tlpy_from_dlpack(module, x);
}

static PyObject *module_provider(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return PyUnicode_FromString(tl_kernels_provider());
}

static PyObject *module_tensor_info(PyObject *module, PyObject *x) {
  (void)module;
  tlpy_operand op;
  if (tlpy_operand_get(x, 0, "tenlane.tensor_info", "x", &op) < 0) return NULL;
  const tl_tensor *t = &op.tensor;
  PyObject *shape = PyTuple_New(t->rank), *strides = PyTuple_New(t->rank), *r = NULL;
  for (int k = 0; shape && strides && k < t->rank; k++) {
    PyTuple_SET_ITEM(shape, k, PyLong_FromLongLong(t->shape[k]));
    PyTuple_SET_ITEM(strides, k, PyLong_FromLongLong(t->strides[k]));
  }
  if (shape && strides)
    r = Py_BuildValue("{s:K,s:s,s:O,s:O}", "data",
                      (unsigned long long)(uintptr_t)((char *)t->data +
                                                      t->offset * (int64_t)tl_dtype_size(t->dtype)),
                      "dtype", tl_dtype_name(t->dtype), "shape", shape, "strides", strides);
  Py_XDECREF(shape);
  Py_XDECREF(strides);
  tlpy_operand_release(&op);
  return r;
}

static PyObject *module_allocation_count(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return PyLong_FromUnsignedLongLong(tl_allocation_count());
}

static PyObject *module_live_buffers(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return PyLong_FromSsize_t(tlpy_live_buffers());
}

static PyObject *module_uniform_items(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  return PyLong_FromSize_t(tlpy_uniform_items());
}

static PyObject *module_release_cached_memory(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  tlpy_buffers_release(); /* the kept Buffer objects too (GIL held here) */
  tlpy_block_flush_held();
  size_t blocks = tlpy_block_release();
  return PyLong_FromSize_t(blocks + tlpy_reuse_release());
}

static PyObject *module_cached_memory(PyObject *module, PyObject *unused) {
  (void)module;
  (void)unused;
  tlpy_block_flush_held();
  return PyLong_FromSize_t(tlpy_block_kept() + tlpy_reuse_kept());
}

static PyMethodDef module_methods[] = {
    {"release_cached_memory", module_release_cached_memory, METH_NOARGS,
     "release_cached_memory() -> int: free the memory of collected small results that tenlane "
     "keeps for the next results of the same size (at most 64 MiB), the large blocks "
     "(256 KiB and up) kept the same way (at most 16 blocks, 256 MiB), and the result Buffer "
     "objects kept for reuse (at most 65536); returns the bytes of result memory freed. "
     "Any thread."},
    {"cached_memory", module_cached_memory, METH_NOARGS,
     "cached_memory() -> int: bytes of freed result memory kept for reuse (small results' "
     "blocks and large freed blocks). Any thread."},
    {"_time_c_einsum", tlpy_time_c_einsum, METH_VARARGS,
     "_time_c_einsum(session, spec, a, b, calls) -> float: mean ns of the C call "
     "Session.einsum makes, timed in C (for the benchmark). Opening thread only."},
    {"_live_buffers", module_live_buffers, METH_NOARGS,
     "_live_buffers() -> int: result buffers not yet freed (for leak checks)."},
    {"tensor_info", module_tensor_info, METH_O,
     "tensor_info(x) -> dict: the tensor tenlane sees for x, read the way every call reads its "
     "operands: data (the address of element 0), dtype, shape and strides (in elements). For "
     "checks that nothing is copied. Any thread."},
    {"_uniform_items", module_uniform_items, METH_NOARGS,
     "_uniform_items() -> int: map_einsum items run so far as part of a uniform run (one einsum "
     "over many items, uniform.c), for tests that the path was taken. Any thread."},
    {"_allocation_count", module_allocation_count, METH_NOARGS,
     "_allocation_count() -> int: heap allocations tenlane made so far (tl_allocation_count)."},
    {"from_dlpack", module_from_dlpack, METH_O,
     "from_dlpack(x) -> ndarray: a numpy array over the memory x exports through "
     "__dlpack__ (DLPack 0.6, CPU, float32/64 or complex64/128), without a copy. The array "
     "keeps x's tensor alive. Any thread."},
    {"_tci_run", tlpy_tci_run, METH_VARARGS,
     "_tci_run(session, f, dims, bits, fused, lo, hi, tol, max_bond, max_sweeps, patching, "
     "min_free_sites, seed, max_lanes): tenlane.tci.crossinterpolate's engine (use that)."},
    {"provider", module_provider, METH_NOARGS,
     "provider() -> str: the kernels tenlane picked (e.g. 'blis:skx(1m)+tl-complex')."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tenlane._core",
    .m_doc =
        "tenlane: numpy in, numpy out, zero copy, lanes without the GIL.\n\n"
        "    ctx = tenlane.Context(threads=2)\n"
        "    with ctx.session() as s:\n"
        "        c = s.einsum('ij,jk->ik', a, b)\n"
        "        outs = s.map_einsum('ij,jk->ik', [(a, b), (b, a)])\n\n"
        "Thread rules: a session is used only on the thread that opened it "
        "(WrongThreadError elsewhere). The map_* calls run items on the session's lanes "
        "with the GIL released; map(fn, n) runs Python callbacks, bound by the GIL. "
        "Results are numpy arrays over tenlane memory, freed when collected; they "
        "outlive the session and the context. Errors are tenlane.Error subclasses, "
        "one per status. See docs/python.md.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__core(void); /* the one symbol the module exports */
PyMODINIT_FUNC PyInit__core(void) {
  static int installed;
  if (!installed) { /* before any tenlane object exists; once per process */
    tlpy_reuse_install();
    installed = 1;
  }
  import_array();
  if (tlpy_blocks_init() < 0) return PyErr_NoMemory();
  if (PyType_Ready(&tlpy_buffer_type) < 0 || PyType_Ready(&tlpy_context_type) < 0 ||
      tlpy_session_type_init() < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module_def);
  if (!m) return NULL;
  if (tlpy_errors_init(m) < 0 || tlpy_default_init(m) < 0 ||
      PyModule_AddObjectRef(m, "Context", (PyObject *)&tlpy_context_type) < 0 ||
      PyModule_AddObjectRef(m, "Session", (PyObject *)&tlpy_session_type) < 0 ||
      PyModule_AddObjectRef(m, "Buffer", (PyObject *)&tlpy_buffer_type) < 0 ||
      PyModule_AddIntConstant(m, "NOGIL_ELEMENTS", TLPY_NOGIL_ELEMENTS) < 0 ||
      PyModule_AddStringConstant(m, "__version__", tl_version()) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
