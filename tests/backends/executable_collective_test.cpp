// An executable starts a collective at its step and waits for it right
// before the first step that reads its output (backends/executable.h), so
// the steps in between overlap it. Proved with a fake graph process group
// that logs its start/wait/progress calls into the same log as a recording
// backend's kernels, and whose "reduction" (x2, a sum over two ranks that
// agree) lands in the buffer only at wait(): an executable that read the
// output before waiting, or let the arena reuse its bytes while the
// collective is in flight, computes the wrong values. LOOM_DDP_OVERLAP=0
// waits at once (the blocking path) and gives the same bits; so does a
// backend that is not host-visible, with no idle stream mid-collective.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/kernel_backend.h"
#include "backends/kernel_executable.h"
#include "common/scoped_env.h"
#include "compiler/memory/batch.h"
#include "compiler/program.h"
#include "distributed/group_testing.h"
#include "ir/graph.h"
#include "loom/dist.h"
#include "loom/error.h"
#include "loom/metrics.h"

namespace loom {
namespace {

std::vector<std::string>& overlap_log() {
  static std::vector<std::string> log;
  return log;
}

// The reduction happens at wait(): x2 in place (two ranks holding the same values).
class OverlapFakeWork final : public dist::Work {
 public:
  OverlapFakeWork(float* data, size_t count) : data_(data), count_(count) {}
  void wait() override {
    if (done_) return;
    done_ = true;
    for (size_t i = 0; i < count_; ++i) data_[i] *= 2;
    overlap_log().push_back("wait");
  }
  bool is_completed() override {
    if (!done_ && (overlap_log().empty() || overlap_log().back() != "poll"))
      overlap_log().push_back("poll");
    return done_;
  }

 private:
  float* data_;
  size_t count_;
  bool done_ = false;
};

// The fake groups' common part: rank 0 of 2; broadcast and barrier do nothing.
class FakeGroupBase : public dist::ProcessGroup {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  std::string_view backend_name() const override { return "fake"; }
  [[noreturn]] void abort(int code) override { std::_Exit(code); }

 protected:
  void do_broadcast(void*, size_t, int) override {}
  std::vector<uint8_t> do_all_gather(const std::vector<uint8_t>& b) override { return b; }
  void do_barrier() override {}
};

class OverlapFakeGroup final : public FakeGroupBase {
 public:
  std::unique_ptr<ProcessGroup> duplicate() override {
    return std::make_unique<OverlapFakeGroup>();
  }

 protected:
  std::unique_ptr<dist::Work> start_all_reduce(void* data, size_t count, dist::DataType,
                                               dist::ReduceOp) override {
    overlap_log().push_back("start");
    return std::make_unique<OverlapFakeWork>(static_cast<float*>(data), count);
  }
};

// The cpu backend's kernels, each logged by op name as it runs.
class RecordingBackend final : public backends::KernelBackend {
 public:
  std::string_view name() const override { return "recording"; }
  backends::Stream& stream() const override { return stream_; }
  backends::Kernel kernel(ops::OpKind op) const override {
    return backends::cpu_backend().kernel(op) ? &recorded : nullptr;
  }

