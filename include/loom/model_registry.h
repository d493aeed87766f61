// The model registry: one entry per model_type ("gpt2", "bert", "llama",
// "qwen2") naming its config, the transformers architectures it builds and
// the task each one serves. from_pretrained by architecture
// (auto_from_pretrained), `loom train` / `loom evaluate` (which task, which
// class, the default config for --model_type) and `loom generate` (any
// CausalLM) all look models up here, so adding a model is one folder under
// src/nn/models/ and one line in src/nn/model_registry.cpp (docs/models.md).
//
//   const loom::ModelTypeEntry& e = loom::model_type_entry("llama");
//   const loom::ArchitectureEntry* a = e.for_task("causal-lm");   // LlamaForCausalLM
//   auto model = a->make(e.default_config_json());                // random init
//
// Each architecture registers with its task's interface (causal_lm<M>,
// masked_lm<M>, sequence_classifier<M> check at compile time that M derives
// CausalLM / MaskedLM / SequenceClassifier), and the Trainer and the CLI talk
// to the interface, never to a model class.
//
// Configs travel as config.json text between the registry and its users, so
// nothing outside a model's folder names its config struct.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/pretrained_model.h"

namespace loom {

/// The task names (run_clm / run_mlm / run_glue) and the interface serving each:
/// CausalLM (loom/causal_lm.h), MaskedLM (loom/masked_lm.h), SequenceClassifier
/// (loom/sequence_classifier.h).
inline constexpr const char* kTaskCausalLM = "causal-lm";
inline constexpr const char* kTaskMaskedLM = "masked-lm";
inline constexpr const char* kTaskTextClassification = "text-classification";

/// True when `model` implements the interface of `task` (a base model: task "").
bool serves_task(const PretrainedModel& model, const std::string& task);

/// What the CLI needs to know of a parsed, validated config.
struct ConfigSummary {
  PretrainedConfig common;  ///< model_type, architectures, id2label, token ids
  int64_t vocab_size = 0;
  int64_t max_positions = 0;  ///< n_positions / max_position_embeddings
  std::string json;           ///< the config re-written by loom (canonical text)
};

/// One transformers class a model type can build.
struct ArchitectureEntry {
  std::string name;  ///< "LlamaForCausalLM"
  /// "causal-lm", "masked-lm", "text-classification"; "" for the base model.
  std::string task;
  /// Builds the class from config.json text (`where` names it in errors):
  /// random init as transformers', or no init inside nn::NoInitGuard.
  /// Throws loom::Error "[config] ..." / "[<Config>] ..." for a bad config.
  std::function<std::shared_ptr<PretrainedModel>(const std::string& config_json,
                                                 const std::string& where)>
      make;
};

struct ModelTypeEntry {
  std::string model_type;
  /// The classes, the base model (task "") included.
  std::vector<ArchitectureEntry> architectures;
  /// transformers' default config of this type as config.json text.
  std::function<std::string()> default_config_json;
  /// Parses and validates config.json text; throws loom::Error as make does.
  std::function<ConfigSummary(const std::string& config_json, const std::string& where)>
      read_config;

  /// Throws loom::Error "<prefix> <sizes> make <N> parameters: ... more than
  /// the <M> of memory available" when `copies` f32 copies of the parameters
  /// of config_json (weights, gradients, optimizer state: `why`) would not
  /// fit in the available memory (nn/models/model_size.h), before anything is
  /// allocated. Every registered type has a size rule (model_size.h).
  std::function<void(const std::string& config_json, const std::string& where,
                     const std::string& prefix, double copies, const std::string& why)>
      check_fits;
  /// from_pretrained's checks before allocation (detail::check_pretrained_sizes)
  /// for checkpoint directory `dir` and its config_json.
  std::function<void(const std::string& dir, const std::string& config_json,
                     const std::string& where)>
      check_pretrained;
  /// The class serving `task`, or nullptr.
  const ArchitectureEntry* for_task(const std::string& task) const;
  /// The class named `name`, or nullptr.
  const ArchitectureEntry* find(const std::string& name) const;
  /// The base model class (task ""); every entry has one.
  const ArchitectureEntry& base() const;
  /// The tasks served, in registration order ("causal-lm", ...).
  std::vector<std::string> tasks() const;
};

/// Every registered model type, in registration order.
const std::vector<ModelTypeEntry>& model_types();
/// The entry of `model_type`; throws loom::Error "[models] model_type '<t>'
/// is not supported (gpt2, bert, ...)".
const ModelTypeEntry& model_type_entry(const std::string& model_type);
/// "gpt2, bert, llama, qwen2": the registered types, for messages.
std::string model_type_names();

}  // namespace loom
