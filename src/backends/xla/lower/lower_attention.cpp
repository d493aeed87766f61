// Lowering of attention_backward (the gradient op attention's rule traces,
// ops.def) to StableHLO: the dense chain rule of the reference kernel
// (backends/reference/attention_backward.cpp), in f32, recomputing the
// probabilities exactly as the attention decomposition computes them
// (compiler/passes/decompose.cpp: masked entries at -FLT_MAX before the max
// shift and 0 after exp, a fully masked row gives P = 0 and so no gradient):
//   S = q k^T * scale [+ float mask]   P = softmax(S) over keys (masked)
//   F = keep / (1 - p) from the dropout's Philox draw on [..., T, S]
//   dv = (P F)^T dO    dP = (dO v^T) F    delta = rowsum(P dP)
//   dS = P (dP - delta) scale    dq = dS k    dk = dS^T q
// Grouped-query k/v heads are repeated to q's heads and their gradients
// summed back over the group. The result packs dq, dk, dv flat in q's dtype.
// bf16/f16 inputs: the four products take P F and dS rounded once to that
// dtype and q, k, v, dO as given (HloEmitter::dot_general multiplies the
// low-precision values), so each is a bf16 GEMM with f32 accumulation, as
// flash attention's backward; the rest stays f32.
// attention itself is not lowered: the generic decomposition gives XLA the
// same dot_general + softmax graph.
#include <cfloat>
#include <cmath>

#include "backends/xla/lower/lower_ops.h"
#include "loom/error.h"
#include "ops/attrs.h"

namespace loom::backends::xla {

namespace {

// k or v [..., Hkv, S, X] repeated to `heads` (kv head j serves q heads
// j*G .. j*G+G-1, transformers' repeat_kv).
Val attention_repeat_heads(HloEmitter& e, const Val& x, int64_t heads) {
  size_t r = x.shape.size();
  if (r < 3 || x.shape[r - 3] == heads) return x;
  Shape grouped(x.shape.begin(), x.shape.end() - 2);
  grouped.push_back(1);
  grouped.insert(grouped.end(), x.shape.end() - 2, x.shape.end());  // [..., Hkv, 1, S, X]
  Shape wide = grouped;
  wide[r - 2] = heads / x.shape[r - 3];
  Shape out = x.shape;
  out[r - 3] = heads;
  return e.reshape(e.broadcast_to(e.reshape(x, grouped), wide), out);
}

// The gradient [..., H, S, X] of a repeated k/v summed back to `kv` heads.
Val attention_sum_heads(HloEmitter& e, const Val& g, int64_t kv) {
  size_t r = g.shape.size();
  if (r < 3 || g.shape[r - 3] == kv) return g;
  Shape grouped(g.shape.begin(), g.shape.end() - 3);
  grouped.insert(grouped.end(), {kv, g.shape[r - 3] / kv, g.shape[r - 2], g.shape[r - 1]});
  Val s = e.reduce(e.reshape(g, grouped), e.constant(0, "f32"), {int64_t(r) - 2}, "stablehlo.add");
  return s;
}

struct AttentionBatchDims {
  std::vector<int64_t> dims;  // batch dims of q, k, v (all but the last two)
  int64_t t, s;               // positions of T / S and D in a [..., T|S, D] operand
};

Val attention_row_sum(HloEmitter& e, const Val& x, const Shape& full) {
  int64_t last = static_cast<int64_t>(x.shape.size()) - 1;
  Val s = e.reduce(x, e.constant(0, "f32"), {last}, "stablehlo.add");
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < last; ++d) dims.push_back(d);
  return e.broadcast_in_dim(s, full, dims);
}

// The masked probabilities P [..., T, S] (f32) and the keep mask (or an
// empty name when nothing is masked).
Val attention_probs(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args, const Val& q,
                    const Val& k, const AttentionBatchDims& b, double scale) {
  Val sc = e.dot_general(q, k, b.dims, b.dims, {b.s}, {b.s}, "f32");
  const Shape& shape = sc.shape;
  sc = e.binary("stablehlo.multiply", sc, e.constant(scale, "f32", shape));
  Val keep;
  if (in.attrs.causal) {
    Shape ts{shape[b.t], shape[b.t + 1]};
    keep = e.compare("GE", e.iota(ts, 0, "i64"), e.iota(ts, 1, "i64"));
    keep = e.broadcast_to(keep, shape);
  }
  int mask_at = ops::attention_mask_operand(args.size(), 4, in.attrs);
  if (mask_at >= 0) {
    const Val& mask = args[mask_at];
    if (mask.elem == "i1") {
      Val m = e.broadcast_to(mask, shape);
      keep = keep.name.empty() ? m : e.binary("stablehlo.and", keep, m);
    } else {
      sc = e.binary("stablehlo.add", sc, coerce(e, mask, "f32", shape));
    }
  }
  Val lowest = e.constant(-FLT_MAX, "f32", shape);
  if (!keep.name.empty()) sc = e.select(keep, sc, lowest);
  int64_t last = static_cast<int64_t>(shape.size()) - 1;
  std::vector<int64_t> rows;
  for (int64_t d = 0; d < last; ++d) rows.push_back(d);
  Val m = e.reduce(sc, e.constant(-INFINITY, "f32"), {last}, "stablehlo.maximum");
  m = e.binary("stablehlo.maximum", e.broadcast_in_dim(m, shape, rows), lowest);
  Val ex = e.unary("stablehlo.exponential", e.binary("stablehlo.subtract", sc, m));
  if (!keep.name.empty()) ex = e.select(keep, ex, e.constant(0, "f32", shape));
  Val z = e.binary("stablehlo.maximum", attention_row_sum(e, ex, shape),
                   e.constant(1e-30, "f32", shape));
  return e.binary("stablehlo.divide", ex, z);
}

}  // namespace

