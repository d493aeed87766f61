// The GELU gradient ops on the lazy device: autograd's gelu rules emit one
// gelu_backward / gelu_tanh_backward op (no erf/exp/tanh chain in the traced
// graph), lowering fuses it with the ops around it (a bias gradient's column
// sum included), and the fused interpreter gives the eager kernel's bits —
// the same gelu_backward_f32 — whatever the chunk starts, the dtype or the
// thread count, while agreeing with the reference backend.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "backends/reference/reference.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/program.h"
#include "compiler/run_program.h"
#include "ir/graph.h"
#include "lazy/lazy_test_util.h"
#include "loom/parallel.h"
#include "ops/compare.h"

namespace loom::compiler {
namespace {

using ops::OpKind;

const char* kApprox[] = {"none", "tanh"};

OpKind backward_op(const std::string& approx) {
  return approx == "tanh" ? OpKind::k_gelu_tanh_backward : OpKind::k_gelu_backward;
}

// Number of `op` instrs inside fused steps of p.
int fused_count(const Program& p, OpKind op) {
  int n = 0;
  for (const Step& s : p.steps)
    if (s.fused)
      for (const FusedOp& f : s.group.body) n += f.op == op;
  return n;
}

// dy * gelu'(x + b) and its bias gradient sum(., 0), over [rows, 3001]
// (chunks of 1024 start off row boundaries): one fused step holding the
// gradient op and the column sum; fused and unfused cpu programs give the
// same bits on 1 and 2 threads, the reference agrees to `ref_rtol`.
void expect_fused_exact(const std::string& op, const std::string& dtype, double ref_rtol) {
  std::string t = dtype + "[5,3001]";
  ir::Graph g =
      ir::parse("graph(%0: " + t + ", %1: " + t + ", %2: " + dtype + "[3001]) {\n" +
                "  %3 = add(%1, %2) : " + t + "\n  %4 = " + op + "(%0, %3) : " + t +
                "\n  %5 = sum(%4) axes=[0] : " + dtype + "[3001]\n" + "  return (%4, %5)\n}\n");
  ir::verify(g);
  Program fused = lower(g, true), plain = lower(g, false);
  OpKind kind = ops::op_from_name(op);
  EXPECT_EQ(fused.steps.size(), 1u) << "add, " << op << " and the sum: one fused step";
  EXPECT_EQ(fused_count(fused, kind), 1);
  EXPECT_EQ(fused_count(plain, kind), 0);
  std::vector<std::vector<double>> in = random_inputs(g, 11);
  for (double& x : in[1]) x *= 3.0;  // pre-activations out to the tails
  int threads = get_num_threads();
  set_num_threads(1);
  auto want = run_fused_program(plain, backends::cpu_backend(), in);
  auto got1 = run_fused_program(fused, backends::cpu_backend(), in);
  set_num_threads(2);
  auto got2 = run_fused_program(fused, backends::cpu_backend(), in);
  set_num_threads(threads);
  auto ref = run_fused_program(plain, backends::reference_backend(), in);
  // The gradient (output 0) bit for bit; the column sum (output 1) adds in
  // the unfused kernel's order as well (fused_reduce.cpp).
  for (size_t k = 0; k < want.size(); ++k) {
    std::string what = op + " " + dtype + " output " + std::to_string(k);
    EXPECT_TRUE(testing::all_close(got1[k], want[k], 0, 0, "cpu 1 thread " + what));
    EXPECT_TRUE(testing::all_close(got2[k], want[k], 0, 0, "cpu 2 threads " + what));
    EXPECT_TRUE(testing::all_close(ref[k], want[k], ref_rtol, ref_rtol, "reference " + what));
  }
}

TEST(FusedGeluBackward, JoinsTheBiasGradientGroupAndKeepsTheEagerBits) {
  for (const char* op : {"gelu_backward", "gelu_tanh_backward"}) {
    expect_fused_exact(op, "f32", 1e-5);
    expect_fused_exact(op, "bf16", 1.0 / 64);  // bf16 sums of 5 rounded terms
  }
}

// The gradient of sum(gelu(x) * r) with respect to x on `dev`, as f32 on the cpu.
Tensor gelu_input_grad(const Device& dev, const std::string& approx, DType dtype) {
  manual_seed(41);
  // 63021 elements: two threads split them off chunk and vector boundaries.
  Tensor x0 = cast(randn({3, 7, 3001}) * 3.0, dtype);
  Tensor r0 = cast(randn({3, 7, 3001}), dtype);
  Tensor x = x0.to(dev).detach().requires_grad_();
  Tensor loss = sum(gelu(x, approx) * r0.to(dev));
  loss.backward();
  if (dev.is_lazy()) lazy::mark_step();
  EXPECT_EQ(x.grad().dtype(), dtype);
  return cast(x.grad().to(Device("cpu")), DType::f32);
}

TEST(GeluBackwardLazy, InputGradientIsBitIdenticalToEager) {
  testing::reset_lazy();
  for (const char* approx : kApprox) {
    for (DType dtype : {DType::f32, DType::bf16}) {
      SCOPED_TRACE(std::string(approx) + " " + dtype_name(dtype));
      std::vector<float> eager = gelu_input_grad(Device("cpu"), approx, dtype).to_vector<float>();
      std::vector<float> lz = gelu_input_grad(Device("lazy"), approx, dtype).to_vector<float>();
      ASSERT_EQ(eager.size(), lz.size());
      int64_t differ = 0;
      for (size_t i = 0; i < eager.size(); ++i)
        if (std::bit_cast<uint32_t>(eager[i]) != std::bit_cast<uint32_t>(lz[i]) && differ++ < 5)
          ADD_FAILURE() << "element " << i << ": lazy " << lz[i] << ", eager " << eager[i];
      EXPECT_EQ(differ, 0) << "elements whose bits differ";
    }
  }
  // Not vacuous: r * gelu'(x) in double for the exact f32 case.
  manual_seed(41);
  std::vector<double> x = (randn({3, 7, 3001}) * 3.0).to_vector<double>();
  std::vector<double> r = randn({3, 7, 3001}).to_vector<double>();
  std::vector<double> want(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    double cdf = 0.5 * std::erfc(-x[i] / std::numbers::sqrt2);
    double pdf = std::exp(-0.5 * x[i] * x[i]) / std::sqrt(2.0 * std::numbers::pi);
    want[i] = r[i] * (cdf + x[i] * pdf);
  }
  std::vector<double> got = gelu_input_grad(Device("cpu"), "none", DType::f32).to_vector<double>();
  EXPECT_TRUE(testing::all_close(got, want, 1e-5, 1e-6, "exact gelu gradient"));
}

// Counts of each op kind in the IR text `text`.
std::vector<int> op_counts(const std::string& text) {
  ir::Graph g = ir::parse(text);
  std::vector<int> n(ops::kNumOps, 0);
  for (const ir::Instr& in : g.instrs) ++n[static_cast<int>(in.op)];
  return n;
}

// Traces a GELU MLP layer's forward and backward on the lazy device and reads
// the graphs LOOM_DUMP_IR writes after each compiler pass.
TEST(GeluBackwardLazy, BackwardGraphHoldsOneGradientOpAndNoErfExpTanh) {
  for (const char* approx : kApprox) {
    SCOPED_TRACE(approx);
    testing::TempDir dump;
    testing::ScopedEnv env("LOOM_DUMP_IR", dump.path());
    testing::reset_lazy();
    manual_seed(42);
    Device dev("lazy");
    Tensor x = randn({8, 16}).to(dev);
    Tensor w = (randn({16, 32}) * 0.25).to(dev).requires_grad_();
    Tensor b = randn({32}).to(dev).requires_grad_();
    Tensor loss = sum(gelu(matmul(x, w) + b, approx) * 0.5);
    loss.backward();
    lazy::mark_step();
    int graphs = 0;
    std::string last;
    for (const auto& f : std::filesystem::directory_iterator(dump.path())) {
      if (f.path().extension() != ".ir") continue;
      std::stringstream text;
      text << std::ifstream(f.path()).rdbuf();
      std::vector<int> n = op_counts(text.str());
      std::string name = f.path().filename().string();
      EXPECT_EQ(n[static_cast<int>(backward_op(approx))], 1) << name;
      for (OpKind op : {OpKind::k_erf, OpKind::k_exp, OpKind::k_tanh})
        EXPECT_EQ(n[static_cast<int>(op)], 0) << ops::op_name(op) << " in " << name;
      if (name > last) last = name;
      ++graphs;
    }
    ASSERT_GT(graphs, 0) << "no IR dumped";
    EXPECT_FALSE(b.grad().to(Device("cpu")).to_vector<float>().empty());
  }
}

// The lowering of a traced step puts the gradient op into a fused group.
TEST(GeluBackwardLazy, LoweringFusesTheGradientOp) {
  for (const char* approx : kApprox) {
    std::string op(ops::op_name(backward_op(approx)));
    ir::Graph g = ir::parse(
        "graph(%0: f32[8,32], %1: f32[8,32]) {\n"
        "  %2 = mul(%0, %0) : f32[8,32]\n"
        "  %3 = " +
        op + "(%2, %1) : f32[8,32]\n  return (%3)\n}\n");
    Program p = lower(g, true);
    ASSERT_EQ(p.steps.size(), 1u) << op;
    EXPECT_TRUE(p.steps[0].fused);
    EXPECT_EQ(fused_count(p, backward_op(approx)), 1) << op;
  }
}

}  // namespace
}  // namespace loom::compiler
