// The compiler keeps collectives as they were traced (ops.def's kCollective):
// DCE keeps an unused all_reduce (the other ranks wait for it), CSE never
// merges two identical ones (each is one rendezvous), and the default
// pipeline does not fold an all_reduce of a constant (its value is
// world_size * c, not c); it orders all_reduces by readiness only
// (collective_schedule, tests/compiler/collective_schedule_test.cpp).
#include <gtest/gtest.h>

#include "compiler/pass.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

std::string collective_run(std::unique_ptr<Pass> pass, const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = pass->run(g);
  ir::verify(g);
  return ir::to_text(g);
}

TEST(CollectivePasses, DceKeepsAnUnusedAllReduce) {
  const std::string text =
      "graph(%0: f32[3]) {\n"
      "  %1 = all_reduce(%0) : f32[3]\n"
      "  %2 = log(%0) : f32[3]\n"
      "  return (%2)\n}\n";
  bool changed = true;
  EXPECT_EQ(collective_run(make_dce(), text, &changed), text);
  EXPECT_FALSE(changed);
}

TEST(CollectivePasses, CseKeepsTwoIdenticalAllReduces) {
  const std::string text =
      "graph(%0: f32[3]) {\n"
      "  %1 = all_reduce(%0) reduce_op=1 : f32[3]\n"
      "  %2 = all_reduce(%0) reduce_op=1 : f32[3]\n"
      "  %3 = add(%1, %2) : f32[3]\n"
      "  return (%3)\n}\n";
  bool changed = true;
  EXPECT_EQ(collective_run(make_cse(), text, &changed), text);
  EXPECT_FALSE(changed);
}

TEST(CollectivePasses, PipelineKeepsAllReduceOfAConstantOrderedByReadiness) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[2]) {\n"
      "  %1 = full() shape=[2] fill_value=3 : f32[2]\n"
      "  %2 = all_reduce(%1) : f32[2]\n"
      "  %3 = all_reduce(%0) reduce_op=1 : f32[2]\n"
      "  %4 = mul(%2, %3) : f32[2]\n"
      "  return (%4)\n}\n");
  default_pipeline().run(g);
  std::vector<int64_t> reduce_ops;
  for (const ir::Instr& in : g.instrs)
    if (in.op == ops::OpKind::k_all_reduce) reduce_ops.push_back(in.attrs.reduce_op);
  // all_reduce(%0) needs no instr, all_reduce(full) needs one: it goes second.
  EXPECT_EQ(reduce_ops, (std::vector<int64_t>{1, 0})) << ir::to_text(g);
}

}  // namespace
}  // namespace loom::compiler
