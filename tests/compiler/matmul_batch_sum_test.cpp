// matmul_batch_sum: a linear layer's weight gradient (batched
// matmul(X, Y, trans_a) summed over its batch axes) becomes one GEMM over all
// batch rows. Checked on the printed IR (what is rewritten, what is left:
// a partial sum, a second reader of the product, no trans_a) and by value
// against the unfused program run op by op on the cpu backend (f32 to 1e-4;
// bf16 against the exact sum, where the fused GEMM rounds once instead of
// once per batch item). That the default pipeline still fuses an LM head
// (fused_cross_entropy runs first) is FusedCrossEntropyLazy's job.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

std::string rewritten(const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = make_matmul_batch_sum()->run(g);
  ir::verify(g);
  make_dce()->run(g);
  return ir::to_text(g);
}

std::string weight_grad(const std::string& dtype, const std::string& sum_attrs,
                        const std::string& sum_type) {
  return "graph(%0: " + dtype + "[4,6,3], %1: " + dtype + "[4,6,5]) {\n" +
         "  %2 = matmul(%0, %1) trans_a=true : " + dtype + "[4,3,5]\n" + "  %3 = sum(%2) " +
         sum_attrs + " : " + sum_type + "\n" + "  return (%3)\n}\n";
}

TEST(MatmulBatchSum, WeightGradientBecomesOneGemm) {
  bool changed = false;
  std::string out = rewritten(weight_grad("f32", "axes=[0]", "f32[3,5]"), &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: f32[4,6,3], %1: f32[4,6,5]) {\n"
            "  %2 = reshape(%0) shape=[24,3] : f32[24,3]\n"
            "  %3 = reshape(%1) shape=[24,5] : f32[24,5]\n"
            "  %4 = matmul(%2, %3) trans_a=true : f32[3,5]\n"
            "  return (%4)\n}\n");
  // keepdim: the GEMM's result is reshaped to the sum's shape.
  out = rewritten(weight_grad("f32", "axes=[0] keepdim=true", "f32[1,3,5]"), &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("%5 = reshape(%4) shape=[1,3,5] : f32[1,3,5]"), std::string::npos) << out;
}

TEST(MatmulBatchSum, LeavesOtherSumsAlone) {
  bool changed = true;
  // Not every batch axis summed.
  std::string partial =
      "graph(%0: f32[2,4,6,3], %1: f32[2,4,6,5]) {\n"
      "  %2 = matmul(%0, %1) trans_a=true : f32[2,4,3,5]\n"
      "  %3 = sum(%2) axes=[1] : f32[2,3,5]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(rewritten(partial, &changed), partial);
  EXPECT_FALSE(changed);
  // The batched product is also an output.
  std::string shared =
      "graph(%0: f32[4,6,3], %1: f32[4,6,5]) {\n"
      "  %2 = matmul(%0, %1) trans_a=true : f32[4,3,5]\n"
      "  %3 = sum(%2) axes=[0] : f32[3,5]\n"
      "  return (%3, %2)\n}\n";
  EXPECT_EQ(rewritten(shared, &changed), shared);
  EXPECT_FALSE(changed);
  // No trans_a: the rows are not the reduction dim.
  std::string plain =
      "graph(%0: f32[4,3,6], %1: f32[4,6,5]) {\n"
      "  %2 = matmul(%0, %1) : f32[4,3,5]\n"
      "  %3 = sum(%2) axes=[0] : f32[3,5]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(rewritten(plain, &changed), plain);
  EXPECT_FALSE(changed);
}

// Values exactly representable in bf16 (so the f32 run is the exact sum's
// reference for the bf16 runs), as an operand of `dtype`.
cpu_test::Operand bf16_valued(const Shape& shape, DType dtype, uint32_t seed) {
  cpu_test::Operand b = cpu_test::random_operand(shape, DType::bf16, seed);
  std::vector<double> v(numel(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = load_as_double(b.buffer->data(), DType::bf16, i);
  return cpu_test::operand_of(v, shape, dtype);
}

std::vector<double> run_weight_grad(const std::string& text, DType dtype, bool rewrite) {
  ir::Graph g = ir::parse(text);
  if (rewrite) {
    EXPECT_TRUE(make_matmul_batch_sum()->run(g));
    ir::verify(g);
  }
  std::vector<cpu_test::Operand> in = {bf16_valued({16, 64, 96}, dtype, 11),
                                       bf16_valued({16, 64, 80}, dtype, 12)};
  return testing::run_graph(backends::cpu_backend(), g, in)[0];
}

TEST(MatmulBatchSum, MatchesTheUnfusedProgram) {
  const std::string f32 =
      "graph(%0: f32[16,64,96], %1: f32[16,64,80]) {\n"
      "  %2 = matmul(%0, %1) trans_a=true : f32[16,96,80]\n"
      "  %3 = sum(%2) axes=[0] keepdim=true : f32[1,96,80]\n"
      "  return (%3)\n}\n";
  std::vector<double> want = run_weight_grad(f32, DType::f32, false);
  std::vector<double> got = run_weight_grad(f32, DType::f32, true);
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  EXPECT_LT(worst, 1e-4);  // f32 sums of 1024 terms in another order
  // bf16: the one-GEMM form accumulates in f32 and rounds once (within one
  // bf16 step of the exact sum); the unfused one rounds each of the 16
  // partial products and their sum.
  std::string bf16 = f32;
  for (size_t p = bf16.find("f32"); p != std::string::npos; p = bf16.find("f32"))
    bf16.replace(p, 3, "bf16");
  std::vector<double> unfused = run_weight_grad(bf16, DType::bf16, false);
  std::vector<double> fused = run_weight_grad(bf16, DType::bf16, true);
  double err_unfused = 0, err_fused = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    double scale = std::abs(want[i]) + 0.1;  // sums are ~30 in magnitude
    err_unfused = std::max(err_unfused, std::abs(unfused[i] - want[i]) / scale);
    err_fused = std::max(err_fused, std::abs(fused[i] - want[i]) / scale);
  }
  EXPECT_LT(err_fused, 1.0 / 128) << "more than a bf16 step from the exact sum";
  EXPECT_LE(err_fused, err_unfused) << "one rounding should not be worse than seventeen";
}

}  // namespace
}  // namespace loom::compiler
