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

}  // namespace loom
