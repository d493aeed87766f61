// cpu vs reference for the elementwise kernels: every unary op over a dtype
// sweep and lengths around the vector width (8 floats) and the conversion
// chunk (1024), every broadcast fast path of the binary ops (same shape,
// scalar either side, row, column, middle, empty), the GELU gradient ops
// (same paths, float dtypes, special values), comparisons, where, cast
// between all dtypes (incl. NaN/inf to integers), full and arange.
#include <cmath>
#include <limits>

#include "backends/cpu_test_util.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

const Shape kLengths[] = {{0}, {1}, {7}, {8}, {9}, {1031}, {3, 0, 2}, {33, 65}, {}};

struct UnaryCase {
  OpKind op;
  double lo, hi;  // input range where the op is defined
};

const UnaryCase kUnary[] = {
    {OpKind::k_neg, -5, 5},    {OpKind::k_abs, -5, 5},   {OpKind::k_exp, -20, 20},
    {OpKind::k_log, 1e-3, 50}, {OpKind::k_sqrt, 0, 50},  {OpKind::k_rsqrt, 1e-3, 50},
    {OpKind::k_tanh, -6, 6},   {OpKind::k_erf, -4, 4},   {OpKind::k_sigmoid, -15, 15},
    {OpKind::k_relu, -3, 3},   {OpKind::k_gelu, -6, 6},  {OpKind::k_gelu_tanh, -6, 6},
    {OpKind::k_sin, -10, 10},  {OpKind::k_cos, -10, 10}, {OpKind::k_sign, -3, 3},
};

TEST(CpuElementwise, UnaryMatchesReferenceOverDtypesAndLengths) {
  for (const UnaryCase& u : kUnary)
    for (DType dt : {DType::f32, DType::bf16, DType::f16, DType::i64})
      for (const Shape& shape : kLengths) {
        if (dt == DType::i64 && u.lo > 0) continue;
        Operand x = random_operand(shape, dt, 7, u.lo, u.hi);
        ops::Attrs attrs;
        expect_match(u.op, attrs, {x}, std::string(ops::op_name(u.op)) + " " + describe(x));
      }
}

TEST(CpuElementwise, UnarySpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> v = {0.0,    -0.0, inf,   -inf,  nan,    1e-30,
                           -1e-30, 88.0, -88.0, 100.0, -100.0, 1.0};
  for (OpKind op :
       {OpKind::k_exp, OpKind::k_sigmoid, OpKind::k_tanh, OpKind::k_relu, OpKind::k_gelu,
        OpKind::k_gelu_tanh, OpKind::k_abs, OpKind::k_neg, OpKind::k_sign, OpKind::k_erf})
    expect_match(op, {}, {operand_of(v, {12}, DType::f32)},
                 std::string(ops::op_name(op)) + " specials", {1e-6, 1e-30});
}

TEST(CpuElementwise, PowScalarExponents) {
  for (double e : {0.0, 1.0, 2.0, 3.0, -1.0, 0.5, -0.5, 1.7}) {
    ops::Attrs a;
    a.exponent = e;
    expect_match(OpKind::k_pow_scalar, a, {random_operand({1029}, DType::f32, 3, 0.01, 4)},
                 "pow_scalar f32 e=" + std::to_string(e));
    expect_match(OpKind::k_pow_scalar, a, {random_operand({17}, DType::bf16, 3, 0.01, 4)},
                 "pow_scalar bf16 e=" + std::to_string(e));
  }
  ops::Attrs a;
  a.exponent = 3;  // integer power of integers stays integer
  expect_match(OpKind::k_pow_scalar, a, {random_operand({19}, DType::i64, 3, -9, 9)},
               "pow_scalar i64");
}

// Shape pairs that exercise each BroadcastPlan path.
const std::pair<Shape, Shape> kBroadcasts[] = {
    {{37, 129}, {37, 129}},    // same shape
    {{37, 129}, {}},           // scalar right
    {{}, {37, 129}},           // scalar left
    {{37, 129}, {129}},        // row broadcast (bias)
    {{37, 129}, {37, 1}},      // column broadcast
    {{37, 1}, {37, 129}},      // column broadcast, left
    {{4, 1, 33}, {1, 5, 33}},  // both broadcast, middle
    {{4, 5, 1}, {1, 1, 7}},    // outer product
    {{2, 1, 3, 1}, {1, 4, 1, 5}},
    {{0, 3}, {3}},  // empty
    {{1}, {1}},
    {{3000}, {3000}},  // longer than one conversion chunk
};

