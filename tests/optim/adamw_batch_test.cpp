// AdamW over all parameters in one launch (compiler/memory/batch.h,
// backends/cpu/fused_batch.cpp, the direct kernel of backends/cpu/adamw.h):
// the optimizer step's per-parameter fused groups form one batch, and the
// batched schedule gives the same bits as the unbatched, interpreted one
// (LOOM_FUSED_BATCH=0) for parameters, exp_avg and
// exp_avg_sq — weight-decay groups, a warm-up learning rate (0 at first),
// gradient clipping, a parameter without a gradient, a frozen one, a bf16
// one. Steps whose storage the memory plan shares are never batched.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_executable.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/memory/batch.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "lazy/lazy_test_util.h"
#include "optim/optim_test_util.h"

namespace loom {
namespace {

struct BatchRun {
  std::vector<Tensor> params;              // [4] is frozen, [3] never gets a gradient
  std::vector<std::vector<float>> values;  // params then exp_avg, exp_avg_sq per state
  int64_t batch_launches = 0;
  int64_t direct_groups = 0;  // groups run by the direct AdamW kernel
};

std::vector<float> batch_as_floats(const Tensor& t) {
  return cast(t, DType::f32).to_vector<float>();
}

BatchRun batch_adamw_steps(int steps) {
  Device dev("lazy");
  manual_seed(3);
  BatchRun r;
  const std::vector<Shape> shapes = {{64, 200}, {200}, {3, 5}, {7}, {16}, {40, 33}};
  for (const Shape& s : shapes) r.params.push_back((randn(s) * 0.5).to(dev).requires_grad_());
  r.params[5] = cast(r.params[5].detach(), DType::bf16).requires_grad_();
  std::vector<optim::ParamGroup> groups = {
      {{r.params[0], r.params[2]}, {{"weight_decay", 0.1}}, {}},
      {{r.params[1], r.params[3], r.params[5]}, {{"weight_decay", 0.0}}, {}}};  // [4]: frozen
  optim::AdamW opt(groups, {.lr = 3e-2});
  optim::LRScheduler sched("linear", opt, {.num_warmup_steps = 2, .num_training_steps = 6});
  lazy::mark_step();
  metrics::reset();
  for (int s = 0; s < steps; ++s) {
    for (size_t i = 0; i < r.params.size(); ++i) {
      if (i == 3 || i == 4) continue;
      Tensor g = randn(r.params[i].shape()) * (0.1 * (s + 1));
      r.params[i].set_grad(cast(g, r.params[i].dtype()).to(dev));
    }
    optim::clip_grad_norm_(r.params, 0.5);
    opt.step();
    sched.step();
    opt.zero_grad();
    lazy::mark_step();
  }
  lazy::wait();
  r.batch_launches = metrics::counter("FusedBatchLaunches");
  r.direct_groups = metrics::counter("AdamWGroupKernels");
  for (const Tensor& p : r.params) r.values.push_back(batch_as_floats(p));
  for (const auto& [index, ps] : opt.state_dict().state)
    for (const auto& [name, t] : ps.buffers) r.values.push_back(batch_as_floats(t));
  return r;
}

void expect_batch_bits(const BatchRun& a, const BatchRun& b) {
  ASSERT_EQ(a.values.size(), b.values.size());
  for (size_t k = 0; k < a.values.size(); ++k) {
    ASSERT_EQ(a.values[k].size(), b.values[k].size()) << "tensor " << k;
    for (size_t i = 0; i < a.values[k].size(); ++i)
      ASSERT_EQ(std::memcmp(&a.values[k][i], &b.values[k][i], sizeof(float)), 0)
          << "tensor " << k << " element " << i << ": " << a.values[k][i] << " (batched) vs "
          << b.values[k][i] << " (unbatched)";
  }
}

TEST(AdamWBatch, BatchedStepsAreBitIdenticalToTheUnbatchedSchedule) {
  testing::reset_lazy();
  BatchRun batched = batch_adamw_steps(4);
  EXPECT_EQ(batched.batch_launches, 4) << "one batched launch per optimizer step";
  EXPECT_EQ(batched.direct_groups, 4 * 3) << "the f32 parameters' groups (the bf16 one is "
                                             "interpreted)";
  testing::reset_lazy();
  BatchRun plain;
  {
    testing::ScopedEnv off("LOOM_FUSED_BATCH", "0");
    plain = batch_adamw_steps(4);
  }
  EXPECT_EQ(plain.batch_launches, 0);
  expect_batch_bits(batched, plain);
  // The parameter without a gradient and the frozen one did not move.
  EXPECT_EQ(batched.values[3], plain.values[3]);
  testing::reset_lazy();
}

// The last dumped graph of the largest step (the optimizer step) as IR.
ir::Graph adamw_step_graph(const std::string& dir) {
  std::string best;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find(".dce.ir") == std::string::npos) continue;
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().size() > best.size()) best = text.str();
  }
  return ir::parse(best);
}

