// Executor: the thread that runs launched executables in launch order, so
// mark_step() returns at once and tracing step n+1 overlaps executing step
// n. LOOM_SYNC_EXECUTION=1 runs each executable inline instead (debugging).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace loom::lazy {

class Executor {
 public:
  Executor();
  ~Executor();
  /// Queues `job` (runs it inline when not asynchronous). Blocks while
  /// kMaxQueued jobs already wait behind the running one, so a trace loop
  /// that outruns execution cannot pile up steps (and their memory).
  void submit(std::function<void()> job);
  static constexpr size_t kMaxQueued = 2;
  /// Blocks until every queued job has finished.
  void drain();
  bool asynchronous() const { return asynchronous_; }

 private:
  void loop();
  bool asynchronous_ = true;
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace loom::lazy
