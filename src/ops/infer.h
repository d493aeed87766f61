// Shape and dtype inference for every op kind: the single place that decides
// an op's output type and rejects bad operands with a loom::Error naming the op.
#pragma once

#include <vector>

#include "ops/attrs.h"
#include "ops/op_kind.h"

namespace loom::ops {

/// Output type of `op` applied to operands of types `inputs` with `attrs`.
/// Throws loom::Error "[op] ..." for a wrong operand count, shapes that do not
/// match or broadcast, an axis out of range, or an unsupported dtype.
/// Assumes frontend-normalized attributes (reshape/expand shapes without -1,
/// slice bounds clamped, axes in [0, rank)) but re-checks them.
TensorType infer_type(OpKind op, const std::vector<TensorType>& inputs, const Attrs& attrs);

/// Reduction output shape: `shape` with `axes` (empty = all) removed, or kept
/// as 1 when keepdim.
Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim);

}  // namespace loom::ops
