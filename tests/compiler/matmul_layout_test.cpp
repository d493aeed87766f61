// matmul_layout: permutes feeding a batched matmul, or permuting its result,
// become the matmul's perm_a / perm_b / perm_out attrs. Checked on the
// printed IR (what folds; what must not: a permute with a second reader, a
// swap of the last two axes alone, a permute moving the unit-stride axis into
// the batch, a 2-D weight operand, LOOM_MATMUL_LAYOUT=0) and by value: the
// rewritten graph against the unrewritten one run op by op on the cpu
// backend (f32 to 1e-5, bf16 to the bf16 tolerance), and on the reference
// backend (the layout attrs applied literally there).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "backends/reference/reference.h"
#include "common/scoped_env.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

std::string layout_rewritten(const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = make_matmul_layout()->run(g);
  ir::verify(g);
  make_dce()->run(g);
  return ir::to_text(g);
}

// Attention written with matmuls (nn::multi_head_attention with dropout):
// head split of q and k, scores, probs @ v, head merge. B2 T8 H2 D4.
std::string attention_text(const std::string& dt) {
  auto t = [&](const std::string& shape) { return dt + shape; };
  return "graph(%0: " + t("[2,8,8]") + ", %1: " + t("[2,8,8]") + ", %2: " + t("[2,8,8]") +
         ") {\n"
         "  %3 = reshape(%0) shape=[2,8,2,4] : " +
         t("[2,8,2,4]") + "\n" + "  %4 = permute(%3) perm=[0,2,1,3] : " + t("[2,2,8,4]") + "\n" +
         "  %5 = reshape(%1) shape=[2,8,2,4] : " + t("[2,8,2,4]") + "\n" +
         "  %6 = permute(%5) perm=[0,2,1,3] : " + t("[2,2,8,4]") + "\n" +
         "  %7 = matmul(%4, %6) trans_b=true : " + t("[2,2,8,8]") + "\n" +
         "  %8 = reshape(%2) shape=[2,8,2,4] : " + t("[2,8,2,4]") + "\n" +
         "  %9 = permute(%8) perm=[0,2,1,3] : " + t("[2,2,8,4]") + "\n" +
         "  %10 = matmul(%7, %9) : " + t("[2,2,8,4]") + "\n" +
         "  %11 = permute(%10) perm=[0,2,1,3] : " + t("[2,8,2,4]") + "\n" +
         "  %12 = reshape(%11) shape=[2,8,8] : " + t("[2,8,8]") + "\n" + "  return (%12)\n}\n";
}

TEST(MatmulLayout, FoldsHeadSplitAndMerge) {
  bool changed = false;
  std::string out = layout_rewritten(attention_text("f32"), &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: f32[2,8,8], %1: f32[2,8,8], %2: f32[2,8,8]) {\n"
            "  %3 = reshape(%0) shape=[2,8,2,4] : f32[2,8,2,4]\n"
            "  %4 = reshape(%1) shape=[2,8,2,4] : f32[2,8,2,4]\n"
            "  %5 = matmul(%3, %4) trans_b=true perm_a=[0,2,1,3] perm_b=[0,2,1,3] : "
            "f32[2,2,8,8]\n"
            "  %6 = reshape(%2) shape=[2,8,2,4] : f32[2,8,2,4]\n"
            "  %7 = matmul(%5, %6) perm_b=[0,2,1,3] perm_out=[0,2,1,3] : f32[2,8,2,4]\n"
            "  %8 = reshape(%7) shape=[2,8,8] : f32[2,8,8]\n"
            "  return (%8)\n}\n");
}

