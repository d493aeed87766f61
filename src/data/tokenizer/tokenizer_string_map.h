// StringIdMap: string -> int32 hash map for vocabularies. Open addressing with linear
// probing over 32-bit slots; keys live in one character arena, so a vocabulary of 50k
// tokens is three flat arrays instead of 50k heap nodes, and lookups of string_views need
// no allocation. Inserting an existing key overwrites its value.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "core/hash.h"

namespace loom::data {

class StringIdMap {
 public:
  /// Sizes the table for `count` keys without rehashing.
  void reserve(size_t count) {
    entries_.reserve(count);
    if (count * 2 > slots_.size()) rehash(capacity_for(count));
  }

  /// Inserts or overwrites; returns the entry index of `key` (stable, see key()).
  size_t insert_or_assign(std::string_view key, int32_t value) {
    if ((entries_.size() + 1) * 2 > slots_.size()) rehash(capacity_for(entries_.size() + 1));
    uint64_t h = hash(key);
    size_t i = h & mask_;
    while (slots_[i] >= 0) {
      Entry& e = entries_[slots_[i]];
      if (e.hash == h && view(e) == key) {
        e.value = value;
        return static_cast<size_t>(slots_[i]);
      }
      i = (i + 1) & mask_;
    }
    slots_[i] = static_cast<int32_t>(entries_.size());
    entries_.push_back(
        {h, static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size()), value});
    arena_.append(key);
    return entries_.size() - 1;
  }

  /// The key of entry `index` (as returned by insert_or_assign).
  std::string_view key(size_t index) const { return view(entries_[index]); }

  /// The value of `key`, or -1.
  int32_t find(std::string_view key) const {
    if (entries_.empty()) return -1;
    uint64_t h = hash(key);
    size_t i = h & mask_;
    while (slots_[i] >= 0) {
      const Entry& e = entries_[slots_[i]];
      if (e.hash == h && view(e) == key) return e.value;
      i = (i + 1) & mask_;
    }
    return -1;
  }

  size_t size() const { return entries_.size(); }

  /// Calls fn(key, value) for every entry, in insertion order.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    for (const Entry& e : entries_) fn(view(e), e.value);
  }

  /// 64-bit hash of a byte string (8-byte blocks, murmur3 finalizer).
  static uint64_t hash(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (s.size() * 0xC2B2AE3D27D4EB4FULL);
    size_t i = 0;
    for (; i + 8 <= s.size(); i += 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      h = (h ^ mix(w)) * 0x9FB21C651E98DF25ULL;
    }
    if (i < s.size()) {
      uint64_t w = 0;
      std::memcpy(&w, s.data() + i, s.size() - i);
      h = (h ^ mix(w)) * 0x9FB21C651E98DF25ULL;
    }
    return mix(h);
  }

 private:
  struct Entry {
    uint64_t hash;
    uint32_t offset;
    uint32_t length;
    int32_t value;
  };
  static uint64_t mix(uint64_t k) { return mix64(k); }  // core/hash.h's finalizer
  static size_t capacity_for(size_t count) {
    size_t cap = 16;
    while (cap < count * 2) cap <<= 1;
    return cap;
  }
  std::string_view view(const Entry& e) const {
    return std::string_view(arena_).substr(e.offset, e.length);
  }
  void rehash(size_t capacity) {
    slots_.assign(capacity, -1);
    mask_ = capacity - 1;
    for (size_t k = 0; k < entries_.size(); ++k) {
      size_t i = entries_[k].hash & mask_;
      while (slots_[i] >= 0) i = (i + 1) & mask_;
      slots_[i] = static_cast<int32_t>(k);
    }
  }

  std::vector<int32_t> slots_;  // index into entries_, -1 when empty
  size_t mask_ = 0;
  std::vector<Entry> entries_;
  std::string arena_;
};

}  // namespace loom::data
