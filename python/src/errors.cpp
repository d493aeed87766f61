// loom::Error as Python's loom.LoomError, a subclass of ValueError (a user's
// bad input, as Python's own checks raise), with the C++ message unchanged.
#include <nanobind/nanobind.h>

#include "bindings.h"
#include "loom/error.h"

namespace nb = nanobind;

namespace loom::python {

void bind_errors(nb::module_& m) { nb::exception<loom::Error>(m, "LoomError", PyExc_ValueError); }

}  // namespace loom::python
