// The xla backend (src/backends/xla/): lazy:xla against lazy:cpu (a small
// MLP trained with AdamW, with donation on (the default) and off; a GPT-2 of
// width 256, step by step, the case that donation got wrong), donation checked
// after the run (donated, vetoed and copied), its memory out
// of the host's reach, device memory flat step to step (donation on and off), the compile cache (in
// memory and the on-disk XLA executables), every addressable device, collectives split out of the
// graph and staged through host memory, and the split itself (pure IR, no plugin needed). Tests
// that run XLA skip with the reason when no PJRT plugin is installed, and fail under CI=true.
// At the end: the on-disk executable cache's property tests (a file under another
// key, random byte damage: never a hit).
//
// Tolerance: XLA may reorder float reductions (sums over up to 32 elements
// here, where reordering changes f32 results by a few ulp) and evaluates
// exp/tanh with its own polynomial approximations (a few ulp of f32). Five
// AdamW steps at lr 1e-2 do not amplify that beyond 1e-4 relative, so the
// comparison allows |a - b| <= 2e-4 * max(1, |b|); a wrong lowering or a
// lost update is off by far more (the losses move by ~1e-2 per step).
#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "backends/backend.h"
#include "backends/executable.h"
#include "backends/xla/collective_split.h"
#include "backends/xla/xla_runtime.h"
#if LOOM_WITH_PJRT
#include "backends/xla/xla_executable.h"
#endif
#include <fstream>
#include <random>
#include <string>
#include <vector>
#include "backends/xla_test_util.h"
#include "common/error_of.h"
#include "common/host_fault.h"
#include "common/scoped_env.h"
#include "common/temp_dir.h"
#include "compiler/program.h"
#include "ir/graph.h"
#include "lazy/dispatch.h"
#include "lazy/lazy_test_util.h"
#include "loom/collective.h"
#include "loom/error.h"
#include "loom/gpt2.h"
#include "loom/metrics.h"
#include "loom/optim.h"
#include "loom/tensor.h"

