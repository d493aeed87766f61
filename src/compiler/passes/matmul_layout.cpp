// Pass matmul_layout: a permute that feeds a batched matmul, or that
// permutes its result, becomes a layout attr of the matmul, so the GEMM reads
// and writes the permuted layout through strides and the permute's copy
// disappears. The head split / merge of attention written with matmuls:
//   Q = permute(reshape(X, [B,T,H,D]), [0,2,1,3])      X [B,T,H*D]
//   S = matmul(Q, K, trans_b)             -> matmul(reshape(X), K, trans_b) perm_a=[0,2,1,3]
//   O = permute(matmul(P, V), [0,2,1,3])  -> matmul(P, V) perm_out=[0,2,1,3]
// (the reshapes are free: the memory plan aliases them). Semantics of the
// attrs (ops/attrs.h): the matmul multiplies permute(a, perm_a) and
// permute(b, perm_b), after which trans_a / trans_b apply as before, and
// stores permute(product, perm_out). Exact: only where elements are read and
// written changes. Applies when
//   - every live reader of the permute is a matmul that can absorb it (the
//     head-split q, k, v are read by the forward product and by a backward
//     one), or the matmul's one live reader is the permute: otherwise the
//     permuted copy is needed anyway;
//   - both operands and the result have the same rank >= 3;
//   - the permute moves a batch axis (a swap of the last two axes alone is
//     trans_a / trans_b, the algebraic pass's job);
//   - the stored last axis (unit stride) stays one of the two matrix axes, so
//     every matrix keeps a unit row or column stride (a strided GEMM, not a
//     gather);
//   - the matmul has no attr of that kind yet.
// LOOM_MATMUL_LAYOUT=0 turns the pass off (A/B runs). Dead permutes are left
// for dce.
#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/pass.h"
#include "compiler/rewrite.h"
#include "core/settings.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

// A permute `perm` of an operand (output = false) or of the result the
// strided GEMM can absorb (see the conditions above).
bool layout_foldable(const std::vector<int64_t>& perm, bool output) {
  size_t r = perm.size();
  if (r < 3) return false;
  bool moves_batch = false;
  for (size_t i = 0; i + 2 < r; ++i) moves_batch = moves_batch || perm[i] != int64_t(i);
  if (!moves_batch) return false;
  int64_t last = static_cast<int64_t>(r) - 1;
  if (output) return perm[last] == last || perm[last] == last - 1;
  return perm[last - 1] == last || perm[last] == last;
}

class MatmulLayout final : public Pass {
 public:
  std::string_view name() const override { return "matmul_layout"; }

  bool run(ir::Graph& graph) override {
    if (!settings::flag(Setting::matmul_layout)) return false;
    std::vector<int> uses = live_use_counts(graph);
    std::vector<bool> live = live_values(graph);
    // folded_into[matmul value] = the permute that becomes its perm_out.
    std::vector<int> folded_into(graph.num_values(), -1);
    int first = static_cast<int>(graph.inputs.size());
    for (size_t i = 0; i < graph.instrs.size(); ++i) {
      const ir::Instr& p = graph.instrs[i];
      // Only a live permute: a dead one beside the matmul's one live reader
      // (left by algebraic or cast_hoist, no dce before this pass) would
      // give that reader the permuted layout.
      if (p.op != OpKind::k_permute || !live[first + i] || graph.is_input(p.operands[0])) continue;
      int mm = p.operands[0];
      const ir::Instr& m = graph.instr_of(mm);
      if (m.op == OpKind::k_matmul && uses[mm] == 1 && m.attrs.perm_out.empty() &&
          same_ranks(graph, m) && layout_foldable(p.attrs.perm, true))
        folded_into[mm] = first + static_cast<int>(i);
    }
    // absorbed[permute value]: every live reader is a matmul that takes it.
    std::vector<int> matmul_reads(graph.num_values(), 0);
    for (size_t i = 0; i < graph.instrs.size(); ++i) {
      const ir::Instr& m = graph.instrs[i];
      if (m.op != OpKind::k_matmul || !live[first + i] || !same_ranks(graph, m)) continue;
      if (m.attrs.perm_a.empty()) ++matmul_reads[m.operands[0]];
      if (m.attrs.perm_b.empty()) ++matmul_reads[m.operands[1]];
    }
    std::vector<bool> absorbed(graph.num_values(), false);
    for (size_t i = 0; i < graph.instrs.size(); ++i) {
      const ir::Instr& p = graph.instrs[i];
      int v = first + static_cast<int>(i);
      if (p.op != OpKind::k_permute) continue;
      bool done_as_output = !graph.is_input(p.operands[0]) && folded_into[p.operands[0]] == v;
      absorbed[v] = uses[v] > 0 && matmul_reads[v] == uses[v] && !done_as_output &&
                    layout_foldable(p.attrs.perm, false);
    }
    return rewrite_graph(graph, [&](int id, const ir::Instr& in, Rewriter& rw) -> int {
      const ir::Graph& g = rw.old();
      if (in.op == OpKind::k_permute && !g.is_input(in.operands[0]) &&
          folded_into[in.operands[0]] == id)
        return rw.map(in.operands[0]);  // the matmul below already stores this layout
      if (in.op != OpKind::k_matmul || !same_ranks(g, in)) return -1;
      ir::Instr m = in;
      for (int& v : m.operands) v = rw.map(v);
      bool changed = fold_operand(g, in, 0, absorbed, m, rw);
      changed = fold_operand(g, in, 1, absorbed, m, rw) || changed;
      if (folded_into[id] >= 0) {
        const ir::Instr& p = g.instr_of(folded_into[id]);
        m.attrs.perm_out = p.attrs.perm;
        m.type = p.type;
        changed = true;
      }
      return changed ? rw.emit(std::move(m)) : -1;
    });
  }

 private:
  static bool same_ranks(const ir::Graph& g, const ir::Instr& m) {
    size_t r = m.type.shape.size();
    return r >= 3 && g.type_of(m.operands[0]).shape.size() == r &&
           g.type_of(m.operands[1]).shape.size() == r;
  }

  // Folds the absorbed permute feeding operand `side` of old matmul `in`
  // into `m`.
  static bool fold_operand(const ir::Graph& g, const ir::Instr& in, int side,
                           const std::vector<bool>& absorbed, ir::Instr& m, Rewriter& rw) {
    int v = in.operands[side];
    std::vector<int64_t>& perm = side == 0 ? m.attrs.perm_a : m.attrs.perm_b;
    if (!absorbed[v] || !perm.empty()) return false;
    const ir::Instr& p = g.instr_of(v);
    perm = p.attrs.perm;
    m.operands[side] = rw.map(p.operands[0]);
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_layout() { return std::make_unique<MatmulLayout>(); }

}  // namespace loom::compiler