Val lower_attention_backward(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  const Shape& qs = args[0].shape;
  size_t r = qs.size();
  int64_t t_len = qs[r - 2], d = qs[r - 1], s_len = args[1].shape[r - 2];
  if (numel(qs) == 0 || s_len == 0 || d == 0 || t_len == 0)
    return e.constant(0, mlir_elem(in.type.dtype), in.type.shape);
  e.comment("attention_backward: probabilities recomputed, then the chain rule");
  int64_t heads = r >= 3 ? qs[r - 3] : 1, kv = r >= 3 ? args[1].shape[r - 3] : 1;
  Val q = cast_to(e, args[0], "f32"), go = cast_to(e, args[3], "f32");
  Val k = attention_repeat_heads(e, cast_to(e, args[1], "f32"), heads);
  Val v = attention_repeat_heads(e, cast_to(e, args[2], "f32"), heads);
  AttentionBatchDims b;
  for (size_t i = 0; i + 2 < r; ++i) b.dims.push_back(static_cast<int64_t>(i));
  b.t = static_cast<int64_t>(r) - 2;
  b.s = static_cast<int64_t>(r) - 1;
  double scale = in.attrs.scale != 0 ? in.attrs.scale : 1.0 / std::sqrt(double(d));
  Val p = attention_probs(e, in, args, q, k, b, scale);
  const Shape& shape = p.shape;                                        // [..., T, S]
  Val dz = e.dot_general(go, v, b.dims, b.dims, {b.s}, {b.s}, "f32");  // dO v^T
  Val z = p, dp = dz;
  int gen = ops::attention_generator_operand(args.size(), in.attrs);
  if (gen >= 0) {
    double drop = in.attrs.dropout_p;
    Val u = philox_uniforms(e, args[gen], shape);
    Val keep = e.compare("GE", e.convert(u, "f64"), e.constant(drop, "f64", shape));
    Val f =
        e.select(keep, e.constant(1.0 / (1.0 - drop), "f32", shape), e.constant(0, "f32", shape));
    z = e.binary("stablehlo.multiply", p, f);
    dp = e.binary("stablehlo.multiply", dz, f);
  }
  const std::string& low = args[0].elem;  // rounds a GEMM operand for bf16/f16 inputs
  auto gemm_operand = [&](const Val& x) {
    return low == "bf16" || low == "f16" ? e.convert(e.convert(x, low), "f32") : x;
  };
  Val dv = e.dot_general(gemm_operand(z), go, b.dims, b.dims, {b.t}, {b.t}, "f32");  // [.., S, Dv]
  Val delta = attention_row_sum(e, e.binary("stablehlo.multiply", p, dp), shape);
  Val ds = e.binary("stablehlo.multiply", p, e.binary("stablehlo.subtract", dp, delta));
  ds = e.binary("stablehlo.multiply", ds, e.constant(scale, "f32", shape));
  Val dsg = gemm_operand(ds);
  Val dq = e.dot_general(dsg, k, b.dims, b.dims, {b.s}, {b.t}, "f32");  // [..., T, D]
  Val dk = e.dot_general(dsg, q, b.dims, b.dims, {b.t}, {b.t}, "f32");  // [..., S, D]
  dk = attention_sum_heads(e, dk, kv);
  dv = attention_sum_heads(e, dv, kv);
  Val packed = e.concatenate({e.reshape(dq, {numel(dq.shape)}), e.reshape(dk, {numel(dk.shape)}),
                              e.reshape(dv, {numel(dv.shape)})},
                             0);
  return cast_to(e, packed, mlir_elem(in.type.dtype));
}

}  // namespace loom::backends::xla
