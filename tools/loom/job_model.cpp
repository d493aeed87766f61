// The model side of a `loom train` / `loom evaluate` job: the config (from
// model_name_or_path or model_type + config_overrides), the task, and the
// model object, as run_clm / run_mlm / run_glue build them (AutoConfig,
// config.update_from_string, from_pretrained or from_config).
// Assumes the configs' JSON round trip keeps every field (loom/config.h).
#include <cmath>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/parse_number.h"
#include "flags.h"
#include "io/json_parse.h"
#include "job.h"
#include "loom/error.h"
#include "loom/models.h"
#include "loom/nn.h"
#include "nn/models/model_size.h"

namespace loom::cli {
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

std::string default_task(const std::string& model_type, const std::vector<std::string>& archs) {
  if (model_type == "gpt2") return "causal-lm";
  for (const std::string& a : archs)
    if (a.find("ForSequenceClassification") != std::string::npos) return "text-classification";
  return "masked-lm";
}

bool is_classifier(const PretrainedConfig& cfg) {
  for (const std::string& a : cfg.architectures)
    if (a.find("ForSequenceClassification") != std::string::npos) return true;
  return false;
}

// Class names of a fine-tuned classifier (not transformers' LABEL_i placeholders).
std::vector<std::string> trained_label_names(const PretrainedConfig& cfg) {
  bool classifier = is_classifier(cfg);
  std::vector<std::string> names;
  bool placeholders = true;
  for (const auto& [id, name] : cfg.id2label) {
    names.push_back(name);
    placeholders = placeholders && name == "LABEL_" + std::to_string(id);
  }
  return classifier && !placeholders ? names : std::vector<std::string>{};
}

void plan_pretrained(ModelPlan& plan, const JobArgs& job) {
  const std::string& dir = job.model_name_or_path;
  LOOM_CHECK(job.config_overrides.empty(),
             "[model] --config_overrides applies to --model_type (from scratch), not to "
             "--model_name_or_path");
  LOOM_CHECK(fs::is_directory(dir), "[model] --model_name_or_path '", dir, "': no such directory");
  const std::string cfg_path = (fs::path(dir) / "config.json").string();
  LOOM_CHECK(fs::exists(cfg_path), "[model] ", cfg_path, ": no such file");
  plan.model_type = read_model_type(cfg_path);
  plan.pretrained_dir = dir;
  if (plan.model_type == "gpt2") {
    plan.config = GPT2Config::from_json_file(cfg_path);
  } else if (plan.model_type == "bert") {
    plan.config = BertConfig::from_json_file(cfg_path);
  } else {
    fail("[model] ", cfg_path, ": model_type '", plan.model_type,
         "' is not supported (gpt2, bert)");
  }
}

void plan_from_scratch(ModelPlan& plan, const JobArgs& job, const Tokenizer& tokenizer) {
  plan.model_type = job.model_type;
  const std::string where = "--config_overrides";
  if (plan.model_type == "gpt2") {
    GPT2Config c;
    c.vocab_size = tokenizer.vocab_size();
    plan.config = GPT2Config::from_json_string(
        apply_config_overrides(c.to_json_string(), job.config_overrides), where);
  } else {
    BertConfig c;
    c.vocab_size = tokenizer.vocab_size();
    if (auto pad = tokenizer.pad_token_id()) c.pad_token_id = *pad;
    plan.config = BertConfig::from_json_string(
        apply_config_overrides(c.to_json_string(), job.config_overrides), where);
  }
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

ModelPlan plan_model(const JobArgs& job, const Tokenizer& tokenizer) {
  LOOM_CHECK(!(job.model_name_or_path.empty() && job.model_type.empty()),
             "[model] give --model_name_or_path DIR (pretrained) or --model_type gpt2|bert (from "
             "scratch)");
  LOOM_CHECK(job.model_name_or_path.empty() || job.model_type.empty(),
             "[model] give either --model_name_or_path or --model_type, not both");
  ModelPlan plan;
  if (!job.model_name_or_path.empty()) {
    plan_pretrained(plan, job);
  } else {
    plan_from_scratch(plan, job, tokenizer);
  }
  const PretrainedConfig& common =
      std::visit([](const auto& c) -> const PretrainedConfig& { return c; }, plan.config);
  int64_t vocab = 0;
  if (auto* g = std::get_if<GPT2Config>(&plan.config)) {
    g->validate();
    plan.max_positions = g->n_positions;
    vocab = g->vocab_size;
  } else {
    auto& b = std::get<BertConfig>(plan.config);
    b.validate();
    plan.max_positions = b.max_position_embeddings;
    vocab = b.vocab_size;
  }
  plan.task = job.task.empty() ? default_task(plan.model_type, common.architectures) : job.task;
  const bool gpt2 = plan.model_type == "gpt2";
  LOOM_CHECK(gpt2 == (plan.task == "causal-lm"), "[model] --task ", plan.task, " needs a ",
             gpt2 ? "bert" : "gpt2", " model, got model_type '", plan.model_type, "'");
  LOOM_CHECK(tokenizer.vocab_size() <= vocab, "[model] the tokenizer has ", tokenizer.vocab_size(),
             " tokens but the model's vocab_size is ", vocab);
  plan.label_names = trained_label_names(common);
  if (is_classifier(common)) plan.num_labels = static_cast<int64_t>(common.id2label.size());
  return plan;
}

void check_training_fits(const ModelPlan& plan, const TrainingArguments& args) {
  const bool sgd = args.optim == "sgd";
  const double copies = sgd ? 2 : 4;
  const std::string why =
      sgd ? "weights and gradients" : "weights, gradients and AdamW's two moments";
  if (const auto* g = std::get_if<GPT2Config>(&plan.config)) {
    models::check_parameters_fit("[loom train]", models::gpt2_parameter_count(*g),
                                 models::gpt2_size_text(*g), copies, why);
  } else {
    const auto& b = std::get<BertConfig>(plan.config);
    models::check_parameters_fit("[loom train]", models::bert_parameter_count(b),
                                 models::bert_size_text(b), copies, why);
  }
}

std::shared_ptr<PretrainedModel> build_model(const ModelPlan& plan, const JobData& data,
                                             uint64_t seed) {
  manual_seed(seed);  // run_clm calls set_seed before building the model
  auto make = [&](auto tag, const auto& config) -> std::shared_ptr<PretrainedModel> {
    using M = typename decltype(tag)::type;
    if (plan.pretrained_dir.empty()) return std::make_shared<M>(config);
    detail::check_pretrained_sizes(plan.pretrained_dir, config);  // before allocating
    std::shared_ptr<M> m;
    {
      nn::NoInitGuard no_init;
      m = std::make_shared<M>(config);
    }
    detail::load_pretrained_weights(*m, plan.pretrained_dir, Device("cpu"), {});
    return m;
  };
  if (plan.task == "causal-lm")
    return make(std::type_identity<GPT2LMHeadModel>{}, std::get<GPT2Config>(plan.config));
  BertConfig cfg = std::get<BertConfig>(plan.config);
  if (plan.task == "masked-lm") return make(std::type_identity<BertForMaskedLM>{}, cfg);
  if (!data.label_names.empty()) {
    cfg.id2label.clear();
    for (size_t i = 0; i < data.label_names.size(); ++i)
      cfg.id2label[static_cast<int64_t>(i)] = data.label_names[i];
  } else if (cfg.num_labels() != data.num_labels) {
    cfg.set_num_labels(data.num_labels);
  }
  return make(std::type_identity<BertForSequenceClassification>{}, cfg);
}

}  // namespace loom::cli
