// AdamW (loom/optim.h): decoupled weight decay, Loshchilov & Hutter,
// "Decoupled Weight Decay Regularization" (ICLR 2019), with the operation
// order of torch.optim.AdamW's single-tensor path (torch/optim/adam.py,
// _single_tensor_adam with decoupled_weight_decay=True), so f32 results match
// it to rounding: param.mul_(1 - lr*wd); exp_avg.lerp_(grad, 1 - beta1);
// exp_avg_sq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
// denom = exp_avg_sq.sqrt() / sqrt(bc2) + eps; param.addcdiv_(exp_avg, denom,
// -lr / bc1). Per-step numbers (lr, bias corrections) are StepScalars.
#include <cmath>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "optim/step_scalars.h"

namespace loom::optim {
namespace {

Options adamw_defaults(const AdamWOptions& o) {
  return {{"lr", o.lr},
          {"beta1", o.beta1},
          {"beta2", o.beta2},
          {"eps", o.eps},
          {"weight_decay", o.weight_decay}};
}

// torch.lerp(start, end, weight) on CPU (aten/src/ATen/native/Lerp.h): the
// formula depends on |weight| < 0.5 for accuracy.
Tensor lerp(const Tensor& start, const Tensor& end, double weight) {
  if (std::fabs(weight) < 0.5) return add(start, mul(sub(end, start), weight));
  return sub(end, mul(sub(end, start), 1.0 - weight));
}

}  // namespace

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions options)
    : AdamW(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

AdamW::AdamW(std::vector<ParamGroup> groups, AdamWOptions defaults)
    : Optimizer("AdamW", adamw_defaults(defaults), {"exp_avg", "exp_avg_sq"}) {
  validate(this->defaults());
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void AdamW::validate(const Options& o) const {
  double lr = o.at("lr"), b1 = o.at("beta1"), b2 = o.at("beta2"), eps = o.at("eps"),
         wd = o.at("weight_decay");
  LOOM_CHECK(std::isfinite(lr) && lr >= 0, "[AdamW] invalid learning rate ", lr);
  LOOM_CHECK(std::isfinite(eps) && eps >= 0, "[AdamW] invalid epsilon ", eps);
  LOOM_CHECK(b1 >= 0 && b1 < 1, "[AdamW] invalid beta1 ", b1, " (must be in [0, 1))");
  LOOM_CHECK(b2 >= 0 && b2 < 1, "[AdamW] invalid beta2 ", b2, " (must be in [0, 1))");
  LOOM_CHECK(std::isfinite(wd) && wd >= 0, "[AdamW] invalid weight_decay ", wd);
}

void AdamW::step() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups()) {
    StepScalars scalars;  // per group: equal values of two groups never share an input
    const double lr = group.lr(), beta1 = group.option("beta1"), beta2 = group.option("beta2");
    const double eps = group.option("eps"), wd = group.option("weight_decay");
    for (Tensor& param : group.params) {
      Tensor grad = grad_of(param);
      if (!grad.defined()) continue;
      ParamState& st = state_for(param);
      Tensor& m = buffer(st, "exp_avg", param);
      Tensor& v = buffer(st, "exp_avg_sq", param);
      st.step += 1;
      const double t = static_cast<double>(st.step);
      const double bc1 = 1.0 - std::pow(beta1, t), bc2 = 1.0 - std::pow(beta2, t);
      const Device& dev = param.device();

      m.copy_(lerp(m, grad, 1.0 - beta1));
      v.copy_(add(mul(v, beta2), mul(mul(grad, 1.0 - beta2), grad)));
      Tensor denom = add(div(sqrt(v), scalars.get("bc2_sqrt", std::sqrt(bc2), dev)), eps);
      Tensor p = param;
      if (wd != 0) p = mul(p, scalars.get("decay", 1.0 - lr * wd, dev));
      p = add(p, div(mul(m, scalars.get("neg_step_size", -lr / bc1, dev)), denom));
      param.copy_(p);
    }
  }
}

}  // namespace loom::optim
