// The Trainer's data-parallel seam: everything src/train/ asks of the
// process group (dist::ProcessGroup, include/loom/dist.h) goes through these
// few functions, so the Trainer reads the same at one rank and at N. With no
// process group initialized (a plain `loom train`) the world is one rank:
// every reduction is the identity and nothing is communicated.
//
// Rule for callers (pytorch/xla#2712): a collective is called by every rank
// the same number of times in the same order; never inside a condition that
// depends on the rank or on local state (a file that failed to write, a
// per-rank batch count).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/tensor.h"

namespace loom::train {

/// This process's rank in [0, ddp_world_size()); 0 without a process group.
int64_t ddp_rank();
/// Ranks in the job (mpirun -np N); 1 without a process group.
int64_t ddp_world_size();
/// rank 0: the one that logs, prints and saves (HF's is_world_process_zero).
inline bool is_world_process_zero() { return ddp_rank() == 0; }

/// The traced all_reduce(mean) of `x` over the ranks (any shape, f32/bf16):
/// a graph node, so it runs inside the step's executable. `x` itself at one rank.
Tensor all_reduce_mean(const Tensor& x);
/// As all_reduce_mean with sum.
Tensor all_reduce_sum(const Tensor& x);

/// Sums `values` element-wise over the ranks, on the host (f64); identity at one rank.
std::vector<double> host_all_reduce_sum(std::vector<double> values);
/// Every rank's `bytes`, in rank order (sizes may differ between ranks).
std::vector<std::string> host_all_gather(const std::string& bytes);
/// Returns when every rank has called it.
void ddp_barrier();
/// Throws loom::Error on every rank when `bytes` differ between ranks, naming
/// `what` and the first rank that differs from rank 0 (a launcher mistake:
/// different flags, a different model on one rank).
void check_same_on_all_ranks(const std::string& what, const std::string& bytes);
/// The same for a list of items; the message names the first that differs.
void check_same_items_on_all_ranks(const std::string& what, const std::vector<std::string>& items);

}  // namespace loom::train