namespace loom {
namespace {

using testing::TinyMlp;

void xla_expect_close(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_LE(std::abs(got[i] - want[i]), 2e-4 * std::max(1.0f, std::abs(want[i])))
        << "at " << i << ": xla " << got[i] << " cpu " << want[i];
}

std::vector<float> xla_train_tiny_mlp(const Device& dev, int steps) {
  TinyMlp mlp(dev, 16, 32, 4, /*seed=*/3, /*hidden_layers=*/2);
  manual_seed(11);
  Tensor x = randn({8, 16}).to(dev);
  Tensor y = tensor_i64({0, 1, 2, 3, 3, 2, 1, 0}, {8}).to(dev);
  std::vector<float> out;
  for (int step = 0; step < steps; ++step) {
    Tensor l = mlp.train_step(x, y, step);
    lazy::mark_step();
    out.push_back(static_cast<float>(l.item()));
  }
  for (const Tensor& p : mlp.params) {
    std::vector<float> v = p.to_vector<float>();
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

TEST(XlaBackend, IsRegisteredAndPlansForItself) {
  const backends::Backend& b = backends::backend_by_name("xla");
  EXPECT_EQ(b.name(), "xla");
  EXPECT_FALSE(b.host_visible());
  LOOM_REQUIRE_XLA();
  backends::Capabilities caps = b.capabilities();
  EXPECT_TRUE(caps.plans_itself);
  EXPECT_FALSE(caps.fuse_elementwise);
  EXPECT_TRUE(caps.supports(ops::OpKind::k_all_reduce));  // split out, run on the host
  EXPECT_GE(b.device_count(), 1);
}

TEST(XlaBackend, TrainingMatchesLazyCpu) {
  LOOM_REQUIRE_XLA();
  testing::reset_lazy();
  std::vector<float> cpu = xla_train_tiny_mlp(Device("lazy"), 5);
  testing::reset_lazy();
  std::vector<float> xla = xla_train_tiny_mlp(Device("lazy:xla"), 5);
  xla_expect_close(xla, cpu);
  EXPECT_GT(metrics::counter("XlaCompile") + metrics::counter("XlaPersistentCacheHit"), 0);
  // Donation is on by default: parameters and AdamW state updated in place, each donated
  // buffer deleted by PJRT (checked after the run), none declined.
  EXPECT_GT(metrics::counter("DonatedBytes"), 0);
  EXPECT_EQ(metrics::counter("DonationDeclinedBytes"), 0);
  // Steps 2..5 reuse step 1's executable (the warm-up lr is a graph input).
  EXPECT_GE(metrics::counter("CachedCompile"), 3);
}

TEST(XlaBackend, TrainingWithDonationOffMatchesLazyCpuOnASmallMlp) {
  LOOM_REQUIRE_XLA();
  testing::ScopedEnv donate("LOOM_XLA_DONATE", "0");
  testing::reset_lazy();
  std::vector<float> cpu = xla_train_tiny_mlp(Device("lazy"), 5);
  testing::reset_lazy();
  std::vector<float> xla = xla_train_tiny_mlp(Device("lazy:xla"), 5);
  xla_expect_close(xla, cpu);
  EXPECT_EQ(metrics::counter("DonatedBytes"), 0);
}

// The losses of `steps` training steps (forward with labels, backward,
// clip_grad_norm_ 1.0, AdamW lr 1e-4, zero_grad) of a one-layer GPT-2 of
// width 256 on B 8 x T 128 fixed tokens, dropout 0, on `dev`.
std::vector<double> xla_gpt2_losses(const Device& dev, int steps) {
  manual_seed(0);
  GPT2Config cfg;
  cfg.vocab_size = 50257;
  cfg.n_positions = 128;
  cfg.n_layer = 1;
  cfg.n_embd = 256;
  cfg.n_head = 4;
  cfg.resid_pdrop = cfg.embd_pdrop = cfg.attn_pdrop = 0;
  auto model = std::make_shared<GPT2LMHeadModel>(cfg);
  model->train();
  model->to(dev);
  optim::AdamW opt(optim::weight_decay_groups(model->named_parameters(), 0.01), {.lr = 1e-4});
  std::vector<int64_t> ids(8 * 128);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919 + 13) % 50257);
  ModelInputs in;
  in.input_ids = in.labels = tensor_i64(ids, {8, 128}).to(dev);
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    Tensor loss = model->forward(in).loss;
    loss.backward();
    optim::clip_grad_norm_(model->parameters(), 1.0);
    opt.step();
    opt.zero_grad();
    lazy::mark_step();
    losses.push_back(loss.item());
  }
  return losses;
}

// With every parameter and moment donated and XNNPACK on, the XLA CPU
// plugin's second step multiplied by mlp.c_proj's step-1 weight (10.8059
// against 10.7795; docs/backends.md, "Donation"). Donation is on (the
// default) and the CPU plugin compiles with XNNPACK off. Each step's loss
// moves by ~0.09, so 1e-5 relative separates a wrong step from XLA's own
// rounding (~1e-7 here).
TEST(XlaBackend, Gpt2TrainingMatchesLazyCpuStepByStep) {
  LOOM_REQUIRE_XLA();
  testing::reset_lazy();
  std::vector<double> cpu = xla_gpt2_losses(Device("lazy"), 3);
  testing::reset_lazy();
  std::vector<double> xla = xla_gpt2_losses(Device("lazy:xla"), 3);
  for (size_t s = 0; s < cpu.size(); ++s)
    EXPECT_NEAR(xla[s], cpu[s], 1e-5 * cpu[s]) << "step " << s + 1;
  // The plugin really donated (PJRT_Buffer_IsDeleted after each run): more
  // than the 13.69M f32 parameters, 3 times over (each step donates the
  // weights, and from the second the AdamW moments).
  EXPECT_GT(metrics::counter("DonatedBytes"), int64_t(3) * 13'688'832 * 4);
  EXPECT_EQ(metrics::counter("DonationDeclinedBytes"), 0);
}

// Device memory held between steps is the same every step, with donation
// on (the default: the state is written over its inputs, no donation vetoed)
// and off (each step's outputs are new buffers, the old state is freed).
void xla_expect_flat_memory() {
  testing::reset_lazy();
  Device dev("lazy:xla");
  TinyMlp mlp(dev, 16, 64, 4, 5, 2);
  Tensor x = randn({8, 16}).to(dev);
  Tensor y = tensor_i64({0, 1, 2, 3, 3, 2, 1, 0}, {8}).to(dev);
  std::vector<size_t> live;
  for (int step = 0; step < 8; ++step) {
    Tensor l = mlp.train_step(x, y, step);
    lazy::mark_step();
    l.item();
    live.push_back(Buffer::live_bytes());
  }
  // After the first steps (the grads' buffers appear), the bytes held are the same every step.
  for (size_t s = 3; s < live.size(); ++s) EXPECT_EQ(live[s], live[2]) << "step " << s;
}

TEST(XlaBackend, DeviceMemoryStaysFlatStepToStep) {
  LOOM_REQUIRE_XLA();
  testing::ScopedEnv donate("LOOM_XLA_DONATE", "0");
  xla_expect_flat_memory();
  EXPECT_EQ(metrics::counter("DonatedBytes"), 0);
}

TEST(XlaBackend, DeviceMemoryStaysFlatStepToStepWithDonation) {
  LOOM_REQUIRE_XLA();
  xla_expect_flat_memory();
  EXPECT_GT(metrics::counter("DonatedBytes"), 0);
  EXPECT_EQ(metrics::counter("DonationDeclinedBytes"), 0);
  EXPECT_EQ(metrics::counter("DonationVetoed"), 0);
}

#if LOOM_WITH_PJRT
// An aliased input loom may not donate is run on a private copy (never put
// in PJRT's non-donatable list, which makes the CPU plugin stop donating
// the later inputs), so it keeps its values; one it may donate is consumed.
TEST(XlaBackend, VetoedDonationRunsOnACopyAndADonatedInputIsConsumed) {
  LOOM_REQUIRE_XLA();
  metrics::reset();
  ir::Graph g = ir::parse("graph(%0: f32[2,3]) {\n  %1 = neg(%0) : f32[2,3]\n  return (%1)\n}\n");
  const backends::Backend& xla = backends::xla_backend();
  auto exe = xla.compile(std::make_shared<compiler::Program>(compiler::lower(g, false)));
  auto* xexe = dynamic_cast<backends::xla::XlaExecutable*>(exe.get());
  ASSERT_NE(xexe, nullptr);
  ASSERT_EQ(xexe->stage_aliases(0), (std::vector<std::pair<int, int>>{{0, 0}}));
  float host[6] = {1, 2, 3, 4, 5, 6}, back[6] = {};
  BufferPtr kept = xla.upload(host, {{2, 3}, DType::f32}, 0);
  std::vector<BufferPtr> out = exe->run({kept}, {false});  // not donatable: vetoed
  xla.copy_to_host(*out[0], back, sizeof back);
  EXPECT_EQ(back[5], -6.0f);
  EXPECT_EQ(metrics::counter("DonationVetoed"), 1);
  EXPECT_EQ(metrics::counter("DonationVetoCopyBytes"), 24);
  EXPECT_EQ(metrics::counter("DonatedBytes"), 0);
  xla.copy_to_host(*kept, back, sizeof back);  // still its own values
  EXPECT_EQ(back[5], 6.0f);
  std::vector<BufferPtr> only;  // not an initializer list: its array would hold a second reference
  only.push_back(std::move(kept));
  out = exe->run(std::move(only), {true});  // only the run holds it: donated
  EXPECT_EQ(metrics::counter("DonatedBytes"), 24);
  EXPECT_EQ(metrics::counter("DonationDeclinedBytes"), 0);
  EXPECT_EQ(metrics::counter("DonationVetoed"), 1);
  xla.copy_to_host(*out[0], back, sizeof back);
  EXPECT_EQ(back[5], -6.0f);
}
#endif  // LOOM_WITH_PJRT

TEST(XlaBackend, HostAccessToAnXlaBufferFaults) {
  LOOM_REQUIRE_XLA();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const backends::Backend& xla = backends::xla_backend();
  float host[4] = {1, 2, 3, 4};
  BufferPtr b = xla.upload(host, {{4}, DType::f32}, 0);
  EXPECT_FALSE(b->host_visible());
  float back[4] = {};
  xla.copy_to_host(*b, back, sizeof back);  // through the backend: fine
  EXPECT_EQ(back[3], 4.0f);
  EXPECT_EXIT(
      {
        std::printf("%f\n", static_cast<volatile float*>(b->data())[0]);  // a host read
        std::exit(0);
      },
      testing::died_of_host_fault, testing::kHostFaultMessage);
}

TEST(XlaBackend, RunsOnEachAddressableDeviceAndRefusesOthers) {
  LOOM_REQUIRE_XLA();
  int n = backends::xla_backend().device_count();
  for (int d : {0, n - 1}) {
    Device dev("lazy:xla:" + std::to_string(d));
    Tensor t = tensor({1, 2, 3, 4}, {2, 2}).to(dev);
    Tensor s = sum(matmul(t, t));
    EXPECT_FLOAT_EQ(static_cast<float>(s.item()), 7 + 10 + 15 + 22) << dev.str();
  }
  std::string e =
      testing::error_of([&] { lazy::check_device(Device("lazy:xla:" + std::to_string(n))); });
  EXPECT_NE(e.find("backend xla has " + std::to_string(n) + " device(s)"), std::string::npos) << e;
}

TEST(XlaBackend, CollectivesRunBetweenStagesThroughHostMemory) {
  LOOM_REQUIRE_XLA();
  testing::reset_lazy();
  Device dev("lazy:xla");
  Tensor t = tensor({1, 2, 3}, {3}).to(dev);
  Tensor r = all_reduce(t * 2.0) + t;  // one rank: all_reduce is the identity
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{3, 6, 9}));
  EXPECT_EQ(metrics::counter("XlaHostStagedCollectiveBytes"), 12);
}

