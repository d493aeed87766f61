// Tests of the fused_cross_entropy pass and its op: IR in -> pass -> the
// fused op replaces matmul + cross_entropy + its backward, and the rewritten
// graph gives the unfused graph's loss and gradients on the reference and cpu
// backends; the cases it must leave alone (forward only, logits kept as an
// output, a small vocabulary, bf16); LOOM_FUSED_CE_MIN_CLASSES parsing; the
// kernels' bad-target error; and lazy training steps (an LM head with
// ignore_index and label smoothing, a tied embedding, the GPT-2 fixture)
// that are fused and match eager and the reference device at 1e-5.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/kernels.h"
#include "backends/cpu_test_util.h"
#include "backends/reference/reference.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/pass.h"
#include "compiler/run_graph.h"
#include "lazy/lazy_test_util.h"
#include "loom/autocast.h"
#include "loom/error.h"
#include "nn/model_test_util.h"
#include "ops/compare.h"
#include "ops/infer.h"

namespace loom::compiler {
// Named (not anonymous): in a unity batch, fused_reduce_test.cpp's and
// decompose_test.cpp's helpers (Step, run_graph) share the anonymous namespace.
namespace fused_ce_test {

using cpu_test::Operand;

bool all_ops(ops::OpKind) { return true; }

using testing::run_graph;

// An LM head over [2, 3, D] hidden states (N = 6 rows), weight [C, D]:
// loss, d hidden, d weight (the batched matmul's gradient summed over the
// batch, as autograd's sum_to writes it). `extra` adds lines before return.
std::string head_ir(int64_t c, int64_t d, const std::string& attrs, const std::string& dtype,
                    const std::string& outputs = "%5, %9, %11") {
  std::ostringstream s;
  auto t = [&](const std::string& shape) { return dtype + "[" + shape + "]"; };
  std::string cd = std::to_string(c) + "," + std::to_string(d);
  s << "graph(%0: " << t("2,3," + std::to_string(d)) << ", %1: " << t(cd)
    << ", %2: i64[6], %3: " << dtype << "[]) {\n"
    << "  %4 = matmul(%0, %1) trans_b=true : " << t("2,3," + std::to_string(c)) << "\n"
    << "  %5 = reshape(%4) shape=[6," << c << "] : " << t("6," + std::to_string(c)) << "\n"
    << "  %6 = cross_entropy(%5, %2)" << attrs << " : " << dtype << "[]\n"
    << "  %7 = cross_entropy_backward(%5, %2, %3)" << attrs << " : " << t("6," + std::to_string(c))
    << "\n"
    << "  %8 = reshape(%7) shape=[2,3," << c << "] : " << t("2,3," + std::to_string(c)) << "\n"
    << "  %9 = matmul(%8, %1) : " << t("2,3," + std::to_string(d)) << "\n"
    << "  %10 = matmul(%8, %0) trans_a=true : " << t("2," + cd) << "\n"
    << "  %11 = sum(%10) axes=[0] : " << t(cd) << "\n"
    << "  return (" << outputs << ")\n}\n";
  return s.str();
}

std::vector<Operand> head_inputs(int64_t c, int64_t d, DType dtype) {
  return {cpu_test::random_operand({2, 3, d}, dtype, 1, -1, 1),
          cpu_test::random_operand({c, d}, dtype, 2, -1, 1),
          cpu_test::operand_of({3, -100, 0, double(c - 1), 1, -100}, {6}, DType::i64),
          cpu_test::operand_of({0.5}, {}, dtype)};
}

bool has_op(const ir::Graph& g, const char* op) {
  return ir::to_text(g).find(std::string("= ") + op + "(") != std::string::npos;
}

ir::Graph fused(const std::string& text, int64_t min_classes) {
  ir::Graph g = ir::parse(text);
  make_fused_cross_entropy(all_ops, min_classes)->run(g);
  make_dce()->run(g);
  ir::verify(g);
  return g;
}

TEST(FusedCrossEntropy, RewritesTheHeadAndMatchesTheUnfusedGraph) {
  for (const char* attrs : {" ignore_index=-100", " ignore_index=-100 label_smoothing=0.1"}) {
    SCOPED_TRACE(attrs);
    int64_t c = 11, d = 5;
    std::string text = head_ir(c, d, attrs, "f32", "%6, %9, %11");
    ir::Graph before = ir::parse(text);
    ir::Graph after = fused(text, 8);
    EXPECT_TRUE(has_op(after, "fused_linear_cross_entropy")) << ir::to_text(after);
    for (const char* gone : {"cross_entropy", "cross_entropy_backward", "matmul"})
      EXPECT_FALSE(has_op(after, gone)) << gone << " left in\n" << ir::to_text(after);
    std::vector<Operand> in = head_inputs(c, d, DType::f32);
    auto want = run_graph(backends::reference_backend(), before, in);
    for (const backends::KernelBackend* b :
         {&backends::reference_backend(), &backends::cpu_backend()}) {
      SCOPED_TRACE(b->name());
      auto got = run_graph(*b, after, in);
      ASSERT_EQ(got.size(), 3u);
      EXPECT_TRUE(testing::all_close(got[0], want[0], 1e-5, 1e-6, "loss"));
      EXPECT_TRUE(testing::all_close(got[1], want[1], 1e-5, 1e-6, "d hidden"));
      EXPECT_TRUE(testing::all_close(got[2], want[2], 1e-5, 1e-6, "d weight"));
    }
  }
}

TEST(FusedCrossEntropy, LeavesOtherGraphsAlone) {
  auto unchanged = [](const std::string& text, int64_t min_classes, const char* why) {
    ir::Graph g = ir::parse(text);
    EXPECT_FALSE(make_fused_cross_entropy(all_ops, min_classes)->run(g)) << why;
    EXPECT_EQ(ir::to_text(g), ir::to_text(ir::parse(text))) << why;
  };
  unchanged(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %9, %11"), 12,
            "vocabulary below threshold");
  unchanged(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %4, %9, %11"), 8,
            "logits are an output");
  unchanged(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %7"), 8,
            "logits gradient is an output");
  unchanged(head_ir(11, 5, " ignore_index=-100", "bf16", "%6, %9, %11"), 8, "bf16 loss");
  unchanged(head_ir(11, 5, " ignore_index=-100", "f32", "%6"), 8, "no backward (only dead code)");
  ir::Graph g = ir::parse(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %9, %11"));
  EXPECT_FALSE(
      make_fused_cross_entropy(
          [](ops::OpKind op) { return op != ops::OpKind::k_fused_linear_cross_entropy; }, 8)
          ->run(g))
      << "backend without the fused kernel";
}

TEST(FusedCrossEntropy, OnlyOneGradientUsed) {
  int64_t c = 9, d = 4;
  for (const char* outputs : {"%6, %9", "%6, %11"}) {
    SCOPED_TRACE(outputs);
    std::string text = head_ir(c, d, " ignore_index=-100", "f32", outputs);
    ir::Graph after = fused(text, 1);
    EXPECT_TRUE(has_op(after, "fused_linear_cross_entropy"));
    std::vector<Operand> in = head_inputs(c, d, DType::f32);
    auto want = run_graph(backends::reference_backend(), ir::parse(text), in);
    auto got = run_graph(backends::cpu_backend(), after, in);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(testing::all_close(got[i], want[i], 1e-5, 1e-6, "output"));
  }
}

TEST(FusedCrossEntropy, EnvThresholdAndBadTargets) {
  {
    testing::ScopedEnv env("LOOM_FUSED_CE_MIN_CLASSES", "12x");
    try {
      make_fused_cross_entropy(all_ops);
      FAIL() << "bad LOOM_FUSED_CE_MIN_CLASSES accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("LOOM_FUSED_CE_MIN_CLASSES='12x'"), std::string::npos)
          << e.what();
    }
  }
  {
    testing::ScopedEnv env("LOOM_FUSED_CE_MIN_CLASSES", "8");
    ir::Graph g = ir::parse(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %9, %11"));
    EXPECT_TRUE(make_fused_cross_entropy(all_ops)->run(g));
  }
  ir::Graph g = fused(head_ir(11, 5, " ignore_index=-100", "f32", "%6, %9, %11"), 1);
  std::vector<Operand> in = head_inputs(11, 5, DType::f32);
  in[2] = cpu_test::operand_of({3, 11, 0, 1, 1, 2}, {6}, DType::i64);
  for (const backends::KernelBackend* b :
       {&backends::reference_backend(), &backends::cpu_backend()}) {
    try {
      run_graph(*b, g, in);
      FAIL() << b->name() << " accepted target 11 of 11 classes";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("[fused_linear_cross_entropy] target 11 is out of range "
                                           "for 11 classes"),
                std::string::npos)
          << e.what();
    }
  }
}

// One fused_linear_cross_entropy(H [n, d], W [c, d], target [n], g) of
// `dtype` operands, ignore_index -100 and label smoothing `eps`.
ir::Graph fused_ce_graph(int64_t n, int64_t c, int64_t d, DType dtype, double eps) {
  ir::Graph g;
  g.inputs = {{{n, d}, dtype}, {{c, d}, dtype}, {{n}, DType::i64}, {{}, DType::f32}};
  ops::Attrs a;
  a.ignore_index = -100;
  a.label_smoothing = eps;
  std::vector<ops::TensorType> types = g.inputs;
  g.instrs.push_back({ops::OpKind::k_fused_linear_cross_entropy,
                      a,
                      {0, 1, 2, 3},
                      ops::infer_type(ops::OpKind::k_fused_linear_cross_entropy, types, a)});
  g.outputs = {4};
  return g;
}

// N = 700 rows over C = 50000 classes: the cpu kernel takes three chunks of
// 234 rows (at most 64 MiB of logits: 335 rows; dW accumulates across them),
// in f32 and bf16.
TEST(FusedCrossEntropy, KernelAcrossChunksMatchesTheReference) {
  int64_t n = 700, c = 50000, d = 4;
  std::vector<double> target(n);
  for (int64_t i = 0; i < n; ++i) target[i] = i % 7 == 3 ? -100 : double((i * 7919) % c);
  for (const char* layout : {"f32", "cols", "rows"}) {
    DType dtype = std::string(layout) == "f32" ? DType::f32 : DType::bf16;
    testing::ScopedEnv env("LOOM_FUSED_CE_BF16_LAYOUT", dtype == DType::f32 ? "" : layout);
    SCOPED_TRACE(layout);
    ir::Graph g = fused_ce_graph(n, c, d, dtype, 0.05);
    std::vector<Operand> in = {cpu_test::random_operand({n, d}, dtype, 5, -2, 2),
                               cpu_test::random_operand({c, d}, dtype, 6, -2, 2),
                               cpu_test::operand_of(target, {n}, DType::i64),
                               cpu_test::operand_of({2.0}, {}, DType::f32)};
    auto want = run_graph(backends::reference_backend(), g, in)[0];
    auto got = run_graph(backends::cpu_backend(), g, in)[0];
    // bf16: the cpu kernel rounds logits and their gradient to bf16 (autocast's
    // roundings), the reference does not.
    double rtol = dtype == DType::f32 ? 1e-5 : 3e-2, atol = dtype == DType::f32 ? 1e-7 : 1e-4;
    EXPECT_TRUE(testing::all_close(got, want, rtol, atol, "packed dW, dH, loss"));
  }
}

// The bf16 kernel's two layouts (cross_entropy_grad.cpp: logits transposed,
// the default with AMX, or rows, the default elsewhere), each test runs both.
constexpr const char* kBf16Layouts[] = {"cols", "rows"};

// The bf16 kernel keeps its logits in f32 (transposed, [C, rows], softmax by
// columns; or rows): its loss is the reference's to f32 rounding, label smoothing
// and ignored rows included, over three chunks of 200 rows (cols: column
// blocks of 128 and 72). A NaN logit makes its own row's
// loss, gradient and the summed loss NaN and leaves the other rows' d input
// finite, as the f32 kernel's row_grad does.
TEST(FusedCrossEntropy, Bf16KernelLossIsTheReferencesAndNanStaysInItsRow) {
  for (const char* layout : kBf16Layouts) {
    testing::ScopedEnv env("LOOM_FUSED_CE_BF16_LAYOUT", layout);
    SCOPED_TRACE(layout);
    ASSERT_EQ(backends::cpu::fused_ce_bf16_transposed(), std::string(layout) == "cols");
    int64_t n = 598, c = 60000, d = 4;
    std::vector<double> target(n);
    for (int64_t i = 0; i < n; ++i) target[i] = i % 5 == 1 ? -100 : double((i * 7919) % c);
    ir::Graph g = fused_ce_graph(n, c, d, DType::bf16, 0.1);
    std::vector<Operand> in = {cpu_test::random_operand({n, d}, DType::bf16, 7, -3, 3),
                               cpu_test::random_operand({c, d}, DType::bf16, 8, -3, 3),
                               cpu_test::operand_of(target, {n}, DType::i64),
                               cpu_test::operand_of({1.0}, {}, DType::f32)};
    auto want = run_graph(backends::reference_backend(), g, in)[0];
    auto got = run_graph(backends::cpu_backend(), g, in)[0];
    size_t loss_at = static_cast<size_t>(c * d + n * d);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_NEAR(got[loss_at], want[loss_at], 2e-6 * std::abs(want[loss_at]));
    EXPECT_TRUE(testing::all_close(got, want, 3e-2, 1e-4, "packed dW, dH, loss"));
    for (int64_t k = 0; k < d; ++k) EXPECT_EQ(got[c * d + 1 * d + k], 0.0) << "ignored row";

    // Row 300 (the second chunk's row 100; cols: its column 100) gets a NaN input.
    store_from_double(in[0].buffer->data(), DType::bf16, 300 * d + 2, std::nan(""));
    got = run_graph(backends::cpu_backend(), g, in)[0];
    EXPECT_TRUE(std::isnan(got[loss_at]));
    for (int64_t k = 0; k < d; ++k) {
      EXPECT_TRUE(std::isnan(got[c * d + 300 * d + k])) << "its own d input";
      EXPECT_TRUE(std::isfinite(got[c * d + 299 * d + k])) << "the chunk's row before it";
      EXPECT_TRUE(std::isfinite(got[c * d + 302 * d + k])) << "the row after it";
    }
  }
}

// Targets with probability near 1 (each row's argmax class, logits ~12
// apart) make the target's own gradient term exp(z_t - lse) - 1 carry the
// result, and C = 1000 ends in a partial tile of 8 classes.
TEST(FusedCrossEntropy, Bf16KernelTargetTermWhenTheTargetDominates) {
  int64_t n = 300, c = 1000, d = 16;
  Operand h = cpu_test::random_operand({n, d}, DType::bf16, 9, -3, 3);
  Operand w = cpu_test::random_operand({c, d}, DType::bf16, 10, -3, 3);
  std::vector<double> target(n);
  for (int64_t i = 0; i < n; ++i) {
    double best = -1e300;
    for (int64_t k = 0; k < c; ++k) {
      double z = 0;
      for (int64_t e = 0; e < d; ++e)
        z += load_as_double(h.buffer->data(), DType::bf16, i * d + e) *
             load_as_double(w.buffer->data(), DType::bf16, k * d + e);
      if (z > best) best = z, target[i] = double(k);
    }
  }
  ir::Graph g = fused_ce_graph(n, c, d, DType::bf16, 0.0);
  std::vector<Operand> in = {h, w, cpu_test::operand_of(target, {n}, DType::i64),
                             cpu_test::operand_of({1.0}, {}, DType::f32)};
  auto want = run_graph(backends::reference_backend(), g, in)[0];
  for (const char* layout : kBf16Layouts) {
    testing::ScopedEnv env("LOOM_FUSED_CE_BF16_LAYOUT", layout);
    ASSERT_EQ(backends::cpu::fused_ce_bf16_transposed(), std::string(layout) == "cols");
    auto got = run_graph(backends::cpu_backend(), g, in)[0];
    EXPECT_TRUE(testing::all_close(got, want, 3e-2, 1e-4, "packed dW, dH, loss")) << layout;
  }
  testing::ScopedEnv bad("LOOM_FUSED_CE_BF16_LAYOUT", "ROWS");
  try {
    run_graph(backends::cpu_backend(), g, in);
    FAIL() << "LOOM_FUSED_CE_BF16_LAYOUT=ROWS was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LOOM_FUSED_CE_BF16_LAYOUT='ROWS': expected cols or rows"),
              std::string::npos)
        << e.what();
  }
}

// A backend without the fused kernel gets its decomposition (the unfused
// program, packed by concat): same numbers as the kernel.
TEST(FusedCrossEntropy, DecompositionMatchesTheKernel) {
  for (const char* attrs : {" ignore_index=-100", " ignore_index=-100 label_smoothing=0.2"}) {
    SCOPED_TRACE(attrs);
    std::string text =
        std::string("graph(%0: f32[6,5], %1: f32[11,5], %2: i64[6], %3: f32[]) {\n") +
        "  %4 = fused_linear_cross_entropy(%0, %1, %2, %3)" + attrs +
        " : f32[18,5]\n  return (%4)\n}\n";
    ir::Graph g = ir::parse(text);
    make_decompose([](ops::OpKind op) {
      return op != ops::OpKind::k_fused_linear_cross_entropy;
    })->run(g);
    make_dce()->run(g);
    ir::verify(g);
    EXPECT_FALSE(has_op(g, "fused_linear_cross_entropy")) << ir::to_text(g);
    std::vector<Operand> in = head_inputs(11, 5, DType::f32);
    in[0] = cpu_test::random_operand({6, 5}, DType::f32, 1, -1, 1);
    auto want = run_graph(backends::reference_backend(), ir::parse(text), in);
    auto got = run_graph(backends::reference_backend(), g, in);
    EXPECT_TRUE(testing::all_close(got[0], want[0], 1e-6, 1e-7, "packed dW, dH, loss"));
  }
}

// ---- lazy training steps ----

struct Step {
  Tensor loss;
  std::vector<Tensor> grads;
};

// Hidden states through tanh (optionally plus a tied embedding of W), an LM
// head with W [C, D], cross_entropy with ignore_index -100 and smoothing.
Step lm_step(const Device& dev, bool tied, double smoothing) {
  manual_seed(7);
  int64_t b = 2, t = 5, d = 6, c = 37;
  Tensor x = randn({b, t, d}).to(dev).requires_grad_();
  Tensor w = (randn({c, d}) * 0.5).to(dev).requires_grad_();
  Tensor h = tanh(x);
  if (tied) h = h + embedding(w, tensor_i64({1, 4, 36, 0, 9, 9, 2, 3, 5, 8}, {b, t}).to(dev));
  Tensor labels = tensor_i64({3, -100, 0, 36, 5, 1, 2, -100, -100, 7}, {b, t}).to(dev);
  Tensor loss = cross_entropy(matmul(h, w, false, true), labels, -100, smoothing) * 1.5;
  loss.backward();
  // Detached: the loss's autograd graph would keep the logits alive (a graph
  // output, so not fused), as the Trainer's training_step detaches too.
  return {loss.detach(), {x.grad(), w.grad()}};
}

int count_fused_dumps(const std::string& dir) {
  int n = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    std::string name = f.path().filename().string();
    if (name.find(".dce.ir") == std::string::npos) continue;
    std::stringstream text;
    text << std::ifstream(f.path()).rdbuf();
    bool fused = text.str().find("= fused_linear_cross_entropy(") != std::string::npos;
    bool left = text.str().find("= cross_entropy(") != std::string::npos;
    n += fused && !left;
    if (!fused || left) ADD_FAILURE() << name << " is not fused:\n" << text.str();
  }
  return n;
}

