// Text-level tests of the StableHLO lowering (backends/xla/lower/): golden
// snippets for a few ops, the func signature with tf.aliasing_output
// attributes, the errors for ops it does not handle, the LOOM_DUMP_IR hook,
// and coverage: every op of ops.def is lowered, decomposed by the generic
// passes for xla's op set, or a collective — checked by tracing every case of
// the op table (tests/ops/op_cases.h) and lowering the graph the xla pipeline
// leaves. None of this needs the PJRT plugin (xla_lower_exec_test.cpp runs
// the text).
//
//   ./loom_tests --gtest_filter='XlaLower*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/xla/lower/stablehlo.h"
#include "backends/xla_lower_util.h"
#include "common/scoped_env.h"
#include "loom/error.h"

namespace loom::backends::xla {
namespace {

std::string lower_text(const std::string& ir, const LowerOptions& options = {}) {
  ir::Graph g = ir::parse(ir);
  ir::verify(g);
  return lower_to_stablehlo(g, options);
}

// The message of the loom::Error `f` throws ("" when it does not throw).
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const loom::Error& e) {
    return e.what();
  }
  return "";
}

TEST(XlaLower, GoldenBroadcastAddAndKeepdimSum) {
  std::string text = lower_text(
      "graph(%0: f32[4,8], %1: bf16[8]) {\n"
      "  %2 = add(%0, %1) : f32[4,8]\n"
      "  %3 = sum(%2) axes=[1] keepdim=true : f32[4,1]\n"
      "  return (%3)\n}\n");
  EXPECT_EQ(text,
            "module @loom_main attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 "
            ": i32} {\n"
            "  func.func public @main(%arg0: tensor<4x8xf32>, %arg1: tensor<8xbf16>) -> "
            "(tensor<4x1xf32>) {\n"
            "    // add -> %v2 : f32[4,8]\n"
            "    %0 = stablehlo.convert %arg1 : (tensor<8xbf16>) -> tensor<8xf32>\n"
            "    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<8xf32>) -> "
            "tensor<4x8xf32>\n"
            "    %2 = stablehlo.add %arg0, %1 : tensor<4x8xf32>\n"
            "    // sum -> %v3 : f32[4,1]\n"
            "    %3 = stablehlo.constant dense<0.00000000e+00> : tensor<f32>\n"
            "    %7 = \"stablehlo.reduce\"(%2, %3) ({\n"
            "    ^bb0(%4: tensor<f32>, %5: tensor<f32>):\n"
            "      %6 = stablehlo.add %4, %5 : tensor<f32>\n"
            "      stablehlo.return %6 : tensor<f32>\n"
            "    }) {dimensions = array<i64: 1>} : (tensor<4x8xf32>, tensor<f32>) -> "
            "tensor<4xf32>\n"
            "    %8 = stablehlo.reshape %7 : (tensor<4xf32>) -> tensor<4x1xf32>\n"
            "    return %8 : tensor<4x1xf32>\n"
            "  }\n"
            "}\n");
}

TEST(XlaLower, GoldenBf16MatmulAccumulatesInF32) {
  std::string text = lower_text(
      "graph(%0: bf16[2,3,4], %1: bf16[5,4]) {\n"
      "  %2 = matmul(%0, %1) trans_b=true : bf16[2,3,5]\n"
      "  return (%2)\n}\n");
  EXPECT_NE(text.find("%0 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [2] x [1] : "
                      "(tensor<2x3x4xbf16>, tensor<5x4xbf16>) -> tensor<2x3x5xf32>\n"
                      "    %1 = stablehlo.convert %0 : (tensor<2x3x5xf32>) -> "
                      "tensor<2x3x5xbf16>\n"
                      "    return %1 : tensor<2x3x5xbf16>\n"),
            std::string::npos)
      << text;
}

