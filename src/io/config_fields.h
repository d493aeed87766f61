// ConfigField: one field of a model config declared once — its config.json name (and the
// aliases transformers' attribute_map accepts), the member it lives in and its validation
// rule. Each config (in its model's folder, nn/models/<model>/<model>_config.cpp) declares one
// table of them, and that table drives reading (ConfigReader), writing and the per-field checks of
// validate(); --config_overrides edits config.json text, so it follows from reading and writing.
// Rules that tie several fields together (n_embd % n_head, rope) stay in each config's validate().
//
//   const std::vector<io::ConfigField<GPT2Config>> kFields = {
//       {{"n_layer", "num_hidden_layers"}, &GPT2Config::n_layer, io::FieldRule::kSize}, ...};
//   return io::read_config(io::parse_config_object(text, where), where, "gpt2", GPT2Config(),
//                          kFields);                                     // from_json_string
//   return io::dump_config(io::config_to_json(*this, kFields));          // to_json_string
//   io::validate_config_fields("GPT2Config", cfg, kFields);
// from_json_file and save come from loom::ModelConfigBase (loom/config.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "io/config_json.h"

namespace loom::io {

/// A field's own check in validate(); an empty optional is never checked.
enum class FieldRule : uint8_t {
  kNone,
  kSize,         ///< integer >= 1: "[<Config>] <name> must be >= 1, got <v>"
  kProbability,  ///< number in [0, 1): "... must be in [0, 1), got <v>"
  kPositive,     ///< number > 0: "... must be > 0, got <v>"
};

template <typename C>
struct ConfigField {
  using Member = std::variant<int64_t C::*, double C::*, bool C::*, std::string C::*,
                              std::optional<int64_t> C::*, std::optional<double> C::*>;
  /// names.front() is the name written; all of them are read (the first present wins).
  std::vector<std::string> names;
  Member member;
  FieldRule rule = FieldRule::kNone;
};

/// Throws loom::Error "[<config>] <field> ..." when `v` breaks `rule` (see FieldRule).
void check_field_rule(const char* config, const std::string& field, FieldRule rule, int64_t v);
void check_field_rule(const char* config, const std::string& field, FieldRule rule, double v);
inline void check_field_rule(const char*, const std::string&, FieldRule, bool) {}
inline void check_field_rule(const char*, const std::string&, FieldRule, const std::string&) {}
template <typename T>
void check_field_rule(const char* config, const std::string& field, FieldRule rule,
                      const std::optional<T>& v) {
  if (v) check_field_rule(config, field, rule, *v);
}

inline nlohmann::json field_json(const std::optional<int64_t>& v) { return optional_json(v); }
inline nlohmann::json field_json(const std::optional<double>& v) { return optional_json(v); }
template <typename T>
nlohmann::json field_json(const T& v) {
  return v;
}

/// Takes every field of `fields` out of the reader into `c` (type errors as ConfigReader).
template <typename C>
void read_config_fields(ConfigReader& r, C& c, const std::vector<ConfigField<C>>& fields) {
  for (const ConfigField<C>& f : fields)
    std::visit([&](auto member) { r.get(f.names, c.*member); }, f.member);
}

/// Sets j[<canonical name>] for every field (empty optionals as null).
template <typename C>
void write_config_fields(nlohmann::json& j, const C& c, const std::vector<ConfigField<C>>& fields) {
  for (const ConfigField<C>& f : fields)
    std::visit([&](auto member) { j[f.names.front()] = field_json(c.*member); }, f.member);
}

/// The body of a config's from_json_string: takes the PretrainedConfig fields (model_type checked
/// against `type`) and `fields` from `object` (parse_config_object's) into `c` (its defaults), and
/// keeps the remaining keys in c.extra; errors as ConfigReader's. `before(reader, c)` runs after
/// the common fields, for fields a table cannot hold (Llama's rope entry).
template <typename C, typename Before>
C read_config(nlohmann::json object, const std::string& where, const std::string& type, C c,
              const std::vector<ConfigField<C>>& fields, Before before) {
  ConfigReader r(std::move(object), where);
  r.get_common(c, type);
  before(r, c);
  read_config_fields(r, c, fields);
  r.keep_rest(c);
  return c;
}
template <typename C>
C read_config(nlohmann::json object, const std::string& where, const std::string& type, C c,
              const std::vector<ConfigField<C>>& fields) {
  return read_config(std::move(object), where, type, std::move(c), fields,
                     [](ConfigReader&, C&) {});
}

/// The body of a config's to_json_string: the kept unknown keys, the PretrainedConfig fields and
/// `fields`, as one object (write it with dump_config).
template <typename C>
nlohmann::json config_to_json(const C& c, const std::vector<ConfigField<C>>& fields) {
  nlohmann::json j = common_to_json(c);
  write_config_fields(j, c, fields);
  return j;
}

/// True for the activation names GPT-2's and BERT's configs accept: "gelu",
/// "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu",
/// "silu", "swish", "tanh" (transformers' ACT2FN names loom implements).
bool known_activation(const std::string& name);
/// Throws loom::Error "[<config>] add_cross_attention is not supported" when
/// c.extra sets add_cross_attention to true.
void check_no_cross_attention(const char* config, const PretrainedConfig& c);

/// Applies each field's rule, in table order; `config` names the struct in errors.
template <typename C>
void validate_config_fields(const char* config, const C& c,
                            const std::vector<ConfigField<C>>& fields) {
  for (const ConfigField<C>& f : fields)
    std::visit([&](auto member) { check_field_rule(config, f.names.front(), f.rule, c.*member); },
               f.member);
}

}  // namespace loom::io
