// Fusion of elementwise chains with the reduction they feed and with inputs
// that broadcast: which reductions and operands join a group (lowering), and
// that the fused kernels (cpu interpreter and the default op-by-op run_fused
// of the reference backend) compute what the unfused program computes, for
// row, column and whole-tensor reductions and broadcast inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "backends/reference/reference.h"
#include "compiler/program.h"
#include "compiler/run_program.h"
#include "ir/graph.h"
#include "loom/dtype.h"
#include "ops/compare.h"

namespace loom::compiler {
namespace {

// The fused reduction step of `p` (fails the test when there is none).
const Step* reduce_step(const Program& p) {
  for (const Step& s : p.steps)
    if (s.fused && s.group.has_reduce) return &s;
  return nullptr;
}

// The first fused step with an input whose shape is not the group's.
const Step* broadcast_step(const Program& p) {
  for (const Step& s : p.steps)
    if (s.fused)
      for (const ops::TensorType& t : s.group.input_types)
        if (t.shape != s.group.shape && t.numel() != 1) return &s;
  return nullptr;
}

enum class Need { kReduce, kBroadcast };

// Lowers `text` fused and unfused, runs both on the cpu backend and the
// fused one on the reference backend; every output must agree with the
// unfused cpu program to `rtol`. The fused program must have a fused
// reduction (kReduce) or a fused step with a broadcast input (kBroadcast).
void expect_fused_matches(const std::string& text, double rtol, unsigned seed = 1,
                          std::vector<std::vector<double>> in = {}, Need need = Need::kReduce,
                          testing::Nan nan = testing::Nan::kNotExpected) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  Program fused = lower(g, true), plain = lower(g, false);
  if (need == Need::kReduce)
    ASSERT_NE(reduce_step(fused), nullptr) << "no fused reduction in\n" << text;
  else
    ASSERT_NE(broadcast_step(fused), nullptr) << "no broadcast input fused in\n" << text;
  if (in.empty()) in = random_inputs(g, seed);
  auto want = run_fused_program(plain, backends::cpu_backend(), in);
  auto got = run_fused_program(fused, backends::cpu_backend(), in);
  auto ref = run_fused_program(fused, backends::reference_backend(), in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) {
    EXPECT_TRUE(
        testing::all_close(got[k], want[k], rtol, 1e-6, "cpu output " + std::to_string(k), nan));
    EXPECT_TRUE(
        testing::all_close(ref[k], want[k], 1e-5, 1e-5, "ref output " + std::to_string(k), nan));
  }
}

TEST(FusedReduce, ChainIntoSumIsOneStep) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[64], %1: f32[]) {\n"
      "  %2 = mul(%0, %1) : f32[64]\n"
      "  %3 = exp(%2) : f32[64]\n"
      "  %4 = add(%3, %0) : f32[64]\n"
      "  %5 = sum(%4) : f32[]\n"
      "  %6 = sub(%4, %5) : f32[64]\n"
      "  return (%6)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 2u);  // fused {mul, exp, add; sum}, sub
  ASSERT_TRUE(p.steps[0].fused);
  EXPECT_TRUE(p.steps[0].group.has_reduce);
  EXPECT_EQ(p.steps[0].group.body.size(), 3u);
  EXPECT_EQ(p.steps[0].group.reduce.arg, 2);                // body index of %4
  EXPECT_EQ(p.steps[0].outputs, (std::vector<int>{4, 5}));  // %4 is read by sub
  EXPECT_EQ(p.steps[0].group.reduce.size, 64);
  EXPECT_FALSE(p.steps[1].fused);
}

// grad-norm style: the squared values never reach memory.
TEST(FusedReduce, ReducedValueIsNotMaterialized) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[32,128]) {\n"
      "  %1 = mul(%0, %0) : f32[32,128]\n"
      "  %2 = sum(%1) : f32[]\n"
      "  return (%2)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_TRUE(p.steps[0].fused);
  EXPECT_TRUE(p.steps[0].group.outputs.empty());
  EXPECT_EQ(p.steps[0].outputs, (std::vector<int>{2}));
  EXPECT_EQ(p.num_fused_groups, 1);
}

