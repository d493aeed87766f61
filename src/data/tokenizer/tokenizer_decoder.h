// Decoders: turn the token strings of some ids back into text
// (tokenizers/src/decoders/{byte_level,wordpiece,sequence}.rs). A decoder transforms the
// list of token strings; the tokenizer concatenates what is left.
//   ByteLevel: every token's characters are mapped back to bytes through the byte-level
//     table (a token with a character outside the table contributes its UTF-8 as is), the
//     bytes are joined and invalid UTF-8 is replaced by U+FFFD.
//   WordPiece: tokens after the first lose their "##" prefix or gain a leading space; with
//     cleanup, " ." " ?" " !" " ," " ' " " n't" " 'm" " do not" " 's" " 've" " 're" lose
//     their space ("do not" becomes "don't"), token by token.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "io/tokenizer_spec.h"

namespace loom::data {

class Decoder {
 public:
  virtual ~Decoder() = default;
  /// Transforms the token strings in place (may merge them into one).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

/// Builds the decoder of a spec. Throws loom::Error (naming `source`) for unknown types.
std::unique_ptr<Decoder> make_decoder(const io::DecoderSpec& spec, const std::string& source);

}  // namespace loom::data
