// Op test table, cross-entropy's gradient ops: cross_entropy_backward
// (ignore_index, label smoothing, i32 targets, every row ignored) and
// fused_linear_cross_entropy (the same, over input [N, D] and weight [C, D];
// f32 only, as the op requires). Both are kNondiff: the autograd rule of
// cross_entropy emits the first, the fused_cross_entropy pass the second; the
// cases build them with autograd::apply. (Table entries only; see op_cases.h.)
#include "autograd/engine.h"
#include "ops/op_cases.h"

// Cases are designated initializers that leave later fields at their defaults.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace loom::optest {
namespace {

using ops::OpKind;

struct Spec {
  const char* name;
  int64_t n, c, d;
  std::vector<double> target;
  int64_t ignore_index;
  double smoothing;
  DType target_dtype;
};

const std::vector<Spec>& specs() {
  static const std::vector<Spec> s = {
      {"basic", 4, 7, 3, {3, 0, 6, 2}, -100, 0.0, DType::i64},
      {"ignore_index", 5, 3, 1, {2, -100, 0, -100, 1}, -100, 0.0, DType::i64},
      {"label_smoothing_i32", 4, 9, 5, {5, -100, 0, 3}, -100, 0.1, DType::i32},
      {"custom_ignore", 4, 3, 2, {2, 1, 2, 0}, 2, 0.2, DType::i64},
      {"all_ignored", 2, 4, 3, {-100, -100}, -100, 0.0, DType::i64}};
  return s;
}

ops::Attrs attrs_of(const Spec& s) {
  ops::Attrs a;
  a.ignore_index = s.ignore_index;
  a.label_smoothing = s.smoothing;
  return a;
}

}  // namespace

void add_cross_entropy_grad_cases(std::vector<OpCase>& t) {
  for (const Spec& s : specs()) {
    ops::Attrs a = attrs_of(s);
    t.push_back({.op = OpKind::k_cross_entropy_backward,
                 .name = s.name,
                 .dtypes = kFloats,
                 .make = [s](CaseEnv& e) -> Inputs {
                   return {e.data({s.n, s.c}, -3, 3), e.values(s.target, {s.n}, s.target_dtype),
                           e.values({0.75}, {})};
                 },
                 .run =
                     [a](const Inputs& in, const CaseEnv&) {
                       return autograd::apply(OpKind::k_cross_entropy_backward, in, a);
                     },
                 .reduce_len = s.c,
                 .grad = false,
                 .attrs = a});
    t.push_back({.op = OpKind::k_fused_linear_cross_entropy,
                 .name = s.name,
                 .dtypes = {DType::f32},
                 .make = [s](CaseEnv& e) -> Inputs {
                   return {e.data({s.n, s.d}, -1, 1), e.data({s.c, s.d}, -1, 1),
                           e.values(s.target, {s.n}, s.target_dtype), e.values({0.75}, {})};
                 },
                 .run =
                     [a](const Inputs& in, const CaseEnv&) {
                       return autograd::apply(OpKind::k_fused_linear_cross_entropy, in, a);
                     },
                 .reduce_len = s.c * s.d,
                 .grad = false,
                 // Every row ignored: the mean loss is 0/0 = NaN, as PyTorch's.
                 .nan_expected = s.name == std::string("all_ignored"),
                 .attrs = a});
  }
}

}  // namespace loom::optest