void expect_step_close(const Step& got, const Step& want, const char* what) {
  Device cpu("cpu");
  EXPECT_TRUE(testing::all_close(got.loss.to(cpu), want.loss.to(cpu), 1e-5, 1e-6)) << what;
  ASSERT_EQ(got.grads.size(), want.grads.size());
  for (size_t i = 0; i < got.grads.size(); ++i)
    EXPECT_TRUE(testing::all_close(got.grads[i].to(cpu), want.grads[i].to(cpu), 1e-5, 1e-6))
        << what << " grad " << i;
}

TEST(FusedCrossEntropyLazy, LmHeadStepsMatchEagerAndReference) {
  testing::ScopedEnv min_classes("LOOM_FUSED_CE_MIN_CLASSES", "1");
  for (bool tied : {false, true})
    for (double smoothing : {0.0, 0.1}) {
      SCOPED_TRACE(std::string(tied ? "tied" : "untied") + " smoothing " +
                   std::to_string(smoothing));
      testing::TempDir dump;
      testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
      testing::reset_lazy();
      Step ref = lm_step(Device("cpu:reference"), tied, smoothing);
      Step eager = lm_step(Device("cpu"), tied, smoothing);
      Step lz = lm_step(Device("lazy"), tied, smoothing);
      lazy::mark_step();
      EXPECT_EQ(count_fused_dumps(dump.path()), 1) << "the step's graph was not fused";
      expect_step_close(lz, ref, "lazy vs reference");
      expect_step_close(lz, eager, "lazy vs eager");
    }
}

