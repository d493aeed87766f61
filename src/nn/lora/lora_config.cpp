// LoraConfig (loom/lora.h): validation, adapter_config.json in PEFT's layout
// (peft/tuners/lora/config.py, PeftConfig.save_pretrained: every field of
// the dataclass, sorted keys, two-space indent), PEFT's default target
// modules per model type and its target-name matching. Assumes PEFT 0.21's
// field names; features loom does not implement are written off and
// refused when a loaded file turns them on.
#include <cmath>
#include <filesystem>
#include <type_traits>

#include "io/config_json.h"
#include "io/json_parse.h"
#include "io/text_files.h"
#include "loom/error.h"
#include "loom/lora.h"
#include "loom/model_registry.h"

namespace loom {

namespace {

bool lora_ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// A field that must be null/false/empty for loom to apply the adapter as PEFT would.
void refuse_feature(const nlohmann::json& j, const char* name, const std::string& path) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return;
  bool on = it->is_boolean() ? it->get<bool>() : !it->empty();
  LOOM_CHECK(!on, "[LoraConfig] ", path, ": ", name, " = ", it->dump(),
             " is not supported by loom");
}

// Field `name` of adapter_config.json when present and not null, else
// `fallback`. PEFT's dataclass types: r an int (4.5 or "4" is an error, not
// 4), lora_alpha / lora_dropout numbers, flags booleans, names strings.
// Throws loom::Error "[LoraConfig] <path>: <name> must be <type>, got <json>".
template <typename T>
T lora_field(const nlohmann::json& j, const char* name, const std::string& path, T fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  const char* want = nullptr;
  if constexpr (std::is_same_v<T, bool>) {
    if (!it->is_boolean()) want = "true or false";
  } else if constexpr (std::is_integral_v<T>) {
    if (!it->is_number_integer()) want = "an integer";
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) want = "a number";
  } else {
    if (!it->is_string()) want = "a string";
  }
  LOOM_CHECK(want == nullptr, "[LoraConfig] ", path, ": ", name, " must be ", want, ", got ",
             it->dump());
  return it->get<T>();
}

}  // namespace

void LoraConfig::validate() const {
  LOOM_CHECK(r >= 1, "[LoraConfig] r must be >= 1, got ", r);
  LOOM_CHECK(std::isfinite(lora_alpha) && lora_alpha > 0,
             "[LoraConfig] lora_alpha must be a finite number > 0, got ", lora_alpha);
  LOOM_CHECK(lora_dropout >= 0 && lora_dropout < 1,
             "[LoraConfig] lora_dropout must be in [0, 1), got ", lora_dropout);
  LOOM_CHECK(bias == "none", "[LoraConfig] bias '", bias, "' is not supported (only \"none\")");
  LOOM_CHECK(task_type == "CAUSAL_LM", "[LoraConfig] task_type '", task_type,
             "' is not supported (only \"CAUSAL_LM\")");
  for (const std::string& t : target_modules)
    LOOM_CHECK(!t.empty(), "[LoraConfig] target_modules has an empty name");
}

std::string LoraConfig::to_json() const {
  nlohmann::json j;
  j["alpha_pattern"] = nlohmann::json::object();
  j["auto_mapping"] = nullptr;
  j["base_model_name_or_path"] = base_model_name_or_path;
  j["bias"] = bias;
  j["fan_in_fan_out"] = fan_in_fan_out;
  j["inference_mode"] = inference_mode;
  j["init_lora_weights"] = true;
  j["layer_replication"] = nullptr;
  j["layers_pattern"] = nullptr;
  j["layers_to_transform"] = nullptr;
  j["lora_alpha"] = lora_alpha;
  j["lora_bias"] = false;
  j["lora_dropout"] = lora_dropout;
  j["modules_to_save"] = nullptr;
  j["peft_type"] = "LORA";
  j["r"] = r;
  j["rank_pattern"] = nlohmann::json::object();
  j["revision"] = revision.empty() ? nlohmann::json() : nlohmann::json(revision);
  j["target_modules"] = target_modules;
  j["target_parameters"] = nullptr;
  j["task_type"] = task_type;
  j["use_dora"] = false;
  j["use_rslora"] = false;
  return io::dump_config(j);
}

LoraConfig LoraConfig::from_json_file(const std::string& path) {
  std::error_code ec;
  LOOM_CHECK(std::filesystem::is_regular_file(path, ec), "[LoraConfig] ", path, ": no such file");
  const nlohmann::json j =
      io::parse_json(io::read_file_text(path, "[LoraConfig]"), "[LoraConfig] " + path);
  LOOM_CHECK(j.is_object(), "[LoraConfig] ", path, ": not a JSON object");
  LoraConfig c;
  LOOM_CHECK(j.value("peft_type", nlohmann::json()) == "LORA", "[LoraConfig] ", path,
             ": peft_type must be \"LORA\", got ",
             j.contains("peft_type") ? j["peft_type"].dump() : "none");
  c.r = lora_field(j, "r", path, c.r);
  c.lora_alpha = lora_field(j, "lora_alpha", path, c.lora_alpha);
  c.lora_dropout = lora_field(j, "lora_dropout", path, c.lora_dropout);
  c.fan_in_fan_out = lora_field(j, "fan_in_fan_out", path, c.fan_in_fan_out);
  c.bias = lora_field(j, "bias", path, c.bias);
  c.task_type = lora_field(j, "task_type", path, c.task_type);
  c.base_model_name_or_path = lora_field(j, "base_model_name_or_path", path, std::string());
  c.inference_mode = lora_field(j, "inference_mode", path, c.inference_mode);
  c.revision = lora_field(j, "revision", path, std::string());
  const nlohmann::json& t = j.contains("target_modules") ? j["target_modules"] : nlohmann::json();
  if (t.is_string() && t.get<std::string>() == "all-linear") c.target_modules = {"all-linear"};
  LOOM_CHECK(t.is_array() || !c.target_modules.empty(), "[LoraConfig] ", path,
             ": target_modules must be a list of names",
             t.is_string() ? " (a regex string is not supported)" : "", ", got ", t.dump());
  if (t.is_array())
    for (const auto& name : t) {
      LOOM_CHECK(name.is_string(), "[LoraConfig] ", path,
                 ": target_modules must be a list of names (strings), got ", t.dump());
      c.target_modules.push_back(name.get<std::string>());
    }
  for (const char* f :
       {"use_dora", "use_rslora", "rank_pattern", "alpha_pattern", "layers_to_transform",
        "modules_to_save", "target_parameters", "layer_replication", "lora_bias", "exclude_modules",
        "trainable_token_indices", "layers_pattern"})
    refuse_feature(j, f, path);
  try {
    c.validate();
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
  return c;
}

std::vector<std::string> default_lora_target_modules(const std::string& model_type) {
  // Each config declares peft's default (ModelConfig::default_lora_targets).
  for (const ModelTypeEntry& e : model_types())
    if (e.model_type == model_type && !e.default_lora_targets.empty())
      return e.default_lora_targets;
  fail("[lora] no default target_modules for model_type '", model_type,
       "' (pass --lora_target_modules)");
}

bool lora_target_matches(const std::string& module_name,
                         const std::vector<std::string>& target_modules) {
  for (const std::string& t : target_modules)
    if (module_name == t || lora_ends_with(module_name, "." + t)) return true;
  return false;
}

bool is_peft_adapter_dir(const std::string& dir) {
  std::error_code ec;
  return std::filesystem::is_regular_file(std::filesystem::path(dir) / "adapter_config.json", ec);
}

}  // namespace loom
