// cpu vs reference for the reductions: every axis set of a rank-3 tensor
// (last axes = contiguous rows, leading and middle axes = column path,
// separated axes = permuted copy), keepdim, size-1 and empty dims, a long
// row (split into fixed pieces across threads), NaN propagation, int and
// bool inputs. Every test runs at 1, 2 and 4 threads in the same process: the
// kernels take different paths by thread count (a long row is split across
// threads only when there are fewer rows than threads), so a bug in one path
// cannot hide behind the machine's OMP_NUM_THREADS.
#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "loom/parallel.h"

namespace loom::cpu_test {
namespace {

using ops::OpKind;

const std::vector<int64_t> kAxisSets[] = {{},     {0},    {1},    {2},      {0, 1},
                                          {1, 2}, {0, 2}, {2, 0}, {0, 1, 2}};

// The fixture sets the thread count for one test and restores it after.
class CpuReduce : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    saved_ = get_num_threads();
    set_num_threads(GetParam());
  }
  void TearDown() override { set_num_threads(saved_); }

 private:
  int saved_ = 1;
};

std::string axes_str(const std::vector<int64_t>& axes) {
  std::string s = "{";
  for (int64_t a : axes) s += std::to_string(a) + ",";
  return s + "}";
}

TEST_P(CpuReduce, EveryAxisSetFloat) {
  for (const Shape& shape : {Shape{6, 7, 9}, Shape{3, 1, 300}, Shape{1, 5, 1}, Shape{2, 260, 3}})
    for (DType dt : {DType::f32, DType::bf16})
      for (const auto& axes : kAxisSets)
        for (bool keepdim : {false, true})
          for (OpKind op :
               {OpKind::k_sum, OpKind::k_mean, OpKind::k_max, OpKind::k_min, OpKind::k_var}) {
            ops::Attrs a;
            a.axes = axes;
            a.keepdim = keepdim;
            a.correction = 1;
            Operand x = random_operand(shape, dt, 21);
            expect_match(
                op, a, {x},
                std::string(ops::op_name(op)) + " " + describe(x) + " axes " + axes_str(axes));
          }
}

TEST_P(CpuReduce, VarCorrectionZeroAndSingleElement) {
  for (int64_t correction : {0, 1, 2}) {
    ops::Attrs a;
    a.axes = {1};
    a.correction = correction;
    expect_match(OpKind::k_var, a, {random_operand({4, 5}, DType::f32, 2)}, "var correction");
    expect_match(OpKind::k_var, a, {random_operand({4, 1}, DType::f32, 2)}, "var of one element");
  }
}

TEST_P(CpuReduce, ArgmaxEachAxis) {
  for (const Shape& shape : {Shape{6, 7, 9}, Shape{1, 300, 2}, Shape{1000}})
    for (DType dt : {DType::f32, DType::bf16, DType::i64, DType::i32})
      for (int64_t axis = 0; axis < static_cast<int64_t>(shape.size()); ++axis) {
        ops::Attrs a;
        a.axes = {axis};
        Operand x = random_operand(shape, dt, 5, -50, 50);  // ints: ties test the first index rule
        expect_match(OpKind::k_argmax, a, {x},
                     "argmax " + describe(x) + " axis " + std::to_string(axis));
      }
  ops::Attrs all;  // all axes: index into the flattened tensor
  expect_match(OpKind::k_argmax, all, {random_operand({4, 5, 6}, DType::f32, 8)}, "argmax all");
}

TEST_P(CpuReduce, NanPropagation) {
  const double nan = std::nan("");
  Operand x = operand_of({1, nan, 3, 4, 5, 6, nan, 0, 2, 9, 8, 7}, {3, 4}, DType::f32);
  for (OpKind op : {OpKind::k_max, OpKind::k_min, OpKind::k_argmax, OpKind::k_sum})
    for (int64_t axis : {0, 1}) {
      ops::Attrs a;
      a.axes = {axis};
      expect_match(op, a, {x}, std::string(ops::op_name(op)) + " NaN axis " + std::to_string(axis));
    }
}

TEST_P(CpuReduce, LongRowIsSplitAcrossThreads) {
  Operand x = random_operand({2, 300001}, DType::f32, 9, -1, 3);
  for (OpKind op : {OpKind::k_sum, OpKind::k_mean, OpKind::k_max, OpKind::k_min, OpKind::k_var}) {
    ops::Attrs a;
    a.axes = {1};
    a.correction = 1;
    expect_match(op, a, {x}, std::string(ops::op_name(op)) + " long rows");
    ops::Attrs all;
    all.correction = 1;
    expect_match(op, all, {x}, std::string(ops::op_name(op)) + " all");
  }
}

// Column sums (bias gradients) add the rows in order in double, so a sum
// over the leading axis equals that order's double sum rounded to f32 bit for
// bit: whole 64-column blocks (the register path) and a 22-column tail.
TEST_P(CpuReduce, ColumnSumsAddRowsInOrder) {
  const int64_t rows = 517, cols = 150;
  Operand x = random_operand({rows, cols}, DType::f32, 33, -3, 5);
  ops::Attrs a;
  a.axes = {0};
  std::vector<double> got = run_on(backends::cpu_backend(), OpKind::k_sum, a, {x});
  const float* v = static_cast<const float*>(x.buffer->data());
  ASSERT_EQ(got.size(), static_cast<size_t>(cols));
  for (int64_t j = 0; j < cols; ++j) {
    double acc = 0;
    for (int64_t r = 0; r < rows; ++r) acc += v[r * cols + j];
    EXPECT_EQ(got[j], static_cast<double>(static_cast<float>(acc))) << "column " << j;
  }
}

TEST_P(CpuReduce, IntegerAndBoolInputs) {
  for (DType dt : {DType::i64, DType::i32, DType::boolean})
    for (const auto& axes : kAxisSets)
      for (OpKind op : {OpKind::k_sum, OpKind::k_max, OpKind::k_min}) {
        ops::Attrs a;
        a.axes = axes;
        Operand x = random_operand({5, 6, 7}, dt, 13, -100, 100);
        expect_match(op, a, {x},
                     std::string(ops::op_name(op)) + " " + describe(x) + " " + axes_str(axes));
      }
}

TEST_P(CpuReduce, EmptyInputs) {
  ops::Attrs a;
  a.axes = {1};
  a.correction = 1;
  for (OpKind op : {OpKind::k_sum, OpKind::k_mean, OpKind::k_var})
    expect_match(op, a, {random_operand({3, 0}, DType::f32, 1)},
                 std::string(ops::op_name(op)) + " [3,0]");
  a.axes = {0};
  for (OpKind op : {OpKind::k_sum, OpKind::k_max, OpKind::k_argmax})
    expect_match(op, a, {random_operand({3, 0}, DType::f32, 1)},
                 std::string(ops::op_name(op)) + " [3,0] axis 0");
  ops::Attrs scalar;
  for (OpKind op : {OpKind::k_sum, OpKind::k_max, OpKind::k_mean})
    expect_match(op, scalar, {random_operand({}, DType::f32, 1)},
                 std::string(ops::op_name(op)) + " rank 0");
}

INSTANTIATE_TEST_SUITE_P(Threads, CpuReduce, ::testing::Values(1, 2, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "_threads";
                         });

}  // namespace
}  // namespace loom::cpu_test
