// LlamaConfig: the config.json of the Llama family as transformers writes it
// (transformers/models/llama/configuration_llama.py, qwen2/configuration_qwen2.py,
// qwen3/configuration_qwen3.py), one struct for model_type "llama", "qwen2"
// (Qwen2 = Llama with q/k/v biases and no o_proj bias) and "qwen3" (Qwen3 = Llama
// with an RMSNorm over head_dim on each query and key head before the rotary
// embedding, src/nn/models/qwen3/). Fields are declared once, in a table in
// src/nn/models/llama/llama_config.cpp that feeds reading, writing (and so
// --config_overrides) alike; unknown keys are kept and written back.
//
//   loom::LlamaConfig c = loom::LlamaConfig::from_json_file("tiny-llama/config.json");
//   c.num_hidden_layers = 4;
//   c.save("out/config.json");
//
// Rotary settings are read from transformers v5's "rope_parameters"
// {rope_theta, rope_type, factor, ...} or from the older "rope_theta" +
// "rope_scaling" {"type"|"rope_type", ...}, and written back in the form read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/model_config.h"

namespace loom {

/// transformers' rope parameters (modeling_rope_utils.py). rope_type
/// "default", "linear" (positions / factor) or "llama3" (wavelength bands).
struct RopeScaling {
  std::string rope_type = "default";
  double factor = 1.0;
  double low_freq_factor = 1.0;                  // llama3
  double high_freq_factor = 4.0;                 // llama3
  int64_t original_max_position_embeddings = 0;  // llama3
};

struct LlamaConfig : ModelConfigBase<LlamaConfig> {
  /// transformers.LlamaConfig's defaults (Llama-2 7B), model_type "llama".
  LlamaConfig();
  /// transformers.Qwen2Config's defaults, model_type "qwen2".
  static LlamaConfig qwen2();
  /// transformers.Qwen3Config's defaults (Qwen3-8B-like sizes, head_dim 128), model_type
  /// "qwen3" (src/nn/models/qwen3/qwen3_config.cpp).
  static LlamaConfig qwen3();

  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;  // SwiGLU width
  int64_t num_hidden_layers = 32;
  int64_t num_attention_heads = 32;
  std::optional<int64_t> num_key_value_heads;  // grouped-query attention; = heads when absent
  std::optional<int64_t> head_dim;             // hidden_size / heads when absent
  std::string hidden_act = "silu";
  int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;
  bool attention_bias = false;  // Llama, Qwen3: q/k/v/o biases (Qwen2 always has q/k/v biases)
  double attention_dropout = 0.0;
  bool mlp_bias = false;
  /// True when read from transformers v5's "rope_parameters" (written back so).
  bool rope_parameters_form = false;

  int64_t kv_heads() const {
    return num_key_value_heads ? *num_key_value_heads : num_attention_heads;
  }
  int64_t head_size() const { return head_dim ? *head_dim : hidden_size / num_attention_heads; }
  /// q/k/v projections have biases (Llama attention_bias; always for Qwen2).
  bool qkv_bias() const { return attention_bias || model_type == "qwen2"; }
  /// o_proj has a bias (Llama attention_bias; never for Qwen2).
  bool o_bias() const { return attention_bias && model_type != "qwen2"; }
  /// Each query and key head goes through an RMSNorm over head_dim (q_norm, k_norm) before
  /// the rotary embedding: Qwen3.
  bool qk_norm() const { return model_type == "qwen3"; }
  /// transformers' class-name prefix of the type: "Qwen2", "Qwen3" or "Llama"
  /// (Qwen3ForCausalLM, Qwen3Model, Qwen3DecoderLayer).
  std::string class_prefix() const {
    return model_type == "qwen2" ? "Qwen2" : model_type == "qwen3" ? "Qwen3" : "Llama";
  }

  /// Throws loom::Error "[LlamaConfig] ..." naming the field: a size < 1,
  /// heads not divisible by key/value heads, hidden_size not divisible by
  /// heads without head_dim, eps or rope_theta <= 0, an activation
  /// nn::activation does not know, attention_dropout != 0 (not supported),
  /// a rope_type other than default/linear/llama3 (or its factors <= 0),
  /// pretraining_tp != 1, Qwen2's / Qwen3's use_sliding_window (not supported),
  /// or mlp_bias true for qwen2 / qwen3 (their MLPs have no biases).
  void validate() const;
  /// Parses config.json text of model_type "llama", "qwen2" or "qwen3" (absent:
  /// "llama"); keys transformers has and loom does not use (use_cache, sliding_window,
  /// layer_types, ...) are kept. Throws loom::Error "[config] <where>: ..." for malformed
  /// JSON, a wrongly typed field, another model_type, or a malformed rope entry.
  static LlamaConfig from_json_string(const std::string& text,
                                      const std::string& where = "<string>");
  std::string to_json_string() const;
  // from_json_file(path) and save(path): ModelConfigBase (loom/config.h).

  // What the registry needs (loom::ModelConfig), counted from
  // transformers' modeling_llama.py module layout.
  /// Parameters of LlamaModel plus the untied lm_head when `lm_head` and
  /// !tie_word_embeddings. With A = heads*head_dim, K = kv_heads*head_dim:
  /// V*H + H + L*(2H + H*A + 2*H*K + A*H + 3*H*I [+ biases] [+ 2*head_dim: Qwen3 q/k_norm]).
  double parameter_count(bool lm_head = true) const;
  /// "num_hidden_layers 32, hidden_size 4096, intermediate_size 11008, ...".
  std::string size_text() const;
  /// embed_tokens, layer 0's q/k projections and gate_proj weights.
  std::vector<ConfigTensor> config_tensors() const;
  int64_t max_positions() const { return max_position_embeddings; }
  /// peft's default for llama, qwen2 and qwen3: {"q_proj", "v_proj"}.
  std::vector<std::string> default_lora_targets() const { return {"q_proj", "v_proj"}; }
  /// transformers' _no_split_modules: "Qwen2DecoderLayer", "Qwen3DecoderLayer" or
  /// "LlamaDecoderLayer".
  std::string layer_class() const { return class_prefix() + "DecoderLayer"; }
};

static_assert(ModelConfig<LlamaConfig>);

}  // namespace loom
