// The executor thread: jobs run in submit order, and submit() blocks while
// Executor::kMaxQueued jobs wait behind the running one (a tracing loop that
// outruns execution must not pile up steps and their memory).
#include "lazy/executor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

namespace loom::lazy {
namespace {

TEST(Executor, RunsJobsInOrderAndBoundsTheQueue) {
  Executor ex;
  if (!ex.asynchronous()) GTEST_SKIP() << "LOOM_SYNC_EXECUTION=1: jobs run inline";
  std::promise<void> release;
  std::shared_future<void> gate = release.get_future().share();
  std::vector<int> order;
  std::mutex order_mu;
  auto job = [&](int id) {
    return [&, id] {
      gate.wait();
      std::lock_guard<std::mutex> lock(order_mu);
      order.push_back(id);
    };
  };
  ex.submit(job(0));  // running (blocked on the gate)
  // Wait until job 0 left the queue, then fill the queue.
  for (size_t i = 1; i <= Executor::kMaxQueued; ++i) ex.submit(job(static_cast<int>(i)));
  std::atomic<bool> submitted{false};
  std::thread extra([&] {
    ex.submit(job(99));
    submitted = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(submitted.load()) << "submit() returned with a full queue";
  release.set_value();
  extra.join();
  ex.drain();
  EXPECT_TRUE(submitted.load());
  std::vector<int> want;
  for (size_t i = 0; i <= Executor::kMaxQueued; ++i) want.push_back(static_cast<int>(i));
  want.push_back(99);
  EXPECT_EQ(order, want);
}

}  // namespace
}  // namespace loom::lazy
