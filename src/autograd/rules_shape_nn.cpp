// Gradient rules of the shape, index, random and nn ops. layer_norm's rule
// follows the standard derivation (dx = rstd * (dxhat - mean(dxhat) - xhat *
// mean(dxhat * xhat))); cross_entropy's is the cross_entropy_backward op,
// (softmax - smoothed one-hot) / count over non-ignored rows; attention
// is the attention_backward op (its decomposition when a float mask needs a
// gradient).
#include <numeric>

#include "autograd/decompositions.h"
#include "autograd/rules.h"
#include "lazy/tensor_impl.h"
#include "loom/ops.h"

namespace loom::autograd::rules {
namespace {
Tensor as_dtype(const Tensor& g, const Tensor& input) { return cast(g, input.dtype()); }
}  // namespace

std::vector<Tensor> grad_reshape(const GradNode& n, const Tensor& g) {
  return {reshape(g, in(n, 0).shape())};
}
std::vector<Tensor> grad_expand(const GradNode& n, const Tensor& g) {
  return {sum_to(g, in(n, 0).shape())};
}
std::vector<Tensor> grad_permute(const GradNode& n, const Tensor& g) {
  std::vector<int64_t> inverse(n.attrs.perm.size());
  for (size_t i = 0; i < inverse.size(); ++i) inverse[n.attrs.perm[i]] = static_cast<int64_t>(i);
  return {permute(g, inverse)};
}
std::vector<Tensor> grad_slice(const GradNode& n, const Tensor& g) {
  const auto& a = n.attrs;
  int64_t len = g.shape()[a.axis];
  Tensor index = arange(double(a.start), double(a.start + len * a.step), double(a.step), DType::i64,
                        g.device());
  return {index_add(zeros_like(in(n, 0)), a.axis, index, g)};
}
std::vector<Tensor> grad_concat(const GradNode& n, const Tensor& g) {
  std::vector<int64_t> sizes;
  for (const Tensor& t : n.inputs) sizes.push_back(t.shape()[n.attrs.axis]);
  return split(g, sizes, n.attrs.axis);
}

std::vector<Tensor> grad_embedding(const GradNode& n, const Tensor& g) {
  const Tensor& w = in(n, 0);
  Tensor flat_ids = reshape(in(n, 1), {-1});
  Tensor flat_g = reshape(as_dtype(g, w), {-1, w.shape()[1]});
  return {index_add(zeros_like(w), 0, flat_ids, flat_g), Tensor()};
}
std::vector<Tensor> grad_gather(const GradNode& n, const Tensor& g) {
  return {scatter_add(zeros_like(in(n, 0)), n.attrs.axis, in(n, 1), g), Tensor()};
}
std::vector<Tensor> grad_index_select(const GradNode& n, const Tensor& g) {
  return {index_add(zeros_like(in(n, 0)), n.attrs.axis, in(n, 1), g), Tensor()};
}
std::vector<Tensor> grad_index_add(const GradNode& n, const Tensor& g) {
  return {g, Tensor(), index_select(g, n.attrs.axis, in(n, 1))};
}
// out = self with slices `index` replaced: self's gradient is g with those
// slices zeroed (index_copy of zeros), source's the slices of g there.
std::vector<Tensor> grad_index_copy(const GradNode& n, const Tensor& g) {
  const Tensor& index = in(n, 1);
  Tensor zero_rows = zeros_like(in(n, 2));
  return {index_copy(g, n.attrs.axis, index, zero_rows), Tensor(),
          index_select(g, n.attrs.axis, index)};
}
std::vector<Tensor> grad_scatter_add(const GradNode& n, const Tensor& g) {
  return {g, Tensor(), gather(g, n.attrs.axis, in(n, 1))};
}

std::vector<Tensor> grad_dropout(const GradNode& n, const Tensor& g) {
  // Same generator state, same mask: dropout(g) = g * mask / (1 - p).
  return {autograd::apply(ops::OpKind::k_dropout, {g, in(n, 1)}, n.attrs), Tensor()};
}

std::vector<Tensor> grad_softmax(const GradNode& n, const Tensor& g) {
  const Tensor& y = n.output;
  return {y * (g - sum(g * y, {n.attrs.axis}, true))};
}
std::vector<Tensor> grad_log_softmax(const GradNode& n, const Tensor& g) {
  return {g - exp(n.output) * sum(g, {n.attrs.axis}, true)};
}

std::vector<Tensor> grad_layer_norm(const GradNode& n, const Tensor& g) {
  const Tensor &x = in(n, 0), &w = in(n, 1), &b = in(n, 2);
  Tensor mu = mean(x, {-1}, true);
  Tensor rstd = rsqrt(var(x, {-1}, 0, true) + n.attrs.eps);
  Tensor xhat = (x - mu) * rstd;
  std::vector<int64_t> lead(x.dim() - 1);
  std::iota(lead.begin(), lead.end(), 0);
  // Sum over the leading dims (none for a 1-D x: sum(t, {}) would sum all).
  Tensor dw = lead.empty() ? g * xhat : sum(g * xhat, lead);
  Tensor db = lead.empty() ? g : sum(g, lead);
  Tensor dxhat = g * w;
  Tensor dx = rstd * (dxhat - mean(dxhat, {-1}, true) - xhat * mean(dxhat * xhat, {-1}, true));
  return {dx, as_dtype(dw, w), as_dtype(db, b)};
}

std::vector<Tensor> grad_cross_entropy(const GradNode& n, const Tensor& g) {
  // One op (formula in backends/reference/cross_entropy_grad.cpp), so the
  // compiler can recognize the loss's backward (passes/fused_cross_entropy).
  const Tensor &logits = in(n, 0), &target = in(n, 1);
  return {autograd::apply(ops::OpKind::k_cross_entropy_backward,
                          {logits, target, cast(g, logits.dtype())}, n.attrs),
          Tensor()};
}

namespace {

// attention's gradient through its decomposition (re-traced on detached
// leaves): used when a float mask itself needs a gradient.
std::vector<Tensor> grad_attention_decomposed(const GradNode& n, const Tensor& g, int mask_at,
                                              int gen_at) {
  std::vector<Tensor> leaves;
  for (size_t i = 0; i < 3; ++i) {
    Tensor leaf = in(n, i).detach();
    leaf.requires_grad_(true);
    leaves.push_back(leaf);
  }
  Tensor mask = in(n, mask_at).detach();
  mask.requires_grad_(true);
  Tensor gen = gen_at >= 0 ? in(n, gen_at) : Tensor();
  {
    set_grad_enabled(true);
    Tensor out = attention_decomposed(leaves[0], leaves[1], leaves[2], mask, n.attrs.causal,
                                      n.attrs.scale, n.attrs.dropout_p, gen);
    set_grad_enabled(false);
    out.backward(g);
  }
  std::vector<Tensor> grads;
  for (Tensor& leaf : leaves) grads.push_back(leaf.grad());
  for (size_t i = 3; i < n.inputs.size(); ++i)
    grads.push_back(static_cast<int>(i) == mask_at ? mask.grad() : Tensor());
  return grads;
}

}  // namespace

std::vector<Tensor> grad_attention(const GradNode& n, const Tensor& g) {
  int mask_at = ops::attention_mask_operand(n.inputs.size(), 3, n.attrs);
  int gen_at = ops::attention_generator_operand(n.inputs.size(), n.attrs);
  if (mask_at >= 0 && in(n, mask_at).requires_grad())
    return grad_attention_decomposed(n, g, mask_at, gen_at);
  // One attention_backward op (backends/reference/attention_backward.cpp):
  // the probabilities are recomputed inside it, never stored.
  const Tensor &q = in(n, 0), &k = in(n, 1), &v = in(n, 2);
  std::vector<Tensor> operands = {q, k, v, cast(g, q.dtype())};
  for (size_t i = 3; i < n.inputs.size(); ++i) operands.push_back(in(n, i));
  Tensor packed = autograd::apply(ops::OpKind::k_attention_backward, operands, n.attrs);
  int64_t nq = q.numel(), nk = k.numel(), nv = v.numel();
  std::vector<Tensor> grads = {reshape(slice(packed, 0, 0, nq), q.shape()),
                               reshape(slice(packed, 0, nq, nq + nk), k.shape()),
                               reshape(slice(packed, 0, nq + nk, nq + nk + nv), v.shape())};
  for (size_t i = 3; i < n.inputs.size(); ++i) grads.push_back(Tensor());
  return grads;
}

}  // namespace loom::autograd::rules
