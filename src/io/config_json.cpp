// ConfigReader and the JSON helpers behind loom/config.h (and PretrainedConfig's
// own functions: set_num_labels, read_model_type, read/write_config_file). The common fields
// follow transformers' PretrainedConfig (configuration_utils.py): id2label
// keys are strings of integers in the file; num_labels may stand in for it.
#include "io/config_json.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "io/json_parse.h"
#include "loom/error.h"

namespace loom::io {

using nlohmann::json;

ConfigReader::ConfigReader(json object, std::string where)
    : object_(std::move(object)), where_(std::move(where)) {}

json* ConfigReader::take(const std::vector<std::string>& names, std::string& found) {
  for (const std::string& name : names) {
    auto it = object_.find(name);
    if (it == object_.end()) continue;
    taken_ = std::move(*it);
    object_.erase(it);
    found = name;
    // Aliases of the same field: drop the others so they are not kept twice.
    for (const std::string& other : names) object_.erase(other);
    return &taken_;
  }
  return nullptr;
}

void ConfigReader::bad(const std::string& name, const char* kind, const json& v) const {
  fail("[config] ", where_, ": field '", name, "' must be ", kind, ", got ", v.dump());
}

void ConfigReader::get(const std::vector<std::string>& names, int64_t& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (!v->is_number_integer()) bad(name, "an integer", *v);
    out = v->get<int64_t>();
  }
}

void ConfigReader::get(const std::vector<std::string>& names, double& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (!v->is_number()) bad(name, "a number", *v);
    out = v->get<double>();
  }
}

void ConfigReader::get(const std::vector<std::string>& names, bool& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (!v->is_boolean()) bad(name, "true or false", *v);
    out = v->get<bool>();
  }
}

void ConfigReader::get(const std::vector<std::string>& names, std::string& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (v->is_null()) {
      out.clear();
      return;
    }
    if (!v->is_string()) bad(name, "a string", *v);
    out = v->get<std::string>();
  }
}

void ConfigReader::get(const std::vector<std::string>& names, std::optional<int64_t>& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (v->is_null()) {
      out.reset();
      return;
    }
    if (!v->is_number_integer()) bad(name, "an integer or null", *v);
    out = v->get<int64_t>();
  }
}

void ConfigReader::get(const std::vector<std::string>& names, std::optional<double>& out) {
  std::string name;
  if (json* v = take(names, name)) {
    if (v->is_null()) {
      out.reset();
      return;
    }
    if (!v->is_number()) bad(name, "a number or null", *v);
    out = v->get<double>();
  }
}

std::optional<json> ConfigReader::take_json(const std::string& name) {
  std::string found;
  if (json* v = take({name}, found)) return std::move(*v);
  return std::nullopt;
}

bool ConfigReader::has_value(const std::string& name) const {
  auto it = object_.find(name);
  return it != object_.end() && !it->is_null();
}

void ConfigReader::get_common(PretrainedConfig& cfg, const std::string& expected_type) {
  std::string type;
  get({"model_type"}, type);
  LOOM_CHECK(type.empty() || type == expected_type, "[config] ", where_, ": model_type is '", type,
             "', expected '", expected_type, "'");
  cfg.model_type = expected_type;
  std::string name;
  if (json* v = take({"architectures"}, name)) {
    cfg.architectures.clear();
    if (!v->is_null()) {
      if (!v->is_array()) bad(name, "a list of strings", *v);
      for (const json& a : *v) {
        if (!a.is_string()) bad(name, "a list of strings", *v);
        cfg.architectures.push_back(a.get<std::string>());
      }
    }
  }
  std::optional<int64_t> num_labels;
  get({"num_labels"}, num_labels);
  if (num_labels) {
    LOOM_CHECK(*num_labels >= 1 && *num_labels <= 1000000, "[config] ", where_,
               ": num_labels must be in [1, 1000000], got ", *num_labels);
    cfg.set_num_labels(*num_labels);
  }
  if (json* v = take({"id2label"}, name)) {
    if (!v->is_object()) bad(name, "an object {\"0\": \"label\", ...}", *v);
    cfg.id2label.clear();
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string& key = it.key();
      char* end = nullptr;
      long long id = std::strtoll(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || !it.value().is_string())
        bad(name, "an object {\"0\": \"label\", ...}", *v);
      cfg.id2label[id] = it.value().get<std::string>();
    }
    for (int64_t i = 0; i < cfg.num_labels(); ++i)
      LOOM_CHECK(cfg.id2label.count(i), "[config] ", where_, ": id2label lacks id ", i,
                 " (ids must be 0..", cfg.num_labels() - 1, ")");
  }
  // label2id is written back as the inverse of id2label (transformers keeps
  // the two consistent), so the file's copy is only type-checked.
  if (json* v = take({"label2id"}, name); v && !v->is_object() && !v->is_null())
    bad(name, "an object {\"label\": 0, ...}", *v);
  get({"problem_type"}, cfg.problem_type);
  LOOM_CHECK(cfg.problem_type.empty() || cfg.problem_type == "regression" ||
                 cfg.problem_type == "single_label_classification" ||
                 cfg.problem_type == "multi_label_classification",
             "[config] ", where_, ": unknown problem_type '", cfg.problem_type, "'");
  get({"tie_word_embeddings"}, cfg.tie_word_embeddings);
  get({"bos_token_id"}, cfg.bos_token_id);
  get_eos_token_ids(cfg);
  get({"pad_token_id"}, cfg.pad_token_id);
}

