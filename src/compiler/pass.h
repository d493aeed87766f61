// Pass: one graph-to-graph rewrite with a name (as XLA's HloPassInterface).
// PassPipeline runs passes in order, the verifier between passes in debug
// builds (or when LOOM_VERIFY=1), and writes the graph after each pass to
// $LOOM_DUMP_IR/<hash>.<n>.<pass>.ir when LOOM_DUMP_IR is set.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace loom::compiler {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  /// Rewrites `graph` in place; returns true when it changed anything.
  virtual bool run(ir::Graph& graph) = 0;
};

class PassPipeline {
 public:
  PassPipeline& add(std::unique_ptr<Pass> pass);
  /// Runs every pass once, in order; returns true when any changed the graph.
  bool run(ir::Graph& graph) const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

/// The default pipeline: algebraic, const_fold, cse, dce.
PassPipeline default_pipeline();

std::unique_ptr<Pass> make_dce();
std::unique_ptr<Pass> make_cse();
std::unique_ptr<Pass> make_algebraic();
std::unique_ptr<Pass> make_const_fold();

/// Rebuilds `graph` with every use of value v replaced by replace[v]
/// (replace[v] <= v; identity for unchanged values). Outputs are remapped too.
/// Instrs made dead are kept (run DCE to drop them).
void replace_uses(ir::Graph& graph, const std::vector<int>& replace);

}  // namespace loom::compiler
