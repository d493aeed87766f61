// SFT examples: rows in TRL's dataset schemas tokenized as TRL's SFTTrainer
// prepares them (trl/trainer/sft_trainer.py, _prepare_dataset, TRL 1.16):
// the schema detected per row, EOS appended to non-conversational text, the
// chat template applied to conversations, the completion and assistant masks
// folded into labels (-100 where the loss is masked), truncation keeping the
// first max_length tokens, and examples left without a label token dropped.
//
//   data::SftOptions o;  o.eos_token = "<|im_end|>";  o.max_length = 1024;
//   data::SftExamples ex = data::sft_examples(rows, tok, &tmpl, o);
//   // ex.examples[i].input_ids, .labels (same length, -100 = no loss)
//
// Rows are JSON objects with where-strings ("train.jsonl:3") for errors.
// Every fault is a loom::Error "[sft] <where>: ..." naming the row and field.
// Assumes the tokenizer adds its post-processor's special tokens to plain
// text (transformers' tokenizer(text)) and none to rendered chats
// (apply_chat_template(tokenize=True)).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/chat_template.h"
#include "loom/dataset.h"
#include "loom/tokenizer.h"

namespace loom::data {

/// TRL's dataset types (docs/sft.md): language modeling ({"text"}),
/// conversational ({"messages"}), prompt-completion in standard (strings) and
/// conversational (message lists) form, and rows already tokenized
/// ({"input_ids"}, optional "completion_mask" / "assistant_masks": TRL's
/// is_processed datasets, used as they are).
enum class SftSchema {
  kText,
  kMessages,
  kPromptCompletion,
  kConversationalPromptCompletion,
  kTokenized
};

/// "language modeling", "conversational", ...: the schema as TRL's docs name it.
const char* sft_schema_name(SftSchema schema);

/// SFTConfig's fields that change the examples.
struct SftOptions {
  std::string dataset_text_field = "text";
  /// Appended to non-conversational text and completions that do not already
  /// end with it (TRL's add_eos); required for those schemas.
  std::string eos_token;
  /// Non-empty: the chat template's `eos_token` variable (TRL's --eos_token
  /// sets tokenizer.eos_token, which apply_chat_template passes on).
  std::string template_eos_token;
  /// nullopt: true for prompt-completion rows (TRL's default).
  std::optional<bool> completion_only_loss;
  /// Loss on the `{% generation %}` tokens only (conversational rows).
  bool assistant_only_loss = false;
  /// Keep the first max_length tokens (TRL's truncation_mode keep_start); nullopt: no cut.
  std::optional<int64_t> max_length = 1024;
};

/// One row as read: its JSON object and where it came from ("train.jsonl:3").
struct SftRow {
  nlohmann::ordered_json value;
  std::string where;
};

/// The tokenized rows of one split.
struct SftExamples {
  std::vector<Example> examples;  ///< input_ids and labels, one per kept row
  SftSchema schema = SftSchema::kText;
  int64_t truncated = 0;  ///< rows longer than max_length, cut
  int64_t dropped = 0;    ///< rows left with no label token after the cut, dropped (as TRL)
};

/// The schema of one row, as TRL's _prepare_dataset picks it: "input_ids"
/// (already tokenized) first, then as its tokenize_fn: "prompt" (with
/// "completion"), then "messages", then `dataset_text_field`. Throws
/// loom::Error for a row that is not an object or has none of them.
SftSchema sft_schema(const SftRow& row, const std::string& dataset_text_field);

/// One row's ids and labels before truncation. `tmpl` may be null when no row
/// is conversational. Throws loom::Error "[sft] <where>: ..." for a field of
/// the wrong type, a message without role/content or with an unknown role
/// (system, user, assistant, tool are known), a conversation without any
/// assistant token under assistant_only_loss, or a template error.
Example sft_example(const SftRow& row, SftSchema schema, const Tokenizer& tok,
                    const ChatTemplate* tmpl, const SftOptions& options);

/// Every row: the schema of the first, which every other row must share (a
/// row of another schema is an error naming both), then sft_example,
/// truncation and the drop of rows without a label token. Rows are
/// tokenized on all cores; the order is kept.
SftExamples sft_examples(const std::vector<SftRow>& rows, const Tokenizer& tok,
                         const ChatTemplate* tmpl, const SftOptions& options);

}  // namespace loom::data
