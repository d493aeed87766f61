// The model side of a job (loom/job.h): the config (from
// model_name_or_path or model_type + config_overrides), the task, and the
// model object, all through the model registry (loom/model_registry.h), as run_clm / run_mlm /
// run_glue build them (AutoConfig, config.update_from_string, from_pretrained or from_config).
// Assumes the configs' JSON round trip keeps every field (loom/config.h).
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/edit_distance.h"
#include "core/parse_number.h"
#include "io/json_parse.h"
#include "loom/error.h"
#include "loom/hub.h"
#include "loom/job.h"
#include "loom/model_registry.h"
#include "loom/models.h"
#include "loom/nn.h"
#include "train/ddp.h"
#include "train/fsdp_options.h"

namespace loom {
namespace fs = std::filesystem;

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// `text` as a JSON value of the same kind as `old` (the field's current value).
nlohmann::json typed_value(const nlohmann::json& old, const std::string& key,
                           const std::string& text) {
  auto bad = [&](const char* type) {
    fail("[config_overrides] ", key, ": expected ", type, ", got '", text, "'");
  };
  if (old.is_boolean()) {
    if (text == "true" || text == "True") return true;
    if (text == "false" || text == "False") return false;
    bad("true or false");
  }
  if (old.is_number_integer() || old.is_number_unsigned()) {
    NumberError why = NumberError::kNone;
    std::optional<int64_t> v = parse_decimal_int(text, &why);
    if (!v) bad(int_expectation(why));
    return *v;
  }
  if (old.is_number_float()) {
    NumberError why = NumberError::kNone;
    std::optional<double> v = parse_decimal_double(text, &why);
    if (!v) bad(double_expectation(why));
    if (!std::isfinite(*v)) bad("a finite number");
    return *v;
  }
  if (old.is_string()) return text;
  if (old.is_null()) {
    if (text == "null" || text == "None") return nullptr;
    io::check_json_depth(text, "[config_overrides] " + key);
    nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    return parsed.is_number() ? parsed : nlohmann::json(text);
  }
  fail("[config_overrides] ", key, ": cannot override a field of JSON type ", old.type_name());
}

// The task of a model that names none: its architecture's (a classifier
// checkpoint -> text-classification), else the model type's first task.
std::string default_task(const ModelTypeEntry& entry, const std::vector<std::string>& archs) {
  for (const std::string& a : archs)
    if (const ArchitectureEntry* e = entry.find(a); e && !e->task.empty()) return e->task;
  return entry.tasks().front();
}

// A checkpoint saved from a class of the text-classification task (the registry says which).
bool is_classifier(const ModelTypeEntry& entry, const PretrainedConfig& cfg) {
  for (const std::string& a : cfg.architectures)
    if (const ArchitectureEntry* e = entry.find(a); e && e->task == kTaskTextClassification)
      return true;
  return false;
}

// Class names of a fine-tuned classifier (not transformers' LABEL_i placeholders).
std::vector<std::string> trained_label_names(const ModelTypeEntry& entry,
                                             const PretrainedConfig& cfg) {
  bool classifier = is_classifier(entry, cfg);
  std::vector<std::string> names;
  bool placeholders = true;
  for (const auto& [id, name] : cfg.id2label) {
    names.push_back(name);
    placeholders = placeholders && name == "LABEL_" + std::to_string(id);
  }
  return classifier && !placeholders ? names : std::vector<std::string>{};
}

void plan_pretrained(ModelPlan& plan, const JobArguments& job) {
  std::string dir = job.model_name_or_path;
  LOOM_CHECK(job.config_overrides.empty(),
             "[model] --config_overrides applies to --model_type (from scratch), not to "
             "--model_name_or_path");
  LOOM_CHECK(fs::is_directory(dir), "[model] --model_name_or_path '", dir, "': no such directory");
  if (is_peft_adapter_dir(dir)) {
    // A LoRA adapter (loom/lora.h): the model is its base plus the adapter,
    // as auto_from_pretrained (and transformers' from_pretrained) read it.
    plan.adapter_dir = dir;
    const LoraConfig adapter =
        LoraConfig::from_json_file((fs::path(dir) / "adapter_config.json").string());
    dir = resolve_adapter_base(dir, adapter.base_model_name_or_path, adapter.revision);
  }
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  LOOM_CHECK(fs::exists(cfg_path), "[model] ", cfg_path, ": no such file");
  plan.model_type = read_model_type(cfg_path);
  plan.pretrained_dir = dir;
  bool known = false;
  for (const ModelTypeEntry& e : model_types()) known = known || e.model_type == plan.model_type;
  if (!known)
    fail("[model] ", cfg_path, ": model_type '", plan.model_type, "' is not supported (",
         model_type_names(), ")");
  std::ifstream in(cfg_path, std::ios::binary);
  plan.config_json.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  plan.config_where = cfg_path;
}

// The model type's default config with the tokenizer's vocabulary and its
// pad / bos / eos ids where the config has those fields (run_clm / run_mlm
// build the config from the tokenizer the same way: LlamaConfig's default
// bos 1 / eos 2 are other tokens in most vocabularies), then --config_overrides.
void plan_from_scratch(ModelPlan& plan, const JobArguments& job, const Tokenizer& tokenizer) {
  plan.model_type = job.model_type;
  nlohmann::json j = nlohmann::json::parse(model_type_entry(plan.model_type).default_config_json());
  j["vocab_size"] = tokenizer.vocab_size();
  if (auto pad = tokenizer.pad_token_id();
      pad && j.contains("pad_token_id") && !j["pad_token_id"].is_null())
    j["pad_token_id"] = *pad;
  if (auto bos = tokenizer.bos_token_id(); bos && j.contains("bos_token_id"))
    j["bos_token_id"] = *bos;
  if (auto eos = tokenizer.eos_token_id(); eos && j.contains("eos_token_id"))
    j["eos_token_id"] = *eos;
  plan.config_json = apply_config_overrides(j.dump(), job.config_overrides);
  plan.config_where = "--config_overrides";
}

// run_clm's --config_name without --model_name_or_path: the config of a
// directory (or hub id) or a config.json file, a model built from it with
// fresh weights, then --config_overrides.
void plan_from_config(ModelPlan& plan, const JobArguments& job) {
  std::string cfg_path = job.config_name;
  if (!fs::is_regular_file(cfg_path))
    cfg_path =
        (fs::path(resolve_model_dir(job.config_name, job.revision, "[model] --config_name")) /
         "config.json")
            .string();
  LOOM_CHECK(fs::is_regular_file(cfg_path), "[model] --config_name: ", cfg_path, ": no such file");
  plan.model_type = read_model_type(cfg_path);
  bool known = false;
  for (const ModelTypeEntry& e : model_types()) known = known || e.model_type == plan.model_type;
  if (!known)
    fail("[model] --config_name ", cfg_path, ": model_type '", plan.model_type,
         "' is not supported (", model_type_names(), ")");
  std::ifstream in(cfg_path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  plan.config_json = apply_config_overrides(text, job.config_overrides);
  plan.config_where = cfg_path;
}

}  // namespace

std::string apply_config_overrides(const std::string& config_json, const std::string& overrides) {
  nlohmann::json j = nlohmann::json::parse(config_json);
  std::stringstream items(overrides);
  std::string item;
  while (std::getline(items, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    LOOM_CHECK(eq != std::string::npos, "[config_overrides] expected key=value, got '", item, "'");
    std::string key = trim(item.substr(0, eq));
    std::string value = trim(item.substr(eq + 1));
    if (!j.contains(key)) {
      std::vector<std::string> keys;
      for (const auto& [k, v] : j.items()) keys.push_back(k);
      if (std::string best = closest_name(key, keys); !best.empty())
        fail("[config_overrides] unknown key '", key, "' (did you mean '", best, "'?)");
      fail("[config_overrides] unknown key '", key, "'");
    }
    j[key] = typed_value(j[key], key, value);
  }
  return j.dump();
}

ModelPlan plan_model(const JobArguments& job, const Tokenizer& tokenizer) {
  const int given =
      !job.model_name_or_path.empty() + !job.model_type.empty() + !job.config_name.empty();
  LOOM_CHECK(given > 0,
             "[model] give --model_name_or_path DIR (pretrained), --model_type TYPE (from "
             "scratch: ",
             model_type_names(), ") or --config_name DIR (from scratch with that config)");
  LOOM_CHECK(given == 1,
             "[model] give only one of --model_name_or_path, --model_type and --config_name");
  ModelPlan plan;
  if (!job.model_name_or_path.empty()) {
    plan_pretrained(plan, job);
  } else if (!job.config_name.empty()) {
    plan_from_config(plan, job);
  } else {
    plan_from_scratch(plan, job, tokenizer);
  }
  const ModelTypeEntry& entry = model_type_entry(plan.model_type);
  ConfigSummary summary = entry.read_config(plan.config_json, plan.config_where);
  const PretrainedConfig& common = summary.common;
  plan.max_positions = summary.max_positions;
  int64_t vocab = summary.vocab_size;
  plan.task = job.task.empty() ? default_task(entry, common.architectures) : job.task;
  std::vector<std::string> tasks = entry.tasks();
  if (!entry.for_task(model_task_of(plan.task))) {
    std::string can;
    for (const std::string& t : tasks) can += (can.empty() ? "" : ", ") + t;
    fail("[model] --task ", plan.task, " is not a task of model_type '", plan.model_type,
         "' (it does ", can, ")");
  }
  LOOM_CHECK(tokenizer.vocab_size() <= vocab, "[model] the tokenizer has ", tokenizer.vocab_size(),
             " tokens but the model's vocab_size is ", vocab);
  plan.label_names = trained_label_names(entry, common);
  if (is_classifier(entry, common)) plan.num_labels = static_cast<int64_t>(common.id2label.size());
  return plan;
}

void check_training_fits(const ModelPlan& plan, const TrainingArguments& args) {
  const bool sgd = args.optim == "sgd";
  // Copies per rank of the chosen mode (train/fsdp_options.h: sharded, less).
  const train::FsdpMode mode = train::parse_fsdp_mode(args.fsdp);
  const double copies =
      train::fsdp_memory_per_rank(mode, train::ddp_world_size(), 1, 0, sgd ? 0 : 2).total() / 4;
  std::string why = sgd ? "weights and gradients" : "weights, gradients and AdamW's two moments";
  if (mode != train::FsdpMode::off)
    why += std::string(" per rank with --fsdp ") + train::fsdp_mode_name(mode);
  model_type_entry(plan.model_type)
      .check_fits(plan.config_json, plan.config_where, "[loom train]", copies, why);
}

std::shared_ptr<PretrainedModel> build_model(const ModelPlan& plan, const JobData& data,
                                             uint64_t seed) {
  manual_seed(seed);  // run_clm calls set_seed before building the model
  const ArchitectureEntry& arch =
      *model_type_entry(plan.model_type).for_task(model_task_of(plan.task));
  std::string config = plan.config_json;
  if (plan.task == kTaskTextClassification) {  // the head follows the data's labels
    nlohmann::json j = nlohmann::json::parse(config);
    int64_t n =
        data.label_names.empty() ? data.num_labels : static_cast<int64_t>(data.label_names.size());
    bool keep = data.label_names.empty() && j.contains("id2label") &&
                static_cast<int64_t>(j["id2label"].size()) == n;
    if (!keep) {
      nlohmann::json labels = nlohmann::json::object();
      for (int64_t i = 0; i < n; ++i)
        labels[std::to_string(i)] = data.label_names.empty()
                                        ? "LABEL_" + std::to_string(i)
                                        : data.label_names[static_cast<size_t>(i)];
      j["id2label"] = labels;
      j.erase("label2id");
      j.erase("num_labels");
    }
    config = j.dump();
  }
  std::shared_ptr<PretrainedModel> m;
  if (plan.pretrained_dir.empty()) {
    m = arch.make(config, plan.config_where);
  } else {
    model_type_entry(plan.model_type)
        .check_pretrained(plan.pretrained_dir, config, plan.config_where);  // before allocating
    {
      nn::NoInitGuard no_init;
      m = arch.make(config, plan.config_where);
    }
    detail::load_pretrained_weights(*m, plan.pretrained_dir, Device("cpu"), {});
  }
  // From here on the job talks to the task's interface (the registry guarantees it).
  LOOM_CHECK(serves_task(*m, model_task_of(plan.task)), "[model] ", m->architecture(),
             " does not implement the interface of task ", plan.task);
  if (auto* cls = dynamic_cast<SequenceClassifier*>(m.get()))
    LOOM_CHECK(cls->num_labels() >= data.num_labels, "[model] ", m->architecture(), " has ",
               cls->num_labels(), " labels but the data has ", data.num_labels);
  if (plan.adapter_dir.empty()) return m;
  auto lm = std::dynamic_pointer_cast<CausalLM>(m);
  LOOM_CHECK(lm != nullptr, "[model] ", plan.adapter_dir, ": a LoRA adapter needs a causal LM, ",
             "got ", m->architecture());
  return PeftModelForCausalLM::from_pretrained(lm, plan.adapter_dir, Device("cpu"),
                                               /*is_trainable=*/true);
}

}  // namespace loom
