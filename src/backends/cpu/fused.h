// The cpu backend's fused kernels: a chunked interpreter for elementwise
// groups (fused.cpp) and for groups that end in a reduction
// (fused_reduce.cpp).
#pragma once

#include "backends/cpu/kernels.h"
#include "backends/kernel_backend.h"

namespace loom::backends::cpu {

/// Elements per interpreter chunk (unary_f32 takes at most kChunk values).
inline constexpr int64_t kFusedChunk = kChunk;

/// Runs a fused group chunk by chunk (fused.cpp); one ending in a reduction
/// goes to run_fused_reduce.
void run_fused_chunked(const FusedCall& call);

/// Runs independent groups without reductions in one parallel pass over
/// all their chunks (fused_batch.cpp; Backend::run_fused_batch).
void run_fused_batch_chunked(const std::vector<FusedCall>& calls);

/// Evaluates the group's body over its elements [begin, begin + n)
/// (n <= kFusedChunk), stores the materialized outputs there and returns the
/// calling thread's scratch: body value k's chunk starts at
/// (num_inputs + k) * kFusedChunk and stays valid until this thread's next
/// call (f32 inputs of the group's shape are read in place, so input slots
/// are unspecified).
float* eval_fused_chunk(const FusedCall& call, int64_t begin, int64_t n);

/// Runs a group with has_reduce: the body is evaluated chunk by chunk and
/// body[reduce.arg] is reduced as it is produced (fused_reduce.cpp).
/// Float sums accumulate in double, as cpu_reduce does.
void run_fused_reduce(const FusedCall& call);

}  // namespace loom::backends::cpu
