// TokenizerSpec: the plain-data description of a tokenizer, as read from tokenizer files.
//
// The io layer fills it from `tokenizer.json` (io/tokenizer_json.h) or from the older
// GPT-2 / BERT files (io/tokenizer_files.h); the data layer (data/tokenizer_build.cpp) turns
// it into a working tokenizer and checks its consistency. Field names follow the
// `tokenizers` JSON serialization (tokenizers/src/tokenizer/serialization.rs and the
// per-component serde structs). Only plain values live here: no Unicode logic, no engine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace loom::io {

/// "model": BPE or WordPiece.
struct TokenizerModelSpec {
  std::string type;                                         ///< "BPE" or "WordPiece"
  std::vector<std::pair<std::string, int32_t>> vocab;       ///< token -> id, in file order
  std::vector<std::pair<std::string, std::string>> merges;  ///< BPE merges by rank
  std::optional<std::string> unk_token;
  std::optional<std::string> continuing_subword_prefix;  ///< BPE: optional; WordPiece: "##"
  std::optional<std::string> end_of_word_suffix;         ///< BPE only
  bool fuse_unk = false;                                 ///< BPE only
  bool byte_fallback = false;                            ///< BPE only
  bool ignore_merges = false;                            ///< BPE only
  int64_t max_input_chars_per_word = 100;                ///< WordPiece only
};

/// "normalizer": BertNormalizer, Lowercase, NFC, NFD, NFKC, NFKD, StripAccents or Sequence.
struct NormalizerSpec {
  std::string type;
  bool clean_text = true;
  bool handle_chinese_chars = true;
  std::optional<bool> strip_accents;  ///< nullopt: follow lowercase
  bool lowercase = true;
  std::vector<NormalizerSpec> children;  ///< Sequence
};

/// "pre_tokenizer": ByteLevel, BertPreTokenizer, WhitespaceSplit, Split or Sequence.
struct PreTokenizerSpec {
  std::string type;
  bool add_prefix_space = false;           ///< ByteLevel
  bool trim_offsets = true;                ///< ByteLevel
  bool use_regex = true;                   ///< ByteLevel
  std::string pattern;                     ///< Split: the pattern text
  bool pattern_is_regex = false;           ///< Split: {"Regex": ...} (else {"String": ...})
  std::string behavior = "Isolated";       ///< Split: Removed | Isolated | MergedWithPrevious |
                                           ///< MergedWithNext | Contiguous
  bool invert = false;                     ///< Split: split on the non-matches instead
  std::vector<PreTokenizerSpec> children;  ///< Sequence
};

/// One piece of a TemplateProcessing template: a sequence ("A"/"B") or a special token.
struct TemplatePieceSpec {
  bool is_sequence = false;
  std::string id;  ///< "A"/"B" for a sequence, else the special token's name
  int32_t type_id = 0;
};

/// "post_processor": TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel,
/// Sequence.
struct PostProcessorSpec {
  std::string type;
  std::vector<TemplatePieceSpec> single, pair;                 ///< TemplateProcessing
  std::map<std::string, std::vector<int32_t>> special_tokens;  ///< name -> ids
  std::pair<std::string, int32_t> sep{"[SEP]", 102};           ///< Bert/RobertaProcessing
  std::pair<std::string, int32_t> cls{"[CLS]", 101};           ///< Bert/RobertaProcessing
  bool trim_offsets = true;                                    ///< Roberta/ByteLevel
  bool add_prefix_space = true;                                ///< Roberta/ByteLevel
  std::vector<PostProcessorSpec> children;                     ///< Sequence
};

/// "decoder": ByteLevel, WordPiece or Sequence.
struct DecoderSpec {
  std::string type;
  std::string prefix = "##";  ///< WordPiece
  bool cleanup = true;        ///< WordPiece
  std::vector<DecoderSpec> children;
};

/// One entry of "added_tokens".
struct AddedTokenSpec {
  int32_t id = 0;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

/// "truncation" (tokenizers' TruncationParams).
struct TruncationSpec {
  int64_t max_length = 512;
  std::string strategy = "LongestFirst";  ///< LongestFirst | OnlyFirst | OnlySecond
  std::string direction = "Right";        ///< Right | Left
  int64_t stride = 0;
};

/// "padding" (tokenizers' PaddingParams).
struct PaddingSpec {
  std::optional<int64_t> fixed_length;  ///< strategy {"Fixed": n}; nullopt: "BatchLongest"
  std::string direction = "Right";
  std::optional<int64_t> pad_to_multiple_of;
  int64_t pad_id = 0;
  int64_t pad_type_id = 0;
  std::string pad_token = "[PAD]";
};

/// Special-token roles (transformers' names), as token strings.
struct SpecialTokenRoles {
  std::optional<std::string> unk, bos, eos, pad, cls, sep, mask;
};

/// A whole tokenizer. `source` names the file(s) it came from, for error messages.
struct TokenizerSpec {
  std::string source;
  TokenizerModelSpec model;
  std::optional<NormalizerSpec> normalizer;
  std::optional<PreTokenizerSpec> pre_tokenizer;
  std::optional<PostProcessorSpec> post_processor;
  std::optional<DecoderSpec> decoder;
  std::vector<AddedTokenSpec> added_tokens;
  std::optional<TruncationSpec> truncation;
  std::optional<PaddingSpec> padding;
  SpecialTokenRoles roles;  ///< empty unless known (older files, tokenizer_config.json)
};

}  // namespace loom::io
