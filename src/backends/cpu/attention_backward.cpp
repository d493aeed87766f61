// Optimized attention_backward: dq, dk, dv of the attention op (formulas in
// backends/reference/attention_backward.cpp) without the [T, S]
// probabilities ever stored between forward and backward. The probabilities
// are recomputed block by block — backward_rows() query rows at a time, each block's
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
// Operands of any float dtype are computed in f32, converted one batch item
// at a time inside the task (no whole-tensor copies); the result is rounded
// to the output dtype once. Non-causal blocks hold up to
// 16K scores ([128, 128]).
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

// sum_j a[j] b[j] in f32 over kDotLanes interleaved partial sums, added
// pairwise at the end: a fixed order (the same bits on any thread count) that
// vectorizes, where one running sum is a chain of dependent adds (BERT's
// delta rows were ~10 ms of its backward at 2 threads).
constexpr int64_t kDotLanes = 16;
float row_dot(const float* a, const float* b, int64_t n) {
  float part[kDotLanes] = {};
  int64_t j = 0;
  for (; j + kDotLanes <= n; j += kDotLanes)
#pragma omp simd
    for (int64_t l = 0; l < kDotLanes; ++l) part[l] += a[j + l] * b[j + l];
  for (int64_t l = 0; j < n; ++j, ++l) part[l] += a[j] * b[j];
  for (int64_t w = kDotLanes / 2; w > 0; w /= 2)
    for (int64_t l = 0; l < w; ++l) part[l] += part[l + w];
  return part[0];
}

// Query rows per backward block: kRows when causal (blocks skip the keys
// past their last row), else whole [rows, S] blocks up to 16K scores (fewer,
// larger GEMMs), at least kRows.
int64_t backward_rows(int64_t t_len, int64_t s_len, bool causal) {
  if (causal) return kRows;
  int64_t rows = std::max<int64_t>(kRows, (int64_t{1} << 14) / std::max<int64_t>(1, s_len));
  return std::min(rows, std::max<int64_t>(1, t_len));
}

// f32 views of one q item and its k/v item (converted when the operands are
// bf16/f16, pointing at the operands when f32) and their gradients.
struct ItemArgs {
  const float *q, *go, *k, *v;
  float *dq, *dk, *dv;
};

// Scratch of one task: [rows, S] blocks.
struct BackwardScratch {
  std::vector<float> p, z, dz, u;
  BackwardScratch(int64_t rows, int64_t s) : p(rows * s), z(rows * s), dz(rows * s), u(rows * s) {}
};

// One block of `rows` query rows from i0 of q item b.
void backward_block(const Dims& m, const Mask* mask, const ItemArgs& a, BackwardScratch& w,
                    int64_t b, int64_t i0, int64_t rows) {
  int64_t s_len = m.s_len, d = m.d, dv = m.dv;
  int64_t keys = m.causal ? std::min(s_len, i0 + rows) : s_len;
  const float* qb = a.q + i0 * d;
  const float* gob = a.go + i0 * dv;
  float* dqb = a.dq + i0 * d;
  bool ok = sgemm(false, true, rows, keys, d, m.scale, qb, d, a.k, d, 0.0f, w.p.data(), keys);
  for (int64_t i = 0; i < rows; ++i) {
    float* pr = w.p.data() + i * keys;
    int64_t moff = mask ? mask->batch_offset[b] + (i0 + i) * mask->row_stride : 0;
    if (!softmax_scores(pr, keys, i0 + i, m.causal, mask, moff)) std::fill(pr, pr + keys, 0.0f);
  }
  const float* z = w.p.data();  // the weights that multiplied V
  if (m.p > 0) {
    for (int64_t i = 0; i < rows; ++i)
      philox_uniforms(m.seed, m.offset, uint64_t(b * m.t_len + i0 + i) * uint64_t(s_len), keys,
                      w.u.data() + i * keys);
    dropout_apply(w.u.data(), m.p, w.p.data(), w.z.data(), rows * keys);
    z = w.z.data();
  }
  ok = ok && sgemm(true, false, keys, dv, rows, 1.0f, z, keys, gob, dv, 1.0f, a.dv, dv);
  ok = ok && sgemm(false, true, rows, keys, dv, 1.0f, gob, dv, a.v, dv, 0.0f, w.dz.data(), keys);
  for (int64_t i = 0; i < rows; ++i) {
    const float* pr = w.p.data() + i * keys;
    float* dr = w.dz.data() + i * keys;
    if (m.p > 0)  // the dropout op's gradient: the same mask and scale
      dropout_apply(w.u.data() + i * keys, m.p, dr, dr, keys);
    float delta = row_dot(pr, dr, keys);
    for (int64_t j = 0; j < keys; ++j) dr[j] = pr[j] * (dr[j] - delta);  // dS
  }
  ok = ok && sgemm(false, false, rows, d, keys, m.scale, w.dz.data(), keys, a.k, d, 0.0f, dqb, d);
  ok = ok && sgemm(true, false, keys, d, rows, m.scale, w.dz.data(), keys, qb, d, 1.0f, a.dk, d);
  if (!ok) std::fill(dqb, dqb + rows * d, std::nanf(""));  // never expected: make it visible
}

}  // namespace

