// Readers for the tokenizer files that predate tokenizer.json: GPT-2's `vocab.json` +
// `merges.txt`, BERT's `vocab.txt`, and transformers' `tokenizer_config.json`.
//
// Each builds the TokenizerSpec that transformers' conversion (convert_slow_tokenizer.py:
// GPT2Converter, BertConverter) would build from the same files, so the older files and the
// tokenizer.json saved from them tokenize identically. Formats:
//   vocab.json    JSON object {token: id}
//   merges.txt    optional "#version..." line, then one merge "left right" per line, by rank
//   vocab.txt     one token per line; the id is the 0-based line number
//   tokenizer_config.json  JSON object; special tokens as strings or {"content": ...}
// Every fault is a loom::Error naming the file (and line, for line formats).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/tokenizer_spec.h"

namespace loom::io {

/// The fields of tokenizer_config.json loom uses; absent fields stay nullopt.
struct TokenizerConfig {
  SpecialTokenRoles roles;
  std::optional<bool> do_lower_case;
  std::optional<bool> tokenize_chinese_chars;
  std::optional<bool> strip_accents;
  std::optional<bool> add_prefix_space;
};

/// Options of a BERT vocab.txt tokenizer (transformers' BertTokenizer defaults).
struct BertVocabOptions {
  bool lowercase = true;
  bool tokenize_chinese_chars = true;
  std::optional<bool> strip_accents;  ///< nullopt: strip when lowercasing
  std::string unk = "[UNK]", sep = "[SEP]", pad = "[PAD]", cls = "[CLS]", mask = "[MASK]";
};

/// GPT-2 from vocab.json + merges.txt: byte-level BPE, `<|endoftext|>` as the special token
/// and unk/bos/eos role, no tokens added around sequences.
TokenizerSpec read_gpt2_files(const std::string& vocab_json, const std::string& merges_txt,
                              bool add_prefix_space);
/// The same from already parsed vocabulary and merges; `source` names them in errors.
TokenizerSpec gpt2_spec(std::vector<std::pair<std::string, int32_t>> vocab,
                        std::vector<std::pair<std::string, std::string>> merges,
                        bool add_prefix_space, const std::string& source);

/// BERT from vocab.txt. Throws loom::Error when the unk, cls or sep token is not in it.
TokenizerSpec read_bert_vocab(const std::string& vocab_txt, const BertVocabOptions& options);
/// The same from an already parsed vocabulary; `source` names it in errors.
TokenizerSpec bert_spec(std::vector<std::pair<std::string, int32_t>> vocab,
                        const BertVocabOptions& options, const std::string& source);

/// Reads tokenizer_config.json. Throws loom::Error for invalid JSON or mistyped fields.
TokenizerConfig read_tokenizer_config(const std::string& path);

/// Parses vocab.json text into (token, id) pairs; `source` names it in errors.
std::vector<std::pair<std::string, int32_t>> parse_vocab_json(const std::string& text,
                                                              const std::string& source);
/// Parses merges.txt text; `source` names it in errors (with the 1-based line).
std::vector<std::pair<std::string, std::string>> parse_merges_txt(const std::string& text,
                                                                  const std::string& source);
/// Parses vocab.txt text; `source` names it in errors.
std::vector<std::pair<std::string, int32_t>> parse_vocab_txt(const std::string& text,
                                                             const std::string& source);

}  // namespace loom::io
