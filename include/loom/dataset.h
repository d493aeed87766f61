// Datasets: tokenized examples held in memory, and the Batch a collator makes
// of them. Text is tokenized once, when the dataset is built (like
// `dataset.map(tokenize)` in Hugging Face datasets), never per epoch.
//
//   auto tokenize = [&](const std::string& s) { return my_ids(s); };
//   // run_clm: concatenate every line's ids, cut into 128-token blocks,
//   // labels = input_ids.
//   loom::data::InMemoryDataset lm =
//       loom::data::text_blocks_dataset("train.txt", tokenize, {.block_size = 128});
//   // A classification table: text column "sentence", string labels -> ids
//   // in sorted order (datasets' ClassLabel).
//   loom::data::InMemoryDataset cls = loom::data::table_dataset(
//       "train.csv", tokenize, {.text_column = "sentence", .label_column = "label"});
//   cls.label_names();  // {"negative", "positive"}
//
// All token ids are int64. Datasets are immutable after construction and safe
// to read from several threads (DataLoader workers) at once.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/tensor.h"

namespace loom::data {

/// One tokenized example: a row of a Hugging Face dataset after tokenization.
/// Every non-empty per-token field has input_ids.size() entries.
struct Example {
  std::vector<int64_t> input_ids;            ///< token ids
  std::vector<int64_t> attention_mask;       ///< 1 = real token; empty means all ones
  std::vector<int64_t> token_type_ids;       ///< segment ids; empty: the model gets none
  std::vector<int64_t> special_tokens_mask;  ///< 1 = special token; empty: unknown
  std::vector<int64_t> labels;               ///< per-token labels (LM); empty: none
  std::optional<int64_t> label;              ///< class id (sequence classification)
};

/// A batch: tensors by name, as the dict a Hugging Face collator returns.
/// Names used by loom's collators: "input_ids" [B,T] i64, "attention_mask"
/// [B,T] i64 (1 = real token, 0 = padding), "token_type_ids" [B,T] i64,
/// "labels" [B,T] i64 (−100 = ignored) or [B] i64 (class ids).
class Batch {
 public:
  /// The tensor called `name`. Throws loom::Error "[batch] no tensor 'x'
  /// (has: attention_mask, input_ids)" when absent.
  const Tensor& at(const std::string& name) const;
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  /// Adds or replaces the tensor called `name`.
  void set(const std::string& name, Tensor tensor) { tensors_[name] = std::move(tensor); }
  /// Number of examples: dim 0 of the tensors (0 for an empty batch).
  int64_t size() const;
  /// A copy with every tensor converted with Tensor::to(device).
  Batch to(const Device& device) const;
  /// All tensors, sorted by name.
  const std::map<std::string, Tensor>& tensors() const { return tensors_; }

 private:
  std::map<std::string, Tensor> tensors_;
};

/// A map-style dataset (torch.utils.data.Dataset): `size()` examples,
/// example i by `get(i)`. get() is called from DataLoader worker threads at
/// the same time, so it must be safe to call concurrently.
class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  /// Example `index`; throws loom::Error for an index outside [0, size()).
  virtual Example get(int64_t index) const = 0;
};

/// Examples held in memory.
class InMemoryDataset : public Dataset {
 public:
  InMemoryDataset() = default;
  /// Takes the examples; `label_names[i]` names class id i (may be empty).
  /// Throws loom::Error "[dataset] example 3: attention_mask has 5 entries,
  /// input_ids 6" when a per-token field's length differs from input_ids'.
  explicit InMemoryDataset(std::vector<Example> examples,
                           std::vector<std::string> label_names = {});
  int64_t size() const override { return static_cast<int64_t>(examples_.size()); }
  Example get(int64_t index) const override { return at(index); }
  /// Example `index` without a copy; loom::Error when out of range.
  const Example& at(int64_t index) const;
  const std::vector<Example>& examples() const { return examples_; }
  /// Class names: label_names()[id] (empty unless labels were strings or given).
  const std::vector<std::string>& label_names() const { return label_names_; }

 private:
  std::vector<Example> examples_;
  std::vector<std::string> label_names_;
};

/// Cuts every per-token field of `e` to at most `max_length` entries (the
/// end is dropped, special tokens included); no-op for max_length <= 0.
void truncate_example(Example& e, int64_t max_length);

