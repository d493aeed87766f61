// graph_key: the compile-cache key changes with every environment switch
// that changes the compiled program (a cached executable compiled under
// another setting must miss: with LOOM_GATHER_SCHEDULE the ranks would issue
// different collectives), and with the backend; not with a switch that only
// prints. Which switches count is settings.def's compiled column.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "common/scoped_env.h"
#include "core/settings.h"
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

// The key reads settings.def's "changes compiled code" column: setting a
// kCompiled row moves it, a kRuntime row does not. The compiled rows are the
// ones the key listed by hand before the table (none may drop out).
TEST(GraphKey, FollowsTheSettingsTablesCompiledColumn) {
  const ir::Graph g = ir::parse("graph(%0: f32[4]) {\n  %1 = neg(%0) : f32[4]\n  return (%1)\n}\n");
  std::vector<std::unique_ptr<testing::ScopedEnv>> clear;  // the default environment
  for (const settings::Info& in : settings::table())
    clear.push_back(std::make_unique<testing::ScopedEnv>(in.name, std::nullopt));
  const Hash128 plain = graph_key(g, "cpu");
  // The default environment's key is what it was before the table: no setting
  // adds to it (lazy/compile_cache.cpp's files keep their names).
  EXPECT_EQ(plain, hash_combine(ir::graph_hash(g), hash_string({1, 2}, "cpu;pipeline=2026-12-02")));
  std::vector<std::string> compiled;
  for (const settings::Info& in : settings::table()) {
    testing::ScopedEnv env(in.name, "1");
    if (in.effect == settings::kCompiled) {
      compiled.push_back(in.name);
      EXPECT_NE(graph_key(g, "cpu"), plain) << in.name;
    } else {
      EXPECT_EQ(graph_key(g, "cpu"), plain) << in.name << " does not change compiled code";
    }
  }
  EXPECT_EQ(compiled, (std::vector<std::string>{"LOOM_DECOMPOSE", "LOOM_FUSED_BATCH",
                                                "LOOM_FUSED_CE_MIN_CLASSES", "LOOM_GATHER_SCHEDULE",
                                                "LOOM_MATMUL_LAYOUT", "LOOM_XLA_DONATE"}));
}

// The on-disk compile cache names its files by this hash, so it must not
// move when ops.def gains an op: it keys each op by its name, not its place
// in the table (a number let a cache file written before gelu_backward was
// inserted answer for whichever op took over that number).
// If you change the hashing on purpose, bump kMagic in
// lazy/compile_cache.cpp and the values here.
TEST(GraphKey, HashesOpsByNameNotByTheirPlaceInOpsDef) {
  const ir::Graph g = ir::parse(
      "graph(%0: f32[4], %1: f32[4]) {\n  %2 = relu(%0) : f32[4]\n"
      "  %3 = mul(%2, %1) : f32[4]\n  %4 = sigmoid(%3) : f32[4]\n  return (%4)\n}\n");
  EXPECT_EQ(ir::graph_hash(g).hex(), "84546db06c426c6fbe71e71f37dfa6f3");
}

// Attributes hash as (name, value) for each non-default field of attrs.def
// (cache format 3): renaming a field or changing how values hash moves this.
TEST(GraphKey, HashesAttributesByName) {
  const ir::Graph g = ir::parse(
      "graph(%0: f32[4,3], %1: i64[4]) {\n  %2 = cross_entropy(%0, %1) ignore_index=-100"
      " label_smoothing=0.1 : f32[]\n  %3 = sum(%0) axes=[1] keepdim=true : f32[4,1]\n"
      "  %4 = slice(%0) axis=1 start=1 stop=3 : f32[4,2]\n  return (%2, %3, %4)\n}\n");
  EXPECT_EQ(ir::graph_hash(g).hex(), "45dfb0a308ba6d54a52ef4ab4aed9bd7");
}

}  // namespace
}  // namespace loom::lazy
