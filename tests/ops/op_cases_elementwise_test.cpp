// Op test table, elementwise family: unary math, binary ops with
// broadcasting, comparisons, where and cast, and the GELU gradient ops
// gelu_backward / gelu_tanh_backward (built with autograd::apply, as
// autograd's gelu rules emit them). (Table entries only; named *_test.cpp
// so CMake compiles it into loom_tests. See op_cases.h.)
#include <cmath>
#include <limits>

#include "autograd/engine.h"
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;
using UnaryFn = Tensor (*)(const Tensor&);
using BinaryFn = Tensor (*)(const Tensor&, const Tensor&);
using ScalarFn = Tensor (*)(const Tensor&, double);

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct UnarySpec {
  OpKind op;
  UnaryFn fn;
  double lo, hi;     // smooth domain for random operands
  bool kink;         // non-smooth at 0: operands via CaseEnv::away
  bool inf_defined;  // +-inf operands have an unambiguous result
  std::vector<DType> dtypes;
};

Tensor gelu_exact(const Tensor& x) { return gelu(x, "none"); }
Tensor gelu_tanh(const Tensor& x) { return gelu(x, "tanh"); }

void add_unary(std::vector<OpCase>& t, const UnarySpec& s) {
  auto operand = [s](const Shape& shape) {
    return [s, shape](CaseEnv& e) -> Inputs {
      return {s.kink ? e.away(shape, 0.25, s.hi) : e.data(shape, s.lo, s.hi)};
    };
  };
  auto run = [fn = s.fn](const Inputs& in, const CaseEnv&) { return fn(in[0]); };
  std::optional<ops::Attrs> attrs;
  if (ops::has_trait(s.op, ops::kNondiff)) attrs = ops::Attrs{};
  t.push_back({.op = s.op,
               .name = "odd_1d",
               .dtypes = s.dtypes,
               .make = operand({13}),
               .run = run,
               .attrs = attrs});
  t.push_back({.op = s.op,
               .name = "rank3_size1",
               .dtypes = s.dtypes,
               .make = operand({2, 1, 7}),
               .run = run});
  t.push_back({.op = s.op, .name = "rank0", .dtypes = s.dtypes, .make = operand({}), .run = run});
  t.push_back({.op = s.op,
               .name = "empty",
               .dtypes = s.dtypes,
               .make = operand({0, 5}),
               .run = run,
               .grad = false});
  t.push_back({.op = s.op,
               .name = "tail_67",
               .dtypes = s.dtypes,
               .make = operand({67}),
               .run = run,
               .grad = false});
  std::vector<double> special = {0.0, -0.0, 1.0, -1.0, kNaN, 30.0, -30.0, 100.0, -100.0};
  if (s.inf_defined) special.insert(special.end(), {kInf, -kInf});
  t.push_back({.op = s.op,
               .name = "special_values",
               .dtypes = kFloats,
               .make = [special](CaseEnv& e) -> Inputs {
                 return {e.values(special, {static_cast<int64_t>(special.size())})};
               },
               .run = run,
               .grad = false,
               .nan_expected = true});  // NaN in, NaN out
}

