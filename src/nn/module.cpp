// nn::Module (loom/nn.h): registration, named traversal in torch's order,
// state_dict / load_state_dict with tie-aware missing keys, train/eval, and
// in-place moves (to(device), to(dtype)) that keep every Tensor handle —
// and so every tie — valid, through lazy::move_in_place (the one path that
// moves a tensor between devices).
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "lazy/dispatch.h"
#include "loom/error.h"
#include "loom/nn.h"

namespace loom::nn {

namespace {

// Moves `t` and its grad onto `device` / `dtype` in place (lazy::move_in_place:
// every handle, and so every tie, follows).
void move_tensor(const Tensor& t, const Device& device, std::optional<DType> dtype) {
  if (!t.defined()) return;
  DType target = dtype && is_floating(t.dtype()) ? *dtype : t.dtype();
  if (t.device() != device || target != t.dtype()) lazy::move_in_place(t, device, target);
  Tensor g = t.grad();
  if (g.defined() && (g.device() != device || g.dtype() != t.dtype()))
    lazy::move_in_place(g, device, t.dtype());
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? ", " : "") + names[i];
  return out;
}

}  // namespace

// ---- StateDict ----

void StateDict::insert(const std::string& name, const Tensor& tensor) {
  LOOM_CHECK(!index_.count(name), "[state_dict] duplicate key '", name, "'");
  index_[name] = entries_.size();
  entries_.emplace_back(name, tensor);
}

const Tensor* StateDict::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Tensor& StateDict::at(const std::string& name) const {
  const Tensor* t = find(name);
  LOOM_CHECK(t != nullptr, "[state_dict] no key '", name, "'");
  return *t;
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : entries_) out.push_back(name);
  return out;
}

// ---- Registration ----

void Module::check_new_name(const std::string& name) const {
  LOOM_CHECK(!name.empty() && name.find('.') == std::string::npos, "[Module] ", type_name(),
             ": invalid name '", name, "' (must be non-empty, without '.')");
  for (const Slot& s : params_)
    LOOM_CHECK(s.name != name, "[Module] ", type_name(), ": '", name, "' is already a parameter");
  for (const Slot& s : buffers_)
    LOOM_CHECK(s.name != name, "[Module] ", type_name(), ": '", name, "' is already a buffer");
  for (const auto& [n, m] : children_)
    LOOM_CHECK(n != name, "[Module] ", type_name(), ": '", name, "' is already a submodule");
}

size_t Module::register_parameter(const std::string& name, Tensor value, bool requires_grad) {
  check_new_name(name);
  LOOM_CHECK(value.defined(), "[Module] ", type_name(), ": parameter '", name, "' is undefined");
  if (requires_grad && !value.requires_grad()) value.requires_grad_(true);
  params_.push_back({name, value, true});
  return params_.size() - 1;
}

size_t Module::register_buffer(const std::string& name, Tensor value, bool persistent) {
  check_new_name(name);
  LOOM_CHECK(value.defined(), "[Module] ", type_name(), ": buffer '", name, "' is undefined");
  buffers_.push_back({name, value, persistent});
  return buffers_.size() - 1;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name);
  LOOM_CHECK(module != nullptr, "[Module] ", type_name(), ": submodule '", name, "' is null");
  children_.emplace_back(name, std::move(module));
}

void Module::remove_child(const std::string& name) {
  for (auto it = children_.begin(); it != children_.end(); ++it) {
    if (it->first != name) continue;
    children_.erase(it);
    return;
  }
  fail("[Module] ", type_name(), ": no submodule '", name, "'");
}

void Module::set_parameter(const std::string& name, const Tensor& value) {
  for (Slot& s : params_) {
    if (s.name != name) continue;
    LOOM_CHECK(value.defined() && value.shape() == s.tensor.shape(), "[Module] ", type_name(),
               ": parameter '", name, "' has shape ", to_string(s.tensor.shape()),
               ", cannot set it to ", value.defined() ? to_string(value.shape()) : "undefined");
    s.tensor = value;
    return;
  }
  fail("[Module] ", type_name(), ": no parameter '", name, "'");
}

void ModuleList::push_back(std::shared_ptr<Module> module) {
  add_child(std::to_string(items_.size()), module);
  items_.push_back(std::move(module));
}

// ---- Traversal ----

void Module::collect_named_parameters(const std::string& prefix,
                                      std::vector<std::pair<std::string, Tensor>>& out) const {
  for (const Slot& s : params_) out.emplace_back(prefix + s.name, s.tensor);
  for (const auto& [name, child] : children_)
    child->collect_named_parameters(prefix + name + ".", out);
}

