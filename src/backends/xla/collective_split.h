// Splitting a graph at its collectives (ops.def's kCollective: all_reduce,
// all_gather, reduce_scatter) into collective-free stages, for a backend
// whose compiled programs cannot call the process group (xla: PJRT's
// executables run on the device, the collectives run on the host between
// them). Pure IR: no PJRT needed.
//
// Levels: a graph input has level 0; an instr has the largest level of its
// operands, and a collective one more than that. Stage k holds the
// non-collective instrs of level k (in graph order); the collectives of
// level k run after stage k-1 and before stage k. So every operand is
// ready when read, and collectives whose inputs do not depend on each
// other (a DDP step's gradient buckets) share one boundary.
//
//   graph(%0: f32[4]) { %1 = mul(%0, %0)  %2 = all_reduce(%1)  %3 = add(%2, %0)  return (%3) }
//   -> stage 0: (%0) -> %1;  boundary 1: %2 = all_reduce(%1);  stage 1: (%2, %0) -> %3
#pragma once

#include <vector>

#include "ir/graph.h"

namespace loom::backends::xla {

/// One collective-free piece of a graph.
struct SplitStage {
  ir::Graph graph;           // its inputs are `inputs`' values, its outputs `outputs`'
  std::vector<int> inputs;   // per stage input: the original graph's value id
  std::vector<int> outputs;  // per stage output: the original value id it defines
};

struct SplitGraph {
  /// Stages in run order (one when the graph has no collective). A stage
  /// may be empty (no instrs) when a boundary's results are only returned.
  std::vector<SplitStage> stages;
  /// before[k]: the original value ids of the collective instrs that run
  /// right before stage k (before[0] is empty).
  std::vector<std::vector<int>> before;
};

/// Splits `graph` as above. Stage outputs are the values a later stage, a
/// collective or the graph's outputs read (inputs returned as outputs, and
/// collective results, are not stage outputs: the caller has them).
SplitGraph split_at_collectives(const ir::Graph& graph);

}  // namespace loom::backends::xla
