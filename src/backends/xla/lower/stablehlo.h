// Lowering of loom's IR (ir::Graph after the generic passes) to StableHLO MLIR
// text, for the xla backend to compile with PJRT_Client_Compile (program
// format "mlir"). The module has one public func whose arguments are the
// graph's inputs in order and whose results are its outputs in order; dtypes
// map f32/bf16/f16/i32/i64/bool -> f32/bf16/f16/i32/i64/i1.
//
//   ir::Graph g = ...;  // after compiler::default_pipeline(caps.supports)
//   std::string text = lower_to_stablehlo(g, {.aliases = {{0, 0}}});
//   // module @loom_main ... func.func public @main(%arg0: tensor<4x8xf32>
//   //     {tf.aliasing_output = 0 : i32}, ...) -> (tensor<4x8xf32>, ...)
//
// Semantics are the reference backend's (backends/reference/): bf16/f16 math
// in f32 as the cpu kernels, Philox4x32-10 random ops bit-identical to
// lazy:cpu (lower_random.cpp), index operands clamped by XLA where the
// reference throws on an out-of-range index. docs/backends.md, "xla: lowering".
// When LOOM_DUMP_IR is set, every lowered module is also written to
// $LOOM_DUMP_IR/<graph hash>.<name>.mlir beside the graph's .ir text.
#pragma once

#include <bitset>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ops/op_kind.h"

namespace loom::backends::xla {
struct LowerOptions {
  std::vector<std::pair<int, int>> aliases;  // (graph input index, graph output index): donated
  std::string name = "main";                 // the public func's name
};
/// Op kinds lower_to_stablehlo handles (Capabilities::ops for xla; everything else is decomposed
/// by the generic passes before lowering or refused).
std::bitset<ops::kNumOps> lowered_ops();
/// MLIR text of a StableHLO module whose public func takes the graph's inputs in order and
/// returns its outputs in order; aliases become `tf.aliasing_output` arg attributes.
/// Throws loom::Error "[xla] cannot lower <op> ..." for an op it does not handle.
std::string lower_to_stablehlo(const ir::Graph& graph, const LowerOptions& options = {});
}  // namespace loom::backends::xla
