// Model configurations as Hugging Face transformers writes them in
// `config.json`: GPT2Config and BertConfig with transformers' field names and
// defaults (transformers/models/{gpt2,bert}/configuration_*.py and
// PretrainedConfig), read and written as JSON. Keys loom does not know are
// kept verbatim and written back, so a config survives a load/save round trip.
//
//   loom::GPT2Config cfg = loom::GPT2Config::from_json_file("gpt2/config.json");
//   cfg.n_layer = 6;
//   cfg.save("small/config.json");   // unknown keys ("transformers_version", ...) kept
//
// Reading accepts transformers' aliases (GPT-2: hidden_size = n_embd,
// num_hidden_layers = n_layer, num_attention_heads = n_head,
// max_position_embeddings = n_positions) and `num_labels` in place of
// `id2label`. Writing uses the canonical names, sorted keys, two-space indent.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace loom {

/// The fields every transformers config has (PretrainedConfig).
struct PretrainedConfig {
  /// "gpt2", "bert", ...
  std::string model_type;
  /// Class names the weights were saved from, e.g. {"GPT2LMHeadModel"}.
  std::vector<std::string> architectures;
  /// Classification labels: id -> name; num_labels() is its size. Defaults to
  /// {0: "LABEL_0", 1: "LABEL_1"} as transformers does.
  std::map<int64_t, std::string> id2label = {{0, "LABEL_0"}, {1, "LABEL_1"}};
  /// "regression", "single_label_classification",
  /// "multi_label_classification" or empty (inferred from the labels).
  std::string problem_type;
  /// Output embeddings share the input embeddings' weight.
  bool tie_word_embeddings = true;
  std::optional<int64_t> bos_token_id, eos_token_id, pad_token_id;
  /// Keys loom does not interpret: name -> the value's JSON text (compact).
  std::map<std::string, std::string> extra;

  int64_t num_labels() const { return static_cast<int64_t>(id2label.size()); }
  /// Sets id2label to {0: "LABEL_0", ..., n-1: "LABEL_<n-1>"}.
  void set_num_labels(int64_t n);
};

/// GPT-2 (transformers.GPT2Config). Defaults are those of `gpt2` (124M).
struct GPT2Config : PretrainedConfig {
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
  /// Reads `path`; throws loom::Error "[config] <path>: ..." when it cannot be
  /// read, plus the errors of from_json_string.
  static GPT2Config from_json_file(const std::string& path);
  /// config.json text: every known field plus the kept unknown keys.
  std::string to_json_string() const;
  /// Writes to_json_string() to `path` atomically; throws loom::Error on I/O failure.
  void save(const std::string& path) const;
};

/// BERT (transformers.BertConfig). Defaults are those of `bert-base-uncased`.
struct BertConfig : PretrainedConfig {
  BertConfig();
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  /// "gelu" (exact, erf), or one of GPT2Config::activation_function's names.
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  /// Dropout before the classification head; hidden_dropout_prob when absent.
  std::optional<double> classifier_dropout;
  /// True makes self-attention causal (transformers' decoder BERT).
  bool is_decoder = false;

  /// Throws loom::Error "[BertConfig] ..." naming the bad field (as
  /// GPT2Config::validate; also position_embedding_type other than "absolute").
  void validate() const;
  static BertConfig from_json_string(const std::string& text,
                                     const std::string& where = "<string>");
  static BertConfig from_json_file(const std::string& path);
  std::string to_json_string() const;
  void save(const std::string& path) const;
};

/// The "model_type" of a config.json file ("" when absent); throws
/// loom::Error "[config] <path>: ..." when unreadable or not a JSON object.
std::string read_model_type(const std::string& path);

}  // namespace loom