void cpu_attention_backward(const OpCall& call) {
  if (call.output.type.numel() == 0) return;
  Dims m = dims_of(call);
  // No rows, keys or head width: the oracle's loops (cheap here, exact edge rules).
  if (m.d == 0 || m.t_len == 0 || m.s_len == 0) return reference::ref_attention_backward(call);
  const ConstView &q = call.inputs[0], &k = call.inputs[1], &v = call.inputs[2];
  const ConstView& go = call.inputs[3];
  const MutView& out = call.output;
  int64_t nq = q.type.numel(), nk = k.type.numel();
  int mask_at = ops::attention_mask_operand(call.inputs.size(), 4, *call.attrs);
  std::vector<float> mask_values;
  Mask mask;
  if (mask_at >= 0) {
    const ConstView& mv = call.inputs[mask_at];
    if (mv.type.dtype != DType::boolean) mask_values = to_f32(mv);
    Shape scores = q.type.shape;
    scores.back() = m.s_len;
    mask = plan_mask(mv, mask_values.data(), scores, m.batch);
  }
  const Mask* mp = mask_at >= 0 ? &mask : nullptr;
  int64_t kv_items = m.batch / m.group, rows = backward_rows(m.t_len, m.s_len, m.causal);
  int64_t nkd = m.s_len * m.d, nkv = m.s_len * m.dv, nqd = m.t_len * m.d, nqv = m.t_len * m.dv;
  // One task per k/v item: it owns that item's dK, dV (FlashAttention-2's split).
  parallel_for(kv_items, 1, [&](int64_t b0, int64_t e0) {
    BackwardScratch w(rows, m.s_len);
    std::vector<float> kbuf, vbuf, qbuf, gobuf, dkbuf, dvbuf, dqbuf;
    for (int64_t kb = b0; kb < e0; ++kb) {
      ItemArgs a{};
      a.k = f32_run(k, kb * nkd, nkd, kbuf);
      a.v = f32_run(v, kb * nkv, nkv, vbuf);
      a.dk = out_run(out, nq + kb * nkd, nkd, dkbuf);
      a.dv = out_run(out, nq + nk + kb * nkv, nkv, dvbuf);
      std::fill(a.dk, a.dk + nkd, 0.0f);
      std::fill(a.dv, a.dv + nkv, 0.0f);
      for (int64_t b = kb * m.group; b < (kb + 1) * m.group; ++b) {
        a.q = f32_run(q, b * nqd, nqd, qbuf);
        a.go = f32_run(go, b * nqv, nqv, gobuf);
        a.dq = out_run(out, b * nqd, nqd, dqbuf);
        for (int64_t i0 = 0; i0 < m.t_len; i0 += rows)
          backward_block(m, mp, a, w, b, i0, std::min(rows, m.t_len - i0));
        put_run(out, b * nqd, nqd, a.dq);
      }
      put_run(out, nq + kb * nkd, nkd, a.dk);
      put_run(out, nq + nk + kb * nkv, nkv, a.dv);
    }
  });
}

}  // namespace loom::backends::cpu
