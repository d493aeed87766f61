// graph_key: the compile-cache key changes with every environment switch
// that changes the compiled program (a cached executable compiled under
// another setting must miss: with LOOM_GATHER_SCHEDULE the ranks would issue
// different collectives), and with the backend; not with a switch that only
// prints.
#include <gtest/gtest.h>

#include "common/scoped_env.h"
#include "ir/graph.h"
#include "lazy/graph_executor.h"

namespace loom::lazy {
namespace {

TEST(GraphKey, ChangesWithTheSwitchesThatChangeTheCompiledProgram) {
  const ir::Graph g = ir::parse("graph(%0: f32[4]) {\n  %1 = neg(%0) : f32[4]\n  return (%1)\n}\n");
  const Hash128 plain = graph_key(g, "cpu");
  EXPECT_EQ(graph_key(g, "cpu"), plain);
  EXPECT_NE(graph_key(g, "sim"), plain);
  for (const char* name : {"LOOM_GATHER_SCHEDULE", "LOOM_DECOMPOSE", "LOOM_FUSED_BATCH",
                           "LOOM_MATMUL_LAYOUT", "LOOM_FUSED_CE_MIN_CLASSES"}) {
    testing::ScopedEnv env(name, "0");
    EXPECT_NE(graph_key(g, "cpu"), plain) << name;
  }
  testing::ScopedEnv dump("LOOM_DUMP_IR", "1");
  EXPECT_EQ(graph_key(g, "cpu"), plain) << "LOOM_DUMP_IR only prints";
}

}  // namespace
}  // namespace loom::lazy
