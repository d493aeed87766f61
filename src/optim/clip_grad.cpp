// clip_grad_norm_ (loom/optim.h), as torch.nn.utils.clip_grad_norm_
// (torch/nn/utils/clip_grad.py, foreach=False): per-gradient vector norms,
// the norm of those norms, then every gradient times
// clamp(max_norm / (total + 1e-6), max=1). Everything stays on the device —
// the returned total is a pending value on the lazy device, and no host sync
// happens (max_norm enters as device data).
#include <cmath>
#include <limits>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/optim.h"

namespace loom::optim {
namespace {

// torch.linalg.vector_norm(x, ord) of any rank, as a rank-0 f32 tensor.
Tensor vector_norm(const Tensor& x, double ord) {
  Tensor a = x.dtype() == DType::f32 ? x : cast(x, DType::f32);
  if (std::isinf(ord)) return max(abs(a));
  if (ord == 2) return sqrt(sum(mul(a, a)));
  if (ord == 1) return sum(abs(a));
  return pow(sum(pow(abs(a), ord)), 1.0 / ord);
}

}  // namespace

Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type) {
  LOOM_CHECK(max_norm >= 0, "[clip_grad_norm_] max_norm must be >= 0, got ", max_norm);
  LOOM_CHECK(norm_type > 0, "[clip_grad_norm_] norm_type must be > 0 (or infinity), got ",
             norm_type);
  NoGradGuard no_grad;
  std::vector<Tensor> grads;
  for (const Tensor& p : params) {
    LOOM_CHECK(p.defined(), "[clip_grad_norm_] a parameter is an undefined tensor");
    Tensor g = p.grad();
    if (g.defined()) grads.push_back(g);
  }
  if (grads.empty()) {
    return zeros({}, DType::f32, params.empty() ? Device("cpu") : params.front().device());
  }
  const Device& dev = grads.front().device();
  std::vector<Tensor> norms;
  for (const Tensor& g : grads) {
    LOOM_CHECK(g.device() == dev, "[clip_grad_norm_] gradients on ", dev.str(), " and ",
               g.device().str());
    norms.push_back(reshape(vector_norm(g, norm_type), {1}));
  }
  Tensor total = norms.size() == 1 ? reshape(norms[0], {}) : vector_norm(concat(norms), norm_type);
  Tensor coef = div(scalar_tensor(max_norm, DType::f32, dev), add(total, 1e-6));
  coef = minimum(coef, 1.0);
  for (Tensor& g : grads) g.copy_(mul(g, g.dtype() == DType::f32 ? coef : cast(coef, g.dtype())));
  return total;
}

}  // namespace loom::optim
