// Pass matmul_batch_sum: the weight gradient of a linear layer on a batched
// input, as autograd writes it (grad_matmul, then sum_to the weight's shape),
//   P = matmul(X, Y, trans_a)     X [b..., R, M], Y [b..., R, N] -> [b..., M, N]
//   S = sum(P, axes = every batch axis)            (keepdim or not)
// becomes one GEMM over all b*R rows:
//   S = matmul(reshape(X, [b*R, M]), reshape(Y, [b*R, N]), trans_a)
// (reshaped to S's shape when keepdim). This never materializes the
// [b..., M, N] partial products (b times the weight's size: 16 x 1536 x 384
// floats for a BERT FFN weight at batch 16) and runs one well-shaped GEMM
// instead of b thin ones; in bf16 it also drops the b bf16-rounded partials
// (the GEMM accumulates in f32 and rounds once), so the result is closer to
// the exact sum than the unfused program's. Applies when P's only reader is
// S, X and Y have the same batch dims (no broadcasting), trans_b is false,
// and the sum covers exactly the batch axes. A reshape feeding X or Y is
// looked through (reshape of reshape). Runs after fused_cross_entropy, whose
// pattern is the unfused form; dead instrs are left for dce.
#include <algorithm>

#include "compiler/pass.h"
#include "compiler/rewrite.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

class MatmulBatchSum final : public Pass {
 public:
  std::string_view name() const override { return "matmul_batch_sum"; }

  bool run(ir::Graph& g) override {
    return rewrite_graph(g, [](int, const ir::Instr& in, Rewriter& rw) -> int {
      if (in.op != OpKind::k_sum || !matches(rw, in)) return -1;
      return rewrite(rw, in);
    });
  }

 private:
  static bool matches(const Rewriter& rw, const ir::Instr& sum) {
    const ir::Graph& g = rw.old();
    int p = sum.operands[0];
    if (g.is_input(p) || rw.uses(p) != 1) return false;
    const ir::Instr& mm = g.instr_of(p);
    if (mm.op != OpKind::k_matmul || !mm.attrs.trans_a || mm.attrs.trans_b) return false;
    const Shape &xs = g.type_of(mm.operands[0]).shape, &ys = g.type_of(mm.operands[1]).shape;
    size_t rank = mm.type.shape.size();
    if (rank < 3 || xs.size() != rank || ys.size() != rank) return false;
    if (!is_floating(mm.type.dtype) || sum.type.dtype != mm.type.dtype) return false;
    for (size_t d = 0; d + 2 < rank; ++d)
      if (xs[d] != ys[d]) return false;
    // The sum covers exactly the batch axes 0 .. rank-3.
    std::vector<int64_t> axes = sum.attrs.axes;
    if (axes.size() != rank - 2) return false;
    std::sort(axes.begin(), axes.end());
    for (size_t d = 0; d < axes.size(); ++d)
      if (axes[d] != static_cast<int64_t>(d)) return false;
    return true;
  }

  // reshape(v) to `shape` in `out`, through a reshape that produced v.
  static int reshaped(Rewriter& rw, int v, const Shape& shape) {
    const ir::Graph& g = rw.old();
    int src = v;
    if (!g.is_input(v) && g.instr_of(v).op == OpKind::k_reshape) src = g.instr_of(v).operands[0];
    if (g.type_of(src).shape == shape) return rw.map(src);
    ir::Instr r{OpKind::k_reshape, {}, {rw.map(src)}, {shape, g.type_of(v).dtype}};
    r.attrs.shape = shape;
    return rw.emit(std::move(r));
  }

  static int rewrite(Rewriter& rw, const ir::Instr& sum) {
    const ir::Graph& g = rw.old();
    const ir::Instr& mm = g.instr_of(sum.operands[0]);
    const Shape &xs = g.type_of(mm.operands[0]).shape, &ys = g.type_of(mm.operands[1]).shape;
    size_t rank = xs.size();
    int64_t rows = 1;
    for (size_t d = 0; d + 1 < rank; ++d) rows *= xs[d];
    int x = reshaped(rw, mm.operands[0], {rows, xs[rank - 1]});
    int y = reshaped(rw, mm.operands[1], {rows, ys[rank - 1]});
    Shape mn{xs[rank - 1], ys[rank - 1]};
    int v = rw.emit({OpKind::k_matmul, mm.attrs, {x, y}, {mn, mm.type.dtype}});
    if (sum.type.shape == mn && sum.type.dtype == mm.type.dtype) return v;
    ir::Instr r{OpKind::k_reshape, {}, {v}, sum.type};
    r.attrs.shape = sum.type.shape;
    return rw.emit(std::move(r));
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_batch_sum() { return std::make_unique<MatmulBatchSum>(); }

}  // namespace loom::compiler
