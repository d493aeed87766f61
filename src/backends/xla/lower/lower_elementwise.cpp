// Lowering of the elementwise ops (unary math, broadcasting binary ops,
// comparisons, where, cast) and the nullary full / arange to StableHLO.
// As the cpu kernels: bf16/f16 (and integer operands of float-only math) are
// computed in f32 and rounded once to the result dtype; integer ops stay in
// their dtype; bool arithmetic runs in i32 and is turned back into bool by
// `!= 0`, as the reference's double -> bool store. Formulas are the
// reference's (backends/reference/elementwise.cpp), gelu and gelu_tanh in the
// cpu kernels' cancellation-free forms: gelu = 0.5 x erfc(-x / sqrt 2) (=
// 0.5 x (1 + erf(x / sqrt 2))), gelu_tanh = x / (1 + exp(-2 sqrt(2/pi) (x +
// 0.044715 x^3))); their gradients gelu_backward / gelu_tanh_backward = grad *
// gelu'(x) in the forms of the cpu kernel (backends/cpu/gelu_backward.cpp),
// in f32: 0.5 erfc(-x / sqrt 2) + x exp(-x^2 / 2) / sqrt(2 pi), and s + 2 x
// u' s r with s = logistic(2u), r = logistic(-2u), u' = sqrt(2/pi) (1 + 3 *
// 0.044715 x^2); sign = (x > 0) - (x < 0), relu passes NaN, casts of
// non-finite floats to integers give 0.
#include <cmath>
#include <numbers>

#include "backends/xla/lower/lower_ops.h"
#include "loom/error.h"