TEST(XlaBackend, SecondProcessLoadsExecutablesFromTheDiskCache) {
  LOOM_REQUIRE_XLA();
  testing::TempDir dir;
  testing::ScopedEnv cache("LOOM_CACHE_DIR", dir.path());
  auto once = [] {
    testing::reset_lazy();  // empties the in-memory caches, as a fresh process has them
    Device dev("lazy:xla");
    Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
    return (softmax(a * 3.0, 1) + 1.0).to_vector<float>();
  };
  std::vector<float> first = once();
  EXPECT_EQ(metrics::counter("XlaCompile"), 1);
  EXPECT_EQ(metrics::counter("XlaPersistentCacheMiss"), 1);
  std::vector<float> second = once();
  EXPECT_EQ(metrics::counter("XlaCompile"), 0) << "the second run compiled";
  EXPECT_EQ(metrics::counter("XlaPersistentCacheHit"), 1);
  EXPECT_EQ(first, second);
  EXPECT_TRUE(std::filesystem::is_directory(std::filesystem::path(dir.path()) / "xla"));
}

TEST(XlaBackend, RefusesAnInputOfAnotherType) {
  LOOM_REQUIRE_XLA();
  // PJRT's Execute does not check argument shapes; the executable does.
  ir::Graph g = ir::parse("graph(%0: f32[2,3]) {\n  %1 = neg(%0) : f32[2,3]\n  return (%1)\n}\n");
  const backends::Backend& xla = backends::xla_backend();
  auto exe = xla.compile(std::make_shared<compiler::Program>(compiler::lower(g, false)));
  float host[6] = {1, 2, 3, 4, 5, 6};
  BufferPtr wrong = xla.upload(host, {{6}, DType::f32}, 0);
  std::string e = testing::error_of([&] { exe->run({wrong}, {false}); });
  EXPECT_NE(e.find("[xla] input %0 is f32[6], the compiled program takes f32[2,3]"),
            std::string::npos)
      << e;
  BufferPtr right = xla.upload(host, {{2, 3}, DType::f32}, 0);
  std::vector<BufferPtr> out = exe->run({right}, {false});
  float back[6] = {};
  xla.copy_to_host(*out[0], back, sizeof back);
  EXPECT_EQ(back[5], -6.0f);
}

