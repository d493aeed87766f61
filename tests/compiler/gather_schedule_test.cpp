// gather_schedule (compiler/passes/gather_schedule.cpp): in a full_shard step,
// a layer's parameters are gathered again for its backward when the later
// layers' uses lie between its forward and its backward; uses inside one
// layer (its two segments interleaved) are not split; each gather starts two
// instances before its first use; the result is topological (the verifier),
// and a graph without gathers of inputs is untouched.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/pass.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

// "all_gather(%k)" for a gather of input k, else the op name.
std::vector<std::string> gather_ops(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Instr& in : g.instrs) {
    std::string name(ops::op_name(in.op));
    if (in.op == ops::OpKind::k_all_gather && g.is_input(in.operands[0]))
      name += "(%" + std::to_string(in.operands[0]) + ")";
    out.push_back(name);
  }
  return out;
}

// Three layers, one shard each (%0..%2); "forward" multiplies x by w0, w1, w2,
// "backward" by w2, w1, w0 (the input gradients' reads of the weights), then
// the gradient is reduce-scattered. As collective_schedule leaves it: every
// gather at the top.
const char* const kThreeLayers =
    "graph(%0: f32[2], %1: f32[2], %2: f32[2], %3: f32[4]) {\n"
    "  %4 = all_gather(%0) world_size=2 : f32[4]\n"
    "  %5 = all_gather(%1) world_size=2 : f32[4]\n"
    "  %6 = all_gather(%2) world_size=2 : f32[4]\n"
    "  %7 = mul(%3, %4) : f32[4]\n"
    "  %8 = mul(%7, %5) : f32[4]\n"
    "  %9 = mul(%8, %6) : f32[4]\n"
    "  %10 = mul(%9, %6) : f32[4]\n"
    "  %11 = mul(%10, %5) : f32[4]\n"
    "  %12 = mul(%11, %4) : f32[4]\n"
    "  %13 = reduce_scatter(%12) world_size=2 : f32[2]\n"
    "  return (%13)\n}\n";

TEST(GatherSchedule, LayersAreGatheredAgainForBackwardAndPrefetchedTwoAhead) {
  ir::Graph g = ir::parse(kThreeLayers);
  EXPECT_TRUE(make_gather_schedule()->run(g));
  ir::verify(g);
  // w0 and w1 regathered (layers 2 and 1 lie between their forward and
  // backward uses); w2's two uses are adjacent. Gathers in first-use order
  // w0, w1, w2, w1', w0', each started before the use two instances earlier.
  const std::vector<std::string> want = {"all_gather(%0)",
                                         "all_gather(%1)",
                                         "all_gather(%2)",
                                         "mul",
                                         "all_gather(%1)",
                                         "mul",
                                         "all_gather(%0)",
                                         "mul",
                                         "mul",
                                         "mul",
                                         "mul",
                                         "reduce_scatter"};
  EXPECT_EQ(gather_ops(g), want) << ir::to_text(g);
  // Each regathered copy feeds only its own cluster: the last mul reads the
  // second gather of %0, not the first.
  const ir::Instr& last_mul = g.instrs[10];
  ASSERT_EQ(last_mul.op, ops::OpKind::k_mul);
  EXPECT_EQ(g.instr_of(last_mul.operands[1]).op, ops::OpKind::k_all_gather);
  EXPECT_EQ(last_mul.operands[1], static_cast<int>(g.inputs.size()) + 6) << ir::to_text(g);
}

// w1's gathered value is also a graph output, read after its backward use:
// the output joins the backward cluster and must read that cluster's copy,
// also when an earlier family (w0) was cloned first. (The output read was
// matched against a count that included w0's clone and left the output on
// the forward copy, which then lived through the whole step.)
TEST(GatherSchedule, AnOutputReadsTheCopyOfItsCluster) {
  std::string text = kThreeLayers;
  text.replace(text.find("return (%13)"), 12, "return (%13, %5)");
  ir::Graph g = ir::parse(text);
  EXPECT_TRUE(make_gather_schedule()->run(g));
  ir::verify(g);
  const int first = static_cast<int>(g.inputs.size());
  std::vector<int> gathers_of_w1;
  for (int i = 0; i < static_cast<int>(g.instrs.size()); ++i)
    if (g.instrs[i].op == ops::OpKind::k_all_gather && g.instrs[i].operands[0] == 1)
      gathers_of_w1.push_back(first + i);
  ASSERT_EQ(gathers_of_w1.size(), 2u) << ir::to_text(g);
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_EQ(g.outputs[1], gathers_of_w1[1]) << ir::to_text(g);
}

