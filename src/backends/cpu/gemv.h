// Matrix-vector products for the cpu backend: the f32 GEMMs with one row
// (m == 1), which is every linear layer and the LM head of a generation step
// (one new token). Such a product reads each weight once and does two flops
// per element read, so its time is the weight's bytes over the memory
// bandwidth; on this project's 2-core machine oneDNN's matmul primitive read
// such weights at 17-25 GB/s, these loops at 25-34 GB/s, near a plain read
// (docs/cpu_backend.md, "Matrix-vector products"). gemm() (gemm.h) calls
// them itself; nothing else needs to.
//
//   float x[k], w[k * n], y[n];   // w stored k x n (a GPT-2 Conv1D weight)
//   gemv(x, w, y, k, n, false);   // y = x w
//   gemv(x, w, y, k, n, true);    // w stored n x k (nn.Linear): y = x wᵀ
#pragma once

#include <cstdint>

#include "backends/cpu/gemm.h"
#include "loom/dtype.h"

namespace loom::backends::cpu {

/// True when gemm() computes `shape` with gemv(): f32, one product (batch 1),
/// m == 1, k and n >= 1 (a transposed A of one row is the same vector).
bool gemv_applies(const GemmShape& shape, DType dtype);

/// y[n] = x[k] · op(B): B stored k x n, or n x k when `trans_b`. The sums
/// do not depend on the thread count: trans_b takes one dot product per
/// output; otherwise rows of B are summed in fixed chunks of
/// kGemvChunkRows, each in row order, and the chunks' partial sums in chunk
/// order. Multi-threaded with get_num_threads() when B holds at least
/// kGemvParallelBytes; serial inside a parallel region. Requires k, n >= 1
/// and y not overlapping x or B; never throws.
void gemv(const float* x, const float* b, float* y, int64_t k, int64_t n, bool trans_b);

/// Rows of B summed into one partial result (the non-transposed layout).
inline constexpr int64_t kGemvChunkRows = 128;
/// Weights smaller than this run on one thread (waking a second one costs more).
inline constexpr int64_t kGemvParallelBytes = 256 * 1024;

}  // namespace loom::backends::cpu
