// Pass cast_hoist: a narrowing float cast (f32 -> bf16/f16, as autocast puts
// before each matmul) moves above the data-movement ops that feed it
// (reshape, permute, expand), so they move 2-byte instead of 4-byte elements
// and the cast joins the elementwise group that produced the data:
//   cast(permute(reshape(add(cast(mm, f32), bias))), bf16)
//     -> permute(reshape(cast(add(cast(mm, f32), bias), bf16)))
// A cast reaching a widening cast of the same narrow dtype cancels it
// (bf16 -> f32 -> bf16 is the identity): cast(cast(u: bf16, f32), bf16) -> u.
// Both rewrites are exact: a cast is elementwise and these ops only move or
// repeat elements, so results are bit-identical. A movement op is hoisted
// over only when the cast is its one user (else its wide result stays live
// anyway and a second, narrow copy would add work); slice is left alone
// (casting before it would convert elements it drops). Dead instrs are left
// for dce.
#include "compiler/pass.h"
#include "compiler/rewrite.h"
#include "ops/infer.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

bool is_movement(OpKind op) {
  return op == OpKind::k_reshape || op == OpKind::k_permute || op == OpKind::k_expand;
}

bool narrows(DType from, DType to) {
  return is_floating(from) && is_floating(to) && dtype_size(to) < dtype_size(from);
}

class CastHoist final : public Pass {
 public:
  std::string_view name() const override { return "cast_hoist"; }

  bool run(ir::Graph& graph) override {
    return rewrite_graph(graph, [](int, const ir::Instr& in, Rewriter& rw) -> int {
      const ir::Graph& g = rw.old();
      if (in.op != OpKind::k_cast || !narrows(g.type_of(in.operands[0]).dtype, in.type.dtype) ||
          g.is_input(in.operands[0]))
        return -1;
      const ir::Instr& p = g.instr_of(in.operands[0]);
      bool movable = is_movement(p.op) && rw.uses(in.operands[0]) == 1;
      bool round_trip = p.op == OpKind::k_cast && p.type.dtype == DType::f32 &&
                        g.type_of(p.operands[0]).dtype == in.type.dtype;
      if (!movable && !round_trip) return -1;
      return hoist(rw, in.operands[0], in.type.dtype);
    });
  }

 private:
  // The new-graph value of cast(v, low), hoisted as far as it goes.
  static int hoist(Rewriter& rw, int v, DType low) {
    const ir::Graph& g = rw.old();
    if (!g.is_input(v)) {
      const ir::Instr& p = g.instr_of(v);
      if (p.op == OpKind::k_cast && g.type_of(p.operands[0]).dtype == low &&
          p.type.dtype == DType::f32)
        return rw.map(p.operands[0]);  // bf16 -> f32 -> bf16: the identity
      if (is_movement(p.op) && rw.uses(v) == 1 && narrows(g.type_of(p.operands[0]).dtype, low)) {
        ir::Instr moved = p;
        moved.operands = {hoist(rw, p.operands[0], low)};
        moved.type.dtype = low;
        return rw.emit(std::move(moved));
      }
    }
    ir::Instr c{OpKind::k_cast, {}, {rw.map(v)}, {g.type_of(v).shape, low}};
    c.attrs.dtype = low;
    return rw.emit(std::move(c));
  }
};

}  // namespace

std::unique_ptr<Pass> make_cast_hoist() { return std::make_unique<CastHoist>(); }

}  // namespace loom::compiler
