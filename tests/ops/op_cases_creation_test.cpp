// Op test table, creation family: full (zeros/ones), arange, and the random
// ops uniform (rand) and normal (randn), each seeded inside the case so both
// devices draw the same Philox stream. (Table entries only; see op_cases.h.)
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;

Inputs no_operands(CaseEnv&) { return {}; }

ops::Attrs creation_attrs(Shape shape, double range_step, DType dtype) {
  ops::Attrs a;
  a.shape = std::move(shape);
  a.range_step = range_step;
  a.dtype = dtype;
  return a;
}

void add_full_cases(std::vector<OpCase>& t) {
  t.push_back({.op = OpKind::k_full,
               .name = "zeros",
               .dtypes = kAll,
               .make = no_operands,
               .run =
                   [](const Inputs&, const CaseEnv& e) {
                     return zeros({3, 5}, e.dtype(), e.device());
                   },
               .attrs = creation_attrs({3, 5}, 0.0, DType::f32)});
  t.push_back(
      {.op = OpKind::k_full,
       .name = "ones_rank0",
       .dtypes = kAll,
       .make = no_operands,
       .run = [](const Inputs&, const CaseEnv& e) { return ones({}, e.dtype(), e.device()); }});
  t.push_back({.op = OpKind::k_full,
               .name = "negative_fraction",
               .dtypes = kAll,
               .make = no_operands,
               .run = [](const Inputs&, const CaseEnv& e) {
                 return full({2, 1, 9}, -1.75, e.dtype(), e.device());
               }});
  t.push_back({.op = OpKind::k_full,
               .name = "empty",
               .dtypes = kAll,
               .make = no_operands,
               .run = [](const Inputs&, const CaseEnv& e) {
                 return full({0, 4}, 3.0, e.dtype(), e.device());
               }});
}

void add_arange_cases(std::vector<OpCase>& t) {
  auto range = [](double start, double end, double step) {
    return [=](const Inputs&, const CaseEnv& e) {
      return arange(start, end, step, e.dtype(), e.device());
    };
  };
  t.push_back({.op = OpKind::k_arange,
               .name = "int_range",
               .dtypes = kNumeric,
               .make = no_operands,
               .run = range(0, 10, 1),
               .attrs = creation_attrs({10}, 1.0, DType::f32)});
  t.push_back({.op = OpKind::k_arange,
               .name = "float_step",
               .dtypes = kFloats,
               .make = no_operands,
               .run = range(-1.5, 2.0, 0.25)});
  t.push_back({.op = OpKind::k_arange,
               .name = "negative_step",
               .dtypes = kNumeric,
               .make = no_operands,
               .run = range(5, -2, -1.5)});
  t.push_back({.op = OpKind::k_arange,
               .name = "empty",
               .dtypes = kNumeric,
               .make = no_operands,
               .run = range(3, 3, 1)});
  t.push_back({.op = OpKind::k_arange,
               .name = "end_only_37",
               .dtypes = kNumeric,
               .make = no_operands,
               .run = [](const Inputs&, const CaseEnv& e) {
                 return arange(int64_t{37}, e.dtype(), e.device());
               }});
}

void add_random_cases(std::vector<OpCase>& t) {
  using RandFn = Tensor (*)(const Shape&, DType, const Device&);
  for (auto [op, fn] : {std::pair<OpKind, RandFn>{OpKind::k_uniform, rand},
                        std::pair<OpKind, RandFn>{OpKind::k_normal, randn}}) {
    auto draw = [fn](Shape shape, uint64_t seed) {
      return [=](const Inputs&, const CaseEnv& e) {
        manual_seed(seed);
        return fn(shape, e.dtype(), e.device());
      };
    };
    t.push_back({.op = op,
                 .name = "matrix",
                 .dtypes = kFloats,
                 .make = no_operands,
                 .run = draw({5, 7}, 7),
                 .attrs = creation_attrs({5, 7}, 0.0, DType::f32)});
    t.push_back({.op = op,
                 .name = "odd_1d",
                 .dtypes = kFloats,
                 .make = no_operands,
                 .run = draw({37}, 1234567)});
    t.push_back(
        {.op = op, .name = "rank0", .dtypes = kFloats, .make = no_operands, .run = draw({}, 3)});
    t.push_back({.op = op,
                 .name = "empty",
                 .dtypes = kFloats,
                 .make = no_operands,
                 .run = draw({0, 3}, 3)});
    // A later draw of the same seed: offset 1, a different stream.
    t.push_back({.op = op,
                 .name = "second_draw",
                 .dtypes = kFloats,
                 .make = no_operands,
                 .run = [fn](const Inputs&, const CaseEnv& e) {
                   manual_seed(99);
                   fn({9}, e.dtype(), e.device());
                   return fn({2, 9}, e.dtype(), e.device());
                 }});
  }
}

}  // namespace

void add_creation_cases(std::vector<OpCase>& t) {
  add_full_cases(t);
  add_arange_cases(t);
  add_random_cases(t);
}

}  // namespace loom::optest
