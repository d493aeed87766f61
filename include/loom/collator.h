// Collators: a list of Examples -> one padded Batch of tensors, as Hugging
// Face transformers' data collators (DataCollatorWithPadding,
// DataCollatorForLanguageModeling with mlm=False / mlm=True).
//
//   loom::data::PadOptions pad{.pad_to_multiple_of = 16, .pad_id = 0};
//   loom::data::CausalLMCollator clm(pad);
//   loom::data::Batch b = clm.collate(examples);
//   // b.at("input_ids"): [B, T] i64, T = longest rounded up to 16
//   // b.at("labels"):    input_ids with padded positions = -100
//
// On a lazy device every distinct padded length is a distinct graph, so it
// compiles once more: pad to a multiple (pad_to_multiple_of) or to a few fixed
// lengths (kMaxLength, kBuckets) to bound the number of compiles.
//
// Collators are immutable and may be called from several threads at once. A
// random collator (masked LM) draws from Philox keyed by its seed and the
// CollateContext (epoch, batch index), so a batch is the same whatever the
// number of DataLoader workers.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "loom/dataset.h"

namespace loom::data {

/// Label value the loss ignores (torch.nn.CrossEntropyLoss's ignore_index).
inline constexpr int64_t kIgnoreIndex = -100;

/// How a batch is padded (transformers' PaddingStrategy + pad_to_multiple_of).
struct PadOptions {
  enum class Strategy {
    kLongest,    ///< to the longest example of the batch ("longest")
    kMaxLength,  ///< always to max_length ("max_length")
    kBuckets,    ///< to the smallest of `buckets` that holds the longest example
  };
  Strategy strategy = Strategy::kLongest;
  int64_t max_length = 0;          ///< kMaxLength target
  std::vector<int64_t> buckets{};  ///< kBuckets: allowed lengths, ascending
  /// Round the length up to a multiple of this (0: no rounding), after the
  /// strategy (as transformers' tokenizer.pad does).
  int64_t pad_to_multiple_of = 0;
  int64_t pad_id = 0;       ///< input_ids value at padded positions
  int64_t pad_type_id = 0;  ///< token_type_ids value at padded positions
  bool pad_left = false;    ///< padding_side="left": padding before the tokens
};

/// Length a batch whose longest example has `longest` tokens is padded to.
/// Throws loom::Error "[collator] ..." when an example is longer than
/// max_length (kMaxLength) or than the largest bucket, when buckets are empty
/// or not ascending, or when pad_to_multiple_of < 0.
int64_t padded_length(int64_t longest, const PadOptions& options);

/// Where a batch sits in the run; random collators derive their draws from it.
struct CollateContext {
  int64_t epoch = 0;
  int64_t batch_index = 0;  ///< index of the batch within its epoch
  /// Per example of the batch: true where the sampler marked it padding
  /// (Sampler::padding: a repeat of DistributedSampler). Empty when no
  /// example is. Only PaddingMaskCollator acts on it.
  std::vector<bool> padding{};
};

/// Examples -> Batch.
class Collator {
 public:
  virtual ~Collator() = default;
  /// Pads and stacks `examples` (at least one). Throws loom::Error when the
  /// list is empty, an example is empty or too long for the padding options,
  /// or examples disagree on which fields they have.
  virtual Batch collate(const std::vector<Example>& examples,
                        const CollateContext& context = {}) const = 0;
};

/// DataCollatorWithPadding (+ DataCollatorForTokenClassification's labels):
/// "input_ids" padded with pad_id, "attention_mask" (0 at padding; all ones
/// where an example has none), "token_type_ids" padded with pad_type_id when
/// the examples have them; per-token `labels` -> "labels" [B,T] padded with
/// -100; class `label` -> "labels" [B]. special_tokens_mask is not output.
class PaddingCollator : public Collator {
 public:
  explicit PaddingCollator(PadOptions options = {});
  Batch collate(const std::vector<Example>& examples,
                const CollateContext& context = {}) const override;
  const PadOptions& options() const { return options_; }

