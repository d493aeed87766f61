// Program: the backend-neutral executable of one graph — a schedule of steps
// over value slots. A step runs either one op (a kernel call) or a fused
// elementwise group that reads each input and writes each output once.
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

/// A chain of elementwise ops over one shape. Every input has that shape or
/// one element (a broadcast scalar); every output has that shape.
struct FusedGroup {
  Shape shape;
  std::vector<ops::TensorType> input_types;
  std::vector<FusedOp> body;
  std::vector<int> outputs;  // body indices materialized to buffers
  int num_inputs() const { return static_cast<int>(input_types.size()); }
};

struct Step {
  bool fused = false;
  ir::Instr instr;          // when !fused
  FusedGroup group;         // when fused
  std::vector<int> inputs;  // value ids read
  std::vector<int> outputs; // value ids written
  std::vector<int> free_after;
};

struct Program {
  ir::Graph graph;  // after the passes
  std::vector<Step> steps;
  int num_fused_groups = 0;
};

/// Schedules `graph` (already optimized) into steps, fusing elementwise
/// chains when `fuse`, and computes liveness.
Program lower(const ir::Graph& graph, bool fuse);

/// True for ops a fused group may contain (float elementwise math,
/// comparisons, where, float casts).
bool is_fusible(const ir::Instr& instr, const ir::Graph& graph);

}  // namespace loom::compiler
