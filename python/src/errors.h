#pragma once
// The Python classes of the library's errors, one per op family (python/rudnn/errors.py's FAMILIES),
// installed once when the package loads (rudnn._C.set_error_classes) and read by raise().
#include <Python.h>

namespace rudnn::python {

// Keeps a reference to each class of `families` ({family name: class}).
void set_error_classes(PyObject* families);
// `family`'s class (the base rudnn.Error class's place is taken by RuntimeError before installation).
PyObject* error_class(const char* family);

}  // namespace rudnn::python
