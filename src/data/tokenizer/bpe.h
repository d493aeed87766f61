// BPE model (byte-pair encoding), as the `tokenizers` library applies it
// (tokenizers/src/models/bpe/{model,word}.rs): a word starts as one symbol per character
// (per byte for byte-level pre-tokens), then the adjacent pair with the lowest merge rank
// is merged, leftmost first among equal ranks, until no pair has a merge.
//
// Speed: merges are looked up in a hash table keyed by the pair of ids (no strings);
// byte-level words start from a 256-entry byte -> id table; short words merge with a linear
// scan over cached pair ranks, long words with a heap; results are cached per word.
// Supports unk_token (+ fuse_unk), byte_fallback, continuing_subword_prefix,
// end_of_word_suffix and ignore_merges; dropout is rejected when the file is read.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/tokenizer/bpe_cache.h"
#include "data/tokenizer/bpe_merge_table.h"
#include "data/tokenizer/tokenizer_model.h"
#include "io/tokenizer_spec.h"

namespace loom::data {

class BpeModel final : public TokenizerModel {
 public:
  /// A symbol of a word being merged: token id and byte range, counted as tokenizers
  /// does (the running sum of the symbols' lengths: the range in the word unless an
  /// unknown character without unk_token added nothing before it).
  struct Symbol {
    int32_t id;
    uint32_t begin;
    uint32_t end;
  };

  /// Builds the model. Throws loom::Error naming `source` when a merge refers to a token
  /// that is not in the vocabulary or merges into one that is not.
  static std::unique_ptr<BpeModel> build(const io::TokenizerModelSpec& spec,
                                         const std::string& source);

  void tokenize(std::string_view piece, bool byte_level,
                std::vector<ModelToken>& out) const override;
  const TokenVocab& vocab() const override { return vocab_; }

  /// Applies the merges to `symbols` in place. `use_heap` picks the algorithm (both give
  /// the same result; exposed so tests can check that).
  void merge(std::vector<Symbol>& symbols, bool use_heap) const;

 private:
  BpeModel() = default;
  void initial_symbols(std::string_view piece, bool byte_level, std::vector<Symbol>& symbols) const;
  static void push_symbol(std::vector<Symbol>& symbols, int32_t id, uint32_t len);
  static void flush_unk(std::optional<Symbol>& unk, std::vector<Symbol>& symbols);
  bool push_byte_tokens(std::string_view unit, std::vector<Symbol>& symbols) const;
  void merge_small(std::vector<Symbol>& symbols) const;
  void merge_heap(std::vector<Symbol>& symbols) const;
  int32_t unk_id_or_throw() const;

  std::string source_;
  TokenVocab vocab_;
  BpeMergeTable merges_;
  std::array<int32_t, 256> byte_ids_{};  // id of each byte's byte-level character, or -1
  std::optional<std::string> unk_token_;
  std::optional<int32_t> unk_id_;
  std::string prefix_, suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  BpeWordCache cache_[2];  // [byte_level]
};

}  // namespace loom::data
