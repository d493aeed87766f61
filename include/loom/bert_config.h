// BertConfig: BERT's config.json as Hugging Face transformers writes it
// (transformers/models/bert/configuration_bert.py), with transformers' field
// names and defaults. Its fields are declared once, in the table of
// src/nn/models/bert/bert_config.cpp, from which reading, writing and the
// per-field checks come. Reading accepts `num_labels` in place of `id2label`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loom/config.h"
#include "loom/model_config.h"

namespace loom {

/// BERT (transformers.BertConfig). Defaults are those of `bert-base-uncased`.
struct BertConfig : ModelConfigBase<BertConfig> {
  BertConfig();
  int64_t vocab_size = 30522;
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  /// "gelu" (exact, erf), or one of GPT2Config::activation_function's names (loom/gpt2_config.h).
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
  std::string to_json_string() const;
  // from_json_file(path) and save(path): ModelConfigBase (loom/config.h).

  // What the registry needs (loom::ModelConfig), counted from
  // transformers' modeling_bert.py module layout.
  /// Parameters of BertModel with its pooler:
  /// (V + P + T)*H + 2H + L*(4(H*H + H) + 4H + (H*I + I) + (I*H + H)) + H*H + H.
  double parameter_count() const;
  /// "num_hidden_layers 12, hidden_size 768, intermediate_size 3072, ...".
  std::string size_text() const;
  /// The three embeddings, layer 0's query and intermediate weights.
  std::vector<ConfigTensor> config_tensors() const;
  int64_t max_positions() const { return max_position_embeddings; }
  /// peft's default for bert: {"query", "value"}.
  std::vector<std::string> default_lora_targets() const { return {"query", "value"}; }
  /// transformers' BertModel._no_split_modules: "BertLayer".
  std::string layer_class() const { return "BertLayer"; }
};

static_assert(ModelConfig<BertConfig>);

}  // namespace loom
