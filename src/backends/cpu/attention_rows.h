// Row-level pieces shared by the cpu attention forward (attention.cpp) and
// backward (attention_backward.cpp) kernels, so both see the same
// probabilities bit for bit: the operand layout (ops.def, GQA groups), the
// mask planned as strides against the score shape, the masked softmax of one
// score row in place, and dropout on one probability row from the
// generator operand. Assumes contiguous row-major operands; scores of batch
// item b, query row i, key j are element ((b * T) + i) * S + j of the
// [..., T, S] probabilities, which is also the Philox stream index of its
// dropout decision (as the dropout op on those probabilities would draw it).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "backends/cpu/convert.h"
#include "backends/cpu/philox_uniforms.h"
#include "backends/cpu/vec_math.h"
#include "backends/kernel_backend.h"
#include "ops/attrs.h"

namespace loom::backends::cpu::attention_rows {

/// Query rows per block (one task's score block is [kRows, S]).
inline constexpr int64_t kRows = 32;

/// Sizes of one attention call: q [batch, T, D] (batch = leading dims
/// flattened), k [batch / group, S, D], v [batch / group, S, Dv].
struct Dims {
  int64_t batch = 0, t_len = 0, s_len = 0, d = 0, dv = 0, group = 1;
  float scale = 1.0f;
  bool causal = false;
  double p = 0.0;  // dropout probability
  uint64_t seed = 0, offset = 0;
};

inline Dims dims_of(const OpCall& call) {
  Dims m;
  const Shape& qs = call.inputs[0].type.shape;
  size_t r = qs.size();
  m.t_len = qs[r - 2], m.d = qs[r - 1];
  m.s_len = call.inputs[1].type.shape[r - 2], m.dv = call.inputs[2].type.shape[r - 1];
  m.batch = m.t_len * m.d == 0 ? 0 : call.inputs[0].type.numel() / (m.t_len * m.d);
  // Grouped-query attention: q batch item b reads k/v item b / group (ops.def).
  int64_t kv_heads = r >= 3 ? call.inputs[1].type.shape[r - 3] : 1;
  m.group = r >= 3 && kv_heads > 0 ? std::max<int64_t>(1, qs[r - 3] / kv_heads) : 1;
  double scale = call.attrs->scale != 0 ? call.attrs->scale : 1.0 / std::sqrt(double(m.d));
  m.scale = static_cast<float>(scale);
  m.causal = call.attrs->causal;
  m.p = call.attrs->dropout_p;
  int gen = ops::attention_generator_operand(call.inputs.size(), *call.attrs);
  if (gen >= 0) {
    const int64_t* g = call.inputs[gen].as<int64_t>();
    m.seed = static_cast<uint64_t>(g[0]), m.offset = static_cast<uint64_t>(g[1]);
  }
  return m;
}

struct Mask {
  const uint8_t* bools = nullptr;     // bool mask, or
  const float* values = nullptr;      // additive float mask
  std::vector<int64_t> batch_offset;  // per batch item
  int64_t row_stride = 0, col_stride = 0;
};

/// Mask strides against the score shape q.shape[:-1] + [S] (0 = broadcast);
/// `values` is the mask converted to f32 when it is not bool.
inline Mask plan_mask(const ConstView& mask, const float* values, const Shape& scores,
                      int64_t batch) {
  Mask m;
  if (mask.type.dtype == DType::boolean)
    m.bools = mask.as<uint8_t>();
  else
    m.values = values;
  size_t r = scores.size(), off = r - mask.type.shape.size();
  std::vector<int64_t> cs = contiguous_strides(mask.type.shape), st(r, 0);
  for (size_t d = 0; d < mask.type.shape.size(); ++d)
    st[off + d] = mask.type.shape[d] == 1 ? 0 : cs[d];
  m.row_stride = st[r - 2];
  m.col_stride = st[r - 1];
  m.batch_offset.resize(batch);
  for (int64_t b = 0; b < batch; ++b) {
    int64_t rest = b, o = 0;
    for (int64_t d = static_cast<int64_t>(r) - 3; d >= 0; --d) {
      o += (rest % scores[d]) * st[d];
      rest /= scores[d];
    }
    m.batch_offset[b] = o;
  }
  return m;
}

/// The largest of s[0, n) that is not NaN (-inf when none), as a running
/// std::max would give it, over 16 interleaved lanes so that it vectorizes
/// (one running max is a chain of dependent maxss: most of BERT's attention
/// forward). Lanes can only differ from the running max on the sign of a
/// zero maximum, which exp(s - m) does not see.
inline float row_max_skipping_nan(const float* s, int64_t n) {
  constexpr int64_t kLanes = 16;
  float part[kLanes];
  std::fill(part, part + kLanes, -std::numeric_limits<float>::infinity());
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) part[l] = part[l] < s[j + l] ? s[j + l] : part[l];
  for (int64_t l = 0; j < n; ++j, ++l) part[l] = part[l] < s[j] ? s[j] : part[l];
  float m = part[0];
  for (int64_t l = 1; l < kLanes; ++l) m = m < part[l] ? part[l] : m;
  return m;
}