void add_unary_cases(std::vector<OpCase>& t) {
  const std::vector<UnarySpec> specs = {
      {OpKind::k_neg, neg, -2, 2, false, true, kNumeric},
      {OpKind::k_abs, abs, -2, 2, true, true, kNumeric},
      {OpKind::k_sign, sign, -2, 2, true, true, kNumeric},
      {OpKind::k_exp, exp, -3, 3, false, true, kNumeric},
      {OpKind::k_log, log, 0.1, 4, false, true, kNumeric},
      {OpKind::k_sqrt, sqrt, 0.1, 4, false, true, kNumeric},
      {OpKind::k_rsqrt, rsqrt, 0.2, 4, false, true, kNumeric},
      {OpKind::k_tanh, tanh, -3, 3, false, true, kNumeric},
      {OpKind::k_erf, erf, -2.5, 2.5, false, true, kNumeric},
      {OpKind::k_sigmoid, sigmoid, -4, 4, false, true, kNumeric},
      {OpKind::k_relu, relu, -2, 2, true, true, kNumeric},
      {OpKind::k_gelu, gelu_exact, -4, 4, false, false, kNumeric},
      {OpKind::k_gelu_tanh, gelu_tanh, -4, 4, false, false, kNumeric},
      {OpKind::k_sin, sin, -4, 4, false, false, kNumeric},
      {OpKind::k_cos, cos, -4, 4, false, false, kNumeric},
  };
  for (const UnarySpec& s : specs) add_unary(t, s);

  // pow by a constant exponent: integer exponents keep integer dtypes.
  struct PowSpec {
    const char* name;
    double exponent, lo;
    std::vector<DType> dtypes;
  };
  for (const PowSpec& p : std::vector<PowSpec>{{"square", 2.0, -2, kNumeric},
                                               {"cube", 3.0, -2, kNumeric},
                                               {"sqrt", 0.5, 0.2, kFloats},
                                               {"neg_fraction", -1.5, 0.3, kFloats},
                                               {"zero", 0.0, -2, kNumeric}}) {
    double ex = p.exponent, lo = p.lo;
    t.push_back({.op = OpKind::k_pow_scalar,
                 .name = p.name,
                 .dtypes = p.dtypes,
                 .make = [lo](CaseEnv& e) -> Inputs {
                   return {e.data({3, 1, 5}, lo, 2.0)};
                 },
                 .run = [ex](const Inputs& in, const CaseEnv&) { return pow(in[0], ex); }});
  }
  t.push_back({.op = OpKind::k_pow_scalar,
               .name = "rank0_empty",
               .dtypes = kFloats,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.data({0, 2}, 0.5, 2)};
               },
               .run = [](const Inputs& in, const CaseEnv&) { return pow(in[0], 2.5); },
               .grad = false});
}

struct BinarySpec {
  OpKind op;
  BinaryFn fn;
  ScalarFn scalar_fn;  // the (Tensor, double) overload, or nullptr
  std::vector<DType> dtypes;
  bool positive_a = false;  // pow: base > 0
  bool nonzero_b = false;   // div: divisor away from 0 (integers: 1..3, never 0)
  bool no_ties = false;     // maximum/minimum: a and b never within 0.125
};

void add_binary(std::vector<OpCase>& t, const BinarySpec& s) {
  auto operands = [s](const Shape& sa, const Shape& sb) {
    return [s, sa, sb](CaseEnv& e) -> Inputs {
      if (s.no_ties) return {e.distinct(sa, 0.25), add(e.distinct(sb, 0.25), 0.125)};
      Tensor a = s.positive_a ? e.data(sa, 0.5, 2.0) : e.data(sa);
      // CaseEnv::away keeps 0 in integer dtypes; an integer 0 divisor made
      // 0 / 0 = NaN on both devices, which compared equal to anything NaN.
      Tensor b = !s.nonzero_b             ? e.data(sb)
                 : is_floating(e.dtype()) ? e.away(sb, 0.5)
                                          : e.grid(sb, 1, 3);
      return {a, b};
    };
  };
  auto run = [fn = s.fn](const Inputs& in, const CaseEnv&) { return fn(in[0], in[1]); };
  auto add_case = [&](const char* name, const Shape& sa, const Shape& sb, bool grad = true) {
    t.push_back({.op = s.op,
                 .name = name,
                 .dtypes = s.dtypes,
                 .make = operands(sa, sb),
                 .run = run,
                 .grad = grad});
  };
  add_case("same_shape", {5, 7}, {5, 7});
  add_case("broadcast_row", {4, 9}, {9});
  add_case("broadcast_both", {3, 1, 5}, {1, 4, 1});
  add_case("rank0_operand", {6}, {});
  add_case("rank0_both", {}, {});
  add_case("empty", {0, 3}, {3}, false);
  add_case("tail_37", {2, 37}, {2, 37}, false);
  if (s.scalar_fn) {
    t.push_back(
        {.op = s.op,
         .name = "python_scalar",
         .dtypes = s.dtypes,
         .make = [](CaseEnv& e) -> Inputs {
           return {e.data({3, 11}, 0.5, 2.0)};
         },
         .run = [f = s.scalar_fn](const Inputs& in, const CaseEnv&) { return f(in[0], 1.75); },
         .grad = !s.no_ties});
  }
  // An i64 second operand: promotion (f32 + i64 -> f32, i32 + i64 -> i64).
  t.push_back({.op = s.op,
               .name = "mixed_dtype_i64",
               .dtypes = s.dtypes,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.data({4, 6}, 0.5, 2.0), e.grid({4, 6}, 1, 3, 1.0).to(DType::i64)};
               },
               .run = run,
               .grad = !s.no_ties});
  if (!s.no_ties) return;
  t.push_back({.op = s.op,
               .name = "ties",
               .dtypes = s.dtypes,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.grid({6, 5}, -2, 2), e.grid({6, 5}, -2, 2)};
               },
               .run = run,
               .grad = false});
}

