// Helpers shared by the reference kernels: every kernel loads its operands
// into double vectors, computes with plain loops, and stores the result
// converted to the output dtype. Obviously right, not fast: the oracle.
// (int64 values beyond 2^53 lose precision here; random ops read the int64
// generator state directly.)
#pragma once

#include <vector>

#include "backends/kernel_backend.h"

namespace loom::backends {

/// The plain-loop oracle (`reference`, `cpu:reference`): every op, computed
/// in double precision. Registered in backends/registry.cpp.
const KernelBackend& reference_backend();

}  // namespace loom::backends

namespace loom::backends::reference {

std::vector<double> load(const ConstView& v);
void store(const MutView& v, const std::vector<double>& values);

/// Maps flat indices of `out` to flat indices of an operand of shape `in`
/// that broadcasts to `out` (NumPy rules).
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& in, const Shape& out);
  int64_t operator()(int64_t out_index) const;

 private:
  Shape out_;
  std::vector<int64_t> in_strides_;  // 0 on broadcast dims, aligned to out_
};

/// Splits `shape` around `axis` into (outer, size, inner) for row-major loops.
struct AxisSplit {
  int64_t outer = 1, size = 1, inner = 1;
};
AxisSplit split_at(const Shape& shape, int64_t axis);

/// Reads an index operand element as int64 and checks 0 <= v < bound, else
/// throws loom::Error "[op] index v is out of range for size bound".
int64_t checked_index(const ConstView& index, int64_t i, int64_t bound, const char* op);

// Kernels, one per op kind (defined across the family files).
#define LOOM_OP(name, arity, traits) void ref_##name(const OpCall& call);
#include "ops/ops.def"
#undef LOOM_OP

}  // namespace loom::backends::reference
