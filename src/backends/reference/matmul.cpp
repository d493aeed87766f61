// Reference (batched) matmul: out[..., m, n] = sum_k A[..., m, k] B[..., k, n]
// with optional transposes of the last two dims and broadcast batch dims.
#include "backends/reference/reference.h"

namespace loom::backends::reference {

void ref_matmul(const OpCall& c) {
  const auto& a_t = c.inputs[0].type;
  const auto& b_t = c.inputs[1].type;
  const Shape& out = c.output.type.shape;
  std::vector<double> a = load(c.inputs[0]), b = load(c.inputs[1]);
  size_t ra = a_t.shape.size(), ro = out.size();
  int64_t m = out[ro - 2], n = out[ro - 1];
  int64_t k = c.attrs->trans_a ? a_t.shape[ra - 2] : a_t.shape[ra - 1];
  Shape batch(out.begin(), out.end() - 2);
  Shape batch_a(a_t.shape.begin(), a_t.shape.end() - 2), batch_b(b_t.shape.begin(), b_t.shape.end() - 2);
  BroadcastIndex ia(batch_a, batch), ib(batch_b, batch);
  std::vector<double> r(c.output.type.numel(), 0.0);
  int64_t nb = numel(batch);
  for (int64_t bi = 0; bi < nb; ++bi) {
    const double* pa = a.data() + ia(bi) * m * k;
    const double* pb = b.data() + ib(bi) * k * n;
    double* po = r.data() + bi * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          double av = c.attrs->trans_a ? pa[p * m + i] : pa[i * k + p];
          double bv = c.attrs->trans_b ? pb[j * k + p] : pb[p * n + j];
          s += av * bv;
        }
        po[i * n + j] = s;
      }
  }
  store(c.output, r);
}

}  // namespace loom::backends::reference
