// remat (gradient checkpointing, docs/remat.md): IR text with layer-call
// marks in -> pass -> `changed` and the printed IR (which ops are cloned,
// what stays, where the clones go), the marks' round trip through the text
// form and the graph hash, the cases it must leave alone (no marks, no
// backward readers, collectives, a second run), values bit-identical to the
// unrewritten graph run op by op on the cpu backend, and the memory plan's
// arena shrinking on a deeper chain of checkpointed layers.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpu/cpu_backend.h"
#include "compiler/memory/plan.h"
#include "compiler/pass.h"
#include "compiler/program.h"
#include "compiler/run_graph.h"
#include "ir/graph.h"

namespace loom::compiler {
namespace {

// Two layer calls (matmul -> tanh, then matmul -> tanh -> neg) and a
// hand-written backward: %10 is the gradient arriving from the loss, %11 and
// %15 read only forward values (a tanh derivative's square), %13/%17 are the
// weight gradients.
const char* kTwoCalls =
    "graph(%0: f32[4,8], %1: f32[8,8], %2: f32[8,8], %3: f32[4,8]) {\n"
    "  %4 = matmul(%0, %1) remat=1 : f32[4,8]\n"
    "  %5 = tanh(%4) remat=1 : f32[4,8]\n"
    "  %6 = matmul(%5, %2) remat=2 : f32[4,8]\n"
    "  %7 = tanh(%6) remat=2 : f32[4,8]\n"
    "  %8 = neg(%7) remat=2 : f32[4,8]\n"
    "  %9 = sum(%8) : f32[]\n"
    "  %10 = neg(%3) remat=-1 : f32[4,8]\n"
    "  %11 = mul(%7, %7) remat=-1 : f32[4,8]\n"
    "  %12 = mul(%10, %11) remat=-1 : f32[4,8]\n"
    "  %13 = matmul(%5, %12) trans_a=true remat=-1 : f32[8,8]\n"
    "  %14 = matmul(%12, %2) trans_b=true remat=-1 : f32[4,8]\n"
    "  %15 = mul(%4, %4) remat=-1 : f32[4,8]\n"
    "  %16 = mul(%14, %15) remat=-1 : f32[4,8]\n"
    "  %17 = matmul(%0, %16) trans_a=true remat=-1 : f32[8,8]\n"
    "  return (%9, %13, %17)\n"
    "}\n";

std::string rematted(const std::string& text, bool* changed) {
  ir::Graph g = ir::parse(text);
  ir::verify(g);
  *changed = make_remat()->run(g);
  ir::verify(g);
  return ir::to_text(g);
}

std::vector<cpu_test::Operand> operands_for(const ir::Graph& g) {
  std::vector<cpu_test::Operand> in;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    in.push_back(cpu_test::random_operand(g.inputs[i].shape, g.inputs[i].dtype, 11 + i));
  return in;
}

TEST(Remat, ClonesEachCallsActivationsBeforeItsBackward) {
  bool changed = false;
  std::string out = rematted(kTwoCalls, &changed);
  EXPECT_TRUE(changed);
  // %5 (call 1's output, read by call 2) stays; %7 and %4 are recomputed: call 2's
  // clone right before its backward reads it, call 1's after call 2's backward.
  EXPECT_EQ(out,
            "graph(%0: f32[4,8], %1: f32[8,8], %2: f32[8,8], %3: f32[4,8]) {\n"
            "  %4 = matmul(%0, %1) remat=1 : f32[4,8]\n"
            "  %5 = tanh(%4) remat=1 : f32[4,8]\n"
            "  %6 = matmul(%5, %2) remat=2 : f32[4,8]\n"
            "  %7 = tanh(%6) remat=2 : f32[4,8]\n"
            "  %8 = neg(%7) remat=2 : f32[4,8]\n"
            "  %9 = sum(%8) : f32[]\n"
            "  %10 = neg(%3) remat=-1 : f32[4,8]\n"
            "  %11 = matmul(%5, %2) remat=-1 : f32[4,8]\n"
            "  %12 = tanh(%11) remat=-1 : f32[4,8]\n"
            "  %13 = mul(%12, %12) remat=-1 : f32[4,8]\n"
            "  %14 = mul(%10, %13) remat=-1 : f32[4,8]\n"
            "  %15 = matmul(%5, %14) trans_a=true remat=-1 : f32[8,8]\n"
            "  %16 = matmul(%14, %2) trans_b=true remat=-1 : f32[4,8]\n"
            "  %17 = matmul(%0, %1) remat=-1 : f32[4,8]\n"
            "  %18 = mul(%17, %17) remat=-1 : f32[4,8]\n"
            "  %19 = mul(%16, %18) remat=-1 : f32[4,8]\n"
            "  %20 = matmul(%0, %19) trans_a=true remat=-1 : f32[8,8]\n"
            "  return (%9, %15, %20)\n"
            "}\n");
}

TEST(Remat, ValuesAreBitIdentical) {
  ir::Graph plain = ir::parse(kTwoCalls);
  ir::Graph g = plain;
  ASSERT_TRUE(make_remat()->run(g));
  std::vector<cpu_test::Operand> in = operands_for(plain);
  auto want = testing::run_graph(backends::cpu_backend(), plain, in);
  auto got = testing::run_graph(backends::cpu_backend(), g, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t o = 0; o < want.size(); ++o) EXPECT_EQ(got[o], want[o]) << "output " << o;
}

TEST(Remat, MarksRoundTripAndEnterTheGraphHash) {
  ir::Graph g = ir::parse(kTwoCalls);
  EXPECT_EQ(ir::to_text(g), kTwoCalls);
  ir::Graph unmarked = g;
  for (ir::Instr& in : unmarked.instrs) in.remat = 0;
  EXPECT_NE(ir::graph_hash(g), ir::graph_hash(unmarked));
  // CSE ignores the marks (instr_hash): the traced graph optimizes as without them.
  EXPECT_EQ(ir::instr_hash(g.instrs[0]), ir::instr_hash(unmarked.instrs[0]));
}

TEST(Remat, LeavesGraphsWithoutCheckpointedBackwardAlone) {
  std::string unmarked = kTwoCalls;
  for (const std::string m : {" remat=-1", " remat=1", " remat=2"})
    for (size_t p; (p = unmarked.find(m)) != std::string::npos;) unmarked.erase(p, m.size());
  bool changed = true;
  EXPECT_EQ(rematted(unmarked, &changed), unmarked);
  EXPECT_FALSE(changed) << "no marks";
  // Forward only (evaluation with checkpointing on): nothing reads the calls later.
  const char* forward =
      "graph(%0: f32[4,8], %1: f32[8,8]) {\n"
      "  %2 = matmul(%0, %1) remat=1 : f32[4,8]\n"
      "  %3 = tanh(%2) remat=1 : f32[4,8]\n"
      "  %4 = sum(%3) : f32[]\n"
      "  return (%4)\n}\n";
  EXPECT_EQ(rematted(forward, &changed), forward);
  EXPECT_FALSE(changed) << "no backward";
}

TEST(Remat, ASecondRunChangesNothing) {
  ir::Graph g = ir::parse(kTwoCalls);
  ASSERT_TRUE(make_remat()->run(g));
  std::string once = ir::to_text(g);
  EXPECT_FALSE(make_remat()->run(g));
  EXPECT_EQ(ir::to_text(g), once);
}

// What a call's backward reads that is a graph output, a collective, or read by
// the rest of the forward stays as it is; a random op is cloned with the same
// generator operand, so the recomputed mask is the same.
TEST(Remat, KeepsOutputsAndCollectivesAndClonesDropoutWithItsGenerator) {
  const char* text =
      "graph(%0: f32[4,8], %1: i64[2], %2: f32[4,8]) {\n"
      "  %3 = dropout(%0, %1) dropout_p=0.5 remat=1 : f32[4,8]\n"
      "  %4 = all_reduce(%3) remat=1 : f32[4,8]\n"
      "  %5 = exp(%4) remat=1 : f32[4,8]\n"
      "  %6 = mul(%5, %3) remat=1 : f32[4,8]\n"
      "  %7 = mul(%6, %2) remat=-1 : f32[4,8]\n"
      "  %8 = mul(%7, %5) remat=-1 : f32[4,8]\n"
      "  %9 = mul(%8, %3) remat=-1 : f32[4,8]\n"
      "  return (%5, %9)\n}\n";
  bool changed = false;
  std::string out = rematted(text, &changed);
  EXPECT_TRUE(changed);
  EXPECT_EQ(out,
            "graph(%0: f32[4,8], %1: i64[2], %2: f32[4,8]) {\n"
            "  %3 = dropout(%0, %1) dropout_p=0.5 remat=1 : f32[4,8]\n"
            "  %4 = all_reduce(%3) remat=1 : f32[4,8]\n"
            "  %5 = exp(%4) remat=1 : f32[4,8]\n"
            "  %6 = mul(%5, %3) remat=1 : f32[4,8]\n"
            "  %7 = dropout(%0, %1) dropout_p=0.5 remat=-1 : f32[4,8]\n"
            "  %8 = mul(%5, %7) remat=-1 : f32[4,8]\n"
            "  %9 = mul(%8, %2) remat=-1 : f32[4,8]\n"
            "  %10 = mul(%9, %5) remat=-1 : f32[4,8]\n"
            "  %11 = mul(%10, %7) remat=-1 : f32[4,8]\n"
            "  return (%5, %11)\n}\n");
}

// An L-layer residual tanh MLP with its backward, as autograd traces it:
// layer k: z = h W_k, a = tanh(z), h' = a + h; backward: dz = g (1 - a^2),
// dW_k = h^T dz, g' = dz W_k^T + g. `marked` adds the layer-call marks.
std::string residual_mlp(int layers, int rows, int width, bool marked) {
  std::string s = "graph(%0: f32[" + std::to_string(rows) + "," + std::to_string(width) + "]";
  const std::string act = "f32[" + std::to_string(rows) + "," + std::to_string(width) + "]";
  const std::string wt = "f32[" + std::to_string(width) + "," + std::to_string(width) + "]";
  for (int k = 0; k < layers; ++k) s += ", %" + std::to_string(k + 1) + ": " + wt;
  s += ") {\n";
  int next = layers + 1;
  auto v = [](int id) { return "%" + std::to_string(id); };
  auto emit = [&](const std::string& rhs, const std::string& type, int mark) {
    s += "  " + v(next) + " = " + rhs + (marked && mark ? " remat=" + std::to_string(mark) : "") +
         " : " + type + "\n";
    return next++;
  };
  std::vector<int> h{0}, a;
  for (int k = 0; k < layers; ++k) {
    int z = emit("matmul(" + v(h.back()) + ", " + v(k + 1) + ")", act, k + 1);
    a.push_back(emit("tanh(" + v(z) + ")", act, k + 1));
    h.push_back(emit("add(" + v(a.back()) + ", " + v(h.back()) + ")", act, k + 1));
  }
  int loss = emit("sum(" + v(h.back()) + ")", "f32[]", 0);
  int one = emit("full() shape=[] fill_value=1", "f32[]", 0);
  int g = emit(
      "expand(" + v(one) + ") shape=[" + std::to_string(rows) + "," + std::to_string(width) + "]",
      act, -1);
  std::vector<int> outs{loss};
  for (int k = layers - 1; k >= 0; --k) {
    int sq = emit("mul(" + v(a[k]) + ", " + v(a[k]) + ")", act, -1);
    int d = emit("sub(" + v(one) + ", " + v(sq) + ")", act, -1);
    int dz = emit("mul(" + v(g) + ", " + v(d) + ")", act, -1);
    outs.push_back(emit("matmul(" + v(h[k]) + ", " + v(dz) + ") trans_a=true", wt, -1));
    int back = emit("matmul(" + v(dz) + ", " + v(k + 1) + ") trans_b=true", act, -1);
    g = emit("add(" + v(back) + ", " + v(g) + ")", act, -1);
  }
  s += "  return (";
  for (size_t i = 0; i < outs.size(); ++i) s += (i ? ", " : "") + v(outs[i]);
  return s + ")\n}\n";
}

TEST(Remat, TheMemoryPlanKeepsOneLayersActivationsInsteadOfAll) {
  const int layers = 8;
  ir::Graph plain = ir::parse(residual_mlp(layers, 64, 64, false));
  ir::Graph g = ir::parse(residual_mlp(layers, 64, 64, true));
  ASSERT_TRUE(make_remat()->run(g));
  ir::verify(g);
  for (bool fuse : {false, true}) {
    size_t before = memory::plan_memory(lower(plain, fuse)).arena_bytes;
    size_t after = memory::plan_memory(lower(g, fuse)).arena_bytes;
    // Plain: every layer's a (and h) live until its backward. Remat: the h's
    // (the layer inputs) and one layer's recomputed a at a time.
    const size_t act = 64 * 64 * 4;
    EXPECT_GE(before, (2 * layers - 1) * act) << "fuse " << fuse;
    EXPECT_LE(after, (layers + 4) * act) << "fuse " << fuse;
    EXPECT_LT(after, before) << "fuse " << fuse;
  }
  std::vector<cpu_test::Operand> in = operands_for(plain);
  EXPECT_EQ(testing::run_graph(backends::cpu_backend(), g, in),
            testing::run_graph(backends::cpu_backend(), plain, in));
}

}  // namespace
}  // namespace loom::compiler