void add_binary_cases(std::vector<OpCase>& t) {
  std::vector<DType> numeric_bool = kAll;
  const std::vector<BinarySpec> specs = {
      {OpKind::k_add, add, add, kAll},
      {OpKind::k_sub, sub, sub, kNumeric},
      {OpKind::k_mul, mul, mul, kAll},
      {OpKind::k_div, div, div, kNumeric, false, true},
      {OpKind::k_maximum, maximum, maximum, kNumeric, false, false, true},
      {OpKind::k_minimum, minimum, minimum, kNumeric, false, false, true},
      {OpKind::k_pow, pow, nullptr, kFloats, true},
  };
  for (const BinarySpec& s : specs) add_binary(t, s);
  t.push_back({.op = OpKind::k_pow,
               .name = "integers",
               .dtypes = {DType::i32, DType::i64},
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.grid({3, 4}, -3, 3), e.grid({4}, 0, 3)};
               },
               .run = [](const Inputs& in, const CaseEnv&) { return pow(in[0], in[1]); },
               .grad = false});
  t.push_back({.op = OpKind::k_div,
               .name = "by_zero",
               .dtypes = kFloats,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.values({1, -1, 0, 2}, {4}), e.values({0, 0, 0, -0.0}, {4})};
               },
               .run = [](const Inputs& in, const CaseEnv&) { return div(in[0], in[1]); },
               .grad = false,
               .nan_expected = true});  // 0 / 0
}

