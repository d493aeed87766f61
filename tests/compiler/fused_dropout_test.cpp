// Dropout inside fused elementwise groups: lowering puts dropout (forward, and
// the backward's dropout of the gradient under the same generator state) into
// the group around it, and the cpu interpreter keeps and scales exactly the
// elements the unfused cpu_dropout does — bit for bit, whatever the chunk
// starts (rows of a fused reduction begin off Philox block boundaries), the
// dtype or the thread count — and agrees with the reference backend.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "backends/reference/reference.h"
#include "compiler/program.h"
#include "compiler/run_program.h"
#include "ir/graph.h"
#include "loom/parallel.h"
#include "ops/compare.h"

namespace loom::compiler {
namespace {

// Number of dropout ops inside fused steps of p.
int fused_dropouts(const Program& p) {
  int n = 0;
  for (const Step& s : p.steps)
    if (s.fused)
      for (const FusedOp& op : s.group.body) n += op.op == ops::OpKind::k_dropout;
  return n;
}

// Inputs: N(0, 1) values for float inputs, (seed, offset) for the i64[2] one.
std::vector<std::vector<double>> dropout_inputs(const ir::Graph& g, double seed, double offset) {
  std::vector<std::vector<double>> in = random_inputs(g, 7);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (g.inputs[i].dtype == DType::i64) in[i] = {seed, offset};
  return in;
}

// Lowers `text` fused and unfused; the fused program must hold `want_fused`
// dropouts inside groups and give the unfused cpu program's bits on the cpu
// backend (1 and 2 threads) and match it on the reference backend to 1e-6
// (bf16: one bf16 ulp, since the reference rounds x / (1 - p) from double).
void expect_dropout_fused_exact(const std::string& text, int want_fused, double ref_rtol = 1e-6) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  Program fused = lower(g, true), plain = lower(g, false);
  ASSERT_EQ(fused_dropouts(fused), want_fused) << text;
  ASSERT_EQ(fused_dropouts(plain), 0);
  for (auto [seed, offset] : {std::pair{1234.0, 0.0}, std::pair{99.0, 4093.0}}) {
    auto in = dropout_inputs(g, seed, offset);
    int threads = get_num_threads();
    set_num_threads(1);
    auto want = run_fused_program(plain, backends::cpu_backend(), in);
    auto got1 = run_fused_program(fused, backends::cpu_backend(), in);
    set_num_threads(2);
    auto got2 = run_fused_program(fused, backends::cpu_backend(), in);
    set_num_threads(threads);
    auto ref = run_fused_program(fused, backends::reference_backend(), in);
    ASSERT_EQ(got1.size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) {
      std::string what = "output " + std::to_string(k) + " seed " + std::to_string(seed);
      EXPECT_TRUE(testing::all_close(got1[k], want[k], 0, 0, "cpu 1 thread " + what));
      EXPECT_TRUE(testing::all_close(got2[k], want[k], 0, 0, "cpu 2 threads " + what));
      EXPECT_TRUE(testing::all_close(ref[k], want[k], ref_rtol, 1e-6, "reference " + what));
    }
  }
}

TEST(FusedDropout, JoinsTheGroupAroundIt) {
  // x * s -> dropout -> + r: one fused step; the generator is a group input.
  ir::Graph g = ir::parse(
      "graph(%0: f32[4,300], %1: f32[], %2: i64[2], %3: f32[4,300]) {\n"
      "  %4 = mul(%0, %1) : f32[4,300]\n"
      "  %5 = dropout(%4, %2) dropout_p=0.25 : f32[4,300]\n"
      "  %6 = add(%5, %3) : f32[4,300]\n"
      "  return (%6)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_TRUE(p.steps[0].fused);
  EXPECT_EQ(p.steps[0].group.body.size(), 3u);
  EXPECT_EQ(p.steps[0].group.body[1].op, ops::OpKind::k_dropout);
  EXPECT_EQ(p.steps[0].inputs, (std::vector<int>{0, 1, 2, 3}));
}

TEST(FusedDropout, ForwardChainIsBitExact) {
  // 4 x 3001 elements: chunks of 1024 over 12004, a partial last chunk.
  expect_dropout_fused_exact(
      "graph(%0: f32[4,3001], %1: f32[3001], %2: i64[2]) {\n"
      "  %3 = add(%0, %1) : f32[4,3001]\n"
      "  %4 = gelu_tanh(%3) : f32[4,3001]\n"
      "  %5 = dropout(%4, %2) dropout_p=0.1 : f32[4,3001]\n"
      "  %6 = mul(%5, %5) : f32[4,3001]\n"
      "  return (%6, %5)\n}\n",
      1);
}

TEST(FusedDropout, BackwardUsesTheSameMask) {
  // Forward dropout of x and the backward's dropout of dy under one
  // generator: both fuse, and keep the same elements (dx is 0 where y is 0).
  const std::string text =
      "graph(%0: f32[8,515], %1: f32[8,515], %2: i64[2]) {\n"
      "  %3 = tanh(%0) : f32[8,515]\n"
      "  %4 = dropout(%3, %2) dropout_p=0.3 : f32[8,515]\n"
      "  %5 = mul(%1, %1) : f32[8,515]\n"
      "  %6 = dropout(%5, %2) dropout_p=0.3 : f32[8,515]\n"
      "  %7 = neg(%6) : f32[8,515]\n"
      "  return (%4, %7)\n}\n";
  expect_dropout_fused_exact(text, 2);
  ir::Graph g = ir::parse(text);
  auto out = run_fused_program(lower(g, true), backends::cpu_backend(), dropout_inputs(g, 5, 8));
  int dropped = 0;
  for (size_t i = 0; i < out[0].size(); ++i) {
    EXPECT_EQ(out[0][i] == 0.0, out[1][i] == 0.0) << "element " << i;
    dropped += out[0][i] == 0.0;
  }
  EXPECT_GT(dropped, 8 * 515 / 5);  // p = 0.3: about 1236 of 4120 dropped
  EXPECT_LT(dropped, 8 * 515 * 2 / 5);
}

TEST(FusedDropout, InsideRowReductionOffBlockBoundaries) {
  // Rows of 333 (several per chunk) and of 1501 (split in chunks): chunk
  // starts are not multiples of 4, so Philox blocks straddle chunks.
  for (const char* shape : {"7,333", "3,1501"}) {
    std::string t = std::string("f32[") + shape + "]";
    std::string rows = std::string("f32[") + (shape[0] == '7' ? "7" : "3") + ",1]";
    expect_dropout_fused_exact("graph(%0: " + t + ", %1: i64[2]) {\n  %2 = exp(%0) : " + t +
                                   "\n  %3 = dropout(%2, %1) dropout_p=0.5 : " + t +
                                   "\n  %4 = sum(%3) axes=[1] keepdim=true : " + rows +
                                   "\n  %5 = div(%3, %4) : " + t + "\n  return (%5, %4)\n}\n",
                               1);
  }
}

TEST(FusedDropout, InsideColumnReduction) {
  // The bias-gradient shape: sum over rows of dropout(dy), 96 columns.
  expect_dropout_fused_exact(
      "graph(%0: f32[600,96], %1: i64[2]) {\n"
      "  %2 = mul(%0, %0) : f32[600,96]\n"
      "  %3 = dropout(%2, %1) dropout_p=0.2 : f32[600,96]\n"
      "  %4 = sum(%3) axes=[0] : f32[96]\n"
      "  return (%4, %3)\n}\n",
      1);
}

TEST(FusedDropout, Bf16RoundsAsTheUnfusedKernel) {
  expect_dropout_fused_exact(
      "graph(%0: bf16[5,700], %1: i64[2]) {\n"
      "  %2 = mul(%0, %0) : bf16[5,700]\n"
      "  %3 = dropout(%2, %1) dropout_p=0.1 : bf16[5,700]\n"
      "  %4 = add(%3, %0) : bf16[5,700]\n"
      "  return (%4)\n}\n",
      1, 1.0 / 128);
}

TEST(FusedDropout, AloneIsAOneOpGroupThatCanTakeItsInputsBuffer) {
  // A lone dropout of a graph input of its own type stays a one-op fused group
  // (lower.cpp), so the memory plan may run it in place of its input.
  ir::Graph g = ir::parse(
      "graph(%0: f32[64], %1: i64[2]) {\n"
      "  %2 = dropout(%0, %1) dropout_p=0.5 : f32[64]\n"
      "  return (%2)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 1u);
  ASSERT_TRUE(p.steps[0].fused);
  ASSERT_EQ(p.steps[0].group.body.size(), 1u);
  EXPECT_EQ(p.steps[0].group.body[0].op, ops::OpKind::k_dropout);
}

}  // namespace
}  // namespace loom::compiler
