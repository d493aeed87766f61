// PeftModelForCausalLM (loom/lora.h): get_peft_model (freeze the base,
// attach a LoraAdapter to each targeted Linear/Conv1D), the adapter's files
// in PEFT's layout (peft/peft_model.py save_pretrained / from_pretrained,
// peft/utils/save_and_load.py get_peft_model_state_dict: only lora_A/lora_B
// weights, adapter name dropped), and merge_and_unload. Assumes the base
// model is held as child base_model -> model, so state_dict() names are
// PEFT's keys as they are.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>
#include <unordered_set>

#include "io/config_json.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/lora.h"
#include "loom/safetensors.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

constexpr const char* kAdapterConfigFile = "adapter_config.json";
constexpr const char* kAdapterWeightsFile = "adapter_model.safetensors";

// PEFT's LoraModel: the module that holds the base model as "model".
class LoraModelHolder : public nn::Module {
 public:
  std::string type_name() const override { return "LoraModel"; }
};

bool is_adapter_key(const std::string& key) {
  return key.find(".lora_A.") != std::string::npos || key.find(".lora_B.") != std::string::npos;
}

bool is_output_layer(const std::string& name) {
  return name == "lm_head" ||
         (name.size() > 8 && name.compare(name.size() - 8, 8, ".lm_head") == 0);
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Every entry of target_modules names at least one layer (docs/lora.md; PEFT
// itself only refuses a list that matches nothing at all), and the rank fits
// each layer: r <= min(in_features, out_features), checked before any
// adapter weight is allocated (a rank of 10^9 was a bad_alloc, 10^6 on a
// 32-wide layer a 448 MB adapter).
void check_lora_targets(const std::vector<std::pair<std::string, nn::LinearLayer*>>& targets,
                        bool all_linear, const LoraConfig& config, const std::string& arch) {
  if (!all_linear)
    for (const std::string& t : config.target_modules) {
      bool used = false;
      for (const auto& [name, layer] : targets) used = used || lora_target_matches(name, {t});
      LOOM_CHECK(used, "[lora] target module '", t, "' matches no layer of the base model ", arch,
                 " (target_modules: ", joined(config.target_modules), ")");
    }
  for (const auto& [name, layer] : targets) {
    const int64_t width = std::min(layer->in_features(), layer->out_features());
    LOOM_CHECK(config.r <= width, "[lora] r ", config.r, " is larger than target layer '", name,
               "' (in_features ", layer->in_features(), ", out_features ", layer->out_features(),
               "): the rank must be at most min(in, out) = ", width);
  }
}

// Resuming a checkpoint's adapter onto another base model: PEFT (and the
// Trainer's resume, PeftModel.load_adapter) load the weights whenever the
// shapes fit, without a word; loom says so, naming both bases.
void warn_if_other_base(const std::string& saved, const std::string& mine, const std::string& dir) {
  if (saved.empty() || mine.empty()) return;
  std::error_code ec;
  fs::path a = fs::weakly_canonical(saved, ec), b = fs::weakly_canonical(mine, ec);
  if (ec || a == b) return;
  if (dist::rank() == 0)
    std::cerr << "[lora] warning: " << dir << "/" << kAdapterConfigFile
              << " is an adapter of base model '" << saved << "', loaded here onto base model '"
              << mine << "' (PEFT loads it as long as the shapes fit)\n";
}

}  // namespace

// The layers config_.target_modules names, validated: each a Linear/Conv1D
// without an adapter, at least one, not Linear and Conv1D mixed. Changes
// nothing in the model (so a throw leaves it as it was); with "all-linear"
// replaces config_.target_modules by the layers' own names, as PEFT does.
std::vector<std::pair<std::string, nn::LinearLayer*>> PeftModelForCausalLM::find_targets() {
  const bool all_linear =
      config_.target_modules.size() == 1 && config_.target_modules[0] == "all-linear";
  std::vector<std::pair<std::string, nn::LinearLayer*>> targets;
  bool any_conv = false, any_linear = false;
  for (auto& [name, m] : model_->named_modules()) {
    auto* layer = dynamic_cast<nn::LinearLayer*>(m);
    bool hit = all_linear ? layer != nullptr && !is_output_layer(name)
                          : !name.empty() && lora_target_matches(name, config_.target_modules);
    if (!hit) continue;
    LOOM_CHECK(layer != nullptr, "[lora] target module '", name, "' is a ", m->type_name(),
               ", not a Linear or Conv1D");
    LOOM_CHECK(layer->adapter() == nullptr, "[lora] module '", name, "' has an adapter already");
    (layer->fan_in_fan_out() ? any_conv : any_linear) = true;
    targets.emplace_back(name, layer);
  }
  if (all_linear) {
    // PEFT expands the shorthand to the layers' own names (sorted here), and saves those.
    std::set<std::string> names;
    for (const auto& [n, layer] : targets) names.insert(n.substr(n.rfind('.') + 1));
    config_.target_modules.assign(names.begin(), names.end());
  }
  LOOM_CHECK(!targets.empty(), "[lora] target modules {", joined(config_.target_modules),
             "} not found in the base model ", model_->architecture());
  check_lora_targets(targets, all_linear, config_, model_->architecture());
  LOOM_CHECK(!(any_conv && any_linear), "[lora] target modules mix Linear and Conv1D layers");
  if (any_conv != config_.fan_in_fan_out) {
    // PEFT warns and sets fan_in_fan_out from the layer type (data parallel:
    // every rank wraps the same model, rank 0 says it).
    if (dist::rank() == 0)
      std::cerr << "[lora] warning: fan_in_fan_out set to " << (any_conv ? "True" : "False")
                << " for " << (any_conv ? "Conv1D" : "Linear") << " target modules\n";
    config_.fan_in_fan_out = any_conv;
  }
  return targets;
}

PeftModelForCausalLM::PeftModelForCausalLM(std::shared_ptr<CausalLM> model, LoraConfig config)
    : model_(std::move(model)), config_(std::move(config)) {
  LOOM_CHECK(model_ != nullptr, "[lora] get_peft_model: model is null");
  if (config_.target_modules.empty())
    config_.target_modules = default_lora_target_modules(model_->pretrained_config().model_type);
  config_.validate();
  const Device device = model_->device();
  // Every check first: a bad target leaves the caller's model untouched.
  std::vector<std::pair<std::string, nn::LinearLayer*>> targets = find_targets();
  for (const auto& [name, t] : model_->named_parameters(false)) {
    base_requires_grad_.emplace_back(t, t.requires_grad());
    Tensor handle = t;
    handle.requires_grad_(false);
  }
  try {
    for (const auto& [name, layer] : targets) {
      auto adapter =
          std::make_shared<LoraAdapter>(layer->in_features(), layer->out_features(), config_);
      layer->set_adapter(adapter);
      layers_.emplace_back(layer, adapter);
      targeted_.push_back(name);
    }
    auto holder = std::make_shared<LoraModelHolder>();
    holder->register_module("model", model_);
    register_module("base_model", holder);
    to(device);
    train(model_->is_training());
  } catch (...) {
    unload();  // adapters off, the base's requires_grad flags back
    throw;
  }
}

std::shared_ptr<PeftModelForCausalLM> get_peft_model(std::shared_ptr<CausalLM> model,
                                                     LoraConfig config) {
  return std::make_shared<PeftModelForCausalLM>(std::move(model), std::move(config));
}

std::vector<std::pair<std::string, Tensor>> PeftModelForCausalLM::adapter_state_dict() const {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& [name, t] : state_dict())
    if (is_adapter_key(name)) out.emplace_back(name, t);
  return out;
}

