// Tests of the decompose pass: IR text in and out (softmax becomes
// max/sub/exp/sum/div; nothing changes when the backend has every kernel),
// numerics of each decomposed op against the op itself on the reference
// backend (axes, bf16, ignore_index, label smoothing, causal / bool / float
// masks, fully masked rows), LOOM_DECOMPOSE parsing, and a lazy forward +
// backward with LOOM_DECOMPOSE=all that matches eager.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "backends/cpu_test_util.h"
#include "backends/reference/reference.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "lazy/lazy_test_util.h"
#include "loom/error.h"
#include "ops/compare.h"

namespace loom::compiler {
namespace {

using cpu_test::Operand;
using ops::OpKind;

auto all_but(OpKind missing) {
  return [missing](OpKind op) { return op != missing; };
}

// Runs `g` op by op on `backend`; returns output 0 as doubles.
std::vector<double> run_graph(const backends::KernelBackend& backend, const ir::Graph& g,
                              const std::vector<Operand>& inputs) {
  return testing::run_graph(backend, g, inputs)[0];
}

// One-op graph: op(inputs...; attrs).
ir::Graph one_op(OpKind op, const ops::Attrs& attrs, const std::vector<Operand>& inputs) {
  ir::Graph g;
  std::vector<int> operands;
  for (const Operand& in : inputs) {
    operands.push_back(static_cast<int>(g.inputs.size()));
    g.inputs.push_back(in.type);
  }
  g.instrs.push_back({op, attrs, operands, ops::infer_type(op, g.inputs, attrs)});
  g.outputs = {static_cast<int>(g.inputs.size())};
  return g;
}

// Decomposes the one-op graph and compares both on the reference backend
// (`nan`: the case's answer holds NaN, e.g. a mean over nothing).
void expect_decomposition_matches(OpKind op, const ops::Attrs& attrs,
                                  const std::vector<Operand>& inputs, const std::string& what,
                                  double f32_atol = 1e-6,
                                  testing::Nan nan = testing::Nan::kNotExpected) {
  SCOPED_TRACE(what);
  ir::Graph g = one_op(op, attrs, inputs), d = g;
  ASSERT_TRUE(make_decompose(all_but(op))->run(d));
  ir::verify(d);
  for (const ir::Instr& in : d.instrs) ASSERT_NE(in.op, op) << ir::to_text(d);
  const backends::KernelBackend& ref = backends::reference_backend();
  bool low = g.instrs[0].type.dtype != DType::f32;
  EXPECT_TRUE(testing::all_close(run_graph(ref, d, inputs), run_graph(ref, g, inputs),
                                 low ? 1e-2 : 2e-5, low ? 1e-2 : f32_atol, what, nan));
}

TEST(Decompose, SoftmaxBecomesPrimitives) {
  std::string text =
      "graph(%0: f32[4,8]) {\n"
      "  %1 = softmax(%0) axis=1 : f32[4,8]\n"
      "  %2 = neg(%1) : f32[4,8]\n"
      "  return (%2)\n}\n";
  ir::Graph g = ir::parse(text);
  ASSERT_FALSE(make_decompose([](OpKind) { return true; })->run(g));
  EXPECT_EQ(ir::to_text(g), text);
  ASSERT_TRUE(make_decompose(all_but(OpKind::k_softmax))->run(g));
  ir::verify(g);
  std::string out = ir::to_text(g);
  EXPECT_EQ(out.find("softmax("), std::string::npos) << out;
  for (const char* op : {"max(%0) axes=[1] keepdim=true", "sub(", "exp(", "sum(", "div(", "neg("})
    EXPECT_NE(out.find(op), std::string::npos) << op << " missing in\n" << out;
  EXPECT_NE(out.find("return (%6)"), std::string::npos) << "output remapped to neg\n" << out;
}

TEST(Decompose, LeavesWhatItCannotRewrite) {
  ir::Graph g = ir::parse(
      "graph(%0: f32[3,0], %1: i64[3]) {\n"
      "  %2 = cross_entropy(%0, %1) ignore_index=-100 : f32[]\n"
      "  return (%2)\n}\n");
  EXPECT_FALSE(make_decompose(all_but(OpKind::k_cross_entropy))->run(g));
  EXPECT_EQ(g.instrs.size(), 1u);
}

TEST(Decompose, SoftmaxAndLogSoftmaxNumerics) {
  for (DType dt : {DType::f32, DType::bf16})
    for (int64_t axis = 0; axis < 3; ++axis)
      for (OpKind op : {OpKind::k_softmax, OpKind::k_log_softmax}) {
        ops::Attrs a;
        a.axis = axis;
        Operand x = cpu_test::random_operand({3, 5, 7}, dt, 11 + axis, -6, 6);
        expect_decomposition_matches(
            op, a, {x},
            std::string(ops::op_name(op)) + " axis " + std::to_string(axis) + " " + dtype_name(dt));
      }
}

TEST(Decompose, LayerNormNumerics) {
  ops::Attrs a;
  a.eps = 1e-5;
  Operand w = cpu_test::random_operand({16}, DType::f32, 2),
          b = cpu_test::random_operand({16}, DType::f32, 3);
  expect_decomposition_matches(OpKind::k_layer_norm, a,
                               {cpu_test::random_operand({4, 6, 16}, DType::f32, 1), w, b}, "f32");
  // A large mean: the two-pass variance must not cancel. x - mean in f32
  // loses ~ulp(100) = 8e-6 against the double oracle, hence the atol.
  expect_decomposition_matches(OpKind::k_layer_norm, a,
                               {cpu_test::random_operand({4, 6, 16}, DType::f32, 1, 99, 101), w, b},
                               "f32, mean 100", 5e-5);
  a.eps = 0.5;
  expect_decomposition_matches(OpKind::k_layer_norm, a,
                               {cpu_test::random_operand({5, 16}, DType::bf16, 4), w, b},
                               "bf16 with f32 weights, eps 0.5");
}

TEST(Decompose, CrossEntropyNumerics) {
  Operand logits = cpu_test::random_operand({6, 5}, DType::f32, 5, -4, 4);
  Operand t64 = cpu_test::operand_of({0, 4, -100, 2, 3, -100}, {6}, DType::i64);
  Operand t32 = cpu_test::operand_of({1, 1, 7, 0, 7, 4}, {6}, DType::i32);
  ops::Attrs a;
  a.ignore_index = -100;
  expect_decomposition_matches(OpKind::k_cross_entropy, a, {logits, t64}, "ignore -100");
  a.label_smoothing = 0.1;
  expect_decomposition_matches(OpKind::k_cross_entropy, a, {logits, t64}, "label smoothing 0.1");
  a.ignore_index = 7;
  expect_decomposition_matches(OpKind::k_cross_entropy, a, {logits, t32}, "int32, ignore 7");
  Operand bf = cpu_test::random_operand({6, 5}, DType::bf16, 6, -4, 4);
  expect_decomposition_matches(OpKind::k_cross_entropy, a, {bf, t32}, "bf16");
  Operand none = cpu_test::operand_of({7, 7, 7, 7, 7, 7}, {6}, DType::i32);
  expect_decomposition_matches(OpKind::k_cross_entropy, a, {logits, none}, "all ignored: NaN", 1e-6,
                               testing::Nan::kExpected);
}

TEST(Decompose, AttentionNumerics) {
  Operand q = cpu_test::random_operand({2, 3, 4, 8}, DType::f32, 7);
  Operand k = cpu_test::random_operand({2, 3, 6, 8}, DType::f32, 8);
  Operand v = cpu_test::random_operand({2, 3, 6, 5}, DType::f32, 9);
  ops::Attrs a;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "plain");
  a.causal = true;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "causal");
  // Bool mask [4, 6]: row 1 attends nothing (zeros), with causal on top.
  std::vector<double> keep(24, 1.0);
  for (int j = 0; j < 6; ++j) keep[6 + j] = 0;
  keep[2 * 6 + 0] = keep[3 * 6 + 3] = 0;
  Operand bool_mask = cpu_test::operand_of(keep, {4, 6}, DType::boolean);
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v, bool_mask}, "causal + bool mask");
  a.causal = false;
  a.scale = 0.3;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v, bool_mask}, "bool mask, scale");
  // Float mask [2, 1, 4, 6], broadcast over heads; row 0 of batch 1 all -inf.
  Operand fmask = cpu_test::random_operand({2, 1, 4, 6}, DType::f32, 10, -3, 0);
  for (int j = 0; j < 6; ++j)
    store_from_double(fmask.buffer->data(), DType::f32, 24 + j, -INFINITY);
  store_from_double(fmask.buffer->data(), DType::f32, 3, -INFINITY);
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v, fmask}, "float mask");
  a.causal = true;
  Operand qb = cpu_test::random_operand({2, 4, 8}, DType::bf16, 12);
  Operand kb = cpu_test::random_operand({2, 6, 8}, DType::bf16, 13);
  Operand vb = cpu_test::random_operand({2, 6, 5}, DType::bf16, 14);
  expect_decomposition_matches(OpKind::k_attention, a, {qb, kb, vb}, "bf16 causal");
  Operand k0 = cpu_test::random_operand({2, 0, 8}, DType::bf16, 15);
  Operand v0 = cpu_test::random_operand({2, 0, 5}, DType::bf16, 16);
  expect_decomposition_matches(OpKind::k_attention, a, {qb, k0, v0}, "no keys: zeros");
  // Grouped-query attention: 6 q heads over 2 kv heads (k, v repeated).
  Operand qg = cpu_test::random_operand({2, 6, 4, 8}, DType::f32, 17);
  Operand kg = cpu_test::random_operand({2, 2, 6, 8}, DType::f32, 18);
  Operand vg = cpu_test::random_operand({2, 2, 6, 5}, DType::f32, 19);
  expect_decomposition_matches(OpKind::k_attention, a, {qg, kg, vg}, "gqa causal");
  a.causal = false;
  expect_decomposition_matches(OpKind::k_attention, a, {qg, kg, vg, bool_mask}, "gqa bool mask");
}

