// LoRA fine-tuning in PEFT's format (Hu et al. 2021, "LoRA: Low-Rank
// Adaptation of Large Language Models"; Hugging Face PEFT's LoraConfig,
// LoraModel and PeftModelForCausalLM). A LoRA layer wraps a frozen linear
// layer W (nn::Linear or GPT-2's nn::Conv1D):
//
//   y = base(x) + lora_B(lora_A(dropout(x))) * (lora_alpha / r)
//
// lora_A is Linear(in, r) initialized as nn.Linear (kaiming-uniform a=sqrt(5)),
// lora_B is Linear(r, out) initialized to zeros, both without bias; dropout
// acts on the adapter's input only (PEFT's LoraLayer.update_layer with
// init_lora_weights=True).
//
//   auto base = std::dynamic_pointer_cast<loom::CausalLM>(loom::auto_from_pretrained(dir));
//   loom::LoraConfig cfg;  cfg.r = 8;  cfg.target_modules = {"q_proj", "v_proj"};
//   auto peft = loom::get_peft_model(base, cfg);   // base weights frozen
//   ... train: only the lora_A / lora_B weights have requires_grad ...
//   peft->save_pretrained("out");   // adapter_config.json + adapter_model.safetensors
//   auto merged = peft->merge_and_unload();          // W += B A * alpha / r
//
// Key names are PEFT's: the PEFT model holds the base model as
// base_model.model, so its state_dict names an adapter weight
// "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", exactly
// the key PEFT writes to adapter_model.safetensors (adapter name "default"
// dropped, as PEFT's get_peft_model_state_dict does).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/causal_lm.h"

namespace loom {

/// PEFT's LoraConfig (the fields loom uses; adapter_config.json's names).
struct LoraConfig {
  int64_t r = 8;              ///< rank of the update
  double lora_alpha = 8;      ///< scaling = lora_alpha / r (PEFT's default 8)
  double lora_dropout = 0.0;  ///< dropout on the adapter input, in training only
  /// Module-name suffixes to wrap (PEFT: a name matches when it equals an
  /// entry or ends in "." + entry), or {"all-linear"}: every Linear/Conv1D
  /// but the output layer (lm_head), which get_peft_model replaces by the
  /// wrapped layers' names, as PEFT does. Empty: PEFT's default for the model
  /// type (default_lora_target_modules).
  std::vector<std::string> target_modules;
  /// True when the wrapped weights are stored [in, out] (GPT-2's Conv1D);
  /// set automatically for such layers, as PEFT does (with its warning).
  bool fan_in_fan_out = false;
  std::string bias = "none";            ///< only "none" is supported
  std::string task_type = "CAUSAL_LM";  ///< only "CAUSAL_LM" is supported
  std::string base_model_name_or_path;  ///< written to adapter_config.json
  /// The base's hub revision (branch, tag or commit) when it is a hub id not
  /// at "main"; "" is written as null (peft's default, the main branch).
  std::string revision;
  bool inference_mode = false;          ///< true in saved configs (PEFT)

  /// lora_alpha / r.
  double scaling() const { return lora_alpha / static_cast<double>(r); }
  /// Throws loom::Error "[LoraConfig] ..." for r < 1, lora_alpha <= 0,
  /// lora_dropout outside [0, 1), bias other than "none", task_type other
  /// than "CAUSAL_LM", or an empty target-module name.
  void validate() const;
  /// adapter_config.json text (PEFT 0.21's fields; unsupported features off).
  std::string to_json() const;
  /// Reads an adapter_config.json. Throws loom::Error "[LoraConfig] <path>:
  /// ..." for a missing/invalid file, peft_type other than "LORA", a
  /// feature loom does not implement turned on (use_dora, use_rslora,
  /// rank_pattern, alpha_pattern, layers_to_transform, modules_to_save,
  /// target_parameters), a regex (string other than "all-linear")
  /// target_modules, or what validate()
  /// rejects.
  static LoraConfig from_json_file(const std::string& path);
};

/// PEFT's TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING for a registered
/// model type, as its config declares it (ModelConfig::default_lora_targets,
/// loom/model_config.h): llama, qwen2, qwen3 -> {q_proj, v_proj}; gpt2 -> {c_attn};
/// bert -> {query, value}. Throws loom::Error "[lora] ..." for a type that is
/// not registered or declares none (pass target_modules).
std::vector<std::string> default_lora_target_modules(const std::string& model_type);

/// True when `module_name` is targeted by `target_modules` (PEFT's
/// check_target_module_exists for a list: equal, or ends in "." + target).
/// "all-linear" is handled by the caller (it needs the module's type).
bool lora_target_matches(const std::string& module_name,
                         const std::vector<std::string>& target_modules);

/// One LoRA adapter: lora_A [r, in], lora_B [out, r] (nn::Linear weights,
/// no bias), lora_dropout; attached to a LinearLayer (nn.h) it adds
/// lora_B(lora_A(dropout(x))) * scaling to the layer's output.
class LoraAdapter : public nn::LinearAdapter {
 public:
  /// Draws lora_A as nn.Linear does (loom's generator) unless a
  /// NoInitGuard is active; lora_B zeros.
  LoraAdapter(int64_t in_features, int64_t out_features, const LoraConfig& config);
  /// x [..., in] -> [..., out].
  Tensor forward(const Tensor& x) const override;
  std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> modules() const override;
  /// B A * scaling, [out, in] (no autograd).
  Tensor delta_weight() const;
  const nn::Linear& lora_A() const { return *lora_A_; }
  const nn::Linear& lora_B() const { return *lora_B_; }

