// collective_schedule (compiler/passes/collective_schedule.cpp): each
// all_reduce moves up to right after the last instr it needs, the one that
// needs the least of the graph first (the last layers' bucket before the
// embedding's, whatever the traced order), and what reads the results comes
// after every all_reduce; the schedule stays topological (the verifier) and
// a graph without collectives is untouched. In a full_shard step the
// all_gathers of the parameter shards (graph inputs) start first, in layer
// order (the prefetch), and the gradient's reduce_scatter right after the
// compute it needs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/pass.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

// "op" per instr, with the all_reduce's operand op as "all_reduce<-op".
std::vector<std::string> schedule_ops(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Instr& in : g.instrs) {
    std::string name(ops::op_name(in.op));
    if (in.op == ops::OpKind::k_all_reduce && !g.is_input(in.operands[0]))
      name += "<-" + std::string(ops::op_name(g.instr_of(in.operands[0]).op));
    out.push_back(name);
  }
  return out;
}

TEST(CollectiveSchedule, AllReducesMoveUpByReadinessAndReadersMoveDown) {
  // As traced: the "embedding" bucket (%3, after two matmuls) comes first,
  // the "last layer" bucket (%5 of a log) second, both after all compute.
  ir::Graph g = ir::parse(
      "graph(%0: f32[4,4], %1: f32[4,4]) {\n"
      "  %2 = matmul(%0, %1) : f32[4,4]\n"
      "  %3 = matmul(%2, %1) : f32[4,4]\n"
      "  %4 = log(%0) : f32[4,4]\n"
      "  %5 = exp(%1) : f32[4,4]\n"
      "  %6 = all_reduce(%3) reduce_op=1 : f32[4,4]\n"
      "  %7 = neg(%6) : f32[4,4]\n"
      "  %8 = all_reduce(%4) reduce_op=1 : f32[4,4]\n"
      "  %9 = add(%7, %8) : f32[4,4]\n"
      "  %10 = add(%9, %5) : f32[4,4]\n"
      "  return (%10)\n}\n");
  EXPECT_TRUE(make_collective_schedule()->run(g));
  ir::verify(g);
  const std::vector<std::string> want = {
      "log", "all_reduce<-log", "matmul", "matmul", "all_reduce<-matmul", "exp", "neg", "add",
      "add"};
  EXPECT_EQ(schedule_ops(g), want) << ir::to_text(g);
  // The same graph scheduled again is a fixed point.
  EXPECT_FALSE(make_collective_schedule()->run(g));
}

TEST(CollectiveSchedule, AllGathersOfShardsStartFirstThenTheReduceScatter) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[2], %1: f32[2], %2: f32[4]) {\n"
      "  %3 = log(%2) : f32[4]\n"
      "  %4 = all_gather(%0) world_size=2 : f32[4]\n"
      "  %5 = mul(%4, %2) : f32[4]\n"
      "  %6 = all_gather(%1) world_size=2 : f32[4]\n"
      "  %7 = mul(%6, %5) : f32[4]\n"
      "  %8 = add(%7, %3) : f32[4]\n"
      "  %9 = reduce_scatter(%8) world_size=2 : f32[2]\n"
      "  return (%9)\n}\n");
  EXPECT_TRUE(make_collective_schedule()->run(g));
  ir::verify(g);
  EXPECT_EQ(schedule_ops(g), (std::vector<std::string>{"all_gather", "all_gather", "log", "mul",
                                                       "mul", "add", "reduce_scatter"}))
      << ir::to_text(g);
  EXPECT_EQ(g.instrs[0].operands[0], 0);  // layer 0's shard first
}

TEST(CollectiveSchedule, GraphWithoutCollectivesIsUnchanged) {
  const std::string text =
      "graph(%0: f32[3]) {\n"
      "  %1 = log(%0) : f32[3]\n"
      "  %2 = exp(%0) : f32[3]\n"
      "  %3 = add(%2, %1) : f32[3]\n"
      "  return (%3)\n}\n";
  ir::Graph g = ir::parse(text);
  EXPECT_FALSE(make_collective_schedule()->run(g));
  EXPECT_EQ(ir::to_text(g), text);
}

TEST(CollectiveSchedule, TheDefaultPipelineSchedulesCollectives) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[4,4], %1: f32[4,4]) {\n"
      "  %2 = matmul(%0, %1) : f32[4,4]\n"
      "  %3 = matmul(%2, %1) : f32[4,4]\n"
      "  %4 = all_reduce(%2) reduce_op=1 : f32[4,4]\n"
      "  %5 = add(%3, %4) : f32[4,4]\n"
      "  return (%5)\n}\n");
  default_pipeline().run(g);
  EXPECT_EQ(schedule_ops(g),
            (std::vector<std::string>{"matmul", "all_reduce<-matmul", "matmul", "add"}))
      << ir::to_text(g);
}

}  // namespace
}  // namespace loom::compiler
