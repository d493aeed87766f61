// The model registry: one entry per model_type ("gpt2", "bert", "llama",
// "qwen2", "qwen3") naming its config, the transformers architectures it builds and
// the task each one serves. from_pretrained by architecture
// (auto_from_pretrained), `loom train` / `loom evaluate` (which task, which
// class, the default config for --model_type) and `loom generate` (any
// CausalLM) all look models up here, so adding a model is one folder under
// src/nn/models/ and one line in src/nn/model_registry.cpp (docs/models.md).
// A program can register a model of its own, defined outside loom, with
// register_model_type (examples/custom_model.cpp): no edit inside loom.
//
//   const loom::ModelTypeEntry& e = loom::model_type_entry("llama");
//   const loom::ArchitectureEntry* a = e.for_task("causal-lm");   // LlamaForCausalLM
//   auto model = a->make(e.default_config_json());                // random init
//
// Each architecture registers with its task's interface (causal_lm_class<M>,
// masked_lm_class<M>, sequence_classifier_class<M> check at compile time that M
// derives CausalLM / MaskedLM / SequenceClassifier), its config with
// model_type_of<C>, which checks at compile time that C is a loom::ModelConfig
// (loom/model_config.h: sizes, tensors, max positions, LoRA targets), and the
// Trainer and the CLI talk to the interface, never to a model class:
//
//   loom::register_model_type(loom::model_type_of<TinyConfig>(
//       "tiny", {loom::causal_lm_class<TinyForCausalLM>("TinyForCausalLM"),
//                loom::base_model_class<TinyModel>("TinyModel")}));
//
// Configs travel as config.json text between the registry and its users, so
// nothing outside a model's folder names its config struct.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "loom/causal_lm.h"
#include "loom/config.h"
#include "loom/masked_lm.h"
#include "loom/model_config.h"
#include "loom/pretrained_model.h"
#include "loom/sequence_classifier.h"

namespace loom {

/// The task names (run_clm / run_mlm / run_glue) and the interface serving each:
/// CausalLM (loom/causal_lm.h), MaskedLM (loom/masked_lm.h), SequenceClassifier
/// (loom/sequence_classifier.h).
inline constexpr const char* kTaskCausalLM = "causal-lm";
inline constexpr const char* kTaskMaskedLM = "masked-lm";
inline constexpr const char* kTaskTextClassification = "text-classification";
/// Supervised fine-tuning (TRL's SFTTrainer): a job task served by the
/// CausalLM interface (model_task_of), with its own data path (loom/job.h).
inline constexpr const char* kTaskSft = "sft";

/// The model interface a job task needs: causal-lm for sft, else the task itself.
inline std::string model_task_of(const std::string& task) {
  return task == kTaskSft ? std::string(kTaskCausalLM) : task;
}

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
  /// fit in the available memory (check_parameters_fit), before anything is
  /// allocated. Every registered type has a size rule (its ModelConfig).
  std::function<void(const std::string& config_json, const std::string& where,
                     const std::string& prefix, double copies, const std::string& why)>
      check_fits;
  /// from_pretrained's checks before allocation (detail::check_pretrained_sizes)
  /// for checkpoint directory `dir` and its config_json.
  std::function<void(const std::string& dir, const std::string& config_json,
                     const std::string& where)>
      check_pretrained;
  /// peft's default target_modules for this type (ModelConfig's
  /// default_lora_targets()); empty when there is none.
  std::vector<std::string> default_lora_targets;
  /// The transformers class of one repeated layer (the config's optional
  /// layer_class(), e.g. "GPT2Block"); "" when the config has none.
  std::string layer_class;
  /// The class serving `task`, or nullptr.
  const ArchitectureEntry* for_task(const std::string& task) const;
  /// The class named `name`, or nullptr.
  const ArchitectureEntry* find(const std::string& name) const;
  /// The base model class (task ""); every entry has one.
  const ArchitectureEntry& base() const;
  /// The tasks served, in registration order ("causal-lm", ...).
  std::vector<std::string> tasks() const;
};