// The bias-gradient pattern: dy is read by a matmul (which closes its group)
// before its column sum; the sum still joins dy's group, computed at the
// group's step, ahead of the matmul.
TEST(FusedReduce, ColumnSumJoinsAGroupClosedByAMatmul) {
  const std::string text =
      "graph(%0: f32[300,96], %1: f32[96,32]) {\n"
      "  %2 = mul(%0, %0) : f32[300,96]\n"
      "  %3 = tanh(%2) : f32[300,96]\n"
      "  %4 = matmul(%3, %1) : f32[300,32]\n"
      "  %5 = sum(%3) axes=[0] : f32[96]\n"
      "  return (%4, %5)\n}\n";
  Program p = lower(ir::parse(text), true);
  ASSERT_EQ(p.steps.size(), 2u);  // fused {mul, tanh; sum}, matmul
  ASSERT_TRUE(p.steps[0].fused);
  EXPECT_TRUE(p.steps[0].group.has_reduce);
  EXPECT_EQ(p.steps[0].outputs, (std::vector<int>{3, 5}));
  EXPECT_EQ(p.steps[1].instr.op, ops::OpKind::k_matmul);
  expect_fused_matches(text, 1e-6);
}

TEST(FusedReduce, LayoutsThatDoNotStreamStaySeparate) {
  auto steps_of = [](const std::string& body, const std::string& type) {
    ir::Graph g =
        ir::parse("graph(%0: f32[4,8,64]) {\n  %1 = exp(%0) : f32[4,8,64]\n  %2 = " + body + " : " +
                  type + "\n  return (%2)\n}\n");
    return lower(g, true).steps.size();
  };
  EXPECT_EQ(steps_of("sum(%1) axes=[2]", "f32[4,8]"), 1u);   // rows
  EXPECT_EQ(steps_of("sum(%1) axes=[0,1]", "f32[64]"), 1u);  // columns, inner 64
  EXPECT_EQ(steps_of("max(%1) axes=[1]", "f32[4,64]"), 1u);  // middle axis
  EXPECT_EQ(steps_of("sum(%1) axes=[0,2]", "f32[8]"), 2u);   // not contiguous
  EXPECT_EQ(steps_of("sum(%1) axes=[0]", "f32[8,64]"), 1u);  // inner 8*64
  EXPECT_EQ(steps_of("argmax(%1) axis=2", "i64[4,8]"), 2u);  // not a fusible reduction
  EXPECT_EQ(steps_of("var(%1) axes=[2]", "f32[4,8]"), 2u);   // two passes
  ir::Graph narrow = ir::parse(
      "graph(%0: f32[64,8]) {\n  %1 = exp(%0) : f32[64,8]\n"
      "  %2 = sum(%1) axes=[0] : f32[8]\n  return (%2)\n}\n");
  EXPECT_EQ(lower(narrow, true).steps.size(), 2u);  // 8 columns: not worth it
  ir::Graph input_only =
      ir::parse("graph(%0: f32[64]) {\n  %1 = sum(%0) : f32[]\n  return (%1)\n}\n");
  EXPECT_EQ(reduce_step(lower(input_only, true)), nullptr);
}

TEST(FusedReduce, RowSumsOverManyChunks) {
  // 3000 = 2 whole chunks + a partial one per row; %3 is also an output.
  expect_fused_matches(
      "graph(%0: f32[7,3000], %1: f32[7,3000]) {\n"
      "  %2 = sub(%0, %1) : f32[7,3000]\n"
      "  %3 = mul(%2, %2) : f32[7,3000]\n"
      "  %4 = sum(%3) axes=[1] keepdim=true : f32[7,1]\n"
      "  return (%4, %3)\n}\n",
      1e-6);
}

TEST(FusedReduce, MeanMaxMinOfRows) {
  for (const char* op : {"mean", "max", "min"})
    expect_fused_matches(std::string("graph(%0: f32[5,2500]) {\n"
                                     "  %1 = tanh(%0) : f32[5,2500]\n"
                                     "  %2 = ") +
                             op + "(%1) axes=[1] : f32[5]\n  return (%2)\n}\n",
                         0);
}

TEST(FusedReduce, MaxPropagatesNaN) {
  const std::string text =
      "graph(%0: f32[2,1500]) {\n"
      "  %1 = exp(%0) : f32[2,1500]\n"
      "  %2 = max(%1) axes=[1] : f32[2]\n"
      "  return (%2)\n}\n";
  std::vector<std::vector<double>> in = random_inputs(ir::parse(text), 3);
  in[0][1400] = NAN;  // row 0, second chunk
  expect_fused_matches(text, 0, 1, in, Need::kReduce, testing::Nan::kExpected);
}

