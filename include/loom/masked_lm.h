// loom::MaskedLM — the task interface of masked language models (BERT's
// BertForMaskedLM, ...): what the Trainer and `loom train` / `loom evaluate
// --task masked-lm` use, so none of them names a model class. A MaskedLM is a
// PretrainedModel whose forward on named inputs (input_ids [B,T],
// attention_mask, token_type_ids) returns logits [B,T,V] and, with labels
// [B,T] (-100 = not masked), the mean cross-entropy over the masked positions
// (transformers' BertForMaskedLM loss). Labels are not shifted.
//
//   std::shared_ptr<loom::PretrainedModel> m = loom::auto_from_pretrained(dir);
//   if (auto* mlm = dynamic_cast<loom::MaskedLM*>(m.get())) mlm->vocab_size();
#pragma once

#include <cstdint>

#include "loom/pretrained_model.h"

namespace loom {

class MaskedLM : public PretrainedModel {
 public:
  /// Size V of the logits' last axis (config vocab_size).
  virtual int64_t vocab_size() const = 0;
  /// Longest sequence the model takes (max_position_embeddings).
  virtual int64_t max_positions() const = 0;
  /// The PretrainedConfig part of the model's config (pad / mask-related ids, ...).
  virtual const PretrainedConfig& pretrained_config() const = 0;
};

}  // namespace loom
