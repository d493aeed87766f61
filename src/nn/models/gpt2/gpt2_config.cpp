// GPT2Config (loom/gpt2_config.h): field names, aliases and defaults from
// transformers' configuration_gpt2.py; the parameter count and config-set
// shapes from modeling_gpt2.py's module layout (which loom's GPT-2 follows
// name for name). gpt2_fields() is the one list of the config's fields
// (io/config_fields.h): it drives from_json_string, to_json_string and the
// per-field checks of validate(); from_json_file and save come from
// ModelConfigBase (loom/config.h).
#include "loom/gpt2_config.h"

#include <cmath>
#include <cstdint>
#include <sstream>

#include "io/config_fields.h"
#include "io/config_json.h"
#include "loom/error.h"

namespace loom {

using nlohmann::json;

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
  LOOM_CHECK(io::known_activation(activation_function),
             "[GPT2Config] unknown activation_function '", activation_function, "'");
  io::check_no_cross_attention("GPT2Config", *this);
}

GPT2Config GPT2Config::from_json_string(const std::string& text, const std::string& where) {
  return io::read_config(io::parse_config_object(text, where), where, "gpt2", GPT2Config(),
                         gpt2_fields());
}

std::string GPT2Config::to_json_string() const {
  return io::dump_config(io::config_to_json(*this, gpt2_fields()));
}

double GPT2Config::parameter_count() const {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  const double v = d(vocab_size), p = d(n_positions), e = d(n_embd), l = d(n_layer);
  const double i = n_inner ? d(*n_inner) : 4 * e;       // inner_dim() without int64 overflow
  const double block = 4 * e                            // ln_1, ln_2
                       + (3 * e * e + 3 * e)            // attn.c_attn
                       + (e * e + e)                    // attn.c_proj
                       + (e * i + i)                    // mlp.c_fc
                       + (i * e + e);                   // mlp.c_proj
  const double head = tie_word_embeddings ? 0 : v * e;  // an untied lm_head (no bias)
  return v * e + p * e + 2 * e + l * block + head;
}

std::string GPT2Config::size_text() const {
  std::ostringstream s;
  s << "n_layer " << n_layer << ", n_embd " << n_embd << ", n_inner "
    << (n_inner ? std::to_string(*n_inner) : "4*n_embd") << ", n_positions " << n_positions
    << ", vocab_size " << vocab_size;
  return s.str();
}

std::vector<ConfigTensor> GPT2Config::config_tensors() const {
  const int64_t e = n_embd;
  const int64_t i = n_inner.value_or(4 * e);
  return {{"wte.weight", {vocab_size, e}, "vocab_size, n_embd"},
          {"wpe.weight", {n_positions, e}, "n_positions, n_embd"},
          {"h.0.attn.c_attn.weight", {e, 3 * e}, "n_embd"},
          {"h.0.mlp.c_fc.weight", {e, i}, "n_embd, n_inner"}};
}

}  // namespace loom
