// Reference kernel of attention_backward: the gradients dq, dk, dv of the
// attention op (nn.cpp ref_attention: masked softmax, dropout with the same
// Philox draws) for grad_out dO, by the chain rule per query row i of batch
// item b, with P the probabilities, keep_j / (1-p) the dropout factor
// (1 without dropout) and Z = P * keep / (1-p) the dropped weights:
//   dv_j += Z_j dO_i                       dZ_j = dO_i . v_j
//   dP_j = dZ_j keep_j / (1-p)             delta = sum_j P_j dP_j
//   dS_j = P_j (dP_j - delta)              (softmax's Jacobian)
//   dq_i += scale sum_j dS_j k_j           dk_j += scale dS_j q_i
// (the derivation of FlashAttention's backward, Dao et al. 2022, Alg. 4,
// written densely). k/v items shared by a group of q heads (grouped-query
// attention) sum the group's contributions. The result packs dq, dk, dv.
#include <cmath>

#include "backends/reference/attention_dims.h"
#include "backends/reference/reference.h"
#include "core/philox.h"

namespace loom::backends::reference {

void ref_attention_backward(const OpCall& c) {
  const auto [t_len, d, s_len, dv, batch, group, scale, mask_at, drop, seed, offset] =
      attention_dims(c, 4);
  std::vector<double> q = load(c.inputs[0]), k = load(c.inputs[1]), v = load(c.inputs[2]);
  std::vector<double> go = load(c.inputs[3]);
  std::vector<double> mask = mask_at >= 0 ? load(c.inputs[mask_at]) : std::vector<double>{};
  bool bool_mask = mask_at >= 0 && c.inputs[mask_at].type.dtype == DType::boolean;
  Shape scores_shape = c.inputs[0].type.shape;
  scores_shape.back() = s_len;
  BroadcastIndex mask_index(mask_at >= 0 ? c.inputs[mask_at].type.shape : Shape{}, scores_shape);
  size_t nq = q.size(), nk = k.size();
  std::vector<double> out(nq + nk + v.size(), 0.0), p(s_len), factor(s_len);
  double* dq = out.data();
  double* dk = dq + nq;
  double* dvv = dk + nk;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < t_len; ++i) {
      int64_t kb = b / group, row = b * t_len + i;
      double m = -INFINITY;
      for (int64_t j = 0; j < s_len; ++j) {
        double sc = 0;
        for (int64_t e = 0; e < d; ++e) sc += q[row * d + e] * k[(kb * s_len + j) * d + e];
        sc *= scale;
        if (c.attrs->causal && j > i) sc = -INFINITY;
        if (mask_at >= 0) {
          double mv = mask[mask_index(row * s_len + j)];
          sc = bool_mask ? (mv != 0 ? sc : -INFINITY) : sc + mv;
        }
        p[j] = sc;
        m = std::max(m, sc);
      }
      if (m == -INFINITY) continue;  // nothing attended: the output was zeros, no gradient
      double z = 0;
      for (int64_t j = 0; j < s_len; ++j) z += (p[j] = std::exp(p[j] - m));
      double delta = 0;
      std::vector<double> dp(s_len);
      for (int64_t j = 0; j < s_len; ++j) {
        p[j] /= z;
        factor[j] = 1.0;
        if (drop > 0)
          factor[j] = philox::uniform(seed, offset, uint64_t(row * s_len + j)) >= drop
                          ? 1.0 / (1.0 - drop)
                          : 0.0;
        double dz = 0;
        for (int64_t e = 0; e < dv; ++e) {
          dz += go[row * dv + e] * v[(kb * s_len + j) * dv + e];
          dvv[(kb * s_len + j) * dv + e] += p[j] * factor[j] * go[row * dv + e];
        }
        dp[j] = dz * factor[j];
        delta += p[j] * dp[j];
      }
      for (int64_t j = 0; j < s_len; ++j) {
        double ds = p[j] * (dp[j] - delta) * scale;
        for (int64_t e = 0; e < d; ++e) {
          dq[row * d + e] += ds * k[(kb * s_len + j) * d + e];
          dk[(kb * s_len + j) * d + e] += ds * q[row * d + e];
        }
      }
    }
  store(c.output, out);
}

}  // namespace loom::backends::reference