void PeftModelForCausalLM::init_weights(const std::function<bool(const std::string&)>& select) {
  for (const auto& [name, t] : adapter_state_dict()) {
    if (!select(name)) continue;
    if (name.find(".lora_B.") != std::string::npos) {
      nn::init_constant_(t, 0.0);
    } else {
      const double bound = 1.0 / std::sqrt(static_cast<double>(t.size(1)));
      nn::init_uniform_(t, -bound, bound);
    }
  }
}

void PeftModelForCausalLM::save_pretrained(const std::string& dir, int64_t) const {
  std::vector<std::pair<std::string, Tensor>> sd = adapter_state_dict();
  std::vector<Tensor> lazy_tensors;
  for (const auto& [name, t] : sd)
    if (t.device().is_lazy()) lazy_tensors.push_back(t);
  if (!lazy_tensors.empty()) lazy::sync(lazy_tensors);
  std::vector<safetensors::TensorRef> refs;
  for (const auto& [name, t] : sd) refs.push_back({name, t.dtype(), t.shape(), t.data()});
  std::error_code ec;
  fs::create_directories(dir, ec);
  LOOM_CHECK(!ec && fs::is_directory(dir, ec), "[save_pretrained] ", dir,
             ": cannot create directory (", ec.message(), ")");
  safetensors::save((fs::path(dir) / kAdapterWeightsFile).string(), refs, {{"format", "pt"}});
  LoraConfig saved = config_;
  saved.inference_mode = true;
  io::write_text_atomic((fs::path(dir) / kAdapterConfigFile).string(), saved.to_json());
}

