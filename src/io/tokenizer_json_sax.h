// Streaming JSON reader for tokenizer files. A tokenizer.json is mostly its vocabulary
// (tens of thousands of "token": id members) and merges; building a JSON DOM for those is
// slow, so this reader parses with nlohmann's SAX interface, streams model.vocab and
// model.merges (or a whole vocab.json) straight into vectors, and builds an ordinary DOM
// only for the rest. Every fault is a loom::Error naming the source and the field.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::io {

/// What the streaming reader extracted.
struct TokenizerJsonParts {
  nlohmann::json root;  ///< the document without the streamed parts (they become null)
  bool has_vocab = false;
  std::vector<std::pair<std::string, int32_t>> vocab;  ///< token -> id, in file order
  bool has_merges = false;
  std::vector<std::pair<std::string, std::string>> merges;  ///< by rank
};

/// Parses tokenizer.json text, streaming model.vocab (when it is an object) and
/// model.merges. Ids must be integers in [0, max_id]; merges "a b" strings (split at the
/// first space) or [a, b] pairs. Throws loom::Error "[source] ..." otherwise.
TokenizerJsonParts parse_tokenizer_json_parts(std::string_view text, const std::string& source,
                                              int64_t max_id);

/// Parses a vocab.json document: one object {token: id}, streamed.
std::vector<std::pair<std::string, int32_t>> parse_vocab_object(std::string_view text,
                                                                const std::string& source,
                                                                int64_t max_id);

}  // namespace loom::io
