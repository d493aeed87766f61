// GPT2Config and BertConfig (loom/config.h): field names, aliases and
// defaults from transformers' configuration_gpt2.py / configuration_bert.py.
// Each config's fields are declared once, in gpt2_fields() / bert_fields()
// (io/config_fields.h), which drive from_json_string, to_json_string and the
// per-field checks of validate().
#include "loom/config.h"

#include <cmath>
#include <cstdint>

#include "io/config_fields.h"
#include "io/config_json.h"
#include "loom/error.h"

namespace loom {

using nlohmann::json;

void PretrainedConfig::set_num_labels(int64_t n) {
  id2label.clear();
  for (int64_t i = 0; i < n; ++i) id2label[i] = "LABEL_" + std::to_string(i);
}

std::string read_model_type(const std::string& path) {
  json j = io::parse_config_object(io::read_config_text(path), path);
  auto it = j.find("model_type");
  if (it == j.end() || it->is_null()) return "";
  LOOM_CHECK(it->is_string(), "[config] ", path, ": model_type must be a string");
  return it->get<std::string>();
}

namespace {

bool known_activation(const std::string& a) {
  for (const char* k : {"gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "quick_gelu", "relu",
                        "silu", "swish", "tanh"})
    if (a == k) return true;
  return false;
}

void check_no_cross_attention(const char* cfg, const PretrainedConfig& c) {
  auto it = c.extra.find("add_cross_attention");
  LOOM_CHECK(it == c.extra.end() || it->second != "true", "[", cfg,
             "] add_cross_attention is not supported");
}

}  // namespace

// ---- GPT-2 ----

GPT2Config::GPT2Config() {
  model_type = "gpt2";
  bos_token_id = 50256;
  eos_token_id = 50256;
}

// The one list of GPT2Config's fields (io/config_fields.h), aliases from
// GPT2Config.attribute_map.
namespace {
const std::vector<io::ConfigField<GPT2Config>>& gpt2_fields() {
  using F = io::FieldRule;
  static const std::vector<io::ConfigField<GPT2Config>> kFields = {
      {{"vocab_size"}, &GPT2Config::vocab_size, F::kSize},
      {{"n_positions", "max_position_embeddings"}, &GPT2Config::n_positions, F::kSize},
      {{"n_embd", "hidden_size"}, &GPT2Config::n_embd, F::kSize},
      {{"n_layer", "num_hidden_layers"}, &GPT2Config::n_layer, F::kSize},
      {{"n_head", "num_attention_heads"}, &GPT2Config::n_head, F::kSize},
      {{"n_inner"}, &GPT2Config::n_inner, F::kSize},
      {{"activation_function"}, &GPT2Config::activation_function},
      {{"resid_pdrop"}, &GPT2Config::resid_pdrop, F::kProbability},
      {{"embd_pdrop"}, &GPT2Config::embd_pdrop, F::kProbability},
      {{"attn_pdrop"}, &GPT2Config::attn_pdrop, F::kProbability},
      {{"layer_norm_epsilon"}, &GPT2Config::layer_norm_epsilon, F::kPositive},
      {{"initializer_range"}, &GPT2Config::initializer_range},
      {{"scale_attn_weights"}, &GPT2Config::scale_attn_weights},
      {{"scale_attn_by_inverse_layer_idx"}, &GPT2Config::scale_attn_by_inverse_layer_idx},
      {{"reorder_and_upcast_attn"}, &GPT2Config::reorder_and_upcast_attn},
  };
  return kFields;
}
}  // namespace

void GPT2Config::validate() const {
  io::validate_config_fields("GPT2Config", *this, gpt2_fields());
  LOOM_CHECK(n_inner || n_embd <= INT64_MAX / 4, "[GPT2Config] n_embd ", n_embd,
             " is too large (4 * n_embd, the default n_inner, overflows int64)");
  LOOM_CHECK(n_embd % n_head == 0, "[GPT2Config] n_embd ", n_embd, " is not divisible by n_head ",
             n_head);
  LOOM_CHECK(known_activation(activation_function), "[GPT2Config] unknown activation_function '",
             activation_function, "'");
  check_no_cross_attention("GPT2Config", *this);
}

GPT2Config GPT2Config::from_json_string(const std::string& text, const std::string& where) {
  io::ConfigReader r(io::parse_config_object(text, where), where);
  GPT2Config c;
  r.get_common(c, "gpt2");
  io::read_config_fields(r, c, gpt2_fields());
  r.keep_rest(c);
  return c;
}

GPT2Config GPT2Config::from_json_file(const std::string& path) {
  return from_json_string(io::read_config_text(path), path);
}

std::string GPT2Config::to_json_string() const {
  json j = io::common_to_json(*this);
  io::write_config_fields(j, *this, gpt2_fields());
  return io::dump_config(j);
}

void GPT2Config::save(const std::string& path) const {
  io::write_text_atomic(path, to_json_string());
}

// ---- BERT ----

BertConfig::BertConfig() {
  model_type = "bert";
  pad_token_id = 0;
}

// The one list of BertConfig's fields (io/config_fields.h).
namespace {
const std::vector<io::ConfigField<BertConfig>>& bert_fields() {
  using F = io::FieldRule;
  static const std::vector<io::ConfigField<BertConfig>> kFields = {
      {{"vocab_size"}, &BertConfig::vocab_size, F::kSize},
      {{"hidden_size"}, &BertConfig::hidden_size, F::kSize},
      {{"num_hidden_layers"}, &BertConfig::num_hidden_layers, F::kSize},
      {{"num_attention_heads"}, &BertConfig::num_attention_heads, F::kSize},
      {{"intermediate_size"}, &BertConfig::intermediate_size, F::kSize},
      {{"hidden_act"}, &BertConfig::hidden_act},
      {{"hidden_dropout_prob"}, &BertConfig::hidden_dropout_prob, F::kProbability},
      {{"attention_probs_dropout_prob"},
       &BertConfig::attention_probs_dropout_prob,
       F::kProbability},
      {{"max_position_embeddings"}, &BertConfig::max_position_embeddings, F::kSize},
      {{"type_vocab_size"}, &BertConfig::type_vocab_size, F::kSize},
      {{"initializer_range"}, &BertConfig::initializer_range},
      {{"layer_norm_eps"}, &BertConfig::layer_norm_eps, F::kPositive},
      {{"classifier_dropout"}, &BertConfig::classifier_dropout, F::kProbability},
      {{"is_decoder"}, &BertConfig::is_decoder},
  };
  return kFields;
}
}  // namespace

void BertConfig::validate() const {
  io::validate_config_fields("BertConfig", *this, bert_fields());
  LOOM_CHECK(hidden_size % num_attention_heads == 0, "[BertConfig] hidden_size ", hidden_size,
             " is not divisible by num_attention_heads ", num_attention_heads);
  LOOM_CHECK(known_activation(hidden_act), "[BertConfig] unknown hidden_act '", hidden_act, "'");
  LOOM_CHECK(!pad_token_id || (*pad_token_id >= 0 && *pad_token_id < vocab_size),
             "[BertConfig] pad_token_id ", pad_token_id.value_or(0), " is outside [0, ", vocab_size,
             ")");
  auto pos = extra.find("position_embedding_type");
  LOOM_CHECK(pos == extra.end() || pos->second == "\"absolute\"",
             "[BertConfig] position_embedding_type ", pos == extra.end() ? "" : pos->second,
             " is not supported (only \"absolute\")");
  check_no_cross_attention("BertConfig", *this);
}

BertConfig BertConfig::from_json_string(const std::string& text, const std::string& where) {
  io::ConfigReader r(io::parse_config_object(text, where), where);
  BertConfig c;
  r.get_common(c, "bert");
  io::read_config_fields(r, c, bert_fields());
  r.keep_rest(c);
  return c;
}

BertConfig BertConfig::from_json_file(const std::string& path) {
  return from_json_string(io::read_config_text(path), path);
}

std::string BertConfig::to_json_string() const {
  json j = io::common_to_json(*this);
  io::write_config_fields(j, *this, bert_fields());
  return io::dump_config(j);
}

void BertConfig::save(const std::string& path) const {
  io::write_text_atomic(path, to_json_string());
}

}  // namespace loom
