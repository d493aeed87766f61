// StreamHasher: core/hash.h's hash_bytes over a byte stream fed in pieces
// of any size (files read in chunks: cache keys and checksums). Assumes
// nothing beyond hash.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/hash.h"

namespace loom {

/// hash_bytes over a byte stream fed in pieces of any size: finish() equals
/// hash_bytes(seed, <every byte fed, in order>), whatever the pieces were
/// (for files read in chunks: cache keys and checksums).
class StreamHasher {
 public:
  explicit StreamHasher(Hash128 seed) : h_(seed) {}
  void update(const void* data, size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    total_ += n;
    while (n > 0 && pending_ > 0) {  // complete the word a previous piece began
      word_[pending_++] = *p++;
      --n;
      if (pending_ == 8) fold_word();
    }
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      h_ = hash_combine(h_, w);
    }
    while (n > 0) {
      word_[pending_++] = *p++;
      --n;
    }
  }
  Hash128 finish() const {
    uint64_t tail = 0;
    std::memcpy(&tail, word_, pending_);
    return hash_combine(hash_combine(h_, tail), static_cast<uint64_t>(total_));
  }

 private:
  void fold_word() {
    uint64_t w;
    std::memcpy(&w, word_, 8);
    h_ = hash_combine(h_, w);
    pending_ = 0;
  }
  Hash128 h_;
  unsigned char word_[8] = {};
  size_t pending_ = 0;
  uint64_t total_ = 0;
};

}  // namespace loom
