// The model registry (loom/model_registry.h). kModelTypes below is the one
// list of model types: a model's folder provides the classes and the config,
// and one line here registers them. The helpers turn a config struct with
// from_json_string / to_json_string / validate into the registry's text API.
#include "loom/model_registry.h"

#include <type_traits>

#include "loom/bert.h"
#include "loom/causal_lm.h"
#include "loom/error.h"
#include "loom/gpt2.h"
#include "loom/llama.h"
#include "loom/masked_lm.h"
#include "loom/sequence_classifier.h"
#include "nn/models/model_size.h"

namespace loom {

namespace {

int64_t max_positions_of(const GPT2Config& c) { return c.n_positions; }
int64_t max_positions_of(const BertConfig& c) { return c.max_position_embeddings; }
int64_t max_positions_of(const LlamaConfig& c) { return c.max_position_embeddings; }

// The memory check of ModelTypeEntry::check_fits, per config type.
void check_fits_of(const GPT2Config& c, const std::string& prefix, double copies,
                   const std::string& why) {
  models::check_parameters_fit(prefix, models::gpt2_parameter_count(c), models::gpt2_size_text(c),
                               copies, why);
}
void check_fits_of(const BertConfig& c, const std::string& prefix, double copies,
                   const std::string& why) {
  models::check_parameters_fit(prefix, models::bert_parameter_count(c), models::bert_size_text(c),
                               copies, why);
}
void check_fits_of(const LlamaConfig& c, const std::string& prefix, double copies,
                   const std::string& why) {
  models::check_parameters_fit(prefix, models::llama_parameter_count(c), models::llama_size_text(c),
                               copies, why);
}

// An architecture entry for class M, registered under `name`.
template <typename M>
ArchitectureEntry arch(std::string name, std::string task) {
  return {
      std::move(name), std::move(task),
      [](const std::string& json, const std::string& where) -> std::shared_ptr<PretrainedModel> {
        return std::make_shared<M>(M::Config::from_json_string(json, where));
      }};
}

// The entries per task: the task comes with its interface, checked at compile time.
template <typename M>
ArchitectureEntry causal_lm(std::string name) {
  static_assert(std::is_base_of_v<CausalLM, M>, "a causal-lm class derives loom::CausalLM");
  return arch<M>(std::move(name), kTaskCausalLM);
}
template <typename M>
ArchitectureEntry masked_lm(std::string name) {
  static_assert(std::is_base_of_v<MaskedLM, M>, "a masked-lm class derives loom::MaskedLM");
  return arch<M>(std::move(name), kTaskMaskedLM);
}
template <typename M>
ArchitectureEntry sequence_classifier(std::string name) {
  static_assert(std::is_base_of_v<SequenceClassifier, M>,
                "a text-classification class derives loom::SequenceClassifier");
  return arch<M>(std::move(name), kTaskTextClassification);
}
template <typename M>
ArchitectureEntry base_model(std::string name) {
  return arch<M>(std::move(name), "");
}

// A model type whose config struct is C, with defaults from `defaults`.
template <typename C>
ModelTypeEntry type(std::string model_type, C (*defaults)(), std::vector<ArchitectureEntry> archs) {
  ModelTypeEntry e;
  e.model_type = std::move(model_type);
  e.architectures = std::move(archs);
  e.default_config_json = [defaults] { return defaults().to_json_string(); };
  e.read_config = [](const std::string& json, const std::string& where) {
    C c = C::from_json_string(json, where);
    c.validate();
    ConfigSummary s;
    s.common = c;
    s.vocab_size = c.vocab_size;
    s.max_positions = max_positions_of(c);
    s.json = c.to_json_string();
    return s;
  };
  e.check_fits = [](const std::string& json, const std::string& where, const std::string& prefix,
                    double copies, const std::string& why) {
    check_fits_of(C::from_json_string(json, where), prefix, copies, why);
  };
  e.check_pretrained = [](const std::string& dir, const std::string& json,
                          const std::string& where) {
    detail::check_pretrained_sizes(dir, C::from_json_string(json, where));
  };
  return e;
}

template <typename C>
C defaults() {
  return C();
}

// The registry: one line per model type. A function-local static, so a
// caller's static initializer can never see it half-built.
const std::vector<ModelTypeEntry>& registry() {
  static const std::vector<ModelTypeEntry> kModelTypes = {
      type<GPT2Config>(
          "gpt2", defaults<GPT2Config>,
          {causal_lm<GPT2LMHeadModel>("GPT2LMHeadModel"), base_model<GPT2Model>("GPT2Model")}),
      type<BertConfig>(
          "bert", defaults<BertConfig>,
          {masked_lm<BertForMaskedLM>("BertForMaskedLM"),
           sequence_classifier<BertForSequenceClassification>("BertForSequenceClassification"),
           base_model<BertModel>("BertModel")}),
      type<LlamaConfig>(
          "llama", defaults<LlamaConfig>,
          {causal_lm<LlamaForCausalLM>("LlamaForCausalLM"), base_model<LlamaModel>("LlamaModel")}),
      type<LlamaConfig>(
          "qwen2", LlamaConfig::qwen2,
          {causal_lm<LlamaForCausalLM>("Qwen2ForCausalLM"), base_model<LlamaModel>("Qwen2Model")}),
  };
  return kModelTypes;
}

}  // namespace

const ArchitectureEntry* ModelTypeEntry::for_task(const std::string& task) const {
  for (const ArchitectureEntry& a : architectures)
    if (!task.empty() && a.task == task) return &a;
  return nullptr;
}

const ArchitectureEntry* ModelTypeEntry::find(const std::string& name) const {
  for (const ArchitectureEntry& a : architectures)
    if (a.name == name) return &a;
  return nullptr;
}

const ArchitectureEntry& ModelTypeEntry::base() const {
  for (const ArchitectureEntry& a : architectures)
    if (a.task.empty()) return a;
  fail("[models] model_type '", model_type, "' registers no base model");
}

std::vector<std::string> ModelTypeEntry::tasks() const {
  std::vector<std::string> out;
  for (const ArchitectureEntry& a : architectures)
    if (!a.task.empty()) out.push_back(a.task);
  return out;
}

const std::vector<ModelTypeEntry>& model_types() { return registry(); }

bool serves_task(const PretrainedModel& model, const std::string& task) {
  if (task == kTaskCausalLM) return dynamic_cast<const CausalLM*>(&model) != nullptr;
  if (task == kTaskMaskedLM) return dynamic_cast<const MaskedLM*>(&model) != nullptr;
  if (task == kTaskTextClassification)
    return dynamic_cast<const SequenceClassifier*>(&model) != nullptr;
  return task.empty();
}

std::string model_type_names() {
  std::string out;
  for (const ModelTypeEntry& e : registry()) out += (out.empty() ? "" : ", ") + e.model_type;
  return out;
}

const ModelTypeEntry& model_type_entry(const std::string& model_type) {
  for (const ModelTypeEntry& e : registry())
    if (e.model_type == model_type) return e;
  fail("[models] model_type '", model_type, "' is not supported (", model_type_names(), ")");
}

}  // namespace loom
