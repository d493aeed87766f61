// Post-processors: combine the encodings of one or two sequences into the final encoding,
// adding special tokens ([CLS] A [SEP] B [SEP], <s> A </s></s> B </s>) and type ids, and
// optionally trimming whitespace from byte-level offsets. Implemented: TemplateProcessing,
// BertProcessing, RobertaProcessing, ByteLevel, and a Sequence of ByteLevel steps followed
// by at most one other processor (tokenizers/src/processors/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer_spec.h"
#include "loom/tokenizer.h"

namespace loom::data {

/// Leading and trailing whitespace characters of a token's text (for offset trimming).
struct TokenSpaces {
  uint8_t leading = 0;
  uint8_t trailing = 0;
};

/// Counts leading/trailing characters that are White_Space or the byte-level space 'Ġ'
/// (byte_level.rs process_offsets), capped at 255.
TokenSpaces count_token_spaces(std::string_view token);

/// One tokenized sequence before post-processing: ids, type_ids (0 for the first sequence,
/// 1 for the second), masks, offsets (when requested), and per-token whitespace counts
/// (only when the post-processor trims offsets).
struct SequenceEncoding {
  Encoding enc;
  std::vector<TokenSpaces> spaces;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  /// Number of special tokens added around a single sequence or a pair.
  virtual int64_t added_tokens(bool pair) const = 0;
  /// Whether process() trims offsets (then the inputs must carry `spaces`).
  virtual bool trims_offsets() const { return false; }
  /// Combines `a` (and `b` when non-null) into `out`; `offsets`: the encodings carry
  /// offsets. May modify the inputs.
  virtual void process(SequenceEncoding& a, SequenceEncoding* b, bool add_special_tokens,
                       bool offsets, Encoding& out) const = 0;
};

/// Builds the post-processor of a spec. Throws loom::Error (naming `source`) for an
/// unknown special token name in a template, or an unsupported Sequence.
std::unique_ptr<PostProcessor> make_post_processor(const io::PostProcessorSpec& spec,
                                                   const std::string& source);

/// Appends `src` to `dst` (all vectors; offsets only if `src` has them).
void append_encoding(Encoding& dst, const Encoding& src);

/// Default combination (no post-processor): a then b, type ids as given.
void concat_encodings(SequenceEncoding& a, SequenceEncoding* b, Encoding& out);

}  // namespace loom::data
