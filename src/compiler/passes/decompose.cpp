// Decompose: rewrites each composite op (softmax, log_softmax, layer_norm,
// cross_entropy and its two gradient ops, attention) that `supported` rejects into primitive ops,
// so a backend without that kernel still runs the graph. The formulas are the reference kernels'
// (backends/reference/nn.cpp):
//   softmax(x)     = exp(x - max) / sum(exp(x - max))          (max-shifted)
//   log_softmax(x) = (x - max) - log(sum(exp(x - max)))
//   layer_norm     = (x - mean) * rsqrt(biased var + eps) * w + b
//   cross_entropy  = mean over targets != ignore_index of
//                    (1 - e) * -logp[t] + e/C * sum_k -logp[k]
//   cross_entropy_backward = (softmax - (1-e) onehot - e/C) * g / max(count, 1)
//   fused_linear_cross_entropy = the two above on input weight^T, with the
//                    two matmul gradients, packed by concat
//   attention      = softmax(q k^T * scale [+ float mask], masked by causal /
//                    bool mask) v; a row with nothing to attend gives zeros; dropout p
//                    (attrs.dropout_p) = the dropout op on the probabilities with the
//                    attention's generator operand
// Every value is computed in f32 (bf16/f16 operands are cast up and the result
// cast back down), as the cpu kernels compute, except bf16/f16 attention's
// P v: P is rounded to the dtype and multiplied with v in it (f32
// accumulation), a low-precision GEMM as flash attention's. Types come from infer_type.
// The graph is rebuilt instr by instr; algebraic/cse/dce clean up after it.
#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "compiler/pass.h"
#include "core/settings.h"
#include "loom/error.h"
#include "ops/infer.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

// Appends primitive instrs to a graph under construction.
class Emitter {
 public:
  explicit Emitter(ir::Graph& g) : g_(g) {}

  const ops::TensorType& type(int v) const { return g_.type_of(v); }

  int emit(OpKind op, std::vector<int> operands, const ops::Attrs& attrs = {}) {
    std::vector<ops::TensorType> types;
    for (int v : operands) types.push_back(type(v));
    ops::TensorType t = ops::infer_type(op, types, attrs);
    g_.instrs.push_back({op, attrs, std::move(operands), std::move(t)});
    return g_.num_values() - 1;
  }
  int full(const Shape& shape, double value, DType dtype) {
    ops::Attrs a;
    a.shape = shape;
    a.fill_value = value;
    a.dtype = dtype;
    return emit(OpKind::k_full, {}, a);
  }
  int scalar(double value, DType dtype = DType::f32) { return full({}, value, dtype); }
  int cast(int v, DType dtype) {
    if (type(v).dtype == dtype) return v;
    ops::Attrs a;
    a.dtype = dtype;
    return emit(OpKind::k_cast, {v}, a);
  }
  int reduce(OpKind op, int v, std::vector<int64_t> axes, bool keepdim) {
    ops::Attrs a;
    a.axes = std::move(axes);
    a.keepdim = keepdim;
    return emit(op, {v}, a);
  }
  int reshape(int v, const Shape& shape) {
    ops::Attrs a;
    a.shape = shape;
    return emit(OpKind::k_reshape, {v}, a);
  }
  int arange(int64_t n) {
    ops::Attrs a;
    a.shape = {n};
    a.range_step = 1;
    a.dtype = DType::i64;
    return emit(OpKind::k_arange, {}, a);
  }
  int bin(OpKind op, int a, int b) { return emit(op, {a, b}); }

 private:
  ir::Graph& g_;
};

constexpr DType kCompute = DType::f32;

// The max-shifted pieces of a softmax of x along `axis`: s = x - max,
// e = exp(s), z = sum(e) (keepdim).
struct ShiftedExp {
  int s, e, z;
};
ShiftedExp shifted_exp(Emitter& b, int x, int64_t axis) {
  int s = b.bin(OpKind::k_sub, x, b.reduce(OpKind::k_max, x, {axis}, true));
  int e = b.emit(OpKind::k_exp, {s});
  return {s, e, b.reduce(OpKind::k_sum, e, {axis}, true)};
}