TEST(FusedReduce, ColumnSums) {
  // One outer slice, 2 column tiles: rows split into fixed ranges.
  expect_fused_matches(
      "graph(%0: f32[300,1500], %1: f32[]) {\n"
      "  %2 = mul(%0, %1) : f32[300,1500]\n"
      "  %3 = relu(%2) : f32[300,1500]\n"
      "  %4 = sum(%3) axes=[0] : f32[1500]\n"
      "  return (%4)\n}\n",
      1e-6);
  // Middle axis, many outer slices: unsplit, same order as cpu_reduce.
  expect_fused_matches(
      "graph(%0: f32[9,40,128]) {\n"
      "  %1 = neg(%0) : f32[9,40,128]\n"
      "  %2 = mean(%1) axes=[1] : f32[9,128]\n"
      "  return (%2)\n}\n",
      0);
}

TEST(FusedReduce, WholeTensorAndBf16) {
  expect_fused_matches(
      "graph(%0: f32[5000]) {\n"
      "  %1 = sigmoid(%0) : f32[5000]\n"
      "  %2 = sum(%1) : f32[]\n"
      "  return (%2)\n}\n",
      1e-6);
  expect_fused_matches(
      "graph(%0: bf16[6,700]) {\n"
      "  %1 = gelu(%0) : bf16[6,700]\n"
      "  %2 = sum(%1) axes=[1] : bf16[6]\n"
      "  return (%2)\n}\n",
      1e-2);
}

TEST(FusedReduce, KeepdimAndSizeOneDims) {
  expect_fused_matches(
      "graph(%0: f32[4,1,8,64]) {\n"
      "  %1 = exp(%0) : f32[4,1,8,64]\n"
      "  %2 = sum(%1) axes=[1,2] keepdim=true : f32[4,1,1,64]\n"
      "  return (%2)\n}\n",
      1e-6);
  expect_fused_matches(
      "graph(%0: f32[1,300,1]) {\n"
      "  %1 = exp(%0) : f32[1,300,1]\n"
      "  %2 = max(%1) axes=[0,1] keepdim=true : f32[1,1,1]\n"
      "  return (%2)\n}\n",
      0);
}

TEST(FusedReduce, ReducedValueIsOutputAndReadByLaterMembers) {
  expect_fused_matches(
      "graph(%0: f32[6,700], %1: f32[]) {\n"
      "  %2 = exp(%0) : f32[6,700]\n"
      "  %3 = min(%2) axes=[1] : f32[6]\n"
      "  %4 = mul(%2, %2) : f32[6,700]\n"
      "  %5 = add(%4, %1) : f32[6,700]\n"
      "  %6 = neg(%3) : f32[6]\n"
      "  return (%6, %5, %2)\n}\n",
      0);
}

// NaN in the first folded row and in a later row split.
TEST(FusedReduce, ColumnMinMaxPropagateNaN) {
  for (const char* op : {"max", "min"}) {
    const std::string text = std::string(
                                 "graph(%0: f32[200,128]) {\n"
                                 "  %1 = neg(%0) : f32[200,128]\n"
                                 "  %2 = ") +
                             op + "(%1) axes=[0] : f32[128]\n  return (%2)\n}\n";
    std::vector<std::vector<double>> in = random_inputs(ir::parse(text), 4);
    in[0][5] = NAN;              // row 0 (the first folded row)
    in[0][150 * 128 + 7] = NAN;  // a later row split
    expect_fused_matches(text, 0, 1, in, Need::kReduce, testing::Nan::kExpected);
  }
}

TEST(FusedReduce, F16Rows) {
  expect_fused_matches(
      "graph(%0: f16[3,2000]) {\n"
      "  %1 = mul(%0, %0) : f16[3,2000]\n"
      "  %2 = mean(%1) axes=[1] : f16[3]\n"
      "  return (%2)\n}\n",
      1e-2);
}

// The whole-tensor sum and a value computed from it are read by members of
// the same shape, which must run in a later group.
TEST(FusedReduce, ScalarFromReductionDoesNotJoinItsGroup) {
  expect_fused_matches(
      "graph(%0: f32[4,256]) {\n"
      "  %1 = exp(%0) : f32[4,256]\n"
      "  %2 = sum(%1) : f32[]\n"
      "  %3 = log(%2) : f32[]\n"
      "  %4 = mul(%1, %3) : f32[4,256]\n"
      "  %5 = mul(%1, %2) : f32[4,256]\n"
      "  %6 = add(%4, %5) : f32[4,256]\n"
      "  return (%6)\n}\n",
      1e-6);
}

// A bias [C] against [B, T, C] and a row statistic [R, 1] against [R, C]
// (the softmax decomposition's x - max) are read in place, chunk by chunk.
TEST(FusedBroadcast, BiasAndRowStatisticJoinTheGroup) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[4,6,80], %1: f32[80]) {\n"
      "  %2 = add(%0, %1) : f32[4,6,80]\n"
      "  %3 = gelu(%2) : f32[4,6,80]\n"
      "  return (%3)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_TRUE(p.steps[0].fused);
  expect_fused_matches(ir::to_text(g), 0, 1, {}, Need::kBroadcast);
}

