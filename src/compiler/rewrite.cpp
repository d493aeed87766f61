// Rewriter and rewrite_graph (compiler/rewrite.h): the instr-by-instr graph
// rebuild shared by the rewriting passes.
#include "compiler/rewrite.h"

namespace loom::compiler {

std::vector<int> value_use_counts(const ir::Graph& graph) {
  std::vector<int> uses(graph.num_values(), 0);
  for (const ir::Instr& in : graph.instrs)
    for (int v : in.operands) ++uses[v];
  for (int v : graph.outputs) ++uses[v];
  return uses;
}

std::vector<bool> live_values(const ir::Graph& graph) {
  std::vector<bool> live(graph.num_values(), false);
  for (int v : graph.outputs) live[v] = true;
  int first = static_cast<int>(graph.inputs.size());
  for (int id = graph.num_values() - 1; id >= first; --id)
    if (live[id])
      for (int v : graph.instr_of(id).operands) live[v] = true;
  return live;
}

std::vector<int> live_use_counts(const ir::Graph& graph) {
  std::vector<bool> live = live_values(graph);
  std::vector<int> uses(graph.num_values(), 0);
  for (int v : graph.outputs) ++uses[v];
  int first = static_cast<int>(graph.inputs.size());
  for (int id = first; id < graph.num_values(); ++id)
    if (live[id])
      for (int v : graph.instr_of(id).operands) ++uses[v];
  return uses;
}

Rewriter::Rewriter(const ir::Graph& graph)
    : old_(graph), uses_(value_use_counts(graph)), map_(graph.num_values(), -1) {
  out_.inputs = graph.inputs;
  for (int v = 0; v < static_cast<int>(graph.inputs.size()); ++v) map_[v] = v;
}

int Rewriter::emit(ir::Instr instr) {
  out_.instrs.push_back(std::move(instr));
  return out_.num_values() - 1;
}

int Rewriter::emit_copy(const ir::Instr& in) {
  ir::Instr copy = in;
  for (int& v : copy.operands) v = map_[v];
  return emit(std::move(copy));
}

bool rewrite_graph(ir::Graph& graph,
                   const std::function<int(int, const ir::Instr&, Rewriter&)>& rule) {
  Rewriter rw(graph);
  int first = static_cast<int>(graph.inputs.size());
  bool changed = false;
  for (size_t i = 0; i < graph.instrs.size(); ++i) {
    const ir::Instr& in = graph.instrs[i];
    int id = first + static_cast<int>(i);
    size_t emitted = rw.out_.instrs.size();
    int v = rule(id, in, rw);
    // What a rule emits for `in` inherits its gradient checkpointing mark (remat.cpp).
    for (size_t k = emitted; k < rw.out_.instrs.size(); ++k)
      if (rw.out_.instrs[k].remat == 0) rw.out_.instrs[k].remat = in.remat;
    if (v >= 0) {
      changed = true;
      rw.map_[id] = v;
    } else {
      rw.map_[id] = rw.emit_copy(in);
    }
  }
  if (!changed) return false;
  for (int v : graph.outputs) rw.out_.outputs.push_back(rw.map_[v]);
  graph = std::move(rw.out_);
  return true;
}

}  // namespace loom::compiler
