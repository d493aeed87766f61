// Shape helpers: element counts, printing, strides, NumPy broadcasting.
#include "loom/shape.h"

#include <algorithm>

#include "loom/error.h"

namespace loom {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string to_string(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    LOOM_CHECK(da == db || da == 1 || db == 1, "[", op, "] shapes ", to_string(a), " and ",
               to_string(b), " cannot be broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, std::string_view op) {
  int64_t r = std::max<int64_t>(rank, 1);
  LOOM_CHECK(axis >= -r && axis < r, "[", op, "] axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + r : axis;
}

}  // namespace loom
