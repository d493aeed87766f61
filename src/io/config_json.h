// Helpers for reading and writing transformers' config.json (loom/config.h):
// a reader that takes known fields out of a JSON object with type checks
// (the rest stays behind as the config's unknown keys) and a writer that puts
// them back. Assumes nlohmann::json (sorted keys, as transformers'
// `json.dumps(sort_keys=True)`).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "loom/config.h"

namespace loom::io {

/// Pops known fields from a config object. Every get_* leaves `out`
/// unchanged when no listed name is present and throws loom::Error
/// "[config] <where>: field '<name>' must be <kind>, got <json>" for a wrong type.
class ConfigReader {
 public:
  ConfigReader(nlohmann::json object, std::string where);

  /// Names: the canonical name first, then accepted aliases.
  void get(const std::vector<std::string>& names, int64_t& out);
  void get(const std::vector<std::string>& names, double& out);
  void get(const std::vector<std::string>& names, bool& out);
  void get(const std::vector<std::string>& names, std::string& out);
  /// null leaves the optional empty.
  void get(const std::vector<std::string>& names, std::optional<int64_t>& out);
  void get(const std::vector<std::string>& names, std::optional<double>& out);
  /// Pops `name`'s raw value (nullopt when absent): for a field a table cannot hold.
  std::optional<nlohmann::json> take_json(const std::string& name);
  /// True when `name` is present and not null (nothing is taken).
  bool has_value(const std::string& name) const;
  /// The PretrainedConfig fields (model_type checked against `expected_type`).
  void get_common(PretrainedConfig& cfg, const std::string& expected_type);
  /// eos_token_id: an integer, null or a list (cfg.eos_token_ids); throws
  /// loom::Error "[config] <where>: field 'eos_token_id' must be ..." otherwise.
  void get_eos_token_ids(PretrainedConfig& cfg);
  /// Moves every key not taken yet into cfg.extra.
  void keep_rest(PretrainedConfig& cfg);
  const std::string& where() const { return where_; }

 private:
  nlohmann::json* take(const std::vector<std::string>& names, std::string& found);
  [[noreturn]] void bad(const std::string& name, const char* kind, const nlohmann::json& v) const;
  nlohmann::json object_;
  nlohmann::json taken_;  // the value last returned by take()
  std::string where_;
};

/// Parses `text` as a JSON object; throws "[config] <where>: ..." otherwise.
nlohmann::json parse_config_object(const std::string& text, const std::string& where);
/// Reads the whole file; throws "[config] <path>: cannot read (<reason>)".
std::string read_config_text(const std::string& path);

/// Starts a config object from cfg.extra and the PretrainedConfig fields.
nlohmann::json common_to_json(const PretrainedConfig& cfg);
/// Two-space-indented text with a final newline.
std::string dump_config(const nlohmann::json& j);
/// Writes `text` to `path` via a temporary file and rename.
void write_text_atomic(const std::string& path, const std::string& text);

/// Optional numbers as JSON (null when empty).
nlohmann::json optional_json(const std::optional<int64_t>& v);
nlohmann::json optional_json(const std::optional<double>& v);

}  // namespace loom::io
