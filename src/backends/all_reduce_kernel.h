// The collective kernel bodies the backends share (all_reduce; all_gather and
// reduce_scatter below). all_reduce: copy the operand into
// the output, then reduce the output in place over
// dist::graph_process_group() (identity on one rank). Executables start it
// (start_all_reduce) and wait for it at the first step that reads the output
// (executable.cpp), so the reduction overlaps the steps in between; the
// kernel tables' blocking form (run_all_reduce) is start + wait. Assumes
// host-visible buffers while the kernel runs and until the wait (cpu,
// reference, and sim's stream thread, which starts and waits in order).
#pragma once

#include <memory>

#include "backends/kernel_backend.h"
#include "loom/dist.h"

namespace loom::backends {

/// Copies the operand of an all_reduce OpCall (attrs->reduce_op: 0 sum, 1 mean)
/// into its output and starts the in-place reduction of the output. Do not
/// touch the output until the returned Work's wait(), which throws
/// loom::Error "[all_reduce] f32[N]: [dist] ..." when the collective fails
/// or times out (--ddp_timeout). Throws the same when the start fails.
std::unique_ptr<dist::Work> start_all_reduce(const OpCall& call);

/// start_all_reduce(call)->wait(): the blocking kernel.
void run_all_reduce(const OpCall& call);

/// all_gather (attrs->world_size): starts the group's all_gather of
/// the operand [n, ...] into the output [W*n, ...] (rank order). reduce_scatter
/// (attrs->reduce_op = 0 sum / 1 mean, attrs->world_size): starts the
/// group's reduce_scatter of the operand [W*n, ...] into the output [n, ...].
/// Out of place; do not touch either buffer until wait(). Throw loom::Error
/// "[all_gather] f32[N]: ..." when the world size in attrs is not the group's,
/// or when the collective fails or times out.
std::unique_ptr<dist::Work> start_all_gather(const OpCall& call);
std::unique_ptr<dist::Work> start_reduce_scatter(const OpCall& call);
/// The start of any kCollective op (dispatch on call.op).
std::unique_ptr<dist::Work> start_collective_kernel(const OpCall& call);
/// The blocking kernels (start + wait).
void run_all_gather(const OpCall& call);
void run_reduce_scatter(const OpCall& call);

}  // namespace loom::backends
