// run_program: runs a lowered Program (fused steps included) through a
// backend with given input values and returns every graph output as doubles;
// random_inputs draws N(0, 1) values for a graph's inputs. Shared by the
// fusion tests (fused_reduce_test.cpp, fused_dropout_test.cpp), which compare
// a fused program with the unfused one (lower(g, false)).
// Assumes one value list per graph input, in g.inputs order, converted to
// the input's dtype.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "backends/kernel_backend.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "loom/dtype.h"

namespace loom::compiler {

// Runs `p` on `backend` with the given input values (one list per graph
// input, converted to its dtype); returns every graph output as doubles.
inline std::vector<std::vector<double>> run_fused_program(
    const Program& p, const backends::KernelBackend& backend,
    const std::vector<std::vector<double>>& in) {
  const ir::Graph& g = p.graph;
  std::vector<std::vector<std::byte>> slots(g.num_values());
  for (size_t i = 0; i < in.size(); ++i) {
    slots[i].resize(g.inputs[i].nbytes());
    for (size_t k = 0; k < in[i].size(); ++k)
      store_from_double(slots[i].data(), g.inputs[i].dtype, k, in[i][k]);
  }
  for (const Step& s : p.steps) {
    for (int v : s.outputs) slots[v].resize(g.type_of(v).nbytes());
    if (s.fused) {
      backends::FusedCall call{&s.group, {}, {}};
      for (int v : s.inputs) call.inputs.push_back({slots[v].data(), g.type_of(v)});
      for (int v : s.outputs) call.outputs.push_back({slots[v].data(), g.type_of(v)});
      backend.run_fused(call);
    } else {
      backends::OpCall call{s.instr.op, &s.instr.attrs, {}, {}};
      for (int v : s.inputs) call.inputs.push_back({slots[v].data(), g.type_of(v)});
      call.output = {slots[s.outputs[0]].data(), s.instr.type};
      backend.run(call);
    }
  }
  std::vector<std::vector<double>> out;
  for (int v : g.outputs) {
    const ops::TensorType& t = g.type_of(v);
    std::vector<double> vals(t.numel());
    for (size_t k = 0; k < vals.size(); ++k) vals[k] = load_as_double(slots[v].data(), t.dtype, k);
    out.push_back(vals);
  }
  return out;
}

// N(0, 1) values for every input of g (mt19937 seeded with `seed`).
inline std::vector<std::vector<double>> random_inputs(const ir::Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> dist(0.0, 1.0);
  std::vector<std::vector<double>> in;
  for (const ops::TensorType& t : g.inputs) {
    std::vector<double> v(t.numel());
    for (double& x : v) x = dist(rng);
    in.push_back(v);
  }
  return in;
}

}  // namespace loom::compiler
