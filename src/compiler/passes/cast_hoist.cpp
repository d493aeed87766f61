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
#include <functional>

#include "compiler/pass.h"
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

  bool run(ir::Graph& g) override {
    std::vector<int> uses(g.num_values(), 0);
    for (const ir::Instr& in : g.instrs)
      for (int v : in.operands) ++uses[v];
    for (int v : g.outputs) ++uses[v];
    int first = static_cast<int>(g.inputs.size());
    ir::Graph out;
    out.inputs = g.inputs;
    std::vector<int> map(g.num_values());
    for (int v = 0; v < first; ++v) map[v] = v;
    bool changed = false;
    auto emit = [&out](ir::Instr in) {
      out.instrs.push_back(std::move(in));
      return out.num_values() - 1;
    };
    // The new-graph value of cast(v, low), hoisted as far as it goes.
    std::function<int(int, DType)> hoist = [&](int v, DType low) -> int {
      if (!g.is_input(v)) {
        const ir::Instr& p = g.instr_of(v);
        if (p.op == OpKind::k_cast && g.type_of(p.operands[0]).dtype == low &&
            p.type.dtype == DType::f32)
          return map[p.operands[0]];  // bf16 -> f32 -> bf16: the identity
        if (is_movement(p.op) && uses[v] == 1 && narrows(g.type_of(p.operands[0]).dtype, low)) {
          ir::Instr moved = p;
          moved.operands = {hoist(p.operands[0], low)};
          moved.type.dtype = low;
          return emit(std::move(moved));
        }
      }
      ir::Instr c{OpKind::k_cast, {}, {map[v]}, {g.type_of(v).shape, low}};
      c.attrs.dtype = low;
      return emit(std::move(c));
    };
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      const ir::Instr& in = g.instrs[i];
      int id = first + static_cast<int>(i);
      if (in.op == OpKind::k_cast && narrows(g.type_of(in.operands[0]).dtype, in.type.dtype) &&
          !g.is_input(in.operands[0])) {
        const ir::Instr& p = g.instr_of(in.operands[0]);
        bool movable = is_movement(p.op) && uses[in.operands[0]] == 1;
        bool round_trip = p.op == OpKind::k_cast && p.type.dtype == DType::f32 &&
                          g.type_of(p.operands[0]).dtype == in.type.dtype;
        if (movable || round_trip) {
          map[id] = hoist(in.operands[0], in.type.dtype);
          changed = true;
          continue;
        }
      }
      ir::Instr copy = in;
      for (int& v : copy.operands) v = map[v];
      map[id] = emit(std::move(copy));
    }
    if (!changed) return false;
    for (int v : g.outputs) out.outputs.push_back(map[v]);
    g = std::move(out);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cast_hoist() { return std::make_unique<CastHoist>(); }

}  // namespace loom::compiler