// eos_token_id: an integer, null, or a non-empty list of integers (transformers'
// generation stops at any of them).
void ConfigReader::get_eos_token_ids(PretrainedConfig& cfg) {
  std::string name;
  json* v = take({"eos_token_id"}, name);
  if (!v) return;
  cfg.eos_token_ids.clear();
  cfg.eos_token_id.reset();
  if (v->is_null()) return;
  if (v->is_number_integer()) {
    cfg.eos_token_id = v->get<int64_t>();
    return;
  }
  if (!v->is_array() || v->empty()) bad(name, "an integer, a list of integers or null", *v);
  for (const json& id : *v) {
    if (!id.is_number_integer()) bad(name, "an integer, a list of integers or null", *v);
    cfg.eos_token_ids.push_back(id.get<int64_t>());
  }
  cfg.eos_token_id = cfg.eos_token_ids.front();
}

void ConfigReader::keep_rest(PretrainedConfig& cfg) {
  cfg.extra.clear();
  for (auto it = object_.begin(); it != object_.end(); ++it) cfg.extra[it.key()] = it->dump();
}

json parse_config_object(const std::string& text, const std::string& where) {
  check_json_depth(text, "[config] " + where);
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  LOOM_CHECK(!j.is_discarded(), "[config] ", where, ": not valid JSON");
  LOOM_CHECK(j.is_object(), "[config] ", where, ": not a JSON object");
  return j;
}

std::string read_config_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "[config] ", path, ": cannot read (", std::strerror(errno), ")");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

json common_to_json(const PretrainedConfig& cfg) {
  json j = json::object();
  for (const auto& [key, text] : cfg.extra) j[key] = json::parse(text);
  j["model_type"] = cfg.model_type;
  if (!cfg.architectures.empty()) j["architectures"] = cfg.architectures;
  bool default_labels = cfg.id2label == PretrainedConfig().id2label;
  if (!default_labels) {
    json id2label = json::object();
    for (const auto& [id, label] : cfg.id2label) id2label[std::to_string(id)] = label;
    j["id2label"] = id2label;
    json label2id = json::object();
    for (const auto& [id, label] : cfg.id2label) label2id[label] = id;
    j["label2id"] = label2id;
  }
  if (!cfg.problem_type.empty()) j["problem_type"] = cfg.problem_type;
  j["tie_word_embeddings"] = cfg.tie_word_embeddings;
  j["bos_token_id"] = optional_json(cfg.bos_token_id);
  j["eos_token_id"] =
      cfg.eos_token_ids.empty() ? optional_json(cfg.eos_token_id) : json(cfg.eos_token_ids);
  j["pad_token_id"] = optional_json(cfg.pad_token_id);
  return j;
}

std::string dump_config(const json& j) { return j.dump(2) + "\n"; }

void write_text_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    LOOM_CHECK(out.good(), "[config] ", path, ": cannot write (", std::strerror(errno), ")");
    out << text;
    out.flush();
    if (!out.good()) {
      std::remove(tmp.c_str());
      fail("[config] ", path, ": write failed (", std::strerror(errno), ")");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    std::remove(tmp.c_str());
    fail("[config] ", path, ": cannot rename into place (", std::strerror(err), ")");
  }
}

json optional_json(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }
json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace loom::io

namespace loom {

void PretrainedConfig::set_num_labels(int64_t n) {
  id2label.clear();
  for (int64_t i = 0; i < n; ++i) id2label[i] = "LABEL_" + std::to_string(i);
}

std::string read_config_file(const std::string& path) { return io::read_config_text(path); }

void write_config_file(const std::string& path, const std::string& text) {
  io::write_text_atomic(path, text);
}

std::string read_model_type(const std::string& path) {
  nlohmann::json j = io::parse_config_object(io::read_config_text(path), path);
  auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) return "";
  LOOM_CHECK(it->is_string(), "[config] ", path, ": model_type must be a string");
  return it->get<std::string>();
}

}  // namespace loom