/// Text -> token ids (e.g. a tokenizer's encode().ids, converted to int64).
using TokenizeFn = std::function<std::vector<int64_t>(const std::string& text)>;

/// Text (and, for pair tasks, a second text) -> an Example's token fields
/// (input_ids and optionally token_type_ids, attention_mask,
/// special_tokens_mask). `pair` is nullptr for a single text.
using TextEncoder = std::function<Example(const std::string& text, const std::string* pair)>;

/// A TextEncoder that fills input_ids with `tokenize(text)`; given a pair it
/// throws loom::Error (a plain tokenize function cannot join two texts).
TextEncoder ids_encoder(TokenizeFn tokenize);

/// Options for text_lines_dataset. The defaults are transformers' run_mlm
/// with --line_by_line: blank lines dropped, line breaks removed.
struct TextLinesOptions {
  bool keep_linebreaks = false;  ///< keep each line's trailing "\n"
  bool skip_blank_lines = true;  ///< drop empty and whitespace-only lines
  int64_t max_length = 0;        ///< keep at most this many ids (0: all)
};

/// One example per line of the text file at `path` (universal newlines,
/// BOM dropped; see io's split_text_lines). Throws loom::Error when the file
/// cannot be read, and rethrows errors of `encode`.
InMemoryDataset text_lines_dataset(const std::string& path, const TextEncoder& encode,
                                   const TextLinesOptions& options = {});
InMemoryDataset text_lines_dataset(const std::string& path, const TokenizeFn& tokenize,
                                   const TextLinesOptions& options = {});

/// Options for text_blocks_dataset; the defaults are transformers' run_clm.
struct TextBlocksOptions {
  int64_t block_size = 1024;    ///< tokens per example (> 0)
  bool keep_linebreaks = true;  ///< run_clm's --keep_linebreaks default
  /// Lines per concatenation group: 0 joins the whole file; run_clm's
  /// `map(group_texts, batched=True)` uses groups of 1000 (each group drops
  /// its own remainder).
  int64_t group_size = 0;
};

/// run_clm's "group texts": tokenizes every line of `path` (blank lines too),
/// concatenates the ids, drops the remainder shorter than block_size and cuts
/// the rest into examples of block_size ids with labels = input_ids.
/// Throws loom::Error for block_size <= 0 or an unreadable file.
InMemoryDataset text_blocks_dataset(const std::string& path, const TokenizeFn& tokenize,
                                    const TextBlocksOptions& options = {});

/// The grouping step alone, on already tokenized texts: concatenation in
/// order, in groups of `group_size` texts (0: all), each group cut into
/// block_size blocks with its remainder dropped; labels = input_ids.
std::vector<Example> group_texts(const std::vector<std::vector<int64_t>>& tokenized,
                                 int64_t block_size, int64_t group_size = 0);

/// Options for table_dataset.
struct TableOptions {
  std::string text_column = "text";
  std::string text_pair_column{};  ///< second text for pair tasks (empty: none)
  std::string label_column{};      ///< empty: examples without labels
  /// Class names in id order. Empty: inferred — integer labels are kept as
  /// they are; string labels become ids in sorted (byte) order, as datasets'
  /// ClassLabel from `class_encode_column` and run_glue's sorted label_list.
  std::vector<std::string> label_names{};
  int64_t max_length = 0;  ///< keep at most this many ids (0: all)
  /// Non-empty: the integer labels a validation file may use, those of the
  /// training split (run_glue takes its label_list from the training split):
  /// a non-negative integer label not among them is an error naming the file
  /// and line. (A negative one, GLUE's -1 "no label", is left to the caller.)
  std::vector<int64_t> known_integer_labels{};
};

/// Examples from a CSV (.csv), TSV (.tsv) or JSON Lines (.jsonl, .json) file.
/// CSV/TSV labels are integers when every label field is a decimal integer.
/// Throws loom::Error naming the file, the line and the column when the file
/// is malformed, a column is missing (from the header, or from a JSON row), a
/// text cell is not a string, a label is null/float/empty/not in
/// `label_names` (or `known_integer_labels`), or labels mix integers and strings.
InMemoryDataset table_dataset(const std::string& path, const TextEncoder& encode,
                              const TableOptions& options = {});
InMemoryDataset table_dataset(const std::string& path, const TokenizeFn& tokenize,
                              const TableOptions& options = {});

}  // namespace loom::data