 private:
  static void recorded(const backends::OpCall& call) {
    overlap_log().emplace_back(ops::op_name(call.op));
    backends::cpu_backend().run(call);
  }
  mutable backends::InlineStream stream_;
};

// The scenario: a "gradient" is reduced while two later matmuls (the rest of
// backward) run; the add reads the reduction.
const char* const kOverlapGraph =
    "graph(%0: f32[4,4], %1: f32[4,4]) {\n"
    "  %2 = matmul(%0, %1) : f32[4,4]\n"
    "  %3 = all_reduce(%2) : f32[4,4]\n"
    "  %4 = matmul(%1, %1) : f32[4,4]\n"
    "  %5 = matmul(%4, %0) : f32[4,4]\n"
    "  %6 = add(%3, %5) : f32[4,4]\n"
    "  return (%6)\n}\n";

const backends::KernelBackend& recording_backend() {
  static RecordingBackend backend;
  return backend;
}

// kOverlapGraph's two inputs on `backend`.
std::vector<BufferPtr> overlap_inputs(const backends::KernelBackend& backend) {
  std::vector<float> a(16), b(16);
  for (int i = 0; i < 16; ++i) a[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  for (int i = 0; i < 16; ++i) b[i] = 0.125f * static_cast<float>(i % 7);
  BufferPtr x = backend.allocate(64), y = backend.allocate(64);
  backend.copy_to_device(a.data(), *x, 64);
  backend.copy_to_device(b.data(), *y, 64);
  return {x, y};
}

// Runs kOverlapGraph on `backend` with the fake group; returns the output,
// fills the log.
std::vector<float> run_overlap_graph(const backends::KernelBackend& backend) {
  overlap_log().clear();
  auto previous =
      dist::replace_graph_process_group_for_testing(std::make_unique<OverlapFakeGroup>());
  auto program =
      std::make_shared<compiler::Program>(compiler::lower(ir::parse(kOverlapGraph), false));
  auto exe = backend.compile_kernels(program);
  const std::vector<BufferPtr> in = overlap_inputs(backend);
  std::vector<BufferPtr> out = exe->run(in, {false, false});
  dist::replace_graph_process_group_for_testing(std::move(previous));
  std::vector<float> result(16);
  backend.copy_to_host(*out[0], result.data(), 64);
  return result;
}

// 2 * (a @ b) + (b @ b) @ a, in double.
std::vector<float> expected_overlap_result() {
  std::vector<double> a(16), b(16), bb(16, 0.0);
  for (int i = 0; i < 16; ++i) a[i] = 0.25 * (i % 5) - 0.5, b[i] = 0.125 * (i % 7);
  auto mm = [](const std::vector<double>& p, const std::vector<double>& q) {
    std::vector<double> r(16, 0.0);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) r[i * 4 + j] += p[i * 4 + k] * q[k * 4 + j];
    return r;
  };
  std::vector<double> g = mm(a, b), rest = mm(mm(b, b), a);
  std::vector<float> out(16);
  for (int i = 0; i < 16; ++i) out[i] = static_cast<float>(2 * g[i] + rest[i]);
  return out;
}

TEST(ExecutableCollective, StartsBeforeLaterKernelsAndWaitsAtTheFirstReader) {
  const std::vector<float> got = run_overlap_graph(recording_backend());
  const std::vector<std::string> want = {"matmul", "start", "poll", "matmul", "poll",
                                         "matmul", "poll",  "wait", "add"};
  EXPECT_EQ(overlap_log(), want);
  const std::vector<float> expect = expected_overlap_result();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(got[i], expect[i], 1e-5) << i;
}

TEST(ExecutableCollective, BlockingPathWaitsAtOnceWithTheSameBits) {
  const std::vector<float> overlapped = run_overlap_graph(recording_backend());
  std::vector<float> blocking;
  {
    testing::ScopedEnv env("LOOM_DDP_OVERLAP", "0");
    blocking = run_overlap_graph(recording_backend());
  }
  const std::vector<std::string> want = {"matmul", "start", "wait", "matmul", "matmul", "add"};
  EXPECT_EQ(overlap_log(), want);
  EXPECT_EQ(blocking, overlapped);
}

// A stream that goes idle after every item, as a ThreadStream may whenever
// its queue runs dry before the next item is enqueued (the sim device then
// makes its memory PROT_NONE). Logs "idle" there.
class IdleBetweenItemsStream final : public backends::Stream {
 public:
  void enqueue(std::function<void()> work) override {
    work();
    overlap_log().push_back("idle");
  }
  void synchronize() override {}
};

// Like sim: memory the host cannot touch while the stream is idle.
class NotHostVisibleBackend final : public backends::KernelBackend {
 public:
  std::string_view name() const override { return "not_host_visible"; }
  bool host_visible() const override { return false; }
  backends::Stream& stream() const override { return stream_; }
  backends::Kernel kernel(ops::OpKind op) const override {
    return backends::cpu_backend().kernel(op) ? &recorded : nullptr;
  }

