// Rewriter: the shared set-up of a pass that rebuilds a graph instr by instr
// (cast_hoist, matmul_batch_sum, matmul_layout): the use count of every old
// value, the old -> new value map, and the new graph being built. A rule
// looks at one old instr and either returns the new value that replaces it
// (after emitting whatever it needs) or -1 to keep a copy of the instr with
// its operands remapped. Assumes the graph is in topological order (as
// ir::verify checks), so every operand of an old instr is mapped before the
// rule sees it. Instrs a rewrite makes dead are copied anyway; dce drops them.
#pragma once

#include <functional>
#include <vector>

#include "ir/graph.h"

namespace loom::compiler {

/// uses[v] = how many instr operands and graph outputs read value v
/// (size graph.num_values()).
std::vector<int> value_use_counts(const ir::Graph& graph);
/// live[v]: value v reaches a graph output.
std::vector<bool> live_values(const ir::Graph& graph);
/// value_use_counts() counting only the readers that reach an output (the
/// dead instrs an earlier pass left for dce read nothing).
std::vector<int> live_use_counts(const ir::Graph& graph);

class Rewriter {
 public:
  explicit Rewriter(const ir::Graph& graph);
  const ir::Graph& old() const { return old_; }
  /// Readers of old value v (value_use_counts).
  int uses(int v) const { return uses_[v]; }
  /// The new-graph value of old value v (valid for inputs and earlier instrs).
  int map(int v) const { return map_[v]; }
  /// Appends `instr` (operands already new-graph ids); returns its value id.
  int emit(ir::Instr instr);
  /// emit() of a copy of old instr `in` with its operands mapped.
  int emit_copy(const ir::Instr& in);

 private:
  friend bool rewrite_graph(ir::Graph&,
                            const std::function<int(int, const ir::Instr&, Rewriter&)>&);
  const ir::Graph& old_;
  std::vector<int> uses_;
  std::vector<int> map_;
  ir::Graph out_;
};

/// Calls rule(id, instr, rewriter) for each old instr in order (id = its
/// old value id). A rule returns the new value replacing the instr, or -1 to
/// keep it. When any rule replaced an instr, `graph` becomes the new graph
/// (outputs remapped) and true is returned; otherwise `graph` is untouched.
bool rewrite_graph(ir::Graph& graph,
                   const std::function<int(int, const ir::Instr&, Rewriter&)>& rule);

}  // namespace loom::compiler