const OpKind kArith[] = {OpKind::k_add,     OpKind::k_sub,     OpKind::k_mul, OpKind::k_div,
                         OpKind::k_maximum, OpKind::k_minimum, OpKind::k_pow};
const OpKind kCompares[] = {OpKind::k_eq, OpKind::k_ne, OpKind::k_lt,
                            OpKind::k_le, OpKind::k_gt, OpKind::k_ge};

TEST(CpuElementwise, BinaryBroadcastPathsAndDtypes) {
  const std::pair<DType, DType> kTypes[] = {{DType::f32, DType::f32}, {DType::bf16, DType::bf16},
                                            {DType::f16, DType::f16}, {DType::f32, DType::bf16},
                                            {DType::i64, DType::i64}, {DType::i32, DType::i64},
                                            {DType::f32, DType::i64}, {DType::bf16, DType::f16}};
  for (const auto& [sa, sb] : kBroadcasts)
    for (const auto& [ta, tb] : kTypes) {
      Operand a = random_operand(sa, ta, 11, 0.1, 3);  // positive: pow stays real
      Operand b = random_operand(sb, tb, 12, 0.1, 3);
      if (!is_floating(tb)) b = random_operand(sb, tb, 12, 1, 4);  // no division by 0
      for (OpKind op : kArith) {
        expect_match(op, {}, {a, b},
                     std::string(ops::op_name(op)) + " " + describe(a) + " " + describe(b));
      }
      for (OpKind op : kCompares)
        expect_match(op, {}, {a, b},
                     std::string(ops::op_name(op)) + " " + describe(a) + " " + describe(b));
    }
}

// gelu_backward(grad, x) / gelu_tanh_backward: their own kernel
// (gelu_backward.cpp) over the same broadcast paths, float dtype pairs, x
// out to both tails.
TEST(CpuElementwise, GeluBackwardBroadcastPathsAndDtypes) {
  const std::pair<DType, DType> kTypes[] = {{DType::f32, DType::f32},  {DType::bf16, DType::bf16},
                                            {DType::f16, DType::f16},  {DType::f32, DType::bf16},
                                            {DType::bf16, DType::f32}, {DType::bf16, DType::f16}};
  for (const auto& [sg, sx] : kBroadcasts)
    for (const auto& [tg, tx] : kTypes) {
      Operand g = random_operand(sg, tg, 13, -2, 2);
      Operand x = random_operand(sx, tx, 14, -7, 7);
      for (OpKind op : {OpKind::k_gelu_backward, OpKind::k_gelu_tanh_backward})
        expect_match(op, {}, {g, x},
                     std::string(ops::op_name(op)) + " " + describe(g) + " " + describe(x));
    }
}

TEST(CpuElementwise, GeluBackwardSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> x = {0.0,  -0.0,  inf,  -inf,  nan,   1e-30,  -1e-30,
                           10.0, -10.0, 13.0, -13.0, 100.0, -100.0, -0.7517916};
  std::vector<double> g(x.size(), 1.0);
  g[0] = inf;
  g[1] = -2.5;
  auto n = static_cast<int64_t>(x.size());
  // Near gelu's root (-0.75179) the f32 terms (~0.23) cancel: an absolute
  // floor of 5e-8, about three ulp of those terms, there.
  for (OpKind op : {OpKind::k_gelu_backward, OpKind::k_gelu_tanh_backward})
    expect_match(op, {}, {operand_of(g, {n}, DType::f32), operand_of(x, {n}, DType::f32)},
                 std::string(ops::op_name(op)) + " specials", {1e-6, 5e-8});
}

