// Linear (torch.nn.Linear, weight [out, in]) and GPT-2's Conv1D
// (transformers.pytorch_utils.Conv1D, weight [in, out]): the same affine map
// with the weight stored transposed. Both use loom::matmul, whose batch
// dimensions broadcast, so x may have any rank >= 1. Under autocast the output
// (bias included) is in the autocast dtype, as torch's linear.
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

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_(in_features), out_(out_features), has_bias_(bias) {
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
  return affine(x, weight(), /*trans_w=*/true, bias());
}

Conv1D::Conv1D(int64_t nf, int64_t nx) : nf_(nf), nx_(nx) {
  LOOM_CHECK(nf_ >= 1 && nx_ >= 1, "[Conv1D] sizes must be >= 1, got nf ", nf_, ", nx ", nx_);
  weight_ = register_parameter("weight", zeros({nx_, nf_}));
  bias_ = register_parameter("bias", zeros({nf_}));
  if (!NoInitGuard::active()) init_normal_(weight(), 0.0, 0.02);
}

Tensor Conv1D::forward(const Tensor& x) const {
  check_features("Conv1D", x, nx_);
  return affine(x, weight(), /*trans_w=*/false, bias());
}

}  // namespace loom::nn