TEST(Decompose, EnvListsForcedOps) {
  {
    testing::ScopedEnv env("LOOM_DECOMPOSE", " softmax,layer_norm ");
    EXPECT_EQ(forced_decompositions(),
              (std::vector<OpKind>{OpKind::k_softmax, OpKind::k_layer_norm}));
    ir::Graph g = ir::parse(
        "graph(%0: f32[4,8]) {\n  %1 = softmax(%0) axis=1 : f32[4,8]\n  return (%1)\n}\n");
    default_pipeline().run(g);
    ir::verify(g);
    EXPECT_EQ(ir::to_text(g).find("softmax("), std::string::npos) << ir::to_text(g);
  }
  {
    testing::ScopedEnv env("LOOM_DECOMPOSE", "all");
    EXPECT_EQ(forced_decompositions().size(), 7u);  // with cross-entropy's two gradient ops
  }
  for (const char* bad : {"softmax,bogus", "matmul"}) {
    testing::ScopedEnv env("LOOM_DECOMPOSE", bad);
    try {
      forced_decompositions();
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[decompose] LOOM_DECOMPOSE names"), std::string::npos)
          << e.what();
    }
  }
  testing::ScopedEnv unset("LOOM_DECOMPOSE", std::nullopt);
  EXPECT_TRUE(forced_decompositions().empty());
}

