// The executor thread: jobs run in submit order, and submit() blocks while
// Executor::kMaxQueued jobs wait behind the running one (a tracing loop that
// outruns execution must not pile up steps and their memory).
#include "lazy/executor.h"

#include "loom/error.h"
#include "loom/lazy.h"
#include "loom/ops.h"
#include "loom/tensor.h"

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

// A step that fails on the executor thread (an embedding id out of range is
// only seen when the kernel runs) fails every later step that consumes its
// results with the original error, not a generic one.
TEST(Executor, LaterStepsReportTheFailedStepsOwnError) {
  Device lazy_dev("lazy");
  Tensor weight = ones({4, 3}).to(lazy_dev);
  Tensor ids = tensor_i64({1, 9}, {2}).to(lazy_dev);
  Tensor rows = embedding(weight, ids);
  lazy::mark_step();  // launches; the kernel throws on the executor thread
  Tensor total = sum(rows * 2.0f);
  lazy::mark_step();
  try {
    (void)total.item();
    FAIL() << "reading the result of a failed step did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::lazy
