// Reference (batched) matmul: out[..., m, n] = sum_k A[..., m, k] B[..., k, n]
// with optional transposes of the last two dims and broadcast batch dims.
// Layout attrs (perm_a, perm_b, perm_out) are applied literally: the
// operands are permuted into dense copies first and the dense product is
// permuted into the output.
#include "backends/reference/reference.h"

namespace loom::backends::reference {
namespace {

// out = permute(x: shape, perm) as a dense row-major vector; `shape` becomes
// the permuted shape.
std::vector<double> ref_matmul_permute(const std::vector<double>& x, Shape& shape,
                                       const std::vector<int64_t>& perm) {
  if (perm.empty()) return x;
  size_t r = shape.size();
  std::vector<int64_t> st(r, 1);
  for (size_t d = r; d-- > 1;) st[d - 1] = st[d] * shape[d];
  Shape out_shape(r);
  for (size_t i = 0; i < r; ++i) out_shape[i] = shape[perm[i]];
  std::vector<double> out(x.size());
  std::vector<int64_t> idx(r, 0);  // index into out_shape
  for (size_t o = 0; o < out.size(); ++o) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += idx[i] * st[perm[i]];
    out[o] = x[src];
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < out_shape[i]) break;
      idx[i] = 0;
    }
  }
  shape = out_shape;
  return out;
}

}  // namespace

void ref_matmul(const OpCall& c) {
  Shape a_shape = c.inputs[0].type.shape, b_shape = c.inputs[1].type.shape;
  std::vector<double> a = ref_matmul_permute(load(c.inputs[0]), a_shape, c.attrs->perm_a);
  std::vector<double> b = ref_matmul_permute(load(c.inputs[1]), b_shape, c.attrs->perm_b);
  // The product's shape before perm_out: perm_out[i] is the product axis
  // stored as output axis i.
  Shape out = c.output.type.shape;
  const std::vector<int64_t>& po_perm = c.attrs->perm_out;
  for (size_t i = 0; i < po_perm.size(); ++i) out[po_perm[i]] = c.output.type.shape[i];
  size_t ra = a_shape.size(), ro = out.size();
  int64_t m = out[ro - 2], n = out[ro - 1];
  int64_t k = c.attrs->trans_a ? a_shape[ra - 2] : a_shape[ra - 1];
  Shape batch(out.begin(), out.end() - 2);
  Shape batch_a(a_shape.begin(), a_shape.end() - 2), batch_b(b_shape.begin(), b_shape.end() - 2);
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
  store(c.output, ref_matmul_permute(r, out, po_perm));
}

}  // namespace loom::backends::reference
