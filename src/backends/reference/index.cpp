// Reference index kernels: embedding, index_select, index_add, index_copy,
// gather, scatter_add, one_hot — torch semantics (torch.gather /
// Tensor.scatter_add_ / index_select / index_add_ / index_copy_); every
// index is bounds-checked.
#include "backends/reference/reference.h"

namespace loom::backends::reference {

void ref_embedding(const OpCall& c) {
  const ConstView& ids = c.inputs[1];
  int64_t vocab = c.inputs[0].type.shape[0], dim = c.inputs[0].type.shape[1];
  std::vector<double> w = load(c.inputs[0]), r(c.output.type.numel());
  for (int64_t t = 0; t < ids.type.numel(); ++t) {
    int64_t row = checked_index(ids, t, vocab, "embedding");
    for (int64_t j = 0; j < dim; ++j) r[t * dim + j] = w[row * dim + j];
  }
  store(c.output, r);
}

void ref_index_select(const OpCall& c) {
  AxisSplit in = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit out = split_at(c.output.type.shape, c.attrs->axis);
  std::vector<double> x = load(c.inputs[0]), r(c.output.type.numel());
  for (int64_t s = 0; s < out.size; ++s) {
    int64_t src = checked_index(c.inputs[1], s, in.size, "index_select");
    for (int64_t o = 0; o < out.outer; ++o)
      for (int64_t i = 0; i < out.inner; ++i)
        r[(o * out.size + s) * out.inner + i] = x[(o * in.size + src) * in.inner + i];
  }
  store(c.output, r);
}

void ref_index_add(const OpCall& c) {
  AxisSplit base = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit src = split_at(c.inputs[2].type.shape, c.attrs->axis);
  std::vector<double> r = load(c.inputs[0]), s = load(c.inputs[2]);
  for (int64_t k = 0; k < src.size; ++k) {
    int64_t dst = checked_index(c.inputs[1], k, base.size, "index_add");
    for (int64_t o = 0; o < src.outer; ++o)
      for (int64_t i = 0; i < src.inner; ++i)
        r[(o * base.size + dst) * base.inner + i] += s[(o * src.size + k) * src.inner + i];
  }
  store(c.output, r);
}

// out = self, then slice index[k] along axis = source's slice k, for k in
// order (a repeated index: the last slice wins).
void ref_index_copy(const OpCall& c) {
  AxisSplit self = split_at(c.inputs[0].type.shape, c.attrs->axis);
  AxisSplit src = split_at(c.inputs[2].type.shape, c.attrs->axis);
  std::vector<double> r = load(c.inputs[0]), s = load(c.inputs[2]);
  for (int64_t k = 0; k < src.size; ++k) {
    int64_t dst = checked_index(c.inputs[1], k, self.size, "index_copy");
    for (int64_t o = 0; o < src.outer; ++o)
      for (int64_t i = 0; i < src.inner; ++i)
        r[(o * self.size + dst) * self.inner + i] = s[(o * src.size + k) * src.inner + i];
  }
  store(c.output, r);
}

namespace {
// Flat index into `shape` of `coords` with coordinate `axis` replaced by `v`.
int64_t flat_with(const Shape& shape, std::vector<int64_t> coords, int64_t axis, int64_t v) {
  coords[axis] = v;
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + coords[d];
  return f;
}
std::vector<int64_t> coords_of(const Shape& shape, int64_t flat) {
  std::vector<int64_t> coords(shape.size());
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    coords[d] = flat % shape[d];
    flat /= shape[d];
  }
  return coords;
}
}  // namespace

void ref_gather(const OpCall& c) {
  const Shape& xs = c.inputs[0].type.shape;
  const Shape& is = c.inputs[1].type.shape;
  std::vector<double> x = load(c.inputs[0]), r(c.output.type.numel());
  for (int64_t o = 0; o < static_cast<int64_t>(r.size()); ++o) {
    int64_t v = checked_index(c.inputs[1], o, xs[c.attrs->axis], "gather");
    r[o] = x[flat_with(xs, coords_of(is, o), c.attrs->axis, v)];
  }
  store(c.output, r);
}

void ref_scatter_add(const OpCall& c) {
  const Shape& bs = c.inputs[0].type.shape;
  const Shape& is = c.inputs[1].type.shape;
  std::vector<double> r = load(c.inputs[0]), s = load(c.inputs[2]);
  for (int64_t k = 0; k < c.inputs[1].type.numel(); ++k) {
    int64_t v = checked_index(c.inputs[1], k, bs[c.attrs->axis], "scatter_add");
    r[flat_with(bs, coords_of(is, k), c.attrs->axis, v)] += s[k];
  }
  store(c.output, r);
}

void ref_one_hot(const OpCall& c) {
  int64_t classes = c.attrs->num_classes;
  std::vector<double> r(c.output.type.numel(), 0.0);
  for (int64_t t = 0; t < c.inputs[0].type.numel(); ++t)
    r[t * classes + checked_index(c.inputs[0], t, classes, "one_hot")] = 1.0;
  store(c.output, r);
}

}  // namespace loom::backends::reference
