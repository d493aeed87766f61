// Reader for the `tokenizer.json` format of the Hugging Face `tokenizers` library.
//
// Parses the JSON into a TokenizerSpec (io/tokenizer_spec.h), checking shapes and types
// only; semantic checks (merges against the vocabulary, ids of special tokens) happen when
// the data layer builds the tokenizer. Supported components: models BPE and WordPiece;
// normalizers BertNormalizer, Lowercase, NFD, NFKD, StripAccents, Sequence; pre-tokenizers
// ByteLevel, BertPreTokenizer, WhitespaceSplit, Sequence; post-processors
// TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence; decoders
// ByteLevel, WordPiece, Sequence. Anything else is a loom::Error naming the component.
// Format reference: tokenizers/src/tokenizer/serialization.rs and the serde derives of each
// component in the `tokenizers` crate.
#pragma once

#include <string>
#include <string_view>

#include "io/tokenizer_spec.h"

namespace loom::io {

/// Largest token id accepted in any tokenizer file (keeps id -> token tables bounded;
/// real vocabularies stay below 2^20).
constexpr int64_t kMaxTokenId = (int64_t{1} << 22) - 1;

/// Reads and parses `path`. Throws loom::Error "[path] <field>: <fault>" for unreadable
/// files, invalid JSON, missing/mistyped fields and unsupported components.
TokenizerSpec read_tokenizer_json(const std::string& path);

/// Parses tokenizer.json text; `source` names it in errors.
TokenizerSpec parse_tokenizer_json(std::string_view text, const std::string& source);

}  // namespace loom::io
