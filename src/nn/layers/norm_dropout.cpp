// LayerNorm (torch.nn.LayerNorm over the last dim) and Dropout
// (torch.nn.Dropout, active in training mode only).
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

LayerNorm::LayerNorm(int64_t dim, double eps) : dim_(dim), eps_(eps) {
  LOOM_CHECK(dim_ >= 1, "[LayerNorm] dim must be >= 1, got ", dim_);
  LOOM_CHECK(eps_ > 0, "[LayerNorm] eps must be > 0, got ", eps_);
  weight_ = register_parameter("weight", ones({dim_}));
  bias_ = register_parameter("bias", zeros({dim_}));
}

Tensor LayerNorm::forward(const Tensor& x) const {
  LOOM_CHECK(x.defined() && x.dim() >= 1 && x.size(-1) == dim_, "[LayerNorm] input ",
             x.defined() ? to_string(x.shape()) : "undefined", " does not end in ", dim_);
  return layer_norm(x, weight(), bias(), eps_);
}

Dropout::Dropout(double p) : p_(p) {
  LOOM_CHECK(p_ >= 0 && p_ < 1, "[Dropout] p must be in [0, 1), got ", p_);
}

Tensor Dropout::forward(const Tensor& x) const {
  if (!is_training() || p_ == 0) return x;
  return dropout(x, p_, true);
}

}  // namespace loom::nn
