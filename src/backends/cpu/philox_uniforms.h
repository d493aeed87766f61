// The cpu backend's vectorized Philox uniforms (defined in random.cpp), for
// kernels outside random.cpp that draw from a generator operand the way the
// dropout op does (attention's dropout on its probabilities). Assumes the
// stream layout of core/philox.h: element i of (seed, offset) is word i % 4
// of block i / 4.
#pragma once

#include <cstdint>

namespace loom::backends::cpu {

/// u[i] = philox::uniform(seed, offset, first + i) for i < n (24-bit floats
/// in [0, 1)), bit-identical to the scalar formula, vectorized with
/// AVX2/AVX-512 when the build has them. Never throws.
void philox_uniforms(uint64_t seed, uint64_t offset, uint64_t first, int64_t n, float* u);

}  // namespace loom::backends::cpu
