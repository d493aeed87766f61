// Sharded evaluation for data-parallel runs. Rank r of W evaluates dataset
// indices r, r + W, r + 2W, ... < n — a strided shard WITHOUT the padding of
// torch's DistributedSampler: evaluation runs no collective per batch, so
// ranks may hold different numbers of batches (one fewer at most) without a
// hang (pytorch/xla#2749), and no sample is seen twice, so nothing has to be
// dropped afterwards. The per-rank sums are reduced once after the loop (a
// host all-reduce every rank calls) and predictions are gathered back into
// dataset order, so the metrics are those of one process over the whole set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loom/sampler.h"
#include "loom/tensor.h"

namespace loom::train {

/// The shard of one rank (see the top of this file).
class EvalShardSampler : public data::Sampler {
 public:
  /// Throws loom::Error for n < 0, world < 1 or rank outside [0, world).
  EvalShardSampler(int64_t n, int64_t rank, int64_t world);
  std::vector<int64_t> indices(int64_t epoch) const override;
  /// ceil((n - rank) / world), 0 when rank >= n.
  int64_t size() const override { return size_; }

 private:
  int64_t n_, rank_, world_, size_;
};

/// Host tensor <-> bytes (dtype f32 or i64/i32, any rank), for host_all_gather.
std::string host_tensor_bytes(const Tensor& t);
/// The tensor of host_tensor_bytes; loom::Error "[ddp] ..." when malformed.
Tensor host_tensor_from_bytes(const std::string& bytes);

/// Rows of the ranks' shards (parts[r] holds rank r's EvalShardSampler rows,
/// in order) put back in dataset order: row i comes from parts[i % W] row
/// i / W. Dim 1 is padded with -100 to the widest part (as nested_concat).
/// Undefined when every part is empty. Throws loom::Error when the parts
/// differ in dtype, rank or beyond dim 1.
Tensor interleave_shards(const std::vector<Tensor>& parts);

}  // namespace loom::train
