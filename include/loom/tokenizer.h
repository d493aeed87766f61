// loom::Tokenizer: Hugging Face compatible text tokenizers (byte-level BPE and WordPiece).
//
// Loads the files users already have and gives the token ids the `tokenizers` library gives:
//   - `tokenizer.json` (the `tokenizers` serialization) with a BPE or WordPiece model, its
//     normalizer, pre-tokenizer, post-processor, decoder, added tokens, truncation and padding;
//   - GPT-2 style `vocab.json` + `merges.txt` (as transformers' GPT2Tokenizer);
//   - BERT style `vocab.txt` (+ `tokenizer_config.json`), as transformers' BertTokenizer.
//
// Example:
//   loom::Tokenizer tok = loom::Tokenizer::from_pretrained("assets/tokenizers/gpt2");
//   loom::Encoding e = tok.encode("Hello world");      // e.ids == {15496, 995}
//   std::string text = tok.decode(e.ids);              // "Hello world"
//
//   loom::EncodeOptions opts = tok.default_options();
//   opts.truncation = loom::TruncationOptions{.max_length = 128};
//   opts.padding = loom::PaddingOptions{.pad_to_multiple_of = 16};
//   std::vector<loom::Encoding> batch = tok.encode_batch(texts, opts);  // equal lengths
//
// Text is UTF-8. Invalid UTF-8 is not an error: each maximal invalid subsequence is replaced
// by U+FFFD (as Rust's String::from_utf8_lossy and Python's errors="replace" do) before
// tokenization, and offsets then index that repaired text (identical to the input when the
// input is valid). The behaviour choices are listed in docs/tokenizers.md.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

namespace detail {
struct TokenizerImpl;
}

/// Byte range [begin, end) of a token in the UTF-8 text of its own sequence (for a pair,
/// tokens of the second sequence index the second text). Tokens added by the post-processor
/// ([CLS], padding, ...) have {0, 0}.
struct TokenOffset {
  int64_t begin = 0;
  int64_t end = 0;
  bool operator==(const TokenOffset&) const = default;
};

/// The result of encoding one sequence or one pair. All vectors have the same length
/// (the number of tokens), except `offsets`, which is empty unless requested.
struct Encoding {
  std::vector<int32_t> ids;                  ///< token ids
  std::vector<int32_t> type_ids;             ///< token_type_ids (segment ids): 0 or 1
  std::vector<int32_t> attention_mask;       ///< 1 for real tokens, 0 for padding
  std::vector<int32_t> special_tokens_mask;  ///< 1 for post-processor tokens and padding
  std::vector<TokenOffset> offsets;          ///< byte offsets; filled when return_offsets
  /// Number of tokens.
  size_t size() const { return ids.size(); }
};

/// Which side loses tokens (truncation) or gains padding.
enum class Side { kRight, kLeft };

/// How a pair is cut to max_length (the `tokenizers` strategies).
enum class TruncationStrategy {
  kLongestFirst,  ///< cut the longer sequence first, then both evenly
  kOnlyFirst,     ///< cut only the first sequence
  kOnlySecond,    ///< cut only the second sequence (pairs only)
};

/// Truncation to at most max_length tokens, special tokens included.
struct TruncationOptions {
  int64_t max_length = 512;  ///< >= number of special tokens the post-processor adds
  TruncationStrategy strategy = TruncationStrategy::kLongestFirst;
  Side direction = Side::kRight;  ///< kRight keeps the start, kLeft keeps the end
};

/// Padding. kLongest pads every encoding of a batch to the longest one (a single encode
/// pads to its own length); kFixed pads to `length` (longer encodings are left as they are).
/// The target is then rounded up to a multiple of `pad_to_multiple_of` when it is > 0.
struct PaddingOptions {
  enum class Strategy { kLongest, kFixed };
  Strategy strategy = Strategy::kLongest;
  int64_t length = 0;              ///< target for kFixed
  int64_t pad_to_multiple_of = 0;  ///< 0: no rounding
  Side direction = Side::kRight;
  int32_t pad_id = -1;      ///< -1: the tokenizer's pad token (loom::Error if it has none)
  int32_t pad_type_id = 0;  ///< type id given to padding
};

/// Per-call options. Start from Tokenizer::default_options(), which holds the truncation and
/// padding stored in tokenizer.json (if any), and change what you need.
struct EncodeOptions {
  bool add_special_tokens = true;  ///< run the post-processor's template ([CLS] ... [SEP])
  bool return_offsets = false;     ///< fill Encoding::offsets
  std::optional<TruncationOptions> truncation;  ///< nullopt: no truncation
  std::optional<PaddingOptions> padding;        ///< nullopt: no padding
};

/// A loaded tokenizer. Immutable after loading except for its default options; copies share
/// the loaded vocabulary. All const methods are safe to call from several threads at once.
class Tokenizer {
 public:
  /// Loads a `tokenizer.json` file. Throws loom::Error naming the file and the fault when it
  /// cannot be read, is not valid JSON, lacks a required field, uses a component loom does
  /// not implement (e.g. a Unigram model) or is inconsistent (e.g. a merge of tokens that are
  /// not in the vocabulary).
  static Tokenizer from_file(const std::string& tokenizer_json_path);

