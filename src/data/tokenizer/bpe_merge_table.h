// BpeMergeTable: open-addressing hash map from a pair of token ids (left, right) to the
// merge's rank and the id of the merged token. The hot lookup of BPE; ids are < 2^24, so
// the pair packs into one 64-bit key and an all-ones key marks an empty slot.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::data {

class BpeMergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };

  /// Sizes the table for `count` merges (load factor <= 0.5).
  void reserve(size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap <<= 1;
    slots_.assign(cap, Slot{kEmpty, {0, 0}});
    mask_ = cap - 1;
  }

  /// Inserts or overwrites the merge of (left, right). reserve() must allow it.
  void insert(int32_t left, int32_t right, Merge merge) {
    uint64_t key = pack(left, right);
    size_t i = hash(key) & mask_;
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    slots_[i] = Slot{key, merge};
  }

  /// The merge of (left, right), or nullptr.
  const Merge* find(int32_t left, int32_t right) const {
    uint64_t key = pack(left, right);
    size_t i = hash(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.merge;
      if (s.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  struct Slot {
    uint64_t key;
    Merge merge;
  };
  static uint64_t pack(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  static uint64_t hash(uint64_t k) {  // murmur3 finalizer
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return k;
  }
  std::vector<Slot> slots_{16, Slot{kEmpty, {0, 0}}};
  size_t mask_ = 15;
};

}  // namespace loom::data
