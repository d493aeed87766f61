// The binding functions of loom._core, one per python/src/<topic>.cpp,
// called by module.cpp in this order.
#pragma once

#include <nanobind/nanobind.h>

namespace loom::python {

void bind_errors(nanobind::module_& m);         // errors.cpp: loom.LoomError
void bind_tensor(nanobind::module_& m);         // tensor.cpp: Tensor, tensor, from_dlpack
void bind_lazy(nanobind::module_& m);           // lazy.cpp: the lazy submodule
void bind_training_args(nanobind::module_& m);  // training_args.cpp: the field table
void bind_models(nanobind::module_& m);         // models.cpp: models, AdamW, SGD
void bind_data(nanobind::module_& m);           // data.cpp: Tokenizer, Dataset, Collator
void bind_job(nanobind::module_& m);            // job.cpp: build_job (loom/job.h)
void bind_trainer(nanobind::module_& m);        // trainer.cpp: Trainer, callbacks' bridge

}  // namespace loom::python
