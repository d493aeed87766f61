// The cpu backend's dropout arithmetic on one f32 chunk, shared by the eager
// kernel (cpu_dropout in random.cpp) and the fused interpreter (fused.cpp), so
// a dropout inside a fused group keeps and scales exactly the elements the
// unfused kernel does, whatever the chunking or thread count. Assumes the
// generator state is the op's int64[2] (seed, offset) operand (ops.def).
#pragma once

#include <cstdint>

namespace loom::backends::cpu {

/// y[i] = x[i] / (1 - p) (divided in double, rounded to f32) when
/// uniform(first + i) >= p, else 0, for i in [0, n) (n <= kChunk; y may equal
/// x). uniform(k) is the 24-bit Philox4x32-10 uniform of stream element k
/// under (seed, offset), as philox::uniform and the reference's ref_dropout
/// (word k % 4 of block k / 4). `first` may be any element index.
void dropout_f32(uint64_t seed, uint64_t offset, uint64_t first, double p, const float* x, float* y,
                 int64_t n);

}  // namespace loom::backends::cpu
