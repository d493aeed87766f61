// Program: the backend-neutral executable of one graph — a schedule of steps
// over value slots. A step runs either one op (a kernel call) or a fused
// elementwise group that reads each input and writes each output once, and
// may end in one reduction (sum/mean/max/min) of one of its values, computed
// as the elements are produced (the reduced value is never materialized
// unless something else reads it).
// `free_after` lists the values whose buffers die after the step (liveness),
// so the runner can release or reuse them.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace loom::compiler {

/// One op inside a fused group. args[k] < num_inputs names a group input;
/// otherwise it names body[args[k] - num_inputs].
struct FusedOp {
  ops::OpKind op;
  ops::Attrs attrs;
  std::vector<int> args;
  ops::TensorType type;
};

/// The reduction a fused group ends in: `op` (k_sum, k_mean, k_max, k_min)
/// with `attrs` (axes, keepdim) applied to body[arg], whose shape is the
/// group's. The reduced axes are contiguous once size-1 dims are dropped, so
/// the group's elements are [outer, size, inner] with `size` reduced.
struct FusedReduce {
  ops::OpKind op = ops::OpKind::k_sum;
  ops::Attrs attrs;
  int arg = -1;  // body index (group-input indices are not allowed)
  ops::TensorType type;
  int64_t outer = 1, size = 1, inner = 1;
};

/// A chain of elementwise ops over one shape. Every input has that shape or
/// one that broadcasts to it (numpy rules), except a dropout's int64[2]
/// generator state (seed, offset), which only dropout members read; every
/// body output has that shape. With
/// `has_reduce`, the step's last output is the reduction's result.
struct FusedGroup {
  Shape shape;
  std::vector<ops::TensorType> input_types;
  std::vector<FusedOp> body;
  std::vector<int> outputs;  // body indices materialized to buffers
  bool has_reduce = false;
  FusedReduce reduce;
  int num_inputs() const { return static_cast<int>(input_types.size()); }
};

struct Step {
  bool fused = false;
  ir::Instr instr;           // when !fused
  FusedGroup group;          // when fused
  std::vector<int> inputs;   // value ids read
  std::vector<int> outputs;  // value ids written
  std::vector<int> free_after;
};

struct Program {
  ir::Graph graph;  // after the passes
  std::vector<Step> steps;
  int num_fused_groups = 0;
};

/// Schedules `graph` (already optimized) into steps, fusing elementwise
/// chains (and a reduction one of them feeds) when `fuse`, and computes
/// liveness.
Program lower(const ir::Graph& graph, bool fuse);

/// True for a step that runs a collective (an unfused kCollective op).
bool is_collective_step(const Step& step);

/// True for the collective steps whose kernel reads the operand until the
/// wait (all_gather, reduce_scatter: out of place, no copy); all_reduce
/// copies it into its output at the start.
bool collective_reads_operand_until_wait(const Step& step);

/// A reduce_scatter is waited for, at the latest, when the kReduceScattersInFlight-th
/// later one starts: each keeps its operand (a unit's whole flat gradient)
/// live until its wait, and the first reader of every shard's gradient is
/// the optimizer at the end of the step (FSDP: all the gradients again).
inline constexpr int kReduceScattersInFlight = 2;

/// The step before which a run waits for the collective started by step `s`
/// (is_collective_step): the first later step that reads its result, or
/// for a reduce_scatter the start of the kReduceScattersInFlight-th later
/// one if sooner; with neither, the end (steps.size(): a graph output, read
/// by the caller) or s + 1 when `result_in_arena` (an unread arena value,
/// free after this step). The memory plan keeps the collective's operands
/// live until then (the process group reads them until the wait: no copy).
int collective_wait_step(const Program& program, int s, bool result_in_arena);

/// True for ops a fused group may contain (float elementwise math,
/// comparisons, where, float casts, dropout of a float value), operands
/// broadcasting included.
bool is_fusible(const ir::Instr& instr, const ir::Graph& graph);

/// The [outer, size, inner] view of reducing `shape` over `axes` (empty =
/// all), or false when the reduced axes are not contiguous (ignoring size-1
/// dims) and a fused reduction cannot stream over them.
bool reduce_layout(const Shape& shape, const std::vector<int64_t>& axes, int64_t* outer,
                   int64_t* size, int64_t* inner);

}  // namespace loom::compiler