TEST(CpuElementwise, IntegerArithmeticIsExact) {
  Operand a = random_operand({5, 9}, DType::i64, 1, -1000, 1000);
  Operand b = random_operand({9}, DType::i32, 2, -1000, 1000);
  for (OpKind op :
       {OpKind::k_add, OpKind::k_sub, OpKind::k_mul, OpKind::k_maximum, OpKind::k_minimum})
    expect_match(op, {}, {a, b}, std::string(ops::op_name(op)) + " ints", {0, 0});
  Operand c = random_operand({5, 9}, DType::boolean, 3), d = random_operand({9}, DType::boolean, 4);
  for (OpKind op : {OpKind::k_add, OpKind::k_mul, OpKind::k_maximum, OpKind::k_eq, OpKind::k_lt})
    expect_match(op, {}, {c, d}, std::string(ops::op_name(op)) + " bools", {0, 0});
}

TEST(CpuElementwise, MaximumMinimumPropagateNan) {
  const double nan = std::nan("");
  Operand a = operand_of({nan, 1, nan, -2, 0}, {5}, DType::f32);
  Operand b = operand_of({1, nan, nan, 3, -0.0}, {5}, DType::f32);
  for (OpKind op : {OpKind::k_maximum, OpKind::k_minimum, OpKind::k_eq, OpKind::k_ne, OpKind::k_lt})
    expect_match(op, {}, {a, b}, std::string(ops::op_name(op)) + " NaN", {0, 0});
}

TEST(CpuElementwise, WhereBroadcastsAndPromotes) {
  const std::vector<Shape> kShapes[] = {{{7, 33}, {7, 33}, {7, 33}},
                                        {{7, 1}, {7, 33}, {}},
                                        {{33}, {}, {7, 33}},
                                        {{1, 1}, {7, 1}, {1, 33}},
                                        {{1, 1, 5, 1}, {1, 3, 5, 8}, {}},  // a KV cache's rows
                                        {{1, 1, 5, 1}, {}, {2, 3, 5, 8}},
                                        {{0, 4}, {4}, {1}}};
  for (const auto& s : kShapes)
    for (auto [ta, tb] :
         {std::pair{DType::f32, DType::f32}, std::pair{DType::bf16, DType::f32},
          std::pair{DType::i64, DType::i32}, std::pair{DType::boolean, DType::boolean}}) {
      Operand c = random_operand(s[0], DType::boolean, 5);
      Operand a = random_operand(s[1], ta, 6), b = random_operand(s[2], tb, 7);
      expect_match(OpKind::k_where, {}, {c, a, b},
                   "where " + describe(c) + describe(a) + describe(b));
    }
}

TEST(CpuElementwise, CastBetweenAllDtypes) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  std::vector<double> floats = {0,      1,   -1,   2.5, -2.5, 1e5, 65519, 65521,
                                3.0e38, inf, -inf, nan, 1e-8, 255, 256};
  std::vector<double> ints = {0,        1,    -1,  2,   -2, 100000, 65519, 65521,
                              16777217, -300, 255, 256, 7,  8,      9};
  for (DType from : kAllDTypes)
    for (DType to : kAllDTypes) {
      const std::vector<double>& v = is_floating(from) ? floats : ints;
      Operand x = operand_of(v, {static_cast<int64_t>(v.size())}, from);
      ops::Attrs a;
      a.dtype = to;
      expect_match(OpKind::k_cast, a, {x},
                   std::string("cast ") + dtype_name(from) + "->" + dtype_name(to), {0, 0});
      Operand big = random_operand({2051}, from, 9, -300, 300);
      expect_match(OpKind::k_cast, a, {big},
                   std::string("cast big ") + dtype_name(from) + "->" + dtype_name(to), {0, 0});
    }
}

TEST(CpuElementwise, FullAndArange) {
  for (DType dt : kAllDTypes) {
    ops::Attrs a;
    a.shape = {3, 1027};
    a.fill_value = -1.75;
    a.dtype = dt;
    expect_match(OpKind::k_full, a, {}, std::string("full ") + dtype_name(dt), {0, 0});
    ops::Attrs r;
    r.shape = {2000};
    r.range_start = -3;
    r.range_step = 0.37;
    r.dtype = dt;
    expect_match(OpKind::k_arange, r, {}, std::string("arange ") + dtype_name(dt), {0, 0});
  }
}

}  // namespace
}  // namespace loom::cpu_test
