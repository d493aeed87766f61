// Attrs: the attributes of one op node, one typed field per meaning, generated
// from attrs.def (which ops read which field: the top of ops.def). TensorType:
// shape + dtype of one value. Both are plain values: cheap to copy,
// comparable, hashable (into a graph hash) and printable (IR text).
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

/// A list of axes or a permutation (same type as Shape, another meaning).
using Ints = std::vector<int64_t>;

/// One member per LOOM_ATTR line of attrs.def, with its default.
struct Attrs {
#define LOOM_ATTR(type, name, default_value) type name = default_value;
#include "ops/attrs.def"
#undef LOOM_ATTR
  bool operator==(const Attrs&) const = default;
};

/// Whether a field holds its attrs.def default. Doubles compare by bits, so
/// -0.0 is not the default 0.0 (it prints, hashes and parses back as -0).
bool is_default(double value, double default_value);
template <typename T>
bool is_default(const T& value, const T& default_value) {
  return value == default_value;
}

/// Calls f(name, value, default_value) for every field, in attrs.def order:
/// the one loop behind printing, parsing and hashing.
template <typename A, typename F>
void for_each_attr(A& attrs, F&& f) {
  static const Attrs defaults;
#define LOOM_ATTR(type, name, default_value) f(#name, attrs.name, defaults.name);
#include "ops/attrs.def"
#undef LOOM_ATTR
}

/// Non-default fields as "axis=1 keepdim=true" (empty for defaults).
std::string to_string(const Attrs& attrs);

/// Operand layout of attention (q, k, v[, mask][, generator]) and
/// attention_backward (q, k, v, grad_out[, mask][, generator]), ops.def:
/// `fixed` is 3 or 4 (the leading tensors), the generator is last exactly
/// when attrs.dropout_p is > 0. Index of the mask operand, or -1 without one.
inline int attention_mask_operand(size_t operands, int fixed, const Attrs& a) {
  size_t with_mask = static_cast<size_t>(fixed) + 1 + (a.dropout_p > 0 ? 1 : 0);
  return operands == with_mask ? fixed : -1;
}
/// Index of the generator operand, or -1 when attrs.dropout_p is 0.
inline int attention_generator_operand(size_t operands, const Attrs& a) {
  return a.dropout_p > 0 ? static_cast<int>(operands) - 1 : -1;
}

}  // namespace loom::ops
