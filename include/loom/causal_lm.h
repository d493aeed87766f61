// loom::CausalLM — the task interface of decoder language models (GPT-2,
// Llama, Qwen2, ...): what the Trainer, `loom train` / `loom evaluate` /
// `loom generate` and loom::generate use, so none of them names a model class.
// A CausalLM is a PretrainedModel (forward on named inputs: logits [B,T,V]
// and, with labels, transformers' ForCausalLMLoss) that can also run over a
// StaticCache (transformers' forward with past_key_values = StaticCache and
// cache_position).
//
//   std::shared_ptr<loom::PretrainedModel> m = loom::auto_from_pretrained(dir);
//   auto* lm = dynamic_cast<loom::CausalLM*>(m.get());        // null: not a causal LM
//   loom::StaticCache cache = lm->new_static_cache(1, 64);
//   loom::Tensor logits = lm->forward_with_cache(ids, loom::arange(5), cache, 1).logits;
#pragma once

#include <cstdint>

#include "loom/kv_cache.h"
#include "loom/pretrained_model.h"

namespace loom {

class CausalLM : public PretrainedModel {
 public:
  /// Forward over S new tokens input_ids [B,S] (B = cache.batch_size())
  /// whose absolute positions are cache_position [S] (i64, on the model's
  /// device; they are also the cache rows written). Each token attends to
  /// every cache row <= its position, so the logits equal forward() on the
  /// whole sequence so far. No padding mask. Returns logits [B, S', V] for
  /// the last S' = min(S, logits_to_keep) positions (0 = all, transformers'
  /// logits_to_keep) and last_hidden_state [B,S,C]. Throws loom::Error
  /// "[<class>] ..." for bad input_ids, a cache_position that is not [S], a
  /// cache that does not fit the model, or logits_to_keep < 0.
  virtual ModelOutput forward_with_cache(const Tensor& input_ids, const Tensor& cache_position,
                                         StaticCache& cache, int64_t logits_to_keep = 0) = 0;
  /// A zeroed StaticCache on the model's device and dtype, one key and value
  /// buffer [batch_size, num_key_value_heads, max_cache_len, head_dim] per
  /// layer. Throws loom::Error unless 1 <= max_cache_len <= max_positions().
  virtual StaticCache new_static_cache(int64_t batch_size, int64_t max_cache_len) const = 0;
  /// Size V of the logits' last axis (config vocab_size).
  virtual int64_t vocab_size() const = 0;
  /// Longest sequence the model takes (n_positions / max_position_embeddings).
  virtual int64_t max_positions() const = 0;
  /// The PretrainedConfig part of the model's config (bos/eos/pad token ids, ...).
  virtual const PretrainedConfig& pretrained_config() const = 0;
};

/// transformers' causal-LM loss (loss_utils.ForCausalLMLoss): labels [B,T]
/// (i64/i32) shifted left by one (the last position gets -100), cross-entropy
/// against logits [B,T,V], mean over labels != -100. Throws loom::Error
/// "[causal_lm_loss] ..." for mismatched shapes or non-integer labels.
Tensor causal_lm_loss(const Tensor& logits, const Tensor& labels);

}  // namespace loom
