// BpeWordCache: thread-safe cache from a pre-token's bytes to its BPE tokens (id and byte
// range each), so that frequent words are merged once. Sharded by hash, one mutex per
// shard; stops inserting into a shard once it holds its share of the capacity (as the
// `tokenizers` cache does). Words longer than kMaxWordBytes are never cached.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/tokenizer/tokenizer_model.h"

namespace loom::data {

class BpeWordCache {
 public:
  static constexpr size_t kMaxWordBytes = 128;
  static constexpr size_t kShards = 32;
  static constexpr size_t kCapacity = 1 << 18;  ///< total entries

  /// Token of a cached word: id and byte range relative to the word.
  struct Entry {
    int32_t id;
    uint32_t begin;
    uint32_t end;
  };

  /// If `word` is cached, appends its tokens to `out` (offsets from `base`) and returns true.
  bool lookup(std::string_view word, uint32_t base, std::vector<ModelToken>& out) const;
  /// Caches the tokens out[first..] (offsets relative to `base`) of `word`.
  void insert(std::string_view word, uint32_t base, const std::vector<ModelToken>& out,
              size_t first) const;

 private:
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<Entry>, StringHash, std::equal_to<>> map;
  };
  mutable std::array<Shard, kShards> shards_;
};

}  // namespace loom::data