void expect_step_near(const Step& got, const Step& want, double rtol, double atol) {
  Device cpu("cpu");
  EXPECT_TRUE(testing::all_close(got.loss.to(cpu), want.loss.to(cpu), 1e-3, 1e-4)) << "loss";
  for (size_t i = 0; i < got.grads.size(); ++i)
    EXPECT_TRUE(testing::all_close(got.grads[i].to(cpu), want.grads[i].to(cpu), rtol, atol))
        << "grad " << i;
}

// Under autocast the head is cast(matmul(bf16, bf16), f32): fused too, with
// bf16 GEMMs, and within bf16 rounding of the unfused eager step.
TEST(FusedCrossEntropyLazy, AutocastBf16HeadIsFused) {
  testing::ScopedEnv min_classes("LOOM_FUSED_CE_MIN_CLASSES", "1");
  testing::TempDir dump;
  testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
  testing::reset_lazy();
  auto step = [](const Device& dev) {
    AutocastGuard amp;
    return lm_step(dev, /*tied=*/true, 0.1);
  };
  Step eager = step(Device("cpu"));
  Step lz = step(Device("lazy"));
  lazy::mark_step();
  EXPECT_EQ(count_fused_dumps(dump.path()), 1) << "the autocast step was not fused";
  expect_step_near(lz, eager, 3e-2, 3e-3);
  Step f32 = lm_step(Device("cpu"), true, 0.1);
  expect_step_near(lz, f32, 6e-2, 6e-3);  // bf16 stays close to f32 too
}

TEST(FusedCrossEntropyLazy, Gpt2FixtureStepMatchesEager) {
  testing::ScopedEnv min_classes("LOOM_FUSED_CE_MIN_CLASSES", "1");
  testing::TempDir dump;
  testing::ScopedEnv dump_env("LOOM_DUMP_IR", dump.path());
  testing::reset_lazy();
  testing::Golden golden =
      testing::load_golden(testing::model_fixture("gpt2") + "/golden.safetensors");
  auto run = [&](const Device& dev) {
    auto model = testing::load_fixture_model("gpt2", dev);
    ModelInputs in = testing::golden_inputs(golden, dev);
    Tensor loss = model->forward(in).loss;  // the logits die here, as in the Trainer
    loss.backward();
    Step s{loss.detach(), {}};
    for (auto& [name, p] : model->named_parameters()) s.grads.push_back(p.grad());
    return s;
  };
  Step eager = run(Device("cpu"));
  Step lz = run(Device("lazy"));
  lazy::mark_step();
  EXPECT_EQ(count_fused_dumps(dump.path()), 1) << "GPT-2's step was not fused";
  expect_step_close(lz, eager, "gpt2 lazy vs eager");
}

}  // namespace fused_ce_test
}  // namespace loom::compiler