/// An architecture entry for class M serving `task` ("" for the base model):
/// `make` parses and validates M::Config from config.json text and builds M.
template <typename M>
requires ModelConfig<typename M::Config> && std::is_base_of_v<PretrainedModel, M> ArchitectureEntry
architecture_class(std::string name, std::string task) {
  return {
      std::move(name), std::move(task),
      [](const std::string& json, const std::string& where) -> std::shared_ptr<PretrainedModel> {
        return std::make_shared<M>(M::Config::from_json_string(json, where));
      }};
}
/// The entries per task: the task comes with its interface, checked at compile time.
template <typename M>
ArchitectureEntry causal_lm_class(std::string name) {
  static_assert(std::is_base_of_v<CausalLM, M>, "a causal-lm class derives loom::CausalLM");
  return architecture_class<M>(std::move(name), kTaskCausalLM);
}
template <typename M>
ArchitectureEntry masked_lm_class(std::string name) {
  static_assert(std::is_base_of_v<MaskedLM, M>, "a masked-lm class derives loom::MaskedLM");
  return architecture_class<M>(std::move(name), kTaskMaskedLM);
}
template <typename M>
ArchitectureEntry sequence_classifier_class(std::string name) {
  static_assert(std::is_base_of_v<SequenceClassifier, M>,
                "a text-classification class derives loom::SequenceClassifier");
  return architecture_class<M>(std::move(name), kTaskTextClassification);
}
template <typename M>
ArchitectureEntry base_model_class(std::string name) {
  return architecture_class<M>(std::move(name), "");
}

/// The entry of a model type whose config is C (checked at compile time to be
/// a loom::ModelConfig), with transformers' default config `defaults` and the
/// classes `archs` (one of them the base model, task ""). Everything the entry
/// does with a config (read, validate, size checks) comes from C's members.
template <ModelConfig C>
ModelTypeEntry model_type_of(std::string model_type, std::vector<ArchitectureEntry> archs,
                             C defaults = C()) {
  ModelTypeEntry e;
  e.model_type = std::move(model_type);
  e.architectures = std::move(archs);
  e.default_lora_targets = defaults.default_lora_targets();
  if constexpr (requires {
                  { defaults.layer_class() } -> std::convertible_to<std::string>;
                })
    e.layer_class = defaults.layer_class();
  e.default_config_json = [defaults] { return defaults.to_json_string(); };
  e.read_config = [](const std::string& json, const std::string& where) {
    C c = C::from_json_string(json, where);
    c.validate();
    ConfigSummary s;
    s.common = c;
    s.vocab_size = c.vocab_size;
    s.max_positions = c.max_positions();
    s.json = c.to_json_string();
    return s;
  };
  e.check_fits = [](const std::string& json, const std::string& where, const std::string& prefix,
                    double copies, const std::string& why) {
    check_config_fits(prefix, C::from_json_string(json, where), copies, why);
  };
  e.check_pretrained = [](const std::string& dir, const std::string& json,
                          const std::string& where) {
    detail::check_pretrained_sizes(dir, C::from_json_string(json, where));
  };
  return e;
}

/// Adds `entry` to the registry, after loom's own types, for every lookup
/// below (auto_from_pretrained, `loom`'s job set-up, generate). Register
/// before the first lookup that should see it: at static initialisation
/// (a RegisterModelType object) or at the start of main; registration is
/// serialized but is not meant to race with lookups. Throws loom::Error
/// "[models] ..." for an empty model_type, one already registered, an entry
/// without a base model (task "") or without default_config_json /
/// read_config / check_fits / check_pretrained (build it with model_type_of).
void register_model_type(ModelTypeEntry entry);
/// Registers at static initialisation:
/// `static loom::RegisterModelType kTiny(loom::model_type_of<TinyConfig>(...));`
struct RegisterModelType {
  explicit RegisterModelType(ModelTypeEntry entry) { register_model_type(std::move(entry)); }
};

/// Every registered model type, in registration order (loom's own first). A
/// deque: registering a type leaves references to earlier entries valid.
const std::deque<ModelTypeEntry>& model_types();
/// The entry of `model_type`; throws loom::Error "[models] model_type '<t>'
/// is not supported (gpt2, bert, ...)".
const ModelTypeEntry& model_type_entry(const std::string& model_type);
/// "gpt2, bert, llama, qwen2, qwen3": the registered types, for messages.
std::string model_type_names();
/// "gpt2, llama, qwen2, qwen3": the registered types with a class serving `task`
/// ("causal-lm", ...), for help texts and messages.
std::string model_types_for_task(const std::string& task);
/// The layer_class of the type that registers the class `architecture`
/// ("LlamaForCausalLM" -> "LlamaDecoderLayer"); "" when no registered type
/// has that class or its config declares none.
std::string layer_class_of_architecture(const std::string& architecture);

}  // namespace loom