/// Masks and softmaxes one score row s[0, n) of query row i in place
/// (causal: keys j > i are -inf; bool mask false = -inf; float mask added;
/// mask row at `moff`); returns false when nothing is attended (the row's
/// probabilities and output are then zeros; s is left unspecified).
inline bool softmax_scores(float* s, int64_t n, int64_t i, bool causal, const Mask* mask,
                           int64_t moff) {
  const float ninf = -std::numeric_limits<float>::infinity();
  if (causal)
    for (int64_t j = i + 1; j < n; ++j) s[j] = ninf;
  if (mask && mask->bools) {
    const uint8_t* mr = mask->bools + moff;
    for (int64_t j = 0; j < n; ++j) s[j] = mr[j * mask->col_stride] ? s[j] : ninf;
  } else if (mask) {
    const float* mr = mask->values + moff;
    for (int64_t j = 0; j < n; ++j) s[j] += mr[j * mask->col_stride];
  }
  float m = row_max_skipping_nan(s, n);
  if (m == ninf) return false;
  float inv = static_cast<float>(1.0 / vm::exp_shift_sum(s, s, n, m));
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return true;
}

/// Inverted dropout of row x[0, n) whose element j has Philox stream index
/// first + j: x[j] / (1 - p) in double where uniform >= p, else 0 — the
/// dropout op's arithmetic (random.cpp). `u` is scratch of n floats.
inline void dropout_row(const Dims& m, uint64_t first, float* x, int64_t n, float* u) {
  philox_uniforms(m.seed, m.offset, first, n, u);
  dropout_apply(u, m.p, x, x, n);
}

// A run of n elements at `offset` of an operand as f32: the operand's own
// memory when it is f32, else converted into `buf`.
inline const float* f32_run(const ConstView& x, int64_t offset, int64_t n,
                            std::vector<float>& buf) {
  if (x.type.dtype == DType::f32) return x.as<float>() + offset;
  buf.resize(n);
  load_f32(x.data, x.type.dtype, offset, n, buf.data());
  return buf.data();
}

// Where a gradient run of n elements at `offset` of the packed output is
// accumulated: the output itself when f32, else `buf` (stored by put_run).
inline float* out_run(const MutView& out, int64_t offset, int64_t n, std::vector<float>& buf) {
  if (out.type.dtype == DType::f32) return out.as<float>() + offset;
  buf.resize(n);
  return buf.data();
}
inline void put_run(const MutView& out, int64_t offset, int64_t n, const float* run) {
  if (out.type.dtype != DType::f32) store_f32(run, n, out.data, out.type.dtype, offset);
}

}  // namespace loom::backends::cpu::attention_rows
