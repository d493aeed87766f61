// SFT packing and padding-free batches: TRL's pack_dataset strategies
// (trl/data_utils.py: _pack_bfd, best-fit decreasing, and _pack_wrapped /
// pack_examples) and a padding-free collator in the manner of transformers'
// DataCollatorWithFlattening, with a fixed token budget so a lazy device
// compiles one graph for a whole packed epoch.
//
//   std::vector<Example> rows = data::pack_bfd(examples, 1024);
//   data::PaddingFreeCollator c({.pad_id = pad, .buckets = {1024}});
//   Batch b = c.collate({rows[0], rows[1]});
//   // b: input_ids, labels, position_ids [2, 1024]; no attention_mask
//
// A packed row keeps which sequence each token belongs to in its
// attention_mask: 1 for the first sequence, 2 for the second, ... (the
// sequence-index mask of axolotl's multipack); only PaddingFreeCollator reads
// that. The collator turns it into position_ids restarting at 0 per
// sequence; the models (models::packed_sequence_mask) derive the sequence
// boundaries from those position ids when a batch has no attention_mask, as
// transformers' find_packed_sequence_indices does, so no token attends to
// another sequence. The first label of every sequence is -100
// (DataCollatorWithFlattening's separator), so the causal-LM shift never
// predicts one sequence's first token from the previous sequence: packed
// per-sequence losses equal the unpacked ones.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/collator.h"
#include "loom/dataset.h"

namespace loom::data {

/// TRL's best-fit decreasing (_pack_bfd): the items sorted by length,
/// longest first (a stable sort: equal lengths keep their order); each goes
/// into the open bin with the least space left that still holds it (of bins
/// with equal space, the one that reached that space first), else into a new
/// bin. Returns the bins in the order they were opened, each the item indices
/// in the order they were added. Throws loom::Error "[packing] ..." when
/// capacity < 1 or a length is outside [1, capacity].
std::vector<std::vector<size_t>> bfd_bins(const std::vector<int64_t>& lengths, int64_t capacity);

/// Examples packed by bfd_bins into rows of at most `max_length` tokens,
/// after cutting each to its first max_length tokens (TRL truncates the same
/// way before packing). Each row: the input_ids and labels of its sequences
/// concatenated, attention_mask the 1-based sequence index per token. Throws
/// loom::Error for an example without labels or tokens, or max_length < 1.
std::vector<Example> pack_bfd(const std::vector<Example>& examples, int64_t max_length);

/// TRL's "wrapped" strategy (pack_examples): every example's input_ids and
/// labels concatenated in order and cut into rows of max_length tokens (the
/// last shorter); sequences run across rows and attend to each other within a
/// row, as in TRL. The rows are plain examples (attention_mask all ones).
std::vector<Example> pack_wrapped(const std::vector<Example>& examples, int64_t max_length);

/// How PaddingFreeCollator lays a batch out.
struct PaddingFreeOptions {
  int64_t pad_id = 0;  ///< input_ids value of the padding that fills the budget
  /// true (--padding_free without packing): the batch's sequences
  /// concatenated into one row [1, T] (DataCollatorWithFlattening);
  /// false (packing): one packed row per example, [B, T].
  bool flatten = false;
  /// Allowed row lengths, ascending: a row is padded to the smallest that
  /// holds it ({max_length}: one fixed budget, so one graph).
  std::vector<int64_t> buckets;
};

/// Batches without attention_mask: "input_ids", "labels" and "position_ids"
/// [B, T] i64. position_ids restart at 0 at every sequence (a sequence is an
/// example, or a run of one index of a packed row's attention_mask); the
/// first label of every sequence is -100. The padding that fills a row up to
/// its bucket has pad_id, label -100 and position 0, so each padding token is
/// a sequence of its own that nothing attends to. CollateContext::padding
/// (data parallel repeats) sets the labels of those examples to -100.
/// Throws loom::Error "[collator] ..." for an example without labels or a row
/// longer than the largest bucket.
class PaddingFreeCollator : public Collator {
 public:
  explicit PaddingFreeCollator(PaddingFreeOptions options);
  Batch collate(const std::vector<Example>& examples,
                const CollateContext& context = {}) const override;

 private:
  PaddingFreeOptions options_;
};

}  // namespace loom::data
