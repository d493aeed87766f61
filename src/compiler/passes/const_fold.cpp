// Constant folding: reshape, expand or cast of a `full` constant becomes one
// `full` constant of the result type (cast rounds the value through the new
// dtype). Arithmetic on constants is left to the kernels: the compiler does
// not evaluate ops (it sees no backend), and traced constants are only 0 and 1.
#include "compiler/pass.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

class ConstFold final : public Pass {
 public:
  std::string_view name() const override { return "const_fold"; }
  bool run(ir::Graph& g) override {
    bool changed = false;
    for (ir::Instr& in : g.instrs) {
      if (in.op != OpKind::k_reshape && in.op != OpKind::k_expand && in.op != OpKind::k_cast)
        continue;
      int v = in.operands[0];
      if (g.is_input(v) || g.instr_of(v).op != OpKind::k_full) continue;
      double value = g.instr_of(v).attrs.fill_value;
      if (in.op == OpKind::k_cast) {
        uint64_t slot = 0;
        store_from_double(&slot, in.type.dtype, 0, value);
        value = load_as_double(&slot, in.type.dtype, 0);
      }
      ops::Attrs a;
      a.shape = in.type.shape;
      a.fill_value = value;
      a.dtype = in.type.dtype;
      in.op = OpKind::k_full;
      in.attrs = a;
      in.operands.clear();
      changed = true;
    }
    return changed;
  }
};

}  // namespace

std::unique_ptr<Pass> make_const_fold() { return std::make_unique<ConstFold>(); }

}  // namespace loom::compiler