// ---- the split (no plugin needed) ----

TEST(XlaCollectiveSplit, CutsAtCollectivesAndWiresStages) {
  // %0 in; %1 = mul(%0, %0); %2 = all_reduce(%1); %3 = add(%2, %0); return (%3, %1)
  ir::Graph g = ir::parse(R"(graph(%0: f32[4]) {
  %1 = mul(%0, %0) : f32[4]
  %2 = all_reduce(%1) reduce_op=0 : f32[4]
  %3 = add(%2, %0) : f32[4]
  return (%3, %1)
})");
  backends::xla::SplitGraph s = backends::xla::split_at_collectives(g);
  ASSERT_EQ(s.stages.size(), 2u);
  EXPECT_EQ(s.stages[0].inputs, (std::vector<int>{0}));
  EXPECT_EQ(s.stages[0].outputs, (std::vector<int>{1}));  // read by the all_reduce and returned
  EXPECT_EQ(s.before[1], (std::vector<int>{2}));
  EXPECT_EQ(s.stages[1].inputs, (std::vector<int>{2, 0}));
  EXPECT_EQ(s.stages[1].outputs, (std::vector<int>{3}));
  for (const auto& st : s.stages) ir::verify(st.graph);
}

TEST(XlaCollectiveSplit, IndependentCollectivesShareABoundary) {
  ir::Graph g = ir::parse(R"(graph(%0: f32[4], %1: f32[4]) {
  %2 = neg(%0) : f32[4]
  %3 = exp(%1) : f32[4]
  %4 = all_reduce(%2) reduce_op=0 : f32[4]
  %5 = all_reduce(%3) reduce_op=1 : f32[4]
  %6 = add(%4, %5) : f32[4]
  %7 = all_reduce(%6) reduce_op=0 : f32[4]
  return (%7)
})");
  backends::xla::SplitGraph s = backends::xla::split_at_collectives(g);
  ASSERT_EQ(s.stages.size(), 3u);
  EXPECT_EQ(s.before[1], (std::vector<int>{4, 5}));
  EXPECT_EQ(s.before[2], (std::vector<int>{7}));
  EXPECT_TRUE(s.stages[2].graph.instrs.empty());  // %7 is only returned
  EXPECT_TRUE(s.stages[2].outputs.empty());
  EXPECT_EQ(s.stages[1].outputs, (std::vector<int>{6}));
}

