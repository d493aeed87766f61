// loom::SequenceClassifier — the task interface of sequence classification
// models (transformers' *ForSequenceClassification: BERT's, ...): what the
// Trainer and `loom train` / `loom evaluate --task text-classification` use,
// so none of them names a model class. Its forward on named inputs
// (input_ids [B,T], attention_mask, token_type_ids) returns logits
// [B, num_labels] and, with labels, the loss of config.problem_type
// (regression: MSE; single_label_classification: cross-entropy over integer
// class ids [B]; multi_label_classification: BCE-with-logits on [B, num_labels]).
// Class names are the config's id2label.
//
//   auto* cls = dynamic_cast<loom::SequenceClassifier*>(model.get());
//   int64_t n = cls->num_labels();      // = pretrained_config().id2label.size()
#pragma once

#include <cstdint>

#include "loom/pretrained_model.h"

namespace loom {

class SequenceClassifier : public PretrainedModel {
 public:
  /// Number of classes: the logits' last axis (config id2label size).
  virtual int64_t num_labels() const = 0;
  /// Longest sequence the model takes (max_position_embeddings).
  virtual int64_t max_positions() const = 0;
  /// The PretrainedConfig part of the model's config (id2label, problem_type, ...).
  virtual const PretrainedConfig& pretrained_config() const = 0;
};

}  // namespace loom