// Shapes and options the numerics tests above do not reach: causal with
// T > S, a 1-d bool mask and a float mask under causal, f16, a size-1 softmax
// axis, rank 0, cross_entropy with no rows.
TEST(Decompose, EdgeShapesMatchTheReference) {
  ops::Attrs a;
  Operand q = cpu_test::random_operand({2, 6, 8}, DType::f32, 21);
  Operand k = cpu_test::random_operand({2, 4, 8}, DType::f32, 22);
  Operand v = cpu_test::random_operand({2, 4, 3}, DType::f32, 23);
  a.causal = true;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "causal T > S");
  Operand m1 = cpu_test::operand_of({1, 0, 1, 1}, {4}, DType::boolean);
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v, m1}, "causal + 1-d bool mask");
  Operand fm = cpu_test::random_operand({6, 4}, DType::f32, 24, -2, 0);
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v, fm}, "causal + float mask");
  a.causal = false;
  expect_decomposition_matches(OpKind::k_attention, a,
                               {cpu_test::random_operand({3, 8}, DType::f16, 25),
                                cpu_test::random_operand({5, 8}, DType::f16, 26),
                                cpu_test::random_operand({5, 2}, DType::f16, 27)},
                               "f16, rank 2");
  ops::Attrs s;
  s.axis = 1;
  expect_decomposition_matches(OpKind::k_softmax, s,
                               {cpu_test::random_operand({3, 1, 4}, DType::f32, 28)},
                               "softmax over a size-1 axis");
  s.axis = 0;
  expect_decomposition_matches(OpKind::k_log_softmax, s,
                               {cpu_test::random_operand({}, DType::f32, 29)}, "rank 0");
  ops::Attrs c;
  c.ignore_index = -100;
  expect_decomposition_matches(
      OpKind::k_cross_entropy, c,
      {cpu_test::random_operand({0, 5}, DType::f32, 30), cpu_test::operand_of({}, {0}, DType::i64)},
      "no rows: NaN", 1e-6, testing::Nan::kExpected);
  ops::Attrs l;
  l.eps = 1e-5;
  expect_decomposition_matches(OpKind::k_layer_norm, l,
                               {cpu_test::random_operand({3, 32}, DType::f16, 31),
                                cpu_test::random_operand({32}, DType::f16, 32),
                                cpu_test::random_operand({32}, DType::f16, 33)},
                               "layer_norm f16");
}