std::vector<std::pair<std::string, Tensor>> Module::named_parameters(bool remove_duplicate) const {
  std::vector<std::pair<std::string, Tensor>> all;
  collect_named_parameters("", all);
  if (!remove_duplicate) return all;
  std::vector<std::pair<std::string, Tensor>> out;
  std::unordered_set<const TensorImpl*> seen;
  for (auto& entry : all)
    if (seen.insert(entry.second.impl()).second) out.push_back(std::move(entry));
  return out;
}

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

std::vector<std::pair<std::string, Tensor>> Module::named_buffers() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const Slot& s : buffers_) out.emplace_back(s.name, s.tensor);
  for (const auto& [name, child] : children_)
    for (auto& [n, t] : child->named_buffers()) out.emplace_back(name + "." + n, t);
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::pair<std::string, Module*>> Module::named_modules() {
  std::vector<std::pair<std::string, Module*>> out{{"", this}};
  for (const auto& [name, child] : children_)
    for (auto& [n, m] : child->named_modules())
      out.emplace_back(n.empty() ? name : name + "." + n, m);
  return out;
}

void Module::collect_state(const std::string& prefix, StateDict& out) const {
  for (const Slot& s : params_) out.insert(prefix + s.name, s.tensor);
  for (const Slot& s : buffers_)
    if (s.persistent) out.insert(prefix + s.name, s.tensor);
  for (const auto& [name, child] : children_) child->collect_state(prefix + name + ".", out);
}

StateDict Module::state_dict() const {
  StateDict out;
  collect_state("", out);
  return out;
}

LoadResult Module::load_state_dict(const StateDict& dict, bool strict) {
  StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> mismatched;
  std::unordered_set<const TensorImpl*> loaded;
  for (const auto& [name, t] : own) {
    const Tensor* src = dict.find(name);
    if (!src) continue;
    if (!src->defined() || src->shape() != t.shape()) {
      mismatched.push_back(name + " (checkpoint " +
                           (src->defined() ? to_string(src->shape()) : "undefined") + ", model " +
                           to_string(t.shape()) + ")");
      continue;
    }
    loaded.insert(t.impl());
  }
  for (const auto& [name, t] : own)
    if (!dict.contains(name) && !loaded.count(t.impl())) result.missing_keys.push_back(name);
  for (const auto& [name, t] : dict)
    if (!own.contains(name)) result.unexpected_keys.push_back(name);
  bool bad_keys = strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty());
  if (!mismatched.empty() || bad_keys) {
    std::string msg = "[load_state_dict] " + type_name() + ":";
    if (strict && !result.missing_keys.empty())
      msg += " missing keys: " + join(result.missing_keys) + ";";
    if (strict && !result.unexpected_keys.empty())
      msg += " unexpected keys: " + join(result.unexpected_keys) + ";";
    if (!mismatched.empty()) msg += " shape mismatch: " + join(mismatched) + ";";
    msg.pop_back();
    throw Error(msg);
  }
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) {
    if (const Tensor* src = dict.find(name)) {
      Tensor handle = t;  // shares the state: copy_ rebinds it for every holder
      handle.copy_(*src);
    }
  }
  return result;
}

// ---- Mode, placement, gradients ----

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::to(const Device& device) {
  std::unordered_set<const TensorImpl*> done;
  for (auto& [name, t] : named_parameters(false))
    if (done.insert(t.impl()).second) move_tensor(t, device, std::nullopt);
  for (auto& [name, t] : named_buffers())
    if (done.insert(t.impl()).second) move_tensor(t, device, std::nullopt);
}

void Module::to(DType dtype) {
  std::unordered_set<const TensorImpl*> done;
  for (auto& [name, t] : named_parameters(false))
    if (done.insert(t.impl()).second) move_tensor(t, t.device(), dtype);
  for (auto& [name, t] : named_buffers())
    if (done.insert(t.impl()).second) move_tensor(t, t.device(), dtype);
}

void Module::zero_grad() {
  for (auto& [name, t] : named_parameters()) t.zero_grad();
}

Device Module::device() const {
  auto params = named_parameters();
  return params.empty() ? Device("cpu") : params.front().second.device();
}

int64_t Module::num_parameters(bool only_trainable) const {
  int64_t n = 0;
  for (auto& [name, t] : named_parameters())
    if (!only_trainable || t.requires_grad()) n += t.numel();
  return n;
}

}  // namespace loom::nn
