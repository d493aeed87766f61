// The executor thread: a FIFO of jobs; jobs report their own errors through
// their promises, so the loop never throws.
#include "lazy/executor.h"

#include <cstdlib>
#include <string>

#include "core/settings.h"

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
    job();
    return;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    idle_cv_.wait(lock, [this] { return queue_.size() < kMaxQueued; });
    queue_.push_back(std::move(job));
  }
  cv_.notify_one();
}

void Executor::drain() {
  if (!asynchronous_) return;
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void Executor::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    idle_cv_.notify_all();  // room in the queue for a waiting submit()
    lock.unlock();
    job();
    lock.lock();
    busy_ = false;
    if (queue_.empty()) idle_cv_.notify_all();
  }
}

}  // namespace loom::lazy
