#include "errors.h"

namespace rudnn::python {

namespace {
PyObject* g_families = nullptr;  // a dict, kept for the interpreter's life
}

void set_error_classes(PyObject* families) {
  Py_XINCREF(families);
  Py_XDECREF(g_families);
  g_families = families;
}

PyObject* error_class(const char* family) {
  PyObject* found = g_families ? PyDict_GetItemString(g_families, family) : nullptr;
  return found ? found : PyExc_RuntimeError;
}

}  // namespace rudnn::python
