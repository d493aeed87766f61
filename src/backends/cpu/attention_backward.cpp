// Optimized attention_backward: dq, dk, dv of the attention op (formulas in
// backends/reference/attention_backward.cpp) without the [T, S]
// probabilities ever stored between forward and backward. The probabilities
// are recomputed block by block — kRows query rows at a time, each block's
// scores by one GEMM and the same masked softmax and dropout draws as the
// forward (attention_rows.h) — and consumed at once by four GEMMs:
//   dV += Z^T dO,  dZ = dO V^T,  dQ = scale dS K,  dK += scale dS^T Q
// (FlashAttention's backward, Dao et al. 2022, Alg. 4, with
// FlashAttention-2's (Dao 2023) choice of owning dK/dV per task: here one
// task owns one k/v item and walks every q head of its group and every
// query block, so no two tasks write the same dK/dV rows and nothing is
// atomic). Causal blocks stop at their last row's key. delta = sum_j P dP
// per row comes from the recomputed block (no saved output or logsumexp:
// the block holds whole key rows, so its softmax statistics cost one pass).
// Operands of any float dtype are computed in f32; the result is rounded to
// the output dtype once.
#include <algorithm>
#include <cmath>

#include "backends/cpu/attention_rows.h"
#include "backends/cpu/convert.h"
#include "backends/cpu/gemm.h"
#include "backends/cpu/kernels.h"
#include "backends/reference/reference.h"
#include "core/parallel.h"
#include "loom/error.h"

