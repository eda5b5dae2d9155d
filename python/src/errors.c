/* python/src/errors.c: tenlane.Error and one subclass per tenlane status.
 *
 * The classes are generated from TL_STATUS_MAP, the same X-macro list the C enum comes
 * from, so a status added to include/tenlane/status.h gets its class on the next build:
 * TL_E_WRONG_THREAD becomes WrongThreadError (the suffix in CamelCase plus "Error").
 * Every instance carries `status` (the status name, "TL_E_SHAPE"), `code` (its number),
 * `message` (tenlane's message, which starts with the call that failed) and `item` (the
 * lowest failing item of a map, else None). A few classes also derive from the Python
 * built-in a numpy user would catch (ValueError, TypeError, MemoryError). */

#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct status_entry {
  tl_status status;
  const char *suffix;
  const char *text;
} status_entry;

static const status_entry entries[] = {
#define TLPY_ENTRY(suffix, text) {TL_##suffix, #suffix, text},
    TL_STATUS_MAP(TLPY_ENTRY)
#undef TLPY_ENTRY
};
#define ENTRY_COUNT ((int)(sizeof entries / sizeof entries[0]))

static PyObject *base_error;
static PyObject *classes[ENTRY_COUNT];

/* "E_WRONG_THREAD" -> "WrongThreadError" ("E_NOMEM" reads better as "NoMemoryError"). */
static void class_name(const char *suffix, char *out, size_t cap) {
  size_t n = 0;
  int upper = 1;
  if (strcmp(suffix, "E_NOMEM") == 0) suffix = "E_NO_MEMORY";
  if (strncmp(suffix, "E_", 2) == 0) suffix += 2;
  for (const char *c = suffix; *c && n + 6 < cap; c++) {
    if (*c == '_') {
      upper = 1;
      continue;
    }
    out[n++] = (char)(upper ? toupper((unsigned char)*c) : tolower((unsigned char)*c));
    upper = 0;
  }
  memcpy(out + n, "Error", 6);
}

/* The Python built-in a numpy user would also expect to catch, or NULL. */
static PyObject *builtin_base(tl_status status) {
  switch (status) {
    case TL_E_INVALID:
    case TL_E_SHAPE:
    case TL_E_ALIAS:
      return PyExc_ValueError;
    case TL_E_DTYPE:
      return PyExc_TypeError;
    case TL_E_NOMEM:
      return PyExc_MemoryError;
    default:
      return NULL;
  }
}

static int set_class_attrs(PyObject *cls, const char *status_name, long code) {
  PyObject *name = PyUnicode_FromString(status_name);
  PyObject *num = PyLong_FromLong(code);
  int rc = (name && num && PyObject_SetAttrString(cls, "status", name) == 0 &&
            PyObject_SetAttrString(cls, "code", num) == 0 &&
            PyObject_SetAttrString(cls, "item", Py_None) == 0)
               ? 0
               : -1;
  Py_XDECREF(name);
  Py_XDECREF(num);
  return rc;
}

int tlpy_errors_init(PyObject *m) {
  base_error = PyErr_NewExceptionWithDoc(
      "tenlane.Error",
      "A tenlane call failed. `status` is the status name (\"TL_E_SHAPE\"), `code` its "
      "number, `message` tenlane's message (it starts with the call that failed and names "
      "the values involved), `item` the lowest failing item of a map (else None). Each "
      "status has a subclass: ShapeError, DtypeError, WrongThreadError, ...",
      PyExc_Exception, NULL);
  if (!base_error || set_class_attrs(base_error, "TL_E_?", -1) < 0) return -1;
  if (PyModule_AddObjectRef(m, "Error", base_error) < 0) return -1;
  for (int i = 0; i < ENTRY_COUNT; i++) {
    if (entries[i].status == TL_OK) continue;
    char short_name[64], full_name[80], doc[200], status_name[64];
    class_name(entries[i].suffix, short_name, sizeof short_name);
    snprintf(full_name, sizeof full_name, "tenlane.%s", short_name);
    snprintf(status_name, sizeof status_name, "TL_%s", entries[i].suffix);
    snprintf(doc, sizeof doc, "Raised for %s: %s.", status_name, entries[i].text);
    PyObject *extra = builtin_base(entries[i].status);
    PyObject *bases = extra ? PyTuple_Pack(2, base_error, extra) : PyTuple_Pack(1, base_error);
    if (!bases) return -1;
    classes[i] = PyErr_NewExceptionWithDoc(full_name, doc, bases, NULL);
    Py_DECREF(bases);
    if (!classes[i] || set_class_attrs(classes[i], status_name, (long)entries[i].status) < 0)
      return -1;
    if (PyModule_AddObjectRef(m, short_name, classes[i]) < 0) return -1;
  }
  return 0;
}

PyObject *tlpy_error_class(tl_status status) {
  for (int i = 0; i < ENTRY_COUNT; i++)
    if (entries[i].status == status && classes[i]) return classes[i];
  return base_error;
}

PyObject *tlpy_raise_message(tl_status status, const char *message, Py_ssize_t item) {
  /* A call cancelled by Ctrl-C (tlpy_cancel) raises what SIGINT's handler raises
   * (KeyboardInterrupt) in place of the cancellation error. */
  if (status == TL_E_CANCELLED && PyErr_CheckSignals() < 0) return NULL;
  PyObject *cls = tlpy_error_class(status);
  PyObject *text = PyUnicode_DecodeUTF8(message, (Py_ssize_t)strlen(message), "replace");
  if (!text) return NULL;
  PyObject *exc = PyObject_CallOneArg(cls, text);
  if (exc) {
    PyObject *index = item >= 0 ? PyLong_FromSsize_t(item) : Py_NewRef(Py_None);
    if (!index || PyObject_SetAttrString(exc, "message", text) < 0 ||
        PyObject_SetAttrString(exc, "item", index) < 0) {
      Py_CLEAR(exc);
    }
    Py_XDECREF(index);
  }
  Py_DECREF(text);
  if (exc) {
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
  }
  return NULL;
}

PyObject *tlpy_raise(tl_status status, const char *format, ...) {
  char message[512];
  va_list ap;
  va_start(ap, format);
  vsnprintf(message, sizeof message, format, ap);
  va_end(ap);
  return tlpy_raise_message(status, message, -1);
}

PyObject *tlpy_raise_last(tl_status status) {
  return tlpy_raise_message(status, tl_last_message(), -1);
}

PyObject *tlpy_exception_take(void) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && tb) PyException_SetTraceback(value, tb);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  return value;
}

void tlpy_exception_chain(PyObject *cause) {
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (value && cause) PyException_SetCause(value, Py_NewRef(cause));
  PyErr_Restore(type, value, tb);
}
