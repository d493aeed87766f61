// Shape/dtype inference, one function per op family. Type promotion follows
// torch.result_type; float-only math (exp, log, ...) on integers gives f32 as
// PyTorch does.
#include "ops/infer.h"

#include <algorithm>

#include "loom/error.h"

namespace loom::ops {
namespace {

using Types = std::vector<TensorType>;

std::string_view name(OpKind op) { return op_name(op); }

void check_arity(OpKind op, const Types& in) {
  int arity = op_arity(op);
  LOOM_CHECK(arity >= 0 || !in.empty(), "[", name(op), "] needs at least one operand");
  if (arity < 0) return;
  LOOM_CHECK(static_cast<int>(in.size()) == arity, "[", name(op), "] expects ", arity,
             " operands, got ", in.size());
}

void check_floating(OpKind op, const TensorType& t) {
  LOOM_CHECK(is_floating(t.dtype), "[", name(op), "] dtype ", dtype_name(t.dtype),
             " is not supported (needs a floating dtype)");
}

void check_index(OpKind op, const TensorType& t) {
  LOOM_CHECK(is_integral(t.dtype), "[", name(op), "] index dtype ", dtype_name(t.dtype),
             " is not supported (needs int32 or int64)");
}

TensorType infer_unary(OpKind op, const TensorType& x, const Attrs& a) {
  switch (op) {
    case OpKind::k_cast:
      return {x.shape, a.dtype};
    case OpKind::k_neg:
      LOOM_CHECK(x.dtype != DType::boolean, "[neg] dtype bool is not supported");
      return x;
    case OpKind::k_abs:
    case OpKind::k_relu:
    case OpKind::k_sign:
      return x;
    case OpKind::k_pow_scalar:
      if (is_floating(x.dtype)) return x;
      return {x.shape, a.exponent == static_cast<int64_t>(a.exponent) && a.exponent >= 0
                           ? x.dtype
                           : DType::f32};
    default:  // float math: exp, log, sqrt, rsqrt, tanh, erf, sigmoid, gelu*, sin, cos
      return {x.shape, is_floating(x.dtype) ? x.dtype : DType::f32};
  }
}

int category(DType d) { return d == DType::boolean ? 0 : is_integral(d) ? 1 : 2; }

// torch.result_type of two operands: a rank-0 operand (a zero-dim tensor, or
// a C++ number made rank-0 by the op functions) decides the dtype only when
// its category (bool < integer < floating) is higher than the other's:
// bf16[n] * f32[] -> bf16, i32[n] + f32[] -> f32, i32[n] + i64[] -> i32.
DType result_type(const TensorType& a, const TensorType& b) {
  bool a0 = a.shape.empty(), b0 = b.shape.empty();
  if (a0 == b0) return promote_types(a.dtype, b.dtype);
  const TensorType& dim = a0 ? b : a;
  const TensorType& zero = a0 ? a : b;
  return category(zero.dtype) > category(dim.dtype) ? zero.dtype : dim.dtype;
}

TensorType infer_binary(OpKind op, const TensorType& a, const TensorType& b) {
  Shape shape = broadcast_shapes(a.shape, b.shape, name(op));
  if (has_trait(op, kCompare)) return {shape, DType::boolean};
  DType dtype = result_type(a, b);
  if (op == OpKind::k_div && !is_floating(dtype)) dtype = DType::f32;  // true division
  if (op == OpKind::k_sub) LOOM_CHECK(dtype != DType::boolean, "[sub] dtype bool is not supported");
  if (op == OpKind::k_gelu_backward || op == OpKind::k_gelu_tanh_backward) {
    check_floating(op, a);  // grad
    check_floating(op, b);  // x
  }
  return {shape, dtype};
}

std::vector<int64_t> check_axes(OpKind op, const std::vector<int64_t>& axes, size_t rank) {
  std::vector<int64_t> seen;
  for (int64_t ax : axes) {
    LOOM_CHECK(ax >= 0 && ax < static_cast<int64_t>(std::max<size_t>(rank, 1)), "[", name(op),
               "] axis ", ax, " is out of range for rank ", rank);
    LOOM_CHECK(std::find(seen.begin(), seen.end(), ax) == seen.end(), "[", name(op), "] axis ", ax,
               " is repeated");
    seen.push_back(ax);
  }
  return seen;
}

TensorType infer_reduce(OpKind op, const TensorType& x, const Attrs& a) {
  check_axes(op, a.axes, x.shape.size());
  Shape shape = reduced_shape(x.shape, a.axes, a.keepdim);
  int64_t count =
      shape.empty() && !a.keepdim ? x.numel() : x.numel() / std::max<int64_t>(1, numel(shape));
  if (!a.axes.empty()) {
    count = 1;
    for (int64_t ax : a.axes)  // a rank-0 operand reduces over its one implicit axis
      count *= ax < static_cast<int64_t>(x.shape.size()) ? x.shape[ax] : 1;
  }
  LOOM_CHECK(count > 0 || op == OpKind::k_sum || op == OpKind::k_mean || op == OpKind::k_var, "[",
             name(op), "] cannot reduce an empty dimension of shape ", to_string(x.shape));
  switch (op) {
    case OpKind::k_argmax:
      LOOM_CHECK(a.axes.size() <= 1, "[argmax] takes one axis, got ", a.axes.size());
      return {shape, DType::i64};
    case OpKind::k_sum:
      return {shape, is_floating(x.dtype) ? x.dtype : DType::i64};
    case OpKind::k_mean:
    case OpKind::k_var:
      check_floating(op, x);
      return {shape, x.dtype};
    default:
      return {shape, x.dtype};
  }
}

namespace {
// shape permuted by a matmul layout attr (empty = identity); checks it is a
// permutation of shape's axes.
Shape matmul_permuted(const Shape& shape, const std::vector<int64_t>& perm, const char* name) {
  if (perm.empty()) return shape;
  std::vector<bool> seen(shape.size(), false);
  bool ok = perm.size() == shape.size();
  for (size_t i = 0; ok && i < perm.size(); ++i) {
    ok = perm[i] >= 0 && perm[i] < static_cast<int64_t>(shape.size()) && !seen[perm[i]];
    if (ok) seen[perm[i]] = true;
  }
  LOOM_CHECK(ok, "[matmul] ", name, "=", to_string(perm), " is not a permutation of ", shape.size(),
             " axes");
  Shape out(shape.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = shape[perm[i]];
  return out;
}
}  // namespace

TensorType infer_matmul(const TensorType& stored_a, const TensorType& stored_b,
                        const Attrs& attrs) {
  LOOM_CHECK(stored_a.shape.size() >= 2 && stored_b.shape.size() >= 2,
             "[matmul] operands need rank >= 2, got ", to_string(stored_a.shape), " and ",
             to_string(stored_b.shape));
  TensorType a{matmul_permuted(stored_a.shape, attrs.perm_a, "perm_a"), stored_a.dtype};
  TensorType b{matmul_permuted(stored_b.shape, attrs.perm_b, "perm_b"), stored_b.dtype};
  LOOM_CHECK(a.dtype == b.dtype, "[matmul] dtypes ", dtype_name(a.dtype), " and ",
             dtype_name(b.dtype), " differ");
  check_floating(OpKind::k_matmul, a);
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t m = attrs.trans_a ? a.shape[ra - 1] : a.shape[ra - 2];
  int64_t ka = attrs.trans_a ? a.shape[ra - 2] : a.shape[ra - 1];
  int64_t kb = attrs.trans_b ? b.shape[rb - 1] : b.shape[rb - 2];
  int64_t n = attrs.trans_b ? b.shape[rb - 2] : b.shape[rb - 1];
  LOOM_CHECK(ka == kb, "[matmul] shapes ", to_string(a.shape), " and ", to_string(b.shape),
             " do not match", attrs.trans_a || attrs.trans_b ? " (with transpose flags)" : "");
  Shape batch_a(a.shape.begin(), a.shape.end() - 2), batch_b(b.shape.begin(), b.shape.end() - 2);
  Shape shape = broadcast_shapes(batch_a, batch_b, "matmul");
  shape.push_back(m);
  shape.push_back(n);
  return {matmul_permuted(shape, attrs.perm_out, "perm_out"), a.dtype};
}

TensorType infer_shape_op(OpKind op, const Types& in, const Attrs& a) {
  const TensorType& x = in[0];
  switch (op) {
    case OpKind::k_reshape:
      LOOM_CHECK(numel(a.shape) == x.numel() &&
                     std::all_of(a.shape.begin(), a.shape.end(), [](int64_t d) { return d >= 0; }),
                 "[reshape] cannot reshape ", to_string(x.shape), " to ", to_string(a.shape));
      return {a.shape, x.dtype};
    case OpKind::k_permute: {
      LOOM_CHECK(a.perm.size() == x.shape.size(), "[permute] perm of length ", a.perm.size(),
                 " for rank ", x.shape.size());
      check_axes(op, a.perm, x.shape.size());
      Shape shape;
      for (int64_t ax : a.perm) shape.push_back(x.shape[ax]);
      return {shape, x.dtype};
    }
    case OpKind::k_expand: {
      LOOM_CHECK(a.shape.size() >= x.shape.size() &&
                     std::all_of(a.shape.begin(), a.shape.end(), [](int64_t d) { return d >= 0; }),
                 "[expand] cannot expand ", to_string(x.shape), " to ", to_string(a.shape));
      size_t off = a.shape.size() - x.shape.size();
      for (size_t i = 0; i < x.shape.size(); ++i)
        LOOM_CHECK(x.shape[i] == a.shape[off + i] || x.shape[i] == 1, "[expand] cannot expand ",
                   to_string(x.shape), " to ", to_string(a.shape));
      return {a.shape, x.dtype};
    }
    case OpKind::k_slice: {
      LOOM_CHECK(!x.shape.empty(), "[slice] cannot slice a scalar");
      LOOM_CHECK(a.axis >= 0 && a.axis < static_cast<int64_t>(x.shape.size()), "[slice] axis ",
                 a.axis, " is out of range for rank ", x.shape.size());
      int64_t dim = x.shape[a.axis];
      LOOM_CHECK(
          a.step > 0 && a.start >= 0 && a.stop <= dim && a.start <= std::max(a.stop, a.start),
          "[slice] bounds start=", a.start, " stop=", a.stop, " step=", a.step,
          " are invalid for size ", dim);
      Shape shape = x.shape;
      shape[a.axis] = a.stop > a.start ? (a.stop - a.start + a.step - 1) / a.step : 0;
      return {shape, x.dtype};
    }
    default: {  // concat
      LOOM_CHECK(!in.empty(), "[concat] needs at least one operand");
      LOOM_CHECK(!x.shape.empty(), "[concat] cannot concatenate scalars");
      LOOM_CHECK(a.axis >= 0 && a.axis < static_cast<int64_t>(x.shape.size()), "[concat] axis ",
                 a.axis, " is out of range for rank ", x.shape.size());
      Shape shape = x.shape;
      shape[a.axis] = 0;
      for (const TensorType& t : in) {
        LOOM_CHECK(t.dtype == x.dtype, "[concat] dtypes ", dtype_name(x.dtype), " and ",
                   dtype_name(t.dtype), " differ");
        bool ok = t.shape.size() == x.shape.size();
        for (size_t d = 0; ok && d < x.shape.size(); ++d)
          ok = static_cast<int64_t>(d) == a.axis || t.shape[d] == x.shape[d];
        LOOM_CHECK(ok, "[concat] shapes ", to_string(x.shape), " and ", to_string(t.shape),
                   " do not match outside axis ", a.axis);
        shape[a.axis] += t.shape[a.axis];
      }
      return {shape, x.dtype};
    }
  }
}

void check_axis(OpKind op, int64_t axis, size_t rank) {
  LOOM_CHECK(axis >= 0 && axis < static_cast<int64_t>(std::max<size_t>(rank, 1)), "[", name(op),
             "] axis ", axis, " is out of range for rank ", rank);
}

TensorType infer_index(OpKind op, const Types& in, const Attrs& a) {
  const TensorType& x = in[0];
  LOOM_CHECK(op == OpKind::k_one_hot || op == OpKind::k_embedding || !x.shape.empty(), "[",
             name(op), "] cannot index a rank-0 input along an axis");
  switch (op) {
    case OpKind::k_embedding: {
      LOOM_CHECK(x.shape.size() == 2, "[embedding] weight must be [num_embeddings, dim], got ",
                 to_string(x.shape));
      check_index(op, in[1]);
      Shape shape = in[1].shape;
      shape.push_back(x.shape[1]);
      return {shape, x.dtype};
    }
    case OpKind::k_one_hot:
      check_index(op, x);
      LOOM_CHECK(a.num_classes > 0, "[one_hot] num_classes must be positive, got ", a.num_classes);
      {
        Shape shape = x.shape;
        shape.push_back(a.num_classes);
        return {shape, DType::i64};
      }
    case OpKind::k_index_select: {
      check_axis(op, a.axis, x.shape.size());
      check_index(op, in[1]);
      LOOM_CHECK(in[1].shape.size() == 1, "[index_select] index must be 1-D, got ",
                 to_string(in[1].shape));
      Shape shape = x.shape;
      shape[a.axis] = in[1].shape[0];
      return {shape, x.dtype};
    }
    case OpKind::k_gather: {
      check_axis(op, a.axis, x.shape.size());
      check_index(op, in[1]);
      LOOM_CHECK(in[1].shape.size() == x.shape.size(), "[gather] index shape ",
                 to_string(in[1].shape), " must have the rank of ", to_string(x.shape));
      for (size_t d = 0; d < x.shape.size(); ++d)
        LOOM_CHECK(static_cast<int64_t>(d) == a.axis || in[1].shape[d] <= x.shape[d],
                   "[gather] index shape ", to_string(in[1].shape), " exceeds ", to_string(x.shape),
                   " outside axis ", a.axis);
      return {in[1].shape, x.dtype};
    }
    case OpKind::k_index_add:
    case OpKind::k_index_copy: {  // (self, index [n], source: self's shape with n along axis)
      check_axis(op, a.axis, x.shape.size());
      check_index(op, in[1]);
      Shape expect = x.shape;
      LOOM_CHECK(in[1].shape.size() == 1, "[", name(op), "] index must be 1-D, got ",
                 to_string(in[1].shape));
      expect[a.axis] = in[1].shape[0];
      LOOM_CHECK(in[2].shape == expect, "[", name(op), "] source shape ", to_string(in[2].shape),
                 " should be ", to_string(expect));
      LOOM_CHECK(in[2].dtype == x.dtype, "[", name(op), "] dtypes differ: self ",
                 dtype_name(x.dtype), ", source ", dtype_name(in[2].dtype));
      return x;
    }
    default: {  // scatter_add(base, index, src)
      check_axis(op, a.axis, x.shape.size());
      check_index(op, in[1]);
      LOOM_CHECK(in[1].shape == in[2].shape && in[1].shape.size() == x.shape.size(),
                 "[scatter_add] index shape ", to_string(in[1].shape), " and source shape ",
                 to_string(in[2].shape), " must match and have the rank of ", to_string(x.shape));
      for (size_t d = 0; d < x.shape.size(); ++d)
        LOOM_CHECK(static_cast<int64_t>(d) == a.axis || in[1].shape[d] <= x.shape[d],
                   "[scatter_add] index shape ", to_string(in[1].shape), " exceeds ",
                   to_string(x.shape));
      LOOM_CHECK(in[2].dtype == x.dtype, "[scatter_add] dtypes differ");
      return x;
    }
  }
}

// Checks attention's q, k, v (+ optional mask, generator) starting at in[0]
// with `fixed` leading tensors (3: attention, 4: attention_backward, whose
// in[3] is grad_out); returns the attention result type.
TensorType check_attention_operands(OpKind op, const Types& in, const Attrs& a, int fixed) {
  size_t extra = a.dropout_p > 0 ? 1 : 0, lead = static_cast<size_t>(fixed);
  LOOM_CHECK(in.size() == lead + extra || in.size() == lead + extra + 1, "[", name(op),
             "] expects ", fixed == 3 ? "q, k, v" : "q, k, v, grad_out", " and an optional mask",
             extra ? ", then the generator state (dropout p > 0)" : "", ", got ", in.size(),
             " operands");
  LOOM_CHECK(a.dropout_p >= 0 && a.dropout_p < 1, "[", name(op),
             "] dropout p must be in [0, 1), got ", a.dropout_p);
  const TensorType &q = in[0], &k = in[1], &v = in[2];
  check_floating(op, q);
  LOOM_CHECK(
      q.shape.size() >= 2 && k.shape.size() == q.shape.size() && v.shape.size() == q.shape.size(),
      "[", name(op), "] q, k, v must have one rank >= 2, got ", to_string(q.shape), ", ",
      to_string(k.shape), ", ", to_string(v.shape));
  size_t r = q.shape.size();
  bool ok = q.shape[r - 1] == k.shape[r - 1] && k.shape[r - 2] == v.shape[r - 2];
  for (size_t d = 0; d + 2 < r; ++d) {
    ok = ok && k.shape[d] == v.shape[d];
    // Grouped-query attention: dim -3 (heads) of k, v may divide q's.
    bool heads = d + 3 == r && k.shape[d] > 0 && q.shape[d] % k.shape[d] == 0;
    ok = ok && (q.shape[d] == k.shape[d] || heads);
  }
  LOOM_CHECK(ok && k.dtype == q.dtype && v.dtype == q.dtype, "[", name(op), "] shapes q ",
             to_string(q.shape), ", k ", to_string(k.shape), ", v ", to_string(v.shape),
             " do not match");
  Shape out = q.shape;
  out[r - 1] = v.shape[r - 1];
  int mask = attention_mask_operand(in.size(), fixed, a);
  if (mask >= 0) {
    Shape scores = q.shape;
    scores[r - 1] = k.shape[r - 2];
    LOOM_CHECK(broadcast_shapes(in[mask].shape, scores, name(op)) == scores, "[", name(op),
               "] mask shape ", to_string(in[mask].shape), " does not broadcast to ",
               to_string(scores));
  }
  int gen = attention_generator_operand(in.size(), a);
  if (gen >= 0)
    LOOM_CHECK(in[gen].dtype == DType::i64 && in[gen].shape == Shape{2}, "[", name(op),
               "] generator state must be int64[2]");
  return {out, q.dtype};
}

TensorType infer_attention(const Types& in, const Attrs& a) {
  return check_attention_operands(OpKind::k_attention, in, a, 3);
}

TensorType infer_attention_backward(const Types& in, const Attrs& a) {
  LOOM_CHECK(in.size() >= 4, "[attention_backward] expects q, k, v, grad_out, got ", in.size(),
             " operands");
  TensorType out = check_attention_operands(OpKind::k_attention_backward, in, a, 4);
  LOOM_CHECK(in[3] == out, "[attention_backward] grad_out ", to_string(in[3]), " must be ",
             to_string(out));
  return {{in[0].numel() + in[1].numel() + in[2].numel()}, in[0].dtype};
}

TensorType infer_composite(OpKind op, const Types& in, const Attrs& a) {
  const TensorType& x = in[0];
  switch (op) {
    case OpKind::k_softmax:
    case OpKind::k_log_softmax:
      check_floating(op, x);
      check_axis(op, a.axis, x.shape.size());
      return x;
    case OpKind::k_layer_norm: {
      check_floating(op, x);
      LOOM_CHECK(!x.shape.empty(), "[layer_norm] input must have rank >= 1");
      Shape c{x.shape.back()};
      LOOM_CHECK(in[1].shape == c && in[2].shape == c, "[layer_norm] weight ",
                 to_string(in[1].shape), " and bias ", to_string(in[2].shape), " must be ",
                 to_string(c));
      return x;
    }
    case OpKind::k_cross_entropy:
      check_floating(op, x);
      check_index(op, in[1]);
      LOOM_CHECK(x.shape.size() == 2 && in[1].shape.size() == 1 && in[1].shape[0] == x.shape[0],
                 "[cross_entropy] logits ", to_string(x.shape), " and target ",
                 to_string(in[1].shape), " must be [N, C] and [N]");
      return {{}, x.dtype};
    case OpKind::k_cross_entropy_backward:
      check_floating(op, x);
      check_index(op, in[1]);
      LOOM_CHECK(x.shape.size() == 2 && in[1].shape.size() == 1 && in[1].shape[0] == x.shape[0] &&
                     in[2].shape.empty(),
                 "[cross_entropy_backward] logits ", to_string(x.shape), ", target ",
                 to_string(in[1].shape), " and grad ", to_string(in[2].shape),
                 " must be [N, C], [N] and []");
      return x;
    case OpKind::k_fused_linear_cross_entropy: {
      const TensorType& w = in[1];
      LOOM_CHECK((x.dtype == DType::f32 || x.dtype == DType::bf16) && w.dtype == x.dtype &&
                     in[3].dtype == DType::f32,
                 "[fused_linear_cross_entropy] input and weight must be both f32 or both bf16 "
                 "and grad f32, got ",
                 dtype_name(x.dtype), ", ", dtype_name(w.dtype), " and ", dtype_name(in[3].dtype));
      check_index(op, in[2]);
      LOOM_CHECK(x.shape.size() == 2 && w.shape.size() == 2 && x.shape[1] == w.shape[1] &&
                     in[2].shape == Shape{x.shape[0]} && in[3].shape.empty() && x.shape[1] >= 1 &&
                     w.shape[0] >= 1,
                 "[fused_linear_cross_entropy] input ", to_string(x.shape), ", weight ",
                 to_string(w.shape), ", target ", to_string(in[2].shape), " and grad ",
                 to_string(in[3].shape), " must be [N, D], [C, D], [N] and [] with D, C >= 1");
      return {{w.shape[0] + x.shape[0] + 1, x.shape[1]}, DType::f32};
    }
    default:
      return infer_attention(in, a);
  }
}

// all_gather [n, ...] -> [W*n, ...]; reduce_scatter [W*n, ...] -> [n, ...]
// (ops.def: W is attrs.world_size).
TensorType infer_gather_scatter(OpKind op, const TensorType& x, const Attrs& a) {
  const bool gather = op == OpKind::k_all_gather;
  const char* what = gather ? "all_gather" : "reduce_scatter";
  const int64_t world = a.world_size;
  LOOM_CHECK(x.dtype != DType::boolean, "[", what, "] dtype bool is not supported");
  LOOM_CHECK(world >= 1, "[", what, "] world size ", world, " is not >= 1");
  LOOM_CHECK(!x.shape.empty(), "[", what, "] needs an operand of rank >= 1, got ", to_string(x));
  if (!gather)
    LOOM_CHECK(a.reduce_op == 0 || a.reduce_op == 1, "[reduce_scatter] reduce op ", a.reduce_op,
               " is not sum (0) or mean (1)");
  TensorType out = x;
  if (gather) {
    out.shape[0] *= world;
  } else {
    LOOM_CHECK(x.shape[0] % world == 0, "[reduce_scatter] ", to_string(x),
               ": axis 0 is not a multiple of the world size ", world);
    out.shape[0] /= world;
  }
  return out;
}

}  // namespace

Shape reduced_shape(const Shape& shape, const std::vector<int64_t>& axes, bool keepdim) {
  Shape out;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced =
        axes.empty() || std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if (!reduced)
      out.push_back(shape[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

TensorType infer_type(OpKind op, const std::vector<TensorType>& in, const Attrs& a) {
  check_arity(op, in);
  uint32_t traits = op_traits(op);
  if (traits & kUnary) return infer_unary(op, in[0], a);
  if (traits & kBinary) return infer_binary(op, in[0], in[1]);
  if (traits & kReduce) return infer_reduce(op, in[0], a);
  if (traits & kMatmul) return infer_matmul(in[0], in[1], a);
  if (traits & kShape) return infer_shape_op(op, in, a);
  if (traits & kIndex) return infer_index(op, in, a);
  if (traits & kComposite) return infer_composite(op, in, a);
  switch (op) {
    case OpKind::k_attention_backward:
      return infer_attention_backward(in, a);
    case OpKind::k_where: {
      LOOM_CHECK(in[0].dtype == DType::boolean, "[where] condition dtype ", dtype_name(in[0].dtype),
                 " is not bool");
      Shape s = broadcast_shapes(broadcast_shapes(in[0].shape, in[1].shape, "where"), in[2].shape,
                                 "where");
      return {s, result_type(in[1], in[2])};
    }
    case OpKind::k_full:
      return {a.shape, a.dtype};
    case OpKind::k_arange:
      LOOM_CHECK(a.shape.size() == 1 && a.shape[0] >= 0, "[arange] bad length ",
                 to_string(a.shape));
      return {a.shape, a.dtype};
    case OpKind::k_all_reduce:
      LOOM_CHECK(in[0].dtype != DType::boolean, "[all_reduce] dtype bool is not supported");
      LOOM_CHECK(a.reduce_op == 0 || a.reduce_op == 1, "[all_reduce] reduce op ", a.reduce_op,
                 " is not sum (0) or mean (1)");
      return in[0];
    case OpKind::k_all_gather:
    case OpKind::k_reduce_scatter:
      return infer_gather_scatter(op, in[0], a);
    case OpKind::k_dropout:
      LOOM_CHECK(in[1].dtype == DType::i64 && in[1].shape == Shape{2},
                 "[dropout] generator state must be int64[2]");
      LOOM_CHECK(a.dropout_p >= 0 && a.dropout_p < 1, "[dropout] p must be in [0, 1), got ",
                 a.dropout_p);
      return in[0];
    default:  // uniform, normal
      LOOM_CHECK(in[0].dtype == DType::i64 && in[0].shape == Shape{2}, "[", name(op),
                 "] generator state must be int64[2]");
      LOOM_CHECK(is_floating(a.dtype), "[", name(op), "] dtype ", dtype_name(a.dtype),
                 " is not supported (needs a floating dtype)");
      return {a.shape, a.dtype};
  }
}

}  // namespace loom::ops
