// Stream: a backend's in-order work queue (CUDA's stream). Copies and
// kernel launches are enqueued and run in order, either at once on the
// calling thread (InlineStream: the cpu backend) or on the stream's own
// thread (ThreadStream: the sim device; CUDA later). An Event marks a point
// in the queue; waiting on it waits for the work before it.
// An error raised by work is kept and rethrown by the next synchronize()
// (later work still runs: a kernel fed a failed step's buffers computes
// garbage, never crashes, and the first error is the one reported).
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

namespace loom::backends {

class Event {
 public:
  Event() = default;
  explicit Event(std::shared_future<void> done) : done_(std::move(done)) {}
  /// Blocks until the work before the event ran (returns at once if empty).
  void wait() const {
    if (done_.valid()) done_.get();
  }

 private:
  std::shared_future<void> done_;
};

class Stream {
 public:
  virtual ~Stream() = default;
  /// Runs `work` after everything enqueued before it.
  virtual void enqueue(std::function<void()> work) = 0;
  /// Blocks until every enqueued item ran; rethrows the first error since
  /// the last synchronize().
  virtual void synchronize() = 0;
  /// An event completed once the work enqueued so far ran.
  Event record();
};

/// Runs each item at once on the caller's thread; an error propagates out
/// of enqueue() itself. Stateless, so any thread may use it.
class InlineStream final : public Stream {
 public:
  void enqueue(std::function<void()> work) override;
  void synchronize() override;
};

/// Runs items on its own thread. `on_busy(true)` runs on that thread before
/// it starts work after being idle, `on_busy(false)` when its queue ran dry
/// (the sim device opens and closes its memory there).
class ThreadStream final : public Stream {
 public:
  explicit ThreadStream(std::function<void(bool busy)> on_busy = {});
  ~ThreadStream() override;
  void enqueue(std::function<void()> work) override;
  void synchronize() override;

 private:
  void loop();
  std::function<void(bool)> on_busy_;
  std::mutex mu_;
  std::condition_variable cv_, idle_cv_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false, stop_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace loom::backends
