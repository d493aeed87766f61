// Optimized cpu kernels: the registry maps an op kind to its optimized
// kernel (nullptr = use the reference kernel). Each family lives in its own
// file: elementwise_unary.cpp, elementwise_binary.cpp (gelu_backward.cpp), reduce.cpp,
// matmul.cpp (oneDNN GEMM), nn.cpp, attention.cpp, index.cpp, shape.cpp,
// random.cpp. A kernel may hand a rare dtype case to the reference kernel.
#pragma once

#include "backends/kernel_backend.h"

namespace loom::backends::cpu {

/// The optimized kernel for `op` (registry.cpp: a table generated from
/// ops.def; a new op that is not elementwise unary/binary or a reduction
/// defines cpu_<name>, which may forward to the reference kernel).
Kernel optimized_kernel(ops::OpKind op);

/// Elements per parallel task for memory-bound loops: below this an op runs
/// on one thread (thread start-up would cost more than it saves).
inline constexpr int64_t kElementGrain = 1 << 15;
/// Elements per conversion chunk (stack scratch in kernels that convert
/// bf16/f16/int operands to f32 or int64 on the fly).
inline constexpr int64_t kChunk = 1024;

/// y = op(x) for one chunk of f32 values (n <= kChunk; y may equal x): the
/// unary kernels' arithmetic (vectorized vm:: maths), shared by the eager
/// kernels and the fused interpreter so both give the same bits. `scalar` is
/// pow_scalar's exponent. Ops without a float form copy x (cast).
void unary_f32(ops::OpKind op, double scalar, const float* x, float* y, int64_t n);

/// out = grad * gelu'(x) for one chunk of f32 values (n <= kChunk; out may
/// equal g or x) of gelu_backward (exact GELU) or gelu_tanh_backward: the
/// arithmetic shared by the eager kernel and the fused interpreter
/// (gelu_backward.cpp).
void gelu_backward_f32(ops::OpKind op, const float* g, const float* x, float* out, int64_t n);

// elementwise_unary.cpp: every kUnary op (incl. cast), full, arange.
void cpu_unary(const OpCall& call);
void cpu_full(const OpCall& call);
void cpu_arange(const OpCall& call);
// elementwise_binary.cpp: every kBinary op (incl. comparisons), where.
void cpu_binary(const OpCall& call);
void cpu_where(const OpCall& call);
// gelu_backward.cpp: gelu_backward and gelu_tanh_backward (cpu_binary calls it).
void run_gelu_backward(const OpCall& call);
// reduce.cpp: sum, mean, max, min, argmax, var.
void cpu_reduce(const OpCall& call);
// matmul.cpp
void cpu_matmul(const OpCall& call);
// nn.cpp
void cpu_softmax(const OpCall& call);
void cpu_log_softmax(const OpCall& call);
void cpu_layer_norm(const OpCall& call);
void cpu_cross_entropy(const OpCall& call);
// cross_entropy_grad.cpp
void cpu_cross_entropy_backward(const OpCall& call);
void cpu_fused_linear_cross_entropy(const OpCall& call);
/// Whether cpu_fused_linear_cross_entropy computes bf16 logits transposed
/// ([C, rows]: the default where oneDNN has AMX) or by rows (elsewhere);
/// LOOM_FUSED_CE_BF16_LAYOUT=cols|rows forces one. Throws loom::Error on any
/// other non-empty value.
bool fused_ce_bf16_transposed();
// attention.cpp
void cpu_attention(const OpCall& call);
// attention_backward.cpp
void cpu_attention_backward(const OpCall& call);
// index.cpp
void cpu_embedding(const OpCall& call);
void cpu_index_select(const OpCall& call);
void cpu_index_add(const OpCall& call);
/// Writes only the indexed slices when the output is self's buffer (the
/// memory plan's in-place / donated case); else copies self first.
void cpu_index_copy(const OpCall& call);
void cpu_gather(const OpCall& call);
void cpu_scatter_add(const OpCall& call);
void cpu_one_hot(const OpCall& call);
// shape.cpp
void cpu_reshape(const OpCall& call);
void cpu_permute(const OpCall& call);
void cpu_expand(const OpCall& call);
void cpu_slice(const OpCall& call);
void cpu_concat(const OpCall& call);
/// dst = src (row-major, `shape`, elements of `esize` bytes) permuted so
/// that dst dim i is src dim perm[i] (blocked copy, parallel).
void permute_copy(const void* src, const Shape& shape, const std::vector<int64_t>& perm,
                  size_t esize, void* dst);
// random.cpp
void cpu_dropout(const OpCall& call);
// all_reduce.cpp: copies the operand and reduces it over the process group.
void cpu_all_reduce(const OpCall& call);
// all_gather / reduce_scatter over the process group (same file).
void cpu_all_gather(const OpCall& call);
void cpu_reduce_scatter(const OpCall& call);
void cpu_uniform(const OpCall& call);
void cpu_normal(const OpCall& call);

}  // namespace loom::backends::cpu