 private:
  std::shared_ptr<nn::Linear> lora_A_, lora_B_;
  std::shared_ptr<nn::Dropout> dropout_;
  double scaling_;
};

/// PEFT's PeftModelForCausalLM over a LoraModel: holds the base model as
/// base_model.model, with LoraAdapters attached to the targeted layers.
/// A CausalLM itself (forward, forward_with_cache, generation), so the
/// Trainer, `loom train` and `loom generate` take it as they take the base.
class PeftModelForCausalLM : public CausalLM {
 public:
  /// PEFT's get_peft_model: validates `config`, fills target_modules
  /// (default for the model type) and base_model_name_or_path (if empty,
  /// from `base_model_name_or_path`), freezes every base parameter
  /// (requires_grad false) and attaches an adapter to each targeted
  /// Linear/Conv1D. Throws loom::Error "[lora] ..." for a null model, no
  /// module matching target_modules (naming them), a targeted module that is
  /// not a Linear/Conv1D, Linear and Conv1D targets mixed, or a targeted
  /// layer that has an adapter already; every check runs before the model
  /// is changed, so after a throw it is as it was (no adapter, same flags).
  PeftModelForCausalLM(std::shared_ptr<CausalLM> model, LoraConfig config);
  /// PEFT's PeftModel.from_pretrained: reads `adapter_dir`/adapter_config.json,
  /// wraps `model` and loads `adapter_dir`/adapter_model.safetensors (every
  /// adapter weight must be present, no other key; shapes checked). With
  /// is_trainable false (PEFT's default) the adapters are frozen too.
  /// Moves the model to `device` in eval mode. Throws loom::Error
  /// "[lora] <adapter_dir>: ..." for missing/invalid files or keys.
  static std::shared_ptr<PeftModelForCausalLM> from_pretrained(std::shared_ptr<CausalLM> model,
                                                               const std::string& adapter_dir,
                                                               const Device& device = {},
                                                               bool is_trainable = false);

  std::string type_name() const override { return "PeftModelForCausalLM"; }
  ModelOutput forward(const ModelInputs& inputs) override { return model_->forward(inputs); }
  ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                 StaticCache& cache, int64_t logits_to_keep = 0) override {
    return model_->forward_with_cache(input_ids, cache_position, cache, logits_to_keep);
  }
  StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const override {
    return model_->new_static_cache(batch_size, max_cache_len);
  }
  int64_t vocab_size() const override { return model_->vocab_size(); }
  int64_t max_positions() const override { return model_->max_positions(); }
  const PretrainedConfig& pretrained_config() const override { return model_->pretrained_config(); }
  /// The base model's (so the Trainer's label shift and messages follow it).
  std::string architecture() const override { return model_->architecture(); }
  std::string base_model_prefix() const override { return "base_model.model"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override { return model_->config_json(); }
  /// Re-initializes the selected adapter weights as at construction
  /// (lora_A as nn.Linear, lora_B zeros); base weights are left alone.
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  /// Writes `dir`/adapter_config.json (inference_mode true) and
  /// `dir`/adapter_model.safetensors (the lora_A / lora_B weights with PEFT's
  /// keys, metadata {"format": "pt"}), each atomically; creates `dir`.
  /// Syncs lazy adapter weights. Throws loom::Error "[save_pretrained] ...".
  void save_pretrained(const std::string& dir,
                       int64_t max_shard_size = kDefaultMaxShardSize) const override;
  /// Loads `dir`/adapter_model.safetensors into the adapters (as from_pretrained).
  void load_saved_weights(const std::string& dir, const Device& device,
                          const PretrainedOptions& options) override;
  std::string saved_weights_file() const override { return "adapter_model.safetensors"; }

  /// PEFT's merge_and_unload: W += B A * scaling (transposed for
  /// fan_in_fan_out layers) in every wrapped layer, adapters detached, each
  /// base parameter's requires_grad as before get_peft_model; returns the
  /// base model. This object is
  /// left without adapters (do not train it further).
  std::shared_ptr<CausalLM> merge_and_unload();
  /// PEFT's unload: detaches the adapters without merging, each base
  /// parameter's requires_grad as before get_peft_model (a parameter the
  /// user had frozen stays frozen); returns the base model.
  std::shared_ptr<CausalLM> unload();
  /// The base model (with the adapters attached).
  CausalLM& base_model() const { return *model_; }
  const LoraConfig& peft_config() const { return config_; }
  /// The dotted names (in the base model) of the wrapped layers, in order.
  const std::vector<std::string>& targeted_module_names() const { return targeted_; }
  /// (PEFT key, tensor) of every adapter weight, in state_dict order.
  std::vector<std::pair<std::string, Tensor>> adapter_state_dict() const;

 private:
  std::vector<std::pair<std::string, nn::LinearLayer*>> find_targets();

  std::shared_ptr<CausalLM> model_;
  LoraConfig config_;
  std::vector<std::string> targeted_;
  std::vector<std::pair<nn::LinearLayer*, std::shared_ptr<LoraAdapter>>> layers_;
  /// Each base parameter and its requires_grad before the constructor froze
  /// it; unload() restores them.
  std::vector<std::pair<Tensor, bool>> base_requires_grad_;
};

/// PEFT's get_peft_model for a causal LM (see the constructor above).
std::shared_ptr<PeftModelForCausalLM> get_peft_model(std::shared_ptr<CausalLM> model,
                                                     LoraConfig config);

/// True when `dir` holds adapter_config.json (a PEFT adapter directory).
bool is_peft_adapter_dir(const std::string& dir);

}  // namespace loom
