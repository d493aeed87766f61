// BERT submodules shared by bert.cpp and bert_heads.cpp: the embeddings and
// the masked-LM prediction head (transformers' BertEmbeddings and
// BertLMPredictionHead). Internal to src/nn.
#pragma once

#include <memory>

#include "loom/bert.h"

namespace loom {

/// A module that only names its children ("encoder", "pooler", "cls"), so
/// state_dict keys and module types follow transformers' layout.
class BertContainer : public nn::Module {
 public:
  explicit BertContainer(std::string type) : type_(std::move(type)) {}
  std::string type_name() const override { return type_; }

 private:
  std::string type_;
};

/// word + token-type + position embeddings -> LayerNorm -> dropout.
class BertEmbeddings : public nn::Module {
 public:
  explicit BertEmbeddings(const BertConfig& c);
  std::string type_name() const override { return "BertEmbeddings"; }
  /// ids [B,T]; token_type_ids [B,T] (zeros when undefined); position_ids
  /// [B,T] or [1,T] (arange(T) when undefined) -> [B,T,hidden].
  Tensor forward(const Tensor& ids, const Tensor& token_type_ids, const Tensor& position_ids) const;
  nn::Embedding& word_embeddings() const { return *word_; }

 private:
  std::shared_ptr<nn::Embedding> word_, position_, token_type_;
  std::shared_ptr<nn::LayerNorm> ln_;
  std::shared_ptr<nn::Dropout> dropout_;
};

/// "cls.predictions": own `bias` [V], transform (dense -> act -> LayerNorm),
/// decoder Linear(hidden, V) whose weight is the word embeddings' (when
/// tied) and whose bias is `bias`.
class BertLMPredictionHead : public nn::Module {
 public:
  BertLMPredictionHead(const BertConfig& c, const Tensor& word_embeddings);
  std::string type_name() const override { return "BertLMPredictionHead"; }
  /// hidden [B,T,C] -> logits [B,T,V].
  Tensor forward(const Tensor& hidden) const;
  const Tensor& bias() const { return param(bias_); }
  nn::Linear& decoder() const { return *decoder_; }

 private:
  std::string act_;
  size_t bias_ = 0;
  std::shared_ptr<nn::Linear> dense_, decoder_;
  std::shared_ptr<nn::LayerNorm> ln_;
};

}  // namespace loom