// gelu_backward(grad, x) = grad * gelu'(x): grad in [-2, 2), x in [-4, 4)
// (both tails, the root of gelu' near -0.75), broadcasts on either side, a
// run over two cpu chunks, a mixed-dtype pair and special values of x.
void add_gelu_backward_cases(std::vector<OpCase>& t) {
  for (OpKind op : {OpKind::k_gelu_backward, OpKind::k_gelu_tanh_backward}) {
    auto run = [op](const Inputs& in, const CaseEnv&) {
      return autograd::apply(op, {in[0], in[1]}, {});
    };
    auto pair = [](Shape sg, Shape sx) {
      return [sg, sx](CaseEnv& e) -> Inputs { return {e.data(sg), e.data(sx, -4, 4)}; };
    };
    auto add_case = [&](const char* name, Shape sg, Shape sx, bool grad = true) {
      t.push_back({.op = op,
                   .name = name,
                   .dtypes = kFloats,
                   .make = pair(sg, sx),
                   .run = run,
                   .grad = grad});
    };
    add_case("same_shape", {5, 7}, {5, 7});
    add_case("broadcast_grad_row", {9}, {4, 9});
    add_case("broadcast_x_column", {3, 5}, {3, 1});
    add_case("rank0", {}, {});
    add_case("empty", {0, 3}, {3}, false);
    add_case("two_chunks_1100", {2, 1100}, {2, 1100}, false);
    t.push_back({.op = op,
                 .name = "mixed_dtype_f32_x",
                 .dtypes = kFloats,
                 .make = [](CaseEnv& e) -> Inputs {
                   return {e.data({4, 6}), e.data({4, 6}, -4, 4, DType::f32)};
                 },
                 .run = run});
    std::vector<double> x = {0.0, -0.0, 1.0, -1.0, kNaN, 30.0, -30.0, 100.0, -100.0, kInf, -kInf};
    std::vector<double> g = {1.0, -1.5, 2.0, kInf, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
    t.push_back({.op = op,
                 .name = "special_values",
                 .dtypes = kFloats,
                 .make = [x, g](CaseEnv& e) -> Inputs {
                   return {e.values(g, {11}), e.values(x, {11})};
                 },
                 .run = run,
                 .grad = false,
                 .nan_expected = true});  // NaN x, and x = +-inf: inf * 0 in gelu'
  }
}

void add_compare_cases(std::vector<OpCase>& t) {
  const std::vector<std::pair<OpKind, BinaryFn>> fns = {{OpKind::k_eq, eq}, {OpKind::k_ne, ne},
                                                        {OpKind::k_lt, lt}, {OpKind::k_le, le},
                                                        {OpKind::k_gt, gt}, {OpKind::k_ge, ge}};
  const std::vector<std::pair<OpKind, ScalarFn>> scalar_fns = {
      {OpKind::k_eq, eq}, {OpKind::k_ne, ne}, {OpKind::k_lt, lt},
      {OpKind::k_le, le}, {OpKind::k_gt, gt}, {OpKind::k_ge, ge}};
  for (size_t i = 0; i < fns.size(); ++i) {
    auto [op, fn] = fns[i];
    ScalarFn sfn = scalar_fns[i].second;
    auto run = [fn](const Inputs& in, const CaseEnv&) { return fn(in[0], in[1]); };
    auto pair = [](Shape sa, Shape sb) {
      return [sa, sb](CaseEnv& e) -> Inputs { return {e.grid(sa, -2, 2), e.grid(sb, -2, 2)}; };
    };
    t.push_back({.op = op,
                 .name = "ties",
                 .dtypes = kAll,
                 .make = pair({5, 6}, {5, 6}),
                 .run = run,
                 .attrs = ops::Attrs{}});
    t.push_back({.op = op,
                 .name = "broadcast",
                 .dtypes = kAll,
                 .make = pair({3, 1, 4}, {5, 1}),
                 .run = run});
    t.push_back({.op = op, .name = "rank0", .dtypes = kAll, .make = pair({}, {}), .run = run});
    t.push_back({.op = op, .name = "empty", .dtypes = kAll, .make = pair({0}, {1}), .run = run});
    t.push_back({.op = op,
                 .name = "python_scalar",
                 .dtypes = kNumeric,
                 .make = [](CaseEnv& e) -> Inputs { return {e.grid({17}, -2, 2)}; },
                 .run = [sfn](const Inputs& in, const CaseEnv&) { return sfn(in[0], 1.0); }});
    t.push_back({.op = op,
                 .name = "mixed_dtype_i64",
                 .dtypes = kAll,
                 .make = [](CaseEnv& e) -> Inputs {
                   return {e.grid({9}, -2, 2), e.grid({9}, -2, 2).to(DType::i64)};
                 },
                 .run = run});
    t.push_back({.op = op,
                 .name = "special_values",
                 .dtypes = kFloats,
                 .make = [](CaseEnv& e) -> Inputs {
                   return {e.values({kNaN, 1, kInf, -kInf, 0, -0.0, kNaN}, {7}),
                           e.values({kNaN, kNaN, kInf, 1, -0.0, 0, 1}, {7})};
                 },
                 .run = run,
                 .nan_expected = true});  // NaN operands, inf - inf, 0 / 0
  }
}

void add_where_cases(std::vector<OpCase>& t) {
  auto run = [](const Inputs& in, const CaseEnv&) { return where(in[0], in[1], in[2]); };
  auto operands = [](Shape sc, Shape sa, Shape sb) {
    return [sc, sa, sb](CaseEnv& e) -> Inputs {
      return {e.data(sc, 0, 1, DType::boolean), e.data(sa), e.data(sb)};
    };
  };
  t.push_back({.op = OpKind::k_where,
               .name = "same_shape",
               .dtypes = kAll,
               .make = operands({4, 5}, {4, 5}, {4, 5}),
               .run = run});
  t.push_back({.op = OpKind::k_where,
               .name = "broadcast",
               .dtypes = kAll,
               .make = operands({4, 1}, {5}, {4, 5}),
               .run = run});
  t.push_back({.op = OpKind::k_where,
               .name = "rank0",
               .dtypes = kAll,
               .make = operands({}, {}, {}),
               .run = run});
  t.push_back({.op = OpKind::k_where,
               .name = "empty",
               .dtypes = kAll,
               .make = operands({0, 3}, {3}, {1, 3}),
               .run = run,
               .grad = false});
  t.push_back({.op = OpKind::k_where,
               .name = "python_scalar",
               .dtypes = kNumeric,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.data({3, 9}, 0, 1, DType::boolean), e.data({3, 9})};
               },
               .run = [](const Inputs& in, const CaseEnv&) { return where(in[0], in[1], -1.5); }});
  t.push_back({.op = OpKind::k_where,
               .name = "mixed_dtype_i64",
               .dtypes = kAll,
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.data({2, 7}, 0, 1, DType::boolean), e.data({2, 7}),
                         e.grid({7}, -3, 3).to(DType::i64)};
               },
               .run = run});
}

