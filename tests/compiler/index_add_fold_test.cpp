// index_add_fold: slice gradients summed into zeros that tile an axis become
// one concat; add(x, index_add(zeros, ...)) becomes index_add(x, ...).
// Checked on the printed IR (what folds, and what must not: a gap, an
// overlap, a non-zero base, a partial sum read twice, an index that is not
// an arange) and by value against the unrewritten graph on the cpu backend
// (1e-5 f32; bf16 to its tolerance).
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

std::string index_add_folded(const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = make_index_add_fold()->run(g);
  ir::verify(g);
  make_dce()->run(g);
  return ir::to_text(g);
}

// dq, dk, dv [2,3,4] summed into zeros [2,3,12] at columns [s0,s0+4) etc.
std::string split_grad(const std::string& dt, int s0, int s1, int s2, double zero = 0) {
  auto t = [&](const std::string& shape) { return " : " + dt + shape + "\n"; };
  auto r = [](int s) {
    return "arange() shape=[4]" + (s ? " range_start=" + std::to_string(s) : std::string()) +
           " range_step=1 dtype=int64 : i64[4]\n";
  };
  std::string z = zero == 0 ? "full() shape=[2,3,12]" : "full() shape=[2,3,12] fill_value=1";
  return "graph(%0: " + dt + "[2,3,4], %1: " + dt + "[2,3,4], %2: " + dt + "[2,3,4]) {\n" +
         "  %3 = " + z + t("[2,3,12]") + "  %4 = " + r(s0) + "  %5 = index_add(%3, %4, %0) axis=2" +
         t("[2,3,12]") + "  %6 = " + r(s1) + "  %7 = index_add(%3, %6, %1) axis=2" + t("[2,3,12]") +
         "  %8 = add(%5, %7)" + t("[2,3,12]") + "  %9 = " + r(s2) +
         "  %10 = index_add(%3, %9, %2) axis=2" + t("[2,3,12]") + "  %11 = add(%8, %10)" +
         t("[2,3,12]") + "  return (%11)\n}\n";
}

TEST(IndexAddFold, SplitGradientBecomesConcat) {
  bool changed = false;
  // Pieces in any order (v, q, k here): the concat takes them by start.
  std::string out = index_add_folded(split_grad("f32", 8, 0, 4), &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: f32[2,3,4], %1: f32[2,3,4], %2: f32[2,3,4]) {\n"
            "  %3 = concat(%1, %2, %0) axis=2 : f32[2,3,12]\n"
            "  return (%3)\n}\n");
}

TEST(IndexAddFold, LeavesNonTilingSumsAsAccumulations) {
  bool changed = false;
  // A gap (columns 4-7 never written) and an overlap: no concat; the
  // zero-based index_adds still fold into accumulations.
  for (auto [a, b, c] : {std::tuple{0, 0, 8}, std::tuple{0, 2, 8}}) {
    std::string out = index_add_folded(split_grad("f32", a, b, c), &changed);
    EXPECT_EQ(out.find("concat"), std::string::npos) << out;
    EXPECT_NE(out.find("= index_add(%5, "), std::string::npos) << out;
  }
  // A base of ones: nothing is zero-based.
  std::string ones = split_grad("f32", 0, 4, 8, 1);
  EXPECT_EQ(index_add_folded(ones, &changed), ir::to_text(ir::parse(ones)));
  EXPECT_FALSE(changed);
  // The partial sum %8 is also an output: the concat would not replace it,
  // but %11 = add(%8, zero-based %10) still accumulates into %8.
  std::string shared = split_grad("f32", 0, 4, 8);
  shared.replace(shared.find("return (%11)"), 12, "return (%11, %8)");
  std::string out = index_add_folded(shared, &changed);
  EXPECT_EQ(out.find("concat"), std::string::npos) << out;
}

TEST(IndexAddFold, AccumulatesIntoAnExistingGradient) {
  // A tied embedding: dW from the LM head plus the embedding's scatter.
  bool changed = false;
  std::string text =
      "graph(%0: f32[10,4], %1: i64[6], %2: f32[6,4]) {\n"
      "  %3 = full() shape=[10,4] : f32[10,4]\n"
      "  %4 = index_add(%3, %1, %2) : f32[10,4]\n"
      "  %5 = add(%0, %4) : f32[10,4]\n"
      "  return (%5)\n}\n";
  EXPECT_EQ(index_add_folded(text, &changed),
            "graph(%0: f32[10,4], %1: i64[6], %2: f32[6,4]) {\n"
            "  %3 = index_add(%0, %1, %2) : f32[10,4]\n"
            "  return (%3)\n}\n");
  EXPECT_TRUE(changed);
  // The scatter read twice: left alone.
  std::string twice = text;
  twice.replace(twice.find("return (%5)"), 11, "return (%5, %4)");
  EXPECT_EQ(index_add_folded(twice, &changed), ir::to_text(ir::parse(twice)));
  EXPECT_FALSE(changed);
}

double fold_worst(const std::vector<double>& want, const std::vector<double>& got) {
  EXPECT_EQ(want.size(), got.size());
  double worst = 0;
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
  return worst;
}

TEST(IndexAddFold, MatchesTheUnrewrittenProgram) {
  for (DType dt : {DType::f32, DType::bf16}) {
    std::string name = dt == DType::f32 ? "f32" : "bf16";
    ir::Graph plain = ir::parse(split_grad(name, 4, 8, 0)), rewritten = plain;
    ASSERT_TRUE(make_index_add_fold()->run(rewritten));
    std::vector<cpu_test::Operand> in;
    for (uint32_t s = 0; s < 3; ++s) in.push_back(cpu_test::random_operand({2, 3, 4}, dt, 20 + s));
    auto want = testing::run_graph(backends::cpu_backend(), plain, in)[0];
    auto got = testing::run_graph(backends::cpu_backend(), rewritten, in)[0];
    EXPECT_EQ(fold_worst(want, got), 0.0) << name << ": pieces plus zeros are exact";
    // Accumulation with repeated ids (rows 3 and 7 twice).
    ir::Graph acc = ir::parse("graph(%0: " + name + "[10,4], %1: i64[6], %2: " + name +
                              "[6,4]) {\n" + "  %3 = full() shape=[10,4] : " + name + "[10,4]\n" +
                              "  %4 = index_add(%3, %1, %2) : " + name + "[10,4]\n" +
                              "  %5 = add(%0, %4) : " + name + "[10,4]\n" + "  return (%5)\n}\n");
    ir::Graph acc_folded = acc;
    ASSERT_TRUE(make_index_add_fold()->run(acc_folded));
    std::vector<cpu_test::Operand> ain = {cpu_test::random_operand({10, 4}, dt, 30),
                                          cpu_test::operand_of({3, 7, 0, 3, 9, 7}, {6}, DType::i64),
                                          cpu_test::random_operand({6, 4}, dt, 31)};
    double tol = dt == DType::f32 ? 1e-5 : 1e-2;
    EXPECT_LT(fold_worst(testing::run_graph(backends::cpu_backend(), acc, ain)[0],
                         testing::run_graph(backends::cpu_backend(), acc_folded, ain)[0]),
              tol)
        << name;
  }
}

}  // namespace
}  // namespace loom::compiler
