// SGD with momentum, dampening, Nesterov momentum and (L2) weight decay
// (loom/optim.h), with the operation order of torch.optim.SGD's single-tensor
// path (torch/optim/sgd.py, _single_tensor_sgd): grad.add(param, alpha=wd);
// buf.mul_(momentum).add_(grad, alpha=1 - dampening) (buf = grad at the first
// step); grad.add(buf, alpha=momentum) for Nesterov; param.add_(grad,
// alpha=-lr). The first step is traced as buf*0 + grad*1 with both factors
// as graph inputs (StepScalars), so every step has one graph.
#include <cmath>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/optim.h"
#include "optim/step_scalars.h"

namespace loom::optim {
namespace {

Options sgd_defaults(const SGDOptions& o) {
  return {{"lr", o.lr},
          {"momentum", o.momentum},
          {"dampening", o.dampening},
          {"weight_decay", o.weight_decay},
          {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

}  // namespace

SGD::SGD(std::vector<Tensor> params, SGDOptions options)
    : SGD(std::vector<ParamGroup>{ParamGroup{std::move(params), {}, {}}}, options) {}

SGD::SGD(std::vector<ParamGroup> groups, SGDOptions defaults)
    : Optimizer("SGD", sgd_defaults(defaults), {"momentum_buffer"}) {
  validate(this->defaults());
  for (ParamGroup& g : groups) add_param_group(std::move(g));
}

void SGD::validate(const Options& o) const {
  double lr = o.at("lr"), momentum = o.at("momentum"), dampening = o.at("dampening");
  double wd = o.at("weight_decay"), nesterov = o.at("nesterov");
  LOOM_CHECK(std::isfinite(lr) && lr >= 0, "[SGD] invalid learning rate ", lr);
  LOOM_CHECK(std::isfinite(momentum) && momentum >= 0, "[SGD] invalid momentum ", momentum);
  LOOM_CHECK(std::isfinite(dampening), "[SGD] invalid dampening ", dampening);
  LOOM_CHECK(std::isfinite(wd) && wd >= 0, "[SGD] invalid weight_decay ", wd);
  LOOM_CHECK(nesterov == 0 || nesterov == 1, "[SGD] nesterov must be 0 or 1, got ", nesterov);
  LOOM_CHECK(nesterov == 0 || (momentum > 0 && dampening == 0),
             "[SGD] nesterov momentum requires a momentum and zero dampening, got momentum ",
             momentum, ", dampening ", dampening);
}

void SGD::step() {
  NoGradGuard no_grad;
  for (ParamGroup& group : param_groups()) {
    StepScalars scalars;  // per group: equal values of two groups never share an input
    const double lr = group.lr(), momentum = group.option("momentum");
    const double dampening = group.option("dampening"), wd = group.option("weight_decay");
    const bool nesterov = group.option("nesterov") != 0;
    for (Tensor& param : group.params) {
      Tensor d = grad_of(param);
      if (!d.defined()) continue;
      ParamState& st = state_for(param);
      st.step += 1;
      const Device& dev = param.device();
      if (wd != 0) d = add(d, mul(param, wd));
      if (momentum != 0) {
        bool first = false;
        Tensor& buf = buffer(st, "momentum_buffer", param, &first);
        Tensor keep = scalars.get("momentum_keep", first ? 0.0 : momentum, dev);
        Tensor scale = scalars.get("momentum_scale", first ? 1.0 : 1.0 - dampening, dev);
        buf.copy_(add(mul(buf, keep), mul(d, scale)));
        d = nesterov ? add(d, mul(buf, momentum)) : buf;
      }
      param.copy_(add(param, mul(d, scalars.get("neg_lr", -lr, dev))));
    }
  }
}

}  // namespace loom::optim
