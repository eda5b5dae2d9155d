/* python/src/einsum_forms.c: the einsum call forms beyond a spec string: numpy's sublist
 * form (einsum(a, [0, 1], b, [1, 2], [0, 2])) turned into the C spec's integer labels
 * ("{0}{1},{1}{2}->{0}{2}"; Ellipsis becomes "..."), and an explicit contraction path in
 * opt_einsum's linear format (path=[(0, 1), (0, 1)]). */
#include "tlpy.h" /* first: Python.h sets feature macros the C headers read */

#include <stdio.h>
#include <string.h>

/* Append one sublist's labels to spec[*at..cap). Returns 0, or -1 with an exception. */
static int append_sublist(PyObject *list, const char *where, int index, char *spec, size_t cap,
                          size_t *at) {
  PyObject *seq = PySequence_Fast(list, "");
  if (seq == NULL) {
    PyErr_Clear();
    tlpy_raise(TL_E_INVALID, "%s: sublist %d is not a sequence of ints and Ellipsis", where, index);
    return -1;
  }
  Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  for (Py_ssize_t k = 0; k < count; k++) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, k);
    int wrote;
    if (item == Py_Ellipsis) {
      wrote = snprintf(spec + *at, cap - *at, "...");
    } else {
      long long v = PyLong_Check(item) ? PyLong_AsLongLong(item) : -1;
      if (v < 0 || v > 9999999999ll) {
        PyErr_Clear();
        Py_DECREF(seq);
        tlpy_raise(TL_E_INVALID,
                   "%s: sublist %d item %zd is not Ellipsis or an int in [0, 9999999999]", where,
                   index, k);
        return -1;
      }
      wrote = snprintf(spec + *at, cap - *at, "{%lld}", v);
    }
    if (wrote < 0 || (size_t)wrote >= cap - *at) {
      Py_DECREF(seq);
      tlpy_raise(TL_E_INVALID, "%s: the sublists make a spec longer than %zu bytes", where,
                 cap - 1);
      return -1;
    }
    *at += (size_t)wrote;
  }
  Py_DECREF(seq);
  return 0;
}

int tlpy_einsum_sublist(PyObject *const *args, Py_ssize_t nargs, const char *where, char *spec,
                        size_t cap, PyObject **arrays, int *n) {
  Py_ssize_t pairs = nargs / 2;
  if (pairs < 1 || pairs > TL_EINSUM_MAX_OPERANDS) {
    tlpy_raise(TL_E_INVALID, "%s: the sublist form takes 1 to %d (array, sublist) pairs, not %zd",
               where, TL_EINSUM_MAX_OPERANDS, pairs);
    return -1;
  }
  size_t at = 0;
  spec[0] = '\0';
  for (Py_ssize_t i = 0; i < pairs; i++) {
    arrays[i] = args[2 * i];
    if (i > 0) {
      if (at + 1 >= cap) break;
      spec[at++] = ',';
      spec[at] = '\0';
    }
    if (append_sublist(args[2 * i + 1], where, (int)i, spec, cap, &at) < 0) return -1;
  }
  if (nargs % 2 == 1) {
    if (at + 2 >= cap) {
      tlpy_raise(TL_E_INVALID, "%s: the sublists make a spec longer than %zu bytes", where,
                 cap - 1);
      return -1;
    }
    memcpy(spec + at, "->", 3);
    at += 2;
    if (append_sublist(args[nargs - 1], where, (int)pairs, spec, cap, &at) < 0) return -1;
  }
  *n = (int)pairs;
  return 0;
}

int tlpy_einsum_given_path(PyObject *obj, const char *where, int *pairs, int *n_steps) {
  if (obj == NULL || obj == Py_None || PyUnicode_Check(obj) || PyBool_Check(obj) ||
      !PySequence_Check(obj))
    return 0;
  PyObject *seq = PySequence_Fast(obj, "");
  if (seq == NULL) return -1;
  Py_ssize_t count = PySequence_Fast_GET_SIZE(seq);
  /* opt_einsum's contract_path returns ['einsum_path', (0, 1), ...]: skip that tag */
  Py_ssize_t first = 0;
  if (count > 0 && PyUnicode_Check(PySequence_Fast_GET_ITEM(seq, 0))) first = 1;
  if (count - first > TL_EINSUM_MAX_OPERANDS) {
    Py_DECREF(seq);
    tlpy_raise(TL_E_INVALID, "%s: the path has %zd steps; at most %d", where, count - first,
               TL_EINSUM_MAX_OPERANDS);
    return -1;
  }
  for (Py_ssize_t s = first; s < count; s++) {
    PyObject *step = PySequence_Fast_GET_ITEM(seq, s);
    int ok = PySequence_Check(step) && !PyUnicode_Check(step) && PySequence_Size(step) == 2;
    long v[2] = {-1, -1};
    for (int k = 0; ok && k < 2; k++) {
      PyObject *item = PySequence_GetItem(step, k);
      ok = item != NULL && PyLong_Check(item);
      if (ok) v[k] = PyLong_AsLong(item);
      Py_XDECREF(item);
      ok = ok && !(v[k] == -1 && PyErr_Occurred()) && v[k] >= 0 && v[k] < 1000000;
    }
    if (!ok) {
      PyErr_Clear();
      Py_DECREF(seq);
      tlpy_raise(TL_E_INVALID, "%s: path step %zd is not a pair of non-negative ints", where,
                 s - first);
      return -1;
    }
    pairs[2 * (s - first)] = (int)v[0];
    pairs[2 * (s - first) + 1] = (int)v[1];
  }
  *n_steps = (int)(count - first);
  Py_DECREF(seq);
  return 1;
}
