// Corpora bigger than memory: the lines of a text file tokenized in one
// streaming pass into a token file on disk (a cache, as Hugging Face
// datasets' cache of `dataset.map(tokenize)`), and a dataset of fixed-size
// blocks read from that file, so memory does not grow with the corpus.
//
//   loom::data::TokenCacheKey key{.tokenizer = loom::data::tokenizer_fingerprint(dir),
//                                 .flags = "special_tokens=0"};
//   loom::data::TokenFileSource src{.path = "train.txt", .skip_percent = 10};
//   auto file = loom::data::tokenize_to_cache(src, encode_lines, key);   // miss: tokenizes
//   loom::data::TokenBlockDataset train(file, 128, /*with_labels=*/true); // run_clm blocks
//
// The blocks are those of group_texts(..., group_size = 0) (loom/dataset.h):
// every line's ids concatenated in order, the remainder shorter than a block
// dropped, labels = input_ids. The token file holds int32 ids after a header
// (docs/data.md): magic "LOOMTOK1", version 2, a key of the data file (its
// path and a hash of every byte of it), of the tokenizer and of the flags,
// the token and line counts, a checksum of every id and a hash of the header
// itself. It is written to a temporary name and renamed into place, so a
// reader never sees a partial file; a file whose key differs (stale) or
// whose header, size or checksum does not check out (corrupt) is a miss,
// with a one-line warning naming it, and is rebuilt — never a hit. Opening
// one reads it once (the checksum); a hit reads the data file once (the
// key). Temporary files of builds on this host that died are removed. Cache folder:
// $LOOM_DATASETS_CACHE, else $XDG_CACHE_HOME/loom/datasets, else $HOME/.cache/loom/datasets.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/dataset.h"

namespace loom::data {

/// Which lines of a text file to tokenize. Lines are io's split_text_lines
/// rules (universal newlines, BOM dropped). `skip_percent` = p holds back
/// the first round(n * p / 100) of the file's n lines, as datasets'
/// "train[p%:]"; `head_only` takes exactly those held-back lines instead
/// ("train[:p%]", the validation split).
struct TokenFileSource {
  std::string path;
  bool keep_linebreaks = true;  ///< keep each line's "\n" (run_clm's default)
  int64_t skip_percent = 0;     ///< 0..100
  bool head_only = false;
};

/// What besides the data file changes the ids: folded into the cache key.
struct TokenCacheKey {
  std::string tokenizer;  ///< e.g. tokenizer_fingerprint(dir)
  std::string flags;      ///< e.g. "special_tokens=1"
};

/// Lines -> one id list per line. Called from one thread with batches of
/// about TokenCacheOptions::batch_bytes of text; may use threads inside
/// (Tokenizer::encode_batch does). Errors it throws propagate, with the file
/// and the line range added.
using EncodeLinesFn =
    std::function<std::vector<std::vector<int32_t>>(const std::vector<std::string>& lines)>;

struct TokenCacheOptions {
  std::string cache_dir;         ///< empty: default_token_cache_dir()
  size_t batch_bytes = 1 << 20;  ///< text per EncodeLinesFn call
  bool overwrite = false;        ///< rebuild even when the cache is valid
};

/// What tokenize_to_cache did.
struct TokenCacheReport {
  std::string cache_path;
  bool hit = false;     ///< a valid cache file was used
  std::string rebuilt;  ///< why it was (re)built: "missing", "stale: ...", "corrupt: ..."
  int64_t lines = 0;    ///< lines tokenized into the file
  int64_t tokens = 0;
  double seconds = 0;      ///< wall time of the call
  int64_t text_bytes = 0;  ///< bytes of text tokenized (0 on a hit)
};

/// An open token file: `tokens()` int32 ids read by position (pread; the
/// page cache, not this process, holds what was read). Safe to read from
/// several threads at once.
class TokenFile {
 public:
  /// Opens and validates the token file at `path` against `expected_key`
  /// (32 hex digits; empty: any). Throws loom::Error "[token cache] path:
  /// <why>" when it is missing, stale or corrupt.
  static std::shared_ptr<const TokenFile> open(const std::string& path,
                                               const std::string& expected_key = {});
  ~TokenFile();
  TokenFile(const TokenFile&) = delete;
  TokenFile& operator=(const TokenFile&) = delete;

  int64_t size() const { return tokens_; }  ///< number of ids
  int64_t lines() const { return lines_; }  ///< lines they came from
  const std::string& path() const { return path_; }
  /// Ids [start, start + n) into `out` (resized to n). Throws loom::Error
  /// for a range outside [0, size()) or a read failure.
  void read(int64_t start, int64_t n, std::vector<int64_t>& out) const;

 private:
  TokenFile() = default;
  std::string path_;
  int fd_ = -1;
  int64_t tokens_ = 0;
  int64_t lines_ = 0;
};

/// The cache folder: $LOOM_DATASETS_CACHE, $XDG_CACHE_HOME/loom/datasets or
/// $HOME/.cache/loom/datasets. Throws loom::Error when none of them is set.
std::string default_token_cache_dir();

/// A hash (32 hex digits) of the tokenizer files in `dir` (tokenizer.json,
/// tokenizer_config.json, special_tokens_map.json, added_tokens.json,
/// vocab.json, merges.txt, vocab.txt: names and contents of those present).
std::string tokenizer_fingerprint(const std::string& dir);

/// The token file of `source` under `key`: opened from the cache when a
/// valid one is there, else built by one streaming pass over the file
/// (batches of lines through `encode`, ids appended to a temporary file,
/// renamed into place). Memory is bounded by the batch and the longest line,
/// never the file. Throws loom::Error naming the data file (and the line
/// range, for an error of `encode`) or the cache folder when it cannot be
/// written.
std::shared_ptr<const TokenFile> tokenize_to_cache(const TokenFileSource& source,
                                                   const EncodeLinesFn& encode,
                                                   const TokenCacheKey& key,
                                                   const TokenCacheOptions& options = {},
                                                   TokenCacheReport* report = nullptr);

/// Fixed-size blocks of a token file: example i is ids [i*block, (i+1)*block)
/// with labels = input_ids when `with_labels` (run_clm) or none (run_mlm:
/// the collator masks). `max_examples` >= 0 keeps only the first ones
/// (datasets' select(range(n))). Throws loom::Error for block_size <= 0.
class TokenBlockDataset : public Dataset {
 public:
  TokenBlockDataset(std::shared_ptr<const TokenFile> tokens, int64_t block_size, bool with_labels,
                    int64_t max_examples = -1);
  int64_t size() const override { return size_; }
  Example get(int64_t index) const override;
  const TokenFile& tokens() const { return *tokens_; }

 private:
  std::shared_ptr<const TokenFile> tokens_;
  int64_t block_;
  bool with_labels_;
  int64_t size_;
};

}  // namespace loom::data