 private:
  static void recorded(const backends::OpCall& call) {
    overlap_log().emplace_back(ops::op_name(call.op));
    backends::cpu_backend().run(call);
  }
  mutable IdleBetweenItemsStream stream_;
};

// The regression of a segfault in MPI's progress thread (dist_collectives on
// lazy:sim): the executable started the all_reduce in one stream item and
// waited in a later one, so the stream could go idle (sim memory PROT_NONE)
// while MPI still wrote the reduction into its output. A collective on such
// a backend must be started and waited for with no idle stream in between.
TEST(ExecutableCollective, NotHostVisibleBackendNeverIdlesWhileACollectiveIsInFlight) {
  static NotHostVisibleBackend backend;
  const std::vector<float> result = run_overlap_graph(backend);
  const std::vector<std::string>& log = overlap_log();
  auto start = std::find(log.begin(), log.end(), "start");
  auto wait = std::find(log.begin(), log.end(), "wait");
  ASSERT_NE(start, log.end());
  ASSERT_NE(wait, log.end());
  EXPECT_LT(start, wait);
  EXPECT_EQ(std::find(start, wait, "idle"), wait) << "the stream went idle mid-collective";
  EXPECT_EQ(std::count(log.begin(), log.end(), "start"), 1);
  const std::vector<float> expect = expected_overlap_result();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(result[i], expect[i], 1e-5) << i;
}

TEST(ExecutableCollective, AnOutputOnlyTheCallerReadsIsWaitedAtTheEnd) {
  overlap_log().clear();
  auto previous =
      dist::replace_graph_process_group_for_testing(std::make_unique<OverlapFakeGroup>());
  static RecordingBackend backend;
  auto program = std::make_shared<compiler::Program>(
      compiler::lower(ir::parse("graph(%0: f32[4]) {\n"
                                "  %1 = all_reduce(%0) : f32[4]\n"
                                "  %2 = neg(%0) : f32[4]\n"
                                "  return (%1, %2)\n}\n"),
                      false));
  auto exe = backend.compile_kernels(program);
  ASSERT_EQ(exe->collective_waits().back(), std::vector<int>{0});
  std::vector<float> a = {1, -2, 3, 0.5f};
  BufferPtr x = backend.allocate(16);
  backend.copy_to_device(a.data(), *x, 16);
  std::vector<BufferPtr> out = exe->run({x}, {false});
  dist::replace_graph_process_group_for_testing(std::move(previous));
  EXPECT_EQ(overlap_log(), (std::vector<std::string>{"start", "poll", "neg", "poll", "wait"}));
  std::vector<float> r(4);
  backend.copy_to_host(*out[0], r.data(), 16);
  EXPECT_EQ(r, (std::vector<float>{2, -4, 6, 1}));
}

// The reduction's first reader is the second member of a fused batch: the
// wait must move to the batch's head, where the whole batch launches as one
// call. Left before the member, it would run after the batch read %1 (the
// fake reduction lands only at wait(), so the values tell).
TEST(ExecutableCollective, AWaitBeforeABatchMemberMovesToTheBatchHead) {
  overlap_log().clear();
  auto previous =
      dist::replace_graph_process_group_for_testing(std::make_unique<OverlapFakeGroup>());
  static RecordingBackend backend;
  auto program = std::make_shared<compiler::Program>(
      compiler::lower(ir::parse("graph(%0: f32[8], %1: f32[8,8]) {\n"
                                "  %2 = all_reduce(%1) : f32[8,8]\n"
                                "  %3 = mul(%0, %0) : f32[8]\n"
                                "  %4 = exp(%3) : f32[8]\n"
                                "  %5 = mul(%2, %1) : f32[8,8]\n"
                                "  %6 = add(%5, %1) : f32[8,8]\n"
                                "  return (%4, %6)\n}\n"),
                      true));
  ASSERT_EQ(program->steps.size(), 3u) << ir::to_text(program->graph);
  auto exe = backend.compile_kernels(program);
  ASSERT_EQ(compiler::memory::plan_fused_batches(*program, exe->plan()),
            (std::vector<int>{1, 2, 0}))
      << "the two fused groups no longer form one batch";
  const std::vector<int>& member_inputs = program->steps[2].inputs;
  ASSERT_NE(std::find(member_inputs.begin(), member_inputs.end(), 2), member_inputs.end())
      << "the batch's second member reads the reduction";
  const std::vector<std::vector<int>>& waits = exe->collective_waits();
  EXPECT_EQ(waits[1], std::vector<int>{0}) << "waited before the batch's head";
  EXPECT_TRUE(waits[2].empty());
  std::vector<float> a(8), b(64);
  for (int i = 0; i < 8; ++i) a[i] = 0.25f * static_cast<float>(i % 5) - 0.5f;
  for (int i = 0; i < 64; ++i) b[i] = 0.125f * static_cast<float>(i % 7) - 0.25f;
  BufferPtr x = backend.allocate(32), y = backend.allocate(256);
  backend.copy_to_device(a.data(), *x, 32);
  backend.copy_to_device(b.data(), *y, 256);
  std::vector<BufferPtr> out = exe->run({x, y}, {false, false});
  dist::replace_graph_process_group_for_testing(std::move(previous));
  std::vector<float> r(64);
  backend.copy_to_host(*out[1], r.data(), 256);
  for (int i = 0; i < 64; ++i) EXPECT_FLOAT_EQ(r[i], 2 * b[i] * b[i] + b[i]) << i;
}

// A timed-out collective (MPI cannot cancel it; it may write its buffer
// until the job ends): the failed run's arena must not serve the next run.
// The fake's first run times out and keeps the pointer it was given; its
// next start writes garbage there, as a late MPI write would, before the
// next reduction. A reused arena gives that run wrong values.
float* g_stale = nullptr;
class TimedOutWork final : public dist::Work {
 public:
  void wait() override { fail("[dist] all_reduce timed out after 1 s (fake)"); }
  bool is_completed() override { return false; }
};
class TimeOutOnceGroup final : public FakeGroupBase {
 public:
  std::unique_ptr<ProcessGroup> duplicate() override {
    return std::make_unique<TimeOutOnceGroup>();
  }