// A dead permute of a matmul beside its one live reader (what algebraic's
// permute composition or cast_hoist leave before dce) is not a perm_out:
// folding it gave the live reader the permuted layout (found in review).
TEST(MatmulLayout, ADeadPermuteOfAMatmulIsNotFolded) {
  bool changed = true;
  std::string text =
      "graph(%0: f32[2,2,8,4], %1: f32[2,2,4,8]) {\n"
      "  %2 = matmul(%0, %1) : f32[2,2,8,8]\n"
      "  %3 = permute(%2) perm=[0,2,1,3] : f32[2,8,2,8]\n"
      "  %4 = neg(%2) : f32[2,2,8,8]\n"
      "  return (%4)\n}\n";
  std::string out = layout_rewritten(text, &changed);
  EXPECT_FALSE(changed) << out;
  EXPECT_EQ(out.find("perm_out"), std::string::npos) << out;
}

TEST(MatmulLayout, LeavesInvalidOrUselessFoldsAlone) {
  bool changed = true;
  // The permuted q is also an output: its copy is needed anyway.
  std::string shared =
      "graph(%0: f32[2,8,2,4], %1: f32[2,2,4,8]) {\n"
      "  %2 = permute(%0) perm=[0,2,1,3] : f32[2,2,8,4]\n"
      "  %3 = matmul(%2, %1) : f32[2,2,8,8]\n"
      "  return (%3, %2)\n}\n";
  EXPECT_EQ(layout_rewritten(shared, &changed), shared);
  EXPECT_FALSE(changed);
  // A swap of the last two axes alone is trans_a (the algebraic pass's).
  std::string swap =
      "graph(%0: f32[2,2,4,8], %1: f32[2,2,4,8]) {\n"
      "  %2 = permute(%0) perm=[0,1,3,2] : f32[2,2,8,4]\n"
      "  %3 = matmul(%2, %1) : f32[2,2,8,8]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(layout_rewritten(swap, &changed), swap);
  EXPECT_FALSE(changed);
  // The stored last axis (unit stride) would become a batch axis.
  std::string gather =
      "graph(%0: f32[2,8,4,2], %1: f32[2,2,4,8]) {\n"
      "  %2 = permute(%0) perm=[0,3,1,2] : f32[2,2,8,4]\n"
      "  %3 = matmul(%2, %1) : f32[2,2,8,8]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(layout_rewritten(gather, &changed), gather);
  EXPECT_FALSE(changed);
  // The result's unit-stride axis would be a batch axis of the stored output.
  std::string out_gather =
      "graph(%0: f32[2,2,8,4], %1: f32[2,2,4,8]) {\n"
      "  %2 = matmul(%0, %1) : f32[2,2,8,8]\n"
      "  %3 = permute(%2) perm=[2,3,0,1] : f32[8,8,2,2]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(layout_rewritten(out_gather, &changed), out_gather);
  EXPECT_FALSE(changed);
  // The product has a second reader: the permuted copy stays.
  std::string two_readers =
      "graph(%0: f32[2,2,8,4], %1: f32[2,2,4,8]) {\n"
      "  %2 = matmul(%0, %1) : f32[2,2,8,8]\n"
      "  %3 = permute(%2) perm=[0,2,1,3] : f32[2,8,2,8]\n"
      "  return (%3, %2)\n}\n";
  EXPECT_EQ(layout_rewritten(two_readers, &changed), two_readers);
  EXPECT_FALSE(changed);
  // Rank mismatch (a 2-D weight): left to the plain kernel.
  std::string weight =
      "graph(%0: f32[2,8,2,4], %1: f32[4,8]) {\n"
      "  %2 = permute(%0) perm=[0,2,1,3] : f32[2,2,8,4]\n"
      "  %3 = matmul(%2, %1) : f32[2,2,8,8]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(layout_rewritten(weight, &changed), weight);
  EXPECT_FALSE(changed);
}

TEST(MatmulLayout, DisabledByEnv) {
  bool changed = true;
  std::string text = attention_text("f32"), out;
  {
    testing::ScopedEnv off("LOOM_MATMUL_LAYOUT", "0");
    out = layout_rewritten(text, &changed);
  }
  EXPECT_FALSE(changed);
  EXPECT_EQ(out, ir::to_text(ir::parse(text)));
}

