// GPT2Config: GPT-2's config.json as Hugging Face transformers writes it
// (transformers/models/gpt2/configuration_gpt2.py), with transformers' field
// names and defaults. Its fields are declared once, in the table of
// src/nn/models/gpt2/gpt2_config.cpp, from which reading, writing, the
// per-field checks (and so --config_overrides) all come.
//
//   loom::GPT2Config cfg = loom::GPT2Config::from_json_file("gpt2/config.json");
//   cfg.n_layer = 6;
//   cfg.save("small/config.json");   // unknown keys ("transformers_version", ...) kept
//
// Reading accepts transformers' aliases (hidden_size = n_embd,
// num_hidden_layers = n_layer, num_attention_heads = n_head,
// max_position_embeddings = n_positions) and `num_labels` in place of
// `id2label`. Writing uses the canonical names, sorted keys, two-space indent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/model_config.h"

namespace loom {

/// GPT-2 (transformers.GPT2Config). Defaults are those of `gpt2` (124M).
struct GPT2Config : ModelConfigBase<GPT2Config> {
  GPT2Config();
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;  // longest sequence (position embeddings)
  int64_t n_embd = 768;        // hidden size C
  int64_t n_layer = 12;
  int64_t n_head = 12;
  std::optional<int64_t> n_inner;  // MLP width; 4 * n_embd when absent
  /// "gelu_new" (tanh approximation, GPT-2's), "gelu", "gelu_pytorch_tanh",
  /// "gelu_fast", "quick_gelu", "relu", "silu"/"swish", "tanh".
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1, embd_pdrop = 0.1, attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  bool scale_attn_weights = true;                // scores / sqrt(head_dim)
  bool scale_attn_by_inverse_layer_idx = false;  // and / (layer index + 1)
  bool reorder_and_upcast_attn = false;          // f32 scores; no effect on f32 models

  int64_t inner_dim() const { return n_inner ? *n_inner : 4 * n_embd; }
  /// Throws loom::Error "[GPT2Config] ..." naming the bad field: a size < 1,
  /// n_embd not divisible by n_head, a dropout outside [0, 1), eps <= 0,
  /// an unknown activation, or add_cross_attention set (not supported).
  void validate() const;

  /// Parses config.json text; `where` names the source in errors. Throws
  /// loom::Error "[config] <where>: ..." for malformed JSON, a value of the
  /// wrong type (e.g. "n_embd": "32") or a model_type other than "gpt2".
  static GPT2Config from_json_string(const std::string& text,
                                     const std::string& where = "<string>");
  /// config.json text: every known field plus the kept unknown keys.
  std::string to_json_string() const;
  // from_json_file(path) and save(path): ModelConfigBase (loom/config.h).

  // What the registry needs (loom::ModelConfig), counted from
  // transformers' modeling_gpt2.py module layout.
  /// Parameters of GPT2Model (the LM head is tied to wte):
  /// V*E + P*E + 2E + L*(4E + (3E*E + 3E) + (E*E + E) + (E*I + I) + (I*E + E)).
  double parameter_count() const;
  /// "n_layer 2, n_embd 64, n_inner 4*n_embd, n_positions 1024, vocab_size 50257".
  std::string size_text() const;
  /// wte, wpe, h.0.attn.c_attn, h.0.mlp.c_fc weights.
  std::vector<ConfigTensor> config_tensors() const;
  int64_t max_positions() const { return n_positions; }
  /// peft's default for gpt2: {"c_attn"}.
  std::vector<std::string> default_lora_targets() const { return {"c_attn"}; }
  /// transformers' GPT2Model._no_split_modules: "GPT2Block".
  std::string layer_class() const { return "GPT2Block"; }
};

static_assert(ModelConfig<GPT2Config>);

}  // namespace loom