// log_softmax from its pieces: s - log(z).
int log_softmax_of(Emitter& b, const ShiftedExp& p) {
  return b.bin(OpKind::k_sub, p.s, b.emit(OpKind::k_log, {p.z}));
}

// softmax / log_softmax along attrs.axis.
int decompose_softmax(Emitter& b, const ir::Instr& in, const std::vector<int>& o, bool log) {
  ShiftedExp p = shifted_exp(b, b.cast(o[0], kCompute), in.attrs.axis);
  int y = log ? log_softmax_of(b, p) : b.bin(OpKind::k_div, p.e, p.z);
  return b.cast(y, in.type.dtype);
}

// layer_norm over the last axis; operands x, weight, bias; attrs.eps.
int decompose_layer_norm(Emitter& b, const ir::Instr& in, const std::vector<int>& o) {
  int x = b.cast(o[0], kCompute), w = b.cast(o[1], kCompute), bias = b.cast(o[2], kCompute);
  int64_t last = static_cast<int64_t>(b.type(x).shape.size()) - 1;
  int mean = b.reduce(OpKind::k_mean, x, {last}, true);
  int d = b.bin(OpKind::k_sub, x, mean);
  int var = b.reduce(OpKind::k_mean, b.bin(OpKind::k_mul, d, d), {last}, true);
  int rstd = b.emit(OpKind::k_rsqrt, {b.bin(OpKind::k_add, var, b.scalar(in.attrs.eps))});
  int y = b.bin(OpKind::k_mul, b.bin(OpKind::k_mul, d, rstd), w);
  return b.cast(b.bin(OpKind::k_add, y, bias), in.type.dtype);
}

// cross_entropy(logits [N, C], target [N]); attrs.ignore_index,
// attrs.label_smoothing. Ignored targets are gathered at class 0
// and masked out; no counted target gives 0/0 = NaN as the kernels do.
int decompose_cross_entropy(Emitter& b, const ir::Instr& in, const std::vector<int>& o) {
  const Shape shape = b.type(o[0]).shape;
  int64_t n = shape[0], classes = shape[1];
  if (classes == 0) return -1;
  int x = b.cast(o[0], kCompute), target = o[1];
  DType index_dtype = b.type(target).dtype;
  int logp = log_softmax_of(b, shifted_exp(b, x, 1));  // [N, C]
  int valid = b.bin(OpKind::k_ne, target, b.scalar(double(in.attrs.ignore_index), index_dtype));
  int safe = b.emit(OpKind::k_where, {valid, target, b.scalar(0, index_dtype)});
  ops::Attrs gather;
  gather.axis = 1;
  int picked = b.emit(OpKind::k_gather, {logp, b.reshape(safe, {n, 1})}, gather);
  int loss = b.emit(OpKind::k_neg, {b.reshape(picked, {n})});  // [N]
  double eps = in.attrs.label_smoothing;
  if (eps != 0) {
    int smooth = b.emit(OpKind::k_neg, {b.reduce(OpKind::k_sum, logp, {1}, false)});
    loss = b.bin(OpKind::k_add, b.bin(OpKind::k_mul, loss, b.scalar(1 - eps)),
                 b.bin(OpKind::k_mul, smooth, b.scalar(eps / double(classes))));
  }
  loss = b.emit(OpKind::k_where, {valid, loss, b.scalar(0)});
  int total = b.reduce(OpKind::k_sum, loss, {}, false);
  int count = b.reduce(OpKind::k_sum, b.cast(valid, kCompute), {}, false);
  return b.cast(b.bin(OpKind::k_div, total, count), in.type.dtype);
}