void PeftModelForCausalLM::load_saved_weights(const std::string& dir, const Device& device,
                                              const PretrainedOptions&) {
  const std::string path = (fs::path(dir) / kAdapterWeightsFile).string();
  std::error_code ec;
  if (fs::is_regular_file(fs::path(dir) / kAdapterConfigFile, ec))
    warn_if_other_base(LoraConfig::from_json_file((fs::path(dir) / kAdapterConfigFile).string())
                           .base_model_name_or_path,
                       config_.base_model_name_or_path, dir);
  LOOM_CHECK(fs::is_regular_file(path, ec), "[lora] ", dir, ": no ", kAdapterWeightsFile);
  safetensors::File file = safetensors::File::open(path);
  std::vector<std::pair<std::string, Tensor>> own = adapter_state_dict();
  std::unordered_set<std::string> expected;
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, t] : own) {
    expected.insert(name);
    const safetensors::TensorInfo* info = file.find(name);
    if (!info) {
      missing.push_back(name);
    } else if (info->shape != t.shape()) {
      mismatched.push_back(name + " (file " + to_string(info->shape) + ", model " +
                           to_string(t.shape()) + ")");
    } else {
      LOOM_CHECK(is_floating(info->dtype), "[lora] ", path, ": '", name, "' has dtype ",
                 dtype_name(info->dtype), ", expected a floating dtype");
    }
  }
  for (const auto& info : file.tensors())
    if (!expected.count(info.name)) unexpected.push_back(info.name);
  LOOM_CHECK(missing.empty() && unexpected.empty() && mismatched.empty(), "[lora] ", path,
             ": does not fit the adapter of ", joined(config_.target_modules),
             missing.empty() ? "" : "; missing keys: " + joined(missing),
             unexpected.empty() ? "" : "; unexpected keys: " + joined(unexpected),
             mismatched.empty() ? "" : "; shape mismatch: " + joined(mismatched));
  NoGradGuard no_grad;
  for (const auto& [name, t] : own) {
    const safetensors::TensorInfo& info = file.at(name);
    std::span<const std::byte> bytes = file.data(info);
    Tensor handle = t;
    handle.copy_(from_blob(bytes.data(), info.shape, info.dtype));
  }
  to(device);
}

std::shared_ptr<PeftModelForCausalLM> PeftModelForCausalLM::from_pretrained(
    std::shared_ptr<CausalLM> model, const std::string& adapter_dir, const Device& device,
    bool is_trainable) {
  LoraConfig config =
      LoraConfig::from_json_file((fs::path(adapter_dir) / kAdapterConfigFile).string());
  config.inference_mode = !is_trainable;
  std::shared_ptr<PeftModelForCausalLM> peft;
  {
    nn::NoInitGuard no_init;  // every adapter weight comes from the file
    peft = std::make_shared<PeftModelForCausalLM>(std::move(model), config);
  }
  try {
    peft->load_saved_weights(adapter_dir, device, {});
  } catch (const Error& e) {
    // Keep the base model usable: the adapters go again.
    peft->unload();
    throw;
  }
  if (!is_trainable)
    for (const auto& [name, t] : peft->adapter_state_dict()) {
      Tensor handle = t;
      handle.requires_grad_(false);
    }
  peft->to(device);
  peft->eval();
  return peft;
}

std::shared_ptr<CausalLM> PeftModelForCausalLM::merge_and_unload() {
  {
    NoGradGuard no_grad;
    for (auto& [layer, adapter] : layers_) {
      Tensor delta = adapter->delta_weight();  // [out, in]
      if (layer->fan_in_fan_out()) delta = transpose(delta, 0, 1);
      Tensor w = layer->weight();
      w.copy_(w + delta);
    }
  }
  return unload();
}

std::shared_ptr<CausalLM> PeftModelForCausalLM::unload() {
  for (auto& [layer, adapter] : layers_) layer->remove_adapter();
  layers_.clear();
  targeted_.clear();
  // Each base parameter's requires_grad as it was before get_peft_model
  // froze it (PEFT does not touch the base's flags when it unloads).
  for (auto& [t, requires_grad] : base_requires_grad_) t.requires_grad_(requires_grad);
  base_requires_grad_.clear();
  return model_;
}

}  // namespace loom