TEST(XlaCollectiveSplit, GraphWithoutCollectivesIsOneStage) {
  ir::Graph g = ir::parse(R"(graph(%0: f32[4]) {
  %1 = neg(%0) : f32[4]
  return (%1, %0)
})");
  backends::xla::SplitGraph s = backends::xla::split_at_collectives(g);
  ASSERT_EQ(s.stages.size(), 1u);
  EXPECT_EQ(s.stages[0].outputs, (std::vector<int>{1}));  // %0 is an input: not a stage output
  EXPECT_EQ(s.stages[0].graph.instrs.size(), 1u);
}

}  // namespace
}  // namespace loom

// The xla backend's on-disk executable cache (backends/xla/xla_compile_cache.h,
// format 3) never answers for a file it does not match: a valid executable
// copied under another key's name, and random byte damage anywhere in a
// `.pjrt` file, are each a miss with one warning line naming the file, then a
// compile to the right numbers, never a hit or a crash (seeded random cases: a
// failure prints the round and the byte). Skips without a PJRT plugin.
namespace loom::xla_cache_property_test {
namespace {

namespace fs = std::filesystem;

// One lazy:xla computation in a fresh "process" (empty in-memory caches); the
// softmax axis makes another graph (a scalar would not: it is not in the key).
std::vector<float> run_graph(int64_t axis) {
  testing::reset_lazy();
  Device dev("lazy:xla");
  Tensor a = tensor({1, 2, 3, 4, 5, 6}, {2, 3}).to(dev);
  return (softmax(a * 3.0, axis) + 1.0).to_vector<float>();
}

std::vector<fs::path> pjrt_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(fs::path(dir) / "xla"))
    if (e.path().extension() == ".pjrt") out.push_back(e.path());
  return out;
}

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(XlaDiskCache, AValidExecutableUnderAnotherKeyIsAMiss) {
  LOOM_REQUIRE_XLA();
  testing::TempDir dir;
  testing::ScopedEnv cache("LOOM_CACHE_DIR", dir.path());
  const std::vector<float> want = run_graph(1);
  ASSERT_EQ(pjrt_files(dir.path()).size(), 1u);
  const fs::path axis1_file = pjrt_files(dir.path())[0];
  run_graph(0);
  ASSERT_EQ(pjrt_files(dir.path()).size(), 2u);
  fs::path axis0_file = pjrt_files(dir.path())[0] == axis1_file ? pjrt_files(dir.path())[1]
                                                                : pjrt_files(dir.path())[0];
  fs::copy_file(axis0_file, axis1_file,
                fs::copy_options::overwrite_existing);  // axis 0 under axis 1's key
  ::testing::internal::CaptureStderr();
  const std::vector<float> got = run_graph(1);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(got, want);
  EXPECT_EQ(metrics::counter("XlaPersistentCacheHit"), 0);
  EXPECT_EQ(metrics::counter("XlaCompile"), 1);
  EXPECT_NE(log.find("[loom] warning: ignoring xla executable cache file " + axis1_file.string() +
                     ": written under another key"),
            std::string::npos)
      << log;
  run_graph(1);  // the rebuilt file hits
  EXPECT_EQ(metrics::counter("XlaPersistentCacheHit"), 1);
}

