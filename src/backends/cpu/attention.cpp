// Optimized scaled-dot-product attention (Vaswani et al. 2017) with the
// reference's exact semantics: scores = scale q k^T (scale 0 = 1/sqrt(D)),
// causal mask j > i aligned top left, then the mask (bool: true = attend,
// false = -inf; float: added), softmax over keys, a row with nothing to
// attend gives zeros. Work is split into tasks of kRows query rows of one
// batch item; each task computes its score block with a GEMM, the softmax
// rows in place, and its output block with a second GEMM, so the full
// [T, S] score matrix never exists. Causal tasks skip keys past their last
// row (their weights are exactly 0). k and v may have fewer heads than q
// (grouped-query attention): a group of q heads reads one k/v head in place.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu/convert.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu/vec_math.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"

namespace loom::backends::cpu {
namespace {

constexpr int64_t kRows = 32;  // query rows per task

struct Mask {
  const uint8_t* bools = nullptr;     // bool mask, or
  const float* values = nullptr;      // additive float mask
  std::vector<int64_t> batch_offset;  // per batch item
  int64_t row_stride = 0, col_stride = 0;
};

// Mask strides against the score shape q.shape[:-1] + [S] (0 = broadcast).
Mask plan_mask(const ConstView& mask, const float* values, const Shape& scores, int64_t batch) {
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

// Masks and softmaxes one score row in place; returns false when nothing is
// attended (the row's output must be zeros).
bool softmax_scores(float* s, int64_t n, int64_t i, bool causal, const Mask* mask, int64_t moff) {
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
  float m = ninf;
  for (int64_t j = 0; j < n; ++j) m = m < s[j] ? s[j] : m;  // as std::max: NaN skipped
  if (m == ninf) return false;
  float inv = static_cast<float>(1.0 / vm::exp_shift_sum(s, s, n, m));
  for (int64_t j = 0; j < n; ++j) s[j] *= inv;
  return true;
}

}  // namespace

void cpu_attention(const OpCall& call) {
  const Shape& qs = call.inputs[0].type.shape;
  size_t r = qs.size();
  int64_t t_len = qs[r - 2], d = qs[r - 1];
  int64_t s_len = call.inputs[1].type.shape[r - 2], dv = call.inputs[2].type.shape[r - 1];
  if (call.output.type.numel() == 0) return;
  if (d == 0) return reference::ref_attention(call);  // 0 * inf scores: keep the oracle's rule
  int64_t batch = call.inputs[0].type.numel() / (t_len * d);
  float scale =
      static_cast<float>(call.attrs->scalar != 0 ? call.attrs->scalar : 1.0 / std::sqrt(double(d)));
  bool causal = call.attrs->causal;
  // Grouped-query attention: q batch item b reads k/v item b / group (ops.def).
  int64_t kv_heads = r >= 3 ? call.inputs[1].type.shape[r - 3] : 1;
  int64_t group = r >= 3 && kv_heads > 0 ? std::max<int64_t>(1, qs[r - 3] / kv_heads) : 1;
  F32Input q(call.inputs[0]), k(call.inputs[1]), v(call.inputs[2]);
  F32Output out(call.output);
  bool has_mask = call.inputs.size() == 4;
  std::vector<float> mask_values;
  Mask mask;
  if (has_mask) {
    const ConstView& mv = call.inputs[3];
    if (mv.type.dtype != DType::boolean) mask_values = to_f32(mv);
    Shape scores = qs;
    scores[r - 1] = s_len;
    mask = plan_mask(mv, mask_values.data(), scores, batch);
  }
  int64_t blocks = (t_len + kRows - 1) / kRows;
  int64_t flops_per_task = kRows * std::max<int64_t>(1, s_len) * (d + dv);
  parallel_for(
      batch * blocks, std::max<int64_t>(1, (1 << 17) / flops_per_task),
      [&](int64_t b0, int64_t e0) {
        std::vector<float> scores(kRows * std::max<int64_t>(1, s_len));
        for (int64_t u = b0; u < e0; ++u) {
          int64_t b = u / blocks, i0 = (u % blocks) * kRows, rows = std::min(kRows, t_len - i0);
          int64_t keys = causal ? std::min(s_len, i0 + rows) : s_len;
          float* ob = out.data() + (b * t_len + i0) * dv;
          bool attended[kRows];
          if (keys > 0) {
            const float* qb = q.data() + (b * t_len + i0) * d;
            sgemm(false, true, rows, keys, d, scale, qb, d, k.data() + (b / group) * s_len * d, d,
                  0.0f, scores.data(), keys);
          }
          for (int64_t i = 0; i < rows; ++i) {
            int64_t moff = has_mask ? mask.batch_offset[b] + (i0 + i) * mask.row_stride : 0;
            attended[i] = keys > 0 && softmax_scores(scores.data() + i * keys, keys, i0 + i, causal,
                                                     has_mask ? &mask : nullptr, moff);
          }
          if (keys > 0)
            sgemm(false, false, rows, dv, keys, 1.0f, scores.data(), keys,
                  v.data() + (b / group) * s_len * dv, dv, 0.0f, ob, dv);
          for (int64_t i = 0; i < rows; ++i)
            if (!attended[i]) std::fill(ob + i * dv, ob + (i + 1) * dv, 0.0f);
        }
      });
  out.finish();
}

}  // namespace loom::backends::cpu