TEST(XlaLower, GoldenMatmulLayoutAttrsBecomeTransposes) {
  // matmul_layout's perm attrs: operands read through perm_a, the product
  // stored through perm_out, with the batch dims broadcast.
  std::string text = lower_text(
      "graph(%0: f32[2,4,3,5], %1: f32[2,3,5,6]) {\n"
      "  %2 = matmul(%0, %1) perm_a=[0,2,1,3] perm_out=[0,2,1,3] : f32[2,4,3,6]\n"
      "  return (%2)\n}\n");
  EXPECT_NE(text.find("stablehlo.transpose %arg0, dims = [0, 2, 1, 3] : (tensor<2x4x3x5xf32>) -> "
                      "tensor<2x3x4x5xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stablehlo.dot_general %0, %arg1, batching_dims = [0, 1] x [0, 1], "
                      "contracting_dims = [3] x [2] : (tensor<2x3x4x5xf32>, tensor<2x3x5x6xf32>) "
                      "-> tensor<2x3x4x6xf32>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stablehlo.transpose %1, dims = [0, 2, 1, 3] : (tensor<2x3x4x6xf32>) -> "
                      "tensor<2x4x3x6xf32>"),
            std::string::npos)
      << text;
}

TEST(XlaLower, AliasesBecomeAliasingOutputArgAttrs) {
  LowerOptions options;
  options.aliases = {{1, 0}, {2, 1}};
  options.name = "main";
  std::string text = lower_text(
      "graph(%0: f32[3], %1: f32[3], %2: i64[]) {\n"
      "  %3 = add(%0, %1) : f32[3]\n"
      "  %4 = full() shape=[] fill_value=1 dtype=int64 : i64[]\n"
      "  %5 = add(%2, %4) : i64[]\n"
      "  return (%3, %5)\n}\n",
      options);
  EXPECT_NE(text.find("func.func public @main(%arg0: tensor<3xf32>, %arg1: tensor<3xf32> "
                      "{tf.aliasing_output = 0 : i32}, %arg2: tensor<i64> {tf.aliasing_output = "
                      "1 : i32}) -> (tensor<3xf32>, tensor<i64>) {"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("return %0, %2 : tensor<3xf32>, tensor<i64>"), std::string::npos) << text;
}

TEST(XlaLower, BadAliasesAreRefused) {
  const char* ir =
      "graph(%0: f32[3], %1: i32[3]) {\n"
      "  %2 = neg(%0) : f32[3]\n"
      "  return (%2)\n}\n";
  LowerOptions range;
  range.aliases = {{2, 0}};
  EXPECT_NE(error_of([&] {
              lower_text(ir, range);
            }).find("[xla] alias (input 2, output 0) is out of range for 2 inputs and 1 outputs"),
            std::string::npos);
  LowerOptions type;
  type.aliases = {{1, 0}};
  EXPECT_NE(error_of([&] {
              lower_text(ir, type);
            }).find("[xla] alias (input 1, output 0) joins i32[3] and f32[3]"),
            std::string::npos)
      << error_of([&] { lower_text(ir, type); });
}

TEST(XlaLower, RefusesCompositesAndCollectives) {
  std::string soft = error_of([] {
    lower_text("graph(%0: f32[2,3]) {\n  %1 = softmax(%0) axis=1 : f32[2,3]\n  return (%1)\n}\n");
  });
  EXPECT_NE(soft.find("[xla] cannot lower softmax (a composite op"), std::string::npos) << soft;
  std::string coll = error_of([] {
    lower_text("graph(%0: f32[2]) {\n  %1 = all_reduce(%0) : f32[2]\n  return (%1)\n}\n");
  });
  EXPECT_NE(coll.find("[xla] cannot lower all_reduce (a collective"), std::string::npos) << coll;
  EXPECT_FALSE(lowered_ops().test(static_cast<size_t>(ops::OpKind::k_softmax)));
  EXPECT_FALSE(lowered_ops().test(static_cast<size_t>(ops::OpKind::k_all_reduce)));
  EXPECT_TRUE(lowered_ops().test(static_cast<size_t>(ops::OpKind::k_attention_backward)));
}

TEST(XlaLower, PhiloxIsTenUnrolledRoundsOfLoomsConstants) {
  std::string text = lower_text(
      "graph(%0: i64[2]) {\n  %1 = uniform(%0) shape=[3,5] : f32[3,5]\n  return (%1)\n}\n");
  int rounds = 0;
  for (size_t at = 0; (at = text.find("// philox round ", at)) != std::string::npos; ++at) ++rounds;
  EXPECT_EQ(rounds, 10);
  EXPECT_NE(text.find("dense<3528531795> : tensor<4xui64>"), std::string::npos);  // 0xD2511F53
  EXPECT_NE(text.find("dense<3449720151> : tensor<4xui64>"), std::string::npos);  // 0xCD9E8D57
  // round 1's key increments 0x9E3779B9 and 0xBB67AE85
  EXPECT_NE(text.find("dense<2654435769> : tensor<ui32>"), std::string::npos);
  EXPECT_NE(text.find("dense<3144134277> : tensor<ui32>"), std::string::npos);
  EXPECT_EQ(text.find("rng_bit_generator"), std::string::npos);
}

TEST(XlaLower, DumpIrWritesTheModuleBesideTheGraph) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("loom_xla_dump_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ir::Graph g = ir::parse("graph(%0: f32[2]) {\n  %1 = exp(%0) : f32[2]\n  return (%1)\n}\n");
  std::string text;
  {
    testing::ScopedEnv dump("LOOM_DUMP_IR", dir.string());
    text = lower_to_stablehlo(g);
  }
  std::string prefix = (dir / (ir::graph_hash(g).hex() + ".main")).string();
  std::ifstream mlir(prefix + ".mlir"), graph(prefix + ".ir");
  std::stringstream m, i;
  m << mlir.rdbuf();
  i << graph.rdbuf();
  EXPECT_EQ(m.str(), text);
  EXPECT_EQ(i.str(), ir::to_text(g));
  std::filesystem::remove_all(dir);
}

// Every op of ops.def: lowered, a composite the generic passes decompose for
// xla's op set, or a collective (split off before lowering). Adding an op
// without a lowering or decomposition fails here.
TEST(XlaLower, CoverageEveryOpLoweredDecomposedOrCollective) {
  for (int k = 0; k < ops::kNumOps; ++k) {
    auto op = ops::OpKind(k);
    SCOPED_TRACE(std::string(ops::op_name(op)));
    bool lowered = lowered_ops().test(k);
    bool collective = ops::has_trait(op, ops::kCollective);
    bool composite = ops::has_trait(op, ops::kComposite);
    EXPECT_TRUE(lowered || collective || composite);
    EXPECT_FALSE(lowered && collective);
  }
}

// Every case of the op table, traced and run through the xla pipeline,
// leaves only lowered ops, and lowers without an error. Checks the
// decompositions really cover the composites xla lacks.
TEST(XlaLower, EveryOpCaseLowersAfterTheXlaPipeline) {
  int lowered = 0;
  std::vector<bool> seen(ops::kNumOps, false);
  for (const optest::OpCase& c : optest::op_cases()) {
    if (ops::has_trait(c.op, ops::kCollective)) continue;
    for (DType dtype : c.dtypes) {
      SCOPED_TRACE(optest::case_label(c) + " in " + dtype_name(dtype));
      std::optional<testing::XlaTracedCase> t = testing::trace_for_xla(c, dtype);
      if (!t) continue;
      for (const ir::Instr& in : t->graph.instrs)
        EXPECT_TRUE(testing::xla_lowers(in.op)) << ops::op_name(in.op) << " left by the pipeline";
      std::string text;
      EXPECT_NO_THROW(text = lower_to_stablehlo(t->graph));
      EXPECT_NE(text.find("func.func public @main("), std::string::npos);
      ++lowered;
      seen[static_cast<size_t>(c.op)] = true;
    }
  }
  lazy::mark_step();
  EXPECT_GT(lowered, 100);
  for (int k = 0; k < ops::kNumOps; ++k) {
    if (ops::has_trait(ops::OpKind(k), ops::kCollective)) continue;
    EXPECT_TRUE(seen[k]) << "no op case of " << ops::op_name(ops::OpKind(k)) << " was lowered";
  }
}

}  // namespace
}  // namespace loom::backends::xla