TEST(MatmulLayout, PermuteOfALayoutMatmulIsNotFoldedTwice) {
  // %3 becomes %2's perm_out; it must not also become %4's perm_a.
  bool changed = false;
  std::string out = layout_rewritten(
      "graph(%0: f32[2,2,8,4], %1: f32[2,2,4,8], %2: f32[2,8,8,4]) {\n"
      "  %3 = matmul(%0, %1) : f32[2,2,8,8]\n"
      "  %4 = permute(%3) perm=[0,2,1,3] : f32[2,8,2,8]\n"
      "  %5 = matmul(%4, %2) : f32[2,8,2,4]\n"
      "  return (%5)\n}\n",
      &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("matmul(%0, %1) perm_out=[0,2,1,3] : f32[2,8,2,8]"), std::string::npos) << out;
  EXPECT_NE(out.find("matmul(%3, %2) : f32[2,8,2,4]"), std::string::npos) << out;
}

TEST(MatmulLayout, PermuteReadByTwoMatmulsFoldsIntoBoth) {
  // q's head split read by the forward scores and by the backward dk.
  bool changed = false;
  std::string out = layout_rewritten(
      "graph(%0: f32[2,8,2,4], %1: f32[2,2,8,4], %2: f32[2,2,8,8]) {\n"
      "  %3 = permute(%0) perm=[0,2,1,3] : f32[2,2,8,4]\n"
      "  %4 = matmul(%3, %1) trans_b=true : f32[2,2,8,8]\n"
      "  %5 = matmul(%2, %3) trans_a=true : f32[2,2,8,4]\n"
      "  return (%4, %5)\n}\n",
      &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: f32[2,8,2,4], %1: f32[2,2,8,4], %2: f32[2,2,8,8]) {\n"
            "  %3 = matmul(%0, %1) trans_b=true perm_a=[0,2,1,3] : f32[2,2,8,8]\n"
            "  %4 = matmul(%2, %0) trans_a=true perm_b=[0,2,1,3] : f32[2,2,8,4]\n"
            "  return (%3, %4)\n}\n");
}

double layout_worst(const std::vector<double>& want, const std::vector<double>& got) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  return worst;
}

void expect_layout_matches(DType dtype, double tol) {
  std::string dt = dtype == DType::f32 ? "f32" : "bf16";
  // A larger attention (B2 T40 H3 D16) so oneDNN runs real blocked kernels.
  std::string text = attention_text(dt);
  auto swap_all = [&text](const std::string& from, const std::string& to) {
    for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + to.size()))
      text.replace(p, from.size(), to);
  };
  swap_all("[2,8,8]", "[2,40,48]");
  swap_all("[2,8,2,4]", "[2,40,3,16]");
  swap_all("shape=[2,8,2,4]", "shape=[2,40,3,16]");
  swap_all("[2,2,8,4]", "[2,3,40,16]");
  swap_all("[2,2,8,8]", "[2,3,40,40]");
  ir::Graph plain = ir::parse(text);
  ir::verify(plain);
  ir::Graph folded = plain;
  ASSERT_TRUE(make_matmul_layout()->run(folded));
  ir::verify(folded);
  std::vector<cpu_test::Operand> in;
  for (uint32_t s = 0; s < 3; ++s) in.push_back(cpu_test::random_operand({2, 40, 48}, dtype, s));
  std::vector<double> want = testing::run_graph(backends::cpu_backend(), plain, in)[0];
  std::vector<double> got = testing::run_graph(backends::cpu_backend(), folded, in)[0];
  EXPECT_LT(layout_worst(want, got), tol) << dt << " cpu";
  std::vector<double> ref = testing::run_graph(backends::reference_backend(), folded, in)[0];
  EXPECT_LT(layout_worst(ref, got), tol) << dt << " reference";
}

TEST(MatmulLayout, MatchesTheUnrewrittenProgram) {
  expect_layout_matches(DType::f32, 1e-5);
  expect_layout_matches(DType::bf16, 1e-2);
}

}  // namespace
}  // namespace loom::compiler