namespace loom::backends::cpu {
namespace {

using namespace attention_rows;

// Pointers of one call: f32 operands and the packed f32 result.
struct BackwardArgs {
  const Dims* m;
  const float *q, *k, *v, *go;
  float *dq, *dk, *dv;
  const Mask* mask;  // null: none
};

// Scratch of one task: [kRows, S] blocks.
struct BackwardScratch {
  std::vector<float> p, z, dz, u;
  explicit BackwardScratch(int64_t s) : p(kRows * s), z(kRows * s), dz(kRows * s), u(kRows * s) {}
};

// One block of `rows` query rows from i0 of q item b (k/v item kb).
void backward_block(const BackwardArgs& a, BackwardScratch& w, int64_t b, int64_t i0,
                    int64_t rows) {
  const Dims& m = *a.m;
  int64_t s_len = m.s_len, d = m.d, dv = m.dv, kb = b / m.group;
  int64_t keys = m.causal ? std::min(s_len, i0 + rows) : s_len;
  const float* qb = a.q + (b * m.t_len + i0) * d;
  const float* gob = a.go + (b * m.t_len + i0) * dv;
  const float* kk = a.k + kb * s_len * d;
  const float* vv = a.v + kb * s_len * dv;
  float* dqb = a.dq + (b * m.t_len + i0) * d;
  bool ok = sgemm(false, true, rows, keys, d, m.scale, qb, d, kk, d, 0.0f, w.p.data(), keys);
  for (int64_t i = 0; i < rows; ++i) {
    float* pr = w.p.data() + i * keys;
    int64_t moff = a.mask ? a.mask->batch_offset[b] + (i0 + i) * a.mask->row_stride : 0;
    if (!softmax_scores(pr, keys, i0 + i, m.causal, a.mask, moff)) std::fill(pr, pr + keys, 0.0f);
  }
  const float* z = w.p.data();  // the weights that multiplied V
  if (m.p > 0) {
    for (int64_t i = 0; i < rows; ++i)
      philox_uniforms(m.seed, m.offset, uint64_t(b * m.t_len + i0 + i) * uint64_t(s_len), keys,
                      w.u.data() + i * keys);
    double keep_scale = 1.0 - m.p;
    for (int64_t x = 0; x < rows * keys; ++x)
      w.z[x] = w.u[x] >= m.p ? static_cast<float>(double(w.p[x]) / keep_scale) : 0.0f;
    z = w.z.data();
  }
  ok = ok &&
       sgemm(true, false, keys, dv, rows, 1.0f, z, keys, gob, dv, 1.0f, a.dv + kb * s_len * dv, dv);
  ok = ok && sgemm(false, true, rows, keys, dv, 1.0f, gob, dv, vv, dv, 0.0f, w.dz.data(), keys);
  for (int64_t i = 0; i < rows; ++i) {
    const float* pr = w.p.data() + i * keys;
    float* dr = w.dz.data() + i * keys;
    if (m.p > 0) {  // the dropout op's gradient: the same mask and scale
      const float* ur = w.u.data() + i * keys;
      double keep_scale = 1.0 - m.p;
      for (int64_t j = 0; j < keys; ++j)
        dr[j] = ur[j] >= m.p ? static_cast<float>(double(dr[j]) / keep_scale) : 0.0f;
    }
    float delta = 0.0f;
    for (int64_t j = 0; j < keys; ++j) delta += pr[j] * dr[j];
    for (int64_t j = 0; j < keys; ++j) dr[j] = pr[j] * (dr[j] - delta);  // dS
  }
  ok = ok && sgemm(false, false, rows, d, keys, m.scale, w.dz.data(), keys, kk, d, 0.0f, dqb, d);
  ok = ok && sgemm(true, false, keys, d, rows, m.scale, w.dz.data(), keys, qb, d, 1.0f,
                   a.dk + kb * s_len * d, d);
  if (!ok) std::fill(dqb, dqb + rows * d, std::nanf(""));  // never expected: make it visible
}

}  // namespace

void cpu_attention_backward(const OpCall& call) {
  if (call.output.type.numel() == 0) return;
  Dims m = dims_of(call);
  // No rows, keys or head width: the oracle's loops (cheap here, exact edge rules).
  if (m.d == 0 || m.t_len == 0 || m.s_len == 0) return reference::ref_attention_backward(call);
  F32Input q(call.inputs[0]), k(call.inputs[1]), v(call.inputs[2]), go(call.inputs[3]);
  F32Output out(call.output);
  int64_t nq = call.inputs[0].type.numel(), nk = call.inputs[1].type.numel();
  int mask_at = ops::attention_mask_operand(call.inputs.size(), 4, *call.attrs);
  std::vector<float> mask_values;
  Mask mask;
  if (mask_at >= 0) {
    const ConstView& mv = call.inputs[mask_at];
    if (mv.type.dtype != DType::boolean) mask_values = to_f32(mv);
    Shape scores = call.inputs[0].type.shape;
    scores.back() = m.s_len;
    mask = plan_mask(mv, mask_values.data(), scores, m.batch);
  }
  BackwardArgs a{&m,
                 q.data(),
                 k.data(),
                 v.data(),
                 go.data(),
                 out.data(),
                 out.data() + nq,
                 out.data() + nq + nk,
                 mask_at >= 0 ? &mask : nullptr};
  int64_t kv_items = m.batch / m.group, blocks = (m.t_len + kRows - 1) / kRows;
  parallel_for(kv_items, 1, [&](int64_t b0, int64_t e0) {
    BackwardScratch w(m.s_len);
    for (int64_t kb = b0; kb < e0; ++kb) {
      std::fill(a.dk + kb * m.s_len * m.d, a.dk + (kb + 1) * m.s_len * m.d, 0.0f);
      std::fill(a.dv + kb * m.s_len * m.dv, a.dv + (kb + 1) * m.s_len * m.dv, 0.0f);
      for (int64_t b = kb * m.group; b < (kb + 1) * m.group; ++b)
        for (int64_t blk = 0; blk < blocks; ++blk)
          backward_block(a, w, b, blk * kRows, std::min(kRows, m.t_len - blk * kRows));
    }
  });
  out.finish();
}

}  // namespace loom::backends::cpu
