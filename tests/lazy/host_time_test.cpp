// HostTime (lazy/host_time.h): the host's time per step is the interval
// between two launches less the waits inside it. Checked on the clock itself
// (host work counts; a submit blocked on a full executor queue does not) and
// end to end on lazy:cpu, where a step whose device work dwarfs its tracing
// must report a HostTime far below its ExecuteTime, and a step that sleeps
// on the host before its mark_step at least the sleep.
#include "lazy/host_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "lazy/executor.h"
#include "loom/lazy.h"
#include "loom/metrics.h"
#include "loom/ops.h"
#include "loom/tensor.h"

namespace loom::lazy {
namespace {

using std::chrono::milliseconds;

double host_time_last_ms() {
  std::vector<int64_t> s = metrics::timer_samples("HostTime");
  return s.empty() ? -1.0 : static_cast<double>(s.back()) / 1e6;
}

double host_time_median_ms(size_t skip_first) {
  std::vector<int64_t> s = metrics::timer_samples("HostTime");
  if (s.size() <= skip_first) return -1.0;
  s.erase(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(skip_first));
  std::sort(s.begin(), s.end());
  return static_cast<double>(s[s.size() / 2]) / 1e6;
}

TEST(HostTime, CountsHostWorkBetweenLaunches) {
  record_host_step();  // starts an interval
  metrics::reset();
  std::this_thread::sleep_for(milliseconds(30));
  record_host_step();
  ASSERT_EQ(metrics::timer_count("HostTime"), 1);
  EXPECT_GE(host_time_last_ms(), 30.0);
  EXPECT_LT(host_time_last_ms(), 30.0 + 500.0);
}

TEST(HostTime, LeavesOutASubmitBlockedOnAFullQueue) {
  Executor ex;
  if (!ex.asynchronous()) GTEST_SKIP() << "LOOM_SYNC_EXECUTION=1: jobs run inline";
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  for (size_t i = 0; i <= Executor::kMaxQueued; ++i) ex.submit([gate] { gate.wait(); });
  record_host_step();
  metrics::reset();
  std::thread opener([&release] {
    std::this_thread::sleep_for(milliseconds(200));
    release.set_value();
  });
  auto t0 = std::chrono::steady_clock::now();
  ex.submit([] {});  // blocks until the gate opens: the host waits for the device
  double blocked_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  record_host_step();
  opener.join();
  ex.drain();
  ASSERT_GE(blocked_ms, 150.0) << "the submit did not block; the test proves nothing";
  EXPECT_LT(host_time_last_ms(), 50.0)
      << "the blocked submit (" << blocked_ms << " ms) was counted as host time";
}

// Steps of lazy:cpu whose device work (a chain of 512 x 512 matmuls) takes far
// longer than tracing its few ops; each reads its result (a wait).
TEST(HostTime, IsFarBelowExecuteTimeWhenTheHostOnlyTraces) {
  Device dev("lazy");
  manual_seed(3);
  Tensor w = randn({512, 512}).to(dev) * 0.02;
  Tensor x = randn({512, 512}).to(dev);
  lazy::mark_step();
  lazy::wait();
  metrics::reset();
  const int steps = 5;
  for (int s = 0; s < steps; ++s) {
    Tensor y = x;
    for (int i = 0; i < 24; ++i) y = matmul(y, w);
    Tensor total = sum(y);
    lazy::mark_step();
    (void)total.item();  // waits for the device
  }
  ASSERT_EQ(metrics::timer_count("HostTime"), steps);
  std::vector<int64_t> exec = metrics::timer_samples("ExecuteTime");
  ASSERT_FALSE(exec.empty());
  std::sort(exec.begin(), exec.end());
  const double execute_ms = static_cast<double>(exec[exec.size() / 2]) / 1e6;
  // The first sample spans the set-up above; the others trace 26 ops each.
  const double host_ms = host_time_median_ms(1);
  ASSERT_GT(execute_ms, 5.0) << "the device work is too small to tell waits from tracing";
  EXPECT_LT(host_ms, execute_ms / 4) << "HostTime " << host_ms << " ms vs ExecuteTime "
                                     << execute_ms << " ms: waits counted as host time?";
}

TEST(HostTime, CountsHostWorkBeforeTheMarkStep) {
  Device dev("lazy");
  Tensor x = ones({4}).to(dev);
  lazy::mark_step();
  metrics::reset();
  for (int s = 0; s < 3; ++s) {
    x = x + 1.0;
    std::this_thread::sleep_for(milliseconds(20));  // the host's own work in the step
    lazy::mark_step();
    (void)x.to_vector<float>();  // waits for the device
  }
  ASSERT_EQ(metrics::timer_count("HostTime"), 3);
  EXPECT_GE(host_time_median_ms(1), 20.0);
}

}  // namespace
}  // namespace loom::lazy