TEST(AdamWBatch, TheStepGraphsUpdatesFormOneBatchOfAllParameters) {
  testing::reset_lazy();
  testing::TempDir dump;
  {
    testing::ScopedEnv env("LOOM_DUMP_IR", dump.path());
    batch_adamw_steps(1);
  }
  testing::reset_lazy();
  auto program = std::make_shared<const compiler::Program>(
      compiler::lower(adamw_step_graph(dump.path()), true));
  auto exe = backends::cpu_backend().compile_kernels(program);
  std::vector<int> batches = compiler::memory::plan_fused_batches(*program, exe->plan());
  int heads = 0, members = 0;
  for (int b : batches)
    if (b >= 2) ++heads, members += b;
  EXPECT_EQ(heads, 1) << ir::to_text(program->graph);
  EXPECT_EQ(members, 4) << "the four parameters with gradients, one fused group each";
}

// Group A reads %5; group B's output %10 is planned into %5's buffer (%5 is
// dead after A; B's own input %1 has another type): run at once, B could
// overwrite %5 before A reads it, so they are not batched. With %1 of %10's
// type, B writes over %1 instead and the two groups form a batch. (B starts
// with an instr reading the reshape's result, so it is a group of its own.)
std::string batch_two_groups(const char* b_input) {
  return std::string("graph(%0: f32[256], %1: ") + b_input +
         ", %2: f32[], %3: f32[16,16], %4: f32[], %5: f32[256]) {\n"
         "  %6 = reshape(%3) shape=[256] : f32[256]\n"
         "  %7 = add(%0, %5) : f32[256]\n"
         "  %8 = mul(%7, %2) : f32[256]\n"
         "  %9 = mul(%6, %1) : f32[256]\n"
         "  %10 = add(%9, %4) : f32[256]\n"
         "  return (%8, %10)\n"
         "}\n";
}

TEST(FusedBatchPlan, GroupsSharingStorageAreNotBatched) {
  auto conflict = std::make_shared<const compiler::Program>(
      compiler::lower(ir::parse(batch_two_groups("f32[1]")), true));
  ASSERT_EQ(conflict->steps.size(), 3u);
  auto exe = backends::cpu_backend().compile_kernels(conflict);
  ASSERT_EQ(exe->plan().donor[10], 5) << "the plan this test is about changed";
  EXPECT_EQ(compiler::memory::plan_fused_batches(*conflict, exe->plan()),
            (std::vector<int>{1, 1, 1}));

  auto free = std::make_shared<const compiler::Program>(
      compiler::lower(ir::parse(batch_two_groups("f32[256]")), true));
  auto exe2 = backends::cpu_backend().compile_kernels(free);
  EXPECT_EQ(compiler::memory::plan_fused_batches(*free, exe2->plan()), (std::vector<int>{1, 2, 0}));
}

// Group B ([8,8]) reads group A's result %4 ([8], broadcast), with no other step
// between them: run at once, B could read %4 before A wrote it, so the
// read-after-write rule keeps them apart. The control reads %0 instead and
// batches, so it is that rule (not a step between) that cut the run.
std::string batch_reader_of(const char* b_reads) {
  return std::string(
             "graph(%0: f32[8], %1: f32[], %2: f32[8,8]) {\n"
             "  %3 = mul(%0, %1) : f32[8]\n"
             "  %4 = exp(%3) : f32[8]\n"
             "  %5 = mul(%2, ") +
         b_reads +
         ") : f32[8,8]\n"
         "  %6 = add(%5, %2) : f32[8,8]\n"
         "  return (%4, %6)\n"
         "}\n";
}