// cross_entropy_backward(logits [N, C], target [N], grad []): (softmax -
// (1-e) one-hot - e/C) * grad / max(count, 1) on non-ignored rows, 0 elsewhere.
int decompose_cross_entropy_backward(Emitter& b, const ir::Instr& in, const std::vector<int>& o) {
  const Shape shape = b.type(o[0]).shape;
  int64_t n = shape[0], classes = shape[1];
  if (n == 0 || classes == 0) return b.full(in.type.shape, 0, in.type.dtype);
  int x = b.cast(o[0], kCompute), target = o[1], g = b.cast(o[2], kCompute);
  DType index_dtype = b.type(target).dtype;
  ShiftedExp p = shifted_exp(b, x, 1);
  int prob = b.bin(OpKind::k_div, p.e, p.z);
  int valid = b.bin(OpKind::k_ne, target, b.scalar(double(in.attrs.ignore_index), index_dtype));
  int hot = b.cast(b.bin(OpKind::k_eq, b.reshape(target, {n, 1}),
                         b.reshape(b.cast(b.arange(classes), index_dtype), {1, classes})),
                   kCompute);
  double eps = in.attrs.label_smoothing;
  int d =
      b.bin(OpKind::k_sub, b.bin(OpKind::k_sub, prob, b.bin(OpKind::k_mul, hot, b.scalar(1 - eps))),
            b.scalar(eps / double(classes)));
  int valid_f = b.cast(valid, kCompute);
  int count = b.bin(OpKind::k_maximum, b.reduce(OpKind::k_sum, valid_f, {}, false), b.scalar(1));
  int w = b.bin(OpKind::k_mul, b.reshape(valid_f, {n, 1}), b.bin(OpKind::k_div, g, count));
  return b.cast(b.bin(OpKind::k_mul, d, w), in.type.dtype);
}

// fused_linear_cross_entropy(input [N, D], weight [C, D], target [N], grad []):
// the unfused program, packed as concat(d weight, d input, [loss, 0...]).
int decompose_fused_linear_cross_entropy(Emitter& b, const ir::Instr& in,
                                         const std::vector<int>& o) {
  int h = o[0], w = o[1], target = o[2];
  int64_t dim = b.type(h).shape[1];
  ops::Attrs tb;
  tb.trans_b = true;
  int logits = b.emit(OpKind::k_matmul, {h, w}, tb);  // [N, C]
  ir::Instr ce{OpKind::k_cross_entropy, in.attrs, {}, {{}, DType::f32}};
  int loss = decompose_cross_entropy(b, ce, {logits, target});
  if (loss < 0) return -1;
  ir::Instr bw{OpKind::k_cross_entropy_backward, in.attrs, {}, b.type(logits)};
  int dz = decompose_cross_entropy_backward(b, bw, {logits, target, o[3]});
  ops::Attrs ta;
  ta.trans_a = true;
  int dw = b.emit(OpKind::k_matmul, {dz, h}, ta);  // [C, D]
  int dh = b.emit(OpKind::k_matmul, {dz, w});      // [N, D]
  ops::Attrs cat;
  cat.axis = 1;
  int row = b.reshape(loss, {1, 1});
  if (dim > 1) row = b.emit(OpKind::k_concat, {row, b.full({1, dim - 1}, 0, DType::f32)}, cat);
  cat.axis = 0;
  return b.emit(OpKind::k_concat, {dw, dh, row}, cat);
}

// Grouped-query attention's k/v [..., Hkv, S, D] repeated to q's `heads`
// (transformers' repeat_kv: kv head j serves q heads j*G .. j*G+G-1).
int repeat_kv_heads(Emitter& b, int x, int64_t heads) {
  Shape s = b.type(x).shape;
  size_t r = s.size();
  if (r < 3 || s[r - 3] == heads) return x;
  int64_t kv = s[r - 3];
  Shape grouped(s.begin(), s.end() - 2);
  grouped.push_back(1);
  grouped.insert(grouped.end(), s.end() - 2, s.end());  // [..., Hkv, 1, S, D]
  ops::Attrs e;
  e.shape = grouped;
  e.shape[r - 2] = heads / kv;  // [..., Hkv, G, S, D]
  int expanded = b.emit(OpKind::k_expand, {b.reshape(x, grouped)}, e);
  Shape out = s;
  out[r - 3] = heads;
  return b.reshape(expanded, out);
}