TEST(FusedBroadcast, SoftmaxShapedChain) {
  // Rows of 1500 span two chunks; the shift [R,1] is read once per element.
  expect_fused_matches(
      "graph(%0: f32[5,1500], %1: f32[5,1]) {\n"
      "  %2 = sub(%0, %1) : f32[5,1500]\n"
      "  %3 = exp(%2) : f32[5,1500]\n"
      "  %4 = sum(%3) axes=[1] keepdim=true : f32[5,1]\n"
      "  return (%4, %3)\n}\n",
      1e-6);
  expect_fused_matches(
      "graph(%0: f32[5,1500], %1: f32[5,1]) {\n"
      "  %2 = sub(%0, %1) : f32[5,1500]\n"
      "  %3 = exp(%2) : f32[5,1500]\n"
      "  return (%3)\n}\n",
      0, 2, {}, Need::kBroadcast);
}

TEST(FusedBroadcast, MiddleAxesAndMixedDtypes) {
  // [3,1,7] and [1,5,1] against [3,5,7] (a carry across every dim, chunks
  // that start mid-row), a bf16 operand cast up, and where with a bool mask
  // broadcast over rows.
  expect_fused_matches(
      "graph(%0: f32[3,5,7], %1: f32[3,1,7], %2: f32[1,5,1], %3: bf16[7]) {\n"
      "  %4 = mul(%0, %1) : f32[3,5,7]\n"
      "  %5 = add(%4, %2) : f32[3,5,7]\n"
      "  %6 = cast(%3) dtype=float32 : f32[7]\n"
      "  %7 = sub(%5, %6) : f32[3,5,7]\n"
      "  %8 = gt(%2, %1) : bool[3,5,7]\n"
      "  %9 = where(%8, %7, %0) : f32[3,5,7]\n"
      "  return (%9)\n}\n",
      0, 3, {}, Need::kBroadcast);
  // Large enough for several chunks and threads: [64, 50, 33] with [50, 1].
  expect_fused_matches(
      "graph(%0: f32[64,50,33], %1: f32[50,1]) {\n"
      "  %2 = div(%0, %1) : f32[64,50,33]\n"
      "  %3 = tanh(%2) : f32[64,50,33]\n"
      "  return (%3)\n}\n",
      0, 4, {}, Need::kBroadcast);
}

// Rows of at most half a chunk are evaluated several to a chunk
// (reduce_short_rows): layer-norm-backward shapes, a row count that leaves a
// partial last chunk, a row statistic broadcast against the rows and an
// output read elsewhere. Each row's sum must be what the unfused program
// gives.
TEST(FusedReduce, ShortRowsSeveralPerChunk) {
  expect_fused_matches(
      "graph(%0: f32[37,384], %1: f32[37,1], %2: f32[384]) {\n"
      "  %3 = sub(%0, %1) : f32[37,384]\n"
      "  %4 = mul(%3, %2) : f32[37,384]\n"
      "  %5 = sum(%4) axes=[1] keepdim=true : f32[37,1]\n"
      "  return (%5, %3)\n}\n",
      1e-6, 5);
  for (const char* op : {"mean", "max", "min"})
    expect_fused_matches(std::string("graph(%0: f32[9,100]) {\n"
                                     "  %1 = tanh(%0) : f32[9,100]\n"
                                     "  %2 = ") +
                             op + "(%1) axes=[1] : f32[9]\n  return (%2)\n}\n",
                         0, 6);
}

// A column reduction whose one tile spans every column folds several rows
// per chunk, in row order: bias-gradient shapes ([B, T, C] summed over B
// and T), with an odd row count and a width that is not a multiple of 16.
TEST(FusedReduce, NarrowColumnsSeveralRowsPerChunk) {
  expect_fused_matches(
      "graph(%0: f32[16,64,384], %1: f32[384]) {\n"
      "  %2 = mul(%0, %1) : f32[16,64,384]\n"
      "  %3 = sum(%2) axes=[0,1] : f32[384]\n"
      "  return (%3, %2)\n}\n",
      1e-6, 7);
  expect_fused_matches(
      "graph(%0: f32[3,57,100]) {\n"
      "  %1 = exp(%0) : f32[3,57,100]\n"
      "  %2 = max(%1) axes=[1] : f32[3,100]\n"
      "  %3 = sum(%1) axes=[0,1] : f32[100]\n"
      "  return (%2, %3)\n}\n",
      1e-6, 8);
}

}  // namespace
}  // namespace loom::compiler
