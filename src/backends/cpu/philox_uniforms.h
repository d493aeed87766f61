// The cpu backend's vectorized Philox uniforms (defined in random.cpp), for
// kernels outside random.cpp that draw from a generator operand the way the
// dropout op does (attention's dropout on its probabilities). Assumes the
// stream layout of core/philox.h: element i of (seed, offset) is word i % 4
// of block i / 4. dropout_apply is the dropout op's masking and scaling, for
// those kernels to apply to uniforms they drew.
#pragma once

#include <cstdint>

namespace loom::backends::cpu {

/// u[i] = philox::uniform(seed, offset, first + i) for i < n (24-bit floats
/// in [0, 1)), bit-identical to the scalar formula, vectorized with
/// AVX2/AVX-512 when the build has them. Never throws.
void philox_uniforms(uint64_t seed, uint64_t offset, uint64_t first, int64_t n, float* u);

/// The dropout op's masking with uniforms already drawn: y[i] = u[i] >= p ?
/// float(double(x[i]) / (1 - p)) : 0 for i < n, bit-identical to that scalar
/// formula (the division in double), 8 lanes at a time with AVX-512. y may
/// equal x. Never throws.
void dropout_apply(const float* u, double p, const float* x, float* y, int64_t n);

}  // namespace loom::backends::cpu
