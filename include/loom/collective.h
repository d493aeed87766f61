// loom/collective.h: collectives as tensor ops, traced into the step graph
// like every op of loom/ops.h (kept in their own header so that code without
// collectives does not depend on loom/dist.h).
//
//   loom::dist::init_process_group("auto");        // under mpirun: every rank
//   loom::Tensor g = loom::all_reduce(grad, loom::dist::ReduceOp::mean);
//   loom::lazy::mark_step();                        // the all_reduce runs here
#pragma once

#include "loom/dist.h"
#include "loom/tensor.h"

namespace loom {

/// x reduced over every rank of dist::default_process_group() when the step
/// runs: op sum or mean (mean = sum / world_size). Same shape and dtype as x
/// (any dtype but bool; integer mean truncates). Identity on one rank. On
/// the lazy device it is traced into the step's graph and never merged,
/// dropped or folded by the compiler; every rank must trace the same
/// all_reduces in the same order (else the job stops at --ddp_timeout).
/// Differentiable: the gradient is the all_reduce (same op) of the gradient.
/// Counted per run in AllReduceCount / AllReduceBytes / AllReduceTime
/// (on one rank too). Throws loom::Error "[all_reduce] reduce op max is not
/// supported (sum, mean)" and "[all_reduce] dtype bool is not supported".
Tensor all_reduce(const Tensor& x, dist::ReduceOp op = dist::ReduceOp::sum);

/// Every rank's x [n, ...] concatenated along axis 0 in rank order: [W*n, ...]
/// (W = dist::world_size() when traced; the graph keeps it, and the kernel
/// refuses a group of another size). Any dtype but bool, rank >= 1. Identity
/// on one rank. Differentiable: the gradient is reduce_scatter(sum) of the
/// gradient. Counted in AllGatherCount / AllGatherBytes / AllGatherTime /
/// AllGatherWaitTime. Throws loom::Error "[all_gather] ..." for bool or rank 0.
Tensor all_gather(const Tensor& x);

/// x [W*n, ...] reduced (sum or mean) over the ranks; rank r keeps block r:
/// [n, ...] (MPI's Reduce_scatter_block). Identity on one rank.
/// Differentiable: the gradient is all_gather of the gradient (over W for
/// mean). Counted in ReduceScatterCount / ...Bytes / ...Time / ...WaitTime.
/// Throws loom::Error "[reduce_scatter] ..." for max, bool, rank 0, or axis 0
/// not a multiple of W.
Tensor reduce_scatter(const Tensor& x, dist::ReduceOp op = dist::ReduceOp::sum);

}  // namespace loom
