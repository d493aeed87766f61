// BERT as transformers builds it (transformers/models/bert/modeling_bert.py):
// word + position + token-type embeddings -> LayerNorm -> dropout; post-LN
// encoder layers (self-attention -> dense -> dropout -> LayerNorm(x + input);
// intermediate dense -> exact GELU -> dense -> dropout -> LayerNorm(x +
// input)); a tanh pooler on the first token; heads for masked-LM (transform
// dense + GELU + LayerNorm, decoder tied to the word embeddings plus its own
// bias) and sequence classification (dropout + Linear on the pooled output).
// Parameter names match transformers' ("bert.encoder.layer.0.attention.self.query.weight").
#pragma once

#include <memory>

#include "loom/bert_config.h"
#include "loom/masked_lm.h"
#include "loom/pretrained_model.h"
#include "loom/sequence_classifier.h"

namespace loom {

class BertEmbeddings;
class BertLMPredictionHead;

/// The encoder: forward returns last_hidden_state [B,T,hidden] and, with the
/// pooler, pooler_output [B,hidden].
class BertModel : public PretrainedModel {
 public:
  using Config = BertConfig;
  /// Validates `config` (BertConfig::validate) and initializes weights as
  /// transformers (normal(0, initializer_range), the pad row of
  /// word_embeddings zero, LayerNorm 1/0, biases 0) unless inside
  /// nn::NoInitGuard. Starts in training mode.
  explicit BertModel(const BertConfig& config, bool add_pooling_layer = true);
  std::string type_name() const override { return "BertModel"; }

  /// input_ids [B,T] (T <= max_position_embeddings), attention_mask [B,T]
  /// (0 = padding, masked as keys), token_type_ids [B,T] (zeros when
  /// undefined; each < type_vocab_size), position_ids [B,T] or [1,T].
  /// Throws loom::Error "[BertModel] ..." for a missing input_ids or a
  /// wrong shape.
  ModelOutput forward(const ModelInputs& inputs) override;

  std::string architecture() const override { return "BertModel"; }
  std::string base_model_prefix() const override { return "bert"; }
  bool is_base_model() const override { return true; }
  std::string config_json() const override;
  std::vector<std::string> ignored_checkpoint_keys() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const BertConfig& config() const { return config_; }
  nn::Embedding& word_embeddings() const;

  static std::shared_ptr<BertModel> from_pretrained(const std::string& dir,
                                                    const Device& device = {},
                                                    const PretrainedOptions& options = {}) {
    return loom::from_pretrained<BertModel>(dir, device, options);
  }

 private:
  BertConfig config_;
  std::shared_ptr<BertEmbeddings> embeddings_;
  std::shared_ptr<nn::Module> encoder_;
  std::shared_ptr<nn::ModuleList> layers_;
  std::shared_ptr<nn::Linear> pooler_dense_;  // null without the pooling layer
};

/// BertModel (no pooler) + the MLM head "cls.predictions". With labels [B,T]
/// (-100 = not masked), loss = mean cross-entropy over the other positions.
class BertForMaskedLM : public MaskedLM {
 public:
  using Config = BertConfig;
  explicit BertForMaskedLM(const BertConfig& config);
  std::string type_name() const override { return "BertForMaskedLM"; }
  /// Returns logits [B,T,vocab_size] (and loss with labels).
  ModelOutput forward(const ModelInputs& inputs) override;

  std::string architecture() const override { return "BertForMaskedLM"; }
  std::string base_model_prefix() const override { return "bert"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override;
  std::vector<std::string> ignored_checkpoint_keys() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const BertConfig& config() const { return bert_->config(); }
  BertModel& bert() const { return *bert_; }
  int64_t vocab_size() const override { return config().vocab_size; }
  int64_t max_positions() const override { return config().max_position_embeddings; }
  const PretrainedConfig& pretrained_config() const override { return config(); }

  static std::shared_ptr<BertForMaskedLM> from_pretrained(const std::string& dir,
                                                          const Device& device = {},
                                                          const PretrainedOptions& options = {}) {
    return loom::from_pretrained<BertForMaskedLM>(dir, device, options);
  }

 private:
  std::shared_ptr<BertModel> bert_;
  std::shared_ptr<BertLMPredictionHead> predictions_;
};

/// BertModel (with pooler) + dropout (classifier_dropout, else
/// hidden_dropout_prob) + classifier Linear(hidden, num_labels). Loss by
/// config.problem_type (inferred when empty, as transformers: num_labels 1
/// -> regression; integer labels -> single_label_classification; else
/// multi_label_classification): MSE, cross-entropy, or BCE-with-logits.
class BertForSequenceClassification : public SequenceClassifier {
 public:
  using Config = BertConfig;
  explicit BertForSequenceClassification(const BertConfig& config);
  std::string type_name() const override { return "BertForSequenceClassification"; }
  /// Returns logits [B,num_labels]; labels: [B] integer class ids
  /// (single-label), [B] or [B,1] floats (regression), [B,num_labels]
  /// floats (multi-label). Throws loom::Error "[BertForSequenceClassification]
  /// ..." for labels of the wrong shape or dtype.
  ModelOutput forward(const ModelInputs& inputs) override;

  std::string architecture() const override { return "BertForSequenceClassification"; }
  std::string base_model_prefix() const override { return "bert"; }
  bool is_base_model() const override { return false; }
  std::string config_json() const override;
  std::vector<std::string> ignored_checkpoint_keys() const override;
  void init_weights(const std::function<bool(const std::string&)>& select) override;
  using PretrainedModel::init_weights;

  const BertConfig& config() const { return bert_->config(); }
  BertModel& bert() const { return *bert_; }
  nn::Linear& classifier() const { return *classifier_; }
  int64_t num_labels() const override { return config().num_labels(); }
  int64_t max_positions() const override { return config().max_position_embeddings; }
  const PretrainedConfig& pretrained_config() const override { return config(); }

  static std::shared_ptr<BertForSequenceClassification> from_pretrained(
      const std::string& dir, const Device& device = {}, const PretrainedOptions& options = {}) {
    return loom::from_pretrained<BertForSequenceClassification>(dir, device, options);
  }

 private:
  std::shared_ptr<BertModel> bert_;
  std::shared_ptr<nn::Dropout> dropout_;
  std::shared_ptr<nn::Linear> classifier_;
};

}  // namespace loom
