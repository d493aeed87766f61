// Helpers for the xla lowering's tests: trace one case of the op table
// (tests/ops/op_cases.h) on the lazy device, collect its pending graph the
// way mark_step does (lazy/graph_executor.h collect), run the generic pass
// pipeline with the xla lowering's op set (what lazy:xla's Capabilities
// say: composites it lacks are decomposed), and keep the graph's input
// buffers (host memory on lazy:cpu) so the same graph can be lowered and run
// on PJRT and compared with lazy:cpu's own result. Header-only (CMake
// compiles only *_test.cpp files into loom_tests).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backends/xla/lower/stablehlo.h"
#include "compiler/pass.h"
#include "lazy/graph_executor.h"
#include "lazy/tensor_impl.h"
#include "loom/error.h"
#include "loom/lazy.h"
#include "ops/op_cases.h"

namespace loom::testing {

/// One op case traced for xla.
struct XlaTracedCase {
  ir::Graph graph;                     // after the generic passes for xla's op set
  std::vector<ops::TensorType> types;  // graph.inputs
  std::vector<BufferPtr> inputs;       // host buffers of the graph's inputs, in order
  Tensor result;                       // the case's lazy result (sync it for lazy:cpu's value)
};

/// The xla op set as a pass-pipeline predicate.
inline bool xla_lowers(ops::OpKind op) {
  return backends::xla::lowered_ops().test(static_cast<size_t>(op));
}

/// The graph computing the pending lazy tensor `result` (collected as
/// mark_step would), after the generic passes for xla's op set. nullopt when
/// `result` is not a pending value (nothing to compile).
inline std::optional<XlaTracedCase> collect_for_xla(const Tensor& result) {
  XlaTracedCase t;
  t.result = result;
  lazy::TraceNodePtr node = result.impl()->node;
  if (!node || !node->is_pending()) return std::nullopt;
  lazy::Collected collected = lazy::collect({node});
  t.graph = collected.graph;
  t.types = collected.graph.inputs;
  for (const lazy::TraceNodePtr& in : collected.input_nodes) {
    if (in->ready.valid()) in->ready.wait();
    t.inputs.push_back(in->data);
  }
  compiler::default_pipeline(xla_lowers).run(t.graph);
  return t;
}

/// Traces `c` in `dtype` on Device("lazy") with manual_seed(7) (as the lazy
/// forward test) and collects it (collect_for_xla). nullopt when the case is
/// a misuse case (it throws while tracing) or its result is not pending.
inline std::optional<XlaTracedCase> trace_for_xla(const optest::OpCase& c, DType dtype) {
  optest::CaseEnv env(Device("lazy"), dtype, optest::case_seed(c));
  Tensor result;
  try {
    manual_seed(7);
    result = c.run(c.make(env), env);
  } catch (const loom::Error&) {
    return std::nullopt;
  }
  return collect_for_xla(result);
}

}  // namespace loom::testing