void add_cast_cases(std::vector<OpCase>& t) {
  // Operands on a grid of 1/8 (exact in every float dtype) so the gradient
  // check with a step of 1/8 is exact for casts to bf16/f16.
  auto to = [](DType target) {
    return [target](const Inputs& in, const CaseEnv&) { return cast(in[0], target); };
  };
  auto grid = [](Shape s) {
    return [s](CaseEnv& e) -> Inputs { return {e.grid(s, -3, 3, 0.125)}; };
  };
  t.push_back({.op = OpKind::k_cast,
               .name = "to_bf16",
               .dtypes = kAll,
               .make = grid({3, 17}),
               .run = to(DType::bf16),
               .grad_eps = 0.125});
  t.push_back({.op = OpKind::k_cast,
               .name = "to_f16",
               .dtypes = kAll,
               .make = grid({2, 1, 9}),
               .run = to(DType::f16),
               .grad_eps = 0.125});
  t.push_back({.op = OpKind::k_cast,
               .name = "to_f32_rank0",
               .dtypes = {DType::bf16, DType::f16, DType::i32, DType::i64, DType::boolean},
               .make = grid({}),
               .run = to(DType::f32)});
  // Halves truncate toward zero; a step of 1/8 never crosses an integer.
  auto halves = [](CaseEnv& e) -> Inputs {
    return {add(e.grid({4, 6}, -4, 3, 1.0), e.values({0.5}, {}, e.dtype()))};
  };
  t.push_back({.op = OpKind::k_cast,
               .name = "to_i32_truncates",
               .dtypes = kFloats,
               .make = halves,
               .run = to(DType::i32),
               .grad_eps = 0.125});
  t.push_back({.op = OpKind::k_cast,
               .name = "to_i64",
               .dtypes = kAll,
               .make = grid({5, 3}),
               .run = to(DType::i64),
               .grad = false});
  t.push_back({.op = OpKind::k_cast,
               .name = "to_bool",
               .dtypes = kNumeric,
               .make = grid({11}),
               .run = to(DType::boolean),
               .grad = false});
  t.push_back({.op = OpKind::k_cast,
               .name = "empty",
               .dtypes = kAll,
               .make = grid({0, 4}),
               .run = to(DType::f16),
               .grad = false});
  t.push_back({.op = OpKind::k_cast,
               .name = "special_to_half",
               .dtypes = {DType::f32},
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.values({kNaN, kInf, -kInf, 65504, 65520, 1e-8, -0.0, 3.0e38}, {8})};
               },
               .run = to(DType::f16),
               .grad = false,
               .nan_expected = true});  // NaN casts to NaN
  t.push_back({.op = OpKind::k_cast,
               .name = "special_to_bf16",
               .dtypes = {DType::f32},
               .make = [](CaseEnv& e) -> Inputs {
                 return {e.values({kNaN, kInf, -kInf, 3.4e38, 1.0 + 1.0 / 256, 1e-40, -0.0}, {7})};
               },
               .run = to(DType::bf16),
               .grad = false,
               .nan_expected = true});  // NaN casts to NaN
}

}  // namespace

void add_elementwise_cases(std::vector<OpCase>& t) {
  add_unary_cases(t);
  add_binary_cases(t);
  add_gelu_backward_cases(t);
  add_compare_cases(t);
  add_where_cases(t);
  add_cast_cases(t);
}

}  // namespace loom::optest
