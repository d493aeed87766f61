// Level-2 tests: IR text in -> pass -> `changed` flag and printed IR out.
#include <gtest/gtest.h>

#include "compiler/pass.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "loom/error.h"

namespace loom::compiler {
namespace {

std::string run_pass(std::unique_ptr<Pass> pass, const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = pass->run(g);
  ir::verify(g);
  return ir::to_text(g);
}

TEST(IrText, RoundTrip) {
  std::string text =
      "graph(%0: f32[4,8], %1: f32[]) {\n"
      "  %2 = mul(%0, %1) : f32[4,8]\n"
      "  %3 = sum(%2) axes=[1] keepdim=true : f32[4,1]\n"
      "  %4 = full() shape=[2] fill_value=0.10000000000000001 : f32[2]\n"
      "  return (%3, %4)\n"
      "}\n";
  EXPECT_EQ(ir::to_text(ir::parse(text)), text);
}

TEST(IrText, BadTextNamesLine) {
  try {
    ir::parse("graph(%0: f32[2]) {\n  %1 = nosuchop(%0) : f32[2]\n  return (%1)\n}\n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'nosuchop'"), std::string::npos);
  }
}

TEST(Verifier, RejectsWrongType) {
  ir::Graph g = ir::parse("graph(%0: f32[2,3]) {\n  %1 = exp(%0) : f32[3,2]\n  return (%1)\n}\n");
  EXPECT_THROW(ir::verify(g), Error);
}

TEST(Dce, DropsDeadInstrs) {
  bool changed = false;
  std::string out = run_pass(make_dce(),
                             "graph(%0: f32[2]) {\n"
                             "  %1 = exp(%0) : f32[2]\n"
                             "  %2 = log(%0) : f32[2]\n"
                             "  return (%2)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out, "graph(%0: f32[2]) {\n  %1 = log(%0) : f32[2]\n  return (%1)\n}\n");
  run_pass(make_dce(), out, &changed);
  EXPECT_FALSE(changed);
}

TEST(Cse, MergesIdenticalInstrs) {
  bool changed = false;
  std::string out = run_pass(make_cse(),
                             "graph(%0: f32[2]) {\n"
                             "  %1 = exp(%0) : f32[2]\n"
                             "  %2 = exp(%0) : f32[2]\n"
                             "  %3 = add(%1, %2) : f32[2]\n"
                             "  return (%3)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("%3 = add(%1, %1)"), std::string::npos) << out;
}

TEST(Algebraic, MulByOneAndAddZero) {
  bool changed = false;
  std::string out = run_pass(make_algebraic(),
                             "graph(%0: f32[2]) {\n"
                             "  %1 = full() shape=[] fill_value=1 : f32[]\n"
                             "  %2 = mul(%0, %1) : f32[2]\n"
                             "  %3 = full() : f32[]\n"
                             "  %4 = add(%3, %2) : f32[2]\n"
                             "  return (%4)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("return (%0)"), std::string::npos) << out;
}

TEST(Algebraic, TransposeTransposeAndMatmulFlag) {
  bool changed = false;
  std::string out = run_pass(make_algebraic(),
                             "graph(%0: f32[2,3], %1: f32[4,3]) {\n"
                             "  %2 = permute(%0) perm=[1,0] : f32[3,2]\n"
                             "  %3 = permute(%2) perm=[1,0] : f32[2,3]\n"
                             "  %4 = permute(%1) perm=[1,0] : f32[3,4]\n"
                             "  %5 = matmul(%3, %4) : f32[2,4]\n"
                             "  return (%5)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("%5 = matmul(%0, %1) trans_b=true : f32[2,4]"), std::string::npos) << out;
}

TEST(Algebraic, ReshapeChain) {
  bool changed = false;
  std::string out = run_pass(make_algebraic(),
                             "graph(%0: f32[2,6]) {\n"
                             "  %1 = reshape(%0) shape=[3,4] : f32[3,4]\n"
                             "  %2 = reshape(%1) shape=[12] : f32[12]\n"
                             "  return (%2)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("%2 = reshape(%0) shape=[12]"), std::string::npos) << out;
}

TEST(ConstFold, CastOfConstant) {
  bool changed = false;
  std::string out = run_pass(make_const_fold(),
                             "graph() {\n"
                             "  %0 = full() shape=[2] fill_value=1.5 : f32[2]\n"
                             "  %1 = cast(%0) dtype=int64 : i64[2]\n"
                             "  return (%1)\n}\n",
                             &changed);
  EXPECT_TRUE(changed);
  EXPECT_NE(out.find("%1 = full() shape=[2] fill_value=1 dtype=int64 : i64[2]"), std::string::npos)
      << out;
}

TEST(Fusion, ElementwiseChainIsOneStep) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[64], %1: f32[]) {\n"
      "  %2 = mul(%0, %1) : f32[64]\n"
      "  %3 = exp(%2) : f32[64]\n"
      "  %4 = add(%3, %0) : f32[64]\n"
      "  %5 = sub(%4, %1) : f32[64]\n"
      "  %6 = var(%5) : f32[]\n"
      "  %7 = mul(%4, %6) : f32[64]\n"
      "  return (%7)\n}\n");
  Program p = lower(g, true);
  ASSERT_EQ(p.steps.size(), 3u);  // fused {mul, exp, add, sub}, var (not fusible), mul
  EXPECT_TRUE(p.steps[0].fused);
  EXPECT_EQ(p.steps[0].group.body.size(), 4u);
  EXPECT_EQ(p.steps[0].outputs, (std::vector<int>{4, 5}));  // %4 and %5 leave the group
  EXPECT_FALSE(p.steps[1].fused);
  EXPECT_FALSE(p.steps[2].fused);
}

}  // namespace
}  // namespace loom::compiler

namespace loom::compiler {
namespace {

// A member may join a group only if its other operands exist where the group
// runs (regression: a constant traced after the group opened was read
// before it was computed).
TEST(Fusion, LateOperandStartsNewGroup) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[8]) {\n"
      "  %1 = exp(%0) : f32[8]\n"
      "  %2 = full() shape=[] fill_value=1 : f32[]\n"
      "  %3 = add(%1, %2) : f32[8]\n"
      "  return (%3)\n}\n");
  Program p = lower(g, true);
  std::vector<int> defined(g.num_values(), 0);
  for (int v = 0; v < 1; ++v) defined[v] = 1;
  for (const Step& s : p.steps) {
    for (int v : s.inputs) EXPECT_TRUE(defined[v]) << "%" << v << " read before it is computed";
    for (int v : s.outputs) defined[v] = 1;
  }
}

}  // namespace
}  // namespace loom::compiler
