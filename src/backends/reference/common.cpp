// Load/store and index helpers of the reference backend, and its kernel table.
#include <cstring>

#include "backends/reference/reference.h"
#include "loom/error.h"

namespace loom::backends::reference {

std::vector<double> load(const ConstView& v) {
  int64_t n = v.type.numel();
  std::vector<double> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = load_as_double(v.data, v.type.dtype, i);
  return out;
}

void store(const MutView& v, const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i) store_from_double(v.data, v.type.dtype, i, values[i]);
}

BroadcastIndex::BroadcastIndex(const Shape& in, const Shape& out) : out_(out) {
  in_strides_.assign(out.size(), 0);
  std::vector<int64_t> strides = contiguous_strides(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) in_strides_[off + i] = in[i] == 1 ? 0 : strides[i];
}

int64_t BroadcastIndex::operator()(int64_t out_index) const {
  int64_t in_index = 0;
  for (int64_t d = static_cast<int64_t>(out_.size()) - 1; d >= 0; --d) {
    int64_t coord = out_index % out_[d];
    out_index /= out_[d];
    in_index += coord * in_strides_[d];
  }
  return in_index;
}

AxisSplit split_at(const Shape& shape, int64_t axis) {
  AxisSplit s;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); ++d) {
    if (d < axis)
      s.outer *= shape[d];
    else if (d == axis)
      s.size = shape[d];
    else
      s.inner *= shape[d];
  }
  return s;
}

int64_t checked_index(const ConstView& index, int64_t i, int64_t bound, const char* op) {
  int64_t v = index.type.dtype == DType::i64 ? index.as<int64_t>()[i] : index.as<int32_t>()[i];
  LOOM_CHECK(v >= 0 && v < bound, "[", op, "] index ", v, " is out of range for size ", bound);
  return v;
}

namespace {
class ReferenceBackend final : public KernelBackend {
 public:
  std::string_view name() const override { return "reference"; }
  Kernel kernel(ops::OpKind op) const override {
    static constexpr Kernel kTable[] = {
#define LOOM_OP(name, arity, traits) &ref_##name,
#include "ops/ops.def"
#undef LOOM_OP
    };
    return kTable[static_cast<int>(op)];
  }
  Stream& stream() const override { return stream_; }

 private:
  mutable InlineStream stream_;
};
}  // namespace

}  // namespace loom::backends::reference

namespace loom::backends {
const KernelBackend& reference_backend() {
  static const reference::ReferenceBackend backend;
  return backend;
}
}  // namespace loom::backends