// Head size 0: the reference (and the cpu kernel, which defers to it) gives
// zeros for any scale; the default scale 1/sqrt(0) = inf made the
// decomposition's scores 0 * inf = NaN.
TEST(Decompose, AttentionWithHeadSizeZero) {
  Operand q = cpu_test::random_operand({2, 3, 0}, DType::f32, 1);
  Operand k = cpu_test::random_operand({2, 4, 0}, DType::f32, 2);
  Operand v = cpu_test::random_operand({2, 4, 5}, DType::f32, 3);
  ops::Attrs a;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "default scale: zeros");
  a.causal = true;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "causal, default scale");
  a.causal = false;
  a.scale = 0.5;
  expect_decomposition_matches(OpKind::k_attention, a, {q, k, v}, "scale 0.5");
}

// ---- end to end on the lazy device ----

struct LossAndGrads {
  Tensor loss, grad_x, grad_w;
};

// layer_norm -> causal attention -> softmax / log_softmax -> cross_entropy,
// forward and backward.
LossAndGrads forward_backward(const Device& dev) {
  manual_seed(3);
  Tensor x = randn({2, 4, 8}).to(dev).requires_grad_();
  Tensor w = (randn({8}) * 0.1 + 1.0).to(dev).requires_grad_();
  Tensor b = randn({8}).to(dev);
  Tensor h = layer_norm(x, w, b);
  Tensor att = scaled_dot_product_attention(h, h * 0.5, h, Tensor(), true);  // [2, 4, 8]
  Tensor logits = reshape(att + softmax(att, -1) + log_softmax(att, 1), {8, 8});
  Tensor target = tensor_i64({0, 1, 2, 3, -100, 5, 6, 7}, {8}).to(dev);
  Tensor loss = cross_entropy(logits, target, -100, 0.1);
  loss.backward();
  return {loss, x.grad(), w.grad()};
}

TEST(DecomposeLazy, ForwardBackwardMatchesEager) {
  testing::TempDir dump;
  testing::ScopedEnv env("LOOM_DECOMPOSE", "all");
  testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
  testing::reset_lazy();
  LossAndGrads eager = forward_backward(Device("cpu"));
  LossAndGrads lz = forward_backward(Device("lazy"));
  lazy::mark_step();
  Device cpu("cpu");
  EXPECT_TRUE(testing::all_close(lz.loss.to(cpu), eager.loss, 1e-5, 1e-6));
  EXPECT_TRUE(testing::all_close(lz.grad_x.to(cpu), eager.grad_x, 1e-4, 1e-5));
  EXPECT_TRUE(testing::all_close(lz.grad_w.to(cpu), eager.grad_w, 1e-4, 1e-5));
  EXPECT_GE(metrics::counter("UncachedCompile"), 1);
  int decomposed = 0;
  for (const auto& f : std::filesystem::directory_iterator(dump.path())) {
    std::string name = f.path().filename().string();
    if (name.find(".decompose.ir") != std::string::npos) ++decomposed;
    if (name.find(".dce.ir") == std::string::npos) continue;
    std::stringstream text;
    text << std::ifstream(f.path()).rdbuf();
    for (const char* op : {"softmax(", "layer_norm(", "attention(", "cross_entropy("})
      EXPECT_EQ(text.str().find(op), std::string::npos) << op << " left in " << name;
  }
  EXPECT_GE(decomposed, 1) << "no IR dumped by the decompose pass";
}

TEST(DecomposeLazy, EnvIsPartOfTheCompileKey) {
  testing::reset_lazy();
  Tensor x = randn({3, 5});
  auto run = [&] { return softmax(x.to("lazy"), -1).to(Device("cpu")); };
  Tensor plain = run();
  EXPECT_EQ(metrics::counter("UncachedCompile"), 1);
  {
    testing::ScopedEnv env("LOOM_DECOMPOSE", "softmax");
    EXPECT_TRUE(testing::all_close(run(), plain, 1e-6, 1e-7));
    EXPECT_EQ(metrics::counter("UncachedCompile"), 2) << "a decomposed graph needs its own entry";
    run();
    EXPECT_EQ(metrics::counter("UncachedCompile"), 2);
  }
  run();
  EXPECT_EQ(metrics::counter("UncachedCompile"), 2) << "the plain entry is still cached";
}

}  // namespace
}  // namespace loom::compiler