namespace loom::backends::xla {

using ops::OpKind;

namespace {

bool elementwise_is_int(const std::string& elem) { return !is_float_elem(elem); }

DType elementwise_dtype_of(const std::string& elem) {
  if (elem == "f32") return DType::f32;
  if (elem == "bf16") return DType::bf16;
  if (elem == "f16") return DType::f16;
  if (elem == "i32") return DType::i32;
  if (elem == "i64") return DType::i64;
  return DType::boolean;
}

Val elementwise_float_unary(HloEmitter& e, OpKind op, const Val& x) {
  auto c = [&](double v) { return e.constant(v, "f32", x.shape); };
  switch (op) {
    case OpKind::k_exp:
      return e.unary("stablehlo.exponential", x);
    case OpKind::k_log:
      return e.unary("stablehlo.log", x);
    case OpKind::k_sqrt:
      return e.unary("stablehlo.sqrt", x);
    case OpKind::k_rsqrt:
      return e.unary("stablehlo.rsqrt", x);
    case OpKind::k_tanh:
      return e.unary("stablehlo.tanh", x);
    case OpKind::k_sin:
      return e.unary("stablehlo.sine", x);
    case OpKind::k_cos:
      return e.unary("stablehlo.cosine", x);
    case OpKind::k_erf:
      return e.emit("chlo.erf " + x.name + " : " + tensor_type(x) + " -> " + tensor_type(x),
                    x.shape, x.elem);
    case OpKind::k_sigmoid:
      return e.unary("stablehlo.logistic", x);
    case OpKind::k_gelu: {  // 0.5 x erfc(-x / sqrt 2): no cancellation for x << 0
      Val r = e.binary("stablehlo.multiply", x, c(-1.0 / std::numbers::sqrt2));
      r = e.emit("chlo.erfc " + r.name + " : " + tensor_type(r) + " -> " + tensor_type(r), x.shape,
                 x.elem);
      return e.binary("stablehlo.multiply", e.binary("stablehlo.multiply", c(0.5), x), r);
    }
    case OpKind::k_gelu_tanh: {  // x / (1 + exp(-2 u)) = 0.5 x (1 + tanh u)
      Val x3 = e.binary("stablehlo.multiply", e.binary("stablehlo.multiply", x, x), x);
      Val u = e.binary("stablehlo.add", x, e.binary("stablehlo.multiply", c(0.044715), x3));
      Val t = e.binary("stablehlo.multiply", c(-2.0 * std::sqrt(2.0 / std::numbers::pi)), u);
      t = e.binary("stablehlo.add", c(1.0), e.unary("stablehlo.exponential", t));
      return e.binary("stablehlo.divide", x, t);
    }
    default:
      fail("[xla] cannot lower ", ops::op_name(op), " (not a float unary op)");
  }
}

// (x > 0) - (x < 0) in x's type; NaN gives 0 as the reference.
Val elementwise_sign(HloEmitter& e, const Val& x) {
  Val zero = e.constant(0, x.elem, x.shape);
  Val pos = cast_to(e, e.compare("GT", x, zero), x.elem);
  Val neg = cast_to(e, e.compare("LT", x, zero), x.elem);
  return e.binary("stablehlo.subtract", pos, neg);
}

Val elementwise_unary(HloEmitter& e, const ir::Instr& in, const Val& x) {
  std::string out = mlir_elem(in.type.dtype);
  switch (in.op) {
    case OpKind::k_cast:
      return cast_to(e, x, out);
    case OpKind::k_abs:
      return x.elem == "i1" ? x : e.unary("stablehlo.abs", x);
    case OpKind::k_neg:
      return e.unary("stablehlo.negate", x);
    case OpKind::k_relu:  // maximum propagates NaN (XLA's semantics)
      return x.elem == "i1" ? x : e.binary("stablehlo.maximum", x, e.constant(0, x.elem, x.shape));
    case OpKind::k_sign:
      return x.elem == "i1" ? x : elementwise_sign(e, x);
    case OpKind::k_pow_scalar: {
      if (elementwise_is_int(out))
        return e.binary("stablehlo.power", x, e.constant(in.attrs.exponent, x.elem, x.shape));
      Val xf = cast_to(e, x, "f32");
      Val r = e.binary("stablehlo.power", xf, e.constant(in.attrs.exponent, "f32", x.shape));
      return cast_to(e, r, out);
    }
    default:
      return cast_to(e, elementwise_float_unary(e, in.op, cast_to(e, x, "f32")), out);
  }
}

const char* elementwise_binary_mnemonic(OpKind op) {
  switch (op) {
    case OpKind::k_add:
      return "stablehlo.add";
    case OpKind::k_sub:
      return "stablehlo.subtract";
    case OpKind::k_mul:
      return "stablehlo.multiply";
    case OpKind::k_div:
      return "stablehlo.divide";
    case OpKind::k_maximum:
      return "stablehlo.maximum";
    case OpKind::k_minimum:
      return "stablehlo.minimum";
    case OpKind::k_pow:
      return "stablehlo.power";
    default:
      fail("[xla] cannot lower ", ops::op_name(op), " (not a binary op)");
  }
}

const char* elementwise_compare_direction(OpKind op) {
  switch (op) {
    case OpKind::k_eq:
      return "EQ";
    case OpKind::k_ne:
      return "NE";
    case OpKind::k_lt:
      return "LT";
    case OpKind::k_le:
      return "LE";
    case OpKind::k_gt:
      return "GT";
    default:
      return "GE";
  }
}

Val elementwise_binary(HloEmitter& e, const ir::Instr& in, const Val& a, const Val& b) {
  const Shape& shape = in.type.shape;
  if (ops::has_trait(in.op, ops::kCompare)) {
    // As the cpu kernels: in f32 when the promoted type is a float (each
    // operand converted directly, never rounded to bf16/f16), else in i64.
    DType common = promote_types(elementwise_dtype_of(a.elem), elementwise_dtype_of(b.elem));
    std::string cmp = is_floating(common) ? "f32" : "i64";
    return e.compare(elementwise_compare_direction(in.op), coerce(e, a, cmp, shape),
                     coerce(e, b, cmp, shape));
  }
  // Float results in f32, integer results in i64 (wrapping, then truncated
  // to the result dtype), bool results in i32 turned back by != 0.
  std::string out = mlir_elem(in.type.dtype);
  std::string work = is_float_elem(out) ? "f32" : out == "i1" ? "i32" : "i64";
  Val x = coerce(e, a, work, shape), y = coerce(e, b, work, shape);
  return cast_to(e, e.binary(elementwise_binary_mnemonic(in.op), x, y), out);
}

// grad * gelu'(x) (the header's forms), in f32, rounded once to the result dtype.
Val elementwise_gelu_backward(HloEmitter& e, const ir::Instr& in, const Val& a, const Val& b) {
  const Shape& shape = in.type.shape;
  Val g = coerce(e, a, "f32", shape), x = coerce(e, b, "f32", shape);
  auto c = [&](double v) { return e.constant(v, "f32", shape); };
  auto mul = [&](const Val& p, const Val& q) { return e.binary("stablehlo.multiply", p, q); };
  auto add = [&](const Val& p, const Val& q) { return e.binary("stablehlo.add", p, q); };
  Val xx = mul(x, x), d;
  if (in.op == OpKind::k_gelu_backward) {
    Val r = mul(x, c(-1.0 / std::numbers::sqrt2));
    Val cdf2 = e.emit("chlo.erfc " + r.name + " : " + tensor_type(r) + " -> " + tensor_type(r),
                      shape, "f32");
    Val pdf = e.unary("stablehlo.exponential", mul(xx, c(-0.5)));
    d = add(mul(c(0.5), cdf2), mul(x, mul(c(1.0 / std::sqrt(2.0 * std::numbers::pi)), pdf)));
  } else {
    const double k = std::sqrt(2.0 / std::numbers::pi), k3 = 3.0 * 0.044715;
    Val u2 = mul(c(2.0 * k), add(x, mul(c(0.044715), mul(xx, x))));  // 2u
    Val s = e.unary("stablehlo.logistic", u2);
    Val r = e.unary("stablehlo.logistic", e.unary("stablehlo.negate", u2));
    Val du = mul(c(k), add(c(1.0), mul(c(k3), xx)));
    d = add(s, mul(mul(mul(c(2.0), x), du), mul(s, r)));
  }
  return cast_to(e, mul(g, d), mlir_elem(in.type.dtype));
}

Val elementwise_arange(HloEmitter& e, const ir::Instr& in) {
  // start + step * i in f64, stored as the reference stores a double.
  const Shape& shape = in.type.shape;
  Val i = e.iota(shape, 0, "f64");
  Val r = e.binary("stablehlo.multiply", e.constant(in.attrs.range_step, "f64", shape), i);
  r = e.binary("stablehlo.add", e.constant(in.attrs.range_start, "f64", shape), r);
  return cast_to(e, r, mlir_elem(in.type.dtype));
}

}  // namespace

Val cast_to(HloEmitter& e, const Val& x, const std::string& elem) {
  if (x.elem == elem) return x;
  if (elem == "i1") return e.compare("NE", x, e.constant(0, x.elem, x.shape));
  if (is_float_elem(x.elem) && !is_float_elem(elem)) {
    // Non-finite floats become 0 (core/dtype.cpp store_from_double), the rest truncate.
    Val finite = e.emit("stablehlo.is_finite " + x.name + " : (" + tensor_type(x) + ") -> " +
                            tensor_type(x.shape, "i1"),
                        x.shape, "i1");
    return e.convert(e.select(finite, x, e.constant(0, x.elem, x.shape)), elem);
  }
  // Integers and f64 reach bf16/f16 through f32, as the reference's double
  // -> float -> half store.
  bool narrow = elem == "bf16" || elem == "f16";
  if (narrow && x.elem != "f32" && x.elem != "bf16" && x.elem != "f16")
    return e.convert(e.convert(x, "f32"), elem);
  return e.convert(x, elem);
}

Val coerce(HloEmitter& e, const Val& x, const std::string& elem, const Shape& shape) {
  return e.broadcast_to(cast_to(e, x, elem), shape);
}

Val lower_elementwise(HloEmitter& e, const ir::Instr& in, const std::vector<Val>& args) {
  uint32_t traits = ops::op_traits(in.op);
  if (in.op == OpKind::k_full)
    return e.constant(in.attrs.fill_value, mlir_elem(in.type.dtype), in.type.shape);
  if (in.op == OpKind::k_arange) return elementwise_arange(e, in);
  if (traits & ops::kUnary) return elementwise_unary(e, in, args[0]);
  if (in.op == OpKind::k_gelu_backward || in.op == OpKind::k_gelu_tanh_backward)
    return elementwise_gelu_backward(e, in, args[0], args[1]);
  if (traits & ops::kBinary) return elementwise_binary(e, in, args[0], args[1]);
  // where(cond, a, b)
  std::string out = mlir_elem(in.type.dtype);
  Val c = e.broadcast_to(args[0], in.type.shape);
  return e.select(c, coerce(e, args[1], out, in.type.shape),
                  coerce(e, args[2], out, in.type.shape));
}

}  // namespace loom::backends::xla
