// LlamaConfig (loom/llama_config.h): transformers' configuration_llama.py /
// configuration_qwen2.py field names and defaults. llama_fields() is the one
// list of plain fields (io/config_fields.h, as GPT-2's and BERT's): reading,
// writing, the per-field checks and hence --config_overrides come from it; the rope entry (an
// object in two historical forms) is handled beside it (transformers' modeling_rope_utils.py).
// The parameter count and config-set shapes follow modeling_llama.py's module layout.
#include "loom/llama_config.h"

#include <cmath>
#include <sstream>

#include "io/config_fields.h"
#include "io/config_json.h"
#include "loom/error.h"

namespace loom {

using nlohmann::json;

namespace {

// The one list of LlamaConfig's plain fields (io/config_fields.h); the rope entry is read
// and written beside it (two historical forms; rope_theta moves into rope_parameters).
const std::vector<io::ConfigField<LlamaConfig>>& llama_fields() {
  using F = io::FieldRule;
  using C = LlamaConfig;
  static const std::vector<io::ConfigField<C>> kFields = {
      {{"vocab_size"}, &C::vocab_size, F::kSize},
      {{"hidden_size"}, &C::hidden_size, F::kSize},
      {{"intermediate_size"}, &C::intermediate_size, F::kSize},
      {{"num_hidden_layers"}, &C::num_hidden_layers, F::kSize},
      {{"num_attention_heads"}, &C::num_attention_heads, F::kSize},
      {{"num_key_value_heads"}, &C::num_key_value_heads, F::kSize},
      {{"head_dim"}, &C::head_dim, F::kSize},
      {{"hidden_act"}, &C::hidden_act},
      {{"max_position_embeddings"}, &C::max_position_embeddings, F::kSize},
      {{"initializer_range"}, &C::initializer_range},
      {{"rms_norm_eps"}, &C::rms_norm_eps, F::kPositive},
      {{"rope_theta"}, &C::rope_theta, F::kPositive},
      {{"attention_bias"}, &C::attention_bias},
      {{"attention_dropout"}, &C::attention_dropout},
      {{"mlp_bias"}, &C::mlp_bias},
  };
  return kFields;
}

double number(const json& j, const std::string& key, const std::string& where, double fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  LOOM_CHECK(it->is_number(), "[config] ", where, ": rope field '", key, "' must be a number, got ",
             it->dump());
  return it->get<double>();
}

// Reads {"rope_type"|"type": ..., "factor": ..., ...} into `r`.
void read_rope(const json& j, const std::string& where, RopeScaling& r) {
  LOOM_CHECK(j.is_object(), "[config] ", where,
             ": rope_scaling/rope_parameters must be an object, got ", j.dump());
  for (const char* key : {"rope_type", "type"}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    LOOM_CHECK(it->is_string(), "[config] ", where, ": rope ", key, " must be a string");
    r.rope_type = it->get<std::string>();
    break;
  }
  // transformers' rope_config_validation: each type's required keys (modeling_rope_utils.py,
  // _validate_linear_scaling_rope_parameters / _validate_llama3_parameters raise KeyError
  // "Missing required keys in `rope_scaling` for 'rope_type'='linear': {'factor'}").
  std::vector<const char*> required;
  if (r.rope_type == "linear") required = {"factor"};
  if (r.rope_type == "llama3")
    required = {"factor", "original_max_position_embeddings", "low_freq_factor",
                "high_freq_factor"};
  for (const char* key : required)
    LOOM_CHECK(j.contains(key) && !j[key].is_null(), "[config] ", where, ": rope_type '",
               r.rope_type, "' needs the key '", key, "' (transformers raises on it missing)");
  r.factor = number(j, "factor", where, r.factor);
  r.low_freq_factor = number(j, "low_freq_factor", where, r.low_freq_factor);
  r.high_freq_factor = number(j, "high_freq_factor", where, r.high_freq_factor);
  r.original_max_position_embeddings =
      static_cast<int64_t>(number(j, "original_max_position_embeddings", where,
                                  static_cast<double>(r.original_max_position_embeddings)));
}

json rope_json(const RopeScaling& r) {
  json j = {{"rope_type", r.rope_type}};
  if (r.rope_type == "default") return j;
  j["factor"] = r.factor;
  if (r.rope_type == "llama3") {
    j["low_freq_factor"] = r.low_freq_factor;
    j["high_freq_factor"] = r.high_freq_factor;
    j["original_max_position_embeddings"] = r.original_max_position_embeddings;
  }
  return j;
}

}  // namespace

LlamaConfig::LlamaConfig() {
  model_type = "llama";
  tie_word_embeddings = false;
  bos_token_id = 1;
  eos_token_id = 2;
}

LlamaConfig LlamaConfig::qwen2() {
  LlamaConfig c;
  c.model_type = "qwen2";
  c.vocab_size = 151936;
  c.intermediate_size = 22016;
  c.num_key_value_heads = 32;
  c.max_position_embeddings = 32768;
  c.bos_token_id.reset();
  c.eos_token_id.reset();
  return c;
}

void LlamaConfig::validate() const {
  io::validate_config_fields("LlamaConfig", *this, llama_fields());
  // The derived head size (hidden_size / heads) when head_dim is absent.
  io::check_field_rule("LlamaConfig", "head_dim", io::FieldRule::kSize, head_size());
  LOOM_CHECK(num_attention_heads % kv_heads() == 0, "[LlamaConfig] num_attention_heads ",
             num_attention_heads, " is not divisible by num_key_value_heads ", kv_heads());
  LOOM_CHECK(head_dim || hidden_size % num_attention_heads == 0, "[LlamaConfig] hidden_size ",
             hidden_size, " is not divisible by num_attention_heads ", num_attention_heads);
  LOOM_CHECK(head_size() % 2 == 0, "[LlamaConfig] head_dim ", head_size(),
             " must be even (rotary embeddings rotate pairs)");
  LOOM_CHECK(attention_dropout == 0, "[LlamaConfig] attention_dropout ", attention_dropout,
             " is not supported (only 0.0)");
  bool known_act = false;
  for (const char* a : {"silu", "swish", "gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "tanh"})
    known_act = known_act || hidden_act == a;
  LOOM_CHECK(known_act, "[LlamaConfig] unknown hidden_act '", hidden_act, "'");
  const RopeScaling& r = rope_scaling;
  LOOM_CHECK(r.rope_type == "default" || r.rope_type == "linear" || r.rope_type == "llama3",
             "[LlamaConfig] rope_type '", r.rope_type,
             "' is not supported (default, linear, llama3)");
  LOOM_CHECK(r.factor > 0, "[LlamaConfig] rope factor must be > 0, got ", r.factor);
  if (r.rope_type == "llama3")
    LOOM_CHECK(r.original_max_position_embeddings >= 1 && r.low_freq_factor > 0 &&
                   r.high_freq_factor > r.low_freq_factor,
               "[LlamaConfig] llama3 rope needs original_max_position_embeddings >= 1 and "
               "0 < low_freq_factor < high_freq_factor, got ",
               r.original_max_position_embeddings, ", ", r.low_freq_factor, ", ",
               r.high_freq_factor);
  auto tp = extra.find("pretraining_tp");
  LOOM_CHECK(tp == extra.end() || tp->second == "1", "[LlamaConfig] pretraining_tp ",
             tp == extra.end() ? "" : tp->second, " is not supported (only 1)");
  // Qwen2MLP / Qwen3MLP have no biases, and their configs no mlp_bias key.
  LOOM_CHECK(!mlp_bias || (model_type != "qwen2" && model_type != "qwen3"), "[LlamaConfig] ",
             model_type, " has no mlp_bias (its MLP has no biases)");
  auto sw = extra.find("use_sliding_window");
  LOOM_CHECK(sw == extra.end() || sw->second != "true",
             "[LlamaConfig] use_sliding_window is not supported");
}

LlamaConfig LlamaConfig::from_json_string(const std::string& text, const std::string& where) {
  json object = io::parse_config_object(text, where);
  auto type_it = object.find("model_type");
  std::string type =
      type_it != object.end() && type_it->is_string() ? type_it->get<std::string>() : "llama";
  LOOM_CHECK(type == "llama" || type == "qwen2" || type == "qwen3", "[config] ", where,
             ": model_type is '", type, "', expected 'llama', 'qwen2' or 'qwen3'");
  LlamaConfig defaults = type == "qwen2" ? qwen2() : type == "qwen3" ? qwen3() : LlamaConfig();
  auto read_rope_entries = [&](io::ConfigReader& r, LlamaConfig& c) {
    if (r.has_value("rope_parameters")) {
      json rope = *r.take_json("rope_parameters");
      read_rope(rope, where, c.rope_scaling);
      c.rope_theta = number(rope, "rope_theta", where, c.rope_theta);
      c.rope_parameters_form = true;
    }
    if (auto rope = r.take_json("rope_scaling"); rope && !rope->is_null())
      read_rope(*rope, where, c.rope_scaling);
  };
  return io::read_config(std::move(object), where, type, std::move(defaults), llama_fields(),
                         read_rope_entries);
}

std::string LlamaConfig::to_json_string() const {
  json j = io::config_to_json(*this, llama_fields());
  if (model_type == "qwen2") j.erase("attention_bias");  // structural in Qwen2
  if (model_type != "llama") j.erase("mlp_bias");        // not a Qwen2/Qwen3 field
  // transformers reads a null head_dim as None (Qwen2Attention then fails):
  // leave it out when it is derived; write the key/value head count resolved.
  if (!head_dim) j.erase("head_dim");
  j["num_key_value_heads"] = kv_heads();
  if (rope_parameters_form) {
    j.erase("rope_theta");
    json rope = rope_json(rope_scaling);
    rope["rope_theta"] = rope_theta;
    j["rope_parameters"] = rope;
  } else {
    j["rope_scaling"] =
        rope_scaling.rope_type == "default" ? json(nullptr) : rope_json(rope_scaling);
  }
  return io::dump_config(j);
}

double LlamaConfig::parameter_count(bool lm_head) const {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  const double v = d(vocab_size), h = d(hidden_size), l = d(num_hidden_layers);
  const double i = d(intermediate_size);
  // head_size() / kv_heads() without int64 products: A = heads*dim, K = kv_heads*dim.
  const double dim = head_dim ? d(*head_dim) : h / d(num_attention_heads);
  const double a = d(num_attention_heads) * dim, k = d(kv_heads()) * dim;
  const double layer = 2 * h + (qk_norm() ? 2 * dim : 0)          // RMSNorms (+ q/k_norm)
                       + h * a + (qkv_bias() ? a : 0)             // q_proj
                       + 2 * (h * k + (qkv_bias() ? k : 0))       // k_proj, v_proj
                       + a * h + (o_bias() ? h : 0)               // o_proj
                       + 3 * h * i + (mlp_bias ? 2 * i + h : 0);  // gate, up, down
  const double head = lm_head && !tie_word_embeddings ? v * h : 0;
  return v * h + h + l * layer + head;
}

std::string LlamaConfig::size_text() const {
  std::ostringstream s;
  s << "num_hidden_layers " << num_hidden_layers << ", hidden_size " << hidden_size
    << ", intermediate_size " << intermediate_size << ", num_attention_heads "
    << num_attention_heads << ", num_key_value_heads " << kv_heads() << ", vocab_size "
    << vocab_size;
  return s.str();
}

std::vector<ConfigTensor> LlamaConfig::config_tensors() const {
  const int64_t h = hidden_size, dim = head_size();
  return {
      {"embed_tokens.weight", {vocab_size, h}, "vocab_size, hidden_size"},
      {"layers.0.self_attn.q_proj.weight",
       {num_attention_heads * dim, h},
       "num_attention_heads, head_dim, hidden_size"},
      {"layers.0.self_attn.k_proj.weight",
       {kv_heads() * dim, h},
       "num_key_value_heads, head_dim, hidden_size"},
      {"layers.0.mlp.gate_proj.weight", {intermediate_size, h}, "intermediate_size, hidden_size"}};
}

}  // namespace loom
