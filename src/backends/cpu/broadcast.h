// BroadcastPlan: walks a contiguous output and up to three operands that
// broadcast to it (NumPy rules) as a sequence of segments. Size-1 output dims
// are dropped and adjacent dims that every operand walks the same way are
// merged, so a same-shape op is one segment, a row broadcast ([N,C] + [C]) is
// one segment per row with the bias contiguous, and a column broadcast
// ([N,C] * [N,1]) is one segment per row with that operand fixed. Within a
// segment every operand's stride is 0 (fixed element) or 1 (contiguous).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "loom/shape.h"

namespace loom::backends::cpu {

class BroadcastPlan {
 public:
  static constexpr int kMaxOperands = 3;

  /// `operands` shapes each broadcast to `out` (checked by shape inference).
  BroadcastPlan(const Shape& out, const std::vector<Shape>& operands);

  /// Stride (0 or 1) of operand k within every segment.
  int64_t inner_stride(int k) const { return strides_[k].back(); }

  /// Calls f(out_index, offsets, len) for consecutive segments covering output
  /// elements [begin, end); offsets[k] is operand k's element offset of the
  /// segment's first element. Segments are at most `max_len` long.
  template <typename F>
  void for_each_segment(int64_t begin, int64_t end, int64_t max_len, F&& f) const {
    int nd = static_cast<int>(sizes_.size());
    std::vector<int64_t> idx(nd);
    std::array<int64_t, kMaxOperands> off{};
    int64_t rest = begin;
    for (int d = nd - 1; d >= 0; --d) {
      idx[d] = rest % sizes_[d];
      rest /= sizes_[d];
      for (int k = 0; k < num_; ++k) off[k] += idx[d] * strides_[k][d];
    }
    int64_t inner = sizes_[nd - 1];
    for (int64_t pos = begin; pos < end;) {
      int64_t len = std::min({inner - idx[nd - 1], end - pos, max_len});
      f(pos, off, len);
      pos += len;
      idx[nd - 1] += len;
      for (int k = 0; k < num_; ++k) off[k] += len * strides_[k][nd - 1];
      if (idx[nd - 1] < inner) continue;
      for (int k = 0; k < num_; ++k) off[k] -= inner * strides_[k][nd - 1];
      idx[nd - 1] = 0;
      for (int d = nd - 2; d >= 0; --d) {
        ++idx[d];
        for (int k = 0; k < num_; ++k) off[k] += strides_[k][d];
        if (idx[d] < sizes_[d]) break;
        for (int k = 0; k < num_; ++k) off[k] -= sizes_[d] * strides_[k][d];
        idx[d] = 0;
      }
    }
  }

 private:
  int num_ = 0;
  std::vector<int64_t> sizes_;                              // merged output dims
  std::array<std::vector<int64_t>, kMaxOperands> strides_;  // per operand, 0 = broadcast
};

inline BroadcastPlan::BroadcastPlan(const Shape& out, const std::vector<Shape>& operands)
    : num_(static_cast<int>(operands.size())) {
  std::array<std::vector<int64_t>, kMaxOperands> full;
  for (int k = 0; k < num_; ++k) {
    const Shape& in = operands[k];
    std::vector<int64_t> cs = contiguous_strides(in);
    size_t off = out.size() - in.size();
    full[k].assign(out.size(), 0);
    for (size_t i = 0; i < in.size(); ++i) full[k][off + i] = in[i] == 1 ? 0 : cs[i];
  }
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool merge = !sizes_.empty();
    for (int k = 0; k < num_ && merge; ++k) merge = strides_[k].back() == full[k][d] * out[d];
    if (merge) {
      sizes_.back() *= out[d];
      for (int k = 0; k < num_; ++k) strides_[k].back() = full[k][d];
    } else {
      sizes_.push_back(out[d]);
      for (int k = 0; k < num_; ++k) strides_[k].push_back(full[k][d]);
    }
  }
  if (sizes_.empty()) {
    sizes_.push_back(1);
    for (int k = 0; k < num_; ++k) strides_[k].push_back(0);
  }
}

}  // namespace loom::backends::cpu
