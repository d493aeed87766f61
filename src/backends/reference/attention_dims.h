// The sizes both reference attention kernels (nn.cpp ref_attention,
// attention_backward.cpp) read off an attention OpCall: q [..., T, D],
// k [..., S, D], v [..., S, Dv], batch items of q, the grouped-query group
// (consecutive q heads sharing one k/v head: q item b reads k/v item
// b / group), the softmax scale (attrs.scale, 0 = 1/sqrt(D)), the mask
// operand (-1: none), the dropout probability (attrs.dropout_p) and its
// generator's (seed, offset). Assumes shapes already checked by ops::infer.
#pragma once

#include <algorithm>
#include <cmath>

#include "backends/kernel_backend.h"
#include "ops/attrs.h"

namespace loom::backends::reference {

struct AttentionDims {
  int64_t t_len, d, s_len, dv, batch, group;
  double scale;
  int mask_at;  // operand index of the mask, -1 without one
  double drop;  // dropout probability (0: none)
  uint64_t seed, offset;
};

/// `fixed`: the operands before the optional mask (3 for attention: q, k, v;
/// 4 for attention_backward: q, k, v, grad_out).
inline AttentionDims attention_dims(const OpCall& c, int fixed) {
  const Shape& qs = c.inputs[0].type.shape;
  const Shape& ks = c.inputs[1].type.shape;
  size_t r = qs.size();
  AttentionDims a{};
  a.t_len = qs[r - 2];
  a.d = qs[r - 1];
  a.s_len = ks[r - 2];
  a.dv = c.inputs[2].type.shape[r - 1];
  a.batch = a.t_len * a.d == 0 ? 0 : c.inputs[0].type.numel() / (a.t_len * a.d);
  a.group = std::max<int64_t>(r >= 3 && ks[r - 3] > 0 ? qs[r - 3] / ks[r - 3] : 1, 1);
  a.scale = c.attrs->scale != 0 ? c.attrs->scale : 1.0 / std::sqrt(double(a.d));
  a.mask_at = ops::attention_mask_operand(c.inputs.size(), fixed, *c.attrs);
  a.drop = c.attrs->dropout_p;
  int gen = ops::attention_generator_operand(c.inputs.size(), *c.attrs);
  a.seed = gen >= 0 ? uint64_t(c.inputs[gen].as<int64_t>()[0]) : 0;
  a.offset = gen >= 0 ? uint64_t(c.inputs[gen].as<int64_t>()[1]) : 0;
  return a;
}

}  // namespace loom::backends::reference
