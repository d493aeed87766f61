// Philox4x32-10 counter-based random numbers (Salmon, Moraes, Dror, Shaw,
// "Parallel Random Numbers: As Easy as 1, 2, 3", SC 2011). A value depends only
// on (seed, offset, element index), never on backend, thread count or order,
// so dropout masks are reproducible across eager, lazy, resume and threads.
//
// Element i of a draw with generator state (seed, offset) uses counter
// {i / 4 low, i / 4 high, offset low, offset high} and key {seed low, seed
// high}, and takes word i % 4 of the block.
#pragma once

#include <array>
#include <cstdint>

namespace loom::philox {

/// One Philox4x32-10 block: 4 random 32-bit words for (counter, key).
inline std::array<uint32_t, 4> block(std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
  constexpr uint32_t kM0 = 0xD2511F53, kM1 = 0xCD9E8D57;  // multipliers (SC11 paper)
  constexpr uint32_t kW0 = 0x9E3779B9, kW1 = 0xBB67AE85;  // Weyl key increments
  for (int round = 0; round < 10; ++round) {
    uint64_t p0 = static_cast<uint64_t>(kM0) * ctr[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * ctr[2];
    ctr = {static_cast<uint32_t>(p1 >> 32) ^ ctr[1] ^ key[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ ctr[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += kW0;
    key[1] += kW1;
  }
  return ctr;
}

/// The 32-bit word for element `index` of the stream (seed, offset).
inline uint32_t word(uint64_t seed, uint64_t offset, uint64_t index) {
  uint64_t b = index / 4;
  auto r = block({static_cast<uint32_t>(b), static_cast<uint32_t>(b >> 32),
                  static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)},
                 {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
  return r[index % 4];
}

/// Uniform float in [0, 1) with 24 random bits: (word >> 8) * 2^-24.
inline float uniform(uint64_t seed, uint64_t offset, uint64_t index) {
  return static_cast<float>(word(seed, offset, index) >> 8) * (1.0f / 16777216.0f);
}

}  // namespace loom::philox
