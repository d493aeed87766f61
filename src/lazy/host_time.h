// HostTime: the host's own time per training step on a lazy device — tracing
// the step, its graph key, the compile-cache lookup and the launch (plus
// whatever else the program does on the host between two steps) — as the
// wall time from one mark_step()'s launch to the next, less the time the host
// spent waiting: for a device result (a tensor read, lazy::wait(), a full
// executor queue, an executable run inline under LOOM_SYNC_EXECUTION=1) or in
// an uncached compile (CompileTime's own). If HostTime stays under the
// device's ExecuteTime, tracing step n+1 hides behind executing step n and the
// device never waits on the host (ExecutorIdleTime, executor.cpp, says when it
// did). One sample per mark_step() after the first (a process's first step
// has no previous launch to count from). Nanoseconds; docs/lazy.md, Metrics.
// Assumes: one tracing thread at a time (the lazy device's lock); waits may be
// counted from any thread.
#pragma once

#include <chrono>
#include <cstdint>

namespace loom::lazy {

/// Counts `ns` of waiting into the current step's deduction.
void add_host_wait_ns(int64_t ns);

/// Times the scope as waiting (add_host_wait_ns on destruction).
class HostWait {
 public:
  HostWait() : start_(std::chrono::steady_clock::now()) {}
  ~HostWait() {
    add_host_wait_ns(std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now() - start_)
                         .count());
  }
  HostWait(const HostWait&) = delete;
  HostWait& operator=(const HostWait&) = delete;

 private:
  std::chrono::steady_clock::time_point start_;
};

/// At the end of mark_step(): records the HostTime sample of the interval
/// since the previous call (less its waits) and starts the next interval.
void record_host_step();

}  // namespace loom::lazy