TEST(XlaDiskCache, RandomByteDamageIsNeverAHit) {
  LOOM_REQUIRE_XLA();
  testing::TempDir dir;
  testing::ScopedEnv cache("LOOM_CACHE_DIR", dir.path());
  const std::vector<float> want = run_graph(1);
  const fs::path file = pjrt_files(dir.path()).at(0);
  const std::string good = read_bytes(file);
  std::mt19937 rng(4102);
  for (int round = 0; round < 12; ++round) {
    std::string bad = good;
    // Even rounds damage the header (its first 100 bytes), odd ones anywhere.
    const size_t at = round % 2 == 0 ? rng() % 100 : rng() % bad.size();
    bad[at] = static_cast<char>(bad[at] ^ (1 + rng() % 255));
    write_bytes(file, bad);
    ::testing::internal::CaptureStderr();
    const std::vector<float> got = run_graph(1);
    const std::string log = ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(metrics::counter("XlaPersistentCacheHit"), 0)
        << "round " << round << ": byte " << at << " damaged, a hit";
    ASSERT_EQ(got, want) << "round " << round;
    ASSERT_NE(log.find("[loom] warning: ignoring xla executable cache file " + file.string()),
              std::string::npos)
        << log;
  }
  run_graph(1);
  EXPECT_EQ(metrics::counter("XlaPersistentCacheHit"), 1) << "the rebuilt file hits";
}

}  // namespace
}  // namespace loom::xla_cache_property_test
