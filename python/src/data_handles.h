// Handles of C++ datasets and collators as Python sees them (loom._core.Dataset,
// loom._core.Collator): the Trainer's inputs, shared with the C++ Trainer,
// which keeps them alive as long as it needs them.
#pragma once

#include <memory>

#include "loom/collator.h"
#include "loom/dataset.h"

namespace loom::python {

struct DatasetHandle {
  std::shared_ptr<const data::Dataset> dataset;
};

struct CollatorHandle {
  std::shared_ptr<const data::Collator> collator;
};

}  // namespace loom::python
