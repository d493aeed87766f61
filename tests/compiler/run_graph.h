// run_graph: runs an IR graph op by op through a backend's kernels (no
// passes, no fusion, no memory plan) and returns every output as doubles;
// the unfused baseline that compiler-pass tests compare a rewrite with.
// Assumes inputs are given in g.inputs order (cpu_test::Operand buffers).
#pragma once

#include <algorithm>
#include <vector>

#include "backends/cpu_test_util.h"
#include "backends/kernel_backend.h"
#include "ir/graph.h"

namespace loom::testing {

/// The value of each of g.outputs, in order, as doubles.
inline std::vector<std::vector<double>> run_graph(const backends::KernelBackend& backend,
                                                  const ir::Graph& g,
                                                  const std::vector<cpu_test::Operand>& inputs) {
  std::vector<BufferPtr> slots(g.num_values());
  for (size_t i = 0; i < inputs.size(); ++i) slots[i] = inputs[i].buffer;
  int first = static_cast<int>(g.inputs.size());
  for (size_t i = 0; i < g.instrs.size(); ++i) {
    const ir::Instr& in = g.instrs[i];
    BufferPtr out = make_buffer(std::max<size_t>(1, in.type.nbytes()));
    backends::OpCall call{in.op, &in.attrs, {}, {out->data(), in.type}};
    for (int v : in.operands) call.inputs.push_back({slots[v]->data(), g.type_of(v)});
    backend.run(call);
    slots[first + i] = out;
  }
  std::vector<std::vector<double>> result;
  for (int o : g.outputs) {
    const ops::TensorType& t = g.type_of(o);
    std::vector<double> values(t.numel());
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = load_as_double(slots[o]->data(), t.dtype, i);
    result.push_back(values);
  }
  return result;
}

}  // namespace loom::testing