  /// Loads a folder: `tokenizer.json` if present; else `vocab.json` + `merges.txt` (GPT-2,
  /// transformers' GPT2Tokenizer defaults); else `vocab.txt` (transformers' BertTokenizer
  /// defaults). `tokenizer_config.json`, when present, supplies the special-token roles
  /// (unk/bos/eos/pad/cls/sep/mask) and, for the older files, options such as do_lower_case,
  /// tokenize_chinese_chars, strip_accents and add_prefix_space. Throws loom::Error when the
  /// folder has none of these files or a file is malformed.
  static Tokenizer from_pretrained(const std::string& dir);

  /// GPT-2 from `vocab.json` + `merges.txt`: byte-level BPE, no special tokens added by
  /// encode, `<|endoftext|>` as unk/bos/eos. Throws loom::Error for malformed files.
  static Tokenizer from_gpt2_files(const std::string& vocab_json, const std::string& merges_txt,
                                   bool add_prefix_space = false);

  /// BERT from `vocab.txt` (one token per line, id = line number). `lowercase` also strips
  /// accents, as BertTokenizer does by default. Throws loom::Error for a malformed file or
  /// when [UNK]/[CLS]/[SEP] are missing from the vocabulary.
  static Tokenizer from_bert_vocab(const std::string& vocab_txt, bool lowercase = true);

  /// Encodes one text with default_options().
  Encoding encode(std::string_view text) const;
  /// Encodes one text. Throws loom::Error for impossible truncation (max_length below the
  /// number of special tokens, or kOnlySecond without a pair) or padding without a pad id.
  Encoding encode(std::string_view text, const EncodeOptions& options) const;
  /// Encodes a pair (e.g. question + context): [CLS] a [SEP] b [SEP] for BERT, type ids 0/1.
  Encoding encode_pair(std::string_view first, std::string_view second,
                       const EncodeOptions& options) const;
  Encoding encode_pair(std::string_view first, std::string_view second) const;

  /// Encodes many texts on `num_threads` threads (0: hardware concurrency, 1: the calling
  /// thread only). Results are in input order and identical to calling encode() on each;
  /// with kLongest padding all are padded to the longest of the batch. An error in any text
  /// is rethrown in the caller.
  std::vector<Encoding> encode_batch(std::span<const std::string> texts,
                                     const EncodeOptions& options, int num_threads = 0) const;
  std::vector<Encoding> encode_batch(std::span<const std::string> texts) const;
  /// Batch of pairs; `firsts` and `seconds` have equal size (loom::Error otherwise).
  std::vector<Encoding> encode_pair_batch(std::span<const std::string> firsts,
                                          std::span<const std::string> seconds,
                                          const EncodeOptions& options, int num_threads = 0) const;

  /// Turns ids back into text with the tokenizer's decoder (byte-level: exact bytes, invalid
  /// UTF-8 replaced by U+FFFD; WordPiece: "##" joined, spaces before punctuation cleaned).
  /// skip_special_tokens drops special added tokens ([CLS], <|endoftext|>, ...). Throws
  /// loom::Error for an id outside [0, vocab_size()) or one no token has.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  /// Id of a token string (added tokens first, then the model vocabulary), if any.
  std::optional<int32_t> token_to_id(std::string_view token) const;
  /// Token string of an id, if any (raw vocabulary form, e.g. "Ġworld" or "##ing").
  std::optional<std::string> id_to_token(int32_t id) const;
  /// The token strings of `ids` (loom::Error for an unknown id).
  std::vector<std::string> convert_ids_to_tokens(std::span<const int32_t> ids) const;
  /// 1 + the largest id of the vocabulary and the added tokens (GPT-2: 50257, BERT: 30522).
  int64_t vocab_size() const;

  /// Special-token roles, as transformers names them; nullopt when the tokenizer has none.
  std::optional<int32_t> pad_token_id() const;
  std::optional<int32_t> unk_token_id() const;
  std::optional<int32_t> cls_token_id() const;
  std::optional<int32_t> sep_token_id() const;
  std::optional<int32_t> mask_token_id() const;
  std::optional<int32_t> bos_token_id() const;
  std::optional<int32_t> eos_token_id() const;
  /// True when `id` is a special added token ([CLS], <|endoftext|>, ...).
  bool is_special_id(int32_t id) const;
  /// Number of tokens the post-processor adds to a single text (BERT: 2) or a pair (BERT: 3).
  int64_t num_special_tokens_to_add(bool pair) const;

  /// Options used by the overloads without options: add_special_tokens = true, no offsets,
  /// and the truncation/padding stored in tokenizer.json (none for the older files).
  const EncodeOptions& default_options() const { return defaults_; }
  void set_default_options(const EncodeOptions& options) { defaults_ = options; }

 private:
  explicit Tokenizer(std::shared_ptr<const detail::TokenizerImpl> impl);
  std::shared_ptr<const detail::TokenizerImpl> impl_;
  EncodeOptions defaults_;
};

/// The work of `loom tokenize`: reads `in`, one JSON string per line (blank lines are
/// skipped), and writes to `out` one JSON array of ids per input line, e.g. [15496,995].
/// Encodes in chunks with encode_batch on `num_threads` threads. Throws loom::Error naming
/// `source_name` and the 1-based line number when a line is not a JSON string.
void tokenize_json_lines(const Tokenizer& tokenizer, std::istream& in, std::ostream& out,
                         const EncodeOptions& options, const std::string& source_name,
                         int num_threads = 0);

/// File version of tokenize_json_lines: reads `input_path`, writes `output_path`.
/// Throws loom::Error when a file cannot be opened or a line is malformed.
void tokenize_json_lines_file(const Tokenizer& tokenizer, const std::string& input_path,
                              const std::string& output_path, const EncodeOptions& options,
                              int num_threads = 0);

}  // namespace loom
