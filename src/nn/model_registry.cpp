// The model registry (loom/model_registry.h). kBuiltin below is the one list
// of loom's own model types: a model's folder provides the classes and the
// config (a loom::ModelConfig), and one line here registers them;
// register_model_type appends a program's own types after them.
#include "loom/model_registry.h"

#include <mutex>

#include "loom/bert.h"
#include "loom/error.h"
#include "loom/gpt2.h"
#include "loom/llama.h"

namespace loom {

namespace {

// The registry: one line per model type, then the types a program registers.
// A function-local static, so a caller's static initializer (RegisterModelType)
// can never see it half-built; a deque, so registering keeps references valid.
std::deque<ModelTypeEntry>& model_registry_entries() {
  static std::deque<ModelTypeEntry> kBuiltin = {
      model_type_of<GPT2Config>("gpt2", {causal_lm_class<GPT2LMHeadModel>("GPT2LMHeadModel"),
                                         base_model_class<GPT2Model>("GPT2Model")}),
      model_type_of<BertConfig>("bert", {masked_lm_class<BertForMaskedLM>("BertForMaskedLM"),
                                         sequence_classifier_class<BertForSequenceClassification>(
                                             "BertForSequenceClassification"),
                                         base_model_class<BertModel>("BertModel")}),
      model_type_of<LlamaConfig>("llama", {causal_lm_class<LlamaForCausalLM>("LlamaForCausalLM"),
                                           base_model_class<LlamaModel>("LlamaModel")}),
      model_type_of<LlamaConfig>("qwen2",
                                 {causal_lm_class<LlamaForCausalLM>("Qwen2ForCausalLM"),
                                  base_model_class<LlamaModel>("Qwen2Model")},
                                 LlamaConfig::qwen2()),
      model_type_of<LlamaConfig>("qwen3",
                                 {causal_lm_class<LlamaForCausalLM>("Qwen3ForCausalLM"),
                                  base_model_class<LlamaModel>("Qwen3Model")},
                                 LlamaConfig::qwen3()),
  };
  return kBuiltin;
}

std::mutex& model_registry_mutex() {
  static std::mutex kMutex;
  return kMutex;
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

const std::deque<ModelTypeEntry>& model_types() { return model_registry_entries(); }

void register_model_type(ModelTypeEntry entry) {
  std::lock_guard<std::mutex> lock(model_registry_mutex());
  const std::string& t = entry.model_type;
  LOOM_CHECK(!t.empty(), "[models] register_model_type: the model_type is empty");
  for (const ModelTypeEntry& e : model_registry_entries())
    LOOM_CHECK(e.model_type != t, "[models] register_model_type: model_type '", t,
               "' is already registered (", model_type_names(), ")");
  LOOM_CHECK(
      entry.default_config_json && entry.read_config && entry.check_fits && entry.check_pretrained,
      "[models] register_model_type: model_type '", t,
      "' lacks its config functions (build the entry with model_type_of<Config>)");
  bool has_base = false;
  for (const ArchitectureEntry& a : entry.architectures) {
    LOOM_CHECK(a.make, "[models] register_model_type: ", t, "'s class '", a.name, "' has no make");
    has_base = has_base || a.task.empty();
  }
  LOOM_CHECK(has_base, "[models] register_model_type: model_type '", t,
             "' registers no base model (an architecture with task \"\")");
  model_registry_entries().push_back(std::move(entry));
}

bool serves_task(const PretrainedModel& model, const std::string& task) {
  if (task == kTaskCausalLM) return dynamic_cast<const CausalLM*>(&model) != nullptr;
  if (task == kTaskMaskedLM) return dynamic_cast<const MaskedLM*>(&model) != nullptr;
  if (task == kTaskTextClassification)
    return dynamic_cast<const SequenceClassifier*>(&model) != nullptr;
  return task.empty();
}

std::string model_type_names() {
  std::string out;
  for (const ModelTypeEntry& e : model_registry_entries())
    out += (out.empty() ? "" : ", ") + e.model_type;
  return out;
}

std::string model_types_for_task(const std::string& task) {
  std::string out;
  for (const ModelTypeEntry& e : model_registry_entries())
    if (e.for_task(task) != nullptr) out += (out.empty() ? "" : ", ") + e.model_type;
  return out;
}

std::string layer_class_of_architecture(const std::string& architecture) {
  for (const ModelTypeEntry& e : model_registry_entries())
    if (e.find(architecture) != nullptr) return e.layer_class;
  return "";
}

const ModelTypeEntry& model_type_entry(const std::string& model_type) {
  for (const ModelTypeEntry& e : model_registry_entries())
    if (e.model_type == model_type) return e;
  fail("[models] model_type '", model_type, "' is not supported (", model_type_names(), ")");
}

}  // namespace loom
