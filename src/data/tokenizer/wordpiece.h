// WordPiece model (BERT), as tokenizers/src/models/wordpiece/mod.rs applies it: a word of
// more than max_input_chars_per_word characters is [UNK]; otherwise it is cut greedily into
// the longest vocabulary entries from the left, every piece after the first carrying the
// continuing_subword_prefix ("##"); if some position has no match the whole word is [UNK].
//
// Speed: continuation pieces are looked up in a second table keyed without the prefix, so
// no string is built per lookup; candidate lengths start at the longest token in the
// vocabulary rather than at the word length.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "data/tokenizer/tokenizer_model.h"
#include "io/tokenizer_spec.h"

namespace loom::data {

class WordPieceModel final : public TokenizerModel {
 public:
  /// Builds the model; the unk token must be in the vocabulary (loom::Error otherwise).
  static std::unique_ptr<WordPieceModel> build(const io::TokenizerModelSpec& spec,
                                               const std::string& source);

  void tokenize(std::string_view piece, bool byte_level,
                std::vector<ModelToken>& out) const override;
  const TokenVocab& vocab() const override { return vocab_; }

 private:
  WordPieceModel() = default;

  TokenVocab vocab_;
  StringIdMap continuation_;  // token without prefix -> id of prefix + token
  int32_t unk_id_ = 0;
  std::string prefix_;
  size_t max_chars_ = 100;
  size_t max_bytes_ = 0;       // longest vocabulary entry
  size_t max_cont_bytes_ = 0;  // longest continuation entry (without prefix)
};

}  // namespace loom::data