TEST(GatherSchedule, ViewsAreClonedWithTheGatherAndPlacedAtTheirReaders) {
  // One layer's gathered segment is sliced and reshaped into its parameter;
  // a second layer lies between the two uses.
  ir::Graph g = ir::parse(
      "graph(%0: f32[4], %1: f32[2], %2: f32[2,2]) {\n"
      "  %3 = all_gather(%0) world_size=2 : f32[8]\n"
      "  %4 = slice(%3) axis=0 start=0 stop=4 step=1 : f32[4]\n"
      "  %5 = reshape(%4) shape=[2,2] : f32[2,2]\n"
      "  %6 = all_gather(%1) world_size=2 : f32[4]\n"
      "  %7 = reshape(%6) shape=[2,2] : f32[2,2]\n"
      "  %8 = matmul(%2, %5) : f32[2,2]\n"
      "  %9 = matmul(%8, %7) : f32[2,2]\n"
      "  %10 = matmul(%9, %5) : f32[2,2]\n"
      "  return (%10)\n}\n");
  EXPECT_TRUE(make_gather_schedule()->run(g));
  ir::verify(g);
  const std::vector<std::string> want = {"all_gather(%0)", "all_gather(%1)", "slice",   "reshape",
                                         "all_gather(%0)", "matmul",         "reshape", "matmul",
                                         "slice",          "reshape",        "matmul"};
  EXPECT_EQ(gather_ops(g), want) << ir::to_text(g);
}

TEST(GatherSchedule, TwoSegmentsOfOneLayerInterleavedAreNotSplit) {
  // Layer 0's two segments (%0: weights, %1: biases) read alternately, as a
  // layer's decay and no-decay groups are: neither span lies inside the other.
  ir::Graph g = ir::parse(
      "graph(%0: f32[2], %1: f32[2], %2: f32[4]) {\n"
      "  %3 = all_gather(%0) world_size=2 : f32[4]\n"
      "  %4 = all_gather(%1) world_size=2 : f32[4]\n"
      "  %5 = mul(%2, %3) : f32[4]\n"
      "  %6 = add(%5, %4) : f32[4]\n"
      "  %7 = mul(%6, %3) : f32[4]\n"
      "  %8 = add(%7, %4) : f32[4]\n"
      "  return (%8)\n}\n");
  make_gather_schedule()->run(g);
  ir::verify(g);
  int gathers = 0;
  for (const ir::Instr& in : g.instrs) gathers += in.op == ops::OpKind::k_all_gather;
  EXPECT_EQ(gathers, 2) << ir::to_text(g);
}

TEST(GatherSchedule, GraphWithoutGathersOfInputsIsUnchanged) {
  const std::string text =
      "graph(%0: f32[2]) {\n"
      "  %1 = exp(%0) : f32[2]\n"
      "  %2 = all_gather(%1) world_size=2 : f32[4]\n"
      "  %3 = log(%2) : f32[4]\n"
      "  return (%3)\n}\n";
  ir::Graph g = ir::parse(text);
  EXPECT_FALSE(make_gather_schedule()->run(g));
  EXPECT_EQ(ir::to_text(g), text);
}

TEST(GatherSchedule, TheDefaultPipelineRegathers) {
  ir::Graph g = ir::parse(kThreeLayers);
  default_pipeline().run(g);
  int gathers = 0;
  for (const ir::Instr& in : g.instrs) gathers += in.op == ops::OpKind::k_all_gather;
  EXPECT_EQ(gathers, 5) << ir::to_text(g);
}

}  // namespace
}  // namespace loom::compiler