// attention(q [..., T, D], k [..., S, D], v [..., S, Dv][, mask][, generator]).
int decompose_attention(Emitter& b, const ir::Instr& in, const std::vector<int>& o) {
  const Shape qs = b.type(o[0]).shape;
  size_t r = qs.size();
  int64_t t = qs[r - 2], d = qs[r - 1], s_len = b.type(o[1]).shape[r - 2];
  // No keys or head size 0 (scores 0 * 1/sqrt(0)): zeros, as the reference.
  if (in.type.numel() == 0 || s_len == 0 || d == 0) return b.full(in.type.shape, 0, in.type.dtype);
  int q = b.cast(o[0], kCompute);
  int64_t heads = r >= 3 ? qs[r - 3] : 1;
  int k = repeat_kv_heads(b, b.cast(o[1], kCompute), heads);
  // bf16/f16 attention multiplies P (rounded once) by v in that dtype, with
  // f32 accumulation: a low-precision GEMM, as flash attention does.
  const bool low = in.type.dtype == DType::bf16 || in.type.dtype == DType::f16;
  int v = repeat_kv_heads(b, low ? o[2] : b.cast(o[2], kCompute), heads);
  ops::Attrs qk;
  qk.trans_b = true;
  double scale = in.attrs.scale != 0 ? in.attrs.scale : 1.0 / std::sqrt(double(d));
  int scores = b.bin(OpKind::k_mul, b.emit(OpKind::k_matmul, {q, k}, qk), b.scalar(scale));
  int keep = -1;  // bool, broadcasts to scores
  if (in.attrs.causal)
    keep =
        b.bin(OpKind::k_ge, b.reshape(b.arange(t), {t, 1}), b.reshape(b.arange(s_len), {1, s_len}));
  int mask_at = ops::attention_mask_operand(o.size(), 3, in.attrs);
  if (mask_at >= 0) {
    int mask = o[mask_at];
    if (b.type(mask).dtype == DType::boolean)
      keep = keep < 0 ? mask : b.emit(OpKind::k_where, {keep, mask, keep});
    else
      scores = b.bin(OpKind::k_add, scores, b.cast(mask, kCompute));
  }
  if (keep >= 0) scores = b.emit(OpKind::k_where, {keep, scores, b.scalar(-FLT_MAX)});
  int64_t last = static_cast<int64_t>(r) - 1;
  // max(.., -FLT_MAX): a row of -inf (float mask) shifts by a finite value.
  int m =
      b.bin(OpKind::k_maximum, b.reduce(OpKind::k_max, scores, {last}, true), b.scalar(-FLT_MAX));
  int e = b.emit(OpKind::k_exp, {b.bin(OpKind::k_sub, scores, m)});
  if (keep >= 0) e = b.emit(OpKind::k_where, {keep, e, b.scalar(0)});
  int z = b.bin(OpKind::k_maximum, b.reduce(OpKind::k_sum, e, {last}, true), b.scalar(1e-30));
  int probs = b.bin(OpKind::k_div, e, z);
  int gen = ops::attention_generator_operand(o.size(), in.attrs);
  if (gen >= 0) {
    ops::Attrs drop;
    drop.dropout_p = in.attrs.dropout_p;
    probs = b.emit(OpKind::k_dropout, {probs, o[gen]}, drop);
  }
  if (low) probs = b.cast(probs, in.type.dtype);
  int out = b.emit(OpKind::k_matmul, {probs, v});
  return b.cast(out, in.type.dtype);
}

