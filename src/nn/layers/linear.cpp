// Linear (torch.nn.Linear, weight [out, in]) and GPT-2's Conv1D
// (transformers.pytorch_utils.Conv1D, weight [in, out]): the same affine map
// with the weight stored transposed. Both use loom::matmul, whose batch
// dimensions broadcast, so x may have any rank >= 1. Either may carry a
// LinearAdapter (LoRA) whose term is added to the output. Under autocast the
// output (bias included) is in the autocast dtype, as torch's linear.
#include <cmath>

#include "loom/autocast.h"
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

namespace {

void check_features(const char* layer, const Tensor& x, int64_t in) {
  LOOM_CHECK(x.defined() && x.dim() >= 1, "[", layer, "] input must have rank >= 1");
  LOOM_CHECK(x.size(-1) == in, "[", layer, "] input ", to_string(x.shape()), " has ", x.size(-1),
             " features, expected ", in);
}

// x [..., K] @ w -> [..., N] for rank-1 inputs too.
Tensor affine(const Tensor& x, const Tensor& w, bool trans_w, const Tensor& b) {
  Tensor lhs = x.dim() == 1 ? unsqueeze(x, 0) : x;
  Tensor y = matmul(lhs, w, false, trans_w);
  // Under autocast torch's linear / addmm cast the bias with the operands, so
  // the layer's output stays in the autocast dtype (loom/autocast.h).
  if (b.defined())
    y = y + (is_autocast_enabled() && y.dtype() != b.dtype() ? cast(b, y.dtype()) : b);
  return x.dim() == 1 ? squeeze(y, 0) : y;
}

}  // namespace

void LinearLayer::set_adapter(std::shared_ptr<const LinearAdapter> adapter) {
  LOOM_CHECK(adapter != nullptr, "[", type_name(), "] set_adapter: adapter is null");
  LOOM_CHECK(adapter_ == nullptr, "[", type_name(),
             "] set_adapter: an adapter is attached already");
  for (auto& [name, m] : adapter->modules()) add_child(name, m);
  adapter_ = std::move(adapter);
}

void LinearLayer::remove_adapter() {
  if (!adapter_) return;
  for (auto& [name, m] : adapter_->modules()) remove_child(name);
  adapter_.reset();
}

Tensor LinearLayer::add_adapter(const Tensor& x, const Tensor& y) const {
  return adapter_ ? y + adapter_->forward(x) : y;
}

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : LinearLayer(in_features, out_features, /*fan_in_fan_out=*/false), has_bias_(bias) {
  LOOM_CHECK(in_ >= 1 && out_ >= 1, "[Linear] features must be >= 1, got in ", in_, ", out ", out_);
  weight_ = register_parameter("weight", zeros({out_, in_}));
  if (bias) bias_ = register_parameter("bias", zeros({out_}));
  if (!NoInitGuard::active()) {
    // torch: kaiming_uniform_(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)); bias the same bound.
    double bound = 1.0 / std::sqrt(static_cast<double>(in_));
    init_uniform_(weight(), -bound, bound);
    if (bias) init_uniform_(param(bias_), -bound, bound);
  }
}

Tensor Linear::forward(const Tensor& x) const {
  check_features("Linear", x, in_);
  return add_adapter(x, affine(x, weight(), /*trans_w=*/true, bias()));
}

Conv1D::Conv1D(int64_t nf, int64_t nx) : LinearLayer(nx, nf, /*fan_in_fan_out=*/true) {
  LOOM_CHECK(nf >= 1 && nx >= 1, "[Conv1D] sizes must be >= 1, got nf ", nf, ", nx ", nx);
  weight_ = register_parameter("weight", zeros({nx, nf}));
  bias_ = register_parameter("bias", zeros({nf}));
  if (!NoInitGuard::active()) init_normal_(weight(), 0.0, 0.02);
}

Tensor Conv1D::forward(const Tensor& x) const {
  check_features("Conv1D", x, in_);
  return add_adapter(x, affine(x, weight(), /*trans_w=*/false, bias()));
}

}  // namespace loom::nn
