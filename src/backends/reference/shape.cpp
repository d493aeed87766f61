// Reference data-movement kernels: reshape, permute, expand, slice, concat.
// Buffers are contiguous, so each builds its output element by element.
#include "backends/reference/reference.h"

namespace loom::backends::reference {

void ref_reshape(const OpCall& c) { store(c.output, load(c.inputs[0])); }

void ref_permute(const OpCall& c) {
  const Shape& in = c.inputs[0].type.shape;
  const Shape& out = c.output.type.shape;
  std::vector<double> x = load(c.inputs[0]), r(c.output.type.numel());
  std::vector<int64_t> in_strides = contiguous_strides(in);
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) {
    int64_t rest = o, src = 0;
    for (int64_t d = static_cast<int64_t>(out.size()) - 1; d >= 0; --d) {
      src += (rest % out[d]) * in_strides[c.attrs->perm[d]];
      rest /= out[d];
    }
    r[o] = x[src];
  }
  store(c.output, r);
}

void ref_expand(const OpCall& c) {
  std::vector<double> x = load(c.inputs[0]), r(c.output.type.numel());
  BroadcastIndex idx(c.inputs[0].type.shape, c.output.type.shape);
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) r[o] = x[idx(o)];
  store(c.output, r);
}

void ref_slice(const OpCall& c) {
  const auto& a = *c.attrs;
  AxisSplit in = split_at(c.inputs[0].type.shape, a.axis);
  AxisSplit out = split_at(c.output.type.shape, a.axis);
  std::vector<double> x = load(c.inputs[0]), r(c.output.type.numel());
  for (int64_t o = 0; o < out.outer; ++o)
    for (int64_t s = 0; s < out.size; ++s)
      for (int64_t i = 0; i < out.inner; ++i)
        r[(o * out.size + s) * out.inner + i] =
            x[(o * in.size + a.start + s * a.step) * in.inner + i];
  store(c.output, r);
}

void ref_concat(const OpCall& c) {
  AxisSplit out = split_at(c.output.type.shape, c.attrs->axis);
  std::vector<double> r(c.output.type.numel());
  int64_t base = 0;
  for (const ConstView& input : c.inputs) {
    AxisSplit in = split_at(input.type.shape, c.attrs->axis);
    std::vector<double> x = load(input);
    for (int64_t o = 0; o < in.outer; ++o)
      for (int64_t s = 0; s < in.size; ++s)
        for (int64_t i = 0; i < in.inner; ++i)
          r[(o * out.size + base + s) * out.inner + i] = x[(o * in.size + s) * in.inner + i];
    base += in.size;
  }
  store(c.output, r);
}

}  // namespace loom::backends::reference
