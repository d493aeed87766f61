// Shapes: row-major dimension lists with NumPy broadcasting rules.
// A rank-0 shape [] is a scalar with one element; a dimension may be 0.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

using Shape = std::vector<int64_t>;

/// Number of elements (product of dims; 1 for []).
int64_t numel(const Shape& shape);
/// "[2,3]" — the form used in every error message.
std::string to_string(const Shape& shape);
/// Row-major strides in elements: [2,3,4] -> [12,4,1].
std::vector<int64_t> contiguous_strides(const Shape& shape);
/// NumPy broadcast of two shapes; throws loom::Error
/// "[op] shapes [2,3] and [4] cannot be broadcast" naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);
/// Maps axis in [-rank, rank) to [0, rank); throws loom::Error
/// "[op] axis 3 is out of range for rank 2".
int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op);

}  // namespace loom
