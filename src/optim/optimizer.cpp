// The Optimizer base class (loom/optim.h): parameter groups with defaults,
// zero_grad, per-parameter state keyed by tensor identity, and the in-memory
// state_dict / load_state_dict (torch.optim.Optimizer's semantics: parameters
// are numbered across groups in order; loading replaces hyperparameters).
// The safetensors file is in optimizer_io.cpp.
#include <cmath>
#include <set>

#include "loom/error.h"
#include "loom/ops.h"
#include "loom/optim.h"

namespace loom::optim {

double ParamGroup::option(const std::string& key) const {
  auto it = options.find(key);
  LOOM_CHECK(it != options.end(), "[optim] parameter group has no option '", key, "'");
  return it->second;
}

Optimizer::Optimizer(std::string name, Options defaults, std::vector<std::string> buffer_names)
    : name_(std::move(name)),
      defaults_(std::move(defaults)),
      buffer_names_(std::move(buffer_names)) {}

Optimizer::~Optimizer() = default;

void Optimizer::add_param_group(ParamGroup group) {
  for (const auto& [key, value] : group.options) {
    LOOM_CHECK(defaults_.count(key), "[", name_, "] unknown option '", key, "' in parameter group ",
               groups_.size());
    (void)value;
  }
  for (const auto& [key, value] : defaults_) group.options.emplace(key, value);
  validate(group.options);
  LOOM_CHECK(group.names.empty() || group.names.size() == group.params.size(), "[", name_,
             "] parameter group ", groups_.size(), " has ", group.params.size(), " parameters but ",
             group.names.size(), " names");
  std::set<const TensorImpl*> seen;
  for (const ParamGroup& g : groups_)
    for (const Tensor& p : g.params) seen.insert(p.impl());
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    std::string label = group.names.empty() ? "#" + std::to_string(i) : "'" + group.names[i] + "'";
    LOOM_CHECK(p.defined(), "[", name_, "] parameter ", label, " of group ", groups_.size(),
               " is an undefined tensor");
    LOOM_CHECK(is_floating(p.dtype()), "[", name_, "] parameter ", label, " has dtype ",
               dtype_name(p.dtype()), "; optimizers update floating tensors only");
    LOOM_CHECK(seen.insert(p.impl()).second, "[", name_, "] parameter ", label,
               " appears in more than one parameter group (or twice in one)");
  }
  groups_.push_back(std::move(group));
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (ParamGroup& group : groups_) {
    for (Tensor& p : group.params) {
      Tensor g = p.grad();
      if (!g.defined()) continue;
      if (set_to_none) {
        p.zero_grad();
      } else {
        g.zero_();
      }
    }
  }
}

ParamState& Optimizer::state_for(const Tensor& param) { return state_[param.impl()]; }

Tensor& Optimizer::buffer(ParamState& state, const std::string& name, const Tensor& param,
                          bool* created) {
  auto it = state.buffers.find(name);
  if (created) *created = it == state.buffers.end();
  if (it != state.buffers.end()) return it->second;
  // Zeros made on the host and uploaded: device data, like every later step's state.
  Tensor zero = zeros(param.shape(), param.dtype(), Device("cpu")).to(param.device());
  return state.buffers.emplace(name, zero).first->second;
}

Tensor Optimizer::grad_of(const Tensor& param) const {
  Tensor g = param.grad();
  if (!g.defined()) return g;
  LOOM_CHECK(g.shape() == param.shape(), "[", name_, "] gradient shape ", to_string(g.shape()),
             " does not match its parameter's ", to_string(param.shape()));
  LOOM_CHECK(g.device() == param.device(), "[", name_, "] gradient on ", g.device().str(),
             " but its parameter on ", param.device().str());
  return g.dtype() == param.dtype() ? g : cast(g, param.dtype());
}

StateDict Optimizer::state_dict() const {
  StateDict out;
  out.optimizer = name_;
  int64_t index = 0;
  for (const ParamGroup& group : groups_) {
    out.group_options.push_back(group.options);
    std::vector<int64_t> ids;
    for (const Tensor& p : group.params) {
      auto it = state_.find(p.impl());
      if (it != state_.end()) out.state[index] = it->second;
      ids.push_back(index++);
    }
    out.group_params.push_back(std::move(ids));
  }
  return out;
}

namespace {

// A new device-data tensor on `param`'s device and dtype holding `src`'s
// values: the loaded state never aliases the tensors it came from.
Tensor fresh_copy(const Tensor& src, const Tensor& param) {
  Tensor host = src.to(Device("cpu"));
  if (host.dtype() != param.dtype()) host = cast(host, param.dtype());
  return from_blob(host.data(), host.shape(), host.dtype(), param.device());
}

}  // namespace

void Optimizer::load_state_dict(const StateDict& state) {
  LOOM_CHECK(state.optimizer == name_, "[optim] state of a ", state.optimizer,
             " optimizer cannot be loaded into ", name_);
  LOOM_CHECK(
      state.group_options.size() == groups_.size() && state.group_params.size() == groups_.size(),
      "[optim] state has ", state.group_options.size(), " parameter groups, ", name_, " has ",
      groups_.size());
  std::vector<const Tensor*> params;
  for (size_t g = 0; g < groups_.size(); ++g) {
    LOOM_CHECK(state.group_params[g].size() == groups_[g].params.size(), "[optim] group ", g,
               " of the state has ", state.group_params[g].size(), " parameters, ", name_, " has ",
               groups_[g].params.size());
    for (size_t i = 0; i < state.group_params[g].size(); ++i) {
      LOOM_CHECK(state.group_params[g][i] == static_cast<int64_t>(params.size()), "[optim] group ",
                 g, " lists parameter index ", state.group_params[g][i], ", expected ",
                 params.size());
      params.push_back(&groups_[g].params[i]);
    }
    const Options& saved = state.group_options[g];
    for (const auto& [key, value] : saved)
      LOOM_CHECK(defaults_.count(key), "[optim] group ", g, " has unknown option '", key, "' for ",
                 name_);
    for (const auto& [key, value] : defaults_)
      LOOM_CHECK(saved.count(key), "[optim] group ", g, " lacks option '", key, "'");
    validate(saved);
  }
  std::map<const TensorImpl*, ParamState> loaded;
  for (const auto& [index, ps] : state.state) {
    LOOM_CHECK(index >= 0 && index < static_cast<int64_t>(params.size()),
               "[optim] state for "
               "parameter ",
               index, " but the optimizer has ", params.size(), " parameters");
    LOOM_CHECK(ps.step >= 0, "[optim] parameter ", index, " has negative step ", ps.step);
    const Tensor& p = *params[index];
    ParamState fresh;
    fresh.step = ps.step;
    for (const auto& [name, t] : ps.buffers) {
      bool known = false;
      for (const std::string& b : buffer_names_) known = known || b == name;
      LOOM_CHECK(known, "[optim] parameter ", index, " has unknown state '", name, "' for ", name_);
      LOOM_CHECK(t.defined() && t.shape() == p.shape(), "[optim] state '", name, "' of parameter ",
                 index, " has shape ", t.defined() ? to_string(t.shape()) : "undefined",
                 ", the parameter ", to_string(p.shape()));
      fresh.buffers.emplace(name, fresh_copy(t, p));
    }
    loaded.emplace(p.impl(), std::move(fresh));
  }
  for (size_t g = 0; g < groups_.size(); ++g) groups_[g].options = state.group_options[g];
  state_ = std::move(loaded);
}

}  // namespace loom::optim