 private:
  PadOptions options_;
};

/// DataCollatorForLanguageModeling(mlm=False): the PaddingCollator batch with
/// "labels" = input_ids and -100 at padded positions (attention_mask == 0).
/// transformers instead sets -100 wherever the id equals pad_token_id, which
/// differs only when the pad id is also a real token (GPT-2 with pad = eos).
/// The model shifts labels; the collator does not.
class CausalLMCollator : public Collator {
 public:
  explicit CausalLMCollator(PadOptions options = {});
  Batch collate(const std::vector<Example>& examples,
                const CollateContext& context = {}) const override;

 private:
  PaddingCollator pad_;
};

/// Masked-LM settings (transformers' DataCollatorForLanguageModeling fields).
struct MaskingOptions {
  double mlm_probability = 0.15;     ///< share of non-special tokens chosen
  double mask_replace_prob = 0.8;    ///< chosen -> mask_id
  double random_replace_prob = 0.1;  ///< chosen -> a uniform id in [0, vocab_size)
  int64_t mask_id = -1;              ///< the [MASK] token id (required)
  int64_t vocab_size = 0;            ///< len(tokenizer): random ids are below it (required)
  /// Ids never chosen when an example has no special_tokens_mask ([CLS],
  /// [SEP], ...); padded positions are never chosen either way.
  std::vector<int64_t> special_ids{};
  uint64_t seed = 0;
};

/// DataCollatorForLanguageModeling(mlm=True): pads like PaddingCollator, then
/// for every non-special, non-padding position draws, as transformers'
/// torch_mask_tokens does: chosen ~ Bernoulli(mlm_probability); replaced ~
/// Bernoulli(mask_replace_prob) among chosen -> mask_id; random ~
/// Bernoulli(random_replace_prob / (1 - mask_replace_prob)) among chosen and
/// not replaced -> a uniform random id; the rest keep their id. "labels" holds
/// the original id at chosen positions and -100 elsewhere. A token's four
/// draws are the four words of one Philox4x32-10 block with key = seed and
/// counter = (token index in its example, example index in the batch,
/// (epoch << 32) + batch_index), so the result is a pure function of (seed,
/// epoch, batch_index, examples) and does not depend on the padding.
/// Bernoulli(p) is `uniform < p` with uniform = (word >> 8) * 2^-24.
class MaskedLMCollator : public Collator {
 public:
  /// Throws loom::Error for probabilities outside [0, 1], mask_replace_prob +
  /// random_replace_prob > 1, mask_id < 0 or vocab_size <= mask_id.
  MaskedLMCollator(PadOptions pad, MaskingOptions masking);
  Batch collate(const std::vector<Example>& examples,
                const CollateContext& context = {}) const override;

 private:
  PaddingCollator pad_;
  MaskingOptions masking_;
};

/// Gives the padding examples of a collated batch labels that count zero:
/// every "labels" entry of row b (labels [B] class ids, or [B, T] token
/// labels; any [B, ...] integer tensor) becomes kIgnoreIndex where
/// padding[b]. cross_entropy skips them, so they add nothing to the loss,
/// its item count or the gradients. No-op for empty `padding` or a batch
/// without "labels". Throws loom::Error "[collator] padding flags for 3
/// examples, the batch has 4" when sizes differ, and "[collator] cannot mask
/// labels of dtype float32 ..." for floating-point labels.
void mask_padding_labels(Batch& batch, const std::vector<bool>& padding);

/// Wraps a collator: collates with it, then mask_padding_labels(batch,
/// context.padding). The Trainer uses it under data parallel so that the
/// samples DistributedSampler repeats are not trained twice.
class PaddingMaskCollator : public Collator {
 public:
  /// Throws loom::Error for a null `inner`.
  explicit PaddingMaskCollator(std::shared_ptr<const Collator> inner);
  Batch collate(const std::vector<Example>& examples,
                const CollateContext& context = {}) const override;

 private:
  std::shared_ptr<const Collator> inner_;
};

}  // namespace loom::data