 protected:
  std::unique_ptr<dist::Work> start_all_reduce(void* data, size_t count, dist::DataType,
                                               dist::ReduceOp) override {
    if (g_stale == nullptr) {
      g_stale = static_cast<float*>(data);
      return std::make_unique<TimedOutWork>();
    }
    for (int i = 0; i < 16; ++i) g_stale[i] = 1e6f;  // the late write of the failed run
    return std::make_unique<OverlapFakeWork>(static_cast<float*>(data), count);
  }
};

TEST(ExecutableCollective, AFailedWaitRetiresTheRunsBuffers) {
  const backends::KernelBackend& backend = recording_backend();
  g_stale = nullptr;
  auto previous =
      dist::replace_graph_process_group_for_testing(std::make_unique<TimeOutOnceGroup>());
  auto program =
      std::make_shared<compiler::Program>(compiler::lower(ir::parse(kOverlapGraph), false));
  auto exe = backend.compile_kernels(program);
  ASSERT_EQ(exe->plan().placement[3], compiler::memory::Placement::arena)
      << "the scenario needs the reduction in the shared arena";
  const std::vector<BufferPtr> in = overlap_inputs(backend);
  const int64_t retired = metrics::counter("RetiredAfterFailedCollectiveBytes");
  EXPECT_THROW(exe->run(in, {false, false}), Error);
  EXPECT_GE(metrics::counter("RetiredAfterFailedCollectiveBytes") - retired,
            static_cast<int64_t>(exe->plan().arena_bytes));
  std::vector<BufferPtr> out = exe->run(in, {false, false});
  dist::replace_graph_process_group_for_testing(std::move(previous));
  std::vector<float> result(16);
  backend.copy_to_host(*out[0], result.data(), 64);
  const std::vector<float> expect = expected_overlap_result();
  for (int i = 0; i < 16; ++i) EXPECT_NEAR(result[i], expect[i], 1e-5) << i;
}

}  // namespace
}  // namespace loom
