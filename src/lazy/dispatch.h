// The one entry point every op goes through below autograd: check devices,
// infer the output type, then run the op at once (eager `cpu` device: a
// one-node graph lowered to the backend's kernel) or trace it (lazy device).
#pragma once

#include <vector>

#include "core/buffer.h"
#include "loom/tensor.h"
#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::lazy {

/// Applies `op` to `inputs` with `attrs`. Nullary ops (full, arange) run on
/// `device`; otherwise all operands must share one device (loom::Error
/// "[op] operands on devices cpu and lazy:cpu"). No autograd recording.
Tensor apply_op(ops::OpKind op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs,
                const Device& device = {});

/// A tensor wrapping `data` (already holding `type`'s bytes) on `device`.
Tensor make_tensor(BufferPtr data, const ops::TensorType& type, const Device& device);

/// The tensor's materialized buffer (syncing a lazy tensor first).
const BufferPtr& materialize(const Tensor& t);

/// Rebinds `dst` to the value of `src` (same type) and bumps its version:
/// the in-place primitive.
void rebind(const Tensor& dst, const Tensor& src);

}  // namespace loom::lazy
