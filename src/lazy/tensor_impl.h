// TensorImpl: the shared state behind a loom::Tensor handle. It holds either
// device data (a materialized buffer) or, on the lazy device, a pending IR
// value; plus the autograd fields. `version` counts in-place rebinds so
// autograd can detect a saved operand that changed before backward.
#pragma once

#include <memory>

#include "core/buffer.h"
#include "loom/device.h"
#include "loom/tensor.h"
#include "ops/attrs.h"

namespace loom {
namespace autograd {
struct GradNode;
}
namespace lazy {
struct TraceNode;
}

namespace backends {
class Backend;
}

struct TensorImpl {
  ops::TensorType type;
  Device device;
  /// device.backend resolved when the tensor was made (lazy/dispatch.cpp),
  /// so eager ops and host reads do no lookup by name; null until then.
  const backends::Backend* backend = nullptr;
  BufferPtr data;                         // device data; null while only an IR value is pending
  std::shared_ptr<lazy::TraceNode> node;  // lazy device: pending value or device-data node
  bool requires_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::GradNode> grad_fn;  // null for leaves
  uint64_t version = 0;
  // A host copy of `data` when the device's memory is not host-visible
  // (lazy:sim, later cuda): made by the first host read, valid while
  // host_copy_of still is `data` (a weak handle: a freed buffer never
  // matches a new one at the same address).
  BufferPtr host_copy;
  std::weak_ptr<Buffer> host_copy_of;
};

}  // namespace loom
