// Pass index_add_fold: the gradients autograd accumulates with index_add into
// a zero tensor (rules_shape_nn.cpp: a slice's gradient is
// index_add(zeros_like(x), axis, arange(start, start + len), g), an
// embedding's is index_add(zeros_like(w), 0, ids, g)) stop filling and
// re-adding zero buffers:
//   (1) split backward: a sum of slice gradients into zeros whose ranges tile
//       the axis exactly (GPT-2's c_attn output split into q, k, v, whose
//       gradients dq, dk, dv are summed back into one [B, T, 3C] gradient)
//         add(add(index_add(Z, 2, arange(0, C), dq), index_add(Z, 2,
//             arange(C, 2C), dk)), index_add(Z, 2, arange(2C, 3C), dv))
//           -> concat(dq, dk, dv) axis=2
//       (each element is one piece's value plus zeros: exact);
//   (2) accumulation into an existing gradient (a tied embedding: the LM
//       head's dW plus the embedding's scatter)
//         add(x, index_add(Z, axis, idx, g)) -> index_add(x, axis, idx, g)
//       (the same sum, added in another order where ids repeat).
// Z is a full() of 0 of the add's type; every index_add and inner add is read
// once (else the zero-based value is needed anyway); the ranges of (1) are
// arange()s with step 1. Dead instrs are left for dce.
#include <algorithm>
#include <vector>

#include "compiler/pass.h"
#include "compiler/rewrite.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

struct SlicePiece {
  int64_t start = 0, len = 0;
  int src = -1;  // old value id of the slice's gradient
};

class IndexAddFold final : public Pass {
 public:
  std::string_view name() const override { return "index_add_fold"; }

  bool run(ir::Graph& graph) override {
    uses_ = live_use_counts(graph);
    return rewrite_graph(graph, [this](int, const ir::Instr& in, Rewriter& rw) -> int {
      if (in.op != OpKind::k_add || !is_floating(in.type.dtype)) return -1;
      const ir::Graph& g = rw.old();
      std::vector<SlicePiece> pieces;
      int64_t axis = -1;
      if (collect(g, in.operands[0], in.type, &axis, &pieces) &&
          collect(g, in.operands[1], in.type, &axis, &pieces) && tiles(in.type, axis, pieces))
        return emit_concat(in, axis, pieces, rw);
      for (int side = 0; side < 2; ++side) {
        int x = in.operands[side], s = in.operands[1 - side];
        if (g.type_of(x) == in.type && zero_based(g, s, in.type))
          return emit_accumulate(x, g.instr_of(s), rw);
      }
      return -1;
    });
  }

 private:
  // v = index_add(Z, axis, idx, g) of `type` into zeros, read once.
  bool zero_based(const ir::Graph& g, int v, const ops::TensorType& type) const {
    if (g.is_input(v) || uses_[v] != 1) return false;
    const ir::Instr& ia = g.instr_of(v);
    if (ia.op != OpKind::k_index_add || ia.type != type || g.is_input(ia.operands[0])) return false;
    const ir::Instr& z = g.instr_of(ia.operands[0]);
    return z.op == OpKind::k_full && z.attrs.fill_value == 0.0 && z.type == type;
  }

  // Adds the slice-gradient pieces summed into v (v read once) to `pieces`.
  bool collect(const ir::Graph& g, int v, const ops::TensorType& type, int64_t* axis,
               std::vector<SlicePiece>* pieces) const {
    if (g.is_input(v) || uses_[v] != 1) return false;
    const ir::Instr& in = g.instr_of(v);
    if (in.op == OpKind::k_add && in.type == type)
      return collect(g, in.operands[0], type, axis, pieces) &&
             collect(g, in.operands[1], type, axis, pieces);
    if (!zero_based(g, v, type) || g.is_input(in.operands[1])) return false;
    const ir::Instr& idx = g.instr_of(in.operands[1]);
    if (idx.op != OpKind::k_arange || idx.attrs.range_step != 1.0 || idx.type.shape.size() != 1)
      return false;
    if (*axis >= 0 && *axis != in.attrs.axis) return false;
    *axis = in.attrs.axis;
    auto start = static_cast<int64_t>(idx.attrs.range_start);
    if (static_cast<double>(start) != idx.attrs.range_start) return false;
    pieces->push_back({start, idx.type.shape[0], in.operands[2]});
    return true;
  }

  // The pieces' ranges cover [0, size of axis) once each.
  static bool tiles(const ops::TensorType& type, int64_t axis, std::vector<SlicePiece>& pieces) {
    if (axis < 0 || axis >= static_cast<int64_t>(type.shape.size())) return false;
    std::sort(pieces.begin(), pieces.end(),
              [](const SlicePiece& a, const SlicePiece& b) { return a.start < b.start; });
    int64_t next = 0;
    for (const SlicePiece& p : pieces) {
      if (p.start != next) return false;
      next += p.len;
    }
    return next == type.shape[axis];
  }

  static int emit_concat(const ir::Instr& add, int64_t axis, const std::vector<SlicePiece>& pieces,
                         Rewriter& rw) {
    ir::Instr c{OpKind::k_concat, {}, {}, add.type};
    c.attrs.axis = axis;
    for (const SlicePiece& p : pieces) c.operands.push_back(rw.map(p.src));
    return rw.emit(std::move(c));
  }

  static int emit_accumulate(int x, const ir::Instr& index_add, Rewriter& rw) {
    ir::Instr ia = index_add;
    ia.operands = {rw.map(x), rw.map(index_add.operands[1]), rw.map(index_add.operands[2])};
    return rw.emit(std::move(ia));
  }

  std::vector<int> uses_;
};

}  // namespace

std::unique_ptr<Pass> make_index_add_fold() { return std::make_unique<IndexAddFold>(); }

}  // namespace loom::compiler
