// The executor thread: a FIFO of jobs; jobs report their own errors through
// their promises, so the loop never throws.
#include "lazy/executor.h"

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/settings.h"
#include "lazy/host_time.h"
#include "loom/metrics.h"

namespace loom::lazy {

Executor::Executor() {
  asynchronous_ = !settings::flag(Setting::sync_execution);
  if (asynchronous_) thread_ = std::thread([this] { loop(); });
}

Executor::~Executor() {
  if (!asynchronous_) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Executor::submit(std::function<void()> job) {
  if (!asynchronous_) {
    HostWait running;  // the device's work, on the host's thread
    job();
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (queue_.size() >= kMaxQueued) {
      HostWait waiting;  // the host is ahead by kMaxQueued steps
      idle_cv_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
    }
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Executor::drain() {
  if (!asynchronous_) return;
  HostWait waiting;
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void Executor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::optional<std::chrono::steady_clock::time_point> last_end;
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    // ExecutorIdleTime: how long the device waited for this job since the
    // last one ended (about 0 when the host traced ahead; host_time.h).
    auto now = std::chrono::steady_clock::now();
    if (last_end)
      metrics::add_time(
          "ExecutorIdleTime",
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - *last_end).count());
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    idle_cv_.notify_all();  // room in the queue for a waiting submit()
    lock.unlock();
    job();
    last_end = std::chrono::steady_clock::now();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace loom::lazy
