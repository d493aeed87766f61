// Lowering of the reductions (sum, mean, max, min, var, argmax) and of the
// (batched) matmul to StableHLO, with the reference's semantics
// (backends/reference/reduce.cpp, matmul.cpp): axes empty = all, keepdim
// reshapes the result; integer and bool sums accumulate in i64; float sums
// in f32; mean divides by the reduced count (0 gives NaN), var by
// max(0, n - correction); max/min propagate NaN (XLA's maximum does);
// argmax takes the first maximal index and counts NaN as maximal (torch).
// matmul reads its operands through perm_a / perm_b (transposes), broadcasts
// batch dims, and stores permute(product, perm_out); bf16/f16 products
// accumulate in f32 (dot_general with an f32 result) and round once.
#include <algorithm>
#include <climits>
#include <cmath>

#include "backends/xla/lower/lower_ops.h"
#include "loom/error.h"

namespace loom::backends::xla {

using ops::OpKind;

namespace {

// The reduced dims of a rank-`rank` operand (axes past the rank: a rank-0
// operand's implicit axis, nothing to reduce).
std::vector<int64_t> reduction_dims_of(const std::vector<int64_t>& axes, size_t rank) {
  std::vector<int64_t> dims;
  for (size_t d = 0; d < rank; ++d) {
    bool hit = axes.empty();
    for (int64_t a : axes) hit = hit || a == int64_t(d);
    if (hit) dims.push_back(static_cast<int64_t>(d));
  }
  return dims;
}

int64_t reduction_count(const Shape& shape, const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= shape[d];
  return n;
}

Val reduction_sum(HloEmitter& e, const Val& x, const std::vector<int64_t>& dims) {
  return e.reduce(x, e.constant(0, x.elem), dims, "stablehlo.add");
}

// init of a max (lowest) or min (highest) reduction in `elem`.
Val reduction_extreme_init(HloEmitter& e, const std::string& elem, bool max) {
  if (is_float_elem(elem)) return e.constant(max ? -INFINITY : INFINITY, elem);
  if (elem == "i32")
    return e.int_constant(max ? uint64_t(int64_t(INT32_MIN)) : uint64_t(INT32_MAX), elem);
  return e.int_constant(max ? uint64_t(INT64_MIN) : uint64_t(INT64_MAX), elem);
}

// argmax of x along its one dim `dim`: a two-operand reduce (value, index).
Val reduction_argmax_along(HloEmitter& e, const Val& x, int64_t dim) {
  Val idx = e.iota(x.shape, dim, "i64");
  Val init_v = reduction_extreme_init(e, x.elem, true);
  Val init_i = e.constant(0, "i64");
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (int64_t(d) != dim) out.push_back(x.shape[d]);
  std::string s = tensor_type({}, x.elem), si = tensor_type({}, "i64"), b = tensor_type({}, "i1");
  std::string r = e.fresh(), av = e.fresh(), ai = e.fresh(), bv = e.fresh(), bi = e.fresh();
  auto n = [&] { return e.fresh(); };
  std::string gt = n(), nan_a = n(), pick = n(), eq = n(), nan_b = n(), both = n(), tie = n(),
              v = n(), i0 = n(), lo = n(), i = n();
  const char* ct = is_float_elem(x.elem) ? "FLOAT" : "SIGNED";
  auto cmp = [&](const std::string& res, const char* dir, const std::string& p,
                 const std::string& q) {
    return "      " + res + " = stablehlo.compare " + dir + ", " + p + ", " + q + ", " + ct +
           " : (" + s + ", " + s + ") -> " + b + "\n";
  };
  std::string text = "    " + r + ":2 = \"stablehlo.reduce\"(" + x.name + ", " + idx.name + ", " +
                     init_v.name + ", " + init_i.name + ") ({\n    ^bb0(" + av + ": " + s + ", " +
                     ai + ": " + si + ", " + bv + ": " + s + ", " + bi + ": " + si + "):\n";
  text +=
      "      // keep a when a > b or a is NaN; equal values (or two NaNs) keep the first index\n";
  text += cmp(gt, "GT", av, bv) + cmp(nan_a, "NE", av, av);
  text += "      " + pick + " = stablehlo.or " + gt + ", " + nan_a + " : " + b + "\n";
  text += cmp(eq, "EQ", av, bv) + cmp(nan_b, "NE", bv, bv);
  text += "      " + both + " = stablehlo.and " + nan_a + ", " + nan_b + " : " + b + "\n";
  text += "      " + tie + " = stablehlo.or " + eq + ", " + both + " : " + b + "\n";
  text += "      " + v + " = stablehlo.select " + pick + ", " + av + ", " + bv + " : " + b + ", " +
          s + "\n";
  text += "      " + i0 + " = stablehlo.select " + pick + ", " + ai + ", " + bi + " : " + b + ", " +
          si + "\n";
  text += "      " + lo + " = stablehlo.minimum " + ai + ", " + bi + " : " + si + "\n";
  text += "      " + i + " = stablehlo.select " + tie + ", " + lo + ", " + i0 + " : " + b + ", " +
          si + "\n";
  text += "      stablehlo.return " + v + ", " + i + " : " + s + ", " + si +
          "\n    }) {dimensions = " + i64_array({dim}) + "} : (" + tensor_type(x) + ", " +
          tensor_type(idx) + ", " + s + ", " + si + ") -> (" + tensor_type(out, x.elem) + ", " +
          tensor_type(out, "i64") + ")\n";
  e.raw(text);
  return {r + "#1", out, "i64"};
}

Val reduction_argmax(HloEmitter& e, const ir::Instr& in, const Val& x) {
  // Compare in f32 (exact for bf16/f16), integers in i64, bool as i32.
  std::string work = is_float_elem(x.elem) ? "f32" : x.elem == "i1" ? "i32" : x.elem;
  Val v = cast_to(e, x, work);
  std::vector<int64_t> dims = reduction_dims_of(in.attrs.axes, v.shape.size());
  if (dims.size() != 1) {  // all axes (or rank 0): over the flattened values
    v = e.reshape(v, {numel(v.shape)});
    dims = {0};
  }
  return e.reshape(reduction_argmax_along(e, v, dims[0]), in.type.shape);
}

}  // namespace

Val lower_reduce(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  const Val& x = args[0];
  if (in.op == OpKind::k_argmax) return reduction_argmax(e, in, x);
  std::string out = mlir_elem(in.type.dtype);
  std::vector<int64_t> dims = reduction_dims_of(in.attrs.axes, x.shape.size());
  int64_t count = reduction_count(x.shape, dims);
  Val r;
  switch (in.op) {
    case OpKind::k_sum:
      r = reduction_sum(e, cast_to(e, x, is_float_elem(out) ? "f32" : "i64"), dims);
      break;
    case OpKind::k_mean:
      r = reduction_sum(e, cast_to(e, x, "f32"), dims);
      r = e.binary("stablehlo.divide", r, e.constant(double(count), "f32", r.shape));
      break;
    case OpKind::k_var: {
      Val xf = cast_to(e, x, "f32");
      Val mean = reduction_sum(e, xf, dims);
      mean = e.binary("stablehlo.divide", mean, e.constant(double(count), "f32", mean.shape));
      std::vector<int64_t> kept;
      for (size_t d = 0, k = 0; d < x.shape.size(); ++d)
        if (k < dims.size() && dims[k] == int64_t(d))
          ++k;
        else
          kept.push_back(static_cast<int64_t>(d));
      Val dev = e.binary("stablehlo.subtract", xf, e.broadcast_in_dim(mean, xf.shape, kept));
      r = reduction_sum(e, e.binary("stablehlo.multiply", dev, dev), dims);
      double divisor = double(std::max<int64_t>(0, count - in.attrs.correction));
      r = e.binary("stablehlo.divide", r, e.constant(divisor, "f32", r.shape));
      break;
    }
    case OpKind::k_max:
    case OpKind::k_min: {
      bool max = in.op == OpKind::k_max;
      std::string work = is_float_elem(x.elem) ? "f32" : x.elem == "i1" ? "i32" : x.elem;
      Val v = cast_to(e, x, work);
      r = e.reduce(v, reduction_extreme_init(e, work, max), dims,
                   max ? "stablehlo.maximum" : "stablehlo.minimum");
      break;
    }
    default:
      fail("[xla] cannot lower ", ops::op_name(in.op), " (not a reduction)");
  }
  return e.reshape(cast_to(e, r, out), in.type.shape);
}

Val lower_matmul(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  const ops::Attrs& at = in.attrs;
  Val a = at.perm_a.empty() ? args[0] : e.transpose(args[0], at.perm_a);
  Val b = at.perm_b.empty() ? args[1] : e.transpose(args[1], at.perm_b);
  size_t ra = a.shape.size(), rb = b.shape.size();
  int64_t ca = at.trans_a ? int64_t(ra) - 2 : int64_t(ra) - 1;
  int64_t cb = at.trans_b ? int64_t(rb) - 1 : int64_t(rb) - 2;
  Val p;
  if (rb == 2) {
    // b has no batch dims: a's batch dims and its m are the free dims, in
    // order, so the product is [..., m, n] without broadcasting.
    p = e.dot_general(a, b, {}, {}, {ca}, {cb}, "f32");
  } else {
    Shape batch = broadcast_shapes(Shape(a.shape.begin(), a.shape.end() - 2),
                                   Shape(b.shape.begin(), b.shape.end() - 2), "matmul");
    Shape sa = batch, sb = batch;
    sa.insert(sa.end(), a.shape.end() - 2, a.shape.end());
    sb.insert(sb.end(), b.shape.end() - 2, b.shape.end());
    a = e.broadcast_to(a, sa);
    b = e.broadcast_to(b, sb);
    std::vector<int64_t> bd;
    for (size_t d = 0; d < batch.size(); ++d) bd.push_back(static_cast<int64_t>(d));
    int64_t nb = static_cast<int64_t>(batch.size());
    p = e.dot_general(a, b, bd, bd, {nb + (at.trans_a ? 0 : 1)}, {nb + (at.trans_b ? 1 : 0)},
                      "f32");
  }
  p = cast_to(e, p, mlir_elem(in.type.dtype));
  return at.perm_out.empty() ? p : e.transpose(p, at.perm_out);
}

}  // namespace loom::backends::xla
