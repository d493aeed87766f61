// InlineStream, ThreadStream and Stream::record (see stream.h).
#include "backends/stream.h"

#include <memory>

namespace loom::backends {

Event Stream::record() {
  auto done = std::make_shared<std::promise<void>>();
  Event e(done->get_future().share());
  enqueue([done] { done->set_value(); });
  return e;
}

void InlineStream::enqueue(std::function<void()> work) { work(); }

void InlineStream::synchronize() {}

ThreadStream::ThreadStream(std::function<void(bool)> on_busy)
    : on_busy_(std::move(on_busy)), thread_([this] { loop(); }) {}

ThreadStream::~ThreadStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void ThreadStream::enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_one();
}

void ThreadStream::synchronize() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  if (!error_) return;
  std::exception_ptr e = error_;
  error_ = nullptr;
  std::rethrow_exception(e);
}

void ThreadStream::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    busy_ = true;
    lock.unlock();
    if (on_busy_) on_busy_(true);
    lock.lock();
    while (!queue_.empty()) {
      std::function<void()> work = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      try {
        work();
      } catch (...) {
        lock.lock();
        if (!error_) error_ = std::current_exception();
        lock.unlock();
      }
      lock.lock();
    }
    lock.unlock();
    if (on_busy_) on_busy_(false);
    lock.lock();
    busy_ = false;
    idle_cv_.notify_all();
  }
}

}  // namespace loom::backends
