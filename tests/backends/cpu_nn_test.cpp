// cpu vs reference for softmax / log_softmax (every axis: the row path and
// the column path; -inf and fully -inf rows), layer_norm (widths around the
// vector width, a large mean, bf16 with f32 weights), cross_entropy
// (ignore_index, label smoothing, all ignored -> NaN, bad target -> Error).
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "backends/kernel_backend.h"
#include "loom/error.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

TEST(CpuNn, SoftmaxEveryAxis) {
  for (const Shape& shape :
       {Shape{5, 7, 33}, Shape{3, 1000}, Shape{1, 1}, Shape{4, 300, 2}, Shape{0, 5}})
    for (DType dt : {DType::f32, DType::bf16, DType::f16})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis)
        for (OpKind op : {OpKind::k_softmax, OpKind::k_log_softmax}) {
          ops::Attrs a;
          a.axis = axis;
          Operand x = random_operand(shape, dt, 61, -8, 8);
          expect_match(
              op, a, {x},
              std::string(ops::op_name(op)) + " " + describe(x) + " axis " + std::to_string(axis));
        }
}

TEST(CpuNn, SoftmaxInfinities) {
  const double inf = INFINITY;
  Operand x =
      operand_of({0, -inf, 1, 2, -inf, -inf, -inf, -inf, 3, 3, 3, -inf}, {3, 4}, DType::f32);
  for (OpKind op : {OpKind::k_softmax, OpKind::k_log_softmax})
    for (int64_t axis : {0, 1}) {
      ops::Attrs a;
      a.axis = axis;
      expect_match(op, a, {x},
                   std::string(ops::op_name(op)) + " infinities axis " + std::to_string(axis));
    }
}

TEST(CpuNn, LayerNormWidthsAndDtypes) {
  for (int64_t dim : {1, 7, 8, 9, 64, 768, 1027})
    for (DType dt : {DType::f32, DType::bf16}) {
      ops::Attrs a;
      a.eps = 1e-5;
      Operand x = random_operand({5, dim}, dt, 71, -3, 3);
      Operand w = random_operand({dim}, dt, 72, 0.5, 1.5), b = random_operand({dim}, dt, 73);
      expect_match(OpKind::k_layer_norm, a, {x, w, b}, "layer_norm " + describe(x));
    }
  ops::Attrs a;
  a.eps = 1e-12;
  Operand x = random_operand({2, 3, 128}, DType::f32, 74, 99, 101);  // mean 100, std ~0.6
  Operand w = random_operand({128}, DType::f32, 75), b = random_operand({128}, DType::f32, 76);
  expect_match(OpKind::k_layer_norm, a, {x, w, b}, "layer_norm large mean", {1e-6, 2e-5});
  Operand xb = random_operand({4, 96}, DType::bf16, 77);
  Operand wf = random_operand({96}, DType::f32, 78), bf = random_operand({96}, DType::f32, 79);
  expect_match(OpKind::k_layer_norm, a, {xb, wf, bf}, "layer_norm bf16 x f32 weights");
  Operand w8 = random_operand({8}, DType::f32, 2), b8 = random_operand({8}, DType::f32, 3);
  expect_match(OpKind::k_layer_norm, a, {random_operand({0, 8}, DType::f32, 1), w8, b8},
               "layer_norm no rows");
}

TEST(CpuNn, CrossEntropyIgnoreAndSmoothing) {
  for (DType dt : {DType::f32, DType::bf16})
    for (double smoothing : {0.0, 0.1})
      for (DType tt : {DType::i64, DType::i32}) {
        Operand logits = random_operand({9, 37}, dt, 81, -6, 6);
        Operand target = operand_of({0, 36, -100, 5, 5, -100, 17, 1, 2}, {9}, tt);
        ops::Attrs a;
        a.ignore_index = -100;
        a.label_smoothing = smoothing;
        expect_match(OpKind::k_cross_entropy, a, {logits, target},
                     "cross_entropy " + describe(logits) + " eps " + std::to_string(smoothing));
      }
  ops::Attrs a;
  a.ignore_index = 3;  // a custom ignore_index that is also a valid class
  expect_match(OpKind::k_cross_entropy, a,
               {random_operand({4, 5}, DType::f32, 82), operand_of({3, 3, 3, 3}, {4}, DType::i64)},
               "cross_entropy all ignored");
  expect_match(OpKind::k_cross_entropy, a,
               {random_operand({300, 5000}, DType::f32, 83, -10, 10),
                random_operand({300}, DType::i64, 84, 0, 4999)},
               "cross_entropy large");
}

TEST(CpuNn, CrossEntropyBadTargetThrows) {
  ops::Attrs a;
  a.ignore_index = -100;
  Operand logits = random_operand({3, 4}, DType::f32, 1);
  Operand target = operand_of({1, 4, 0}, {3}, DType::i64);
  ops::TensorType out_t{{}, DType::f32};
  float out = 0;
  backends::OpCall call{OpKind::k_cross_entropy, &a, {logits.view(), target.view()}, {&out, out_t}};
  try {
    backends::cpu_backend().run(call);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "[cross_entropy] target 4 is out of range for 4 classes");
  }
}

}  // namespace
}  // namespace loom::cpu_test
