// bf16 x bf16 -> f32 GEMM with f32 accumulation (oneDNN matmul with bf16
// source and weights, an f32 destination and, for beta = 1, a sum post-op),
// for kernels that keep f32 results of bf16 products: the fused LM head
// (cross_entropy_grad.cpp) writes its logits, d input and accumulated
// d weight in f32 without a bf16 round trip. Row-major, transposes by strides.
#pragma once

#include <cstdint>

namespace loom::backends::cpu {

/// C[m, n] (f32) = op(A) op(B) + (accumulate ? C : 0), A and B bf16 (raw
/// uint16 bits): op(A) is m x k (stored k x m when trans_a), op(B) k x n
/// (stored n x k when trans_b). Requires m, n, k >= 1. Returns false when
/// this CPU's oneDNN has no native (non-reference) kernel for it, without
/// touching C; the caller then converts and uses the f32 path. Primitives
/// are cached by (shape, flags, thread count); multi-threaded.
bool gemm_bf16_f32(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b, const void* a,
                   const void* b, float* c, bool accumulate);

}  // namespace loom::backends::cpu
