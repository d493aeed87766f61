// Pre-tokenizers: split normalized text into the pieces ("words") the model tokenizes
// independently. Implemented: ByteLevel (GPT-2 split pattern + byte-level marking),
// BertPreTokenizer (whitespace removed, punctuation isolated), WhitespaceSplit (whitespace
// removed), Split (a regex's matches isolated, for Llama-3 / Qwen2) and Sequence, with the
// semantics of tokenizers/src/pre_tokenizers/.
//
// Pieces are byte ranges of the normalized text; nothing is copied. A ByteLevel piece may
// carry a virtual leading space (add_prefix_space) and is flagged byte_level so that the
// model maps its bytes through the byte-to-unicode table. ByteLevel must come last in a
// Sequence (later pre-tokenizers would see mapped characters in `tokenizers`).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer_spec.h"

namespace loom::data {

/// A pre-token: bytes [begin, end) of the normalized text.
struct Piece {
  uint32_t begin = 0;
  uint32_t end = 0;
  bool prefix_space = false;  ///< a ' ' precedes the piece (ByteLevel add_prefix_space)
  bool byte_level = false;    ///< the model sees the piece through the byte-level map
};

/// One pre-tokenization step: refines `in` into `out` (out is cleared first).
class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void split(std::string_view text, const std::vector<Piece>& in,
                     std::vector<Piece>& out) const = 0;
};

/// Builds a pre-tokenizer from its spec. Throws loom::Error (naming `source`) for an
/// unsupported type or a ByteLevel that is not last in a Sequence.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const io::PreTokenizerSpec& spec,
                                                 const std::string& source);

/// The GPT-2 split pattern
///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
/// matched by hand (leftmost alternative first, greedy runs, as a backtracking regex
/// engine does). Appends the [begin, end) byte ranges of the matches of `text`, offset by
/// `base`; together they cover `text`. Assumes valid UTF-8.
void split_gpt2_pattern(std::string_view text, uint32_t base, std::vector<Piece>& out);

/// Split pre-tokenizer (tokenizers/src/pre_tokenizers/split.rs) over a PCRE2 regex or a
/// literal string (data/pre_tokenizer_split.cpp). Throws loom::Error naming `source` when
/// the pattern does not compile or the behavior is unknown.
std::unique_ptr<PreTokenizer> make_split_pre_tokenizer(const io::PreTokenizerSpec& spec,
                                                       const std::string& source);

/// ByteLevel pre-tokenizer (tokenizers/src/pre_tokenizers/byte_level.rs).
std::unique_ptr<PreTokenizer> make_byte_level_pre_tokenizer(bool add_prefix_space, bool use_regex);

}  // namespace loom::data