TEST(FusedBatchPlan, AGroupReadingAnotherGroupsResultIsNotBatched) {
  auto p = std::make_shared<const compiler::Program>(
      compiler::lower(ir::parse(batch_reader_of("%4")), true));
  ASSERT_EQ(p->steps.size(), 2u) << ir::to_text(p->graph);
  ASSERT_TRUE(p->steps[0].fused && p->steps[1].fused) << "two fused groups, nothing between";
  auto exe = backends::cpu_backend().compile_kernels(p);
  EXPECT_EQ(compiler::memory::plan_fused_batches(*p, exe->plan()), (std::vector<int>{1, 1}));

  auto control = std::make_shared<const compiler::Program>(
      compiler::lower(ir::parse(batch_reader_of("%0")), true));
  ASSERT_EQ(control->steps.size(), 2u) << ir::to_text(control->graph);
  auto exe2 = backends::cpu_backend().compile_kernels(control);
  EXPECT_EQ(compiler::memory::plan_fused_batches(*control, exe2->plan()), (std::vector<int>{2, 0}));
}

}  // namespace
}  // namespace loom

namespace loom {
namespace {

// Runs `loss_of` + AdamW + zero_grad + mark_step: two warm-up steps, then
// `steps` more with no host read between them; every measured step must
// donate its state (no DonationVetoed, some DonatedBytes).
void expect_state_donated(optim::AdamW& opt, const std::function<Tensor()>& loss_of, int steps) {
  auto step = [&] {
    loss_of().backward();
    opt.step();
    opt.zero_grad();
    lazy::mark_step();
  };
  step();
  step();
  lazy::wait();
  metrics::reset();
  for (int s = 0; s < steps; ++s) step();
  lazy::wait();
  EXPECT_EQ(metrics::counter("DonationVetoed"), 0);
  EXPECT_GT(metrics::counter("DonatedBytes"), 0);
}

// Every step after the first overwrites the parameters and both moments in
// place (their buffers are donated): none is allocated anew while the old
// one is still alive, which would hold two copies of the optimizer state.
// (The regression: an output reading an input directly kept that input's
// trace node alive, so GPT-2 124M's step held a second exp_avg: 4.1 GB
// peak RSS instead of 2.7 GB.)
TEST(AdamWBatch, ParametersAndMomentsAreDonatedEveryStep) {
  testing::reset_lazy();
  Device dev("lazy");
  manual_seed(5);
  std::vector<Tensor> params = {(randn({32, 16}) * 0.5).to(dev).requires_grad_(),
                                (randn({16}) * 0.5).to(dev).requires_grad_()};
  // Decay on the matrix; none on the vector, whose update then reads the
  // parameter itself (add(param, ...)), as exp_avg's lerp reads exp_avg.
  optim::AdamW opt(
      {{{params[0]}, {{"weight_decay", 0.1}}, {}}, {{params[1]}, {{"weight_decay", 0.0}}, {}}},
      {.lr = 1e-2});
  expect_state_donated(
      opt, [&] { return add(sum(mul(params[0], params[0])), sum(exp(params[1]))); }, 3);
}

// The same when a step is traced while the one before still runs (no host
// read between steps: the Trainer without per-step logging): the inputs of
// step k+1 are step k's results, in flight and held by step k's job when
// step k+1 is collected, and free once it ran. A heavy step (a chain of
// [384,384] matmuls) keeps step k running while step k+1 is traced. (The
// regression: GPT-2 124M held two copies of its state, 4.1 GB against
// 2.7 GB, with --logging_steps larger than the run.)
TEST(AdamWBatch, StateIsDonatedWhenStepsArePipelined) {
  testing::reset_lazy();
  Device dev("lazy");
  manual_seed(6);
  Tensor w = (randn({384, 384}) * 0.05).to(dev).requires_grad_();
  optim::AdamW opt({{{w}, {{"weight_decay", 0.0}}, {}}}, {.lr = 1e-3});
  expect_state_donated(
      opt,
      [&] {
        Tensor h = w;
        for (int k = 0; k < 8; ++k) h = matmul(h, w);
        return sum(h);
      },
      4);
}

}  // namespace
}  // namespace loom
