// GEMM for the cpu backend, through oneDNN (DNNL); f32 products of one row
// (batch 1, m == 1, f32) run gemv.h's loops instead. Matrices are row-major; a transposed
// operand is described to oneDNN by strides, never copied.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/dtype.h"

namespace loom::backends::cpu {

/// A batch of equal-shaped products C[i] = op(A[i]) op(B[i]), i < batch:
/// op(A) is m x k (A stored k x m when trans_a), op(B) is k x n (B stored
/// n x k when trans_b), C is m x n. Batch items follow each other densely;
/// a broadcast operand (bcast_a / bcast_b) is one matrix used for every i.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  bool bcast_a = false, bcast_b = false;
};

/// Runs the batch with `dtype` operands and result (f32, bf16 or f16).
/// bf16/f16 use oneDNN's native kernel when this CPU has one (not its
/// reference implementation); otherwise they are converted to f32, multiplied
/// and rounded back. Primitives are cached by (shape, dtype, thread count).
/// Requires m, n, k, batch >= 1. Multi-threaded with get_num_threads().
void gemm(const GemmShape& shape, DType dtype, const void* a, const void* b, void* c);

/// f32 C = alpha op(A) op(B) + beta C with leading dimensions (oneDNN's
/// sgemm; single-threaded when called inside a parallel region). Never
/// throws (it may run inside an OpenMP region): returns false when oneDNN
/// rejects the arguments.
bool sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/// A product with explicit element strides (a strided, batched GEMM): for
/// every index i over `batch` (outer to inner; empty = one product),
/// C[i] (m x n) = A[i] (m x k) * B[i] (k x n). Each of a/b/c holds one stride
/// per batch dim, then the row stride and the column stride, in elements
/// (a transposed operand swaps its two; a broadcast batch dim has stride 0).
/// Nothing is copied when oneDNN takes the strides (a unit row or column
/// stride in every matrix); otherwise the operands are gathered densely
/// first. Requires m, n, k >= 1 and C's elements not to overlap.
struct GemmStrides {
  std::vector<int64_t> batch;
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> a, b, c;  // batch.size() + 2 strides each
};

/// Runs `s` with `dtype` operands and result (f32, bf16 or f16), as gemm().
void gemm_strided(const GemmStrides& s, DType dtype, const void* a, const void* b, void* c);

/// True when gemm() runs `dtype` natively (no f32 round trip) on this CPU.
/// oneDNN may still emulate bf16 there (avx512_core without BF16).
bool gemm_native(DType dtype);

/// True when `dtype` GEMMs run on this CPU's own low-precision instructions:
/// f32 always; bf16 when oneDNN's effective ISA has AVX512-BF16 (or AMX),
/// i.e. dnnl::get_effective_cpu_isa() includes avx512_core_bf16 (which
/// ONEDNN_MAX_CPU_ISA=AVX512_CORE or AVX2 turns off); f16 never (oneDNN
/// 2.x has no native f16 CPU GEMM for training shapes).
bool gemm_hardware_native(DType dtype);

/// True when oneDNN's effective ISA has AMX for bf16 (avx512_core_amx:
/// Sapphire Rapids and later; ONEDNN_MAX_CPU_ISA can turn it off).
bool gemm_has_amx();

}  // namespace loom::backends::cpu
