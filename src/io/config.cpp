// GPT2Config and BertConfig (loom/config.h): field names, aliases and
// defaults from transformers' configuration_gpt2.py / configuration_bert.py.
#include "loom/config.h"

#include <cmath>
#include <cstdint>

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

void check_size(const char* cfg, const char* field, int64_t v) {
  LOOM_CHECK(v >= 1, "[", cfg, "] ", field, " must be >= 1, got ", v);
}
void check_prob(const char* cfg, const char* field, double p) {
  LOOM_CHECK(p >= 0 && p < 1, "[", cfg, "] ", field, " must be in [0, 1), got ", p);
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

void GPT2Config::validate() const {
  const char* c = "GPT2Config";
  check_size(c, "vocab_size", vocab_size);
  check_size(c, "n_positions", n_positions);
  check_size(c, "n_embd", n_embd);
  check_size(c, "n_layer", n_layer);
  check_size(c, "n_head", n_head);
  LOOM_CHECK(n_inner || n_embd <= INT64_MAX / 4, "[GPT2Config] n_embd ", n_embd,
             " is too large (4 * n_embd, the default n_inner, overflows int64)");
  check_size(c, "n_inner", inner_dim());
  LOOM_CHECK(n_embd % n_head == 0, "[GPT2Config] n_embd ", n_embd, " is not divisible by n_head ",
             n_head);
  check_prob(c, "resid_pdrop", resid_pdrop);
  check_prob(c, "embd_pdrop", embd_pdrop);
  check_prob(c, "attn_pdrop", attn_pdrop);
  LOOM_CHECK(layer_norm_epsilon > 0, "[GPT2Config] layer_norm_epsilon must be > 0, got ",
             layer_norm_epsilon);
  LOOM_CHECK(known_activation(activation_function), "[GPT2Config] unknown activation_function '",
             activation_function, "'");
  check_no_cross_attention(c, *this);
}

GPT2Config GPT2Config::from_json_string(const std::string& text, const std::string& where) {
  io::ConfigReader r(io::parse_config_object(text, where), where);
  GPT2Config c;
  r.get_common(c, "gpt2");
  r.get({"vocab_size"}, c.vocab_size);
  r.get({"n_positions", "max_position_embeddings"}, c.n_positions);
  r.get({"n_embd", "hidden_size"}, c.n_embd);
  r.get({"n_layer", "num_hidden_layers"}, c.n_layer);
  r.get({"n_head", "num_attention_heads"}, c.n_head);
  r.get({"n_inner"}, c.n_inner);
  r.get({"activation_function"}, c.activation_function);
  r.get({"resid_pdrop"}, c.resid_pdrop);
  r.get({"embd_pdrop"}, c.embd_pdrop);
  r.get({"attn_pdrop"}, c.attn_pdrop);
  r.get({"layer_norm_epsilon"}, c.layer_norm_epsilon);
  r.get({"initializer_range"}, c.initializer_range);
  r.get({"scale_attn_weights"}, c.scale_attn_weights);
  r.get({"scale_attn_by_inverse_layer_idx"}, c.scale_attn_by_inverse_layer_idx);
  r.get({"reorder_and_upcast_attn"}, c.reorder_and_upcast_attn);
  r.keep_rest(c);
  return c;
}

GPT2Config GPT2Config::from_json_file(const std::string& path) {
  return from_json_string(io::read_config_text(path), path);
}

std::string GPT2Config::to_json_string() const {
  json j = io::common_to_json(*this);
  j["vocab_size"] = vocab_size;
  j["n_positions"] = n_positions;
  j["n_embd"] = n_embd;
  j["n_layer"] = n_layer;
  j["n_head"] = n_head;
  j["n_inner"] = io::optional_json(n_inner);
  j["activation_function"] = activation_function;
  j["resid_pdrop"] = resid_pdrop;
  j["embd_pdrop"] = embd_pdrop;
  j["attn_pdrop"] = attn_pdrop;
  j["layer_norm_epsilon"] = layer_norm_epsilon;
  j["initializer_range"] = initializer_range;
  j["scale_attn_weights"] = scale_attn_weights;
  j["scale_attn_by_inverse_layer_idx"] = scale_attn_by_inverse_layer_idx;
  j["reorder_and_upcast_attn"] = reorder_and_upcast_attn;
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

void BertConfig::validate() const {
  const char* c = "BertConfig";
  check_size(c, "vocab_size", vocab_size);
  check_size(c, "hidden_size", hidden_size);
  check_size(c, "num_hidden_layers", num_hidden_layers);
  check_size(c, "num_attention_heads", num_attention_heads);
  check_size(c, "intermediate_size", intermediate_size);
  check_size(c, "max_position_embeddings", max_position_embeddings);
  check_size(c, "type_vocab_size", type_vocab_size);
  LOOM_CHECK(hidden_size % num_attention_heads == 0, "[BertConfig] hidden_size ", hidden_size,
             " is not divisible by num_attention_heads ", num_attention_heads);
  check_prob(c, "hidden_dropout_prob", hidden_dropout_prob);
  check_prob(c, "attention_probs_dropout_prob", attention_probs_dropout_prob);
  if (classifier_dropout) check_prob(c, "classifier_dropout", *classifier_dropout);
  LOOM_CHECK(layer_norm_eps > 0, "[BertConfig] layer_norm_eps must be > 0, got ", layer_norm_eps);
  LOOM_CHECK(known_activation(hidden_act), "[BertConfig] unknown hidden_act '", hidden_act, "'");
  LOOM_CHECK(!pad_token_id || (*pad_token_id >= 0 && *pad_token_id < vocab_size),
             "[BertConfig] pad_token_id ", pad_token_id.value_or(0), " is outside [0, ", vocab_size,
             ")");
  auto pos = extra.find("position_embedding_type");
  LOOM_CHECK(pos == extra.end() || pos->second == "\"absolute\"",
             "[BertConfig] position_embedding_type ", pos == extra.end() ? "" : pos->second,
             " is not supported (only \"absolute\")");
  check_no_cross_attention(c, *this);
}

BertConfig BertConfig::from_json_string(const std::string& text, const std::string& where) {
  io::ConfigReader r(io::parse_config_object(text, where), where);
  BertConfig c;
  r.get_common(c, "bert");
  r.get({"vocab_size"}, c.vocab_size);
  r.get({"hidden_size"}, c.hidden_size);
  r.get({"num_hidden_layers"}, c.num_hidden_layers);
  r.get({"num_attention_heads"}, c.num_attention_heads);
  r.get({"intermediate_size"}, c.intermediate_size);
  r.get({"hidden_act"}, c.hidden_act);
  r.get({"hidden_dropout_prob"}, c.hidden_dropout_prob);
  r.get({"attention_probs_dropout_prob"}, c.attention_probs_dropout_prob);
  r.get({"max_position_embeddings"}, c.max_position_embeddings);
  r.get({"type_vocab_size"}, c.type_vocab_size);
  r.get({"initializer_range"}, c.initializer_range);
  r.get({"layer_norm_eps"}, c.layer_norm_eps);
  r.get({"classifier_dropout"}, c.classifier_dropout);
  r.get({"is_decoder"}, c.is_decoder);
  r.keep_rest(c);
  return c;
}

BertConfig BertConfig::from_json_file(const std::string& path) {
  return from_json_string(io::read_config_text(path), path);
}

std::string BertConfig::to_json_string() const {
  json j = io::common_to_json(*this);
  j["vocab_size"] = vocab_size;
  j["hidden_size"] = hidden_size;
  j["num_hidden_layers"] = num_hidden_layers;
  j["num_attention_heads"] = num_attention_heads;
  j["intermediate_size"] = intermediate_size;
  j["hidden_act"] = hidden_act;
  j["hidden_dropout_prob"] = hidden_dropout_prob;
  j["attention_probs_dropout_prob"] = attention_probs_dropout_prob;
  j["max_position_embeddings"] = max_position_embeddings;
  j["type_vocab_size"] = type_vocab_size;
  j["initializer_range"] = initializer_range;
  j["layer_norm_eps"] = layer_norm_eps;
  j["classifier_dropout"] = io::optional_json(classifier_dropout);
  j["is_decoder"] = is_decoder;
  return io::dump_config(j);
}

void BertConfig::save(const std::string& path) const {
  io::write_text_atomic(path, to_json_string());
}

}  // namespace loom