// The value computing `in` from primitive ops, or -1 when it has no
// decomposition here.
int decompose(Emitter& b, const ir::Instr& in, const std::vector<int>& o) {
  bool empty = in.type.numel() == 0;
  switch (in.op) {
    case OpKind::k_softmax:
    case OpKind::k_log_softmax:
      if (empty) return b.full(in.type.shape, 0, in.type.dtype);
      return decompose_softmax(b, in, o, in.op == OpKind::k_log_softmax);
    case OpKind::k_layer_norm:
      if (empty) return b.full(in.type.shape, 0, in.type.dtype);
      return decompose_layer_norm(b, in, o);
    case OpKind::k_cross_entropy:
      return decompose_cross_entropy(b, in, o);
    case OpKind::k_attention:
      return decompose_attention(b, in, o);
    case OpKind::k_cross_entropy_backward:
      return decompose_cross_entropy_backward(b, in, o);
    case OpKind::k_fused_linear_cross_entropy:
      return decompose_fused_linear_cross_entropy(b, in, o);
    default:
      return -1;
  }
}

class Decompose final : public Pass {
 public:
  explicit Decompose(std::function<bool(OpKind)> supported) : supported_(std::move(supported)) {}
  std::string_view name() const override { return "decompose"; }

  bool run(ir::Graph& g) override {
    auto wanted = [&](const ir::Instr& in) {
      return ops::has_trait(in.op, ops::kComposite) && !supported_(in.op);
    };
    bool any = false;
    for (const ir::Instr& in : g.instrs) any = any || wanted(in);
    if (!any) return false;
    ir::Graph out;
    out.inputs = g.inputs;
    Emitter b(out);
    int first = static_cast<int>(g.inputs.size());
    std::vector<int> map(g.num_values());
    for (int v = 0; v < first; ++v) map[v] = v;
    bool changed = false;
    for (size_t i = 0; i < g.instrs.size(); ++i) {
      ir::Instr in = g.instrs[i];
      for (int& v : in.operands) v = map[v];
      size_t emitted = out.instrs.size();
      int value = wanted(in) ? decompose(b, in, in.operands) : -1;
      for (size_t k = emitted; k < out.instrs.size(); ++k) out.instrs[k].remat = in.remat;
      if (value < 0) {
        out.instrs.push_back(std::move(in));
        value = out.num_values() - 1;
      } else {
        LOOM_CHECK(b.type(value) == in.type, "[decompose] ", ops::op_name(in.op), " gave ",
                   ops::to_string(b.type(value)), ", expected ", ops::to_string(in.type));
        changed = true;
      }
      map[first + i] = value;
    }
    for (int v : g.outputs) out.outputs.push_back(map[v]);
    g = std::move(out);
    return changed;
  }

 private:
  std::function<bool(OpKind)> supported_;
};

}  // namespace

std::unique_ptr<Pass> make_decompose(std::function<bool(ops::OpKind)> supported) {
  return std::make_unique<Decompose>(std::move(supported));
}

std::vector<ops::OpKind> forced_decompositions() {
  std::vector<OpKind> ops;
  std::stringstream list(settings::text(Setting::decompose));
  std::string name;
  while (std::getline(list, name, ',')) {
    size_t b = name.find_first_not_of(" \t"), e = name.find_last_not_of(" \t");
    if (b == std::string::npos) continue;
    name = name.substr(b, e - b + 1);
    if (name == "all") {
      for (int k = 0; k < ops::kNumOps; ++k)
        if (ops::has_trait(OpKind(k), ops::kComposite)) ops.push_back(OpKind(k));
      continue;
    }
    OpKind op{};
    try {
      op = ops::op_from_name(name);
    } catch (const Error&) {
      fail("[decompose] LOOM_DECOMPOSE names unknown op '", name, "'");
    }
    LOOM_CHECK(ops::has_trait(op, ops::kComposite), "[decompose] LOOM_DECOMPOSE names '", name,
               "', which is not a composite op (softmax, log_softmax, layer_norm, cross_entropy, "
               "cross_entropy_backward, fused_linear_cross_entropy, attention)");
    ops.push_back(op);
  }
  return ops;
}

}  // namespace loom::compiler
