// BertConfig (loom/bert_config.h): field names and defaults from
// transformers' configuration_bert.py; the parameter count and config-set
// shapes from modeling_bert.py's module layout (which loom's BERT follows
// name for name). bert_fields() is the one list of the config's fields
// (io/config_fields.h): it drives from_json_string, to_json_string and the
// per-field checks of validate(); from_json_file and save come from
// ModelConfigBase (loom/config.h).
#include "loom/bert_config.h"

#include <cstdint>
#include <sstream>

#include "io/config_fields.h"
#include "io/config_json.h"
#include "loom/error.h"

namespace loom {

using nlohmann::json;

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
  LOOM_CHECK(io::known_activation(hidden_act), "[BertConfig] unknown hidden_act '", hidden_act,
             "'");
  LOOM_CHECK(!pad_token_id || (*pad_token_id >= 0 && *pad_token_id < vocab_size),
             "[BertConfig] pad_token_id ", pad_token_id.value_or(0), " is outside [0, ", vocab_size,
             ")");
  auto pos = extra.find("position_embedding_type");
  LOOM_CHECK(pos == extra.end() || pos->second == "\"absolute\"",
             "[BertConfig] position_embedding_type ", pos == extra.end() ? "" : pos->second,
             " is not supported (only \"absolute\")");
  io::check_no_cross_attention("BertConfig", *this);
}

BertConfig BertConfig::from_json_string(const std::string& text, const std::string& where) {
  return io::read_config(io::parse_config_object(text, where), where, "bert", BertConfig(),
                         bert_fields());
}

std::string BertConfig::to_json_string() const {
  return io::dump_config(io::config_to_json(*this, bert_fields()));
}

double BertConfig::parameter_count() const {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  const double v = d(vocab_size), p = d(max_position_embeddings), t = d(type_vocab_size);
  const double h = d(hidden_size), l = d(num_hidden_layers), i = d(intermediate_size);
  const double layer = 4 * (h * h + h)  // query, key, value, attention.output.dense
                       + 4 * h          // two LayerNorms
                       + (h * i + i)    // intermediate.dense
                       + (i * h + h);   // output.dense
  // An untied MLM decoder weight; the MLM transform, decoder bias and the
  // classifiers' heads (O(h^2 + v)) are not counted.
  const double head = tie_word_embeddings ? 0 : v * h;
  return (v + p + t) * h + 2 * h + l * layer + (h * h + h) + head;
}

std::string BertConfig::size_text() const {
  std::ostringstream s;
  s << "num_hidden_layers " << num_hidden_layers << ", hidden_size " << hidden_size
    << ", intermediate_size " << intermediate_size << ", max_position_embeddings "
    << max_position_embeddings << ", vocab_size " << vocab_size << ", type_vocab_size "
    << type_vocab_size;
  return s.str();
}

std::vector<ConfigTensor> BertConfig::config_tensors() const {
  const int64_t h = hidden_size;
  return {{"embeddings.word_embeddings.weight", {vocab_size, h}, "vocab_size, hidden_size"},
          {"embeddings.position_embeddings.weight",
           {max_position_embeddings, h},
           "max_position_embeddings, hidden_size"},
          {"embeddings.token_type_embeddings.weight",
           {type_vocab_size, h},
           "type_vocab_size, hidden_size"},
          {"encoder.layer.0.attention.self.query.weight", {h, h}, "hidden_size"},
          {"encoder.layer.0.intermediate.dense.weight",
           {intermediate_size, h},
           "intermediate_size, hidden_size"}};
}

}  // namespace loom
