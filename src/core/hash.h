// 128-bit hashing for graph hashes and cache keys. Mixing uses the 64-bit
// finalizer of MurmurHash3 (Appleby, public domain algorithm) on two lanes
// with different seeds; good dispersion, not cryptographic.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace loom {

struct Hash128 {
  uint64_t lo = 0;
  uint64_t hi = 0;
  bool operator==(const Hash128&) const = default;
  /// 32 lowercase hex digits (hi then lo).
  std::string hex() const;
};

inline uint64_t mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  k *= 0xc4ceb9fe1a85ec53ULL;
  k ^= k >> 33;
  return k;
}

/// Folds a 64-bit word into `h`.
inline Hash128 hash_combine(Hash128 h, uint64_t v) {
  h.lo = mix64(h.lo ^ (v + 0x9e3779b97f4a7c15ULL + (h.lo << 6) + (h.lo >> 2)));
  h.hi = mix64(h.hi ^ (v * 0xc2b2ae3d27d4eb4fULL + 0x165667b19e3779f9ULL + (h.hi << 7)));
  return h;
}

inline Hash128 hash_combine(Hash128 h, Hash128 other) {
  return hash_combine(hash_combine(h, other.lo), other.hi);
}

/// Folds `n` bytes into `h` (length included, so "" and "\0" differ).
inline Hash128 hash_bytes(Hash128 h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = hash_combine(h, w);
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  return hash_combine(hash_combine(h, tail), static_cast<uint64_t>(n));
}

inline Hash128 hash_string(Hash128 h, std::string_view s) { return hash_bytes(h, s.data(), s.size()); }

struct Hash128Hasher {
  size_t operator()(const Hash128& h) const { return static_cast<size_t>(h.lo ^ h.hi); }
};

}  // namespace loom
