// CSE: an instr identical to an earlier one (op, attributes, type, operands)
// is replaced by it. Random ops are pure functions of their generator
// operand, so they are merged only when that operand is the same value.
// Collectives (all_reduce) are never merged: each is a rendezvous with the
// other ranks, which run theirs one by one.
#include <unordered_map>

#include "compiler/pass.h"

namespace loom::compiler {
namespace {

class Cse final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }
  bool run(ir::Graph& g) override {
    int first = static_cast<int>(g.inputs.size());
    std::vector<int> replace(g.num_values());
    for (int v = 0; v < g.num_values(); ++v) replace[v] = v;
    std::unordered_map<Hash128, std::vector<int>, Hash128Hasher> seen;
    bool changed = false;
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      ir::Instr& in = g.instrs[i];
      for (int& v : in.operands) v = replace[v];
      Hash128 h = ir::instr_hash(in);
      for (int v : in.operands) h = hash_combine(h, static_cast<uint64_t>(v));
      int id = first + static_cast<int>(i);
      if (ops::has_trait(in.op, ops::kCollective)) continue;  // each one talks to the other ranks
      bool merged = false;
      for (int other : seen[h]) {
        const ir::Instr& o = g.instr_of(other);
        if (o.op == in.op && o.attrs == in.attrs && o.type == in.type &&
            o.operands == in.operands) {
          replace[id] = other;
          // A checkpointed layer's forward op merged with a backward twin stays forward
          // (remat.cpp then recomputes it for backward readers).
          if (in.remat > 0 && o.remat <= 0) g.instrs[other - first].remat = in.remat;
          merged = changed = true;
          break;
        }
      }
      if (!merged) seen[h].push_back(id);
    }
    for (int& v : g.outputs) v = replace[v];
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse() { return std::make_unique<Cse>(); }

}  // namespace loom::compiler
