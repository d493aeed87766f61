// Gradient zeroing and accumulation in the step graphs (IR level): with
// zero_grad() setting gradients to none (torch's and the Trainer's default),
// a window's first micro-batch writes each gradient directly — no zero
// buffer is filled and then added to — and a later micro-batch adds into the
// gradient it receives, whose buffer the memory plan donates to the sum.
// zero_grad(set_to_none = false) traces that fill (the test sees it), and
// both give the same bits.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_executable.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "lazy/lazy_test_util.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

const ops::TensorType kAccumWeight{{5, 7},
                                   DType::f32};  // the one value of this type: W and its grad

struct AccumRun {
  std::vector<float> weight, bias;
};

// Three micro-batches per window (mark_step after each, as the Trainer),
// two windows; y = tanh(x W + b), loss = mean(y^2).
AccumRun accumulate_windows(bool set_to_none) {
  Device dev("lazy");
  manual_seed(5);
  Tensor w = (randn({5, 7}) * 0.3).to(dev).requires_grad_();
  Tensor b = zeros({7}).to(dev).requires_grad_();
  optim::AdamW opt({w, b}, {.lr = 1e-2});
  lazy::mark_step();
  for (int window = 0; window < 2; ++window) {
    for (int micro = 0; micro < 3; ++micro) {
      Tensor x = randn({4, 5}).to(dev);
      Tensor loss = mean(pow(tanh(add(matmul(x, w), b)), 2.0)) / 3.0;
      loss.backward();
      if (micro < 2) lazy::mark_step();
    }
    opt.step();
    opt.zero_grad(set_to_none);
    lazy::mark_step();
  }
  lazy::wait();
  return {w.to_vector<float>(), b.to_vector<float>()};
}

std::vector<ir::Graph> accum_dumped_graphs(const std::string& dir) {
  std::vector<ir::Graph> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().find(".dce.ir") == std::string::npos) continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    out.push_back(ir::parse(text.str()));
  }
  return out;
}

int accum_weight_inputs(const ir::Graph& g) {
  int n = 0;
  for (const ops::TensorType& t : g.inputs) n += t == kAccumWeight;
  return n;
}

bool accum_has_instr(const ir::Graph& g, ops::OpKind op, const ops::TensorType& type) {
  for (const ir::Instr& in : g.instrs)
    if (in.op == op && in.type == type) return true;
  return false;
}

bool accum_has_adamw(const ir::Graph& g) {
  return accum_has_instr(g, ops::OpKind::k_sqrt, kAccumWeight);
}

TEST(GradAccumulationGraph, FirstMicroBatchWritesGradientsAndLaterOnesAddIntoTheirBuffer) {
  testing::reset_lazy();
  testing::TempDir dump;
  {
    testing::ScopedEnv env("LOOM_DUMP_IR", dump.path());
    accumulate_windows(true);
  }
  testing::reset_lazy();
  std::vector<ir::Graph> graphs = accum_dumped_graphs(dump.path());
  int first = 0, middle = 0, last = 0;
  for (const ir::Graph& g : graphs) {
    if (!accum_has_instr(g, ops::OpKind::k_matmul, ops::TensorType{{4, 7}, DType::f32})) continue;
    const int n = accum_weight_inputs(g);
    EXPECT_FALSE(accum_has_instr(g, ops::OpKind::k_full, kAccumWeight))
        << "a zero gradient is filled\n"
        << ir::to_text(g);
    if (accum_has_adamw(g)) {  // the window's last micro-batch and the update
      ++last;
      EXPECT_EQ(n, 4) << "W, its gradient so far, exp_avg, exp_avg_sq\n" << ir::to_text(g);
    } else if (n == 1) {  // W only: the gradient is written, not added to
      ++first;
    } else {
      ++middle;
      ASSERT_EQ(n, 2) << ir::to_text(g);
      // The gradient output takes the buffer of the gradient input it adds to.
      auto program = std::make_shared<const compiler::Program>(compiler::lower(g, true));
      auto exe = backends::cpu_backend().compile_kernels(program);
      int grad_out = -1;
      for (int o : g.outputs)
        if (g.type_of(o) == kAccumWeight) grad_out = o;
      ASSERT_GE(grad_out, 0);
      const int donor = exe->plan().donor[grad_out];
      ASSERT_GE(donor, 0) << "the accumulated gradient gets a fresh buffer";
      EXPECT_EQ(g.type_of(donor), kAccumWeight);
      const ir::Instr& sum = g.instr_of(grad_out);
      EXPECT_EQ(sum.op, ops::OpKind::k_add);
      EXPECT_TRUE(sum.operands[0] == donor || sum.operands[1] == donor)
          << "donor %" << donor << " is not the gradient added to";
    }
  }
  EXPECT_EQ(first, 1) << "the first micro-batch's graph (cached for the second window)";
  EXPECT_EQ(middle, 1);
  EXPECT_EQ(last, 1);
}

TEST(GradAccumulationGraph, ZeroFilledGradientsAreSeenAndGiveTheSameBits) {
  testing::reset_lazy();
  AccumRun none = accumulate_windows(true);
  testing::reset_lazy();
  testing::TempDir dump;
  AccumRun zeros_run;
  {
    testing::ScopedEnv env("LOOM_DUMP_IR", dump.path());
    zeros_run = accumulate_windows(false);
  }
  testing::reset_lazy();
  bool fill = false;
  for (const ir::Graph& g : accum_dumped_graphs(dump.path()))
    fill = fill || accum_has_instr(g, ops::OpKind::k_full, kAccumWeight);
  EXPECT_TRUE(fill) << "zero_grad(false) should trace the zero fill this file checks for";
  EXPECT_EQ(none.weight, zeros_run.weight);
  EXPECT_EQ(none.bias, zeros_run.bias);
}

}  // namespace
}  // namespace loom
