// Added tokens (tokenizer.json "added_tokens"): special tokens such as [CLS] or
// <|endoftext|> and user-added words, found in the text before normalization
// (normalized = false) or in each normalized segment (normalized = true), as
// tokenizers/src/tokenizer/added_vocabulary.rs does: leftmost-longest matches, a match
// flagged single_word is dropped when a word character touches it, lstrip/rstrip extend
// the match over neighbouring whitespace. Matching walks a byte trie from each position
// whose first byte can start a token, so text without such bytes costs one table lookup
// per byte.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer/tokenizer_model.h"
#include "io/tokenizer_spec.h"

namespace loom::data {

class NormalizerChain;

/// A piece of text: bytes [begin, end), and the added token it is (id >= 0) or -1.
struct TextSegment {
  uint32_t begin;
  uint32_t end;
  int32_t id;
};

class AddedVocab {
 public:
  AddedVocab() = default;
  /// `normalizer` (may be null) normalizes the patterns of normalized tokens.
  AddedVocab(const std::vector<io::AddedTokenSpec>& tokens, const NormalizerChain* normalizer);

  /// Splits `text` into segments covering it, using the non-normalized tokens (normalized =
  /// false) or the normalized ones (true). Appends to `out`; empty text gives nothing.
  void split(std::string_view text, bool normalized, std::vector<TextSegment>& out) const;

  /// Id of an added token's content, or -1.
  int32_t find(std::string_view content) const;
  /// The added token with `id`, or nullptr.
  const io::AddedTokenSpec* token(int32_t id) const;
  /// The string id_to_token gives for `id`: the content, normalized for normalized tokens
  /// (as `tokenizers` reports it); nullptr when `id` is not an added token.
  const std::string* surface(int32_t id) const;
  bool is_special(int32_t id) const;
  const std::vector<io::AddedTokenSpec>& tokens() const { return tokens_; }

 private:
  struct Trie {
    struct Node {
      std::vector<std::pair<unsigned char, int32_t>> children;  // sorted by byte
      int32_t token = -1;                                       // index into tokens_
    };
    std::vector<Node> nodes{Node{}};
    std::array<bool, 256> first{};  // bytes that can start a pattern
    bool empty = true;
    void add(std::string_view pattern, int32_t token);
    /// Longest pattern starting at text[i]: its token index and length, or -1.
    int32_t longest(std::string_view text, size_t i, size_t& length) const;
  };

  std::vector<io::AddedTokenSpec> tokens_;
  std::vector<std::string> surfaces_;
  Trie raw_, normalized_;
  std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>> by_content_;
  std::unordered_map<int32_t, size_t> by_id_;
};

}  // namespace loom::data
