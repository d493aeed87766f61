// Attrs: the attributes of one op node (which fields an op reads is listed at
// the top of ops.def). TensorType: shape + dtype of one value. Both are plain
// values: comparable, hashable (into a graph hash) and printable (IR text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/dtype.h"
#include "loom/shape.h"

namespace loom::ops {

using loom::to_string;

struct TensorType {
  Shape shape;
  DType dtype = DType::f32;
  int64_t numel() const { return loom::numel(shape); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  bool operator==(const TensorType&) const = default;
};

/// "f32[2,3]"
std::string to_string(const TensorType& type);

struct Attrs {
  Shape shape;                // reshape / expand / full / arange / uniform / normal
  std::vector<int64_t> axes;  // reduction axes (empty = all) or permute's perm
  int64_t axis = 0;           // softmax, concat, slice, gather, index ops, argmax
  int64_t start = 0;          // slice
  int64_t end = 0;            // slice (exclusive, already clamped)
  int64_t step = 1;           // slice
  int64_t index = 0;          // ignore_index, num_classes, correction, padding_idx
  double scalar = 0.0;        // exponent, fill value, p, eps, smoothing, scale, start
  double scalar2 = 0.0;       // arange step
  DType dtype = DType::f32;   // cast / full / arange / random output dtype
  bool keepdim = false;
  bool trans_a = false;
  bool trans_b = false;
  bool causal = false;
  // matmul layouts (compiler/passes/matmul_layout.cpp; empty = identity): the
  // operand read is permute(A, perm_a) / permute(B, perm_b), and the result is
  // stored as permute(product, perm_out). Never set by tracing.
  std::vector<int64_t> perm_a, perm_b, perm_out;
  bool operator==(const Attrs&) const = default;
};

/// Non-default fields as "axis=1 keepdim=true" (empty for defaults).
std::string to_string(const Attrs& attrs);

/// Operand layout of attention (q, k, v[, mask][, generator]) and
/// attention_backward (q, k, v, grad_out[, mask][, generator]), ops.def:
/// `fixed` is 3 or 4 (the leading tensors), the generator is last exactly
/// when the dropout probability attrs.scalar2 is > 0. Index of the mask
/// operand, or -1 without one.
inline int attention_mask_operand(size_t operands, int fixed, const Attrs& a) {
  size_t with_mask = static_cast<size_t>(fixed) + 1 + (a.scalar2 > 0 ? 1 : 0);
  return operands == with_mask ? fixed : -1;
}
/// Index of the generator operand, or -1 when attrs.scalar2 (p) is 0.
inline int attention_generator_operand(size_t operands, const Attrs& a) {
  return a.scalar2 > 0 ? static_cast<int>(operands) - 1 : -1;
}

}  // namespace loom::ops
