// The simulated device lazy:sim (backends/sim/): its memory is out of the
// host's reach (a host access faults), copies round-trip, its stream runs
// in order and reports kernel errors, and training on it gives lazy:cpu's
// numbers bit for bit. Plus device names with an index, and the memory plan
// at run time: a steady-state step allocates no arena and donates; eager
// ops as cached one-node programs.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/executable.h"
#include "backends/sim/sim_backend.h"
#include "common/error_of.h"
#include "common/host_fault.h"
#include "lazy/dispatch.h"
#include "lazy/lazy_test_util.h"
#include "loom/error.h"

namespace loom {
namespace {

using testing::TinyMlp;

TEST(SimDevice, HostAccessToDeviceMemoryFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const backends::KernelBackend& sim = backends::sim_backend();
  BufferPtr b = sim.allocate(256);
  EXPECT_FALSE(b->host_visible());
  float host[4] = {1, 2, 3, 4};
  sim.copy_to_device(host, *b, sizeof host);  // through the backend: fine
  EXPECT_EXIT(
      {
        // A buffer the stream has written: its pages were opened for that
        // work and must be closed again once the stream is idle.
        const backends::KernelBackend& s = backends::sim_backend();
        BufferPtr d = s.allocate(256);
        std::vector<float> values(4, 5.0f);
        s.copy_to_device(values.data(), *d, values.size() * sizeof(float));
        s.stream().synchronize();
        std::printf("%f\n", static_cast<volatile float*>(d->data())[0]);  // a host read
        std::exit(0);
      },
      testing::died_of_host_fault, testing::kHostFaultMessage);
}

TEST(SimDevice, CopiesRoundTripThroughTheStream) {
  const backends::KernelBackend& sim = backends::sim_backend();
  std::vector<float> in(1000), out(1000, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = 0.5f * static_cast<float>(i);
  BufferPtr b = sim.allocate(in.size() * sizeof(float));
  sim.copy_to_device(in.data(), *b, in.size() * sizeof(float));
  sim.copy_to_host(*b, out.data(), out.size() * sizeof(float));
  EXPECT_EQ(in, out);
  EXPECT_NE(std::string(testing::error_of([&] {
              sim.copy_to_host(*b, out.data(), 1 << 20);
            })).find("[sim] copy of 1048576 bytes from a 4000-byte buffer"),
            std::string::npos);
}

TEST(SimDevice, KernelErrorsCrossTheStreamThread) {
  Device dev("lazy:sim");
  Tensor table = zeros({4, 2}).to(dev);
  Tensor ids = tensor_i64({1, 9}, {2}).to(dev);
  Tensor out = sum(embedding(table, ids));
  lazy::mark_step();
  std::string e = testing::error_of([&] { out.item(); });
  EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(SimDevice, TrainingEqualsLazyCpuBitwise) {
  testing::reset_lazy();
  auto run = [](const Device& dev) {
    TinyMlp mlp(dev, 16, 32, 4, /*seed=*/3, /*hidden_layers=*/2);
    manual_seed(11);
    Tensor x = randn({8, 16}).to(dev);
    Tensor y = tensor_i64({0, 1, 2, 3, 3, 2, 1, 0}, {8}).to(dev);
    std::vector<float> losses;
    for (int step = 0; step < 5; ++step) {
      Tensor l = mlp.train_step(x, y, step);
      lazy::mark_step();
      losses.push_back(static_cast<float>(l.item()));
    }
    std::vector<float> p = mlp.params[0].to_vector<float>();
    losses.insert(losses.end(), p.begin(), p.end());
    return losses;
  };
  std::vector<float> cpu = run(Device("lazy"));
  std::vector<float> sim = run(Device("lazy:sim"));
  ASSERT_EQ(cpu.size(), sim.size());
  EXPECT_EQ(0, std::memcmp(cpu.data(), sim.data(), cpu.size() * sizeof(float)));
  EXPECT_GT(metrics::counter("TransferToDeviceBytes"), 0);
  EXPECT_GT(metrics::counter("TransferFromDeviceBytes"), 0);
}

TEST(SimDevice, ModuleStyleMoveKeepsHandlesAndValues) {
  Tensor t = tensor({1, 2, 3}, {3});
  Tensor alias = t;  // a second handle: a tie
  lazy::move_in_place(t, Device("lazy:sim"), DType::f32);
  EXPECT_EQ(alias.device(), Device("lazy:sim"));
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{1, 2, 3}));
  lazy::move_in_place(t, Device("cpu"), DType::bf16);
  EXPECT_EQ(alias.dtype(), DType::bf16);
  EXPECT_EQ(alias.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(DeviceNames, IndexParsedPrintedAndChecked) {
  EXPECT_EQ(Device("lazy"), Device("lazy:cpu"));
  EXPECT_EQ(Device("lazy:cpu:0"), Device("lazy:cpu"));
  EXPECT_EQ(Device("lazy:sim:0").str(), "lazy:sim");
  EXPECT_EQ(Device("lazy:sim:2").str(), "lazy:sim:2");
  EXPECT_EQ(Device("lazy:sim:2").index, 2);
  EXPECT_NE(Device("lazy:sim"), Device("lazy:cpu"));
  for (const char* bad : {"lazy:", "lazy:CPU", "lazy:cpu:x", "lazy:cpu:-1", "gpu", "cpu:0:1"})
    EXPECT_NE(
        std::string(testing::error_of([&] { Device d(bad); })).find("[device] unknown device"),
        std::string::npos)
        << bad;
  EXPECT_NE(std::string(testing::error_of([] {
              lazy::check_device(Device("lazy:sim:1"));
            })).find("[device] lazy:sim:1: backend sim has 1 device(s)"),
            std::string::npos);
  EXPECT_NE(std::string(testing::error_of([] {
              lazy::check_device(Device("lazy:tpu"));
            })).find("[backend] unknown backend 'tpu' (expected cpu, reference, sim, xla"),
            std::string::npos);
  EXPECT_NE(std::string(testing::error_of([] {
              zeros({2}).to(Device("lazy:tpu"));
            })).find("unknown backend 'tpu'"),
            std::string::npos);
}

TEST(MemoryPlanAtRunTime, SteadyStateStepsAllocateNoArenaAndDonate) {
  testing::reset_lazy();
  Device dev("lazy");
  TinyMlp mlp(dev, 32, 64, 4);
  manual_seed(2);
  Tensor x = randn({16, 32}).to(dev);
  Tensor y = tensor_i64(std::vector<int64_t>(16, 1), {16}).to(dev);
  auto run_step = [&](int step) {
    Tensor loss = mlp.train_step(x, y, step);  // held across mark_step, as a loop does
    lazy::mark_step();
    EXPECT_TRUE(std::isfinite(loss.item()));
  };
  for (int step = 0; step < 3; ++step) run_step(step);
  int64_t arena = metrics::counter("ArenaAllocatedBytes");
  int64_t donated = metrics::counter("DonatedBytes");
  int64_t fresh = metrics::counter("OutputAllocatedBytes");
  int64_t compiles = metrics::counter("UncachedCompile");
  for (int step = 3; step < 6; ++step) run_step(step);
  EXPECT_EQ(metrics::counter("UncachedCompile"), compiles) << "steady state: cached executables";
  EXPECT_GT(arena, 0);
  EXPECT_EQ(metrics::counter("ArenaAllocatedBytes"), arena)
      << "a cached executable keeps its arena";
  // Parameters and both AdamW moments are overwritten each step: donated.
  int64_t state_bytes = 0;
  for (const Tensor& p : mlp.params) state_bytes += 3 * p.numel() * 4;
  EXPECT_EQ(metrics::counter("DonatedBytes") - donated, 3 * state_bytes);
  // backward() freed the autograd graph, so the held loss keeps no saved
  // activation alive: only the loss itself is a fresh output.
  EXPECT_LT(metrics::counter("OutputAllocatedBytes") - fresh, 64)
      << "only the scalar loss is allocated per step";
  EXPECT_GT(metrics::max_planned_peak_bytes(), 0);
}

TEST(EagerOps, RunAsOneNodeProgramsCompiledOncePerSignature) {
  testing::reset_lazy();  // also empties the eager cache
  Tensor a = tensor({1, 2, 3}, {3}), b = tensor({10, 20, 30}, {3});
  int64_t compiles = metrics::counter("EagerCompile");
  Tensor c = add(a, b);
  EXPECT_EQ(metrics::counter("EagerCompile"), compiles + 1);
  Tensor d = add(c, b);  // same op, attributes and operand types: cached
  EXPECT_EQ(metrics::counter("EagerCompile"), compiles + 1);
  EXPECT_GE(metrics::counter("EagerCachedCompile"), 1);
  Tensor e = add(tensor({1, 2}, {2}), tensor({3, 4}, {2}));  // a new shape: a new program
  EXPECT_EQ(metrics::counter("EagerCompile"), compiles + 2);
  EXPECT_EQ(d.to_vector<float>(), (std::vector<float>{21, 42, 63}));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{4, 6}));
  EXPECT_EQ(metrics::counter("UncachedCompile"), 0) << "eager programs are not lazy compiles";
}

}  // namespace
}  // namespace loom
