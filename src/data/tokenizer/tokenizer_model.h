// The model stage of a tokenizer: turns one pre-token into token ids with byte offsets.
// Implemented by BPE (data/bpe.h) and WordPiece (data/wordpiece.h). Also TokenVocab, the
// token <-> id table both models share.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/tokenizer/tokenizer_string_map.h"

namespace loom::data {

/// A token produced by a model: id and byte range [begin, end) within the pre-token.
struct ModelToken {
  int32_t id;
  uint32_t begin;
  uint32_t end;
};

/// Hash for heterogeneous lookup of std::string keys with std::string_view.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// Token <-> id table. Ids may have gaps; several tokens may share an id (the last one
/// inserted is the id's token).
class TokenVocab {
 public:
  void reserve(size_t n) { map_.reserve(n); }
  void insert(std::string_view token, int32_t id);
  std::optional<int32_t> find(std::string_view token) const {
    int32_t id = map_.find(token);
    if (id < 0) return std::nullopt;
    return id;
  }
  /// The token of `id`, or nullopt.
  std::optional<std::string_view> token(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= entry_of_id_.size() || entry_of_id_[id] < 0) {
      return std::nullopt;
    }
    return map_.key(static_cast<size_t>(entry_of_id_[id]));
  }
  /// 1 + the largest id (0 when empty).
  int64_t id_bound() const { return static_cast<int64_t>(entry_of_id_.size()); }
  const StringIdMap& map() const { return map_; }

 private:
  StringIdMap map_;
  std::vector<int32_t> entry_of_id_;  // id -> entry of map_, -1 when no token has the id
};

/// A tokenization model.
class TokenizerModel {
 public:
  virtual ~TokenizerModel() = default;
  /// Appends the tokens of `piece` to `out`. byte_level: the piece's bytes are to be read
  /// through the byte-to-unicode map (ByteLevel pre-tokenizer). Offsets are relative to
  /// the piece. Throws loom::Error when an unknown character needs an unk token that is not
  /// in the vocabulary.
  virtual void tokenize(std::string_view piece, bool byte_level,
                        std::vector<ModelToken>& out) const = 0;
  virtual const TokenVocab& vocab() const = 0;
};

}  // namespace loom::data
