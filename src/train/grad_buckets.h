// Gradient buckets of data-parallel training (torch DDP's Reducer, traced the
// way xm.optimizer_step reduces): the parameters' .grad tensors are grouped,
// in reverse parameter order (the order backward produces them), into
// buckets of at most a byte cap and one dtype; each bucket is flattened,
// concatenated, all-reduced (mean) as ONE graph node and split back into
// .grad. A bucket's all_reduce depends only on its own gradients, so the
// step graph lets it run while the rest of backward still computes.
// Assumes every rank calls all_reduce_gradients with the same parameters in
// the same order (the same model): the buckets, hence the collectives, match.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loom/tensor.h"

namespace loom::train {

/// One bucket: indices into the parameter list, in the order packed.
using GradBucket = std::vector<size_t>;

/// Buckets over parameters of `bytes[i]` bytes and dtype `dtypes[i]` (same
/// length): walked from the last parameter to the first, a bucket is closed
/// when adding the next parameter would pass `cap_bytes` or change dtype. A
/// parameter larger than the cap gets a bucket of its own. Every index
/// appears exactly once. Throws loom::Error for cap_bytes <= 0 or lengths
/// that differ.
std::vector<GradBucket> plan_grad_buckets(const std::vector<int64_t>& bytes,
                                          const std::vector<DType>& dtypes, int64_t cap_bytes);

/// For each bucket of plan_grad_buckets(params, cap_mb * 2^20): grad :=
/// reduce(concat(flatten(grad_i))) split back to the parameters' shapes. A
/// parameter without .grad contributes zeros (so that every rank packs the
/// same buckets) and receives the reduced value. `reduce` is the traced
/// collective (train::all_reduce_mean). Returns the number of buckets.
/// Throws loom::Error for cap_mb <= 0.
int64_t all_reduce_gradients(const std::vector<Tensor>& params, double cap_mb,
                             const std::function<Tensor(const Tensor&)>& reduce);

}  // namespace loom::train
