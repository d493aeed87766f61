// loom._core: the nanobind extension behind the `loom` Python package. Each
// python/src/<topic>.cpp binds one part of the C++ API; this file only
// calls them in order (errors first, so every later binding's loom::Error
// becomes loom.LoomError).
#include <nanobind/nanobind.h>

#include "bindings.h"

NB_MODULE(_core, m) {
  m.doc() =
      "loom's C++ core: tensors, the lazy device, training arguments, models, optimizers, datasets "
      "and the Trainer.";
  loom::python::bind_errors(m);
  loom::python::bind_tensor(m);
  loom::python::bind_lazy(m);
  loom::python::bind_training_args(m);
  loom::python::bind_models(m);
  loom::python::bind_data(m);
  loom::python::bind_job(m);
  loom::python::bind_trainer(m);
}
