// StepScalars: the rank-0 operands an optimizer step needs for numbers that
// change between steps (learning rate, bias corrections, clip and momentum
// factors). Assumes the lazy device turns a C++ number passed to an op into
// device data except 0 and 1, which it traces as constants; a learning rate
// that passes through 0 (warm-up) or 1 would then change the graph and
// recompile. These operands are always device data (graph inputs), whatever
// their value.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>

#include "loom/tensor.h"

namespace loom::optim {

class StepScalars {
 public:
  /// A rank-0 f32 tensor holding `value` on `device`, always device data.
  /// Requests with the same role, value and device share one tensor (one
  /// graph input); different roles never share, so two numbers that happen
  /// to be equal this step do not merge and split again later (which would
  /// change the graph). Use one StepScalars per parameter group and step, so
  /// a shared input means the same role for parameters of one group whose
  /// values are equal for a structural reason (same step count).
  Tensor get(std::string_view role, double value, const Device& device) {
    Key key{std::string(role), std::bit_cast<uint64_t>(value), device.str()};
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    Tensor t = scalar_tensor(value, DType::f32, device);
    cache_.emplace(std::move(key), t);
    return t;
  }

 private:
  using Key = std::tuple<std::string, uint64_t, std::string>;
  std::map<Key, Tensor> cache_;
};

}  // namespace loom::optim
