// Algebraic simplification: x*1, 1*x, x+0, 0+x, x-0, x/1 -> x (when the
// result type equals x's); cast to the same dtype -> x; permute of permute
// -> one permute (identity -> x); reshape of reshape -> one reshape (to x's
// own shape -> x); a matmul operand that is a transpose of its last two dims
// -> the transpose flag. Constants are `full` instrs (traced 0 and 1).
#include "compiler/pass.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

class Algebraic final : public Pass {
 public:
  std::string_view name() const override { return "algebraic"; }

  bool run(ir::Graph& g) override {
    int first = static_cast<int>(g.inputs.size());
    std::vector<int> replace(g.num_values());
    for (int v = 0; v < g.num_values(); ++v) replace[v] = v;
    bool changed = false;
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      ir::Instr& in = g.instrs[i];
      for (int& v : in.operands) v = replace[v];
      int id = first + static_cast<int>(i);
      changed = fold_chain(g, in) || changed;
      int same = identity_of(g, in);
      if (same >= 0) {
        replace[id] = same;
        changed = true;
      }
    }
    for (int& v : g.outputs) v = replace[v];
    return changed;
  }

 private:
  static bool is_const(const ir::Graph& g, int v, double value) {
    if (g.is_input(v)) return false;
    const ir::Instr& c = g.instr_of(v);
    return c.op == OpKind::k_full && c.attrs.fill_value == value;
  }

  // The operand `in` reduces to, or -1.
  static int identity_of(const ir::Graph& g, const ir::Instr& in) {
    auto keeps = [&](int v) { return g.type_of(v) == in.type ? v : -1; };
    const auto& o = in.operands;
    switch (in.op) {
      case OpKind::k_mul:
        if (is_const(g, o[1], 1)) return keeps(o[0]);
        if (is_const(g, o[0], 1)) return keeps(o[1]);
        return -1;
      case OpKind::k_add:
        if (is_const(g, o[1], 0)) return keeps(o[0]);
        if (is_const(g, o[0], 0)) return keeps(o[1]);
        return -1;
      case OpKind::k_sub: return is_const(g, o[1], 0) ? keeps(o[0]) : -1;
      case OpKind::k_div: return is_const(g, o[1], 1) ? keeps(o[0]) : -1;
      case OpKind::k_cast:
      case OpKind::k_reshape:
      case OpKind::k_expand: return keeps(o[0]);
      case OpKind::k_permute: {
        for (size_t d = 0; d < in.attrs.perm.size(); ++d)
          if (in.attrs.perm[d] != static_cast<int64_t>(d)) return -1;
        return o[0];
      }
      default: return -1;
    }
  }

  static bool is_last_two_swap(const std::vector<int64_t>& perm) {
    size_t r = perm.size();
    if (r < 2 || perm[r - 1] != static_cast<int64_t>(r - 2) ||
        perm[r - 2] != static_cast<int64_t>(r - 1))
      return false;
    for (size_t d = 0; d + 2 < r; ++d)
      if (perm[d] != static_cast<int64_t>(d)) return false;
    return true;
  }

  // Merges `in` with its producer where two steps make one.
  static bool fold_chain(const ir::Graph& g, ir::Instr& in) {
    if (in.operands.empty() || g.is_input(in.operands[0])) {
      if (in.op != OpKind::k_matmul) return false;
    }
    auto producer = [&](int v) -> const ir::Instr* { return g.is_input(v) ? nullptr : &g.instr_of(v); };
    if (in.op == OpKind::k_permute) {
      const ir::Instr* p = producer(in.operands[0]);
      if (!p || p->op != OpKind::k_permute) return false;
      std::vector<int64_t> composed(in.attrs.perm.size());
      for (size_t d = 0; d < composed.size(); ++d) composed[d] = p->attrs.perm[in.attrs.perm[d]];
      in.attrs.perm = composed;
      in.operands[0] = p->operands[0];
      return true;
    }
    if (in.op == OpKind::k_reshape) {
      const ir::Instr* p = producer(in.operands[0]);
      if (!p || p->op != OpKind::k_reshape) return false;
      in.operands[0] = p->operands[0];
      return true;
    }
    if (in.op == OpKind::k_matmul) {
      bool changed = false;
      for (int side = 0; side < 2; ++side) {
        const ir::Instr* p = producer(in.operands[side]);
        if (!p || p->op != OpKind::k_permute || !is_last_two_swap(p->attrs.perm)) continue;
        in.operands[side] = p->operands[0];
        bool& flag = side == 0 ? in.attrs.trans_a : in.attrs.trans_b;
        flag = !flag;
        changed = true;
      }
      return changed;
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> make_algebraic() { return std::make_unique<Algebraic>(); }

}  // namespace loom::compiler
