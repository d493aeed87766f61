// cast_hoist: narrowing casts move above reshape/permute/expand and cancel
// a widening cast of the same dtype. Checked on the printed IR (what moves,
// what stays: a movement op with another user, a slice, a widening cast) and
// by running the rewritten graph against the original op by op on the cpu
// backend: the values must be bit-identical.
#include <gtest/gtest.h>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu_test_util.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

std::string hoisted(const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = make_cast_hoist()->run(g);
  ir::verify(g);
  make_dce()->run(g);
  return ir::to_text(g);
}

// The attention head split under autocast: add -> reshape -> permute -> cast.
const char* kHeadSplit =
    "graph(%0: bf16[2,4,6], %1: f32[6]) {\n"
    "  %2 = cast(%0) : f32[2,4,6]\n"
    "  %3 = add(%2, %1) : f32[2,4,6]\n"
    "  %4 = reshape(%3) shape=[2,4,3,2] : f32[2,4,3,2]\n"
    "  %5 = permute(%4) perm=[0,2,1,3] : f32[2,3,4,2]\n"
    "  %6 = cast(%5) dtype=bfloat16 : bf16[2,3,4,2]\n"
    "  return (%6)\n}\n";

TEST(CastHoist, MovesNarrowingCastAboveReshapeAndPermute) {
  bool changed = false;
  std::string out = hoisted(kHeadSplit, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: bf16[2,4,6], %1: f32[6]) {\n"
            "  %2 = cast(%0) : f32[2,4,6]\n"
            "  %3 = add(%2, %1) : f32[2,4,6]\n"
            "  %4 = cast(%3) dtype=bfloat16 : bf16[2,4,6]\n"
            "  %5 = reshape(%4) shape=[2,4,3,2] : bf16[2,4,3,2]\n"
            "  %6 = permute(%5) perm=[0,2,1,3] : bf16[2,3,4,2]\n"
            "  return (%6)\n}\n");
}

// The attention output merge: a bf16 matmul result cast up, permuted,
// reshaped and cast down again needs no cast at all.
TEST(CastHoist, CancelsRoundTripThroughF32) {
  bool changed = false;
  std::string out = hoisted(
      "graph(%0: bf16[2,3,4,2]) {\n"
      "  %1 = cast(%0) : f32[2,3,4,2]\n"
      "  %2 = permute(%1) perm=[0,2,1,3] : f32[2,4,3,2]\n"
      "  %3 = reshape(%2) shape=[2,4,6] : f32[2,4,6]\n"
      "  %4 = cast(%3) dtype=bfloat16 : bf16[2,4,6]\n"
      "  return (%4)\n}\n",
      &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: bf16[2,3,4,2]) {\n"
            "  %1 = permute(%0) perm=[0,2,1,3] : bf16[2,4,3,2]\n"
            "  %2 = reshape(%1) shape=[2,4,6] : bf16[2,4,6]\n"
            "  return (%2)\n}\n");
}

TEST(CastHoist, LeavesSharedMovementSliceAndWideningCasts) {
  bool changed = true;
  // %2 has a second user: hoisting would keep the f32 permute and add a bf16 one.
  std::string shared =
      "graph(%0: f32[2,3]) {\n"
      "  %1 = exp(%0) : f32[2,3]\n"
      "  %2 = permute(%1) perm=[1,0] : f32[3,2]\n"
      "  %3 = cast(%2) dtype=bfloat16 : bf16[3,2]\n"
      "  return (%3, %2)\n}\n";
  EXPECT_EQ(hoisted(shared, &changed), shared);
  EXPECT_FALSE(changed);
  // slice drops elements: casting first would convert them for nothing.
  std::string slice =
      "graph(%0: f32[4,3]) {\n"
      "  %1 = exp(%0) : f32[4,3]\n"
      "  %2 = slice(%1) stop=2 : f32[2,3]\n"
      "  %3 = cast(%2) dtype=bfloat16 : bf16[2,3]\n"
      "  return (%3)\n}\n";
  EXPECT_EQ(hoisted(slice, &changed), slice);
  EXPECT_FALSE(changed);
  // A widening cast stays where it is.
  std::string widen =
      "graph(%0: bf16[2,3]) {\n"
      "  %1 = permute(%0) perm=[1,0] : bf16[3,2]\n"
      "  %2 = cast(%1) : f32[3,2]\n"
      "  return (%2)\n}\n";
  EXPECT_EQ(hoisted(widen, &changed), widen);
  EXPECT_FALSE(changed);
}

TEST(CastHoist, RewrittenGraphIsBitIdentical) {
  const std::string text =
      "graph(%0: bf16[2,4,6], %1: f32[6], %2: f32[4,1]) {\n"
      "  %3 = cast(%0) : f32[2,4,6]\n"
      "  %4 = add(%3, %1) : f32[2,4,6]\n"
      "  %5 = reshape(%4) shape=[2,4,3,2] : f32[2,4,3,2]\n"
      "  %6 = permute(%5) perm=[0,2,1,3] : f32[2,3,4,2]\n"
      "  %7 = cast(%6) dtype=bfloat16 : bf16[2,3,4,2]\n"
      "  %8 = exp(%2) : f32[4,1]\n"
      "  %9 = expand(%8) shape=[4,5] : f32[4,5]\n"
      "  %10 = cast(%9) dtype=float16 : f16[4,5]\n"
      "  %11 = permute(%3) perm=[2,1,0] : f32[6,4,2]\n"
      "  %12 = cast(%11) dtype=bfloat16 : bf16[6,4,2]\n"
      "  return (%7, %10, %12)\n}\n";
  ir::Graph before = ir::parse(text);
  ir::Graph after = before;
  ASSERT_TRUE(make_cast_hoist()->run(after));
  ir::verify(after);
  std::vector<cpu_test::Operand> in = {cpu_test::random_operand({2, 4, 6}, DType::bf16, 1),
                                       cpu_test::random_operand({6}, DType::f32, 2),
                                       cpu_test::random_operand({4, 1}, DType::f32, 3)};
  auto want = testing::run_graph(backends::cpu_backend(), before, in);
  auto got = testing::run_graph(backends::cpu_backend(), after, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << "output " << k;
}

}  // namespace
}  // namespace loom::compiler
