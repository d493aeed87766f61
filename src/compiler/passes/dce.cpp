// DCE: drops instrs whose values reach no output, and renumbers the rest.
// Inputs are kept even when unused (their positions are the executable's
// calling convention). Collectives (all_reduce) are kept even when unused:
// the other ranks wait for them.
#include "compiler/pass.h"

namespace loom::compiler {
namespace {

class Dce final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }
  bool run(ir::Graph& g) override {
    int first = static_cast<int>(g.inputs.size());
    std::vector<bool> live(g.num_values(), false);
    for (int v : g.outputs) live[v] = true;
    for (size_t i = 0; i < g.instrs.size(); ++i)
      if (ops::has_trait(g.instrs[i].op, ops::kCollective)) live[first + i] = true;
    for (int i = static_cast<int>(g.instrs.size()) - 1; i >= 0; --i)
      if (live[first + i])
        for (int v : g.instrs[i].operands) live[v] = true;
    std::vector<int> renumber(g.num_values());
    for (int v = 0; v < first; ++v) renumber[v] = v;
    std::vector<ir::Instr> kept;
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      if (!live[first + i]) continue;
      renumber[first + i] = first + static_cast<int>(kept.size());
      kept.push_back(std::move(g.instrs[i]));
    }
    bool changed = kept.size() != g.instrs.size();
    for (ir::Instr& in : kept)
      for (int& v : in.operands) v = renumber[v];
    for (int& v : g.outputs) v = renumber[v];
    g.instrs = std::move(kept);
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce() { return std::make_unique<Dce>(); }

}  // namespace loom::compiler
